/*
 * Window ids: the number BTL frames carry to name their window, agreed by
 * the window's processes at creation, and the table that maps it back.
 */
#include "osc_nbe.h"

#include "ompi/group/group.h"

/* window id -> module, with a one-entry cache in front of the hash table
 * (consecutive frames almost always address the same window) */
static ompi_osc_nbe_module_t *last_looked_up;

ompi_osc_nbe_module_t *ompi_osc_nbe_window_lookup(uint32_t cid)
{
    void *mod = NULL;
    if (NULL != last_looked_up && last_looked_up->cid == cid) return last_looked_up;
    if (OPAL_SUCCESS != opal_hash_table_get_value_uint32(&mca_osc_nbe_component.modules, cid, &mod)) {
        return NULL;
    }
    last_looked_up = (ompi_osc_nbe_module_t *) mod;
    return last_looked_up;
}

/* Under MPI_THREAD_MULTIPLE only the creation on the communicator with the
 * lowest context id among this process's creations in progress may claim
 * an id (as Open MPI's communicator ids): every process of the globally
 * lowest one lets it claim, so it succeeds, while creations that each won
 * the id on some processes only would otherwise retry forever. */
static bool lowest_creation(const ompi_osc_nbe_module_t *module)
{
    uint32_t mine = ompi_comm_get_cid(module->comm);
    opal_list_item_t *item;
    OPAL_LIST_FOREACH(item, &mca_osc_nbe_component.creating, opal_list_item_t) {
        const ompi_osc_nbe_module_t *other = (const ompi_osc_nbe_module_t *)
            ((const char *) item - offsetof(ompi_osc_nbe_module_t, creating_item));
        if (ompi_comm_get_cid(other->comm) < mine) return false;
    }
    return true;
}

/* Takes the id in this process: false if another window has it (one
 * created at the same time by another thread: ids only grow) or another
 * creation goes first. The table entry makes the id taken; frames for the
 * window come only after its creation barrier. */
static bool claim_window_id(ompi_osc_nbe_module_t *module, uint32_t id)
{
    void *other = NULL;
    ompi_osc_nbe_enter();
    bool free_here = lowest_creation(module) &&
        OPAL_SUCCESS != opal_hash_table_get_value_uint32(&mca_osc_nbe_component.modules, id, &other);
    if (free_here) {
        opal_hash_table_set_value_uint32(&mca_osc_nbe_component.modules, id, module);
        module->cid = id;
        module->cid_claimed = true;
    }
    if (id >= mca_osc_nbe_component.next_window_id) mca_osc_nbe_component.next_window_id = id + 1;
    ompi_osc_nbe_leave();
    return free_here;
}

void ompi_osc_nbe_release_window_id(ompi_osc_nbe_module_t *module)
{
    if (!module->cid_claimed) return;
    ompi_osc_nbe_enter();
    opal_hash_table_remove_value_uint32(&mca_osc_nbe_component.modules, module->cid);
    if (last_looked_up == module) last_looked_up = NULL;
    module->cid_claimed = false;
    ompi_osc_nbe_leave();
}

static uint32_t next_window_id(void)
{
    ompi_osc_nbe_enter();
    uint32_t next = mca_osc_nbe_component.next_window_id;
    ompi_osc_nbe_leave();
    return next;
}

static int allreduce_u32(ompi_communicator_t *comm, uint32_t *mine, uint32_t *agreed, int n,
                         ompi_op_t *op)
{
    int depth = ompi_osc_nbe_suspend();
    int ret = comm->c_coll->coll_allreduce(mine, agreed, n, MPI_UINT32_T, op, comm,
                                           comm->c_coll->coll_allreduce_module);
    ompi_osc_nbe_resume(depth);
    return ret;
}

static void creating(ompi_osc_nbe_module_t *module, bool yes)
{
    ompi_osc_nbe_enter();
    if (yes) opal_list_append(&mca_osc_nbe_component.creating, &module->creating_item);
    else opal_list_remove_item(&mca_osc_nbe_component.creating, &module->creating_item);
    ompi_osc_nbe_leave();
}

/* Rounds of claiming the agreed id until every process could (threaded
 * processes only): a MIN allreduce of the claims, then the next candidate
 * as the MAX of the processes' next free ids. Every process makes the same
 * sequence of allreduces. */
static int claim_everywhere(ompi_osc_nbe_module_t *module, uint32_t id)
{
    int ret = OMPI_SUCCESS;
    creating(module, true);
    for (;;) {
        if (UINT32_MAX == id) {
            ret = OMPI_ERR_OUT_OF_RESOURCE;
            break;
        }
        uint32_t claimed = claim_window_id(module, id), all_claimed = 0;
        ret = allreduce_u32(module->comm, &claimed, &all_claimed, 1, MPI_MIN);
        if (OMPI_SUCCESS != ret || all_claimed) break;
        ompi_osc_nbe_release_window_id(module);
        uint32_t next = next_window_id();
        ret = allreduce_u32(module->comm, &next, &id, 1, MPI_MAX);
        if (OMPI_SUCCESS != ret) break;
    }
    creating(module, false);
    return ret;
}

int ompi_osc_nbe_agree_window_id(ompi_osc_nbe_module_t *module, bool failed, bool *any_failed,
                                 bool *shm_allocate, bool *shm_tables, bool *one_node)
{
    ompi_communicator_t *comm = module->comm;
    uint32_t mine[6] = { next_window_id(),
                         !mca_osc_nbe_component.shm_allocate, !mca_osc_nbe_component.shm_tables,
                         ompi_group_have_remote_peers(comm->c_local_group), failed,
                         mca_osc_nbe_component.thread_multiple };
    uint32_t agreed[6] = { 0 };
    int ret = allreduce_u32(comm, mine, agreed, 6, MPI_MAX);
    if (OMPI_SUCCESS != ret) return ret;
    *shm_allocate = !agreed[1];
    *shm_tables = !agreed[2];
    /* a process may see a peer as remote that another sees as local (an
     * unresolved proc after a spawn): the segment needs every one local */
    *one_node = !agreed[3];
    *any_failed = agreed[4];   /* a process could not allocate its part */
    /* processes may run at different thread levels: the claim rounds run
     * if any process is threaded, on every process */
    if (agreed[5]) return claim_everywhere(module, agreed[0]);
    if (UINT32_MAX == agreed[0]) return OMPI_ERR_OUT_OF_RESOURCE;
    /* one creation at a time in this process: the id is free here */
    return claim_window_id(module, agreed[0]) ? OMPI_SUCCESS : OMPI_ERROR;
}
