/*
 * Check unit tests of the nbe epoch engine (no MPI): a simulated network of
 * engines exchanges control messages and "put" operations that write one
 * integer into the target's memory. Delivery order can be FIFO or random.
 */
#include <check.h>

#include "check_run.h"
#include <stdlib.h>
#include <string.h>

#include "nbe_engine.h"

#define MAXP 8
#define MEM 64

typedef struct msg {
    struct msg *next;
    int dst;
    int is_op;
    nbe_ctrl_t ctrl;
    int src, index, value;
    uint64_t fence_tag;
} msg_t;

typedef struct op {
    nbe_op_t super;
    int index, value;
} op_t;

static struct sim {
    int n;
    nbe_engine_t *e[MAXP];
    int mem[MAXP][MEM];
    msg_t *q;
    size_t qlen;
    int random_order;
    int ctx[MAXP];
    int completed_reqs;
    int last_passive;    /* the passive flag of the last issued op */
    int rdma_ops;        /* ops to peers land at once, uncounted (in-call RDMA) */
    int ctrl_queued;     /* tx_ctrl says "queued here" (the glue's BTL was busy) */
    int last_alone;      /* nbe_issuing_alone() in the issue callback of the last op */
} S;

static void push(msg_t *m)
{
    m->next = NULL;
    msg_t **pp = &S.q;
    while (*pp) pp = &(*pp)->next;
    *pp = m;
    S.qlen++;
}

static int tx_ctrl(void *ctx, int peer, const nbe_ctrl_t *c)
{
    (void) ctx;
    msg_t *m = calloc(1, sizeof(*m));
    m->dst = peer;
    m->ctrl = *c;
    push(m);
    return S.ctrl_queued;
}

static int tx_issue(void *ctx, nbe_op_t *eop)
{
    int me = *(int *) ctx;
    op_t *op = (op_t *) eop;
    int target = op->super.target;
    nbe_engine_t *e = S.e[me];
    S.last_passive = op->super.passive;
    S.last_alone = nbe_issuing_alone(e, target);
    if (target == me || S.rdma_ops) {
        S.mem[target][op->index] = op->value;
        nbe_op_local_done(e, target);
        free(op);
        return 0;
    }
    msg_t *m = calloc(1, sizeof(*m));
    m->dst = target;
    m->is_op = 1;
    m->src = me;
    m->index = op->index;
    m->value = op->value;
    m->fence_tag = op->super.fence_tag;
    push(m);
    nbe_op_local_done(e, target);   /* data copied into the message */
    free(op);
    return 1;
}

static void tx_req(void *ctx, nbe_req_t *r)
{
    (void) ctx;
    (void) r;
    S.completed_reqs++;
}

static const nbe_transport_t TX = { tx_ctrl, tx_issue, tx_req };

/* Allocation failure injection: the binary links with -Wl,--wrap for the
 * three allocators, so while fail_allocs is set every allocation (the
 * engine's and the harness's) returns NULL. */
static int fail_allocs;
void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *p, size_t n);
void *__wrap_malloc(size_t n) { return fail_allocs ? NULL : __real_malloc(n); }
void *__wrap_calloc(size_t n, size_t size) { return fail_allocs ? NULL : __real_calloc(n, size); }
void *__wrap_realloc(void *p, size_t n) { return fail_allocs ? NULL : __real_realloc(p, n); }

static void sim_init(int n, int random_order)
{
    memset(&S, 0, sizeof(S));
    S.n = n;
    S.random_order = random_order;
    for (int i = 0; i < n; ++i) {
        S.ctx[i] = i;
        S.e[i] = nbe_engine_create(i, n, &TX, &S.ctx[i]);
        ck_assert_ptr_nonnull(S.e[i]);
    }
}

static void sim_fini(void)
{
    while (S.q) {
        msg_t *m = S.q;
        S.q = m->next;
        free(m);
    }
    for (int i = 0; i < S.n; ++i) nbe_engine_destroy(S.e[i]);
}

/* the end of a test whose every epoch completed */
static void sim_fini_idle(void)
{
    for (int p = 0; p < S.n; ++p) ck_assert_msg(nbe_engine_idle(S.e[p]), "engine %d not idle", p);
    sim_fini();
}

/* take *pp off the queue and hand it to its engine */
static void deliver(msg_t **pp)
{
    msg_t *m = *pp;
    *pp = m->next;
    S.qlen--;
    if (m->is_op) {
        S.mem[m->dst][m->index] = m->value;
        nbe_on_op_arrived(S.e[m->dst], m->src, m->fence_tag);
    } else {
        nbe_on_ctrl(S.e[m->dst], &m->ctrl);
    }
    free(m);
}

/* deliver one message (FIFO or random); returns 0 if none */
static int deliver_one(void)
{
    if (NULL == S.q) return 0;
    msg_t **pp = &S.q;
    if (S.random_order) {
        size_t k = (size_t) rand() % S.qlen;
        while (k--) pp = &(*pp)->next;
    }
    int dst = (*pp)->dst;
    deliver(pp);
    nbe_progress(S.e[dst]);
    return 1;
}

static void run_until_quiet(void)
{
    for (int guard = 0; guard < 100000; ++guard) {
        int any = deliver_one();
        for (int i = 0; i < S.n; ++i) any |= nbe_progress(S.e[i]) > 0;
        if (!any) return;
    }
    ck_abort_msg("simulation did not quiesce");
}

static void put(int origin, int target, int index, int value, int expect_rc)
{
    op_t *op = calloc(1, sizeof(*op));
    op->super.target = target;
    op->index = index;
    op->value = value;
    int rc = nbe_rma(S.e[origin], &op->super);
    ck_assert_int_eq(rc, expect_rc);
    if (NBE_OK != rc) free(op);
}

static void wait_req(nbe_req_t *r)
{
    for (int guard = 0; guard < 100000 && !r->complete; ++guard) {
        int any = deliver_one();
        for (int i = 0; i < S.n; ++i) any |= nbe_progress(S.e[i]) > 0;
        if (!any) break;
    }
    ck_assert_msg(r->complete, "request did not complete");
    nbe_req_free(r);
}

/* deliver every message but control messages of type held (kept queued,
 * in order) until quiet; FIFO, or a random one of the others */
static void run_holding(int held)
{
    for (int guard = 0; guard < 100000; ++guard) {
        msg_t **pp = &S.q;
        size_t others = 0;
        for (msg_t *m = S.q; m; m = m->next) others += m->is_op || held != m->ctrl.type;
        size_t k = S.random_order && others ? (size_t) rand() % others : 0;
        while (*pp && (!(*pp)->is_op && held == (*pp)->ctrl.type ? 1 : k-- > 0)) pp = &(*pp)->next;
        int any = NULL != *pp;
        if (any) deliver(pp);
        for (int i = 0; i < S.n; ++i) any |= nbe_progress(S.e[i]) > 0;
        if (!any) return;
    }
    ck_abort_msg("simulation did not quiesce");
}

/* hand every queued control message of type to its engine, last first,
 * with no progress in between (a batch the glue polled at once) */
static void deliver_batch_reversed(int type)
{
    msg_t *batch = NULL;
    for (msg_t **pp = &S.q; *pp;) {
        msg_t *m = *pp;
        if (!m->is_op && type == m->ctrl.type) {
            *pp = m->next;
            S.qlen--;
            m->next = batch;
            batch = m;
        } else {
            pp = &m->next;
        }
    }
    while (batch) {
        msg_t *m = batch;
        batch = m->next;
        nbe_on_ctrl(S.e[m->dst], &m->ctrl);
        free(m);
    }
}

static void run_holding_fence_grants(void)
{
    run_holding(NBE_CTRL_FENCE_GRANT);
}

/* ---------------------------------------------------------------- */

START_TEST(fence_all_to_all)
{
    sim_init(4, _i);
    nbe_req_t *r[MAXP];
    for (int p = 0; p < S.n; ++p) ck_assert_int_eq(nbe_ifence(S.e[p], 0, &r[p]), NBE_OK);
    for (int p = 0; p < S.n; ++p)
        for (int t = 0; t < S.n; ++t) put(p, t, p, 100 * p + t, NBE_OK);
    for (int p = 0; p < S.n; ++p) wait_req(r[p]);
    /* closing fence: all puts visible everywhere when it completes */
    for (int p = 0; p < S.n; ++p) ck_assert_int_eq(nbe_ifence(S.e[p], NBE_MODE_NOSUCCEED, &r[p]), NBE_OK);
    run_until_quiet();
    for (int p = 0; p < S.n; ++p) {
        ck_assert(r[p]->complete);
        nbe_req_free(r[p]);
        for (int o = 0; o < S.n; ++o) ck_assert_int_eq(S.mem[p][o], 100 * o + p);
        ck_assert(nbe_engine_idle(S.e[p]));
    }
    sim_fini();
}
END_TEST

/* fence completion needs every peer: one late process holds the others */
START_TEST(fence_waits_for_late_peer)
{
    sim_init(3, 0);
    nbe_req_t *r[3];
    for (int p = 0; p < 3; ++p) ck_assert_int_eq(nbe_ifence(S.e[p], NBE_MODE_NOPRECEDE, &r[p]), NBE_OK);
    run_until_quiet();
    for (int p = 0; p < 3; ++p) nbe_req_free(r[p]);
    put(0, 1, 5, 55, NBE_OK);
    ck_assert_int_eq(nbe_ifence(S.e[0], 0, &r[0]), NBE_OK);
    ck_assert_int_eq(nbe_ifence(S.e[1], 0, &r[1]), NBE_OK);
    run_until_quiet();
    ck_assert(!r[0]->complete);
    ck_assert(!r[1]->complete);
    ck_assert_int_eq(nbe_ifence(S.e[2], 0, &r[2]), NBE_OK);
    run_until_quiet();
    for (int p = 0; p < 3; ++p) {
        ck_assert(r[p]->complete);
        nbe_req_free(r[p]);
    }
    ck_assert_int_eq(S.mem[1][5], 55);
    sim_fini();
}
END_TEST

/* operations issued before the targets' grants are recorded, then replayed */
START_TEST(ops_recorded_until_granted)
{
    sim_init(2, 0);
    nbe_req_t *r0, *r1;
    ck_assert_int_eq(nbe_ifence(S.e[0], 0, &r0), NBE_OK);
    put(0, 1, 0, 7, NBE_OK);
    put(0, 1, 1, 8, NBE_OK);
    ck_assert_uint_eq(nbe_engine_stats(S.e[0])->ops_recorded, 2);
    ck_assert_uint_eq(nbe_engine_buffered(S.e[0]), 2);
    ck_assert_int_eq(S.mem[1][0], 0);
    ck_assert_int_eq(nbe_ifence(S.e[1], 0, &r1), NBE_OK);
    run_until_quiet();
    ck_assert_int_eq(S.mem[1][0], 7);
    ck_assert_int_eq(S.mem[1][1], 8);
    nbe_req_free(r0);
    nbe_req_free(r1);
    sim_fini();
}
END_TEST

START_TEST(pscw_basic)
{
    sim_init(3, _i);
    int origins[] = { 0, 2 };
    int target[] = { 1 };
    nbe_req_t *rp, *rw, *rc0, *rc2;
    ck_assert_int_eq(nbe_istart(S.e[0], target, 1, 0, NULL), NBE_OK);
    ck_assert_int_eq(nbe_istart(S.e[2], target, 1, 0, NULL), NBE_OK);
    put(0, 1, 0, 10, NBE_OK);
    put(2, 1, 2, 12, NBE_OK);
    put(0, 2, 0, 1, NBE_ERR_SYNC);          /* 2 is not in 0's access group */
    ck_assert_int_eq(nbe_icomplete(S.e[0], &rc0), NBE_OK);
    ck_assert_int_eq(nbe_icomplete(S.e[2], &rc2), NBE_OK);
    run_until_quiet();
    ck_assert(!rc0->complete);              /* no exposure yet */
    ck_assert_int_eq(nbe_ipost(S.e[1], origins, 2, 0, &rp), NBE_OK);
    ck_assert_int_eq(nbe_iwait(S.e[1], &rw), NBE_OK);
    wait_req(rw);
    ck_assert_int_eq(S.mem[1][0], 10);
    ck_assert_int_eq(S.mem[1][2], 12);
    wait_req(rc0);
    wait_req(rc2);
    wait_req(rp);
    sim_fini();
}
END_TEST

