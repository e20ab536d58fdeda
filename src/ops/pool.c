/* Pooling: F.max_pool1d/2d/3d, F.avg_pool1d/2d/3d and the adaptive
 * average/max pools — the rows' info, the helpers the plans share, the
 * plan dispatch, meta function and cost.  The plans are in pool_window.c
 * and pool_adaptive.c, the typed API in pool_api.c, the kernels in
 * pool_cpu.c.
 *
 * As in torch, the 1-D ops (except max_pool1d without indices) run as the
 * 2-D op on input.unsqueeze(-2) and squeeze the result, so their checks
 * and messages speak of the 2-D shapes.  Outputs take the input's
 * channels-last layout where torch's meta kernels do (2-D max/avg/adaptive
 * pools, 3-D max pool, the all-ones adaptive average pool). */
#include "ops/pool_internal.h"
#include "ops/op_util.h"

#include <stdio.h>
#include <string.h>

const mtk_pool_info mtk_max_pool1d_info = { MTK_POOL_MAX, 1 };
const mtk_pool_info mtk_max_pool2d_info = { MTK_POOL_MAX, 2 };
const mtk_pool_info mtk_max_pool3d_info = { MTK_POOL_MAX, 3 };
const mtk_pool_info mtk_avg_pool1d_info = { MTK_POOL_AVG, 1 };
const mtk_pool_info mtk_avg_pool2d_info = { MTK_POOL_AVG, 2 };
const mtk_pool_info mtk_avg_pool3d_info = { MTK_POOL_AVG, 3 };
const mtk_pool_info mtk_adaptive_max_pool1d_info = { MTK_POOL_ADAPTIVE_MAX, 1 };
const mtk_pool_info mtk_adaptive_max_pool2d_info = { MTK_POOL_ADAPTIVE_MAX, 2 };
const mtk_pool_info mtk_adaptive_max_pool3d_info = { MTK_POOL_ADAPTIVE_MAX, 3 };
const mtk_pool_info mtk_adaptive_avg_pool1d_info = { MTK_POOL_ADAPTIVE_AVG, 1 };
const mtk_pool_info mtk_adaptive_avg_pool2d_info = { MTK_POOL_ADAPTIVE_AVG, 2 };
const mtk_pool_info mtk_adaptive_avg_pool3d_info = { MTK_POOL_ADAPTIVE_AVG, 3 };

/* ------------------------------------------------------------ helpers */

mtk_pool_input mtk_pool_input_as_is(const mtk_tensor *t)
{
    mtk_pool_input in;
    in.ndim = t->ndim;
    memcpy(in.shape, t->shape, sizeof in.shape);
    memcpy(in.stride, t->stride, sizeof in.stride);
    return in;
}

mtk_pool_input mtk_pool_input_unsqueezed(const mtk_tensor *t)
{
    mtk_pool_input in;
    int32_t at = t->ndim - 1;
    in.ndim = t->ndim + 1;
    for (int32_t i = 0, j = 0; i < in.ndim; i++) {
        if (i == at) {
            in.shape[i] = 1;
            in.stride[i] = ops_wrap_mul(t->shape[at], t->stride[at]); /* torch's unsqueeze */
            continue;
        }
        in.shape[i] = t->shape[j], in.stride[i] = t->stride[j];
        j++;
    }
    return in;
}

bool mtk_pool_like_channels_last(const mtk_pool_input *in)
{
    return mtk_strides_suggest_channels_last(in->ndim, in->shape, in->stride);
}

bool mtk_pool3d_unbatched_channels_last(const mtk_tensor *t)
{
    if (t->ndim != 4) return false;
    mtk_tensor u;
    memset(&u, 0, sizeof u);
    u.ndim = 5;
    u.shape[0] = 1, u.stride[0] = t->shape[0] * t->stride[0]; /* unsqueeze(0) */
    for (int32_t i = 0; i < 4; i++) u.shape[i + 1] = t->shape[i], u.stride[i + 1] = t->stride[i];
    return !mtk_tensor_is_contiguous(&u) && mtk_tensor_is_channels_last_3d(&u);
}

bool mtk_pool_check1d(mtk_ctx *ctx, const mtk_op_call *call, int arg, const char *name, bool may_be_empty,
                    int64_t *value, bool *empty)
{
    int64_t v[MTK_MAX_DIMS];
    int32_t c = 0;
    if (!arg_is_none(call, arg) && !mtk_conv_read_ints(ctx, call, arg, name, 1, v, &c)) return false;
    *empty = c == 0;
    if (c == 0 && may_be_empty) return true;
    if (c != 1)
        return mtk_conv_error(ctx, call, MTK_ERR_SHAPE, "%s() argument '%s' should contain one int (got %d)", call->op->name, name,
                   (int)c);
    *value = v[0];
    return true;
}

