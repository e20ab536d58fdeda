/* Descriptions of reduce calls: argument overloads, dims, result dtypes
 * and shapes, validated as torch 2.13 does on the meta device, and the
 * calls torch's meta device accepts but its cpu kernels refuse (norms are
 * in reduce_norm.c).
 *
 * Output shapes: the input's shape with each reduced dim removed (or kept
 * as 1 with keepdim); outputs are contiguous whatever the input's strides,
 * as torch makes them, except where red_shape_outputs and
 * shape_like_input say otherwise. */
#include "ops/reduce_kernel.h"
#include "ops/elementwise.h"
#include "mtk/ops/elementwise.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* -------------------------------------------------------------- helpers */

bool red_fail(mtk_op_call *call, mtk_status status, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return mtk_call_error(call, status, "%s", msg);
}

void red_refuse_on_cpu(red_desc *d, mtk_status status, const char *fmt, ...)
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
void red_refuse_dtype_on_cpu(red_desc *d, const char *kernel, mtk_dtype dtype)
{
    if (mtk_tensor_numel(d->input) == 0) return;
    red_refuse_on_cpu(d, MTK_ERR_DTYPE, "\"%s\" not implemented for '%s'", kernel, mtk_dtype_cpp_name(dtype));
}

static const char *cpp(mtk_dtype t) { return mtk_dtype_cpp_name(t); }

static bool is_float(mtk_dtype t) { return mtk_dtype_is_floating(t); }
static bool is_integral(mtk_dtype t) { return mtk_dtype_is_integral(t, true); }

/* Wraps a dim of an ndim-D tensor, naming the op in the error. */
bool red_wrap_dim(mtk_op_call *call, int64_t dim, int32_t ndim, int32_t *out)
{
    int64_t n = ndim > 0 ? ndim : 1;
    if (dim < -n || dim >= n)
        return red_fail(call, MTK_ERR_INDEX,
                        "Dimension out of range (expected to be in range of [%lld, %lld], but got %lld)",
                        (long long)-n, (long long)(n - 1), (long long)dim);
    *out = (int32_t)(dim < 0 ? dim + n : dim);
    return true;
}

static void reduce_all(red_desc *d)
{
    for (int32_t i = 0; i < d->input->ndim; i++) d->reduce[i] = true;
}

/* (see reduce_kernel.h) */
bool red_read_dims(mtk_op_call *call, red_desc *d, const mtk_value *v, red_empty_dims empty, const char *arg,
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
        if (empty == RED_EMPTY_ALL || (empty == RED_EMPTY_NONE_ON_META && call->device != MTK_DEVICE_META))
            reduce_all(d);
        return true;
    }
    bool seen[MTK_MAX_DIMS + 1] = { false };
    for (int32_t k = 0; k < n; k++) {
        int32_t w = 0;
        if (!red_wrap_dim(call, dims[k], x->ndim, &w)) return false;
        if (seen[w])
            return red_fail(call, MTK_ERR_INVALID_ARGUMENT, "dim %d appears multiple times in the list of dims",
                            (int)w);
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
    if (!red_wrap_dim(call, dim, d->input->ndim, &w)) return false;
    memset(d->reduce, 0, sizeof d->reduce);
    if (d->input->ndim > 0) d->reduce[w] = true;
    d->dim = w;
    d->has_dim = true;
    return true;
}

/* The output shape from the reduce mask and keepdim, contiguous.  On the
 * meta device torch makes the keepdim results of sum, prod, amax, amin,
 * var, var_mean's var and the vector norms of order 0, 1 and +-inf by
 * unsqueezing the reduced result at each reduced dim (Tensor.unsqueeze:
 * the new dim's stride is the size times the stride of the dim after it,
 * 1 at the end), which differs from contiguous strides around size-0
 * dims; its cpu kernels make them contiguous. */
void red_shape_outputs(const mtk_op_call *call, red_desc *d)
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
        else d->out_stride[0][o] = k < n ? ops_wrap_mul(shape[k], stride[k]) : 1; /* unsqueeze, as torch */
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
static bool arg_given(const mtk_op_call *call, int i) { return (call->given_args >> i) & 1u; }

