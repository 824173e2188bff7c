/*
 * pml/mdq: where vader's btl_sendi would copy a message, so that messages
 * of 2-8 KiB can use vader's per-peer fast box without the copy-distance
 * penalty (pml_mdq_copy_guard).
 *
 * Where memcpy is slow at short distances (AMD Zen with FSRM: 25x at
 * 1-63 bytes past the source modulo 4 KiB), mdq copies contiguous
 * messages above 2 KiB into a descriptor itself, with a guarded copy, and
 * sends the descriptor through vader's FIFO. A message that fits a
 * quarter of vader's fast box could go through btl_sendi instead: vader
 * copies it into the peer's box with memcpy, and the receiver polls the box
 * before the FIFO: 4 KiB ping-pongs take 0.86-0.92 of the time through the
 * FIFO (docs/bench-pt2pt.md, session 31). This file reads vader's endpoint
 * as vader's own fbox_sendi does, to tell where the box would take the
 * message and whether the copy there would run at a slow distance; only
 * then is btl_sendi used. Not while messages copied into FIFO descriptors
 * are still on their way (mca_pml_mdq.copied_in_flight): one in the box
 * would overtake them, and the receiver would hold it back until they
 * came (in a stream of 4 KiB messages, 0.77 of the bandwidth).
 *
 * It depends on vader's endpoint layout in Open MPI 4.1.4: the headers of
 * the source the component is built against, which must match the vader
 * that is loaded (as the rest of the component's use of internal headers
 * does). It never writes the endpoint or the box: a wrong decision costs
 * speed only. Where vader was configured with XPMEM or KNEM, its headers
 * need those packages' headers, which the build may not find: such builds
 * keep the guarded descriptor path for medium messages, as before.
 */
#include "ompi_config.h"

#include <string.h>

#include "pml_mdq.h"

#if OPAL_BTL_VADER_HAVE_XPMEM || OPAL_BTL_VADER_HAVE_KNEM

bool mca_pml_mdq_vader_fbox_safe(mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *ep,
                                 const void *src, size_t hsize, size_t size)
{
    (void) btl;
    (void) ep;
    (void) src;
    (void) hsize;
    (void) size;
    return false;
}

#else

#include "opal/mca/base/mca_base_var.h"
/* in the order vader's own sources include them */
#include "opal/mca/btl/vader/btl_vader.h"
#include "opal/mca/btl/vader/btl_vader_frag.h"
#include "opal/mca/btl/vader/btl_vader_fifo.h"
#include "opal/mca/btl/vader/btl_vader_endpoint.h"
#include "opal/mca/btl/vader/btl_vader_fbox.h"
#include "opal/threads/threads.h"

static mca_btl_base_module_t *vader_module; /* the module found to be vader */
static mca_btl_base_module_t *other_module; /* the last module found not to be */
static unsigned int vader_fbox_size;        /* btl_vader_fbox_size, read once */
/* After a box found full, the next MDQ_FBOX_FULL_SKIP messages do not look
 * at the receiver's start offset again: in a stream that keeps the box
 * full, every look is a cache line the receiver writes */
#define MDQ_FBOX_FULL_SKIP 16
static unsigned int full_skip;

static bool mdq_btl_is_vader(mca_btl_base_module_t *btl)
{
    int idx = -1;
    const unsigned int *value = NULL;

    if (OPAL_LIKELY(btl == vader_module)) {
        return true;
    }
    if (btl == other_module) {
        return false; /* no name compared per message where vader is not used */
    }
    if (NULL != vader_module
        || 0 != strcmp(btl->btl_component->btl_version.mca_component_name, "vader")) {
        other_module = btl;
        return false;
    }
    if (OPAL_SUCCESS != mca_base_var_find_by_name("btl_vader_fbox_size", &idx)
        || OPAL_SUCCESS != mca_base_var_get_value(idx, &value, NULL, NULL) || NULL == value) {
        other_module = btl;
        return false;
    }
    vader_fbox_size = *value;
    vader_module = btl;
    return true;
}

bool mca_pml_mdq_vader_fbox_safe(mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *ep,
                                 const void *src, size_t hsize, size_t size)
{
    const struct mca_btl_base_endpoint_t *e = ep;
    unsigned int start, end, buffer_free;
    size_t slot;
    bool hbs, hbm;

    /* with threads, the offsets may move before vader takes its lock */
    if (opal_using_threads() || 0 != mca_pml_mdq.copied_in_flight || !mdq_btl_is_vader(btl)
        || NULL == e->fbox_out.buffer
        || hsize + size > (vader_fbox_size >> 2)) {
        return false;
    }
    /* vader's choice of where to write (mca_btl_vader_fbox_sendi): at the
     * write offset if its cached offsets show room there; else it reads the
     * receiver's start offset, moves to the box's beginning when the room
     * left at the end is too small, and with no room at all falls back to
     * a FIFO fragment, copied with memcpy: no sendi then. The receiver only
     * frees room, so a start offset that moves meanwhile leaves at least the
     * room seen here (speed only, should a race decide otherwise). */
    hbs = MCA_BTL_VADER_FBOX_OFFSET_HBS(e->fbox_out.end);
    hbm = MCA_BTL_VADER_FBOX_OFFSET_HBS(e->fbox_out.start) == hbs;
    start = e->fbox_out.start & MCA_BTL_VADER_FBOX_OFFSET_MASK;
    end = e->fbox_out.end & MCA_BTL_VADER_FBOX_OFFSET_MASK;
    buffer_free = BUFFER_FREE(start, end, hbm, vader_fbox_size);
    slot = (hsize + size + sizeof(mca_btl_vader_fbox_hdr_t) + MCA_BTL_VADER_FBOX_ALIGNMENT_MASK)
           & ~(size_t) MCA_BTL_VADER_FBOX_ALIGNMENT_MASK;
    if (buffer_free < slot) {
        uint32_t published;
        if (full_skip > 0) {
            full_skip--;
            return false;
        }
        published = e->fbox_out.startp[0];
        start = published & MCA_BTL_VADER_FBOX_OFFSET_MASK;
        hbm = MCA_BTL_VADER_FBOX_OFFSET_HBS(published) == hbs;
        buffer_free = BUFFER_FREE(start, end, hbm, vader_fbox_size);
        if (buffer_free > 0 && buffer_free < slot && start <= end) {
            end = MCA_BTL_VADER_FBOX_ALIGNMENT;
            buffer_free = BUFFER_FREE(start, end, !hbm, vader_fbox_size);
        }
        if (buffer_free < slot) {
            full_skip = MDQ_FBOX_FULL_SKIP;
            return false;
        }
    }
    return !ompi_scale_copy_short_distance(e->fbox_out.buffer + end
                                               + sizeof(mca_btl_vader_fbox_hdr_t) + hsize,
                                           src, size);
}

#endif /* OPAL_BTL_VADER_HAVE_XPMEM || OPAL_BTL_VADER_HAVE_KNEM */
