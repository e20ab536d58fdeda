/* Pooling: F.max_pool1d/2d/3d, F.avg_pool1d/2d/3d and the adaptive
 * average/max pools — plans (torch's checks in torch's order, output
 * sizes, output strides), meta function, cost and typed API.  Kernels are
 * in pool_cpu.c.
 *
 * As in torch, the 1-D ops (except max_pool1d without indices) run as the
 * 2-D op on input.unsqueeze(-2) and squeeze the result, so their checks
 * and messages speak of the 2-D shapes.  Outputs take the input's
 * channels-last layout where torch's meta kernels do (2-D max/avg/adaptive
 * pools, 3-D max pool, the all-ones adaptive average pool). */
#include "ops/conv.h"
#include "ops/op_util.h"
#include "ops/registry.h"
#include "mtk/ops/conv.h"

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

/* argument positions */
enum { ARG_INPUT, ARG_KERNEL, ARG_STRIDE, ARG_PADDING };
enum { ARG_MAX_DILATION = 4, ARG_MAX_CEIL = 5, ARG_MAX_INDICES = 6 };
enum { ARG_AVG_CEIL = 4, ARG_AVG_COUNT_PAD = 5, ARG_AVG_DIVISOR = 6 };
enum { ARG_OUTPUT_SIZE = 1, ARG_ADAPTIVE_INDICES = 2 };

/* ------------------------------------------------------------ helpers */

/* The input as the op sees it: its shape and strides, possibly after
 * unsqueeze(-2) (the 1-D ops). */
typedef struct pool_input {
    int32_t ndim;
    int64_t shape[MTK_MAX_DIMS];
    int64_t stride[MTK_MAX_DIMS];
} pool_input;

static pool_input input_as_is(const mtk_tensor *t)
{
    pool_input in;
    in.ndim = t->ndim;
    memcpy(in.shape, t->shape, sizeof in.shape);
    memcpy(in.stride, t->stride, sizeof in.stride);
    return in;
}

/* t.unsqueeze(-2): a size-1 dim before the last, stride as torch sets it */
static pool_input input_unsqueezed(const mtk_tensor *t)
{
    pool_input in;
    int32_t at = t->ndim - 1;
    in.ndim = t->ndim + 1;
    for (int32_t i = 0, j = 0; i < in.ndim; i++) {
        if (i == at) {
            in.shape[i] = 1;
            in.stride[i] = t->shape[at] * t->stride[at];
            continue;
        }
        in.shape[i] = t->shape[j], in.stride[i] = t->stride[j];
        j++;
    }
    return in;
}

static bool like_channels_last(const pool_input *in)
{
    mtk_tensor t;
    memset(&t, 0, sizeof t);
    t.ndim = in->ndim;
    memcpy(t.shape, in->shape, sizeof t.shape);
    memcpy(t.stride, in->stride, sizeof t.stride);
    return mtk_conv_strides_like_channels_last(&t);
}

static const char *shape_text(const int64_t *shape, int32_t n, char *buf, size_t cap)
{
    return mtk_shape_list_str(shape, n, buf, cap);
}

/* floor division, as torch's div_rtn */
static int64_t div_rtn(int64_t x, int64_t y)
{
    int64_t q = x / y, r = x % y;
    if (r != 0 && ((r < 0) != (y < 0))) q--;
    return q;
}

/* torch's pooling_output_shape with its three checks */
static bool pooling_output_size(mtk_ctx *ctx, const mtk_op_call *call, int64_t in, int64_t k, int64_t pad,
                                int64_t stride, int64_t dilation, bool ceil_mode, int64_t *out)
{
    if (stride == 0) return mtk_conv_error(ctx, call, MTK_ERR_INVALID_ARGUMENT, "stride should not be zero");
    if (pad < 0) return mtk_conv_error(ctx, call, MTK_ERR_INVALID_ARGUMENT, "pad must be non-negative, but got pad: %lld", (long long)pad);
    if (pad > div_rtn((k - 1) * dilation + 1, 2))
        return mtk_conv_error(ctx, call, MTK_ERR_INVALID_ARGUMENT,
                   "pad should be at most half of effective kernel size, but got pad=%lld, kernel_size=%lld and "
                   "dilation=%lld",
                   (long long)pad, (long long)k, (long long)dilation);
    int64_t o = div_rtn(in + 2 * pad - dilation * (k - 1) - 1 + (ceil_mode ? stride - 1 : 0), stride) + 1;
    /* the last window must start inside the input or the left padding */
    if (ceil_mode && (o - 1) * stride >= in + pad) o--;
    *out = o;
    return true;
}

/* Reads an int list of 1 or `n` items (kernel_size, padding, dilation),
 * or of 0, 1 or n (stride, when `may_be_empty`); expands to n. */
static bool read_tuple(mtk_ctx *ctx, const mtk_op_call *call, int arg, const char *name, int32_t n,
                       bool may_be_empty, const char *message, int64_t *out, int32_t *count)
{
    int64_t v[MTK_MAX_DIMS];
    int32_t c = 0;
    if (arg_is_none(call, arg)) {
        c = 0;
    } else if (!mtk_conv_read_ints(ctx, call, arg, name, n, v, &c)) {
        return false;
    }
    if (!((c == 1 || c == n) || (may_be_empty && c == 0))) return mtk_conv_error(ctx, call, MTK_ERR_SHAPE, "%s", message);
    for (int32_t i = 0; i < n; i++) out[i] = c == 0 ? 0 : c == 1 ? v[0] : v[i];
    *count = c;
    return true;
}

/* the 1-D ops' check1d: "max_pool1d() argument 'kernel_size' should
 * contain one int (got 2)" */