/* a target far ahead: three exposures granted before the origin's first
 * access; epoch ids match them in FIFO order */
START_TEST(epoch_ids_far_ahead_target)
{
    sim_init(2, 0);
    int o[] = { 0 }, t[] = { 1 };
    nbe_req_t *rw[3], *rc;
    for (int k = 0; k < 3; ++k) {
        ck_assert_int_eq(nbe_ipost(S.e[1], o, 1, 0, NULL), NBE_OK);
        ck_assert_int_eq(nbe_iwait(S.e[1], &rw[k]), NBE_OK);
    }
    run_until_quiet();
    /* only the first exposure is active (FIFO, successive epochs) */
    ck_assert_uint_eq(nbe_engine_epochs_count(S.e[1]), 3);
    ck_assert_uint_ge(nbe_engine_stats(S.e[1])->epochs_deferred, 2);
    for (int k = 0; k < 3; ++k) {
        ck_assert_int_eq(nbe_istart(S.e[0], t, 1, 0, NULL), NBE_OK);
        put(0, 1, k, 20 + k, NBE_OK);
        ck_assert_int_eq(nbe_icomplete(S.e[0], &rc), NBE_OK);
        wait_req(rc);
        wait_req(rw[k]);
        ck_assert_int_eq(S.mem[1][k], 20 + k);
    }
    ck_assert(nbe_engine_idle(S.e[1]));
    sim_fini();
}
END_TEST

START_TEST(lock_exclusive_serializes)
{
    sim_init(3, _i);
    nbe_req_t *u0, *u2;
    ck_assert_int_eq(nbe_ilock(S.e[0], NBE_LOCK_EXCLUSIVE, 1, 0, NULL), NBE_OK);
    run_until_quiet();
    put(0, 1, 0, 1, NBE_OK);
    ck_assert_int_eq(nbe_ilock(S.e[2], NBE_LOCK_EXCLUSIVE, 1, 0, NULL), NBE_OK);
    put(2, 1, 0, 2, NBE_OK);
    run_until_quiet();
    /* 2 waits: its put is recorded, not issued */
    ck_assert_int_eq(S.mem[1][0], 1);
    ck_assert_uint_eq(nbe_engine_buffered(S.e[2]), 1);
    ck_assert_int_eq(nbe_iunlock(S.e[0], 1, &u0), NBE_OK);
    wait_req(u0);
    ck_assert_int_eq(nbe_iunlock(S.e[2], 1, &u2), NBE_OK);
    wait_req(u2);
    ck_assert_int_eq(S.mem[1][0], 2);
    sim_fini();
}
END_TEST

START_TEST(lock_shared_concurrent)
{
    sim_init(3, 0);
    ck_assert_int_eq(nbe_ilock(S.e[0], NBE_LOCK_SHARED, 1, 0, NULL), NBE_OK);
    ck_assert_int_eq(nbe_ilock(S.e[2], NBE_LOCK_SHARED, 1, 0, NULL), NBE_OK);
    put(0, 1, 0, 1, NBE_OK);
    put(2, 1, 1, 2, NBE_OK);
    run_until_quiet();
    ck_assert_int_eq(S.mem[1][0], 1);
    ck_assert_int_eq(S.mem[1][1], 2);
    nbe_req_t *u0, *u2;
    nbe_iunlock(S.e[0], 1, &u0);
    nbe_iunlock(S.e[2], 1, &u2);
    wait_req(u0);
    wait_req(u2);
    sim_fini();
}
END_TEST

START_TEST(flush_completes_remotely)
{
    sim_init(2, _i);
    nbe_req_t *f, *u;
    ck_assert_int_eq(nbe_ilock_all(S.e[0], 0, NULL), NBE_OK);
    for (int k = 0; k < 10; ++k) put(0, 1, k, k + 1, NBE_OK);
    ck_assert_int_eq(nbe_iflush(S.e[0], 1, 0, &f), NBE_OK);
    wait_req(f);
    for (int k = 0; k < 10; ++k) ck_assert_int_eq(S.mem[1][k], k + 1);
    ck_assert_int_eq(nbe_iflush(S.e[0], -1, 0, &f), NBE_OK);
    wait_req(f);
    ck_assert_int_eq(nbe_iunlock_all(S.e[0], &u), NBE_OK);
    wait_req(u);
    sim_fini();
}
END_TEST

/* the flush fast path answers "complete" only when nothing is unacked;
 * requests and epochs are recycled through the engine's free lists */
START_TEST(flush_now_fast_path)
{
    sim_init(2, _i);
    nbe_req_t *f, *u, *first;
    ck_assert_int_eq(nbe_flush_now(S.e[0], 1, 0), NBE_ERR_SYNC);
    ck_assert_int_eq(nbe_flush_now(S.e[0], -1, 1), NBE_ERR_SYNC);
    ck_assert_int_eq(nbe_ilock_all(S.e[0], NBE_MODE_NOCHECK, NULL), NBE_OK);
    ck_assert_int_eq(nbe_flush_now(S.e[0], 1, 0), NBE_OK);     /* nothing issued */
    put(0, 0, 1, 7, NBE_OK);                                    /* self: applied directly */
    ck_assert_int_eq(nbe_flush_now(S.e[0], 0, 0), NBE_OK);
    ck_assert_int_eq(nbe_flush_now(S.e[0], -1, 0), NBE_OK);
    put(0, 1, 2, 9, NBE_OK);                                    /* a counted message */
    ck_assert_int_eq(nbe_flush_now(S.e[0], 1, 0), NBE_AGAIN);
    ck_assert_int_eq(nbe_flush_now(S.e[0], -1, 0), NBE_AGAIN);
    ck_assert_int_eq(nbe_flush_now(S.e[0], 1, 1), NBE_OK);     /* locally complete */
    ck_assert_int_eq(nbe_iflush(S.e[0], 1, 0, &f), NBE_OK);
    first = f;
    wait_req(f);
    ck_assert_int_eq(S.mem[1][2], 9);
    ck_assert_int_eq(nbe_flush_now(S.e[0], 1, 0), NBE_OK);     /* acked now */
    ck_assert_int_eq(nbe_flush_now(S.e[0], -1, 0), NBE_OK);
    ck_assert_int_eq(nbe_iflush(S.e[0], -1, 0, &f), NBE_OK);
    ck_assert_ptr_eq(f, first);                                 /* recycled */
    wait_req(f);
    ck_assert_int_eq(nbe_iunlock_all(S.e[0], &u), NBE_OK);
    wait_req(u);
    for (int k = 0; k < 100; ++k) {
        ck_assert_int_eq(nbe_ilock(S.e[0], NBE_LOCK_SHARED, 1, NBE_MODE_NOCHECK, NULL), NBE_OK);
        put(0, 1, k % MEM, k, NBE_OK);
        ck_assert_int_eq(nbe_iunlock(S.e[0], 1, &u), NBE_OK);
        wait_req(u);
        ck_assert_int_eq(S.mem[1][k % MEM], k);
    }
    sim_fini();
}
END_TEST

/* local fences (shared-memory windows): no control message, the epoch
 * completes once closed with its operations locally complete */
START_TEST(local_fence_sends_nothing)
{
    sim_init(3, 0);
    nbe_req_t *f;
    for (int i = 0; i < 3; ++i) nbe_engine_set_local_fence(S.e[i], 1);
    for (int round = 0; round < 5; ++round) {
        ck_assert_int_eq(nbe_ifence(S.e[0], 0, &f), NBE_OK);
        ck_assert_int_eq(f->complete, 1);
        nbe_req_free(f);
        put(0, 0, round, round + 1, NBE_OK);
    }
    ck_assert_int_eq(nbe_ifence(S.e[0], NBE_MODE_NOSUCCEED, &f), NBE_OK);
    ck_assert_int_eq(f->complete, 1);
    nbe_req_free(f);
    for (int round = 0; round < 5; ++round) ck_assert_int_eq(S.mem[0][round], round + 1);
    ck_assert_uint_eq(nbe_engine_stats(S.e[0])->ctrl_sent, 0);
    ck_assert_ptr_null(S.q);
    ck_assert_int_eq(nbe_engine_idle(S.e[0]), 1);
    /* outside the fence epoch: an error as usual */
    put(0, 0, 0, 1, NBE_ERR_SYNC);
    sim_fini();
}
END_TEST

/* the generation number the glue keys its "direct allowed" cache on: it
 * must change with every epoch or grant event and stay put across direct
 * operations themselves */
START_TEST(direct_generation_tracks_epochs)
{
    sim_init(2, 0);
    nbe_req_t *l, *u;
    uint64_t g0 = nbe_engine_generation(S.e[0]);
    ck_assert_int_eq(nbe_ilock_all(S.e[0], NBE_MODE_NOCHECK, NULL), NBE_OK);
    uint64_t g1 = nbe_engine_generation(S.e[0]);
    ck_assert_uint_ne(g1, g0);
    put(0, 1, 1, 11, NBE_OK);                         /* first touch: a leg */
    uint64_t g2 = nbe_engine_generation(S.e[0]);
    ck_assert_uint_ne(g2, g1);
    ck_assert_int_eq(nbe_rma_direct(S.e[0], 1), NBE_OK);
    nbe_rma_direct_again(S.e[0]);
    ck_assert_uint_eq(nbe_engine_generation(S.e[0]), g2);
    uint64_t issued = nbe_engine_stats(S.e[0])->ops_issued;
    nbe_rma_direct_again(S.e[0]);
    ck_assert_uint_eq(nbe_engine_stats(S.e[0])->ops_issued, issued + 1);
    /* unlock_all: the cache must not survive the epoch */
    ck_assert_int_eq(nbe_iunlock_all(S.e[0], &u), NBE_OK);
    ck_assert_uint_ne(nbe_engine_generation(S.e[0]), g2);
    wait_req(u);
    ck_assert_int_eq(nbe_rma_direct(S.e[0], 1), NBE_ERR_SYNC);
    /* a lock with a check: the grant arriving changes the generation */
    ck_assert_int_eq(nbe_ilock(S.e[0], NBE_LOCK_EXCLUSIVE, 1, 0, &l), NBE_OK);
    ck_assert_int_eq(nbe_rma_direct(S.e[0], 1), NBE_AGAIN);
    uint64_t g3 = nbe_engine_generation(S.e[0]);
    wait_req(l);
    ck_assert_uint_ne(nbe_engine_generation(S.e[0]), g3);
    ck_assert_int_eq(nbe_rma_direct(S.e[0], 1), NBE_OK);
    ck_assert_int_eq(nbe_iunlock(S.e[0], 1, &u), NBE_OK);
    wait_req(u);
    ck_assert_int_eq(S.mem[1][1], 11);
    sim_fini();
}
END_TEST

/* nbe_rma_ready: nbe_rma_direct's answer without counting, plus whether the
 * covering epoch is passive (the glue picks its RDMA threshold by it) */
START_TEST(rma_ready_answers_without_counting)
{
    sim_init(2, 0);
    nbe_req_t *l, *u, *f0, *f1;
    int passive = -1;
    ck_assert_int_eq(nbe_rma_ready(S.e[0], 1, &passive), NBE_ERR_SYNC);
    ck_assert_int_eq(passive, -1);                    /* no epoch: untouched */
    ck_assert_int_eq(nbe_ilock(S.e[0], NBE_LOCK_SHARED, 1, 0, &l), NBE_OK);
    ck_assert_int_eq(nbe_rma_ready(S.e[0], 1, &passive), NBE_AGAIN);
    ck_assert_int_eq(passive, 1);                     /* set while waiting too */
    wait_req(l);
    uint64_t issued = nbe_engine_stats(S.e[0])->ops_issued;
    ck_assert_int_eq(nbe_rma_ready(S.e[0], 1, NULL), NBE_OK);
    ck_assert_int_eq(nbe_rma_ready(S.e[0], 1, &passive), NBE_OK);
    ck_assert_uint_eq(nbe_engine_stats(S.e[0])->ops_issued, issued);
    nbe_rma_direct_again(S.e[0]);                     /* the glue moved the data */
    ck_assert_uint_eq(nbe_engine_stats(S.e[0])->ops_issued, issued + 1);
    ck_assert_int_eq(nbe_iunlock(S.e[0], 1, &u), NBE_OK);
    wait_req(u);
    /* a fence epoch is not passive */
    ck_assert_int_eq(nbe_ifence(S.e[0], 0, &f0), NBE_OK);
    ck_assert_int_eq(nbe_ifence(S.e[1], 0, &f1), NBE_OK);
    wait_req(f0);
    wait_req(f1);
    run_until_quiet();
    ck_assert_int_eq(nbe_rma_ready(S.e[0], 1, &passive), NBE_OK);
    ck_assert_int_eq(passive, 0);
    sim_fini();
}
END_TEST

