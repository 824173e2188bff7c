/*
 * osc/nbe component: registration, selection, window creation and free.
 */
#include "osc_nbe.h"

#include <string.h>

#include "opal/util/output.h"
#include "opal/util/show_help.h"
#include "opal/runtime/opal_progress.h"
#include "opal/mca/base/mca_base_pvar.h"
#include "opal/util/info_subscriber.h"
#include "ompi/group/group.h"
#include "ompi/mca/bml/bml.h"
#include "ompi/mca/bml/base/base.h"

#include "ompi_scale_adapt.h"
#include "ompi_scale_common.h"

opal_mutex_t ompi_osc_nbe_big_lock;
uintptr_t ompi_osc_nbe_big_lock_owner;
int ompi_osc_nbe_big_lock_depth;


/* a process-wide counter as an MPI_T pvar */
void ompi_osc_nbe_register_counter(const mca_base_component_t *c, const char *name,
                                   const char *desc, unsigned long long *counter)
{
    (void) mca_base_component_pvar_register(c, name, desc, OPAL_INFO_LVL_4, MCA_BASE_PVAR_CLASS_COUNTER,
        MCA_BASE_VAR_TYPE_UNSIGNED_LONG_LONG, NULL, MCA_BASE_VAR_BIND_NO_OBJECT,
        MCA_BASE_PVAR_FLAG_READONLY | MCA_BASE_PVAR_FLAG_CONTINUOUS, NULL, NULL, NULL, counter);
}

void ompi_osc_nbe_register_uint(const mca_base_component_t *c, const char *name, const char *desc,
                                int level, unsigned value, unsigned *storage)
{
    *storage = value;
    (void) mca_base_component_var_register(c, name, desc, MCA_BASE_VAR_TYPE_UNSIGNED_INT, NULL, 0, 0,
                                           (mca_base_var_info_lvl_t) level, MCA_BASE_VAR_SCOPE_LOCAL,
                                           storage);
}

void ompi_osc_nbe_register_bool(const mca_base_component_t *c, const char *name, const char *desc,
                                int level, bool value, bool *storage)
{
    *storage = value;
    (void) mca_base_component_var_register(c, name, desc, MCA_BASE_VAR_TYPE_BOOL, NULL, 0, 0,
                                           (mca_base_var_info_lvl_t) level, MCA_BASE_VAR_SCOPE_LOCAL,
                                           storage);
}

void ompi_osc_nbe_register_string(const mca_base_component_t *c, const char *name, const char *desc,
                                  int level, const char *value, char **storage)
{
    *storage = (char *) value;
    (void) mca_base_component_var_register(c, name, desc, MCA_BASE_VAR_TYPE_STRING, NULL, 0, 0,
                                           (mca_base_var_info_lvl_t) level, MCA_BASE_VAR_SCOPE_LOCAL,
                                           storage);
}

static int component_register(void);
static int component_init(bool enable_progress_threads, bool enable_mpi_threads);
static int component_finalize(void);
static int component_query(struct ompi_win_t *win, void **base, size_t size, int disp_unit,
                           struct ompi_communicator_t *comm, struct opal_info_t *info,
                           int flavor);
size_t ompi_osc_nbe_window_memory(ompi_osc_nbe_module_t *module)
{
    return sizeof(*module) + (module->engine ? nbe_engine_memory(module->engine) : 0) +
           (size_t) module->cap_regions * sizeof(ompi_osc_nbe_region_t) +
           (size_t) module->shm_cap_held * sizeof(int) +
           opal_list_get_size(&module->outq) * sizeof(nbe_am_hdr_t) + module->held_bytes +
           ompi_osc_nbe_cma_memory(module);
}

static int component_select(struct ompi_win_t *win, void **base, size_t size, int disp_unit,
                            struct ompi_communicator_t *comm, struct opal_info_t *info,
                            int flavor, int *model);

ompi_osc_nbe_component_t mca_osc_nbe_component = {
    .super = {
        .osc_version = {
            OMPI_OSC_BASE_VERSION_3_0_0,
            .mca_component_name = "nbe",
            MCA_BASE_MAKE_VERSION(component, 0, 1, 0),
            .mca_register_component_params = component_register,
        },
        .osc_data = {
            MCA_BASE_METADATA_PARAM_NONE
        },
        .osc_init = component_init,
        .osc_query = component_query,
        .osc_select = component_select,
        .osc_finalize = component_finalize,
    },
};

