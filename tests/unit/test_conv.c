/* Convolutions, pooling and interpolation: shapes, strides and errors as
 * torch 2.13 reports them (meta and cpu), FLOPs as FlopCounterMode counts
 * them, and cpu values computed by torch (tests/oracle/gen_ops_conv.py
 * generates the random cases these were picked from). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mtk/mtk.h"
#include "ops/registry.h"
#include "ops/conv.h"
#include "core/cpu_isa.h"
#include "core/scalar.h"

/* ---------------------------------------------------------------- helpers */

#define SHAPE(...) ((const int64_t[]){ __VA_ARGS__ })
#define NDIM(...) ((int32_t)(sizeof((const int64_t[]){ __VA_ARGS__ }) / sizeof(int64_t)))
#define META(ctx, dtype, ...) mtk_tensor_new(ctx, dtype, SHAPE(__VA_ARGS__), NDIM(__VA_ARGS__), NULL, MTK_DEVICE_META)
#define VALUES(...) ((const double[]){ __VA_ARGS__ }), (int64_t)(sizeof((const double[]){ __VA_ARGS__ }) / sizeof(double))

static void assert_shape(const mtk_tensor *t, int32_t ndim, const int64_t *shape)
{
    if (!t) fail_msg("no tensor: %s", "see the context's error");
    assert_int_equal(t->ndim, ndim);
    for (int32_t i = 0; i < ndim; i++) assert_int_equal(t->shape[i], shape[i]);
}

static void assert_strides(const mtk_tensor *t, const int64_t *stride)
{
    for (int32_t i = 0; i < t->ndim; i++) assert_int_equal(t->stride[i], stride[i]);
}

static void assert_error(mtk_ctx *ctx, const char *text)
{
    assert_int_not_equal(mtk_ctx_status(ctx), MTK_OK);
    if (!strstr(mtk_ctx_message(ctx), text)) fail_msg("message '%s' lacks '%s'", mtk_ctx_message(ctx), text);
    mtk_ctx_clear_error(ctx);
}

/* torch.linspace(lo, hi, numel(shape)).reshape(shape) on cpu */
static mtk_tensor *lin(mtk_ctx *ctx, mtk_dtype dtype, double lo, double hi, int32_t ndim, const int64_t *shape)
{
    return mtk_reshape(ctx, mtk_linspace(ctx, lo, hi, mtk_shape_numel(shape, ndim), dtype), shape, ndim);
}
#define LIN(ctx, lo, hi, ...) lin(ctx, MTK_FLOAT32, lo, hi, NDIM(__VA_ARGS__), SHAPE(__VA_ARGS__))

static mtk_tensor *floats(mtk_ctx *ctx, const double *v, int64_t n)
{
    mtk_tensor *t = mtk_linspace(ctx, 0, 0, n, MTK_FLOAT32);
    if (!t) return NULL;
    for (int64_t i = 0; i < n; i++) ((float *)mtk_tensor_data(t))[i] = (float)v[i];
    return t;
}

/* element i of a contiguous-or-not cpu tensor, in logical order */
static double value_at(const mtk_tensor *t, int64_t i)
{
    int64_t off = 0;
    for (int32_t d = t->ndim - 1; d >= 0; d--) {
        off += (i % t->shape[d]) * t->stride[d];
        i /= t->shape[d];
    }
    const char *p = (const char *)mtk_tensor_data(t) + off * (int64_t)mtk_dtype_size(t->dtype);
    switch (t->dtype) {
    case MTK_FLOAT32: { float f; memcpy(&f, p, sizeof f); return f; }
    case MTK_FLOAT64: { double f; memcpy(&f, p, sizeof f); return f; }
    case MTK_INT64: { int64_t v; memcpy(&v, p, sizeof v); return (double)v; }
    case MTK_UINT8: return *(const uint8_t *)p;
    default: {
        mtk_tensor *f = mtk_to_dtype(t->ctx, (mtk_tensor *)t, MTK_FLOAT64);
        return value_at(f, 0); /* only called on 1-element views below */
    }
    }
}

/* values in logical order within rtol/atol (NaN equals NaN) */
static void assert_values(const mtk_tensor *t, const double *want, int64_t n, double rtol, double atol)
{
    if (!t) fail_msg("no tensor: %s", mtk_ctx_message(NULL));
    assert_int_equal(mtk_tensor_numel(t), n);
    mtk_tensor *f = t->dtype == MTK_FLOAT16 || t->dtype == MTK_BFLOAT16 ? mtk_to_dtype(t->ctx, (mtk_tensor *)t, MTK_FLOAT64)
                                                                          : (mtk_tensor *)t;
    for (int64_t i = 0; i < n; i++) {
        double got = value_at(f, i);
        if (isnan(want[i]) && isnan(got)) continue;
        if (!(fabs(got - want[i]) <= atol + rtol * fabs(want[i])))
            fail_msg("element %lld: got %.9g, want %.9g", (long long)i, got, want[i]);
    }
}
#define F32 1e-5, 1e-6

static mtk_conv_args conv_args(int64_t stride, int64_t padding, int64_t dilation, int64_t groups)
{
    mtk_conv_args a = mtk_conv_args_default();
    for (int i = 0; i < 3; i++) a.stride[i] = stride, a.padding[i] = padding, a.dilation[i] = dilation;
    a.groups = groups;
    return a;
}

/* FLOPs the table's cost function reports for the op just run by name */
static int64_t flops_by_name(mtk_ctx *ctx, const char *name, const mtk_value *args, int32_t n)
{
    const mtk_op_def *op = mtk_op_find(name);
    mtk_op_call call;
    mtk_op_call_init(&call, ctx, op);
    for (int32_t i = 0; i < n; i++) call.args[i] = args[i];
    assert_true(mtk_op_run(&call));
    return op->cost(&call).flops;
}

/* ---------------------------------------------------------- convolution */

/* output shapes of torch's meta device, every one contiguous */
static void conv_shapes_follow_torch_on_meta(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_conv_args a = conv_args(2, 1, 1, 1);
    mtk_tensor *out = mtk_conv2d(ctx, META(ctx, MTK_FLOAT32, 2, 3, 8, 8), META(ctx, MTK_FLOAT32, 4, 3, 3, 3), NULL, &a);
    assert_shape(out, 4, SHAPE(2, 4, 4, 4));
    assert_strides(out, SHAPE(64, 16, 4, 1));
    /* unbatched input: (C, H, W) in, (C_out, H, W) out */
    out = mtk_conv2d(ctx, META(ctx, MTK_FLOAT32, 3, 5, 5), META(ctx, MTK_FLOAT32, 8, 3, 3, 3), NULL, NULL);
    assert_shape(out, 3, SHAPE(8, 3, 3));
    /* stride, padding, dilation per dim */
    a = conv_args(1, 0, 1, 1);
    a.stride[0] = 2, a.stride[1] = 3, a.padding[0] = 1, a.padding[1] = 2, a.dilation[0] = 2;
    out = mtk_conv2d(ctx, META(ctx, MTK_FLOAT32, 2, 3, 5, 5), META(ctx, MTK_FLOAT32, 8, 3, 3, 3), NULL, &a);
    assert_shape(out, 4, SHAPE(2, 8, 2, 3));
    /* 'same' keeps the size, even with an even kernel */
    a = conv_args(1, 0, 1, 1);
    a.padding_mode = MTK_CONV_PADDING_SAME;
    out = mtk_conv2d(ctx, META(ctx, MTK_FLOAT32, 1, 3, 5, 6), META(ctx, MTK_FLOAT32, 8, 3, 4, 2), NULL, &a);
    assert_shape(out, 4, SHAPE(1, 8, 5, 6));
    out = mtk_conv1d(ctx, META(ctx, MTK_FLOAT16, 3, 5), META(ctx, MTK_FLOAT16, 8, 3, 3), NULL, NULL);
    assert_shape(out, 2, SHAPE(8, 3));
    assert_int_equal(out->dtype, MTK_FLOAT16);
    out = mtk_conv3d(ctx, META(ctx, MTK_FLOAT32, 2, 3, 5, 5, 5), META(ctx, MTK_FLOAT32, 8, 3, 3, 3, 3), NULL, NULL);
    assert_shape(out, 5, SHAPE(2, 8, 3, 3, 3));
    /* transposed: (in - 1) * stride - 2 * padding + dilation * (k - 1) + output_padding + 1 */
    a = conv_args(2, 0, 1, 2);
    a.output_padding[0] = a.output_padding[1] = 1;
    out = mtk_conv_transpose2d(ctx, META(ctx, MTK_FLOAT32, 1, 4, 5, 5), META(ctx, MTK_FLOAT32, 4, 2, 3, 3), NULL, &a);
    assert_shape(out, 4, SHAPE(1, 4, 12, 12));
    /* zero channels in: zero channels out */
    out = mtk_conv2d(ctx, META(ctx, MTK_FLOAT32, 2, 0, 5, 5), META(ctx, MTK_FLOAT32, 8, 0, 3, 3), NULL, NULL);
    assert_shape(out, 4, SHAPE(2, 0, 3, 3));
    mtk_ctx_free(ctx);
}

