/*
 * Fence epochs of RDMA-sized puts and gets, one after another, with an
 * active-message access (small put, accumulate, small get) in some epochs.
 *
 * With osc_nbe_fence_implied_grants, a fence epoch whose predecessor ended
 * clean (no process sent a counted message in it) lets RDMA go without the
 * targets' grants. What must hold whatever the path:
 *  - a put of epoch k+1 lands after every access of epoch k to the same
 *    memory, also when another process made that access by an active
 *    message (rank 2 accumulates or puts in epoch k, rank 0 overwrites the
 *    same bytes in epoch k+1: the target must see rank 0's data);
 *  - a get of epoch k+1 sees every put of epoch k;
 *  - the target's own stores before a fence are not overwritten by nothing
 *    and are what a get of the next epoch reads.
 * The window pvar osc_nbe_fence_implied_grants counts the epochs whose
 * predecessor ended clean. Each iteration has an epoch of accesses and an
 * empty one (after the target's local stores), so with the rule on every
 * epoch after an empty one qualifies (EPOCHS of them); with
 * NBE_EXPECT_IMPLIED=rdma (vader's CMA with osc_nbe_active_cma on: RDMA
 * completes in the call) also every epoch after one of RDMA accesses only;
 * with =am (tcp, vader's emulated single copy: RDMA is followed by a
 * counted FIN; osc_nbe_active_cma off: active messages) only the EPOCHS; with
 * =off (the parameter off) none. A second phase alternates epochs of
 * active messages with epochs of one RDMA put over the same bytes, with no
 * empty epoch between: the put's epoch never qualifies, the next active
 * messages' epoch does where the RDMA completed in the call (PHASE2 more).
 * NBE_GET_SKEW=D places rank 0's get buffer D bytes past a page (the
 * window starts on one): with osc_nbe_copy_guard on and D in 1..63 the
 * gets go by active messages, so their epochs are not clean (=rdma then
 * expects that many fewer).
 */
#include "mdq_pvar.h"

#define BIG   (64 * 1024)        /* RDMA in fence epochs (osc_nbe_rdma_active_threshold) */
#define EPOCHS 40
#define PHASE2 20

/* what epoch e leaves in the target's first BIG bytes */
static int seed_of(int epoch) { return 1000 + epoch; }

