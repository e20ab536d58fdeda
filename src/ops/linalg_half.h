/* The reduced-precision helpers of the linalg cpu kernel (internal,
 * src/ops/linalg_half.c): float16 / bfloat16 operands widened to float32
 * in one pass over their storage, and a product that reads bfloat16
 * weights in place for the few-row products of decoding. */
#ifndef MTK_OPS_LINALG_HALF_H
#define MTK_OPS_LINALG_HALF_H

#include "mtk/core.h"

#include <stdbool.h>
#include <stdint.h>

/* dst (rows x cols, contiguous) = the float32 values of the rows x cols
 * elements of `dtype` at src, rows `ld` elements apart, each row's
 * elements adjacent (ld >= cols; src may be unaligned).  Any floating
 * dtype; bfloat16, float16 and float32 take a tight loop. */
void linalg_half_widen(float *dst, const void *src, mtk_dtype dtype, int64_t rows, int64_t cols, int64_t ld);

/* Whether linalg_half_rows runs a product of m rows with a b of dtype
 * b_dtype whose k elements are adjacent (b_stride_k == 1): bfloat16
 * weights and m at most LINALG_HALF_MAX_ROWS. */
#define LINALG_HALF_MAX_ROWS 8
bool linalg_half_rows_fit(int64_t m, mtk_dtype b_dtype, int64_t b_stride_k);

/* c (m x n, float32, contiguous) = a (m x k, float32, contiguous; the
 * kernel rearranges it in place, so its values are lost) @ b,
 * b the bfloat16 k x n matrix at `b` (maybe unaligned) with b[p][j]
 * the element j * ld + p
 * (the weight of linear as stored: n rows of k).  Each c[i][j] is a dot
 * product summed in float32 over 16 partial sums (the same operations in
 * every instruction-set variant); the n columns are split over the
 * threads in scope. */
void linalg_half_rows(float *c, float *a, const void *b, int64_t m, int64_t n, int64_t k, int64_t ld);

#endif
