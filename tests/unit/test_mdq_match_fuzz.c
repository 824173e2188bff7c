/*
 * Differential fuzz of the 4D matching engine against the reference
 * linked-list matcher (design note section 7.1 item 17).
 *
 * Every run drives several queues (communicators) of sizes spanning linear
 * and 4D modes with random arrive / post (ANY_SOURCE, ANY_TAG) / iprobe /
 * improbe / cancel operations; sources come from per-queue rank sets drawn
 * uniform, strided (ds, ds^2, ds^3), clustered or hot-spot, tags from small
 * sets including negative (internal) tags. Under POLICY_OLDEST every result
 * must be the very item the reference returns; under POLICY_FIRST an
 * ANY_SOURCE search must return the oldest matching message of its sender.
 * Structural invariants are checked after every operation for the first
 * ops of a run and periodically after that; the final drain order must equal
 * the reference lists. Every optional structure combination
 * (MDQ_MATCH_FEAT_*, 16 of them) runs the same differential; the invariant
 * check covers the ALL_UMQ list, the c3 array and the last-hit cache.
 */
#include "mdq_match.h"
#include "mdq_match_internal.h" /* SPLIT tally only: the run must really split */
#include "ref_match.h"

#include <check.h>

#include "check_run.h"
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Check's ck_assert_* writes a checkpoint to its pipe on every call; the
 * per-operation checks use this instead (it costs nothing unless it fails) */
