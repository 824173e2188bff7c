/*
 * pml/mdq randomized stress: every rank sends a deterministic pseudo-random
 * stream of messages to every rank (sizes around the eager limits of vader
 * and tcp and into the rendezvous range, random tags, Isend and Issend).
 * Receivers use MPI_ANY_SOURCE/MPI_ANY_TAG windows (phase 1) and
 * MPI_ANY_SOURCE with concrete tags (phase 2); since each receiver can
 * regenerate each sender's stream it checks payload, size, tag and the
 * non-overtaking order of every message.
 *
 * usage: pt2pt_stress [messages-per-pair] [seed]
 */
#include "pt2pt_common.h"

#define NTAGS 4
#define WINDOW 8

typedef struct { uint64_t s; } rng_t;
static uint32_t rnd(rng_t *r)
{
    r->s = r->s * 6364136223846793005ULL + 1442695040888963407ULL;
    return (uint32_t) (r->s >> 33);
}

typedef struct { size_t size; int tag; int ssend; } msg_t;

static msg_t gen(rng_t *r)
{
    msg_t m;
    uint32_t c = rnd(r) % 10;
    switch (c) {
    case 0: m.size = 0; break;
    case 1: case 2: m.size = 1 + rnd(r) % 64; break;
    case 3: case 4: m.size = 4000 + rnd(r) % 200; break;   /* vader eager limit */
    case 5: m.size = 60000 + rnd(r) % 10000; break;        /* tcp eager limit */
    case 6: case 7: m.size = 1000 + rnd(r) % 3000; break;
    default: m.size = 100000 + rnd(r) % 200000; break;     /* rendezvous */
    }
    m.tag = (int) (rnd(r) % NTAGS);
    m.ssend = (rnd(r) % 5) == 0;
    return m;
}

/* the k-th message of the stream src -> dst in a phase */
static void stream_init(rng_t *r, int seed, int phase, int src, int dst)
{
    r->s = (uint64_t) seed * 1000003ULL + (uint64_t) phase * 7919ULL + (uint64_t) src * 65537ULL
           + (uint64_t) dst * 257ULL + 1;
    (void) rnd(r);
}

static int payload_seed(int phase, int src, int k) { return phase * 1000000 + src * 10000 + k; }

