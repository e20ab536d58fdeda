/* F.layer_norm, F.rms_norm and F.group_norm: shape checks with torch's
 * words, output layouts of torch's meta device, and cpu kernels that
 * normalize rows of a contiguous double buffer.
 *
 * Dtypes: torch's meta accepts any mix of input/weight/bias floating
 * dtypes (the output has the input's); its cpu kernels follow the "mixed
 * dtype (CPU)" rule (nn_check_param_dtypes), except rms_norm, a
 * composite that takes any mix.  Statistics are biased (divide by the
 * row length), computed in double. */
#include "ops/nn.h"
#include "ops/nn_fast.h"
#include "ops/op_util.h"
#include "ops/registry.h"
#include "mtk/ops/nn.h"
#include "mtk/ops/convert.h"
#include "mtk/ops/elementwise.h"
#include "mtk/ops/reduce.h"
#include "mtk/ops/view.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

/* normalized_shape of layer_norm / rms_norm (argument 1) */
static int32_t read_normalized_shape(mtk_op_call *call, int64_t *shape)
{
    if (call->args[1].kind == MTK_VALUE_INT) {
        mtk_call_error(call, MTK_ERR_INVALID_ARGUMENT,
                       "argument 'normalized_shape' (position 2) must be tuple of ints, not int");
        return -1;
    }
    int32_t n = mtk_value_to_ints(call->ctx, &call->args[1], shape, MTK_MAX_DIMS, call->op->name,
                                  "normalized_shape");
    if (n == 0)
        mtk_call_error(call, MTK_ERR_SHAPE,
                       "Expected normalized_shape to be at least 1-dimensional, i.e., containing at least one "
                       "element, but got normalized_shape = []");
    return n > 0 ? n : -1;
}

static bool same_shape(const mtk_tensor *t, const int64_t *shape, int32_t n)
{
    return t->ndim == n && memcmp(t->shape, shape, (size_t)n * sizeof *shape) == 0;
}

/* torch's _check_layer_norm_inputs (rms: rms_norm's spelling of the
 * input message); param_count of weight (, bias) at args 2, 3. */
static bool check_normalized(mtk_op_call *call, const int64_t *ns, int32_t n, int32_t param_count, bool rms)
{
    const mtk_tensor *x = arg_tensor(call, 0);
    char a[256], b[256];
    static const char *const names[] = { "weight", "bias" };
    for (int32_t i = 0; i < param_count; i++) {
        const mtk_tensor *p = arg_tensor(call, 2 + i);
        if (p && !same_shape(p, ns, n))
            return mtk_call_error(call, MTK_ERR_SHAPE,
                                  "Expected %s to be of same shape as normalized_shape, but got %s of shape %s and "
                                  "normalized_shape = %s",
                                  names[i], names[i], mtk_shape_list_str(p->shape, p->ndim, a, sizeof a),
                                  mtk_shape_list_str(ns, n, b, sizeof b));
    }
    bool fits = x->ndim >= n && memcmp(x->shape + x->ndim - n, ns, (size_t)n * sizeof *ns) == 0;
    if (!fits) {
        char star[260];
        mtk_shape_list_str(ns, n, b, sizeof b);
        snprintf(star, sizeof star, "[*%s%s", rms ? "" : ", ", b + 1);
        return mtk_call_error(call, MTK_ERR_SHAPE,
                              "Given normalized_shape=%s, expected input with shape %s, but got input of size%s", b,
                              star, mtk_shape_list_str(x->shape, x->ndim, a, sizeof a));
    }
    return true;
}

/* ------------------------------------------------------ the row kernel */

typedef enum { AFFINE_LAST, AFFINE_GROUP } affine_kind;

typedef struct norm_job {
    double *values;             /* rows of row_len, row-major            */
    int64_t row_len;
    const double *weight, *bias;/* NULL: none                            */
    affine_kind affine;         /* AFFINE_LAST: param index = j          */
    int64_t groups, channels_per_group, spatial; /* AFFINE_GROUP          */
    double eps;
    bool rms;                   /* no centering: x * rsqrt(mean(x^2)+eps)*/
} norm_job;

