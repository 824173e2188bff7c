/*
 * Randomized stress of mixed epochs with exact final contents.
 *
 * A schedule derived from a seed (same on every rank) runs R rounds; each
 * round uses one synchronization mode (fence, PSCW, lock exclusive, lock
 * shared, lock_all, lock_all with flushes) and every origin issues a random
 * mix of Put (into its own stripe at the target: no conflicts), Accumulate
 * SUM (into shared counters: commutative), Get (of stripe cells not written
 * in the round) and Fetch_and_op. Every rank replays the whole schedule to
 * know the expected window contents, checks its Get results and, at the
 * end, its window.  Usage: rma_stress [rounds] [seed]
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S 24          /* stripe cells per origin */
#define A 8           /* accumulate counters */
#define MAXOPS 16

enum { M_FENCE, M_PSCW, M_LOCK_EXCL, M_LOCK_SHARED, M_LOCK_ALL, M_LOCK_ALL_FLUSH, NMODES };
enum { T_PUT, T_ACC, T_GET, T_FOP };

typedef struct { int type, target, index, value; } op_t;

static int rank, size, errs, W;

static uint64_t rng_state;
static void rng_seed(uint64_t a, uint64_t b, uint64_t c)
{
    rng_state = a * 0x9E3779B97F4A7C15ull ^ (b + 1) * 0xC2B2AE3D27D4EB4Full ^ (c + 7) * 0x165667B19E3779F9ull;
    if (!rng_state) rng_state = 1;
}
static unsigned rng(unsigned n)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (unsigned) (rng_state % n);
}

/* the ops of origin o in round r (deterministic) */
static int make_ops(unsigned seed, int r, int o, op_t *ops)
{
    rng_seed(seed, r, o);
    int m = rng(MAXOPS + 1);
    int base = rng(S);
    for (int k = 0; k < m; ++k) {
        op_t *p = &ops[k];
        p->target = rng(size);
        int t = rng(10);
        p->type = t < 4 ? T_PUT : t < 7 ? T_ACC : t < 9 ? T_GET : T_FOP;
        p->value = (int) rng(1000) + 1;
        if (T_PUT == p->type) p->index = o * S + (base + k) % S;                   /* distinct per round */
        else if (T_GET == p->type) p->index = o * S + (base + MAXOPS + k % (S - MAXOPS)) % S; /* never put this round */
        else p->index = size * S + rng(A);
    }
    return m;
}

