/*
 * rma_target_away: passive-target epochs (lock/op/unlock, or op + flush
 * inside lock_all) while the target computes outside MPI.
 *
 * For each size the origin first runs warm-up epochs with the target in
 * MPI; then the target spins for -a milliseconds without any MPI call
 * while the origin times its epochs. Where the osc moves the data and the
 * lock by RDMA, the epochs take what they take with the target in MPI;
 * where it needs the target's progress (active messages, emulated RMA), the
 * first epoch waits until the target calls MPI again, and the mean epoch
 * time grows by about the absence divided by the iterations. Prints the
 * mean epoch time in microseconds (over the origin ranks), and a comment
 * line where an origin's loop lasted longer than the absence (then the
 * figure says less); with -e N, a comment line with the times of rank 0's
 * first N epochs (the first ones wait for what the osc learns of the
 * target's absence). With -p the target calls MPI_Iprobe every that many
 * microseconds while it computes. See rma_common.h for the options.
 */
#include "rma_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double) t.tv_sec + 1e-9 * (double) t.tv_nsec;
}

static volatile unsigned sink;   /* keeps the reads of away() */

/* computes (reads its own memory) for ms milliseconds; every poll_us
 * microseconds (0: never) it tests for a message, as applications that
 * compute between MPI calls do */
static void away(const unsigned char *mem, size_t len, int ms, int poll_us)
{
    double t = now(), end = t + 1e-3 * ms, next_poll = t + 1e-6 * poll_us;
    unsigned sum = 0;
    while ((t = now()) < end) {
        for (size_t i = 0; i < len; i += 64) sum += mem[i];
        if (poll_us > 0 && t >= next_poll) {
            int flag;
            MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
            next_poll = now() + 1e-6 * poll_us;
        }
    }
    sink = sum;
}

int main(int argc, char **argv)
{
    rma_ctx_t ctx;
    int rc;

    MPI_Init(&argc, &argv);
    rc = rma_setup(&ctx, argc, argv, "rma_target_away", RMA_OPT_AWAY);
    if (0 == rc && RMA_SYNC_LOCK != ctx.sync && RMA_SYNC_FLUSH != ctx.sync) {
        if (0 == ctx.pair.rank) {
            fprintf(stderr, "rma_target_away: needs -s lock or -s flush (the other "
                            "synchronisations need the target in MPI)\n");
        }
        rc = -1;
    }
    if (0 != rc) {
        MPI_Finalize();
        return rc > 0 ? 0 : 2;
    }
    rma_print_header(&ctx, "rma_target_away", "latency_us", 1);

    /* scratch the target computes on, apart from the window */
    unsigned char *scratch = bench_alloc(1 << 16);
    for (size_t size = ctx.opts.min_size; size <= ctx.opts.max_size;
         size = bench_next_size(size)) {
        int iters = bench_iterations(&ctx.opts, size);
        int warmup = bench_warmup(&ctx.opts, iters);
        double us = 0.0, sum = 0.0, loop = 0.0, longest = 0.0;

        rma_begin_size(&ctx, size);
        for (int i = 0; ctx.pair.initiator && i < warmup; i++) rma_iteration(&ctx, size, 1);
        MPI_Barrier(MPI_COMM_WORLD);
        if (ctx.pair.initiator) {
            double t0 = now(), ends[64];
            int shown = ctx.epochs_shown < iters ? ctx.epochs_shown : iters;
            for (int i = 0; i < iters; i++) {
                rma_iteration(&ctx, size, 1);
                if (i < shown) ends[i] = now();
            }
            loop = now() - t0;
            us = loop / iters * 1e6;
            if (0 == ctx.pair.rank && shown > 0) {
                printf("# size %zu: the first %d epochs of rank 0 (us):", size, shown);
                for (int i = 0; i < shown; i++) printf(" %.1f", 1e6 * (ends[i] - (i ? ends[i - 1] : t0)));
                printf("\n");
            }
        } else if (ctx.pair.partner >= 0) {
            away(scratch, 1 << 16, ctx.away_ms, ctx.poll_us);
        }
        rma_end_size(&ctx, size, (long) warmup + iters);
        MPI_Reduce(&us, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
        MPI_Reduce(&loop, &longest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        if (0 == ctx.pair.rank) {
            if (longest * 1e3 > ctx.away_ms) {
                printf("# size %zu: an origin's %d epochs took %.1f ms, longer than the "
                       "target's absence\n", size, iters, longest * 1e3);
            }
            printf("%zu %.3f\n", size, sum / ctx.pair.npairs);
            fflush(stdout);
        }
    }

    free(scratch);
    rma_teardown(&ctx);
    MPI_Finalize();
    return 0;
}