static int taken_count;
static void take_one(void *ctx, nbe_op_t *op)
{
    (void) ctx;
    ck_assert_int_eq(op->target, 1);
    taken_count++;
    free(op);
}

/* a failed engine hands back the operations it recorded and never issued
 * (their requests must end), and keeps its first failure's code */
START_TEST(failed_engine_hands_back_recorded_ops)
{
    sim_init(2, 0);
    nbe_req_t *l;
    ck_assert_int_eq(nbe_ilock(S.e[0], NBE_LOCK_EXCLUSIVE, 1, 0, &l), NBE_OK);
    put(0, 1, 1, 11, NBE_OK);                         /* recorded: no grant yet */
    put(0, 1, 2, 22, NBE_OK);
    ck_assert_uint_eq(nbe_engine_buffered(S.e[0]), 2);
    taken_count = 0;
    nbe_engine_take_recorded(S.e[0], take_one, NULL); /* not failed: nothing */
    ck_assert_int_eq(taken_count, 0);
    nbe_engine_fail_peer(S.e[0]);
    nbe_engine_fail(S.e[0]);                          /* later failures keep the code */
    ck_assert_int_eq(nbe_engine_failed(S.e[0]), NBE_ERR_PEER);
    nbe_engine_take_recorded(S.e[0], take_one, NULL);
    ck_assert_int_eq(taken_count, 2);
    ck_assert_uint_eq(nbe_engine_buffered(S.e[0]), 0);
    nbe_engine_take_recorded(S.e[0], take_one, NULL); /* handed back once */
    ck_assert_int_eq(taken_count, 2);
    nbe_req_free(l);
    sim_fini();
}
END_TEST

/* flush of one target without a request: the FLUSH_REQ leaves at once, the
 * flush is reached when the target's acknowledgement covers every operation;
 * a leg that is not ready (no grant yet) sends the caller to nbe_iflush */
START_TEST(flush_begin_and_reached)
{
    sim_init(2, 0);
    nbe_req_t *l, *u;
    uint64_t thr = 99;
    ck_assert_int_eq(nbe_flush_begin(S.e[0], 1, 0, &thr), NBE_ERR_SYNC);
    ck_assert_int_eq(nbe_ilock_all(S.e[0], 0, NULL), NBE_OK);
    /* never touched: nothing to flush */
    ck_assert_int_eq(nbe_flush_begin(S.e[0], 1, 0, &thr), NBE_OK);
    ck_assert_uint_eq(thr, 0);
    ck_assert_int_eq(nbe_flush_reached(S.e[0], 1, 0, thr), 1);
    put(0, 1, 2, 22, NBE_OK);   /* first touch: the lock request leaves, the put waits */
    ck_assert_int_eq(nbe_flush_begin(S.e[0], 1, 0, &thr), NBE_AGAIN);
    run_until_quiet();
    ck_assert_int_eq(S.mem[1][2], 22);
    put(0, 1, 3, 33, NBE_OK);   /* granted now: issued at once */
    ck_assert_int_eq(nbe_flush_begin(S.e[0], 1, 0, &thr), NBE_OK);
    ck_assert_uint_eq(thr, 2);
    ck_assert_int_eq(nbe_flush_reached(S.e[0], 1, 0, thr), 0);
    ck_assert_int_eq(nbe_flush_reached(S.e[0], 1, 1, 0), 1);   /* local: copied out */
    run_until_quiet();
    ck_assert_int_eq(nbe_flush_reached(S.e[0], 1, 0, thr), 1);
    ck_assert_int_eq(S.mem[1][3], 33);
    ck_assert_int_eq(nbe_iunlock_all(S.e[0], &u), NBE_OK);
    wait_req(u);
    /* an exclusive lock not yet granted: not ready */
    ck_assert_int_eq(nbe_ilock(S.e[0], NBE_LOCK_EXCLUSIVE, 1, 0, &l), NBE_OK);
    ck_assert_int_eq(nbe_flush_begin(S.e[0], 1, 0, &thr), NBE_AGAIN);
    wait_req(l);
    ck_assert_int_eq(nbe_flush_begin(S.e[0], 1, 0, &thr), NBE_OK);
    ck_assert_int_eq(nbe_iunlock(S.e[0], 1, &u), NBE_OK);
    wait_req(u);
    sim_fini();
}
END_TEST

/* direct operations (shared-memory stores): allowed only while the epoch is
 * active, granted and nothing is recorded ahead; they count no message */
START_TEST(rma_direct_when_granted)
{
    sim_init(2, 0);
    nbe_req_t *s, *c, *p, *w, *u;
    int grp0 = 0, grp1 = 1;
    ck_assert_int_eq(nbe_rma_direct(S.e[0], 1), NBE_ERR_SYNC);
    ck_assert_int_eq(nbe_rma_direct(S.e[0], 2), NBE_ERR_ARG);
    /* PSCW: not before the target's post arrived */
    ck_assert_int_eq(nbe_istart(S.e[0], &grp1, 1, 0, &s), NBE_OK);
    ck_assert_int_eq(nbe_rma_direct(S.e[0], 1), NBE_AGAIN);
    put(0, 1, 3, 33, NBE_OK);                         /* recorded */
    ck_assert_int_eq(nbe_ipost(S.e[1], &grp0, 1, 0, &p), NBE_OK);
    run_until_quiet();
    ck_assert_int_eq(nbe_rma_direct(S.e[0], 1), NBE_OK);
    S.mem[1][4] = 44;                                 /* "applied" by the glue */
    ck_assert_int_eq(nbe_icomplete(S.e[0], &c), NBE_OK);
    ck_assert_int_eq(nbe_iwait(S.e[1], &w), NBE_OK);
    wait_req(c);
    wait_req(w);
    nbe_req_free(s);
    nbe_req_free(p);
    ck_assert_int_eq(S.mem[1][3], 33);
    ck_assert_int_eq(S.mem[1][4], 44);
    ck_assert_int_eq(nbe_rma_direct(S.e[0], 1), NBE_ERR_SYNC);
    /* lock_all: the first touch of a target goes through nbe_rma */
    ck_assert_int_eq(nbe_ilock_all(S.e[0], NBE_MODE_NOCHECK, NULL), NBE_OK);
    ck_assert_int_eq(nbe_rma_direct(S.e[0], 1), NBE_AGAIN);
    put(0, 1, 5, 55, NBE_OK);
    ck_assert_int_eq(nbe_rma_direct(S.e[0], 1), NBE_OK);
    ck_assert_int_eq(nbe_rma_direct(S.e[0], 0), NBE_AGAIN);
    ck_assert_int_eq(nbe_iunlock_all(S.e[0], &u), NBE_OK);
    wait_req(u);
    ck_assert_int_eq(S.mem[1][5], 55);
    /* exclusive lock with a check: only once granted */
    ck_assert_int_eq(nbe_ilock(S.e[0], NBE_LOCK_EXCLUSIVE, 1, 0, &s), NBE_OK);
    ck_assert_int_eq(nbe_rma_direct(S.e[0], 1), NBE_AGAIN);
    wait_req(s);
    ck_assert_int_eq(nbe_rma_direct(S.e[0], 1), NBE_OK);
    ck_assert_int_eq(nbe_iunlock(S.e[0], 1, &u), NBE_OK);
    wait_req(u);
    /* local fence: at once */
    nbe_engine_set_local_fence(S.e[0], 1);
    ck_assert_int_eq(nbe_ifence(S.e[0], 0, &s), NBE_OK);
    wait_req(s);
    ck_assert_int_eq(nbe_rma_direct(S.e[0], 1), NBE_OK);
    sim_fini();
}
END_TEST

/* early messages: an origin's message of its active fence epoch needs no
 * grant; the target may apply it only once it activated that epoch, and
 * its fence cannot complete before the message is counted */
START_TEST(early_fence_messages)
{
    sim_init(2, 0);
    nbe_req_t *r0, *r1;
    uint64_t tag = 0;
    ck_assert_int_eq(nbe_ifence(S.e[0], 0, &r0), NBE_OK);
    ck_assert_int_eq(nbe_rma_message(S.e[0], 1, &tag, NULL), NBE_AGAIN);   /* off: waits for the grant */
    for (int p = 0; p < 2; ++p) nbe_engine_set_early_messages(S.e[p], 1);
    ck_assert_int_eq(nbe_rma_message(S.e[0], 1, &tag, NULL), NBE_OK);
    ck_assert_uint_eq(tag, NBE_TAG_EARLY | 1);         /* fence 1, before its grant */
    nbe_rma_message_sent(S.e[0], 1, tag);
    ck_assert(nbe_message_ready(S.e[1], 0, 0));       /* untagged: always */
    ck_assert(!nbe_message_ready(S.e[1], 0, tag));    /* rank 1 has not fenced: hold it */
    ck_assert_int_eq(nbe_ifence(S.e[1], 0, &r1), NBE_OK);
    ck_assert(nbe_message_ready(S.e[1], 0, tag));
    wait_req(r0);
    wait_req(r1);
    /* second epoch: rank 0 closes epoch 1 and goes early into epoch 2 while
     * rank 1 still waits for epoch 1's message */
    ck_assert_int_eq(nbe_ifence(S.e[0], 0, &r0), NBE_OK);
    ck_assert_int_eq(nbe_ifence(S.e[1], 0, &r1), NBE_OK);
    run_until_quiet();
    ck_assert(!r1->complete);
    ck_assert(!nbe_message_ready(S.e[1], 0, NBE_TAG_EARLY | 2));
    ck_assert(nbe_message_ready(S.e[1], 0, 2));       /* sent after its grant: no check */
    S.mem[1][0] = 10;
    nbe_on_op_arrived(S.e[1], 0, tag);               /* the held message, applied */
    run_until_quiet();
    ck_assert(r0->complete && r1->complete);
    nbe_req_free(r0);
    nbe_req_free(r1);
    ck_assert(nbe_message_ready(S.e[1], 0, NBE_TAG_EARLY | 2));
    ck_assert_int_eq(nbe_rma_message(S.e[0], 1, &tag, NULL), NBE_OK);
    ck_assert_uint_eq(tag, 2);
    put(0, 1, 1, 11, NBE_OK);
    for (int p = 0; p < 2; ++p) ck_assert_int_eq(nbe_ifence(S.e[p], NBE_MODE_NOSUCCEED, p ? &r1 : &r0), NBE_OK);
    wait_req(r0);
    wait_req(r1);
    ck_assert_int_eq(S.mem[1][1], 11);
    sim_fini();
}
END_TEST

/* early messages of a start epoch: tagged with the access id, ready at the
 * target once it posted to the origin; the exposure cannot end without them */