static const ompi_osc_base_module_t module_template = {
    .osc_win_shared_query = ompi_osc_nbe_shared_query,
    .osc_win_attach = ompi_osc_nbe_attach,
    .osc_win_detach = ompi_osc_nbe_detach,
    .osc_free = ompi_osc_nbe_free,

    .osc_put = ompi_osc_nbe_put,
    .osc_get = ompi_osc_nbe_get,
    .osc_accumulate = ompi_osc_nbe_accumulate,
    .osc_compare_and_swap = ompi_osc_nbe_compare_and_swap,
    .osc_fetch_and_op = ompi_osc_nbe_fetch_and_op,
    .osc_get_accumulate = ompi_osc_nbe_get_accumulate,

    .osc_rput = ompi_osc_nbe_rput,
    .osc_rget = ompi_osc_nbe_rget,
    .osc_raccumulate = ompi_osc_nbe_raccumulate,
    .osc_rget_accumulate = ompi_osc_nbe_rget_accumulate,

    .osc_fence = ompi_osc_nbe_fence,

    .osc_start = ompi_osc_nbe_start,
    .osc_complete = ompi_osc_nbe_complete,
    .osc_post = ompi_osc_nbe_post,
    .osc_wait = ompi_osc_nbe_wait,
    .osc_test = ompi_osc_nbe_test,

    .osc_lock = ompi_osc_nbe_lock,
    .osc_unlock = ompi_osc_nbe_unlock,
    .osc_lock_all = ompi_osc_nbe_lock_all,
    .osc_unlock_all = ompi_osc_nbe_unlock_all,

    .osc_sync = ompi_osc_nbe_sync,
    .osc_flush = ompi_osc_nbe_flush,
    .osc_flush_all = ompi_osc_nbe_flush_all,
    .osc_flush_local = ompi_osc_nbe_flush_local,
    .osc_flush_local_all = ompi_osc_nbe_flush_local_all,
};

static const nbe_transport_t nbe_transport = {
    .send_ctrl = ompi_osc_nbe_send_ctrl_cb,
    .issue = ompi_osc_nbe_issue_cb,
    .req_complete = ompi_osc_nbe_req_complete_cb,
};

/* ---------------------------------------------------------------- */
/* MPI_T performance variables, bound to a window */

enum { PV_DEFERRED = 0, PV_RECORDED, PV_BUFFERED, PV_BYTES, PV_WINDOW_MEMORY, PV_FENCE_IMPLIED,
       PV_UNLOCK_NO_WAIT };

static int pvar_read(const struct mca_base_pvar_t *pvar, void *value, void *obj)
{
    ompi_win_t *win = (ompi_win_t *) obj;
    unsigned long long *out = (unsigned long long *) value;
    *out = 0;
    ompi_osc_nbe_enter();   /* before the test: MPI_Win_free may run in another thread */
    if (NULL == win || NULL == win->w_osc_module ||
        (win->w_osc_module->osc_free != module_template.osc_free &&
         win->w_osc_module->osc_free != ompi_osc_nbe_locked_template.osc_free)) {
        ompi_osc_nbe_leave();
        return OPAL_SUCCESS;
    }
    ompi_osc_nbe_module_t *module = ompi_osc_nbe_module(win);
    const nbe_stats_t *st = nbe_engine_stats(module->engine);
    switch ((int) (intptr_t) pvar->ctx) {
    case PV_DEFERRED: *out = st->epochs_deferred; break;
    case PV_RECORDED: *out = st->ops_recorded; break;
    case PV_BUFFERED: *out = nbe_engine_buffered(module->engine); break;
    case PV_WINDOW_MEMORY: *out = ompi_osc_nbe_window_memory(module); break;
    case PV_BYTES: *out = module->bytes; break;
    case PV_FENCE_IMPLIED: *out = st->fence_grants_implied; break;
    case PV_UNLOCK_NO_WAIT: *out = st->unlocks_no_wait; break;
    }
    ompi_osc_nbe_leave();
    return OPAL_SUCCESS;
}

static void register_pvar(const char *name, const char *desc, int var_class, int which)
{
    (void) mca_base_component_pvar_register(&mca_osc_nbe_component.super.osc_version, name, desc,
                                            OPAL_INFO_LVL_4, var_class,
                                            MCA_BASE_VAR_TYPE_UNSIGNED_LONG_LONG, NULL,
                                            MCA_BASE_VAR_BIND_MPI_WIN,
                                            MCA_BASE_PVAR_FLAG_READONLY | MCA_BASE_PVAR_FLAG_CONTINUOUS,
                                            pvar_read, NULL, NULL, (void *) (intptr_t) which);
}

static const mca_base_var_enum_value_t copy_guard_values[] = {
    { OMPI_SCALE_COPY_GUARD_AUTO, "auto" },
    { OMPI_SCALE_COPY_GUARD_ON, "on" },
    { OMPI_SCALE_COPY_GUARD_OFF, "off" },
    { 0, NULL },
};

