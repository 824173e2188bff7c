/*
 * Adapter: the mdq pml's 4D matching engine (ompi/mca/pml/mdq/mdq_match.h),
 * through its public API only, behind the bench interface. One mdq queue per contextId,
 * all sharing one pool; the queues are found through an MVAPICH-style
 * ContextIdLead list. The engine already counts one visit for its own queue
 * head (ContextIdLead) per search and charges the ContextIdLead to the pool,
 * so the adapter adds only the list nodes passed before reaching the queue
 * (the "+9" of the 10th communicator) and reports the pool's live bytes,
 * split into the ContextIdLeads (fixed) and Cubes + JumpPoints (dyn).
 * bm_config_t.flags are the engine's MDQ_MATCH_FEAT_* optional structures
 * (0 = the seed design); fixed and item bytes are the engine's own model
 * (mdq_match_queue_bytes, mdq_match_item_bytes), so they include them.
 */
#include "bm_engine.h"

#include <stdlib.h>

#ifndef BM_NO_MDQ
#include "mdq_match.h"

typedef struct md_item {
    mdq_match_item_t it;
    bm_id_t id;
} md_item_t;

typedef struct md_cil {
    struct md_cil *next;
    uint32_t ctx;
    mdq_match_queue_t *q;
} md_cil_t;

typedef struct md_engine {
    mdq_match_pool_t *pool;
    md_cil_t *cils;
    uint32_t ncomm;
    bm_slab_t items;
    uint64_t cil_visits;
} md_engine_t;

static void *md_create(const bm_config_t *cfg)
{
    md_engine_t *e = calloc(1, sizeof(*e));
    e->pool = mdq_match_pool_create();
    e->ncomm = cfg->ncomm;
    bm_slab_init(&e->items, sizeof(md_item_t));
    md_cil_t **link = &e->cils;
    for (uint32_t c = 0; c < cfg->ncomm; c++) {
        md_cil_t *l = calloc(1, sizeof(*l));
        l->ctx = c;
        l->q = mdq_match_queue_create_ex(
            e->pool, cfg->comm_size, (mdq_match_mode_t) cfg->mode,
            cfg->adjustment >= 1.0 ? cfg->adjustment : MDQ_MATCH_ADJUSTMENT_DEFAULT,
            cfg->policy == BM_POLICY_FIRST ? MDQ_MATCH_POLICY_FIRST : MDQ_MATCH_POLICY_OLDEST,
            cfg->flags);
        if (!l->q)
            abort();
        *link = l;
        link = &l->next;
    }
    return e;
}

static void md_destroy(void *p)
{
    md_engine_t *e = p;
    for (md_cil_t *l = e->cils, *n; l; l = n) {
        n = l->next;
        mdq_match_queue_destroy(l->q);
        free(l);
    }
    mdq_match_pool_destroy(e->pool);
    bm_slab_fini(&e->items);
    free(e);
}

static mdq_match_queue_t *find_q(md_engine_t *e, uint32_t ctx)
{
    md_cil_t *l = e->cils;
    while (l->ctx != ctx) {
        l = l->next;
        e->cil_visits++;
    }
    return l->q;
}

static md_item_t *new_item(md_engine_t *e, int32_t rank, int32_t tag, bm_id_t id)
{
    md_item_t *m = bm_slab_get(&e->items);
    m->id = id;
    m->it.rank = rank;
    m->it.tag = tag;
    return m;
}

static bm_id_t matched(md_engine_t *e, mdq_match_item_t *it)
{
    md_item_t *m = (md_item_t *) it; /* it is the first member */
    bm_id_t id = m->id;
    bm_slab_put(&e->items, m);
    return id;
}

static bm_id_t md_post(void *p, uint32_t ctx, int32_t rank, int32_t tag, bm_id_t id, void **h)
{
    md_engine_t *e = p;
    mdq_match_queue_t *q = find_q(e, ctx);
    mdq_match_cursor_t cur;
    mdq_match_item_t *it = mdq_match_find_unexpected(q, rank, tag, true, &cur);
    if (it)
        return matched(e, it);
    md_item_t *m = new_item(e, rank, tag, id);
    mdq_match_append_posted(q, &m->it, &cur);
    if (h)
        *h = m;
    return 0;
}

static bm_id_t md_arrive(void *p, uint32_t ctx, int32_t rank, int32_t tag, bm_id_t id, void **h)
{
    md_engine_t *e = p;
    mdq_match_queue_t *q = find_q(e, ctx);
    mdq_match_cursor_t cur;
    mdq_match_item_t *it = mdq_match_take_posted(q, rank, tag, &cur);
    if (it)
        return matched(e, it);
    md_item_t *m = new_item(e, rank, tag, id);
    mdq_match_append_unexpected(q, &m->it, &cur);
    if (h)
        *h = m;
    return 0;
}

static bm_id_t md_probe(void *p, uint32_t ctx, int32_t rank, int32_t tag)
{
    md_engine_t *e = p;
    mdq_match_cursor_t cur;
    mdq_match_item_t *it = mdq_match_find_unexpected(find_q(e, ctx), rank, tag, false, &cur);
    return it ? ((md_item_t *) it)->id : 0;
}

static bool md_remove(void *p, uint32_t ctx, void *h)
{
    md_engine_t *e = p;
    md_item_t *m = h;
    if (!mdq_match_remove(find_q(e, ctx), &m->it))
        return false;
    bm_slab_put(&e->items, m);
    return true;
}

static void md_mem(void *p, bm_mem_t *m)
{
    md_engine_t *e = p;
    m->fixed = 0;
    for (md_cil_t *l = e->cils; l; l = l->next)
        m->fixed += mdq_match_queue_bytes(l->q);
    /* the pool's live bytes include the ContextIdLeads */
    m->dyn = mdq_match_pool_bytes_live(e->pool) - m->fixed;
    m->peak_dyn = mdq_match_pool_bytes_peak(e->pool) - m->fixed;
    m->item_size = mdq_match_item_bytes(e->cils->q);
    m->items = e->items.live * m->item_size;
}

static uint64_t md_visits(void *p)
{
    md_engine_t *e = p;
    uint64_t v = e->cil_visits;
    for (md_cil_t *l = e->cils; l; l = l->next)
        v += mdq_match_queue_stats(l->q)->visits;
    return v;
}

const bm_engine_ops_t bm_engine_mdq = {
    .name = "4d", .create = md_create, .destroy = md_destroy, .post = md_post,
    .arrive = md_arrive, .probe = md_probe, .remove = md_remove, .mem = md_mem,
    .visits = md_visits,
};
#else
const bm_engine_ops_t bm_engine_mdq = {.name = NULL};
#endif
