/* Variant flags of the bench-local 4D engine (see bm_4dx.c). */
#ifndef BM_4DX_H
#define BM_4DX_H
#include <stdint.h>

#define BM_4DX_ALLUMQ 0x1u /* list of all unexpected messages for ANY_SOURCE */
#define BM_4DX_CURSOR 0x2u /* cached last-hit JumpPoint cursor */
#define BM_4DX_SPLIT 0x4u  /* per-c0 sub-lists in busy JumpPoints */

unsigned bm_4dx_bits(uint32_t comm_size); /* log2(ds) = max(2, ceil(log2(size)/4)) */
#endif