/* torch 2.13's meta kernel leaves channels-last inputs' outputs contiguous */
static void conv_of_channels_last_input_is_contiguous_as_torch_meta(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_tensor *x = mtk_permute(ctx, META(ctx, MTK_FLOAT32, 2, 8, 8, 3), SHAPE(0, 3, 1, 2), 4);
    mtk_tensor *out = mtk_conv2d(ctx, x, META(ctx, MTK_FLOAT32, 4, 3, 3, 3), NULL, NULL);
    assert_strides(out, SHAPE(144, 36, 6, 1));
    mtk_ctx_free(ctx);
}

/* torch 2.13's cpu kernels (oneDNN off, as the oracle runs them) give a
 * channels-last output when the input or the weight suggests it; size-1
 * dims make layouts ambiguous, and its meta device stays contiguous */
static void conv_cpu_output_is_channels_last_as_torch_cpu(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    /* a channels-last input: NHWC strides, values as torch's */
    mtk_tensor *x = mtk_permute(ctx, LIN(ctx, -1, 1, 1, 3, 3, 2), SHAPE(0, 3, 1, 2), 4);
    mtk_tensor *out = mtk_conv2d(ctx, x, LIN(ctx, -0.5, 0.5, 2, 2, 2, 2), NULL, NULL);
    assert_shape(out, 4, SHAPE(1, 2, 2, 2));
    assert_strides(out, SHAPE(8, 1, 4, 2));
    assert_values(out,
                  VALUES(1.2862745523452759, 0.7843137383460999, -0.21960783004760742, -0.7215685844421387,
                         -0.7215685844421387, -0.21960783004760742, 0.7843137383460999, 1.2862745523452759),
                  F32);
    /* a channels-last weight alone */
    mtk_tensor *w = mtk_permute(ctx, LIN(ctx, -0.5, 0.5, 2, 2, 2, 2), SHAPE(0, 3, 1, 2), 4);
    out = mtk_conv2d(ctx, LIN(ctx, -1, 1, 1, 2, 3, 3), w, NULL, NULL);
    assert_strides(out, SHAPE(8, 1, 4, 2));
    assert_values(out,
                  VALUES(0.8627450466156006, 0.6117647886276245, 0.10980397462844849, -0.14117640256881714,
                         -0.14117640256881714, 0.10980397462844849, 0.6117647886276245, 0.8627450466156006),
                  F32);
    /* bfloat16 conv_transpose2d of a channels-last input: cpu NHWC, meta NCHW */
    mtk_tensor *xb = mtk_permute(ctx, mtk_zeros(ctx, SHAPE(2, 5, 5, 4), 4, MTK_BFLOAT16), SHAPE(0, 3, 1, 2), 4);
    mtk_tensor *wb = mtk_zeros(ctx, SHAPE(4, 3, 3, 3), 4, MTK_BFLOAT16);
    out = mtk_conv_transpose2d(ctx, xb, wb, NULL, NULL);
    assert_strides(out, SHAPE(147, 1, 21, 3));
    mtk_tensor *xm = mtk_permute(ctx, META(ctx, MTK_BFLOAT16, 2, 5, 5, 4), SHAPE(0, 3, 1, 2), 4);
    out = mtk_conv_transpose2d(ctx, xm, META(ctx, MTK_BFLOAT16, 4, 3, 3, 3), NULL, NULL);
    assert_strides(out, SHAPE(147, 49, 7, 1));
    /* conv1d: the (N, C, 1, L) view of a permuted (N, L=1, C) input decides */
    mtk_tensor *xi = mtk_permute(ctx, mtk_zeros(ctx, SHAPE(3, 1, 4), 3, MTK_INT64), SHAPE(0, 2, 1), 3);
    mtk_conv_args a = conv_args(1, 1, 1, 2);
    out = mtk_conv1d(ctx, xi, mtk_zeros(ctx, SHAPE(2, 2, 2), 3, MTK_INT64), NULL, &a);
    assert_strides(out, SHAPE(4, 1, 2));
    /* groups: the groups' (N, 1, 1, 1) outputs suggest contiguous, so does their concatenation */
    x = mtk_permute(ctx, mtk_zeros(ctx, SHAPE(3, 1, 3, 2), 4, MTK_FLOAT32), SHAPE(0, 3, 1, 2), 4);
    w = mtk_permute(ctx, mtk_zeros(ctx, SHAPE(2, 1, 2, 1), 4, MTK_FLOAT32), SHAPE(0, 3, 1, 2), 4);
    a = conv_args(1, 0, 1, 2);
    a.stride[0] = 2, a.dilation[1] = 2;
    out = mtk_conv2d(ctx, x, w, mtk_zeros(ctx, SHAPE(2), 1, MTK_FLOAT32), &a);
    assert_shape(out, 4, SHAPE(3, 2, 1, 1));
    assert_strides(out, SHAPE(2, 1, 1, 1));
    /* an unbatched input whose batched view is not channels-last */
    x = mtk_permute(ctx, mtk_zeros(ctx, SHAPE(4, 5, 3), 3, MTK_FLOAT32), SHAPE(2, 0, 1), 3);
    out = mtk_conv2d(ctx, x, mtk_zeros(ctx, SHAPE(2, 3, 2, 2), 4, MTK_FLOAT32), NULL, NULL);
    assert_strides(out, SHAPE(12, 4, 1));
    /* 5-D: only oneDNN computes channels-last-3d; the native kernels do not */
    x = mtk_permute(ctx, mtk_zeros(ctx, SHAPE(2, 4, 4, 4, 3), 5, MTK_FLOAT32), SHAPE(0, 4, 1, 2, 3), 5);
    out = mtk_conv3d(ctx, x, mtk_zeros(ctx, SHAPE(5, 3, 2, 2, 2), 5, MTK_FLOAT32), NULL, NULL);
    assert_strides(out, SHAPE(135, 27, 9, 3, 1));
    /* an empty input takes torch's empty backend: input * weight[0] viewed
     * as the output, with TensorIterator's strides and dtype promotion */
    a = conv_args(1, 0, 1, 1);
    a.padding_mode = MTK_CONV_PADDING_SAME;
    out = mtk_conv1d(ctx, mtk_zeros(ctx, SHAPE(0, 1, 4), 3, MTK_FLOAT32), mtk_zeros(ctx, SHAPE(1, 1, 3), 3, MTK_FLOAT32),
                     NULL, &a);
    assert_shape(out, 3, SHAPE(0, 1, 4));
    assert_strides(out, SHAPE(4, 0, 1));
    a = conv_args(1, 0, 2, 1);
    out = mtk_conv1d(ctx, mtk_zeros(ctx, SHAPE(0, 2, 5), 3, MTK_INT64), mtk_zeros(ctx, SHAPE(2, 2, 2), 3, MTK_FLOAT32),
                     NULL, &a);
    assert_shape(out, 3, SHAPE(0, 2, 3));
    assert_int_equal(out->dtype, MTK_FLOAT32);
    assert_strides(out, SHAPE(6, 3, 1));
    mtk_ctx_free(ctx);
}

