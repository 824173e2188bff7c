/*
 * pml/mdq medium protocol: messages between the BTL eager limit and the
 * medium limit travel without handshake in max-send-size pieces. Checks, at
 * sizes below, across and above the eager, one-piece and medium limits:
 *  1. payload and count, receive posted first (expected) and after the
 *     message arrived (unexpected), contiguous and a strided datatype;
 *  2. non-overtaking order of a mixed eager/medium/rendezvous stream from
 *     every other rank, received with MPI_ANY_SOURCE/MPI_ANY_TAG;
 *  3. MPI_ERR_TRUNCATE for a too-small buffer, and the next message intact;
 *  4. MPI_Issend does not complete before the receive is posted.
 * Run with the default medium limit, with a multi-piece limit
 * (--mca pml_mdq_medium_limit 262144) and over tcp.
 */
#include "pt2pt_common.h"

static const size_t sizes[] = {0,     1,     4000,  4072,  4096,   5000,   8192,  16384,
                               32000, 32728, 32736, 32768, 40000, 65536, 100000, 131072, 200000};
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))
#define MAXSZ 200000

static void payload(void)
{
    unsigned char *buf = malloc(MAXSZ + 16);
    for (int unexpected = 0; unexpected < 2; unexpected++) {
        for (size_t k = 0; k < NSIZES; k++) {
            size_t n = sizes[k];
            int seed = (int) k + 100 * unexpected;
            if (0 == rank) {
                fill(buf, n, seed);
                if (unexpected) {
                    /* a rendezvous send would wait for the receiver */
                    MPI_Request rq;
                    MPI_Isend(buf, (int) n, MPI_BYTE, 1, 7, MPI_COMM_WORLD, &rq);
                    MPI_Barrier(MPI_COMM_WORLD);
                    MPI_Wait(&rq, MPI_STATUS_IGNORE);
                } else {
                    MPI_Barrier(MPI_COMM_WORLD);
                    MPI_Send(buf, (int) n, MPI_BYTE, 1, 7, MPI_COMM_WORLD);
                }
            } else if (1 == rank) {
                MPI_Status st;
                MPI_Request rq;
                int cnt;
                memset(buf, 0xcd, n + 16);
                if (unexpected) {
                    int flag = 0;
                    MPI_Barrier(MPI_COMM_WORLD);
                    /* a medium message (all its pieces) must become visible */
                    while (!flag) MPI_Iprobe(0, 7, MPI_COMM_WORLD, &flag, &st);
                    MPI_Get_count(&st, MPI_BYTE, &cnt);
                    CHECK((size_t) cnt == n, "probe count %d, expected %zu", cnt, n);
                    MPI_Recv(buf, (int) n, MPI_BYTE, 0, 7, MPI_COMM_WORLD, &st);
                } else {
                    MPI_Irecv(buf, (int) n, MPI_BYTE, 0, 7, MPI_COMM_WORLD, &rq);
                    MPI_Barrier(MPI_COMM_WORLD);
                    MPI_Wait(&rq, &st);
                }
                MPI_Get_count(&st, MPI_BYTE, &cnt);
                CHECK((size_t) cnt == n, "count %d, expected %zu", cnt, n);
                CHECK(0 == verify(buf, n, seed), "size %zu (%s): bad byte %zu", n,
                      unexpected ? "unexpected" : "expected", verify(buf, n, seed) - 1);
                CHECK(buf[n] == 0xcd, "size %zu: wrote past the message", n);
            } else {
                MPI_Barrier(MPI_COMM_WORLD);
            }
        }
    }
    free(buf);
}

