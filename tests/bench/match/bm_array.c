/*
 * Array engine as in Open MPI ob1 and the paper's "array" baseline: per
 * contextId a ContextIdLead owning an array of comm_size RankHeads (a PRQ and
 * a UMQ per peer, only the tag varies inside) plus one ANY_SOURCE list.
 * Ordering between a peer's PRQ and the ANY_SOURCE list uses per-context
 * sequence numbers (smaller wins). The ContextIdLeads form a list walked
 * linearly (MVAPICH style, O(k)).
 */
#include "bm_engine.h"

#include <stdlib.h>

typedef struct ar_item {
    struct ar_item *next, *prev;
    bm_id_t id;
    uint64_t seq;
    int32_t rank, tag;
    int32_t posted, pad;
} ar_item_t;

typedef struct ar_list {
    ar_item_t *head, *tail;
} ar_list_t;

typedef struct ar_rankhead { /* 32 B, the paper's RankHead */
    ar_list_t prq, umq;
} ar_rankhead_t;

typedef struct ar_cil { /* 56 B, the paper's ContextIdLead */
    struct ar_cil *next;
    int32_t ctx;
    uint32_t size;
    ar_rankhead_t *ranks;
    ar_list_t anysrc;
    uint64_t next_seq;
    uint64_t queued;
} ar_cil_t;

typedef struct ar_engine {
    ar_cil_t *cils;
    bm_policy_t policy;
    uint32_t ncomm, size;
    bm_slab_t items;
    uint64_t visits;
} ar_engine_t;

BM_FIFO_DEFINE(list, ar_list_t, head, tail, ar_item_t, next, prev)

static void *ar_create(const bm_config_t *cfg)
{
    ar_engine_t *e = calloc(1, sizeof(*e));
    e->policy = cfg->policy;
    e->ncomm = cfg->ncomm;
    e->size = cfg->comm_size;
    bm_slab_init(&e->items, sizeof(ar_item_t));
    ar_cil_t **link = &e->cils;
    for (uint32_t c = 0; c < cfg->ncomm; c++) {
        ar_cil_t *l = calloc(1, sizeof(*l));
        l->ctx = (int32_t) c;
        l->size = cfg->comm_size;
        l->ranks = calloc(cfg->comm_size, sizeof(ar_rankhead_t));
        if (!l->ranks)
            abort();
        *link = l;
        link = &l->next;
    }
    return e;
}

static void ar_destroy(void *p)
{
    ar_engine_t *e = p;
    for (ar_cil_t *l = e->cils, *n; l; l = n) {
        n = l->next;
        free(l->ranks);
        free(l);
    }
    bm_slab_fini(&e->items);
    free(e);
}

BM_FIND_CIL_DEFINE(ar_engine_t, ar_cil_t)

static ar_item_t *new_item(ar_engine_t *e, ar_cil_t *l, int32_t rank, int32_t tag, bm_id_t id,
                           int posted)
{
    ar_item_t *it = bm_slab_get(&e->items);
    it->id = id;
    it->rank = rank;
    it->tag = tag;
    it->posted = posted;
    it->seq = l->next_seq++;
    l->queued++;
    return it;
}

static void free_item(ar_engine_t *e, ar_cil_t *l, ar_item_t *it)
{
    l->queued--;
    bm_slab_put(&e->items, it);
}

/* first tag-compatible unexpected message of one peer; NULL if none */
static ar_item_t *umq_first(ar_engine_t *e, ar_list_t *l, int32_t tag)
{
    for (ar_item_t *it = l->head; it; it = it->next) {
        e->visits++;
        if (bm_tag_ok(tag, it->tag))
            return it;
    }
    return NULL;
}

