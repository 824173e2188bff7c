/*
 * osc/nbe with origin buffers and target locations at every kind of
 * page-offset distance (osc_nbe_copy_guard): puts and gets of 3000 B to
 * 300 KB at target displacements 0, 1, 16, 63, 64 and 4080 bytes, in
 * fence, lock and lock_all + flush epochs, on create and allocate windows;
 * every byte is checked, and the bytes around each target range must stay
 * untouched. On create windows (page-aligned, as the origin buffer) a put
 * copies that many bytes past its source, a get 4096 minus that; an
 * allocate window on one node starts where the shared segment puts this
 * rank's part, so the distances there are others.
 *
 * COPY_GUARD_EXPECT=on: where the ranks get and put by vader's CMA
 * (pvar osc_nbe_rdma_local_complete moves), every passive-target transfer
 * of a create window that goes by RDMA (from osc_nbe_rdma_threshold,
 * 16 KiB by default) at a short distance is staged through a bounce buffer
 * (osc_nbe_rdma_bounced counts them exactly); off: never.
 * COPY_GUARD_SLOW_FIRST=1 makes the first RDMA transfer such a one.
 * The 3000 B transfers of passive epochs are active messages, unless the
 * target looked away from MPI (osc_nbe_target_away: descheduled where the
 * processes share cores); those go by RDMA, and at a short distance
 * bounce too: pvar osc_nbe_rdma_target_away bounds how many more.
 */
#include "mdq_pvar.h"

#define WINSIZE (300000 + 8192)
#define RDMA_MIN 16384 /* osc_nbe_rdma_threshold and _get_threshold defaults */
#define ORIGIN (300000 + 4096)
#define PATTERN_BYTE 0x5A

static const size_t sizes[] = {3000, 20000, 100000, 300000};
static const MPI_Aint disps[] = {0, 1, 16, 63, 64, 4080};
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))
#define NDISPS (sizeof(disps) / sizeof(disps[0]))

enum { SYNC_FENCE, SYNC_LOCK, SYNC_FLUSH, NSYNC };
static const char *sync_name[] = {"fence", "lock", "flush"};

static void epoch_begin(int sync, MPI_Win win, int target)
{
    if (SYNC_FENCE == sync) MPI_Win_fence(MPI_MODE_NOPRECEDE, win);
    else if (SYNC_LOCK == sync) MPI_Win_lock(MPI_LOCK_EXCLUSIVE, target, 0, win);
    else MPI_Win_lock_all(0, win);
}

static void epoch_end(int sync, MPI_Win win, int target)
{
    if (SYNC_FENCE == sync) {
        MPI_Win_fence(MPI_MODE_NOSUCCEED, win);
    } else if (SYNC_LOCK == sync) {
        MPI_Win_unlock(target, win);
    } else {
        MPI_Win_flush(target, win);
        MPI_Win_unlock_all(win);
    }
}

/* the even rank of each pair moves n bytes between origin and its partner's
 * window at disp (every rank takes part in a fence) */
static void transfer(int sync, MPI_Win win, int put, unsigned char *origin, size_t n,
                     MPI_Aint disp)
{
    int peer = rank ^ 1;
    int moves = peer < nprocs && 0 == (rank & 1);
    if (SYNC_FENCE != sync && !moves) return;
    epoch_begin(sync, win, peer);
    if (moves && put) MPI_Put(origin, (int) n, MPI_BYTE, peer, disp, (int) n, MPI_BYTE, win);
    if (moves && !put) MPI_Get(origin, (int) n, MPI_BYTE, peer, disp, (int) n, MPI_BYTE, win);
    epoch_end(sync, win, peer);
}

/* this rank's window memory seen under an exclusive self-lock */
static void local_access(MPI_Win win, int lock)
{
    if (lock) MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, win);
    else MPI_Win_unlock(rank, win);
}

