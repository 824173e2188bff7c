/*
 * Fence epochs with Put and Get on Win_create and Win_allocate windows:
 * every rank puts its rank-tagged pattern into every other rank (large
 * enough to need several fragments), then reads it back with Get.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define N 20000

static int check(const int *buf, int n, int base, const char *what, int rank)
{
    for (int i = 0; i < n; ++i) {
        if (buf[i] != base + i) {
            fprintf(stderr, "[%d] %s: element %d is %d, expected %d\n", rank, what, i, buf[i], base + i);
            return 1;
        }
    }
    return 0;
}

static int run(int flavor, int rank, int size)
{
    int errs = 0;
    int *mem;
    MPI_Win win;
    size_t bytes = (size_t) N * size * sizeof(int);

    if (0 == flavor) {
        mem = malloc(bytes);
        MPI_Win_create(mem, bytes, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    } else {
        MPI_Win_allocate(bytes, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win);
    }
    for (int i = 0; i < N * size; ++i) mem[i] = -1;

    int *src = malloc(N * sizeof(int));
    for (int i = 0; i < N; ++i) src[i] = rank * 1000000 + i;

    MPI_Win_fence(MPI_MODE_NOPRECEDE, win);
    for (int t = 0; t < size; ++t) {
        MPI_Put(src, N, MPI_INT, t, (MPI_Aint) rank * N, N, MPI_INT, win);
    }
    MPI_Win_fence(0, win);
    for (int r = 0; r < size; ++r) errs += check(mem + r * N, N, r * 1000000, "put", rank);

    int *dst = malloc(N * sizeof(int));
    for (int t = 0; t < size; ++t) {
        for (int i = 0; i < N; ++i) dst[i] = -2;
        MPI_Get(dst, N, MPI_INT, t, (MPI_Aint) rank * N, N, MPI_INT, win);
        MPI_Win_fence(0, win);
        errs += check(dst, N, rank * 1000000, "get", rank);
    }
    MPI_Win_fence(MPI_MODE_NOSUCCEED, win);
    MPI_Win_free(&win);
    if (0 == flavor) free(mem);
    free(src);
    free(dst);
    return errs;
}

int main(int argc, char **argv)
{
    int rank, size, errs = 0, total = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    errs += run(0, rank, size);
    errs += run(1, rank, size);
    MPI_Reduce(&errs, &total, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (0 == rank) {
        if (0 == total) printf(" No Errors\n");
        else printf(" Found %d errors\n", total);
    }
    MPI_Finalize();
    return total ? 1 : 0;
}