static MPI_Group group_of(const int *flags)
{
    MPI_Group world, g;
    int n = 0, *ranks = malloc(sizeof(int) * size);
    for (int r = 0; r < size; ++r) if (flags[r]) ranks[n++] = r;
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    MPI_Group_incl(world, n, ranks, &g);
    MPI_Group_free(&world);
    free(ranks);
    return g;
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 200;
    unsigned seed = argc > 2 ? (unsigned) atoi(argv[2]) : 12345;
    int total = 0, *mem;
    MPI_Win win;
    op_t ops[MAXOPS];
    int got[MAXOPS];

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    W = size * S + A;
    int *expect = calloc((size_t) size * W, sizeof(int));   /* expected window of every rank */
    MPI_Win_allocate(W * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win);
    memset(mem, 0, W * sizeof(int));
    MPI_Barrier(MPI_COMM_WORLD);

    for (int r = 0; r < rounds; ++r) {
        rng_seed(seed, r + 1, 1u << 20);
        int next_mode = rng(NMODES);
        rng_seed(seed, r, 1u << 20);
        int mode = rng(NMODES);
        int m = make_ops(seed, r, rank, ops);
        int is_target[64] = { 0 }, is_origin[64] = { 0 };
        for (int k = 0; k < m; ++k) is_target[ops[k].target] = 1;
        for (int o = 0; o < size; ++o) {
            op_t tmp[MAXOPS];
            int mo = make_ops(seed, r, o, tmp);
            for (int k = 0; k < mo; ++k) if (tmp[k].target == rank) is_origin[o] = 1;
        }
        for (int k = 0; k < m; ++k) got[k] = -12345;

        /* open */
        switch (mode) {
        case M_FENCE: MPI_Win_fence(0, win); break;
        case M_PSCW: {
            MPI_Group go = group_of(is_origin), gt = group_of(is_target);
            MPI_Win_post(go, 0, win);
            MPI_Win_start(gt, 0, win);
            MPI_Group_free(&go);
            MPI_Group_free(&gt);
            break;
        }
        case M_LOCK_ALL:
        case M_LOCK_ALL_FLUSH: MPI_Win_lock_all(0, win); break;
        default: break;
        }
        /* issue (lock modes: one target at a time, in target order) */
        for (int t = 0; t < size; ++t) {
            int any = 0;
            for (int k = 0; k < m; ++k) any |= ops[k].target == t;
            if (!any) continue;
            if (M_LOCK_EXCL == mode || M_LOCK_SHARED == mode)
                MPI_Win_lock(M_LOCK_EXCL == mode ? MPI_LOCK_EXCLUSIVE : MPI_LOCK_SHARED, t, 0, win);
            for (int k = 0; k < m; ++k) {
                op_t *p = &ops[k];
                if (p->target != t) continue;
                switch (p->type) {
                case T_PUT: MPI_Put(&p->value, 1, MPI_INT, t, p->index, 1, MPI_INT, win); break;
                case T_ACC: MPI_Accumulate(&p->value, 1, MPI_INT, t, p->index, 1, MPI_INT, MPI_SUM, win); break;
                case T_GET: MPI_Get(&got[k], 1, MPI_INT, t, p->index, 1, MPI_INT, win); break;
                case T_FOP: MPI_Fetch_and_op(&p->value, &got[k], MPI_INT, t, p->index, MPI_SUM, win); break;
                }
                if (M_LOCK_ALL_FLUSH == mode && rng(3) == 0) MPI_Win_flush(t, win);
            }
            if (M_LOCK_EXCL == mode || M_LOCK_SHARED == mode) MPI_Win_unlock(t, win);
        }
        /* close */
        switch (mode) {
        case M_FENCE: MPI_Win_fence(0, win); break;
        case M_PSCW: MPI_Win_complete(win); MPI_Win_wait(win); break;
        default: break;
        }
        /* a passive-target round may only start once every exposure of this
         * round ended everywhere (MPI: no lock while exposed); active-target
         * rounds follow each other through grants alone */
        switch (mode) {
        case M_FENCE:
        case M_PSCW:
            if (M_FENCE != next_mode && M_PSCW != next_mode) MPI_Barrier(MPI_COMM_WORLD);
            break;
        case M_LOCK_ALL_FLUSH: MPI_Win_flush_all(win); /* fall through */
        case M_LOCK_ALL: MPI_Win_unlock_all(win); MPI_Barrier(MPI_COMM_WORLD); break;
        default: MPI_Barrier(MPI_COMM_WORLD); break;
        }

        /* check my gets against the state before the round, then replay */
        for (int k = 0; k < m; ++k) {
            if (T_GET == ops[k].type && got[k] != expect[ops[k].target * W + ops[k].index]) {
                fprintf(stderr, "[%d] round %d get %d@%d: %d expected %d\n", rank, r, ops[k].index,
                        ops[k].target, got[k], expect[ops[k].target * W + ops[k].index]);
                errs++;
            }
            if (T_FOP == ops[k].type && (got[k] < expect[ops[k].target * W + ops[k].index])) {
                fprintf(stderr, "[%d] round %d fop fetched %d < %d\n", rank, r, got[k],
                        expect[ops[k].target * W + ops[k].index]);
                errs++;
            }
        }
        for (int o = 0; o < size; ++o) {
            op_t tmp[MAXOPS];
            int mo = make_ops(seed, r, o, tmp);
            for (int k = 0; k < mo; ++k) {
                int *cell = &expect[tmp[k].target * W + tmp[k].index];
                if (T_PUT == tmp[k].type) *cell = tmp[k].value;
                else if (T_ACC == tmp[k].type || T_FOP == tmp[k].type) *cell += tmp[k].value;
            }
        }
    }

    MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, win);
    for (int i = 0; i < W; ++i) {
        if (mem[i] != expect[rank * W + i]) {
            fprintf(stderr, "[%d] final cell %d: %d expected %d\n", rank, i, mem[i], expect[rank * W + i]);
            errs++;
        }
    }
    MPI_Win_unlock(rank, win);
    MPI_Win_free(&win);
    free(expect);

    MPI_Reduce(&errs, &total, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (0 == rank) {
        if (0 == total) printf(" No Errors\n");
        else printf(" Found %d errors\n", total);
    }
    MPI_Finalize();
    return total ? 1 : 0;
}
