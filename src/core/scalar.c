/* Element conversions between dtypes (see scalar.h). */
#include "scalar.h"

#include <math.h>
#include <string.h>

static uint32_t f32_bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static float bits_f32(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

uint16_t mtk_f32_to_bf16(float f)
{
    uint32_t u = f32_bits(f);
    /* every NaN becomes the canonical quiet NaN, as c10::BFloat16 does
     * (torch's AVX2 float32 kernel writes 0xFFFF instead; see the tests) */
    if (isnan(f)) return 0x7fc0;
    u += 0x7fff + ((u >> 16) & 1); /* round to nearest even; may carry to inf */
    return (uint16_t)(u >> 16);
}

float mtk_bf16_to_f32(uint16_t b) { return bits_f32((uint32_t)b << 16); }

uint16_t mtk_f32_to_f16(float f)
{
    uint32_t u = f32_bits(f);
    uint32_t sign = (u >> 16) & 0x8000;
    uint32_t exp = (u >> 23) & 0xff;
    uint32_t mant = u & 0x7fffff;
    /* inf stays inf; NaN stays quiet NaN keeping its top payload bits */
    if (exp == 0xff) return (uint16_t)(sign | 0x7c00 | (mant ? 0x200 | (mant >> 13) : 0));
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
    if (exp == 0x1f) /* inf, or NaN made quiet keeping its payload */
        return bits_f32(sign | 0x7f800000 | (mant ? 0x400000 | (mant << 13) : 0));
    return bits_f32(sign | ((exp - 15 + 127) << 23) | (mant << 13));
}

/* Generic float8 encoder: `mbits` mantissa bits, exponent `bias`, the
 * largest finite magnitude, and what overflow becomes: e5m2 (has_inf)
 * rounds to inf like IEEE formats; e4m3fn has no inf and saturates to its
 * largest finite value (448), as PyTorch's conversion does.  NaN keeps its
 * sign and becomes the all-ones pattern 0x7f. */
static uint8_t encode_f8(float f, int mbits, int bias, float max_finite, bool has_inf)
{
    uint8_t sign = signbit(f) ? 0x80 : 0;
    uint8_t overflow = has_inf ? (uint8_t)(0x7f & ~((1u << mbits) - 1)) /* inf */
                               : (uint8_t)(0x7f - 1);                   /* max finite */
    float a = fabsf(f);
    if (isnan(f)) return (uint8_t)(sign | 0x7f);
    if (isinf(f)) return (uint8_t)(sign | overflow);
    if (a == 0.0f) return sign;
    /* round to nearest even on the target grid */
    int e;
    frexpf(a, &e);             /* a = m * 2^e, m in [0.5, 1) */
    int exp_unbiased = e - 1;  /* a = 1.x * 2^exp_unbiased   */
    int min_exp = 1 - bias;
    if (exp_unbiased < min_exp) exp_unbiased = min_exp; /* subnormal grid */
    float quantum = ldexpf(1.0f, exp_unbiased - mbits);
    float q = rintf(a / quantum) * quantum; /* exact scaling; rintf ties to even */
    if (q > max_finite) return (uint8_t)(sign | overflow);
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
    bool nan = exp == max_exp && (has_inf ? mant != 0 : mant == (1 << mbits) - 1);
    if (nan) /* quiet NaN keeping sign and payload bits, as torch decodes it */
        return bits_f32((uint32_t)sign << 24 | 0x7fc00000u | (uint32_t)mant << (23 - mbits));
    if (has_inf && exp == max_exp) r = INFINITY;
    else if (exp == 0) r = ldexpf((float)mant, 1 - bias - mbits);
    else r = ldexpf(1.0f + (float)mant / (float)(1 << mbits), exp - bias);
    return sign ? -r : r;
}

uint8_t mtk_f32_to_f8e4m3fn(float f) { return encode_f8(f, 3, 7, 448.0f, false); }
float mtk_f8e4m3fn_to_f32(uint8_t v) { return decode_f8(v, 3, 7, false); }
uint8_t mtk_f32_to_f8e5m2(float f) { return encode_f8(f, 2, 15, 57344.0f, true); }
float mtk_f8e5m2_to_f32(uint8_t v) { return decode_f8(v, 2, 15, true); }

/* Element access through memcpy: tensor data may be unaligned (borrowed
 * or mapped memory, e.g. a safetensors file), and a plain typed access of
 * an unaligned pointer is undefined behaviour.  Compilers turn these into
 * single loads and stores. */
#define ACCESSORS(name, type)                                                        \
    static inline type ld_##name(const void *p) { type v; memcpy(&v, p, sizeof v); return v; } \
    static inline void st_##name(void *p, type v) { memcpy(p, &v, sizeof v); }
ACCESSORS(u8, uint8_t)
ACCESSORS(i8, int8_t)
ACCESSORS(u16, uint16_t)
ACCESSORS(i16, int16_t)
ACCESSORS(i32, int32_t)
ACCESSORS(i64, int64_t)
ACCESSORS(f32, float)
ACCESSORS(f64, double)
#undef ACCESSORS

double mtk_load_f64(mtk_dtype dtype, const void *p)
{
    switch (dtype) {
    case MTK_UINT8: return ld_u8(p);
    case MTK_INT8: return ld_i8(p);
    case MTK_INT16: return ld_i16(p);
    case MTK_INT32: return ld_i32(p);
    case MTK_INT64: return (double)ld_i64(p);
    case MTK_FLOAT16: return mtk_f16_to_f32(ld_u16(p));
    case MTK_FLOAT32: return ld_f32(p);
    case MTK_FLOAT64: return ld_f64(p);
    case MTK_BOOL: return ld_u8(p) ? 1.0 : 0.0;
    case MTK_BFLOAT16: return mtk_bf16_to_f32(ld_u16(p));
    case MTK_FLOAT8_E5M2: return mtk_f8e5m2_to_f32(ld_u8(p));
    case MTK_FLOAT8_E4M3FN: return mtk_f8e4m3fn_to_f32(ld_u8(p));
    default: return 0.0;
    }
}

/* float -> integer as PyTorch's cpu casts do on x86: truncation toward
 * zero; NaN and out-of-range values give the "integer indefinite" value
 * (INT64_MIN or INT32_MIN).  int8/int16 go through int32 and uint8
 * through int64, then wrap (torch: -1.5 -> uint8 255, 300.0 -> int8 44). */
static int64_t f64_to_i64(double v)
{
    if (!(v >= -9223372036854775808.0 && v < 9223372036854775808.0)) return INT64_MIN;
    return (int64_t)v;
}

static int32_t f64_to_i32(double v)
{
    if (!(v > -2147483649.0 && v < 2147483648.0)) return INT32_MIN;
    return (int32_t)v;
}

int64_t mtk_load_i64(mtk_dtype dtype, const void *p)
{
    switch (dtype) {
    case MTK_UINT8: return ld_u8(p);
    case MTK_INT8: return ld_i8(p);
    case MTK_INT16: return ld_i16(p);
    case MTK_INT32: return ld_i32(p);
    case MTK_INT64: return ld_i64(p);
    case MTK_BOOL: return ld_u8(p) ? 1 : 0;
    default: return f64_to_i64(mtk_load_f64(dtype, p));
    }
}

void mtk_store_f64(mtk_dtype dtype, void *p, double v)
{
    switch (dtype) {
    case MTK_UINT8: st_u8(p, (uint8_t)f64_to_i64(v)); break;
    case MTK_INT8: st_i8(p, (int8_t)f64_to_i32(v)); break;
    case MTK_INT16: st_i16(p, (int16_t)f64_to_i32(v)); break;
    case MTK_INT32: st_i32(p, f64_to_i32(v)); break;
    case MTK_INT64: st_i64(p, f64_to_i64(v)); break;
    case MTK_FLOAT16: st_u16(p, mtk_f32_to_f16((float)v)); break;
    case MTK_FLOAT32: st_f32(p, (float)v); break;
    case MTK_FLOAT64: st_f64(p, v); break;
    case MTK_BOOL: st_u8(p, v != 0.0); break;
    case MTK_BFLOAT16: st_u16(p, mtk_f32_to_bf16((float)v)); break;
    case MTK_FLOAT8_E5M2: st_u8(p, mtk_f32_to_f8e5m2((float)v)); break;
    case MTK_FLOAT8_E4M3FN: st_u8(p, mtk_f32_to_f8e4m3fn((float)v)); break;
    default: break;
    }
}

void mtk_store_i64(mtk_dtype dtype, void *p, int64_t v)
{
    switch (dtype) {
    case MTK_UINT8: st_u8(p, (uint8_t)v); break;
    case MTK_INT8: st_i8(p, (int8_t)v); break;
    case MTK_INT16: st_i16(p, (int16_t)v); break;
    case MTK_INT32: st_i32(p, (int32_t)v); break;
    case MTK_INT64: st_i64(p, v); break;
    case MTK_BOOL: st_u8(p, v != 0); break;
    case MTK_FLOAT64: st_f64(p, (double)v); break;
    default: mtk_store_f64(dtype, p, (double)(float)v); break; /* round once, to float */
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
