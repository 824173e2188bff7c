/*
 * osc/nbe Win_allocate_shared: one POSIX shared-memory segment per window,
 * mapped by every process of the (single-node) communicator. Segments of
 * the ranks are contiguous in rank order, as MPI's default layout asks.
 * RMA on such a window goes through the same engine; applications may
 * also load/store the peers' segments found with MPI_Win_shared_query.
 * Other windows on one node share only the per-rank tables (lock words,
 * geometry): ompi_osc_nbe_shm_create_tables.
 */
#include "osc_nbe.h"
#include "ompi_scale_adapt.h"

#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sched.h>
#include <unistd.h>

/* header: accumulate lock (offset 0), barrier count and sense (32, 48) */
#define NBE_SHM_HEADER 64
#define NBE_SHM_BAR_COUNT 32
#define NBE_SHM_BAR_SENSE 48

#include "opal/util/output.h"
#include "opal/runtime/opal_progress.h"
#include "ompi/group/group.h"
#include "ompi/proc/proc.h"

/* a rank's entry in the segment header: written by the rank itself at
 * creation, read by the others on first touch (node-wide, not per process) */
typedef struct ompi_osc_nbe_shm_geom {
    uint64_t off;          /* in the mapping; the owner's address if only the tables are shared */
    uint64_t size;
    int32_t  disp_unit;
    int32_t  pid;          /* the owner's process (gathered CMA, osc_nbe_cma.c) */
} ompi_osc_nbe_shm_geom_t;

/* One segment of len bytes, mapped by every process of the communicator
 * (rank 0 creates it, the name goes out by bcast, the name is unlinked once
 * all mapped it: the mappings keep it alive). Zeroed by ftruncate. */
static int map_segment(ompi_osc_nbe_module_t *module, size_t len)
{
    ompi_communicator_t *comm = module->comm;
    char name[64];
    int fd = -1, ok = 1, all_ok = 0, rc;

    memset(name, 0, sizeof(name));
    if (0 == module->rank) {
        snprintf(name, sizeof(name), "/ompi-nbe-%u-%d-%u", (unsigned) OMPI_PROC_MY_NAME->jobid,
                 (int) getpid(), module->cid);
        fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600);
        if (fd < 0) {
            ok = 0;
            name[0] = '\0';   /* not ours to unlink (a stale one); the others fail too */
        } else if (0 != ftruncate(fd, (off_t) len)) {
            ok = 0;
        }
    }
    rc = comm->c_coll->coll_bcast(name, sizeof(name), MPI_CHAR, 0, comm,
                                  comm->c_coll->coll_bcast_module);
    if (OMPI_SUCCESS != rc) return rc;
    if (0 != module->rank) {
        fd = shm_open(name, O_RDWR, 0600);
        if (fd < 0) ok = 0;
    }
    if (ok) {
        void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (MAP_FAILED == p) ok = 0;
        else {
            module->shm_map = p;
            module->shm_len = len;
        }
    }
    if (fd >= 0) close(fd);
    rc = comm->c_coll->coll_allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, comm,
                                      comm->c_coll->coll_allreduce_module);
    if (0 == module->rank && name[0]) shm_unlink(name);   /* the mappings keep it alive */
    if (OMPI_SUCCESS != rc || !all_ok) {
        opal_output_verbose(1, mca_osc_nbe_component.output,
                            "osc/nbe: cannot create the shared segment %s", name);
        if (module->shm_map) munmap(module->shm_map, module->shm_len);
        module->shm_map = NULL;
        module->shm_len = 0;
        return OMPI_SUCCESS != rc ? rc : OMPI_ERR_OUT_OF_RESOURCE;
    }
    return OMPI_SUCCESS;
}

/* the tables every segment starts with: the header, one lock and one
 * exposure word per rank, one geometry entry per rank, one presence stamp
 * per rank (osc_nbe_presence.c), one completed fence epoch per rank (below),
 * OMPI_OSC_NBE_CLAIM_SLOTS claim words per rank (osc_nbe_claim.c), one
 * accumulate word per rank; returns their size */