static bool check1d(mtk_ctx *ctx, const mtk_op_call *call, int arg, const char *name, bool may_be_empty,
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

/* return_indices as F's boolean_dispatch reads it: Python truthiness */
static bool read_truth(mtk_ctx *ctx, const mtk_op_call *call, int arg, bool *out)
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

static bool check_dim_range(mtk_ctx *ctx, const mtk_op_call *call, const mtk_tensor *t)
{
    if (t->ndim >= 2 && t->ndim <= 3) return true;
    return mtk_conv_error(ctx, call, MTK_ERR_SHAPE,
               "Expected 2 to 3 dimensions, but got %d-dimensional tensor for argument #1 'self' (while checking "
               "arguments for %s)",
               (int)t->ndim, call->op->name);
}

/* Output strides: channels-last when `channels_last`, else contiguous;
 * with the unsqueezed dim (1-D ops) dropped afterwards. */
static void set_output_layout(mtk_pool_plan *p, const int64_t *shape, int32_t ndim, bool channels_last,
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

/* Fills the plan's 3-D geometry from the last `spatial` dims of `in`. */
static void set_geometry(mtk_pool_plan *p, const pool_input *in, int32_t spatial, const int64_t *out_size)
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

static bool dtype_error(mtk_ctx *ctx, const mtk_op_call *call, const char *kernel, mtk_dtype d)
{
    return mtk_conv_error(ctx, call, MTK_ERR_DTYPE, "\"%s\" not implemented for '%s'", kernel, mtk_conv_scalar_type_name(d));
}

/* torch's channels-last max-pool kernels index a plane with an integer of
 * the input's width for int8/uint8 (int8), int16 and int32 inputs */
static bool check_index_width(mtk_ctx *ctx, const mtk_op_call *call, mtk_dtype d, bool channels_last,
                              int64_t plane_size)
{
    int64_t limit = d == MTK_INT8 || d == MTK_UINT8 ? INT8_MAX : d == MTK_INT16 ? INT16_MAX
                    : d == MTK_INT32                 ? INT32_MAX
                                                     : INT64_MAX;
    if (!channels_last || plane_size <= limit) return true;
    return mtk_conv_error(ctx, call, MTK_ERR_NOT_IMPLEMENTED,
                          "Expected input_depth * input_height * input_width <= "
                          "std::numeric_limits<integer_t>::max() to be true, but got false.  (Could this error message "
                          "be improved?  If so, please report an enhancement request to PyTorch.)");
}

static bool is_float(mtk_dtype d)
{
    return d == MTK_FLOAT32 || d == MTK_FLOAT64 || d == MTK_FLOAT16 || d == MTK_BFLOAT16;
}

/* ------------------------------------------------------ max_pool1d */

/* max_pool1d without indices: torch's max_pool1d_impl checks and size */
static bool plan_max_pool1d_impl(mtk_ctx *ctx, const mtk_op_call *call, bool for_cpu, mtk_pool_plan *p)
{
    const mtk_tensor *t = arg_tensor(call, ARG_INPUT);
    char s1[256];
    bool ok_dims = (t->ndim == 2 && t->shape[0] != 0 && t->shape[1] != 0) ||
                   (t->ndim == 3 && t->shape[1] != 0 && t->shape[2] != 0);
    if (!ok_dims)
        return mtk_conv_error(ctx, call, MTK_ERR_SHAPE,
                   "max_pool1d: Expected 2D or 3D (batch mode) tensor with optional 0 dim batch size for input, "
                   "but got:%s",
                   shape_text(t->shape, t->ndim, s1, sizeof s1));
    int64_t v[4][MTK_MAX_DIMS];
    int32_t c[4];
    static const char *const names[4] = { "kernel_size", "stride", "padding", "dilation" };
    static const int args[4] = { ARG_KERNEL, ARG_STRIDE, ARG_PADDING, ARG_MAX_DILATION };
    for (int i = 0; i < 4; i++) {
        c[i] = 0;
        if (!arg_is_none(call, args[i]) && !mtk_conv_read_ints(ctx, call, args[i], names[i], 1, v[i], &c[i]))
            return false;
    }
    if (c[0] != 1)
        return mtk_conv_error(ctx, call, MTK_ERR_SHAPE,
                   "max_pool1d() kernel_size must be an int, list of ints or tuple of ints of size 1 but got size %d",
                   (int)c[0]);
    if (c[1] > 1)
        return mtk_conv_error(ctx, call, MTK_ERR_SHAPE,
                   "max_pool1d() stride must be None, an int, list of ints, or tuple of ints of size 1 but got size %d",
                   (int)c[1]);
    if (c[2] != 1)
        return mtk_conv_error(ctx, call, MTK_ERR_SHAPE,
                   "max_pool1d() padding must be an int, list of ints, or tuple of ints of size 1 but got size %d",
                   (int)c[2]);
    if (c[3] != 1)
        return mtk_conv_error(ctx, call, MTK_ERR_SHAPE,
                   "max_pool1d() dilation must be an int, list of ints, or tuple of ints of size 1 but got size %d",
                   (int)c[3]);
    int64_t k = v[0][0], s = c[1] ? v[1][0] : k, pad = v[2][0], d = v[3][0];
    if (k <= 0)
        return mtk_conv_error(ctx, call, MTK_ERR_INVALID_ARGUMENT, "max_pool1d() kernel_size must be greater than zero, but got %lld",
                   (long long)k);
    if (s <= 0)
        return mtk_conv_error(ctx, call, MTK_ERR_INVALID_ARGUMENT, "max_pool1d() stride must be greater than zero, but got %lld",
                   (long long)s);
    if (pad < 0)
        return mtk_conv_error(ctx, call, MTK_ERR_INVALID_ARGUMENT, "max_pool1d() padding must be non-negative, but got %lld",
                   (long long)pad);
    if (pad > k / 2)
        return mtk_conv_error(ctx, call, MTK_ERR_INVALID_ARGUMENT,
                   "max_pool1d() padding should be at most half of kernel size, but got padding=%lld and "
                   "kernel_size=%lld",
                   (long long)pad, (long long)k);
    if (d <= 0)
        return mtk_conv_error(ctx, call, MTK_ERR_INVALID_ARGUMENT, "max_pool1d() dilation must be greater than zero, but got %lld",
                   (long long)d);
    bool ceil_mode = arg_bool(call, ARG_MAX_CEIL);
    int64_t in = t->shape[t->ndim - 1];
    int64_t out = div_rtn(in + 2 * pad - d * (k - 1) - 1 + (ceil_mode ? s - 1 : 0), s) + 1;
    if (ceil_mode && (out - 1) * s >= in + pad) out--;
    if (out <= 0)
        return mtk_conv_error(ctx, call, MTK_ERR_SHAPE, "max_pool1d() Invalid computed output size: %lld", (long long)out);
    if (for_cpu && !is_float(t->dtype)) return dtype_error(ctx, call, "max_pool1d_impl", t->dtype);

    pool_input in4 = input_unsqueezed(t);
    int64_t osize[1] = { out };
    set_geometry(p, &in4, 1, osize);
    p->kernel[2] = k, p->stride[2] = s, p->pad[2] = pad, p->dilation[2] = d;
    p->float_only_cpu = true;
    int64_t shape[MTK_MAX_DIMS];
    memcpy(shape, in4.shape, sizeof shape);
    shape[in4.ndim - 1] = out;
    /* torch's meta runs max_pool1d_with_indices (layout of the 2-D op);
     * its cpu kernel makes a contiguous output */
    bool cl = call->device != MTK_DEVICE_CPU && in4.ndim == 4 && like_channels_last(&in4);
    set_output_layout(p, shape, in4.ndim, cl, true);
    return true;
}

/* ----------------------------------------------- max/avg 2-D and 3-D */

/* pool2d_shape_check, after the sizes are known */
static bool pool2d_shape_check(mtk_ctx *ctx, const mtk_op_call *call, const pool_input *in, const int64_t *k,
                               const int64_t *s, const int64_t *pad, const int64_t *d, const int64_t *out,
                               bool channels_last)
{
    char s1[256];
    if (k[0] <= 0 || k[1] <= 0)
        return mtk_conv_error(ctx, call, MTK_ERR_INVALID_ARGUMENT, "kernel size should be greater than zero, but got kH: %lld kW: %lld",
                   (long long)k[0], (long long)k[1]);
    if (s[0] <= 0 || s[1] <= 0)
        return mtk_conv_error(ctx, call, MTK_ERR_INVALID_ARGUMENT, "stride should be greater than zero, but got dH: %lld dW: %lld",
                   (long long)s[0], (long long)s[1]);
    if (d[0] <= 0 || d[1] <= 0)
        return mtk_conv_error(ctx, call, MTK_ERR_INVALID_ARGUMENT,
                   "dilation should be greater than zero, but got dilationH: %lld dilationW: %lld", (long long)d[0],
                   (long long)d[1]);
    int32_t n = in->ndim;
    const int64_t *sh = in->shape;
    bool valid_dims = n >= 3 && sh[1] != 0 && sh[2] != 0;
    if (channels_last) {
        if (!(n == 4 && valid_dims && sh[3] != 0))
            return mtk_conv_error(ctx, call, MTK_ERR_SHAPE,
                       "Expected 4D (batch mode) tensor expected for input with channels_last layout with optional 0 "
                       "dim batch size for input, but got: %s",
                       shape_text(sh, n, s1, sizeof s1));
    } else if (!((n == 3 && sh[0] != 0 && valid_dims) || (n == 4 && valid_dims && sh[3] != 0))) {
        return mtk_conv_error(ctx, call, MTK_ERR_SHAPE,
                   "Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, but got:%s",
                   shape_text(sh, n, s1, sizeof s1));
    }
    if (!(k[1] / 2 >= pad[1] && k[0] / 2 >= pad[0]))
        return mtk_conv_error(ctx, call, MTK_ERR_INVALID_ARGUMENT,
                   "pad should be smaller than or equal to half of kernel size, but got padW = %lld, padH = %lld, kW = "
                   "%lld, kH = %lld",
                   (long long)pad[1], (long long)pad[0], (long long)k[1], (long long)k[0]);
    if (out[0] < 1 || out[1] < 1)
        return mtk_conv_error(ctx, call, MTK_ERR_SHAPE,
                   "Given input size: (%lldx%lldx%lld). Calculated output size: (%lldx%lldx%lld). Output size is too "
                   "small",
                   (long long)sh[n - 3], (long long)sh[n - 2], (long long)sh[n - 1], (long long)sh[n - 3],
                   (long long)out[0], (long long)out[1]);
    return true;
}

static bool pool3d_shape_check(mtk_ctx *ctx, const mtk_op_call *call, const pool_input *in, const int64_t *k,
                               const int64_t *s, const int64_t *pad, const int64_t *d, const int64_t *out,
                               const char *fn, bool check_input_size)
{
    char s1[256];
    if (k[0] <= 0 || k[1] <= 0 || k[2] <= 0)
        return mtk_conv_error(ctx, call, MTK_ERR_INVALID_ARGUMENT,
                   "kernel size should be greater than zero, but got kT: %lld kH: %lld kW: %lld", (long long)k[0],
                   (long long)k[1], (long long)k[2]);
    if (s[0] <= 0 || s[1] <= 0 || s[2] <= 0)
        return mtk_conv_error(ctx, call, MTK_ERR_INVALID_ARGUMENT,
                   "stride should be greater than zero, but got dT: %lld dH: %lld dW: %lld", (long long)s[0],
                   (long long)s[1], (long long)s[2]);
    if (d[0] <= 0 || d[1] <= 0 || d[2] <= 0)
        return mtk_conv_error(ctx, call, MTK_ERR_INVALID_ARGUMENT,
                   "dilation should be greater than zero, but got dilationT: %lld dilationH: %lld dilationW: %lld",
                   (long long)d[0], (long long)d[1], (long long)d[2]);
    int32_t n = in->ndim;
    const int64_t *sh = in->shape;
    for (int32_t i = n == 5 ? 1 : 0; i < n; i++)
        if (sh[i] <= 0)
            return mtk_conv_error(ctx, call, MTK_ERR_SHAPE,
                       "%s: Expected input's non-batch dimensions to have positive length, but input has a shape of %s "
                       "and non-batch dimension %lld has length zero!",
                       fn, shape_text(sh, n, s1, sizeof s1), (long long)sh[i]);
    const int64_t *is = sh + n - 3;
    if (check_input_size && (is[0] < k[0] || is[1] < k[1] || is[2] < k[2]))
        return mtk_conv_error(ctx, call, MTK_ERR_SHAPE,
                   "input image (T: %lld H: %lld W: %lld) smaller than kernel size (kT: %lld kH: %lld kW: %lld)",
                   (long long)is[0], (long long)is[1], (long long)is[2], (long long)k[0], (long long)k[1],
                   (long long)k[2]);
    if (!(k[0] / 2 >= pad[0] && k[2] / 2 >= pad[2] && k[1] / 2 >= pad[1]))
        return mtk_conv_error(ctx, call, MTK_ERR_INVALID_ARGUMENT,
                   "pad should be smaller than or equal to half of kernel size, but got kT: %lld kW: %lld kH: %lld "
                   "padT: %lld padW: %lld padH: %lld",
                   (long long)k[0], (long long)k[2], (long long)k[1], (long long)pad[0], (long long)pad[2],
                   (long long)pad[1]);
    if (out[0] < 1 || out[1] < 1 || out[2] < 1)
        return mtk_conv_error(ctx, call, MTK_ERR_SHAPE,
                   "Given input size: (%lldx%lldx%lldx%lld). Calculated output size: (%lldx%lldx%lldx%lld). Output "
                   "size is too small",
                   (long long)sh[n - 4], (long long)is[0], (long long)is[1], (long long)is[2], (long long)sh[n - 4],
                   (long long)out[0], (long long)out[1], (long long)out[2]);
    return true;
}

/* max_pool2d / avg_pool2d on `in` (3-D or 4-D after any unsqueeze), with
 * kernel/stride/padding/dilation already expanded to 2 entries. */
static bool plan_pool2d(mtk_ctx *ctx, const mtk_op_call *call, const pool_input *in, bool is_max, const int64_t *k,
                        const int64_t *s, const int64_t *pad, const int64_t *d, bool ceil_mode, bool squeeze,
                        mtk_pool_plan *p)
{
    bool cl = in->ndim == 4 && like_channels_last(in);
    if (is_max && !cl && in->ndim != 3 && in->ndim != 4)
        return mtk_conv_error(ctx, call, MTK_ERR_SHAPE, "non-empty 3D or 4D (batch mode) tensor expected for input");
    if (!is_max && in->ndim < 3)
        return mtk_conv_error(ctx, call, MTK_ERR_INDEX, "Dimension out of range (expected to be in range of [%d, %d], but got -3)",
                   in->ndim ? -(int)in->ndim : -1, in->ndim ? (int)in->ndim - 1 : 0);
    int64_t out[2];
    for (int i = 0; i < 2; i++)
        if (!pooling_output_size(ctx, call, in->shape[in->ndim - 2 + i], k[i], pad[i], s[i], d[i], ceil_mode, &out[i]))
            return false;
    if (!pool2d_shape_check(ctx, call, in, k, s, pad, d, out, cl)) return false;
    set_geometry(p, in, 2, out);
    for (int i = 0; i < 2; i++) p->kernel[1 + i] = k[i], p->stride[1 + i] = s[i], p->pad[1 + i] = pad[i], p->dilation[1 + i] = d[i];
    int64_t shape[MTK_MAX_DIMS];
    memcpy(shape, in->shape, sizeof shape);
    shape[in->ndim - 2] = out[0], shape[in->ndim - 1] = out[1];
    set_output_layout(p, shape, in->ndim, cl, squeeze);
    return true;
}

static bool plan_max_pool(mtk_ctx *ctx, const mtk_op_call *call, bool for_cpu, int32_t spatial, mtk_pool_plan *p)
{
    const mtk_tensor *t = arg_tensor(call, ARG_INPUT);
    bool ceil_mode = arg_bool(call, ARG_MAX_CEIL);
    if (!read_truth(ctx, call, ARG_MAX_INDICES, &p->with_indices)) return false;
    if (spatial == 1) {
        if (!p->with_indices) return plan_max_pool1d_impl(ctx, call, for_cpu, p);
        /* max_pool1d_with_indices: max_pool2d on input.unsqueeze(-2) */
        if (!check_dim_range(ctx, call, t)) return false;
        int64_t k, s = 0, pad = 0, d = 1;
        bool empty;
        if (!check1d(ctx, call, ARG_KERNEL, "kernel_size", false, &k, &empty)) return false;
        bool stride_empty;
        if (!check1d(ctx, call, ARG_STRIDE, "stride", true, &s, &stride_empty)) return false;
        if (!check1d(ctx, call, ARG_PADDING, "padding", false, &pad, &empty)) return false;
        if (!check1d(ctx, call, ARG_MAX_DILATION, "dilation", false, &d, &empty)) return false;
        if (stride_empty) s = k;
        pool_input in = input_unsqueezed(t);
        int64_t k2[2] = { 1, k }, s2[2] = { 1, s }, p2[2] = { 0, pad }, d2[2] = { 1, d };
        if (!plan_pool2d(ctx, call, &in, true, k2, s2, p2, d2, ceil_mode, true, p)) return false;
        if (for_cpu && (t->dtype == MTK_BOOL || mtk_dtype_is_float8(t->dtype)))
            return dtype_error(ctx, call, "max_pool2d", t->dtype);
        return !for_cpu || check_index_width(ctx, call, t->dtype, like_channels_last(&in), t->shape[t->ndim - 1]);
    }
    int64_t k[3], s[3], pad[3], d[3];
    int32_t ck, cs, cp, cd;
    char m1[128], m2[128], m3[128], m4[128];
    const char *nm = spatial == 2 ? "two" : "three";
    snprintf(m1, sizeof m1, "%s: kernel_size must either be a single int, or a tuple of %s ints", call->op->name, nm);
    snprintf(m2, sizeof m2, "%s: stride must either be omitted, a single int, or a tuple of %s ints", call->op->name, nm);
    snprintf(m3, sizeof m3, "%s: padding must either be a single int, or a tuple of %s ints", call->op->name, nm);
    snprintf(m4, sizeof m4, "%s: dilation must be either a single int, or a tuple of %s ints", call->op->name, nm);
    if (!read_tuple(ctx, call, ARG_KERNEL, "kernel_size", spatial, false, m1, k, &ck)) return false;
    if (!read_tuple(ctx, call, ARG_STRIDE, "stride", spatial, true, m2, s, &cs)) return false;
    if (cs == 0) memcpy(s, k, sizeof s);
    if (!read_tuple(ctx, call, ARG_PADDING, "padding", spatial, false, m3, pad, &cp)) return false;
    if (!read_tuple(ctx, call, ARG_MAX_DILATION, "dilation", spatial, false, m4, d, &cd)) return false;
    pool_input in = input_as_is(t);
    if (spatial == 2) {
        if (!plan_pool2d(ctx, call, &in, true, k, s, pad, d, ceil_mode, false, p)) return false;
        if (for_cpu && (t->dtype == MTK_BOOL || mtk_dtype_is_float8(t->dtype)))
            return dtype_error(ctx, call, "max_pool2d", t->dtype);
        return !for_cpu || check_index_width(ctx, call, t->dtype, in.ndim == 4 && like_channels_last(&in),
                                             in.shape[in.ndim - 2] * in.shape[in.ndim - 1]);
    }
    /* torch's cpu kernel refuses a 4-D input with channels-last strides */
    if (for_cpu && in.ndim == 4 && like_channels_last(&in))
        return mtk_conv_error(ctx, call, MTK_ERR_INVALID_ARGUMENT,
                              "Unsupported memory format. Supports only ChannelsLast3d, Contiguous");
    if (in.ndim != 4 && in.ndim != 5)
        return mtk_conv_error(ctx, call, MTK_ERR_SHAPE, "non-empty 4D or 5D (batch mode) tensor expected for input");
    int64_t out[3];
    for (int i = 0; i < 3; i++)
        if (!pooling_output_size(ctx, call, in.shape[in.ndim - 3 + i], k[i], pad[i], s[i], d[i], ceil_mode, &out[i]))
            return false;
    if (!pool3d_shape_check(ctx, call, &in, k, s, pad, d, out, "max_pool3d_with_indices()", false)) return false;
    if (for_cpu && (t->dtype == MTK_BOOL || mtk_dtype_is_float8(t->dtype)))
        return dtype_error(ctx, call, "max_pool3d", t->dtype);
    if (for_cpu && !check_index_width(ctx, call, t->dtype, in.ndim == 5 && like_channels_last(&in),
                                      in.shape[in.ndim - 3] * in.shape[in.ndim - 2] * in.shape[in.ndim - 1]))
        return false;
    set_geometry(p, &in, 3, out);
    for (int i = 0; i < 3; i++) p->kernel[i] = k[i], p->stride[i] = s[i], p->pad[i] = pad[i], p->dilation[i] = d[i];
    int64_t shape[MTK_MAX_DIMS];
    memcpy(shape, in.shape, sizeof shape);
    for (int i = 0; i < 3; i++) shape[in.ndim - 3 + i] = out[i];
    set_output_layout(p, shape, in.ndim, in.ndim == 5 && like_channels_last(&in), false);
    return true;
}

static bool plan_avg_pool(mtk_ctx *ctx, const mtk_op_call *call, bool for_cpu, int32_t spatial, mtk_pool_plan *p)
{
    const mtk_tensor *t = arg_tensor(call, ARG_INPUT);
    bool ceil_mode = arg_bool(call, ARG_AVG_CEIL);
    p->count_include_pad = arg_bool(call, ARG_AVG_COUNT_PAD);
    bool has_divisor = spatial > 1 && !arg_is_none(call, ARG_AVG_DIVISOR);
    p->divisor = has_divisor ? arg_int(call, ARG_AVG_DIVISOR) : 0;
    const char *kernel_name = spatial == 3 ? "avg_pool3d_out_frame" : "avg_pool2d";
    bool dtype_ok = t->dtype == MTK_INT64 || is_float(t->dtype);
    int64_t ones[3] = { 1, 1, 1 };
    if (spatial == 1) {
        if (!check_dim_range(ctx, call, t)) return false;
        int64_t k, s = 0, pad = 0;
        bool empty, stride_empty;
        if (!check1d(ctx, call, ARG_KERNEL, "kernel_size", false, &k, &empty)) return false;
        if (!check1d(ctx, call, ARG_STRIDE, "stride", true, &s, &stride_empty)) return false;
        if (!check1d(ctx, call, ARG_PADDING, "padding", false, &pad, &empty)) return false;
        if (stride_empty) s = k;
        if (t->dtype == MTK_UINT8) return mtk_conv_error(ctx, call, MTK_ERR_DTYPE, "\"avg_pool2d\" not implemented for 'torch.uint8'");
        pool_input in = input_unsqueezed(t);
        int64_t k2[2] = { 1, k }, s2[2] = { 1, s }, p2[2] = { 0, pad };
        if (!plan_pool2d(ctx, call, &in, false, k2, s2, p2, ones, ceil_mode, true, p)) return false;
        if (for_cpu && !dtype_ok) return dtype_error(ctx, call, kernel_name, t->dtype);
        return true;
    }
    int64_t k[3], s[3], pad[3];
    int32_t ck, cs, cp;
    char m1[128], m2[128], m3[128];
    if (spatial == 2) {
        snprintf(m1, sizeof m1, "avg_pool2d: kernel_size must either be a single int, or a tuple of two ints");
        snprintf(m2, sizeof m2, "avg_pool2d: stride must either be omitted, a single int, or a tuple of two ints");
        snprintf(m3, sizeof m3, "avg_pool2d: padding must either be a single int, or a tuple of two ints");
    } else {
        snprintf(m1, sizeof m1, "avg_pool3d: kernel_size must be a single int, or a tuple of three ints");
        snprintf(m2, sizeof m2, "avg_pool3d: stride must be omitted, a single int, or a tuple of three ints");
        snprintf(m3, sizeof m3, "avg_pool3d: padding must be a single int, or a tuple of three ints");
    }
    if (!read_tuple(ctx, call, ARG_KERNEL, "kernel_size", spatial, false, m1, k, &ck)) return false;
    if (!read_tuple(ctx, call, ARG_STRIDE, "stride", spatial, true, m2, s, &cs)) return false;
    if (cs == 0) memcpy(s, k, sizeof s);
    if (t->dtype == MTK_UINT8)
        return mtk_conv_error(ctx, call, MTK_ERR_DTYPE, "\"%s\" not implemented for 'torch.uint8'", call->op->name);
    if (!read_tuple(ctx, call, ARG_PADDING, "padding", spatial, false, m3, pad, &cp)) return false;
    pool_input in = input_as_is(t);
    if (spatial == 2) {
        if (has_divisor && p->divisor == 0) return mtk_conv_error(ctx, call, MTK_ERR_INVALID_ARGUMENT, "divisor must be not zero");
        if (!plan_pool2d(ctx, call, &in, false, k, s, pad, ones, ceil_mode, false, p)) return false;
        if (for_cpu && !dtype_ok) return dtype_error(ctx, call, kernel_name, t->dtype);
        return true;
    }
    if (in.ndim != 4 && in.ndim != 5)
        return mtk_conv_error(ctx, call, MTK_ERR_SHAPE, "non-empty 4D or 5D (batch mode) tensor expected for input");
    if (has_divisor && p->divisor == 0) return mtk_conv_error(ctx, call, MTK_ERR_INVALID_ARGUMENT, "divisor must be not zero");
    int64_t out[3];
    for (int i = 0; i < 3; i++)
        if (!pooling_output_size(ctx, call, in.shape[in.ndim - 3 + i], k[i], pad[i], s[i], 1, ceil_mode, &out[i]))
            return false;
    if (!pool3d_shape_check(ctx, call, &in, k, s, pad, ones, out, "avg_pool3d()", true)) return false;
    if (for_cpu && !dtype_ok) return dtype_error(ctx, call, kernel_name, t->dtype);
    set_geometry(p, &in, 3, out);
    for (int i = 0; i < 3; i++) p->kernel[i] = k[i], p->stride[i] = s[i], p->pad[i] = pad[i];
    int64_t shape[MTK_MAX_DIMS];
    memcpy(shape, in.shape, sizeof shape);
    for (int i = 0; i < 3; i++) shape[in.ndim - 3 + i] = out[i];
    set_output_layout(p, shape, in.ndim, false, false);
    return true;
}

/* ------------------------------------------------------------ adaptive */

/* output_size of the 2-D/3-D adaptive pools: an int, or a list of ints
 * and Nones (None keeps the input's size, F's _list_with_default). */
static bool read_output_size(mtk_ctx *ctx, const mtk_op_call *call, int32_t spatial, const mtk_tensor *t,
                             int64_t *out, int32_t *count)
{
    const mtk_value *v = &call->args[ARG_OUTPUT_SIZE];
    if (v->kind == MTK_VALUE_INT) {
        for (int32_t i = 0; i < spatial; i++) out[i] = v->as.i;
        *count = spatial;
        return true;
    }
    if (v->kind != MTK_VALUE_LIST && v->kind != MTK_VALUE_TUPLE) {
        if (!ctx) return false;
        return mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "%s(): object of type '%s' has no len()", call->op->name,
                         mtk_value_type_name(v));
    }
    int32_t n = v->as.list.count;
    if (t->ndim <= n)
        return mtk_conv_error(ctx, call, MTK_ERR_SHAPE, "Input dimension should be at least %d", (int)n + 1);
    if (n > MTK_MAX_DIMS) return mtk_conv_error(ctx, call, MTK_ERR_SHAPE, "output_size must be %d", (int)spatial);
    for (int32_t i = 0; i < n; i++) {
        const mtk_value *item = &v->as.list.items[i];
        if (item->kind == MTK_VALUE_NONE) out[i] = t->shape[t->ndim - n + i];
        else if (item->kind == MTK_VALUE_INT) out[i] = item->as.i;
        else {
            if (!ctx) return false;
            return mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT,
                             "%s(): argument 'output_size' must be tuple of ints, but found element of type %s at pos %d",
                             call->op->name, mtk_value_type_name(item), (int)i);
        }
    }
    *count = n;
    return true;
}

