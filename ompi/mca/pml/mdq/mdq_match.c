/*
 * mdq_match: the 4D multidimensional matching queue (Zounmevo & Afsahi).
 *
 * A rank r of a communicator of size S is split into four slices of
 * bits = log2(ds) bits, ds = max(4, 2^ceil(log2(S)/4)):
 *     c3 = r >> 3b, c2 = (r >> 2b) & (ds-1), c1 = (r >> b) & (ds-1), c0 = r & (ds-1).
 * The queue (ContextIdLead) holds an ascending list of Cubes (c3), each Cube
 * an array of ds c1-lists (indexed by c2) of JumpPoints in ascending c1
 * order; a JumpPoint holds the short PRQ and UMQ FIFOs of its ds ranks.
 * ANY_SOURCE receives live in a separate list. Every queued item carries a
 * per-queue sequence number; a message takes the candidate with the smaller
 * sequence among the first match of its rank's JumpPoint PRQ and the first
 * match of the ANY_SOURCE list (MPI ordering across wildcards).
 * Below the size threshold (3*ds+1)*adjustment the queue is two plain FIFO
 * lists (linear mode), the reference semantics.
 *
 * Visit counting (stats.visits), the convention of thesis section 4.3.1
 * (Table 4.2: 1 + ds + 1 + ds + ds = 26/50/98 at S = 4096/65536/2^20):
 *   1 for the queue head (ContextIdLead) of every search,
 *   1 per Cube dereferenced on the c3 list (incl. the one that ends the walk),
 *   1 for the c2 slot index (only if the Cube exists),
 *   1 per JumpPoint dereferenced on the c1 list (incl. the one ending the walk),
 *   1 per queue item compared (JumpPoint lists, ANY_SOURCE list, linear lists).
 * An ANY_SOURCE UMQ search in 4D counts 1 + Cubes + the c2 slots read (up to
 * the slot of a Cube's last JumpPoint, known from its njp) + JumpPoints +
 * items. Insertions and removals by identity do not count.
 * So a search for the last rank of a full queue with one item per rank costs
 * exactly 1 + ds + 1 + ds + ds. In general a specific search costs at most
 * 1 + ds + 1 + ds + (items of its JumpPoint list), plus the ANY_SOURCE
 * receives compared on message arrival (Eqs. 4.12, 4.13).
 *
 * Optional structures (mdq_match_queue_create_ex features, mdq_match.h):
 * ALL_UMQ threads every 4D unexpected message on one arrival-order list, so
 * an ANY_SOURCE search counts 1 + the items compared; LAST_HIT caches the
 * JumpPoint of the last hit (a search for one of its ranks counts 2: queue
 * head + JumpPoint); C3_ARRAY replaces the Cube walk by one array read
 * (counted 1, whether or not the Cube exists); SPLIT scans one rank's list of
 * a busy JumpPoint (+1 for its table entry; an OLDEST ANY_SOURCE scan without
 * ALL_UMQ reads all ds entries of a split JumpPoint).
 *
 * Tags: MDQ_MATCH_ANY_TAG accepts tags >= 0 only, other tags match exactly
 * (negative internal tags included). ANY_SOURCE receives against the 4D UMQ:
 * POLICY_OLDEST takes the globally oldest match (the linked-list result);
 * POLICY_FIRST the first in (c3, c2, c1) order, the oldest of its sender.
 */
#include "mdq_match_internal.h"

#include <stdlib.h>
#include <string.h>

#define LIKELY(x) __builtin_expect(!!(x), 1)
#define UNLIKELY(x) __builtin_expect(!!(x), 0)

/* ------------------------------------------------------------------ sizing */

static unsigned ceil_log2_u32(uint32_t x)
{
    return x <= 1 ? 0 : 32u - (unsigned) __builtin_clz(x - 1);
}

unsigned mdq_match_bits_for_size(uint32_t comm_size)
{
    /* ceil(ceil(log2 S)/4) == ceil(log2(S)/4); clamp to ds >= 4 */
    unsigned b = (ceil_log2_u32(comm_size) + 3) >> 2;
    return b < 2 ? 2 : b;
}

uint32_t mdq_match_threshold(uint32_t comm_size, double adjustment)
{
    if (!(adjustment >= 1.0)) /* also rejects NaN */
        return 0;
    double t = (double) (3u * (1u << mdq_match_bits_for_size(comm_size)) + 1u) * adjustment;
    if (t >= (double) UINT32_MAX)
        return UINT32_MAX;
    uint32_t u = (uint32_t) t; /* ceil without libm */
    return (double) u < t ? u + 1 : u;
}

void mdq_match_decompose(uint32_t rank, unsigned bits, uint32_t c[4])
{
    if (bits > 16) /* keep every shift defined; real queues use bits <= 8 */
        bits = 16;
    uint64_t r = rank, m = (1ull << bits) - 1u;
    c[0] = (uint32_t) (r >> (3 * bits));
    c[1] = (uint32_t) ((r >> (2 * bits)) & m);
    c[2] = (uint32_t) ((r >> bits) & m);
    c[3] = (uint32_t) (r & m);
}

