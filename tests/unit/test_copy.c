/*
 * Check unit tests of ompi_scale_copy (opal/common), the copies that avoid
 * the short-distance penalty of rep movsb: the distance predicate at its
 * boundaries; byte-exact copies by the block loop and by ompi_scale_copy
 * (under every mode) at every page-offset distance 0..130 and sizes around
 * the block and guard boundaries, nothing written outside the destination;
 * the mode switch and stable measured answers. No timing assertions: the
 * speed is contrib/bench/copy_distance's business.
 */
#include "ompi_scale_copy.h"

#include "check_run.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define PAGE 4096
#define GUARD 64         /* bytes checked before and after each destination */
#define MAX_SIZE 65537
#define MAX_DIST 130

/* a pointer with the given address (the predicate only does arithmetic) */
static const char *at(uintptr_t a)
{
    return (const char *) a;
}

START_TEST(short_distance_boundaries)
{
    const uintptr_t src = 0x7f0000100000u;   /* page aligned */
    const size_t n = OMPI_SCALE_COPY_GUARD_MIN;
    ck_assert(!ompi_scale_copy_short_distance(at(src), at(src), n));             /* 0 */
    ck_assert(ompi_scale_copy_short_distance(at(src + 1), at(src), n));          /* 1 */
    ck_assert(ompi_scale_copy_short_distance(at(src + 16), at(src), n));
    ck_assert(ompi_scale_copy_short_distance(at(src + 63), at(src), n));         /* 63 */
    ck_assert(!ompi_scale_copy_short_distance(at(src + 64), at(src), n));        /* 64 */
    ck_assert(!ompi_scale_copy_short_distance(at(src + 2048), at(src), n));
    ck_assert(!ompi_scale_copy_short_distance(at(src + 4095), at(src), n));      /* 4095 */
    ck_assert(!ompi_scale_copy_short_distance(at(src + 4096), at(src), n));      /* 0 mod 4K */
    ck_assert(ompi_scale_copy_short_distance(at(src + 4096 + 1), at(src), n));   /* 1 mod 4K */
    ck_assert(ompi_scale_copy_short_distance(at(src + 5 * 4096 + 63), at(src), n));
    ck_assert(!ompi_scale_copy_short_distance(at(src + 5 * 4096 + 64), at(src), n));
    /* only dst past src: dst 16 bytes before src is distance 4080 */
    ck_assert(!ompi_scale_copy_short_distance(at(src), at(src + 16), n));
    /* whatever the page offset of src */
    ck_assert(ompi_scale_copy_short_distance(at(src + 4090 + 16), at(src + 4090), n));
    ck_assert(!ompi_scale_copy_short_distance(at(src + 4090 + 64), at(src + 4090), n));
    /* size: 2048 bytes and less never go through rep movsb */
    ck_assert_int_eq(OMPI_SCALE_COPY_GUARD_MIN, 2049);
    ck_assert(!ompi_scale_copy_short_distance(at(src + 16), at(src), 2048));
    ck_assert(ompi_scale_copy_short_distance(at(src + 16), at(src), 2049));
    ck_assert(!ompi_scale_copy_short_distance(at(src + 16), at(src), 0));
    ck_assert(ompi_scale_copy_short_distance(at(src + 16), at(src), SIZE_MAX));
}
END_TEST

/* the copy functions under test */
enum { BY_BLOCKS, BY_BLOCKS_SSE2, BY_COPY_OFF, BY_COPY_ON, BY_COPY_AUTO, NWAYS };
static const char *const way_name[NWAYS] = { "blocks", "blocks_sse2", "copy(off)", "copy(on)",
                                             "copy(auto)" };

static void copy_by(int way, void *dst, const void *src, size_t n)
{
    if (BY_BLOCKS == way) {
        ompi_scale_copy_blocks(dst, src, n);
        return;
    }
    if (BY_BLOCKS_SSE2 == way) {
        ompi_scale_copy_blocks_sse2(dst, src, n);
        return;
    }
    ompi_scale_copy_set_mode(BY_COPY_OFF == way  ? OMPI_SCALE_COPY_GUARD_OFF
                             : BY_COPY_ON == way ? OMPI_SCALE_COPY_GUARD_ON
                                                 : OMPI_SCALE_COPY_GUARD_AUTO);
    ompi_scale_copy(dst, src, n);
}

/* every distance 0..130 between the page offsets of source and destination,
 * at two source offsets; the destination is poisoned and surrounded by
 * guard bytes that must stay as they were */
