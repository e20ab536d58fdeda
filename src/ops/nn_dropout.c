/* F.dropout, dropout1d/2d/3d, alpha_dropout and feature_alpha_dropout.
 *
 * As torch: with training false, p == 0 or an empty input the result is
 * the input itself (dropout1d of a 2-D and dropout3d of a non-5-D input
 * are computed on x.unsqueeze(0), so they give a view of it); inplace
 * returns the input after masking it.  Otherwise the result is
 * input * noise, laid out as TensorIterator lays out that product (noise:
 * empty_like(input), or (N, C, 1, ...) for the feature variants).
 *
 * The cpu mask is mtk's own, not torch's random stream: each element (or
 * feature) keeps with probability 1 - p by a counter-based hash of a seed
 * drawn from the context's generator (mtk_ctx_manual_seed), so a seed
 * gives the same mask on any number of threads. */
#include "ops/nn.h"
#include "ops/op_util.h"
#include "ops/registry.h"
#include "mtk/ops/nn.h"
#include "mtk/ops/elementwise.h"
#include "core/scalar.h"

#include <math.h>
#include <string.h>

const nn_dropout_info mtk_nn_dropout_info = { NN_DROPOUT };
const nn_dropout_info mtk_nn_dropout1d_info = { NN_DROPOUT_1D };
const nn_dropout_info mtk_nn_dropout2d_info = { NN_DROPOUT_2D };
const nn_dropout_info mtk_nn_dropout3d_info = { NN_DROPOUT_3D };
const nn_dropout_info mtk_nn_alpha_dropout_info = { NN_ALPHA_DROPOUT };
const nn_dropout_info mtk_nn_feature_alpha_dropout_info = { NN_FEATURE_ALPHA_DROPOUT };

static const double SELU_ALPHA = 1.7580993408473766; /* -scale * alpha of SELU */

static bool is_feature(nn_dropout_kind kind) { return kind != NN_DROPOUT && kind != NN_ALPHA_DROPOUT; }
static bool is_alpha(nn_dropout_kind kind) { return kind == NN_ALPHA_DROPOUT || kind == NN_FEATURE_ALPHA_DROPOUT; }

/* What a call does, decided once for meta and cpu. */
typedef struct dropout_plan {
    double p;
    bool returns_input; /* no masking: the input (or a view of it)    */
    bool unbatched;     /* computed on x.unsqueeze(0)                   */
    mtk_tensor x;       /* the input as the kernel sees it (maybe unsqueezed) */
} dropout_plan;

static bool plan_dropout(mtk_op_call *call, dropout_plan *plan)
{
    const nn_dropout_info *info = call->op->info;
    const mtk_tensor *input = arg_tensor(call, 0);
    double p = call->args[1].as.f;
    bool training = arg_bool(call, 2);
    if (!(p >= 0.0 && p <= 1.0))
        return mtk_call_error(call, MTK_ERR_INVALID_ARGUMENT,
                              "dropout probability has to be between 0 and 1, but got %g", p);
    if (info->kind == NN_DROPOUT_1D && input->ndim != 2 && input->ndim != 3)
        return mtk_call_error(call, MTK_ERR_SHAPE,
                              "dropout1d: Expected 2D or 3D input, but received a %dD input. Note that dropout1d "
                              "exists to provide channel-wise dropout on inputs with 1 spatial dimension, a channel "
                              "dimension, and an optional batch dimension (i.e. 2D or 3D inputs).",
                              (int)input->ndim);
    plan->p = p;
    plan->unbatched = (info->kind == NN_DROPOUT_1D && input->ndim == 2) ||
                      (info->kind == NN_DROPOUT_3D && input->ndim != 5);
    plan->x = *input;
    if (plan->unbatched) {
        if (input->ndim + 1 > MTK_MAX_DIMS)
            return mtk_call_error(call, MTK_ERR_SHAPE, "too many dimensions");
        mtk_tensor *x = &plan->x;
        memmove(x->shape + 1, input->shape, (size_t)input->ndim * sizeof *x->shape);
        memmove(x->stride + 1, input->stride, (size_t)input->ndim * sizeof *x->stride);
        x->shape[0] = 1;
        x->stride[0] = input->ndim ? ops_sat_mul(input->shape[0], input->stride[0]) : 1;
        x->ndim = input->ndim + 1;
    }
    plan->returns_input = p == 0.0 || !training || mtk_tensor_numel(input) == 0;
    if (plan->returns_input) return true;
    if (p == 1.0) return true; /* input * zeros({}): any dtype, any ndim */
    if (is_feature(info->kind) && plan->x.ndim < 2)
        return mtk_call_error(call, MTK_ERR_SHAPE, "Feature dropout requires at least 2 dimensions in the input");
    if (p < 1.0 && !mtk_dtype_is_floating(input->dtype))
        return mtk_call_error(call, MTK_ERR_DTYPE, "result type Float can't be cast to the desired output type %s",
                              mtk_dtype_cpp_name(input->dtype));
    return true;
}

