/*
 * pml/mdq send side: eager (sendi, then alloc+send), eager-synchronous,
 * rendezvous (RTS; then the receiver pulls with RGET, or asks for RPUT or
 * pipelined fragments with a CTS), buffered and persistent sends.
 */
#include "ompi_config.h"

#include <string.h>

#include "opal/datatype/opal_convertor.h"
#include "ompi/datatype/ompi_datatype.h"
#include "ompi/mca/bml/base/base.h"
#include "ompi/mca/pml/base/pml_base_bsend.h"
#include "ompi/mca/rte/rte.h"

#include "pml_mdq.h"
#include "pml_mdq_request.h"

#define MDQ_SEND_FLAGS (MCA_BTL_DES_FLAGS_PRIORITY | MCA_BTL_DES_FLAGS_BTL_OWNERSHIP)
/* contiguous sends up to this size are copied behind the header on the
 * stack instead of described by a convertor (cheaper to set up) */
#define MDQ_INLINE_COPY_MAX 256

static int mdq_send_request_cancel(ompi_request_t *request, int complete);

static void mdq_send_request_construct(mca_pml_mdq_send_request_t *req)
{
    req->req_send.req_base.req_type = MCA_PML_REQUEST_SEND;
    req->req_send.req_base.req_ompi.req_type = OMPI_REQUEST_PML;
    req->req_send.req_base.req_ompi.req_free = mca_pml_mdq_request_free;
    req->req_send.req_base.req_ompi.req_cancel = mdq_send_request_cancel;
    req->req_send.req_base.req_ompi.req_start = mca_pml_mdq_start;
    req->local_handle = NULL;
    req->rdma_btl = NULL;
    req->seq_set = false;
}

OBJ_CLASS_INSTANCE(mca_pml_mdq_send_request_t, mca_pml_base_send_request_t,
                   mdq_send_request_construct, NULL);

static void mdq_send_request_release(mca_pml_mdq_send_request_t *sendreq)
{
    mca_pml_mdq_request_release(&sendreq->req_send.req_base);
}

/* Open MPI's PMLs do not cancel sends: the request completes normally and
 * MPI_Test_cancelled reports false. */
static int mdq_send_request_cancel(ompi_request_t *request, int complete)
{
    (void) request;
    (void) complete;
    return OMPI_SUCCESS;
}

static void mdq_send_request_pml_complete(mca_pml_mdq_send_request_t *sendreq)
{
    bool buffered = MCA_PML_BASE_SEND_BUFFERED == sendreq->req_send.req_send_mode;

    if (sendreq->pipe) {
        mca_pml_mdq_adapt_pipeline_done(sendreq); /* every fragment was taken in */
    }

    if (NULL != sendreq->local_handle) {
        mca_bml_base_deregister_mem(sendreq->rdma_btl, sendreq->local_handle);
        sendreq->local_handle = NULL;
    }
    if (buffered) {
        mca_pml_base_bsend_request_fini((ompi_request_t *) sendreq);
    }
    sendreq->req_send.req_base.req_ompi.req_status._ucount = sendreq->req_send.req_bytes_packed;
    if (mdq_request_pml_done(&sendreq->req_send.req_base, !buffered)) {
        mdq_send_request_release(sendreq);
    }
}

void mca_pml_mdq_send_request_event_done(mca_pml_mdq_send_request_t *sendreq)
{
    if (0 == OPAL_THREAD_ADD_FETCH32(&sendreq->events, -1)) {
        mdq_send_request_pml_complete(sendreq);
    }
}

mca_pml_mdq_send_request_t *mca_pml_mdq_send_request_alloc(ompi_communicator_t *comm, int dst)
{
    ompi_proc_t *proc = ompi_comm_peer_lookup(comm, dst);
    mca_pml_mdq_send_request_t *sendreq;

    if (OPAL_UNLIKELY(NULL == proc)) {
        return NULL;
    }
    sendreq = (mca_pml_mdq_send_request_t *) opal_free_list_get(&mca_pml_base_send_requests);
    if (OPAL_UNLIKELY(NULL == sendreq)) {
        return NULL;
    }
    sendreq->req_send.req_base.req_proc = proc;
    sendreq->released = 0;
    sendreq->seq_set = false;
    return sendreq;
}

static void mdq_fill_match(mdq_hdr_match_t *m, mca_pml_mdq_send_request_t *sendreq)
{
    ompi_communicator_t *comm = sendreq->req_send.req_base.req_comm;
    m->cid = comm->c_contextid;
    m->src = comm->c_my_rank;
    m->tag = sendreq->req_send.req_base.req_tag;
    m->seq = sendreq->seq;
    m->flags = 0;
}

/* Zero-byte requests have an unprepared convertor (the base macros skip
 * it): only rewind when there is data. */
static void mdq_rewind(opal_convertor_t *conv, size_t pos)
{
    size_t p = pos;
    if (0 == conv->local_size || NULL == conv->pDesc) {
        return;
    }
    opal_convertor_set_position(conv, &p);
}

/* A contiguous payload of size bytes that the BTL would copy with the C
 * library's memcpy, which is slow here at the distances ompi_scale_copy
 * avoids: mdq copies it into a btl_alloc descriptor itself (the BTL's own
 * copy in sendi or prepare_src cannot be steered). Same work otherwise. */
static inline bool mdq_copy_ourselves(bool contig, size_t size)
{
    return contig && size >= OMPI_SCALE_COPY_GUARD_MIN && ompi_scale_copy_user_slow();
}

/* An eager message the BTL queued has left: its request may complete. */
static void mdq_eager_sent(mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *ep,
                           mca_btl_base_descriptor_t *des, int status)
{
    (void) btl;
    (void) ep;
    if (OPAL_UNLIKELY(OPAL_SUCCESS != status)) {
        mca_pml_mdq_fatal(status, "a BTL lost a message");
    }
    mca_pml_mdq_send_request_event_done((mca_pml_mdq_send_request_t *) des->des_cbdata);
}

/* a descriptor of mdq_send_copied without a request is back from the BTL */
static void mdq_copied_sent(mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *ep,
                            mca_btl_base_descriptor_t *des, int status)
{
    OPAL_THREAD_ADD_FETCH32(&mca_pml_mdq.copied_in_flight, -1);
    mca_pml_mdq_des_sent(btl, ep, des, status);
}

