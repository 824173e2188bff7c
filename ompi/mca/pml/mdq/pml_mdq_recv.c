/*
 * pml/mdq receive side: posting receives, matching arrivals in per-sender
 * sequence order, delivery of eager data, the rendezvous receiver (RGET,
 * RPUT via CTS, pipelined fragments), cancel and persistent receives.
 */
#include "ompi_config.h"

#include <string.h>

#include "opal/datatype/opal_convertor.h"
#include "ompi/mca/bml/base/base.h"
#include "ompi/mca/rte/rte.h"

#include "pml_mdq.h"
#include "pml_mdq_request.h"

#define MDQ_ITEM_TO_RECVREQ(it) \
    ((mca_pml_mdq_recv_request_t *) ((char *) (it) - offsetof(mca_pml_mdq_recv_request_t, item)))
#define MDQ_ITEM_TO_FRAG(it) \
    ((mca_pml_mdq_frag_t *) ((char *) (it) - offsetof(mca_pml_mdq_frag_t, item)))

static int mdq_recv_request_cancel(ompi_request_t *request, int complete);

static void mdq_recv_request_construct(mca_pml_mdq_recv_request_t *req)
{
    req->req_recv.req_base.req_type = MCA_PML_REQUEST_RECV;
    req->req_recv.req_base.req_ompi.req_type = OMPI_REQUEST_PML;
    req->req_recv.req_base.req_ompi.req_free = mca_pml_mdq_request_free;
    req->req_recv.req_base.req_ompi.req_cancel = mdq_recv_request_cancel;
    req->req_recv.req_base.req_ompi.req_start = mca_pml_mdq_start;
    req->local_handle = NULL;
    req->rdma_btl = NULL;
    req->prepared = false;
    memset(&req->item, 0, sizeof(req->item));
}

OBJ_CLASS_INSTANCE(mca_pml_mdq_recv_request_t, mca_pml_base_recv_request_t,
                   mdq_recv_request_construct, NULL);

static void mdq_recv_request_release(mca_pml_mdq_recv_request_t *req)
{
    mca_pml_mdq_request_release(&req->req_recv.req_base);
}

static void mdq_recv_request_pml_complete(mca_pml_mdq_recv_request_t *req)
{
    if (NULL != req->local_handle) {
        mca_bml_base_deregister_mem(req->rdma_btl, req->local_handle);
        req->local_handle = NULL;
    }
    if (mdq_request_pml_done(&req->req_recv.req_base, true)) {
        mdq_recv_request_release(req);
    }
}

void mca_pml_mdq_recv_request_event_done(mca_pml_mdq_recv_request_t *req)
{
    if (0 == OPAL_THREAD_ADD_FETCH32(&req->events, -1)) {
        mdq_recv_request_pml_complete(req);
    }
}

static int mdq_recv_request_cancel(ompi_request_t *request, int complete)
{
    mca_pml_mdq_recv_request_t *req = (mca_pml_mdq_recv_request_t *) request;
    mca_pml_mdq_comm_t *mc = req->mc;
    bool removed;
    (void) complete;

    if (REQUEST_COMPLETED == request->req_complete || NULL == mc) {
        return OMPI_SUCCESS;
    }
    OPAL_THREAD_LOCK(&mc->lock);
    removed = mdq_match_remove(mc->queue, &req->item);
    OPAL_THREAD_UNLOCK(&mc->lock);
    if (removed) {
        request->req_status._cancelled = true;
        mca_pml_mdq_recv_request_event_done(req);
    }
    return OMPI_SUCCESS;
}

/* a receive of non-contiguous data (or heterogeneous peers) goes through
 * the convertor; out of line, so that contiguous receives do not carry it */
static void __attribute__((noinline))
mdq_recv_request_prepare_convertor(mca_pml_mdq_recv_request_t *req, void *buf, size_t count,
                                   ompi_datatype_t *datatype)
{
    opal_convertor_t *conv = &req->req_recv.req_base.req_convertor;

    req->prepared = true;
    opal_convertor_copy_and_prepare_for_recv(ompi_proc_local_proc->super.proc_convertor,
                                             &datatype->super, count, buf, 0, conv);
    opal_convertor_get_packed_size(conv, &req->capacity);
    req->contig = !opal_convertor_need_buffers(conv);
    if (req->contig) {
        opal_convertor_get_current_pointer(conv, (void **) &req->base);
    }
}

/* the body of init, inlined into irecv: MPI_Irecv then makes no call of its
 * own before the queue (the out-of-line init below is for the other users) */
static inline __attribute__((always_inline)) void
mdq_recv_request_init_inline(mca_pml_mdq_recv_request_t *req, void *buf, size_t count,
                             ompi_datatype_t *datatype, int src, int tag,
                             ompi_communicator_t *comm, bool persistent)
{
    MCA_PML_BASE_RECV_REQUEST_INIT(&req->req_recv, buf, count, datatype, src, tag, comm,
                                   persistent);
    req->mc = mca_pml_mdq_comm_of(comm);
    if (OPAL_LIKELY(ompi_datatype_is_contiguous_memory_layout(datatype, count))) {
        /* homogeneous contiguous data needs no convertor: copies and RDMA
         * use the buffer directly */
        req->contig = true;
        req->base = (char *) buf + datatype->super.true_lb;
        req->capacity = datatype->super.size * count;
        return;
    }
    mdq_recv_request_prepare_convertor(req, buf, count, datatype);
}

void mca_pml_mdq_recv_request_init(mca_pml_mdq_recv_request_t *req, void *buf, size_t count,
                                   ompi_datatype_t *datatype, int src, int tag,
                                   ompi_communicator_t *comm, bool persistent)
{
    mdq_recv_request_init_inline(req, buf, count, datatype, src, tag, comm, persistent);
}

/* ---- delivery ---- */

/* the receive takes a message of msg_len bytes from (hdr->src, hdr->tag):
 * status, and the bytes it will hold (MPI_ERR_TRUNCATE beyond its size) */
static void mdq_recv_take_message(mca_pml_mdq_recv_request_t *req, const mdq_hdr_match_t *hdr,
                                  size_t msg_len)
{
    req->req_recv.req_base.req_ompi.req_status.MPI_SOURCE = hdr->src;
    req->req_recv.req_base.req_ompi.req_status.MPI_TAG = hdr->tag;
    req->length = msg_len;
    if (msg_len > req->capacity) {
        req->req_recv.req_base.req_ompi.req_status.MPI_ERROR = MPI_ERR_TRUNCATE;
        req->length = req->capacity;
    }
    req->req_recv.req_base.req_ompi.req_status._ucount = req->length;
}

