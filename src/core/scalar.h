/* Element load/store and conversion between dtypes, for cpu kernels.
 * Floats go through double, integers through int64 so that int64 values
 * stay exact.  Conversions follow PyTorch's (C++ casts; float -> int
 * truncates toward zero; half/bfloat16 round to nearest even; float8
 * e4m3fn saturates to NaN on overflow as PyTorch's does, e5m2 to inf). */
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
