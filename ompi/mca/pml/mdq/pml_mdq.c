/*
 * pml/mdq module: process and communicator management, BTL tag
 * registration, fragment copies, pending-resource retry and progress.
 */
#include "ompi_config.h"

#include <limits.h>
#include <string.h>

#include "opal/class/opal_bitmap.h"
#include "opal/runtime/opal_progress.h"
#include "opal/util/error.h"
#include "opal/util/output.h"
#include "opal/util/show_help.h"
#include "ompi/mca/bml/base/base.h"
#include "ompi/mca/pml/base/pml_base_bsend.h"

#include "ompi_scale_common.h"

#include "pml_mdq.h"
#include "pml_mdq_request.h"

mca_pml_mdq_module_t mca_pml_mdq = {
    .super = {
        .pml_add_procs = mca_pml_mdq_add_procs,
        .pml_del_procs = mca_pml_mdq_del_procs,
        .pml_enable = mca_pml_mdq_enable,
        .pml_progress = NULL,
        .pml_add_comm = mca_pml_mdq_add_comm,
        .pml_del_comm = mca_pml_mdq_del_comm,
        .pml_irecv_init = mca_pml_mdq_irecv_init,
        .pml_irecv = mca_pml_mdq_irecv,
        .pml_recv = mca_pml_mdq_recv,
        .pml_isend_init = mca_pml_mdq_isend_init,
        .pml_isend = mca_pml_mdq_isend,
        .pml_send = mca_pml_mdq_send,
        .pml_iprobe = mca_pml_mdq_iprobe,
        .pml_probe = mca_pml_mdq_probe,
        .pml_start = mca_pml_mdq_start,
        .pml_improbe = mca_pml_mdq_improbe,
        .pml_mprobe = mca_pml_mdq_mprobe,
        .pml_imrecv = mca_pml_mdq_imrecv,
        .pml_mrecv = mca_pml_mdq_mrecv,
        .pml_dump = mca_pml_mdq_dump,
        .pml_ft_event = mca_pml_mdq_ft_event,
        .pml_max_contextid = 0x7fffffff,
        .pml_max_tag = INT_MAX,
        .pml_flags = 0,
    },
};

/* ---- classes ---- */

static void mdq_comm_construct(mca_pml_mdq_comm_t *mc)
{
    OBJ_CONSTRUCT(&mc->lock, opal_mutex_t);
    mc->comm = NULL;
    mc->queue = NULL;
    mc->queue_stats = NULL;
    mc->npages = 0;
    mc->pages = NULL;
    OBJ_CONSTRUCT(&mc->medium, opal_list_t);
}

static void mdq_comm_destruct(mca_pml_mdq_comm_t *mc)
{
    for (uint32_t i = 0; i < mc->npages; ++i) {
        mca_pml_mdq_peer_t *page = mc->pages[i];
        if (NULL == page) {
            continue;
        }
        for (uint32_t j = 0; j < MDQ_PEER_PAGE; ++j) {
            opal_list_item_t *it;
            while (NULL != (it = opal_list_remove_first(&page[j].held))) {
                mca_pml_mdq_frag_release((mca_pml_mdq_frag_t *) it);
            }
            OBJ_DESTRUCT(&page[j].held);
        }
        free(page);
    }
    free((void *) mc->pages);
    {
        opal_list_item_t *it;
        while (NULL != (it = opal_list_remove_first(&mc->medium))) {
            mca_pml_mdq_frag_release((mca_pml_mdq_frag_t *) it);
        }
        OBJ_DESTRUCT(&mc->medium);
    }
    if (NULL != mc->queue) {
        mdq_match_queue_destroy(mc->queue);
    }
    OBJ_DESTRUCT(&mc->lock);
}

OBJ_CLASS_INSTANCE(mca_pml_mdq_comm_t, opal_list_item_t, mdq_comm_construct, mdq_comm_destruct);

static void mdq_frag_construct(mca_pml_mdq_frag_t *frag)
{
    frag->heap = false;
    frag->data = frag->inline_data;
    memset(&frag->item, 0, sizeof(frag->item));
}

