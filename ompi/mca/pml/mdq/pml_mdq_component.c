/*
 * pml/mdq component: MCA parameters, MPI_T pvars, open/close/init/fini.
 */
#include "ompi_config.h"

#include "opal/mca/base/base.h"
#include "opal/mca/base/mca_base_pvar.h"
#include "opal/mca/base/mca_base_var_enum.h"
#include "opal/runtime/opal_progress.h"
#include "opal/util/argv.h"
#include "opal/util/output.h"
#include "opal/util/show_help.h"
#include "ompi/mca/bml/base/base.h"
#include "ompi/mca/pml/base/pml_base_bsend.h"
#include "ompi/runtime/params.h"

#include "ompi_scale_common.h"

#include "pml_mdq.h"
#include "pml_mdq_request.h"

static int mca_pml_mdq_component_register(void);
static int mca_pml_mdq_component_open(void);
static int mca_pml_mdq_component_close(void);
static mca_pml_base_module_t *mca_pml_mdq_component_init(int *priority, bool enable_progress_threads,
                                                         bool enable_mpi_threads);

mca_pml_base_component_2_0_0_t mca_pml_mdq_component = {
    .pmlm_version = {
        MCA_PML_BASE_VERSION_2_0_0,
        .mca_component_name = "mdq",
        MCA_BASE_MAKE_VERSION(component, OMPI_SCALE_MAJOR_VERSION, OMPI_SCALE_MINOR_VERSION,
                              OMPI_SCALE_RELEASE_VERSION),
        .mca_open_component = mca_pml_mdq_component_open,
        .mca_close_component = mca_pml_mdq_component_close,
        .mca_register_component_params = mca_pml_mdq_component_register,
    },
    .pmlm_data = {
        .param_field = MCA_BASE_METADATA_PARAM_CHECKPOINT,
    },
    .pmlm_init = mca_pml_mdq_component_init,
    .pmlm_finalize = mca_pml_mdq_component_fini,
};

static const mca_base_var_enum_value_t mdq_rndv_values[] = {
    {MDQ_RNDV_AUTO, "auto"},
    {MDQ_RNDV_RGET, "rget"},
    {MDQ_RNDV_RPUT, "rput"},
    {MDQ_RNDV_PIPELINE, "pipeline"},
    {0, NULL},
};

static const mca_base_var_enum_value_t mdq_adaptive_values[] = {
    {MDQ_ADAPTIVE_OFF, "off"},
    {MDQ_ADAPTIVE_AUTO, "auto"},
    {MDQ_ADAPTIVE_ALWAYS, "always"},
    {0, NULL},
};

static const mca_base_var_enum_value_t mdq_copy_guard_values[] = {
    {OMPI_SCALE_COPY_GUARD_OFF, "off"},
    {OMPI_SCALE_COPY_GUARD_ON, "on"},
    {OMPI_SCALE_COPY_GUARD_AUTO, "auto"},
    {0, NULL},
};

static const mca_base_var_enum_value_t mdq_mode_values[] = {
    {MDQ_MATCH_MODE_AUTO, "auto"},
    {MDQ_MATCH_MODE_LINEAR, "linear"},
    {MDQ_MATCH_MODE_4D, "4d"},
    {0, NULL},
};

/* optional structures of the 4D queue (mdq_match.h, docs/bench-match.md) */
static const mca_base_var_enum_value_t mdq_structure_values[] = {
    {MDQ_MATCH_FEAT_DEFAULT, "improved"},
    {MDQ_MATCH_FEAT_SEED, "seed"},
    {MDQ_MATCH_FEAT_DEFAULT | MDQ_MATCH_FEAT_SPLIT, "improved+split"},
    {0, NULL},
};

static const mca_base_var_enum_value_t mdq_policy_values[] = {
    {MDQ_MATCH_POLICY_OLDEST, "oldest"},
    {MDQ_MATCH_POLICY_FIRST, "first"},
    {0, NULL},
};

static void mdq_register_int(const char *name, const char *help, int lvl, int *storage)
{
    (void) mca_base_component_var_register(&mca_pml_mdq_component.pmlm_version, name, help,
                                           MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, lvl,
                                           MCA_BASE_VAR_SCOPE_READONLY, storage);
}

