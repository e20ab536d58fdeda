/* Creation ops with a given shape: empty, zeros, ones, full, eye and the
 * *_like family.  Each meta function resolves dtype, device and strides;
 * the cpu kernels fill the fresh, dense output. */
#include "ops/creation.h"
#include "ops/registry.h"
#include "ops/op_util.h"
#include "core/scalar.h"
#include "mtk/ops/creation.h"

#include <float.h>
#include <math.h>
#include <string.h>

/* ----------------------------------------------------------- arguments */

/* Reads an int[] argument into shape[]; returns the count or -1. */
static int32_t size_arg(mtk_op_call *call, int arg, int64_t *shape, const char *name)
{
    return mtk_value_to_ints(call->ctx, &call->args[arg], shape, MTK_MAX_DIMS, call->op->name, name);
}

bool mtk_memory_format_arg(mtk_op_call *call, int arg, mtk_memory_format if_none,
                           mtk_memory_format *out)
{
    static const struct { const char *name; mtk_memory_format format; } names[] = {
        { "contiguous_format", MTK_MEMORY_FORMAT_CONTIGUOUS },
        { "channels_last", MTK_MEMORY_FORMAT_CHANNELS_LAST },
        { "channels_last_3d", MTK_MEMORY_FORMAT_CHANNELS_LAST_3D },
        { "preserve_format", MTK_MEMORY_FORMAT_PRESERVE },
    };
    const mtk_value *v = &call->args[arg];
    if (v->kind == MTK_VALUE_NONE) {
        *out = if_none;
        return true;
    }
    if (v->kind == MTK_VALUE_STRING) {
        const char *s = v->as.s;
        if (strncmp(s, "torch.", 6) == 0) s += 6;
        for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
            if (strcmp(s, names[i].name) == 0) {
                *out = names[i].format;
                return true;
            }
    }
    return mtk_call_error(call, MTK_ERR_INVALID_ARGUMENT,
                          "memory_format must be torch.contiguous_format, torch.channels_last, "
                          "torch.channels_last_3d or torch.preserve_format, not %s",
                          v->kind == MTK_VALUE_STRING ? v->as.s : mtk_value_type_name(v));
}

bool mtk_memory_format_strides(mtk_op_call *call, mtk_memory_format format, const int64_t *shape,
                               int32_t ndim, int64_t *stride_out)
{
    switch (format) {
    case MTK_MEMORY_FORMAT_CHANNELS_LAST:
        if (ndim != 4)
            return mtk_call_error(call, MTK_ERR_SHAPE, "required rank 4 tensor to use channels_last format");
        mtk_channels_last_strides(shape, ndim, stride_out);
        return true;
    case MTK_MEMORY_FORMAT_CHANNELS_LAST_3D:
        if (ndim != 5)
            return mtk_call_error(call, MTK_ERR_SHAPE,
                                  "required rank 5 tensor to use channels_last_3d format");
        mtk_channels_last_strides(shape, ndim, stride_out);
        return true;
    case MTK_MEMORY_FORMAT_PRESERVE:
        return mtk_call_error(call, MTK_ERR_INVALID_ARGUMENT, "unsupported memory format Preserve");
    default:
        mtk_contiguous_strides(shape, ndim, stride_out);
        return true;
    }
}

bool mtk_is_contiguous_as(const mtk_tensor *x, mtk_memory_format format)
{
    static const int32_t order4[] = { 1, 3, 2, 0 }, order5[] = { 1, 4, 3, 2, 0 };
    const int32_t *order;
    if (format == MTK_MEMORY_FORMAT_CHANNELS_LAST) {
        if (x->ndim != 4) return false;
        order = order4;
    } else if (format == MTK_MEMORY_FORMAT_CHANNELS_LAST_3D) {
        if (x->ndim != 5) return false;
        order = order5;
    } else {
        return mtk_tensor_is_contiguous(x);
    }
    int64_t expected = 1;
    for (int32_t k = 0; k < x->ndim; k++) {
        int32_t d = order[k];
        if (x->shape[d] == 1) continue;
        if (x->stride[d] != expected) return false;
        expected = ops_wrap_mul(expected, x->shape[d]); /* as torch's */
    }
    return true;
}