START_TEST(early_pscw_messages)
{
    sim_init(2, 0);
    nbe_req_t *s, *c, *p, *w;
    int grp0 = 0, grp1 = 1;
    uint64_t tag = 0;
    for (int i = 0; i < 2; ++i) nbe_engine_set_early_messages(S.e[i], 1);
    ck_assert_int_eq(nbe_istart(S.e[0], &grp1, 1, 0, &s), NBE_OK);
    ck_assert_int_eq(nbe_rma_message(S.e[0], 1, &tag, NULL), NBE_OK);
    ck_assert_uint_eq(tag, NBE_TAG_EARLY | NBE_TAG_ACCESS | 1);
    nbe_rma_message_sent(S.e[0], 1, tag);
    ck_assert_int_eq(nbe_icomplete(S.e[0], &c), NBE_OK);
    run_until_quiet();
    ck_assert(c->complete);                           /* DONE left before the post */
    ck_assert(!nbe_message_ready(S.e[1], 0, tag));
    ck_assert_int_eq(nbe_ipost(S.e[1], &grp0, 1, 0, &p), NBE_OK);
    ck_assert(nbe_message_ready(S.e[1], 0, tag));
    ck_assert(!nbe_message_ready(S.e[1], 0, NBE_TAG_EARLY | NBE_TAG_ACCESS | 2));
    ck_assert_int_eq(nbe_iwait(S.e[1], &w), NBE_OK);
    run_until_quiet();
    ck_assert(!w->complete);                          /* DONE counts the held message */
    S.mem[1][2] = 22;
    nbe_on_op_arrived(S.e[1], 0, tag);
    run_until_quiet();
    ck_assert(w->complete);
    ck_assert_int_eq(nbe_engine_stats(S.e[0])->ops_recorded, 0);
    nbe_req_free(s);
    nbe_req_free(c);
    nbe_req_free(p);
    nbe_req_free(w);
    /* a granted target takes untagged messages */
    ck_assert_int_eq(nbe_ipost(S.e[1], &grp0, 1, 0, &p), NBE_OK);
    run_until_quiet();
    ck_assert_int_eq(nbe_istart(S.e[0], &grp1, 1, 0, &s), NBE_OK);
    run_until_quiet();
    ck_assert_int_eq(nbe_rma_message(S.e[0], 1, &tag, NULL), NBE_OK);
    ck_assert_uint_eq(tag, 0);
    nbe_req_free(s);
    nbe_req_free(p);
    sim_fini();
}
END_TEST

/* With early messages an origin closes a start epoch without waiting for
 * its post, one epoch ahead of the target's posts: each exposure waits for
 * its own epoch's DONE and messages, not for the total of the next epoch,
 * whose DONE arrives first and whose message the target still holds */
START_TEST(pscw_done_before_post)
{
    sim_init(2, 0);
    int grp0 = 0, grp1 = 1;
    uint64_t tag[4];
    nbe_req_t *c[4], *w;
    for (int i = 0; i < 2; ++i) nbe_engine_set_early_messages(S.e[i], 1);
    for (int k = 1; k <= 3; ++k) {
        ck_assert_int_eq(nbe_istart(S.e[0], &grp1, 1, 0, NULL), NBE_OK);
        ck_assert_int_eq(nbe_rma_message(S.e[0], 1, &tag[k], NULL), NBE_OK);
        ck_assert_uint_eq(tag[k], NBE_TAG_EARLY | NBE_TAG_ACCESS | (uint64_t) k);
        nbe_rma_message_sent(S.e[0], 1, tag[k]);
        ck_assert_int_eq(nbe_icomplete(S.e[0], &c[k]), NBE_OK);
        run_until_quiet();
        if (1 == k) {
            ck_assert(c[1]->complete);                /* no post needed */
            continue;
        }
        ck_assert(!c[k]->complete);                   /* bounded: wait for post k-1 */
        ck_assert_int_eq(nbe_ipost(S.e[1], &grp0, 1, 0, NULL), NBE_OK);
        ck_assert(nbe_message_ready(S.e[1], 0, tag[k - 1]));
        ck_assert(!nbe_message_ready(S.e[1], 0, tag[k]));
        ck_assert_int_eq(nbe_iwait(S.e[1], &w), NBE_OK);
        run_until_quiet();
        ck_assert(c[k]->complete);                    /* its DONE is at the target now */
        ck_assert(!w->complete);                      /* exposure k-1's message is held */
        nbe_on_op_arrived(S.e[1], 0, tag[k - 1]);
        run_until_quiet();
        ck_assert_msg(w->complete, "exposure %d waits for the next epoch's total", k - 1);
        nbe_req_free(w);
    }
    ck_assert_int_eq(nbe_ipost(S.e[1], &grp0, 1, 0, NULL), NBE_OK);
    ck_assert_int_eq(nbe_iwait(S.e[1], &w), NBE_OK);
    nbe_on_op_arrived(S.e[1], 0, tag[3]);
    wait_req(w);
    for (int k = 1; k <= 3; ++k) nbe_req_free(c[k]);
    sim_fini_idle();
}
END_TEST

/* A post is not a lock grant: the target posts to an origin whose lock
 * request is queued behind another origin's exclusive lock; the origin must
 * not take the post's grant for its lock */
START_TEST(post_grant_is_not_lock_grant)
{
    sim_init(3, 0);
    int grp0 = 0, grp1 = 1;
    nbe_req_t *l0, *u0, *u2, *c, *w;
    ck_assert_int_eq(nbe_ilock(S.e[2], NBE_LOCK_EXCLUSIVE, 1, 0, NULL), NBE_OK);
    run_until_quiet();
    ck_assert_int_eq(nbe_ipost(S.e[1], &grp0, 1, 0, NULL), NBE_OK);
    run_until_quiet();
    ck_assert_int_eq(nbe_ilock(S.e[0], NBE_LOCK_EXCLUSIVE, 1, 0, &l0), NBE_OK);
    run_until_quiet();
    ck_assert_msg(!l0->complete, "the post's grant was taken for a lock grant");
    put(0, 1, 0, 10, NBE_OK);
    run_until_quiet();
    ck_assert_int_eq(S.mem[1][0], 0);
    ck_assert_int_eq(nbe_iunlock(S.e[2], 1, &u2), NBE_OK);
    wait_req(u2);
    wait_req(l0);
    ck_assert_int_eq(nbe_iunlock(S.e[0], 1, &u0), NBE_OK);
    wait_req(u0);
    ck_assert_int_eq(S.mem[1][0], 10);
    /* the start epoch takes the post's grant */
    ck_assert_int_eq(nbe_istart(S.e[0], &grp1, 1, 0, NULL), NBE_OK);
    put(0, 1, 1, 11, NBE_OK);
    ck_assert_int_eq(nbe_icomplete(S.e[0], &c), NBE_OK);
    ck_assert_int_eq(nbe_iwait(S.e[1], &w), NBE_OK);
    wait_req(c);
    wait_req(w);
    ck_assert_int_eq(S.mem[1][1], 11);
    sim_fini();
}
END_TEST

START_TEST(sync_errors)
{
    sim_init(2, 0);
    nbe_req_t *r;
    put(0, 1, 0, 1, NBE_ERR_SYNC);
    ck_assert_int_eq(nbe_icomplete(S.e[0], &r), NBE_ERR_SYNC);
    ck_assert_int_eq(nbe_iwait(S.e[0], &r), NBE_ERR_SYNC);
    ck_assert_int_eq(nbe_iunlock(S.e[0], 1, &r), NBE_ERR_SYNC);
    ck_assert_int_eq(nbe_iunlock_all(S.e[0], &r), NBE_ERR_SYNC);
    ck_assert_int_eq(nbe_iflush(S.e[0], 1, 0, &r), NBE_ERR_SYNC);
    ck_assert_int_eq(nbe_ilock(S.e[0], NBE_LOCK_SHARED, 1, 0, NULL), NBE_OK);
    ck_assert_int_eq(nbe_ilock(S.e[0], NBE_LOCK_SHARED, 1, 0, NULL), NBE_ERR_SYNC);
    ck_assert_int_eq(nbe_ilock_all(S.e[0], 0, NULL), NBE_ERR_SYNC);
    ck_assert_int_eq(nbe_ifence(S.e[0], 0, &r), NBE_ERR_SYNC);
    ck_assert_int_eq(nbe_iunlock(S.e[0], 1, &r), NBE_OK);
    wait_req(r);
    /* a fence epoch with operations cannot be left for a lock epoch */
    nbe_req_t *f0, *f1;
    nbe_ifence(S.e[0], 0, &f0);
    nbe_ifence(S.e[1], 0, &f1);
    put(0, 1, 0, 3, NBE_OK);
    ck_assert_int_eq(nbe_ilock(S.e[0], NBE_LOCK_SHARED, 1, 0, NULL), NBE_ERR_SYNC);
    /* an idle one can: process 1 did no RMA after its fence */
    ck_assert_int_eq(nbe_ilock(S.e[1], NBE_LOCK_SHARED, 0, 0, NULL), NBE_OK);
    run_until_quiet();
    nbe_req_free(f0);
    nbe_req_free(f1);
    sim_fini();
}
END_TEST

/* win_traits exist only for touched peers */
START_TEST(traits_are_sparse)
{
    nbe_engine_t *e;
    static int ctx0 = 0;
    memset(&S, 0, sizeof(S));
    S.n = 1;
    e = nbe_engine_create(0, 1000000, &TX, &ctx0);
    ck_assert_ptr_nonnull(e);
    ck_assert_uint_eq(nbe_engine_traits_count(e), 0);
    ck_assert_int_eq(nbe_ilock(e, NBE_LOCK_SHARED, 123456, 0, NULL), NBE_OK);
    ck_assert_int_eq(nbe_ilock(e, NBE_LOCK_SHARED, 999999, 0, NULL), NBE_OK);
    ck_assert_uint_le(nbe_engine_traits_count(e), 2);
    nbe_engine_destroy(e);
    while (S.q) {
        msg_t *m = S.q;
        S.q = m->next;
        free(m);
    }
}
END_TEST

/* engine-level simulation of window memory: an engine for 2, 1K and 1M
 * peers holds the same bytes while no peer is touched; the glue's peer
 * info (window geometry) lives in the touched peers' traits only */
START_TEST(memory_per_untouched_peer)
{
    static int ctx0 = 0;
    static const int sizes[] = { 2, 1024, 1000000 };
    size_t base = 0;
    memset(&S, 0, sizeof(S));
    S.n = 1;
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); ++i) {
        nbe_engine_t *e = nbe_engine_create(0, sizes[i], &TX, &ctx0);
        ck_assert_ptr_nonnull(e);
        size_t m = nbe_engine_memory(e);
        if (0 == i) base = m;
        ck_assert_uint_eq(m, base);   /* slope 0 bytes per untouched peer */
        nbe_peer_info_t *pi = nbe_engine_peer_info(e, sizes[i] - 1);
        ck_assert_ptr_nonnull(pi);
        ck_assert_int_eq(pi->known, 0);
        pi->base = 4096;
        pi->known = 1;
        ck_assert_ptr_eq(nbe_engine_peer_info(e, sizes[i] - 1), pi);
        ck_assert_uint_eq(nbe_engine_traits_count(e), 1);
        ck_assert_uint_gt(nbe_engine_memory(e), base);
        ck_assert_ptr_null(nbe_engine_peer_info(e, sizes[i]));
        ck_assert_ptr_null(nbe_engine_peer_info(e, -1));
        nbe_engine_destroy(e);
    }
    /* touching k peers of 1M costs O(k), pointers stay valid across growth */
    nbe_engine_t *e = nbe_engine_create(0, 1000000, &TX, &ctx0);
    nbe_peer_info_t *first = nbe_engine_peer_info(e, 7);
    first->disp_unit = 8;
    for (int r = 0; r < 1000; ++r) ck_assert_ptr_nonnull(nbe_engine_peer_info(e, r * 997));
    ck_assert_ptr_eq(nbe_engine_peer_info(e, 7), first);
    ck_assert_int_eq(first->disp_unit, 8);
    ck_assert_uint_lt(nbe_engine_memory(e), base + 1001 * 512);
    nbe_engine_destroy(e);
}
END_TEST

/* each touched peer is visited once, untouched ones never */
static void sum_ranks(void *ctx, int rank, nbe_peer_info_t *info)
{
    long *acc = ctx;
    acc[0] += rank;
    acc[1] += 1;
    acc[2] += info->refused;
}

START_TEST(each_peer_info_visits_touched_peers)
{
    static int ctx0 = 0;
    memset(&S, 0, sizeof(S));
    S.n = 1;
    nbe_engine_t *e = nbe_engine_create(0, 1000000, &TX, &ctx0);
    long acc[3] = { 0, 0, 0 }, want = 0;
    nbe_engine_each_peer_info(e, sum_ranks, acc);
    ck_assert_int_eq(acc[1], 0);
    for (int r = 0; r < 100; ++r) {
        nbe_peer_info_t *pi = nbe_engine_peer_info(e, r * 9973);
        ck_assert_ptr_nonnull(pi);
        pi->refused = 1;
        want += r * 9973;
    }
    nbe_engine_each_peer_info(e, sum_ranks, acc);
    ck_assert_int_eq(acc[0], want);
    ck_assert_int_eq(acc[1], 100);
    ck_assert_int_eq(acc[2], 100);
    nbe_engine_destroy(e);
}
END_TEST