bool mtk_pool_read_truth(mtk_ctx *ctx, const mtk_op_call *call, int arg, bool *out)
{
    const mtk_value *v = &call->args[arg];
    switch (v->kind) {
    case MTK_VALUE_NONE: *out = false; return true;
    case MTK_VALUE_BOOL: *out = v->as.b; return true;
    case MTK_VALUE_INT: *out = v->as.i != 0; return true;
    case MTK_VALUE_FLOAT: *out = v->as.f != 0; return true;
    case MTK_VALUE_STRING: *out = v->as.s[0] != '\0'; return true;
    case MTK_VALUE_LIST:
    case MTK_VALUE_TUPLE: *out = v->as.list.count > 0; return true;
    default:
        return mtk_conv_error(ctx, call, MTK_ERR_INVALID_ARGUMENT,
                              "argument 'return_indices' must be a bool, not %s", mtk_value_type_name(v));
    }
}

bool mtk_pool_check_dim_range(mtk_ctx *ctx, const mtk_op_call *call, const mtk_tensor *t)
{
    if (t->ndim >= 2 && t->ndim <= 3) return true;
    return mtk_conv_error(ctx, call, MTK_ERR_SHAPE,
               "Expected 2 to 3 dimensions, but got %d-dimensional tensor for argument #1 'self' (while checking "
               "arguments for %s)",
               (int)t->ndim, call->op->name);
}

void mtk_pool_set_output_layout(mtk_pool_plan *p, const int64_t *shape, int32_t ndim, bool channels_last,
                              bool squeeze)
{
    int64_t stride[MTK_MAX_DIMS];
    if (channels_last) mtk_channels_last_strides(shape, ndim, stride);
    else mtk_contiguous_strides(shape, ndim, stride);
    p->out_ndim = squeeze ? ndim - 1 : ndim;
    for (int32_t i = 0, j = 0; i < ndim; i++) {
        if (squeeze && i == ndim - 2) continue;
        p->out_shape[j] = shape[i], p->out_stride[j] = stride[i];
        j++;
    }
}

void mtk_pool_set_geometry(mtk_pool_plan *p, const mtk_pool_input *in, int32_t spatial, const int64_t *out_size)
{
    int32_t off = 3 - spatial;
    for (int32_t i = 0; i < 3; i++) {
        p->in_size[i] = p->out_size[i] = p->kernel[i] = p->stride[i] = p->dilation[i] = 1;
        p->pad[i] = 0;
    }
    for (int32_t i = 0; i < spatial; i++) {
        p->in_size[off + i] = in->shape[in->ndim - spatial + i];
        p->out_size[off + i] = out_size[i];
    }
    p->channels = in->ndim > spatial ? in->shape[in->ndim - spatial - 1] : 1;
    p->batch = 1;
    for (int32_t i = 0; i < in->ndim - spatial - 1; i++) p->batch *= in->shape[i];
}

bool mtk_pool_dtype_error(mtk_ctx *ctx, const mtk_op_call *call, const char *kernel, mtk_dtype d)
{
    return mtk_conv_error(ctx, call, MTK_ERR_DTYPE, "\"%s\" not implemented for '%s'", kernel, mtk_dtype_cpp_name(d));
}

bool mtk_pool_is_float(mtk_dtype d)
{
    return d == MTK_FLOAT32 || d == MTK_FLOAT64 || d == MTK_FLOAT16 || d == MTK_BFLOAT16;
}

/* ---------------------------------------------------------------- plan */

bool mtk_pool_make_plan(mtk_ctx *ctx, const mtk_op_call *call, bool for_cpu, mtk_pool_plan *p)
{
    const mtk_pool_info *info = call->op->info;
    memset(p, 0, sizeof *p);
    p->kind = info->kind;
    p->spatial = info->spatial;
    switch (info->kind) {
    case MTK_POOL_MAX: return mtk_pool_plan_max(ctx, call, for_cpu, info->spatial, p);
    case MTK_POOL_AVG: return mtk_pool_plan_avg(ctx, call, for_cpu, info->spatial, p);
    case MTK_POOL_ADAPTIVE_AVG: return mtk_pool_plan_adaptive_avg(ctx, call, for_cpu, info->spatial, p);
    case MTK_POOL_ADAPTIVE_MAX: return mtk_pool_plan_adaptive_max(ctx, call, for_cpu, info->spatial, p);
    }
    return false;
}

bool mtk_pool_meta(mtk_op_call *call)
{
    mtk_pool_plan plan;
    if (!mtk_pool_make_plan(call->ctx, call, call->device == MTK_DEVICE_CPU, &plan)) return false;
    const mtk_tensor *input = arg_tensor(call, ARG_INPUT);
    int32_t nout = plan.with_indices ? 2 : 1;
    if (!mtk_call_set_outputs(call, nout)) return false;
    for (int32_t i = 0; i < nout; i++) {
        mtk_tensor *out = mtk_tensor_new(call->ctx, i == 0 ? input->dtype : MTK_INT64, plan.out_shape, plan.out_ndim,
                                         plan.out_stride, call->device);
        if (!out) return false;
        mtk_call_output(call, i, out, -1);
    }
    return true;
}

mtk_op_cost mtk_pool_cost(const mtk_op_call *call)
{
    mtk_op_cost cost = { 0, 0 };
    if (call->nout > 0 && call->out[0]) cost.elementwise = mtk_tensor_numel(call->out[0]);
    return cost;
}
