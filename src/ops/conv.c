/* Convolutions: F.conv1d/2d/3d and F.conv_transpose1d/2d/3d — the table
 * rows' info, meta function, FLOPs, typed API and the helpers the conv
 * family shares.  The plan (validation and output shape) is in
 * conv_plan.c, the cpu kernels in conv_cpu.c. */
#include "ops/conv.h"
#include "ops/op_util.h"
#include "ops/registry.h"
#include "mtk/ops/conv.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

const mtk_conv_info mtk_conv1d_info = { 1, false };
const mtk_conv_info mtk_conv2d_info = { 2, false };
const mtk_conv_info mtk_conv3d_info = { 3, false };
const mtk_conv_info mtk_conv_transpose1d_info = { 1, true };
const mtk_conv_info mtk_conv_transpose2d_info = { 2, true };
const mtk_conv_info mtk_conv_transpose3d_info = { 3, true };

/* ------------------------------------------------------------ shared */

bool mtk_conv_error(mtk_ctx *ctx, const mtk_op_call *call, mtk_status status, const char *fmt, ...)
{
    if (!ctx) return false;
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return mtk_error(ctx, status, "%s: %s", call->op->name, msg);
}

/* c10::ScalarType names ("expected scalar type Float but found Double") */
const char *mtk_conv_scalar_type_name(mtk_dtype d)
{
    switch (d) {
    case MTK_FLOAT32: return "Float";
    case MTK_FLOAT64: return "Double";
    case MTK_FLOAT16: return "Half";
    case MTK_BFLOAT16: return "BFloat16";
    case MTK_INT64: return "Long";
    case MTK_INT32: return "Int";
    case MTK_INT16: return "Short";
    case MTK_INT8: return "Char";
    case MTK_UINT8: return "Byte";
    case MTK_BOOL: return "Bool";
    case MTK_FLOAT8_E4M3FN: return "Float8_e4m3fn";
    case MTK_FLOAT8_E5M2: return "Float8_e5m2";
    default: return "Undefined";
    }
}

/* An int-list argument as torch's Python binding passes it on: an int
 * becomes `python_len` copies (the schema's int[N]), a list stays as it
 * is.  Sets *count. */
bool mtk_conv_read_ints(mtk_ctx *ctx, const mtk_op_call *call, int arg, const char *name, int32_t python_len,
                        int64_t *out, int32_t *count)
{
    const mtk_value *v = &call->args[arg];
    if (v->kind == MTK_VALUE_INT) {
        for (int32_t i = 0; i < python_len; i++) out[i] = v->as.i;
        *count = python_len;
        return true;
    }
    if (v->kind != MTK_VALUE_LIST && v->kind != MTK_VALUE_TUPLE) {
        if (!ctx) return false;
        return mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "%s(): argument '%s' must be tuple of ints, not %s",
                         call->op->name, name, mtk_value_type_name(v));
    }
    if (v->as.list.count > MTK_MAX_DIMS)
        return mtk_conv_error(ctx, call, MTK_ERR_SHAPE, "argument '%s' has more than %d items", name, MTK_MAX_DIMS);
    for (int32_t i = 0; i < v->as.list.count; i++) {
        const mtk_value *item = &v->as.list.items[i];
        if (item->kind != MTK_VALUE_INT) {
            if (!ctx) return false;
            return mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT,
                             "%s(): argument '%s' must be tuple of ints, but found element of type %s at pos %d",
                             call->op->name, name, mtk_value_type_name(item), (int)i);
        }
        out[i] = item->as.i;
    }
    *count = v->as.list.count;
    return true;
}

/* ------------------------------------------------------------ layout */

bool mtk_conv_strides_like_channels_last(const mtk_tensor *t)
{
    /* torch's is_channels_last_strides_2d / _3d (suggest_memory_format) */
    static const int32_t order4[4] = { 1, 3, 2, 0 }, order5[5] = { 1, 4, 3, 2, 0 };
    const int32_t *order;
    if (t->ndim == 4) order = order4;
    else if (t->ndim == 5) order = order5;
    else return false;
    if (t->stride[1] == 0) return false;
    int64_t min = 0;
    for (int32_t i = 0; i < t->ndim; i++) {
        int32_t d = order[i];
        if (t->shape[d] == 0) return false;
        if (t->stride[d] < min) return false;
        /* N111 / N11W ambiguity: fall back to contiguous */
        if (d == 0 && min == t->stride[1]) return false;
        min = t->stride[d];
        if (t->shape[d] > 1) min *= t->shape[d];
    }
    return true;
}

/* ------------------------------------------------------ meta and cost */

bool mtk_conv_meta(mtk_op_call *call)
{
    mtk_conv_plan plan;
    if (!mtk_conv_make_plan(call->ctx, call, call->device == MTK_DEVICE_CPU, &plan)) return false;
    const mtk_tensor *input = arg_tensor(call, MTK_CONV_ARG_INPUT);
    mtk_tensor *out = mtk_tensor_new(call->ctx, input->dtype, plan.out_shape, (int32_t)plan.out_ndim, NULL,
                                     call->device);
    if (!out || !mtk_call_set_outputs(call, 1)) return false;
    mtk_call_output(call, 0, out, -1);
    return true;
}

