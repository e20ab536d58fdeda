/* Typed C API of the reduce ops.  Every function takes the context first,
 * returns NULL (error on the context) on failure, and passes a NULL tensor
 * argument through as NULL without a new error.
 *
 * Dims: `dims` points at `ndims` dims (negative ones count from the end);
 * dims == NULL means every dim (PyTorch's dim=None); a non-NULL empty list
 * (ndims == 0) means what PyTorch's dim=[] means to that op (every dim for
 * sum/mean/amax/var/..., no dim at all for all/any).  A dim listed twice
 * is an error.  `dtype` MTK_DTYPE_UNDEFINED means dtype=None.
 *
 * Results follow PyTorch 2.13 exactly: shapes (keepdim keeps reduced dims
 * as size 1), contiguous strides, dtypes (sum/prod/cumsum of integers and
 * bool give int64; mean/var/norms need floating inputs; all/any give bool,
 * uint8 for uint8), and errors.  On cpu, floating reductions accumulate
 * in double and round once; integers wrap as int64 does; max/argmax keep
 * the first index among equal values and NaN wins; large reductions run
 * on the context's threads (mtk_ctx_set_num_threads). */
#ifndef MTK_OPS_REDUCE_PUBLIC_H
#define MTK_OPS_REDUCE_PUBLIC_H