/* many epochs opened back to back stay deferred and activate in order */
/* all processes call fence with assert; their requests complete holding
 * the FENCE_GRANTs back */
static void fence_all_holding_grants(int assert_bits)
{
    nbe_req_t *r[MAXP];
    for (int p = 0; p < S.n; ++p) ck_assert_int_eq(nbe_ifence(S.e[p], assert_bits, &r[p]), NBE_OK);
    run_holding_fence_grants();
    for (int p = 0; p < S.n; ++p) {
        ck_assert_msg(r[p]->complete, "fence of %d did not complete", p);
        nbe_req_free(r[p]);
    }
}

/* A fence epoch whose predecessor ended clean everywhere (no counted
 * message: in-call RDMA only) is granted without FENCE_GRANTs; one after
 * a counted message, or opened by a later fence than the one that closed
 * its predecessor (NOSUCCEED), waits for them. */
START_TEST(fence_clean_predecessor_grants_next)
{
    sim_init(3, 0);
    S.rdma_ops = 1;
    for (int p = 0; p < 3; ++p) nbe_engine_set_fence_implied_grants(S.e[p], 1);
    nbe_req_t *r[3];
    for (int p = 0; p < 3; ++p) ck_assert_int_eq(nbe_ifence(S.e[p], 0, &r[p]), NBE_OK);
    run_until_quiet();
    for (int p = 0; p < 3; ++p) nbe_req_free(r[p]);
    /* epoch 1: one in-call RDMA put, clean */
    put(0, 1, 3, 42, NBE_OK);
    ck_assert_int_eq(S.mem[1][3], 42);
    fence_all_holding_grants(0);
    ck_assert_int_eq(nbe_rma_ready(S.e[0], 1, NULL), NBE_OK);
    ck_assert_uint_eq(nbe_engine_stats(S.e[0])->fence_grants_implied, 1);
    /* epoch 2: a counted message from 2 (an active message) */
    S.rdma_ops = 0;
    put(2, 1, 4, 7, NBE_OK);
    S.rdma_ops = 1;
    fence_all_holding_grants(0);
    ck_assert_int_eq(S.mem[1][4], 7);
    ck_assert_int_eq(nbe_rma_ready(S.e[0], 1, NULL), NBE_AGAIN);
    run_until_quiet();   /* the grants */
    ck_assert_int_eq(nbe_rma_ready(S.e[0], 1, NULL), NBE_OK);
    ck_assert_uint_eq(nbe_engine_stats(S.e[0])->fence_grants_implied, 1);
    /* epoch 3 clean, but closed with NOSUCCEED: the next fence opens
     * epoch 4 later, and it waits for its grants */
    put(0, 2, 5, 9, NBE_OK);
    fence_all_holding_grants(NBE_MODE_NOSUCCEED);
    fence_all_holding_grants(0);
    ck_assert_int_eq(nbe_rma_ready(S.e[0], 1, NULL), NBE_AGAIN);
    run_until_quiet();
    ck_assert_int_eq(nbe_rma_ready(S.e[0], 1, NULL), NBE_OK);
    /* epoch 4 clean (nothing at all): epoch 5 is granted at once */
    fence_all_holding_grants(0);
    ck_assert_int_eq(nbe_rma_ready(S.e[1], 2, NULL), NBE_OK);
    ck_assert_uint_eq(nbe_engine_stats(S.e[1])->fence_grants_implied, 2);
    fence_all_holding_grants(NBE_MODE_NOSUCCEED);
    run_until_quiet();
    sim_fini_idle();
}
END_TEST

/* A grant that comes after the epoch it grants completed here (that epoch
 * was granted by its clean predecessor) is dropped: it must not count for
 * the epoch three later, which reuses its slot */
START_TEST(late_fence_grant_is_not_counted_later)
{
    sim_init(2, 0);
    for (int p = 0; p < 2; ++p) nbe_engine_set_fence_implied_grants(S.e[p], 1);
    nbe_req_t *r[2];
    for (int p = 0; p < 2; ++p) ck_assert_int_eq(nbe_ifence(S.e[p], 0, &r[p]), NBE_OK);
    run_until_quiet();
    for (int p = 0; p < 2; ++p) nbe_req_free(r[p]);
    S.rdma_ops = 1;
    put(0, 1, 1, 1, NBE_OK);                   /* E1 clean */
    fence_all_holding_grants(0);               /* E2 granted by E1 */
    ck_assert_int_eq(nbe_rma_ready(S.e[0], 1, NULL), NBE_OK);
    S.rdma_ops = 0;
    put(0, 1, 2, 2, NBE_OK);                   /* E2 unclean; its grants still held */
    fence_all_holding_grants(0);
    ck_assert_int_eq(nbe_rma_ready(S.e[0], 1, NULL), NBE_AGAIN);   /* E3 */
    run_until_quiet();                         /* E2's late grants, and E3's */
    ck_assert_int_eq(nbe_rma_ready(S.e[0], 1, NULL), NBE_OK);
    fence_all_holding_grants(0);               /* E3 clean: E4 granted by it */
    ck_assert_int_eq(nbe_rma_ready(S.e[0], 1, NULL), NBE_OK);
    put(0, 1, 3, 3, NBE_OK);                   /* E4 unclean */
    fence_all_holding_grants(0);
    /* E5 (E2's slot) waits for its own grants */
    ck_assert_int_eq(nbe_rma_ready(S.e[0], 1, NULL), NBE_AGAIN);
    run_until_quiet();
    ck_assert_int_eq(nbe_rma_ready(S.e[0], 1, NULL), NBE_OK);
    fence_all_holding_grants(NBE_MODE_NOSUCCEED);
    run_until_quiet();
    ck_assert_int_eq(S.mem[1][3], 3);
    sim_fini_idle();
}
END_TEST

/* the rule is off unless the glue turns it on */
START_TEST(fence_implied_grants_off_by_default)
{
    sim_init(2, 0);
    S.rdma_ops = 1;
    nbe_req_t *r[2];
    for (int p = 0; p < 2; ++p) ck_assert_int_eq(nbe_ifence(S.e[p], 0, &r[p]), NBE_OK);
    run_until_quiet();
    for (int p = 0; p < 2; ++p) nbe_req_free(r[p]);
    put(0, 1, 3, 42, NBE_OK);
    fence_all_holding_grants(0);
    ck_assert_int_eq(nbe_rma_ready(S.e[0], 1, NULL), NBE_AGAIN);
    ck_assert_uint_eq(nbe_engine_stats(S.e[0])->fence_grants_implied, 0);
    run_until_quiet();
    fence_all_holding_grants(NBE_MODE_NOSUCCEED);
    run_until_quiet();
    sim_fini_idle();
}
END_TEST

/* An unlock whose every counted message is acknowledged (here: none, the
 * puts land in place) ends once its UNLOCK is sent; the engine stays busy
 * until the ack comes. With an unacknowledged active message it waits. */
START_TEST(unlock_no_wait_when_all_acknowledged)
{
    sim_init(2, 0);
    S.rdma_ops = 1;
    for (int p = 0; p < 2; ++p) nbe_engine_set_unlock_no_wait(S.e[p], 1);
    nbe_req_t *l, *u;
    ck_assert_int_eq(nbe_ilock(S.e[0], NBE_LOCK_EXCLUSIVE, 1, 0, &l), NBE_OK);
    wait_req(l);
    put(0, 1, 2, 5, NBE_OK);
    ck_assert_int_eq(nbe_iunlock(S.e[0], 1, &u), NBE_OK);
    run_holding(NBE_CTRL_UNLOCK_ACK);
    ck_assert(u->complete);
    nbe_req_free(u);
    ck_assert_uint_eq(nbe_engine_stats(S.e[0])->unlocks_no_wait, 1);
    ck_assert(!nbe_engine_idle(S.e[0]));     /* its ack is still to come */
    run_until_quiet();
    ck_assert(nbe_engine_idle(S.e[0]));
    /* an UNLOCK the glue only queued (busy BTL): the unlock waits, since
     * the target would get it only at our next call */
    ck_assert_int_eq(nbe_ilock(S.e[0], NBE_LOCK_EXCLUSIVE, 1, 0, &l), NBE_OK);
    wait_req(l);
    put(0, 1, 2, 5, NBE_OK);
    S.ctrl_queued = 1;
    ck_assert_int_eq(nbe_iunlock(S.e[0], 1, &u), NBE_OK);
    S.ctrl_queued = 0;
    run_holding(NBE_CTRL_UNLOCK_ACK);
    ck_assert(!u->complete);
    wait_req(u);
    ck_assert_uint_eq(nbe_engine_stats(S.e[0])->unlocks_no_wait, 1);
    /* an active message (counted, not acknowledged): the unlock waits */
    S.rdma_ops = 0;
    ck_assert_int_eq(nbe_ilock(S.e[0], NBE_LOCK_EXCLUSIVE, 1, 0, &l), NBE_OK);
    wait_req(l);
    put(0, 1, 3, 6, NBE_OK);
    ck_assert_int_eq(nbe_iunlock(S.e[0], 1, &u), NBE_OK);
    run_holding(NBE_CTRL_UNLOCK_ACK);
    ck_assert(!u->complete);
    wait_req(u);
    ck_assert_int_eq(S.mem[1][3], 6);
    ck_assert_uint_eq(nbe_engine_stats(S.e[0])->unlocks_no_wait, 1);
    sim_fini_idle();
}
END_TEST

/* nbe_issuing_alone: an op issued after counted messages that are not
 * acknowledged yet is not alone; once a flush is answered it is */
START_TEST(issuing_alone_after_acknowledgement)
{
    sim_init(2, 0);
    nbe_req_t *l, *u, *f;
    ck_assert_int_eq(nbe_ilock(S.e[0], NBE_LOCK_SHARED, 1, 0, &l), NBE_OK);
    wait_req(l);
    put(0, 1, 2, 5, NBE_OK);             /* a counted message */
    ck_assert(S.last_alone);             /* nothing before it */
    put(0, 1, 3, 6, NBE_OK);
    ck_assert(!S.last_alone);            /* the first is not acknowledged */
    ck_assert_int_eq(nbe_iflush(S.e[0], 1, 0, &f), NBE_OK);
    wait_req(f);
    put(0, 1, 4, 7, NBE_OK);
    ck_assert(S.last_alone);             /* the flush's ack covers both */
    ck_assert_int_eq(nbe_iunlock(S.e[0], 1, &u), NBE_OK);
    wait_req(u);
    ck_assert_int_eq(S.mem[1][4], 7);
    sim_fini_idle();
}
END_TEST

/* nbe_awaits_target: a target with a counted message not acknowledged is
 * waited for; untouched targets, and one whose messages a flush's ack
 * covers, are not */
START_TEST(awaits_target_until_acknowledged)
{
    sim_init(3, 0);
    nbe_req_t *l, *u, *f;
    ck_assert(!nbe_awaits_target(S.e[0], 1));
    ck_assert_int_eq(nbe_ilock(S.e[0], NBE_LOCK_SHARED, 1, 0, &l), NBE_OK);
    wait_req(l);
    put(0, 1, 2, 5, NBE_OK);
    ck_assert(nbe_awaits_target(S.e[0], 1));
    ck_assert(!nbe_awaits_target(S.e[0], 2));   /* never touched */
    ck_assert_int_eq(nbe_iflush(S.e[0], -1, 0, &f), NBE_OK);
    wait_req(f);
    ck_assert(!nbe_awaits_target(S.e[0], 1));
    ck_assert_int_eq(nbe_iunlock(S.e[0], 1, &u), NBE_OK);
    wait_req(u);
    ck_assert_int_eq(S.mem[1][2], 5);
    sim_fini_idle();
}
END_TEST

/* Shared lock epochs that do not wait for their acks, with messages
 * delivered in random order (a second UNLOCK may arrive before the
 * first): no release is lost, so an exclusive lock is granted after them */