/* unpack at most req->length bytes from the message iovecs */
static void mdq_recv_unpack(mca_pml_mdq_recv_request_t *req, const struct iovec *src,
                            uint32_t count, size_t offset_in_msg)
{
    opal_convertor_t *conv = &req->req_recv.req_base.req_convertor;
    struct iovec iov[MCA_BTL_DES_MAX_SEGMENTS];
    uint32_t n = 0;
    size_t room, max_data;

    if (offset_in_msg >= req->length) {
        return;
    }
    room = req->length - offset_in_msg;
    if (req->contig && 1 == count) {
        ompi_scale_copy(req->base + offset_in_msg, src[0].iov_base,
                        src[0].iov_len < room ? src[0].iov_len : room);
        return;
    }
    for (uint32_t i = 0; i < count && room > 0; ++i) {
        size_t len = src[i].iov_len < room ? src[i].iov_len : room;
        if (0 == len) {
            continue;
        }
        iov[n].iov_base = src[i].iov_base;
        iov[n].iov_len = len;
        room -= len;
        ++n;
    }
    if (0 == n) {
        return;
    }
    if (req->contig) {
        size_t off = offset_in_msg;
        for (uint32_t i = 0; i < n; ++i) {
            ompi_scale_copy(req->base + off, iov[i].iov_base, iov[i].iov_len);
            off += iov[i].iov_len;
        }
        return;
    }
    if (conv->bConverted != offset_in_msg) {
        size_t pos = offset_in_msg;
        opal_convertor_set_position(conv, &pos);
    }
    max_data = req->length - offset_in_msg;
    (void) opal_convertor_unpack(conv, iov, &n, &max_data);
}

static mca_bml_base_endpoint_t *mdq_recv_peer_ep(mca_pml_mdq_recv_request_t *req, int src)
{
    ompi_proc_t *proc = ompi_comm_peer_lookup(req->req_recv.req_base.req_comm, src);
    return NULL == proc ? NULL : mca_bml_base_get_endpoint(proc);
}

/* One piece of a message being streamed into req, in any order with the
 * others (pipeline fragments, medium pieces delivered directly). */
static void mdq_recv_unpack_piece(mca_pml_mdq_recv_request_t *req, const struct iovec *src,
                                  uint32_t count, size_t offset_in_msg)
{
    if (req->contig) {
        mdq_recv_unpack(req, src, count, offset_in_msg);
        return;
    }
    /* the convertor is stateful: one piece at a time */
    OPAL_THREAD_LOCK(&req->mc->lock);
    mdq_recv_unpack(req, src, count, offset_in_msg);
    OPAL_THREAD_UNLOCK(&req->mc->lock);
}

/* synchronous send: tell the sender its message matched */
static void mdq_recv_ack_sync(mca_pml_mdq_recv_request_t *req, int src, uint64_t sreq)
{
    mdq_hdr_ack_t ack = {.sreq = sreq};
    mca_bml_base_endpoint_t *ep = mdq_recv_peer_ep(req, src);
    if (OPAL_UNLIKELY(NULL == ep)) {
        /* the sender's MPI_Ssend would wait forever */
        mca_pml_mdq_fatal(OMPI_ERR_UNREACH, "no endpoint to acknowledge a synchronous send");
    }
    mca_pml_mdq_send_ctl(ep, NULL, MDQ_TAG_ACK, &ack, sizeof(ack));
}

static void mdq_rget_finished(mca_pml_mdq_recv_request_t *req)
{
    mdq_hdr_ack_t ack = {.sreq = req->sreq};
    mca_pml_mdq_send_ctl(req->ep, NULL, MDQ_TAG_ACK, &ack, sizeof(ack));
    OPAL_THREAD_ADD_FETCH64((volatile int64_t *) &mca_pml_mdq.counters.rget, 1);
    mca_pml_mdq_recv_request_event_done(req);
}

static void mdq_get_done(mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *ep,
                         void *local_address, mca_btl_base_registration_handle_t *local_handle,
                         void *context, void *cbdata, int status)
{
    mca_pml_mdq_recv_request_t *req = (mca_pml_mdq_recv_request_t *) cbdata;
    (void) btl;
    (void) ep;
    (void) local_address;
    (void) local_handle;
    (void) context;
    if (OPAL_UNLIKELY(OPAL_SUCCESS != status)) {
        mca_pml_mdq_fatal(status, "an RDMA get failed");
    }
    if (0 == OPAL_THREAD_ADD_FETCH32(&req->rdma_pending, -1)) {
        mdq_rget_finished(req);
    }
}

/* ask the sender to stream fragments */
static void mdq_recv_request_pipeline(mca_pml_mdq_recv_request_t *req)
{
    mdq_hdr_cts_t cts = {.sreq = req->sreq, .rreq = mdq_ptr_to_u64(req), .addr = 0,
                         .length = req->length, .hlen = 0, .pad = 0};
    mca_bml_base_endpoint_t *ep = req->ep;
    req->received = 0;
    OPAL_THREAD_ADD_FETCH64((volatile int64_t *) &mca_pml_mdq.counters.pipeline, 1);
    if (0 == cts.length) {
        /* nothing will arrive: complete before the request can be reused
         * (from then on the user may restart or free it: ep read before) */
        mca_pml_mdq_recv_request_event_done(req);
    }
    /* with btl/self the fragments (and our completion) may arrive inside
     * this call: req must not be touched afterwards */
    mca_pml_mdq_send_ctl(ep, NULL, MDQ_TAG_CTS, &cts, sizeof(cts));
}

