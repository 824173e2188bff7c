/*
 * match_bench: the matching-engine scale sweep. Each run models ONE receiver
 * process of an S-rank job (S is only a number: nothing else depends on
 * it), drives every engine with the same synthetic envelopes and writes one
 * CSV per section into the output directory:
 *   visits     pointer visits of the Table 4.2/4.3 search (last item, full queue)
 *   memory     queue overhead bytes, Table 4.5 (contiguous) and the sparse worst case
 *   search     full queue, single communicator: bottom (rev) / top (fwd) / random
 *              matches of the PRQ and the UMQ, time per op vs S
 *   published  the paper's microbenchmark: whole queue drained, S <= 704
 *   multicomm  10 and 50 communicators (MVAPICH-style global list vs indexed)
 *   anysrc     fraction of ANY_SOURCE receives, PRQ and UMQ side, both policies
 *   apps       halo (26 neighbours), radix all-to-all bursts, N-body many-source
 *   tuning     4D vs linear mode of the mdq engine around the size threshold
 *   improve    the mdq options one by one (4d+all, +hit, +c3, +split) and the
 *              defaults (4d-new) vs the seed design (4d), plus the bench-local 4dx
 *              variants mdq does not have (c1 array, lazy GC)
 * usage: match_bench [--quick] [--out DIR] [--only SECTION[,SECTION...]]
 */
#define _POSIX_C_SOURCE 200809L
#include "bm_4dx.h"
#include "bm_run.h"
#include "mdq_match.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static struct {
    bool quick;
    const char *out;
    const char *only;
    double target_ns; /* wall time budget per measured point */
    int min_reps, max_reps;
    int mismatches;
} G = {.out = "match-results", .target_ns = 40e6, .min_reps = 7, .max_reps = 31};

#define SPEC(l, e, p, m, a, f) {l, e, p, m, a, f}
static const bm_spec_t S_4D = SPEC("4d", "4d", BM_POLICY_OLDEST, 0, 2.0, 0);
static const bm_spec_t S_4D_FIRST = SPEC("4d-first", "4d", BM_POLICY_FIRST, 0, 2.0, 0);
/* the mdq engine with its improved defaults (create = create_ex(FEAT_DEFAULT), adjustment 3.5) */
static const bm_spec_t S_4D_NEW = SPEC("4d-new", "4d", BM_POLICY_OLDEST, 0, MDQ_MATCH_ADJUSTMENT_DEFAULT,
                                       MDQ_MATCH_FEAT_DEFAULT);
/* one optional structure of the mdq engine at a time */
static const bm_spec_t S_4D_ALL = SPEC("4d+all", "4d", BM_POLICY_OLDEST, 0, 2.0, MDQ_MATCH_FEAT_ALL_UMQ);
static const bm_spec_t S_4D_HIT = SPEC("4d+hit", "4d", BM_POLICY_OLDEST, 0, 2.0, MDQ_MATCH_FEAT_LAST_HIT);
static const bm_spec_t S_4D_C3 = SPEC("4d+c3", "4d", BM_POLICY_OLDEST, 0, 2.0, MDQ_MATCH_FEAT_C3_ARRAY);
static const bm_spec_t S_4D_SPLIT = SPEC("4d+split", "4d", BM_POLICY_OLDEST, 0, 2.0, MDQ_MATCH_FEAT_SPLIT);
/* every mdq option: the defaults plus SPLIT */
static const bm_spec_t S_4D_EVERY = SPEC("4d-new+split", "4d", BM_POLICY_OLDEST, 0, MDQ_MATCH_ADJUSTMENT_DEFAULT,
                                         MDQ_MATCH_FEAT_MASK);
static const bm_spec_t S_4D_NEW_4D = SPEC("4d-new-forced", "4d", BM_POLICY_OLDEST, 2, MDQ_MATCH_ADJUSTMENT_DEFAULT,
                                          MDQ_MATCH_FEAT_DEFAULT);
static const bm_spec_t S_LIST = SPEC("list", "list", BM_POLICY_OLDEST, 0, 0, 0);
static const bm_spec_t S_ARRAY = SPEC("array", "array", BM_POLICY_OLDEST, 0, 0, 0);
static const bm_spec_t S_ARRAY_FIRST = SPEC("array-first", "array", BM_POLICY_FIRST, 0, 0, 0);
static const bm_spec_t S_HASH = SPEC("hash", "hash", BM_POLICY_OLDEST, 0, 0, 0);
static const bm_spec_t S_4D_LIN = SPEC("4d-linear", "4d", BM_POLICY_OLDEST, 1, 2.0, 0);
static const bm_spec_t S_4D_4D = SPEC("4d-forced", "4d", BM_POLICY_OLDEST, 2, 2.0, 0);
static const bm_spec_t S_X = SPEC("4dx", "4dx", BM_POLICY_OLDEST, 2, 2.0, 0);
static const bm_spec_t S_X_C3C1 = SPEC("4dx+c3+c1", "4dx", BM_POLICY_OLDEST, 2, 2.0,
                                       BM_4DX_C3ARRAY | BM_4DX_C1ARRAY);
