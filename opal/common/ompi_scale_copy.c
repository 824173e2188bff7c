/*
 * Copies that avoid the short-distance penalty of `rep movsb` (see
 * ompi_scale_copy.h): the mode, the two measured answers and the block loop.
 */
#define _GNU_SOURCE
#include "ompi_scale_copy.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <sys/uio.h>
#include <unistd.h>

#if defined(__x86_64__)
#include <immintrin.h>
#include <x86intrin.h>
#endif

static atomic_int copy_mode = OMPI_SCALE_COPY_GUARD_AUTO;

/* cached answers: unknown until measured */
enum { ANSWER_UNKNOWN = 0, ANSWER_FAST, ANSWER_SLOW, ANSWER_UNAVAILABLE };
static atomic_int user_answer = ANSWER_UNKNOWN;
static atomic_int kernel_answer = ANSWER_UNKNOWN;

void ompi_scale_copy_set_mode(int mode)
{
    if (OMPI_SCALE_COPY_GUARD_OFF != mode && OMPI_SCALE_COPY_GUARD_ON != mode) {
        mode = OMPI_SCALE_COPY_GUARD_AUTO;
    }
    atomic_store_explicit(&copy_mode, mode, memory_order_relaxed);
}

int ompi_scale_copy_get_mode(void)
{
    return atomic_load_explicit(&copy_mode, memory_order_relaxed);
}

#if defined(__x86_64__)

/* ---------------------------------------------------------------- */
/* the block loops: vector loads and stores, never rep movs */

/* 128 bytes: four 32-byte loads, then four stores (aligned: stores split
 * across cache lines cost ~1.5x at distance 16) */
__attribute__((target("avx2"))) static inline void block128_avx2(char *d, const char *s, bool aligned)
{
    __m256i a = _mm256_loadu_si256((const __m256i *) s);
    __m256i b = _mm256_loadu_si256((const __m256i *) (s + 32));
    __m256i c = _mm256_loadu_si256((const __m256i *) (s + 64));
    __m256i e = _mm256_loadu_si256((const __m256i *) (s + 96));
    if (aligned) {
        _mm256_store_si256((__m256i *) d, a);
        _mm256_store_si256((__m256i *) (d + 32), b);
        _mm256_store_si256((__m256i *) (d + 64), c);
        _mm256_store_si256((__m256i *) (d + 96), e);
    } else {
        _mm256_storeu_si256((__m256i *) d, a);
        _mm256_storeu_si256((__m256i *) (d + 32), b);
        _mm256_storeu_si256((__m256i *) (d + 64), c);
        _mm256_storeu_si256((__m256i *) (d + 96), e);
    }
}

/* n >= 128: the first 128 bytes, then from the first 32-byte boundary of
 * the destination on with aligned stores, and the last 128 bytes again
 * (the buffers do not overlap: bytes written twice get the same value) */
__attribute__((target("avx2"))) static void copy_avx2(char *d, const char *s, size_t n)
{
    block128_avx2(d, s, false);
    size_t i = (32 - ((uintptr_t) d & 31)) & 31;
    for (; i + 128 <= n; i += 128) block128_avx2(d + i, s + i, true);
    if (i < n) block128_avx2(d + n - 128, s + n - 128, false);
}

/* 64 bytes: four 16-byte loads, then four stores (SSE2: every x86-64) */
static inline void block64_sse2(char *d, const char *s, bool aligned)
{
    __m128i a = _mm_loadu_si128((const __m128i *) s);
    __m128i b = _mm_loadu_si128((const __m128i *) (s + 16));
    __m128i c = _mm_loadu_si128((const __m128i *) (s + 32));
    __m128i e = _mm_loadu_si128((const __m128i *) (s + 48));
    if (aligned) {
        _mm_store_si128((__m128i *) d, a);
        _mm_store_si128((__m128i *) (d + 16), b);
        _mm_store_si128((__m128i *) (d + 32), c);
        _mm_store_si128((__m128i *) (d + 48), e);
    } else {
        _mm_storeu_si128((__m128i *) d, a);
        _mm_storeu_si128((__m128i *) (d + 16), b);
        _mm_storeu_si128((__m128i *) (d + 32), c);
        _mm_storeu_si128((__m128i *) (d + 48), e);
    }
}

