/* Fast last-dim softmax / log_softmax / layer_norm / rms_norm for
 * contiguous floating tensors (see nn_fast.h).  Rows are independent:
 * they are split across the nn family's threads, and each row runs a
 * few passes over LANES elements at a time — reductions keep LANES
 * partial results side by side so no reassociation is needed.  exp runs
 * on GCC vectors of LANES floats (plain arithmetic, one element per
 * lane), written out so that no compiler heuristic decides whether it
 * vectorizes: an auto-vectorized scalar exp was left scalar in the AVX2
 * build ("control flow in loop": the clamps were jump-threaded into
 * branches that only AVX-512's masks could if-convert).  The row
 * functions are compiled for AVX-512, AVX2 and baseline x86-64, and
 * each call takes the variant of cpu_isa_active() (core/cpu_isa.h).
 * Every variant does the same float operations in the same order
 * (no contraction into FMA: -ffp-contract=off), so results are
 * bit-identical across them. */
#include "ops/nn_fast.h"
#include "ops/nn.h"
#include "core/cpu_isa.h"
#include "core/parallel.h"
#include "core/scalar.h"

#include <math.h>
#include <string.h>

#define INLINE static inline __attribute__((always_inline))

#define LANES 16 /* partial sums / maxima kept per row pass */
/* below this many elements a call stays on one thread */
#define PARALLEL_MIN_ELEMENTS ((int64_t)1 << 15)

/* The vector helpers below are static and always inlined: no vector
 * crosses a call, so GCC's warning that returning one by value would
 * differ between instruction sets' ABIs does not apply. */
#if defined(__clang__)
#pragma clang diagnostic ignored "-Wunknown-warning-option"
#endif
#if defined(__GNUC__)
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

/* -------------------------------------------------------------- exp */

/* exp(x) in float for x <= 0 (any x works, results are clamped to the
 * float range): x = n ln2 + r with |r| <= ln2/2, exp(r) by a degree-7
 * polynomial (Cephes' expf coefficients, under 2 ulp), times 2^n built
 * in the exponent bits — in two halves, so that results down to the
 * smallest subnormal come out right.  NaN stays NaN.  The lane loops
 * below do the same operations on vectors: bit-identical results. */
INLINE float exp_f32(float in)
{
    float x = in >= -104.0f ? in : -104.0f; /* NaN too: its result is set at the end */
    x = x <= 88.0f ? x : 88.0f;
    const float magic = 12582912.0f; /* 1.5 * 2^23: adding it rounds to an integer */
    float n = (x * 1.44269504088896341f + magic) - magic;
    float r = x - n * 0.693359375f;   /* ln2, high part (exact product) */
    r = r - n * -2.12194440e-4f;      /* ln2, low part                 */
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    int32_t ni = (int32_t)n, half = ni / 2; /* n in [-150, 127]: both halves' exponents stay normal */
    uint32_t b1 = (uint32_t)(half + 127) << 23, b2 = (uint32_t)(ni - half + 127) << 23;
    float s1, s2;
    memcpy(&s1, &b1, sizeof s1);
    memcpy(&s2, &b2, sizeof s2);
    return in == in ? p * s1 * s2 : in;
}

/* ----------------------------------------------------- lane loops */

/* The two passes of a softmax row that the compiler does not vectorize
 * by itself, on GCC vectors of W floats, W the width of the variant's
 * registers (4: SSE2, 8: AVX2, 16: AVX-512).  A vector wider than the
 * instruction set's registers is no good: GCC splits its comparisons
 * into scalar code.  Whatever W, lane l of the LANES partial results
 * sees the same elements in the same order.  Each loop covers the
 * whole LANES steps of a row and returns where they end. */