/* ------------------------------------------------------------ item lists */

/* One item sits on up to two lists: its JumpPoint / queue list (links next,
 * prev) and, with ALL_UMQ, the arrival-order list (all_next, all_prev). Both
 * pairs are (next, prev) adjacent, so one implementation serves both,
 * addressed by the pair's offset (a constant after inlining). Lists are
 * NULL-terminated forwards and head->prev is the tail. */
#define LINKS_Q offsetof(mdq_match_item_t, next)
#define LINKS_ALL offsetof(mdq_match_item_t, all_next)
_Static_assert(offsetof(mdq_match_item_t, prev) == LINKS_Q + sizeof(void *), "next, prev adjacent");
_Static_assert(offsetof(mdq_match_item_t, all_prev) == LINKS_ALL + sizeof(void *),
               "all_next, all_prev adjacent");

static inline mdq_match_item_t **lnk(mdq_match_item_t *it, size_t off)
{
    return (mdq_match_item_t **) (void *) ((char *) it + off); /* [0] next, [1] prev */
}

static inline void list_append(mdq_match_item_t **h, mdq_match_item_t *it, size_t off)
{
    mdq_match_item_t *head = *h;
    lnk(it, off)[0] = NULL;
    if (!head) {
        lnk(it, off)[1] = it;
        *h = it;
    } else {
        mdq_match_item_t *tail = lnk(head, off)[1];
        lnk(tail, off)[0] = it;
        lnk(it, off)[1] = tail;
        lnk(head, off)[1] = it;
    }
}

static inline void list_unlink(mdq_match_item_t **h, mdq_match_item_t *it, size_t off)
{
    mdq_match_item_t *p = lnk(it, off)[1], *n = lnk(it, off)[0];
    if (it == *h)
        *h = n;
    else
        lnk(p, off)[0] = n;
    if (n)
        lnk(n, off)[1] = p;
    else if (*h)
        lnk(*h, off)[1] = p;
}

static inline void ilist_append(mdq_match_item_t **h, mdq_match_item_t *it)
{
    list_append(h, it, LINKS_Q);
}

static inline void ilist_unlink(mdq_match_item_t **h, mdq_match_item_t *it)
{
    list_unlink(h, it, LINKS_Q);
}

static inline void all_append(mdq_match_item_t **h, mdq_match_item_t *it)
{
    list_append(h, it, LINKS_ALL);
}

static inline void all_unlink(mdq_match_item_t **h, mdq_match_item_t *it)
{
    list_unlink(h, it, LINKS_ALL);
    it->all_next = it->all_prev = NULL;
}

/* ANY_TAG matches only tags >= 0; any other receive tag matches exactly. */
static inline bool tag_ok(int32_t want, int32_t have)
{
    return want == MDQ_MATCH_ANY_TAG ? have >= 0 : want == have;
}

static inline void bump_gen(mdq_cil_t *L)
{
    if (UNLIKELY(!(++L->gen & 0x7fffffffu)))
        ++L->gen;
}

static inline int32_t gen_stamp(const mdq_cil_t *L)
{
    return (int32_t) (L->gen & 0x7fffffffu);
}

/* -------------------------------------------------------------- descent */

typedef struct descent {
    mdq_cube_t *prev_cube; /* insertion point on the c3 list (NULL: head) */
    mdq_cube_t *cube;      /* Cube c3, or NULL */
    mdq_jp_t *prev_jp;     /* insertion point on the c1 list (NULL: slot head) */
    mdq_jp_t *jp;          /* JumpPoint (c3,c2,c1), or NULL */
    uint32_t c3, c2, c1;
} descent_t;

/* Walk to the JumpPoint of rank; returns the visits (queue head included). */
static inline uint64_t descend(mdq_match_queue_t *q, uint32_t rank, descent_t *d)
{
    const mdq_cil_t *L = &q->cil;
    const unsigned b = L->bits;
    const uint32_t m = (1u << b) - 1u;
    const uint32_t c3 = (uint32_t) ((uint64_t) rank >> (3 * b));
    const uint32_t c1 = (rank >> b) & m;
    uint64_t v = 1;
    d->c3 = c3;
    d->c2 = (rank >> (2 * b)) & m;
    d->c1 = c1;
    d->prev_jp = NULL;
    d->jp = NULL;

    if (q->last_jp && q->last_key == rank >> b) { /* LAST_HIT */
        mdq_jp_t *j = q->last_jp;
        d->prev_cube = NULL; /* only a hint for cube_unlink */
        d->cube = j->cube;
        d->prev_jp = j->prev;
        d->jp = j;
        return 2;
    }
    mdq_cube_t *pc = NULL, *c;
    if (q->c3tab) {
        v++; /* the c3 array entry */
        c = c3 < q->nc3 ? q->c3tab[c3] : NULL;
    } else {
        c = L->cubes;
        while (c && c->c3 < c3) {
            v++;
            pc = c;
            c = c->next;
        }
        v += c != NULL;
    }
    d->prev_cube = pc;
    if (!c || c->c3 != c3) {
        d->cube = NULL;
        return v;
    }
    d->cube = c;
    v++; /* the c2 slot */
    mdq_jp_t *pj = NULL, *j = c->slot[d->c2];
    while (j && j->c1 < c1) {
        v++;
        pj = j;
        j = j->next;
    }
    v += j != NULL;
    d->prev_jp = pj;
    if (j && j->c1 == c1) {
        d->jp = j;
        if (q->features & MDQ_MATCH_FEAT_LAST_HIT) {
            q->last_jp = j;
            q->last_key = rank >> b;
        }
    }
    return v;
}

