/*
 * osc/nbe target side: frames from the network applied to the window (puts,
 * packed puts, gets and their replies, accumulates under the accumulate
 * word, FINs, control messages), and the accesses a dynamic window refuses,
 * told back to their origin.
 */
#include "osc_nbe.h"
#include "osc_nbe_dt.h"

#include <string.h>

#include "opal/util/output.h"
#include "ompi/errhandler/errcode-internal.h"

/* the accumulate word under which this process applies the accumulate
 * frames others send it (windows with the tables segment), or NULL */
static volatile int32_t *acc_word_of_frames(ompi_osc_nbe_module_t *module)
{
    return NULL == module->shm_base ? ompi_osc_nbe_acc_word(module, module->rank) : NULL;
}

bool ompi_osc_nbe_multi_each(ompi_osc_nbe_module_t *module, const char *payload, size_t paylen,
                             ompi_osc_nbe_put_record_fn put, void *ctx)
{
    nbe_am_sub_t sub;
    const char *rec;
    size_t reclen;
    while (nbe_am_next_sub(&payload, &paylen, &sub, &rec, &reclen)) {
        if (NBE_SUB_PUT == sub.kind) {
            put(ctx, &sub, rec, reclen);
        } else if (sizeof(nbe_ctrl_t) == sub.len) {
            nbe_ctrl_t msg;
            memcpy(&msg, rec + sizeof(sub), sizeof(msg));
            ompi_osc_nbe_deliver_ctrl(module, &msg);
        }
    }
    return paylen < sizeof(nbe_am_sub_t);
}

struct put_target {
    ompi_osc_nbe_module_t *module;
    int                    src;
    bool                   refused;   /* the origin was told of a refused record */
    bool                   taken;     /* its origin applied the frame itself (osc_nbe_claim.c): only count */
};

/* ---- accesses a dynamic window refuses ---- */

/* a dynamic window takes only accesses inside its attached regions: any
 * other address may not be mapped here */
static bool refused_here(const ompi_osc_nbe_module_t *module, uint64_t addr, uint64_t len)
{
    return OPAL_UNLIKELY(MPI_WIN_FLAVOR_DYNAMIC == module->flavor) && 0 != len &&
           !ompi_osc_nbe_attached(module, addr, len);
}

void ompi_osc_nbe_note_remote_error(ompi_osc_nbe_module_t *module, int code)
{
    if (0 == module->remote_error) module->remote_error = code;
}

/* nbe_ctrl_t.note values: the sender refused an access of the receiver */
enum { NOTE_REFUSED_RANGE = 1, NOTE_REFUSED_NOMEM = 2 };

/* target: tell the origin why (code: an OMPI or MPI error code) it refused
 * [addr, +len). A fetching access gets its reply (*reply, flagged, no
 * data). Otherwise (reply NULL) the error rides on the next control message
 * to the origin, which is the flush or unlock ack that completes the access
 * when there is one (a separate frame could arrive after it: ring and BTL
 * are not ordered). */
static void send_refusal(ompi_osc_nbe_module_t *module, int origin, uint64_t addr, size_t len,
                         nbe_am_hdr_t *reply, int code)
{
    opal_output_verbose(10, mca_osc_nbe_component.output,
                        "osc/nbe: refused an access from %d to [%#llx, +%zu): %s", origin,
                        (unsigned long long) addr, len,
                        OMPI_ERR_RMA_RANGE == code ? "not attached" : "out of memory");
    if (NULL == reply) {
        /* a failed window sends no control message more: the origin learns
         * of the failure itself (NBE_AM_FAILED) */
        if (OPAL_UNLIKELY(nbe_engine_failed(module->engine))) return;
        ompi_osc_nbe_peer_t *g = nbe_engine_peer_info(module->engine, origin);
        if (0 == g->refused) {
            g->refused = code;
            module->refusals_untold++;
        }
        return;
    }
    reply->flags = NBE_AM_F_REFUSED;
    reply->len = (uint32_t) len;
    reply->op_idx = code;
    ompi_osc_nbe_send_frame(module, origin, reply, NULL, 0, true);
}

