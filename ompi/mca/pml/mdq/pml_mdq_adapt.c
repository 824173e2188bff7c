/*
 * pml/mdq glue of the measured COPY/RGET choice (ompi_scale_adapt.h) for
 * contiguous messages above the medium limit (up to
 * pml_mdq_adaptive_pipeline_max) sent to a peer that RGET can reach.
 *
 * COPY sends the message as a medium message in pieces of
 * pml_mdq_adaptive_copy_piece bytes up to pml_mdq_adaptive_copy_max, and
 * above it as a rendezvous whose RTS asks for the pipeline (no receiver
 * memory is spent on a large message that arrives unexpected). Timing: the
 * sender stores a timing word (table index + 1 in the top byte, its
 * CLOCK_MONOTONIC nanoseconds in the other 56 bits) in the request (RGET:
 * read back when the ACK comes; pipeline: when the last fragment has been
 * taken in, which completes the request: vader returns a fragment only
 * after the receiver's callback; a BTL that completed sends before the
 * data is received would favour the pipeline) or in the medium header (medium
 * COPY: the receiver echoes it in a TIMED header when the message is in
 * place, so no request has to outlive its completion).
 * One table per BTL module that carries the first fragment (copying and
 * getting costs differ per transport), and another one for the sizes that
 * stream (a size class that straddles pml_mdq_adaptive_copy_max would
 * otherwise mix two copying protocols in one median).
 */
#include "ompi_config.h"

#include <stdlib.h>

#include "ompi/mca/bml/base/base.h"

#include "ompi_scale_adapt.h"
#include "pml_mdq.h"
#include "pml_mdq_request.h"

#define MDQ_ADAPT_TABLES 8
#define MDQ_TIMING_BITS 56
#define MDQ_TIMING_MASK ((UINT64_C(1) << MDQ_TIMING_BITS) - 1)

static struct {
    mca_btl_base_module_t *btl;
    bool pipe; /* the sizes above pml_mdq_adaptive_copy_max */
    ompi_scale_adapt_t *table;
} mdq_tables[MDQ_ADAPT_TABLES];
static opal_mutex_t mdq_tables_lock = OPAL_MUTEX_STATIC_INIT;

/* under the lock: the table of btl (streamed sizes or not), created on
 * first use (-1: none left) */
static int mdq_table_index(mca_btl_base_module_t *btl, bool pipe)
{
    for (int i = 0; i < MDQ_ADAPT_TABLES; ++i) {
        if (mdq_tables[i].btl == btl && mdq_tables[i].pipe == pipe) {
            return i;
        }
        if (NULL == mdq_tables[i].btl) {
            ompi_scale_adapt_t *t = malloc(sizeof(*t));
            if (NULL == t) {
                return -1;
            }
            ompi_scale_adapt_init(t, (uint32_t) (mca_pml_mdq.adaptive_probe_interval > 0
                                                     ? mca_pml_mdq.adaptive_probe_interval : 0),
                                  (uint32_t) (mca_pml_mdq.adaptive_copy_sample > 1
                                                     ? mca_pml_mdq.adaptive_copy_sample : 1));
            mdq_tables[i].btl = btl;
            mdq_tables[i].pipe = pipe;
            mdq_tables[i].table = t;
            return i;
        }
    }
    return -1;
}

static uint64_t mdq_timing_word(int index)
{
    return ((uint64_t) (index + 1) << MDQ_TIMING_BITS) | (ompi_scale_adapt_now_ns() & MDQ_TIMING_MASK);
}

/* a timed message of length bytes sent with proto, started at timing, is done */
static void mdq_adapt_finished(uint64_t timing, size_t length, int proto)
{
    int index = (int) (timing >> MDQ_TIMING_BITS) - 1;
    uint64_t ns = (ompi_scale_adapt_now_ns() - timing) & MDQ_TIMING_MASK;

    if (index < 0 || index >= MDQ_ADAPT_TABLES || 0 == length) {
        return;
    }
    OPAL_THREAD_LOCK(&mdq_tables_lock);
    if (NULL != mdq_tables[index].table) {
        ompi_scale_adapt_record(mdq_tables[index].table, length, proto, ns);
        MDQ_VERBOSE(10, "pml:mdq: %s of %zu bytes took %.3f us; now preferred: %s",
                    OMPI_SCALE_ADAPT_COPY == proto ? "copy" : "rget", length, ns * 1e-3,
                    OMPI_SCALE_ADAPT_COPY == ompi_scale_adapt_preferred(mdq_tables[index].table, length)
                        ? "copy" : "rget");
    }
    OPAL_THREAD_UNLOCK(&mdq_tables_lock);
    OPAL_THREAD_ADD_FETCH64((volatile int64_t *) &mca_pml_mdq.counters.adaptive_timed, 1);
}

