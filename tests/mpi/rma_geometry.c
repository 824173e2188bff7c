/*
 * Window geometry learnt on first touch, window ids on the user's
 * communicator (no duplicate):
 *  - create / allocate / allocate_shared windows whose processes give
 *    different sizes and displacement units: every process targets the
 *    last element of every other process (lock, fence and PSCW epochs) and
 *    one element past it (MPI_ERR_RMA_RANGE);
 *  - Win_shared_query of unequal segments;
 *  - a dynamic window with per-process attached regions;
 *  - windows on split communicators created in different numbers by the
 *    two halves, then a window on the parent: frames reach the right one;
 *  - the parent communicator freed before MPI_Win_free.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "one_node.h"

static int errors;

#define CHECK(cond, ...)                                                  \
    do {                                                                  \
        if (!(cond)) {                                                    \
            if (errors++ < 20) {                                          \
                fprintf(stderr, "rank %d line %d: ", rank_g, __LINE__);   \
                fprintf(stderr, __VA_ARGS__);                             \
                fputc('\n', stderr);                                      \
            }                                                             \
        }                                                                 \
    } while (0)

static int rank_g;

/* rank r's window: disp_unit 1, 4 or 8 and (r + 2) elements of 8 bytes */
static int disp_of(int r) { return (int[]) { 1, 4, 8 }[r % 3]; }
static int nelem_of(int r) { return r + 2; }
static MPI_Aint bytes_of(int r) { return (MPI_Aint) nelem_of(r) * 8; }
/* displacement of element i of rank r's window */
static MPI_Aint disp_elem(int r, int i) { return (MPI_Aint) i * 8 / disp_of(r); }

static int64_t value(int origin, int target, int round) { return 1000000 * round + 1000 * origin + target; }

static void check_last(const int64_t *mem, int me, int size, int round, const char *what)
{
    /* element nelem-1 got the put of the highest-ranked other origin; the
     * others put into element (origin % (nelem - 1)) */
    for (int o = 0; o < size; ++o) {
        if (o == me) continue;
        int slot = o % (nelem_of(me) - 1);
        int64_t want = value(o, me, round);
        int hit = 0;
        for (int o2 = 0; o2 < size; ++o2) {
            if (o2 != me && o2 > o && o2 % (nelem_of(me) - 1) == slot) hit = 1;
        }
        if (!hit) CHECK(mem[slot] == want, "%s: slot %d = %lld, want %lld", what, slot,
                        (long long) mem[slot], (long long) want);
    }
}

