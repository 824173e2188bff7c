/*
 * Passive-target RMA on a create window of one node while the target does
 * not call MPI at all: window locks are taken by the origins in the node's
 * lock table (osc_nbe_shm_tables), the peers' geometry is read there, and
 * transfers of 64 KiB to a target away from MPI are CMA (vader), so nothing
 * needs the target's CPU.
 *
 * Rank 0 is the target. Between two barriers it only reads its own memory:
 *  1. every origin, under an exclusive lock, puts its stamp over its data
 *     block and then its stamp over its flag block (the data put completed
 *     before the flag put was issued, so a visible flag means the data are
 *     in place); the target waits for every flag, then checks every block;
 *  2. every origin, under a shared lock, gets the data block of the next
 *     origin (it must read that origin's stamp), then, under an exclusive
 *     lock, puts a second stamp over its flag block; the target waits for
 *     those.
 * The target gives up after 30 s (an origin stuck waiting for a grant that
 * needs the target's progress), reports it, and only then calls MPI again,
 * so a regression fails instead of hanging. With --mca osc_nbe_shm_tables 0
 * the lock requests need the target's progress: phase 1 then times out.
 * Run on vader only (tcp's put needs the target's progress). Where vader
 * has no single-copy mechanism (CMA not permitted, e.g. some containers)
 * the puts are active messages and the test says so and skips: a first
 * epoch, with the target in MPI, must have completed an RDMA transfer in
 * the BTL call or in a gathered CMA call, or have chosen active messages
 * over CMA (pvars osc_nbe_rdma_local_complete, osc_nbe_cma_gathered,
 * osc_nbe_passive_copied). That first epoch follows
 * one with a small put (an active message): the operations it counted must
 * not make later unlocks wait for an acknowledgement from the target.
 *
 * Blocks below the RDMA thresholds (NBE_BLOCK_INTS) go by RDMA either
 * because the thresholds were set at or below them (NBE_SMALL_RDMA=1, with
 * osc_nbe_passive_cma on: a small put must then take RDMA even with the
 * target in MPI; under auto it may take active messages to a target in
 * MPI, as RDMA-sized ones may) or because the
 * target is away from MPI (osc_nbe_target_away: NBE_EXPECT_AWAY=1 checks
 * that pvar osc_nbe_rdma_target_away counted). The origins start each phase
 * 20 ms after the target left MPI, past osc_nbe_target_away: a transfer sent
 * while the target still looks present would wait for its return.
 */
#include <stdbool.h>
#include <unistd.h>

#include "pt2pt_common.h"
#include "away_common.h"

/* ints per block: 64 KiB, above the default RDMA thresholds; NBE_BLOCK_INTS
 * sets another size (small transfers need osc_nbe_rdma_threshold and
 * osc_nbe_rdma_get_threshold at or below it to go by RDMA) */
static int block = 64 * 1024 / (int) sizeof(int);
#define PROBE (64 * 1024 / (int) sizeof(int))   /* the default block */
#define WAIT_S 30.0
#define START_AFTER_US 20000   /* origins start a phase this long after the target left MPI */

static int env_is(const char *name)
{
    const char *v = getenv(name);
    return NULL != v && 0 == strcmp(v, "1");
}

/* block 2k: origin k's data, block 2k+1: its flag (k = 1 .. nprocs-1) */
static int data_disp(int k) { return 2 * k * block; }
static int flag_disp(int k) { return (2 * k + 1) * block; }

/* the target, outside MPI: wait until every origin's flag holds stamp */
static int wait_flags(volatile int *mem, int stamp)
{
    double start = now();
    int missing = nprocs - 1;
    while (missing > 0 && now() - start < WAIT_S) {
        missing = 0;
        for (int k = 1; k < nprocs; ++k) missing += mem[flag_disp(k)] != stamp + k;
    }
    __atomic_thread_fence(__ATOMIC_ACQUIRE);   /* the data were stored before the flags */
    return missing;
}

static void put_block(MPI_Win win, int *buf, int disp, int value)
{
    for (int i = 0; i < block; ++i) buf[i] = value;
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win);
    MPI_Put(buf, block, MPI_INT, 0, disp, block, MPI_INT, win);
    MPI_Win_unlock(0, win);
}

