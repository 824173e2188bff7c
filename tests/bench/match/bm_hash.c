/*
 * Hash engine in the style of UCX tag matching (ucp/tag/tag_match.h), own
 * code: one matching context per process (not per communicator; the
 * contextId is part of the key).
 *  - expected (posted) receives with a fully specified key <ctx,rank,tag>
 *    go into a fixed-size hash (BM_HASH_BUCKETS FIFO buckets); receives with
 *    a wildcard (ANY_SOURCE or ANY_TAG) go into one wildcard queue; every
 *    posted receive gets a sequence number and an arriving message takes
 *    the older of the bucket's first exact match and the wildcard queue's
 *    first compatible receive;
 *  - unexpected messages are hashed the same way for exact receives and are
 *    also threaded on one list of all unexpected messages in arrival order,
 *    which wildcard receives scan (so they always take the oldest).
 */
#include "bm_engine.h"

#include <stdlib.h>

#define BM_HASH_BUCKETS 1021 /* prime, the size UCX uses */

typedef struct hs_item {
    struct hs_item *next, *prev;         /* bucket or wildcard queue */
    struct hs_item *all_next, *all_prev; /* unexpected: list of all, arrival order */
    bm_id_t id;
    uint64_t seq;
    int32_t ctx, rank, tag;
    uint16_t posted, wild;
    uint32_t bucket, pad;
} hs_item_t;

typedef struct hs_list {
    hs_item_t *head, *tail;
} hs_list_t;

typedef struct hs_engine {
    hs_list_t exp_hash[BM_HASH_BUCKETS];
    hs_list_t exp_wild;
    hs_list_t unexp_hash[BM_HASH_BUCKETS];
    hs_item_t *all_head, *all_tail;
    uint64_t next_seq;
    bm_slab_t items;
    uint64_t visits;
} hs_engine_t;

#define HS_FIXED_BYTES (2 * BM_HASH_BUCKETS * sizeof(hs_list_t) + sizeof(hs_list_t) \
                        + 2 * sizeof(hs_item_t *) + sizeof(uint64_t))

static uint32_t hs_bucket(uint32_t ctx, int32_t rank, int32_t tag)
{
    uint64_t k = ((uint64_t) ctx << 52) ^ ((uint64_t) (uint32_t) rank << 24) ^ (uint32_t) tag;
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdULL;
    k ^= k >> 33;
    return (uint32_t) (k % BM_HASH_BUCKETS);
}

BM_FIFO_DEFINE(list, hs_list_t, head, tail, hs_item_t, next, prev)

/* the list of all unexpected messages in arrival order */
BM_FIFO_DEFINE(all, hs_engine_t, all_head, all_tail, hs_item_t, all_next, all_prev)

static void *hs_create(const bm_config_t *cfg)
{
    (void) cfg;
    hs_engine_t *e = calloc(1, sizeof(*e));
    bm_slab_init(&e->items, sizeof(hs_item_t));
    return e;
}

static void hs_destroy(void *p)
{
    hs_engine_t *e = p;
    bm_slab_fini(&e->items);
    free(e);
}

static hs_item_t *new_item(hs_engine_t *e, uint32_t ctx, int32_t rank, int32_t tag, bm_id_t id)
{
    hs_item_t *it = bm_slab_get(&e->items);
    it->id = id;
    it->ctx = (int32_t) ctx;
    it->rank = rank;
    it->tag = tag;
    it->seq = e->next_seq++;
    return it;
}

static void unexp_remove(hs_engine_t *e, hs_item_t *it)
{
    list_unlink(&e->unexp_hash[it->bucket], it);
    all_unlink(e, it);
    bm_slab_put(&e->items, it);
}