/* Header and payload copied into one descriptor from btl_alloc and sent:
 * the data is out of the user's buffer when this returns. The payload
 * comes from conv (packed; a contiguous one is copied straight from its
 * current position) or, when conv is NULL, from data (contiguous).
 * With an owner, the request also waits for the BTL's completion callback,
 * as ob1's requests do: a BTL may only queue the descriptor (tcp before its
 * connection is up), and nothing would push it out if the process next
 * blocks outside MPI's progress (MPI_Comm_disconnect's fence on a spawned
 * job's communicator). vader calls back once the receiver has returned the
 * fragment. Requests take this path where the BTL has no send-immediate
 * (tcp), where it refused, or where the copy guard chose it. */
static int mdq_send_copied(mca_bml_base_btl_t *bml_btl, const void *hdr, size_t hsize,
                           opal_convertor_t *conv, const void *data, size_t size, uint8_t tag,
                           mca_pml_mdq_send_request_t *owner)
{
    mca_btl_base_module_t *btl = bml_btl->btl;
    mca_btl_base_descriptor_t *des;
    uint32_t flags = MDQ_SEND_FLAGS | (NULL != owner ? MCA_BTL_DES_SEND_ALWAYS_CALLBACK : 0);
    unsigned char *dst;
    int rc;

    if (size > 0 && NULL != conv && !opal_convertor_need_buffers(conv)) {
        void *cur = NULL;
        opal_convertor_get_current_pointer(conv, &cur);
        data = cur;
        conv = NULL;
    }

    des = btl->btl_alloc(btl, bml_btl->btl_endpoint, MCA_BTL_NO_ORDER, hsize + size, flags);
    if (OPAL_UNLIKELY(NULL == des)) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    dst = (unsigned char *) des->des_segments[0].seg_addr.pval;
    memcpy(dst, hdr, hsize);
    if (size > 0 && NULL != conv) {
        struct iovec iov = {.iov_base = dst + hsize, .iov_len = size};
        uint32_t iov_count = 1;
        size_t max_data = size;
        (void) opal_convertor_pack(conv, &iov, &iov_count, &max_data);
    } else if (size > 0) {
        ompi_scale_copy(dst + hsize, data, size);
    }
    des->des_segments[0].seg_len = hsize + size;
    if (NULL != owner) {
        des->des_cbfunc = mdq_eager_sent;
        des->des_cbdata = owner;
        OPAL_THREAD_ADD_FETCH32(&owner->events, 1);
    } else {
        des->des_cbfunc = mdq_copied_sent; /* some BTLs (tcp) always call it */
        OPAL_THREAD_ADD_FETCH32(&mca_pml_mdq.copied_in_flight, 1);
    }
    MDQ_VERBOSE(20, "pml:mdq: %zu bytes (tag %u) copied into a descriptor", hsize + size,
                (unsigned) tag);
    rc = mca_bml_base_send(bml_btl, des, tag);
    if (NULL == owner && (rc < 0 || 1 == rc)) {
        /* no callback will come (1: sent at once, and not asked to call back) */
        OPAL_THREAD_ADD_FETCH32(&mca_pml_mdq.copied_in_flight, -1);
    }
    if (OPAL_UNLIKELY(rc < 0)) {
        if (NULL != owner) {
            OPAL_THREAD_ADD_FETCH32(&owner->events, -1);
        }
        mca_bml_base_free(bml_btl, des);
    }
    return mca_pml_mdq_send_rc(rc, "a BTL refused a message");
}

/* eager and eager-sync: header and whole payload in one BTL message */
static int mdq_send_eager(mca_pml_mdq_send_request_t *sendreq)
{
    opal_convertor_t *conv = &sendreq->req_send.req_base.req_convertor;
    mca_bml_base_btl_t *bml_btl = mca_bml_base_btl_array_get_next(&sendreq->ep->btl_eager);
    mca_btl_base_module_t *btl = bml_btl->btl;
    size_t size = sendreq->req_send.req_bytes_packed;
    union {
        mdq_hdr_match_t m;
        mdq_hdr_sync_t s;
    } hdr;
    size_t hsize;
    int rc;

    mdq_fill_match(&hdr.m, sendreq);
    if (MDQ_TAG_EAGER_SYNC == sendreq->protocol) {
        hdr.s.sreq = mdq_ptr_to_u64(sendreq);
        hsize = sizeof(mdq_hdr_sync_t);
    } else {
        hsize = sizeof(mdq_hdr_match_t);
    }

    if (NULL != btl->btl_sendi && !mdq_copy_ourselves(sendreq->contig, size)) {
        rc = btl->btl_sendi(btl, bml_btl->btl_endpoint, size ? conv : NULL, &hdr, hsize, size,
                            MCA_BTL_NO_ORDER, MDQ_SEND_FLAGS, sendreq->protocol, NULL);
        if (OPAL_LIKELY(OPAL_SUCCESS == rc)) {
            goto sent;
        }
        if (size > 0) {
            mdq_rewind(conv, 0);
        }
    }

    rc = mdq_send_copied(bml_btl, &hdr, hsize, conv, NULL, size, sendreq->protocol, sendreq);
    if (OPAL_UNLIKELY(OMPI_SUCCESS != rc)) {
        if (size > 0) {
            mdq_rewind(conv, 0);
        }
        return rc;
    }
sent:
    OPAL_THREAD_ADD_FETCH64((volatile int64_t *) &mca_pml_mdq.counters.eager, 1);
    return OMPI_SUCCESS;
}

/* RTS: announces the message; offers the registered buffer for RGET when
 * the data is contiguous and the BTL that carries the RTS can get. */