/* every other int: sender and receiver both strided */
static void noncontig(void)
{
    const int counts[] = {600, 1100, 3000, 9000, 20000};
    MPI_Datatype vec;
    int *buf = malloc(sizeof(int) * 2 * 20000);
    MPI_Type_vector(1, 1, 2, MPI_INT, &vec);
    MPI_Type_create_resized(vec, 0, 2 * sizeof(int), &vec);
    MPI_Type_commit(&vec);
    for (int k = 0; k < 5; k++) {
        int n = counts[k];
        if (0 == rank) {
            for (int i = 0; i < 2 * n; i++) buf[i] = (i % 2) ? -1 : i * 3 + k;
            MPI_Send(buf, n, vec, 1, 8, MPI_COMM_WORLD);
        } else if (1 == rank) {
            MPI_Status st;
            int cnt;
            for (int i = 0; i < 2 * n; i++) buf[i] = -7;
            MPI_Recv(buf, n, vec, 0, 8, MPI_COMM_WORLD, &st);
            MPI_Get_count(&st, vec, &cnt);
            CHECK(cnt == n, "vector count %d, expected %d", cnt, n);
            for (int i = 0; i < 2 * n; i++) {
                int want = (i % 2) ? -7 : i * 3 + k;
                if (buf[i] != want) {
                    CHECK(0, "vector %d ints: element %d is %d, expected %d", n, i, buf[i], want);
                    break;
                }
            }
        }
    }
    MPI_Type_free(&vec);
    free(buf);
}

/* each sender streams mixed sizes; message j carries (j, size) in its first bytes */
#define NORDER 60
static size_t order_size(int src, int j) { return sizes[(size_t) (src * 7 + j * 5) % NSIZES]; }

