/* Ternary element-wise ops: where(condition, input, other) and
 * clamp/clip(input, min, max) with Scalar or Tensor bounds. */
#include "ops/elementwise_kernel.h"
#include "core/scalar.h"

#include <math.h>
#include <string.h>

/* ----------------------------------------------------------------- where */

#define DEFINE_SELECT(name, expr)                                                          \
    static void name##_f32(float *o, const float *const *in, int64_t n, ew_params *p)      \
    {                                                                                      \
        const float *c = in[0], *x = in[1], *y = in[2];                                    \
        (void)p;                                                                           \
        for (int64_t j = 0; j < n; j++) o[j] = (expr);                                     \
    }                                                                                      \
    static void name##_f64(double *o, const double *const *in, int64_t n, ew_params *p)    \
    {                                                                                      \
        const double *c = in[0], *x = in[1], *y = in[2];                                   \
        (void)p;                                                                           \
        for (int64_t j = 0; j < n; j++) o[j] = (expr);                                     \
    }                                                                                      \
    static void name##_i64(int64_t *o, const int64_t *const *in, int64_t n, ew_params *p)  \
    {                                                                                      \
        const int64_t *c = in[0], *x = in[1], *y = in[2];                                  \
        (void)p;                                                                           \
        for (int64_t j = 0; j < n; j++) o[j] = (expr);                                     \
    }

DEFINE_SELECT(where, c[j] != 0 ? x[j] : y[j])

static const ew_fns where_fns = { where_f32, where_f64, where_i64 };

/* operands: condition, input, other (numbers wrapped) */
static bool where_operands(mtk_op_call *call, mtk_tensor **ops)
{
    for (int32_t i = 0; i < 3; i++)
        if (!(ops[i] = mtk_call_operand(call, i))) return false;
    return true;
}

bool mtk_ew_where_meta(mtk_op_call *call)
{
    mtk_tensor *ops[3];
    if (!where_operands(call, ops)) return false;
    mtk_dtype cond = ops[0]->dtype;
    /* PyTorch's cpu still accepts a uint8 condition (deprecated); meta refuses it */
    if (cond != MTK_BOOL && !(cond == MTK_UINT8 && call->device != MTK_DEVICE_META))
        return mtk_call_error(call, MTK_ERR_DTYPE,
                              "where expected condition to be a boolean tensor, but got a tensor "
                              "with dtype %s",
                              mtk_dtype_cpp_name(cond));
    mtk_dtype dtype = mtk_meta_result_type(call->ctx, &call->args[1], 2);
    if (dtype == MTK_DTYPE_UNDEFINED) return false;
    int64_t shape[MTK_MAX_DIMS], shape2[MTK_MAX_DIMS];
    int32_t ndim, ndim2;
    if (!mtk_broadcast_shapes(call->ctx, call->op->name, ops[0]->shape, ops[0]->ndim, ops[1]->shape,
                              ops[1]->ndim, shape, &ndim) ||
        !mtk_broadcast_shapes(call->ctx, call->op->name, shape, ndim, ops[2]->shape, ops[2]->ndim, shape2,
                              &ndim2))
        return false;
    (void)shape2, (void)ndim2; /* the layout has the same shape */
    mtk_device d = call->device;
    if (d == MTK_DEVICE_CPU) {
        /* one TensorIterator over the condition (a uint8 one converted to
         * bool) and the values converted to the result's dtype */
        ew_lay lays[3];
        for (int32_t i = 0; i < 3; i++) {
            mtk_dtype to = i == 0 ? MTK_BOOL : dtype;
            lays[i] = ew_lay_to(ew_lay_of(ops[i], d), ops[i]->dtype != to);
        }
        ew_lay out = ew_lay_iter(3, lays);
        return ew_set_output(call, dtype, &out);
    }
    ew_lay out = ew_lay_where(ew_lay_of(ops[0], d), ew_lay_of(ops[1], d), ew_lay_of(ops[2], d), dtype);
    return ew_set_output(call, dtype, &out);
}

