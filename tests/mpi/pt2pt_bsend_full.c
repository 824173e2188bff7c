/*
 * pml/mdq buffered send into a full attached buffer: MPI_Bsend and
 * MPI_Ibsend return MPI_ERR_BUFFER through the communicator's error handler
 * (MPI_ERRORS_RETURN here), and the failed sends leave no hole in the
 * message order: every later message to the same rank arrives, in order.
 * MPI_Start of a persistent buffered send that does not fit fails the same
 * way and leaves the request inactive (a wait returns at once).
 */
#include "pt2pt_common.h"
#include <unistd.h>

int main(int argc, char **argv)
{
    int bsize = 2000 + MPI_BSEND_OVERHEAD;
    char *attach = malloc((size_t) bsize);
    unsigned char small[100], big[8000];

    test_init(&argc, &argv);
    if (nprocs < 2) {
        fprintf(stderr, "needs 2 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (0 == rank) {
        MPI_Request rq;
        int rc, cls;
        MPI_Buffer_attach(attach, bsize);
        fill(small, sizeof(small), 1);
        fill(big, sizeof(big), 2);
        rc = MPI_Bsend(small, (int) sizeof(small), MPI_BYTE, 1, 1, MPI_COMM_WORLD);
        CHECK(MPI_SUCCESS == rc, "Bsend that fits failed (%d)", rc);
        rc = MPI_Bsend(big, (int) sizeof(big), MPI_BYTE, 1, 1, MPI_COMM_WORLD);
        MPI_Error_class(rc, &cls);
        CHECK(MPI_ERR_BUFFER == cls, "Bsend beyond the attached buffer: class %d", cls);
        rc = MPI_Ibsend(big, (int) sizeof(big), MPI_BYTE, 1, 1, MPI_COMM_WORLD, &rq);
        MPI_Error_class(rc, &cls);
        CHECK(MPI_ERR_BUFFER == cls, "Ibsend beyond the attached buffer: class %d", cls);
        if (MPI_SUCCESS == rc) MPI_Wait(&rq, MPI_STATUS_IGNORE);
        /* a persistent buffered send whose round fails to start is
         * inactive again: a wait returns at once, and it can be freed */
        rc = MPI_Bsend_init(big, (int) sizeof(big), MPI_BYTE, 1, 1, MPI_COMM_WORLD, &rq);
        CHECK(MPI_SUCCESS == rc, "Bsend_init failed (%d)", rc);
        rc = MPI_Start(&rq);
        MPI_Error_class(rc, &cls);
        CHECK(MPI_ERR_BUFFER == cls, "Start of a Bsend_init beyond the attached buffer: class %d",
              cls);
        alarm(30); /* a wait on a request left active would hang */
        rc = MPI_Wait(&rq, MPI_STATUS_IGNORE);
        alarm(0);
        CHECK(MPI_SUCCESS == rc, "Wait on the persistent request that did not start (%d)", rc);
        rc = MPI_Request_free(&rq);
        CHECK(MPI_SUCCESS == rc && MPI_REQUEST_NULL == rq, "Request_free after a failed Start (%d)",
              rc);
        /* later traffic to the same rank: standard, then buffered again */
        rc = MPI_Send(big, (int) sizeof(big), MPI_BYTE, 1, 2, MPI_COMM_WORLD);
        CHECK(MPI_SUCCESS == rc, "Send after the failed Bsend failed (%d)", rc);
        rc = MPI_Send(small, 0, MPI_BYTE, 1, 3, MPI_COMM_WORLD);
        CHECK(MPI_SUCCESS == rc, "zero-byte Send after the failed Bsend failed (%d)", rc);
        MPI_Buffer_detach(&attach, &bsize);
        MPI_Buffer_attach(attach, bsize);
        rc = MPI_Bsend(small, (int) sizeof(small), MPI_BYTE, 1, 4, MPI_COMM_WORLD);
        CHECK(MPI_SUCCESS == rc, "Bsend after detach/attach failed (%d)", rc);
        MPI_Buffer_detach(&attach, &bsize);
    } else if (1 == rank) {
        unsigned char buf[8000];
        MPI_Status st;
        int cnt;
        /* any tag: an overtaking or lost message shows as a wrong tag/size */
        static const int tags[] = {1, 2, 3, 4};
        static const int sizes[] = {100, 8000, 0, 100};
        static const int seeds[] = {1, 2, 0, 1};
        for (int i = 0; i < 4; i++) {
            memset(buf, 0, sizeof(buf));
            MPI_Recv(buf, (int) sizeof(buf), MPI_BYTE, 0, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
            MPI_Get_count(&st, MPI_BYTE, &cnt);
            CHECK(st.MPI_TAG == tags[i] && cnt == sizes[i],
                  "message %d: tag %d, %d bytes; expected tag %d, %d bytes", i, st.MPI_TAG, cnt,
                  tags[i], sizes[i]);
            CHECK(0 == verify(buf, (size_t) cnt, seeds[i]), "message %d: payload", i);
        }
    }
    free(attach);
    return test_finish();
}
