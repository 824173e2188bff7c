/*
 * pml/mdq cancel: a posted receive that is cancelled completes as cancelled
 * and never takes a later message; a send cancel is not honoured (Open MPI
 * semantics) and the message is still delivered.
 */
#include "pt2pt_common.h"

int main(int argc, char **argv)
{
    int a = 0, b = 0, flag;
    MPI_Request rq;
    MPI_Status st;
    test_init(&argc, &argv);
    if (nprocs < 2) { fprintf(stderr, "needs 2 ranks\n"); MPI_Abort(MPI_COMM_WORLD, 2); }

    if (1 == rank) {
        /* cancel receives posted with concrete and wildcard envelopes */
        int srcs[2] = {0, MPI_ANY_SOURCE};
        int tags[2] = {1, MPI_ANY_TAG};
        for (int i = 0; i < 2; i++) {
            MPI_Irecv(&a, 1, MPI_INT, srcs[i], tags[i], MPI_COMM_WORLD, &rq);
            MPI_Cancel(&rq);
            MPI_Wait(&rq, &st);
            MPI_Test_cancelled(&st, &flag);
            CHECK(flag, "receive %d not cancelled", i);
        }
        /* large receive buffer, cancelled: a rendezvous message must skip it */
        {
            static char big[1 << 20];
            MPI_Irecv(big, sizeof(big), MPI_CHAR, 0, 1, MPI_COMM_WORLD, &rq);
            MPI_Cancel(&rq);
            MPI_Wait(&rq, &st);
            MPI_Test_cancelled(&st, &flag);
            CHECK(flag, "big receive not cancelled");
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (0 == rank) {
        a = 42;
        MPI_Send(&a, 1, MPI_INT, 1, 1, MPI_COMM_WORLD);
    } else if (1 == rank) {
        MPI_Recv(&b, 1, MPI_INT, 0, 1, MPI_COMM_WORLD, &st);
        CHECK(b == 42, "message after cancels: %d", b);
        MPI_Test_cancelled(&st, &flag);
        CHECK(!flag, "completed receive reports cancelled");
    }

    /* cancelling a completed receive changes nothing */
    if (1 == rank) {
        MPI_Irecv(&b, 1, MPI_INT, 0, 2, MPI_COMM_WORLD, &rq);
        do { MPI_Test(&rq, &flag, &st); } while (0); /* may or may not be done */
        if (!flag) {
            MPI_Status s2;
            MPI_Recv(&a, 0, MPI_INT, 0, 3, MPI_COMM_WORLD, &s2); /* go-ahead was sent: wait for data */
            MPI_Wait(&rq, &st);
        } else {
            MPI_Recv(&a, 0, MPI_INT, 0, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
        CHECK(b == 7, "tag 2 payload %d", b);
    } else if (0 == rank) {
        b = 7;
        MPI_Send(&b, 1, MPI_INT, 1, 2, MPI_COMM_WORLD);
        MPI_Send(&b, 0, MPI_INT, 1, 3, MPI_COMM_WORLD);
    }

    /* send cancel: not supported by Open MPI PMLs, the message arrives */
    if (0 == rank) {
        a = 5;
        MPI_Isend(&a, 1, MPI_INT, 1, 4, MPI_COMM_WORLD, &rq);
        MPI_Cancel(&rq);
        MPI_Wait(&rq, &st);
        MPI_Test_cancelled(&st, &flag);
        CHECK(!flag, "send reported cancelled");
    } else if (1 == rank) {
        MPI_Recv(&b, 1, MPI_INT, 0, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        CHECK(b == 5, "payload after send cancel %d", b);
    }
    return test_finish();
}
