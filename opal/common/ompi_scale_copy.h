/*
 * Copies that avoid the short-distance penalty of `rep movsb`.
 *
 * glibc's memcpy uses `rep movsb` above 2048 bytes. On AMD Zen (FSRM) that
 * instruction is ~25x slower when the destination is a few bytes past the
 * source modulo 4 KiB (4K aliasing): on the test EPYC an 8 KiB memcpy at
 * distance 16 takes 4.3 us instead of 0.16 us. A loop of vector loads and
 * stores is not affected at any distance. The kernel's CMA copy
 * (process_vm_readv/writev) shows the same penalty (1 MiB: 630-810 us
 * instead of 130-150 us).
 *
 * Pure C: no Open MPI or MPI header (unit-tested on its own). Linked
 * privately into each component (libompi_scale_copy.la), so each component
 * has its own mode and its own measured answers.
 */
#ifndef OMPI_SCALE_COPY_H
#define OMPI_SCALE_COPY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

/* smaller copies never use rep movsb in glibc */
#define OMPI_SCALE_COPY_GUARD_MIN 2049

enum { OMPI_SCALE_COPY_GUARD_OFF = 0, OMPI_SCALE_COPY_GUARD_ON = 1, OMPI_SCALE_COPY_GUARD_AUTO = 2 };

/* true when dst is 1..63 bytes past src modulo 4 KiB and n >= OMPI_SCALE_COPY_GUARD_MIN */
static inline bool ompi_scale_copy_short_distance(const void *dst, const void *src, size_t n)
{
    size_t d = (size_t) (((uintptr_t) dst - (uintptr_t) src) & 4095u);
    return n >= OMPI_SCALE_COPY_GUARD_MIN && d - 1 < 63;   /* d in 1..63 */
}

/* Mode for both guards below; default AUTO (set by the components from
 * their MCA variables). Any other value means AUTO. */
void ompi_scale_copy_set_mode(int mode);
int ompi_scale_copy_get_mode(void);

/* Does memcpy (user space) pay the short-distance penalty here? ON: true,
 * OFF: false, AUTO: measured once per process (per component) on the first
 * call, ~100-300 us, then cached: best-of-N timings of an 8 KiB memcpy at
 * distance 16 and at distance 2048 in a private allocation; slow when the
 * ratio is above 3. Thread-safe (a race may measure twice). Always false
 * off x86-64 unless ON. */
bool ompi_scale_copy_user_slow(void);

/* Same question for the kernel's CMA copy: measured once with
 * process_vm_readv on this process's own pid (64 KiB, distance 16 vs 2048).
 * false if process_vm_readv is unavailable or fails (ENOSYS/EPERM), under
 * OFF, and off x86-64. ON: true where process_vm_readv works (found out
 * by the same one-time measurement). */
bool ompi_scale_copy_kernel_slow(void);

/* Would a single-copy RDMA from src to dst over a BTL of this component
 * pay the penalty? Only where a CPU makes the copy (vader, sm: CMA, XPMEM
 * or KNEM; network BTLs move data by DMA), at a short distance, on a
 * machine that pays it for the kernel's or the user-space copy. */
bool ompi_scale_copy_rdma_slow(const char *btl_component, const void *dst, const void *src,
                               size_t n);

/* Copy without rep movs: a loop of 32-byte AVX2 loads and stores where the
 * CPU has AVX2, of 16-byte SSE2 ones otherwise (stores aligned on the
 * destination); memcpy below 128 bytes and off x86-64. Non-overlapping
 * buffers. */
void ompi_scale_copy_blocks(void *dst, const void *src, size_t n);

/* For tests and benchmarks: the SSE2 loop whatever the CPU (memcpy off x86-64) */
void ompi_scale_copy_blocks_sse2(void *dst, const void *src, size_t n);

/* largest copy ompi_scale_copy_small takes */
#define OMPI_SCALE_COPY_SMALL_MAX 16

/* Copy of n <= OMPI_SCALE_COPY_SMALL_MAX bytes without a call: two
 * overlapping loads of 8 or 4 bytes (below 4: the first, middle and last
 * byte), then the stores (memmove-safe).
 * memcpy of a size known only at run time is a call through the PLT to
 * glibc's dispatched copy: with it, an 8 B eager send took 22 instructions
 * more on the sending rank (callgrind, pt2pt_bandwidth -m 8:8 -W 64). */
static inline void ompi_scale_copy_small(void *dst, const void *src, size_t n)
{
    unsigned char *d = (unsigned char *) dst;
    const unsigned char *s = (const unsigned char *) src;

    if (n >= 8) {
        uint64_t head, tail;
        memcpy(&head, s, 8);
        memcpy(&tail, s + n - 8, 8);
        memcpy(d, &head, 8);
        memcpy(d + n - 8, &tail, 8);
    } else if (n >= 4) {
        uint32_t head, tail;
        memcpy(&head, s, 4);
        memcpy(&tail, s + n - 4, 4);
        memcpy(d, &head, 4);
        memcpy(d + n - 4, &tail, 4);
    } else if (n > 0) {
        unsigned char first = s[0], middle = s[n / 2], last = s[n - 1];
        d[0] = first;
        d[n / 2] = middle;
        d[n - 1] = last;
    }
}

/* memcpy for non-overlapping buffers that avoids the penalty: the small
 * copy above up to 16 bytes, the block loop when the distance is short
 * and memcpy is slow here, else memcpy.
 * Overlapping buffers (erroneous) get memmove there, not a wrong copy
 * (glibc's memcpy happens to be a memmove on x86-64). */
static inline void ompi_scale_copy(void *dst, const void *src, size_t n)
{
    if (n <= OMPI_SCALE_COPY_SMALL_MAX) {
        ompi_scale_copy_small(dst, src, n);
    } else if (__builtin_expect(ompi_scale_copy_short_distance(dst, src, n), 0) &&
               ompi_scale_copy_user_slow()) {
        if ((uintptr_t) dst - (uintptr_t) src >= n && (uintptr_t) src - (uintptr_t) dst >= n) {
            ompi_scale_copy_blocks(dst, src, n);
        } else {
            memmove(dst, src, n);
        }
    } else {
        memcpy(dst, src, n);
    }
}

#ifdef __cplusplus
}
#endif

#endif /* OMPI_SCALE_COPY_H */