static bool keepdim_without_dim(mtk_op_call *call, int dim_arg, int keepdim_arg)
{
    if (!arg_given(call, keepdim_arg) || arg_given(call, dim_arg)) return true;
    return red_fail(call, MTK_ERR_INVALID_ARGUMENT,
                    "%s() received an invalid combination of arguments - got (Tensor, keepdim=bool): keepdim "
                    "needs a dim",
                    call->op->name);
}

static bool explicit_none_dim(mtk_op_call *call, int dim_arg)
{
    if (!arg_given(call, dim_arg) || !arg_is_none(call, dim_arg)) return true;
    return red_fail(call, MTK_ERR_INVALID_ARGUMENT, "%s(): argument 'dim' must be int, not NoneType", call->op->name);
}

/* An optional dtype argument: MTK_DTYPE_UNDEFINED when None. */
mtk_dtype red_opt_dtype(const mtk_op_call *call, int i)
{
    return call->args[i].kind == MTK_VALUE_DTYPE ? call->args[i].as.dtype : MTK_DTYPE_UNDEFINED;
}

/* sum/prod/cumsum: integral inputs (and bool) give int64 unless a dtype
 * is given; the input is converted to the result dtype first. */
static mtk_dtype summing_dtype(mtk_dtype input, mtk_dtype requested)
{
    if (requested != MTK_DTYPE_UNDEFINED) return requested;
    return is_integral(input) ? MTK_INT64 : input;
}

/* ------------------------------------------------------ sum-like ops */

/* sum, nansum, mean, nanmean: (input, dim, keepdim, *, dtype) */
static bool describe_sum_like(mtk_op_call *call, red_desc *d)
{
    const mtk_tensor *x = d->input;
    mtk_dtype requested = red_opt_dtype(call, 3);
    const char *name = call->op->name;
    int32_t ndims;
    bool nan_variant = d->kind == MTK_RED_NANSUM || d->kind == MTK_RED_NANMEAN;
    d->keepdim = arg_bool(call, 2);
    if (!nan_variant && !keepdim_without_dim(call, 1, 2)) return false;
    if (d->kind == MTK_RED_NANMEAN && !is_float(x->dtype))
        return red_fail(call, MTK_ERR_DTYPE,
                        "nanmean(): expected input to have floating point or complex dtype but got %s",
                        cpp(x->dtype));
    if (d->kind == MTK_RED_MEAN || d->kind == MTK_RED_NANMEAN) {
        if (requested != MTK_DTYPE_UNDEFINED && !is_float(requested))
            return red_fail(call, MTK_ERR_DTYPE,
                            "%s(): could not infer output dtype. Optional dtype must be either a floating point "
                            "or complex dtype. Got: %s",
                            name, cpp(requested));
        if (requested == MTK_DTYPE_UNDEFINED && !is_float(x->dtype))
            return red_fail(call, MTK_ERR_DTYPE,
                            "%s(): could not infer output dtype. Input dtype must be either a floating point "
                            "or complex dtype. Got: %s",
                            name, cpp(x->dtype));
        d->out_dtype[0] = requested != MTK_DTYPE_UNDEFINED ? requested : x->dtype;
    } else {
        d->out_dtype[0] = summing_dtype(x->dtype, requested);
    }
    d->cast = d->kind == MTK_RED_MEAN || d->kind == MTK_RED_NANMEAN ? d->out_dtype[0]
                                                                      : summing_dtype(x->dtype, requested);
    if (!red_read_dims(call, d, &call->args[1], nan_variant ? RED_EMPTY_NONE_ON_META : RED_EMPTY_ALL, "dim", &ndims))
        return false;
    if (mtk_dtype_is_float8(d->cast)) red_refuse_dtype_on_cpu(d, nan_variant ? "nansum_cpu" : "sum_cpu", d->cast);
    red_shape_outputs(call, d);
    return true;
}

