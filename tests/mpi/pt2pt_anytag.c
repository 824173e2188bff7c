/*
 * pml/mdq: MPI_ANY_TAG receives must never match the negative tags that
 * Open MPI's collectives use on the same communicator. Rank 0 posts
 * ANY_SOURCE/ANY_TAG receives, everyone runs collectives (which send
 * internal messages to rank 0), then user messages complete the receives.
 */
#include "pt2pt_common.h"

int main(int argc, char **argv)
{
    int vals[64], x = 0;
    MPI_Request rq[64];
    test_init(&argc, &argv);
    int nrecv = nprocs > 1 ? nprocs - 1 : 1;

    if (0 == rank)
        for (int i = 0; i < nrecv; i++)
            MPI_Irecv(&vals[i], 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &rq[i]);

    for (int it = 0; it < 5; it++) {
        int v = rank, s = 0;
        int big[2000];
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Allreduce(&v, &s, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        CHECK(s == nprocs * (nprocs - 1) / 2, "allreduce %d", s);
        for (int i = 0; i < 2000; i++) big[i] = rank == 0 ? i : 0;
        MPI_Bcast(big, 2000, MPI_INT, 0, MPI_COMM_WORLD);
        CHECK(big[1999] == 1999, "bcast");
        MPI_Reduce(&v, &s, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    }
    if (0 == rank) {
        int flag = 1;
        MPI_Testall(nrecv, rq, &flag, MPI_STATUSES_IGNORE);
        CHECK(!flag, "wildcard receive matched a collective message");
    }
    MPI_Barrier(MPI_COMM_WORLD);
    x = 1000 + rank;
    if (nprocs == 1) MPI_Send(&x, 1, MPI_INT, 0, 5, MPI_COMM_WORLD);
    else if (rank != 0) MPI_Send(&x, 1, MPI_INT, 0, 5 + rank, MPI_COMM_WORLD);
    if (0 == rank) {
        MPI_Status st[64];
        int seen = 0;
        MPI_Waitall(nrecv, rq, st);
        for (int i = 0; i < nrecv; i++) {
            CHECK(st[i].MPI_TAG >= 0, "negative tag %d delivered to ANY_TAG", st[i].MPI_TAG);
            CHECK(vals[i] == 1000 + st[i].MPI_SOURCE, "value %d from %d", vals[i], st[i].MPI_SOURCE);
            seen += vals[i];
        }
    }
    return test_finish();
}
