/* Internal helpers of the loss ops (nn_loss*.c).
 *
 * Torch builds most losses out of element-wise steps (its meta device
 * runs Python decompositions, its cpu kernels compose ATen ops), and the
 * result's strides and dtype are whatever the last step gives.  These
 * helpers follow such a chain on metadata alone: each "sim" tensor is an
 * mtk_tensor value with shape, strides, dtype and device set and no
 * storage, never handed to the dispatcher. */
#ifndef MTK_OPS_NN_LOSS_H
#define MTK_OPS_NN_LOSS_H

#include "mtk/op.h"

/* t's metadata. */
mtk_tensor nn_sim_of(const mtk_tensor *t);

/* t.expand(shape[ndim]) (t must broadcast to it). */
mtk_tensor nn_sim_expand(const mtk_tensor *t, const int64_t *shape, int32_t ndim);

/* t.to(dtype): t itself for its own dtype, else a fresh tensor laid out
 * as empty_like(t) (preserve_format) lays it out. */
mtk_tensor nn_sim_to(const mtk_tensor *t, mtk_dtype dtype);

/* A 0-dim tensor on `device` (a tensor.new_full((), v) operand). */
mtk_tensor nn_sim_scalar(mtk_device device, mtk_dtype dtype);

/* The result of an element-wise op of dtype `dtype` over a and b (b NULL:
 * a unary op, or one with a Python number), laid out by TensorIterator's
 * rule over the operands broadcast together; false (error set, naming the
 * call's op) when they do not broadcast. */
bool nn_sim_ew(mtk_op_call *call, mtk_dtype dtype, const mtk_tensor *a, const mtk_tensor *b, mtk_tensor *out);

/* The dtype torch computes a float16/bfloat16 element-wise op in
 * (float32); any other dtype is its own. */
mtk_dtype nn_opmath_dtype(mtk_dtype dtype);

/* log_sigmoid(x) of a float32 as torch's cpu kernel computes it (SLEEF's
 * float exp and log1p; nn_loss_logsigmoid.c). */
float nn_log_sigmoid_f32(float x);

/* torch.sum(t) on cpu for a floating t (float64, float32, float16,
 * bfloat16) in torch's order and roundings (nn_loss_sum.c): `values` in
 * row-major order of `shape`, laid out in memory by `stride` (elements).
 * False (error set) when out of memory. */
bool nn_torch_sum(mtk_ctx *ctx, const double *values, const int64_t *shape, const int64_t *stride, int32_t ndim,
                  mtk_dtype dtype, double *out);

#endif