/* prod(input, dim=None, keepdim=False, *, dtype) */
static bool describe_prod(mtk_op_call *call, red_desc *d)
{
    const mtk_tensor *x = d->input;
    d->keepdim = arg_bool(call, 2);
    d->out_dtype[0] = d->cast = summing_dtype(x->dtype, red_opt_dtype(call, 3));
    if (!explicit_none_dim(call, 1) || !keepdim_without_dim(call, 1, 2)) return false;
    if (arg_is_none(call, 1)) {
        if (d->keepdim)
            return red_fail(call, MTK_ERR_INVALID_ARGUMENT,
                            "keepdim=True needs a dim (prod reduces one dim or all of them)");
        reduce_all(d);
    } else if (!read_one_dim(call, d, arg_int(call, 1))) {
        return false;
    }
    if (mtk_dtype_is_float8(d->cast)) red_refuse_dtype_on_cpu(d, "prod_out_cpu", d->cast);
    red_shape_outputs(call, d);
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
        return red_fail(call, MTK_ERR_INVALID_ARGUMENT,
                        "%s(): Expected reduction dim to be specified for input.numel() == 0.%s", name,
                        arg ? "" : " Specify the reduction dim with the 'dim' argument.");
    }
    if (any_reduced_dim_empty(d, &which))
        return red_fail(call, MTK_ERR_INDEX, "%s(): Expected reduction dim %d to have non-zero size.", name,
                        (int)which);
    return true;
}

/* amax/amin(input, dim=[], keepdim=False): an empty list is every dim;
 * reducing an empty dim is an error on every device. */
