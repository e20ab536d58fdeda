/* Range creation ops: arange and linspace.
 *
 * Lengths, dtypes and errors follow torch's meta implementation (the
 * Python reference in torch/_refs).  The cpu values reproduce torch's cpu
 * kernels bit for bit, which means reproducing how they compute:
 *   - arange accumulates in double for float32/float64 and in float for
 *     float16/bfloat16, with fused multiply-adds, and torch's vectorized
 *     loop writes blocks of two 32-byte vectors: each vector starts from
 *     base = start + step * index and adds lane * step to the *rounded*
 *     base.  Leftover elements use start + step * index directly.  (One
 *     serial chunk: torch splits outputs above 32768 elements across its
 *     threads, which moves block boundaries.)
 *   - linspace computes each element from the nearer end: start + step * i
 *     for the first half, end - step * (steps - i - 1) for the rest, in the
 *     dtype's own arithmetic (double step for integer dtypes; every
 *     float16/bfloat16 operation rounded to the dtype).
 */
#include "ops/creation.h"
#include "ops/registry.h"
#include "ops/op_util.h"
#include "core/scalar.h"
#include "mtk/ops/creation.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define VECTOR_BYTES 32 /* torch runs these kernels with 32-byte vectors (AVX2 code, also on AVX-512 cpus) */

/* Python's repr() of a number, for messages: 0, 2.5, 1e+20, inf, True. */
static const char *py_repr(const mtk_value *v, char *buf, size_t cap)
{
    if (v->kind == MTK_VALUE_BOOL) return v->as.b ? "True" : "False";
    if (v->kind == MTK_VALUE_INT) {
        snprintf(buf, cap, "%lld", (long long)v->as.i);
        return buf;
    }
    double d = v->as.f;
    if (isnan(d)) return "nan";
    if (isinf(d)) return d > 0 ? "inf" : "-inf";
    /* shortest digits that read back as d */
    char sci[40];
    for (int prec = 0; prec < 17; prec++) {
        snprintf(sci, sizeof sci, "%.*e", prec, d);
        if (strtod(sci, NULL) == d) break;
    }
    /* sci is "-d.ddde+XX": split digits and exponent */
    char digits[24];
    size_t nd = 0;
    const char *p = sci;
    bool negative = *p == '-';
    if (negative) p++;
    for (; *p && *p != 'e'; p++)
        if (*p != '.') digits[nd++] = *p;
    while (nd > 1 && digits[nd - 1] == '0') nd--;
    digits[nd] = '\0';
    int exp10 = atoi(p + 1);
    size_t len = 0;
    if (negative) buf[len++] = '-';
    if (exp10 >= -4 && exp10 < 16) { /* Python's repr switches to exponents outside this */
        if (exp10 < 0) {
            len += (size_t)snprintf(buf + len, cap - len, "0.");
            for (int i = -1; i > exp10; i--) buf[len++] = '0';
            snprintf(buf + len, cap - len, "%s", digits);
        } else {
            for (int i = 0; i <= exp10 || i < (int)nd; i++) {
                if (i == exp10 + 1) buf[len++] = '.';
                buf[len++] = i < (int)nd ? digits[i] : '0';
            }
            if ((int)nd <= exp10 + 1) buf[len++] = '.', buf[len++] = '0';
            buf[len] = '\0';
        }
    } else {
        buf[len++] = digits[0];
        if (nd > 1) len += (size_t)snprintf(buf + len, cap - len, ".%s", digits + 1);
        snprintf(buf + len, cap - len, "e%c%02d", exp10 < 0 ? '-' : '+', abs(exp10));
    }
    return buf;
}

static bool is_int_value(const mtk_value *v) { return v->kind == MTK_VALUE_INT || v->kind == MTK_VALUE_BOOL; }

static int64_t int_of(const mtk_value *v) { return v->kind == MTK_VALUE_BOOL ? (int64_t)v->as.b : v->as.i; }

