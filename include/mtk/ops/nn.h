/* Typed C API of the nn ops (torch.nn.functional).  Every function takes
 * the context first, returns NULL (error on the context) on failure, and
 * passes a NULL tensor argument through as NULL without a new error.
 * Optional tensors are NULL for None; an optional float is NAN for None
 * (rms_norm's eps, attention's scale); a dtype is MTK_DTYPE_UNDEFINED for
 * None.  Results are new tensors owned by the context, except where a
 * function says it returns its input. */
#ifndef MTK_OPS_NN_PUBLIC_H
#define MTK_OPS_NN_PUBLIC_H

#include "mtk/core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* F.softmax / F.log_softmax along `dim`, computed in `dtype` (or the
 * input's dtype).  Contiguous result.  The cpu takes floating dtypes. */
MTK_API mtk_tensor *mtk_softmax(mtk_ctx *ctx, mtk_tensor *input, int64_t dim, mtk_dtype dtype);
MTK_API mtk_tensor *mtk_log_softmax(mtk_ctx *ctx, mtk_tensor *input, int64_t dim, mtk_dtype dtype);

/* F.dropout and friends.  With training false, p == 0 or an empty input
 * they return `input` itself (dropout1d/3d of an unbatched input: a view
 * of it), as torch does; inplace returns `input` after masking it.  On cpu
 * the mask is drawn from the context's generator (mtk_ctx_manual_seed):
 * deterministic for a seed, but not torch's random stream. */
MTK_API mtk_tensor *mtk_dropout(mtk_ctx *ctx, mtk_tensor *input, double p, bool training, bool inplace);
MTK_API mtk_tensor *mtk_dropout1d(mtk_ctx *ctx, mtk_tensor *input, double p, bool training, bool inplace);
MTK_API mtk_tensor *mtk_dropout2d(mtk_ctx *ctx, mtk_tensor *input, double p, bool training, bool inplace);
MTK_API mtk_tensor *mtk_dropout3d(mtk_ctx *ctx, mtk_tensor *input, double p, bool training, bool inplace);
MTK_API mtk_tensor *mtk_alpha_dropout(mtk_ctx *ctx, mtk_tensor *input, double p, bool training, bool inplace);
MTK_API mtk_tensor *mtk_feature_alpha_dropout(mtk_ctx *ctx, mtk_tensor *input, double p, bool training, bool inplace);

/* F.layer_norm over the last `n` dims (normalized_shape[n]). */
MTK_API mtk_tensor *mtk_layer_norm(mtk_ctx *ctx, mtk_tensor *input, const int64_t *normalized_shape, int32_t n,
                                   mtk_tensor *weight, mtk_tensor *bias, double eps);
/* F.rms_norm; eps NAN: the machine epsilon of the compute dtype. */
MTK_API mtk_tensor *mtk_rms_norm(mtk_ctx *ctx, mtk_tensor *input, const int64_t *normalized_shape, int32_t n,
                                 mtk_tensor *weight, double eps);
/* F.group_norm. */
MTK_API mtk_tensor *mtk_group_norm(mtk_ctx *ctx, mtk_tensor *input, int64_t num_groups, mtk_tensor *weight,
                                   mtk_tensor *bias, double eps);
/* F.batch_norm.  training on cpu updates running_mean / running_var in
 * place (momentum, unbiased variance), as torch does. */
MTK_API mtk_tensor *mtk_batch_norm(mtk_ctx *ctx, mtk_tensor *input, mtk_tensor *running_mean, mtk_tensor *running_var,
                                   mtk_tensor *weight, mtk_tensor *bias, bool training, double momentum, double eps);
/* F.instance_norm (running stats updated in place with the batch mean). */
MTK_API mtk_tensor *mtk_instance_norm(mtk_ctx *ctx, mtk_tensor *input, mtk_tensor *running_mean, mtk_tensor *running_var,
                                      mtk_tensor *weight, mtk_tensor *bias, bool use_input_stats, double momentum,
                                      double eps);

/* F.scaled_dot_product_attention: (..., L, E), (..., S, E), (..., S, Ev)
 * -> (..., L, Ev).  scale NAN: 1/sqrt(E). */
MTK_API mtk_tensor *mtk_scaled_dot_product_attention(mtk_ctx *ctx, mtk_tensor *query, mtk_tensor *key, mtk_tensor *value,
                                                     mtk_tensor *attn_mask, double dropout_p, bool is_causal, double scale,
                                                     bool enable_gqa);

/* Losses; `reduction` is "none", "mean" or "sum". */
MTK_API mtk_tensor *mtk_cross_entropy(mtk_ctx *ctx, mtk_tensor *input, mtk_tensor *target, mtk_tensor *weight,
                                      int64_t ignore_index, const char *reduction, double label_smoothing);
MTK_API mtk_tensor *mtk_nll_loss(mtk_ctx *ctx, mtk_tensor *input, mtk_tensor *target, mtk_tensor *weight,
                                 int64_t ignore_index, const char *reduction);
MTK_API mtk_tensor *mtk_mse_loss(mtk_ctx *ctx, mtk_tensor *input, mtk_tensor *target, const char *reduction);
MTK_API mtk_tensor *mtk_l1_loss(mtk_ctx *ctx, mtk_tensor *input, mtk_tensor *target, const char *reduction);
MTK_API mtk_tensor *mtk_smooth_l1_loss(mtk_ctx *ctx, mtk_tensor *input, mtk_tensor *target, const char *reduction,
                                       double beta);
MTK_API mtk_tensor *mtk_huber_loss(mtk_ctx *ctx, mtk_tensor *input, mtk_tensor *target, const char *reduction,
                                   double delta);
MTK_API mtk_tensor *mtk_binary_cross_entropy(mtk_ctx *ctx, mtk_tensor *input, mtk_tensor *target, mtk_tensor *weight,
                                             const char *reduction);
MTK_API mtk_tensor *mtk_binary_cross_entropy_with_logits(mtk_ctx *ctx, mtk_tensor *input, mtk_tensor *target,
                                                         mtk_tensor *weight, const char *reduction, mtk_tensor *pos_weight);

/* rope(x, cos, sin, interleaved): rotary position embedding as Hugging
 * Face Llama applies it, x * cos + rotate_half(x) * sin; see docs/ops.md
 * for the accepted shapes. */
MTK_API mtk_tensor *mtk_rope(mtk_ctx *ctx, mtk_tensor *x, mtk_tensor *cos, mtk_tensor *sin, bool interleaved);

/* rope_complex(x, freqs_cis): rotary position embedding as Hugging Face
 * Llama 4 applies it, each pair (x[2i], x[2i+1]) taken as a complex number
 * times freqs_cis; freqs_cis is its real view (..., S, D/2, 2) of (cos,
 * sin) pairs, one storage as transformers' complex64 tensor.  A new
 * contiguous tensor of x's shape; see docs/ops.md for the shapes. */
MTK_API mtk_tensor *mtk_rope_complex(mtk_ctx *ctx, mtk_tensor *x, mtk_tensor *freqs_cis);

#ifdef __cplusplus
}
#endif
#endif
