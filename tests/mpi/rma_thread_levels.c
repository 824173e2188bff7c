/*
 * osc/nbe with processes at different thread levels: even ranks ask for
 * MPI_THREAD_MULTIPLE, odd ranks for MPI_THREAD_SINGLE (MPI lets each
 * process choose; the rank comes from Open MPI's OMPI_COMM_WORLD_RANK
 * before MPI_Init_thread). Window creation runs collectives whose sequence
 * must not depend on the level; then fence and lock epochs move data that
 * is checked, on create and allocate windows, several times.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 4096

static int rank, size, errs;

static void one_window(int allocate, int round)
{
    int *base, *mem = NULL;
    MPI_Win win;
    MPI_Aint bytes = (MPI_Aint) size * N * (MPI_Aint) sizeof(int);
    if (allocate) {
        MPI_Win_allocate(bytes, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
    } else {
        mem = calloc(1, (size_t) bytes);
        base = mem;
        MPI_Win_create(base, bytes, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    }
    int *out = malloc(N * sizeof(int));
    int target = (rank + 1) % size, from = (rank + size - 1) % size;
    for (int i = 0; i < N; ++i) out[i] = rank * 100000 + round * 1000 + i;

    /* fence: my block at the next rank */
    MPI_Win_fence(0, win);
    MPI_Put(out, N, MPI_INT, target, (MPI_Aint) rank * N, N, MPI_INT, win);
    MPI_Win_fence(0, win);
    for (int i = 0; i < N; ++i) {
        if (base[from * N + i] != from * 100000 + round * 1000 + i) {
            fprintf(stderr, "[%d] fence round %d: element %d is %d\n", rank, round, i, base[from * N + i]);
            errs++;
            break;
        }
    }
    MPI_Win_fence(0, win);

    /* lock: negated block, read back */
    for (int i = 0; i < N; ++i) out[i] = -out[i];
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, target, 0, win);
    MPI_Put(out, N, MPI_INT, target, (MPI_Aint) rank * N, N, MPI_INT, win);
    MPI_Win_unlock(target, win);
    int *back = malloc(N * sizeof(int));
    MPI_Win_lock(MPI_LOCK_SHARED, target, 0, win);
    MPI_Get(back, N, MPI_INT, target, (MPI_Aint) rank * N, N, MPI_INT, win);
    MPI_Win_unlock(target, win);
    if (memcmp(back, out, N * sizeof(int))) {
        fprintf(stderr, "[%d] lock round %d: read back differs\n", rank, round);
        errs++;
    }
    free(back);
    free(out);
    MPI_Win_free(&win);
    free(mem);
}

int main(int argc, char **argv)
{
    const char *env = getenv("OMPI_COMM_WORLD_RANK");
    int want = (NULL != env && 0 == atoi(env) % 2) ? MPI_THREAD_MULTIPLE : MPI_THREAD_SINGLE;
    int provided;
    MPI_Init_thread(&argc, &argv, want, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int levels[2] = { provided == MPI_THREAD_MULTIPLE, provided != MPI_THREAD_MULTIPLE }, any[2];
    MPI_Allreduce(levels, any, 2, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (size > 1 && !(any[0] && any[1])) {
        if (0 == rank) printf("the ranks did not get different thread levels\n");
        MPI_Finalize();
        return 1;
    }
    for (int round = 0; round < 4; ++round) one_window(round & 1, round);
    int all;
    MPI_Allreduce(&errs, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (0 == rank) {
        if (all) printf("Found %d errors\n", all);
        else printf(" No Errors\n");
    }
    MPI_Finalize();
    return all ? 1 : 0;
}
