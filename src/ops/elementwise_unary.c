/* Unary element-wise ops: neg, abs, floor, exp, sigmoid, isnan, ...:
 * their dtype rules (keep, integers to float, predicates to bool), their
 * errors, and their element functions. */
#include "ops/elementwise_kernel.h"

#include <math.h>

/* ---------------------------------------------------- element functions */

EW_DEFINE_UNARY_FLOAT(neg, -x, -x)
EW_DEFINE_UNARY_INT(neg, ew_wrap_neg(x))
EW_DEFINE_UNARY_FLOAT(abs, fabsf(x), fabs(x))
EW_DEFINE_UNARY_INT(abs, x < 0 ? ew_wrap_neg(x) : x)
/* sign(NaN) is 0, as PyTorch's cpu computes it */
EW_DEFINE_UNARY_FLOAT(sign, (float)((0.0f < x) - (x < 0.0f)), (double)((0.0 < x) - (x < 0.0)))
EW_DEFINE_UNARY_INT(sign, (0 < x) - (x < 0))
EW_DEFINE_UNARY_FLOAT(floor, floorf(x), floor(x))
EW_DEFINE_UNARY_FLOAT(ceil, ceilf(x), ceil(x))
EW_DEFINE_UNARY_FLOAT(trunc, truncf(x), trunc(x))
EW_DEFINE_UNARY_INT(identity, x)
/* relu is clamp_min(x, 0): NaN and -0.0 pass through */
EW_DEFINE_UNARY_FLOAT(relu, x < 0.0f ? 0.0f : x, x < 0.0 ? 0.0 : x)
EW_DEFINE_UNARY_INT(relu, x < 0 ? 0 : x)
EW_DEFINE_UNARY_FLOAT(square, x * x, x * x)
EW_DEFINE_UNARY_INT(square, ew_wrap_mul(x, x))
EW_DEFINE_UNARY_FLOAT(logical_not, (float)(x == 0.0f), (double)(x == 0.0))
EW_DEFINE_UNARY_INT(logical_not, x == 0)

static void bitwise_not_i64(int64_t *o, const int64_t *const *in, int64_t n, ew_params *p)
{
    const int64_t *a = in[0];
    if (p->dtype == MTK_BOOL) { /* ~True is False */
        for (int64_t j = 0; j < n; j++) o[j] = !a[j];
    } else {
        for (int64_t j = 0; j < n; j++) o[j] = ~a[j];
    }
}

EW_DEFINE_UNARY_FLOAT(exp, expf(x), exp(x))
EW_DEFINE_UNARY_FLOAT(exp2, exp2f(x), exp2(x))
EW_DEFINE_UNARY_FLOAT(expm1, expm1f(x), expm1(x))
EW_DEFINE_UNARY_FLOAT(log, logf(x), log(x))
EW_DEFINE_UNARY_FLOAT(log2, log2f(x), log2(x))
EW_DEFINE_UNARY_FLOAT(log10, log10f(x), log10(x))
EW_DEFINE_UNARY_FLOAT(log1p, log1pf(x), log1p(x))
EW_DEFINE_UNARY_FLOAT(sqrt, sqrtf(x), sqrt(x))
EW_DEFINE_UNARY_FLOAT(rsqrt, 1.0f / sqrtf(x), 1.0 / sqrt(x))
EW_DEFINE_UNARY_FLOAT(sin, sinf(x), sin(x))
EW_DEFINE_UNARY_FLOAT(cos, cosf(x), cos(x))
EW_DEFINE_UNARY_FLOAT(tan, tanf(x), tan(x))
EW_DEFINE_UNARY_FLOAT(asin, asinf(x), asin(x))
EW_DEFINE_UNARY_FLOAT(acos, acosf(x), acos(x))
EW_DEFINE_UNARY_FLOAT(atan, atanf(x), atan(x))
EW_DEFINE_UNARY_FLOAT(sinh, sinhf(x), sinh(x))
EW_DEFINE_UNARY_FLOAT(cosh, coshf(x), cosh(x))
EW_DEFINE_UNARY_FLOAT(tanh, tanhf(x), tanh(x))
EW_DEFINE_UNARY_FLOAT(sigmoid, 1.0f / (1.0f + expf(-x)), 1.0 / (1.0 + exp(-x)))
EW_DEFINE_UNARY_FLOAT(erf, erff(x), erf(x))
EW_DEFINE_UNARY_FLOAT(erfc, erfcf(x), erfc(x))
EW_DEFINE_UNARY_FLOAT(reciprocal, 1.0f / x, 1.0 / x)

