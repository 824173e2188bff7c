/*
 * RDMA puts and gets whose completion is counted at the origin (osc/nbe on
 * a single-copy BTL: no FIN frame, flush without a round trip), and the
 * same program over BTLs that still need the FIN (tcp):
 *  1. flush-only passive epochs (lock_all): puts of several sizes, each
 *     followed by MPI_Win_flush; the target checks its memory after a
 *     barrier, while the epoch is still open (MPI_Win_sync);
 *  2. gets in the same kind of epoch, checked after MPI_Win_flush_local,
 *     then MPI_Rget and MPI_Rput of every size, checked after MPI_Waitall
 *     (and a flush for the puts);
 *  3. exclusive locks: every rank adds 1 to every element of an array at
 *     rank 0 with get + put under MPI_LOCK_EXCLUSIVE; a lock released
 *     before the put landed loses increments;
 *  4. fence and PSCW epochs with the same puts;
 *  5. many small puts (packed into one message each burst by osc/nbe) in
 *     fence, flush and exclusive-lock epochs, some to the same address
 *     (the value of the last put in an epoch is not defined by MPI, so
 *     every address is written once per epoch);
 *  6. accumulate ordering across frame sizes: MPI_REPLACE accumulates of
 *     alternating sizes (8 B and 4 KiB frames; osc/nbe sends small frames
 *     of other kinds through the BTL's immediate send) to overlapping
 *     elements; the last one must win.
 * With NBE_EXPECT_RDMA=local the osc_nbe_rdma_local_complete pvar must have
 * counted transfers (and osc_nbe_rdma_fin none); with =fin the FIN counter must
 * have counted (gets may still complete at the origin). With NBE_EXPECT_PACKED
 * set, osc_nbe_puts_packed must have counted.
 */
#include "mdq_pvar.h"

#include <unistd.h>

#define WIN_BYTES (512 * 1024)
#define ACC_N     (16 * 1024)     /* longs of the exclusive-lock array (128 KiB) */
#define ITERS     20

static const int sizes[] = { 8, 1000, 8192, 40000, 200000 };
#define NSIZES ((int) (sizeof(sizes) / sizeof(sizes[0])))

static size_t region(int k)
{
    size_t off = 0;
    for (int i = 0; i < k; ++i) off += (size_t) sizes[i] + 64;
    return off;
}

/* the data origin sends in iteration iter, one pattern per size */
static int seed(int origin, int iter)
{
    return origin * 131 + iter + 1;
}

static void fill_all(unsigned char *buf, int origin, int iter)
{
    for (int k = 0; k < NSIZES; ++k) fill(buf + region(k), (size_t) sizes[k], seed(origin, iter));
}

static void check_mem(const unsigned char *mem, int origin, int iter, const char *what)
{
    for (int k = 0; k < NSIZES; ++k) {
        size_t bad = verify(mem + region(k), (size_t) sizes[k], seed(origin, iter));
        CHECK(0 == bad, "%s: size %d differs at byte %zu (iteration %d)", what, sizes[k], bad - 1, iter);
    }
}

/* put every size to target, one MPI_Win_flush after each */
static void put_all(const unsigned char *src, int target, MPI_Win win, int flush)
{
    for (int k = 0; k < NSIZES; ++k) {
        MPI_Put(src + region(k), sizes[k], MPI_BYTE, target, (MPI_Aint) region(k), sizes[k], MPI_BYTE, win);
        if (flush) MPI_Win_flush(target, win);
    }
}