/* The `layout` keyword of a creation op: None or torch.strided (the eval
 * language reads torch.X layouts as the string "X"); the sparse and
 * mkldnn layouts are refused as what mtk does not have. */
static bool check_layout(mtk_op_call *call)
{
    const mtk_arg_spec *specs;
    int32_t n = mtk_op_args(call->op, &specs);
    for (int32_t i = 0; i < n; i++) {
        if (strcmp(specs[i].name, "layout") != 0) continue;
        const mtk_value *v = &call->args[i];
        if (v->kind == MTK_VALUE_NONE || (v->kind == MTK_VALUE_STRING && strcmp(v->as.s, "strided") == 0))
            return true;
        if (v->kind == MTK_VALUE_STRING && (strncmp(v->as.s, "sparse_", 7) == 0 || strcmp(v->as.s, "_mkldnn") == 0 ||
                                            strcmp(v->as.s, "jagged") == 0))
            return mtk_call_error(call, MTK_ERR_NOT_IMPLEMENTED,
                                  "layout=torch.%s is not supported: mtk tensors are dense "
                                  "(torch.strided, the default)",
                                  v->as.s);
        return mtk_call_error(call, MTK_ERR_INVALID_ARGUMENT,
                              "argument 'layout' must be torch.layout (torch.strided), not %s",
                              v->kind == MTK_VALUE_STRING ? "str" : mtk_value_type_name(v));
    }
    return true;
}

bool mtk_creation_output(mtk_op_call *call, int dtype_arg, mtk_dtype dtype, mtk_device device,
                         const int64_t *shape, int32_t ndim, const int64_t *stride)
{
    if (!check_layout(call)) return false;
    if (!arg_is_none(call, dtype_arg)) dtype = call->args[dtype_arg].as.dtype;
    if (!arg_is_none(call, dtype_arg + 1)) device = call->args[dtype_arg + 1].as.device;
    bool requires_grad = arg_bool(call, dtype_arg + 2);
    if (!mtk_shape_check(call->ctx, call->op->name, shape, ndim, NULL)) return false;
    if (requires_grad && !mtk_dtype_is_floating(dtype))
        return mtk_call_error(call, MTK_ERR_DTYPE,
                              "Only Tensors of floating point and complex dtype can require gradients");
    mtk_tensor *t = mtk_tensor_new(call->ctx, dtype, shape, ndim, stride, device);
    if (!t || !mtk_call_set_outputs(call, 1)) return false;
    if (requires_grad) t->flags |= MTK_TENSOR_REQUIRES_GRAD;
    mtk_call_output(call, 0, t, -1);
    call->device = device; /* the op runs where its output lives */
    return true;
}

/* ------------------------------------------------------ scalar handling */

/* Largest finite value of a floating dtype. */
static double float_max(mtk_dtype dtype)
{
    switch (dtype) {
    case MTK_FLOAT16: return 65504.0;
    case MTK_BFLOAT16: return 3.3895313892515355e38;
    case MTK_FLOAT32: return FLT_MAX;
    case MTK_FLOAT8_E5M2: return 57344.0;
    case MTK_FLOAT8_E4M3FN: return 448.0;
    default: return DBL_MAX;
    }
}

/* Range of an integer dtype. */
static void int_range(mtk_dtype dtype, int64_t *lo, int64_t *hi)
{
    switch (dtype) {
    case MTK_UINT8: *lo = 0, *hi = 255; break;
    case MTK_INT8: *lo = INT8_MIN, *hi = INT8_MAX; break;
    case MTK_INT16: *lo = INT16_MIN, *hi = INT16_MAX; break;
    case MTK_INT32: *lo = INT32_MIN, *hi = INT32_MAX; break;
    default: *lo = INT64_MIN, *hi = INT64_MAX; break;
    }
}

