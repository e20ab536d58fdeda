/* The plan of a convolution: torch's validation in torch's order and the
 * output shape (see mtk_conv_make_plan in conv.h).
 *
 * On cpu, validation follows torch's cpu path (conv2d -> batchify ->
 * _convolution -> check_shape_forward -> the backends' checks), with the
 * cpu kernels' dtype coverage (no bool, no float8, narrow integers only
 * for plain convolutions).  On meta it follows torch's meta kernel, which
 * checks far less (only the channels, that the kernel fits, and the output
 * size): the Python-level checks (bias dtype, batchify, padding='same')
 * run on both.  Outputs are contiguous on every device, as torch's meta
 * kernel makes them (torch's cpu kernels give channels-last outputs for
 * channels-last inputs, by backend). */
#include "ops/conv.h"
#include "ops/op_util.h"
#include "mtk/ops/conv.h"

#include <stdio.h>
#include <string.h>

/* ------------------------------------------------------------- names */

/* "(2 x 2)"-style text of n sizes */
static const char *by_text(const int64_t *v, int32_t n, char *buf, size_t cap)
{
    size_t len = 0;
    buf[0] = '\0';
    for (int32_t i = 0; i < n && len < cap; i++) {
        int w = snprintf(buf + len, cap - len, "%s%lld", i ? " x " : "", (long long)v[i]);
        if (w < 0) break;
        len += (size_t)w;
    }
    return buf;
}

static const char *list_text(const int64_t *v, int32_t n, char *buf, size_t cap)
{
    return mtk_shape_list_str(v, n, buf, cap);
}

/* ----------------------------------------------------------- arguments */

/* torch's expand_param_if_needed: one value for every dim, or one per
 * dim. */
static bool expand_param(mtk_ctx *ctx, const mtk_op_call *call, const char *name, const int64_t *vals,
                         int32_t count, int32_t dim, int64_t *out)
{
    if (count == 1) {
        for (int32_t i = 0; i < dim; i++) out[i] = vals[0];
        return true;
    }
    if (count != dim) {
        char b[256];
        return mtk_conv_error(ctx, call, MTK_ERR_SHAPE,
                          "expected %s to be a single integer value or a list of %d values to match "
                          "the convolution dimensions, but got %s=%s",
                          name, (int)dim, name, list_text(vals, count, b, sizeof b));
    }
    memcpy(out, vals, (size_t)dim * sizeof *out);
    return true;
}

/* The padding argument of conv1d/2d/3d: ints, or 'same' / 'valid'. */
typedef struct padding_arg {
    mtk_conv_padding_mode mode;
    const char *invalid; /* an unknown padding string (an error after batchify) */
    int64_t values[MTK_MAX_DIMS];
    int32_t count;
} padding_arg;

static bool read_padding(mtk_ctx *ctx, const mtk_op_call *call, int32_t python_len, padding_arg *pa)
{
    const mtk_value *v = &call->args[MTK_CONV_ARG_PADDING];
    pa->mode = MTK_CONV_PADDING_EXPLICIT;
    if (v->kind == MTK_VALUE_STRING) {
        if (strcmp(v->as.s, "same") == 0) pa->mode = MTK_CONV_PADDING_SAME;
        else if (strcmp(v->as.s, "valid") == 0) pa->mode = MTK_CONV_PADDING_VALID;
        else pa->invalid = v->as.s;
        return true;
    }
    if (v->kind != MTK_VALUE_INT && v->kind != MTK_VALUE_LIST && v->kind != MTK_VALUE_TUPLE) {
        if (!ctx) return false;
        return mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT,
                         "%s(): argument 'padding' must be tuple of ints or str, not %s", call->op->name,
                         mtk_value_type_name(v));
    }
    return mtk_conv_read_ints(ctx, call, MTK_CONV_ARG_PADDING, "padding", python_len, pa->values, &pa->count);
}

/* ------------------------------------------------------------ checks */

static int64_t product(const int64_t *v, int32_t n) { return ops_size_product(v, 0, n); }

/* FlopCounterMode's conv_flop_count: 2 * conv * filter * N * weight[0] *
 * weight[1], exact, or INT64_MAX when it passes int64 (Python's ints do
 * not overflow; a count that large is saturated rather than wrapped). */
static int64_t conv_flops(int64_t conv, int64_t filter, int64_t batch, const int64_t *weight_shape)
{
    const int64_t factors[6] = { 2, conv, filter, batch, weight_shape[0], weight_shape[1] };
    return ops_size_product(factors, 0, 6);
}

