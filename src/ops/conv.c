/* Convolutions: F.conv1d/2d/3d and F.conv_transpose1d/2d/3d — the table
 * rows' info, meta function, FLOPs, typed API and the helpers the conv
 * family shares.  The plan (validation and output shape) is in
 * conv_plan.c, the cpu kernels in conv_cpu.c. */
#include "ops/conv.h"
#include "ops/creation.h"
#include "ops/elementwise.h"
#include "ops/elementwise_kernel.h"
#include "ops/op_util.h"
#include "ops/registry.h"
#include "mtk/ops/conv.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
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

/* A tensor's geometry, as the layout rules below reshape it. */
typedef struct geometry {
    int32_t ndim;
    int64_t shape[5], stride[5];
} geometry;

typedef enum { FORMAT_CONTIGUOUS, FORMAT_CHANNELS_LAST } memory_format;

/* suggest_memory_format of a 4-D / 5-D geometry */
static memory_format suggested(const geometry *g)
{
    return mtk_strides_suggest_channels_last(g->ndim, g->shape, g->stride) ? FORMAT_CHANNELS_LAST : FORMAT_CONTIGUOUS;
}

/* is_contiguous(memory_format) of a geometry (mtk_is_contiguous_as) */
static bool is_contiguous_as(const geometry *g, memory_format format)
{
    mtk_tensor probe;
    memset(&probe, 0, sizeof probe);
    probe.ndim = g->ndim;
    memcpy(probe.shape, g->shape, (size_t)g->ndim * sizeof *g->shape);
    memcpy(probe.stride, g->stride, (size_t)g->ndim * sizeof *g->stride);
    mtk_memory_format f = format == FORMAT_CONTIGUOUS ? MTK_MEMORY_FORMAT_CONTIGUOUS
                          : g->ndim == 5             ? MTK_MEMORY_FORMAT_CHANNELS_LAST_3D
                                                     : MTK_MEMORY_FORMAT_CHANNELS_LAST;
    return mtk_is_contiguous_as(&probe, f);
}

/* The dense strides of `format` for g's shape (mtk_contiguous_strides /
 * mtk_channels_last_strides). */
static void restride(geometry *g, memory_format format)
{
    if (format == FORMAT_CHANNELS_LAST) mtk_channels_last_strides(g->shape, g->ndim, g->stride);
    else mtk_contiguous_strides(g->shape, g->ndim, g->stride);
}

/* Tensor.contiguous(memory_format): unchanged when already so. */
static geometry contiguous_as(geometry g, memory_format format)
{
    if (!is_contiguous_as(&g, format)) restride(&g, format);
    return g;
}

static geometry geometry_of(const mtk_tensor *t)
{
    geometry g;
    g.ndim = t->ndim;
    for (int32_t i = 0; i < t->ndim && i < 5; i++) g.shape[i] = t->shape[i], g.stride[i] = t->stride[i];
    return g;
}

/* Tensor.unsqueeze(dim)'s geometry */
static geometry unsqueezed(geometry g, int32_t dim)
{
    int64_t new_stride = dim >= g.ndim ? 1 : g.shape[dim] * g.stride[dim];
    for (int32_t i = g.ndim; i > dim; i--) g.shape[i] = g.shape[i - 1], g.stride[i] = g.stride[i - 1];
    g.shape[dim] = 1;
    g.stride[dim] = new_stride;
    g.ndim++;
    return g;
}

/* oneDNN's dtype support on this cpu, as torch checks it */
static bool onednn_takes_half(mtk_dtype dtype)
{
#if defined(__GNUC__) && defined(__x86_64__) && !defined(__clang__) && __GNUC__ >= 12
    if (dtype == MTK_FLOAT16) return __builtin_cpu_supports("avx512fp16");
#endif
#if defined(__GNUC__) && defined(__x86_64__)
    if (dtype == MTK_BFLOAT16) return __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl");
#endif
    (void)dtype;
    return false;
}

/* Whether cpu layouts follow torch with oneDNN enabled (its default) or
 * disabled (torch.backends.mkldnn.enabled = False, as the oracle runs
 * torch): they differ for 5-D convolutions, which only oneDNN computes
 * channels-last.  Off unless the environment sets MTK_CONV_ONEDNN=1. */
static bool onednn_enabled(void)
{
    const char *v = getenv("MTK_CONV_ONEDNN");
    return v && strcmp(v, "1") == 0;
}

/* torch's ConvParams::use_mkldnn on cpu for the 4-D / 5-D input and
 * weight geometries. */
