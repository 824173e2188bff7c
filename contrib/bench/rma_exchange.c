/*
 * rma_exchange: both ranks of each pair put to each other at once, many
 * small puts per synchronization: -W puts of each size into distinct slots
 * of the partner's window, then the epoch's end (fence; unlock of an
 * exclusive lock epoch; or, inside one lock_all epoch, a flush). Both ranks
 * are origin and target at the same time, so neither waits in a
 * synchronization while the other's operations arrive: what a target does
 * with incoming operations while it issues its own decides the rate.
 * Prints the time per put in microseconds (the iteration time divided by
 * -W), the median over batches on rank 0. Every size ends with a data
 * check.
 */
#include "bench_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { SYNC_FENCE, SYNC_LOCK, SYNC_FLUSH };

typedef struct {
    bench_opts_t opts;
    int sync;
    int allocate;
} exch_opts_t;

static void usage(const char *program)
{
    printf("usage: %s [-w create|allocate] [-s fence|lock|flush] [-W PUTS] [-m MIN:MAX]\n"
           "       [-i ITERS] [-x WARMUP] [-q]\n"
           "  -w  window flavour (default create)\n"
           "  -s  fence: puts, fence; lock: exclusive lock, puts, unlock; flush: one\n"
           "      lock_all epoch, puts and a flush per iteration (default lock)\n"
           "  -W  puts per synchronization, each to its own slot (default 1024)\n"
           "  -m  put size range in bytes (default 8:256)\n"
           "  -i  iterations for small sizes (default 100; large sizes use fewer)\n"
           "  -x  warmup iterations (default: a tenth of the iterations)\n"
           "  -q  quick smoke run\n", program);
}

static int parse(exch_opts_t *e, int argc, char **argv)
{
    int c;
    while (-1 != (c = getopt(argc, argv, "w:s:W:m:i:x:qh"))) {
        switch (c) {
        case 'w':
            if (0 == strcmp(optarg, "create")) e->allocate = 0;
            else if (0 == strcmp(optarg, "allocate")) e->allocate = 1;
            else return -1;
            break;
        case 's':
            if (0 == strcmp(optarg, "fence")) e->sync = SYNC_FENCE;
            else if (0 == strcmp(optarg, "lock")) e->sync = SYNC_LOCK;
            else if (0 == strcmp(optarg, "flush")) e->sync = SYNC_FLUSH;
            else return -1;
            break;
        case 'W': if (bench_parse_int(optarg, 1, &e->opts.window)) return -1; break;
        case 'm': if (bench_parse_range(optarg, &e->opts)) return -1; break;
        case 'i': if (bench_parse_int(optarg, 1, &e->opts.iters)) return -1; break;
        case 'x': if (bench_parse_int(optarg, 0, &e->opts.warmup)) return -1; break;
        case 'q': e->opts.quick = 1; break;
        case 'h': return 1;
        default: return -1;
        }
    }
    return optind == argc && e->opts.min_size >= 1 ? 0 : -1;
}

static void iteration(const exch_opts_t *e, MPI_Win win, int partner, const unsigned char *src,
                      size_t size)
{
    int n = e->opts.window;
    if (SYNC_LOCK == e->sync) MPI_Win_lock(MPI_LOCK_EXCLUSIVE, partner, 0, win);
    for (int k = 0; k < n; ++k) {
        MPI_Put(src, (int) size, MPI_BYTE, partner, (MPI_Aint) ((size_t) k * size), (int) size,
                MPI_BYTE, win);
    }
    if (SYNC_FENCE == e->sync) MPI_Win_fence(0, win);
    else if (SYNC_LOCK == e->sync) MPI_Win_unlock(partner, win);
    else MPI_Win_flush(partner, win);
}

