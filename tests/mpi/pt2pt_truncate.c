/*
 * pml/mdq truncation: a message longer than the receive buffer reports
 * MPI_ERR_TRUNCATE (return code with MPI_ERRORS_RETURN and status.MPI_ERROR
 * from Waitall), fills exactly the buffer, and later traffic is unharmed.
 */
#include "pt2pt_common.h"

int main(int argc, char **argv)
{
    static const size_t sizes[] = {16, 5000, 100000, 1 << 21};
    test_init(&argc, &argv);
    if (nprocs < 2) { fprintf(stderr, "needs 2 ranks\n"); MPI_Abort(MPI_COMM_WORLD, 2); }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);

    for (int k = 0; k < 4; k++) {
        size_t n = sizes[k], small = n / 2;
        unsigned char *buf = malloc(n + 16);
        if (0 == rank) {
            fill(buf, n, k);
            MPI_Send(buf, (int) n, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
            MPI_Send(buf, (int) n, MPI_BYTE, 1, 2, MPI_COMM_WORLD);
            MPI_Send(buf, (int) n, MPI_BYTE, 1, 3, MPI_COMM_WORLD);
        } else if (1 == rank) {
            MPI_Status st;
            MPI_Request rq[2];
            MPI_Status sts[2];
            int rc, cls, cnt, dummy = 0;
            memset(buf, 0xab, n + 16);
            rc = MPI_Recv(buf, (int) small, MPI_BYTE, 0, 1, MPI_COMM_WORLD, &st);
            MPI_Error_class(rc, &cls);
            CHECK(cls == MPI_ERR_TRUNCATE, "size %zu: Recv returned class %d", n, cls);
            CHECK(0 == verify(buf, small, k), "truncated payload %zu", n);
            CHECK(buf[small] == 0xab, "wrote past the receive buffer (size %zu)", n);
            MPI_Get_count(&st, MPI_BYTE, &cnt);
            CHECK((size_t) cnt <= small, "count %d beyond buffer %zu", cnt, small);

            memset(buf, 0xab, n + 16);
            MPI_Irecv(buf, (int) small, MPI_BYTE, 0, 2, MPI_COMM_WORLD, &rq[0]);
            MPI_Irecv(&dummy, 0, MPI_BYTE, 1, 4, MPI_COMM_WORLD, &rq[1]);
            rc = MPI_Waitall(1, rq, sts);
            CHECK(rc == MPI_ERR_IN_STATUS || rc != MPI_SUCCESS, "Waitall rc %d", rc);
            MPI_Error_class(sts[0].MPI_ERROR, &cls);
            CHECK(cls == MPI_ERR_TRUNCATE, "Waitall status class %d", cls);
            CHECK(buf[small] == 0xab, "Irecv wrote past the buffer");
            /* zero-size buffer vs a nonempty message */
            rc = MPI_Recv(NULL, 0, MPI_BYTE, 0, 3, MPI_COMM_WORLD, &st);
            MPI_Error_class(rc, &cls);
            CHECK(cls == MPI_ERR_TRUNCATE, "zero-size receive class %d", cls);
            MPI_Send(&dummy, 0, MPI_BYTE, 1, 4, MPI_COMM_WORLD); /* to self: completes rq[1] */
            MPI_Wait(&rq[1], MPI_STATUS_IGNORE);
        }
        /* communication still works afterwards */
        if (0 == rank) {
            fill(buf, n, 100 + k);
            MPI_Send(buf, (int) n, MPI_BYTE, 1, 9, MPI_COMM_WORLD);
        } else if (1 == rank) {
            MPI_Recv(buf, (int) n, MPI_BYTE, 0, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            CHECK(0 == verify(buf, n, 100 + k), "after truncation payload %zu", n);
        }
        free(buf);
    }
    return test_finish();
}
