/* F.batch_norm and F.instance_norm.
 *
 * batch_norm normalizes each channel (dim 1) over the batch and spatial
 * dims: with training, by the batch's statistics, updating running_mean
 * and running_var in place (momentum, unbiased variance) as torch does on
 * cpu; else by the running statistics.  instance_norm normalizes each
 * (sample, channel); as torch, its running statistics take the mean over
 * the batch of the per-sample updates.  Output strides are those of
 * torch's meta decomposition (batch_norm_replay). */
#include "ops/nn.h"
#include "ops/nn_batchnorm_half.h"
#include "ops/op_util.h"
#include "ops/registry.h"
#include "mtk/ops/nn.h"
#include "mtk/ops/convert.h"
#include "mtk/ops/elementwise.h"
#include "mtk/ops/reduce.h"
#include "mtk/ops/view.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

enum { ARG_INPUT, ARG_RUNNING_MEAN, ARG_RUNNING_VAR, ARG_WEIGHT, ARG_BIAS, ARG_TRAINING, ARG_MOMENTUM, ARG_EPS };

/* torch.Size([1, 3]) */
static const char *torch_size(const int64_t *shape, int32_t n, char *buf, size_t cap)
{
    char list[200];
    snprintf(buf, cap, "torch.Size(%s)", mtk_shape_list_str(shape, n, list, sizeof list));
    return buf;
}

/* _batch_norm_impl_index's checks, for `features` channels; the
 * parameters are already repeated (instance_norm) when `repeat` > 1. */
static bool check_batch_norm_params(mtk_op_call *call, int64_t features, int64_t repeat, bool training)
{
    const mtk_tensor *rm = arg_tensor(call, ARG_RUNNING_MEAN), *rv = arg_tensor(call, ARG_RUNNING_VAR);
    int64_t n = features;
    if (rm) {
        if (mtk_tensor_numel(rm) * repeat != n)
            return mtk_call_error(call, MTK_ERR_SHAPE, "running_mean should contain %lld elements not %lld",
                                  (long long)n, (long long)(mtk_tensor_numel(rm) * repeat));
    } else if (!training) {
        return mtk_call_error(call, MTK_ERR_INVALID_ARGUMENT, "running_mean must be defined in evaluation mode");
    }
    if (rv) {
        if (mtk_tensor_numel(rv) * repeat != n)
            return mtk_call_error(call, MTK_ERR_SHAPE, "running_var should contain %lld elements not %lld",
                                  (long long)n, (long long)(mtk_tensor_numel(rv) * repeat));
    } else if (!training) {
        return mtk_call_error(call, MTK_ERR_INVALID_ARGUMENT, "running_var must be defined in evaluation mode");
    }
    const mtk_tensor *w = arg_tensor(call, ARG_WEIGHT), *b = arg_tensor(call, ARG_BIAS);
    if (w && mtk_tensor_numel(w) * repeat != n)
        return mtk_call_error(call, MTK_ERR_SHAPE, "weight should contain %lld elements not %lld", (long long)n,
                              (long long)(mtk_tensor_numel(w) * repeat));
    if (b && mtk_tensor_numel(b) * repeat != n)
        return mtk_call_error(call, MTK_ERR_SHAPE, "bias should contain %lld elements not %lld", (long long)n,
                              (long long)(mtk_tensor_numel(b) * repeat));
    return true;
}

/* The cpu-only checks torch makes of the running statistics and dtypes,
 * shared by batch_norm and instance_norm; `params` (4,
 * NULL for the default) the parameters whose dtypes are checked, in the
 * order torch checks them. */