static int mdq_send_rts(mca_pml_mdq_send_request_t *sendreq)
{
    opal_convertor_t *conv = &sendreq->req_send.req_base.req_convertor;
    mca_bml_base_btl_t *bml_btl = mca_bml_base_btl_array_get_next(&sendreq->ep->btl_eager);
    mca_btl_base_module_t *btl = bml_btl->btl;
    mca_bml_base_btl_t *rdma = mca_pml_mdq_rget_btl(sendreq, btl);
    union {
        mdq_hdr_rts_t r;
        unsigned char raw[MDQ_HDR_MAX_MATCHED];
    } hdr;
    size_t hsize = sizeof(mdq_hdr_rts_t);
    int rc;

    mdq_fill_match(&hdr.r.m, sendreq);
    hdr.r.sreq = mdq_ptr_to_u64(sendreq);
    hdr.r.length = sendreq->req_send.req_bytes_packed;
    hdr.r.addr = 0;
    hdr.r.hlen = 0;
    hdr.r.pad = 0;
    if (sendreq->contig) {
        hdr.r.m.flags |= MDQ_HDR_F_CONTIG;
    }

    if (sendreq->pipe) {
        hdr.r.m.flags |= MDQ_HDR_F_PIPE;
    } else if (NULL != rdma) {
        void *base = NULL;
        size_t hlen = 0;
        opal_convertor_get_current_pointer(conv, &base);
        if (NULL != btl->btl_register_mem && NULL == sendreq->local_handle) {
            mca_bml_base_register_mem(rdma, base, hdr.r.length, MCA_BTL_REG_FLAG_REMOTE_READ,
                                      &sendreq->local_handle);
            sendreq->rdma_btl = rdma;
        }
        if (NULL != btl->btl_register_mem) {
            hlen = btl->btl_registration_handle_size;
        }
        if ((NULL == btl->btl_register_mem || NULL != sendreq->local_handle)
            && hlen <= MDQ_MAX_HANDLE) {
            hdr.r.m.flags |= MDQ_HDR_F_GET;
            hdr.r.addr = mdq_ptr_to_u64(base);
            hdr.r.hlen = (uint32_t) hlen;
            if (hlen > 0) {
                memcpy(hdr.raw + sizeof(mdq_hdr_rts_t), sendreq->local_handle, hlen);
            }
            hsize += hlen;
        }
    }

    if (NULL != btl->btl_sendi) {
        rc = btl->btl_sendi(btl, bml_btl->btl_endpoint, NULL, &hdr, hsize, 0, MCA_BTL_NO_ORDER,
                            MDQ_SEND_FLAGS, MDQ_TAG_RTS, NULL);
        if (OPAL_LIKELY(OPAL_SUCCESS == rc)) {
            return OMPI_SUCCESS;
        }
    }
    return mdq_send_copied(bml_btl, &hdr, hsize, NULL, NULL, 0, MDQ_TAG_RTS, NULL);
}

static void mdq_frag_sent(mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *ep,
                          mca_btl_base_descriptor_t *des, int status)
{
    mca_pml_mdq_send_request_t *sendreq = (mca_pml_mdq_send_request_t *) des->des_cbdata;
    (void) btl;
    (void) ep;
    if (OPAL_UNLIKELY(OPAL_SUCCESS != status)) {
        mca_pml_mdq_fatal(status, "a BTL lost a message fragment");
    }
    OPAL_THREAD_ADD_FETCH32(&sendreq->outstanding, -1);
    if (sendreq->offset < sendreq->length) {
        mca_pml_mdq_send_request_schedule(sendreq);
    }
    mca_pml_mdq_send_request_event_done(sendreq);
}

/* header of the data piece at sendreq->offset: a pipeline fragment, or the
 * first / a continuation piece of a medium message. Returns its size. */
static size_t mdq_piece_header(mca_pml_mdq_send_request_t *sendreq, void *buf, uint8_t *tag)
{
    if (MDQ_TAG_MEDIUM != sendreq->protocol) {
        mdq_hdr_frag_t *fh = (mdq_hdr_frag_t *) buf;
        fh->rreq = sendreq->rreq;
        fh->offset = sendreq->offset;
        *tag = MDQ_TAG_FRAG;
        return sizeof(*fh);
    }
    if (0 == sendreq->offset) {
        mdq_hdr_medium_t *mh = (mdq_hdr_medium_t *) buf;
        mdq_fill_match(&mh->m, sendreq);
        if (MCA_PML_BASE_SEND_SYNCHRONOUS == sendreq->req_send.req_send_mode) {
            mh->m.flags |= MDQ_HDR_F_SYNC;
        }
        mh->sreq = mdq_ptr_to_u64(sendreq);
        mh->length = sendreq->length;
        mh->timing = sendreq->timing;
        *tag = MDQ_TAG_MEDIUM;
        return sizeof(*mh);
    }
    {
        mdq_hdr_mfrag_t *fh = (mdq_hdr_mfrag_t *) buf;
        ompi_communicator_t *comm = sendreq->req_send.req_base.req_comm;
        fh->cid = comm->c_contextid;
        fh->src = comm->c_my_rank;
        fh->sreq = mdq_ptr_to_u64(sendreq);
        fh->offset = sendreq->offset;
        fh->length = sendreq->length;
        fh->seq = sendreq->seq;
        fh->pad[0] = fh->pad[1] = fh->pad[2] = 0;
        *tag = MDQ_TAG_MFRAG;
        return sizeof(*fh);
    }
}

/* Pipeline and medium messages: stream the data in pieces of at most the
 * BTL max send size (medium: pml_mdq_medium_piece_size when set). A contiguous piece first tries btl_sendi (the BTL
 * copies it and the piece is done at once). Sets *all_scheduled when every
 * byte has been handed to a BTL. */
