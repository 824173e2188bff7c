/*
 * osc/nbe: MPI-3 one-sided component on the nonblocking epoch engine
 * (nbe_engine.h). This layer adapts the engine to Open MPI: window
 * creation, BTL active-message transport, datatypes and requests.
 */
#ifndef OMPI_OSC_NBE_H
#define OMPI_OSC_NBE_H

#include "ompi_config.h"

#include "opal/class/opal_list.h"
#include "opal/class/opal_hash_table.h"
#include "ompi/win/win.h"
#include "ompi/communicator/communicator.h"
#include "ompi/datatype/ompi_datatype.h"
#include "ompi/request/request.h"
#include "ompi/op/op.h"
#include "ompi/mca/osc/osc.h"
#include "ompi/mca/osc/base/base.h"

#include "nbe_engine.h"
#include "nbe_ring.h"
#include "nbe_rwlock.h"
#include "osc_nbe_lock.h"
#include "ompi_scale_adapt.h"
#include "ompi_scale_copy.h"

BEGIN_C_DECLS

struct mca_btl_base_module_t;

/* default BTL active-message tag: 0x60-0x7f is the osc range of
 * opal/mca/btl/btl.h, unused by Open MPI 4.1.4's own components */
#define OMPI_OSC_NBE_DEFAULT_TAG (MCA_BTL_TAG_OSC_RDMA + 0x0e)

typedef struct ompi_osc_nbe_component {
    ompi_osc_base_component_t super;
    int      priority;
    int      verbose;
    int      output;
    int      btl_tag;
    unsigned buffered_ops_limit;
    unsigned max_frag_size;
    unsigned rdma_threshold;
    unsigned rdma_active_threshold;
    bool     fence_implied_grants;
    bool     unlock_no_wait;
    bool     shm_allocate;
    bool     shm_tables;
    int      copy_guard;        /* OMPI_SCALE_COPY_GUARD_*: ompi_scale_copy's mode */
    bool     am_registered;
    bool     progress_registered;
    bool     finalized;         /* frames arriving after component finalize are dropped */
    int      test_fail_rank;    /* testing: windows of this rank fail at their 2nd sync */
    char    *test_break_link;   /* testing: "A,B,N[,late]", parsed into the four below */
    int      test_break_a, test_break_b, test_break_after;
    bool     test_break_late;
    bool     thread_multiple;   /* MPI_THREAD_MULTIPLE: windows take the lock (osc_nbe_lock.h) */
    uint64_t progress_ns;       /* the clock at the progress function's last reading */
    opal_hash_table_t modules;     /* window id -> module */
    opal_free_list_t ops;          /* operation objects (ompi_osc_nbe_op_slot_t) */
    uint32_t next_window_id;       /* lowest id this process may still use */
    opal_list_t      module_list;
    opal_list_t      creating;       /* windows agreeing on their id (osc_nbe_winid.c) */
    int      nwindows;
    /* MPI_T counters (component-wide) */
    unsigned long long pv_epochs_deferred;
    unsigned long long pv_ops_recorded;
    unsigned long long pv_buffered_ops;
    unsigned long long pv_bytes;
} ompi_osc_nbe_component_t;

OMPI_DECLSPEC extern ompi_osc_nbe_component_t mca_osc_nbe_component;

/* a peer's window geometry (base, size, disp_unit), cached in its win_traits */
typedef nbe_peer_info_t ompi_osc_nbe_peer_t;

typedef struct ompi_osc_nbe_region {
    uintptr_t base;
    size_t    len;
} ompi_osc_nbe_region_t;

/* a group of Win_start/Win_post translated to the window's ranks, sorted;
 * kept (with a reference on the group) while the next call passes the same
 * group, as PSCW loops do */
typedef struct ompi_osc_nbe_group_cache {
    struct ompi_group_t *group;
    int                 *ranks;
    int                  n;
} ompi_osc_nbe_group_cache_t;

/* a wait watch (osc_nbe_presence.c, below). It is timed by the clock the
 * progress function reads every 8th pass (mca_osc_nbe_component.progress_ns),
 * not by its own: a wait that ends sooner (most waits for a target in MPI)
 * costs a load and a compare per poll, no clock read and no look at the
 * target's stamp, which is a cache miss (they added 80-170 ns to a lock
 * epoch of 8-64 B when a watch read the clock from its 16th poll). Counting
 * polls instead failed where MPI's waits yield the core (an oversubscribed
 * job): 300 ms of MPI_Wait made some 200 polls. */
/* the target of a watch over every target the wait needs (unlock_all,
 * flush_all, requests): those seen away are held, at most
 * OMPI_OSC_NBE_WATCH_AWAY_MAX */
#define OMPI_OSC_NBE_WATCH_ALL (-2)
#define OMPI_OSC_NBE_WATCH_AWAY_MAX 4
/* claim words per sender in the tables segment (one cache line), a
 * target using word (target rank mod this) of its sender's line: a frame
 * taken over from one away target pins only its own word until that target
 * is past it, and the sender's frames to targets on other words stay
 * claimable (osc_nbe_claim.c) */
#define OMPI_OSC_NBE_CLAIM_SLOTS 8
/* the last put frame sent, kept while this process may still take it over
 * from its target (osc_nbe_claim.c): the frame (the packing buffer it left
 * from, swapped for a spare), the puts it counts, and the generation in
 * the sender's claim word of that target. peer -1: none. */
typedef struct ompi_osc_nbe_claim {
    int      peer;
    uint64_t seq;    /* generations sent (one count for all the words) */
    /* per word: generation taken over, its target not yet past it (0: none) */
    uint64_t taken[OMPI_OSC_NBE_CLAIM_SLOTS];
    uint64_t gen;
    uint64_t nputs;
    char    *recs;
    size_t   len, cap;
} ompi_osc_nbe_claim_t;

typedef struct ompi_osc_nbe_wait_watch {
    int      target;     /* -1: not watched; OMPI_OSC_NBE_WATCH_ALL */
    uint64_t clock;      /* the progress clock last seen */
    uint64_t t0;         /* ns: its first reading after the wait began */
    uint64_t next_look;  /* ns: the next look at the targets' stamps */
    bool     saw_away;
    int      naway;      /* OMPI_OSC_NBE_WATCH_ALL: the targets seen away */
    int      away[OMPI_OSC_NBE_WATCH_AWAY_MAX];
} ompi_osc_nbe_wait_watch_t;

