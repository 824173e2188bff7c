/* Small helpers shared by the pml/mdq MPI integration tests. */
#ifndef PT2PT_COMMON_H
#define PT2PT_COMMON_H
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int errs, rank, nprocs;
#define CHECK(c, ...)                                                           \
    do {                                                                        \
        if (!(c)) {                                                             \
            errs++;                                                             \
            fprintf(stderr, "[%d] %s:%d: ", rank, __FILE__, __LINE__);          \
            fprintf(stderr, __VA_ARGS__);                                       \
            fputc('\n', stderr);                                                \
        }                                                                       \
    } while (0)

static inline unsigned char pattern(size_t i, int seed)
{
    return (unsigned char) (i * 31 + (size_t) seed * 7 + (i >> 8));
}
static inline void fill(unsigned char *b, size_t n, int seed)
{
    for (size_t i = 0; i < n; i++) b[i] = pattern(i, seed);
}
/* 0 when fine, else 1 + first bad index */
static inline size_t verify(const unsigned char *b, size_t n, int seed)
{
    for (size_t i = 0; i < n; i++)
        if (b[i] != pattern(i, seed)) return i + 1;
    return 0;
}

static inline void test_init(int *argc, char ***argv)
{
    MPI_Init(argc, argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
}

/* prints "No Errors" on rank 0 when every rank passed; returns exit code */
static inline int test_finish(void)
{
    int total = 0;
    MPI_Allreduce(&errs, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (0 == rank) {
        if (0 == total) printf("No Errors\n");
        else printf("Found %d errors\n", total);
        fflush(stdout);
    }
    MPI_Finalize();
    return total != 0;
}
#endif