bool mtk_scalar_fits(mtk_op_call *call, const mtk_value *v, mtk_dtype dtype)
{
    bool overflow = false;
    if (dtype == MTK_BOOL || v->kind == MTK_VALUE_BOOL) return true;
    if (mtk_dtype_is_floating(dtype)) {
        double d = mtk_value_as_double(v), max = float_max(dtype);
        bool has_inf = dtype != MTK_FLOAT8_E4M3FN;
        if (isinf(d)) overflow = !has_inf;
        else overflow = d < -max || d > max; /* NaN compares false: fits */
    } else {
        int64_t lo, hi;
        int_range(dtype, &lo, &hi);
        if (v->kind == MTK_VALUE_INT) {
            int64_t i = v->as.i;
            /* c10 lets negative ints wrap into unsigned types: -1 -> 255 */
            if (dtype == MTK_UINT8) overflow = i > hi || i < -hi;
            else overflow = i < lo || i > hi;
        } else {
            double d = v->as.f;
            overflow = !(d >= (double)lo && d <= (double)hi);
            if (dtype == MTK_INT64) overflow = !(d >= -9223372036854775808.0 && d < 9223372036854775808.0);
        }
    }
    if (overflow)
        return mtk_call_error(call, MTK_ERR_OVERFLOW, "value cannot be converted to type %s without overflow",
                              mtk_dtype_get(dtype)->c10_name);
    return true;
}

void mtk_scalar_store(const mtk_value *v, mtk_dtype dtype, void *elem)
{
    if (v->kind == MTK_VALUE_FLOAT) mtk_store_f64(dtype, elem, v->as.f);
    else if (v->kind == MTK_VALUE_BOOL) mtk_store_i64(dtype, elem, v->as.b ? 1 : 0);
    else mtk_store_i64(dtype, elem, v->as.i);
}

void mtk_fill_dense(mtk_tensor *t, const void *elem)
{
    size_t esize = mtk_dtype_size(t->dtype);
    size_t total = (size_t)mtk_tensor_numel(t) * esize;
    char *data = mtk_tensor_data(t);
    if (total == 0) return;
    memcpy(data, elem, esize);
    /* doubling copies: each pass copies what is already filled */
    for (size_t done = esize; done < total;) {
        size_t n = done < total - done ? done : total - done;
        memcpy(data + done, data, n);
        done += n;
    }
}

/* Fills `out` with the number `v` as fill_() does: a checked conversion,
 * except for a single element of a reduced float type (torch's one-element
 * fast path converts without checking: full((1,), 70000., dtype=half) is
 * inf, full((2,), ...) is an error). */
static bool fill_with(mtk_op_call *call, mtk_tensor *out, const mtk_value *v)
{
    bool reduced = out->dtype == MTK_FLOAT16 || out->dtype == MTK_BFLOAT16 || mtk_dtype_is_float8(out->dtype);
    if (!(reduced && mtk_tensor_numel(out) == 1) && !mtk_scalar_fits(call, v, out->dtype)) return false;
    unsigned char elem[8];
    mtk_scalar_store(v, out->dtype, elem);
    mtk_fill_dense(out, elem);
    return true;
}

/* ------------------------------------------------- empty, zeros, ones */

bool mtk_empty_meta(mtk_op_call *call)
{
    int64_t shape[MTK_MAX_DIMS], stride[MTK_MAX_DIMS];
    int32_t ndim = size_arg(call, 0, shape, "size");
    mtk_memory_format format;
    if (ndim < 0 || !mtk_shape_check(call->ctx, call->op->name, shape, ndim, NULL) ||
        !mtk_memory_format_arg(call, 4, MTK_MEMORY_FORMAT_CONTIGUOUS, &format))
        return false;
    if (!mtk_memory_format_strides(call, format, shape, ndim, stride)) return false;
    return mtk_creation_output(call, 1, mtk_ctx_dtype(call->ctx), call->device, shape, ndim, stride);
}