static int component_register(void)
{
    int rc = ompi_scale_check_ompi_version("osc", "nbe");
    if (OPAL_SUCCESS != rc) return rc;
    ompi_scale_help_init();

    const mca_base_component_t *c = &mca_osc_nbe_component.super.osc_version;

    mca_osc_nbe_component.priority = 5;
    (void) mca_base_component_var_register(c, "priority",
        "Selection priority of osc/nbe. The default (5) is below osc/rdma, osc/sm and osc/ucx, "
        "so nbe is used only when selected explicitly (--mca osc nbe) or given a higher priority",
        MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_3, MCA_BASE_VAR_SCOPE_READONLY,
        &mca_osc_nbe_component.priority);

    mca_osc_nbe_component.verbose = 0;
    (void) mca_base_component_var_register(c, "verbose",
        "Verbosity of osc/nbe diagnostics (0: none, 10: epochs, 50: every message)",
        MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_9, MCA_BASE_VAR_SCOPE_LOCAL,
        &mca_osc_nbe_component.verbose);

    ompi_osc_nbe_register_uint(c, "buffered_ops_limit",
        "Maximum number of RMA operations a window buffers (recorded in a deferred or ungranted "
        "epoch, or issued but not yet locally complete). Past it the issuing call drives progress "
        "until the count drops (0: no bound). Epochs themselves have no operation cap",
        OPAL_INFO_LVL_5, 4096, &mca_osc_nbe_component.buffered_ops_limit);

    ompi_osc_nbe_register_uint(c, "max_frag_size",
        "Upper bound in bytes of one active-message fragment (the BTL's max send size applies too)",
        OPAL_INFO_LVL_6, 65536, &mca_osc_nbe_component.max_frag_size);

    mca_osc_nbe_component.test_fail_rank = -1;
    (void) mca_base_component_var_register(c, "test_fail_rank",
        "Testing only: the windows of this rank of MPI_COMM_WORLD fail, as if out of memory, at "
        "their second synchronization call (-1: never). Shows that their peers get an error "
        "instead of waiting",
        MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_9, MCA_BASE_VAR_SCOPE_LOCAL,
        &mca_osc_nbe_component.test_fail_rank);
    ompi_osc_nbe_register_string(c, "test_break_link",
        "Testing only: \"A,B,N\": every window's connection between its ranks A and B breaks "
        "right after A's N-th frame to B: later frames between them fail as unreachable, A's "
        "window fails then and B's when that frame arrives (N >= 1). \"A,B,N,late\": A's later "
        "frames to B are accepted and lost, and the failure reaches A's window only through a "
        "send completion callback with an error, as a BTL reports a connection that broke under "
        "queued sends. Shows that a permanent send error fails the window with an error instead "
        "of a hang (empty: never)",
        OPAL_INFO_LVL_9, "", &mca_osc_nbe_component.test_break_link);
    mca_osc_nbe_component.test_break_after = -1;
    mca_osc_nbe_component.test_break_late = false;
    const char *spec = mca_osc_nbe_component.test_break_link;
    if (NULL != spec && '\0' != *spec) {
        char mode[8] = "";
        int n = sscanf(spec, "%d,%d,%d,%7s", &mca_osc_nbe_component.test_break_a,
                       &mca_osc_nbe_component.test_break_b,
                       &mca_osc_nbe_component.test_break_after, mode);
        char canon[64];
        /* the whole value must be one of the two forms (no trailing text) */
        snprintf(canon, sizeof(canon), "%d,%d,%d%s", mca_osc_nbe_component.test_break_a,
                 mca_osc_nbe_component.test_break_b, mca_osc_nbe_component.test_break_after,
                 4 == n ? ",late" : "");
        if (n < 3 || 0 != strcmp(canon, spec) || mca_osc_nbe_component.test_break_after < 1) {
            opal_output(0, "osc/nbe: osc_nbe_test_break_link wants \"A,B,N\" or \"A,B,N,late\" "
                           "with N >= 1; ignored");
            mca_osc_nbe_component.test_break_after = -1;
        }
        mca_osc_nbe_component.test_break_late = 4 == n;
    }

    ompi_osc_nbe_register_uint(c, "rdma_threshold",
        "Contiguous puts of a lock or lock_all epoch of at least this many bytes use the BTL's "
        "RDMA put (vader CMA, tcp put) instead of active-message fragments, so that the target "
        "need not enter MPI for them (0: never; gets: osc_nbe_rdma_get_threshold; fence and "
        "PSCW epochs: osc_nbe_rdma_active_threshold). Smaller puts are active messages, which "
        "wait for the target's next MPI call, except on windows of one node to a target away "
        "from MPI (osc_nbe_target_away). Over vader, osc_nbe_passive_cma may send larger ones "
        "by active messages to a target seen in MPI. Setting this and "
        "osc_nbe_rdma_get_threshold to 1 (and osc_nbe_passive_cma to on) makes every "
        "contiguous transfer of a passive epoch RDMA, also to a target that just left MPI and "
        "across nodes where the network does RDMA (tcp's put goes through the target's "
        "progress); on the test VM's vader, a lock epoch of one small put then takes "
        "3.0-3.5 us instead of 0.9-1.1 us with the target in MPI",
        OPAL_INFO_LVL_5, 16384, &mca_osc_nbe_component.rdma_threshold);

    /* below 32 KiB: a CMA system call costs 1.5-3.9 us on the test VM, two copies
     * through a BTL fragment less, and a fence or PSCW target is in MPI anyway */
    ompi_osc_nbe_register_uint(c, "rdma_active_threshold",
        "Contiguous puts and gets of a fence or PSCW epoch of at least this many bytes use the "
        "BTL's RDMA instead of active messages (0: never; over vader with CMA as "
        "osc_nbe_active_cma decides). The target of these epochs enters MPI to end them, so "
        "active messages cost it no extra wait for progress",
        OPAL_INFO_LVL_5, 32768, &mca_osc_nbe_component.rdma_active_threshold);

    ompi_osc_nbe_register_bool(c, "fence_implied_grants",
        "A fence epoch whose previous one ended clean everywhere (no process sent a counted "
        "message in it: every access was in place when issued, e.g. vader RDMA) needs no "
        "grant message from its targets before RDMA: the fence that closed it already "
        "synchronized like a barrier. Saves a message latency per fence epoch of RDMA puts "
        "or gets",
        OPAL_INFO_LVL_9, true, &mca_osc_nbe_component.fence_implied_grants);

    ompi_osc_nbe_register_bool(c, "unlock_no_wait",
        "MPI_Win_unlock/unlock_all return once the UNLOCK is on its way to a target (handed to "
        "the BTL complete, not queued in this process) when everything sent to it is "
        "acknowledged already (RDMA that completed in the BTL call needs no acknowledgement, "
        "e.g. vader): the target releases the lock when the UNLOCK arrives. Saves a message "
        "round trip per lock epoch of RDMA accesses. Not on dynamic windows, whose refused "
        "accesses are reported with the acknowledgement",
        OPAL_INFO_LVL_9, true, &mca_osc_nbe_component.unlock_no_wait);

    mca_osc_nbe_component.shm_allocate = true;
    (void) mca_base_component_var_register(c, "shm_allocate",
        "Back MPI_Win_allocate windows whose processes share one node with a shared-memory "
        "segment, so RMA is applied directly (load/store) instead of through messages",
        MCA_BASE_VAR_TYPE_BOOL, NULL, 0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY,
        &mca_osc_nbe_component.shm_allocate);

    ompi_osc_nbe_register_bool(c, "shm_tables",
        "Windows not backed by shared memory (create, dynamic, allocate with shm_allocate off) "
        "whose processes share one node keep their lock words and geometry in a small node "
        "shared-memory segment: MPI_Win_lock/unlock take a target's lock with CPU atomics, with "
        "no message and no progress of the target, and a process learns a peer's window "
        "geometry without asking it. RMA itself still goes through the BTL",
        OPAL_INFO_LVL_5, true, &mca_osc_nbe_component.shm_tables);

    /* glibc memcpy's rep movsb is ~25x slower on AMD FSRM CPUs at a short
     * distance (8 KiB: 4.3 instead of 0.16 us on the test EPYC) */
    mca_osc_nbe_component.copy_guard = OMPI_SCALE_COPY_GUARD_AUTO;
    ompi_scale_register_enum(c, "copy_guard",
        "Copies of RMA data (shared-memory and self put/get, payloads into and out of BTL "
        "fragments, replies) of more than 2048 bytes whose destination is 1..63 bytes past the "
        "source modulo 4 KiB avoid glibc memcpy, whose rep movsb is up to ~25x slower there on "
        "AMD CPUs with FSRM (4K aliasing), and use a loop of vector loads and stores instead. "
        "auto: measured once per process, when the first such copy happens (~0.1 ms); on: "
        "always avoid memcpy at such distances; off: always memcpy",
        OPAL_INFO_LVL_6, copy_guard_values, &mca_osc_nbe_component.copy_guard);

    mca_osc_nbe_component.btl_tag = OMPI_OSC_NBE_DEFAULT_TAG;
    (void) mca_base_component_var_register(c, "btl_tag",
        "BTL active-message tag used by osc/nbe (must be free: 0x60-0x7f is the osc range)",
        MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_9, MCA_BASE_VAR_SCOPE_READONLY,
        &mca_osc_nbe_component.btl_tag);

    ompi_osc_nbe_am_register_params(c);
    ompi_osc_nbe_rdma_register_params(c);
    ompi_osc_nbe_hold_register_params(c);
    ompi_osc_nbe_claim_register_params(c);
    ompi_osc_nbe_shm_register_params(c);
    ompi_osc_nbe_cma_register_params(c);
    ompi_osc_nbe_adapt_register_params(c);
    ompi_osc_nbe_presence_register_params(c);

    register_pvar("epochs_deferred", "Epochs of this window that could not activate when opened",
                  MCA_BASE_PVAR_CLASS_COUNTER, PV_DEFERRED);
    register_pvar("ops_recorded", "RMA operations recorded because their epoch or target grant "
                  "was not yet active", MCA_BASE_PVAR_CLASS_COUNTER, PV_RECORDED);
    register_pvar("buffered_ops", "RMA operations currently buffered by this window",
                  MCA_BASE_PVAR_CLASS_LEVEL, PV_BUFFERED);
    register_pvar("bytes", "RMA payload bytes issued on this window",
                  MCA_BASE_PVAR_CLASS_COUNTER, PV_BYTES);
    register_pvar("window_memory", "Process-private heap bytes osc/nbe holds for this window "
                  "(module, engine, win_traits of touched peers, queues; not the window memory "
                  "itself nor a shared segment)", MCA_BASE_PVAR_CLASS_LEVEL, PV_WINDOW_MEMORY);
    register_pvar("fence_implied_grants", "Fence epochs of this window granted without their "
                  "targets' grant messages, because the previous fence epoch ended clean "
                  "(osc_nbe_fence_implied_grants)", MCA_BASE_PVAR_CLASS_COUNTER, PV_FENCE_IMPLIED);
    register_pvar("unlocks_no_wait", "Unlocks (per target) of this window that ended without "
                  "waiting for the target's acknowledgement, everything sent to it being "
                  "acknowledged already (osc_nbe_unlock_no_wait)", MCA_BASE_PVAR_CLASS_COUNTER,
                  PV_UNLOCK_NO_WAIT);
    return OMPI_SUCCESS;
}

