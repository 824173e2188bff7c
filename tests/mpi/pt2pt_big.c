/*
 * pml/mdq: a message larger than 2 GiB (count * extent overflows int; the
 * PML works in size_t). Sent as 2 GiB + 8 MiB of MPI_BYTE through a
 * contiguous derived type; checks status count (MPI_Get_elements_x) and
 * samples of the payload.
 */
#include "pt2pt_common.h"

int main(int argc, char **argv)
{
    const size_t chunk = 1 << 20;
    const int nchunks = 2048 + 8;
    const size_t n = chunk * (size_t) nchunks;
    MPI_Datatype mb;
    unsigned char *buf;
    test_init(&argc, &argv);
    if (nprocs < 2) { fprintf(stderr, "needs 2 ranks\n"); MPI_Abort(MPI_COMM_WORLD, 2); }
    MPI_Type_contiguous((int) chunk, MPI_BYTE, &mb);
    MPI_Type_commit(&mb);
    if (rank < 2) {
        buf = malloc(n);
        if (NULL == buf) { fprintf(stderr, "cannot allocate %zu bytes\n", n); MPI_Abort(MPI_COMM_WORLD, 3); }
        if (0 == rank) {
            for (size_t i = 0; i < n; i += 4096) buf[i] = (unsigned char) (i / 4096 * 13);
            buf[n - 1] = 0x5a;
            MPI_Send(buf, nchunks, mb, 1, 1, MPI_COMM_WORLD);
        } else {
            MPI_Status st;
            MPI_Count elems = 0;
            memset(buf, 0, n);
            MPI_Recv(buf, nchunks, mb, 0, 1, MPI_COMM_WORLD, &st);
            MPI_Get_elements_x(&st, MPI_BYTE, &elems);
            CHECK((size_t) elems == n, "received %lld bytes, expected %zu", (long long) elems, n);
            for (size_t i = 0; i < n; i += 4096)
                if (buf[i] != (unsigned char) (i / 4096 * 13)) { CHECK(0, "byte %zu", i); break; }
            CHECK(buf[n - 1] == 0x5a, "last byte");
        }
        free(buf);
    }
    MPI_Type_free(&mb);
    return test_finish();
}
