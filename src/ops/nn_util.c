/* Helpers shared by the nn family: threads, contiguous compute buffers,
 * the reduction argument and PyTorch's cpu rule for mixed parameter
 * dtypes.  See nn.h. */
#include "ops/nn.h"
#include "ops/op_util.h"
#include "ops/elementwise.h"
#include "mtk/ops/nn.h"
#include "core/scalar.h"
#include "core/parallel.h"

#include <stdatomic.h>
#include <string.h>

/* ----------------------------------------------------------------- threads */

int32_t nn_num_threads(void) { return mtk_parallel_threads(0); }

typedef struct nn_range {
    nn_task_fn fn;
    void *user;
} nn_range;

static void run_range(int64_t begin, int64_t end, int32_t part, void *user)
{
    (void)part;
    const nn_range *r = user;
    r->fn(begin, end, r->user);
}

void nn_parallel(int64_t n, int64_t min_per_thread, nn_task_fn fn, void *user)
{
    if (n <= 0) return;
    if (min_per_thread < 1) min_per_thread = 1;
    int64_t parts = nn_num_threads();
    if (parts > n / min_per_thread) parts = n / min_per_thread;
    nn_range r = { fn, user };
    mtk_parallel_range(n, (int32_t)(parts > 1 ? parts : 1), run_range, &r);
}

/* ------------------------------------------------------- compute buffers */

double *nn_alloc(mtk_ctx *ctx, int64_t n)
{
    double *p = mtk_ctx_malloc(ctx, (size_t)(n > 0 ? n : 1) * sizeof(double));
    if (!p) mtk_error(ctx, MTK_ERR_OUT_OF_MEMORY, "out of memory for a %lld-element buffer", (long long)n);
    return p;
}

double *nn_gather(mtk_ctx *ctx, const mtk_tensor *t)
{
    return t ? nn_gather_as(ctx, t, t->shape, t->ndim) : NULL;
}

double *nn_gather_as(mtk_ctx *ctx, const mtk_tensor *t, const int64_t *shape, int32_t ndim)
{
    if (!t) return NULL;
    int64_t n = mtk_shape_numel(shape, ndim);
    double *buf = nn_alloc(ctx, n);
    if (!buf) return NULL;
    mtk_tensor *dst = mtk_tensor_from_data(ctx, MTK_FLOAT64, shape, ndim, NULL, buf);
    if (!dst) {
        mtk_ctx_mfree(ctx, buf);
        return NULL;
    }
    if (n > 0) mtk_copy_strided(dst, t);
    return buf;
}

void nn_scatter(mtk_tensor *out, const double *values)
{
    if (mtk_tensor_numel(out) == 0) return;
    /* a borrowed, contiguous view of `values` */
    mtk_tensor *view = mtk_tensor_from_data(out->ctx, MTK_FLOAT64, out->shape, out->ndim, NULL, (void *)values);
    if (!view) return;
    mtk_copy_strided(out, view);
}

void nn_round(double *values, int64_t n, mtk_dtype dtype)
{
    if (dtype == MTK_FLOAT64) return;
    unsigned char element[8];
    for (int64_t i = 0; i < n; i++) {
        mtk_store_f64(dtype, element, values[i]);
        values[i] = mtk_load_f64(dtype, element);
    }
}

double nn_rounded(mtk_dtype dtype, double v)
{
    nn_round(&v, 1, dtype);
    return v;
}

/* ------------------------------------------------------------ arguments */

/* Python's truthiness of an argument value (None is handled by callers). */
static bool truthy(const mtk_value *v)
{
    switch (v->kind) {
    case MTK_VALUE_BOOL: return v->as.b;
    case MTK_VALUE_INT: return v->as.i != 0;
    case MTK_VALUE_FLOAT: return v->as.f != 0.0;
    case MTK_VALUE_STRING: return v->as.s[0] != '\0';
    case MTK_VALUE_LIST:
    case MTK_VALUE_TUPLE: return v->as.list.count > 0;
    default: return true;
    }
}

