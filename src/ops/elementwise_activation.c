/* torch.nn.functional activations: silu, gelu, softplus, mish, elu, selu,
 * leaky_relu, relu6, hardswish, hardsigmoid, hardtanh.  All keep the
 * input's dtype; most have float-only cpu kernels (PyTorch's meta still
 * accepts integers for some of them). */
#include "ops/elementwise_kernel.h"

#include <math.h>
#include <string.h>

/* ---------------------------------------------------- element functions */

EW_DEFINE_UNARY_FLOAT(silu, x / (1.0f + expf(-x)), x / (1.0 + exp(-x)))
EW_DEFINE_UNARY_FLOAT(mish, x * tanhf(log1pf(expf(x))), x * tanh(log1p(exp(x))))
/* min(max(x + 3, 0), 6) with NaN passing through, as std::min/max do */
static inline float relu6_shift_f(float x)
{
    float v = x + 3.0f;
    v = v < 0.0f ? 0.0f : v;
    return 6.0f < v ? 6.0f : v;
}
static inline double relu6_shift_d(double x)
{
    double v = x + 3.0;
    v = v < 0.0 ? 0.0 : v;
    return 6.0 < v ? 6.0 : v;
}
EW_DEFINE_UNARY_FLOAT(hardswish, x * relu6_shift_f(x) / 6.0f, x * relu6_shift_d(x) / 6.0)
EW_DEFINE_UNARY_FLOAT(hardsigmoid, relu6_shift_f(x) / 6.0f, relu6_shift_d(x) / 6.0)

/* gelu: p->i[0] is 1 for approximate='tanh' */
static void gelu_f32(float *o, const float *const *in, int64_t n, ew_params *p)
{
    const float *a = in[0];
    if (p->i[0]) {
        const float k = 0.7978845608028654f; /* sqrt(2 / pi) */
        for (int64_t j = 0; j < n; j++) {
            float x = a[j];
            o[j] = 0.5f * x * (1.0f + tanhf(k * (x + 0.044715f * x * x * x)));
        }
    } else {
        /* PyTorch's float kernel gives NaN for +inf (its vectorized erf
         * does); its double kernel gives inf, as the formula does */
        for (int64_t j = 0; j < n; j++)
            o[j] = a[j] == INFINITY ? NAN : a[j] * 0.5f * (1.0f + erff(a[j] * 0.70710678118654752f));
    }
}

static void gelu_f64(double *o, const double *const *in, int64_t n, ew_params *p)
{
    const double *a = in[0];
    if (p->i[0]) {
        const double k = 0.7978845608028654;
        for (int64_t j = 0; j < n; j++) {
            double x = a[j];
            o[j] = 0.5 * x * (1.0 + tanh(k * (x + 0.044715 * x * x * x)));
        }
    } else {
        for (int64_t j = 0; j < n; j++) o[j] = a[j] * 0.5 * (1.0 + erf(a[j] * 0.70710678118654752));
    }
}

/* softplus: p->f[0] beta, p->f[1] threshold */
static void softplus_f32(float *o, const float *const *in, int64_t n, ew_params *p)
{
    const float *a = in[0];
    float beta = (float)p->f[0], threshold = (float)p->f[1];
    for (int64_t j = 0; j < n; j++)
        o[j] = a[j] * beta > threshold ? a[j] : log1pf(expf(a[j] * beta)) / beta;
}

static void softplus_f64(double *o, const double *const *in, int64_t n, ew_params *p)
{
    const double *a = in[0];
    double beta = p->f[0], threshold = p->f[1];
    for (int64_t j = 0; j < n; j++) o[j] = a[j] * beta > threshold ? a[j] : log1p(exp(a[j] * beta)) / beta;
}

/* elu family: p->f[0] negative coefficient (alpha * scale), p->f[1]
 * positive coefficient (scale) */