static void conv_errors_keep_torch_words(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new_with_allocator(NULL);
    mtk_ctx_push_device(ctx, MTK_DEVICE_CPU);
    mtk_tensor *x = mtk_tensor_new(ctx, MTK_FLOAT32, SHAPE(1, 4, 32, 32), 4, NULL, MTK_DEVICE_CPU);
    mtk_tensor *w = mtk_tensor_new(ctx, MTK_FLOAT32, SHAPE(8, 3, 3, 3), 4, NULL, MTK_DEVICE_CPU);
    assert_true(mtk_tensor_alloc_storage(x) && mtk_tensor_alloc_storage(w));
    assert_null(mtk_conv2d(ctx, x, w, NULL, NULL));
    assert_error(ctx, "Given groups=1, weight of size [8, 3, 3, 3], expected input[1, 4, 32, 32] to have 3 "
                      "channels, but got 4 channels instead");
    assert_null(mtk_conv2d(ctx, META(ctx, MTK_FLOAT32, 1, 3, 2, 2), META(ctx, MTK_FLOAT32, 8, 3, 3, 3), NULL, NULL));
    assert_error(ctx, "Calculated padded input size per channel: (2 x 2). Kernel size: (3 x 3). Kernel size can't "
                      "be greater than actual input size");
    mtk_conv_args a = conv_args(2, 0, 1, 1);
    a.padding_mode = MTK_CONV_PADDING_SAME;
    assert_null(mtk_conv2d(ctx, META(ctx, MTK_FLOAT32, 1, 3, 5, 5), META(ctx, MTK_FLOAT32, 8, 3, 3, 3), NULL, &a));
    assert_error(ctx, "padding='same' is not supported for strided convolutions");
    assert_null(mtk_conv2d(ctx, META(ctx, MTK_FLOAT32, 3, 5), META(ctx, MTK_FLOAT32, 8, 3, 3, 3), NULL, NULL));
    assert_error(ctx, "Expected 3D (unbatched) or 4D (batched) input to conv2d, but got input of size: [3, 5]");
    mtk_ctx_free(ctx);
}

/* torch's meta kernel only checks channels, kernel fit and output size;
 * its cpu path refuses a bias of the wrong size or a negative padding */
static void conv_meta_accepts_what_only_cpu_refuses(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_tensor *out = mtk_conv2d(ctx, META(ctx, MTK_FLOAT32, 1, 3, 5, 5), META(ctx, MTK_FLOAT32, 8, 3, 3, 3),
                                 META(ctx, MTK_FLOAT32, 7), NULL);
    assert_shape(out, 4, SHAPE(1, 8, 3, 3));
    mtk_conv_args a = conv_args(2, 1, 1, 1);
    a.output_padding[0] = a.output_padding[1] = 2; /* not below stride: cpu refuses */
    out = mtk_conv_transpose2d(ctx, META(ctx, MTK_FLOAT32, 1, 3, 5, 5), META(ctx, MTK_FLOAT32, 3, 4, 3, 3), NULL, &a);
    assert_shape(out, 4, SHAPE(1, 4, 11, 11));

    mtk_tensor *x = LIN(ctx, -1, 1, 1, 3, 5, 5), *w = LIN(ctx, -1, 1, 8, 3, 3, 3), *b = LIN(ctx, 0, 1, 7);
    assert_null(mtk_conv2d(ctx, x, w, b, NULL));
    assert_error(ctx, "Given weight of size [8, 3, 3, 3], expected bias to be 1-dimensional with 8 elements, but "
                      "got bias of size [7] instead");
    assert_null(mtk_conv_transpose2d(ctx, x, LIN(ctx, -1, 1, 3, 4, 3, 3), NULL, &a));
    assert_error(ctx, "output padding must be smaller than either stride or dilation");

    /* an empty input goes to torch's empty backend, which adds the bias
     * in place: int64 output += float bias cannot cast back (cpu only) */
    mtk_tensor *empty = lin(ctx, MTK_INT64, 0, 0, 4, SHAPE(0, 2, 3, 3));
    mtk_tensor *iw = lin(ctx, MTK_INT64, 0, 0, 4, SHAPE(2, 2, 1, 1));
    assert_null(mtk_conv_transpose2d(ctx, empty, iw, LIN(ctx, 0, 1, 2), NULL));
    assert_error(ctx, "result type Float can't be cast to the desired output type Long");
    out = mtk_conv_transpose2d(ctx, META(ctx, MTK_INT64, 0, 2, 3, 3), META(ctx, MTK_INT64, 2, 2, 1, 1),
                               META(ctx, MTK_FLOAT32, 2), NULL);
    assert_shape(out, 4, SHAPE(0, 2, 3, 3));
    mtk_ctx_free(ctx);
}

static void conv2d_values_match_torch(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    /* groups 2, stride 2, padding 1, bias */
    mtk_conv_args a = conv_args(2, 1, 1, 2);
    mtk_tensor *bias = floats(ctx, VALUES(0.1, -0.2, 0.3, -0.4));
    mtk_tensor *out = mtk_conv2d(ctx, LIN(ctx, -1, 1, 1, 4, 5, 5), LIN(ctx, -0.5, 0.5, 4, 2, 3, 3), bias, &a);
    assert_shape(out, 4, SHAPE(1, 4, 3, 3));
    assert_values(out,
                  VALUES(2.171987295150757, 3.1368472576141357, 2.0718307495117188, 2.7248401641845703,
                         3.899829149246216, 2.5336320400238037, 1.4481291770935059, 2.01008677482605,
                         1.2933419942855835, 0.478901743888855, 0.8394083380699158, 0.5016646385192871,
                         0.7961588501930237, 1.2950917482376099, 0.7893299460411072, 0.3696401119232178,
                         0.6345425844192505, 0.3377721309661865, 0.8377721309661865, 1.13454270362854,
                         0.8696401119232178, 1.289330005645752, 1.7950918674468994, 1.296158790588379,
                         1.0016645193099976, 1.3394081592559814, 0.9789018034934998, 0.793341875076294,
                         1.5100868940353394, 0.9481291770935059, 2.0336320400238037, 3.399829149246216,
                         2.2248401641845703, 1.5718308687210083, 2.6368470191955566, 1.6719876527786255),
                  F32);
    /* dilation 2, asymmetric padding, a transposed (non-contiguous) input */
    a = conv_args(1, 0, 2, 1);
    a.padding[0] = 1;
    mtk_tensor *x = mtk_transpose(ctx, LIN(ctx, -1, 1, 1, 2, 5, 5), 2, 3);
    out = mtk_conv2d(ctx, x, LIN(ctx, -1, 1, 1, 2, 3, 3), NULL, &a);
    assert_values(out, VALUES(3.7118849754333496, 5.7839131355285645, 3.7118852138519287), F32);
    /* padding='same' with an even kernel pads more on the right */
    a = conv_args(1, 0, 1, 1);
    a.padding_mode = MTK_CONV_PADDING_SAME;
    out = mtk_conv2d(ctx, LIN(ctx, -1, 1, 1, 2, 4, 4), LIN(ctx, -1, 1, 1, 2, 2, 2), NULL, &a);
    assert_values(out,
                  VALUES(2.691244125366211, 2.69124436378479, 2.69124436378479, 1.4193549156188965, 2.691244125366211,
                         2.691244125366211, 2.691244125366211, 1.2718894481658936, 2.69124436378479, 2.69124436378479,
                         2.691244125366211, 1.1244239807128906, 0.8294931054115295, 0.7557603716850281,
                         0.6820276379585266, 0.1751151978969574),
                  F32);
    mtk_ctx_free(ctx);
}

static void conv1d_conv3d_and_transposed_values_match_torch(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_conv_args a = conv_args(2, 0, 1, 1);
    mtk_tensor *out = mtk_conv1d(ctx, LIN(ctx, -1, 1, 2, 6), LIN(ctx, -1, 1, 3, 2, 2), floats(ctx, VALUES(1, 2, 3)), &a);
    assert_shape(out, 2, SHAPE(3, 3)); /* unbatched */
    assert_values(out,
                  VALUES(2.487603187561035, 1.4297521114349365, 0.3719007968902588, 2.4297518730163574,
                         2.4297521114349365, 2.4297518730163574, 2.371900796890259, 3.4297521114349365,
                         4.487603187561035),
                  F32);
    out = mtk_conv3d(ctx, LIN(ctx, -1, 1, 1, 2, 3, 3, 3), LIN(ctx, -1, 1, 1, 2, 2, 2, 2), NULL, NULL);
    assert_values(out,
                  VALUES(5.212578773498535, 5.212577819824219, 5.212578773498535, 5.212578773498535, 5.212578773498535,
                         5.212578773498535, 5.212578296661377, 5.212578773498535),
                  F32);
    a = conv_args(1, 0, 2, 2);
    out = mtk_conv_transpose1d(ctx, LIN(ctx, -1, 1, 1, 2, 4), LIN(ctx, -1, 1, 2, 1, 3), NULL, &a);
    assert_shape(out, 3, SHAPE(1, 2, 8));
    assert_values(out,
                  VALUES(1.0, 0.7142857313156128, 1.028571367263794, 0.5714285373687744, 0.45714282989501953,
                         0.22857140004634857, 0.08571427315473557, 0.028571419417858124, 0.028571419417858124,
                         0.08571427315473557, 0.22857140004634857, 0.45714282989501953, 0.5714285373687744,
                         1.028571367263794, 0.7142857313156128, 1.0),
                  F32);
    mtk_ctx_free(ctx);
}

