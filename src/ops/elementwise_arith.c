/* Element functions of binary ops.  Floating formulas follow PyTorch's
 * cpu kernels so that results agree bit for bit where they can; integer
 * functions wrap like two's-complement C++ and never trap (a zero divisor
 * is reported through p->zero_division, INT64_MIN / -1 wraps). */
#include "ops/elementwise_arith.h"
#include "core/scalar.h"

#include <math.h>

/* ------------------------------------------------------------- add, mul */

EW_DEFINE_BINARY_FLOAT(add, x + y, x + y)
EW_DEFINE_BINARY_INT(add, ew_wrap_add(x, y))
EW_DEFINE_BINARY_FLOAT(sub, x - y, x - y)
EW_DEFINE_BINARY_INT(sub, ew_wrap_sub(x, y))
EW_DEFINE_BINARY_FLOAT(mul, x * y, x * y)
EW_DEFINE_BINARY_INT(mul, ew_wrap_mul(x, y))

/* float16/bfloat16: PyTorch's vectorized kernel rounds alpha to the dtype
 * and fuses the multiply-add in float (its scalar tail rounds alpha * b
 * first, which can differ by one ulp) */
static void add_alpha_f32(float *o, const float *const *in, int64_t n, ew_params *p)
{
    const float *a = in[0], *b = in[1];
    float alpha = (float)p->f[0];
    if (p->dtype == MTK_FLOAT16) alpha = mtk_f16_to_f32(mtk_f32_to_f16(alpha));
    else if (p->dtype == MTK_BFLOAT16) alpha = mtk_bf16_to_f32(mtk_f32_to_bf16(alpha));
    for (int64_t j = 0; j < n; j++) o[j] = fmaf(alpha, b[j], a[j]);
}

static void add_alpha_f64(double *o, const double *const *in, int64_t n, ew_params *p)
{
    const double *a = in[0], *b = in[1];
    double alpha = p->f[0];
    for (int64_t j = 0; j < n; j++) o[j] = fma(alpha, b[j], a[j]);
}

static void add_alpha_i64(int64_t *o, const int64_t *const *in, int64_t n, ew_params *p)
{
    const int64_t *a = in[0], *b = in[1];
    int64_t alpha = p->i[0];
    for (int64_t j = 0; j < n; j++) o[j] = ew_wrap_add(a[j], ew_wrap_mul(alpha, b[j]));
}

/* -------------------------------------------------------------- division */

double ew_floor_divide_f64(double a, double b)
{
    if (b == 0.0) return a / b; /* IEEE: inf or nan */
    double mod = fmod(a, b);
    double div = (a - mod) / b;
    if (mod != 0.0 && (b < 0.0) != (mod < 0.0)) div -= 1.0;
    if (div == 0.0) return copysign(0.0, a / b);
    double floordiv = floor(div);
    if (div - floordiv > 0.5) floordiv += 1.0;
    return floordiv;
}

static float floor_divide_f32(float a, float b)
{
    if (b == 0.0f) return a / b;
    float mod = fmodf(a, b);
    float div = (a - mod) / b;
    if (mod != 0.0f && (b < 0.0f) != (mod < 0.0f)) div -= 1.0f;
    if (div == 0.0f) return copysignf(0.0f, a / b);
    float floordiv = floorf(div);
    if (div - floordiv > 0.5f) floordiv += 1.0f;
    return floordiv;
}

double ew_remainder_f64(double a, double b)
{
    double mod = fmod(a, b);
    if (mod != 0.0 && (b < 0.0) != (mod < 0.0)) mod += b;
    return mod;
}

static float remainder_f32_one(float a, float b)
{
    float mod = fmodf(a, b);
    if (mod != 0.0f && (b < 0.0f) != (mod < 0.0f)) mod += b;
    return mod;
}

/* a / b truncated, a % b; INT64_MIN / -1 wraps instead of trapping */
static inline int64_t wrapping_div(int64_t a, int64_t b) { return b == -1 ? ew_wrap_neg(a) : a / b; }
static inline int64_t c_mod_i64(int64_t a, int64_t b) { return b == -1 ? 0 : a % b; }

EW_DEFINE_BINARY_FLOAT(true_div, x / y, x / y)
/* float16/bfloat16 round the quotient to the dtype before truncating
 * (PyTorch's Half arithmetic), except with an unrounded scalar divisor */