OBJ_CLASS_INSTANCE(mca_pml_mdq_frag_t, opal_free_list_item_t, mdq_frag_construct, NULL);

/* ---- sparse per-peer state ---- */

mca_pml_mdq_peer_t *mca_pml_mdq_peer_page_alloc(mca_pml_mdq_comm_t *mc, int rank)
{
    uint32_t p = (uint32_t) rank >> MDQ_PEER_PAGE_SHIFT;
    mca_pml_mdq_peer_t *page = mc->pages[p];

    if (NULL == page) {
        OPAL_THREAD_LOCK(&mc->lock);
        page = mc->pages[p];
        if (NULL == page) {
            page = calloc(MDQ_PEER_PAGE, sizeof(*page));
            if (NULL == page) {
                OPAL_THREAD_UNLOCK(&mc->lock);
                return NULL;
            }
            for (uint32_t j = 0; j < MDQ_PEER_PAGE; ++j) {
                OBJ_CONSTRUCT(&page[j].held, opal_list_t);
            }
            opal_atomic_wmb();
            mc->pages[p] = page;
        }
        OPAL_THREAD_UNLOCK(&mc->lock);
    }
    return &page[(uint32_t) rank & (MDQ_PEER_PAGE - 1)];
}

/* ---- fragment copies ---- */

/* a fragment with room for len payload bytes (inline up to max_eager) */
mca_pml_mdq_frag_t *mca_pml_mdq_frag_alloc(size_t len)
{
    mca_pml_mdq_frag_t *frag = (mca_pml_mdq_frag_t *) opal_free_list_get(&mca_pml_mdq.frags);

    if (OPAL_UNLIKELY(NULL == frag)) {
        return NULL;
    }
    frag->len = len;
    frag->heap = false;
    frag->big = NULL;
    frag->matched = NULL; /* a medium entry with matched set is a direct delivery */
    if (len > mca_pml_mdq.max_eager) {
        if (len <= mca_pml_mdq.big_buf_size) {
            frag->big = opal_free_list_get(&mca_pml_mdq.big_bufs); /* NULL once MAX are out */
        }
        if (NULL != frag->big) {
            frag->data = frag->big->ptr;
        } else if (NULL != (frag->data = malloc(len))) {
            frag->heap = true;
        } else {
            frag->data = frag->inline_data;
            opal_free_list_return(&mca_pml_mdq.frags, &frag->super);
            return NULL;
        }
    } else {
        frag->data = frag->inline_data;
    }
    return frag;
}

mca_pml_mdq_frag_t *mca_pml_mdq_frag_copy(const mca_pml_mdq_msg_t *msg, size_t hdr_size)
{
    mca_pml_mdq_frag_t *frag = mca_pml_mdq_frag_alloc(msg->len);
    unsigned char *dst;

    if (OPAL_UNLIKELY(NULL == frag)) {
        return NULL;
    }
    frag->type = msg->type;
    frag->btl = msg->btl;
    memcpy(frag->hdr.raw, msg->hdr, hdr_size);
    dst = frag->data;
    for (uint32_t i = 0; i < msg->iov_count; ++i) {
        ompi_scale_copy(dst, msg->iov[i].iov_base, msg->iov[i].iov_len);
        dst += msg->iov[i].iov_len;
    }
    frag->item.rank = msg->hdr->src;
    frag->item.tag = msg->hdr->tag;
    return frag;
}

void mca_pml_mdq_frag_release(mca_pml_mdq_frag_t *frag)
{
    if (NULL != frag->big) {
        opal_free_list_return(&mca_pml_mdq.big_bufs, frag->big);
        frag->big = NULL;
    } else if (frag->heap) {
        free(frag->data);
        frag->heap = false;
    }
    frag->data = frag->inline_data;
    opal_free_list_return(&mca_pml_mdq.frags, &frag->super);
}