/* window info: the keys MPI defines for windows are kept (and reported by
 * MPI_Win_get_info) with their standard defaults; unknown keys are dropped */
static char *info_keep(opal_infosubscriber_t *obj, char *key, char *value)
{
    (void) obj;
    (void) key;
    return value;
}

static void subscribe_info(ompi_win_t *win, int flavor)
{
    static const struct { const char *key, *dflt; } keys[] = {
        { "no_locks", "false" },
        { "accumulate_ordering", "rar,raw,war,waw" },
        { "accumulate_ops", "same_op_no_op" },
        { "same_size", "false" },
        { "same_disp_unit", "false" },
    };
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); ++i) {
        opal_infosubscribe_subscribe(&win->super, (char *) keys[i].key, (char *) keys[i].dflt, info_keep);
    }
    if (MPI_WIN_FLAVOR_SHARED == flavor) {
        opal_infosubscribe_subscribe(&win->super, "alloc_shared_noncontig", "false", info_keep);
    }
}



static int component_progress(void)
{
    int count = 0;
    ompi_osc_nbe_module_t *module;
    opal_list_item_t *item;
    static unsigned passes;
    /* presence stamps (osc_nbe_presence.c) count 16 us: every 8th pass
     * reads the clock, once for all windows; wait watches read it too */
    uint64_t now = 0;
    if (!ompi_osc_nbe_try_enter()) return 0;
    bool stamp = 0 == (passes++ & 7);   /* under the component's lock */
    OPAL_LIST_FOREACH(item, &mca_osc_nbe_component.module_list, opal_list_item_t) {
        module = (ompi_osc_nbe_module_t *) ((char *) item - offsetof(ompi_osc_nbe_module_t, list_item));
        if (stamp && ompi_osc_nbe_presence_on(module)) {
            if (0 == now) {
                now = ompi_scale_adapt_now_ns();
                __atomic_store_n(&mca_osc_nbe_component.progress_ns, now, __ATOMIC_RELAXED);
            }
            ompi_osc_nbe_presence_stamp(module, now);
        }
        count += ompi_osc_nbe_progress_module(module);
        if (OPAL_UNLIKELY(0 != module->req_awaiting)) {
            ompi_osc_nbe_wait_watch_poll(&module->req_watch, module);
        }
    }
    if (OPAL_UNLIKELY(mca_osc_nbe_component.test_break_after >= 0)) ompi_osc_nbe_test_report_late();
    ompi_osc_nbe_leave();
    return count;
}