static const bm_spec_t S_X_LAZY = SPEC("4dx+lazygc", "4dx", BM_POLICY_OLDEST, 2, 2.0, BM_4DX_LAZYGC);
/* the memory-cheap combination (everything but the c1 array and lazy GC) */
static const bm_spec_t S_X_BEST = SPEC("4dx+best", "4dx", BM_POLICY_OLDEST, 2, 2.0,
                                       BM_4DX_ALLUMQ | BM_4DX_CURSOR | BM_4DX_SPLIT | BM_4DX_C3ARRAY);

static const bm_spec_t *const CORE[] = {&S_4D, &S_4D_NEW, &S_LIST, &S_ARRAY, &S_HASH, NULL};

static bool want(const char *section)
{
    if (!G.only)
        return true;
    size_t n = strlen(section);
    for (const char *p = G.only; (p = strstr(p, section)); p += n)
        if ((p == G.only || p[-1] == ',') && (p[n] == ',' || p[n] == 0))
            return true;
    return false;
}

static FILE *open_csv(const char *name)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.csv", G.out, name);
    FILE *f = fopen(path, "w");
    if (!f) {
        perror(path);
        exit(2);
    }
    fprintf(f, "section,workload,engine,S,ncomm,t,qlen,param,ns_per_op,visits_per_op,"
               "fixed_B,dyn_B,items_B,peak_dyn_B,matched,ops,reps\n");
    return f;
}

typedef struct row {
    const char *section, *workload, *engine;
    uint32_t S, ncomm, t;
    uint64_t qlen;
    const char *param;
    double ns, visits;
    bm_mem_t mem;
    uint64_t matched, ops;
    int reps;
} row_t;

static void emit(FILE *f, const row_t *r)
{
    fprintf(f, "%s,%s,%s,%u,%u,%u,%llu,%s,%.2f,%.3f,%zu,%zu,%zu,%zu,%llu,%llu,%d\n", r->section,
            r->workload, r->engine, r->S, r->ncomm, r->t, (unsigned long long) r->qlen,
            r->param ? r->param : "", r->ns, r->visits, r->mem.fixed, r->mem.dyn, r->mem.items,
            r->mem.peak_dyn, (unsigned long long) r->matched, (unsigned long long) r->ops, r->reps);
    fflush(f);
    if (r->ns > 0)
        printf("  %-10s %-16s %-18s S=%-8u k=%-3u t=%-3u %-10s %12.1f ns/op %12.1f visits/op\n",
               r->section, r->workload, r->engine, r->S, r->ncomm, r->t, r->param ? r->param : "",
               r->ns, r->visits);
    fflush(stdout);
}

static int reps_for(double est_ns)
{
    int reps = est_ns > 0 ? (int) (G.target_ns / est_ns) : G.max_reps;
    if (reps < G.min_reps)
        reps = G.min_reps;
    if (reps > G.max_reps)
        reps = G.max_reps;
    return reps;
}

/*
 * Chunked timing, robust to preemption on a shared machine: the timed ops
 * are cut into chunks of about 20 us, each chunk is timed, and the result
 * of a point is the sum over chunks of the median (across repetitions) of
 * that chunk's time. A chunk preempted in one repetition does not move the
 * median; the cost distribution along the op sequence is kept.
 */
typedef struct chunked {
    size_t C, nchunks;
    int reps, cap;
    double *t; /* [rep][chunk] */
} chunked_t;

static void chunked_init(chunked_t *c, size_t n, double est_ns_per_op, int max_reps)
{
    double per = est_ns_per_op > 0 ? est_ns_per_op : 1;
    size_t C = (size_t) (20000.0 / per);
    c->C = C < 1 ? 1 : C > n ? n : C;
    c->nchunks = (n + c->C - 1) / c->C;
    c->reps = 0;
    c->cap = max_reps;
    c->t = malloc((size_t) max_reps * c->nchunks * sizeof(double));
}

static size_t chunked_run(chunked_t *c, bm_inst_t *in, const bm_op_t *v, size_t n)
{
    double *row = c->t + (size_t) c->reps * c->nchunks;
    size_t matched = 0;
    for (size_t k = 0; k < c->nchunks; k++) {
        size_t lo = k * c->C, len = lo + c->C <= n ? c->C : n - lo;
        uint64_t t0 = bm_now_ns();
        matched += bm_run_ops(in, v + lo, len, NULL);
        row[k] = (double) (bm_now_ns() - t0);
    }
    c->reps++;
    return matched;
}

/* ns per op: sum over chunks of the per-chunk median */
static double chunked_result(chunked_t *c, size_t n)
{
    double total = 0, *col = malloc((size_t) c->reps * sizeof(double));
    for (size_t k = 0; k < c->nchunks; k++) {
        for (int r = 0; r < c->reps; r++)
            col[r] = c->t[(size_t) r * c->nchunks + k];
        total += bm_median(col, (size_t) c->reps);
    }
    free(col);
    free(c->t);
    return total / (double) n;
}

/* ------------------------------------------------------------------ */
/* sampled measurement on a standing queue                             */