static void elu_f32(float *o, const float *const *in, int64_t n, ew_params *p)
{
    const float *a = in[0];
    float neg = (float)p->f[0], pos = (float)p->f[1];
    for (int64_t j = 0; j < n; j++) o[j] = a[j] <= 0.0f ? expm1f(a[j]) * neg : a[j] * pos;
}

static void elu_f64(double *o, const double *const *in, int64_t n, ew_params *p)
{
    const double *a = in[0];
    double neg = p->f[0], pos = p->f[1];
    for (int64_t j = 0; j < n; j++) o[j] = a[j] <= 0.0 ? expm1(a[j]) * neg : a[j] * pos;
}

/* leaky_relu: p->f[0] negative slope */
static void leaky_relu_f32(float *o, const float *const *in, int64_t n, ew_params *p)
{
    const float *a = in[0];
    float slope = (float)p->f[0];
    for (int64_t j = 0; j < n; j++) o[j] = a[j] > 0.0f ? a[j] : a[j] * slope;
}

static void leaky_relu_f64(double *o, const double *const *in, int64_t n, ew_params *p)
{
    const double *a = in[0];
    double slope = p->f[0];
    for (int64_t j = 0; j < n; j++) o[j] = a[j] > 0.0 ? a[j] : a[j] * slope;
}

/* hardtanh (and relu6): clamp to [p[0], p[1]], NaN passes through */
static void hardtanh_f32(float *o, const float *const *in, int64_t n, ew_params *p)
{
    const float *a = in[0];
    float lo = (float)p->f[0], hi = (float)p->f[1];
    for (int64_t j = 0; j < n; j++) {
        float x = a[j];
        o[j] = x != x ? x : (x < lo ? lo : (x > hi ? hi : x));
    }
}

static void hardtanh_f64(double *o, const double *const *in, int64_t n, ew_params *p)
{
    const double *a = in[0];
    double lo = p->f[0], hi = p->f[1];
    for (int64_t j = 0; j < n; j++) {
        double x = a[j];
        o[j] = x != x ? x : (x < lo ? lo : (x > hi ? hi : x));
    }
}

static void hardtanh_i64(int64_t *o, const int64_t *const *in, int64_t n, ew_params *p)
{
    const int64_t *a = in[0];
    int64_t lo = p->i[0], hi = p->i[1];
    for (int64_t j = 0; j < n; j++) o[j] = a[j] < lo ? lo : (a[j] > hi ? hi : a[j]);
}

/* ------------------------------------------------------------ parameters */

static bool gelu_params(mtk_op_call *call, mtk_dtype dtype, ew_params *p)
{
    (void)dtype;
    const char *approximate = call->args[1].as.s;
    if (strcmp(approximate, "none") != 0 && strcmp(approximate, "tanh") != 0)
        return mtk_call_error(call, MTK_ERR_INVALID_ARGUMENT, "approximate argument must be either none or tanh.");
    p->i[0] = strcmp(approximate, "tanh") == 0;
    return true;
}

static bool softplus_params(mtk_op_call *call, mtk_dtype dtype, ew_params *p)
{
    /* torch's meta: beta must be castable to the input's Python type; for
     * bool an int beta passes only as torch's defaults, beta=1 with the int
     * threshold=20 (softplus(b, 1, 20) is accepted, softplus(b, 1, 20.0)
     * and softplus(b, threshold=1) are not) */
    const mtk_value *beta = &call->args[1], *threshold = &call->args[2];
    bool defaults = beta->kind == MTK_VALUE_INT && beta->as.i == 1 && threshold->kind == MTK_VALUE_INT &&
                    threshold->as.i == 20;
    bool refused = false;
    if (mtk_dtype_is_integral(dtype, true) && beta->kind == MTK_VALUE_FLOAT) refused = true;
    if (dtype == MTK_BOOL && beta->kind == MTK_VALUE_INT && !defaults) refused = true;
    if (refused)
        return mtk_call_error(call, MTK_ERR_DTYPE,
                              "beta argument of type <class '%s'> cannot be safely cast to type <class '%s'>!",
                              mtk_value_type_name(beta), dtype == MTK_BOOL ? "bool" : "int");
    p->f[0] = ew_arg_double(call, 1);
    p->f[1] = ew_arg_double(call, 2);
    p->i[3] = defaults; /* the defaults take torch's one-kernel path: its layout too */
    return true;
}