static bool dtype_has_conv_kernel(mtk_dtype d, bool plain)
{
    switch (d) {
    case MTK_FLOAT32: case MTK_FLOAT64: case MTK_FLOAT16: case MTK_BFLOAT16: case MTK_INT64:
        return true;
    case MTK_INT32: case MTK_INT16: case MTK_INT8: case MTK_UINT8:
        return plain; /* slow_conv2d/3d only: not dilated, not transposed */
    default:
        return false;
    }
}

/* The input/weight dtype rule of torch's cpu backends (mkldnn for the
 * half types, the slow kernels for the rest). */
static bool check_weight_dtype(mtk_ctx *ctx, const mtk_op_call *call, const mtk_tensor *input,
                               const mtk_tensor *weight)
{
    if (input->dtype == weight->dtype) return true;
    if (input->dtype == MTK_FLOAT16 || input->dtype == MTK_BFLOAT16)
        return mtk_conv_error(ctx, call, MTK_ERR_DTYPE,
                          "Input type (%s) and weight type (%s) should be the same or input should be a "
                          "MKLDNN tensor and weight is a dense tensor",
                          mtk_dtype_name(input->dtype), mtk_dtype_name(weight->dtype));
    return mtk_conv_error(ctx, call, MTK_ERR_DTYPE, "expected scalar type %s but found %s",
                      mtk_dtype_cpp_name(input->dtype), mtk_dtype_cpp_name(weight->dtype));
}

/* A transposed convolution adds its bias as output.add_(bias) in the 1-D
 * and 2-D slow kernels (any dtype that casts back); the 3-D kernel and
 * mkldnn (half types) want the input's dtype. */
static bool check_transposed_bias_dtype(mtk_ctx *ctx, const mtk_op_call *call, const mtk_tensor *input,
                                        const mtk_tensor *bias, int32_t dim)
{
    if (!bias || bias->dtype == input->dtype) return true;
    mtk_dtype in = input->dtype, b = bias->dtype;
    bool half = in == MTK_FLOAT16 || in == MTK_BFLOAT16;
    if (dim <= 2 && !half && !mtk_dtype_is_float8(b) && !mtk_dtype_is_float8(in)) {
        bool castable = mtk_dtype_is_floating(in) || !mtk_dtype_is_floating(b);
        if (castable && in != MTK_BOOL) return true;
        if (!castable)
            return mtk_conv_error(ctx, call, MTK_ERR_DTYPE, "result type %s can't be cast to the desired output type %s",
                              mtk_dtype_cpp_name(mtk_promote_types(in, b)), mtk_dtype_cpp_name(in));
    }
    if (half)
        return mtk_conv_error(ctx, call, MTK_ERR_DTYPE,
                          "Input type (%s) and bias type (%s) should be the same or input should be a "
                          "MKLDNN tensor and bias is a dense tensor",
                          mtk_dtype_name(in), mtk_dtype_name(b));
    return mtk_conv_error(ctx, call, MTK_ERR_DTYPE, "expected scalar type %s but found %s", mtk_dtype_cpp_name(in),
                      mtk_dtype_cpp_name(b));
}

/* conv1d/2d/3d with a padding string skip the up-front bias dtype check:
 * the slow kernels copy any bias into the output (cast), mkldnn (the half
 * types) wants the input's dtype. */
static bool check_mode_bias_dtype(mtk_ctx *ctx, const mtk_op_call *call, const mtk_tensor *input,
                                  const mtk_tensor *bias)
{
    if (!bias || bias->dtype == input->dtype) return true;
    if (input->dtype != MTK_FLOAT16 && input->dtype != MTK_BFLOAT16) return true;
    return mtk_conv_error(ctx, call, MTK_ERR_DTYPE,
                      "Input type (%s) and bias type (%s) should be the same or input should be a MKLDNN tensor "
                      "and bias is a dense tensor",
                      mtk_dtype_name(input->dtype), mtk_dtype_name(bias->dtype));
}

