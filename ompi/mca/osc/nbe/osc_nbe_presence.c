/*
 * Is a passive target in MPI? Small contiguous puts and gets of lock and
 * lock_all epochs go by active messages (below osc_nbe_rdma_threshold and
 * osc_nbe_rdma_get_threshold), which is fastest while the target polls the
 * network and waits for its next MPI call otherwise. On windows with a node
 * tables segment (osc_nbe_shm_tables: every process on one node) each
 * process stamps its entry there from its progress function (the stamp is
 * CLOCK_MONOTONIC >> 14, units of 16 us, a clock the node's processes
 * share), and an origin about to send such a transfer reads the target's
 * stamp: older than osc_nbe_target_away microseconds (on a node with more
 * processes than CPUs, osc_nbe_target_away_oversubscribed: there a stale
 * stamp mostly means a target waiting for a CPU), the target has not
 * polled for that long and the transfer goes by RDMA (vader's CMA), as a
 * large one would; so does a put or get with a non-contiguous side, packed
 * and moved by CMA to or from the target's segments, and an accumulate is
 * applied by the origin under the target's accumulate word (osc_nbe_comm.c).
 *
 * A stamp cannot tell that the target is about to leave MPI: a transfer sent
 * just before it left waits for its return. When an unlock or flush to one
 * target waited more than 10 ms and saw the target's stamp go stale
 * meanwhile (an unlock_all or flush_all: any target it waits for, at most
 * 4), small transfers to that target go by RDMA for ten times the
 * wait (at most osc_nbe_target_away_hold ms, kept in the peer's win_traits),
 * and while it is held each time its stamp is seen stale the hold runs on
 * for osc_nbe_target_away_hold ms from then: a target that leaves MPI again
 * and again is waited for once, not each time. A wait for the request of an
 * MPI_Rget or MPI_Rget_accumulate is MPI_Wait's loop, which only calls
 * progress: there the progress function polls the module's req_watch, over
 * every target awaited, while such requests wait for their replies. Only
 * a stale stamp seen while polling counts: an origin that computes while
 * its request is out takes a reply that came meanwhile at its next poll,
 * before it looks, so the reply it took late is not taken for a late target.
 */
#include "ompi_config.h"

#include <unistd.h>

#include "ompi/mca/rte/rte.h"
#include "opal/mca/base/mca_base_var.h"
#include "ompi_scale_adapt.h"
#include "osc_nbe.h"

/* stamps count units of 16.4 us: the target writes its line rarely, so an
 * origin's reads of it mostly hit its cache */
#define STAMP_SHIFT 14
#define WAIT_LOOK_NS 250000u        /* between looks at the awaited targets' stamps */
/* shorter waits set no hold: a target descheduled for a time slice (a few
 * ms where processes share cores) is not computing outside MPI */
#define WAIT_HOLD_FROM_NS 10000000u
#define HOLD_FACTOR 10

static unsigned target_away_us;
static unsigned target_away_oversub_us;
static unsigned target_away_hold_ms;
static bool test_away;   /* tests: every target counts as away */
static unsigned long long pv_away;

