/*
 * pml/mdq send and receive requests.
 *
 * Completion uses an event counter: a request starts with one "scheduling"
 * token plus one per expected remote event (ACK, CTS, FIN); every
 * asynchronous BTL operation adds one before it is issued and removes one
 * when it completes. The request is complete at the PML level when the
 * counter reaches zero. Release to the free list happens once both the PML
 * and the user (MPI_Request_free / wait) are done with it.
 */
#ifndef PML_MDQ_REQUEST_H
#define PML_MDQ_REQUEST_H

#include "pml_mdq.h"
#include "ompi/mca/pml/base/pml_base_recvreq.h"
#include "ompi/mca/pml/base/pml_base_sendreq.h"

BEGIN_C_DECLS

/* what a request queued on a pending list still has to do */
enum {
    MDQ_PENDING_NONE = 0,
    MDQ_PENDING_START = 1, /* send: first fragment (eager or RTS) not sent yet */
    MDQ_PENDING_FRAGS = 2, /* send: pipeline fragments */
    MDQ_PENDING_PUTS = 3,  /* send: RPUT operations */
    MDQ_PENDING_GETS = 4,  /* recv: RGET operations */
};

typedef struct mca_pml_mdq_send_request {
    mca_pml_base_send_request_t req_send;
    mca_bml_base_endpoint_t *ep;
    mca_bml_base_btl_t *rdma_btl;   /* RGET source registration / RPUT target btl */
    mca_btl_base_registration_handle_t *local_handle;
    volatile int32_t events;     /* see file comment */
    volatile int32_t released;   /* sides (PML, user) done: the one making it 2 frees */
    volatile int32_t outstanding;  /* pipeline fragments in flight */
    volatile int32_t rdma_pending; /* puts in flight + 1 while scheduling */
    volatile int32_t sched;        /* re-entrancy guard of schedule() */
    int32_t pending_op;
    bool seq_set;                   /* seq preassigned by a failed inline send */
    uint16_t seq;
    uint8_t protocol;               /* MDQ_TAG_EAGER, MDQ_TAG_EAGER_SYNC or MDQ_TAG_RTS */
    bool contig;
    bool pipe;                      /* RTS asks for the pipeline: timed as COPY (pml_mdq_adapt.c) */
    uint64_t rreq;                  /* receiver request (pipeline / RPUT) */
    uint64_t remote_addr;           /* RPUT destination */
    size_t length;                  /* bytes to deliver (receiver may accept fewer) */
    size_t offset;                  /* next byte to schedule */
    size_t piece;                   /* medium: payload bytes per piece (0: as many as fit) */
    uint64_t timing;                /* timed for the COPY/RGET choice (pml_mdq_adapt.c), or 0 */
    unsigned char remote_handle[MDQ_MAX_HANDLE];
} mca_pml_mdq_send_request_t;
OBJ_CLASS_DECLARATION(mca_pml_mdq_send_request_t);

/* A stream of receives cycles through as many requests as it keeps posted
 * (64 in a bandwidth window): every receive touches only the base request's
 * lines and the two after item, where the fields every receive uses are
 * kept, so that such a set stays in the L1 cache (the convertor is not
 * touched for contiguous data; callgrind's cache simulation counted 11 L1
 * misses per 8 B message when a receive touched 9 lines, 2.5 now, the stock
 * pml/ucx 2.9: docs/bench-pt2pt/s30/callgrind-bw8.txt) */
typedef struct mca_pml_mdq_recv_request {
    mca_pml_base_recv_request_t req_recv;
    mdq_match_item_t item;
    /* used by every receive (rdma_pending only by rendezvous, but it fills
     * the line) */
    mca_pml_mdq_comm_t *mc;
    volatile int32_t events;
    volatile int32_t released;   /* sides (PML, user) done: the one making it 2 frees */
    volatile int32_t rdma_pending; /* gets in flight + 1 while scheduling */
    int32_t pending_op;
    bool contig;                   /* contiguous: no convertor, data goes to base */
    bool prepared;                 /* the convertor was prepared: cleaned up at release */
    char *base;                    /* contiguous: first byte of the buffer */
    size_t capacity;               /* packed bytes the buffer can take */
    size_t length;                 /* bytes to receive: min(message, capacity) */
    volatile size_t received;   /* pipeline bytes so far */
    mca_btl_base_registration_handle_t *local_handle;
    size_t offset;                 /* RGET: next byte to get */
    /* rendezvous only (set before use) */
    uint64_t sreq;                 /* matched sender request */
    mca_bml_base_endpoint_t *ep;   /* matched peer */
    mca_bml_base_btl_t *rdma_btl;
    uint64_t remote_addr;
    unsigned char remote_handle[MDQ_MAX_HANDLE];
} mca_pml_mdq_recv_request_t;
OBJ_CLASS_DECLARATION(mca_pml_mdq_recv_request_t);