static hs_item_t *unexp_find(hs_engine_t *e, uint32_t ctx, int32_t rank, int32_t tag)
{
    if (rank != BM_ANY_SOURCE && tag != BM_ANY_TAG) {
        e->visits++; /* bucket */
        for (hs_item_t *it = e->unexp_hash[hs_bucket(ctx, rank, tag)].head; it; it = it->next) {
            e->visits++;
            if (it->ctx == (int32_t) ctx && it->rank == rank && it->tag == tag)
                return it;
        }
        return NULL;
    }
    for (hs_item_t *it = e->all_head; it; it = it->all_next) {
        e->visits++;
        if (it->ctx == (int32_t) ctx && (rank == BM_ANY_SOURCE || rank == it->rank)
            && bm_tag_ok(tag, it->tag))
            return it;
    }
    return NULL;
}

static bm_id_t hs_post(void *p, uint32_t ctx, int32_t rank, int32_t tag, bm_id_t id, void **h)
{
    hs_engine_t *e = p;
    hs_item_t *m = unexp_find(e, ctx, rank, tag);
    if (m) {
        bm_id_t mid = m->id;
        unexp_remove(e, m);
        return mid;
    }
    hs_item_t *it = new_item(e, ctx, rank, tag, id);
    it->posted = 1;
    it->wild = (rank == BM_ANY_SOURCE || tag == BM_ANY_TAG);
    if (it->wild) {
        list_append(&e->exp_wild, it);
    } else {
        it->bucket = hs_bucket(ctx, rank, tag);
        list_append(&e->exp_hash[it->bucket], it);
    }
    if (h)
        *h = it;
    return 0;
}

static bm_id_t hs_arrive(void *p, uint32_t ctx, int32_t rank, int32_t tag, bm_id_t id, void **h)
{
    hs_engine_t *e = p;
    uint32_t b = hs_bucket(ctx, rank, tag);
    hs_item_t *best = NULL;
    e->visits++; /* bucket */
    for (hs_item_t *it = e->exp_hash[b].head; it; it = it->next) {
        e->visits++;
        if (it->ctx == (int32_t) ctx && it->rank == rank && it->tag == tag) {
            best = it;
            break;
        }
    }
    for (hs_item_t *it = e->exp_wild.head; it; it = it->next) {
        if (best && it->seq > best->seq)
            break;
        e->visits++;
        if (it->ctx == (int32_t) ctx && (it->rank == BM_ANY_SOURCE || it->rank == rank)
            && bm_tag_ok(it->tag, tag)) {
            best = it;
            break;
        }
    }
    if (best) {
        bm_id_t mid = best->id;
        list_unlink(best->wild ? &e->exp_wild : &e->exp_hash[b], best);
        bm_slab_put(&e->items, best);
        return mid;
    }
    hs_item_t *it = new_item(e, ctx, rank, tag, id);
    it->posted = 0;
    it->wild = 0;
    it->bucket = b;
    list_append(&e->unexp_hash[b], it);
    all_append(e, it);
    if (h)
        *h = it;
    return 0;
}

static bm_id_t hs_probe(void *p, uint32_t ctx, int32_t rank, int32_t tag)
{
    hs_item_t *m = unexp_find(p, ctx, rank, tag);
    return m ? m->id : 0;
}

static bool hs_remove(void *p, uint32_t ctx, void *h)
{
    hs_engine_t *e = p;
    hs_item_t *it = h;
    (void) ctx;
    if (!it->posted) {
        unexp_remove(e, it);
        return true;
    }
    list_unlink(it->wild ? &e->exp_wild : &e->exp_hash[it->bucket], it);
    bm_slab_put(&e->items, it);
    return true;
}

static void hs_mem(void *p, bm_mem_t *m)
{
    hs_engine_t *e = p;
    m->fixed = HS_FIXED_BYTES;
    m->dyn = 0;
    m->peak_dyn = 0;
    m->item_size = sizeof(hs_item_t);
    m->items = e->items.live * sizeof(hs_item_t);
}

static uint64_t hs_visits(void *p) { return ((hs_engine_t *) p)->visits; }

const bm_engine_ops_t bm_engine_hash = {
    .name = "hash", .create = hs_create, .destroy = hs_destroy, .post = hs_post,
    .arrive = hs_arrive, .probe = hs_probe, .remove = hs_remove, .mem = hs_mem,
    .visits = hs_visits,
};
