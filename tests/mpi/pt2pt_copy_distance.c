/*
 * pml/mdq with send and receive buffers at every kind of page-offset
 * distance (pml_mdq_copy_guard): the receive buffer 0, 1, 16, 63, 64 and
 * 4095 bytes past the send buffer (modulo 4 KiB), for eager, medium,
 * adaptive and rendezvous sizes, in both directions, blocking and
 * nonblocking; every payload is checked, and the bytes around each receive
 * must stay untouched.
 *
 * COPY_GUARD_EXPECT names the setting the line runs with:
 *   on:  with RDMA forced (pml_mdq_adaptive_copy off), every rendezvous
 *        message whose receive buffer is 1-63 bytes past its send buffer is
 *        streamed instead (pml_mdq_rdma_rerouted_messages), and no other,
 *        where the ranks share a node and get from each other (vader CMA);
 *   off: never rerouted.
 */
#include "mdq_pvar.h"

#define GUARD 64

static const size_t sizes[] = {100, 3000, 8192, 20000, 40000, 100000, 400000, 1200000};
static const size_t dists[] = {0, 1, 16, 63, 64, 4095};
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))
#define NDISTS (sizeof(dists) / sizeof(dists[0]))
#define MAXSIZE 1200000
#define RNDV_MIN 40000 /* above vader's medium limit: a rendezvous with adaptive copy off */

/* would a copy to dst from d bytes before it run at a short distance? */
static int short_distance(size_t d)
{
    return d % 4096 >= 1 && d % 4096 <= 63;
}

/* page-aligned allocation with room for an offset and guard bytes */
static unsigned char *page_buffer(void)
{
    void *p = NULL;
    if (0 != posix_memalign(&p, 4096, MAXSIZE + 2 * 4096 + 2 * GUARD)) {
        fprintf(stderr, "out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    return p;
}

/* rank 0 sends n bytes from page offset soff, rank 1 receives at soff + d;
 * then back (rank 1 sends from its receive offset to rank 0's send offset) */
static void exchange(unsigned char *s, unsigned char *r, size_t n, size_t soff, size_t d,
                     int nonblocking, int seed)
{
    size_t roff = (soff + d) % 4096 + GUARD;
    unsigned char *sp = s + GUARD + soff, *rp = r + roff;
    MPI_Request rq;

    if (rank > 1) {
        return;
    }
    memset(r, 0xA5, MAXSIZE + 2 * 4096 + 2 * GUARD);
    if (0 == rank) {
        fill(sp, n, seed);
        if (nonblocking) {
            MPI_Isend(sp, (int) n, MPI_BYTE, 1, 7, MPI_COMM_WORLD, &rq);
            MPI_Wait(&rq, MPI_STATUS_IGNORE);
        } else {
            MPI_Send(sp, (int) n, MPI_BYTE, 1, 7, MPI_COMM_WORLD);
        }
        /* the answer comes from rank 1's receive buffer into ours at the
         * send offset: the opposite distance */
        MPI_Recv(s + GUARD + soff, (int) n, MPI_BYTE, 1, 8, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        size_t bad = verify(s + GUARD + soff, n, seed + 1);
        CHECK(0 == bad, "size %zu distance -%zu (%s): byte %zu differs", n, d,
              nonblocking ? "nonblocking" : "blocking", bad - 1);
    } else {
        if (nonblocking) {
            MPI_Irecv(rp, (int) n, MPI_BYTE, 0, 7, MPI_COMM_WORLD, &rq);
            MPI_Wait(&rq, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(rp, (int) n, MPI_BYTE, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
        size_t bad = verify(rp, n, seed);
        CHECK(0 == bad, "size %zu distance %zu (%s): byte %zu differs", n, d,
              nonblocking ? "nonblocking" : "blocking", bad - 1);
        for (size_t i = 0; i < GUARD; i++) {
            if (0xA5 != rp[-1 - (long) i] || 0xA5 != rp[n + i]) {
                CHECK(0, "size %zu distance %zu: a byte around the receive changed", n, d);
                break;
            }
        }
        fill(rp, n, seed + 1);
        MPI_Send(rp, (int) n, MPI_BYTE, 0, 8, MPI_COMM_WORLD);
    }
}

int main(int argc, char **argv)
{
    MPI_T_pvar_handle rerouted, rget;
    const char *expect = getenv("COPY_GUARD_EXPECT");
    unsigned long long r0, g0, r, g, all_r, all_g, aliased_rndv = 0;
    unsigned char *s, *rb;
    int seed = 1;

    test_init(&argc, &argv);
    if (nprocs < 2) {
        fprintf(stderr, "needs 2 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    mdq_pvar_init();
    if (mdq_pvar_find("pml_mdq_rdma_rerouted_messages", &rerouted)
        || mdq_pvar_find("pml_mdq_rget_messages", &rget)) {
        return test_finish();
    }
    s = page_buffer();
    rb = page_buffer();
    r0 = mdq_pvar_read(rerouted);
    g0 = mdq_pvar_read(rget);
    for (size_t k = 0; k < NSIZES; k++) {
        for (size_t j = 0; j < NDISTS; j++) {
            /* two send offsets: page-aligned and one in mid-page */
            for (size_t soff = 0; soff < 4096; soff += 2200) {
                exchange(s, rb, sizes[k], soff, dists[j], 0, seed++);
                exchange(s, rb, sizes[k], soff, dists[j], 1, seed++);
                if (sizes[k] >= RNDV_MIN) {
                    /* each of the two exchanges: the message, and the reply
                     * at the opposite distance */
                    aliased_rndv += 2 * (short_distance(dists[j]) + short_distance(4096 - dists[j]));
                }
            }
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    r = mdq_pvar_read(rerouted) - r0;
    g = mdq_pvar_read(rget) - g0;
    MPI_Allreduce(&r, &all_r, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(&g, &all_g, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (0 == rank) {
        printf("rendezvous messages rerouted %llu, received with RDMA get %llu (all ranks); "
               "rendezvous at a short distance %llu\n", all_r, all_g, aliased_rndv);
    }
    if (NULL != expect && 0 == strcmp(expect, "off")) {
        CHECK(0 == all_r, "guard off: %llu messages rerouted", all_r);
    } else if (NULL != expect && 0 == strcmp(expect, "on")) {
        if (0 == all_g && 0 == all_r) {
            if (0 == rank) printf("no RDMA get between the ranks: reroute check skipped\n");
        } else {
            CHECK(all_r == aliased_rndv, "guard on: %llu rerouted, expected %llu", all_r,
                  aliased_rndv);
        }
    }
    free(s);
    free(rb);
    mdq_pvar_fini();
    return test_finish();
}