static void cursor_save(const mdq_cil_t *L, mdq_match_cursor_t *cur, int32_t rank,
                        const descent_t *d)
{
    cur->slot[0] = d->prev_cube;
    cur->slot[1] = d->cube;
    cur->slot[2] = d->prev_jp;
    cur->slot[3] = d->jp;
    cur->coord[0] = d->c3;
    cur->coord[1] = d->c2;
    cur->coord[2] = d->c1;
    cur->rank = rank;
    cur->valid = gen_stamp(L);
}

static inline void cursor_clear(mdq_match_cursor_t *cur)
{
    if (cur)
        cur->valid = 0;
}

/* ------------------------------------------------- JumpPoint / Cube life */

static void cube_unlink(mdq_match_queue_t *q, mdq_cube_t *cube, mdq_cube_t *prev_hint)
{
    mdq_cube_t **link;
    if (q->c3tab)
        link = &q->c3tab[cube->c3];
    else if (prev_hint && prev_hint->next == cube)
        link = &prev_hint->next;
    else if (q->cil.cubes == cube)
        link = &q->cil.cubes;
    else {
        /* only for removal by identity: walk <= ds Cubes */
        link = &q->cil.cubes;
        while (*link != cube)
            link = &(*link)->next;
    }
    *link = q->c3tab ? NULL : cube->next;
    mdq_pool_put(q->cil.pool, q->cil.bits, cube);
    q->n_cubes--;
}

/* Free an empty JumpPoint, and its Cube if that became empty. */
static void jp_release(mdq_match_queue_t *q, mdq_jp_t *jp, mdq_cube_t *prev_cube_hint)
{
    mdq_cube_t *cube = jp->cube;
    if (jp->prev)
        jp->prev->next = jp->next;
    else
        cube->slot[jp->c2] = jp->next;
    if (jp->next)
        jp->next->prev = jp->prev;
    if (q->last_jp == jp)
        q->last_jp = NULL;
    if (jp->split) {
        mdq_pool_put(q->cil.pool, q->cil.bits + 1u, jp->c0tab);
        q->n_splits--;
    }
    mdq_pool_put(q->cil.pool, 0, jp);
    q->n_jps--;
    if (--cube->njp == 0)
        cube_unlink(q, cube, prev_cube_hint);
}

/* Create the missing Cube / JumpPoint at the descent's insertion points.
 * NULL when the pool refuses (out of memory or over its byte limit). */
static mdq_jp_t *jp_ensure(mdq_match_queue_t *q, descent_t *d)
{
    mdq_cil_t *L = &q->cil;
    if (d->jp)
        return d->jp;
    mdq_cube_t *cube = d->cube;
    bool new_cube = false;
    if (!cube) {
        if (q->c3tab && d->c3 >= q->nc3)
            return NULL; /* rank outside the communicator: keep it, linearly */
        cube = mdq_pool_get(L->pool, L->bits);
        if (UNLIKELY(!cube))
            return NULL;
        cube->c3 = d->c3;
        cube->njp = 0;
        memset(cube->slot, 0, sizeof(mdq_jp_t *) << L->bits);
        if (q->c3tab) {
            cube->next = NULL;
            q->c3tab[d->c3] = cube;
        } else if (d->prev_cube) {
            cube->next = d->prev_cube->next;
            d->prev_cube->next = cube;
        } else {
            cube->next = L->cubes;
            L->cubes = cube;
        }
        q->n_cubes++;
        d->cube = cube;
        d->prev_jp = NULL;
        new_cube = true;
    }
    mdq_jp_t *jp = mdq_pool_get(L->pool, 0);
    if (UNLIKELY(!jp)) {
        if (new_cube)
            cube_unlink(q, cube, d->prev_cube);
        d->cube = new_cube ? NULL : d->cube;
        return NULL;
    }
    jp->c1 = d->c1;
    jp->c2 = d->c2;
    jp->cube = cube;
    jp->prq = jp->umq = NULL;
    jp->split = 0;
    jp->count = 0;
    jp->prev = d->prev_jp;
    if (d->prev_jp) {
        jp->next = d->prev_jp->next;
        d->prev_jp->next = jp;
    } else {
        jp->next = cube->slot[d->c2];
        cube->slot[d->c2] = jp;
    }
    if (jp->next)
        jp->next->prev = jp;
    cube->njp++;
    q->n_jps++;
    d->jp = jp;
    return jp;
}

