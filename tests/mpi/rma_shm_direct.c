/*
 * Direct put/get (self and shared-memory windows: a copy at the call, no
 * operation object) mixed with the general path, in every synchronization
 * mode and window flavour (allocate, allocate_shared, create), checking
 * final contents:
 *  - fence: all-to-all puts with mixed contiguous types (MPI_INT against
 *    MPI_BYTE), vector (non-contiguous) puts, gets after the fence;
 *  - PSCW: the origin starts before the target posts, so its first puts are
 *    recorded; later puts to the same location must not overtake them;
 *  - exclusive lock: read-modify-write counter by get + put (atomic only if
 *    the lock holds against direct stores);
 *  - lock_all + flush, Rput (request path) and errors (range, no epoch).
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define SLOTS 16
static int rank, size, errs;

static void check(int cond, const char *what, int a, int b)
{
    if (!cond) {
        if (errs < 10) fprintf(stderr, "[%d] %s: %d %d\n", rank, what, a, b);
        errs++;
    }
}

static MPI_Group one(int r)
{
    MPI_Group world, g;
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    MPI_Group_incl(world, 1, &r, &g);
    MPI_Group_free(&world);
    return g;
}

static void run(int flavor)
{
    MPI_Win win;
    int *mem;
    int n = size * SLOTS + 8;   /* slot block per origin, a counter, spare */
    if (0 == flavor) {
        MPI_Win_allocate(n * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win);
    } else if (1 == flavor) {
        MPI_Win_allocate_shared(n * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &mem,
                                &win);
    } else {
        MPI_Alloc_mem(n * sizeof(int), MPI_INFO_NULL, &mem);
        MPI_Win_create(mem, n * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    }
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, win);
    for (int i = 0; i < n; ++i) mem[i] = -1;
    MPI_Win_unlock(rank, win);
    MPI_Barrier(MPI_COMM_WORLD);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    int cnt = size * SLOTS;

    /* 1. fence, 20 epochs: contiguous puts (INT->BYTE), vector puts, gets */
    MPI_Datatype vec;
    MPI_Type_vector(SLOTS / 2, 1, 2, MPI_INT, &vec);
    MPI_Type_commit(&vec);
    int *srcs = malloc(sizeof(int) * SLOTS * size), back[SLOTS];
    MPI_Win_fence(0, win);
    for (int it = 0; it < 20; ++it) {
        for (int t = 0; t < size; ++t) {
            int *src = srcs + t * SLOTS;   /* untouched until the fence */
            for (int i = 0; i < SLOTS; ++i) src[i] = it * 100000 + rank * 1000 + t * 10 + i % 10;
            if (it % 3 == 2) {
                MPI_Put(src, 1, vec, t, rank * SLOTS, 1, vec, win);
                MPI_Put(src + 1, 1, vec, t, rank * SLOTS + 1, 1, vec, win);
            } else {
                MPI_Put(src, SLOTS, MPI_INT, t, rank * SLOTS, SLOTS * (int) sizeof(int), MPI_BYTE,
                        win);
            }
        }
        MPI_Win_fence(0, win);
        for (int o = 0; o < size; ++o)
            for (int i = 0; i < SLOTS; ++i)
                check(mem[o * SLOTS + i] == it * 100000 + o * 1000 + rank * 10 + i % 10,
                      "fence put", o * SLOTS + i, mem[o * SLOTS + i]);
        MPI_Get(back, SLOTS, MPI_INT, right, rank * SLOTS, SLOTS, MPI_INT, win);
        MPI_Win_fence(0, win);
        for (int i = 0; i < SLOTS; ++i)
            check(back[i] == it * 100000 + rank * 1000 + right * 10 + i % 10, "fence get", i, back[i]);
    }
    MPI_Win_fence(MPI_MODE_NOSUCCEED, win);
    MPI_Type_free(&vec);
    free(srcs);

    /* 2. PSCW ring: start before the (late) post; 10 puts to one location */
    MPI_Group gl = one(left), gr = one(right);
    for (int it = 0; it < 5; ++it) {
        MPI_Win_start(gr, 0, win);
        for (int k = 0; k <= 10; ++k) {
            int v = it * 100 + k;
            MPI_Put(&v, 1, MPI_INT, right, cnt + 1, 1, MPI_INT, win);
        }
        if (rank % 2 == it % 2) usleep(20000);   /* the left neighbour's puts are recorded */
        MPI_Win_post(gl, 0, win);
        MPI_Win_complete(win);
        MPI_Win_wait(win);
        check(mem[cnt + 1] == it * 100 + 10, "pscw last put", it, mem[cnt + 1]);
        MPI_Barrier(MPI_COMM_WORLD);
    }
    MPI_Group_free(&gl);
    MPI_Group_free(&gr);

    /* 3. exclusive lock: counter at rank 0 by get + put */
    if (0 == rank) {
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win);
        mem[cnt] = 0;
        MPI_Win_unlock(0, win);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    for (int it = 0; it < 200; ++it) {
        int v;
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win);
        MPI_Get(&v, 1, MPI_INT, 0, cnt, 1, MPI_INT, win);
        MPI_Win_flush(0, win);
        v++;
        MPI_Put(&v, 1, MPI_INT, 0, cnt, 1, MPI_INT, win);
        MPI_Win_unlock(0, win);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (0 == rank) {
        MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
        check(mem[cnt] == 200 * size, "locked counter", mem[cnt], 200 * size);
        MPI_Win_unlock(0, win);
    }

    /* 4. lock_all + flush, Rput, gets of what others wrote */
    MPI_Win_lock_all(0, win);
    for (int it = 0; it < 50; ++it) {
        int v = it * 10 + rank;
        MPI_Request rq;
        MPI_Put(&v, 1, MPI_INT, right, rank * SLOTS, 1, MPI_INT, win);
        MPI_Rput(&v, 1, MPI_INT, right, rank * SLOTS + 1, 1, MPI_INT, win, &rq);
        MPI_Wait(&rq, MPI_STATUS_IGNORE);
        MPI_Win_flush(right, win);
        MPI_Get(back, 2, MPI_INT, right, rank * SLOTS, 2, MPI_INT, win);
        MPI_Win_flush(right, win);
        check(back[0] == v && back[1] == v, "lock_all flush", back[0], v);
    }
    MPI_Win_unlock_all(win);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, win);
    check(mem[left * SLOTS] == 490 + left, "lock_all final", mem[left * SLOTS], 490 + left);
    MPI_Win_unlock(rank, win);

    /* 5. errors: beyond the window, outside an epoch */
    int v = 1, rc;
    MPI_Win_lock(MPI_LOCK_SHARED, right, 0, win);
    rc = MPI_Put(&v, 1, MPI_INT, right, n, 1, MPI_INT, win);
    check(MPI_SUCCESS != rc, "range put accepted", rc, 0);
    rc = MPI_Get(&v, 2, MPI_INT, right, n - 1, 2, MPI_INT, win);
    check(MPI_SUCCESS != rc, "range get accepted", rc, 0);
    MPI_Win_unlock(right, win);
    rc = MPI_Put(&v, 1, MPI_INT, right, 0, 1, MPI_INT, win);
    check(MPI_SUCCESS != rc, "put outside epoch accepted", rc, 0);
    rc = MPI_Put(&v, 1, MPI_INT, rank, 0, 1, MPI_INT, win);
    check(MPI_SUCCESS != rc, "put to self outside epoch accepted", rc, 0);

    MPI_Win_free(&win);
    if (2 == flavor) MPI_Free_mem(mem);
}

int main(int argc, char **argv)
{
    int total;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int f = 0; f < 3; ++f) run(f);
    MPI_Allreduce(&errs, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (0 == rank) {
        if (0 == total) printf(" No Errors\n");
        else printf(" Found %d errors\n", total);
    }
    MPI_Finalize();
    return total ? 1 : 0;
}
