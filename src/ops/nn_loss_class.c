/* F.nll_loss and F.cross_entropy.
 *
 * Input (C), (N, C) or (N, C, d1, ...); class-index targets (), (N) or
 * (N, d1, ...) with torch's checks and words (nll_loss_nd: 1-D/2-D go to
 * nll_loss, 4-D to nll_loss2d, others are reshaped to 4-D after a target
 * size check).  cross_entropy also takes class-probability targets (a
 * floating target of the input's shape) and label smoothing, as torch's
 * cross_entropy_loss composes them.  'mean' of class indices divides by
 * the summed weights of the targets that are not ignore_index (NaN when
 * that is 0).  On meta, torch's decompositions set the dtype: integer
 * inputs are taken (sum: int64, mean or label smoothing: the default
 * float dtype), input * weight promotes, and a 3-D+ input's weight only
 * has to broadcast; the cpu kernels want floating inputs and one weight
 * of the input's dtype per class.  Values in double, rounded where torch
 * rounds (its float16/bfloat16 last-dim log_softmax rounds twice more). */
#include "ops/nn.h"
#include "ops/op_util.h"
#include "ops/registry.h"
#include "ops/elementwise.h"
#include "mtk/ops/nn.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

enum { ARG_INPUT, ARG_TARGET, ARG_WEIGHT, ARG_SIZE_AVERAGE, ARG_IGNORE, ARG_REDUCE, ARG_REDUCTION, ARG_SMOOTHING };

typedef struct class_plan {
    int reduction;
    bool probabilities;         /* cross_entropy with a probability target */
    int32_t class_dim;          /* 0 for a 1-D input, else 1                */
    int64_t classes, outer, inner; /* input as (outer, classes, inner)      */
    int64_t shape[MTK_MAX_DIMS];/* the 'none' output shape                  */
    int32_t ndim;
    mtk_dtype dtype;
    double smoothing;
} class_plan;

static bool index_dtype_ok(mtk_dtype d, bool cpu)
{
    return d == MTK_INT64 || d == MTK_UINT8 || (!cpu && d == MTK_INT32);
}

