/*
 * win_memory: memory cost of one RMA window as a function of the
 * communicator size, with no communication on the windows (every peer is
 * "untouched").
 *
 * Each rank creates K windows (warm-up: one-time component state, free-list
 * growth), measures, creates K more and measures again; the cost of one
 * window is the difference divided by K.  Two meters:
 *   heap: glibc mallinfo2() uordblks + hblkhd (bytes in use from malloc,
 *         including mmap'ed blocks);
 *   rss:  VmRSS from /proc/self/status (also counts touched shared-memory
 *         segments that a component maps per window).
 * Rank 0 prints the mean and maximum over ranks, per window, in bytes.
 *
 * Usage: win_memory [-w create|allocate|dup|dupcoll] [-n K] [-b BYTES]
 * (-w dup: MPI_Comm_dup instead of a window, the baseline of a component
 * that duplicates the communicator per window; -w dupcoll: the same plus an
 * allgather of 24 B per process kept in an array and a barrier, i.e. the
 * generic part of a window creation that keeps an O(n) geometry table)
 * Run it at several np and fit bytes-per-window against np: the slope is the
 * cost per (untouched) peer.
 */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_common.h"

static double heap_bytes(void)
{
    struct mallinfo2 mi = mallinfo2();
    return (double) mi.uordblks + (double) mi.hblkhd;
}

static double rss_bytes(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    double kb = -1.0;
    if (NULL == f) return -1.0;
    while (fgets(line, sizeof line, f)) {
        if (0 == strncmp(line, "VmRSS:", 6)) {
            kb = strtod(line + 6, NULL);
            break;
        }
    }
    fclose(f);
    return kb * 1024.0;
}

/* mode 0: Win_create, 1: Win_allocate, 2: MPI_Comm_dup only (the
 * communicator cost a component pays if it duplicates the communicator),
 * 3: MPI_Comm_dup followed by what a window creation typically runs on it
 * (an allgather of 24 bytes per process into a kept array, a barrier) */
static void *kept[4096];
static int nkept;

static void make_windows(MPI_Win *wins, MPI_Comm *comms, int n, int mode, void *base,
                         MPI_Aint bytes)
{
    for (int i = 0; i < n; ++i) {
        int rc;
        if (2 <= mode) {
            rc = MPI_Comm_dup(MPI_COMM_WORLD, &comms[i]);
            if (MPI_SUCCESS == rc && 3 == mode) {
                int n;
                char mine[24] = {0};
                MPI_Comm_size(comms[i], &n);
                /* kept like a window's geometry table; freed at exit */
                void *all = malloc((size_t) n * sizeof mine);
                if (NULL == all) bench_fail("out of memory");
                rc = MPI_Allgather(mine, sizeof mine, MPI_BYTE, all, sizeof mine, MPI_BYTE, comms[i]);
                if (MPI_SUCCESS == rc) rc = MPI_Barrier(comms[i]);
                kept[nkept++] = all;
            }
        } else if (1 == mode) {
            void *mem;
            rc = MPI_Win_allocate(bytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &wins[i]);
        } else {
            rc = MPI_Win_create(base, bytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &wins[i]);
        }
        if (MPI_SUCCESS != rc) bench_fail("window %d: creation failed (rc %d)", i, rc);
    }
}

/* mean and max over ranks of v, on rank 0 */
static void reduce_stats(double v, double *mean, double *max, int nprocs)
{
    double sum = 0.0;
    MPI_Reduce(&v, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(&v, max, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    *mean = sum / nprocs;
}

int main(int argc, char **argv)
{
    int mode = 0, k = 32, rank, nprocs;
    static const char *mode_names[] = {"create", "allocate", "comm_dup", "comm_dup+allgather"};
    long bytes = 8;
    int opt;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);

    while ((opt = getopt(argc, argv, "w:n:b:h")) != -1) {
        if ('w' == opt && 0 == strcmp(optarg, "allocate")) mode = 1;
        else if ('w' == opt && 0 == strcmp(optarg, "create")) mode = 0;
        else if ('w' == opt && 0 == strcmp(optarg, "dup")) mode = 2;
        else if ('w' == opt && 0 == strcmp(optarg, "dupcoll")) mode = 3;
        else if ('n' == opt && atoi(optarg) > 0 && atoi(optarg) <= 2048) k = atoi(optarg);
        else if ('b' == opt && atol(optarg) > 0) bytes = atol(optarg);
        else {
            if (0 == rank) fprintf(stderr, "usage: win_memory [-w create|allocate|dup|dupcoll] [-n K] [-b BYTES]\n");
            MPI_Finalize();
            return 'h' == opt ? 0 : 2;
        }
    }

    MPI_Win *wins = calloc((size_t) 2 * k, sizeof *wins);
    MPI_Comm *comms = calloc((size_t) 2 * k, sizeof *comms);
    void *base = bench_alloc((size_t) bytes);
    if (NULL == wins || NULL == comms) bench_fail("out of memory");

    make_windows(wins, comms, k, mode, base, bytes);
    MPI_Barrier(MPI_COMM_WORLD);
    double h1 = heap_bytes(), r1 = rss_bytes();
    make_windows(wins + k, comms + k, k, mode, base, bytes);
    MPI_Barrier(MPI_COMM_WORLD);
    double h2 = heap_bytes(), r2 = rss_bytes();

    char osc[64] = "none";
    if (2 != mode) bench_selected_osc(wins[0], osc, sizeof osc);
    char pml[64];
    bench_selected_pml(pml, sizeof pml);

    double hmean, hmax, rmean, rmax;
    reduce_stats((h2 - h1) / k, &hmean, &hmax, nprocs);
    reduce_stats((r2 - r1) / k, &rmean, &rmax, nprocs);

    if (0 == rank) {
        printf("# program: win_memory\n");
        printf("# pml: %s\n# osc: %s\n", pml, osc);
        printf("# flavor: %s\n# window bytes: %ld\n# windows measured: %d (after %d warm-up)\n",
               mode_names[mode], bytes, k, k);
        printf("# columns: np heap_mean heap_max rss_mean rss_max (bytes per window)\n");
        printf("%d %.1f %.1f %.1f %.1f\n", nprocs, hmean, hmax, rmean, rmax);
        fflush(stdout);
    }

    for (int i = 2 * k - 1; i >= 0; --i) {
        if (2 <= mode) MPI_Comm_free(&comms[i]);
        else MPI_Win_free(&wins[i]);
    }
    for (int i = 0; i < nkept; ++i) free(kept[i]);
    free(wins);
    free(comms);
    free(base);
    MPI_Finalize();
    return 0;
}
