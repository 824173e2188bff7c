/*
 * osc/nbe: how the RDMA-sized contiguous puts and gets of fence and PSCW
 * epochs (from osc_nbe_rdma_active_threshold bytes) move over vader with
 * CMA: by the kernel's single copy, or by active messages through vader's
 * shared-memory fragments, the origin copying piece k+1 while the target
 * copies piece k out (osc_nbe_active_cma).
 *
 * Which is faster depends on how cheaply the two processes' caches trade
 * lines, and on the test VM that changes from one launch to the next: in
 * 21 interleaved launches a 1 MiB put by active messages took 50-70 us in
 * most and 140-270 us in about a quarter, CMA 100-140 us in all
 * (docs/bench-rma/s18/am-vs-cma-fence-put.txt). Under auto the choice is
 * measured, like pml/mdq's COPY/RGET (ompi_scale_adapt.h), with one table
 * per direction for the whole process (all windows, all peers on this
 * node):
 *  - RDMA: the CMA transfer, timed when it completes in the call;
 *  - COPY: from issue until the op is complete at the origin: a put's
 *    last fragment handed to vader (the target's copy of that piece is not
 *    seen; the ones before it slow the origin down when they are slow), a
 *    get's last reply copied in.
 * A target of these epochs is in MPI to end them, so active messages cost
 * it no extra wait. Passive-target epochs keep RDMA: their progress must
 * not need the target.
 */
#include "osc_nbe.h"

#include <stdlib.h>

#include "ompi_scale_adapt.h"
#include "opal/mca/base/mca_base_var.h"
#include "opal/util/output.h"

enum { ACTIVE_CMA_OFF = 0, ACTIVE_CMA_ON = 1, ACTIVE_CMA_AUTO = 2 };
static int active_cma = ACTIVE_CMA_AUTO;
static const mca_base_var_enum_value_t active_cma_values[] = {
    { ACTIVE_CMA_AUTO, "auto" },
    { ACTIVE_CMA_ON, "on" },
    { ACTIVE_CMA_OFF, "off" },
    { 0, NULL },
};

/* every Nth transfer of a size class tries the other protocol (as
 * pml_mdq_adaptive_probe_interval's default) */
#define ACTIVE_PROBE_INTERVAL 128

static ompi_scale_adapt_t *tables[2];     /* [is_put], created on first use */
static unsigned long long pv_copied;      /* transfers moved by active messages by choice */

void ompi_osc_nbe_adapt_register_params(const mca_base_component_t *c)
{
    ompi_osc_nbe_register_enum(c, "active_cma",
        "How fence and PSCW epochs move their contiguous puts and gets from "
        "osc_nbe_rdma_active_threshold bytes over vader with CMA. on: CMA's single copy; off: "
        "active messages through vader's shared-memory fragments (two copies the origin and "
        "the target overlap; the target is in MPI to end these epochs anyway); auto: the "
        "one measured faster lately, per direction and size class (powers of two), trying the "
        "other one every 128th transfer (which is faster depends on how cheaply the two "
        "processes' caches trade lines, and can change while a job runs). Passive-target "
        "epochs always keep CMA: their progress must not need the target",
        OPAL_INFO_LVL_5, active_cma_values, ACTIVE_CMA_AUTO, &active_cma);
    ompi_osc_nbe_register_counter(c, "active_copied",
        "Puts and gets of fence and PSCW epochs that osc_nbe_active_cma sent by active messages "
        "instead of vader's CMA", &pv_copied);
}

void ompi_osc_nbe_adapt_fini(void)
{
    for (int i = 0; i < 2; ++i) {
        free(tables[i]);
        tables[i] = NULL;
    }
}

bool ompi_osc_nbe_active_fixed(const struct mca_bml_base_btl_t *b)
{
    return ACTIVE_CMA_ON == active_cma || !ompi_osc_nbe_is_cma(b);
}

int ompi_osc_nbe_active_choose(const struct mca_bml_base_btl_t *b, size_t len, bool is_put,
                               uint64_t *t0)
{
    *t0 = 0;
    if (ompi_osc_nbe_active_fixed(b)) return OMPI_SCALE_ADAPT_RDMA;
    int proto = OMPI_SCALE_ADAPT_COPY;
    if (ACTIVE_CMA_AUTO == active_cma) {
        ompi_scale_adapt_t **t = &tables[is_put];
        if (NULL == *t && NULL != (*t = malloc(sizeof(**t)))) {
            ompi_scale_adapt_init(*t, ACTIVE_PROBE_INTERVAL, 1);
        }
        if (NULL == *t) return OMPI_SCALE_ADAPT_RDMA;   /* no memory: as before this choice */
        bool timed = false;
        proto = ompi_scale_adapt_choose(*t, len, &timed);
        if (timed) *t0 = ompi_scale_adapt_now_ns();
    }
    if (OMPI_SCALE_ADAPT_COPY == proto) pv_copied++;
    return proto;
}

void ompi_osc_nbe_active_record(size_t len, bool is_put, int proto, uint64_t t0)
{
    ompi_scale_adapt_t *t = tables[is_put];
    if (NULL == t) return;
    uint64_t ns = ompi_scale_adapt_now_ns() - t0;
    ompi_scale_adapt_record(t, len, proto, ns);
    opal_output_verbose(30, mca_osc_nbe_component.output,
                        "osc/nbe: active-epoch %s of %zu B by %s took %llu ns (medians: active "
                        "messages %llu, CMA %llu)", is_put ? "put" : "get", len,
                        OMPI_SCALE_ADAPT_COPY == proto ? "active messages" : "CMA",
                        (unsigned long long) ns,
                        (unsigned long long) ompi_scale_adapt_typical(t, len, OMPI_SCALE_ADAPT_COPY),
                        (unsigned long long) ompi_scale_adapt_typical(t, len, OMPI_SCALE_ADAPT_RDMA));
}
