/*
 * Puts that leave before the target's grant (osc/nbe osc_nbe_early_puts):
 * the target must hold a put that arrives before it opened the epoch the
 * put belongs to, and apply it only then.
 *  - first fence: rank 0 stays out of MPI after the window is created and
 *    then overwrites its window with local stores (legal: no epoch is open
 *    yet) before its first fence; the others' puts of that first epoch
 *    must land after those stores;
 *  - late post: the same with PSCW: rank 0 stores into its window and only
 *    then posts; the origins' start returns at once and their puts leave
 *    before the post;
 *  - chained epochs: rank 1 puts a large block ending in a word of rank 0,
 *    and in the next epoch rank 2 puts one int into that word (a slow put
 *    followed one fence later by a fast one); after a third fence rank 0
 *    must see rank 2's value: a put of the next epoch may not overtake one
 *    of this epoch;
 *  - every rank puts to every other rank in each of many epochs, with random
 *    delays, and checks its window after each fence;
 *  - PSCW run-ahead: the origins may close many start epochs before rank 0
 *    posts the first exposure (osc/nbe's complete does not wait for the
 *    post); each of rank 0's exposures must see exactly its own epoch's
 *    puts, although the DONEs of later epochs arrived long before. (The
 *    origins cannot lock rank 0 in between: a lock must not overlap an
 *    exposure, and they cannot know when rank 0 posts; the engine's unit
 *    test post_grant_is_not_lock_grant covers that mix.)
 * With NBE_EXPECT_EARLY=1 rank 0 must have held frames (pvar
 * osc_nbe_early_frames).
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mdq_pvar.h"

#define BIG 2048   /* ints in rank 1's slow put */
#define EPOCHS 60