void mca_pml_mdq_frag_to_msg(mca_pml_mdq_frag_t *frag, mca_pml_mdq_msg_t *msg)
{
    msg->type = frag->type;
    msg->hdr = &frag->hdr.m;
    msg->btl = frag->btl;
    msg->len = frag->len;
    msg->iov_count = frag->len ? 1 : 0;
    msg->iov[0].iov_base = frag->data;
    msg->iov[0].iov_len = frag->len;
}

/* ---- processes ---- */

int mca_pml_mdq_register_callbacks(void)
{
    static const struct {
        uint8_t tag;
        mca_btl_base_module_recv_cb_fn_t fn;
    } cbs[] = {
        {MDQ_TAG_EAGER, mca_pml_mdq_cb_matched},
        {MDQ_TAG_EAGER_SYNC, mca_pml_mdq_cb_matched},
        {MDQ_TAG_RTS, mca_pml_mdq_cb_matched},
        {MDQ_TAG_ACK, mca_pml_mdq_cb_ack},
        {MDQ_TAG_CTS, mca_pml_mdq_cb_cts},
        {MDQ_TAG_FRAG, mca_pml_mdq_cb_frag},
        {MDQ_TAG_FIN, mca_pml_mdq_cb_fin},
        {MDQ_TAG_MEDIUM, mca_pml_mdq_cb_matched},
        {MDQ_TAG_MFRAG, mca_pml_mdq_cb_mfrag},
        {MDQ_TAG_TIMED, mca_pml_mdq_cb_timed},
    };
    if (mca_pml_mdq.registered) {
        return OMPI_SUCCESS;
    }
    for (size_t i = 0; i < sizeof(cbs) / sizeof(cbs[0]); ++i) {
        int rc = mca_bml.bml_register(cbs[i].tag, cbs[i].fn, NULL);
        if (OMPI_SUCCESS != rc) {
            return rc;
        }
    }
    mca_pml_mdq.registered = true;
    return OMPI_SUCCESS;
}

int mca_pml_mdq_add_procs(struct ompi_proc_t **procs, size_t nprocs)
{
    opal_bitmap_t reachable;
    mca_btl_base_selected_module_t *sm;
    int rc;

    if (0 == nprocs) {
        return OMPI_SUCCESS;
    }
    rc = mca_pml_base_pml_check_selected("mdq", procs, nprocs);
    if (OMPI_SUCCESS != rc) {
        return rc;
    }

    OBJ_CONSTRUCT(&reachable, opal_bitmap_t);
    rc = opal_bitmap_init(&reachable, (int) nprocs);
    if (OMPI_SUCCESS != rc) {
        OBJ_DESTRUCT(&reachable);
        return rc;
    }
    rc = mca_bml.bml_add_procs(nprocs, procs, &reachable);
    OBJ_DESTRUCT(&reachable);
    if (OMPI_SUCCESS != rc) {
        return rc;
    }

    OPAL_LIST_FOREACH (sm, &mca_btl_base_modules_initialized, mca_btl_base_selected_module_t) {
        mca_btl_base_module_t *btl = sm->btl_module;
        if ((btl->btl_flags & MCA_BTL_FLAGS_SEND)
            && btl->btl_eager_limit < MDQ_HDR_MAX_MATCHED) {
            (void) ompi_scale_help_init();
            opal_show_help("help-mpi-pml-mdq.txt", "eager-limit-too-small", true,
                           sm->btl_component->btl_version.mca_component_name,
                           ompi_process_info.nodename, btl->btl_eager_limit,
                           (int) MDQ_HDR_MAX_MATCHED);
            return OMPI_ERR_BAD_PARAM;
        }
    }
    return mca_pml_mdq_register_callbacks();
}

int mca_pml_mdq_del_procs(struct ompi_proc_t **procs, size_t nprocs)
{
    return mca_bml.bml_del_procs(nprocs, procs);
}

/* Request objects spaced an odd number of cache lines apart: the few lines
 * each request uses then spread over all the sets of the L1 cache (at 12
 * lines apart, a multiple of 4, 64 receives kept posted filled some sets
 * of a 64-set cache past its 8 ways and left others a quarter empty). In
 * units of opal_cache_line_size: where hwloc does not know the line size,
 * Open MPI assumes 128 B and the spreading is lost on 64 B lines (speed
 * only). Send requests are spaced the same way; small standard sends use
 * none, and the effect on those that do was not measured. */