/* n >= 64, as copy_avx2 with 16-byte stores */
static void copy_sse2(char *d, const char *s, size_t n)
{
    block64_sse2(d, s, false);
    size_t i = (16 - ((uintptr_t) d & 15)) & 15;
    for (; i + 64 <= n; i += 64) block64_sse2(d + i, s + i, true);
    if (i < n) block64_sse2(d + n - 64, s + n - 64, false);
}

void ompi_scale_copy_blocks(void *dst, const void *src, size_t n)
{
    /* below 128 bytes memcpy uses vector moves too (rep movsb only > 2048) */
    if (n < 128) {
        memcpy(dst, src, n);
    } else if (__builtin_cpu_supports("avx2")) {
        copy_avx2(dst, src, n);
    } else {
        copy_sse2(dst, src, n);
    }
}

void ompi_scale_copy_blocks_sse2(void *dst, const void *src, size_t n)
{
    if (n < 64) {
        memcpy(dst, src, n);
    } else {
        copy_sse2(dst, src, n);
    }
}

/* ---------------------------------------------------------------- */
/* measurements: TSC ticks, best of several tries, at distance 16 (the
 * penalty) against distance 2048 (none) */

#define SLOW_RATIO 3
#define PAGE 4096u

static inline uint64_t ticks(void)
{
    _mm_lfence();
    uint64_t t = __rdtsc();
    _mm_lfence();
    return t;
}

/* through a volatile pointer: glibc's memcpy itself, never an inlined copy */
static void *(*volatile libc_memcpy)(void *, const void *, size_t) = memcpy;

/* 8 KiB: 0.16 us at a good distance, 4.3 us at distance 16 where rep movsb
 * is slow; 24 tries of each cost ~110 us there, ~10 us elsewhere */
#define USER_BYTES 8192u
#define USER_TRIES 24

static bool measure_user(void)
{
    /* src at page offset 0, the destinations 3 pages on at offsets 16 and 2048 */
    const size_t size = 3 * PAGE + 2048 + USER_BYTES;
    char *base = aligned_alloc(PAGE, (size + PAGE - 1) & ~(size_t) (PAGE - 1));
    if (NULL == base) return false;
    memset(base, 1, size);
    char *src = base, *near = base + 3 * PAGE + 16, *far = base + 3 * PAGE + 2048;
    uint64_t best_near = UINT64_MAX, best_far = UINT64_MAX;
    libc_memcpy(near, src, USER_BYTES);   /* warm up */
    libc_memcpy(far, src, USER_BYTES);
    for (int i = 0; i < USER_TRIES; ++i) {
        uint64_t t0 = ticks();
        libc_memcpy(near, src, USER_BYTES);
        uint64_t t1 = ticks();
        libc_memcpy(far, src, USER_BYTES);
        uint64_t t2 = ticks();
        if (t1 - t0 < best_near) best_near = t1 - t0;
        if (t2 - t1 < best_far) best_far = t2 - t1;
    }
    free(base);
    return best_near > SLOW_RATIO * best_far;
}

/* 64 KiB by process_vm_readv on ourselves: ~7 us at a good distance,
 * ~37 us at distance 16 on the test EPYC; 5 tries of each cost ~230 us,
 * ~350 us with the page faults of the fresh buffer */
#define KERNEL_BYTES 65536u
#define KERNEL_TRIES 5

static int cma_copy(char *dst, const char *src, size_t n)
{
#if defined(__linux__)
    struct iovec l = { dst, n }, r = { (void *) src, n };
    return process_vm_readv(getpid(), &l, 1, &r, 1, 0) == (ssize_t) n ? 0 : -1;
#else
    (void) dst, (void) src, (void) n;
    return -1;   /* no CMA */
#endif
}