static void one_case(MPI_Win win, unsigned char *base, unsigned char *origin, int sync,
                     size_t n, MPI_Aint disp, int seed)
{
    int peer = rank ^ 1;
    int active = peer < nprocs;

    /* put: rank 0 (and 2, ...) into its partner at disp */
    local_access(win, 1);
    memset(base, PATTERN_BYTE, WINSIZE);
    local_access(win, 0);
    fill(origin, n, seed);
    MPI_Barrier(MPI_COMM_WORLD);
    transfer(sync, win, 1, origin, n, disp);
    MPI_Barrier(MPI_COMM_WORLD);
    if (active && 1 == (rank & 1)) {
        local_access(win, 1);
        size_t bad = verify(base + disp, n, seed);
        CHECK(0 == bad, "%s put %zu at disp %ld: byte %zu differs", sync_name[sync], n,
              (long) disp, bad - 1);
        for (MPI_Aint i = 0; i < disp; i++) {
            if (PATTERN_BYTE != base[i]) {
                CHECK(0, "%s put %zu at disp %ld: byte %ld before it changed", sync_name[sync], n,
                      (long) disp, (long) i);
                break;
            }
        }
        for (size_t i = disp + n; i < WINSIZE; i++) {
            if (PATTERN_BYTE != base[i]) {
                CHECK(0, "%s put %zu at disp %ld: byte %zu after it changed", sync_name[sync], n,
                      (long) disp, i);
                break;
            }
        }
        local_access(win, 0);
    }

    /* get: the same ranks read back what they wrote, into a cleared origin */
    memset(origin, 0, ORIGIN);
    MPI_Barrier(MPI_COMM_WORLD);
    transfer(sync, win, 0, origin, n, disp);
    if (active && 0 == (rank & 1)) {
        size_t bad = verify(origin, n, seed);
        CHECK(0 == bad, "%s get %zu at disp %ld: byte %zu differs", sync_name[sync], n,
              (long) disp, bad - 1);
        for (size_t i = n; i < ORIGIN; i++) {
            if (0 != origin[i]) {
                CHECK(0, "%s get %zu at disp %ld: origin byte %zu changed", sync_name[sync], n,
                      (long) disp, i);
                break;
            }
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

static int short_distance(MPI_Aint d)
{
    return d % 4096 >= 1 && d % 4096 <= 63;
}

/* transfers the guard stages: passive epochs, create window, by RDMA */
static unsigned long long expected_bounces(void)
{
    unsigned long long n = 0;
    for (size_t k = 0; k < NSIZES; k++) {
        for (size_t j = 0; j < NDISPS && sizes[k] >= RDMA_MIN; j++) {
            /* lock and flush; the put at disp, the get at 4096 - disp */
            n += 2 * (short_distance(disps[j]) + short_distance(4096 - disps[j]));
        }
    }
    return n * (unsigned long long) (nprocs / 2);
}

static void run_window(int allocate, int *seed)
{
    MPI_Win win;
    unsigned char *base = NULL, *origin = NULL;
    if (0 != posix_memalign((void **) &origin, 4096, ORIGIN)) MPI_Abort(MPI_COMM_WORLD, 2);
    if (allocate) {
        MPI_Win_allocate(WINSIZE, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
    } else {
        if (0 != posix_memalign((void **) &base, 4096, WINSIZE)) MPI_Abort(MPI_COMM_WORLD, 2);
        MPI_Win_create(base, WINSIZE, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    }
    /* COPY_GUARD_SLOW_FIRST: passive epochs first and displacement 1 first,
     * so that the process's first RDMA transfer is a passive one at a short
     * distance (before any transfer showed vader completing in the call) */
    const char *first = getenv("COPY_GUARD_SLOW_FIRST");
    int slow_first = NULL != first && 0 != atoi(first);
    static const int passive_first[NSYNC] = {SYNC_LOCK, SYNC_FLUSH, SYNC_FENCE};
    for (int s = 0; s < NSYNC; s++) {
        int sync = slow_first ? passive_first[s] : s;
        for (size_t k = 0; k < NSIZES; k++) {
            for (size_t j = 0; j < NDISPS; j++) {
                MPI_Aint disp = disps[(j + (slow_first ? 1 : 0)) % NDISPS];
                one_case(win, base, origin, sync, sizes[k], disp, (*seed)++);
            }
        }
    }
    MPI_Win_free(&win);
    if (!allocate) free(base);
    free(origin);
}

int main(int argc, char **argv)
{
    MPI_T_pvar_handle bounced, cma, away;
    const char *expect = getenv("COPY_GUARD_EXPECT");
    unsigned long long b0, c0, a0, b, c, a, all_b, all_c, all_a;
    int seed = 1;

    test_init(&argc, &argv);
    mdq_pvar_init();
    if (mdq_pvar_find("osc_nbe_rdma_bounced", &bounced)
        || mdq_pvar_find("osc_nbe_rdma_local_complete", &cma)
        || mdq_pvar_find("osc_nbe_rdma_target_away", &away)) {
        return test_finish();
    }
    b0 = mdq_pvar_read(bounced);
    c0 = mdq_pvar_read(cma);
    a0 = mdq_pvar_read(away);
    run_window(0, &seed);
    run_window(1, &seed);
    b = mdq_pvar_read(bounced) - b0;
    c = mdq_pvar_read(cma) - c0;
    a = mdq_pvar_read(away) - a0;
    MPI_Allreduce(&b, &all_b, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(&c, &all_c, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(&a, &all_a, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (0 == rank) {
        printf("bounced %llu, single copies complete at the origin %llu, small transfers by "
               "RDMA to a target away %llu (all ranks)\n", all_b, all_c, all_a);
    }
    if (NULL != expect && 0 == strcmp(expect, "off")) {
        CHECK(0 == all_b, "guard off: %llu transfers bounced", all_b);
    } else if (NULL != expect && 0 == strcmp(expect, "on") && all_c > 0) {
        unsigned long long least = expected_bounces();
        CHECK(all_b >= least && all_b <= least + all_a,
              "guard on: %llu transfers bounced, expected %llu (and up to %llu more small "
              "transfers to a target away from MPI)", all_b, least, all_a);
    }
    mdq_pvar_fini();
    return test_finish();
}