static void mdq_register_enum(const char *name, const char *help,
                              const mca_base_var_enum_value_t *values, int *storage)
{
    ompi_scale_register_enum(&mca_pml_mdq_component.pmlm_version, name, help, OPAL_INFO_LVL_5,
                             values, storage);
}

/* pvar getters: sum the match statistics over all live communicators */
enum { MDQ_STAT_PRQ, MDQ_STAT_UMQ, MDQ_STAT_SEARCHES, MDQ_STAT_VISITS };

static int mdq_stat_get(const struct mca_base_pvar_t *pvar, void *value, void *obj)
{
    int which = (int) (intptr_t) pvar->ctx;
    unsigned long long sum = 0;
    mca_pml_mdq_comm_t *mc;
    (void) obj;

    /* MPI_T may read before MPI_Init (or with another PML): no queues yet */
    if (!mca_pml_mdq.enabled) {
        *(unsigned long long *) value = 0;
        return OPAL_SUCCESS;
    }

    OPAL_THREAD_LOCK(&mca_pml_mdq.comms_lock);
    OPAL_LIST_FOREACH (mc, &mca_pml_mdq.comms, mca_pml_mdq_comm_t) {
        const mdq_match_stats_t *st = mdq_match_queue_stats(mc->queue);
        switch (which) {
        case MDQ_STAT_PRQ:
            sum += st->prq_length;
            break;
        case MDQ_STAT_UMQ:
            sum += st->umq_length;
            break;
        case MDQ_STAT_SEARCHES:
            sum += st->searches;
            break;
        default:
            sum += st->visits;
            break;
        }
    }
    OPAL_THREAD_UNLOCK(&mca_pml_mdq.comms_lock);
    *(unsigned long long *) value = sum;
    return OPAL_SUCCESS;
}

static void mdq_register_stat_pvar(const char *name, const char *desc, int cls, int which)
{
    (void) mca_base_component_pvar_register(&mca_pml_mdq_component.pmlm_version, name, desc,
                                            OPAL_INFO_LVL_4, cls,
                                            MCA_BASE_VAR_TYPE_UNSIGNED_LONG_LONG, NULL,
                                            MCA_BASE_VAR_BIND_NO_OBJECT,
                                            MCA_BASE_PVAR_FLAG_READONLY
                                                | MCA_BASE_PVAR_FLAG_CONTINUOUS,
                                            mdq_stat_get, NULL, NULL, (void *) (intptr_t) which);
}

static void mdq_register_counter_pvar(const char *name, const char *desc, unsigned long long *ctr)
{
    (void) mca_base_component_pvar_register(&mca_pml_mdq_component.pmlm_version, name, desc,
                                            OPAL_INFO_LVL_4, MCA_BASE_PVAR_CLASS_COUNTER,
                                            MCA_BASE_VAR_TYPE_UNSIGNED_LONG_LONG, NULL,
                                            MCA_BASE_VAR_BIND_NO_OBJECT,
                                            MCA_BASE_PVAR_FLAG_READONLY
                                                | MCA_BASE_PVAR_FLAG_CONTINUOUS,
                                            NULL, NULL, NULL, ctr);
}

