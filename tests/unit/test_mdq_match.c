/*
 * Unit tests of the standalone 4D matching engine (design note section 7.1
 * items 1-10 and 12-15). Every queue operation done through the helpers is
 * followed by mdq_match_check_invariants().
 */
#include "mdq_match.h"
#include "mdq_match_internal.h" /* white-box corruption test only */

#include <check.h>

#include "check_run.h"
#include <math.h>
#include <stdio.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct obj {
    mdq_match_item_t it;
    int id;
} obj_t;

#define OBJ(p) ((obj_t *) ((char *) (p) - offsetof(obj_t, it)))


/* The visit and byte formulas below are those of the seed design (the
 * thesis' objects); the optional structures have their own tests further
 * down (test_feat_*). */
static unsigned g_feat = MDQ_MATCH_FEAT_SEED; /* the semantic tests also run with features */

static mdq_match_queue_t *qcreate(mdq_match_pool_t *p, uint32_t size, mdq_match_mode_t mode,
                                  double adj, mdq_match_policy_t pol)
{
    return mdq_match_queue_create_ex(p, size, mode, adj, pol, g_feat);
}

static void feat_default_setup(void)
{
    g_feat = MDQ_MATCH_FEAT_DEFAULT;
}

static void feat_all_only_setup(void)
{
    g_feat = MDQ_MATCH_FEAT_ALL_UMQ;
}

static void feat_every_setup(void)
{
    g_feat = MDQ_MATCH_FEAT_MASK;
}

static void feat_teardown(void)
{
    g_feat = MDQ_MATCH_FEAT_SEED;
}

static obj_t *mk(obj_t *o, int id, int32_t rank, int32_t tag)
{
    memset(o, 0, sizeof(*o));
    o->id = id;
    o->it.rank = rank;
    o->it.tag = tag;
    return o;
}

/* Check's ck_assert_* writes a checkpoint to its pipe on every call; checks
 * done per queue operation use REQUIRE (free unless it fails) */
#define REQUIRE(cond)                                                                              \
    do {                                                                                           \
        if (!(cond))                                                                               \
            ck_abort_msg("%s:%d: requirement failed: %s", __FILE__, __LINE__, #cond);            \
    } while (0)

#define CHECK_INV(q)                                                                               \
    do {                                                                                           \
        int rc_ = mdq_match_check_invariants(q);                                                   \
        if (rc_)                                                                                   \
            ck_abort_msg("%s:%d: invariant %d violated", __FILE__, __LINE__, rc_);                \
    } while (0)

/* operation 2: post a receive; returns the message it matched or NULL (queued) */
static obj_t *post(mdq_match_queue_t *q, obj_t *r)
{
    mdq_match_cursor_t cur;
    mdq_match_item_t *m = mdq_match_find_unexpected(q, r->it.rank, r->it.tag, true, &cur);
    if (!m)
        mdq_match_append_posted(q, &r->it, &cur);
    CHECK_INV(q);
    return m ? OBJ(m) : NULL;
}

/* operation 1: a message arrives; returns the receive it matched or NULL (queued) */
static obj_t *arrive(mdq_match_queue_t *q, obj_t *m)
{
    mdq_match_cursor_t cur;
    mdq_match_item_t *r = mdq_match_take_posted(q, m->it.rank, m->it.tag, &cur);
    if (!r)
        mdq_match_append_unexpected(q, &m->it, &cur);
    CHECK_INV(q);
    return r ? OBJ(r) : NULL;
}

static obj_t *probe(mdq_match_queue_t *q, int32_t rank, int32_t tag, bool remove)
{
    mdq_match_item_t *m = mdq_match_find_unexpected(q, rank, tag, remove, NULL);
    CHECK_INV(q);
    return m ? OBJ(m) : NULL;
}

/* the configurations every semantic test runs in */
static const struct {
    uint32_t size;
    mdq_match_mode_t mode;
    bool is4d;
} cfgs[] = {
    {16, MDQ_MATCH_MODE_LINEAR, false},   {16, MDQ_MATCH_MODE_4D, true},
    {4097, MDQ_MATCH_MODE_AUTO, true},    {70000, MDQ_MATCH_MODE_AUTO, true},
    {70000, MDQ_MATCH_MODE_LINEAR, false}, {1u << 20, MDQ_MATCH_MODE_AUTO, true},
};
#define NCFG ((int) (sizeof(cfgs) / sizeof(cfgs[0])))

static mdq_match_pool_t *pool;
static mdq_match_queue_t *q;

static void open_cfg(int i, mdq_match_policy_t pol)
{
    pool = mdq_match_pool_create();
    ck_assert_ptr_nonnull(pool);
    q = qcreate(pool, cfgs[i].size, cfgs[i].mode, 2.0, pol);
    ck_assert_ptr_nonnull(q);
    ck_assert(mdq_match_queue_is_4d(q) == cfgs[i].is4d);
    CHECK_INV(q);
}

static void close_cfg(void)
{
    CHECK_INV(q);
    mdq_match_queue_destroy(q);
    ck_assert_uint_eq(mdq_match_pool_bytes_live(pool), 0);
    mdq_match_pool_destroy(pool);
}

/* ------------------------------------------------------------ sizing */

START_TEST(test_ds_intervals)
{
    static const struct {
        uint32_t s, ds, thr;
    } t[] = {
        {1, 4, 26},        {2, 4, 26},         {16, 4, 26},        {17, 4, 26},
        {25, 4, 26},       {26, 4, 26},        {255, 4, 26},       {256, 4, 26},
        {257, 8, 50},      {4095, 8, 50},      {4096, 8, 50},      {4097, 16, 98},
        {65536, 16, 98},   {65537, 32, 194},   {1048576, 32, 194}, {1048577, 64, 386},
        {1u << 24, 64, 386}, {(1u << 24) + 1, 128, 770}, {UINT32_MAX, 256, 1538},
    };
    mdq_match_pool_t *p = mdq_match_pool_create();
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        unsigned b = mdq_match_bits_for_size(t[i].s);
        ck_assert_msg((1u << b) == t[i].ds, "S=%u: ds=%u expected %u", t[i].s, 1u << b, t[i].ds);
        ck_assert_uint_eq(mdq_match_threshold(t[i].s, 2.0), t[i].thr);
        ck_assert_uint_eq(mdq_match_threshold(t[i].s, 1.0), (t[i].thr) / 2);
        mdq_match_queue_t *qq = qcreate(p, t[i].s, MDQ_MATCH_MODE_AUTO, 2.0,
                                                       MDQ_MATCH_POLICY_OLDEST);
        ck_assert_ptr_nonnull(qq);
        ck_assert_uint_eq(mdq_match_queue_bits(qq), b);
        ck_assert(mdq_match_queue_is_4d(qq) == (t[i].s >= t[i].thr));
        mdq_match_queue_destroy(qq);
    }
    /* the mode switches exactly at S >= threshold */
    static const struct {
        double adj;
        uint32_t below, at;
    } sw[] = {{2.0, 25, 26}, {1.0, 12, 13}, {1.5, 19, 20}, {20.0, 499, 500}, {100.0, 4899, 4900}};
    for (size_t i = 0; i < sizeof(sw) / sizeof(sw[0]); i++) {
        ck_assert_uint_eq(mdq_match_threshold(sw[i].at, sw[i].adj), sw[i].at);
        mdq_match_queue_t *a = qcreate(p, sw[i].below, MDQ_MATCH_MODE_AUTO,
                                                      sw[i].adj, MDQ_MATCH_POLICY_OLDEST);
        mdq_match_queue_t *b = qcreate(p, sw[i].at, MDQ_MATCH_MODE_AUTO,
                                                      sw[i].adj, MDQ_MATCH_POLICY_OLDEST);
        ck_assert(!mdq_match_queue_is_4d(a));
        ck_assert(mdq_match_queue_is_4d(b));
        mdq_match_queue_destroy(a);
        mdq_match_queue_destroy(b);
    }
    /* forced modes */
    mdq_match_queue_t *f = qcreate(p, 2, MDQ_MATCH_MODE_4D, 2.0, MDQ_MATCH_POLICY_OLDEST);
    ck_assert(mdq_match_queue_is_4d(f));
    mdq_match_queue_destroy(f);
    f = qcreate(p, 1u << 20, MDQ_MATCH_MODE_LINEAR, 2.0, MDQ_MATCH_POLICY_OLDEST);
    ck_assert(!mdq_match_queue_is_4d(f));
    mdq_match_queue_destroy(f);
    /* bad arguments */
    ck_assert_ptr_null(qcreate(p, 100, MDQ_MATCH_MODE_AUTO, 0.99, MDQ_MATCH_POLICY_OLDEST));
    ck_assert_ptr_null(qcreate(p, 100, MDQ_MATCH_MODE_AUTO, NAN, MDQ_MATCH_POLICY_OLDEST));
    ck_assert_ptr_null(qcreate(p, 0, MDQ_MATCH_MODE_AUTO, 2.0, MDQ_MATCH_POLICY_OLDEST));
    ck_assert_ptr_null(qcreate(NULL, 10, MDQ_MATCH_MODE_AUTO, 2.0, MDQ_MATCH_POLICY_OLDEST));
    ck_assert_ptr_null(qcreate(p, 10, (mdq_match_mode_t) 7, 2.0, MDQ_MATCH_POLICY_OLDEST));
    ck_assert_ptr_null(qcreate(p, 10, MDQ_MATCH_MODE_AUTO, 2.0, (mdq_match_policy_t) 9));
    ck_assert_uint_eq(mdq_match_threshold(100, 0.5), 0);
    ck_assert_uint_eq(mdq_match_pool_bytes_live(p), 0);
    mdq_match_pool_destroy(p);
}
END_TEST