/* every process puts into every other one: lock/unlock, then fence, then PSCW */
static void exercise(MPI_Win win, int64_t *mem, MPI_Comm comm, const char *what)
{
    int me, size;
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &size);
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);

    memset(mem, 0, (size_t) bytes_of(me));
    MPI_Barrier(comm);
    /* round 1: passive target; ordered by origin so the highest origin wins */
    for (int turn = 0; turn < size; ++turn) {
        if (turn == me) {
            for (int t = 0; t < size; ++t) {
                if (t == me) continue;
                int64_t v = value(me, t, 1);
                MPI_Win_lock(MPI_LOCK_EXCLUSIVE, t, 0, win);
                int rc = MPI_Put(&v, 1, MPI_INT64_T, t, disp_elem(t, me % (nelem_of(t) - 1)), 1,
                                 MPI_INT64_T, win);
                CHECK(MPI_SUCCESS == rc, "%s: put to %d failed", what, t);
                /* the element just past the end of t's window */
                rc = MPI_Put(&v, 1, MPI_INT64_T, t, disp_elem(t, nelem_of(t)), 1, MPI_INT64_T, win);
                int cls = -1;
                MPI_Error_class(rc, &cls);
                CHECK(MPI_ERR_RMA_RANGE == cls, "%s: out-of-range put to %d gave class %d", what, t, cls);
                MPI_Win_unlock(t, win);
            }
        }
        MPI_Barrier(comm);
    }
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, me, 0, win);
    check_last(mem, me, size, 1, what);
    MPI_Win_unlock(me, win);

    /* round 2: fence; a get of the last element of the next process */
    int next = (me + 1) % size;
    int64_t got = -1, mark = value(me, me, 2);
    MPI_Win_fence(0, win);
    mem[nelem_of(me) - 1] = mark;
    MPI_Win_fence(0, win);
    MPI_Get(&got, 1, MPI_INT64_T, next, disp_elem(next, nelem_of(next) - 1), 1, MPI_INT64_T, win);
    MPI_Win_fence(0, win);
    CHECK(got == value(next, next, 2), "%s: fence get from %d = %lld", what, next, (long long) got);

    /* round 3: PSCW ring, a put into element 0 of the next process */
    int prev = (me + size - 1) % size;
    MPI_Group g, gn, gp;
    MPI_Win_get_group(win, &g);
    MPI_Group_incl(g, 1, &next, &gn);
    MPI_Group_incl(g, 1, &prev, &gp);
    int64_t v = value(me, next, 3);
    MPI_Win_post(gp, 0, win);
    MPI_Win_start(gn, 0, win);
    MPI_Put(&v, 1, MPI_INT64_T, next, 0, 1, MPI_INT64_T, win);
    MPI_Win_complete(win);
    MPI_Win_wait(win);
    CHECK(mem[0] == value(prev, me, 3), "%s: pscw got %lld", what, (long long) mem[0]);
    MPI_Group_free(&g);
    MPI_Group_free(&gn);
    MPI_Group_free(&gp);
}

static void test_flavors(MPI_Comm comm)
{
    int me, size;
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &size);
    MPI_Win win;
    int64_t *mem;

    mem = malloc((size_t) bytes_of(me));
    MPI_Win_create(mem, bytes_of(me), disp_of(me), MPI_INFO_NULL, comm, &win);
    exercise(win, mem, comm, "create");
    MPI_Win_free(&win);
    free(mem);

    MPI_Win_allocate(bytes_of(me), disp_of(me), MPI_INFO_NULL, comm, &mem, &win);
    exercise(win, mem, comm, "allocate");
    MPI_Win_free(&win);

    if (comm_on_one_node(comm)) {
        MPI_Win_allocate_shared(bytes_of(me), disp_of(me), MPI_INFO_NULL, comm, &mem, &win);
        exercise(win, mem, comm, "allocate_shared");
        for (int r = 0; r < size; ++r) {
            MPI_Aint qs;
            int qd;
            int64_t *qb;
            MPI_Win_shared_query(win, r, &qs, &qd, &qb);
            CHECK(qs == bytes_of(r) && qd == disp_of(r), "shared_query %d: %ld %d", r, (long) qs, qd);
            if (r > 0) {
                MPI_Aint ps;
                int pd;
                int64_t *pb;
                MPI_Win_shared_query(win, r - 1, &ps, &pd, &pb);
                CHECK((char *) pb + ps == (char *) qb, "shared_query %d: segments not contiguous", r);
            }
        }
        MPI_Win_free(&win);
    } else {
        errors += shared_window_refused(comm);
    }
}

static void test_dynamic(MPI_Comm comm)
{
    int me, size;
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &size);
    MPI_Win win;
    int n = nelem_of(me);
    int64_t *mem = calloc((size_t) n, sizeof(int64_t));
    MPI_Aint mine, *addrs = malloc(sizeof(MPI_Aint) * (size_t) size);
    MPI_Win_create_dynamic(MPI_INFO_NULL, comm, &win);
    MPI_Win_attach(win, mem, n * (MPI_Aint) sizeof(int64_t));
    MPI_Get_address(&mem[n - 1], &mine);
    MPI_Allgather(&mine, 1, MPI_AINT, addrs, 1, MPI_AINT, comm);
    int next = (me + 1) % size;
    int64_t v = value(me, next, 4);
    MPI_Win_lock_all(0, win);
    MPI_Put(&v, 1, MPI_INT64_T, next, addrs[next], 1, MPI_INT64_T, win);
    MPI_Win_unlock_all(win);
    MPI_Barrier(comm);
    int prev = (me + size - 1) % size;
    CHECK(mem[n - 1] == value(prev, me, 4), "dynamic: got %lld", (long long) mem[n - 1]);
    MPI_Win_detach(win, mem);
    MPI_Win_free(&win);
    free(addrs);
    free(mem);
}