/* The list of a JumpPoint holding rank's posted (umq = 0) or unexpected
 * (umq = 1) items: the JumpPoint's own, or the rank's own once split. */
static inline mdq_match_item_t **jp_list(mdq_jp_t *jp, unsigned umq, int32_t rank, unsigned bits)
{
    if (jp->split)
        return &jp->c0tab[(umq << bits) + ((uint32_t) rank & ((1u << bits) - 1u))];
    return umq ? &jp->umq : &jp->prq;
}

/* SPLIT: give a busy JumpPoint per-rank heads; each rank's items keep their
 * order. A refused table leaves the JumpPoint as it is. */
static void jp_split(mdq_match_queue_t *q, mdq_jp_t *jp)
{
    const unsigned bits = q->cil.bits;
    if (bits + 1u > MDQ_MAX_BITS)
        return;
    mdq_match_item_t **tab = mdq_pool_get(q->cil.pool, bits + 1u);
    if (!tab)
        return;
    memset(tab, 0, sizeof(*tab) << (bits + 1u));
    mdq_match_item_t *chain[2] = {jp->prq, jp->umq};
    jp->c0tab = tab;
    jp->unused = NULL;
    jp->split = 1;
    q->n_splits++;
    for (unsigned k = 0; k < 2; k++)
        for (mdq_match_item_t *it = chain[k], *n; it; it = n) {
            n = it->next;
            ilist_append(jp_list(jp, k, it->rank, bits), it);
        }
}

static inline void jp_add(mdq_match_queue_t *q, mdq_jp_t *jp, unsigned umq, mdq_match_item_t *it)
{
    ilist_append(jp_list(jp, umq, it->rank, q->cil.bits), it);
    if (++jp->count > (1u << q->cil.bits) && !jp->split && (q->features & MDQ_MATCH_FEAT_SPLIT))
        jp_split(q, jp);
}

/* Unlink an item from its JumpPoint list (and a UMQ item from the ALL_UMQ
 * list); free the JumpPoint if it became empty. */
static inline void jp_unlink(mdq_match_queue_t *q, mdq_jp_t *jp, unsigned umq, mdq_match_item_t *it,
                             mdq_cube_t *prev_cube_hint)
{
    ilist_unlink(jp_list(jp, umq, it->rank, q->cil.bits), it);
    if (umq && (q->features & MDQ_MATCH_FEAT_ALL_UMQ))
        all_unlink(&q->all_umq, it);
    if (--jp->count == 0)
        jp_release(q, jp, prev_cube_hint);
}

static inline void umq_unlink_4d(mdq_match_queue_t *q, mdq_jp_t *jp, mdq_match_item_t *it,
                                 mdq_cube_t *prev_cube_hint)
{
    jp_unlink(q, jp, 1, it, prev_cube_hint);
}

/* ------------------------------------------------------ sorting / drain */

/* Stable merge sort of a NULL-terminated chain (next links) by seq. */
static mdq_match_item_t *chain_sort(mdq_match_item_t *head)
{
    if (!head || !head->next)
        return head;
    /* bottom-up: merge runs of width w */
    size_t n = 0;
    for (mdq_match_item_t *p = head; p; p = p->next)
        n++;
    for (size_t w = 1; w < n; w <<= 1) {
        mdq_match_item_t *out = NULL, **tailp = &out, *rest = head;
        while (rest) {
            mdq_match_item_t *a = rest, *b, *p = rest;
            size_t i;
            for (i = 1; i < w && p->next; i++)
                p = p->next;
            b = p->next;
            p->next = NULL;
            p = b;
            for (i = 1; p && i < w && p->next; i++)
                p = p->next;
            if (p) {
                rest = p->next;
                p->next = NULL;
            } else
                rest = NULL;
            while (a && b) {
                if (b->seq < a->seq) {
                    *tailp = b;
                    b = b->next;
                } else {
                    *tailp = a;
                    a = a->next;
                }
                tailp = &(*tailp)->next;
            }
            *tailp = a ? a : b;
            while (*tailp)
                tailp = &(*tailp)->next;
        }
        head = out;
    }
    return head;
}

/* Detach every item (posted / unexpected chains, sorted by seq) and return
 * all Cubes and JumpPoints to the pool. The queue is left empty. */
