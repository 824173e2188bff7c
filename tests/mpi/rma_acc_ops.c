/*
 * Accumulate semantics: every predefined operation (incl. MPI_REPLACE,
 * MPI_NO_OP for Get_accumulate, MINLOC/MAXLOC on pair types) on several
 * types, Fetch_and_op, Compare_and_swap, and derived datatypes on origin and
 * target. Each rank accumulates into its right neighbour, whose expected
 * contents follow from the known initial values and the single origin.
 * Runs under fence and under lock_all.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 64

static int rank, size, errs;

#define FAIL(...) do { fprintf(stderr, "[%d] ", rank); fprintf(stderr, __VA_ARGS__); errs++; } while (0)

static void open_e(MPI_Win w, int mode) { if (mode) MPI_Win_lock_all(0, w); else MPI_Win_fence(0, w); }
static void close_e(MPI_Win w, int mode)
{
    if (mode) {
        MPI_Win_unlock_all(w);
        MPI_Barrier(MPI_COMM_WORLD);
    } else {
        MPI_Win_fence(0, w);
    }
}

static long apply_long(MPI_Op op, long a, long b)   /* a = target, b = origin */
{
    if (op == MPI_SUM) return a + b;
    if (op == MPI_PROD) return a * b;
    if (op == MPI_MAX) return a > b ? a : b;
    if (op == MPI_MIN) return a < b ? a : b;
    if (op == MPI_LAND) return a && b;
    if (op == MPI_LOR) return a || b;
    if (op == MPI_LXOR) return !a != !b;
    if (op == MPI_BAND) return a & b;
    if (op == MPI_BOR) return a | b;
    if (op == MPI_BXOR) return a ^ b;
    if (op == MPI_REPLACE) return b;
    return a;  /* MPI_NO_OP */
}

static void int_ops(int mode)
{
    MPI_Op ops[] = { MPI_SUM, MPI_PROD, MPI_MAX, MPI_MIN, MPI_LAND, MPI_LOR, MPI_LXOR,
                     MPI_BAND, MPI_BOR, MPI_BXOR, MPI_REPLACE };
    const char *names[] = { "sum", "prod", "max", "min", "land", "lor", "lxor", "band", "bor", "bxor", "replace" };
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    int *mem;
    MPI_Win win;
    MPI_Win_allocate(N * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win);
    for (int k = 0; k < (int) (sizeof(ops) / sizeof(ops[0])); ++k) {
        int src[N], res[N];
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, win);
        for (int i = 0; i < N; ++i) mem[i] = (i % 5) + rank;
        MPI_Win_unlock(rank, win);
        for (int i = 0; i < N; ++i) {
            src[i] = (i % 3) + 1 + rank;
            res[i] = -99;
        }
        MPI_Barrier(MPI_COMM_WORLD);
        open_e(win, mode);
        /* first half: accumulate; second half: get_accumulate */
        MPI_Accumulate(src, N / 2, MPI_INT, right, 0, N / 2, MPI_INT, ops[k], win);
        MPI_Get_accumulate(src + N / 2, N / 2, MPI_INT, res, N / 2, MPI_INT, right, N / 2, N / 2,
                           MPI_INT, ops[k], win);
        close_e(win, mode);
        for (int i = 0; i < N; ++i) {
            long t0 = (i % 5) + rank, o = (i % 3) + 1 + left;
            long exp = apply_long(ops[k], t0, o);
            if (mem[i] != exp) FAIL("int %s [%d]: %d expected %ld\n", names[k], i, mem[i], exp);
        }
        for (int i = 0; i < N / 2; ++i) {
            long old = ((i + N / 2) % 5) + right;
            if (res[i] != old) FAIL("gacc %s result [%d]: %d expected %ld\n", names[k], i, res[i], old);
        }
    }
    /* MPI_NO_OP: atomic read */
    {
        int res[N], dummy[N];
        MPI_Barrier(MPI_COMM_WORLD);
        open_e(win, mode);
        MPI_Get_accumulate(dummy, N, MPI_INT, res, N, MPI_INT, right, 0, N, MPI_INT, MPI_NO_OP, win);
        close_e(win, mode);
        MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, win);
        MPI_Win_unlock(rank, win);
        MPI_Barrier(MPI_COMM_WORLD);
        /* right's memory is the last REPLACE result: src of its left (me) */
        for (int i = 0; i < N; ++i) {
            int exp = (i % 3) + 1 + rank;
            if (res[i] != exp) FAIL("no_op [%d]: %d expected %d\n", i, res[i], exp);
        }
    }
    MPI_Win_free(&win);
}