static int mca_pml_mdq_component_register(void)
{
    int rc = ompi_scale_check_ompi_version("pml", "mdq");
    if (OPAL_SUCCESS != rc) {
        return rc;
    }

    mca_pml_mdq.priority = 5;
    mdq_register_int("priority",
                     "Selection priority of the mdq PML (ob1 uses 20, so mdq is only used when "
                     "requested with --mca pml mdq or given a higher priority)",
                     OPAL_INFO_LVL_9, &mca_pml_mdq.priority);
    mca_pml_mdq.verbose = 0;
    mdq_register_int("verbose", "Verbosity of the mdq PML (0: silent, 10: protocol decisions, "
                     "20: every message)", OPAL_INFO_LVL_9, &mca_pml_mdq.verbose);

    mca_pml_mdq.rndv_protocol = MDQ_RNDV_AUTO;
    mdq_register_enum("rndv_protocol",
                      "Rendezvous protocol above the medium limit (pml_mdq_medium_limit): auto and rget use RDMA get "
                      "when sender and receiver data are contiguous and the BTL supports get, "
                      "then fall back to RDMA put, then to send/receive pipelining; rput never "
                      "uses get; pipeline never uses RDMA",
                      mdq_rndv_values, &mca_pml_mdq.rndv_protocol);

    mca_pml_mdq.match_mode = MDQ_MATCH_MODE_AUTO;
    mdq_register_enum("match_mode",
                      "Matching queue layout per communicator: auto switches to the 4D queue "
                      "when the communicator is at least (3*ds+1)*match_cutoff_adjust ranks, "
                      "linear always uses one list, 4d always uses the 4D queue",
                      mdq_mode_values, &mca_pml_mdq.match_mode);

    mca_pml_mdq.match_structures = MDQ_MATCH_FEAT_DEFAULT;
    mdq_register_enum("match_structures",
                      "Structures of the 4D queue: improved (the seed design plus an "
                      "arrival-order list of unexpected messages for MPI_ANY_SOURCE, a cached "
                      "last JumpPoint and an array of Cube pointers: +32 B + 8*ceil(size/ds^3) B "
                      "per communicator, +16 B per queued item), seed (the published design), "
                      "improved+split (also per-rank lists in JumpPoints holding more than ds "
                      "items, for many queued messages per peer)",
                      mdq_structure_values,
                      &mca_pml_mdq.match_structures);

    mca_pml_mdq.vader_fbox_size = 32768;
    mdq_register_int("vader_fbox_size",
                     "Size in bytes of vader's per-peer fast box (btl_vader_fbox_size) when mdq is "
                     "the PML asked for by name (--mca pml mdq) and btl_vader_fbox_size is not set. "
                     "vader's default of 4096 holds 42 messages of 64 B or 7 of 512 B: a burst of "
                     "small sends beyond that goes through vader's slower FIFO. vader allocates a "
                     "box for each of up to btl_vader_fbox_max (32) peers it sends to often, in "
                     "its shared segment. Rounded up to 32 bytes, at least 256 (a box too small "
                     "for one message stalls vader), at most 64 KiB; 0: leave vader's setting",
                     OPAL_INFO_LVL_5, &mca_pml_mdq.vader_fbox_size);

    /* 3.5 comes from the matching bench (docs/bench-match.md); the seed
     * work used 2.0 */
    mca_pml_mdq.match_adjust = MDQ_MATCH_ADJUSTMENT_DEFAULT;
    (void) mca_base_component_var_register(&mca_pml_mdq_component.pmlm_version,
                                           "match_cutoff_adjust",
                                           "Multiplier (>= 1.0) of the communicator size threshold "
                                           "(3*ds+1) from which the auto match mode uses the 4D "
                                           "queue (3.5: measured crossover of the improved "
                                           "queue; the seed work used 2.0)",
                                           MCA_BASE_VAR_TYPE_DOUBLE, NULL, 0, 0, OPAL_INFO_LVL_5,
                                           MCA_BASE_VAR_SCOPE_READONLY, &mca_pml_mdq.match_adjust);

    mca_pml_mdq.any_source_policy = MDQ_MATCH_POLICY_OLDEST;
    mdq_register_enum("any_source_policy",
                      "Which unexpected message an MPI_ANY_SOURCE receive takes when several "
                      "senders match: oldest (strict arrival order) or first (cheapest, first "
                      "found in rank order; still ordered per sender)",
                      mdq_policy_values,
                      &mca_pml_mdq.any_source_policy);

    mca_pml_mdq.free_list_num = 4;
    mdq_register_int("free_list_num", "Initial number of requests and fragments allocated",
                     OPAL_INFO_LVL_9, &mca_pml_mdq.free_list_num);
    mca_pml_mdq.free_list_max = -1;
    mdq_register_int("free_list_max",
                     "Maximum number of requests and fragments (-1: unlimited)", OPAL_INFO_LVL_9,
                     &mca_pml_mdq.free_list_max);
    mca_pml_mdq.free_list_inc = 64;
    mdq_register_int("free_list_inc", "Number of requests and fragments added when a list grows",
                     OPAL_INFO_LVL_9, &mca_pml_mdq.free_list_inc);
    mca_pml_mdq.max_outstanding_frags = 8;
    mdq_register_int("pipeline_depth",
                     "Maximum pipeline fragments in flight per send request", OPAL_INFO_LVL_9,
                     &mca_pml_mdq.max_outstanding_frags);

    mca_pml_mdq.medium_limit = -1;
    mdq_register_int("medium_limit",
                     "Largest message (bytes) sent with the medium protocol: above the BTL eager "
                     "limit and up to this size a message is sent without handshake in pieces of "
                     "at most the BTL max send size and buffered by the receiver when "
                     "unexpected; larger messages use the rendezvous. -1: per BTL, one piece "
                     "(btl_max_send_size minus the 40-byte medium header, 32 KiB on vader); "
                     "0: no medium protocol (rendezvous right above the eager limit)",
                     OPAL_INFO_LVL_5, &mca_pml_mdq.medium_limit);

    mca_pml_mdq.medium_piece = 0;
    mdq_register_int("medium_piece_size",
                     "Payload bytes per piece of a medium message (0: as many as the BTL's max "
                     "send size takes, so that with the default pml_mdq_medium_limit every medium "
                     "message is one piece). A receive posted when the first of several pieces "
                     "arrives takes each piece straight into its buffer; others are assembled. "
                     "At least 64 (smaller values are raised: a piece must hold a whole element "
                     "of any predefined type). Pieces of 2-4 KiB were slower at 8-16 KiB on vader "
                     "(docs/bench-pt2pt.md)",
                     OPAL_INFO_LVL_9, &mca_pml_mdq.medium_piece);

    mca_pml_mdq.adaptive_copy = MDQ_ADAPTIVE_AUTO;
    mdq_register_enum("adaptive_copy",
                      "Contiguous messages above the medium limit, to a peer reachable by RDMA "
                      "get: auto measures, per BTL and size class (powers of two), how long "
                      "copying takes (COPY: up to pml_mdq_adaptive_copy_max the message goes "
                      "through BTL buffers in pieces without handshake, above it as a rendezvous "
                      "streamed in fragments, up to pml_mdq_adaptive_pipeline_max) and how long "
                      "the RDMA-get rendezvous (RGET) takes, from send to the receiver's "
                      "acknowledgement, and uses the faster one (where the two processes share a "
                      "cache, or a get pins pages slowly, copying wins even at MiB sizes; "
                      "elsewhere the single copy of a get wins from a few tens of KiB); "
                      "off always uses the rendezvous; always always copies",
                      mdq_adaptive_values, &mca_pml_mdq.adaptive_copy);
    mca_pml_mdq.adaptive_copy_max = 131072;
    mdq_register_int("adaptive_copy_max",
                     "Largest message (bytes) that pml_mdq_adaptive_copy may copy through BTL "
                     "buffers without handshake instead of getting it with RDMA (above it, the "
                     "copying alternative is the rendezvous pipeline: "
                     "pml_mdq_adaptive_pipeline_max)", OPAL_INFO_LVL_5, &mca_pml_mdq.adaptive_copy_max);
    mca_pml_mdq.copy_guard = OMPI_SCALE_COPY_GUARD_AUTO;
    mdq_register_enum("copy_guard",
                      "Copies of more than 2 KiB whose destination is 1-63 bytes past the source "
                      "modulo 4 KiB: the C library's memcpy (rep movsb) and the kernel's CMA copy "
                      "take about 25x longer there on AMD Zen CPUs with FSRM (8 KiB: 4.3 us "
                      "instead of 0.16). auto measures once per process, when such a copy first "
                      "comes up, whether this machine pays it; where it does, mdq copies message "
                      "data with a vector loop at those distances (both sides), and streams a "
                      "rendezvous in fragments instead of a single-copy RDMA (vader) between "
                      "such buffers. on: always, off: never",
                      mdq_copy_guard_values, &mca_pml_mdq.copy_guard);
    mca_pml_mdq.adaptive_pipeline_max = -1;
    mdq_register_int("adaptive_pipeline_max",
                     "Above pml_mdq_adaptive_copy_max, pml_mdq_adaptive_copy chooses between RGET "
                     "and the rendezvous pipeline (the RTS asks the receiver for fragments, which "
                     "it copies out while the sender copies the next ones in) up to this size "
                     "(bytes; -1: any size; 0: always RGET above pml_mdq_adaptive_copy_max)",
                     OPAL_INFO_LVL_5, &mca_pml_mdq.adaptive_pipeline_max);
    mca_pml_mdq.adaptive_copy_piece = 16384;
    mdq_register_int("adaptive_copy_piece",
                     "Payload bytes per piece of a message copied by pml_mdq_adaptive_copy (at "
                     "most the BTL's max send size minus the header): the receiver copies one "
                     "piece out while the sender copies the next in",
                     OPAL_INFO_LVL_9, &mca_pml_mdq.adaptive_copy_piece);
    mca_pml_mdq.adaptive_probe_interval = 128;
    mdq_register_int("adaptive_probe_interval",
                     "pml_mdq_adaptive_copy auto: every Nth message of a size class uses the "
                     "protocol not preferred, so that a change of costs is noticed (0: never "
                     "after the first 10 messages of the class)",
                     OPAL_INFO_LVL_9, &mca_pml_mdq.adaptive_probe_interval);
    mca_pml_mdq.adaptive_copy_sample = 8;
    mdq_register_int("adaptive_copy_sample",
                     "pml_mdq_adaptive_copy auto: every Nth copied message is timed, which costs "
                     "the receiver an acknowledgement (RDMA gets are acknowledged anyway)",
                     OPAL_INFO_LVL_9, &mca_pml_mdq.adaptive_copy_sample);

    mdq_register_stat_pvar("posted_recvq_length", "Posted receives currently queued (all "
                           "communicators)", MCA_BASE_PVAR_CLASS_SIZE, MDQ_STAT_PRQ);
    mdq_register_stat_pvar("unexpected_msgq_length", "Unexpected messages currently queued "
                           "(all communicators)", MCA_BASE_PVAR_CLASS_SIZE, MDQ_STAT_UMQ);
    mdq_register_stat_pvar("match_attempts", "Searches of the matching queues of live "
                           "communicators (a receive posted while no unexpected message "
                           "waits searches nothing)", MCA_BASE_PVAR_CLASS_COUNTER,
                           MDQ_STAT_SEARCHES);
    mdq_register_stat_pvar("match_items_visited", "Items and structure nodes visited by "
                           "searches of the matching queues of live communicators",
                           MCA_BASE_PVAR_CLASS_COUNTER, MDQ_STAT_VISITS);
    mdq_register_counter_pvar("eager_messages", "Messages sent with the eager protocol (counted by the sender)",
                              &mca_pml_mdq.counters.eager);
    mdq_register_counter_pvar("medium_messages", "Messages sent with the medium protocol (counted by the sender)",
                              &mca_pml_mdq.counters.medium);
    mdq_register_counter_pvar("medium_direct_messages", "Medium messages of several pieces that a "
                              "receive posted when the first piece arrived took piece by piece, "
                              "without assembling them (counted by the receiver)",
                              &mca_pml_mdq.counters.medium_direct);
    mdq_register_counter_pvar("rget_messages", "Messages received with RDMA get (counted by the receiver)",
                              &mca_pml_mdq.counters.rget);
    mdq_register_counter_pvar("rput_messages", "Messages sent with RDMA put (counted by the sender)",
                              &mca_pml_mdq.counters.rput);
    mdq_register_counter_pvar("pipeline_messages", "Messages transferred with send/receive pipelining (counted by the receiver that asked for it, or by the sender when it could not use the RDMA put it was asked for)",
                              &mca_pml_mdq.counters.pipeline);
    mdq_register_counter_pvar("adaptive_copy_messages", "Messages above the medium limit sent by "
                              "copying instead of RDMA get (pml_mdq_adaptive_copy; counted by "
                              "the sender; up to pml_mdq_adaptive_copy_max also in "
                              "medium_messages, above it also in the receiver's pipeline_messages)",
                              &mca_pml_mdq.counters.adaptive_copy);
    mdq_register_counter_pvar("rdma_rerouted_messages", "Rendezvous messages streamed in "
                              "fragments instead of a single-copy RDMA whose copy would run at a "
                              "slow distance (pml_mdq_copy_guard; counted by the receiver, or by "
                              "the sender for an RDMA put)", &mca_pml_mdq.counters.rdma_rerouted);
    mdq_register_counter_pvar("adaptive_timed_messages", "Completion times measured for the "
                              "COPY/RGET choice (counted by the sender)",
                              &mca_pml_mdq.counters.adaptive_timed);
    mdq_register_counter_pvar("held_out_of_order", "Fragments held until their sequence number "
                              "was due", &mca_pml_mdq.counters.held_ooo);
    mdq_register_counter_pvar("held_nocomm", "Messages held because they arrived before their "
                              "communicator was created here", &mca_pml_mdq.counters.held_nocomm);
    return OMPI_SUCCESS;
}

