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
#include "opal/datatype/opal_convertor.h"
#include "ompi/datatype/ompi_datatype.h"
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

static bool use_sendi;    /* MCA: immediate sends for frames that may overtake */

/* Packing of small puts (NBE_AM_PUT_MULTI). Consecutive small put
 * fragments to one peer are copied into one open frame instead of a BTL
 * message each; each is still one counted operation message. The open
 * frame is logically the head of the out-queue: it goes out before any
 * other frame of any window (so DONE / UNLOCK / FLUSH_REQ / FENCE_DONE
 * follow the data), when it is full, and on every progress call. A put is
 * locally complete once copied. The first put of a burst leaves at once
 * (a lone put followed by a flush must not wait for the FLUSH_REQ: the
 * target applies it while the origin prepares the flush); packing starts
 * with the second small put in a row to the same peer. */
static unsigned aggregate_size;    /* MCA: frame bound in bytes, 0: no packing */
static unsigned long long pv_packed;  /* put fragments sent packed */
/* the last frame sent was a small put to this window and peer */
static ompi_osc_nbe_module_t *burst_module;
static int burst_peer;
static struct {
    ompi_osc_nbe_module_t *module;   /* NULL: no open frame */
    int    peer;
    size_t len, cap;                 /* bytes used (header included), bound */
    size_t n;                        /* records (put fragments, control) in it */
    uint64_t nputs;                  /* put records, each a counted message */
    bool   has_ctrl;                 /* closed by a control message */
    bool   claimable;                /* its sender may take it over (osc_nbe_claim.c) */
    char  *buf;
} agg;

/* Send errors. OMPI_ERR_OUT_OF_RESOURCE: the BTL is busy, try again later.
 * Anything else is permanent (no BTL to the peer, a broken connection): the
 * window fails (NBE_ERR_COMM) and tells its other peers, and the frame is
 * dropped, so that no caller retries it forever. */
static int raw_send(ompi_osc_nbe_module_t *module, int peer, const void *hdr, size_t hdrlen,
                    const void *payload, size_t paylen);

/* peer < 0: not known (a completion callback reports the error) */
void ompi_osc_nbe_link_failed(ompi_osc_nbe_module_t *module, int peer, int rc)
{
    if (0 == nbe_engine_failed(module->engine) && peer >= 0) {
        opal_output_verbose(1, mca_osc_nbe_component.output,
                            "osc/nbe %d: window %u cannot send to %d (error %d); it fails",
                            module->rank, module->cid, peer, rc);
    } else if (0 == nbe_engine_failed(module->engine)) {
        opal_output_verbose(1, mca_osc_nbe_component.output,
                            "osc/nbe %d: window %u: a send completion reported error %d; it fails",
                            module->rank, module->cid, rc);
    }
    nbe_engine_fail_comm(module->engine);
}

/* A send's completion callback finds its window by id, not by pointer: the
 * window may be freed by the time the BTL reports (ids are never reused). */
static void *send_token(const ompi_osc_nbe_module_t *module)
{
    return (void *) (uintptr_t) module->cid;
}

/* The BTL owns the descriptor; some BTLs (vader) always call back. An
 * error here is a frame that was accepted and then lost (tcp reports a
 * connection that broke under queued sends this way): the window fails as
 * for a send refused at once. */
static void send_done(struct mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *ep,
                      struct mca_btl_base_descriptor_t *des, int status)
{
    (void) btl; (void) ep;
    if (OPAL_LIKELY(OPAL_SUCCESS == status)) return;
    uint32_t cid = (uint32_t) (uintptr_t) des->des_cbdata;
    ompi_osc_nbe_enter();
    ompi_osc_nbe_module_t *module = ompi_osc_nbe_window_lookup(cid);
    if (NULL == module) {
        opal_output_verbose(1, mca_osc_nbe_component.output,
                            "osc/nbe: a send of freed window %u failed (error %d)", cid, status);
    } else {
        ompi_osc_nbe_link_failed(module, -1, status);
    }
    ompi_osc_nbe_leave();
}

/* the frame being sent is the one armed for a take-over: raw_send leaves
 * the claim in place */
static bool sending_claimed;

