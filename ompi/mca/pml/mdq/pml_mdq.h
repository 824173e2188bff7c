/*
 * pml/mdq: point-to-point messaging over the BML/BTL layer with a 4D
 * multidimensional matching queue (mdq_match.h) per communicator.
 *
 * Module state, per-communicator / per-peer state and shared prototypes.
 */
#ifndef PML_MDQ_H
#define PML_MDQ_H

#include "ompi_config.h"

#include "opal/class/opal_free_list.h"
#include "opal/class/opal_list.h"
#include "opal/threads/mutex.h"
#include "ompi/communicator/communicator.h"
#include "ompi/datatype/ompi_datatype.h"
#include "opal/mca/btl/base/base.h"
#include "ompi/mca/bml/bml.h"
#include "ompi/mca/pml/base/base.h"
#include "ompi/mca/pml/pml.h"

#include "ompi_scale_copy.h"
#include "ompi/proc/proc.h"
#include "ompi/request/request.h"

#include "mdq_match.h"
#include "pml_mdq_hdr.h"

BEGIN_C_DECLS

/* rendezvous protocol selection (pml_mdq_rndv_protocol) */
enum {
    MDQ_RNDV_AUTO = 0,     /* RGET when possible, else RPUT, else pipeline */
    MDQ_RNDV_RGET = 1,     /* like auto (RGET first) */
    MDQ_RNDV_RPUT = 2,     /* never RGET */
    MDQ_RNDV_PIPELINE = 3, /* send/recv fragments only */
};

/* pml_mdq_adaptive_copy: COPY or RGET above the medium limit */
enum {
    MDQ_ADAPTIVE_OFF = 0,    /* always the rendezvous (RGET when possible) */
    MDQ_ADAPTIVE_AUTO = 1,   /* measured per size class (ompi_scale_adapt.h) */
    MDQ_ADAPTIVE_ALWAYS = 2, /* always COPY up to pml_mdq_adaptive_copy_max */
};

/* most large-fragment buffers kept for reuse (one BTL piece each) */
#define MDQ_BIG_BUFFERS_MAX 16
/* smallest medium piece: a whole element of any predefined type (pml_mdq_medium_piece_size) */
#define MDQ_MEDIUM_PIECE_MIN 64

/* counters exported as MPI_T pvars */
typedef struct mca_pml_mdq_counters {
    unsigned long long eager;
    unsigned long long medium;
    unsigned long long medium_direct; /* received: pieces taken by a receive posted at the first */
    unsigned long long rget;
    unsigned long long rput;
    unsigned long long pipeline;
    unsigned long long held_ooo;   /* fragments held for sequence order */
    unsigned long long held_nocomm;/* fragments held for a not yet created communicator */
    unsigned long long adaptive_copy;  /* sent: messages above the medium limit copied in pieces */
    unsigned long long adaptive_timed; /* sent: completion times fed to the COPY/RGET choice */
    unsigned long long rdma_rerouted;  /* received: streamed instead of a slow single-copy RDMA */
} mca_pml_mdq_counters_t;

