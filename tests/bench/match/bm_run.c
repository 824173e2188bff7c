/* Engine instances, op streams, timing and the published formulas. */
#define _POSIX_C_SOURCE 200809L
#include "bm_run.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

void bm_ops_push(bm_ops_t *o, int kind, uint32_t ctx, int32_t rank, int32_t tag)
{
    if (o->n == o->cap) {
        o->cap = o->cap ? 2 * o->cap : 1024;
        o->v = realloc(o->v, o->cap * sizeof(*o->v));
        if (!o->v)
            abort();
    }
    o->v[o->n] = (bm_op_t){.kind = (uint8_t) kind, .ctx = ctx, .rank = rank, .tag = tag,
                           .id = (bm_id_t) o->n + 1};
    o->n++;
}

void bm_ops_free(bm_ops_t *o)
{
    free(o->v);
    memset(o, 0, sizeof(*o));
}

bool bm_inst_create(bm_inst_t *in, const bm_spec_t *spec, uint32_t comm_size, uint32_t ncomm)
{
    memset(in, 0, sizeof(*in));
    in->ops = bm_engine_by_name(spec->engine);
    if (!in->ops)
        return false;
    in->spec = spec;
    in->cfg = (bm_config_t){.comm_size = comm_size, .ncomm = ncomm, .policy = spec->policy,
                            .mode = spec->mode,
                            .adjustment = spec->adjustment > 0 ? spec->adjustment : 2.0,
                            .flags = spec->flags};
    in->e = in->ops->create(&in->cfg);
    return in->e != NULL;
}

void bm_inst_destroy(bm_inst_t *in)
{
    if (in->e)
        in->ops->destroy(in->e);
    in->e = NULL;
}

size_t bm_run_ops(bm_inst_t *in, const bm_op_t *v, size_t n, bm_id_t *ids)
{
    const bm_engine_ops_t *E = in->ops;
    void *e = in->e;
    size_t matched = 0;
    for (size_t i = 0; i < n; i++) {
        const bm_op_t *o = &v[i];
        bm_id_t m;
        if (o->kind == BM_OP_POST)
            m = E->post(e, o->ctx, o->rank, o->tag, o->id, NULL);
        else if (o->kind == BM_OP_ARRIVE)
            m = E->arrive(e, o->ctx, o->rank, o->tag, o->id, NULL);
        else
            m = E->probe(e, o->ctx, o->rank, o->tag);
        matched += m != 0;
        if (ids)
            ids[i] = m;
    }
    return matched;
}

uint64_t bm_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t) ts.tv_sec * 1000000000ull + (uint64_t) ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *) a, y = *(const double *) b;
    return (x > y) - (x < y);
}

double bm_median(double *v, size_t n)
{
    if (!n)
        return 0;
    qsort(v, n, sizeof(*v), cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

uint64_t bm_rng(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return x * 0x2545F4914F6CDD1Dull;
}

unsigned bm_ds(uint32_t S)
{
    unsigned b = 0;
    while ((1ull << b) < S)
        b++;
    b = (b + 3) / 4;
    return 1u << (b < 2 ? 2 : b);
}

uint64_t bm_4d_visits_full(uint32_t S, uint32_t lo, uint32_t r, uint32_t k)
{
    unsigned ds = bm_ds(S), b = (unsigned) __builtin_ctz(ds);
    uint32_t c3 = r >> (3 * b), c1 = (r >> b) & (ds - 1), c0 = r & (ds - 1);
    uint32_t jp_base = r & ~(uint32_t) (ds - 1);
    /* Cubes 0..c3 exist, JumpPoints c1' <= c1 exist in slot c2 (full queue),
     * items of ranks jp_base..r (from lo) precede or are the target */
    uint32_t cubes = c3 + 1 - (lo >> (3 * b));
    uint32_t first_c1 = ((r >> (2 * b)) == (lo >> (2 * b))) ? ((lo >> b) & (ds - 1)) : 0;
    uint32_t jps = c1 + 1 - first_c1;
    uint32_t items = c0 + 1 - (lo > jp_base ? lo - jp_base : 0);
    return k + cubes + 1 + jps + items;
}

size_t bm_o4d(uint32_t S, uint32_t n, size_t cil, size_t jp, size_t cube_base, size_t cube_per_slot)
{
    uint64_t ds = bm_ds(S);
    uint64_t njp = (n + ds - 1) / ds, nc3 = (n + ds * ds * ds - 1) / (ds * ds * ds);
    return cil + nc3 * (cube_base + cube_per_slot * ds) + njp * jp;
}
