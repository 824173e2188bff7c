/*
 * mdq_match_check_invariants: debug walk over one queue (design note 7.1
 * item 12). Cost is linear in the queue; tests call it after every
 * operation, production code never.
 *
 * Return codes (the first violation found):
 *   -1  queue NULL or sizing fields inconsistent with the communicator size
 *   -2  Cube list not strictly ascending in c3
 *   -3  empty Cube, or cube->njp differs from its JumpPoint count
 *   -4  c1 list not strictly ascending, or c1/c2 out of range
 *   -5  empty JumpPoint (both FIFOs empty)
 *   -6  JumpPoint back-links (prev, cube, c2) wrong
 *   -7  item in a JumpPoint whose rank does not decompose to (c3,c2,c1),
 *       or a ranked item outside [0, size)
 *   -8  list links broken (prev/next, head->prev != tail) or item->home wrong
 *   -9  seq not strictly increasing within a list
 *   -10 seq not below the queue's next sequence number
 *   -11 stats.prq_length differs from the posted items counted
 *   -12 stats.umq_length differs from the unexpected items counted
 *   -13 Cube / JumpPoint tallies differ from the objects counted
 *   -14 a list holds items it must not (4D: ranked item on the ANY_SOURCE
 *       list or a linear UMQ; linear: Cubes present; UMQ item with rank < 0)
 *   -15 ALL_UMQ list wrong: in 4D it must hold exactly the JumpPoint UMQ
 *       items in seq order with consistent all_next/all_prev links; empty in
 *       linear mode or without the feature
 *   -16 C3_ARRAY wrong: a Cube not at its c3 entry, the Cube list in use
 *       with the array, or an array without the feature
 *   -18 JumpPoint item count wrong, an item on the wrong per-rank list of a
 *       split JumpPoint, a split table without the feature, or the split
 *       tally wrong
 *   -17 LAST_HIT wrong: the cached JumpPoint is not a live JumpPoint of this
 *       queue with key rank >> bits, or a cache without the feature
 */
#include "mdq_match_internal.h"

enum { CHK_ANY_OK = 1, CHK_RANKED = 2 };

/* Walk one item list; *count += items. flags: CHK_ANY_OK allows
 * ANY_SOURCE items, CHK_RANKED requires them to be ranked in [0,size). */
static int check_list(const mdq_match_queue_t *q, mdq_match_item_t *head, void *home,
                      unsigned flags, const mdq_jp_t *jp, uint64_t *count)
{
    const mdq_cil_t *L = &q->cil;
    const mdq_match_item_t *prev = NULL;
    for (const mdq_match_item_t *it = head; it; it = it->next) {
        if (it->home != home)
            return -8;
        if (prev && it->prev != prev)
            return -8;
        if (prev && it->seq <= prev->seq)
            return -9;
        if (it->seq >= L->next_seq)
            return -10;
        if (it->rank == MDQ_MATCH_ANY_SOURCE) {
            if (!(flags & CHK_ANY_OK))
                return -14;
        } else {
            if (flags & CHK_ANY_OK && jp == NULL && L->is4d)
                return -14; /* 4D ANY_SOURCE list holds only wildcards */
            if (it->rank < 0 || (uint32_t) it->rank >= L->size)
                return -7;
        }
        if (jp) {
            uint32_t c[4];
            mdq_match_decompose((uint32_t) it->rank, L->bits, c);
            if (c[0] != jp->cube->c3 || c[1] != jp->c2 || c[2] != jp->c1)
                return -7;
        }
        prev = it;
        (*count)++;
        if (*count > (uint64_t) 1 << 40)
            return -8; /* cycle */
    }
    if (head && head->prev != prev)
        return -8;
    return 0;
}

