/*
 * pml/mdq collectives smoke test: the coll components run over the PML, so
 * bcast/reduce/allreduce/gather/scatter/allgather/alltoall(v)/barrier/scan
 * must give correct results for small (eager) and large (rendezvous) sizes,
 * on MPI_COMM_WORLD and on a split communicator.
 */
#include "pt2pt_common.h"

static void run(MPI_Comm comm, int n)
{
    int r, p;
    MPI_Comm_rank(comm, &r);
    MPI_Comm_size(comm, &p);
    int *a = malloc(sizeof(int) * (size_t) n * p), *b = malloc(sizeof(int) * (size_t) n * p);

    for (int root = 0; root < p; root += (p > 2 ? p - 1 : 1)) {
        for (int i = 0; i < n; i++) a[i] = (r == root) ? i * 3 + root : -1;
        MPI_Bcast(a, n, MPI_INT, root, comm);
        for (int i = 0; i < n; i++) if (a[i] != i * 3 + root) { CHECK(0, "bcast n=%d root %d elem %d", n, root, i); break; }

        for (int i = 0; i < n; i++) a[i] = r + i;
        MPI_Reduce(a, b, n, MPI_INT, MPI_SUM, root, comm);
        if (r == root)
            for (int i = 0; i < n; i++) if (b[i] != p * (p - 1) / 2 + p * i) { CHECK(0, "reduce n=%d elem %d", n, i); break; }

        for (int i = 0; i < n; i++) a[i] = r * n + i;
        MPI_Gather(a, n, MPI_INT, b, n, MPI_INT, root, comm);
        if (r == root)
            for (int i = 0; i < n * p; i++) if (b[i] != i) { CHECK(0, "gather n=%d elem %d", n, i); break; }

        for (int i = 0; i < n * p; i++) a[i] = i;
        MPI_Scatter(a, n, MPI_INT, b, n, MPI_INT, root, comm);
        for (int i = 0; i < n; i++) if (b[i] != r * n + i) { CHECK(0, "scatter n=%d elem %d", n, i); break; }
    }
    for (int i = 0; i < n; i++) a[i] = r * 2 + i;
    MPI_Allreduce(a, b, n, MPI_INT, MPI_MAX, comm);
    for (int i = 0; i < n; i++) if (b[i] != (p - 1) * 2 + i) { CHECK(0, "allreduce n=%d elem %d", n, i); break; }

    for (int i = 0; i < n; i++) a[i] = r * n + i;
    MPI_Allgather(a, n, MPI_INT, b, n, MPI_INT, comm);
    for (int i = 0; i < n * p; i++) if (b[i] != i) { CHECK(0, "allgather n=%d elem %d", n, i); break; }

    for (int d = 0; d < p; d++) for (int i = 0; i < n; i++) a[d * n + i] = r * 100000 + d * 1000 + i % 1000;
    MPI_Alltoall(a, n, MPI_INT, b, n, MPI_INT, comm);
    for (int s = 0; s < p; s++) for (int i = 0; i < n; i++)
        if (b[s * n + i] != s * 100000 + r * 1000 + i % 1000) { CHECK(0, "alltoall n=%d from %d elem %d", n, s, i); s = p; break; }

    {
        int v = r + 1, sc = 0;
        MPI_Scan(&v, &sc, 1, MPI_INT, MPI_SUM, comm);
        CHECK(sc == (r + 1) * (r + 2) / 2, "scan %d", sc);
    }
    MPI_Barrier(comm);
    free(a);
    free(b);
}

int main(int argc, char **argv)
{
    static const int sizes[] = {1, 100, 3000, 70000};
    MPI_Comm half;
    test_init(&argc, &argv);
    for (int k = 0; k < 4; k++) run(MPI_COMM_WORLD, sizes[k]);
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, nprocs - rank, &half);
    for (int k = 0; k < 4; k++) run(half, sizes[k]);
    MPI_Comm_free(&half);
    return test_finish();
}