typedef struct mca_pml_mdq_module {
    mca_pml_base_module_t super;

    /* MCA parameters */
    int priority;
    int verbose;
    int rndv_protocol;
    int match_mode;
    int match_structures;
    double match_adjust;
    int vader_fbox_size;   /* btl_vader_fbox_size when mdq is asked for by name (0: leave it) */
    int any_source_policy;
    int free_list_num;
    int free_list_max;
    int free_list_inc;
    int max_outstanding_frags;
    int medium_limit; /* -1: per BTL (see mca_pml_mdq_medium_limit), 0: no medium protocol */
    int medium_piece; /* payload bytes per medium piece, 0: as many as the BTL takes */
    int adaptive_copy;           /* MDQ_ADAPTIVE_* */
    int adaptive_copy_max;       /* largest message that may be copied instead of RGET */
    int adaptive_copy_piece;     /* payload bytes per piece of such a copy */
    int adaptive_pipeline_max;   /* above adaptive_copy_max: largest message streamed instead (-1: any) */
    int adaptive_probe_interval; /* every Nth message of a class tries the other protocol */
    int adaptive_copy_sample;    /* every Nth copied message is timed */
    int copy_guard;              /* OMPI_SCALE_COPY_GUARD_* (ompi_scale_copy.h) */

    int output;
    bool enabled;
    bool registered;

    size_t max_eager; /* largest eager limit among initialized BTLs */

    mdq_match_pool_t *pool;
    opal_free_list_t frags; /* unexpected / held fragment copies */

    /* requests waiting for BTL resources, retried from progress */
    opal_mutex_t pending_lock;
    opal_list_t pending_send;
    opal_list_t pending_recv;
    opal_list_t pending_ctl;
    volatile int32_t pending_count;
    /* messages copied into BTL descriptors by mdq_send_copied without a
     * request (to any peer, over any BTL) whose BTL has not called back yet
     * (vader: not yet taken in by the receiver); medium messages use vader's
     * fast box only when there are none, so that they do not overtake them
     * (speed only: other FIFO messages may still be overtaken, and the
     * receiver restores the order by sequence number) */
    volatile int32_t copied_in_flight;

    /* communicators alive (for pvars) and fragments for unknown ones */
    opal_mutex_t comms_lock;
    opal_list_t comms;
    opal_list_t nocomm_frags;

    mca_pml_mdq_counters_t counters;

    /* buffers of one BTL piece (largest max send size) for fragments above
     * max_eager, reused: a malloc/free per medium message let glibc hand the
     * pages back and fault them in again every time */
    opal_free_list_t big_bufs;
    size_t big_buf_size;
} mca_pml_mdq_module_t;

extern mca_pml_mdq_module_t mca_pml_mdq;
OMPI_DECLSPEC extern mca_pml_base_component_2_0_0_t mca_pml_mdq_component;

/* ordering state for one sender (receive side) and one destination (send side) */
typedef struct mca_pml_mdq_peer {
    volatile int32_t send_seq; /* next sequence for messages we send to this rank */
    uint16_t expect_seq;          /* next sequence we accept from this rank */
    opal_list_t held;             /* out-of-order fragments from this rank */
} mca_pml_mdq_peer_t;

#define MDQ_PEER_PAGE_SHIFT 6
#define MDQ_PEER_PAGE (1u << MDQ_PEER_PAGE_SHIFT)

/* per-communicator state (comm->c_pml_comm) */
typedef struct mca_pml_mdq_comm {
    opal_list_item_t super; /* on mca_pml_mdq.comms */
    opal_mutex_t lock;      /* serialises the match queue and peer ordering */
    ompi_communicator_t *comm;
    uint32_t cid;
    uint32_t size; /* remote group size */
    mdq_match_queue_t *queue;
    const mdq_match_stats_t *queue_stats; /* the queue's: a receive skips the search of an empty UMQ */
    opal_list_t medium; /* medium messages still missing pieces (any sender) */
    /* sparse peer table: pages allocated on first contact */
    uint32_t npages;
    mca_pml_mdq_peer_t *volatile *pages;
} mca_pml_mdq_comm_t;
OBJ_CLASS_DECLARATION(mca_pml_mdq_comm_t);

/* a copy of a received matched message (unexpected, held or for an unknown comm) */
typedef struct mca_pml_mdq_frag {
    opal_free_list_item_t super;
    mdq_match_item_t item;
    mca_btl_base_module_t *btl; /* BTL module that delivered it */
    uint8_t type;               /* MDQ_TAG_* */
    size_t len;                 /* payload bytes stored in data */
    unsigned char *data;
    bool heap;                  /* data is malloc'ed (larger than a big buffer) */
    opal_free_list_item_t *big; /* data is this big_bufs buffer */
    struct mca_pml_mdq_recv_request *matched; /* set while a replayed fragment awaits delivery */
    uint64_t msreq;             /* medium assembly: message id (sender, request, sequence) */
    int32_t msrc;
    uint16_t mseq;
    size_t arrived;             /* medium assembly: payload bytes arrived so far */
    union {
        mdq_hdr_match_t m;
        mdq_hdr_sync_t s;
        mdq_hdr_rts_t r;
        mdq_hdr_medium_t md;
        unsigned char raw[MDQ_HDR_MAX_MATCHED];
    } hdr;
    unsigned char inline_data[];
} mca_pml_mdq_frag_t;
OBJ_CLASS_DECLARATION(mca_pml_mdq_frag_t);

