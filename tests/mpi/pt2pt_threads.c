/*
 * pml/mdq under MPI_THREAD_MULTIPLE: several threads per rank exchange
 * eager and rendezvous messages concurrently on the same communicator
 * (one tag per thread) and on per-thread duplicates, checking payloads.
 * Then a message-rate phase (as MPICH's threads/pt2pt "threads"): on one
 * tag, every thread of the even rank sends windows of RWINDOW small
 * messages and every thread of the odd rank receives them, alternately
 * by MPI_Recv and by MPI_Irecv/MPI_Waitall, so that requests complete in
 * one thread while others post new ones, reusing the requests just freed.
 * (mdq once read a request after signalling its completion and could
 * return it to the free list after another thread had taken it again; this
 * phase did not hit that race in 20 runs of the old code, MPICH's
 * threads/pt2pt "threads", in the conformance gate, hit it in 4 of 19.)
 * Then every thread sends BITERS buffered messages (MPI_Bsend and
 * MPI_Ibsend, eager and rendezvous sizes) through one attached buffer while
 * the peer's threads receive them, and MPI_Buffer_detach must return once
 * they are out: Open MPI 4.1's mca_pml_base_bsend_request_start counts the
 * pending buffered sends outside its lock, and with it concurrent sends
 * lost counts and detach waited forever (an alarm reports that).
 * Last, PTHREADS threads each restart their own persistent requests with
 * Start/Wait, as MPICH's threads/pt2pt mt_*sendrecv_pers* do: PLOOPS rounds
 * of a small MPI_Ssend_init / MPI_Recv_init pair, then a few of a
 * rendezvous-sized one. mdq once stored 0 in a request's release count when
 * a round started: the previous round's completion, often in another
 * thread (a synchronous send completes on the peer's ACK), added its one
 * after signalling, so the store could lose it, and a later round then
 * returned the request to the free list while the user still held it. The
 * old code crashed in 3 of 4 runs of this test, and in 5 of 6 runs of this
 * phase alone (segfault, or free() of an invalid pointer); versions of the
 * phase with a rendezvous round every 100, or standard-mode small sends,
 * caught it in 0-1 of 6.
 */
#include "pt2pt_common.h"
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#define NTHREADS 4
#define ITERS 60

static MPI_Comm comms[NTHREADS];

static const char *watchdog_msg;

static void watchdog_fired(int sig)
{
    (void) sig;
    (void) !write(2, watchdog_msg, strlen(watchdog_msg));
    _exit(1);
}

/* a phase that does not end within secs (alarm(0)) ends the process with msg */
static void watchdog(const char *msg, unsigned secs)
{
    watchdog_msg = msg;
    signal(SIGALRM, watchdog_fired);
    alarm(secs);
}

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

#define RLOOPS 2000
#define RWINDOW 16

