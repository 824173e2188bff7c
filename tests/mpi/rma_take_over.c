/*
 * osc/nbe's take-over of a put frame from a target that left MPI before
 * applying it (osc_nbe_claim.c), on a create window of one node (vader),
 * run with osc_nbe_target_away at 100 ms so that the target looks present
 * for the first 100 ms after it leaves MPI. Rank 0 is the target: in each
 * round it polls in MPI for 2 ms after a barrier, tells rank 1 that it
 * leaves (its last MPI call), then stays out of MPI watching its window
 * until the last writer's values are there (at most 10 s).
 *  - rank 1, 5 ms after that message: exclusive lock of rank 0, a put of N
 *    ints, unlock. Round 1: the target looks present, so the put leaves as
 *    an active message, and the unlock returns only by taking the frame
 *    over (the target waits for the data outside MPI). Round 2: the
 *    take-over held the target away, so the put goes by CMA at once
 *    (NBE_TAKE_OVER_NOHOLD=1, run with osc_nbe_target_away_hold 0: it is
 *    taken over again). (On
 *    a loaded machine rank 1 may come after the 100 ms: its put then goes
 *    by CMA at once, and the round proves nothing; it says so.)
 *  - with np >= 3, rank 1 then runs the same epoch on rank 2 (the third
 *    process; NBE_TAKE_OVER_THIRD=8 at np 9: rank 8, whose claim word in
 *    rank 1's line is rank 0's, rank mod 8), which polls in MPI meanwhile,
 *    and tells it to go on. With THIRD=8 that frame must not be claimable
 *    (it would let rank 0 forget the one taken over; with rank 2, on a
 *    word of its own, it may be).
 *    The third process locks rank 0 and puts other values on the same
 *    ints: the target waits for those. When the target returns to MPI,
 *    rank 1's frame arrives there and must not be applied: it would
 *    overwrite the third process's values.
 * NBE_TAKE_OVER_CHAIN=1 (np >= 3, one round): rank 0 stays away CHAIN_MS
 * more once rank 1's values are there, so rank 1's frame taken over is
 * still on its way; rank 1 then tells the third process to go on, which
 * answers that it leaves (its last MPI call) and watches its own window
 * for rank 1's values, and rank 1 runs the same epoch on it 5 ms after
 * that answer: it must be taken over too (a second
 * target that left MPI while the first is still away; claim words per
 * target, osc_nbe_claim.c). Before that, it waited its 10 s.
 * Rank 1's epoch (NBE_TAKE_OVER_SYNC): lock (lock, put, unlock; the
 * default), flush (lock, put, flush: the flush waits, then unlock) or all
 * (lock_all, put, unlock_all).
 * Checks the values the target sees while away, its window after each
 * round, and the pvars osc_nbe_frames_taken_over / osc_nbe_frames_skipped.
 * With osc_nbe_take_over 0 the target waits its 10 s in round 1 and fails.
 */
#include "away_common.h"

#define N 64   /* ints: 256 B, an active message to a target in MPI */
#define AWAY_MAX_S 10.0
#define CHAIN_MS 1500.0

static int value(int writer, int round, int i)
{
    return 100000 * writer + 1000 * round + i;
}

/* the target, outside MPI: until mem holds what writer put in round */
static int wait_outside_mpi(volatile int *mem, int writer, int round)
{
    double end = now() + AWAY_MAX_S;
    while (now() < end) {
        int i = 0;
        while (i < N && mem[i] == value(writer, round, i)) ++i;
        if (N == i) return 1;
    }
    return 0;
}

static void put_epoch(MPI_Win win, int target, int round, const char *sync)
{
    int buf[N];
    for (int i = 0; i < N; ++i) buf[i] = value(rank, round, i);
    if (0 == strcmp(sync, "all")) {
        MPI_Win_lock_all(0, win);
        MPI_Put(buf, N, MPI_INT, target, 0, N, MPI_INT, win);
        MPI_Win_unlock_all(win);
        return;
    }
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, target, 0, win);
    MPI_Put(buf, N, MPI_INT, target, 0, N, MPI_INT, win);
    if (0 == strcmp(sync, "flush")) MPI_Win_flush(target, win);
    MPI_Win_unlock(target, win);
}

