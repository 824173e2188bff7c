/*
 * Bench-local 4D engine ("4dx"): the seed design of the 4D queue (always in
 * 4D mode, never linear) written independently of ompi/mca/pml/mdq, used
 * (1) as a second implementation to cross-check the mdq module's counts and
 * (2) to measure candidate improvements, selected with bm_config_t.flags:
 *   BM_4DX_ALLUMQ  a per-context list of all unexpected messages in arrival
 *                  order (+16 B per item, +16 B per context); an
 *                  ANY_SOURCE receive takes the first compatible entry,
 *                  which is the OLDEST, instead of probing every JumpPoint.
 *   BM_4DX_CURSOR  a cached last-hit cursor: (rank >> bits) -> JumpPoint of
 *                  the previous operation; a hit skips the Cube and c1
 *                  descent (consecutive ranks share a JumpPoint).
 *   BM_4DX_SPLIT   busy JumpPoints get per-c0 sub-lists: once a JumpPoint's
 *                  list holds more than ds items, a (16*ds B x 2) c0 table is
 *                  attached and each rank's items are scanned alone.
 *   BM_4DX_C3ARRAY the Cubes are reached through an array of ds pointers in
 *                  the ContextIdLead (+8*ds B per context) instead of the
 *                  ordered c3 list: one visit instead of up to ds.
 *   BM_4DX_C1ARRAY c1 is an array too: a Cube holds ds*ds JumpPoint slots
 *                  (16 + 8*ds^2 B) and the c1 list walk becomes one visit.
 *   BM_4DX_LAZYGC  empty JumpPoints and Cubes stay in place (no free/alloc
 *                  churn when the same peers come back, e.g. halo
 *                  exchanges); memory stays at the high-water mark.
 * Object sizes follow the thesis' Table 4.4: ContextIdLead 56 B, JumpPoint
 * 48 B, Cube 16 + 8*ds B.
 */
#include "bm_4dx.h"
#include "bm_engine.h"

#include <stdlib.h>
#include <string.h>

typedef struct x_item {
    struct x_item *next, *prev;
    bm_id_t id;
    uint64_t seq;
    int32_t rank, tag;
    struct x_jp *home; /* JumpPoint holding it (NULL: ANY_SOURCE list) */
    struct x_item *all_next, *all_prev; /* BM_4DX_ALLUMQ only */
    uint32_t posted, pad;
} x_item_t;
#define X_ITEM_BASE_BYTES 48 /* next, prev, id, seq, rank/tag, home: without the extensions */

typedef struct x_list {
    x_item_t *head, *tail;
} x_list_t;

typedef struct x_jp { /* 48 B */
    struct x_jp *next;
    uint32_t c1, count; /* items in prq + umq */
    x_list_t prq, umq;
    x_list_t *split; /* BM_4DX_SPLIT only: 2*ds lists, [c0] prq, [ds+c0] umq */
} x_jp_t;
#define X_JP_BYTES 48


typedef struct x_cube { /* 16 + 8*ds B */
    struct x_cube *next;
    uint32_t c3, njp;
    x_jp_t *slot[];
} x_cube_t;

typedef struct x_cil { /* 56 B base */
    struct x_cil *next;
    int32_t ctx;
    uint32_t bits;
    x_cube_t *cubes;
    x_cube_t **c3tab; /* C3ARRAY: ds Cube pointers */
    x_list_t anysrc;
    uint64_t next_seq;
    uint64_t queued;
    /* extensions */
    x_item_t *all_head, *all_tail;  /* ALLUMQ */
    int64_t cur_key;                /* CURSOR: rank >> bits of cur_jp, -1 none */
    x_jp_t *cur_jp;
    x_cube_t *cur_cube;
} x_cil_t;
#define X_CIL_BYTES 56

typedef struct x_engine {
    x_cil_t *cils;
    unsigned bits, ds, flags;
    unsigned nslots; /* slots per Cube: ds, or ds*ds with C1ARRAY */
    uint32_t ncomm;
    bm_policy_t policy;
    bm_slab_t items, jps, cubes, splits;
    uint64_t visits;
    size_t dyn_peak;
} x_engine_t;