int mca_pml_mdq_recv_request_start_get(mca_pml_mdq_recv_request_t *req)
{
    mca_bml_base_btl_t *rdma = req->rdma_btl;
    mca_btl_base_module_t *btl = rdma->btl;
    char *base = req->base; /* RGET is only used for contiguous receives */

    if (NULL != btl->btl_register_mem && NULL == req->local_handle
        && req->length >= btl->btl_get_local_registration_threshold) {
        mca_bml_base_register_mem(rdma, base, req->length, MCA_BTL_REG_FLAG_LOCAL_WRITE,
                                  &req->local_handle);
        if (NULL == req->local_handle) {
            if (0 == req->offset) {
                mdq_recv_request_pipeline(req);
                return OMPI_SUCCESS;
            }
            return OMPI_ERR_OUT_OF_RESOURCE;
        }
    }
    while (req->offset < req->length) {
        size_t size = req->length - req->offset;
        int rc;
        if (size > btl->btl_get_limit) {
            size = btl->btl_get_limit;
        }
        OPAL_THREAD_ADD_FETCH32(&req->rdma_pending, 1);
        rc = mca_bml_base_get(rdma, base + req->offset, req->remote_addr + req->offset,
                              req->local_handle,
                              (mca_btl_base_registration_handle_t *) req->remote_handle, size, 0,
                              MCA_BTL_NO_ORDER, mdq_get_done, req);
        if (OPAL_UNLIKELY(OPAL_SUCCESS != rc)) {
            OPAL_THREAD_ADD_FETCH32(&req->rdma_pending, -1);
            if (mca_pml_mdq_btl_busy(rc)) {
                req->pending_op = MDQ_PENDING_GETS;
                mca_pml_mdq_pending_add(&mca_pml_mdq.pending_recv, (opal_list_item_t *) req);
                return OMPI_SUCCESS;
            }
            if (0 == req->offset) {
                /* the BTL refused the get outright: stream instead */
                mdq_recv_request_pipeline(req);
                return OMPI_SUCCESS;
            }
            mca_pml_mdq_fatal(rc, "an RDMA get failed to start");
        }
        req->offset += size;
    }
    req->pending_op = MDQ_PENDING_NONE;
    if (0 == OPAL_THREAD_ADD_FETCH32(&req->rdma_pending, -1)) {
        mdq_rget_finished(req);
    }
    return OMPI_SUCCESS;
}

void mca_pml_mdq_recv_request_schedule(mca_pml_mdq_recv_request_t *req)
{
    if (MDQ_PENDING_GETS == req->pending_op) {
        (void) mca_pml_mdq_recv_request_start_get(req);
    }
}

/* the sender offered its buffer for RDMA put: register ours and send a CTS
 * over the same BTL. Returns false when RPUT is not possible. */
static bool mdq_recv_request_try_rput(mca_pml_mdq_recv_request_t *req, mca_btl_base_module_t *rbtl)
{
    mca_bml_base_btl_t *rdma = NULL, *ctl;
    union {
        mdq_hdr_cts_t c;
        unsigned char raw[sizeof(mdq_hdr_cts_t) + MDQ_MAX_HANDLE];
    } hdr;
    size_t hlen = 0;
    char *base = req->base; /* RPUT is only used for contiguous receives */
    (void) rbtl;

    for (size_t i = 0; i < mca_bml_base_btl_array_get_size(&req->ep->btl_rdma); ++i) {
        mca_bml_base_btl_t *b = mca_bml_base_btl_array_get_index(&req->ep->btl_rdma, i);
        if ((b->btl_flags & MCA_BTL_FLAGS_PUT)
            && NULL != mca_bml_base_btl_array_find(&req->ep->btl_eager, b->btl)) {
            rdma = b;
            break;
        }
    }
    if (NULL == rdma) {
        return false;
    }
    ctl = mca_bml_base_btl_array_find(&req->ep->btl_eager, rdma->btl);
    if (NULL != rdma->btl->btl_register_mem) {
        hlen = rdma->btl->btl_registration_handle_size;
        if (hlen > MDQ_MAX_HANDLE) {
            return false;
        }
        mca_bml_base_register_mem(rdma, base, req->length, MCA_BTL_REG_FLAG_REMOTE_WRITE,
                                  &req->local_handle);
        if (NULL == req->local_handle) {
            return false;
        }
        memcpy(hdr.raw + sizeof(mdq_hdr_cts_t), req->local_handle, hlen);
    }
    req->rdma_btl = rdma;
    req->received = 0;
    hdr.c.sreq = req->sreq;
    hdr.c.rreq = mdq_ptr_to_u64(req);
    hdr.c.addr = mdq_ptr_to_u64(base);
    hdr.c.length = req->length;
    hdr.c.hlen = (uint32_t) hlen;
    hdr.c.pad = 0;
    mca_pml_mdq_send_ctl(req->ep, ctl, MDQ_TAG_CTS, &hdr, sizeof(mdq_hdr_cts_t) + hlen);
    return true;
}

/* matched RTS: choose RGET, RPUT or pipeline */
static void mdq_recv_request_rts(mca_pml_mdq_recv_request_t *req, const mca_pml_mdq_msg_t *msg)
{
    const mdq_hdr_rts_t *rts = (const mdq_hdr_rts_t *) msg->hdr;
    int proto = mca_pml_mdq.rndv_protocol;

    req->sreq = rts->sreq;
    mdq_recv_take_message(req, &rts->m, rts->length);
    req->ep = mdq_recv_peer_ep(req, rts->m.src);
    req->offset = 0;
    req->rdma_pending = 1; /* scheduling reference */
    if (OPAL_UNLIKELY(NULL == req->ep)) {
        mca_pml_mdq_fatal(OMPI_ERR_UNREACH, "no endpoint to the sender of a rendezvous message");
    }
    if (rts->m.flags & MDQ_HDR_F_PIPE) {
        mdq_recv_request_pipeline(req); /* the sender measured streaming to be faster */
        return;
    }
    if (req->length > 0 && req->contig && (rts->m.flags & MDQ_HDR_F_GET)
        && (MDQ_RNDV_AUTO == proto || MDQ_RNDV_RGET == proto) && rts->hlen <= MDQ_MAX_HANDLE) {
        mca_bml_base_btl_t *rdma = mca_bml_base_btl_array_find(&req->ep->btl_rdma, msg->btl);
        if (NULL != rdma && (rdma->btl_flags & MCA_BTL_FLAGS_GET)) {
            if (mca_pml_mdq_rdma_copy_slow(rdma->btl, mdq_ptr_to_u64(req->base), rts->addr,
                                           req->length)) {
                OPAL_THREAD_ADD_FETCH64((volatile int64_t *) &mca_pml_mdq.counters.rdma_rerouted, 1);
                mdq_recv_request_pipeline(req); /* fragments copied at safe distances */
                return;
            }
            req->rdma_btl = rdma;
            req->remote_addr = rts->addr;
            memcpy(req->remote_handle, rts + 1, rts->hlen);
            (void) mca_pml_mdq_recv_request_start_get(req);
            return;
        }
    }
    if (req->length > 0 && req->contig && (rts->m.flags & MDQ_HDR_F_CONTIG)
        && MDQ_RNDV_PIPELINE != proto && mdq_recv_request_try_rput(req, msg->btl)) {
        return;
    }
    mdq_recv_request_pipeline(req);
}

