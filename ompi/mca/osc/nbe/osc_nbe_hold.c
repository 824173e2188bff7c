/*
 * osc/nbe: operation frames that arrive before the grant they need.
 *
 * With early messages on (nbe_engine_set_early_messages), an origin sends a
 * small put of its active fence epoch without waiting for the target's
 * FENCE_GRANT, and one of its start/lock epoch before the target's post or
 * lock grant. The target may then still be finishing the previous fence
 * (other origins' puts of it are in flight), not have called its first
 * fence yet, or not have posted / granted the lock. Such a frame is kept
 * whole and applied once the engine has the grant (nbe_message_ready):
 * only then does it count for its epoch, so no epoch completes without it.
 * Held frames are applied in arrival order. Control records packed in a
 * held frame are delivered at once, not held (see hold_puts).
 */
#include "ompi_config.h"

#include <stdlib.h>
#include <string.h>

#include "osc_nbe.h"

typedef struct held_frame {
    opal_list_item_t super;
    nbe_am_hdr_t     hdr;
    size_t           paylen;
    char             payload[];
} held_frame_t;

static bool early_puts;
static unsigned long long pv_held;

void ompi_osc_nbe_hold_register_params(const mca_base_component_t *c)
{
    ompi_osc_nbe_register_bool(c, "early_puts",
        "Send small contiguous puts (windows not in shared memory) as soon as the access "
        "epoch is open locally, without waiting for the target's grant (fence, post or "
        "lock); the target holds any that arrive before it granted and applies them then",
        OPAL_INFO_LVL_5, true, &early_puts);
    ompi_osc_nbe_register_counter(c, "early_frames",
        "Put frames that arrived before the grant their epoch needs (fence, post or lock) "
        "and were held until it existed", &pv_held);
}

void ompi_osc_nbe_hold_init(ompi_osc_nbe_module_t *module)
{
    OBJ_CONSTRUCT(&module->held, opal_list_t);
    module->held_bytes = 0;
    module->held_gen = 0;
    module->held_recheck = true;
}

void ompi_osc_nbe_hold_configure(ompi_osc_nbe_module_t *module)
{
    /* shared-memory windows apply puts directly and never send them */
    nbe_engine_set_early_messages(module->engine, early_puts && NULL == module->shm_base);
}

void ompi_osc_nbe_hold_fini(ompi_osc_nbe_module_t *module)
{
    opal_list_item_t *it;
    /* empty unless a program freed the window inside an epoch whose grant
     * never came (erroneous) */
    if (!opal_list_is_empty(&module->held)) {
        opal_output(0, "osc/nbe: window %u freed with %zu put frames still waiting for their grant; "
                    "they are dropped", module->cid, opal_list_get_size(&module->held));
    }
    while (NULL != (it = opal_list_remove_first(&module->held))) {
        OBJ_DESTRUCT(it);
        free(it);
    }
    OBJ_DESTRUCT(&module->held);
    module->held_bytes = 0;
}

/* every counted operation in the frame may be applied now */
static bool frame_ready(ompi_osc_nbe_module_t *module, const nbe_am_hdr_t *hdr,
                        const char *payload, size_t paylen)
{
    if (NBE_AM_PUT_MULTI != hdr->type) {
        return nbe_message_ready(module->engine, hdr->src, hdr->fence_tag);
    }
    nbe_am_sub_t sub;
    const char *rec;
    size_t reclen;
    while (nbe_am_next_sub(&payload, &paylen, &sub, &rec, &reclen)) {
        if (NBE_SUB_CTRL != sub.kind && !nbe_message_ready(module->engine, hdr->src, sub.fence_tag)) {
            return false;
        }
    }
    return true;
}

/* frames of src are held: the count in src's win_traits entry (src is a
 * rank of the window: am_callback drops other frames). Out of memory the
 * engine hands out a scratch entry, and the window has failed: its counts
 * no longer matter. */
static bool holds_from(ompi_osc_nbe_module_t *module, int src)
{
    return 0 != nbe_engine_peer_info(module->engine, src)->held_frames;
}

static void keep_put_record(void *ctx, const nbe_am_sub_t *sub, const char *rec, size_t reclen)
{
    held_frame_t *h = ctx;
    (void) sub;
    ompi_scale_copy(h->payload + h->paylen, rec, reclen);
    h->paylen += reclen;
}

/* Keeps the frame's puts; a control record packed in it (a FLUSH_ACK, GRANT,
 * DONE, ... that closed the sender's open frame) is delivered now: control
 * messages carry totals or are independent of the puts, and holding one
 * could hold the grant the puts wait for. */