static void double_and_loc(int mode)
{
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    struct dbl_int { double d; int i; };
    struct two_int { int v, i; };
    double *dm;
    MPI_Win win, win2, win3;
    struct dbl_int *pm;
    struct two_int *tm;

    MPI_Win_allocate(N * sizeof(double), sizeof(double), MPI_INFO_NULL, MPI_COMM_WORLD, &dm, &win);
    MPI_Win_allocate(N * sizeof(struct dbl_int), sizeof(struct dbl_int), MPI_INFO_NULL, MPI_COMM_WORLD, &pm, &win2);
    MPI_Win_allocate(N * sizeof(struct two_int), sizeof(struct two_int), MPI_INFO_NULL, MPI_COMM_WORLD, &tm, &win3);
    for (int i = 0; i < N; ++i) {
        dm[i] = 0.5 * i;
        pm[i].d = i % 2 ? 10.0 : -10.0;
        pm[i].i = 1000 + rank;
        tm[i].v = i;
        tm[i].i = 2000 + rank;
    }
    MPI_Barrier(MPI_COMM_WORLD);

    double ds[N];
    struct dbl_int ps[N];
    struct two_int ts[N];
    for (int i = 0; i < N; ++i) {
        ds[i] = 0.25 * i;
        ps[i].d = 0.0;
        ps[i].i = rank;
        ts[i].v = N / 2;
        ts[i].i = rank;
    }
    open_e(win, mode);
    open_e(win2, mode);
    open_e(win3, mode);
    MPI_Accumulate(ds, N, MPI_DOUBLE, right, 0, N, MPI_DOUBLE, MPI_PROD, win);
    MPI_Accumulate(ps, N, MPI_DOUBLE_INT, right, 0, N, MPI_DOUBLE_INT, MPI_MINLOC, win2);
    MPI_Accumulate(ts, N, MPI_2INT, right, 0, N, MPI_2INT, MPI_MAXLOC, win3);
    close_e(win3, mode);
    close_e(win2, mode);
    close_e(win, mode);
    for (int i = 0; i < N; ++i) {
        double exp = 0.5 * i * 0.25 * i;
        if (dm[i] != exp) FAIL("double prod [%d]: %g expected %g\n", i, dm[i], exp);
        /* minloc: odd i keep origin (0.0 < 10), even keep target (-10 < 0) */
        if (i % 2) {
            if (pm[i].d != 0.0 || pm[i].i != left) FAIL("minloc [%d]: %g/%d\n", i, pm[i].d, pm[i].i);
        } else if (pm[i].d != -10.0 || pm[i].i != 1000 + rank) {
            FAIL("minloc [%d]: %g/%d\n", i, pm[i].d, pm[i].i);
        }
        int ev = i > N / 2 ? i : N / 2, ei = i > N / 2 ? 2000 + rank : (i == N / 2 ? (left < 2000 + rank ? left : 2000 + rank) : left);
        if (tm[i].v != ev || tm[i].i != ei) FAIL("maxloc [%d]: %d/%d expected %d/%d\n", i, tm[i].v, tm[i].i, ev, ei);
    }
    MPI_Win_free(&win3);
    MPI_Win_free(&win2);
    MPI_Win_free(&win);
}

static void fop_cas_types(int mode)
{
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    long long *lm;
    MPI_Win win;
    MPI_Win_allocate(4 * sizeof(long long), sizeof(long long), MPI_INFO_NULL, MPI_COMM_WORLD, &lm, &win);
    lm[0] = 100; lm[1] = 7; lm[2] = 5; lm[3] = -1;
    MPI_Barrier(MPI_COMM_WORLD);
    long long one = 3, r0 = 0, r1 = 0, r2 = 0, r3 = 0, cmp = 7, nv = 70 + rank, cmp_bad = 8, nv2 = 1;
    open_e(win, mode);
    MPI_Fetch_and_op(&one, &r0, MPI_LONG_LONG, right, 0, MPI_SUM, win);
    MPI_Compare_and_swap(&nv, &cmp, &r1, MPI_LONG_LONG, right, 1, win);
    MPI_Compare_and_swap(&nv2, &cmp_bad, &r2, MPI_LONG_LONG, right, 2, win);
    MPI_Fetch_and_op(NULL, &r3, MPI_LONG_LONG, right, 3, MPI_NO_OP, win);
    close_e(win, mode);
    if (r0 != 100 || r1 != 7 || r2 != 5 || r3 != -1) FAIL("fop/cas results %lld %lld %lld %lld\n", r0, r1, r2, r3);
    if (lm[0] != 103 || lm[1] != 70 + left || lm[2] != 5) FAIL("fop/cas memory %lld %lld %lld\n", lm[0], lm[1], lm[2]);
    MPI_Win_free(&win);
}

