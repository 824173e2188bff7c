/*
 * Target datatypes with a negative extent: count elements lie below the
 * first one, so an access at displacement d with count c touches
 * [d - (c - 1), d] (in ints here). In range, puts, gets and accumulates
 * land reversed and read back in order, small and RDMA-sized, on create,
 * allocate and dynamic windows, in fence and lock epochs. Past the start
 * of the window (or of the attached region) the access is refused with
 * MPI_ERR_RMA_RANGE, by the call (create, allocate) or by the epoch's
 * synchronization (dynamic, a remote target checks its regions), and the
 * memory next to the window is unchanged: the range check once took the
 * first element's address as the lowest, and an accumulate below the
 * window's start was applied there. Create and allocate windows refuse
 * such an access whole; a dynamic window may have applied its pieces
 * that are inside the attached region.
 */
#include "pt2pt_common.h"

#define GUARD 64                /* ints below and above the window's memory */
#define NMAX (16 * 1024)        /* ints: 64 KiB, above the RDMA thresholds */
#define GUARD_VAL (-7)

static const int counts[] = { 3, 1000, NMAX };

static int sync_open(MPI_Win win, int lock, int target)
{
    return lock ? MPI_Win_lock(MPI_LOCK_EXCLUSIVE, target, 0, win) : MPI_Win_fence(0, win);
}

static int sync_close(MPI_Win win, int lock, int target)
{
    return lock ? MPI_Win_unlock(target, win) : MPI_Win_fence(0, win);
}

static const char *const flavor_names[] = { "create", "allocate", "dynamic" };

/* this rank's window as its left neighbour left it: 2 x the neighbour's
 * src reversed in the first n ints, the rest untouched */
static void check_window(MPI_Win win, const int *wmem, int n, int left, const char *fl, int lock,
                         const char *when)
{
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, win);
    int bad = -1;
    for (int i = 0; i < NMAX && bad < 0; ++i) {
        int want = i < n ? 2 * (1000 * left + n - 1 - i) : -1;
        if (wmem[i] != want) bad = i;
    }
    CHECK(bad < 0, "%s %s, %d ints: window int %d = %d %s", fl, lock ? "lock" : "fence", n, bad,
          bad < 0 ? 0 : wmem[bad], when);
    MPI_Win_unlock(rank, win);
    /* the next accesses may not come first: a neighbour's lock epoch can
     * legally be granted before this one */
    MPI_Barrier(MPI_COMM_WORLD);
}