static bool refusal_untold(ompi_osc_nbe_module_t *module, int origin)
{
    if (OPAL_LIKELY(0 == module->refusals_untold)) return false;
    const ompi_osc_nbe_peer_t *g = nbe_engine_peer_info(module->engine, origin);
    return NULL != g && 0 != g->refused;
}

void ompi_osc_nbe_note_refusal(ompi_osc_nbe_module_t *module, int peer, nbe_ctrl_t *msg)
{
    ompi_osc_nbe_peer_t *g = nbe_engine_peer_info(module->engine, peer);
    if (NULL == g || 0 == g->refused) return;
    msg->note = OMPI_ERR_RMA_RANGE == g->refused ? NOTE_REFUSED_RANGE : NOTE_REFUSED_NOMEM;
    g->refused = 0;
    module->refusals_untold--;
}

void ompi_osc_nbe_read_note(ompi_osc_nbe_module_t *module, const nbe_ctrl_t *msg)
{
    ompi_osc_nbe_note_remote_error(module, NOTE_REFUSED_RANGE == msg->note ? OMPI_ERR_RMA_RANGE : MPI_ERR_NO_MEM);
}

static void send_note(ompi_osc_nbe_module_t *module, int peer, int type, int code)
{
    nbe_am_hdr_t hdr;
    ompi_osc_nbe_hdr_init(&hdr, module, type);
    hdr.op_idx = code;
    /* counted first: the ack may be handled inside the send. Queued when
     * the BTL is busy; a link that broke fails the window */
    if (NBE_AM_NOTE == type) module->notes_unacked++;
    if (OMPI_SUCCESS != ompi_osc_nbe_send_frame(module, peer, &hdr, NULL, 0, true) &&
        NBE_AM_NOTE == type) {
        module->notes_unacked--;
    }
}

static void tell_untold(void *ctx, int rank, ompi_osc_nbe_peer_t *g)
{
    ompi_osc_nbe_module_t *module = ctx;
    if (0 == g->refused) return;
    if (rank == module->rank) {
        ompi_osc_nbe_note_remote_error(module, g->refused);
    } else {
        send_note(module, rank, NBE_AM_NOTE, g->refused);
    }
    g->refused = 0;
    module->refusals_untold--;
}

void ompi_osc_nbe_tell_refusals(ompi_osc_nbe_module_t *module)
{
    if (OPAL_LIKELY(0 == module->refusals_untold)) return;
    nbe_engine_each_peer_info(module->engine, tell_untold, module);
    while (0 != module->notes_unacked && 0 == nbe_engine_failed(module->engine)) {
        ompi_osc_nbe_progress();
    }
}

static void apply_put_record(void *ctx, const nbe_am_sub_t *sub, const char *rec, size_t reclen)
{
    struct put_target *t = ctx;
    (void) reclen;
    if (OPAL_UNLIKELY(t->taken)) {
        /* nothing to write */
    } else if (OPAL_UNLIKELY(refused_here(t->module, sub->addr, sub->len))) {
        if (!t->refused) {
            t->refused = true;
            send_refusal(t->module, t->src, sub->addr, sub->len, NULL, OMPI_ERR_RMA_RANGE);
        }
    } else {
        ompi_scale_copy((void *) (uintptr_t) sub->addr, rec + sizeof(*sub), sub->len);
    }
    nbe_on_op_arrived(t->module->engine, t->src, sub->fence_tag);
}

void ompi_osc_nbe_apply_frame(ompi_osc_nbe_module_t *module, const nbe_am_hdr_t *hdr,
                              const char *payload, size_t paylen)
{
    if (OPAL_UNLIKELY(ompi_osc_nbe_hold_early(module, hdr, payload, paylen))) return;
    ompi_osc_nbe_apply_frame_now(module, hdr, payload, paylen);
}

