/*
 * osc/nbe Win_allocate_shared: one POSIX shared-memory segment per window,
 * mapped by every process of the (single-node) communicator. Segments of
 * the ranks are contiguous in rank order, as MPI's default layout asks.
 * RMA on such a window goes through the same engine; applications may
 * also load/store the peers' segments found with MPI_Win_shared_query.
 */
#include "osc_nbe.h"

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

/* a rank's entry in the segment header: written by the rank itself at
 * creation, read by the others on first touch (node-wide, not per process) */
typedef struct ompi_osc_nbe_shm_geom {
    uint64_t off;
    uint64_t size;
    int64_t  disp_unit;
} ompi_osc_nbe_shm_geom_t;

/* Layout: a header (accumulate lock), one lock word and one exposure word
 * per rank, one geometry entry per rank, one control-message ring per rank
 * (nbe_ring.h; untouched, so not resident, until a peer sends that rank a
 * control message), then the segments back to back.
 * Every per-rank table lives in the shared segment; the process-private
 * cost of the window does not grow with the number of processes. */
int ompi_osc_nbe_shm_create(ompi_osc_nbe_module_t *module, size_t size, int disp_unit,
                            void **base)
{
    ompi_communicator_t *comm = module->comm;
    int n = module->size, rc;
    uint64_t mine = size, before = 0, sum = 0;
    char name[64];
    int fd = -1, ok = 1, all_ok = 0;

    if (ompi_group_have_remote_peers(comm->c_local_group)) return OMPI_ERR_RMA_SHARED;
    /* my offset among the segments (ranks in order) and the total */
    rc = comm->c_coll->coll_exscan(&mine, &before, 1, MPI_UINT64_T, MPI_SUM, comm,
                                   comm->c_coll->coll_exscan_module);
    if (OMPI_SUCCESS != rc) return rc;
    if (0 == module->rank) before = 0;   /* exscan leaves rank 0's result undefined */
    rc = comm->c_coll->coll_allreduce(&mine, &sum, 1, MPI_UINT64_T, MPI_SUM, comm,
                                      comm->c_coll->coll_allreduce_module);
    if (OMPI_SUCCESS != rc) return rc;
    uint64_t tables = NBE_SHM_HEADER + 16 * (uint64_t) n + sizeof(ompi_osc_nbe_shm_geom_t) * (uint64_t) n;
    uint64_t rings = (tables + 63) & ~(uint64_t) 63;
    uint64_t first = rings + NBE_RING_BYTES * (uint64_t) n;
    module->shm_len = first + sum;

    memset(name, 0, sizeof(name));
    if (0 == module->rank) {
        snprintf(name, sizeof(name), "/ompi-nbe-%d-%u", (int) getpid(), module->cid);
        fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600);
        if (fd < 0 || 0 != ftruncate(fd, (off_t) module->shm_len)) ok = 0;
    }
    rc = comm->c_coll->coll_bcast(name, sizeof(name), MPI_CHAR, 0, comm,
                                  comm->c_coll->coll_bcast_module);
    if (OMPI_SUCCESS != rc) return rc;
    if (0 != module->rank) {
        fd = shm_open(name, O_RDWR, 0600);
        if (fd < 0) ok = 0;
    }
    if (ok) {
        void *p = mmap(NULL, module->shm_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (MAP_FAILED == p) ok = 0;
        else module->shm_base = p;
    }
    if (fd >= 0) close(fd);
    rc = comm->c_coll->coll_allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, comm,
                                      comm->c_coll->coll_allreduce_module);
    if (0 == module->rank && name[0]) shm_unlink(name);   /* the mappings keep it alive */
    if (OMPI_SUCCESS != rc || !all_ok) {
        opal_output_verbose(1, mca_osc_nbe_component.output,
                            "osc/nbe: cannot create the shared segment %s", name);
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    module->shm_acc_lock = (volatile int32_t *) module->shm_base;
    module->shm_locks = (volatile int64_t *) (module->shm_base + NBE_SHM_HEADER);
    module->shm_expo = module->shm_locks + n;
    module->shm_geom = (ompi_osc_nbe_shm_geom_t *) (module->shm_expo + n);
    module->shm_rings = (nbe_ring_t *) (module->shm_base + rings);
    /* the others read it only after the creation's closing barrier */
    module->shm_geom[module->rank].off = first + before;
    module->shm_geom[module->rank].size = size;
    module->shm_geom[module->rank].disp_unit = disp_unit;
    *base = module->shm_base + first + before;
    return OMPI_SUCCESS;
}