typedef struct key {
    uint32_t ctx;
    int32_t rank, tag;
} key_t_;

enum { ORD_FWD, ORD_REV, ORD_RANDOM };
static const char *ord_name[] = {"fwd", "rev", "random"};

/*
 * Build a queue of keys (posted receives if umq == false, else unexpected
 * messages), then repeatedly match K of them (top K, bottom K in reverse, or
 * K random ones) with the opposite operation - timed - and re-insert them
 * (untimed). Reverse keeps the queue identical; forward/random rotate it.
 */
static void sampled(FILE *f, const char *section, const char *workload, const bm_spec_t *sp,
                    uint32_t S, uint32_t ncomm, uint32_t t, const key_t_ *keys, size_t N,
                    bool umq, int order, const char *param)
{
    bm_inst_t in;
    if (!bm_inst_create(&in, sp, S, ncomm))
        return;
    const bm_engine_ops_t *E = in.ops;
    key_t_ *cur = malloc(N * sizeof(*cur)), *tmp = malloc(N * sizeof(*tmp));
    memcpy(cur, keys, N * sizeof(*cur));
    bm_id_t id = 1;
    for (size_t i = 0; i < N; i++) {
        if (umq)
            E->arrive(in.e, cur[i].ctx, cur[i].rank, cur[i].tag, id++, NULL);
        else
            E->post(in.e, cur[i].ctx, cur[i].rank, cur[i].tag, id++, NULL);
    }
    row_t r = {.section = section, .workload = workload, .engine = sp->label, .S = S,
               .ncomm = ncomm, .t = t, .qlen = N, .param = param};
    E->mem(in.e, &r.mem);

    size_t K = (size_t) (4u << 20) / N; /* about 4M list visits per batch at most */
    if (K < 8)
        K = 8;
    if (K > 256)
        K = 256;
    if (K > N)
        K = N;
    if (order == ORD_FWD && t > 1 && K >= t)
        K -= K % t;
    bm_op_t *timed = malloc(K * sizeof(*timed)), *restore = malloc(K * sizeof(*restore));
    size_t *pick = malloc(K * sizeof(*pick));
    uint64_t rng = 0x9e3779b97f4a7c15ull ^ S ^ ((uint64_t) N << 20);
    chunked_t ch = {0};
    int reps = 3, done = 0;
    uint64_t v_sum = 0, matched = 0, ops = 0;
    for (int rep = 0; rep < reps + 1; rep++) {
        /* choose the K keys */
        if (order == ORD_FWD)
            for (size_t i = 0; i < K; i++)
                pick[i] = i;
        else if (order == ORD_REV)
            for (size_t i = 0; i < K; i++)
                pick[i] = N - 1 - i;
        else {
            for (size_t i = 0; i < K; i++) {
            again:
                pick[i] = bm_rng(&rng) % N;
                for (size_t j = 0; j < i; j++)
                    if (pick[j] == pick[i])
                        goto again;
            }
        }
        for (size_t i = 0; i < K; i++) {
            key_t_ k = cur[pick[i]];
            timed[i] = (bm_op_t){.kind = umq ? BM_OP_POST : BM_OP_ARRIVE, .ctx = k.ctx,
                                 .rank = k.rank, .tag = k.tag, .id = id++};
        }
        uint64_t v0 = E->visits(in.e);
        uint64_t t0 = bm_now_ns(), t1;
        size_t m;
        if (rep == 0) {
            m = bm_run_ops(&in, timed, K, NULL);
            t1 = bm_now_ns();
        } else {
            m = chunked_run(&ch, &in, timed, K);
            t1 = t0;
        }
        uint64_t v1 = E->visits(in.e);
        if (m != K)
            G.mismatches++;
        /* restore: re-insert the matched keys at the tail, in queue order */
        size_t nr = 0;
        if (order == ORD_REV) {
            for (size_t i = K; i-- > 0;)
                restore[nr++] = (bm_op_t){.kind = umq ? BM_OP_ARRIVE : BM_OP_POST,
                                          .ctx = timed[i].ctx, .rank = timed[i].rank,
                                          .tag = timed[i].tag, .id = id++};
        } else {
            for (size_t i = 0; i < K; i++)
                restore[nr++] = (bm_op_t){.kind = umq ? BM_OP_ARRIVE : BM_OP_POST,
                                          .ctx = timed[i].ctx, .rank = timed[i].rank,
                                          .tag = timed[i].tag, .id = id++};
            /* new order: the others in order, then the picked ones */
            char *mark = calloc(N, 1);
            for (size_t i = 0; i < K; i++)
                mark[pick[i]] = 1;
            size_t w = 0;
            for (size_t i = 0; i < N; i++)
                if (!mark[i])
                    tmp[w++] = cur[i];
            for (size_t i = 0; i < K; i++)
                tmp[w++] = cur[pick[i]];
            free(mark);
            key_t_ *sw = cur;
            cur = tmp;
            tmp = sw;
        }
        bm_run_ops(&in, restore, nr, NULL);
        if (rep == 0) { /* warm-up and estimate */
            reps = reps_for((double) (t1 - t0));
            chunked_init(&ch, K, (double) (t1 - t0) / (double) K, reps);
            continue;
        }
        v_sum += v1 - v0;
        matched += m;
        ops += K;
        done++;
    }
    r.ns = chunked_result(&ch, K);
    r.visits = (double) v_sum / (double) ops;
    r.matched = matched;
    r.ops = ops;
    r.reps = done;
    emit(f, &r);
    free(pick);
    free(timed);
    free(restore);
    free(cur);
    free(tmp);
    bm_inst_destroy(&in);
}

