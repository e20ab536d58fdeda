/* float32 -> bfloat16 over arrays (internal, src/core/bf16_round.c): the
 * conversion of a load into bfloat16, vectorized per instruction set
 * (core/cpu_isa.h), bit for bit mtk_f32_to_bf16 (core/scalar.h). */
#ifndef MTK_CORE_BF16_ROUND_H
#define MTK_CORE_BF16_ROUND_H

#include <stddef.h>

/* dst[i] = the bfloat16 of the float32 src[i] for i < count, rounded to
 * nearest even as c10::BFloat16 rounds (a carry past the largest finite
 * value gives infinity; float32 subnormals round like any other value),
 * every NaN (either sign, any payload) the canonical quiet NaN 0x7fc0.
 * dst holds count 2-byte and src count 4-byte elements, either at any
 * byte address (a mapped file); they must not overlap. */
void bf16_round_f32(void *dst, const void *src, size_t count);

#endif