static uint64_t tables_size(int n)
{
    return NBE_SHM_HEADER + (sizeof(nbe_rwlock_t) + sizeof(int64_t)) * (uint64_t) n +
           (sizeof(ompi_osc_nbe_shm_geom_t) + (2 + OMPI_OSC_NBE_CLAIM_SLOTS) * sizeof(uint64_t) +
            sizeof(int32_t)) * (uint64_t) n;
}

static void set_tables(ompi_osc_nbe_module_t *module, uint64_t where, size_t size, int disp_unit)
{
    int n = module->size;
    module->shm_locks = (nbe_rwlock_t *) (module->shm_map + NBE_SHM_HEADER);
    module->shm_expo = (volatile int64_t *) (module->shm_locks + n);
    module->shm_geom = (ompi_osc_nbe_shm_geom_t *) (module->shm_expo + n);
    module->shm_seen = (volatile uint64_t *) (module->shm_geom + n);
    module->shm_fences = module->shm_seen + n;
    module->shm_claims = module->shm_fences + n;
    module->shm_acc_words = (volatile int32_t *) (module->shm_claims + OMPI_OSC_NBE_CLAIM_SLOTS * n);
    if (ompi_osc_nbe_presence_on(module)) ompi_osc_nbe_presence_stamp(module, ompi_scale_adapt_now_ns());
    /* the others read it only after the creation's closing barrier */
    module->shm_geom[module->rank].off = where;
    module->shm_geom[module->rank].size = size;
    module->shm_geom[module->rank].disp_unit = disp_unit;
    module->shm_geom[module->rank].pid = (int32_t) getpid();
}

/* Layout: the tables, one control-message ring per rank (nbe_ring.h;
 * untouched, so not resident, until a peer sends that rank a control
 * message), then the segments back to back.
 * Every per-rank table lives in the shared segment; the process-private
 * cost of the window does not grow with the number of processes. */
int ompi_osc_nbe_shm_create(ompi_osc_nbe_module_t *module, size_t size, int disp_unit,
                            void **base)
{
    ompi_communicator_t *comm = module->comm;
    int n = module->size, rc;
    uint64_t mine = size, before = 0, sum = 0;

    /* every process is on this node (agreed by the caller); my offset among
     * the segments (ranks in order) and the total */
    rc = comm->c_coll->coll_exscan(&mine, &before, 1, MPI_UINT64_T, MPI_SUM, comm,
                                   comm->c_coll->coll_exscan_module);
    if (OMPI_SUCCESS != rc) return rc;
    if (0 == module->rank) before = 0;   /* exscan leaves rank 0's result undefined */
    rc = comm->c_coll->coll_allreduce(&mine, &sum, 1, MPI_UINT64_T, MPI_SUM, comm,
                                      comm->c_coll->coll_allreduce_module);
    if (OMPI_SUCCESS != rc) return rc;
    uint64_t rings = (tables_size(n) + 63) & ~(uint64_t) 63;
    uint64_t first = rings + NBE_RING_BYTES * (uint64_t) n;
    rc = map_segment(module, first + sum);
    if (OMPI_SUCCESS != rc) return rc;
    module->shm_base = module->shm_map;
    module->shm_acc_lock = (volatile int32_t *) module->shm_map;
    module->shm_rings = (nbe_ring_t *) (module->shm_map + rings);
    set_tables(module, first + before, size, disp_unit);
    *base = module->shm_base + first + before;
    return OMPI_SUCCESS;
}

/* A window whose memory is the process's own (create, dynamic, allocate
 * without the shared segment) on one node: only the tables are shared.
 * Lock words are then taken with CPU atomics by the origin (no message, no
 * progress of the target), and peers read the geometry from the table
 * instead of asking for it. RMA itself keeps the BTL (RDMA, messages). */
