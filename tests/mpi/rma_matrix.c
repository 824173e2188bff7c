/*
 * RMA matrix: every synchronization mode x window flavour x operation
 * family, checking exact results.
 *
 *   sync:    fence, pscw, lock (exclusive), lock (shared), lock_all
 *   flavour: create, allocate, dynamic, allocate_shared (single node; across
 *            nodes the shared window must be refused with MPI_ERR_RMA_SHARED)
 *   family:  put, get, accumulate (SUM), get_accumulate (counter), fetch_and_op
 *            (counter), compare_and_swap (one winner), derived datatypes
 *
 * Ring families (put, get, derived) use target = rank+1; counter families
 * use target 0 from every rank.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "one_node.h"

#define M 1000               /* ints per rank slot */

enum { S_FENCE, S_PSCW, S_LOCK_EXCL, S_LOCK_SHARED, S_LOCK_ALL, NSYNC };
enum { F_CREATE, F_ALLOCATE, F_DYNAMIC, F_SHARED, NFLAV };
enum { O_PUT, O_GET, O_ACC, O_GACC, O_FOP, O_CAS, O_DTYPE, NFAM };
static const char *sync_name[] = { "fence", "pscw", "lock-excl", "lock-shared", "lock_all" };
static const char *flav_name[] = { "create", "allocate", "dynamic", "shared" };
static const char *fam_name[] = { "put", "get", "acc", "gacc", "fop", "cas", "dtype" };

static int rank, size;

typedef struct {
    MPI_Win win;
    int *mem;          /* local window memory: size * M ints */
    MPI_Aint *addr;    /* dynamic: each rank's attached base address */
    int flavor;
} win_t;

static void win_open(win_t *w, int flavor)
{
    MPI_Aint bytes = (MPI_Aint) size * M * sizeof(int);
    w->flavor = flavor;
    w->addr = NULL;
    switch (flavor) {
    case F_CREATE:
        w->mem = malloc(bytes);
        MPI_Win_create(w->mem, bytes, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &w->win);
        break;
    case F_ALLOCATE:
        MPI_Win_allocate(bytes, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &w->mem, &w->win);
        break;
    case F_SHARED:
        MPI_Win_allocate_shared(bytes, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &w->mem, &w->win);
        break;
    case F_DYNAMIC: {
        MPI_Aint mine;
        w->mem = malloc(bytes);
        MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &w->win);
        MPI_Win_attach(w->win, w->mem, bytes);
        MPI_Get_address(w->mem, &mine);
        w->addr = malloc(sizeof(MPI_Aint) * size);
        MPI_Allgather(&mine, 1, MPI_AINT, w->addr, 1, MPI_AINT, MPI_COMM_WORLD);
        break;
    }
    }
}

static void win_close(win_t *w)
{
    if (F_DYNAMIC == w->flavor) MPI_Win_detach(w->win, w->mem);
    MPI_Win_free(&w->win);
    if (F_CREATE == w->flavor || F_DYNAMIC == w->flavor) free(w->mem);
    free(w->addr);
}

/* displacement of int index i at target t */
static MPI_Aint disp(win_t *w, int t, int i)
{
    if (F_DYNAMIC == w->flavor) return w->addr[t] + (MPI_Aint) i * sizeof(int);
    return i;
}

static void fill(win_t *w, int v)
{
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, w->win);
    for (int i = 0; i < size * M; ++i) w->mem[i] = v < 0 ? v : rank * 100000 + i;
    MPI_Win_unlock(rank, w->win);
}

/* ---------------- synchronization wrappers ---------------- */

static void group_of(const int *ranks, int n, MPI_Group *g)
{
    MPI_Group world;
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    MPI_Group_incl(world, n, ranks, g);
    MPI_Group_free(&world);
}

/* targets[] of this rank, origins[] that target it */
static int ntargets, targets[64], norigins, origins[64];

