/* The float32 few-row product of the linalg cpu kernel (internal,
 * src/ops/linalg_gemv.c): a decode step's linear layers, x (a few rows)
 * times a float32 weight read in place as stored (n rows of k), on mtk's
 * own thread pool instead of OpenBLAS's sgemv / sgemm. */
#ifndef MTK_OPS_LINALG_GEMV_H
#define MTK_OPS_LINALG_GEMV_H

#include "mtk/core.h"

#include <stdbool.h>
#include <stdint.h>

/* Whether linalg_gemv runs a float32 product of m rows with a b whose k
 * elements are adjacent (b_stride_k == 1: linear's weight as stored, or
 * the transpose of a contiguous matrix): m in [1, LINALG_GEMV_MAX_ROWS]. */
#define LINALG_GEMV_MAX_ROWS 8
bool linalg_gemv_fit(int64_t m, mtk_dtype b_dtype, int64_t b_stride_k);

/* c (m x n, float32, contiguous) = a @ b, a the m x k float32 rows at
 * `a` (row i at a + i * lda, its elements adjacent), b the float32 k x n
 * matrix at `b` with b[p][j] the element j * ldb + p (the weight of
 * linear as stored: n rows of k); a and b may be unaligned (a mapped
 * file).  Each c[i][j] is a dot product summed in float32 over 16
 * partial sums, sum l taking the elements p % 16 == l in order, the
 * remainder added into sums 0.., then the sums pairwise (0+8, 1+9, ...,
 * then 0+4, ...).  Each term is added with one rounding (a fused
 * multiply-add) by the AVX2 and AVX-512 variants, with two (product,
 * then sum) by the baseline: the bits depend on that alone, not on the
 * vector width or the threads.  The n columns are handed out in tasks
 * of about 64 KiB of weights to the threads in scope
 * (mtk_parallel_threads(0)). */
void linalg_gemv(float *c, const float *a, int64_t lda, const void *b, int64_t ldb, int64_t m, int64_t n,
                 int64_t k);

#endif