static bool uses_onednn(const mtk_conv_plan *p, mtk_dtype dtype, const geometry *x, const geometry *w)
{
    if (!onednn_enabled()) return false;
    bool strided = false, dilated = false;
    for (int32_t i = 0; i < 3; i++) {
        if (p->transposed && p->out_pad[i] >= p->stride[i]) return false; /* output padding "big" */
        strided |= p->stride[i] != 1;
        dilated |= p->dilation[i] != 1;
    }
    if (dtype == MTK_FLOAT16 || dtype == MTK_BFLOAT16) return onednn_takes_half(dtype);
    if (dtype != MTK_FLOAT32) return false;
    int64_t kw = w->shape[w->ndim - 1], kh = w->shape[w->ndim - 2];
    bool worth = strided || dilated || x->shape[0] >= 16 || kw != 1 || kh != 1 || conv_num_threads() > 1;
    return worth && (p->groups > 1 || (kw > 3 && kh > 3) || x->shape[0] > 1 ||
                     x->shape[0] * x->shape[1] * x->shape[2] * x->shape[3] > 20480);
}

/* thnn / mkldnn "use channels last": either operand suggests it (5-D
 * only through oneDNN). */
static memory_format backend_format(const geometry *x, const geometry *w, bool onednn)
{
    if (x->ndim == 5 && !onednn) return FORMAT_CONTIGUOUS;
    return suggested(x) == FORMAT_CHANNELS_LAST || suggested(w) == FORMAT_CHANNELS_LAST ? FORMAT_CHANNELS_LAST
                                                                                        : FORMAT_CONTIGUOUS;
}

/* The strides of the op's output from its batched (and, 1-D, 4-D) form. */
static void squeeze_back(const mtk_conv_plan *p, const geometry *out, int64_t *out_stride)
{
    int32_t n = 0;
    for (int32_t d = 0; d < out->ndim; d++) {
        if (d == 0 && !p->batched) continue;
        if (d == 2 && p->spatial == 1) continue;
        out_stride[n++] = out->stride[d];
    }
}

/* The empty backend (an empty input): the output is input * weight[0]
 * (TensorIterator's cpu strides; a zero-channel input flattened first)
 * viewed as the output's shape, which keeps those strides only when the
 * shapes are equal (else contiguous ones, as a view of nothing).  False
 * when out of memory. */
static bool empty_backend_strides(mtk_ctx *ctx, const mtk_conv_plan *p, mtk_dtype dtype, const geometry *x,
                                  geometry *out)
{
    /* (padding='same' grew the padded copy, which `x` does not show) */
    bool same_shape = x->ndim == out->ndim && x->shape[1] != 0 && !p->padded_copy;
    for (int32_t d = 0; same_shape && d < x->ndim; d++) same_shape = x->shape[d] == out->shape[d];
    if (!same_shape) {
        restride(out, FORMAT_CONTIGUOUS);
        return true;
    }
    const mtk_tensor *operands[2];
    operands[0] = mtk_tensor_new(ctx, dtype, x->shape, x->ndim, x->stride, MTK_DEVICE_META);
    operands[1] = mtk_tensor_new(ctx, dtype, NULL, 0, NULL, MTK_DEVICE_META);
    if (!operands[0] || !operands[1]) return false;
    mtk_ti_cpu_output_strides(operands, 2, out->shape, out->ndim, out->stride);
    return true;
}

/* The operands as torch's cpu _convolution hands them to the backend:
 * an unbatched input batched, F.pad's copy (padding='same') in the
 * input's suggested format, and 1-D convolutions viewed as 2-D (the
 * input made contiguous first). */
static void backend_operands(const mtk_op_call *call, const mtk_conv_plan *p, geometry *x, geometry *w)
{
    *x = geometry_of(arg_tensor(call, MTK_CONV_ARG_INPUT));
    *w = geometry_of(arg_tensor(call, MTK_CONV_ARG_WEIGHT));
    if (!p->batched) *x = unsqueezed(*x, 0);
    if (p->padded_copy) restride(x, suggested(x)); /* F.pad's copy keeps the suggested format */
    if (p->spatial == 1) {
        *x = unsqueezed(contiguous_as(*x, FORMAT_CONTIGUOUS), 2);
        *w = unsqueezed(*w, 2);
    }
}

/* The format torch's cpu kernel of a non-empty convolution runs in, from
 * the backend's operands: the backend (oneDNN or the slow kernels) picks
 * channels-last when the input or the weight suggests it and makes both
 * contiguous in that format; the slow kernels split groups, make each
 * group's slice contiguous as its whole suggests, and decide again on
 * those (*split set). */
static memory_format kernel_format(const mtk_conv_plan *p, mtk_dtype dtype, geometry x, geometry w, bool *split)
{
    bool onednn = uses_onednn(p, dtype, &x, &w);
    memory_format first = backend_format(&x, &w, onednn);
    x = contiguous_as(x, first);
    w = contiguous_as(w, first);
    *split = !onednn && p->groups > 1;
    if (*split) {
        memory_format fx = suggested(&x), fw = suggested(&w);
        x.shape[1] /= p->groups;
        w.shape[0] /= p->groups;
        x = contiguous_as(x, fx);
        w = contiguous_as(w, fw);
    }
    return backend_format(&x, &w, onednn);
}

