/*
 * Control messages of shared-memory windows go through per-rank rings in
 * the segment (osc/nbe nbe_ring). This test drives them on allocate and
 * allocate_shared windows:
 *  - fan-in: rank 0 exposes its window to all others and stays out of MPI
 *    for a while; every other rank puts and completes, so their completion
 *    messages pile up in rank 0's ring. With more than 16 origins the ring
 *    is full and the senders must queue (pvar osc_nbe_shm_ctrl_ring_full)
 *    and deliver later: rank 0's wait must still see every put;
 *  - a PSCW ring exchange over many iterations (every rank is origin and
 *    target at once), checking each value;
 *  - a late post: the target posts 5 ms after the origin's start, so the
 *    origin's store first waits briefly for the grant, then is recorded and
 *    issued when the post comes (the value must land all the same);
 *  - pvar osc_nbe_shm_ctrl_messages shows the rings were used, and with 2
 *    ranks pvar osc_nbe_shm_grant_waits that stores in the ring exchange
 *    waited for a post on its way instead of being recorded.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mdq_pvar.h"

#define RING_SLOTS 16
static int size;
#define ITERS 200

static void fan_in(MPI_Win win, int *mem, int round)
{
    if (0 == rank) {
        MPI_Group g = star_group();
        for (int i = 0; i < size; ++i) mem[i] = -1;
        MPI_Win_post(g, 0, win);
        usleep(300000);   /* out of MPI: completions wait in the ring */
        MPI_Win_wait(win);
        for (int i = 1; i < size; ++i) CHECK(mem[i] == round * 1000 + i, "fan-in slot %d: %d", i, mem[i]);
        MPI_Group_free(&g);
    } else {
        MPI_Group g = star_group();
        star_put(g, win, round * 1000 + rank);
        MPI_Group_free(&g);
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

static void ring_exchange(MPI_Win win, int *mem)
{
    int left = (rank + size - 1) % size, right = (rank + 1) % size;
    MPI_Group from = world_ranks_group(&left, 1), to = world_ranks_group(&right, 1);
    for (int it = 0; it < ITERS; ++it) {
        int v = it * 100 + rank;
        MPI_Win_post(from, 0, win);
        MPI_Win_start(to, 0, win);
        MPI_Put(&v, 1, MPI_INT, right, size, 1, MPI_INT, win);
        MPI_Win_complete(win);
        MPI_Win_wait(win);
        CHECK(mem[size] == it * 100 + left, "ring iteration %d: %d", it, mem[size]);
    }
    MPI_Group_free(&from);
    MPI_Group_free(&to);
}

static void late_post(MPI_Win win, int *mem)
{
    int peer = 1 - rank;
    if (rank > 1) return;
    MPI_Group g = world_ranks_group(&peer, 1);
    for (int it = 0; it < 3; ++it) {
        int v = 7000 + it;
        if (0 == rank) {
            MPI_Win_start(g, 0, win);
            MPI_Put(&v, 1, MPI_INT, 1, size, 1, MPI_INT, win);
            MPI_Win_complete(win);
        } else {
            usleep(5000);
            MPI_Win_post(g, 0, win);
            MPI_Win_wait(win);
            CHECK(mem[size] == v, "late post %d: %d", it, mem[size]);
        }
    }
    MPI_Group_free(&g);
}

int main(int argc, char **argv)
{
    test_init(&argc, &argv);
    size = nprocs;
    mdq_pvar_init();
    MPI_T_pvar_handle hmsgs, hfull, hwaits;
    int have = 0 == mdq_pvar_find("osc_nbe_shm_ctrl_messages", &hmsgs) &&
               0 == mdq_pvar_find("osc_nbe_shm_ctrl_ring_full", &hfull) &&
               0 == mdq_pvar_find("osc_nbe_shm_grant_waits", &hwaits);
    unsigned long long waits = 0;

    for (int shared = 0; shared < 2; ++shared) {
        int *mem;
        MPI_Win win;
        MPI_Aint bytes = (MPI_Aint) sizeof(int) * (size + 1);
        if (shared) MPI_Win_allocate_shared(bytes, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win);
        else MPI_Win_allocate(bytes, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win);
        memset(mem, 0, (size_t) bytes);
        MPI_Barrier(MPI_COMM_WORLD);
        if (size > 1) {
            for (int round = 1; round <= 2; ++round) fan_in(win, mem, round);
            unsigned long long w0 = have ? mdq_pvar_read(hwaits) : 0;
            ring_exchange(win, mem);
            if (have) waits += mdq_pvar_read(hwaits) - w0;
            late_post(win, mem);
        }
        MPI_Win_free(&win);
    }

    if (have && size > 1) {
        unsigned long long msgs = mdq_pvar_read(hmsgs), full = mdq_pvar_read(hfull), all_full = 0;
        CHECK(msgs > 0, "no control message went through a ring (%llu)", msgs);
        MPI_Allreduce(&full, &all_full, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
        /* more origins than slots while rank 0 was out of MPI: some queued */
        if (size - 1 > RING_SLOTS) CHECK(all_full > 0, "ring never full with %d origins", size - 1);
        unsigned long long all_waits = 0;
        MPI_Allreduce(&waits, &all_waits, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
        /* with more ranks than cores a post may come later than the wait */
        if (2 == size) CHECK(all_waits > 0, "no store of the ring exchange waited for its grant");
        if (0 == rank) printf("ring messages on rank 0: %llu, queued behind a full ring (all ranks): %llu, stores that waited for their grant in the ring exchanges: %llu\n", msgs, all_full, all_waits);
    }
    mdq_pvar_fini();
    return test_finish();
}