int main(int argc, char **argv)
{
    test_init(&argc, &argv);
    const char *env = getenv("NBE_BLOCK_INTS");
    if (NULL != env && atoi(env) >= 8) block = atoi(env);
    int nblocks = 2 * (nprocs + 1);
    /* the blocks, then PROBE ints for the check below */
    size_t nints = (size_t) nblocks * block + PROBE;
    int *mem = calloc(nints, sizeof(int));
    int *buf = malloc((block > PROBE ? block : PROBE) * sizeof(int));
    MPI_Win win;
    MPI_Win_create(mem, (MPI_Aint) (nints * sizeof(int)), sizeof(int), MPI_INFO_NULL,
                   MPI_COMM_WORLD, &win);
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);

    /* can this node do it? one epoch with the target in MPI (the barrier) */
    mdq_pvar_init();
    MPI_T_pvar_handle h, hg, hc;
    int have_pvar = 0 == mdq_pvar_find("osc_nbe_rdma_local_complete", &h) &&
                    0 == mdq_pvar_find("osc_nbe_cma_gathered", &hg) &&
                    0 == mdq_pvar_find("osc_nbe_passive_copied", &hc);
    unsigned long long rdma = 1;
    if (0 != rank) {
        /* a small put first: an active message (under the default
         * thresholds), counted at the target.
         * Later epochs of RDMA transfers must not wait for the target
         * because of it (the unlock's acknowledgement says it arrived) */
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win);
        MPI_Put(buf, 8, MPI_INT, 0, data_disp(rank), 8, MPI_INT, win);
        MPI_Win_unlock(0, win);
        put_block(win, buf, data_disp(rank), 1);
        /* RDMA completed in the BTL call or gathered, or active messages
         * chosen instead of CMA (osc_nbe_passive_cma, only where vader has
         * CMA: the target was in MPI) */
        rdma = have_pvar ? mdq_pvar_read(h) + mdq_pvar_read(hg) + mdq_pvar_read(hc) : 0;
        bool small_went_am = 0 == rdma && block < PROBE;
        if (small_went_am && have_pvar) {
            /* does a 64 KiB put take RDMA? */
            MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win);
            MPI_Put(buf, PROBE, MPI_INT, 0, nblocks * block, PROBE, MPI_INT, win);
            MPI_Win_unlock(0, win);
            rdma = mdq_pvar_read(h) + mdq_pvar_read(hg) + mdq_pvar_read(hc);
        }
        if (small_went_am && 0 != rdma && env_is("NBE_SMALL_RDMA")) {
            CHECK(0, "puts of %d B went by active messages although RDMA works here and the "
                  "thresholds are at or below it: the phases would wait for the target",
                  (int) (block * sizeof(int)));
            rdma = 0;   /* failed already: skip the phases rather than wait */
        }
    }
    MPI_T_pvar_handle ha;
    int have_away = have_pvar && env_is("NBE_EXPECT_AWAY") &&
                    0 == mdq_pvar_find("osc_nbe_rdma_target_away", &ha);
    unsigned long long away_before = have_away ? mdq_pvar_read(ha) : 0;
    unsigned long long least = 0;
    MPI_Allreduce(&rdma, &least, 1, MPI_UNSIGNED_LONG_LONG, MPI_MIN, MPI_COMM_WORLD);
    if (0 == least) {
        if (0 == rank) printf("skipped: no RDMA completed in the BTL call on this node\n");
        goto done;
    }

    /* phase 1: exclusive epochs, data then flag */
    if (0 == rank) {
        int missing = wait_flags(mem, 100);
        CHECK(0 == missing, "phase 1: %d origins did not get the lock without my progress",
              missing);
        for (int k = 1; k < nprocs && 0 == missing; ++k) {
            for (int i = 0; i < block; ++i) {
                if (mem[data_disp(k) + i] != 1000 + k) {
                    CHECK(0, "phase 1: block of %d holds %d at %d", k, mem[data_disp(k) + i], i);
                    break;
                }
            }
        }
    } else {
        usleep(START_AFTER_US);
        put_block(win, buf, data_disp(rank), 1000 + rank);
        put_block(win, buf, flag_disp(rank), 100 + rank);
    }
    MPI_Barrier(MPI_COMM_WORLD);

    /* phase 2: shared epochs (gets), then an exclusive flag */
    if (0 == rank) {
        int missing = wait_flags(mem, 200);
        CHECK(0 == missing, "phase 2: %d origins did not finish without my progress", missing);
    } else {
        int next = rank % (nprocs - 1) + 1;
        usleep(START_AFTER_US);
        MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
        MPI_Get(buf, block, MPI_INT, 0, data_disp(next), block, MPI_INT, win);
        MPI_Win_unlock(0, win);
        for (int i = 0; i < block; ++i) {
            if (buf[i] != 1000 + next) {
                CHECK(0, "phase 2: read %d at %d of %d's block", buf[i], i, next);
                break;
            }
        }
        put_block(win, buf, flag_disp(rank), 200 + rank);
        if (have_away) {
            /* 2 exclusive put epochs, 1 shared get epoch, 1 put epoch */
            unsigned long long n = mdq_pvar_read(ha) - away_before;
            CHECK(n >= 4, "only %llu of the 4 transfers of %d B to the target away from MPI "
                  "were counted as sent by RDMA for that", n, (int) (block * sizeof(int)));
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
done:
    if (have_away) MPI_T_pvar_handle_free(mdq_pvar_session, &ha);
    if (have_pvar) {
        MPI_T_pvar_handle_free(mdq_pvar_session, &h);
        MPI_T_pvar_handle_free(mdq_pvar_session, &hg);
        MPI_T_pvar_handle_free(mdq_pvar_session, &hc);
    }
    mdq_pvar_fini();
    MPI_Win_free(&win);
    free(mem);
    free(buf);
    return test_finish();
}
