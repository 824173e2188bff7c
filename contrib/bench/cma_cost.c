/*
 * cma_cost: what a cross-memory-attach copy (process_vm_writev/readv, the
 * system call behind vader's single-copy RDMA without XPMEM or KNEM) costs
 * on this machine, against a plain memcpy of the same size. No MPI: the
 * process forks a child that only holds the target buffer.
 *
 *   contrib/bench/cma_cost [-i ITERS] [SIZE ...]     (sizes in bytes, K/M allowed)
 *
 * Prints one line per size: microseconds per call for writev, readv and
 * memcpy (buffers warm, same addresses every call). osc/nbe's RDMA
 * thresholds (osc_nbe_rdma_*threshold) are chosen against these figures.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "plain_args.h"

#define MAX_SIZE (4u << 20)

static double seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double) t.tv_sec + 1e-9 * (double) t.tv_nsec;
}

/* microseconds per call of one transfer kind */
static double per_call(int kind, pid_t child, char *local, char *remote, size_t n, int iters)
{
    struct iovec l = { local, n }, r = { remote, n };
    double t0 = seconds();
    for (int i = 0; i < iters; ++i) {
        ssize_t got = n;
        if (0 == kind) got = process_vm_writev(child, &l, 1, &r, 1, 0);
        else if (1 == kind) got = process_vm_readv(child, &l, 1, &r, 1, 0);
        else memcpy(remote, local, n);
        if (got != (ssize_t) n) {
            perror(0 == kind ? "process_vm_writev" : "process_vm_readv");
            exit(1);
        }
    }
    return (seconds() - t0) * 1e6 / iters;
}

int main(int argc, char **argv)
{
    static const char *defaults[] = { "8", "4K", "8K", "16K", "32K", "64K", "1M" };
    int iters = 20000, first = 1;
    if (argc > 2 && 0 == strcmp(argv[1], "-i")) {
        iters = atoi(argv[2]);
        first = 3;
    }
    /* the child gets a copy of this mapping at the same address: its copy
     * is the target of the system calls */
    char *remote = aligned_alloc(4096, MAX_SIZE), *local = aligned_alloc(4096, MAX_SIZE);
    if (NULL == remote || NULL == local || iters < 1) return 1;
    memset(remote, 1, MAX_SIZE);
    memset(local, 2, MAX_SIZE);
    pid_t child = fork();
    if (0 == child) {
        for (;;) pause();
    }
    int nsizes = argc > first ? argc - first : (int) (sizeof(defaults) / sizeof(defaults[0]));
    printf("# cma_cost: %d calls per size; microseconds per call\n# bytes writev readv memcpy\n",
           iters);
    for (int k = 0; k < nsizes; ++k) {
        size_t n = plain_parse_size(argc > first ? argv[first + k] : defaults[k]);
        if (0 == n || n > MAX_SIZE) continue;
        int it = n > (64u << 10) ? iters / 20 + 1 : iters;
        per_call(0, child, local, remote, n, it / 10 + 1);   /* warm up */
        double w = per_call(0, child, local, remote, n, it);
        double r = per_call(1, child, local, remote, n, it);
        double m = per_call(2, child, local, remote, n, it);
        printf("%zu %.3f %.3f %.3f\n", n, w, r, m);
    }
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    return 0;
}