START_TEST(test_decompose)
{
    uint32_t c[4];
    mdq_match_decompose(80000, mdq_match_bits_for_size(1u << 20), c);
    ck_assert_uint_eq(c[0], 2);
    ck_assert_uint_eq(c[1], 14);
    ck_assert_uint_eq(c[2], 4);
    ck_assert_uint_eq(c[3], 0);
    /* exhaustive recomposition for every S <= 2^16 interval end */
    static const uint32_t sizes[] = {1, 2, 16, 17, 255, 256, 257, 4095, 4096, 4097, 65535, 65536};
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        uint32_t s = sizes[i];
        unsigned b = mdq_match_bits_for_size(s);
        uint32_t ds = 1u << b;
        uint32_t bad = 0;
        for (uint32_t r = 0; r < s; r++) {
            mdq_match_decompose(r, b, c);
            bad += !(c[0] < ds && c[1] < ds && c[2] < ds && c[3] < ds);
            bad += ((c[0] * ds + c[1]) * ds + c[2]) * ds + c[3] != r;
        }
        ck_assert_msg(bad == 0, "S=%u: %u bad decompositions", s, bad);
    }
    /* 10^6 random samples at 2^20 and 2^24 (and the top of uint32) */
    static const uint64_t big[] = {1u << 20, 1u << 24, UINT32_MAX};
    uint64_t x = 88172645463325252ull;
    for (size_t i = 0; i < 3; i++) {
        unsigned b = mdq_match_bits_for_size((uint32_t) big[i]);
        uint64_t ds = 1ull << b;
        uint32_t bad = 0;
        for (int k = 0; k < 1000000; k++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            uint32_t r = (uint32_t) (x % big[i]);
            mdq_match_decompose(r, b, c);
            bad += !(c[0] < ds && c[1] < ds && c[2] < ds && c[3] < ds);
            bad += ((c[0] * ds + c[1]) * ds + c[2]) * ds + c[3] != r;
        }
        ck_assert_msg(bad == 0, "S=%llu: %u bad decompositions", (unsigned long long) big[i], bad);
    }
}
END_TEST

/* ---------------------------------------------- basic semantics (3-10) */

START_TEST(test_exact_match)
{
    open_cfg(_i, MDQ_MATCH_POLICY_OLDEST);
    uint32_t hi = cfgs[_i].size - 1;
    obj_t r[4], m[4];
    /* receive then message */
    ck_assert_ptr_null(post(q, mk(&r[0], 1, (int32_t) hi, 7)));
    ck_assert_uint_eq(mdq_match_queue_stats(q)->prq_length, 1);
    ck_assert_ptr_eq(arrive(q, mk(&m[0], 2, (int32_t) hi, 7)), &r[0]);
    ck_assert(!mdq_match_is_queued(&r[0].it));
    /* message then receive */
    ck_assert_ptr_null(arrive(q, mk(&m[1], 3, 1, 9)));
    ck_assert_uint_eq(mdq_match_queue_stats(q)->umq_length, 1);
    ck_assert(mdq_match_is_queued(&m[1].it));
    ck_assert_ptr_eq(post(q, mk(&r[1], 4, 1, 9)), &m[1]);
    /* tag mismatch and rank mismatch stay queued on both sides */
    ck_assert_ptr_null(post(q, mk(&r[2], 5, 1, 10)));
    ck_assert_ptr_null(arrive(q, mk(&m[2], 6, 1, 11)));
    ck_assert_ptr_null(arrive(q, mk(&m[3], 7, 0, 10)));
    ck_assert_uint_eq(mdq_match_queue_stats(q)->prq_length, 1);
    ck_assert_uint_eq(mdq_match_queue_stats(q)->umq_length, 2);
    ck_assert_ptr_eq(post(q, mk(&r[3], 8, 1, 11)), &m[2]);
    ck_assert_ptr_eq(arrive(q, mk(&m[2], 9, 1, 10)), &r[2]);
    ck_assert_ptr_eq(probe(q, 0, 10, true), &m[3]);
    ck_assert_uint_eq(mdq_match_queue_stats(q)->prq_length, 0);
    ck_assert_uint_eq(mdq_match_queue_stats(q)->umq_length, 0);
    close_cfg();
}
END_TEST

START_TEST(test_any_tag)
{
    open_cfg(_i, MDQ_MATCH_POLICY_OLDEST);
    obj_t m[6], r[6];
    /* internal negative tags are never matched by ANY_TAG */
    ck_assert_ptr_null(arrive(q, mk(&m[0], 1, 3, -5)));
    ck_assert_ptr_null(arrive(q, mk(&m[1], 2, 3, -1)));
    ck_assert_ptr_null(arrive(q, mk(&m[2], 3, 3, 0)));
    ck_assert_ptr_eq(post(q, mk(&r[0], 10, 3, MDQ_MATCH_ANY_TAG)), &m[2]);
    ck_assert_ptr_null(post(q, mk(&r[1], 11, 3, MDQ_MATCH_ANY_TAG)));
    ck_assert_ptr_null(probe(q, 3, MDQ_MATCH_ANY_TAG, false));
    ck_assert_ptr_null(probe(q, MDQ_MATCH_ANY_SOURCE, MDQ_MATCH_ANY_TAG, false));
    /* a negative tag arriving does not match the posted ANY_TAG receive */
    ck_assert_ptr_null(arrive(q, mk(&m[3], 4, 3, -7)));
    ck_assert_uint_eq(mdq_match_queue_stats(q)->prq_length, 1);
    /* an exact negative tag matches */
    ck_assert_ptr_eq(post(q, mk(&r[2], 12, 3, -5)), &m[0]);
    ck_assert_ptr_eq(probe(q, MDQ_MATCH_ANY_SOURCE, -7, true), &m[3]);
    ck_assert_ptr_null(post(q, mk(&r[3], 13, MDQ_MATCH_ANY_SOURCE, -9)));
    ck_assert_ptr_eq(arrive(q, mk(&m[4], 5, 2, -9)), &r[3]);
    /* ANY_TAG takes a large tag */
    ck_assert_ptr_eq(arrive(q, mk(&m[5], 6, 3, INT32_MAX)), &r[1]);
    ck_assert_uint_eq(mdq_match_queue_stats(q)->prq_length, 0);
    ck_assert_uint_eq(mdq_match_queue_stats(q)->umq_length, 1); /* the tag -1 message */
    ck_assert(mdq_match_remove(q, &m[1].it));
    close_cfg();
}
END_TEST