/* ---- completion and release, for send and receive requests ----
 * A request returns to its free list once both the PML (completion) and
 * the user (free, or the end of a blocking call) are done with it. Each
 * side adds one to its `released` count as its last access to the request,
 * and the side that makes it 2 returns it. The PML adds only after it has
 * signalled completion: from then on the user may free the request and
 * another thread take it from the list again, so nothing may read it. (A
 * flag read after the signal once returned a request that another thread
 * had already taken again: two receives shared one request, the posted
 * queue lost them, and MPICH's threads/pt2pt "threads" hung in 4 of 19 runs.)
 * A persistent request created inactive starts at 1, its PML side done;
 * each round takes one off (mdq_request_round_start). */
static inline volatile int32_t *mdq_request_released(mca_pml_base_request_t *base)
{
    if (MCA_PML_REQUEST_SEND == base->req_type) {
        return &((mca_pml_mdq_send_request_t *) base)->released;
    }
    return &((mca_pml_mdq_recv_request_t *) base)->released;
}

/* one side is done; true for the side that must return the request */
static inline bool mdq_request_side_done(mca_pml_base_request_t *base)
{
    return 2 == OPAL_THREAD_ADD_FETCH32(mdq_request_released(base), 1);
}

/* user side; true when the PML is done as well */
static inline bool mdq_request_user_done(mca_pml_base_request_t *base)
{
    base->req_free_called = true;
    return mdq_request_side_done(base);
}

/* PML side: completes the MPI request unless signal is false (buffered
 * sends completed it at start); true when the user is done as well */
static inline bool mdq_request_pml_done(mca_pml_base_request_t *base, bool signal)
{
    base->req_pml_complete = true;
    opal_atomic_wmb();
    if (signal) {
        ompi_request_complete(&base->req_ompi, true);
    }
    return mdq_request_side_done(base);
}

/* A persistent request starts a round: its PML side is busy again. One is
 * taken off atomically, not 0 stored: the previous round's PML side adds its
 * one after signalling completion, and by then the user may have restarted
 * the request from another thread. A store lost that add, a later round then
 * returned the request to its free list while the user still held it, and
 * the next round sent from a cleaned convertor (MPICH threads/pt2pt
 * mt_ssendrecv_pers_huge: a segfault in 1 of about 40 runs; the persistent
 * phase of tests/mpi/pt2pt_threads crashed in most runs). */
static inline void mdq_request_round_start(mca_pml_base_request_t *base)
{
    OPAL_THREAD_ADD_FETCH32(mdq_request_released(base), -1);
}

/* back to the free list: by the side that finished last (or by a call that
 * never handed the request to the user) */
static inline void mca_pml_mdq_request_release(mca_pml_base_request_t *base)
{
    if (MCA_PML_REQUEST_SEND == base->req_type) {
        mca_pml_mdq_send_request_t *sendreq = (mca_pml_mdq_send_request_t *) base;
        MCA_PML_BASE_SEND_REQUEST_FINI(&sendreq->req_send);
        opal_free_list_return(&mca_pml_base_send_requests, &base->req_ompi.super);
    } else {
        mca_pml_mdq_recv_request_t *recvreq = (mca_pml_mdq_recv_request_t *) base;
        /* MCA_PML_BASE_RECV_REQUEST_FINI, but the convertor (two more cache
         * lines) is cleaned only if a receive prepared it */
        OMPI_REQUEST_FINI(&base->req_ompi);
        OBJ_RELEASE(base->req_comm);
        OMPI_DATATYPE_RELEASE(base->req_datatype);
        if (recvreq->prepared) {
            opal_convertor_cleanup(&base->req_convertor);
            recvreq->prepared = false;
        }
        opal_free_list_return(&mca_pml_base_recv_requests, &base->req_ompi.super);
    }
}

/* req_free of both request kinds (MPI_Request_free, end of wait) */
static inline int mca_pml_mdq_request_free(ompi_request_t **request)
{
    mca_pml_base_request_t *base = (mca_pml_base_request_t *) *request;
    if (mdq_request_user_done(base)) {
        mca_pml_mdq_request_release(base);
    }
    *request = MPI_REQUEST_NULL;
    return OMPI_SUCCESS;
}

