/*
 * pml/mdq: non-contiguous datatypes (convertor path) on the send side, the
 * receive side and both, eager through pipeline/rendezvous sizes.
 */
#include "pt2pt_common.h"

int main(int argc, char **argv)
{
    static const int counts[] = {0, 1, 10, 300, 1000, 5000, 40000, 300000};
    test_init(&argc, &argv);
    if (nprocs < 2) { fprintf(stderr, "needs 2 ranks\n"); MPI_Abort(MPI_COMM_WORLD, 2); }

    for (int k = 0; k < (int) (sizeof(counts) / sizeof(counts[0])); k++) {
        int n = counts[k];
        MPI_Datatype vec; /* every other int */
        int *strided = calloc(2 * (size_t) n + 2, sizeof(int));
        int *flat = calloc((size_t) n + 1, sizeof(int));
        MPI_Type_vector(n, 1, 2, MPI_INT, &vec);
        MPI_Type_commit(&vec);

        for (int mode = 0; mode < 3; mode++) { /* 0: nc->contig 1: contig->nc 2: nc->nc */
            if (0 == rank) {
                for (int i = 0; i < n; i++) { strided[2 * i] = i * 3 + mode; strided[2 * i + 1] = -1; flat[i] = i * 3 + mode; }
                if (mode == 1) MPI_Send(flat, n, MPI_INT, 1, mode, MPI_COMM_WORLD);
                else MPI_Send(strided, 1, vec, 1, mode, MPI_COMM_WORLD);
            } else if (1 == rank) {
                MPI_Status st;
                int cnt;
                memset(strided, 0x55, (2 * (size_t) n + 2) * sizeof(int));
                memset(flat, 0, ((size_t) n + 1) * sizeof(int));
                if (mode == 0) {
                    MPI_Recv(flat, n, MPI_INT, 0, mode, MPI_COMM_WORLD, &st);
                    MPI_Get_count(&st, MPI_INT, &cnt);
                    CHECK(cnt == n, "count %d != %d", cnt, n);
                    for (int i = 0; i < n; i++) if (flat[i] != i * 3 + mode) { CHECK(0, "n=%d mode %d elem %d", n, mode, i); break; }
                } else {
                    MPI_Recv(strided, 1, vec, 0, mode, MPI_COMM_WORLD, &st);
                    for (int i = 0; i < n; i++) {
                        if (strided[2 * i] != i * 3 + mode) { CHECK(0, "n=%d mode %d elem %d", n, mode, i); break; }
                        if (i + 1 < n && strided[2 * i + 1] != 0x55555555) { CHECK(0, "gap %d overwritten", i); break; }
                    }
                }
            }
        }
        /* to self, non-contiguous receive (btl/self delivers the CTS and the
         * fragments inside the sender's own calls) */
        {
            MPI_Request rq;
            for (int i = 0; i < n; i++) flat[i] = i ^ 0x5a5a;
            memset(strided, 0, (2 * (size_t) n + 2) * sizeof(int));
            MPI_Irecv(strided, 1, vec, rank, 77, MPI_COMM_WORLD, &rq);
            MPI_Send(flat, n, MPI_INT, rank, 77, MPI_COMM_WORLD);
            MPI_Wait(&rq, MPI_STATUS_IGNORE);
            for (int i = 0; i < n; i++) if (strided[2 * i] != (i ^ 0x5a5a)) { CHECK(0, "self n=%d elem %d", n, i); break; }
            memset(strided, 0, (2 * (size_t) n + 2) * sizeof(int));
            MPI_Irecv(strided, 1, vec, 0, 78, MPI_COMM_SELF, &rq);
            MPI_Ssend(flat, n, MPI_INT, 0, 78, MPI_COMM_SELF);
            MPI_Wait(&rq, MPI_STATUS_IGNORE);
            for (int i = 0; i < n; i++) if (strided[2 * i] != (i ^ 0x5a5a)) { CHECK(0, "self ssend n=%d elem %d", n, i); break; }
        }
        MPI_Type_free(&vec);
        free(strided);
        free(flat);
    }
    return test_finish();
}
