/*
 * Matching-engine scale bench: the one interface every engine implements.
 *
 * An engine instance models the matching state of ONE receiver process that
 * has `ncomm` communicators (contextIds), each of `comm_size` ranks. The
 * bench drives it with synthetic envelopes; no MPI runtime is involved.
 *
 * Items are identified by a caller-chosen id (> 0). post/arrive return the
 * id of the item they matched (0 = no match, the new item was queued and
 * *handle receives a token usable with remove()).
 */
#ifndef BM_ENGINE_H
#define BM_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define BM_ANY_SOURCE (-1)
#define BM_ANY_TAG (-1)

typedef uint64_t bm_id_t;

/* which unexpected message an ANY_SOURCE receive takes (engines with a
 * natural global order - linked list, hash - always take the oldest) */
typedef enum { BM_POLICY_OLDEST = 0, BM_POLICY_FIRST = 1 } bm_policy_t;

typedef struct bm_config {
    uint32_t comm_size;
    uint32_t ncomm;
    bm_policy_t policy;
    int mode;          /* 4D engines: 0 auto, 1 force linear, 2 force 4D */
    double adjustment; /* 4D engines: threshold = (3*ds+1)*adjustment */
    unsigned flags;    /* engine-specific variant flags (see bm_4dx.c) */
} bm_config_t;

/* memory accounting, bytes */
typedef struct bm_mem {
    size_t fixed;      /* allocated independently of queue content (CIL, arrays, hash tables) */
    size_t dyn;        /* allocated on demand for structure (Cubes, JumpPoints) */
    size_t items;      /* queue items (MQIs) currently queued */
    size_t item_size;  /* bytes of one queued item */
    size_t peak_dyn;   /* peak of dyn since creation */
} bm_mem_t;

typedef struct bm_engine_ops {
    const char *name;
    void *(*create)(const bm_config_t *cfg);
    void (*destroy)(void *e);
    /* post a receive (rank may be ANY_SOURCE, tag ANY_TAG): search UMQ, else insert in PRQ */
    bm_id_t (*post)(void *e, uint32_t ctx, int32_t rank, int32_t tag, bm_id_t id, void **handle);
    /* a message arrives from rank with tag: search PRQ, else insert in UMQ */
    bm_id_t (*arrive)(void *e, uint32_t ctx, int32_t rank, int32_t tag, bm_id_t id, void **handle);
    /* probe the UMQ without removing; returns matched message id or 0 */
    bm_id_t (*probe)(void *e, uint32_t ctx, int32_t rank, int32_t tag);
    /* remove a queued item by handle (cancel); false if not queued */
    bool (*remove)(void *e, uint32_t ctx, void *handle);
    void (*mem)(void *e, bm_mem_t *m);
    uint64_t (*visits)(void *e); /* cumulative pointer visits over all searches */
} bm_engine_ops_t;

extern const bm_engine_ops_t bm_engine_ll;    /* MPICH/MVAPICH global linked lists */
extern const bm_engine_ops_t bm_engine_array; /* ob1-like per-peer array + ANY_SOURCE list */
extern const bm_engine_ops_t bm_engine_hash;  /* UCX-like tag hash + wildcard queue */
extern const bm_engine_ops_t bm_engine_mdq;   /* adapter over ompi/mca/pml/mdq/mdq_match.c */
extern const bm_engine_ops_t bm_engine_4dx;   /* bench-local 4D with optional improvements */

/* all engines built into this binary, NULL-terminated */
extern const bm_engine_ops_t *const bm_engines[];
const bm_engine_ops_t *bm_engine_by_name(const char *name);

/* tag rule shared by all engines: ANY_TAG matches only tags >= 0 */
static inline bool bm_tag_ok(int32_t want, int32_t have)
{
    return want == have || (want == BM_ANY_TAG && have >= 0);
}

/* ---- small fixed-size object allocator with byte accounting ---- */
typedef struct bm_slab {
    size_t size;        /* object size */
    void *free;         /* intrusive free list */
    void **chunks;
    size_t nchunks, cap_chunks;
    size_t live;        /* objects handed out */
    size_t peak;
} bm_slab_t;

void bm_slab_init(bm_slab_t *s, size_t size);
void bm_slab_fini(bm_slab_t *s);
void *bm_slab_get(bm_slab_t *s);
void bm_slab_put(bm_slab_t *s, void *p);

/* ---- intrusive doubly linked FIFO lists shared by the engines ----
 * BM_FIFO_DEFINE(name, owner_t, head, tail, item_t, next, prev) defines
 *   static void name##_append(owner_t *o, item_t *it)  (append at the tail)
 *   static void name##_unlink(owner_t *o, item_t *it)
 * for the list whose ends are o->head / o->tail and whose links are
 * it->next / it->prev. Item types differ per engine (and one item may sit
 * on two lists), hence a macro rather than a function. No visits are
 * charged here: appending and unlinking are not searches. */
#define BM_FIFO_DEFINE(name, owner_t, head, tail, item_t, next, prev) \
    static inline void name##_append(owner_t *o, item_t *it)          \
    {                                                                 \
        it->next = NULL;                                              \
        it->prev = o->tail;                                           \
        if (o->tail)                                                  \
            o->tail->next = it;                                       \
        else                                                          \
            o->head = it;                                             \
        o->tail = it;                                                 \
    }                                                                 \
    static inline void name##_unlink(owner_t *o, item_t *it)          \
    {                                                                 \
        if (it->prev)                                                 \
            it->prev->next = it->next;                                \
        else                                                          \
            o->head = it->next;                                       \
        if (it->next)                                                 \
            it->next->prev = it->prev;                                \
        else                                                          \
            o->tail = it->prev;                                       \
    }

/* the ContextIdLead walk of the engines that keep per-context roots in a
 * list (see below): one visit per ContextIdLead examined; ctx must exist */
#define BM_FIND_CIL_DEFINE(engine_t, cil_t)                   \
    static cil_t *find_cil(engine_t *e, uint32_t ctx)         \
    {                                                         \
        cil_t *l = e->cils;                                   \
        e->visits++;                                          \
        while (l->ctx != (int32_t) ctx) {                     \
            l = l->next;                                      \
            e->visits++;                                      \
        }                                                     \
        return l;                                             \
    }

/* Engines that index communicators (array, hash aside, 4D) keep their
 * per-contextId roots in a list walked linearly, MVAPICH style, and charge
 * one visit per ContextIdLead examined (paper Table 4.3: +9 visits for the
 * 10th communicator). The linked-list engine has no per-ctx root at all. */

#endif
