/*
 * pml/mdq: blocking and nonblocking contiguous send/recv across the eager /
 * rendezvous boundary (0 B .. 4 MiB), status fields, self messages.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int errs, rank;
#define CHECK(c, ...)                                                           \
    do {                                                                        \
        if (!(c)) {                                                             \
            errs++;                                                             \
            fprintf(stderr, "[%d] %s:%d: ", rank, __FILE__, __LINE__);          \
            fprintf(stderr, __VA_ARGS__);                                       \
            fputc('\n', stderr);                                                \
        }                                                                       \
    } while (0)

static void fill(unsigned char *b, size_t n, int seed)
{
    for (size_t i = 0; i < n; i++) b[i] = (unsigned char) (i * 31 + seed * 7 + (i >> 8));
}
static size_t verify(const unsigned char *b, size_t n, int seed)
{
    for (size_t i = 0; i < n; i++)
        if (b[i] != (unsigned char) (i * 31 + seed * 7 + (i >> 8))) return i + 1;
    return 0;
}

int main(int argc, char **argv)
{
    static const size_t sizes[] = {0, 1, 7, 64, 1000, 4000, 4096, 4097, 8192, 16384, 32768,
                                   65536, 65537, 200000, 1 << 20, (1 << 22) + 3};
    const int nsizes = sizeof(sizes) / sizeof(sizes[0]);
    int size, peer, total;
    unsigned char *sbuf, *rbuf;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    sbuf = malloc(sizes[nsizes - 1]);
    rbuf = malloc(sizes[nsizes - 1]);
    peer = rank ^ 1;

    if (peer < size) {
        /* blocking ping-pong, both directions */
        for (int k = 0; k < nsizes; k++) {
            size_t n = sizes[k];
            MPI_Status st;
            int cnt;
            if (rank < peer) {
                fill(sbuf, n, k);
                MPI_Send(sbuf, (int) n, MPI_BYTE, peer, k, MPI_COMM_WORLD);
                memset(rbuf, 0, n);
                MPI_Recv(rbuf, (int) n, MPI_BYTE, peer, 100 + k, MPI_COMM_WORLD, &st);
                CHECK(0 == verify(rbuf, n, k + 1), "pong payload size %zu", n);
            } else {
                memset(rbuf, 0, n);
                MPI_Recv(rbuf, (int) n, MPI_BYTE, peer, k, MPI_COMM_WORLD, &st);
                MPI_Get_count(&st, MPI_BYTE, &cnt);
                CHECK(st.MPI_SOURCE == peer && st.MPI_TAG == k, "status src %d tag %d",
                      st.MPI_SOURCE, st.MPI_TAG);
                CHECK((size_t) cnt == n, "count %d expected %zu", cnt, n);
                CHECK(0 == verify(rbuf, n, k), "ping payload size %zu at %zu", n, verify(rbuf, n, k));
                fill(sbuf, n, k + 1);
                MPI_Send(sbuf, (int) n, MPI_BYTE, peer, 100 + k, MPI_COMM_WORLD);
            }
        }
        /* nonblocking exchange, receives posted late on one side */
        for (int k = 0; k < nsizes; k++) {
            size_t n = sizes[k];
            MPI_Request rq[2];
            MPI_Status st[2];
            fill(sbuf, n, 50 + rank);
            memset(rbuf, 0, n);
            if (rank & 1) {
                MPI_Isend(sbuf, (int) n, MPI_BYTE, peer, 7, MPI_COMM_WORLD, &rq[0]);
                MPI_Irecv(rbuf, (int) n, MPI_BYTE, peer, 7, MPI_COMM_WORLD, &rq[1]);
            } else {
                MPI_Irecv(rbuf, (int) n, MPI_BYTE, peer, 7, MPI_COMM_WORLD, &rq[1]);
                MPI_Isend(sbuf, (int) n, MPI_BYTE, peer, 7, MPI_COMM_WORLD, &rq[0]);
            }
            MPI_Waitall(2, rq, st);
            CHECK(0 == verify(rbuf, n, 50 + peer), "exchange payload size %zu", n);
            CHECK(st[1].MPI_SOURCE == peer && st[1].MPI_TAG == 7, "exchange status");
        }
    }

    /* messages to self */
    for (int k = 0; k < nsizes; k++) {
        size_t n = sizes[k];
        MPI_Request rq;
        MPI_Status st;
        int cnt;
        fill(sbuf, n, 99 + k);
        memset(rbuf, 0, n);
        MPI_Isend(sbuf, (int) n, MPI_BYTE, rank, 3, MPI_COMM_WORLD, &rq);
        MPI_Recv(rbuf, (int) n, MPI_BYTE, rank, 3, MPI_COMM_WORLD, &st);
        MPI_Wait(&rq, MPI_STATUS_IGNORE);
        MPI_Get_count(&st, MPI_BYTE, &cnt);
        CHECK((size_t) cnt == n && 0 == verify(rbuf, n, 99 + k), "self size %zu", n);
    }

    free(sbuf);
    free(rbuf);
    MPI_Allreduce(&errs, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (0 == rank) {
        if (0 == total) printf("No Errors\n");
        else printf("Found %d errors\n", total);
    }
    MPI_Finalize();
    return total != 0;
}