static int component_init(bool enable_progress_threads, bool enable_mpi_threads)
{
    (void) enable_progress_threads;
    mca_osc_nbe_component.thread_multiple = enable_mpi_threads;
    ompi_scale_copy_set_mode(mca_osc_nbe_component.copy_guard);
    OBJ_CONSTRUCT(&ompi_osc_nbe_big_lock, opal_mutex_t);
    mca_osc_nbe_component.output = opal_output_open(NULL);
    opal_output_set_verbosity(mca_osc_nbe_component.output, mca_osc_nbe_component.verbose);
    OBJ_CONSTRUCT(&mca_osc_nbe_component.modules, opal_hash_table_t);
    opal_hash_table_init(&mca_osc_nbe_component.modules, 16);
    OBJ_CONSTRUCT(&mca_osc_nbe_component.module_list, opal_list_t);
    OBJ_CONSTRUCT(&mca_osc_nbe_component.creating, opal_list_t);
    return ompi_osc_nbe_ops_init();
}

static int component_finalize(void)
{
    if (mca_osc_nbe_component.progress_registered) {
        opal_progress_unregister(component_progress);
        mca_osc_nbe_component.progress_registered = false;
    }
    OBJ_DESTRUCT(&mca_osc_nbe_component.module_list);
    OBJ_DESTRUCT(&mca_osc_nbe_component.creating);
    /* a frame that still comes in is dropped (osc_nbe_am.c) */
    mca_osc_nbe_component.finalized = true;
    OBJ_DESTRUCT(&mca_osc_nbe_component.modules);
    opal_output_close(mca_osc_nbe_component.output);
    ompi_osc_nbe_am_finalize();
    ompi_osc_nbe_rdma_finalize();
    ompi_osc_nbe_adapt_fini();
    OBJ_DESTRUCT(&mca_osc_nbe_component.ops);
    OBJ_DESTRUCT(&ompi_osc_nbe_big_lock);
    return OMPI_SUCCESS;
}