bool mtk_conv_cpu_kernel_channels_last(const mtk_op_call *call, const mtk_conv_plan *p)
{
    geometry x, w;
    bool split;
    backend_operands(call, p, &x, &w);
    return kernel_format(p, arg_tensor(call, MTK_CONV_ARG_INPUT)->dtype, x, w, &split) == FORMAT_CHANNELS_LAST;
}

/* The strides torch's cpu convolution gives its output (plan.out_shape):
 * the kernel's format (per group for the slow kernels, whose outputs are
 * concatenated in the format they suggest); 1-D and unbatched outputs
 * are then squeezed back.  An empty input takes the empty backend.
 * False when out of memory. */
static bool cpu_output_strides(const mtk_op_call *call, const mtk_conv_plan *p, int64_t *out_stride)
{
    const mtk_tensor *input = arg_tensor(call, MTK_CONV_ARG_INPUT);
    geometry x, w;
    backend_operands(call, p, &x, &w);
    geometry out;
    out.ndim = x.ndim;
    out.shape[0] = p->batch;
    out.shape[1] = p->out_channels;
    for (int32_t i = 2; i < out.ndim; i++) out.shape[i] = p->out_size[3 - (out.ndim - i)];
    if (mtk_tensor_numel(input) == 0) {
        if (!empty_backend_strides(call->ctx, p, input->dtype, &x, &out)) return false;
        squeeze_back(p, &out, out_stride);
        return true;
    }
    bool split;
    memory_format format = kernel_format(p, input->dtype, x, w, &split);
    out.shape[1] = split ? p->out_channels / p->groups : p->out_channels;
    restride(&out, format);
    if (split) { /* torch.cat of the groups' outputs: the format they suggest */
        format = suggested(&out);
        out.shape[1] = p->out_channels;
        restride(&out, format);
    }
    squeeze_back(p, &out, out_stride);
    return true;
}

/* ------------------------------------------------------ meta and cost */

/* The empty backend's dtype: input * weight[0] (a 0-dim tensor), or for
 * zero input channels input.view(-1) * weight.view(-1), promoted as
 * torch's cpu element-wise ops do (an integer input and a floating weight
 * give the weight's dtype).  MTK_DTYPE_UNDEFINED with an error set when
 * they cannot promote or out of memory. */
static mtk_dtype empty_backend_dtype(const mtk_op_call *call)
{
    const mtk_tensor *input = arg_tensor(call, MTK_CONV_ARG_INPUT), *weight = arg_tensor(call, MTK_CONV_ARG_WEIGHT);
    if (input->dtype == weight->dtype) return input->dtype;
    int64_t flat = mtk_tensor_numel(weight);
    int32_t channel_dim = input->ndim == weight->ndim ? 1 : 0;
    bool zero_channels = input->shape[channel_dim] == 0;
    mtk_tensor *w = mtk_tensor_new(call->ctx, weight->dtype, &flat, zero_channels ? 1 : 0, NULL, MTK_DEVICE_META);
    if (!w) return MTK_DTYPE_UNDEFINED;
    mtk_value operands[2] = { mtk_value_tensor((mtk_tensor *)input), mtk_value_tensor(w) };
    return mtk_result_type(call->ctx, operands, 2);
}


bool mtk_conv_meta(mtk_op_call *call)
{
    mtk_conv_plan plan;
    if (!mtk_conv_make_plan(call->ctx, call, call->device == MTK_DEVICE_CPU, &plan)) return false;
    const mtk_tensor *input = arg_tensor(call, MTK_CONV_ARG_INPUT);
    /* torch's meta device gives contiguous strides, its cpu kernels
     * channels-last ones at times */
    int64_t cpu_stride[MTK_MAX_DIMS];
    bool on_cpu = call->device == MTK_DEVICE_CPU;
    if (on_cpu && !cpu_output_strides(call, &plan, cpu_stride)) return false;
    mtk_dtype dtype = input->dtype;
    if (on_cpu && mtk_tensor_numel(input) == 0) dtype = empty_backend_dtype(call);
    if (dtype == MTK_DTYPE_UNDEFINED) return false;
    const mtk_tensor *bias = arg_tensor(call, MTK_CONV_ARG_BIAS);
    if (on_cpu && mtk_tensor_numel(input) == 0 && bias) {
        /* the empty backend adds the bias in place: output.add_(bias) */
        mtk_dtype sum = mtk_promote_types(dtype, bias->dtype);
        if (!ew_can_cast(sum, dtype))
            return mtk_conv_error(call->ctx, call, MTK_ERR_DTYPE, "result type %s can't be cast to the desired output type %s",
                                  mtk_dtype_cpp_name(sum), mtk_dtype_cpp_name(dtype));
    }
    mtk_tensor *out = mtk_tensor_new(call->ctx, dtype, plan.out_shape, (int32_t)plan.out_ndim,
                                     on_cpu ? cpu_stride : NULL, call->device);
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
