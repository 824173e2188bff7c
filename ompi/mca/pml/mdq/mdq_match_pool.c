/*
 * Cube and JumpPoint pools: slabs carved into fixed-size objects kept on
 * intrusive free lists (no per-object header, so the objects keep the sizes
 * of the memory model). One class for JumpPoints, one per Cube size.
 *
 * Byte accounting counts objects handed out (plus charged queue heads), not
 * slab capacity: bytes_live is the paper's O_4D summed over the queues.
 */
#include "mdq_match_internal.h"

#include <stdlib.h>
#include <string.h>

#define MDQ_SLAB_BYTES 16384 /* target slab size; at least MDQ_SLAB_MIN objects */
#define MDQ_SLAB_MIN 4

struct mdq_slab {
    struct mdq_slab *next;
    /* objects follow, 16-byte aligned */
};

#define MDQ_SLAB_HDR 16

mdq_match_pool_t *mdq_match_pool_create(void)
{
    mdq_match_pool_t *pool = calloc(1, sizeof(*pool));
    if (!pool)
        return NULL;
    pool->cls[0].obj_bytes = sizeof(mdq_jp_t);
    for (unsigned b = 2; b <= MDQ_MAX_BITS; b++)
        pool->cls[b].obj_bytes = mdq_cube_bytes(b);
    return pool;
}

void mdq_match_pool_destroy(mdq_match_pool_t *pool)
{
    if (!pool)
        return;
    for (mdq_slab_t *s = pool->slabs, *n; s; s = n) {
        n = s->next;
        free(s);
    }
    free(pool);
}

size_t mdq_match_pool_bytes_live(const mdq_match_pool_t *pool)
{
    return pool->bytes_live;
}

size_t mdq_match_pool_bytes_peak(const mdq_match_pool_t *pool)
{
    return pool->bytes_peak;
}

void mdq_match_pool_set_limit(mdq_match_pool_t *pool, size_t max_live_bytes)
{
    pool->bytes_limit = max_live_bytes;
}

size_t mdq_match_pool_bytes_reserved(const mdq_match_pool_t *pool)
{
    return pool->bytes_slabs;
}

bool mdq_pool_grow(mdq_match_pool_t *pool, mdq_pool_class_t *c)
{
    size_t n = MDQ_SLAB_BYTES / c->obj_bytes;
    if (n < MDQ_SLAB_MIN)
        n = MDQ_SLAB_MIN;
    size_t bytes = MDQ_SLAB_HDR + n * c->obj_bytes;
    mdq_slab_t *s = malloc(bytes);
    if (!s)
        return false;
    s->next = pool->slabs;
    pool->slabs = s;
    pool->bytes_slabs += bytes;
    /* thread in address order so consecutive gets are adjacent in memory */
    char *base = (char *) s + MDQ_SLAB_HDR;
    for (size_t i = n; i-- > 0;) {
        void **o = (void **) (base + i * c->obj_bytes);
        *o = c->free;
        c->free = o;
    }
    return true;
}