static bool describe_amax(mtk_op_call *call, red_desc *d)
{
    int32_t ndims;
    d->keepdim = arg_bool(call, 2);
    d->out_dtype[0] = d->cast = d->input->dtype;
    if (!red_read_dims(call, d, &call->args[1], RED_EMPTY_ALL, "dim", &ndims)) return false;
    if (!empty_extreme_error(call, call->op->name, d, ndims <= 0)) return false;
    if (mtk_dtype_is_float8(d->cast))
        red_refuse_dtype_on_cpu(d, d->kind == MTK_RED_AMAX ? "max_values_cpu" : "min_values_cpu", d->cast);
    red_shape_outputs(call, d);
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
            arg_given(call, 2))
            return red_fail(call, MTK_ERR_INVALID_ARGUMENT,
                            "%s() received an invalid combination of arguments: (input, other) takes no dim or keepdim",
                            name);
        d->binary_other = other ? other : dim->as.tensor;
        return true;
    }
    d->out_dtype[0] = d->cast = x->dtype;
    if (dim->kind == MTK_VALUE_NONE) {
        if (keepdim)
            return red_fail(call, MTK_ERR_INVALID_ARGUMENT,
                            "%s() received an invalid combination of arguments - got (Tensor, keepdim=bool): "
                            "keepdim needs a dim",
                            name);
        /* max(x): the 0-dim maximum of every element */
        d->kind = d->kind == MTK_RED_MAX ? MTK_RED_AMAX : MTK_RED_AMIN;
        reduce_all(d);
        if (mtk_tensor_numel(x) == 0)
            red_refuse_on_cpu(d, MTK_ERR_INVALID_ARGUMENT,
                              "%s(): Expected reduction dim to be specified for input.numel() == 0. Specify the "
                              "reduction dim with the 'dim' argument.",
                              name);
        if (mtk_dtype_is_float8(x->dtype))
            red_refuse_dtype_on_cpu(d, d->kind == MTK_RED_AMAX ? "max_all" : "min_all", x->dtype);
        red_shape_outputs(call, d);
        return true;
    }
    if (dim->kind != MTK_VALUE_INT)
        return red_fail(call, MTK_ERR_INVALID_ARGUMENT, "%s(): argument 'dim' must be int, not %s", name,
                        mtk_value_type_name(dim));
    if (!read_one_dim(call, d, dim->as.i)) return false;
    d->keepdim = keepdim;
    d->nout = 2;
    d->out_dtype[1] = MTK_INT64;
    int32_t which;
    if (any_reduced_dim_empty(d, &which))
        red_refuse_on_cpu(d, MTK_ERR_INDEX, "%s(): Expected reduction dim %d to have non-zero size.", name, (int)which);
    if (mtk_dtype_is_float8(x->dtype) && x->ndim > 0)
        red_refuse_dtype_on_cpu(d, d->kind == MTK_RED_MAX ? "max_cpu" : "min_cpu", x->dtype);
    red_shape_outputs(call, d);
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
        red_refuse_on_cpu(d, MTK_ERR_DTYPE, "%s(): does not support bool input", call->op->name);
    if (mtk_dtype_is_float8(x->dtype))
        red_refuse_dtype_on_cpu(d, d->kind == MTK_RED_ARGMAX ? "argmax_cpu" : "argmin_cpu", x->dtype);
    red_shape_outputs(call, d);
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
    if (arg_given(call, 2) && unbiased->kind == MTK_VALUE_NONE)
        return red_fail(call, MTK_ERR_INVALID_ARGUMENT, "%s(): argument 'unbiased' must be bool, not NoneType", name);
    if (arg_given(call, 2) && !arg_given(call, 1) && arg_given(call, 3))
        return red_fail(call, MTK_ERR_INVALID_ARGUMENT,
                        "%s() received an invalid combination of arguments: (input, unbiased) takes no keepdim", name);
    if (dim->kind == MTK_VALUE_BOOL) {
        /* var(x, True): the unbiased overload takes nothing else */
        if (unbiased->kind != MTK_VALUE_NONE || correction->kind != MTK_VALUE_NONE || d->keepdim || arg_given(call, 3))
            return red_fail(call, MTK_ERR_INVALID_ARGUMENT,
                            "%s() received an invalid combination of arguments: (input, unbiased) takes no "
                            "other argument",
                            name);
        d->correction = dim->as.b ? 1.0 : 0.0;
        reduce_all(d);
    } else {
        if (unbiased->kind != MTK_VALUE_NONE && correction->kind != MTK_VALUE_NONE)
            return red_fail(call, MTK_ERR_INVALID_ARGUMENT,
                            "%s() received an invalid combination of arguments: give unbiased or correction, "
                            "not both",
                            name);
        if (unbiased->kind == MTK_VALUE_BOOL) d->correction = unbiased->as.b ? 1.0 : 0.0;
        if (correction->kind != MTK_VALUE_NONE) d->correction = mtk_value_as_double(correction);
        if (dim->kind != MTK_VALUE_NONE && dim->kind != MTK_VALUE_INT && dim->kind != MTK_VALUE_LIST &&
            dim->kind != MTK_VALUE_TUPLE)
            return red_fail(call, MTK_ERR_INVALID_ARGUMENT, "%s(): argument 'dim' must be tuple of ints, not %s", name,
                            mtk_value_type_name(dim));
        int32_t ndims;
        if (!red_read_dims(call, d, dim, RED_EMPTY_ALL, "dim", &ndims)) return false;
    }
    if (pair && !is_float(x->dtype))
        return red_fail(call, MTK_ERR_DTYPE, "%s only support floating point and complex dtypes", name);
    d->cast = x->dtype;
    d->out_dtype[0] = x->dtype;
    if (pair) {
        d->nout = 2;
        d->out_dtype[1] = x->dtype;
    }
    if (!is_float(x->dtype))
        red_refuse_on_cpu(d, MTK_ERR_DTYPE, "std and var only support floating point and complex dtypes");
    else if (mtk_dtype_is_float8(x->dtype))
        red_refuse_on_cpu(d, MTK_ERR_DTYPE, "std_var: Unsupported dtype %s", cpp(x->dtype));
    red_shape_outputs(call, d);
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
    if (!red_read_dims(call, d, &call->args[1], RED_EMPTY_ALL, "dim", &ndims)) return false;
    if (ndims == 0 && x->ndim > 0 && !d->keepdim && mtk_tensor_numel(x) > 0) {
        char shape[128];
        int64_t ones[MTK_MAX_DIMS];
        for (int32_t i = 0; i < x->ndim; i++) ones[i] = 1;
        d->keepdim = true;
        red_refuse_on_cpu(d, MTK_ERR_SHAPE, "output with shape [] doesn't match the broadcast shape %s",
                          mtk_shape_list_str(ones, x->ndim, shape, sizeof shape));
    }
    if (mtk_dtype_is_float8(d->cast)) red_refuse_dtype_on_cpu(d, "max_values_cpu", d->cast);
    red_shape_outputs(call, d);
    return true;
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
    if (!red_read_dims(call, d, &call->args[1], RED_EMPTY_NONE, "dim", &ndims)) return false;
    if (ndims == 0) return shape_like_input(call, d, d->kind == MTK_RED_ALL ? LIKE_ELEMENTWISE : LIKE_EMPTY_LIKE);
    red_shape_outputs(call, d);
    return true;
}