static void detach_all(mdq_match_queue_t *q, mdq_match_item_t **posted, mdq_match_item_t **unexp)
{
    mdq_cil_t *L = &q->cil;
    mdq_match_item_t *ph = L->posted, *uh = L->unexpected;
    mdq_match_item_t **pt = &ph, **ut = &uh;
    while (*pt)
        pt = &(*pt)->next;
    while (*ut)
        ut = &(*ut)->next;
    for (mdq_cube_t *c = mdq_cube_first(q), *cn; c; c = cn) {
        cn = mdq_cube_next(q, c);
        for (uint32_t s = 0; s < (1u << L->bits); s++) {
            for (mdq_jp_t *j = c->slot[s], *jn; j; j = jn) {
                jn = j->next;
                const uint32_t nl = j->split ? 1u << L->bits : 1u;
                for (uint32_t c0 = 0; c0 < nl; c0++) {
                    *pt = *jp_list(j, 0, (int32_t) c0, L->bits);
                    while (*pt)
                        pt = &(*pt)->next;
                    *ut = *jp_list(j, 1, (int32_t) c0, L->bits);
                    while (*ut)
                        ut = &(*ut)->next;
                }
                if (j->split)
                    mdq_pool_put(L->pool, L->bits + 1u, j->c0tab);
                mdq_pool_put(L->pool, 0, j);
            }
        }
        mdq_pool_put(L->pool, L->bits, c);
    }
    L->cubes = NULL;
    L->posted = NULL;
    L->unexpected = NULL;
    if (q->c3tab)
        memset(q->c3tab, 0, sizeof(*q->c3tab) * q->nc3);
    q->all_umq = NULL;
    q->last_jp = NULL;
    q->n_splits = 0;
    q->n_cubes = q->n_jps = 0;
    q->stats.prq_length = q->stats.umq_length = 0;
    *posted = chain_sort(ph);
    *unexp = chain_sort(uh);
    bump_gen(L);
}

static void relink_linear(mdq_match_queue_t *q, mdq_match_item_t **h, mdq_match_item_t *chain,
                          unsigned kind, uint64_t *len)
{
    mdq_match_item_t *prev = NULL;
    *h = chain;
    for (mdq_match_item_t *it = chain; it; it = it->next) {
        it->prev = prev;
        it->home = MDQ_HOME(q, kind);
        prev = it;
        (*len)++;
    }
    if (chain)
        chain->prev = prev;
}

/* The pool refused a Cube/JumpPoint: keep every message by turning this
 * queue into linear mode (same matching results; order kept by seq). */
static void degrade_to_linear(mdq_match_queue_t *q)
{
    mdq_match_item_t *p, *u;
    detach_all(q, &p, &u);
    q->cil.is4d = 0;
    relink_linear(q, &q->cil.posted, p, MDQ_HOME_Q_PRQ, &q->stats.prq_length);
    relink_linear(q, &q->cil.unexpected, u, MDQ_HOME_Q_UMQ, &q->stats.umq_length);
}

/* ---------------------------------------------------------------- queues */

/* fixed bytes of a queue with these features (see mdq_match.h) */
static size_t queue_bytes_for(unsigned features, uint32_t nc3)
{
    size_t b = sizeof(mdq_cil_t);
    if (features & MDQ_MATCH_FEAT_ALL_UMQ)
        b += sizeof(mdq_match_item_t *);
    if (features & MDQ_MATCH_FEAT_LAST_HIT)
        b += sizeof(mdq_jp_t *) + 2 * sizeof(uint32_t);
    if (features & MDQ_MATCH_FEAT_C3_ARRAY)
        b += sizeof(mdq_cube_t **) + sizeof(mdq_cube_t *) * (size_t) nc3;
    return b;
}

mdq_match_queue_t *mdq_match_queue_create(mdq_match_pool_t *pool, uint32_t comm_size,
                                          mdq_match_mode_t mode, double adjustment,
                                          mdq_match_policy_t policy)
{
    return mdq_match_queue_create_ex(pool, comm_size, mode, adjustment, policy,
                                     MDQ_MATCH_FEAT_DEFAULT);
}

mdq_match_queue_t *mdq_match_queue_create_ex(mdq_match_pool_t *pool, uint32_t comm_size,
                                             mdq_match_mode_t mode, double adjustment,
                                             mdq_match_policy_t policy, unsigned features)
{
    if (!pool || comm_size == 0 || !(adjustment >= 1.0) || (unsigned) mode > MDQ_MATCH_MODE_4D
        || (unsigned) policy > MDQ_MATCH_POLICY_FIRST || (features & ~MDQ_MATCH_FEAT_MASK))
        return NULL;
    const unsigned bits = mdq_match_bits_for_size(comm_size);
    const uint32_t nc3 = ((comm_size - 1u) >> (3 * bits)) + 1u;
    const size_t bytes = queue_bytes_for(features, nc3);
    if (!mdq_pool_charge(pool, bytes))
        return NULL;
    mdq_match_queue_t *q = calloc(1, sizeof(*q));
    if (q && (features & MDQ_MATCH_FEAT_C3_ARRAY)) {
        q->c3tab = calloc(nc3, sizeof(*q->c3tab));
        if (!q->c3tab) {
            free(q);
            q = NULL;
        }
    }
    if (!q) {
        mdq_pool_uncharge(pool, bytes);
        return NULL;
    }
    q->features = features;
    q->nc3 = nc3;
    mdq_cil_t *L = &q->cil;
    L->pool = pool;
    L->size = comm_size;
    L->bits = (uint8_t) bits;
    L->policy = (uint8_t) policy;
    L->mode = (uint8_t) mode;
    /* start each queue's cursor stamps elsewhere, so that a cursor handed to
     * the wrong queue is (almost certainly) recognised as stale */
    L->gen = (uint32_t) (((uintptr_t) q >> 4) * 2654435761u);
    bump_gen(L);
    if (mode == MDQ_MATCH_MODE_AUTO)
        L->is4d = comm_size >= mdq_match_threshold(comm_size, adjustment);
    else
        L->is4d = mode == MDQ_MATCH_MODE_4D;
    return q;
}

