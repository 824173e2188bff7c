/*
 * pml/mdq: a flood of small standard sends to a receiver that is not
 * receiving yet. The BTL's immediate send (btl_sendi) soon refuses (the
 * shared-memory fast box and queue fill up), and the sender continues by
 * copying into BTL descriptors without a request. Checks that every
 * message arrives, in order, with its payload, for sizes from 0 B across
 * the 256 B copy limit to a medium message, blocking and nonblocking.
 */
#include "pt2pt_common.h"

#define NMSG 3000
static const size_t fsizes[] = {0, 1, 8, 64, 200, 256, 300, 512, 1000, 2048, 6000};
#define NFS (sizeof(fsizes) / sizeof(fsizes[0]))

int main(int argc, char **argv)
{
    unsigned char *buf;
    test_init(&argc, &argv);
    if (nprocs < 2) {
        fprintf(stderr, "needs at least 2 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    buf = malloc(6000 + 16);
    for (int blocking = 0; blocking < 2; blocking++) {
        if (0 == rank) {
            MPI_Request *rq = malloc(sizeof(MPI_Request) * NMSG);
            unsigned char **bufs = malloc(sizeof(unsigned char *) * NMSG);
            for (int j = 0; j < NMSG; j++) {
                size_t n = fsizes[(size_t) j % NFS];
                bufs[j] = malloc(n + 1);
                fill(bufs[j], n, j + blocking);
                if (blocking) {
                    MPI_Send(bufs[j], (int) n, MPI_BYTE, 1, 5, MPI_COMM_WORLD);
                    free(bufs[j]);
                } else {
                    MPI_Isend(bufs[j], (int) n, MPI_BYTE, 1, 5, MPI_COMM_WORLD, &rq[j]);
                    /* the buffer may be reused at once after a completed send */
                    if (j % 2) {
                        int flag = 0;
                        MPI_Test(&rq[j], &flag, MPI_STATUS_IGNORE);
                        if (flag) memset(bufs[j], 0x5a, n);
                    }
                }
            }
            if (!blocking) {
                MPI_Waitall(NMSG, rq, MPI_STATUSES_IGNORE);
                for (int j = 0; j < NMSG; j++) free(bufs[j]);
            }
            MPI_Barrier(MPI_COMM_WORLD);
            free(bufs);
            free(rq);
        } else if (1 == rank) {
            /* let the messages pile up on the way first */
            double t0 = MPI_Wtime();
            while (MPI_Wtime() - t0 < 0.2) {
            }
            for (int j = 0; j < NMSG; j++) {
                size_t n = fsizes[(size_t) j % NFS];
                MPI_Status st;
                int cnt;
                memset(buf, 0xcd, n + 16);
                MPI_Recv(buf, 6000, MPI_BYTE, 0, 5, MPI_COMM_WORLD, &st);
                MPI_Get_count(&st, MPI_BYTE, &cnt);
                if ((size_t) cnt != n || 0 != verify(buf, n, j + blocking)) {
                    CHECK(0, "%s message %d: %d bytes (expected %zu), bad byte %zu",
                          blocking ? "blocking" : "nonblocking", j, cnt, n,
                          verify(buf, n, j + blocking));
                    break;
                }
            }
            MPI_Barrier(MPI_COMM_WORLD);
        } else {
            MPI_Barrier(MPI_COMM_WORLD);
        }
    }
    free(buf);
    return test_finish();
}