/* ------------------------------------------------------------------ */
/* whole-trace measurement: fresh engine per repetition                */

/* setup ops run untimed, trace ops timed; memory is read at the end of
 * setup (qlen > 0) and the peak over the trace is reported */
static void traced(FILE *f, const char *section, const char *workload, const bm_spec_t *sp,
                   uint32_t S, uint32_t ncomm, uint32_t t, const bm_ops_t *setup,
                   const bm_ops_t *trace, const char *param, int max_reps)
{
    chunked_t ch = {0};
    row_t r = {.section = section, .workload = workload, .engine = sp->label, .S = S,
               .ncomm = ncomm, .t = t, .qlen = setup ? setup->n : 0, .param = param};
    int reps = 2, n = 0;
    uint64_t vsum = 0, matched = 0, ops = 0;
    for (int rep = 0; rep < reps + 1; rep++) {
        bm_inst_t in;
        if (!bm_inst_create(&in, sp, S, ncomm))
            return;
        if (setup)
            bm_run_ops(&in, setup->v, setup->n, NULL);
        uint64_t v0 = in.ops->visits(in.e);
        uint64_t t0 = bm_now_ns(), t1 = t0;
        size_t m;
        if (rep == 0) {
            m = bm_run_ops(&in, trace->v, trace->n, NULL);
            t1 = bm_now_ns();
        } else {
            m = chunked_run(&ch, &in, trace->v, trace->n);
        }
        uint64_t v1 = in.ops->visits(in.e);
        bm_mem_t mem;
        in.ops->mem(in.e, &mem);
        bm_inst_destroy(&in);
        if (rep == 0) {
            reps = reps_for((double) (t1 - t0));
            if (reps > max_reps)
                reps = max_reps;
            r.mem = mem;
            chunked_init(&ch, trace->n, (double) (t1 - t0) / (double) trace->n, reps);
            continue;
        }
        n++;
        vsum += v1 - v0;
        matched += m;
        ops += trace->n;
    }
    r.ns = chunked_result(&ch, trace->n);
    r.visits = (double) vsum / (double) ops;
    r.matched = matched / (uint64_t) n;
    r.ops = trace->n;
    r.reps = n;
    emit(f, &r);
}

/* ------------------------------------------------------------------ */
/* sections                                                             */

/* Table 4.2 / 4.3: one item per sender rank 1..S-1 in each of k contexts,
 * search for the last item of the last context */
static void sec_visits(void)
{
    FILE *f = open_csv("visits");
    static const uint32_t sizes[] = {256, 1024, 4096, 16384, 65536, 262144, 1048576};
    static const uint32_t ks[] = {1, 10};
    const bm_spec_t *specs[] = {&S_4D, &S_4D_NEW, &S_LIST, &S_ARRAY, &S_HASH, &S_X, NULL};
    for (size_t ki = 0; ki < 2; ki++)
        for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++) {
            uint32_t S = sizes[si], k = ks[ki];
            if (G.quick && S > 65536)
                continue;
            if (k > 1 && S > 65536 && !(S == 1048576))
                continue;
            for (int i = 0; specs[i]; i++) {
                bm_inst_t in;
                if (!bm_inst_create(&in, specs[i], S, k))
                    continue;
                bm_id_t id = 1;
                for (uint32_t c = 0; c < k; c++)
                    for (uint32_t r = 1; r < S; r++)
                        in.ops->post(in.e, c, (int32_t) r, 0, id++, NULL);
                row_t row = {.section = "visits", .workload = "last-item", .engine = specs[i]->label,
                             .S = S, .ncomm = k, .t = 1, .qlen = (uint64_t) k * (S - 1)};
                in.ops->mem(in.e, &row.mem);
                uint64_t v0 = in.ops->visits(in.e);
                uint64_t t0 = bm_now_ns();
                bm_id_t m = in.ops->arrive(in.e, k - 1, (int32_t) S - 1, 0, id++, NULL);
                uint64_t t1 = bm_now_ns();
                row.visits = (double) (in.ops->visits(in.e) - v0);
                row.ns = (double) (t1 - t0);
                row.matched = m != 0;
                row.ops = 1;
                row.reps = 1;
                emit(f, &row);
                bm_inst_destroy(&in);
            }
        }
    fclose(f);
}

