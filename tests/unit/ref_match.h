/*
 * ref_match: the reference matcher (MPICH-style semantics): one FIFO list of
 * posted receives (ranked and ANY_SOURCE mixed, posting order) and one FIFO
 * list of unexpected messages (arrival order) per communicator, searched
 * first-match from the head. Deliberately naive: it is the oracle that the
 * 4D engine (policy OLDEST) must reproduce operation by operation.
 *
 * Intrusive like mdq_match: the caller embeds a ref_match_item_t.
 */
#ifndef REF_MATCH_H
#define REF_MATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define REF_MATCH_ANY_SOURCE (-1)
#define REF_MATCH_ANY_TAG (-1)

typedef struct ref_match_item {
    struct ref_match_item *next, *prev;
    int32_t rank, tag;
    int queued; /* 0: not queued, 1: posted list, 2: unexpected list */
} ref_match_item_t;

typedef struct ref_match_queue {
    ref_match_item_t *prq_head, *prq_tail;
    ref_match_item_t *umq_head, *umq_tail;
    size_t prq_length, umq_length;
    uint64_t visits; /* items compared */
} ref_match_queue_t;

/* receive tag `want` accepts message tag `have` (ANY_TAG: only have >= 0) */
bool ref_match_tag_ok(int32_t want, int32_t have);

void ref_match_init(ref_match_queue_t *q);
/* message arrival: first posted receive accepting (rank, tag), removed */
ref_match_item_t *ref_match_take_posted(ref_match_queue_t *q, int32_t rank, int32_t tag);
void ref_match_append_unexpected(ref_match_queue_t *q, ref_match_item_t *it);
/* first unexpected message accepted by (rank|ANY_SOURCE, tag|ANY_TAG) */
ref_match_item_t *ref_match_find_unexpected(ref_match_queue_t *q, int32_t rank, int32_t tag,
                                            bool remove);
void ref_match_append_posted(ref_match_queue_t *q, ref_match_item_t *it);
/* removal by identity; false if not queued */
bool ref_match_remove(ref_match_queue_t *q, ref_match_item_t *it);

#endif