/* slow_conv_transpose2d/3d's shape checks (non-empty input only). */
static bool check_transposed_backend(mtk_ctx *ctx, const mtk_op_call *call, const mtk_tensor *weight,
                                     int32_t dim, const int64_t *kernel, const int64_t *stride,
                                     const int64_t *dilation, const int64_t *output_padding,
                                     const int64_t *in_size, const int64_t *out_size)
{
    static const char *const names[3] = { "depth", "height", "width" };
    const char *const *nm = names + (3 - dim);
    char a[256], b[256], c[256];
    for (int32_t i = 0; i < dim; i++)
        if (kernel[i] <= 0) {
            size_t len = 0;
            for (int32_t j = 0; j < dim; j++)
                len += (size_t)snprintf(a + len, sizeof a - len, "%skernel_%s: %lld", j ? " " : "", nm[j],
                                        (long long)kernel[j]);
            return mtk_conv_error(ctx, call, MTK_ERR_SHAPE, "kernel size should be greater than zero, but got %s", a);
        }
    for (int32_t i = 0; i < dim; i++)
        if (dilation[i] <= 0) {
            size_t len = 0;
            for (int32_t j = 0; j < dim; j++)
                len += (size_t)snprintf(a + len, sizeof a - len, "%sdilation_%s: %lld", j ? ", " : "", nm[j],
                                        (long long)dilation[j]);
            return mtk_conv_error(ctx, call, MTK_ERR_SHAPE, "dilation should be greater than zero, but got %s", a);
        }
    for (int32_t i = 0; i < dim; i++)
        if (output_padding[i] >= stride[i] && output_padding[i] >= dilation[i]) {
            size_t la = 0, lb = 0, lc = 0;
            for (int32_t j = 0; j < dim; j++) {
                la += (size_t)snprintf(a + la, sizeof a - la, "%soutput_padding_%s: %lld", j ? " " : "", nm[j],
                                       (long long)output_padding[j]);
                lb += (size_t)snprintf(b + lb, sizeof b - lb, " stride_%s: %lld", nm[j], (long long)stride[j]);
                lc += (size_t)snprintf(c + lc, sizeof c - lc, " dilation_%s: %lld", nm[j], (long long)dilation[j]);
            }
            return mtk_conv_error(ctx, call, MTK_ERR_SHAPE,
                              "output padding must be smaller than either stride or dilation, but got %s%s%s",
                              a, b, c);
        }
    if (weight->shape[1] == 0)
        return mtk_conv_error(ctx, call, MTK_ERR_SHAPE, "non-empty %dD weight tensor expected, but got: %s",
                          (int)weight->ndim, list_text(weight->shape, weight->ndim, a, sizeof a));
    for (int32_t i = 0; i < dim; i++)
        if (out_size[i] < 1)
            return mtk_conv_error(ctx, call, MTK_ERR_SHAPE,
                              "Given input size per channel: (%s). Calculated output size per channel: (%s). "
                              "Output size is too small",
                              by_text(in_size, dim, a, sizeof a), by_text(out_size, dim, b, sizeof b));
    return true;
}

/* ------------------------------------------------- torch's meta rules */

/* The arguments as torch's meta kernel (calc_conv_nd_return_shape) sees
 * them: lists as the Python binding passed them. */
typedef struct meta_params {
    const int64_t *stride;
    int32_t n_stride;
    const int64_t *padding;
    int32_t n_padding;
    const int64_t *dilation;
    int32_t n_dilation;
    const int64_t *output_padding;
    int32_t n_output_padding; /* 0: none (not transposed, or empty) */
    int64_t groups;
} meta_params;

/* The meta kernel is Python: its sizes are exact integers.  A sum of two
 * products of int64 values and a few int64 terms stays below 2^127, so
 * __int128 holds them exactly; a result outside int64 is an error. */
typedef __int128 wide;

static wide floor_div_wide(wide a, wide b)
{
    wide q = a / b, r = a % b;
    return (r != 0 && ((r < 0) != (b < 0))) ? q - 1 : q;
}

static bool fits_int64(wide v) { return v >= INT64_MIN && v <= INT64_MAX; }

static bool size_overflow(mtk_ctx *ctx, const mtk_op_call *call, const char *what, int32_t dim)
{
    return mtk_conv_error(ctx, call, MTK_ERR_OVERFLOW,
                          "the %s of spatial dim %d does not fit in int64 (sizes, padding, dilation or stride too "
                          "large)",
                          what, (int)dim);
}

/* value i of a list expanded as the meta kernel does (one value for all
 * dims); false when the list is too short (an IndexError in torch) */
static bool meta_item(const int64_t *v, int32_t n, int32_t i, int64_t *out)
{
    if (n == 1) i = 0;
    if (i >= n) return false;
    *out = v[i];
    return true;
}

/* torch's meta kernel of convolution (meta_conv): only the channel check,
 * the kernel-fits check and the output-size check; everything else it
 * accepts (the cpu path refuses much of it: see mtk_conv_make_plan). */