void ompi_osc_nbe_apply_frame_now(ompi_osc_nbe_module_t *module, const nbe_am_hdr_t *hdr,
                                  const char *payload, size_t paylen)
{
    void *addr = (void *) (uintptr_t) hdr->addr;
    nbe_am_hdr_t rep;

    switch (hdr->type) {
    case NBE_AM_CTRL: {
        nbe_ctrl_t msg;
        if (paylen < sizeof(msg)) return;
        memcpy(&msg, payload, sizeof(msg));
        ompi_osc_nbe_deliver_ctrl(module, &msg);
        return;
    }
    case NBE_AM_REPLY: {
        ompi_osc_nbe_op_t *op = (ompi_osc_nbe_op_t *) (uintptr_t) hdr->cookie;
        /* the target's arrival count at reply time: a free flush ack */
        if (hdr->fence_tag) nbe_note_remote_ack(module->engine, hdr->src, hdr->fence_tag);
        if (OPAL_UNLIKELY(op->abandoned)) return;   /* its request completed with an error */
        size_t got = paylen;
        if (OPAL_UNLIKELY(hdr->flags & NBE_AM_F_REFUSED)) {
            got = hdr->len;
            op->refused = true;
            ompi_osc_nbe_note_remote_error(module, hdr->op_idx);
            if (op->req) {
                op->req->super.req_status.MPI_ERROR = ompi_errcode_get_mpi_code(hdr->op_idx);
            }
        } else {
            ompi_scale_copy(op->result + hdr->offset, payload, paylen);
        }
        op->reply_left -= got;
        if (0 == op->reply_left && op->next_frag == op->nplan) ompi_osc_nbe_op_local_complete(op);
        return;
    }
    case NBE_AM_FAILED:
        opal_output_verbose(1, mca_osc_nbe_component.output,
                            "osc/nbe %d: window %u failed at rank %d; it fails here too", module->rank,
                            module->cid, hdr->src);
        nbe_engine_fail_peer(module->engine);
        return;
    case NBE_AM_NOTE:
        ompi_osc_nbe_note_remote_error(module, hdr->op_idx);
        send_note(module, hdr->src, NBE_AM_NOTE_ACK, 0);
        return;
    case NBE_AM_NOTE_ACK:
        module->notes_unacked--;
        return;
    case NBE_AM_PUT_MULTI:
        /* packed small puts, each one counted operation, in order with the
         * control message that may close the frame */
    {
        struct put_target t = { module, hdr->src, false, false };
        t.taken = (hdr->flags & NBE_AM_F_CLAIM) && ompi_osc_nbe_claim_skip(module, hdr);
        if (!ompi_osc_nbe_multi_each(module, payload, paylen, apply_put_record, &t)) {
            opal_output(0, "osc/nbe: truncated packed put from %d dropped", hdr->src);
        }
    }
        return;
    default:
        break;
    }

    /* operation fragments */
    ompi_osc_nbe_hdr_init(&rep, module, NBE_AM_REPLY);
    rep.cookie = hdr->cookie;
    rep.offset = hdr->offset;
    bool fetching = NBE_AM_GET == hdr->type || NBE_AM_GACC == hdr->type || NBE_AM_CAS == hdr->type;
    if (fetching) {
        /* count first, so the reply can carry the arrival count (outside fences) */
        nbe_on_op_arrived(module->engine, hdr->src, hdr->fence_tag);
        /* ... but not while a refusal waits for the next control message
         * to the origin: the flush must then ask, and get it with the ack */
        if (0 == hdr->fence_tag && !refusal_untold(module, hdr->src)) {
            rep.fence_tag = nbe_ops_in_from(module->engine, hdr->src);
        }
    }

    size_t span = fetching ? hdr->len : paylen;
    if (OPAL_UNLIKELY(refused_here(module, hdr->addr, span))) {
        send_refusal(module, hdr->src, hdr->addr, span, fetching ? &rep : NULL, OMPI_ERR_RMA_RANGE);
        if (!fetching) nbe_on_op_arrived(module->engine, hdr->src, hdr->fence_tag);
        return;
    }

    switch (hdr->type) {
    case NBE_AM_PUT:
        if (!(hdr->flags & NBE_AM_F_CLAIM) || !ompi_osc_nbe_claim_skip(module, hdr)) {
            ompi_scale_copy(addr, payload, paylen);
        }
        break;
    case NBE_AM_GET:
    case NBE_AM_GACC: {
        /* a fetching accumulate is applied before its reply leaves: once the
         * origin sees the reply (and the arrival count it carries, a flush
         * ack) the update must be visible to everybody */
        const char *old = addr;
        char *copy = NULL, small[256];
        /* origins of this node may update our memory themselves under our
         * accumulate word (osc_nbe_cma.c): what a fetch reads is copied
         * under it too */
        volatile int32_t *word = NBE_AM_GACC == hdr->type ? acc_word_of_frames(module) : NULL;
        if (NBE_AM_GACC == hdr->type && (paylen || word)) {
            copy = hdr->len <= sizeof(small) ? small : malloc(hdr->len);
            if (OPAL_UNLIKELY(NULL == copy)) {
                /* not applied; the origin's reply says why */
                send_refusal(module, hdr->src, hdr->addr, hdr->len, &rep, MPI_ERR_NO_MEM);
                return;
            }
            if (word) ompi_osc_nbe_acc_word_lock(word);
            ompi_scale_copy(copy, addr, hdr->len);
            old = copy;
            if (paylen) {
                apply_acc(op_from_idx(hdr->op_idx), dt_from_idx(hdr->dt_idx), payload, addr,
                          paylen);
            }
            if (word) ompi_osc_nbe_acc_word_unlock(word);
        }
        /* reply with the previous contents, split to what the BTL takes */
        size_t max = ompi_osc_nbe_max_payload(module, hdr->src);
        for (size_t off = 0; off < hdr->len; off += max) {
            size_t n = hdr->len - off < max ? hdr->len - off : max;
            rep.offset = hdr->offset + off;
            rep.len = (uint32_t) n;
            ompi_osc_nbe_send_frame(module, hdr->src, &rep, old + off, n, true);
        }
        if (copy != small) free(copy);
        break;
    }
    case NBE_AM_ACC: {
        volatile int32_t *word = acc_word_of_frames(module);
        if (word) ompi_osc_nbe_acc_word_lock(word);
        apply_acc(op_from_idx(hdr->op_idx), dt_from_idx(hdr->dt_idx), payload, addr, paylen);
        if (word) ompi_osc_nbe_acc_word_unlock(word);
        break;
    }
    case NBE_AM_FIN:
        break;
    case NBE_AM_CAS: {
        char old[32];
        if (hdr->len > sizeof(old)) return;
        volatile int32_t *word = acc_word_of_frames(module);
        if (word) ompi_osc_nbe_acc_word_lock(word);
        memcpy(old, addr, hdr->len);
        if (0 == memcmp(addr, payload, hdr->len)) memcpy(addr, payload + hdr->len, hdr->len);
        if (word) ompi_osc_nbe_acc_word_unlock(word);
        rep.len = hdr->len;
        ompi_osc_nbe_send_frame(module, hdr->src, &rep, old, hdr->len, true);
        break;
    }
    default:
        opal_output(0, "osc/nbe: unknown frame type %d from %d", hdr->type, hdr->src);
        return;
    }
    if (NBE_AM_PUT == hdr->type || NBE_AM_ACC == hdr->type || NBE_AM_FIN == hdr->type) {
        nbe_on_op_arrived(module->engine, hdr->src, hdr->fence_tag);
    }
}
