/* torch.as_strided(input, size, stride, storage_offset=None): a view of
 * input's storage with any geometry.
 *
 * PyTorch's checks, in its order: size and stride of equal length
 * ("mismatch in length of strides and shape"), no negative stride, a
 * storage offset >= 0 (None: the input's own), then the sizes: on meta a
 * negative or overflowing size is "numel: integer multiplication
 * overflow" and the storage is not consulted; on cpu the bytes the view
 * can reach must lie inside the input's storage ("setStorage: sizes [3,
 * 2], strides [1, 3], storage offset 1, and itemsize 4 requiring a storage
 * size of 28 are out of bounds for storage of size 24"). */
#include "ops/view.h"
#include "ops/op_util.h"
#include "ops/registry.h"
#include "mtk/ops/view.h"

#include <stdio.h>

/* "[3, 2]" */
static const char *list_str(const int64_t *v, int32_t n, char *buf, size_t cap)
{
    return mtk_shape_list_str(v, n, buf, cap);
}

/* Bytes a view reaches from the storage's start: itemsize * (offset + 1 +
 * sum((size - 1) * stride)), 0 when a size is 0; false on overflow or a
 * negative size. */
static bool reach_bytes(const int64_t *size, const int64_t *stride, int32_t n, int64_t offset, int64_t itemsize,
                        int64_t *bytes)
{
    int64_t last = 0; /* the farthest element's index, relative to offset */
    for (int32_t i = 0; i < n; i++) {
        if (size[i] < 0) return false;
        if (size[i] == 0) {
            *bytes = 0;
            for (int32_t k = i + 1; k < n; k++)
                if (size[k] < 0) return false;
            return true;
        }
        int64_t step;
        if (__builtin_mul_overflow(size[i] - 1, stride[i], &step) || __builtin_add_overflow(last, step, &last))
            return false;
    }
    int64_t elems;
    if (__builtin_add_overflow(last, offset, &elems) || __builtin_add_overflow(elems, 1, &elems)) return false;
    return !__builtin_mul_overflow(elems, itemsize, bytes);
}

bool mtk_as_strided_meta(mtk_op_call *call)
{
    const mtk_tensor *x = arg_tensor(call, 0);
    int64_t size[MTK_MAX_DIMS], stride[MTK_MAX_DIMS];
    int32_t n = mtk_view_ints(call, 1, size, "size");
    if (n < 0) return false;
    int32_t m = mtk_view_ints(call, 2, stride, "stride");
    if (m < 0) return false;
    char a[256], b[256];
    if (n != m) return mtk_call_error(call, MTK_ERR_SHAPE, "mismatch in length of strides and shape");
    for (int32_t i = 0; i < n; i++)
        if (stride[i] < 0)
            return mtk_call_error(call, MTK_ERR_INVALID_ARGUMENT,
                                  "as_strided: Negative strides are not supported at the moment, got strides: %s",
                                  list_str(stride, n, a, sizeof a));
    int64_t offset = arg_is_none(call, 3) ? x->storage_offset : arg_int(call, 3);
    if (offset < 0)
        return mtk_call_error(call, MTK_ERR_INVALID_ARGUMENT, "Tensor: invalid storage offset %lld", (long long)offset);
    int64_t itemsize = (int64_t)mtk_dtype_size(x->dtype), bytes = 0;
    bool fits = reach_bytes(size, stride, n, offset, itemsize, &bytes);
    if (x->device == MTK_DEVICE_META) {
        int64_t numel = 1;
        for (int32_t i = 0; i < n; i++)
            if (size[i] < 0 || __builtin_mul_overflow(numel, size[i], &numel))
                return mtk_call_error(call, MTK_ERR_INVALID_ARGUMENT, "numel: integer multiplication overflow (size %s)",
                                      list_str(size, n, a, sizeof a));
    } else {
        if (!fits)
            return mtk_call_error(call, MTK_ERR_SHAPE, "Storage size calculation overflowed with sizes=%s and strides=%s",
                                  list_str(size, n, a, sizeof a), list_str(stride, n, b, sizeof b));
        int64_t have = x->storage ? (int64_t)mtk_storage_nbytes(x->storage) : 0;
        if (bytes > have)
            return mtk_call_error(call, MTK_ERR_SHAPE,
                                  "setStorage: sizes %s, strides %s, storage offset %lld, and itemsize %lld requiring "
                                  "a storage size of %lld are out of bounds for storage of size %lld",
                                  list_str(size, n, a, sizeof a), list_str(stride, n, b, sizeof b), (long long)offset,
                                  (long long)itemsize, (long long)bytes, (long long)have);
    }
    return mtk_view_single(call, x, size, stride, n, offset);
}

mtk_tensor *mtk_as_strided(mtk_ctx *ctx, mtk_tensor *x, const int64_t *size, const int64_t *stride, int32_t ndim,
                           int64_t storage_offset)
{
    if (!x) return NULL;
    mtk_op_call call;
    mtk_op_call_init(&call, ctx, mtk_op_by_id(OPID_AS_STRIDED));
    if (ndim < 0 || ndim > MTK_MAX_DIMS) {
        mtk_error(ctx, MTK_ERR_SHAPE, "as_strided: %d dims is more than mtk supports (%d)", (int)ndim, MTK_MAX_DIMS);
        return NULL;
    }
    call.args[0] = mtk_value_tensor(x);
    call.args[1] = mtk_value_int_list(ctx, size, ndim);
    call.args[2] = mtk_value_int_list(ctx, stride, ndim);
    call.args[3] = storage_offset == MTK_AS_STRIDED_OWN_OFFSET ? mtk_value_none() : mtk_value_int(storage_offset);
    if (call.args[1].kind == MTK_VALUE_NONE || call.args[2].kind == MTK_VALUE_NONE) return NULL;
    return mtk_op_run_tensor(&call);
}