static int mdq_send_frags(mca_pml_mdq_send_request_t *sendreq, bool *all_scheduled)
{
    opal_convertor_t *conv = &sendreq->req_send.req_base.req_convertor;
    mca_bml_base_btl_array_t *btls = MDQ_TAG_MEDIUM == sendreq->protocol ? &sendreq->ep->btl_eager
                                                                         : &sendreq->ep->btl_send;

    while (sendreq->offset < sendreq->length) {
        mca_bml_base_btl_t *bml_btl;
        mca_btl_base_module_t *btl;
        mca_btl_base_descriptor_t *des;
        union {
            mdq_hdr_frag_t f;
            mdq_hdr_medium_t m;
            mdq_hdr_mfrag_t c;
        } hdr;
        size_t size, hsize, cap;
        uint8_t tag;
        int rc;

        if (sendreq->outstanding >= mca_pml_mdq.max_outstanding_frags) {
            return OMPI_SUCCESS; /* the completion of a fragment resumes us */
        }
        bml_btl = mca_bml_base_btl_array_get_next(btls);
        btl = bml_btl->btl;
        hsize = mdq_piece_header(sendreq, &hdr, &tag);
        size = sendreq->length - sendreq->offset;
        cap = mca_pml_mdq_medium_piece_max(btl, hsize, MDQ_TAG_FRAG == tag ? 0 : sendreq->piece);
        if (size > cap) {
            size = cap;
        }
        if (conv->bConverted != sendreq->offset) {
            mdq_rewind(conv, sendreq->offset);
        }
        des = NULL;
        if (mdq_copy_ourselves(sendreq->contig, size)) {
            void *src = NULL;
            opal_convertor_get_current_pointer(conv, &src);
            /* NULL also where the BTL gives large buffers only through
             * prepare_src (vader with XPMEM): its own copy then */
            mca_bml_base_alloc(bml_btl, &des, MCA_BTL_NO_ORDER, hsize + size,
                               MCA_BTL_DES_FLAGS_BTL_OWNERSHIP | MCA_BTL_DES_SEND_ALWAYS_CALLBACK);
            if (NULL != des) {
                ompi_scale_copy((unsigned char *) des->des_segments[0].seg_addr.pval + hsize, src,
                                size);
                des->des_segments[0].seg_len = hsize + size;
            }
        }
        if (NULL == des) {
            if (MDQ_TAG_FRAG != tag && sendreq->contig && NULL != btl->btl_sendi) {
                rc = btl->btl_sendi(btl, bml_btl->btl_endpoint, conv, &hdr, hsize, size,
                                    MCA_BTL_NO_ORDER, MDQ_SEND_FLAGS, tag, NULL);
                if (OPAL_LIKELY(OPAL_SUCCESS == rc)) {
                    sendreq->offset += size;
                    continue;
                }
                mdq_rewind(conv, sendreq->offset);
            }
            mca_bml_base_prepare_src(bml_btl, conv, MCA_BTL_NO_ORDER, hsize, &size,
                                     MCA_BTL_DES_FLAGS_BTL_OWNERSHIP
                                         | MCA_BTL_DES_SEND_ALWAYS_CALLBACK,
                                     &des);
            if (OPAL_UNLIKELY(NULL == des)) {
                return OMPI_ERR_OUT_OF_RESOURCE;
            }
        }
        memcpy(des->des_segments[0].seg_addr.pval, &hdr, hsize);
        des->des_cbfunc = mdq_frag_sent;
        des->des_cbdata = sendreq;
        OPAL_THREAD_ADD_FETCH32(&sendreq->outstanding, 1);
        OPAL_THREAD_ADD_FETCH32(&sendreq->events, 1);
        sendreq->offset += size;
        rc = mca_bml_base_send(bml_btl, des, tag);
        if (OPAL_UNLIKELY(rc < 0)) {
            sendreq->offset -= size;
            OPAL_THREAD_ADD_FETCH32(&sendreq->outstanding, -1);
            OPAL_THREAD_ADD_FETCH32(&sendreq->events, -1);
            mca_bml_base_free(bml_btl, des);
            mdq_rewind(conv, sendreq->offset);
            return mca_pml_mdq_send_rc(rc, "a BTL refused a message fragment");
        }
    }
    *all_scheduled = true;
    return OMPI_SUCCESS;
}

/* RPUT finished (all puts done and scheduling over): tell the receiver */
static void mdq_puts_finished(mca_pml_mdq_send_request_t *sendreq)
{
    mdq_hdr_fin_t fin = {.rreq = sendreq->rreq, .bytes = sendreq->length};
    mca_bml_base_btl_t *ctl = mca_bml_base_btl_array_find(&sendreq->ep->btl_eager,
                                                          sendreq->rdma_btl->btl);
    /* same BTL as the data so the FIN cannot overtake it */
    if (NULL == ctl) {
        ctl = mca_bml_base_btl_array_find(&sendreq->ep->btl_send, sendreq->rdma_btl->btl);
    }
    mca_pml_mdq_send_ctl(sendreq->ep, ctl, MDQ_TAG_FIN, &fin, sizeof(fin));
    OPAL_THREAD_ADD_FETCH64((volatile int64_t *) &mca_pml_mdq.counters.rput, 1);
    mca_pml_mdq_send_request_event_done(sendreq);
}

static void mdq_put_done(mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *ep,
                         void *local_address, mca_btl_base_registration_handle_t *local_handle,
                         void *context, void *cbdata, int status)
{
    mca_pml_mdq_send_request_t *sendreq = (mca_pml_mdq_send_request_t *) cbdata;
    (void) btl;
    (void) ep;
    (void) local_address;
    (void) local_handle;
    (void) context;
    if (OPAL_UNLIKELY(OPAL_SUCCESS != status)) {
        mca_pml_mdq_fatal(status, "an RDMA put failed");
    }
    if (0 == OPAL_THREAD_ADD_FETCH32(&sendreq->rdma_pending, -1)) {
        mdq_puts_finished(sendreq);
    }
}

/* start of the data of a contiguous send */
static char *mdq_send_base(mca_pml_mdq_send_request_t *sendreq)
{
    char *base = NULL;
    opal_convertor_get_current_pointer(&sendreq->req_send.req_base.req_convertor, (void **) &base);
    return base - sendreq->req_send.req_base.req_convertor.bConverted;
}

static int mdq_send_puts(mca_pml_mdq_send_request_t *sendreq, bool *all_scheduled)
{
    mca_bml_base_btl_t *rdma = sendreq->rdma_btl;
    mca_btl_base_module_t *btl = rdma->btl;
    char *base = mdq_send_base(sendreq);
    if (NULL != btl->btl_register_mem && NULL == sendreq->local_handle
        && sendreq->length >= btl->btl_put_local_registration_threshold) {
        mca_bml_base_register_mem(rdma, base, sendreq->length, 0, &sendreq->local_handle);
        if (NULL == sendreq->local_handle) {
            return OMPI_ERR_OUT_OF_RESOURCE;
        }
    }
    while (sendreq->offset < sendreq->length) {
        size_t size = sendreq->length - sendreq->offset;
        int rc;
        if (size > btl->btl_put_limit) {
            size = btl->btl_put_limit;
        }
        OPAL_THREAD_ADD_FETCH32(&sendreq->rdma_pending, 1);
        rc = mca_bml_base_put(rdma, base + sendreq->offset, sendreq->remote_addr + sendreq->offset,
                              sendreq->local_handle,
                              (mca_btl_base_registration_handle_t *) sendreq->remote_handle, size, 0,
                              MCA_BTL_NO_ORDER, mdq_put_done, sendreq);
        if (OPAL_UNLIKELY(OPAL_SUCCESS != rc)) {
            OPAL_THREAD_ADD_FETCH32(&sendreq->rdma_pending, -1);
            if (mca_pml_mdq_btl_busy(rc)) {
                return OMPI_ERR_OUT_OF_RESOURCE;
            }
            mca_pml_mdq_fatal(rc, "an RDMA put failed to start");
        }
        sendreq->offset += size;
    }
    *all_scheduled = true;
    return OMPI_SUCCESS;
}

