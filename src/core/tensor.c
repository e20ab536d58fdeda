/* Tensor metadata: creation in the arena, storage attachment, extents. */
#include "mtk/core.h"
#include "ctx_internal.h"

#include <string.h>

/* PyTorch's storage-size rule for a fresh contiguous tensor: the product
 * of the sizes (in uint64, an overflow anywhere counts even when a later
 * size is 0) times the element size must fit in int64. */
static bool check_storage_size(mtk_ctx *ctx, const int64_t *shape, int32_t ndim, size_t esize)
{
    uint64_t bytes = 1;
    bool overflow = false;
    for (int32_t i = 0; i < ndim; i++) overflow |= __builtin_mul_overflow(bytes, (uint64_t)shape[i], &bytes);
    overflow |= __builtin_mul_overflow(bytes, (uint64_t)esize, &bytes);
    if (overflow || bytes > (uint64_t)INT64_MAX) {
        char buf[256];
        return mtk_error(ctx, MTK_ERR_OVERFLOW, "tensor: Storage size calculation overflowed with sizes=%s "
                         "(the size in bytes overflows int64)",
                         mtk_shape_list_str(shape, ndim, buf, sizeof buf));
    }
    return true;
}

mtk_tensor *mtk_tensor_new(mtk_ctx *ctx, mtk_dtype dtype, const int64_t *shape, int32_t ndim,
                           const int64_t *stride, mtk_device device)
{
    if (!mtk_dtype_get(dtype)) {
        mtk_error(ctx, MTK_ERR_DTYPE, "invalid dtype %d", (int)dtype);
        return NULL;
    }
    if (!mtk_shape_check(ctx, "tensor", shape, ndim, NULL)) return NULL;
    if (!stride && !check_storage_size(ctx, shape, ndim, mtk_dtype_size(dtype))) return NULL;
    mtk_tensor *t = mtk_ctx_alloc(ctx, sizeof *t);
    if (!t) return NULL;
    t->ctx = ctx;
    t->dtype = dtype;
    t->ndim = ndim;
    t->device = device;
    for (int32_t i = 0; i < ndim; i++) t->shape[i] = shape[i]; /* a few dims: no memcpy call */
    if (stride) {
        for (int32_t i = 0; i < ndim; i++) t->stride[i] = stride[i];
    } else {
        mtk_contiguous_strides(shape, ndim, t->stride);
    }
    return t;
}

bool mtk_tensor_extent(const mtk_tensor *t, int64_t *lo, int64_t *hi)
{
    *lo = *hi = 0;
    if (mtk_tensor_numel(t) == 0) return true;
    int64_t min = t->storage_offset, max = t->storage_offset;
    for (int32_t i = 0; i < t->ndim; i++) {
        int64_t span;
        if (__builtin_mul_overflow(t->shape[i] - 1, t->stride[i], &span)) return false;
        if (span < 0) {
            if (__builtin_add_overflow(min, span, &min)) return false;
        } else if (__builtin_add_overflow(max, span, &max)) {
            return false;
        }
    }
    *lo = min;
    *hi = max + 1;
    return true;
}

bool mtk_tensor_alloc_storage(mtk_tensor *t)
{
    mtk_ctx *ctx = t->ctx;
    int64_t lo, hi;
    size_t esize = mtk_dtype_size(t->dtype);
    if (!mtk_tensor_extent(t, &lo, &hi) || (uint64_t)hi > SIZE_MAX / esize)
        return mtk_error(ctx, MTK_ERR_OVERFLOW, "tensor storage size overflows");
    if (lo < 0)
        return mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT,
                         "the tensor's strides and offset reach before the start of its storage");
    mtk_storage *s = mtk_storage_new(ctx, (size_t)hi * esize);
    if (!s) return false;
    if (!mtk_ctx_hold_storage(ctx, s)) {
        mtk_storage_release(s);
        return false;
    }
    t->storage = s;
    return true;
}

bool mtk_tensor_set_storage(mtk_tensor *t, mtk_storage *storage)
{
    int64_t lo, hi;
    size_t esize = mtk_dtype_size(t->dtype);
    if (!mtk_tensor_extent(t, &lo, &hi) || lo < 0 || (uint64_t)hi > SIZE_MAX / esize ||
        (size_t)hi * esize > mtk_storage_nbytes(storage))
        return mtk_error(t->ctx, MTK_ERR_INVALID_ARGUMENT,
                         "storage of %zu bytes is too small for the tensor's shape and strides",
                         mtk_storage_nbytes(storage));
    if (!mtk_ctx_hold_storage(t->ctx, storage)) return false;
    mtk_storage_retain(storage);
    t->storage = storage;
    return true;
}

mtk_tensor *mtk_tensor_from_data(mtk_ctx *ctx, mtk_dtype dtype, const int64_t *shape, int32_t ndim,
                                 const int64_t *stride, void *data)
{
    mtk_tensor *t = mtk_tensor_new(ctx, dtype, shape, ndim, stride, MTK_DEVICE_CPU);
    if (!t) return NULL;
    int64_t lo, hi;
    size_t esize = mtk_dtype_size(dtype);
    if (!mtk_tensor_extent(t, &lo, &hi) || (uint64_t)hi > SIZE_MAX / esize) {
        mtk_error(ctx, MTK_ERR_OVERFLOW, "from_data: the tensor's extent in bytes overflows");
        return NULL;
    }
    if (lo < 0) {
        mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "from_data: strides reach before the data pointer");
        return NULL;
    }
    mtk_storage *s = mtk_storage_borrow(ctx, data, (size_t)hi * esize);
    if (!s) return NULL;
    bool ok = mtk_tensor_set_storage(t, s);
    mtk_storage_release(s); /* the tensor holds its own reference now */
    return ok ? t : NULL;
}

mtk_tensor *mtk_tensor_alias(mtk_tensor *t)
{
    if (!t) return NULL;
    mtk_tensor *a = mtk_ctx_alloc(t->ctx, sizeof *a);
    if (!a) return NULL;
    *a = *t;
    a->flags &= ~(uint32_t)(MTK_TENSOR_PARAMETER | MTK_TENSOR_BUFFER);
    if (a->storage && !mtk_ctx_hold_storage(t->ctx, a->storage)) return NULL;
    mtk_storage_retain(a->storage);
    return a;
}

int64_t mtk_tensor_numel(const mtk_tensor *t) { return mtk_shape_numel(t->shape, t->ndim); }

size_t mtk_tensor_nbytes(const mtk_tensor *t)
{
    return (size_t)mtk_tensor_numel(t) * mtk_dtype_size(t->dtype);
}

bool mtk_tensor_is_meta(const mtk_tensor *t) { return t->device == MTK_DEVICE_META; }

void *mtk_tensor_data(const mtk_tensor *t)
{
    if (!t->storage) return NULL;
    /* (wraps only for an empty view with a bogus offset, never read) */
    uint64_t bytes = (uint64_t)t->storage_offset * (uint64_t)mtk_dtype_size(t->dtype);
    return (char *)mtk_storage_data(t->storage) + (int64_t)bytes;
}