static bool check_cpu_stats_of(mtk_op_call *call, bool training, const mtk_tensor *const *params)
{
    const mtk_tensor *x = arg_tensor(call, ARG_INPUT);
    const mtk_tensor *rm = arg_tensor(call, ARG_RUNNING_MEAN), *rv = arg_tensor(call, ARG_RUNNING_VAR);
    const mtk_tensor *w = arg_tensor(call, ARG_WEIGHT), *b = arg_tensor(call, ARG_BIAS);
    if (!mtk_dtype_is_floating(x->dtype) || mtk_dtype_is_float8(x->dtype))
        return nn_cpu_dtype_error(call, "batch_norm", x->dtype);
    if ((rm == NULL) != (rv == NULL))
        return mtk_call_error(call, MTK_ERR_INVALID_ARGUMENT,
                              "running_mean and running_var must either both be None or neither be None");
    const mtk_tensor *stats[] = { rm, rv };
    for (int32_t i = 0; i < 2; i++)
        if (stats[i] && stats[i]->ndim != 1)
            return mtk_call_error(call, MTK_ERR_SHAPE, "TensorAccessor expected 1 dims but tensor has %d",
                                  (int)stats[i]->ndim);
    if (params) return nn_check_param_dtypes(call, x, params, 4);
    /* torch checks the running statistics first when training */
    const mtk_tensor *train_order[4] = { rm, rv, w, b }, *eval_order[4] = { w, b, rm, rv };
    return nn_check_param_dtypes(call, x, training ? train_order : eval_order, 4);
}

static bool check_cpu_stats(mtk_op_call *call, bool training) { return check_cpu_stats_of(call, training, NULL); }

/* instance_norm's dtype rules on cpu (torch 2.13): the mixed-dtype check
 * looks at the weight and bias only; without them the running
 * statistics are cast to x's dtype; with them (of x's dtype) any running
 * mean goes, and the running variance must have x's or the running
 * mean's dtype. */
static bool check_instance_stats(mtk_op_call *call, bool use_input_stats)
{
    const mtk_tensor *x = arg_tensor(call, ARG_INPUT);
    const mtk_tensor *rm = arg_tensor(call, ARG_RUNNING_MEAN), *rv = arg_tensor(call, ARG_RUNNING_VAR);
    const mtk_tensor *w = arg_tensor(call, ARG_WEIGHT), *b = arg_tensor(call, ARG_BIAS);
    const mtk_tensor *affine = w ? w : b;
    bool mixed = affine && affine->dtype != x->dtype;
    const mtk_tensor *checked[4] = { w, b, mixed ? rm : NULL, mixed ? rv : NULL };
    if (!check_cpu_stats_of(call, use_input_stats, checked)) return false;
    if (affine && !mixed && rv && rv->dtype != x->dtype && rv->dtype != rm->dtype)
        return mtk_call_error(call, MTK_ERR_DTYPE, "expected scalar type %s but found %s", mtk_dtype_cpp_name(x->dtype),
                              mtk_dtype_cpp_name(rv->dtype));
    return true;
}

/* ------------------------------------------------------------ the kernel */

/* Statistics of `groups` groups of `count` elements each: group g takes
 * elements at values[(o * groups + g) * inner + i] for o < outer, i <
 * inner (a channel of (N, C, spatial) is outer = N, inner = spatial). */
typedef struct stats_job {
    const double *values;
    int64_t groups, outer, inner;
    double *mean, *var; /* biased variance */
} stats_job;

static void channel_stats(int64_t begin, int64_t end, void *user)
{
    const stats_job *job = user;
    int64_t count = job->outer * job->inner;
    for (int64_t g = begin; g < end; g++) {
        double sum = 0, sq = 0;
        for (int64_t o = 0; o < job->outer; o++) {
            const double *v = job->values + (o * job->groups + g) * job->inner;
            for (int64_t i = 0; i < job->inner; i++) sum += v[i];
        }
        double mean = count ? sum / (double)count : NAN;
        for (int64_t o = 0; o < job->outer; o++) {
            const double *v = job->values + (o * job->groups + g) * job->inner;
            for (int64_t i = 0; i < job->inner; i++) sq += (v[i] - mean) * (v[i] - mean);
        }
        job->mean[g] = mean;
        job->var[g] = count ? sq / (double)count : NAN;
    }
}

typedef struct apply_job {
    double *values;
    int64_t groups, inner;
    const double *mean, *rstd, *weight, *bias; /* per group; weight/bias per channel */
    int64_t channels;                          /* weight index = group % channels    */
    mtk_dtype chain;                           /* UNDEFINED: one rounding at the end;
                                                * else each step rounded to it        */
} apply_job;

/* A double rounded through `dtype` (see nn_round). */
static double rounded(double v, mtk_dtype dtype)
{
    nn_round(&v, 1, dtype);
    return v;
}