static size_t mdq_odd_lines(size_t size)
{
    size_t lines = (size + opal_cache_line_size - 1) / opal_cache_line_size;
    return (lines | 1) * opal_cache_line_size;
}

/* the free list of one request kind (send or receive), requests an odd
 * number of lines apart */
static int mdq_request_list_init(opal_free_list_t *list, size_t size, opal_class_t *cls)
{
    return opal_free_list_init(list, mdq_odd_lines(size), opal_cache_line_size, cls, 0,
                               opal_cache_line_size, mca_pml_mdq.free_list_num,
                               mca_pml_mdq.free_list_max, mca_pml_mdq.free_list_inc, NULL, 0,
                               NULL, NULL, NULL);
}

int mca_pml_mdq_enable(bool enable)
{
    int rc;

    if (!enable || mca_pml_mdq.enabled) {
        return OMPI_SUCCESS;
    }

    OBJ_CONSTRUCT(&mca_pml_mdq.pending_lock, opal_mutex_t);
    OBJ_CONSTRUCT(&mca_pml_mdq.pending_send, opal_list_t);
    OBJ_CONSTRUCT(&mca_pml_mdq.pending_recv, opal_list_t);
    OBJ_CONSTRUCT(&mca_pml_mdq.pending_ctl, opal_list_t);
    OBJ_CONSTRUCT(&mca_pml_mdq.comms_lock, opal_mutex_t);
    OBJ_CONSTRUCT(&mca_pml_mdq.comms, opal_list_t);
    OBJ_CONSTRUCT(&mca_pml_mdq.nocomm_frags, opal_list_t);
    OBJ_CONSTRUCT(&mca_pml_mdq.frags, opal_free_list_t);
    OBJ_CONSTRUCT(&mca_pml_mdq.big_bufs, opal_free_list_t);
    mca_pml_mdq.pending_count = 0;
    mca_pml_mdq.copied_in_flight = 0;

    mca_pml_mdq.pool = mdq_match_pool_create();
    if (NULL == mca_pml_mdq.pool) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }

    rc = opal_free_list_init(&mca_pml_mdq.frags, sizeof(mca_pml_mdq_frag_t) + mca_pml_mdq.max_eager,
                             opal_cache_line_size, OBJ_CLASS(mca_pml_mdq_frag_t), 0,
                             opal_cache_line_size, mca_pml_mdq.free_list_num,
                             mca_pml_mdq.free_list_max, mca_pml_mdq.free_list_inc, NULL, 0, NULL,
                             NULL, NULL);
    if (OMPI_SUCCESS != rc) {
        return rc;
    }
    rc = opal_free_list_init(&mca_pml_mdq.big_bufs, sizeof(opal_free_list_item_t),
                             opal_cache_line_size, OBJ_CLASS(opal_free_list_item_t),
                             mca_pml_mdq.big_buf_size, opal_cache_line_size, 0,
                             MDQ_BIG_BUFFERS_MAX, 1, NULL, 0, NULL, NULL, NULL);
    if (OMPI_SUCCESS != rc) {
        return rc;
    }
    rc = mdq_request_list_init(&mca_pml_base_send_requests, sizeof(mca_pml_mdq_send_request_t),
                               OBJ_CLASS(mca_pml_mdq_send_request_t));
    if (OMPI_SUCCESS != rc) {
        return rc;
    }
    rc = mdq_request_list_init(&mca_pml_base_recv_requests, sizeof(mca_pml_mdq_recv_request_t),
                               OBJ_CLASS(mca_pml_mdq_recv_request_t));
    if (OMPI_SUCCESS != rc) {
        return rc;
    }
    rc = mca_pml_base_bsend_init(opal_using_threads());
    if (OMPI_SUCCESS != rc) {
        return rc;
    }
    /* only retries of resource-starved work: low priority keeps it off the
     * polling path of every opal_progress call */
    opal_progress_register_lp(mca_pml_mdq_progress);
    mca_pml_mdq.enabled = true;
    return OMPI_SUCCESS;
}

