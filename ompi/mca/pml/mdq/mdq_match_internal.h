/*
 * mdq_match internals shared by the engine's source files (not by callers).
 *
 * Object layouts reproduce the memory model of the thesis (Table 4.4):
 * JumpPoint = 48 B and Cube(ds) = 16 + 8*ds B on LP64, ContextIdLead = 56 B.
 */
#ifndef MDQ_MATCH_INTERNAL_H
#define MDQ_MATCH_INTERNAL_H

#include "mdq_match.h"

#include <stdint.h>

typedef struct mdq_jp mdq_jp_t;
typedef struct mdq_cube mdq_cube_t;

/* Item lists (PRQ/UMQ of a JumpPoint, queue-level lists) are doubly linked
 * and NULL-terminated forwards; only the head is stored and head->prev is
 * the tail, so O(1) append and O(1) unlink need one pointer per list. */

/* JumpPoint (c3,c2,c1): the ranks c0 = 0..ds-1 share its two short FIFOs.
 * The thesis layout spends 16 B on two tail pointers; here the tails live in
 * head->prev and those 16 B hold the back-links (prev, cube) that make
 * removal by identity (cancel) free the JumpPoint in O(1). */
struct mdq_jp {
    mdq_jp_t *next;         /* next JumpPoint in ascending c1 order */
    mdq_jp_t *prev;         /* previous one, NULL for the head of cube->slot[c2] */
    mdq_cube_t *cube;       /* owning Cube */
    union {
        struct {
            mdq_match_item_t *prq; /* posted receives, posting order */
            mdq_match_item_t *umq; /* unexpected messages, arrival order */
        };
        /* SPLIT (split != 0): 2*ds per-rank heads, [c0] PRQ and [ds + c0] UMQ;
         * the table is a pool object of class bits+1 (16 + 16*ds B) */
        struct {
            mdq_match_item_t **c0tab;
            mdq_match_item_t *unused;
        };
    };
    uint8_t c1, c2;         /* < ds <= 256 */
    uint8_t split;
    uint8_t spare;
    uint32_t count;         /* items queued in this JumpPoint (PRQ + UMQ) */
};

/* Cube (one value of c3): the c2 dimension as an array of c1-list heads. */
struct mdq_cube {
    mdq_cube_t *next; /* next Cube in ascending c3 order */
    uint32_t c3;
    uint32_t njp;     /* live JumpPoints: O(1) "Cube became empty" test */
    mdq_jp_t *slot[]; /* ds heads */
};

/* The paper's ContextIdLead: exactly the matching state of one
 * communicator. mdq_match_queue_bytes() reports its size (56 B on LP64). */
typedef struct mdq_cil {
    mdq_cube_t *cubes;             /* 4D: ascending c3 */
    mdq_match_item_t *posted;      /* 4D: ANY_SOURCE receives; linear: every receive */
    mdq_match_item_t *unexpected;  /* linear only: every unexpected message */
    mdq_match_pool_t *pool;
    uint64_t next_seq;             /* per-queue sequence counter */
    uint32_t size;                 /* communicator size */
    uint8_t bits;                  /* log2(ds) */
    uint8_t is4d;
    uint8_t policy;
    uint8_t mode;                  /* requested mode (mdq_match_mode_t) */
    uint32_t gen;                  /* bumped by every mutation: cursor validity stamp */
    uint32_t spare;
} mdq_cil_t;

/* The queue = ContextIdLead + instrumentation (stats and object tallies,
 * which the paper's measurements kept outside the modelled objects). */
struct mdq_match_queue {
    mdq_cil_t cil;
    /* optional structures (MDQ_MATCH_FEAT_*), counted by mdq_match_queue_bytes */
    unsigned features;
    uint32_t nc3;              /* C3_ARRAY: entries of c3tab = ((size-1) >> 3*bits) + 1 */
    mdq_match_item_t *all_umq; /* ALL_UMQ: every 4D unexpected item, arrival order */
    mdq_jp_t *last_jp;         /* LAST_HIT: JumpPoint of the last search hit, or NULL */
    uint32_t last_key;         /* LAST_HIT: rank >> bits of last_jp */
    uint32_t spare;
    mdq_cube_t **c3tab;        /* C3_ARRAY: Cube per c3 (then cil.cubes stays NULL) */
    uint64_t n_splits;         /* SPLIT: live per-rank tables (instrumentation) */
    mdq_match_stats_t stats;
    uint64_t n_cubes; /* tally of live Cubes */
    uint64_t n_jps;   /* tally of live JumpPoints */
};

/* Cube iteration in ascending c3 order, over the list or the c3 array.
 * cube_next reads only c->c3 when a table is used, so the caller may
 * compute the successor before freeing c. */