typedef struct ompi_osc_nbe_module {
    ompi_osc_base_module_t super;
    opal_list_item_t       list_item;
    opal_list_item_t       creating_item;  /* in the component's creating list */
    ompi_win_t            *win;
    ompi_communicator_t   *comm;       /* the window's communicator, retained (not a dup) */
    uint32_t               cid;        /* window id agreed at creation: BTL frames carry it */
    bool                   cid_claimed;/* cid is this window's in the component's table */
    int                    rank, size;
    int                    flavor;
    void                  *base;
    size_t                 win_size;
    int                    disp_unit;
    void                  *free_after;
    nbe_engine_t          *engine;
    opal_list_t            outq;       /* frames / operations waiting for the BTL */
    size_t                 outq_ops;   /* operations in outq */
    ompi_osc_nbe_region_t *regions;    /* dynamic window: attached regions */
    int                    nregions, cap_regions;
    /* the first error a target reported for this process's operations
     * (OMPI or MPI error code, 0: none): the next synchronization call
     * returns it */
    int                    remote_error;
    /* target: peers with a refused access not yet reported (each report
     * rides on the next control message to that peer) */
    int                    refusals_untold;
    /* target, in MPI_Win_free: NBE_AM_NOTE frames not acknowledged yet */
    int                    notes_unacked;
    /* a failed window tells every peer (NBE_AM_FAILED), in rank order:
     * ranks below failure_told have been told */
    int                    failure_told;
    int                    test_syncs;  /* synchronization calls (osc_nbe_test_fail_rank) */
    unsigned               test_frames_on_link;  /* osc_nbe_test_break_link */
    /* RDMA transfers whose completion callback has not run yet */
    int                    rdma_in_flight;
    /* ops whose fragments could not all be sent (the window failed) but
     * may still be answered: kept, and ignored, until the window is freed */
    struct ompi_osc_nbe_op *abandoned;
    /* ops with every fragment out that wait for replies (abandoned when
     * the window fails: the replies may never come) */
    struct ompi_osc_nbe_op *awaiting;
    uint64_t               bytes;      /* RMA payload bytes issued */
    /* shared memory (allocate_shared, or allocate on one node): one node-wide
     * mapping, rank r's segment at shm_geom[r].off; RMA goes directly through it.
     * Other windows on one node map only the tables (shm_base NULL) */
    char                  *shm_map;        /* the mapping (tables first) */
    char                  *shm_base;       /* the mapping, if the window's memory is in it */
    volatile int32_t      *shm_acc_lock;   /* serializes accumulates of all processes */
    nbe_rwlock_t          *shm_locks;      /* per-rank window locks (fair, nbe_rwlock.h) */
    volatile int64_t      *shm_expo;       /* per-rank count of ending exposures (engine mirror) */
    int                    shm_lock_all;   /* lock_all held through the lock words */
    int                    shm_sense;      /* this process's sense of the segment barrier */
    int                   *shm_held;       /* 2 * target + exclusive, for each lock held */
    int                    shm_nheld, shm_cap_held;
    size_t                 shm_len;
    struct ompi_osc_nbe_shm_geom *shm_geom; /* per-rank offset/size/disp_unit, in the segment */
    volatile uint64_t     *shm_seen;       /* per-rank presence stamps, in the segment */
    volatile uint64_t     *shm_fences;     /* per-rank last fence epoch completed, in the segment */
    volatile uint64_t     *shm_claims;     /* per rank, OMPI_OSC_NBE_CLAIM_SLOTS claim words of its put frames (osc_nbe_claim.c) */
    volatile int32_t      *shm_acc_words;  /* per-rank accumulate words (ompi_osc_nbe_acc_word) */
    uint64_t               seen_mine;      /* the last stamp this process wrote */
    unsigned               rma_calls;      /* RMA calls, for polling now and then */
    uint64_t               away_hold_last; /* ns: the latest end of a peer's away hold */
    ompi_osc_nbe_claim_t   claim;          /* the put frame this process may take over */
    /* request-based gets and get-accumulates of passive epochs waiting for
     * their target's reply; while there are some, the progress function
     * polls req_watch (a wait for such a request is MPI_Wait's loop) */
    unsigned               req_awaiting;
    ompi_osc_nbe_wait_watch_t req_watch;
    nbe_ring_t            *shm_rings;      /* per-rank control-message rings, in the segment */
    uint64_t               ring_head;      /* next position of my ring */
    struct ompi_osc_nbe_ring_pend *ring_pend; /* control messages waiting for a full ring, FIFO */
    size_t                 ring_npend, ring_cap_pend;
    ompi_osc_nbe_group_cache_t gc_start, gc_post;
    /* the last target nbe_rma_direct allowed, valid while the engine's
     * generation is direct_gen (direct_target -1: none) */
    int                    direct_target;
    uint64_t               direct_gen;
    unsigned               grant_wait_skip;  /* ompi_osc_nbe_shm_await_ctrl calls to skip */
    const ompi_osc_nbe_peer_t *direct_peer;
    /* ompi_osc_nbe_rdma_now's BTL for rdma_now_peer (-1: none) and the
     * direction (put 1, get 0): one of osc_nbe_rdma_remote_complete, or
     * NULL: that peer cannot take it */
    int                    rdma_now_peer;
    int                    rdma_now_put;
    struct mca_bml_base_btl_t *rdma_now_btl;
    bool                   rdma_now_fixed[2]; /* ... goes by RDMA in [passive] epochs
                                               * whoever the target (ompi_osc_nbe_adapt_fixed) */
    /* RDMA gathered for CMA calls (osc_nbe_cma.c): cma_lanes batches, one
     * per peer and direction in use (allocated on first use) */
    struct nbe_cma_batch  *cma;
    int                    cma_lanes;
    opal_list_t            held;       /* frames that came before their grant (osc_nbe_hold.c) */
    size_t                 held_bytes;
    bool                   releasing;  /* ompi_osc_nbe_hold_release is on the stack */
    /* engine generation at the last release pass; held frames are only
     * looked at again once it changed (a grant or epoch activation) or
     * held_recheck says a ready frame was held behind others */
    uint64_t               held_gen;
    uint32_t               held_pass;  /* release passes (nbe_peer_info_t.held_pass) */
    bool                   held_recheck;
    bool                   freeing;
} ompi_osc_nbe_module_t;

