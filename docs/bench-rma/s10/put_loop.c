/* put_loop SIZE ITERS MODE: 0 put + fence, 1 put + flush in one lock epoch,
 * 2 (session 12) exclusive lock + put + unlock; rank 0 puts to rank 1 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int r; MPI_Comm_rank(MPI_COMM_WORLD, &r);
    size_t n = atol(argv[1]); int it = atoi(argv[2]); int mode = argc > 3 ? atoi(argv[3]) : 0;
    char *b = malloc(n), *wb = malloc(n);
    memset(b, 1, n); memset(wb, 0, n);
    MPI_Win w; MPI_Win_create(wb, n, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &w);
    MPI_Win_fence(0, w);
    if (mode == 1) MPI_Win_lock(MPI_LOCK_SHARED, 1, 0, w);
    double t = MPI_Wtime();
    for (int i = 0; i < it; i++) {
        if (mode == 0) { if (r == 0) MPI_Put(b, n, MPI_CHAR, 1, 0, n, MPI_CHAR, w); MPI_Win_fence(0, w); }
        else if (mode == 2) { if (r == 0) { MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 1, 0, w); MPI_Put(b, n, MPI_CHAR, 1, 0, n, MPI_CHAR, w); MPI_Win_unlock(1, w); } }
        else if (r == 0) { MPI_Put(b, n, MPI_CHAR, 1, 0, n, MPI_CHAR, w); MPI_Win_flush(1, w); }
    }
    t = MPI_Wtime() - t;
    if (mode == 1) MPI_Win_unlock(1, w);
    if (r == 0) printf("%zu %.3f us\n", n, t / it * 1e6);
    MPI_Win_free(&w);
    MPI_Finalize();
}