void ompi_osc_nbe_presence_register_params(const mca_base_component_t *c)
{
    ompi_osc_nbe_register_uint(c, "target_away",
        "Windows whose processes share one node: a contiguous put or get of a lock or "
        "lock_all epoch below osc_nbe_rdma_threshold / osc_nbe_rdma_get_threshold, or one "
        "with a non-contiguous side (packed, then moved to or from the target's segments), "
        "goes by RDMA (vader CMA) instead of active messages when the target's progress has "
        "not run for this many microseconds (it computes outside MPI, or is descheduled), so "
        "that it does not wait for the target's next MPI call; an accumulate, fetch-and-op "
        "or compare-and-swap on a predefined target type is then applied by the origin (CMA "
        "read, update, CMA write, 64 KiB at a time) under the target's accumulate word (not "
        "where those thresholds are 0, never). 0: always active messages",
        OPAL_INFO_LVL_5, 50, &target_away_us);
    ompi_osc_nbe_register_uint(c, "target_away_oversubscribed",
        "On a node where this job runs more processes than it has CPUs (mpirun's "
        "mpi_oversubscribe, or more local processes than online CPUs), a target whose progress has not run for "
        "osc_nbe_target_away may just wait for a CPU, which it gets within a scheduler time "
        "slice: there it counts as away from MPI only after this many microseconds, if more. "
        "Active messages sent to it meanwhile are taken in bulk when it runs, where CMA "
        "would move each small transfer with a system call (three ranks on two CPUs putting "
        "1024 8-byte blocks to their neighbours between flushes: 0.7-0.85 ms per exchange, "
        "3.0-3.2 ms with osc_nbe_target_away alone). 0: osc_nbe_target_away alone",
        OPAL_INFO_LVL_6, 20000, &target_away_oversub_us);
    ompi_osc_nbe_register_uint(c, "target_away_hold",
        "After an unlock or flush to one target waited more than 10 ms while the target "
        "was away (osc_nbe_target_away), its passive operations do without it for ten "
        "times that wait, but at most this many milliseconds, and for this many "
        "milliseconds from each time it is seen away again meanwhile (a target that just "
        "left MPI looks present: one that leaves again and again is then waited for once). "
        "0: no hold",
        OPAL_INFO_LVL_6, 1000, &target_away_hold_ms);
    ompi_osc_nbe_register_bool(c, "test_away",
        "Testing only: every target of a window with the tables segment counts as away from "
        "MPI (osc_nbe_target_away), so that lock and lock_all epochs take the paths that do "
        "without the target for every operation they can",
        OPAL_INFO_LVL_9, false, &test_away);
    ompi_osc_nbe_register_counter(c, "rdma_target_away",
        "Operations of lock and lock_all epochs moved by RDMA (vader CMA) because the "
        "target was away from MPI (osc_nbe_target_away): contiguous puts and gets below the "
        "RDMA thresholds, those with a non-contiguous side, and accumulates applied by the "
        "origin",
        &pv_away);
}

/* does this job run more processes on this node than it has CPUs? The
 * runtime says so in mpi_oversubscribe (mpirun sets it per node from its
 * slots); else, more local processes than online CPUs. (Not this
 * process's affinity mask: bound to one core, it has one CPU of many.) */
static bool node_oversubscribed(void)
{
    int idx = mca_base_var_find("ompi", "mpi", NULL, "oversubscribe");
    const bool *said = NULL;
    if (idx >= 0 && OPAL_SUCCESS == mca_base_var_get_value(idx, &said, NULL, NULL) &&
        NULL != said && *said) {
        return true;
    }
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    return cpus > 0 && (long) ompi_process_info.num_local_peers + 1 > cpus;
}

/* the age in stamp units past which a target counts as away, decided on
 * first use (the runtime knows the local processes by then) */
static int64_t away_units(void)
{
    static int64_t decided;   /* 0: not yet (threads may decide at once, alike) */
    int64_t units = __atomic_load_n(&decided, __ATOMIC_RELAXED);
    if (OPAL_UNLIKELY(0 == units)) {
        uint64_t us = target_away_us;
        if (target_away_oversub_us > us && node_oversubscribed()) {
            us = target_away_oversub_us;
            opal_output_verbose(10, mca_osc_nbe_component.output,
                                "osc/nbe: %d processes on this node for fewer CPUs: a target "
                                "counts as away after %llu us", ompi_process_info.num_local_peers
                                + 1, (unsigned long long) us);
        }
        int64_t u = (int64_t) ((us * 1000u) >> STAMP_SHIFT);
        units = u > 0 ? u : 1;
        __atomic_store_n(&decided, units, __ATOMIC_RELAXED);
    }
    return units;
}

/* a stamp older than the away threshold (signed: the target may have
 * stamped after our clock read) */
