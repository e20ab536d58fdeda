/* Point-wise losses: F.mse_loss, l1_loss, smooth_l1_loss, huber_loss,
 * binary_cross_entropy and binary_cross_entropy_with_logits.
 *
 * Torch answers these differently per device, and mtk follows each:
 *  - meta runs torch's Python decompositions (mse/smooth_l1/huber/bce
 *    compute in opmath after promotion and cast back; bce_with_logits
 *    casts to the target's dtype; integer inputs are accepted where the
 *    decomposition takes them), and the result's strides are what that
 *    chain of element-wise steps gives (nn_loss_sim.c replays it);
 *  - cpu runs ATen: mse/smooth_l1 one TensorIterator over input and
 *    target, huber and bce write into empty_like(input), bce_with_logits
 *    into (1 - target) with in-place ops (weights must not grow it).
 * F's own steps are common to both: broadcasting input with target,
 * l1_loss as (input - target).abs(), and the mse/l1/huber `weight`
 * (multiplied in; mse/l1 'mean' divides by the weights' sum).  Values are
 * computed in double, rounded wherever torch rounds between its ops. */
#include "ops/nn.h"
#include "ops/nn_loss.h"
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
    nn_loss_kind kind;           /* smooth_l1 with beta 0 is l1, as F runs it */
    int reduction;
    int64_t shape[MTK_MAX_DIMS]; /* element-wise (compute) shape            */
    int32_t ndim;
    mtk_dtype dtype;             /* result dtype                            */
    int64_t out_shape[MTK_MAX_DIMS], out_stride[MTK_MAX_DIMS]; /* 'none'    */
    int32_t out_ndim;
    const mtk_tensor *input, *target, *weight, *pos_weight;
    bool weighted_by_f;          /* mse/l1/huber weight: F multiplies it in */
    mtk_dtype log_weight_dtype;  /* bce_with_logits: (pos_weight - 1) * target */
    mtk_dtype loss_dtype, weighted_dtype; /* F's weighted forms: loss, loss * weight */
    double param;                /* beta or delta                           */
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

static bool integral(mtk_dtype d) { return mtk_dtype_is_integral(d, true); }

/* the dtype of sum(t) */
static mtk_dtype sum_dtype(mtk_dtype d) { return integral(d) ? MTK_INT64 : d; }

/* torch.result_type over two tensors' metadata */
static mtk_dtype result_type2(mtk_op_call *call, const mtk_tensor *a, const mtk_tensor *b)
{
    mtk_value v[2] = { mtk_value_tensor((mtk_tensor *)a), mtk_value_tensor((mtk_tensor *)b) };
    return mtk_result_type(call->ctx, v, 2);
}

/* input - target as torch's sub takes it: never two bools; the cpu kernel
 * refuses any bool operand, the meta device only two */
static bool sub_dtype(mtk_op_call *call, const mtk_tensor *x, const mtk_tensor *y, mtk_dtype *out)
{
    if (x->dtype == MTK_BOOL && y->dtype == MTK_BOOL)
        return mtk_call_error(call, MTK_ERR_DTYPE,
                              "Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` "
                              "or `logical_xor()` operator instead.");
    if (call->device == MTK_DEVICE_CPU && (x->dtype == MTK_BOOL || y->dtype == MTK_BOOL))
        return mtk_call_error(call, MTK_ERR_DTYPE,
                              "Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying "
                              "to invert a mask, use the `~` or `logical_not()` operator instead.");
    *out = result_type2(call, x, y);
    return *out != MTK_DTYPE_UNDEFINED;
}

static void set_out(loss_plan *p, const mtk_tensor *s, mtk_dtype dtype)
{
    p->out_ndim = s->ndim;
    memcpy(p->out_shape, s->shape, sizeof p->out_shape);
    memcpy(p->out_stride, s->stride, sizeof p->out_stride);
    p->dtype = dtype;
}

