/*
 * MPI_T performance variables of osc/nbe, bound to a window: bytes issued,
 * deferred epochs (a middle fence defers the epoch it opens until the one
 * it closes completes) and the current number of buffered operations.
 */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

static int find_pvar(const char *want)
{
    int n;
    MPI_T_pvar_get_num(&n);
    for (int i = 0; i < n; ++i) {
        char name[256], desc[1024];
        int nlen = sizeof(name), dlen = sizeof(desc), verb, cls, bind, ro, cont, atomic;
        MPI_Datatype dt;
        MPI_T_enum en;
        MPI_T_pvar_get_info(i, name, &nlen, &verb, &cls, &dt, &en, desc, &dlen, &bind, &ro, &cont, &atomic);
        if (0 == strcmp(name, want)) return i;
    }
    return -1;
}

int main(int argc, char **argv)
{
    int rank, size, errs = 0, total = 0, provided, *mem, count;
    unsigned long long bytes = 0, deferred = 0, buffered = 1;
    MPI_Win win;
    MPI_T_pvar_session session;
    MPI_T_pvar_handle hb, hd, hq, hm;

    MPI_Init(&argc, &argv);
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Win_allocate(1024 * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win);

    int ib = find_pvar("osc_nbe_bytes"), id = find_pvar("osc_nbe_epochs_deferred"),
        iq = find_pvar("osc_nbe_buffered_ops"), im = find_pvar("osc_nbe_window_memory");
    if (ib < 0 || id < 0 || iq < 0 || im < 0) {
        fprintf(stderr, "[%d] pvars not found (%d %d %d %d)\n", rank, ib, id, iq, im);
        errs++;
    } else {
        MPI_T_pvar_session_create(&session);
        MPI_T_pvar_handle_alloc(session, ib, &win, &hb, &count);
        MPI_T_pvar_handle_alloc(session, id, &win, &hd, &count);
        MPI_T_pvar_handle_alloc(session, iq, &win, &hq, &count);
        MPI_T_pvar_handle_alloc(session, im, &win, &hm, &count);
        MPI_Win_fence(0, win);
        MPI_Put(mem, 100, MPI_INT, (rank + 1) % size, 0, 100, MPI_INT, win);
        MPI_Win_fence(0, win);
        MPI_Win_fence(0, win);
        MPI_T_pvar_read(session, hb, &bytes);
        MPI_T_pvar_read(session, hd, &deferred);
        MPI_T_pvar_read(session, hq, &buffered);
        /* the component's own bytes for the window: a few KiB, whatever the
         * number of processes (one peer touched here) */
        unsigned long long wmem = 0;
        MPI_T_pvar_read(session, hm, &wmem);
        if (wmem < 256 || wmem > 8192) { fprintf(stderr, "[%d] window memory %llu\n", rank, wmem); errs++; }
        if (bytes < 100 * sizeof(int)) { fprintf(stderr, "[%d] bytes %llu\n", rank, bytes); errs++; }
        if (deferred < 2) { fprintf(stderr, "[%d] deferred epochs %llu\n", rank, deferred); errs++; }
        if (0 != buffered) { fprintf(stderr, "[%d] buffered ops %llu after fence\n", rank, buffered); errs++; }
        MPI_T_pvar_handle_free(session, &hb);
        MPI_T_pvar_handle_free(session, &hd);
        MPI_T_pvar_handle_free(session, &hq);
        MPI_T_pvar_handle_free(session, &hm);
        MPI_T_pvar_session_free(&session);
    }
    MPI_Win_free(&win);
    MPI_T_finalize();
    MPI_Reduce(&errs, &total, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (0 == rank) {
        if (0 == total) printf(" No Errors\n");
        else printf(" Found %d errors\n", total);
    }
    MPI_Finalize();
    return total ? 1 : 0;
}