static void normalize_rows(int64_t begin, int64_t end, void *user)
{
    const norm_job *job = user;
    int64_t n = job->row_len;
    for (int64_t r = begin; r < end; r++) {
        double *v = job->values + r * n;
        double mean = 0, var = 0;
        if (!job->rms) {
            for (int64_t j = 0; j < n; j++) mean += v[j];
            mean = n ? mean / (double)n : NAN;
        }
        for (int64_t j = 0; j < n; j++) var += (v[j] - mean) * (v[j] - mean);
        var = n ? var / (double)n : NAN;
        double rstd = 1.0 / sqrt(var + job->eps);
        for (int64_t j = 0; j < n; j++) {
            int64_t c = job->affine == AFFINE_LAST
                            ? j
                            : (r % job->groups) * job->channels_per_group + j / (job->spatial ? job->spatial : 1);
            double y = (v[j] - mean) * rstd;
            if (job->weight) y *= job->weight[c];
            if (job->bias) y += job->bias[c];
            v[j] = y;
        }
    }
}

/* Gathers x, weight and bias, runs the job over `rows` rows and stores
 * the result into out. */
static bool run_norm(mtk_op_call *call, const mtk_tensor *x, const mtk_tensor *weight, const mtk_tensor *bias,
                     int64_t rows, norm_job *job)
{
    mtk_ctx *ctx = call->ctx;
    job->values = nn_gather(ctx, x);
    double *w = nn_gather(ctx, weight), *b = nn_gather(ctx, bias);
    bool ok = job->values && (!weight || w) && (!bias || b);
    if (ok) {
        job->weight = w;
        job->bias = b;
        nn_parallel(rows, 1 + 4096 / (job->row_len + 1), normalize_rows, job);
        nn_scatter(call->out[0], job->values);
    }
    mtk_ctx_mfree(ctx, job->values);
    mtk_ctx_mfree(ctx, w);
    mtk_ctx_mfree(ctx, b);
    return ok;
}

/* ----------------------------------------------------------- layer_norm */

bool mtk_nn_layer_norm_meta(mtk_op_call *call)
{
    const mtk_tensor *x = arg_tensor(call, 0);
    int64_t ns[MTK_MAX_DIMS];
    int32_t n = read_normalized_shape(call, ns);
    if (n < 0 || !check_normalized(call, ns, n, 2, false)) return false;
    if (!mtk_dtype_is_floating(x->dtype))
        return mtk_call_error(call, MTK_ERR_DTYPE,
                              "mean(): could not infer output dtype. Input dtype must be either a floating point or "
                              "complex dtype. Got: %s",
                              mtk_dtype_cpp_name(x->dtype));
    /* torch's meta runs native_layer_norm's decomposition: xc =
     * x.contiguous() (weight, bias too), then (xc - mean) * rstd with
     * keepdim statistics over the last n dims, [* weight] [+ bias]; its
     * strides replayed on meta stand-ins */
    mtk_ctx *ctx = call->ctx;
    int64_t dims[MTK_MAX_DIMS];
    for (int32_t i = 0; i < n; i++) dims[i] = x->ndim - n + i;
    mtk_tensor *xs = nn_meta_standin(ctx, x, MTK_FLOAT32);
    mtk_tensor *xc = xs ? mtk_contiguous(ctx, xs) : NULL;
    mtk_tensor *mean = xc ? mtk_mean(ctx, xc, dims, n, true, MTK_DTYPE_UNDEFINED) : NULL;
    mtk_tensor *centered = mean ? mtk_sub(ctx, xc, mean) : NULL;
    mtk_tensor *rstd = mean ? mtk_rsqrt(ctx, mean) : NULL;
    mtk_tensor *res = centered && rstd ? mtk_mul(ctx, centered, rstd) : NULL;
    for (int32_t i = 0; i < 2 && res; i++) {
        const mtk_tensor *p = arg_tensor(call, 2 + i);
        if (!p) continue;
        mtk_tensor *ps = nn_meta_standin(ctx, p, MTK_DTYPE_UNDEFINED);
        mtk_tensor *pc = ps ? mtk_contiguous(ctx, ps) : NULL;
        res = !pc ? NULL : i == 0 ? mtk_mul(ctx, res, pc) : mtk_add(ctx, res, pc);
    }
    if (!res) return false;
    return nn_set_output(call, x->dtype, x->shape, x->ndim, res->stride);
}

