/* Point-wise losses: F.mse_loss, l1_loss, smooth_l1_loss, huber_loss,
 * binary_cross_entropy and binary_cross_entropy_with_logits.
 *
 * mse/l1/smooth_l1/huber broadcast input with target (torch warns; so
 * does nothing here) and an optional `weight` must have the input's
 * shape; the element-wise result has torch.result_type's dtype and
 * TensorIterator's layout; reduction 'mean' or 'sum' gives a 0-dim
 * tensor (weighted mse/l1 'mean' divides by the sum of the weights, as
 * F does).  binary_cross_entropy needs target of the input's shape and a
 * weight that broadcasts to it; the _with_logits form also takes
 * pos_weight.  Values are computed in double and rounded once. */
#include "ops/nn.h"
#include "ops/op_util.h"
#include "ops/registry.h"
#include "ops/elementwise.h"
#include "mtk/ops/nn.h"
#include "core/scalar.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

const nn_loss_info mtk_nn_mse_info = { NN_MSE };
const nn_loss_info mtk_nn_l1_info = { NN_L1 };
const nn_loss_info mtk_nn_smooth_l1_info = { NN_SMOOTH_L1 };
const nn_loss_info mtk_nn_huber_info = { NN_HUBER };
const nn_loss_info mtk_nn_bce_info = { NN_BCE };
const nn_loss_info mtk_nn_bce_logits_info = { NN_BCE_LOGITS };

/* Where each loss keeps its arguments (-1: none). */
typedef struct loss_args {
    int32_t weight, size_average, reduce, reduction, param, pos_weight;
} loss_args;

static loss_args args_of(nn_loss_kind kind)
{
    switch (kind) {
    case NN_MSE:
    case NN_L1: return (loss_args){ 5, 2, 3, 4, -1, -1 };
    case NN_SMOOTH_L1: return (loss_args){ -1, 2, 3, 4, 5, -1 };
    case NN_HUBER: return (loss_args){ 4, -1, -1, 2, 3, -1 };
    case NN_BCE: return (loss_args){ 2, 3, 4, 5, -1, -1 };
    case NN_BCE_LOGITS: return (loss_args){ 2, 3, 4, 5, -1, 6 };
    }
    return (loss_args){ -1, -1, -1, -1, -1, -1 };
}

/* What a call computes: decided once for meta and cpu. */
typedef struct loss_plan {
    nn_loss_kind kind;
    int reduction;
    int64_t shape[MTK_MAX_DIMS]; /* element-wise shape */
    int32_t ndim;
    mtk_dtype dtype;             /* result dtype       */
    const mtk_tensor *input, *target, *weight, *pos_weight;
    double param;                /* beta or delta      */
} loss_plan;

static const char *torch_size(const mtk_tensor *t, char *buf, size_t cap)
{
    char list[200];
    snprintf(buf, cap, "torch.Size(%s)", mtk_shape_list_str(t->shape, t->ndim, list, sizeof list));
    return buf;
}

static bool same_shape(const mtk_tensor *a, const mtk_tensor *b)
{
    return a->ndim == b->ndim && memcmp(a->shape, b->shape, (size_t)a->ndim * sizeof *a->shape) == 0;
}

/* t must broadcast to shape without growing it (an in-place multiply). */
static bool fits_into(mtk_op_call *call, const mtk_tensor *t, const int64_t *shape, int32_t ndim)
{
    int64_t b[MTK_MAX_DIMS];
    int32_t nb;
    if (!mtk_broadcast_shapes(call->ctx, call->op->name, shape, ndim, t->shape, t->ndim, b, &nb)) return false;
    if (nb == ndim && memcmp(b, shape, (size_t)ndim * sizeof *b) == 0) return true;
    char s1[200], s2[200];
    return mtk_call_error(call, MTK_ERR_SHAPE, "output with shape %s doesn't match the broadcast shape %s",
                          mtk_shape_list_str(shape, ndim, s1, sizeof s1), mtk_shape_list_str(b, nb, s2, sizeof s2));
}

static bool mean_dtype_error(mtk_op_call *call, mtk_dtype dtype)
{
    return mtk_call_error(call, MTK_ERR_DTYPE,
                          "mean(): could not infer output dtype. Input dtype must be either a floating point or "
                          "complex dtype. Got: %s",
                          mtk_dtype_cpp_name(dtype));
}