static int measure_kernel(void)
{
    const size_t size = KERNEL_BYTES + PAGE + 2048 + KERNEL_BYTES;
    char *base = aligned_alloc(PAGE, (size + PAGE - 1) & ~(size_t) (PAGE - 1));
    if (NULL == base) return ANSWER_FAST;
    memset(base, 1, size);
    char *src = base, *near = base + KERNEL_BYTES + PAGE + 16;
    char *far = base + KERNEL_BYTES + PAGE + 2048;
    int answer = ANSWER_UNAVAILABLE;
    uint64_t best_near = UINT64_MAX, best_far = UINT64_MAX;
    if (0 == cma_copy(near, src, 1)) {   /* ENOSYS, EPERM (seccomp): unavailable */
        answer = ANSWER_FAST;
        for (int i = 0; i < KERNEL_TRIES && ANSWER_FAST == answer; ++i) {
            uint64_t t0 = ticks();
            int rc = cma_copy(near, src, KERNEL_BYTES);
            uint64_t t1 = ticks();
            rc |= cma_copy(far, src, KERNEL_BYTES);
            uint64_t t2 = ticks();
            if (0 != rc) answer = ANSWER_UNAVAILABLE;
            if (t1 - t0 < best_near) best_near = t1 - t0;
            if (t2 - t1 < best_far) best_far = t2 - t1;
        }
        if (ANSWER_FAST == answer && best_near > SLOW_RATIO * best_far) answer = ANSWER_SLOW;
    }
    free(base);
    return answer;
}

#else /* !__x86_64__: no rep movsb, nothing to avoid */

void ompi_scale_copy_blocks(void *dst, const void *src, size_t n)
{
    memcpy(dst, src, n);
}

void ompi_scale_copy_blocks_sse2(void *dst, const void *src, size_t n)
{
    memcpy(dst, src, n);
}

static bool measure_user(void)
{
    return false;
}

static int measure_kernel(void)
{
    return ANSWER_UNAVAILABLE;   /* not asked: kernel_slow is false here */
}

#endif

/* ---------------------------------------------------------------- */

bool ompi_scale_copy_rdma_slow(const char *btl_component, const void *dst, const void *src,
                               size_t n)
{
    if (__builtin_expect(!ompi_scale_copy_short_distance(dst, src, n), 1)) return false;
    if (0 != strcmp(btl_component, "vader") && 0 != strcmp(btl_component, "sm")) return false;
    return ompi_scale_copy_kernel_slow() || ompi_scale_copy_user_slow();
}

bool ompi_scale_copy_user_slow(void)
{
    int mode = atomic_load_explicit(&copy_mode, memory_order_relaxed);
    if (OMPI_SCALE_COPY_GUARD_OFF == mode) return false;
    if (OMPI_SCALE_COPY_GUARD_ON == mode) return true;
    int a = atomic_load_explicit(&user_answer, memory_order_acquire);
    if (__builtin_expect(ANSWER_UNKNOWN == a, 0)) {
        /* a concurrent first call measures too: same answer, stored twice */
        a = measure_user() ? ANSWER_SLOW : ANSWER_FAST;
        atomic_store_explicit(&user_answer, a, memory_order_release);
    }
    return ANSWER_SLOW == a;
}

bool ompi_scale_copy_kernel_slow(void)
{
#if !defined(__x86_64__)
    return false;
#endif
    int mode = atomic_load_explicit(&copy_mode, memory_order_relaxed);
    if (OMPI_SCALE_COPY_GUARD_OFF == mode) return false;
    int a = atomic_load_explicit(&kernel_answer, memory_order_acquire);
    if (__builtin_expect(ANSWER_UNKNOWN == a, 0)) {
        /* ON measures too: it tells whether process_vm_readv works here */
        a = measure_kernel();
        atomic_store_explicit(&kernel_answer, a, memory_order_release);
    }
    if (OMPI_SCALE_COPY_GUARD_ON == mode) return ANSWER_UNAVAILABLE != a;
    return ANSWER_SLOW == a;
}