/* A reduction of an element-wise loss of dtype d: sum -> sum's dtype,
 * mean -> d, refused for integers.  `recast`: torch's decomposition
 * reduces in its compute dtype and casts the result back to d (a float
 * compute dtype, float_inside, also lets an integer mean through). */
static bool reduce_dtype(mtk_op_call *call, loss_plan *p, mtk_dtype d, bool recast, bool float_inside)
{
    if (p->reduction == NN_REDUCE_NONE) return true;
    if (p->reduction == NN_REDUCE_MEAN && integral(d) && !float_inside) return mean_dtype_error(call, d);
    p->dtype = p->reduction == NN_REDUCE_SUM && !recast ? sum_dtype(d) : d;
    return true;
}

/* torch's meta decompositions of mse_loss, smooth_l1_loss and huber_loss:
 * computed in opmath after promotion, (input - target) then one unary
 * step (pow / abs ...), cast back to the promoted dtype */
static bool opmath_difference_loss(mtk_op_call *call, const mtk_tensor *xe, const mtk_tensor *ye, mtk_tensor *out)
{
    mtk_dtype rd = result_type2(call, xe, ye);
    if (rd == MTK_DTYPE_UNDEFINED) return false;
    if (rd == MTK_BOOL) return sub_dtype(call, xe, ye, &rd);
    mtk_dtype cd = nn_opmath_dtype(rd);
    mtk_tensor a = nn_sim_to(xe, cd), b = nn_sim_to(ye, cd), d;
    if (!nn_sim_ew(call, cd, &a, &b, &d) || !nn_sim_ew(call, cd, &d, NULL, out)) return false;
    *out = nn_sim_to(out, rd);
    return true;
}

/* (input - target) then a unary step, as torch's composite l1_loss (and
 * F's weighted forms) compute it on either device */
static bool difference_loss(mtk_op_call *call, const mtk_tensor *xe, const mtk_tensor *ye, mtk_tensor *out)
{
    mtk_dtype d = MTK_DTYPE_UNDEFINED;
    mtk_tensor diff;
    if (!sub_dtype(call, xe, ye, &d)) return false;
    return nn_sim_ew(call, d, xe, ye, &diff) && nn_sim_ew(call, d, &diff, NULL, out);
}

/* huber_loss(reduction='none') as each device lays it out */
static bool huber_none(mtk_op_call *call, const mtk_tensor *xe, const mtk_tensor *ye, mtk_tensor *out)
{
    if (call->device != MTK_DEVICE_CPU) return opmath_difference_loss(call, xe, ye, out);
    /* the cpu kernel writes into empty_like(input) */
    if (!mtk_dtype_is_floating(xe->dtype))
        return mtk_call_error(call, MTK_ERR_DTYPE, "\"huber_cpu\" not implemented for '%s'", mtk_dtype_cpp_name(xe->dtype));
    *out = nn_sim_to(xe, MTK_DTYPE_UNDEFINED);
    out->dtype = xe->dtype;
    return true;
}

/* mse/l1/huber with a weight: F multiplies the unreduced loss by it,
 * then sums (mse/l1 'mean' divides by the weights' sum) or takes mean */
static bool weighted_by_f(mtk_op_call *call, loss_plan *p, const mtk_tensor *xe, const mtk_tensor *ye)
{
    mtk_tensor loss, w = nn_sim_of(p->weight), l;
    if (!(p->kind == NN_HUBER ? huber_none(call, xe, ye, &loss) : difference_loss(call, xe, ye, &loss))) return false;
    mtk_dtype d = result_type2(call, &loss, &w);
    if (d == MTK_DTYPE_UNDEFINED || !nn_sim_ew(call, d, &loss, &w, &l)) return false;
    p->loss_dtype = loss.dtype;
    p->weighted_dtype = d;
    set_out(p, &l, d);
    if (p->reduction == NN_REDUCE_NONE) return true;
    if (p->reduction == NN_REDUCE_SUM || p->kind != NN_HUBER) p->dtype = sum_dtype(d);
    if (p->reduction == NN_REDUCE_MEAN && p->kind == NN_HUBER) return reduce_dtype(call, p, d, false, false);
    if (p->reduction == NN_REDUCE_MEAN) { /* sum(loss) / sum(weight): true division */
        mtk_dtype ws = sum_dtype(p->weight->dtype);
        p->dtype = integral(p->dtype) && integral(ws) ? mtk_ctx_dtype(call->ctx)
                                                      : mtk_promote_types_checked(call->ctx, p->dtype, ws);
        if (p->dtype == MTK_DTYPE_UNDEFINED) return false;
    }
    return true;
}