bool mtk_ew_where_cpu(mtk_op_call *call)
{
    mtk_tensor *ops[3];
    if (!where_operands(call, ops)) return false;
    mtk_dtype dtype = call->out[0]->dtype;
    if (mtk_result_type(call->ctx, &call->args[1], 2) == MTK_DTYPE_UNDEFINED) return false; /* float8 mixes */
    /* numbers are converted with PyTorch's overflow check, except into
     * reduced floats, which saturate to inf as PyTorch's fill does */
    bool checked = dtype != MTK_FLOAT16 && dtype != MTK_BFLOAT16;
    for (int32_t i = 1; i < 3; i++)
        if (checked && mtk_value_is_number(&call->args[i]) && !ew_number_fits(call, &call->args[i], dtype))
            return false;
    ew_params params;
    memset(&params, 0, sizeof params);
    const mtk_tensor *ins[3] = { ops[0], ops[1], ops[2] };
    ew_run(call->out[0], ins, 3, dtype, &where_fns, &params, 0);
    return true;
}

/* ----------------------------------------------------------------- clamp */

/* NaN in the input or in a bound propagates; ties keep the input (so
 * -0.0 stays -0.0), as PyTorch's kernels do. */
#define CLAMP_LOW(v, lo) ((lo) != (lo) ? (lo) : ((v) < (lo) ? (lo) : (v)))
#define CLAMP_HIGH(v, hi) ((hi) != (hi) ? (hi) : ((v) > (hi) ? (hi) : (v)))

#define DEFINE_CLAMP(name, nbounds, expr)                                                  \
    static void name##_f32(float *o, const float *const *in, int64_t n, ew_params *p)      \
    {                                                                                      \
        const float *x = in[0], *b0 = in[1], *b1 = in[nbounds > 1 ? 2 : 1];                \
        (void)p, (void)b0, (void)b1;                                                       \
        for (int64_t j = 0; j < n; j++) o[j] = x[j] != x[j] ? x[j] : (expr);               \
    }                                                                                      \
    static void name##_f64(double *o, const double *const *in, int64_t n, ew_params *p)    \
    {                                                                                      \
        const double *x = in[0], *b0 = in[1], *b1 = in[nbounds > 1 ? 2 : 1];               \
        (void)p, (void)b0, (void)b1;                                                       \
        for (int64_t j = 0; j < n; j++) o[j] = x[j] != x[j] ? x[j] : (expr);               \
    }                                                                                      \
    static void name##_i64(int64_t *o, const int64_t *const *in, int64_t n, ew_params *p)  \
    {                                                                                      \
        const int64_t *x = in[0], *b0 = in[1], *b1 = in[nbounds > 1 ? 2 : 1];              \
        (void)p, (void)b0, (void)b1;                                                       \
        for (int64_t j = 0; j < n; j++) o[j] = (expr);                                     \
    }

DEFINE_CLAMP(clamp_both, 2, CLAMP_HIGH(CLAMP_LOW(x[j], b0[j]), b1[j]))
DEFINE_CLAMP(clamp_min, 1, CLAMP_LOW(x[j], b0[j]))
DEFINE_CLAMP(clamp_max, 1, CLAMP_HIGH(x[j], b0[j]))

static void fill_nan_f32(float *o, const float *const *in, int64_t n, ew_params *p)
{
    (void)in, (void)p;
    for (int64_t j = 0; j < n; j++) o[j] = NAN;
}

static void fill_nan_f64(double *o, const double *const *in, int64_t n, ew_params *p)
{
    (void)in, (void)p;
    for (int64_t j = 0; j < n; j++) o[j] = NAN;
}

static const ew_fns clamp_both_fns = { clamp_both_f32, clamp_both_f64, clamp_both_i64 };
static const ew_fns clamp_min_fns = { clamp_min_f32, clamp_min_f64, clamp_min_i64 };
static const ew_fns clamp_max_fns = { clamp_max_f32, clamp_max_f64, clamp_max_i64 };

/* The clamp call's shape: which bounds it has and whether they are
 * tensors (clamp.Tensor) or numbers (clamp.Scalar). */
