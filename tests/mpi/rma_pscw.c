/*
 * PSCW (general active target): ring and all-to-all groups, start issued
 * before the matching post, self in the groups, Win_test polling, many
 * successive epochs (epoch-ID matching), and access/exposure epochs open at
 * the same time on every process.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int rank, size, errs;

static MPI_Group make_group(const int *ranks, int n)
{
    MPI_Group world, g;
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    MPI_Group_incl(world, n, ranks, &g);
    MPI_Group_free(&world);
    return g;
}

int main(int argc, char **argv)
{
    int total = 0, *mem;
    MPI_Win win;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    MPI_Win_allocate(size * 64 * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win);
    for (int i = 0; i < size * 64; ++i) mem[i] = -1;
    MPI_Barrier(MPI_COMM_WORLD);

    /* 1. ring, 50 successive epochs; even ranks start before they post */
    MPI_Group gl = make_group(&left, 1), gr = make_group(&right, 1);
    for (int it = 0; it < 50; ++it) {
        int v = it * 1000 + rank;
        if (rank % 2) {
            MPI_Win_post(gl, 0, win);
            MPI_Win_start(gr, 0, win);
        } else {
            MPI_Win_start(gr, 0, win);
            MPI_Win_post(gl, 0, win);
        }
        MPI_Put(&v, 1, MPI_INT, right, it % 64, 1, MPI_INT, win);
        MPI_Win_complete(win);
        MPI_Win_wait(win);
        if (mem[it % 64] != it * 1000 + left) {
            fprintf(stderr, "[%d] ring epoch %d: %d\n", rank, it, mem[it % 64]);
            errs++;
        }
    }

    /* 2. all-to-all including self, exposure completion polled with Win_test */
    int *all = malloc(sizeof(int) * size);
    for (int r = 0; r < size; ++r) all[r] = r;
    MPI_Group ga = make_group(all, size);
    for (int it = 0; it < 10; ++it) {
        MPI_Win_post(ga, 0, win);
        MPI_Win_start(ga, 0, win);
        for (int t = 0; t < size; ++t) {
            int v = 7 * it + rank;
            MPI_Accumulate(&v, 1, MPI_INT, t, 64 * rank + 1, 1, MPI_INT, MPI_REPLACE, win);
        }
        MPI_Win_complete(win);
        int flag = 0, polls = 0;
        while (!flag) {
            MPI_Win_test(win, &flag);
            polls++;
        }
        for (int r = 0; r < size; ++r) {
            if (mem[64 * r + 1] != 7 * it + r) {
                fprintf(stderr, "[%d] all-to-all epoch %d from %d: %d\n", rank, it, r, mem[64 * r + 1]);
                errs++;
            }
        }
    }

    /* 3. one exposer, everyone else accesses it; the others never expose */
    if (size > 1) {
        int zero = 0;
        MPI_Group g0 = make_group(&zero, 1);
        MPI_Group others;
        MPI_Group_excl(ga, 1, &zero, &others);
        if (0 == rank) {
            mem[2] = 0;
            MPI_Win_post(others, 0, win);
            MPI_Win_wait(win);
            if (mem[2] != (size - 1) * size / 2) {
                fprintf(stderr, "[0] gather-sum: %d\n", mem[2]);
                errs++;
            }
        } else {
            MPI_Win_start(g0, 0, win);
            MPI_Accumulate(&rank, 1, MPI_INT, 0, 2, 1, MPI_INT, MPI_SUM, win);
            MPI_Win_complete(win);
        }
        MPI_Group_free(&g0);
        MPI_Group_free(&others);
    }
    /* 4. empty groups are legal */
    MPI_Group_free(&ga);
    {
        MPI_Group empty = MPI_GROUP_EMPTY;
        MPI_Win_post(empty, 0, win);
        MPI_Win_start(empty, 0, win);
        MPI_Win_complete(win);
        MPI_Win_wait(win);
    }
    MPI_Group_free(&gl);
    MPI_Group_free(&gr);
    free(all);
    MPI_Win_free(&win);

    MPI_Reduce(&errs, &total, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (0 == rank) {
        if (0 == total) printf(" No Errors\n");
        else printf(" Found %d errors\n", total);
    }
    MPI_Finalize();
    return total ? 1 : 0;
}
