/* Typed C API of the convert ops.  Every function takes the context first,
 * returns NULL (error on the context) on failure, and passes a NULL tensor
 * argument through as NULL without a new error.
 *
 * The errors where meta tensors meet real ones keep PyTorch's words and
 * add what to do instead, with status MTK_ERR_META_NO_DATA:
 *   "Cannot copy out of meta tensor; no data! ..."  (to, copy_, type_as)
 *   "Tensor.item() cannot be called on meta tensors. ..."  (item)
 * and nonzero / masked_select / unique on meta fail with
 * MTK_ERR_DATA_DEPENDENT after checking their arguments. */
#ifndef MTK_OPS_CONVERT_PUBLIC_H
#define MTK_OPS_CONVERT_PUBLIC_H

#include "mtk/core.h"
#include "mtk/value.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Tensor.to(device, dtype, copy=copy).  `device` < 0 keeps the input's
 * device; MTK_DTYPE_UNDEFINED keeps its dtype.  When nothing changes and
 * `copy` is false the result is `input` itself.  Otherwise a fresh tensor
 * with the input's dense strides (non-dense inputs get the dense strides
 * ordered like theirs, as torch's _to_copy); on cpu it holds the converted
 * values, on meta nothing.  meta -> cpu is the copy-out error; devices
 * other than cpu and meta are MTK_ERR_DEVICE. */
MTK_API mtk_tensor *mtk_to(mtk_ctx *ctx, mtk_tensor *input, mtk_device device, mtk_dtype dtype, bool copy);
MTK_API mtk_tensor *mtk_to_dtype(mtk_ctx *ctx, mtk_tensor *input, mtk_dtype dtype);
MTK_API mtk_tensor *mtk_to_device(mtk_ctx *ctx, mtk_tensor *input, mtk_device device);

/* Tensor.type_as(other): to(other's dtype and device). */
MTK_API mtk_tensor *mtk_type_as(mtk_ctx *ctx, mtk_tensor *input, mtk_tensor *other);

/* A tensor of the input's shape, dtype and dense strides on `device` with
 * uninitialized memory (no memory on meta): what Module.to_empty() makes of
 * each parameter.  Works from meta; never reads the input's data. */
MTK_API mtk_tensor *mtk_to_empty(mtk_ctx *ctx, mtk_tensor *input, mtk_device device);

/* torch.clone (preserve format): a fresh copy on the input's device. */
MTK_API mtk_tensor *mtk_clone(mtk_ctx *ctx, mtk_tensor *input);

/* self.copy_(src): src broadcasts to self's shape (error otherwise) and is
 * converted to self's dtype.  Returns self.  Into a meta tensor it only
 * checks; from meta into cpu it is the copy-out error; a cpu self whose
 * elements overlap (an expanded tensor) is refused as torch does. */
MTK_API mtk_tensor *mtk_copy_(mtk_ctx *ctx, mtk_tensor *self, mtk_tensor *src);

/* self.fill_(value) / self.zero_(): every element of self set to a number
 * or to the one element of a 0-dim tensor; returns self.  On cpu a number
 * must fit self's dtype ("value cannot be converted to type int8_t without
 * overflow"); on meta nothing is written or checked but the value's
 * dimensions. */
MTK_API mtk_tensor *mtk_fill_(mtk_ctx *ctx, mtk_tensor *self, mtk_value value);
MTK_API mtk_tensor *mtk_zero_(mtk_ctx *ctx, mtk_tensor *self);

/* Tensor.item(): the one element as a number value (BOOL for bool, FLOAT
 * for floating dtypes, INT otherwise).  Errors: more than or fewer than
 * one element ("a Tensor with 6 elements cannot be converted to Scalar"),
 * a meta tensor.  Returns false on error (*out is None). */
MTK_API bool mtk_item(mtk_ctx *ctx, mtk_tensor *input, mtk_value *out);

/* torch.nonzero(input): (n, ndim) int64 indices of the nonzero elements
 * in row-major order (strides (1, n) as torch's). */
MTK_API mtk_tensor *mtk_nonzero(mtk_ctx *ctx, mtk_tensor *input);

/* torch.masked_select(input, mask): the elements where the bool mask
 * (broadcast with input) is true, as a 1-D tensor. */
MTK_API mtk_tensor *mtk_masked_select(mtk_ctx *ctx, mtk_tensor *input, mtk_tensor *mask);

/* torch.unique(input, sorted, return_inverse, return_counts): the sorted
 * distinct values (1-D).  Pass non-NULL inverse_out / counts_out to get
 * the inverse indices (input's shape, int64) and the counts. */
MTK_API mtk_tensor *mtk_unique(mtk_ctx *ctx, mtk_tensor *input, bool sorted, mtk_tensor **inverse_out,
                               mtk_tensor **counts_out);

/* torch.unique(input, dim=dim, ...): distinct slices along `dim`. */
MTK_API mtk_tensor *mtk_unique_dim(mtk_ctx *ctx, mtk_tensor *input, int64_t dim, bool sorted,
                                   mtk_tensor **inverse_out, mtk_tensor **counts_out);

#ifdef __cplusplus
}
#endif
#endif
