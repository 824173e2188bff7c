/*
 * osc/nbe: operation frames of a fence epoch that arrive before this
 * process opened that epoch.
 *
 * With early fence messages on (nbe_engine_set_early_fence_messages), an
 * origin sends a put of its active fence epoch f without waiting for the
 * target's FENCE_GRANT(f). The target may then still be finishing fence
 * f-1 (other origins' puts of f-1 are in flight), or, for the first fence,
 * not have called it yet. Such a frame is kept whole and applied, in
 * arrival order, once the engine has activated epoch f: only then does it
 * count for the epoch, so fence f cannot complete without it. Control
 * records packed in a held frame wait with the puts before them.
 */
#include "ompi_config.h"

#include <stdlib.h>
#include <string.h>

#include "osc_nbe.h"

typedef struct held_frame {
    opal_list_item_t super;
    uint64_t         fence_tag;
    nbe_am_hdr_t     hdr;
    size_t           paylen;
    char             payload[];
} held_frame_t;

static bool early_fence_puts;
static unsigned long long pv_held;

void ompi_osc_nbe_hold_register_params(const mca_base_component_t *c)
{
    early_fence_puts = true;
    (void) mca_base_component_var_register(c, "early_fence_puts",
        "Send small contiguous puts of a fence epoch (non-shared-memory windows) as soon as "
        "the local MPI_Win_fence returns, without waiting for the target's fence grant; the "
        "target holds any that arrive before its own fence call and applies them then",
        MCA_BASE_VAR_TYPE_BOOL, NULL, 0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_LOCAL,
        &early_fence_puts);
    ompi_osc_nbe_register_counter(c, "early_fence_frames",
        "Put frames of a fence epoch that arrived before this process opened the epoch and "
        "were held until it did", &pv_held);
}

void ompi_osc_nbe_hold_init(ompi_osc_nbe_module_t *module)
{
    OBJ_CONSTRUCT(&module->held, opal_list_t);
    module->held_bytes = 0;
}

void ompi_osc_nbe_hold_configure(ompi_osc_nbe_module_t *module)
{
    /* shared-memory windows apply puts directly and never send them */
    nbe_engine_set_early_fence_messages(module->engine,
                                        early_fence_puts && NULL == module->shm_base);
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

/* the fence tag of an operation frame: the largest of its packed puts */
static uint64_t frame_fence_tag(const nbe_am_hdr_t *hdr, const char *payload, size_t paylen)
{
    uint64_t tag = 0;
    if (NBE_AM_PUT_MULTI != hdr->type) return hdr->fence_tag;
    while (paylen >= sizeof(nbe_am_sub_t)) {
        nbe_am_sub_t sub;
        memcpy(&sub, payload, sizeof(sub));
        size_t step = sizeof(sub) + ((sub.len + 7) & ~(size_t) 7);
        if (NBE_SUB_CTRL != sub.kind && sub.fence_tag > tag) tag = sub.fence_tag;
        if (step >= paylen) break;
        payload += step;
        paylen -= step;
    }
    return tag;
}

bool ompi_osc_nbe_hold_early(ompi_osc_nbe_module_t *module, const nbe_am_hdr_t *hdr,
                             const char *payload, size_t paylen)
{
    if (NBE_AM_CTRL == hdr->type || NBE_AM_REPLY == hdr->type) return false;
    uint64_t tag = frame_fence_tag(hdr, payload, paylen);
    if (nbe_fence_tag_ready(module->engine, tag)) return false;

    held_frame_t *h = malloc(sizeof(*h) + paylen);
    if (NULL == h) {
        opal_output(0, "osc/nbe: out of memory holding an early fence frame from %d", hdr->src);
        abort();
    }
    OBJ_CONSTRUCT(&h->super, opal_list_item_t);
    h->fence_tag = tag;
    h->hdr = *hdr;
    h->paylen = paylen;
    memcpy(h->payload, payload, paylen);
    opal_list_append(&module->held, &h->super);
    module->held_bytes += sizeof(*h) + paylen;
    pv_held++;
    return true;
}

int ompi_osc_nbe_hold_release(ompi_osc_nbe_module_t *module)
{
    int count = 0;
    while (!opal_list_is_empty(&module->held)) {
        held_frame_t *h = (held_frame_t *) opal_list_get_first(&module->held);
        if (!nbe_fence_tag_ready(module->engine, h->fence_tag)) break;
        opal_list_remove_first(&module->held);
        module->held_bytes -= sizeof(*h) + h->paylen;
        ompi_osc_nbe_apply_frame(module, &h->hdr, h->payload, h->paylen);
        OBJ_DESTRUCT(&h->super);
        free(h);
        count++;
    }
    return count;
}
