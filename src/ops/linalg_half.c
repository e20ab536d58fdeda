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
 * bit-identical across them. */
#include "ops/linalg_half.h"
#include "core/cpu_isa.h"
#include "core/parallel.h"
#include "core/scalar.h"

#include <string.h>

#define INLINE static inline __attribute__((always_inline))

#define LANES 16 /* partial sums of one dot product */
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

/* s[l] = sum over whole LANES blocks of a[p] * bf16(b[p]), p % LANES == l;
 * returns where the blocks end. */
#define DEFINE_DOT_LANES(W)                                                                                  \
    typedef float vfloat##W __attribute__((vector_size(W * sizeof(float))));                                \
    typedef uint16_t vhalf##W __attribute__((vector_size(W * sizeof(uint16_t))));                           \
    typedef uint32_t vbits##W __attribute__((vector_size(W * sizeof(uint32_t))));                           \
                                                                                                             \
    INLINE int64_t dot_lanes##W(const float *restrict a, const unsigned char *restrict b, int64_t k,        \
                                float *restrict s)                                                           \
    {                                                                                                        \
        vfloat##W acc[LANES / W];                                                                            \
        for (int q = 0; q < LANES / W; q++) acc[q] = (vfloat##W){ 0 };                                       \
        int64_t p = 0;                                                                                       \
        for (; p + LANES <= k; p += LANES)                                                                   \
            _Pragma("GCC unroll 4") for (int q = 0; q < LANES / W; q++) {                                    \
                vhalf##W h;                                                                                  \
                vfloat##W x;                                                                                 \
                memcpy(&h, b + 2 * (p + q * W), sizeof h);                                                   \
                memcpy(&x, a + p + q * W, sizeof x);                                                         \
                vfloat##W w = (vfloat##W)(__builtin_convertvector(h, vbits##W) << 16);                       \
                acc[q] += x * w;                                                                             \
            }                                                                                                \
        memcpy(s, acc, sizeof acc);                                                                          \
        return p;                                                                                            \
    }
DEFINE_DOT_LANES(4)
DEFINE_DOT_LANES(8)
DEFINE_DOT_LANES(16)
#undef DEFINE_DOT_LANES

/* The dot product of a (k floats) and b (k bfloat16, maybe unaligned),
 * width W. */
INLINE float dot_bf16(const float *restrict a, const unsigned char *restrict b, int64_t k, int width)
{
    float s[LANES];
    int64_t p = width == 16 ? dot_lanes16(a, b, k, s) : width == 8 ? dot_lanes8(a, b, k, s) : dot_lanes4(a, b, k, s);
    for (int64_t l = 0; p < k; p++, l++) {
        uint16_t h;
        memcpy(&h, b + 2 * p, sizeof h);
        s[l] += a[p] * mtk_bf16_to_f32(h);
    }
    for (int half = LANES / 2; half > 0; half /= 2) /* pairwise: 0+8, 1+9, ... */
        for (int l = 0; l < half; l++) s[l] += s[l + half];
    return s[0];
}

typedef struct rows_job {
    float *c;
    const float *a;
    const unsigned char *b;
    int64_t m, n, k, ld;
} rows_job;

/* c[i][j] for every row i and the columns j in [begin, end) */
#define ROWS_VARIANT(SUFFIX, TARGET, W)                                                                      \
    TARGET static void rows_##SUFFIX(const rows_job *job, int64_t begin, int64_t end)                        \
    {                                                                                                        \
        for (int64_t j = begin; j < end; j++) {                                                              \
            const unsigned char *w = job->b + 2 * j * job->ld;                                                    \
            for (int64_t i = 0; i < job->m; i++)                                                             \
                job->c[i * job->n + j] = dot_bf16(job->a + i * job->k, w, job->k, W);                        \
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
    rows_kernels[cpu_isa_active()](user, begin, end);
}

bool linalg_half_rows_fit(int64_t m, mtk_dtype b_dtype, int64_t b_stride_k)
{
    return b_dtype == MTK_BFLOAT16 && m >= 1 && m <= LINALG_HALF_MAX_ROWS && b_stride_k == 1;
}

void linalg_half_rows(float *c, const float *a, const void *b, int64_t m, int64_t n, int64_t k, int64_t ld)
{
    rows_job job = { c, a, b, m, n, k, ld };
    int32_t parts = m * n * k < PARALLEL_MIN_WORK ? 1 : mtk_parallel_threads(0);
    if (parts > n) parts = (int32_t)n;
    mtk_parallel_range(n, parts, run_rows, &job);
}