static void apply_affine(int64_t begin, int64_t end, void *user)
{
    const apply_job *job = user;
    for (int64_t row = begin; row < end; row++) {
        int64_t g = row % job->groups, c = g % job->channels;
        double *v = job->values + row * job->inner;
        if (job->chain != MTK_DTYPE_UNDEFINED) {
            /* torch's generic cpu kernel: ((x - mean) * invstd) * weight +
             * bias in the input's (half) dtype, rounding every step */
            mtk_dtype d = job->chain;
            for (int64_t i = 0; i < job->inner; i++) {
                double t = rounded(rounded(v[i] - job->mean[g], d) * job->rstd[g], d);
                if (job->weight) t = rounded(t * job->weight[c], d);
                if (job->bias) t = rounded(t + job->bias[c], d);
                v[i] = t;
            }
            continue;
        }
        double scale = job->rstd[g] * (job->weight ? job->weight[c] : 1.0);
        double shift = job->bias ? job->bias[c] : 0.0;
        for (int64_t i = 0; i < job->inner; i++) v[i] = (v[i] - job->mean[g]) * scale + shift;
    }
}

/* Normalizes x viewed as (outer, groups, inner) per group; channels =
 * number of distinct weight/running-stat entries (groups % channels picks
 * one).  Updates the running statistics when training.  `dense`: x is
 * contiguous or channels-last (torch's dense kernels run); `plane`: its
 * statistics take torch's contiguous-plane kernel (see
 * nn_batchnorm_half.c); `params_dense`: the parameters are contiguous
 * (else torch's transform runs its generic element-wise kernel);
 * `stats_cast`: the running statistics are first cast to x's dtype (as
 * torch's instance_norm does without a weight). */
