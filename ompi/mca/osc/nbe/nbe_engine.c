/*
 * nbe_engine: epoch state machines of osc/nbe (see nbe_engine.h).
 */
#include <stdlib.h>
#include <string.h>

#include "nbe_engine.h"
#include "nbe_traits.h"

/* One peer of an epoch: a target of an access epoch or an origin of an
 * exposure epoch. */
typedef struct nbe_leg {
    int      rank;
    uint64_t id;          /* per-pair epoch id (0: no grant needed, NOCHECK) */
    uint64_t unlock_seq;  /* passive: seq of the UNLOCK we sent */
    uint8_t  unlock_no_wait;  /* finished without waiting for its UNLOCK_ACK */
    uint64_t flush_thr;   /* passive: threshold of a pending flush_all */
    uint8_t  requested;   /* passive: lock requested */
    uint8_t  granted;
    uint8_t  closed_sent; /* DONE / UNLOCK sent */
    uint8_t  finished;
} nbe_leg_t;

struct nbe_epoch {
    nbe_epoch_t      *prev, *next;
    nbe_epoch_kind_t  kind;
    nbe_epoch_state_t state;
    int               app_open;   /* not yet closed by the application */
    int               implicit;   /* idle fence epoch closed by a later sync call */
    uint64_t          open_seq, close_seq;
    int               assert_bits;
    int               lock_type;
    nbe_leg_t        *legs;       /* sorted by rank */
    int               nlegs, cap_legs;
    uint64_t          fence_id;
    int               fence_granted;
    int               fence_done_sent;
    int               fence_continued;  /* closed by a fence that opened the next */
    int               fence_sent_clean; /* its FENCE_DONEs carried NBE_CTRL_FLAG_CLEAN */
    int               had_ops;
    int               closing_counted;  /* counted in closing_expo */
    nbe_op_t         *qh, *qt;    /* recorded operations, FIFO */
    size_t            queued;
    nbe_req_t        *open_req, *close_req;
};

typedef struct nbe_fence_slot {
    uint64_t grants, dones, ops_in, expected;
    uint64_t unclean;   /* FENCE_DONEs without NBE_CTRL_FLAG_CLEAN */
} nbe_fence_slot_t;

typedef struct nbe_lock_waiter {
    struct nbe_lock_waiter *next;
    int      origin;
    int      type;
    uint64_t id;
} nbe_lock_waiter_t;

enum { LK_FREE = 0, LK_SHARED, LK_EXCL };

struct nbe_engine {
    int              rank, size;
    nbe_transport_t  tx;
    void            *ctx;
    nbe_traits_t     traits;
    nbe_epoch_t     *head, *tail;
    size_t           nepochs;
    uint64_t         seq;          /* application-level open/close counter */
    uint64_t         fence_seq;
    /* counted messages sent in the current fence epoch (to any target) */
    uint64_t         fence_counted;
    /* the last fence epoch that completed clean everywhere (0: none): the
     * next one needs no FENCE_GRANT (see fence_granted) */
    uint64_t         fence_clean_id;
    uint64_t         fence_completed_id;  /* the last fence epoch completed here */
    uint64_t         fence_unapplied_n;   /* traits with fence_unapplied set */
    int              fence_implied;   /* that rule is on */
    /* UNLOCKs sent and UNLOCK_ACKs received (the engine is idle only once
     * every ack came, also for unlocks that did not wait for theirs) */
    uint64_t         unlocks_sent, unlock_acks;
    int              unlock_no_wait;  /* see nbe_engine_set_unlock_no_wait */
    nbe_fence_slot_t fslot[3];
    /* application-level open epochs */
    nbe_epoch_t     *cur_fence, *cur_start, *cur_post, *cur_lock_all;
    int              nlocks_open;
    /* target-side lock manager (strict FIFO) */
    int              lk_mode, lk_shared;
    nbe_lock_waiter_t *lkq_head, *lkq_tail;
    /* loopback of control messages to self */
    nbe_ctrl_t      *loop;
    size_t           loop_n, loop_cap;
    nbe_trait_t     *watch;        /* traits with a pending UNLOCK / FLUSH_REQ */
    nbe_req_t       *flushes;
    uint64_t         pending_local_total;
    size_t           queued_total;
    int              in_progress;
    int              closing_expo;   /* exposures closed by the app, not complete */
    volatile int64_t *expo_word;
    nbe_stats_t      stats;
    int              scan_dirty;     /* an epoch was opened, closed or changed state */
    /* Two counters with different readers: "dirty" says the progress loop has
     * an event to react to; "gen" says nbe_rma_direct's answer may have
     * changed. Arrivals and local completions make progress work without
     * changing which targets may take direct operations. */
    int              dirty;          /* an event since the last progress run */
    uint64_t         gen;            /* bumped by every change nbe_rma_direct depends on */
    int              local_fence;    /* the glue synchronizes fences itself */
    int              early_msgs;     /* messages need no grant (the target holds early ones) */
    /* engine-owned free lists: a synchronization call neither mallocs nor
     * frees in the steady state (epochs keep their legs array) */
    nbe_req_t       *free_reqs;
    nbe_epoch_t     *free_epochs;
    int              nfree_reqs, nfree_epochs;
    /* NBE_ERR_NOMEM once a message could not be recorded for want of
     * memory: the window's state is lost, every later call fails with it */
    int              failed;
    nbe_trait_t      sink;           /* what trait() gives once traits cannot grow */
};

/* a public entry point of an engine that failed returns the failure */
#define NBE_RETURN_IF_FAILED(e)                              \
    do {                                                     \
        if (__builtin_expect(0 != (e)->failed, 0)) return (e)->failed; \
    } while (0)

#define NBE_FREE_LIST_MAX 16

/* ------------------------------------------------------------------ */

static int is_passive(nbe_epoch_kind_t k)
{
    return NBE_EP_LOCK == k || NBE_EP_LOCK_ALL == k;
}

/* the first failure's code stays: it says what the window reports */
static void fail_with(nbe_engine_t *e, int code)
{
    if (0 != e->failed) return;
    e->failed = code;
    e->dirty = 1;
    e->gen++;
}

void nbe_engine_fail(nbe_engine_t *e)
{
    fail_with(e, NBE_ERR_NOMEM);
}

void nbe_engine_fail_peer(nbe_engine_t *e)
{
    fail_with(e, NBE_ERR_PEER);
}

void nbe_engine_fail_comm(nbe_engine_t *e)
{
    fail_with(e, NBE_ERR_COMM);
}

/* a peer's trait, created on first touch. Without memory for it the engine
 * fails, and the caller (which cannot return an error: it is handling a
 * message) writes into a sink nobody reads. */
static nbe_trait_t *trait(nbe_engine_t *e, int rank)
{
    nbe_trait_t *tr = nbe_traits_get(&e->traits, rank);
    if (__builtin_expect(NULL != tr, 1)) return tr;
    nbe_engine_fail(e);
    memset(&e->sink, 0, sizeof(e->sink));
    e->sink.rank = rank;
    e->sink.watched = 1;   /* never linked into the watch list */
    return &e->sink;
}

/* the transport's answer (0: on its way without us, 1: queued here), 1 for
 * a message looped back to self or not sent (failed engine) */
static int send_ctrl(nbe_engine_t *e, int peer, int type, uint64_t a, uint64_t b,
                     int lock_type, int flags)
{
    nbe_ctrl_t m;
    memset(&m, 0, sizeof(m));
    m.type = (uint8_t) type;
    m.lock_type = (uint8_t) lock_type;
    m.flags = (uint8_t) flags;
    m.src = e->rank;
    m.a = a;
    m.b = b;
    /* a failed engine's state is incomplete: what it would send may be wrong
     * (a FENCE_DONE counting ops a lost trait held) */
    if (e->failed) return 1;
    e->stats.ctrl_sent++;
    if (peer == e->rank) {
        if (e->loop_n == e->loop_cap) {
            size_t ncap = e->loop_cap ? 2 * e->loop_cap : 16;
            nbe_ctrl_t *nl = realloc(e->loop, ncap * sizeof(*nl));
            if (NULL == nl) {   /* a control message lost: the window is */
                nbe_engine_fail(e);
                return 1;
            }
            e->loop = nl;
            e->loop_cap = ncap;
        }
        e->loop[e->loop_n++] = m;
        e->dirty = 1;
        return 1;
    }
    return e->tx.send_ctrl(e->ctx, peer, &m);
}

static nbe_req_t *req_new(nbe_engine_t *e, nbe_req_kind_t kind)
{
    nbe_req_t *r = e->free_reqs;
    if (r) {
        e->free_reqs = r->next;
        e->nfree_reqs--;
        memset(r, 0, sizeof(*r));
    } else {
        r = calloc(1, sizeof(*r));
        if (NULL == r) return NULL;
    }
    r->kind = kind;
    r->target = -1;
    r->owner = e;
    return r;
}

static void req_done(nbe_engine_t *e, nbe_req_t *r)
{
    if (NULL == r || r->complete) return;
    r->complete = 1;
    if (e->tx.req_complete) e->tx.req_complete(e->ctx, r);
}

void nbe_req_free(nbe_req_t *req)
{
    if (NULL == req) return;
    nbe_engine_t *e = req->owner;
    if (e && e->nfree_reqs < NBE_FREE_LIST_MAX) {
        req->next = e->free_reqs;
        e->free_reqs = req;
        e->nfree_reqs++;
        return;
    }
    free(req);
}

/* ------------------------------------------------------------------ */
/* legs */