/* torch's meta decomposition of binary_cross_entropy, step by step */
static bool bce_meta(mtk_op_call *call, loss_plan *p)
{
    mtk_value v[3] = { mtk_value_tensor((mtk_tensor *)p->input), mtk_value_tensor((mtk_tensor *)p->target),
                       p->weight ? mtk_value_tensor((mtk_tensor *)p->weight) : mtk_value_none() };
    mtk_dtype rd = mtk_meta_result_type(call->ctx, v, p->weight ? 3 : 2);
    if (rd == MTK_DTYPE_UNDEFINED) return false;
    if (rd == MTK_BOOL)
        return mtk_call_error(call, MTK_ERR_DTYPE,
                              "Negation, the `-` operator, on a bool tensor is not supported. If you are trying "
                              "to invert a mask, use the `~` or `logical_not()` operator instead.");
    mtk_dtype cd = nn_opmath_dtype(rd);
    mtk_tensor x = nn_sim_to(p->input, cd), y = nn_sim_to(p->target, cd), full = nn_sim_scalar(call->device, cd);
    mtk_tensor t1, n1, l1, m1, left, l2, m2, right, loss;
    bool ok = nn_sim_ew(call, cd, &y, NULL, &t1) && nn_sim_ew(call, cd, &x, NULL, &n1) &&
              nn_sim_ew(call, cd, &n1, NULL, &l1) && nn_sim_ew(call, cd, &l1, &full, &m1) &&
              nn_sim_ew(call, cd, &t1, &m1, &left) && nn_sim_ew(call, cd, &x, NULL, &l2) &&
              nn_sim_ew(call, cd, &l2, &full, &m2) && nn_sim_ew(call, cd, &y, &m2, &right) &&
              nn_sim_ew(call, cd, &left, &right, &loss);
    if (ok && p->weight) {
        mtk_tensor w = nn_sim_to(p->weight, cd), l = loss;
        ok = nn_sim_ew(call, cd, &l, &w, &loss);
    }
    if (!ok) return false;
    loss = nn_sim_to(&loss, rd);
    set_out(p, &loss, rd);
    return reduce_dtype(call, p, rd, true, true); /* log() makes floats */
}

/* one element-wise step of torch's dtype (a Python number in it: NULL) */
static bool step(mtk_op_call *call, const mtk_tensor *a, const mtk_tensor *b, mtk_tensor *out)
{
    mtk_dtype d = b ? result_type2(call, a, b) : a->dtype;
    return d != MTK_DTYPE_UNDEFINED && nn_sim_ew(call, d, a, b, out);
}

/* torch's meta decomposition of binary_cross_entropy_with_logits:
 * (1 - target) * input - [log_weight *] logsigmoid(input) [* weight],
 * cast to the target's dtype; weights broadcast freely */