/* nll_loss_nd's checks for class-index targets. */
static bool plan_nll(mtk_op_call *call, const mtk_tensor *x, const mtk_tensor *t, const mtk_tensor *w, class_plan *p)
{
    char a[256], b[256];
    if (x->ndim < 1) return mtk_call_error(call, MTK_ERR_SHAPE, "Expected 1 or more dimensions (got 0)");
    if (x->ndim != 1 && (t->ndim < 1 || x->shape[0] != t->shape[0]))
        return mtk_call_error(call, MTK_ERR_SHAPE, "Expected input batch_size (%lld) to match target batch_size (%lld).",
                              (long long)x->shape[0], (long long)(t->ndim ? t->shape[0] : 1));
    if (x->ndim <= 2) {
        if (t->ndim > 1)
            return mtk_call_error(call, MTK_ERR_SHAPE, "0D or 1D target tensor expected, multi-target not supported");
        /* a 1-D input with a 1-D target: torch's cpu takes a target of
         * one element as its 0-D form; its meta decomposition gathers
         * with it and refuses it whatever its size */
        bool one_d = x->ndim == 1 && t->ndim == 1;
        if (one_d && call->device == MTK_DEVICE_CPU && t->shape[0] != 1)
            return mtk_call_error(call, MTK_ERR_SHAPE, "For 1D input, 1D target must have size 1, but got target size: %lld",
                                  (long long)t->shape[0]);
        bool cpu_one_d = one_d && call->device == MTK_DEVICE_CPU;
        if (!(x->ndim == 1 && t->ndim == 0) && !cpu_one_d && x->shape[0] != t->shape[0])
            return mtk_call_error(call, MTK_ERR_SHAPE, "size mismatch (got input: %s, target: %s)",
                                  mtk_shape_list_str(x->shape, x->ndim, a, sizeof a),
                                  mtk_shape_list_str(t->shape, t->ndim, b, sizeof b));
        if (one_d && !cpu_one_d)
            return mtk_call_error(call, MTK_ERR_INVALID_ARGUMENT,
                                  "Index tensor must have the same number of dimensions as input tensor");
        int64_t classes = x->shape[x->ndim - 1];
        if (w && !(w->ndim == 1 && w->shape[0] == classes))
            return mtk_call_error(call, MTK_ERR_SHAPE,
                                  "weight tensor should be defined either for all %lld classes or no classes but got "
                                  "weight tensor of shape: %s",
                                  (long long)classes, mtk_shape_list_str(w->shape, w->ndim, a, sizeof a));
    } else {
        // (N, C, d1, ...): the target must be (N, d1, ...)
        int64_t want[MTK_MAX_DIMS];
        want[0] = x->shape[0];
        memcpy(want + 1, x->shape + 2, (size_t)(x->ndim - 2) * sizeof *want);
        bool fits = t->ndim == x->ndim - 1 && memcmp(t->shape, want, (size_t)t->ndim * sizeof *want) == 0;
        if (x->ndim != 4 && !fits)
            return mtk_call_error(call, MTK_ERR_SHAPE, "Expected target size %s, got %s",
                                  mtk_shape_list_str(want, x->ndim - 1, a, sizeof a),
                                  mtk_shape_list_str(t->shape, t->ndim, b, sizeof b));
        if (x->ndim == 4 && t->ndim != 3)
            return mtk_call_error(call, MTK_ERR_SHAPE,
                                  "only batches of spatial targets supported (3D tensors) but got targets of dimension: %d",
                                  (int)t->ndim);
        /* the cpu kernel wants a weight per class; torch's meta
         * decomposition multiplies the input by weight.view(1, K, 1, ...),
         * which only has to broadcast */
        int64_t k = w && w->ndim ? w->shape[0] : -1, c = x->shape[1];
        bool meta_ok = k >= 0 && mtk_tensor_numel(w) == k && (k == c || k == 1 || c == 1);
        if (w && (call->device == MTK_DEVICE_CPU ? mtk_tensor_numel(w) != c : !meta_ok))
            return mtk_call_error(call, MTK_ERR_SHAPE, "weight tensor should be defined either for all or no classes");
        if (!fits)
            return mtk_call_error(call, MTK_ERR_SHAPE,
                                  "input and target batch or spatial sizes don't match: target %s, input %s",
                                  mtk_shape_list_str(t->shape, t->ndim, a, sizeof a),
                                  mtk_shape_list_str(x->shape, x->ndim, b, sizeof b));
    }
    if (!index_dtype_ok(t->dtype, false))
        return mtk_call_error(call, MTK_ERR_DTYPE, "expected target dtype to be Long or Byte, but got %s",
                              mtk_dtype_cpp_name(t->dtype));
    p->dtype = x->dtype;
    // 'none' output: the target's shape (a 1-D input gives a 0-dim loss)
    p->ndim = x->ndim == 1 ? 0 : t->ndim;
    memcpy(p->shape, t->shape, (size_t)p->ndim * sizeof *p->shape);
    return true;
}

