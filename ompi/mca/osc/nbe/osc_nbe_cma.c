/*
 * osc/nbe: the contiguous RDMA puts and gets to a peer of this node,
 * gathered (nbe_cma.h) and moved by one CMA call at the next
 * synchronization instead of one vader btl_put/btl_get call each.
 *
 * Taken only where vader would do the same copy with the same system call:
 * the transfer goes by RDMA now (ompi_osc_nbe_rdma_now_btl: vader, seen
 * completing in the call), vader's single-copy mechanism is CMA, the
 * peer's process id is in the window's tables segment, and the call has no
 * request (MPI_Rput/MPI_Rget complete at once). MPI lets a put or get
 * complete at its epoch's next flush, unlock, fence or PSCW complete, and
 * forbids touching its buffers before; every synchronization call of the
 * window submits the batches first. A window keeps one batch per peer and
 * direction in use, up to osc_nbe_cma_peers (nbe_cma_lane). Whatever a
 * CMA call could not move goes through vader itself, transfer by transfer,
 * whose errors fail the window as before; errors vader's own call would hit
 * too (a peer gone, no permission, a bad address) fail the window at once.
 * Lanes are moved in lane order, not program order: puts to overlapping
 * locations, or a put and a get of the same location (both erroneous
 * within an epoch in MPI), may land out of program order. Origin buffers
 * stay in use until the next synchronization, as MPI allows.
 */
#include "osc_nbe.h"
#include "nbe_cma.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "opal/mca/base/mca_base_var.h"
#include "opal/util/output.h"
#include "opal/mca/btl/btl.h"
#include "ompi/mca/bml/bml.h"

static unsigned cma_batch;                /* MCA: transfers per call, 0: off */
static unsigned cma_peers;                /* MCA: lanes (peers and directions) gathered at once */
static unsigned long long pv_gathered;    /* transfers moved in gathered calls */
static unsigned long long pv_calls;       /* those calls */

void ompi_osc_nbe_cma_register_params(const mca_base_component_t *c)
{
    ompi_osc_nbe_register_uint(c, "cma_batch",
        "Puts and gets that go by vader's CMA (from osc_nbe_rdma_threshold and "
        "osc_nbe_rdma_get_threshold in lock epochs, osc_nbe_rdma_active_threshold in fence and "
        "PSCW epochs where osc_nbe_active_cma sends them by CMA, except the one in 8 that auto "
        "times alone; not MPI_Rput/MPI_Rget) are gathered, up to this many to one peer in one "
        "direction, and moved by one process_vm_writev/readv call at the window's next flush, "
        "unlock, fence or other synchronization (or when the batch is full): a CMA call costs "
        "about 1.5 us besides its copy. Needs the window's tables segment "
        "(osc_nbe_shm_tables). 0 or 1: one vader call per transfer",
        OPAL_INFO_LVL_6, 16, &cma_batch);
    ompi_osc_nbe_register_uint(c, "cma_peers",
        "Peers (each direction counts as one) whose gathered CMA transfers a window keeps apart "
        "at once, so that transfers to several peers in turn (a halo exchange of several fields) "
        "still share calls; a transfer to one more peer first moves them all. 1: one peer at a "
        "time (each change of peer or direction moves what was gathered); at most 64",
        OPAL_INFO_LVL_6, 8, &cma_peers);
    ompi_osc_nbe_register_counter(c, "cma_gathered", "RDMA puts/gets moved by gathered CMA calls "
                     "(osc_nbe_cma_batch)", &pv_gathered);
    ompi_osc_nbe_register_counter(c, "cma_calls", "Submissions of gathered CMA transfers (one "
                     "process_vm_writev/readv call each, more if the kernel moves part)", &pv_calls);
}

/* vader's single-copy mechanism, read once (vader settles it at init) by
 * the name its MCA variable's enumerator gives the value ("cma") */
static bool vader_uses_cma(void)
{
    static int known = -1;
    if (known < 0) {
        const mca_base_var_t *var = NULL;
        const int *value = NULL;
        char *name = NULL;
        int idx = mca_base_var_find("opal", "btl", "vader", "single_copy_mechanism");
        known = idx >= 0 && OPAL_SUCCESS == mca_base_var_get(idx, &var) &&
                OPAL_SUCCESS == mca_base_var_get_value(idx, &value, NULL, NULL) &&
                NULL != var->mbv_enumerator && NULL != value &&
                OPAL_SUCCESS == var->mbv_enumerator->string_from_value(var->mbv_enumerator, *value,
                                                                       &name) &&
                0 == strcmp(name, "cma");
        free(name);
    }
    return known;
}

