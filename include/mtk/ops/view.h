/* Typed C API of the view ops.  Every function takes the context first,
 * returns NULL (error on the context) on failure, and passes a NULL tensor
 * argument through as NULL without a new error.
 *
 * A view shares its input's storage (on cpu the same bytes; on meta there
 * are none) and differs only in shape, strides and storage offset, which
 * equal PyTorch's in every case.  Dims may be negative (counted from the
 * end) as in PyTorch; a dim out of range is MTK_ERR_INDEX with PyTorch's
 * "Dimension out of range (expected to be in range of [-2, 1], but got
 * 2)".  The returned tensors live in the context like every tensor. */
#ifndef MTK_OPS_VIEW_PUBLIC_H
#define MTK_OPS_VIEW_PUBLIC_H

#include "mtk/core.h"
#include "mtk/ops/creation.h" /* mtk_memory_format */

#ifdef __cplusplus
extern "C" {
#endif

/* x.view(shape): one size may be -1 (inferred).  Errors: a shape of the
 * wrong numel ("shape '[2, 5]' is invalid for input of size 12"), and
 * strides that cannot be viewed ("view size is not compatible with input
 * tensor's size and stride ... Use .reshape(...) instead."). */
MTK_API mtk_tensor *mtk_view(mtk_ctx *ctx, mtk_tensor *x, const int64_t *shape, int32_t ndim);

/* x.reshape(shape): a view when one exists, else a contiguous copy (on cpu
 * the data is copied), exactly when torch copies. */
MTK_API mtk_tensor *mtk_reshape(mtk_ctx *ctx, mtk_tensor *x, const int64_t *shape, int32_t ndim);

/* x.view_as(other), x.reshape_as(other): view/reshape to other's shape. */
MTK_API mtk_tensor *mtk_view_as(mtk_ctx *ctx, mtk_tensor *x, mtk_tensor *other);
MTK_API mtk_tensor *mtk_reshape_as(mtk_ctx *ctx, mtk_tensor *x, mtk_tensor *other);

/* x.flatten(start_dim, end_dim) (0 and -1 flatten everything; a 0-dim
 * tensor gives shape [1]); a view when possible, as reshape. */
MTK_API mtk_tensor *mtk_flatten(mtk_ctx *ctx, mtk_tensor *x, int64_t start_dim, int64_t end_dim);

/* x.unflatten(dim, sizes): dim split into sizes[n] (one may be -1). */
MTK_API mtk_tensor *mtk_unflatten(mtk_ctx *ctx, mtk_tensor *x, int64_t dim, const int64_t *sizes, int32_t n);

/* x.contiguous(): x itself (a view with identical metadata) when already
 * contiguous, else a contiguous copy.  _format: the same for a memory
 * format (channels_last needs a 4-D tensor, channels_last_3d a 5-D one). */
MTK_API mtk_tensor *mtk_contiguous(mtk_ctx *ctx, mtk_tensor *x);
MTK_API mtk_tensor *mtk_contiguous_format(mtk_ctx *ctx, mtk_tensor *x, mtk_memory_format format);

/* x.expand(shape): size-1 dims (and new leading dims) broadcast with
 * stride 0; -1 keeps a dim's size. */
MTK_API mtk_tensor *mtk_expand(mtk_ctx *ctx, mtk_tensor *x, const int64_t *shape, int32_t ndim);
MTK_API mtk_tensor *mtk_expand_as(mtk_ctx *ctx, mtk_tensor *x, mtk_tensor *other);

/* x.transpose(dim0, dim1) (also swapaxes/swapdims by name); x.t() for
 * tensors of at most 2 dims. */
MTK_API mtk_tensor *mtk_transpose(mtk_ctx *ctx, mtk_tensor *x, int64_t dim0, int64_t dim1);
MTK_API mtk_tensor *mtk_t(mtk_ctx *ctx, mtk_tensor *x);

/* x.permute(dims): dims[n] must name every dim once. */
MTK_API mtk_tensor *mtk_permute(mtk_ctx *ctx, mtk_tensor *x, const int64_t *dims, int32_t n);

/* x.movedim(source, destination) with n dims each (also moveaxis). */
MTK_API mtk_tensor *mtk_movedim(mtk_ctx *ctx, mtk_tensor *x, const int64_t *source, const int64_t *destination,
                                int32_t n);

/* x.squeeze(): drops every size-1 dim; _dim / _dims: only those listed
 * (a listed dim whose size is not 1 stays). */
MTK_API mtk_tensor *mtk_squeeze(mtk_ctx *ctx, mtk_tensor *x);
MTK_API mtk_tensor *mtk_squeeze_dim(mtk_ctx *ctx, mtk_tensor *x, int64_t dim);
MTK_API mtk_tensor *mtk_squeeze_dims(mtk_ctx *ctx, mtk_tensor *x, const int64_t *dims, int32_t n);

/* x.unsqueeze(dim): a size-1 dim inserted at dim (in [-ndim-1, ndim]). */
MTK_API mtk_tensor *mtk_unsqueeze(mtk_ctx *ctx, mtk_tensor *x, int64_t dim);

/* x.narrow(dim, start, length): start may be negative. */
MTK_API mtk_tensor *mtk_narrow(mtk_ctx *ctx, mtk_tensor *x, int64_t dim, int64_t start, int64_t length);

/* x.select(dim, index): drops dim, keeping element `index` (may be
 * negative). */
MTK_API mtk_tensor *mtk_select(mtk_ctx *ctx, mtk_tensor *x, int64_t dim, int64_t index);

/* x[..., start:end:step] along dim, clamped like Python slicing (INT64_MAX
 * as end means "to the end"); step must be positive. */
MTK_API mtk_tensor *mtk_slice(mtk_ctx *ctx, mtk_tensor *x, int64_t dim, int64_t start, int64_t end, int64_t step);

/* x.repeat(repeats): x tiled repeats[i] times along each dim (n >= ndim;
 * extra leading repeats add dims).  A fresh contiguous tensor. */
MTK_API mtk_tensor *mtk_repeat(mtk_ctx *ctx, mtk_tensor *x, const int64_t *repeats, int32_t n);

/* List-valued views: x.split(split_size, dim), x.split(sizes, dim),
 * x.chunk(chunks, dim), x.unbind(dim).  Each returns the number of pieces
 * (-1 on error) and stores the first min(count, cap) of them in out[];
 * call again with a larger `out` when the count exceeds cap. */
MTK_API int32_t mtk_split(mtk_ctx *ctx, mtk_tensor *x, int64_t split_size, int64_t dim, mtk_tensor **out, int32_t cap);
MTK_API int32_t mtk_split_sizes(mtk_ctx *ctx, mtk_tensor *x, const int64_t *sizes, int32_t n, int64_t dim,
                                mtk_tensor **out, int32_t cap);
MTK_API int32_t mtk_chunk(mtk_ctx *ctx, mtk_tensor *x, int64_t chunks, int64_t dim, mtk_tensor **out, int32_t cap);
MTK_API int32_t mtk_unbind(mtk_ctx *ctx, mtk_tensor *x, int64_t dim, mtk_tensor **out, int32_t cap);

/* torch.as_strided(x, size, stride, storage_offset): a view of x's storage
 * with any geometry (size and stride of ndim entries, no negative stride).
 * storage_offset MTK_AS_STRIDED_OWN_OFFSET keeps x's own.  On cpu the view
 * must stay inside x's storage; on meta only the sizes are checked. */
#define MTK_AS_STRIDED_OWN_OFFSET INT64_MIN
MTK_API mtk_tensor *mtk_as_strided(mtk_ctx *ctx, mtk_tensor *x, const int64_t *size, const int64_t *stride, int32_t ndim,
                                   int64_t storage_offset);

#ifdef __cplusplus
}
#endif
#endif
