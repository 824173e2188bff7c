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

/* Zeroed memory that starts on a page. Tests that count protocol choices
 * take their buffers from it: every copy between such buffers runs at
 * distance 0 modulo 4 KiB, where the copy guards (pml_mdq_copy_guard,
 * osc_nbe_copy_guard) never reroute, whatever malloc's layout (which
 * differs with the environment and with glibc's moving mmap threshold). */
static inline void *page_calloc(size_t n)
{
    size_t len = (n + 4095) & ~(size_t) 4095;
    void *p = aligned_alloc(4096, len ? len : 4096);
    if (NULL == p) {
        fprintf(stderr, "page_calloc: no memory for %zu bytes\n", n);
        exit(2);
    }
    return memset(p, 0, len ? len : 4096);
}

/* rc must be of error class want (MPI_SUCCESS included) */
static inline void expect_class(int rc, int want, const char *what)
{
    int cls = MPI_SUCCESS;
    if (MPI_SUCCESS != rc) MPI_Error_class(rc, &cls);
    if (cls != want) {
        fprintf(stderr, "[%d] %s: error class %d, expected %d\n", rank, what, cls, want);
        errs++;
    }
}

/* 1 when rc is MPI_ERR_RMA_RANGE, 0 for success; anything else is a failure */
static inline int range_err(int rc, const char *what)
{
    int cls = MPI_SUCCESS;
    if (MPI_SUCCESS == rc) return 0;
    MPI_Error_class(rc, &cls);
    if (MPI_ERR_RMA_RANGE == cls) return 1;
    fprintf(stderr, "[%d] %s: error class %d\n", rank, what, cls);
    errs++;
    return 0;
}

static inline void test_init(int *argc, char ***argv)
{
    MPI_Init(argc, argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
}

/* a group of MPI_COMM_WORLD ranks (PSCW tests) */
static inline MPI_Group world_ranks_group(const int *ranks, int n)
{
    MPI_Group world, g;
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    MPI_Group_incl(world, n, ranks, &g);
    MPI_Group_free(&world);
    return g;
}

/* rank 0's PSCW partners: every other rank for rank 0, rank 0 for the others */
static inline MPI_Group star_group(void)
{
    int zero = 0;
    MPI_Group g;
    if (0 != rank) return world_ranks_group(&zero, 1);
    int *others = malloc(sizeof(int) * (size_t) nprocs);
    for (int i = 1; i < nprocs; ++i) others[i - 1] = i;
    g = world_ranks_group(others, nprocs - 1);
    free(others);
    return g;
}

/* an origin's access epoch of the star pattern: v into its own slot (its
 * rank, an int) of rank 0's window; g is star_group() */
static inline void star_put(MPI_Group g, MPI_Win win, int v)
{
    MPI_Win_start(g, 0, win);
    MPI_Put(&v, 1, MPI_INT, 0, rank, 1, MPI_INT, win);
    MPI_Win_complete(win);
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