bool ompi_osc_nbe_is_cma(const struct mca_btl_base_module_t *btl)
{
    return 0 == strcmp(btl->btl_component->btl_version.mca_component_name, "vader") &&
           vader_uses_cma();
}

static int submit_lane(ompi_osc_nbe_module_t *module, nbe_cma_batch_t *batch, bool count);

static unsigned lanes_of(void)
{
    return cma_peers < 1 ? 1 : (cma_peers > 64 ? 64 : cma_peers);
}

int ompi_osc_nbe_cma_take(ompi_osc_nbe_module_t *module, struct mca_bml_base_btl_t *b, int peer,
                          const ompi_osc_nbe_peer_t *g, void *local, uint64_t remote, size_t len,
                          bool is_put)
{
    if (cma_batch < 2 || NULL == g || g->pid <= 0 || !ompi_osc_nbe_is_cma(b->btl)) return 1;
    /* within vader's limits, so that vader can take it should the call fail
     * (and a transfer above vader's put limit keeps the fragmenting path) */
    if (!ompi_osc_nbe_rdma_fits(b, local, remote, len, is_put)) return 1;
    /* a slow copy distance: staged or sent as messages (try_rdma_now) */
    if (ompi_osc_nbe_rdma_copy_slow(b, local, remote, len, is_put)) return 1;
    if (NULL == module->cma) {
        /* lanes are initialized when first used */
        module->cma = calloc(lanes_of(), sizeof(nbe_cma_batch_t));
        if (NULL == module->cma) return 1;   /* the transfer goes alone; a later one tries again */
        module->cma_lanes = (int) lanes_of();
    }
    /* the lane of this peer and direction, or a free one; when it is full or
     * none is free, submit and look again (a submit may let another thread
     * gather meanwhile, see submit_lane); after two, the transfer goes alone */
    for (int submits = 0;; ++submits) {
        nbe_cma_batch_t *lane = nbe_cma_lane(module->cma, module->cma_lanes, peer, is_put);
        if (NULL != lane) {
            if (0 == lane->cap && 0 != nbe_cma_init(lane, (int) cma_batch)) return 1;
            if (0 == lane->n) lane->path = b;
            if (0 == nbe_cma_add(lane, (pid_t) g->pid, peer, is_put, local, remote, len)) return 0;
        }
        if (2 == submits) return 1;
        int rc = NULL == lane ? ompi_osc_nbe_cma_submit(module) : submit_lane(module, lane, true);
        if (OMPI_SUCCESS != rc) return rc;
    }
}

/* errors that vader's own CMA call (same pid, same system call) would hit
 * too: the window fails at once instead of trying each transfer again */
static bool fails_for_vader_too(int err)
{
    return ESRCH == err || EPERM == err || EFAULT == err;
}

/* count: the transfers are gathered puts and gets (pvars) */
static int submit_lane(ompi_osc_nbe_module_t *module, nbe_cma_batch_t *batch, bool count)
{
    if (0 == batch->n) return OMPI_SUCCESS;
    int n = batch->n;
    unsigned long calls = batch->calls;
    int err = nbe_cma_submit(batch);
    if (count) {
        pv_calls += batch->calls - calls;
        pv_gathered += (unsigned long long) (n - batch->n);
    }
    if (0 == err) return OMPI_SUCCESS;
    opal_output_verbose(fails_for_vader_too(err) ? 1 : 10, mca_osc_nbe_component.output,
                        "osc/nbe %d: window %u: gathered CMA to %d failed (errno %d) with %d "
                        "transfers left%s", module->rank, module->cid, batch->peer, err, batch->n,
                        fails_for_vader_too(err) ? "; the window fails" : "; they go through vader");
    /* what is left moves one by one, from a copy: ompi_osc_nbe_rdma_now may
     * drive progress without the component lock, and another thread may
     * gather into the batch meanwhile (MPI_THREAD_MULTIPLE) */
    bool moved = !fails_for_vader_too(err);
    int left = batch->n, peer = batch->peer;
    bool is_put = batch->is_put;
    struct mca_bml_base_btl_t *btl = batch->path;
    struct iovec *copy = moved ? malloc(2 * (size_t) left * sizeof(*copy)) : NULL;
    if (NULL != copy) {
        memcpy(copy, batch->local, (size_t) left * sizeof(*copy));
        memcpy(copy + left, batch->remote, (size_t) left * sizeof(*copy));
    }
    moved = moved && NULL != copy;
    batch->n = 0;
    batch->bytes = 0;
    /* 0 from ompi_osc_nbe_rdma_now: in place; otherwise vader refused it
     * or failed the window */
    for (int i = 0; moved && i < left; ++i) {
        moved = 0 == ompi_osc_nbe_rdma_now(module, btl, peer, copy[i].iov_base,
                                           (uint64_t) (uintptr_t) copy[left + i].iov_base,
                                           copy[i].iov_len, is_put);
    }
    free(copy);
    if (moved) return OMPI_SUCCESS;
    /* no operation object is left to retry: the data would be lost */
    if (0 == nbe_engine_failed(module->engine)) nbe_engine_fail_comm(module->engine);
    return ompi_osc_nbe_failed_rc(module);
}