int main(int argc, char **argv)
{
    exch_opts_t e = { .opts = { .min_size = 8, .max_size = 256, .iters = 100, .warmup = -1,
                                .window = 1024 },
                      .sync = SYNC_LOCK };
    bench_pair_t pair;
    MPI_Init(&argc, &argv);
    bench_pairing(MPI_COMM_WORLD, &pair);
    int rc = parse(&e, argc, argv);
    if (0 != rc || pair.npairs < 1) {
        if (0 == pair.rank) {
            if (pair.npairs < 1) fprintf(stderr, "rma_exchange: needs at least 2 processes\n");
            usage(argv[0]);
        }
        MPI_Finalize();
        return rc > 0 ? 0 : 2;
    }
    size_t winsize = (size_t) e.opts.window * e.opts.max_size;
    unsigned char *src = bench_alloc(e.opts.max_size), *winbuf;
    MPI_Win win;
    if (e.allocate) {
        MPI_Win_allocate((MPI_Aint) winsize, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &winbuf, &win);
    } else {
        winbuf = bench_alloc(winsize);
        MPI_Win_create(winbuf, (MPI_Aint) winsize, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    }
    bench_print_header("rma_exchange", "us_per_put", 1, &pair, &e.opts);
    char osc[128];
    bench_selected_osc(win, osc, sizeof(osc));
    if (0 == pair.rank) {
        static const char *names[] = { "fence", "lock", "flush" };
        printf("# osc: %s\n# window_flavor: %s\n# sync: %s\n# puts per sync, both ways: %d\n"
               "# size us_per_put\n", osc, e.allocate ? "allocate" : "create", names[e.sync],
               e.opts.window);
        fflush(stdout);
    }

    for (size_t size = e.opts.min_size; size <= e.opts.max_size; size = bench_next_size(size)) {
        int iters = bench_iterations(&e.opts, size * (size_t) e.opts.window / 16 + 1);
        int warmup = bench_warmup(&e.opts, iters);
        unsigned seed = (unsigned) (size * 5 + (size_t) pair.rank);
        bench_fill(src, size, seed);
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, pair.rank, 0, win);
        memset(winbuf, 0, winsize);
        MPI_Win_unlock(pair.rank, win);
        MPI_Barrier(MPI_COMM_WORLD);
        if (SYNC_FENCE == e.sync) MPI_Win_fence(MPI_MODE_NOPRECEDE, win);
        else if (SYNC_FLUSH == e.sync) MPI_Win_lock_all(0, win);
        bench_timer_t timer;
        bench_timer_init(&timer, iters);
        for (int i = 0; i < warmup + iters; ++i) {
            if (i == warmup) bench_timer_mark(&timer, 0);
            if (pair.partner >= 0) iteration(&e, win, pair.partner, src, size);
            else if (SYNC_FENCE == e.sync) MPI_Win_fence(0, win);
            if (i >= warmup) bench_timer_mark(&timer, i - warmup + 1);
        }
        if (SYNC_FENCE == e.sync) MPI_Win_fence(MPI_MODE_NOSUCCEED, win);
        else if (SYNC_FLUSH == e.sync) MPI_Win_unlock_all(win);
        MPI_Barrier(MPI_COMM_WORLD);
        if (pair.partner >= 0) {
            MPI_Win_lock(MPI_LOCK_SHARED, pair.rank, 0, win);
            unsigned pseed = (unsigned) (size * 5 + (size_t) pair.partner);
            for (int k = 0; k < e.opts.window; ++k) {
                size_t bad = bench_check(winbuf + (size_t) k * size, size, pseed);
                if (bad != (size_t) -1) {
                    bench_fail("size %zu slot %d: wrong data at offset %zu", size, k, bad);
                }
            }
            MPI_Win_unlock(pair.rank, win);
        }
        if (0 == pair.rank) {
            printf("%zu %.4f\n", size, bench_timer_result(&timer) * 1e6 / e.opts.window);
            fflush(stdout);
        }
    }
    MPI_Win_free(&win);
    if (!e.allocate) free(winbuf);
    free(src);
    MPI_Finalize();
    return 0;
}