static bool plan_loss(mtk_op_call *call, loss_plan *p)
{
    const nn_loss_info *info = call->op->info;
    loss_args a = args_of(info->kind);
    memset(p, 0, sizeof *p);
    p->kind = info->kind;
    p->input = arg_tensor(call, 0);
    p->target = arg_tensor(call, 1);
    p->weight = a.weight >= 0 ? arg_tensor(call, a.weight) : NULL;
    p->pos_weight = a.pos_weight >= 0 ? arg_tensor(call, a.pos_weight) : NULL;
    p->param = a.param >= 0 ? call->args[a.param].as.f : 0.0;
    const mtk_tensor *x = p->input, *y = p->target;
    char s1[256], s2[256];
    if (p->kind == NN_BCE && !same_shape(x, y))
        return mtk_call_error(call, MTK_ERR_SHAPE,
                              "Using a target size (%s) that is different to the input size (%s) is deprecated. "
                              "Please ensure they have the same size.",
                              torch_size(y, s1, sizeof s1), torch_size(x, s2, sizeof s2));
    if (p->kind == NN_BCE_LOGITS && !same_shape(x, y))
        return mtk_call_error(call, MTK_ERR_SHAPE, "Target size (%s) must be the same as input size (%s)",
                              torch_size(y, s1, sizeof s1), torch_size(x, s2, sizeof s2));
    p->reduction = nn_reduction_arg(call, a.reduction, a.size_average, a.reduce);
    if (p->reduction < 0) return false;
    if (!mtk_broadcast_shapes(call->ctx, call->op->name, x->shape, x->ndim, y->shape, y->ndim, p->shape, &p->ndim))
        return false;
    if (p->weight && (p->kind == NN_MSE || p->kind == NN_L1 || p->kind == NN_HUBER) && !same_shape(p->weight, x))
        return mtk_call_error(call, MTK_ERR_SHAPE, "Weights and input must have the same size.");
    if (p->weight && !fits_into(call, p->weight, p->shape, p->ndim)) return false;
    if (p->pos_weight && !fits_into(call, p->pos_weight, p->shape, p->ndim)) return false;
    if (p->kind == NN_HUBER && !(p->param > 0))
        return mtk_call_error(call, MTK_ERR_INVALID_ARGUMENT, "huber_loss does not support non-positive values for delta.");
    /* F broadcasts input and target first: plain promote_types, no 0-dim
     * priority (the weights are of the input's size) */
    const mtk_tensor *all[4] = { x, y, p->weight, p->pos_weight };
    p->dtype = x->dtype;
    for (int32_t i = 1; i < 4; i++)
        if (all[i]) {
            p->dtype = mtk_promote_types_checked(call->ctx, p->dtype, all[i]->dtype);
            if (p->dtype == MTK_DTYPE_UNDEFINED) return false;
        }
    switch (p->kind) {
    case NN_BCE_LOGITS:
        /* (1 - target).mul_(input).sub_(...).mul_(weight): the target's dtype */
        if (y->dtype == MTK_BOOL)
            return mtk_call_error(call, MTK_ERR_DTYPE,
                                  "Subtraction, the `-` operator, with a bool tensor is not supported. If you are "
                                  "trying to invert a mask, use the `~` or `logical_not()` operator instead.");
        if (!mtk_dtype_is_floating(y->dtype))
            return mtk_call_error(call, MTK_ERR_DTYPE, "result type Float can't be cast to the desired output type %s",
                                  mtk_dtype_cpp_name(y->dtype));
        if (!mtk_dtype_is_floating(x->dtype)) return nn_cpu_dtype_error(call, "log_sigmoid_cpu", x->dtype);
        p->dtype = y->dtype;
        break;
    case NN_BCE:
        if (p->dtype == MTK_BOOL)
            return mtk_call_error(call, MTK_ERR_DTYPE,
                                  "Negation, the `-` operator, on a bool tensor is not supported. If you are trying "
                                  "to invert a mask, use the `~` or `logical_not()` operator instead.");
        break;
    default:
        if (p->dtype == MTK_BOOL)
            return mtk_call_error(call, MTK_ERR_DTYPE,
                                  "Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` "
                                  "or `logical_xor()` operator instead.");
        if (!mtk_dtype_is_floating(p->dtype) && p->reduction == NN_REDUCE_MEAN &&
            (p->kind == NN_MSE || p->kind == NN_L1))
            return mean_dtype_error(call, p->dtype);
        if (!mtk_dtype_is_floating(p->dtype) && p->kind == NN_L1 && p->reduction == NN_REDUCE_SUM)
            p->dtype = MTK_INT64; /* (input - target).abs().sum() */
        break;
    }
    return true;
}