/* the halves create different numbers of windows, so the processes' next
 * window ids diverge; a window on the parent must still get one id */
static void test_ids(MPI_Comm comm)
{
    int me, size;
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &size);
    MPI_Comm half;
    MPI_Comm_split(comm, me % 2, me, &half);
    int extra = me % 2 ? 3 : 1;
    MPI_Win keep[3];
    int64_t cells[3][2];
    for (int i = 0; i < extra; ++i) {
        MPI_Win_create(cells[i], sizeof(cells[i]), 8, MPI_INFO_NULL, half, &keep[i]);
    }
    int64_t *mem = calloc(2, sizeof(int64_t));
    MPI_Win win;
    MPI_Win_create(mem, 2 * sizeof(int64_t), 8, MPI_INFO_NULL, comm, &win);
    int next = (me + 1) % size;
    int64_t v = value(me, next, 5);
    MPI_Win_fence(0, win);
    MPI_Put(&v, 1, MPI_INT64_T, next, 1, 1, MPI_INT64_T, win);
    MPI_Win_fence(0, win);
    int prev = (me + size - 1) % size;
    CHECK(mem[1] == value(prev, me, 5), "ids: got %lld", (long long) mem[1]);
    /* and the windows of the halves still work */
    int hme, hsize;
    MPI_Comm_rank(half, &hme);
    MPI_Comm_size(half, &hsize);
    for (int i = 0; i < extra; ++i) {
        int hn = (hme + 1) % hsize;
        int64_t hv = value(hme, hn, 6 + i);
        MPI_Win_fence(0, keep[i]);
        MPI_Put(&hv, 1, MPI_INT64_T, hn, 0, 1, MPI_INT64_T, keep[i]);
        MPI_Win_fence(0, keep[i]);
        CHECK(cells[i][0] == value((hme + hsize - 1) % hsize, hme, 6 + i), "half window %d", i);
    }
    MPI_Win_free(&win);
    for (int i = 0; i < extra; ++i) MPI_Win_free(&keep[i]);
    MPI_Comm_free(&half);
    free(mem);
}

/* MPI_Comm_free of the window's communicator before MPI_Win_free */
static void test_parent_freed(MPI_Comm comm)
{
    int me, size;
    MPI_Comm dup;
    MPI_Comm_dup(comm, &dup);
    MPI_Comm_rank(dup, &me);
    MPI_Comm_size(dup, &size);
    int64_t *mem;
    MPI_Win win;
    MPI_Win_allocate(bytes_of(me), disp_of(me), MPI_INFO_NULL, dup, &mem, &win);
    MPI_Win wc;
    int64_t *cmem = calloc((size_t) nelem_of(me), sizeof(int64_t));
    MPI_Win_create(cmem, bytes_of(me), disp_of(me), MPI_INFO_NULL, dup, &wc);
    MPI_Comm_free(&dup);
    exercise(win, mem, comm, "allocate, parent freed");
    exercise(wc, cmem, comm, "create, parent freed");
    MPI_Win_free(&win);
    MPI_Win_free(&wc);
    free(cmem);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_g);
    test_flavors(MPI_COMM_WORLD);
    test_dynamic(MPI_COMM_WORLD);
    test_ids(MPI_COMM_WORLD);
    test_parent_freed(MPI_COMM_WORLD);
    int all;
    MPI_Allreduce(&errors, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (0 == rank_g) {
        if (all) printf("Found %d errors\n", all);
        else printf("No Errors\n");
    }
    MPI_Finalize();
    return all ? 1 : 0;
}
