/* Norms: torch.norm and torch.linalg.vector_norm described as torch
 * 2.13 validates them (torch.norm's p picks a vector norm or, for 'nuc',
 * a matrix norm), and the cpu kernel of the nuclear norm: the sum of the
 * singular values of every matrix that the two reduced dims form, from
 * LAPACK's dgesvd (OpenBLAS ships it) in double, then rounded to the
 * output dtype (torch computes in the input's dtype; double is at least
 * as accurate).  Vector norms run in the reduction engine. */
#include "ops/blas.h"
#include "ops/reduce_kernel.h"
#include "ops/elementwise.h"
#include "core/scalar.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static const char *cpp(mtk_dtype t) { return mtk_dtype_cpp_name(t); }
static bool is_float(mtk_dtype t) { return mtk_dtype_is_floating(t); }

/* --------------------------------------------------------- descriptions */

static void format_ord(double ord, char *buf, size_t cap)
{
    if (isinf(ord)) snprintf(buf, cap, "%sinf", ord < 0 ? "-" : "");
    else snprintf(buf, cap, "%.15g", ord);
}

/* The checks linalg.vector_norm and matrix_norm share on dtype=. */
static bool check_norm_dtype(mtk_op_call *call, const char *who, mtk_dtype input, mtk_dtype requested)
{
    if (requested == MTK_DTYPE_UNDEFINED) return true;
    if (!is_float(requested))
        return red_fail(call, MTK_ERR_DTYPE, "%s: dtype should be floating point or complex, but got %s", who,
                        cpp(requested));
    if (mtk_promote_types(input, requested) != requested)
        return red_fail(call, MTK_ERR_DTYPE,
                        "%s: the dtype of the input (%s) should be convertible without narrowing to the specified "
                        "dtype (%s)",
                        who, cpp(input), cpp(requested));
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
    red_refuse_on_cpu(d, MTK_ERR_INVALID_ARGUMENT, "dim %d appears multiple times in the list of dims", (int)repeated);
    return unique->kind != MTK_VALUE_NONE;
}

/* linalg.vector_norm(input, ord, dim, keepdim, dtype) with the dim value
 * already chosen (torch.norm passes its own). */
static bool describe_vector_norm_of(mtk_op_call *call, red_desc *d, double ord, const mtk_value *dim, bool keepdim,
                                    mtk_dtype requested)
{
    const mtk_tensor *x = d->input;
    const char *who = "linalg.vector_norm";
    int32_t ndims;
    d->kind = MTK_RED_VECTOR_NORM;
    d->ord = ord;
    d->keepdim = keepdim;
    if (!is_float(x->dtype))
        return red_fail(call, MTK_ERR_DTYPE, "%s: Expected a floating point or complex tensor as input. Got %s", who,
                        cpp(x->dtype));
    if (!check_norm_dtype(call, who, x->dtype, requested)) return false;
    d->out_dtype[0] = d->cast = requested != MTK_DTYPE_UNDEFINED ? requested : x->dtype;
    mtk_value unique_dims;
    const mtk_value *given = dim;
    bool repeated = repeats_only_size1_dims(call, d, dim, &unique_dims);
    /* torch's meta decomposition runs orders 0 and +-inf as sum/amax/amin
     * over the dims as given, which refuse a repeated one */
    if (repeated && (ord == 0.0 || isinf(ord)) && call->device == MTK_DEVICE_META)
        return red_fail(call, MTK_ERR_INVALID_ARGUMENT, "duplicate value in the list of dims");
    if (repeated) dim = &unique_dims;
    if (!red_read_dims(call, d, dim, RED_EMPTY_ALL, "dim", &ndims)) return false;
    if (mtk_tensor_numel(x) == 0 && (ord < 0 || isinf(ord))) {
        char o[32];
        format_ord(ord, o, sizeof o);
        if (ndims <= 0)
            return red_fail(call, MTK_ERR_INVALID_ARGUMENT,
                            "%s cannot compute the %s norm on an empty tensor because the operation does not have "
                            "an identity",
                            who, o);
        /* each reduced dim must be non-empty; torch's meta device also
         * refuses every negative dim here (its check misreads them) */
        int64_t dims[MTK_MAX_DIMS + 1];
        int32_t n = mtk_value_to_ints(call->ctx, given, dims, MTK_MAX_DIMS + 1, call->op->name, "dim");
        for (int32_t k = 0; k < n; k++) {
            int64_t w = dims[k] < 0 ? dims[k] + x->ndim : dims[k];
            if (x->shape[w] == 0 || (dims[k] < 0 && call->device == MTK_DEVICE_META))
                return red_fail(call, MTK_ERR_INVALID_ARGUMENT,
                                "%s cannot compute the %s norm on the dimension %lld because this dimension is empty "
                                "and the operation does not have an identity",
                                who, o, (long long)dims[k]);
        }
    }
    if (mtk_dtype_is_float8(d->cast) && x->ndim > 0) red_refuse_dtype_on_cpu(d, "norm_cpu", d->cast);
    red_shape_outputs(call, d);
    return true;
}

