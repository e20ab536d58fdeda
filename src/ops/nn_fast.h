/* Fast cpu kernels of the nn family for the common case: contiguous
 * float32 / float64 / float16 / bfloat16 inputs reduced over their last
 * dim (softmax, log_softmax, layer_norm, rms_norm).  Vectorized loops
 * (AVX-512 / AVX2 clones chosen at load time, a plain build otherwise)
 * on the nn family's threads.  Each entry point returns false, having
 * done nothing, when the call is not such a case; the general kernels
 * in nn_softmax.c / nn_norm.c handle it then (also when scratch memory
 * from ctx's allocator runs out).  float16 and bfloat16
 * compute in float32 and round once, as torch's cpu kernels do. */
#ifndef MTK_OPS_NN_FAST_H
#define MTK_OPS_NN_FAST_H

#include "mtk/core.h"

/* out = softmax(x, dim) (log_softmax when `log`), when dim is x's last
 * non-trivial dim, x and out are contiguous, non-empty and of one dtype
 * among float32/float64/float16/bfloat16.  True when it computed out. */
bool mtk_nn_fast_softmax(mtk_ctx *ctx, const mtk_tensor *x, int32_t dim, bool log, mtk_tensor *out);

/* out = layer_norm(x) over its last `row_len` elements (rms_norm when
 * `rms`: no centering, no bias), with optional contiguous weight / bias
 * of row_len elements, when x and out are contiguous, non-empty and of
 * one dtype among float32/float64/float16/bfloat16 (weight and bias in
 * x's dtype, or float32).  True when it computed out. */
bool mtk_nn_fast_norm(mtk_ctx *ctx, const mtk_tensor *x, const mtk_tensor *weight, const mtk_tensor *bias,
                      int64_t row_len, double eps, bool rms, mtk_tensor *out);

/* y (n) = softmax(x (n)) in float32, x and y distinct: the vectorised row
 * kernel of mtk_nn_fast_softmax (the cpu's instruction set), for other
 * kernels' rows (attention).  A row whose maximum is not finite goes
 * through double arithmetic. */
void nn_fast_softmax_row_f32(const float *x, float *y, int64_t n);

#endif
