/*
 * Check unit tests of nbe_cma, the gathered process_vm_writev/readv
 * transfers of osc/nbe: a forked child is the peer (after fork its buffers
 * sit at the same addresses). A batch fits one peer and one direction up
 * to its capacity; puts land in the child and gets bring them back, in one
 * submit; a call that fails leaves every transfer in the batch; a call cut
 * in the middle of a transfer by a bad remote page keeps exactly what was
 * not moved (the rest of that transfer and those after it).
 * Skips (passes with a message) where CMA is not permitted here.
 */
#define _GNU_SOURCE
#include <check.h>

#include "check_run.h"
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "nbe_cma.h"

#define N 40
#define SZ 4096

static char remote_mem[N * SZ];   /* the child's copy is the target */
static pid_t child;

static void start_child(void)
{
    memset(remote_mem, 0, sizeof(remote_mem));
    child = fork();
    ck_assert_int_ge(child, 0);
    if (0 == child) {
        pause();
        _exit(0);
    }
}

static void stop_child(void)
{
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
}

/* CMA may be forbidden (ptrace scope, containers): then nothing to test */
static int cma_permitted(void)
{
    char x = 1;
    struct iovec l = { &x, 1 }, r = { remote_mem, 1 };
    if (1 == process_vm_writev(child, &l, 1, &r, 1, 0)) return 1;
    printf("skipped: process_vm_writev not permitted here (errno %d)\n", errno);
    return 0;
}

START_TEST(fits_one_peer_one_direction)
{
    nbe_cma_batch_t b;
    ck_assert_int_eq(nbe_cma_init(&b, 2), 0);
    char x[8];
    ck_assert_int_eq(nbe_cma_fits(&b, 3, 1), 1);   /* empty: anything */
    nbe_cma_add(&b, 1, 3, 1, x, 0x1000, 8);
    ck_assert_int_eq(nbe_cma_fits(&b, 3, 1), 1);
    ck_assert_int_eq(nbe_cma_fits(&b, 4, 1), 0);   /* another peer */
    ck_assert_int_eq(nbe_cma_fits(&b, 3, 0), 0);   /* another direction */
    ck_assert_int_eq(nbe_cma_add(&b, 1, 4, 1, x, 0x2000, 8), -1);   /* refused, not gathered */
    ck_assert_int_eq(nbe_cma_add(&b, 1, 3, 0, x, 0x2000, 8), -1);
    ck_assert_int_eq(nbe_cma_add(&b, 1, 3, 1, x, 0x2000, 8), 0);
    ck_assert_int_eq(nbe_cma_fits(&b, 3, 1), 0);   /* full */
    ck_assert_int_eq(nbe_cma_add(&b, 1, 3, 1, x, 0x3000, 8), -1);   /* no write past cap */
    ck_assert_int_eq(b.n, 2);
    ck_assert_uint_eq(b.bytes, 16);
    nbe_cma_fini(&b);
}
END_TEST

/* a lane per peer and direction: the one in use, else an empty one */
START_TEST(lanes_one_per_peer_and_direction)
{
    nbe_cma_batch_t lanes[3];
    memset(lanes, 0, sizeof(lanes));
    char x[8];
    nbe_cma_batch_t *a = nbe_cma_lane(lanes, 3, 5, 1);
    ck_assert_ptr_eq(a, &lanes[0]);                 /* all empty: the first */
    ck_assert_int_eq(nbe_cma_init(a, 2), 0);
    nbe_cma_add(a, 1, 5, 1, x, 0x1000, 8);
    ck_assert_ptr_eq(nbe_cma_lane(lanes, 3, 5, 1), a);   /* same peer, direction */
    nbe_cma_batch_t *b = nbe_cma_lane(lanes, 3, 6, 1);
    ck_assert_ptr_eq(b, &lanes[1]);                 /* another peer: an empty lane */
    ck_assert_int_eq(nbe_cma_init(b, 2), 0);
    nbe_cma_add(b, 1, 6, 1, x, 0x2000, 8);
    nbe_cma_batch_t *c = nbe_cma_lane(lanes, 3, 5, 0);
    ck_assert_ptr_eq(c, &lanes[2]);                 /* same peer, other direction */
    ck_assert_int_eq(nbe_cma_init(c, 2), 0);
    nbe_cma_add(c, 1, 5, 0, x, 0x3000, 8);
    ck_assert_ptr_null(nbe_cma_lane(lanes, 3, 7, 1));   /* every lane taken */
    nbe_cma_add(a, 1, 5, 1, x, 0x4000, 8);
    ck_assert_ptr_eq(nbe_cma_lane(lanes, 3, 5, 1), a);   /* full: still its lane */
    ck_assert_int_eq(nbe_cma_fits(a, 5, 1), 0);
    b->n = 0;                                       /* as after a submit */
    ck_assert_ptr_eq(nbe_cma_lane(lanes, 3, 7, 1), b);
    /* the lane in use wins over an empty one before it */
    a->n = 0;
    ck_assert_ptr_eq(nbe_cma_lane(lanes, 3, 5, 0), c);
    nbe_cma_batch_t empty_lane;
    memset(&empty_lane, 0, sizeof(empty_lane));
    ck_assert_int_eq(nbe_cma_add(&empty_lane, 1, 5, 1, x, 0x1000, 8), -1);   /* cap 0 */
    for (int i = 0; i < 3; ++i) nbe_cma_fini(&lanes[i]);
}
END_TEST