static nbe_leg_t *leg_find(nbe_epoch_t *ep, int rank)
{
    int lo = 0, hi = ep->nlegs - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        if (ep->legs[mid].rank == rank) return &ep->legs[mid];
        if (ep->legs[mid].rank < rank) lo = mid + 1;
        else hi = mid - 1;
    }
    return NULL;
}

static nbe_leg_t *leg_insert(nbe_epoch_t *ep, int rank)
{
    nbe_leg_t *l = leg_find(ep, rank);   /* callers bump the generation */
    if (l) return l;
    if (ep->nlegs == ep->cap_legs) {
        int ncap = ep->cap_legs ? 2 * ep->cap_legs : 4;
        nbe_leg_t *nl = realloc(ep->legs, (size_t) ncap * sizeof(*nl));
        if (NULL == nl) return NULL;
        ep->legs = nl;
        ep->cap_legs = ncap;
    }
    int pos = 0;
    while (pos < ep->nlegs && ep->legs[pos].rank < rank) pos++;
    memmove(&ep->legs[pos + 1], &ep->legs[pos], (size_t) (ep->nlegs - pos) * sizeof(nbe_leg_t));
    memset(&ep->legs[pos], 0, sizeof(nbe_leg_t));
    ep->legs[pos].rank = rank;
    ep->nlegs++;
    return &ep->legs[pos];
}

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *) a, y = *(const int *) b;
    return (x > y) - (x < y);
}

void nbe_sort_ranks(int *ranks, int n)
{
    if (n > 1) qsort(ranks, (size_t) n, sizeof(int), cmp_int);
}

static int strictly_increasing(const int *ranks, int n)
{
    for (int i = 1; i < n; ++i) {
        if (ranks[i - 1] >= ranks[i]) return 0;
    }
    return 1;
}

static int legs_from_ranks(nbe_epoch_t *ep, const int *ranks, int n)
{
    if (n <= 0) return NBE_OK;
    int *tmp = NULL;
    if (!strictly_increasing(ranks, n)) {
        /* the glue usually passes sorted groups; sort a copy otherwise */
        tmp = malloc((size_t) n * sizeof(int));
        if (NULL == tmp) return NBE_ERR_NOMEM;
        memcpy(tmp, ranks, (size_t) n * sizeof(int));
        nbe_sort_ranks(tmp, n);
        ranks = tmp;
    }
    if (ep->cap_legs < n) {
        nbe_leg_t *nl = realloc(ep->legs, (size_t) n * sizeof(nbe_leg_t));
        if (NULL == nl) {
            free(tmp);
            return NBE_ERR_NOMEM;
        }
        ep->legs = nl;
        ep->cap_legs = n;
    }
    memset(ep->legs, 0, (size_t) n * sizeof(nbe_leg_t));
    for (int i = 0; i < n; ++i) {
        if (ep->nlegs > 0 && ep->legs[ep->nlegs - 1].rank == ranks[i]) continue;
        ep->legs[ep->nlegs++].rank = ranks[i];
    }
    free(tmp);
    return NBE_OK;
}

/* ------------------------------------------------------------------ */
/* epoch list */

static nbe_epoch_t *epoch_new(nbe_engine_t *e, nbe_epoch_kind_t kind, int assert_bits)
{
    nbe_epoch_t *ep = e->free_epochs;
    if (ep) {
        e->free_epochs = ep->next;
        e->nfree_epochs--;
        /* a struct copy, not memset: glibc/GCC clear 136 bytes with
         * "rep stos", whose start-up cost was 11 % of a lock/unlock cycle */
        static const nbe_epoch_t zero_epoch;
        nbe_leg_t *legs = ep->legs;
        int cap = ep->cap_legs;
        *ep = zero_epoch;
        ep->legs = legs;
        ep->cap_legs = cap;
    } else {
        ep = calloc(1, sizeof(*ep));
        if (NULL == ep) return NULL;
    }
    ep->kind = kind;
    ep->state = NBE_EPOCH_DEFERRED;
    ep->app_open = 1;
    ep->assert_bits = assert_bits;
    ep->open_seq = ++e->seq;
    return ep;
}

/* back to the free list (or the heap) */
static void epoch_release(nbe_engine_t *e, nbe_epoch_t *ep)
{
    if (e->nfree_epochs < NBE_FREE_LIST_MAX && ep->cap_legs <= 64) {
        ep->next = e->free_epochs;
        e->free_epochs = ep;
        e->nfree_epochs++;
        return;
    }
    free(ep->legs);
    free(ep);
}

static void epoch_append(nbe_engine_t *e, nbe_epoch_t *ep)
{
    e->gen++;
    ep->prev = e->tail;
    ep->next = NULL;
    if (e->tail) e->tail->next = ep;
    else e->head = ep;
    e->tail = ep;
    e->nepochs++;
    e->scan_dirty = 1;
    e->stats.epochs_opened++;
}

static void set_closing(nbe_engine_t *e, int delta)
{
    e->closing_expo += delta;
    if (e->expo_word) __atomic_store_n(e->expo_word, (int64_t) e->closing_expo, __ATOMIC_SEQ_CST);
}

static void epoch_close_app(nbe_engine_t *e, nbe_epoch_t *ep, nbe_req_t *req)
{
    e->gen++;
    e->scan_dirty = 1;
    ep->app_open = 0;
    ep->close_seq = ++e->seq;
    ep->close_req = req;
    /* only PSCW exposures: MPI forbids locking an exposed window, so this
     * cannot stall a correct program. Fence epochs are not counted: others may
     * still hold passive epochs opened before their matching fence call
     * (e.g. MPICH rma/reqops), and waiting for them would deadlock. */
    if (NBE_EP_POST == ep->kind && NBE_EPOCH_COMPLETE != ep->state) {
        ep->closing_counted = 1;
        set_closing(e, 1);
    }
}

/* A fence epoch is granted by every peer's FENCE_GRANT, sent when that
 * peer activates it (its previous fence epoch complete, so no earlier
 * access can land after ours). It is granted at once when the previous
 * fence epoch completed clean: every process closed it with the fence call
 * that opened this one, having sent no counted message in it (every access
 * was complete at its target when issued: RDMA completed in the BTL call,
 * shared-memory or self stores). Then every access of that epoch is in
 * place and every process is inside the fence call, as after a barrier. */
static int fence_granted(nbe_engine_t *e, nbe_epoch_t *ep)
{
    if (ep->fence_granted) return 1;
    if (0 != e->fence_clean_id && e->fence_clean_id + 1 == ep->fence_id) {
        /* counted whether or not the grants came first: the count says
         * which epochs qualified, whatever the timing */
        ep->fence_granted = 1;
        e->stats.fence_grants_implied++;
    } else if (e->fslot[ep->fence_id % 3].grants >= (uint64_t) (e->size - 1)) {
        ep->fence_granted = 1;
    }
    return ep->fence_granted;
}

/* the target's grant for an access leg has arrived: a post for a start
 * epoch, a lock grant for a lock or lock_all leg */
static int leg_grant_arrived(nbe_engine_t *e, const nbe_epoch_t *ep, const nbe_leg_t *l)
{
    const nbe_trait_t *tr = trait(e, l->rank);
    return (NBE_EP_START == ep->kind ? tr->C_e : tr->C_lock) >= l->id;
}

static int target_granted(nbe_engine_t *e, nbe_epoch_t *ep, int target)
{
    if (NBE_EPOCH_ACTIVE != ep->state) return 0;
    if (NBE_EP_FENCE == ep->kind) {
        return target == e->rank || fence_granted(e, ep);
    }
    nbe_leg_t *l = leg_find(ep, target);
    if (NULL == l || !l->requested) return 0;
    if (!l->granted && leg_grant_arrived(e, ep, l)) l->granted = 1;
    return l->granted;
}

static int issue_op(nbe_engine_t *e, nbe_epoch_t *ep, nbe_op_t *op)
{
    int target = op->target;
    nbe_trait_t *tr = trait(e, target);
    int is_fence = NBE_EP_FENCE == ep->kind;
    op->fence_tag = is_fence ? ep->fence_id : 0;
    op->passive = is_passive(ep->kind);
    op->next = NULL;
    tr->pending_local++;
    e->pending_local_total++;
    int n = e->tx.issue(e->ctx, op);   /* op may be gone after this */
    if (n < 0) {
        tr->pending_local--;
        e->pending_local_total--;
        return n;
    }
    if (is_fence) {
        tr->fence_ops_out += (uint64_t) n;
        e->fence_counted += (uint64_t) n;
    } else {
        tr->ops_out += (uint64_t) n;
    }
    e->stats.ops_issued++;
    return NBE_OK;
}

/* issue the recorded operations whose target has granted */
static int issue_ready(nbe_engine_t *e, nbe_epoch_t *ep)
{
    int changed = 0;
    nbe_op_t *prev = NULL, *op = ep->qh;
    if (NBE_EPOCH_ACTIVE != ep->state) return 0;
    while (op) {
        nbe_op_t *next = op->next;
        if (target_granted(e, ep, op->target)) {
            if (prev) prev->next = next;
            else ep->qh = next;
            if (ep->qt == op) ep->qt = prev;
            ep->queued--;
            e->queued_total--;
            (void) issue_op(e, ep, op);
            changed = 1;
        } else {
            prev = op;
        }
        op = next;
    }
    return changed;
}

static int queued_to(nbe_epoch_t *ep, int target)
{
    for (nbe_op_t *op = ep->qh; op; op = op->next) {
        if (op->target == target) return 1;
    }
    return 0;
}

