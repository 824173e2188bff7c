/*
 * osc/nbe transport: RDMA, the data moving with btl_put/btl_get (vader's
 * CMA here), for large transfers and for passive targets away from MPI.
 */
#include "osc_nbe.h"

#include <string.h>

#include "opal/util/argv.h"
#include "opal/mca/btl/btl.h"
#include "ompi/mca/bml/bml.h"
#include "ompi/mca/bml/base/base.h"
#include "ompi/proc/proc.h"

/* RDMA: the data moves with btl_put/btl_get.
 *
 * Completion at the origin: a get is done when its completion callback
 * ran (the data is here). A put is done at the target when the callback
 * ran only on BTLs that copy into the target's memory themselves (vader's
 * single-copy CMA/XPMEM/KNEM: process_vm_writev or a memcpy returns after
 * the copy); on others (tcp) the callback only means the origin buffer may
 * be reused. These BTLs are named in osc_nbe_rdma_remote_complete.
 *
 * If the callback runs inside btl_put/btl_get (the synchronous single-copy
 * case) the transfer is over before the issue callback returns, so every
 * later DONE / UNLOCK / FLUSH_REQ / FENCE_DONE leaves after the data is in
 * place: the transfer is not counted and needs no FIN. Flush then completes
 * at the origin, and an exclusive unlock only releases the lock after it.
 * Otherwise (asynchronous completion, or a put on a BTL not listed) a
 * counted FIN frame on the same endpoint follows the data, so the target's
 * epoch accounting stays message-count based (the FIN arrives after the
 * data on in-order BTLs, and it leaves from the completion callback). */

static unsigned rdma_get_threshold;       /* MCA: gets of at least this many bytes use btl_get */
static char  *remote_complete_list;       /* MCA string */
static char **remote_complete_argv;       /* parsed: BTL component names */
static unsigned long long pv_rdma_local;  /* transfers complete at the origin, no FIN */
static unsigned long long pv_rdma_fin;    /* transfers followed by a counted FIN */
static unsigned long long pv_rdma_direct; /* of those complete at the origin: past the op object */
static unsigned long long pv_rdma_bounced; /* staged through a bounce buffer (osc_nbe_copy_guard) */

/* BTL transfer functions (btl_put/btl_get) seen completing a transfer,
 * successfully, inside the call (vader's CMA/XPMEM/KNEM single copy; not
 * its emulation, whose callback waits for the target's progress): only
 * these take ompi_osc_nbe_rdma_now, so that it never waits for a peer.
 * Keyed by function, not module: vader picks single copy or emulation per
 * peer under one module. vader's CMA is known without being seen: a system
 * call that returns with the data moved. */
#define NBE_SYNC_FNS_MAX 8
static const void *sync_fns[NBE_SYNC_FNS_MAX];
static int nsync_fns;

static const void *transfer_fn(const mca_btl_base_module_t *btl, bool is_put)
{
    /* compared only, never called through this pointer */
    return is_put ? (const void *) (uintptr_t) btl->btl_put : (const void *) (uintptr_t) btl->btl_get;
}

static bool seen_completing_in_call(const void *fn)
{
    for (int i = 0; i < nsync_fns; ++i) {
        if (sync_fns[i] == fn) return true;
    }
    return false;
}

static void note_completes_in_call(const mca_btl_base_module_t *btl, bool is_put)
{
    const void *fn = transfer_fn(btl, is_put);
    if (!seen_completing_in_call(fn) && nsync_fns < NBE_SYNC_FNS_MAX) sync_fns[nsync_fns++] = fn;
}

static bool btl_completes_in_call(const mca_btl_base_module_t *btl, bool is_put)
{
    if (seen_completing_in_call(transfer_fn(btl, is_put))) return true;
    if (!ompi_osc_nbe_is_cma(btl)) return false;
    note_completes_in_call(btl, is_put);   /* the next call finds it in the list */
    return true;
}

/* the transfer whose btl_put/btl_get call is on the stack, and whether its
 * callback counts as completion at the target */
static ompi_osc_nbe_op_t *rdma_issuing;
static bool rdma_issuing_remote_ok, rdma_cb_ran, rdma_sync_done;

static bool btl_remote_complete(const mca_btl_base_module_t *btl)
{
    const char *name = btl->btl_component->btl_version.mca_component_name;
    for (char **p = remote_complete_argv; p && *p; ++p) {
        if (0 == strcmp(*p, name)) return true;
    }
    return false;
}

