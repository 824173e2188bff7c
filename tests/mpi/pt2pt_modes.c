/*
 * pml/mdq send modes: synchronous sends complete only after the receive
 * matched (eager and rendezvous sizes), ready sends, buffered sends (MPI_Bsend,
 * MPI_Ibsend with a detach that waits), all with payload checks.
 */
#include "pt2pt_common.h"
#include <unistd.h>

static void sync_case(size_t n)
{
    unsigned char *buf = malloc(n + 1);
    int go = 1;
    if (0 == rank) {
        MPI_Request rq;
        int flag = 0;
        double t0;
        fill(buf, n, (int) n);
        MPI_Issend(buf, (int) n, MPI_BYTE, 1, 1, MPI_COMM_WORLD, &rq);
        t0 = MPI_Wtime();
        while (MPI_Wtime() - t0 < 0.2) {
            MPI_Test(&rq, &flag, MPI_STATUS_IGNORE);
            CHECK(!flag, "Issend of %zu bytes completed before the receive was posted", n);
            if (flag) break;
        }
        MPI_Send(&go, 1, MPI_INT, 1, 2, MPI_COMM_WORLD);
        MPI_Wait(&rq, MPI_STATUS_IGNORE);
    } else if (1 == rank) {
        MPI_Recv(&go, 1, MPI_INT, 0, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        memset(buf, 0, n);
        MPI_Recv(buf, (int) n, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        CHECK(0 == verify(buf, n, (int) n), "ssend payload %zu", n);
    }
    free(buf);
}

int main(int argc, char **argv)
{
    static const size_t sizes[] = {0, 16, 3000, 70000, 1 << 20};
    test_init(&argc, &argv);
    if (nprocs < 2) { fprintf(stderr, "needs 2 ranks\n"); MPI_Abort(MPI_COMM_WORLD, 2); }

    for (int k = 0; k < 5; k++) sync_case(sizes[k]);

    /* blocking MPI_Ssend completes too */
    for (int k = 0; k < 5; k++) {
        size_t n = sizes[k];
        unsigned char *buf = malloc(n + 1);
        if (0 == rank) { fill(buf, n, k); MPI_Ssend(buf, (int) n, MPI_BYTE, 1, 10 + k, MPI_COMM_WORLD); }
        else if (1 == rank) {
            MPI_Recv(buf, (int) n, MPI_BYTE, 0, 10 + k, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            CHECK(0 == verify(buf, n, k), "Ssend payload %zu", n);
        }
        free(buf);
    }

    /* ready send: the receive is posted before the barrier */
    for (int k = 0; k < 5; k++) {
        size_t n = sizes[k];
        unsigned char *buf = malloc(n + 1);
        MPI_Request rq = MPI_REQUEST_NULL;
        if (1 == rank) MPI_Irecv(buf, (int) n, MPI_BYTE, 0, 20 + k, MPI_COMM_WORLD, &rq);
        MPI_Barrier(MPI_COMM_WORLD);
        if (0 == rank) { fill(buf, n, 20 + k); MPI_Rsend(buf, (int) n, MPI_BYTE, 1, 20 + k, MPI_COMM_WORLD); }
        if (1 == rank) {
            MPI_Wait(&rq, MPI_STATUS_IGNORE);
            CHECK(0 == verify(buf, n, 20 + k), "Rsend payload %zu", n);
        }
        free(buf);
    }

    /* buffered: the user buffer may be reused right after Bsend/Ibsend */
    {
        int bsize = 0, per;
        void *attach;
        MPI_Pack_size((int) sizes[4], MPI_BYTE, MPI_COMM_WORLD, &per);
        bsize = 10 * (per + MPI_BSEND_OVERHEAD);
        attach = malloc(bsize);
        MPI_Buffer_attach(attach, bsize);
        for (int k = 0; k < 5; k++) {
            size_t n = sizes[k];
            unsigned char *buf = malloc(n + 1);
            if (0 == rank) {
                MPI_Request rq;
                fill(buf, n, 30 + k);
                MPI_Bsend(buf, (int) n, MPI_BYTE, 1, 30 + k, MPI_COMM_WORLD);
                memset(buf, 0xee, n);
                fill(buf, n, 40 + k);
                MPI_Ibsend(buf, (int) n, MPI_BYTE, 1, 40 + k, MPI_COMM_WORLD, &rq);
                MPI_Wait(&rq, MPI_STATUS_IGNORE);
                memset(buf, 0xee, n);
            } else if (1 == rank) {
                usleep(20000); /* make the sender finish first */
                MPI_Recv(buf, (int) n, MPI_BYTE, 0, 30 + k, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                CHECK(0 == verify(buf, n, 30 + k), "Bsend payload %zu", n);
                MPI_Recv(buf, (int) n, MPI_BYTE, 0, 40 + k, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                CHECK(0 == verify(buf, n, 40 + k), "Ibsend payload %zu", n);
            }
            free(buf);
        }
        MPI_Buffer_detach(&attach, &bsize);
        free(attach);
    }
    return test_finish();
}
