/*
 * Shared engine of the RMA benchmarks (see rma_common.h).
 */
#include "rma_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Origin slots (distinct get destinations) are capped at this many bytes. */
#define ORIGIN_LIMIT (64UL * 1024 * 1024)

static const char *sync_names[] = { "fence", "pscw", "lock", "flush" };
static const char *op_names[] = { "put", "get", "acc" };
static const char *flavor_names[] = { "create", "allocate" };

static int lookup(const char *text, const char **names, int n)
{
    for (int i = 0; i < n; i++) {
        if (0 == strcmp(text, names[i])) {
            return i;
        }
    }
    return -1;
}

static void usage(const char *program, int extra)
{
    int with_window = extra & RMA_OPT_WINDOW, with_away = extra & RMA_OPT_AWAY;
    printf("usage: %s [-w create|allocate] [-s fence|pscw|lock|flush] [-o put|get|acc]\n"
           "       %*s [-m MIN:MAX] [-i ITERS] [-x WARMUP] [-d DISP]%s%s%s%s [-q]\n"
           "  -w  window flavour: MPI_Win_create on malloc'd memory or MPI_Win_allocate\n"
           "      (default create)\n"
           "  -s  synchronisation: fence (op + fence), pscw (start/op/complete against\n"
           "      post/wait), lock (lock/op/unlock per iteration), flush (lock_all once,\n"
           "      op + flush per iteration) (default %s)\n"
           "  -o  operation: put, get, acc (MPI_Accumulate MPI_SUM on doubles) (default put)\n"
           "  -m  size range in bytes, K/M suffixes allowed (default 8:1M)\n"
           "  -i  iterations for small sizes (default %d; large sizes use fewer)\n"
           "  -x  warmup iterations (default: a tenth of the iterations)\n"
           "  -d  target displacement in bytes, 0-4095 (default 0; acc: a multiple of 8).\n"
           "      With -w create, window and origin buffers are page-aligned: a put copies\n"
           "      DISP bytes past its source modulo 4 KiB, a get into the first origin slot\n"
           "      4096 - DISP (allocate windows start where the osc places them)\n"
           "%s%s"
           "  -q  quick smoke run (very few iterations)\n",
           program, (int) strlen(program), "", with_window ? " [-W WINDOW]" : "",
           with_away ? " [-a MS]" : "", with_away ? " [-p US]" : "", with_away ? " [-e N]" : "",
           with_away ? "lock" : "fence",
           with_window ? 100 : 1000,
           with_window ? "  -W  operations per synchronisation (default 32)\n" : "",
           with_away ? "  -a  milliseconds the target computes outside MPI while the origin's\n"
                       "      epochs of each size are timed (default 200)\n"
                       "  -p  while computing, the target calls MPI_Iprobe every US microseconds,\n"
                       "      as an application that tests for messages now and then (default 0:\n"
                       "      no MPI call at all)\n"
                       "  -e  rank 0 also prints the times of its first N timed epochs of each\n"
                       "      size (us), on a comment line (at most 64; default 0)\n" : "");
}

static int parse(rma_ctx_t *ctx, int argc, char **argv, int extra)
{
    char optstring[32] = "w:s:o:m:i:x:d:qh";
    if (extra & RMA_OPT_WINDOW) strcat(optstring, "W:");
    if (extra & RMA_OPT_AWAY) strcat(optstring, "a:p:e:");
    bench_opts_t *o = &ctx->opts;
    int c, v;

    while (-1 != (c = getopt(argc, argv, optstring))) {
        switch (c) {
        case 'w':
            if ((v = lookup(optarg, flavor_names, 2)) < 0) return -1;
            ctx->flavor = (rma_flavor_t) v;
            break;
        case 's':
            if ((v = lookup(optarg, sync_names, 4)) < 0) return -1;
            ctx->sync = (rma_sync_t) v;
            break;
        case 'o':
            if ((v = lookup(optarg, op_names, 3)) < 0) return -1;
            ctx->op = (rma_op_t) v;
            break;
        case 'm': if (bench_parse_range(optarg, o)) return -1; break;
        case 'i': if (bench_parse_int(optarg, 1, &o->iters)) return -1; break;
        case 'x': if (bench_parse_int(optarg, 0, &o->warmup)) return -1; break;
        case 'W': if (bench_parse_int(optarg, 1, &o->window)) return -1; break;
        case 'a': if (bench_parse_int(optarg, 0, &ctx->away_ms)) return -1; break;
        case 'p': if (bench_parse_int(optarg, 0, &ctx->poll_us)) return -1; break;
        case 'e':
            if (bench_parse_int(optarg, 0, &ctx->epochs_shown) || ctx->epochs_shown > 64) return -1;
            break;
        case 'd':
            if (bench_parse_int(optarg, 0, &o->distance) || o->distance > 4095) return -1;
            break;
        case 'q': o->quick = 1; break;
        case 'h': return 1;
        default: return -1;
        }
    }
    if (optind != argc || o->min_size < 1) {
        return -1;
    }
    /* accumulate works on whole doubles */
    if (RMA_OP_ACC == ctx->op && (o->min_size < sizeof(double) ||
                                  0 != (o->min_size & (sizeof(double) - 1)) ||
                                  0 != (o->distance & (int) (sizeof(double) - 1)))) {
        return -1;
    }
    return 0;
}