static bool bce_logits_meta(mtk_op_call *call, loss_plan *p)
{
    mtk_tensor x = nn_sim_of(p->input), y = nn_sim_of(p->target), t1, t2, ls, c, loss;
    mtk_dtype d = y.dtype;
    bool ok = step(call, &y, NULL, &t1) && step(call, &t1, &x, &t2) && step(call, &x, NULL, &ls);
    if (ok && p->pos_weight) {
        mtk_tensor pw = nn_sim_of(p->pos_weight), p1, p2, lw;
        ok = step(call, &pw, NULL, &p1) && step(call, &p1, &y, &p2) && step(call, &p2, NULL, &lw) &&
             step(call, &lw, &ls, &c);
    } else {
        c = ls;
    }
    ok = ok && step(call, &t2, &c, &loss);
    if (ok && p->weight) {
        mtk_tensor w = nn_sim_of(p->weight), l = loss;
        ok = step(call, &l, &w, &loss);
    }
    if (!ok) return false;
    loss = nn_sim_to(&loss, d);
    set_out(p, &loss, d);
    return reduce_dtype(call, p, d, false, false);
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
    if (p->kind == NN_SMOOTH_L1 && p->param == 0) p->kind = NN_L1; /* F.smooth_l1_loss runs l1_loss */
    p->weighted_by_f = p->weight && (p->kind == NN_MSE || p->kind == NN_L1 || p->kind == NN_HUBER);
    bool cpu = call->device == MTK_DEVICE_CPU;
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
    if (p->weighted_by_f && !same_shape(p->weight, x))
        return mtk_call_error(call, MTK_ERR_SHAPE, "Weights and input must have the same size.");
    if (p->kind == NN_HUBER && !(p->param > 0))
        return mtk_call_error(call, MTK_ERR_INVALID_ARGUMENT, "huber_loss does not support non-positive values for delta.");
    /* F broadcasts input and target first */
    mtk_tensor xe = nn_sim_expand(x, p->shape, p->ndim), ye = nn_sim_expand(y, p->shape, p->ndim), s;
    mtk_dtype d = MTK_DTYPE_UNDEFINED;
    if (p->weighted_by_f) return weighted_by_f(call, p, &xe, &ye);
    switch (p->kind) {
    case NN_L1:
        if (!difference_loss(call, &xe, &ye, &s)) return false;
        p->loss_dtype = s.dtype;
        set_out(p, &s, s.dtype);
        return reduce_dtype(call, p, s.dtype, false, false);
    case NN_MSE:
    case NN_SMOOTH_L1:
    case NN_HUBER:
        if (!cpu) {
            if (!opmath_difference_loss(call, &xe, &ye, &s)) return false;
            set_out(p, &s, s.dtype);
            /* smooth_l1 and huber multiply by Python floats before reducing */
            return reduce_dtype(call, p, s.dtype, true, p->kind != NN_MSE);
        }
        if (p->kind == NN_HUBER) {
            if (!huber_none(call, &xe, &ye, &s)) return false;
        } else {
            /* one TensorIterator over input and target */
            d = result_type2(call, &xe, &ye);
            if (d == MTK_DTYPE_UNDEFINED) return false;
            if (d == MTK_BOOL) return sub_dtype(call, &xe, &ye, &d);
            if (!nn_sim_ew(call, d, &xe, &ye, &s)) return false;
        }
        set_out(p, &s, s.dtype);
        return reduce_dtype(call, p, s.dtype, true, false);
    case NN_BCE:
        if (!cpu) return bce_meta(call, p);
        /* at::binary_cross_entropy: empty_like(input), then loss.mul_(weight) */
        if (p->weight && !fits_into(call, p->weight, p->shape, p->ndim)) return false;
        if (x->dtype == MTK_BOOL)
            return mtk_call_error(call, MTK_ERR_DTYPE,
                                  "Negation, the `-` operator, on a bool tensor is not supported. If you are trying "
                                  "to invert a mask, use the `~` or `logical_not()` operator instead.");
        s = nn_sim_to(&xe, MTK_DTYPE_UNDEFINED);
        set_out(p, &s, x->dtype);
        return reduce_dtype(call, p, x->dtype, true, false);
    case NN_BCE_LOGITS:
        if (x->dtype == MTK_BOOL) /* logsigmoid negates it */
            return mtk_call_error(call, MTK_ERR_DTYPE,
                                  "Negation, the `-` operator, on a bool tensor is not supported. If you are trying "
                                  "to invert a mask, use the `~` or `logical_not()` operator instead.");
        if (y->dtype == MTK_BOOL)
            return mtk_call_error(call, MTK_ERR_DTYPE,
                                  "Subtraction, the `-` operator, with a bool tensor is not supported. If you are "
                                  "trying to invert a mask, use the `~` or `logical_not()` operator instead.");
        if (!cpu) return bce_logits_meta(call, p);
        /* (1 - target).mul_(input).sub_(...).mul_(weight): the target's dtype and layout */
        if (p->weight && !fits_into(call, p->weight, p->shape, p->ndim)) return false;
        if (p->pos_weight && !fits_into(call, p->pos_weight, p->shape, p->ndim)) return false;
        if (p->pos_weight && (p->log_weight_dtype = result_type2(call, p->pos_weight, y)) == MTK_DTYPE_UNDEFINED)
            return false;
        if (!mtk_dtype_is_floating(y->dtype))
            return mtk_call_error(call, MTK_ERR_DTYPE, "result type Float can't be cast to the desired output type %s",
                                  mtk_dtype_cpp_name(y->dtype));
        if (!mtk_dtype_is_floating(x->dtype)) return nn_cpu_dtype_error(call, "log_sigmoid_cpu", x->dtype);
        s = nn_sim_to(&ye, MTK_DTYPE_UNDEFINED);
        set_out(p, &s, y->dtype);
        return reduce_dtype(call, p, y->dtype, false, false);
    }
    return false;
}