bool ompi_osc_nbe_shm_peer_geom(ompi_osc_nbe_module_t *module, int peer, ompi_osc_nbe_peer_t *g)
{
    if (NULL == module->shm_geom) return false;
    const ompi_osc_nbe_shm_geom_t *sg = &module->shm_geom[peer];
    g->base = (uint64_t) (uintptr_t) (module->shm_base + sg->off);
    g->size = sg->size;
    g->disp_unit = sg->disp_unit;
    return true;
}

/* the targets whose lock word this process holds: a short list (a process
 * holds few locks at a time), not a table over all ranks */
int ompi_osc_nbe_shm_note_held(ompi_osc_nbe_module_t *module, int target)
{
    if (module->shm_nheld == module->shm_cap_held) {
        int ncap = module->shm_cap_held ? 2 * module->shm_cap_held : 4;
        int *nh = realloc(module->shm_held, (size_t) ncap * sizeof(int));
        if (NULL == nh) return OMPI_ERR_OUT_OF_RESOURCE;
        module->shm_held = nh;
        module->shm_cap_held = ncap;
    }
    module->shm_held[module->shm_nheld++] = target;
    return OMPI_SUCCESS;
}

bool ompi_osc_nbe_shm_take_held(ompi_osc_nbe_module_t *module, int target)
{
    for (int i = 0; i < module->shm_nheld; ++i) {
        if (module->shm_held[i] == target) {
            module->shm_held[i] = module->shm_held[--module->shm_nheld];
            return true;
        }
    }
    return false;
}

/* a test-and-test-and-set spin lock in the shared header: accumulates
 * applied directly by different processes stay atomic per element */
void ompi_osc_nbe_shm_acc_lock(ompi_osc_nbe_module_t *module)
{
    volatile int32_t *l = module->shm_acc_lock;
    for (;;) {
        if (0 == __atomic_exchange_n(l, 1, __ATOMIC_ACQUIRE)) return;
        while (__atomic_load_n(l, __ATOMIC_RELAXED)) {
            sched_yield();
        }
    }
}

/* window locks of shared-memory windows: a word per rank in the segment,
 * taken with atomics by the origin itself (no message to the target) */
int ompi_osc_nbe_shm_win_lock(ompi_osc_nbe_module_t *module, int target, bool exclusive)
{
    volatile int64_t *w = &module->shm_locks[target];
    for (;;) {
        int64_t v = __atomic_load_n(w, __ATOMIC_RELAXED);
        if (exclusive ? 0 == v : v >= 0) {
            int64_t nv = exclusive ? -1 : v + 1;
            if (__atomic_compare_exchange_n(w, &v, nv, false, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED)) {
                /* as the engine's lock manager: never overlap the end of an
                 * exposure epoch of the target */
                if (0 == __atomic_load_n(&module->shm_expo[target], __ATOMIC_SEQ_CST)) {
                    return OMPI_SUCCESS;
                }
                ompi_osc_nbe_shm_win_unlock(module, target);
            }
            else continue;
        }
        opal_progress();   /* keep serving the others while waiting */
        int rc = ompi_osc_nbe_failed_rc(module);
        if (OMPI_SUCCESS != rc) return rc;
    }
}

void ompi_osc_nbe_shm_win_unlock(ompi_osc_nbe_module_t *module, int target)
{
    volatile int64_t *w = &module->shm_locks[target];
    if (-1 == __atomic_load_n(w, __ATOMIC_RELAXED)) __atomic_store_n(w, 0, __ATOMIC_RELEASE);
    else __atomic_fetch_sub(w, 1, __ATOMIC_RELEASE);
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
        opal_progress();
        /* the barrier's count stays off: the failed window is not used again */
        int rc = ompi_osc_nbe_failed_rc(module);
        if (OMPI_SUCCESS != rc) return rc;
    }
    return OMPI_SUCCESS;
}

void ompi_osc_nbe_shm_acc_unlock(ompi_osc_nbe_module_t *module)
{
    __atomic_store_n(module->shm_acc_lock, 0, __ATOMIC_RELEASE);
}

void ompi_osc_nbe_shm_release(ompi_osc_nbe_module_t *module)
{
    if (module->shm_base) munmap(module->shm_base, module->shm_len);
    module->shm_base = NULL;
    module->shm_acc_lock = NULL;
    module->shm_locks = NULL;
    module->shm_expo = NULL;
    module->shm_geom = NULL;
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

void ompi_osc_nbe_shm_register_params(const mca_base_component_t *c)
{
    ompi_osc_nbe_register_counter(c, "shm_ctrl_messages",
        "Engine control messages (PSCW grants and completions, flush and unlock requests) "
        "sent through the control rings of shared-memory windows instead of the BTL",
        &pv_ring_msgs);
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
