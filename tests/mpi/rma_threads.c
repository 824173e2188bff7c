/*
 * osc/nbe under MPI_THREAD_MULTIPLE.
 *
 * Part 1: NTHREADS threads create windows at the same time, each on its
 * own communicator (duplicates of MPI_COMM_WORLD, and one split of it in
 * halves), run epochs of their own kind (fence, PSCW, lock, lock_all with
 * flushes) with puts, gets and accumulates of sizes on both sides of the
 * RDMA thresholds, check every byte, and free the windows at the same
 * time; twice, so that every kind runs on create and allocate windows.
 *
 * Part 2: one window per flavour, one lock_all epoch opened by the main
 * thread, and every thread issuing puts into its own slots (8 B, and 20 KiB
 * ones that go by RDMA), accumulates and fetch-and-ops on shared counters,
 * flushes, Rgets and freed Rputs concurrently, while the main thread sits
 * in MPI_Recv. The counters, the slots and the fetched values are checked
 * exactly.
 */
#include <mpi.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NTHREADS 4
#define ITERS 60
#define ITERS2 100
#define CHUNK (48 * 1024)

static int rank, nprocs, errs;
static MPI_Comm comms[NTHREADS];
static int round_no;

static void fail(const char *what, int t, int it, int a, int b)
{
    fprintf(stderr, "[%d] thread %d iter %d: %s (%d, %d)\n", rank, t, it, what, a, b);
    __atomic_add_fetch(&errs, 1, __ATOMIC_RELAXED);
}

static unsigned char pattern(int origin, int t, int it, size_t i)
{
    return (unsigned char) (origin * 31 + t * 7 + it * 13 + i * 3 + (i >> 8));
}

static size_t size_of(int it)
{
    static const size_t sizes[] = { 8, 4096, 20000, 40960, 1 };
    return sizes[it % 5];
}

static int target_of(int origin, int it, int csize)
{
    return (origin + 1 + it) % csize;
}

/* the regions written at this rank in iteration it hold their origins' data */
static void check_regions(const unsigned char *win, int t, int it, int crank, int csize)
{
    for (int o = 0; o < csize; ++o) {
        if (target_of(o, it, csize) != crank) continue;
        const unsigned char *r = win + (size_t) o * CHUNK;
        size_t n = size_of(it);
        for (size_t i = 0; i < n; ++i) {
            if (r[i] != pattern(o, t, it, i)) {
                fail("window byte differs", t, it, o, (int) i);
                break;
            }
        }
    }
}

static void check_get(const unsigned char *got, int t, int it, int crank)
{
    for (size_t i = 0; i < size_of(it); ++i) {
        if (got[i] != pattern(crank, t, it, i)) {
            fail("get returned other data", t, it, (int) i, got[i]);
            return;
        }
    }
}

enum { K_FENCE, K_PSCW, K_LOCK, K_LOCK_ALL };