void ompi_osc_nbe_rdma_register_params(const mca_base_component_t *c)
{
    ompi_osc_nbe_register_uint(c, "rdma_get_threshold",
        "Contiguous gets of a lock or lock_all epoch of at least this many bytes use the BTL's "
        "RDMA get (vader CMA) instead of an active-message request and reply, which needs the "
        "target in MPI (0: never; fence and PSCW epochs: osc_nbe_rdma_active_threshold)",
        OPAL_INFO_LVL_5, 16384, &rdma_get_threshold);
    ompi_osc_nbe_register_string(c, "rdma_remote_complete",
        "Comma-separated BTL components whose RDMA put completion callback means the data is in "
        "the target's memory (single-copy shared memory). When such a put completes inside the "
        "btl_put call, osc/nbe counts it complete at the origin: no FIN frame, and flush/unlock "
        "need no round trip for it. Empty: every RDMA put is followed by a counted FIN",
        OPAL_INFO_LVL_6, "vader,sm,self", &remote_complete_list);
    ompi_osc_nbe_register_counter(c, "rdma_local_complete", "RDMA puts/gets that completed inside the BTL call "
                     "and were counted complete at the origin (no FIN frame)", &pv_rdma_local);
    ompi_osc_nbe_register_counter(c, "rdma_fin", "RDMA puts/gets followed by a counted FIN frame", &pv_rdma_fin);
    ompi_osc_nbe_register_counter(c, "rdma_direct", "RDMA puts/gets of rdma_local_complete issued straight from "
                     "MPI_Put/MPI_Get and their request forms, without an operation object", &pv_rdma_direct);
    ompi_osc_nbe_register_counter(c, "rdma_bounced", "RDMA puts/gets of a passive-target epoch whose single "
                     "copy would run at a distance this machine copies slowly (osc_nbe_copy_guard), "
                     "staged through a bounce buffer", &pv_rdma_bounced);
}

static void parse_remote_complete(void)
{
    if (remote_complete_argv) return;
    remote_complete_argv = opal_argv_split(remote_complete_list ? remote_complete_list : "", ',');
    if (NULL == remote_complete_argv) remote_complete_argv = opal_argv_split("", ',');
}

void ompi_osc_nbe_rdma_finalize(void)
{
    opal_argv_free(remote_complete_argv);
    remote_complete_argv = NULL;
}

static mca_bml_base_btl_t *rdma_btl(ompi_osc_nbe_module_t *module, int peer, bool is_put)
{
    ompi_proc_t *proc = ompi_comm_peer_lookup(module->comm, peer);
    mca_bml_base_endpoint_t *ep = mca_bml_base_get_endpoint(proc);
    uint32_t need = is_put ? MCA_BTL_FLAGS_PUT : MCA_BTL_FLAGS_GET;
    if (NULL == ep || 0 == mca_bml_base_btl_array_get_size(&ep->btl_rdma)) return NULL;
    mca_bml_base_btl_t *b = mca_bml_base_btl_array_get_index(&ep->btl_rdma, 0);
    if (!(b->btl_flags & need) || NULL != b->btl->btl_register_mem) return NULL;
    if (is_put ? NULL == b->btl->btl_put : NULL == b->btl->btl_get) return NULL;
    /* the FIN must take the same path as the data */
    if (mca_bml_base_btl_array_get_size(&ep->btl_eager) &&
        mca_bml_base_btl_array_get_index(&ep->btl_eager, 0)->btl != b->btl) return NULL;
    return b;
}

/* the BTL that moves a contiguous transfer of len bytes by RDMA in an epoch
 * of this kind (passive or not), or NULL (below the threshold, a dynamic
 * window, no suitable BTL) */
static bool rdma_sized(size_t len, bool is_put, bool passive)
{
    unsigned threshold = ompi_osc_nbe_rdma_from(is_put, passive);
    return 0 != threshold && len >= threshold;
}

/* the RDMA BTL to a peer whatever the size and epoch kind, or NULL */
static mca_bml_base_btl_t *rdma_btl_any(ompi_osc_nbe_module_t *module, int peer, bool is_put)
{
    /* a dynamic window's target checks each access against its attached
     * regions, which only an active message lets it do */
    if (MPI_WIN_FLAVOR_DYNAMIC == module->flavor) return NULL;
    parse_remote_complete();
    return rdma_btl(module, peer, is_put);
}

/* the RDMA BTL to a target away from MPI (osc_nbe_presence.c) in a passive
 * epoch whose threshold is not 0 (never), if the data need not wait for the
 * target there (remote-complete: no FIN), else NULL */