void mca_pml_mdq_recv_request_deliver(mca_pml_mdq_recv_request_t *req, const mca_pml_mdq_msg_t *msg)
{
    if (MDQ_TAG_RTS == msg->type) {
        mdq_recv_request_rts(req, msg);
        return;
    }
    if (OPAL_UNLIKELY(MDQ_TAG_EAGER_SYNC == msg->type
                      || (MDQ_TAG_MEDIUM == msg->type && (msg->hdr->flags & MDQ_HDR_F_SYNC)))) {
        mdq_recv_ack_sync(req, msg->hdr->src,
                          MDQ_TAG_MEDIUM == msg->type ? ((const mdq_hdr_medium_t *) msg->hdr)->sreq
                                                      : ((const mdq_hdr_sync_t *) msg->hdr)->sreq);
    }
    mdq_recv_take_message(req, msg->hdr, msg->len);
    mdq_recv_unpack(req, msg->iov, msg->iov_count, 0);
    if (MDQ_TAG_MEDIUM == msg->type && 0 != ((const mdq_hdr_medium_t *) msg->hdr)->timing) {
        mca_pml_mdq_adapt_answer(req->req_recv.req_base.req_comm, msg->hdr->src,
                                 (const mdq_hdr_medium_t *) msg->hdr);
    }
    mca_pml_mdq_recv_request_event_done(req);
}

/* ---- arrivals ---- */

/* Under mc->lock: queue an unmatched message (frag: its fragment, or NULL
 * for a copy) where the failed search's cursor points. */
static void mdq_queue_unexpected(mca_pml_mdq_comm_t *mc, const mca_pml_mdq_msg_t *msg,
                                 size_t hdr_size, mca_pml_mdq_frag_t *frag,
                                 mdq_match_cursor_t *cur)
{
    if (NULL == frag) {
        frag = mca_pml_mdq_frag_copy(msg, hdr_size);
        if (OPAL_UNLIKELY(NULL == frag)) {
            mca_pml_mdq_fatal(OMPI_ERR_OUT_OF_RESOURCE, "out of memory queueing an unexpected message");
        }
    }
    frag->item.rank = msg->hdr->src;
    frag->item.tag = msg->hdr->tag;
    mdq_match_append_unexpected(mc->queue, &frag->item, cur);
}

/* Under mc->lock: the next message in sequence from its sender. Take the
 * posted receive it matches, or leave cur where it is to be queued, and
 * advance the sender's sequence. */
static mdq_match_item_t *mdq_take_next(mca_pml_mdq_comm_t *mc, mca_pml_mdq_peer_t *peer,
                                       const mdq_hdr_match_t *hdr, mdq_match_cursor_t *cur)
{
    peer->expect_seq++;
    return mdq_match_take_posted(mc->queue, hdr->src, hdr->tag, cur);
}

/* Under mc->lock: mdq_take_next, queueing the message as unexpected when
 * nothing matches (frag: the fragment it sits in, or NULL for a copy). */
static mca_pml_mdq_recv_request_t *mdq_match_next(mca_pml_mdq_comm_t *mc, mca_pml_mdq_peer_t *peer,
                                                  const mca_pml_mdq_msg_t *msg, size_t hdr_size,
                                                  mca_pml_mdq_frag_t *frag)
{
    mdq_match_cursor_t cur;
    mdq_match_item_t *it = mdq_take_next(mc, peer, msg->hdr, &cur);

    if (NULL != it) {
        return MDQ_ITEM_TO_RECVREQ(it);
    }
    mdq_queue_unexpected(mc, msg, hdr_size, frag, &cur);
    return NULL;
}

/* A complete matched message in from the wire. owned: the message already
 * sits in a fragment (an assembled medium message) that is queued as is or
 * released after delivery, instead of copied. */
void mca_pml_mdq_recv_matched_arrival(mca_pml_mdq_comm_t *mc, mca_pml_mdq_msg_t *msg,
                                      size_t hdr_size, mca_pml_mdq_frag_t *owned)
{
    const mdq_hdr_match_t *hdr = msg->hdr;
    mca_pml_mdq_peer_t *peer;
    mca_pml_mdq_recv_request_t *req;
    opal_list_t ready;
    bool have_ready = false;

    if (OPAL_UNLIKELY(hdr->src < 0 || (uint32_t) hdr->src >= mc->size)) {
        opal_output(0, "pml:mdq: dropping message with bad source %d on cid %u", hdr->src,
                    mc->cid);
        if (NULL != owned) {
            mca_pml_mdq_frag_release(owned);
        }
        return;
    }
    peer = mca_pml_mdq_peer_get(mc, hdr->src);
    if (OPAL_UNLIKELY(NULL == peer)) {
        mca_pml_mdq_fatal(OMPI_ERR_OUT_OF_RESOURCE, "out of memory for a new peer's state");
    }

    OPAL_THREAD_LOCK(&mc->lock);
    if (OPAL_UNLIKELY(hdr->seq != peer->expect_seq)) {
        /* overtook an earlier message (several BTLs): hold it */
        mca_pml_mdq_frag_t *frag = NULL != owned ? owned : mca_pml_mdq_frag_copy(msg, hdr_size);
        if (OPAL_UNLIKELY(NULL == frag)) {
            OPAL_THREAD_UNLOCK(&mc->lock);
            mca_pml_mdq_fatal(OMPI_ERR_OUT_OF_RESOURCE, "out of memory holding an early message");
        }
        opal_list_append(&peer->held, &frag->super.super);
        OPAL_THREAD_ADD_FETCH64((volatile int64_t *) &mca_pml_mdq.counters.held_ooo, 1);
        OPAL_THREAD_UNLOCK(&mc->lock);
        return;
    }
    req = mdq_match_next(mc, peer, msg, hdr_size, owned);

    while (OPAL_UNLIKELY(!opal_list_is_empty(&peer->held))) {
        mca_pml_mdq_frag_t *frag, *found = NULL;
        OPAL_LIST_FOREACH (frag, &peer->held, mca_pml_mdq_frag_t) {
            if (frag->hdr.m.seq == peer->expect_seq) {
                found = frag;
                break;
            }
        }
        if (NULL == found) {
            break;
        }
        opal_list_remove_item(&peer->held, &found->super.super);
        {
            mca_pml_mdq_msg_t fm;
            mca_pml_mdq_frag_to_msg(found, &fm);
            found->matched = mdq_match_next(mc, peer, &fm, 0, found);
        }
        if (NULL != found->matched) {
            if (!have_ready) {
                OBJ_CONSTRUCT(&ready, opal_list_t);
                have_ready = true;
            }
            opal_list_append(&ready, &found->super.super);
        }
    }
    OPAL_THREAD_UNLOCK(&mc->lock);

    if (NULL != req) {
        mca_pml_mdq_recv_request_deliver(req, msg);
        if (NULL != owned) {
            mca_pml_mdq_frag_release(owned);
        }
    }
    if (have_ready) {
        mca_pml_mdq_frag_t *frag;
        while (NULL != (frag = (mca_pml_mdq_frag_t *) opal_list_remove_first(&ready))) {
            mca_pml_mdq_msg_t fm;
            mca_pml_mdq_frag_to_msg(frag, &fm);
            mca_pml_mdq_recv_request_deliver(frag->matched, &fm);
            frag->matched = NULL;
            mca_pml_mdq_frag_release(frag);
        }
        OBJ_DESTRUCT(&ready);
    }
}