bool mtk_nn_dropout_meta(mtk_op_call *call)
{
    const nn_dropout_info *info = call->op->info;
    mtk_tensor *input = arg_tensor(call, 0);
    dropout_plan plan;
    if (!plan_dropout(call, &plan)) return false;
    bool inplace = arg_bool(call, 3);
    if (inplace || (plan.returns_input && !plan.unbatched)) {
        call->result = mtk_value_tensor(input); /* the input itself */
        return mtk_call_set_outputs(call, 0);
    }
    if (plan.returns_input) {
        /* unsqueeze(0) then squeeze(0): a view with the input's layout */
        mtk_tensor *view = mtk_tensor_alias(input);
        if (!view || !mtk_call_set_outputs(call, 1)) return false;
        view->device = call->device;
        mtk_call_output(call, 0, view, 0);
        return true;
    }
    // out = x * noise; noise is empty_like(x) or (N, C, 1, ...) contiguous
    // (a 0-dim zeros for p == 1): mtk's mul lays the product out as
    // torch's meta does, float16/bfloat16 rules included
    mtk_ctx *ctx = call->ctx;
    mtk_tensor *x = mtk_tensor_new(ctx, input->dtype, plan.x.shape, plan.x.ndim, plan.x.stride, MTK_DEVICE_META);
    int64_t noise_shape[MTK_MAX_DIMS], noise_stride[MTK_MAX_DIMS];
    int32_t noise_ndim = plan.x.ndim;
    memcpy(noise_shape, plan.x.shape, sizeof(int64_t) * (size_t)plan.x.ndim);
    if (plan.p == 1.0) {
        noise_ndim = 0;
        mtk_contiguous_strides(noise_shape, 0, noise_stride);
    } else if (is_feature(info->kind)) {
        for (int32_t i = 2; i < noise_ndim; i++) noise_shape[i] = 1;
        mtk_contiguous_strides(noise_shape, noise_ndim, noise_stride);
    } else {
        mtk_dense_strides_like(&plan.x, noise_stride);
    }
    mtk_tensor *noise = mtk_tensor_new(ctx, input->dtype, noise_shape, noise_ndim, noise_stride, MTK_DEVICE_META);
    mtk_tensor *product = x && noise ? mtk_mul(ctx, x, noise) : NULL;
    if (!product) return false;
    int32_t skip = plan.unbatched ? 1 : 0;
    return nn_set_output(call, input->dtype, plan.x.shape + skip, plan.x.ndim - skip, product->stride + skip);
}

/* A uniform double in [0, 1) for (seed, index): splitmix64's mixer. */
static double uniform(uint64_t seed, uint64_t index)
{
    uint64_t z = seed + (index + 1) * UINT64_C(0x9E3779B97F4A7C15);
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    z ^= z >> 31;
    return (double)(z >> 11) * 0x1.0p-53;
}

typedef struct dropout_job {
    double *values;     /* x, row-major over the (maybe unsqueezed) shape */
    int64_t per_feature;/* elements sharing one draw (1: none share)     */
    uint64_t seed;
    double p, keep_scale, keep_shift, drop_shift;
    bool all_dropped;
} dropout_job;

static void dropout_range(int64_t begin, int64_t end, void *user)
{
    const dropout_job *job = user;
    for (int64_t i = begin; i < end; i++) {
        double x = job->values[i];
        if (job->all_dropped) {
            job->values[i] = x * 0.0; /* torch multiplies by zero: NaN stays NaN */
            continue;
        }
        bool keep = uniform(job->seed, (uint64_t)(i / job->per_feature)) < 1.0 - job->p;
        job->values[i] = keep ? x * job->keep_scale + job->keep_shift : x * 0.0 + job->drop_shift;
    }
}

