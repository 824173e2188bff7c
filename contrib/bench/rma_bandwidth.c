/*
 * rma_bandwidth: a window of RMA operations per synchronisation (fence,
 * start/complete, lock/unlock, or flush); prints MB/s (10^6 bytes per
 * second) summed over the origin ranks.  See rma_common.h for the modes.
 */
#include "rma_common.h"

#include <stdio.h>

int main(int argc, char **argv)
{
    rma_ctx_t ctx;
    int rc;

    MPI_Init(&argc, &argv);
    rc = rma_setup(&ctx, argc, argv, "rma_bandwidth", RMA_OPT_WINDOW);
    if (0 != rc) {
        MPI_Finalize();
        return rc > 0 ? 0 : 2;
    }
    rma_print_header(&ctx, "rma_bandwidth", "bandwidth_MBps", 0);

    const int nops = ctx.opts.window;
    for (size_t size = ctx.opts.min_size; size <= ctx.opts.max_size;
         size = bench_next_size(size)) {
        /* budget counts the bytes of a whole window */
        int iters = bench_iterations(&ctx.opts, size * (size_t) nops / 16 + 1);
        int warmup = bench_warmup(&ctx.opts, iters);
        double mbps = 0.0, sum = 0.0;
        bench_timer_t timer;

        bench_timer_init(&timer, iters);
        rma_begin_size(&ctx, size);
        for (int i = 0; i < warmup + iters; i++) {
            if (i == warmup) bench_timer_mark(&timer, 0);
            rma_iteration(&ctx, size, nops);
            if (i >= warmup) bench_timer_mark(&timer, i - warmup + 1);
        }
        if (ctx.pair.initiator) {
            mbps = (double) size * nops / bench_timer_result(&timer) / 1e6;
        }
        rma_end_size(&ctx, size, ((long) warmup + iters) * nops);
        MPI_Reduce(&mbps, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
        if (0 == ctx.pair.rank) {
            printf("%zu %.3f\n", size, sum);
            fflush(stdout);
        }
    }

    rma_teardown(&ctx);
    MPI_Finalize();
    return 0;
}
