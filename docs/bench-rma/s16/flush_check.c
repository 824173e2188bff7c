/* Build: mpicc -O2 -o flush_check flush_check.c
 * Run:   mpirun --oversubscribe -np 4 <component set> ./flush_check SIZE  (4 fields of SIZE bytes)
 * (session 16: osc/ucx sometimes returns from MPI_Win_flush_all before its puts are in place) */
/* Does MPI_Win_flush_all complete puts at the target? Put a new value into the
 * right neighbour's window, flush_all, barrier, then every rank reads its own
 * window (Win_sync) and checks the value of this round. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, np; MPI_Comm_rank(MPI_COMM_WORLD, &rank); MPI_Comm_size(MPI_COMM_WORLD, &np);
    size_t size = argc > 1 ? (size_t) atol(argv[1]) : 262144;
    int rounds = 50, bad = 0, fields = 4;
    unsigned char *src = malloc(size * fields), *buf;
    MPI_Win win;
    MPI_Alloc_mem(size * fields, MPI_INFO_NULL, &buf);
    memset(buf, 0, size * fields);
    MPI_Win_create(buf, size * fields, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    MPI_Win_lock_all(0, win);
    double t = 0;
    for (int r = 1; r <= rounds; ++r) {
        memset(src, r, size * fields);
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        for (int f = 0; f < fields; ++f)
            MPI_Put(src + f * size, size, MPI_BYTE, (rank + 1) % np, f * size, size, MPI_BYTE, win);
        MPI_Win_flush_all(win);
        t += MPI_Wtime() - t0;
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Win_sync(win);
        for (size_t i = 0; i < size * fields; i += 4096) if (buf[i] != (unsigned char) r) { bad++; break; }
        if (buf[size * fields - 1] != (unsigned char) r) bad++;
    }
    MPI_Win_unlock_all(win);
    int allbad; MPI_Reduce(&bad, &allbad, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (0 == rank) printf("size %zu: %d of %d rank-rounds saw stale data after flush_all; put+flush %.2f us\n", size, allbad, rounds * np, t / rounds * 1e6);
    MPI_Win_free(&win); MPI_Free_mem(buf);
    MPI_Finalize();
}
