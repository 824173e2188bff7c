/*
 * osc/nbe transport: BTL active messages through the BML endpoints the
 * pml loaded. One tag carries control messages (engine grants, done,
 * lock, flush), operation fragments and replies. Frames that the BTL
 * cannot take right now wait in the window's out-queue (ops keep their
 * order; control frames and replies may overtake, the engine's counters
 * do not depend on ordering).
 */
#include "osc_nbe.h"

#include <string.h>

#include "opal/util/output.h"
#include "opal/util/show_help.h"
#include "opal/mca/btl/btl.h"
#include "ompi/mca/bml/bml.h"
#include "ompi/mca/bml/base/base.h"
#include "ompi/proc/proc.h"

/* an entry of the out-queue: a copied frame, or an operation whose
 * remaining fragments are produced on demand */
typedef struct nbe_qentry {
    opal_list_item_t   super;
    int                peer;
    ompi_osc_nbe_op_t *op;
    size_t             len;
    char               data[];
} nbe_qentry_t;

static mca_bml_base_btl_t *peer_btl(ompi_osc_nbe_module_t *module, int peer)
{
    ompi_proc_t *proc = ompi_comm_peer_lookup(module->comm, peer);
    mca_bml_base_endpoint_t *ep = mca_bml_base_get_endpoint(proc);
    if (NULL == ep || 0 == mca_bml_base_btl_array_get_size(&ep->btl_eager)) return NULL;
    return mca_bml_base_btl_array_get_index(&ep->btl_eager, 0);
}

size_t ompi_osc_nbe_max_payload(ompi_osc_nbe_module_t *module, int peer)
{
    mca_bml_base_btl_t *b = peer_btl(module, peer);
    size_t max = mca_osc_nbe_component.max_frag_size;
    if (b && b->btl->btl_max_send_size < max) max = b->btl->btl_max_send_size;
    if (max < sizeof(nbe_am_hdr_t) + 64) max = sizeof(nbe_am_hdr_t) + 64;
    return max - sizeof(nbe_am_hdr_t);
}

/* the BTL owns the descriptor; some BTLs (vader) always call back */
static void send_done(struct mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *ep,
                      struct mca_btl_base_descriptor_t *des, int status)
{
    (void) btl; (void) ep; (void) des;
    if (OPAL_UNLIKELY(OPAL_SUCCESS != status)) {
        opal_output(0, "osc/nbe: a BTL send failed (%d)", status);
    }
}