/* nbe needs the BML/BTL stack that pml ob1 (and mdq) bring up; under pml
 * ucx or cm there is none and another osc must be chosen */
static bool bml_available(void)
{
    return mca_bml_base_inited() && NULL != mca_bml.bml_register;
}

static int component_query(struct ompi_win_t *win, void **base, size_t size, int disp_unit,
                           struct ompi_communicator_t *comm, struct opal_info_t *info,
                           int flavor)
{
    (void) win; (void) base; (void) size; (void) disp_unit; (void) info;
    if (!bml_available()) return OMPI_ERR_NOT_AVAILABLE;
    ompi_osc_nbe_enter();
    int rc = ompi_osc_nbe_am_register();
    ompi_osc_nbe_leave();
    if (OMPI_SUCCESS != rc) return OMPI_ERR_NOT_AVAILABLE;
    if (MPI_WIN_FLAVOR_SHARED == flavor && ompi_group_have_remote_peers(comm->c_local_group)) {
        /* no osc can share memory across nodes: the osc base stops at this
         * code and MPI_Win_allocate_shared raises MPI_ERR_RMA_SHARED */
        return OMPI_ERR_RMA_SHARED;
    }
    return mca_osc_nbe_component.priority;
}

/* the component's list of windows, which its progress function serves */
static void module_link(ompi_osc_nbe_module_t *module)
{
    ompi_osc_nbe_enter();
    opal_list_append(&mca_osc_nbe_component.module_list, &module->list_item);
    mca_osc_nbe_component.nwindows++;
    if (!mca_osc_nbe_component.progress_registered) {
        opal_progress_register(component_progress);
        mca_osc_nbe_component.progress_registered = true;
    }
    ompi_osc_nbe_leave();
}

static void module_unlink(ompi_osc_nbe_module_t *module)
{
    ompi_osc_nbe_enter();
    opal_list_remove_item(&mca_osc_nbe_component.module_list, &module->list_item);
    if (0 == --mca_osc_nbe_component.nwindows && mca_osc_nbe_component.progress_registered) {
        opal_progress_unregister(component_progress);
        mca_osc_nbe_component.progress_registered = false;
    }
    ompi_osc_nbe_leave();
}

static int window_barrier(ompi_osc_nbe_module_t *module)
{
    int depth = ompi_osc_nbe_suspend();
    int ret = module->comm->c_coll->coll_barrier(module->comm,
                                                 module->comm->c_coll->coll_barrier_module);
    ompi_osc_nbe_resume(depth);
    return ret;
}

static void module_release(ompi_osc_nbe_module_t *module)
{
    if (NULL == module) return;
    if (module->engine) {
        nbe_engine_set_exposure_word(module->engine, NULL);
        nbe_engine_destroy(module->engine);
    }
    OBJ_DESTRUCT(&module->outq);
    ompi_osc_nbe_free_abandoned(module);
    ompi_osc_nbe_hold_fini(module);
    ompi_osc_nbe_claim_fini(module);
    OBJ_DESTRUCT(&module->list_item);
    OBJ_DESTRUCT(&module->creating_item);
    ompi_osc_nbe_release_window_id(module);
    ompi_osc_nbe_shm_release(module);
    ompi_osc_nbe_cma_fini(module);
    ompi_osc_nbe_group_cache_clear(&module->gc_start);
    ompi_osc_nbe_group_cache_clear(&module->gc_post);
    if (module->comm) OBJ_RELEASE(module->comm);
    free(module->regions);
    free(module->free_after);
    free(module);
}

