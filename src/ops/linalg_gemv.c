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
 * prefetcher follows), with LANES partial sums per row on vectors of W
 * floats (4: SSE2, 8: AVX2, 16: AVX-512; core/cpu_isa.h), lane l summing
 * the elements p % LANES == l in order.  AVX2 and AVX-512 add each
 * product with a fused multiply-add (one rounding: fewer instructions in
 * flight per weight loaded, which measured ~5% more bandwidth on one
 * thread); the baseline rounds the product, then the sum.  So AVX2 and
 * AVX-512 give the same bits, and the baseline the same sums in the same
 * order with one more rounding per term. */
#include "ops/linalg_gemv.h"
#include "core/cpu_isa.h"
#include "core/parallel.h"

#include <string.h>

#if defined(__GNUC__) && defined(__x86_64__)
#define GEMV_X86 1
#include <immintrin.h>
#endif

#define INLINE static inline __attribute__((always_inline))

#define LANES 16    /* partial sums of one dot product */
#define ROW_BLOCK 4 /* weight rows one pass over a reads */
/* below this many multiply-adds a product stays on one thread */
#define PARALLEL_MIN_WORK ((int64_t)1 << 16)
/* weight bytes one task reads, about (a few microseconds) */
#define TASK_BYTES ((int64_t)64 << 10)

#if defined(__GNUC__)
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

#define DEFINE_VFLOAT(W) typedef float vfloat##W __attribute__((vector_size(W * sizeof(float))));
DEFINE_VFLOAT(4)
DEFINE_VFLOAT(8)
DEFINE_VFLOAT(16)
#undef DEFINE_VFLOAT

/* acc + x * w for vectors of W floats: fused in the AVX2 / AVX-512
 * variants, rounded twice in the baseline (and off x86-64, where only
 * the baseline runs) */
#define MADD_PLAIN(acc, x, w) ((acc) + (x) * (w))
#ifdef GEMV_X86
#define MADD_8(acc, x, w) ((vfloat8)_mm256_fmadd_ps((__m256)(x), (__m256)(w), (__m256)(acc)))
#define MADD_16(acc, x, w) ((vfloat16)_mm512_fmadd_ps((__m512)(x), (__m512)(w), (__m512)(acc)))
#define FUSED 1
#else
#define MADD_8 MADD_PLAIN
#define MADD_16 MADD_PLAIN
#define FUSED 0
#endif

/* s[r][l] = sum over whole LANES blocks of a[p] * b_r[p], p % LANES == l,
 * for `rows` (1..ROW_BLOCK) weight rows b_r = b + r * stride bytes: a's
 * block is loaded once for all of them.  Returns where the blocks end. */
#define DEFINE_DOT_LANES(SUFFIX, TARGET, W, MADD)                                                            \
    TARGET INLINE int64_t dot_lanes_##SUFFIX(const float *restrict a, const unsigned char *restrict b,        \
                                             int64_t stride, int rows, int64_t k, float s[][LANES])          \
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
                    acc[r][g] = MADD(acc[r][g], x, w);                                                       \
                }                                                                                            \
            }                                                                                                \
        for (int r = 0; r < rows; r++)                                                                       \
            for (int g = 0; g < GROUPS; g++) memcpy(s[r] + W * g, &acc[r][g], sizeof acc[r][g]);             \
        return p;                                                                                            \
    }
DEFINE_DOT_LANES(baseline, , 4, MADD_PLAIN)
DEFINE_DOT_LANES(avx2, CPU_ISA_TARGET_AVX2, 8, MADD_8)
DEFINE_DOT_LANES(avx512, CPU_ISA_TARGET_AVX512, 16, MADD_16)
#undef DEFINE_DOT_LANES

/* The dot products of a (k floats) with `rows` (1..ROW_BLOCK) float32
 * rows b + r * stride bytes into out[r]: the whole blocks, the tail into
 * lanes 0.. (fused when the blocks are), then the lanes pairwise (0+8,
 * 1+9, ...). */