static bool run_batch_norm(mtk_op_call *call, int64_t outer, int64_t groups, int64_t inner, int64_t channels,
                           bool training, bool dense, bool plane, bool params_dense, bool stats_cast)
{
    mtk_ctx *ctx = call->ctx;
    const mtk_tensor *x = arg_tensor(call, ARG_INPUT);
    mtk_tensor *rm_t = arg_tensor(call, ARG_RUNNING_MEAN), *rv_t = arg_tensor(call, ARG_RUNNING_VAR);
    double momentum = call->args[ARG_MOMENTUM].as.f, eps = call->args[ARG_EPS].as.f;
    double *values = nn_gather(ctx, x), *w = nn_gather(ctx, arg_tensor(call, ARG_WEIGHT));
    double *b = nn_gather(ctx, arg_tensor(call, ARG_BIAS));
    double *rm = nn_gather(ctx, rm_t), *rv = nn_gather(ctx, rv_t);
    double *mean = nn_alloc(ctx, groups), *rstd = nn_alloc(ctx, groups);
    bool ok = values && mean && rstd && (!arg_tensor(call, ARG_WEIGHT) || w) && (!arg_tensor(call, ARG_BIAS) || b) &&
              (!rm_t || rm) && (!rv_t || rv);
    /* half input: torch's dense kernels round as nn_batchnorm_half.c
     * does; its generic kernel (a layout neither contiguous nor
     * channels-last, or parameters not contiguous) rounds every step to
     * the parameters' dtype */
    bool half = x->dtype == MTK_FLOAT16 || x->dtype == MTK_BFLOAT16;
    const mtk_tensor *params[4] = { rm_t, rv_t, arg_tensor(call, ARG_WEIGHT), arg_tensor(call, ARG_BIAS) };
    bool mixed = false;
    for (int32_t i = stats_cast ? 2 : 0; i < 4; i++)
        if (params[i]) {
            mixed = params[i]->dtype != x->dtype;
            break;
        }
    if (ok && stats_cast) {
        if (rm) nn_round(rm, channels, x->dtype);
        if (rv) nn_round(rv, channels, x->dtype);
    }
    bool fast = half && dense && params_dense; /* torch's dense transform */
    mtk_dtype chain = half && !fast ? (mixed ? MTK_FLOAT32 : x->dtype) : MTK_DTYPE_UNDEFINED;
    bn_half_job hj = { values, outer, groups, inner, channels, w, b, rm, rv, x->dtype, mixed, plane,
                       nn_num_threads(), eps };
    if (ok) {
        if (training) {
            stats_job sj = { values, groups, outer, inner, mean, rstd };
            nn_parallel(groups, 1, channel_stats, &sj);
            int64_t count = outer * inner;
            // running = (1 - momentum) * running + momentum * batch stat, averaged over repeats
            if (count > 0) {
                int64_t repeats = groups / channels;
                for (int64_t c = 0; c < channels; c++) {
                    double m_sum = 0, v_sum = 0;
                    for (int64_t r = 0; r < repeats; r++) {
                        m_sum += mean[r * channels + c];
                        v_sum += rstd[r * channels + c] * (double)count / (double)(count - 1);
                    }
                    if (rm) rm[c] = (1 - momentum) * rm[c] + momentum * m_sum / (double)repeats;
                    if (rv) rv[c] = (1 - momentum) * rv[c] + momentum * v_sum / (double)repeats;
                }
            }
            for (int64_t g = 0; g < groups; g++) rstd[g] = 1.0 / sqrt(rstd[g] + eps);
            /* torch keeps the batch statistics in the parameters' dtype
             * (the input's unless float32 parameters meet a half input) */
            if (half && dense) {
                nn_bn_half_batch_stats(&hj, mean, rstd);
            } else if (half) {
                nn_round(mean, groups, mixed ? MTK_FLOAT32 : x->dtype);
                nn_round(rstd, groups, mixed ? MTK_FLOAT32 : x->dtype);
            }
        } else if (fast) {
            nn_bn_half_running_stats(&hj, mean, rstd);
        } else {
            for (int64_t g = 0; g < groups; g++) {
                mean[g] = rm[g % channels];
                rstd[g] = 1.0 / sqrt(rv[g % channels] + eps);
            }
        }
        if (!training && chain != MTK_DTYPE_UNDEFINED)
            for (int64_t g = 0; g < groups; g++) /* 1 / sqrt(running_var + eps) as tensor ops in the
                                                   * parameters' dtype (eps rounded to it first) */
                rstd[g] = rounded(1.0 / rounded(sqrt(rounded(rv[g % channels] + rounded(eps, chain), chain)), chain),
                                  chain);
        if (fast) {
            nn_bn_half_transform(&hj, mean, rstd);
        } else {
            apply_job aj = { values, groups, inner, mean, rstd, w, b, channels, chain };
            nn_parallel(outer * groups, 1 + 4096 / (inner + 1), apply_affine, &aj);
        }
        nn_scatter(call->out[0], values);
        if (training && outer * inner > 0) {
            if (rm) nn_scatter(rm_t, rm);
            if (rv) nn_scatter(rv_t, rv);
        }
    }
    double *buffers[] = { values, w, b, rm, rv, mean, rstd };
    for (size_t i = 0; i < sizeof buffers / sizeof buffers[0]; i++) mtk_ctx_mfree(ctx, buffers[i]);
    return ok;
}

/* ------------------------------------------------------ output strides */

/* [C] unsqueezed at the end up to `ndim` dims (_unsqueeze_to_dim). */
static mtk_tensor *unsqueeze_to(mtk_ctx *ctx, mtk_tensor *t, int32_t ndim)
{
    while (t && t->ndim < ndim) t = mtk_unsqueeze(ctx, t, -1);
    return t;
}

/* torch's meta batch_norm is native_batch_norm_helper's decomposition:
 * training: (x - mean) * rstd with keepdim statistics of x over every dim
 * but 1; else (x - rm) * invstd with the running statistics copied and
 * unsqueezed to [C, 1...]; then [* weight] [+ bias] flattened and
 * unsqueezed alike.  The strides of that chain, replayed on the meta
 * stand-in xs and parameters ps (weight, bias, running mean, running
 * var; NULLs allowed).  NULL (error set) on failure. */
