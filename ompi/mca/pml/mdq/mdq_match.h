/*
 * mdq_match: the 4D multidimensional matching queue (Zounmevo & Afsahi),
 * a standalone engine with no Open MPI or MPI dependency.
 *
 * One mdq_match_queue_t per communicator (the "ContextIdLead"). Items are
 * intrusive: the caller embeds an mdq_match_item_t in its receive request
 * (posted receive queue, PRQ) or unexpected fragment (unexpected message
 * queue, UMQ) and gets its object back with container_of. The engine never
 * allocates items; it only allocates Cubes and JumpPoints from a pool.
 *
 * Thread safety: none. The caller serialises all operations on one queue
 * (the pml holds its per-communicator matching lock). A pool may be shared
 * by many queues only under the same serialisation.
 *
 * Design reference: shared/design/matching-4d-queue.md sections 1 and 6.
 */
#ifndef MDQ_MATCH_H
#define MDQ_MATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MDQ_MATCH_ANY_SOURCE (-1) /* receive from any rank (posted items only) */
#define MDQ_MATCH_ANY_TAG (-1)    /* any tag >= 0; never matches internal negative tags */

/* Which unexpected message an ANY_SOURCE receive takes when several senders match. */
typedef enum {
    MDQ_MATCH_POLICY_OLDEST = 0, /* the globally oldest matching message (MPICH order) */
    MDQ_MATCH_POLICY_FIRST = 1,  /* the first found in rank-coordinate order (cheapest) */
} mdq_match_policy_t;

typedef enum {
    MDQ_MATCH_MODE_AUTO = 0,   /* 4D when size >= (3*ds+1)*adjustment, else linear */
    MDQ_MATCH_MODE_LINEAR = 1, /* force the single-list mode */
    MDQ_MATCH_MODE_4D = 2,     /* force the 4D mode (tests on small communicators) */
} mdq_match_mode_t;

/* Embedded in the caller's request / fragment. All fields are owned by the
 * engine while the item is queued; rank and tag are set by the caller before
 * insertion. */
typedef struct mdq_match_item {
    struct mdq_match_item *next;
    struct mdq_match_item *prev;
    void *home;   /* engine-private: the JumpPoint or list holding the item (O(1) removal) */
    uint64_t seq; /* engine-assigned per-queue sequence number */
    int32_t rank; /* source rank (posted: may be MDQ_MATCH_ANY_SOURCE) */
    int32_t tag;  /* tag (posted: may be MDQ_MATCH_ANY_TAG) */
    /* MDQ_MATCH_FEAT_ALL_UMQ: links of the queue's arrival-order list of all
     * unexpected messages (engine-private; unused by other designs) */
    struct mdq_match_item *all_next;
    struct mdq_match_item *all_prev;
} mdq_match_item_t;

/* Cube/JumpPoint pools with byte accounting, shared by the queues of a process. */
typedef struct mdq_match_pool mdq_match_pool_t;

/* Counters every engine keeps; cheap increments, read by pvars and benches. */
typedef struct mdq_match_stats {
    uint64_t searches;   /* match attempts (any operation that searches) */
    uint64_t visits;     /* pointer visits (Cube, slot, JumpPoint, item) over all searches */
    uint64_t prq_length; /* posted receives currently queued */
    uint64_t umq_length; /* unexpected messages currently queued */
} mdq_match_stats_t;

/* Result of a failed search, so the following insertion is O(1) ("free ride").
 * Valid only until the next operation on the same queue. */
typedef struct mdq_match_cursor {
    void *slot[4];
    uint32_t coord[3];
    int32_t rank;
    int32_t valid;
} mdq_match_cursor_t;

typedef struct mdq_match_queue mdq_match_queue_t;