/* ---- communicators ---- */

typedef struct mdq_nocomm_frag {
    opal_list_item_t super;
    mca_pml_mdq_frag_t *frag;
    uint32_t cid;
} mdq_nocomm_frag_t;
static OBJ_CLASS_INSTANCE(mdq_nocomm_frag_t, opal_list_item_t, NULL, NULL);

/* called with no communicator state for cid: keep a copy until add_comm */
void mca_pml_mdq_hold_nocomm(uint32_t cid, const mca_pml_mdq_msg_t *msg, size_t hdr_size)
{
    ompi_communicator_t *comm;
    mdq_nocomm_frag_t *nf;

    OPAL_THREAD_LOCK(&mca_pml_mdq.comms_lock);
    comm = ompi_comm_lookup(cid);
    if (NULL != comm && NULL != comm->c_pml_comm) {
        /* add_comm ran meanwhile */
        OPAL_THREAD_UNLOCK(&mca_pml_mdq.comms_lock);
        mca_pml_mdq_recv_arrival(mca_pml_mdq_comm_of(comm), (mca_pml_mdq_msg_t *) msg, hdr_size);
        return;
    }
    nf = OBJ_NEW(mdq_nocomm_frag_t);
    if (NULL != nf) {
        nf->frag = mca_pml_mdq_frag_copy(msg, hdr_size);
        nf->cid = cid;
    }
    if (NULL == nf || NULL == nf->frag) {
        OPAL_THREAD_UNLOCK(&mca_pml_mdq.comms_lock);
        mca_pml_mdq_fatal(OMPI_ERR_OUT_OF_RESOURCE,
                          "out of memory holding a message for a communicator not created yet");
    }
    opal_list_append(&mca_pml_mdq.nocomm_frags, &nf->super);
    mca_pml_mdq.counters.held_nocomm++;
    OPAL_THREAD_UNLOCK(&mca_pml_mdq.comms_lock);
}

void mca_pml_mdq_replay_nocomm(mca_pml_mdq_comm_t *mc)
{
    opal_list_t mine;
    mdq_nocomm_frag_t *nf, *next;

    OBJ_CONSTRUCT(&mine, opal_list_t);
    OPAL_LIST_FOREACH_SAFE (nf, next, &mca_pml_mdq.nocomm_frags, mdq_nocomm_frag_t) {
        if (nf->cid == mc->cid) {
            opal_list_remove_item(&mca_pml_mdq.nocomm_frags, &nf->super);
            opal_list_append(&mine, &nf->super);
        }
    }
    /* arrival order is preserved; the sequence numbers sort out the rest */
    while (NULL != (nf = (mdq_nocomm_frag_t *) opal_list_remove_first(&mine))) {
        mca_pml_mdq_msg_t msg;
        mca_pml_mdq_frag_to_msg(nf->frag, &msg);
        mca_pml_mdq_recv_arrival(mc, &msg, mca_pml_mdq_hdr_size(msg.type, msg.hdr));
        mca_pml_mdq_frag_release(nf->frag);
        OBJ_RELEASE(nf);
    }
    OBJ_DESTRUCT(&mine);
}