/* user-visible request of Rput/Rget/... */
typedef struct ompi_osc_nbe_request {
    ompi_request_t super;
    bool           user_freed;
} ompi_osc_nbe_request_t;
OBJ_CLASS_DECLARATION(ompi_osc_nbe_request_t);

/* ---- frames ---- */
enum {
    NBE_AM_CTRL = 1,
    NBE_AM_PUT,
    NBE_AM_GET,
    NBE_AM_ACC,
    NBE_AM_GACC,
    NBE_AM_CAS,
    NBE_AM_REPLY,
    NBE_AM_FIN,      /* counted marker sent after an RDMA put/get completed */
    NBE_AM_GEOM_REQ, /* first touch: ask a peer for its window geometry */
    NBE_AM_GEOM_REP, /* the answer: payload ompi_osc_nbe_peer_t */
    NBE_AM_PUT_MULTI,/* small put fragments packed in one frame, each counted,
                        possibly closed by a control message */
    NBE_AM_FAILED,   /* the sender's copy of the window failed: the
                        receiver's fails too instead of waiting for it */
    NBE_AM_NOTE,     /* in MPI_Win_free: the sender refused an access of the
                        receiver (op_idx: the error code) no control
                        message reported */
    NBE_AM_NOTE_ACK  /* the answer to an NBE_AM_NOTE */
};

/* one record inside an NBE_AM_PUT_MULTI frame: a put fragment (its data
 * follows, padded to 8 bytes) or a control message that closes the frame
 * (an nbe_ctrl_t follows: the flush/unlock/DONE that came after the puts) */
enum { NBE_SUB_PUT = 0, NBE_SUB_CTRL = 1 };
typedef struct nbe_am_sub {
    uint64_t addr;
    uint64_t fence_tag;
    uint32_t len;
    uint32_t kind;        /* NBE_SUB_* */
} nbe_am_sub_t;

/* Walks the records of a PUT_MULTI payload: the next one into *sub, its
 * bytes (header, data, padding where present) at *rec / *reclen. False at
 * the end, and on a record longer than what is left (*left then stays
 * non-zero: a truncated frame). */
static inline bool nbe_am_next_sub(const char **p, size_t *left, nbe_am_sub_t *sub,
                                   const char **rec, size_t *reclen)
{
    if (*left < sizeof(*sub)) return false;
    memcpy(sub, *p, sizeof(*sub));
    if (sub->len > *left - sizeof(*sub)) return false;
    size_t step = sizeof(*sub) + ((sub->len + 7) & ~(size_t) 7);
    if (step > *left) step = *left;   /* the last record may lack its padding */
    *rec = *p;
    *reclen = step;
    *p += step;
    *left -= step;
    return true;
}

/* the frame carries a put sent before its grant (NBE_TAG_EARLY): the target
 * checks it against its grants (osc_nbe_hold.c); other frames are ready */
#define NBE_AM_F_EARLY 0x1
/* in a REPLY: the target refused the access (outside the memory attached to
 * a dynamic window, or no memory to apply it); no data follows, len is the
 * length refused and op_idx the error code (OMPI or MPI) */
#define NBE_AM_F_REFUSED 0x2
/* a PUT or PUT_MULTI frame its sender may take over (osc_nbe_claim.c):
 * cookie holds the generation of the sender's claim word of the target */
#define NBE_AM_F_CLAIM 0x4

typedef struct nbe_am_hdr {
    uint8_t  type;
    uint8_t  flags;       /* NBE_AM_F_* */
    uint8_t  pad[2];
    int32_t  src;
    uint32_t cid;
    int32_t  dt_idx;      /* predefined datatype (f index) for ACC/GACC/CAS */
    int32_t  op_idx;      /* MPI op (f index) */
    uint32_t len;         /* payload length for PUT/ACC, data length for GET/GACC/CAS */
    uint64_t fence_tag;   /* fence id of an operation; in a REPLY: target arrival count */
    uint64_t addr;        /* absolute target address */
    uint64_t cookie;      /* origin operation, echoed in replies */
    uint64_t offset;      /* stream offset, echoed in replies */
} nbe_am_hdr_t;

/* a zeroed frame header from this process of this window */
static inline void ompi_osc_nbe_hdr_init(nbe_am_hdr_t *hdr, const ompi_osc_nbe_module_t *module,
                                         int type)
{
    memset(hdr, 0, sizeof(*hdr));
    hdr->type = (uint8_t) type;
    hdr->src = module->rank;
    hdr->cid = module->cid;
}

/* one contiguous piece of an operation (target address, stream offset) */
typedef struct nbe_frag_plan {
    uint64_t addr;
    uint64_t off;
    uint32_t len;
} nbe_frag_plan_t;

enum { NBE_OP_PUT = 0, NBE_OP_GET, NBE_OP_ACC, NBE_OP_GACC, NBE_OP_CAS };

typedef struct ompi_osc_nbe_op {
    nbe_op_t               super;      /* engine header: must be first */
    struct ompi_osc_nbe_op *abandoned_next;
    struct ompi_osc_nbe_op *await_prev, *await_next;  /* module->awaiting */
    bool                   awaiting;
    int                    type;
    ompi_osc_nbe_module_t *module;
    /* origin side */
    const void            *origin_addr;
    int                    origin_count;
    ompi_datatype_t       *origin_dt;
    void                  *result_addr;
    int                    result_count;
    ompi_datatype_t       *result_dt;
    int                    target_count;
    ompi_datatype_t       *target_dt;
    ompi_op_t             *op;
    uint64_t               target_addr;
    ompi_datatype_t       *elem_dt;    /* accumulate element type (predefined) */
    size_t                 elem_n;     /* elements in the staging buffer */
    char                   cas_buf[64];/* compare value + origin value */
    /* staging */
    char                  *stream;     /* outgoing data (packed or element layout) */
    char                  *stream_alloc;
    char                  *result;     /* incoming data */
    char                  *result_alloc;
    size_t                 nbytes;     /* stream length */
    size_t                 reply_left; /* bytes of replies still expected */
    nbe_frag_plan_t       *plan;       /* &plan1 while one fragment suffices */
    nbe_frag_plan_t        plan1;
    size_t                 nplan, next_frag;
    ompi_osc_nbe_request_t *req;
    bool                   refused;    /* the target refused it: no result to unpack */
    uint64_t               adapt_t0;   /* timed for osc_nbe_adapt.c from then (0: not) */
    int                    adapt_proto;/* ... as OMPI_SCALE_ADAPT_COPY or _RDMA */
    bool                   adapt_preset;/* adapt_proto was chosen before the op existed */
    bool                   abandoned;  /* see module->abandoned: replies are ignored */
    bool                   req_watched;/* counted in module->req_awaiting */
} ompi_osc_nbe_op_t;

