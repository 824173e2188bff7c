/*
 * osc/nbe: taking over a put frame from a passive target that left MPI.
 *
 * A small put of a passive epoch to a target seen in MPI goes as an active
 * message (osc_nbe_am.c). If the target leaves MPI just after that choice
 * (the first epoch after a barrier), the frame waits for its return, and so
 * does the unlock. On windows with the node's tables segment, the origin
 * may then apply the frame's puts itself by CMA, if it wins the sender's
 * claim word of that target against the target. A sender has
 * OMPI_OSC_NBE_CLAIM_SLOTS words in the segment (one cache line); a target
 * uses word (its rank mod that). Each such frame carries a generation,
 * counted by its sender over all its words; a word holds the generation
 * last applied or taken there and which of the two, and only grows:
 *
 *   target, before applying frame g:  finds TAKEN(g): skips its puts (still
 *                                     counted), stores APPLIED(g); finds a
 *                                     generation >= g: a later frame's, this
 *                                     one is not taken: applies; else CAS to
 *                                     APPLIED(g): applies
 *   origin, waiting for its last
 *   frame g, the target's stamp
 *   stale:                            finds APPLIED(g): the target has it;
 *                                     else CAS to TAKEN(g): writes the puts
 *                                     by CMA and counts them acknowledged
 *
 * Exactly one side applies the puts. A frame taken over must still find
 * TAKEN(g) when it arrives: until its target has stored APPLIED(g), the
 * origin arms no further frame for a target on that word (whose target
 * would write a later generation over it). Frames to targets on the other
 * words stay claimable, so a second target that leaves MPI while the first
 * is still away is not waited for either (up to 7 more, with ranks that
 * differ mod 8). Nothing is written before the frame
 * leaves, so a frame costs the target one compare-and-swap on a line it
 * wrote last itself (for frames from one origin), and the origin nothing
 * but its generation count. Only the last such frame is kept, and only
 * while it is the only unacknowledged message to its target: the engine
 * then counts the take-over as the target's ack of everything sent there.
 * A frame may carry, or be followed by, only control messages the take-over
 * answers as well: a NOCHECK unlock (window locks are the tables' words, so
 * it releases nothing at the target) or a flush request.
 */
#include "ompi_config.h"

#include <stdlib.h>
#include <string.h>

#include "osc_nbe.h"
#include "nbe_cma.h"
#include "nbe_engine.h"

enum { CLAIM_APPLIED = 1, CLAIM_TAKEN = 2 };

static inline uint64_t claim_word(uint64_t gen, int state)
{
    return (gen << 2) | (uint64_t) state;
}

/* the word of sender's frames to target */
static inline volatile uint64_t *claim_slot(const ompi_osc_nbe_module_t *module, int sender,
                                            int target)
{
    return &module->shm_claims[(size_t) sender * OMPI_OSC_NBE_CLAIM_SLOTS +
                               (size_t) (target % OMPI_OSC_NBE_CLAIM_SLOTS)];
}

static bool take_over = true;
static unsigned long long pv_taken, pv_skipped;

void ompi_osc_nbe_claim_register_params(const mca_base_component_t *c)
{
    ompi_osc_nbe_register_bool(c, "take_over",
        "On windows of one node with the tables segment: a frame of small puts of a "
        "passive epoch, sent to a target that then left MPI, is applied by its origin by "
        "CMA once a wait for it sees the target away (the target skips it on its return), "
        "instead of waiting for the target",
        OPAL_INFO_LVL_5, true, &take_over);
    ompi_osc_nbe_register_counter(c, "frames_taken_over",
        "Put frames this process applied itself by CMA after their target left MPI "
        "without applying them", &pv_taken);
    ompi_osc_nbe_register_counter(c, "frames_skipped",
        "Put frames that arrived here after their origin had applied them itself", &pv_skipped);
}

void ompi_osc_nbe_claim_init(ompi_osc_nbe_module_t *module)
{
    memset(&module->claim, 0, sizeof(module->claim));
    module->claim.peer = -1;
}

void ompi_osc_nbe_claim_fini(ompi_osc_nbe_module_t *module)
{
    free(module->claim.recs);
    ompi_osc_nbe_claim_init(module);
}

bool ompi_osc_nbe_claim_ctrl_ok(const nbe_ctrl_t *msg)
{
    return (NBE_CTRL_UNLOCK == msg->type && (msg->flags & NBE_CTRL_FLAG_NOCHECK)) ||
           NBE_CTRL_FLUSH_REQ == msg->type;
}

bool ompi_osc_nbe_claim_arm(ompi_osc_nbe_module_t *module, int peer, uint64_t nputs,
                            nbe_am_hdr_t *hdr)
{
    ompi_osc_nbe_claim_sent_other(module, peer);
    if (!take_over || NULL == module->shm_claims || MPI_WIN_FLAVOR_DYNAMIC == module->flavor ||
        0 == nputs) {
        return false;
    }
    const ompi_osc_nbe_peer_t *g = ompi_osc_nbe_peer(module, peer);
    if (NULL == g || g->pid <= 0) return false;
    uint64_t *taken = &module->claim.taken[peer % OMPI_OSC_NBE_CLAIM_SLOTS];
    if (0 != *taken) {
        /* the frame taken over on this word has not reached its target yet */
        uint64_t cur = __atomic_load_n(claim_slot(module, module->rank, peer), __ATOMIC_ACQUIRE);
        if (claim_word(*taken, CLAIM_TAKEN) == cur) return false;
        *taken = 0;
    }
    module->claim.nputs = nputs;
    module->claim.gen = ++module->claim.seq;
    module->claim.peer = peer;
    hdr->flags |= NBE_AM_F_CLAIM;
    hdr->cookie = module->claim.gen;
    return true;
}