static void *own_window(void *arg)
{
    int t = (int) (intptr_t) arg, kind = t % 4;
    MPI_Comm comm = comms[t];
    int crank, csize;
    MPI_Comm_rank(comm, &crank);
    MPI_Comm_size(comm, &csize);
    MPI_Win win;
    unsigned char *base;
    size_t bytes = (size_t) csize * CHUNK + sizeof(int64_t);
    unsigned char *mem = NULL;
    if ((t + round_no) & 1) {
        MPI_Win_allocate((MPI_Aint) bytes, 1, MPI_INFO_NULL, comm, &base, &win);
    } else {
        mem = calloc(1, bytes);
        base = mem;
        MPI_Win_create(base, (MPI_Aint) bytes, 1, MPI_INFO_NULL, comm, &win);
    }
    memset(base, 0, bytes);
    MPI_Barrier(comm);
    MPI_Group group;
    MPI_Comm_group(comm, &group);
    unsigned char *out = malloc(CHUNK), *got = malloc(CHUNK);
    int64_t one = 1;
    MPI_Aint counter = (MPI_Aint) csize * CHUNK;
    if (K_LOCK_ALL == kind) MPI_Win_lock_all(0, win);
    for (int it = 0; it < ITERS; ++it) {
        size_t n = size_of(it);
        int target = target_of(crank, it, csize);
        MPI_Aint disp = (MPI_Aint) crank * CHUNK;
        for (size_t i = 0; i < n; ++i) out[i] = pattern(crank, t, it, i);
        switch (kind) {
        case K_FENCE:
            MPI_Win_fence(0, win);
            MPI_Put(out, (int) n, MPI_BYTE, target, disp, (int) n, MPI_BYTE, win);
            MPI_Win_fence(0, win);
            check_regions(base, t, it, crank, csize);
            MPI_Get(got, (int) n, MPI_BYTE, target, disp, (int) n, MPI_BYTE, win);
            MPI_Win_fence(0, win);
            check_get(got, t, it, crank);
            break;
        case K_PSCW:
            MPI_Win_post(group, 0, win);
            MPI_Win_start(group, 0, win);
            MPI_Put(out, (int) n, MPI_BYTE, target, disp, (int) n, MPI_BYTE, win);
            MPI_Accumulate(&one, 1, MPI_INT64_T, target, counter, 1, MPI_INT64_T, MPI_SUM, win);
            MPI_Win_complete(win);
            MPI_Win_wait(win);
            check_regions(base, t, it, crank, csize);
            break;
        case K_LOCK:
            MPI_Win_lock(MPI_LOCK_EXCLUSIVE, target, 0, win);
            MPI_Put(out, (int) n, MPI_BYTE, target, disp, (int) n, MPI_BYTE, win);
            MPI_Accumulate(&one, 1, MPI_INT64_T, target, counter, 1, MPI_INT64_T, MPI_SUM, win);
            MPI_Win_unlock(target, win);
            MPI_Win_lock(MPI_LOCK_SHARED, target, 0, win);
            MPI_Get(got, (int) n, MPI_BYTE, target, disp, (int) n, MPI_BYTE, win);
            MPI_Win_unlock(target, win);
            check_get(got, t, it, crank);
            MPI_Barrier(comm);
            /* memory written by other processes' passive epochs */
            MPI_Win_lock(MPI_LOCK_SHARED, crank, 0, win);
            check_regions(base, t, it, crank, csize);
            MPI_Win_unlock(crank, win);
            MPI_Barrier(comm);
            break;
        case K_LOCK_ALL:
            MPI_Put(out, (int) n, MPI_BYTE, target, disp, (int) n, MPI_BYTE, win);
            MPI_Accumulate(&one, 1, MPI_INT64_T, target, counter, 1, MPI_INT64_T, MPI_SUM, win);
            MPI_Win_flush(target, win);
            MPI_Get(got, (int) n, MPI_BYTE, target, disp, (int) n, MPI_BYTE, win);
            MPI_Win_flush_all(win);
            check_get(got, t, it, crank);
            break;
        }
    }
    if (K_LOCK_ALL == kind) MPI_Win_unlock_all(win);
    MPI_Barrier(comm);
    if (K_FENCE != kind) {
        int64_t c;
        MPI_Win_lock(MPI_LOCK_SHARED, crank, 0, win);
        memcpy(&c, base + counter, sizeof(c));
        MPI_Win_unlock(crank, win);
        /* every origin targets each rank ITERS / csize times, give or take one */
        int64_t expect = 0;
        for (int o = 0; o < csize; ++o) {
            for (int it = 0; it < ITERS; ++it) expect += target_of(o, it, csize) == crank;
        }
        if (c != expect) fail("accumulated counter", t, ITERS, (int) c, (int) expect);
    }
    MPI_Group_free(&group);
    MPI_Win_free(&win);
    free(mem);
    free(out);
    free(got);
    return NULL;
}

/* part 2: two counters, slots, the freed Rputs' slots, then a BIG-byte
 * region per origin thread */
#define BIG (20 * 1024)
static MPI_Win shared_win;
static int64_t fetched_sum[NTHREADS][64];

static MPI_Aint slot(int origin, int t)
{
    return (MPI_Aint) (2 + origin * NTHREADS + t) * (MPI_Aint) sizeof(int64_t);
}

static MPI_Aint freed_slot(int origin, int t)
{
    return slot(nprocs + origin, t);
}

static MPI_Aint big_region(int origin, int t)
{
    return slot(2 * nprocs, 0) + (MPI_Aint) (origin * NTHREADS + t) * BIG;
}

static int64_t slot_value(int origin, int t, int it)
{
    return (int64_t) origin * 1000000 + t * 10000 + it;
}

static void *shared_epoch(void *arg)
{
    int t = (int) (intptr_t) arg;
    int64_t one = 1, fetched, got, seven = 7;
    MPI_Request rq;
    unsigned char *big = malloc(BIG), *back = malloc(BIG);
    for (int it = 0; it < ITERS2; ++it) {
        for (int k = 0; k < nprocs; ++k) {
            int target = (rank + k + t) % nprocs;
            int64_t v = slot_value(rank, t, it);
            MPI_Accumulate(&one, 1, MPI_INT64_T, target, 0, 1, MPI_INT64_T, MPI_SUM, shared_win);
            MPI_Fetch_and_op(&one, &fetched, MPI_INT64_T, target, sizeof(int64_t), MPI_SUM, shared_win);
            MPI_Put(&v, 1, MPI_INT64_T, target, slot(rank, t), 1, MPI_INT64_T, shared_win);
            MPI_Win_flush(target, shared_win);
            fetched_sum[t][target] += fetched;
            MPI_Rget(&got, 1, MPI_INT64_T, target, slot(rank, t), 1, MPI_INT64_T, shared_win, &rq);
            MPI_Wait(&rq, MPI_STATUS_IGNORE);
            if (got != v) fail("Rget after flush", t, it, (int) got, (int) v);
            if (0 == (it + k) % 4) {
                /* RDMA-sized: gathered CMA on vader, shared by the threads */
                for (int i = 0; i < BIG; ++i) big[i] = pattern(rank, t, it + k, (size_t) i);
                MPI_Put(big, BIG, MPI_BYTE, target, big_region(rank, t), BIG, MPI_BYTE, shared_win);
                MPI_Win_flush(target, shared_win);
                MPI_Get(back, BIG, MPI_BYTE, target, big_region(rank, t), BIG, MPI_BYTE, shared_win);
                MPI_Win_flush(target, shared_win);
                if (memcmp(big, back, BIG)) fail("20 KiB put/get", t, it, target, 0);
            }
            if (1 == (it + k) % 8) {
                /* a request freed before it completes: the flush completes it */
                MPI_Rput(&seven, 1, MPI_INT64_T, target, freed_slot(rank, t), 1, MPI_INT64_T,
                         shared_win, &rq);
                MPI_Request_free(&rq);
            }
        }
        if (0 == it % 8) MPI_Win_flush_local_all(shared_win);
    }
    free(big);
    free(back);
    /* the main thread waits in MPI_Recv for this while the others work */
    if (0 == t) MPI_Send(&one, 1, MPI_INT64_T, (rank + 1) % nprocs, 77, MPI_COMM_WORLD);
    return NULL;
}