/* Runs the request's pending step; the caller holds the scheduling guard
 * (sched >= 1). Re-entrant calls (a BTL may deliver the peer's CTS or
 * complete a fragment inside our own send call, e.g. btl/self) are folded
 * into the running one, which then loops. Each phase that finishes releases
 * its token after the loop. When a BTL is out of resources the request is
 * listed for retry from progress and keeps the guard. */
static void mdq_schedule_held(mca_pml_mdq_send_request_t *sendreq)
{
    int tokens = 0;
    bool puts_done = false;
    int32_t prev;

    do {
        int rc = OMPI_SUCCESS;
        bool done = false;
        prev = sendreq->sched;
        switch (sendreq->pending_op) {
        case MDQ_PENDING_START:
            /* cleared first: a CTS may arrive (and set the next phase)
             * before the send call returns */
            sendreq->pending_op = MDQ_PENDING_NONE;
            rc = (MDQ_TAG_RTS == sendreq->protocol) ? mdq_send_rts(sendreq)
                                                    : mdq_send_eager(sendreq);
            if (OMPI_SUCCESS == rc) {
                tokens++;
            } else {
                sendreq->pending_op = MDQ_PENDING_START;
            }
            break;
        case MDQ_PENDING_FRAGS:
            rc = mdq_send_frags(sendreq, &done);
            if (done) {
                sendreq->pending_op = MDQ_PENDING_NONE;
                tokens++;
            }
            break;
        case MDQ_PENDING_PUTS:
            rc = mdq_send_puts(sendreq, &done);
            if (done) {
                sendreq->pending_op = MDQ_PENDING_NONE;
                puts_done = true;
            }
            break;
        default:
            break;
        }
        if (OMPI_ERR_OUT_OF_RESOURCE == rc) {
            mca_pml_mdq_send_request_defer(sendreq);   /* keeps the guard */
            break;
        }
    } while (OPAL_THREAD_ADD_FETCH32(&sendreq->sched, -prev) > 0);

    if (puts_done && 0 == OPAL_THREAD_ADD_FETCH32(&sendreq->rdma_pending, -1)) {
        /* the scheduling reference of the RDMA counter was the last one */
        mdq_puts_finished(sendreq);
    }
    while (tokens-- > 0) {
        mca_pml_mdq_send_request_event_done(sendreq);
    }
}

void mca_pml_mdq_send_request_schedule(mca_pml_mdq_send_request_t *sendreq)
{
    if (OPAL_THREAD_ADD_FETCH32(&sendreq->sched, 1) == 1) {
        mdq_schedule_held(sendreq);
    }
}

void mca_pml_mdq_send_request_resume(mca_pml_mdq_send_request_t *sendreq)
{
    mdq_schedule_held(sendreq);
}

/* A buffered send's data, packed into the attached buffer; the convertor
 * then reads the packed copy. Not mca_pml_base_bsend_request_start: in Open
 * MPI 4.1 it counts the pending buffered sends outside its lock, and
 * concurrent MPI_Bsend calls lost counts, so that MPI_Buffer_detach waited
 * forever (MPICH threads/pt2pt mt_bsendrecv, 1 run in 2). request_alloc
 * counts under the lock; request_fini releases either way. */
static int mdq_bsend_pack(mca_pml_mdq_send_request_t *sendreq)
{
    mca_pml_base_send_request_t *base = &sendreq->req_send;
    opal_convertor_t *conv = &base->req_base.req_convertor;
    if (0 == base->req_bytes_packed) {
        return OMPI_SUCCESS;
    }
    int rc = mca_pml_base_bsend_request_alloc((ompi_request_t *) sendreq);
    if (OMPI_SUCCESS != rc) {
        return rc;
    }
    struct iovec iov = { .iov_base = (void *) base->req_addr, .iov_len = base->req_bytes_packed };
    uint32_t iov_count = 1;
    size_t max_data = iov.iov_len;
    if (opal_convertor_pack(conv, &iov, &iov_count, &max_data) < 0) {
        mca_pml_base_bsend_request_fini((ompi_request_t *) sendreq);
        return OMPI_ERROR;
    }
    opal_convertor_prepare_for_send(conv, &ompi_mpi_packed.dt.super, max_data, base->req_addr);
    return OMPI_SUCCESS;
}

