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
 * Frames of one origin are applied in arrival order; control records
 * packed in a held frame wait with the puts before them.
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
    early_puts = true;
    (void) mca_base_component_var_register(c, "early_puts",
        "Send small contiguous puts (windows not in shared memory) as soon as the access "
        "epoch is open locally, without waiting for the target's grant (fence, post or "
        "lock); the target holds any that arrive before it granted and applies them then",
        MCA_BASE_VAR_TYPE_BOOL, NULL, 0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_LOCAL,
        &early_puts);
    ompi_osc_nbe_register_counter(c, "early_frames",
        "Put frames that arrived before the grant their epoch needs (fence, post or lock) "
        "and were held until it existed", &pv_held);
}

void ompi_osc_nbe_hold_init(ompi_osc_nbe_module_t *module)
{
    OBJ_CONSTRUCT(&module->held, opal_list_t);
    module->held_bytes = 0;
}

void ompi_osc_nbe_hold_configure(ompi_osc_nbe_module_t *module)
{
    /* shared-memory windows apply puts directly and never send them */
    nbe_engine_set_early_messages(module->engine, early_puts && NULL == module->shm_base);
}

void ompi_osc_nbe_hold_fini(ompi_osc_nbe_module_t *module)
{
    opal_list_item_t *it;
    /* empty unless the window is torn down after a failed creation */
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
    while (paylen >= sizeof(nbe_am_sub_t)) {
        nbe_am_sub_t sub;
        memcpy(&sub, payload, sizeof(sub));
        size_t step = sizeof(sub) + ((sub.len + 7) & ~(size_t) 7);
        if (NBE_SUB_CTRL != sub.kind && !nbe_message_ready(module->engine, hdr->src, sub.fence_tag)) {
            return false;
        }
        if (step >= paylen) break;
        payload += step;
        paylen -= step;
    }
    return true;
}

static bool holds_from(const ompi_osc_nbe_module_t *module, int src)
{
    held_frame_t *h;
    OPAL_LIST_FOREACH (h, &module->held, held_frame_t) {
        if (h->hdr.src == src) return true;
    }
    return false;
}

bool ompi_osc_nbe_hold_early(ompi_osc_nbe_module_t *module, const nbe_am_hdr_t *hdr,
                             const char *payload, size_t paylen)
{
    if (NBE_AM_CTRL == hdr->type || NBE_AM_REPLY == hdr->type) return false;
    if (OPAL_UNLIKELY(!opal_list_is_empty(&module->held))) {
        /* a grant may have come since the last poll; then nothing of this
         * origin may pass what it sent before */
        (void) ompi_osc_nbe_hold_release(module);
        if (holds_from(module, hdr->src)) goto hold;
    }
    if (frame_ready(module, hdr, payload, paylen)) return false;

hold:;
    held_frame_t *h = malloc(sizeof(*h) + paylen);
    if (NULL == h) {
        opal_output(0, "osc/nbe: out of memory holding an early frame from %d", hdr->src);
        abort();
    }
    OBJ_CONSTRUCT(&h->super, opal_list_item_t);
    h->hdr = *hdr;
    h->paylen = paylen;
    memcpy(h->payload, payload, paylen);
    opal_list_append(&module->held, &h->super);
    module->held_bytes += sizeof(*h) + paylen;
    pv_held++;
    return true;
}

/* Applies every held frame whose grant exists, keeping each origin's order:
 * a frame waits while an earlier one of its origin does. The blocked
 * origins are few (those with epochs not granted yet), so a short array. */
int ompi_osc_nbe_hold_release(ompi_osc_nbe_module_t *module)
{
    int count = 0, nblocked = 0, blocked[16];
    bool overflow = false;
    held_frame_t *h, *next;

    if (module->releasing) return 0;   /* an applied frame led back here */
    module->releasing = true;
    OPAL_LIST_FOREACH_SAFE (h, next, &module->held, held_frame_t) {
        bool behind = overflow;
        for (int i = 0; i < nblocked && !behind; ++i) behind = blocked[i] == h->hdr.src;
        if (behind || !frame_ready(module, &h->hdr, h->payload, h->paylen)) {
            if (!behind) {
                if (nblocked < (int) (sizeof(blocked) / sizeof(blocked[0]))) blocked[nblocked++] = h->hdr.src;
                else overflow = true;   /* keep everything after this in place */
            }
            continue;
        }
        opal_list_remove_item(&module->held, &h->super);
        module->held_bytes -= sizeof(*h) + h->paylen;
        ompi_osc_nbe_apply_frame_now(module, &h->hdr, h->payload, h->paylen);
        OBJ_DESTRUCT(&h->super);
        free(h);
        count++;
    }
    module->releasing = false;
    return count;
}