static void shared_window(int allocate)
{
    size_t bytes = (size_t) big_region(nprocs, 0);
    int64_t *base, *mem = NULL;
    if (allocate) {
        MPI_Win_allocate((MPI_Aint) bytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &shared_win);
    } else {
        mem = calloc(1, bytes);
        base = mem;
        MPI_Win_create(base, (MPI_Aint) bytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &shared_win);
    }
    memset(base, 0, bytes);
    memset(fetched_sum, 0, sizeof(fetched_sum));
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock_all(0, shared_win);
    pthread_t th[NTHREADS];
    for (int t = 0; t < NTHREADS; ++t) pthread_create(&th[t], NULL, shared_epoch, (void *) (intptr_t) t);
    int64_t token;
    MPI_Recv(&token, 1, MPI_INT64_T, (rank + nprocs - 1) % nprocs, 77, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    for (int t = 0; t < NTHREADS; ++t) pthread_join(th[t], NULL);
    MPI_Win_unlock_all(shared_win);
    MPI_Barrier(MPI_COMM_WORLD);

    int64_t n = (int64_t) nprocs * NTHREADS * ITERS2;
    MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, shared_win);
    if (base[0] != n) fail("shared accumulate counter", -1, allocate, (int) base[0], (int) n);
    if (base[1] != n) fail("shared fetch_and_op counter", -1, allocate, (int) base[1], (int) n);
    for (int o = 0; o < nprocs; ++o) {
        for (int t = 0; t < NTHREADS; ++t) {
            int64_t want = slot_value(o, t, ITERS2 - 1);
            if (base[2 + o * NTHREADS + t] != want) fail("slot", t, allocate, o, (int) base[2 + o * NTHREADS + t]);
            int64_t freed = base[2 + (nprocs + o) * NTHREADS + t];
            if (7 != freed) fail("freed Rput", t, allocate, o, (int) freed);
        }
    }
    MPI_Win_unlock(rank, shared_win);
    /* the fetched values at each target are 0 .. n-1, each once */
    int64_t mine[64] = { 0 }, all[64];
    for (int t = 0; t < NTHREADS; ++t) {
        for (int p = 0; p < nprocs; ++p) mine[p] += fetched_sum[t][p];
    }
    MPI_Allreduce(mine, all, nprocs, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
    for (int p = 0; p < nprocs; ++p) {
        if (all[p] != n * (n - 1) / 2) fail("fetched values", -1, allocate, p, (int) all[p]);
    }
    MPI_Win_free(&shared_win);
    free(mem);
}

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    if (provided < MPI_THREAD_MULTIPLE || nprocs > 64) {
        if (0 == rank) printf("needs MPI_THREAD_MULTIPLE and at most 64 ranks\n");
        MPI_Finalize();
        return 1;
    }
    for (int t = 0; t < NTHREADS - 1; ++t) MPI_Comm_dup(MPI_COMM_WORLD, &comms[t]);
    MPI_Comm_split(MPI_COMM_WORLD, rank < nprocs / 2, rank, &comms[NTHREADS - 1]);

    pthread_t th[NTHREADS];
    for (round_no = 0; round_no < 2; ++round_no) {
        for (int t = 0; t < NTHREADS; ++t) pthread_create(&th[t], NULL, own_window, (void *) (intptr_t) t);
        for (int t = 0; t < NTHREADS; ++t) pthread_join(th[t], NULL);
    }

    shared_window(0);
    shared_window(1);

    for (int t = 0; t < NTHREADS; ++t) MPI_Comm_free(&comms[t]);
    int all;
    MPI_Allreduce(&errs, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (0 == rank) {
        if (all) printf("Found %d errors\n", all);
        else printf(" No Errors\n");
    }
    MPI_Finalize();
    return all ? 1 : 0;
}