int ompi_osc_nbe_shm_create_tables(ompi_osc_nbe_module_t *module)
{
    int rc = map_segment(module, tables_size(module->size));
    /* every process saw the same failure (agreed in map_segment): all use
     * lock messages and GEOM_REQ instead */
    if (OMPI_ERR_OUT_OF_RESOURCE == rc) return OMPI_SUCCESS;
    if (OMPI_SUCCESS != rc) return rc;
    set_tables(module, (uint64_t) (uintptr_t) module->base, module->win_size, module->disp_unit);
    return OMPI_SUCCESS;
}

bool ompi_osc_nbe_shm_peer_geom(ompi_osc_nbe_module_t *module, int peer, ompi_osc_nbe_peer_t *g)
{
    if (NULL == module->shm_geom) return false;
    const ompi_osc_nbe_shm_geom_t *sg = &module->shm_geom[peer];
    /* shared-memory window: an offset in the mapping; else the peer's address */
    g->base = module->shm_base ? (uint64_t) (uintptr_t) (module->shm_base + sg->off) : sg->off;
    g->size = sg->size;
    g->disp_unit = sg->disp_unit;
    g->pid = sg->pid;
    return true;
}

/* the targets whose lock this process holds, and how: a short list (a
 * process holds few locks at a time), not a table over all ranks */
int ompi_osc_nbe_shm_note_held(ompi_osc_nbe_module_t *module, int target, bool exclusive)
{
    if (module->shm_nheld == module->shm_cap_held) {
        int ncap = module->shm_cap_held ? 2 * module->shm_cap_held : 4;
        int *nh = realloc(module->shm_held, (size_t) ncap * sizeof(int));
        if (NULL == nh) return OMPI_ERR_OUT_OF_RESOURCE;
        module->shm_held = nh;
        module->shm_cap_held = ncap;
    }
    module->shm_held[module->shm_nheld++] = 2 * target + (exclusive ? 1 : 0);
    return OMPI_SUCCESS;
}

bool ompi_osc_nbe_shm_take_held(ompi_osc_nbe_module_t *module, int target, bool *exclusive)
{
    for (int i = 0; i < module->shm_nheld; ++i) {
        if (module->shm_held[i] / 2 == target) {
            *exclusive = module->shm_held[i] & 1;
            module->shm_held[i] = module->shm_held[--module->shm_nheld];
            return true;
        }
    }
    return false;
}

volatile int32_t *ompi_osc_nbe_acc_word(const ompi_osc_nbe_module_t *module, int rank)
{
    if (NULL != module->shm_acc_lock) return module->shm_acc_lock;
    return NULL != module->shm_acc_words ? &module->shm_acc_words[rank] : NULL;
}

/* a test-and-test-and-set spin lock in the segment: accumulates applied by
 * different processes stay atomic per element. Held only while one
 * accumulate is applied (no progress, no other lock inside) */
void ompi_osc_nbe_acc_word_lock(volatile int32_t *l)
{
    for (;;) {
        if (0 == __atomic_exchange_n(l, 1, __ATOMIC_ACQUIRE)) return;
        while (__atomic_load_n(l, __ATOMIC_RELAXED)) {
            sched_yield();
        }
    }
}

/* window locks of windows on one node: a fair reader-writer lock per rank
 * in the segment (nbe_rwlock.h), taken by the origin itself (no message to
 * the target, which need not call MPI). As the engine's lock manager, no
 * grant while the target ends an exposure epoch (its exposure word). */
