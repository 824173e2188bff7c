/*
 * osc/nbe's take-over of put frames (osc_nbe_claim.c) along random chains
 * of targets that leave MPI. In each round one or two origins (the other
 * ranks are targets) walk the targets in a random order: an origin tells a
 * target to go, the target computes outside MPI for 1-20 ms, and the origin
 * at once runs a passive epoch of 1-3 small puts on it (lock or lock_all,
 * closed by unlock, flush or flush_all, some with a second put phase), so
 * that the frame leaves while the target still looks present and is taken
 * over once it looks away. Several targets are away at once; at np >= 9 two
 * of them share a claim word (rank mod 8). A second pass overwrites words of
 * random targets, which may still be away, from the other origin. Steps run
 * one after the other (a token passes between origins), so the last writer
 * of each word is known: every rank makes the same random draws, tracks
 * what each window must hold, and checks its own after each round. At the
 * end, frames taken over must equal frames skipped over the job.
 * Run with a small osc_nbe_target_away (200 us in the testlist; the origin waits 0-150 us after its "go") and
 * osc_nbe_target_away_oversubscribed 0. NBE_WALK_ROUNDS (20) and
 * NBE_WALK_SEED (1) change the run.
 */
#include "away_common.h"

#define W 40            /* ints per window */
#define MAX_RANGES 3    /* puts per phase of an epoch */
#define MAX_LEN 8       /* ints per put */

static uint64_t draw_state;

/* the same sequence on every rank */
static unsigned draw(unsigned n)
{
    draw_state ^= draw_state << 13;
    draw_state ^= draw_state >> 7;
    draw_state ^= draw_state << 17;
    return (unsigned) ((draw_state >> 11) % n);
}

static int value(int round, int step, int phase, int i)
{
    return 0x10000000 + (round << 16) + (step << 8) + (phase << 7) + i;
}

typedef struct {
    int origin, target, kind;
    int n, off[MAX_RANGES], len[MAX_RANGES];
    unsigned wait_us;   /* the origin's pause between "go" and the epoch */
} step_t;

/* one phase of a step's puts: issued by its origin, recorded everywhere */
static void put_phase(MPI_Win win, const step_t *s, int round, int si, int phase, int *expect,
                      int bufs[][MAX_LEN])
{
    for (int k = 0; k < s->n; ++k) {
        int *b = bufs[phase * MAX_RANGES + k];
        for (int i = 0; i < s->len[k]; ++i) {
            b[i] = value(round, si, phase, s->off[k] + i);
            expect[(size_t) s->target * W + (size_t) (s->off[k] + i)] = b[i];
        }
        if (rank == s->origin) {
            MPI_Put(b, s->len[k], MPI_INT, s->target, s->off[k], s->len[k], MPI_INT, win);
        }
    }
}

/* the epoch of a step (kinds 0-4); every rank records its puts */
static void run_step(MPI_Win win, const step_t *s, int round, int si, int *expect)
{
    int bufs[2 * MAX_RANGES][MAX_LEN];
    int me = rank == s->origin, t = s->target;
    switch (s->kind) {
    case 0:
    case 1:
        if (me) MPI_Win_lock(0 == s->kind ? MPI_LOCK_EXCLUSIVE : MPI_LOCK_SHARED, t, 0, win);
        put_phase(win, s, round, si, 0, expect, bufs);
        if (me) MPI_Win_unlock(t, win);
        break;
    case 2:
        if (me) MPI_Win_lock_all(0, win);
        put_phase(win, s, round, si, 0, expect, bufs);
        if (me) {
            MPI_Win_flush(t, win);
            MPI_Win_unlock_all(win);
        }
        break;
    case 3:
        if (me) MPI_Win_lock_all(0, win);
        put_phase(win, s, round, si, 0, expect, bufs);
        if (me) MPI_Win_flush_all(win);
        put_phase(win, s, round, si, 1, expect, bufs);
        if (me) MPI_Win_unlock_all(win);
        break;
    default:
        if (me) MPI_Win_lock(MPI_LOCK_SHARED, t, 0, win);
        put_phase(win, s, round, si, 0, expect, bufs);
        if (me) MPI_Win_flush(t, win);
        put_phase(win, s, round, si, 1, expect, bufs);
        if (me) MPI_Win_unlock(t, win);
        break;
    }
}