bool mca_pml_mdq_adapt_copy(mca_pml_mdq_send_request_t *sendreq, mca_bml_base_btl_t *bml_btl,
                            size_t size)
{
    mca_btl_base_module_t *btl = bml_btl->btl;
    bool timed = false;
    int index, proto;

    sendreq->timing = 0;
    if (MDQ_ADAPTIVE_OFF == mca_pml_mdq.adaptive_copy || 0 == mca_pml_mdq.medium_limit
        || mca_pml_mdq.adaptive_copy_piece <= 0 || mca_pml_mdq.adaptive_copy_max <= 0) {
        return false;
    }
    /* above adaptive_copy_max the copying alternative is the pipeline */
    if (size > (size_t) mca_pml_mdq.adaptive_copy_max
        && (0 == mca_pml_mdq.adaptive_pipeline_max
            || (mca_pml_mdq.adaptive_pipeline_max > 0
                && size > (size_t) mca_pml_mdq.adaptive_pipeline_max))) {
        return false;
    }
    /* only where the alternative is an RGET over the same BTL (mdq_send_rts),
     * and that BTL is the only one for first fragments: the RTS and the
     * pieces are sent over the next one in turn, and a sample must be
     * filed under the BTL that carried the message */
    if (1 != mca_bml_base_btl_array_get_size(&sendreq->ep->btl_eager)
        || NULL == mca_pml_mdq_rget_btl(sendreq, btl)) {
        return false;
    }
    if (MDQ_ADAPTIVE_ALWAYS == mca_pml_mdq.adaptive_copy) {
        return true;
    }
    OPAL_THREAD_LOCK(&mdq_tables_lock);
    index = mdq_table_index(btl, size > (size_t) mca_pml_mdq.adaptive_copy_max);
    proto = index < 0 ? OMPI_SCALE_ADAPT_RDMA
                      : ompi_scale_adapt_choose(mdq_tables[index].table, size, &timed);
    OPAL_THREAD_UNLOCK(&mdq_tables_lock);
    if (timed) {
        sendreq->timing = mdq_timing_word(index);
    }
    return OMPI_SCALE_ADAPT_COPY == proto;
}

void mca_pml_mdq_adapt_rget_done(mca_pml_mdq_send_request_t *sendreq)
{
    if (0 != sendreq->timing) {
        mdq_adapt_finished(sendreq->timing, sendreq->req_send.req_bytes_packed, OMPI_SCALE_ADAPT_RDMA);
        sendreq->timing = 0;
    }
}

void mca_pml_mdq_adapt_pipeline_done(mca_pml_mdq_send_request_t *sendreq)
{
    if (0 != sendreq->timing) {
        mdq_adapt_finished(sendreq->timing, sendreq->req_send.req_bytes_packed, OMPI_SCALE_ADAPT_COPY);
        sendreq->timing = 0;
    }
}

void mca_pml_mdq_adapt_answer(ompi_communicator_t *comm, int src, const mdq_hdr_medium_t *mh)
{
    mdq_hdr_timed_t t = {.timing = mh->timing, .length = mh->length};
    ompi_proc_t *proc = ompi_comm_peer_lookup(comm, src);
    mca_bml_base_endpoint_t *ep = NULL == proc ? NULL : mca_bml_base_get_endpoint(proc);

    if (OPAL_LIKELY(NULL != ep)) {
        mca_pml_mdq_send_ctl(ep, NULL, MDQ_TAG_TIMED, &t, sizeof(t));
    }
}

void mca_pml_mdq_cb_timed(mca_btl_base_module_t *btl, mca_btl_base_tag_t tag,
                          mca_btl_base_descriptor_t *des, void *cbdata)
{
    mdq_hdr_timed_t t;
    (void) btl;
    (void) tag;
    (void) cbdata;
    if (OPAL_UNLIKELY(des->des_segments[0].seg_len < sizeof(t))) {
        return;
    }
    memcpy(&t, des->des_segments[0].seg_addr.pval, sizeof(t));
    mdq_adapt_finished(t.timing, t.length, OMPI_SCALE_ADAPT_COPY);
}

void mca_pml_mdq_adapt_fini(void)
{
    OPAL_THREAD_LOCK(&mdq_tables_lock);
    for (int i = 0; i < MDQ_ADAPT_TABLES; ++i) {
        free(mdq_tables[i].table);
        mdq_tables[i].table = NULL;
        mdq_tables[i].btl = NULL;
        mdq_tables[i].pipe = false;
    }
    OPAL_THREAD_UNLOCK(&mdq_tables_lock);
}