bool mtk_nn_pointwise_loss_meta(mtk_op_call *call)
{
    loss_plan p;
    if (!plan_loss(call, &p)) return false;
    if (p.reduction != NN_REDUCE_NONE) return nn_set_output(call, p.dtype, NULL, 0, NULL);
    return nn_set_output(call, p.dtype, p.out_shape, p.out_ndim, p.out_stride);
}

/* ------------------------------------------------------------ the kernel */

static double log_sigmoid(double x) { return -(fmax(-x, 0.0) + log1p(exp(-fabs(x)))); }

/* v stored into and read back from a tensor of `dtype` */
static double rounded(mtk_dtype dtype, double v)
{
    if (dtype == MTK_FLOAT64) return v;
    if (dtype == MTK_FLOAT32) return (double)(float)v;
    if (mtk_dtype_is_integral(dtype, false)) { /* integer arithmetic wraps */
        int64_t i = (int64_t)v;
        switch (dtype) {
        case MTK_UINT8: return (double)(uint8_t)i;
        case MTK_INT8: return (double)(int8_t)i;
        case MTK_INT16: return (double)(int16_t)i;
        case MTK_INT32: return (double)(int32_t)i;
        default: return (double)i;
        }
    }
    unsigned char element[8];
    mtk_store_f64(dtype, element, v);
    return mtk_load_f64(dtype, element);
}

/* torch's cpu binary_cross_entropy_with_logits, one ATen op after another,
 * each rounding into its tensor's dtype:
 *   ls = log_sigmoid(input);  ls.mul_((pos_weight - 1).mul(target).add_(1))
 *   loss = (1 - target).mul_(input).sub_(ls) */
static double bce_logits_element(const loss_plan *p, double x, double y, double pos_weight)
{
    mtk_dtype xd = p->input->dtype, yd = p->target->dtype;
    /* float32 (and float16/bfloat16, through float): SLEEF's exp and log1p */
    double ls = xd == MTK_FLOAT64 ? log_sigmoid(x) : rounded(xd, nn_log_sigmoid_f32((float)x));
    if (p->pos_weight) {
        double lw = rounded(p->pos_weight->dtype, pos_weight - 1);
        lw = rounded(p->log_weight_dtype, lw * y);
        lw = rounded(p->log_weight_dtype, lw + 1);
        ls = rounded(xd, ls * lw);
    }
    double loss = rounded(yd, 1 - y);
    loss = rounded(yd, loss * x);
    return rounded(yd, loss - ls);
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
    case NN_BCE_LOGITS: return bce_logits_element(p, x, y, pos_weight);
    }
    return NAN;
}