static void conv_integer_and_half_values_match_torch(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    /* int64: exact, with the bias */
    mtk_tensor *x = mtk_reshape(ctx, mtk_arange_int(ctx, 0, 32, 1, MTK_INT64), SHAPE(1, 2, 4, 4), 4);
    mtk_tensor *w = mtk_reshape(ctx, mtk_arange_int(ctx, 0, 18, 1, MTK_INT64), SHAPE(1, 2, 3, 3), 4);
    mtk_tensor *seven = mtk_full(ctx, SHAPE(1), 1, 7, MTK_INT64), *five = mtk_full(ctx, SHAPE(1), 1, 5, MTK_INT64);
    mtk_tensor *three = mtk_full(ctx, SHAPE(1), 1, 3, MTK_INT64), *two = mtk_full(ctx, SHAPE(1), 1, 2, MTK_INT64);
    x = mtk_sub(ctx, mtk_remainder(ctx, x, seven), three);
    w = mtk_sub(ctx, mtk_remainder(ctx, w, five), two);
    mtk_tensor *b = mtk_full(ctx, SHAPE(1), 1, 5, MTK_INT64);
    mtk_tensor *out = mtk_conv2d(ctx, x, w, b, NULL);
    assert_int_equal(out->dtype, MTK_INT64);
    assert_values(out, VALUES(3, 14, 19, 2), 0, 0);
    /* float16: computed in float32, rounded once */
    out = mtk_conv2d(ctx, lin(ctx, MTK_FLOAT16, -1, 1, 4, SHAPE(1, 2, 4, 4)), lin(ctx, MTK_FLOAT16, -1, 1, 4, SHAPE(1, 2, 2, 2)),
                     NULL, NULL);
    assert_int_equal(out->dtype, MTK_FLOAT16);
    assert_values(out, VALUES(2.69140625, 2.69140625, 2.69140625, 2.69140625, 2.69140625, 2.69140625, 2.69140625,
                              2.69140625, 2.69140625),
                  2e-3, 1e-3);
    mtk_ctx_free(ctx);
}

/* bfloat16 conv_transpose2d of a channels-last input: torch's slow kernel
 * runs channels-last, its GEMM with four partial sums and its col2im
 * position by position, each sum rounded to bfloat16; the values are
 * torch 2.13's bits (a float32 GEMM rounded once, or the contiguous
 * kernel's order, is 1-2 ulps off on 21 of these 63) */
static void conv_transpose_bf16_channels_last_values_are_torch_bits(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_tensor *x = mtk_permute(ctx, lin(ctx, MTK_BFLOAT16, -2.5, 3.0, 4, SHAPE(1, 5, 5, 2)), SHAPE(0, 3, 1, 2), 4);
    mtk_tensor *w = mtk_narrow(ctx, lin(ctx, MTK_BFLOAT16, 0.5, 3.0, 4, SHAPE(4, 3, 3, 3)), 0, 1, 2);
    mtk_tensor *b = mtk_select(ctx, lin(ctx, MTK_BFLOAT16, -3.0, 1.5, 2, SHAPE(2, 3)), 0, 1);
    mtk_conv_args a = mtk_conv_args_default();
    a.padding[0] = 2, a.padding[1] = 1, a.dilation[1] = 2;
    mtk_tensor *out = mtk_conv_transpose2d(ctx, x, w, b, &a); /* (1, 3, 3, 7), channels-last */
    assert_shape(out, 4, SHAPE(1, 3, 3, 7));
    assert_strides(out, SHAPE(63, 1, 21, 3));
    assert_int_equal(out->dtype, MTK_BFLOAT16);
    assert_values(out,
                  VALUES(-10.5, -20.75, -16.75, -25.25, -17.0, -12.8125, -6.5625, -0.265625, -0.234375, 3.859375,
                         5.875, 3.890625, 8.0625, 3.953125, 9.9375, 20.375, 24.5, 37.0, 24.75, 29.0, 14.4375,
                         -10.9375, -22.75, -18.125, -27.375, -18.25, -13.5, -6.5, 0.6484375, 0.7578125, 5.40625,
                         7.78125, 5.46875, 10.25, 5.4375, 12.375, 24.125, 28.875, 43.0, 29.125, 33.75, 17.375,
                         -11.5, -24.625, -19.25, -30.125, -19.5, -14.25, -6.375, 1.5625, 1.65625, 6.90625, 9.625,
                         6.96875, 12.25, 6.9375, 14.625, 27.75, 33.25, 49.0, 33.5, 38.5, 20.25),
                  0, 0);
    mtk_ctx_free(ctx);
}

/* FlopCounterMode's conv_flop_count: 2 * prod(out spatial) * prod(kernel) *
 * batch * C_out * C_in/groups, with the input's spatial size for
 * transposed convolutions */
/* Column ranges that end inside an output row, left of the first
 * column whose tap reads input (padding='same', dilation 2, a 2-wide
 * output split between two threads): the im2col copy once wrote past its
 * segment and crashed.  Values printed by torch 2.13. */
static void conv_segments_outside_the_input_columns_are_zero_filled(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_ctx_set_num_threads(ctx, 2);
    mtk_value v;
    assert_true(mtk_ctx_push_device(ctx, MTK_DEVICE_CPU));
    assert_true(mtk_eval(ctx, "conv2d(reshape(linspace(0.5, 1.5, 10), [1, 1, 5, 2]), narrow(reshape(linspace(-3.0, "
                              "3.0, 54), [6, 1, 3, 3]), 0, 1, 3), padding='same', dilation=[1, 2])",
                         &v));
    assert_true(mtk_ctx_pop_device(ctx));
    static const double want[30] = {
        -1.6226414442062378, -1.9245282411575317, -3.160377264022827,  -3.6698110103607178, -4.1792449951171875,
        -4.688679218292236,  -5.198112964630127,  -5.707547187805176,  -4.301886558532715,  -4.6792449951171875,
        -0.37735843658447266, -0.45283010601997375, -0.9528301358222961, -1.1226414442062378, -1.2924526929855347,
        -1.462264060974121,  -1.6320754289627075, -1.8018866777420044, -1.6981130838394165, -1.8490564823150635,
        0.8679245114326477,  1.01886785030365,    1.2547168731689453,  1.4245282411575317,  1.5943394899368286,
        1.764150857925415,   1.933962106704712,   2.103773593902588,   0.9056602716445923,  0.9811319708824158,
    };
    assert_values(v.as.tensor, want, 30, 1e-6, 1e-6);
    mtk_ctx_set_num_threads(ctx, 0);
    mtk_ctx_free(ctx);
}

static void conv_flops_match_flop_counter(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_value args[8];
    args[0] = mtk_value_tensor(META(ctx, MTK_FLOAT32, 2, 3, 8, 8));
    args[1] = mtk_value_tensor(META(ctx, MTK_FLOAT32, 4, 3, 3, 3));
    assert_int_equal(flops_by_name(ctx, "conv2d", args, 2), 15552);
    args[0] = mtk_value_tensor(META(ctx, MTK_FLOAT32, 3, 8, 8)); /* unbatched: batch 1 */
    assert_int_equal(flops_by_name(ctx, "conv2d", args, 2), 7776);
    args[0] = mtk_value_tensor(META(ctx, MTK_FLOAT32, 2, 4, 8, 8));
    args[1] = mtk_value_tensor(META(ctx, MTK_FLOAT32, 4, 3, 3, 3));
    args[2] = mtk_value_none();
    args[3] = mtk_value_int(2);
    assert_int_equal(flops_by_name(ctx, "conv_transpose2d", args, 4), 27648);
    args[0] = mtk_value_tensor(META(ctx, MTK_FLOAT32, 2, 4, 8, 8, 8));
    args[1] = mtk_value_tensor(META(ctx, MTK_FLOAT32, 4, 4, 3, 3, 3));
    assert_int_equal(flops_by_name(ctx, "conv3d", args, 2), 373248);
    args[0] = mtk_value_tensor(META(ctx, MTK_FLOAT32, 0, 3, 8, 8));
    args[1] = mtk_value_tensor(META(ctx, MTK_FLOAT32, 4, 3, 3, 3));
    assert_int_equal(flops_by_name(ctx, "conv2d", args, 2), 0);
    mtk_ctx_free(ctx);
}

