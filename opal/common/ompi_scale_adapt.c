/*
 * Adaptive COPY/RDMA choice per size class: see ompi_scale_adapt.h.
 */
#include "ompi_scale_adapt.h"

#include <string.h>

void ompi_scale_adapt_init(ompi_scale_adapt_t *a, uint32_t probe_interval, uint32_t copy_sample)
{
    memset(a, 0, sizeof(*a));
    for (int k = 0; k < OMPI_SCALE_ADAPT_CLASSES; ++k) {
        a->cls[k].current = OMPI_SCALE_ADAPT_RDMA;
    }
    a->probe_interval = probe_interval;
    a->copy_sample = copy_sample > 0 ? copy_sample : 1;
    a->rdma_sample = 1;
}

void ompi_scale_adapt_set_rdma_sample(ompi_scale_adapt_t *a, uint32_t rdma_sample)
{
    a->rdma_sample = rdma_sample > 0 ? rdma_sample : 1;
}

int ompi_scale_adapt_class_of(size_t size)
{
    int k = 0;
    while (size > 1 && k < OMPI_SCALE_ADAPT_CLASSES - 1) {
        size >>= 1;
        k++;
    }
    return k;
}

/* median of the recent completion times: one message that waited for a
 * late receive, or one lucky one, does not decide (UINT64_MAX: none) */
static uint64_t class_typical(const ompi_scale_adapt_class_t *c, int proto)
{
    uint64_t v[OMPI_SCALE_ADAPT_WINDOW];
    uint32_t n = c->samples[proto];

    if (0 == n) {
        return UINT64_MAX;
    }
    memcpy(v, c->window[proto], n * sizeof(v[0]));
    for (uint32_t i = 1; i < n; ++i) { /* insertion sort of at most 4 */
        uint64_t x = v[i];
        uint32_t j = i;
        for (; j > 0 && v[j - 1] > x; --j) {
            v[j] = v[j - 1];
        }
        v[j] = x;
    }
    return n & 1 ? v[n / 2] : v[n / 2 - 1] / 2 + v[n / 2] / 2;
}

/* A measured protocol beats an unmeasured one. RDMA (the rendezvous
 * default) wins when nothing is measured, and unless COPY is faster by
 * more than 1/16: where the two are close, run-to-run noise would
 * otherwise flip the choice back and forth and pick the slower one half
 * of the time. */
static int class_preferred(const ompi_scale_adapt_class_t *c)
{
    uint64_t copy = class_typical(c, OMPI_SCALE_ADAPT_COPY);
    uint64_t rdma = class_typical(c, OMPI_SCALE_ADAPT_RDMA);
    if (UINT64_MAX == copy) {
        return OMPI_SCALE_ADAPT_RDMA;
    }
    if (UINT64_MAX == rdma) {
        return OMPI_SCALE_ADAPT_COPY;
    }
    return copy + copy / 16 < rdma ? OMPI_SCALE_ADAPT_COPY : OMPI_SCALE_ADAPT_RDMA;
}

/* messages 2*WARMUP, 4*WARMUP, ... (powers of two) below the interval */
static bool early_probe(const ompi_scale_adapt_t *a, uint64_t n)
{
    return n >= 2 * OMPI_SCALE_ADAPT_WARMUP && n < a->probe_interval && 0 == (n & (n - 1));
}

int ompi_scale_adapt_choose(ompi_scale_adapt_t *a, size_t size, bool *timed)
{
    ompi_scale_adapt_class_t *c = &a->cls[ompi_scale_adapt_class_of(size)];
    uint64_t n = c->sent++;
    int pref;

    if (n < OMPI_SCALE_ADAPT_WARMUP) {
        *timed = true;
        return (n & 1) ? OMPI_SCALE_ADAPT_RDMA : OMPI_SCALE_ADAPT_COPY;
    }
    pref = class_preferred(c);
    if (pref != (int) c->current) {
        if (c->recheck < OMPI_SCALE_ADAPT_WINDOW) {
            c->recheck++;
            *timed = true;
            return (int) c->current;
        }
        c->current = (uint32_t) pref;
    }
    c->recheck = 0;
    if (a->probe_interval > 0 && (0 == n % a->probe_interval || early_probe(a, n))) {
        *timed = true;
        return OMPI_SCALE_ADAPT_COPY == pref ? OMPI_SCALE_ADAPT_RDMA : OMPI_SCALE_ADAPT_COPY;
    }
    /* an RDMA is timed anyway where it is acknowledged (pml: RGET); timing a
     * COPY may cost an extra message (pml: the TIMED echo) */
    *timed = 0 == n % (OMPI_SCALE_ADAPT_RDMA == pref ? a->rdma_sample : a->copy_sample);
    return pref;
}

void ompi_scale_adapt_record(ompi_scale_adapt_t *a, size_t size, int proto, uint64_t ns)
{
    ompi_scale_adapt_class_t *c = &a->cls[ompi_scale_adapt_class_of(size)];
    if (proto != OMPI_SCALE_ADAPT_COPY && proto != OMPI_SCALE_ADAPT_RDMA) {
        return;
    }
    if (c->seen[proto] < OMPI_SCALE_ADAPT_COLD) {
        c->seen[proto]++;
        return; /* first-touch costs: see ompi_scale_adapt.h */
    }
    c->window[proto][c->next[proto]] = ns;
    c->next[proto] = (c->next[proto] + 1) % OMPI_SCALE_ADAPT_WINDOW;
    if (c->samples[proto] < OMPI_SCALE_ADAPT_WINDOW) {
        c->samples[proto]++;
    }
}

int ompi_scale_adapt_preferred(const ompi_scale_adapt_t *a, size_t size)
{
    return class_preferred(&a->cls[ompi_scale_adapt_class_of(size)]);
}

uint64_t ompi_scale_adapt_typical(const ompi_scale_adapt_t *a, size_t size, int proto)
{
    return class_typical(&a->cls[ompi_scale_adapt_class_of(size)], proto);
}