static bool plan_class_loss(mtk_op_call *call, bool cross_entropy, class_plan *p)
{
    const mtk_tensor *x = arg_tensor(call, ARG_INPUT), *t = arg_tensor(call, ARG_TARGET);
    const mtk_tensor *w = arg_tensor(call, ARG_WEIGHT);
    memset(p, 0, sizeof *p);
    p->reduction = nn_reduction_arg(call, ARG_REDUCTION, ARG_SIZE_AVERAGE, ARG_REDUCE);
    if (p->reduction < 0) return false;
    p->smoothing = cross_entropy ? call->args[ARG_SMOOTHING].as.f : 0.0;
    p->class_dim = x->ndim == 1 ? 0 : 1;
    p->probabilities = cross_entropy && x->ndim == t->ndim &&
                       memcmp(x->shape, t->shape, (size_t)x->ndim * sizeof *x->shape) == 0;
    if (p->probabilities) {
        char a[256];
        if (!mtk_dtype_is_floating(t->dtype))
            return mtk_call_error(call, MTK_ERR_DTYPE, "Expected floating point type for target with class probabilities, got %s",
                                  mtk_dtype_cpp_name(t->dtype));
        if (arg_int(call, ARG_IGNORE) >= 0)
            return mtk_call_error(call, MTK_ERR_INVALID_ARGUMENT, "ignore_index is not supported for floating point target");
        if (!(p->smoothing >= 0.0 && p->smoothing <= 1.0))
            return mtk_call_error(call, MTK_ERR_INVALID_ARGUMENT, "label_smoothing must be between 0.0 and 1.0. Got: %g",
                                  p->smoothing);
        if (x->ndim == 0) return mtk_call_error(call, MTK_ERR_INDEX,
                                                "Dimension out of range (expected to be in range of [-1, 0], but got 1)");
        int64_t classes = x->shape[p->class_dim];
        if (w && !(w->ndim == 1 && w->shape[0] == classes))
            return mtk_call_error(call, MTK_ERR_SHAPE,
                                  "cross_entropy: weight tensor should be defined either for all %lld classes or no "
                                  "classes but got weight tensor of shape: %s",
                                  (long long)classes, mtk_shape_list_str(w->shape, w->ndim, a, sizeof a));
        mtk_value values[3] = { mtk_value_tensor((mtk_tensor *)x), mtk_value_tensor((mtk_tensor *)t),
                                w ? mtk_value_tensor((mtk_tensor *)w) : mtk_value_none() };
        p->dtype = mtk_result_type(call->ctx, values, 3);
        if (p->dtype == MTK_DTYPE_UNDEFINED) return false;
        // 'none': the input without its class dim
        p->ndim = 0;
        for (int32_t i = 0; i < x->ndim; i++)
            if (i != p->class_dim) p->shape[p->ndim++] = x->shape[i];
    } else {
        if (cross_entropy && p->smoothing > 1.0)
            return mtk_call_error(call, MTK_ERR_INVALID_ARGUMENT, "label_smoothing must be between 0.0 and 1.0. Got: %g",
                                  p->smoothing);
        if (!plan_nll(call, x, t, w, p)) return false;
        /* torch's cpu: the label-smoothing term keeps the 1-element
         * target's shape and does not fit the 0-D loss it is added to */
        if (cross_entropy && p->smoothing > 0 && call->device == MTK_DEVICE_CPU && x->ndim == 1 && t->ndim == 1)
            return mtk_call_error(call, MTK_ERR_SHAPE, "output with shape [] doesn't match the broadcast shape [1]");
    }
    bool cpu = call->device == MTK_DEVICE_CPU;
    if (!p->probabilities) {
        /* nll_loss_forward's decomposition: input * weight, negated,
         * summed (integers: int64) or divided by the total weight (true
         * division); label smoothing mixes in Python floats */
        mtk_dtype d = w ? mtk_promote_types_checked(call->ctx, x->dtype, w->dtype) : x->dtype;
        if (d == MTK_DTYPE_UNDEFINED) return false;
        if (cross_entropy && x->dtype == MTK_BOOL)
            return mtk_call_error(call, MTK_ERR_DTYPE,
                                  "Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` "
                                  "or `logical_xor()` operator instead.");
        if (d == MTK_BOOL)
            return mtk_call_error(call, MTK_ERR_DTYPE,
                                  "Negation, the `-` operator, on a bool tensor is not supported. If you are trying to "
                                  "invert a mask, use the `~` or `logical_not()` operator instead.");
        bool whole = mtk_dtype_is_integral(d, true);
        if (whole && (p->reduction == NN_REDUCE_MEAN || (cross_entropy && p->smoothing > 0)))
            d = mtk_ctx_dtype(call->ctx);
        else if (whole && p->reduction == NN_REDUCE_SUM)
            d = MTK_INT64;
        p->dtype = d;
    } else if (x->dtype == MTK_BOOL) {
        return mtk_call_error(call, MTK_ERR_DTYPE,
                              "Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` "
                              "or `logical_xor()` operator instead.");
    }
    /* torch's meta takes integer inputs; its cpu kernels do not */
    if (!mtk_dtype_is_floating(x->dtype) && cpu)
        return mtk_call_error(call, MTK_ERR_DTYPE, "\"%s\" not implemented for '%s'",
                              cross_entropy ? "log_softmax_lastdim_kernel_impl" : "nll_loss_forward_reduce_cuda_kernel_2d_index",
                              mtk_dtype_cpp_name(x->dtype));
    p->classes = x->shape[p->class_dim];
    p->outer = p->class_dim == 1 ? x->shape[0] : 1;
    p->inner = nn_prod(x->shape, p->class_dim + 1, x->ndim);
    return true;
}

static bool class_meta(mtk_op_call *call, bool cross_entropy)
{
    class_plan p;
    if (!plan_class_loss(call, cross_entropy, &p)) return false;
    if (p.reduction != NN_REDUCE_NONE) return nn_set_output(call, p.dtype, NULL, 0, NULL);
    return nn_set_output(call, p.dtype, p.shape, p.ndim, NULL);
}

bool mtk_nn_nll_loss_meta(mtk_op_call *call) { return class_meta(call, false); }
bool mtk_nn_cross_entropy_meta(mtk_op_call *call) { return class_meta(call, true); }