static bool check_nonempty_dims(mtk_ctx *ctx, const mtk_op_call *call, const pool_input *in, int32_t first,
                                const char *fn)
{
    char s1[256];
    for (int32_t i = first; i < in->ndim; i++)
        if (in->shape[i] <= 0)
            return mtk_conv_error(ctx, call, MTK_ERR_SHAPE,
                       "%s(): Expected input to have non-zero size for non-batch dimensions, but input has sizes %s "
                       "with dimension %d being empty",
                       fn, shape_text(in->shape, in->ndim, s1, sizeof s1), (int)i);
    return true;
}

/* adaptive_avg_pool2d/3d on `in` with `spatial` output sizes (checked
 * for count already). */
static bool plan_adaptive_avg_nd(mtk_ctx *ctx, const mtk_op_call *call, bool for_cpu, const pool_input *in,
                                 int32_t spatial, const int64_t *osize, bool squeeze, mtk_dtype dtype, mtk_pool_plan *p)
{
    char s1[256];
    const char *fn = spatial == 2 ? "adaptive_avg_pool2d" : "adaptive_avg_pool3d";
    bool negative = false, all_ones = true;
    for (int32_t i = 0; i < spatial; i++) negative |= osize[i] < 0, all_ones &= osize[i] == 1;
    if (negative) {
        /* torch prints "{2, -1}" (2-D) and "{2, -1,2}" (3-D) */
        if (spatial == 2)
            snprintf(s1, sizeof s1, "{%lld, %lld}", (long long)osize[0], (long long)osize[1]);
        else
            snprintf(s1, sizeof s1, "{%lld, %lld,%lld}", (long long)osize[0], (long long)osize[1], (long long)osize[2]);
        return mtk_conv_error(ctx, call, MTK_ERR_INVALID_ARGUMENT,
                   "%s: elements of output_size must be greater than or equal to 0 but received %s", fn, s1);
    }
    int64_t shape[MTK_MAX_DIMS];
    bool cl_input = like_channels_last(in); /* only 4-D / 5-D can be */
    if (all_ones) {
        /* torch computes input.mean(spatial dims, keepdim=True) */
        if (!is_float(dtype))
            return mtk_conv_error(ctx, call, MTK_ERR_DTYPE,
                       "mean(): could not infer output dtype. Input dtype must be either a floating point or complex "
                       "dtype. Got: %s",
                       mtk_conv_scalar_type_name(dtype));
        if (in->ndim < spatial)
            return mtk_conv_error(ctx, call, MTK_ERR_INDEX,
                       "Dimension out of range (expected to be in range of [%d, %d], but got %d)",
                       in->ndim ? -(int)in->ndim : -1, in->ndim ? (int)in->ndim - 1 : 0, -(int)spatial);
    } else {
        if (spatial == 2 && in->ndim != 3 && in->ndim != 4)
            return mtk_conv_error(ctx, call, MTK_ERR_SHAPE, "adaptive_avg_pool2d(): Expected 3D or 4D tensor, but got %s",
                       shape_text(in->shape, in->ndim, s1, sizeof s1));
        if (spatial == 3 && in->ndim != 4 && in->ndim != 5)
            return mtk_conv_error(ctx, call, MTK_ERR_SHAPE, "adaptive_avg_pool3d(): Expected 4D or 5D tensor, but got %s",
                       shape_text(in->shape, in->ndim, s1, sizeof s1));
        /* only torch's cpu kernel refuses empty planes */
        if (for_cpu && !check_nonempty_dims(ctx, call, in, spatial == 2 ? in->ndim - 2 : 1, fn)) return false;
        if (for_cpu && !is_float(dtype))
            return dtype_error(ctx, call, spatial == 2 ? "adaptive_avg_pool2d" : "adaptive_avg_pool3d_cpu", dtype);
    }
    memcpy(shape, in->shape, sizeof shape);
    for (int32_t i = 0; i < spatial; i++) shape[in->ndim - spatial + i] = osize[i];
    set_geometry(p, in, spatial, osize);
    /* 2-D: the input's channels-last layout (both paths); 3-D: only the
     * mean path keeps channels-last-3d */
    bool cl = spatial == 2 ? (in->ndim == 4 && cl_input) : (all_ones && in->ndim == 5 && cl_input);
    set_output_layout(p, shape, in->ndim, cl, squeeze);
    return true;
}

