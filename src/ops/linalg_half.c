/* Reduced-precision operands of the linalg cpu kernel (linalg_half.h).
 *
 * OpenBLAS (Debian's 0.3.21) has no bfloat16 product (no cblas_sbgemm),
 * so a float16 / bfloat16 product is computed in float32 and rounded
 * once, as torch's cpu does.  Two ways in:
 *   - many rows (a prefill): each operand is widened to float32 once per
 *     call, row by row over its storage as it lies (a linear weight stays
 *     "transposed"), then sgemm; the widening is O(k n) against the
 *     product's O(m k n);
 *   - a few rows (a decode step): widening the weight would cost more
 *     than the product, so each output is a dot product of a float32 row
 *     of a with a bfloat16 row of the weight, read in place: 2 bytes per
 *     weight, as torch's bfloat16 kernels read.
 * The dot product keeps LANES partial sums, lane l summing elements
 * p % LANES == l in order, and runs on GCC vectors of W floats (4: SSE2,
 * 8: AVX2, 16: AVX-512; core/cpu_isa.h): every variant does the same
 * float operations (no FMA: -ffp-contract=off), so results are
 * bit-identical across them.  Memory, not arithmetic, should bound it:
 * one pass over a serves ROW_BLOCK weight rows, and the bfloat16 are
 * turned into floats by a shift and a mask of 32-bit words (dot_lanes). */
#include "ops/linalg_half.h"
#include "core/cpu_isa.h"
#include "core/parallel.h"
#include "core/scalar.h"

#include <string.h>

#define INLINE static inline __attribute__((always_inline))

#define LANES 16 /* partial sums of one dot product */
#define ROW_BLOCK 4 /* weight rows one pass over a reads */
/* below this many multiply-adds a product stays on one thread */
#define PARALLEL_MIN_WORK ((int64_t)1 << 16)

#if defined(__clang__)
#pragma clang diagnostic ignored "-Wunknown-warning-option"
#endif
#if defined(__GNUC__)
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

/* ------------------------------------------------------------ widening */

void linalg_half_widen(float *dst, const void *src, mtk_dtype dtype, int64_t rows, int64_t cols, int64_t ld)
{
    size_t es = mtk_dtype_size(dtype);
    for (int64_t i = 0; i < rows; i++, dst += cols) {
        const unsigned char *row = (const unsigned char *)src + (size_t)(i * ld) * es;
        if (dtype == MTK_BFLOAT16) {
            for (int64_t j = 0; j < cols; j++) {
                uint16_t h;
                memcpy(&h, row + 2 * j, sizeof h); /* may be unaligned (a mapped file) */
                uint32_t u = (uint32_t)h << 16;
                memcpy(dst + j, &u, sizeof u);
            }
        } else if (dtype == MTK_FLOAT16) {
            for (int64_t j = 0; j < cols; j++) {
                uint16_t h;
                memcpy(&h, row + 2 * j, sizeof h);
                dst[j] = mtk_f16_to_f32(h);
            }
        } else if (dtype == MTK_FLOAT32) {
            memcpy(dst, row, (size_t)cols * sizeof *dst);
        } else {
            for (int64_t j = 0; j < cols; j++) dst[j] = (float)mtk_load_f64(dtype, row + (size_t)j * es);
        }
    }
}

/* ------------------------------------------------------- dot products */

/* s[r][l] = sum over whole LANES blocks of a[p] * bf16(b_r[p]), p % LANES
 * == l, for ROW_BLOCK (or `rows`) weight rows b_r = b + r * stride at
 * once: a's block is loaded once for all of them, and their sums are
 * independent; each row's sums are those of a one-row call.  Returns
 * where the blocks end.
 *
 * Widths 4 and 8 read a block's bfloat16 as 32-bit words, two elements
 * each: the word << 16 is the even element, the word's high half the
 * odd one, with no widening instructions; `a` comes rearranged to match
 * (interleave_rows: per 2W elements, the W even ones, then the W odd
 * ones).  Width 16 widens each bfloat16 vector and reads a as it is. */
#define DEFINE_DOT_TYPES(W)                                                                                  \
    typedef float vfloat##W __attribute__((vector_size(W * sizeof(float))));                                \
    typedef uint16_t vhalf##W __attribute__((vector_size(W * sizeof(uint16_t))));                           \
    typedef uint32_t vbits##W __attribute__((vector_size(W * sizeof(uint32_t))));
