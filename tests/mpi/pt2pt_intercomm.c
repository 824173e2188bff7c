/*
 * pml/mdq on intercommunicators: the two halves of MPI_COMM_WORLD exchange
 * eager and rendezvous messages (ranks are remote-group ranks, ANY_SOURCE
 * selects from the remote group), and an intercommunicator collective.
 */
#include "pt2pt_common.h"

int main(int argc, char **argv)
{
    MPI_Comm local, inter;
    int color, lrank, lsize, rsize;
    static const size_t sizes[] = {0, 100, 5000, 300000};
    test_init(&argc, &argv);
    if (nprocs < 2) { fprintf(stderr, "needs 2 ranks\n"); MPI_Abort(MPI_COMM_WORLD, 2); }
    color = rank % 2;
    MPI_Comm_split(MPI_COMM_WORLD, color, rank, &local);
    MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, 1 - color, 99, &inter);
    MPI_Comm_rank(inter, &lrank);
    MPI_Comm_size(inter, &lsize);
    MPI_Comm_remote_size(inter, &rsize);

    for (int k = 0; k < 4; k++) {
        size_t n = sizes[k];
        unsigned char *sb = malloc(n + 1), *rb = malloc(n + 1);
        int peer = lrank % rsize;
        MPI_Request rq;
        MPI_Status st;
        int cnt;
        /* everyone sends to remote rank (lrank % rsize); receives from anyone */
        fill(sb, n, lrank * 10 + color + (int) k);
        MPI_Isend(sb, (int) n, MPI_BYTE, peer, k, inter, &rq);
        /* how many remote ranks target me */
        int incoming = 0;
        for (int r = 0; r < rsize; r++) if (r % lsize == lrank) incoming++;
        for (int i = 0; i < incoming; i++) {
            memset(rb, 0, n);
            MPI_Recv(rb, (int) n, MPI_BYTE, MPI_ANY_SOURCE, k, inter, &st);
            MPI_Get_count(&st, MPI_BYTE, &cnt);
            CHECK(st.MPI_SOURCE >= 0 && st.MPI_SOURCE < rsize && st.MPI_SOURCE % lsize == lrank,
                  "source %d", st.MPI_SOURCE);
            CHECK((size_t) cnt == n && 0 == verify(rb, n, st.MPI_SOURCE * 10 + (1 - color) + (int) k),
                  "intercomm payload size %zu from %d", n, st.MPI_SOURCE);
        }
        MPI_Wait(&rq, MPI_STATUS_IGNORE);
        free(sb);
        free(rb);
    }
    {
        int v = color ? 7 : 3, got = -1;
        /* group 0's rank 0 is the root; the other group receives */
        if (0 == color) MPI_Bcast(&v, 1, MPI_INT, 0 == lrank ? MPI_ROOT : MPI_PROC_NULL, inter);
        else MPI_Bcast(&got, 1, MPI_INT, 0, inter);
        if (1 == color) CHECK(got == 3, "intercomm bcast %d", got);
    }
    MPI_Comm_free(&inter);
    MPI_Comm_free(&local);
    return test_finish();
}