/* ------------------------------------------------------------ the kernel */

/* log_softmax over the classes of x viewed as (outer, classes, inner),
 * rounded into `dtype` as torch's cpu kernels round it: in general once;
 * float16/bfloat16 over the last dim (its vectorized kernel) with the sum
 * of exponentials and its log each rounded to the dtype first, the
 * exponentials and the last subtraction in float32 */
static void log_softmax_classes(double *x, const class_plan *p, mtk_dtype dtype, bool last_dim)
{
    bool reduced = (dtype == MTK_FLOAT16 || dtype == MTK_BFLOAT16) && last_dim;
    for (int64_t o = 0; o < p->outer; o++)
        for (int64_t i = 0; i < p->inner; i++) {
            double *v = x + o * p->classes * p->inner + i;
            double max = -INFINITY, sum = 0;
            for (int64_t c = 0; c < p->classes; c++)
                if (v[c * p->inner] > max || isnan(v[c * p->inner])) max = v[c * p->inner];
            if (max == -INFINITY) max = 0;
            if (reduced) {
                for (int64_t c = 0; c < p->classes; c++) sum += expf((float)(v[c * p->inner] - max));
                float log_sum = (float)nn_rounded(dtype, logf((float)nn_rounded(dtype, (double)(float)sum)));
                for (int64_t c = 0; c < p->classes; c++)
                    v[c * p->inner] = nn_rounded(dtype, (double)((float)(v[c * p->inner] - max) - log_sum));
                continue;
            }
            for (int64_t c = 0; c < p->classes; c++) sum += exp(v[c * p->inner] - max);
            double lse = max + log(sum);
            for (int64_t c = 0; c < p->classes; c++) v[c * p->inner] = nn_rounded(dtype, v[c * p->inner] - lse);
        }
}

/* torch's nll_loss / nll_loss2d cpu kernels reduce in the input's dtype
 * with running sums in 8 levels: each step adds into level 0, and after
 * step r level j moves up into level j + 1 while r's bits of level j
 * (groups of max(4, ceil(log2(steps)) / 8) bits) are all 0; ignored
 * targets take no step.  The levels are added up in order at the end. */
#define NLL_LEVELS 8

typedef struct nll_cascade {
    mtk_dtype dtype;
    int64_t power, mask;
    double loss[NLL_LEVELS], weight[NLL_LEVELS];
} nll_cascade;

static void cascade_init(nll_cascade *c, mtk_dtype dtype, int64_t steps)
{
    memset(c, 0, sizeof *c);
    c->dtype = dtype;
    int64_t log2 = 0;
    while (((int64_t)1 << log2) < steps) log2++;
    c->power = log2 / NLL_LEVELS > 4 ? log2 / NLL_LEVELS : 4;
    c->mask = ((int64_t)1 << c->power) - 1;
}

/* step r: loss -= term, weight += w (each rounded to the dtype) */
static void cascade_step(nll_cascade *c, int64_t r, double term, double w)
{
    c->loss[0] = nn_rounded(c->dtype, c->loss[0] - term);
    c->weight[0] = nn_rounded(c->dtype, c->weight[0] + w);
    for (int64_t j = 0; j + 1 < NLL_LEVELS; j++) {
        if ((r & (c->mask << (j * c->power))) != 0) break;
        c->weight[j + 1] = nn_rounded(c->dtype, c->weight[j + 1] + c->weight[j]);
        c->loss[j + 1] = nn_rounded(c->dtype, c->loss[j + 1] + c->loss[j]);
        c->weight[j] = c->loss[j] = 0;
    }
}

static double cascade_total(const nll_cascade *c, const double *levels)
{
    double total = 0;
    for (int32_t j = 0; j < NLL_LEVELS; j++) total = nn_rounded(c->dtype, total + levels[j]);
    return total;
}

/* the class-dim sum of one row of n values (step apart), as a dim
 * reduction adds it: in double for float64, else in float, rounded once */
static double class_sum(mtk_dtype dtype, const double *v, int64_t n, int64_t step)
{
    double s = 0;
    for (int64_t c = 0; c < n; c++) s = dtype == MTK_FLOAT64 ? s + v[c * step] : (double)(float)(s + v[c * step]);
    return nn_rounded(dtype, s);
}