static bool plan_adaptive_avg(mtk_ctx *ctx, const mtk_op_call *call, bool for_cpu, int32_t spatial, mtk_pool_plan *p)
{
    const mtk_tensor *t = arg_tensor(call, ARG_INPUT);
    if (spatial == 1) {
        if (!check_dim_range(ctx, call, t)) return false;
        int64_t o;
        bool empty;
        if (!check1d(ctx, call, ARG_OUTPUT_SIZE, "output_size", false, &o, &empty)) return false;
        pool_input in = input_unsqueezed(t);
        int64_t o2[2] = { 1, o };
        return plan_adaptive_avg_nd(ctx, call, for_cpu, &in, 2, o2, true, t->dtype, p);
    }
    int64_t osize[MTK_MAX_DIMS];
    int32_t n;
    if (!read_output_size(ctx, call, spatial, t, osize, &n)) return false;
    if (n != spatial)
        return mtk_conv_error(ctx, call, MTK_ERR_SHAPE, "%s: output_size must be %d", call->op->name, (int)spatial);
    pool_input in = input_as_is(t);
    return plan_adaptive_avg_nd(ctx, call, for_cpu, &in, spatial, osize, false, t->dtype, p);
}

static bool plan_adaptive_max(mtk_ctx *ctx, const mtk_op_call *call, bool for_cpu, int32_t spatial, mtk_pool_plan *p)
{
    const mtk_tensor *t = arg_tensor(call, ARG_INPUT);
    char s1[256];
    if (!read_truth(ctx, call, ARG_ADAPTIVE_INDICES, &p->with_indices)) return false;
    int64_t osize[MTK_MAX_DIMS];
    int32_t n;
    pool_input in;
    int32_t dims = spatial; /* of the op that runs (1-D runs as 2-D) */
    if (spatial == 1) {
        if (!check_dim_range(ctx, call, t)) return false;
        bool empty;
        if (!check1d(ctx, call, ARG_OUTPUT_SIZE, "output_size", false, &osize[1], &empty)) return false;
        in = input_as_is(t);
        if (!check_nonempty_dims(ctx, call, &in, 1, "adaptive_max_pool1d")) return false;
        in = input_unsqueezed(t);
        osize[0] = 1;
        n = dims = 2;
    } else {
        if (!read_output_size(ctx, call, spatial, t, osize, &n)) return false;
        in = input_as_is(t);
    }
    const char *fn = dims == 2 ? "adaptive_max_pool2d" : "adaptive_max_pool3d";
    if (dims == 2 && in.ndim != 3 && in.ndim != 4)
        return mtk_conv_error(ctx, call, MTK_ERR_SHAPE, "adaptive_max_pool2d(): Expected 3D or 4D tensor, but got: %s",
                   shape_text(in.shape, in.ndim, s1, sizeof s1));
    if (dims == 3 && in.ndim != 4 && in.ndim != 5)
        return mtk_conv_error(ctx, call, MTK_ERR_SHAPE, "adaptive_max_pool3d(): Expected 4D or 5D tensor, but got: %s",
                   shape_text(in.shape, in.ndim, s1, sizeof s1));
    if (!check_nonempty_dims(ctx, call, &in, 1, fn)) return false;
    if (n != dims)
        return mtk_conv_error(ctx, call, MTK_ERR_SHAPE, "%s(): internal error: output_size.size() must be %d", fn, (int)dims);
    int64_t shape[MTK_MAX_DIMS];
    memcpy(shape, in.shape, sizeof shape);
    for (int32_t i = 0; i < dims; i++) shape[in.ndim - dims + i] = osize[i];
    for (int32_t i = 0; i < dims; i++)
        if (osize[i] < 0)
            return mtk_conv_error(ctx, call, MTK_ERR_SHAPE, "Trying to create tensor with negative dimension %lld: %s",
                       (long long)osize[i], shape_text(shape, in.ndim, s1, sizeof s1));
    if (for_cpu && !is_float(t->dtype))
        return dtype_error(ctx, call, dims == 2 ? "adaptive_max_pool2d" : "adaptive_max_pool3d_cpu", t->dtype);
    set_geometry(p, &in, dims, osize);
    bool cl = dims == 2 && in.ndim == 4 && like_channels_last(&in);
    set_output_layout(p, shape, in.ndim, cl, spatial == 1);
    return true;
}