void mdq_match_queue_destroy(mdq_match_queue_t *q)
{
    if (!q)
        return;
    /* items are not touched: the caller may already have freed them */
    mdq_cil_t *L = &q->cil;
    for (mdq_cube_t *c = mdq_cube_first(q), *cn; c; c = cn) {
        cn = mdq_cube_next(q, c);
        for (uint32_t s = 0; s < (1u << L->bits); s++) {
            for (mdq_jp_t *j = c->slot[s], *jn; j; j = jn) {
                jn = j->next;
                if (j->split)
                    mdq_pool_put(L->pool, L->bits + 1u, j->c0tab);
                mdq_pool_put(L->pool, 0, j);
            }
        }
        mdq_pool_put(L->pool, L->bits, c);
    }
    mdq_pool_uncharge(L->pool, queue_bytes_for(q->features, q->nc3));
    free(q->c3tab);
    free(q);
}

bool mdq_match_queue_is_4d(const mdq_match_queue_t *q)
{
    return q->cil.is4d;
}

unsigned mdq_match_queue_bits(const mdq_match_queue_t *q)
{
    return q->cil.bits;
}

const mdq_match_stats_t *mdq_match_queue_stats(const mdq_match_queue_t *q)
{
    return &q->stats;
}

/* The fixed per-queue cost of the memory model: the 56-byte ContextIdLead
 * (Cube list head, ANY_SOURCE / linear list heads, pool, 64-bit sequence
 * counter, size and mode fields, cursor stamp). The queue object carries 48
 * more bytes of instrumentation (stats and Cube/JumpPoint tallies) that the
 * paper's model does not count, as its instrumented build did not either. */
size_t mdq_match_queue_bytes(const mdq_match_queue_t *q)
{
    return queue_bytes_for(q->features, q->nc3);
}

size_t mdq_match_item_bytes(const mdq_match_queue_t *q)
{
    size_t b = offsetof(mdq_match_item_t, all_next);
    if (q->features & MDQ_MATCH_FEAT_ALL_UMQ)
        b += 2 * sizeof(mdq_match_item_t *);
    return b;
}

unsigned mdq_match_queue_features(const mdq_match_queue_t *q)
{
    return q->features;
}

void mdq_match_queue_tallies(const mdq_match_queue_t *q, uint64_t *n_cubes, uint64_t *n_jps)
{
    if (n_cubes)
        *n_cubes = q->n_cubes;
    if (n_jps)
        *n_jps = q->n_jps;
}

/* ------------------------------------------------------------ operation 1 */

/* a posted receive leaves the queue matched */
static inline mdq_match_item_t *posted_taken(mdq_match_queue_t *q, mdq_match_item_t *it,
                                             mdq_match_cursor_t *cur)
{
    it->home = NULL;
    q->stats.prq_length--;
    bump_gen(&q->cil);
    cursor_clear(cur);
    return it;
}

/* The 4D search, out of line: the linear mode (small communicators, where
 * every message of a stream passes) then runs in a small function that
 * saves no registers it does not use. */
static __attribute__((noinline)) mdq_match_item_t *
take_posted_4d(mdq_match_queue_t *q, int32_t rank, int32_t tag, mdq_match_cursor_t *cur)
{
    mdq_cil_t *L = &q->cil;
    mdq_match_item_t *it, *best = NULL;
    descent_t d;
    uint64_t v = descend(q, (uint32_t) rank, &d);
    if (d.jp) {
        v += d.jp->split; /* the c0 table entry */
        for (it = *jp_list(d.jp, 0, rank, L->bits); it; it = it->next) {
            v++;
            if (it->rank == rank && tag_ok(it->tag, tag)) {
                best = it;
                break;
            }
        }
    }
    /* the ANY_SOURCE list is in seq order: stop once past the ranked candidate */
    for (it = L->posted; it; it = it->next) {
        v++;
        if (best && it->seq > best->seq)
            break;
        if (tag_ok(it->tag, tag)) {
            q->stats.visits += v;
            ilist_unlink(&L->posted, it);
            return posted_taken(q, it, cur);
        }
    }
    q->stats.visits += v;
    if (best) {
        jp_unlink(q, d.jp, 0, best, d.prev_cube);
        return posted_taken(q, best, cur);
    }
    if (cur)
        cursor_save(L, cur, rank, &d);
    return NULL;
}