/* torch's t.sum() (mean: t.mean(), the sum divided by the count; float16
 * and bfloat16 summed and divided in float32) of a tensor of `dtype`
 * holding `values`, laid out by `stride` */
static bool torch_reduce(mtk_ctx *ctx, const double *values, const int64_t *shape, const int64_t *stride, int32_t ndim,
                         mtk_dtype dtype, bool mean, double *out)
{
    int64_t n = mtk_shape_numel(shape, ndim);
    if (!mtk_dtype_is_floating(dtype)) { /* integers add exactly */
        double sum = 0;
        for (int64_t i = 0; i < n; i++) sum += values[i];
        *out = mean ? sum / (double)n : sum;
        return true;
    }
    mtk_dtype sum_in = mean && (dtype == MTK_FLOAT16 || dtype == MTK_BFLOAT16) ? MTK_FLOAT32 : dtype;
    if (!nn_torch_sum(ctx, values, shape, stride, ndim, sum_in, out)) return false;
    if (mean) *out = rounded(sum_in, *out / (double)n);
    return true;
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
    /* l1 and F's weighted forms are composites of sub/abs/pow/mul/sum,
     * which take integers */
    bool integer_ok = p.kind == NN_L1 || p.weighted_by_f;
    if (!floating && !integer_ok) return nn_cpu_dtype_error(call, cpu_kernel_name(p.kind), p.dtype);
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
        for (int64_t i = 0; i < n; i++) {
            double l;
            if (p.weighted_by_f) {
                /* F: sub, pow/abs (or huber_loss), mul: one rounding each */
                double e = rounded(p.loss_dtype, x[i] - y[i]);
                l = p.kind == NN_MSE ? rounded(p.loss_dtype, e * e)
                    : p.kind == NN_L1 ? fabs(e)
                    : rounded(p.loss_dtype, element_loss(&p, x[i], y[i], 1.0));
                l = rounded(p.weighted_dtype, l * w[i]);
            } else if (p.kind == NN_L1) { /* (input - target).abs() */
                l = rounded(p.loss_dtype, fabs(rounded(p.loss_dtype, x[i] - y[i])));
            } else if (p.kind == NN_MSE) { /* diff = a - b; diff * diff, in the dtype */
                double e = rounded(p.dtype, x[i] - y[i]);
                l = rounded(p.dtype, e * e);
            } else {
                l = rounded(p.dtype, element_loss(&p, x[i], y[i], pw ? pw[i] : 1.0));
                if (w) l = rounded(p.dtype, l * w[i]); /* loss.mul_(weight) */
            }
            x[i] = l;
        }
        if (p.reduction == NN_REDUCE_NONE) {
            nn_scatter(call->out[0], x);
        } else {
            /* the unreduced loss, laid out as 'none' lays it out */
            mtk_dtype ld = p.weighted_by_f ? p.weighted_dtype : p.dtype;
            double value = 0;
            if (p.weighted_by_f && p.kind != NN_HUBER && p.reduction == NN_REDUCE_MEAN) {
                /* torch.sum(loss) / torch.sum(weight), the weight as given */
                double weight_sum = 0, *wv = nn_gather(ctx, p.weight);
                ok = wv && torch_reduce(ctx, x, p.out_shape, p.out_stride, p.out_ndim, ld, false, &value) &&
                     torch_reduce(ctx, wv, p.weight->shape, p.weight->stride, p.weight->ndim, p.weight->dtype, false,
                                  &weight_sum);
                value = rounded(p.dtype, rounded(sum_dtype(ld), value) / rounded(sum_dtype(p.weight->dtype), weight_sum));
                mtk_ctx_mfree(ctx, wv);
            } else {
                ok = torch_reduce(ctx, x, p.out_shape, p.out_stride, p.out_ndim, ld, p.reduction == NN_REDUCE_MEAN,
                                  &value);
            }
            if (ok) nn_scatter(call->out[0], &value);
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
