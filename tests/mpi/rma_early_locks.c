/*
 * Early puts (osc/nbe osc_nbe_early_puts) next to passive-target epochs:
 *  - control behind an early put: rank 0 opens a start epoch towards rank 1
 *    and puts (the put leaves early and its packed frame stays open) while
 *    rank 1 flushes a lock epoch on rank 0's window. Rank 0's FLUSH_ACK may
 *    be packed behind the early put; rank 1 must not hold that ack until
 *    its post, which comes only after the flush;
 *  - a lock queue: rank 1 holds an exclusive lock on rank 0 for a while;
 *    rank 2 asks for the lock first and puts late, every other rank asks
 *    after it. Their puts leave before their grants and wait at rank 0;
 *    each must be applied once its grant comes, however many other origins
 *    are still waiting (run with more than 16 waiters).
 * Each ends with the values checked at rank 0.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pt2pt_common.h"

static void ctrl_behind_early_put(MPI_Win win, int *mem)
{
    int v = 77, one = 1, other = 1 - rank;
    MPI_Group world, g;
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    if (rank < 2) MPI_Group_incl(world, 1, &other, &g);
    if (1 == rank) {
        MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
        MPI_Put(&one, 1, MPI_INT, 0, 1, 1, MPI_INT, win);
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Win_flush(0, win);
        MPI_Win_unlock(0, win);
        MPI_Win_post(g, 0, win);
        MPI_Win_wait(win);
        CHECK(mem[0] == 77, "control behind an early put: rank 1 slot 0 holds %d", mem[0]);
    } else if (0 == rank) {
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Win_start(g, 0, win);
        MPI_Put(&v, 1, MPI_INT, 1, 0, 1, MPI_INT, win);
        usleep(300000);   /* rank 1's FLUSH_REQ arrives meanwhile */
        MPI_Win_complete(win);
    } else {
        MPI_Barrier(MPI_COMM_WORLD);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (0 == rank) CHECK(mem[1] == 1, "control behind an early put: rank 0 slot 1 holds %d", mem[1]);
    if (rank < 2) MPI_Group_free(&g);
    MPI_Group_free(&world);
}

static void lock_queue(MPI_Win win, int *mem)
{
    int v = 3000 + rank;
    if (1 == rank) {
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win);
        MPI_Put(&v, 1, MPI_INT, 0, nprocs + rank, 1, MPI_INT, win);
        MPI_Win_flush(0, win);
        usleep(1000000);
        MPI_Win_unlock(0, win);
    } else if (2 == rank) {
        usleep(200000);
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win);
        usleep(400000);
        MPI_Put(&v, 1, MPI_INT, 0, nprocs + rank, 1, MPI_INT, win);
        MPI_Win_unlock(0, win);
    } else if (rank > 2) {
        usleep(400000);
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win);
        MPI_Put(&v, 1, MPI_INT, 0, nprocs + rank, 1, MPI_INT, win);
        MPI_Win_unlock(0, win);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (0 == rank) {
        for (int i = 1; i < nprocs; ++i) CHECK(mem[nprocs + i] == 3000 + i, "lock queue: slot %d holds %d", nprocs + i, mem[nprocs + i]);
    }
}

int main(int argc, char **argv)
{
    test_init(&argc, &argv);
    /* slots: 0-1 first test, nprocs + i lock queue, 2 nprocs geometry */
    size_t n = 2 * (size_t) nprocs + 1;
    int *mem = calloc(n, sizeof(int));
    MPI_Win win;
    MPI_Win_create(mem, (MPI_Aint) (sizeof(int) * n), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    /* everybody learns everybody's geometry: later puts need no answer */
    MPI_Win_fence(0, win);
    for (int t = 0; t < nprocs; ++t) {
        if (t != rank) MPI_Put(&rank, 1, MPI_INT, t, 2 * nprocs, 1, MPI_INT, win);
    }
    MPI_Win_fence(MPI_MODE_NOSUCCEED, win);
    if (nprocs >= 2) ctrl_behind_early_put(win, mem);
    if (nprocs >= 3) lock_queue(win, mem);
    MPI_Win_free(&win);
    free(mem);
    return test_finish();
}