/* send the open frame; OMPI_ERR_OUT_OF_RESOURCE keeps it open */
static int agg_flush(void)
{
    if (NULL == agg.module) return OMPI_SUCCESS;
    nbe_am_hdr_t *hdr = (nbe_am_hdr_t *) agg.buf;
    nbe_am_hdr_t one, *out = hdr;
    nbe_am_sub_t sub;
    int rc;
    if (1 == agg.n && !agg.has_ctrl) {
        /* a lone put leaves as a plain PUT frame: no packing cost at the target */
        one = *hdr;
        memcpy(&sub, agg.buf + sizeof(*hdr), sizeof(sub));
        one.type = NBE_AM_PUT;
        one.addr = sub.addr;
        one.fence_tag = sub.fence_tag;
        one.len = sub.len;
        out = &one;
    } else {
        hdr->len = (uint32_t) (agg.len - sizeof(*hdr));
    }
    sending_claimed = agg.claimable && ompi_osc_nbe_claim_arm(agg.module, agg.peer, agg.nputs, out);
    if (out == &one) {
        rc = raw_send(agg.module, agg.peer, &one, sizeof(one), agg.buf + sizeof(*hdr) + sizeof(sub),
                      sub.len);
    } else {
        rc = raw_send(agg.module, agg.peer, agg.buf, agg.len, NULL, 0);
    }
    if (sending_claimed) {
        /* its records stay with the window while it may take the frame over */
        if (OMPI_SUCCESS == rc) ompi_osc_nbe_claim_keep(agg.module, &agg.buf, &agg.cap, agg.len);
        else ompi_osc_nbe_claim_disarm(agg.module, out);
        sending_claimed = false;
    }
    if (OMPI_ERR_OUT_OF_RESOURCE == rc) return rc;
    /* sent, or lost for good (the window failed) */
    agg.module = NULL;
    return OMPI_SUCCESS;
}

bool ompi_osc_nbe_packed_frame_open(const ompi_osc_nbe_module_t *module)
{
    return agg.module == module;
}

/* the largest put fragment worth packing */
static size_t agg_item_max(void)
{
    return aggregate_size / 4;
}

static int try_send(ompi_osc_nbe_module_t *module, int peer, const void *hdr, size_t hdrlen,
                    const void *payload, size_t paylen);

/* pack one put fragment; OMPI_ERR_OUT_OF_RESOURCE if the BTL is busy (the
 * fragment is not taken), OMPI_ERR_UNREACH without a BTL to the peer.
 * claimable: a put of a passive epoch, one counted message, that its
 * origin may apply itself if the target leaves MPI before it */
static int agg_add(ompi_osc_nbe_module_t *module, int peer, const nbe_am_hdr_t *frag,
                   const void *data, bool claimable)
{
    size_t need = sizeof(nbe_am_sub_t) + ((frag->len + 7) & ~(size_t) 7);
    if (agg.module && (agg.module != module || agg.peer != peer || agg.len + need > agg.cap)) {
        if (OMPI_SUCCESS != agg_flush()) return OMPI_ERR_OUT_OF_RESOURCE;
    }
    if (NULL == agg.module) {
        mca_bml_base_btl_t *b = peer_btl(module, peer);
        size_t cap = aggregate_size;
        if (NULL == b) {
            ompi_osc_nbe_link_failed(module, peer, OMPI_ERR_UNREACH);
            return OMPI_ERR_UNREACH;
        }
        if (b->btl->btl_eager_limit < cap) cap = b->btl->btl_eager_limit;
        if (cap < sizeof(nbe_am_hdr_t) + need) cap = sizeof(nbe_am_hdr_t) + need;
        if (cap > agg.cap) {
            char *nb = realloc(agg.buf, cap);
            /* no memory to pack: this fragment goes as a frame of its own
             * (reporting "busy" would have the caller retry for ever) */
            if (NULL == nb) return try_send(module, peer, frag, sizeof(*frag), data, frag->len);
            agg.buf = nb;
        }
        agg.cap = cap;
        ompi_osc_nbe_hdr_init((nbe_am_hdr_t *) agg.buf, module, NBE_AM_PUT_MULTI);
        agg.module = module;
        agg.peer = peer;
        agg.len = sizeof(nbe_am_hdr_t);
        agg.n = 0;
        agg.nputs = 0;
        agg.has_ctrl = false;
        agg.claimable = true;
    }
    nbe_am_sub_t sub = { .addr = frag->addr, .fence_tag = frag->fence_tag, .len = frag->len,
                         .kind = NBE_SUB_PUT };
    memcpy(agg.buf + agg.len, &sub, sizeof(sub));
    ompi_scale_copy(agg.buf + agg.len + sizeof(sub), data, frag->len);
    ((nbe_am_hdr_t *) agg.buf)->flags |= frag->flags;
    agg.len += need;
    agg.n++;
    agg.nputs++;
    agg.claimable &= claimable;
    pv_packed++;
    if (agg.len + sizeof(nbe_am_sub_t) + 8 > agg.cap) (void) agg_flush();
    return OMPI_SUCCESS;
}

