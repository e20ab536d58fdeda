/* Typed C API of the index ops: joining (cat, stack), splitting and
 * repeating, reordering (roll, flip, tril/triu), gathering and scattering
 * by index, padding and sorting.  Every function takes the context first,
 * returns NULL (error on the context) on failure, and passes a NULL tensor
 * argument through as NULL without a new error.
 *
 * Shapes, dtypes, strides and errors are torch 2.13's (device='meta' for
 * metadata).  Dims may be negative.  Index tensors are int64 (int32 where
 * torch accepts it); on cpu every index value is checked ("index 5 is out
 * of bounds for dimension 0 with size 3"); a meta tensor has no values, so
 * on meta they are not.  Results are fresh tensors except tensor_split's
 * pieces, which are views of the input. */
#ifndef MTK_OPS_INDEX_PUBLIC_H
#define MTK_OPS_INDEX_PUBLIC_H

#include "mtk/core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* `dim=None` for the functions below that take an optional dim. */
#define MTK_INDEX_NO_DIM INT64_MIN

/* ------------------------------------------------------------- joining */

/* torch.cat(tensors[n], dim): dtypes promote as torch.result_type; 1-D
 * empty tensors of shape [0] are skipped (torch's legacy rule); the
 * output is channels-last when every input suggests it.  Errors: no
 * tensors, 0-dim tensors, mismatched ranks or sizes. */
MTK_API mtk_tensor *mtk_cat(mtk_ctx *ctx, mtk_tensor *const *tensors, int32_t n, int64_t dim);

/* torch.stack(tensors[n], dim): a new dim of size n at `dim` (in
 * [-ndim-1, ndim]); every tensor must have the same shape. */
MTK_API mtk_tensor *mtk_stack(mtk_ctx *ctx, mtk_tensor *const *tensors, int32_t n, int64_t dim);

/* torch.hstack / vstack / dstack: cat after atleast_1d / 2d / 3d, along
 * dim 1 (0 for 1-D inputs) / 0 / 2. */
MTK_API mtk_tensor *mtk_hstack(mtk_ctx *ctx, mtk_tensor *const *tensors, int32_t n);
MTK_API mtk_tensor *mtk_vstack(mtk_ctx *ctx, mtk_tensor *const *tensors, int32_t n);
MTK_API mtk_tensor *mtk_dstack(mtk_ctx *ctx, mtk_tensor *const *tensors, int32_t n);

/* ------------------------------------------------ splitting, repeating */

/* torch.tensor_split(x, sections, dim): `sections` views along dim, the
 * first size % sections one element longer.  _indices: split before each
 * index (Python slice rules: negative counts from the end, clamped).
 * Writes up to `cap` views to out and returns how many there are, or -1
 * on error. */
MTK_API int32_t mtk_tensor_split(mtk_ctx *ctx, mtk_tensor *x, int64_t sections, int64_t dim, mtk_tensor **out,
                                 int32_t cap);
MTK_API int32_t mtk_tensor_split_indices(mtk_ctx *ctx, mtk_tensor *x, const int64_t *indices, int32_t n,
                                         int64_t dim, mtk_tensor **out, int32_t cap);

/* torch.tile(x, dims[n]): repeat with dims padded by leading ones to x's
 * rank.  Errors: a negative dim. */
MTK_API mtk_tensor *mtk_tile(mtk_ctx *ctx, mtk_tensor *x, const int64_t *dims, int32_t n);

/* torch.repeat_interleave(x, repeats, dim): every element `repeats` times
 * along dim (MTK_INDEX_NO_DIM: of the flattened input).  _tensor: per
 * element repeats (a 0-dim or 1-D int tensor); the output size depends on
 * their values, so on meta `output_size` (>= 0; -1 for None) is required
 * (MTK_ERR_DATA_DEPENDENT otherwise). */
MTK_API mtk_tensor *mtk_repeat_interleave(mtk_ctx *ctx, mtk_tensor *x, int64_t repeats, int64_t dim);
MTK_API mtk_tensor *mtk_repeat_interleave_tensor(mtk_ctx *ctx, mtk_tensor *x, mtk_tensor *repeats, int64_t dim,
                                                 int64_t output_size);

/* ---------------------------------------------------------- reordering */

/* torch.roll(x, shifts[n], dims[n]); n_dims 0: roll the flattened tensor
 * (then n must be 1). */
MTK_API mtk_tensor *mtk_roll(mtk_ctx *ctx, mtk_tensor *x, const int64_t *shifts, int32_t n, const int64_t *dims,
                             int32_t n_dims);

/* torch.flip(x, dims[n]): reverses the listed dims (no repeats). */
MTK_API mtk_tensor *mtk_flip(mtk_ctx *ctx, mtk_tensor *x, const int64_t *dims, int32_t n);

/* torch.tril / triu(x, diagonal): zeroes above / below the diagonal of
 * the last two dims (x needs at least 2 dims). */