bool red_describe_vector_norm(mtk_op_call *call, red_desc *d)
{
    return describe_vector_norm_of(call, d, mtk_value_as_double(&call->args[1]), &call->args[2], arg_bool(call, 3),
                                   red_opt_dtype(call, 4));
}

/* linalg.matrix_norm(input, 'fro' | 'nuc', dim (2 dims), keepdim, dtype):
 * only reached by torch.norm with a string p. */
static bool describe_matrix_norm(mtk_op_call *call, red_desc *d, const char *ord, const mtk_value *dim,
                                 bool keepdim, mtk_dtype requested)
{
    const mtk_tensor *x = d->input;
    const char *who = "linalg.matrix_norm";
    bool nuclear = strcmp(ord, "nuc") == 0;
    if (!nuclear && strcmp(ord, "fro") != 0)
        return red_fail(call, MTK_ERR_INVALID_ARGUMENT, "%s: Order %s not supported.", who, ord);
    if (x->ndim < 2)
        return red_fail(call, MTK_ERR_SHAPE, "%s: The input tensor A must have at least 2 dimensions.", who);
    if (!is_float(x->dtype))
        return red_fail(call, MTK_ERR_DTYPE, "%s: Expected a floating point or complex tensor as input. Got %s", who,
                        cpp(x->dtype));
    if (nuclear && (x->dtype == MTK_FLOAT16 || x->dtype == MTK_BFLOAT16))
        return red_fail(call, MTK_ERR_DTYPE, "%s: Low precision dtypes not supported. Got %s", who, cpp(x->dtype));
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
        return red_fail(call, MTK_ERR_INVALID_ARGUMENT, "%s: dim must be a 2-tuple. Got %s", who, list);
    }
    int32_t d0 = 0, d1 = 0;
    if (!red_wrap_dim(call, dims[0], x->ndim, &d0) || !red_wrap_dim(call, dims[1], x->ndim, &d1)) return false;
    if (d0 == d1)
        return red_fail(call, MTK_ERR_INVALID_ARGUMENT, "%s: dims must be different. Got (%d, %d)", who, (int)d0,
                        (int)d1);
    if (!check_norm_dtype(call, who, x->dtype, requested)) return false;
    if (!nuclear) { /* never reached from torch.norm: 'fro' with 2 dims is a vector norm */
        mtk_value two = mtk_value_int_list(call->ctx, dims, 2);
        return describe_vector_norm_of(call, d, 2.0, &two, keepdim, requested);
    }
    memset(d->reduce, 0, sizeof d->reduce);
    d->reduce[d0] = d->reduce[d1] = true;
    d->keepdim = keepdim;
    d->out_dtype[0] = d->cast = requested != MTK_DTYPE_UNDEFINED ? requested : x->dtype;
    red_shape_outputs(call, d);
    return true;
}

/* torch.norm(input, p='fro', dim=None, keepdim=False, out=None, dtype=None):
 * 'fro' over at most 2 dims and numbers are vector norms, other strings
 * matrix norms; p=None is 2. */
bool red_describe_norm(mtk_op_call *call, red_desc *d)
{
    const mtk_value *p = &call->args[1];
    const mtk_value *dim = &call->args[2];
    bool keepdim = arg_bool(call, 3);
    mtk_dtype requested = red_opt_dtype(call, 5);
    if (call->args[4].kind == MTK_VALUE_DTYPE && requested == MTK_DTYPE_UNDEFINED && !(call->keyword_args & (1u << 4)))
        requested = call->args[4].as.dtype; /* Tensor.norm(p, dim, keepdim, dtype): dtype in out's place */
    else if (!arg_is_none(call, 4))
        return red_fail(call, MTK_ERR_NOT_IMPLEMENTED, "out= is not supported; use the returned tensor");
    if (dim->kind != MTK_VALUE_NONE && dim->kind != MTK_VALUE_INT && dim->kind != MTK_VALUE_LIST &&
        dim->kind != MTK_VALUE_TUPLE)
        return red_fail(call, MTK_ERR_INVALID_ARGUMENT, "norm(): argument 'dim' must be tuple of ints, not %s",
                        mtk_value_type_name(dim));
    if (p->kind == MTK_VALUE_STRING) {
        int32_t ndims = dim->kind == MTK_VALUE_LIST || dim->kind == MTK_VALUE_TUPLE ? dim->as.list.count : 1;
        if (strcmp(p->as.s, "fro") == 0 && ndims <= 2)
            return describe_vector_norm_of(call, d, 2.0, dim, keepdim, requested);
        return describe_matrix_norm(call, d, p->as.s, dim, keepdim, requested);
    }
    if (p->kind == MTK_VALUE_NONE) return describe_vector_norm_of(call, d, 2.0, dim, keepdim, requested);
    if (!mtk_value_is_number(p))
        return red_fail(call, MTK_ERR_INVALID_ARGUMENT, "linalg_vector_norm(): argument 'ord' must be Number, not %s",
                        mtk_value_type_name(p));
    return describe_vector_norm_of(call, d, mtk_value_as_double(p), dim, keepdim, requested);
}

