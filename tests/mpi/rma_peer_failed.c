/*
 * A window that fails on one process does not leave its peers waiting.
 * Run with --mca osc_nbe_test_fail_rank 1: rank 1's windows fail, as if a
 * message had been lost for want of memory, at their second
 * synchronization call. Rank 1 gets MPI_ERR_NO_MEM from that call; a peer
 * waiting for rank 1 (its FENCE_DONE, its lock grant) gets MPI_ERR_OTHER
 * instead of waiting forever, every later call on the window fails the
 * same way, and MPI_Win_free works everywhere.
 */
#include "pt2pt_common.h"
#include "one_node.h"

#define FAILING 1

/* what a call on a failed window returns: rank 1 ran out of memory, the
 * others learnt that rank 1's window failed */
static int failed_class(void)
{
    return FAILING == rank ? MPI_ERR_NO_MEM : MPI_ERR_OTHER;
}

int main(int argc, char **argv)
{
    int buf[4] = { 0 }, v;
    MPI_Win win;

    test_init(&argc, &argv);
    v = rank + 1;

    /* fence: rank 1's second fence fails before its FENCE_DONE leaves,
     * which every other process's second fence waits for */
    MPI_Win_create(buf, sizeof(buf), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    expect_class(MPI_Win_fence(0, win), MPI_SUCCESS, "first fence");
    MPI_Barrier(MPI_COMM_WORLD);   /* everybody's first fence is over before rank 1 fails */
    /* a put to rank 1 waits for its geometry, and may learn of the
     * failure then */
    int rc = MPI_Put(&v, 1, MPI_INT, (rank + 1) % nprocs, 0, 1, MPI_INT, win);
    expect_class(rc, MPI_SUCCESS == rc ? MPI_SUCCESS : MPI_ERR_OTHER, "put");
    expect_class(MPI_Win_fence(0, win), failed_class(), "second fence");
    expect_class(MPI_Win_fence(0, win), failed_class(), "third fence");
    expect_class(MPI_Win_free(&win), MPI_SUCCESS, "free after a failed fence");

    /* passive target: rank 1 holds its own exclusive lock, so rank 0's
     * lock request waits for rank 1's unlock, which fails (the grant never
     * comes) */
    MPI_Win_create(buf, sizeof(buf), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    if (FAILING == rank) {
        expect_class(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, FAILING, 0, win), MPI_SUCCESS, "self lock");
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (0 == rank) {
        rc = MPI_Win_lock(MPI_LOCK_EXCLUSIVE, FAILING, 0, win);
        if (MPI_SUCCESS == rc) rc = MPI_Put(&v, 1, MPI_INT, FAILING, 1, 1, MPI_INT, win);
        if (MPI_SUCCESS == rc) rc = MPI_Win_unlock(FAILING, win);
        expect_class(rc, MPI_ERR_OTHER, "lock, put, unlock of the failing rank");
        expect_class(MPI_Win_lock(MPI_LOCK_SHARED, FAILING, 0, win), MPI_ERR_OTHER, "later lock");
    } else if (FAILING == rank) {
        expect_class(MPI_Win_unlock(FAILING, win), MPI_ERR_NO_MEM, "self unlock");
    }
    expect_class(MPI_Win_free(&win), MPI_SUCCESS, "free after a failed lock");

    if (!comm_on_one_node(MPI_COMM_WORLD)) {
        errs += shared_window_refused(MPI_COMM_WORLD);
        return test_finish();
    }
    /* shared memory: the fence ends in a barrier in the segment, and a
     * lock is a word in it */
    int *shared;
    MPI_Win_allocate_shared(4 * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &shared,
                            &win);
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    expect_class(MPI_Win_fence(0, win), MPI_SUCCESS, "first shared-memory fence");
    MPI_Barrier(MPI_COMM_WORLD);
    expect_class(MPI_Win_fence(0, win), failed_class(), "second shared-memory fence");
    expect_class(MPI_Win_free(&win), MPI_SUCCESS, "free after a failed shared-memory fence");

    MPI_Win_allocate_shared(4 * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &shared,
                            &win);
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    if (FAILING == rank) {
        expect_class(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, FAILING, 0, win), MPI_SUCCESS,
                     "shared-memory self lock");
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (0 == rank) {
        /* waits for the lock word: either rank 1's failed unlock still
         * releases it, or rank 1's failure ends the wait */
        rc = MPI_Win_lock(MPI_LOCK_EXCLUSIVE, FAILING, 0, win);
        if (MPI_SUCCESS == rc) rc = MPI_Win_unlock(FAILING, win);
        expect_class(rc, MPI_SUCCESS == rc ? MPI_SUCCESS : MPI_ERR_OTHER, "shared-memory lock");
    } else if (FAILING == rank) {
        expect_class(MPI_Win_unlock(FAILING, win), MPI_ERR_NO_MEM, "shared-memory self unlock");
    }
    expect_class(MPI_Win_free(&win), MPI_SUCCESS, "free after a failed shared-memory lock");

    return test_finish();   /* the processes still communicate */
}
