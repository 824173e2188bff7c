/*
 * pt2pt_latency: blocking ping-pong between rank pairs; prints the one-way
 * latency (half the round trip) in microseconds for each message size.
 * The last exchange of every size is checked for correct data.
 */
#include "bench_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define TAG 17

static void usage(void)
{
    printf("usage: pt2pt_latency [-m MIN:MAX] [-i ITERS] [-x WARMUP] [-d DIST] [-q]\n"
           "  -m  size range in bytes, K/M suffixes allowed (default 0:4M)\n"
           "  -i  iterations for small sizes (default 1000; large sizes use fewer)\n"
           "  -x  warmup iterations (default: a tenth of the iterations)\n"
           "  -d  receive buffers DIST bytes (0-4095) past the send buffers modulo 4 KiB\n"
           "      (default 0: both page-aligned)\n"
           "  -q  quick smoke run (very few iterations)\n");
}

static int parse(int argc, char **argv, bench_opts_t *o)
{
    int c;
    while (-1 != (c = getopt(argc, argv, "m:i:x:d:qh"))) {
        switch (c) {
        case 'm': if (bench_parse_range(optarg, o)) return -1; break;
        case 'i': if (bench_parse_int(optarg, 1, &o->iters)) return -1; break;
        case 'x': if (bench_parse_int(optarg, 0, &o->warmup)) return -1; break;
        case 'd':
            if (bench_parse_int(optarg, 0, &o->distance) || o->distance > 4095) return -1;
            break;
        case 'q': o->quick = 1; break;
        case 'h': return 1;
        default: return -1;
        }
    }
    return optind == argc ? 0 : -1;
}

/* Returns the round-trip time in seconds (median of batch means). */
static double pingpong(const bench_pair_t *p, unsigned char *sbuf, unsigned char *rbuf,
                       size_t size, int warmup, int iters)
{
    bench_timer_t timer;
    bench_timer_init(&timer, iters);
    for (int i = 0; i < warmup + iters; i++) {
        if (i == warmup) {
            bench_timer_mark(&timer, 0);
        }
        if (p->initiator) {
            MPI_Send(sbuf, (int) size, MPI_BYTE, p->partner, TAG, MPI_COMM_WORLD);
            MPI_Recv(rbuf, (int) size, MPI_BYTE, p->partner, TAG, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(rbuf, (int) size, MPI_BYTE, p->partner, TAG, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
            MPI_Send(sbuf, (int) size, MPI_BYTE, p->partner, TAG, MPI_COMM_WORLD);
        }
        if (i >= warmup) {
            bench_timer_mark(&timer, i - warmup + 1);
        }
    }
    return bench_timer_result(&timer);
}

int main(int argc, char **argv)
{
    bench_opts_t o = { .min_size = 0, .max_size = 4 << 20, .iters = 1000, .warmup = -1 };
    bench_pair_t p;
    int rc;

    MPI_Init(&argc, &argv);
    bench_pairing(MPI_COMM_WORLD, &p);
    rc = parse(argc, argv, &o);
    if (0 != rc || p.npairs < 1) {
        if (0 == p.rank) {
            if (p.npairs < 1) fprintf(stderr, "pt2pt_latency: needs at least 2 processes\n");
            usage();
        }
        MPI_Finalize();
        return rc > 0 ? 0 : 2;
    }

    unsigned char *sbuf = bench_alloc(o.max_size);
    unsigned char *rbuf_mem = bench_alloc(o.max_size + 4096);
    unsigned char *rbuf = rbuf_mem + o.distance;
    bench_print_header("pt2pt_latency", "latency_us", 1, &p, &o);
    if (0 == p.rank) {
        if (0 != o.distance) {
            printf("# buffers: receive buffer %d bytes past the send buffer (mod 4096)\n",
                   o.distance);
        }
        printf("# size latency_us\n");
        fflush(stdout);
    }

    for (size_t size = o.min_size; size <= o.max_size; size = bench_next_size(size)) {
        int iters = bench_iterations(&o, size);
        int warmup = bench_warmup(&o, iters);
        double t = 0.0, sum = 0.0;
        size_t bad;

        bench_fill(sbuf, size, (unsigned) (size + p.rank));
        MPI_Barrier(MPI_COMM_WORLD);
        if (p.partner >= 0) {
            t = pingpong(&p, sbuf, rbuf, size, warmup, iters);
            bad = bench_check(rbuf, size, (unsigned) (size + p.partner));
            if (bad != (size_t) -1) {
                bench_fail("size %zu: wrong byte at offset %zu from rank %d", size, bad,
                           p.partner);
            }
        }
        double us = p.initiator ? t * 1e6 / 2.0 : 0.0;
        MPI_Reduce(&us, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
        if (0 == p.rank) {
            printf("%zu %.3f\n", size, sum / p.npairs);
            fflush(stdout);
        }
        if (size == 0 && o.max_size == 0) break;
    }

    free(sbuf);
    free(rbuf_mem);
    MPI_Finalize();
    return 0;
}