/* a control message for the peer of the open frame closes that frame: it
 * rides in it after the puts (one frame instead of two: a put followed by
 * a flush, unlock, DONE or fence is one message to the target). false: no
 * open frame to this peer or no room (send it on its own). */
static bool agg_close_with_ctrl(ompi_osc_nbe_module_t *module, int peer, const nbe_ctrl_t *msg)
{
    size_t need = sizeof(nbe_am_sub_t) + sizeof(*msg);
    if (agg.module != module || agg.peer != peer || agg.len + need > agg.cap) return false;
    nbe_am_sub_t sub = { .addr = 0, .fence_tag = 0, .len = sizeof(*msg), .kind = NBE_SUB_CTRL };
    memcpy(agg.buf + agg.len, &sub, sizeof(sub));
    memcpy(agg.buf + agg.len + sizeof(sub), msg, sizeof(*msg));
    agg.len += need;
    agg.n++;
    agg.has_ctrl = true;
    agg.claimable &= ompi_osc_nbe_claim_ctrl_ok(msg);
    /* busy: the frame stays open, still ahead of every later frame */
    (void) agg_flush();
    return true;
}

/* try to hand one frame to the BTL; OMPI_ERR_OUT_OF_RESOURCE if busy */
static int try_send(ompi_osc_nbe_module_t *module, int peer, const void *hdr, size_t hdrlen,
                    const void *payload, size_t paylen)
{
    if (agg.module && OMPI_SUCCESS != agg_flush()) return OMPI_ERR_OUT_OF_RESOURCE;
    burst_module = NULL;
    return raw_send(module, peer, hdr, hdrlen, payload, paylen);
}

/* send a small put fragment now, or pack it if it continues a burst */
static int put_small(ompi_osc_nbe_module_t *module, int peer, const nbe_am_hdr_t *frag,
                     const void *data)
{
    if ((agg.module == module && agg.peer == peer) ||
        (NULL == agg.module && burst_module == module && burst_peer == peer)) {
        return agg_add(module, peer, frag, data, false);
    }
    int rc = try_send(module, peer, frag, sizeof(*frag), data, frag->len);
    if (OMPI_SUCCESS != rc) return rc;
    burst_module = module;
    burst_peer = peer;
    return OMPI_SUCCESS;
}

/* Immediate sends (btl_sendi: vader's per-peer fast box). A BTL need not
 * keep them in order with frames of its ordinary send path (vader does: it
 * routes FIFO fragments through an active fast box), so only frames whose
 * order does not matter use them:
 * control messages, replies and FINs (the engine counts, a target waits for
 * the announced totals), puts and gets (MPI orders only accumulates; puts
 * and gets to one location in one epoch conflict). Accumulate, get-
 * accumulate and compare-and-swap frames keep the ordered path. */
#define NBE_SENDI_MAX 512

static opal_convertor_t sendi_conv;    /* zero bytes: the whole frame is the "header" */
static bool sendi_conv_ready;

static bool may_overtake(const void *hdr)
{
    switch (((const nbe_am_hdr_t *) hdr)->type) {
    case NBE_AM_ACC:
    case NBE_AM_GACC:
    case NBE_AM_CAS:
        return false;
    default:
        return true;
    }
}

static int try_sendi(mca_bml_base_btl_t *bml_btl, const void *hdr, size_t hdrlen, const void *payload,
                     size_t paylen)
{
    char frame[NBE_SENDI_MAX];
    if (!sendi_conv_ready) {
        OBJ_CONSTRUCT(&sendi_conv, opal_convertor_t);
        opal_convertor_copy_and_prepare_for_send(ompi_mpi_local_convertor, &ompi_mpi_byte.dt.super, 0,
                                                 NULL, 0, &sendi_conv);
        sendi_conv_ready = true;
    }
    memcpy(frame, hdr, hdrlen);
    if (paylen) memcpy(frame + hdrlen, payload, paylen);
    return mca_bml_base_sendi(bml_btl, &sendi_conv, frame, hdrlen + paylen, 0, MCA_BTL_NO_ORDER,
                              MCA_BTL_DES_FLAGS_PRIORITY | MCA_BTL_DES_FLAGS_BTL_OWNERSHIP,
                              (mca_btl_base_tag_t) mca_osc_nbe_component.btl_tag, NULL);
}

