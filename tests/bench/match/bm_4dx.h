/* Variant flags of the bench-local 4D engine (see bm_4dx.c). */
#ifndef BM_4DX_H
#define BM_4DX_H
#include <stdint.h>

#define BM_4DX_ALLUMQ 0x1u /* list of all unexpected messages for ANY_SOURCE */
#define BM_4DX_CURSOR 0x2u /* cached last-hit JumpPoint cursor */
#define BM_4DX_SPLIT 0x4u  /* per-c0 sub-lists in busy JumpPoints */
#define BM_4DX_C3ARRAY 0x8u /* array of ds Cube pointers instead of the c3 list */
#define BM_4DX_C1ARRAY 0x10u /* ds*ds JumpPoint slots per Cube instead of c1 lists */
#define BM_4DX_LAZYGC 0x20u /* keep empty JumpPoints and Cubes (no churn) */

unsigned bm_4dx_bits(uint32_t comm_size); /* log2(ds) = max(2, ceil(log2(size)/4)) */
#endif
