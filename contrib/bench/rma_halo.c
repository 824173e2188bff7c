/*
 * rma_halo: a halo exchange of several fields on a ring, by MPI_Put.
 *
 * Every rank puts each of F fields to both ring neighbours, field by field
 * (left, right, left, right, ...: the order of a code that exchanges each
 * variable in turn), then synchronizes: a fence (-s fence) or, inside one
 * lock_all epoch, MPI_Win_flush_all (-s flush). Prints the time of one
 * exchange in microseconds, averaged over the ranks. Needs 3 or more
 * processes (two distinct neighbours). Every size ends with a data check.
 */
#include "bench_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct {
    bench_opts_t opts;
    int fields;
    int fence;        /* 1: fence epochs, 0: lock_all + flush_all */
    int allocate;     /* 1: MPI_Win_allocate, 0: MPI_Win_create */
} halo_opts_t;

static void usage(const char *program)
{
    printf("usage: %s [-w create|allocate] [-s fence|flush] [-F FIELDS] [-m MIN:MAX] [-i ITERS]\n"
           "       [-x WARMUP] [-q]\n"
           "  -w  window flavour (default create)\n"
           "  -s  fence: fence, puts, fence; flush: one lock_all epoch, puts and flush_all\n"
           "      per exchange (default flush)\n"
           "  -F  fields exchanged per synchronization, each sent left then right (default 4)\n"
           "  -m  field size range in bytes (default 16K:256K)\n"
           "  -i  iterations for small sizes (default 200; large sizes use fewer)\n"
           "  -x  warmup iterations (default: a tenth of the iterations)\n"
           "  -q  quick smoke run\n", program);
}

static int parse(halo_opts_t *h, int argc, char **argv)
{
    int c;
    while (-1 != (c = getopt(argc, argv, "w:s:F:m:i:x:qh"))) {
        switch (c) {
        case 'w':
            if (0 == strcmp(optarg, "create")) h->allocate = 0;
            else if (0 == strcmp(optarg, "allocate")) h->allocate = 1;
            else return -1;
            break;
        case 's':
            if (0 == strcmp(optarg, "fence")) h->fence = 1;
            else if (0 == strcmp(optarg, "flush")) h->fence = 0;
            else return -1;
            break;
        case 'F': if (bench_parse_int(optarg, 1, &h->fields)) return -1; break;
        case 'm': if (bench_parse_range(optarg, &h->opts)) return -1; break;
        case 'i': if (bench_parse_int(optarg, 1, &h->opts.iters)) return -1; break;
        case 'x': if (bench_parse_int(optarg, 0, &h->opts.warmup)) return -1; break;
        case 'q': h->opts.quick = 1; break;
        case 'h': return 1;
        default: return -1;
        }
    }
    return optind == argc && h->opts.min_size >= 1 ? 0 : -1;
}

/* slot of field f arriving from the left (side 0) or right (side 1) neighbour */
static size_t slot(const halo_opts_t *h, int side, int f)
{
    return ((size_t) side * (size_t) h->fields + (size_t) f) * h->opts.max_size;
}

static unsigned seed(size_t size, int origin, int f)
{
    return (unsigned) (size * 7 + (size_t) origin * 131 + (size_t) f * 17 + 1);
}

int main(int argc, char **argv)
{
    halo_opts_t h = { .opts = { .min_size = 16 * 1024, .max_size = 256 * 1024, .iters = 200,
                                .warmup = -1, .window = 1 },
                      .fields = 4, .fence = 0, .allocate = 0 };
    bench_pair_t pair;
    int rc;

    MPI_Init(&argc, &argv);
    bench_pairing(MPI_COMM_WORLD, &pair);
    rc = parse(&h, argc, argv);
    if (0 != rc || pair.nprocs < 3) {
        if (0 == pair.rank) {
            if (pair.nprocs < 3) fprintf(stderr, "rma_halo: needs at least 3 processes\n");
            usage("rma_halo");
        }
        MPI_Finalize();
        return rc > 0 ? 0 : 2;
    }
    int rank = pair.rank, np = pair.nprocs;
    int left = (rank + np - 1) % np, right = (rank + 1) % np;
    size_t bytes = slot(&h, 2, 0);
    unsigned char *origin = bench_alloc((size_t) h.fields * h.opts.max_size);
    unsigned char *winbuf;
    MPI_Win win;
    if (h.allocate) {
        MPI_Win_allocate((MPI_Aint) bytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &winbuf, &win);
        memset(winbuf, 0, bytes);
    } else {
        winbuf = bench_alloc(bytes);
        MPI_Win_create(winbuf, (MPI_Aint) bytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    }

    bench_print_header("rma_halo", "exchange_us", 1, &pair, &h.opts);
    char osc[128];
    bench_selected_osc(win, osc, sizeof(osc));
    if (0 == rank) {
        printf("# osc: %s\n# window_flavor: %s\n# sync: %s\n# fields: %d\n# size exchange_us\n", osc,
               h.allocate ? "allocate" : "create", h.fence ? "fence" : "flush", h.fields);
        fflush(stdout);
    }

    for (size_t size = h.opts.min_size; size <= h.opts.max_size; size = bench_next_size(size)) {
        int iters = bench_iterations(&h.opts, size * (size_t) h.fields / 4 + 1);
        int warmup = bench_warmup(&h.opts, iters);
        bench_timer_t timer;
        for (int f = 0; f < h.fields; ++f) {
            bench_fill(origin + (size_t) f * h.opts.max_size, size, seed(size, rank, f));
        }
        MPI_Barrier(MPI_COMM_WORLD);
        if (h.fence) MPI_Win_fence(0, win);
        else MPI_Win_lock_all(0, win);
        bench_timer_init(&timer, iters);
        for (int i = 0; i < warmup + iters; ++i) {
            if (i == warmup) bench_timer_mark(&timer, 0);
            for (int f = 0; f < h.fields; ++f) {
                const unsigned char *src = origin + (size_t) f * h.opts.max_size;
                /* I am my right neighbour's left one, and the other way round */
                MPI_Put(src, (int) size, MPI_BYTE, right, (MPI_Aint) slot(&h, 0, f), (int) size,
                        MPI_BYTE, win);
                MPI_Put(src, (int) size, MPI_BYTE, left, (MPI_Aint) slot(&h, 1, f), (int) size,
                        MPI_BYTE, win);
            }
            if (h.fence) MPI_Win_fence(0, win);
            else MPI_Win_flush_all(win);
            if (i >= warmup) bench_timer_mark(&timer, i - warmup + 1);
        }
        double us = bench_timer_result(&timer) * 1e6, sum = 0.0;
        if (h.fence) MPI_Win_fence(MPI_MODE_NOSUCCEED, win);
        else MPI_Win_unlock_all(win);
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, win);
        for (int f = 0; f < h.fields; ++f) {
            if ((size_t) -1 != bench_check(winbuf + slot(&h, 0, f), size, seed(size, left, f)) ||
                (size_t) -1 != bench_check(winbuf + slot(&h, 1, f), size, seed(size, right, f))) {
                bench_fail("rma_halo: field %d of size %zu differs at rank %d", f, size, rank);
            }
        }
        MPI_Win_unlock(rank, win);
        MPI_Reduce(&us, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
        if (0 == rank) {
            printf("%zu %.3f\n", size, sum / np);
            fflush(stdout);
        }
    }
    MPI_Win_free(&win);
    MPI_Finalize();
    return 0;
}