/* the last btl_send handed its frame over completely (an immediate send,
 * or a send the BTL reports complete): it reaches the peer without our
 * progress. Read by ompi_osc_nbe_send_ctrl_cb. */
static bool last_send_done;

static int btl_send(ompi_osc_nbe_module_t *module, int peer, const void *hdr, size_t hdrlen,
                    const void *payload, size_t paylen)
{
    mca_bml_base_btl_t *bml_btl = peer_btl(module, peer);
    mca_btl_base_descriptor_t *des = NULL;
    int rc;

    if (NULL == bml_btl) return OMPI_ERR_UNREACH;
    if (use_sendi && NULL != bml_btl->btl->btl_sendi && hdrlen + paylen <= NBE_SENDI_MAX &&
        may_overtake(hdr) && OPAL_SUCCESS == try_sendi(bml_btl, hdr, hdrlen, payload, paylen)) {
        last_send_done = true;
        return OMPI_SUCCESS;
    }
    mca_bml_base_alloc(bml_btl, &des, MCA_BTL_NO_ORDER, hdrlen + paylen,
                       MCA_BTL_DES_FLAGS_PRIORITY | MCA_BTL_DES_FLAGS_BTL_OWNERSHIP);
    if (NULL == des) return OMPI_ERR_OUT_OF_RESOURCE;
    char *p = des->des_segments[0].seg_addr.pval;
    memcpy(p, hdr, hdrlen);
    if (paylen) ompi_scale_copy(p + hdrlen, payload, paylen);
    des->des_segments[0].seg_len = hdrlen + paylen;
    des->des_cbfunc = send_done;
    des->des_cbdata = send_token(module);
    rc = mca_bml_base_send(bml_btl, des, (mca_btl_base_tag_t) mca_osc_nbe_component.btl_tag);
    last_send_done = 1 == rc;
    if (OPAL_UNLIKELY(rc < 0)) {
        mca_bml_base_free(bml_btl, des);
        bool busy = OPAL_ERR_RESOURCE_BUSY == rc || OPAL_ERR_OUT_OF_RESOURCE == rc ||
                    OPAL_ERR_TEMP_OUT_OF_RESOURCE == rc;
        return busy ? OMPI_ERR_OUT_OF_RESOURCE : rc;
    }
    return OMPI_SUCCESS;
}

/* osc_nbe_test_break_link "A,B,N": a window's connection between its ranks
 * A and B breaks after A's N-th frame to B. A's later frames to B fail as
 * unreachable; B sees the break when that N-th frame arrives (its window
 * fails, and its frames to A fail from then on), as both ends of a broken
 * connection would. With ",late", A's sends do not fail: the N-th frame and
 * the later ones report the error through their completion callback (from
 * the next progress call), and the later ones are lost. */
static bool test_on_link(const ompi_osc_nbe_module_t *module, int peer, int from, int to)
{
    const ompi_osc_nbe_component_t *c = &mca_osc_nbe_component;
    return c->test_break_after >= 0 && module->rank == from && peer == to &&
           ((from == c->test_break_a && to == c->test_break_b) ||
            (from == c->test_break_b && to == c->test_break_a));
}

/* A counts the frames it sent to B, B those it received from A */
static bool test_link_broken(ompi_osc_nbe_module_t *module, int peer)
{
    const ompi_osc_nbe_component_t *c = &mca_osc_nbe_component;
    if (OPAL_LIKELY(c->test_break_after < 0)) return false;
    return (test_on_link(module, peer, c->test_break_a, c->test_break_b) ||
            test_on_link(module, peer, c->test_break_b, c->test_break_a)) &&
           module->test_frames_on_link >= (unsigned) c->test_break_after;
}

/* a failed completion still to report (",late") */
static bool test_late_pending;
static void *test_late_token;

void ompi_osc_nbe_test_report_late(void)
{
    if (!test_late_pending) return;
    test_late_pending = false;
    mca_btl_base_descriptor_t des;
    memset(&des, 0, sizeof(des));
    des.des_cbdata = test_late_token;
    send_done(NULL, NULL, &des, OPAL_ERR_UNREACH);
}

static void test_link_lost(ompi_osc_nbe_module_t *module, int peer)
{
    if (mca_osc_nbe_component.test_break_late) {
        test_late_token = send_token(module);
        test_late_pending = true;
    } else {
        ompi_osc_nbe_link_failed(module, peer, OMPI_ERR_UNREACH);
    }
}