static void mdq_msg_from_des(mca_pml_mdq_msg_t *msg, uint8_t type, mca_btl_base_module_t *btl,
                             const mca_btl_base_descriptor_t *des, size_t skip)
{
    const mca_btl_base_segment_t *seg = des->des_segments;
    uint32_t n = 0;

    msg->type = type;
    msg->btl = btl;
    msg->len = 0;
    for (size_t i = 0; i < des->des_segment_count; ++i) {
        char *base = (char *) seg[i].seg_addr.pval;
        size_t len = seg[i].seg_len;
        if (skip > 0) {
            size_t s = skip < len ? skip : len;
            base += s;
            len -= s;
            skip -= s;
        }
        if (len > 0) {
            msg->iov[n].iov_base = base;
            msg->iov[n].iov_len = len;
            msg->len += len;
            ++n;
        }
    }
    msg->iov_count = n;
}

/* the parts of an eager arrival that need a message descriptor, out of
 * line so that the fast path below keeps a small stack frame */
static __attribute__((noinline)) void mdq_eager_queue(mca_pml_mdq_comm_t *mc,
                                                      mca_btl_base_module_t *btl,
                                                      const mca_btl_base_descriptor_t *des,
                                                      mdq_match_cursor_t *cur)
{
    mca_pml_mdq_msg_t msg;
    msg.hdr = (const mdq_hdr_match_t *) des->des_segments[0].seg_addr.pval;
    mdq_msg_from_des(&msg, MDQ_TAG_EAGER, btl, des, sizeof(*msg.hdr));
    mdq_queue_unexpected(mc, &msg, sizeof(*msg.hdr), NULL, cur);
}

static __attribute__((noinline)) void mdq_eager_deliver(mca_pml_mdq_recv_request_t *req,
                                                        mca_btl_base_module_t *btl,
                                                        const mca_btl_base_descriptor_t *des)
{
    mca_pml_mdq_msg_t msg;
    msg.hdr = (const mdq_hdr_match_t *) des->des_segments[0].seg_addr.pval;
    mdq_msg_from_des(&msg, MDQ_TAG_EAGER, btl, des, sizeof(*msg.hdr));
    mca_pml_mdq_recv_request_deliver(req, &msg);
}

/* The common small message, without building a message descriptor unless
 * it is queued: an eager message in one segment, next in sequence from its
 * sender (nothing held), delivered straight into a posted contiguous
 * receive. false (nothing done) for anything else, which takes
 * mdq_cb_matched_other. The copy is mdq_recv_unpack's contiguous case. */
static bool mdq_eager_fast(mca_pml_mdq_comm_t *mc, mca_btl_base_module_t *btl,
                           const mca_btl_base_descriptor_t *des)
{
    const mdq_hdr_match_t *hdr = (const mdq_hdr_match_t *) des->des_segments[0].seg_addr.pval;
    mca_pml_mdq_recv_request_t *req;
    mca_pml_mdq_peer_t *peer;
    mdq_match_cursor_t cur;
    mdq_match_item_t *it;

    if (OPAL_UNLIKELY(1 != des->des_segment_count || des->des_segments[0].seg_len < sizeof(*hdr)
                      || hdr->src < 0 || (uint32_t) hdr->src >= mc->size)) {
        return false;
    }
    peer = mca_pml_mdq_peer_get(mc, hdr->src);
    if (OPAL_UNLIKELY(NULL == peer)) {
        return false;
    }
    OPAL_THREAD_LOCK(&mc->lock);
    if (OPAL_UNLIKELY(hdr->seq != peer->expect_seq || !opal_list_is_empty(&peer->held))) {
        OPAL_THREAD_UNLOCK(&mc->lock);
        return false;
    }
    it = mdq_take_next(mc, peer, hdr, &cur);
    if (NULL == it) {
        mdq_eager_queue(mc, btl, des, &cur);
        OPAL_THREAD_UNLOCK(&mc->lock);
        return true;
    }
    OPAL_THREAD_UNLOCK(&mc->lock);

    req = MDQ_ITEM_TO_RECVREQ(it);
    if (OPAL_UNLIKELY(!req->contig)) {
        mdq_eager_deliver(req, btl, des);
        return true;
    }
    mdq_recv_take_message(req, hdr, des->des_segments[0].seg_len - sizeof(*hdr));
    if (OPAL_LIKELY(req->length > 0)) {
        ompi_scale_copy(req->base, (const char *) (hdr + 1), req->length);
    }
    mca_pml_mdq_recv_request_event_done(req);
    return true;
}

