/*
 * osc/nbe: how the RDMA-sized contiguous puts and gets of an epoch move
 * over vader with CMA: by the kernel's single copy, or by active messages
 * through vader's shared-memory fragments, the origin copying piece k+1
 * while the target copies piece k out.
 *  - Fence and PSCW epochs (from osc_nbe_rdma_active_threshold bytes,
 *    osc_nbe_active_cma): their target is in MPI to end them, so active
 *    messages cost it no extra wait.
 *  - Lock and lock_all epochs (from osc_nbe_rdma_threshold and
 *    osc_nbe_rdma_get_threshold bytes, osc_nbe_passive_cma): their progress
 *    must not need the target, so a target away from MPI, or one whose
 *    presence the window cannot see (no tables segment, osc_nbe_target_away
 *    0), always gets CMA (osc_nbe_presence.c); a target that polls gets the
 *    same choice as above. In 7 interleaved launches, 16 KiB-1 MiB puts and
 *    gets of lock and flush epochs took 1.1-2.2x as long by CMA as by active
 *    messages with the target in MPI (docs/bench-rma/s21/lock-put-create,
 *    large-*); with a target that calls MPI every millisecond, auto took
 *    1.13-1.57x CMA alone: a transfer sent right after one of its calls
 *    waits for the next (sparse-final).
 *
 * Which is faster depends on how cheaply the two processes' caches trade
 * lines, and on the test VM that changes from one launch to the next: in
 * 21 interleaved launches a 1 MiB put by active messages took 50-70 us in
 * most and 140-270 us in about a quarter, CMA 100-140 us in all
 * (docs/bench-rma/s18/am-vs-cma-fence-put.txt). Under auto the choice is
 * measured, like pml/mdq's COPY/RGET (ompi_scale_adapt.h), with one table
 * per epoch class (active, passive) and direction for the whole process
 * (all windows, all peers on this node). What is timed:
 *  - RDMA: from issue until the op completes at the origin, which for
 *    vader's CMA is the call (a FIN, where one follows, is not waited for);
 *  - COPY: from issue until the op completes at the origin: a put's last
 *    fragment handed to vader, a get's last reply copied in.
 * So an active-message put is timed without the target's copy of its last
 * fragment (it leans towards active messages by about one fragment copy;
 * the copies before it slow the origin down when they are slow), and an
 * active-message get with the wait for the target's progress (it leans
 * towards CMA when the target is late). A passive transfer sent by active
 * messages just before its target left MPI waits for its return, as a
 * small one does (osc_nbe_presence.c: the hold).
 */
#include "osc_nbe.h"

#include <stdlib.h>

#include "ompi_scale_adapt.h"
#include "ompi_scale_common.h"
#include "ompi/mca/bml/bml.h"
#include "opal/mca/base/mca_base_var.h"
#include "opal/util/output.h"

enum { CMA_OFF = 0, CMA_ON = 1, CMA_AUTO = 2 };
static const mca_base_var_enum_value_t cma_values[] = {
    { CMA_AUTO, "auto" },
    { CMA_ON, "on" },
    { CMA_OFF, "off" },
    { 0, NULL },
};
static int mode[2] = { CMA_AUTO, CMA_AUTO };   /* [passive] */

/* while CMA is preferred, one transfer in this many is timed (alone); the
 * others of an op without a request are gathered into one CMA call per peer
 * and direction (osc_nbe_cma_batch), whose time is not a transfer's */
#define NBE_ADAPT_CMA_SAMPLE 8

static unsigned probe_interval;           /* MCA: every Nth transfer of a class tries the other */
static ompi_scale_adapt_t *tables[2][2];  /* [passive][is_put], created on first use */
static unsigned long long pv_copied[2];   /* [passive] transfers moved by active messages by choice */
static unsigned long long pv_cma_timed[2];/* [passive] CMA transfers whose time was recorded */

void ompi_osc_nbe_adapt_register_params(const mca_base_component_t *c)
{
    ompi_scale_register_enum(c, "active_cma",
        "How fence and PSCW epochs move their contiguous puts and gets from "
        "osc_nbe_rdma_active_threshold bytes over vader with CMA. on: CMA's single copy (except "
        "at the copy distances osc_nbe_copy_guard avoids); off: active messages through "
        "vader's shared-memory fragments (two copies the origin and the target overlap; the "
        "target is in MPI to end these epochs anyway); auto: per direction and size class "
        "(powers of two), the one whose recent transfers completed sooner at the origin, trying "
        "the other one every osc_nbe_active_probe_interval transfers and early in a class "
        "(which is faster depends on how cheaply the two processes' caches trade lines, and "
        "can change while a job runs)",
        OPAL_INFO_LVL_5, cma_values, &mode[0]);
    ompi_scale_register_enum(c, "passive_cma",
        "How lock and lock_all epochs move their contiguous puts and gets from "
        "osc_nbe_rdma_threshold / osc_nbe_rdma_get_threshold bytes over vader with CMA. A "
        "target away from MPI (osc_nbe_target_away), or one whose presence the window cannot "
        "see (processes on several nodes, osc_nbe_shm_tables 0, osc_nbe_target_away 0), always "
        "gets CMA, so that the epoch does not wait for its next MPI call. To a target in MPI: "
        "on: CMA; off: active messages; auto: as osc_nbe_active_cma auto, measured separately "
        "for these epochs. A transfer sent by active messages just before the target left MPI "
        "waits for its return (osc_nbe_target_away_hold)",
        OPAL_INFO_LVL_5, cma_values, &mode[1]);
    ompi_osc_nbe_register_uint(c, "active_probe_interval",
        "osc_nbe_active_cma and osc_nbe_passive_cma auto: every Nth transfer of a size class "
        "uses the protocol not preferred, so that a change of costs is noticed (0: never after "
        "the first 10 transfers of the class)",
        OPAL_INFO_LVL_9, 128, &probe_interval);
    ompi_osc_nbe_register_counter(c, "active_copied",
        "Puts and gets of fence and PSCW epochs that osc_nbe_active_cma sent by active messages "
        "instead of vader's CMA", &pv_copied[0]);
    ompi_osc_nbe_register_counter(c, "active_cma_timed",
        "Puts and gets of fence and PSCW epochs moved by vader's CMA whose time "
        "osc_nbe_active_cma auto recorded", &pv_cma_timed[0]);
    ompi_osc_nbe_register_counter(c, "passive_copied",
        "Puts and gets of lock and lock_all epochs that osc_nbe_passive_cma sent by active "
        "messages to a target in MPI instead of vader's CMA", &pv_copied[1]);
    ompi_osc_nbe_register_counter(c, "passive_cma_timed",
        "Puts and gets of lock and lock_all epochs moved by vader's CMA whose time "
        "osc_nbe_passive_cma auto recorded", &pv_cma_timed[1]);
}

