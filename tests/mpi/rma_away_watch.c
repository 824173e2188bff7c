/*
 * osc/nbe's watch of waits for a passive target that has just left MPI
 * (osc_nbe_presence.c) on a create window of one node (vader), run with
 * osc_nbe_target_away at 100 ms so that the target looks present for the
 * first 100 ms after it leaves MPI. Rank 0 is the target: in each of two
 * rounds it leaves a barrier, polls in MPI for 2 ms and stays out of MPI
 * for AWAY_MS. The other ranks, 5 ms after the barrier, run a shared lock
 * epoch of one transfer of N ints (NBE_AWAY_OP):
 *   get   MPI_Rget from the target's first block, waited for by MPI_Wait
 *         before the unlock (the default)
 *   gacc  the same by MPI_Rget_accumulate with MPI_NO_OP
 *   put   MPI_Put to the origin's block, the unlock waits
 *   all   the same in a lock_all epoch: unlock_all waits
 *  1. the target looks present: the transfer goes by an active message and
 *     the wait (MPI_Wait, the unlock) lasts until the target's return,
 *     seeing its stamp go stale after 100 ms: the wait holds it away;
 *  2. the target looks present again, but is held: the transfer goes by
 *     CMA (pvar osc_nbe_rdma_target_away) and does not wait for it.
 * For get and gacc the unlock after MPI_Wait has nothing left to wait for,
 * so only the request's wait can set the hold (MPI_Wait only calls
 * progress; in this oversubscribed job it yields the core at each call).
 * Every value fetched or put is checked.
 */
#include <unistd.h>

#include "away_common.h"

#define AWAY_MS 300
#define N 64   /* ints: 256 B, an active message by default */

enum { OP_GET, OP_GACC, OP_PUT, OP_PUT_ALL };

static void epoch(MPI_Win win, int kind, int *buf, int value)
{
    MPI_Request req;
    for (int i = 0; i < N; ++i) buf[i] = OP_PUT <= kind ? value + i : 0;
    if (OP_PUT_ALL == kind) MPI_Win_lock_all(0, win);
    else MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
    switch (kind) {
    case OP_GACC:
        MPI_Rget_accumulate(NULL, 0, MPI_INT, buf, N, MPI_INT, 0, 0, N, MPI_INT, MPI_NO_OP, win,
                            &req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        break;
    case OP_GET:
        MPI_Rget(buf, N, MPI_INT, 0, 0, N, MPI_INT, win, &req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        break;
    default:
        MPI_Put(buf, N, MPI_INT, 0, N * rank, N, MPI_INT, win);
    }
    if (OP_PUT_ALL == kind) MPI_Win_unlock_all(win);
    else MPI_Win_unlock(0, win);
    if (kind >= OP_PUT) return;
    for (int i = 0; i < N; ++i) {
        if (buf[i] != 7 * i + 3) {
            CHECK(0, "fetched %d at %d, expected %d", buf[i], i, 7 * i + 3);
            break;
        }
    }
}

int main(int argc, char **argv)
{
    test_init(&argc, &argv);
    static const char *names[] = {"get", "gacc", "put", "all"};
    const char *op = getenv("NBE_AWAY_OP");
    int kind = OP_GET;
    for (int k = 0; k < 4; ++k) {
        if (NULL != op && 0 == strcmp(op, names[k])) kind = k;
    }
    /* block 0: what the gets fetch; block k: origin k's puts */
    int *mem = malloc((size_t) N * nprocs * sizeof(int)), buf[N];
    for (int i = 0; i < N * nprocs; ++i) mem[i] = 7 * i + 3;
    MPI_Win win;
    MPI_Win_create(mem, (MPI_Aint) (N * nprocs * sizeof(int)), sizeof(int), MPI_INFO_NULL,
                   MPI_COMM_WORLD, &win);
    MPI_T_pvar_handle h;
    if (0 != away_counter_open(&win, &h)) return test_finish();
    unsigned long long counted[2] = {0, 0};
    double took[2] = {0, 0};
    for (int round = 0; round < 2; ++round) {
        MPI_Barrier(MPI_COMM_WORLD);
        if (0 == rank) {
            /* in MPI for 2 ms (its progress stamps), then away */
            double t = now() + 2e-3;
            int flag;
            while (now() < t) MPI_Iprobe(MPI_ANY_SOURCE, 99, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
            stay_away_ms(AWAY_MS);
            continue;
        }
        usleep(5000);   /* the target has left, its stamp still fresh */
        unsigned long long before = mdq_pvar_read(h);
        double t0 = now();
        epoch(win, kind, buf, 1000 * rank + 100 * round);
        took[round] = now() - t0;
        counted[round] = mdq_pvar_read(h) - before;
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (0 != rank) {
        /* 1: an active message the target answered on its return (or, if
         * this rank came late, by CMA: then 2 proves nothing) */
        if (0 == counted[0] && took[0] > 0.05) {
            CHECK(1 == counted[1] && took[1] < 0.5 * 1e-3 * AWAY_MS,
                  "round 1 waited %.0f ms for the target, yet round 2's %s %s by CMA and "
                  "took %.0f ms (a wait for a target away holds it away)",
                  1e3 * took[0], names[kind],
                  1 == counted[1] ? "went" : "did not go", 1e3 * took[1]);
        } else {
            printf("rank %d: round 1 took %.1f ms, %llu by CMA: the target was not seen "
                   "present, round 2 not checked\n", rank, 1e3 * took[0], counted[0]);
        }
    }
    if (0 == rank && OP_PUT <= kind) {
        for (int k = 1; k < nprocs; ++k) {
            for (int i = 0; i < N; ++i) {
                if (mem[N * k + i] != 1000 * k + 100 + i) {
                    CHECK(0, "block of %d holds %d at %d, expected %d", k, mem[N * k + i], i,
                          1000 * k + 100 + i);
                    break;
                }
            }
        }
    }
    MPI_T_pvar_handle_free(mdq_pvar_session, &h);
    mdq_pvar_fini();
    MPI_Win_free(&win);
    free(mem);
    return test_finish();
}
