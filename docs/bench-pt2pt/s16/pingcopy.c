/* Build: gcc -O2 -o pingcopy pingcopy.c ; run: ./pingcopy SIZE [BLOCKS]  (no MPI; session 16)
 * Cross-core ping-pong through shared memory, two copies per message,
 * copy routines interleaved in blocks of 500 round trips so that every
 * routine sees the same machine mode; prints per routine the median and
 * the minimum of the block means (one-way us). cpu 0 and cpu 1. */
#define _GNU_SOURCE
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <immintrin.h>

typedef void (*copy_fn)(void *, const void *, size_t);
static void c_libc(void *d, const void *s, size_t n) { memcpy(d, s, n); }
static void c_movsb(void *d, const void *s, size_t n) { __asm__ volatile("rep movsb" : "+D"(d), "+S"(s), "+c"(n) :: "memory"); }
__attribute__((target("avx2"))) static void c_avx(void *d, const void *s, size_t n) {
    const __m256i *src = s; __m256i *dst = d;
    for (size_t i = 0; i < n / 32; i += 4) {
        __m256i a = _mm256_loadu_si256(src + i), b = _mm256_loadu_si256(src + i + 1);
        __m256i c = _mm256_loadu_si256(src + i + 2), e = _mm256_loadu_si256(src + i + 3);
        _mm256_storeu_si256(dst + i, a); _mm256_storeu_si256(dst + i + 1, b);
        _mm256_storeu_si256(dst + i + 2, c); _mm256_storeu_si256(dst + i + 3, e);
    }
}
/* receiver: prefetch ahead while copying */
__attribute__((target("avx2"))) static void c_pf(void *d, const void *s, size_t n) {
    const char *src = s;
    for (size_t i = 0; i < n && i < 1024; i += 64) __builtin_prefetch(src + i);
    for (size_t i = 0; i < n; i += 128) {
        if (i + 1024 < n) { __builtin_prefetch(src + i + 1024); __builtin_prefetch(src + i + 1088); }
        const __m256i *p = (const __m256i *) (src + i); __m256i *q = (__m256i *) ((char *) d + i);
        __m256i a = _mm256_loadu_si256(p), b = _mm256_loadu_si256(p + 1), c = _mm256_loadu_si256(p + 2), e = _mm256_loadu_si256(p + 3);
        _mm256_storeu_si256(q, a); _mm256_storeu_si256(q + 1, b); _mm256_storeu_si256(q + 2, c); _mm256_storeu_si256(q + 3, e);
    }
}
#define NV 6
static const char *names[NV] = {"libc/libc", "movsb/movsb", "libc/movsb", "avx/avx", "libc/prefetch", "pieces4k"};
struct shm { _Atomic uint64_t flag[2][16]; _Atomic uint64_t piece[2][16]; char pad[576]; char slot[2][(1 << 20) + 320]; };
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
static void pin(int c) { cpu_set_t s; CPU_ZERO(&s); CPU_SET(c, &s); sched_setaffinity(0, sizeof(s), &s); }
static int cmp(const void *a, const void *b) { double x = *(double *) a, y = *(double *) b; return (x > y) - (x < y); }

int main(int argc, char **argv)
{
    size_t n = argc > 1 ? atol(argv[1]) : 8192;
    int blocks = argc > 2 ? atoi(argv[2]) : 40, per = 500;
    struct shm *m = mmap(NULL, sizeof(*m), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    pid_t pid = fork();
    int me = pid == 0 ? 1 : 0;
    pin(me);
    char *src = (char *) aligned_alloc(4096, n + 8192) + 1024 + 64 * me, *dst = (char *) aligned_alloc(4096, n + 8192) + 2048 + 128 * me;
    memset(src, me + 1, n); memset(dst, 0, n);
    double *res = calloc((size_t) NV * blocks, sizeof(double));
    uint64_t seq = 0;
    for (int b = 0; b < blocks; ++b) for (int v = 0; v < NV; ++v) {
        copy_fn tx = v == 1 ? c_movsb : v == 3 ? c_avx : c_libc;
        copy_fn rx = v == 1 || v == 2 ? c_movsb : v == 3 ? c_avx : v == 4 ? c_pf : c_libc;
        double t0 = now();
        for (int i = 0; i < per; ++i) {
            ++seq;
            if (v == 5) {   /* 4 KiB pieces: the receiver copies piece k while the sender copies k+1 */
                size_t P = 4096, np = (n + P - 1) / P;
                int s = me, r = !me;
                for (int half = 0; half < 2; ++half) {
                    if (half == s) {
                        for (size_t k = 0; k < np; ++k) {
                            size_t len = n - k * P < P ? n - k * P : P;
                            c_libc(m->slot[s] + k * P, src + k * P, len);
                            atomic_store_explicit(&m->piece[s][0], seq * 1024 + k + 1, memory_order_release);
                        }
                    } else {
                        for (size_t k = 0; k < np; ++k) {
                            size_t len = n - k * P < P ? n - k * P : P;
                            while (atomic_load_explicit(&m->piece[r][0], memory_order_acquire) < seq * 1024 + k + 1) ;
                            c_libc(dst + k * P, m->slot[r] + k * P, len);
                        }
                    }
                    s = !s; r = !r;
                }
                (void) r;
                continue;
            }
            if (me == 0) {
                tx(m->slot[0], src, n); atomic_store_explicit(&m->flag[0][0], seq, memory_order_release);
                while (atomic_load_explicit(&m->flag[1][0], memory_order_acquire) != seq) ;
                rx(dst, m->slot[1], n);
            } else {
                while (atomic_load_explicit(&m->flag[0][0], memory_order_acquire) != seq) ;
                rx(dst, m->slot[0], n);
                tx(m->slot[1], src, n); atomic_store_explicit(&m->flag[1][0], seq, memory_order_release);
            }
        }
        res[v * blocks + b] = (now() - t0) / per / 2 * 1e6;
    }
    if (me == 1) _exit(0);
    waitpid(pid, NULL, 0);
    for (int v = 0; v < NV; ++v) {
        qsort(res + v * blocks, blocks, sizeof(double), cmp);
        printf("%7zu B %-14s median %.3f  min %.3f  max %.3f us one-way\n", n, names[v], res[v * blocks + blocks / 2], res[v * blocks], res[v * blocks + blocks - 1]);
    }
    return 0;
}