void ompi_osc_nbe_claim_keep(ompi_osc_nbe_module_t *module, char **frame, size_t *cap, size_t len)
{
    char *spare = module->claim.recs;
    size_t spare_cap = module->claim.cap;
    module->claim.recs = *frame;
    module->claim.cap = *cap;
    module->claim.len = len;
    *frame = spare;
    *cap = spare_cap;
}

void ompi_osc_nbe_claim_disarm(ompi_osc_nbe_module_t *module, nbe_am_hdr_t *hdr)
{
    /* the frame did not leave: nobody saw this generation */
    module->claim.peer = -1;
    hdr->flags &= (uint8_t) ~NBE_AM_F_CLAIM;
    hdr->cookie = 0;
}

bool ompi_osc_nbe_claim_skip(ompi_osc_nbe_module_t *module, const nbe_am_hdr_t *hdr)
{
    if (NULL == module->shm_claims) return false;
    volatile uint64_t *w = claim_slot(module, hdr->src, module->rank);
    uint64_t gen = hdr->cookie, cur = __atomic_load_n(w, __ATOMIC_ACQUIRE);
    for (;;) {
        if (claim_word(gen, CLAIM_TAKEN) == cur) {
            /* no later generation can be there (the origin waits for this) */
            __atomic_store_n(w, claim_word(gen, CLAIM_APPLIED), __ATOMIC_RELEASE);
            break;
        }
        /* the word moved past this frame: its origin no longer keeps it */
        if ((cur >> 2) >= gen) return false;
        if (__atomic_compare_exchange_n(w, &cur, claim_word(gen, CLAIM_APPLIED), false,
                                        __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
            return false;
        }
    }
    pv_skipped++;
    opal_output_verbose(20, mca_osc_nbe_component.output,
                        "osc/nbe %d: window %u: a put frame from %d was applied by its origin "
                        "while this process was away from MPI", module->rank, module->cid,
                        hdr->src);
    return true;
}

/* the frame's put records as one CMA batch to pid (one system call);
 * false without memory for it */
static bool gather_records(ompi_osc_nbe_module_t *module, pid_t pid, nbe_cma_batch_t *batch)
{
    const char *p = module->claim.recs + sizeof(nbe_am_hdr_t);
    size_t left = module->claim.len - sizeof(nbe_am_hdr_t);
    nbe_am_sub_t sub;
    const char *rec;
    size_t reclen;
    if (0 != nbe_cma_init(batch, (int) module->claim.nputs)) return false;
    while (nbe_am_next_sub(&p, &left, &sub, &rec, &reclen)) {
        if (NBE_SUB_PUT != sub.kind || 0 == sub.len) continue;
        (void) nbe_cma_add(batch, pid, module->claim.peer, 1, (void *) (rec + sizeof(sub)),
                           sub.addr, sub.len);
    }
    return true;
}

void ompi_osc_nbe_claim_try(ompi_osc_nbe_module_t *module, int peer)
{
    /* (a record is armed and kept in one agg_flush: never seen half made) */
    if (module->claim.peer != peer || peer < 0) return;
    /* the target's memory is reachable now by CMA, passive transfers may
     * bypass it (not behind an unapplied fence), and the frame is all
     * that target still owes us */
    const ompi_osc_nbe_peer_t *g = ompi_osc_nbe_peer(module, peer);
    nbe_cma_batch_t batch = { .n = 0 };
    if (NULL == g || g->pid <= 0 || NULL == ompi_osc_nbe_away_cma_btl(module, peer, true) ||
        !nbe_take_over_possible(module->engine, peer, module->claim.nputs) ||
        !gather_records(module, (pid_t) g->pid, &batch)) {
        return;
    }
    volatile uint64_t *w = claim_slot(module, module->rank, peer);
    uint64_t gen = module->claim.gen, cur = __atomic_load_n(w, __ATOMIC_ACQUIRE);
    bool won = false;
    /* targets write only generations this process sent, none after gen */
    while (!won && (cur >> 2) < gen) {
        won = __atomic_compare_exchange_n(w, &cur, claim_word(gen, CLAIM_TAKEN), false,
                                          __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
    }
    module->claim.peer = -1;
    if (won) module->claim.taken[peer % OMPI_OSC_NBE_CLAIM_SLOTS] = gen;
    int err = won ? nbe_cma_submit(&batch) : 0;
    nbe_cma_fini(&batch);
    if (!won) return;   /* the target has it: its ack follows */
    if (0 != err) {
        /* the target will skip the frame: its puts are lost */
        opal_output_verbose(1, mca_osc_nbe_component.output,
                            "osc/nbe %d: window %u: CMA write of a frame taken over from %d "
                            "failed (errno %d); the window fails", module->rank, module->cid,
                            peer, err);
        if (0 == nbe_engine_failed(module->engine)) nbe_engine_fail_comm(module->engine);
        return;
    }
    nbe_take_over(module->engine, peer);
    pv_taken++;
    opal_output_verbose(20, mca_osc_nbe_component.output,
                        "osc/nbe %d: window %u: took over a frame of %llu puts to %d, away "
                        "from MPI", module->rank, module->cid,
                        (unsigned long long) module->claim.nputs, peer);
}