START_TEST(test_fifo)
{
    open_cfg(_i, MDQ_MATCH_POLICY_OLDEST);
    enum { N = 1000 };
    obj_t *m = calloc(N, sizeof(*m)), *m2 = calloc(N, sizeof(*m2)), *r = calloc(N, sizeof(*r));
    int32_t src = (int32_t) (cfgs[_i].size / 2);
    for (int i = 0; i < N; i++) /* interleave a second source to populate the JumpPoint */
        ck_assert_ptr_null(arrive(q, mk(&m[i], i, i % 3 ? src : src ^ 1, 4)));
    for (int i = 0; i < N; i++) {
        if (i % 3)
            ck_assert_int_eq(post(q, mk(&r[i], N + i, src, 4))->id, i);
    }
    for (int i = 0; i < N; i++)
        ck_assert_ptr_null(post(q, mk(&r[i], N + i, src, i % 2 ? 4 : MDQ_MATCH_ANY_TAG)));
    for (int i = 0; i < N; i++)
        ck_assert_int_eq(arrive(q, mk(&m2[i], i, src, 4))->id, N + i);
    ck_assert_uint_eq(mdq_match_queue_stats(q)->prq_length, 0);
    for (int i = 0; i < N; i++)
        if (!(i % 3))
            ck_assert_ptr_eq(probe(q, MDQ_MATCH_ANY_SOURCE, 4, true), &m[i]);
    free(m);
    free(m2);
    free(r);
    close_cfg();
}
END_TEST

/* thesis [T:1083-1092]: recv0(0), recv1(0), recv2(ANY_SOURCE), recv3(0) */
START_TEST(test_ordering_oracle)
{
    open_cfg(_i, MDQ_MATCH_POLICY_OLDEST);
    obj_t r[4], m[4];
    for (int round = 0; round < 2; round++) {
        ck_assert_ptr_null(post(q, mk(&r[0], 0, 0, 5)));
        ck_assert_ptr_null(post(q, mk(&r[1], 1, 0, 5)));
        ck_assert_ptr_null(post(q, mk(&r[2], 2, MDQ_MATCH_ANY_SOURCE, 5)));
        ck_assert_ptr_null(post(q, mk(&r[3], 3, 0, 5)));
        if (round == 0) {
            ck_assert_ptr_eq(arrive(q, mk(&m[0], 10, 0, 5)), &r[0]);
            ck_assert_ptr_eq(arrive(q, mk(&m[1], 11, 0, 5)), &r[1]);
            ck_assert_ptr_eq(arrive(q, mk(&m[2], 12, 0, 5)), &r[2]);
            ck_assert_ptr_eq(arrive(q, mk(&m[3], 13, 0, 5)), &r[3]);
        } else {
            ck_assert_ptr_eq(arrive(q, mk(&m[0], 10, 0, 5)), &r[0]);
            ck_assert_ptr_eq(arrive(q, mk(&m[1], 11, 8, 5)), &r[2]);
            ck_assert_ptr_eq(arrive(q, mk(&m[2], 12, 0, 5)), &r[1]);
            ck_assert_ptr_eq(arrive(q, mk(&m[3], 13, 0, 5)), &r[3]);
        }
        ck_assert_uint_eq(mdq_match_queue_stats(q)->prq_length, 0);
        ck_assert_uint_eq(mdq_match_queue_stats(q)->umq_length, 0);
    }
    close_cfg();
}
END_TEST

/* item 7: ANY_SOURCE+ANY_TAG against messages spread over several Cubes */
START_TEST(test_anysource_policies)
{
    for (int pol = 0; pol < 2; pol++) {
        pool = mdq_match_pool_create();
        q = qcreate(pool, 70000, MDQ_MATCH_MODE_AUTO, 2.0, (mdq_match_policy_t) pol);
        ck_assert(mdq_match_queue_is_4d(q)); /* ds = 32: Cubes at c3 = 0, 1, 2 */
        obj_t m[7], r[7];
        ck_assert_ptr_null(arrive(q, mk(&m[0], 0, 65541, 3)));
        ck_assert_ptr_null(arrive(q, mk(&m[1], 1, 3, -5)));
        ck_assert_ptr_null(arrive(q, mk(&m[2], 2, 40000, 2)));
        ck_assert_ptr_null(arrive(q, mk(&m[3], 3, 10, 1)));
        ck_assert_ptr_null(arrive(q, mk(&m[4], 4, 65541, 4)));
        ck_assert_ptr_null(arrive(q, mk(&m[5], 5, 10, 6)));
        static const int oldest[] = {0, 2, 3, 4, 5};
        static const int first[] = {3, 5, 2, 0, 4}; /* c3 order, oldest per sender */
        for (int k = 0; k < 5; k++) {
            obj_t *got = probe(q, MDQ_MATCH_ANY_SOURCE, MDQ_MATCH_ANY_TAG, false);
            ck_assert_ptr_eq(post(q, mk(&r[k], 100 + k, MDQ_MATCH_ANY_SOURCE, MDQ_MATCH_ANY_TAG)), got);
            ck_assert_int_eq(got->id, pol == MDQ_MATCH_POLICY_OLDEST ? oldest[k] : first[k]);
        }
        ck_assert_ptr_null(post(q, mk(&r[5], 105, MDQ_MATCH_ANY_SOURCE, MDQ_MATCH_ANY_TAG)));
        ck_assert_ptr_eq(post(q, mk(&r[6], 106, MDQ_MATCH_ANY_SOURCE, -5)), &m[1]);
        ck_assert(mdq_match_remove(q, &r[5].it));
        close_cfg();
    }
}
END_TEST

START_TEST(test_probe_idempotent)
{
    open_cfg(_i, MDQ_MATCH_POLICY_OLDEST);
    obj_t m[4], r[2];
    ck_assert_ptr_null(arrive(q, mk(&m[0], 0, 3, 1)));
    ck_assert_ptr_null(arrive(q, mk(&m[1], 1, 3, 2)));
    ck_assert_ptr_null(arrive(q, mk(&m[2], 2, 5, 1)));
    ck_assert_ptr_null(arrive(q, mk(&m[3], 3, 3, 1)));
    obj_t *a = probe(q, MDQ_MATCH_ANY_SOURCE, MDQ_MATCH_ANY_TAG, false);
    obj_t *b = probe(q, MDQ_MATCH_ANY_SOURCE, MDQ_MATCH_ANY_TAG, false);
    ck_assert_ptr_eq(a, &m[0]);
    ck_assert_ptr_eq(a, b);
    ck_assert_uint_eq(mdq_match_queue_stats(q)->umq_length, 4);
    ck_assert_ptr_eq(probe(q, 5, MDQ_MATCH_ANY_TAG, false), &m[2]);
    ck_assert_ptr_eq(probe(q, 3, 2, false), &m[1]);
    ck_assert_ptr_eq(probe(q, 3, 2, false), &m[1]);
    ck_assert_ptr_null(probe(q, 4, MDQ_MATCH_ANY_TAG, false));
    ck_assert_uint_eq(mdq_match_queue_stats(q)->umq_length, 4);
    /* a receive with (status.source, status.tag) gets exactly the probed message */
    ck_assert_ptr_eq(post(q, mk(&r[0], 10, a->it.rank, a->it.tag)), a);
    ck_assert_ptr_eq(probe(q, 3, 1, false), &m[3]);
    ck_assert_ptr_eq(post(q, mk(&r[1], 11, 3, 1)), &m[3]);
    ck_assert(mdq_match_remove(q, &m[1].it));
    ck_assert(mdq_match_remove(q, &m[2].it));
    close_cfg();
}
END_TEST