/* ---------------------------------------------------------------- plan */

bool mtk_pool_make_plan(mtk_ctx *ctx, const mtk_op_call *call, bool for_cpu, mtk_pool_plan *p)
{
    const mtk_pool_info *info = call->op->info;
    memset(p, 0, sizeof *p);
    p->kind = info->kind;
    p->spatial = info->spatial;
    switch (info->kind) {
    case MTK_POOL_MAX: return plan_max_pool(ctx, call, for_cpu, info->spatial, p);
    case MTK_POOL_AVG: return plan_avg_pool(ctx, call, for_cpu, info->spatial, p);
    case MTK_POOL_ADAPTIVE_AVG: return plan_adaptive_avg(ctx, call, for_cpu, info->spatial, p);
    case MTK_POOL_ADAPTIVE_MAX: return plan_adaptive_max(ctx, call, for_cpu, info->spatial, p);
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

/* ---------------------------------------------------------- typed API */

mtk_pool_args mtk_pool_args_default(int64_t kernel_size)
{
    mtk_pool_args a;
    memset(&a, 0, sizeof a);
    for (int i = 0; i < 3; i++) a.kernel_size[i] = a.stride[i] = kernel_size, a.dilation[i] = 1;
    a.count_include_pad = true;
    return a;
}

static mtk_tensor *run_pool(mtk_ctx *ctx, mtk_op_id id, int32_t spatial, mtk_tensor *input, const mtk_pool_args *args,
                            mtk_tensor **indices)
{
    const mtk_op_def *op = mtk_op_by_id(id);
    const mtk_pool_info *info = op->info;
    mtk_pool_args a = args ? *args : mtk_pool_args_default(1);
    mtk_op_call call;
    mtk_op_call_init(&call, ctx, op);
    call.args[ARG_INPUT] = mtk_value_tensor(input);
    call.args[ARG_KERNEL] = mtk_value_int_list(ctx, a.kernel_size, spatial);
    call.args[ARG_STRIDE] = mtk_value_int_list(ctx, a.stride, spatial);
    call.args[ARG_PADDING] = mtk_value_int_list(ctx, a.padding, spatial);
    if (info->kind == MTK_POOL_MAX) {
        call.args[ARG_MAX_DILATION] = mtk_value_int_list(ctx, a.dilation, spatial);
        call.args[ARG_MAX_CEIL] = mtk_value_bool(a.ceil_mode);
        call.args[ARG_MAX_INDICES] = mtk_value_bool(indices != NULL);
    } else {
        call.args[ARG_AVG_CEIL] = mtk_value_bool(a.ceil_mode);
        call.args[ARG_AVG_COUNT_PAD] = mtk_value_bool(a.count_include_pad);
        if (spatial > 1)
            call.args[ARG_AVG_DIVISOR] = a.divisor_override ? mtk_value_int(a.divisor_override) : mtk_value_none();
    }
    if (mtk_ctx_status(ctx) != MTK_OK) return NULL;
    if (!mtk_op_run(&call)) return NULL;
    if (indices) *indices = call.nout > 1 ? call.out[1] : NULL;
    return call.out[0];
}

static mtk_tensor *run_adaptive(mtk_ctx *ctx, mtk_op_id id, int32_t spatial, mtk_tensor *input,
                                const int64_t *output_size, mtk_tensor **indices)
{
    const mtk_op_def *op = mtk_op_by_id(id);
    const mtk_pool_info *info = op->info;
    mtk_op_call call;
    mtk_op_call_init(&call, ctx, op);
    call.args[ARG_INPUT] = mtk_value_tensor(input);
    mtk_value list = mtk_value_list(ctx, spatial, true);
    if (list.kind == MTK_VALUE_NONE) return NULL;
    for (int32_t i = 0; i < spatial; i++)
        list.as.list.items[i] = output_size[i] < 0 && spatial > 1 ? mtk_value_none() : mtk_value_int(output_size[i]);
    call.args[ARG_OUTPUT_SIZE] = list;
    if (info->kind == MTK_POOL_ADAPTIVE_MAX) call.args[ARG_ADAPTIVE_INDICES] = mtk_value_bool(indices != NULL);
    if (!mtk_op_run(&call)) return NULL;
    if (indices) *indices = call.nout > 1 ? call.out[1] : NULL;
    return call.out[0];
}

mtk_tensor *mtk_max_pool1d(mtk_ctx *ctx, mtk_tensor *input, const mtk_pool_args *args, mtk_tensor **indices)
{
    return run_pool(ctx, OPID_MAX_POOL1D, 1, input, args, indices);
}

mtk_tensor *mtk_max_pool2d(mtk_ctx *ctx, mtk_tensor *input, const mtk_pool_args *args, mtk_tensor **indices)
{
    return run_pool(ctx, OPID_MAX_POOL2D, 2, input, args, indices);
}

mtk_tensor *mtk_max_pool3d(mtk_ctx *ctx, mtk_tensor *input, const mtk_pool_args *args, mtk_tensor **indices)
{
    return run_pool(ctx, OPID_MAX_POOL3D, 3, input, args, indices);
}

mtk_tensor *mtk_avg_pool1d(mtk_ctx *ctx, mtk_tensor *input, const mtk_pool_args *args)
{
    return run_pool(ctx, OPID_AVG_POOL1D, 1, input, args, NULL);
}

mtk_tensor *mtk_avg_pool2d(mtk_ctx *ctx, mtk_tensor *input, const mtk_pool_args *args)
{
    return run_pool(ctx, OPID_AVG_POOL2D, 2, input, args, NULL);
}

mtk_tensor *mtk_avg_pool3d(mtk_ctx *ctx, mtk_tensor *input, const mtk_pool_args *args)
{
    return run_pool(ctx, OPID_AVG_POOL3D, 3, input, args, NULL);
}

mtk_tensor *mtk_adaptive_avg_pool1d(mtk_ctx *ctx, mtk_tensor *input, const int64_t *output_size)
{
    return run_adaptive(ctx, OPID_ADAPTIVE_AVG_POOL1D, 1, input, output_size, NULL);
}

mtk_tensor *mtk_adaptive_avg_pool2d(mtk_ctx *ctx, mtk_tensor *input, const int64_t *output_size)
{
    return run_adaptive(ctx, OPID_ADAPTIVE_AVG_POOL2D, 2, input, output_size, NULL);
}

mtk_tensor *mtk_adaptive_avg_pool3d(mtk_ctx *ctx, mtk_tensor *input, const int64_t *output_size)
{
    return run_adaptive(ctx, OPID_ADAPTIVE_AVG_POOL3D, 3, input, output_size, NULL);
}

mtk_tensor *mtk_adaptive_max_pool1d(mtk_ctx *ctx, mtk_tensor *input, const int64_t *output_size, mtk_tensor **indices)
{
    return run_adaptive(ctx, OPID_ADAPTIVE_MAX_POOL1D, 1, input, output_size, indices);
}

mtk_tensor *mtk_adaptive_max_pool2d(mtk_ctx *ctx, mtk_tensor *input, const int64_t *output_size, mtk_tensor **indices)
{
    return run_adaptive(ctx, OPID_ADAPTIVE_MAX_POOL2D, 2, input, output_size, indices);
}

mtk_tensor *mtk_adaptive_max_pool3d(mtk_ctx *ctx, mtk_tensor *input, const int64_t *output_size, mtk_tensor **indices)
{
    return run_adaptive(ctx, OPID_ADAPTIVE_MAX_POOL3D, 3, input, output_size, indices);
}
