/*
 * nbe_engine: the nonblocking RMA epoch engine of osc/nbe.
 *
 * Pure C, no Open MPI or MPI dependency. One engine instance per window
 * and process. Every synchronization is a nonblocking operation returning
 * an nbe_req_t; the blocking MPI calls are "start + wait".
 *
 *  - Epochs are kept in one FIFO per window. An epoch that cannot activate
 *    yet is deferred: its RMA operations are recorded in the epoch and
 *    replayed (issued) once the epoch is active and the target has granted.
 *  - Matching uses per-pair epoch-ID counters in win_traits: a grant is a
 *    counter the target advances (GRANT carries the new value), not a
 *    message matched against a queue. Traits exist only for touched peers.
 *  - Completion is counted: origins tell targets how many operation
 *    messages they sent (DONE / UNLOCK / FLUSH carry totals), targets count
 *    arrivals. No per-operation acknowledgements.
 *  - Fence epochs use O(1) window-level counters (three rotating slots),
 *    not per-peer state.
 *
 * The transport (glue) provides send_ctrl/issue callbacks and reports
 * arrivals and local completions back.
 */
#ifndef NBE_ENGINE_H
#define NBE_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#include "nbe_traits.h"

#ifdef __cplusplus
extern "C" {
#endif

/* return codes */
#define NBE_OK          0
#define NBE_ERR_SYNC   (-1)   /* synchronization misuse (MPI_ERR_RMA_SYNC) */
#define NBE_ERR_NOMEM  (-2)
#define NBE_ERR_ARG    (-3)
#define NBE_ERR_PEER   (-4)   /* a peer's copy of the window failed */
#define NBE_ERR_COMM   (-5)   /* the transport could not deliver a message */
#define NBE_AGAIN       1     /* nbe_flush_now: a real flush is needed */

/* assertion bits (the glue maps MPI_MODE_* onto these) */
#define NBE_MODE_NOCHECK    0x1
#define NBE_MODE_NOPRECEDE  0x2
#define NBE_MODE_NOSUCCEED  0x4

#define NBE_LOCK_SHARED     1
#define NBE_LOCK_EXCLUSIVE  2

typedef enum {
    NBE_EP_FENCE = 0,
    NBE_EP_START,
    NBE_EP_POST,
    NBE_EP_LOCK,
    NBE_EP_LOCK_ALL
} nbe_epoch_kind_t;

typedef enum {
    NBE_EPOCH_DEFERRED = 0,
    NBE_EPOCH_ACTIVE,
    NBE_EPOCH_COMPLETE
} nbe_epoch_state_t;

/* control message types */
enum {
    NBE_CTRL_GRANT = 1,      /* a: start epoch id granted (a post)           */
    NBE_CTRL_FENCE_GRANT,    /* a: fence id                                  */
    NBE_CTRL_DONE,           /* a: access id, b: total ops sent to receiver  */
    NBE_CTRL_FENCE_DONE,     /* a: fence id, b: ops sent in this fence epoch */
    NBE_CTRL_LOCK_REQ,       /* a: lock id, lock_type                        */
    NBE_CTRL_UNLOCK,         /* a: unlock seq, b: total ops, flags: NOCHECK  */
    NBE_CTRL_UNLOCK_ACK,     /* a: unlock seq, b: ops received from origin   */
    NBE_CTRL_FLUSH_REQ,      /* b: total ops to wait for                     */
    NBE_CTRL_FLUSH_ACK,      /* b: total ops arrived                         */
    NBE_CTRL_LOCK_GRANT      /* a: lock id granted to the receiver           */
};

#define NBE_CTRL_FLAG_NOCHECK 0x1
/* on a FENCE_DONE: the sender sent no counted message in that fence epoch
 * and closed it with a fence call that opened the next one */
#define NBE_CTRL_FLAG_CLEAN   0x2

typedef struct nbe_ctrl {
    uint8_t  type;
    uint8_t  lock_type;
    uint8_t  flags;
    uint8_t  note;      /* not read by the engine: the glue's remark on the message */
    int32_t  src;
    uint64_t a;
    uint64_t b;
} nbe_ctrl_t;

typedef struct nbe_engine nbe_engine_t;
typedef struct nbe_epoch  nbe_epoch_t;
typedef struct nbe_req    nbe_req_t;

/* An RMA operation record. The glue embeds it as the first member of its
 * own operation structure. The engine owns it from nbe_rma() until it calls
 * issue(); after issue() the glue owns it again. */
typedef struct nbe_op {
    struct nbe_op *next;
    int            target;
    int            passive;     /* set by the engine before issue(): the op's epoch is a
                                   lock or lock_all (its target need not take part) */
    uint64_t       fence_tag;   /* set by the engine before issue(): fence id or 0 */
} nbe_op_t;

typedef enum {
    NBE_REQ_FENCE = 0, NBE_REQ_START, NBE_REQ_COMPLETE, NBE_REQ_POST, NBE_REQ_WAIT,
    NBE_REQ_LOCK, NBE_REQ_UNLOCK, NBE_REQ_LOCK_ALL, NBE_REQ_UNLOCK_ALL,
    NBE_REQ_FLUSH, NBE_REQ_FLUSH_LOCAL
} nbe_req_kind_t;

/* Internal request returned by every synchronization. */
struct nbe_req {
    nbe_req_kind_t kind;
    volatile int   complete;
    int            status;
    void          *user;        /* glue data (e.g. an ompi_request_t) */
    /* engine private */
    nbe_req_t     *next;
    nbe_epoch_t   *ep;
    int            target;      /* flush: target rank or -1 for all */
    uint64_t       thr;         /* flush: ops threshold for single target */
    int            phase;
    nbe_engine_t  *owner;       /* its free list */
};

typedef struct nbe_transport {
    /* send a control message; the glue queues it if the network is busy.
     * Returns 0 once the message reaches peer without further calls of
     * this process, 1 if the glue queued it (it leaves from a later
     * progress call), < 0 on error. peer == self never reaches here (the
     * engine loops back itself). */
    int (*send_ctrl)(void *ctx, int peer, const nbe_ctrl_t *msg);
    /* start an RMA operation; returns the number of counted messages it
     * sends to op->target (0 for self), or < 0 on error. The glue reports
     * local completion with nbe_op_local_done(). */
    int (*issue)(void *ctx, nbe_op_t *op);
    /* a request completed (may be NULL) */
    void (*req_complete)(void *ctx, nbe_req_t *req);
} nbe_transport_t;

typedef struct nbe_stats {
    uint64_t epochs_opened;
    uint64_t epochs_deferred;   /* epochs that could not activate when opened */
    uint64_t ops_recorded;      /* ops queued because their target was not granted */
    uint64_t ops_issued;
    uint64_t ctrl_sent;
    uint64_t fence_grants_implied; /* fence epochs granted by a clean predecessor */
    uint64_t unlocks_no_wait;      /* unlocks finished before their UNLOCK_ACK */
} nbe_stats_t;

nbe_engine_t *nbe_engine_create(int rank, int size, const nbe_transport_t *tx, void *ctx);
void          nbe_engine_destroy(nbe_engine_t *eng);

/* ascending order, in place: epochs keep their legs sorted by rank, and a
 * caller that passes sorted ranks to nbe_istart/nbe_ipost saves a copy */
void nbe_sort_ranks(int *ranks, int n);

/* --- nonblocking synchronizations (the future MPIX_Win_i* entry points) --- */
int nbe_ifence(nbe_engine_t *eng, int assert_bits, nbe_req_t **req);
int nbe_istart(nbe_engine_t *eng, const int *ranks, int n, int assert_bits, nbe_req_t **req);
int nbe_icomplete(nbe_engine_t *eng, nbe_req_t **req);
int nbe_ipost(nbe_engine_t *eng, const int *ranks, int n, int assert_bits, nbe_req_t **req);
int nbe_iwait(nbe_engine_t *eng, nbe_req_t **req);
/* MPI_Win_test: *flag = 1 and the exposure closed if it is complete */
int nbe_test_exposure(nbe_engine_t *eng, int *flag);
int nbe_ilock(nbe_engine_t *eng, int lock_type, int target, int assert_bits, nbe_req_t **req);
/* *req is NULL when the unlock completed within the call (a NOCHECK lock
 * epoch with nothing in flight: the lock of a shared-memory window) */
int nbe_iunlock(nbe_engine_t *eng, int target, nbe_req_t **req);
int nbe_ilock_all(nbe_engine_t *eng, int assert_bits, nbe_req_t **req);
int nbe_iunlock_all(nbe_engine_t *eng, nbe_req_t **req);
/* target < 0: all targets; local != 0: flush_local */
int nbe_iflush(nbe_engine_t *eng, int target, int local, nbe_req_t **req);
void nbe_req_free(nbe_req_t *req);
/* Fast path of flush: NBE_OK if a flush (target < 0: flush_all) would
 * complete at once (nothing buffered, pending or unacknowledged: e.g. every
 * operation was applied through shared memory); no request, no progress.
 * NBE_AGAIN if nbe_iflush is needed; NBE_ERR_SYNC outside a passive epoch. */
int nbe_flush_now(nbe_engine_t *eng, int target, int local);
/* Flush of one target without a request: NBE_OK once the FLUSH_REQ (if
 * any) has left, *thr the acknowledged count to wait for; the caller polls
 * the network until nbe_flush_reached(). NBE_AGAIN if the target's leg is
 * not ready (not granted, operations recorded or in flight, another flush
 * pending): use nbe_iflush. NBE_ERR_SYNC outside a passive epoch. */
int nbe_flush_begin(nbe_engine_t *eng, int target, int local, uint64_t *thr);
int nbe_flush_reached(const nbe_engine_t *eng, int target, int local, uint64_t thr);

/* --- RMA operations --- */
/* Checks that an access epoch covers op->target (else NBE_ERR_SYNC) and
 * either issues the op or records it in its epoch. */
int nbe_rma(nbe_engine_t *eng, nbe_op_t *op);
/* Direct operations (shared memory, self): NBE_OK if the glue may apply an
 * operation to target now, complete at the target when applied (counted as
 * issued, no op record, no messages); NBE_AGAIN if it must go through
 * nbe_rma (epoch deferred, operations recorded before it, target not
 * granted, first touch of a lock_all target); NBE_ERR_SYNC without an
 * access epoch covering target. */
int nbe_rma_direct(nbe_engine_t *eng, int target);
/* The answer of nbe_rma_direct without counting the operation (like it,
 * an NBE_OK marks the epoch as having operations), and (passive,
 * may be NULL; set whenever an access epoch covers target) whether that
 * epoch is a lock or lock_all: for glue that first decides how to move the
 * data (RDMA complete inside the BTL call), then reports the operation
 * with nbe_rma_direct_again once it is in place. */
int nbe_rma_ready(nbe_engine_t *eng, int target, int *passive);
/* An operation the glue sends itself as one counted message, complete at
 * the origin once handed to the network (a small put copied into an
 * immediate send): nbe_rma_message() says whether it may go now (the same
 * conditions as nbe_rma_direct) and gives the fence tag the message must
 * carry, and (passive, may be NULL; set whenever an access epoch covers
 * target) whether that epoch is a lock or lock_all; once sent,
 * nbe_rma_message_sent() counts it. If the glue cannot send it, it goes
 * through nbe_rma instead (nothing to undo). */
/* From the issue callback of an operation to target: 1 if it is the only
 * one to target not locally complete and every counted message sent to
 * target was acknowledged (applied there), so that an operation the glue
 * applies itself now cannot pass an earlier one (accumulate ordering) */
int  nbe_issuing_alone(const nbe_engine_t *eng, int target);
/* The last fence epoch whose counted messages to target may not be applied
 * there yet (0: none; see nbe_trait_t.fence_unapplied): until it is, a
 * passive epoch's operations to target go as counted messages, not by RDMA
 * or CMA. nbe_fence_applied() tells the engine that target completed fence
 * epoch completed_id (the glue saw it published); nbe_fence_completed() is
 * the last fence epoch completed here (all operations to this process of
 * that and earlier fence epochs applied). */
uint64_t nbe_fence_unapplied(const nbe_engine_t *eng, int target);
void     nbe_fence_applied(nbe_engine_t *eng, int target, uint64_t completed_id);
uint64_t nbe_fence_completed(const nbe_engine_t *eng);
/* Taking over (osc_nbe_claim.c): the glue may itself apply, at target, the
 * last nops counted messages it sent there, which target has not applied
 * (it left MPI). nbe_take_over_possible: 1 if exactly those nops are
 * unacknowledged, nothing issued to target awaits local completion, and
 * every unlock of target without its ack was NOCHECK (it releases nothing
 * there). nbe_take_over (only after that said 1): they count as
 * acknowledged, and so do those unlocks; target's own acks, when it
 * applies the messages later, change nothing. */
int  nbe_take_over_possible(const nbe_engine_t *eng, int target, uint64_t nops);
void nbe_take_over(nbe_engine_t *eng, int target);
/* 1 if an operation issued to target is not locally complete or a counted
 * message sent to it is not acknowledged yet: a flush or unlock of it waits
 * for the target (0 for an untouched target; operations still waiting for
 * their epoch's grant are not counted) */
int  nbe_awaits_target(const nbe_engine_t *eng, int target);
int  nbe_rma_message(nbe_engine_t *eng, int target, uint64_t *tag, int *passive);
void nbe_rma_message_sent(nbe_engine_t *eng, int target, uint64_t tag);
/* Early messages: with this on, a message of an active fence epoch, or of
 * an access epoch (start, lock; a lock_all leg is created by a recorded
 * operation, so nothing passes it) whose target has not granted yet, leaves
 * without waiting for the grant. It carries a tag saying which
 * grant it needs (the fence id, NBE_TAG_ACCESS | the start epoch id, or
 * NBE_TAG_ACCESS | NBE_TAG_LOCK | the lock id),
 * and the target holds it until nbe_message_ready says that grant exists
 * here; only then is it applied and counted, so no epoch can complete
 * without it. Safe for fences because an origin's fence epoch f is active
 * only after every target's FENCE_DONE(f-1), sent from the target's fence
 * call opening f; for access epochs because the target grants an origin's
 * epoch ids in order. Only for glue that holds such messages. */
#define NBE_TAG_ACCESS (UINT64_C(1) << 63)   /* the id is an access epoch's, not a fence's */
#define NBE_TAG_EARLY  (UINT64_C(1) << 62)   /* sent before its grant: may need holding */
#define NBE_TAG_LOCK   (UINT64_C(1) << 61)   /* with NBE_TAG_ACCESS: the id is a lock's */
void nbe_engine_set_early_messages(nbe_engine_t *eng, int on);
/* 1 if a counted message from src carrying tag may be applied now
 * (untagged messages always may) */
int  nbe_message_ready(nbe_engine_t *eng, int src, uint64_t tag);
/* A number that changes whenever the answer of nbe_rma_direct (for any
 * target) or of nbe_message_ready could change: epochs opened, closed,
 * activated or finished, grants given or received, recorded operations,
 * progress. While it is unchanged, a target
 * for which nbe_rma_direct returned NBE_OK may take further direct
 * operations; the glue reports each with nbe_rma_direct_again (statistics
 * only), skipping the epoch lookup. */
uint64_t nbe_engine_generation(const nbe_engine_t *eng);
/* 1 if target's lock epoch is active, granted and has nothing recorded,
 * so that nbe_rma_direct(target) would return NBE_OK: the cheaper question
 * of glue that has just opened the epoch and renews its direct answer */
int      nbe_lock_ready(nbe_engine_t *eng, int target);
void     nbe_rma_direct_again(nbe_engine_t *eng);
/* NBE_OK if an open access epoch covers target (no side effects) */
int nbe_check_access(nbe_engine_t *eng, int target);
/* A failed engine issues nothing more: hands each operation still recorded
 * in its epochs (never issued) to fn, which ends it, and forgets it. Does
 * nothing while the engine has not failed. */
void nbe_engine_take_recorded(nbe_engine_t *eng, void (*fn)(void *ctx, nbe_op_t *op), void *ctx);
/* the glue finished an issued op locally (data sent / result arrived) */
void nbe_op_local_done(nbe_engine_t *eng, int target);

/* --- events from the network --- */
void nbe_on_ctrl(nbe_engine_t *eng, const nbe_ctrl_t *msg);
/* a counted RMA message from src arrived and was applied (tag: the fence
 * id or early-message tag it carried, 0 for none) */
void nbe_on_op_arrived(nbe_engine_t *eng, int src, uint64_t tag);

/* counted messages that arrived from src outside fences (target side):
 * replies carry it so a fetching operation doubles as a flush ack */
uint64_t nbe_ops_in_from(nbe_engine_t *eng, int src);
/* target reported that it had received ops messages from us (origin side) */
void nbe_note_remote_ack(nbe_engine_t *eng, int target, uint64_t ops);

/* run the state machines; returns the number of state changes */
int nbe_progress(nbe_engine_t *eng);

/* the glue's data about a peer, kept in its win_traits (created on first
 * touch; NULL on ENOMEM). The pointer stays valid until the engine is
 * destroyed. */
nbe_peer_info_t *nbe_engine_peer_info(nbe_engine_t *eng, int rank);
/* calls fn(ctx, rank, info) for the glue's data of every touched peer (in
 * no particular order, each once); fn must not touch further peers */
void nbe_engine_each_peer_info(nbe_engine_t *eng,
                               void (*fn)(void *ctx, int rank, nbe_peer_info_t *info), void *ctx);
/* heap bytes held by the engine (traits, epochs, queues) */
size_t nbe_engine_memory(const nbe_engine_t *eng);

/* --- queries --- */
/* NBE_ERR_NOMEM once the engine lost a message for want of memory,
 * NBE_ERR_COMM once the transport could not deliver one, NBE_ERR_PEER once
 * a peer's engine of this window failed (every later call fails with it and
 * no request completes any more), else 0 */
int    nbe_engine_failed(const nbe_engine_t *eng);
/* a message of this window was lost for want of memory (in the engine or
 * its glue): the engine fails */
void   nbe_engine_fail(nbe_engine_t *eng);
/* a peer's engine of this window failed: epochs it takes part in may never
 * complete, so this one fails too (unless it already failed) */
void   nbe_engine_fail_peer(nbe_engine_t *eng);
/* the transport could not deliver a message of this window (a permanent
 * send error, not a busy BTL): the engine fails (unless it already failed) */
void   nbe_engine_fail_comm(nbe_engine_t *eng);
int    nbe_engine_idle(const nbe_engine_t *eng);     /* no epoch pending */
size_t nbe_engine_buffered(const nbe_engine_t *eng); /* recorded + locally incomplete ops */
size_t nbe_engine_traits_count(const nbe_engine_t *eng);
size_t nbe_engine_epochs_count(const nbe_engine_t *eng);
const nbe_stats_t *nbe_engine_stats(const nbe_engine_t *eng);
/* NBE_OK if no app-level epoch is open except an idle fence epoch */
int nbe_engine_can_free(nbe_engine_t *eng);
/* Number of PSCW exposure epochs closed by the application (MPI_Win_wait)
 * but not yet complete. While it is non-zero the lock manager grants nothing: a lock
 * must not overlap the end of an exposure. The optional word mirrors the
 * count for origins that lock through shared memory. */
int  nbe_engine_closing_exposures(const nbe_engine_t *eng);
void nbe_engine_set_exposure_word(nbe_engine_t *eng, volatile int64_t *word);

/* Unlocks without the ack (off by default): a lock epoch whose every
 * counted message to the target is acknowledged (a flush ack, a get's
 * reply) and with nothing in flight ends once its UNLOCK is on its way
 * (send_ctrl returned 0); the
 * target releases the lock when the UNLOCK arrives. Only for glue whose
 * uncounted operations are complete at the target when issued. The engine
 * is idle only once every UNLOCK_ACK came. */
void nbe_engine_set_unlock_no_wait(nbe_engine_t *eng, int on);
/* Implied fence grants (off by default): a fence epoch whose predecessor
 * completed clean everywhere (every process closed it with the fence call
 * that opened this one and sent no counted message in it) is granted
 * without waiting for the peers' FENCE_GRANTs. Only for glue whose
 * uncounted operations are complete at the target when issued. */
void nbe_engine_set_fence_implied_grants(nbe_engine_t *eng, int on);
/* Local fences: fence epochs exchange no messages and complete once closed
 * with their operations locally complete. Only for transports whose
 * operations are complete at the target when issued (shared memory) and
 * whose glue runs a barrier after every fence. */
void nbe_engine_set_local_fence(nbe_engine_t *eng, int on);

/* state of the most recent epoch (for tests) */
nbe_epoch_state_t nbe_engine_last_epoch_state(const nbe_engine_t *eng);

#ifdef __cplusplus
}
#endif
#endif /* NBE_ENGINE_H */