int main(int argc, char **argv)
{
    MPI_Win win, awin;
    MPI_Group world, peers;
    MPI_T_pvar_handle hlocal, hfin, hpacked, hdirect;

    test_init(&argc, &argv);
    int size = nprocs, right = (rank + 1) % size, left = (rank + size - 1) % size;
    /* counters read as their increase since the handles were allocated */
    mdq_pvar_init();
    mdq_pvar_find("osc_nbe_rdma_local_complete", &hlocal);
    mdq_pvar_find("osc_nbe_rdma_fin", &hfin);
    mdq_pvar_find("osc_nbe_rdma_direct", &hdirect);
    mdq_pvar_find("osc_nbe_puts_packed", &hpacked);

    unsigned char *mem = page_calloc(WIN_BYTES), *src = page_calloc(WIN_BYTES), *dst = page_calloc(WIN_BYTES);
    long *acc = calloc(ACC_N, sizeof(long)), *tmp = malloc(ACC_N * sizeof(long));
    MPI_Win_create(mem, WIN_BYTES, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    MPI_Win_create(acc, rank ? 0 : ACC_N * sizeof(long), sizeof(long), MPI_INFO_NULL, MPI_COMM_WORLD,
                   &awin);

    /* 1. flush-only passive epochs, the target reads before unlock_all */
    MPI_Win_lock_all(0, win);
    for (int it = 0; it < ITERS; ++it) {
        fill_all(src, rank, it);
        put_all(src, right, win, 1);
        if (it % 2) MPI_Win_flush_all(win);
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Win_sync(win);
        check_mem(mem, left, it, "flush");
        MPI_Barrier(MPI_COMM_WORLD);
    }

    /* 2. gets: every rank reads its left neighbour's last pattern back */
    for (int it = 0; it < 3; ++it) {
        memset(dst, 0, WIN_BYTES);
        for (int k = 0; k < NSIZES; ++k) {
            MPI_Get(dst + region(k), sizes[k], MPI_BYTE, right, (MPI_Aint) region(k), sizes[k], MPI_BYTE, win);
        }
        if (it) MPI_Win_flush_local(right, win);
        else MPI_Win_flush_local_all(win);
        check_mem(dst, rank, ITERS - 1, "get");
    }
    /* 2b. the request forms: MPI_Rget of every size, then MPI_Rput of a
     * new pattern to the same neighbour, each request waited for; the target
     * checks after a barrier, the epoch still open */
    {
        MPI_Request reqs[NSIZES];
        memset(dst, 0, WIN_BYTES);
        for (int k = 0; k < NSIZES; ++k) {
            MPI_Rget(dst + region(k), sizes[k], MPI_BYTE, right, (MPI_Aint) region(k), sizes[k],
                     MPI_BYTE, win, &reqs[k]);
        }
        MPI_Waitall(NSIZES, reqs, MPI_STATUSES_IGNORE);
        check_mem(dst, rank, ITERS - 1, "rget");
        MPI_Barrier(MPI_COMM_WORLD);   /* every rget read its target before it changes */
        fill_all(src, rank, ITERS);
        for (int k = 0; k < NSIZES; ++k) {
            MPI_Rput(src + region(k), sizes[k], MPI_BYTE, right, (MPI_Aint) region(k), sizes[k],
                     MPI_BYTE, win, &reqs[k]);
        }
        MPI_Waitall(NSIZES, reqs, MPI_STATUSES_IGNORE);
        MPI_Win_flush(right, win);
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Win_sync(win);
        check_mem(mem, left, ITERS, "rput");
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_unlock_all(win);

    /* 3. exclusive locks: read-modify-write of the whole array at rank 0 */
    for (int it = 0; it < ITERS / 2; ++it) {
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, awin);
        MPI_Get(tmp, ACC_N, MPI_LONG, 0, 0, ACC_N, MPI_LONG, awin);
        MPI_Win_flush(0, awin);
        for (int i = 0; i < ACC_N; ++i) tmp[i] += 1;
        MPI_Put(tmp, ACC_N, MPI_LONG, 0, 0, ACC_N, MPI_LONG, awin);
        MPI_Win_unlock(0, awin);
        /* the small tail goes through another lock epoch of its own */
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, awin);
        MPI_Get(tmp, 1, MPI_LONG, 0, ACC_N - 1, 1, MPI_LONG, awin);
        MPI_Win_flush(0, awin);
        tmp[0] += 1;
        MPI_Put(tmp, 1, MPI_LONG, 0, ACC_N - 1, 1, MPI_LONG, awin);
        MPI_Win_unlock(0, awin);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (0 == rank) {
        MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, awin);
        for (int i = 0; i < ACC_N; ++i) {
            long want = (long) size * (ITERS / 2) * (i == ACC_N - 1 ? 2 : 1);
            CHECK(acc[i] == want, "exclusive lock: element %d is %ld, expected %ld", i, acc[i], want);
            if (acc[i] != want) break;
        }
        MPI_Win_unlock(0, awin);
    }

    /* 4. fence and PSCW epochs */
    MPI_Win_fence(0, win);
    fill_all(src, rank, 100);
    put_all(src, right, win, 0);
    MPI_Win_fence(0, win);
    check_mem(mem, left, 100, "fence");
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    int pr[2] = { left, right };
    MPI_Group_incl(world, left == right ? 1 : 2, pr, &peers);
    MPI_Win_fence(MPI_MODE_NOSUCCEED, win);
    fill_all(src, rank, 101);
    MPI_Win_post(peers, 0, win);
    MPI_Win_start(peers, 0, win);
    put_all(src, right, win, 0);
    MPI_Win_complete(win);
    MPI_Win_wait(win);
    check_mem(mem, left, 101, "pscw");
    MPI_Group_free(&peers);
    MPI_Group_free(&world);

    /* 5. bursts of small puts: 8-byte words and 24-byte triples */
    long *words = (long *) mem, *wsrc = (long *) src;
    const int NW = 2048;
    for (int ep = 0; ep < 3; ++ep) {
        for (int i = 0; i < NW; ++i) wsrc[i] = (long) rank * 1000003L + ep * 7919L + i;
        if (0 == ep) MPI_Win_fence(0, win);
        else if (1 == ep) MPI_Win_lock_all(0, win);
        else MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, win);
        for (int i = 0; i < NW / 2; ++i) {
            MPI_Put(&wsrc[i], 1, MPI_LONG, right, (MPI_Aint) (i * sizeof(long)), 1, MPI_LONG, win);
        }
        for (int i = NW / 2; i < NW; i += 3) {
            int n = NW - i < 3 ? NW - i : 3;
            MPI_Put(&wsrc[i], n, MPI_LONG, right, (MPI_Aint) (i * sizeof(long)), n, MPI_LONG, win);
        }
        if (0 == ep) MPI_Win_fence(0, win);
        else if (1 == ep) { MPI_Win_flush_all(win); MPI_Win_unlock_all(win); }
        else MPI_Win_unlock(right, win);
        MPI_Barrier(MPI_COMM_WORLD);
        for (int i = 0; i < NW; ++i) {
            long want = (long) left * 1000003L + ep * 7919L + i;
            CHECK(words[i] == want, "small puts, epoch kind %d: word %d is %ld, expected %ld", ep, i,
                  words[i], want);
            if (words[i] != want) break;
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }

    /* 6. accumulate ordering: small and large MPI_REPLACE to overlapping elements.
     * The lock is granted first and the target sleeps while they arrive, so
     * that they all wait at once in its BTL queues when it polls them. */
    MPI_Win_lock_all(0, win);
    MPI_Accumulate(wsrc, 1, MPI_LONG, right, 0, 1, MPI_LONG, MPI_REPLACE, win);
    MPI_Win_flush_all(win);
    MPI_Barrier(MPI_COMM_WORLD);
    for (int it = 0; it < 50; ++it) {
        int n = (it % 2) ? 1 : 512;           /* 8 B or 4 KiB */
        for (int i = 0; i < n; ++i) wsrc[i] = (long) rank * 100000L + it * 1000L + i;
        MPI_Accumulate(wsrc, n, MPI_LONG, right, 0, n, MPI_LONG, MPI_REPLACE, win);
    }
    usleep(200000);
    MPI_Win_flush_all(win);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_sync(win);
    /* element 0 was last written in iteration 49 (small), 1..511 in iteration 48 (large) */
    CHECK(words[0] == (long) left * 100000L + 49 * 1000L, "accumulate order: word 0 is %ld", words[0]);
    CHECK(words[1] == (long) left * 100000L + 48 * 1000L + 1, "accumulate order: word 1 is %ld", words[1]);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_unlock_all(win);

    if (getenv("NBE_EXPECT_PACKED") && size > 1) {
        CHECK(mdq_pvar_read(hpacked) > 0, "no put was packed");
    }
    const char *expect = getenv("NBE_EXPECT_RDMA");
    if (expect && size > 1) {
        unsigned long long nl = mdq_pvar_read(hlocal), nf = mdq_pvar_read(hfin);
        unsigned long long nd = mdq_pvar_read(hdirect);
        if (0 == strcmp(expect, "local")) {
            CHECK(nl > 0 && 0 == nf, "expected origin-complete RDMA: local %llu fin %llu", nl, nf);
            /* transfers over a BTL known to complete in the call (vader's
             * CMA from the start, others once seen doing so) skip the
             * operation object; those that went before an epoch's grant
             * took it */
            CHECK(nd > 0 && nd <= nl, "expected direct RDMA: direct %llu local %llu", nd, nl);
        } else {
            CHECK(nf > 0, "expected RDMA with FIN: local %llu fin %llu", nl, nf);
            CHECK(0 == nd, "direct RDMA on a BTL that needs a FIN: %llu", nd);
        }
    }

    MPI_Win_free(&awin);
    MPI_Win_free(&win);
    free(mem); free(src); free(dst); free(acc); free(tmp);
    mdq_pvar_fini();
    return test_finish();
}