bool mtk_nn_layer_norm_cpu(mtk_op_call *call)
{
    const mtk_tensor *x = arg_tensor(call, 0), *w = arg_tensor(call, 2), *b = arg_tensor(call, 3);
    if (mtk_dtype_is_float8(x->dtype)) return nn_cpu_dtype_error(call, "LayerNormKernelImpl", x->dtype);
    const mtk_tensor *params[2] = { w, b };
    if (!nn_check_param_dtypes(call, x, params, 2)) return false;
    int64_t ns[MTK_MAX_DIMS];
    int32_t n = read_normalized_shape(call, ns);
    if (n < 0) return false;
    norm_job job = { 0 };
    job.row_len = nn_prod(ns, 0, n);
    job.affine = AFFINE_LAST;
    job.eps = call->args[4].as.f;
    if (mtk_tensor_numel(x) == 0) return true;
    if (mtk_nn_fast_norm(call->ctx, x, w, b, job.row_len, job.eps, false, call->out[0])) return true;
    return run_norm(call, x, w, b, mtk_tensor_numel(x) / job.row_len, &job);
}

/* ------------------------------------------------------------- rms_norm */

bool mtk_nn_rms_norm_meta(mtk_op_call *call)
{
    const mtk_tensor *x = arg_tensor(call, 0);
    int64_t ns[MTK_MAX_DIMS];
    int32_t n = read_normalized_shape(call, ns);
    if (n < 0 || !check_normalized(call, ns, n, 1, true)) return false;
    if (!mtk_dtype_is_floating(x->dtype) || mtk_dtype_is_float8(x->dtype))
        return nn_cpu_dtype_error(call, "rms_norm", x->dtype);
    /* torch's meta runs _fused_rms_norm's decomposition: up = x.to(opmath),
     * r = rsqrt(mean(up^2, dims, keepdim) + eps), up * r [* weight], made
     * contiguous unless x suggests channels-last, cast back; its strides
     * replayed on meta stand-ins */
    mtk_ctx *ctx = call->ctx;
    const mtk_tensor *w = arg_tensor(call, 2);
    mtk_dtype opmath = x->dtype == MTK_FLOAT64 ? MTK_FLOAT64 : MTK_FLOAT32;
    mtk_tensor *up = nn_meta_standin(ctx, x, MTK_DTYPE_UNDEFINED);
    if (up && x->dtype != opmath) up = mtk_to_dtype(ctx, up, opmath);
    int64_t dims[MTK_MAX_DIMS];
    for (int32_t i = 0; i < n; i++) dims[i] = x->ndim - 1 - i;
    mtk_tensor *sq = up ? mtk_pow_scalar(ctx, up, mtk_value_int(2)) : NULL;
    mtk_tensor *ms = sq ? mtk_mean(ctx, sq, dims, n, true, MTK_DTYPE_UNDEFINED) : NULL;
    mtk_tensor *shifted = ms ? mtk_add_scalar(ctx, ms, mtk_value_float(1e-6)) : NULL;
    mtk_tensor *r = shifted ? mtk_rsqrt(ctx, shifted) : NULL;
    mtk_tensor *res = r ? mtk_mul(ctx, up, r) : NULL;
    if (res && w) {
        mtk_tensor *ws = nn_meta_standin(ctx, w, MTK_DTYPE_UNDEFINED);
        res = ws ? mtk_mul(ctx, res, ws) : NULL;
    }
    if (res && !mtk_strides_suggest_channels_last(x->ndim, x->shape, x->stride)) res = mtk_contiguous(ctx, res);
    if (res && x->dtype != opmath) res = mtk_to_dtype(ctx, res, x->dtype);
    if (!res) return false;
    return nn_set_output(call, x->dtype, x->shape, x->ndim, res->stride);
}

bool mtk_nn_rms_norm_cpu(mtk_op_call *call)
{
    const mtk_tensor *x = arg_tensor(call, 0), *w = arg_tensor(call, 2);
    int64_t ns[MTK_MAX_DIMS];
    int32_t n = read_normalized_shape(call, ns);
    if (n < 0) return false;
    norm_job job = { 0 };
    job.row_len = nn_prod(ns, 0, n);
    job.affine = AFFINE_LAST;
    job.rms = true;
    job.eps = arg_is_none(call, 3) ? (x->dtype == MTK_FLOAT64 ? DBL_EPSILON : FLT_EPSILON) : call->args[3].as.f;
    if (mtk_tensor_numel(x) == 0) return true;
    if (mtk_nn_fast_norm(call->ctx, x, w, NULL, job.row_len, job.eps, true, call->out[0])) return true;
    return run_norm(call, x, w, NULL, mtk_tensor_numel(x) / job.row_len, &job);
}