int main(int argc, char **argv)
{
    test_init(&argc, &argv);
    const char *e = getenv("NBE_WALK_ROUNDS");
    int rounds = NULL != e ? atoi(e) : 20;
    e = getenv("NBE_WALK_SEED");
    uint64_t seed = NULL != e ? strtoull(e, NULL, 0) : 1;
    if (nprocs < 2) {
        if (0 == rank) printf("needs 2 processes: skipped\n");
        return test_finish();
    }
    int *mem = calloc(W, sizeof(int));
    int *expect = calloc((size_t) nprocs * W, sizeof(int));
    int *order = malloc(sizeof(int) * (size_t) nprocs);
    step_t *steps = malloc(sizeof(step_t) * (size_t) (2 * nprocs));
    MPI_Win win;
    MPI_Win_create(mem, (MPI_Aint) (W * sizeof(int)), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD,
                   &win);
    take_over_counters_t pv;
    if (0 != take_over_counters_open(&win, &pv)) return test_finish();
    MPI_T_pvar_handle cma = pv.cma, taken = pv.taken, skipped = pv.skipped;
    static const double away_ms[] = { 1, 5, 20 };
    for (int round = 0; round < rounds; ++round) {
        draw_state = seed * 0x9E3779B97F4A7C15ull + (uint64_t) round * 7919u + 1u;
        for (int r = 0; r < nprocs; ++r) order[r] = r;
        for (int r = nprocs - 1; r > 0; --r) {
            int j = (int) draw((unsigned) r + 1), x = order[r];
            order[r] = order[j];
            order[j] = x;
        }
        int norig = nprocs >= 3 ? 1 + (int) draw(2) : 1;
        int ntargets = nprocs - norig;
        int nsteps = ntargets + 1 + (int) draw((unsigned) ntargets);
        int my_go_from = -1;
        for (int si = 0; si < nsteps; ++si) {
            step_t *s = &steps[si];
            /* pass 1: each target once, in order; pass 2: random targets
             * from the other origin */
            s->origin = order[(si + (si >= ntargets)) % norig];
            s->target = si < ntargets ? order[norig + si] : order[norig + (int) draw((unsigned) ntargets)];
            s->kind = (int) draw(5);
            s->n = 1 + (int) draw(MAX_RANGES);
            for (int k = 0; k < s->n; ++k) {
                s->off[k] = (int) draw(W - MAX_LEN);
                s->len[k] = 1 + (int) draw(MAX_LEN);
            }
            s->wait_us = draw(150);
            if (si < ntargets && s->target == rank) my_go_from = s->origin;
        }
        double my_away = away_ms[(unsigned) (round + rank * (rank + 1) / 2) % 3];

        MPI_Barrier(MPI_COMM_WORLD);
        if (my_go_from >= 0) {
            int go;
            MPI_Recv(&go, 1, MPI_INT, my_go_from, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            stay_away_ms(my_away);
        }
        for (int si = 0; si < nsteps; ++si) {
            const step_t *s = &steps[si];
            int me = rank == s->origin, tok = 1;
            if (me && si > 0 && steps[si - 1].origin != s->origin) {
                MPI_Recv(&tok, 1, MPI_INT, steps[si - 1].origin, 8, MPI_COMM_WORLD,
                         MPI_STATUS_IGNORE);
            }
            if (me && si < ntargets) {
                MPI_Send(&tok, 1, MPI_INT, s->target, 7, MPI_COMM_WORLD);
                stay_away_ms(s->wait_us / 1000.0);
            }
            run_step(win, s, round, si, expect);
            if (me && si + 1 < nsteps && steps[si + 1].origin != s->origin) {
                MPI_Send(&tok, 1, MPI_INT, steps[si + 1].origin, 8, MPI_COMM_WORLD);
            }
        }
        MPI_Barrier(MPI_COMM_WORLD);
        for (int i = 0; i < W; ++i) {
            if (mem[i] != expect[(size_t) rank * W + (size_t) i]) {
                CHECK(0, "round %d: mem[%d] = %#x, expected %#x", round + 1, i, mem[i],
                      expect[(size_t) rank * W + (size_t) i]);
                break;
            }
        }
    }
    /* every take-over's frame has arrived by now (the barriers above) */
    unsigned long long mine[3] = { mdq_pvar_read(taken), mdq_pvar_read(skipped),
                                   mdq_pvar_read(cma) }, all[3];
    MPI_Allreduce(mine, all, 3, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (0 == rank) {
        printf("%d rounds: %llu frames taken over, %llu skipped, %llu transfers by CMA to away "
               "targets\n", rounds, all[0], all[1], all[2]);
    }
    CHECK(all[0] == all[1], "%llu frames taken over but %llu skipped", all[0], all[1]);
    take_over_counters_close(&pv);
    MPI_Win_free(&win);
    free(steps);
    free(order);
    free(expect);
    free(mem);
    return test_finish();
}
