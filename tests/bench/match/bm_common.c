/* Shared helpers of the matching bench: slab allocator, engine registry. */
#include "bm_engine.h"

#include <stdlib.h>
#include <string.h>

#define BM_SLAB_CHUNK 4096

void bm_slab_init(bm_slab_t *s, size_t size)
{
    memset(s, 0, sizeof(*s));
    s->size = size < sizeof(void *) ? sizeof(void *) : size;
}

void bm_slab_fini(bm_slab_t *s)
{
    for (size_t i = 0; i < s->nchunks; i++)
        free(s->chunks[i]);
    free(s->chunks);
    memset(s, 0, sizeof(*s));
}

void *bm_slab_get(bm_slab_t *s)
{
    if (!s->free) {
        if (s->nchunks == s->cap_chunks) {
            size_t cap = s->cap_chunks ? 2 * s->cap_chunks : 16;
            void **c = realloc(s->chunks, cap * sizeof(*c));
            if (!c)
                abort();
            s->chunks = c;
            s->cap_chunks = cap;
        }
        char *chunk = malloc(s->size * BM_SLAB_CHUNK);
        if (!chunk)
            abort();
        s->chunks[s->nchunks++] = chunk;
        /* thread the chunk in address order so fresh objects are sequential */
        for (size_t i = BM_SLAB_CHUNK; i-- > 0;) {
            void **o = (void **) (chunk + i * s->size);
            *o = s->free;
            s->free = o;
        }
    }
    void **o = s->free;
    s->free = *o;
    if (++s->live > s->peak)
        s->peak = s->live;
    return o;
}

void bm_slab_put(bm_slab_t *s, void *p)
{
    *(void **) p = s->free;
    s->free = p;
    s->live--;
}

const bm_engine_ops_t *const bm_engines[] = {
#ifndef BM_NO_MDQ
    &bm_engine_mdq,
#endif
    &bm_engine_ll, &bm_engine_array, &bm_engine_hash, &bm_engine_4dx, NULL,
};

const bm_engine_ops_t *bm_engine_by_name(const char *name)
{
    for (int i = 0; bm_engines[i]; i++)
        if (!strcmp(bm_engines[i]->name, name))
            return bm_engines[i];
    return NULL;
}