EW_DEFINE_UNARY_FLOAT(isnan, (float)(x != x), (double)(x != x))
EW_DEFINE_UNARY_INT(false, 0)
EW_DEFINE_UNARY_FLOAT(isinf, (float)(isinf(x) != 0), (double)(isinf(x) != 0))
EW_DEFINE_UNARY_FLOAT(isfinite, (float)(isfinite(x) != 0), (double)(isfinite(x) != 0))
EW_DEFINE_UNARY_INT(true, 1)

/* ----------------------------------------------------------- info rows */

#define FNS_F(name) { name##_f32, name##_f64, NULL }
#define FNS_FI(name) { name##_f32, name##_f64, name##_i64 }
#define FNS_FI2(fname, iname) { fname##_f32, fname##_f64, iname##_i64 }
#define FNS_I(name) { NULL, NULL, name##_i64 }

static const char neg_bool_message[] =
    "Negation, the `-` operator, on a bool tensor is not supported. If you are trying to invert a "
    "mask, use the `~` or `logical_not()` operator instead.";

#define KEEP(kernel, cpu, fns) { EW_UNARY_KEEP, 0, NULL, kernel, cpu, NULL, 0, EW_R_PRIM, fns }
#define TO_FLOAT(kernel, name) { EW_UNARY_FLOAT, 0, NULL, kernel, EW_FLOATS, NULL, 0, EW_R_PRIM, FNS_F(name) }
#define EW_INTS_FLOATS (EW_INTS | EW_FLOATS)

const ew_unary_info mtk_ew_info_NEG = { EW_UNARY_KEEP, EW_BOOL, neg_bool_message, "neg_cpu",
                                        EW_INTS_FLOATS, NULL, 0, EW_R_PRIM, FNS_FI(neg) };
const ew_unary_info mtk_ew_info_NEGATIVE = { EW_UNARY_KEEP, EW_BOOL, neg_bool_message, "neg_cpu",
                                             EW_INTS_FLOATS, NULL, 0, EW_R_PRIM, FNS_FI(neg) };
const ew_unary_info mtk_ew_info_ABS = KEEP("abs_cpu", EW_INTS_FLOATS | EW_F8, FNS_FI(abs));
const ew_unary_info mtk_ew_info_SIGN = KEEP("sign_cpu", EW_NUMERIC, FNS_FI(sign));
const ew_unary_info mtk_ew_info_FLOOR = KEEP("floor_vml_cpu", EW_INTS_FLOATS, FNS_FI2(floor, identity));
const ew_unary_info mtk_ew_info_CEIL = KEEP("ceil_vml_cpu", EW_INTS_FLOATS, FNS_FI2(ceil, identity));
const ew_unary_info mtk_ew_info_TRUNC = KEEP("trunc_vml_cpu", EW_INTS_FLOATS, FNS_FI2(trunc, identity));
const ew_unary_info mtk_ew_info_RELU = { EW_UNARY_KEEP, 0, NULL, "clamp_min_scalar_cpu", EW_INTS_FLOATS,
                                         "Boolean inputs not supported for relu", 1, EW_R_RELU, FNS_FI(relu) };
const ew_unary_info mtk_ew_info_SQUARE = { EW_UNARY_KEEP_INT64, 0, NULL, "pow", EW_INTS_FLOATS, NULL, 0,
                                           EW_R_PRIM, FNS_FI(square) };
const ew_unary_info mtk_ew_info_BITWISE_NOT = KEEP("bitwise_not_cpu", EW_INTS | EW_BOOL, FNS_I(bitwise_not));
const ew_unary_info mtk_ew_info_LOGICAL_NOT = { EW_UNARY_BOOL, 0, NULL, "logical_not_cpu", EW_NUMERIC,
                                                NULL, 0, EW_R_PRIM, FNS_FI(logical_not) };