static inline mdq_cube_t *mdq_cube_from(const mdq_match_queue_t *q, uint32_t c3)
{
    for (; c3 < q->nc3; c3++)
        if (q->c3tab[c3])
            return q->c3tab[c3];
    return NULL;
}
static inline mdq_cube_t *mdq_cube_first(const mdq_match_queue_t *q)
{
    return q->c3tab ? mdq_cube_from(q, 0) : q->cil.cubes;
}
static inline mdq_cube_t *mdq_cube_next(const mdq_match_queue_t *q, const mdq_cube_t *c)
{
    return q->c3tab ? mdq_cube_from(q, c->c3 + 1) : c->next;
}

#if UINTPTR_MAX == UINT64_MAX
_Static_assert(sizeof(mdq_jp_t) == 48, "JumpPoint must be 48 B (thesis Table 4.4)");
_Static_assert(sizeof(mdq_cube_t) == 16, "Cube(ds) must be 16 + 8*ds B (thesis Table 4.4)");
_Static_assert(sizeof(mdq_cil_t) == 56, "ContextIdLead must be 56 B (thesis Table 4.4)");
#endif

/* item->home encoding: base pointer | kind (bases are 8-byte aligned) */
enum {
    MDQ_HOME_JP_PRQ = 0, /* base: JumpPoint */
    MDQ_HOME_JP_UMQ = 1, /* base: JumpPoint */
    MDQ_HOME_Q_PRQ = 2,  /* base: queue, list cil.posted */
    MDQ_HOME_Q_UMQ = 3,  /* base: queue, list cil.unexpected */
    MDQ_HOME_MASK = 3,
};
#define MDQ_HOME(base, kind) ((void *) ((uintptr_t) (base) | (uintptr_t) (kind)))
#define MDQ_HOME_KIND(home) ((unsigned) ((uintptr_t) (home) & MDQ_HOME_MASK))
#define MDQ_HOME_BASE(home) ((void *) ((uintptr_t) (home) & ~(uintptr_t) MDQ_HOME_MASK))

/* ---- pool (mdq_match_pool.c; get/put inline for the match path) ---- */
/* class 0: JumpPoints; class b (2..MDQ_MAX_BITS): Cubes with ds = 1 << b */
#define MDQ_MAX_BITS 8

typedef struct mdq_slab mdq_slab_t;

typedef struct mdq_pool_class {
    void *free;       /* intrusive free list: first word of a free object */
    size_t obj_bytes;
    size_t live;      /* objects handed out */
} mdq_pool_class_t;

struct mdq_match_pool {
    mdq_pool_class_t cls[MDQ_MAX_BITS + 1];
    mdq_slab_t *slabs;
    size_t bytes_live;
    size_t bytes_peak;
    size_t bytes_limit; /* 0: unlimited */
    size_t bytes_slabs; /* memory obtained from malloc for slabs */
};

/* refill a class's free list with a new slab; false if malloc fails */
bool mdq_pool_grow(mdq_match_pool_t *pool, mdq_pool_class_t *c);

/* account bytes (objects or queue heads); false over the limit */
static inline bool mdq_pool_charge(mdq_match_pool_t *pool, size_t bytes)
{
    size_t live = pool->bytes_live + bytes;
    if (__builtin_expect(pool->bytes_limit != 0 && live > pool->bytes_limit, 0))
        return false;
    pool->bytes_live = live;
    if (live > pool->bytes_peak)
        pool->bytes_peak = live;
    return true;
}

static inline void mdq_pool_uncharge(mdq_match_pool_t *pool, size_t bytes)
{
    pool->bytes_live -= bytes;
}

static inline void *mdq_pool_get(mdq_match_pool_t *pool, unsigned cls)
{
    mdq_pool_class_t *c = &pool->cls[cls];
    if (__builtin_expect(!c->free, 0) && !mdq_pool_grow(pool, c))
        return NULL;
    if (!mdq_pool_charge(pool, c->obj_bytes))
        return NULL;
    void **o = (void **) c->free;
    c->free = *o;
    c->live++;
    return o;
}

static inline void mdq_pool_put(mdq_match_pool_t *pool, unsigned cls, void *obj)
{
    mdq_pool_class_t *c = &pool->cls[cls];
    *(void **) obj = c->free;
    c->free = obj;
    c->live--;
    pool->bytes_live -= c->obj_bytes;
}

static inline size_t mdq_cube_bytes(unsigned bits)
{
    return sizeof(mdq_cube_t) + (sizeof(mdq_jp_t *) << bits);
}

#endif /* MDQ_MATCH_INTERNAL_H */