bool mtk_zeros_meta(mtk_op_call *call)
{
    int64_t shape[MTK_MAX_DIMS];
    int32_t ndim = size_arg(call, 0, shape, "size");
    if (ndim < 0) return false;
    return mtk_creation_output(call, 1, mtk_ctx_dtype(call->ctx), call->device, shape, ndim, NULL);
}

bool mtk_empty_cpu(mtk_op_call *call)
{
    (void)call; /* uninitialized memory, as torch.empty */
    return true;
}

bool mtk_zeros_cpu(mtk_op_call *call)
{
    mtk_tensor *out = call->out[0];
    /* every dtype's zero is all bits zero */
    memset(mtk_tensor_data(out), 0, mtk_tensor_nbytes(out));
    return true;
}

bool mtk_ones_cpu(mtk_op_call *call)
{
    mtk_value one = mtk_value_int(1);
    return fill_with(call, call->out[0], &one);
}

/* ---------------------------------------------------------------- full */

bool mtk_full_meta(mtk_op_call *call)
{
    int64_t shape[MTK_MAX_DIMS];
    int32_t ndim = size_arg(call, 0, shape, "size");
    if (ndim < 0) return false;
    /* dtype inferred from the fill value as torch.full does */
    const mtk_value *fill = &call->args[1];
    mtk_dtype dtype = fill->kind == MTK_VALUE_BOOL  ? MTK_BOOL
                      : fill->kind == MTK_VALUE_INT ? MTK_INT64
                                                    : mtk_ctx_dtype(call->ctx);
    return mtk_creation_output(call, 2, dtype, call->device, shape, ndim, NULL);
}

bool mtk_full_cpu(mtk_op_call *call) { return fill_with(call, call->out[0], &call->args[1]); }

/* ----------------------------------------------------------------- eye */

bool mtk_eye_meta(mtk_op_call *call)
{
    int64_t n = arg_int(call, 0);
    int64_t m = arg_is_none(call, 1) ? n : arg_int(call, 1);
    if (n < 0) return mtk_call_error(call, MTK_ERR_SHAPE, "n must be greater or equal to 0, got %lld", (long long)n);
    if (m < 0) return mtk_call_error(call, MTK_ERR_SHAPE, "m must be greater or equal to 0, got %lld", (long long)m);
    int64_t shape[2] = { n, m };
    return mtk_creation_output(call, 2, mtk_ctx_dtype(call->ctx), call->device, shape, 2, NULL);
}

bool mtk_eye_cpu(mtk_op_call *call)
{
    mtk_tensor *out = call->out[0]; /* (n, m), contiguous */
    size_t esize = mtk_dtype_size(out->dtype);
    char *data = mtk_tensor_data(out);
    unsigned char one[8];
    memset(data, 0, mtk_tensor_nbytes(out));
    mtk_store_i64(out->dtype, one, 1);
    int64_t diag = out->shape[0] < out->shape[1] ? out->shape[0] : out->shape[1];
    for (int64_t i = 0; i < diag; i++) memcpy(data + (size_t)(i * out->stride[0] + i) * esize, one, esize);
    return true;
}

/* --------------------------------------------------------- the *_like */

/* a >= b for sizes, where 0 counts as largest on the right and smallest
 * on the left (torch's ge in its output-layout sort) */
static bool size_ge(int64_t a, int64_t b) { return b == 0 || (a != 0 && a >= b); }

/* torch's comparison of dims a and b in its physical-layout sort: 1 when a
 * should sit inside (faster than) b's position, -1 when not, 0 unknown. */
static int layout_compare(const mtk_tensor *x, int32_t a, int32_t b)
{
    int64_t sa = x->stride[a], sb = x->stride[b];
    if (sa == 0 || sb == 0) return 0;
    if (sa == sb) return size_ge(x->shape[b], x->shape[a]) ? 0 : 1;
    return sb > sa ? -1 : 1;
}

