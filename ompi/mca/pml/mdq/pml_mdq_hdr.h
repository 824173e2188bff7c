/*
 * pml/mdq wire headers.
 *
 * Every header type travels on its own BTL active-message tag, so no type
 * byte is needed. Matched headers (eager, eager-sync, RTS) start with the
 * 16-byte match header; control headers address requests by pointer.
 * Homogeneous clusters only (no byte swapping), like the rest of the PML.
 */
#ifndef PML_MDQ_HDR_H
#define PML_MDQ_HDR_H

#include <stdint.h>
#include "opal/mca/btl/btl.h"

#define MDQ_TAG_EAGER      (MCA_BTL_TAG_PML + 1) /* match hdr + whole payload */
#define MDQ_TAG_EAGER_SYNC (MCA_BTL_TAG_PML + 2) /* sync hdr + payload, receiver acks on match */
#define MDQ_TAG_RTS        (MCA_BTL_TAG_PML + 3) /* rendezvous request, maybe with RGET info */
#define MDQ_TAG_ACK        (MCA_BTL_TAG_PML + 4) /* to sender: matched (sync) or RGET finished */
#define MDQ_TAG_CTS        (MCA_BTL_TAG_PML + 5) /* to sender: put into my buffer / stream frags */
#define MDQ_TAG_FRAG       (MCA_BTL_TAG_PML + 6) /* pipeline data fragment */
#define MDQ_TAG_FIN        (MCA_BTL_TAG_PML + 7) /* to receiver: RPUT finished */
#define MDQ_TAG_MEDIUM     (MCA_BTL_TAG_PML + 8) /* medium hdr + first piece of the payload */
#define MDQ_TAG_MFRAG      (MCA_BTL_TAG_PML + 9) /* medium continuation piece */
#define MDQ_TAG_TIMED      (MCA_BTL_TAG_PML + 10) /* to sender: a timed medium message is in place */
#define MDQ_TAG_FIRST MDQ_TAG_EAGER
#define MDQ_TAG_LAST MDQ_TAG_TIMED

/* match-header flags */
#define MDQ_HDR_F_GET    0x1 /* RTS carries a registered source address for btl_get */
#define MDQ_HDR_F_CONTIG 0x2 /* sender data is contiguous: RPUT possible */
#define MDQ_HDR_F_SYNC   0x4 /* medium: synchronous send, the receiver acks on match */
#define MDQ_HDR_F_PIPE   0x8 /* RTS: the sender chose to stream (pml_mdq_adapt.c): no RDMA */

/* largest registration handle carried inline in RTS/CTS */
#define MDQ_MAX_HANDLE 64

typedef struct mdq_hdr_match {
    uint32_t cid;   /* communicator context id */
    int32_t src;    /* sender's rank in the communicator */
    int32_t tag;
    uint16_t seq;   /* per (communicator, sender) ordering sequence */
    uint16_t flags;
} mdq_hdr_match_t;

typedef struct mdq_hdr_sync {
    mdq_hdr_match_t m;
    uint64_t sreq;
} mdq_hdr_sync_t;

typedef struct mdq_hdr_rts {
    mdq_hdr_match_t m;
    uint64_t sreq;
    uint64_t length; /* packed message bytes */
    uint64_t addr;   /* MDQ_HDR_F_GET: source address */
    uint32_t hlen;   /* MDQ_HDR_F_GET: handle bytes following */
    uint32_t pad;
    /* registration handle follows */
} mdq_hdr_rts_t;

/* Medium message: sent without handshake in pieces of at most the BTL's
 * max send size. The first piece carries the match header; every piece
 * names the message by (sender request, sequence) and carries the total
 * length, so the receiver can assemble pieces in any arrival order. */
typedef struct mdq_hdr_medium {
    mdq_hdr_match_t m;
    uint64_t sreq;   /* sender request: message id, and ACK target when MDQ_HDR_F_SYNC */
    uint64_t length; /* packed message bytes */
    uint64_t timing; /* nonzero: answer with a TIMED header carrying it once the message is in place */
} mdq_hdr_medium_t;

typedef struct mdq_hdr_mfrag {
    uint32_t cid;
    int32_t src;
    uint64_t sreq;
    uint64_t offset;
    uint64_t length; /* whole message */
    uint16_t seq;    /* of the message (with sreq: the message id) */
    uint16_t pad[3];
} mdq_hdr_mfrag_t;

/* ACK: the receiver matched an eager-sync message, or finished its RGET */
typedef struct mdq_hdr_ack {
    uint64_t sreq;
} mdq_hdr_ack_t;

/* TIMED: echo of a medium message's timing word (the sender's clock and
 * table, see pml_mdq_adapt.c), sent when the whole message is in place */
typedef struct mdq_hdr_timed {
    uint64_t timing;
    uint64_t length;
} mdq_hdr_timed_t;

/* CTS: addr != 0 asks for RPUT into addr (handle follows), else pipeline */
typedef struct mdq_hdr_cts {
    uint64_t sreq;
    uint64_t rreq;
    uint64_t addr;
    uint64_t length; /* bytes the receiver accepts (min(message, buffer)) */
    uint32_t hlen;
    uint32_t pad;
} mdq_hdr_cts_t;

typedef struct mdq_hdr_frag {
    uint64_t rreq;
    uint64_t offset;
} mdq_hdr_frag_t;

typedef struct mdq_hdr_fin {
    uint64_t rreq;
    uint64_t bytes; /* bytes written by the puts */
} mdq_hdr_fin_t;

/* big enough for any matched header plus an inline handle */
#define MDQ_HDR_MAX_MATCHED (sizeof(mdq_hdr_rts_t) + MDQ_MAX_HANDLE)

#endif /* PML_MDQ_HDR_H */