static bool elu_params(mtk_op_call *call, mtk_dtype dtype, ew_params *p)
{
    (void)dtype;
    p->f[0] = ew_arg_double(call, 1); /* alpha */
    p->f[1] = 1.0;
    return true;
}

static bool selu_params(mtk_op_call *call, mtk_dtype dtype, ew_params *p)
{
    (void)call, (void)dtype;
    const double alpha = 1.6732632423543772848170429916717;
    const double scale = 1.0507009873554804934193349852946;
    p->f[0] = alpha * scale;
    p->f[1] = scale;
    return true;
}

static bool leaky_relu_params(mtk_op_call *call, mtk_dtype dtype, ew_params *p)
{
    /* torch's meta takes an integral input when the slope is an int (a
     * bool input: a bool slope); its cpu kernel has floats only */
    const mtk_value *slope = &call->args[1];
    const char *type = NULL;
    if (dtype == MTK_BOOL && slope->kind != MTK_VALUE_BOOL) type = "bool";
    else if (mtk_dtype_is_integral(dtype, false) && slope->kind == MTK_VALUE_FLOAT) type = "int";
    if (type)
        return mtk_call_error(call, MTK_ERR_DTYPE,
                              "negative_slope argument of type <class '%s'> cannot be safely cast to type "
                              "<class '%s'>!",
                              mtk_value_type_name(slope), type);
    p->f[0] = ew_arg_double(call, 1);
    return true;
}

static bool clamp_limits(mtk_op_call *call, mtk_dtype dtype, double lo, double hi, ew_params *p)
{
    if (dtype == MTK_BOOL) return mtk_call_error(call, MTK_ERR_DTYPE, "Bool inputs not supported for hardtanh");
    if (dtype == MTK_UINT8 && (lo < 0.0 || hi < 0.0))
        return mtk_call_error(call, MTK_ERR_DTYPE, "Cannot do hardtanh on an unsigned type with negative limits");
    p->f[0] = lo, p->f[1] = hi;
    p->i[0] = (int64_t)lo, p->i[1] = (int64_t)hi;
    return true;
}

static bool hardtanh_params(mtk_op_call *call, mtk_dtype dtype, ew_params *p)
{
    double lo = ew_arg_double(call, 1), hi = ew_arg_double(call, 2);
    if (lo > hi) return mtk_call_error(call, MTK_ERR_INVALID_ARGUMENT, "min_val cannot be greater than max_val");
    return clamp_limits(call, dtype, lo, hi, p);
}

static bool relu6_params(mtk_op_call *call, mtk_dtype dtype, ew_params *p)
{
    return clamp_limits(call, dtype, 0.0, 6.0, p);
}

/* ------------------------------------------------------------ info rows */