/* the thread count changes nothing but the speed */
static void conv_results_do_not_depend_on_threads(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_tensor *x = LIN(ctx, -2, 2, 4, 6, 9, 9), *w = LIN(ctx, -1, 1, 6, 2, 3, 3);
    mtk_conv_args a = conv_args(1, 1, 1, 3);
    mtk_ctx_set_num_threads(ctx, 1);
    assert_int_equal(mtk_ctx_num_threads(ctx), 1);
    mtk_tensor *one = mtk_conv2d(ctx, x, w, NULL, &a);
    mtk_ctx_set_num_threads(ctx, 3);
    mtk_tensor *three = mtk_conv2d(ctx, x, w, NULL, &a);
    mtk_ctx_set_num_threads(ctx, 0);
    assert_true(mtk_ctx_num_threads(ctx) >= 1);
    assert_non_null(one);
    assert_non_null(three);
    assert_memory_equal(mtk_tensor_data(one), mtk_tensor_data(three), mtk_tensor_nbytes(one));
    mtk_ctx_free(ctx);
}

/* The stride-1 fast path (16+ channels, float32/float64, groups 1)
 * against a direct convolution computed here in double: padding, 'same'
 * with an even kernel, dilation, bias, a channels-last input, batch 1 and
 * 2 or 3 threads. */
typedef struct fast_case {
    mtk_dtype dtype;
    int64_t n, c, h, w, o, kh, kw, pad, dil;
    bool same, bias, channels_last;
    int32_t threads;
} fast_case;

static double direct_conv(const double *x, const double *w, const double *b, const fast_case *k, int64_t ph,
                          int64_t pw, int64_t n, int64_t o, int64_t oy, int64_t ox)
{
    double sum = b ? b[o] : 0.0;
    for (int64_t c = 0; c < k->c; c++)
        for (int64_t i = 0; i < k->kh; i++)
            for (int64_t j = 0; j < k->kw; j++) {
                int64_t y = oy - ph + i * k->dil, xx = ox - pw + j * k->dil;
                if (y < 0 || y >= k->h || xx < 0 || xx >= k->w) continue;
                sum += x[((n * k->c + c) * k->h + y) * k->w + xx] * w[((o * k->c + c) * k->kh + i) * k->kw + j];
            }
    return sum;
}

static void conv_fast_path_matches_a_direct_convolution(void **state)
{
    (void)state;
    static const fast_case cases[] = {
        { MTK_FLOAT32, 2, 16, 9, 11, 16, 3, 3, 1, 1, false, true, false, 2 },
        { MTK_FLOAT64, 1, 24, 7, 8, 20, 3, 3, 1, 1, false, true, false, 2 },
        { MTK_FLOAT32, 1, 16, 8, 9, 17, 4, 4, 0, 1, true, false, false, 3 },  /* 'same', even kernel */
        { MTK_FLOAT32, 3, 16, 10, 10, 16, 3, 3, 2, 2, false, true, true, 2 }, /* dilation, NHWC input */
        { MTK_FLOAT32, 1, 32, 12, 13, 16, 5, 3, 3, 1, false, false, false, 1 },
    };
    for (size_t t = 0; t < sizeof cases / sizeof *cases; t++) {
        const fast_case *k = &cases[t];
        mtk_ctx *ctx = mtk_ctx_new();
        int64_t nx = k->n * k->c * k->h * k->w, nw = k->o * k->c * k->kh * k->kw;
        double *x = malloc((size_t)nx * sizeof *x), *w = malloc((size_t)nw * sizeof *w), b[64];
        for (int64_t i = 0; i < nx; i++) x[i] = (double)((i * 37) % 23) / 11.0 - 1.0;
        for (int64_t i = 0; i < nw; i++) w[i] = (double)((i * 17) % 19) / 9.0 - 1.0;
        for (int64_t i = 0; i < k->o; i++) b[i] = 0.25 * (double)(i % 5) - 0.5;
        /* the input as a tensor: logical NCHW order, stored NHWC when channels_last */
        mtk_tensor *tx = mtk_tensor_new(ctx, k->dtype, SHAPE(k->n, k->c, k->h, k->w), 4,
                                        k->channels_last ? SHAPE(k->h * k->w * k->c, 1, k->w * k->c, k->c) : NULL,
                                        MTK_DEVICE_CPU);
        mtk_tensor *tw = mtk_tensor_new(ctx, k->dtype, SHAPE(k->o, k->c, k->kh, k->kw), 4, NULL, MTK_DEVICE_CPU);
        mtk_tensor *tb = k->bias ? mtk_tensor_new(ctx, k->dtype, SHAPE(k->o), 1, NULL, MTK_DEVICE_CPU) : NULL;
        assert_true(mtk_tensor_alloc_storage(tx) && mtk_tensor_alloc_storage(tw) && (!tb || mtk_tensor_alloc_storage(tb)));
        size_t es = mtk_dtype_size(k->dtype);
        for (int64_t n = 0; n < k->n; n++)
            for (int64_t c = 0; c < k->c; c++)
                for (int64_t y = 0; y < k->h; y++)
                    for (int64_t q = 0; q < k->w; q++) {
                        int64_t off = n * tx->stride[0] + c * tx->stride[1] + y * tx->stride[2] + q * tx->stride[3];
                        mtk_store_f64(k->dtype, (char *)mtk_tensor_data(tx) + off * (int64_t)es,
                                      x[((n * k->c + c) * k->h + y) * k->w + q]);
                    }
        for (int64_t i = 0; i < nw; i++) mtk_store_f64(k->dtype, (char *)mtk_tensor_data(tw) + i * (int64_t)es, w[i]);
        for (int64_t i = 0; tb && i < k->o; i++) mtk_store_f64(k->dtype, (char *)mtk_tensor_data(tb) + i * (int64_t)es, b[i]);
        mtk_conv_args a = conv_args(1, k->pad, k->dil, 1);
        if (k->same) a.padding_mode = MTK_CONV_PADDING_SAME;
        mtk_ctx_set_num_threads(ctx, k->threads);
        mtk_tensor *out = mtk_conv2d(ctx, tx, tw, tb, &a);
        mtk_ctx_set_num_threads(ctx, 0);
        assert_non_null(out);
        /* torch's 'same': total padding dil*(k-1), the smaller half first */
        int64_t ph = k->same ? k->dil * (k->kh - 1) / 2 : k->pad, pw = k->same ? k->dil * (k->kw - 1) / 2 : k->pad;
        double rtol = k->dtype == MTK_FLOAT64 ? 1e-12 : 1e-5;
        int64_t i = 0;
        for (int64_t n = 0; n < out->shape[0]; n++)
            for (int64_t o = 0; o < out->shape[1]; o++)
                for (int64_t oy = 0; oy < out->shape[2]; oy++)
                    for (int64_t ox = 0; ox < out->shape[3]; ox++, i++) {
                        double want = direct_conv(x, w, tb ? b : NULL, k, ph, pw, n, o, oy, ox);
                        double got = value_at(out, i);
                        if (fabs(got - want) > rtol * fabs(want) + rtol)
                            fail_msg("case %zu element %lld: got %.9g, want %.9g", t, (long long)i, got, want);
                    }
        free(x);
        free(w);
        mtk_ctx_free(ctx);
    }
}

/* The direct float32 kernel (conv_direct.c) against a convolution
 * computed here in double, on every geometry it takes: 1-D to 3-D,
 * strides 1-3 (its phase planes), dilation, padding, groups, output
 * channels that do not fill its tiles, a channels-last or transposed
 * input, bias or not, 1-3 threads.  Each case first checks that the
 * direct kernel is the one that runs it (on an AVX2/AVX-512 cpu). */
typedef struct direct_case {
    int32_t spatial;
    int64_t n, c, o, groups, size[3], kernel[3], stride, pad, dil;
    bool bias;
    int layout; /* 0 contiguous, 1 channels-last (2-D), 2 the input's last two dims swapped in memory */
    int32_t threads;
} direct_case;

static double direct_reference(const double *x, const double *w, const double *b, const direct_case *k,
                               const int64_t *in, const int64_t *out, int64_t n, int64_t o, const int64_t *at)
{
    int64_t cg = k->c / k->groups, og = k->o / k->groups, g = o / og;
    double sum = b ? b[o] : 0.0;
    (void)out;
    for (int64_t c = 0; c < cg; c++)
        for (int64_t kd = 0; kd < k->kernel[0]; kd++)
            for (int64_t kh = 0; kh < k->kernel[1]; kh++)
                for (int64_t kw = 0; kw < k->kernel[2]; kw++) {
                    int64_t pos[3] = { kd, kh, kw }, src[3];
                    bool inside = true;
                    for (int d = 0; d < 3; d++) {
                        int64_t pad = d < 3 - k->spatial ? 0 : k->pad, st = d < 3 - k->spatial ? 1 : k->stride;
                        int64_t dil = d < 3 - k->spatial ? 1 : k->dil;
                        src[d] = at[d] * st - pad + pos[d] * dil;
                        if (src[d] < 0 || src[d] >= in[d]) inside = false;
                    }
                    if (!inside) continue;
                    int64_t xi = (((n * k->c + g * cg + c) * in[0] + src[0]) * in[1] + src[1]) * in[2] + src[2];
                    int64_t wi = (((o * cg + c) * k->kernel[0] + kd) * k->kernel[1] + kh) * k->kernel[2] + kw;
                    sum += x[xi] * w[wi];
                }
    return sum;
}