int ompi_osc_nbe_cma_submit(ompi_osc_nbe_module_t *module)
{
    int rc = OMPI_SUCCESS;
    for (int i = 0; NULL != module->cma && i < module->cma_lanes; ++i) {
        int lane_rc = submit_lane(module, &module->cma[i], true);
        if (OMPI_SUCCESS == rc) rc = lane_rc;
    }
    return rc;
}

int ompi_osc_nbe_cma_scatter(ompi_osc_nbe_module_t *module, struct mca_bml_base_btl_t *b,
                             int peer, pid_t pid, bool is_put, char *stream,
                             const struct iovec *segs, int nsegs)
{
    nbe_cma_batch_t batch = { .n = 0 };
    if (0 != nbe_cma_init(&batch, nsegs)) {
        /* no memory for the call's vectors: one vader transfer per segment */
        for (int i = 0; i < nsegs; ++i) {
            if (0 != ompi_osc_nbe_rdma_now(module, b, peer, stream,
                                           (uint64_t) (uintptr_t) segs[i].iov_base,
                                           segs[i].iov_len, is_put)) {
                if (0 == nbe_engine_failed(module->engine)) nbe_engine_fail_comm(module->engine);
                return ompi_osc_nbe_failed_rc(module);
            }
            stream += segs[i].iov_len;
        }
        return OMPI_SUCCESS;
    }
    batch.path = b;
    for (int i = 0; i < nsegs; ++i) {
        (void) nbe_cma_add(&batch, pid, peer, is_put, stream,
                           (uint64_t) (uintptr_t) segs[i].iov_base, segs[i].iov_len);
        stream += segs[i].iov_len;
    }
    int rc = submit_lane(module, &batch, false);
    nbe_cma_fini(&batch);
    return rc;
}

int ompi_osc_nbe_cma_rmw(ompi_osc_nbe_module_t *module, int peer, pid_t pid, uint64_t remote,
                         size_t len, ompi_osc_nbe_rmw_fn update, void *ctx)
{
    volatile int32_t *word = ompi_osc_nbe_acc_word(module, peer);
    char small[256];
    if (NULL == word) return 1;
    char *cur = len <= sizeof(small) ? small : malloc(len);
    if (NULL == cur) return 1;
    struct iovec l = { .iov_base = cur, .iov_len = len };
    struct iovec r = { .iov_base = (void *) (uintptr_t) remote, .iov_len = len };
    int rc = OMPI_SUCCESS;
    ompi_osc_nbe_acc_word_lock(word);
    ssize_t got = process_vm_readv(pid, &l, 1, &r, 1, 0);
    if (got != (ssize_t) len) {
        rc = 1;   /* nothing changed: the caller sends it instead */
    } else if (update(ctx, cur)) {
        ssize_t put = process_vm_writev(pid, &l, 1, &r, 1, 0);
        if (put != (ssize_t) len) {
            /* part of an update may be in place: it cannot be sent again */
            opal_output_verbose(1, mca_osc_nbe_component.output,
                                "osc/nbe %d: window %u: CMA write of an accumulate to %d failed "
                                "(errno %d); the window fails", module->rank, module->cid, peer,
                                put < 0 ? errno : 0);
            if (0 == nbe_engine_failed(module->engine)) nbe_engine_fail_comm(module->engine);
            rc = ompi_osc_nbe_failed_rc(module);
        }
    }
    ompi_osc_nbe_acc_word_unlock(word);
    if (cur != small) free(cur);
    return rc;
}

size_t ompi_osc_nbe_cma_memory(const ompi_osc_nbe_module_t *module)
{
    size_t bytes = (size_t) module->cma_lanes * sizeof(nbe_cma_batch_t);
    for (int i = 0; i < module->cma_lanes; ++i) {
        bytes += 2 * (size_t) module->cma[i].cap * sizeof(struct iovec);
    }
    return bytes;
}

void ompi_osc_nbe_cma_fini(ompi_osc_nbe_module_t *module)
{
    if (NULL == module->cma) return;
    for (int i = 0; i < module->cma_lanes; ++i) nbe_cma_fini(&module->cma[i]);
    free(module->cma);
    module->cma = NULL;
    module->cma_lanes = 0;
}
