/* The windowed pools: max_pool1d/2d/3d and avg_pool1d/2d/3d — torch's
 * checks in torch's order, output sizes and layouts (see pool.c). */
#include "ops/pool_internal.h"
#include "ops/op_util.h"

#include <stdio.h>
#include <string.h>

/* floor division, as torch's div_rtn */
static int64_t div_rtn(int64_t x, int64_t y)
{
    if (y == -1) return ops_wrap_sub(0, x); /* INT64_MIN / -1 would trap */
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
    /* torch's int64 arithmetic, wrapping as it does */
    if (pad > div_rtn(ops_wrap_add(ops_wrap_mul(ops_wrap_sub(k, 1), dilation), 1), 2))
        return mtk_conv_error(ctx, call, MTK_ERR_INVALID_ARGUMENT,
                   "pad should be at most half of effective kernel size, but got pad=%lld, kernel_size=%lld and "
                   "dilation=%lld",
                   (long long)pad, (long long)k, (long long)dilation);
    int64_t span = ops_wrap_sub(ops_wrap_add(in, ops_wrap_mul(2, pad)),
                                ops_wrap_add(ops_wrap_mul(dilation, ops_wrap_sub(k, 1)), 1));
    if (ceil_mode) span = ops_wrap_add(span, ops_wrap_sub(stride, 1));
    int64_t o = ops_wrap_add(div_rtn(span, stride), 1);
    /* the last window must start inside the input or the left padding */
    if (ceil_mode && ops_wrap_mul(ops_wrap_sub(o, 1), stride) >= ops_wrap_add(in, pad)) o = ops_wrap_sub(o, 1);
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
                   mtk_shape_list_str(t->shape, t->ndim, s1, sizeof s1));
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
    /* check_max_pool1d ends with pooling_output_shape and its checks */
    int64_t out;
    if (!pooling_output_size(ctx, call, in, k, pad, s, d, ceil_mode, &out)) return false;
    if (out <= 0)
        return mtk_conv_error(ctx, call, MTK_ERR_SHAPE, "max_pool1d() Invalid computed output size: %lld", (long long)out);
    if (for_cpu && !mtk_pool_is_float(t->dtype)) return mtk_pool_dtype_error(ctx, call, "max_pool1d_impl", t->dtype);

    mtk_pool_input in4 = mtk_pool_input_unsqueezed(t);
    int64_t osize[1] = { out };
    mtk_pool_set_geometry(p, &in4, 1, osize);
    p->kernel[2] = k, p->stride[2] = s, p->pad[2] = pad, p->dilation[2] = d;
    int64_t shape[MTK_MAX_DIMS];
    memcpy(shape, in4.shape, sizeof shape);
    shape[in4.ndim - 1] = out;
    /* torch's meta runs max_pool1d_with_indices (layout of the 2-D op);
     * its cpu kernel makes a contiguous output */
    bool cl = call->device != MTK_DEVICE_CPU && in4.ndim == 4 && mtk_pool_like_channels_last(&in4);
    mtk_pool_set_output_layout(p, shape, in4.ndim, cl, true);
    return true;
}

/* ----------------------------------------------- max/avg 2-D and 3-D */