static void open_epoch(win_t *w, int sync)
{
    MPI_Group g;
    switch (sync) {
    case S_FENCE:
        MPI_Win_fence(0, w->win);
        break;
    case S_PSCW:
        group_of(origins, norigins, &g);
        MPI_Win_post(g, 0, w->win);
        MPI_Group_free(&g);
        group_of(targets, ntargets, &g);
        MPI_Win_start(g, 0, w->win);
        MPI_Group_free(&g);
        break;
    case S_LOCK_EXCL:
    case S_LOCK_SHARED:
        for (int i = 0; i < ntargets; ++i)
            MPI_Win_lock(S_LOCK_EXCL == sync ? MPI_LOCK_EXCLUSIVE : MPI_LOCK_SHARED, targets[i], 0, w->win);
        break;
    case S_LOCK_ALL:
        MPI_Win_lock_all(0, w->win);
        break;
    }
}

static void close_epoch(win_t *w, int sync)
{
    switch (sync) {
    case S_FENCE:
        MPI_Win_fence(0, w->win);
        break;
    case S_PSCW:
        MPI_Win_complete(w->win);
        MPI_Win_wait(w->win);
        break;
    case S_LOCK_EXCL:
    case S_LOCK_SHARED:
        for (int i = 0; i < ntargets; ++i) MPI_Win_unlock(targets[i], w->win);
        MPI_Barrier(MPI_COMM_WORLD);
        break;
    case S_LOCK_ALL:
        MPI_Win_flush_all(w->win);
        MPI_Win_unlock_all(w->win);
        MPI_Barrier(MPI_COMM_WORLD);
        break;
    }
}

/* ---------------- one case ---------------- */