mdq_match_item_t *mdq_match_take_posted(mdq_match_queue_t *q, int32_t rank, int32_t tag,
                                        mdq_match_cursor_t *cur)
{
    mdq_cil_t *L = &q->cil;
    q->stats.searches++;
    if (L->is4d)
        return take_posted_4d(q, rank, tag, cur);

    uint64_t v = 1;
    for (mdq_match_item_t *it = L->posted; it; it = it->next) {
        v++;
        if ((it->rank == rank || it->rank == MDQ_MATCH_ANY_SOURCE) && tag_ok(it->tag, tag)) {
            q->stats.visits += v;
            ilist_unlink(&L->posted, it);
            return posted_taken(q, it, cur);
        }
    }
    q->stats.visits += v;
    cursor_clear(cur); /* linear / ANY_SOURCE appends need no cursor */
    return NULL;
}

/* Reuse the cursor of the preceding failed search, else descend again. */
static inline mdq_jp_t *jp_for_insert(mdq_match_queue_t *q, int32_t rank, mdq_match_cursor_t *cur)
{
    descent_t d;
    if (cur && cur->valid == gen_stamp(&q->cil) && cur->rank == rank && cur->valid) {
        if (cur->slot[3])
            return cur->slot[3];
        d.prev_cube = cur->slot[0];
        d.cube = cur->slot[1];
        d.prev_jp = cur->slot[2];
        d.jp = NULL;
        d.c3 = cur->coord[0];
        d.c2 = cur->coord[1];
        d.c1 = cur->coord[2];
    } else {
        descend(q, (uint32_t) rank, &d);
    }
    return jp_ensure(q, &d);
}

/* Queue item on its rank's JumpPoint (umq: the UMQ, else the PRQ), out of
 * line like the 4D searches; false when no JumpPoint could be had: the
 * queue is linear now and item not queued yet. */
static __attribute__((noinline)) bool append_4d(mdq_match_queue_t *q, mdq_match_item_t *item,
                                                unsigned umq, mdq_match_cursor_t *cur)
{
    mdq_jp_t *jp = jp_for_insert(q, item->rank, cur);
    if (UNLIKELY(jp == NULL)) {
        degrade_to_linear(q);
        return false;
    }
    jp_add(q, jp, umq, item);
    if (umq && (q->features & MDQ_MATCH_FEAT_ALL_UMQ))
        all_append(&q->all_umq, item);
    item->home = MDQ_HOME(jp, umq ? MDQ_HOME_JP_UMQ : MDQ_HOME_JP_PRQ);
    bump_gen(&q->cil);
    cursor_clear(cur);
    return true;
}

void mdq_match_append_unexpected(mdq_match_queue_t *q, mdq_match_item_t *item,
                                 mdq_match_cursor_t *cur)
{
    mdq_cil_t *L = &q->cil;
    item->seq = L->next_seq++;
    q->stats.umq_length++;
    if (L->is4d) {
        if (LIKELY(append_4d(q, item, 1, cur)))
            return;
        q->stats.umq_length++; /* degrade_to_linear recounted the queue without item */
    }
    ilist_append(&L->unexpected, item);
    item->home = MDQ_HOME(q, MDQ_HOME_Q_UMQ);
    bump_gen(L);
    cursor_clear(cur);
}

/* ------------------------------------------------------ operations 2,3,5 */

/* ANY_SOURCE search of the 4D UMQ: every Cube, every c2 slot, every JumpPoint. */
static mdq_match_item_t *umq_find_any(mdq_match_queue_t *q, int32_t tag, uint64_t *visits)
{
    mdq_cil_t *L = &q->cil;
    const uint32_t ds = 1u << L->bits;
    const bool first = L->policy == MDQ_MATCH_POLICY_FIRST;
    mdq_match_item_t *best = NULL;
    uint64_t v = 1;
    if (q->features & MDQ_MATCH_FEAT_ALL_UMQ) {
        /* arrival order: the first compatible message is the oldest */
        for (mdq_match_item_t *it = q->all_umq; it; it = it->all_next) {
            v++;
            if (tag_ok(tag, it->tag)) {
                best = it;
                break;
            }
        }
        *visits += v;
        return best;
    }
    for (mdq_cube_t *c = mdq_cube_first(q); c; c = mdq_cube_next(q, c)) {
        v++;
        /* njp tells when the Cube's last JumpPoint has been seen: sparse
         * Cubes do not cost ds slot reads */
        uint32_t left = c->njp;
        for (uint32_t s = 0; left && s < ds; s++) {
            v++;
            for (mdq_jp_t *j = c->slot[s]; j; j = j->next) {
                v++;
                left--;
                /* the first tag match of a list is its oldest */
                const uint32_t nl = j->split ? ds : 1u;
                v += j->split ? ds : 0; /* the c0 table entries */
                for (uint32_t c0 = 0; c0 < nl; c0++) {
                    for (mdq_match_item_t *it = *jp_list(j, 1, (int32_t) c0, L->bits); it;
                         it = it->next) {
                        v++;
                        if (tag_ok(tag, it->tag)) {
                            if (!best || it->seq < best->seq)
                                best = it;
                            if (first)
                                goto done;
                            break;
                        }
                    }
                }
            }
        }
    }
done:
    *visits += v;
    return best;
}

