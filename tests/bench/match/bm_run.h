/* Engine specs, op streams and timing shared by the bench and the smoke test. */
#ifndef BM_RUN_H
#define BM_RUN_H

#include "bm_engine.h"

#include <stdio.h>

/* an engine plus its configuration, as it appears in the CSV "engine" column */
typedef struct bm_spec {
    const char *label;
    const char *engine; /* bm_engine_ops_t name */
    bm_policy_t policy;
    int mode;
    double adjustment;
    unsigned flags;
} bm_spec_t;

enum { BM_OP_POST = 0, BM_OP_ARRIVE = 1, BM_OP_PROBE = 2 };

typedef struct bm_op {
    uint8_t kind;
    uint32_t ctx;
    int32_t rank, tag;
    bm_id_t id;
} bm_op_t;

typedef struct bm_ops {
    bm_op_t *v;
    size_t n, cap;
} bm_ops_t;

void bm_ops_push(bm_ops_t *o, int kind, uint32_t ctx, int32_t rank, int32_t tag);
void bm_ops_free(bm_ops_t *o);

/* a live engine instance */
typedef struct bm_inst {
    const bm_spec_t *spec;
    const bm_engine_ops_t *ops;
    void *e;
    bm_config_t cfg;
} bm_inst_t;

/* false if the spec's engine is not built in */
bool bm_inst_create(bm_inst_t *in, const bm_spec_t *spec, uint32_t comm_size, uint32_t ncomm);
void bm_inst_destroy(bm_inst_t *in);

/* run ops; returns the number that matched; ids[i] receives the match (optional) */
size_t bm_run_ops(bm_inst_t *in, const bm_op_t *v, size_t n, bm_id_t *ids);

uint64_t bm_now_ns(void);
double bm_median(double *v, size_t n);
uint64_t bm_rng(uint64_t *state); /* xorshift64* */

/* expected counts and sizes (the formulas being reproduced) */
unsigned bm_ds(uint32_t comm_size);
/* visits of the 4D search for rank r in a full contiguous queue of ranks lo..S-1, k-th context */
uint64_t bm_4d_visits_full(uint32_t S, uint32_t lo, uint32_t r, uint32_t k);
/* Eq. 4.20 for contiguous ranks 0..n-1 (Eqs. 4.17, 4.18) */
size_t bm_o4d(uint32_t S, uint32_t n, size_t cil, size_t jp, size_t cube_base, size_t cube_per_slot);

#endif
