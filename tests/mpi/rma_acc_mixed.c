/*
 * Accumulates to one counter applied three ways at once on a create window
 * of one node (vader), which must stay atomic per element:
 *  - rank 0, the target, by its own fetch-and-adds (applied in place) and
 *    by applying the active messages of the odd ranks;
 *  - the odd ranks run with osc_nbe_target_away 0: active messages;
 *  - the even ranks (from 2) see the target away (rank 0 runs with
 *    osc_nbe_target_away 0 too, so it never stamps its presence) and apply
 *    theirs themselves by CMA under the target's accumulate word.
 * Each process sets its own MCA variable in its environment before
 * MPI_Init, by its OMPI_COMM_WORLD_RANK. Every fetch-and-add must fetch a
 * different value and the counter must end at their number; the even
 * ranks' pvar osc_nbe_rdma_target_away must count theirs (where vader
 * has CMA: pvar osc_nbe_rdma_local_complete moved for a 64 KiB put).
 */
#include "mdq_pvar.h"

#define FOPS 1000
#define PROBE (64 * 1024)

int main(int argc, char **argv)
{
    const char *wr = getenv("OMPI_COMM_WORLD_RANK");
    int world_rank = NULL != wr ? atoi(wr) : 0;
    if (0 == world_rank || 1 == world_rank % 2) setenv("OMPI_MCA_osc_nbe_target_away", "0", 1);
    test_init(&argc, &argv);
    char *mem = calloc(PROBE + sizeof(int), 1);
    char *probe = calloc(PROBE, 1);
    int *counter = (int *) (mem + PROBE);
    MPI_Win win;
    MPI_Win_create(mem, PROBE + sizeof(int), 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    mdq_pvar_init();
    MPI_T_pvar_handle h, hl;
    if (0 != mdq_pvar_find("osc_nbe_rdma_target_away", &h) ||
        0 != mdq_pvar_find("osc_nbe_rdma_local_complete", &hl)) {
        mdq_pvar_fini();
        MPI_Win_free(&win);
        return test_finish();
    }
    /* does vader have CMA here? */
    unsigned long long cma = 0;
    if (0 != rank) {
        MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
        MPI_Put(probe, PROBE, MPI_BYTE, 0, 0, PROBE, MPI_BYTE, win);
        MPI_Win_unlock(0, win);
        cma = mdq_pvar_read(hl);
    }
    MPI_Barrier(MPI_COMM_WORLD);

    int one = 1, fetched[FOPS];
    unsigned long long before = mdq_pvar_read(h);
    MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
    for (int k = 0; k < FOPS; ++k) {
        MPI_Fetch_and_op(&one, &fetched[k], MPI_INT, 0, PROBE, MPI_SUM, win);
    }
    MPI_Win_unlock(0, win);
    unsigned long long away = mdq_pvar_read(h) - before;
    MPI_Barrier(MPI_COMM_WORLD);   /* rank 0 serves the odd ranks meanwhile */
    if (0 != rank && 0 == rank % 2 && cma > 0) {
        CHECK(away == FOPS, "%llu of %d fetch-and-adds applied by CMA", away, FOPS);
    }
    if (0 == rank || 1 == rank % 2) CHECK(0 == away, "%llu fetch-and-adds applied by CMA", away);

    int *all = 0 == rank ? malloc(sizeof(int) * (size_t) FOPS * nprocs) : NULL;
    MPI_Gather(fetched, FOPS, MPI_INT, all, FOPS, MPI_INT, 0, MPI_COMM_WORLD);
    if (0 == rank) {
        int total = FOPS * nprocs;
        char *seen = calloc((size_t) total, 1);
        for (int i = 0; i < total; ++i) {
            if (all[i] < 0 || all[i] >= total || seen[all[i]]++) {
                CHECK(0, "fetch-and-add %d of rank %d fetched %d (out of range or twice)",
                      i % FOPS, i / FOPS, all[i]);
                break;
            }
        }
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win);
        CHECK(*counter == total, "counter %d, expected %d", *counter, total);
        MPI_Win_unlock(0, win);
        free(seen);
    }
    free(all);
    MPI_T_pvar_handle_free(mdq_pvar_session, &h);
    MPI_T_pvar_handle_free(mdq_pvar_session, &hl);
    mdq_pvar_fini();
    MPI_Win_free(&win);
    free(mem);
    free(probe);
    return test_finish();
}
