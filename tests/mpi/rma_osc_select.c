/*
 * Which one-sided component serves a window. With NBE_EXPECT=nbe in the
 * environment the window must be an osc/nbe window; with NBE_EXPECT=decline
 * (e.g. under --mca pml cm, which has no BML/BTL stack) osc/nbe must have
 * declined cleanly and another component must work instead.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    int rank, size, errs = 0, total = 0, buf[4] = { 0 }, len;
    char name[MPI_MAX_OBJECT_NAME];
    const char *expect = getenv("NBE_EXPECT");
    MPI_Win win;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Win_create(buf, sizeof(buf), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    MPI_Win_get_name(win, name, &len);
    int is_nbe = 0 == strncmp(name, "nbe window", 10);
    if (expect && 0 == strcmp(expect, "nbe") && !is_nbe) errs++;
    if (expect && 0 == strcmp(expect, "decline") && is_nbe) errs++;
    if (errs) fprintf(stderr, "[%d] window name '%s', expected %s\n", rank, name, expect);
    /* whatever serves it must work */
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, (rank + 1) % size, 0, win);
    MPI_Put(&rank, 1, MPI_INT, (rank + 1) % size, 1, 1, MPI_INT, win);
    MPI_Win_unlock((rank + 1) % size, win);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, win);
    if (buf[1] != (rank + size - 1) % size) errs++;
    MPI_Win_unlock(rank, win);
    MPI_Win_free(&win);
    MPI_Reduce(&errs, &total, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (0 == rank) {
        if (0 == total) printf(" No Errors\n");
        else printf(" Found %d errors\n", total);
    }
    MPI_Finalize();
    return total ? 1 : 0;
}