int mca_pml_mdq_send_request_start(mca_pml_mdq_send_request_t *sendreq)
{
    ompi_communicator_t *comm = sendreq->req_send.req_base.req_comm;
    mca_pml_mdq_comm_t *mc = mca_pml_mdq_comm_of(comm);
    mca_pml_mdq_peer_t *peer = NULL;
    mca_bml_base_btl_t *bml_btl;
    size_t size, hsize;
    bool sync = MCA_PML_BASE_SEND_SYNCHRONOUS == sendreq->req_send.req_send_mode;
    int rc;

    MCA_PML_BASE_SEND_START(&sendreq->req_send);
    sendreq->req_send.req_base.req_ompi.req_status.MPI_ERROR = OMPI_SUCCESS;
    sendreq->ep = mca_bml_base_get_endpoint(sendreq->req_send.req_base.req_proc);
    if (OPAL_UNLIKELY(NULL == sendreq->ep || NULL == mc)) {
        return OMPI_ERR_UNREACH;
    }
    if (!sendreq->seq_set) {
        /* before packing a buffered send: a failure here must not leave
         * the attached buffer's space taken */
        peer = mca_pml_mdq_peer_get(mc, sendreq->req_send.req_base.req_peer);
        if (OPAL_UNLIKELY(NULL == peer)) {
            return OMPI_ERR_OUT_OF_RESOURCE;
        }
    }
    if (MCA_PML_BASE_SEND_BUFFERED == sendreq->req_send.req_send_mode) {
        if (sendreq->req_send.req_base.req_ompi.req_persistent
            && sendreq->req_send.req_bytes_packed > 0) {
            /* the previous round pointed the convertor at the attached buffer */
            opal_convertor_copy_and_prepare_for_send(
                sendreq->req_send.req_base.req_proc->super.proc_convertor,
                &sendreq->req_send.req_base.req_datatype->super,
                sendreq->req_send.req_base.req_count, sendreq->req_send.req_base.req_addr, 0,
                &sendreq->req_send.req_base.req_convertor);
        }
        /* before taking a sequence number: a full attached buffer fails the
         * call (MPI_ERR_BUFFER through the error handler) and must not leave
         * a gap in the peer's sequence */
        rc = mdq_bsend_pack(sendreq);
        if (OMPI_SUCCESS != rc) {
            return rc;
        }
    }

    if (!sendreq->seq_set) {
        sendreq->seq = (uint16_t) (OPAL_THREAD_ADD_FETCH32(&peer->send_seq, 1) - 1);
    }
    sendreq->seq_set = false;
    if (sendreq->req_send.req_base.req_ompi.req_persistent) {
        /* after the last failure return: a round that failed to start
         * leaves the PML side done */
        mdq_request_round_start(&sendreq->req_send.req_base);
    } /* else 0 since the allocation */

    size = sendreq->req_send.req_bytes_packed;
    sendreq->contig = !opal_convertor_need_buffers(&sendreq->req_send.req_base.req_convertor);
    sendreq->local_handle = NULL;
    sendreq->rdma_btl = NULL;
    sendreq->offset = 0;
    sendreq->length = size;
    sendreq->outstanding = 0;
    sendreq->rdma_pending = 0;
    sendreq->sched = 0;
    sendreq->pending_op = MDQ_PENDING_START;
    sendreq->piece = 0;
    sendreq->timing = 0;
    sendreq->pipe = false;

    bml_btl = mca_bml_base_btl_array_get_index(&sendreq->ep->btl_eager, 0);
    hsize = sync ? sizeof(mdq_hdr_sync_t) : sizeof(mdq_hdr_match_t);
    if (size + hsize <= bml_btl->btl->btl_eager_limit) {
        sendreq->protocol = sync ? MDQ_TAG_EAGER_SYNC : MDQ_TAG_EAGER;
        sendreq->events = sync ? 2 : 1;
    } else if (size <= mca_pml_mdq_medium_limit(bml_btl->btl)) {
        /* pieces without handshake; the scheduling token is released when
         * every piece is out, a synchronous send also waits for the ACK */
        sendreq->protocol = MDQ_TAG_MEDIUM;
        sendreq->pending_op = MDQ_PENDING_FRAGS;
        sendreq->events = sync ? 2 : 1;
        sendreq->piece = (size_t) mca_pml_mdq.medium_piece;
        OPAL_THREAD_ADD_FETCH64((volatile int64_t *) &mca_pml_mdq.counters.medium, 1);
    } else if (mca_pml_mdq_adapt_copy(sendreq, bml_btl, size)) {
        if (size > (size_t) mca_pml_mdq.adaptive_copy_max) {
            /* a rendezvous streamed in fragments, chosen over RGET */
            sendreq->protocol = MDQ_TAG_RTS;
            sendreq->pipe = true;
            sendreq->events = 2; /* scheduling token + CTS */
        } else {
            /* a medium message in pieces, chosen over RGET */
            sendreq->protocol = MDQ_TAG_MEDIUM;
            sendreq->pending_op = MDQ_PENDING_FRAGS;
            sendreq->events = sync ? 2 : 1;
            sendreq->piece = (size_t) mca_pml_mdq.adaptive_copy_piece;
            OPAL_THREAD_ADD_FETCH64((volatile int64_t *) &mca_pml_mdq.counters.medium, 1);
        }
        OPAL_THREAD_ADD_FETCH64((volatile int64_t *) &mca_pml_mdq.counters.adaptive_copy, 1);
    } else {
        sendreq->protocol = MDQ_TAG_RTS;
        sendreq->events = 2; /* scheduling token + ACK or CTS */
    }

    if (MCA_PML_BASE_SEND_BUFFERED == sendreq->req_send.req_send_mode) {
        /* the data is in the attached buffer: the user's request is done */
        ompi_request_complete(&sendreq->req_send.req_base.req_ompi, true);
    }
    mca_pml_mdq_send_request_schedule(sendreq);
    return OMPI_SUCCESS;
}

/* ---- control messages addressed to a send request ---- */

void mca_pml_mdq_cb_ack(mca_btl_base_module_t *btl, mca_btl_base_tag_t tag,
                        mca_btl_base_descriptor_t *des, void *cbdata)
{
    const mdq_hdr_ack_t *ack = (const mdq_hdr_ack_t *) des->des_segments[0].seg_addr.pval;
    mca_pml_mdq_send_request_t *sendreq = mdq_u64_to_ptr(ack->sreq);
    (void) btl;
    (void) tag;
    (void) cbdata;
    if (MDQ_TAG_RTS == sendreq->protocol) {
        mca_pml_mdq_adapt_rget_done(sendreq); /* the receiver finished its RGET */
    }
    mca_pml_mdq_send_request_event_done(sendreq);
}

