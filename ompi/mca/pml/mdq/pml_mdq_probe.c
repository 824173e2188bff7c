/*
 * pml/mdq probe family: iprobe/probe look at the unexpected queue without
 * removing; improbe/mprobe remove the message and hand it to imrecv/mrecv
 * through an ompi_message_t.
 */
#include "ompi_config.h"

#include "opal/runtime/opal_progress.h"
#include "ompi/message/message.h"

#include "pml_mdq.h"
#include "pml_mdq_request.h"

#define MDQ_ITEM_TO_FRAG(it) \
    ((mca_pml_mdq_frag_t *) ((char *) (it) - offsetof(mca_pml_mdq_frag_t, item)))

static size_t mdq_frag_msg_length(const mca_pml_mdq_frag_t *frag)
{
    return MDQ_TAG_RTS == frag->type ? frag->hdr.r.length : frag->len;
}

static void mdq_status_from_frag(ompi_status_public_t *status, const mca_pml_mdq_frag_t *frag)
{
    if (MPI_STATUS_IGNORE == status) {
        return;
    }
    status->MPI_SOURCE = frag->hdr.m.src;
    status->MPI_TAG = frag->hdr.m.tag;
    /* MPI_ERROR is left alone: single-status calls do not set it */
    status->_ucount = mdq_frag_msg_length(frag);
    status->_cancelled = 0;
}

static mca_pml_mdq_frag_t *mdq_probe_once(int src, int tag, ompi_communicator_t *comm, bool remove,
                                          ompi_status_public_t *status)
{
    mca_pml_mdq_comm_t *mc = mca_pml_mdq_comm_of(comm);
    mdq_match_item_t *it;
    mca_pml_mdq_frag_t *frag = NULL;

    if (OPAL_UNLIKELY(NULL == mc)) {
        return NULL;
    }
    OPAL_THREAD_LOCK(&mc->lock);
    it = mdq_match_find_unexpected(mc->queue, src, tag, remove, NULL);
    if (NULL != it) {
        frag = MDQ_ITEM_TO_FRAG(it);
        mdq_status_from_frag(status, frag); /* under the lock: a receive may take it */
    }
    OPAL_THREAD_UNLOCK(&mc->lock);
    return frag;
}

int mca_pml_mdq_iprobe(int src, int tag, ompi_communicator_t *comm, int *matched,
                       ompi_status_public_t *status)
{
    if (NULL != mdq_probe_once(src, tag, comm, false, status)) {
        *matched = 1;
        return OMPI_SUCCESS;
    }
    opal_progress();
    *matched = NULL != mdq_probe_once(src, tag, comm, false, status);
    return OMPI_SUCCESS;
}

int mca_pml_mdq_probe(int src, int tag, ompi_communicator_t *comm, ompi_status_public_t *status)
{
    while (NULL == mdq_probe_once(src, tag, comm, false, status)) {
        opal_progress();
    }
    return OMPI_SUCCESS;
}

static int mdq_make_message(mca_pml_mdq_frag_t *frag, ompi_communicator_t *comm,
                            struct ompi_message_t **message)
{
    ompi_message_t *msg = ompi_message_alloc();
    if (OPAL_UNLIKELY(NULL == msg)) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    msg->comm = comm;
    msg->req_ptr = frag;
    msg->peer = frag->hdr.m.src;
    msg->count = mdq_frag_msg_length(frag);
    *message = msg;
    return OMPI_SUCCESS;
}

int mca_pml_mdq_improbe(int src, int tag, ompi_communicator_t *comm, int *matched,
                        struct ompi_message_t **message, ompi_status_public_t *status)
{
    mca_pml_mdq_frag_t *frag = mdq_probe_once(src, tag, comm, true, status);
    if (NULL == frag) {
        opal_progress();
        frag = mdq_probe_once(src, tag, comm, true, status);
    }
    if (NULL == frag) {
        *matched = 0;
        *message = MPI_MESSAGE_NULL;
        return OMPI_SUCCESS;
    }
    *matched = 1;
    return mdq_make_message(frag, comm, message);
}

int mca_pml_mdq_mprobe(int src, int tag, ompi_communicator_t *comm,
                       struct ompi_message_t **message, ompi_status_public_t *status)
{
    mca_pml_mdq_frag_t *frag;
    while (NULL == (frag = mdq_probe_once(src, tag, comm, true, status))) {
        opal_progress();
    }
    return mdq_make_message(frag, comm, message);
}

int mca_pml_mdq_imrecv(void *buf, size_t count, ompi_datatype_t *datatype,
                       struct ompi_message_t **message, ompi_request_t **request)
{
    ompi_message_t *msg = *message;
    mca_pml_mdq_frag_t *frag = (mca_pml_mdq_frag_t *) msg->req_ptr;
    mca_pml_mdq_recv_request_t *req = mca_pml_mdq_recv_request_alloc();
    mca_pml_mdq_msg_t m;

    if (OPAL_UNLIKELY(NULL == req)) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    mca_pml_mdq_recv_request_init(req, buf, count, datatype, frag->hdr.m.src, frag->hdr.m.tag,
                                  msg->comm, false);
    mca_pml_mdq_recv_request_reset(req);

    *request = &req->req_recv.req_base.req_ompi;
    ompi_message_return(msg);
    *message = MPI_MESSAGE_NULL;

    mca_pml_mdq_frag_to_msg(frag, &m);
    mca_pml_mdq_recv_request_deliver(req, &m);
    mca_pml_mdq_frag_release(frag);
    return OMPI_SUCCESS;
}

int mca_pml_mdq_mrecv(void *buf, size_t count, ompi_datatype_t *datatype,
                      struct ompi_message_t **message, ompi_status_public_t *status)
{
    ompi_request_t *request = NULL;
    int rc = mca_pml_mdq_imrecv(buf, count, datatype, message, &request);
    if (OPAL_UNLIKELY(OMPI_SUCCESS != rc)) {
        return rc;
    }
    return mca_pml_mdq_wait_and_free(request, status);
}