/* Table 4.5 and the memory-vs-size curves */
static void mem_point(FILE *f, const char *wl, const bm_spec_t *sp, uint32_t S, uint32_t n,
                      uint32_t stride)
{
    bm_inst_t in;
    if (!bm_inst_create(&in, sp, S, 1))
        return;
    bm_id_t id = 1;
    for (uint64_t i = 0; i < n; i++)
        in.ops->post(in.e, 0, (int32_t) ((i * stride) % S), 0, id++, NULL);
    row_t row = {.section = "memory", .workload = wl, .engine = sp->label, .S = S, .ncomm = 1,
                 .t = 1, .qlen = n};
    char param[32];
    snprintf(param, sizeof param, "stride%u", stride);
    row.param = param;
    in.ops->mem(in.e, &row.mem);
    emit(f, &row);
    bm_inst_destroy(&in);
}

static void sec_memory(void)
{
    FILE *f = open_csv("memory");
    const bm_spec_t *specs[] = {&S_4D,     &S_4D_NEW, &S_4D_ALL, &S_4D_HIT, &S_4D_C3,  &S_4D_SPLIT,
                                &S_LIST,   &S_ARRAY,  &S_HASH,   &S_X_BEST, &S_X_C3C1, NULL};
    static const uint32_t tsizes[] = {4096, 65536, 1048576};
    for (size_t si = 0; si < 3; si++) {
        uint32_t S = tsizes[si];
        uint32_t ns[] = {1, 100, 1000, S};
        for (int i = 0; specs[i]; i++)
            for (int j = 0; j < 4; j++)
                mem_point(f, "table4.5", specs[i], S, ns[j], 1);
        /* sparse worst case: ds^3 ranks at stride ds */
        uint32_t ds = bm_ds(S);
        for (int i = 0; specs[i]; i++)
            mem_point(f, "sparse", specs[i], S, ds * ds * ds, ds);
    }
    for (uint32_t S = 256; S <= (1u << 20); S *= 2)
        for (int i = 0; specs[i]; i++) {
            mem_point(f, "full", specs[i], S, S, 1);
            if (S == (1u << 20))
                mem_point(f, "full", specs[i], S + 1, S + 1, 1);
        }
    fclose(f);
}

/* keys of a full queue: senders 1..S-1, t tags each, sender-major */
static key_t_ *full_keys(uint32_t S, uint32_t ncomm, uint32_t t, size_t *N)
{
    *N = (size_t) ncomm * (S - 1) * t;
    key_t_ *k = malloc(*N * sizeof(*k));
    size_t n = 0;
    for (uint32_t c = 0; c < ncomm; c++)
        for (uint32_t r = 1; r < S; r++)
            for (uint32_t j = 0; j < t; j++)
                k[n++] = (key_t_){c, (int32_t) r, (int32_t) j};
    return k;
}

static void sec_search(void)
{
    FILE *f = open_csv("search");
    static const uint32_t sizes[] = {256, 1024, 4096, 16384, 65536, 262144, 1048576};
    static const uint32_t ts[] = {1, 10};
    for (size_t ti = 0; ti < 2; ti++)
        for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++) {
            uint32_t S = sizes[si], t = ts[ti];
            if (t > 1 && S > 65536)
                continue;
            if (G.quick && (S > 65536 || (t > 1 && S > 4096)))
                continue;
            size_t N;
            key_t_ *keys = full_keys(S, 1, t, &N);
            for (int side = 0; side < 2; side++)
                for (int ord = 0; ord < 3; ord++) {
                    if (G.quick && ord == ORD_RANDOM)
                        continue;
                    char wl[32];
                    snprintf(wl, sizeof wl, "%s-%s", ord_name[ord], side ? "umq" : "prq");
                    for (int i = 0; CORE[i]; i++)
                        sampled(f, "search", wl, CORE[i], S, 1, t, keys, N, side, ord, NULL);
                }
            free(keys);
        }
    fclose(f);
}

/* the paper's microbenchmark: build the whole queue, drain it (rev or fwd) */
static void sec_published(void)
{
    FILE *f = open_csv("published");
    static const uint32_t sizes[] = {64, 128, 256, 512, 704};
    static const uint32_t ts[] = {1, 5, 10};
    for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++)
        for (size_t ti = 0; ti < 3; ti++) {
            uint32_t S = sizes[si], t = ts[ti];
            if (G.quick && S != 704 && S != 256)
                continue;
            for (int side = 0; side < 2; side++)
                for (int ord = 0; ord < 2; ord++) {
                    bm_ops_t setup = {0}, trace = {0};
                    for (uint32_t r = 1; r < S; r++)
                        for (uint32_t j = 0; j < t; j++)
                            bm_ops_push(&setup, side ? BM_OP_ARRIVE : BM_OP_POST, 0, (int32_t) r,
                                        (int32_t) j);
                    for (size_t i = 0; i < setup.n; i++) {
                        bm_op_t o = setup.v[ord == ORD_REV ? setup.n - 1 - i : i];
                        bm_ops_push(&trace, side ? BM_OP_POST : BM_OP_ARRIVE, 0, o.rank, o.tag);
                    }
                    char wl[32];
                    snprintf(wl, sizeof wl, "drain-%s-%s", ord_name[ord], side ? "umq" : "prq");
                    const bm_spec_t *specs[] = {&S_4D, &S_4D_NEW, &S_LIST, &S_ARRAY, &S_HASH, &S_X, NULL};
                    for (int i = 0; specs[i]; i++)
                        traced(f, "published", wl, specs[i], S, 1, t, &setup, &trace, NULL,
                               G.max_reps);
                    bm_ops_free(&setup);
                    bm_ops_free(&trace);
                }
        }
    fclose(f);
}