static bool class_cpu(mtk_op_call *call, bool cross_entropy)
{
    class_plan p;
    if (!plan_class_loss(call, cross_entropy, &p)) return false;
    const mtk_tensor *x_t = arg_tensor(call, ARG_INPUT), *t_t = arg_tensor(call, ARG_TARGET);
    const mtk_tensor *w_t = arg_tensor(call, ARG_WEIGHT);
    if (mtk_dtype_is_float8(p.dtype)) return nn_cpu_dtype_error(call, "log_softmax_lastdim_kernel_impl", p.dtype);
    if (!p.probabilities && !index_dtype_ok(t_t->dtype, true))
        return mtk_call_error(call, MTK_ERR_DTYPE, "expected target dtype to be Long or Byte, but got %s",
                              mtk_dtype_cpp_name(t_t->dtype));
    if (w_t && w_t->dtype != x_t->dtype && !p.probabilities)
        return mtk_call_error(call, MTK_ERR_DTYPE, "expected scalar type %s but found %s", mtk_dtype_cpp_name(x_t->dtype),
                              mtk_dtype_cpp_name(w_t->dtype));
    mtk_ctx *ctx = call->ctx;
    int64_t rows = p.outer * p.inner; /* one loss per (outer, inner) */
    double *x = nn_gather(ctx, x_t), *t = nn_gather(ctx, t_t), *w = nn_gather(ctx, w_t);
    double *loss = nn_alloc(ctx, rows);
    bool ok = x && t && loss && (!w_t || w);
    if (ok && cross_entropy) {
        /* torch's log_softmax runs in the input's dtype: round through it */
        log_softmax_classes(x, &p, x_t->dtype, p.class_dim == x_t->ndim - 1);
    }
    mtk_dtype dt = p.dtype;
    double total = 0, smooth_total = 0;
    int64_t ignore = arg_int(call, ARG_IGNORE), counted = 0;
    nll_cascade cascade;
    cascade_init(&cascade, dt, rows);
    double *smooth = NULL;
    if (ok && !p.probabilities && p.smoothing > 0) ok = (smooth = nn_alloc(ctx, rows)) != NULL;
    /* one row's per-class terms (probability targets, label smoothing) */
    double small_row[1024], *terms = NULL;
    if (ok && (p.probabilities || smooth))
        ok = (terms = p.classes <= 1024 ? small_row : nn_alloc(ctx, p.classes)) != NULL;
    for (int64_t r = 0; ok && r < rows; r++) {
        int64_t o = r / p.inner, i = r % p.inner;
        const double *v = x + o * p.classes * p.inner + i;
        if (p.probabilities) {
            // -(log_p * target * weight).sum(class_dim), each step in its
            // tensors' dtype as torch's composition runs it: the target
            // smoothed in its own, times log_p in theirs, times the weight
            // in the result's
            const double *tv = t + o * p.classes * p.inner + i;
            mtk_dtype td = t_t->dtype, xtd = mtk_promote_types(x_t->dtype, td);
            for (int64_t c = 0; c < p.classes; c++) {
                double target = tv[c * p.inner];
                if (p.smoothing > 0)
                    target = nn_rounded(td, nn_rounded(td, target * (1 - p.smoothing)) +
                                                p.smoothing / (double)p.classes);
                double term = nn_rounded(xtd, v[c * p.inner] * target);
                terms[c] = w ? nn_rounded(dt, term * w[c]) : term;
            }
            double s = class_sum(dt, terms, p.classes, 1);
            loss[r] = -s;
            total += -s;
            continue;
        }
        int64_t cls = (int64_t)t[r];
        if (cls == ignore) {
            loss[r] = 0;
            if (smooth) smooth[r] = 0; /* smooth_loss.masked_fill_(ignore_mask, 0) */
            continue;
        }
        if (cls < 0 || cls >= p.classes) {
            ok = mtk_call_error(call, MTK_ERR_INDEX, "Target %lld is out of bounds.", (long long)cls);
            break;
        }
        double wc = w ? w[cls] : 1.0;
        /* -input[cls] * weight[cls], one rounding */
        double term = nn_rounded(dt, v[cls * p.inner] * wc);
        cascade_step(&cascade, r, term, wc);
        counted++;
        loss[r] = nn_rounded(dt, -term);
        if (smooth) {
            // -(input * weight).sum(class_dim) of this row
            for (int64_t c = 0; c < p.classes; c++) terms[c] = nn_rounded(dt, v[c * p.inner] * (w ? w[c] : 1.0));
            smooth[r] = -class_sum(dt, terms, p.classes, 1);
            smooth_total += smooth[r];
        }
    }
    if (ok) {
        if (p.probabilities) {
            if (p.reduction == NN_REDUCE_NONE) {
                nn_scatter(call->out[0], loss);
            } else {
                double value = p.reduction == NN_REDUCE_SUM ? total : total / (double)rows;
                nn_scatter(call->out[0], &value);
            }
        } else {
            /* nll_loss: the cascade's sums; 'mean' divides by the summed
             * weights (no weight: the count, in the dtype) */
            double nll = cascade_total(&cascade, cascade.loss);
            double weight_total = w ? cascade_total(&cascade, cascade.weight) : nn_rounded(dt, (double)counted);
            if (p.reduction == NN_REDUCE_MEAN) nll = nn_rounded(dt, nll / weight_total);
            double value = nll;
            if (p.smoothing > 0) {
                /* (1 - eps) * nll + smooth * (eps / C), each a step in the
                 * dtype (Python floats: computed in its opmath) */
                double a = 1 - p.smoothing, b = p.smoothing / (double)p.classes;
                if (dt != MTK_FLOAT64) a = (double)(float)a, b = (double)(float)b;
                if (p.reduction == NN_REDUCE_NONE) {
                    for (int64_t r = 0; r < rows; r++)
                        loss[r] = nn_rounded(dt, nn_rounded(dt, a * loss[r]) + nn_rounded(dt, smooth[r] * b));
                } else {
                    double sm = nn_rounded(dt, smooth_total);
                    if (p.reduction == NN_REDUCE_MEAN) sm = nn_rounded(dt, sm / weight_total);
                    value = nn_rounded(dt, nn_rounded(dt, a * nll) + nn_rounded(dt, sm * b));
                }
            }
            if (p.reduction == NN_REDUCE_NONE) nn_scatter(call->out[0], loss);
            else nn_scatter(call->out[0], &value);
        }
    }
    mtk_ctx_mfree(ctx, smooth);
    if (terms != small_row) mtk_ctx_mfree(ctx, terms);
    double *buffers[] = { x, t, w, loss };
    for (int32_t i = 0; i < 4; i++) mtk_ctx_mfree(ctx, buffers[i]);
    return ok;
}