MTK_API mtk_tensor *mtk_tril(mtk_ctx *ctx, mtk_tensor *x, int64_t diagonal);
MTK_API mtk_tensor *mtk_triu(mtk_ctx *ctx, mtk_tensor *x, int64_t diagonal);

/* ------------------------------------------------------------ indexing */

/* torch.index_select(x, dim, index): index a 1-D (or 0-dim) int tensor. */
MTK_API mtk_tensor *mtk_index_select(mtk_ctx *ctx, mtk_tensor *x, int64_t dim, mtk_tensor *index);

/* torch.gather(x, dim, index): out[i][j] = x[index[i][j]][j] (dim 0);
 * the output has index's shape. */
MTK_API mtk_tensor *mtk_gather(mtk_ctx *ctx, mtk_tensor *x, int64_t dim, mtk_tensor *index);

/* torch.take_along_dim(x, indices, dim): gather after broadcasting x and
 * indices (int64) except along dim; MTK_INDEX_NO_DIM: of the flattened
 * tensors. */
MTK_API mtk_tensor *mtk_take_along_dim(mtk_ctx *ctx, mtk_tensor *x, mtk_tensor *indices, int64_t dim);

/* torch.scatter(x, dim, index, src): a copy of x with
 * out[index[i][j]][j] = src[i][j] (dim 0).  _value: a number instead of
 * src.  `reduce` NULL, "add" or "multiply" (torch's deprecated form).
 * scatter_add: the values are added. */
MTK_API mtk_tensor *mtk_scatter(mtk_ctx *ctx, mtk_tensor *x, int64_t dim, mtk_tensor *index, mtk_tensor *src,
                                const char *reduce);
MTK_API mtk_tensor *mtk_scatter_value(mtk_ctx *ctx, mtk_tensor *x, int64_t dim, mtk_tensor *index, double value,
                                      const char *reduce);
MTK_API mtk_tensor *mtk_scatter_add(mtk_ctx *ctx, mtk_tensor *x, int64_t dim, mtk_tensor *index, mtk_tensor *src);

/* torch.index_add(x, dim, index, source, alpha=alpha): a contiguous copy
 * of x with alpha * source added at the indexed positions of dim. */
MTK_API mtk_tensor *mtk_index_add(mtk_ctx *ctx, mtk_tensor *x, int64_t dim, mtk_tensor *index, mtk_tensor *source,
                                  double alpha);

/* torch.masked_fill(x, mask, value): a contiguous tensor of x and mask's
 * broadcast shape, `value` where mask (bool) is true.  _tensor: a 0-dim
 * value tensor. */
MTK_API mtk_tensor *mtk_masked_fill(mtk_ctx *ctx, mtk_tensor *x, mtk_tensor *mask, double value);
MTK_API mtk_tensor *mtk_masked_fill_tensor(mtk_ctx *ctx, mtk_tensor *x, mtk_tensor *mask, mtk_tensor *value);

/* F.embedding(input, weight, padding_idx): rows of the 2-D weight picked
 * by the int64/int32 input; shape input.shape + (weight.size(1),).
 * has_padding_idx false: None. */
MTK_API mtk_tensor *mtk_embedding(mtk_ctx *ctx, mtk_tensor *input, mtk_tensor *weight, bool has_padding_idx,
                                  int64_t padding_idx);

/* F.one_hot(input, num_classes): int64 input to an int64 tensor of shape
 * input.shape + (num_classes,).  num_classes -1 means max(input) + 1,
 * which depends on data: an error on meta. */
MTK_API mtk_tensor *mtk_one_hot(mtk_ctx *ctx, mtk_tensor *input, int64_t num_classes);

/* F.pad(x, pad[n], mode, value): pad[n] gives (left, right) pairs from
 * the last dim backwards.  mode "constant" (negative padding crops),
 * "reflect", "replicate" or "circular" (those pad the last 1-3 dims of a
 * 2-5-D tensor).  `value` is used by constant mode only. */
MTK_API mtk_tensor *mtk_pad(mtk_ctx *ctx, mtk_tensor *x, const int64_t *pad, int32_t n, const char *mode, double value);

/* -------------------------------------------------------------- sorting */

/* torch.sort(x, dim, descending, stable=stable): values and int64
 * indices (both written; NaN sorts as the largest).  False on error. */
MTK_API bool mtk_sort(mtk_ctx *ctx, mtk_tensor *x, int64_t dim, bool descending, bool stable, mtk_tensor **values,
                      mtk_tensor **indices);

/* torch.argsort(x, dim, descending, stable=stable): the indices alone. */
MTK_API mtk_tensor *mtk_argsort(mtk_ctx *ctx, mtk_tensor *x, int64_t dim, bool descending, bool stable);

/* torch.topk(x, k, dim, largest, sorted): the k largest (smallest)
 * values along dim and their int64 indices.  False on error. */
MTK_API bool mtk_topk(mtk_ctx *ctx, mtk_tensor *x, int64_t k, int64_t dim, bool largest, bool sorted, mtk_tensor **values,
                      mtk_tensor **indices);

#ifdef __cplusplus
}
#endif
#endif
