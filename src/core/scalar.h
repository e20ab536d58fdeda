/* Element load/store and conversion between dtypes, for cpu kernels.
 * Floats go through double, integers through int64 so that int64 values
 * stay exact.  Conversions follow PyTorch's .to() on x86 cpus (checked
 * bit for bit by tests/unit/test_scalar.c):
 *   - to float16/bfloat16/float8: round to nearest even; a float64 or an
 *     int64 is first rounded to float32, as torch does;
 *   - float8_e4m3fn has no inf: overflow and +-inf saturate to +-448;
 *     float8_e5m2 overflows to +-inf; NaN stays NaN (0x7f with its sign);
 *   - NaN to bfloat16 is 0x7fc0; to float16 it keeps sign and payload;
 *   - float -> int truncates toward zero; NaN and out-of-range values give
 *     INT32_MIN (int8/int16/int32, then wrapped) or INT64_MIN (uint8,
 *     int64, then wrapped): -1.5 -> uint8 255, 300.0 -> int8 44;
 *   - int -> int wraps; anything -> bool is `!= 0` (NaN is true). */
#ifndef MTK_SCALAR_H
#define MTK_SCALAR_H

#include "mtk/core.h"

double mtk_load_f64(mtk_dtype dtype, const void *p);
int64_t mtk_load_i64(mtk_dtype dtype, const void *p);
void mtk_store_f64(mtk_dtype dtype, void *p, double v);
void mtk_store_i64(mtk_dtype dtype, void *p, int64_t v);
/* Copies one element converting between dtypes (exact for int -> int). */
void mtk_convert_element(mtk_dtype to, void *dst, mtk_dtype from, const void *src);

uint16_t mtk_f32_to_f16(float f);
float mtk_f16_to_f32(uint16_t h);
uint16_t mtk_f32_to_bf16(float f);
float mtk_bf16_to_f32(uint16_t b);
uint8_t mtk_f32_to_f8e4m3fn(float f);
float mtk_f8e4m3fn_to_f32(uint8_t v);
uint8_t mtk_f32_to_f8e5m2(float f);
float mtk_f8e5m2_to_f32(uint8_t v);

#endif