/* a matched message as seen by delivery: header plus payload iovecs */
typedef struct mca_pml_mdq_msg {
    uint8_t type;
    const mdq_hdr_match_t *hdr;
    mca_btl_base_module_t *btl;
    uint32_t iov_count;
    struct iovec iov[MCA_BTL_DES_MAX_SEGMENTS];
    size_t len;
} mca_pml_mdq_msg_t;

/* ---- module functions ---- */
int mca_pml_mdq_add_procs(struct ompi_proc_t **procs, size_t nprocs);
int mca_pml_mdq_del_procs(struct ompi_proc_t **procs, size_t nprocs);
int mca_pml_mdq_enable(bool enable);
int mca_pml_mdq_progress(void);
int mca_pml_mdq_add_comm(struct ompi_communicator_t *comm);
int mca_pml_mdq_del_comm(struct ompi_communicator_t *comm);
int mca_pml_mdq_dump(struct ompi_communicator_t *comm, int verbose);
int mca_pml_mdq_ft_event(int state);
int mca_pml_mdq_component_fini(void);

int mca_pml_mdq_isend_init(const void *buf, size_t count, ompi_datatype_t *datatype, int dst, int tag,
                           mca_pml_base_send_mode_t mode, ompi_communicator_t *comm,
                           ompi_request_t **request);
int mca_pml_mdq_isend(const void *buf, size_t count, ompi_datatype_t *datatype, int dst, int tag,
                      mca_pml_base_send_mode_t mode, ompi_communicator_t *comm,
                      ompi_request_t **request);
int mca_pml_mdq_send(const void *buf, size_t count, ompi_datatype_t *datatype, int dst, int tag,
                     mca_pml_base_send_mode_t mode, ompi_communicator_t *comm);
int mca_pml_mdq_irecv_init(void *buf, size_t count, ompi_datatype_t *datatype, int src, int tag,
                           ompi_communicator_t *comm, ompi_request_t **request);
int mca_pml_mdq_irecv(void *buf, size_t count, ompi_datatype_t *datatype, int src, int tag,
                      ompi_communicator_t *comm, ompi_request_t **request);
int mca_pml_mdq_recv(void *buf, size_t count, ompi_datatype_t *datatype, int src, int tag,
                     ompi_communicator_t *comm, ompi_status_public_t *status);
int mca_pml_mdq_imrecv(void *buf, size_t count, ompi_datatype_t *datatype,
                       struct ompi_message_t **message, ompi_request_t **request);
int mca_pml_mdq_mrecv(void *buf, size_t count, ompi_datatype_t *datatype,
                      struct ompi_message_t **message, ompi_status_public_t *status);
int mca_pml_mdq_iprobe(int src, int tag, ompi_communicator_t *comm, int *matched,
                       ompi_status_public_t *status);
int mca_pml_mdq_probe(int src, int tag, ompi_communicator_t *comm, ompi_status_public_t *status);
int mca_pml_mdq_improbe(int src, int tag, ompi_communicator_t *comm, int *matched,
                        struct ompi_message_t **message, ompi_status_public_t *status);
int mca_pml_mdq_mprobe(int src, int tag, ompi_communicator_t *comm,
                       struct ompi_message_t **message, ompi_status_public_t *status);
int mca_pml_mdq_start(size_t count, ompi_request_t **requests);

/* ---- shared internals ---- */
int mca_pml_mdq_register_callbacks(void);
mca_pml_mdq_peer_t *mca_pml_mdq_peer_page_alloc(mca_pml_mdq_comm_t *mc, int rank);

/* ordering state of rank; its page is allocated on first contact */
static inline mca_pml_mdq_peer_t *mca_pml_mdq_peer_get(mca_pml_mdq_comm_t *mc, int rank)
{
    mca_pml_mdq_peer_t *page = mc->pages[(uint32_t) rank >> MDQ_PEER_PAGE_SHIFT];
    if (OPAL_LIKELY(NULL != page)) {
        return &page[(uint32_t) rank & (MDQ_PEER_PAGE - 1)];
    }
    return mca_pml_mdq_peer_page_alloc(mc, rank);
}