typedef struct x_cursor {
    x_cube_t **cube_link, *cube;
    x_jp_t **jp_link, *jp;
    uint32_t c3, c2, c1;
} x_cursor_t;

unsigned bm_4dx_bits(uint32_t size)
{
    unsigned b = 0;
    while ((1ull << b) < size)
        b++;
    b = (b + 3) / 4;
    return b < 2 ? 2 : b;
}

BM_FIFO_DEFINE(list, x_list_t, head, tail, x_item_t, next, prev)
/* ALLUMQ: the per-context list of all unexpected messages, arrival order */
BM_FIFO_DEFINE(allumq, x_cil_t, all_head, all_tail, x_item_t, all_next, all_prev)

static size_t dyn_bytes(const x_engine_t *e)
{
    return e->jps.live * X_JP_BYTES + e->cubes.live * (16 + 8 * (size_t) e->nslots)
           + e->splits.live * (2 * e->ds * sizeof(x_list_t));
}

static void *x_create(const bm_config_t *cfg)
{
    x_engine_t *e = calloc(1, sizeof(*e));
    e->bits = bm_4dx_bits(cfg->comm_size);
    e->ds = 1u << e->bits;
    e->flags = cfg->flags;
    e->nslots = (e->flags & BM_4DX_C1ARRAY) ? e->ds * e->ds : e->ds;
    e->ncomm = cfg->ncomm;
    e->policy = cfg->policy;
    bm_slab_init(&e->items, sizeof(x_item_t));
    bm_slab_init(&e->jps, sizeof(x_jp_t));
    bm_slab_init(&e->cubes, sizeof(x_cube_t) + e->nslots * sizeof(x_jp_t *));
    bm_slab_init(&e->splits, 2 * e->ds * sizeof(x_list_t));
    x_cil_t **link = &e->cils;
    for (uint32_t c = 0; c < cfg->ncomm; c++) {
        x_cil_t *l = calloc(1, sizeof(*l));
        l->ctx = (int32_t) c;
        l->bits = e->bits;
        l->cur_key = -1;
        if (e->flags & BM_4DX_C3ARRAY)
            l->c3tab = calloc(e->ds, sizeof(x_cube_t *));
        *link = l;
        link = &l->next;
    }
    return e;
}

static void x_destroy(void *p)
{
    x_engine_t *e = p;
    for (x_cil_t *l = e->cils, *n; l; l = n) {
        n = l->next;
        free(l->c3tab);
        free(l);
    }
    bm_slab_fini(&e->items);
    bm_slab_fini(&e->jps);
    bm_slab_fini(&e->cubes);
    bm_slab_fini(&e->splits);
    free(e);
}

BM_FIND_CIL_DEFINE(x_engine_t, x_cil_t)

/* (c3, c2 array, c1 list) descent; on failure the cursor holds insertion links */
static inline uint32_t slot_of(const x_engine_t *e, const x_cursor_t *c)
{
    return (e->flags & BM_4DX_C1ARRAY) ? c->c2 * e->ds + c->c1 : c->c2;
}