static void derived(int mode)
{
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    int *mem;
    MPI_Win win;
    MPI_Datatype ovec, tidx, rvec;
    int blens[3] = { 2, 1, 3 }, displs[3] = { 0, 5, 9 };
    MPI_Win_allocate(4 * N * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win);
    for (int i = 0; i < 4 * N; ++i) mem[i] = 1;
    MPI_Type_vector(6, 1, 3, MPI_INT, &ovec);                 /* 6 ints, stride 3 */
    MPI_Type_indexed(3, blens, displs, MPI_INT, &tidx);      /* 6 ints at 0,1,5,9,10,11 */
    MPI_Type_vector(3, 2, 4, MPI_INT, &rvec);                 /* 6 ints: 0,1,4,5,8,9 */
    MPI_Type_commit(&ovec);
    MPI_Type_commit(&tidx);
    MPI_Type_commit(&rvec);
    int src[18], res[12];
    for (int i = 0; i < 18; ++i) src[i] = 10 * i + rank;
    for (int i = 0; i < 12; ++i) res[i] = -5;
    MPI_Barrier(MPI_COMM_WORLD);
    open_e(win, mode);
    MPI_Accumulate(src, 1, ovec, right, 0, 1, tidx, MPI_SUM, win);
    MPI_Get_accumulate(src, 1, ovec, res, 1, rvec, right, 2 * N, 1, tidx, MPI_SUM, win);
    close_e(win, mode);
    int tpos[6] = { 0, 1, 5, 9, 10, 11 }, rpos[6] = { 0, 1, 4, 5, 8, 9 };
    for (int k = 0; k < 6; ++k) {
        int exp = 1 + 10 * (3 * k) + left;
        if (mem[tpos[k]] != exp) FAIL("derived acc [%d]: %d expected %d\n", tpos[k], mem[tpos[k]], exp);
        if (mem[2 * N + tpos[k]] != exp) FAIL("derived gacc mem [%d]: %d expected %d\n", tpos[k], mem[2 * N + tpos[k]], exp);
        if (res[rpos[k]] != 1) FAIL("derived gacc result [%d]: %d\n", rpos[k], res[rpos[k]]);
    }
    if (mem[2] != 1 || mem[4] != 1 || res[2] != -5) FAIL("derived: untouched element changed\n");
    MPI_Type_free(&ovec);
    MPI_Type_free(&tidx);
    MPI_Type_free(&rvec);
    MPI_Win_free(&win);
}

/* pair types inside derived datatypes (padding between elements) */
static void derived_pairs(int mode)
{
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    struct ldi { long double v; int i; } *mem, src[12];
    MPI_Datatype vec;
    MPI_Win win;
    MPI_Win_allocate(24 * sizeof(*mem), sizeof(*mem), MPI_INFO_NULL, MPI_COMM_WORLD, (void *) &mem, &win);
    for (int k = 0; k < 24; ++k) {
        mem[k].v = 5.0L;
        mem[k].i = 100 + rank;
    }
    for (int k = 0; k < 12; ++k) {
        src[k].v = (long double) k;
        src[k].i = rank;
    }
    MPI_Type_vector(4, 3, 6, MPI_LONG_DOUBLE_INT, &vec);   /* 12 elements, gaps of 3 */
    MPI_Type_commit(&vec);
    MPI_Barrier(MPI_COMM_WORLD);
    open_e(win, mode);
    MPI_Accumulate(src, 12, MPI_LONG_DOUBLE_INT, right, 0, 1, vec, MPI_MAXLOC, win);
    close_e(win, mode);
    for (int b = 0, k = 0; b < 4; ++b) {
        for (int j = 0; j < 3; ++j, ++k) {
            struct ldi *e = &mem[6 * b + j];
            long double ev = k > 5 ? (long double) k : 5.0L;
            int ei = k > 5 ? left : (k == 5 ? (left < 100 + rank ? left : 100 + rank) : 100 + rank);
            if (e->v != ev || e->i != ei) FAIL("pair vector maxloc [%d]: %Lg/%d expected %Lg/%d\n", k, e->v, e->i, ev, ei);
        }
        for (int j = 3; j < 6; ++j) {
            if (mem[6 * b + j].v != 5.0L || mem[6 * b + j].i != 100 + rank) FAIL("pair vector gap changed\n");
        }
    }
    MPI_Type_free(&vec);
    MPI_Win_free(&win);
}

int main(int argc, char **argv)
{
    int total = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int mode = 0; mode < 2; ++mode) {
        int_ops(mode);
        double_and_loc(mode);
        fop_cas_types(mode);
        derived(mode);
        derived_pairs(mode);
    }
    MPI_Reduce(&errs, &total, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (0 == rank) {
        if (0 == total) printf(" No Errors\n");
        else printf(" Found %d errors\n", total);
    }
    MPI_Finalize();
    return total ? 1 : 0;
}