/* Would vader's btl_sendi copy size bytes from src (after hsize header
 * bytes) into the peer's fast box, at a distance where memcpy is not slow?
 * False for other BTLs (pml_mdq_vader.c) */
bool mca_pml_mdq_vader_fbox_safe(mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *ep,
                                 const void *src, size_t hsize, size_t size);

/* fragment copies */
mca_pml_mdq_frag_t *mca_pml_mdq_frag_alloc(size_t len);
mca_pml_mdq_frag_t *mca_pml_mdq_frag_copy(const mca_pml_mdq_msg_t *msg, size_t hdr_size);
void mca_pml_mdq_frag_release(mca_pml_mdq_frag_t *frag);
void mca_pml_mdq_frag_to_msg(mca_pml_mdq_frag_t *frag, mca_pml_mdq_msg_t *msg);

/* arrival of a matched message in sequence order handling (recv side) */
void mca_pml_mdq_recv_matched_arrival(mca_pml_mdq_comm_t *mc, mca_pml_mdq_msg_t *msg,
                                      size_t hdr_size, mca_pml_mdq_frag_t *owned);
/* any arrival for a known communicator: a matched message or a medium piece */
void mca_pml_mdq_recv_arrival(mca_pml_mdq_comm_t *mc, mca_pml_mdq_msg_t *msg, size_t hdr_size);
void mca_pml_mdq_medium_piece(mca_pml_mdq_comm_t *mc, const mca_pml_mdq_msg_t *msg);

/* measured COPY/RGET choice above the medium limit (pml_mdq_adapt.c) */
struct mca_pml_mdq_send_request;
bool mca_pml_mdq_adapt_copy(struct mca_pml_mdq_send_request *sendreq, mca_bml_base_btl_t *bml_btl,
                            size_t size);
void mca_pml_mdq_adapt_rget_done(struct mca_pml_mdq_send_request *sendreq);
void mca_pml_mdq_adapt_pipeline_done(struct mca_pml_mdq_send_request *sendreq);

/* Would a single-copy RDMA from src to dst over btl run at a slow copy
 * distance (ompi_scale_copy.h)? Here, 1 MiB over vader's CMA took 630-810 us
 * instead of 130-150 with the receive buffer 16 bytes past the send buffer. */
static inline bool mca_pml_mdq_rdma_copy_slow(const mca_btl_base_module_t *btl, uint64_t dst,
                                              uint64_t src, size_t len)
{
    return ompi_scale_copy_rdma_slow(btl->btl_component->btl_version.mca_component_name,
                                     (const void *) (uintptr_t) dst,
                                     (const void *) (uintptr_t) src, len);
}
void mca_pml_mdq_adapt_answer(ompi_communicator_t *comm, int src, const mdq_hdr_medium_t *mh);
void mca_pml_mdq_cb_timed(mca_btl_base_module_t *btl, mca_btl_base_tag_t tag,
                          mca_btl_base_descriptor_t *des, void *cbdata);
void mca_pml_mdq_adapt_fini(void);
void mca_pml_mdq_replay_nocomm(mca_pml_mdq_comm_t *mc);
void mca_pml_mdq_hold_nocomm(uint32_t cid, const mca_pml_mdq_msg_t *msg, size_t hdr_size);

/* control messages (header only); queued for retry when resources are
 * short, the job ends if one cannot even be queued */
void mca_pml_mdq_send_ctl(mca_bml_base_endpoint_t *ep, mca_bml_base_btl_t *bml_btl, uint8_t tag,
                          const void *hdr, size_t size);