bool mtk_nn_dropout_cpu(mtk_op_call *call)
{
    const nn_dropout_info *info = call->op->info;
    mtk_tensor *input = arg_tensor(call, 0);
    dropout_plan plan;
    if (!plan_dropout(call, &plan)) return false;
    if (plan.returns_input) return true;
    if (mtk_dtype_is_float8(input->dtype)) return nn_cpu_dtype_error(call, "bernoulli_scalar_cpu_", input->dtype);
    mtk_tensor *target = arg_bool(call, 3) ? input : call->out[0];
    dropout_job job = { 0 };
    job.values = nn_gather(call->ctx, input);
    if (!job.values) return false;
    job.per_feature = is_feature(info->kind) ? nn_prod(plan.x.shape, 2, plan.x.ndim) : 1;
    if (job.per_feature < 1) job.per_feature = 1;
    job.seed = mtk_ctx_next_seed(call->ctx);
    job.p = plan.p;
    job.all_dropped = plan.p == 1.0;
    if (is_alpha(info->kind)) {
        double a = 1.0 / sqrt((SELU_ALPHA * SELU_ALPHA * plan.p + 1.0) * (1.0 - plan.p));
        job.keep_scale = a;
        job.keep_shift = SELU_ALPHA * a * plan.p;
        job.drop_shift = -SELU_ALPHA * a + SELU_ALPHA * a * plan.p;
    } else if (!job.all_dropped) {
        /* noise.div_(1 - p) happens in the input's dtype */
        double scale = 1.0 / (1.0 - plan.p);
        unsigned char rounded[8];
        mtk_store_f64(input->dtype, rounded, scale);
        scale = mtk_load_f64(input->dtype, rounded);
        job.keep_scale = scale;
    }
    nn_parallel(mtk_tensor_numel(input), 1 << 14, dropout_range, &job);
    nn_scatter(target, job.values);
    mtk_ctx_mfree(call->ctx, job.values);
    return true;
}

/* ------------------------------------------------------------- typed API */

static mtk_tensor *run_dropout(mtk_ctx *ctx, mtk_op_id id, mtk_tensor *input, double p, bool training, bool inplace)
{
    mtk_op_call call;
    mtk_op_call_init(&call, ctx, mtk_op_by_id(id));
    call.args[0] = mtk_value_tensor(input);
    call.args[1] = mtk_value_float(p);
    call.args[2] = mtk_value_bool(training);
    call.args[3] = mtk_value_bool(inplace);
    return mtk_op_run_tensor(&call);
}

mtk_tensor *mtk_dropout(mtk_ctx *ctx, mtk_tensor *input, double p, bool training, bool inplace)
{
    return run_dropout(ctx, OPID_DROPOUT, input, p, training, inplace);
}
mtk_tensor *mtk_dropout1d(mtk_ctx *ctx, mtk_tensor *input, double p, bool training, bool inplace)
{
    return run_dropout(ctx, OPID_DROPOUT1D, input, p, training, inplace);
}
mtk_tensor *mtk_dropout2d(mtk_ctx *ctx, mtk_tensor *input, double p, bool training, bool inplace)
{
    return run_dropout(ctx, OPID_DROPOUT2D, input, p, training, inplace);
}
mtk_tensor *mtk_dropout3d(mtk_ctx *ctx, mtk_tensor *input, double p, bool training, bool inplace)
{
    return run_dropout(ctx, OPID_DROPOUT3D, input, p, training, inplace);
}
mtk_tensor *mtk_alpha_dropout(mtk_ctx *ctx, mtk_tensor *input, double p, bool training, bool inplace)
{
    return run_dropout(ctx, OPID_ALPHA_DROPOUT, input, p, training, inplace);
}
mtk_tensor *mtk_feature_alpha_dropout(mtk_ctx *ctx, mtk_tensor *input, double p, bool training, bool inplace)
{
    return run_dropout(ctx, OPID_FEATURE_ALPHA_DROPOUT, input, p, training, inplace);
}
