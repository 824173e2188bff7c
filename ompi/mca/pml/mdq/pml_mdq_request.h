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
    volatile int32_t released;
    volatile int32_t outstanding;  /* pipeline fragments in flight */
    volatile int32_t rdma_pending; /* puts in flight + 1 while scheduling */
    volatile int32_t sched;        /* re-entrancy guard of schedule() */
    int32_t pending_op;
    bool seq_set;                   /* seq preassigned by a failed inline send */
    uint16_t seq;
    uint8_t protocol;               /* MDQ_TAG_EAGER, MDQ_TAG_EAGER_SYNC or MDQ_TAG_RTS */
    bool contig;
    uint64_t rreq;                  /* receiver request (pipeline / RPUT) */
    uint64_t remote_addr;           /* RPUT destination */
    size_t length;                  /* bytes to deliver (receiver may accept fewer) */
    size_t offset;                  /* next byte to schedule */
    unsigned char remote_handle[MDQ_MAX_HANDLE];
} mca_pml_mdq_send_request_t;
OBJ_CLASS_DECLARATION(mca_pml_mdq_send_request_t);

typedef struct mca_pml_mdq_recv_request {
    mca_pml_base_recv_request_t req_recv;
    mdq_match_item_t item;
    mca_pml_mdq_comm_t *mc;
    volatile int32_t events;
    volatile int32_t released;
    volatile int32_t rdma_pending; /* gets in flight + 1 while scheduling */
    int32_t pending_op;
    bool contig;                   /* contiguous: no convertor, data goes to base */
    char *base;                    /* contiguous: first byte of the buffer */
    size_t capacity;               /* packed bytes the buffer can take */
    size_t length;                 /* bytes to receive: min(message, capacity) */
    volatile size_t received;   /* pipeline bytes so far */
    uint64_t sreq;                 /* matched sender request */
    mca_bml_base_endpoint_t *ep;   /* matched peer */
    mca_bml_base_btl_t *rdma_btl;
    mca_btl_base_registration_handle_t *local_handle;
    uint64_t remote_addr;
    size_t offset;                 /* RGET: next byte to get */
    unsigned char remote_handle[MDQ_MAX_HANDLE];
} mca_pml_mdq_recv_request_t;
OBJ_CLASS_DECLARATION(mca_pml_mdq_recv_request_t);

/* ---- send side ---- */
mca_pml_mdq_send_request_t *mca_pml_mdq_send_request_alloc(ompi_communicator_t *comm, int dst);
int mca_pml_mdq_send_request_start(mca_pml_mdq_send_request_t *req);
void mca_pml_mdq_send_request_event_done(mca_pml_mdq_send_request_t *req);
void mca_pml_mdq_send_request_schedule(mca_pml_mdq_send_request_t *req);

/* ---- receive side ---- */
mca_pml_mdq_recv_request_t *mca_pml_mdq_recv_request_alloc(void);
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