/* ---------------------------------------------------------------- arange */

/* What arange computes, from its arguments (shared by meta and cpu). */
typedef struct arange_plan {
    mtk_value start, end, step;  /* end filled in for arange(end)         */
    bool integer_args;           /* all three are Python ints            */
    int64_t int_start, int_step; /* truncated, for integer computations  */
    int64_t length;
} arange_plan;

/* int(x) of a Python number, refusing what int64 cannot hold. */
static bool truncate_to_int(mtk_op_call *call, const mtk_value *v, int64_t *out)
{
    if (is_int_value(v)) {
        *out = int_of(v);
        return true;
    }
    double d = trunc(v->as.f);
    if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0))
        return mtk_call_error(call, MTK_ERR_OVERFLOW, "invalid size, possible overflow?");
    *out = (int64_t)d;
    return true;
}

/* Python's a >= b for two numbers (exact for two ints; NaN: false). */
static bool number_ge(const mtk_value *a, const mtk_value *b)
{
    if (is_int_value(a) && is_int_value(b)) return int_of(a) >= int_of(b);
    return mtk_value_as_double(a) >= mtk_value_as_double(b);
}

/* Sorts arange's arguments into PyTorch's overloads, arange(end) and
 * arange(start, end, step=1): the signature lets each be left out (None)
 * and this refuses the combinations no overload takes. */
static bool arange_overload(mtk_op_call *call, arange_plan *p)
{
    bool has_start = !arg_is_none(call, 0), has_end = !arg_is_none(call, 1), has_step = !arg_is_none(call, 2);
    bool start_by_keyword = call->keyword_args & 1u;
    p->start = call->args[0];
    p->end = call->args[1];
    p->step = has_step ? call->args[2] : mtk_value_int(1);
    if (!has_end && (!has_start || start_by_keyword)) /* arange(), arange(start=3) */
        return mtk_call_error(call, MTK_ERR_INVALID_ARGUMENT, "missing 1 required positional arguments: \"end\"");
    if (has_step && !(has_start && has_end)) /* arange(5, step=2), arange(end=5, step=2) */
        return mtk_call_error(call, MTK_ERR_INVALID_ARGUMENT,
                              "received an invalid combination of arguments: a step needs both start and end");
    if (!has_end) { /* arange(end) */
        p->end = p->start;
        p->start = mtk_value_int(0);
    } else if (!has_start) { /* arange(end=5) */
        p->start = mtk_value_int(0);
    }
    return true;
}

