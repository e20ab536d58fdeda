/* softmax and log_softmax (torch.softmax / F.softmax and their log forms).
 *
 * dim=None picks F.softmax's legacy implicit dim (0 for 0-, 1- and 3-D
 * inputs, else 1; torch warns, mtk does not).  dtype casts the input first.
 * The output has dtype `dtype` or the input's; softmax's is contiguous,
 * log_softmax's on meta has its decomposition's strides (size-1 dims).  torch's meta
 * accepts any dtype while its cpu kernels take floating types only: mtk
 * does the same (the cpu refusal names torch's kernel). */
#include "ops/nn.h"
#include "ops/nn_fast.h"
#include "ops/op_util.h"
#include "ops/registry.h"
#include "mtk/ops/nn.h"
#include "mtk/ops/convert.h"
#include "mtk/ops/elementwise.h"
#include "mtk/ops/index.h"
#include "mtk/ops/reduce.h"
#include "mtk/ops/view.h"

#include <math.h>
#include <string.h>

const nn_softmax_info mtk_nn_softmax_info = { false };
const nn_softmax_info mtk_nn_log_softmax_info = { true };

/* The dim and result dtype of a call; false (error set) on a bad call. */
static bool softmax_args(mtk_op_call *call, int32_t *dim_out, mtk_dtype *dtype_out)
{
    const mtk_tensor *x = arg_tensor(call, 0);
    mtk_dtype dtype = x->dtype;
    /* torch.softmax(x, dim, dtype): the dtype may arrive third */
    const mtk_value *third = &call->args[2];
    if (third->kind == MTK_VALUE_DTYPE) {
        if (!arg_is_none(call, 3))
            return mtk_call_error(call, MTK_ERR_INVALID_ARGUMENT, "got multiple values for argument 'dtype'");
        dtype = third->as.dtype;
    } /* else F.softmax's _stacklevel: ignored, whatever it is */
    if (!arg_is_none(call, 3)) dtype = call->args[3].as.dtype;
    int64_t dim = 0;
    if (arg_is_none(call, 1)) {
        dim = (x->ndim == 0 || x->ndim == 1 || x->ndim == 3) ? 0 : 1; /* _get_softmax_dim */
    } else {
        dim = arg_int(call, 1);
    }
    /* torch's meta never checks softmax's dim (log_softmax's it does), its
     * cpu kernel always does: follow each device */
    int32_t n = x->ndim > 0 ? x->ndim : 1;
    int32_t d;
    if (dim >= -n && dim < n) d = (int32_t)(dim < 0 ? dim + n : dim);
    else if (!((const nn_softmax_info *)call->op->info)->log &&
             call->device == MTK_DEVICE_META) d = 0;
    else d = mtk_wrap_dim(call->ctx, dim, x->ndim);
    if (d < 0) return false;
    if (x->ndim == 0) d = 0;
    if (((const nn_softmax_info *)call->op->info)->log && dtype == MTK_BOOL)
        return mtk_call_error(call, MTK_ERR_DTYPE,
                              "Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or "
                              "`logical_xor()` operator instead.");
    *dim_out = d;
    *dtype_out = dtype;
    return true;
}

/* torch's meta log_softmax is its decomposition: xc = x.contiguous(), then
 * (xc - amax(xc, dim, keepdim)) - log(sum(exp(..), dim, keepdim)) (an
 * empty dim padded with one -inf first), so size-1 dims keep xc's odd
 * strides.  The strides of that chain, replayed on float32 meta stand-ins
 * (dtypes and casts do not change them). */
static bool log_softmax_strides(mtk_op_call *call, const mtk_tensor *x, int32_t dim, mtk_dtype dtype,
                               int64_t *stride)
{
    mtk_ctx *ctx = call->ctx;
    mtk_tensor *like = mtk_tensor_new(ctx, x->dtype, x->shape, x->ndim, x->stride, MTK_DEVICE_META);
    if (like && dtype != x->dtype) like = mtk_to_dtype(ctx, like, dtype); /* dtype=: cast first */
    if (like) like = mtk_tensor_new(ctx, MTK_FLOAT32, x->shape, x->ndim, like->stride, MTK_DEVICE_META);
    mtk_tensor *xc = like ? mtk_contiguous(ctx, like) : NULL;
    if (!xc) return false;
    const int64_t dims[1] = { dim };
    mtk_tensor *padded = xc;
    if (x->ndim > 0 && x->shape[dim] == 0) {
        int64_t pad_shape[MTK_MAX_DIMS];
        memcpy(pad_shape, x->shape, sizeof(int64_t) * (size_t)x->ndim);
        pad_shape[dim] = 1;
        mtk_tensor *parts[2] = { xc, mtk_tensor_new(ctx, MTK_FLOAT32, pad_shape, x->ndim, NULL, MTK_DEVICE_META) };
        padded = parts[1] ? mtk_cat(ctx, parts, 2, dim) : NULL;
        if (!padded) return false;
    }
    mtk_tensor *max = mtk_amax(ctx, padded, dims, 1, true);
    mtk_tensor *shifted = max ? mtk_sub(ctx, xc, max) : NULL;
    mtk_tensor *exps = shifted ? mtk_exp(ctx, shifted) : NULL;
    mtk_tensor *sums = exps ? mtk_sum(ctx, exps, dims, 1, true, MTK_DTYPE_UNDEFINED) : NULL;
    mtk_tensor *logs = sums ? mtk_log(ctx, sums) : NULL;
    mtk_tensor *result = logs ? mtk_sub(ctx, shifted, logs) : NULL;
    if (!result) return false;
    memcpy(stride, result->stride, sizeof(int64_t) * (size_t)x->ndim);
    return true;
}