static void request_lock_leg(nbe_engine_t *e, nbe_epoch_t *ep, nbe_leg_t *l)
{
    nbe_trait_t *tr = trait(e, l->rank);
    l->requested = 1;
    if (ep->assert_bits & NBE_MODE_NOCHECK) {
        l->id = 0;
        l->granted = 1;
        return;
    }
    l->id = ++tr->lock_seq;
    send_ctrl(e, l->rank, NBE_CTRL_LOCK_REQ, l->id, 0,
              NBE_EP_LOCK_ALL == ep->kind ? NBE_LOCK_SHARED : ep->lock_type, 0);
}

/* ------------------------------------------------------------------ */
/* activation (Rule 8 FIFO; concurrency only between epochs that MPI-3
 * lets the application keep open at the same time) */

static int concurrent_ok(const nbe_epoch_t *a, const nbe_epoch_t *e)
{
    if (NBE_EP_FENCE == a->kind) return a->implicit && NBE_EP_FENCE != e->kind;
    if (NBE_EP_FENCE == e->kind) return 0;
    int overlapped = 0 == a->close_seq || a->close_seq > e->open_seq;
    if (!overlapped) return 0;
    int a_exp = NBE_EP_POST == a->kind, e_exp = NBE_EP_POST == e->kind;
    if (a_exp != e_exp) return 1;
    if (NBE_EP_LOCK == a->kind && NBE_EP_LOCK == e->kind) {
        return a->legs[0].rank != e->legs[0].rank;
    }
    return 0;
}

static int can_activate(nbe_engine_t *e, nbe_epoch_t *ep)
{
    for (nbe_epoch_t *a = e->head; a && a != ep; a = a->next) {
        if (NBE_EPOCH_DEFERRED == a->state) return 0;
        if (NBE_EPOCH_ACTIVE == a->state && !concurrent_ok(a, ep)) return 0;
    }
    return 1;
}

static void activate(nbe_engine_t *e, nbe_epoch_t *ep)
{
    ep->state = NBE_EPOCH_ACTIVE;
    switch (ep->kind) {
    case NBE_EP_FENCE:
        ep->fence_id = ++e->fence_seq;
        if (e->local_fence) {
            ep->fence_granted = 1;
            break;
        }
        for (int r = 0; r < e->size; ++r) {
            if (r != e->rank) send_ctrl(e, r, NBE_CTRL_FENCE_GRANT, ep->fence_id, 0, 0, 0);
        }
        break;
    case NBE_EP_START:
        for (int i = 0; i < ep->nlegs; ++i) {
            ep->legs[i].id = ++trait(e, ep->legs[i].rank)->access_seq;
            ep->legs[i].requested = 1;
        }
        break;
    case NBE_EP_POST:
        for (int i = 0; i < ep->nlegs; ++i) {
            nbe_trait_t *tr = trait(e, ep->legs[i].rank);
            ep->legs[i].id = ++tr->grant_seq;
            send_ctrl(e, ep->legs[i].rank, NBE_CTRL_GRANT, ep->legs[i].id, 0, 0, 0);
        }
        break;
    case NBE_EP_LOCK:
    case NBE_EP_LOCK_ALL:
        for (int i = 0; i < ep->nlegs; ++i) request_lock_leg(e, ep, &ep->legs[i]);
        break;
    }
    /* after the state it stands for (fence_seq, grant_seq) has changed: the
     * glue re-examines held frames when it sees a new generation */
    e->gen++;
    if (ep->open_req && NBE_EP_LOCK != ep->kind) {
        req_done(e, ep->open_req);
        ep->open_req = NULL;
    }
}

static int activate_scan(nbe_engine_t *e)
{
    int changed = 0;
    for (nbe_epoch_t *ep = e->head; ep; ep = ep->next) {
        if (NBE_EPOCH_DEFERRED != ep->state) continue;
        if (!can_activate(e, ep)) break;
        activate(e, ep);
        changed = 1;
    }
    return changed;
}

/* ------------------------------------------------------------------ */
/* per-epoch progress */

static int step_fence(nbe_engine_t *e, nbe_epoch_t *ep)
{
    int changed = 0;
    nbe_fence_slot_t *s = &e->fslot[ep->fence_id % 3];
    if (!ep->fence_granted && fence_granted(e, ep)) changed = 1;
    changed |= issue_ready(e, ep);
    if (e->local_fence) {
        /* operations count no messages here; the glue's barrier after this
         * epoch completes is the synchronization */
        if (!ep->app_open && NULL == ep->qh && 0 == e->pending_local_total) {
            ep->state = NBE_EPOCH_COMPLETE;
            changed = 1;
        }
        return changed;
    }
    if (!ep->app_open && !ep->fence_done_sent && NULL == ep->qh) {
        ep->fence_sent_clean = e->fence_implied && ep->fence_continued && 0 == e->fence_counted;
        e->fence_counted = 0;
        for (int r = 0; r < e->size; ++r) {
            if (r == e->rank) continue;
            nbe_trait_t *tr = nbe_traits_find(&e->traits, r);
            uint64_t n = 0;
            if (tr) {
                n = tr->fence_ops_out;
                tr->fence_ops_out = 0;
                if (n) {
                    if (0 == tr->fence_unapplied) e->fence_unapplied_n++;
                    tr->fence_unapplied = ep->fence_id;
                    tr->fence_unapplied_ops = tr->ops_out;
                }
            }
            send_ctrl(e, r, NBE_CTRL_FENCE_DONE, ep->fence_id, n, 0,
                      ep->fence_sent_clean ? NBE_CTRL_FLAG_CLEAN : 0);
        }
        ep->fence_done_sent = 1;
        changed = 1;
    }
    if (ep->fence_done_sent && 0 == e->pending_local_total &&
        s->dones >= (uint64_t) (e->size - 1) && s->ops_in >= s->expected) {
        e->fence_clean_id = ep->fence_sent_clean && 0 == s->unclean ? ep->fence_id : 0;
        e->fence_completed_id = ep->fence_id;
        memset(s, 0, sizeof(*s));
        ep->state = NBE_EPOCH_COMPLETE;
        changed = 1;
    }
    return changed;
}

/* With early messages a start epoch's DONE need not wait for its grant:
 * every operation has left (nothing recorded), tagged with this epoch's id
 * where it went early, and the target matches the DONE to its exposure by
 * id (exposure_leg_done). The origin may run only NBE_EARLY_DONE_AHEAD
 * epochs past the target's last post, so what the target holds for posts
 * it has not made yet stays bounded by about two epochs of operations. */
#define NBE_EARLY_DONE_AHEAD 1
static int early_done_allowed(const nbe_engine_t *e, const nbe_trait_t *tr, const nbe_leg_t *l)
{
    return e->early_msgs && tr->C_e + NBE_EARLY_DONE_AHEAD >= l->id;
}

static int step_start(nbe_engine_t *e, nbe_epoch_t *ep)
{
    int changed = issue_ready(e, ep);
    int all = 1;
    for (int i = 0; i < ep->nlegs; ++i) {
        nbe_leg_t *l = &ep->legs[i];
        nbe_trait_t *tr = trait(e, l->rank);
        if (!l->granted && leg_grant_arrived(e, ep, l)) {
            l->granted = 1;
            changed = 1;
        }
        if (!ep->app_open && !l->closed_sent && NULL == ep->qh &&
            (l->granted || early_done_allowed(e, tr, l))) {
            send_ctrl(e, l->rank, NBE_CTRL_DONE, l->id, tr->ops_out, 0, 0);
            l->closed_sent = 1;
            changed = 1;
        }
        if (!l->closed_sent || tr->pending_local) all = 0;
    }
    if (changed) changed |= issue_ready(e, ep);
    if (!ep->app_open && all && NULL == ep->qh) {
        ep->state = NBE_EPOCH_COMPLETE;
        changed = 1;
    }
    return changed;
}

/* An exposure leg is finished once its origin's DONE for the same epoch
 * id has arrived and every counted message that DONE announced has been
 * applied. DONEs wait in the trait's queue, sorted by id: an origin may
 * send DONEs of later epochs before this exposure is posted. Marks the leg
 * finished and consumes the DONE; 1 if the leg is finished. */
static int exposure_leg_done(nbe_engine_t *e, nbe_leg_t *l)
{
    nbe_trait_t *tr;
    const nbe_done_t *d;
    if (l->finished) return 1;
    tr = trait(e, l->rank);
    d = nbe_trait_first_done(tr);
    if (NULL == d || d->id != l->id || tr->ops_in < d->ops) return 0;
    nbe_trait_pop_done(tr);
    l->finished = 1;
    return 1;
}

static int step_post(nbe_engine_t *e, nbe_epoch_t *ep)
{
    int changed = 0, all = 1;
    for (int i = 0; i < ep->nlegs; ++i) {
        nbe_leg_t *l = &ep->legs[i];
        if (!l->finished) {
            if (exposure_leg_done(e, l)) {
                changed = 1;
            } else {
                all = 0;
            }
        }
    }
    if (all && !ep->app_open) {
        ep->state = NBE_EPOCH_COMPLETE;
        changed = 1;
    }
    return changed;
}

/* every counted message to the peer acknowledged (applied there) and no
 * issued operation to it still to complete locally */
static int trait_quiet(const nbe_trait_t *tr)
{
    return tr->ops_out <= tr->flush_acked && 0 == tr->pending_local;
}

/* NOCHECK leg of a closed passive epoch: the target holds no lock state for
 * us; with nothing recorded, in flight or unacknowledged there is nothing
 * to send or wait for */
