/*
 * pml/mdq's MPI_T performance variables read before MPI_Init (MPI allows
 * MPI_T first): the queue statistics (posted and unexpected queue
 * lengths, match attempts, items visited) have no communicator to sum over
 * yet and read 0. They walked the list of communicators before it existed
 * (SIGSEGV). After MPI_Init, a message through the queue shows in them.
 */
#include "mdq_pvar.h"

static const char *names[] = {"pml_mdq_posted_recvq_length", "pml_mdq_unexpected_msgq_length",
                              "pml_mdq_match_attempts", "pml_mdq_match_items_visited"};
#define NPV 4

int main(int argc, char **argv)
{
    MPI_T_pvar_handle h[NPV];
    mdq_pvar_init();
    for (int i = 0; i < NPV; ++i) {
        if (0 != mdq_pvar_find(names[i], &h[i])) {
            fprintf(stderr, "pvar %s missing before MPI_Init\n", names[i]);
            return 1;
        }
        unsigned long long v = mdq_pvar_read(h[i]);
        if (0 != v) {
            fprintf(stderr, "%s read %llu before MPI_Init, expected 0\n", names[i], v);
            return 1;
        }
    }
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    if (nprocs >= 2 && rank < 2) {
        int v = 7, got = 0;
        if (0 == rank) {
            MPI_Send(&v, 1, MPI_INT, 1, 3, MPI_COMM_WORLD);
        } else {
            MPI_Recv(&got, 1, MPI_INT, 0, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            CHECK(7 == got, "received %d, expected 7", got);
            CHECK(mdq_pvar_read(h[2]) > 0, "no match attempt counted after a receive");
        }
    }
    for (int i = 0; i < NPV; ++i) MPI_T_pvar_handle_free(mdq_pvar_session, &h[i]);
    mdq_pvar_fini();
    return test_finish();
}
