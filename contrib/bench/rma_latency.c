/*
 * rma_latency: time of one RMA operation including its synchronisation
 * (fence, start/complete, lock/unlock, or flush), in microseconds, averaged
 * over the origin ranks.  See rma_common.h for the modes.
 */
#include "rma_common.h"

#include <stdio.h>

int main(int argc, char **argv)
{
    rma_ctx_t ctx;
    int rc;

    MPI_Init(&argc, &argv);
    rc = rma_setup(&ctx, argc, argv, "rma_latency", 0);
    if (0 != rc) {
        MPI_Finalize();
        return rc > 0 ? 0 : 2;
    }
    rma_print_header(&ctx, "rma_latency", "latency_us", 1);

    for (size_t size = ctx.opts.min_size; size <= ctx.opts.max_size;
         size = bench_next_size(size)) {
        int iters = bench_iterations(&ctx.opts, size);
        int warmup = bench_warmup(&ctx.opts, iters);
        double us = 0.0, sum = 0.0;
        bench_timer_t timer;

        bench_timer_init(&timer, iters);
        rma_begin_size(&ctx, size);
        for (int i = 0; i < warmup + iters; i++) {
            if (i == warmup) bench_timer_mark(&timer, 0);
            rma_iteration(&ctx, size, 1);
            if (i >= warmup) bench_timer_mark(&timer, i - warmup + 1);
        }
        if (ctx.pair.initiator) {
            us = bench_timer_result(&timer) * 1e6;
        }
        rma_end_size(&ctx, size, (long) warmup + iters);
        MPI_Reduce(&us, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
        if (0 == ctx.pair.rank) {
            printf("%zu %.3f\n", size, sum / ctx.pair.npairs);
            fflush(stdout);
        }
    }

    rma_teardown(&ctx);
    MPI_Finalize();
    return 0;
}