/* count_nonzero(input, dim=None) -> int64 */
static bool describe_count_nonzero(mtk_op_call *call, red_desc *d)
{
    int32_t ndims;
    d->cast = d->input->dtype;
    d->out_dtype[0] = MTK_INT64;
    if (!red_read_dims(call, d, &call->args[1], RED_EMPTY_ALL, "dim", &ndims)) return false;
    if (mtk_dtype_is_float8(d->cast)) red_refuse_dtype_on_cpu(d, "nonzero_count_cpu", d->cast);
    red_shape_outputs(call, d);
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
            red_refuse_on_cpu(d, MTK_ERR_INDEX, "%s(): Expected reduction dim -1 or 0 for scalar but got %lld", name,
                              (long long)dim);
    } else if (!red_wrap_dim(call, dim, x->ndim, &d->dim)) {
        return false;
    }
    d->has_dim = true;
    if (extreme) {
        d->cast = d->out_dtype[0] = x->dtype;
        d->nout = 2;
        d->out_dtype[1] = MTK_INT64;
        if (mtk_dtype_is_float8(x->dtype) && x->ndim > 0) /* a 0-dim input is copied */
            red_refuse_dtype_on_cpu(d, d->kind == MTK_RED_CUMMAX ? "cummax_cpu" : "cummin_cpu", x->dtype);
    } else {
        d->cast = d->out_dtype[0] = summing_dtype(x->dtype, red_opt_dtype(call, 2));
        if ((d->cast == MTK_BOOL || mtk_dtype_is_float8(d->cast)) && x->ndim > 0)
            red_refuse_dtype_on_cpu(d, d->kind == MTK_RED_CUMSUM ? "cumsum_out_cpu" : "cumprod_out_cpu", d->cast);
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
            return red_fail(call, MTK_ERR_INVALID_ARGUMENT, "%s(): keepdim needs a dim", name);
        reduce_all(d);
        /* torch's cpu fills the result of an empty input with NaN before
         * it dispatches on the dtype */
        if ((x->dtype == MTK_BOOL || mtk_dtype_is_float8(x->dtype)) && mtk_tensor_numel(x) > 0)
            red_refuse_on_cpu(d, MTK_ERR_DTYPE, "\"%s\" not implemented for '%s'",
                              d->kind == MTK_RED_MEDIAN ? "median_cpu" : "nanmedian_cpu", cpp(x->dtype));
        red_shape_outputs(call, d);
        return true;
    }
    if (!read_one_dim(call, d, arg_int(call, 1))) return false;
    d->nout = 2;
    d->out_dtype[1] = MTK_INT64;
    int32_t which; /* torch checks the reduced dim before the dtype */
    if (any_reduced_dim_empty(d, &which))
        red_refuse_on_cpu(d, MTK_ERR_INDEX, "%s(): Expected reduction dim %d to have non-zero size.", name, (int)which);
    if (d->kind != MTK_RED_MODE && (x->dtype == MTK_BOOL || mtk_dtype_is_float8(x->dtype)))
        red_refuse_on_cpu(d, MTK_ERR_DTYPE, "\"%s\" not implemented for '%s'",
                          d->kind == MTK_RED_MEDIAN ? "median_out" : "nanmedian_out", cpp(x->dtype));
    if (d->kind == MTK_RED_MODE && mtk_dtype_is_float8(x->dtype)) red_refuse_dtype_on_cpu(d, "mode_cpu", x->dtype);
    red_shape_outputs(call, d);
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
    case MTK_RED_NORM: return red_describe_norm(call, d);
    case MTK_RED_VECTOR_NORM: return red_describe_vector_norm(call, d);
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
    return red_fail(call, MTK_ERR_NOT_IMPLEMENTED, "unknown reduction kind");
}
