/*
 * osc/nbe synchronizations: each blocking MPI call is the engine's
 * nonblocking operation followed by a wait on its internal request.
 * Opening calls (start, post, lock, lock_all) do not wait: their epoch
 * activates (or stays deferred) inside the engine.
 */
#include "osc_nbe.h"

#include "opal/runtime/opal_progress.h"
#include "opal/sys/atomic.h"
#include "opal/util/show_help.h"
#include "ompi/mca/rte/rte.h"
#include "ompi/group/group.h"

static int request_free(struct ompi_request_t **ompi_req)
{
    ompi_osc_nbe_request_t *req = (ompi_osc_nbe_request_t *) *ompi_req;
    /* the lock orders this with the completion (osc_nbe_comm.c) */
    ompi_osc_nbe_enter();
    if (!REQUEST_COMPLETE(&req->super)) {
        /* released when the operation completes */
        req->user_freed = true;
    } else {
        OMPI_REQUEST_FINI(&req->super);
        OBJ_RELEASE(req);
    }
    ompi_osc_nbe_leave();
    *ompi_req = MPI_REQUEST_NULL;
    return OMPI_SUCCESS;
}

static int request_cancel(struct ompi_request_t *request, int complete)
{
    (void) request; (void) complete;
    return MPI_ERR_REQUEST;
}

static void request_construct(ompi_osc_nbe_request_t *req)
{
    req->super.req_type = OMPI_REQUEST_WIN;
    req->super.req_status._cancelled = 0;
    req->super.req_free = request_free;
    req->super.req_cancel = request_cancel;
    req->user_freed = false;
}

OBJ_CLASS_INSTANCE(ompi_osc_nbe_request_t, ompi_request_t, request_construct, NULL);

/* a failed window's help text, once per process and topic */
static void show_once(bool *told, const char *topic)
{
    if (*told) return;
    *told = true;
    opal_show_help("help-osc-nbe.txt", topic, true, ompi_process_info.nodename);
}

int ompi_osc_nbe_err(int nbe_rc)
{
    static bool told_nomem, told_peer, told_comm;
    switch (nbe_rc) {
    case NBE_OK: return OMPI_SUCCESS;
    case NBE_ERR_SYNC: return OMPI_ERR_RMA_SYNC;
    case NBE_ERR_NOMEM:
        /* an MPI class, not OMPI_ERR_OUT_OF_RESOURCE (which the MPI layer
         * turns into MPI_ERR_INTERN) */
        show_once(&told_nomem, "out-of-memory");
        return MPI_ERR_NO_MEM;
    case NBE_ERR_PEER:
        show_once(&told_peer, "peer-failed");
        return MPI_ERR_OTHER;
    case NBE_ERR_COMM:
        show_once(&told_comm, "send-failed");
        return MPI_ERR_OTHER;
    default: return OMPI_ERR_BAD_PARAM;
    }
}

int ompi_osc_nbe_failed_rc(ompi_osc_nbe_module_t *module)
{
    int failed = nbe_engine_failed(module->engine);
    return OPAL_UNLIKELY(failed) ? ompi_osc_nbe_err(failed) : OMPI_SUCCESS;
}

void ompi_osc_nbe_req_complete_cb(void *ctx, nbe_req_t *req)
{
    (void) ctx;
    (void) req;   /* blocking calls poll req->complete */
}

static int wait_req_for(ompi_osc_nbe_module_t *module, nbe_req_t *req, int target);

int ompi_osc_nbe_wait_req(ompi_osc_nbe_module_t *module, nbe_req_t *req)
{
    return wait_req_for(module, req, -1);
}

/* ... watching the wait for a passive target away from MPI (target >= 0,
 * or OMPI_OSC_NBE_WATCH_ALL for every target it waits for; osc_nbe_presence.c) */
