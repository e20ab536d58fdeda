/* The nn op family: meta/cpu/cost functions named by list_nn.h, and the
 * helpers its files share (nn_util.c).
 *
 * Files, one concern each:
 *   nn_softmax.c     softmax, log_softmax
 *   nn_dropout.c     dropout, dropout1d/2d/3d, alpha_dropout, feature_alpha_dropout
 *   nn_norm.c        layer_norm, rms_norm, group_norm
 *   nn_batchnorm.c   batch_norm, instance_norm
 *   nn_attention.c   scaled_dot_product_attention
 *   nn_loss.c        mse/l1/smooth_l1/huber loss, binary_cross_entropy(_with_logits)
 *   nn_loss_class.c  nll_loss, cross_entropy
 *   nn_rope.c        rope, rope_complex (rotary position embedding, mtk ops)
 *   nn_util.c        threads, contiguous compute buffers, shared checks
 *
 * CPU kernels compute in double ("opmath"), or float32 BLAS for attention,
 * reading inputs through contiguous compute buffers so any strides work,
 * and store the result with one rounding into the output's dtype. */
#ifndef MTK_OPS_NN_H
#define MTK_OPS_NN_H

#include "mtk/op.h"

/* ------------------------------------------------ meta / cpu / cost */

bool mtk_nn_softmax_meta(mtk_op_call *call);
bool mtk_nn_softmax_cpu(mtk_op_call *call);

bool mtk_nn_dropout_meta(mtk_op_call *call);
bool mtk_nn_dropout_cpu(mtk_op_call *call);

bool mtk_nn_layer_norm_meta(mtk_op_call *call);
bool mtk_nn_layer_norm_cpu(mtk_op_call *call);
bool mtk_nn_rms_norm_meta(mtk_op_call *call);
bool mtk_nn_rms_norm_cpu(mtk_op_call *call);
bool mtk_nn_group_norm_meta(mtk_op_call *call);
bool mtk_nn_group_norm_cpu(mtk_op_call *call);
bool mtk_nn_batch_norm_meta(mtk_op_call *call);
bool mtk_nn_batch_norm_cpu(mtk_op_call *call);
bool mtk_nn_instance_norm_meta(mtk_op_call *call);
bool mtk_nn_instance_norm_cpu(mtk_op_call *call);

bool mtk_nn_sdpa_meta(mtk_op_call *call);
bool mtk_nn_sdpa_cpu(mtk_op_call *call);
mtk_op_cost mtk_nn_sdpa_cost(const mtk_op_call *call);

bool mtk_nn_pointwise_loss_meta(mtk_op_call *call);
bool mtk_nn_pointwise_loss_cpu(mtk_op_call *call);
bool mtk_nn_nll_loss_meta(mtk_op_call *call);
bool mtk_nn_nll_loss_cpu(mtk_op_call *call);
bool mtk_nn_cross_entropy_meta(mtk_op_call *call);
bool mtk_nn_cross_entropy_cpu(mtk_op_call *call);

bool mtk_nn_rope_meta(mtk_op_call *call);
bool mtk_nn_rope_cpu(mtk_op_call *call);
bool mtk_nn_rope_complex_meta(mtk_op_call *call);
bool mtk_nn_rope_complex_cpu(mtk_op_call *call);


/* ---------------------------------------------------------- info rows */

/* softmax family */
typedef struct nn_softmax_info { bool log; } nn_softmax_info;
extern const nn_softmax_info mtk_nn_softmax_info, mtk_nn_log_softmax_info;

/* dropout family: which elements share a mask value, and the values */
typedef enum nn_dropout_kind {
    NN_DROPOUT,            /* F.dropout: one draw per element                 */
    NN_DROPOUT_1D,         /* F.dropout1d: per (N, C) of a 2-D/3-D input      */
    NN_DROPOUT_2D,         /* F.dropout2d: per (N, C), any ndim >= 2          */
    NN_DROPOUT_3D,         /* F.dropout3d: per (N, C); 4-D input unbatched    */
    NN_ALPHA_DROPOUT,      /* F.alpha_dropout (SELU-preserving)               */
    NN_FEATURE_ALPHA_DROPOUT
} nn_dropout_kind;
typedef struct nn_dropout_info { nn_dropout_kind kind; } nn_dropout_info;
extern const nn_dropout_info mtk_nn_dropout_info, mtk_nn_dropout1d_info, mtk_nn_dropout2d_info,
    mtk_nn_dropout3d_info, mtk_nn_alpha_dropout_info, mtk_nn_feature_alpha_dropout_info;