static int nocheck_leg_idle(const nbe_epoch_t *ep, const nbe_leg_t *l, const nbe_trait_t *tr)
{
    return 0 == l->id && !l->closed_sent && NULL == ep->qh && trait_quiet(tr);
}

static int nocheck_leg_done(const nbe_epoch_t *ep, const nbe_leg_t *l, const nbe_trait_t *tr)
{
    return !ep->app_open && nocheck_leg_idle(ep, l, tr);
}

static int step_passive(nbe_engine_t *e, nbe_epoch_t *ep)
{
    int changed = 0, all = 1;
    for (int i = 0; i < ep->nlegs; ++i) {
        nbe_leg_t *l = &ep->legs[i];
        if (l->requested && !l->granted && leg_grant_arrived(e, ep, l)) {
            l->granted = 1;
            changed = 1;
        }
    }
    if (NBE_EP_LOCK == ep->kind && ep->open_req && ep->legs[0].granted) {
        req_done(e, ep->open_req);
        ep->open_req = NULL;
    }
    changed |= issue_ready(e, ep);
    for (int i = 0; i < ep->nlegs; ++i) {
        nbe_leg_t *l = &ep->legs[i];
        nbe_trait_t *tr = trait(e, l->rank);
        if (nocheck_leg_done(ep, l, tr)) {
            l->closed_sent = 1;
            l->finished = 1;
            changed = 1;
        }
        if (!ep->app_open && l->granted && !l->closed_sent && NULL == ep->qh) {
            l->unlock_seq = ++tr->unlock_seq;
            e->unlocks_sent++;
            int queued = send_ctrl(e, l->rank, NBE_CTRL_UNLOCK, l->unlock_seq, tr->ops_out, 0,
                                   0 == l->id ? NBE_CTRL_FLAG_NOCHECK : 0);
            l->closed_sent = 1;
            /* every counted message to rank acknowledged and nothing in
             * flight: the target has all it needs to release at once (on
             * arrival, see NBE_CTRL_UNLOCK), and nothing of ours remains
             * to complete there. The UNLOCK must be on its way, not in a
             * queue of ours: the release would wait for our next call. */
            l->unlock_no_wait = e->unlock_no_wait && 0 == queued && l->rank != e->rank &&
                                trait_quiet(tr);
            if (l->unlock_no_wait) e->stats.unlocks_no_wait++;
            changed = 1;
        }
        if (l->closed_sent && !l->finished &&
            (l->unlock_no_wait || tr->unlock_acked >= l->unlock_seq) && 0 == tr->pending_local) {
            l->finished = 1;
            changed = 1;
        }
        if (!l->finished) all = 0;
    }
    if (!ep->app_open && all && NULL == ep->qh) {
        ep->state = NBE_EPOCH_COMPLETE;
        changed = 1;
    }
    return changed;
}

static void finish_epoch(nbe_engine_t *e, nbe_epoch_t *ep)
{
    e->gen++;
    if (ep->prev) ep->prev->next = ep->next;
    else e->head = ep->next;
    if (ep->next) ep->next->prev = ep->prev;
    else e->tail = ep->prev;
    e->nepochs--;
    if (ep->closing_counted) set_closing(e, -1);
    req_done(e, ep->open_req);
    req_done(e, ep->close_req);
    /* flushes bound to this epoch are complete with it */
    nbe_req_t **pp = &e->flushes;
    while (*pp) {
        nbe_req_t *r = *pp;
        if (r->ep == ep) {
            *pp = r->next;
            req_done(e, r);
        } else {
            pp = &r->next;
        }
    }
    if (e->cur_fence == ep) e->cur_fence = NULL;
    e->scan_dirty = 1;
    epoch_release(e, ep);
}

/* ------------------------------------------------------------------ */
/* target side */

static void watch(nbe_engine_t *e, nbe_trait_t *tr)
{
    if (tr->watched) return;
    tr->watched = 1;
    tr->watch_next = e->watch;
    e->watch = tr;
}

static void lock_release(nbe_engine_t *e)
{
    if (LK_EXCL == e->lk_mode) {
        e->lk_mode = LK_FREE;
    } else if (LK_SHARED == e->lk_mode && --e->lk_shared <= 0) {
        e->lk_shared = 0;
        e->lk_mode = LK_FREE;
    }
}

static int lock_try_grant(nbe_engine_t *e)
{
    int changed = 0;
    if (e->closing_expo > 0) return 0;   /* an exposure is ending: no lock overlaps it */
    while (e->lkq_head) {
        nbe_lock_waiter_t *w = e->lkq_head;
        if (NBE_LOCK_EXCLUSIVE == w->type && LK_FREE == e->lk_mode) {
            e->lk_mode = LK_EXCL;
        } else if (NBE_LOCK_SHARED == w->type && LK_EXCL != e->lk_mode) {
            e->lk_mode = LK_SHARED;
            e->lk_shared++;
        } else {
            break;
        }
        e->lkq_head = w->next;
        if (NULL == e->lkq_head) e->lkq_tail = NULL;
        nbe_trait_t *tr = trait(e, w->origin);
        if (w->id > tr->lock_grant_seq) tr->lock_grant_seq = w->id;
        e->gen++;   /* held early messages of this lock may be applied now */
        send_ctrl(e, w->origin, NBE_CTRL_LOCK_GRANT, w->id, 0, 0, 0);
        free(w);
        changed = 1;
    }
    return changed;
}

/* a pending FLUSH_REQ whose announced operations have all arrived */
static int flush_ack_if_ready(nbe_engine_t *e, nbe_trait_t *tr)
{
    if (!tr->flush_req_pending || tr->ops_in < tr->flush_req_ops) return 0;
    send_ctrl(e, tr->rank, NBE_CTRL_FLUSH_ACK, 0, tr->ops_in, 0, 0);
    tr->flush_req_pending = 0;
    return 1;
}

static int process_watch(nbe_engine_t *e)
{
    int changed = 0;
    nbe_trait_t **pp = &e->watch;
    while (*pp) {
        nbe_trait_t *tr = *pp;
        if (tr->unlock_req_seq && tr->ops_in >= tr->unlock_req_ops) {
            if (tr->unlock_req_release) lock_release(e);
            send_ctrl(e, tr->rank, NBE_CTRL_UNLOCK_ACK, tr->unlock_req_seq, tr->ops_in, 0, 0);
            tr->unlock_req_seq = 0;
            changed = 1;
        }
        changed |= flush_ack_if_ready(e, tr);
        if (0 == tr->unlock_req_seq && !tr->flush_req_pending) {
            *pp = tr->watch_next;
            tr->watched = 0;
            tr->watch_next = NULL;
        } else {
            pp = &tr->watch_next;
        }
    }
    return changed;
}

static void fence_unapplied_clear(nbe_engine_t *e, nbe_trait_t *tr)
{
    if (0 != tr->fence_unapplied) {
        tr->fence_unapplied = 0;
        e->fence_unapplied_n--;
    }
}

/* target acknowledged ops of our counted messages: applied there. One sent
 * after a fence's messages arrived after them (one BTL, in order), so those
 * are applied too. */
static void note_acked(nbe_engine_t *e, nbe_trait_t *tr, uint64_t ops)
{
    if (ops > tr->flush_acked) tr->flush_acked = ops;
    if (0 != tr->fence_unapplied && tr->flush_acked > tr->fence_unapplied_ops) {
        fence_unapplied_clear(e, tr);
    }
}

uint64_t nbe_fence_unapplied(const nbe_engine_t *e, int target)
{
    if (__builtin_expect(0 == e->fence_unapplied_n, 1)) return 0;
    const nbe_trait_t *tr = nbe_traits_find(&e->traits, target);
    return NULL == tr ? 0 : tr->fence_unapplied;
}

void nbe_fence_applied(nbe_engine_t *e, int target, uint64_t completed_id)
{
    nbe_trait_t *tr = nbe_traits_find(&e->traits, target);
    if (NULL != tr && 0 != tr->fence_unapplied && completed_id >= tr->fence_unapplied) {
        fence_unapplied_clear(e, tr);
    }
}

/* an unlock of target sent and not acked whose leg needed a grant: the
 * target's lock manager releases on it */
static int checked_unlock_pending(const nbe_engine_t *e, int target)
{
    for (const nbe_epoch_t *ep = e->head; ep; ep = ep->next) {
        if (!is_passive(ep->kind)) continue;
        const nbe_leg_t *l = leg_find((nbe_epoch_t *) ep, target);
        if (NULL != l && l->closed_sent && !l->finished && 0 != l->id) return 1;
    }
    return 0;
}

int nbe_take_over_possible(const nbe_engine_t *e, int target, uint64_t nops)
{
    if (e->failed || 0 == nops) return 0;
    const nbe_trait_t *tr = nbe_traits_find(&e->traits, target);
    if (NULL == tr || tr->ops_out - tr->flush_acked != nops || 0 != tr->pending_local) return 0;
    return !checked_unlock_pending(e, target);
}

void nbe_take_over(nbe_engine_t *e, int target)
{
    nbe_trait_t *tr = trait(e, target);
    note_acked(e, tr, tr->ops_out);
    if (tr->unlock_seq > tr->unlock_acked) tr->unlock_acked = tr->unlock_seq;
    e->dirty = 1;
    e->gen++;
}

uint64_t nbe_fence_completed(const nbe_engine_t *e)
{
    return e->fence_completed_id;
}

