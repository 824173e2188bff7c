/*
 * A dynamic window takes accesses only inside the regions attached to it.
 * An access to memory that is not attached (never attached, detached, past
 * the end of a region, or no memory at all) is not applied: it is reported
 * as MPI_ERR_RMA_RANGE through the window's error handler, by the RMA call
 * itself (self target) or by the synchronization that completes it, and the
 * window stays usable. The target's memory outside the regions is unchanged.
 * An access across two adjacent attached regions is inside attached memory.
 */
#include "pt2pt_common.h"

#define N 16
#define BIG (64 * 1024)   /* above the RDMA threshold */

static void expect_reported(int n, int want, const char *what)
{
    if (n != want) {
        fprintf(stderr, "[%d] %s: MPI_ERR_RMA_RANGE reported %d times, expected %d\n", rank, what,
                n, want);
        errs++;
    }
}

int main(int argc, char **argv)
{
    static int region[N], outside[N], gone[N], pair[2 * N];
    static char big_in[BIG], big_out[BIG];
    MPI_Aint *addr;
    MPI_Win win;
    int one = 1, res = 0, cmp = 0, vals[4];

    test_init(&argc, &argv);
    int size = nprocs;
    int right = (rank + 1) % size, left = (rank + size - 1) % size;

    for (int i = 0; i < N; ++i) {
        region[i] = 100 * rank + i;
        outside[i] = -1;
    }
    memset(big_out, 0x5a, sizeof(big_out));
    MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    MPI_Win_attach(win, region, sizeof(region));
    MPI_Win_attach(win, big_in, sizeof(big_in));
    MPI_Win_attach(win, pair + N, N * sizeof(int));   /* two adjacent regions */
    MPI_Win_attach(win, pair, N * sizeof(int));
    MPI_Win_attach(win, gone, sizeof(gone));
    MPI_Win_detach(win, gone);

    /* everybody's addresses: region, outside, big_in, big_out, gone, pair */
    MPI_Aint mine[6];
    MPI_Get_address(region, &mine[0]);
    MPI_Get_address(outside, &mine[1]);
    MPI_Get_address(big_in, &mine[2]);
    MPI_Get_address(big_out, &mine[3]);
    MPI_Get_address(gone, &mine[4]);
    MPI_Get_address(pair, &mine[5]);
    addr = malloc((size_t) size * sizeof(mine));
    MPI_Allgather(mine, 6, MPI_AINT, addr, 6, MPI_AINT, MPI_COMM_WORLD);
    const MPI_Aint *t = addr + 6 * right;
    MPI_Aint t_region = t[0], t_outside = t[1], t_big_in = t[2], t_big_out = t[3], t_gone = t[4];
    MPI_Aint t_pair = t[5];

    /* 1. lock epoch: each refused access is reported once, by the call or by
     * the flush/unlock that completes it */
    vals[0] = 1000 + rank;
    vals[1] = vals[2] = vals[3] = 2000 + rank;
    MPI_Win_lock(MPI_LOCK_SHARED, right, 0, win);
    int n = range_err(MPI_Put(vals, 1, MPI_INT, right, t_region + 2 * sizeof(int), 1, MPI_INT, win),
                      "put inside");
    expect_reported(n, 0, "put inside a region");
    n = range_err(MPI_Put(vals + 1, 1, MPI_INT, right, t_outside, 1, MPI_INT, win), "put outside");
    n += range_err(MPI_Win_flush(right, win), "flush");
    expect_reported(n, 1, "put to memory not attached");
    n = range_err(MPI_Put(vals + 1, 3, MPI_INT, right, t_region + (N - 2) * sizeof(int), 3, MPI_INT,
                          win), "put across the end");
    n += range_err(MPI_Win_flush(right, win), "flush");
    expect_reported(n, 1, "put across a region's end");
    n = range_err(MPI_Put(vals + 1, 1, MPI_INT, right, t_gone, 1, MPI_INT, win), "put detached");
    n += range_err(MPI_Put(vals + 1, 1, MPI_INT, right, 16, 1, MPI_INT, win), "put to address 16");
    n += range_err(MPI_Win_flush(right, win), "flush");
    expect_reported(n, 1 + (right == rank), "puts to detached memory and to address 16");
    n = range_err(MPI_Accumulate(&one, 1, MPI_INT, right, t_outside, 1, MPI_INT, MPI_SUM, win),
                  "acc outside");
    n += range_err(MPI_Win_unlock(right, win), "unlock");
    expect_reported(n, 1, "accumulate outside");

    /* fetching accesses complete (no hang) with the error */
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, win);
    n = range_err(MPI_Get(&res, 1, MPI_INT, right, t_outside, 1, MPI_INT, win), "get outside");
    n += range_err(MPI_Win_flush(right, win), "flush");
    expect_reported(n, 1, "get outside");
    n = range_err(MPI_Fetch_and_op(&one, &res, MPI_INT, right, t_outside, MPI_SUM, win), "fop");
    n += range_err(MPI_Compare_and_swap(&one, &cmp, &res, MPI_INT, right, t_outside, win), "cas");
    n += range_err(MPI_Win_flush(right, win), "flush");
    expect_reported(n, 1 + (right == rank), "fetch_and_op and compare_and_swap outside");
    {
        MPI_Request r = MPI_REQUEST_NULL;
        int rc = MPI_Rget(&res, 1, MPI_INT, right, t_outside, 1, MPI_INT, win, &r);
        n = range_err(rc, "rget outside");
        if (MPI_SUCCESS == rc) {
            /* the request carries the error; the flush reports it too */
            n += range_err(MPI_Wait(&r, MPI_STATUS_IGNORE), "wait rget");
            expect_reported(range_err(MPI_Win_flush(right, win), "flush"), 1, "flush after rget");
        }
        expect_reported(n, 1, "rget outside");
    }
    /* large transfers (RDMA-sized elsewhere) are checked too */
    n = range_err(MPI_Put(big_in, BIG, MPI_CHAR, right, t_big_out, BIG, MPI_CHAR, win), "big put");
    n += range_err(MPI_Get(big_in, BIG, MPI_CHAR, right, t_big_out, BIG, MPI_CHAR, win), "big get");
    n += range_err(MPI_Win_unlock(right, win), "unlock");
    expect_reported(n, 1 + (right == rank), "64 KiB put and get outside");

    /* 2. the window still works, large accesses included */
    MPI_Win_lock_all(0, win);
    expect_reported(range_err(MPI_Accumulate(&one, 1, MPI_INT, right, t_region, 1, MPI_INT,
                                             MPI_SUM, win), "acc inside"), 0, "acc inside");
    memset(big_out, 0x30 + rank % 10, sizeof(big_out));
    expect_reported(range_err(MPI_Put(big_out, BIG, MPI_CHAR, right, t_big_in, BIG, MPI_CHAR, win),
                              "big put inside"), 0, "big put inside");
    int across[4] = { 7 + rank, 8 + rank, 9 + rank, 10 + rank };
    expect_reported(range_err(MPI_Put(across, 4, MPI_INT, right, t_pair + (N - 2) * sizeof(int), 4,
                                      MPI_INT, win), "put across adjacent regions"),
                    0, "put across adjacent regions");
    expect_reported(range_err(MPI_Win_unlock_all(win), "unlock_all"), 0, "unlock_all");

    /* 3. fence epoch: the error comes with this fence or the next one */
    MPI_Win_fence(0, win);
    n = range_err(MPI_Put(vals + 1, 1, MPI_INT, right, t_outside, 1, MPI_INT, win), "put in fence");
    n += range_err(MPI_Win_fence(0, win), "fence");
    MPI_Barrier(MPI_COMM_WORLD);
    n += range_err(MPI_Win_fence(MPI_MODE_NOSUCCEED, win), "fence");
    expect_reported(n, 1, "put outside in a fence epoch");

    /* 4. lock epoch with MPI_MODE_NOCHECK: no lock message, same report */
    MPI_Win_lock(MPI_LOCK_SHARED, right, MPI_MODE_NOCHECK, win);
    n = range_err(MPI_Put(vals + 1, 1, MPI_INT, right, t_outside, 1, MPI_INT, win),
                  "put in a NOCHECK lock epoch");
    n += range_err(MPI_Win_unlock(right, win), "unlock (NOCHECK)");
    expect_reported(n, 1, "put outside in a NOCHECK lock epoch");
    MPI_Barrier(MPI_COMM_WORLD);

    /* what each rank's memory holds: the refused accesses left no trace */
    MPI_Barrier(MPI_COMM_WORLD);
    for (int i = 0; i < N; ++i) {
        int want = 100 * rank + i;
        if (2 == i) want = 1000 + left;
        if (0 == i) want += 1;
        if (region[i] != want || outside[i] != -1) {
            fprintf(stderr, "[%d] region[%d] = %d (want %d), outside[%d] = %d (want -1)\n", rank,
                    i, region[i], want, i, outside[i]);
            errs++;
        }
    }
    for (int i = 0; i < 4; ++i) {
        if (pair[N - 2 + i] != 7 + left + i) {
            fprintf(stderr, "[%d] pair[%d] = %d (want %d)\n", rank, N - 2 + i, pair[N - 2 + i],
                    7 + left + i);
            errs++;
        }
    }
    for (int i = 0; i < BIG; ++i) {
        if (big_in[i] != 0x30 + left % 10) {
            fprintf(stderr, "[%d] big_in[%d] = %d\n", rank, i, big_in[i]);
            errs++;
            break;
        }
    }

    MPI_Win_detach(win, pair);
    MPI_Win_detach(win, pair + N);
    MPI_Win_detach(win, big_in);
    MPI_Win_detach(win, region);

    /* 5. a refusal in the last epoch before MPI_Win_free (PSCW: the origin's
     * complete does not wait for the target) is reported by MPI_Win_free at
     * the latest; the window is gone either way */
    MPI_Group right_group = world_ranks_group(&right, 1), left_group = world_ranks_group(&left, 1);
    MPI_Win_post(left_group, 0, win);
    MPI_Win_start(right_group, 0, win);
    n = range_err(MPI_Put(vals + 1, 1, MPI_INT, right, t_outside, 1, MPI_INT, win),
                  "put in the last PSCW epoch");
    n += range_err(MPI_Win_complete(win), "complete");
    n += range_err(MPI_Win_wait(win), "wait");
    n += range_err(MPI_Win_free(&win), "free");
    expect_reported(n, 1, "put outside in the last epoch before MPI_Win_free");
    if (MPI_WIN_NULL != win) {
        /* Open MPI keeps the handle when free returns an error: it is
         * invalid now, and freeing it again is an error, not a crash */
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
        int rc = MPI_Win_free(&win);
        int cls = MPI_SUCCESS;
        MPI_Error_class(rc, &cls);
        if (MPI_ERR_WIN != cls) {
            fprintf(stderr, "[%d] second free: error class %d, expected MPI_ERR_WIN\n", rank, cls);
            errs++;
        }
    }
    MPI_Group_free(&left_group);
    MPI_Group_free(&right_group);
    free(addr);
    return test_finish();
}