static mtk_tensor *batch_norm_replay(mtk_ctx *ctx, mtk_tensor *xs, mtk_tensor *const *ps, bool training)
{
    int32_t ndim = xs->ndim;
    mtk_dtype opmath = xs->dtype == MTK_FLOAT16 || xs->dtype == MTK_BFLOAT16 ? MTK_FLOAT32 : xs->dtype;
    mtk_tensor *mean = NULL, *scale = NULL;
    if (training) {
        int64_t dims[MTK_MAX_DIMS];
        int32_t n = 0;
        for (int32_t d = 0; d < ndim; d++)
            if (d != 1) dims[n++] = d;
        mtk_tensor *acc = mtk_to_dtype(ctx, xs, opmath);
        mean = acc ? mtk_mean(ctx, acc, dims, n, true, MTK_DTYPE_UNDEFINED) : NULL;
        scale = mean ? mtk_rsqrt(ctx, mean) : NULL;
    } else {
        mtk_tensor *rm = mtk_to(ctx, ps[2], MTK_DEVICE_META, opmath, true);
        mtk_tensor *rv = mtk_to(ctx, ps[3], MTK_DEVICE_META, opmath, true);
        mtk_tensor *sq = rv ? mtk_sqrt(ctx, rv) : NULL;
        mean = rm ? unsqueeze_to(ctx, rm, ndim - 1) : NULL;
        scale = sq ? unsqueeze_to(ctx, mtk_reciprocal(ctx, sq), ndim - 1) : NULL;
    }
    mtk_tensor *centered = mean ? mtk_sub(ctx, xs, mean) : NULL;
    mtk_tensor *res = centered && scale ? mtk_mul(ctx, centered, scale) : NULL;
    for (int32_t i = 0; i < 2 && res; i++) {
        if (!ps[i]) continue;
        mtk_tensor *flat = mtk_flatten(ctx, ps[i], 0, -1);
        mtk_tensor *p = flat ? unsqueeze_to(ctx, flat, ndim - 1) : NULL;
        res = !p ? NULL : i == 0 ? mtk_mul(ctx, res, p) : mtk_add(ctx, res, p);
    }
    return res;
}

/* ----------------------------------------------------------- batch_norm */

bool mtk_nn_batch_norm_meta(mtk_op_call *call)
{
    const mtk_tensor *x = arg_tensor(call, ARG_INPUT);
    bool training = arg_bool(call, ARG_TRAINING);
    char buf[256];
    if (training) {
        // F.batch_norm's _verify_batch_size
        if (x->ndim == 0) return mtk_call_error(call, MTK_ERR_INDEX, "tuple index out of range");
        if (x->shape[0] * nn_prod(x->shape, 2, x->ndim) == 1)
            return mtk_call_error(call, MTK_ERR_SHAPE,
                                  "Expected more than 1 value per channel when training, got input size %s",
                                  torch_size(x->shape, x->ndim, buf, sizeof buf));
    }
    if (!check_batch_norm_params(call, x->ndim >= 2 ? x->shape[1] : 0, 1, training)) return false;
    if (training && !mtk_dtype_is_floating(x->dtype))
        return mtk_call_error(call, MTK_ERR_DTYPE,
                              "mean(): could not infer output dtype. Input dtype must be either a floating point or "
                              "complex dtype. Got: %s",
                              mtk_dtype_cpp_name(x->dtype));
    if (x->dtype == MTK_BOOL)
        return mtk_call_error(call, MTK_ERR_DTYPE,
                              "Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or "
                              "`logical_xor()` operator instead.");
    mtk_ctx *ctx = call->ctx;
    mtk_tensor *ps[4];
    static const int32_t param_args[4] = { ARG_WEIGHT, ARG_BIAS, ARG_RUNNING_MEAN, ARG_RUNNING_VAR };
    for (int32_t i = 0; i < 4; i++)
        ps[i] = nn_meta_standin(ctx, arg_tensor(call, param_args[i]), MTK_DTYPE_UNDEFINED);
    mtk_tensor *xs = nn_meta_standin(ctx, x, MTK_DTYPE_UNDEFINED);
    mtk_tensor *res = xs ? batch_norm_replay(ctx, xs, ps, training) : NULL;
    if (!res) return false;
    return nn_set_output(call, x->dtype, x->shape, x->ndim, res->stride);
}

