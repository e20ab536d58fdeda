/* float32 -> bfloat16 over arrays (bf16_round.h).
 *
 * Rounding to nearest even is integer arithmetic on the float's bits:
 * add 0x7fff plus the lowest bit kept, then keep the high half; a NaN
 * (magnitude bits above 0x7f800000) is replaced by 0x7fc0.  On GCC
 * vectors of W words (4: SSE2, 8: AVX2, 16: AVX-512) that is a few
 * integer instructions per W elements, against a branch and a shift per
 * element of the scalar loop; the tail is that scalar conversion
 * (mtk_f32_to_bf16), so every variant writes the same bits. */
#include "core/bf16_round.h"
#include "core/cpu_isa.h"
#include "core/scalar.h"

#include <stdint.h>
#include <string.h>

#if defined(__GNUC__)
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

#define DEFINE_ROUND(SUFFIX, TARGET, W)                                                                      \
    typedef uint32_t vword##W __attribute__((vector_size(W * sizeof(uint32_t))));                           \
    typedef int32_t vint##W __attribute__((vector_size(W * sizeof(int32_t))));                              \
    typedef uint16_t vhalf##W __attribute__((vector_size(W * sizeof(uint16_t))));                           \
    TARGET static void round_##SUFFIX(unsigned char *restrict dst, const unsigned char *restrict src,        \
                                      size_t count)                                                          \
    {                                                                                                        \
        size_t i = 0;                                                                                        \
        for (; i + W <= count; i += W) {                                                                     \
            vword##W u;                                                                                      \
            memcpy(&u, src + 4 * i, sizeof u);                                                               \
            /* magnitudes fit in 31 bits: a signed compare is exact */                                       \
            vint##W nan = (vint##W)(u & 0x7fffffffu) > (int32_t)0x7f800000;                                  \
            vword##W r = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;                                             \
            r = (r & ~(vword##W)nan) | ((vword##W)nan & 0x7fc0u);                                            \
            vhalf##W h = __builtin_convertvector(r, vhalf##W);                                               \
            memcpy(dst + 2 * i, &h, sizeof h);                                                               \
        }                                                                                                    \
        for (; i < count; i++) {                                                                             \
            float f;                                                                                         \
            memcpy(&f, src + 4 * i, sizeof f);                                                               \
            uint16_t h = mtk_f32_to_bf16(f);                                                                 \
            memcpy(dst + 2 * i, &h, sizeof h);                                                               \
        }                                                                                                    \
    }
DEFINE_ROUND(baseline, , 4)
DEFINE_ROUND(avx2, CPU_ISA_TARGET_AVX2, 8)
DEFINE_ROUND(avx512, CPU_ISA_TARGET_AVX512, 16)
#undef DEFINE_ROUND

typedef void (*round_fn)(unsigned char *restrict dst, const unsigned char *restrict src, size_t count);
static const round_fn round_kernels[CPU_ISA_COUNT] = {
    [CPU_ISA_BASELINE] = round_baseline,
    [CPU_ISA_AVX2] = round_avx2,
    [CPU_ISA_AVX512] = round_avx512,
};

void bf16_round_f32(void *dst, const void *src, size_t count)
{
    round_kernels[cpu_isa_active()](dst, src, count);
}
