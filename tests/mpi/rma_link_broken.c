/*
 * A window whose messages can no longer be sent fails with an error
 * instead of hanging. Run with --mca osc_nbe_test_break_link 0,1,N: every
 * window's connection between ranks 0 and 1 breaks after rank 0's N-th
 * frame to rank 1 (later frames fail as unreachable, as a BTL reports a
 * broken connection; rank 1 sees the break when that frame arrives). N must
 * be well below the fragments of one transfer below, so that the break
 * comes in the middle of it; RDMA must be off (the thresholds at 0) so that
 * the data moves in frames.
 *
 * Ranks 0 and 1 get MPI_ERR_OTHER (they cannot reach each other); a rank
 * 2 learns from them that their windows failed and gets MPI_ERR_OTHER
 * too. Operations cut in the middle complete with the error, and
 * MPI_Win_free works everywhere. With "0,1,N,late" rank 0 learns of the break
 * only from send completion callbacks reporting an error; its fence closing
 * the lost puts may then return before that report (the puts were complete
 * at the origin), and so may rank 2's (rank 0 has not failed yet when it
 * signals the end of its epoch to rank 2); their next call on the window
 * returns the error.
 */
#include "pt2pt_common.h"

#include <stdlib.h>
#include <string.h>

/* the break reaches rank 0 only through send completion callbacks */
static int reported_late(void)
{
    const char *spec = getenv("OMPI_MCA_osc_nbe_test_break_link");
    return NULL != spec && NULL != strstr(spec, ",late");
}

#define COUNT (64 * 1024)   /* ints: 256 KiB, 64 fragments of 4 KiB */

int main(int argc, char **argv)
{
    static int buf[COUNT], data[COUNT];
    MPI_Win win;
    MPI_Request req;
    int rc;

    test_init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    for (int i = 0; i < COUNT; ++i) data[i] = i;

    /* passive target: a get broken off after a few of its fragments */
    MPI_Win_create(buf, sizeof(buf), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    if (0 == rank) {
        expect_class(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 1, 0, win), MPI_SUCCESS, "lock");
        rc = MPI_Rget(data, COUNT, MPI_INT, 1, 0, COUNT, MPI_INT, win, &req);
        if (MPI_SUCCESS == rc) rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
        expect_class(rc, MPI_ERR_OTHER, "get across the broken connection");
        expect_class(MPI_Win_unlock(1, win), MPI_ERR_OTHER, "unlock after the break");
        expect_class(MPI_Win_lock(MPI_LOCK_SHARED, 1, 0, win), MPI_ERR_OTHER, "later lock");
    }
    /* frames go before the barrier's messages on the same connection: rank
     * 1 has seen the break when the barrier ends */
    MPI_Barrier(MPI_COMM_WORLD);
    expect_class(MPI_Win_fence(0, win), MPI_ERR_OTHER, "fence after the break");
    expect_class(MPI_Win_free(&win), MPI_SUCCESS, "free after a broken get");

    /* active target: puts broken off in a fence epoch */
    MPI_Win_create(buf, sizeof(buf), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    expect_class(MPI_Win_fence(0, win), MPI_SUCCESS, "first fence");
    if (0 == rank) {
        rc = MPI_SUCCESS;
        for (int i = 0; i < 64 && MPI_SUCCESS == rc; ++i) {
            rc = MPI_Put(data + i * 1024, 1024, MPI_INT, 1, i * 1024, 1024, MPI_INT, win);
        }
        expect_class(rc, MPI_SUCCESS == rc ? MPI_SUCCESS : MPI_ERR_OTHER, "puts");
    }
    rc = MPI_Win_fence(0, win);
    expect_class(rc, 1 != rank && reported_late() && MPI_SUCCESS == rc ? MPI_SUCCESS : MPI_ERR_OTHER,
                 "fence closing the broken puts");
    expect_class(MPI_Win_fence(0, win), MPI_ERR_OTHER, "next fence");
    expect_class(MPI_Win_free(&win), MPI_SUCCESS, "free after broken puts");

    return test_finish();   /* point-to-point still works */
}
