/*
 * Adaptive choice between two protocols for messages above the medium
 * limit: COPY (the message goes through BTL send buffers in pieces, the
 * receiver copying piece k while the sender copies piece k+1) and RGET
 * (rendezvous, the receiver pulls the data with one RDMA get).
 *
 * Which one is faster depends on how cheaply the two processes' caches
 * exchange lines: where they share a cache level, copies are nearly free
 * and the fixed cost of an RDMA get (a system call for CMA) dominates;
 * where they do not, the single copy of the get wins above a few tens of
 * KiB. The same binary meets both cases (and a VM can move between them),
 * so the choice is measured rather than configured: for each size class
 * (powers of two) the sender keeps the last completion times of each
 * protocol (send start to the receiver's acknowledgement) and uses the
 * one whose recent median is lower (COPY by a margin of 1/16), trying the
 * other one every probe_interval messages so that a change is noticed.
 * Before it switches, it times the protocol in use for a window of
 * messages more: a burst of slow completions (the VM or the peer paused)
 * then washes out instead of leaving the class on the wrong protocol
 * until enough probes have refreshed the other one.
 *
 * The first completion of each protocol in a class is not kept: it pays
 * first-touch costs (fresh send buffers, the first registration) that can
 * be 10-20x the steady cost and would hold the median for several probes.
 * Probes also come early: besides every probe_interval-th message, the
 * messages 8, 16, 32, ... below probe_interval probe, so that a class
 * settles within tens of messages instead of hundreds.
 *
 * Pure C, no Open MPI: the caller serialises calls and supplies times.
 */
#ifndef MDQ_ADAPT_H
#define MDQ_ADAPT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum { MDQ_ADAPT_COPY = 0, MDQ_ADAPT_RGET = 1 };

#define MDQ_ADAPT_CLASSES 48 /* size classes: floor(log2(size)) */
#define MDQ_ADAPT_WINDOW 4   /* completion times kept per protocol and class */
#define MDQ_ADAPT_WARMUP 4   /* first messages of a class alternate, all timed */

typedef struct mdq_adapt_class {
    uint64_t sent;                              /* messages of the class so far */
    uint64_t window[2][MDQ_ADAPT_WINDOW];       /* recent completion times (ns) */
    uint32_t samples[2];                        /* valid entries in window (saturates) */
    uint32_t seen[2];                           /* a completion was reported (the first is dropped) */
    uint32_t next[2];                           /* ring position of the next sample */
    uint32_t current;                           /* protocol in use after the warm-up */
    uint32_t recheck;                           /* messages re-timing current before a switch */
} mdq_adapt_class_t;

typedef struct mdq_adapt {
    uint32_t probe_interval; /* every Nth message of a class uses the other protocol (0: never) */
    uint32_t copy_sample;    /* every Nth COPY message is timed (1: all) */
    mdq_adapt_class_t cls[MDQ_ADAPT_CLASSES];
} mdq_adapt_t;

void mdq_adapt_init(mdq_adapt_t *a, uint32_t probe_interval, uint32_t copy_sample);

/* size class of a message of size bytes (size > 0) */
int mdq_adapt_class_of(size_t size);

/* Protocol for the next message of size bytes. *timed tells the caller to
 * measure this message and report it with mdq_adapt_record. */
int mdq_adapt_choose(mdq_adapt_t *a, size_t size, bool *timed);

/* a timed message of size bytes sent with proto completed after ns */
void mdq_adapt_record(mdq_adapt_t *a, size_t size, int proto, uint64_t ns);

/* protocol the measurements of the class of size favour (RGET until both
 * are measured); the class follows it after a recheck (see above) */
int mdq_adapt_preferred(const mdq_adapt_t *a, size_t size);

/* median of the recent completion times of proto in the class of size
 * (UINT64_MAX: none) */
uint64_t mdq_adapt_typical(const mdq_adapt_t *a, size_t size, int proto);

#endif /* MDQ_ADAPT_H */