/* A sees the break right after its N-th frame, as B does when it arrives */
static void test_link_sent(ompi_osc_nbe_module_t *module, int peer)
{
    const ompi_osc_nbe_component_t *c = &mca_osc_nbe_component;
    if (test_on_link(module, peer, c->test_break_a, c->test_break_b) &&
        ++module->test_frames_on_link >= (unsigned) c->test_break_after) {
        test_link_lost(module, peer);
    }
}

static void test_link_arrival(ompi_osc_nbe_module_t *module, int src)
{
    const ompi_osc_nbe_component_t *c = &mca_osc_nbe_component;
    if (module->rank != c->test_break_b || src != c->test_break_a) return;
    if (++module->test_frames_on_link >= (unsigned) c->test_break_after) {
        ompi_osc_nbe_link_failed(module, src, OMPI_ERR_UNREACH);
    }
}

/* a frame on a broken link: refused at once, or (",late" on A) accepted and
 * lost (test_link_sent then reports it late) */
static int test_send_broken(const ompi_osc_nbe_module_t *module)
{
    const ompi_osc_nbe_component_t *c = &mca_osc_nbe_component;
    return c->test_break_late && module->rank == c->test_break_a ? OMPI_SUCCESS : OMPI_ERR_UNREACH;
}

/* a control frame that a take-over answers too (a queued frame is all header) */
static bool keeps_claim(const void *hdr, size_t hdrlen, const void *payload, size_t paylen)
{
    nbe_ctrl_t msg;
    if (NBE_AM_CTRL != ((const nbe_am_hdr_t *) hdr)->type) return false;
    if (paylen >= sizeof(msg)) {
        memcpy(&msg, payload, sizeof(msg));
    } else if (hdrlen >= sizeof(nbe_am_hdr_t) + sizeof(msg)) {
        memcpy(&msg, (const char *) hdr + sizeof(nbe_am_hdr_t), sizeof(msg));
    } else {
        return false;
    }
    return ompi_osc_nbe_claim_ctrl_ok(&msg);
}

static int raw_send(ompi_osc_nbe_module_t *module, int peer, const void *hdr, size_t hdrlen,
                    const void *payload, size_t paylen)
{
    if (OPAL_UNLIKELY(module->claim.peer == peer) && !sending_claimed &&
        !keeps_claim(hdr, hdrlen, payload, paylen)) {
        ompi_osc_nbe_claim_sent_other(module, peer);
    }
    int rc = OPAL_UNLIKELY(test_link_broken(module, peer))
                 ? test_send_broken(module)
                 : btl_send(module, peer, hdr, hdrlen, payload, paylen);
    if (OPAL_UNLIKELY(OMPI_SUCCESS != rc && OMPI_ERR_OUT_OF_RESOURCE != rc)) {
        ompi_osc_nbe_link_failed(module, peer, rc);
    } else if (OPAL_UNLIKELY(mca_osc_nbe_component.test_break_after >= 0) && OMPI_SUCCESS == rc) {
        test_link_sent(module, peer);
    }
    return rc;
}

/* A small put taken without an op object, staging or plan (a put on a
 * create window is an active message; this builds that message and nothing
 * else). It goes into the open packed frame, which leaves with the next
 * synchronization message to this peer (one frame for put + flush), before
 * any other frame, when full, or at the next progress poll. A put too large
 * to pack (or with packing off) leaves at once as one PUT frame if it fits
 * one fragment.
 * Declined (the general path takes the put) from the epoch kind's RDMA
 * threshold, for a passive target away from MPI that RDMA can reach, and
 * while a frame of this window waits in its out-queue, whose order must be
 * kept. */