mca_bml_base_btl_t *ompi_osc_nbe_away_btl(ompi_osc_nbe_module_t *module, int peer, bool is_put)
{
    if (0 == ompi_osc_nbe_rdma_from(is_put, true) || !ompi_osc_nbe_target_away(module, peer) ||
        !ompi_osc_nbe_fence_applied(module, peer)) {
        return NULL;
    }
    mca_bml_base_btl_t *b = rdma_btl_any(module, peer, is_put);
    return NULL != b && btl_remote_complete(b->btl) ? b : NULL;
}

/* Every direct way of a passive epoch's operation (the three choosers here)
 * first asks ompi_osc_nbe_fence_applied: none may overtake the active
 * messages of our last fence epoch the target may still be applying. */
static mca_bml_base_btl_t *rdma_btl_for(ompi_osc_nbe_module_t *module, int peer, size_t len,
                                        bool is_put, bool passive)
{
    if (passive && !ompi_osc_nbe_fence_applied(module, peer)) return NULL;
    if (rdma_sized(len, is_put, passive)) return rdma_btl_any(module, peer, is_put);
    /* below the threshold of a passive epoch: by RDMA only to a target away
     * from MPI, over a BTL that completes the transfer in the call */
    mca_bml_base_btl_t *b = passive ? ompi_osc_nbe_away_btl(module, peer, is_put) : NULL;
    if (NULL == b || !btl_completes_in_call(b->btl, is_put)) return NULL;
    ompi_osc_nbe_target_away_counted();
    return b;
}

struct mca_bml_base_btl_t *ompi_osc_nbe_away_cma_btl(ompi_osc_nbe_module_t *module, int peer,
                                                      bool is_put)
{
    mca_bml_base_btl_t *b = ompi_osc_nbe_away_btl(module, peer, is_put);
    return NULL != b && ompi_osc_nbe_is_cma(b->btl) ? b : NULL;
}

/* within the BTL's size limit and alignment for one transfer (vader's
 * emulated single copy takes at most a fragment; site BTLs may want
 * aligned addresses): what does not fit goes by active messages */
static bool rdma_fits(const mca_btl_base_module_t *btl, const void *local, uint64_t remote,
                      size_t len, bool is_put)
{
    size_t limit = is_put ? btl->btl_put_limit : btl->btl_get_limit;
    size_t align = is_put ? btl->btl_put_alignment : btl->btl_get_alignment;
    if (len > limit) return false;
    return align <= 1 || 0 == (((uint64_t) (uintptr_t) local | remote | len) & (align - 1));
}

bool ompi_osc_nbe_rdma_fits(const struct mca_bml_base_btl_t *b, const void *local, uint64_t remote,
                            size_t len, bool is_put)
{
    return rdma_fits(b->btl, local, remote, len, is_put);
}

static int rdma_start(mca_bml_base_btl_t *b, void *local, uint64_t remote, size_t len, bool is_put,
                      mca_btl_base_rdma_completion_fn_t cb, void *context, void *cbdata)
{
    if (OPAL_UNLIKELY(!rdma_fits(b->btl, local, remote, len, is_put))) return OPAL_ERR_BAD_PARAM;
    if (is_put) {
        return b->btl->btl_put(b->btl, b->btl_endpoint, local, remote, NULL, NULL, len, 0,
                               MCA_BTL_NO_ORDER, cb, context, cbdata);
    }
    return b->btl->btl_get(b->btl, b->btl_endpoint, local, remote, NULL, NULL, len, 0,
                           MCA_BTL_NO_ORDER, cb, context, cbdata);
}

static void rdma_completed(ompi_osc_nbe_op_t *op, int status);

static void rdma_done(struct mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *endpoint,
                      void *local_address, struct mca_btl_base_registration_handle_t *local_handle,
                      void *context, void *cbdata, int status)
{
    (void) btl; (void) endpoint; (void) local_address; (void) local_handle; (void) context;
    ompi_osc_nbe_enter();
    rdma_completed((ompi_osc_nbe_op_t *) cbdata, status);
    ompi_osc_nbe_leave();
}

