/* Metadata-only element-wise steps for the loss ops (see nn_loss.h). */
#include "ops/nn_loss.h"
#include "ops/op_util.h"

#include <string.h>

mtk_tensor nn_sim_of(const mtk_tensor *t)
{
    mtk_tensor s;
    memset(&s, 0, sizeof s);
    s.dtype = t->dtype;
    s.ndim = t->ndim;
    s.device = t->device;
    s.flags = t->flags;
    memcpy(s.shape, t->shape, sizeof s.shape);
    memcpy(s.stride, t->stride, sizeof s.stride);
    return s;
}

mtk_tensor nn_sim_expand(const mtk_tensor *t, const int64_t *shape, int32_t ndim)
{
    mtk_tensor s = nn_sim_of(t);
    if (t->ndim == ndim && memcmp(t->shape, shape, (size_t)ndim * sizeof *shape) == 0) return s;
    mtk_expand_strides(t, shape, ndim, s.stride);
    s.ndim = ndim;
    memcpy(s.shape, shape, (size_t)ndim * sizeof *shape);
    s.flags = 0;
    return s;
}

mtk_tensor nn_sim_to(const mtk_tensor *t, mtk_dtype dtype)
{
    mtk_tensor s = nn_sim_of(t);
    if (t->dtype == dtype) return s;
    mtk_dense_strides_like(t, s.stride);
    s.dtype = dtype;
    s.flags = 0;
    return s;
}

mtk_tensor nn_sim_scalar(mtk_device device, mtk_dtype dtype)
{
    mtk_tensor s;
    memset(&s, 0, sizeof s);
    s.dtype = dtype;
    s.device = device;
    return s;
}

/* prims.convert_element_type, as torch's element-wise references convert
 * an operand to the compute dtype: dense strides kept, others laid out by
 * a unary op's rule */
static mtk_tensor convert(const mtk_tensor *t, mtk_dtype dtype)
{
    mtk_tensor s = nn_sim_of(t);
    if (t->dtype == dtype || t->ndim == 0 || mtk_tensor_is_non_overlapping_and_dense(t)) return s;
    const mtk_tensor *ops[1] = { t };
    mtk_ti_output_strides(ops, 1, t->shape, t->ndim, s.stride);
    return s;
}

/* TensorIterator's fast setup on cpu, for operands all of the output's
 * shape: all contiguous give contiguous strides, else all channels-last
 * channels-last ones, else all non-overlapping and dense with the same
 * strides those strides */
static bool cpu_fast_strides(const mtk_tensor *const *ops, int32_t n, const int64_t *shape, int32_t ndim,
                             int64_t *stride_out)
{
    bool contiguous = true, channels_last = ndim == 4 || ndim == 5, same_dense = true;
    for (int32_t k = 0; k < n; k++) {
        const mtk_tensor *t = ops[k];
        if (t->ndim != ndim || memcmp(t->shape, shape, (size_t)ndim * sizeof *shape) != 0) return false;
        contiguous &= mtk_tensor_is_contiguous(t);
        channels_last &= ndim == 4 ? mtk_tensor_is_channels_last(t) : mtk_tensor_is_channels_last_3d(t);
        same_dense &= mtk_tensor_is_non_overlapping_and_dense(t) &&
                      memcmp(t->stride, ops[0]->stride, (size_t)ndim * sizeof *shape) == 0;
    }
    if (contiguous) mtk_contiguous_strides(shape, ndim, stride_out);
    else if (channels_last) mtk_channels_last_strides(shape, ndim, stride_out);
    else if (same_dense) memcpy(stride_out, ops[0]->stride, (size_t)ndim * sizeof *shape);
    return contiguous || channels_last || same_dense;
}

bool nn_sim_ew(mtk_op_call *call, mtk_dtype dtype, const mtk_tensor *a, const mtk_tensor *b, mtk_tensor *out)
{
    int64_t shape[MTK_MAX_DIMS];
    int32_t ndim = a->ndim;
    memcpy(shape, a->shape, sizeof shape);
    if (b && !mtk_broadcast_shapes(call->ctx, call->op->name, a->shape, a->ndim, b->shape, b->ndim, shape, &ndim))
        return false;
    mtk_tensor s;
    memset(&s, 0, sizeof s);
    s.dtype = dtype;
    s.device = a->device;
    s.ndim = ndim;
    memcpy(s.shape, shape, sizeof shape);
    if (a->device == MTK_DEVICE_CPU) {
        /* torch's cpu TensorIterator: inputs of another dtype become
         * Tensor.to(common dtype) first; then its fast path */
        mtk_tensor ca = nn_sim_to(a, dtype), cb = b ? nn_sim_to(b, dtype) : ca;
        const mtk_tensor *ops[2] = { &ca, &cb };
        if (cpu_fast_strides(ops, b ? 2 : 1, shape, ndim, s.stride)) {
            *out = s;
            return true;
        }
        mtk_ti_output_strides(ops, b ? 2 : 1, shape, ndim, s.stride);
        *out = s;
        return true;
    }
    /* torch's references convert their operands to the opmath dtype */
    mtk_dtype compute = nn_opmath_dtype(dtype);
    mtk_tensor ca = convert(a, compute), cb = b ? convert(b, compute) : ca;
    const mtk_tensor *ops[2] = { &ca, &cb };
    mtk_ti_output_strides(ops, b ? 2 : 1, shape, ndim, s.stride);
    *out = s;
    return true;
}

mtk_dtype nn_opmath_dtype(mtk_dtype dtype)
{
    return dtype == MTK_FLOAT16 || dtype == MTK_BFLOAT16 ? MTK_FLOAT32 : dtype;
}