static bool arange_plan_make(mtk_op_call *call, mtk_dtype *dtype_out, arange_plan *p)
{
    char a[40], b[40];
    if (!arange_overload(call, p)) return false;
    double step = mtk_value_as_double(&p->step);
    if (step == 0) return mtk_call_error(call, MTK_ERR_INVALID_ARGUMENT, "step must be nonzero");
    if ((step > 0 && !number_ge(&p->end, &p->start)) || (step < 0 && !number_ge(&p->start, &p->end)))
        return mtk_call_error(call, MTK_ERR_INVALID_ARGUMENT,
                              "upper bound and lower bound inconsistent with step sign");
    if (!isfinite(mtk_value_as_double(&p->start)) || !isfinite(mtk_value_as_double(&p->end)))
        return mtk_call_error(call, MTK_ERR_INVALID_ARGUMENT, "unsupported range: %s -> %s",
                              py_repr(&p->start, a, sizeof a), py_repr(&p->end, b, sizeof b));
    if (!isfinite(step))
        return mtk_call_error(call, MTK_ERR_INVALID_ARGUMENT, "step must be finite but got %s",
                              py_repr(&p->step, a, sizeof a));

    p->integer_args = is_int_value(&p->start) && is_int_value(&p->end) && is_int_value(&p->step);
    mtk_dtype dtype = !arg_is_none(call, 3)  ? call->args[3].as.dtype
                      : p->integer_args     ? MTK_INT64
                                            : mtk_ctx_dtype(call->ctx);
    bool integer_dtype = mtk_dtype_is_integral(dtype, false);
    int64_t int_end = 0;
    if (integer_dtype || p->integer_args) {
        if (!truncate_to_int(call, &p->step, &p->int_step)) return false;
        if (p->int_step == 0) return mtk_call_error(call, MTK_ERR_INVALID_ARGUMENT, "step must be nonzero");
        if (!truncate_to_int(call, &p->start, &p->int_start) || !truncate_to_int(call, &p->end, &int_end))
            return false;
    }
    if (dtype == MTK_INT64 || p->integer_args) {
        /* (end - start + step - sgn) // step, in integers */
        int64_t sgn = p->int_step > 0 ? 1 : -1, num, q;
        if (__builtin_sub_overflow(int_end, p->int_start, &num) || __builtin_add_overflow(num, p->int_step - sgn, &num))
            return mtk_call_error(call, MTK_ERR_OVERFLOW, "invalid size, possible overflow?");
        q = num / p->int_step;
        if ((num % p->int_step != 0) && ((num < 0) != (p->int_step < 0))) q--; /* floor */
        p->length = q;
    } else {
        double span = is_int_value(&p->start) && is_int_value(&p->end)
                          ? (double)(int_of(&p->end) - int_of(&p->start))
                          : mtk_value_as_double(&p->end) - mtk_value_as_double(&p->start);
        double length = ceil(span / step);
        if (!(length >= 0 && length < 9223372036854775808.0))
            return mtk_call_error(call, MTK_ERR_OVERFLOW, "invalid size, possible overflow?");
        p->length = (int64_t)length;
    }
    if (p->length < 0) p->length = 0;
    *dtype_out = dtype;
    return true;
}

bool mtk_arange_meta(mtk_op_call *call)
{
    arange_plan p;
    mtk_dtype dtype;
    if (!arange_plan_make(call, &dtype, &p)) return false;
    return mtk_creation_output(call, 3, dtype, call->device, &p.length, 1, NULL);
}

static const char *legacy_name(mtk_dtype dtype)
{
    switch (dtype) {
    case MTK_BOOL: return "Bool";
    case MTK_FLOAT8_E5M2: return "Float8_e5m2";
    case MTK_FLOAT8_E4M3FN: return "Float8_e4m3fn";
    default: return mtk_dtype_name(dtype);
    }
}

/* torch's cpu kernels of arange and linspace have no bool or float8 case */
static bool check_kernel_dtype(mtk_op_call *call, const char *kernel, mtk_dtype dtype)
{
    if (dtype == MTK_BOOL || mtk_dtype_is_float8(dtype))
        return mtk_call_error(call, MTK_ERR_NOT_IMPLEMENTED, "\"%s\" not implemented for '%s'", kernel,
                              legacy_name(dtype));
    return true;
}

/* Values of a float64 arange (see the top of the file). */
static void arange_f64(double *out, int64_t n, double start, double step)
{
    const int64_t lanes = VECTOR_BYTES / 8;
    int64_t i = 0;
    for (; i <= n - 2 * lanes; i += 2 * lanes)
        for (int64_t k = i; k < i + 2 * lanes; k += lanes) {
            double base = fma(step, (double)k, start);
            for (int64_t j = 0; j < lanes; j++) out[k + j] = fma((double)j, step, base);
        }
    for (; i < n; i++) out[i] = fma(step, (double)i, start);
}

static void arange_f32(float *out, int64_t n, double start, double step)
{
    const int64_t lanes = VECTOR_BYTES / 4;
    int64_t i = 0;
    for (; i <= n - 2 * lanes; i += 2 * lanes)
        for (int64_t k = i; k < i + 2 * lanes; k += lanes) {
            float base = (float)fma(step, (double)k, start);
            for (int64_t j = 0; j < lanes; j++) out[k + j] = (float)fma((double)j, step, (double)base);
        }
    for (; i < n; i++) out[i] = (float)fma(step, (double)i, start);
}

