/*
 * pt2pt_bandwidth: streaming bandwidth between rank pairs.  Per iteration the
 * initiator posts a window of nonblocking sends and the partner a window of
 * matching receives; after both complete the partner returns a zero-byte ack.
 * Prints MB/s (10^6 bytes per second), summed over all pairs.
 *
 * Receives of one window go to distinct buffer slots while the window fits in
 * BUFFER_LIMIT bytes; above that slots are reused cyclically (all messages of a
 * window carry identical data, so only the last arrival is checked).
 */
#include "bench_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define TAG_DATA 23
#define TAG_ACK 24
#define BUFFER_LIMIT (64UL * 1024 * 1024)

static void usage(void)
{
    printf("usage: pt2pt_bandwidth [-m MIN:MAX] [-i ITERS] [-x WARMUP] [-W WINDOW] [-q]\n"
           "  -m  size range in bytes, K/M suffixes allowed (default 1:4M)\n"
           "  -i  iterations (windows) for small sizes (default 100; large sizes use fewer)\n"
           "  -x  warmup iterations (default: a tenth of the iterations)\n"
           "  -W  messages in flight per iteration (default 64)\n"
           "  -q  quick smoke run (very few iterations)\n");
}

static int parse(int argc, char **argv, bench_opts_t *o)
{
    int c;
    while (-1 != (c = getopt(argc, argv, "m:i:x:W:qh"))) {
        switch (c) {
        case 'm': if (bench_parse_range(optarg, o)) return -1; break;
        case 'i': if (bench_parse_int(optarg, 1, &o->iters)) return -1; break;
        case 'x': if (bench_parse_int(optarg, 0, &o->warmup)) return -1; break;
        case 'W': if (bench_parse_int(optarg, 1, &o->window)) return -1; break;
        case 'q': o->quick = 1; break;
        case 'h': return 1;
        default: return -1;
        }
    }
    return optind == argc ? 0 : -1;
}

int main(int argc, char **argv)
{
    bench_opts_t o = { .min_size = 1, .max_size = 4 << 20, .iters = 100, .warmup = -1,
                       .window = 64 };
    bench_pair_t p;
    int rc;

    MPI_Init(&argc, &argv);
    bench_pairing(MPI_COMM_WORLD, &p);
    rc = parse(argc, argv, &o);
    if (0 != rc || p.npairs < 1) {
        if (0 == p.rank) {
            if (p.npairs < 1) fprintf(stderr, "pt2pt_bandwidth: needs at least 2 processes\n");
            usage();
        }
        MPI_Finalize();
        return rc > 0 ? 0 : 2;
    }

    size_t rbytes = (o.max_size ? o.max_size : 1) * (size_t) o.window;
    if (rbytes > BUFFER_LIMIT) rbytes = BUFFER_LIMIT;
    if (rbytes < o.max_size) rbytes = o.max_size;

    unsigned char *sbuf = bench_alloc(o.max_size);
    unsigned char *rbuf = bench_alloc(rbytes);
    MPI_Request *reqs = malloc(sizeof(MPI_Request) * (size_t) o.window);
    if (NULL == reqs) bench_fail("out of memory");

    bench_print_header("pt2pt_bandwidth", "bandwidth_MBps", 0, &p, &o);
    if (0 == p.rank) {
        printf("# window: %d\n# size bandwidth_MBps\n", o.window);
        fflush(stdout);
    }

    for (size_t size = o.min_size; size <= o.max_size; size = bench_next_size(size)) {
        /* iterations bounded by bytes per window, not per message */
        bench_opts_t scaled = o;
        int iters = bench_iterations(&scaled, size * (size_t) o.window / 16 + 1);
        int warmup = bench_warmup(&o, iters);
        size_t slots = size ? rbytes / size : (size_t) o.window;
        double t = 0.0, sum = 0.0;
        bench_timer_t timer;

        if (slots > (size_t) o.window) slots = (size_t) o.window;
        if (slots < 1) slots = 1;
        bench_fill(sbuf, size, (unsigned) (size + p.rank));
        bench_timer_init(&timer, iters);
        MPI_Barrier(MPI_COMM_WORLD);
        for (int i = 0; p.partner >= 0 && i < warmup + iters; i++) {
            if (i == warmup) bench_timer_mark(&timer, 0);
            if (p.initiator) {
                for (int w = 0; w < o.window; w++) {
                    MPI_Isend(sbuf, (int) size, MPI_BYTE, p.partner, TAG_DATA,
                              MPI_COMM_WORLD, &reqs[w]);
                }
                MPI_Waitall(o.window, reqs, MPI_STATUSES_IGNORE);
                MPI_Recv(NULL, 0, MPI_BYTE, p.partner, TAG_ACK, MPI_COMM_WORLD,
                         MPI_STATUS_IGNORE);
            } else {
                for (int w = 0; w < o.window; w++) {
                    MPI_Irecv(rbuf + ((size_t) w % slots) * size, (int) size, MPI_BYTE,
                              p.partner, TAG_DATA, MPI_COMM_WORLD, &reqs[w]);
                }
                MPI_Waitall(o.window, reqs, MPI_STATUSES_IGNORE);
                MPI_Send(NULL, 0, MPI_BYTE, p.partner, TAG_ACK, MPI_COMM_WORLD);
            }
            if (i >= warmup) bench_timer_mark(&timer, i - warmup + 1);
        }
        if (p.partner >= 0) t = bench_timer_result(&timer);   /* one window */
        if (p.partner >= 0 && !p.initiator) {
            for (size_t s = 0; s < slots; s++) {
                size_t bad = bench_check(rbuf + s * size, size, (unsigned) (size + p.partner));
                if (bad != (size_t) -1) {
                    bench_fail("size %zu: slot %zu wrong byte at offset %zu from rank %d",
                               size, s, bad, p.partner);
                }
            }
        }
        double mbps = p.initiator ? (double) size * o.window / t / 1e6 : 0.0;
        MPI_Reduce(&mbps, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
        if (0 == p.rank) {
            printf("%zu %.3f\n", size, sum);
            fflush(stdout);
        }
        if (0 == size && 0 == o.max_size) break;
    }

    free(reqs);
    free(sbuf);
    free(rbuf);
    MPI_Finalize();
    return 0;
}
