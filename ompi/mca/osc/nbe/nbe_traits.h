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
    int      known;          /* filled */
    int      requested;      /* the glue asked the peer for it */
} nbe_peer_info_t;

typedef struct nbe_trait {
    int      rank;
    nbe_peer_info_t info;    /* glue data, see above */
    /* origin side */
    uint64_t C_e;            /* last epoch id granted to me by rank (monotone) */
    uint64_t access_seq;     /* access epochs (start/lock) I requested towards rank */
    uint64_t ops_out;        /* counted messages sent to rank outside fences */
    uint64_t fence_ops_out;  /* counted messages sent to rank in the current fence */
    uint64_t pending_local;  /* issued ops to rank not yet locally complete */
    uint64_t unlock_seq;     /* unlocks sent to rank */
    uint64_t unlock_acked;   /* unlock acks received from rank */
    uint64_t flush_acked;    /* ops count acknowledged by rank's FLUSH_ACK */
    uint64_t flush_sent;     /* largest threshold sent in a FLUSH_REQ */
    /* target side */
    uint64_t grant_seq;      /* grants I gave rank */
    uint64_t ops_in;         /* counted messages from rank outside fences */
    uint64_t done_id;        /* last DONE id from rank */
    uint64_t done_ops;       /* ops total carried by that DONE */
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
/* lookup without creating (NULL if the peer was never touched) */
nbe_trait_t *nbe_traits_find(const nbe_traits_t *t, int rank);
/* lookup, creating a zeroed trait on first touch (NULL on ENOMEM) */
nbe_trait_t *nbe_traits_get(nbe_traits_t *t, int rank);

#endif