static void sec_multicomm(void)
{
    FILE *f = open_csv("multicomm");
    static const uint32_t sizes[] = {64, 256, 1024, 4096};
    static const uint32_t ks[] = {1, 10, 50};
    const uint32_t t = 5;
    for (size_t ki = 0; ki < 3; ki++)
        for (size_t si = 0; si < 4; si++) {
            uint32_t S = sizes[si], k = ks[ki];
            if (G.quick && S > 1024)
                continue;
            size_t N;
            key_t_ *keys = full_keys(S, k, t, &N);
            for (int ord = 0; ord < 2; ord++)
                for (int i = 0; CORE[i]; i++)
                    sampled(f, "multicomm", ord == ORD_REV ? "rev-prq" : "fwd-prq", CORE[i], S, k,
                            t, keys, N, false, ord, NULL);
            free(keys);
        }
    fclose(f);
}

/* fraction of ANY_SOURCE receives; whole queue drained in reverse */
static void sec_anysrc(void)
{
    FILE *f = open_csv("anysrc");
    static const uint32_t sizes[] = {1024, 4096};
    static const int fracs[] = {0, 10, 25, 50, 75, 90, 100};
    const uint32_t t = 5;
    const bm_spec_t *specs[] = {&S_4D,    &S_4D_FIRST,    &S_4D_NEW, &S_LIST,
                                &S_ARRAY, &S_ARRAY_FIRST, &S_HASH,   NULL};
    for (size_t si = 0; si < 2; si++)
        for (size_t fi = 0; fi < sizeof fracs / sizeof *fracs; fi++)
            for (int side = 0; side < 2; side++) {
                uint32_t S = sizes[si];
                if (G.quick && S > 1024)
                    continue;
                uint64_t rng = 12345 + S * 7 + (uint64_t) fracs[fi];
                bm_ops_t setup = {0}, trace = {0};
                /* keys sender-major; the posted side converts a fraction to ANY_SOURCE */
                for (uint32_t r = 1; r < S; r++)
                    for (uint32_t j = 0; j < t; j++) {
                        bool any = (int) (bm_rng(&rng) % 100) < fracs[fi];
                        int32_t rank = (int32_t) r;
                        if (side == 0)
                            bm_ops_push(&setup, BM_OP_POST, 0, any ? BM_ANY_SOURCE : rank,
                                        (int32_t) j);
                        else
                            bm_ops_push(&setup, BM_OP_ARRIVE, 0, rank, (int32_t) j);
                        setup.v[setup.n - 1].id |= any ? (1ull << 62) : 0; /* remember */
                    }
                for (size_t i = setup.n; i-- > 0;) {
                    bm_op_t o = setup.v[i];
                    int32_t rank = (int32_t) (1 + i / t);
                    if (side == 0)
                        bm_ops_push(&trace, BM_OP_ARRIVE, 0, rank, o.tag);
                    else
                        bm_ops_push(&trace, BM_OP_POST, 0,
                                    (o.id >> 62) ? BM_ANY_SOURCE : rank, o.tag);
                }
                for (size_t i = 0; i < setup.n; i++)
                    setup.v[i].id &= ~(1ull << 62);
                char param[16];
                snprintf(param, sizeof param, "any%d", fracs[fi]);
                for (int i = 0; specs[i]; i++)
                    traced(f, "anysrc", side ? "rev-umq" : "rev-prq", specs[i], S, 1, t, &setup,
                           &trace, param, G.quick ? 3 : 5);
                bm_ops_free(&setup);
                bm_ops_free(&trace);
            }
    fclose(f);
}

static void shuffle(int32_t *v, size_t n, uint64_t *rng)
{
    for (size_t i = n; i > 1; i--) {
        size_t j = bm_rng(rng) % i;
        int32_t x = v[i - 1];
        v[i - 1] = v[j];
        v[j] = x;
    }
}

/* halo: receiver in the middle of a px*py*pz grid, 26 neighbours, each
 * iteration posts 26 receives and gets 26 messages, about half of them
 * before the receives are posted (unexpected) */