static int component_select(struct ompi_win_t *win, void **base, size_t size, int disp_unit,
                            struct ompi_communicator_t *comm, struct opal_info_t *info,
                            int flavor, int *model)
{
    ompi_osc_nbe_module_t *module;
    int ret;
    (void) info;

    if (!bml_available()) return OMPI_ERR_NOT_SUPPORTED;

    ompi_osc_nbe_enter();
    ret = ompi_osc_nbe_am_register();
    ompi_osc_nbe_leave();
    if (OMPI_SUCCESS != ret) return ret;

    module = calloc(1, sizeof(*module));
    if (NULL == module) return OMPI_ERR_OUT_OF_RESOURCE;
    /* until this returns only this thread knows the module (its id is
     * claimed, but frames come only after the barrier below) */
    module->super = mca_osc_nbe_component.thread_multiple ? ompi_osc_nbe_locked_template
                                                          : module_template;
    OBJ_CONSTRUCT(&module->outq, opal_list_t);
    ompi_osc_nbe_hold_init(module);
    ompi_osc_nbe_claim_init(module);
    OBJ_CONSTRUCT(&module->list_item, opal_list_item_t);
    OBJ_CONSTRUCT(&module->creating_item, opal_list_item_t);
    module->win = win;
    module->direct_target = -1;
    module->rdma_now_peer = -1;
    module->flavor = flavor;
    module->disp_unit = disp_unit;
    module->win_size = size;

    /* No duplicate of the communicator (it would cost per-peer state in the
     * pml and coll of every window): the window keeps the user's
     * communicator alive and runs its few creation/free collectives on it.
     * Those sit inside MPI_Win_create/allocate/free, collective calls that
     * every process makes in the same order as its other collectives on that
     * communicator, so they match; nbe sends no point-to-point messages on it
     * (its traffic is BTL frames demultiplexed by the window id). */
    module->comm = comm;
    OBJ_RETAIN(comm);
    module->rank = ompi_comm_rank(comm);
    module->size = ompi_comm_size(comm);
    /* what may fail for want of memory comes before the first collective,
     * and its outcome is agreed there: a process that returned early would
     * leave the others waiting in the next one */
    module->engine = nbe_engine_create(module->rank, module->size, &nbe_transport, module);
    if (MPI_WIN_FLAVOR_ALLOCATE == flavor) {
        /* always a valid, distinct address, even for size 0 (freed again
         * below if the memory comes from a shared segment) */
        module->free_after = malloc(size ? size : 1);
    }
    bool failed = NULL == module->engine ||
                  (MPI_WIN_FLAVOR_ALLOCATE == flavor && NULL == module->free_after);
    bool shm_allocate, shm_tables, one_node, any_failed;
    ret = ompi_osc_nbe_agree_window_id(module, failed, &any_failed, &shm_allocate, &shm_tables,
                                       &one_node);
    if (OMPI_SUCCESS == ret && any_failed) ret = OMPI_ERR_OUT_OF_RESOURCE;
    if (OMPI_SUCCESS != ret) {
        module_release(module);
        return ret;
    }

    /* Win_allocate on a single node: memory from a shared segment, so peers
     * access it directly like an allocate_shared window */
    bool use_shm = MPI_WIN_FLAVOR_SHARED == flavor ||
        (MPI_WIN_FLAVOR_ALLOCATE == flavor && shm_allocate && one_node);

    if (use_shm) {
        free(module->free_after);
        module->free_after = NULL;
        ret = one_node ? ompi_osc_nbe_shm_create(module, size, disp_unit, base) : OMPI_ERR_RMA_SHARED;
    } else if (MPI_WIN_FLAVOR_ALLOCATE == flavor) {
        *base = module->free_after;
    }
    module->base = (MPI_WIN_FLAVOR_DYNAMIC == flavor) ? NULL : *base;
    if (OMPI_SUCCESS == ret && !use_shm && shm_tables && one_node && module->size > 1) {
        /* lock words and geometry in a small node segment (peers' geometry
         * read there on first touch; else a GEOM_REQ, osc_nbe_geom.c).
         * Without it (no /dev/shm space) the window uses lock messages. */
        ret = ompi_osc_nbe_shm_create_tables(module);
    }
    if (OMPI_SUCCESS != ret) {
        module_release(module);
        return ret;
    }

    ompi_osc_nbe_hold_configure(module);
    nbe_engine_set_fence_implied_grants(module->engine, mca_osc_nbe_component.fence_implied_grants);
    nbe_engine_set_unlock_no_wait(module->engine, mca_osc_nbe_component.unlock_no_wait &&
                                                      MPI_WIN_FLAVOR_DYNAMIC != flavor);
    if (module->shm_expo) {
        nbe_engine_set_exposure_word(module->engine, &module->shm_expo[module->rank]);
    }
    if (module->shm_base) {
        /* every operation is a direct load/store: fences need only a barrier */
        nbe_engine_set_local_fence(module->engine, 1);
    }

    module_link(module);

    *model = MPI_WIN_UNIFIED;
    win->w_osc_module = &module->super;
    subscribe_info(win, flavor);
    {
        char name[MPI_MAX_OBJECT_NAME];
        snprintf(name, sizeof(name), "nbe window %u", module->cid);
        ompi_win_set_name(win, name);
    }

    /* nobody may send to this window before every process registered it */
    ret = window_barrier(module);
    if (OMPI_SUCCESS != ret) {
        module_unlink(module);
        win->w_osc_module = NULL;
        module_release(module);
        return ret;
    }

    opal_output_verbose(10, mca_osc_nbe_component.output,
                        "osc/nbe: window %u created (flavor %d, %d processes)", module->cid,
                        flavor, module->size);
    return OMPI_SUCCESS;
}

