/* Element conversions between dtypes (see scalar.h). */
#include "scalar.h"

#include <math.h>
#include <string.h>

static uint32_t f32_bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static float bits_f32(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

uint16_t mtk_f32_to_bf16(float f)
{
    uint32_t u = f32_bits(f);
    if (isnan(f)) return (uint16_t)((u >> 16) | 0x40); /* quiet NaN */
    u += 0x7fff + ((u >> 16) & 1);                      /* round to nearest even */
    return (uint16_t)(u >> 16);
}

float mtk_bf16_to_f32(uint16_t b) { return bits_f32((uint32_t)b << 16); }

uint16_t mtk_f32_to_f16(float f)
{
    uint32_t u = f32_bits(f);
    uint32_t sign = (u >> 16) & 0x8000;
    uint32_t exp = (u >> 23) & 0xff;
    uint32_t mant = u & 0x7fffff;
    if (exp == 0xff) return (uint16_t)(sign | 0x7c00 | (mant ? 0x200 : 0));
    int32_t e = (int32_t)exp - 127 + 15;
    if (e >= 0x1f) return (uint16_t)(sign | 0x7c00);
    if (e <= 0) {
        if (e < -10) return (uint16_t)sign;
        mant |= 0x800000;
        uint32_t shift = (uint32_t)(14 - e);
        uint32_t half = mant >> shift;
        uint32_t rem = mant & ((1u << shift) - 1);
        uint32_t mid = 1u << (shift - 1);
        if (rem > mid || (rem == mid && (half & 1))) half++;
        return (uint16_t)(sign | half);
    }
    uint32_t half = sign | ((uint32_t)e << 10) | (mant >> 13);
    uint32_t rem = mant & 0x1fff;
    if (rem > 0x1000 || (rem == 0x1000 && (half & 1))) half++; /* may carry into exp: correct */
    return (uint16_t)half;
}

float mtk_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000) << 16;
    uint32_t exp = (h >> 10) & 0x1f;
    uint32_t mant = h & 0x3ff;
    if (exp == 0) {
        if (mant == 0) return bits_f32(sign);
        float f = ldexpf((float)mant, -24);
        return sign ? -f : f;
    }
    if (exp == 0x1f) return bits_f32(sign | 0x7f800000 | (mant << 13));
    return bits_f32(sign | ((exp - 15 + 127) << 23) | (mant << 13));
}

/* Generic small-float encoder: `mbits` mantissa bits, exponent bias, the
 * largest finite magnitude, and how overflow saturates. */
static uint8_t encode_f8(float f, int mbits, int bias, float max_finite, bool has_inf)
{
    uint8_t sign = signbit(f) ? 0x80 : 0;
    float a = fabsf(f);
    if (isnan(f)) return has_inf ? (uint8_t)(sign | 0x7f) : (uint8_t)(sign | 0x7f);
    /* round to nearest even on the target grid */
    int e;
    if (a == 0.0f) return sign;
    frexpf(a, &e);             /* a = m * 2^e, m in [0.5, 1) */
    int exp_unbiased = e - 1;  /* a = 1.x * 2^exp_unbiased   */
    int min_exp = 1 - bias;
    if (exp_unbiased < min_exp) exp_unbiased = min_exp; /* subnormal grid */
    float quantum = ldexpf(1.0f, exp_unbiased - mbits);
    float q = rintf(a / quantum) * quantum; /* rintf: ties to even */
    if (q > max_finite) {
        if (has_inf) return (uint8_t)(sign | 0x7c); /* e5m2 inf */
        return (uint8_t)(sign | 0x7f);              /* e4m3fn: NaN */
    }
    if (q == 0.0f) return sign;
    frexpf(q, &e);
    int ue = e - 1;
    uint32_t bits;
    if (ue < min_exp) { /* subnormal */
        bits = (uint32_t)(q / ldexpf(1.0f, min_exp - mbits));
    } else {
        uint32_t mant = (uint32_t)((ldexpf(q, -ue) - 1.0f) * (float)(1 << mbits) + 0.5f);
        bits = ((uint32_t)(ue + bias) << mbits) | mant;
    }
    return (uint8_t)(sign | bits);
}

static float decode_f8(uint8_t v, int mbits, int bias, bool has_inf)
{
    int sign = v & 0x80;
    int exp = (v & 0x7f) >> mbits;
    int mant = v & ((1 << mbits) - 1);
    int max_exp = (1 << (7 - mbits)) - 1;
    float r;
    if (has_inf && exp == max_exp) r = mant ? NAN : INFINITY;
    else if (!has_inf && exp == max_exp && mant == (1 << mbits) - 1) r = NAN;
    else if (exp == 0) r = ldexpf((float)mant, 1 - bias - mbits);
    else r = ldexpf(1.0f + (float)mant / (float)(1 << mbits), exp - bias);
    return sign ? -r : r;
}