static void hold_puts(ompi_osc_nbe_module_t *module, const nbe_am_hdr_t *hdr,
                      const char *payload, size_t paylen)
{
    held_frame_t *h = malloc(sizeof(*h) + paylen);
    if (OPAL_UNLIKELY(NULL == h)) {
        opal_output(0, "osc/nbe: out of memory holding an early frame from %d; the window fails",
                    hdr->src);
        nbe_engine_fail(module->engine);
        return;
    }
    OBJ_CONSTRUCT(&h->super, opal_list_item_t);
    h->hdr = *hdr;
    h->paylen = 0;
    if (NBE_AM_PUT_MULTI != hdr->type) {
        ompi_scale_copy(h->payload, payload, paylen);
        h->paylen = paylen;
    } else {
        (void) ompi_osc_nbe_multi_each(module, payload, paylen, keep_put_record, h);
    }
    if (0 == h->paylen) {   /* only control records */
        OBJ_DESTRUCT(&h->super);
        free(h);
        return;
    }
    opal_list_append(&module->held, &h->super);
    nbe_engine_peer_info(module->engine, hdr->src)->held_frames++;
    module->held_bytes += sizeof(*h) + h->paylen;
    pv_held++;
}

bool ompi_osc_nbe_hold_early(ompi_osc_nbe_module_t *module, const nbe_am_hdr_t *hdr,
                             const char *payload, size_t paylen)
{
    /* a frame whose puts were all sent after their grants is ready */
    bool early = hdr->flags & NBE_AM_F_EARLY;
    bool hold;
    if (OPAL_LIKELY(opal_list_is_empty(&module->held))) {
        if (OPAL_LIKELY(!early)) return false;
        hold = !frame_ready(module, hdr, payload, paylen);
    } else if (NBE_AM_CTRL == hdr->type || NBE_AM_REPLY == hdr->type ||
               NBE_AM_FAILED == hdr->type || NBE_AM_NOTE == hdr->type ||
               NBE_AM_NOTE_ACK == hdr->type) {
        return false;
    } else {
        /* a grant may have come since the last poll: what it readied goes
         * first (unless this frame arrived while held frames are being
         * applied: the next release takes it). A frame stays behind its
         * origin's held ones even if ready (with separate start and lock
         * grants a lock's frame can be ready while an earlier start epoch's
         * is not): totals count per origin, so an origin's frames are
         * applied in the order it sent them. */
        if (!module->releasing) (void) ompi_osc_nbe_hold_release(module);
        hold = holds_from(module, hdr->src) || (early && !frame_ready(module, hdr, payload, paylen));
        module->held_recheck |= hold;   /* held behind others, it may be ready already */
    }
    if (hold) hold_puts(module, hdr, payload, paylen);
    return hold;
}

/* Applies every held frame whose grant exists and that no earlier held
 * frame of its origin precedes, in arrival order. A frame that stays marks
 * its origin for the rest of the pass (in the origin's win_traits entry), so
 * a pass is linear in the held frames. */
int ompi_osc_nbe_hold_release(ompi_osc_nbe_module_t *module)
{
    int count = 0;
    held_frame_t *h, *next;

    if (module->releasing) return 0;   /* an applied frame led back here */
    /* readiness changes only with the engine's generation */
    uint64_t gen = nbe_engine_generation(module->engine);
    if (gen == module->held_gen && !module->held_recheck) return 0;
    module->held_gen = gen;
    module->held_recheck = false;
    module->releasing = true;
    /* 0 is what a new entry holds: never a pass */
    if (0 == ++module->held_pass) module->held_pass = 1;
    OPAL_LIST_FOREACH_SAFE (h, next, &module->held, held_frame_t) {
        nbe_peer_info_t *origin = nbe_engine_peer_info(module->engine, h->hdr.src);
        if (origin->held_pass == module->held_pass ||
            !frame_ready(module, &h->hdr, h->payload, h->paylen)) {
            origin->held_pass = module->held_pass;   /* its later frames wait too */
            continue;
        }
        opal_list_remove_item(&module->held, &h->super);
        origin->held_frames--;
        module->held_bytes -= sizeof(*h) + h->paylen;
        ompi_osc_nbe_apply_frame_now(module, &h->hdr, h->payload, h->paylen);
        OBJ_DESTRUCT(&h->super);
        free(h);
        count++;
    }
    module->releasing = false;
    return count;
}