int mca_pml_mdq_add_comm(struct ompi_communicator_t *comm)
{
    mca_pml_mdq_comm_t *mc = OBJ_NEW(mca_pml_mdq_comm_t);
    uint32_t size = (uint32_t) (OMPI_COMM_IS_INTER(comm) ? ompi_comm_remote_size(comm)
                                                         : ompi_comm_size(comm));

    if (NULL == mc) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    mc->comm = comm;
    mc->cid = comm->c_contextid;
    mc->size = size;
    mc->npages = (size + MDQ_PEER_PAGE - 1) >> MDQ_PEER_PAGE_SHIFT;
    mc->pages = calloc(mc->npages ? mc->npages : 1, sizeof(mca_pml_mdq_peer_t *));
    mc->queue = mdq_match_queue_create_ex(mca_pml_mdq.pool, size ? size : 1,
                                          (mdq_match_mode_t) mca_pml_mdq.match_mode,
                                          mca_pml_mdq.match_adjust,
                                          (mdq_match_policy_t) mca_pml_mdq.any_source_policy,
                                          (unsigned) mca_pml_mdq.match_structures);
    if (NULL == mc->pages || NULL == mc->queue) {
        OBJ_RELEASE(mc);
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    mc->queue_stats = mdq_match_queue_stats(mc->queue);
    MDQ_VERBOSE(20, "pml:mdq: add_comm cid %u size %u (%s queue)", mc->cid, size,
                mdq_match_queue_is_4d(mc->queue) ? "4d" : "linear");

    OPAL_THREAD_LOCK(&mca_pml_mdq.comms_lock);
    comm->c_pml_comm = (struct mca_pml_comm_t *) mc;
    opal_list_append(&mca_pml_mdq.comms, &mc->super);
    mca_pml_mdq_replay_nocomm(mc);
    OPAL_THREAD_UNLOCK(&mca_pml_mdq.comms_lock);
    return OMPI_SUCCESS;
}

static void mdq_drain_item(mdq_match_item_t *item, bool posted, void *arg)
{
    (void) arg;
    if (!posted) {
        mca_pml_mdq_frag_t *frag = (mca_pml_mdq_frag_t *) ((char *) item
                                                           - offsetof(mca_pml_mdq_frag_t, item));
        mca_pml_mdq_frag_release(frag);
    }
    /* posted receives on a freed communicator are erroneous programs; the
     * requests stay with their owner */
}

int mca_pml_mdq_del_comm(struct ompi_communicator_t *comm)
{
    mca_pml_mdq_comm_t *mc = mca_pml_mdq_comm_of(comm);

    if (NULL == mc) {
        return OMPI_SUCCESS;
    }
    OPAL_THREAD_LOCK(&mca_pml_mdq.comms_lock);
    opal_list_remove_item(&mca_pml_mdq.comms, &mc->super);
    comm->c_pml_comm = NULL;
    OPAL_THREAD_UNLOCK(&mca_pml_mdq.comms_lock);

    mdq_match_drain(mc->queue, mdq_drain_item, NULL);
    OBJ_RELEASE(mc);
    return OMPI_SUCCESS;
}

/* ---- pending work and progress ---- */

typedef struct mdq_pending_ctl {
    opal_list_item_t super;
    mca_bml_base_endpoint_t *ep;
    mca_bml_base_btl_t *bml_btl;
    uint8_t tag;
    size_t size;
    unsigned char hdr[sizeof(mdq_hdr_cts_t) + MDQ_MAX_HANDLE];
} mdq_pending_ctl_t;
static OBJ_CLASS_INSTANCE(mdq_pending_ctl_t, opal_list_item_t, NULL, NULL);

void mca_pml_mdq_pending_add(opal_list_t *list, opal_list_item_t *item)
{
    OPAL_THREAD_LOCK(&mca_pml_mdq.pending_lock);
    opal_list_append(list, item);
    OPAL_THREAD_ADD_FETCH32(&mca_pml_mdq.pending_count, 1);
    OPAL_THREAD_UNLOCK(&mca_pml_mdq.pending_lock);
}

/* Like Open MPI's other PMLs, mdq cannot recover a lost message or a
 * failed transfer: it says why and ends the job. */
void mca_pml_mdq_fatal(int rc, const char *what)
{
    opal_show_help("help-mpi-pml-mdq.txt", "fatal", true, ompi_process_info.nodename, what, rc,
                   opal_strerror(rc));
    ompi_rte_abort(rc, NULL);
}

/* Retry a send request from progress once the BTL has resources. Only the
 * holder of the request's scheduling guard lists it, and it keeps the guard
 * while listed: completions meanwhile fold into it, so the request is
 * listed at most once and cannot complete (or be freed) while listed;
 * progress resumes it with the guard (mca_pml_mdq_send_request_resume). */
void mca_pml_mdq_send_request_defer(mca_pml_mdq_send_request_t *sendreq)
{
    OPAL_THREAD_LOCK(&mca_pml_mdq.pending_lock);
    opal_list_append(&mca_pml_mdq.pending_send, (opal_list_item_t *) sendreq);
    OPAL_THREAD_UNLOCK(&mca_pml_mdq.pending_lock);
    OPAL_THREAD_ADD_FETCH32(&mca_pml_mdq.pending_count, 1);
}

/* A BTL send's return code: busy is retried later (OMPI_ERR_OUT_OF_RESOURCE),
 * anything else loses the message for good and ends the job. */
int mca_pml_mdq_send_rc(int rc, const char *what)
{
    if (OPAL_LIKELY(rc >= 0)) {
        return OMPI_SUCCESS;
    }
    if (mca_pml_mdq_btl_busy(rc)) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    mca_pml_mdq_fatal(rc, what);
}

void mca_pml_mdq_des_sent(mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *ep,
                          mca_btl_base_descriptor_t *des, int status)
{
    (void) btl;
    (void) ep;
    (void) des;
    if (OPAL_UNLIKELY(OPAL_SUCCESS != status)) {
        mca_pml_mdq_fatal(status, "a BTL lost a message");
    }
}

static int mdq_try_send_ctl(mca_bml_base_btl_t *bml_btl, uint8_t tag, const void *hdr, size_t size)
{
    mca_btl_base_module_t *btl = bml_btl->btl;
    mca_btl_base_descriptor_t *des;
    int rc;

    if (NULL != btl->btl_sendi) {
        rc = btl->btl_sendi(btl, bml_btl->btl_endpoint, NULL, (void *) hdr, size, 0,
                            MCA_BTL_NO_ORDER,
                            MCA_BTL_DES_FLAGS_PRIORITY | MCA_BTL_DES_FLAGS_BTL_OWNERSHIP, tag,
                            NULL);
        if (OPAL_SUCCESS == rc) {
            return OMPI_SUCCESS;
        }
    }
    des = btl->btl_alloc(btl, bml_btl->btl_endpoint, MCA_BTL_NO_ORDER, size,
                         MCA_BTL_DES_FLAGS_PRIORITY | MCA_BTL_DES_FLAGS_BTL_OWNERSHIP);
    if (NULL == des) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    memcpy(des->des_segments[0].seg_addr.pval, hdr, size);
    des->des_segments[0].seg_len = size;
    des->des_cbfunc = mca_pml_mdq_des_sent; /* some BTLs (tcp) always call it */
    rc = mca_bml_base_send(bml_btl, des, tag);
    if (rc < 0) {
        mca_bml_base_free(bml_btl, des);
    }
    return mca_pml_mdq_send_rc(rc, "a BTL refused a control message");
}

void mca_pml_mdq_send_ctl(mca_bml_base_endpoint_t *ep, mca_bml_base_btl_t *bml_btl, uint8_t tag,
                          const void *hdr, size_t size)
{
    mdq_pending_ctl_t *pc;

    assert(size <= sizeof(pc->hdr));
    if (NULL == bml_btl) {
        bml_btl = mca_bml_base_btl_array_get_next(&ep->btl_eager);
    }
    if (OPAL_LIKELY(OMPI_SUCCESS == mdq_try_send_ctl(bml_btl, tag, hdr, size))) {
        return;
    }
    /* rare: out of BTL resources. Keep a copy and retry from progress; a
     * control message cannot be dropped (its peer would wait forever). */
    pc = OBJ_NEW(mdq_pending_ctl_t);
    if (OPAL_UNLIKELY(NULL == pc)) {
        mca_pml_mdq_fatal(OMPI_ERR_OUT_OF_RESOURCE, "out of memory queueing a control message");
    }
    pc->ep = ep;
    pc->bml_btl = bml_btl;
    pc->tag = tag;
    pc->size = size;
    memcpy(pc->hdr, hdr, size);
    mca_pml_mdq_pending_add(&mca_pml_mdq.pending_ctl, &pc->super);
}

void mca_pml_mdq_progress_pending(void)
{
    size_t n;

    /* control messages first: they unblock the peer */
    OPAL_THREAD_LOCK(&mca_pml_mdq.pending_lock);
    n = opal_list_get_size(&mca_pml_mdq.pending_ctl);
    OPAL_THREAD_UNLOCK(&mca_pml_mdq.pending_lock);
    while (n-- > 0) {
        mdq_pending_ctl_t *pc;
        OPAL_THREAD_LOCK(&mca_pml_mdq.pending_lock);
        pc = (mdq_pending_ctl_t *) opal_list_remove_first(&mca_pml_mdq.pending_ctl);
        OPAL_THREAD_UNLOCK(&mca_pml_mdq.pending_lock);
        if (NULL == pc) {
            break;
        }
        OPAL_THREAD_ADD_FETCH32(&mca_pml_mdq.pending_count, -1);
        if (OMPI_SUCCESS != mdq_try_send_ctl(pc->bml_btl, pc->tag, pc->hdr, pc->size)) {
            mca_pml_mdq_pending_add(&mca_pml_mdq.pending_ctl, &pc->super);
            return;
        }
        OBJ_RELEASE(pc);
    }

    OPAL_THREAD_LOCK(&mca_pml_mdq.pending_lock);
    n = opal_list_get_size(&mca_pml_mdq.pending_send);
    OPAL_THREAD_UNLOCK(&mca_pml_mdq.pending_lock);
    while (n-- > 0) {
        mca_pml_mdq_send_request_t *req;
        OPAL_THREAD_LOCK(&mca_pml_mdq.pending_lock);
        req = (mca_pml_mdq_send_request_t *) opal_list_remove_first(&mca_pml_mdq.pending_send);
        OPAL_THREAD_UNLOCK(&mca_pml_mdq.pending_lock);
        if (NULL == req) {
            break;
        }
        OPAL_THREAD_ADD_FETCH32(&mca_pml_mdq.pending_count, -1);
        mca_pml_mdq_send_request_resume(req);
    }

    OPAL_THREAD_LOCK(&mca_pml_mdq.pending_lock);
    n = opal_list_get_size(&mca_pml_mdq.pending_recv);
    OPAL_THREAD_UNLOCK(&mca_pml_mdq.pending_lock);
    while (n-- > 0) {
        mca_pml_mdq_recv_request_t *req;
        OPAL_THREAD_LOCK(&mca_pml_mdq.pending_lock);
        req = (mca_pml_mdq_recv_request_t *) opal_list_remove_first(&mca_pml_mdq.pending_recv);
        OPAL_THREAD_UNLOCK(&mca_pml_mdq.pending_lock);
        if (NULL == req) {
            break;
        }
        OPAL_THREAD_ADD_FETCH32(&mca_pml_mdq.pending_count, -1);
        mca_pml_mdq_recv_request_schedule(req);
    }
}

int mca_pml_mdq_progress(void)
{
    if (OPAL_LIKELY(0 == mca_pml_mdq.pending_count)) {
        return 0;
    }
    mca_pml_mdq_progress_pending();
    return 1;
}

int mca_pml_mdq_dump(struct ompi_communicator_t *comm, int verbose)
{
    mca_pml_mdq_comm_t *mc = mca_pml_mdq_comm_of(comm);
    const mdq_match_stats_t *st;
    (void) verbose;

    if (NULL == mc) {
        return OMPI_SUCCESS;
    }
    st = mdq_match_queue_stats(mc->queue);
    opal_output(0,
                "pml:mdq: comm cid %u size %u %s queue: posted %llu unexpected %llu searches %llu "
                "visits %llu",
                mc->cid, mc->size, mdq_match_queue_is_4d(mc->queue) ? "4d" : "linear",
                (unsigned long long) st->prq_length, (unsigned long long) st->umq_length,
                (unsigned long long) st->searches, (unsigned long long) st->visits);
    return OMPI_SUCCESS;
}

int mca_pml_mdq_ft_event(int state)
{
    (void) state;
    return OMPI_SUCCESS;
}
