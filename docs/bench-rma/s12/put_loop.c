/*
 * put_loop (session 12): docs/bench-rma/s10/put_loop.c plus mode 2, a loop of
 * exclusive lock + put + unlock on a create window (rank 0 targets rank 1).
 *   mpicc -O2 -o /tmp/put_loop2 docs/bench-rma/s12/put_loop.c
 *   CP=build/ompi/mca/pml/mdq/.libs:build/ompi/mca/osc/nbe/.libs:PKGLIBDIR  (PKGLIBDIR: ompi_info --path pkglibdir)
 *   mpirun -np 2 --mca mca_base_component_path $CP --mca pml ob1 --mca osc nbe|rdma /tmp/put_loop2 16384 20000 2
 * Messages sent per iteration: rank 0 under gdb with a breakpoint on the BTL's immediate send,
 * hit count checked after the loop (no hit after the first 200 in 20000 iterations with the lock tables):
 *   wrapper: [ "$OMPI_COMM_WORLD_RANK" = 0 ] && exec gdb -q -batch -ex "set breakpoint pending on" \
 *     -ex "break mca_btl_vader_sendi" -ex run -ex "ignore 1 200" -ex continue -ex "bt 12" --args "$@"; exec "$@"
 * Profile: the same wrapper with `perf record -F 25000 -g -o /tmp/perf.nbe.data "$@"`, then
 *   perf report -i /tmp/perf.nbe.data --no-children --sort dso
 */
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