/* Optional structures of a 4D queue (mdq_match_queue_create_ex features).
 * None changes a matching result under POLICY_OLDEST; each costs memory that
 * mdq_match_queue_bytes / mdq_match_item_bytes report (bytes on LP64):
 *   ALL_UMQ   every unexpected message is also on one arrival-order list;
 *             an ANY_SOURCE receive takes its first compatible entry, the
 *             oldest (OLDEST at first-match cost, under either policy).
 *             +8 B per queue (head; the tail is head->all_prev),
 *             +16 B per queued item (all_next, all_prev).
 *   LAST_HIT  the JumpPoint found by the previous search is cached with its
 *             key rank >> bits; a search for a rank of the same JumpPoint
 *             skips the descent (2 visits: queue head + JumpPoint).
 *             +16 B per queue.
 *   C3_ARRAY  Cubes are found through an array of ceil(S / ds^3) <= ds
 *             pointers instead of the ordered c3 list (1 visit, not up to ds).
 *             +8 B per queue (array pointer) + 8*ceil(S/ds^3) B.
 *   SPLIT     a JumpPoint that comes to hold more than ds items gets a table
 *             of per-rank PRQ/UMQ heads: a search scans its own rank's items
 *             only (+1 visit for the table entry). The table lives until the
 *             JumpPoint empties. +0 B per queue; +(16 + 16*ds) B per busy
 *             JumpPoint, counted with the Cubes and JumpPoints (pool bytes).
 * In linear mode (small communicators) the features have no effect on
 * searching; the per-queue bytes are still reported (the fields exist). */
#define MDQ_MATCH_FEAT_ALL_UMQ 0x1u
#define MDQ_MATCH_FEAT_LAST_HIT 0x2u
#define MDQ_MATCH_FEAT_C3_ARRAY 0x4u
#define MDQ_MATCH_FEAT_SPLIT 0x8u
#define MDQ_MATCH_FEAT_MASK 0xfu
/* the published design of the thesis (object sizes of its Table 4.4) */
#define MDQ_MATCH_FEAT_SEED 0u
/* what mdq_match_queue_create uses (chosen from docs/bench-match.md) */
/* SPLIT is not in the defaults: it loses 10-30 % on forward matching with
 * deep per-rank queues (docs/bench-match.md) */
#define MDQ_MATCH_FEAT_DEFAULT (MDQ_MATCH_FEAT_ALL_UMQ | MDQ_MATCH_FEAT_LAST_HIT | MDQ_MATCH_FEAT_C3_ARRAY)
/* recommended small-communicator cutoff adjustment: threshold (3*4+1)*3.5 =
 * 46 ranks for ds = 4, where random-order matching in the default design
 * crosses over from linear to 4D (bench: S ~ 44-56; seed design ~ 40-44) */
#define MDQ_MATCH_ADJUSTMENT_DEFAULT 3.5

/* ---- sizing (pure functions, exposed for tests and the pml) ---- */
/* ds = max(4, 2^ceil(log2(size)/4)); returns log2(ds) */
unsigned mdq_match_bits_for_size(uint32_t comm_size);
/* threshold = (3*ds+1)*adjustment; adjustment must be >= 1.0 */
uint32_t mdq_match_threshold(uint32_t comm_size, double adjustment);
/* rank -> (c3, c2, c1, c0) for a given bits: c[0] = c3 (most significant) ... c[3] = c0 */
void mdq_match_decompose(uint32_t rank, unsigned bits, uint32_t c[4]);

/* ---- pools ---- */
mdq_match_pool_t *mdq_match_pool_create(void);
void mdq_match_pool_destroy(mdq_match_pool_t *pool);
/* bytes currently held by live Cubes + JumpPoints (+ queue heads) allocated from the pool */
size_t mdq_match_pool_bytes_live(const mdq_match_pool_t *pool);
size_t mdq_match_pool_bytes_peak(const mdq_match_pool_t *pool);
/* Added by the engine: cap bytes_live (0 = no cap, the default). A Cube or
 * JumpPoint the pool refuses (cap or out of memory) never loses a message:
 * the queue that needed it switches to linear mode, keeping every item in
 * sequence order. Queue creation over the cap returns NULL. */
void mdq_match_pool_set_limit(mdq_match_pool_t *pool, size_t max_live_bytes);
/* Added: slab memory obtained from malloc (>= live object bytes). */
size_t mdq_match_pool_bytes_reserved(const mdq_match_pool_t *pool);

/* ---- queues ---- */
/* Returns NULL on bad arguments (adjustment < 1.0, size == 0) or out of memory. */
mdq_match_queue_t *mdq_match_queue_create(mdq_match_pool_t *pool, uint32_t comm_size,
                                          mdq_match_mode_t mode, double adjustment,
                                          mdq_match_policy_t policy);