bool mtk_nn_batch_norm_cpu(mtk_op_call *call)
{
    const mtk_tensor *x = arg_tensor(call, ARG_INPUT);
    bool training = arg_bool(call, ARG_TRAINING);
    if (!check_cpu_stats(call, training)) return false;
    if (x->ndim < 2) return true; /* C = 0: nothing to normalize */
    int64_t channels = x->shape[1];
    bool dense = mtk_tensor_is_contiguous(x) || (x->ndim == 4 && mtk_tensor_is_channels_last(x)) ||
                 (x->ndim == 5 && mtk_tensor_is_channels_last_3d(x));
    int64_t inner = nn_prod(x->shape, 2, x->ndim);
    bool params_dense = true;
    static const int32_t param_args[4] = { ARG_WEIGHT, ARG_BIAS, ARG_RUNNING_MEAN, ARG_RUNNING_VAR };
    for (int32_t i = 0; i < 4; i++) {
        const mtk_tensor *p = arg_tensor(call, param_args[i]);
        if (p && !mtk_tensor_is_contiguous(p)) params_dense = false;
    }
    return run_batch_norm(call, x->shape[0], channels, inner, channels, training, dense,
                          mtk_tensor_is_contiguous(x) && inner != 1, params_dense, false);
}

/* -------------------------------------------------------- instance_norm */

bool mtk_nn_instance_norm_meta(mtk_op_call *call)
{
    const mtk_tensor *x = arg_tensor(call, ARG_INPUT);
    bool use_input_stats = arg_bool(call, ARG_TRAINING);
    char buf[256];
    if (use_input_stats && nn_prod(x->shape, 2, x->ndim) == 1)
        return mtk_call_error(call, MTK_ERR_SHAPE,
                              "Expected more than 1 spatial element when training, got input size %s",
                              torch_size(x->shape, x->ndim, buf, sizeof buf));
    /* one running statistic without the other, as torch 2.13's meta
     * answers it: a running_mean of another dtype than x is an undefined
     * tensor to its update, a lone integer running_var fails its mean */
    const mtk_tensor *rm = arg_tensor(call, ARG_RUNNING_MEAN), *rv = arg_tensor(call, ARG_RUNNING_VAR);
    if (use_input_stats && rm && !rv && rm->dtype != x->dtype)
        return mtk_call_error(call, MTK_ERR_INVALID_ARGUMENT,
                              "Expected a proper Tensor but got None (or an undefined Tensor in C++) for argument #0 "
                              "'self'");
    if (use_input_stats && !rm && rv && !mtk_dtype_is_floating(rv->dtype))
        return mtk_call_error(call, MTK_ERR_DTYPE,
                              "mean(): could not infer output dtype. Input dtype must be either a floating point or "
                              "complex dtype. Got: %s",
                              mtk_dtype_cpp_name(rv->dtype));
    if (!use_input_stats && (!arg_tensor(call, ARG_RUNNING_MEAN) || !arg_tensor(call, ARG_RUNNING_VAR)))
        return mtk_call_error(call, MTK_ERR_INVALID_ARGUMENT,
                              "Expected running_mean and running_var to be defined when use_input_stats is false");
    if (x->ndim < 2)
        return mtk_call_error(call, MTK_ERR_INDEX, "Dimension out of range (expected to be in range of [-%d, %d], but got 1)",
                              x->ndim ? (int)x->ndim : 1, x->ndim ? (int)x->ndim - 1 : 0);
    if (use_input_stats && !mtk_dtype_is_floating(x->dtype))
        return mtk_call_error(call, MTK_ERR_DTYPE,
                              "mean(): could not infer output dtype. Input dtype must be either a floating point or "
                              "complex dtype. Got: %s",
                              mtk_dtype_cpp_name(x->dtype));
    if (x->dtype == MTK_BOOL)
        return mtk_call_error(call, MTK_ERR_DTYPE,
                              "Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or "
                              "`logical_xor()` operator instead.");
    // batch_norm over x.contiguous().view(1, N * C, ...) with the
    // parameters repeated N times (contiguous), viewed back to x's shape
    int64_t n = x->shape[0];
    if (!check_batch_norm_params(call, n * x->shape[1], n, use_input_stats)) return false;
    mtk_ctx *ctx = call->ctx;
    int64_t shape[MTK_MAX_DIMS];
    shape[0] = 1;
    shape[1] = n * x->shape[1];
    memcpy(shape + 2, x->shape + 2, sizeof(int64_t) * (size_t)(x->ndim - 2));
    mtk_tensor *ps[4];
    static const int32_t param_args[4] = { ARG_WEIGHT, ARG_BIAS, ARG_RUNNING_MEAN, ARG_RUNNING_VAR };
    for (int32_t i = 0; i < 4; i++)
        ps[i] = arg_tensor(call, param_args[i])
                    ? mtk_tensor_new(ctx, arg_tensor(call, param_args[i])->dtype, shape + 1, 1, NULL,
                                     MTK_DEVICE_META) /* repeated */
                    : NULL;
    mtk_tensor *xs = nn_meta_standin(ctx, x, MTK_DTYPE_UNDEFINED);
    mtk_tensor *xc = xs ? mtk_contiguous(ctx, xs) : NULL;
    mtk_tensor *xv = xc ? mtk_view(ctx, xc, shape, x->ndim) : NULL;
    mtk_tensor *out = xv ? batch_norm_replay(ctx, xv, ps, use_input_stats) : NULL;
    mtk_tensor *res = out ? mtk_view(ctx, out, x->shape, x->ndim) : NULL;
    if (!res) return false;
    return nn_set_output(call, x->dtype, x->shape, x->ndim, res->stride);
}