/* ----------------------------------------------------------- group_norm */

static bool check_group_norm(mtk_op_call *call)
{
    const mtk_tensor *x = arg_tensor(call, 0);
    int64_t groups = arg_int(call, 1);
    char a[256], b[256];
    if (x->ndim < 2)
        return mtk_call_error(call, MTK_ERR_SHAPE, "Expected at least 2 dimensions for input tensor but received %d",
                              (int)x->ndim);
    if (groups == 0) return mtk_call_error(call, MTK_ERR_INVALID_ARGUMENT, "integer division or modulo by zero");
    // F.group_norm's _verify_batch_size on [N * C // G, G, *spatial]
    // (Python's ints: N * C may pass int64 when a spatial size is 0)
    __int128 nc = (__int128)x->shape[0] * x->shape[1];
    __int128 first = nc / groups - ((nc % groups != 0) && ((nc < 0) != (groups < 0))); /* Python's // */
    if (first == 1 && nn_prod(x->shape, 2, x->ndim) == 1) {
        int64_t size[MTK_MAX_DIMS];
        size[0] = 1;
        size[1] = groups;
        memcpy(size + 2, x->shape + 2, (size_t)(x->ndim - 2) * sizeof *size);
        return mtk_call_error(call, MTK_ERR_SHAPE, "Expected more than 1 value per channel when training, got input size %s",
                              mtk_shape_list_str(size, x->ndim, a, sizeof a));
    }
    if (groups < 0)
        return mtk_call_error(call, MTK_ERR_INVALID_ARGUMENT, "Expected num groups to be greater than 0, got %lld",
                              (long long)groups);
    int64_t channels = x->shape[1];
    if (channels % groups != 0)
        return mtk_call_error(call, MTK_ERR_SHAPE,
                              "Expected number of channels in input to be divisible by num_groups, but got input of "
                              "shape %s and num_groups=%lld",
                              mtk_shape_list_str(x->shape, x->ndim, a, sizeof a), (long long)groups);
    static const char *const names[] = { "weight", "bias" };
    for (int32_t i = 0; i < 2; i++) {
        const mtk_tensor *p = arg_tensor(call, 2 + i);
        if (p && !(p->ndim == 1 && p->shape[0] == channels))
            return mtk_call_error(call, MTK_ERR_SHAPE,
                                  "Expected %s to be a vector of size equal to the number of channels in input, but "
                                  "got %s of shape %s and input of shape %s",
                                  names[i], names[i], mtk_shape_list_str(p->shape, p->ndim, a, sizeof a),
                                  mtk_shape_list_str(x->shape, x->ndim, b, sizeof b));
    }
    return true;
}

bool mtk_nn_group_norm_meta(mtk_op_call *call)
{
    const mtk_tensor *x = arg_tensor(call, 0);
    if (!check_group_norm(call)) return false;
    if (!mtk_dtype_is_floating(x->dtype))
        return mtk_call_error(call, MTK_ERR_DTYPE,
                              "mean(): could not infer output dtype. Input dtype must be either a floating point or "
                              "complex dtype. Got: %s",
                              mtk_dtype_cpp_name(x->dtype));
    /* torch.group_norm makes x contiguous (on meta; its cpu in the suggested
     * memory format, a layout mtk does not follow), then its meta runs native_group_norm's decomposition: (xr - mean) *
     * rstd over xr = x viewed as [N, G, C/G, HxW], viewed back, [* weight]
     * [+ bias] (as [1, C, 1...]); its strides replayed on meta stand-ins */
    mtk_ctx *ctx = call->ctx;
    mtk_tensor *xs = nn_meta_standin(ctx, x, MTK_FLOAT32);
    mtk_tensor *xc = xs ? mtk_contiguous(ctx, xs) : NULL;
    int64_t groups = arg_int(call, 1);
    const int64_t grouped[4] = { x->shape[0], groups, x->shape[1] / groups, nn_prod(x->shape, 2, x->ndim) };
    const int64_t dims[2] = { 2, 3 };
    mtk_tensor *xr = xc ? mtk_reshape(ctx, xc, grouped, 4) : NULL;
    mtk_tensor *mean = xr ? mtk_mean(ctx, xr, dims, 2, true, MTK_DTYPE_UNDEFINED) : NULL;
    mtk_tensor *centered = mean ? mtk_sub(ctx, xr, mean) : NULL;
    mtk_tensor *rstd = mean ? mtk_rsqrt(ctx, mean) : NULL;
    mtk_tensor *normed = centered && rstd ? mtk_mul(ctx, centered, rstd) : NULL;
    mtk_tensor *res = normed ? mtk_view(ctx, normed, x->shape, x->ndim) : NULL;
    for (int32_t i = 0; i < 2 && res; i++) {
        const mtk_tensor *p = arg_tensor(call, 2 + i);
        if (!p) continue;
        mtk_tensor *pu = nn_meta_standin(ctx, p, MTK_DTYPE_UNDEFINED); /* [C] unsqueezed to [1, C, 1...] */
        for (int32_t d = 0; pu && d < x->ndim; d++)
            if (d != 1) pu = mtk_unsqueeze(ctx, pu, d);
        res = !pu ? NULL : i == 0 ? mtk_mul(ctx, res, pu) : mtk_add(ctx, res, pu);
    }
    if (!res) return false;
    return nn_set_output(call, x->dtype, x->shape, x->ndim, res->stride);
}

