/*
 * Adaptive choice between two ways of moving a large contiguous transfer
 * to a peer: COPY (the data goes through BTL send buffers in pieces, the
 * receiver copying piece k while the sender copies piece k+1) and RDMA
 * (one single-copy transfer: pml/mdq's RGET, where the receiver pulls the
 * message with an RDMA get; osc/nbe's put or get by vader's CMA in fence
 * and PSCW epochs).
 *
 * Which one is faster depends on how cheaply the two processes' caches
 * exchange lines: where they share a cache level, copies are nearly free
 * and the fixed cost of an RDMA (a system call for CMA) dominates;
 * where they do not, the single copy wins above a few tens of KiB. The
 * same binary meets both cases (and a VM can move between them, even from
 * one launch to the next), so the choice is measured rather than
 * configured: for each size class
 * (powers of two) the sender keeps the last completion times of each
 * protocol (pml: send start to the receiver's acknowledgement) and uses the
 * one whose recent median is lower (COPY by a margin of 1/16), trying the
 * other one every probe_interval messages so that a change is noticed.
 * Before it switches, it times the protocol in use for a window of
 * messages more: a burst of slow completions (the VM or the peer paused)
 * then washes out instead of leaving the class on the wrong protocol
 * until enough probes have refreshed the other one.
 *
 * The first two completions of each protocol in a class are not kept:
 * they pay first-touch costs (fresh send buffers and BTL fragments, the
 * first registration) that can be 10-20x the steady cost for the first and
 * still 3-8x for the second (vader, 256 KiB to 1 MiB: pml/mdq's first COPYs
 * 464 and 279 us against 20 us later; osc/nbe's first gets by active
 * messages 0.9-1.3 ms and 0.45-0.6 ms against 60-90 us), and would hold
 * the median for several probes. The warm-up alternates five of each, so
 * that both protocols enter the choice with three warm samples.
 * Probes also come early: besides every probe_interval-th message, the
 * messages 32, 64, ... below probe_interval probe, so that a class
 * settles within tens of messages instead of hundreds.
 *
 * Pure C, no Open MPI: the caller serialises calls and supplies times.
 */
#ifndef OMPI_SCALE_ADAPT_H
#define OMPI_SCALE_ADAPT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

enum { OMPI_SCALE_ADAPT_COPY = 0, OMPI_SCALE_ADAPT_RDMA = 1 };

#define OMPI_SCALE_ADAPT_CLASSES 48 /* size classes: floor(log2(size)) */
#define OMPI_SCALE_ADAPT_WINDOW 4   /* completion times kept per protocol and class */
#define OMPI_SCALE_ADAPT_WARMUP 10  /* first messages of a class alternate, all timed */
#define OMPI_SCALE_ADAPT_COLD 2     /* first completions per protocol and class not kept */

typedef struct ompi_scale_adapt_class {
    uint64_t sent;                              /* messages of the class so far */
    uint64_t window[2][OMPI_SCALE_ADAPT_WINDOW];       /* recent completion times (ns) */
    uint32_t samples[2];                        /* valid entries in window (saturates) */
    uint32_t seen[2];                           /* completions reported, up to OMPI_SCALE_ADAPT_COLD (those are dropped) */
    uint32_t next[2];                           /* ring position of the next sample */
    uint32_t current;                           /* protocol in use after the warm-up */
    uint32_t recheck;                           /* messages re-timing current before a switch */
} ompi_scale_adapt_class_t;

typedef struct ompi_scale_adapt {
    uint32_t probe_interval; /* every Nth message of a class uses the other protocol (0: never) */
    uint32_t copy_sample;    /* every Nth COPY message is timed (1: all) */
    uint32_t rdma_sample;    /* every Nth RDMA message is timed (1, the default: all) */
    ompi_scale_adapt_class_t cls[OMPI_SCALE_ADAPT_CLASSES];
} ompi_scale_adapt_t;

void ompi_scale_adapt_init(ompi_scale_adapt_t *a, uint32_t probe_interval, uint32_t copy_sample);

/* time only every Nth RDMA message of a class that prefers RDMA (warm-up,
 * re-timing and probes are always timed): for a caller whose untimed RDMA
 * transfers are cheaper (osc/nbe gathers them into one CMA call) */
void ompi_scale_adapt_set_rdma_sample(ompi_scale_adapt_t *a, uint32_t rdma_sample);

/* size class of a message of size bytes (size > 0) */
int ompi_scale_adapt_class_of(size_t size);

/* Protocol for the next message of size bytes. *timed tells the caller to
 * measure this message and report it with ompi_scale_adapt_record. */
int ompi_scale_adapt_choose(ompi_scale_adapt_t *a, size_t size, bool *timed);

/* a timed message of size bytes sent with proto completed after ns */
void ompi_scale_adapt_record(ompi_scale_adapt_t *a, size_t size, int proto, uint64_t ns);

/* protocol the measurements of the class of size favour (RDMA until both
 * are measured); the class follows it after a recheck (see above) */
int ompi_scale_adapt_preferred(const ompi_scale_adapt_t *a, size_t size);

/* median of the recent completion times of proto in the class of size
 * (UINT64_MAX: none) */
uint64_t ompi_scale_adapt_typical(const ompi_scale_adapt_t *a, size_t size, int proto);

/* the clock the callers time with: CLOCK_MONOTONIC nanoseconds */
static inline uint64_t ompi_scale_adapt_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t) ts.tv_sec * 1000000000u + (uint64_t) ts.tv_nsec;
}

#endif /* OMPI_SCALE_ADAPT_H */