/* float16/bfloat16: float accumulation, rounding through the dtype */
static float round_to(mtk_dtype dtype, float f, uint16_t *bits)
{
    if (dtype == MTK_FLOAT16) {
        *bits = mtk_f32_to_f16(f);
        return mtk_f16_to_f32(*bits);
    }
    *bits = mtk_f32_to_bf16(f);
    return mtk_bf16_to_f32(*bits);
}

/* a * b rounded to float on its own: torch's bfloat16 lanes add a
 * rounded product (no fused multiply-add there) */
static float rounded_product(float a, float b)
{
    volatile float product = a * b;
    return product;
}

static void arange_half(mtk_dtype dtype, uint16_t *out, int64_t n, float start, float step)
{
    const int64_t lanes = VECTOR_BYTES / 2;
    bool fused_lanes = dtype == MTK_FLOAT16; /* float16 lanes fuse; bfloat16 lanes do not */
    int64_t i = 0;
    uint16_t bits;
    for (; i <= n - 2 * lanes; i += 2 * lanes)
        for (int64_t k = i; k < i + 2 * lanes; k += lanes) {
            float base = round_to(dtype, fmaf(step, (float)k, start), &bits);
            for (int64_t j = 0; j < lanes; j++) {
                float v = fused_lanes ? fmaf((float)j, step, base) : base + rounded_product((float)j, step);
                round_to(dtype, v, &bits);
                out[k + j] = bits;
            }
        }
    for (; i < n; i++) {
        round_to(dtype, fmaf(step, (float)i, start), &bits);
        out[i] = bits;
    }
}

bool mtk_arange_cpu(mtk_op_call *call)
{
    mtk_tensor *out = call->out[0]; /* (length,), contiguous */
    arange_plan p;
    mtk_dtype dtype;
    if (!arange_plan_make(call, &dtype, &p) || !check_kernel_dtype(call, "arange_cpu", out->dtype)) return false;
    char *data = mtk_tensor_data(out);
    int64_t n = p.length;
    double start = mtk_value_as_double(&p.start), step = mtk_value_as_double(&p.step);
    switch (out->dtype) {
    case MTK_FLOAT64: arange_f64((double *)(void *)data, n, start, step); break;
    case MTK_FLOAT32: arange_f32((float *)(void *)data, n, start, step); break;
    case MTK_FLOAT16:
    case MTK_BFLOAT16: {
        /* the float accumulators come from the Python numbers */
        float fstart = is_int_value(&p.start) ? (float)int_of(&p.start) : (float)p.start.as.f;
        float fstep = is_int_value(&p.step) ? (float)int_of(&p.step) : (float)p.step.as.f;
        arange_half(out->dtype, (uint16_t *)(void *)data, n, fstart, fstep);
        break;
    }
    default: { /* integers: int64 arithmetic that wraps, then the dtype's wrap */
        size_t esize = mtk_dtype_size(out->dtype);
        uint64_t value = (uint64_t)p.int_start;
        for (int64_t i = 0; i < n; i++, value += (uint64_t)p.int_step)
            mtk_store_i64(out->dtype, data + (size_t)i * esize, (int64_t)value);
        break;
    }
    }
    return true;
}

/* -------------------------------------------------------------- linspace */

/* linspace's start and end may be 0-dim tensors, as torch's
 * linspace.Tensor_Tensor overloads: their values are read on cpu (as
 * .item() would), their dtype never decides the output's. */
static bool check_end_tensor(mtk_op_call *call, int arg, const char *name, bool *meta)
{
    const mtk_value *v = &call->args[arg];
    if (v->kind != MTK_VALUE_TENSOR) return true;
    if (v->as.tensor->ndim != 0)
        return mtk_call_error(call, MTK_ERR_SHAPE,
                              "linspace only supports 0-dimensional start and end tensors, but got %s with %d "
                              "dimension(s).",
                              name, (int)v->as.tensor->ndim);
    if (v->as.tensor->device == MTK_DEVICE_META) *meta = true;
    return true;
}