int main(int argc, char **argv)
{
    unsigned char *mem, *src, *got;
    MPI_Win win;

    test_init(&argc, &argv);
    mdq_pvar_init();
    const int target = 1 % nprocs;
    const int am_rank = nprocs > 2 ? 2 : -1;   /* makes active-message accesses */

    /* a create window: an allocate window may be shared memory (no RDMA) */
    mem = page_calloc(2 * BIG);
    MPI_Win_create(mem, 2 * BIG, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    src = page_calloc(BIG);
    const size_t skew = getenv("NBE_GET_SKEW") ? (size_t) atoi(getenv("NBE_GET_SKEW")) % 4096 : 0;
    unsigned char *got_alloc = page_calloc(BIG + skew);
    got = got_alloc + skew;

    MPI_T_pvar_handle h;
    int idx = mdq_pvar_find_bound("osc_nbe_fence_implied_grants", &win, &h);

    MPI_Win_fence(0, win);
    int last_put = 0;   /* the epoch of rank 0's last put */
    int rdma_only = 0;  /* epochs of RDMA accesses only */
    int get_epochs = 0; /* of those, with a get */
    for (int e = 1; e <= EPOCHS; ++e) {
        /* epochs of three kinds, so that clean and unclean ones follow each
         * other in every order: 0 RDMA put only, 1 active messages only (to
         * bytes the next put overwrites), 2 RDMA get + RDMA put */
        int kind = (e * 7) % 3;
        rdma_only += 1 != kind;
        get_epochs += 2 == kind;
        if (1 == kind && (rank == am_rank || (am_rank < 0 && rank == target))) {
            int one = 1;
            unsigned char small[64];
            memset(small, 0xee, sizeof(small));
            MPI_Accumulate(&one, 1, MPI_INT, target, 0, 1, MPI_INT, MPI_SUM, win);
            MPI_Put(small, sizeof(small), MPI_BYTE, target, 256, sizeof(small), MPI_BYTE, win);
        }
        if (0 == rank && 1 != kind) {
            if (2 == kind) {
                /* the target stored its second half before the last fence */
                MPI_Get(got, BIG, MPI_BYTE, target, BIG, BIG, MPI_BYTE, win);
            }
            fill(src, BIG, seed_of(e));
            MPI_Put(src, BIG, MPI_BYTE, target, 0, BIG, MPI_BYTE, win);
        }
        if (1 != kind) last_put = e;   /* every rank: the target checks with it */
        MPI_Win_fence(0, win);
        if (rank == target && 1 != kind) {
            size_t bad = verify(mem, BIG, seed_of(e));
            CHECK(0 == bad, "epoch %d: byte %zu is %d, not rank 0's put of this epoch", e,
                  bad - 1, bad ? mem[bad - 1] : 0);
        }
        if (rank == target && 1 == kind && last_put > 0) {
            unsigned char want[BIG];
            fill(want, BIG, seed_of(last_put));
            int v0, w0;
            memcpy(&v0, mem, sizeof(int));
            memcpy(&w0, want, sizeof(int));
            CHECK(v0 == w0 + 1, "epoch %d: accumulate gave %d, not %d", e, v0, w0 + 1);
            for (int i = 256; i < 320; ++i) {
                if (0xee != mem[i]) {
                    CHECK(0, "epoch %d: small put byte %d is %d", e, i, mem[i]);
                    break;
                }
            }
        }
        if (0 == rank && 2 == kind && e > 1) {
            size_t bad = verify(got, BIG, 5000 + e - 1);
            CHECK(0 == bad, "epoch %d: get byte %zu is %d, not the target's store", e, bad - 1,
                  bad ? got[bad - 1] : 0);
        }
        if (rank == target) fill(mem + BIG, BIG, 5000 + e);   /* for the next get */
        MPI_Win_fence(0, win);
    }
    /* Phase 2: no empty epoch between: an epoch of active messages to the
     * bytes that the next epoch's RDMA put overwrites (that put must wait
     * for the grants), then that put; the epoch after it qualifies again
     * where the RDMA completed in the call */
    for (int j = 0; j < PHASE2; ++j) {
        int e = EPOCHS + 1 + j;
        /* the two halves in turn: the target checks one half in the epoch
         * in which the next active messages go to the other (no conflict) */
        MPI_Aint half = (MPI_Aint) (j % 2) * BIG;
        if (rank == am_rank || (am_rank < 0 && rank == target)) {
            /* over the whole half: several fragments the target applies
             * one by one, a while after they are sent */
            int *ones = malloc(BIG);
            for (size_t i = 0; i < BIG / sizeof(int); ++i) ones[i] = 1;
            MPI_Accumulate(ones, BIG / sizeof(int), MPI_INT, target, half, BIG / sizeof(int),
                           MPI_INT, MPI_SUM, win);
            MPI_Win_fence(0, win);   /* (ones is in use until then) */
            free(ones);
        } else {
            MPI_Win_fence(0, win);
        }
        if (0 == rank) {
            fill(src, BIG, seed_of(e));
            MPI_Put(src, BIG, MPI_BYTE, target, half, BIG, MPI_BYTE, win);
        }
        MPI_Win_fence(0, win);
        if (rank == target) {
            size_t bad = verify(mem + half, BIG, seed_of(e));
            CHECK(0 == bad, "phase 2, epoch %d: byte %zu is %d, not rank 0's put after the "
                  "active messages", e, bad - 1, bad ? mem[half + bad - 1] : 0);
        }
    }
    MPI_Win_fence(MPI_MODE_NOSUCCEED, win);

    const char *expect = getenv("NBE_EXPECT_IMPLIED");
    if (idx >= 0 && expect && 0 == rank && nprocs > 1) {
        unsigned long long n = 0;
        n = mdq_pvar_read(h);
        unsigned long long want = 0;
        if (0 == strcmp(expect, "rdma")) {
            want = EPOCHS + rdma_only + PHASE2 - (skew >= 1 && skew <= 63 ? get_epochs : 0);
        }
        if (0 == strcmp(expect, "am")) want = EPOCHS;
        /* with two processes the accumulate of the active-message epochs is
         * the target's to itself, which may complete in place */
        if (2 == nprocs && 0 == strcmp(expect, "rdma")) {
            CHECK(n >= want, "%llu fence epochs granted by a clean predecessor, want at least %llu",
                  n, want);
        } else {
            CHECK(n == want, "%llu fence epochs granted by a clean predecessor, want %llu", n, want);
        }
    }
    if (idx >= 0) MPI_T_pvar_handle_free(mdq_pvar_session, &h);
    MPI_Win_free(&win);
    free(mem);
    free(src);
    free(got_alloc);
    mdq_pvar_fini();
    return test_finish();
}