#define SELECT(W, mask, a, b) ((vfloat##W)(((mask) & (vint##W)(a)) | (~(mask) & (vint##W)(b))))
#define DEFINE_LANE_LOOPS(W)                                                                                 \
    typedef float vfloat##W __attribute__((vector_size(W * sizeof(float))));                                \
    typedef int32_t vint##W __attribute__((vector_size(W * sizeof(int32_t))));                              \
                                                                                                             \
    /* mask ? a : b, lane by lane (C has no vector ?:; a macro, since GCC   */                               \
    /* notes that a 64-byte vector argument is passed differently by ISAs)   */                              \
    /* exp_f32(src[l] - shift) for the W floats at src */                                                   \
    INLINE vfloat##W exp_lanes##W(const float *src, float shift)                                            \
    {                                                                                                        \
        vfloat##W in, zero = { 0 };                                                                          \
        memcpy(&in, src, sizeof in);                                                                         \
        in -= shift;                                                                                         \
        vfloat##W x = SELECT(W, in >= -104.0f, in, zero - 104.0f);                                           \
        x = SELECT(W, x <= 88.0f, x, zero + 88.0f);                                                          \
        vfloat##W n = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f;                                \
        vfloat##W r = x - n * 0.693359375f;                                                                  \
        r = r - n * -2.12194440e-4f;                                                                         \
        vfloat##W p = zero + 1.9875691500e-4f;                                                               \
        p = p * r + 1.3981999507e-3f;                                                                        \
        p = p * r + 8.3334519073e-3f;                                                                        \
        p = p * r + 4.1665795894e-2f;                                                                        \
        p = p * r + 1.6666665459e-1f;                                                                        \
        p = p * r + 5.0000001201e-1f;                                                                        \
        p = p * r * r + r + 1.0f;                                                                            \
        vint##W ni = __builtin_convertvector(n, vint##W), half = ni / 2;                                     \
        vfloat##W s1 = (vfloat##W)((half + 127) << 23), s2 = (vfloat##W)((ni - half + 127) << 23);           \
        return SELECT(W, in == in, p * s1 * s2, in);                                                         \
    }                                                                                                        \
                                                                                                             \
    /* m[l] = the largest x[j] with j % LANES == l (NaN skipped), -inf if none */                            \
    INLINE int64_t max_lanes##W(const float *restrict x, int64_t n, float *restrict m)                      \
    {                                                                                                        \
        vfloat##W v[LANES / W];                                                                              \
        for (int k = 0; k < LANES / W; k++) v[k] = (vfloat##W){ 0 } - INFINITY;                              \
        int64_t j = 0;                                                                                       \
        for (; j + LANES <= n; j += LANES)                                                                   \
            _Pragma("GCC unroll 4") for (int k = 0; k < LANES / W; k++) {                                    \
                vfloat##W a;                                                                                 \
                memcpy(&a, x + j + k * W, sizeof a);                                                         \
                v[k] = SELECT(W, a > v[k], a, v[k]);                                                         \
            }                                                                                                \
        memcpy(m, v, sizeof v);                                                                              \
        return j;                                                                                            \
    }                                                                                                        \
                                                                                                             \
    /* y[j] = exp(x[j] - max) (when store), s[l] = sum of them with j % LANES == l */                        \
    INLINE int64_t exp_sum_lanes##W(const float *restrict x, float *restrict y, int64_t n, float max,        \
                                    bool store, float *restrict s)                                           \
    {                                                                                                        \
        vfloat##W acc[LANES / W];                                                                            \
        for (int k = 0; k < LANES / W; k++) acc[k] = (vfloat##W){ 0 };                                        \
        int64_t j = 0;                                                                                       \
        for (; j + LANES <= n; j += LANES)                                                                   \
            _Pragma("GCC unroll 4") for (int k = 0; k < LANES / W; k++) {                                    \
                vfloat##W e = exp_lanes##W(x + j + k * W, max);                                              \
                if (store) memcpy(y + j + k * W, &e, sizeof e);                                              \
                acc[k] += e;                                                                                 \
            }                                                                                                \
        memcpy(s, acc, sizeof acc);                                                                          \
        return j;                                                                                            \
    }
DEFINE_LANE_LOOPS(4)
DEFINE_LANE_LOOPS(8)
DEFINE_LANE_LOOPS(16)
#undef DEFINE_LANE_LOOPS
#undef SELECT

/* -------------------------------------------------- float32 rows */

/* The largest x[j] (NaN skipped; -inf for none), over LANES partial
 * maxima of W-float vectors. */
INLINE float max_f32(const float *restrict x, int64_t n, int width)
{
    float m[LANES];
    int64_t j = width == 16 ? max_lanes16(x, n, m) : width == 8 ? max_lanes8(x, n, m) : max_lanes4(x, n, m);
    float r = -INFINITY;
    for (int l = 0; l < LANES; l++) r = m[l] > r ? m[l] : r;
    for (; j < n; j++) r = x[j] > r ? x[j] : r;
    return r;
}

/* A row whose maximum is not finite (+inf, or every element -inf or
 * NaN): plain double arithmetic, as the general kernel does. */
static void softmax_row_slow_f32(const float *x, float *y, int64_t n, bool take_log)
{
    double max = -INFINITY;
    for (int64_t j = 0; j < n; j++)
        if (x[j] > max || isnan(x[j])) max = x[j];
    if (isinf(max) && max < 0) max = 0;
    double sum = 0;
    for (int64_t j = 0; j < n; j++) sum += exp(x[j] - max);
    double log_sum = log(sum);
    for (int64_t j = 0; j < n; j++) y[j] = (float)(take_log ? x[j] - max - log_sum : exp(x[j] - max) / sum);
}

/* y (n) = softmax / log_softmax of x (n); x and y do not overlap;
 * width: the variant's vector width in floats (4, 8 or 16) */
INLINE void softmax_row_f32(const float *restrict x, float *restrict y, int64_t n, bool take_log, int width)
{
    float max = max_f32(x, n, width);
    if (!isfinite(max)) {
        softmax_row_slow_f32(x, y, n, take_log);
        return;
    }
    float s[LANES];
    int64_t j = width == 16  ? exp_sum_lanes16(x, y, n, max, !take_log, s)
                : width == 8 ? exp_sum_lanes8(x, y, n, max, !take_log, s)
                             : exp_sum_lanes4(x, y, n, max, !take_log, s);
    for (; j < n; j++) {
        float e = exp_f32(x[j] - max);
        if (!take_log) y[j] = e;
        s[0] += e;
    }
    double sum = 0;
    for (int l = 0; l < LANES; l++) sum += s[l];
    if (take_log) {
        float shift = (float)((double)max + log(sum));
        for (j = 0; j + LANES <= n; j += LANES)
            for (int l = 0; l < LANES; l++) y[j + l] = x[j + l] - shift;
        for (; j < n; j++) y[j] = x[j] - shift;
    } else {
        float inv = (float)(1.0 / sum);
        for (j = 0; j + LANES <= n; j += LANES)
            for (int l = 0; l < LANES; l++) y[j + l] *= inv;
        for (; j < n; j++) y[j] *= inv;
    }
}

/* A row's mean (0 for rms) and variance about it (rms: the mean of x^2),
 * accumulated in double over LANES partial sums plus a tail, one
 * definition per element type, inlined into each instruction set's
 * variant of its callers. */
#define DEFINE_ROW_STATS(NAME, T)                                                                            \
    INLINE void NAME(const T *restrict x, int64_t n, bool rms, double *mean_out, double *var_out)   \
    {                                                                                                    \
        double mean = 0, var = 0;                                                                        \
        int64_t j;                                                                                       \
        if (!rms) {                                                                                      \
            double s[LANES] = { 0 };                                                                     \
            for (j = 0; j + LANES <= n; j += LANES)                                                      \
                for (int l = 0; l < LANES; l++) s[l] += x[j + l];                                        \
            for (; j < n; j++) s[0] += x[j];                                                             \
            for (int l = 0; l < LANES; l++) mean += s[l];                                                \
            mean /= (double)n;                                                                           \
        }                                                                                                \
        double q[LANES] = { 0 };                                                                         \
        for (j = 0; j + LANES <= n; j += LANES)                                                          \
            for (int l = 0; l < LANES; l++) {                                                            \
                double d = (double)x[j + l] - mean;                                                      \
                q[l] += d * d;                                                                           \
            }                                                                                            \
        for (; j < n; j++) q[0] += ((double)x[j] - mean) * ((double)x[j] - mean);                        \
        for (int l = 0; l < LANES; l++) var += q[l];                                                     \
        *mean_out = mean;                                                                                \
        *var_out = var / (double)n;                                                                      \
    }
DEFINE_ROW_STATS(row_stats_f32, float)
DEFINE_ROW_STATS(row_stats_f64, double)
#undef DEFINE_ROW_STATS

/* y (n) = (x - mean) * rstd [* w] [+ b]; rms: x * rstd [* w], with
 * rstd = 1 / sqrt(mean((x - mean)^2) + eps) (rms: of mean(x^2)).  The
 * statistics accumulate in double. */
INLINE void norm_row_f32(const float *restrict x, float *restrict y, int64_t n, const float *restrict w,
                                const float *restrict b, double eps, bool rms)
{
    double mean, var;
    row_stats_f32(x, n, rms, &mean, &var);
    int64_t j;
    float m = (float)mean, rstd = (float)(1.0 / sqrt(var + eps));
    /* the same formula in every branch; the loops are written in LANES
     * steps plus a tail, which the compiler vectorizes */
#define NORM_LOOP(expr)                                                                                      \
    for (j = 0; j + LANES <= n; j += LANES)                                                                  \
        for (int l = 0; l < LANES; l++) {                                                                    \
            int64_t k = j + l;                                                                               \
            y[k] = expr;                                                                                     \
        }                                                                                                    \
    for (int64_t k = j; k < n; k++) y[k] = expr;
    if (w && b) {
        NORM_LOOP((x[k] - m) * rstd * w[k] + b[k])
    } else if (w) {
        NORM_LOOP((x[k] - m) * rstd * w[k])
    } else if (b) {
        NORM_LOOP((x[k] - m) * rstd + b[k])
    } else {
        NORM_LOOP((x[k] - m) * rstd)
    }
#undef NORM_LOOP
}

/* -------------------------------------------------- float64 rows */

static void softmax_row_f64(const double *x, double *y, int64_t n, bool take_log)
{
    double max = -INFINITY;
    for (int64_t j = 0; j < n; j++)
        if (x[j] > max || isnan(x[j])) max = x[j];
    if (isinf(max) && max < 0) max = 0;
    double sum = 0;
    for (int64_t j = 0; j < n; j++) {
        double e = exp(x[j] - max);
        if (!take_log) y[j] = e;
        sum += e;
    }
    if (take_log) {
        double shift = max + log(sum);
        for (int64_t j = 0; j < n; j++) y[j] = x[j] - shift;
    } else {
        for (int64_t j = 0; j < n; j++) y[j] /= sum;
    }
}

INLINE void norm_row_f64(const double *restrict x, double *restrict y, int64_t n, const double *restrict w,
                                const double *restrict b, double eps, bool rms)
{
    double mean, var;
    row_stats_f64(x, n, rms, &mean, &var);
    double rstd = 1.0 / sqrt(var + eps);
    for (int64_t j = 0; j < n; j++) {
        double v = (x[j] - mean) * rstd;
        if (w) v *= w[j];
        if (b) v += b[j];
        y[j] = v;
    }
}

/* ------------------------------------- one variant per instruction set */

/* The row kernels of one instruction set: the bodies above, inlined
 * into functions compiled for that set. */
typedef struct row_kernels {
    void (*softmax_f32)(const float *restrict x, float *restrict y, int64_t n, bool take_log);
    void (*norm_f32)(const float *restrict x, float *restrict y, int64_t n, const float *restrict w,
                     const float *restrict b, double eps, bool rms);
    void (*norm_f64)(const double *restrict x, double *restrict y, int64_t n, const double *restrict w,
                     const double *restrict b, double eps, bool rms);
} row_kernels;

#define ROW_VARIANT(SUFFIX, TARGET, WIDTH)                                                                          \
    TARGET static void softmax_f32_##SUFFIX(const float *restrict x, float *restrict y, int64_t n, bool lg) \
    {                                                                                                        \
        softmax_row_f32(x, y, n, lg, WIDTH);                                                                        \
    }                                                                                                        \
    TARGET static void norm_f32_##SUFFIX(const float *restrict x, float *restrict y, int64_t n,              \
                                         const float *restrict w, const float *restrict b, double eps,       \
                                         bool rms)                                                           \
    {                                                                                                        \
        norm_row_f32(x, y, n, w, b, eps, rms);                                                               \
    }                                                                                                        \
    TARGET static void norm_f64_##SUFFIX(const double *restrict x, double *restrict y, int64_t n,            \
                                         const double *restrict w, const double *restrict b, double eps,     \
                                         bool rms)                                                           \
    {                                                                                                        \
        norm_row_f64(x, y, n, w, b, eps, rms);                                                               \
    }