static void conv_direct_kernel_matches_a_reference_convolution(void **state)
{
    (void)state;
    static const direct_case cases[] = {
        { 2, 2, 32, 64, 1, { 1, 40, 40 }, { 1, 3, 3 }, 1, 1, 1, false, 0, 2 },  /* ResNet-like 3x3 */
        { 2, 1, 3, 64, 1, { 1, 61, 58 }, { 1, 7, 7 }, 2, 3, 1, true, 1, 2 },   /* stem-like, NHWC */
        { 2, 2, 6, 16, 2, { 1, 40, 45 }, { 1, 3, 2 }, 3, 2, 2, true, 2, 3 },    /* stride 3, dilation, groups */
        { 2, 1, 4, 32, 4, { 1, 50, 64 }, { 1, 1, 1 }, 1, 0, 1, false, 0, 1 },   /* 1x1, depthwise-ish groups */
        { 1, 3, 5, 16, 1, { 1, 1, 200 }, { 1, 1, 5 }, 2, 2, 3, true, 0, 2 },     /* 1-D */
        { 3, 1, 3, 13, 1, { 9, 30, 33 }, { 3, 3, 3 }, 1, 1, 1, true, 0, 2 },    /* 3-D */
        { 3, 2, 4, 16, 2, { 8, 26, 41 }, { 2, 3, 4 }, 2, 1, 1, false, 2, 2 },    /* 3-D, stride 2, groups */
        /* padding wider than the taps reach: bands that start in a row's
         * right padding (the copy once wrote a negative length there) */
        { 2, 1, 3, 15, 1, { 1, 29, 13 }, { 1, 1, 1 }, 1, 2, 3, false, 0, 2 },
        /* the stem contiguous (stride-2 column phases copied four at a
         * time), odd and even widths, batch 1 split in bands on 2 threads */
        { 2, 1, 3, 64, 1, { 1, 61, 59 }, { 1, 7, 7 }, 2, 3, 1, true, 0, 2 },
        { 2, 1, 3, 20, 1, { 1, 36, 38 }, { 1, 7, 7 }, 2, 3, 1, false, 0, 1 },
    };
    for (size_t t = 0; t < sizeof cases / sizeof *cases; t++) {
        const direct_case *k = &cases[t];
        mtk_ctx *ctx = mtk_ctx_new();
        int32_t s = k->spatial, nd = 2 + s;
        const int64_t *in = k->size;
        int64_t xshape[5] = { k->n, k->c }, wshape[5] = { k->o, k->c / k->groups };
        for (int32_t d = 0; d < s; d++) {
            xshape[2 + d] = in[3 - s + d];
            wshape[2 + d] = k->kernel[3 - s + d];
        }
        int64_t nx = mtk_shape_numel(xshape, nd), nw = mtk_shape_numel(wshape, nd);
        double *x = malloc((size_t)nx * sizeof *x), *w = malloc((size_t)nw * sizeof *w), b[64];
        for (int64_t i = 0; i < nx; i++) x[i] = (double)((i * 37) % 23) / 11.0 - 1.0;
        for (int64_t i = 0; i < nw; i++) w[i] = (double)((i * 17) % 19) / 9.0 - 1.0;
        for (int64_t i = 0; i < k->o; i++) b[i] = 0.25 * (double)(i % 5) - 0.5;
        /* the input: logical order x, stored in the case's layout */
        int64_t xstride[5];
        xstride[nd - 1] = 1;
        for (int32_t d = nd - 2; d >= 0; d--) xstride[d] = xstride[d + 1] * xshape[d + 1];
        if (k->layout == 1) { /* NHWC */
            xstride[1] = 1, xstride[3] = k->c, xstride[2] = k->c * xshape[3], xstride[0] = k->c * xshape[2] * xshape[3];
        } else if (k->layout == 2) { /* the last two dims swapped in memory */
            xstride[nd - 2] = 1;
            xstride[nd - 1] = xshape[nd - 2];
        }
        mtk_tensor *tx = mtk_tensor_new(ctx, MTK_FLOAT32, xshape, nd, xstride, MTK_DEVICE_CPU);
        mtk_tensor *tw = mtk_tensor_new(ctx, MTK_FLOAT32, wshape, nd, NULL, MTK_DEVICE_CPU);
        mtk_tensor *tb = k->bias ? mtk_tensor_new(ctx, MTK_FLOAT32, SHAPE(k->o), 1, NULL, MTK_DEVICE_CPU) : NULL;
        assert_true(mtk_tensor_alloc_storage(tx) && mtk_tensor_alloc_storage(tw) && (!tb || mtk_tensor_alloc_storage(tb)));
        for (int64_t i = 0; i < nx; i++) {
            int64_t off = 0, rest = i;
            for (int32_t d = nd - 1; d >= 0; d--) {
                off += (rest % xshape[d]) * xstride[d];
                rest /= xshape[d];
            }
            ((float *)mtk_tensor_data(tx))[off] = (float)x[i];
        }
        for (int64_t i = 0; i < nw; i++) ((float *)mtk_tensor_data(tw))[i] = (float)w[i];
        for (int64_t i = 0; tb && i < k->o; i++) ((float *)mtk_tensor_data(tb))[i] = (float)b[i];
        mtk_conv_args a = conv_args(k->stride, k->pad, k->dil, k->groups);
        /* the plan, to check the direct kernel takes it */
        static const char *const names[] = { "conv1d", "conv2d", "conv3d" };
        mtk_op_call call;
        mtk_op_call_init(&call, ctx, mtk_op_find(names[s - 1]));
        call.args[MTK_CONV_ARG_INPUT] = mtk_value_tensor(tx);
        call.args[MTK_CONV_ARG_WEIGHT] = mtk_value_tensor(tw);
        call.args[MTK_CONV_ARG_BIAS] = tb ? mtk_value_tensor(tb) : mtk_value_none();
        call.args[MTK_CONV_ARG_STRIDE] = mtk_value_int_list(ctx, a.stride, s);
        call.args[MTK_CONV_ARG_PADDING] = mtk_value_int_list(ctx, a.padding, s);
        call.args[MTK_CONV_ARG_DILATION] = mtk_value_int_list(ctx, a.dilation, s);
        call.args[MTK_CONV_ARG_GROUPS] = mtk_value_int(k->groups);
        call.device = MTK_DEVICE_CPU;
        mtk_conv_plan plan;
        assert_true(mtk_conv_make_plan(ctx, &call, true, &plan));
        /* the baseline variant (MTK_CPU_ISA=baseline) has no direct tile */
        if (cpu_isa_active() != CPU_ISA_BASELINE)
            if (!mtk_conv_direct_applies(&plan, MTK_FLOAT32, MTK_FLOAT32)) fail_msg("case %zu: not the direct kernel", t);
        mtk_ctx_set_num_threads(ctx, k->threads);
        mtk_tensor *out = s == 1 ? mtk_conv1d(ctx, tx, tw, tb, &a)
                          : s == 2 ? mtk_conv2d(ctx, tx, tw, tb, &a)
                                   : mtk_conv3d(ctx, tx, tw, tb, &a);
        mtk_ctx_set_num_threads(ctx, 0);
        assert_non_null(out);
        int64_t osize[3] = { 1, 1, 1 };
        for (int32_t d = 0; d < s; d++) osize[3 - s + d] = out->shape[2 + d];
        int64_t i = 0;
        for (int64_t n = 0; n < k->n; n++)
            for (int64_t o = 0; o < k->o; o++)
                for (int64_t od = 0; od < osize[0]; od++)
                    for (int64_t oh = 0; oh < osize[1]; oh++)
                        for (int64_t ow = 0; ow < osize[2]; ow++, i++) {
                            int64_t at[3] = { od, oh, ow };
                            double want = direct_reference(x, w, tb ? b : NULL, k, in, osize, n, o, at);
                            double got = value_at(out, i);
                            if (fabs(got - want) > 1e-5 * fabs(want) + 1e-4)
                                fail_msg("case %zu element %lld: got %.9g, want %.9g", t, (long long)i, got, want);
                        }
        free(x);
        free(w);
        mtk_ctx_free(ctx);
    }
}