/* Strides of x's *_like(memory_format=preserve) as torch's meta device
 * computes them: dense strides in the order of x's strides (the
 * elementwise-output permutation; contiguous and channels-last inputs keep
 * their layout).  Torch's cpu kernels keep the strides of a dense input
 * exactly instead; meta is the reference here. */
static void like_strides(const mtk_tensor *x, int64_t *stride)
{
    int32_t n = x->ndim, perm[MTK_MAX_DIMS], physical[MTK_MAX_DIMS];
    if (n == 0) return;
    bool contiguous = mtk_tensor_is_contiguous(x);
    bool channels_last = mtk_is_contiguous_as(x, MTK_MEMORY_FORMAT_CHANNELS_LAST);
    if (n == 1 || (contiguous && !channels_last)) {
        for (int32_t i = 0; i < n; i++) physical[i] = i;
    } else if (channels_last && !contiguous) {
        physical[0] = 0, physical[1] = 2, physical[2] = 3, physical[3] = 1;
    } else {
        /* insertion sort of dims from fastest to slowest, then reversed */
        for (int32_t i = 0; i < n; i++) perm[i] = n - 1 - i;
        for (int32_t i = 1; i < n; i++) {
            int32_t dim1 = i;
            for (int32_t dim0 = i - 1; dim0 >= 0; dim0--) {
                int c = layout_compare(x, perm[dim0], perm[dim1]);
                if (c > 0) {
                    int32_t tmp = perm[dim0];
                    perm[dim0] = perm[dim1];
                    perm[dim1] = tmp;
                    dim1 = dim0;
                } else if (c < 0) {
                    break;
                }
            }
        }
        for (int32_t i = 0; i < n; i++) physical[i] = perm[n - 1 - i];
    }
    /* physical[0] is the slowest dim: contiguous strides in that order */
    int64_t next = 1;
    for (int32_t p = n - 1; p >= 0; p--) {
        stride[physical[p]] = next;
        next = ops_sat_mul(next, x->shape[physical[p]] > 1 ? x->shape[physical[p]] : 1);
    }
}

static bool like_output(mtk_op_call *call, int dtype_arg)
{
    const mtk_tensor *x = arg_tensor(call, 0);
    int64_t stride[MTK_MAX_DIMS];
    mtk_memory_format format;
    if (!mtk_memory_format_arg(call, dtype_arg + 3, MTK_MEMORY_FORMAT_PRESERVE, &format)) return false;
    if (format == MTK_MEMORY_FORMAT_PRESERVE) like_strides(x, stride);
    else if (!mtk_memory_format_strides(call, format, x->shape, x->ndim, stride)) return false;
    return mtk_creation_output(call, dtype_arg, x->dtype, x->device, x->shape, x->ndim, stride);
}

bool mtk_like_meta(mtk_op_call *call) { return like_output(call, 1); }
bool mtk_full_like_meta(mtk_op_call *call) { return like_output(call, 2); }
bool mtk_full_like_cpu(mtk_op_call *call) { return fill_with(call, call->out[0], &call->args[1]); }

/* ------------------------------------------------------------ typed API */

/* Starts a typed call of `id` with an int[] first argument. */
static bool start_sized(mtk_op_call *call, mtk_ctx *ctx, mtk_op_id id, const int64_t *shape, int32_t ndim)
{
    mtk_op_call_init(call, ctx, mtk_op_by_id(id));
    if (ndim < 0 || ndim > MTK_MAX_DIMS)
        return mtk_call_error(call, MTK_ERR_SHAPE, "%d dimensions is more than mtk supports (%d)", (int)ndim,
                              MTK_MAX_DIMS);
    call->args[0] = mtk_value_int_list(ctx, shape, ndim);
    return call->args[0].kind != MTK_VALUE_NONE;
}