static bool stale(uint64_t now_ns, uint64_t seen)
{
    return (int64_t) ((now_ns >> STAMP_SHIFT) - seen) > away_units();
}

bool ompi_osc_nbe_presence_on(const ompi_osc_nbe_module_t *module)
{
    return 0 != target_away_us && NULL != module->shm_seen && NULL == module->shm_base;
}

void ompi_osc_nbe_presence_stamp(ompi_osc_nbe_module_t *module, uint64_t now_ns)
{
    uint64_t stamp = now_ns >> STAMP_SHIFT;
    /* write the shared line only when the stamp changes: origins read it */
    if (NULL != module->shm_seen && stamp != module->seen_mine) {
        module->seen_mine = stamp;
        __atomic_store_n(&module->shm_seen[module->rank], stamp, __ATOMIC_RELAXED);
    }
}

static void hold_until(ompi_osc_nbe_module_t *module, ompi_osc_nbe_peer_t *g, uint64_t until)
{
    g->away_until = until;
    if (until > module->away_hold_last) module->away_hold_last = until;
}

/* a target held away and seen away again keeps leaving MPI: its hold runs
 * on for osc_nbe_target_away_hold from now */
static void extend_hold(ompi_osc_nbe_module_t *module, int peer, uint64_t now)
{
    ompi_osc_nbe_peer_t *g = nbe_engine_peer_info(module->engine, peer);
    uint64_t until = now + (uint64_t) target_away_hold_ms * 1000000u;
    if (NULL != g && now < g->away_until && until > g->away_until) hold_until(module, g, until);
}

bool ompi_osc_nbe_target_away(ompi_osc_nbe_module_t *module, int peer)
{
    if (!ompi_osc_nbe_presence_on(module) || peer == module->rank) return false;
    if (OPAL_UNLIKELY(test_away)) return true;
    uint64_t now = ompi_scale_adapt_now_ns();
    uint64_t seen = __atomic_load_n(&module->shm_seen[peer], __ATOMIC_RELAXED);
    if (stale(now, seen)) {
        opal_output_verbose(30, mca_osc_nbe_component.output,
                            "osc/nbe %d: window %u: %d away, its progress stamped %.0f us ago",
                            module->rank, module->cid, peer,
                            ((now >> STAMP_SHIFT) - seen) * (double) (1u << STAMP_SHIFT) * 1e-3);
        if (now < module->away_hold_last) extend_hold(module, peer, now);
        return true;
    }
    if (now >= module->away_hold_last) return false;   /* no hold running */
    const ompi_osc_nbe_peer_t *g = nbe_engine_peer_info(module->engine, peer);
    return NULL != g && now < g->away_until;
}

void ompi_osc_nbe_target_away_counted(void)
{
    pv_away++;
}

void ompi_osc_nbe_wait_watch_init(ompi_osc_nbe_wait_watch_t *w, ompi_osc_nbe_module_t *module,
                                  int target)
{
    /* watched without holds too (osc_nbe_target_away_hold 0): a look
     * also takes over a frame left behind (osc_nbe_claim.c) */
    w->target = ompi_osc_nbe_presence_on(module) ? target : -1;
    /* a reading from before the wait does not time it */
    w->clock = __atomic_load_n(&mca_osc_nbe_component.progress_ns, __ATOMIC_RELAXED);
    w->t0 = 0;
    w->saw_away = false;
    w->naway = 0;
}

/* OMPI_OSC_NBE_WATCH_ALL: note the targets the wait needs whose stamp is
 * stale (a look costs one pass over the ranks; a wait looks a few times in
 * its first WAIT_LOOK_NS, then once per WAIT_LOOK_NS) */