int ompi_osc_nbe_put_now(ompi_osc_nbe_module_t *module, int peer, uint64_t addr,
                         uint64_t fence_tag, const void *data, size_t len, bool passive)
{
    if (!opal_list_is_empty(&module->outq)) return OMPI_ERR_OUT_OF_RESOURCE;
    nbe_am_hdr_t hdr;
    ompi_osc_nbe_hdr_init(&hdr, module, NBE_AM_PUT);
    hdr.flags = (fence_tag & NBE_TAG_EARLY) ? NBE_AM_F_EARLY : 0;
    hdr.fence_tag = fence_tag;
    hdr.addr = addr;
    hdr.len = (uint32_t) len;
    /* from the RDMA threshold the general path moves it (by RDMA where the
     * BTL has it: a threshold set below the packing bound asks for RDMA,
     * e.g. so that passive epochs never need the target's progress) */
    unsigned rdma_from = ompi_osc_nbe_rdma_from(true, passive);
    if (0 != rdma_from && len >= rdma_from) return OMPI_ERR_OUT_OF_RESOURCE;
    /* a passive target away from MPI: the general path moves it by RDMA */
    if (passive && NULL != ompi_osc_nbe_away_btl(module, peer, true)) return OMPI_ERR_OUT_OF_RESOURCE;
    if (len <= agg_item_max()) {
        return agg_add(module, peer, &hdr, data, passive && !(hdr.flags & NBE_AM_F_EARLY));
    }
    /* within one fragment: one frame now, behind the open packed frame */
    if (len > ompi_osc_nbe_max_payload(module, peer)) return OMPI_ERR_OUT_OF_RESOURCE;
    return try_send(module, peer, &hdr, sizeof(hdr), data, len);
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
    if (paylen) ompi_scale_copy(q->data + sizeof(*hdr), payload, paylen);
    opal_list_append(&module->outq, &q->super);
    return OMPI_SUCCESS;
}

void ompi_osc_nbe_tell_failure(ompi_osc_nbe_module_t *module, bool all)
{
    /* only the window that failed itself tells: its peers learn it from
     * it, so a failure costs size - 1 frames, not size^2 */
    int failed = nbe_engine_failed(module->engine);
    if (NBE_ERR_NOMEM != failed && NBE_ERR_COMM != failed) {
        module->failure_told = module->size;   /* nothing to tell: do not ask again */
        return;
    }
    nbe_am_hdr_t hdr;
    ompi_osc_nbe_hdr_init(&hdr, module, NBE_AM_FAILED);
    while (module->failure_told < module->size) {
        int peer = module->failure_told;
        int rc = peer == module->rank ? OMPI_SUCCESS : try_send(module, peer, &hdr, sizeof(hdr), NULL, 0);
        if (OMPI_ERR_OUT_OF_RESOURCE == rc) {
            if (!all) return;
            ompi_osc_nbe_progress();   /* may tell further peers itself */
            continue;
        }
        module->failure_told++;   /* sent, or that peer cannot be reached */
    }
}

int ompi_osc_nbe_send_ctrl_cb(void *ctx, int peer, const nbe_ctrl_t *msg)
{
    ompi_osc_nbe_module_t *module = (ompi_osc_nbe_module_t *) ctx;
    nbe_am_hdr_t hdr;
    nbe_ctrl_t noted;
    if (OPAL_UNLIKELY(0 != module->refusals_untold)) {
        noted = *msg;
        ompi_osc_nbe_note_refusal(module, peer, &noted);
        msg = &noted;
    }
    if (OPAL_UNLIKELY(mca_osc_nbe_component.verbose >= 50)) {
        opal_output(mca_osc_nbe_component.output, "osc/nbe %d: ctrl %d -> %d (a=%llu b=%llu)",
                    module->rank, msg->type, peer, (unsigned long long) msg->a,
                    (unsigned long long) msg->b);
    }
    /* 0: on its way (ring written, frame handed over complete), 1: queued */
    if (NULL != module->shm_rings) {
        int rc = ompi_osc_nbe_shm_send_ctrl(module, peer, msg);
        return OMPI_SUCCESS != rc ? rc : 0 != module->ring_npend;
    }
    last_send_done = false;
    if (agg_close_with_ctrl(module, peer, msg)) return agg.module || !last_send_done;
    ompi_osc_nbe_hdr_init(&hdr, module, NBE_AM_CTRL);
    hdr.len = sizeof(*msg);
    int rc = ompi_osc_nbe_send_frame(module, peer, &hdr, msg, sizeof(*msg), true);
    return OMPI_SUCCESS != rc ? rc : !last_send_done;
}

/* a control message that arrived, by any path (frame, packed record, ring) */
void ompi_osc_nbe_deliver_ctrl(ompi_osc_nbe_module_t *module, const nbe_ctrl_t *msg)
{
    if (OPAL_UNLIKELY(mca_osc_nbe_component.verbose >= 50)) {
        opal_output(mca_osc_nbe_component.output, "osc/nbe %d: ctrl %d <- %d (a=%llu b=%llu)",
                    module->rank, msg->type, msg->src, (unsigned long long) msg->a,
                    (unsigned long long) msg->b);
    }
    if (OPAL_UNLIKELY(0 != msg->note)) ompi_osc_nbe_read_note(module, msg);
    nbe_on_ctrl(module->engine, msg);
}