static void run(int flavor, int lock, MPI_Datatype down)
{
    int right = (rank + 1) % nprocs, left = (rank + nprocs - 1) % nprocs;
    int *mem = NULL, *wmem, *src = malloc(NMAX * sizeof(int)), *got = malloc(NMAX * sizeof(int));
    MPI_Aint base = 0, right_base = 0;
    MPI_Win win;
    const char *fl = flavor_names[flavor];

    if (1 == flavor) {
        /* the window's own memory; its guards are the other ranks' bytes,
         * checked through the window below */
        MPI_Win_allocate((MPI_Aint) NMAX * sizeof(int), sizeof(int), MPI_INFO_NULL,
                         MPI_COMM_WORLD, &wmem, &win);
    } else {
        mem = malloc((NMAX + 2 * GUARD) * sizeof(int));
        wmem = mem + GUARD;
        if (0 == flavor) {
            MPI_Win_create(wmem, (MPI_Aint) NMAX * sizeof(int), sizeof(int), MPI_INFO_NULL,
                           MPI_COMM_WORLD, &win);
        } else {
            MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win);
            MPI_Win_attach(win, wmem, (MPI_Aint) NMAX * sizeof(int));
        }
    }
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    if (2 == flavor) {
        MPI_Get_address(wmem, &base);
        MPI_Sendrecv(&base, 1, MPI_AINT, left, 0, &right_base, 1, MPI_AINT, right, 0,
                     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    /* displacement of int i of the right neighbour's window */
#define DISP(i) (2 == flavor ? right_base + (MPI_Aint) (i) * (MPI_Aint) sizeof(int) : (MPI_Aint) (i))

    for (size_t k = 0; k < sizeof(counts) / sizeof(counts[0]); ++k) {
        int n = counts[k];
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, win);
        for (int i = 0; i < NMAX; ++i) wmem[i] = -1;
        MPI_Win_unlock(rank, win);
        if (NULL != mem) {
            for (int i = 0; i < GUARD; ++i) mem[i] = mem[GUARD + NMAX + i] = GUARD_VAL;
        }
        for (int i = 0; i < n; ++i) src[i] = 1000 * rank + i;
        MPI_Barrier(MPI_COMM_WORLD);

        /* put: src[i] lands at int n-1-i */
        sync_open(win, lock, right);
        expect_class(MPI_Put(src, n, MPI_INT, right, DISP(n - 1), n, down, win), MPI_SUCCESS,
                     "put in range");
        expect_class(sync_close(win, lock, right), MPI_SUCCESS, "sync after put in range");
        /* accumulate: adds src again, the same way */
        sync_open(win, lock, right);
        expect_class(MPI_Accumulate(src, n, MPI_INT, right, DISP(n - 1), n, down, MPI_SUM, win),
                     MPI_SUCCESS, "accumulate in range");
        expect_class(sync_close(win, lock, right), MPI_SUCCESS, "sync after accumulate");
        /* get back in order */
        memset(got, 0, NMAX * sizeof(int));
        sync_open(win, lock, right);
        expect_class(MPI_Get(got, n, MPI_INT, right, DISP(n - 1), n, down, win), MPI_SUCCESS,
                     "get in range");
        expect_class(sync_close(win, lock, right), MPI_SUCCESS, "sync after get");
        int bad = -1;
        for (int i = 0; i < n && bad < 0; ++i) {
            if (got[i] != 2 * src[i]) bad = i;
        }
        CHECK(bad < 0, "%s %s, %d ints: got[%d] = %d, want %d", fl, lock ? "lock" : "fence", n,
              bad, bad < 0 ? 0 : got[bad], bad < 0 ? 0 : 2 * src[bad]);

        check_window(win, wmem, n, left, fl, lock, "");

        /* one int past the start of the window: refused */
        int reported = 0;
        const char *ops[] = { "put", "accumulate", "get" };
        /* (in a fence epoch a remote refusal may come with the next fence) */
        for (int o = 0; o < 3; ++o) {
            reported += range_err(sync_open(win, lock, right), "sync before refused access");
            int rc = 0 == o ? MPI_Put(src, n, MPI_INT, right, DISP(n - 2), n, down, win)
                   : 1 == o ? MPI_Accumulate(src, n, MPI_INT, right, DISP(n - 2), n, down,
                                             MPI_SUM, win)
                            : MPI_Get(got, n, MPI_INT, right, DISP(n - 2), n, down, win);
            reported += range_err(rc, ops[o]);
            reported += range_err(sync_close(win, lock, right), "sync after refused access");
        }
        if (!lock) reported += range_err(MPI_Win_fence(0, win), "fence after refused accesses");
        CHECK(3 == reported, "%s %s, %d ints: MPI_ERR_RMA_RANGE reported %d times for 3 accesses "
              "below the window", fl, lock ? "lock" : "fence", n, reported);

        /* a refused access to a dynamic window may have been applied in
         * the parts that are inside the attached region (the target checks
         * each piece as it comes): not the others */
        if (2 != flavor) check_window(win, wmem, n, left, fl, lock, "after the refused accesses");
        MPI_Barrier(MPI_COMM_WORLD);
        if (NULL != mem) {
            for (int i = 0; i < GUARD; ++i) {
                CHECK(GUARD_VAL == mem[i] && GUARD_VAL == mem[GUARD + NMAX + i],
                      "%s %s, %d ints: memory next to the window changed (%d below, %d above)",
                      fl, lock ? "lock" : "fence", n, mem[i], mem[GUARD + NMAX + i]);
            }
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }
#undef DISP
    if (2 == flavor) MPI_Win_detach(win, wmem);
    MPI_Win_free(&win);
    free(mem);
    free(src);
    free(got);
}

int main(int argc, char **argv)
{
    test_init(&argc, &argv);
    MPI_Datatype down;
    MPI_Type_create_resized(MPI_INT, 0, -(MPI_Aint) sizeof(int), &down);
    MPI_Type_commit(&down);
    for (int flavor = 0; flavor < 3; ++flavor) {
        for (int lock = 0; lock < 2; ++lock) run(flavor, lock, down);
    }
    MPI_Type_free(&down);
    return test_finish();
}