ROW_VARIANT(baseline, , 4)
ROW_VARIANT(avx2, CPU_ISA_TARGET_AVX2, 8)
ROW_VARIANT(avx512, CPU_ISA_TARGET_AVX512, 16)
#undef ROW_VARIANT

static const row_kernels kernels[CPU_ISA_COUNT] = {
    [CPU_ISA_BASELINE] = { softmax_f32_baseline, norm_f32_baseline, norm_f64_baseline },
    [CPU_ISA_AVX2] = { softmax_f32_avx2, norm_f32_avx2, norm_f64_avx2 },
    [CPU_ISA_AVX512] = { softmax_f32_avx512, norm_f32_avx512, norm_f64_avx512 },
};

void nn_fast_softmax_row_f32(const float *x, float *y, int64_t n)
{
    kernels[cpu_isa_active()].softmax_f32(x, y, n, false);
}

/* ------------------------------------------------------ the calls */

typedef enum { ROW_SOFTMAX, ROW_NORM } row_kind;

typedef struct fast_job {
    row_kind kind;
    const row_kernels *k;    /* the variant of cpu_isa_active()         */
    mtk_dtype dtype;
    const char *x;
    char *y;
    int64_t n;               /* row length                              */
    bool log, rms;
    double eps;
    const void *w, *b;       /* row_len params in the compute type      */
    float *scratch;          /* float16/bfloat16: 2 rows per part       */
} fast_job;