START_TEST(test_mprobe)
{
    open_cfg(_i, MDQ_MATCH_POLICY_OLDEST);
    obj_t m[3], r[1];
    ck_assert_ptr_null(arrive(q, mk(&m[0], 0, 7, 1)));
    ck_assert_ptr_null(arrive(q, mk(&m[1], 1, 7, 1)));
    ck_assert_ptr_null(arrive(q, mk(&m[2], 2, 2, 1)));
    obj_t *x = probe(q, 7, 1, true); /* mprobe */
    ck_assert_ptr_eq(x, &m[0]);
    ck_assert(!mdq_match_is_queued(&x->it));
    ck_assert_uint_eq(mdq_match_queue_stats(q)->umq_length, 2);
    ck_assert_ptr_eq(probe(q, 7, 1, false), &m[1]); /* the next one, not m[0] */
    ck_assert_ptr_eq(probe(q, MDQ_MATCH_ANY_SOURCE, 1, true), &m[1]);
    ck_assert_ptr_eq(probe(q, MDQ_MATCH_ANY_SOURCE, 1, false), &m[2]);
    ck_assert_ptr_eq(probe(q, MDQ_MATCH_ANY_SOURCE, MDQ_MATCH_ANY_TAG, true), &m[2]);
    ck_assert_ptr_null(probe(q, MDQ_MATCH_ANY_SOURCE, MDQ_MATCH_ANY_TAG, true));
    ck_assert(!mdq_match_remove(q, &m[2].it)); /* already taken */
    ck_assert_ptr_null(post(q, mk(&r[0], 9, 7, 1)));
    ck_assert(mdq_match_remove(q, &r[0].it));
    close_cfg();
}
END_TEST

START_TEST(test_cancel)
{
    open_cfg(_i, MDQ_MATCH_POLICY_OLDEST);
    const size_t base = mdq_match_pool_bytes_live(pool);
    uint64_t nc, nj;
    obj_t r[6], m[2];
    int32_t hi = (int32_t) cfgs[_i].size - 1;
    ck_assert_ptr_null(post(q, mk(&r[0], 0, hi, 1)));
    mdq_match_queue_tallies(q, &nc, &nj);
    ck_assert_uint_eq(nc, cfgs[_i].is4d ? 1 : 0);
    ck_assert_uint_eq(nj, cfgs[_i].is4d ? 1 : 0);
    ck_assert(mdq_match_remove(q, &r[0].it));
    CHECK_INV(q);
    ck_assert_uint_eq(mdq_match_queue_stats(q)->prq_length, 0);
    mdq_match_queue_tallies(q, &nc, &nj);
    ck_assert_uint_eq(nc + nj, 0); /* JumpPoint and Cube freed */
    ck_assert_uint_eq(mdq_match_pool_bytes_live(pool), base);
    ck_assert(!mdq_match_remove(q, &r[0].it)); /* twice */
    /* middle, head and tail of one FIFO, and an ANY_SOURCE receive */
    ck_assert_ptr_null(post(q, mk(&r[1], 1, 2, 1)));
    ck_assert_ptr_null(post(q, mk(&r[2], 2, 2, 1)));
    ck_assert_ptr_null(post(q, mk(&r[3], 3, MDQ_MATCH_ANY_SOURCE, 1)));
    ck_assert_ptr_null(post(q, mk(&r[4], 4, 2, 1)));
    ck_assert_ptr_null(post(q, mk(&r[5], 5, 3, 1)));
    ck_assert(mdq_match_remove(q, &r[2].it));
    CHECK_INV(q);
    ck_assert(mdq_match_remove(q, &r[3].it));
    CHECK_INV(q);
    ck_assert_uint_eq(mdq_match_queue_stats(q)->prq_length, 3);
    ck_assert_ptr_eq(arrive(q, mk(&m[0], 10, 2, 1)), &r[1]);
    ck_assert_ptr_eq(arrive(q, mk(&m[1], 11, 2, 1)), &r[4]);
    ck_assert(!mdq_match_remove(q, &r[1].it)); /* already matched */
    ck_assert(mdq_match_remove(q, &r[5].it));
    CHECK_INV(q);
    /* cancel of an unexpected message by identity */
    ck_assert_ptr_null(arrive(q, mk(&m[0], 12, hi, 1)));
    ck_assert(mdq_match_remove(q, &m[0].it));
    CHECK_INV(q);
    mdq_match_queue_tallies(q, &nc, &nj);
    ck_assert_uint_eq(nc + nj, 0);
    ck_assert_uint_eq(mdq_match_pool_bytes_live(pool), base);
    close_cfg();
}
END_TEST

/* the O(1) insertion at the cursor gives the same structure as a fresh descent */
START_TEST(test_cursor_free_ride)
{
    open_cfg(_i, MDQ_MATCH_POLICY_OLDEST);
    enum { N = 3000 };
    obj_t *o = calloc(N, sizeof(*o));
    uint64_t x = 12345;
    for (int i = 0; i < N; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        int32_t rank = (int32_t) (x % cfgs[_i].size);
        mk(&o[i], i, rank, (int32_t) (x >> 40) % 3);
        mdq_match_cursor_t cur;
        if (i % 2) {
            if (!mdq_match_take_posted(q, rank, o[i].it.tag, &cur))
                mdq_match_append_unexpected(q, &o[i].it, (x >> 20) & 1 ? &cur : NULL);
        } else {
            if (!mdq_match_find_unexpected(q, rank, o[i].it.tag, true, &cur)) {
                /* a probe in between does not invalidate the cursor */
                mdq_match_find_unexpected(q, rank, 99, false, NULL);
                mdq_match_append_posted(q, &o[i].it, &cur);
            }
        }
        CHECK_INV(q);
    }
    /* a stale cursor (another mutation happened) is ignored safely */
    mdq_match_cursor_t stale;
    obj_t a, b;
    mk(&a, -1, 1, 77);
    mk(&b, -2, (int32_t) cfgs[_i].size - 1, 77);
    ck_assert_ptr_null(mdq_match_take_posted(q, 1, 77, &stale));
    mdq_match_append_unexpected(q, &b.it, NULL);
    mdq_match_append_unexpected(q, &a.it, &stale);
    CHECK_INV(q);
    mdq_match_drain(q, NULL, NULL);
    CHECK_INV(q);
    free(o);
    close_cfg();
}
END_TEST

typedef struct drain_log {
    int n;
    int ids[64];
    bool posted[64];
} drain_log_t;

static void drain_cb(mdq_match_item_t *it, bool posted, void *arg)
{
    drain_log_t *l = arg;
    ck_assert(!mdq_match_is_queued(it));
    l->posted[l->n] = posted;
    l->ids[l->n++] = OBJ(it)->id;
}

START_TEST(test_drain_order)
{
    open_cfg(_i, MDQ_MATCH_POLICY_OLDEST);
    obj_t o[12];
    int32_t hi = (int32_t) cfgs[_i].size - 1;
    static const int32_t ranks[12] = {5, -1, 0, -2, 5, -3, -1, -2, 0, -3, -1, -2};
    /* positive: posted with that rank, -1: ANY_SOURCE posted; -2/-3: messages from hi/1 */
    for (int i = 0; i < 12; i++) {
        if (ranks[i] >= -1)
            ck_assert_ptr_null(post(q, mk(&o[i], i, ranks[i], 1)));
        else
            ck_assert_ptr_null(arrive(q, mk(&o[i], i, ranks[i] == -2 ? hi : 1, 2)));
    }
    drain_log_t log = {0};
    mdq_match_drain(q, drain_cb, &log);
    ck_assert_int_eq(log.n, 12);
    static const int expect[12] = {0, 1, 2, 4, 6, 8, 10, 3, 5, 7, 9, 11};
    for (int i = 0; i < 12; i++) {
        ck_assert_int_eq(log.ids[i], expect[i]);
        ck_assert(log.posted[i] == (i < 7));
    }
    ck_assert_uint_eq(mdq_match_queue_stats(q)->prq_length + mdq_match_queue_stats(q)->umq_length, 0);
    close_cfg();
}
END_TEST

/* ----------------------------------------------------- visits (item 13) */