bool mtk_linspace_meta(mtk_op_call *call)
{
    bool meta_end = false;
    if (!check_end_tensor(call, 0, "start", &meta_end) || !check_end_tensor(call, 1, "end", &meta_end))
        return false;
    int64_t steps = arg_int(call, 2);
    if (steps < 0) return mtk_call_error(call, MTK_ERR_INVALID_ARGUMENT, "number of steps must be non-negative");
    /* the device argument or the default device, not a 0-dim cpu end's */
    if (!mtk_creation_output(call, 3, mtk_ctx_dtype(call->ctx), mtk_ctx_device(call->ctx), &steps, 1, NULL))
        return false;
    if (meta_end) { /* torch dispatches on a meta end: the result is meta */
        call->out[0]->device = MTK_DEVICE_META;
        call->device = MTK_DEVICE_META;
    }
    return true;
}

/* A 0-dim tensor end as the Python number its .item() gives. */
static mtk_value end_value(const mtk_value *v)
{
    if (v->kind != MTK_VALUE_TENSOR) return *v;
    const mtk_tensor *t = v->as.tensor;
    const char *p = mtk_tensor_data(t); /* the first element: offset included */
    if (t->dtype == MTK_BOOL) return mtk_value_bool(mtk_load_i64(t->dtype, p) != 0);
    if (mtk_dtype_is_floating(t->dtype)) return mtk_value_float(mtk_load_f64(t->dtype, p));
    return mtk_value_int(mtk_load_i64(t->dtype, p));
}

/* end - step * k as torch's fused multiply-subtract computes it: a NaN
 * comes out as the NaN operand, sign unchanged */
static double from_end(double end, double step, double k)
{
    double v = fma(-step, k, end);
    return isnan(v) && (isnan(step) || isnan(end)) ? (isnan(step) ? step : end) : v;
}

static float from_end_f(float end, float step, float k)
{
    float v = fmaf(-step, k, end);
    return isnan(v) && (isnan(step) || isnan(end)) ? (isnan(step) ? step : end) : v;
}

static void linspace_f64(double *out, int64_t steps, double start, double end)
{
    double step = (end - start) / (double)(steps - 1);
    int64_t halfway = steps / 2;
    for (int64_t i = 0; i < steps; i++)
        out[i] = i < halfway ? fma(step, (double)i, start) : from_end(end, step, (double)(steps - i - 1));
}

static void linspace_f32(float *out, int64_t steps, float start, float end)
{
    float step = (end - start) / (float)(steps - 1);
    int64_t halfway = steps / 2;
    for (int64_t i = 0; i < steps; i++)
        out[i] = i < halfway ? fmaf(step, (float)i, start) : from_end_f(end, step, (float)(steps - i - 1));
}

/* every operation rounds to the 16-bit dtype, as c10::Half arithmetic does */
static void linspace_half(mtk_dtype dtype, uint16_t *out, int64_t steps, double start_d, double end_d)
{
    uint16_t bits;
    float start = round_to(dtype, (float)start_d, &bits), end = round_to(dtype, (float)end_d, &bits);
    float diff = round_to(dtype, end - start, &bits);
    float step = round_to(dtype, diff / round_to(dtype, (float)(steps - 1), &bits), &bits);
    int64_t halfway = steps / 2;
    for (int64_t i = 0; i < steps; i++) {
        float k = round_to(dtype, (float)(i < halfway ? i : steps - i - 1), &bits);
        float delta = round_to(dtype, step * k, &bits);
        round_to(dtype, i < halfway ? start + delta : end - delta, &bits);
        out[i] = bits;
    }
}