static void *rate_worker(void *arg)
{
    (void) arg;
    int peer = rank ^ 1;
    char sbuf[64] = {0}, rbuf[64];
    MPI_Request rq[RWINDOW];
    for (int i = 0; i < RLOOPS; i++) {
        for (int j = 0; j < RWINDOW; j++) {
            int n = 1 + (i + j) % 64;
            if (i % 2) {
                /* blocking: a receive freed at once is the next one's request */
                if (0 == rank % 2) MPI_Send(sbuf, n, MPI_CHAR, peer, 0, MPI_COMM_WORLD);
                else MPI_Recv(rbuf, 64, MPI_CHAR, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                rq[j] = MPI_REQUEST_NULL;
            } else if (0 == rank % 2) {
                MPI_Isend(sbuf, n, MPI_CHAR, peer, 0, MPI_COMM_WORLD, &rq[j]);
            } else {
                MPI_Irecv(rbuf, 64, MPI_CHAR, peer, 0, MPI_COMM_WORLD, &rq[j]);
            }
        }
        MPI_Waitall(RWINDOW, rq, MPI_STATUSES_IGNORE);
    }
    return NULL;
}

static void rate_phase(void)
{
    pthread_t th[NTHREADS];
    watchdog("message-rate phase: no progress for 60 s (a receive lost?)\n", 60);
    for (int t = 0; t < NTHREADS; t++) pthread_create(&th[t], NULL, rate_worker, NULL);
    for (int t = 0; t < NTHREADS; t++) pthread_join(th[t], NULL);
    MPI_Barrier(MPI_COMM_WORLD);
    alarm(0);
}

/* mostly tiny messages, so that the threads' sends start at once */
#define BITERS 1000
static const size_t bsizes[] = {4, 4, 4, 4, 100, 4, 4, 4, 4, 3000, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4,
                                4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 70000};
#define NBSIZES (sizeof(bsizes) / sizeof(bsizes[0]))

static void *bsend_worker(void *arg)
{
    int t = (int) (intptr_t) arg;
    int peer = rank ^ 1;
    unsigned char *sb = malloc(70000), *rb = malloc(70000);
    for (int it = 0; it < BITERS; it++) {
        size_t n = bsizes[(it + t) % NBSIZES];
        fill(sb, n, rank * 1000 + t * 100 + it);
        if (it & 1) {
            MPI_Request rq;
            MPI_Ibsend(sb, (int) n, MPI_BYTE, peer, 2000 + t, MPI_COMM_WORLD, &rq);
            MPI_Wait(&rq, MPI_STATUS_IGNORE);
        } else {
            MPI_Bsend(sb, (int) n, MPI_BYTE, peer, 2000 + t, MPI_COMM_WORLD);
        }
    }
    for (int it = 0; it < BITERS; it++) {
        size_t n = bsizes[(it + t) % NBSIZES];
        MPI_Status st;
        int cnt;
        MPI_Recv(rb, 70000, MPI_BYTE, peer, 2000 + t, MPI_COMM_WORLD, &st);
        MPI_Get_count(&st, MPI_BYTE, &cnt);
        if ((size_t) cnt != n || verify(rb, n, peer * 1000 + t * 100 + it)) {
            fprintf(stderr, "[%d] thread %d buffered message %d: bad message (count %d, "
                    "expected %zu)\n", rank, t, it, cnt, n);
            __atomic_add_fetch(&errs, 1, __ATOMIC_RELAXED);
        }
    }
    free(sb);
    free(rb);
    return NULL;
}

static void buffered_phase(void)
{
    pthread_t th[NTHREADS];
    int size = 0;
    for (int it = 0; it < BITERS; it++) {
        for (int t = 0; t < NTHREADS; t++) size += (int) bsizes[(it + t) % NBSIZES] + MPI_BSEND_OVERHEAD;
    }
    char *buf = malloc((size_t) size);
    MPI_Buffer_attach(buf, size);
    for (int t = 0; t < NTHREADS; t++) pthread_create(&th[t], NULL, bsend_worker, (void *) (intptr_t) t);
    for (int t = 0; t < NTHREADS; t++) pthread_join(th[t], NULL);
    watchdog("MPI_Buffer_detach did not return within 60 s: the count of pending buffered "
             "sends is wrong\n", 60);
    void *addr;
    MPI_Buffer_detach(&addr, &size);
    alarm(0);
    CHECK(addr == buf, "MPI_Buffer_detach returned another buffer");
    free(buf);
}

#define PTHREADS 8
#define PLOOPS 3000
#define PSMALL 64
#define PLARGE 300000
#define PLARGE_ROUNDS 4

/* rounds of one persistent request of n bytes, tag 3000 + t */
static void persistent_rounds(int t, size_t n, int rounds, int sync)
{
    int peer = rank ^ 1;
    int sender = 0 == rank % 2;
    unsigned char *buf = calloc(1, n);
    MPI_Request r;
    if (NULL == buf) MPI_Abort(MPI_COMM_WORLD, 2);
    if (sender && sync) MPI_Ssend_init(buf, (int) n, MPI_BYTE, peer, 3000 + t, MPI_COMM_WORLD, &r);
    else if (sender) MPI_Send_init(buf, (int) n, MPI_BYTE, peer, 3000 + t, MPI_COMM_WORLD, &r);
    else MPI_Recv_init(buf, (int) n, MPI_BYTE, peer, 3000 + t, MPI_COMM_WORLD, &r);
    for (int it = 0; it < rounds; it++) {
        if (sender) fill(buf, n, t * 100 + it);
        MPI_Status st;
        int cnt = -1;
        MPI_Start(&r);
        MPI_Wait(&r, &st);
        if (r == MPI_REQUEST_NULL) {
            fprintf(stderr, "[%d] thread %d: a persistent request became MPI_REQUEST_NULL\n", rank, t);
            __atomic_add_fetch(&errs, 1, __ATOMIC_RELAXED);
            MPI_Abort(MPI_COMM_WORLD, 1); /* the peer thread would wait forever */
        }
        if (!sender) MPI_Get_count(&st, MPI_BYTE, &cnt);
        if (!sender && ((size_t) cnt != n || verify(buf, n, t * 100 + it))) {
            fprintf(stderr, "[%d] thread %d round %d: bad persistent receive (%d of %zu B)\n",
                    rank, t, it, cnt, n);
            __atomic_add_fetch(&errs, 1, __ATOMIC_RELAXED);
        }
    }
    MPI_Request_free(&r);
    free(buf);
}

static void *persistent_worker(void *arg)
{
    int t = (int) (intptr_t) arg;
    /* a synchronous send completes when the peer's ACK arrives, in
     * whichever thread runs progress then */
    persistent_rounds(t, PSMALL, PLOOPS, 1);
    persistent_rounds(t, PLARGE, PLARGE_ROUNDS, t & 1);
    return NULL;
}

static void persistent_phase(void)
{
    pthread_t th[PTHREADS];
    watchdog("persistent phase: not done within 120 s (a completion lost?)\n",
             120); /* about 20 s here, oversubscribed */
    for (int t = 0; t < PTHREADS; t++) pthread_create(&th[t], NULL, persistent_worker, (void *) (intptr_t) t);
    for (int t = 0; t < PTHREADS; t++) pthread_join(th[t], NULL);
    MPI_Barrier(MPI_COMM_WORLD);
    alarm(0);
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
    rate_phase();
    buffered_phase();
    persistent_phase();
    return test_finish();
}