START_TEST(unlock_no_wait_keeps_every_release)
{
    srand(11);
    for (int round = 0; round < 20; ++round) {
        sim_init(3, 1);
        S.rdma_ops = 1;
        for (int p = 0; p < 3; ++p) nbe_engine_set_unlock_no_wait(S.e[p], 1);
        for (int k = 0; k < 4; ++k) {
            nbe_req_t *l, *u;
            ck_assert_int_eq(nbe_ilock(S.e[0], NBE_LOCK_SHARED, 1, 0, &l), NBE_OK);
            wait_req(l);
            put(0, 1, k, k, NBE_OK);
            ck_assert_int_eq(nbe_iunlock(S.e[0], 1, &u), NBE_OK);
            run_holding(NBE_CTRL_UNLOCK);   /* the UNLOCKs pile up */
            ck_assert(u->complete);
            nbe_req_free(u);
        }
        if (round % 2) deliver_batch_reversed(NBE_CTRL_UNLOCK);
        nbe_req_t *x, *xu;
        ck_assert_int_eq(nbe_ilock(S.e[2], NBE_LOCK_EXCLUSIVE, 1, 0, &x), NBE_OK);
        wait_req(x);   /* (even rounds: delivers the UNLOCKs in random order) */
        ck_assert_int_eq(nbe_iunlock(S.e[2], 1, &xu), NBE_OK);
        wait_req(xu);
        run_until_quiet();
        sim_fini_idle();
    }
}
END_TEST

START_TEST(deferred_epochs_fifo)
{
    sim_init(2, _i);
    int t[] = { 1 }, o[] = { 0 };
    nbe_req_t *rc[20], *rw[20];
    for (int k = 0; k < 20; ++k) {
        ck_assert_int_eq(nbe_istart(S.e[0], t, 1, 0, NULL), NBE_OK);
        put(0, 1, 0, k, NBE_OK);             /* same location: last write wins */
        ck_assert_int_eq(nbe_icomplete(S.e[0], &rc[k]), NBE_OK);
    }
    ck_assert_uint_ge(nbe_engine_stats(S.e[0])->epochs_deferred, 19);
    for (int k = 0; k < 20; ++k) {
        ck_assert_int_eq(nbe_ipost(S.e[1], o, 1, 0, NULL), NBE_OK);
        ck_assert_int_eq(nbe_iwait(S.e[1], &rw[k]), NBE_OK);
    }
    for (int k = 0; k < 20; ++k) {
        wait_req(rw[k]);
        wait_req(rc[k]);
    }
    ck_assert_int_eq(S.mem[1][0], 19);
    sim_fini_idle();
}
END_TEST

/* lock_all acquires each target's lock on first touch only */
START_TEST(lock_all_lazy_legs)
{
    sim_init(4, 0);
    nbe_req_t *u;
    ck_assert_int_eq(nbe_ilock_all(S.e[0], 0, NULL), NBE_OK);
    run_until_quiet();
    ck_assert_uint_eq(nbe_engine_traits_count(S.e[0]), 0);   /* nobody touched yet */
    put(0, 2, 0, 9, NBE_OK);
    run_until_quiet();
    ck_assert_uint_eq(nbe_engine_traits_count(S.e[0]), 1);
    ck_assert_int_eq(S.mem[2][0], 9);
    /* an exclusive lock by 3 on 2 waits for 0's shared leg */
    ck_assert_int_eq(nbe_ilock(S.e[3], NBE_LOCK_EXCLUSIVE, 2, 0, NULL), NBE_OK);
    put(3, 2, 0, 33, NBE_OK);
    run_until_quiet();
    ck_assert_int_eq(S.mem[2][0], 9);
    ck_assert_int_eq(nbe_iunlock_all(S.e[0], &u), NBE_OK);
    wait_req(u);
    ck_assert_int_eq(nbe_iunlock(S.e[3], 2, &u), NBE_OK);
    wait_req(u);
    ck_assert_int_eq(S.mem[2][0], 33);
    sim_fini();
}
END_TEST

/* what the glue learns before a send-now put to target: whether the
 * covering epoch is passive target (-1: no epoch covers target) */
static int message_passive(int origin, int target)
{
    uint64_t tag = 0;
    int passive = -1;
    int rc = nbe_rma_message(S.e[origin], target, &tag, &passive);
    return NBE_ERR_SYNC == rc ? -1 : passive;
}

/* ops (and the glue, before recording one) learn whether their epoch is
 * passive target: the glue picks its RDMA threshold by it */
START_TEST(ops_know_passive_epochs)
{
    sim_init(3, 0);
    nbe_req_t *r[3];
    int target[] = { 1 };
    ck_assert_int_eq(message_passive(0, 1), -1);   /* no epoch */
    for (int p = 0; p < 3; ++p) ck_assert_int_eq(nbe_ifence(S.e[p], 0, &r[p]), NBE_OK);
    run_until_quiet();
    for (int p = 0; p < 3; ++p) nbe_req_free(r[p]);
    ck_assert_int_eq(message_passive(0, 1), 0);
    S.last_passive = -1;
    put(0, 1, 0, 1, NBE_OK);
    run_until_quiet();
    ck_assert_int_eq(S.last_passive, 0);
    for (int p = 0; p < 3; ++p) ck_assert_int_eq(nbe_ifence(S.e[p], NBE_MODE_NOSUCCEED, &r[p]), NBE_OK);
    run_until_quiet();
    for (int p = 0; p < 3; ++p) nbe_req_free(r[p]);

    ck_assert_int_eq(nbe_ilock(S.e[0], NBE_LOCK_SHARED, 1, 0, NULL), NBE_OK);
    ck_assert_int_eq(message_passive(0, 1), 1);
    ck_assert_int_eq(message_passive(0, 2), -1);   /* not locked */
    S.last_passive = -1;
    put(0, 1, 1, 2, NBE_OK);
    run_until_quiet();
    ck_assert_int_eq(S.last_passive, 1);
    ck_assert_int_eq(nbe_iunlock(S.e[0], 1, &r[0]), NBE_OK);
    wait_req(r[0]);

    ck_assert_int_eq(nbe_ilock_all(S.e[0], 0, NULL), NBE_OK);
    ck_assert_int_eq(message_passive(0, 2), 1);
    S.last_passive = -1;
    put(0, 2, 2, 3, NBE_OK);
    run_until_quiet();
    ck_assert_int_eq(S.last_passive, 1);
    ck_assert_int_eq(nbe_iunlock_all(S.e[0], &r[0]), NBE_OK);
    wait_req(r[0]);

    ck_assert_int_eq(nbe_ipost(S.e[1], (int[]){ 0 }, 1, 0, &r[1]), NBE_OK);
    ck_assert_int_eq(nbe_istart(S.e[0], target, 1, 0, NULL), NBE_OK);
    ck_assert_int_eq(message_passive(0, 1), 0);
    S.last_passive = -1;
    put(0, 1, 3, 4, NBE_OK);
    run_until_quiet();
    ck_assert_int_eq(S.last_passive, 0);
    nbe_req_t *rw;
    ck_assert_int_eq(nbe_icomplete(S.e[0], &r[0]), NBE_OK);
    ck_assert_int_eq(nbe_iwait(S.e[1], &rw), NBE_OK);
    wait_req(rw);
    wait_req(r[0]);
    wait_req(r[1]);
    ck_assert_int_eq(S.mem[1][0], 1);
    ck_assert_int_eq(S.mem[1][1], 2);
    ck_assert_int_eq(S.mem[2][2], 3);
    ck_assert_int_eq(S.mem[1][3], 4);
    sim_fini();
}
END_TEST

/* MPI_MODE_NOCHECK: no lock request, operations go at once */
START_TEST(lock_nocheck)
{
    sim_init(2, 0);
    nbe_req_t *u;
    uint64_t ctrl_before = nbe_engine_stats(S.e[0])->ctrl_sent;
    ck_assert_int_eq(nbe_ilock(S.e[0], NBE_LOCK_SHARED, 1, NBE_MODE_NOCHECK, NULL), NBE_OK);
    ck_assert_uint_eq(nbe_engine_stats(S.e[0])->ctrl_sent, ctrl_before);
    put(0, 1, 3, 4, NBE_OK);
    ck_assert_uint_eq(nbe_engine_stats(S.e[0])->ops_recorded, 0);
    ck_assert_int_eq(nbe_iunlock(S.e[0], 1, &u), NBE_OK);
    wait_req(u);
    ck_assert_int_eq(S.mem[1][3], 4);
    /* the target's lock is untouched: an exclusive lock is granted at once */
    ck_assert_int_eq(nbe_ilock(S.e[0], NBE_LOCK_EXCLUSIVE, 1, 0, &u), NBE_OK);
    wait_req(u);
    ck_assert_int_eq(nbe_iunlock(S.e[0], 1, &u), NBE_OK);
    wait_req(u);
    sim_fini();
}
END_TEST

/* a NOCHECK lock epoch with nothing in flight (the lock of a shared-memory
 * window: the glue holds the lock word, stores complete when issued)
 * completes within nbe_iunlock, without a request */
START_TEST(unlock_at_once_without_request)
{
    sim_init(2, 0);
    nbe_req_t *u = (nbe_req_t *) &u;
    uint64_t ctrl_before = nbe_engine_stats(S.e[0])->ctrl_sent;
    ck_assert_int_eq(nbe_rma_ready(S.e[0], 1, NULL), NBE_ERR_SYNC);   /* no epoch */
    ck_assert_int_eq(nbe_lock_ready(S.e[0], 1), 0);
    ck_assert_int_eq(nbe_ilock(S.e[0], NBE_LOCK_EXCLUSIVE, 1, NBE_MODE_NOCHECK, NULL), NBE_OK);
    ck_assert_int_eq(nbe_rma_ready(S.e[0], 1, NULL), NBE_OK);
    ck_assert_int_eq(nbe_lock_ready(S.e[0], 1), 1);
    ck_assert_int_eq(nbe_rma_direct(S.e[0], 1), NBE_OK);
    ck_assert_int_eq(nbe_iunlock(S.e[0], 1, &u), NBE_OK);
    ck_assert_ptr_null(u);
    ck_assert_int_eq(nbe_rma_ready(S.e[0], 1, NULL), NBE_ERR_SYNC);
    ck_assert_uint_eq(nbe_engine_stats(S.e[0])->ctrl_sent, ctrl_before);
    /* a checked lock is ready only once granted */
    ck_assert_int_eq(nbe_ilock(S.e[0], NBE_LOCK_EXCLUSIVE, 1, 0, &u), NBE_OK);
    ck_assert_int_eq(nbe_rma_ready(S.e[0], 1, NULL), NBE_AGAIN);
    ck_assert_int_eq(nbe_lock_ready(S.e[0], 1), 0);
    wait_req(u);
    ck_assert_int_eq(nbe_rma_ready(S.e[0], 1, NULL), NBE_OK);
    ck_assert_int_eq(nbe_lock_ready(S.e[0], 1), 1);
    ck_assert_int_eq(nbe_iunlock(S.e[0], 1, &u), NBE_OK);
    ck_assert_ptr_nonnull(u);
    wait_req(u);
    /* closed: a second unlock is a synchronization error, a new lock works */
    ck_assert_int_eq(nbe_iunlock(S.e[0], 1, &u), NBE_ERR_SYNC);
    ck_assert_int_eq(nbe_ilock(S.e[0], NBE_LOCK_SHARED, 1, NBE_MODE_NOCHECK, NULL), NBE_OK);
    /* a counted operation in flight: the unlock needs its request */
    put(0, 1, 2, 7, NBE_OK);
    ck_assert_int_eq(nbe_iunlock(S.e[0], 1, &u), NBE_OK);
    ck_assert_ptr_nonnull(u);
    wait_req(u);
    ck_assert_int_eq(S.mem[1][2], 7);
    /* its UNLOCK_ACK said the put arrived: a later epoch of direct stores
     * again completes within the call, sending nothing */
    ctrl_before = nbe_engine_stats(S.e[0])->ctrl_sent;
    ck_assert_int_eq(nbe_ilock(S.e[0], NBE_LOCK_SHARED, 1, NBE_MODE_NOCHECK, NULL), NBE_OK);
    ck_assert_int_eq(nbe_rma_direct(S.e[0], 1), NBE_OK);
    ck_assert_int_eq(nbe_iunlock(S.e[0], 1, &u), NBE_OK);
    ck_assert_ptr_null(u);
    ck_assert_uint_eq(nbe_engine_stats(S.e[0])->ctrl_sent, ctrl_before);
    sim_fini();
}
END_TEST