/* every arrival of a matched header but an eager message taken at once */
static __attribute__((noinline)) void mdq_cb_matched_other(mca_pml_mdq_comm_t *mc,
                                                           mca_btl_base_module_t *btl,
                                                           mca_btl_base_tag_t tag,
                                                           mca_btl_base_descriptor_t *des)
{
    const mdq_hdr_match_t *hdr = (const mdq_hdr_match_t *) des->des_segments[0].seg_addr.pval;
    size_t hsize = mca_pml_mdq_hdr_size(tag, hdr);
    mca_pml_mdq_msg_t msg;

    msg.hdr = hdr;
    mdq_msg_from_des(&msg, tag, btl, des, hsize);
    if (MDQ_TAG_RTS == tag) {
        msg.len = 0;
        msg.iov_count = 0;
    }
    if (OPAL_UNLIKELY(NULL == mc)) {
        mca_pml_mdq_hold_nocomm(hdr->cid, &msg, hsize);
        return;
    }
    if (MDQ_TAG_MEDIUM == tag && ((const mdq_hdr_medium_t *) hdr)->length != msg.len) {
        mca_pml_mdq_medium_piece(mc, &msg);
        return;
    }
    mca_pml_mdq_recv_matched_arrival(mc, &msg, hsize, NULL);
}

void mca_pml_mdq_cb_matched(mca_btl_base_module_t *btl, mca_btl_base_tag_t tag,
                            mca_btl_base_descriptor_t *des, void *cbdata)
{
    const mdq_hdr_match_t *hdr = (const mdq_hdr_match_t *) des->des_segments[0].seg_addr.pval;
    ompi_communicator_t *comm = ompi_comm_lookup(hdr->cid);
    mca_pml_mdq_comm_t *mc = NULL == comm ? NULL : mca_pml_mdq_comm_of(comm);
    (void) cbdata;

    if (OPAL_LIKELY(MDQ_TAG_EAGER == tag && NULL != mc) && mdq_eager_fast(mc, btl, des)) {
        return;
    }
    mdq_cb_matched_other(mc, btl, tag, des);
}

void mca_pml_mdq_recv_arrival(mca_pml_mdq_comm_t *mc, mca_pml_mdq_msg_t *msg, size_t hdr_size)
{
    if (MDQ_TAG_MFRAG == msg->type
        || (MDQ_TAG_MEDIUM == msg->type
            && ((const mdq_hdr_medium_t *) msg->hdr)->length != msg->len)) {
        mca_pml_mdq_medium_piece(mc, msg);
        return;
    }
    mca_pml_mdq_recv_matched_arrival(mc, msg, hdr_size, NULL);
}

/* the continuation header keeps cid and src where the match header has them,
 * so the no-communicator path can treat both alike */
_Static_assert(offsetof(mdq_hdr_mfrag_t, cid) == offsetof(mdq_hdr_match_t, cid)
                   && offsetof(mdq_hdr_mfrag_t, src) == offsetof(mdq_hdr_match_t, src),
               "mfrag header must start like the match header");

void mca_pml_mdq_cb_mfrag(mca_btl_base_module_t *btl, mca_btl_base_tag_t tag,
                          mca_btl_base_descriptor_t *des, void *cbdata)
{
    const mdq_hdr_mfrag_t *fh = (const mdq_hdr_mfrag_t *) des->des_segments[0].seg_addr.pval;
    ompi_communicator_t *comm = ompi_comm_lookup(fh->cid);
    mca_pml_mdq_comm_t *mc = NULL == comm ? NULL : mca_pml_mdq_comm_of(comm);
    mca_pml_mdq_msg_t msg;
    (void) tag;
    (void) cbdata;

    msg.hdr = (const mdq_hdr_match_t *) fh;
    mdq_msg_from_des(&msg, MDQ_TAG_MFRAG, btl, des, sizeof(*fh));
    if (OPAL_UNLIKELY(NULL == mc)) {
        mca_pml_mdq_hold_nocomm(fh->cid, &msg, sizeof(*fh));
        return;
    }
    mca_pml_mdq_medium_piece(mc, &msg);
}

/* Under mc->lock: the first piece of a medium message of several pieces,
 * arrived before any other. When it is next in sequence from its sender and
 * matches a posted receive, the receive takes the message now and every
 * piece is copied straight into it (the receiver copies piece k while the
 * sender still copies piece k+1). Returns the tracker that maps the
 * message's pieces to the receive, or NULL: the pieces are assembled and
 * the message matched once complete. */
static mca_pml_mdq_frag_t *mdq_medium_start_direct(mca_pml_mdq_comm_t *mc, mca_pml_mdq_peer_t *peer,
                                                   const mdq_hdr_medium_t *mh)
{
    mdq_match_cursor_t cur;
    mdq_match_item_t *it;
    mca_pml_mdq_recv_request_t *req;
    mca_pml_mdq_frag_t *tracker;

    if (NULL == peer || mh->m.seq != peer->expect_seq || !opal_list_is_empty(&peer->held)) {
        return NULL;
    }
    it = mdq_match_take_posted(mc->queue, mh->m.src, mh->m.tag, &cur);
    if (NULL == it) {
        return NULL; /* not consumed: assembled, matched once complete */
    }
    peer->expect_seq++;
    tracker = mca_pml_mdq_frag_alloc(0);
    if (OPAL_UNLIKELY(NULL == tracker)) {
        mca_pml_mdq_fatal(OMPI_ERR_OUT_OF_RESOURCE, "out of memory receiving a medium message");
    }
    req = MDQ_ITEM_TO_RECVREQ(it);
    mdq_recv_take_message(req, &mh->m, mh->length);
    tracker->matched = req;
    tracker->msreq = mh->sreq;
    tracker->mseq = mh->m.seq;
    tracker->msrc = mh->m.src;
    tracker->arrived = 0;
    memcpy(&tracker->hdr.md, mh, sizeof(*mh)); /* timing answered at completion */
    opal_list_append(&mc->medium, &tracker->super.super);
    /* process-wide: mc->lock covers one communicator only */
    OPAL_THREAD_ADD_FETCH64((volatile int64_t *) &mca_pml_mdq.counters.medium_direct, 1);
    return tracker;
}

