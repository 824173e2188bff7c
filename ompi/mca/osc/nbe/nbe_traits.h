/*
 * win_traits of the nbe epoch engine: per-peer counters, created on first
 * touch and kept in an open-addressing hash table keyed by rank, so a peer
 * the process never synchronizes or communicates with costs no memory.
 * Pure C (no Open MPI dependency).
 */
#ifndef NBE_TRAITS_H
#define NBE_TRAITS_H

#include <stddef.h>
#include <stdint.h>

/* window geometry of a peer (base address, size, displacement unit). The
 * engine does not interpret it: the glue fills it on the first touch of the
 * peer, so only touched peers cost memory. */
typedef struct nbe_peer_info {
    uint64_t base;
    uint64_t size;
    int64_t  disp_unit;
    uint8_t  known;          /* filled */
    uint8_t  requested;      /* the glue asked the peer for it */
    int      refused;        /* glue, target side: the error of an access of
                                this peer refused and not yet reported to it */
    uint32_t held_frames;    /* glue: early frames of this peer held */
    uint32_t held_pass;      /* glue: the release pass of held early frames in
                                which a frame of this peer stayed held */
    int32_t  pid;            /* glue: the peer's process on this node (0: unknown) */
    uint64_t away_until;     /* glue: until then (CLOCK_MONOTONIC ns) the peer counts as away
                                from MPI (osc_nbe_presence.c) */
} nbe_peer_info_t;

/* a DONE from an origin: its access epoch id and the total of counted
 * messages it had sent us when it closed that epoch */
typedef struct nbe_done {
    uint64_t id;
    uint64_t ops;
} nbe_done_t;

typedef struct nbe_trait {
    int      rank;
    nbe_peer_info_t info;    /* glue data, see above */
    /* origin side */
    /* PSCW start epochs and lock epochs have separate id spaces: a post
     * grants the origin's next start, a lock grant echoes the request's id,
     * and the two may be given in either order */
    uint64_t C_e;            /* last start epoch id granted to me by rank (its posts) */
    uint64_t access_seq;     /* start epochs I opened towards rank */
    uint64_t C_lock;         /* last lock id rank granted me */
    uint64_t lock_seq;       /* locks I requested from rank */
    uint64_t ops_out;        /* counted messages sent to rank outside fences */
    uint64_t fence_ops_out;  /* counted messages sent to rank in the current fence */
    uint64_t pending_local;  /* issued ops to rank not yet locally complete */
    uint64_t unlock_seq;     /* unlocks sent to rank */
    uint64_t unlock_acked;   /* unlock acks received from rank */
    uint64_t flush_acked;    /* ops count acknowledged by rank's FLUSH_ACK */
    uint64_t flush_sent;     /* largest threshold sent in a FLUSH_REQ */
    /* the last fence epoch whose counted messages to rank are not known to
     * be applied there (0: none): a fence returns once its operations left,
     * and rank applies them before its own fence call returns. Until then a
     * passive epoch's operation must not reach rank's memory another way
     * (RDMA, CMA): it would overtake them. Cleared by rank's grant of a
     * later fence epoch, by an ack of a counted message sent after
     * (fence_unapplied_ops: ops_out then), or by the glue's own evidence */
    uint64_t fence_unapplied;
    uint64_t fence_unapplied_ops;
    /* target side */
    uint64_t grant_seq;      /* exposure (post) grants I gave rank */
    uint64_t lock_grant_seq; /* lock grants I gave rank */
    uint64_t ops_in;         /* counted messages from rank outside fences */
    /* DONEs from rank not yet matched by an exposure leg, in id order (a
     * ring): with early messages an origin may close several access
     * epochs before this process posts the matching exposures, and each
     * exposure must wait for its own epoch's total, not a later one's */
    nbe_done_t *dones;
    uint32_t done_head, done_count, done_cap;
    uint64_t unlock_req_seq; /* pending UNLOCK from rank (0 = none) */
    uint64_t unlock_req_ops;
    int      unlock_req_release;
    uint64_t flush_req_ops;  /* pending FLUSH_REQ threshold */
    int      flush_req_pending;
    void    *open_lock;      /* app-level open LOCK epoch towards rank */
    int      watched;        /* on the engine's watch list */
    struct nbe_trait *watch_next;
} nbe_trait_t;

typedef struct nbe_traits {
    nbe_trait_t **slots;
    size_t        cap;     /* power of two */
    size_t        count;
    nbe_trait_t  *last;    /* most recent lookup: RMA loops hit one peer */
} nbe_traits_t;

int          nbe_traits_init(nbe_traits_t *t);
void         nbe_traits_fini(nbe_traits_t *t);
/* heap bytes of the table: slots, traits and their DONE queues */
size_t       nbe_traits_memory(const nbe_traits_t *t);
/* the table walk behind the two lookups below */
nbe_trait_t *nbe_traits_find_slow(const nbe_traits_t *t, int rank);
nbe_trait_t *nbe_traits_get_slow(nbe_traits_t *t, int rank);

/* lookup without creating (NULL if the peer was never touched). Inline for
 * the hit of the last lookup: an epoch looks its peer up several times. */
static inline nbe_trait_t *nbe_traits_find(const nbe_traits_t *t, int rank)
{
    if (__builtin_expect(NULL != t->last && t->last->rank == rank, 1)) return t->last;
    return nbe_traits_find_slow(t, rank);
}

/* lookup, creating a zeroed trait on first touch (NULL on ENOMEM) */
static inline nbe_trait_t *nbe_traits_get(nbe_traits_t *t, int rank)
{
    if (__builtin_expect(NULL != t->last && t->last->rank == rank, 1)) return t->last;
    return nbe_traits_get_slow(t, rank);
}

/* calls fn(ctx, trait) for every touched peer, in no particular order; fn
 * must not create or remove traits */
void         nbe_traits_each(nbe_traits_t *t, void (*fn)(void *ctx, nbe_trait_t *tr), void *ctx);

/* DONE queue of a trait, ordered by id: insert (0, or -1 on ENOMEM),
 * lowest id (NULL if none), drop the lowest */
int               nbe_trait_push_done(nbe_trait_t *tr, uint64_t id, uint64_t ops);
const nbe_done_t *nbe_trait_first_done(const nbe_trait_t *tr);
void              nbe_trait_pop_done(nbe_trait_t *tr);

#endif