mtk_op_cost mtk_conv_cost(const mtk_op_call *call)
{
    mtk_conv_plan plan;
    mtk_op_cost cost = { 0, 0 };
    if (mtk_conv_make_plan(NULL, call, call->device == MTK_DEVICE_CPU, &plan)) cost.flops = plan.flops;
    return cost;
}

/* ---------------------------------------------------------- typed API */

mtk_conv_args mtk_conv_args_default(void)
{
    mtk_conv_args a;
    memset(&a, 0, sizeof a);
    for (int i = 0; i < 3; i++) a.stride[i] = a.dilation[i] = 1;
    a.groups = 1;
    a.padding_mode = MTK_CONV_PADDING_EXPLICIT;
    return a;
}

static mtk_tensor *run_conv(mtk_ctx *ctx, mtk_op_id id, int32_t spatial, mtk_tensor *input, mtk_tensor *weight,
                            mtk_tensor *bias, const mtk_conv_args *args)
{
    mtk_conv_args a = args ? *args : mtk_conv_args_default();
    const mtk_op_def *op = mtk_op_by_id(id);
    const mtk_conv_info *info = op->info;
    mtk_op_call call;
    mtk_op_call_init(&call, ctx, op);
    call.args[MTK_CONV_ARG_INPUT] = mtk_value_tensor(input);
    call.args[MTK_CONV_ARG_WEIGHT] = mtk_value_tensor(weight);
    call.args[MTK_CONV_ARG_BIAS] = bias ? mtk_value_tensor(bias) : mtk_value_none();
    call.args[MTK_CONV_ARG_STRIDE] = mtk_value_int_list(ctx, a.stride, spatial);
    if (a.padding_mode == MTK_CONV_PADDING_SAME && !info->transposed) call.args[MTK_CONV_ARG_PADDING] = mtk_value_string("same");
    else if (a.padding_mode == MTK_CONV_PADDING_VALID && !info->transposed)
        call.args[MTK_CONV_ARG_PADDING] = mtk_value_string("valid");
    else call.args[MTK_CONV_ARG_PADDING] = mtk_value_int_list(ctx, a.padding, spatial);
    if (info->transposed) {
        call.args[MTK_CONV_ARG_OUTPUT_PADDING] = mtk_value_int_list(ctx, a.output_padding, spatial);
        call.args[MTK_CONV_ARG_T_GROUPS] = mtk_value_int(a.groups);
        call.args[MTK_CONV_ARG_T_DILATION] = mtk_value_int_list(ctx, a.dilation, spatial);
    } else {
        call.args[MTK_CONV_ARG_DILATION] = mtk_value_int_list(ctx, a.dilation, spatial);
        call.args[MTK_CONV_ARG_GROUPS] = mtk_value_int(a.groups);
    }
    if (mtk_ctx_status(ctx) != MTK_OK) return NULL; /* a list allocation failed */
    return mtk_op_run_tensor(&call);
}

mtk_tensor *mtk_conv1d(mtk_ctx *ctx, mtk_tensor *input, mtk_tensor *weight, mtk_tensor *bias,
                       const mtk_conv_args *args)
{
    return run_conv(ctx, OPID_CONV1D, 1, input, weight, bias, args);
}

mtk_tensor *mtk_conv2d(mtk_ctx *ctx, mtk_tensor *input, mtk_tensor *weight, mtk_tensor *bias,
                       const mtk_conv_args *args)
{
    return run_conv(ctx, OPID_CONV2D, 2, input, weight, bias, args);
}

mtk_tensor *mtk_conv3d(mtk_ctx *ctx, mtk_tensor *input, mtk_tensor *weight, mtk_tensor *bias,
                       const mtk_conv_args *args)
{
    return run_conv(ctx, OPID_CONV3D, 3, input, weight, bias, args);
}

mtk_tensor *mtk_conv_transpose1d(mtk_ctx *ctx, mtk_tensor *input, mtk_tensor *weight, mtk_tensor *bias,
                                 const mtk_conv_args *args)
{
    return run_conv(ctx, OPID_CONV_TRANSPOSE1D, 1, input, weight, bias, args);
}

mtk_tensor *mtk_conv_transpose2d(mtk_ctx *ctx, mtk_tensor *input, mtk_tensor *weight, mtk_tensor *bias,
                                 const mtk_conv_args *args)
{
    return run_conv(ctx, OPID_CONV_TRANSPOSE2D, 2, input, weight, bias, args);
}

mtk_tensor *mtk_conv_transpose3d(mtk_ctx *ctx, mtk_tensor *input, mtk_tensor *weight, mtk_tensor *bias,
                                 const mtk_conv_args *args)
{
    return run_conv(ctx, OPID_CONV_TRANSPOSE3D, 3, input, weight, bias, args);
}