START_TEST(puts_then_gets_in_one_submit_each)
{
    start_child();
    if (cma_permitted()) {
        nbe_cma_batch_t b;
        ck_assert_int_eq(nbe_cma_init(&b, N), 0);
        static char src[N * SZ], back[N * SZ];
        for (size_t i = 0; i < sizeof(src); ++i) src[i] = (char) (i * 7 + 1);
        memset(back, 0, sizeof(back));
        /* transfers of different lengths, in reverse order of address */
        for (int k = N - 1; k >= 0; --k) {
            size_t len = SZ - (size_t) k * 16;
            nbe_cma_add(&b, child, 5, 1, src + k * SZ, (uint64_t) (uintptr_t) (remote_mem + k * SZ), len);
        }
        ck_assert_int_eq(nbe_cma_submit(&b), 0);
        ck_assert_int_eq(b.n, 0);
        ck_assert_uint_eq(b.bytes, 0);
        ck_assert_uint_eq(b.calls, 1);   /* all in one system call */
        for (int k = 0; k < N; ++k) {
            size_t len = SZ - (size_t) k * 16;
            nbe_cma_add(&b, child, 5, 0, back + k * SZ, (uint64_t) (uintptr_t) (remote_mem + k * SZ), len);
        }
        ck_assert_int_eq(nbe_cma_submit(&b), 0);
        for (int k = 0; k < N; ++k) {
            size_t len = SZ - (size_t) k * 16;
            ck_assert_int_eq(memcmp(back + k * SZ, src + k * SZ, len), 0);
            for (size_t i = len; i < SZ; ++i) ck_assert_int_eq(back[k * SZ + i], 0);
        }
        /* this process's own copy was never written */
        for (size_t i = 0; i < sizeof(remote_mem); ++i) ck_assert_int_eq(remote_mem[i], 0);
        nbe_cma_fini(&b);
    }
    stop_child();
}
END_TEST

START_TEST(failed_call_keeps_everything)
{
    start_child();
    int permitted = cma_permitted();
    /* killed, not reaped: a zombie has no memory (ESRCH), and its pid
     * cannot name another process meanwhile */
    kill(child, SIGKILL);
    siginfo_t info;
    waitid(P_PID, (id_t) child, &info, WEXITED | WNOWAIT);
    if (permitted) {
        nbe_cma_batch_t b;
        ck_assert_int_eq(nbe_cma_init(&b, 4), 0);
        char x[64];
        for (int k = 0; k < 3; ++k) {
            nbe_cma_add(&b, child, 1, 1, x, (uint64_t) (uintptr_t) remote_mem, sizeof(x));
        }
        ck_assert_int_eq(nbe_cma_submit(&b), ESRCH);
        ck_assert_int_eq(b.n, 3);
        ck_assert_uint_eq(b.bytes, 3 * sizeof(x));
        nbe_cma_fini(&b);
    }
    waitpid(child, NULL, 0);
}
END_TEST

START_TEST(cut_call_keeps_the_rest)
{
    /* two pages, the second one PROT_NONE in the child: a transfer across
     * them is cut in its middle, and the call after it fails */
    char *pages = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ck_assert_ptr_ne(pages, MAP_FAILED);
    ck_assert_int_eq(mprotect(pages + 4096, 4096, PROT_NONE), 0);
    memset(pages, 0, 4096);
    start_child();
    munmap(pages, 8192);   /* ours only; the child keeps both */
    if (cma_permitted()) {
        nbe_cma_batch_t b;
        ck_assert_int_eq(nbe_cma_init(&b, 4), 0);
        static char src[3 * SZ];
        memset(src, 9, sizeof(src));
        nbe_cma_add(&b, child, 1, 1, src, (uint64_t) (uintptr_t) remote_mem, SZ);
        nbe_cma_add(&b, child, 1, 1, src + SZ, (uint64_t) (uintptr_t) (pages + 2048), 4096);
        nbe_cma_add(&b, child, 1, 1, src + 2 * SZ, (uint64_t) (uintptr_t) (remote_mem + SZ), 50);
        ck_assert_int_eq(nbe_cma_submit(&b), EFAULT);
        /* the first transfer and half of the second moved; the rest stays */
        ck_assert_int_eq(b.n, 2);
        ck_assert_uint_eq(b.bytes, 2048 + 50);
        ck_assert_ptr_eq(b.remote[0].iov_base, pages + 4096);
        ck_assert_ptr_eq(b.local[0].iov_base, src + SZ + 2048);
        ck_assert_uint_eq(b.local[0].iov_len, 2048);
        ck_assert_uint_eq(b.remote[1].iov_len, 50);
        static char back[SZ + 2048];
        struct iovec l[2] = { { back, SZ }, { back + SZ, 2048 } };
        struct iovec r[2] = { { remote_mem, SZ }, { pages + 2048, 2048 } };
        ck_assert_int_eq(process_vm_readv(child, l, 2, r, 2, 0), (ssize_t) sizeof(back));
        for (size_t i = 0; i < sizeof(back); ++i) ck_assert_int_eq(back[i], 9);
        nbe_cma_fini(&b);
    }
    stop_child();
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("nbe_cma");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, fits_one_peer_one_direction);
    tcase_add_test(tc, lanes_one_per_peer_and_direction);
    tcase_add_test(tc, puts_then_gets_in_one_submit_each);
    tcase_add_test(tc, failed_call_keeps_everything);
    tcase_add_test(tc, cut_call_keeps_the_rest);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return check_run(suite());
}