int ompi_osc_nbe_shm_win_lock(ompi_osc_nbe_module_t *module, int target, bool exclusive)
{
    nbe_rwlock_t *l = &module->shm_locks[target];
    const int64_t *gate = (const int64_t *) &module->shm_expo[target];
    uint32_t ticket = nbe_rwlock_ticket(l);
    while (!(exclusive ? nbe_rwlock_try_exclusive(l, ticket, gate)
                       : nbe_rwlock_try_shared(l, ticket, gate))) {
        ompi_osc_nbe_progress();   /* keep serving the others while waiting */
        /* a failure is window-wide (every process is told): nobody takes
         * this window's locks again, so the ticket need not be served */
        int rc = ompi_osc_nbe_failed_rc(module);
        if (OMPI_SUCCESS != rc) return rc;
    }
    return OMPI_SUCCESS;
}

void ompi_osc_nbe_shm_win_unlock(ompi_osc_nbe_module_t *module, int target, bool exclusive)
{
    if (exclusive) nbe_rwlock_release_exclusive(&module->shm_locks[target]);
    else nbe_rwlock_release_shared(&module->shm_locks[target]);
}

/* sense-reversing barrier on two words of the segment header: the fence
 * of shared-memory windows, with no message and no communicator. Waiting
 * processes keep polling the network for the others' requests. */
int ompi_osc_nbe_shm_barrier(ompi_osc_nbe_module_t *module)
{
    volatile int32_t *count = (volatile int32_t *) (module->shm_base + NBE_SHM_BAR_COUNT);
    volatile int32_t *sense = (volatile int32_t *) (module->shm_base + NBE_SHM_BAR_SENSE);
    int32_t mine = module->shm_sense = !module->shm_sense;
    if (module->size - 1 == __atomic_fetch_add(count, 1, __ATOMIC_ACQ_REL)) {
        __atomic_store_n(count, 0, __ATOMIC_RELAXED);
        __atomic_store_n(sense, mine, __ATOMIC_RELEASE);
        return OMPI_SUCCESS;
    }
    while (__atomic_load_n(sense, __ATOMIC_ACQUIRE) != mine) {
        ompi_osc_nbe_progress();
        /* the barrier's count stays off: the failed window is not used again */
        int rc = ompi_osc_nbe_failed_rc(module);
        if (OMPI_SUCCESS != rc) return rc;
    }
    return OMPI_SUCCESS;
}

/* a failed window's MPI_Win_free: release the locks of epochs left open
 * (a process still waiting for one learns of the failure and gives up,
 * but one not told yet must not wait for ever) */
void ompi_osc_nbe_shm_release_held(ompi_osc_nbe_module_t *module)
{
    for (int i = 0; i < module->shm_nheld; ++i) {
        ompi_osc_nbe_shm_win_unlock(module, module->shm_held[i] / 2, module->shm_held[i] & 1);
    }
    module->shm_nheld = 0;
    ompi_osc_nbe_shm_unlock_all(module);
}

/* the shared locks MPI_Win_lock_all took on every rank, if it took them */
void ompi_osc_nbe_shm_unlock_all(ompi_osc_nbe_module_t *module)
{
    if (!module->shm_lock_all) return;
    for (int r = 0; r < module->size; ++r) ompi_osc_nbe_shm_win_unlock(module, r, false);
    module->shm_lock_all = 0;
}

void ompi_osc_nbe_acc_word_unlock(volatile int32_t *l)
{
    __atomic_store_n(l, 0, __ATOMIC_RELEASE);
}

void ompi_osc_nbe_shm_release(ompi_osc_nbe_module_t *module)
{
    if (module->shm_map) munmap(module->shm_map, module->shm_len);
    module->shm_map = NULL;
    module->shm_base = NULL;
    module->shm_acc_lock = NULL;
    module->shm_locks = NULL;
    module->shm_expo = NULL;
    module->shm_geom = NULL;
    module->shm_seen = NULL;
    module->shm_fences = NULL;
    module->shm_claims = NULL;
    module->shm_acc_words = NULL;
    module->shm_rings = NULL;
    free(module->ring_pend);
    module->ring_pend = NULL;
    module->ring_npend = module->ring_cap_pend = 0;
    free(module->shm_held);
    module->shm_held = NULL;
    module->shm_nheld = module->shm_cap_held = 0;
}

