/*
 * osc/nbe window geometry (base address, size, displacement unit of every
 * process) without a per-window table over all processes.
 *
 * A peer's geometry is needed only when the process first targets it, so
 * it is obtained then and cached in that peer's win_traits (which exist
 * only for touched peers):
 *  - self: the local arguments of the creation call;
 *  - dynamic windows: absolute addresses, nothing to learn;
 *  - shared-memory windows: the peer's entry in the segment header;
 *  - otherwise: a GEOM_REQ frame to the peer, answered by its progress
 *    engine (BTL active-message callback) with GEOM_REP. The calling RMA
 *    operation waits for the answer; later operations use the cache.
 */
#include "osc_nbe.h"

#include <string.h>

#include "opal/runtime/opal_progress.h"
#include "opal/util/output.h"

static void local_geom(ompi_osc_nbe_module_t *module, ompi_osc_nbe_peer_t *g)
{
    g->base = (uint64_t) (uintptr_t) module->base;
    g->size = module->win_size;
    g->disp_unit = module->disp_unit;
}

static int request_geom(ompi_osc_nbe_module_t *module, int peer)
{
    nbe_am_hdr_t hdr;
    ompi_osc_nbe_hdr_init(&hdr, module, NBE_AM_GEOM_REQ);
    return ompi_osc_nbe_send_frame(module, peer, &hdr, NULL, 0, true);
}

/* NULL: no geometry, because the window failed (out of memory) before or
 * while it was fetched; the caller returns the window's error */
const ompi_osc_nbe_peer_t *ompi_osc_nbe_peer(ompi_osc_nbe_module_t *module, int peer)
{
    ompi_osc_nbe_peer_t *g = nbe_engine_peer_info(module->engine, peer);
    if (NULL == g || nbe_engine_failed(module->engine)) return NULL;
    if (g->known) return g;

    if (MPI_WIN_FLAVOR_DYNAMIC == module->flavor) {
        g->base = 0;
        g->size = UINT64_MAX;
        g->disp_unit = 1;
    } else if (peer == module->rank) {
        local_geom(module, g);
    } else if (!ompi_osc_nbe_shm_peer_geom(module, peer, g)) {
        if (!g->requested) {
            if (OMPI_SUCCESS != request_geom(module, peer)) return NULL;
            g->requested = 1;
            opal_output_verbose(20, mca_osc_nbe_component.output,
                                "osc/nbe %d: window %u: fetching the geometry of %d",
                                module->rank, module->cid, peer);
        }
        while (!*(volatile uint8_t *) &g->known) {
            ompi_osc_nbe_progress();
            if (OPAL_UNLIKELY(nbe_engine_failed(module->engine))) return NULL;
        }
        return g;
    }
    g->known = 1;
    return g;
}

void ompi_osc_nbe_geom_frame(ompi_osc_nbe_module_t *module, const nbe_am_hdr_t *hdr,
                             const char *payload, size_t paylen)
{
    if (NBE_AM_GEOM_REQ == hdr->type) {
        nbe_am_hdr_t rep;
        ompi_osc_nbe_peer_t mine;
        memset(&mine, 0, sizeof(mine));
        ompi_osc_nbe_hdr_init(&rep, module, NBE_AM_GEOM_REP);
        rep.len = sizeof(mine);
        local_geom(module, &mine);
        if (OMPI_SUCCESS != ompi_osc_nbe_send_frame(module, hdr->src, &rep, &mine, sizeof(mine), true)) {
            opal_output(0, "osc/nbe: cannot answer the geometry request of %d", hdr->src);
        }
        return;
    }
    ompi_osc_nbe_peer_t theirs;
    ompi_osc_nbe_peer_t *g = nbe_engine_peer_info(module->engine, hdr->src);
    if (paylen < sizeof(theirs) || NULL == g) return;
    memcpy(&theirs, payload, sizeof(theirs));
    g->base = theirs.base;
    g->size = theirs.size;
    g->disp_unit = theirs.disp_unit;
    opal_atomic_wmb();
    g->known = 1;
}