static int wait_req_for(ompi_osc_nbe_module_t *module, nbe_req_t *req, int target)
{
    /* always poll the network once: a process that only synchronizes with
     * itself (lock self / get / unlock self in a loop) must still serve the
     * lock requests and operations of others. NULL: the engine completed
     * the call without a request. */
    if (NULL == req) {
        ompi_osc_nbe_progress();
        return OMPI_SUCCESS;
    }
    bool done_before = req->complete;
    ompi_osc_nbe_wait_watch_t watch;
    ompi_osc_nbe_wait_watch_init(&watch, module, target);
    do {
        ompi_osc_nbe_progress();
        ompi_osc_nbe_wait_watch_poll(&watch, module);
    } while (!req->complete && !nbe_engine_failed(module->engine));
    ompi_osc_nbe_wait_watch_done(&watch, module);
    if (OPAL_UNLIKELY(!req->complete)) {
        /* the engine failed: the request never completes; it stays with
         * the engine, which frees its epochs with the window */
        return ompi_osc_nbe_failed_rc(module);
    }
    if (OPAL_UNLIKELY(!done_before && nbe_engine_failed(module->engine))) {
        /* it failed while we waited and the request completed anyway (the
         * epoch's operations ended with the error, e.g. frames still queued
         * when the link broke): the call reports the failure. A request
         * complete before the wait (an epoch opened) stands, whatever the
         * poll brings */
        nbe_req_free(req);
        return ompi_osc_nbe_failed_rc(module);
    }
    int status = req->status;
    nbe_req_free(req);
    return status ? OMPI_ERROR : OMPI_SUCCESS;
}

static int nbe_assert(int mpi_assert)
{
    int a = 0;
    if (mpi_assert & MPI_MODE_NOCHECK) a |= NBE_MODE_NOCHECK;
    if (mpi_assert & MPI_MODE_NOPRECEDE) a |= NBE_MODE_NOPRECEDE;
    if (mpi_assert & MPI_MODE_NOSUCCEED) a |= NBE_MODE_NOSUCCEED;
    return a;
}

void ompi_osc_nbe_group_cache_clear(ompi_osc_nbe_group_cache_t *gc)
{
    if (gc->group) OBJ_RELEASE(gc->group);
    free(gc->ranks);
    gc->group = NULL;
    gc->ranks = NULL;
    gc->n = 0;
}

/* group ranks -> ranks of the window's communicator, sorted (the engine
 * keeps epoch legs in rank order); the cache answers repeated groups */
