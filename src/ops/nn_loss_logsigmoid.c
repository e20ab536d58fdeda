/* log_sigmoid of a float32 as torch's cpu kernel computes it.
 *
 * torch's log_sigmoid_cpu runs every float32 element through 8-lane
 * vectors: min(x, 0) - log1p(exp(-|x|)), with exp and log1p from SLEEF
 * (its 1-ulp float versions with fused multiply-adds).  Those are not
 * always correctly rounded, so the C library's expf/log1pf can differ
 * from torch by an ulp; a loss that subtracts log_sigmoid from a float64
 * term then shows that ulp far above float64's tolerance.  The two
 * functions below follow SLEEF's published algorithms step by step in
 * float arithmetic (Cody-Waite reduction and a degree-6 polynomial for
 * exp; a double-float series in m / (2 + m) for log1p). */
#include "ops/nn.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

static int32_t bits_of(float f)
{
    int32_t i;
    memcpy(&i, &f, sizeof i);
    return i;
}

static float float_of(int32_t i)
{
    float f;
    memcpy(&f, &i, sizeof f);
    return f;
}

/* 2^q for q in the normal range, from the exponent bits */
static float pow2_normal(int32_t q) { return float_of((int32_t)((uint32_t)(q + 0x7f) << 23)); }

/* d * 2^e, in two steps so that e may reach twice the exponent range */
static float scale_pow2_wide(float d, int32_t e) { return d * pow2_normal(e >> 1) * pow2_normal(e - (e >> 1)); }

/* d * 2^q by adding q to d's exponent bits */
static float scale_pow2_bits(float d, int32_t q) { return float_of((int32_t)((uint32_t)bits_of(d) + ((uint32_t)q << 23))); }

/* the unbiased exponent of a normal d */
static int32_t exponent_of(float d) { return ((bits_of(d) >> 23) & 0xff) - 0x7f; }

/* round to nearest, ties to even (the vector float-to-int conversion) */
static int32_t round_even(float d) { return (int32_t)nearbyintf(d); }

static float exp_as_torch(float d)
{
    int32_t q = round_even(d * 1.442695040888963407359924681001892137426645954152985934135449406931f);
    float s = fmaf((float)q, -0.693145751953125f, d);
    s = fmaf((float)q, -1.428606765330187045e-06f, s);
    float u = 0.000198527617612853646278381f;
    u = fmaf(u, s, 0.00139304355252534151077271f);
    u = fmaf(u, s, 0.00833336077630519866943359f);
    u = fmaf(u, s, 0.0416664853692054748535156f);
    u = fmaf(u, s, 0.166666671633720397949219f);
    u = fmaf(u, s, 0.5f);
    u = 1.0f + fmaf(s * s, u, s);
    u = scale_pow2_wide(u, q);
    if (d < -104) u = 0;
    if (100 < d) u = INFINITY;
    return u;
}

/* a value carried as two floats, hi + lo */
typedef struct two_float {
    float hi, lo;
} two_float;

static two_float tf_sum(float x, float y)
{
    float s = x + y;
    return (two_float){ s, (x - s) + y };
}

static two_float tf_add(two_float x, two_float y)
{
    float s = x.hi + y.hi;
    return (two_float){ s, (((x.hi - s) + y.hi) + x.lo) + y.lo };
}

static two_float tf_add_f(two_float x, float y)
{
    float s = x.hi + y;
    return (two_float){ s, ((x.hi - s) + y) + x.lo };
}

static two_float tf_mul_f(two_float x, float y)
{
    float s = x.hi * y;
    return (two_float){ s, fmaf(x.lo, y, fmaf(x.hi, y, -s)) };
}

static two_float tf_div(two_float n, two_float d)
{
    float t = 1.0f / d.hi;
    float s = n.hi * t;
    float u = fmaf(t, n.hi, -s);
    float v = fmaf(-d.lo, t, fmaf(-d.hi, t, 1.0f));
    return (two_float){ s, fmaf(s, v, fmaf(n.lo, t, u)) };
}

static float log1p_as_torch(float d)
{
    float dp1 = d + 1;
    bool tiny = dp1 < 1.17549435e-38f;
    if (tiny) dp1 *= (float)((int64_t)1 << 32) * (float)((int64_t)1 << 32);
    int32_t e = exponent_of(dp1 * (1.0f / 0.75f));
    float t = scale_pow2_bits(1.0f, -e);
    float m = fmaf(d, t, t - 1);
    if (tiny) e -= 64;
    two_float s = tf_mul_f((two_float){ 0.69314718246459960938f, -1.904654323148236017e-09f }, (float)e);
    two_float x = tf_div((two_float){ m, 0 }, tf_sum(2, m));
    float x2 = x.hi * x.hi;
    t = 0.3027294874e+0f;
    t = fmaf(t, x2, 0.3996108174e+0f);
    t = fmaf(t, x2, 0.6666694880e+0f);
    s = tf_add(s, (two_float){ x.hi * 2, x.lo * 2 });
    s = tf_add_f(s, x2 * x.hi * t);
    float r = s.hi + s.lo;
    if (d > 1e+38f) r = INFINITY;
    if (-1 > d || isnan(d)) r = NAN;
    if (d == -1) r = -INFINITY;
    if (d == 0 && signbit(d)) r = -0.0f;
    return r;
}

float nn_log_sigmoid_f32(float x)
{
    if (isnan(x)) return x;
    float lo = x < 0 ? x : 0.0f;
    return lo - log1p_as_torch(exp_as_torch(-fabsf(x)));
}