static void trace_halo(uint32_t S, int iters, bm_ops_t *tr)
{
    uint32_t p = 1;
    while ((uint64_t) (p + 1) * (p + 1) * (p + 1) <= S)
        p++;
    uint32_t px = p, py = p, pz = S / (p * p); /* pz >= p; ranks beyond px*py*pz idle */
    uint32_t cx = px / 2, cy = py / 2, cz = pz / 2;
    int32_t nb[26];
    int n = 0;
    for (int dz = -1; dz <= 1; dz++)
        for (int dy = -1; dy <= 1; dy++)
            for (int dx = -1; dx <= 1; dx++)
                if (dx || dy || dz)
                    nb[n++] = (int32_t) (((cz + dz) * py + (cy + dy)) * px + (cx + dx));
    uint64_t rng = 777 + S;
    for (int it = 0; it < iters; it++) {
        int32_t arr[26];
        memcpy(arr, nb, sizeof arr);
        shuffle(arr, 26, &rng);
        int early = 13;
        for (int i = 0; i < early; i++)
            bm_ops_push(tr, BM_OP_ARRIVE, 0, arr[i], it & 0xffff);
        for (int i = 0; i < 26; i++)
            bm_ops_push(tr, BM_OP_POST, 0, nb[i], it & 0xffff);
        for (int i = early; i < 26; i++)
            bm_ops_push(tr, BM_OP_ARRIVE, 0, arr[i], it & 0xffff);
    }
}

/* radix all-to-all burst at the hot receiver: every sender's message
 * arrives in random order while the receiver posts its receives in rank
 * order, lagging behind (UMQ up to ~S/2 deep, deep searches) */
static void trace_radix(uint32_t S, int iters, bm_ops_t *tr)
{
    uint64_t rng = 4242 + S;
    int32_t *arr = malloc(S * sizeof(*arr));
    for (int it = 0; it < iters; it++) {
        for (uint32_t i = 0; i < S - 1; i++)
            arr[i] = (int32_t) i + 1;
        shuffle(arr, S - 1, &rng);
        uint32_t a = 0, p = 1;
        for (; a < (S - 1) / 2; a++)
            bm_ops_push(tr, BM_OP_ARRIVE, 0, arr[a], it);
        while (a < S - 1 || p < S) {
            if (a < S - 1)
                bm_ops_push(tr, BM_OP_ARRIVE, 0, arr[a++], it);
            if (p < S)
                bm_ops_push(tr, BM_OP_POST, 0, (int32_t) p++, it);
        }
    }
    free(arr);
}

/* N-body: receives from all S-1 peers posted up front (PRQ depth S-1),
 * messages arrive nearly in posting order (random displacement <= 8) */
static void trace_nbody(uint32_t S, int iters, bm_ops_t *tr)
{
    uint64_t rng = 99 + S;
    int32_t *arr = malloc(S * sizeof(*arr));
    for (int it = 0; it < iters; it++) {
        for (uint32_t r = 1; r < S; r++)
            bm_ops_push(tr, BM_OP_POST, 0, (int32_t) r, it);
        for (uint32_t i = 0; i < S - 1; i++)
            arr[i] = (int32_t) i + 1;
        for (uint32_t i = 0; i + 1 < S - 1; i++) {
            uint32_t w = (uint32_t) (bm_rng(&rng) % 8);
            uint32_t j = i + w < S - 1 ? i + w : S - 2;
            int32_t x = arr[i];
            arr[i] = arr[j];
            arr[j] = x;
        }
        for (uint32_t i = 0; i < S - 1; i++)
            bm_ops_push(tr, BM_OP_ARRIVE, 0, arr[i], it);
    }
    free(arr);
}

static void sec_apps(void)
{
    FILE *f = open_csv("apps");
    static const uint32_t sizes[] = {256, 1024, 4096, 16384, 65536, 262144, 1048576};
    const bm_spec_t *specs[] = {&S_4D, &S_4D_NEW, &S_LIST, &S_ARRAY, &S_HASH, NULL};
    for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++) {
        uint32_t S = sizes[si];
        for (int app = 0; app < 3; app++) {
            if (G.quick && S > 16384)
                continue;
            if (app == 1 && S > (G.quick ? 4096u : 16384u))
                continue; /* radix on the linked list is quadratic */
            if (app == 2 && S > 65536)
                continue;
            bm_ops_t tr = {0};
            const char *wl = app == 0 ? "halo" : app == 1 ? "radix" : "nbody";
            if (app == 0)
                trace_halo(S, 200, &tr);
            else if (app == 1)
                trace_radix(S, 2, &tr);
            else
                trace_nbody(S, 2, &tr);
            for (int i = 0; specs[i]; i++)
                traced(f, "apps", wl, specs[i], S, 1, 1, NULL, &tr, NULL, 7);
            bm_ops_free(&tr);
        }
    }
    fclose(f);
}

/* small communicators: 4D vs linear mode of the mdq engine; random-order
 * matching (average depth half the queue, the thesis' tuning setting) and
 * forward matching (shallow) */
static void sec_tuning(void)
{
    FILE *f = open_csv("tuning");
    static const uint32_t sizes[] = {8,  12, 16, 20, 24, 26,  28,  32,  36,  40,  44,  48,  56,
                                     64, 80, 98, 128, 160, 194, 256, 257, 320, 512, 1024};
    const bm_spec_t *specs[] = {&S_4D_LIN, &S_4D_4D, &S_4D_NEW_4D, NULL};
    for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++) {
        uint32_t S = sizes[si];
        size_t N;
        key_t_ *keys = full_keys(S, 1, 1, &N);
        for (int ord = 0; ord < 3; ord++)
            for (int side = 0; side < 2; side++) {
                char wl[32];
                snprintf(wl, sizeof wl, "%s-%s", ord_name[ord], side ? "umq" : "prq");
                for (int i = 0; specs[i]; i++)
                    sampled(f, "tuning", wl, specs[i], S, 1, 1, keys, N, side, ord, NULL);
            }
        free(keys);
    }
    fclose(f);
}