static int mca_pml_mdq_component_open(void)
{
    mca_pml_mdq.output = opal_output_open(NULL);
    opal_output_set_verbosity(mca_pml_mdq.output, mca_pml_mdq.verbose);
    ompi_scale_copy_set_mode(mca_pml_mdq.copy_guard);
    mca_pml_mdq.enabled = false;
    return mca_base_framework_open(&ompi_bml_base_framework, 0);
}

static int mca_pml_mdq_component_close(void)
{
    int rc = mca_base_framework_close(&ompi_bml_base_framework);
    if (OMPI_SUCCESS != rc) {
        return rc;
    }
    opal_output_close(mca_pml_mdq.output);
    return OMPI_SUCCESS;
}

/* the pml selection list names mdq (an unmodified job, whose list is
 * empty, keeps every BTL default) */
static bool mdq_asked_for(void)
{
    int idx = -1;
    const char **value = NULL;
    bool include = true;
    char **names = NULL;
    if (OPAL_SUCCESS != mca_base_var_find_by_name("pml", &idx) ||
        OPAL_SUCCESS != mca_base_var_get_value(idx, &value, NULL, NULL) || NULL == value ||
        NULL == *value) {
        return false;
    }
    /* Open MPI's own reading of a component list ("^" excludes) */
    if (OPAL_SUCCESS != mca_base_component_parse_requested(*value, &include, &names)) return false;
    bool found = false;
    for (char **n = names; include && n && *n; ++n) found |= 0 == strcmp(*n, "mdq");
    opal_argv_free(names);
    return found;
}

