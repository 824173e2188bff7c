/*
 * nbe_ring: a bounded multi-producer / single-consumer queue of engine
 * control messages that lives in memory shared by the processes of a node
 * (the segment of a shared-memory window). Producers are the peers that
 * send the owner a control message (GRANT, DONE, FLUSH_REQ, ...); the owner
 * drains it from its progress loop. It replaces a BTL active message round
 * through vader's fast box, the AM dispatch and the window lookup for
 * windows whose peers all share the node.
 *
 * Pure C11 atomics, no Open MPI dependency (unit-tested without MPI).
 *
 * All-zero memory is an empty ring: a slot's sequence word is stored
 * relative to its index (lap * capacity), so ftruncate()d pages need no
 * initialization and an unused ring is never touched (no resident memory).
 * Per-producer order is kept (positions are taken in order); a full ring
 * makes nbe_ring_push() fail and the caller keeps the message for later.
 */
#ifndef NBE_RING_H
#define NBE_RING_H

#include <stddef.h>
#include <stdint.h>

#include "nbe_engine.h"

#ifdef __cplusplus
extern "C" {
#endif

#define NBE_RING_SLOTS 16   /* power of two */

typedef struct nbe_ring_slot {
    uint64_t   seq;         /* lap * NBE_RING_SLOTS (+1 while it holds a message) */
    nbe_ctrl_t msg;
} nbe_ring_slot_t;

/* the shared part: the producers' next position and the slots */
typedef struct nbe_ring {
    uint64_t        tail;
    uint64_t        pad[7];  /* keep the producers' word off the slots' lines */
    nbe_ring_slot_t slot[NBE_RING_SLOTS];
} nbe_ring_t;

/* bytes of one ring in the shared segment */
#define NBE_RING_BYTES sizeof(nbe_ring_t)

/* 0 on success, -1 if the ring is full (nothing written) */
int nbe_ring_push(nbe_ring_t *r, const nbe_ctrl_t *msg);

/* the consumer's next position (*head, private to the owner) holds a
 * message: copy it out, free the slot, advance; 0 if the ring is empty */
int nbe_ring_pop(nbe_ring_t *r, uint64_t *head, nbe_ctrl_t *out);

/* cheap test for the progress loop: a message is waiting at *head */
static inline int nbe_ring_ready(const nbe_ring_t *r, uint64_t head)
{
    const nbe_ring_slot_t *s = &r->slot[head & (NBE_RING_SLOTS - 1)];
    return __atomic_load_n(&s->seq, __ATOMIC_ACQUIRE) ==
           (head & ~(uint64_t) (NBE_RING_SLOTS - 1)) + 1;
}

#ifdef __cplusplus
}
#endif
#endif /* NBE_RING_H */