int rma_setup(rma_ctx_t *ctx, int argc, char **argv, const char *program, int extra)
{
    int with_window = extra & RMA_OPT_WINDOW;
    bench_opts_t defaults = { .min_size = 8, .max_size = 1 << 20,
                              .iters = with_window ? 100 : 1000, .warmup = -1,
                              .window = with_window ? 32 : 1 };
    int rc;

    memset(ctx, 0, sizeof(*ctx));
    ctx->opts = defaults;
    if (extra & RMA_OPT_AWAY) {
        ctx->sync = RMA_SYNC_LOCK;
        ctx->away_ms = 200;
    }
    bench_pairing(MPI_COMM_WORLD, &ctx->pair);
    rc = parse(ctx, argc, argv, extra);
    if (0 != rc || ctx->pair.npairs < 1) {
        if (0 == ctx->pair.rank) {
            if (ctx->pair.npairs < 1) {
                fprintf(stderr, "%s: needs at least 2 processes\n", program);
            } else if (rc < 0) {
                fprintf(stderr, "%s: bad arguments (acc needs sizes that are multiples "
                        "of 8)\n", program);
            }
            usage(program, extra);
        }
        return rc > 0 ? 1 : -1;
    }

    size_t max = ctx->opts.max_size;
    size_t winsize = max + (size_t) ctx->opts.distance;
    ctx->slots = (size_t) ctx->opts.window;
    if (ctx->slots * max > ORIGIN_LIMIT) {
        ctx->slots = ORIGIN_LIMIT / max ? ORIGIN_LIMIT / max : 1;
    }
    ctx->origin = bench_alloc(ctx->slots * max);

    if (RMA_WIN_CREATE == ctx->flavor) {
        ctx->winbuf = bench_alloc(winsize);
        MPI_Win_create(ctx->winbuf, (MPI_Aint) winsize, 1, MPI_INFO_NULL, MPI_COMM_WORLD,
                       &ctx->win);
    } else {
        MPI_Win_allocate((MPI_Aint) winsize, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &ctx->winbuf,
                         &ctx->win);
        memset(ctx->winbuf, 0, winsize);
    }

    MPI_Group world;
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    if (ctx->pair.partner >= 0) {
        MPI_Group_incl(world, 1, &ctx->pair.partner, &ctx->peer);
    } else {
        ctx->peer = MPI_GROUP_EMPTY;
    }
    MPI_Group_free(&world);
    return 0;
}

void rma_print_header(rma_ctx_t *ctx, const char *program, const char *metric,
                      int lower_is_better)
{
    char osc[128];

    bench_print_header(program, metric, lower_is_better, &ctx->pair, &ctx->opts);
    bench_selected_osc(ctx->win, osc, sizeof(osc));
    if (0 == ctx->pair.rank) {
        printf("# osc: %s\n", osc);
        printf("# window_flavor: %s\n# sync: %s\n# op: %s\n", flavor_names[ctx->flavor],
               sync_names[ctx->sync], op_names[ctx->op]);
        if (ctx->opts.window > 1) {
            printf("# window: %d\n", ctx->opts.window);
        }
        if (0 != ctx->opts.distance) {
            printf("# target displacement: %d\n", ctx->opts.distance);
        }
        if (0 != ctx->away_ms) {
            printf("# target away: %d ms per size\n", ctx->away_ms);
        }
        if (0 != ctx->poll_us) {
            printf("# target calls MPI_Iprobe every %d us while away\n", ctx->poll_us);
        }
        printf("# size %s\n", metric);
        fflush(stdout);
    }
}

static unsigned seed_of(size_t size, int rank)
{
    return (unsigned) (size * 3 + (size_t) rank);
}

/* Writes this rank's window memory under an exclusive lock on itself, so the
 * stores are ordered with respect to later remote accesses. */
static void init_own_window(rma_ctx_t *ctx, size_t size)
{
    int me = ctx->pair.rank;
    unsigned char *target = ctx->winbuf + ctx->opts.distance;
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, me, 0, ctx->win);
    if (RMA_OP_GET == ctx->op) {
        bench_fill(target, size, seed_of(size, me));
    } else {
        memset(target, 0, size);
    }
    MPI_Win_unlock(me, ctx->win);
}