/* ------------------------------------------------------ nuclear norm */

/* Sum of the singular values of the m x n column-major matrix a (which
 * dgesvd overwrites); NaN when LAPACK fails (NaN input). */
static double singular_value_sum(mtk_ctx *ctx, double *a, int m, int n, double *s, double **work, int *lwork)
{
    if (m == 0 || n == 0) return 0.0;
    int one = 1, info = 0, query = -1;
    double dummy = 0.0, size = 0.0;
    if (*lwork == 0) { /* workspace query, once */
        ops_dgesvd("N", "N", &m, &n, a, &m, s, &dummy, &one, &dummy, &one, &size, &query, &info);
        *lwork = size > 1.0 ? (int)size : 1;
        *work = mtk_ctx_malloc(ctx, (size_t)*lwork * sizeof **work);
        if (!*work) return NAN;
    }
    ops_dgesvd("N", "N", &m, &n, a, &m, s, &dummy, &one, &dummy, &one, *work, lwork, &info);
    if (info != 0) return NAN;
    double sum = 0.0;
    for (int k = 0; k < (m < n ? m : n); k++) sum += s[k];
    return sum;
}

bool red_nuclear_run(mtk_ctx *ctx, const red_desc *d, mtk_tensor *const *out)
{
    const mtk_tensor *x = d->input;
    int32_t rows = -1, cols = -1;
    for (int32_t i = 0; i < x->ndim; i++)
        if (d->reduce[i]) {
            if (rows < 0) rows = i;
            else cols = i;
        }
    if (rows < 0 || cols < 0) return mtk_error(ctx, MTK_ERR_SHAPE, "norm: the nuclear norm needs two dims");
    if (!ops_blas_ready(ctx)) return false;
    int64_t m = x->shape[rows], n = x->shape[cols];
    if (m > INT32_MAX / (n > 0 ? n : 1))
        return mtk_error(ctx, MTK_ERR_OVERFLOW, "norm: a %lldx%lld matrix is too large for LAPACK", (long long)m,
                         (long long)n);
    /* the batch: every kept dim, with its input and output strides */
    int64_t es = (int64_t)mtk_dtype_size(x->dtype), oes = (int64_t)mtk_dtype_size(out[0]->dtype);
    int64_t shape[MTK_MAX_DIMS], in_stride[MTK_MAX_DIMS], out_stride[MTK_MAX_DIMS], batch = 1;
    int32_t nb = 0, od = 0;
    for (int32_t i = 0; i < x->ndim; i++) {
        if (d->reduce[i]) {
            if (d->keepdim) od++;
            continue;
        }
        shape[nb] = x->shape[i], in_stride[nb] = x->stride[i] * es, out_stride[nb] = out[0]->stride[od] * oes;
        batch *= x->shape[i], nb++, od++;
    }
    double *a = mtk_ctx_malloc(ctx, (size_t)(m * n > 0 ? m * n : 1) * sizeof *a);
    double *s = mtk_ctx_malloc(ctx, (size_t)((m < n ? m : n) + 1) * sizeof *s);
    double *work = NULL;
    int lwork = 0;
    bool ok = a && s;
    const char *in = mtk_tensor_data(x);
    char *dst = mtk_tensor_data(out[0]);
    for (int64_t b = 0; ok && b < batch; b++) {
        int64_t rest = b, in_off = 0, out_off = 0;
        for (int32_t i = nb - 1; i >= 0; i--) {
            in_off += rest % shape[i] * in_stride[i];
            out_off += rest % shape[i] * out_stride[i];
            rest /= shape[i];
        }
        /* column-major copy: a[r + c*m] = x[.., r, .., c, ..] */
        for (int64_t c = 0; c < n; c++)
            red_load_f64(in + in_off + c * x->stride[cols] * es, x->stride[rows] * es, m, x->dtype, d->cast,
                         a + c * m);
        double r = singular_value_sum(ctx, a, (int)m, (int)n, s, &work, &lwork);
        if (lwork > 0 && !work) ok = false;
        mtk_store_f64(out[0]->dtype, dst + out_off, r);
    }
    mtk_ctx_mfree(ctx, work);
    mtk_ctx_mfree(ctx, s);
    mtk_ctx_mfree(ctx, a);
    return ok ? true : mtk_error(ctx, MTK_ERR_OUT_OF_MEMORY, "norm: out of memory for the nuclear norm");
}