#define DEFINE_DOT(SUFFIX, TARGET, FUSE)                                                                     \
    TARGET INLINE void dot_##SUFFIX(const float *restrict a, const unsigned char *restrict b, int64_t stride, \
                                    int rows, int64_t k, float *out)                                         \
    {                                                                                                        \
        float s[ROW_BLOCK][LANES];                                                                           \
        int64_t p0 = dot_lanes_##SUFFIX(a, b, stride, rows, k, s);                                           \
        for (int r = 0; r < rows; r++) {                                                                     \
            const unsigned char *br = b + r * stride;                                                        \
            for (int64_t p = p0, l = 0; p < k; p++, l++) {                                                   \
                float w;                                                                                     \
                memcpy(&w, br + 4 * p, sizeof w);                                                            \
                s[r][l] = FUSE ? __builtin_fmaf(a[p], w, s[r][l]) : s[r][l] + a[p] * w;                      \
            }                                                                                                \
            for (int half = LANES / 2; half > 0; half /= 2)                                                  \
                for (int l = 0; l < half; l++) s[r][l] += s[r][l + half];                                    \
            out[r] = s[r][0];                                                                                \
        }                                                                                                    \
    }
DEFINE_DOT(baseline, , 0)
DEFINE_DOT(avx2, CPU_ISA_TARGET_AVX2, FUSED)
DEFINE_DOT(avx512, CPU_ISA_TARGET_AVX512, FUSED)
#undef DEFINE_DOT

typedef struct gemv_job {
    float *c;
    const float *a;
    const unsigned char *b;
    int64_t lda, ldb, m, n, k;
    int64_t rows_per_task; /* columns of c per task (a multiple of ROW_BLOCK) */
    cpu_isa isa;
} gemv_job;

/* c[i][j] for every row i and the columns j in [begin, end), ROW_BLOCK
 * weight rows (columns of c) at a time */
#define GEMV_VARIANT(SUFFIX, TARGET)                                                                         \
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
                if (rows == ROW_BLOCK) dot_##SUFFIX(x, w, stride, ROW_BLOCK, job->k, out);                   \
                else dot_##SUFFIX(x, w, stride, 1, job->k, out);                                             \
                for (int r = 0; r < rows; r++) job->c[i * job->n + j + r] = out[r];                          \
            }                                                                                                \
            j += rows;                                                                                       \
        }                                                                                                    \
    }
GEMV_VARIANT(baseline, )
GEMV_VARIANT(avx2, CPU_ISA_TARGET_AVX2)
GEMV_VARIANT(avx512, CPU_ISA_TARGET_AVX512)
#undef GEMV_VARIANT

typedef void (*gemv_fn)(const gemv_job *job, int64_t begin, int64_t end);
static const gemv_fn gemv_kernels[CPU_ISA_COUNT] = {
    [CPU_ISA_BASELINE] = gemv_baseline,
    [CPU_ISA_AVX2] = gemv_avx2,
    [CPU_ISA_AVX512] = gemv_avx512,
};

/* task i: the columns [i * rows_per_task, ...) */
static void run_task(int64_t i, int32_t worker, void *user)
{
    (void)worker;
    const gemv_job *job = user;
    int64_t begin = i * job->rows_per_task, end = begin + job->rows_per_task;
    gemv_kernels[job->isa](job, begin, end < job->n ? end : job->n);
}

bool linalg_gemv_fit(int64_t m, mtk_dtype b_dtype, int64_t b_stride_k)
{
    return b_dtype == MTK_FLOAT32 && m >= 1 && m <= LINALG_GEMV_MAX_ROWS && b_stride_k == 1;
}

void linalg_gemv(float *c, const float *a, int64_t lda, const void *b, int64_t ldb, int64_t m, int64_t n, int64_t k)
{
    gemv_job job = { c, a, b, lda, ldb, m, n, k, n, cpu_isa_active() };
    if (m * n * k < PARALLEL_MIN_WORK) {
        gemv_kernels[job.isa](&job, 0, n);
        return;
    }
    /* Small tasks taken in turn, not one range per thread: on a busy
     * machine a thread that starts late takes fewer of them, where with
     * fixed ranges the others would wait for its whole share. */
    int64_t blocks = TASK_BYTES / (ROW_BLOCK * (k > 0 ? k : 1) * (int64_t)sizeof(float));
    job.rows_per_task = ROW_BLOCK * (blocks > 1 ? blocks : 1);
    mtk_parallel_tasks((n + job.rows_per_task - 1) / job.rows_per_task, mtk_parallel_threads(0), run_task, &job);
}