START_TEST(test_visit_bound)
{
    static const struct {
        uint32_t s;
        uint64_t v;
    } t[] = {{4096, 26}, {65536, 50}, {1u << 20, 98}};
    uint32_t s = t[_i].s;
    uint32_t ds = 1u << mdq_match_bits_for_size(s);
    obj_t *o = calloc(s, sizeof(*o));
    pool = mdq_match_pool_create();
    q = qcreate(pool, s, MDQ_MATCH_MODE_AUTO, 2.0, MDQ_MATCH_POLICY_OLDEST);
    ck_assert(mdq_match_queue_is_4d(q));
    const mdq_match_stats_t *st = mdq_match_queue_stats(q);
    for (int side = 0; side < 2; side++) {
        for (uint32_t r = 0; r < s; r++) {
            mk(&o[r], (int) r, (int32_t) r, 0);
            if (side)
                mdq_match_append_posted(q, &o[r].it, NULL);
            else
                mdq_match_append_unexpected(q, &o[r].it, NULL);
        }
        CHECK_INV(q);
        uint64_t v0 = st->visits, s0 = st->searches;
        mdq_match_item_t *hit;
        if (side)
            hit = mdq_match_take_posted(q, (int32_t) s - 1, 1, NULL); /* unfruitful */
        else
            hit = mdq_match_find_unexpected(q, (int32_t) s - 1, 1, false, NULL);
        ck_assert_ptr_null(hit);
        ck_assert_uint_eq(st->visits - v0, t[_i].v);
        ck_assert_uint_eq(st->visits - v0, 1 + ds + 1 + ds + ds);
        ck_assert_uint_eq(st->searches - s0, 1);
        v0 = st->visits;
        if (side)
            hit = mdq_match_take_posted(q, (int32_t) s - 1, 0, NULL); /* the last item */
        else
            hit = mdq_match_find_unexpected(q, (int32_t) s - 1, 0, true, NULL);
        ck_assert_ptr_eq(hit, &o[s - 1].it);
        ck_assert_uint_eq(st->visits - v0, t[_i].v);
        /* first item: 1 + 1 + 1 + 1 + 1 */
        v0 = st->visits;
        if (side)
            hit = mdq_match_take_posted(q, 0, 0, NULL);
        else
            hit = mdq_match_find_unexpected(q, 0, 0, true, NULL);
        ck_assert_ptr_eq(hit, &o[0].it);
        ck_assert_uint_eq(st->visits - v0, 5);
        /* the removed last rank: its JumpPoint still holds ds-1 items */
        v0 = st->visits;
        ck_assert_ptr_null(mdq_match_find_unexpected(q, (int32_t) s - 1, 0, false, NULL));
        ck_assert(st->visits - v0 <= 3 * ds + 1 + ds);
        mdq_match_drain(q, NULL, NULL);
        CHECK_INV(q);
    }
    close_cfg();
    free(o);
}
END_TEST

/* ANY_SOURCE UMQ search: 1 + Cubes + c2 slots read + JumpPoints + items */
START_TEST(test_visits_any_source)
{
    pool = mdq_match_pool_create();
    q = qcreate(pool, 1u << 20, MDQ_MATCH_MODE_AUTO, 2.0, MDQ_MATCH_POLICY_OLDEST);
    const mdq_match_stats_t *st = mdq_match_queue_stats(q);
    obj_t o[3];
    uint64_t v0 = st->visits;
    ck_assert_ptr_null(probe(q, MDQ_MATCH_ANY_SOURCE, MDQ_MATCH_ANY_TAG, false));
    ck_assert_uint_eq(st->visits - v0, 1); /* empty UMQ */
    mdq_match_append_unexpected(q, &mk(&o[0], 0, 0, 3)->it, NULL);
    v0 = st->visits;
    ck_assert_ptr_eq(probe(q, MDQ_MATCH_ANY_SOURCE, MDQ_MATCH_ANY_TAG, false), &o[0]);
    ck_assert_uint_eq(st->visits - v0, 1 + 1 + 1 + 1 + 1);
    ck_assert(mdq_match_remove(q, &o[0].it));
    mdq_match_append_unexpected(q, &mk(&o[1], 1, (1 << 20) - 1, 3)->it, NULL);
    v0 = st->visits;
    ck_assert_ptr_eq(probe(q, MDQ_MATCH_ANY_SOURCE, 3, false), &o[1]);
    ck_assert_uint_eq(st->visits - v0, 1 + 1 + 32 + 1 + 1); /* slots 0..31 of Cube 31 */
    mdq_match_append_unexpected(q, &mk(&o[2], 2, 5, -4)->it, NULL);
    v0 = st->visits;
    ck_assert_ptr_eq(probe(q, MDQ_MATCH_ANY_SOURCE, MDQ_MATCH_ANY_TAG, false), &o[1]);
    ck_assert_uint_eq(st->visits - v0, 1 + (1 + 1 + 1 + 1) + (1 + 32 + 1 + 1));
    mdq_match_drain(q, NULL, NULL);
    close_cfg();
}
END_TEST

/* ----------------------------------------------------- memory (14, 15) */

START_TEST(test_memory_table45)
{
    static const uint32_t sizes[3] = {4096, 65536, 1u << 20};
    static const size_t lit[3][4] = {
        {184, 760, 6216, 25272}, {248, 536, 3224, 198968}, {376, 520, 1864, 1581624}};
    uint32_t s = sizes[_i];
    unsigned b = mdq_match_bits_for_size(s);
    uint64_t ds = 1u << b;
    obj_t *o = calloc(s, sizeof(*o));
    pool = mdq_match_pool_create();
    q = qcreate(pool, s, MDQ_MATCH_MODE_AUTO, 2.0, MDQ_MATCH_POLICY_OLDEST);
    ck_assert_uint_eq(mdq_match_queue_bytes(q), 56);
    ck_assert_uint_eq(mdq_match_pool_bytes_live(pool), mdq_match_queue_bytes(q));
    const uint64_t n_list[4] = {1, 100, 1000, s};
    const size_t cube = 16 + 8 * ds, jp = 48;
    for (int k = 0; k < 4; k++) {
        uint64_t n = n_list[k];
        for (uint64_t r = 0; r < n; r++)
            mdq_match_append_unexpected(q, &mk(&o[r], (int) r, (int32_t) r, 0)->it, NULL);
        uint64_t nc, nj;
        mdq_match_queue_tallies(q, &nc, &nj);
        uint64_t e_jp = (n + ds - 1) / ds, e_c3 = (n + ds * ds * ds - 1) / (ds * ds * ds);
        ck_assert_uint_eq(nj, e_jp);
        ck_assert_uint_eq(nc, e_c3);
        size_t o4d = mdq_match_pool_bytes_live(pool);
        ck_assert_uint_eq(o4d, mdq_match_queue_bytes(q) + e_c3 * cube + e_jp * jp);
        ck_assert_uint_eq(o4d, lit[_i][k]);
        ck_assert_uint_eq(mdq_match_pool_bytes_peak(pool), o4d);
        ck_assert(mdq_match_pool_bytes_reserved(pool) >= o4d - 56);
        CHECK_INV(q);
        /* repeated ranks add nothing */
        obj_t extra;
        mdq_match_append_unexpected(q, &mk(&extra, -1, (int32_t) (n - 1), 5)->it, NULL);
        ck_assert_uint_eq(mdq_match_pool_bytes_live(pool), o4d);
        ck_assert(mdq_match_remove(q, &extra.it));
        for (uint64_t r = 0; r < n; r++)
            REQUIRE(mdq_match_remove(q, &o[r].it));
        ck_assert_uint_eq(mdq_match_pool_bytes_live(pool), 56);
    }
    close_cfg();
    free(o);
}
END_TEST

START_TEST(test_memory_sparse)
{
    const uint32_t s = 1u << 20;
    obj_t *o = calloc(s, sizeof(*o));
    pool = mdq_match_pool_create();
    q = qcreate(pool, s, MDQ_MATCH_MODE_AUTO, 2.0, MDQ_MATCH_POLICY_OLDEST);
    for (uint32_t r = 0; r < s; r += 32)
        mdq_match_append_posted(q, &mk(&o[r], (int) r, (int32_t) r, 0)->it, NULL);
    const size_t sparse = 56 + 32 * 272 + 32768 * 48;
    ck_assert_uint_eq(mdq_match_pool_bytes_live(pool), sparse);
    ck_assert_uint_eq(sparse, 1581624);
    for (uint32_t r = 0; r < s; r++)
        if (r % 32)
            mdq_match_append_posted(q, &mk(&o[r], (int) r, (int32_t) r, 0)->it, NULL);
    ck_assert_uint_eq(mdq_match_pool_bytes_live(pool), sparse);
    CHECK_INV(q);
    mdq_match_drain(q, NULL, NULL);
    ck_assert_uint_eq(mdq_match_pool_bytes_live(pool), 56);
    ck_assert_uint_eq(mdq_match_pool_bytes_peak(pool), sparse);
    close_cfg();
    free(o);
}
END_TEST