DEFINE_DOT_TYPES(4)
DEFINE_DOT_TYPES(8)
DEFINE_DOT_TYPES(16)
#undef DEFINE_DOT_TYPES

#define DEFINE_DOT_PAIRS(W)                                                                                  \
    INLINE int64_t dot_lanes##W(const float *restrict a, const unsigned char *restrict b, int64_t stride,   \
                                int rows, int64_t k, float s[][LANES])                                      \
    {                                                                                                        \
        enum { GROUPS = LANES / (2 * W) }; /* vector pairs per block */                                      \
        vfloat##W even[ROW_BLOCK][GROUPS], odd[ROW_BLOCK][GROUPS];                                           \
        for (int r = 0; r < ROW_BLOCK; r++)                                                                  \
            for (int g = 0; g < GROUPS; g++) even[r][g] = odd[r][g] = (vfloat##W){ 0 };                      \
        const vbits##W high = (vbits##W){ 0 } + 0xffff0000u;                                                 \
        int64_t p = 0;                                                                                       \
        for (; p + LANES <= k; p += LANES)                                                                   \
            _Pragma("GCC unroll 4") for (int g = 0; g < GROUPS; g++) {                                       \
                vfloat##W xe, xo;                                                                            \
                memcpy(&xe, a + p + 2 * W * g, sizeof xe);                                                   \
                memcpy(&xo, a + p + 2 * W * g + W, sizeof xo);                                               \
                _Pragma("GCC unroll 4") for (int r = 0; r < ROW_BLOCK; r++) {                                \
                    if (r >= rows) break;                                                                    \
                    vbits##W words;                                                                          \
                    memcpy(&words, b + r * stride + 2 * (p + 2 * W * g), sizeof words);                      \
                    even[r][g] += xe * (vfloat##W)(words << 16);                                             \
                    odd[r][g] += xo * (vfloat##W)(words & high);                                             \
                }                                                                                            \
            }                                                                                                \
        for (int r = 0; r < rows; r++)                                                                       \
            for (int g = 0; g < GROUPS; g++)                                                                 \
                for (int i = 0; i < W; i++) {                                                                \
                    s[r][2 * W * g + 2 * i] = even[r][g][i];                                                 \
                    s[r][2 * W * g + 2 * i + 1] = odd[r][g][i];                                              \
                }                                                                                            \
        return p;                                                                                            \
    }
DEFINE_DOT_PAIRS(4)
DEFINE_DOT_PAIRS(8)
#undef DEFINE_DOT_PAIRS

INLINE int64_t dot_lanes16(const float *restrict a, const unsigned char *restrict b, int64_t stride, int rows,
                           int64_t k, float s[][LANES])
{
    vfloat16 acc[ROW_BLOCK];
    for (int r = 0; r < ROW_BLOCK; r++) acc[r] = (vfloat16){ 0 };
    int64_t p = 0;
    for (; p + LANES <= k; p += LANES) {
        vfloat16 x;
        memcpy(&x, a + p, sizeof x);
        _Pragma("GCC unroll 4") for (int r = 0; r < ROW_BLOCK; r++) {
            if (r >= rows) break;
            vhalf16 h;
            memcpy(&h, b + r * stride + 2 * p, sizeof h);
            acc[r] += x * (vfloat16)(__builtin_convertvector(h, vbits16) << 16);
        }
    }
    for (int r = 0; r < rows; r++) memcpy(s[r], &acc[r], sizeof acc[r]);
    return p;
}

/* Rearranges each of a's m rows (k floats) for dot_lanes of width W < 16:
 * in every whole LANES block, per 2W elements the W even ones, then the
 * W odd ones; the tail stays. */
static void interleave_rows(float *a, int64_t m, int64_t k, int width)
{
    for (int64_t i = 0; i < m; i++)
        for (int64_t p = 0; p + LANES <= k; p += LANES) {
            float *x = a + i * k + p, t[LANES];
            memcpy(t, x, sizeof t);
            for (int g = 0; g < LANES / (2 * width); g++)
                for (int j = 0; j < width; j++) {
                    x[2 * width * g + j] = t[2 * width * g + 2 * j];
                    x[2 * width * g + width + j] = t[2 * width * g + 2 * j + 1];
                }
        }
}

/* The dot products of a (k floats) with `rows` (1..ROW_BLOCK) bfloat16
 * rows b + r * stride (maybe unaligned), width W, into out[r]: the whole
 * blocks, the tail into lanes 0.., then the lanes pairwise (0+8, 1+9,
 * ...). */
INLINE void dot_bf16(const float *restrict a, const unsigned char *restrict b, int64_t stride, int rows, int64_t k,
                     int width, float *out)
{
    float s[ROW_BLOCK][LANES];
    int64_t p0 = width == 16 ? dot_lanes16(a, b, stride, rows, k, s)
                 : width == 8 ? dot_lanes8(a, b, stride, rows, k, s)
                              : dot_lanes4(a, b, stride, rows, k, s);
    for (int r = 0; r < rows; r++) {
        const unsigned char *br = b + r * stride;
        for (int64_t p = p0, l = 0; p < k; p++, l++) {
            uint16_t h;
            memcpy(&h, br + 2 * p, sizeof h);
            s[r][l] += a[p] * mtk_bf16_to_f32(h);
        }
        for (int half = LANES / 2; half > 0; half /= 2)
            for (int l = 0; l < half; l++) s[r][l] += s[r][l + half];
        out[r] = s[r][0];
    }
}

typedef struct rows_job {
    float *c;
    const float *a;
    const unsigned char *b;
    int64_t m, n, k, ld;
    cpu_isa isa; /* the variant a is arranged for */
} rows_job;

/* c[i][j] for every row i and the columns j in [begin, end), ROW_BLOCK
 * weight rows (columns of c) at a time */
#define ROWS_VARIANT(SUFFIX, TARGET, W)                                                                      \
    TARGET static void rows_##SUFFIX(const rows_job *job, int64_t begin, int64_t end)                        \
    {                                                                                                        \
        int64_t stride = 2 * job->ld;                                                                        \
        for (int64_t j = begin; j < end;) {                                                                  \
            /* a constant row count: each call inlines to its own loop */                                    \
            int rows = end - j >= ROW_BLOCK ? ROW_BLOCK : 1;                                                 \
            const unsigned char *w = job->b + j * stride;                                                    \
            for (int64_t i = 0; i < job->m; i++) {                                                           \
                float out[ROW_BLOCK];                                                                        \
                if (rows == ROW_BLOCK) dot_bf16(job->a + i * job->k, w, stride, ROW_BLOCK, job->k, W, out);  \
                else dot_bf16(job->a + i * job->k, w, stride, 1, job->k, W, out);                            \
                for (int r = 0; r < rows; r++) job->c[i * job->n + j + r] = out[r];                          \
            }                                                                                                \
            j += rows;                                                                                       \
        }                                                                                                    \
    }
ROWS_VARIANT(baseline, , 4)
ROWS_VARIANT(avx2, CPU_ISA_TARGET_AVX2, 8)
ROWS_VARIANT(avx512, CPU_ISA_TARGET_AVX512, 16)
#undef ROWS_VARIANT

typedef void (*rows_fn)(const rows_job *job, int64_t begin, int64_t end);
static const rows_fn rows_kernels[CPU_ISA_COUNT] = {
    [CPU_ISA_BASELINE] = rows_baseline,
    [CPU_ISA_AVX2] = rows_avx2,
    [CPU_ISA_AVX512] = rows_avx512,
};

static void run_rows(int64_t begin, int64_t end, int32_t part, void *user)
{
    (void)part;
    const rows_job *job = user;
    rows_kernels[job->isa](job, begin, end);
}

bool linalg_half_rows_fit(int64_t m, mtk_dtype b_dtype, int64_t b_stride_k)
{
    return b_dtype == MTK_BFLOAT16 && m >= 1 && m <= LINALG_HALF_MAX_ROWS && b_stride_k == 1;
}

void linalg_half_rows(float *c, float *a, const void *b, int64_t m, int64_t n, int64_t k, int64_t ld)
{
    cpu_isa isa = cpu_isa_active();
    if (isa != CPU_ISA_AVX512) interleave_rows(a, m, k, isa == CPU_ISA_AVX2 ? 8 : 4);
    rows_job job = { c, a, b, m, n, k, ld, isa };
    int32_t parts = m * n * k < PARALLEL_MIN_WORK ? 1 : mtk_parallel_threads(0);
    if (parts > n) parts = (int32_t)n;
    mtk_parallel_range(n, parts, run_rows, &job);
}
