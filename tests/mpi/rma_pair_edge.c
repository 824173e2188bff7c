/*
 * Accumulates of pair types (MPI_DOUBLE_INT: 12 bytes of data in an extent
 * of 16) whose last element ends a window, where the next page is not
 * mapped: the element's trailing padding lies outside the window, so no
 * access may touch it. osc/nbe once moved whole extents: a get_accumulate
 * of the last element crashed the target (it copied 16 bytes), an
 * accumulate applied by the origin over CMA (target away from MPI) failed
 * in its last 64 KiB piece and failed the window, and on a dynamic window
 * an element attached as exactly 12 bytes was refused. Also checked: the
 * memory after the window's data is never written (an origin's CMA
 * read-modify-write once wrote stale bytes back there).
 *
 * Lock and fence epochs, the last element alone and the whole window (more
 * than 64 KiB), every rank's right neighbour (itself at np 1); then the
 * same element on a dynamic window whose attached region is exactly its 12
 * bytes, and a self access through a strided type whose hole is not
 * attached (only the bytes a type map touches need be); last, MPI_SHORT_INT
 * accumulates applied in place through a derived target type.
 */
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "pt2pt_common.h"

#define N 5000   /* 5000 pairs: 80 000 bytes of extent, above 64 KiB */

typedef struct {
    double v;
    int i;
} dint_t;   /* MPI_DOUBLE_INT's layout: 12 bytes of data, extent 16 */

#define PAIR_BYTES (sizeof(double) + sizeof(int))