/* emit the next fragments of an op: OMPI_SUCCESS when all are out,
 * OMPI_ERR_OUT_OF_RESOURCE while the BTL is busy, another error when they
 * cannot be sent (the window failed) */
static int op_emit(ompi_osc_nbe_module_t *module, ompi_osc_nbe_op_t *op)
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
        ompi_osc_nbe_hdr_init(&hdr, module, am_type[op->type]);
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
        int rc = NBE_OP_PUT == op->type && f->len <= agg_item_max()
                     ? put_small(module, op->super.target, &hdr, payload)
                     : try_send(module, op->super.target, &hdr, sizeof(hdr), payload, paylen);
        if (OMPI_SUCCESS != rc) return rc;
        op->next_frag++;
    }
    return OMPI_SUCCESS;
}

/* all fragments of op are out: puts and accumulates are locally complete */
static void op_sent(ompi_osc_nbe_op_t *op)
{
    if (NBE_OP_PUT == op->type || NBE_OP_ACC == op->type) {
        ompi_osc_nbe_op_local_complete(op);
    } else if (0 == op->reply_left) {
        ompi_osc_nbe_op_local_complete(op);
    } else {
        ompi_osc_nbe_await_replies(op);
    }
}

/* queue an issued op; sends what the BTL takes now */
void ompi_osc_nbe_queue_op(ompi_osc_nbe_module_t *module, ompi_osc_nbe_op_t *op);
void ompi_osc_nbe_queue_op(ompi_osc_nbe_module_t *module, ompi_osc_nbe_op_t *op)
{
    if (opal_list_is_empty(&module->outq)) {
        int rc = op_emit(module, op);
        if (OMPI_SUCCESS == rc) {
            op_sent(op);
            return;
        }
        if (OMPI_ERR_OUT_OF_RESOURCE != rc) {
            ompi_osc_nbe_op_abandon(op);
            return;
        }
    }
    nbe_qentry_t *q = malloc(sizeof(*q));
    if (OPAL_UNLIKELY(NULL == q)) {
        opal_output(0, "osc/nbe: out of memory queueing an operation; the window fails");
        nbe_engine_fail(module->engine);
        /* ends its request; kept while a reply may still name it */
        ompi_osc_nbe_op_abandon(op);
        return;
    }
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
    if (agg.module) {
        if (OMPI_SUCCESS != agg_flush()) return 0;
        count++;
    }
    while (!opal_list_is_empty(&module->outq)) {
        nbe_qentry_t *q = (nbe_qentry_t *) opal_list_get_first(&module->outq);
        /* sent, or dropped for good (the window failed) */
        if (q->op) {
            int rc = op_emit(module, q->op);
            if (OMPI_ERR_OUT_OF_RESOURCE == rc) break;
            opal_list_remove_first(&module->outq);
            module->outq_ops--;
            ompi_osc_nbe_op_t *op = q->op;
            OBJ_DESTRUCT(&q->super);
            free(q);
            if (OMPI_SUCCESS == rc) op_sent(op);
            else ompi_osc_nbe_op_abandon(op);
        } else {
            if (OMPI_ERR_OUT_OF_RESOURCE == try_send(module, q->peer, q->data, q->len, NULL, 0)) break;
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
    int count = module->shm_rings ? ompi_osc_nbe_shm_poll_ctrl(module) : 0;
    count += ompi_osc_nbe_drain(module);
    int rc = nbe_progress(module->engine);
    if (rc > 0) count += rc;   /* not a failed engine's error code */
    if (OPAL_UNLIKELY(rc < 0)) {
        if (module->failure_told < module->size) ompi_osc_nbe_tell_failure(module, false);
        ompi_osc_nbe_abandon_awaiting(module);
    }
    if (!opal_list_is_empty(&module->held)) count += ompi_osc_nbe_hold_release(module);
    if (!opal_list_is_empty(&module->outq)) count += ompi_osc_nbe_drain(module);
    return count;
}

void ompi_osc_nbe_am_register_params(const mca_base_component_t *c)
{
    ompi_osc_nbe_register_bool(c, "use_sendi",
        "Send small control, reply, FIN, put and get frames with the BTL's immediate send "
        "(vader's fast box); accumulate frames always keep the ordered send path",
        OPAL_INFO_LVL_6, true, &use_sendi);
    ompi_osc_nbe_register_uint(c, "aggregate_size",
        "Pack small puts to one peer into one active message of at most this many bytes "
        "(bounded by the BTL's eager limit); puts of up to a quarter of it are packed. The "
        "packed frame leaves with the next synchronization message to that peer (a put "
        "followed by a flush, unlock, PSCW completion or fence is one message), before any "
        "other frame, when full, or at the next progress poll. 0: one message per put",
        OPAL_INFO_LVL_5, 4096, &aggregate_size);
    ompi_osc_nbe_register_counter(c, "puts_packed", "Small put fragments sent packed with others in one active "
                     "message", &pv_packed);
}

void ompi_osc_nbe_am_finalize(void)
{
    if (sendi_conv_ready) {
        OBJ_DESTRUCT(&sendi_conv);
        sendi_conv_ready = false;
    }
    agg.module = NULL;     /* every window flushed it when it closed its epochs */
    free(agg.buf);
    agg.buf = NULL;
    agg.cap = 0;
}

/* ---------------------------------------------------------------- */
/* receive side */

static void am_frame(const mca_btl_base_descriptor_t *des);

static void am_callback(mca_btl_base_module_t *btl, mca_btl_base_tag_t tag,
                        mca_btl_base_descriptor_t *des, void *cbdata)
{
    (void) btl; (void) tag; (void) cbdata;
    if (OPAL_UNLIKELY(mca_osc_nbe_component.finalized)) return;
    ompi_osc_nbe_enter();
    am_frame(des);
    ompi_osc_nbe_leave();
}

static void am_frame(const mca_btl_base_descriptor_t *des)
{
    const mca_btl_base_segment_t *segs = des->des_segments;
    size_t total = 0;
    char *buf, *tmp = NULL;

    for (size_t i = 0; i < des->des_segment_count; ++i) total += segs[i].seg_len;
    if (total < sizeof(nbe_am_hdr_t) || 0 == des->des_segment_count ||
        segs[0].seg_len < sizeof(nbe_am_hdr_t)) {
        opal_output(0, "osc/nbe: dropping a truncated frame (%zu bytes)", total);
        return;
    }
    nbe_am_hdr_t hdr;
    memcpy(&hdr, segs[0].seg_addr.pval, sizeof(hdr));
    void *mod = ompi_osc_nbe_window_lookup(hdr.cid);
    if (NULL == mod && NBE_AM_FAILED == hdr.type) return;   /* freed here already */
    if (NULL == mod) {
        opal_output(0, "osc/nbe: frame for unknown window %u from %d dropped", hdr.cid, hdr.src);
        return;
    }
    if (OPAL_UNLIKELY(hdr.src < 0 || hdr.src >= ((ompi_osc_nbe_module_t *) mod)->size)) {
        /* every handler below indexes per-peer state by it */
        opal_output(0, "osc/nbe: frame for window %u from rank %d outside it dropped", hdr.cid,
                    (int) hdr.src);
        return;
    }
    if (OPAL_UNLIKELY(mca_osc_nbe_component.test_break_after >= 0)) {
        test_link_arrival((ompi_osc_nbe_module_t *) mod, hdr.src);
    }
    if (1 == des->des_segment_count) {
        buf = segs[0].seg_addr.pval;
    } else {
        tmp = buf = malloc(total);
        if (OPAL_UNLIKELY(NULL == buf)) {
            opal_output(0, "osc/nbe: out of memory receiving a frame from %d; the window fails",
                        hdr.src);
            nbe_engine_fail(((ompi_osc_nbe_module_t *) mod)->engine);
            return;
        }
        size_t off = 0;
        for (size_t i = 0; i < des->des_segment_count; ++i) {
            ompi_scale_copy(buf + off, segs[i].seg_addr.pval, segs[i].seg_len);
            off += segs[i].seg_len;
        }
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
    if (tag <= 0 || tag >= MCA_BTL_TAG_MAX) {
        opal_show_help("help-osc-nbe.txt", "bad-tag", true, tag, MCA_BTL_TAG_MAX - 1);
        return OMPI_ERR_BAD_PARAM;
    }
    if (NULL != mca_btl_base_active_message_trigger[tag].cbfunc) {
        opal_show_help("help-osc-nbe.txt", "tag-in-use", true, tag);
        return OMPI_ERR_NOT_AVAILABLE;
    }
    int rc = mca_bml.bml_register((mca_btl_base_tag_t) tag, am_callback, NULL);
    if (OMPI_SUCCESS != rc) return rc;
    mca_osc_nbe_component.am_registered = true;
    return OMPI_SUCCESS;
}