void nbe_on_ctrl(nbe_engine_t *e, const nbe_ctrl_t *m)
{
    if (e->failed) return;
    nbe_trait_t *tr;
    e->dirty = 1;
    e->gen++;   /* grants change what may go directly */
    switch (m->type) {
    case NBE_CTRL_GRANT:
        tr = trait(e, m->src);
        if (m->a > tr->C_e) tr->C_e = m->a;
        break;
    case NBE_CTRL_LOCK_GRANT:
        tr = trait(e, m->src);
        if (m->a > tr->C_lock) tr->C_lock = m->a;
        break;
    case NBE_CTRL_FENCE_GRANT:
        /* a grant for an epoch completed here already (it needed none: its
         * predecessor was clean, or nothing here waited for it) may come
         * after that epoch's FENCE_DONE, which can overtake it; counted, it
         * would grant the epoch three later, which reuses the slot */
        if (m->a > e->fence_completed_id) e->fslot[m->a % 3].grants++;
        /* the sender activated fence epoch a: it completed the earlier ones */
        nbe_fence_applied(e, m->src, m->a - 1);
        break;
    case NBE_CTRL_DONE:
        tr = trait(e, m->src);
        if (0 != nbe_trait_push_done(tr, m->a, m->b)) nbe_engine_fail(e);
        break;
    case NBE_CTRL_FENCE_DONE:
        e->fslot[m->a % 3].dones++;
        if (!(m->flags & NBE_CTRL_FLAG_CLEAN)) e->fslot[m->a % 3].unclean++;
        e->fslot[m->a % 3].expected += m->b;
        break;
    case NBE_CTRL_LOCK_REQ: {
        nbe_lock_waiter_t *w = calloc(1, sizeof(*w));
        if (NULL == w) {
            nbe_engine_fail(e);
            break;
        }
        w->origin = m->src;
        w->type = m->lock_type;
        w->id = m->a;
        if (e->lkq_tail) e->lkq_tail->next = w;
        else e->lkq_head = w;
        e->lkq_tail = w;
        break;
    }
    case NBE_CTRL_UNLOCK:
        tr = trait(e, m->src);
        if (m->src != e->rank && tr->ops_in >= m->b) {
            /* everything it announces is here: release and answer now. An
             * origin that did not wait for the ack of its previous unlock
             * may have a second UNLOCK on its way, possibly over another
             * path and first: handled here, neither uses the one pending
             * slot below (loopback handlers never send: self waits) */
            if (!(m->flags & NBE_CTRL_FLAG_NOCHECK)) lock_release(e);
            send_ctrl(e, m->src, NBE_CTRL_UNLOCK_ACK, m->a, tr->ops_in, 0, 0);
            break;
        }
        tr->unlock_req_seq = m->a;
        tr->unlock_req_ops = m->b;
        tr->unlock_req_release = !(m->flags & NBE_CTRL_FLAG_NOCHECK);
        watch(e, tr);
        break;
    case NBE_CTRL_UNLOCK_ACK:
        tr = trait(e, m->src);
        if (m->a > tr->unlock_acked) tr->unlock_acked = m->a;
        /* the ack says how many of our operations arrived, as a FLUSH_ACK
         * does: without it, operations counted before would keep every
         * later NOCHECK epoch to this target sending an UNLOCK and waiting
         * for its ack, although all it does completes at the origin */
        note_acked(e, tr, m->b);
        e->unlock_acks++;
        break;
    case NBE_CTRL_FLUSH_REQ:
        tr = trait(e, m->src);
        if (!tr->flush_req_pending || m->b > tr->flush_req_ops) tr->flush_req_ops = m->b;
        tr->flush_req_pending = 1;
        /* everything announced may be here: answer now rather than from the
         * next progress pass (not to self: loopback handlers never send) */
        if (m->src == e->rank || !flush_ack_if_ready(e, tr)) watch(e, tr);
        break;
    case NBE_CTRL_FLUSH_ACK:
        tr = trait(e, m->src);
        note_acked(e, tr, m->b);
        break;
    default:
        break;
    }
}

/* a tag's kind and id (the fence id, or a start or lock epoch's id) */
static int tag_is_fence(uint64_t tag)
{
    return 0 != tag && !(tag & NBE_TAG_ACCESS);
}

static uint64_t tag_id(uint64_t tag)
{
    return tag & ~(NBE_TAG_ACCESS | NBE_TAG_EARLY | NBE_TAG_LOCK);
}

void nbe_on_op_arrived(nbe_engine_t *e, int src, uint64_t tag)
{
    e->dirty = 1;
    if (tag_is_fence(tag)) {
        e->fslot[tag_id(tag) % 3].ops_in++;
    } else {
        trait(e, src)->ops_in++;
    }
}

uint64_t nbe_ops_in_from(nbe_engine_t *e, int src)
{
    nbe_trait_t *tr = nbe_traits_find(&e->traits, src);
    return tr ? tr->ops_in : 0;
}

void nbe_note_remote_ack(nbe_engine_t *e, int target, uint64_t ops)
{
    nbe_trait_t *tr = trait(e, target);
    e->dirty = 1;
    note_acked(e, tr, ops);
}

void nbe_op_local_done(nbe_engine_t *e, int target)
{
    nbe_trait_t *tr = trait(e, target);
    e->dirty = 1;
    if (tr->pending_local) tr->pending_local--;
    if (e->pending_local_total) e->pending_local_total--;
}

/* ------------------------------------------------------------------ */
/* flush requests */

/* the passive epoch covering target: its lock epoch, else lock_all */
static nbe_epoch_t *passive_epoch_of(nbe_engine_t *e, int target)
{
    nbe_trait_t *tr = nbe_traits_find(&e->traits, target);
    return (tr && tr->open_lock) ? tr->open_lock : e->cur_lock_all;
}

static int flush_leg_ready(nbe_engine_t *e, nbe_epoch_t *ep, nbe_leg_t *l)
{
    if (NBE_EPOCH_ACTIVE != ep->state) return 0;
    if (!l->requested) return 0;
    if (!l->granted) {
        if (leg_grant_arrived(e, ep, l)) l->granted = 1;
        else return 0;
    }
    /* replies of fetching operations carry the target's count: wait for
     * them before deciding whether a FLUSH_REQ is needed at all */
    return !queued_to(ep, l->rank) && 0 == trait(e, l->rank)->pending_local;
}

/* send a FLUSH_REQ if needed; returns the threshold to wait for */
static uint64_t flush_send(nbe_engine_t *e, int rank)
{
    nbe_trait_t *tr = trait(e, rank);
    uint64_t thr = tr->ops_out;
    if (thr > tr->flush_acked && thr > tr->flush_sent) {
        send_ctrl(e, rank, NBE_CTRL_FLUSH_REQ, 0, thr, 0, 0);
        tr->flush_sent = thr;
    }
    return thr;
}

static int flush_step_one(nbe_engine_t *e, nbe_req_t *r)
{
    int local = NBE_REQ_FLUSH_LOCAL == r->kind;
    if (r->target >= 0) {
        nbe_epoch_t *ep = r->ep;
        nbe_leg_t *l = leg_find(ep, r->target);
        if (NULL == l) return 1;            /* lock_all target never touched */
        if (0 == r->phase) {
            if (!flush_leg_ready(e, ep, l)) return 0;
            r->thr = local ? 0 : flush_send(e, r->target);
            r->phase = 1;
        }
        nbe_trait_t *tr = trait(e, r->target);
        return 0 == tr->pending_local && (local || tr->flush_acked >= r->thr);
    }
    /* all targets of every passive epoch opened before the flush */
    int done = 1;
    for (nbe_epoch_t *ep = e->head; ep; ep = ep->next) {
        if (!is_passive(ep->kind) || ep->open_seq > r->thr) continue;
        for (int i = 0; i < ep->nlegs; ++i) {
            nbe_leg_t *l = &ep->legs[i];
            if (0 == r->phase) {
                if (!flush_leg_ready(e, ep, l)) return 0;
                continue;
            }
            nbe_trait_t *tr = trait(e, l->rank);
            if (tr->pending_local || (!local && tr->flush_acked < l->flush_thr)) done = 0;
        }
    }
    if (0 == r->phase) {
        for (nbe_epoch_t *ep = e->head; ep; ep = ep->next) {
            if (!is_passive(ep->kind) || ep->open_seq > r->thr) continue;
            for (int i = 0; i < ep->nlegs; ++i) {
                ep->legs[i].flush_thr = local ? 0 : flush_send(e, ep->legs[i].rank);
            }
        }
        r->phase = 1;
        return 0;   /* evaluate completion on the next pass */
    }
    return done;
}

static int flush_step(nbe_engine_t *e)
{
    int changed = 0;
    nbe_req_t **pp = &e->flushes;
    while (*pp) {
        nbe_req_t *r = *pp;
        int old_phase = r->phase;
        if (flush_step_one(e, r)) {
            *pp = r->next;
            req_done(e, r);
            changed = 1;
        } else {
            if (r->phase != old_phase) changed = 1;
            pp = &r->next;
        }
    }
    return changed;
}

/* ------------------------------------------------------------------ */

/* Every change of state the loop below reacts to enters through an event
 * (nbe_on_ctrl, nbe_on_op_arrived, nbe_note_remote_ack, nbe_op_local_done,
 * a loopback message) or a synchronization call. Events set e->dirty; the
 * calls run the loop themselves. A progress poll with nothing new (a
 * process spinning in opal_progress for an ack) returns at once instead of
 * walking every epoch. */