/* stays in MPI for ms milliseconds (incoming frames are received) */
static void poll_network(int ms)
{
    int flag;
    double end = MPI_Wtime() + ms / 1000.0;
    while (MPI_Wtime() < end) {
        MPI_Iprobe(MPI_ANY_SOURCE, 12345, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
    }
}

static void first_fence(MPI_Win win, int *mem)
{
    int v = 1000 + rank, probe;
    if (0 != rank) {
        /* learn rank 0's window geometry now, so that the first fence put
         * needs no answer from rank 0 and can arrive before its fence */
        MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
        MPI_Get(&probe, 1, MPI_INT, 0, 0, 1, MPI_INT, win);
        MPI_Win_unlock(0, win);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (0 == rank) {
        usleep(200000);
        for (int i = 0; i < nprocs; ++i) mem[i] = -1;
        poll_network(100);   /* the others' puts arrive before this fence */
    }
    MPI_Win_fence(0, win);
    if (0 != rank) MPI_Put(&v, 1, MPI_INT, 0, rank, 1, MPI_INT, win);
    MPI_Win_fence(0, win);
    if (0 == rank) {
        for (int i = 1; i < nprocs; ++i) CHECK(mem[i] == 1000 + i, "first fence: slot %d holds %d", i, mem[i]);
    }
}

static void late_post(MPI_Win win, int *mem)
{
    int v = 2000 + rank;
    MPI_Group g = star_group();
    if (0 == rank) {
        usleep(200000);
        for (int i = 0; i < nprocs; ++i) mem[i] = -1;
        poll_network(100);   /* the origins' puts arrive before this post */
        MPI_Win_post(g, 0, win);
        MPI_Win_wait(win);
        for (int i = 1; i < nprocs; ++i) CHECK(mem[i] == 2000 + i, "late post: slot %d holds %d", i, mem[i]);
    } else {
        star_put(g, win, v);
    }
    MPI_Group_free(&g);
    MPI_Barrier(MPI_COMM_WORLD);
}

static void chained(MPI_Win win, int *mem)
{
    int *big = malloc(sizeof(int) * BIG);
    MPI_Win_fence(0, win);
    for (int round = 1; round <= EPOCHS; ++round) {
        int small = 2 * round + 1;
        for (int i = 0; i < BIG; ++i) big[i] = 2 * round;
        /* epoch 1: rank 1's large put; epoch 2: rank 2's small put to the
         * same last word; epoch 3: rank 0 reads (nobody else touches it) */
        if (1 == rank) MPI_Put(big, BIG, MPI_INT, 0, nprocs, BIG, MPI_INT, win);
        if (0 == rank && 0 == round % 7) usleep(2000);
        MPI_Win_fence(0, win);
        if (2 == rank) MPI_Put(&small, 1, MPI_INT, 0, nprocs + BIG - 1, 1, MPI_INT, win);
        MPI_Win_fence(0, win);
        if (0 == rank) {
            int last = mem[nprocs + BIG - 1], first = mem[nprocs];
            CHECK(last == small, "round %d: the word put last holds %d, not %d", round, last, small);
            CHECK(first == 2 * round, "round %d: the large put's first word holds %d", round, first);
        }
        MPI_Win_fence(0, win);
    }
    free(big);
}

static void all_to_all(MPI_Win win, int *mem)
{
    MPI_Win_fence(0, win);
    for (int ep = 1; ep <= EPOCHS; ++ep) {
        int v = ep * 100 + rank;
        for (int t = 0; t < nprocs; ++t) {
            if (t != rank) MPI_Put(&v, 1, MPI_INT, t, rank, 1, MPI_INT, win);
        }
        if (0 == (ep + rank) % 5) usleep(1000);
        MPI_Win_fence(0, win);
        for (int s = 0; s < nprocs; ++s) {
            if (s != rank) CHECK(mem[s] == ep * 100 + s, "all-to-all epoch %d: slot %d holds %d", ep, s, mem[s]);
        }
        MPI_Win_fence(0, win);   /* nobody writes the next epoch before all read this one */
    }
}

static void pscw_run_ahead(MPI_Win win, int *mem)
{
    MPI_Group g = star_group();
    for (int i = 0; i < nprocs; ++i) mem[i] = -1;
    MPI_Barrier(MPI_COMM_WORLD);
    if (0 == rank) {
        poll_network(150);   /* the origins' epochs arrive before the posts */
        for (int round = 1; round <= EPOCHS; ++round) {
            MPI_Win_post(g, 0, win);
            MPI_Win_wait(win);
            for (int i = 1; i < nprocs; ++i) {
                CHECK(mem[i] == round * 100 + i, "run-ahead exposure %d: slot %d holds %d", round,
                      i, mem[i]);
            }
        }
    } else {
        for (int round = 1; round <= EPOCHS; ++round) {
            star_put(g, win, round * 100 + rank);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Group_free(&g);
}

int main(int argc, char **argv)
{
    test_init(&argc, &argv);
    mdq_pvar_init();
    const char *expect = getenv("NBE_EXPECT_EARLY");
    MPI_T_pvar_handle held;
    int have = 0 == mdq_pvar_find("osc_nbe_early_frames", &held);
    size_t n = (size_t) nprocs + BIG;

    for (int flavor = 0; flavor < 2; ++flavor) {
        int *mem;
        MPI_Win win;
        if (0 == flavor) {
            mem = calloc(n, sizeof(int));
            MPI_Win_create(mem, (MPI_Aint) (n * sizeof(int)), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
        } else {
            MPI_Win_allocate((MPI_Aint) (n * sizeof(int)), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win);
            memset(mem, 0, n * sizeof(int));
            MPI_Barrier(MPI_COMM_WORLD);
        }
        if (nprocs > 1) first_fence(win, mem);
        MPI_Win_fence(MPI_MODE_NOSUCCEED, win);
        if (nprocs > 1) late_post(win, mem);
        if (nprocs > 1) pscw_run_ahead(win, mem);
        if (nprocs > 2) chained(win, mem);
        all_to_all(win, mem);
        MPI_Win_fence(MPI_MODE_NOSUCCEED, win);
        MPI_Win_free(&win);
        if (0 == flavor) free(mem);
    }

    if (have && expect && 0 == strcmp(expect, "1") && 0 == rank && nprocs > 1) {
        unsigned long long h = mdq_pvar_read(held);
        CHECK(h > 0, "no early frame was held on rank 0");
        printf("early frames held on rank 0: %llu\n", h);
    }
    mdq_pvar_fini();
    return test_finish();
}