/* A piece of a medium message that a receive took at its first piece */
static void mdq_medium_piece_direct(mca_pml_mdq_comm_t *mc, mca_pml_mdq_frag_t *tracker,
                                    const mca_pml_mdq_msg_t *msg, size_t offset, size_t total)
{
    mca_pml_mdq_recv_request_t *req = tracker->matched;

    mdq_recv_unpack_piece(req, msg->iov, msg->iov_count, offset);
    /* the piece that completes the message is the last to use the tracker */
    if (OPAL_THREAD_ADD_FETCH_SIZE_T(&tracker->arrived, msg->len) != total) {
        return;
    }
    OPAL_THREAD_LOCK(&mc->lock);
    opal_list_remove_item(&mc->medium, &tracker->super.super);
    OPAL_THREAD_UNLOCK(&mc->lock);
    if (0 != tracker->hdr.md.timing) {
        mca_pml_mdq_adapt_answer(req->req_recv.req_base.req_comm, tracker->msrc, &tracker->hdr.md);
    }
    tracker->matched = NULL;
    mca_pml_mdq_frag_release(tracker);
    mca_pml_mdq_recv_request_event_done(req);
}

/* One piece of a medium message that needs several. A receive posted when
 * the first piece arrives takes the pieces directly (above). Otherwise the
 * pieces are collected in an assembly fragment (keyed by sender request
 * and sequence, created by whichever piece comes first) and the complete
 * message then takes the normal matched-arrival path, so ordering,
 * matching, probe and truncation work as for eager messages. Both kinds of
 * entry sit on mc->medium; a direct one has matched set. */
void mca_pml_mdq_medium_piece(mca_pml_mdq_comm_t *mc, const mca_pml_mdq_msg_t *msg)
{
    bool first = MDQ_TAG_MEDIUM == msg->type;
    const mdq_hdr_medium_t *mh = (const mdq_hdr_medium_t *) msg->hdr;
    const mdq_hdr_mfrag_t *fh = (const mdq_hdr_mfrag_t *) msg->hdr;
    int src = first ? mh->m.src : fh->src;
    uint64_t sreq = first ? mh->sreq : fh->sreq;
    uint16_t seq = first ? mh->m.seq : fh->seq;
    size_t total = first ? mh->length : fh->length;
    size_t offset = first ? 0 : fh->offset;
    mca_pml_mdq_peer_t *peer = NULL;
    mca_pml_mdq_frag_t *as = NULL, *f;
    unsigned char *dst;
    bool complete;

    if (OPAL_UNLIKELY(src < 0 || (uint32_t) src >= mc->size || offset > total
                      || msg->len > total - offset)) {
        opal_output(0, "pml:mdq: dropping bad medium piece (source %d, offset %zu, %zu of %zu "
                    "bytes) on cid %u", src, offset, msg->len, total, mc->cid);
        return;
    }
    if (first) {
        peer = mca_pml_mdq_peer_get(mc, src);
    }
    OPAL_THREAD_LOCK(&mc->lock);
    OPAL_LIST_FOREACH (f, &mc->medium, mca_pml_mdq_frag_t) {
        if (f->msreq == sreq && f->mseq == seq && f->msrc == src) {
            as = f;
            break;
        }
    }
    if (NULL == as && first) {
        as = mdq_medium_start_direct(mc, peer, mh);
    }
    if (NULL != as && NULL != as->matched) {
        OPAL_THREAD_UNLOCK(&mc->lock);
        if (first && (mh->m.flags & MDQ_HDR_F_SYNC)) {
            mdq_recv_ack_sync(as->matched, src, sreq);
        }
        mdq_medium_piece_direct(mc, as, msg, offset, total);
        return;
    }
    if (NULL == as) {
        as = mca_pml_mdq_frag_alloc(total);
        if (OPAL_UNLIKELY(NULL == as)) {
            OPAL_THREAD_UNLOCK(&mc->lock);
            mca_pml_mdq_fatal(OMPI_ERR_OUT_OF_RESOURCE, "out of memory assembling a medium message");
        }
        as->type = MDQ_TAG_MEDIUM;
        as->btl = msg->btl;
        as->msreq = sreq;
        as->mseq = seq;
        as->msrc = src;
        as->arrived = 0;
        opal_list_append(&mc->medium, &as->super.super);
    }
    if (first) {
        memcpy(as->hdr.raw, mh, sizeof(*mh));
        as->btl = msg->btl;
    }
    dst = as->data + offset;
    for (uint32_t i = 0; i < msg->iov_count; ++i) {
        ompi_scale_copy(dst, msg->iov[i].iov_base, msg->iov[i].iov_len);
        dst += msg->iov[i].iov_len;
    }
    as->arrived += msg->len;
    complete = as->arrived == total;
    if (complete) {
        opal_list_remove_item(&mc->medium, &as->super.super);
    }
    OPAL_THREAD_UNLOCK(&mc->lock);

    if (complete) {
        mca_pml_mdq_msg_t whole;
        mca_pml_mdq_frag_to_msg(as, &whole);
        mca_pml_mdq_recv_matched_arrival(mc, &whole, sizeof(mdq_hdr_medium_t), as);
    }
}

void mca_pml_mdq_cb_frag(mca_btl_base_module_t *btl, mca_btl_base_tag_t tag,
                         mca_btl_base_descriptor_t *des, void *cbdata)
{
    const mdq_hdr_frag_t *fh = (const mdq_hdr_frag_t *) des->des_segments[0].seg_addr.pval;
    mca_pml_mdq_recv_request_t *req = mdq_u64_to_ptr(fh->rreq);
    /* read before the count: once another thread's fragment completes the
     * request, the user may restart it and the length change */
    size_t length = req->length;
    mca_pml_mdq_msg_t msg;
    size_t bytes;
    (void) tag;
    (void) cbdata;

    mdq_msg_from_des(&msg, MDQ_TAG_FRAG, btl, des, sizeof(*fh));
    bytes = msg.len;
    if (fh->offset + bytes > length) {
        bytes = fh->offset < length ? length - fh->offset : 0;
    }
    mdq_recv_unpack_piece(req, msg.iov, msg.iov_count, fh->offset);
    if (OPAL_THREAD_ADD_FETCH_SIZE_T(&req->received, bytes) == length) {
        mca_pml_mdq_recv_request_event_done(req);
    }
}

void mca_pml_mdq_cb_fin(mca_btl_base_module_t *btl, mca_btl_base_tag_t tag,
                        mca_btl_base_descriptor_t *des, void *cbdata)
{
    const mdq_hdr_fin_t *fin = (const mdq_hdr_fin_t *) des->des_segments[0].seg_addr.pval;
    mca_pml_mdq_recv_request_t *req = mdq_u64_to_ptr(fin->rreq);
    (void) btl;
    (void) tag;
    (void) cbdata;

    if (OPAL_THREAD_ADD_FETCH_SIZE_T(&req->received, fin->bytes) == req->length) {
        mca_pml_mdq_recv_request_event_done(req);
    }
}

