/*
 * nbe_ring: shared-memory MPSC queue of control messages (see nbe_ring.h).
 *
 * A position p maps to slot p % N in lap p / N. The slot's sequence word
 * holds lap*N when the slot is free for lap `lap`, lap*N + 1 once the
 * producer of position p filled it, and (lap+1)*N after the consumer
 * emptied it, which is "free" for the next lap. Zeroed memory is lap 0,
 * every slot free.
 */
#include "nbe_ring.h"

#include <stdbool.h>
#include <string.h>

#define LAP_BASE(p) ((p) & ~(uint64_t) (NBE_RING_SLOTS - 1))

int nbe_ring_push(nbe_ring_t *r, const nbe_ctrl_t *msg)
{
    uint64_t pos = __atomic_load_n(&r->tail, __ATOMIC_RELAXED);
    for (;;) {
        nbe_ring_slot_t *s = &r->slot[pos & (NBE_RING_SLOTS - 1)];
        uint64_t seq = __atomic_load_n(&s->seq, __ATOMIC_ACQUIRE);
        uint64_t want = LAP_BASE(pos);
        if (seq == want) {
            /* the slot is free for this lap: claim the position */
            if (__atomic_compare_exchange_n(&r->tail, &pos, pos + 1, false, __ATOMIC_RELAXED,
                                            __ATOMIC_RELAXED)) {
                memcpy(&s->msg, msg, sizeof(*msg));
                __atomic_store_n(&s->seq, want + 1, __ATOMIC_RELEASE);
                return 0;
            }
            /* another producer took it; pos now holds the current tail */
        } else if ((int64_t) (seq - want) < 0) {
            /* still holds the previous lap's message: full */
            return -1;
        } else {
            /* another producer is ahead of our view of the tail */
            pos = __atomic_load_n(&r->tail, __ATOMIC_RELAXED);
        }
    }
}

int nbe_ring_pop(nbe_ring_t *r, uint64_t *head, nbe_ctrl_t *out)
{
    uint64_t pos = *head;
    nbe_ring_slot_t *s = &r->slot[pos & (NBE_RING_SLOTS - 1)];
    if (__atomic_load_n(&s->seq, __ATOMIC_ACQUIRE) != LAP_BASE(pos) + 1) return 0;
    memcpy(out, &s->msg, sizeof(*out));
    __atomic_store_n(&s->seq, LAP_BASE(pos) + NBE_RING_SLOTS, __ATOMIC_RELEASE);
    *head = pos + 1;
    return 1;
}