/* item 16: 10^6 random insert/delete cycles; the slab footprint stays bounded
 * by the peak of live objects (plus at most one partly used slab per class) */
START_TEST(test_pool_reuse)
{
    enum { LIVE = 2048, CYCLES = 1000000 };
    const uint32_t s = 1u << 20;
    obj_t *o = calloc(LIVE, sizeof(*o));
    pool = mdq_match_pool_create();
    q = qcreate(pool, s, MDQ_MATCH_MODE_AUTO, 2.0, MDQ_MATCH_POLICY_OLDEST);
    uint64_t x = 99;
    for (int i = 0; i < LIVE; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        mdq_match_append_unexpected(q, &mk(&o[i], i, (int32_t) (x % s), 0)->it, NULL);
    }
    for (int c = 0; c < CYCLES; c++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        obj_t *v = &o[x % LIVE];
        REQUIRE(mdq_match_remove(q, &v->it));
        v->it.rank = (int32_t) ((x >> 24) % s);
        if (x & (1u << 20))
            mdq_match_append_posted(q, &v->it, NULL);
        else
            mdq_match_append_unexpected(q, &v->it, NULL);
    }
    CHECK_INV(q);
    size_t peak = mdq_match_pool_bytes_peak(pool) - 56;
    size_t reserved = mdq_match_pool_bytes_reserved(pool);
    ck_assert_msg(reserved <= peak + 2 * (16384 + 272 + 16), "reserved %zu for peak %zu", reserved, peak);
    mdq_match_queue_destroy(q);
    ck_assert_uint_eq(mdq_match_pool_bytes_live(pool), 0);
    mdq_match_pool_destroy(pool);
    free(o);
}
END_TEST

/* a pool that refuses Cubes/JumpPoints turns the queue linear, losing nothing */
START_TEST(test_pool_limit_degrades)
{
    pool = mdq_match_pool_create();
    q = qcreate(pool, 4097, MDQ_MATCH_MODE_AUTO, 2.0, MDQ_MATCH_POLICY_OLDEST);
    ck_assert(mdq_match_queue_is_4d(q));
    /* room for the queue, one Cube(16) and 3 JumpPoints */
    mdq_match_pool_set_limit(pool, 56 + 144 + 3 * 48);
    obj_t o[8];
    ck_assert_ptr_null(post(q, mk(&o[0], 0, 0, 1)));
    ck_assert_ptr_null(arrive(q, mk(&o[1], 1, 16, 2)));
    ck_assert_ptr_null(post(q, mk(&o[2], 2, MDQ_MATCH_ANY_SOURCE, 3)));
    ck_assert_ptr_null(arrive(q, mk(&o[3], 3, 32, 2)));
    ck_assert(mdq_match_queue_is_4d(q));
    ck_assert_ptr_null(arrive(q, mk(&o[4], 4, 48, 2))); /* 4th JumpPoint refused */
    ck_assert(!mdq_match_queue_is_4d(q));
    ck_assert_uint_eq(mdq_match_pool_bytes_live(pool), 56);
    ck_assert_uint_eq(mdq_match_queue_stats(q)->prq_length, 2);
    ck_assert_uint_eq(mdq_match_queue_stats(q)->umq_length, 3);
    ck_assert_ptr_eq(probe(q, MDQ_MATCH_ANY_SOURCE, 2, false), &o[1]);
    ck_assert_ptr_eq(arrive(q, mk(&o[5], 5, 7, 3)), &o[2]);
    ck_assert_ptr_eq(arrive(q, mk(&o[6], 6, 0, 1)), &o[0]);
    ck_assert_ptr_eq(post(q, mk(&o[7], 7, 48, 2)), &o[4]);
    mdq_match_pool_set_limit(pool, 56 + 20);
    mdq_match_queue_t *q2 = qcreate(pool, 10, MDQ_MATCH_MODE_AUTO, 2.0,
                                                   MDQ_MATCH_POLICY_OLDEST);
    ck_assert_ptr_null(q2); /* over the cap */
    mdq_match_pool_set_limit(pool, 0);
    mdq_match_drain(q, NULL, NULL);
    close_cfg();
}
END_TEST

START_TEST(test_many_queues_share_pool)
{
    pool = mdq_match_pool_create();
    mdq_match_queue_t *qs[3];
    static const uint32_t sz[3] = {16, 4097, 1u << 20};
    for (int i = 0; i < 3; i++)
        qs[i] = qcreate(pool, sz[i], MDQ_MATCH_MODE_4D, 2.0, MDQ_MATCH_POLICY_OLDEST);
    ck_assert_uint_eq(mdq_match_pool_bytes_live(pool), 3 * 56);
    obj_t *o = calloc(3, sizeof(*o));
    for (int i = 0; i < 3; i++)
        mdq_match_append_unexpected(qs[i], &mk(&o[i], i, (int32_t) sz[i] - 1, 0)->it, NULL);
    ck_assert_uint_eq(mdq_match_pool_bytes_live(pool), 3 * 56 + 3 * 48 + (16 + 32) + (16 + 128) + (16 + 256));
    for (int i = 0; i < 3; i++) {
        ck_assert_ptr_null(mdq_match_find_unexpected(qs[(i + 1) % 3], (int32_t) sz[i] - 1, 0, false, NULL));
        CHECK_INV(qs[i]);
    }
    /* an item of a linear queue is not removed through another queue */
    mdq_match_queue_t *lin = qcreate(pool, 8, MDQ_MATCH_MODE_AUTO, 2.0, MDQ_MATCH_POLICY_OLDEST);
    obj_t l;
    mdq_match_append_posted(lin, &mk(&l, 9, 3, 3)->it, NULL);
    ck_assert(!mdq_match_remove(qs[0], &l.it));
    ck_assert(mdq_match_is_queued(&l.it));
    CHECK_INV(lin);
    CHECK_INV(qs[0]);
    ck_assert(mdq_match_remove(lin, &l.it));
    mdq_match_queue_destroy(lin);
    /* destroying a queue with queued items forgets them without touching
     * them (they are freed first here: ASan/valgrind would flag a touch)
     * and returns its Cubes and JumpPoints */
    free(o);
    for (int i = 0; i < 3; i++)
        mdq_match_queue_destroy(qs[i]);
    ck_assert_uint_eq(mdq_match_pool_bytes_live(pool), 0);
    mdq_match_pool_destroy(pool);
}
END_TEST