int nn_reduction_arg(mtk_op_call *call, int32_t reduction_arg, int32_t size_average_arg, int32_t reduce_arg)
{
    const int32_t legacy_args[2] = { size_average_arg, reduce_arg };
    for (int32_t i = 0; i < 2; i++) {
        const mtk_tensor *t = legacy_args[i] >= 0 ? arg_tensor(call, legacy_args[i]) : NULL;
        if (t && mtk_tensor_numel(t) != 1) {
            mtk_call_error(call, MTK_ERR_INVALID_ARGUMENT, "Boolean value of Tensor with more than one value is ambiguous");
            return -1;
        }
    }
    bool legacy = (size_average_arg >= 0 && !arg_is_none(call, size_average_arg)) ||
                  (reduce_arg >= 0 && !arg_is_none(call, reduce_arg));
    if (legacy) {
        /* torch.nn._reduction.legacy_get_string: None counts as True */
        bool size_average = size_average_arg < 0 || arg_is_none(call, size_average_arg) ||
                            truthy(&call->args[size_average_arg]);
        bool reduce = reduce_arg < 0 || arg_is_none(call, reduce_arg) || truthy(&call->args[reduce_arg]);
        return !reduce ? NN_REDUCE_NONE : size_average ? NN_REDUCE_MEAN : NN_REDUCE_SUM;
    }
    const char *s = call->args[reduction_arg].as.s;
    if (strcmp(s, "none") == 0) return NN_REDUCE_NONE;
    if (strcmp(s, "mean") == 0) return NN_REDUCE_MEAN;
    if (strcmp(s, "sum") == 0) return NN_REDUCE_SUM;
    mtk_call_error(call, MTK_ERR_INVALID_ARGUMENT, "%s is not a valid value for reduction", s);
    return -1;
}

bool nn_check_param_dtypes(mtk_op_call *call, const mtk_tensor *input, const mtk_tensor *const *params,
                           int32_t nparams)
{
    const mtk_tensor *first = NULL;
    for (int32_t i = 0; i < nparams && !first; i++) first = params[i];
    if (!first) return true;
    if (first->dtype != input->dtype) {
        for (int32_t i = 0; i < nparams; i++)
            if (params[i] && params[i]->dtype != MTK_FLOAT32)
                return mtk_call_error(call, MTK_ERR_DTYPE,
                                      "mixed dtype (CPU): expect parameter to have scalar type of Float");
        if (input->dtype != MTK_FLOAT16 && input->dtype != MTK_BFLOAT16)
            return mtk_call_error(call, MTK_ERR_DTYPE, "mixed dtype (CPU): all inputs must share same datatype.");
        return true;
    }
    for (int32_t i = 0; i < nparams; i++)
        if (params[i] && params[i]->dtype != input->dtype)
            return mtk_call_error(call, MTK_ERR_DTYPE, "expected scalar type %s but found %s",
                                  mtk_dtype_cpp_name(input->dtype), mtk_dtype_cpp_name(params[i]->dtype));
    return true;
}

bool nn_cpu_dtype_error(mtk_op_call *call, const char *kernel, mtk_dtype dtype)
{
    return mtk_call_error(call, MTK_ERR_DTYPE, "\"%s\" not implemented for '%s'", kernel, mtk_dtype_cpp_name(dtype));
}

mtk_tensor *nn_meta_standin(mtk_ctx *ctx, const mtk_tensor *t, mtk_dtype dtype)
{
    if (!t) return NULL;
    return mtk_tensor_new(ctx, dtype == MTK_DTYPE_UNDEFINED ? t->dtype : dtype, t->shape, t->ndim, t->stride,
                          MTK_DEVICE_META);
}

bool nn_set_output(mtk_op_call *call, mtk_dtype dtype, const int64_t *shape, int32_t ndim, const int64_t *stride)
{
    mtk_tensor *out = mtk_tensor_new(call->ctx, dtype, shape, ndim, stride, call->device);
    if (!out || !mtk_call_set_outputs(call, 1)) return false;
    mtk_call_output(call, 0, out, -1);
    return true;
}

int64_t nn_prod(const int64_t *shape, int32_t begin, int32_t end) { return ops_size_product(shape, begin, end); }