static int progress_run(nbe_engine_t *e)
{
    int total = 0, changed;
    if (e->in_progress) return 0;
    e->in_progress = 1;
    e->dirty = 0;   /* an event while the loop runs sets it again */
    e->gen++;
    do {
        changed = 0;
        if (e->failed) break;
        if (e->loop_n) {
            /* handlers never send, so the loop queue does not change
             * while it is read */
            size_t n = e->loop_n;
            for (size_t i = 0; i < n; ++i) nbe_on_ctrl(e, &e->loop[i]);
            e->loop_n = 0;
            changed = 1;
        }
        changed |= lock_try_grant(e);
        changed |= process_watch(e);
        for (nbe_epoch_t *ep = e->head, *next; ep; ep = next) {
            next = ep->next;
            if (NBE_EPOCH_ACTIVE == ep->state) {
                int stepped;
                switch (ep->kind) {
                case NBE_EP_FENCE: stepped = step_fence(e, ep); break;
                case NBE_EP_START: stepped = step_start(e, ep); break;
                case NBE_EP_POST: stepped = step_post(e, ep); break;
                default: stepped = step_passive(e, ep); break;
                }
                if (stepped) {
                    changed = 1;
                    e->scan_dirty = 1;   /* may have completed: later epochs may activate */
                }
            }
            if (NBE_EPOCH_COMPLETE == ep->state) {
                finish_epoch(e, ep);
                changed = 1;
            }
        }
        /* activation depends only on the epoch list and states: rescan
         * only after one of them changed */
        if (e->scan_dirty) {
            e->scan_dirty = 0;
            changed |= activate_scan(e);
        }
        if (e->flushes) changed |= flush_step(e);
        total += changed;
    } while (changed);
    e->in_progress = 0;
    return total;
}

int nbe_progress(nbe_engine_t *e)
{
    NBE_RETURN_IF_FAILED(e);
    return e->dirty ? progress_run(e) : 0;
}

/* open an epoch: append, try to activate at once, count it if deferred */
static void open_epoch(nbe_engine_t *e, nbe_epoch_t *ep)
{
    epoch_append(e, ep);
    e->scan_dirty = 0;
    if (e->head == ep) activate(e, ep);   /* alone: nothing to scan or wait for */
    else activate_scan(e);
    if (NBE_EPOCH_DEFERRED == ep->state) e->stats.epochs_deferred++;
    /* a passive epoch granted at activation (NOCHECK: nothing sent, nothing
     * to wait for) gives progress nothing to do for it; the lock of a
     * shared-memory window, whose lock word the glue takes, is one */
    if (NBE_EPOCH_ACTIVE == ep->state && is_passive(ep->kind) && NULL == ep->open_req &&
        (ep->assert_bits & NBE_MODE_NOCHECK)) {
        return;
    }
    progress_run(e);
}

/* a later synchronization closes an idle fence epoch (MPI: a fence opens an
 * epoch only if RMA calls follow it); one with RMA calls is an error */
static int close_idle_fence(nbe_engine_t *e)
{
    nbe_epoch_t *f = e->cur_fence;
    if (NULL == f) return NBE_OK;
    if (f->had_ops) return NBE_ERR_SYNC;
    f->implicit = 1;
    epoch_close_app(e, f, NULL);
    e->cur_fence = NULL;
    return NBE_OK;
}

/* ------------------------------------------------------------------ */
/* synchronizations */

static int alloc_req(nbe_engine_t *e, nbe_req_t **out, nbe_req_kind_t kind, nbe_req_t **r)
{
    *r = NULL;
    if (NULL == out) return NBE_OK;
    *r = req_new(e, kind);
    if (NULL == *r) return NBE_ERR_NOMEM;
    *out = *r;
    return NBE_OK;
}

int nbe_ifence(nbe_engine_t *e, int assert_bits, nbe_req_t **out)
{
    NBE_RETURN_IF_FAILED(e);
    nbe_req_t *r;
    if (e->cur_start || e->cur_post || e->cur_lock_all || e->nlocks_open) return NBE_ERR_SYNC;
    if (alloc_req(e, out, NBE_REQ_FENCE, &r)) return NBE_ERR_NOMEM;
    int bound = 0;
    nbe_epoch_t *ep = NULL;
    if (!(assert_bits & NBE_MODE_NOSUCCEED)) {
        /* before closing the current one: a FENCE_DONE that says the next
         * epoch is open must not be sent by a process that cannot open it */
        ep = epoch_new(e, NBE_EP_FENCE, assert_bits);
        if (NULL == ep) {
            nbe_req_free(r);
            if (out) *out = NULL;
            return NBE_ERR_NOMEM;
        }
    }
    if (e->cur_fence) {
        /* NOSUCCEED is given by all processes or none (MPI 3.1, 11.5.5) */
        e->cur_fence->fence_continued = NULL != ep;
        epoch_close_app(e, e->cur_fence, r);
        e->cur_fence = NULL;
        bound = 1;
    }
    if (NULL != ep) {
        if (!bound) {
            ep->open_req = r;
            bound = 1;
        }
        e->cur_fence = ep;
        open_epoch(e, ep);
    } else {
        progress_run(e);
    }
    if (!bound) req_done(e, r);
    return NBE_OK;
}

int nbe_istart(nbe_engine_t *e, const int *ranks, int n, int assert_bits, nbe_req_t **out)
{
    NBE_RETURN_IF_FAILED(e);
    nbe_req_t *r;
    if (e->cur_start || e->cur_lock_all || e->nlocks_open) return NBE_ERR_SYNC;
    if (close_idle_fence(e)) return NBE_ERR_SYNC;
    if (alloc_req(e, out, NBE_REQ_START, &r)) return NBE_ERR_NOMEM;
    nbe_epoch_t *ep = epoch_new(e, NBE_EP_START, assert_bits);
    if (NULL == ep || legs_from_ranks(ep, ranks, n)) return NBE_ERR_NOMEM;
    ep->open_req = r;
    e->cur_start = ep;
    open_epoch(e, ep);
    return NBE_OK;
}

int nbe_icomplete(nbe_engine_t *e, nbe_req_t **out)
{
    NBE_RETURN_IF_FAILED(e);
    nbe_req_t *r;
    if (NULL == e->cur_start) return NBE_ERR_SYNC;
    if (alloc_req(e, out, NBE_REQ_COMPLETE, &r)) return NBE_ERR_NOMEM;
    epoch_close_app(e, e->cur_start, r);
    e->cur_start = NULL;
    progress_run(e);
    return NBE_OK;
}

int nbe_ipost(nbe_engine_t *e, const int *ranks, int n, int assert_bits, nbe_req_t **out)
{
    NBE_RETURN_IF_FAILED(e);
    nbe_req_t *r;
    if (e->cur_post) return NBE_ERR_SYNC;
    if (close_idle_fence(e)) return NBE_ERR_SYNC;
    if (alloc_req(e, out, NBE_REQ_POST, &r)) return NBE_ERR_NOMEM;
    nbe_epoch_t *ep = epoch_new(e, NBE_EP_POST, assert_bits);
    if (NULL == ep || legs_from_ranks(ep, ranks, n)) return NBE_ERR_NOMEM;
    ep->open_req = r;
    e->cur_post = ep;
    open_epoch(e, ep);
    return NBE_OK;
}

int nbe_iwait(nbe_engine_t *e, nbe_req_t **out)
{
    NBE_RETURN_IF_FAILED(e);
    nbe_req_t *r;
    if (NULL == e->cur_post) return NBE_ERR_SYNC;
    if (alloc_req(e, out, NBE_REQ_WAIT, &r)) return NBE_ERR_NOMEM;
    epoch_close_app(e, e->cur_post, r);
    e->cur_post = NULL;
    progress_run(e);
    return NBE_OK;
}

int nbe_test_exposure(nbe_engine_t *e, int *flag)
{
    NBE_RETURN_IF_FAILED(e);
    nbe_epoch_t *ep = e->cur_post;
    *flag = 0;
    if (NULL == ep) return NBE_ERR_SYNC;
    progress_run(e);
    if (NBE_EPOCH_ACTIVE != ep->state) return NBE_OK;
    for (int i = 0; i < ep->nlegs; ++i) {
        if (!exposure_leg_done(e, &ep->legs[i])) return NBE_OK;
    }
    epoch_close_app(e, ep, NULL);
    e->cur_post = NULL;
    progress_run(e);
    *flag = 1;
    return NBE_OK;
}

int nbe_ilock(nbe_engine_t *e, int lock_type, int target, int assert_bits, nbe_req_t **out)
{
    NBE_RETURN_IF_FAILED(e);
    nbe_req_t *r;
    if (target < 0 || target >= e->size) return NBE_ERR_ARG;
    nbe_trait_t *tr = trait(e, target);
    if (NULL == tr) return NBE_ERR_NOMEM;
    if (e->cur_start || e->cur_lock_all || tr->open_lock) return NBE_ERR_SYNC;
    if (close_idle_fence(e)) return NBE_ERR_SYNC;
    if (alloc_req(e, out, NBE_REQ_LOCK, &r)) return NBE_ERR_NOMEM;
    nbe_epoch_t *ep = epoch_new(e, NBE_EP_LOCK, assert_bits);
    if (NULL == ep || NULL == leg_insert(ep, target)) return NBE_ERR_NOMEM;
    ep->lock_type = lock_type;
    ep->open_req = r;
    tr->open_lock = ep;
    e->nlocks_open++;
    open_epoch(e, ep);
    return NBE_OK;
}

