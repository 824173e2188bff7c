/*
 * RMA calls whose two sides describe different amounts of data. MPI moves
 * RMA data as if the side it comes from sent it and the other received it:
 *  - short: the receiving side describes more than comes (a put or
 *    accumulate to a larger target, a get into a larger origin buffer, a
 *    get_accumulate's larger result buffer): the data that comes lands at
 *    the start of the receiving side, the rest stays as it was;
 *  - truncated: the receiving side describes less: MPI_ERR_TRUNCATE from
 *    the call, nothing moves, the window stays usable;
 *  - ending inside an element: a short message may end inside an element
 *    of the receiving type, as a receive may; what comes fills that
 *    element's first basic elements (an int of a two-int strided type, the
 *    third of three double-int pairs described by a type of two pairs),
 *    the rest stays. osc/nbe refused these before.
 * A get into a larger origin buffer once hung its epoch (the origin waited
 * for bytes that never came), a put to a smaller target wrote past the
 * target's description, and an accumulate to a larger target read past
 * the origin's. Small and RDMA-sized, contiguous and strided target types,
 * fence and lock epochs, create and allocate windows, every rank's right
 * neighbour (itself at np 1).
 */
#include <stdbool.h>
#include <stddef.h>

#include "pt2pt_common.h"

#define WIN_INTS (4 * 8192)
#define MAXN 8192   /* 32 KiB, above the RDMA thresholds */

static const int sizes[] = { 3, MAXN };
static int *wmem;
static MPI_Win win;
static int right, left, lock;
static MPI_Datatype strided;   /* one int in two */
static MPI_Datatype spaced;    /* two ints three apart, extent six ints */
static MPI_Datatype di_pair;   /* two MPI_DOUBLE_INT */

static void open_epoch(void)
{
    if (lock) MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, win);
    else MPI_Win_fence(0, win);
}

static void close_epoch(const char *what)
{
    expect_class(lock ? MPI_Win_unlock(right, win) : MPI_Win_fence(0, win), MPI_SUCCESS, what);
}

/* this rank's window: ints [0, WIN_INTS) set to 100000 * rank + i */
static void reset_window(void)
{
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, win);
    for (int i = 0; i < WIN_INTS; ++i) wmem[i] = 100000 * rank + i;
    MPI_Win_unlock(rank, win);
    MPI_Barrier(MPI_COMM_WORLD);
}

static int initial(int owner, int i)
{
    return 100000 * owner + i;
}

/* after the neighbours' accesses: int i of this rank's window should be
 * want(i) (every int checked) */
static void check_window(int (*want)(int i, int n), int n, const char *what)
{
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, win);
    int bad = -1;
    for (int i = 0; i < WIN_INTS && bad < 0; ++i) {
        if (wmem[i] != want(i, n)) bad = i;
    }
    CHECK(bad < 0, "%s, %s, n %d: window int %d = %d, want %d", what, lock ? "lock" : "fence", n,
          bad, bad < 0 ? 0 : wmem[bad], bad < 0 ? 0 : want(bad, n));
    MPI_Win_unlock(rank, win);
    MPI_Barrier(MPI_COMM_WORLD);
}

static int src_val(int owner, int i)
{
    return 7 * owner + 3 * i + 1;
}

/* n ints put where 2n were described (contiguous): the first n changed */
static int want_short_put(int i, int n)
{
    return i < n ? src_val(left, i) : initial(rank, i);
}

/* n ints accumulated (sum) over the first n of a strided description of 2n */
static int want_short_acc_strided(int i, int n)
{
    return i < 2 * n && 0 == i % 2 ? initial(rank, i) + src_val(left, i / 2) : initial(rank, i);
}

static int want_unchanged(int i, int n)
{
    (void) n;
    return initial(rank, i);
}

/* m (odd) ints sent where spaced elements take them: ints 0, 3, 6, ...
 * of the receiving side */
