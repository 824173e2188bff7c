/*
 * pml/mdq persistent requests: Send_init/Ssend_init/Bsend_init/Recv_init
 * restarted many times with Start and Startall, sizes across the eager /
 * rendezvous boundary, payload changes every round.
 */
#include "pt2pt_common.h"

int main(int argc, char **argv)
{
    static const size_t sizes[] = {0, 64, 5000, 300000};
    test_init(&argc, &argv);
    if (nprocs < 2) { fprintf(stderr, "needs 2 ranks\n"); MPI_Abort(MPI_COMM_WORLD, 2); }
    int peer = rank ^ 1;
    if (peer >= nprocs) peer = rank;

    for (int k = 0; k < 4; k++) {
        size_t n = sizes[k];
        unsigned char *sb = malloc(n + 1), *rb = malloc(n + 1);
        MPI_Request rq[2];
        for (int mode = 0; mode < 2; mode++) {
            if (0 == mode) MPI_Send_init(sb, (int) n, MPI_BYTE, peer, k, MPI_COMM_WORLD, &rq[0]);
            else MPI_Ssend_init(sb, (int) n, MPI_BYTE, peer, k, MPI_COMM_WORLD, &rq[0]);
            MPI_Recv_init(rb, (int) n, MPI_BYTE, peer, k, MPI_COMM_WORLD, &rq[1]);
            for (int it = 0; it < 20; it++) {
                MPI_Status st[2];
                int cnt;
                fill(sb, n, rank * 1000 + it);
                memset(rb, 0, n);
                if (it & 1) {
                    MPI_Startall(2, rq);
                } else {
                    MPI_Start(&rq[1]);
                    MPI_Start(&rq[0]);
                }
                MPI_Waitall(2, rq, st);
                MPI_Get_count(&st[1], MPI_BYTE, &cnt);
                CHECK((size_t) cnt == n && st[1].MPI_SOURCE == peer, "round %d count %d", it, cnt);
                CHECK(0 == verify(rb, n, peer * 1000 + it), "size %zu mode %d round %d payload", n, mode, it);
            }
            MPI_Request_free(&rq[0]);
            MPI_Request_free(&rq[1]);
        }
        free(sb);
        free(rb);
    }

    /* persistent buffered send */
    {
        int bsize = 6 * (100000 + MPI_BSEND_OVERHEAD); /* all five rounds may be pending */
        void *attach = malloc(bsize);
        unsigned char *sb = malloc(100000), *rb = malloc(100000);
        MPI_Request rq;
        MPI_Buffer_attach(attach, bsize);
        if (0 == rank) {
            MPI_Bsend_init(sb, 100000, MPI_BYTE, 1, 77, MPI_COMM_WORLD, &rq);
            for (int it = 0; it < 5; it++) {
                fill(sb, 100000, it);
                MPI_Start(&rq);
                MPI_Wait(&rq, MPI_STATUS_IGNORE);
            }
            MPI_Request_free(&rq);
        } else if (1 == rank) {
            for (int it = 0; it < 5; it++) {
                MPI_Recv(rb, 100000, MPI_BYTE, 0, 77, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                CHECK(0 == verify(rb, 100000, it), "bsend_init round %d", it);
            }
        }
        MPI_Buffer_detach(&attach, &bsize);
        free(attach);
        free(sb);
        free(rb);
    }
    /* an inactive persistent request can be freed without starting */
    {
        MPI_Request rq;
        int x;
        MPI_Recv_init(&x, 1, MPI_INT, MPI_ANY_SOURCE, 1, MPI_COMM_WORLD, &rq);
        MPI_Request_free(&rq);
        MPI_Send_init(&x, 1, MPI_INT, 0, 1, MPI_COMM_WORLD, &rq);
        MPI_Request_free(&rq);
    }
    return test_finish();
}