static bm_id_t ar_find_umq(ar_engine_t *e, ar_cil_t *l, int32_t rank, int32_t tag, bool remove)
{
    ar_item_t *best = NULL;
    if (rank != BM_ANY_SOURCE) {
        e->visits++; /* array index */
        best = umq_first(e, &l->ranks[rank].umq, tag);
    } else {
        for (uint32_t r = 0; r < l->size; r++) {
            e->visits++; /* every RankHead is probed */
            ar_item_t *it = umq_first(e, &l->ranks[r].umq, tag);
            if (it && (!best || it->seq < best->seq)) {
                best = it;
                if (e->policy == BM_POLICY_FIRST)
                    break;
            }
        }
    }
    if (!best)
        return 0;
    bm_id_t m = best->id;
    if (remove) {
        list_unlink(&l->ranks[best->rank].umq, best);
        free_item(e, l, best);
    }
    return m;
}

static bm_id_t ar_post(void *p, uint32_t ctx, int32_t rank, int32_t tag, bm_id_t id, void **h)
{
    ar_engine_t *e = p;
    ar_cil_t *l = find_cil(e, ctx);
    bm_id_t m = ar_find_umq(e, l, rank, tag, true);
    if (m)
        return m;
    ar_item_t *it = new_item(e, l, rank, tag, id, 1);
    list_append(rank == BM_ANY_SOURCE ? &l->anysrc : &l->ranks[rank].prq, it);
    if (h)
        *h = it;
    return 0;
}

static bm_id_t ar_arrive(void *p, uint32_t ctx, int32_t rank, int32_t tag, bm_id_t id, void **h)
{
    ar_engine_t *e = p;
    ar_cil_t *l = find_cil(e, ctx);
    ar_item_t *best = NULL;
    ar_list_t *from = NULL;
    e->visits++; /* array index */
    for (ar_item_t *it = l->ranks[rank].prq.head; it; it = it->next) {
        e->visits++;
        if (bm_tag_ok(it->tag, tag)) {
            best = it;
            from = &l->ranks[rank].prq;
            break;
        }
    }
    for (ar_item_t *it = l->anysrc.head; it; it = it->next) {
        if (best && it->seq > best->seq)
            break; /* the ranked candidate is older */
        e->visits++;
        if (bm_tag_ok(it->tag, tag)) {
            best = it;
            from = &l->anysrc;
            break;
        }
    }
    if (best) {
        bm_id_t m = best->id;
        list_unlink(from, best);
        free_item(e, l, best);
        return m;
    }
    ar_item_t *it = new_item(e, l, rank, tag, id, 0);
    list_append(&l->ranks[rank].umq, it);
    if (h)
        *h = it;
    return 0;
}

static bm_id_t ar_probe(void *p, uint32_t ctx, int32_t rank, int32_t tag)
{
    ar_engine_t *e = p;
    return ar_find_umq(e, find_cil(e, ctx), rank, tag, false);
}

static bool ar_remove(void *p, uint32_t ctx, void *h)
{
    ar_engine_t *e = p;
    ar_cil_t *l = find_cil(e, ctx);
    ar_item_t *it = h;
    ar_list_t *lst = it->rank == BM_ANY_SOURCE ? &l->anysrc
                     : it->posted              ? &l->ranks[it->rank].prq
                                               : &l->ranks[it->rank].umq;
    list_unlink(lst, it);
    free_item(e, l, it);
    return true;
}

static void ar_mem(void *p, bm_mem_t *m)
{
    ar_engine_t *e = p;
    m->fixed = (size_t) e->ncomm * (sizeof(ar_cil_t) + (size_t) e->size * sizeof(ar_rankhead_t));
    m->dyn = 0;
    m->peak_dyn = 0;
    m->item_size = sizeof(ar_item_t);
    m->items = e->items.live * sizeof(ar_item_t);
}

static uint64_t ar_visits(void *p) { return ((ar_engine_t *) p)->visits; }

const bm_engine_ops_t bm_engine_array = {
    .name = "array", .create = ar_create, .destroy = ar_destroy, .post = ar_post,
    .arrive = ar_arrive, .probe = ar_probe, .remove = ar_remove, .mem = ar_mem,
    .visits = ar_visits,
};