/* shared-memory segment of Win_allocate_shared */
int  ompi_osc_nbe_shm_create(ompi_osc_nbe_module_t *module, size_t size, int disp_unit,
                             void **base);
/* fill a peer's geometry from the segment (false if not a shared-memory window) */
int  ompi_osc_nbe_shm_create_tables(ompi_osc_nbe_module_t *module);
bool ompi_osc_nbe_shm_peer_geom(ompi_osc_nbe_module_t *module, int peer, ompi_osc_nbe_peer_t *g);
/* lock-word bookkeeping of shared-memory windows */
int  ompi_osc_nbe_shm_note_held(ompi_osc_nbe_module_t *module, int target, bool exclusive);
bool ompi_osc_nbe_shm_take_held(ompi_osc_nbe_module_t *module, int target, bool *exclusive);

/* window geometry of a peer, fetched on first touch (a round trip answered
 * by the peer's progress) and cached; NULL if it cannot be obtained */
const ompi_osc_nbe_peer_t *ompi_osc_nbe_peer(ompi_osc_nbe_module_t *module, int peer);
/* GEOM_REQ / GEOM_REP frames */
void ompi_osc_nbe_geom_frame(ompi_osc_nbe_module_t *module, const nbe_am_hdr_t *hdr,
                             const char *payload, size_t paylen);
/* the word that makes accumulates to rank's memory atomic between
 * processes: shared-memory windows one for all (loads and stores apply
 * them), windows with the tables segment one per rank (the target applies
 * active messages under it, an origin its CMA read-modify-write); NULL:
 * only the target applies them */
volatile int32_t *ompi_osc_nbe_acc_word(const ompi_osc_nbe_module_t *module, int rank);
void ompi_osc_nbe_acc_word_lock(volatile int32_t *word);
void ompi_osc_nbe_acc_word_unlock(volatile int32_t *word);
/* both wait for other processes: OMPI_SUCCESS, or the window's error once it failed */
int  ompi_osc_nbe_shm_win_lock(ompi_osc_nbe_module_t *module, int target, bool exclusive);
void ompi_osc_nbe_shm_win_unlock(ompi_osc_nbe_module_t *module, int target, bool exclusive);
int  ompi_osc_nbe_shm_barrier(ompi_osc_nbe_module_t *module);
/* fence epochs completed (osc_nbe_shm.c): published by each process when
 * its fence call returns; true once target applied every counted message
 * of our fence epochs, so that a passive epoch may reach its memory by
 * RDMA or CMA without overtaking them (nbe_fence_unapplied) */
void ompi_osc_nbe_fence_publish(ompi_osc_nbe_module_t *module);
bool ompi_osc_nbe_fence_applied(ompi_osc_nbe_module_t *module, int target);
void ompi_osc_nbe_shm_release(ompi_osc_nbe_module_t *module);
void ompi_osc_nbe_shm_release_held(ompi_osc_nbe_module_t *module);
void ompi_osc_nbe_shm_unlock_all(ompi_osc_nbe_module_t *module);
/* control messages through the segment's rings: send (queued in order
 * while the peer's ring is full), and the receive side of progress */
int  ompi_osc_nbe_shm_send_ctrl(ompi_osc_nbe_module_t *module, int peer, const nbe_ctrl_t *msg);
int  ompi_osc_nbe_shm_poll_ctrl(ompi_osc_nbe_module_t *module);
/* a shared-memory window's direct access to a peer that has not granted
 * yet: watch this process's control ring briefly; true if a message came
 * (and was processed: ask the engine again) */
bool ompi_osc_nbe_shm_await_ctrl(ompi_osc_nbe_module_t *module);
void ompi_osc_nbe_shm_register_params(const mca_base_component_t *c);
void ompi_osc_nbe_register_counter(const mca_base_component_t *c, const char *name,
                                   const char *desc, unsigned long long *counter);

/* the window a frame addresses (NULL: none with that id here) */
ompi_osc_nbe_module_t *ompi_osc_nbe_window_lookup(uint32_t cid);
/* A window id every process of the window agrees on (osc_nbe_winid.c): the
 * largest of the processes' next free ids. Each process hands out
 * increasing ids, so the id names one live window on every member; frames
 * carry it. Windows created at the same time by several threads could agree
 * on one id: if any process is threaded, further allreduces check that
 * every process could claim it and retry from a higher one if not. The
 * first allreduce also makes the shared-memory choices unanimous (each is
 * collective to set up): off if any process has it off or sees a peer off
 * its node; and a creation that failed on one process (out of memory)
 * fails on all. */
int  ompi_osc_nbe_agree_window_id(ompi_osc_nbe_module_t *module, bool failed, bool *any_failed,
                                  bool *shm_allocate, bool *shm_tables, bool *one_node);
/* gives the id up (the window is freed, or its creation failed) */
void ompi_osc_nbe_release_window_id(ompi_osc_nbe_module_t *module);
/* osc_nbe_test_break_link "late": report the swallowed frames' failure */
void ompi_osc_nbe_test_report_late(void);

/* component / AM transport */
int  ompi_osc_nbe_am_register(void);
/* process-private heap bytes of a window (MPI_T pvar osc_nbe_window_memory) */
size_t ompi_osc_nbe_window_memory(ompi_osc_nbe_module_t *module);
int  ompi_osc_nbe_send_ctrl_cb(void *ctx, int peer, const nbe_ctrl_t *msg);
/* hand an arrived control message to the engine (traced at verbosity 50) */
void ompi_osc_nbe_deliver_ctrl(ompi_osc_nbe_module_t *module, const nbe_ctrl_t *msg);
/* a failed window tells its peers, so that none waits for it: as far as
 * the BTLs take the frames now (all: until every peer is told) */
