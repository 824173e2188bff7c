/*
 * Lock epochs whose accesses are all complete at the target when issued
 * (RDMA on vader) end at MPI_Win_unlock once the UNLOCK is sent, without
 * the target's acknowledgement (osc_nbe_unlock_no_wait); the target
 * releases the lock when the UNLOCK arrives.
 *
 * Every process but the target runs exclusive epochs (RDMA put of its
 * stamp over the whole array, RDMA get back: it must read only its own
 * stamp, or another holder overlapped its lock) and shared epochs (RDMA
 * get: the array holds one stamp, never a mix), back to back, so that an
 * UNLOCK that did not wait is followed at once by the next LOCK request.
 * Epochs with a small accumulate (counted, so the unlock waits) are mixed
 * in. At the end the target's counter holds the number of accumulates, and
 * MPI_Win_free (with acknowledgements possibly still on their way) works.
 *
 * With NBE_EXPECT_NO_WAIT=1 (vader, the parameter on: its default) the
 * window pvar osc_nbe_unlocks_no_wait must have counted on every origin;
 * with =0 (the parameter off) it must stay 0. (On tcp an epoch may qualify too: a flush ack covers its puts'
 * FINs and a get's reply carries the target's count.)
 */
#include "mdq_pvar.h"

#define BIG     (64 * 1024)       /* RDMA in lock epochs (osc_nbe_rdma_threshold) */
#define ROUNDS  60

/* the first index whose value is not want, or -1 */
static long first_other(const int *a, long n, int want)
{
    for (long i = 0; i < n; ++i) {
        if (a[i] != want) return i;
    }
    return -1;
}

int main(int argc, char **argv)
{
    const long n = BIG / sizeof(int);
    MPI_Win win;

    test_init(&argc, &argv);
    mdq_pvar_init();
    const int target = 0;
    int *mem = page_calloc((n + 1) * sizeof(int));    /* array, then the accumulate counter */
    int *mine = page_calloc(BIG), *back = page_calloc(BIG);
    for (long i = 0; i < n; ++i) mine[i] = 1000 + rank;
    MPI_Win_create(mem, (n + 1) * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win);

    MPI_T_pvar_handle h;
    int idx = mdq_pvar_find_bound("osc_nbe_unlocks_no_wait", &win, &h);

    int accs = 0;
    if (rank != target) {
        for (int r = 0; r < ROUNDS; ++r) {
            MPI_Win_lock(MPI_LOCK_EXCLUSIVE, target, 0, win);
            MPI_Put(mine, (int) n, MPI_INT, target, 0, (int) n, MPI_INT, win);
            MPI_Win_flush(target, win);
            MPI_Get(back, (int) n, MPI_INT, target, 0, (int) n, MPI_INT, win);
            if (r % 5 == 4) {
                int one = 1;
                MPI_Accumulate(&one, 1, MPI_INT, target, n, 1, MPI_INT, MPI_SUM, win);
                accs++;
            }
            MPI_Win_unlock(target, win);
            long bad = first_other(back, n, 1000 + rank);
            CHECK(bad < 0, "round %d: exclusive epoch read %d at %ld, not its own %d", r,
                  bad < 0 ? 0 : back[bad], bad, 1000 + rank);

            MPI_Win_lock(MPI_LOCK_SHARED, target, 0, win);
            MPI_Get(back, (int) n, MPI_INT, target, 0, (int) n, MPI_INT, win);
            MPI_Win_unlock(target, win);
            bad = first_other(back, n, back[0]);
            CHECK(bad < 0, "round %d: shared epoch read a mix (%d, then %d at %ld)", r, back[0],
                  bad < 0 ? 0 : back[bad], bad);
        }
    }
    int total = 0;
    MPI_Reduce(&accs, &total, 1, MPI_INT, MPI_SUM, target, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == target) {
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, target, 0, win);   /* every release came */
        CHECK(mem[n] == total, "counter %d, want %d accumulates", mem[n], total);
        MPI_Win_unlock(target, win);
    }

    const char *expect = getenv("NBE_EXPECT_NO_WAIT");
    if (idx >= 0 && expect && rank != target) {
        unsigned long long k = 0;
        k = mdq_pvar_read(h);
        if ('1' == expect[0]) {
            CHECK(k > 0, "no unlock ended without its acknowledgement");
        } else {
            CHECK(0 == k, "%llu unlocks ended without the acknowledgement a FIN needs", k);
        }
    }
    if (idx >= 0) MPI_T_pvar_handle_free(mdq_pvar_session, &h);
    MPI_Win_free(&win);
    free(mem);
    free(mine);
    free(back);
    mdq_pvar_fini();
    return test_finish();
}