static bool descend(x_engine_t *e, x_cil_t *l, int32_t rank, x_cursor_t *c, bool count)
{
    unsigned b = e->bits, m = e->ds - 1;
    uint64_t v = 0;
    c->c3 = (uint32_t) rank >> (3 * b);
    c->c2 = ((uint32_t) rank >> (2 * b)) & m;
    c->c1 = ((uint32_t) rank >> b) & m;
    c->cube = NULL;
    c->jp = NULL;
    c->jp_link = NULL;
    if (count && (e->flags & BM_4DX_CURSOR) && l->cur_key == ((int64_t) rank >> b)) {
        e->visits++;
        c->cube = l->cur_cube;
        c->jp = l->cur_jp;
        return true;
    }
    x_cube_t **cl;
    if (e->flags & BM_4DX_C3ARRAY) {
        v = 1; /* the c3 index */
        cl = &l->c3tab[c->c3];
        c->cube_link = NULL; /* list link found on demand (cube_link_for) */
    } else {
        cl = &l->cubes;
        while (*cl) {
            v++;
            if ((*cl)->c3 >= c->c3)
                break;
            cl = &(*cl)->next;
        }
        c->cube_link = cl;
    }
    if (count)
        e->visits += v;
    if (!*cl || (*cl)->c3 != c->c3)
        return false;
    c->cube = *cl;
    v = 1; /* the c2 slot (c2,c1 slot with C1ARRAY) */
    x_jp_t **jl = &c->cube->slot[slot_of(e, c)];
    while (*jl) {
        v++;
        if ((*jl)->c1 >= c->c1)
            break;
        jl = &(*jl)->next;
    }
    c->jp_link = jl;
    if (count)
        e->visits += v;
    if (!*jl || (*jl)->c1 != c->c1)
        return false;
    c->jp = *jl;
    if (e->flags & BM_4DX_CURSOR) {
        l->cur_key = (int64_t) rank >> b;
        l->cur_jp = c->jp;
        l->cur_cube = c->cube;
    }
    return true;
}

/* link to the Cube with c3 (or its insertion point) in the ordered Cube
 * list, found from the c3 array's predecessor (C3ARRAY; not a search) */
static x_cube_t **cube_link_for(x_engine_t *e, x_cil_t *l, uint32_t c3)
{
    for (uint32_t p = c3; p-- > 0;)
        if (l->c3tab[p])
            return &l->c3tab[p]->next;
    (void) e;
    return &l->cubes;
}

static x_jp_t *ensure_jp(x_engine_t *e, x_cil_t *l, x_cursor_t *c)
{
    if (c->jp)
        return c->jp;
    if (!c->cube) {
        x_cube_t *cb = bm_slab_get(&e->cubes);
        cb->c3 = c->c3;
        cb->njp = 0;
        memset(cb->slot, 0, e->nslots * sizeof(x_jp_t *));
        if (!c->cube_link)
            c->cube_link = cube_link_for(e, l, c->c3);
        cb->next = *c->cube_link;
        *c->cube_link = cb;
        if (e->flags & BM_4DX_C3ARRAY)
            l->c3tab[c->c3] = cb;
        c->cube = cb;
        c->jp_link = &cb->slot[slot_of(e, c)];
    } else if (!c->jp_link) {
        x_cursor_t tmp;
        descend(e, l, (int32_t) ((c->c3 << (3 * e->bits)) | (c->c2 << (2 * e->bits))
                                 | (c->c1 << e->bits)),
                &tmp, false);
        c->jp_link = tmp.jp_link;
    }
    x_jp_t *j = bm_slab_get(&e->jps);
    memset(j, 0, sizeof(*j));
    j->c1 = c->c1;
    j->next = *c->jp_link;
    *c->jp_link = j;
    c->cube->njp++;
    c->jp = j;
    size_t d = dyn_bytes(e);
    if (d > e->dyn_peak)
        e->dyn_peak = d;
    return j;
}

/* free an empty JumpPoint (and its Cube if that empties too) */
static void gc(x_engine_t *e, x_cil_t *l, x_jp_t *j, int32_t rank)
{
    if (j->count || (e->flags & BM_4DX_LAZYGC))
        return;
    x_cursor_t c;
    descend(e, l, rank, &c, false); /* find the links; not a search */
    *c.jp_link = j->next;
    if (j->split)
        bm_slab_put(&e->splits, j->split);
    bm_slab_put(&e->jps, j);
    if (l->cur_jp == j)
        l->cur_key = -1;
    if (--c.cube->njp == 0) {
        if (e->flags & BM_4DX_C3ARRAY) {
            c.cube_link = cube_link_for(e, l, c.c3);
            l->c3tab[c.c3] = NULL;
        }
        *c.cube_link = c.cube->next;
        bm_slab_put(&e->cubes, c.cube);
    }
}