#include "mtk/core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* torch.sum / nansum / mean / nanmean(input, dim, keepdim, dtype=dtype).
 * mean/nanmean need a floating input or a floating dtype ("mean(): could
 * not infer output dtype. ..."). */
MTK_API mtk_tensor *mtk_sum(mtk_ctx *ctx, mtk_tensor *input, const int64_t *dims, int32_t ndims, bool keepdim,
                            mtk_dtype dtype);
MTK_API mtk_tensor *mtk_nansum(mtk_ctx *ctx, mtk_tensor *input, const int64_t *dims, int32_t ndims, bool keepdim,
                               mtk_dtype dtype);
MTK_API mtk_tensor *mtk_mean(mtk_ctx *ctx, mtk_tensor *input, const int64_t *dims, int32_t ndims, bool keepdim,
                             mtk_dtype dtype);
MTK_API mtk_tensor *mtk_nanmean(mtk_ctx *ctx, mtk_tensor *input, const int64_t *dims, int32_t ndims, bool keepdim,
                                mtk_dtype dtype);

/* torch.prod(input, dtype=dtype): every element; mtk_prod_dim: one dim. */
MTK_API mtk_tensor *mtk_prod(mtk_ctx *ctx, mtk_tensor *input, mtk_dtype dtype);
MTK_API mtk_tensor *mtk_prod_dim(mtk_ctx *ctx, mtk_tensor *input, int64_t dim, bool keepdim, mtk_dtype dtype);

/* torch.amax / amin(input, dim, keepdim).  Reducing an empty dim is an
 * error. */
MTK_API mtk_tensor *mtk_amax(mtk_ctx *ctx, mtk_tensor *input, const int64_t *dims, int32_t ndims, bool keepdim);
MTK_API mtk_tensor *mtk_amin(mtk_ctx *ctx, mtk_tensor *input, const int64_t *dims, int32_t ndims, bool keepdim);

/* torch.max(input) / torch.min(input): the 0-dim extreme of every element
 * (NaN if any).  (torch.max(input, other) is mtk_maximum.) */
MTK_API mtk_tensor *mtk_max(mtk_ctx *ctx, mtk_tensor *input);
MTK_API mtk_tensor *mtk_min(mtk_ctx *ctx, mtk_tensor *input);

/* torch.max / min(input, dim, keepdim) -> (values, indices): both outputs
 * are set (int64 indices), or both NULL and false on error. */
MTK_API bool mtk_max_dim(mtk_ctx *ctx, mtk_tensor *input, int64_t dim, bool keepdim, mtk_tensor **values,
                         mtk_tensor **indices);
MTK_API bool mtk_min_dim(mtk_ctx *ctx, mtk_tensor *input, int64_t dim, bool keepdim, mtk_tensor **values,
                         mtk_tensor **indices);

/* torch.argmax / argmin(input, dim, keepdim): dim == NULL flattens the
 * input (index into its row-major order). */
MTK_API mtk_tensor *mtk_argmax(mtk_ctx *ctx, mtk_tensor *input, const int64_t *dim, bool keepdim);
MTK_API mtk_tensor *mtk_argmin(mtk_ctx *ctx, mtk_tensor *input, const int64_t *dim, bool keepdim);

/* torch.var / std(input, dim, correction=correction, keepdim): the divisor
 * is max(N - correction, 0) (correction 1 is unbiased=True).  The pair
 * versions set (var or std, mean). */
MTK_API mtk_tensor *mtk_var(mtk_ctx *ctx, mtk_tensor *input, const int64_t *dims, int32_t ndims, double correction,
                            bool keepdim);
MTK_API mtk_tensor *mtk_std(mtk_ctx *ctx, mtk_tensor *input, const int64_t *dims, int32_t ndims, double correction,
                            bool keepdim);
MTK_API bool mtk_var_mean(mtk_ctx *ctx, mtk_tensor *input, const int64_t *dims, int32_t ndims, double correction,
                          bool keepdim, mtk_tensor **var, mtk_tensor **mean);
MTK_API bool mtk_std_mean(mtk_ctx *ctx, mtk_tensor *input, const int64_t *dims, int32_t ndims, double correction,
                          bool keepdim, mtk_tensor **std, mtk_tensor **mean);

/* torch.logsumexp(input, dim, keepdim): integral inputs give the default
 * float dtype. */
MTK_API mtk_tensor *mtk_logsumexp(mtk_ctx *ctx, mtk_tensor *input, const int64_t *dims, int32_t ndims, bool keepdim);

/* torch.linalg.vector_norm(input, ord, dim, keepdim, dtype=dtype): ord is
 * any number, INFINITY or -INFINITY; floating inputs only. */
MTK_API mtk_tensor *mtk_vector_norm(mtk_ctx *ctx, mtk_tensor *input, double ord, const int64_t *dims, int32_t ndims,
                                    bool keepdim, mtk_dtype dtype);

/* torch.all / any(input, dim, keepdim) and count_nonzero(input, dim). */
MTK_API mtk_tensor *mtk_all(mtk_ctx *ctx, mtk_tensor *input, const int64_t *dims, int32_t ndims, bool keepdim);
MTK_API mtk_tensor *mtk_any(mtk_ctx *ctx, mtk_tensor *input, const int64_t *dims, int32_t ndims, bool keepdim);
MTK_API mtk_tensor *mtk_count_nonzero(mtk_ctx *ctx, mtk_tensor *input, const int64_t *dims, int32_t ndims);

/* torch.cumsum / cumprod(input, dim, dtype=dtype); cummax / cummin(input,
 * dim) -> (values, indices). */
MTK_API mtk_tensor *mtk_cumsum(mtk_ctx *ctx, mtk_tensor *input, int64_t dim, mtk_dtype dtype);
MTK_API mtk_tensor *mtk_cumprod(mtk_ctx *ctx, mtk_tensor *input, int64_t dim, mtk_dtype dtype);
MTK_API bool mtk_cummax(mtk_ctx *ctx, mtk_tensor *input, int64_t dim, mtk_tensor **values, mtk_tensor **indices);
MTK_API bool mtk_cummin(mtk_ctx *ctx, mtk_tensor *input, int64_t dim, mtk_tensor **values, mtk_tensor **indices);

/* torch.median(input) (lower median, NaN if any) and median / mode
 * (input, dim, keepdim) -> (values, indices). */
MTK_API mtk_tensor *mtk_median(mtk_ctx *ctx, mtk_tensor *input);
MTK_API bool mtk_median_dim(mtk_ctx *ctx, mtk_tensor *input, int64_t dim, bool keepdim, mtk_tensor **values,
                            mtk_tensor **indices);
MTK_API bool mtk_mode(mtk_ctx *ctx, mtk_tensor *input, int64_t dim, bool keepdim, mtk_tensor **values,
                      mtk_tensor **indices);

/* torch.histc(input, bins, min, max): counts of input's elements in
 * `bins` equal bins over [min, max] (min == max: the elements' range;
 * outside ignored, max in the last bin) -> (bins) in input's dtype, a
 * float one.  Errors: an integer or bool input, bins <= 0, min > max, a
 * bound not finite. */
MTK_API mtk_tensor *mtk_histc(mtk_ctx *ctx, mtk_tensor *input, int64_t bins, double min, double max);

#ifdef __cplusplus
}
#endif
#endif