bool mtk_nn_pointwise_loss_meta(mtk_op_call *call)
{
    loss_plan p;
    if (!plan_loss(call, &p)) return false;
    /* torch's cpu huber kernel writes in the input's dtype (only the
     * weight, multiplied after, promotes it); its meta promotes all */
    if (call->device == MTK_DEVICE_CPU && p.kind == NN_HUBER && mtk_dtype_is_floating(p.input->dtype)) {
        p.dtype = p.input->dtype;
        if (p.weight) p.dtype = mtk_promote_types_checked(call->ctx, p.dtype, p.weight->dtype);
        if (p.dtype == MTK_DTYPE_UNDEFINED) return false;
    }
    if (p.reduction != NN_REDUCE_NONE) return nn_set_output(call, p.dtype, NULL, 0, NULL);
    int64_t stride[MTK_MAX_DIMS];
    if (p.kind == NN_BCE_LOGITS) {
        mtk_dense_strides_like(p.target, stride); /* in-place ops on (1 - target) */
    } else if (p.kind == NN_BCE) {
        const mtk_tensor *ops[3] = { p.target, p.input, p.weight }; /* laid out like the target */
        mtk_ti_output_strides(ops, p.weight ? 3 : 2, p.shape, p.ndim, stride);
    } else {
        const mtk_tensor *ops[3] = { p.input, p.target, p.weight };
        mtk_ti_output_strides(ops, p.weight ? 3 : 2, p.shape, p.ndim, stride);
    }
    return nn_set_output(call, p.dtype, p.shape, p.ndim, stride);
}

/* ------------------------------------------------------------ the kernel */

static double log_sigmoid(double x) { return -(fmax(-x, 0.0) + log1p(exp(-fabs(x)))); }

/* log_sigmoid(x) as torch computes it: in the input's dtype */
static double rounded_log_sigmoid(mtk_dtype dtype, double x)
{
    unsigned char element[8];
    mtk_store_f64(dtype, element, log_sigmoid(x));
    return mtk_load_f64(dtype, element);
}

static double element_loss(const loss_plan *p, double x, double y, double pos_weight)
{
    double d = x - y, z = fabs(d);
    switch (p->kind) {
    case NN_MSE: return d * d;
    case NN_L1: return z;
    case NN_SMOOTH_L1: return p->param == 0 ? z : z < p->param ? 0.5 * d * d / p->param : z - 0.5 * p->param;
    case NN_HUBER: return z < p->param ? 0.5 * d * d : p->param * (z - 0.5 * p->param);
    case NN_BCE: return -(y * fmax(log(x), -100.0) + (1 - y) * fmax(log1p(-x), -100.0));
    case NN_BCE_LOGITS: return (1 - y) * x - ((pos_weight - 1) * y + 1) * rounded_log_sigmoid(p->input->dtype, x);
    }
    return NAN;
}

static const char *cpu_kernel_name(nn_loss_kind kind)
{
    switch (kind) {
    case NN_MSE: return "mse_cpu";
    case NN_SMOOTH_L1: return "smooth_l1_cpu";
    case NN_HUBER: return "huber_cpu";
    case NN_BCE: return "binary_cross_entropy";
    case NN_BCE_LOGITS: return "log_sigmoid_cpu";
    default: return "l1_loss";
    }
}

bool mtk_nn_pointwise_loss_cpu(mtk_op_call *call)
{
    loss_plan p;
    if (!plan_loss(call, &p)) return false;
    bool floating = mtk_dtype_is_floating(p.dtype) && !mtk_dtype_is_float8(p.dtype);
    if (!floating && p.kind != NN_L1) return nn_cpu_dtype_error(call, cpu_kernel_name(p.kind), p.dtype);
    if (mtk_dtype_is_float8(p.dtype)) return nn_cpu_dtype_error(call, cpu_kernel_name(p.kind), p.dtype);
    if (p.kind == NN_SMOOTH_L1 && p.param < 0) /* torch's meta does not check */
        return mtk_call_error(call, MTK_ERR_INVALID_ARGUMENT, "smooth_l1_loss does not support negative values for beta.");
    if (p.kind == NN_HUBER && !mtk_dtype_is_floating(p.input->dtype))
        return mtk_call_error(call, MTK_ERR_DTYPE, "result type %s can't be cast to the desired output type %s",
                              mtk_dtype_cpp_name(p.dtype), mtk_dtype_cpp_name(p.input->dtype));
    if (p.kind == NN_BCE && p.target->dtype != p.input->dtype)
        return mtk_call_error(call, MTK_ERR_DTYPE, "Found dtype %s but expected %s", mtk_dtype_cpp_name(p.target->dtype),
                              mtk_dtype_cpp_name(p.input->dtype));
    mtk_ctx *ctx = call->ctx;
    int64_t n = mtk_shape_numel(p.shape, p.ndim);
    double *x = nn_gather_as(ctx, p.input, p.shape, p.ndim), *y = nn_gather_as(ctx, p.target, p.shape, p.ndim);
    double *w = nn_gather_as(ctx, p.weight, p.shape, p.ndim), *pw = nn_gather_as(ctx, p.pos_weight, p.shape, p.ndim);
    bool ok = x && y && (!p.weight || w) && (!p.pos_weight || pw);
    for (int64_t i = 0; ok && p.kind == NN_BCE && i < n; i++)
        if (!(x[i] >= 0 && x[i] <= 1))
            ok = mtk_call_error(call, MTK_ERR_INVALID_ARGUMENT, "all elements of input should be between 0 and 1");
    if (ok) {
        double sum = 0, weight_sum = 0;
        for (int64_t i = 0; i < n; i++) {
            double l = element_loss(&p, x[i], y[i], pw ? pw[i] : 1.0);
            if (!floating) l = x[i] > y[i] ? x[i] - y[i] : y[i] - x[i]; /* integer l1: exact */
            if (w) l *= w[i], weight_sum += w[i];
            x[i] = l;
            sum += l;
        }
        if (p.reduction == NN_REDUCE_NONE) {
            nn_scatter(call->out[0], x);
        } else {
            bool by_weight = w && (p.kind == NN_MSE || p.kind == NN_L1);
            double value = p.reduction == NN_REDUCE_SUM ? sum : by_weight ? sum / weight_sum : sum / (double)n;
            nn_scatter(call->out[0], &value);
        }
    }
    double *buffers[] = { x, y, w, pw };
    for (int32_t i = 0; i < 4; i++) mtk_ctx_mfree(ctx, buffers[i]);
    return ok;
}

