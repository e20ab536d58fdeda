/* The float32 few-row product (linalg_gemv.h).
 *
 * A decode step multiplies one row (or a few) by every weight of the
 * model: the product reads each weight once and does two flops per
 * 4 bytes, so memory bounds it.  OpenBLAS's sgemv reads as fast on one
 * thread, but on several its threads and mtk's pool (which runs every
 * other op of the step) both spin while the other works; run on mtk's
 * pool, the step has one set of threads.
 *
 * Each output is a dot product of a row of a with a row of the weight.
 * One pass over a's row serves ROW_BLOCK weight rows (four streams the
 * prefetcher follows), with LANES partial sums per row on GCC vectors of
 * W floats (4: SSE2, 8: AVX2, 16: AVX-512; core/cpu_isa.h), lane l
 * summing the elements p % LANES == l in order.  Every variant does the
 * same float operations (a multiply, then an add: -ffp-contract=off), so
 * results are bit-identical across them; fused multiply-adds would not
 * be faster here, where the loads of the weight set the pace. */
#include "ops/linalg_gemv.h"
#include "core/cpu_isa.h"
#include "core/parallel.h"

#include <string.h>

#define INLINE static inline __attribute__((always_inline))

#define LANES 16    /* partial sums of one dot product */
#define ROW_BLOCK 4 /* weight rows one pass over a reads */
/* below this many multiply-adds a product stays on one thread */
#define PARALLEL_MIN_WORK ((int64_t)1 << 16)

#if defined(__GNUC__)
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

#define DEFINE_VFLOAT(W) typedef float vfloat##W __attribute__((vector_size(W * sizeof(float))));
DEFINE_VFLOAT(4)
DEFINE_VFLOAT(8)
DEFINE_VFLOAT(16)
#undef DEFINE_VFLOAT

/* s[r][l] = sum over whole LANES blocks of a[p] * b_r[p], p % LANES == l,
 * for `rows` (1..ROW_BLOCK) weight rows b_r = b + r * stride bytes: a's
 * block is loaded once for all of them.  Returns where the blocks end. */