#define REQUIRE(cond)                                                                              \
    do {                                                                                           \
        if (!(cond))                                                                               \
            ck_abort_msg("%s:%d: requirement failed: %s", __FILE__, __LINE__, #cond);            \
    } while (0)

typedef struct fobj {
    mdq_match_item_t mi;
    ref_match_item_t ri;
    uint64_t id;
    int queue;    /* queue index while queued, -1 otherwise */
    int live_pos; /* position in that queue's live array */
} fobj_t;

#define FROM_MI(p) ((fobj_t *) ((char *) (p) - offsetof(fobj_t, mi)))
#define FROM_RI(p) ((fobj_t *) ((char *) (p) - offsetof(fobj_t, ri)))

enum { PAT_UNIFORM, PAT_STRIDED, PAT_CLUSTER, PAT_HOTSPOT, PAT_N };

typedef struct fqueue {
    mdq_match_queue_t *q;
    ref_match_queue_t ref;
    uint32_t size;
    int pattern;
    uint32_t nranks;
    int32_t *ranks;
    int ntags;
    int32_t tags[8];
    fobj_t **live;
    uint32_t nlive, cap;
    bool was4d;
} fqueue_t;

typedef struct fuzz {
    uint64_t rng;
    mdq_match_pool_t *pool;
    mdq_match_policy_t policy;
    unsigned features;
    fqueue_t *qs;
    int nq;
    fobj_t *objs;
    uint32_t nobjs;
    uint32_t *free_idx;
    uint32_t nfree;
    uint64_t next_id;
    uint64_t ops, matches, any_matches;
    uint32_t max_len; /* longest queue (PRQ + UMQ) seen */
    uint64_t max_splits; /* most split JumpPoints seen at once in one queue */
} fuzz_t;

static uint64_t rnd(fuzz_t *f)
{
    uint64_t x = f->rng;
    x ^= x >> 12, x ^= x << 25, x ^= x >> 27;
    f->rng = x;
    return x * 0x2545F4914F6CDD1Dull;
}

static uint32_t below(fuzz_t *f, uint32_t n)
{
    return (uint32_t) (((rnd(f) >> 32) * (uint64_t) n) >> 32);
}

static bool chance(fuzz_t *f, unsigned percent)
{
    return below(f, 100) < percent;
}

static void queue_setup(fuzz_t *f, fqueue_t *fq, uint32_t size, mdq_match_mode_t mode)
{
    memset(fq, 0, sizeof(*fq));
    fq->size = size;
    fq->q = mdq_match_queue_create_ex(f->pool, size, mode, 2.0, f->policy, f->features);
    REQUIRE(fq->q != NULL);
    fq->was4d = mdq_match_queue_is_4d(fq->q);
    ref_match_init(&fq->ref);
    fq->pattern = (int) below(f, PAT_N);
    uint32_t ds = 1u << mdq_match_bits_for_size(size);
    fq->nranks = 1 + below(f, size < 400 ? size : 400);
    fq->ranks = malloc(fq->nranks * sizeof(int32_t));
    uint64_t stride = ds;
    if (fq->pattern == PAT_STRIDED) {
        unsigned k = below(f, 3);
        stride = k == 0 ? ds : k == 1 ? (uint64_t) ds * ds : (uint64_t) ds * ds * ds;
        if (stride >= size)
            stride = ds < size ? ds : 1;
    }
    uint32_t base = below(f, size);
    for (uint32_t i = 0; i < fq->nranks; i++) {
        uint64_t r;
        switch (fq->pattern) {
        case PAT_STRIDED: r = (base + i * stride) % size; break;
        case PAT_CLUSTER: r = (base + i) % size; break;
        default: r = below(f, size); break;
        }
        fq->ranks[i] = (int32_t) r;
    }
    fq->ranks[0] = (int32_t) size - 1; /* the boundaries always take part */
    if (fq->nranks > 1)
        fq->ranks[1] = 0;
    static const int32_t tagpool[8] = {0, 1, 2, 3, 1000, -5, -7, INT32_MAX};
    fq->ntags = 1 + (int) below(f, 7);
    for (int i = 0; i < fq->ntags; i++)
        fq->tags[i] = tagpool[below(f, 8)];
    fq->cap = 1024;
    fq->live = malloc(fq->cap * sizeof(fobj_t *));
}

static int32_t pick_rank(fuzz_t *f, fqueue_t *fq)
{
    if (fq->pattern == PAT_HOTSPOT && chance(f, 70))
        return fq->ranks[below(f, fq->nranks < 3 ? fq->nranks : 3)];
    return fq->ranks[below(f, fq->nranks)];
}

static int32_t pick_tag(fuzz_t *f, fqueue_t *fq, bool msg)
{
    if (msg && chance(f, 1))
        return -1; /* a message that nothing can match */
    return fq->tags[below(f, (uint32_t) fq->ntags)];
}

static fobj_t *obj_new(fuzz_t *f, int32_t rank, int32_t tag)
{
    REQUIRE(f->nfree > 0);
    fobj_t *o = &f->objs[f->free_idx[--f->nfree]];
    memset(o, 0, sizeof(*o));
    o->id = ++f->next_id;
    o->mi.rank = o->ri.rank = rank;
    o->mi.tag = o->ri.tag = tag;
    o->queue = -1;
    return o;
}

static void obj_free(fuzz_t *f, fobj_t *o)
{
    f->free_idx[f->nfree++] = (uint32_t) (o - f->objs);
}

static void live_add(fqueue_t *fq, int qi, fobj_t *o)
{
    if (fq->nlive == fq->cap) {
        fq->cap *= 2;
        fq->live = realloc(fq->live, fq->cap * sizeof(fobj_t *));
    }
    o->queue = qi;
    o->live_pos = (int) fq->nlive;
    fq->live[fq->nlive++] = o;
}

static void live_del(fqueue_t *fq, fobj_t *o)
{
    fobj_t *last = fq->live[--fq->nlive];
    fq->live[o->live_pos] = last;
    last->live_pos = o->live_pos;
    o->queue = -1;
}

/* an item left the queues (matched): forget it */
static void retire(fuzz_t *f, fqueue_t *fq, fobj_t *o)
{
    REQUIRE(!mdq_match_is_queued(&o->mi));
    REQUIRE(o->ri.queued == 0);
    live_del(fq, o);
    obj_free(f, o);
}

#define FAIL_CTX(f, qi, what)                                                                    \
    ck_abort_msg("seed-op %llu queue %d (S=%u, %s): %s differs", (unsigned long long) (f)->ops, \
                 (qi), (f)->qs[qi].size, mdq_match_queue_is_4d((f)->qs[qi].q) ? "4D" : "linear", \
                 (what))

static void step(fuzz_t *f, bool check_all)
{
    int qi = (int) below(f, (uint32_t) f->nq);
    fqueue_t *fq = &f->qs[qi];
    mdq_match_cursor_t cur;
    unsigned op = below(f, 100);
    f->ops++;

    /* keep the reference's linear scans short */
    if (fq->nlive > 600)
        op = 95;

    if (op < 32) { /* a message arrives */
        fobj_t *m = obj_new(f, pick_rank(f, fq), pick_tag(f, fq, true));
        mdq_match_item_t *e = mdq_match_take_posted(fq->q, m->mi.rank, m->mi.tag, &cur);
        ref_match_item_t *r = ref_match_take_posted(&fq->ref, m->ri.rank, m->ri.tag);
        if ((e ? FROM_MI(e) : NULL) != (r ? FROM_RI(r) : NULL))
            FAIL_CTX(f, qi, "take_posted");
        if (e) {
            f->matches++;
            retire(f, fq, FROM_MI(e));
            obj_free(f, m);
        } else {
            mdq_match_append_unexpected(fq->q, &m->mi, chance(f, 90) ? &cur : NULL);
            ref_match_append_unexpected(&fq->ref, &m->ri);
            live_add(fq, qi, m);
        }
    } else if (op < 64) { /* a receive is posted */
        int32_t rank = chance(f, 12) ? MDQ_MATCH_ANY_SOURCE : pick_rank(f, fq);
        int32_t tag = chance(f, 15) ? MDQ_MATCH_ANY_TAG : pick_tag(f, fq, false);
        fobj_t *p = obj_new(f, rank, tag);
        mdq_match_item_t *e = mdq_match_find_unexpected(fq->q, rank, tag, true, &cur);
        ref_match_item_t *r;
        if (f->policy == MDQ_MATCH_POLICY_FIRST && rank == MDQ_MATCH_ANY_SOURCE && e) {
            /* weak oracle: the oldest matching message of its own sender */
            r = ref_match_find_unexpected(&fq->ref, e->rank, tag, false);
            if (r)
                ref_match_remove(&fq->ref, r);
        } else {
            r = ref_match_find_unexpected(&fq->ref, rank, tag, true);
        }
        if ((e ? FROM_MI(e) : NULL) != (r ? FROM_RI(r) : NULL))
            FAIL_CTX(f, qi, "find_unexpected(remove)");
        if (e) {
            f->matches++;
            f->any_matches += rank == MDQ_MATCH_ANY_SOURCE;
            retire(f, fq, FROM_MI(e));
            obj_free(f, p);
        } else {
            mdq_match_append_posted(fq->q, &p->mi, chance(f, 90) ? &cur : NULL);
            ref_match_append_posted(&fq->ref, &p->ri);
            live_add(fq, qi, p);
        }
    } else if (op < 84) { /* iprobe (no removal) or improbe (removal) */
        bool remove = op >= 76;
        int32_t rank = chance(f, 30) ? MDQ_MATCH_ANY_SOURCE : pick_rank(f, fq);
        int32_t tag = chance(f, 30) ? MDQ_MATCH_ANY_TAG : pick_tag(f, fq, false);
        mdq_match_item_t *e = mdq_match_find_unexpected(fq->q, rank, tag, remove, NULL);
        ref_match_item_t *r;
        if (f->policy == MDQ_MATCH_POLICY_FIRST && rank == MDQ_MATCH_ANY_SOURCE && e) {
            r = ref_match_find_unexpected(&fq->ref, e->rank, tag, false);
            if (r && remove)
                ref_match_remove(&fq->ref, r);
        } else {
            r = ref_match_find_unexpected(&fq->ref, rank, tag, remove);
        }
        if ((e ? FROM_MI(e) : NULL) != (r ? FROM_RI(r) : NULL))
            FAIL_CTX(f, qi, remove ? "improbe" : "iprobe");
        if (e && remove)
            retire(f, fq, FROM_MI(e));
        if (e && !remove)
            REQUIRE(mdq_match_is_queued(e));
    } else { /* cancel by identity: a queued item, or one that is not */
        if (fq->nlive == 0 || chance(f, 3)) {
            fobj_t *o = obj_new(f, 0, 0);
            REQUIRE(!mdq_match_remove(fq->q, &o->mi));
            REQUIRE(!ref_match_remove(&fq->ref, &o->ri));
            obj_free(f, o);
        } else {
            fobj_t *o = fq->live[below(f, fq->nlive)];
            bool a = mdq_match_remove(fq->q, &o->mi);
            bool b = ref_match_remove(&fq->ref, &o->ri);
            REQUIRE(a && b);
            retire(f, fq, o);
            REQUIRE(!mdq_match_remove(fq->q, &o->mi));
        }
    }

    if (fq->nlive > f->max_len)
        f->max_len = fq->nlive;
    if (fq->q->n_splits > f->max_splits)
        f->max_splits = fq->q->n_splits;
    const mdq_match_stats_t *st = mdq_match_queue_stats(fq->q);
    if (st->prq_length != fq->ref.prq_length || st->umq_length != fq->ref.umq_length)
        FAIL_CTX(f, qi, "queue length");
    if (check_all) {
        int rc = mdq_match_check_invariants(fq->q);
        if (rc)
            ck_abort_msg("op %llu queue %d: invariant %d violated", (unsigned long long) f->ops, qi, rc);
    }
}

typedef struct drained {
    fobj_t **v;
    uint32_t n;
    bool seen_unexpected;
} drained_t;

static void drain_cb(mdq_match_item_t *it, bool posted, void *arg)
{
    drained_t *d = arg;
    ck_assert(!(posted && d->seen_unexpected));
    d->seen_unexpected |= !posted;
    d->v[d->n++] = FROM_MI(it);
}

static void fuzz_finish(fuzz_t *f)
{
    for (int qi = 0; qi < f->nq; qi++) {
        fqueue_t *fq = &f->qs[qi];
        ck_assert_int_eq(mdq_match_check_invariants(fq->q), 0);
        drained_t d = {.v = malloc((fq->nlive + 1) * sizeof(fobj_t *))};
        mdq_match_drain(fq->q, drain_cb, &d);
        ck_assert_uint_eq(d.n, fq->nlive);
        uint32_t k = 0;
        if (f->policy == MDQ_MATCH_POLICY_OLDEST) {
            for (ref_match_item_t *r = fq->ref.prq_head; r; r = r->next)
                ck_assert_ptr_eq(d.v[k++], FROM_RI(r));
            for (ref_match_item_t *r = fq->ref.umq_head; r; r = r->next)
                ck_assert_ptr_eq(d.v[k++], FROM_RI(r));
            ck_assert_uint_eq(k, d.n);
        }
        ck_assert_int_eq(mdq_match_check_invariants(fq->q), 0);
        mdq_match_queue_destroy(fq->q);
        free(d.v);
        free(fq->ranks);
        free(fq->live);
    }
    ck_assert_uint_eq(mdq_match_pool_bytes_live(f->pool), 0);
    mdq_match_pool_destroy(f->pool);
    free(f->qs);
    free(f->objs);
    free(f->free_idx);
}

typedef struct qspec {
    uint32_t size;
    mdq_match_mode_t mode;
} qspec_t;

static void fuzz_run(uint64_t seed, mdq_match_policy_t policy, unsigned features,
                     const qspec_t *spec, int nspec, int n_small, uint64_t nops,
                     uint64_t check_every_until, size_t pool_limit)
{
    fuzz_t f;
    memset(&f, 0, sizeof(f));
    f.rng = seed * 0x9E3779B97F4A7C15ull + 1;
    f.policy = policy;
    f.features = features;
    f.pool = mdq_match_pool_create();
    f.nq = nspec + n_small;
    f.qs = calloc((size_t) f.nq, sizeof(fqueue_t));
    for (int i = 0; i < nspec; i++)
        queue_setup(&f, &f.qs[i], spec[i].size, spec[i].mode);
    for (int i = 0; i < n_small; i++) /* sizes 2..300, AUTO: linear below the threshold */
        queue_setup(&f, &f.qs[nspec + i], 2 + below(&f, 299), MDQ_MATCH_MODE_AUTO);
    if (pool_limit)
        mdq_match_pool_set_limit(f.pool, mdq_match_pool_bytes_live(f.pool) + pool_limit);
    f.nobjs = 700u * (uint32_t) f.nq + 16;
    f.objs = calloc(f.nobjs, sizeof(fobj_t));
    f.free_idx = malloc(f.nobjs * sizeof(uint32_t));
    for (uint32_t i = 0; i < f.nobjs; i++)
        f.free_idx[f.nfree++] = f.nobjs - 1 - i;
    for (uint64_t i = 0; i < nops; i++)
        step(&f, i < check_every_until || i % 61 == 0);
    /* the run must have exercised matching, wildcards included */
    ck_assert_uint_gt(f.matches, nops / 20);
    ck_assert_uint_gt(f.any_matches, 0);
    int n4d = 0, degraded = 0;
    for (int i = 0; i < f.nq; i++) {
        n4d += f.qs[i].was4d;
        degraded += f.qs[i].was4d && !mdq_match_queue_is_4d(f.qs[i].q);
    }
    if (pool_limit)
        ck_assert_int_gt(degraded, 0); /* the cap did bite */
    else
        ck_assert_int_eq(degraded, 0);
    fprintf(stderr,
            "seed %llu features %#x: %llu ops, %llu matches (%llu ANY_SOURCE receives), longest queue %u, %d "
            "queues (%d 4D, %d turned linear), up to %llu split JumpPoints\n",
            (unsigned long long) seed, features, (unsigned long long) f.ops, (unsigned long long) f.matches,
            (unsigned long long) f.any_matches, f.max_len, f.nq, n4d, degraded,
            (unsigned long long) f.max_splits);
    if ((features & MDQ_MATCH_FEAT_SPLIT) && !pool_limit)
        ck_assert_uint_gt(f.max_splits, 0); /* the split path was exercised */
    fuzz_finish(&f);
}

static const qspec_t big_mix[] = {
    {16, MDQ_MATCH_MODE_4D},  {5, MDQ_MATCH_MODE_4D},      {2, MDQ_MATCH_MODE_4D},
    {300, MDQ_MATCH_MODE_AUTO}, {4097, MDQ_MATCH_MODE_AUTO}, {70000, MDQ_MATCH_MODE_AUTO},
    {1u << 20, MDQ_MATCH_MODE_AUTO}, {4096, MDQ_MATCH_MODE_LINEAR},
};

/* 16 seeds x 300000 ops under POLICY_OLDEST: the exact differential; seed i
 * runs feature combination i, so all 16 combinations are covered */
START_TEST(test_fuzz_oldest)
{
    fuzz_run(1000 + (uint64_t) _i, MDQ_MATCH_POLICY_OLDEST, (unsigned) _i & MDQ_MATCH_FEAT_MASK,
             big_mix, 8, 4, 300000, 20000, 0);
}
END_TEST

/* few queues, hence long per-queue histories; invariants after every op */
START_TEST(test_fuzz_oldest_deep)
{
    static const qspec_t s[] = {{4097, MDQ_MATCH_MODE_AUTO}, {1u << 20, MDQ_MATCH_MODE_AUTO},
                                {20, MDQ_MATCH_MODE_4D}};
    static const unsigned feat[] = {MDQ_MATCH_FEAT_SEED, MDQ_MATCH_FEAT_DEFAULT,
                                    MDQ_MATCH_FEAT_ALL_UMQ, MDQ_MATCH_FEAT_MASK};
    fuzz_run(2000 + (uint64_t) _i, MDQ_MATCH_POLICY_OLDEST, feat[_i], s, 3, 0, 200000, 200000, 0);
}
END_TEST

/* POLICY_FIRST: each ANY_SOURCE result is the oldest match of its sender */
START_TEST(test_fuzz_first)
{
    static const unsigned feat[] = {MDQ_MATCH_FEAT_SEED, MDQ_MATCH_FEAT_DEFAULT,
                                    MDQ_MATCH_FEAT_LAST_HIT | MDQ_MATCH_FEAT_C3_ARRAY
                                        | MDQ_MATCH_FEAT_SPLIT,
                                    MDQ_MATCH_FEAT_ALL_UMQ};
    fuzz_run(3000 + (uint64_t) _i, MDQ_MATCH_POLICY_FIRST, feat[_i], big_mix, 8, 2, 150000, 10000,
             0);
}
END_TEST

/* a capped pool: queues fall back to linear mode mid-run, results unchanged */
START_TEST(test_fuzz_pool_cap)
{
    fuzz_run(4000 + (uint64_t) _i, MDQ_MATCH_POLICY_OLDEST,
             _i & 1 ? MDQ_MATCH_FEAT_MASK : MDQ_MATCH_FEAT_SEED, big_mix, 8, 2, 100000, 100000,
             (size_t) 3000 + 4000 * (size_t) (_i / 2));
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("mdq_match_fuzz");
    TCase *tc = tcase_create("differential");
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, test_fuzz_oldest, 0, 16);
    tcase_add_loop_test(tc, test_fuzz_oldest_deep, 0, 4);
    tcase_add_loop_test(tc, test_fuzz_first, 0, 4);
    tcase_add_loop_test(tc, test_fuzz_pool_cap, 0, 4);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return check_run(suite());
}