START_TEST(copies_are_exact)
{
    static const size_t sizes[] = { 0, 1, 31, 32, 33, 127, 128, 129, 2049, 4096, 8191, 65537 };
    static const size_t src_offsets[] = { 0, 3 };
    const int way = _i;
    /* separate allocations: source and destination never overlap */
    /* a multiple of the alignment, as C11's aligned_alloc requires */
    const size_t span = (2 * PAGE + MAX_SIZE + 2 * PAGE + PAGE - 1) / PAGE * PAGE;
    unsigned char *sbuf = aligned_alloc(PAGE, span), *dbuf = aligned_alloc(PAGE, span);
    unsigned char *expect = malloc(MAX_SIZE + 2 * GUARD);
    ck_assert(NULL != sbuf && NULL != dbuf && NULL != expect);
    int copies = 0;
    for (size_t si = 0; si < sizeof(src_offsets) / sizeof(src_offsets[0]); ++si) {
        for (size_t dist = 0; dist <= MAX_DIST; ++dist) {
            for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); ++k) {
                const size_t n = sizes[k];
                unsigned char *src = sbuf + PAGE + src_offsets[si];
                unsigned char *dst = dbuf + PAGE + src_offsets[si] + dist;
                for (size_t i = 0; i < n; ++i) src[i] = (unsigned char) (i * 131 + dist * 7 + k + 1);
                memset(dst - GUARD, 0xa5, GUARD);
                memset(dst, 0x5a, n);
                memset(dst + n, 0xc3, GUARD);
                copy_by(way, dst, src, n);
                memset(expect, 0xa5, GUARD);
                memcpy(expect + GUARD, src, n);
                memset(expect + GUARD + n, 0xc3, GUARD);
                ck_assert_msg(0 == memcmp(dst - GUARD, expect, n + 2 * GUARD),
                              "%s: %zu bytes at distance %zu (source offset %zu) wrong",
                              way_name[way], n, dist, src_offsets[si]);
                copies++;
            }
        }
    }
    ck_assert_int_eq(copies, 2 * (MAX_DIST + 1) * 12);
    ompi_scale_copy_set_mode(OMPI_SCALE_COPY_GUARD_AUTO);
    free(expect);
    free(dbuf);
    free(sbuf);
}
END_TEST

static bool all_equal(const unsigned char *p, size_t n, unsigned char v)
{
    for (size_t i = 0; i < n; ++i) {
        if (p[i] != v) return false;
    }
    return true;
}

/* long copies at short distances, ending anywhere in a block, with the
 * destination at every alignment (the loops align their stores) */
START_TEST(blocks_every_tail)
{
    unsigned char *sbuf = aligned_alloc(PAGE, 4 * PAGE), *dbuf = aligned_alloc(PAGE, 4 * PAGE);
    ck_assert(NULL != sbuf && NULL != dbuf);
    for (size_t i = 0; i < 4 * PAGE; ++i) sbuf[i] = (unsigned char) (i * 37 + 11);
    for (size_t n = 2049; n <= 2049 + 130; ++n) {
        for (size_t dist = 1; dist < 64; dist += 5) {
            unsigned char *dst = dbuf + GUARD + dist;
            for (int sse2 = 0; sse2 < 2; ++sse2) {
                memset(dbuf, 0xa5, 4 * PAGE);
                if (sse2) ompi_scale_copy_blocks_sse2(dst, sbuf, n);
                else ompi_scale_copy_blocks(dst, sbuf, n);
                ck_assert_msg(0 == memcmp(dst, sbuf, n), "%zu bytes at distance %zu wrong%s", n,
                              dist, sse2 ? " (SSE2)" : "");
                ck_assert(all_equal(dbuf, GUARD + dist, 0xa5));
                ck_assert(all_equal(dst + n, 4 * PAGE - (GUARD + dist + n), 0xa5));
            }
        }
    }
    free(dbuf);
    free(sbuf);
}
END_TEST

/* buffers that overlap (erroneous, but glibc's memcpy copes) are not
 * corrupted by the block loop: ompi_scale_copy moves them */
START_TEST(overlap_is_moved)
{
    static const size_t dists[] = { 1, 16, 63, 4096 + 16 };
    const size_t n = 3 * PAGE + 100;
    unsigned char *buf = aligned_alloc(PAGE, 8 * PAGE), *expect = malloc(8 * PAGE);
    ck_assert(NULL != buf && NULL != expect);
    ompi_scale_copy_set_mode(OMPI_SCALE_COPY_GUARD_ON);
    for (size_t k = 0; k < sizeof(dists) / sizeof(dists[0]); ++k) {
        for (int backward = 0; backward < 2; ++backward) {
            for (size_t i = 0; i < 8 * PAGE; ++i) buf[i] = (unsigned char) (i * 13 + k);
            memcpy(expect, buf, 8 * PAGE);
            /* dst dist past src, or dst before src by 4K - dist (same distance mod 4K) */
            size_t s_off = PAGE, d_off = PAGE + dists[k];
            if (backward) s_off = d_off + PAGE - dists[k] % PAGE;
            ck_assert(ompi_scale_copy_short_distance(buf + d_off, buf + s_off, n));
            memmove(expect + d_off, expect + s_off, n);
            ompi_scale_copy(buf + d_off, buf + s_off, n);
            ck_assert_msg(0 == memcmp(buf, expect, 8 * PAGE), "distance %zu%s", dists[k],
                          backward ? " (dst before src)" : "");
        }
    }
    ompi_scale_copy_set_mode(OMPI_SCALE_COPY_GUARD_AUTO);
    free(expect);
    free(buf);
}
END_TEST