/* the checker really detects each kind of corruption (white-box) */
START_TEST(test_invariant_checker_detects)
{
    pool = mdq_match_pool_create();
    q = qcreate(pool, 70000, MDQ_MATCH_MODE_AUTO, 2.0, MDQ_MATCH_POLICY_OLDEST);
    obj_t o[6];
    /* ds = 32: ranks 0 and 1 share JumpPoint (0,0,0); 32 is (0,0,1); 40000 is in Cube 1 */
    mdq_match_append_posted(q, &mk(&o[0], 0, 0, 1)->it, NULL);
    mdq_match_append_posted(q, &mk(&o[1], 1, 1, 1)->it, NULL);
    mdq_match_append_unexpected(q, &mk(&o[2], 2, 32, 1)->it, NULL);
    mdq_match_append_unexpected(q, &mk(&o[3], 3, 40000, 1)->it, NULL);
    mdq_match_append_posted(q, &mk(&o[4], 4, MDQ_MATCH_ANY_SOURCE, 1)->it, NULL);
    CHECK_INV(q);
    mdq_match_queue_t *Q = q;
    mdq_jp_t *jp0 = MDQ_HOME_BASE(o[0].it.home), *jp1 = MDQ_HOME_BASE(o[2].it.home);
    mdq_cube_t *c0 = jp0->cube, *c1 = c0->next;
    ck_assert_ptr_eq(jp0->next, jp1);
#define CORRUPT(stmt, undo, code)                                                                  \
    do {                                                                                           \
        stmt;                                                                                      \
        ck_assert_int_eq(mdq_match_check_invariants(Q), code);                                     \
        undo;                                                                                      \
        CHECK_INV(Q);                                                                              \
    } while (0)
    uint64_t sq = o[1].it.seq;
    CORRUPT(o[1].it.seq = o[0].it.seq, o[1].it.seq = sq, -9);
    CORRUPT(o[1].it.seq = 1000, o[1].it.seq = sq, -10);
    CORRUPT(c1->c3 = 0, c1->c3 = 1, -2);
    CORRUPT(c0->njp++, c0->njp--, -3);
    CORRUPT(jp1->c1 = 0, jp1->c1 = 1, -4);
    CORRUPT(jp1->umq = NULL, jp1->umq = &o[2].it, -5);
    CORRUPT(jp1->cube = c1, jp1->cube = c0, -6);
    CORRUPT(o[1].it.rank = 33, o[1].it.rank = 1, -7);
    CORRUPT(o[1].it.rank = 70000, o[1].it.rank = 1, -7);
    CORRUPT(o[1].it.home = jp1, o[1].it.home = jp0, -8);
    CORRUPT(o[0].it.prev = &o[0].it, o[0].it.prev = &o[1].it, -8);
    CORRUPT(Q->stats.prq_length++, Q->stats.prq_length--, -11);
    CORRUPT(Q->stats.umq_length--, Q->stats.umq_length++, -12);
    CORRUPT(Q->n_jps++, Q->n_jps--, -13);
    CORRUPT(Q->n_cubes--, Q->n_cubes++, -13);
    CORRUPT(o[4].it.rank = 5, o[4].it.rank = MDQ_MATCH_ANY_SOURCE, -14);
    CORRUPT(o[0].it.rank = MDQ_MATCH_ANY_SOURCE, o[0].it.rank = 0, -14);
    ck_assert_int_eq(mdq_match_check_invariants(NULL), -1);
#undef CORRUPT
    mdq_match_drain(q, NULL, NULL);
    close_cfg();
}
END_TEST

/* --------------------------------------------- optional structures */

START_TEST(test_feat_create_and_bytes)
{
    pool = mdq_match_pool_create();
    /* the defaults entry point uses MDQ_MATCH_FEAT_DEFAULT */
    q = mdq_match_queue_create(pool, 4096, MDQ_MATCH_MODE_AUTO, MDQ_MATCH_ADJUSTMENT_DEFAULT,
                               MDQ_MATCH_POLICY_OLDEST);
    ck_assert_uint_eq(mdq_match_queue_features(q), MDQ_MATCH_FEAT_DEFAULT);
    mdq_match_queue_destroy(q);
    ck_assert_ptr_null(mdq_match_queue_create_ex(pool, 4096, MDQ_MATCH_MODE_AUTO, 2.0,
                                                 MDQ_MATCH_POLICY_OLDEST, 0x80));
    ck_assert_uint_eq(mdq_match_pool_bytes_live(pool), 0);
    /* per-queue bytes: 56 + 8 (ALL_UMQ) + 16 (LAST_HIT) + 8 + 8*ceil(S/ds^3) (C3_ARRAY) */
    static const struct { uint32_t s, nc3; } t[] = {{4096, 8}, {65536, 16}, {1u << 20, 32},
                                                     {(1u << 20) + 1, 5}, {16, 1}};
    for (unsigned f = 0; f <= MDQ_MATCH_FEAT_MASK; f++)
        for (int i = 0; i < 5; i++) {
            q = mdq_match_queue_create_ex(pool, t[i].s, MDQ_MATCH_MODE_AUTO, 2.0,
                                          MDQ_MATCH_POLICY_OLDEST, f);
            size_t want = 56 + (f & MDQ_MATCH_FEAT_ALL_UMQ ? 8 : 0)
                          + (f & MDQ_MATCH_FEAT_LAST_HIT ? 16 : 0)
                          + (f & MDQ_MATCH_FEAT_C3_ARRAY ? 8 + 8 * (size_t) t[i].nc3 : 0);
            ck_assert_uint_eq(mdq_match_queue_bytes(q), want);
            ck_assert_uint_eq(mdq_match_pool_bytes_live(pool), want);
            ck_assert_uint_eq(mdq_match_item_bytes(q), f & MDQ_MATCH_FEAT_ALL_UMQ ? 56 : 40);
            mdq_match_queue_destroy(q);
        }
    ck_assert_uint_eq(sizeof(mdq_match_item_t), 56);
    ck_assert_uint_eq(mdq_match_pool_bytes_live(pool), 0);
    mdq_match_pool_destroy(pool);
}
END_TEST

/* ALL_UMQ: an ANY_SOURCE search costs 1 + the items compared and takes the
 * oldest, whatever the policy */
START_TEST(test_feat_all_umq_visits)
{
    pool = mdq_match_pool_create();
    q = mdq_match_queue_create_ex(pool, 1u << 20, MDQ_MATCH_MODE_AUTO, 2.0,
                                  _i ? MDQ_MATCH_POLICY_FIRST : MDQ_MATCH_POLICY_OLDEST,
                                  MDQ_MATCH_FEAT_ALL_UMQ);
    const mdq_match_stats_t *st = mdq_match_queue_stats(q);
    obj_t o[4];
    uint64_t v0 = st->visits;
    ck_assert_ptr_null(probe(q, MDQ_MATCH_ANY_SOURCE, MDQ_MATCH_ANY_TAG, false));
    ck_assert_uint_eq(st->visits - v0, 1);
    ck_assert_ptr_null(arrive(q, mk(&o[0], 0, (1 << 20) - 1, 3)));
    ck_assert_ptr_null(arrive(q, mk(&o[1], 1, 7, -4)));
    ck_assert_ptr_null(arrive(q, mk(&o[2], 2, 0, 3)));
    ck_assert_ptr_null(arrive(q, mk(&o[3], 3, (1 << 20) - 1, 3)));
    v0 = st->visits;
    /* oldest first: rank 2^20-1 although rank 0 comes first in coordinates */
    ck_assert_ptr_eq(probe(q, MDQ_MATCH_ANY_SOURCE, 3, false), &o[0]);
    ck_assert_uint_eq(st->visits - v0, 1 + 1);
    v0 = st->visits;
    ck_assert_ptr_eq(probe(q, MDQ_MATCH_ANY_SOURCE, -4, true), &o[1]); /* internal tag, exact */
    ck_assert_uint_eq(st->visits - v0, 1 + 2);
    ck_assert(mdq_match_remove(q, &o[0].it)); /* cancel unlinks from both lists */
    CHECK_INV(q);
    v0 = st->visits;
    ck_assert_ptr_eq(probe(q, MDQ_MATCH_ANY_SOURCE, MDQ_MATCH_ANY_TAG, true), &o[2]);
    ck_assert_uint_eq(st->visits - v0, 1 + 1);
    ck_assert_ptr_eq(probe(q, 1048575, 3, true), &o[3]); /* specific search keeps the list right */
    ck_assert_ptr_null(probe(q, MDQ_MATCH_ANY_SOURCE, MDQ_MATCH_ANY_TAG, false));
    close_cfg();
}
END_TEST

/* LAST_HIT: a search in the JumpPoint of the previous hit costs 2 + items;
 * the cache follows JumpPoint release. C3_ARRAY: 1 visit for the Cube. */