/* -------------------------------------------------------------- pooling */

static void max_pool2d_ceil_mode_and_indices_match_torch(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_pool_args a = mtk_pool_args_default(3);
    a.stride[0] = a.stride[1] = 2, a.padding[0] = a.padding[1] = 1, a.ceil_mode = true;
    mtk_tensor *indices = NULL;
    mtk_tensor *out = mtk_max_pool2d(ctx, LIN(ctx, -1, 1, 1, 1, 5, 5), &a, &indices);
    assert_shape(out, 4, SHAPE(1, 1, 3, 3));
    assert_values(out,
                  VALUES(-0.5, -0.3333333134651184, -0.2499999701976776, 0.3333333134651184, 0.5, 0.5833333134651184,
                         0.75, 0.9166666865348816, 1.0),
                  F32);
    assert_int_equal(indices->dtype, MTK_INT64);
    assert_values(indices, VALUES(6, 8, 9, 16, 18, 19, 21, 23, 24), 0, 0);
    /* NaN wins a window */
    mtk_tensor *x = mtk_reshape(ctx, floats(ctx, VALUES(1, 5, 2, 0, 3, NAN, 4, 7, 6, 2, 8, 1, 0, 9, 3, 3)),
                                SHAPE(1, 1, 4, 4), 4);
    a = mtk_pool_args_default(2);
    out = mtk_max_pool2d(ctx, x, &a, &indices);
    assert_values(out, VALUES(NAN, 7, 9, 8), F32);
    assert_values(indices, VALUES(5, 7, 13, 10), 0, 0);
    mtk_ctx_free(ctx);
}

static void pooling_keeps_channels_last_as_torch_meta(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_tensor *x = mtk_permute(ctx, META(ctx, MTK_FLOAT32, 2, 8, 8, 3), SHAPE(0, 3, 1, 2), 4);
    mtk_pool_args a = mtk_pool_args_default(2);
    mtk_tensor *indices;
    mtk_tensor *out = mtk_max_pool2d(ctx, x, &a, &indices);
    assert_strides(out, SHAPE(48, 1, 12, 3));
    assert_strides(indices, SHAPE(48, 1, 12, 3));
    out = mtk_avg_pool2d(ctx, x, &a);
    assert_strides(out, SHAPE(48, 1, 12, 3));
    out = mtk_adaptive_avg_pool2d(ctx, x, SHAPE(1, 1)); /* torch's mean path keeps it too */
    assert_strides(out, SHAPE(3, 1, 3, 3));
    /* avg_pool3d does not; max_pool3d does */
    mtk_tensor *x5 = mtk_permute(ctx, META(ctx, MTK_FLOAT32, 2, 8, 8, 8, 3), SHAPE(0, 4, 1, 2, 3), 5);
    out = mtk_avg_pool3d(ctx, x5, &a);
    assert_strides(out, SHAPE(192, 64, 16, 4, 1));
    out = mtk_max_pool3d(ctx, x5, &a, NULL);
    assert_strides(out, SHAPE(192, 1, 48, 12, 3));
    mtk_ctx_free(ctx);
}

static void avg_pool_divisors_match_torch(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_tensor *x = LIN(ctx, -1, 1, 1, 1, 5, 5);
    mtk_pool_args a = mtk_pool_args_default(3);
    a.stride[0] = a.stride[1] = 2, a.padding[0] = a.padding[1] = 1, a.count_include_pad = false;
    assert_values(mtk_avg_pool2d(ctx, x, &a),
                  VALUES(-0.75, -0.625, -0.5, -0.12499997019767761, 0.0, 0.125, 0.4999999701976776, 0.625, 0.75), F32);
    a = mtk_pool_args_default(2);
    a.divisor_override = 3;
    assert_values(mtk_avg_pool2d(ctx, x, &a),
                  VALUES(-1.0, -0.7777777314186096, 0.1111111119389534, 0.3333333134651184), F32);
    /* int64 sums divide with truncation */
    mtk_tensor *xi = mtk_reshape(ctx, mtk_arange_int(ctx, -5, 5, 1, MTK_INT64), SHAPE(1, 1, 10), 3);
    a = mtk_pool_args_default(3);
    a.stride[0] = 2, a.padding[0] = 1;
    assert_values(mtk_avg_pool1d(ctx, xi, &a), VALUES(-3, -3, -1, 1, 3), 0, 0);
    mtk_ctx_free(ctx);
}

static void adaptive_pools_match_torch(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_tensor *x = LIN(ctx, -1, 1, 1, 1, 5, 6);
    mtk_tensor *out = mtk_adaptive_avg_pool2d(ctx, x, SHAPE(3, -1)); /* (3, None) */
    assert_shape(out, 4, SHAPE(1, 1, 3, 6));
    assert_values(out,
                  VALUES(-0.7931034564971924, -0.7241379022598267, -0.6551724076271057, -0.5862069129943848,
                         -0.517241358757019, -0.4482758641242981, -0.17241381108760834, -0.10344827175140381,
                         -0.034482765942811966, 0.03448275849223137, 0.10344827175140381, 0.17241378128528595,
                         0.4482758641242981, 0.517241358757019, 0.5862069129943848, 0.6551724076271057,
                         0.7241379022598267, 0.7931034564971924),
                  F32);
    mtk_tensor *indices;
    out = mtk_adaptive_max_pool2d(ctx, mtk_neg(ctx, x), SHAPE(2, 4), &indices);
    assert_shape(indices, 4, SHAPE(1, 1, 2, 4));
    assert_values(indices, VALUES(0, 1, 3, 4, 12, 13, 15, 16), 0, 0);
    /* float16 3-D: torch sums in float16 and divides by kd, kh, kw in turn */
    out = mtk_adaptive_avg_pool3d(ctx, lin(ctx, MTK_FLOAT16, -1, 1, 5, SHAPE(1, 2, 2, 3, 4)), SHAPE(1, 2, 3));
    assert_values(out,
                  VALUES(-0.63818359375, -0.59619140625, -0.55322265625, -0.46826171875, -0.425537109375,
                         -0.38330078125, 0.383056640625, 0.425537109375, 0.46826171875, 0.55322265625, 0.595703125,
                         0.638671875),
                  0, 0);
    mtk_ctx_free(ctx);
}

static void pooling_errors_keep_torch_words(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_pool_args a = mtk_pool_args_default(3);
    a.padding[0] = a.padding[1] = 2;
    assert_null(mtk_max_pool2d(ctx, META(ctx, MTK_FLOAT32, 2, 3, 8, 8), &a, NULL));
    assert_error(ctx, "pad should be at most half of effective kernel size, but got pad=2, kernel_size=3 and dilation=1");
    a = mtk_pool_args_default(9);
    assert_null(mtk_avg_pool2d(ctx, META(ctx, MTK_FLOAT32, 2, 3, 8, 8), &a));
    assert_error(ctx, "Given input size: (3x8x8). Calculated output size: (3x0x0). Output size is too small");
    assert_null(mtk_adaptive_avg_pool2d(ctx, META(ctx, MTK_FLOAT32, 2, 3, 8, 8), SHAPE(2, -2)));
    assert_error(ctx, "elements of output_size must be greater than or equal to 0");
    mtk_ctx_free(ctx);
}

static void pooling_cost_counts_elements(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_value args[2] = { mtk_value_tensor(META(ctx, MTK_FLOAT32, 2, 3, 8, 8)), mtk_value_int(2) };
    const mtk_op_def *op = mtk_op_find("max_pool2d");
    mtk_op_call call;
    mtk_op_call_init(&call, ctx, op);
    call.args[0] = args[0];
    call.args[1] = args[1];
    assert_true(mtk_op_run(&call));
    mtk_op_cost cost = op->cost(&call);
    assert_int_equal(cost.flops, 0);
    assert_int_equal(cost.elementwise, 2 * 3 * 4 * 4);
    mtk_ctx_free(ctx);
}

/* -------------------------------------------------------- interpolation */

static mtk_tensor *interp(mtk_ctx *ctx, mtk_tensor *x, const int64_t *size, const double *scale, const char *mode,
                          int align_corners, bool antialias)
{
    mtk_interp_args a = { size, scale, mode, align_corners, -1, antialias };
    return mtk_interpolate(ctx, x, &a);
}

