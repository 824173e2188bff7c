/*
 * shm_pipe: what copying a message through shared memory between two
 * processes costs, without MPI. It is the data path of vader's fragments:
 * a parent copies SIZE bytes into 32 KiB slots of a shared mapping, and a
 * forked child copies each slot out as soon as it is full, and the parent
 * waits for it to finish.
 *
 *   contrib/bench/shm_pipe [-i ITERS] [-l LAUNCHES] [SIZE]   (default 1M, 500, 1)
 *
 * Prints one line per launch (a fresh child and shared mapping each time;
 * the parent stays): the median
 * and the best microseconds per transfer, and the median time of one
 * sender-side slot copy. On the test VM the launches fall into two modes
 * (docs/bench-rma.md, session 18): in some, every copy costs 2-3x more,
 * for the whole launch.
 */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "plain_args.h"

#define SLOTS 16
#define SLOT_BYTES 32768u
#define PIECE (SLOT_BYTES - 64)   /* payload per slot, as a vader fragment's */

typedef struct {
    atomic_int full;
    char pad[60];
    char data[SLOT_BYTES];
} slot_t;

typedef struct {
    atomic_int done;              /* transfers the child has finished */
    char pad[60];
    slot_t slot[SLOTS];
} shared_t;

static uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t) t.tv_sec * 1000000000u + (uint64_t) t.tv_nsec;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;
    return x < y ? -1 : x > y;
}

static uint64_t median(uint64_t *v, size_t n)
{
    qsort(v, n, sizeof(*v), cmp_u64);
    return v[n / 2];
}

/* the child: copies every slot out, in order, for iters transfers */
static void receive(shared_t *sh, char *buf, size_t size, int iters)
{
    int k = 0;
    for (int it = 0; it < iters; ++it) {
        for (size_t off = 0; off < size; off += PIECE) {
            size_t n = size - off < PIECE ? size - off : PIECE;
            slot_t *s = &sh->slot[k];
            k = (k + 1) % SLOTS;
            while (!atomic_load_explicit(&s->full, memory_order_acquire)) {
            }
            memcpy(buf + off, s->data, n);
            atomic_store_explicit(&s->full, 0, memory_order_release);
        }
        atomic_store_explicit(&sh->done, it + 1, memory_order_release);
    }
}

/* one launch: a fresh shared mapping and child; prints its line */
static int launch(int index, size_t size, int iters)
{
    shared_t *sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                        -1, 0);
    char *buf = aligned_alloc(4096, (size + 4095) & ~(size_t) 4095);
    size_t pieces = (size + PIECE - 1) / PIECE;
    uint64_t *per = malloc(sizeof(*per) * (size_t) iters);
    uint64_t *copy = malloc(sizeof(*copy) * (size_t) iters * pieces);
    if (MAP_FAILED == sh || NULL == buf || NULL == per || NULL == copy) {
        fprintf(stderr, "shm_pipe: out of memory\n");
        return 1;
    }
    memset(sh, 0, sizeof(*sh));
    memset(buf, 1, size);
    pid_t child = fork();
    if (child < 0) {
        perror("shm_pipe: fork");
        return 1;
    }
    if (0 == child) {
        receive(sh, buf, size, iters);
        _exit(0);
    }
    int k = 0;
    size_t c = 0;
    for (int it = 0; it < iters; ++it) {
        uint64_t t0 = now_ns();
        for (size_t off = 0; off < size; off += PIECE) {
            size_t n = size - off < PIECE ? size - off : PIECE;
            slot_t *s = &sh->slot[k];
            k = (k + 1) % SLOTS;
            while (atomic_load_explicit(&s->full, memory_order_acquire)) {
            }
            uint64_t c0 = now_ns();
            memcpy(s->data, buf + off, n);
            copy[c++] = now_ns() - c0;
            atomic_store_explicit(&s->full, 1, memory_order_release);
        }
        while (atomic_load_explicit(&sh->done, memory_order_acquire) != it + 1) {
        }
        per[it] = now_ns() - t0;
    }
    waitpid(child, NULL, 0);
    uint64_t med = median(per, (size_t) iters), best = per[0];   /* median() sorted per */
    printf("%6d %10zu %12.2f %12.2f %14.2f\n", index, size, med * 1e-3, best * 1e-3,
           median(copy, c) * 1e-3);
    munmap(sh, sizeof(*sh));
    free(buf);
    free(per);
    free(copy);
    return 0;
}

int main(int argc, char **argv)
{
    int iters = 500, launches = 1, opt;
    size_t size = 1u << 20;
    while ((opt = getopt(argc, argv, "i:l:")) != -1) {
        if ('i' == opt) iters = atoi(optarg);
        else if ('l' == opt) launches = atoi(optarg);
        else {
            fprintf(stderr, "usage: shm_pipe [-i ITERS] [-l LAUNCHES] [SIZE]\n");
            return 2;
        }
    }
    if (optind < argc) size = plain_parse_size(argv[optind]);
    if (iters < 1 || launches < 1 || size < 1) {
        fprintf(stderr, "shm_pipe: ITERS, LAUNCHES and SIZE must be positive\n");
        return 2;
    }
    printf("# shm_pipe: %zu B through %d shared slots of %u B, %d transfers per launch\n", size,
           SLOTS, SLOT_BYTES, iters);
    printf("# launch       size  median_us      best_us  slot_copy_us\n");
    for (int l = 0; l < launches; ++l) {
        fflush(stdout);
        if (0 != launch(l, size, iters)) return 1;
    }
    return 0;
}