static void trunc_div_f32(float *o, const float *const *in, int64_t n, ew_params *p)
{
    const float *a = in[0], *b = in[1];
    bool round_first = !(p->raw_scalars & 2u);
    if (p->dtype == MTK_FLOAT16 && round_first) {
        for (int64_t j = 0; j < n; j++) o[j] = truncf(mtk_f16_to_f32(mtk_f32_to_f16(a[j] / b[j])));
    } else if (p->dtype == MTK_BFLOAT16 && round_first) {
        for (int64_t j = 0; j < n; j++) o[j] = truncf(mtk_bf16_to_f32(mtk_f32_to_bf16(a[j] / b[j])));
    } else {
        for (int64_t j = 0; j < n; j++) o[j] = truncf(a[j] / b[j]);
    }
}

static void trunc_div_f64(double *o, const double *const *in, int64_t n, ew_params *p)
{
    const double *a = in[0], *b = in[1];
    (void)p;
    for (int64_t j = 0; j < n; j++) o[j] = trunc(a[j] / b[j]);
}
/* the same in float16/bfloat16 arithmetic, every step rounded to the
 * dtype, as PyTorch's Half/BFloat16 kernels compute it */
static float round_to(mtk_dtype d, float v)
{
    return d == MTK_FLOAT16 ? mtk_f16_to_f32(mtk_f32_to_f16(v)) : mtk_bf16_to_f32(mtk_f32_to_bf16(v));
}

static float floor_divide_reduced(mtk_dtype d, float a, float b)
{
    if (b == 0.0f) return a / b;
    float mod = round_to(d, fmodf(a, b));
    float div = round_to(d, round_to(d, a - mod) / b);
    if (mod != 0.0f && (b < 0.0f) != (mod < 0.0f)) div = round_to(d, div - 1.0f);
    if (div == 0.0f) return copysignf(0.0f, round_to(d, a / b));
    float floordiv = floorf(div);
    if (round_to(d, div - floordiv) > 0.5f) floordiv = round_to(d, floordiv + 1.0f);
    return floordiv;
}

static void floor_div_f32(float *o, const float *const *in, int64_t n, ew_params *p)
{
    const float *a = in[0], *b = in[1];
    bool reduced = (p->dtype == MTK_FLOAT16 || p->dtype == MTK_BFLOAT16) && !(p->raw_scalars & 2u);
    if (reduced) {
        for (int64_t j = 0; j < n; j++) o[j] = floor_divide_reduced(p->dtype, a[j], b[j]);
    } else {
        for (int64_t j = 0; j < n; j++) o[j] = floor_divide_f32(a[j], b[j]);
    }
}

static void floor_div_f64(double *o, const double *const *in, int64_t n, ew_params *p)
{
    const double *a = in[0], *b = in[1];
    (void)p;
    for (int64_t j = 0; j < n; j++) o[j] = ew_floor_divide_f64(a[j], b[j]);
}
EW_DEFINE_BINARY_FLOAT(remainder, remainder_f32_one(x, y), ew_remainder_f64(x, y))
EW_DEFINE_BINARY_FLOAT(fmod, fmodf(x, y), fmod(x, y))

/* Integer division family: one loop shape, the rounding in `op`. */
#define DEFINE_INT_DIVISION(name, expr)                                                    \
    static void name##_i64(int64_t *o, const int64_t *const *in, int64_t n, ew_params *p) \
    {                                                                                      \
        const int64_t *a = in[0], *b = in[1];                                              \
        for (int64_t j = 0; j < n; j++) {                                                  \
            int64_t x = a[j], y = b[j];                                                    \
            if (y == 0) {                                                                  \
                p->zero_division = true;                                                   \
                o[j] = 0;                                                                  \
                continue;                                                                  \
            }                                                                              \
            o[j] = (expr);                                                                 \
        }                                                                                  \
    }

static inline int64_t floor_div_i64_one(int64_t x, int64_t y)
{
    int64_t q = wrapping_div(x, y);
    if (c_mod_i64(x, y) != 0 && ((x < 0) != (y < 0))) q -= 1;
    return q;
}

