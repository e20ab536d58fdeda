/* Typed C API of the linalg ops.  Every function takes the context first,
 * returns NULL (error on the context) on failure, and passes a NULL tensor
 * argument through as NULL without a new error.
 *
 * Results are new contiguous tensors of the inputs' dtype on their device;
 * shapes, errors and FLOPs follow PyTorch's cpu behaviour (see
 * src/ops/linalg.c).  On cpu, float32/float64 use BLAS, float16/bfloat16
 * are computed in float32 and rounded, integers exactly (wrapping as the
 * dtype does); bool has no cpu kernel, as in PyTorch. */
#ifndef MTK_OPS_LINALG_PUBLIC_H
#define MTK_OPS_LINALG_PUBLIC_H

#include "mtk/core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* torch.matmul: dot for 1-D @ 1-D (0-dim result), matrix-vector, vector-
 * matrix, matrix-matrix, and batched products broadcasting the batch dims
 * (a 1-D operand joins as a row / column that is dropped from the result).
 * Errors: a 0-dim operand, mismatched inner sizes, unbroadcastable batch
 * dims, different dtypes. */
MTK_API mtk_tensor *mtk_matmul(mtk_ctx *ctx, mtk_tensor *input, mtk_tensor *other);

/* torch.mm: (n x m) @ (m x p) -> (n x p); both must be matrices. */
MTK_API mtk_tensor *mtk_mm(mtk_ctx *ctx, mtk_tensor *input, mtk_tensor *mat2);

/* torch.bmm: (b x n x m) @ (b x m x p) -> (b x n x p); no broadcasting. */
MTK_API mtk_tensor *mtk_bmm(mtk_ctx *ctx, mtk_tensor *input, mtk_tensor *mat2);

/* torch.dot: two 1-D tensors of one length -> 0-dim tensor. */
MTK_API mtk_tensor *mtk_dot(mtk_ctx *ctx, mtk_tensor *input, mtk_tensor *other);

/* torch.mv: (n x m) @ (m) -> (n). */
MTK_API mtk_tensor *mtk_mv(mtk_ctx *ctx, mtk_tensor *input, mtk_tensor *vec);

/* torch.nn.functional.linear: input @ weight.T (+ bias).  `weight` is
 * (out_features, in_features) or 1-D; `bias` may be NULL (no bias).  A 1-D
 * input gives a 1-D result; bias broadcasting follows torch's cpu paths
 * (addmm for 2-D input, flattened addmm for contiguous input with a
 * vector bias, else matmul then an in-place add). */
MTK_API mtk_tensor *mtk_linear(mtk_ctx *ctx, mtk_tensor *input, mtk_tensor *weight, mtk_tensor *bias);

/* torch._grouped_mm(input, mat2, offs=offs) in its mixture-of-experts
 * form: input (S, K) with its rows sorted by group, mat2 (G, K, N), offs
 * (G) int32 the cumulative end row of each group -> (S, N) in input's
 * dtype, row r of group g being input[r] @ mat2[g] (rows past offs[G-1]
 * zero).  float32, bfloat16 or float16, both alike.  Errors: other ranks,
 * no offs, offs not int32 or not one per group, mismatched K, offsets
 * decreasing or past S (cpu). */
MTK_API mtk_tensor *mtk_grouped_mm(mtk_ctx *ctx, mtk_tensor *input, mtk_tensor *mat2, mtk_tensor *offs);

#ifdef __cplusplus
}
#endif
#endif