/* Same with explicit optional structures (MDQ_MATCH_FEAT_*); unknown bits
 * return NULL. mdq_match_queue_create == _ex(..., MDQ_MATCH_FEAT_DEFAULT). */
mdq_match_queue_t *mdq_match_queue_create_ex(mdq_match_pool_t *pool, uint32_t comm_size,
                                             mdq_match_mode_t mode, double adjustment,
                                             mdq_match_policy_t policy, unsigned features);
unsigned mdq_match_queue_features(const mdq_match_queue_t *q);
/* Items still queued are simply forgotten (the caller owns them); use
 * mdq_match_drain first to get them back. */
void mdq_match_queue_destroy(mdq_match_queue_t *q);
bool mdq_match_queue_is_4d(const mdq_match_queue_t *q);
unsigned mdq_match_queue_bits(const mdq_match_queue_t *q);
const mdq_match_stats_t *mdq_match_queue_stats(const mdq_match_queue_t *q);
/* fixed bytes of this queue: the 56 B ContextIdLead plus its features' fields */
size_t mdq_match_queue_bytes(const mdq_match_queue_t *q);
/* model bytes of one queued item under this queue's features: 40 (seed:
 * links, home, seq, rank, tag) or 56 with ALL_UMQ. sizeof(mdq_match_item_t)
 * is always 56 (the struct carries the ALL_UMQ links in every design). */
size_t mdq_match_item_bytes(const mdq_match_queue_t *q);
/* Added: live Cubes and JumpPoints of this queue (n_c3, n_JP of Eq. 4.20). */
void mdq_match_queue_tallies(const mdq_match_queue_t *q, uint64_t *n_cubes, uint64_t *n_jps);

/* Operation 1 (message arrival): find the posted receive matching (rank,
 * tag), the oldest by sequence among the ranked and ANY_SOURCE candidates,
 * remove it and return it. NULL if none; then *cur (if non-NULL) allows
 * mdq_match_append_unexpected in O(1). rank >= 0, tag any value. */
mdq_match_item_t *mdq_match_take_posted(mdq_match_queue_t *q, int32_t rank, int32_t tag,
                                        mdq_match_cursor_t *cur);
/* Append a message (item->rank >= 0, item->tag set) to the UMQ. cur may be
 * NULL or the cursor of the immediately preceding failed take_posted for the
 * same rank. */
void mdq_match_append_unexpected(mdq_match_queue_t *q, mdq_match_item_t *item,
                                 mdq_match_cursor_t *cur);

/* Operations 2, 3, 5 (post receive, mprobe, probe): find the unexpected
 * message for (rank, tag), rank may be ANY_SOURCE, tag may be ANY_TAG.
 * remove=true unlinks it (receive, mprobe), false leaves it (probe). NULL if
 * none; then *cur allows mdq_match_append_posted in O(1). */
mdq_match_item_t *mdq_match_find_unexpected(mdq_match_queue_t *q, int32_t rank, int32_t tag,
                                            bool remove, mdq_match_cursor_t *cur);
/* Append a posted receive (rank may be ANY_SOURCE). cur as above. */
void mdq_match_append_posted(mdq_match_queue_t *q, mdq_match_item_t *item,
                             mdq_match_cursor_t *cur);

/* Operation 4 (receive-side cancel) and general removal by identity: remove
 * a queued item (posted or unexpected) in O(1). Returns false if the item
 * is not queued (already matched). */
bool mdq_match_remove(mdq_match_queue_t *q, mdq_match_item_t *item);
/* True if the item is currently queued. The engine clears item->home when an
 * item leaves a queue; an item never queued must have home == NULL (zero it
 * when the request/fragment is initialised). */
bool mdq_match_is_queued(const mdq_match_item_t *item);

/* Remove every queued item, calling fn for each (posted first, then
 * unexpected, each in sequence order). Used at communicator destruction. */
void mdq_match_drain(mdq_match_queue_t *q, void (*fn)(mdq_match_item_t *item, bool posted, void *arg),
                     void *arg);

/* Debug: verify every structural invariant; returns 0 or a negative code
 * naming the first violation (see mdq_match.c). */
int mdq_match_check_invariants(const mdq_match_queue_t *q);

#ifdef __cplusplus
}
#endif
#endif /* MDQ_MATCH_H */
