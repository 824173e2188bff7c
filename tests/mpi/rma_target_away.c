/*
 * osc/nbe's presence stamps (osc_nbe_target_away, osc_nbe_presence.c) on a
 * create window of one node (vader). Rank 0 is the target: in each of three
 * rounds it waits in a barrier (the others come 5 ms after it is back),
 * leaves it and stays out of MPI for AWAY_MS. The other ranks, in each round:
 *  A. 30 ms after the barrier (the target has surely left): an exclusive
 *     lock epoch with a small put (below the RDMA thresholds) and a shared
 *     one with a small get;
 *  B. right after the barrier: a shared-lock put epoch. The target may
 *     still look present (it has just left): then the put is an active
 *     message and the unlock waits for the target's return, longer than
 *     10 ms, which holds the target away;
 *  C. right after the barrier again: a shared-lock put epoch.
 * NBE_AWAY_MODE=hold (default parameters): A's two transfers go by RDMA
 * (pvar osc_nbe_rdma_target_away), and B's or C's put (C's for sure if B's
 * waited). NBE_AWAY_MODE=never (RDMA thresholds 0, "never"): nothing
 * counts, the epochs wait for the target. Every put and get is checked.
 */
#include <time.h>
#include <unistd.h>

#include "mdq_pvar.h"

#define AWAY_MS 300
#define N 64   /* ints per transfer: 256 B, an active message by default */

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double) t.tv_sec + 1e-9 * (double) t.tv_nsec;
}

/* the target, outside MPI */
static void away(void)
{
    double end = now() + 1e-3 * AWAY_MS;
    while (now() < end) {
    }
}

static void put_epoch(MPI_Win win, int lock_type, int *buf, int disp, int value)
{
    for (int i = 0; i < N; ++i) buf[i] = value + i;
    MPI_Win_lock(lock_type, 0, 0, win);
    MPI_Put(buf, N, MPI_INT, 0, disp, N, MPI_INT, win);
    MPI_Win_unlock(0, win);
}

static void get_epoch(MPI_Win win, int *buf, int disp, int value)
{
    memset(buf, 0, N * sizeof(int));
    MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
    MPI_Get(buf, N, MPI_INT, 0, disp, N, MPI_INT, win);
    MPI_Win_unlock(0, win);
    for (int i = 0; i < N; ++i) {
        if (buf[i] != value + i) {
            CHECK(0, "get of my block: %d at %d, expected %d", buf[i], i, value + i);
            break;
        }
    }
}

int main(int argc, char **argv)
{
    test_init(&argc, &argv);
    const char *mode = getenv("NBE_AWAY_MODE");
    int never = NULL != mode && 0 == strcmp(mode, "never");
    int *mem = calloc((size_t) 3 * N * nprocs, sizeof(int));
    int buf[N];
    MPI_Win win;
    MPI_Win_create(mem, (MPI_Aint) (3 * N * nprocs * sizeof(int)), sizeof(int), MPI_INFO_NULL,
                   MPI_COMM_WORLD, &win);
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    mdq_pvar_init();
    MPI_T_pvar_handle h;
    if (0 != mdq_pvar_find("osc_nbe_rdma_target_away", &h)) {
        mdq_pvar_fini();
        MPI_Win_free(&win);
        return test_finish();
    }
    unsigned long long counted[3] = {0, 0, 0};
    double left = now() - 1.0;   /* when the target last left MPI */
    for (int round = 0; round < 3; ++round) {
        /* the target waits in the barrier, its progress stamping: come
         * 5 ms after it is back */
        if (0 != rank) {
            double wait = left + 1e-3 * (AWAY_MS + 5) - now();
            usleep((useconds_t) (1e6 * (wait > 5e-3 ? wait : 5e-3)));
        }
        MPI_Barrier(MPI_COMM_WORLD);
        left = now();
        if (0 == rank) {
            away();
        } else if (nprocs > 1) {
            unsigned long long before = mdq_pvar_read(h);
            int disp = (3 * rank + round) * N, value = 1000 * rank + 100 * round;
            if (0 == round) usleep(30000);
            /* B and C: shared, so that every origin's put may wait for
             * the target rather than for another origin's lock */
            put_epoch(win, 0 == round ? MPI_LOCK_EXCLUSIVE : MPI_LOCK_SHARED, buf, disp, value);
            if (0 == round) get_epoch(win, buf, disp, value);
            counted[round] = mdq_pvar_read(h) - before;
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (0 != rank) {
        unsigned long long all = counted[0] + counted[1] + counted[2];
        if (never) {
            CHECK(0 == all, "thresholds 0 (never), yet %llu transfers went by RDMA to the "
                  "target away", all);
        } else {
            CHECK(2 == counted[0], "A: %llu of 2 transfers to the target away went by RDMA",
                  counted[0]);
            CHECK(1 == counted[1] || 1 == counted[2], "B and C: no put went by RDMA (a put "
                  "that waited for the target's return holds it away)");
        }
    } else {
        for (int k = 1; k < nprocs; ++k) {
            for (int round = 0; round < 3; ++round) {
                int disp = (3 * k + round) * N, value = 1000 * k + 100 * round;
                for (int i = 0; i < N; ++i) {
                    if (mem[disp + i] != value + i) {
                        CHECK(0, "round %d: %d's block holds %d at %d, expected %d", round, k,
                              mem[disp + i], i, value + i);
                        break;
                    }
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