int main(int argc, char **argv)
{
    test_init(&argc, &argv);
    const char *sync = getenv("NBE_TAKE_OVER_SYNC");
    if (NULL == sync) sync = "lock";
    const char *nohold = getenv("NBE_TAKE_OVER_NOHOLD");
    int no_hold = NULL != nohold && 0 == strcmp(nohold, "1");
    const char *chainenv = getenv("NBE_TAKE_OVER_CHAIN");
    int chain = NULL != chainenv && 0 == strcmp(chainenv, "1");
    if (chain && nprocs < 3) {
        if (0 == rank) printf("NBE_TAKE_OVER_CHAIN needs 3 processes: skipped\n");
        return test_finish();
    }
    int *mem = calloc(N, sizeof(int));
    const char *thirdenv = getenv("NBE_TAKE_OVER_THIRD");
    int third = NULL != thirdenv ? atoi(thirdenv) : 2;
    if (nprocs >= 3 && (third < 2 || third >= nprocs)) {
        if (0 == rank) printf("NBE_TAKE_OVER_THIRD=%d: not a rank from 2 to %d\n", third, nprocs - 1);
        CHECK(0, "bad NBE_TAKE_OVER_THIRD");
        return test_finish();
    }
    if (chain && 0 == third % 8) {
        /* rank 0's claim word in rank 1's line stays pinned: not taken over by design */
        if (0 == rank) printf("NBE_TAKE_OVER_CHAIN with a third process on rank 0's claim word\n");
        CHECK(0, "NBE_TAKE_OVER_CHAIN needs NBE_TAKE_OVER_THIRD not a multiple of 8");
        return test_finish();
    }
    int last = nprocs >= 3 && !chain ? third : 1;   /* the last writer on rank 0 in a round */
    int rounds = chain ? 1 : 2;
    MPI_Win win;
    MPI_Win_create(mem, (MPI_Aint) (N * sizeof(int)), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD,
                   &win);
    take_over_counters_t pv;
    if (0 != take_over_counters_open(&win, &pv)) return test_finish();
    MPI_T_pvar_handle cma = pv.cma, taken = pv.taken, skipped = pv.skipped;
    int first = -1;   /* rank 1: how its put of round 1 went */
    for (int round = 0; round < rounds; ++round) {
        unsigned long long cma0 = mdq_pvar_read(cma), taken0 = mdq_pvar_read(taken);
        unsigned long long skipped0 = mdq_pvar_read(skipped);
        /* how rank 1's put to rank 0 (and with chain, to the third process) went: 0
         * active message answered by the target, 1 taken over, 2 by CMA at
         * once */
        int how[2] = { 0, 0 }, how_all[2];
        MPI_Barrier(MPI_COMM_WORLD);
        if (0 == rank) {
            double t = now() + 2e-3;
            int flag;
            /* in MPI (its progress stamps), then away */
            while (now() < t) MPI_Iprobe(MPI_ANY_SOURCE, 99, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
            MPI_Send(&round, 1, MPI_INT, 1, 6, MPI_COMM_WORLD);
            CHECK(wait_outside_mpi(mem, last, round),
                  "round %d: the values of rank %d did not arrive in %.0f s outside MPI "
                  "(mem[0] %d)", round + 1, last, AWAY_MAX_S, mem[0]);
            if (chain) stay_away_ms(CHAIN_MS);
        } else if (1 == rank) {
            int r;
            MPI_Recv(&r, 1, MPI_INT, 0, 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            stay_away_ms(5);   /* the target has left, its stamp still fresh */
            put_epoch(win, 0, round, sync);
            if (mdq_pvar_read(cma) > cma0) how[0] = 2;
            else if (mdq_pvar_read(taken) > taken0) how[0] = 1;
            if (chain) {
                unsigned long long cma1 = mdq_pvar_read(cma), taken1 = mdq_pvar_read(taken);
                double t0 = now();
                MPI_Send(&round, 1, MPI_INT, third, 7, MPI_COMM_WORLD);
                MPI_Recv(&r, 1, MPI_INT, third, 8, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                stay_away_ms(5);   /* it has left, its stamp still fresh */
                put_epoch(win, third, round, sync);
                if (mdq_pvar_read(cma) > cma1) how[1] = 2;
                else if (mdq_pvar_read(taken) > taken1) how[1] = 1;
                printf("rank 1: the epoch on rank %d took %.3f s (how: %d)\n", third,
                       now() - t0, how[1]);
            } else if (third == last) {
                put_epoch(win, third, round, sync);
                MPI_Send(&round, 1, MPI_INT, third, 7, MPI_COMM_WORLD);
            }
        } else if (nprocs >= 3 && third == rank) {
            int r;
            MPI_Recv(&r, 1, MPI_INT, 1, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            if (chain) {
                /* as rank 0: its last MPI call says it leaves */
                MPI_Send(&round, 1, MPI_INT, 1, 8, MPI_COMM_WORLD);
                CHECK(wait_outside_mpi(mem, 1, round),
                      "round %d: the values of rank 1 did not arrive at rank %d in %.0f s "
                      "outside MPI while rank 0 was still away (mem[0] %d)", round + 1, third,
                      AWAY_MAX_S, mem[0]);
            } else {
                put_epoch(win, 0, round, "lock");
            }
        }
        MPI_Allreduce(how, how_all, 2, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        if ((0 == rank && 1 == how_all[0]) || (third == rank && 1 == how_all[1])) {
            /* the frame arrives now that the target is back in MPI */
            double end = now() + AWAY_MAX_S;
            int flag;
            while (mdq_pvar_read(skipped) == skipped0 && now() < end) {
                MPI_Iprobe(MPI_ANY_SOURCE, 99, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
            }
            CHECK(mdq_pvar_read(skipped) == skipped0 + 1,
                  "round %d: %llu frames skipped, expected the one taken over", round + 1,
                  mdq_pvar_read(skipped) - skipped0);
        }
        if (1 == rank && 0 == round && chain && 2 == how_all[1]) {
            printf("rank 1: round 1 on rank %d went by CMA (it was not seen present); the "
                   "second take-over is not checked\n", third);
        } else if (1 == rank && 0 == round && chain && 0 == how_all[1]) {
            /* its values arrived (checked there): it was still in its last MPI call */
            printf("rank 1: round 1 on rank %d was answered by it (still in MPI); the "
                   "second take-over is not checked\n", third);
        } else if (1 == rank && 0 == round && chain) {
            CHECK(1 == how_all[1], "round 1: the unlock on rank %d returned, but the frame was "
                                   "not taken over", third);
        }
        if (1 == rank && 0 == round) {
            first = how[0];
            if (2 == first) {
                printf("rank 1: round 1 went by CMA (the target was not seen present); the "
                       "take-over is not checked\n");
            } else {
                CHECK(1 == first, "round 1: the unlock returned, but the frame was not taken "
                                  "over");
            }
        }
        if (1 == rank && 1 == round && 1 == first && no_hold && 2 == how[0]) {
            printf("rank 1: round 2 went by CMA (the target was not seen present); the "
                   "take-over without a hold is not checked\n");
        } else if (1 == rank && 1 == round && 1 == first && no_hold) {
            CHECK(1 == how[0], "round 2: no hold (osc_nbe_target_away_hold 0), yet the frame "
                            "was not taken over again");
        } else if (1 == rank && 1 == round && 1 == first) {
            CHECK(2 == how[0], "round 2: the target held away after a take-over, yet the put "
                            "did not go by CMA");
        }
        MPI_Barrier(MPI_COMM_WORLD);
        if (0 == rank || (chain && third == rank)) {
            for (int i = 0; i < N; ++i) {
                if (mem[i] != value(last, round, i)) {
                    CHECK(0, "round %d: mem[%d] = %d after the round, expected %d (rank %d's)",
                          round + 1, i, mem[i], value(last, round, i), last);
                    break;
                }
            }
        }
    }
    take_over_counters_close(&pv);
    MPI_Win_free(&win);
    free(mem);
    return test_finish();
}
