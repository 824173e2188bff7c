/* ref_match: naive first-match linked-list matcher used as test oracle. */
#include "ref_match.h"

#include <stddef.h>

bool ref_match_tag_ok(int32_t want, int32_t have)
{
    if (want == REF_MATCH_ANY_TAG)
        return have >= 0;
    return want == have;
}

void ref_match_init(ref_match_queue_t *q)
{
    q->prq_head = q->prq_tail = q->umq_head = q->umq_tail = NULL;
    q->prq_length = q->umq_length = 0;
    q->visits = 0;
}

static void list_append(ref_match_item_t **h, ref_match_item_t **t, ref_match_item_t *it)
{
    it->next = NULL;
    it->prev = *t;
    if (*t)
        (*t)->next = it;
    else
        *h = it;
    *t = it;
}

static void list_unlink(ref_match_item_t **h, ref_match_item_t **t, ref_match_item_t *it)
{
    if (it->prev)
        it->prev->next = it->next;
    else
        *h = it->next;
    if (it->next)
        it->next->prev = it->prev;
    else
        *t = it->prev;
    it->next = it->prev = NULL;
}

ref_match_item_t *ref_match_take_posted(ref_match_queue_t *q, int32_t rank, int32_t tag)
{
    for (ref_match_item_t *it = q->prq_head; it; it = it->next) {
        q->visits++;
        if ((it->rank == rank || it->rank == REF_MATCH_ANY_SOURCE) && ref_match_tag_ok(it->tag, tag)) {
            list_unlink(&q->prq_head, &q->prq_tail, it);
            q->prq_length--;
            it->queued = 0;
            return it;
        }
    }
    return NULL;
}

void ref_match_append_unexpected(ref_match_queue_t *q, ref_match_item_t *it)
{
    list_append(&q->umq_head, &q->umq_tail, it);
    q->umq_length++;
    it->queued = 2;
}

ref_match_item_t *ref_match_find_unexpected(ref_match_queue_t *q, int32_t rank, int32_t tag,
                                            bool remove)
{
    for (ref_match_item_t *it = q->umq_head; it; it = it->next) {
        q->visits++;
        if ((rank == REF_MATCH_ANY_SOURCE || it->rank == rank) && ref_match_tag_ok(tag, it->tag)) {
            if (remove) {
                list_unlink(&q->umq_head, &q->umq_tail, it);
                q->umq_length--;
                it->queued = 0;
            }
            return it;
        }
    }
    return NULL;
}

void ref_match_append_posted(ref_match_queue_t *q, ref_match_item_t *it)
{
    list_append(&q->prq_head, &q->prq_tail, it);
    q->prq_length++;
    it->queued = 1;
}

bool ref_match_remove(ref_match_queue_t *q, ref_match_item_t *it)
{
    if (it->queued == 1) {
        list_unlink(&q->prq_head, &q->prq_tail, it);
        q->prq_length--;
    } else if (it->queued == 2) {
        list_unlink(&q->umq_head, &q->umq_tail, it);
        q->umq_length--;
    } else
        return false;
    it->queued = 0;
    return true;
}