static void rdma_completed(ompi_osc_nbe_op_t *op, int status)
{
    ompi_osc_nbe_module_t *module = op->module;
    bool in_call = op == rdma_issuing;
    if (in_call) rdma_cb_ran = true;
    else module->rdma_in_flight--;
    if (OPAL_UNLIKELY(OPAL_SUCCESS != status)) {
        /* the data did not move: no FIN (the window fails, epochs with
         * this target cannot complete) */
        ompi_osc_nbe_link_failed(module, op->super.target, status);
        ompi_osc_nbe_op_fail(op, MPI_ERR_OTHER);
        if (in_call) rdma_sync_done = true;   /* gone, and not counted */
        return;
    }
    if (in_call && rdma_issuing_remote_ok) {
        rdma_sync_done = true;
        pv_rdma_local++;
    } else {
        nbe_am_hdr_t hdr;
        ompi_osc_nbe_hdr_init(&hdr, module, NBE_AM_FIN);
        hdr.fence_tag = op->super.fence_tag;
        ompi_osc_nbe_send_frame(module, op->super.target, &hdr, NULL, 0, true);
        pv_rdma_fin++;
    }
    op->next_frag = op->nplan;
    op->reply_left = 0;
    ompi_osc_nbe_op_local_complete(op);
}

struct mca_bml_base_btl_t *ompi_osc_nbe_rdma_now_btl(ompi_osc_nbe_module_t *module, int peer,
                                                      size_t len, bool is_put, bool passive)
{
    if (!rdma_sized(len, is_put, passive)) return NULL;
    if (passive && !ompi_osc_nbe_fence_applied(module, peer)) return NULL;
    if (module->rdma_now_peer != peer || module->rdma_now_put != (int) is_put) {
        /* BML endpoints do not change while the window lives */
        mca_bml_base_btl_t *b = rdma_btl_any(module, peer, is_put);
        module->rdma_now_btl = NULL != b && btl_remote_complete(b->btl) ? b : NULL;
        for (int passive = 0; passive < 2; ++passive) {
            module->rdma_now_fixed[passive] = NULL != b && ompi_osc_nbe_adapt_fixed(b, passive);
        }
        module->rdma_now_peer = peer;
        module->rdma_now_put = is_put;
    }
    mca_bml_base_btl_t *b = module->rdma_now_btl;
    /* until the general path has seen it complete a transfer in the call
     * (the caller also asks osc_nbe_adapt.c, unless module->rdma_now_fixed) */
    return NULL != b && btl_completes_in_call(b->btl, is_put) ? b : NULL;
}

static void rdma_now_done(struct mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *endpoint,
                          void *local_address, struct mca_btl_base_registration_handle_t *local_handle,
                          void *context, void *cbdata, int status)
{
    (void) btl; (void) endpoint; (void) local_address; (void) local_handle; (void) context;
    *(volatile int *) cbdata = status;
}

int ompi_osc_nbe_rdma_now(ompi_osc_nbe_module_t *module, struct mca_bml_base_btl_t *b, int peer,
                          void *local, uint64_t remote, size_t len, bool is_put)
{
    volatile int status = 1;    /* 1: the callback has not run */
    int rc = rdma_start(b, local, remote, len, is_put, rdma_now_done, NULL, (void *) &status);
    if (1 == rc && 1 == status) status = OPAL_SUCCESS;  /* complete, no callback (btl.h allows it) */
    if (OPAL_SUCCESS != rc && 1 != rc) return 1;         /* busy or refused: the general path */
    /* this function completed inside the call before; should it not now,
     * its callback is still what says the data is in place, and it points
     * at status on this stack: wait for it whatever else happens */
    while (1 == status) ompi_osc_nbe_progress();
    if (OPAL_SUCCESS != status) {
        ompi_osc_nbe_link_failed(module, peer, status);
        return MPI_ERR_OTHER;
    }
    pv_rdma_local++;
    pv_rdma_direct++;
    return 0;
}

bool ompi_osc_nbe_rdma_copy_slow(const struct mca_bml_base_btl_t *b, const void *local,
                                 uint64_t remote, size_t len, bool is_put)
{
    const void *far = (const void *) (uintptr_t) remote;
    return ompi_scale_copy_rdma_slow(b->btl->btl_component->btl_version.mca_component_name,
                                     is_put ? far : local, is_put ? local : far, len);
}

/* pieces of the bounce buffer of ompi_osc_nbe_rdma_now_bounced */
#define NBE_BOUNCE_PIECE 65536