static void look_at_all(ompi_osc_nbe_wait_watch_t *w, ompi_osc_nbe_module_t *module,
                        uint64_t now)
{
    for (int r = 0; r < module->size && w->naway < OMPI_OSC_NBE_WATCH_AWAY_MAX; ++r) {
        if (r == module->rank || !nbe_awaits_target(module->engine, r)) continue;
        if (!stale(now, __atomic_load_n(&module->shm_seen[r], __ATOMIC_RELAXED))) continue;
        ompi_osc_nbe_claim_try(module, r);
        bool known = false;
        for (int i = 0; i < w->naway; ++i) known |= w->away[i] == r;
        if (!known) w->away[w->naway++] = r;
    }
    w->saw_away = w->naway > 0;
}

void ompi_osc_nbe_wait_watch_poll_slow(ompi_osc_nbe_wait_watch_t *w, ompi_osc_nbe_module_t *module)
{
    uint64_t now = __atomic_load_n(&mca_osc_nbe_component.progress_ns, __ATOMIC_RELAXED);
    w->clock = now;
    if (0 == w->t0) {
        /* the first look comes once a target that left MPI as the wait
         * began can look away, later ones at every stamp unit until
         * WAIT_LOOK_NS, so that a frame it left behind is taken over soon
         * (a stamp that no longer changes stays in this cache: a look is
         * cheap); then one per WAIT_LOOK_NS */
        uint64_t away_ns = (uint64_t) away_units() << STAMP_SHIFT;
        w->t0 = now;
        w->next_look = now + (away_ns < WAIT_LOOK_NS ? away_ns : WAIT_LOOK_NS);
        return;
    }
    if (now < w->next_look) return;
    w->next_look = now + (now - w->t0 < WAIT_LOOK_NS ? 1u << STAMP_SHIFT : WAIT_LOOK_NS);
    if (OMPI_OSC_NBE_WATCH_ALL == w->target) {
        look_at_all(w, module, now);
    } else if (stale(now, __atomic_load_n(&module->shm_seen[w->target], __ATOMIC_RELAXED))) {
        w->saw_away = true;
        /* a frame it left behind unapplied: take it over */
        ompi_osc_nbe_claim_try(module, w->target);
    }
}

static void hold_after_wait(ompi_osc_nbe_module_t *module, int target, uint64_t now,
                            uint64_t waited)
{
    uint64_t hold = HOLD_FACTOR * waited, most = (uint64_t) target_away_hold_ms * 1000000u;
    ompi_osc_nbe_peer_t *g = nbe_engine_peer_info(module->engine, target);
    if (NULL == g) return;
    hold_until(module, g, now + (hold < most ? hold : most));
    opal_output_verbose(20, mca_osc_nbe_component.output,
                        "osc/nbe %d: window %u: waited %.3f ms for %d away from MPI: its "
                        "passive operations do without it for %.1f ms", module->rank, module->cid,
                        waited * 1e-6, target, (g->away_until - now) * 1e-6);
}

void ompi_osc_nbe_wait_watch_done(ompi_osc_nbe_wait_watch_t *w, ompi_osc_nbe_module_t *module)
{
    if (-1 == w->target || !w->saw_away || 0 == target_away_hold_ms) return;
    uint64_t now = ompi_scale_adapt_now_ns();
    uint64_t waited = now - w->t0;
    if (waited < WAIT_HOLD_FROM_NS) return;
    if (OMPI_OSC_NBE_WATCH_ALL != w->target) {
        hold_after_wait(module, w->target, now, waited);
        return;
    }
    for (int i = 0; i < w->naway; ++i) hold_after_wait(module, w->away[i], now, waited);
}

void ompi_osc_nbe_req_watch_start(ompi_osc_nbe_module_t *module, ompi_osc_nbe_op_t *op)
{
    op->req_watched = true;
    if (0 == module->req_awaiting++) {
        ompi_osc_nbe_wait_watch_init(&module->req_watch, module, OMPI_OSC_NBE_WATCH_ALL);
    }
}

void ompi_osc_nbe_req_watch_end(ompi_osc_nbe_module_t *module, ompi_osc_nbe_op_t *op)
{
    op->req_watched = false;
    if (0 == --module->req_awaiting) ompi_osc_nbe_wait_watch_done(&module->req_watch, module);
}
