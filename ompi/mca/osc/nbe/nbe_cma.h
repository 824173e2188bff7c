/*
 * nbe_cma: contiguous transfers to one peer process of this node, gathered
 * and moved by one process_vm_writev/readv call.
 *
 * A CMA call costs about 1.5 us on top of its copy here (docs/bench-rma.md:
 * 16 KiB takes 2.5 us alone, 1.3 us per transfer in a call of 16), so the
 * puts or gets of a passive epoch are gathered until the epoch's next
 * synchronization (MPI lets an RMA call complete at its flush or unlock)
 * and then moved together. A batch holds one peer and one direction; the
 * caller submits it before adding a transfer that does not fit. A window
 * keeps several batches (lanes), one per peer and direction in use, so that
 * transfers to several peers in turn (a halo exchange of several fields)
 * still share calls; nbe_cma_lane() picks the lane.
 *
 * Pure C (Linux system calls), no Open MPI dependency: unit-tested with a
 * forked child as the peer.
 */
#ifndef NBE_CMA_H
#define NBE_CMA_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

typedef struct nbe_cma_batch {
    pid_t         pid;      /* the peer's process */
    int           peer;     /* the caller's name for it (a window rank) */
    int           is_put;
    int           n;        /* transfers gathered */
    int           cap;
    size_t        bytes;
    struct iovec *local;    /* cap entries each */
    struct iovec *remote;
    void         *path;     /* the caller's, for moving the transfers another way */
    unsigned long calls;    /* system calls made by nbe_cma_submit, ever */
} nbe_cma_batch_t;

/* 0, or -1 without memory */
int  nbe_cma_init(nbe_cma_batch_t *b, int cap);
void nbe_cma_fini(nbe_cma_batch_t *b);

/* 1 if a transfer to peer in that direction may join without a submit */
static inline int nbe_cma_fits(const nbe_cma_batch_t *b, int peer, int is_put)
{
    return 0 == b->n || (b->peer == peer && b->is_put == is_put && b->n < b->cap);
}

/* Of nlanes batches: the one gathering for peer in that direction (full or
 * not), else an empty one (cap 0: not initialized yet, or n 0), else NULL
 * (every lane is another peer's: the caller submits them all) */
nbe_cma_batch_t *nbe_cma_lane(nbe_cma_batch_t *lanes, int nlanes, int peer, int is_put);

/* gathers one transfer: 0, or -1 (nothing gathered) when nbe_cma_fits()
 * says no */
int  nbe_cma_add(nbe_cma_batch_t *b, pid_t pid, int peer, int is_put, void *local,
                 uint64_t remote, size_t len);

/* Moves everything gathered (each system call it makes counts in b->calls:
 * more than one when the kernel moves part). 0: done, the batch is empty.
 * Otherwise the errno of the call that failed; the batch then holds what was not moved
 * (whole transfers first, a transfer cut by a partial call with its rest),
 * for the caller to move another way. */
int  nbe_cma_submit(nbe_cma_batch_t *b);

#endif