static void to_f32(mtk_dtype dtype, const uint16_t *src, float *dst, int64_t n)
{
    if (dtype == MTK_FLOAT16)
        for (int64_t j = 0; j < n; j++) dst[j] = mtk_f16_to_f32(src[j]);
    else
        for (int64_t j = 0; j < n; j++) dst[j] = mtk_bf16_to_f32(src[j]);
}

static void from_f32(mtk_dtype dtype, const float *src, uint16_t *dst, int64_t n)
{
    if (dtype == MTK_FLOAT16)
        for (int64_t j = 0; j < n; j++) dst[j] = mtk_f32_to_f16(src[j]);
    else
        for (int64_t j = 0; j < n; j++) dst[j] = mtk_f32_to_bf16(src[j]);
}

static void f32_row(const fast_job *job, const float *x, float *y)
{
    if (job->kind == ROW_SOFTMAX) job->k->softmax_f32(x, y, job->n, job->log);
    else job->k->norm_f32(x, y, job->n, job->w, job->b, job->eps, job->rms);
}

static void run_rows(int64_t begin, int64_t end, int32_t part, void *user)
{
    const fast_job *job = user;
    int64_t n = job->n;
    size_t es = mtk_dtype_size(job->dtype);
    for (int64_t r = begin; r < end; r++) {
        const char *x = job->x + r * n * (int64_t)es;
        char *y = job->y + r * n * (int64_t)es;
        if (job->dtype == MTK_FLOAT32) {
            f32_row(job, (const float *)x, (float *)y);
        } else if (job->dtype == MTK_FLOAT64) {
            if (job->kind == ROW_SOFTMAX) softmax_row_f64((const double *)x, (double *)y, n, job->log);
            else job->k->norm_f64((const double *)x, (double *)y, n, job->w, job->b, job->eps, job->rms);
        } else {
            float *xs = job->scratch + 2 * part * n, *ys = xs + n;
            to_f32(job->dtype, (const uint16_t *)x, xs, n);
            f32_row(job, xs, ys);
            from_f32(job->dtype, ys, (uint16_t *)y, n);
        }
    }
}

