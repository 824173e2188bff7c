/*
 * pml/mdq under MPI_THREAD_MULTIPLE: several threads per rank exchange
 * eager and rendezvous messages concurrently on the same communicator
 * (one tag per thread) and on per-thread duplicates, checking payloads.
 */
#include "pt2pt_common.h"
#include <pthread.h>

#define NTHREADS 4
#define ITERS 60

static MPI_Comm comms[NTHREADS];

static void *worker(void *arg)
{
    int t = (int) (intptr_t) arg;
    int peer = rank ^ 1;
    size_t sizes[] = {0, 8, 3000, 5000, 70000, 400000};
    unsigned char *sb = malloc(400000), *rb = malloc(400000);
    for (int it = 0; it < ITERS; it++) {
        size_t n = sizes[(it + t) % 6];
        MPI_Comm comm = (it & 1) ? comms[t] : MPI_COMM_WORLD;
        MPI_Request rq[2];
        MPI_Status st;
        int cnt;
        fill(sb, n, rank * 1000 + t * 100 + it);
        MPI_Irecv(rb, 400000, MPI_BYTE, peer, t, comm, &rq[0]);
        if (it % 3 == 0) MPI_Issend(sb, (int) n, MPI_BYTE, peer, t, comm, &rq[1]);
        else MPI_Isend(sb, (int) n, MPI_BYTE, peer, t, comm, &rq[1]);
        MPI_Wait(&rq[0], &st);
        MPI_Wait(&rq[1], MPI_STATUS_IGNORE);
        MPI_Get_count(&st, MPI_BYTE, &cnt);
        if ((size_t) cnt != n || verify(rb, n, peer * 1000 + t * 100 + it)) {
            fprintf(stderr, "[%d] thread %d iter %d: bad message (count %d, expected %zu)\n", rank, t, it, cnt, n);
            __atomic_add_fetch(&errs, 1, __ATOMIC_RELAXED);
        }
        if (it % 10 == 0) { /* probe while others are active */
            int flag;
            MPI_Iprobe(MPI_ANY_SOURCE, 1000 + t, comm, &flag, MPI_STATUS_IGNORE);
            if (flag) __atomic_add_fetch(&errs, 1, __ATOMIC_RELAXED);
        }
    }
    free(sb);
    free(rb);
    return NULL;
}

int main(int argc, char **argv)
{
    int provided;
    pthread_t th[NTHREADS];
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    if (provided < MPI_THREAD_MULTIPLE) {
        if (0 == rank) printf("MPI_THREAD_MULTIPLE not provided\n");
        MPI_Finalize();
        return 1;
    }
    if (nprocs % 2) { fprintf(stderr, "needs an even number of ranks\n"); MPI_Abort(MPI_COMM_WORLD, 2); }
    for (int t = 0; t < NTHREADS; t++) MPI_Comm_dup(MPI_COMM_WORLD, &comms[t]);
    for (int t = 0; t < NTHREADS; t++) pthread_create(&th[t], NULL, worker, (void *) (intptr_t) t);
    for (int t = 0; t < NTHREADS; t++) pthread_join(th[t], NULL);
    for (int t = 0; t < NTHREADS; t++) MPI_Comm_free(&comms[t]);
    return test_finish();
}