void ompi_osc_nbe_tell_failure(ompi_osc_nbe_module_t *module, bool all);
/* a refused access is reported on the next control message to its origin:
 * the target marks the message, the origin notes the error */
void ompi_osc_nbe_note_refusal(ompi_osc_nbe_module_t *module, int peer, nbe_ctrl_t *msg);
void ompi_osc_nbe_read_note(ompi_osc_nbe_module_t *module, const nbe_ctrl_t *msg);
/* MPI_Win_free, before its barrier: the refusals no control message told
 * go to their origins in NBE_AM_NOTE frames, and return once every origin
 * acknowledged (or the window failed), so each origin's MPI_Win_free
 * returns the error */
void ompi_osc_nbe_tell_refusals(ompi_osc_nbe_module_t *module);
int  ompi_osc_nbe_issue_cb(void *ctx, nbe_op_t *op);
void ompi_osc_nbe_req_complete_cb(void *ctx, nbe_req_t *req);
int  ompi_osc_nbe_drain(ompi_osc_nbe_module_t *module);
/* the process's open packed-put frame belongs to this window */
bool ompi_osc_nbe_packed_frame_open(const ompi_osc_nbe_module_t *module);
int  ompi_osc_nbe_send_frame(ompi_osc_nbe_module_t *module, int peer, const nbe_am_hdr_t *hdr,
                             const void *payload, size_t paylen, bool may_queue);
size_t ompi_osc_nbe_max_payload(ompi_osc_nbe_module_t *module, int peer);
/* a small contiguous put sent now as one immediate PUT frame; OMPI_SUCCESS,
 * or OMPI_ERR_OUT_OF_RESOURCE when the general path must take it */
int  ompi_osc_nbe_put_now(ompi_osc_nbe_module_t *module, int peer, uint64_t addr,
                          uint64_t fence_tag, const void *data, size_t len, bool passive);
/* a datatype covering the first bytes of the memory that enough elements of
 * dt describe, for data that ends inside one of them (osc_nbe_prefix.c):
 * an hindexed type of dt's basic type (or bytes), committed, the caller's
 * to destroy */
int  ompi_osc_nbe_prefix_type(struct ompi_datatype_t *dt, size_t bytes,
                              struct ompi_datatype_t **prefix);
/* the size from which a contiguous put or get goes by BTL RDMA (0: never).
 * Passive-target epochs (lock, lock_all): osc_nbe_rdma_threshold /
 * osc_nbe_rdma_get_threshold, so that a target busy outside MPI need not
 * take part. Fence and PSCW epochs, whose target enters MPI to end the
 * epoch anyway: osc_nbe_rdma_active_threshold. */
unsigned ompi_osc_nbe_rdma_from(bool is_put, bool passive);
/* RDMA put/get past the operation object. ompi_osc_nbe_rdma_now_btl: the
 * BTL to peer if a contiguous transfer of len bytes in this epoch kind
 * goes by RDMA (the threshold) on a BTL of osc_nbe_rdma_remote_complete
 * that has been seen completing a transfer inside the btl_put/btl_get
 * call (cached per window), else NULL (also in a fence or PSCW epoch
 * whose protocol osc_nbe_active_cma chooses: the general path decides and
 * times it). ompi_osc_nbe_rdma_now moves the
 * data with it, for a call nbe_rma_ready allowed: 0 when the data is in
 * place; 1 when the BTL refused (busy, error): use the general path; or
 * an MPI error (the window failed). */
struct mca_bml_base_btl_t *ompi_osc_nbe_rdma_now_btl(ompi_osc_nbe_module_t *module, int peer,
                                                      size_t len, bool is_put, bool passive);
int  ompi_osc_nbe_rdma_now(ompi_osc_nbe_module_t *module, struct mca_bml_base_btl_t *b, int peer,
                           void *local, uint64_t remote, size_t len, bool is_put);
/* Gathered CMA (osc_nbe_cma.c). ompi_osc_nbe_cma_take: 0 if the transfer
 * (for which ompi_osc_nbe_rdma_now_btl gave b; g: the peer's geometry) joins
 * the window's batch for that peer and direction, to move at
 * ompi_osc_nbe_cma_submit, which every synchronization call runs first; 1 if
 * it must go now; an MPI error if moving a batch it had to submit first
 * failed the window. Submit (every batch): 0, or the error of the failed
 * window. */
void ompi_osc_nbe_cma_register_params(const mca_base_component_t *c);
/* whether b's put/get takes that transfer in one call (size limit, alignment) */
bool ompi_osc_nbe_rdma_fits(const struct mca_bml_base_btl_t *b, const void *local, uint64_t remote,
                            size_t len, bool is_put);
int  ompi_osc_nbe_cma_take(ompi_osc_nbe_module_t *module, struct mca_bml_base_btl_t *b, int peer,
                           const ompi_osc_nbe_peer_t *g, void *local, uint64_t remote, size_t len,
                           bool is_put);
int  ompi_osc_nbe_cma_submit(ompi_osc_nbe_module_t *module);
/* moves a packed stream to (is_put) or from nsegs segments of peer's memory
 * (iov_base: its addresses) in one CMA call, through vader transfer by
 * transfer if that call fails or finds no memory for its vectors;
 * OMPI_SUCCESS, or an error that failed the window */
/* an accumulate applied by the origin to peer's memory: under peer's
 * accumulate word, reads the len bytes at remote, lets update change them
 * (it returns whether to write them back, after taking what a fetch needs)
 * and writes them back, by CMA. OMPI_SUCCESS; 1 if nothing was changed
 * (the read failed: send it instead); else the window failed (the write) */
typedef bool (*ompi_osc_nbe_rmw_fn)(void *ctx, void *cur);
int  ompi_osc_nbe_cma_rmw(ompi_osc_nbe_module_t *module, int peer, pid_t pid, uint64_t remote,
                          size_t len, ompi_osc_nbe_rmw_fn update, void *ctx);
int  ompi_osc_nbe_cma_scatter(ompi_osc_nbe_module_t *module, struct mca_bml_base_btl_t *b,
                              int peer, pid_t pid, bool is_put, char *stream,
                              const struct iovec *segs, int nsegs);
