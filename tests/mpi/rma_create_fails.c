/*
 * A window creation that fails on one process for want of memory fails on
 * every process, and the communicator stays usable: rank 1 asks
 * MPI_Win_allocate for 2^62 bytes, the others for 64. Every process must
 * get an error (not hang in a creation collective the failing process
 * skipped), and a following window must work (a put and a fence).
 * Run with and without osc_nbe_shm_allocate (a shared segment, or memory
 * of each process).
 */
#include "pt2pt_common.h"

int main(int argc, char **argv)
{
    test_init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int *base = NULL;
    MPI_Win win;
    MPI_Aint size = (1 == rank) ? ((MPI_Aint) 1 << 62) : 64;
    int rc = MPI_Win_allocate(size, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
    if (nprocs > 1) {
        CHECK(MPI_SUCCESS != rc, "MPI_Win_allocate succeeded though rank 1 cannot allocate");
    } else if (MPI_SUCCESS == rc) {
        MPI_Win_free(&win);
    }

    rc = MPI_Win_allocate(sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
    CHECK(MPI_SUCCESS == rc, "the next MPI_Win_allocate failed (%d)", rc);
    if (MPI_SUCCESS == rc) {
        *base = -1;
        int mine = rank;
        MPI_Win_fence(0, win);
        MPI_Put(&mine, 1, MPI_INT, (rank + 1) % nprocs, 0, 1, MPI_INT, win);
        MPI_Win_fence(0, win);
        CHECK(*base == (rank + nprocs - 1) % nprocs, "window holds %d", *base);
        MPI_Win_free(&win);
    }
    return test_finish();
}