/* integer dtypes: a double step from the converted ends, truncated values */
static void linspace_int(mtk_dtype dtype, char *out, int64_t steps, const mtk_value *start_v,
                         const mtk_value *end_v)
{
    size_t esize = mtk_dtype_size(dtype);
    unsigned char elem[8];
    mtk_scalar_store(start_v, dtype, elem);
    double start = (double)mtk_load_i64(dtype, elem);
    mtk_scalar_store(end_v, dtype, elem);
    double end = (double)mtk_load_i64(dtype, elem);
    double step = (end - start) / (double)(steps - 1);
    int64_t halfway = steps / 2;
    for (int64_t i = 0; i < steps; i++) {
        double v = i < halfway ? fma(step, (double)i, start) : from_end(end, step, (double)(steps - i - 1));
        mtk_store_f64(dtype, out + (size_t)i * esize, v);
    }
}

bool mtk_linspace_cpu(mtk_op_call *call)
{
    mtk_tensor *out = call->out[0]; /* (steps,), contiguous */
    mtk_value start_v = end_value(&call->args[0]), end_v = end_value(&call->args[1]);
    const mtk_value *start = &start_v, *end = &end_v;
    int64_t steps = out->shape[0];
    char *data = mtk_tensor_data(out);
    unsigned char elem[8];
    if (steps == 0) return true;
    if (steps == 1) { /* fill_(start): the one-element fill, unchecked for 16-bit floats */
        bool reduced = out->dtype == MTK_FLOAT16 || out->dtype == MTK_BFLOAT16 || mtk_dtype_is_float8(out->dtype);
        if (!reduced && !mtk_scalar_fits(call, start, out->dtype)) return false;
        mtk_scalar_store(start, out->dtype, elem);
        memcpy(data, elem, mtk_dtype_size(out->dtype));
        return true;
    }
    if (!check_kernel_dtype(call, "linspace_cpu", out->dtype) || !mtk_scalar_fits(call, start, out->dtype) ||
        !mtk_scalar_fits(call, end, out->dtype))
        return false;
    double start_d = mtk_value_as_double(start), end_d = mtk_value_as_double(end);
    switch (out->dtype) {
    case MTK_FLOAT64: linspace_f64((double *)(void *)data, steps, start_d, end_d); break;
    case MTK_FLOAT32: linspace_f32((float *)(void *)data, steps, (float)start_d, (float)end_d); break;
    case MTK_FLOAT16:
    case MTK_BFLOAT16: linspace_half(out->dtype, (uint16_t *)(void *)data, steps, start_d, end_d); break;
    default: linspace_int(out->dtype, data, steps, start, end); break;
    }
    return true;
}

/* ------------------------------------------------------------ typed API */

static mtk_tensor *run_range(mtk_ctx *ctx, mtk_op_id id, mtk_value a, mtk_value b, mtk_value c, mtk_dtype dtype)
{
    mtk_op_call call;
    mtk_op_call_init(&call, ctx, mtk_op_by_id(id));
    call.args[0] = a;
    call.args[1] = b;
    call.args[2] = c;
    if (dtype != MTK_DTYPE_UNDEFINED) call.args[3] = mtk_value_dtype(dtype);
    return mtk_op_run_tensor(&call);
}

mtk_tensor *mtk_arange(mtk_ctx *ctx, double start, double end, double step, mtk_dtype dtype)
{
    return run_range(ctx, OPID_ARANGE, mtk_value_float(start), mtk_value_float(end), mtk_value_float(step), dtype);
}

mtk_tensor *mtk_arange_int(mtk_ctx *ctx, int64_t start, int64_t end, int64_t step, mtk_dtype dtype)
{
    return run_range(ctx, OPID_ARANGE, mtk_value_int(start), mtk_value_int(end), mtk_value_int(step), dtype);
}

mtk_tensor *mtk_linspace(mtk_ctx *ctx, double start, double end, int64_t steps, mtk_dtype dtype)
{
    return run_range(ctx, OPID_LINSPACE, mtk_value_float(start), mtk_value_float(end), mtk_value_int(steps), dtype);
}