void rma_begin_size(rma_ctx_t *ctx, size_t size)
{
    const bench_pair_t *p = &ctx->pair;

    if (p->initiator) {
        if (RMA_OP_PUT == ctx->op) {
            bench_fill(ctx->origin, size, seed_of(size, p->rank));
        } else if (RMA_OP_ACC == ctx->op) {
            double *d = (double *) ctx->origin;
            for (size_t i = 0; i < size / sizeof(double); i++) {
                d[i] = 1.0;
            }
        } else {
            memset(ctx->origin, 0, ctx->slots * size);
        }
    } else if (p->partner >= 0) {
        init_own_window(ctx, size);
    }
    MPI_Barrier(MPI_COMM_WORLD);

    if (RMA_SYNC_FENCE == ctx->sync) {
        MPI_Win_fence(MPI_MODE_NOPRECEDE, ctx->win);
    } else if (RMA_SYNC_FLUSH == ctx->sync && p->initiator) {
        MPI_Win_lock_all(0, ctx->win);
    }
}

static void issue(rma_ctx_t *ctx, size_t size, int k)
{
    int target = ctx->pair.partner;
    int count = (int) size;
    MPI_Aint disp = ctx->opts.distance;

    switch (ctx->op) {
    case RMA_OP_PUT:
        MPI_Put(ctx->origin, count, MPI_BYTE, target, disp, count, MPI_BYTE, ctx->win);
        break;
    case RMA_OP_GET:
        MPI_Get(ctx->origin + ((size_t) k % ctx->slots) * size, count, MPI_BYTE, target, disp,
                count, MPI_BYTE, ctx->win);
        break;
    case RMA_OP_ACC:
        count = (int) (size / sizeof(double));
        MPI_Accumulate(ctx->origin, count, MPI_DOUBLE, target, disp, count, MPI_DOUBLE,
                       MPI_SUM, ctx->win);
        break;
    }
}

void rma_iteration(rma_ctx_t *ctx, size_t size, int nops)
{
    const bench_pair_t *p = &ctx->pair;

    switch (ctx->sync) {
    case RMA_SYNC_FENCE:
        for (int k = 0; p->initiator && k < nops; k++) issue(ctx, size, k);
        MPI_Win_fence(0, ctx->win);
        break;
    case RMA_SYNC_PSCW:
        if (p->initiator) {
            MPI_Win_start(ctx->peer, 0, ctx->win);
            for (int k = 0; k < nops; k++) issue(ctx, size, k);
            MPI_Win_complete(ctx->win);
        } else if (p->partner >= 0) {
            MPI_Win_post(ctx->peer, 0, ctx->win);
            MPI_Win_wait(ctx->win);
        }
        break;
    case RMA_SYNC_LOCK:
        if (p->initiator) {
            MPI_Win_lock(MPI_LOCK_EXCLUSIVE, p->partner, 0, ctx->win);
            for (int k = 0; k < nops; k++) issue(ctx, size, k);
            MPI_Win_unlock(p->partner, ctx->win);
        }
        break;
    case RMA_SYNC_FLUSH:
        if (p->initiator) {
            for (int k = 0; k < nops; k++) issue(ctx, size, k);
            MPI_Win_flush(p->partner, ctx->win);
        }
        break;
    }
}

void rma_end_size(rma_ctx_t *ctx, size_t size, long ops_done)
{
    const bench_pair_t *p = &ctx->pair;
    size_t bad = (size_t) -1;

    if (RMA_SYNC_FENCE == ctx->sync) {
        MPI_Win_fence(MPI_MODE_NOSUCCEED, ctx->win);
    } else if (RMA_SYNC_FLUSH == ctx->sync && p->initiator) {
        MPI_Win_unlock_all(ctx->win);
    }
    /* targets in lock/flush mode wait here (and progress) for their origin */
    MPI_Barrier(MPI_COMM_WORLD);

    if (p->initiator && RMA_OP_GET == ctx->op) {
        size_t used = ops_done < (long) ctx->slots ? (size_t) ops_done : ctx->slots;
        for (size_t s = 0; s < used && bad == (size_t) -1; s++) {
            bad = bench_check(ctx->origin + s * size, size, seed_of(size, p->partner));
        }
    } else if (!p->initiator && p->partner >= 0 && RMA_OP_GET != ctx->op) {
        MPI_Win_lock(MPI_LOCK_SHARED, p->rank, 0, ctx->win);
        if (RMA_OP_PUT == ctx->op) {
            bad = bench_check(ctx->winbuf + ctx->opts.distance, size, seed_of(size, p->partner));
        } else {
            const double *d = (const double *) (ctx->winbuf + ctx->opts.distance);
            for (size_t i = 0; i < size / sizeof(double); i++) {
                if (d[i] != (double) ops_done) {
                    bad = i * sizeof(double);
                    break;
                }
            }
        }
        MPI_Win_unlock(p->rank, ctx->win);
    }
    if (bad != (size_t) -1) {
        bench_fail("%s size %zu: wrong data at offset %zu (partner %d)", op_names[ctx->op],
                   size, bad, p->partner);
    }
}

void rma_teardown(rma_ctx_t *ctx)
{
    if (MPI_GROUP_EMPTY != ctx->peer) {
        MPI_Group_free(&ctx->peer);
    }
    MPI_Win_free(&ctx->win);
    if (RMA_WIN_CREATE == ctx->flavor) {
        free(ctx->winbuf);
    }
    free(ctx->origin);
}