START_TEST(flush_local_and_all)
{
    sim_init(3, _i);
    nbe_req_t *f, *u;
    ck_assert_int_eq(nbe_ilock(S.e[0], NBE_LOCK_SHARED, 1, 0, NULL), NBE_OK);
    ck_assert_int_eq(nbe_ilock(S.e[0], NBE_LOCK_SHARED, 2, 0, NULL), NBE_OK);
    put(0, 1, 0, 11, NBE_OK);
    put(0, 2, 0, 22, NBE_OK);
    /* flush_local: the ops left the origin (granted and issued) */
    ck_assert_int_eq(nbe_iflush(S.e[0], 1, 1, &f), NBE_OK);
    wait_req(f);
    ck_assert_uint_ge(nbe_engine_stats(S.e[0])->ops_issued, 1);
    /* flush_all over two lock epochs: both targets updated */
    ck_assert_int_eq(nbe_iflush(S.e[0], -1, 0, &f), NBE_OK);
    wait_req(f);
    ck_assert_int_eq(S.mem[1][0], 11);
    ck_assert_int_eq(S.mem[2][0], 22);
    ck_assert_int_eq(nbe_iflush(S.e[0], -1, 1, &f), NBE_OK);   /* flush_local_all */
    wait_req(f);
    nbe_iunlock(S.e[0], 1, &u);
    wait_req(u);
    nbe_iunlock(S.e[0], 2, &u);
    wait_req(u);
    sim_fini();
}
END_TEST

START_TEST(win_test_polls_exposure)
{
    sim_init(2, 0);
    int o[] = { 0 }, t[] = { 1 }, flag = 1;
    nbe_req_t *c;
    ck_assert_int_eq(nbe_ipost(S.e[1], o, 1, 0, NULL), NBE_OK);
    ck_assert_int_eq(nbe_test_exposure(S.e[1], &flag), NBE_OK);
    ck_assert_int_eq(flag, 0);
    ck_assert_int_eq(nbe_istart(S.e[0], t, 1, 0, NULL), NBE_OK);
    put(0, 1, 1, 5, NBE_OK);
    ck_assert_int_eq(nbe_icomplete(S.e[0], &c), NBE_OK);
    wait_req(c);
    run_until_quiet();
    ck_assert_int_eq(nbe_test_exposure(S.e[1], &flag), NBE_OK);
    ck_assert_int_eq(flag, 1);
    ck_assert_int_eq(S.mem[1][1], 5);
    /* the exposure is closed now: a second test is an error */
    ck_assert_int_eq(nbe_test_exposure(S.e[1], &flag), NBE_ERR_SYNC);
    run_until_quiet();
    ck_assert(nbe_engine_idle(S.e[1]));
    sim_fini();
}
END_TEST

/* fence, then a lock epoch without RMA in the fence epoch, then fence */
START_TEST(idle_fence_then_lock)
{
    sim_init(3, _i);
    nbe_req_t *r[3], *u;
    for (int p = 0; p < 3; ++p) nbe_ifence(S.e[p], 0, &r[p]);
    for (int p = 0; p < 3; ++p) wait_req(r[p]);
    /* 0 locks 1 while 1 and 2 stay in the fence epoch */
    ck_assert_int_eq(nbe_ilock(S.e[0], NBE_LOCK_EXCLUSIVE, 1, 0, NULL), NBE_OK);
    put(0, 1, 7, 70, NBE_OK);
    ck_assert_int_eq(nbe_iunlock(S.e[0], 1, &u), NBE_OK);
    wait_req(u);
    ck_assert_int_eq(S.mem[1][7], 70);
    /* next fence everywhere: ids stay consistent, RMA in it works */
    for (int p = 0; p < 3; ++p) ck_assert_int_eq(nbe_ifence(S.e[p], 0, &r[p]), NBE_OK);
    put(2, 0, 1, 21, NBE_OK);
    for (int p = 0; p < 3; ++p) wait_req(r[p]);
    for (int p = 0; p < 3; ++p) ck_assert_int_eq(nbe_ifence(S.e[p], NBE_MODE_NOSUCCEED, &r[p]), NBE_OK);
    for (int p = 0; p < 3; ++p) wait_req(r[p]);
    ck_assert_int_eq(S.mem[0][1], 21);
    sim_fini_idle();
}
END_TEST

/* nbe_fence_unapplied: after a fence epoch that sent target counted
 * messages, the origin does not know them applied (its fence returns once
 * they left) until the target grants a later fence epoch, acknowledges a
 * counted message sent after them, or the glue reports the target's
 * completed fence (nbe_fence_applied). Until then passive operations must
 * not reach the target by RDMA. */
START_TEST(fence_unapplied_until_confirmed)
{
    sim_init(2, 0);
    nbe_req_t *r[2], *u;
    for (int p = 0; p < 2; ++p) nbe_ifence(S.e[p], 0, &r[p]);
    for (int p = 0; p < 2; ++p) wait_req(r[p]);
    ck_assert_uint_eq(nbe_fence_unapplied(S.e[0], 1), 0);
    put(0, 1, 1, 10, NBE_OK);   /* a counted message of fence epoch 1 */
    for (int p = 0; p < 2; ++p) nbe_ifence(S.e[p], NBE_MODE_NOSUCCEED, &r[p]);
    for (int p = 0; p < 2; ++p) wait_req(r[p]);
    ck_assert_uint_eq(nbe_fence_unapplied(S.e[0], 1), 1);
    ck_assert_uint_eq(nbe_fence_unapplied(S.e[1], 0), 0);   /* it sent nothing */
    /* the target's published completion confirms it */
    ck_assert_uint_eq(nbe_fence_completed(S.e[1]), 1);
    nbe_fence_applied(S.e[0], 1, 0);
    ck_assert_uint_eq(nbe_fence_unapplied(S.e[0], 1), 1);
    nbe_fence_applied(S.e[0], 1, nbe_fence_completed(S.e[1]));
    ck_assert_uint_eq(nbe_fence_unapplied(S.e[0], 1), 0);

    /* again; now an acknowledged counted message of a lock epoch confirms */
    for (int p = 0; p < 2; ++p) nbe_ifence(S.e[p], 0, &r[p]);
    for (int p = 0; p < 2; ++p) wait_req(r[p]);
    put(0, 1, 2, 20, NBE_OK);
    for (int p = 0; p < 2; ++p) nbe_ifence(S.e[p], NBE_MODE_NOSUCCEED, &r[p]);
    for (int p = 0; p < 2; ++p) wait_req(r[p]);
    ck_assert_uint_eq(nbe_fence_unapplied(S.e[0], 1), 2);
    ck_assert_int_eq(nbe_ilock(S.e[0], NBE_LOCK_EXCLUSIVE, 1, 0, NULL), NBE_OK);
    put(0, 1, 3, 30, NBE_OK);
    ck_assert_int_eq(nbe_iunlock(S.e[0], 1, &u), NBE_OK);
    wait_req(u);
    ck_assert_uint_eq(nbe_fence_unapplied(S.e[0], 1), 0);

    /* again, closed by a fence that opens the next epoch: its grant confirms */
    for (int p = 0; p < 2; ++p) nbe_ifence(S.e[p], 0, &r[p]);
    for (int p = 0; p < 2; ++p) wait_req(r[p]);
    put(0, 1, 4, 40, NBE_OK);
    for (int p = 0; p < 2; ++p) nbe_ifence(S.e[p], 0, &r[p]);
    for (int p = 0; p < 2; ++p) wait_req(r[p]);
    run_until_quiet();
    ck_assert_uint_eq(nbe_fence_unapplied(S.e[0], 1), 0);
    for (int p = 0; p < 2; ++p) nbe_ifence(S.e[p], NBE_MODE_NOSUCCEED, &r[p]);
    for (int p = 0; p < 2; ++p) wait_req(r[p]);
    ck_assert_int_eq(S.mem[1][1], 10);
    ck_assert_int_eq(S.mem[1][3], 30);
    ck_assert_int_eq(S.mem[1][4], 40);
    sim_fini_idle();
}
END_TEST

/* the glue took over the only unacknowledged message of a NOCHECK lock
 * epoch (its target left MPI): the unlock completes without the target, and
 * the target's late ack changes nothing. Refused for another count, and
 * while an unlock that releases a lock at the target awaits its ack. */
START_TEST(take_over_counts_as_ack)
{
    sim_init(2, 0);
    nbe_req_t *u, *l;
    ck_assert_int_eq(nbe_take_over_possible(S.e[0], 1, 1), 0);   /* untouched */
    ck_assert_int_eq(nbe_ilock(S.e[0], NBE_LOCK_EXCLUSIVE, 1, NBE_MODE_NOCHECK, NULL), NBE_OK);
    put(0, 1, 0, 5, NBE_OK);
    ck_assert_int_eq(nbe_iunlock(S.e[0], 1, &u), NBE_OK);
    nbe_progress(S.e[0]);
    ck_assert(!u->complete);
    ck_assert_int_eq(nbe_take_over_possible(S.e[0], 1, 2), 0);
    ck_assert_int_eq(nbe_take_over_possible(S.e[0], 1, 0), 0);
    ck_assert_int_eq(nbe_take_over_possible(S.e[0], 1, 1), 1);
    nbe_take_over(S.e[0], 1);
    nbe_progress(S.e[0]);
    ck_assert(u->complete);   /* nothing delivered */
    nbe_req_free(u);
    ck_assert_int_eq(nbe_awaits_target(S.e[0], 1), 0);
    ck_assert_int_eq(nbe_engine_idle(S.e[0]), 0);   /* the UNLOCK's ack is still due */
    run_until_quiet();   /* the target's return: the put (the glue skips it) and the acks */
    ck_assert_int_eq(nbe_engine_idle(S.e[0]), 1);

    /* a checked lock: its unlock releases the lock at the target */
    ck_assert_int_eq(nbe_ilock(S.e[0], NBE_LOCK_EXCLUSIVE, 1, 0, &l), NBE_OK);
    wait_req(l);
    put(0, 1, 1, 6, NBE_OK);
    ck_assert_int_eq(nbe_iunlock(S.e[0], 1, &u), NBE_OK);
    nbe_progress(S.e[0]);
    ck_assert(!u->complete);
    ck_assert_int_eq(nbe_take_over_possible(S.e[0], 1, 1), 0);
    wait_req(u);
    ck_assert_int_eq(S.mem[1][1], 6);
    sim_fini_idle();
}
END_TEST

/* a target whose idle fence epoch was closed implicitly still grants locks,
 * although a third process has not closed that fence epoch yet */
START_TEST(implicit_fence_close_does_not_block_locks)
{
    sim_init(3, 0);
    nbe_req_t *r[3], *u, *l;
    for (int p = 0; p < 3; ++p) nbe_ifence(S.e[p], 0, &r[p]);
    for (int p = 0; p < 3; ++p) wait_req(r[p]);
    ck_assert_int_eq(nbe_ilock(S.e[1], NBE_LOCK_SHARED, 1, 0, &l), NBE_OK);   /* 1 locks itself */
    wait_req(l);
    ck_assert_int_eq(nbe_iunlock(S.e[1], 1, &u), NBE_OK);
    wait_req(u);
    ck_assert_int_eq(nbe_engine_closing_exposures(S.e[1]), 0);
    ck_assert_int_eq(nbe_ilock(S.e[0], NBE_LOCK_EXCLUSIVE, 1, 0, &l), NBE_OK);
    wait_req(l);                                       /* granted: 2 never closed its fence */
    ck_assert_int_eq(nbe_iunlock(S.e[0], 1, &u), NBE_OK);
    wait_req(u);
    sim_fini();
}
END_TEST