static bool plan_as_meta(mtk_ctx *ctx, const mtk_op_call *call, mtk_conv_plan *p, const int64_t *in_shape,
                         const meta_params *mp)
{
    const mtk_tensor *weight = arg_tensor(call, MTK_CONV_ARG_WEIGHT);
    int32_t k = p->spatial + 2, dims = p->spatial;
    bool transposed = p->transposed;
    char s1[256], s2[256];
    if (weight->ndim < 2)
        return mtk_conv_error(ctx, call, MTK_ERR_INDEX, "tuple index out of range");
    wide channels_wide = transposed ? (wide)mp->groups * weight->shape[1] : weight->shape[0];
    if (!fits_int64(channels_wide))
        return mtk_conv_error(ctx, call, MTK_ERR_OVERFLOW, "groups %lld times weight.size(1) %lld does not fit in int64",
                              (long long)mp->groups, (long long)weight->shape[1]);
    int64_t out_channels = (int64_t)channels_wide;
    if (!transposed && (wide)weight->shape[1] * mp->groups != in_shape[1])
        return mtk_conv_error(ctx, call, MTK_ERR_SHAPE, "Invalid channel dimensions");
    int32_t kdims = weight->ndim - 2;
    int64_t stride[3], pad[3], dil[3], opad[3] = { 0, 0, 0 };
    for (int32_t i = 0; i < dims; i++) {
        if (!meta_item(mp->stride, mp->n_stride, i, &stride[i]) || !meta_item(mp->padding, mp->n_padding, i, &pad[i]) ||
            !meta_item(mp->dilation, mp->n_dilation, i, &dil[i]) ||
            (mp->n_output_padding && !meta_item(mp->output_padding, mp->n_output_padding, i, &opad[i])))
            return mtk_conv_error(ctx, call, MTK_ERR_INDEX, "list index out of range");
    }
    if (kdims < dims) return mtk_conv_error(ctx, call, MTK_ERR_INDEX, "tuple index out of range");
    const int64_t *kernel = weight->shape + 2, *in = in_shape + 2;
    if (!transposed) {
        int64_t padded[3], span[3];
        bool fits = true;
        for (int32_t i = 0; i < dims; i++) {
            wide padded_wide = (wide)in[i] + 2 * (wide)pad[i], span_wide = (wide)dil[i] * (kernel[i] - 1) + 1;
            if (!fits_int64(padded_wide)) return size_overflow(ctx, call, "padded input size", i);
            if (!fits_int64(span_wide)) return size_overflow(ctx, call, "dilated kernel size", i);
            padded[i] = (int64_t)padded_wide;
            span[i] = (int64_t)span_wide;
            fits &= padded[i] >= span[i];
        }
        if (!fits)
            return mtk_conv_error(ctx, call, MTK_ERR_SHAPE,
                                  "Calculated padded input size per channel: (%s). Kernel size: (%s). Kernel size "
                                  "can't be greater than actual input size",
                                  by_text(padded, dims, s1, sizeof s1), by_text(span, dims, s2, sizeof s2));
    }
    int64_t out[5] = { in_shape[0], out_channels };
    bool any_positive = false;
    for (int32_t i = 0; i < dims; i++) {
        wide size;
        if (transposed && mp->n_output_padding) {
            size = ((wide)in[i] - 1) * stride[i] - 2 * (wide)pad[i] + (wide)dil[i] * (kernel[i] - 1) + opad[i] + 1;
        } else {
            if (stride[i] == 0)
                return mtk_conv_error(ctx, call, MTK_ERR_INVALID_ARGUMENT, "integer division or modulo by zero");
            size = floor_div_wide((wide)in[i] + 2 * (wide)pad[i] - (wide)dil[i] * (kernel[i] - 1) - 1, stride[i]) + 1;
        }
        if (!fits_int64(size)) return size_overflow(ctx, call, "output size", i);
        out[2 + i] = (int64_t)size;
        any_positive |= out[2 + i] > 0;
    }
    if (!any_positive)
        return mtk_conv_error(ctx, call, MTK_ERR_SHAPE,
                              "Given input size per channel: %s. Calculated output size per channel: %s. Output size "
                              "is too small",
                              list_text(in, dims, s1, sizeof s1), list_text(out + 2, dims, s2, sizeof s2));
    if (in_shape[1] == 0) out[1] = 0;
    for (int32_t i = 0; i < k; i++)
        if (out[i] < 0)
            return mtk_conv_error(ctx, call, MTK_ERR_SHAPE, "Trying to create tensor with negative dimension %lld: %s",
                                  (long long)out[i], list_text(out, k, s1, sizeof s1));
    p->batch = in_shape[0];
    p->in_channels = in_shape[1];
    p->out_channels = out[1];
    p->groups = mp->groups;
    p->empty = true; /* never run */
    p->out_ndim = p->batched ? k : k - 1;
    memcpy(p->out_shape, out + (p->batched ? 0 : 1), (size_t)p->out_ndim * sizeof *p->out_shape);
    /* FlopCounterMode's conv_flop_count on the meta result */
    int64_t conv = product(transposed ? in : out + 2, dims), filter = product(kernel, kdims);
    p->flops = conv_flops(conv, filter, in_shape[0], weight->shape);
    return true;
}