int ompi_osc_nbe_shared_query(struct ompi_win_t *win, int rank, size_t *size, int *disp_unit,
                              void *baseptr)
{
    ompi_osc_nbe_module_t *module = ompi_osc_nbe_module(win);
    if (MPI_WIN_FLAVOR_SHARED != module->flavor) return OMPI_ERR_RMA_FLAVOR;
    if (MPI_PROC_NULL == rank) {
        /* the first segment of nonzero size */
        for (rank = 0; rank < module->size && 0 == module->shm_geom[rank].size; ++rank) {}
        if (rank == module->size) {
            *size = 0;
            *disp_unit = 0;
            *(void **) baseptr = NULL;
            return OMPI_SUCCESS;
        }
    }
    if (rank < 0 || rank >= module->size) return MPI_ERR_RANK;
    ompi_osc_nbe_peer_t g = { 0 };
    ompi_osc_nbe_shm_peer_geom(module, rank, &g);
    *size = g.size;
    *disp_unit = (int) g.disp_unit;
    *(void **) baseptr = *size ? (void *) (uintptr_t) g.base : NULL;
    return OMPI_SUCCESS;
}

/* ---- control messages through the segment ----
 * On a shared-memory window every RMA operation is a load/store, so the
 * engine's control messages (PSCW GRANT/DONE, flush and unlock requests)
 * are the only traffic. They go into the receiver's ring in the segment;
 * the receiver drains its ring from the progress loop. A message for a full
 * ring waits here, and so does every later one (the engine relies on the
 * order of control messages between a pair). */
typedef struct ompi_osc_nbe_ring_pend {
    int        peer;
    nbe_ctrl_t msg;
} ompi_osc_nbe_ring_pend_t;

static unsigned long long pv_ring_msgs;   /* control messages through rings */
static unsigned long long pv_ring_full;   /* ... that found the ring full and waited */
static unsigned long long pv_grant_waits; /* grant watches that saw a control message come */

void ompi_osc_nbe_shm_register_params(const mca_base_component_t *c)
{
    ompi_osc_nbe_register_counter(c, "shm_ctrl_messages",
        "Engine control messages (PSCW grants and completions, flush and unlock requests) "
        "sent through the control rings of shared-memory windows instead of the BTL",
        &pv_ring_msgs);
    ompi_osc_nbe_register_counter(c, "shm_grant_waits",
        "Control messages that a load or store of a shared-memory window, its access epoch "
        "not granted yet (a PSCW post on its way), saw come while it watched the ring for "
        "up to 2 us before being recorded as an operation", &pv_grant_waits);
    ompi_osc_nbe_register_counter(c, "shm_ctrl_ring_full",
        "Control messages of shared-memory windows queued by the sender because the "
        "receiver's ring was full (16 messages waiting) or earlier ones were still queued",
        &pv_ring_full);
}

static int ring_retry(ompi_osc_nbe_module_t *module)
{
    size_t done = 0;
    while (done < module->ring_npend) {
        ompi_osc_nbe_ring_pend_t *p = &module->ring_pend[done];
        if (0 != nbe_ring_push(&module->shm_rings[p->peer], &p->msg)) break;
        done++;
    }
    if (done) {
        memmove(module->ring_pend, module->ring_pend + done,
                (module->ring_npend - done) * sizeof(*module->ring_pend));
        module->ring_npend -= done;
    }
    return (int) done;
}

