/*
 * Shared engine of rma_latency and rma_bandwidth: option parsing, window
 * creation and the four synchronisation modes.
 *
 * Rank r < np/2 (the origin) accesses the window of rank r + np/2 (the
 * target).  One "iteration" is: open an access epoch (or nothing), issue a
 * number of operations, close/flush it.  Every size starts from a freshly
 * initialised target region and ends with a data check.
 */
#ifndef OMPI_SCALE_RMA_COMMON_H
#define OMPI_SCALE_RMA_COMMON_H

#include "bench_common.h"

typedef enum { RMA_SYNC_FENCE, RMA_SYNC_PSCW, RMA_SYNC_LOCK, RMA_SYNC_FLUSH } rma_sync_t;
typedef enum { RMA_OP_PUT, RMA_OP_GET, RMA_OP_ACC } rma_op_t;
typedef enum { RMA_WIN_CREATE, RMA_WIN_ALLOCATE } rma_flavor_t;

typedef struct {
    bench_opts_t opts;
    bench_pair_t pair;
    rma_sync_t sync;
    rma_op_t op;
    rma_flavor_t flavor;
    MPI_Win win;
    unsigned char *winbuf;   /* this rank's window memory (max_size + -d bytes) */
    unsigned char *origin;   /* origin buffer: `slots` slots of max_size bytes */
    size_t slots;
    MPI_Group peer;          /* group holding only the partner (pscw) */
    int away_ms;             /* -a (RMA_OPT_AWAY) */
    int poll_us;             /* -p (RMA_OPT_AWAY): the target calls MPI every that often, 0: never */
    int epochs_shown;        /* -e (RMA_OPT_AWAY): the first origin prints its first that many epochs' times */
} rma_ctx_t;

/* Options a program adds to the common ones (flags of rma_setup). */
enum {
    RMA_OPT_WINDOW = 1,   /* -W: operations per synchronisation */
    RMA_OPT_AWAY = 2      /* -a: milliseconds the target spends outside MPI */
};

/* Parses the options; `extra` (RMA_OPT_*) enables the program's own ones.
 * Returns 0 to run, 1 when help was printed, -1 on bad usage (message
 * printed by rank 0). */
int rma_setup(rma_ctx_t *ctx, int argc, char **argv, const char *program, int extra);

/* Prints the header lines (common + rma ones, "# osc:" included). */
void rma_print_header(rma_ctx_t *ctx, const char *program, const char *metric,
                      int lower_is_better);

/* Before the timed loop of one size: initialise data, open outer epochs. */
void rma_begin_size(rma_ctx_t *ctx, size_t size);
/* One iteration: `nops` operations of `size` bytes and their synchronisation. */
void rma_iteration(rma_ctx_t *ctx, size_t size, int nops);
/* After the loop: close outer epochs and check the data (ops_done = total
 * operations issued by each origin for this size). */
void rma_end_size(rma_ctx_t *ctx, size_t size, long ops_done);

void rma_teardown(rma_ctx_t *ctx);

#endif
