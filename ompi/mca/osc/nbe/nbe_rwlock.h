/*
 * nbe_rwlock: a fair (FIFO) reader-writer lock in memory shared by the
 * processes of a node: the window lock of one rank, taken by the origins
 * themselves with CPU atomics instead of a request to the target's lock
 * manager. Like that manager it grants in arrival order, so a writer is
 * never starved by a stream of readers (a plain counter word would be).
 *
 * A ticket lock: a locker takes a ticket, and its turn comes when
 * `serving` reaches it. A reader at its turn joins the active readers and
 * passes the turn on at once (readers in a row hold the lock together); a
 * writer at its turn waits for the active readers to leave, keeps the turn
 * while it holds the lock, and passes it on at release. Waiting is the
 * caller's loop (it must keep polling its network meanwhile): take a
 * ticket, then call nbe_rwlock_try_* until it returns 1. A ticket once
 * taken must be served, unless the lock is never used again: a locker
 * that gives up waits for its turn and passes it on (nbe_rwlock_pass).
 *
 * A gate word (may be NULL) holds grants back while it is nonzero: osc/nbe
 * grants no lock while the target ends a PSCW exposure epoch. It is read
 * once the locker holds the turn (and, for a reader, has joined), so a
 * grant either precedes the gate's closing or waits for its opening, and
 * the locker keeps its place in line meanwhile.
 *
 * Pure C11 atomics, no Open MPI dependency (unit-tested without MPI).
 * All-zero memory is a free lock. Tickets wrap around (only compared for
 * equality), so up to 2^32 - 1 lockers may wait at once.
 */
#ifndef NBE_RWLOCK_H
#define NBE_RWLOCK_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct nbe_rwlock {
    uint32_t next;      /* next ticket to hand out */
    uint32_t serving;   /* ticket whose turn it is */
    uint32_t readers;   /* readers holding the lock */
    uint32_t pad;
} nbe_rwlock_t;

uint32_t nbe_rwlock_ticket(nbe_rwlock_t *l);
/* 1: acquired (the ticket's turn came, the gate is open); 0: call again */
int  nbe_rwlock_try_shared(nbe_rwlock_t *l, uint32_t ticket, const int64_t *gate);
int  nbe_rwlock_try_exclusive(nbe_rwlock_t *l, uint32_t ticket, const int64_t *gate);
/* 1 when the ticket's turn came and nbe_rwlock_pass may be called */
int  nbe_rwlock_turn(nbe_rwlock_t *l, uint32_t ticket);
/* give up a ticket at its turn without taking the lock */
void nbe_rwlock_pass(nbe_rwlock_t *l, uint32_t ticket);
void nbe_rwlock_release_shared(nbe_rwlock_t *l);
void nbe_rwlock_release_exclusive(nbe_rwlock_t *l);

#ifdef __cplusplus
}
#endif

#endif
