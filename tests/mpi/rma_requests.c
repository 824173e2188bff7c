/*
 * Request-based RMA: Rput / Rget / Raccumulate / Rget_accumulate inside
 * lock_all and lock epochs, completed with MPI_Wait, MPI_Waitall and MPI_Test
 * loops, plus MPI_Request_free before completion. Rget results are valid as
 * soon as the request completes, before any flush.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define N 4096
#define K 16

static int rank, size, errs;

int main(int argc, char **argv)
{
    int total = 0, *mem;
    MPI_Win win;
    MPI_Request reqs[4 * K];
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;

    MPI_Win_allocate(2 * N * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win);
    for (int i = 0; i < 2 * N; ++i) mem[i] = rank * 10 + (i % 7);
    MPI_Barrier(MPI_COMM_WORLD);

    int *src = malloc(N * sizeof(int)), *dst = malloc(N * sizeof(int)), *res = malloc(K * sizeof(int));
    for (int i = 0; i < N; ++i) {
        src[i] = 1000 * rank + i;
        dst[i] = -1;
    }

    MPI_Win_lock_all(0, win);
    /* Rget of the right neighbour's untouched second half, then wait */
    MPI_Rget(dst, N, MPI_INT, right, N, N, MPI_INT, win, &reqs[0]);
    MPI_Wait(&reqs[0], MPI_STATUS_IGNORE);
    for (int i = 0; i < N; ++i) {
        if (dst[i] != right * 10 + ((N + i) % 7)) {
            fprintf(stderr, "[%d] rget [%d] = %d\n", rank, i, dst[i]);
            errs++;
            break;
        }
    }
    /* K Rputs of slices + Waitall; the origin buffer is reusable after the wait */
    for (int k = 0; k < K; ++k) {
        MPI_Rput(src + k * (N / K), N / K, MPI_INT, right, k * (N / K), N / K, MPI_INT, win, &reqs[k]);
    }
    MPI_Waitall(K, reqs, MPI_STATUSES_IGNORE);
    MPI_Win_flush(right, win);
    /* Raccumulate + Rget_accumulate on a counter, completed with Test loops */
    for (int k = 0; k < K; ++k) {
        int one = 1;
        MPI_Raccumulate(&one, 1, MPI_INT, right, N + 100, 1, MPI_INT, MPI_SUM, win, &reqs[k]);
        MPI_Rget_accumulate(&one, 1, MPI_INT, &res[k], 1, MPI_INT, right, N + 101, 1, MPI_INT,
                            MPI_SUM, win, &reqs[K + k]);
    }
    int done = 0;
    while (!done) MPI_Testall(2 * K, reqs, &done, MPI_STATUSES_IGNORE);
    for (int k = 0; k < K; ++k) {
        int base = right * 10 + ((N + 101) % 7);
        /* fetched values are base, base+1, ... in issue order (same origin, same location) */
        if (res[k] != base + k) {
            fprintf(stderr, "[%d] rget_accumulate %d fetched %d expected %d\n", rank, k, res[k], base + k);
            errs++;
        }
    }
    /* a freed request still completes its operation */
    int v = 77 + rank;
    MPI_Rput(&v, 1, MPI_INT, right, N + 200, 1, MPI_INT, win, &reqs[0]);
    MPI_Request_free(&reqs[0]);
    MPI_Win_unlock_all(win);
    MPI_Barrier(MPI_COMM_WORLD);

    for (int i = 0; i < N; ++i) {
        if (mem[i] != 1000 * left + i) {
            fprintf(stderr, "[%d] rput [%d] = %d\n", rank, i, mem[i]);
            errs++;
            break;
        }
    }
    if (mem[N + 100] != rank * 10 + ((N + 100) % 7) + K) {
        fprintf(stderr, "[%d] raccumulate counter %d\n", rank, mem[N + 100]);
        errs++;
    }
    if (mem[N + 200] != 77 + left) {
        fprintf(stderr, "[%d] freed rput %d\n", rank, mem[N + 200]);
        errs++;
    }

    /* request ops are also valid in a single-target lock epoch */
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, win);
    MPI_Rget(dst, 8, MPI_INT, right, 0, 8, MPI_INT, win, &reqs[0]);
    MPI_Wait(&reqs[0], MPI_STATUS_IGNORE);
    MPI_Win_unlock(right, win);
    if (dst[3] != 1000 * rank + 3) {
        fprintf(stderr, "[%d] rget in lock epoch: %d\n", rank, dst[3]);
        errs++;
    }

    free(src);
    free(dst);
    free(res);
    MPI_Win_free(&win);
    MPI_Reduce(&errs, &total, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (0 == rank) {
        if (0 == total) printf(" No Errors\n");
        else printf(" Found %d errors\n", total);
    }
    MPI_Finalize();
    return total ? 1 : 0;
}