/* A larger vader fast box for mdq's small messages, unless the user chose
 * one. MPI_Init has run vader's component init already (which rounds the
 * size to vader's 32-byte alignment), but vader allocates its fast boxes
 * only when the pml adds the first processes: the size set here is the one
 * they get, so it must be rounded here too. */
#define MDQ_VADER_FBOX_ALIGN 32
#define MDQ_VADER_FBOX_MAX   (64 * 1024)
/* vader stalls with a box that holds no message (32 B hangs stock ob1 too) */
#define MDQ_VADER_FBOX_MIN   256
static void mdq_tune_vader(void)
{
    int idx = -1;
    mca_base_var_source_t source;
    if (mca_pml_mdq.vader_fbox_size <= 0 || !mdq_asked_for()) return;
    if (OPAL_SUCCESS != mca_base_var_find_by_name("btl_vader_fbox_size", &idx) ||
        OPAL_SUCCESS != mca_base_var_get_value(idx, NULL, &source, NULL) ||
        MCA_BASE_VAR_SOURCE_DEFAULT != source) {
        return;
    }
    unsigned int size = (unsigned int) mca_pml_mdq.vader_fbox_size;
    if (size > MDQ_VADER_FBOX_MAX) size = MDQ_VADER_FBOX_MAX;
    if (size < MDQ_VADER_FBOX_MIN) size = MDQ_VADER_FBOX_MIN;
    size = (size + MDQ_VADER_FBOX_ALIGN - 1) & ~(unsigned int) (MDQ_VADER_FBOX_ALIGN - 1);
    if (OPAL_SUCCESS == mca_base_var_set_value(idx, &size, sizeof(size), MCA_BASE_VAR_SOURCE_SET,
                                               NULL)) {
        MDQ_VERBOSE(10, "pml:mdq: btl_vader_fbox_size set to %u", size);
    }
}