/* bytes [0, len) that end where an inaccessible page begins */
static char *before_guard(size_t len, char **map, size_t *maplen)
{
    size_t page = (size_t) sysconf(_SC_PAGESIZE);
    size_t body = (len + page - 1) / page * page;
    *maplen = body + page;
    *map = mmap(NULL, *maplen, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (MAP_FAILED == *map) {
        perror("mmap");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    mprotect(*map + body, page, PROT_NONE);
    return *map + body - len;
}

static void check_elem(const char *w, int k, double v, int i, const char *what)
{
    dint_t got;
    memcpy(&got, w + (size_t) k * sizeof(dint_t), PAIR_BYTES);
    CHECK(got.v == v && got.i == i, "%s: element %d is (%g,%d), want (%g,%d)", what, k, got.v,
          got.i, v, i);
}

static void window_of_pairs(int lock)
{
    size_t wsz = (N - 1) * sizeof(dint_t) + PAIR_BYTES, maplen;
    char *map, *w = before_guard(wsz, &map, &maplen);
    int right = (rank + 1) % nprocs, left = (rank + nprocs - 1) % nprocs;
    const char *mode = lock ? "lock" : "fence";
    for (int k = 0; k < N; ++k) {
        dint_t e = { (double) k, rank };
        memcpy(w + (size_t) k * sizeof(dint_t), &e, k == N - 1 ? PAIR_BYTES : sizeof(e));
    }
    MPI_Win win;
    MPI_Win_create(w, (MPI_Aint) wsz, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    MPI_Aint last = (MPI_Aint) ((N - 1) * sizeof(dint_t));

    /* the last element: fetched, then raised by MAXLOC */
    dint_t got = { -1, -1 }, big = { 1e9, 1000 + rank };
    if (lock) MPI_Win_lock(MPI_LOCK_SHARED, right, 0, win);
    else MPI_Win_fence(0, win);
    expect_class(MPI_Get_accumulate(NULL, 0, MPI_DOUBLE_INT, &got, 1, MPI_DOUBLE_INT, right, last,
                                    1, MPI_DOUBLE_INT, MPI_NO_OP, win),
                 MPI_SUCCESS, "get_accumulate of the last pair");
    expect_class(lock ? MPI_Win_flush(right, win) : MPI_Win_fence(0, win), MPI_SUCCESS,
                 "completing the get_accumulate");
    CHECK(got.v == N - 1 && got.i == right, "%s: fetched (%g,%d), want (%d,%d)", mode, got.v,
          got.i, N - 1, right);
    expect_class(MPI_Accumulate(&big, 1, MPI_DOUBLE_INT, right, last, 1, MPI_DOUBLE_INT, MPI_MAXLOC,
                                win),
                 MPI_SUCCESS, "accumulate to the last pair");
    expect_class(lock ? MPI_Win_unlock(right, win) : MPI_Win_fence(0, win), MPI_SUCCESS,
                 "closing the epoch");
    MPI_Barrier(MPI_COMM_WORLD);
    check_elem(w, N - 1, 1e9, 1000 + left, mode);

    /* the whole window at once: each element's value plus 0.5, MAXLOC */
    dint_t *all = malloc(N * sizeof(dint_t));
    for (int k = 0; k < N; ++k) {
        all[k].v = k + 0.5;
        all[k].i = 2000 + rank;
    }
    if (lock) MPI_Win_lock(MPI_LOCK_SHARED, right, 0, win);
    else MPI_Win_fence(0, win);
    expect_class(MPI_Accumulate(all, N, MPI_DOUBLE_INT, right, 0, N, MPI_DOUBLE_INT, MPI_MAXLOC, win),
                 MPI_SUCCESS, "accumulate of the whole window");
    expect_class(lock ? MPI_Win_unlock(right, win) : MPI_Win_fence(0, win), MPI_SUCCESS,
                 "closing the epoch");
    MPI_Barrier(MPI_COMM_WORLD);
    for (int k = 0; k < N - 1; ++k) check_elem(w, k, k + 0.5, 2000 + left, mode);
    check_elem(w, N - 1, 1e9, 1000 + left, mode);
    /* padding after element k < N - 1 is the window's; the target may have
     * it or not, but nothing after the window's last byte was touched: the
     * guard page would have faulted */
    MPI_Win_free(&win);
    free(all);
    munmap(map, maplen);
}

static void dynamic_window(void)
{
    int right = (rank + 1) % nprocs, left = (rank + nprocs - 1) % nprocs;
    size_t maplen;
    char *map, *pair = before_guard(PAIR_BYTES, &map, &maplen);
    dint_t mine = { 10.0 + rank, rank };
    memcpy(pair, &mine, PAIR_BYTES);
    static int gap[12];   /* ints 0-3 and 8-11 attached, 4-7 not */
    for (int i = 0; i < 12; ++i) gap[i] = -1;
    MPI_Win win;
    MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    MPI_Win_attach(win, pair, PAIR_BYTES);
    MPI_Win_attach(win, gap, 4 * sizeof(int));
    MPI_Win_attach(win, gap + 8, 4 * sizeof(int));
    MPI_Aint mine_addr[2], *all = malloc(2 * (size_t) nprocs * sizeof(MPI_Aint));
    MPI_Get_address(pair, &mine_addr[0]);
    MPI_Get_address(gap, &mine_addr[1]);
    MPI_Allgather(mine_addr, 2, MPI_AINT, all, 2, MPI_AINT, MPI_COMM_WORLD);

    dint_t got = { -1, -1 }, big = { 1e9, 100 + rank };
    MPI_Win_lock(MPI_LOCK_SHARED, right, 0, win);
    expect_class(MPI_Get_accumulate(NULL, 0, MPI_DOUBLE_INT, &got, 1, MPI_DOUBLE_INT, right,
                                    all[2 * right], 1, MPI_DOUBLE_INT, MPI_NO_OP, win),
                 MPI_SUCCESS, "dynamic: get_accumulate of a 12-byte region");
    expect_class(MPI_Accumulate(&big, 1, MPI_DOUBLE_INT, right, all[2 * right], 1, MPI_DOUBLE_INT,
                                MPI_MAXLOC, win),
                 MPI_SUCCESS, "dynamic: accumulate to a 12-byte region");
    expect_class(MPI_Win_unlock(right, win), MPI_SUCCESS, "dynamic: unlock");
    CHECK(got.v == 10.0 + right && got.i == right, "dynamic: fetched (%g,%d), want (%g,%d)", got.v,
          got.i, 10.0 + right, right);
    MPI_Barrier(MPI_COMM_WORLD);
    check_elem(pair, 0, 1e9, 100 + left, "dynamic");

    /* two blocks of four ints, eight apart: to the right neighbour and to
     * this process itself (checked here, before any message) */
    MPI_Datatype blocks;
    MPI_Type_vector(2, 4, 8, MPI_INT, &blocks);
    MPI_Type_commit(&blocks);
    int vals[8];
    for (int i = 0; i < 8; ++i) vals[i] = 1000 * rank + i;
    int targets[2] = { right, rank };
    for (int t = 0; t < 2; ++t) {
        MPI_Win_lock(MPI_LOCK_SHARED, targets[t], 0, win);
        expect_class(MPI_Put(vals, 8, MPI_INT, targets[t], all[2 * targets[t] + 1], 1, blocks, win),
                     MPI_SUCCESS, t ? "dynamic: strided put to self" : "dynamic: strided put");
        expect_class(MPI_Win_unlock(targets[t], win), MPI_SUCCESS, "dynamic: unlock");
        MPI_Barrier(MPI_COMM_WORLD);
        int from = t ? rank : left;
        for (int i = 0; i < 12; ++i) {
            int want = i < 4 ? 1000 * from + i : i >= 8 ? 1000 * from + i - 4 : -1;
            CHECK(gap[i] == want, "dynamic: gap[%d] = %d, want %d (put %s)", i, gap[i], want,
                  t ? "to self" : "from the left");
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }
    MPI_Type_free(&blocks);
    MPI_Win_detach(win, gap + 8);
    MPI_Win_detach(win, gap);
    MPI_Win_detach(win, pair);
    MPI_Win_free(&win);
    free(all);
    munmap(map, maplen);
}

/* MPI_SHORT_INT (a short, two bytes of padding, an int) through a derived
 * target type, applied in place: to this process itself on a created
 * window, to the right neighbour on an allocated one (shared memory on one
 * node). Open MPI's segment-wise reduction skipped it (pieces smaller than
 * an element): the window stayed unchanged. osc/rdma still does that:
 * `mpirun -np 2 --mca pml ob1 --mca osc rdma tests/mpi/rma_pair_edge` (in
 * the build tree) reports these two checks. */
typedef struct {
    short v;
    int i;
} sint_t;

static void short_int_in_place(void)
{
    int right = (rank + 1) % nprocs, left = (rank + nprocs - 1) % nprocs;
    MPI_Datatype two;
    MPI_Type_contiguous(2, MPI_SHORT_INT, &two);
    MPI_Type_commit(&two);
    for (int alloc = 0; alloc < 2; ++alloc) {
        sint_t *w, mine[2];
        MPI_Win win;
        if (alloc) {
            MPI_Win_allocate(2 * sizeof(sint_t), 1, MPI_INFO_NULL, MPI_COMM_WORLD, &w, &win);
        } else {
            w = mine;
            MPI_Win_create(w, sizeof(mine), 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win);
        }
        int target = alloc ? right : rank, from = alloc ? left : rank;
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, win);
        w[0].v = 5;
        w[0].i = 0;
        w[1].v = 1;
        w[1].i = 1;
        MPI_Win_unlock(rank, win);
        MPI_Barrier(MPI_COMM_WORLD);
        sint_t in[2] = { { 3, 10 + rank }, { 4, 20 + rank } };
        MPI_Win_lock(MPI_LOCK_SHARED, target, 0, win);
        expect_class(MPI_Accumulate(in, 2, MPI_SHORT_INT, target, 0, 1, two, MPI_MINLOC, win),
                     MPI_SUCCESS, "MINLOC of MPI_SHORT_INT through a derived type");
        MPI_Win_unlock(target, win);
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, win);
        CHECK(w[0].v == 3 && w[0].i == 10 + from && w[1].v == 1 && w[1].i == 1,
              "%s window: MPI_SHORT_INT MINLOC in place gave {%d,%d} {%d,%d}, want {3,%d} {1,1}",
              alloc ? "allocated" : "created", w[0].v, w[0].i, w[1].v, w[1].i, 10 + from);
        MPI_Win_unlock(rank, win);
        MPI_Win_free(&win);
    }
    MPI_Type_free(&two);
}

int main(int argc, char **argv)
{
    test_init(&argc, &argv);
    window_of_pairs(1);
    window_of_pairs(0);
    dynamic_window();
    short_int_in_place();
    return test_finish();
}