static bool spaced_slot(int i, int m)
{
    return 0 == i % 3 && i / 3 < m;
}

static int want_spaced_put(int i, int m)
{
    return spaced_slot(i, m) ? src_val(left, i / 3) : initial(rank, i);
}

static int want_spaced_acc(int i, int m)
{
    return spaced_slot(i, m) ? initial(rank, i) + src_val(left, i / 3) : initial(rank, i);
}

typedef struct {
    double d;
    int i;
} di_t;

static void di_values(int owner, di_t *v)
{
    for (int k = 0; k < 3; ++k) {
        v[k].d = 0.5 + owner + k;
        v[k].i = 10 * owner + k;
    }
}

/* three double-int pairs stored by left at the window's start: the data
 * of each, not the padding after it */
static int want_di(int i, int n)
{
    (void) n;
    di_t v[3];
    di_values(left, v);
    int w = initial(rank, i);
    size_t off = (size_t) i * sizeof(int);
    if (off >= 3 * sizeof(di_t)) return w;
    size_t k = off / sizeof(di_t), in = off % sizeof(di_t);
    if (in < sizeof(double)) memcpy(&w, (char *) &v[k].d + in, sizeof(int));
    else if (in == offsetof(di_t, i)) w = v[k].i;
    return w;
}

/* short messages that end inside an element of the receiving type */
static void run_mid_element(int n, const int *src, int *buf)
{
    int m = n % 2 ? n : n - 1, elems = (m + 1) / 2 + 1;

    reset_window();
    open_epoch();
    expect_class(MPI_Put(src, m, MPI_INT, right, 0, elems, spaced, win), MPI_SUCCESS,
                 "put ending inside an element");
    close_epoch("epoch of a put ending inside an element");
    check_window(want_spaced_put, m, "put ending inside an element");

    reset_window();
    open_epoch();
    expect_class(MPI_Accumulate(src, m, MPI_INT, right, 0, elems, spaced, MPI_SUM, win),
                 MPI_SUCCESS, "accumulate ending inside an element");
    close_epoch("epoch of an accumulate ending inside an element");
    check_window(want_spaced_acc, m, "accumulate ending inside an element");

    /* get and get_accumulate: the origin's (result's) spaced elements */
    reset_window();
    for (int gacc = 0; gacc < 2; ++gacc) {
        for (int i = 0; i < 3 * m + 3; ++i) buf[i] = -3;
        open_epoch();
        int rc = gacc ? MPI_Get_accumulate(src, m, MPI_INT, buf, elems, spaced, right, 0, m,
                                           MPI_INT, MPI_NO_OP, win)
                      : MPI_Get(buf, elems, spaced, right, 0, m, MPI_INT, win);
        expect_class(rc, MPI_SUCCESS, gacc ? "get_accumulate into a result ending inside an element"
                                           : "get ending inside an element");
        close_epoch("epoch of a get ending inside an element");
        int bad = -1;
        for (int i = 0; i < 3 * m + 3 && bad < 0; ++i) {
            if (buf[i] != (spaced_slot(i, m) ? initial(right, i / 3) : -3)) bad = i;
        }
        CHECK(bad < 0, "%s ending inside an element, %s, m %d: int %d = %d",
              gacc ? "get_accumulate" : "get", lock ? "lock" : "fence", m, bad,
              bad < 0 ? 0 : buf[bad]);
    }

    /* double-int pairs (data and padding differ: each pair its own piece);
     * the last case ends on an element, and checks that MPI_REPLACE leaves
     * the padding alone */
    static const char *pair_case[] = { "pair put ending inside an element",
                                       "pair accumulate ending inside an element",
                                       "pair accumulate (replace)" };
    di_t v[3];
    di_values(rank, v);
    for (int c = 0; c < 3; ++c) {
        reset_window();
        open_epoch();
        int rc = 0 == c ? MPI_Put(v, 3, MPI_DOUBLE_INT, right, 0, 2, di_pair, win)
                 : 1 == c ? MPI_Accumulate(v, 3, MPI_DOUBLE_INT, right, 0, 2, di_pair,
                                           MPI_REPLACE, win)
                          : MPI_Accumulate(v, 3, MPI_DOUBLE_INT, right, 0, 3, MPI_DOUBLE_INT,
                                           MPI_REPLACE, win);
        expect_class(rc, MPI_SUCCESS, pair_case[c]);
        close_epoch(pair_case[c]);
        check_window(want_di, n, pair_case[c]);
    }

    /* fetched pairs: their data only, the result's padding stays */
    reset_window();
    for (int c = 0; c < 2; ++c) {
        di_t r[3];
        memset(r, 0x5a, sizeof(r));
        open_epoch();
        int rc = MPI_Get_accumulate(NULL, 0, MPI_DOUBLE_INT, r, c ? 2 : 3, c ? di_pair : MPI_DOUBLE_INT,
                                    right, 0, 3, MPI_DOUBLE_INT, MPI_NO_OP, win);
        expect_class(rc, MPI_SUCCESS, "pair get_accumulate");
        close_epoch("epoch of a pair get_accumulate");
        int bad = -1;
        for (int k = 0; k < 3 && bad < 0; ++k) {
            int want[4] = { initial(right, 4 * k), initial(right, 4 * k + 1),
                            initial(right, 4 * k + 2), 0 };
            memset(&want[3], 0x5a, sizeof(int));
            if (0 != memcmp(&r[k], want, sizeof(want))) bad = k;
        }
        CHECK(bad < 0, "pair get_accumulate (result %s), %s: pair %d wrong (data or padding)",
              c ? "ending inside an element" : "of 3 pairs", lock ? "lock" : "fence", bad);
    }
}

