/*
 * Sparse per-peer win_traits table (open addressing, linear probing).
 */
#include <stdlib.h>
#include "nbe_traits.h"

static size_t slot_of(int rank, size_t cap)
{
    uint64_t h = (uint64_t) (uint32_t) rank * 0x9E3779B97F4A7C15ull;
    return (size_t) (h >> 32) & (cap - 1);
}

int nbe_traits_init(nbe_traits_t *t)
{
    t->cap = 16;
    t->count = 0;
    t->last = NULL;
    t->slots = calloc(t->cap, sizeof(*t->slots));
    return t->slots ? 0 : -1;
}

size_t nbe_traits_memory(const nbe_traits_t *t)
{
    size_t bytes = t->cap * sizeof(*t->slots) + t->count * sizeof(nbe_trait_t);
    for (size_t i = 0; i < t->cap; ++i) {
        if (NULL != t->slots[i]) bytes += t->slots[i]->done_cap * sizeof(nbe_done_t);
    }
    return bytes;
}

void nbe_traits_fini(nbe_traits_t *t)
{
    if (NULL == t->slots) return;
    for (size_t i = 0; i < t->cap; ++i) {
        if (NULL != t->slots[i]) free(t->slots[i]->dones);
        free(t->slots[i]);
    }
    free(t->slots);
    t->slots = NULL;
    t->cap = t->count = 0;
    t->last = NULL;
}

nbe_trait_t *nbe_traits_find_slow(const nbe_traits_t *t, int rank)
{
    size_t i = slot_of(rank, t->cap);
    while (NULL != t->slots[i]) {
        if (t->slots[i]->rank == rank) {
            ((nbe_traits_t *) t)->last = t->slots[i];   /* a cache, not state */
            return t->slots[i];
        }
        i = (i + 1) & (t->cap - 1);
    }
    return NULL;
}

static int grow(nbe_traits_t *t)
{
    size_t ncap = t->cap * 2;
    nbe_trait_t **ns = calloc(ncap, sizeof(*ns));
    if (NULL == ns) return -1;
    for (size_t i = 0; i < t->cap; ++i) {
        nbe_trait_t *tr = t->slots[i];
        if (NULL == tr) continue;
        size_t j = slot_of(tr->rank, ncap);
        while (NULL != ns[j]) j = (j + 1) & (ncap - 1);
        ns[j] = tr;
    }
    free(t->slots);
    t->slots = ns;
    t->cap = ncap;
    return 0;
}

nbe_trait_t *nbe_traits_get_slow(nbe_traits_t *t, int rank)
{
    nbe_trait_t *tr = nbe_traits_find_slow(t, rank);
    if (NULL != tr) return tr;
    /* keep the load factor under 1/2 */
    if (2 * (t->count + 1) > t->cap && 0 != grow(t)) return NULL;
    tr = calloc(1, sizeof(*tr));
    if (NULL == tr) return NULL;
    tr->rank = rank;
    size_t i = slot_of(rank, t->cap);
    while (NULL != t->slots[i]) i = (i + 1) & (t->cap - 1);
    t->slots[i] = tr;
    t->count++;
    t->last = tr;
    return tr;
}

void nbe_traits_each(nbe_traits_t *t, void (*fn)(void *ctx, nbe_trait_t *tr), void *ctx)
{
    for (size_t i = 0; i < t->cap; ++i) {
        if (NULL != t->slots[i]) fn(ctx, t->slots[i]);
    }
}

int nbe_trait_push_done(nbe_trait_t *tr, uint64_t id, uint64_t ops)
{
    if (tr->done_count == tr->done_cap) {
        uint32_t ncap = tr->done_cap ? 2 * tr->done_cap : 2;
        nbe_done_t *nd = malloc(ncap * sizeof(*nd));
        if (NULL == nd) return -1;
        for (uint32_t i = 0; i < tr->done_count; ++i) {
            nd[i] = tr->dones[(tr->done_head + i) % tr->done_cap];
        }
        free(tr->dones);
        tr->dones = nd;
        tr->done_cap = ncap;
        tr->done_head = 0;
    }
    /* kept sorted by id, so a DONE that overtook an earlier one (sent over
     * another path) still waits behind it */
    uint32_t i = tr->done_count;
    while (i > 0) {
        nbe_done_t *prev = &tr->dones[(tr->done_head + i - 1) % tr->done_cap];
        if (prev->id < id) break;
        tr->dones[(tr->done_head + i) % tr->done_cap] = *prev;
        --i;
    }
    nbe_done_t *d = &tr->dones[(tr->done_head + i) % tr->done_cap];
    d->id = id;
    d->ops = ops;
    tr->done_count++;
    return 0;
}

const nbe_done_t *nbe_trait_first_done(const nbe_trait_t *tr)
{
    return tr->done_count ? &tr->dones[tr->done_head] : NULL;
}

void nbe_trait_pop_done(nbe_trait_t *tr)
{
    if (0 == tr->done_count) return;
    tr->done_head = (tr->done_head + 1) % tr->done_cap;
    tr->done_count--;
}
