/*
 * Linked-list engine as in MPICH/MVAPICH (CH3): ONE posted-receive queue and
 * ONE unexpected queue per process, shared by all contextIds, appended at
 * the tail and searched linearly from the head on <ctx, rank, tag>.
 * ANY_SOURCE receives live in the same list, so FIFO order gives MPI
 * ordering and ANY_SOURCE takes the globally oldest message.
 */
#include "bm_engine.h"

#include <stdlib.h>

typedef struct ll_item {
    struct ll_item *next, *prev;
    bm_id_t id;
    int32_t ctx, rank, tag;
    int32_t posted; /* which list holds it (fills the padding) */
} ll_item_t;

typedef struct ll_list {
    ll_item_t *head, *tail;
} ll_list_t;

typedef struct ll_engine {
    ll_list_t prq, umq; /* the process-wide queue heads: the only fixed bytes */
    bm_slab_t items;
    uint64_t visits;
} ll_engine_t;

BM_FIFO_DEFINE(list, ll_list_t, head, tail, ll_item_t, next, prev)

static void *ll_create(const bm_config_t *cfg)
{
    (void) cfg;
    ll_engine_t *e = calloc(1, sizeof(*e));
    bm_slab_init(&e->items, sizeof(ll_item_t));
    return e;
}

static void ll_destroy(void *p)
{
    ll_engine_t *e = p;
    bm_slab_fini(&e->items);
    free(e);
}

/* queue a new item at the tail of the PRQ (posted) or UMQ */
static void enqueue(ll_engine_t *e, uint32_t ctx, int32_t rank, int32_t tag, bm_id_t id,
                    int posted, void **h)
{
    ll_item_t *it = bm_slab_get(&e->items);
    it->id = id;
    it->ctx = (int32_t) ctx;
    it->rank = rank;
    it->tag = tag;
    it->posted = posted;
    list_append(posted ? &e->prq : &e->umq, it);
    if (h)
        *h = it;
}

/* first item of list l in context ctx that pairs with <rank, tag>: the
 * queued items are receives and <rank, tag> a message envelope when
 * queued_are_recvs, else the other way round; one visit per item examined */
static ll_item_t *find(ll_engine_t *e, ll_list_t *l, uint32_t ctx, int32_t rank, int32_t tag,
                       bool queued_are_recvs)
{
    for (ll_item_t *it = l->head; it; it = it->next) {
        e->visits++;
        if (it->ctx != (int32_t) ctx)
            continue;
        if (queued_are_recvs ? (it->rank == BM_ANY_SOURCE || it->rank == rank)
                                   && bm_tag_ok(it->tag, tag)
                             : (rank == BM_ANY_SOURCE || rank == it->rank)
                                   && bm_tag_ok(tag, it->tag))
            return it;
    }
    return NULL;
}

/* remove a matched item from list l; returns its id */
static bm_id_t take(ll_engine_t *e, ll_list_t *l, ll_item_t *it)
{
    bm_id_t m = it->id;
    list_unlink(l, it);
    bm_slab_put(&e->items, it);
    return m;
}

static bm_id_t ll_post(void *p, uint32_t ctx, int32_t rank, int32_t tag, bm_id_t id, void **h)
{
    ll_engine_t *e = p;
    ll_item_t *it = find(e, &e->umq, ctx, rank, tag, false);
    if (it)
        return take(e, &e->umq, it);
    enqueue(e, ctx, rank, tag, id, 1, h);
    return 0;
}

static bm_id_t ll_arrive(void *p, uint32_t ctx, int32_t rank, int32_t tag, bm_id_t id, void **h)
{
    ll_engine_t *e = p;
    ll_item_t *it = find(e, &e->prq, ctx, rank, tag, true);
    if (it)
        return take(e, &e->prq, it);
    enqueue(e, ctx, rank, tag, id, 0, h);
    return 0;
}

static bm_id_t ll_probe(void *p, uint32_t ctx, int32_t rank, int32_t tag)
{
    ll_engine_t *e = p;
    ll_item_t *it = find(e, &e->umq, ctx, rank, tag, false);
    return it ? it->id : 0;
}

static bool ll_remove(void *p, uint32_t ctx, void *h)
{
    ll_engine_t *e = p;
    ll_item_t *it = h;
    (void) ctx;
    take(e, it->posted ? &e->prq : &e->umq, it);
    return true;
}

static void ll_mem(void *p, bm_mem_t *m)
{
    ll_engine_t *e = p;
    m->fixed = sizeof(e->prq) + sizeof(e->umq);
    m->dyn = 0;
    m->peak_dyn = 0;
    m->item_size = sizeof(ll_item_t);
    m->items = e->items.live * sizeof(ll_item_t);
}

static uint64_t ll_visits(void *p) { return ((ll_engine_t *) p)->visits; }

const bm_engine_ops_t bm_engine_ll = {
    .name = "list", .create = ll_create, .destroy = ll_destroy, .post = ll_post,
    .arrive = ll_arrive, .probe = ll_probe, .remove = ll_remove, .mem = ll_mem,
    .visits = ll_visits,
};