static x_list_t *jp_list(x_engine_t *e, x_jp_t *j, int32_t rank, bool posted)
{
    if (j->split)
        return &j->split[(posted ? 0 : e->ds) + ((uint32_t) rank & (e->ds - 1))];
    return posted ? &j->prq : &j->umq;
}

/* BM_4DX_SPLIT: distribute a busy JumpPoint's lists per c0 (order kept per rank) */
static void maybe_split(x_engine_t *e, x_jp_t *j)
{
    if (!(e->flags & BM_4DX_SPLIT) || j->split || j->count <= e->ds)
        return;
    x_list_t *s = bm_slab_get(&e->splits);
    memset(s, 0, 2 * e->ds * sizeof(x_list_t));
    j->split = s;
    for (int posted = 0; posted < 2; posted++) {
        x_list_t *src = posted ? &j->prq : &j->umq;
        for (x_item_t *it = src->head, *n; it; it = n) {
            n = it->next;
            list_append(jp_list(e, j, it->rank, posted), it);
        }
        src->head = src->tail = NULL;
    }
    size_t d = dyn_bytes(e);
    if (d > e->dyn_peak)
        e->dyn_peak = d;
}

static x_item_t *new_item(x_engine_t *e, x_cil_t *l, int32_t rank, int32_t tag, bm_id_t id,
                          int posted)
{
    x_item_t *it = bm_slab_get(&e->items);
    it->id = id;
    it->rank = rank;
    it->tag = tag;
    it->posted = (uint32_t) posted;
    it->seq = l->next_seq++;
    it->home = NULL;
    l->queued++;
    return it;
}

static void unlink_item(x_engine_t *e, x_cil_t *l, x_item_t *it)
{
    if (!it->home) {
        list_unlink(&l->anysrc, it);
    } else {
        list_unlink(jp_list(e, it->home, it->rank, it->posted), it);
        it->home->count--;
    }
    if (!it->posted && (e->flags & BM_4DX_ALLUMQ)) {
        allumq_unlink(l, it);
    }
    l->queued--;
    x_jp_t *j = it->home;
    int32_t rank = it->rank;
    bm_slab_put(&e->items, it);
    if (j)
        gc(e, l, j, rank);
}

static x_item_t *scan_umq(x_engine_t *e, x_list_t *lst, int32_t rank, int32_t tag)
{
    for (x_item_t *it = lst->head; it; it = it->next) {
        e->visits++;
        if ((rank == BM_ANY_SOURCE || it->rank == rank) && bm_tag_ok(tag, it->tag))
            return it;
    }
    return NULL;
}

static x_item_t *find_umq(x_engine_t *e, x_cil_t *l, int32_t rank, int32_t tag, x_cursor_t *c)
{
    if (rank != BM_ANY_SOURCE) {
        if (!descend(e, l, rank, c, true))
            return NULL;
        return scan_umq(e, jp_list(e, c->jp, rank, false), rank, tag);
    }
    if (e->flags & BM_4DX_ALLUMQ) {
        for (x_item_t *it = l->all_head; it; it = it->all_next) {
            e->visits++;
            if (bm_tag_ok(tag, it->tag))
                return it;
        }
        return NULL;
    }
    x_item_t *best = NULL;
    for (x_cube_t *cb = l->cubes; cb; cb = cb->next) {
        e->visits++;
        for (uint32_t s = 0; s < e->nslots; s++) {
            e->visits++;
            for (x_jp_t *j = cb->slot[s]; j; j = j->next) {
                e->visits++;
                unsigned nl = j->split ? e->ds : 1;
                for (unsigned k = 0; k < nl; k++) {
                    x_list_t *lst = j->split ? &j->split[e->ds + k] : &j->umq;
                    x_item_t *it = scan_umq(e, lst, BM_ANY_SOURCE, tag);
                    if (it && (!best || it->seq < best->seq)) {
                        best = it;
                        if (e->policy == BM_POLICY_FIRST)
                            return best;
                    }
                }
            }
        }
    }
    return best;
}