/* pool2d_shape_check, after the sizes are known */
static bool pool2d_shape_check(mtk_ctx *ctx, const mtk_op_call *call, const mtk_pool_input *in, const int64_t *k,
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
                       mtk_shape_list_str(sh, n, s1, sizeof s1));
    } else if (!((n == 3 && sh[0] != 0 && valid_dims) || (n == 4 && valid_dims && sh[3] != 0))) {
        return mtk_conv_error(ctx, call, MTK_ERR_SHAPE,
                   "Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, but got:%s",
                   mtk_shape_list_str(sh, n, s1, sizeof s1));
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

static bool pool3d_shape_check(mtk_ctx *ctx, const mtk_op_call *call, const mtk_pool_input *in, const int64_t *k,
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
                       fn, mtk_shape_list_str(sh, n, s1, sizeof s1), (long long)sh[i]);
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
static bool plan_pool2d(mtk_ctx *ctx, const mtk_op_call *call, const mtk_pool_input *in, bool is_max, const int64_t *k,
                        const int64_t *s, const int64_t *pad, const int64_t *d, bool ceil_mode, bool squeeze,
                        mtk_pool_plan *p)
{
    bool cl = in->ndim == 4 && mtk_pool_like_channels_last(in);
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
    mtk_pool_set_geometry(p, in, 2, out);
    for (int i = 0; i < 2; i++) p->kernel[1 + i] = k[i], p->stride[1 + i] = s[i], p->pad[1 + i] = pad[i], p->dilation[1 + i] = d[i];
    int64_t shape[MTK_MAX_DIMS];
    memcpy(shape, in->shape, sizeof shape);
    shape[in->ndim - 2] = out[0], shape[in->ndim - 1] = out[1];
    mtk_pool_set_output_layout(p, shape, in->ndim, cl, squeeze);
    return true;
}

bool mtk_pool_plan_max(mtk_ctx *ctx, const mtk_op_call *call, bool for_cpu, int32_t spatial, mtk_pool_plan *p)
{
    const mtk_tensor *t = arg_tensor(call, ARG_INPUT);
    bool ceil_mode = arg_bool(call, ARG_MAX_CEIL);
    if (!mtk_pool_read_truth(ctx, call, ARG_MAX_INDICES, &p->with_indices)) return false;
    if (spatial == 1) {
        if (!p->with_indices) return plan_max_pool1d_impl(ctx, call, for_cpu, p);
        /* max_pool1d_with_indices: max_pool2d on input.unsqueeze(-2) */
        if (!mtk_pool_check_dim_range(ctx, call, t)) return false;
        int64_t k, s = 0, pad = 0, d = 1;
        bool empty;
        if (!mtk_pool_check1d(ctx, call, ARG_KERNEL, "kernel_size", false, &k, &empty)) return false;
        bool stride_empty;
        if (!mtk_pool_check1d(ctx, call, ARG_STRIDE, "stride", true, &s, &stride_empty)) return false;
        if (!mtk_pool_check1d(ctx, call, ARG_PADDING, "padding", false, &pad, &empty)) return false;
        if (!mtk_pool_check1d(ctx, call, ARG_MAX_DILATION, "dilation", false, &d, &empty)) return false;
        if (stride_empty) s = k;
        mtk_pool_input in = mtk_pool_input_unsqueezed(t);
        int64_t k2[2] = { 1, k }, s2[2] = { 1, s }, p2[2] = { 0, pad }, d2[2] = { 1, d };
        if (!plan_pool2d(ctx, call, &in, true, k2, s2, p2, d2, ceil_mode, true, p)) return false;
        if (for_cpu && (t->dtype == MTK_BOOL || mtk_dtype_is_float8(t->dtype)))
            return mtk_pool_dtype_error(ctx, call, "max_pool2d", t->dtype);
        return !for_cpu || check_index_width(ctx, call, t->dtype, mtk_pool_like_channels_last(&in), t->shape[t->ndim - 1]);
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
    mtk_pool_input in = mtk_pool_input_as_is(t);
    if (spatial == 2) {
        if (!plan_pool2d(ctx, call, &in, true, k, s, pad, d, ceil_mode, false, p)) return false;
        if (for_cpu && (t->dtype == MTK_BOOL || mtk_dtype_is_float8(t->dtype)))
            return mtk_pool_dtype_error(ctx, call, "max_pool2d", t->dtype);
        return !for_cpu || check_index_width(ctx, call, t->dtype, in.ndim == 4 && mtk_pool_like_channels_last(&in),
                                             ops_size_product(in.shape, in.ndim - 2, in.ndim));
    }
    /* torch's cpu kernel refuses a 4-D input with channels-last strides */
    if (for_cpu && in.ndim == 4 && mtk_pool_like_channels_last(&in))
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
        return mtk_pool_dtype_error(ctx, call, "max_pool3d", t->dtype);
    if (for_cpu && !check_index_width(ctx, call, t->dtype, in.ndim == 5 && mtk_pool_like_channels_last(&in),
                                      ops_size_product(in.shape, in.ndim - 3, in.ndim)))
        return false;
    mtk_pool_set_geometry(p, &in, 3, out);
    for (int i = 0; i < 3; i++) p->kernel[i] = k[i], p->stride[i] = s[i], p->pad[i] = pad[i], p->dilation[i] = d[i];
    int64_t shape[MTK_MAX_DIMS];
    memcpy(shape, in.shape, sizeof shape);
    for (int i = 0; i < 3; i++) shape[in.ndim - 3 + i] = out[i];
    mtk_pool_set_output_layout(p, shape, in.ndim, in.ndim == 5 && mtk_pool_like_channels_last(&in), false);
    if (for_cpu && mtk_pool3d_unbatched_channels_last(t)) {
        /* output.resize_({1, C, oD, oH, oW}, channels_last_3d).squeeze_(0) */
        int64_t shape5[5] = { 1, shape[0], shape[1], shape[2], shape[3] }, stride5[5];
        mtk_channels_last_strides(shape5, 5, stride5);
        for (int32_t i = 0; i < 4; i++) p->out_stride[i] = stride5[i + 1];
    }
    return true;
}

bool mtk_pool_plan_avg(mtk_ctx *ctx, const mtk_op_call *call, bool for_cpu, int32_t spatial, mtk_pool_plan *p)
{
    const mtk_tensor *t = arg_tensor(call, ARG_INPUT);
    bool ceil_mode = arg_bool(call, ARG_AVG_CEIL);
    p->count_include_pad = arg_bool(call, ARG_AVG_COUNT_PAD);
    bool has_divisor = spatial > 1 && !arg_is_none(call, ARG_AVG_DIVISOR);
    p->divisor = has_divisor ? arg_int(call, ARG_AVG_DIVISOR) : 0;
    const char *kernel_name = spatial == 3 ? "avg_pool3d_out_frame" : "avg_pool2d";
    bool dtype_ok = t->dtype == MTK_INT64 || mtk_pool_is_float(t->dtype);
    int64_t ones[3] = { 1, 1, 1 };
    if (spatial == 1) {
        if (!mtk_pool_check_dim_range(ctx, call, t)) return false;
        int64_t k, s = 0, pad = 0;
        bool empty, stride_empty;
        if (!mtk_pool_check1d(ctx, call, ARG_KERNEL, "kernel_size", false, &k, &empty)) return false;
        if (!mtk_pool_check1d(ctx, call, ARG_STRIDE, "stride", true, &s, &stride_empty)) return false;
        if (!mtk_pool_check1d(ctx, call, ARG_PADDING, "padding", false, &pad, &empty)) return false;
        if (stride_empty) s = k;
        if (t->dtype == MTK_UINT8) return mtk_conv_error(ctx, call, MTK_ERR_DTYPE, "\"avg_pool2d\" not implemented for 'torch.uint8'");
        mtk_pool_input in = mtk_pool_input_unsqueezed(t);
        int64_t k2[2] = { 1, k }, s2[2] = { 1, s }, p2[2] = { 0, pad };
        if (!plan_pool2d(ctx, call, &in, false, k2, s2, p2, ones, ceil_mode, true, p)) return false;
        if (for_cpu && !dtype_ok) return mtk_pool_dtype_error(ctx, call, kernel_name, t->dtype);
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
    mtk_pool_input in = mtk_pool_input_as_is(t);
    if (spatial == 2) {
        if (has_divisor && p->divisor == 0) return mtk_conv_error(ctx, call, MTK_ERR_INVALID_ARGUMENT, "divisor must be not zero");
        if (!plan_pool2d(ctx, call, &in, false, k, s, pad, ones, ceil_mode, false, p)) return false;
        if (for_cpu && !dtype_ok) return mtk_pool_dtype_error(ctx, call, kernel_name, t->dtype);
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
    if (for_cpu && !dtype_ok) return mtk_pool_dtype_error(ctx, call, kernel_name, t->dtype);
    mtk_pool_set_geometry(p, &in, 3, out);
    for (int i = 0; i < 3; i++) p->kernel[i] = k[i], p->stride[i] = s[i], p->pad[i] = pad[i];
    int64_t shape[MTK_MAX_DIMS];
    memcpy(shape, in.shape, sizeof shape);
    for (int i = 0; i < 3; i++) shape[in.ndim - 3 + i] = out[i];
    mtk_pool_set_output_layout(p, shape, in.ndim, false, false);
    return true;
}
