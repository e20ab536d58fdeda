/* Tensor.repeat(*repeats): tiles the input; a fresh contiguous tensor,
 * never a view. */
#include "ops/view.h"
#include "ops/registry.h"
#include "ops/op_util.h"
#include "core/scalar.h"
#include "mtk/ops/view.h"

#include <string.h>

bool mtk_repeat_meta(mtk_op_call *call)
{
    const mtk_tensor *x = arg_tensor(call, 0);
    int64_t repeats[MTK_MAX_DIMS], shape[MTK_MAX_DIMS];
    int32_t n = mtk_view_ints(call, 1, repeats, "repeats");
    if (n < 0) return false;
    if (n < x->ndim)
        return mtk_call_error(call, MTK_ERR_SHAPE,
                              "Number of dimensions of repeat dims can not be smaller than number of dimensions of "
                              "tensor");
    for (int32_t i = 0; i < n; i++)
        if (repeats[i] < 0)
            return mtk_call_error(call, MTK_ERR_SHAPE, "Repeats cannot be negative, found %lld at index %d",
                                  (long long)repeats[i], (int)i);
    /* x's shape, padded with leading ones, times the repeats */
    int32_t lead = n - x->ndim;
    for (int32_t i = 0; i < n; i++) {
        int64_t size = i < lead ? 1 : x->shape[i - lead];
        if (__builtin_mul_overflow(size, repeats[i], &shape[i]))
            return mtk_call_error(call, MTK_ERR_OVERFLOW, "the repeated size of dim %d overflows int64", (int)i);
    }
    if (!mtk_shape_check(call->ctx, call->op->name, shape, n, NULL)) return false;
    return mtk_view_fresh_output(call, x, shape, n, NULL);
}

/* Copies tile by tile when 2 * ndim dims do not fit a strided copy:
 * every output element reads x at (index mod x's size) per dim. */
static void repeat_elementwise(mtk_tensor *out, const mtk_tensor *x)
{
    int32_t lead = out->ndim - x->ndim;
    size_t esize = mtk_dtype_size(out->dtype);
    int64_t numel = mtk_tensor_numel(out), index[MTK_MAX_DIMS] = { 0 };
    char *dst = mtk_tensor_data(out);
    const char *src = mtk_tensor_data(x);
    for (int64_t k = 0; k < numel; k++) {
        int64_t offset = 0;
        for (int32_t d = 0; d < x->ndim; d++) offset += (index[lead + d] % x->shape[d]) * x->stride[d];
        memcpy(dst + (size_t)k * esize, src + offset * (int64_t)esize, esize);
        for (int32_t d = out->ndim - 1; d >= 0 && ++index[d] == out->shape[d]; d--) index[d] = 0;
    }
}

bool mtk_repeat_cpu(mtk_op_call *call)
{
    mtk_tensor *out = call->out[0]; /* contiguous, shape[i] = repeats[i] * padded x shape[i] */
    const mtk_tensor *x = arg_tensor(call, 0);
    int32_t lead = out->ndim - x->ndim;
    if (mtk_tensor_numel(out) == 0) return true;
    if (2 * x->ndim + lead > MTK_MAX_DIMS) {
        repeat_elementwise(out, x);
        return true;
    }
    /* View out as (lead dims..., r0, s0, r1, s1, ...) and copy x broadcast
     * over the r dims: tile dims get stride 0 in the source. */
    mtk_tensor dst = *out, src = *x;
    int32_t k = 0;
    for (int32_t i = 0; i < lead; i++) {
        dst.shape[k] = src.shape[k] = out->shape[i];
        dst.stride[k] = out->stride[i];
        src.stride[k++] = 0;
    }
    for (int32_t d = 0; d < x->ndim; d++) {
        int64_t size = x->shape[d], reps = out->shape[lead + d] / size;
        dst.shape[k] = src.shape[k] = reps; /* the tile index */
        dst.stride[k] = out->stride[lead + d] * size;
        src.stride[k++] = 0;
        dst.shape[k] = src.shape[k] = size; /* the index inside a tile */
        dst.stride[k] = out->stride[lead + d];
        src.stride[k++] = x->stride[d];
    }
    dst.ndim = src.ndim = k;
    mtk_copy_strided(&dst, &src);
    return true;
}

mtk_tensor *mtk_repeat(mtk_ctx *ctx, mtk_tensor *x, const int64_t *repeats, int32_t n)
{
    if (!x) return NULL;
    mtk_op_call call;
    mtk_op_call_init(&call, ctx, mtk_op_by_id(OPID_REPEAT));
    if (n < 0 || n > MTK_MAX_DIMS) {
        mtk_call_error(&call, MTK_ERR_SHAPE, "%d repeats is more than mtk supports (%d)", (int)n, MTK_MAX_DIMS);
        return NULL;
    }
    call.args[0] = mtk_value_tensor(x);
    call.args[1] = mtk_value_int_list(ctx, repeats, n);
    if (call.args[1].kind == MTK_VALUE_NONE) return NULL;
    return mtk_op_run_tensor(&call);
}