int ompi_osc_nbe_rdma_now_bounced(ompi_osc_nbe_module_t *module, struct mca_bml_base_btl_t *b,
                                  int peer, void *local, uint64_t remote, size_t len, bool is_put)
{
    /* one per call: another thread may use the window meanwhile */
    char *bounce = malloc((len < NBE_BOUNCE_PIECE ? len : NBE_BOUNCE_PIECE) + 4096);
    if (NULL == bounce) return 1;
    for (size_t off = 0; off < len;) {
        size_t n = len - off < NBE_BOUNCE_PIECE ? len - off : NBE_BOUNCE_PIECE;
        /* 2 KiB (page offset) from the end the single copy touches: the
         * other copy is then at least 2 KiB away from the user's buffer too */
        uintptr_t anchor = is_put ? (uintptr_t) local + off : (uintptr_t) (remote + off);
        char *piece = bounce + ((anchor + 2048 - (uintptr_t) bounce) & 4095);
        if (is_put) ompi_scale_copy(piece, (char *) local + off, n);
        int rc = ompi_osc_nbe_rdma_now(module, b, peer, piece, remote + off, n, is_put);
        if (0 != rc) {
            /* 1: busy or refused (a failed CMA call too): the general path
             * moves the whole transfer again, which rewrites or re-reads the
             * pieces already moved with the same bytes */
            free(bounce);
            return rc;
        }
        if (!is_put) ompi_scale_copy((char *) local + off, piece, n);
        off += n;
    }
    free(bounce);
    pv_rdma_bounced++;
    return 0;
}

bool ompi_osc_nbe_rdma_sized(size_t len, bool is_put)
{
    return rdma_sized(len, is_put, false) || rdma_sized(len, is_put, true);
}

unsigned ompi_osc_nbe_rdma_from(bool is_put, bool passive)
{
    if (!passive) return mca_osc_nbe_component.rdma_active_threshold;
    return is_put ? mca_osc_nbe_component.rdma_threshold : rdma_get_threshold;
}

int ompi_osc_nbe_try_rdma(ompi_osc_nbe_module_t *module, ompi_osc_nbe_op_t *op, void *local,
                          uint64_t remote, size_t len, bool is_put)
{
    mca_bml_base_btl_t *b = rdma_btl_for(module, op->super.target, len, is_put, op->super.passive);
    if (NULL == b) return -1;
    /* a slow single copy: in an active-target epoch active messages (the
     * target is in MPI for it anyway; they copy at safe distances), in a
     * passive one the bounce buffer where this BTL is known to complete in
     * the call (its progress must not need the target); else the plain
     * transfer. A transfer below the thresholds to a target away from MPI
     * is not the choice's (rdma_btl_for) */
    bool slow = ompi_osc_nbe_rdma_copy_slow(b, local, remote, len, is_put);
    if (slow && !op->super.passive) return -1;
    if (!slow && rdma_sized(len, is_put, op->super.passive) &&
        OMPI_SCALE_ADAPT_COPY == ompi_osc_nbe_adapt_choose(op, b, len, is_put)) {
        return -1;
    }
    rdma_issuing = op;
    rdma_issuing_remote_ok = !is_put || btl_remote_complete(b->btl);
    rdma_cb_ran = rdma_sync_done = false;
    if (slow && btl_completes_in_call(b->btl, is_put)) {
        int brc = ompi_osc_nbe_rdma_now_bounced(module, b, op->super.target, local, remote, len,
                                                is_put);
        if (0 == brc) {
            rdma_completed(op, OPAL_SUCCESS);   /* moved in the call, as below */
            rdma_issuing = NULL;
            return rdma_sync_done ? 0 : 1;
        }
        if (1 != brc) {
            /* the link failed (ompi_osc_nbe_rdma_now noted it) */
            rdma_issuing = NULL;
            ompi_osc_nbe_op_fail(op, MPI_ERR_OTHER);
            return 0;
        }
        /* 1: refused, nothing counted: the plain transfer */
    }
    int rc = rdma_start(b, local, remote, len, is_put, rdma_done, module, op);
    if (1 == rc && !rdma_cb_ran) {
        /* "complete at once" without a callback (btl.h allows it): complete it here */
        rdma_completed(op, OPAL_SUCCESS);
    }
    rdma_issuing = NULL;
    if (rdma_cb_ran && rdma_sync_done && OPAL_SUCCESS == rc) note_completes_in_call(b->btl, is_put);
    if (OPAL_SUCCESS != rc && 1 != rc) {
        op->adapt_t0 = 0;   /* active messages after all: not a CMA time */
        return -1;
    }
    /* op is gone if the callback ran; if it will run later, MPI_Win_free
     * waits for it */
    if (!rdma_cb_ran) module->rdma_in_flight++;
    return rdma_sync_done ? 0 : 1;
}
