/*
 * pml/mdq probe family: Probe/Iprobe report source, tag and count of eager
 * and rendezvous messages without consuming them (wildcards included);
 * Mprobe/Improbe remove a message that only Mrecv/Imrecv can receive.
 */
#include "pt2pt_common.h"

int main(int argc, char **argv)
{
    static const size_t sizes[] = {0, 100, 5000, 100000, 1 << 21};
    test_init(&argc, &argv);
    if (nprocs < 2) { fprintf(stderr, "needs 2 ranks\n"); MPI_Abort(MPI_COMM_WORLD, 2); }

    for (int k = 0; k < 5; k++) {
        size_t n = sizes[k];
        unsigned char *buf = malloc(n + 1);
        if (0 != rank) {
            fill(buf, n, rank * 10 + k);
            MPI_Send(buf, (int) n, MPI_BYTE, 0, 5 + k, MPI_COMM_WORLD);
            MPI_Send(buf, (int) n, MPI_BYTE, 0, 50 + k, MPI_COMM_WORLD);
            MPI_Send(buf, (int) n, MPI_BYTE, 0, 60 + k, MPI_COMM_WORLD);
        } else {
            for (int r = 1; r < nprocs; r++) {
                MPI_Status st;
                int cnt, flag = 0;
                /* blocking probe, wildcard source */
                MPI_Probe(MPI_ANY_SOURCE, 5 + k, MPI_COMM_WORLD, &st);
                MPI_Get_count(&st, MPI_BYTE, &cnt);
                CHECK((size_t) cnt == n && st.MPI_TAG == 5 + k, "probe count %d tag %d", cnt, st.MPI_TAG);
                /* probing again sees the same message */
                {
                    MPI_Status st2;
                    MPI_Iprobe(st.MPI_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st2);
                    CHECK(flag && st2.MPI_SOURCE == st.MPI_SOURCE, "iprobe after probe");
                }
                memset(buf, 0, n);
                MPI_Recv(buf, cnt, MPI_BYTE, st.MPI_SOURCE, st.MPI_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                CHECK(0 == verify(buf, n, st.MPI_SOURCE * 10 + k), "probe+recv payload %zu", n);

                /* mprobe + mrecv from the same source */
                {
                    MPI_Message msg;
                    int src = st.MPI_SOURCE;
                    MPI_Mprobe(src, 50 + k, MPI_COMM_WORLD, &msg, &st);
                    MPI_Get_count(&st, MPI_BYTE, &cnt);
                    CHECK((size_t) cnt == n && st.MPI_SOURCE == src, "mprobe status");
                    /* the matched message is gone from the queue */
                    MPI_Iprobe(src, 50 + k, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
                    CHECK(!flag, "message still visible after mprobe");
                    memset(buf, 0, n);
                    MPI_Mrecv(buf, cnt, MPI_BYTE, &msg, &st);
                    CHECK(msg == MPI_MESSAGE_NULL, "message not consumed");
                    CHECK(0 == verify(buf, n, src * 10 + k), "mrecv payload %zu", n);

                    /* improbe (polling) + imrecv */
                    flag = 0;
                    while (!flag) MPI_Improbe(src, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &msg, &st);
                    CHECK(st.MPI_TAG == 60 + k, "improbe tag %d", st.MPI_TAG);
                    {
                        MPI_Request rq;
                        memset(buf, 0, n);
                        MPI_Imrecv(buf, (int) n, MPI_BYTE, &msg, &rq);
                        MPI_Wait(&rq, &st);
                        MPI_Get_count(&st, MPI_BYTE, &cnt);
                        CHECK((size_t) cnt == n && 0 == verify(buf, n, src * 10 + k), "imrecv payload %zu", n);
                    }
                }
            }
        }
        free(buf);
        MPI_Barrier(MPI_COMM_WORLD);
    }
    /* iprobe with nothing pending */
    {
        int flag = 1;
        MPI_Iprobe(MPI_ANY_SOURCE, 999, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
        CHECK(!flag, "iprobe found a message that was never sent");
    }
    return test_finish();
}