int nbe_iunlock(nbe_engine_t *e, int target, nbe_req_t **out)
{
    NBE_RETURN_IF_FAILED(e);
    nbe_req_t *r;
    if (target < 0 || target >= e->size) return NBE_ERR_ARG;
    nbe_trait_t *tr = nbe_traits_find(&e->traits, target);
    if (NULL == tr || NULL == tr->open_lock) return NBE_ERR_SYNC;
    nbe_epoch_t *ep = tr->open_lock;
    /* nothing to send or wait for (the lock of a shared-memory window,
     * whose lock word the glue holds): complete within the call, with no
     * request (*out NULL says so) */
    int at_once = NBE_EPOCH_ACTIVE == ep->state && nocheck_leg_idle(ep, &ep->legs[0], tr);
    r = NULL;
    if (at_once) {
        if (out) *out = NULL;
    } else if (alloc_req(e, out, NBE_REQ_UNLOCK, &r)) {
        return NBE_ERR_NOMEM;
    }
    epoch_close_app(e, ep, r);
    tr->open_lock = NULL;
    e->nlocks_open--;
    if (at_once) {
        /* step_passive's conclusion without a progress pass */
        ep->legs[0].closed_sent = 1;
        ep->legs[0].finished = 1;
        ep->state = NBE_EPOCH_COMPLETE;
        finish_epoch(e, ep);
        if (NULL == e->head) return NBE_OK;   /* no later epoch to activate */
    }
    progress_run(e);
    return NBE_OK;
}

int nbe_ilock_all(nbe_engine_t *e, int assert_bits, nbe_req_t **out)
{
    NBE_RETURN_IF_FAILED(e);
    nbe_req_t *r;
    if (e->cur_start || e->cur_lock_all || e->nlocks_open) return NBE_ERR_SYNC;
    if (close_idle_fence(e)) return NBE_ERR_SYNC;
    if (alloc_req(e, out, NBE_REQ_LOCK_ALL, &r)) return NBE_ERR_NOMEM;
    nbe_epoch_t *ep = epoch_new(e, NBE_EP_LOCK_ALL, assert_bits);
    if (NULL == ep) return NBE_ERR_NOMEM;
    ep->lock_type = NBE_LOCK_SHARED;
    ep->open_req = r;
    e->cur_lock_all = ep;
    open_epoch(e, ep);
    return NBE_OK;
}

int nbe_iunlock_all(nbe_engine_t *e, nbe_req_t **out)
{
    NBE_RETURN_IF_FAILED(e);
    nbe_req_t *r;
    if (NULL == e->cur_lock_all) return NBE_ERR_SYNC;
    if (alloc_req(e, out, NBE_REQ_UNLOCK_ALL, &r)) return NBE_ERR_NOMEM;
    epoch_close_app(e, e->cur_lock_all, r);
    e->cur_lock_all = NULL;
    progress_run(e);
    return NBE_OK;
}

int nbe_iflush(nbe_engine_t *e, int target, int local, nbe_req_t **out)
{
    NBE_RETURN_IF_FAILED(e);
    nbe_req_t *r;
    nbe_epoch_t *ep = NULL;
    if (target >= e->size || NULL == out) return NBE_ERR_ARG;
    if (target >= 0) {
        ep = passive_epoch_of(e, target);
        if (NULL == ep) return NBE_ERR_SYNC;
    } else if (NULL == e->cur_lock_all && 0 == e->nlocks_open) {
        return NBE_ERR_SYNC;
    }
    r = req_new(e, local ? NBE_REQ_FLUSH_LOCAL : NBE_REQ_FLUSH);
    if (NULL == r) return NBE_ERR_NOMEM;
    r->target = target;
    r->ep = ep;
    if (target < 0) r->thr = e->seq;   /* covers epochs opened so far */
    r->next = e->flushes;
    e->flushes = r;
    if (out) *out = r;
    flush_step(e);   /* the FLUSH_REQ leaves before the rest of the progress pass */
    progress_run(e);
    return NBE_OK;
}

int nbe_flush_begin(nbe_engine_t *e, int target, int local, uint64_t *thr)
{
    NBE_RETURN_IF_FAILED(e);
    if (target < 0 || target >= e->size) return NBE_ERR_ARG;
    nbe_epoch_t *ep = passive_epoch_of(e, target);
    if (NULL == ep) return NBE_ERR_SYNC;
    if (e->flushes) return NBE_AGAIN;          /* behind earlier flush requests */
    nbe_leg_t *l = leg_find(ep, target);
    if (NULL == l) {                           /* lock_all target never touched */
        *thr = 0;
        return NBE_OK;
    }
    if (!flush_leg_ready(e, ep, l)) return NBE_AGAIN;
    *thr = local ? 0 : flush_send(e, target);
    return NBE_OK;
}

int nbe_flush_reached(const nbe_engine_t *e, int target, int local, uint64_t thr)
{
    const nbe_trait_t *tr = nbe_traits_find(&e->traits, target);
    return NULL == tr || (0 == tr->pending_local && (local || tr->flush_acked >= thr));
}

/* a leg whose flush has nothing to wait for (no side effects but the
 * grant bookkeeping of flush_leg_ready) */
static int leg_flushed(nbe_engine_t *e, nbe_epoch_t *ep, nbe_leg_t *l, int local)
{
    if (!flush_leg_ready(e, ep, l)) return 0;
    nbe_trait_t *tr = nbe_traits_find(&e->traits, l->rank);
    return NULL != tr && 0 == tr->pending_local && (local || tr->ops_out <= tr->flush_acked);
}

int nbe_issuing_alone(const nbe_engine_t *e, int target)
{
    const nbe_trait_t *tr = nbe_traits_find(&e->traits, target);
    return NULL != tr && 1 == tr->pending_local && tr->ops_out <= tr->flush_acked;
}

int nbe_awaits_target(const nbe_engine_t *e, int target)
{
    const nbe_trait_t *tr = nbe_traits_find(&e->traits, target);
    return NULL != tr && !trait_quiet(tr);
}

int nbe_flush_now(nbe_engine_t *e, int target, int local)
{
    NBE_RETURN_IF_FAILED(e);
    if (target >= e->size) return NBE_ERR_ARG;
    if (target >= 0) {
        nbe_epoch_t *ep = passive_epoch_of(e, target);
        if (NULL == ep) return NBE_ERR_SYNC;
        if (e->flushes || e->queued_total || e->pending_local_total) return NBE_AGAIN;
        nbe_leg_t *l = leg_find(ep, target);
        if (NULL == l) return NBE_OK;   /* lock_all target never touched */
        return leg_flushed(e, ep, l, local) ? NBE_OK : NBE_AGAIN;
    }
    if (NULL == e->cur_lock_all && 0 == e->nlocks_open) return NBE_ERR_SYNC;
    if (e->flushes || e->queued_total || e->pending_local_total) return NBE_AGAIN;
    for (nbe_epoch_t *ep = e->head; ep; ep = ep->next) {
        if (!is_passive(ep->kind)) continue;
        for (int i = 0; i < ep->nlegs; ++i) {
            if (!leg_flushed(e, ep, &ep->legs[i], local)) return NBE_AGAIN;
        }
    }
    return NBE_OK;
}

/* ------------------------------------------------------------------ */
/* RMA operations */

static nbe_epoch_t *find_access(nbe_engine_t *e, int target)
{
    nbe_trait_t *tr = nbe_traits_find(&e->traits, target);
    if (tr && tr->open_lock) return tr->open_lock;
    if (e->cur_lock_all) return e->cur_lock_all;
    if (e->cur_start) return leg_find(e->cur_start, target) ? e->cur_start : NULL;
    if (e->cur_fence) return e->cur_fence;
    return NULL;
}

int nbe_check_access(nbe_engine_t *e, int target)
{
    NBE_RETURN_IF_FAILED(e);
    if (target < 0 || target >= e->size) return NBE_ERR_ARG;
    return find_access(e, target) ? NBE_OK : NBE_ERR_SYNC;
}

int nbe_rma(nbe_engine_t *e, nbe_op_t *op)
{
    NBE_RETURN_IF_FAILED(e);
    if (op->target < 0 || op->target >= e->size) return NBE_ERR_ARG;
    nbe_epoch_t *ep = find_access(e, op->target);
    if (NULL == ep) return NBE_ERR_SYNC;
    e->dirty = 1;
    e->gen++;   /* a lock_all leg or a recorded operation may follow */
    ep->had_ops = 1;
    if (NBE_EP_LOCK_ALL == ep->kind && NULL == leg_find(ep, op->target)) {
        nbe_leg_t *l = leg_insert(ep, op->target);
        if (NULL == l) return NBE_ERR_NOMEM;
        if (NBE_EPOCH_ACTIVE == ep->state) request_lock_leg(e, ep, l);
    }
    if (NULL == ep->qh && target_granted(e, ep, op->target)) {
        return issue_op(e, ep, op);
    }
    op->next = NULL;
    if (ep->qt) ep->qt->next = op;
    else ep->qh = op;
    ep->qt = op;
    ep->queued++;
    e->queued_total++;
    e->stats.ops_recorded++;
    /* no progress pass: the target was just found not granted, and only an
     * event can change that (dirty is set, the next poll runs it) */
    return NBE_OK;
}

/* An operation the glue applies itself, complete at the target when it
 * returns (a store into shared memory): the engine's part of issuing it with
 * no counted message, minus the op record. Only when the access epoch is
 * active, nothing is recorded ahead of it and the target has granted. */
