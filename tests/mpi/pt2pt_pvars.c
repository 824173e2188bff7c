/*
 * pml/mdq MPI_T performance variables: queue lengths follow posted and
 * unexpected messages, match attempts grow, and the protocol counters count
 * eager and rendezvous (RGET/RPUT/pipeline) messages. Run with
 * pml_mdq_medium_piece_size 4096 on vader, it also checks that a medium
 * message of several pieces goes straight into a receive posted before it.
 */
#include <stdlib.h>
#include "mdq_pvar.h"

#define find_pvar mdq_pvar_find
#define rd mdq_pvar_read

int main(int argc, char **argv)
{
    MPI_T_pvar_handle posted, unexp, attempts, eager, rget, rput, pipe, medium, nocomm, direct;
    unsigned long long e0, a0, rndv0, rndv1;
    test_init(&argc, &argv);
    if (nprocs < 2) { fprintf(stderr, "needs 2 ranks\n"); MPI_Abort(MPI_COMM_WORLD, 2); }
    mdq_pvar_init();
    if (find_pvar("pml_mdq_posted_recvq_length", &posted) || find_pvar("pml_mdq_unexpected_msgq_length", &unexp)
        || find_pvar("pml_mdq_match_attempts", &attempts) || find_pvar("pml_mdq_eager_messages", &eager)
        || find_pvar("pml_mdq_rget_messages", &rget) || find_pvar("pml_mdq_rput_messages", &rput)
        || find_pvar("pml_mdq_pipeline_messages", &pipe) || find_pvar("pml_mdq_medium_messages", &medium)
        || find_pvar("pml_mdq_held_nocomm", &nocomm)
        || find_pvar("pml_mdq_medium_direct_messages", &direct)) {
        return test_finish();
    }

    /* posted queue */
    if (0 == rank) {
        MPI_Request rq[3];
        int x[3];
        unsigned long long p0 = rd(posted);
        for (int i = 0; i < 3; i++) MPI_Irecv(&x[i], 1, MPI_INT, 1, 40 + i, MPI_COMM_WORLD, &rq[i]);
        CHECK(rd(posted) >= p0 + 3, "posted length %llu after 3 receives (before %llu)", rd(posted), p0);
        for (int i = 0; i < 3; i++) { MPI_Cancel(&rq[i]); MPI_Wait(&rq[i], MPI_STATUS_IGNORE); }
        CHECK(rd(posted) == p0, "posted length %llu after cancel", rd(posted));
    }
    MPI_Barrier(MPI_COMM_WORLD);

    /* unexpected queue and eager counter */
    e0 = rd(eager);
    a0 = rd(attempts);
    if (1 == rank) {
        int x = 5;
        for (int i = 0; i < 4; i++) MPI_Send(&x, 1, MPI_INT, 0, 50 + i, MPI_COMM_WORLD);
        CHECK(rd(eager) >= e0 + 4, "eager counter %llu after 4 sends (before %llu)", rd(eager), e0);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (0 == rank) {
        int x, flag = 0;
        /* the messages may still be in flight: wait until they are queued */
        for (int i = 0; i < 4; i++) {
            MPI_Status st;
            MPI_Probe(1, 50 + i, MPI_COMM_WORLD, &st);
        }
        CHECK(rd(unexp) >= 4, "unexpected length %llu with 4 queued", rd(unexp));
        for (int i = 0; i < 4; i++) MPI_Recv(&x, 1, MPI_INT, 1, 50 + i, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        CHECK(rd(unexp) == 0, "unexpected length %llu after receiving", rd(unexp));
        CHECK(rd(attempts) > a0, "match attempts did not grow");
        MPI_Iprobe(1, 50, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
        /* rank 1 sends nothing more (e.g. its part of the next collective,
         * unexpected here) until the queue checks are done */
        MPI_Send(NULL, 0, MPI_BYTE, 1, 59, MPI_COMM_WORLD);
    } else if (1 == rank) {
        MPI_Recv(NULL, 0, MPI_BYTE, 0, 59, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }

    /* rendezvous counters (summed over the ranks: RGET counts at the
     * receiver, RPUT and pipeline at the sender) */
    {
        unsigned long long mine = rd(rget) + rd(rput) + rd(pipe);
        size_t n = 1 << 20;
        char *buf = malloc(n);
        MPI_Allreduce(&mine, &rndv0, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
        if (0 == rank) MPI_Send(buf, (int) n, MPI_CHAR, 1, 60, MPI_COMM_WORLD);
        if (1 == rank) MPI_Recv(buf, (int) n, MPI_CHAR, 0, 60, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Barrier(MPI_COMM_WORLD);
        mine = rd(rget) + rd(rput) + rd(pipe);
        MPI_Allreduce(&mine, &rndv1, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
        CHECK(rndv1 >= rndv0 + 1, "rendezvous counters %llu -> %llu", rndv0, rndv1);
        if (0 == rank && getenv("PT2PT_PVARS_VERBOSE"))
            printf("eager %llu rget %llu rput %llu pipeline %llu attempts %llu\n", rd(eager), rd(rget),
                   rd(rput), rd(pipe), rd(attempts));
        free(buf);
    }

    /* medium counter (sender): 8000 B is medium on vader (eager 4 KiB, one
     * 32 KiB piece), 100000 B on tcp (eager 64 KiB, one 128 KiB piece) */
    {
        unsigned long long m0 = rd(medium);
        char *buf = calloc(100000, 1);
        if (1 == rank) {
            MPI_Send(buf, 8000, MPI_CHAR, 0, 70, MPI_COMM_WORLD);
            MPI_Send(buf, 100000, MPI_CHAR, 0, 71, MPI_COMM_WORLD);
            CHECK(rd(medium) >= m0 + 1, "medium counter %llu after two medium-size sends (before %llu)",
                  rd(medium), m0);
        } else if (0 == rank) {
            MPI_Recv(buf, 8000, MPI_CHAR, 1, 70, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Recv(buf, 100000, MPI_CHAR, 1, 71, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
        (void) rd(nocomm);
        free(buf);
    }
    /* direct medium delivery (receiver): 20000 B is five 4 KiB pieces on
     * vader; the receive is posted before the first piece can arrive */
    if (NULL != getenv("OMPI_MCA_pml_mdq_medium_piece_size")) {
        unsigned long long d0 = rd(direct);
        unsigned char *buf = malloc(20000);
        MPI_Request rq;
        if (0 == rank) {
            memset(buf, 0, 20000);
            MPI_Irecv(buf, 20000, MPI_BYTE, 1, 72, MPI_COMM_WORLD, &rq);
            MPI_Barrier(MPI_COMM_WORLD);
            MPI_Wait(&rq, MPI_STATUS_IGNORE);
            CHECK(rd(direct) >= d0 + 1, "direct medium counter %llu after a posted 20000 B receive "
                  "(before %llu)", rd(direct), d0);
            for (int i = 0; i < 20000; i++) {
                if (buf[i] != (unsigned char) (i * 7 + 3)) {
                    CHECK(0, "direct medium payload differs at byte %d", i);
                    break;
                }
            }
        } else {
            for (int i = 0; i < 20000; i++) buf[i] = (unsigned char) (i * 7 + 3);
            MPI_Barrier(MPI_COMM_WORLD);
            if (1 == rank) MPI_Send(buf, 20000, MPI_BYTE, 0, 72, MPI_COMM_WORLD);
        }
        free(buf);
    }
    mdq_pvar_fini();
    return test_finish();
}