START_TEST(test_feat_last_hit_and_c3_visits)
{
    pool = mdq_match_pool_create();
    q = mdq_match_queue_create_ex(pool, 1u << 20, MDQ_MATCH_MODE_AUTO, 2.0,
                                  MDQ_MATCH_POLICY_OLDEST, _i ? MDQ_MATCH_FEAT_C3_ARRAY
                                                              : MDQ_MATCH_FEAT_DEFAULT);
    const bool hit = !_i;
    const mdq_match_stats_t *st = mdq_match_queue_stats(q);
    static obj_t o[64];
    /* ranks 2^20-32 .. 2^20-1: one JumpPoint (31,31,31); rank 0: another */
    for (int i = 0; i < 32; i++)
        ck_assert_ptr_null(post(q, mk(&o[i], i, (1 << 20) - 32 + i, 0)));
    ck_assert_ptr_null(post(q, mk(&o[32], 32, 0, 0)));
    mdq_match_cursor_t cur;
    uint64_t v0 = st->visits;
    ck_assert_ptr_null(mdq_match_take_posted(q, 1, 0, &cur)); /* JP of rank 0, miss on rank 1 */
    ck_assert_uint_eq(st->visits - v0, 1 + 1 + 1 + 1 + 1); /* head, c3 entry, slot, JP, item */
    v0 = st->visits;
    ck_assert_ptr_eq(arrive(q, mk(&o[40], 40, (1 << 20) - 1, 0)), &o[31]);
    /* descent: head, c3 entry (not 2 Cubes), slot, the slot's only JP, 32 items */
    ck_assert_uint_eq(st->visits - v0, 1 + 1 + 1 + 1 + 32);
    v0 = st->visits;
    ck_assert_ptr_eq(arrive(q, mk(&o[41], 41, (1 << 20) - 2, 0)), &o[30]);
    ck_assert_uint_eq(st->visits - v0, hit ? 2 + 31 : 1 + 1 + 1 + 1 + 31);
    /* empty the cached JumpPoint: the cache must not keep it */
    for (int i = 0; i < 30; i++)
        ck_assert_ptr_eq(arrive(q, mk(&o[42], 42, (1 << 20) - 32 + i, 0)), &o[i]);
    v0 = st->visits;
    ck_assert_ptr_null(arrive(q, mk(&o[43], 43, (1 << 20) - 5, 0))); /* now unexpected */
    ck_assert_uint_eq(st->visits - v0, 1 + 1); /* JP and Cube 31 gone: head + empty c3 entry */
    mdq_match_drain(q, NULL, NULL);
    close_cfg();
}
END_TEST

/* SPLIT: a JumpPoint with more than ds items gets per-rank lists (one
 * pool object of 16 + 16*ds B); a search scans its own rank's items */
START_TEST(test_feat_split)
{
    pool = mdq_match_pool_create();
    q = mdq_match_queue_create_ex(pool, 4096, MDQ_MATCH_MODE_AUTO, 2.0, MDQ_MATCH_POLICY_OLDEST,
                                  MDQ_MATCH_FEAT_SPLIT);
    const mdq_match_stats_t *st = mdq_match_queue_stats(q);
    const size_t ds = 8, cube = 16 + 8 * ds, jp = 48, tab = 16 + 16 * ds;
    static obj_t o[40];
    /* ranks 0..7 share JumpPoint (0,0,0): 4 receives each, rank-major */
    for (int i = 0; i < 32; i++)
        ck_assert_ptr_null(post(q, mk(&o[i], i, i / 4, 0)));
    ck_assert_uint_eq(q->n_splits, 1);
    ck_assert_uint_eq(mdq_match_pool_bytes_live(pool), 56 + cube + jp + tab);
    uint64_t v0 = st->visits;
    /* rank 7's last receive: head, Cube, slot, JP, table entry, 4 items (seed: 32 items) */
    ck_assert_ptr_null(arrive(q, mk(&o[32], 32, 7, 1)));
    ck_assert_uint_eq(st->visits - v0, 1 + 1 + 1 + 1 + 1 + 4);
    ck_assert_ptr_eq(probe(q, 7, 1, true), &o[32]); /* the message went to rank 7's UMQ list */
    v0 = st->visits;
    ck_assert_ptr_eq(arrive(q, mk(&o[33], 33, 7, 0)), &o[28]); /* FIFO within the rank */
    ck_assert_uint_eq(st->visits - v0, 1 + 1 + 1 + 1 + 1 + 1);
    ck_assert(mdq_match_remove(q, &o[29].it));
    /* empty it: the table goes with the JumpPoint */
    for (int i = 0; i < 28; i++)
        ck_assert_ptr_eq(arrive(q, mk(&o[34], 34, i / 4, 0)), &o[i]);
    ck_assert_ptr_eq(arrive(q, mk(&o[34], 34, 7, 0)), &o[30]);
    ck_assert_ptr_eq(arrive(q, mk(&o[34], 34, 7, 0)), &o[31]);
    ck_assert_uint_eq(q->n_splits, 0);
    ck_assert_uint_eq(mdq_match_pool_bytes_live(pool), 56);
    /* a corrupted table is detected */
    for (int i = 0; i < 9; i++)
        ck_assert_ptr_null(post(q, mk(&o[i], i, i % 2, 0)));
    mdq_jp_t *j = MDQ_HOME_BASE(o[0].it.home);
    ck_assert_int_eq(j->split, 1);
    j->count++;
    ck_assert_int_eq(mdq_match_check_invariants(q), -18);
    j->count--;
    o[2].it.rank = 2; /* rank 0's list now holds a "rank 2" item (same JumpPoint) */
    ck_assert_int_eq(mdq_match_check_invariants(q), -18);
    o[2].it.rank = 0;
    CHECK_INV(q);
    mdq_match_drain(q, NULL, NULL);
    close_cfg();
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("mdq_match");
    TCase *tc = tcase_create("sizing");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_ds_intervals);
    tcase_add_test(tc, test_decompose);
    suite_add_tcase(s, tc);

    /* the semantic tests in the seed design, then with the defaults, ALL_UMQ
     * alone and every option (SPLIT included) */
    static const struct {
        const char *name;
        void (*setup)(void);
    } designs[] = {{"semantics", NULL},
                   {"semantics_default_features", feat_default_setup},
                   {"semantics_all_umq", feat_all_only_setup},
                   {"semantics_every_feature", feat_every_setup}};
    for (size_t f = 0; f < sizeof designs / sizeof designs[0]; f++) {
        tc = tcase_create(designs[f].name);
        tcase_set_timeout(tc, 60);
        if (designs[f].setup)
            tcase_add_checked_fixture(tc, designs[f].setup, feat_teardown);
        else /* policy FIRST differs from OLDEST only without ALL_UMQ */
            tcase_add_test(tc, test_anysource_policies);
        tcase_add_loop_test(tc, test_exact_match, 0, NCFG);
        tcase_add_loop_test(tc, test_any_tag, 0, NCFG);
        tcase_add_loop_test(tc, test_fifo, 0, NCFG);
        tcase_add_loop_test(tc, test_ordering_oracle, 0, NCFG);
        tcase_add_loop_test(tc, test_probe_idempotent, 0, NCFG);
        tcase_add_loop_test(tc, test_mprobe, 0, NCFG);
        tcase_add_loop_test(tc, test_cancel, 0, NCFG);
        tcase_add_loop_test(tc, test_cursor_free_ride, 0, NCFG);
        tcase_add_loop_test(tc, test_drain_order, 0, NCFG);
        suite_add_tcase(s, tc);
    }

    tc = tcase_create("cost_and_memory");
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, test_visit_bound, 0, 3);
    tcase_add_test(tc, test_visits_any_source);
    tcase_add_loop_test(tc, test_memory_table45, 0, 3);
    tcase_add_test(tc, test_memory_sparse);
    tcase_add_test(tc, test_pool_reuse);
    tcase_add_test(tc, test_pool_limit_degrades);
    tcase_add_test(tc, test_many_queues_share_pool);
    tcase_add_test(tc, test_invariant_checker_detects);
    suite_add_tcase(s, tc);

    tc = tcase_create("features");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_feat_create_and_bytes);
    tcase_add_loop_test(tc, test_feat_all_umq_visits, 0, 2);
    tcase_add_loop_test(tc, test_feat_last_hit_and_c3_visits, 0, 2);
    tcase_add_test(tc, test_feat_split);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return check_run(suite());
}