static inline int64_t remainder_i64_one(int64_t x, int64_t y)
{
    int64_t r = c_mod_i64(x, y);
    if (r != 0 && ((r < 0) != (y < 0))) r += y;
    return r;
}

DEFINE_INT_DIVISION(trunc_div, wrapping_div(x, y))
DEFINE_INT_DIVISION(floor_div, floor_div_i64_one(x, y))
DEFINE_INT_DIVISION(remainder, remainder_i64_one(x, y))
DEFINE_INT_DIVISION(fmod, c_mod_i64(x, y))

/* ------------------------------------------------------------------- pow */

/* integer power with wrapping; negative exponents as PyTorch: 1 and -1
 * keep their magnitude, everything else becomes 0 */
static int64_t powi(int64_t base, int64_t exp)
{
    if (exp < 0) {
        if (base == 1) return 1;
        if (base == -1) return (exp % 2) ? -1 : 1;
        return 0;
    }
    uint64_t result = 1, b = (uint64_t)base;
    while (exp) {
        if (exp & 1) result *= b;
        exp >>= 1;
        b *= b;
    }
    return (int64_t)result;
}

EW_DEFINE_BINARY_FLOAT(pow, powf(x, y), pow(x, y))
EW_DEFINE_BINARY_INT(pow, powi(x, y))

/* Tensor_Scalar pow: the exponent comes from p, not from in[1] */
#define DEFINE_POW_SCALAR(name, expr_f32, expr_f64)                                     \
    static void name##_f32(float *o, const float *const *in, int64_t n, ew_params *p)   \
    {                                                                                   \
        const float *a = in[0];                                                         \
        float e = (float)p->f[0];                                                       \
        (void)e;                                                                        \
        for (int64_t j = 0; j < n; j++) {                                               \
            float x = a[j];                                                             \
            o[j] = (expr_f32);                                                          \
        }                                                                               \
    }                                                                                   \
    static void name##_f64(double *o, const double *const *in, int64_t n, ew_params *p) \
    {                                                                                   \
        const double *a = in[0];                                                        \
        double e = p->f[0];                                                             \
        (void)e;                                                                        \
        for (int64_t j = 0; j < n; j++) {                                               \
            double x = a[j];                                                            \
            o[j] = (expr_f64);                                                          \
        }                                                                               \
    }

DEFINE_POW_SCALAR(pow_one, ((void)x, 1.0f), ((void)x, 1.0))
DEFINE_POW_SCALAR(pow_identity, x, x)
DEFINE_POW_SCALAR(pow_sqrt, sqrtf(x), sqrt(x))
DEFINE_POW_SCALAR(pow_rsqrt, 1.0f / sqrtf(x), 1.0 / sqrt(x))
DEFINE_POW_SCALAR(pow_reciprocal, 1.0f / x, 1.0 / x)
DEFINE_POW_SCALAR(pow_square, x * x, x * x)
DEFINE_POW_SCALAR(pow_cube, x * x * x, x * x * x)
DEFINE_POW_SCALAR(pow_inverse_square, 1.0f / (x * x), 1.0 / (x * x))
DEFINE_POW_SCALAR(pow_general, powf(x, e), pow(x, e))

static void pow_scalar_i64(int64_t *o, const int64_t *const *in, int64_t n, ew_params *p)
{
    const int64_t *a = in[0];
    int64_t e = p->i[0];
    for (int64_t j = 0; j < n; j++) o[j] = powi(a[j], e);
}

static const ew_fns pow_scalar_table[] = {
    { pow_one_f32, pow_one_f64, pow_scalar_i64 },
    { pow_identity_f32, pow_identity_f64, pow_scalar_i64 },
    { pow_sqrt_f32, pow_sqrt_f64, NULL },
    { pow_rsqrt_f32, pow_rsqrt_f64, NULL },
    { pow_reciprocal_f32, pow_reciprocal_f64, NULL },
    { pow_square_f32, pow_square_f64, pow_scalar_i64 },
    { pow_cube_f32, pow_cube_f64, pow_scalar_i64 },
    { pow_inverse_square_f32, pow_inverse_square_f64, NULL },
    { pow_general_f32, pow_general_f64, pow_scalar_i64 },
};