int ompi_osc_nbe_shm_send_ctrl(ompi_osc_nbe_module_t *module, int peer, const nbe_ctrl_t *msg)
{
    pv_ring_msgs++;
    if (0 == module->ring_npend && 0 == nbe_ring_push(&module->shm_rings[peer], msg)) {
        return OMPI_SUCCESS;
    }
    pv_ring_full++;
    if (module->ring_npend == module->ring_cap_pend) {
        size_t ncap = module->ring_cap_pend ? 2 * module->ring_cap_pend : 16;
        ompi_osc_nbe_ring_pend_t *np = realloc(module->ring_pend, ncap * sizeof(*np));
        if (NULL == np) return OMPI_ERR_OUT_OF_RESOURCE;
        module->ring_pend = np;
        module->ring_cap_pend = ncap;
    }
    module->ring_pend[module->ring_npend].peer = peer;
    module->ring_pend[module->ring_npend].msg = *msg;
    module->ring_npend++;
    return OMPI_SUCCESS;
}

/* A store to a peer whose grant (a PSCW post) has not come yet would be
 * recorded as an op and issued when it comes: an op object, the queue, the
 * issue, some 500 instructions (callgrind, PSCW of 8 B on allocate
 * windows). The grant usually comes within a few hundred ns (the target
 * posts as soon as its wait saw our DONE), so the store first watches this
 * process's ring for up to NBE_GRANT_WAIT_NS. A watch that saw nothing come
 * skips the next NBE_GRANT_WAIT_SKIP ones: a target that posts late costs
 * at most one watch in that many. */
#define NBE_GRANT_WAIT_NS 2000u
#define NBE_GRANT_WAIT_SKIP 16u

bool ompi_osc_nbe_shm_await_ctrl(ompi_osc_nbe_module_t *module)
{
    /* our own messages waiting for a full ring (a DONE the target's post
     * may wait for) leave only from progress */
    if (NULL == module->shm_rings || module->ring_npend) return false;
    if (module->grant_wait_skip) {
        module->grant_wait_skip--;
        return false;
    }
    const nbe_ring_t *mine = &module->shm_rings[module->rank];
    uint64_t t0 = 0;
    for (unsigned i = 1;; ++i) {
        if (nbe_ring_ready(mine, module->ring_head)) {
            ompi_osc_nbe_progress_module(module);
            pv_grant_waits++;
            return true;
        }
        if (0 == (i & 31)) {
            uint64_t now = ompi_scale_adapt_now_ns();
            if (0 == t0) t0 = now;
            else if (now - t0 > NBE_GRANT_WAIT_NS) break;
        }
        opal_atomic_rmb();
    }
    module->grant_wait_skip = NBE_GRANT_WAIT_SKIP;
    return false;
}

int ompi_osc_nbe_shm_poll_ctrl(ompi_osc_nbe_module_t *module)
{
    int count = module->ring_npend ? ring_retry(module) : 0;
    nbe_ring_t *mine = &module->shm_rings[module->rank];
    nbe_ctrl_t msg;
    while (nbe_ring_ready(mine, module->ring_head) && nbe_ring_pop(mine, &module->ring_head, &msg)) {
        ompi_osc_nbe_deliver_ctrl(module, &msg);
        count++;
    }
    return count;
}

/* A fence call returns once this process applied every counted message of
 * the fence epochs it completed; an origin whose later passive epoch would
 * reach our memory by RDMA or CMA reads this to know they are in place.
 * Without the tables (several nodes) it learns it from our grant of the
 * next fence epoch or an ack of a later counted message (nbe_engine.c). */
void ompi_osc_nbe_fence_publish(ompi_osc_nbe_module_t *module)
{
    if (NULL != module->shm_fences) {
        __atomic_store_n(&module->shm_fences[module->rank], nbe_fence_completed(module->engine),
                         __ATOMIC_RELEASE);
    }
}

bool ompi_osc_nbe_fence_applied(ompi_osc_nbe_module_t *module, int target)
{
    uint64_t f = nbe_fence_unapplied(module->engine, target);
    if (OPAL_LIKELY(0 == f)) return true;
    if (NULL != module->shm_fences &&
        __atomic_load_n(&module->shm_fences[target], __ATOMIC_ACQUIRE) >= f) {
        nbe_fence_applied(module->engine, target, f);
        return true;
    }
    return false;
}