/* heap bytes of the window's batches (bounded by osc_nbe_cma_peers) */
size_t ompi_osc_nbe_cma_memory(const ompi_osc_nbe_module_t *module);
void ompi_osc_nbe_cma_fini(ompi_osc_nbe_module_t *module);
/* vader's CMA or active messages for the RDMA-sized contiguous puts and
 * gets of an epoch (osc_nbe_adapt.c: osc_nbe_active_cma for fence and PSCW,
 * osc_nbe_passive_cma for lock and lock_all). ompi_osc_nbe_adapt_fixed:
 * whether b's RDMA goes without a choice in that epoch class (not vader's
 * CMA, or the parameter says on); ompi_osc_nbe_adapt_choose: the protocol
 * for op, a transfer of len bytes over b (OMPI_SCALE_ADAPT_RDMA or _COPY;
 * a passive target must be seen in MPI for _COPY); when it is to be timed,
 * op->adapt_t0 and adapt_proto are set, and ompi_osc_nbe_op_local_complete
 * reports it by ompi_osc_nbe_adapt_record.
 * ompi_osc_nbe_is_cma: btl is vader with its CMA single copy. */
bool ompi_osc_nbe_adapt_fixed(const struct mca_bml_base_btl_t *b, bool passive);
int  ompi_osc_nbe_adapt_choose(ompi_osc_nbe_op_t *op, const struct mca_bml_base_btl_t *b,
                               size_t len, bool is_put);
void ompi_osc_nbe_adapt_record(const ompi_osc_nbe_op_t *op, size_t len);
/* the same for a transfer without an op (try_rdma_now): *t0 is the time to
 * report from with ompi_osc_nbe_adapt_record_ns, 0 if it is not timed; an
 * op that takes the choice over gets adapt_preset */
int  ompi_osc_nbe_adapt_choose_now(ompi_osc_nbe_module_t *module, int target,
                                   const struct mca_bml_base_btl_t *b, size_t len, bool is_put,
                                   bool passive, uint64_t *t0);
void ompi_osc_nbe_adapt_record_ns(size_t len, bool is_put, bool passive, int proto, uint64_t ns);
void ompi_osc_nbe_adapt_register_params(const mca_base_component_t *c);
void ompi_osc_nbe_adapt_fini(void);
bool ompi_osc_nbe_is_cma(const struct mca_btl_base_module_t *btl);
/* would the single copy of this transfer over b run at a distance this
 * machine copies slowly (ompi_scale_copy.h: 25x on AMD Zen with FSRM)?
 * ompi_osc_nbe_rdma_now_bounced: ompi_osc_nbe_rdma_now through a bounce
 * buffer placed away from both ends, in pieces (two fast copies instead of
 * one slow one; used in passive-target epochs, whose progress must not
 * need the target) */
bool ompi_osc_nbe_rdma_copy_slow(const struct mca_bml_base_btl_t *b, const void *local,
                                 uint64_t remote, size_t len, bool is_put);
int ompi_osc_nbe_rdma_now_bounced(ompi_osc_nbe_module_t *module, struct mca_bml_base_btl_t *b,
                                  int peer, void *local, uint64_t remote, size_t len, bool is_put);
/* whether some epoch kind moves len bytes in that direction by RDMA (a
 * test before looking the epoch up) */
bool ompi_osc_nbe_rdma_sized(size_t len, bool is_put);
/* contiguous put/get through the BTL's RDMA (from ompi_osc_nbe_rdma_from
 * bytes on): -1 not taken (use active messages), 0 complete at the origin
 * (nothing counted), 1 in flight with one counted FIN to follow */
int  ompi_osc_nbe_try_rdma(ompi_osc_nbe_module_t *module, ompi_osc_nbe_op_t *op, void *local,
                           uint64_t remote, size_t len, bool is_put);
/* MCA variables of the component (scope local), set to value first */
void ompi_osc_nbe_register_string(const mca_base_component_t *c, const char *name, const char *desc,
                                  int level, const char *value, char **storage);
void ompi_osc_nbe_register_uint(const mca_base_component_t *c, const char *name, const char *desc,
                                int level, unsigned value, unsigned *storage);
void ompi_osc_nbe_register_bool(const mca_base_component_t *c, const char *name, const char *desc,
                                int level, bool value, bool *storage);
/* sending to peer (or, peer < 0, a completion) failed with rc: the window
 * fails, said once at verbosity 1 (osc_nbe_am.c) */
void ompi_osc_nbe_link_failed(ompi_osc_nbe_module_t *module, int peer, int rc);
/* origin: a peer refused an access of ours (code); the next synchronization
 * call returns the first such error (osc_nbe_apply.c) */
void ompi_osc_nbe_note_remote_error(ompi_osc_nbe_module_t *module, int code);
void ompi_osc_nbe_am_register_params(const mca_base_component_t *c);
void ompi_osc_nbe_am_finalize(void);
void ompi_osc_nbe_rdma_register_params(const mca_base_component_t *c);
void ompi_osc_nbe_rdma_finalize(void);
void ompi_osc_nbe_op_free(ompi_osc_nbe_op_t *op);
/* frees the process-wide cache of op objects (component close) */
int ompi_osc_nbe_ops_init(void);
void ompi_osc_nbe_op_local_complete(ompi_osc_nbe_op_t *op);
void ompi_osc_nbe_op_fail(ompi_osc_nbe_op_t *op, int code);
/* a fragment of op cannot be sent (the window failed): its request
 * completes with MPI_ERR_OTHER; op is freed now, or with the window if a
 * reply may still name it */
void ompi_osc_nbe_op_abandon(ompi_osc_nbe_op_t *op);
void ompi_osc_nbe_free_abandoned(ompi_osc_nbe_module_t *module);
/* op has every fragment out and waits for replies */
void ompi_osc_nbe_await_replies(ompi_osc_nbe_op_t *op);
/* the window failed: ops still recorded (never issued) and ops waiting for
 * replies end with MPI_ERR_OTHER */