bool mtk_nn_group_norm_cpu(mtk_op_call *call)
{
    const mtk_tensor *x = arg_tensor(call, 0), *w = arg_tensor(call, 2), *b = arg_tensor(call, 3);
    if (mtk_dtype_is_float8(x->dtype)) return nn_cpu_dtype_error(call, "GroupNormKernelImpl", x->dtype);
    const mtk_tensor *params[2] = { w, b };
    if (!nn_check_param_dtypes(call, x, params, 2)) return false;
    if (mtk_tensor_numel(x) == 0) return true;
    // rows are (N, G); a row is (C / G, *spatial)
    norm_job job = { 0 };
    job.groups = arg_int(call, 1);
    job.channels_per_group = x->shape[1] / job.groups;
    job.spatial = nn_prod(x->shape, 2, x->ndim);
    job.row_len = job.channels_per_group * job.spatial;
    job.affine = AFFINE_GROUP;
    job.eps = call->args[4].as.f;
    return run_norm(call, x, w, b, x->shape[0] * job.groups, &job);
}

/* ------------------------------------------------------------- typed API */

mtk_tensor *mtk_layer_norm(mtk_ctx *ctx, mtk_tensor *input, const int64_t *normalized_shape, int32_t n,
                           mtk_tensor *weight, mtk_tensor *bias, double eps)
{
    mtk_op_call call;
    mtk_op_call_init(&call, ctx, mtk_op_by_id(OPID_LAYER_NORM));
    call.args[0] = mtk_value_tensor(input);
    call.args[1] = mtk_value_int_list(ctx, normalized_shape, n);
    call.args[2] = weight ? mtk_value_tensor(weight) : mtk_value_none();
    call.args[3] = bias ? mtk_value_tensor(bias) : mtk_value_none();
    call.args[4] = mtk_value_float(eps);
    return mtk_op_run_tensor(&call);
}

mtk_tensor *mtk_rms_norm(mtk_ctx *ctx, mtk_tensor *input, const int64_t *normalized_shape, int32_t n,
                         mtk_tensor *weight, double eps)
{
    mtk_op_call call;
    mtk_op_call_init(&call, ctx, mtk_op_by_id(OPID_RMS_NORM));
    call.args[0] = mtk_value_tensor(input);
    call.args[1] = mtk_value_int_list(ctx, normalized_shape, n);
    call.args[2] = weight ? mtk_value_tensor(weight) : mtk_value_none();
    call.args[3] = isnan(eps) ? mtk_value_none() : mtk_value_float(eps);
    return mtk_op_run_tensor(&call);
}

mtk_tensor *mtk_group_norm(mtk_ctx *ctx, mtk_tensor *input, int64_t num_groups, mtk_tensor *weight,
                           mtk_tensor *bias, double eps)
{
    mtk_op_call call;
    mtk_op_call_init(&call, ctx, mtk_op_by_id(OPID_GROUP_NORM));
    call.args[0] = mtk_value_tensor(input);
    call.args[1] = mtk_value_int(num_groups);
    call.args[2] = weight ? mtk_value_tensor(weight) : mtk_value_none();
    call.args[3] = bias ? mtk_value_tensor(bias) : mtk_value_none();
    call.args[4] = mtk_value_float(eps);
    return mtk_op_run_tensor(&call);
}