static mca_pml_base_module_t *mca_pml_mdq_component_init(int *priority, bool enable_progress_threads,
                                                         bool enable_mpi_threads)
{
    mca_btl_base_selected_module_t *sm;

    *priority = mca_pml_mdq.priority;
    if (!(mca_pml_mdq.match_adjust >= 1.0)) {   /* NaN too */
        (void) ompi_scale_help_init();
        opal_show_help("help-mpi-pml-mdq.txt", "bad-cutoff-adjust", true,
                       mca_pml_mdq.match_adjust);
        return NULL;
    }
    mdq_tune_vader();
    /* the convertor packs whole elements of predefined types (up to 32 B):
     * a smaller piece of a non-contiguous message would never fill */
    if (mca_pml_mdq.medium_piece < 0) mca_pml_mdq.medium_piece = 0;
    if (mca_pml_mdq.medium_piece > 0 && mca_pml_mdq.medium_piece < MDQ_MEDIUM_PIECE_MIN) {
        mca_pml_mdq.medium_piece = MDQ_MEDIUM_PIECE_MIN;
    }
    if (OMPI_SUCCESS != mca_bml_base_init(enable_progress_threads, enable_mpi_threads)) {
        return NULL;
    }

    mca_pml_mdq.max_eager = 0;
    mca_pml_mdq.big_buf_size = 0;
    OPAL_LIST_FOREACH (sm, &mca_btl_base_modules_initialized, mca_btl_base_selected_module_t) {
        mca_btl_base_module_t *btl = sm->btl_module;
        if (btl->btl_flags & MCA_BTL_FLAGS_SINGLE_ADD_PROCS) {
            mca_pml_mdq.super.pml_flags |= MCA_PML_BASE_FLAG_REQUIRE_WORLD;
        }
        if (btl->btl_eager_limit > mca_pml_mdq.max_eager) {
            mca_pml_mdq.max_eager = btl->btl_eager_limit;
        }
        if (btl->btl_max_send_size > mca_pml_mdq.big_buf_size) {
            mca_pml_mdq.big_buf_size = btl->btl_max_send_size;
        }
    }
    MDQ_VERBOSE(10, "pml:mdq: init, priority %d, max eager %zu", *priority, mca_pml_mdq.max_eager);
    return &mca_pml_mdq.super;
}