static void run(int *src, int *buf)
{
    for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); ++k) {
        int n = sizes[k];
        for (int i = 0; i < n; ++i) src[i] = src_val(rank, i);

        /* short put: n ints to a target of 2n */
        reset_window();
        open_epoch();
        expect_class(MPI_Put(src, n, MPI_INT, right, 0, 2 * n, MPI_INT, win), MPI_SUCCESS,
                     "short put");
        close_epoch("epoch of a short put");
        check_window(want_short_put, n, "short put");

        /* short accumulate: n ints over a strided target of 2n */
        reset_window();
        open_epoch();
        expect_class(MPI_Accumulate(src, n, MPI_INT, right, 0, 2 * n, strided, MPI_SUM, win),
                     MPI_SUCCESS, "short accumulate");
        close_epoch("epoch of a short accumulate");
        check_window(want_short_acc_strided, n, "short accumulate");

        /* short get: n ints into an origin buffer of 2n, read from a
         * strided target; the origin's second half is left alone */
        reset_window();
        for (int i = 0; i < 2 * n; ++i) buf[i] = -3;
        open_epoch();
        expect_class(MPI_Get(buf, 2 * n, MPI_INT, right, 0, n, strided, win), MPI_SUCCESS,
                     "short get");
        close_epoch("epoch of a short get");
        int bad = -1;
        for (int i = 0; i < 2 * n && bad < 0; ++i) {
            if (buf[i] != (i < n ? initial(right, 2 * i) : -3)) bad = i;
        }
        CHECK(bad < 0, "short get, %s, n %d: origin int %d = %d", lock ? "lock" : "fence", n, bad,
              bad < 0 ? 0 : buf[bad]);

        /* short get_accumulate result: n old ints into a result of 2n */
        for (int i = 0; i < 2 * n; ++i) buf[i] = -3;
        open_epoch();
        expect_class(MPI_Get_accumulate(src, n, MPI_INT, buf, 2 * n, MPI_INT, right, 0, n,
                                        MPI_INT, MPI_SUM, win), MPI_SUCCESS,
                     "get_accumulate into a larger result");
        close_epoch("epoch of a get_accumulate");
        bad = -1;
        for (int i = 0; i < 2 * n && bad < 0; ++i) {
            if (buf[i] != (i < n ? initial(right, i) : -3)) bad = i;
        }
        CHECK(bad < 0, "get_accumulate, %s, n %d: result int %d = %d", lock ? "lock" : "fence", n,
              bad, bad < 0 ? 0 : buf[bad]);

        /* truncated: refused by the call, nothing moves */
        reset_window();
        for (int i = 0; i < 2 * n; ++i) buf[i] = -3;
        open_epoch();
        expect_class(MPI_Put(src, n, MPI_INT, right, 0, n - 1, MPI_INT, win), MPI_ERR_TRUNCATE,
                     "put to a smaller target");
        expect_class(MPI_Accumulate(src, n, MPI_INT, right, 0, n / 2, strided, MPI_SUM, win),
                     MPI_ERR_TRUNCATE, "accumulate to a smaller target");
        expect_class(MPI_Get(buf, n - 1, MPI_INT, right, 0, n, MPI_INT, win), MPI_ERR_TRUNCATE,
                     "get into a smaller origin buffer");
        expect_class(MPI_Get_accumulate(src, n, MPI_INT, buf, n - 1, MPI_INT, right, 0, n,
                                        MPI_INT, MPI_SUM, win), MPI_ERR_TRUNCATE,
                     "get_accumulate into a smaller result");
        MPI_Request r = MPI_REQUEST_NULL;
        expect_class(MPI_Rget(buf, 1, MPI_INT, right, 0, n, MPI_INT, win, &r), MPI_ERR_TRUNCATE,
                     "rget into a smaller origin buffer");
        if (MPI_REQUEST_NULL != r) MPI_Wait(&r, MPI_STATUS_IGNORE);
        close_epoch("epoch of refused accesses");
        check_window(want_unchanged, n, "truncated accesses");
        bad = -1;
        for (int i = 0; i < 2 * n && bad < 0; ++i) {
            if (-3 != buf[i]) bad = i;
        }
        CHECK(bad < 0, "truncated gets, %s, n %d: origin int %d changed to %d",
              lock ? "lock" : "fence", n, bad, bad < 0 ? 0 : buf[bad]);

        run_mid_element(n, src, buf);
    }
}