void mca_pml_mdq_cb_cts(mca_btl_base_module_t *btl, mca_btl_base_tag_t tag,
                        mca_btl_base_descriptor_t *des, void *cbdata)
{
    const mdq_hdr_cts_t *cts = (const mdq_hdr_cts_t *) des->des_segments[0].seg_addr.pval;
    mca_pml_mdq_send_request_t *sendreq = mdq_u64_to_ptr(cts->sreq);
    (void) tag;
    (void) cbdata;

    if (!sendreq->pipe || cts->length < sendreq->req_send.req_bytes_packed) {
        /* the receiver turned an RGET down, or takes fewer bytes than were
         * timed (truncation): nothing to learn */
        sendreq->timing = 0;
    }
    /* the receiver does not need the RGET registration */
    if (NULL != sendreq->local_handle) {
        mca_bml_base_deregister_mem(sendreq->rdma_btl, sendreq->local_handle);
        sendreq->local_handle = NULL;
    }
    sendreq->rreq = cts->rreq;
    sendreq->length = cts->length;
    sendreq->offset = 0;
    sendreq->rdma_btl = NULL;
    if (0 != cts->addr) {
        mca_bml_base_btl_t *rdma = mca_bml_base_btl_array_find(&sendreq->ep->btl_rdma, btl);
        if (NULL != rdma && (rdma->btl_flags & MCA_BTL_FLAGS_PUT)
            && cts->hlen <= MDQ_MAX_HANDLE) {
            if (mca_pml_mdq_rdma_copy_slow(btl, cts->addr,
                                           mdq_ptr_to_u64(mdq_send_base(sendreq)), cts->length)) {
                /* the put's copy would run at a slow distance: stream instead */
                OPAL_THREAD_ADD_FETCH64((volatile int64_t *) &mca_pml_mdq.counters.rdma_rerouted,
                                        1);
            } else {
                sendreq->rdma_btl = rdma;
                sendreq->remote_addr = cts->addr;
                memcpy(sendreq->remote_handle, cts + 1, cts->hlen);
                sendreq->rdma_pending = 1; /* scheduling reference */
                sendreq->pending_op = MDQ_PENDING_PUTS;
            }
        }
    }
    if (NULL == sendreq->rdma_btl) {
        /* pipeline (requested, or we cannot put over that BTL: the receiver
         * accepts fragments in either case) */
        if (0 != cts->addr) {
            OPAL_THREAD_ADD_FETCH64((volatile int64_t *) &mca_pml_mdq.counters.pipeline, 1);
        }
        sendreq->pending_op = MDQ_PENDING_FRAGS;
    }
    /* the CTS event becomes the scheduling token of this phase */
    mca_pml_mdq_send_request_schedule(sendreq);
}

/* ---- MPI entry points ---- */

static inline int mdq_isend_prepare(const void *buf, size_t count, ompi_datatype_t *datatype,
                                    int dst, int tag, mca_pml_base_send_mode_t mode,
                                    ompi_communicator_t *comm, bool persistent,
                                    mca_pml_mdq_send_request_t **out)
{
    mca_pml_mdq_send_request_t *sendreq = mca_pml_mdq_send_request_alloc(comm, dst);
    if (OPAL_UNLIKELY(NULL == sendreq)) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    MCA_PML_BASE_SEND_REQUEST_INIT(&sendreq->req_send, buf, count, datatype, dst, tag, comm, mode,
                                   persistent, 0);
    *out = sendreq;
    return OMPI_SUCCESS;
}

int mca_pml_mdq_isend_init(const void *buf, size_t count, ompi_datatype_t *datatype, int dst,
                           int tag, mca_pml_base_send_mode_t mode, ompi_communicator_t *comm,
                           ompi_request_t **request)
{
    mca_pml_mdq_send_request_t *sendreq;
    int rc = mdq_isend_prepare(buf, count, datatype, dst, tag, mode, comm, true, &sendreq);
    if (OMPI_SUCCESS != rc) {
        return rc;
    }
    /* inactive persistent requests may be freed at once */
    sendreq->req_send.req_base.req_pml_complete = true;
    sendreq->released = 1; /* the PML side is done */
    *request = &sendreq->req_send.req_base.req_ompi;
    return OMPI_SUCCESS;
}

/* Contiguous standard sends that fit one BTL message (eager, or a medium
 * message of one piece) go out with btl_sendi, or copied into a descriptor
 * when sendi refuses (the BTL has sends queued), and need no request.
 * Inlined into isend and send, whose fast path then makes no call of its
 * own (about 30 instructions fewer per 8 B message on a sending rank in a
 * bandwidth stream, callgrind; docs/bench-pt2pt.md, session 30). */