bool mtk_nn_nll_loss_cpu(mtk_op_call *call) { return class_cpu(call, false); }
bool mtk_nn_cross_entropy_cpu(mtk_op_call *call) { return class_cpu(call, true); }

/* ------------------------------------------------------------- typed API */

static mtk_tensor *run_class(mtk_ctx *ctx, mtk_op_id id, mtk_tensor *input, mtk_tensor *target, mtk_tensor *weight,
                             int64_t ignore_index, const char *reduction)
{
    mtk_op_call call;
    mtk_op_call_init(&call, ctx, mtk_op_by_id(id));
    call.args[ARG_INPUT] = mtk_value_tensor(input);
    call.args[ARG_TARGET] = mtk_value_tensor(target);
    call.args[ARG_WEIGHT] = weight ? mtk_value_tensor(weight) : mtk_value_none();
    call.args[ARG_IGNORE] = mtk_value_int(ignore_index);
    call.args[ARG_REDUCTION] = mtk_value_string(reduction ? reduction : "mean");
    return mtk_op_run_tensor(&call);
}

mtk_tensor *mtk_cross_entropy(mtk_ctx *ctx, mtk_tensor *input, mtk_tensor *target, mtk_tensor *weight,
                              int64_t ignore_index, const char *reduction, double label_smoothing)
{
    mtk_op_call call;
    mtk_op_call_init(&call, ctx, mtk_op_by_id(OPID_CROSS_ENTROPY));
    call.args[ARG_INPUT] = mtk_value_tensor(input);
    call.args[ARG_TARGET] = mtk_value_tensor(target);
    call.args[ARG_WEIGHT] = weight ? mtk_value_tensor(weight) : mtk_value_none();
    call.args[ARG_IGNORE] = mtk_value_int(ignore_index);
    call.args[ARG_REDUCTION] = mtk_value_string(reduction ? reduction : "mean");
    call.args[ARG_SMOOTHING] = mtk_value_float(label_smoothing);
    return mtk_op_run_tensor(&call);
}

mtk_tensor *mtk_nll_loss(mtk_ctx *ctx, mtk_tensor *input, mtk_tensor *target, mtk_tensor *weight,
                         int64_t ignore_index, const char *reduction)
{
    return run_class(ctx, OPID_NLL_LOSS, input, target, weight, ignore_index, reduction);
}