/* an unexpected message found: out of the queue if remove */
static inline mdq_match_item_t *unexpected_found(mdq_match_queue_t *q, mdq_match_item_t *it,
                                                 bool remove, mdq_match_cursor_t *cur)
{
    if (remove) {
        it->home = NULL;
        q->stats.umq_length--;
        bump_gen(&q->cil);
    }
    cursor_clear(cur);
    return it;
}

static __attribute__((noinline)) mdq_match_item_t *
find_unexpected_4d(mdq_match_queue_t *q, int32_t rank, int32_t tag, bool remove,
                   mdq_match_cursor_t *cur)
{
    mdq_cil_t *L = &q->cil;
    mdq_match_item_t *it;
    uint64_t v;

    if (rank == MDQ_MATCH_ANY_SOURCE) {
        v = 0;
        it = q->stats.umq_length ? umq_find_any(q, tag, &v) : (v = 1, NULL);
        q->stats.visits += v;
        if (!it) {
            cursor_clear(cur); /* linear / ANY_SOURCE appends need no cursor */
            return NULL;
        }
        if (remove)
            umq_unlink_4d(q, MDQ_HOME_BASE(it->home), it, NULL);
        return unexpected_found(q, it, remove, cur);
    }

    descent_t d;
    v = descend(q, (uint32_t) rank, &d);
    if (d.jp) {
        v += d.jp->split; /* the c0 table entry */
        for (it = *jp_list(d.jp, 1, rank, L->bits); it; it = it->next) {
            v++;
            if (it->rank == rank && tag_ok(tag, it->tag)) {
                q->stats.visits += v;
                if (remove)
                    umq_unlink_4d(q, d.jp, it, d.prev_cube);
                return unexpected_found(q, it, remove, cur);
            }
        }
    }
    q->stats.visits += v;
    if (cur)
        cursor_save(L, cur, rank, &d);
    return NULL;
}

mdq_match_item_t *mdq_match_find_unexpected(mdq_match_queue_t *q, int32_t rank, int32_t tag,
                                            bool remove, mdq_match_cursor_t *cur)
{
    mdq_cil_t *L = &q->cil;
    q->stats.searches++;
    if (L->is4d)
        return find_unexpected_4d(q, rank, tag, remove, cur);

    uint64_t v = 1;
    for (mdq_match_item_t *it = L->unexpected; it; it = it->next) {
        v++;
        if ((rank == MDQ_MATCH_ANY_SOURCE || it->rank == rank) && tag_ok(tag, it->tag)) {
            q->stats.visits += v;
            if (remove)
                ilist_unlink(&L->unexpected, it);
            return unexpected_found(q, it, remove, cur);
        }
    }
    q->stats.visits += v;
    cursor_clear(cur); /* linear / ANY_SOURCE appends need no cursor */
    return NULL;
}

void mdq_match_append_posted(mdq_match_queue_t *q, mdq_match_item_t *item,
                             mdq_match_cursor_t *cur)
{
    mdq_cil_t *L = &q->cil;
    item->seq = L->next_seq++;
    q->stats.prq_length++;
    if (L->is4d && item->rank != MDQ_MATCH_ANY_SOURCE) {
        if (LIKELY(append_4d(q, item, 0, cur)))
            return;
        q->stats.prq_length++; /* degrade_to_linear recounted the queue without item */
    }
    ilist_append(&L->posted, item);
    item->home = MDQ_HOME(q, MDQ_HOME_Q_PRQ);
    bump_gen(L);
    cursor_clear(cur);
}

/* ------------------------------------------------------------ operation 4 */

bool mdq_match_remove(mdq_match_queue_t *q, mdq_match_item_t *item)
{
    void *home = item->home;
    if (!home)
        return false;
    unsigned kind = MDQ_HOME_KIND(home);
    void *base = MDQ_HOME_BASE(home);
    if (kind & 2) {
        if (base != (void *) q)
            return false; /* queued in another queue */
        ilist_unlink(kind & 1 ? &q->cil.unexpected : &q->cil.posted, item);
    } else {
        mdq_jp_t *jp = base;
        jp_unlink(q, jp, kind & 1, item, NULL);
    }
    if (kind & 1)
        q->stats.umq_length--;
    else
        q->stats.prq_length--;
    item->home = NULL;
    bump_gen(&q->cil);
    return true;
}

bool mdq_match_is_queued(const mdq_match_item_t *item)
{
    return item->home != NULL;
}

void mdq_match_drain(mdq_match_queue_t *q, void (*fn)(mdq_match_item_t *item, bool posted, void *arg),
                     void *arg)
{
    mdq_match_item_t *p, *u, *n;
    detach_all(q, &p, &u);
    for (; p; p = n) {
        n = p->next;
        p->next = p->prev = NULL;
        p->home = NULL;
        if (fn)
            fn(p, true, arg);
    }
    for (; u; u = n) {
        n = u->next;
        u->next = u->prev = NULL;
        u->home = NULL;
        if (fn)
            fn(u, false, arg);
    }
}