static inline __attribute__((always_inline)) int
mdq_send_inline(const void *buf, size_t count, ompi_datatype_t *datatype, int dst, int tag,
                ompi_communicator_t *comm, uint16_t *seq_out)
{
    mca_pml_mdq_comm_t *mc = mca_pml_mdq_comm_of(comm);
    ompi_proc_t *proc;
    mca_bml_base_endpoint_t *ep;
    mca_bml_base_btl_t *bml_btl;
    mca_btl_base_module_t *btl;
    mca_pml_mdq_peer_t *peer;
    /* header built in place: copying a header written field by field as one
     * wide load stalls store forwarding */
    union {
        mdq_hdr_match_t m;
        mdq_hdr_medium_t md;
        unsigned char raw[sizeof(mdq_hdr_match_t) + MDQ_INLINE_COPY_MAX];
    } hdr;
    size_t hsize = sizeof(mdq_hdr_match_t);
    uint8_t proto = MDQ_TAG_EAGER;
    opal_convertor_t conv;
    const char *data;
    size_t size;
    int rc;

    if (!ompi_datatype_is_contiguous_memory_layout(datatype, count)) {
        return OMPI_ERR_NOT_AVAILABLE;
    }
    size = datatype->super.size * count;
    proc = ompi_comm_peer_lookup(comm, dst);
    if (OPAL_UNLIKELY(NULL == proc || NULL == mc)) {
        return OMPI_ERR_NOT_AVAILABLE;
    }
    ep = mca_bml_base_get_endpoint(proc);
    if (OPAL_UNLIKELY(NULL == ep)) {
        return OMPI_ERR_NOT_AVAILABLE;
    }
    bml_btl = mca_bml_base_btl_array_get_next(&ep->btl_eager);
    btl = bml_btl->btl;
    if (NULL == btl->btl_sendi) {
        return OMPI_ERR_NOT_AVAILABLE;
    }
    if (size + hsize > btl->btl_eager_limit) {
        if (size > mca_pml_mdq_medium_limit(btl)
            || size > mca_pml_mdq_medium_piece_max(btl, sizeof(mdq_hdr_medium_t),
                                                   (size_t) mca_pml_mdq.medium_piece)) {
            return OMPI_ERR_NOT_AVAILABLE;
        }
        /* one-piece medium: the message id is only needed for several pieces */
        proto = MDQ_TAG_MEDIUM;
        hsize = sizeof(mdq_hdr_medium_t);
        hdr.md.sreq = 0;
        hdr.md.length = size;
        hdr.md.timing = 0;
    }
    peer = mca_pml_mdq_peer_get(mc, dst);
    if (OPAL_UNLIKELY(NULL == peer)) {
        return OMPI_ERR_NOT_AVAILABLE;
    }
    hdr.m.cid = comm->c_contextid;
    hdr.m.src = comm->c_my_rank;
    hdr.m.tag = tag;
    hdr.m.seq = (uint16_t) (OPAL_THREAD_ADD_FETCH32(&peer->send_seq, 1) - 1);
    hdr.m.flags = 0;
    *seq_out = hdr.m.seq;
    data = (const char *) buf + datatype->super.true_lb;

    if (MDQ_TAG_EAGER == proto && size <= MDQ_INLINE_COPY_MAX) {
        /* small: header and payload as one header block, no convertor */
        ompi_scale_copy(hdr.raw + sizeof(hdr.m), data, size); /* up to 16 B without a call */
        rc = btl->btl_sendi(btl, bml_btl->btl_endpoint, NULL, &hdr, sizeof(hdr.m) + size, 0,
                            MCA_BTL_NO_ORDER, MDQ_SEND_FLAGS, MDQ_TAG_EAGER, NULL);
        if (OPAL_UNLIKELY(OPAL_SUCCESS != rc)) {
            rc = mdq_send_copied(bml_btl, &hdr, sizeof(hdr.m) + size, NULL, NULL, 0, proto, NULL);
        }
    } else if (mdq_copy_ourselves(true, size)
               && !mca_pml_mdq_vader_fbox_safe(btl, bml_btl->btl_endpoint, data, hsize, size)
               && OMPI_SUCCESS == (rc = mdq_send_copied(bml_btl, &hdr, hsize, NULL, data, size,
                                                        proto, NULL))) {
        /* sent (else the BTL's own copy below: vader with XPMEM, for
         * one, has no large buffers for btl_alloc; or vader's fast box,
         * which the copy reaches at a safe distance) */
    } else {
        OBJ_CONSTRUCT(&conv, opal_convertor_t);
        opal_convertor_copy_and_prepare_for_send(proc->super.proc_convertor, &datatype->super,
                                                 count, buf, 0, &conv);
        rc = btl->btl_sendi(btl, bml_btl->btl_endpoint, &conv, &hdr, hsize, size,
                            MCA_BTL_NO_ORDER, MDQ_SEND_FLAGS, proto, NULL);
        OBJ_DESTRUCT(&conv);
        if (OPAL_UNLIKELY(OPAL_SUCCESS != rc)) {
            rc = mdq_send_copied(bml_btl, &hdr, hsize, NULL, data, size, proto, NULL);
        }
    }
    if (OPAL_LIKELY(OPAL_SUCCESS == rc)) {
        OPAL_THREAD_ADD_FETCH64(MDQ_TAG_EAGER == proto
                                    ? (volatile int64_t *) &mca_pml_mdq.counters.eager
                                    : (volatile int64_t *) &mca_pml_mdq.counters.medium,
                                1);
        return OMPI_SUCCESS;
    }
    return OMPI_ERR_OUT_OF_RESOURCE; /* sequence number taken: caller must use it */
}

static int mdq_send_with_request(const void *buf, size_t count, ompi_datatype_t *datatype,
                                 int dst, int tag, mca_pml_base_send_mode_t mode,
                                 ompi_communicator_t *comm, int seq, ompi_request_t **request)
{
    mca_pml_mdq_send_request_t *sendreq;
    int rc = mdq_isend_prepare(buf, count, datatype, dst, tag, mode, comm, false, &sendreq);
    if (OMPI_SUCCESS != rc) {
        return rc;
    }
    if (seq >= 0) {
        sendreq->seq = (uint16_t) seq;
        sendreq->seq_set = true;
    }
    rc = mca_pml_mdq_send_request_start(sendreq);
    if (OPAL_UNLIKELY(OMPI_SUCCESS != rc)) {
        sendreq->req_send.req_base.req_pml_complete = true;
        mdq_send_request_release(sendreq);
        return rc;
    }
    *request = &sendreq->req_send.req_base.req_ompi;
    return OMPI_SUCCESS;
}

int mca_pml_mdq_isend(const void *buf, size_t count, ompi_datatype_t *datatype, int dst, int tag,
                      mca_pml_base_send_mode_t mode, ompi_communicator_t *comm,
                      ompi_request_t **request)
{
    int seq = -1;

    if (MCA_PML_BASE_SEND_STANDARD == mode || MCA_PML_BASE_SEND_READY == mode) {
        uint16_t s;
        int rc = mdq_send_inline(buf, count, datatype, dst, tag, comm, &s);
        if (OPAL_LIKELY(OMPI_SUCCESS == rc)) {
            /* only the cancelled field of a send status is meaningful */
            *request = &ompi_request_empty;
            return OMPI_SUCCESS;
        }
        if (OMPI_ERR_OUT_OF_RESOURCE == rc) {
            seq = s;
        }
    }
    return mdq_send_with_request(buf, count, datatype, dst, tag, mode, comm, seq, request);
}

int mca_pml_mdq_send(const void *buf, size_t count, ompi_datatype_t *datatype, int dst, int tag,
                     mca_pml_base_send_mode_t mode, ompi_communicator_t *comm)
{
    ompi_request_t *request = NULL;
    int seq = -1, rc;

    if (MCA_PML_BASE_SEND_STANDARD == mode || MCA_PML_BASE_SEND_READY == mode) {
        uint16_t s;
        rc = mdq_send_inline(buf, count, datatype, dst, tag, comm, &s);
        if (OPAL_LIKELY(OMPI_SUCCESS == rc)) {
            return OMPI_SUCCESS;
        }
        if (OMPI_ERR_OUT_OF_RESOURCE == rc) {
            seq = s;
        }
    }
    rc = mdq_send_with_request(buf, count, datatype, dst, tag, mode, comm, seq, &request);
    if (OMPI_SUCCESS != rc) {
        return rc;
    }
    return mca_pml_mdq_wait_and_free(request, NULL);
}