static int group_ranks(ompi_osc_nbe_module_t *module, ompi_group_t *group,
                       ompi_osc_nbe_group_cache_t *gc, const int **out, int *n)
{
    if (gc->group == group) {
        *out = gc->ranks;
        *n = gc->n;
        return OMPI_SUCCESS;
    }
    int size = ompi_group_size(group);
    int *in = malloc(sizeof(int) * (size_t) (size ? size : 1));
    int *ranks = malloc(sizeof(int) * (size_t) (size ? size : 1));
    if (NULL == in || NULL == ranks) {
        free(in);
        free(ranks);
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    for (int i = 0; i < size; ++i) in[i] = i;
    int rc = ompi_group_translate_ranks(group, size, in, module->comm->c_local_group, ranks);
    free(in);
    if (OMPI_SUCCESS != rc) {
        free(ranks);
        return rc;
    }
    for (int i = 0; i < size; ++i) {
        if (MPI_UNDEFINED == ranks[i]) {
            free(ranks);
            return OMPI_ERR_BAD_PARAM;
        }
    }
    nbe_sort_ranks(ranks, size);
    ompi_osc_nbe_group_cache_clear(gc);
    OBJ_RETAIN(group);
    gc->group = group;
    gc->ranks = ranks;
    gc->n = size;
    *out = ranks;
    *n = size;
    return OMPI_SUCCESS;
}

/* a request that the engine completed within the call needs no network
 * poll on a shared-memory window (nobody waits for our messages there), but
 * every 32nd still polls so that a loop of such calls cannot starve others */
static int finish_req(ompi_osc_nbe_module_t *module, nbe_req_t *req, int target)
{
    static unsigned quick;
    if (NULL != module->shm_base && (NULL == req || req->complete)) {
        /* NULL: the engine completed the call without a request */
        int status = req ? req->status : 0;
        nbe_req_free(req);
        if (0 == (++quick & 31)) ompi_osc_nbe_progress();
        return status ? OMPI_ERROR : OMPI_SUCCESS;
    }
    return wait_req_for(module, req, target);
}

/* a synchronization that succeeded returns the first error a target
 * reported since the last one (an access a dynamic window refused) */
static int with_remote_error(ompi_osc_nbe_module_t *module, int rc)
{
    if (OPAL_LIKELY(0 == module->remote_error) || OMPI_SUCCESS != rc) return rc;
    rc = module->remote_error;
    module->remote_error = 0;
    return rc;
}

/* What every synchronization call does first: move the transfers gathered
 * for one CMA call (osc_nbe_cma.c), and, for osc_nbe_test_fail_rank, fail
 * that rank's windows at their second synchronization call, as if a
 * message had been lost for want of memory */
static void sync_entry(ompi_osc_nbe_module_t *module)
{
    /* a failure fails the window: the call's engine request reports it */
    if (OPAL_UNLIKELY(NULL != module->cma)) (void) ompi_osc_nbe_cma_submit(module);
    if (OPAL_LIKELY(mca_osc_nbe_component.test_fail_rank < 0)) return;
    if (ompi_comm_rank(&ompi_mpi_comm_world.comm) == mca_osc_nbe_component.test_fail_rank &&
        2 == ++module->test_syncs) {
        nbe_engine_fail(module->engine);
    }
}

int ompi_osc_nbe_fence(int assert, struct ompi_win_t *win)
{
    ompi_osc_nbe_module_t *module = ompi_osc_nbe_module(win);
    sync_entry(module);
    nbe_req_t *req = NULL;
    int rc = nbe_ifence(module->engine, nbe_assert(assert), &req);
    if (NBE_OK != rc) return ompi_osc_nbe_err(rc);
    rc = finish_req(module, req, -1);
    if (OMPI_SUCCESS == rc) ompi_osc_nbe_fence_publish(module);
    if (OMPI_SUCCESS == rc && NULL != module->shm_base) {
        /* local fence (engine): the stores of this process are done; the
         * barrier makes everybody's visible before anyone goes on */
        opal_atomic_mb();
        rc = ompi_osc_nbe_shm_barrier(module);
    }
    return with_remote_error(module, rc);
}

int ompi_osc_nbe_start(struct ompi_group_t *group, int assert, struct ompi_win_t *win)
{
    ompi_osc_nbe_module_t *module = ompi_osc_nbe_module(win);
    sync_entry(module);
    const int *ranks;
    int n;
    int rc = group_ranks(module, group, &module->gc_start, &ranks, &n);
    if (OMPI_SUCCESS != rc) return rc;
    rc = nbe_istart(module->engine, ranks, n, nbe_assert(assert), NULL);
    return ompi_osc_nbe_err(rc);
}

int ompi_osc_nbe_complete(struct ompi_win_t *win)
{
    ompi_osc_nbe_module_t *module = ompi_osc_nbe_module(win);
    sync_entry(module);
    nbe_req_t *req = NULL;
    int rc = nbe_icomplete(module->engine, &req);
    if (NBE_OK != rc) return ompi_osc_nbe_err(rc);
    return with_remote_error(module, ompi_osc_nbe_wait_req(module, req));
}

int ompi_osc_nbe_post(struct ompi_group_t *group, int assert, struct ompi_win_t *win)
{
    ompi_osc_nbe_module_t *module = ompi_osc_nbe_module(win);
    sync_entry(module);
    const int *ranks;
    int n;
    int rc = group_ranks(module, group, &module->gc_post, &ranks, &n);
    if (OMPI_SUCCESS != rc) return rc;
    rc = nbe_ipost(module->engine, ranks, n, nbe_assert(assert), NULL);
    if (NBE_OK == rc) ompi_osc_nbe_progress_module(module);
    return ompi_osc_nbe_err(rc);
}

int ompi_osc_nbe_wait(struct ompi_win_t *win)
{
    ompi_osc_nbe_module_t *module = ompi_osc_nbe_module(win);
    sync_entry(module);
    nbe_req_t *req = NULL;
    int rc = nbe_iwait(module->engine, &req);
    if (NBE_OK != rc) return ompi_osc_nbe_err(rc);
    return with_remote_error(module, ompi_osc_nbe_wait_req(module, req));
}

int ompi_osc_nbe_test(struct ompi_win_t *win, int *flag)
{
    ompi_osc_nbe_module_t *module = ompi_osc_nbe_module(win);
    ompi_osc_nbe_progress();
    int rc = nbe_test_exposure(module->engine, flag);
    return ompi_osc_nbe_err(rc);
}

int ompi_osc_nbe_lock(int lock_type, int target, int assert, struct ompi_win_t *win)
{
    ompi_osc_nbe_module_t *module = ompi_osc_nbe_module(win);
    sync_entry(module);
    nbe_req_t *req = NULL;
    bool self = target == module->rank;
    int type = (MPI_LOCK_EXCLUSIVE == lock_type) ? NBE_LOCK_EXCLUSIVE : NBE_LOCK_SHARED;
    int rc;

    if (module->shm_locks) {
        /* shared-memory window: the origin takes the target's lock word
         * itself; the engine epoch needs no grant (NOCHECK) */
        rc = nbe_ilock(module->engine, type, target, NBE_MODE_NOCHECK, NULL);
        if (NBE_OK != rc) return ompi_osc_nbe_err(rc);
        if (!(assert & MPI_MODE_NOCHECK)) {
            bool exclusive = NBE_LOCK_EXCLUSIVE == type;
            rc = ompi_osc_nbe_shm_win_lock(module, target, exclusive);
            if (OMPI_SUCCESS != rc) return rc;
            if (OMPI_SUCCESS != ompi_osc_nbe_shm_note_held(module, target, exclusive)) {
                ompi_osc_nbe_shm_win_unlock(module, target, exclusive);
                return OMPI_ERR_OUT_OF_RESOURCE;
            }
        }
        /* the epoch is granted already: the direct answer of the last epoch
         * to this target holds again, and its first store skips the lookups */
        if (module->direct_target == target && nbe_lock_ready(module->engine, target)) {
            module->direct_gen = nbe_engine_generation(module->engine);
        }
        return OMPI_SUCCESS;
    }
    /* the lock request leaves eagerly; the epoch's operations wait for the
     * grant. Only a lock of self must be held on return (local loads and
     * stores follow it). */
    rc = nbe_ilock(module->engine, type, target, nbe_assert(assert), self ? &req : NULL);
    if (NBE_OK != rc) return ompi_osc_nbe_err(rc);
    if (self) return ompi_osc_nbe_wait_req(module, req);
    ompi_osc_nbe_progress_module(module);
    return OMPI_SUCCESS;
}

int ompi_osc_nbe_unlock(int target, struct ompi_win_t *win)
{
    ompi_osc_nbe_module_t *module = ompi_osc_nbe_module(win);
    sync_entry(module);
    nbe_req_t *req = NULL;
    int rc = nbe_iunlock(module->engine, target, &req);
    rc = NBE_OK == rc ? finish_req(module, req, target) : ompi_osc_nbe_err(rc);
    /* release the lock word only once the epoch's operations completed (or
     * the window failed: its peers may be waiting for the word) */
    bool exclusive;
    if (module->shm_locks && ompi_osc_nbe_shm_take_held(module, target, &exclusive)) {
        ompi_osc_nbe_shm_win_unlock(module, target, exclusive);
    }
    return with_remote_error(module, rc);
}

int ompi_osc_nbe_lock_all(int assert, struct ompi_win_t *win)
{
    ompi_osc_nbe_module_t *module = ompi_osc_nbe_module(win);
    sync_entry(module);
    int rc;
    if (module->shm_locks) {
        rc = nbe_ilock_all(module->engine, NBE_MODE_NOCHECK, NULL);
        if (NBE_OK != rc) return ompi_osc_nbe_err(rc);
        module->shm_lock_all = !(assert & MPI_MODE_NOCHECK);
        if (module->shm_lock_all) {
            for (int r = 0; r < module->size; ++r) {
                rc = ompi_osc_nbe_shm_win_lock(module, r, false);
                if (OMPI_SUCCESS != rc) {
                    while (r-- > 0) ompi_osc_nbe_shm_win_unlock(module, r, false);
                    module->shm_lock_all = 0;
                    return rc;
                }
            }
        }
        return OMPI_SUCCESS;
    }
    rc = nbe_ilock_all(module->engine, nbe_assert(assert), NULL);
    if (NBE_OK == rc) ompi_osc_nbe_progress_module(module);
    return ompi_osc_nbe_err(rc);
}

int ompi_osc_nbe_unlock_all(struct ompi_win_t *win)
{
    ompi_osc_nbe_module_t *module = ompi_osc_nbe_module(win);
    sync_entry(module);
    nbe_req_t *req = NULL;
    int rc = nbe_iunlock_all(module->engine, &req);
    rc = NBE_OK == rc ? finish_req(module, req, OMPI_OSC_NBE_WATCH_ALL) : ompi_osc_nbe_err(rc);
    ompi_osc_nbe_shm_unlock_all(module);
    return with_remote_error(module, rc);
}

int ompi_osc_nbe_sync(struct ompi_win_t *win)
{
    (void) win;
    opal_atomic_mb();
    ompi_osc_nbe_progress();   /* a process polling its memory with Win_sync must serve others */
    return OMPI_SUCCESS;
}

/* nothing was in flight (direct shared-memory operations, or all acked):
 * order the stores and return. Now and then still poll the network: a loop
 * of such flushes must not starve the others' requests. */
static int flushed_at_once(void)
{
    static unsigned fast_flushes;
    opal_atomic_mb();
    if (0 == (++fast_flushes & 31)) ompi_osc_nbe_progress();
    return OMPI_SUCCESS;
}

static int flush_common(struct ompi_win_t *win, int target, int local)
{
    ompi_osc_nbe_module_t *module = ompi_osc_nbe_module(win);
    nbe_req_t *req = NULL;
    int rc;
    if (NULL != module->cma) (void) ompi_osc_nbe_cma_submit(module);   /* as sync_entry */
    if (target >= 0) {
        /* one target whose operations are all out: no request; the
         * FLUSH_REQ (if any is needed) leaves, then poll the network until
         * the target's acknowledgement covers them */
        uint64_t thr;
        rc = nbe_flush_begin(module->engine, target, local, &thr);
        if (NBE_OK == rc) {
            if (nbe_flush_reached(module->engine, target, local, thr)) return flushed_at_once();
            ompi_osc_nbe_wait_watch_t watch;
            ompi_osc_nbe_wait_watch_init(&watch, module, target);
            do {
                ompi_osc_nbe_progress();
                rc = ompi_osc_nbe_failed_rc(module);
                if (OPAL_UNLIKELY(OMPI_SUCCESS != rc)) return rc;
                ompi_osc_nbe_wait_watch_poll(&watch, module);
            } while (!nbe_flush_reached(module->engine, target, local, thr));
            ompi_osc_nbe_wait_watch_done(&watch, module);
            return OMPI_SUCCESS;
        }
    } else {
        rc = nbe_flush_now(module->engine, target, local);
        if (NBE_OK == rc) return flushed_at_once();
    }
    if (NBE_AGAIN != rc) return ompi_osc_nbe_err(rc);
    rc = nbe_iflush(module->engine, target, local, &req);
    if (NBE_OK != rc) return ompi_osc_nbe_err(rc);
    return wait_req_for(module, req, target >= 0 ? target : OMPI_OSC_NBE_WATCH_ALL);
}

int ompi_osc_nbe_flush(int target, struct ompi_win_t *win)
{
    return with_remote_error(ompi_osc_nbe_module(win), flush_common(win, target, 0));
}

int ompi_osc_nbe_flush_all(struct ompi_win_t *win)
{
    return with_remote_error(ompi_osc_nbe_module(win), flush_common(win, -1, 0));
}

int ompi_osc_nbe_flush_local(int target, struct ompi_win_t *win)
{
    return with_remote_error(ompi_osc_nbe_module(win), flush_common(win, target, 1));
}

int ompi_osc_nbe_flush_local_all(struct ompi_win_t *win)
{
    return with_remote_error(ompi_osc_nbe_module(win), flush_common(win, -1, 1));
}