int mdq_match_check_invariants(const mdq_match_queue_t *q)
{
    if (!q)
        return -1;
    const mdq_cil_t *L = &q->cil;
    if (L->size == 0 || L->bits != mdq_match_bits_for_size(L->size))
        return -1;
    const uint32_t ds = 1u << L->bits;
    uint64_t nposted = 0, nunexp = 0, ncubes = 0, njps = 0;
    int rc;
    const bool has_all = q->features & MDQ_MATCH_FEAT_ALL_UMQ;
    const bool has_tab = q->features & MDQ_MATCH_FEAT_C3_ARRAY;
    bool last_seen = false;
    uint64_t nsplit = 0;

    if ((q->features & ~MDQ_MATCH_FEAT_MASK) || has_tab != (q->c3tab != NULL))
        return -16;
    if (has_tab && (q->cil.cubes || q->nc3 != ((L->size - 1u) >> (3 * L->bits)) + 1u))
        return -16;
    if (q->last_jp && !(q->features & MDQ_MATCH_FEAT_LAST_HIT))
        return -17;
    if (q->all_umq && (!has_all || !L->is4d))
        return -15;

    if (!L->is4d) {
        if (L->cubes || mdq_cube_first(q))
            return -14;
        if (q->last_jp)
            return -17;
        if ((rc = check_list(q, L->posted, MDQ_HOME(q, MDQ_HOME_Q_PRQ), CHK_ANY_OK, NULL, &nposted)))
            return rc;
        if ((rc = check_list(q, L->unexpected, MDQ_HOME(q, MDQ_HOME_Q_UMQ), 0, NULL, &nunexp)))
            return rc;
    } else {
        if (L->unexpected)
            return -14;
        if ((rc = check_list(q, L->posted, MDQ_HOME(q, MDQ_HOME_Q_PRQ), CHK_ANY_OK, NULL, &nposted)))
            return rc;
        const mdq_cube_t *pc = NULL;
        for (const mdq_cube_t *c = mdq_cube_first(q); c; pc = c, c = mdq_cube_next(q, c)) {
            if (pc && pc->c3 >= c->c3)
                return -2;
            if (c->c3 >= ds)
                return -2;
            if (has_tab && (c->c3 >= q->nc3 || q->c3tab[c->c3] != c))
                return -16;
            uint32_t n = 0;
            for (uint32_t s = 0; s < ds; s++) {
                const mdq_jp_t *pj = NULL;
                for (const mdq_jp_t *j = c->slot[s]; j; pj = j, j = j->next) {
                    if (pj && pj->c1 >= j->c1)
                        return -4;
                    if (j->c1 >= ds || j->c2 != s)
                        return -4;
                    if (j->prev != pj || j->cube != c)
                        return -6;
                    uint64_t p0 = nposted, u0 = nunexp;
                    if (j->split) {
                        if (!(q->features & MDQ_MATCH_FEAT_SPLIT) || j->unused)
                            return -18;
                        nsplit++;
                        for (uint32_t c0 = 0; c0 < ds; c0++) {
                            const mdq_match_item_t *lp = j->c0tab[c0], *lu = j->c0tab[ds + c0];
                            if ((rc = check_list(q, (mdq_match_item_t *) lp, MDQ_HOME(j, MDQ_HOME_JP_PRQ), 0,
                                                 j, &nposted)))
                                return rc;
                            if ((rc = check_list(q, (mdq_match_item_t *) lu, MDQ_HOME(j, MDQ_HOME_JP_UMQ), 0,
                                                 j, &nunexp)))
                                return rc;
                            for (; lp; lp = lp->next)
                                if (((uint32_t) lp->rank & (ds - 1)) != c0)
                                    return -18;
                            for (; lu; lu = lu->next)
                                if (((uint32_t) lu->rank & (ds - 1)) != c0)
                                    return -18;
                        }
                    } else {
                        if ((rc = check_list(q, j->prq, MDQ_HOME(j, MDQ_HOME_JP_PRQ), 0, j, &nposted)))
                            return rc;
                        if ((rc = check_list(q, j->umq, MDQ_HOME(j, MDQ_HOME_JP_UMQ), 0, j, &nunexp)))
                            return rc;
                    }
                    if (nposted + nunexp == p0 + u0)
                        return -5;
                    if (nposted + nunexp - p0 - u0 != j->count)
                        return -18;
                    if (j == q->last_jp) {
                        if (q->last_key != (((c->c3 << L->bits | j->c2) << L->bits) | j->c1))
                            return -17;
                        last_seen = true;
                    }
                    n++;
                    njps++;
                }
            }
            if (n == 0 || n != c->njp)
                return -3;
            ncubes++;
        }
    }
    if (q->last_jp && !last_seen)
        return -17;
    if (nsplit != q->n_splits)
        return -18;
    if (has_all && L->is4d) {
        /* exactly the 4D unexpected items, ascending seq, links consistent */
        uint64_t n = 0;
        const mdq_match_item_t *prev = NULL;
        for (const mdq_match_item_t *it = q->all_umq; it; prev = it, it = it->all_next) {
            if (MDQ_HOME_KIND(it->home) != MDQ_HOME_JP_UMQ || it->home == NULL)
                return -15;
            if (prev && (it->all_prev != prev || it->seq <= prev->seq))
                return -15;
            if (++n > nunexp)
                return -15;
        }
        if (n != nunexp || (q->all_umq && q->all_umq->all_prev != prev))
            return -15;
    }
    if (nposted != q->stats.prq_length)
        return -11;
    if (nunexp != q->stats.umq_length)
        return -12;
    if (ncubes != q->n_cubes || njps != q->n_jps)
        return -13;
    return 0;
}