/* point-wise losses */
typedef enum nn_loss_kind { NN_MSE, NN_L1, NN_SMOOTH_L1, NN_HUBER, NN_BCE, NN_BCE_LOGITS } nn_loss_kind;
typedef struct nn_loss_info { nn_loss_kind kind; } nn_loss_info;
extern const nn_loss_info mtk_nn_mse_info, mtk_nn_l1_info, mtk_nn_smooth_l1_info, mtk_nn_huber_info,
    mtk_nn_bce_info, mtk_nn_bce_logits_info;

/* ------------------------------------------------------ shared helpers */

/* Threads the nn cpu kernels use: the context's (mtk_ctx_set_num_threads). */
int32_t nn_num_threads(void);

/* Runs fn(begin, end, user) over [0, n) split into contiguous parts, one
 * per thread (the caller runs the first); fewer threads for small n or
 * when a thread cannot start.  `min_per_thread` items keep tiny loops on
 * one thread. */
typedef void (*nn_task_fn)(int64_t begin, int64_t end, void *user);
void nn_parallel(int64_t n, int64_t min_per_thread, nn_task_fn fn, void *user);

/* The tensor's elements in logical row-major order as a new contiguous
 * double buffer (the context's allocator; free with mtk_ctx_mfree).  NULL
 * and MTK_ERR_OUT_OF_MEMORY on failure.  A NULL tensor gives NULL without
 * an error: check the tensor, not the result. */
double *nn_gather(mtk_ctx *ctx, const mtk_tensor *t);

/* The same, broadcast to shape[ndim] (t must broadcast to it). */
double *nn_gather_as(mtk_ctx *ctx, const mtk_tensor *t, const int64_t *shape, int32_t ndim);

/* Stores a row-major double buffer of out's numel into `out` (any
 * strides), rounding once into out's dtype. */
void nn_scatter(mtk_tensor *out, const double *values);

/* Rounds each value through `dtype` (what storing and reloading it in a
 * tensor of that dtype gives). */
void nn_round(double *values, int64_t n, mtk_dtype dtype);
/* One value rounded through `dtype`, as nn_round does it. */
double nn_rounded(mtk_dtype dtype, double v);

/* A new contiguous double buffer of `n` elements (NULL and an error on
 * failure). */
double *nn_alloc(mtk_ctx *ctx, int64_t n);

/* `reduction` argument: "none", "mean" or "sum"; PyTorch's words for
 * anything else ("foo is not a valid value for reduction").  The legacy
 * size_average/reduce arguments (None or bool) override it as
 * torch.nn._reduction.legacy_get_string does.  -1 on error. */
typedef enum nn_reduction { NN_REDUCE_NONE, NN_REDUCE_MEAN, NN_REDUCE_SUM } nn_reduction;
int nn_reduction_arg(mtk_op_call *call, int32_t reduction_arg, int32_t size_average_arg,
                     int32_t reduce_arg);

/* PyTorch's cpu rule for normalization parameters ("mixed dtype (CPU)"):
 * when the first defined parameter's dtype differs from the input's, every
 * parameter must be float32 and the input float16/bfloat16; otherwise
 * every parameter must have the input's dtype.  `params` may hold NULLs. */
bool nn_check_param_dtypes(mtk_op_call *call, const mtk_tensor *input, const mtk_tensor *const *params,
                           int32_t nparams);

/* "not implemented for 'Long'"-style refusal of a cpu dtype. */
bool nn_cpu_dtype_error(mtk_op_call *call, const char *kernel, mtk_dtype dtype);


/* A meta tensor with t's shape and strides and `dtype` (UNDEFINED: t's),
 * to replay torch's meta decompositions on with mtk's ops (the strides of
 * the result are what the decomposition produces).  NULL for NULL t or
 * out of memory. */
mtk_tensor *nn_meta_standin(mtk_ctx *ctx, const mtk_tensor *t, mtk_dtype dtype);

/* A tensor with shape[ndim] on the call's device with the given strides
 * (NULL: contiguous) as output slot 0 of a one-output call. */
bool nn_set_output(mtk_op_call *call, mtk_dtype dtype, const int64_t *shape, int32_t ndim,
                   const int64_t *stride);

/* Product of shape[begin..end): ops_size_product (0 when a size is 0,
 * INT64_MAX when it overflows int64). */
int64_t nn_prod(const int64_t *shape, int32_t begin, int32_t end);

#endif