/* ---------------------------------------------------------------- plan */

bool mtk_conv_make_plan(mtk_ctx *ctx, const mtk_op_call *call, bool for_cpu, mtk_conv_plan *p)
{
    const mtk_conv_info *info = call->op->info;
    const mtk_tensor *input = arg_tensor(call, MTK_CONV_ARG_INPUT), *weight = arg_tensor(call, MTK_CONV_ARG_WEIGHT);
    const mtk_tensor *bias = arg_tensor(call, MTK_CONV_ARG_BIAS);
    int32_t spatial = info->spatial;
    bool transposed = info->transposed;
    char s1[256], s2[256], s3[256];
    memset(p, 0, sizeof *p);
    p->spatial = spatial;
    p->transposed = transposed;

    padding_arg pad_arg = { MTK_CONV_PADDING_EXPLICIT, NULL, { 0 }, 0 };
    if (!transposed && !read_padding(ctx, call, spatial, &pad_arg)) return false;
    /* conv1d/2d/3d(int[] padding) check the bias dtype first */
    if (!transposed && pad_arg.mode == MTK_CONV_PADDING_EXPLICIT && !pad_arg.invalid && bias &&
        bias->dtype != input->dtype)
        return mtk_conv_error(ctx, call, MTK_ERR_DTYPE, "Input type (%s) and bias type (%s) should be the same",
                          mtk_cpp_type_name(input->dtype), mtk_cpp_type_name(bias->dtype));

    /* batchify */
    if (input->ndim != spatial + 1 && input->ndim != spatial + 2)
        return mtk_conv_error(ctx, call, MTK_ERR_SHAPE,
                          "Expected %dD (unbatched) or %dD (batched) input to %s, but got input of size: %s",
                          (int)spatial + 1, (int)spatial + 2, call->op->name,
                          list_text(input->shape, input->ndim, s1, sizeof s1));
    p->batched = input->ndim == spatial + 2;
    if (pad_arg.invalid)
        return mtk_conv_error(ctx, call, MTK_ERR_INVALID_ARGUMENT, "Invalid padding string: '%s'", pad_arg.invalid);
    int64_t in_shape[5]; /* batched */
    int32_t k = spatial + 2;
    in_shape[0] = 1;
    memcpy(in_shape + (p->batched ? 0 : 1), input->shape, (size_t)input->ndim * sizeof *in_shape);

    int64_t stride_v[MTK_MAX_DIMS], dil_v[MTK_MAX_DIMS], opad_v[MTK_MAX_DIMS];
    int32_t n_stride, n_dil, n_opad = 1;
    opad_v[0] = 0;
    if (!mtk_conv_read_ints(ctx, call, MTK_CONV_ARG_STRIDE, "stride", spatial, stride_v, &n_stride)) return false;
    if (!mtk_conv_read_ints(ctx, call, transposed ? MTK_CONV_ARG_T_DILATION : MTK_CONV_ARG_DILATION, "dilation", spatial, dil_v, &n_dil))
        return false;
    if (transposed) {
        if (!mtk_conv_read_ints(ctx, call, MTK_CONV_ARG_PADDING, "padding", spatial, pad_arg.values, &pad_arg.count)) return false;
        if (!mtk_conv_read_ints(ctx, call, MTK_CONV_ARG_OUTPUT_PADDING, "output_padding", spatial, opad_v, &n_opad)) return false;
    } else {
        for (int32_t i = 0; i < spatial; i++) opad_v[i] = 0;
        n_opad = spatial;
    }
    int64_t groups = arg_int(call, transposed ? MTK_CONV_ARG_T_GROUPS : MTK_CONV_ARG_GROUPS);
    int32_t wdim = weight->ndim;

    /* padding='same' / 'valid' (torch's _convolution_mode) */
    int64_t pad_left[MTK_MAX_DIMS] = { 0 }, pad_right[MTK_MAX_DIMS] = { 0 };
    bool same = pad_arg.mode == MTK_CONV_PADDING_SAME;
    if (same) {
        if (wdim <= 2) return mtk_conv_error(ctx, call, MTK_ERR_SHAPE, "weight should have at least three dimensions");
        if (wdim != k)
            return mtk_conv_error(ctx, call, MTK_ERR_SHAPE,
                              "Expected %d-dimensional input for %d-dimensional weight%s, but got %d-dimensional "
                              "input of size %s instead",
                              (int)wdim, (int)wdim, list_text(weight->shape, wdim, s1, sizeof s1), (int)k,
                              list_text(in_shape, k, s2, sizeof s2));
        if (n_stride != spatial && n_stride != 1)
            return mtk_conv_error(ctx, call, MTK_ERR_SHAPE, "stride cannot broadcast to %d dimensions", (int)spatial);
        if (n_dil != spatial && n_dil != 1)
            return mtk_conv_error(ctx, call, MTK_ERR_SHAPE, "dilation cannot broadcast to %d dimensions", (int)spatial);
        for (int32_t i = 0; i < n_stride; i++)
            if (stride_v[i] != 1)
                return mtk_conv_error(ctx, call, MTK_ERR_INVALID_ARGUMENT,
                                  "padding='same' is not supported for strided convolutions");
        for (int32_t i = 0; i < spatial; i++) {
            int64_t d = n_dil == 1 ? dil_v[0] : dil_v[i];
            int64_t total = ops_wrap_mul(d, weight->shape[i + 2] - 1); /* torch's wrapping int64 */
            pad_left[i] = total / 2; /* C++ division, as torch */
            pad_right[i] = ops_wrap_sub(total, pad_left[i]);
            if (pad_right[i] > pad_left[i]) {
                in_shape[i + 2] = ops_wrap_add(in_shape[i + 2], ops_wrap_sub(pad_right[i], pad_left[i])); /* right zeros */
                p->padded_copy = true;
            }
            else pad_left[i] = pad_right[i];
        }
        for (int32_t i = 0; i < spatial; i++) pad_arg.values[i] = pad_left[i];
        pad_arg.count = spatial;
    } else if (pad_arg.mode == MTK_CONV_PADDING_VALID) {
        pad_arg.values[0] = 0;
        pad_arg.count = 1;
    }

    if (!for_cpu) {
        meta_params mp = { stride_v, n_stride, pad_arg.values, pad_arg.count, dil_v, n_dil, opad_v,
                           transposed ? n_opad : 0, groups };
        return plan_as_meta(ctx, call, p, in_shape, &mp);
    }

    /* _convolution */
    if (wdim <= 2) return mtk_conv_error(ctx, call, MTK_ERR_SHAPE, "weight should have at least three dimensions");
    if (groups <= 0) return mtk_conv_error(ctx, call, MTK_ERR_INVALID_ARGUMENT, "non-positive groups is not supported");
    int32_t dim = wdim - 2;
    int64_t stride[MTK_MAX_DIMS], pad[MTK_MAX_DIMS], dil[MTK_MAX_DIMS], opad[MTK_MAX_DIMS];
    if (!expand_param(ctx, call, "stride", stride_v, n_stride, dim, stride)) return false;
    if (!expand_param(ctx, call, "padding", pad_arg.values, pad_arg.count, dim, pad)) return false;
    if (!expand_param(ctx, call, "dilation", dil_v, n_dil, dim, dil)) return false;
    if (!expand_param(ctx, call, "output_padding", opad_v, n_opad, dim, opad)) return false;

    /* check_shape_forward */
    for (int32_t i = 0; i < dim; i++)
        if (pad[i] < 0) return mtk_conv_error(ctx, call, MTK_ERR_INVALID_ARGUMENT, "negative padding is not supported");
    for (int32_t i = 0; i < dim; i++)
        if (opad[i] < 0)
            return mtk_conv_error(ctx, call, MTK_ERR_INVALID_ARGUMENT, "negative output_padding is not supported");
    for (int32_t i = 0; i < dim; i++)
        if (stride[i] <= 0)
            return mtk_conv_error(ctx, call, MTK_ERR_INVALID_ARGUMENT, "non-positive stride is not supported");
    for (int32_t i = 0; i < dim; i++)
        if (dil[i] < 0)
            return mtk_conv_error(ctx, call, MTK_ERR_INVALID_ARGUMENT, "dilation should be greater than zero");
    if (wdim != k)
        return mtk_conv_error(ctx, call, MTK_ERR_SHAPE,
                          "Expected %d-dimensional input for %d-dimensional weight %s, but got %d-dimensional "
                          "input of size %s instead",
                          (int)wdim, (int)wdim, list_text(weight->shape, wdim, s1, sizeof s1), (int)k,
                          list_text(in_shape, k, s2, sizeof s2));
    list_text(weight->shape, wdim, s1, sizeof s1);
    if (weight->shape[0] < groups)
        return mtk_conv_error(ctx, call, MTK_ERR_SHAPE,
                          "Given groups=%lld, expected weight to be at least %lld at dimension 0, but got weight "
                          "of size %s instead",
                          (long long)groups, (long long)groups, s1);
    if (weight->shape[0] % groups != 0)
        return mtk_conv_error(ctx, call, MTK_ERR_SHAPE,
                          "Given groups=%lld, expected weight to be divisible by %lld at dimension 0, but got "
                          "weight of size %s instead",
                          (long long)groups, (long long)groups, s1);
    list_text(in_shape, k, s2, sizeof s2);
    if (!transposed) {
        if (in_shape[1] != ops_wrap_mul(weight->shape[1], groups))
            return mtk_conv_error(ctx, call, MTK_ERR_SHAPE,
                              "Given groups=%lld, weight of size %s, expected input%s to have %lld channels, but "
                              "got %lld channels instead",
                              (long long)groups, s1, s2, (long long)ops_wrap_mul(weight->shape[1], groups),
                              (long long)in_shape[1]);
        if (bias && (bias->ndim != 1 || bias->shape[0] != weight->shape[0]))
            return mtk_conv_error(ctx, call, MTK_ERR_SHAPE,
                              "Given weight of size %s, expected bias to be 1-dimensional with %lld elements, but "
                              "got bias of size %s instead",
                              s1, (long long)weight->shape[0], list_text(bias->shape, bias->ndim, s3, sizeof s3));
        int64_t padded[3], kernel_span[3];
        bool fits = true;
        for (int32_t i = 0; i < dim; i++) {
            /* torch's int64 arithmetic, wrapping as it does */
            padded[i] = ops_wrap_add(in_shape[i + 2], ops_wrap_mul(2, pad[i]));
            kernel_span[i] = ops_wrap_add(ops_wrap_mul(dil[i], weight->shape[i + 2] - 1), 1);
            if (padded[i] < kernel_span[i]) fits = false;
        }
        if (!fits)
            return mtk_conv_error(ctx, call, MTK_ERR_SHAPE,
                              "Calculated padded input size per channel: (%s). Kernel size: (%s). Kernel size "
                              "can't be greater than actual input size",
                              by_text(padded, dim, s2, sizeof s2), by_text(kernel_span, dim, s3, sizeof s3));
    } else {
        if (in_shape[1] != weight->shape[0])
            return mtk_conv_error(ctx, call, MTK_ERR_SHAPE,
                              "Given transposed=1, weight of size %s, expected input%s to have %lld channels, but "
                              "got %lld channels instead",
                              s1, s2, (long long)weight->shape[0], (long long)in_shape[1]);
        if (bias && (bias->ndim != 1 || bias->shape[0] != ops_wrap_mul(weight->shape[1], groups)))
            return mtk_conv_error(ctx, call, MTK_ERR_SHAPE,
                              "Given transposed=1, weight of size %s, expected bias to be 1-dimensional with %lld "
                              "elements, but got bias of size %s instead",
                              s1, (long long)ops_wrap_mul(weight->shape[1], groups),
                              list_text(bias->shape, bias->ndim, s3, sizeof s3));
    }

    /* the output shape (batched), in torch's wrapping int64 arithmetic
     * (stride > 0 here, so the division cannot trap) */
    int64_t out_size[3];
    for (int32_t i = 0; i < dim; i++) {
        int64_t in = in_shape[i + 2], kk = weight->shape[i + 2];
        int64_t span = ops_wrap_mul(dil[i], kk - 1), pads = ops_wrap_mul(2, pad[i]);
        if (transposed) {
            int64_t grown = ops_wrap_sub(ops_wrap_mul(in - 1, stride[i]), pads);
            out_size[i] = ops_wrap_add(ops_wrap_add(grown, span), ops_wrap_add(opad[i], 1));
        } else {
            out_size[i] = ops_wrap_add(ops_wrap_sub(ops_wrap_add(in, pads), ops_wrap_add(span, 1)) / stride[i], 1);
        }
    }
    int64_t out_channels = transposed ? ops_wrap_mul(weight->shape[1], groups) : weight->shape[0];
    if (in_shape[1] == 0) out_channels = 0;

    /* backends: torch sends zero-batch and zero-channel inputs to its
     * "Empty" backend, which checks no dtypes */
    p->empty = in_shape[0] == 0 || in_shape[1] == 0;
    if (p->empty) {
        if (in_shape[1] != 0 && mtk_tensor_numel(weight) == 0)
            return mtk_conv_error(ctx, call, MTK_ERR_INDEX,
                              "select(): index 0 out of range for tensor of size [0] at dimension 0");
        for (int32_t i = 0; i < dim; i++)
            if (out_size[i] < 0) {
                int64_t shape[5] = { in_shape[0], out_channels };
                memcpy(shape + 2, out_size, (size_t)dim * sizeof *shape);
                return mtk_conv_error(ctx, call, MTK_ERR_SHAPE, "invalid shape dimension %lld at index %d of shape %s",
                                  (long long)out_size[i], (int)i + 2, list_text(shape, k, s1, sizeof s1));
            }
    } else {
        if (product(in_shape, k) == 0)
            return mtk_conv_error(ctx, call, MTK_ERR_SHAPE,
                              "Only zero batch or zero channel inputs are supported, but got input shape: %s",
                              list_text(in_shape, k, s1, sizeof s1));
        if (!transposed) {
            for (int32_t i = 0; i < dim; i++)
                if (dil[i] <= 0) {
                    int64_t shown[3];
                    int32_t n = dim == 1 ? 2 : dim; /* 1-D runs as 2-D: [1, d] */
                    if (dim == 1) shown[0] = 1, shown[1] = dil[0];
                    else memcpy(shown, dil, (size_t)dim * sizeof *shown);
                    return mtk_conv_error(ctx, call, MTK_ERR_SHAPE, "dilation should be greater than zero, but got %s",
                                      list_text(shown, n, s1, sizeof s1));
                }
            for (int32_t i = 0; i < dim; i++)
                if (weight->shape[i + 2] <= 0)
                    return mtk_conv_error(ctx, call, MTK_ERR_SHAPE, "kernel size should be greater than zero, but got %s",
                                      list_text(weight->shape + 2, dim, s1, sizeof s1));
        }
        if (!check_weight_dtype(ctx, call, input, weight)) return false;
        if (transposed && !check_transposed_bias_dtype(ctx, call, input, bias, dim)) return false;
        if (!transposed && !check_mode_bias_dtype(ctx, call, input, bias)) return false;
        if (transposed) {
            /* 1-D runs as 2-D with a leading size-1 dim */
            int64_t kk[3], st[3], dl[3], op[3], is[3], os[3];
            int32_t n = dim == 1 ? 2 : dim, off = dim == 1 ? 1 : 0;
            kk[0] = st[0] = dl[0] = is[0] = os[0] = 1;
            op[0] = 0;
            for (int32_t i = 0; i < dim; i++) {
                kk[i + off] = weight->shape[i + 2], st[i + off] = stride[i], dl[i + off] = dil[i];
                op[i + off] = opad[i], is[i + off] = in_shape[i + 2], os[i + off] = out_size[i];
            }
            if (!check_transposed_backend(ctx, call, weight, n, kk, st, dl, op, is, os)) return false;
        }
        bool plain = !transposed;
        for (int32_t i = 0; i < dim; i++) plain &= dil[i] == 1;
        if (for_cpu && !dtype_has_conv_kernel(input->dtype, plain)) {
            const char *kernel = transposed ? (dim == 3 ? "slow_conv_transpose3d_out_cpu"
                                                        : "slow_conv_transpose2d_out_cpu")
                                 : !plain ? "slow_conv_dilated<>"
                                          : (dim == 3 ? "slow_conv3d_cpu" : "slow_conv2d_cpu");
            return mtk_conv_error(ctx, call, MTK_ERR_DTYPE, "\"%s\" not implemented for '%s'", kernel,
                              mtk_dtype_cpp_name(input->dtype));
        }
    }

    /* the plan: 3 spatial dims, leading ones of size 1 */
    p->batch = in_shape[0];
    p->in_channels = in_shape[1];
    p->out_channels = out_channels;
    p->groups = groups;
    int32_t off = 3 - dim;
    for (int32_t i = 0; i < 3; i++) {
        p->in_size[i] = p->kernel[i] = p->out_size[i] = p->stride[i] = p->dilation[i] = 1;
        p->pad[i] = p->out_pad[i] = 0;
    }
    for (int32_t i = 0; i < dim; i++) {
        p->in_size[off + i] = same ? input->shape[input->ndim - dim + i] : in_shape[i + 2];
        p->kernel[off + i] = weight->shape[i + 2];
        p->out_size[off + i] = out_size[i];
        p->stride[off + i] = stride[i];
        p->pad[off + i] = pad[i];
        p->dilation[off + i] = dil[i];
        p->out_pad[off + i] = opad[i];
    }
    int64_t batched_out[5] = { in_shape[0], out_channels };
    memcpy(batched_out + 2, out_size, (size_t)dim * sizeof *batched_out);
    p->out_ndim = p->batched ? k : k - 1;
    memcpy(p->out_shape, batched_out + (p->batched ? 0 : 1), (size_t)p->out_ndim * sizeof *p->out_shape);

    /* FlopCounterMode's conv_flop_count(x_shape, w_shape, out_shape) */
    const int64_t *conv_shape = transposed ? in_shape + 2 : out_size;
    p->flops = conv_flops(product(conv_shape, dim), product(weight->shape + 2, dim), in_shape[0], weight->shape);
    return true;
}