static int direct_ready(nbe_engine_t *e, int target, nbe_epoch_t **out)
{
    if (target < 0 || target >= e->size) return NBE_ERR_ARG;
    nbe_epoch_t *ep = find_access(e, target);
    *out = ep;   /* the covering epoch, also when the answer is NBE_AGAIN */
    if (NULL == ep) return NBE_ERR_SYNC;
    if (NULL != ep->qh) return NBE_AGAIN;
    if (NBE_EP_LOCK_ALL == ep->kind && NULL == leg_find(ep, target)) return NBE_AGAIN;
    if (!target_granted(e, ep, target)) return NBE_AGAIN;
    ep->had_ops = 1;
    return NBE_OK;
}

int nbe_rma_ready(nbe_engine_t *e, int target, int *passive)
{
    NBE_RETURN_IF_FAILED(e);
    nbe_epoch_t *ep = NULL;
    int rc = direct_ready(e, target, &ep);
    if (NULL != ep && NULL != passive) *passive = is_passive(ep->kind);
    return rc;
}

int nbe_rma_direct(nbe_engine_t *e, int target)
{
    int rc = nbe_rma_ready(e, target, NULL);
    if (NBE_OK == rc) e->stats.ops_issued++;
    return rc;
}

uint64_t nbe_engine_generation(const nbe_engine_t *e)
{
    return e->gen;
}

int nbe_lock_ready(nbe_engine_t *e, int target)
{
    /* direct_ready's answer for the one epoch kind it can be asked about
     * here, without its epoch search */
    const nbe_trait_t *tr = nbe_traits_find(&e->traits, target);
    nbe_epoch_t *ep = tr ? tr->open_lock : NULL;
    return NULL != ep && 0 == e->failed && NULL == ep->qh && target_granted(e, ep, target);
}

void nbe_rma_direct_again(nbe_engine_t *e)
{
    e->stats.ops_issued++;
}

/* the tag of a message that may leave before its grant, 0 if none may */
static uint64_t early_tag(nbe_engine_t *e, nbe_epoch_t *ep, int target)
{
    if (NULL == ep || NBE_EPOCH_ACTIVE != ep->state || NULL != ep->qh) return 0;
    if (NBE_EP_FENCE == ep->kind) return NBE_TAG_EARLY | ep->fence_id;
    nbe_leg_t *l = leg_find(ep, target);
    if (NULL == l || !l->requested || 0 == l->id) return 0;
    return NBE_TAG_EARLY | NBE_TAG_ACCESS | (NBE_EP_START == ep->kind ? 0 : NBE_TAG_LOCK) | l->id;
}

int nbe_rma_message(nbe_engine_t *e, int target, uint64_t *tag, int *passive)
{
    NBE_RETURN_IF_FAILED(e);
    nbe_epoch_t *ep = NULL;
    int rc = direct_ready(e, target, &ep);
    if (NULL != ep && NULL != passive) *passive = is_passive(ep->kind);
    if (NBE_OK == rc) {
        *tag = NBE_EP_FENCE == ep->kind ? ep->fence_id : 0;
    } else if (NBE_AGAIN == rc && e->early_msgs && target != e->rank) {
        /* not granted yet: the target holds it until it is */
        *tag = early_tag(e, ep, target);
        if (*tag) {
            ep->had_ops = 1;
            rc = NBE_OK;
        }
    }
    return rc;
}

void nbe_engine_set_early_messages(nbe_engine_t *e, int on)
{
    e->early_msgs = on;
}

int nbe_message_ready(nbe_engine_t *e, int src, uint64_t tag)
{
    if (!(tag & NBE_TAG_EARLY)) return 1;   /* sent after its grant */
    if (tag & NBE_TAG_ACCESS) {
        const nbe_trait_t *tr = nbe_traits_find(&e->traits, src);
        if (NULL == tr) return 0;
        return (tag & NBE_TAG_LOCK ? tr->lock_grant_seq : tr->grant_seq) >= tag_id(tag);
    }
    return tag_id(tag) <= e->fence_seq;
}

void nbe_rma_message_sent(nbe_engine_t *e, int target, uint64_t tag)
{
    nbe_trait_t *tr = trait(e, target);
    if (tag_is_fence(tag)) {
        tr->fence_ops_out++;
        e->fence_counted++;
    } else {
        tr->ops_out++;
    }
    e->stats.ops_issued++;
    e->dirty = 1;
}

/* ------------------------------------------------------------------ */

nbe_engine_t *nbe_engine_create(int rank, int size, const nbe_transport_t *tx, void *ctx)
{
    if (rank < 0 || size <= 0 || rank >= size || NULL == tx) return NULL;
    nbe_engine_t *e = calloc(1, sizeof(*e));
    if (NULL == e) return NULL;
    e->rank = rank;
    e->size = size;
    e->tx = *tx;
    e->ctx = ctx;
    if (nbe_traits_init(&e->traits)) {
        free(e);
        return NULL;
    }
    return e;
}

void nbe_engine_destroy(nbe_engine_t *e)
{
    if (NULL == e) return;
    while (e->head) {
        nbe_epoch_t *ep = e->head;
        e->head = ep->next;
        free(ep->legs);
        free(ep);
    }
    while (e->lkq_head) {
        nbe_lock_waiter_t *w = e->lkq_head;
        e->lkq_head = w->next;
        free(w);
    }
    while (e->flushes) {
        nbe_req_t *r = e->flushes;
        e->flushes = r->next;
        r->complete = 1;
    }
    nbe_traits_fini(&e->traits);
    while (e->free_reqs) {
        nbe_req_t *r = e->free_reqs;
        e->free_reqs = r->next;
        free(r);
    }
    while (e->free_epochs) {
        nbe_epoch_t *ep = e->free_epochs;
        e->free_epochs = ep->next;
        free(ep->legs);
        free(ep);
    }
    free(e->loop);
    free(e);
}

int nbe_engine_failed(const nbe_engine_t *e)
{
    return e->failed;
}

int nbe_engine_idle(const nbe_engine_t *e)
{
    return NULL == e->head && 0 == e->pending_local_total && NULL == e->watch &&
           e->unlock_acks >= e->unlocks_sent;
}

void nbe_engine_take_recorded(nbe_engine_t *e, void (*fn)(void *ctx, nbe_op_t *op), void *ctx)
{
    if (0 == e->failed) return;
    for (nbe_epoch_t *ep = e->head; ep; ep = ep->next) {
        while (ep->qh) {
            nbe_op_t *op = ep->qh;
            ep->qh = op->next;
            ep->queued--;
            e->queued_total--;
            fn(ctx, op);
        }
        ep->qt = NULL;
    }
}

size_t nbe_engine_buffered(const nbe_engine_t *e)
{
    return e->queued_total + (size_t) e->pending_local_total;
}

size_t nbe_engine_traits_count(const nbe_engine_t *e)
{
    return e->traits.count;
}

size_t nbe_engine_epochs_count(const nbe_engine_t *e)
{
    return e->nepochs;
}

const nbe_stats_t *nbe_engine_stats(const nbe_engine_t *e)
{
    return &e->stats;
}

int nbe_engine_can_free(nbe_engine_t *e)
{
    if (e->cur_start || e->cur_post || e->cur_lock_all || e->nlocks_open) return NBE_ERR_SYNC;
    if (e->cur_fence) {
        /* a fence epoch left open before MPI_Win_free: close it (every
         * process does the same in the collective free) */
        e->cur_fence->implicit = 1;
        epoch_close_app(e, e->cur_fence, NULL);
        e->cur_fence = NULL;
        progress_run(e);
    }
    return NBE_OK;
}

int nbe_engine_closing_exposures(const nbe_engine_t *e)
{
    return e->closing_expo;
}

void nbe_engine_set_exposure_word(nbe_engine_t *e, volatile int64_t *word)
{
    e->expo_word = word;
    if (word) __atomic_store_n(word, (int64_t) e->closing_expo, __ATOMIC_SEQ_CST);
}

nbe_epoch_state_t nbe_engine_last_epoch_state(const nbe_engine_t *e)
{
    return e->tail ? e->tail->state : NBE_EPOCH_COMPLETE;
}

nbe_peer_info_t *nbe_engine_peer_info(nbe_engine_t *e, int rank)
{
    if (rank < 0 || rank >= e->size) return NULL;
    nbe_trait_t *tr = trait(e, rank);
    return tr ? &tr->info : NULL;
}

struct each_info {
    void (*fn)(void *ctx, int rank, nbe_peer_info_t *info);
    void *ctx;
};

static void each_info_of(void *ctx, nbe_trait_t *tr)
{
    struct each_info *w = ctx;
    w->fn(w->ctx, tr->rank, &tr->info);
}

void nbe_engine_each_peer_info(nbe_engine_t *e,
                               void (*fn)(void *ctx, int rank, nbe_peer_info_t *info), void *ctx)
{
    struct each_info w = { fn, ctx };
    nbe_traits_each(&e->traits, each_info_of, &w);
}

size_t nbe_engine_memory(const nbe_engine_t *e)
{
    size_t bytes = sizeof(*e) + nbe_traits_memory(&e->traits) + e->loop_cap * sizeof(nbe_ctrl_t);
    for (const nbe_epoch_t *ep = e->head; ep; ep = ep->next) {
        bytes += sizeof(*ep) + (size_t) ep->cap_legs * sizeof(nbe_leg_t);
    }
    for (const nbe_lock_waiter_t *w = e->lkq_head; w; w = w->next) bytes += sizeof(*w);
    return bytes;
}

void nbe_engine_set_unlock_no_wait(nbe_engine_t *e, int on)
{
    e->unlock_no_wait = on;
}

void nbe_engine_set_fence_implied_grants(nbe_engine_t *e, int on)
{
    e->fence_implied = on;
}

void nbe_engine_set_local_fence(nbe_engine_t *e, int on)
{
    e->local_fence = on;
}