const ew_unary_info mtk_ew_info_EXP = TO_FLOAT("exp_vml_cpu", exp);
const ew_unary_info mtk_ew_info_EXP2 = TO_FLOAT("exp2", exp2);
const ew_unary_info mtk_ew_info_EXPM1 = TO_FLOAT("expm1_vml_cpu", expm1);
const ew_unary_info mtk_ew_info_LOG = TO_FLOAT("log_vml_cpu", log);
const ew_unary_info mtk_ew_info_LOG2 = TO_FLOAT("log2_vml_cpu", log2);
const ew_unary_info mtk_ew_info_LOG10 = TO_FLOAT("log10_vml_cpu", log10);
const ew_unary_info mtk_ew_info_LOG1P = TO_FLOAT("log1p_vml_cpu", log1p);
const ew_unary_info mtk_ew_info_SQRT = TO_FLOAT("sqrt_vml_cpu", sqrt);
const ew_unary_info mtk_ew_info_RSQRT = TO_FLOAT("rsqrt_cpu", rsqrt);
const ew_unary_info mtk_ew_info_SIN = TO_FLOAT("sin_vml_cpu", sin);
const ew_unary_info mtk_ew_info_COS = TO_FLOAT("cos_vml_cpu", cos);
const ew_unary_info mtk_ew_info_TAN = TO_FLOAT("tan_vml_cpu", tan);
const ew_unary_info mtk_ew_info_ASIN = TO_FLOAT("asin_vml_cpu", asin);
const ew_unary_info mtk_ew_info_ACOS = TO_FLOAT("acos_vml_cpu", acos);
const ew_unary_info mtk_ew_info_ATAN = TO_FLOAT("atan_vml_cpu", atan);
const ew_unary_info mtk_ew_info_SINH = TO_FLOAT("sinh_cpu", sinh);
const ew_unary_info mtk_ew_info_COSH = TO_FLOAT("cosh_cpu", cosh);
const ew_unary_info mtk_ew_info_TANH = TO_FLOAT("tanh_vml_cpu", tanh);
const ew_unary_info mtk_ew_info_SIGMOID = { EW_UNARY_FLOAT, 0, NULL, "sigmoid_cpu_reduced_float", EW_FLOATS,
                                            NULL, 0, EW_R_EMPTY_LIKE, FNS_F(sigmoid) };
const ew_unary_info mtk_ew_info_ERF = TO_FLOAT("erf_vml_cpu", erf);
const ew_unary_info mtk_ew_info_ERFC = TO_FLOAT("erfc_vml_cpu", erfc);
const ew_unary_info mtk_ew_info_RECIPROCAL = TO_FLOAT("reciprocal_cpu", reciprocal);

const ew_unary_info mtk_ew_info_ISNAN = { EW_UNARY_BOOL, 0, NULL, "isnan", EW_ALL, NULL, 0, EW_R_PRIM,
                                          FNS_FI2(isnan, false) };
const ew_unary_info mtk_ew_info_ISINF = { EW_UNARY_BOOL, 0, NULL, "isinf", EW_ALL & ~EW_BIT(MTK_FLOAT8_E4M3FN),
                                          NULL, 0, EW_R_ISINF, FNS_FI2(isinf, false) };
const ew_unary_info mtk_ew_info_ISFINITE = { EW_UNARY_BOOL, EW_BIT(MTK_FLOAT8_E4M3FN),
                                             "\"isfinite\" not implemented for 'Float8_e4m3fn'", "isfinite",
                                             EW_ALL, NULL, 0, EW_R_ISFINITE, FNS_FI2(isfinite, true) };

/* ------------------------------------------------------- meta and cpu */

static mtk_dtype result_dtype(mtk_ctx *ctx, const ew_unary_info *info, mtk_dtype in)
{
    switch (info->kind) {
    case EW_UNARY_KEEP: return in;
    case EW_UNARY_KEEP_INT64: return in == MTK_BOOL ? MTK_INT64 : in;
    case EW_UNARY_FLOAT: return mtk_dtype_is_integral(in, true) ? mtk_ctx_dtype(ctx) : in;
    case EW_UNARY_BOOL: return MTK_BOOL;
    }
    return in;
}

bool mtk_ew_unary_meta(mtk_op_call *call)
{
    const ew_unary_info *info = call->op->info;
    mtk_tensor *x = arg_tensor(call, 0);
    if (ew_in(info->rejects, x->dtype)) return mtk_call_error(call, MTK_ERR_DTYPE, "%s", info->reject_message);
    mtk_dtype dtype = result_dtype(call->ctx, info, x->dtype);
    if (info->inplace_arg > 0 && arg_bool(call, info->inplace_arg))
        return ew_set_inplace_output(call, 0, dtype);
    bool one_primitive = info->recipe == EW_R_PRIM || info->recipe == EW_R_EMPTY_LIKE;
    if (one_primitive && ew_plain_contiguous((const mtk_tensor *const *)&x, 1))
        return ew_set_contiguous_output(call, dtype, x->shape, x->ndim);
    if (call->device == MTK_DEVICE_CPU) { /* one TensorIterator over x in the computation dtype */
        mtk_dtype in = info->kind == EW_UNARY_BOOL ? x->dtype : dtype;
        ew_lay out = ew_lay_cpu_unary(info->recipe, ew_lay_of(x, call->device), in);
        return ew_set_output(call, dtype, &out);
    }
    /* the reference converts to opmath of the result (of the input for predicates) */
    mtk_dtype compute = ew_opmath(info->kind == EW_UNARY_BOOL ? x->dtype : dtype);
    ew_lay out = ew_lay_unary(info->recipe, ew_lay_of(x, call->device), compute);
    return ew_set_output(call, dtype, &out);
}