void ompi_osc_nbe_adapt_fini(void)
{
    for (int p = 0; p < 2; ++p) {
        for (int i = 0; i < 2; ++i) {
            free(tables[p][i]);
            tables[p][i] = NULL;
        }
    }
}

bool ompi_osc_nbe_adapt_fixed(const struct mca_bml_base_btl_t *b, bool passive)
{
    return CMA_ON == mode[passive] || !ompi_osc_nbe_is_cma(b->btl);
}

/* the table of an epoch class and direction, created on first use (NULL:
 * no memory) */
static ompi_scale_adapt_t *table_of(bool passive, bool is_put)
{
    ompi_scale_adapt_t **t = &tables[passive][is_put];
    if (NULL == *t && NULL != (*t = malloc(sizeof(**t)))) {
        ompi_scale_adapt_init(*t, probe_interval, 1);
        /* untimed CMA transfers are gathered (osc_nbe_cma.c) */
        ompi_scale_adapt_set_rdma_sample(*t, NBE_ADAPT_CMA_SAMPLE);
    }
    return *t;
}

int ompi_osc_nbe_adapt_choose_now(ompi_osc_nbe_module_t *module, int target,
                                  const struct mca_bml_base_btl_t *b, size_t len, bool is_put,
                                  bool passive, uint64_t *t0)
{
    *t0 = 0;
    if (ompi_osc_nbe_adapt_fixed(b, passive)) return OMPI_SCALE_ADAPT_RDMA;
    /* a passive target must be seen in MPI: else the epoch would wait for it */
    if (passive && (!ompi_osc_nbe_presence_on(module) || ompi_osc_nbe_target_away(module, target))) {
        return OMPI_SCALE_ADAPT_RDMA;
    }
    int proto = OMPI_SCALE_ADAPT_COPY;
    if (CMA_AUTO == mode[passive]) {
        ompi_scale_adapt_t *t = table_of(passive, is_put);
        if (NULL == t) return OMPI_SCALE_ADAPT_RDMA;   /* no memory: as before this choice */
        bool timed = false;
        proto = ompi_scale_adapt_choose(t, len, &timed);
        if (timed) *t0 = ompi_scale_adapt_now_ns();
    }
    if (OMPI_SCALE_ADAPT_COPY == proto) pv_copied[passive]++;
    return proto;
}

int ompi_osc_nbe_adapt_choose(ompi_osc_nbe_op_t *op, const struct mca_bml_base_btl_t *b,
                              size_t len, bool is_put)
{
    if (op->adapt_preset) return op->adapt_proto;   /* chosen by the fast path */
    uint64_t t0;
    int proto = ompi_osc_nbe_adapt_choose_now(op->module, op->super.target, b, len, is_put,
                                              op->super.passive, &t0);
    if (0 != t0) {
        op->adapt_t0 = t0;
        op->adapt_proto = proto;
    }
    return proto;
}

void ompi_osc_nbe_adapt_record_ns(size_t len, bool is_put, bool passive, int proto, uint64_t ns)
{
    ompi_scale_adapt_t *t = tables[passive][is_put];
    if (NULL == t) return;
    ompi_scale_adapt_record(t, len, proto, ns);
    if (OMPI_SCALE_ADAPT_RDMA == proto) pv_cma_timed[passive]++;
    if (mca_osc_nbe_component.verbose >= 30) {
        opal_output(mca_osc_nbe_component.output,
                    "osc/nbe: %s-epoch %s of %zu B by %s took %llu ns (medians: active "
                    "messages %llu, CMA %llu)", passive ? "passive" : "active",
                    is_put ? "put" : "get", len,
                    OMPI_SCALE_ADAPT_COPY == proto ? "active messages" : "CMA",
                    (unsigned long long) ns,
                    (unsigned long long) ompi_scale_adapt_typical(t, len, OMPI_SCALE_ADAPT_COPY),
                    (unsigned long long) ompi_scale_adapt_typical(t, len, OMPI_SCALE_ADAPT_RDMA));
    }
}

void ompi_osc_nbe_adapt_record(const ompi_osc_nbe_op_t *op, size_t len)
{
    ompi_osc_nbe_adapt_record_ns(len, NBE_OP_PUT == op->type, op->super.passive, op->adapt_proto,
                                 ompi_scale_adapt_now_ns() - op->adapt_t0);
}