bool mtk_nn_softmax_meta(mtk_op_call *call)
{
    const mtk_tensor *x = arg_tensor(call, 0);
    int32_t dim = 0;
    mtk_dtype dtype = MTK_DTYPE_UNDEFINED;
    if (!softmax_args(call, &dim, &dtype)) return false;
    if (!((const nn_softmax_info *)call->op->info)->log) return nn_set_output(call, dtype, x->shape, x->ndim, NULL);
    int64_t stride[MTK_MAX_DIMS];
    if (!log_softmax_strides(call, x, dim, dtype, stride)) return false;
    return nn_set_output(call, dtype, x->shape, x->ndim, stride);
}

typedef struct softmax_job {
    double *values;        /* (outer, size, inner), row-major */
    int64_t size, inner;
    bool log;
} softmax_job;

static void softmax_rows(int64_t begin, int64_t end, void *user)
{
    const softmax_job *job = user;
    for (int64_t row = begin; row < end; row++) {
        // the slice of one (outer, inner) index along dim: stride `inner`
        int64_t outer = row / job->inner, in = row % job->inner;
        double *v = job->values + outer * job->size * job->inner + in;
        double max = -INFINITY;
        for (int64_t i = 0; i < job->size; i++)
            if (v[i * job->inner] > max || isnan(v[i * job->inner])) max = v[i * job->inner];
        if (isinf(max) && max < 0) max = 0; /* all -inf: exp(-inf - 0) = 0 */
        double sum = 0;
        for (int64_t i = 0; i < job->size; i++) sum += exp(v[i * job->inner] - max);
        double log_sum = log(sum);
        for (int64_t i = 0; i < job->size; i++) {
            double shifted = v[i * job->inner] - max;
            v[i * job->inner] = job->log ? shifted - log_sum : exp(shifted) / sum;
        }
    }
}

bool mtk_nn_softmax_cpu(mtk_op_call *call)
{
    const nn_softmax_info *info = call->op->info;
    const mtk_tensor *x = arg_tensor(call, 0);
    mtk_tensor *out = call->out[0];
    int32_t dim = 0;
    mtk_dtype dtype = MTK_DTYPE_UNDEFINED;
    if (!softmax_args(call, &dim, &dtype)) return false;
    int64_t numel = mtk_tensor_numel(x);
    if (numel == 0) return true; /* torch returns before choosing a kernel */
    if (!mtk_dtype_is_floating(dtype) || mtk_dtype_is_float8(dtype))
        return nn_cpu_dtype_error(call, info->log ? "log_softmax_lastdim_kernel_impl" : "softmax_lastdim_kernel_impl",
                                  dtype);
    if (mtk_nn_fast_softmax(call->ctx, x, dim, info->log, out)) return true; /* contiguous last dim */
    double *values = nn_gather(call->ctx, x);
    if (!values) return false;
    if (dtype != x->dtype) {
        /* torch casts the input to dtype first: round once through it */
        mtk_tensor *tmp = mtk_tensor_from_data(call->ctx, MTK_FLOAT64, x->shape, x->ndim, NULL, values);
        mtk_tensor *cast = mtk_tensor_new(call->ctx, dtype, x->shape, x->ndim, NULL, MTK_DEVICE_CPU);
        if (!tmp || !cast || !mtk_tensor_alloc_storage(cast)) {
            mtk_ctx_mfree(call->ctx, values);
            return false;
        }
        mtk_copy_strided(cast, tmp);
        mtk_copy_strided(tmp, cast);
    }
    softmax_job job = { values, x->ndim ? x->shape[dim] : 1, nn_prod(x->shape, dim + 1, x->ndim), info->log };
    int64_t rows = numel / (job.size ? job.size : 1);
    nn_parallel(rows, 4096 / (job.size + 1) + 1, softmax_rows, &job);
    nn_scatter(out, values);
    mtk_ctx_mfree(call->ctx, values);
    return true;
}

/* ------------------------------------------------------------- typed API */

static mtk_tensor *run_softmax(mtk_ctx *ctx, mtk_op_id id, mtk_tensor *input, int64_t dim, mtk_dtype dtype)
{
    mtk_op_call call;
    mtk_op_call_init(&call, ctx, mtk_op_by_id(id));
    call.args[0] = mtk_value_tensor(input);
    call.args[1] = mtk_value_int(dim);
    call.args[3] = dtype == MTK_DTYPE_UNDEFINED ? mtk_value_none() : mtk_value_dtype(dtype);
    return mtk_op_run_tensor(&call);
}

mtk_tensor *mtk_softmax(mtk_ctx *ctx, mtk_tensor *input, int64_t dim, mtk_dtype dtype)
{
    return run_softmax(ctx, OPID_SOFTMAX, input, dim, dtype);
}

mtk_tensor *mtk_log_softmax(mtk_ctx *ctx, mtk_tensor *input, int64_t dim, mtk_dtype dtype)
{
    return run_softmax(ctx, OPID_LOG_SOFTMAX, input, dim, dtype);
}