static int run_case(int sync, int flavor, int fam)
{
    win_t w;
    int errs = 0;
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    int ring = (O_PUT == fam || O_GET == fam || O_DTYPE == fam);

    if (ring) {
        ntargets = 1; targets[0] = right;
        norigins = 1; origins[0] = left;
    } else {
        ntargets = 1; targets[0] = 0;
        norigins = 0;
        if (0 == rank) for (int r = 0; r < size; ++r) origins[norigins++] = r;
    }

    win_open(&w, flavor);
    fill(&w, O_CAS == fam ? -1 : (ring ? 0 : -7));
    if (!ring) {
        /* counters start at 0 */
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, w.win);
        for (int i = 0; i < size * M; ++i) w.mem[i] = O_CAS == fam ? -1 : 0;
        MPI_Win_unlock(rank, w.win);
    }
    MPI_Barrier(MPI_COMM_WORLD);

    int *buf = malloc(sizeof(int) * 2 * M);
    int *res = malloc(sizeof(int) * 2 * M);
    for (int i = 0; i < 2 * M; ++i) {
        buf[i] = rank * 1000 + i;
        res[i] = -3;
    }

    open_epoch(&w, sync);
    switch (fam) {
    case O_PUT:
        /* into my slot at the right neighbour */
        MPI_Put(buf, M, MPI_INT, right, disp(&w, right, rank * M), M, MPI_INT, w.win);
        break;
    case O_GET:
        /* right neighbour's slot of its own rank (filled with its pattern) */
        MPI_Get(res, M, MPI_INT, right, disp(&w, right, right * M), M, MPI_INT, w.win);
        break;
    case O_ACC:
        MPI_Accumulate(buf, M, MPI_INT, 0, disp(&w, 0, 0), M, MPI_INT, MPI_SUM, w.win);
        break;
    case O_GACC: {
        int one[4] = { 1, 1, 1, 1 };
        MPI_Get_accumulate(one, 4, MPI_INT, res, 4, MPI_INT, 0, disp(&w, 0, 0), 4, MPI_INT,
                           MPI_SUM, w.win);
        break;
    }
    case O_FOP: {
        int one = 1;
        MPI_Fetch_and_op(&one, res, MPI_INT, 0, disp(&w, 0, 0), MPI_SUM, w.win);
        break;
    }
    case O_CAS: {
        int cmp = -1, mine = rank;
        MPI_Compare_and_swap(&mine, &cmp, res, MPI_INT, 0, disp(&w, 0, 0), w.win);
        break;
    }
    case O_DTYPE: {
        /* origin: every other int of buf (vector); target: strided by 3 */
        MPI_Datatype ov, tv;
        MPI_Type_vector(M / 4, 1, 2, MPI_INT, &ov);
        MPI_Type_vector(M / 4, 1, 3, MPI_INT, &tv);
        MPI_Type_commit(&ov);
        MPI_Type_commit(&tv);
        MPI_Put(buf, 1, ov, right, disp(&w, right, rank * M), 1, tv, w.win);
        MPI_Type_free(&ov);          /* freed while the put may be pending */
        MPI_Type_free(&tv);
        break;
    }
    }
    close_epoch(&w, sync);

    /* verification */
    switch (fam) {
    case O_PUT:
        for (int i = 0; i < M; ++i)
            if (w.mem[left * M + i] != left * 1000 + i) errs++;
        break;
    case O_GET:
        for (int i = 0; i < M; ++i)
            if (res[i] != right * 100000 + right * M + i) errs++;
        break;
    case O_ACC:
        if (0 == rank) {
            for (int i = 0; i < M; ++i) {
                long exp = 0;
                for (int r = 0; r < size; ++r) exp += r * 1000 + i;
                if (w.mem[i] != exp) errs++;
            }
        }
        break;
    case O_GACC:
    case O_FOP: {
        /* fetched values are a permutation of 0..size-1 */
        int *all = malloc(sizeof(int) * size);
        MPI_Gather(res, 1, MPI_INT, all, 1, MPI_INT, 0, MPI_COMM_WORLD);
        if (0 == rank) {
            int *seen = calloc(size, sizeof(int));
            for (int r = 0; r < size; ++r) {
                if (all[r] < 0 || all[r] >= size || seen[all[r]]++) errs++;
            }
            if (w.mem[0] != size) errs++;
            free(seen);
        }
        free(all);
        break;
    }
    case O_CAS: {
        int *all = malloc(sizeof(int) * size);
        MPI_Gather(res, 1, MPI_INT, all, 1, MPI_INT, 0, MPI_COMM_WORLD);
        if (0 == rank) {
            int winner = w.mem[0], nwin = 0;
            for (int r = 0; r < size; ++r) {
                if (-1 == all[r]) {
                    nwin++;
                    if (r != winner) errs++;
                } else if (all[r] != winner) {
                    errs++;
                }
            }
            if (1 != nwin) errs++;
        }
        free(all);
        break;
    }
    case O_DTYPE:
        for (int k = 0; k < M / 4; ++k) {
            if (w.mem[left * M + 3 * k] != left * 1000 + 2 * k) errs++;
            int gap = left * M + 3 * k + 1;    /* untouched: still my fill pattern */
            if (k < M / 4 - 1 && (w.mem[gap] != rank * 100000 + gap || w.mem[gap + 1] != rank * 100000 + gap + 1)) errs++;
        }
        break;
    }
    if (errs) {
        fprintf(stderr, "[%d] %s/%s/%s: %d errors\n", rank, sync_name[sync], flav_name[flavor],
                fam_name[fam], errs);
    }
    free(buf);
    free(res);
    MPI_Barrier(MPI_COMM_WORLD);
    win_close(&w);
    return errs;
}

int main(int argc, char **argv)
{
    int errs = 0, total = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int one_node = comm_on_one_node(MPI_COMM_WORLD);
    if (!one_node) errs += shared_window_refused(MPI_COMM_WORLD);
    for (int s = 0; s < NSYNC; ++s)
        for (int f = 0; f < NFLAV; ++f)
            for (int o = 0; o < NFAM; ++o)
                if (F_SHARED != f || one_node) errs += run_case(s, f, o);
    MPI_Reduce(&errs, &total, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (0 == rank) {
        if (0 == total) printf(" No Errors\n");
        else printf(" Found %d errors\n", total);
    }
    MPI_Finalize();
    return total ? 1 : 0;
}