int ompi_osc_nbe_free(struct ompi_win_t *win)
{
    ompi_osc_nbe_module_t *module = ompi_osc_nbe_module(win);
    int ret;

    (void) ompi_osc_nbe_cma_submit(module);   /* an epoch left open may have some */
    /* a failed engine (out of memory) can always be freed: its epochs
     * will not complete any more */
    bool failed = 0 != nbe_engine_failed(module->engine);
    /* before the barrier: the frames are ahead of its messages */
    if (failed) ompi_osc_nbe_tell_failure(module, true);
    ret = nbe_engine_can_free(module->engine);
    if (NBE_OK != ret && !failed) return OMPI_ERR_RMA_SYNC;
    module->freeing = true;
    /* Rule 10(b): every epoch completes before the window goes away */
    while ((!failed && !nbe_engine_idle(module->engine)) || !opal_list_is_empty(&module->outq) ||
           module->ring_npend || ompi_osc_nbe_packed_frame_open(module) || module->rdma_in_flight) {
        ompi_osc_nbe_progress();
        failed = 0 != nbe_engine_failed(module->engine);
    }
    if (!failed) {
        ompi_osc_nbe_tell_refusals(module);
        failed = 0 != nbe_engine_failed(module->engine);
    }
    if (failed) {
        /* also when it failed during the waits above */
        ompi_osc_nbe_tell_failure(module, true);
        /* a failed window's replies may never come */
        ompi_osc_nbe_abandon_awaiting(module);
        /* locks an epoch the application left open still hold their words */
        ompi_osc_nbe_shm_release_held(module);
    }
    ret = window_barrier(module);
    /* an access a target refused and reported late (in the barrier at the
     * latest: the target waited for our ack before entering it) */
    if (OMPI_SUCCESS == ret && 0 != module->remote_error) ret = module->remote_error;

    module_unlink(module);
    win->w_osc_module = NULL;
    module_release(module);
    /* on an error Open MPI keeps the handle (ompi_win_free): it must not
     * reach this module again */
    if (OMPI_SUCCESS != ret) win->w_flags |= OMPI_WIN_FREED;
    return ret;
}

/* the regions are kept sorted by base: an access may span adjacent ones */
static int region_after(const ompi_osc_nbe_module_t *module, uintptr_t addr)
{
    int lo = 0, hi = module->nregions;   /* first region with base > addr */
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (module->regions[mid].base <= addr) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

int ompi_osc_nbe_attach(struct ompi_win_t *win, void *base, size_t len)
{
    ompi_osc_nbe_module_t *module = ompi_osc_nbe_module(win);
    if (MPI_WIN_FLAVOR_DYNAMIC != module->flavor) return OMPI_ERR_RMA_FLAVOR;
    uintptr_t b = (uintptr_t) base;
    int at = region_after(module, b);
    const ompi_osc_nbe_region_t *prev = at > 0 ? &module->regions[at - 1] : NULL;
    const ompi_osc_nbe_region_t *next = at < module->nregions ? &module->regions[at] : NULL;
    if ((prev && b < prev->base + prev->len) || (next && next->base < b + len)) {
        return OMPI_ERR_RMA_ATTACH;
    }
    if (module->nregions == module->cap_regions) {
        int ncap = module->cap_regions ? 2 * module->cap_regions : 8;
        ompi_osc_nbe_region_t *nr = realloc(module->regions, (size_t) ncap * sizeof(*nr));
        if (NULL == nr) return OMPI_ERR_OUT_OF_RESOURCE;
        module->regions = nr;
        module->cap_regions = ncap;
    }
    memmove(&module->regions[at + 1], &module->regions[at],
            (size_t) (module->nregions - at) * sizeof(ompi_osc_nbe_region_t));
    module->regions[at].base = b;
    module->regions[at].len = len;
    module->nregions++;
    return OMPI_SUCCESS;
}

bool ompi_osc_nbe_attached(const ompi_osc_nbe_module_t *module, uint64_t addr, uint64_t len)
{
    if (len > UINT64_MAX - addr) return false;
    uint64_t end = addr + len;
    /* from the region holding addr on through adjacent ones */
    for (int i = region_after(module, (uintptr_t) addr) - 1; i >= 0 && i < module->nregions; ++i) {
        const ompi_osc_nbe_region_t *r = &module->regions[i];
        if (addr < r->base || addr - r->base >= r->len) return false;
        uint64_t rend = r->base + r->len;
        if (end <= rend) return true;
        addr = rend;
    }
    return false;
}

int ompi_osc_nbe_detach(struct ompi_win_t *win, const void *base)
{
    ompi_osc_nbe_module_t *module = ompi_osc_nbe_module(win);
    if (MPI_WIN_FLAVOR_DYNAMIC != module->flavor) return OMPI_ERR_RMA_FLAVOR;
    int i = region_after(module, (uintptr_t) base) - 1;
    if (i < 0 || module->regions[i].base != (uintptr_t) base) return OMPI_ERR_RMA_ATTACH;
    memmove(&module->regions[i], &module->regions[i + 1],
            (size_t) (module->nregions - i - 1) * sizeof(ompi_osc_nbe_region_t));
    module->nregions--;
    return OMPI_SUCCESS;
}
