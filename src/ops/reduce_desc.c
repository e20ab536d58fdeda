/* Descriptions of reduce calls: argument overloads, dims, result dtypes
 * and shapes, validated as torch 2.13 does on the meta device, and the
 * calls torch's meta device accepts but its cpu kernels refuse.
 *
 * Output shapes: the input's shape with each reduced dim removed (or kept
 * as 1 with keepdim); outputs are contiguous, as torch's meta and cpu
 * kernels make them whatever the input's strides. */
#include "ops/reduce_kernel.h"
#include "ops/elementwise.h"
#include "mtk/ops/elementwise.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* -------------------------------------------------------------- helpers */

static bool fail(mtk_op_call *call, mtk_status status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

static bool fail(mtk_op_call *call, mtk_status status, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return mtk_call_error(call, status, "%s", msg);
}

/* Notes that torch's cpu kernel refuses a call its meta device accepts. */
static void refuse_on_cpu(red_desc *d, mtk_status status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

static void refuse_on_cpu(red_desc *d, mtk_status status, const char *fmt, ...)
{
    if (d->cpu_refusal[0]) return; /* the first refusal wins */
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(d->cpu_refusal, sizeof d->cpu_refusal, fmt, ap);
    va_end(ap);
    d->cpu_status = status;
}

/* The "not implemented for 'Float8_e5m2'" refusal of a cpu kernel, which
 * torch only reaches when there are elements to read. */
static void refuse_dtype_on_cpu(red_desc *d, const char *kernel, mtk_dtype dtype)
{
    if (mtk_tensor_numel(d->input) == 0) return;
    refuse_on_cpu(d, MTK_ERR_DTYPE, "\"%s\" not implemented for '%s'", kernel, mtk_dtype_cpp_name(dtype));
}

static const char *cpp(mtk_dtype t) { return mtk_dtype_cpp_name(t); }

static bool is_float(mtk_dtype t) { return mtk_dtype_is_floating(t); }
static bool is_integral(mtk_dtype t) { return mtk_dtype_is_integral(t, true); }

/* Wraps a dim of an ndim-D tensor, naming the op in the error. */
static bool wrap_dim(mtk_op_call *call, int64_t dim, int32_t ndim, int32_t *out)
{
    int64_t n = ndim > 0 ? ndim : 1;
    if (dim < -n || dim >= n)
        return fail(call, MTK_ERR_INDEX, "Dimension out of range (expected to be in range of [%lld, %lld], but got %lld)",
                    (long long)-n, (long long)(n - 1), (long long)dim);
    *out = (int32_t)(dim < 0 ? dim + n : dim);
    return true;
}

static void reduce_all(red_desc *d)
{
    for (int32_t i = 0; i < d->input->ndim; i++) d->reduce[i] = true;
}

/* What an empty dim list means to an op. */
typedef enum empty_dims {
    EMPTY_ALL,          /* sum(x, []): every dim                         */
    EMPTY_NONE,         /* all(x, []): no dim, the result is x's shape   */
    EMPTY_NONE_ON_META  /* nansum(x, []): none on meta, every dim on cpu */
} empty_dims;

/* Reads a dim argument: None (every dim), an int, or a list/tuple of
 * ints.  Sets d->reduce.  *empty_list is set when the list was empty;
 * *ndims gets the number of dims given (-1 for None). */
static bool read_dims(mtk_op_call *call, red_desc *d, const mtk_value *v, empty_dims empty, const char *arg,
                      int32_t *ndims)
{
    const mtk_tensor *x = d->input;
    memset(d->reduce, 0, sizeof d->reduce);
    *ndims = -1;
    if (v->kind == MTK_VALUE_NONE) {
        reduce_all(d);
        return true;
    }
    int64_t dims[MTK_MAX_DIMS + 1];
    int32_t n = mtk_value_to_ints(call->ctx, v, dims, MTK_MAX_DIMS + 1, call->op->name, arg);
    if (n < 0) return false;
    *ndims = n;
    if (n == 0) {
        if (empty == EMPTY_ALL || (empty == EMPTY_NONE_ON_META && call->device != MTK_DEVICE_META)) reduce_all(d);
        return true;
    }
    bool seen[MTK_MAX_DIMS + 1] = { false };
    for (int32_t k = 0; k < n; k++) {
        int32_t w = 0;
        if (!wrap_dim(call, dims[k], x->ndim, &w)) return false;
        if (seen[w]) return fail(call, MTK_ERR_INVALID_ARGUMENT, "dim %d appears multiple times in the list of dims", (int)w);
        seen[w] = true;
        if (x->ndim > 0) d->reduce[w] = true;
    }
    return true;
}

/* Reads an int dim (argmax, max(x, dim), cumsum, ...): wraps it and marks
 * it reduced. */
static bool read_one_dim(mtk_op_call *call, red_desc *d, int64_t dim)
{
    int32_t w = 0;
    if (!wrap_dim(call, dim, d->input->ndim, &w)) return false;
    memset(d->reduce, 0, sizeof d->reduce);
    if (d->input->ndim > 0) d->reduce[w] = true;
    d->dim = w;
    d->has_dim = true;
    return true;
}

/* The output shape from the reduce mask and keepdim, contiguous.  On
 * the meta device torch makes the keepdim results of sum, prod, amax,
 * amin, var, var_mean's var and the vector norms of order 0, 1 and +-inf
 * by unsqueezing the reduced result at each
 * reduced dim (Tensor.unsqueeze: the new dim's stride is the size times
 * the stride of the dim after it, 1 at the end), which differs from
 * contiguous strides around size-0 dims; its cpu kernels make them
 * contiguous. */
static void shape_outputs(const mtk_op_call *call, red_desc *d)
{
    const mtk_tensor *x = d->input;
    int64_t shape[MTK_MAX_DIMS], stride[MTK_MAX_DIMS];
    int32_t n = 0;
    for (int32_t i = 0; i < x->ndim; i++)
        if (!d->reduce[i]) shape[n++] = x->shape[i];
    mtk_contiguous_strides(shape, n, stride);
    d->out_ndim = 0;
    for (int32_t i = 0; i < x->ndim; i++) {
        if (!d->reduce[i]) d->out_shape[d->out_ndim++] = x->shape[i];
        else if (d->keepdim) d->out_shape[d->out_ndim++] = 1;
    }
    mtk_contiguous_strides(d->out_shape, d->out_ndim, d->out_stride[0]);
    memcpy(d->out_stride[1], d->out_stride[0], sizeof d->out_stride[0]);
    /* vector norms of order 0, 1 and +-inf end in a sum or amax/amin */
    bool plain_norm = d->kind == MTK_RED_VECTOR_NORM && (d->ord == 0.0 || d->ord == 1.0 || isinf(d->ord));
    bool unsqueezed = d->kind == MTK_RED_SUM || d->kind == MTK_RED_PROD || d->kind == MTK_RED_AMAX ||
                      d->kind == MTK_RED_AMIN || d->kind == MTK_RED_VAR || d->kind == MTK_RED_VAR_MEAN || plain_norm;
    if (!d->keepdim || !unsqueezed || call->device != MTK_DEVICE_META) return;
    int32_t k = 0; /* next dim of the reduced result */
    for (int32_t i = 0, o = 0; i < x->ndim; i++, o++) {
        if (!d->reduce[i]) d->out_stride[0][o] = stride[k++];
        else d->out_stride[0][o] = k < n ? shape[k] * stride[k] : 1;
    }
}

/* An output of the input's own shape: contiguous (scans), or laid out as
 * torch's meta device lays out all/any over no dim (any: empty_like of the
 * input; all: logical_not(any(logical_not(x))), element-wise layouts). */
typedef enum like_input { LIKE_CONTIGUOUS, LIKE_EMPTY_LIKE, LIKE_ELEMENTWISE } like_input;

static bool shape_like_input(mtk_op_call *call, red_desc *d, like_input layout)
{
    const mtk_tensor *x = d->input;
    d->out_ndim = x->ndim;
    memcpy(d->out_shape, x->shape, (size_t)x->ndim * sizeof *x->shape);
    mtk_contiguous_strides(d->out_shape, d->out_ndim, d->out_stride[0]);
    if (layout == LIKE_EMPTY_LIKE) {
        mtk_dense_strides_like(x, d->out_stride[0]);
    } else if (layout == LIKE_ELEMENTWISE) {
        /* the element-wise family's own stride rule, on a meta alias */
        mtk_tensor alias = *x;
        alias.device = MTK_DEVICE_META;
        alias.storage = NULL;
        mtk_tensor *once = mtk_logical_not(call->ctx, &alias);
        mtk_tensor *twice = mtk_logical_not(call->ctx, once);
        if (!twice) return false;
        memcpy(d->out_stride[0], twice->stride, (size_t)x->ndim * sizeof *x->stride);
    }
    memcpy(d->out_stride[1], d->out_stride[0], sizeof d->out_stride[0]);
    return true;
}

int64_t red_reduced_count(const red_desc *d)
{
    int64_t n = 1;
    for (int32_t i = 0; i < d->input->ndim; i++)
        if (d->reduce[i]) n *= d->input->shape[i];
    return n;
}

static bool any_reduced_dim_empty(const red_desc *d, int32_t *which)
{
    for (int32_t i = 0; i < d->input->ndim; i++)
        if (d->reduce[i] && d->input->shape[i] == 0) {
            *which = i;
            return true;
        }
    return false;
}

/* Whether the caller gave argument i (by name calls; typed calls give
 * nothing), to tell PyTorch's overloads apart: sum(x, keepdim=True) and
 * max(x, None) match none of them. */
static bool given(const mtk_op_call *call, int i) { return (call->given_args >> i) & 1u; }

static bool keepdim_without_dim(mtk_op_call *call, int dim_arg, int keepdim_arg)
{
    if (!given(call, keepdim_arg) || given(call, dim_arg)) return true;
    return fail(call, MTK_ERR_INVALID_ARGUMENT,
                "%s() received an invalid combination of arguments - got (Tensor, keepdim=bool): keepdim "
                "needs a dim",
                call->op->name);
}

static bool explicit_none_dim(mtk_op_call *call, int dim_arg)
{
    if (!given(call, dim_arg) || !arg_is_none(call, dim_arg)) return true;
    return fail(call, MTK_ERR_INVALID_ARGUMENT, "%s(): argument 'dim' must be int, not NoneType", call->op->name);
}

/* An optional dtype argument: MTK_DTYPE_UNDEFINED when None. */
static mtk_dtype opt_dtype(const mtk_op_call *call, int i)
{
    return call->args[i].kind == MTK_VALUE_DTYPE ? call->args[i].as.dtype : MTK_DTYPE_UNDEFINED;
}

/* sum/prod/cumsum: integral inputs (and bool) give int64 unless a dtype
 * is given; the input is converted to the result dtype first. */
static mtk_dtype summing_dtype(mtk_dtype input, mtk_dtype given)
{
    if (given != MTK_DTYPE_UNDEFINED) return given;
    return is_integral(input) ? MTK_INT64 : input;
}

/* ------------------------------------------------------ sum-like ops */

/* sum, nansum, mean, nanmean: (input, dim, keepdim, *, dtype) */
static bool describe_sum_like(mtk_op_call *call, red_desc *d)
{
    const mtk_tensor *x = d->input;
    mtk_dtype given = opt_dtype(call, 3);
    const char *name = call->op->name;
    int32_t ndims;
    bool nan_variant = d->kind == MTK_RED_NANSUM || d->kind == MTK_RED_NANMEAN;
    d->keepdim = arg_bool(call, 2);
    if (!nan_variant && !keepdim_without_dim(call, 1, 2)) return false;
    if (d->kind == MTK_RED_NANMEAN && !is_float(x->dtype))
        return fail(call, MTK_ERR_DTYPE, "nanmean(): expected input to have floating point or complex dtype but got %s",
                    cpp(x->dtype));
    if (d->kind == MTK_RED_MEAN || d->kind == MTK_RED_NANMEAN) {
        if (given != MTK_DTYPE_UNDEFINED && !is_float(given))
            return fail(call, MTK_ERR_DTYPE,
                        "%s(): could not infer output dtype. Optional dtype must be either a floating point "
                        "or complex dtype. Got: %s",
                        name, cpp(given));
        if (given == MTK_DTYPE_UNDEFINED && !is_float(x->dtype))
            return fail(call, MTK_ERR_DTYPE,
                        "%s(): could not infer output dtype. Input dtype must be either a floating point "
                        "or complex dtype. Got: %s",
                        name, cpp(x->dtype));
        d->out_dtype[0] = given != MTK_DTYPE_UNDEFINED ? given : x->dtype;
    } else {
        d->out_dtype[0] = summing_dtype(x->dtype, given);
    }
    d->cast = d->kind == MTK_RED_MEAN || d->kind == MTK_RED_NANMEAN ? d->out_dtype[0]
                                                                      : summing_dtype(x->dtype, given);
    if (!read_dims(call, d, &call->args[1], nan_variant ? EMPTY_NONE_ON_META : EMPTY_ALL, "dim", &ndims))
        return false;
    if (mtk_dtype_is_float8(d->cast)) refuse_dtype_on_cpu(d, nan_variant ? "nansum_cpu" : "sum_cpu", d->cast);
    shape_outputs(call, d);
    return true;
}

/* prod(input, dim=None, keepdim=False, *, dtype) */
static bool describe_prod(mtk_op_call *call, red_desc *d)
{
    const mtk_tensor *x = d->input;
    d->keepdim = arg_bool(call, 2);
    d->out_dtype[0] = d->cast = summing_dtype(x->dtype, opt_dtype(call, 3));
    if (!explicit_none_dim(call, 1) || !keepdim_without_dim(call, 1, 2)) return false;
    if (arg_is_none(call, 1)) {
        if (d->keepdim)
            return fail(call, MTK_ERR_INVALID_ARGUMENT, "keepdim=True needs a dim (prod reduces one dim or all of them)");
        reduce_all(d);
    } else if (!read_one_dim(call, d, arg_int(call, 1))) {
        return false;
    }
    if (mtk_dtype_is_float8(d->cast)) refuse_dtype_on_cpu(d, "prod_out_cpu", d->cast);
    shape_outputs(call, d);
    return true;
}

/* ------------------------------------------------ extremes and indices */

/* Extremes have no identity: reducing an empty dim is an error (every
 * device).  Without a dim (`all_dims`) torch asks for one. */
static bool empty_extreme_error(mtk_op_call *call, const char *name, const red_desc *d, bool all_dims)
{
    int32_t which;
    if (all_dims && mtk_tensor_numel(d->input) == 0) {
        bool arg = d->kind == MTK_RED_ARGMAX || d->kind == MTK_RED_ARGMIN;
        return fail(call, MTK_ERR_INVALID_ARGUMENT,
                    "%s(): Expected reduction dim to be specified for input.numel() == 0.%s", name,
                    arg ? "" : " Specify the reduction dim with the 'dim' argument.");
    }
    if (any_reduced_dim_empty(d, &which))
        return fail(call, MTK_ERR_INDEX, "%s(): Expected reduction dim %d to have non-zero size.", name, (int)which);
    return true;
}

/* amax/amin(input, dim=[], keepdim=False): an empty list is every dim;
 * reducing an empty dim is an error on every device. */
static bool describe_amax(mtk_op_call *call, red_desc *d)
{
    int32_t ndims;
    d->keepdim = arg_bool(call, 2);
    d->out_dtype[0] = d->cast = d->input->dtype;
    if (!read_dims(call, d, &call->args[1], EMPTY_ALL, "dim", &ndims)) return false;
    if (!empty_extreme_error(call, call->op->name, d, ndims <= 0)) return false;
    if (mtk_dtype_is_float8(d->cast))
        refuse_dtype_on_cpu(d, d->kind == MTK_RED_AMAX ? "max_values_cpu" : "min_values_cpu", d->cast);
    shape_outputs(call, d);
    return true;
}

/* max/min: (input) -> 0-dim value; (input, dim, keepdim) -> (values,
 * indices); (input, other) -> maximum/minimum. */
static bool describe_max(mtk_op_call *call, red_desc *d)
{
    const mtk_tensor *x = d->input;
    const char *name = call->op->name;
    const mtk_value *dim = &call->args[1];
    bool keepdim = arg_bool(call, 2);
    mtk_tensor *other = arg_tensor(call, 3);
    if (!explicit_none_dim(call, 1) || !keepdim_without_dim(call, 1, 2)) return false;
    if (dim->kind == MTK_VALUE_TENSOR || other) {
        if ((dim->kind == MTK_VALUE_TENSOR && other) || (other && dim->kind != MTK_VALUE_NONE) || keepdim ||
            given(call, 2))
            return fail(call, MTK_ERR_INVALID_ARGUMENT,
                        "%s() received an invalid combination of arguments: (input, other) takes no dim or keepdim",
                        name);
        d->binary_other = other ? other : dim->as.tensor;
        return true;
    }
    d->out_dtype[0] = d->cast = x->dtype;
    if (dim->kind == MTK_VALUE_NONE) {
        if (keepdim)
            return fail(call, MTK_ERR_INVALID_ARGUMENT,
                        "%s() received an invalid combination of arguments - got (Tensor, keepdim=bool): "
                        "keepdim needs a dim",
                        name);
        /* max(x): the 0-dim maximum of every element */
        d->kind = d->kind == MTK_RED_MAX ? MTK_RED_AMAX : MTK_RED_AMIN;
        reduce_all(d);
        if (mtk_tensor_numel(x) == 0)
            refuse_on_cpu(d, MTK_ERR_INVALID_ARGUMENT,
                          "%s(): Expected reduction dim to be specified for input.numel() == 0. Specify the "
                          "reduction dim with the 'dim' argument.",
                          name);
        if (mtk_dtype_is_float8(x->dtype)) refuse_dtype_on_cpu(d, d->kind == MTK_RED_AMAX ? "max_all" : "min_all", x->dtype);
        shape_outputs(call, d);
        return true;
    }
    if (dim->kind != MTK_VALUE_INT)
        return fail(call, MTK_ERR_INVALID_ARGUMENT, "%s(): argument 'dim' must be int, not %s", name,
                    mtk_value_type_name(dim));
    if (!read_one_dim(call, d, dim->as.i)) return false;
    d->keepdim = keepdim;
    d->nout = 2;
    d->out_dtype[1] = MTK_INT64;
    int32_t which;
    if (any_reduced_dim_empty(d, &which))
        refuse_on_cpu(d, MTK_ERR_INDEX, "%s(): Expected reduction dim %d to have non-zero size.", name, (int)which);
    if (mtk_dtype_is_float8(x->dtype) && x->ndim > 0)
        refuse_dtype_on_cpu(d, d->kind == MTK_RED_MAX ? "max_cpu" : "min_cpu", x->dtype);
    shape_outputs(call, d);
    return true;
}

/* argmax/argmin(input, dim=None, keepdim=False): None flattens. */
static bool describe_argmax(mtk_op_call *call, red_desc *d)
{
    const mtk_tensor *x = d->input;
    d->keepdim = arg_bool(call, 2);
    d->cast = x->dtype;
    d->out_dtype[0] = MTK_INT64;
    if (arg_is_none(call, 1)) reduce_all(d);
    else if (!read_one_dim(call, d, arg_int(call, 1))) return false;
    if (!empty_extreme_error(call, call->op->name, d, arg_is_none(call, 1))) return false;
    if (x->dtype == MTK_BOOL)
        refuse_on_cpu(d, MTK_ERR_DTYPE, "%s(): does not support bool input", call->op->name);
    if (mtk_dtype_is_float8(x->dtype))
        refuse_dtype_on_cpu(d, d->kind == MTK_RED_ARGMAX ? "argmax_cpu" : "argmin_cpu", x->dtype);
    shape_outputs(call, d);
    return true;
}

/* ------------------------------------------------------- var and std */

/* var/std/var_mean/std_mean, three overloads in one signature:
 *   (input, bool unbiased)
 *   (input, dim, bool unbiased, bool keepdim)
 *   (input, dim=None, *, correction=None, bool keepdim=False)  */
static bool describe_var(mtk_op_call *call, red_desc *d)
{
    const mtk_tensor *x = d->input;
    const char *name = call->op->name;
    const mtk_value *dim = &call->args[1];
    const mtk_value *unbiased = &call->args[2];
    const mtk_value *correction = &call->args[4];
    bool pair = d->kind == MTK_RED_VAR_MEAN || d->kind == MTK_RED_STD_MEAN;
    d->keepdim = arg_bool(call, 3);
    d->correction = 1.0;
    if (given(call, 2) && unbiased->kind == MTK_VALUE_NONE)
        return fail(call, MTK_ERR_INVALID_ARGUMENT, "%s(): argument 'unbiased' must be bool, not NoneType", name);
    if (given(call, 2) && !given(call, 1) && given(call, 3))
        return fail(call, MTK_ERR_INVALID_ARGUMENT,
                    "%s() received an invalid combination of arguments: (input, unbiased) takes no keepdim", name);
    if (dim->kind == MTK_VALUE_BOOL) {
        /* var(x, True): the unbiased overload takes nothing else */
        if (unbiased->kind != MTK_VALUE_NONE || correction->kind != MTK_VALUE_NONE || d->keepdim || given(call, 3))
            return fail(call, MTK_ERR_INVALID_ARGUMENT,
                        "%s() received an invalid combination of arguments: (input, unbiased) takes no "
                        "other argument",
                        name);
        d->correction = dim->as.b ? 1.0 : 0.0;
        reduce_all(d);
    } else {
        if (unbiased->kind != MTK_VALUE_NONE && correction->kind != MTK_VALUE_NONE)
            return fail(call, MTK_ERR_INVALID_ARGUMENT,
                        "%s() received an invalid combination of arguments: give unbiased or correction, "
                        "not both",
                        name);
        if (unbiased->kind == MTK_VALUE_BOOL) d->correction = unbiased->as.b ? 1.0 : 0.0;
        if (correction->kind != MTK_VALUE_NONE) d->correction = mtk_value_as_double(correction);
        if (dim->kind != MTK_VALUE_NONE && dim->kind != MTK_VALUE_INT && dim->kind != MTK_VALUE_LIST &&
            dim->kind != MTK_VALUE_TUPLE)
            return fail(call, MTK_ERR_INVALID_ARGUMENT, "%s(): argument 'dim' must be tuple of ints, not %s", name,
                        mtk_value_type_name(dim));
        int32_t ndims;
        if (!read_dims(call, d, dim, EMPTY_ALL, "dim", &ndims)) return false;
    }
    if (pair && !is_float(x->dtype))
        return fail(call, MTK_ERR_DTYPE, "%s only support floating point and complex dtypes", name);
    d->cast = x->dtype;
    d->out_dtype[0] = x->dtype;
    if (pair) {
        d->nout = 2;
        d->out_dtype[1] = x->dtype;
    }
    if (!is_float(x->dtype))
        refuse_on_cpu(d, MTK_ERR_DTYPE, "std and var only support floating point and complex dtypes");
    else if (mtk_dtype_is_float8(x->dtype))
        refuse_on_cpu(d, MTK_ERR_DTYPE, "std_var: Unsupported dtype %s", cpp(x->dtype));
    shape_outputs(call, d);
    return true;
}

/* ------------------------------------------------------------ logsumexp */

/* logsumexp(input, dim, keepdim=False): integral inputs give the default
 * float dtype.  torch's meta device reads dim=[] as every dim kept as 1
 * (its decomposition broadcasts the unsqueezed maximum back); its cpu
 * kernel refuses that call. */
static bool describe_logsumexp(mtk_op_call *call, red_desc *d)
{
    const mtk_tensor *x = d->input;
    int32_t ndims;
    d->keepdim = arg_bool(call, 2);
    d->out_dtype[0] = d->cast = is_integral(x->dtype) ? mtk_ctx_dtype(call->ctx) : x->dtype;
    if (!read_dims(call, d, &call->args[1], EMPTY_ALL, "dim", &ndims)) return false;
    if (ndims == 0 && x->ndim > 0 && !d->keepdim && mtk_tensor_numel(x) > 0) {
        char shape[128];
        int64_t ones[MTK_MAX_DIMS];
        for (int32_t i = 0; i < x->ndim; i++) ones[i] = 1;
        d->keepdim = true;
        refuse_on_cpu(d, MTK_ERR_SHAPE, "output with shape [] doesn't match the broadcast shape %s",
                      mtk_shape_list_str(ones, x->ndim, shape, sizeof shape));
    }
    if (mtk_dtype_is_float8(d->cast)) refuse_dtype_on_cpu(d, "max_values_cpu", d->cast);
    shape_outputs(call, d);
    return true;
}

/* ---------------------------------------------------------------- norms */

static void format_ord(double ord, char *buf, size_t cap)
{
    if (isinf(ord)) snprintf(buf, cap, "%sinf", ord < 0 ? "-" : "");
    else snprintf(buf, cap, "%.15g", ord);
}

/* The checks linalg.vector_norm and matrix_norm share on dtype=. */
static bool check_norm_dtype(mtk_op_call *call, const char *who, mtk_dtype input, mtk_dtype given)
{
    if (given == MTK_DTYPE_UNDEFINED) return true;
    if (!is_float(given))
        return fail(call, MTK_ERR_DTYPE, "%s: dtype should be floating point or complex, but got %s", who, cpp(given));
    if (mtk_promote_types(input, given) != given)
        return fail(call, MTK_ERR_DTYPE,
                    "%s: the dtype of the input (%s) should be convertible without narrowing to the specified "
                    "dtype (%s)",
                    who, cpp(input), cpp(given));
    return true;
}

/* torch's meta device takes a dim list of linalg.vector_norm that repeats
 * dims when every listed dim has size 1 (its cpu kernel refuses it): the
 * list without repeats goes to *unique, the refusal to d.  False (and no
 * error) for any other list. */
static bool repeats_only_size1_dims(mtk_op_call *call, red_desc *d, const mtk_value *dim, mtk_value *unique)
{
    if (dim->kind != MTK_VALUE_LIST && dim->kind != MTK_VALUE_TUPLE) return false;
    const mtk_tensor *x = d->input;
    int64_t dims[MTK_MAX_DIMS + 1], kept[MTK_MAX_DIMS + 1];
    int32_t n = dim->as.list.count, nkept = 0, repeated = -1;
    if (n > MTK_MAX_DIMS + 1 || x->ndim == 0) return false;
    bool seen[MTK_MAX_DIMS] = { false };
    for (int32_t k = 0; k < n; k++) {
        if (dim->as.list.items[k].kind != MTK_VALUE_INT) return false;
        dims[k] = dim->as.list.items[k].as.i;
        if (dims[k] < -x->ndim || dims[k] >= x->ndim) return false;
        int32_t w = (int32_t)(dims[k] < 0 ? dims[k] + x->ndim : dims[k]);
        if (x->shape[w] != 1) return false;
        if (seen[w]) {
            if (repeated < 0) repeated = w;
            continue;
        }
        seen[w] = true;
        kept[nkept++] = w;
    }
    if (repeated < 0) return false;
    *unique = mtk_value_int_list(call->ctx, kept, nkept);
    refuse_on_cpu(d, MTK_ERR_INVALID_ARGUMENT, "dim %d appears multiple times in the list of dims", (int)repeated);
    return unique->kind != MTK_VALUE_NONE;
}

/* linalg.vector_norm(input, ord, dim, keepdim, dtype) with the dim value
 * already chosen (torch.norm passes its own). */
static bool describe_vector_norm_of(mtk_op_call *call, red_desc *d, double ord, const mtk_value *dim, bool keepdim,
                                    mtk_dtype given)
{
    const mtk_tensor *x = d->input;
    const char *who = "linalg.vector_norm";
    int32_t ndims;
    d->kind = MTK_RED_VECTOR_NORM;
    d->ord = ord;
    d->keepdim = keepdim;
    if (!is_float(x->dtype))
        return fail(call, MTK_ERR_DTYPE, "%s: Expected a floating point or complex tensor as input. Got %s", who,
                    cpp(x->dtype));
    if (!check_norm_dtype(call, who, x->dtype, given)) return false;
    d->out_dtype[0] = d->cast = given != MTK_DTYPE_UNDEFINED ? given : x->dtype;
    mtk_value unique_dims;
    if (repeats_only_size1_dims(call, d, dim, &unique_dims)) dim = &unique_dims;
    if (!read_dims(call, d, dim, EMPTY_ALL, "dim", &ndims)) return false;
    if (mtk_tensor_numel(x) == 0 && (ord < 0 || isinf(ord))) {
        char o[32];
        format_ord(ord, o, sizeof o);
        if (ndims <= 0)
            return fail(call, MTK_ERR_INVALID_ARGUMENT,
                        "%s cannot compute the %s norm on an empty tensor because the operation does not have "
                        "an identity",
                        who, o);
        /* each reduced dim must be non-empty; torch's meta device also
         * refuses every negative dim here (its check misreads them) */
        int64_t dims[MTK_MAX_DIMS + 1];
        int32_t n = mtk_value_to_ints(call->ctx, dim, dims, MTK_MAX_DIMS + 1, call->op->name, "dim");
        for (int32_t k = 0; k < n; k++) {
            int64_t w = dims[k] < 0 ? dims[k] + x->ndim : dims[k];
            if (x->shape[w] == 0 || (dims[k] < 0 && call->device == MTK_DEVICE_META))
                return fail(call, MTK_ERR_INVALID_ARGUMENT,
                            "%s cannot compute the %s norm on the dimension %lld because this dimension is empty "
                            "and the operation does not have an identity",
                            who, o, (long long)dims[k]);
        }
    }
    if (mtk_dtype_is_float8(d->cast) && x->ndim > 0) refuse_dtype_on_cpu(d, "norm_cpu", d->cast);
    shape_outputs(call, d);
    return true;
}

static bool describe_vector_norm(mtk_op_call *call, red_desc *d)
{
    return describe_vector_norm_of(call, d, mtk_value_as_double(&call->args[1]), &call->args[2], arg_bool(call, 3),
                                   opt_dtype(call, 4));
}

/* linalg.matrix_norm(input, 'fro' | 'nuc', dim (2 dims), keepdim, dtype):
 * only reached by torch.norm with a string p. */
static bool describe_matrix_norm(mtk_op_call *call, red_desc *d, const char *ord, const mtk_value *dim,
                                 bool keepdim, mtk_dtype given)
{
    const mtk_tensor *x = d->input;
    const char *who = "linalg.matrix_norm";
    bool nuclear = strcmp(ord, "nuc") == 0;
    if (!nuclear && strcmp(ord, "fro") != 0)
        return fail(call, MTK_ERR_INVALID_ARGUMENT, "%s: Order %s not supported.", who, ord);
    if (x->ndim < 2)
        return fail(call, MTK_ERR_SHAPE, "%s: The input tensor A must have at least 2 dimensions.", who);
    if (!is_float(x->dtype))
        return fail(call, MTK_ERR_DTYPE, "%s: Expected a floating point or complex tensor as input. Got %s", who,
                    cpp(x->dtype));
    if (nuclear && (x->dtype == MTK_FLOAT16 || x->dtype == MTK_BFLOAT16))
        return fail(call, MTK_ERR_DTYPE, "%s: Low precision dtypes not supported. Got %s", who, cpp(x->dtype));
    int64_t dims[MTK_MAX_DIMS + 1];
    int32_t n;
    if (dim->kind == MTK_VALUE_NONE) {
        n = x->ndim < MTK_MAX_DIMS ? x->ndim : MTK_MAX_DIMS;
        for (int32_t i = 0; i < n; i++) dims[i] = i;
    } else {
        n = mtk_value_to_ints(call->ctx, dim, dims, MTK_MAX_DIMS + 1, call->op->name, "dim");
        if (n < 0) return false;
    }
    if (n != 2) {
        char list[160] = "";
        size_t len = 0;
        for (int32_t i = 0; i < n && len < sizeof list - 24; i++)
            len += (size_t)snprintf(list + len, sizeof list - len, "%s%lld", i ? " " : "", (long long)dims[i]);
        return fail(call, MTK_ERR_INVALID_ARGUMENT, "%s: dim must be a 2-tuple. Got %s", who, list);
    }
    int32_t d0 = 0, d1 = 0;
    if (!wrap_dim(call, dims[0], x->ndim, &d0) || !wrap_dim(call, dims[1], x->ndim, &d1)) return false;
    if (d0 == d1) return fail(call, MTK_ERR_INVALID_ARGUMENT, "%s: dims must be different. Got (%d, %d)", who, (int)d0, (int)d1);
    if (!check_norm_dtype(call, who, x->dtype, given)) return false;
    if (!nuclear) { /* never reached from torch.norm: 'fro' with 2 dims is a vector norm */
        mtk_value two = mtk_value_int_list(call->ctx, dims, 2);
        return describe_vector_norm_of(call, d, 2.0, &two, keepdim, given);
    }
    memset(d->reduce, 0, sizeof d->reduce);
    d->reduce[d0] = d->reduce[d1] = true;
    d->keepdim = keepdim;
    d->out_dtype[0] = d->cast = given != MTK_DTYPE_UNDEFINED ? given : x->dtype;
    shape_outputs(call, d);
    return true;
}

/* torch.norm(input, p='fro', dim=None, keepdim=False, out=None, dtype=None):
 * 'fro' over at most 2 dims and numbers are vector norms, other strings
 * matrix norms; p=None is 2. */
static bool describe_norm(mtk_op_call *call, red_desc *d)
{
    const mtk_value *p = &call->args[1];
    const mtk_value *dim = &call->args[2];
    bool keepdim = arg_bool(call, 3);
    mtk_dtype given = opt_dtype(call, 5);
    if (call->args[4].kind == MTK_VALUE_DTYPE && given == MTK_DTYPE_UNDEFINED && !(call->keyword_args & (1u << 4)))
        given = call->args[4].as.dtype; /* Tensor.norm(p, dim, keepdim, dtype): dtype in out's place */
    else if (!arg_is_none(call, 4))
        return fail(call, MTK_ERR_NOT_IMPLEMENTED, "out= is not supported; use the returned tensor");
    if (dim->kind != MTK_VALUE_NONE && dim->kind != MTK_VALUE_INT && dim->kind != MTK_VALUE_LIST &&
        dim->kind != MTK_VALUE_TUPLE)
        return fail(call, MTK_ERR_INVALID_ARGUMENT, "norm(): argument 'dim' must be tuple of ints, not %s",
                    mtk_value_type_name(dim));
    if (p->kind == MTK_VALUE_STRING) {
        int32_t ndims = dim->kind == MTK_VALUE_LIST || dim->kind == MTK_VALUE_TUPLE ? dim->as.list.count : 1;
        if (strcmp(p->as.s, "fro") == 0 && ndims <= 2)
            return describe_vector_norm_of(call, d, 2.0, dim, keepdim, given);
        return describe_matrix_norm(call, d, p->as.s, dim, keepdim, given);
    }
    if (p->kind == MTK_VALUE_NONE) return describe_vector_norm_of(call, d, 2.0, dim, keepdim, given);
    if (!mtk_value_is_number(p))
        return fail(call, MTK_ERR_INVALID_ARGUMENT, "linalg_vector_norm(): argument 'ord' must be Number, not %s",
                    mtk_value_type_name(p));
    return describe_vector_norm_of(call, d, mtk_value_as_double(p), dim, keepdim, given);
}

/* ----------------------------------------------------- logical and count */

/* all/any(input, dim=None, keepdim=False): bool results, uint8 stays
 * uint8; an empty dim list reduces nothing. */
static bool describe_all(mtk_op_call *call, red_desc *d)
{
    const mtk_tensor *x = d->input;
    int32_t ndims;
    d->keepdim = arg_bool(call, 2);
    d->cast = x->dtype;
    d->out_dtype[0] = x->dtype == MTK_UINT8 ? MTK_UINT8 : MTK_BOOL;
    if (!read_dims(call, d, &call->args[1], EMPTY_NONE, "dim", &ndims)) return false;
    if (ndims == 0) return shape_like_input(call, d, d->kind == MTK_RED_ALL ? LIKE_ELEMENTWISE : LIKE_EMPTY_LIKE);
    shape_outputs(call, d);
    return true;
}

/* count_nonzero(input, dim=None) -> int64 */
static bool describe_count_nonzero(mtk_op_call *call, red_desc *d)
{
    int32_t ndims;
    d->cast = d->input->dtype;
    d->out_dtype[0] = MTK_INT64;
    if (!read_dims(call, d, &call->args[1], EMPTY_ALL, "dim", &ndims)) return false;
    if (mtk_dtype_is_float8(d->cast)) refuse_dtype_on_cpu(d, "nonzero_count_cpu", d->cast);
    shape_outputs(call, d);
    return true;
}

/* ---------------------------------------------------------------- scans */

/* cumsum/cumprod(input, dim, *, dtype); cummax/cummin(input, dim). */
static bool describe_scan(mtk_op_call *call, red_desc *d)
{
    const mtk_tensor *x = d->input;
    const char *name = call->op->name;
    int64_t dim = arg_int(call, 1);
    bool extreme = d->kind == MTK_RED_CUMMAX || d->kind == MTK_RED_CUMMIN;
    if (extreme && mtk_tensor_numel(x) == 0) {
        d->dim = 0; /* torch checks no dim of an empty input */
    } else if (extreme && x->ndim == 0) {
        /* torch's meta device takes any dim of a 0-dim input */
        d->dim = 0;
        if (dim != 0 && dim != -1)
            refuse_on_cpu(d, MTK_ERR_INDEX, "%s(): Expected reduction dim -1 or 0 for scalar but got %lld", name,
                          (long long)dim);
    } else if (!wrap_dim(call, dim, x->ndim, &d->dim)) {
        return false;
    }
    d->has_dim = true;
    if (extreme) {
        d->cast = d->out_dtype[0] = x->dtype;
        d->nout = 2;
        d->out_dtype[1] = MTK_INT64;
        if (mtk_dtype_is_float8(x->dtype) && x->ndim > 0) /* a 0-dim input is copied */
            refuse_dtype_on_cpu(d, d->kind == MTK_RED_CUMMAX ? "cummax_cpu" : "cummin_cpu", x->dtype);
    } else {
        d->cast = d->out_dtype[0] = summing_dtype(x->dtype, opt_dtype(call, 2));
        if ((d->cast == MTK_BOOL || mtk_dtype_is_float8(d->cast)) && x->ndim > 0)
            refuse_dtype_on_cpu(d, d->kind == MTK_RED_CUMSUM ? "cumsum_out_cpu" : "cumprod_out_cpu", d->cast);
    }
    return shape_like_input(call, d, LIKE_CONTIGUOUS);
}

/* ---------------------------------------------------------- median/mode */

/* median/nanmedian(input) -> 0-dim; (input, dim, keepdim) and
 * mode(input, dim=-1, keepdim) -> (values, indices). */
static bool describe_median(mtk_op_call *call, red_desc *d)
{
    const mtk_tensor *x = d->input;
    const char *name = call->op->name;
    d->keepdim = arg_bool(call, 2);
    d->cast = d->out_dtype[0] = x->dtype;
    if (!explicit_none_dim(call, 1)) return false;
    if (d->kind != MTK_RED_MODE && !keepdim_without_dim(call, 1, 2)) return false;
    if (d->kind != MTK_RED_MODE && arg_is_none(call, 1)) {
        if (d->keepdim)
            return fail(call, MTK_ERR_INVALID_ARGUMENT, "%s(): keepdim needs a dim", name);
        reduce_all(d);
        if (x->dtype == MTK_BOOL || mtk_dtype_is_float8(x->dtype))
            refuse_on_cpu(d, MTK_ERR_DTYPE, "\"%s\" not implemented for '%s'",
                          d->kind == MTK_RED_MEDIAN ? "median_cpu" : "nanmedian_cpu", cpp(x->dtype));
        shape_outputs(call, d);
        return true;
    }
    if (!read_one_dim(call, d, arg_int(call, 1))) return false;
    d->nout = 2;
    d->out_dtype[1] = MTK_INT64;
    if (d->kind != MTK_RED_MODE && (x->dtype == MTK_BOOL || mtk_dtype_is_float8(x->dtype)))
        refuse_on_cpu(d, MTK_ERR_DTYPE, "\"%s\" not implemented for '%s'",
                      d->kind == MTK_RED_MEDIAN ? "median_out" : "nanmedian_out", cpp(x->dtype));
    if (d->kind == MTK_RED_MODE && mtk_dtype_is_float8(x->dtype)) refuse_dtype_on_cpu(d, "mode_cpu", x->dtype);
    int32_t which;
    if (any_reduced_dim_empty(d, &which))
        refuse_on_cpu(d, MTK_ERR_INDEX, "%s(): Expected reduction dim %d to have non-zero size.", name, (int)which);
    shape_outputs(call, d);
    return true;
}

/* ------------------------------------------------------------- dispatch */

bool red_describe(mtk_op_call *call, red_desc *d)
{
    const mtk_reduce_info *info = call->op->info;
    memset(d, 0, sizeof *d);
    d->kind = info->kind;
    d->input = arg_tensor(call, 0);
    d->nout = 1;
    d->out_dtype[1] = MTK_DTYPE_UNDEFINED;
    d->cast = d->input->dtype;
    switch (d->kind) {
    case MTK_RED_SUM:
    case MTK_RED_NANSUM:
    case MTK_RED_MEAN:
    case MTK_RED_NANMEAN: return describe_sum_like(call, d);
    case MTK_RED_PROD: return describe_prod(call, d);
    case MTK_RED_AMAX:
    case MTK_RED_AMIN: return describe_amax(call, d);
    case MTK_RED_MAX:
    case MTK_RED_MIN: return describe_max(call, d);
    case MTK_RED_ARGMAX:
    case MTK_RED_ARGMIN: return describe_argmax(call, d);
    case MTK_RED_VAR:
    case MTK_RED_STD:
    case MTK_RED_VAR_MEAN:
    case MTK_RED_STD_MEAN: return describe_var(call, d);
    case MTK_RED_LOGSUMEXP: return describe_logsumexp(call, d);
    case MTK_RED_NORM: return describe_norm(call, d);
    case MTK_RED_VECTOR_NORM: return describe_vector_norm(call, d);
    case MTK_RED_ALL:
    case MTK_RED_ANY: return describe_all(call, d);
    case MTK_RED_COUNT_NONZERO: return describe_count_nonzero(call, d);
    case MTK_RED_CUMSUM:
    case MTK_RED_CUMPROD:
    case MTK_RED_CUMMAX:
    case MTK_RED_CUMMIN: return describe_scan(call, d);
    case MTK_RED_MEDIAN:
    case MTK_RED_NANMEDIAN:
    case MTK_RED_MODE: return describe_median(call, d);
    }
    return fail(call, MTK_ERR_NOT_IMPLEMENTED, "unknown reduction kind");
}
