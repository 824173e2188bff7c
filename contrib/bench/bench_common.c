/*
 * Shared helpers of the ompi-scale MPI benchmarks (see bench_common.h).
 */
#include "bench_common.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Large sizes run until about this many bytes moved per direction. */
#define BENCH_BYTE_BUDGET (64UL * 1024 * 1024)
#define BENCH_MIN_ITERS 10
#define BENCH_MAX_SIZE (256UL * 1024 * 1024)

int bench_parse_size(const char *text, size_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 10);
    if (errno || end == text || '-' == text[0]) {
        return -1;
    }
    switch (*end) {
    case 'k': case 'K': v <<= 10; end++; break;
    case 'm': case 'M': v <<= 20; end++; break;
    case 'g': case 'G': v <<= 30; end++; break;
    default: break;
    }
    if ('\0' != *end) {
        return -1;
    }
    *out = (size_t) v;
    return 0;
}

int bench_parse_range(const char *text, bench_opts_t *opts)
{
    const char *colon = strchr(text, ':');
    char lo[64];
    size_t n;

    if (NULL == colon) {
        /* a single value is the maximum */
        return 0 == bench_parse_size(text, &opts->max_size) &&
               opts->max_size <= BENCH_MAX_SIZE && opts->min_size <= opts->max_size ? 0 : -1;
    }
    n = (size_t) (colon - text);
    if (n >= sizeof(lo)) {
        return -1;
    }
    memcpy(lo, text, n);
    lo[n] = '\0';
    if (n > 0 && 0 != bench_parse_size(lo, &opts->min_size)) {
        return -1;
    }
    if ('\0' != colon[1] && 0 != bench_parse_size(colon + 1, &opts->max_size)) {
        return -1;
    }
    /* message counts are ints of MPI_BYTE: stay far below INT_MAX */
    if (opts->max_size > BENCH_MAX_SIZE) {
        return -1;
    }
    return opts->min_size <= opts->max_size ? 0 : -1;
}

int bench_parse_int(const char *text, int min, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (errno || end == text || '\0' != *end || v < min || v > INT_MAX) {
        return -1;
    }
    *out = (int) v;
    return 0;
}

int bench_iterations(const bench_opts_t *opts, size_t size)
{
    long iters = opts->iters;
    if (size > 0 && (unsigned long) iters * size > BENCH_BYTE_BUDGET) {
        iters = (long) (BENCH_BYTE_BUDGET / size);
    }
    if (opts->quick) {
        iters /= 20;
    }
    if (iters < BENCH_MIN_ITERS) {
        iters = opts->quick ? 2 : BENCH_MIN_ITERS;
    }
    return (int) iters;
}

int bench_warmup(const bench_opts_t *opts, int iters)
{
    if (opts->warmup >= 0) {
        return opts->warmup;
    }
    return iters / 10 > 2 ? iters / 10 : 2;
}

void bench_timer_init(bench_timer_t *t, int iters)
{
    t->nbatches = iters < BENCH_BATCHES ? iters : BENCH_BATCHES;
    t->next = 0;
    for (int b = 0; b <= t->nbatches; b++) {
        t->bounds[b] = (int) ((long) b * iters / t->nbatches);
    }
}

void bench_timer_mark(bench_timer_t *t, int done)
{
    if (t->next <= t->nbatches && t->bounds[t->next] == done) {
        t->stamps[t->next++] = MPI_Wtime();
    }
}

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *) a, y = *(const double *) b;
    return (x > y) - (x < y);
}

double bench_timer_result(const bench_timer_t *t)
{
    double per_iter[BENCH_BATCHES];
    int n = t->next - 1;   /* completed batches */

    if (n < 1) {
        return 0.0;
    }
    for (int b = 0; b < n; b++) {
        per_iter[b] = (t->stamps[b + 1] - t->stamps[b]) / (t->bounds[b + 1] - t->bounds[b]);
    }
    qsort(per_iter, (size_t) n, sizeof(double), compare_doubles);
    return n % 2 ? per_iter[n / 2] : 0.5 * (per_iter[n / 2 - 1] + per_iter[n / 2]);
}

size_t bench_next_size(size_t size)
{
    return 0 == size ? 1 : size * 2;
}

void bench_pairing(MPI_Comm comm, bench_pair_t *pair)
{
    MPI_Comm_rank(comm, &pair->rank);
    MPI_Comm_size(comm, &pair->nprocs);
    pair->npairs = pair->nprocs / 2;
    if (pair->rank < pair->npairs) {
        pair->partner = pair->rank + pair->npairs;
        pair->initiator = 1;
    } else if (pair->rank < 2 * pair->npairs) {
        pair->partner = pair->rank - pair->npairs;
        pair->initiator = 0;
    } else {
        pair->partner = -1;
        pair->initiator = 0;
    }
}

void *bench_alloc(size_t bytes)
{
    void *p = NULL;
    long page = sysconf(_SC_PAGESIZE);
    if (bytes == 0) {
        bytes = 1;
    }
    if (0 != posix_memalign(&p, page > 0 ? (size_t) page : 4096, bytes)) {
        bench_fail("cannot allocate %zu bytes", bytes);
    }
    memset(p, 0, bytes);
    return p;
}

static unsigned char pattern_byte(size_t i, unsigned seed)
{
    return (unsigned char) ((i * 131u + seed * 7u + (i >> 8)) & 0xff);
}

void bench_fill(unsigned char *buf, size_t len, unsigned seed)
{
    for (size_t i = 0; i < len; i++) {
        buf[i] = pattern_byte(i, seed);
    }
}

size_t bench_check(const unsigned char *buf, size_t len, unsigned seed)
{
    for (size_t i = 0; i < len; i++) {
        if (buf[i] != pattern_byte(i, seed)) {
            return i;
        }
    }
    return (size_t) -1;
}

void bench_print_header(const char *program, const char *metric_name,
                        int lower_is_better, const bench_pair_t *pair,
                        const bench_opts_t *opts)
{
    char version[MPI_MAX_LIBRARY_VERSION_STRING];
    char pml[128];
    int len = 0;

    bench_selected_pml(pml, sizeof(pml));
    if (0 != pair->rank) {
        return;
    }
    MPI_Get_library_version(version, &len);
    version[strcspn(version, ",\n")] = '\0';
    printf("# benchmark: %s\n", program);
    printf("# metric: %s %s\n", metric_name, lower_is_better ? "lower" : "higher");
    printf("# mpi: %s\n", version);
    printf("# np: %d pairs: %d\n", pair->nprocs, pair->npairs);
    printf("# pml: %s\n", pml);
    printf("# statistic: median of up to %d batch means per size\n", BENCH_BATCHES);
    printf("# iterations: %d (reduced for large sizes) warmup: %s%s\n", opts->iters,
           opts->warmup < 0 ? "auto" : "fixed", opts->quick ? " quick" : "");
}

void bench_fail(const char *fmt, ...)
{
    va_list ap;
    int rank = -1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    fprintf(stderr, "bench error (rank %d): ", rank);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 3);
    abort();
}