int mca_pml_mdq_component_fini(void)
{
    int rc = mca_bml.bml_finalize();
    if (OMPI_SUCCESS != rc) {
        return rc;
    }
    if (!mca_pml_mdq.enabled) {
        return OMPI_SUCCESS;
    }
    mca_pml_mdq.enabled = false;
    opal_progress_unregister(mca_pml_mdq_progress);
    (void) mca_pml_base_bsend_fini();
    mca_pml_mdq_adapt_fini();

    OBJ_DESTRUCT(&mca_pml_mdq.frags);
    OBJ_DESTRUCT(&mca_pml_mdq.big_bufs);
    OBJ_DESTRUCT(&mca_pml_mdq.pending_send);
    OBJ_DESTRUCT(&mca_pml_mdq.pending_recv);
    OPAL_LIST_DESTRUCT(&mca_pml_mdq.pending_ctl);
    OBJ_DESTRUCT(&mca_pml_mdq.pending_lock);
    OBJ_DESTRUCT(&mca_pml_mdq.comms);
    OBJ_DESTRUCT(&mca_pml_mdq.nocomm_frags);
    OBJ_DESTRUCT(&mca_pml_mdq.comms_lock);
    if (NULL != mca_pml_mdq.pool) {
        mdq_match_pool_destroy(mca_pml_mdq.pool);
        mca_pml_mdq.pool = NULL;
    }
    return OMPI_SUCCESS;
}