/* ------------------------------------------------------------- typed API */

static mtk_tensor *run_loss(mtk_ctx *ctx, mtk_op_id id, mtk_tensor *input, mtk_tensor *target, const char *reduction,
                            int32_t reduction_arg, int32_t param_arg, double param)
{
    mtk_op_call call;
    mtk_op_call_init(&call, ctx, mtk_op_by_id(id));
    call.args[0] = mtk_value_tensor(input);
    call.args[1] = mtk_value_tensor(target);
    call.args[reduction_arg] = mtk_value_string(reduction ? reduction : "mean");
    if (param_arg >= 0) call.args[param_arg] = mtk_value_float(param);
    return mtk_op_run_tensor(&call);
}

mtk_tensor *mtk_mse_loss(mtk_ctx *ctx, mtk_tensor *input, mtk_tensor *target, const char *reduction)
{
    return run_loss(ctx, OPID_MSE_LOSS, input, target, reduction, 4, -1, 0);
}

mtk_tensor *mtk_l1_loss(mtk_ctx *ctx, mtk_tensor *input, mtk_tensor *target, const char *reduction)
{
    return run_loss(ctx, OPID_L1_LOSS, input, target, reduction, 4, -1, 0);
}

mtk_tensor *mtk_smooth_l1_loss(mtk_ctx *ctx, mtk_tensor *input, mtk_tensor *target, const char *reduction, double beta)
{
    return run_loss(ctx, OPID_SMOOTH_L1_LOSS, input, target, reduction, 4, 5, beta);
}

mtk_tensor *mtk_huber_loss(mtk_ctx *ctx, mtk_tensor *input, mtk_tensor *target, const char *reduction, double delta)
{
    return run_loss(ctx, OPID_HUBER_LOSS, input, target, reduction, 2, 3, delta);
}

mtk_tensor *mtk_binary_cross_entropy(mtk_ctx *ctx, mtk_tensor *input, mtk_tensor *target, mtk_tensor *weight,
                                     const char *reduction)
{
    mtk_op_call call;
    mtk_op_call_init(&call, ctx, mtk_op_by_id(OPID_BINARY_CROSS_ENTROPY));
    call.args[0] = mtk_value_tensor(input);
    call.args[1] = mtk_value_tensor(target);
    call.args[2] = weight ? mtk_value_tensor(weight) : mtk_value_none();
    call.args[5] = mtk_value_string(reduction ? reduction : "mean");
    return mtk_op_run_tensor(&call);
}

mtk_tensor *mtk_binary_cross_entropy_with_logits(mtk_ctx *ctx, mtk_tensor *input, mtk_tensor *target,
                                                 mtk_tensor *weight, const char *reduction, mtk_tensor *pos_weight)
{
    mtk_op_call call;
    mtk_op_call_init(&call, ctx, mtk_op_by_id(OPID_BINARY_CROSS_ENTROPY_WITH_LOGITS));
    call.args[0] = mtk_value_tensor(input);
    call.args[1] = mtk_value_tensor(target);
    call.args[2] = weight ? mtk_value_tensor(weight) : mtk_value_none();
    call.args[5] = mtk_value_string(reduction ? reduction : "mean");
    call.args[6] = pos_weight ? mtk_value_tensor(pos_weight) : mtk_value_none();
    return mtk_op_run_tensor(&call);
}
