/*
 * Shared helpers of the ompi-scale MPI benchmarks.
 *
 * Every benchmark prints "# key: value" header lines and then one
 * "size value" line per message size, so contrib/bench/run-bench can parse
 * all of them the same way.  The headers "# metric: NAME lower|higher"
 * (which direction is better), "# pml: NAME" and, for RMA, "# osc: NAME"
 * (the component that really ran, see bench_evidence.c) are part of that
 * contract.
 */
#ifndef OMPI_SCALE_BENCH_COMMON_H
#define OMPI_SCALE_BENCH_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <mpi.h>

/* Options common to all benchmarks (each program adds its own). */
typedef struct {
    size_t min_size;
    size_t max_size;
    int iters;   /* iterations for small sizes; larger sizes use fewer */
    int warmup;  /* < 0: derived from the iteration count */
    int window;  /* in-flight operations per synchronisation (bandwidth) */
    int quick;   /* smoke-test mode: few iterations */
    int distance; /* -d: bytes between the buffers a copy runs between, mod 4 KiB */
} bench_opts_t;

/* Parses "64", "8K", "1M" (binary multiples); returns 0 on success. */
int bench_parse_size(const char *text, size_t *out);

/* Parses "MIN:MAX" (either side may be empty) into opts; 0 on success. */
int bench_parse_range(const char *text, bench_opts_t *opts);

/* Parses a positive int; 0 on success. */
int bench_parse_int(const char *text, int min, int *out);

/* Iterations and warmup for one size: the full count for small messages,
 * then bounded by a byte budget so the large sizes stay quick. */
int bench_iterations(const bench_opts_t *opts, size_t size);
int bench_warmup(const bench_opts_t *opts, int iters);

/* Timing of one size: the measured iterations are split into up to
 * BENCH_BATCHES batches and the median of the per-batch mean iteration times
 * is reported, so a few preemptions on a shared, oversubscribed machine do
 * not drag the whole figure. */
#define BENCH_BATCHES 10
typedef struct {
    int nbatches;
    int next;
    int bounds[BENCH_BATCHES + 1];     /* iteration count at each stamp */
    double stamps[BENCH_BATCHES + 1];
} bench_timer_t;

void bench_timer_init(bench_timer_t *t, int iters);
/* Call with done = 0 before the first measured iteration and with the number
 * of measured iterations completed after each one. */
void bench_timer_mark(bench_timer_t *t, int done);
/* Median over batches of the mean time of one iteration, in seconds. */
double bench_timer_result(const bench_timer_t *t);

/* Next size in the power-of-two sweep (0 -> 1 -> 2 -> 4 ...). */
size_t bench_next_size(size_t size);

/* Pairing of ranks: rank r < np/2 is an initiator talking to r + np/2;
 * with an odd np the last rank only takes part in collectives. */
typedef struct {
    int rank;
    int nprocs;
    int npairs;
    int partner;      /* -1 when idle */
    int initiator;    /* 1 for the side that times and reports */
} bench_pair_t;

void bench_pairing(MPI_Comm comm, bench_pair_t *pair);

/* Page-aligned, zero-filled buffer; aborts the job on failure. */
void *bench_alloc(size_t bytes);

/* Deterministic byte pattern for validating transferred data. */
void bench_fill(unsigned char *buf, size_t len, unsigned seed);
/* Returns the first mismatching offset, or (size_t)-1 if all match. */
size_t bench_check(const unsigned char *buf, size_t len, unsigned seed);

/* Prints the common header block on rank 0 (program name, metric line,
 * MPI library, np/pairs, selected PML). */
void bench_print_header(const char *program, const char *metric_name,
                        int lower_is_better, const bench_pair_t *pair,
                        const bench_opts_t *opts);

/* Names of the components that actually run, found from the modules'
 * function pointers (bench_evidence.c).  Writes "unknown" if that fails. */
void bench_selected_pml(char *name, size_t len);
void bench_selected_osc(MPI_Win win, char *name, size_t len);

/* Reports a fatal benchmark error (e.g. wrong data) and aborts the job. */
void bench_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

#endif
