/*
 * A lock epoch right after a fence epoch, to the target of the fenced put:
 *   fence; put 32 KiB to the right neighbour; fence; lock it; get, put or
 *   accumulate the same words; unlock
 * The fence returns once the put has left; the target applies it before its
 * own fence call returns. A lock epoch that then reaches the target's memory
 * by CMA (large gets and puts, accumulates applied by the origin, locks
 * taken in the node's tables without the target) overtook the put: the get
 * read the previous round, and the fenced put landed after the lock epoch's
 * put or accumulate and stayed (osc/nbe until session 26, in most runs).
 * Each mode runs ROUNDS rounds, closing fence 0 or MPI_MODE_NOSUCCEED, lock
 * with and without MPI_MODE_NOCHECK, on a created and an allocated window.
 */
#include "pt2pt_common.h"

#define N 4096 /* longs: 32 KiB, above the RDMA thresholds */
#define ROUNDS 40

enum { GET, PUT, ACC };

static long expect(int mode, int src, int round, int i)
{
    long v = (long) i * 1000 + src * 10 + round;
    return ACC == mode ? 2 * v : PUT == mode ? -v : v;
}

static void run(MPI_Win win, long *base, int mode, int closing, int lock_assert)
{
    int right = (rank + 1) % nprocs, left = (rank + nprocs - 1) % nprocs;
    long *v = malloc(N * sizeof(long)), *g = malloc(N * sizeof(long));
    for (int round = 0; round < ROUNDS; ++round) {
        for (int i = 0; i < N; ++i) v[i] = (long) i * 1000 + rank * 10 + round;
        MPI_Win_fence(0, win);
        MPI_Put(v, N, MPI_LONG, right, 0, N, MPI_LONG, win);
        MPI_Win_fence(closing, win);
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, lock_assert, win);
        if (GET == mode) {
            MPI_Get(g, N, MPI_LONG, right, 0, N, MPI_LONG, win);
        } else if (PUT == mode) {
            for (int i = 0; i < N; ++i) g[i] = -v[i];
            MPI_Put(g, N, MPI_LONG, right, 0, N, MPI_LONG, win);
        } else {
            MPI_Accumulate(v, N, MPI_LONG, right, 0, N, MPI_LONG, MPI_SUM, win);
        }
        MPI_Win_unlock(right, win);
        if (GET == mode) {
            int stale = 0;
            for (int i = 0; i < N; ++i) stale += g[i] != v[i];
            CHECK(0 == stale, "mode %d round %d: the get read %d of %d words before the fenced put",
                  mode, round, stale, N);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, win);
        int wrong = 0;
        for (int i = 0; i < N; ++i) wrong += base[i] != expect(mode, left, round, i);
        MPI_Win_unlock(rank, win);
        CHECK(0 == wrong, "mode %d closing %d nocheck %d round %d: %d of %d words wrong (%ld)", mode,
              closing, lock_assert, round, wrong, N, base[0]);
        MPI_Barrier(MPI_COMM_WORLD);
    }
    free(v);
    free(g);
}

int main(int argc, char **argv)
{
    test_init(&argc, &argv);
    for (int flavor = 0; flavor < 2; ++flavor) {
        long *base;
        MPI_Win win;
        if (0 == flavor) {
            base = calloc(N, sizeof(long));
            MPI_Win_create(base, N * sizeof(long), sizeof(long), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
        } else {
            MPI_Win_allocate(N * sizeof(long), sizeof(long), MPI_INFO_NULL, MPI_COMM_WORLD, &base,
                             &win);
        }
        for (int mode = GET; mode <= ACC; ++mode) {
            run(win, base, mode, 0, 0);
            run(win, base, mode, MPI_MODE_NOSUCCEED, MPI_MODE_NOCHECK);
        }
        MPI_Win_free(&win);
        if (0 == flavor) free(base);
    }
    return test_finish();
}