void ompi_osc_nbe_abandon_awaiting(ompi_osc_nbe_module_t *module);
int  ompi_osc_nbe_progress_module(ompi_osc_nbe_module_t *module);
int  ompi_osc_nbe_wait_req(ompi_osc_nbe_module_t *module, nbe_req_t *req);
int  ompi_osc_nbe_err(int nbe_rc);
/* a wait for other processes ends with this once the window failed (here,
 * or at a peer that told us): OMPI_SUCCESS while it has not */
int  ompi_osc_nbe_failed_rc(ompi_osc_nbe_module_t *module);
void ompi_osc_nbe_group_cache_clear(ompi_osc_nbe_group_cache_t *gc);
/* a frame from the network: held (osc_nbe_hold.c) if it came before its
 * grant, else applied now */
void ompi_osc_nbe_apply_frame(ompi_osc_nbe_module_t *module, const nbe_am_hdr_t *hdr,
                              const char *payload, size_t paylen);
void ompi_osc_nbe_apply_frame_now(ompi_osc_nbe_module_t *module, const nbe_am_hdr_t *hdr,
                                  const char *payload, size_t paylen);
/* Walks a PUT_MULTI payload in order: a control record goes to the engine
 * at once, a put record (rec: its sub header, data and padding) to put().
 * False if the payload ends inside a record (truncated frame). */
typedef void (*ompi_osc_nbe_put_record_fn)(void *ctx, const nbe_am_sub_t *sub, const char *rec,
                                           size_t reclen);
bool ompi_osc_nbe_multi_each(ompi_osc_nbe_module_t *module, const char *payload, size_t paylen,
                             ompi_osc_nbe_put_record_fn put, void *ctx);

/* presence of passive targets (osc_nbe_presence.c): progress stamps this
 * process's entry of the tables segment; target_away tells whether a small
 * passive transfer to peer should go by RDMA because the peer is not in MPI.
 * A wait watch times an unlock or flush to one target (polled in its loop)
 * and, if it waited long for an absent target, holds that target away; the
 * module's req_watch does so for waits on requests of passive gets (MPI_Wait
 * only calls progress: the progress function polls it while one is awaited). */
void ompi_osc_nbe_presence_register_params(const mca_base_component_t *c);
bool ompi_osc_nbe_presence_on(const ompi_osc_nbe_module_t *module);
void ompi_osc_nbe_presence_stamp(ompi_osc_nbe_module_t *module, uint64_t now_ns);
bool ompi_osc_nbe_target_away(ompi_osc_nbe_module_t *module, int peer);
void ompi_osc_nbe_target_away_counted(void);
/* the BTL (vader with CMA, counting as remote-complete) that a transfer of
 * a passive epoch to peer, away from MPI, takes by CMA whatever its size or
 * datatypes; NULL: none, or the peer is not away (osc_nbe_rdma.c) */
/* the RDMA BTL to a target away from MPI in a passive epoch, if the data
 * need not wait for the target there (remote-complete: no FIN), else NULL
 * (osc_nbe_rdma.c) */
struct mca_bml_base_btl_t *ompi_osc_nbe_away_btl(ompi_osc_nbe_module_t *module, int peer,
                                                 bool is_put);
struct mca_bml_base_btl_t *ompi_osc_nbe_away_cma_btl(ompi_osc_nbe_module_t *module, int peer,
                                                      bool is_put);
void ompi_osc_nbe_wait_watch_init(ompi_osc_nbe_wait_watch_t *w, ompi_osc_nbe_module_t *module,
                                  int target);
void ompi_osc_nbe_wait_watch_poll_slow(ompi_osc_nbe_wait_watch_t *w, ompi_osc_nbe_module_t *module);
void ompi_osc_nbe_wait_watch_done(ompi_osc_nbe_wait_watch_t *w, ompi_osc_nbe_module_t *module);
static inline void ompi_osc_nbe_wait_watch_poll(ompi_osc_nbe_wait_watch_t *w,
                                                ompi_osc_nbe_module_t *module)
{
    if (-1 != w->target &&
        __atomic_load_n(&mca_osc_nbe_component.progress_ns, __ATOMIC_RELAXED) != w->clock) {
        ompi_osc_nbe_wait_watch_poll_slow(w, module);
    }
}
/* a request-based get or get-accumulate of a passive epoch now waits for its
 * target's reply (req_watch_start), or no longer (req_watch_end) */
void ompi_osc_nbe_req_watch_start(ompi_osc_nbe_module_t *module, ompi_osc_nbe_op_t *op);
void ompi_osc_nbe_req_watch_end(ompi_osc_nbe_module_t *module, ompi_osc_nbe_op_t *op);

/* taking over a put frame from a passive target that left MPI before
 * applying it (osc_nbe_claim.c). Origin: claim_arm before a frame of
 * passive puts leaves (false: it cannot be taken over; true: hdr carries
 * the claim), claim_keep once it left, claim_disarm if it did not, claim_sent_other for every
 * other frame to a peer, claim_try while a wait sees the peer away.
 * Target: claim_skip before applying a frame flagged NBE_AM_F_CLAIM (true:
 * its sender applied the puts itself; count them, apply nothing). */
void ompi_osc_nbe_claim_register_params(const mca_base_component_t *c);
void ompi_osc_nbe_claim_init(ompi_osc_nbe_module_t *module);
void ompi_osc_nbe_claim_fini(ompi_osc_nbe_module_t *module);
bool ompi_osc_nbe_claim_arm(ompi_osc_nbe_module_t *module, int peer, uint64_t nputs,
                            nbe_am_hdr_t *hdr);
/* the armed frame (len bytes, header and PUT_MULTI records) left: the
 * module keeps its buffer, and the caller gets the module's spare one */
void ompi_osc_nbe_claim_keep(ompi_osc_nbe_module_t *module, char **frame, size_t *cap, size_t len);
void ompi_osc_nbe_claim_disarm(ompi_osc_nbe_module_t *module, nbe_am_hdr_t *hdr);
static inline void ompi_osc_nbe_claim_sent_other(ompi_osc_nbe_module_t *module, int peer)
{
    /* it is no longer the only unacknowledged frame to that peer */
    if (OPAL_UNLIKELY(module->claim.peer == peer)) module->claim.peer = -1;
}
/* a control message that may follow a frame to be taken over: an UNLOCK
 * that releases nothing at the target (NOCHECK) or a FLUSH_REQ */
