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

void nbe_traits_fini(nbe_traits_t *t)
{
    if (NULL == t->slots) return;
    for (size_t i = 0; i < t->cap; ++i) free(t->slots[i]);
    free(t->slots);
    t->slots = NULL;
    t->cap = t->count = 0;
    t->last = NULL;
}

nbe_trait_t *nbe_traits_find(const nbe_traits_t *t, int rank)
{
    if (NULL != t->last && t->last->rank == rank) return t->last;
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

nbe_trait_t *nbe_traits_get(nbe_traits_t *t, int rank)
{
    nbe_trait_t *tr = nbe_traits_find(t, rank);
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