static bm_id_t x_post(void *p, uint32_t ctx, int32_t rank, int32_t tag, bm_id_t id, void **h)
{
    x_engine_t *e = p;
    x_cil_t *l = find_cil(e, ctx);
    x_cursor_t c;
    x_item_t *m = find_umq(e, l, rank, tag, &c);
    if (m) {
        bm_id_t mid = m->id;
        unlink_item(e, l, m);
        return mid;
    }
    x_item_t *it = new_item(e, l, rank, tag, id, 1);
    if (rank == BM_ANY_SOURCE) {
        list_append(&l->anysrc, it);
    } else {
        x_jp_t *j = ensure_jp(e, l, &c);
        it->home = j;
        list_append(jp_list(e, j, rank, true), it);
        j->count++;
        maybe_split(e, j);
    }
    if (h)
        *h = it;
    return 0;
}

static bm_id_t x_arrive(void *p, uint32_t ctx, int32_t rank, int32_t tag, bm_id_t id, void **h)
{
    x_engine_t *e = p;
    x_cil_t *l = find_cil(e, ctx);
    x_cursor_t c;
    x_item_t *best = NULL;
    if (descend(e, l, rank, &c, true))
        for (x_item_t *it = jp_list(e, c.jp, rank, true)->head; it; it = it->next) {
            e->visits++;
            if (it->rank == rank && bm_tag_ok(it->tag, tag)) {
                best = it;
                break;
            }
        }
    for (x_item_t *it = l->anysrc.head; it; it = it->next) {
        if (best && it->seq > best->seq)
            break;
        e->visits++;
        if (bm_tag_ok(it->tag, tag)) {
            best = it;
            break;
        }
    }
    if (best) {
        bm_id_t mid = best->id;
        unlink_item(e, l, best);
        return mid;
    }
    x_item_t *it = new_item(e, l, rank, tag, id, 0);
    x_jp_t *j = ensure_jp(e, l, &c);
    it->home = j;
    list_append(jp_list(e, j, rank, false), it);
    j->count++;
    if (e->flags & BM_4DX_ALLUMQ) {
        allumq_append(l, it);
    }
    maybe_split(e, j);
    if (h)
        *h = it;
    return 0;
}

static bm_id_t x_probe(void *p, uint32_t ctx, int32_t rank, int32_t tag)
{
    x_engine_t *e = p;
    x_cursor_t c;
    x_item_t *m = find_umq(e, find_cil(e, ctx), rank, tag, &c);
    return m ? m->id : 0;
}

static bool x_remove(void *p, uint32_t ctx, void *h)
{
    x_engine_t *e = p;
    unlink_item(e, find_cil(e, ctx), h);
    return true;
}

static void x_mem(void *p, bm_mem_t *m)
{
    x_engine_t *e = p;
    size_t cil = X_CIL_BYTES, item = X_ITEM_BASE_BYTES;
    if (e->flags & BM_4DX_ALLUMQ) {
        cil += 2 * sizeof(void *);
        item += 2 * sizeof(void *);
    }
    if (e->flags & BM_4DX_CURSOR)
        cil += 3 * sizeof(void *);
    if (e->flags & BM_4DX_C3ARRAY)
        cil += e->ds * sizeof(void *);
    m->fixed = e->ncomm * cil;
    m->dyn = dyn_bytes(e);
    m->peak_dyn = e->dyn_peak;
    m->item_size = item;
    m->items = e->items.live * item;
}

static uint64_t x_visits(void *p) { return ((x_engine_t *) p)->visits; }

const bm_engine_ops_t bm_engine_4dx = {
    .name = "4dx", .create = x_create, .destroy = x_destroy, .post = x_post,
    .arrive = x_arrive, .probe = x_probe, .remove = x_remove, .mem = x_mem,
    .visits = x_visits,
};