static void interpolate_sizes_and_errors_follow_torch(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    /* floor(in * scale) */
    mtk_tensor *out = interp(ctx, META(ctx, MTK_FLOAT32, 2, 3, 8), NULL, (const double[]){ 1.7 }, "nearest", -1, false);
    assert_shape(out, 3, SHAPE(2, 3, 13));
    out = interp(ctx, META(ctx, MTK_FLOAT32, 2, 3, 8, 8), NULL, (const double[]){ 1.5, 2 }, "bilinear", 0, false);
    assert_shape(out, 4, SHAPE(2, 3, 12, 16));
    /* channels-last in, channels-last out */
    mtk_tensor *cl = mtk_permute(ctx, META(ctx, MTK_FLOAT32, 2, 8, 8, 3), SHAPE(0, 3, 1, 2), 4);
    out = interp(ctx, cl, NULL, (const double[]){ 2, 2 }, "bicubic", 0, false);
    assert_strides(out, SHAPE(768, 1, 48, 3));
    assert_null(interp(ctx, META(ctx, MTK_FLOAT32, 2, 3, 8), SHAPE(5), NULL, "bilinear", -1, false));
    assert_error(ctx, "Got 3D input, but bilinear mode needs 4D input");
    assert_null(interp(ctx, META(ctx, MTK_FLOAT32, 2, 3, 8), SHAPE(5), NULL, "nearest", 1, false));
    assert_error(ctx, "align_corners option can only be set with the interpolating modes");
    assert_null(interp(ctx, META(ctx, MTK_FLOAT32, 2, 3, 8, 8), SHAPE(5, 5), NULL, "nearest", -1, true));
    assert_error(ctx, "Anti-alias option is restricted to bilinear, bicubic, and lanczos modes");
    assert_null(interp(ctx, META(ctx, MTK_FLOAT32, 2, 3, 8), NULL, (const double[]){ 0.1 }, "nearest", -1, false));
    assert_error(ctx, "Input and output sizes should be greater than 0");
    assert_null(interp(ctx, META(ctx, MTK_FLOAT32, 2, 3, 8), NULL, NULL, "nearest", -1, false));
    assert_error(ctx, "either size or scale_factor should be defined");
    mtk_ctx_free(ctx);
}

static void interpolate_values_match_torch(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_tensor *x = LIN(ctx, -1, 1, 1, 1, 3, 4);
    /* nearest: src = floor(dst * in / out); with a scale factor, 1 / scale */
    assert_values(interp(ctx, x, NULL, (const double[]){ 1.5, 1.5 }, "nearest", -1, false),
                  VALUES(-1.0, -1.0, -0.8181818127632141, -0.6363636255264282, -0.6363636255264282,
                         -0.45454543828964233, -1.0, -1.0, -0.8181818127632141, -0.6363636255264282,
                         -0.6363636255264282, -0.45454543828964233, -0.27272725105285645, -0.27272725105285645,
                         -0.09090906381607056, 0.09090906381607056, 0.09090906381607056, 0.27272725105285645,
                         0.45454543828964233, 0.45454543828964233, 0.6363636255264282, 0.8181818127632141,
                         0.8181818127632141, 1.0),
                  F32);
    assert_values(interp(ctx, x, SHAPE(5, 3), NULL, "nearest-exact", -1, false),
                  VALUES(-1.0, -0.6363636255264282, -0.45454543828964233, -1.0, -0.6363636255264282,
                         -0.45454543828964233, -0.27272725105285645, 0.09090906381607056, 0.27272725105285645,
                         0.45454543828964233, 0.8181818127632141, 1.0, 0.45454543828964233, 0.8181818127632141, 1.0),
                  F32);
    assert_values(interp(ctx, x, SHAPE(5, 7), NULL, "bilinear", 1, false),
                  VALUES(-1.0, -0.9090908765792847, -0.8181818127632141, -0.7272727489471436, -0.6363636255264282,
                         -0.5454545021057129, -0.45454543828964233, -0.6363636255264282, -0.5454545021057129,
                         -0.45454543828964233, -0.3636363744735718, -0.27272728085517883, -0.1818181723356247,
                         -0.09090909361839294, -0.27272725105285645, -0.1818181574344635, -0.09090906381607056, 0.0,
                         0.09090906381607056, 0.1818181574344635, 0.27272725105285645, 0.09090909361839294,
                         0.1818181872367859, 0.27272728085517883, 0.3636363744735718, 0.45454543828964233,
                         0.5454545021057129, 0.6363636255264282, 0.45454543828964233, 0.5454545021057129,
                         0.6363636255264282, 0.7272727489471436, 0.8181818127632141, 0.9090908765792847, 1.0),
                  F32);
    assert_values(interp(ctx, x, NULL, (const double[]){ 1.7, 0.75 }, "bicubic", 0, false),
                  VALUES(-1.0478812456130981, -0.7980914115905762, -0.5483022332191467, -0.758343517780304,
                         -0.508553683757782, -0.2587644159793854, -0.2814077138900757, -0.031618162989616394,
                         0.21817126870155334, 0.2212289273738861, 0.4710184633731842, 0.7208080887794495,
                         0.5358399152755737, 0.7856295108795166, 1.0354193449020386),
                  F32);
    assert_values(interp(ctx, LIN(ctx, -1, 1, 1, 1, 5), NULL, (const double[]){ 1.6 }, "linear", 0, false),
                  VALUES(-1.0, -0.78125, -0.46875, -0.15625, 0.15625, 0.46875, 0.78125, 1.0), F32);
    assert_values(interp(ctx, LIN(ctx, -1, 1, 1, 1, 12), SHAPE(5), NULL, "area", -1, false),
                  VALUES(-0.8181818127632141, -0.45454540848731995, 0.0, 0.45454540848731995, 0.8181818127632141),
                  F32);
    assert_values(interp(ctx, LIN(ctx, -1, 1, 1, 1, 6, 8), SHAPE(3, 3), NULL, "bilinear", 0, true),
                  VALUES(-0.709806501865387, -0.6079027652740479, -0.5059990286827087, -0.10190368443727493, 0.0,
                         0.10190370678901672, 0.5059990882873535, 0.6079027652740479, 0.7098064422607422),
                  F32);
    mtk_ctx_free(ctx);
}

/* uint8 images: torch's fixed-point passes, exactly */
static void interpolate_uint8_bilinear_is_exact(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_tensor *x = mtk_arange_int(ctx, 0, 48, 1, MTK_INT64);
    x = mtk_mul(ctx, x, mtk_full(ctx, SHAPE(1), 1, 5, MTK_INT64));
    x = mtk_to_dtype(ctx, mtk_remainder(ctx, x, mtk_full(ctx, SHAPE(1), 1, 256, MTK_INT64)), MTK_UINT8);
    x = mtk_reshape(ctx, x, SHAPE(1, 1, 6, 8), 4);
    assert_values(interp(ctx, x, SHAPE(4, 5), NULL, "bilinear", -1, false),
                  VALUES(11, 19, 28, 36, 44, 71, 79, 88, 96, 104, 131, 139, 148, 156, 164, 191, 199, 208, 216, 224), 0,
                  0);
    mtk_ctx_free(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(conv_shapes_follow_torch_on_meta),
        cmocka_unit_test(conv_fast_path_matches_a_direct_convolution),
        cmocka_unit_test(conv_direct_kernel_matches_a_reference_convolution),
        cmocka_unit_test(conv_of_channels_last_input_is_contiguous_as_torch_meta),
        cmocka_unit_test(conv_cpu_output_is_channels_last_as_torch_cpu),
        cmocka_unit_test(conv_errors_keep_torch_words),
        cmocka_unit_test(conv_meta_accepts_what_only_cpu_refuses),
        cmocka_unit_test(conv2d_values_match_torch),
        cmocka_unit_test(conv1d_conv3d_and_transposed_values_match_torch),
        cmocka_unit_test(conv_integer_and_half_values_match_torch),
        cmocka_unit_test(conv_transpose_bf16_channels_last_values_are_torch_bits),
        cmocka_unit_test(conv_segments_outside_the_input_columns_are_zero_filled),
        cmocka_unit_test(conv_flops_match_flop_counter),
        cmocka_unit_test(conv_results_do_not_depend_on_threads),
        cmocka_unit_test(max_pool2d_ceil_mode_and_indices_match_torch),
        cmocka_unit_test(pooling_keeps_channels_last_as_torch_meta),
        cmocka_unit_test(avg_pool_divisors_match_torch),
        cmocka_unit_test(adaptive_pools_match_torch),
        cmocka_unit_test(pooling_errors_keep_torch_words),
        cmocka_unit_test(pooling_cost_counts_elements),
        cmocka_unit_test(interpolate_sizes_and_errors_follow_torch),
        cmocka_unit_test(interpolate_values_match_torch),
        cmocka_unit_test(interpolate_uint8_bilinear_is_exact),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
