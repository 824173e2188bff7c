/*
 * copy_distance: the short-distance penalty of rep movsb, and what
 * ompi_scale_copy (opal/common) does about it. No MPI.
 *
 *   contrib/bench/copy_distance [-i TRIES] [SIZE ...]   (sizes in bytes, K/M allowed)
 *   contrib/bench/copy_distance -s SIZE
 *
 * -s scans every distance from 0 to 4095 with memcpy at SIZE and prints
 * the ranges of distances that take more than 3x the median of all.
 *
 * glibc's memcpy uses rep movsb above 2048 bytes; on AMD CPUs with FSRM
 * that is ~25x slower when the destination is 1..31 bytes past the source
 * modulo 4 KiB. For each size (default 4 KiB .. 1 MiB) and each distance
 * between the page offsets of destination and source (0, 2048, 16), prints
 * the best of TRIES calls, in ns, of memcpy, ompi_scale_copy,
 * ompi_scale_copy_blocks (AVX2 here) and its SSE2 loop (source and
 * destination in separate allocations, warm in cache where they fit). First the two answers of the detection
 * (mode auto) and what each cost.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ompi_scale_copy.h"
#include "plain_args.h"

#define PAGE 4096u
#define MAX_SIZE (1u << 20)

static double now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return 1e9 * (double) t.tv_sec + (double) t.tv_nsec;
}

/* glibc's memcpy, never a copy the compiler inlines */
static void *(*volatile libc_memcpy)(void *, const void *, size_t) = memcpy;

enum { BY_MEMCPY, BY_COPY, BY_BLOCKS, BY_SSE2, NWAYS };

static void copy_by(int way, void *dst, const void *src, size_t n)
{
    if (BY_MEMCPY == way) libc_memcpy(dst, src, n);
    else if (BY_COPY == way) ompi_scale_copy(dst, src, n);
    else if (BY_BLOCKS == way) ompi_scale_copy_blocks(dst, src, n);
    else ompi_scale_copy_blocks_sse2(dst, src, n);
}

static double best_ns(int way, char *dst, const char *src, size_t n, int tries)
{
    double best = 1e30;
    copy_by(way, dst, src, n);   /* warm up */
    for (int i = 0; i < tries; ++i) {
        double t0 = now_ns();
        copy_by(way, dst, src, n);
        double t = now_ns() - t0;
        if (t < best) best = t;
    }
    if (0 != memcmp(dst, src, n)) {
        fprintf(stderr, "copy_distance: wrong copy (%zu bytes)\n", n);
        exit(1);
    }
    return best;
}

static int compare_ns(const void *a, const void *b)
{
    double x = *(const double *) a, y = *(const double *) b;
    return x < y ? -1 : x > y;
}

/* memcpy at every distance: the ranges more than 3x the median */
static int scan(char *dst, char *src, size_t n)
{
    static double ns[PAGE], sorted[PAGE];
    for (size_t d = 0; d < PAGE; ++d) ns[d] = sorted[d] = best_ns(BY_MEMCPY, dst + d, src, n, 20);
    qsort(sorted, PAGE, sizeof(sorted[0]), compare_ns);
    double median = sorted[PAGE / 2];
    printf("# copy_distance -s %zu: memcpy, best of 20 calls at each distance (dst - src) mod 4096;"
           " median %.0f ns\n", n, median);
    int found = 0;
    for (size_t d = 0; d < PAGE; ++d) {
        if (ns[d] <= 3 * median) continue;
        size_t e = d;
        double worst = ns[d];
        while (e + 1 < PAGE && ns[e + 1] > 3 * median) {
            if (ns[++e] > worst) worst = ns[e];
        }
        printf("slow: distances %zu-%zu, up to %.0f ns\n", d, e, worst);
        found = 1;
        d = e;
    }
    if (!found) printf("no distance above 3x the median\n");
    return 0;
}

int main(int argc, char **argv)
{
    static const char *defaults[] = { "4K", "8K", "16K", "32K", "64K", "128K", "256K", "512K", "1M" };
    static const size_t distances[] = { 0, 2048, 16 };
    int tries = 0, first = 1;
    if (argc > 2 && 0 == strcmp(argv[1], "-i")) {
        tries = atoi(argv[2]);
        first = 3;
    }
    char *src = aligned_alloc(PAGE, MAX_SIZE + PAGE), *dst = aligned_alloc(PAGE, MAX_SIZE + 2 * PAGE);
    if (NULL == src || NULL == dst || tries < 0) return 1;
    for (size_t i = 0; i < MAX_SIZE; ++i) src[i] = (char) (i * 131 + 7);
    memset(dst, 0, MAX_SIZE + 2 * PAGE);
    if (argc == 3 && 0 == strcmp(argv[1], "-s")) {
        size_t n = plain_parse_size(argv[2]);
        if (0 == n || n > MAX_SIZE) return 1;
        return scan(dst, src, n);
    }

    double t0 = now_ns();
    bool user = ompi_scale_copy_user_slow();
    double t1 = now_ns();
    bool kernel = ompi_scale_copy_kernel_slow();
    double t2 = now_ns();
    printf("# copy_distance: best of N calls, ns; distance = (dst - src) mod 4096\n");
    printf("# detection (mode auto): user_slow %s (%.0f us), kernel_slow %s (%.0f us)\n",
           user ? "yes" : "no", (t1 - t0) / 1e3, kernel ? "yes" : "no", (t2 - t1) / 1e3);
    printf("# %8s %8s %6s %10s %10s %10s %10s\n", "bytes", "distance", "tries", "memcpy",
           "scale_copy", "blocks", "sse2");

    int nsizes = argc > first ? argc - first : (int) (sizeof(defaults) / sizeof(defaults[0]));
    for (int k = 0; k < nsizes; ++k) {
        size_t n = plain_parse_size(argc > first ? argv[first + k] : defaults[k]);
        if (0 == n || n > MAX_SIZE) {
            fprintf(stderr, "copy_distance: size %zu outside 1..%u\n", n, MAX_SIZE);
            return 1;
        }
        /* about 64 MiB copied per cell, between 20 and 2000 tries */
        int t = tries;
        if (0 == t) {
            size_t want = (64u << 20) / n;
            t = want < 20 ? 20 : want > 2000 ? 2000 : (int) want;
        }
        for (size_t d = 0; d < sizeof(distances) / sizeof(distances[0]); ++d) {
            double ns[NWAYS];
            for (int w = 0; w < NWAYS; ++w) ns[w] = best_ns(w, dst + distances[d], src, n, t);
            printf("  %8zu %8zu %6d %10.0f %10.0f %10.0f %10.0f\n", n, distances[d], t,
                   ns[BY_MEMCPY], ns[BY_COPY], ns[BY_BLOCKS], ns[BY_SSE2]);
        }
    }
    free(dst);
    free(src);
    return 0;
}