int main(int argc, char **argv)
{
    test_init(&argc, &argv);
    right = (rank + 1) % nprocs;
    left = (rank + nprocs - 1) % nprocs;
    MPI_Type_create_resized(MPI_INT, 0, 2 * sizeof(int), &strided);
    MPI_Type_commit(&strided);
    MPI_Datatype two_spaced;
    MPI_Type_vector(2, 1, 3, MPI_INT, &two_spaced);
    MPI_Type_create_resized(two_spaced, 0, 6 * sizeof(int), &spaced);
    MPI_Type_commit(&spaced);
    MPI_Type_free(&two_spaced);
    MPI_Type_contiguous(2, MPI_DOUBLE_INT, &di_pair);
    MPI_Type_commit(&di_pair);
    int *src = malloc(MAXN * sizeof(int)), *buf = malloc(6 * (MAXN + 1) * sizeof(int));
    int *mem = malloc(WIN_INTS * sizeof(int));
    for (int flavor = 0; flavor < 2; ++flavor) {
        if (0 == flavor) {
            wmem = mem;
            MPI_Win_create(wmem, WIN_INTS * sizeof(int), sizeof(int), MPI_INFO_NULL,
                           MPI_COMM_WORLD, &win);
        } else {
            MPI_Win_allocate(WIN_INTS * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD,
                             &wmem, &win);
        }
        MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
        for (lock = 0; lock < 2; ++lock) run(src, buf);
        MPI_Win_free(&win);
    }
    MPI_Type_free(&strided);
    MPI_Type_free(&spaced);
    MPI_Type_free(&di_pair);
    free(mem);
    free(src);
    free(buf);
    return test_finish();
}