static bool fast_dtype(mtk_dtype d)
{
    return d == MTK_FLOAT32 || d == MTK_FLOAT64 || d == MTK_FLOAT16 || d == MTK_BFLOAT16;
}

/* Runs job over x's rows on the nn threads; false when scratch memory
 * runs out (nothing written). */
static bool run_job(mtk_ctx *ctx, fast_job *job, int64_t numel)
{
    int64_t rows = numel / job->n;
    job->k = &kernels[cpu_isa_active()];
    int32_t parts = numel < PARALLEL_MIN_ELEMENTS ? 1 : nn_num_threads();
    if (parts > rows) parts = (int32_t)rows;
    if (parts > MTK_PARALLEL_MAX_THREADS) parts = MTK_PARALLEL_MAX_THREADS;
    if (parts < 1) parts = 1;
    if (job->dtype == MTK_FLOAT16 || job->dtype == MTK_BFLOAT16) {
        job->scratch = mtk_ctx_malloc(ctx, (size_t)(2 * parts * job->n) * sizeof(float));
        if (!job->scratch) return false;
    }
    mtk_parallel_range(rows, parts, run_rows, job);
    mtk_ctx_mfree(ctx, job->scratch);
    return true;
}

bool mtk_nn_fast_softmax(mtk_ctx *ctx, const mtk_tensor *x, int32_t dim, bool take_log, mtk_tensor *out)
{
    int64_t numel = mtk_tensor_numel(x);
    if (numel == 0 || !fast_dtype(x->dtype) || out->dtype != x->dtype || !mtk_tensor_is_contiguous(x) ||
        !mtk_tensor_is_contiguous(out))
        return false;
    for (int32_t d = dim + 1; d < x->ndim; d++)
        if (x->shape[d] != 1) return false; /* not the last dim */
    fast_job job = { .kind = ROW_SOFTMAX, .dtype = x->dtype, .x = mtk_tensor_data(x), .y = mtk_tensor_data(out),
                     .n = x->ndim ? x->shape[dim] : 1, .log = take_log };
    return run_job(ctx, &job, numel);
}