bool ompi_osc_nbe_claim_ctrl_ok(const nbe_ctrl_t *msg);
void ompi_osc_nbe_claim_try(ompi_osc_nbe_module_t *module, int peer);
bool ompi_osc_nbe_claim_skip(ompi_osc_nbe_module_t *module, const nbe_am_hdr_t *hdr);

/* early frames (osc_nbe_hold.c): hold_early keeps a frame that came before
 * the grant it needs (true: taken); hold_release applies those whose grant
 * exists now, each origin's in arrival order */
void ompi_osc_nbe_hold_register_params(const mca_base_component_t *c);
void ompi_osc_nbe_hold_init(ompi_osc_nbe_module_t *module);
/* tells the window's engine whether puts may go before their grant */
void ompi_osc_nbe_hold_configure(ompi_osc_nbe_module_t *module);
void ompi_osc_nbe_hold_fini(ompi_osc_nbe_module_t *module);
bool ompi_osc_nbe_hold_early(ompi_osc_nbe_module_t *module, const nbe_am_hdr_t *hdr,
                             const char *payload, size_t paylen);
int  ompi_osc_nbe_hold_release(ompi_osc_nbe_module_t *module);

/* module functions */
int ompi_osc_nbe_free(struct ompi_win_t *win);
int ompi_osc_nbe_attach(struct ompi_win_t *win, void *base, size_t len);
int ompi_osc_nbe_detach(struct ompi_win_t *win, const void *base);
/* is [addr, addr + len) inside one region attached to this dynamic window? */
bool ompi_osc_nbe_attached(const ompi_osc_nbe_module_t *module, uint64_t addr, uint64_t len);
int ompi_osc_nbe_shared_query(struct ompi_win_t *win, int rank, size_t *size, int *disp_unit,
                              void *baseptr);

int ompi_osc_nbe_put(const void *origin_addr, int origin_count, struct ompi_datatype_t *origin_dt,
                     int target, ptrdiff_t target_disp, int target_count,
                     struct ompi_datatype_t *target_dt, struct ompi_win_t *win);
int ompi_osc_nbe_get(void *origin_addr, int origin_count, struct ompi_datatype_t *origin_dt,
                     int target, ptrdiff_t target_disp, int target_count,
                     struct ompi_datatype_t *target_dt, struct ompi_win_t *win);
int ompi_osc_nbe_accumulate(const void *origin_addr, int origin_count,
                            struct ompi_datatype_t *origin_dt, int target, ptrdiff_t target_disp,
                            int target_count, struct ompi_datatype_t *target_dt,
                            struct ompi_op_t *op, struct ompi_win_t *win);
int ompi_osc_nbe_compare_and_swap(const void *origin_addr, const void *compare_addr,
                                  void *result_addr, struct ompi_datatype_t *dt, int target,
                                  ptrdiff_t target_disp, struct ompi_win_t *win);
int ompi_osc_nbe_fetch_and_op(const void *origin_addr, void *result_addr,
                              struct ompi_datatype_t *dt, int target, ptrdiff_t target_disp,
                              struct ompi_op_t *op, struct ompi_win_t *win);
int ompi_osc_nbe_get_accumulate(const void *origin_addr, int origin_count,
                                struct ompi_datatype_t *origin_dt, void *result_addr,
                                int result_count, struct ompi_datatype_t *result_dt,
                                int target, ptrdiff_t target_disp, int target_count,
                                struct ompi_datatype_t *target_dt, struct ompi_op_t *op,
                                struct ompi_win_t *win);
int ompi_osc_nbe_rput(const void *origin_addr, int origin_count, struct ompi_datatype_t *origin_dt,
                      int target, ptrdiff_t target_disp, int target_count,
                      struct ompi_datatype_t *target_dt, struct ompi_win_t *win,
                      struct ompi_request_t **request);
int ompi_osc_nbe_rget(void *origin_addr, int origin_count, struct ompi_datatype_t *origin_dt,
                      int target, ptrdiff_t target_disp, int target_count,
                      struct ompi_datatype_t *target_dt, struct ompi_win_t *win,
                      struct ompi_request_t **request);
int ompi_osc_nbe_raccumulate(const void *origin_addr, int origin_count,
                             struct ompi_datatype_t *origin_dt, int target, ptrdiff_t target_disp,
                             int target_count, struct ompi_datatype_t *target_dt,
                             struct ompi_op_t *op, struct ompi_win_t *win,
                             struct ompi_request_t **request);
int ompi_osc_nbe_rget_accumulate(const void *origin_addr, int origin_count,
                                 struct ompi_datatype_t *origin_dt, void *result_addr,
                                 int result_count, struct ompi_datatype_t *result_dt,
                                 int target, ptrdiff_t target_disp, int target_count,
                                 struct ompi_datatype_t *target_dt, struct ompi_op_t *op,
                                 struct ompi_win_t *win, struct ompi_request_t **request);

int ompi_osc_nbe_fence(int assert, struct ompi_win_t *win);
int ompi_osc_nbe_start(struct ompi_group_t *group, int assert, struct ompi_win_t *win);
int ompi_osc_nbe_complete(struct ompi_win_t *win);
int ompi_osc_nbe_post(struct ompi_group_t *group, int assert, struct ompi_win_t *win);
int ompi_osc_nbe_wait(struct ompi_win_t *win);
int ompi_osc_nbe_test(struct ompi_win_t *win, int *flag);
int ompi_osc_nbe_lock(int lock_type, int target, int assert, struct ompi_win_t *win);
int ompi_osc_nbe_unlock(int target, struct ompi_win_t *win);
int ompi_osc_nbe_lock_all(int assert, struct ompi_win_t *win);
int ompi_osc_nbe_unlock_all(struct ompi_win_t *win);
int ompi_osc_nbe_sync(struct ompi_win_t *win);
int ompi_osc_nbe_flush(int target, struct ompi_win_t *win);
int ompi_osc_nbe_flush_all(struct ompi_win_t *win);
int ompi_osc_nbe_flush_local(int target, struct ompi_win_t *win);
int ompi_osc_nbe_flush_local_all(struct ompi_win_t *win);

static inline ompi_osc_nbe_module_t *ompi_osc_nbe_module(struct ompi_win_t *win)
{
    return (ompi_osc_nbe_module_t *) win->w_osc_module;
}

END_C_DECLS
#endif