static void run_phase(int phase, int nmsg, int seed)
{
    MPI_Request *sreq = malloc(sizeof(MPI_Request) * (size_t) nmsg * nprocs);
    unsigned char **sbuf = malloc(sizeof(unsigned char *) * (size_t) nmsg * nprocs);
    int ns = 0;
    size_t maxsz = 300000;

    /* post all sends (destinations interleaved) */
    {
        rng_t *st = malloc(sizeof(rng_t) * nprocs);
        for (int d = 0; d < nprocs; d++) stream_init(&st[d], seed, phase, rank, d);
        for (int k = 0; k < nmsg; k++) {
            for (int i = 0; i < nprocs; i++) {
                int d = (rank + i) % nprocs;
                msg_t m = gen(&st[d]);
                sbuf[ns] = malloc(m.size + 1);
                fill(sbuf[ns], m.size, payload_seed(phase, rank, k));
                if (m.ssend) MPI_Issend(sbuf[ns], (int) m.size, MPI_BYTE, d, m.tag, MPI_COMM_WORLD, &sreq[ns]);
                else MPI_Isend(sbuf[ns], (int) m.size, MPI_BYTE, d, m.tag, MPI_COMM_WORLD, &sreq[ns]);
                ns++;
            }
        }
        free(st);
    }

    /* receive: regenerate what each source sends us */
    {
        rng_t *src_stream = malloc(sizeof(rng_t) * nprocs);
        int *next = calloc(nprocs, sizeof(int));
        /* phase 2: per (source, tag) queues of expected messages */
        msg_t *expect = malloc(sizeof(msg_t) * (size_t) nmsg * nprocs);
        int *expect_k = malloc(sizeof(int) * (size_t) nmsg * nprocs);
        int per_tag[NTAGS] = {0};
        int total = nmsg * nprocs;
        unsigned char *rbuf[WINDOW];
        for (int w = 0; w < WINDOW; w++) rbuf[w] = malloc(maxsz);
        for (int s = 0; s < nprocs; s++) {
            stream_init(&src_stream[s], seed, phase, s, rank);
            for (int k = 0; k < nmsg; k++) {
                expect[s * nmsg + k] = gen(&src_stream[s]);
                expect_k[s * nmsg + k] = k;
                per_tag[expect[s * nmsg + k].tag]++;
            }
        }
        if (1 == phase) {
            int done = 0;
            while (done < total) {
                int w = total - done < WINDOW ? total - done : WINDOW;
                MPI_Request rq[WINDOW];
                MPI_Status st[WINDOW];
                for (int i = 0; i < w; i++)
                    MPI_Irecv(rbuf[i], (int) maxsz, MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &rq[i]);
                MPI_Waitall(w, rq, st);
                for (int i = 0; i < w; i++) {
                    int s = st[i].MPI_SOURCE, cnt;
                    msg_t e;
                    MPI_Get_count(&st[i], MPI_BYTE, &cnt);
                    if (s < 0 || s >= nprocs || next[s] >= nmsg) { CHECK(0, "unexpected source %d", s); continue; }
                    e = expect[s * nmsg + next[s]];
                    CHECK((size_t) cnt == e.size && st[i].MPI_TAG == e.tag,
                          "phase 1 from %d msg %d: got size %d tag %d, expected %zu/%d (order violated?)",
                          s, next[s], cnt, st[i].MPI_TAG, e.size, e.tag);
                    CHECK(0 == verify(rbuf[i], (size_t) cnt < e.size ? (size_t) cnt : e.size,
                                      payload_seed(phase, s, next[s])),
                          "phase 1 payload from %d msg %d", s, next[s]);
                    next[s]++;
                }
                done += w;
            }
        } else {
            /* ANY_SOURCE with concrete tags, tags in rotating order */
            int *tnext = calloc((size_t) nprocs * NTAGS, sizeof(int));
            int left[NTAGS];
            int t = rank % NTAGS, done = 0;
            memcpy(left, per_tag, sizeof(left));
            while (done < total) {
                MPI_Request rq[WINDOW];
                MPI_Status st[WINDOW];
                int tags[WINDOW], w = 0;
                while (w < WINDOW && done + w < total) {
                    while (0 == left[t]) t = (t + 1) % NTAGS;
                    left[t]--;
                    tags[w] = t;
                    MPI_Irecv(rbuf[w], (int) maxsz, MPI_BYTE, MPI_ANY_SOURCE, t, MPI_COMM_WORLD, &rq[w]);
                    w++;
                    t = (t + 1 + (done % 3)) % NTAGS;
                }
                MPI_Waitall(w, rq, st);
                for (int i = 0; i < w; i++) {
                    int s = st[i].MPI_SOURCE, cnt, k;
                    int *tn;
                    MPI_Get_count(&st[i], MPI_BYTE, &cnt);
                    if (s < 0 || s >= nprocs) { CHECK(0, "bad source %d", s); continue; }
                    CHECK(st[i].MPI_TAG == tags[i], "tag %d for receive of tag %d", st[i].MPI_TAG, tags[i]);
                    /* the next message with this tag from s */
                    tn = &tnext[s * NTAGS + tags[i]];
                    while (*tn < nmsg && expect[s * nmsg + *tn].tag != tags[i]) (*tn)++;
                    if (*tn >= nmsg) { CHECK(0, "too many tag %d messages from %d", tags[i], s); continue; }
                    k = *tn;
                    CHECK((size_t) cnt == expect[s * nmsg + k].size,
                          "phase 2 from %d tag %d msg %d: size %d expected %zu (order violated?)", s,
                          tags[i], k, cnt, expect[s * nmsg + k].size);
                    CHECK(0 == verify(rbuf[i], (size_t) cnt, payload_seed(phase, s, k)),
                          "phase 2 payload from %d msg %d", s, k);
                    (*tn)++;
                }
                done += w;
            }
            free(tnext);
        }
        for (int w = 0; w < WINDOW; w++) free(rbuf[w]);
        free(src_stream);
        free(next);
        free(expect);
        free(expect_k);
    }
    MPI_Waitall(ns, sreq, MPI_STATUSES_IGNORE);
    for (int i = 0; i < ns; i++) free(sbuf[i]);
    free(sbuf);
    free(sreq);
}

int main(int argc, char **argv)
{
    int nmsg, seed;
    test_init(&argc, &argv);
    nmsg = argc > 1 ? atoi(argv[1]) : 40;
    seed = argc > 2 ? atoi(argv[2]) : 12345;
    run_phase(1, nmsg, seed);
    MPI_Barrier(MPI_COMM_WORLD);
    run_phase(2, nmsg, seed);
    return test_finish();
}
