#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int r; MPI_Comm_rank(MPI_COMM_WORLD, &r);
    size_t n = atol(argv[1]); int it = atoi(argv[2]);
    char *b = malloc(n), *c = malloc(n);
    for (size_t i = 0; i < n; i++) b[i] = i;
    MPI_Barrier(MPI_COMM_WORLD);
    double t = MPI_Wtime();
    for (int i = 0; i < it; i++) {
        if (r == 0) { MPI_Send(b, n, MPI_CHAR, 1, 0, MPI_COMM_WORLD); MPI_Recv(c, n, MPI_CHAR, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE); }
        else { MPI_Recv(c, n, MPI_CHAR, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE); MPI_Send(b, n, MPI_CHAR, 0, 0, MPI_COMM_WORLD); }
    }
    t = MPI_Wtime() - t;
    if (r == 0) printf("%zu %.3f us\n", n, t / it / 2 * 1e6);
    MPI_Finalize();
}
