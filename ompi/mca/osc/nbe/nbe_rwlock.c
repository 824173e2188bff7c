/* nbe_rwlock: fair reader-writer ticket lock in shared memory (nbe_rwlock.h) */
#include "nbe_rwlock.h"

#include <stddef.h>

uint32_t nbe_rwlock_ticket(nbe_rwlock_t *l)
{
    return __atomic_fetch_add(&l->next, 1, __ATOMIC_RELAXED);
}

int nbe_rwlock_turn(nbe_rwlock_t *l, uint32_t ticket)
{
    return __atomic_load_n(&l->serving, __ATOMIC_ACQUIRE) == ticket;
}

void nbe_rwlock_pass(nbe_rwlock_t *l, uint32_t ticket)
{
    __atomic_store_n(&l->serving, ticket + 1, __ATOMIC_RELEASE);
}

static int gate_open(const int64_t *gate)
{
    return NULL == gate || 0 == __atomic_load_n(gate, __ATOMIC_SEQ_CST);
}

int nbe_rwlock_try_shared(nbe_rwlock_t *l, uint32_t ticket, const int64_t *gate)
{
    if (!nbe_rwlock_turn(l, ticket) || !gate_open(gate)) return 0;
    /* join before passing the turn: the next writer then sees us; the gate
     * is read again once joined (it may have closed in between) */
    __atomic_fetch_add(&l->readers, 1, __ATOMIC_SEQ_CST);
    if (!gate_open(gate)) {
        /* keep the turn (nobody behind may pass us) and try again later */
        __atomic_fetch_sub(&l->readers, 1, __ATOMIC_SEQ_CST);
        return 0;
    }
    nbe_rwlock_pass(l, ticket);
    return 1;
}

int nbe_rwlock_try_exclusive(nbe_rwlock_t *l, uint32_t ticket, const int64_t *gate)
{
    /* readers before us joined before passing the turn to us, so once it
     * is ours no new reader can join until we pass it on at release */
    return nbe_rwlock_turn(l, ticket) && 0 == __atomic_load_n(&l->readers, __ATOMIC_SEQ_CST) &&
           gate_open(gate);
}

void nbe_rwlock_release_shared(nbe_rwlock_t *l)
{
    __atomic_fetch_sub(&l->readers, 1, __ATOMIC_RELEASE);
}

void nbe_rwlock_release_exclusive(nbe_rwlock_t *l)
{
    uint32_t mine = __atomic_load_n(&l->serving, __ATOMIC_RELAXED);
    nbe_rwlock_pass(l, mine);
}
