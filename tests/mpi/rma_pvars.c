/*
 * MPI_T performance variables of osc/nbe, bound to a window: bytes issued,
 * deferred epochs (a middle fence defers the epoch it opens until the one
 * it closes completes) and the current number of buffered operations.
 */
#include "mdq_pvar.h"

int main(int argc, char **argv)
{
    int *mem;
    MPI_Win win;
    MPI_T_pvar_handle hb, hd, hq, hm;

    test_init(&argc, &argv);
    mdq_pvar_init();
    MPI_Win_allocate(1024 * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win);
    int found = 0 == mdq_pvar_find_bound("osc_nbe_bytes", &win, &hb);
    found &= 0 == mdq_pvar_find_bound("osc_nbe_epochs_deferred", &win, &hd);
    found &= 0 == mdq_pvar_find_bound("osc_nbe_buffered_ops", &win, &hq);
    found &= 0 == mdq_pvar_find_bound("osc_nbe_window_memory", &win, &hm);
    if (found) {
        MPI_Win_fence(0, win);
        MPI_Put(mem, 100, MPI_INT, (rank + 1) % nprocs, 0, 100, MPI_INT, win);
        MPI_Win_fence(0, win);
        MPI_Win_fence(0, win);
        unsigned long long bytes = mdq_pvar_read(hb), deferred = mdq_pvar_read(hd);
        unsigned long long buffered = mdq_pvar_read(hq);
        /* the component's own bytes for the window: a few KiB, whatever the
         * number of processes (one peer touched here) */
        unsigned long long wmem = mdq_pvar_read(hm);
        CHECK(wmem >= 256 && wmem <= 8192, "window memory %llu", wmem);
        CHECK(bytes >= 100 * sizeof(int), "bytes %llu", bytes);
        CHECK(deferred >= 2, "deferred epochs %llu", deferred);
        CHECK(0 == buffered, "buffered ops %llu after fence", buffered);
        MPI_T_pvar_handle_free(mdq_pvar_session, &hb);
        MPI_T_pvar_handle_free(mdq_pvar_session, &hd);
        MPI_T_pvar_handle_free(mdq_pvar_session, &hq);
        MPI_T_pvar_handle_free(mdq_pvar_session, &hm);
    }
    MPI_Win_free(&win);
    mdq_pvar_fini();
    return test_finish();
}