static void sec_improve(void)
{
    FILE *f = open_csv("improve");
    const bm_spec_t *specs[] = {&S_4D,     &S_4D_ALL,   &S_4D_HIT, &S_4D_C3,   &S_4D_SPLIT,
                                &S_4D_NEW, &S_4D_EVERY, &S_X,      &S_X_C3C1,  &S_X_LAZY,
                                &S_X_BEST, &S_ARRAY,    &S_HASH,   NULL};
    static const uint32_t sizes[] = {4096, 65536, 1048576};
    for (size_t si = 0; si < 3; si++)
        for (uint32_t t = 1; t <= 10; t += 9) {
            uint32_t S = sizes[si];
            if ((t > 1 && S > 65536) || (G.quick && S > 65536))
                continue;
            size_t N;
            key_t_ *keys = full_keys(S, 1, t, &N);
            for (int ord = 0; ord < 3; ord++) {
                char wl[32];
                snprintf(wl, sizeof wl, "%s-prq", ord_name[ord]);
                for (int i = 0; specs[i]; i++)
                    sampled(f, "improve", wl, specs[i], S, 1, t, keys, N, false, ord, NULL);
            }
            free(keys);
        }
    /* wildcard-heavy: half of the receives ANY_SOURCE against a full UMQ */
    for (uint32_t S = 1024; S <= (G.quick ? 1024u : 4096u); S *= 4) {
        const uint32_t t = 5;
        uint64_t rng = 31337 + S;
        bm_ops_t setup = {0}, trace = {0};
        for (uint32_t r = 1; r < S; r++)
            for (uint32_t j = 0; j < t; j++)
                bm_ops_push(&setup, BM_OP_ARRIVE, 0, (int32_t) r, (int32_t) j);
        for (size_t i = setup.n; i-- > 0;) {
            bool any = bm_rng(&rng) % 2;
            bm_ops_push(&trace, BM_OP_POST, 0, any ? BM_ANY_SOURCE : setup.v[i].rank,
                        setup.v[i].tag);
        }
        for (int i = 0; specs[i]; i++)
            traced(f, "improve", "rev-umq-any50", specs[i], S, 1, t, &setup, &trace, "any50", 5);
        bm_ops_free(&setup);
        bm_ops_free(&trace);
    }
    /* application traces */
    for (uint32_t S = 4096; S <= 65536; S *= 16) {
        bm_ops_t tr = {0};
        trace_halo(S, 200, &tr);
        for (int i = 0; specs[i]; i++)
            traced(f, "improve", "halo", specs[i], S, 1, 1, NULL, &tr, NULL, 7);
        bm_ops_free(&tr);
        if (S > 4096)
            continue;
        memset(&tr, 0, sizeof tr);
        trace_radix(S, 2, &tr);
        for (int i = 0; specs[i]; i++)
            traced(f, "improve", "radix", specs[i], S, 1, 1, NULL, &tr, NULL, 7);
        bm_ops_free(&tr);
    }
    fclose(f);
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick"))
            G.quick = true;
        else if (!strcmp(argv[i], "--out") && i + 1 < argc)
            G.out = argv[++i];
        else if (!strcmp(argv[i], "--only") && i + 1 < argc)
            G.only = argv[++i];
        else {
            fprintf(stderr, "usage: %s [--quick] [--out DIR] [--only SECTION,...]\n"
                            "sections: visits memory search published multicomm anysrc apps "
                            "tuning improve\n", argv[0]);
            return 2;
        }
    }
    if (G.quick) {
        G.target_ns = 8e6;
        G.min_reps = 5;
        G.max_reps = 15;
    }
    if (mkdir(G.out, 0755) && errno != EEXIST) {
        perror(G.out);
        return 2;
    }
    if (!bm_engine_by_name("4d"))
        fprintf(stderr, "match_bench: built without the mdq engine; 4d rows are missing\n");
    struct {
        const char *name;
        void (*fn)(void);
    } secs[] = {{"visits", sec_visits},       {"memory", sec_memory}, {"search", sec_search},
                {"published", sec_published}, {"multicomm", sec_multicomm},
                {"anysrc", sec_anysrc},       {"apps", sec_apps},     {"tuning", sec_tuning},
                {"improve", sec_improve}};
    for (size_t i = 0; i < sizeof secs / sizeof *secs; i++)
        if (want(secs[i].name)) {
            uint64_t t0 = bm_now_ns();
            printf("== %s\n", secs[i].name);
            secs[i].fn();
            printf("== %s done in %.1f s\n", secs[i].name, (double) (bm_now_ns() - t0) / 1e9);
        }
    if (G.mismatches)
        fprintf(stderr, "match_bench: %d timed batches did not match every item\n", G.mismatches);
    return 0;
}