const ew_fns *ew_pow_scalar_fns(double e, bool floating)
{
    if (e == 0.0) return &pow_scalar_table[0];
    if (e == 1.0) return &pow_scalar_table[1];
    if (!floating) return &pow_scalar_table[8];
    if (e == 0.5) return &pow_scalar_table[2];
    if (e == -0.5) return &pow_scalar_table[3];
    if (e == -1.0) return &pow_scalar_table[4];
    if (e == 2.0) return &pow_scalar_table[5];
    if (e == 3.0) return &pow_scalar_table[6];
    if (e == -2.0) return &pow_scalar_table[7];
    return &pow_scalar_table[8];
}

/* ------------------------------------------------- maximum, minimum, atan2 */

EW_DEFINE_BINARY_FLOAT(maximum, (x != x || y != y) ? NAN : (x < y ? y : x), (x != x || y != y) ? NAN : (x < y ? y : x))
EW_DEFINE_BINARY_INT(maximum, x < y ? y : x)
EW_DEFINE_BINARY_FLOAT(minimum, (x != x || y != y) ? NAN : (y < x ? y : x), (x != x || y != y) ? NAN : (y < x ? y : x))
EW_DEFINE_BINARY_INT(minimum, y < x ? y : x)
EW_DEFINE_BINARY_FLOAT(atan2, atan2f(x, y), atan2(x, y))

/* ------------------------------------------------- comparisons, logical */

#define DEFINE_PREDICATE(name, expr)                                   \
    EW_DEFINE_BINARY_FLOAT(name, (float)(expr), (double)(expr))       \
    EW_DEFINE_BINARY_INT(name, (int64_t)(expr))

DEFINE_PREDICATE(eq, x == y)
DEFINE_PREDICATE(ne, x != y)
DEFINE_PREDICATE(lt, x < y)
DEFINE_PREDICATE(le, x <= y)
DEFINE_PREDICATE(gt, x > y)
DEFINE_PREDICATE(ge, x >= y)
DEFINE_PREDICATE(logical_and, x != 0 && y != 0)
DEFINE_PREDICATE(logical_or, x != 0 || y != 0)
DEFINE_PREDICATE(logical_xor, (x != 0) != (y != 0))

EW_DEFINE_BINARY_INT(bitwise_and, x & y)
EW_DEFINE_BINARY_INT(bitwise_or, x | y)
EW_DEFINE_BINARY_INT(bitwise_xor, x ^ y)

/* ------------------------------------------------------------ the sets */

#define FNS(name) { name##_f32, name##_f64, name##_i64 }
#define FNS_FLOAT(name) { name##_f32, name##_f64, NULL }
#define FNS_INT(name) { NULL, NULL, name##_i64 }

const ew_fns ew_add_fns = FNS(add);
const ew_fns ew_sub_fns = FNS(sub);
const ew_fns ew_add_alpha_fns = FNS(add_alpha);
const ew_fns ew_mul_fns = FNS(mul);
const ew_fns ew_true_div_fns = FNS_FLOAT(true_div);
const ew_fns ew_trunc_div_fns = FNS(trunc_div);
const ew_fns ew_floor_div_fns = FNS(floor_div);
const ew_fns ew_remainder_fns = FNS(remainder);
const ew_fns ew_fmod_fns = FNS(fmod);
const ew_fns ew_pow_fns = FNS(pow);
const ew_fns ew_maximum_fns = FNS(maximum);
const ew_fns ew_minimum_fns = FNS(minimum);
const ew_fns ew_atan2_fns = FNS_FLOAT(atan2);
const ew_fns ew_eq_fns = FNS(eq);
const ew_fns ew_ne_fns = FNS(ne);
const ew_fns ew_lt_fns = FNS(lt);
const ew_fns ew_le_fns = FNS(le);
const ew_fns ew_gt_fns = FNS(gt);
const ew_fns ew_ge_fns = FNS(ge);
const ew_fns ew_logical_and_fns = FNS(logical_and);
const ew_fns ew_logical_or_fns = FNS(logical_or);
const ew_fns ew_logical_xor_fns = FNS(logical_xor);
const ew_fns ew_bitwise_and_fns = FNS_INT(bitwise_and);
const ew_fns ew_bitwise_or_fns = FNS_INT(bitwise_or);
const ew_fns ew_bitwise_xor_fns = FNS_INT(bitwise_xor);