/* Whether a tensor has two elements at one address (a stride 0 over a
 * dim of size > 1): torch's copy_ into it refuses. */
bool mtk_nn_instance_norm_cpu(mtk_op_call *call)
{
    const mtk_tensor *x = arg_tensor(call, ARG_INPUT);
    bool use_input_stats = arg_bool(call, ARG_TRAINING);
    if (!check_instance_stats(call, use_input_stats)) return false;
    /* with use_input_stats the running statistics are written back with copy_ */
    const mtk_tensor *mean = arg_tensor(call, ARG_RUNNING_MEAN), *var = arg_tensor(call, ARG_RUNNING_VAR);
    if (use_input_stats && ((mean && !mtk_check_writable(call, mean)) || (var && !mtk_check_writable(call, var))))
        return false;
    int64_t channels = x->shape[1];
    /* torch normalizes x.contiguous(): the dense kernel */
    int64_t inner = nn_prod(x->shape, 2, x->ndim);
    /* its parameters are repeated into contiguous tensors; without a
     * weight torch 2.13 casts the running statistics to x's dtype */
    return run_batch_norm(call, 1, x->shape[0] * channels, inner, channels, use_input_stats, true, inner != 1, true,
                          arg_tensor(call, ARG_WEIGHT) == NULL);
}

/* ------------------------------------------------------------- typed API */

static mtk_tensor *run_norm_call(mtk_ctx *ctx, mtk_op_id id, mtk_tensor *input, mtk_tensor *running_mean,
                                 mtk_tensor *running_var, mtk_tensor *weight, mtk_tensor *bias, bool training,
                                 double momentum, double eps)
{
    mtk_op_call call;
    mtk_op_call_init(&call, ctx, mtk_op_by_id(id));
    mtk_tensor *tensors[] = { input, running_mean, running_var, weight, bias };
    for (int32_t i = 0; i < 5; i++) call.args[i] = tensors[i] ? mtk_value_tensor(tensors[i]) : mtk_value_none();
    call.args[0] = mtk_value_tensor(input);
    call.args[ARG_TRAINING] = mtk_value_bool(training);
    call.args[ARG_MOMENTUM] = mtk_value_float(momentum);
    call.args[ARG_EPS] = mtk_value_float(eps);
    return mtk_op_run_tensor(&call);
}

mtk_tensor *mtk_batch_norm(mtk_ctx *ctx, mtk_tensor *input, mtk_tensor *running_mean, mtk_tensor *running_var,
                           mtk_tensor *weight, mtk_tensor *bias, bool training, double momentum, double eps)
{
    return run_norm_call(ctx, OPID_BATCH_NORM, input, running_mean, running_var, weight, bias, training, momentum,
                         eps);
}

mtk_tensor *mtk_instance_norm(mtk_ctx *ctx, mtk_tensor *input, mtk_tensor *running_mean, mtk_tensor *running_var,
                              mtk_tensor *weight, mtk_tensor *bias, bool use_input_stats, double momentum,
                              double eps)
{
    return run_norm_call(ctx, OPID_INSTANCE_NORM, input, running_mean, running_var, weight, bias, use_input_stats,
                         momentum, eps);
}