static void order(void)
{
    if (0 != rank) {
        unsigned char *buf = malloc(MAXSZ + 16);
        MPI_Request *rq = malloc(sizeof(MPI_Request) * NORDER);
        unsigned char **bufs = malloc(sizeof(unsigned char *) * NORDER);
        for (int j = 0; j < NORDER; j++) {
            size_t n = order_size(rank, j);
            bufs[j] = malloc(n + 8);
            fill(bufs[j], n, rank * 1000 + j);
            if (n >= 8) {
                memcpy(bufs[j], &j, sizeof(int));
                memcpy(bufs[j] + 4, &rank, sizeof(int));
            }
            if (j % 3 == 1) MPI_Issend(bufs[j], (int) n, MPI_BYTE, 0, j % 4, MPI_COMM_WORLD, &rq[j]);
            else MPI_Isend(bufs[j], (int) n, MPI_BYTE, 0, j % 4, MPI_COMM_WORLD, &rq[j]);
        }
        MPI_Waitall(NORDER, rq, MPI_STATUSES_IGNORE);
        for (int j = 0; j < NORDER; j++) free(bufs[j]);
        free(bufs);
        free(rq);
        free(buf);
    } else {
        unsigned char *buf = malloc(MAXSZ + 16);
        int *next = calloc((size_t) nprocs, sizeof(int));
        for (int m = 0; m < NORDER * (nprocs - 1); m++) {
            MPI_Status st;
            int cnt, src, j;
            size_t n;
            MPI_Recv(buf, MAXSZ, MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
            src = st.MPI_SOURCE;
            j = next[src]++;
            n = order_size(src, j);
            MPI_Get_count(&st, MPI_BYTE, &cnt);
            CHECK((size_t) cnt == n, "from %d message %d: %d bytes, expected %zu (overtaken?)", src,
                  j, cnt, n);
            CHECK(st.MPI_TAG == j % 4, "from %d message %d: tag %d", src, j, st.MPI_TAG);
            if ((size_t) cnt == n && n >= 8) {
                int jj, ss;
                memcpy(&jj, buf, sizeof(int));
                memcpy(&ss, buf + 4, sizeof(int));
                CHECK(jj == j && ss == src, "from %d: got message %d of %d, expected %d", src, jj,
                      ss, j);
                for (size_t i = 8; i < n; i++) {
                    if (buf[i] != pattern(i, src * 1000 + j)) {
                        CHECK(0, "from %d message %d (%zu B): bad byte %zu", src, j, n, i);
                        break;
                    }
                }
            }
        }
        free(next);
        free(buf);
    }
}

/* too small a buffer: MPI_ERR_TRUNCATE, the buffer filled, the next message intact */
static void truncate_test(void)
{
    static const size_t tsizes[] = {5000, 20000, 32000, 100000};
    unsigned char *buf = malloc(MAXSZ + 16);
    for (size_t k = 0; k < 4; k++) {
        size_t n = tsizes[k], small = n / 3;
        for (int unexpected = 0; unexpected < 2; unexpected++) {
            int seed = (int) k * 10 + unexpected;
            if (0 == rank) {
                MPI_Request rq[2];
                fill(buf, n, seed);
                if (!unexpected) MPI_Barrier(MPI_COMM_WORLD);
                MPI_Isend(buf, (int) n, MPI_BYTE, 1, 9, MPI_COMM_WORLD, &rq[0]);
                MPI_Isend(buf, (int) n, MPI_BYTE, 1, 9, MPI_COMM_WORLD, &rq[1]);
                if (unexpected) MPI_Barrier(MPI_COMM_WORLD);
                MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
            } else if (1 == rank) {
                MPI_Request rq;
                MPI_Status st;
                int rc, cls, cnt;
                memset(buf, 0xee, n + 16);
                if (unexpected) {
                    MPI_Barrier(MPI_COMM_WORLD);
                    rc = MPI_Recv(buf, (int) small, MPI_BYTE, 0, 9, MPI_COMM_WORLD, &st);
                } else {
                    MPI_Irecv(buf, (int) small, MPI_BYTE, 0, 9, MPI_COMM_WORLD, &rq);
                    MPI_Barrier(MPI_COMM_WORLD);
                    rc = MPI_Wait(&rq, &st);
                }
                MPI_Error_class(rc, &cls);
                CHECK(cls == MPI_ERR_TRUNCATE, "size %zu into %zu: error class %d", n, small, cls);
                CHECK(0 == verify(buf, small, seed), "truncated payload of %zu", n);
                CHECK(buf[small] == 0xee, "size %zu: wrote past the receive buffer", n);
                MPI_Get_count(&st, MPI_BYTE, &cnt);
                CHECK((size_t) cnt <= small, "count %d beyond the buffer %zu", cnt, small);
                memset(buf, 0, n);
                rc = MPI_Recv(buf, (int) n, MPI_BYTE, 0, 9, MPI_COMM_WORLD, &st);
                CHECK(MPI_SUCCESS == rc, "message after the truncated one failed (%d)", rc);
                CHECK(0 == verify(buf, n, seed), "message after the truncated %zu: bad payload", n);
            } else {
                MPI_Barrier(MPI_COMM_WORLD);
            }
        }
    }
    free(buf);
}

/* tests rq for up to secs seconds; true when it completed */
static int completes_within(MPI_Request *rq, double secs)
{
    int flag = 0;
    double t0 = MPI_Wtime();
    while (!flag && MPI_Wtime() - t0 < secs) MPI_Test(rq, &flag, MPI_STATUS_IGNORE);
    return flag;
}

/* a synchronous medium send completes only after the receive matched */
static void sync_test(void)
{
    static const size_t ssizes[] = {5000, 30000, 64000};
    unsigned char *buf = malloc(MAXSZ);
    for (size_t k = 0; k < 3; k++) {
        size_t n = ssizes[k];
        if (0 == rank) {
            MPI_Request rq;
            fill(buf, n, (int) k);
            MPI_Issend(buf, (int) n, MPI_BYTE, 1, 11, MPI_COMM_WORLD, &rq);
            CHECK(!completes_within(&rq, 0.05), "Issend of %zu bytes completed before the "
                  "receive was posted", n);
            MPI_Barrier(MPI_COMM_WORLD);
            MPI_Wait(&rq, MPI_STATUS_IGNORE);
        } else if (1 == rank) {
            MPI_Barrier(MPI_COMM_WORLD);
            MPI_Recv(buf, (int) n, MPI_BYTE, 0, 11, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            CHECK(0 == verify(buf, n, (int) k), "ssend payload %zu", n);
        } else {
            MPI_Barrier(MPI_COMM_WORLD);
        }
        /* blocking Ssend against a posted receive */
        if (0 == rank) {
            MPI_Ssend(buf, (int) n, MPI_BYTE, 1, 12, MPI_COMM_WORLD);
        } else if (1 == rank) {
            MPI_Recv(buf, (int) n, MPI_BYTE, 0, 12, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            CHECK(0 == verify(buf, n, (int) k), "Ssend payload %zu", n);
        }
    }
    free(buf);
}

int main(int argc, char **argv)
{
    test_init(&argc, &argv);
    if (nprocs < 2) {
        fprintf(stderr, "needs at least 2 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    payload();
    noncontig();
    order();
    MPI_Barrier(MPI_COMM_WORLD);
    truncate_test();
    sync_test();
    return test_finish();
}