static mtk_tensor *run_sized(mtk_ctx *ctx, mtk_op_id id, const int64_t *shape, int32_t ndim,
                             const mtk_value *fill, mtk_dtype dtype)
{
    mtk_op_call call;
    if (!start_sized(&call, ctx, id, shape, ndim)) return NULL;
    int dtype_arg = 1;
    if (fill) call.args[dtype_arg++] = *fill;
    if (dtype != MTK_DTYPE_UNDEFINED) call.args[dtype_arg] = mtk_value_dtype(dtype);
    return mtk_op_run_tensor(&call);
}

mtk_tensor *mtk_empty(mtk_ctx *ctx, const int64_t *shape, int32_t ndim, mtk_dtype dtype)
{
    return run_sized(ctx, OPID_EMPTY, shape, ndim, NULL, dtype);
}

mtk_tensor *mtk_zeros(mtk_ctx *ctx, const int64_t *shape, int32_t ndim, mtk_dtype dtype)
{
    return run_sized(ctx, OPID_ZEROS, shape, ndim, NULL, dtype);
}

mtk_tensor *mtk_ones(mtk_ctx *ctx, const int64_t *shape, int32_t ndim, mtk_dtype dtype)
{
    return run_sized(ctx, OPID_ONES, shape, ndim, NULL, dtype);
}

mtk_tensor *mtk_full(mtk_ctx *ctx, const int64_t *shape, int32_t ndim, double fill_value, mtk_dtype dtype)
{
    mtk_value fill = mtk_value_float(fill_value);
    return run_sized(ctx, OPID_FULL, shape, ndim, &fill, dtype);
}

mtk_tensor *mtk_full_int(mtk_ctx *ctx, const int64_t *shape, int32_t ndim, int64_t fill_value, mtk_dtype dtype)
{
    mtk_value fill = mtk_value_int(fill_value);
    return run_sized(ctx, OPID_FULL, shape, ndim, &fill, dtype);
}

mtk_tensor *mtk_eye(mtk_ctx *ctx, int64_t n, int64_t m, mtk_dtype dtype)
{
    mtk_op_call call;
    mtk_op_call_init(&call, ctx, mtk_op_by_id(OPID_EYE));
    call.args[0] = mtk_value_int(n);
    if (m >= 0) call.args[1] = mtk_value_int(m);
    if (dtype != MTK_DTYPE_UNDEFINED) call.args[2] = mtk_value_dtype(dtype);
    return mtk_op_run_tensor(&call);
}

static mtk_tensor *run_like(mtk_ctx *ctx, mtk_op_id id, const mtk_tensor *x, const mtk_value *fill,
                            mtk_dtype dtype)
{
    if (!x) return NULL;
    mtk_op_call call;
    mtk_op_call_init(&call, ctx, mtk_op_by_id(id));
    call.args[0] = mtk_value_tensor((mtk_tensor *)x);
    int dtype_arg = 1;
    if (fill) call.args[dtype_arg++] = *fill;
    if (dtype != MTK_DTYPE_UNDEFINED) call.args[dtype_arg] = mtk_value_dtype(dtype);
    return mtk_op_run_tensor(&call);
}

mtk_tensor *mtk_empty_like(mtk_ctx *ctx, const mtk_tensor *x, mtk_dtype dtype)
{
    return run_like(ctx, OPID_EMPTY_LIKE, x, NULL, dtype);
}

mtk_tensor *mtk_zeros_like(mtk_ctx *ctx, const mtk_tensor *x, mtk_dtype dtype)
{
    return run_like(ctx, OPID_ZEROS_LIKE, x, NULL, dtype);
}

mtk_tensor *mtk_ones_like(mtk_ctx *ctx, const mtk_tensor *x, mtk_dtype dtype)
{
    return run_like(ctx, OPID_ONES_LIKE, x, NULL, dtype);
}

mtk_tensor *mtk_full_like(mtk_ctx *ctx, const mtk_tensor *x, double fill_value, mtk_dtype dtype)
{
    mtk_value fill = mtk_value_float(fill_value);
    return run_like(ctx, OPID_FULL_LIKE, x, &fill, dtype);
}