#define DEFINE_DOT_LANES(W)                                                                                  \
    INLINE int64_t dot_lanes##W(const float *restrict a, const unsigned char *restrict b, int64_t stride,   \
                                int rows, int64_t k, float s[][LANES])                                      \
    {                                                                                                        \
        enum { GROUPS = LANES / W }; /* vectors per block */                                                 \
        vfloat##W acc[ROW_BLOCK][GROUPS];                                                                    \
        for (int r = 0; r < ROW_BLOCK; r++)                                                                  \
            for (int g = 0; g < GROUPS; g++) acc[r][g] = (vfloat##W){ 0 };                                   \
        int64_t p = 0;                                                                                       \
        for (; p + LANES <= k; p += LANES)                                                                   \
            _Pragma("GCC unroll 4") for (int g = 0; g < GROUPS; g++) {                                       \
                vfloat##W x;                                                                                 \
                memcpy(&x, a + p + W * g, sizeof x);                                                         \
                _Pragma("GCC unroll 4") for (int r = 0; r < ROW_BLOCK; r++) {                                \
                    if (r >= rows) break;                                                                    \
                    vfloat##W w;                                                                             \
                    memcpy(&w, b + r * stride + 4 * (p + W * g), sizeof w); /* maybe unaligned */            \
                    acc[r][g] += x * w;                                                                      \
                }                                                                                            \
            }                                                                                                \
        for (int r = 0; r < rows; r++)                                                                       \
            for (int g = 0; g < GROUPS; g++) memcpy(s[r] + W * g, &acc[r][g], sizeof acc[r][g]);             \
        return p;                                                                                            \
    }
DEFINE_DOT_LANES(4)
DEFINE_DOT_LANES(8)
DEFINE_DOT_LANES(16)
#undef DEFINE_DOT_LANES

/* The dot products of a (k floats) with `rows` (1..ROW_BLOCK) float32
 * rows b + r * stride bytes, width W, into out[r]: the whole blocks, the
 * tail into lanes 0.., then the lanes pairwise (0+8, 1+9, ...). */
INLINE void dot_f32(const float *restrict a, const unsigned char *restrict b, int64_t stride, int rows, int64_t k,
                    int width, float *out)
{
    float s[ROW_BLOCK][LANES];
    int64_t p0 = width == 16 ? dot_lanes16(a, b, stride, rows, k, s)
                 : width == 8 ? dot_lanes8(a, b, stride, rows, k, s)
                              : dot_lanes4(a, b, stride, rows, k, s);
    for (int r = 0; r < rows; r++) {
        const unsigned char *br = b + r * stride;
        for (int64_t p = p0, l = 0; p < k; p++, l++) {
            float w;
            memcpy(&w, br + 4 * p, sizeof w);
            s[r][l] += a[p] * w;
        }
        for (int half = LANES / 2; half > 0; half /= 2)
            for (int l = 0; l < half; l++) s[r][l] += s[r][l + half];
        out[r] = s[r][0];
    }
}

typedef struct gemv_job {
    float *c;
    const float *a;
    const unsigned char *b;
    int64_t lda, ldb, m, n, k;
    cpu_isa isa;
} gemv_job;

/* c[i][j] for every row i and the columns j in [begin, end), ROW_BLOCK
 * weight rows (columns of c) at a time */
#define GEMV_VARIANT(SUFFIX, TARGET, W)                                                                      \
    TARGET static void gemv_##SUFFIX(const gemv_job *job, int64_t begin, int64_t end)                        \
    {                                                                                                        \
        int64_t stride = 4 * job->ldb; /* bytes between weight rows */                                       \
        for (int64_t j = begin; j < end;) {                                                                  \
            /* a constant row count: each call inlines to its own loop */                                    \
            int rows = end - j >= ROW_BLOCK ? ROW_BLOCK : 1;                                                 \
            const unsigned char *w = job->b + j * stride;                                                    \
            for (int64_t i = 0; i < job->m; i++) {                                                           \
                float out[ROW_BLOCK];                                                                        \
                const float *x = job->a + i * job->lda;                                                      \
                if (rows == ROW_BLOCK) dot_f32(x, w, stride, ROW_BLOCK, job->k, W, out);                     \
                else dot_f32(x, w, stride, 1, job->k, W, out);                                               \
                for (int r = 0; r < rows; r++) job->c[i * job->n + j + r] = out[r];                          \
            }                                                                                                \
            j += rows;                                                                                       \
        }                                                                                                    \
    }
GEMV_VARIANT(baseline, , 4)
GEMV_VARIANT(avx2, CPU_ISA_TARGET_AVX2, 8)
GEMV_VARIANT(avx512, CPU_ISA_TARGET_AVX512, 16)
#undef GEMV_VARIANT

typedef void (*gemv_fn)(const gemv_job *job, int64_t begin, int64_t end);
static const gemv_fn gemv_kernels[CPU_ISA_COUNT] = {
    [CPU_ISA_BASELINE] = gemv_baseline,
    [CPU_ISA_AVX2] = gemv_avx2,
    [CPU_ISA_AVX512] = gemv_avx512,
};

static void run_gemv(int64_t begin, int64_t end, int32_t part, void *user)
{
    (void)part;
    const gemv_job *job = user;
    gemv_kernels[job->isa](job, begin, end);
}

bool linalg_gemv_fit(int64_t m, mtk_dtype b_dtype, int64_t b_stride_k)
{
    return b_dtype == MTK_FLOAT32 && m >= 1 && m <= LINALG_GEMV_MAX_ROWS && b_stride_k == 1;
}

void linalg_gemv(float *c, const float *a, int64_t lda, const void *b, int64_t ldb, int64_t m, int64_t n, int64_t k)
{
    gemv_job job = { c, a, b, lda, ldb, m, n, k, cpu_isa_active() };
    int32_t parts = m * n * k < PARALLEL_MIN_WORK ? 1 : mtk_parallel_threads(0);
    if (parts > n) parts = (int32_t)n;
    mtk_parallel_range(n, parts, run_gemv, &job);
}
