/* Argument helpers of the benchmarks that run without MPI (cma_cost,
 * copy_distance); the MPI ones use bench_common. */
#ifndef PLAIN_ARGS_H
#define PLAIN_ARGS_H

#include <stdlib.h>

/* "4096", "8K", "1M" */
static inline size_t plain_parse_size(const char *s)
{
    char *end;
    size_t v = strtoul(s, &end, 10);
    if ('K' == *end || 'k' == *end) v <<= 10;
    if ('M' == *end || 'm' == *end) v <<= 20;
    return v;
}

#endif