/* try to hand one frame to the BTL; OMPI_ERR_OUT_OF_RESOURCE if busy */
static int try_send(ompi_osc_nbe_module_t *module, int peer, const void *hdr, size_t hdrlen,
                    const void *payload, size_t paylen)
{
    mca_bml_base_btl_t *bml_btl = peer_btl(module, peer);
    mca_btl_base_descriptor_t *des = NULL;
    int rc;

    if (NULL == bml_btl) return OMPI_ERR_UNREACH;
    mca_bml_base_alloc(bml_btl, &des, MCA_BTL_NO_ORDER, hdrlen + paylen,
                       MCA_BTL_DES_FLAGS_PRIORITY | MCA_BTL_DES_FLAGS_BTL_OWNERSHIP);
    if (NULL == des) return OMPI_ERR_OUT_OF_RESOURCE;
    char *p = des->des_segments[0].seg_addr.pval;
    memcpy(p, hdr, hdrlen);
    if (paylen) memcpy(p + hdrlen, payload, paylen);
    des->des_segments[0].seg_len = hdrlen + paylen;
    des->des_cbfunc = send_done;
    des->des_cbdata = NULL;
    rc = mca_bml_base_send(bml_btl, des, (mca_btl_base_tag_t) mca_osc_nbe_component.btl_tag);
    if (OPAL_UNLIKELY(rc < 0)) {
        mca_bml_base_free(bml_btl, des);
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    return OMPI_SUCCESS;
}

int ompi_osc_nbe_send_frame(ompi_osc_nbe_module_t *module, int peer, const nbe_am_hdr_t *hdr,
                            const void *payload, size_t paylen, bool may_queue)
{
    int rc = try_send(module, peer, hdr, sizeof(*hdr), payload, paylen);
    if (OMPI_ERR_OUT_OF_RESOURCE != rc || !may_queue) return rc;
    /* keep a copy: the data must be the value at the time of the call */
    nbe_qentry_t *q = malloc(sizeof(*q) + sizeof(*hdr) + paylen);
    if (NULL == q) return OMPI_ERR_OUT_OF_RESOURCE;
    OBJ_CONSTRUCT(&q->super, opal_list_item_t);
    q->peer = peer;
    q->op = NULL;
    q->len = sizeof(*hdr) + paylen;
    memcpy(q->data, hdr, sizeof(*hdr));
    if (paylen) memcpy(q->data + sizeof(*hdr), payload, paylen);
    opal_list_append(&module->outq, &q->super);
    return OMPI_SUCCESS;
}

int ompi_osc_nbe_send_ctrl_cb(void *ctx, int peer, const nbe_ctrl_t *msg)
{
    ompi_osc_nbe_module_t *module = (ompi_osc_nbe_module_t *) ctx;
    nbe_am_hdr_t hdr;
    memset(&hdr, 0, sizeof(hdr));
    hdr.type = NBE_AM_CTRL;
    hdr.src = module->rank;
    hdr.cid = module->cid;
    hdr.len = sizeof(*msg);
    opal_output_verbose(50, mca_osc_nbe_component.output, "osc/nbe %d: ctrl %d -> %d (a=%llu b=%llu)",
                        module->rank, msg->type, peer, (unsigned long long) msg->a,
                        (unsigned long long) msg->b);
    return ompi_osc_nbe_send_frame(module, peer, &hdr, msg, sizeof(*msg), true);
}

/* emit the next fragments of an op; true when all are out */
static bool op_emit(ompi_osc_nbe_module_t *module, ompi_osc_nbe_op_t *op)
{
    static const int am_type[] = {
        [NBE_OP_PUT] = NBE_AM_PUT, [NBE_OP_GET] = NBE_AM_GET, [NBE_OP_ACC] = NBE_AM_ACC,
        [NBE_OP_GACC] = NBE_AM_GACC, [NBE_OP_CAS] = NBE_AM_CAS,
    };
    while (op->next_frag < op->nplan) {
        nbe_frag_plan_t *f = &op->plan[op->next_frag];
        nbe_am_hdr_t hdr;
        const void *payload = NULL;
        size_t paylen = 0;
        memset(&hdr, 0, sizeof(hdr));
        hdr.type = (uint8_t) am_type[op->type];
        hdr.src = module->rank;
        hdr.cid = module->cid;
        hdr.fence_tag = op->super.fence_tag;
        hdr.addr = f->addr;
        hdr.len = f->len;
        hdr.cookie = (uint64_t) (uintptr_t) op;
        hdr.offset = f->off;
        if (op->elem_dt) hdr.dt_idx = op->elem_dt->d_f_to_c_index;
        if (op->op) hdr.op_idx = op->op->o_f_to_c_index;
        switch (op->type) {
        case NBE_OP_PUT:
        case NBE_OP_ACC:
            payload = op->stream + f->off;
            paylen = f->len;
            break;
        case NBE_OP_GACC:
            if (op->stream) {
                payload = op->stream + f->off;
                paylen = f->len;
            }
            break;
        case NBE_OP_CAS:
            payload = op->cas_buf;
            paylen = 2 * (size_t) f->len;
            break;
        default:
            break;
        }
        if (OMPI_SUCCESS != try_send(module, op->super.target, &hdr, sizeof(hdr), payload, paylen)) {
            return false;
        }
        op->next_frag++;
    }
    return true;
}

/* all fragments of op are out: puts and accumulates are locally complete */
static void op_sent(ompi_osc_nbe_op_t *op)
{
    if (NBE_OP_PUT == op->type || NBE_OP_ACC == op->type) {
        ompi_osc_nbe_op_local_complete(op);
    } else if (0 == op->reply_left) {
        ompi_osc_nbe_op_local_complete(op);
    }
}

/* queue an issued op; sends what the BTL takes now */
void ompi_osc_nbe_queue_op(ompi_osc_nbe_module_t *module, ompi_osc_nbe_op_t *op);
void ompi_osc_nbe_queue_op(ompi_osc_nbe_module_t *module, ompi_osc_nbe_op_t *op)
{
    if (opal_list_is_empty(&module->outq) && op_emit(module, op)) {
        op_sent(op);
        return;
    }
    nbe_qentry_t *q = malloc(sizeof(*q));
    if (NULL == q) abort();
    OBJ_CONSTRUCT(&q->super, opal_list_item_t);
    q->peer = op->super.target;
    q->op = op;
    q->len = 0;
    opal_list_append(&module->outq, &q->super);
    module->outq_ops++;
}

int ompi_osc_nbe_drain(ompi_osc_nbe_module_t *module)
{
    int count = 0;
    while (!opal_list_is_empty(&module->outq)) {
        nbe_qentry_t *q = (nbe_qentry_t *) opal_list_get_first(&module->outq);
        if (q->op) {
            if (!op_emit(module, q->op)) break;
            opal_list_remove_first(&module->outq);
            module->outq_ops--;
            ompi_osc_nbe_op_t *op = q->op;
            OBJ_DESTRUCT(&q->super);
            free(q);
            op_sent(op);
        } else {
            if (OMPI_SUCCESS != try_send(module, q->peer, q->data, q->len, NULL, 0)) break;
            opal_list_remove_first(&module->outq);
            OBJ_DESTRUCT(&q->super);
            free(q);
        }
        count++;
    }
    return count;
}

int ompi_osc_nbe_progress_module(ompi_osc_nbe_module_t *module)
{
    int count = ompi_osc_nbe_drain(module);
    count += nbe_progress(module->engine);
    if (!opal_list_is_empty(&module->outq)) count += ompi_osc_nbe_drain(module);
    return count;
}

/* ---------------------------------------------------------------- */
/* RDMA: the data moves with btl_put/btl_get; a counted FIN frame on the
 * same BTL endpoint follows it, so the target's epoch accounting stays
 * message-count based (the FIN arrives after the data on in-order BTLs,
 * and CMA writes are complete when the callback runs) */

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

static void rdma_done(struct mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *endpoint,
                      void *local_address, struct mca_btl_base_registration_handle_t *local_handle,
                      void *context, void *cbdata, int status)
{
    (void) btl; (void) endpoint; (void) local_address; (void) local_handle; (void) context;
    ompi_osc_nbe_op_t *op = (ompi_osc_nbe_op_t *) cbdata;
    ompi_osc_nbe_module_t *module = op->module;
    nbe_am_hdr_t hdr;
    if (OPAL_UNLIKELY(OPAL_SUCCESS != status)) {
        opal_output(0, "osc/nbe: RDMA transfer to %d failed (%d)", op->super.target, status);
    }
    memset(&hdr, 0, sizeof(hdr));
    hdr.type = NBE_AM_FIN;
    hdr.src = module->rank;
    hdr.cid = module->cid;
    hdr.fence_tag = op->super.fence_tag;
    ompi_osc_nbe_send_frame(module, op->super.target, &hdr, NULL, 0, true);
    op->next_frag = op->nplan;
    op->reply_left = 0;
    ompi_osc_nbe_op_local_complete(op);
}

bool ompi_osc_nbe_try_rdma(ompi_osc_nbe_module_t *module, ompi_osc_nbe_op_t *op, void *local,
                           uint64_t remote, size_t len, bool is_put)
{
    unsigned thr = mca_osc_nbe_component.rdma_threshold;
    if (0 == thr || len < thr) return false;
    mca_bml_base_btl_t *b = rdma_btl(module, op->super.target, is_put);
    if (NULL == b) return false;
    int rc;
    if (is_put) {
        rc = b->btl->btl_put(b->btl, b->btl_endpoint, local, remote, NULL, NULL, len, 0,
                             MCA_BTL_NO_ORDER, rdma_done, module, op);
    } else {
        rc = b->btl->btl_get(b->btl, b->btl_endpoint, local, remote, NULL, NULL, len, 0,
                             MCA_BTL_NO_ORDER, rdma_done, module, op);
    }
    return OPAL_SUCCESS == rc || 1 == rc;
}

/* ---------------------------------------------------------------- */
/* receive side */

static void am_callback(mca_btl_base_module_t *btl, mca_btl_base_tag_t tag,
                        mca_btl_base_descriptor_t *des, void *cbdata)
{
    (void) btl; (void) tag; (void) cbdata;
    mca_btl_base_segment_t *segs = des->des_segments;
    size_t total = 0;
    char *buf, *tmp = NULL;

    for (size_t i = 0; i < des->des_segment_count; ++i) total += segs[i].seg_len;
    if (1 == des->des_segment_count) {
        buf = segs[0].seg_addr.pval;
    } else {
        tmp = buf = malloc(total);
        if (NULL == buf) abort();
        size_t off = 0;
        for (size_t i = 0; i < des->des_segment_count; ++i) {
            memcpy(buf + off, segs[i].seg_addr.pval, segs[i].seg_len);
            off += segs[i].seg_len;
        }
    }
    if (total < sizeof(nbe_am_hdr_t)) {
        opal_output(0, "osc/nbe: dropping a truncated frame (%zu bytes)", total);
        free(tmp);
        return;
    }
    nbe_am_hdr_t hdr;
    memcpy(&hdr, buf, sizeof(hdr));
    void *mod = NULL;
    if (OPAL_SUCCESS != opal_hash_table_get_value_uint32(&mca_osc_nbe_component.modules, hdr.cid, &mod) ||
        NULL == mod) {
        opal_output(0, "osc/nbe: frame for unknown window %u from %d dropped", hdr.cid, hdr.src);
        free(tmp);
        return;
    }
    if (NBE_AM_GEOM_REQ == hdr.type || NBE_AM_GEOM_REP == hdr.type) {
        ompi_osc_nbe_geom_frame((ompi_osc_nbe_module_t *) mod, &hdr, buf + sizeof(hdr),
                                total - sizeof(hdr));
    } else {
        ompi_osc_nbe_apply_frame((ompi_osc_nbe_module_t *) mod, &hdr, buf + sizeof(hdr),
                                 total - sizeof(hdr));
    }
    free(tmp);
}

int ompi_osc_nbe_am_register(void)
{
    int tag = mca_osc_nbe_component.btl_tag;
    if (mca_osc_nbe_component.am_registered) return OMPI_SUCCESS;
    if (tag <= 0 || tag >= MCA_BTL_TAG_MAX) return OMPI_ERR_BAD_PARAM;
    if (NULL != mca_btl_base_active_message_trigger[tag].cbfunc) {
        opal_show_help("help-osc-nbe.txt", "tag-in-use", true, tag);
        return OMPI_ERR_NOT_AVAILABLE;
    }
    int rc = mca_bml.bml_register((mca_btl_base_tag_t) tag, am_callback, NULL);
    if (OMPI_SUCCESS != rc) return rc;
    mca_osc_nbe_component.am_registered = true;
    return OMPI_SUCCESS;
}