bool mtk_ew_unary_cpu(mtk_op_call *call)
{
    const ew_unary_info *info = call->op->info;
    const mtk_tensor *x = arg_tensor(call, 0);
    mtk_dtype compute = info->kind == EW_UNARY_BOOL ? x->dtype : result_dtype(call->ctx, info, x->dtype);
    if (info->cpu_reject_message && !ew_in(info->cpu_dtypes, compute) && compute == MTK_BOOL)
        return mtk_call_error(call, MTK_ERR_DTYPE, "%s", info->cpu_reject_message);
    if (!ew_check_cpu_dtype(call, info->kernel_name, info->cpu_dtypes, compute)) return false;
    ew_params params = { .dtype = compute };
    if (!ew_run(call->out[0], &x, 1, compute, &info->fns, &params, 0))
        return ew_check_cpu_dtype(call, info->kernel_name, 0, compute);
    return true;
}

/* positive(x) is x itself (PyTorch returns the same tensor). */
bool mtk_ew_positive_meta(mtk_op_call *call)
{
    const mtk_tensor *x = arg_tensor(call, 0);
    if (x->dtype == MTK_BOOL)
        return mtk_call_error(call, MTK_ERR_DTYPE, "The `+` operator, on a bool tensor is not supported.");
    call->result = call->args[0];
    return mtk_call_set_outputs(call, 0);
}

/* ---------------------------------------------------------------- round */

/* round half to even; with decimals, scaled by 10^|decimals| the way
 * PyTorch does it (multiply then divide, or divide then multiply) */
static void round_f32(float *o, const float *const *in, int64_t n, ew_params *p)
{
    const float *a = in[0];
    int64_t decimals = p->i[0];
    if (decimals == 0) {
        for (int64_t j = 0; j < n; j++) o[j] = nearbyintf(a[j]);
    } else if (decimals > 0) {
        float scale = (float)pow(10.0, (double)decimals);
        for (int64_t j = 0; j < n; j++) o[j] = nearbyintf(a[j] * scale) / scale;
    } else {
        float scale = (float)pow(10.0, (double)-decimals);
        for (int64_t j = 0; j < n; j++) o[j] = nearbyintf(a[j] / scale) * scale;
    }
}

static void round_f64(double *o, const double *const *in, int64_t n, ew_params *p)
{
    const double *a = in[0];
    int64_t decimals = p->i[0];
    if (decimals == 0) {
        for (int64_t j = 0; j < n; j++) o[j] = nearbyint(a[j]);
    } else if (decimals > 0) {
        double scale = pow(10.0, (double)decimals);
        for (int64_t j = 0; j < n; j++) o[j] = nearbyint(a[j] * scale) / scale;
    } else {
        double scale = pow(10.0, (double)-decimals);
        for (int64_t j = 0; j < n; j++) o[j] = nearbyint(a[j] / scale) * scale;
    }
}

bool mtk_ew_round_meta(mtk_op_call *call)
{
    mtk_tensor *x = arg_tensor(call, 0);
    ew_lay in = ew_lay_of(x, call->device);
    /* torch's meta: empty_like; its cpu: one TensorIterator */
    ew_lay out = call->device == MTK_DEVICE_CPU ? ew_lay_iter1(in) : ew_lay_elem1(in);
    return ew_set_output(call, x->dtype, &out);
}

bool mtk_ew_round_cpu(mtk_op_call *call)
{
    const mtk_tensor *x = arg_tensor(call, 0);
    int64_t decimals = arg_int(call, 1);
    if (decimals != 0) {
        if (!ew_check_cpu_dtype(call, "round_cpu", EW_FLOATS, x->dtype)) return false;
    } else if (!ew_check_cpu_dtype(call, "round_vml_cpu", EW_INTS | EW_FLOATS, x->dtype)) {
        return false;
    }
    ew_params params = { .i = { decimals }, .dtype = x->dtype };
    const ew_fns fns = { round_f32, round_f64, identity_i64 };
    ew_run(call->out[0], &x, 1, x->dtype, &fns, &params, 0);
    return true;
}