typedef struct clamp_form {
    bool has_min, has_max, tensors;
    mtk_value bound[2];  /* min, max as given (a 0-dim tensor beside a
                            number becomes a number, as PyTorch parses it) */
    int32_t nops;
    mtk_tensor *ops[3];  /* input, then the bounds present */
} clamp_form;

/* A 0-dim tensor passed where PyTorch wants a Scalar: its value (which a
 * meta tensor does not have). */
static bool tensor_to_number(mtk_op_call *call, const mtk_tensor *t, mtk_value *out)
{
    if (t->device == MTK_DEVICE_META || !t->storage)
        return mtk_error(call->ctx, MTK_ERR_META_NO_DATA, "Tensor.item() cannot be called on meta tensors");
    const void *p = mtk_tensor_data(t);
    if (t->dtype == MTK_BOOL) *out = mtk_value_bool(mtk_load_i64(t->dtype, p) != 0);
    else if (mtk_dtype_is_integral(t->dtype, false)) *out = mtk_value_int(mtk_load_i64(t->dtype, p));
    else *out = mtk_value_float(mtk_load_f64(t->dtype, p));
    return true;
}

static bool clamp_parse(mtk_op_call *call, clamp_form *f)
{
    memset(f, 0, sizeof *f);
    f->bound[0] = call->args[1];
    f->bound[1] = call->args[2];
    f->has_min = f->bound[0].kind != MTK_VALUE_NONE;
    f->has_max = f->bound[1].kind != MTK_VALUE_NONE;
    if (!f->has_min && !f->has_max)
        return mtk_call_error(call, MTK_ERR_INVALID_ARGUMENT,
                              "torch.clamp: At least one of 'min' or 'max' must not be None");
    bool min_tensor = f->has_min && f->bound[0].kind == MTK_VALUE_TENSOR;
    bool max_tensor = f->has_max && f->bound[1].kind == MTK_VALUE_TENSOR;
    if (f->has_min && f->has_max && min_tensor != max_tensor) {
        int32_t t = min_tensor ? 0 : 1;
        const mtk_tensor *bound = f->bound[t].as.tensor;
        if (bound->ndim != 0)
            return mtk_error(call->ctx, MTK_ERR_INVALID_ARGUMENT,
                             "%s() received an invalid combination of arguments - got (Tensor, min=%s, max=%s)",
                             call->op->name, mtk_value_type_name(&f->bound[0]),
                             mtk_value_type_name(&f->bound[1]));
        if (!tensor_to_number(call, bound, &f->bound[t])) return false;
        min_tensor = max_tensor = false;
    }
    f->tensors = min_tensor || max_tensor;
    f->ops[f->nops++] = arg_tensor(call, 0);
    for (int32_t i = 0; i < 2; i++) {
        const mtk_value *b = &f->bound[i];
        if (b->kind == MTK_VALUE_NONE) continue;
        mtk_tensor *t = b->kind == MTK_VALUE_TENSOR ? b->as.tensor : mtk_wrap_number(call->ctx, b);
        if (!t) return false;
        f->ops[f->nops++] = t;
    }
    return true;
}

static mtk_dtype clamp_dtype(mtk_op_call *call, const clamp_form *f, bool meta)
{
    const mtk_tensor *x = f->ops[0];
    if (!f->tensors && mtk_dtype_is_floating(x->dtype)) return x->dtype; /* Scalar bounds never widen a float */
    mtk_value v[3];
    for (int32_t i = 0; i < f->nops; i++) v[i] = mtk_value_tensor(f->ops[i]);
    return meta ? mtk_meta_result_type(call->ctx, v, f->nops) : mtk_result_type(call->ctx, v, f->nops);
}

