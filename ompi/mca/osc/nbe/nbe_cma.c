/*
 * nbe_cma: gathered process_vm_writev/readv transfers (see nbe_cma.h).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "nbe_cma.h"

#ifndef IOV_MAX
#define IOV_MAX 1024
#endif

int nbe_cma_init(nbe_cma_batch_t *b, int cap)
{
    memset(b, 0, sizeof(*b));
    if (cap < 1) cap = 1;
    if (cap > IOV_MAX) cap = IOV_MAX;
    b->local = malloc(sizeof(struct iovec) * (size_t) cap);
    b->remote = malloc(sizeof(struct iovec) * (size_t) cap);
    if (NULL == b->local || NULL == b->remote) {
        nbe_cma_fini(b);
        return -1;
    }
    b->cap = cap;
    return 0;
}

void nbe_cma_fini(nbe_cma_batch_t *b)
{
    free(b->local);
    free(b->remote);
    memset(b, 0, sizeof(*b));
}

nbe_cma_batch_t *nbe_cma_lane(nbe_cma_batch_t *lanes, int nlanes, int peer, int is_put)
{
    nbe_cma_batch_t *empty = NULL;
    for (int i = 0; i < nlanes; ++i) {
        nbe_cma_batch_t *b = &lanes[i];
        if (b->n > 0 && b->peer == peer && b->is_put == is_put) return b;
        if (NULL == empty && 0 == b->n) empty = b;
    }
    return empty;
}

int nbe_cma_add(nbe_cma_batch_t *b, pid_t pid, int peer, int is_put, void *local,
                uint64_t remote, size_t len)
{
    if (!nbe_cma_fits(b, peer, is_put) || b->n >= b->cap) return -1;
    if (0 == b->n) {
        b->pid = pid;
        b->peer = peer;
        b->is_put = is_put;
    }
    b->local[b->n].iov_base = local;
    b->local[b->n].iov_len = len;
    b->remote[b->n].iov_base = (void *) (uintptr_t) remote;
    b->remote[b->n].iov_len = len;
    b->n++;
    b->bytes += len;
    return 0;
}

/* drop `done` bytes from the front of the batch: whole transfers, then the
 * moved part of a transfer cut in the middle */
static void consume(nbe_cma_batch_t *b, size_t done)
{
    int i = 0;
    b->bytes -= done;
    while (i < b->n && done >= b->local[i].iov_len) done -= b->local[i++].iov_len;
    if (i < b->n && done > 0) {
        b->local[i].iov_base = (char *) b->local[i].iov_base + done;
        b->local[i].iov_len -= done;
        b->remote[i].iov_base = (char *) b->remote[i].iov_base + done;
        b->remote[i].iov_len -= done;
    }
    b->n -= i;
    memmove(b->local, b->local + i, sizeof(struct iovec) * (size_t) b->n);
    memmove(b->remote, b->remote + i, sizeof(struct iovec) * (size_t) b->n);
}

int nbe_cma_submit(nbe_cma_batch_t *b)
{
#if !defined(__linux__)
    if (b->n > 0) return ENOSYS;   /* CMA is Linux's (vader offers it only there) */
#endif
    while (b->n > 0) {
#if defined(__linux__)
        ssize_t r = b->is_put
                        ? process_vm_writev(b->pid, b->local, (unsigned long) b->n, b->remote,
                                            (unsigned long) b->n, 0)
                        : process_vm_readv(b->pid, b->local, (unsigned long) b->n, b->remote,
                                           (unsigned long) b->n, 0);
#else
        ssize_t r = -1;
#endif
        b->calls++;
        if (r < 0) {
            if (EINTR == errno) continue;
            return errno;
        }
        if (0 == r) return EFAULT;   /* nothing moved and no error: do not spin */
        consume(b, (size_t) r);
    }
    b->bytes = 0;
    return 0;
}