/* weight / bias as row_len elements of the compute type (float32 for
 * the reduced dtypes) into *dst: the tensor's own data when it has that
 * type, else a converted copy in *copy.  False when it cannot. */
static bool param_values(mtk_ctx *ctx, const mtk_tensor *p, mtk_dtype compute, int64_t n, const void **dst,
                         void **copy)
{
    *dst = NULL;
    *copy = NULL;
    if (!p) return true;
    if (mtk_tensor_numel(p) != n || !mtk_tensor_is_contiguous(p) || !fast_dtype(p->dtype)) return false;
    if (p->dtype == compute) {
        *dst = mtk_tensor_data(p);
        return true;
    }
    if (compute != MTK_FLOAT32) return false;
    float *v = mtk_ctx_malloc(ctx, (size_t)n * sizeof *v);
    if (!v) return false;
    const char *src = mtk_tensor_data(p);
    for (int64_t j = 0; j < n; j++) v[j] = (float)mtk_load_f64(p->dtype, src + j * (int64_t)mtk_dtype_size(p->dtype));
    *dst = *copy = v;
    return true;
}

bool mtk_nn_fast_norm(mtk_ctx *ctx, const mtk_tensor *x, const mtk_tensor *weight, const mtk_tensor *bias,
                      int64_t row_len, double eps, bool rms, mtk_tensor *out)
{
    int64_t numel = mtk_tensor_numel(x);
    if (numel == 0 || row_len <= 0 || numel % row_len || !fast_dtype(x->dtype) || out->dtype != x->dtype ||
        !mtk_tensor_is_contiguous(x) || !mtk_tensor_is_contiguous(out))
        return false;
    mtk_dtype compute = x->dtype == MTK_FLOAT64 ? MTK_FLOAT64 : MTK_FLOAT32;
    fast_job job = { .kind = ROW_NORM, .dtype = x->dtype, .x = mtk_tensor_data(x), .y = mtk_tensor_data(out),
                     .n = row_len, .rms = rms, .eps = eps };
    void *wcopy = NULL, *bcopy = NULL;
    bool ok = param_values(ctx, weight, compute, row_len, &job.w, &wcopy) &&
              param_values(ctx, rms ? NULL : bias, compute, row_len, &job.b, &bcopy) && run_job(ctx, &job, numel);
    mtk_ctx_mfree(ctx, wcopy);
    mtk_ctx_mfree(ctx, bcopy);
    return ok;
}