/* ---- posting ---- */

/* the body of start, inlined into irecv like init's */
static inline __attribute__((always_inline)) int
mdq_recv_request_start_inline(mca_pml_mdq_recv_request_t *req)
{
    mca_pml_mdq_comm_t *mc = req->mc;
    mdq_match_cursor_t cur, *curp = NULL;
    mdq_match_item_t *it = NULL;
    mca_pml_mdq_frag_t *frag;
    mca_pml_mdq_msg_t msg;

    if (OPAL_UNLIKELY(NULL == mc)) {
        return OMPI_ERR_BAD_PARAM; /* before the reset: a persistent round not started */
    }
    mca_pml_mdq_recv_request_reset(req);
    req->item.rank = req->req_recv.req_base.req_peer;
    req->item.tag = req->req_recv.req_base.req_tag;

    OPAL_THREAD_LOCK(&mc->lock);
    /* no search while no message waits (a stream whose receives are posted
     * first); the append then finds the place itself */
    if (0 != mc->queue_stats->umq_length) {
        curp = &cur;
        it = mdq_match_find_unexpected(mc->queue, req->item.rank, req->item.tag, true, curp);
    }
    if (NULL == it) {
        mdq_match_append_posted(mc->queue, &req->item, curp);
        OPAL_THREAD_UNLOCK(&mc->lock);
        return OMPI_SUCCESS;
    }
    OPAL_THREAD_UNLOCK(&mc->lock);

    frag = MDQ_ITEM_TO_FRAG(it);
    mca_pml_mdq_frag_to_msg(frag, &msg);
    mca_pml_mdq_recv_request_deliver(req, &msg);
    mca_pml_mdq_frag_release(frag);
    return OMPI_SUCCESS;
}

int mca_pml_mdq_recv_request_start(mca_pml_mdq_recv_request_t *req)
{
    return mdq_recv_request_start_inline(req);
}

int mca_pml_mdq_irecv_init(void *buf, size_t count, ompi_datatype_t *datatype, int src, int tag,
                           ompi_communicator_t *comm, ompi_request_t **request)
{
    mca_pml_mdq_recv_request_t *req = mca_pml_mdq_recv_request_alloc();
    if (OPAL_UNLIKELY(NULL == req)) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    mca_pml_mdq_recv_request_init(req, buf, count, datatype, src, tag, comm, true);
    req->req_recv.req_base.req_pml_complete = true;
    req->released = 1; /* inactive: the PML side is done */
    *request = &req->req_recv.req_base.req_ompi;
    return OMPI_SUCCESS;
}

int mca_pml_mdq_irecv(void *buf, size_t count, ompi_datatype_t *datatype, int src, int tag,
                      ompi_communicator_t *comm, ompi_request_t **request)
{
    mca_pml_mdq_recv_request_t *req = mca_pml_mdq_recv_request_alloc();
    int rc;
    if (OPAL_UNLIKELY(NULL == req)) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    mdq_recv_request_init_inline(req, buf, count, datatype, src, tag, comm, false);
    *request = &req->req_recv.req_base.req_ompi;
    rc = mdq_recv_request_start_inline(req);
    if (OPAL_UNLIKELY(OMPI_SUCCESS != rc)) {
        req->req_recv.req_base.req_pml_complete = true;
        mdq_recv_request_release(req);
        *request = MPI_REQUEST_NULL;
    }
    return rc;
}

int mca_pml_mdq_recv(void *buf, size_t count, ompi_datatype_t *datatype, int src, int tag,
                     ompi_communicator_t *comm, ompi_status_public_t *status)
{
    ompi_request_t *request = NULL;
    int rc = mca_pml_mdq_irecv(buf, count, datatype, src, tag, comm, &request);
    if (OPAL_UNLIKELY(OMPI_SUCCESS != rc)) {
        return rc;
    }
    return mca_pml_mdq_wait_and_free(request, status);
}

/* ---- persistent start ---- */

int mca_pml_mdq_start(size_t count, ompi_request_t **requests)
{
    for (size_t i = 0; i < count; ++i) {
        mca_pml_base_request_t *base = (mca_pml_base_request_t *) requests[i];
        int rc;

        if (NULL == base || OMPI_REQUEST_PML != base->req_ompi.req_type) {
            continue;
        }
        if (MCA_PML_REQUEST_SEND == base->req_type) {
            mca_pml_mdq_send_request_t *sendreq = (mca_pml_mdq_send_request_t *) base;
            if (OPAL_UNLIKELY(!base->req_pml_complete)) {
                /* the PML still uses the previous round (buffered send):
                 * continue with a fresh request and let the old one go */
                mca_pml_mdq_send_request_t *fresh;
                ompi_request_t *old = requests[i];
                rc = mca_pml_mdq_isend_init(sendreq->req_send.req_base.req_addr,
                                            sendreq->req_send.req_base.req_count,
                                            sendreq->req_send.req_base.req_datatype,
                                            sendreq->req_send.req_base.req_peer,
                                            sendreq->req_send.req_base.req_tag,
                                            sendreq->req_send.req_send_mode,
                                            sendreq->req_send.req_base.req_comm, &requests[i]);
                if (OMPI_SUCCESS != rc) {
                    return rc;
                }
                old->req_persistent = false;
                (void) old->req_free(&old);
                fresh = (mca_pml_mdq_send_request_t *) requests[i];
                sendreq = fresh;
            }
            rc = mca_pml_mdq_send_request_start(sendreq);
        } else if (MCA_PML_REQUEST_RECV == base->req_type) {
            rc = mca_pml_mdq_recv_request_start((mca_pml_mdq_recv_request_t *) base);
        } else {
            rc = OMPI_ERR_REQUEST;
        }
        if (OMPI_SUCCESS != rc) {
            /* the round did not start (each start fails before it takes
             * the PML side): inactive again, so a wait returns at once and
             * a later start or free works */
            base = (mca_pml_base_request_t *) requests[i];
            base->req_pml_complete = true;
            base->req_ompi.req_complete = REQUEST_COMPLETED;
            base->req_ompi.req_state = OMPI_REQUEST_INACTIVE;
            return rc;
        }
    }
    return OMPI_SUCCESS;
}