/* end of a blocking call: wait, copy the status, free; returns MPI_ERROR */
static inline int mca_pml_mdq_wait_and_free(ompi_request_t *request, ompi_status_public_t *status)
{
    int rc;
    ompi_request_wait_completion(request);
    if (NULL != status && MPI_STATUS_IGNORE != status) {
        OMPI_COPY_STATUS(status, request->req_status, false);
    }
    rc = request->req_status.MPI_ERROR;
    (void) mca_pml_mdq_request_free(&request);
    return rc;
}

/* ---- send side ---- */
mca_pml_mdq_send_request_t *mca_pml_mdq_send_request_alloc(ompi_communicator_t *comm, int dst);
int mca_pml_mdq_send_request_start(mca_pml_mdq_send_request_t *req);
void mca_pml_mdq_send_request_event_done(mca_pml_mdq_send_request_t *req);
void mca_pml_mdq_send_request_schedule(mca_pml_mdq_send_request_t *req);
/* a request taken off the pending list: its guard is still held */
void mca_pml_mdq_send_request_resume(mca_pml_mdq_send_request_t *req);

/* ---- receive side ---- */

/* a receive request about to be matched: fresh protocol state */
static inline void mca_pml_mdq_recv_request_reset(mca_pml_mdq_recv_request_t *req)
{
    MCA_PML_BASE_RECV_START(&req->req_recv);
    if (req->req_recv.req_base.req_ompi.req_persistent && !req->contig
        && 0 != req->req_recv.req_base.req_convertor.bConverted) {
        size_t zero = 0;
        opal_convertor_set_position(&req->req_recv.req_base.req_convertor, &zero);
    }
    if (req->req_recv.req_base.req_ompi.req_persistent) {
        mdq_request_round_start(&req->req_recv.req_base);
    } /* else 0 since the allocation */
    req->events = 1;
    req->received = 0;
    req->length = 0;
    req->offset = 0;
    req->pending_op = MDQ_PENDING_NONE;
    req->local_handle = NULL;
}

static inline mca_pml_mdq_recv_request_t *mca_pml_mdq_recv_request_alloc(void)
{
    mca_pml_mdq_recv_request_t *req =
        (mca_pml_mdq_recv_request_t *) opal_free_list_get(&mca_pml_base_recv_requests);
    if (OPAL_LIKELY(NULL != req)) {
        req->released = 0;
    }
    return req;
}

void mca_pml_mdq_recv_request_init(mca_pml_mdq_recv_request_t *req, void *buf, size_t count,
                                   ompi_datatype_t *datatype, int src, int tag,
                                   ompi_communicator_t *comm, bool persistent);
int mca_pml_mdq_recv_request_start(mca_pml_mdq_recv_request_t *req);
void mca_pml_mdq_recv_request_deliver(mca_pml_mdq_recv_request_t *req, const mca_pml_mdq_msg_t *msg);
void mca_pml_mdq_recv_request_event_done(mca_pml_mdq_recv_request_t *req);
void mca_pml_mdq_recv_request_schedule(mca_pml_mdq_recv_request_t *req);
/* matched RTS that allows RGET: issue the gets. Never blocks, never allocates
 * a request-side structure (plug point for asynchronous progress). */
int mca_pml_mdq_recv_request_start_get(mca_pml_mdq_recv_request_t *req);

/* the RDMA side of btl when the receiver may pull sendreq's data with
 * RGET over it (contiguous data, rndv protocol allowing get, a BTL that
 * gets), else NULL: the RTS offer and the COPY/RGET choice both ask */
static inline mca_bml_base_btl_t *mca_pml_mdq_rget_btl(mca_pml_mdq_send_request_t *sendreq,
                                                       mca_btl_base_module_t *btl)
{
    mca_bml_base_btl_t *rdma;
    if (!sendreq->contig
        || (MDQ_RNDV_AUTO != mca_pml_mdq.rndv_protocol
            && MDQ_RNDV_RGET != mca_pml_mdq.rndv_protocol)) {
        return NULL;
    }
    rdma = mca_bml_base_btl_array_find(&sendreq->ep->btl_rdma, btl);
    return NULL != rdma && (rdma->btl_flags & MCA_BTL_FLAGS_GET) ? rdma : NULL;
}

static inline uint64_t mdq_ptr_to_u64(const void *p)
{
    return (uint64_t) (uintptr_t) p;
}
static inline void *mdq_u64_to_ptr(uint64_t v)
{
    return (void *) (uintptr_t) v;
}

END_C_DECLS
#endif /* PML_MDQ_REQUEST_H */