/* the small copy at every size it takes, at every alignment, and between
 * overlapping buffers in both directions (memmove's result) */
START_TEST(small_copies)
{
    unsigned char buf[64], expect[64];
    for (size_t n = 0; n <= OMPI_SCALE_COPY_SMALL_MAX; ++n) {
        for (size_t s_off = 0; s_off < 24; ++s_off) {
            for (size_t d_off = 0; d_off < 24; ++d_off) {
                for (size_t i = 0; i < sizeof(buf); ++i) buf[i] = (unsigned char) (i * 29 + n + 1);
                memcpy(expect, buf, sizeof(buf));
                memmove(expect + 8 + d_off, expect + 8 + s_off, n);
                ompi_scale_copy_small(buf + 8 + d_off, buf + 8 + s_off, n);
                ck_assert_msg(0 == memcmp(buf, expect, sizeof(buf)),
                              "%zu bytes from offset %zu to %zu wrong", n, s_off, d_off);
            }
        }
    }
}
END_TEST

START_TEST(mode_switch)
{
    ck_assert_int_eq(ompi_scale_copy_get_mode(), OMPI_SCALE_COPY_GUARD_AUTO);   /* default */
    ompi_scale_copy_set_mode(OMPI_SCALE_COPY_GUARD_OFF);
    ck_assert_int_eq(ompi_scale_copy_get_mode(), OMPI_SCALE_COPY_GUARD_OFF);
    ck_assert(!ompi_scale_copy_user_slow());
    ck_assert(!ompi_scale_copy_kernel_slow());
    ompi_scale_copy_set_mode(OMPI_SCALE_COPY_GUARD_ON);
    ck_assert_int_eq(ompi_scale_copy_get_mode(), OMPI_SCALE_COPY_GUARD_ON);
    ck_assert(ompi_scale_copy_user_slow());
    /* anything else is AUTO */
    ompi_scale_copy_set_mode(7);
    ck_assert_int_eq(ompi_scale_copy_get_mode(), OMPI_SCALE_COPY_GUARD_AUTO);
    ompi_scale_copy_set_mode(-1);
    ck_assert_int_eq(ompi_scale_copy_get_mode(), OMPI_SCALE_COPY_GUARD_AUTO);
    /* OFF again after a measurement: still false */
    (void) ompi_scale_copy_user_slow();
    (void) ompi_scale_copy_kernel_slow();
    ompi_scale_copy_set_mode(OMPI_SCALE_COPY_GUARD_OFF);
    ck_assert(!ompi_scale_copy_user_slow());
    ck_assert(!ompi_scale_copy_kernel_slow());
    ompi_scale_copy_set_mode(OMPI_SCALE_COPY_GUARD_AUTO);
}
END_TEST

/* AUTO measures once: the same answer every time after */
START_TEST(auto_is_stable)
{
    ompi_scale_copy_set_mode(OMPI_SCALE_COPY_GUARD_AUTO);
    bool user = ompi_scale_copy_user_slow();
    bool kernel = ompi_scale_copy_kernel_slow();
    printf("measured here: memcpy %s, CMA %s at short distance\n", user ? "slow" : "fast",
           kernel ? "slow" : "fast (or unavailable)");
    for (int i = 0; i < 3; ++i) {
        ck_assert(user == ompi_scale_copy_user_slow());
        ck_assert(kernel == ompi_scale_copy_kernel_slow());
    }
    /* ON and back to AUTO: the cached answer again */
    ompi_scale_copy_set_mode(OMPI_SCALE_COPY_GUARD_ON);
    ck_assert(ompi_scale_copy_user_slow());
    ompi_scale_copy_set_mode(OMPI_SCALE_COPY_GUARD_AUTO);
    ck_assert(user == ompi_scale_copy_user_slow());
    ck_assert(kernel == ompi_scale_copy_kernel_slow());
#if !defined(__x86_64__)
    ck_assert(!user && !kernel);
#endif
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("ompi_scale_copy");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, short_distance_boundaries);
    tcase_add_loop_test(tc, copies_are_exact, 0, NWAYS);
    tcase_add_test(tc, blocks_every_tail);
    tcase_add_test(tc, overlap_is_moved);
    tcase_add_test(tc, small_copies);
    tcase_add_test(tc, mode_switch);
    tcase_add_test(tc, auto_is_stable);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return check_run(suite());
}
