/* Typed C API of the creation ops.  Every function takes the context first,
 * returns NULL (error on the context) on failure, and passes a NULL tensor
 * argument through as NULL without a new error.
 *
 * Creation ops without a tensor input (mtk_zeros, mtk_arange, ...) make
 * their tensor on the context's default device (mtk_ctx_push_device): a
 * meta tensor has no data, a cpu tensor is allocated and filled.  A dtype
 * of MTK_DTYPE_UNDEFINED means the default: the context's default dtype
 * (mtk_ctx_push_dtype) for floating results, as torch.get_default_dtype().
 * The *_like functions make their tensor on the input's device, with its
 * shape, and with its strides when it is dense (torch.preserve_format). */
#ifndef MTK_OPS_CREATION_PUBLIC_H
#define MTK_OPS_CREATION_PUBLIC_H

#include "mtk/core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* torch.memory_format.  By name (ops called through the table) these are
 * the strings "contiguous_format", "channels_last", "channels_last_3d" and
 * "preserve_format", with or without a "torch." prefix. */
typedef enum mtk_memory_format {
    MTK_MEMORY_FORMAT_PRESERVE = 0,   /* keep the input's dense strides    */
    MTK_MEMORY_FORMAT_CONTIGUOUS,     /* row-major                          */
    MTK_MEMORY_FORMAT_CHANNELS_LAST,  /* NHWC order of a 4-D (N,C,H,W)     */
    MTK_MEMORY_FORMAT_CHANNELS_LAST_3D/* NDHWC order of a 5-D (N,C,D,H,W)  */
} mtk_memory_format;

/* torch.empty(shape): uninitialized memory on cpu.  Errors: a negative
 * size ("Trying to create tensor with negative dimension -1: [-1, 3]"),
 * too many dims, a size overflow. */
MTK_API mtk_tensor *mtk_empty(mtk_ctx *ctx, const int64_t *shape, int32_t ndim, mtk_dtype dtype);

/* torch.zeros(shape) and torch.ones(shape); errors as mtk_empty. */
MTK_API mtk_tensor *mtk_zeros(mtk_ctx *ctx, const int64_t *shape, int32_t ndim, mtk_dtype dtype);
MTK_API mtk_tensor *mtk_ones(mtk_ctx *ctx, const int64_t *shape, int32_t ndim, mtk_dtype dtype);

/* torch.full(shape, fill_value) with a float fill value (dtype UNDEFINED:
 * the default dtype) or an integer one (mtk_full_int; UNDEFINED: int64).
 * On cpu a value the dtype cannot hold is an error ("value cannot be
 * converted to type int8_t without overflow"). */
MTK_API mtk_tensor *mtk_full(mtk_ctx *ctx, const int64_t *shape, int32_t ndim, double fill_value,
                             mtk_dtype dtype);
MTK_API mtk_tensor *mtk_full_int(mtk_ctx *ctx, const int64_t *shape, int32_t ndim, int64_t fill_value,
                                 mtk_dtype dtype);

/* torch.arange(start, end, step) with float arguments (UNDEFINED: the
 * default dtype) or integer ones (mtk_arange_int; UNDEFINED: int64).  The
 * length is ceil((end - start) / step) computed as torch does; the cpu
 * values equal torch's bit for bit.  Errors: step 0 ("step must be
 * nonzero"), a step whose sign disagrees with end - start, a non-finite
 * bound or step. */
MTK_API mtk_tensor *mtk_arange(mtk_ctx *ctx, double start, double end, double step, mtk_dtype dtype);
MTK_API mtk_tensor *mtk_arange_int(mtk_ctx *ctx, int64_t start, int64_t end, int64_t step, mtk_dtype dtype);

/* torch.linspace(start, end, steps): `steps` values from start to end,
 * computed from both ends as torch does.  Errors: steps < 0. */
MTK_API mtk_tensor *mtk_linspace(mtk_ctx *ctx, double start, double end, int64_t steps, mtk_dtype dtype);

/* torch.eye(n, m): an n x m identity; m < 0 means m = n.  Errors: n < 0. */
MTK_API mtk_tensor *mtk_eye(mtk_ctx *ctx, int64_t n, int64_t m, mtk_dtype dtype);

/* torch.empty_like / zeros_like / ones_like / full_like(x): x's shape, its
 * device, its dtype unless `dtype` is given, and its strides when x is
 * non-overlapping and dense (else dense strides in x's stride order). */
MTK_API mtk_tensor *mtk_empty_like(mtk_ctx *ctx, const mtk_tensor *x, mtk_dtype dtype);
MTK_API mtk_tensor *mtk_zeros_like(mtk_ctx *ctx, const mtk_tensor *x, mtk_dtype dtype);
MTK_API mtk_tensor *mtk_ones_like(mtk_ctx *ctx, const mtk_tensor *x, mtk_dtype dtype);
MTK_API mtk_tensor *mtk_full_like(mtk_ctx *ctx, const mtk_tensor *x, double fill_value, mtk_dtype dtype);

#ifdef __cplusplus
}
#endif
#endif