/* an explicitly closed exposure blocks lock grants until it completes */
START_TEST(closing_exposure_defers_lock_grant)
{
    sim_init(3, 0);
    int o[] = { 0 }, t[] = { 1 };
    nbe_req_t *w, *c, *u;
    ck_assert_int_eq(nbe_ipost(S.e[1], o, 1, 0, NULL), NBE_OK);
    ck_assert_int_eq(nbe_iwait(S.e[1], &w), NBE_OK);
    run_until_quiet();
    ck_assert_int_eq(nbe_engine_closing_exposures(S.e[1]), 1);
    ck_assert_int_eq(nbe_ilock(S.e[2], NBE_LOCK_EXCLUSIVE, 1, 0, NULL), NBE_OK);
    put(2, 1, 0, 2, NBE_OK);
    run_until_quiet();
    ck_assert_int_eq(S.mem[1][0], 0);                  /* not granted yet */
    ck_assert_int_eq(nbe_istart(S.e[0], t, 1, 0, NULL), NBE_OK);
    put(0, 1, 0, 1, NBE_OK);
    ck_assert_int_eq(nbe_icomplete(S.e[0], &c), NBE_OK);
    wait_req(c);
    wait_req(w);
    ck_assert_int_eq(nbe_iunlock(S.e[2], 1, &u), NBE_OK);
    wait_req(u);
    ck_assert_int_eq(S.mem[1][0], 2);                  /* the lock epoch came after the exposure */
    sim_fini();
}
END_TEST

/* MPICH rma/reqops: a process may close a fence epoch while the others still
 * hold lock_all epochs on it that precede their own fence calls */
START_TEST(fence_close_does_not_block_earlier_locks)
{
    sim_init(3, 0);
    nbe_req_t *f0a, *f0b, *u1, *u2, *f[3][2];
    ck_assert_int_eq(nbe_ilock_all(S.e[1], 0, NULL), NBE_OK);
    ck_assert_int_eq(nbe_ilock_all(S.e[2], 0, NULL), NBE_OK);
    /* 0 runs ahead: opens and closes a fence epoch before the lock requests arrive */
    ck_assert_int_eq(nbe_ifence(S.e[0], 0, &f0a), NBE_OK);
    ck_assert_int_eq(nbe_ifence(S.e[0], 0, &f0b), NBE_OK);
    put(1, 0, 0, 10, NBE_OK);
    put(2, 0, 1, 20, NBE_OK);
    ck_assert_int_eq(nbe_iunlock_all(S.e[1], &u1), NBE_OK);
    ck_assert_int_eq(nbe_iunlock_all(S.e[2], &u2), NBE_OK);
    wait_req(u1);
    wait_req(u2);
    ck_assert_int_eq(S.mem[0][0], 10);
    ck_assert_int_eq(S.mem[0][1], 20);
    for (int p = 1; p < 3; ++p) {
        ck_assert_int_eq(nbe_ifence(S.e[p], 0, &f[p][0]), NBE_OK);
        ck_assert_int_eq(nbe_ifence(S.e[p], 0, &f[p][1]), NBE_OK);
    }
    wait_req(f0a);
    wait_req(f0b);
    for (int p = 1; p < 3; ++p) {
        wait_req(f[p][0]);
        wait_req(f[p][1]);
    }
    sim_fini();
}
END_TEST

/* ---------------------------------------------------------------- */
/* out of memory while a message is handled: the engine fails, and says so
 * from every later call instead of crashing or waiting for ever */

/* deliver the next message with every allocation failing */
static void deliver_without_memory(void)
{
    msg_t *m = S.q;
    ck_assert_ptr_nonnull(m);
    S.q = m->next;
    S.qlen--;
    fail_allocs = 1;
    if (m->is_op) nbe_on_op_arrived(S.e[m->dst], m->src, m->fence_tag);
    else nbe_on_ctrl(S.e[m->dst], &m->ctrl);
    fail_allocs = 0;
    free(m);
}

static void assert_failed(nbe_engine_t *e)
{
    nbe_req_t *r = NULL;
    ck_assert_int_eq(nbe_engine_failed(e), NBE_ERR_NOMEM);
    ck_assert_int_eq(nbe_progress(e), NBE_ERR_NOMEM);
    ck_assert_int_eq(nbe_ifence(e, 0, &r), NBE_ERR_NOMEM);
    ck_assert_int_eq(nbe_ilock(e, NBE_LOCK_SHARED, 0, 0, &r), NBE_ERR_NOMEM);
    ck_assert_int_eq(nbe_check_access(e, 0), NBE_ERR_NOMEM);
    ck_assert_ptr_null(r);
}

START_TEST(lock_request_without_memory)
{
    sim_init(2, 0);
    ck_assert_int_eq(nbe_ilock(S.e[0], NBE_LOCK_EXCLUSIVE, 1, 0, NULL), NBE_OK);
    deliver_without_memory();   /* the LOCK_REQ: no waiter record */
    assert_failed(S.e[1]);
    ck_assert_int_eq(nbe_engine_failed(S.e[0]), 0);
    run_until_quiet();
    sim_fini();
}
END_TEST

START_TEST(new_peer_without_memory)
{
    sim_init(3, 0);
    nbe_req_t *r = NULL;
    /* a NOCHECK lock sends no request: the put is the first message from 2 */
    ck_assert_int_eq(nbe_ilock(S.e[2], NBE_LOCK_SHARED, 0, NBE_MODE_NOCHECK, NULL), NBE_OK);
    put(2, 0, 5, 9, NBE_OK);
    ck_assert_int_eq(S.q->is_op, 1);
    deliver_without_memory();   /* no memory for the target's trait of rank 2 */
    assert_failed(S.e[0]);
    ck_assert_int_eq(nbe_iunlock(S.e[0], 1, &r), NBE_ERR_NOMEM);
    run_until_quiet();
    sim_fini();
}
END_TEST

START_TEST(done_without_memory)
{
    sim_init(2, 0);
    int origin = 0, target = 1;
    nbe_req_t *rc = NULL, *rw = NULL;
    ck_assert_int_eq(nbe_ipost(S.e[target], &origin, 1, 0, NULL), NBE_OK);
    ck_assert_int_eq(nbe_istart(S.e[origin], &target, 1, 0, NULL), NBE_OK);
    run_until_quiet();
    put(origin, target, 3, 7, NBE_OK);
    ck_assert_int_eq(nbe_icomplete(S.e[origin], &rc), NBE_OK);
    while (S.q && !(!S.q->is_op && NBE_CTRL_DONE == S.q->ctrl.type)) deliver_one();
    deliver_without_memory();   /* the DONE: no room in the DONE queue */
    assert_failed(S.e[target]);
    ck_assert_int_eq(nbe_iwait(S.e[target], &rw), NBE_ERR_NOMEM);
    ck_assert_ptr_null(rw);
    run_until_quiet();
    ck_assert(rc->complete);   /* the origin's side is unaffected */
    nbe_req_free(rc);
    sim_fini();
}
END_TEST

/* a peer's failure (NBE_AM_FAILED in the glue) fails a waiting fence with
 * NBE_ERR_PEER; it does not replace an engine's own out-of-memory code */
START_TEST(peer_failure_ends_waits)
{
    sim_init(2, 0);
    nbe_req_t *r = NULL, *r1 = NULL;
    ck_assert_int_eq(nbe_ifence(S.e[0], 0, &r), NBE_OK);
    ck_assert_int_eq(nbe_ifence(S.e[1], 0, &r1), NBE_OK);
    run_until_quiet();
    nbe_req_free(r);
    nbe_req_free(r1);
    put(0, 1, 0, 5, NBE_OK);
    ck_assert_int_eq(nbe_ifence(S.e[0], 0, &r), NBE_OK);
    run_until_quiet();
    ck_assert(!r->complete);   /* 1 never enters the closing fence */
    nbe_engine_fail_peer(S.e[0]);
    ck_assert_int_eq(nbe_engine_failed(S.e[0]), NBE_ERR_PEER);
    ck_assert_int_lt(nbe_progress(S.e[0]), 0);
    ck_assert_int_eq(nbe_ilock(S.e[0], NBE_LOCK_SHARED, 1, 0, NULL), NBE_ERR_PEER);
    nbe_req_free(r);
    nbe_engine_fail(S.e[1]);
    nbe_engine_fail_peer(S.e[1]);
    ck_assert_int_eq(nbe_engine_failed(S.e[1]), NBE_ERR_NOMEM);
    sim_fini();
}
END_TEST

/* a message the transport cannot deliver fails the window with its own
 * code, which a later peer failure does not overwrite */
START_TEST(transport_failure_ends_waits)
{
    sim_init(2, 0);
    nbe_req_t *r = NULL;
    ck_assert_int_eq(nbe_ilock(S.e[0], NBE_LOCK_EXCLUSIVE, 1, 0, &r), NBE_OK);
    nbe_engine_fail_comm(S.e[0]);   /* say the LOCK_REQ could not be sent */
    nbe_engine_fail_peer(S.e[0]);
    ck_assert_int_eq(nbe_engine_failed(S.e[0]), NBE_ERR_COMM);
    ck_assert_int_lt(nbe_progress(S.e[0]), 0);
    ck_assert(!r->complete);
    ck_assert_int_eq(nbe_ifence(S.e[0], 0, NULL), NBE_ERR_COMM);
    nbe_req_free(r);
    sim_fini();
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("nbe_engine");
    TCase *tc = tcase_create("core");
    tcase_add_loop_test(tc, fence_all_to_all, 0, 2);
    tcase_add_test(tc, fence_waits_for_late_peer);
    tcase_add_test(tc, ops_recorded_until_granted);
    tcase_add_loop_test(tc, pscw_basic, 0, 2);
    tcase_add_test(tc, epoch_ids_far_ahead_target);
    tcase_add_loop_test(tc, lock_exclusive_serializes, 0, 2);
    tcase_add_test(tc, lock_shared_concurrent);
    tcase_add_loop_test(tc, flush_completes_remotely, 0, 2);
    tcase_add_test(tc, sync_errors);
    tcase_add_test(tc, rma_direct_when_granted);
    tcase_add_test(tc, early_fence_messages);
    tcase_add_test(tc, early_pscw_messages);
    tcase_add_test(tc, pscw_done_before_post);
    tcase_add_test(tc, post_grant_is_not_lock_grant);
    tcase_add_test(tc, local_fence_sends_nothing);
    tcase_add_loop_test(tc, flush_now_fast_path, 0, 2);
    tcase_add_test(tc, traits_are_sparse);
    tcase_add_test(tc, memory_per_untouched_peer);
    tcase_add_test(tc, each_peer_info_visits_touched_peers);
    tcase_add_test(tc, fence_clean_predecessor_grants_next);
    tcase_add_test(tc, fence_implied_grants_off_by_default);
    tcase_add_test(tc, late_fence_grant_is_not_counted_later);
    tcase_add_test(tc, unlock_no_wait_when_all_acknowledged);
    tcase_add_test(tc, issuing_alone_after_acknowledgement);
    tcase_add_test(tc, awaits_target_until_acknowledged);
    tcase_add_test(tc, unlock_no_wait_keeps_every_release);
    tcase_add_loop_test(tc, deferred_epochs_fifo, 0, 2);
    tcase_add_test(tc, lock_all_lazy_legs);
    tcase_add_test(tc, ops_know_passive_epochs);
    tcase_add_test(tc, lock_nocheck);
    tcase_add_test(tc, unlock_at_once_without_request);
    tcase_add_test(tc, direct_generation_tracks_epochs);
    tcase_add_test(tc, rma_ready_answers_without_counting);
    tcase_add_test(tc, failed_engine_hands_back_recorded_ops);
    tcase_add_test(tc, flush_begin_and_reached);
    tcase_add_loop_test(tc, flush_local_and_all, 0, 2);
    tcase_add_test(tc, win_test_polls_exposure);
    tcase_add_loop_test(tc, idle_fence_then_lock, 0, 2);
    tcase_add_test(tc, implicit_fence_close_does_not_block_locks);
    tcase_add_test(tc, closing_exposure_defers_lock_grant);
    tcase_add_test(tc, fence_close_does_not_block_earlier_locks);
    tcase_add_test(tc, lock_request_without_memory);
    tcase_add_test(tc, new_peer_without_memory);
    tcase_add_test(tc, done_without_memory);
    tcase_add_test(tc, peer_failure_ends_waits);
    tcase_add_test(tc, transport_failure_ends_waits);
    tcase_add_test(tc, fence_unapplied_until_confirmed);
    tcase_add_test(tc, take_over_counts_as_ack);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    srand(12345);
    return check_run(suite());
}