bool mtk_ew_clamp_meta(mtk_op_call *call)
{
    clamp_form f;
    if (!clamp_parse(call, &f)) return false;
    mtk_dtype dtype = clamp_dtype(call, &f, true);
    if (dtype == MTK_DTYPE_UNDEFINED) return false;
    const mtk_tensor *x = f.ops[0];
    int64_t shape[MTK_MAX_DIMS];
    int32_t ndim = x->ndim;
    memcpy(shape, x->shape, (size_t)ndim * sizeof *shape);
    for (int32_t i = 1; i < f.nops; i++) {
        int64_t next[MTK_MAX_DIMS];
        if (!mtk_broadcast_shapes(call->ctx, call->op->name, shape, ndim, f.ops[i]->shape, f.ops[i]->ndim,
                                  next, &ndim))
            return false;
        memcpy(shape, next, (size_t)ndim * sizeof *shape);
    }
    if (call->device == MTK_DEVICE_CPU) {
        /* torch's cpu runs one TensorIterator kernel over the input and the
         * tensor bounds (each converted to the result's dtype first), not
         * the reference's chain of where/ge that its meta device replays;
         * Scalar bounds are parameters of a unary iterator over the input */
        ew_lay lays[3];
        int32_t n = f.tensors ? f.nops : 1; /* number bounds are no operands */
        for (int32_t i = 0; i < n; i++) lays[i] = ew_lay_of(f.ops[i], call->device);
        ew_lay one = ew_lay_iter_to(n, lays, dtype);
        return ew_set_output(call, dtype, &one);
    }
    ew_lay bounds[2];
    int32_t k = 1;
    for (int32_t i = 0; i < 2; i++)
        if ((i == 0 && f.has_min) || (i == 1 && f.has_max)) bounds[i] = ew_lay_of(f.ops[k++], call->device);
    ew_lay out = ew_lay_clamp(ew_lay_of(x, call->device), f.has_min ? &bounds[0] : NULL,
                              f.has_max ? &bounds[1] : NULL, ew_opmath(dtype));
    return ew_set_output(call, dtype, &out);
}

bool mtk_ew_clamp_cpu(mtk_op_call *call)
{
    clamp_form f;
    if (!clamp_parse(call, &f)) return false;
    mtk_dtype dtype = call->out[0]->dtype;
    if (clamp_dtype(call, &f, false) == MTK_DTYPE_UNDEFINED) return false; /* float8 mixes */
    ew_params params;
    memset(&params, 0, sizeof params);
    bool nan_bound = false;
    for (int32_t i = 0; i < 2 && !f.tensors; i++)
        if (mtk_value_is_number(&f.bound[i]) && mtk_value_as_double(&f.bound[i]) != mtk_value_as_double(&f.bound[i]))
            nan_bound = true;
    if (nan_bound) {
        /* PyTorch fills the result with NaN when a Scalar bound is NaN */
        static const ew_fns nan_fns = { fill_nan_f32, fill_nan_f64, NULL };
        const mtk_tensor *x = f.ops[0];
        if (!ew_run(call->out[0], &x, 1, dtype, &nan_fns, &params, 0))
            return mtk_call_error(call, MTK_ERR_DTYPE, "cannot fill an integral tensor with NaN");
        return true;
    }
    const char *kernel;
    if (f.tensors) kernel = f.has_min && f.has_max ? "clamp_cpu" : f.has_min ? "maximum_cpu" : "minimum_cpu";
    else kernel = f.has_min && f.has_max ? "clamp_scalar_cpu" : f.has_min ? "clamp_min_scalar_cpu" : "clamp_max_scalar_cpu";
    /* one Tensor bound runs maximum/minimum, which take bool too */
    uint32_t supported = f.tensors && !(f.has_min && f.has_max) ? EW_NUMERIC : EW_INTS | EW_FLOATS;
    if (!ew_check_cpu_dtype(call, kernel, supported, dtype)) return false;
    for (int32_t i = 0; i < 2; i++)
        if (mtk_value_is_number(&f.bound[i]) && !ew_number_fits(call, &f.bound[i], dtype)) return false;
    const ew_fns *fns = f.has_min && f.has_max ? &clamp_both_fns : f.has_min ? &clamp_min_fns : &clamp_max_fns;
    const mtk_tensor *ins[3] = { f.ops[0], f.ops[1], f.ops[2] };
    ew_run(call->out[0], ins, f.nops, dtype, fns, &params, 0);
    return true;
}