uint8_t mtk_f32_to_f8e4m3fn(float f) { return encode_f8(f, 3, 7, 448.0f, false); }
float mtk_f8e4m3fn_to_f32(uint8_t v) { return decode_f8(v, 3, 7, false); }
uint8_t mtk_f32_to_f8e5m2(float f) { return encode_f8(f, 2, 15, 57344.0f, true); }
float mtk_f8e5m2_to_f32(uint8_t v) { return decode_f8(v, 2, 15, true); }

double mtk_load_f64(mtk_dtype dtype, const void *p)
{
    switch (dtype) {
    case MTK_UINT8: return *(const uint8_t *)p;
    case MTK_INT8: return *(const int8_t *)p;
    case MTK_INT16: return *(const int16_t *)p;
    case MTK_INT32: return *(const int32_t *)p;
    case MTK_INT64: return (double)*(const int64_t *)p;
    case MTK_FLOAT16: return mtk_f16_to_f32(*(const uint16_t *)p);
    case MTK_FLOAT32: return *(const float *)p;
    case MTK_FLOAT64: return *(const double *)p;
    case MTK_BOOL: return *(const uint8_t *)p ? 1.0 : 0.0;
    case MTK_BFLOAT16: return mtk_bf16_to_f32(*(const uint16_t *)p);
    case MTK_FLOAT8_E5M2: return mtk_f8e5m2_to_f32(*(const uint8_t *)p);
    case MTK_FLOAT8_E4M3FN: return mtk_f8e4m3fn_to_f32(*(const uint8_t *)p);
    default: return 0.0;
    }
}

int64_t mtk_load_i64(mtk_dtype dtype, const void *p)
{
    switch (dtype) {
    case MTK_UINT8: return *(const uint8_t *)p;
    case MTK_INT8: return *(const int8_t *)p;
    case MTK_INT16: return *(const int16_t *)p;
    case MTK_INT32: return *(const int32_t *)p;
    case MTK_INT64: return *(const int64_t *)p;
    case MTK_BOOL: return *(const uint8_t *)p ? 1 : 0;
    default: {
        double d = mtk_load_f64(dtype, p);
        if (isnan(d) || d >= 9.2233720368547758e18 || d < -9.2233720368547758e18) return INT64_MIN;
        return (int64_t)d;
    }
    }
}

/* float -> integer as C++ casts do on x86 for in-range values; out of
 * range is undefined in C, so it wraps through int64 like PyTorch's cpu. */
static int64_t f64_to_i64(double v)
{
    if (isnan(v) || v >= 9.2233720368547758e18 || v < -9.2233720368547758e18) return INT64_MIN;
    return (int64_t)v;
}

void mtk_store_f64(mtk_dtype dtype, void *p, double v)
{
    switch (dtype) {
    case MTK_UINT8: *(uint8_t *)p = (uint8_t)f64_to_i64(v); break;
    case MTK_INT8: *(int8_t *)p = (int8_t)f64_to_i64(v); break;
    case MTK_INT16: *(int16_t *)p = (int16_t)f64_to_i64(v); break;
    case MTK_INT32: *(int32_t *)p = (int32_t)f64_to_i64(v); break;
    case MTK_INT64: *(int64_t *)p = f64_to_i64(v); break;
    case MTK_FLOAT16: *(uint16_t *)p = mtk_f32_to_f16((float)v); break;
    case MTK_FLOAT32: *(float *)p = (float)v; break;
    case MTK_FLOAT64: *(double *)p = v; break;
    case MTK_BOOL: *(uint8_t *)p = v != 0.0; break;
    case MTK_BFLOAT16: *(uint16_t *)p = mtk_f32_to_bf16((float)v); break;
    case MTK_FLOAT8_E5M2: *(uint8_t *)p = mtk_f32_to_f8e5m2((float)v); break;
    case MTK_FLOAT8_E4M3FN: *(uint8_t *)p = mtk_f32_to_f8e4m3fn((float)v); break;
    default: break;
    }
}

void mtk_store_i64(mtk_dtype dtype, void *p, int64_t v)
{
    switch (dtype) {
    case MTK_UINT8: *(uint8_t *)p = (uint8_t)v; break;
    case MTK_INT8: *(int8_t *)p = (int8_t)v; break;
    case MTK_INT16: *(int16_t *)p = (int16_t)v; break;
    case MTK_INT32: *(int32_t *)p = (int32_t)v; break;
    case MTK_INT64: *(int64_t *)p = v; break;
    case MTK_BOOL: *(uint8_t *)p = v != 0; break;
    default: mtk_store_f64(dtype, p, (double)v); break;
    }
}

void mtk_convert_element(mtk_dtype to, void *dst, mtk_dtype from, const void *src)
{
    if (to == from) {
        memcpy(dst, src, mtk_dtype_size(to));
    } else if (mtk_dtype_is_integral(from, true)) {
        mtk_store_i64(to, dst, mtk_load_i64(from, src));
    } else {
        mtk_store_f64(to, dst, mtk_load_f64(from, src));
    }
}