void mca_pml_mdq_pending_add(opal_list_t *list, opal_list_item_t *item);
struct mca_pml_mdq_send_request;
void mca_pml_mdq_send_request_defer(struct mca_pml_mdq_send_request *sendreq);
int mca_pml_mdq_send_rc(int rc, const char *what);
/* a BTL call refused for want of resources: retry later */
static inline bool mca_pml_mdq_btl_busy(int rc)
{
    return OPAL_ERR_OUT_OF_RESOURCE == rc || OPAL_ERR_TEMP_OUT_OF_RESOURCE == rc
           || OPAL_ERR_RESOURCE_BUSY == rc;
}
void mca_pml_mdq_progress_pending(void);

/* completion callback for descriptors that need no action */
void mca_pml_mdq_des_sent(mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *ep,
                          mca_btl_base_descriptor_t *des, int status);
/* print why (help text) and end the job: a transport failure or no memory */
void mca_pml_mdq_fatal(int rc, const char *what) __opal_attribute_noreturn__;

/* BTL receive callbacks */
void mca_pml_mdq_cb_matched(mca_btl_base_module_t *btl, mca_btl_base_tag_t tag,
                            mca_btl_base_descriptor_t *des, void *cbdata);
void mca_pml_mdq_cb_ack(mca_btl_base_module_t *btl, mca_btl_base_tag_t tag,
                        mca_btl_base_descriptor_t *des, void *cbdata);
void mca_pml_mdq_cb_cts(mca_btl_base_module_t *btl, mca_btl_base_tag_t tag,
                        mca_btl_base_descriptor_t *des, void *cbdata);
void mca_pml_mdq_cb_frag(mca_btl_base_module_t *btl, mca_btl_base_tag_t tag,
                         mca_btl_base_descriptor_t *des, void *cbdata);
void mca_pml_mdq_cb_mfrag(mca_btl_base_module_t *btl, mca_btl_base_tag_t tag,
                          mca_btl_base_descriptor_t *des, void *cbdata);
void mca_pml_mdq_cb_fin(mca_btl_base_module_t *btl, mca_btl_base_tag_t tag,
                        mca_btl_base_descriptor_t *des, void *cbdata);

static inline mca_pml_mdq_comm_t *mca_pml_mdq_comm_of(ompi_communicator_t *comm)
{
    return (mca_pml_mdq_comm_t *) comm->c_pml_comm;
}

/* full size of a matched header, including an RTS registration handle */
static inline size_t mca_pml_mdq_hdr_size(uint8_t type, const mdq_hdr_match_t *hdr)
{
    switch (type) {
    case MDQ_TAG_EAGER:
        return sizeof(mdq_hdr_match_t);
    case MDQ_TAG_EAGER_SYNC:
        return sizeof(mdq_hdr_sync_t);
    case MDQ_TAG_MEDIUM:
        return sizeof(mdq_hdr_medium_t);
    case MDQ_TAG_MFRAG:
        return sizeof(mdq_hdr_mfrag_t);
    default:
        return sizeof(mdq_hdr_rts_t) + ((const mdq_hdr_rts_t *) hdr)->hlen;
    }
}

/* Largest message always sent with the medium protocol over btl (0:
 * none). By default one max-send-size piece; above it the measured
 * COPY/RGET choice (pml_mdq_adapt.c) decides up to
 * pml_mdq_adaptive_copy_max, the rendezvous beyond. */
static inline size_t mca_pml_mdq_medium_limit(const mca_btl_base_module_t *btl)
{
    if (mca_pml_mdq.medium_limit >= 0) {
        return (size_t) mca_pml_mdq.medium_limit;
    }
    return btl->btl_max_send_size > sizeof(mdq_hdr_medium_t)
               ? btl->btl_max_send_size - sizeof(mdq_hdr_medium_t)
               : 0;
}

/* payload of one medium piece with a header of hsize bytes on this BTL:
 * piece bytes (0: as many as fit) */
static inline size_t mca_pml_mdq_medium_piece_max(const mca_btl_base_module_t *btl, size_t hsize,
                                                  size_t piece)
{
    size_t max = btl->btl_max_send_size > hsize ? btl->btl_max_send_size - hsize : 0;
    return piece > 0 && piece < max ? piece : max;
}

#define MDQ_VERBOSE(lvl, ...) opal_output_verbose(lvl, mca_pml_mdq.output, __VA_ARGS__)

END_C_DECLS
#endif /* PML_MDQ_H */