#define FLOAT_ONLY(kernel, inplace, params, recipe, name) \
    { false, kernel, EW_FLOATS, inplace, params, recipe, { name##_f32, name##_f64, NULL } }
#define REJECTS_INT(kernel, inplace, params, recipe, name) \
    { true, kernel, EW_FLOATS, inplace, params, recipe, { name##_f32, name##_f64, NULL } }

const ew_activation_info mtk_ew_info_SILU = FLOAT_ONLY("silu_cpu", 1, NULL, EW_R_EMPTY_LIKE, silu);
const ew_activation_info mtk_ew_info_GELU = FLOAT_ONLY("GeluKernelImpl", 0, gelu_params, EW_R_GELU, gelu);
const ew_activation_info mtk_ew_info_SOFTPLUS = FLOAT_ONLY("softplus_cpu", 0, softplus_params, EW_R_SOFTPLUS, softplus);
const ew_activation_info mtk_ew_info_MISH = FLOAT_ONLY("mish_cpu", 1, NULL, EW_R_MISH, mish);
const ew_activation_info mtk_ew_info_ELU = REJECTS_INT("elu_cpu", 2, elu_params, EW_R_ELU, elu);
const ew_activation_info mtk_ew_info_SELU = REJECTS_INT("elu_cpu", 1, selu_params, EW_R_SELU, elu);
const ew_activation_info mtk_ew_info_LEAKY_RELU = FLOAT_ONLY("leaky_relu_cpu", 2, leaky_relu_params, EW_R_LEAKY_RELU, leaky_relu);
const ew_activation_info mtk_ew_info_RELU6 = { false, "clamp_scalar_cpu", EW_INTS | EW_FLOATS, 1, relu6_params, EW_R_HARDTANH,
                                               { hardtanh_f32, hardtanh_f64, hardtanh_i64 } };
const ew_activation_info mtk_ew_info_HARDSWISH = FLOAT_ONLY("hardswish_cpu", 1, NULL, EW_R_HARDSWISH, hardswish);
const ew_activation_info mtk_ew_info_HARDSIGMOID = FLOAT_ONLY("hardsigmoid_cpu", 1, NULL, EW_R_HARDSIGMOID, hardsigmoid);
const ew_activation_info mtk_ew_info_HARDTANH = { false, "clamp_scalar_cpu", EW_INTS | EW_FLOATS, 3,
                                                  hardtanh_params, EW_R_HARDTANH,
                                                  { hardtanh_f32, hardtanh_f64, hardtanh_i64 } };

/* ------------------------------------------------------- meta and cpu */

bool mtk_ew_activation_meta(mtk_op_call *call)
{
    const ew_activation_info *info = call->op->info;
    mtk_tensor *x = arg_tensor(call, 0);
    if (info->rejects_integral && mtk_dtype_is_integral(x->dtype, true))
        return ew_check_cpu_dtype(call, info->kernel_name, 0, x->dtype);
    ew_params params;
    memset(&params, 0, sizeof params);
    if (info->params && !info->params(call, x->dtype, &params)) return false;
    if (info->inplace_arg > 0 && arg_bool(call, info->inplace_arg)) return ew_set_inplace_output(call, 0, x->dtype);
    if (call->device == MTK_DEVICE_CPU) {
        ew_lay out = ew_lay_cpu_activation(info->recipe, ew_lay_of(x, call->device), x->dtype);
        return ew_set_output(call, x->dtype, &out);
    }
    /* softplus with the int defaults (1, 20) runs torch's structured
     * kernel, laid out as one element-wise op; other arguments its
     * reference's chain */
    ew_recipe recipe = info->recipe == EW_R_SOFTPLUS && params.i[3] ? EW_R_PRIM : info->recipe;
    ew_lay out = ew_lay_activation(recipe, ew_lay_of(x, call->device), recipe == EW_R_GELU && params.i[0]);
    return ew_set_output(call, x->dtype, &out);
}

bool mtk_ew_activation_cpu(mtk_op_call *call)
{
    const ew_activation_info *info = call->op->info;
    const mtk_tensor *x = arg_tensor(call, 0);
    if (!ew_check_cpu_dtype(call, info->kernel_name, info->cpu_dtypes, x->dtype)) return false;
    ew_params params;
    memset(&params, 0, sizeof params);
    if (info->params && !info->params(call, x->dtype, &params)) return false;
    if (!ew_run(call->out[0], &x, 1, x->dtype, &info->fns, &params, 0))
        return ew_check_cpu_dtype(call, info->kernel_name, 0, x->dtype);
    return true;
}
