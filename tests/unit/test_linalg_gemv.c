/* The float32 few-row product of decoding (src/ops/linalg_gemv.c): the
 * kernel against a float64 reference at odd sizes, its documented sum
 * order bit for bit, its split over threads, and linear / matmul taking
 * it for a few rows.  ctest runs this file under each instruction set
 * (MTK_CPU_ISA), so every variant is checked. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "mtk/mtk.h"
#include "core/cpu_isa.h"
#include "core/parallel.h"
#include "ops/linalg_gemv.h"

#define SHAPE(...) ((const int64_t[]){ __VA_ARGS__ })

static uint32_t lcg_next(uint32_t *state)
{
    *state = *state * 1664525u + 1013904223u;
    return *state >> 8;
}

/* n floats in [-2, 2) with 12 significant bits */
static void fill(uint32_t *state, float *dst, int64_t n)
{
    for (int64_t i = 0; i < n; i++) dst[i] = (float)(lcg_next(state) % 4096) / 1024.0f - 2.0f;
}

/* The documented float32 sum (linalg_gemv.h) of x . w over k: 16
 * partial sums, sum l taking the elements p % 16 == l in order, the
 * remainder added into sums 0.., then pairwise 0+8, 1+9, ..., 0+4, ...;
 * each term fused (one rounding) on AVX2 / AVX-512, product then sum on
 * the baseline. */
static float lane_sum(const float *x, const float *w, int64_t k)
{
    bool fused = cpu_isa_active() != CPU_ISA_BASELINE;
    float lanes[16] = { 0 };
    for (int64_t p = 0, tail = k - k % 16; p < k; p++) {
        int64_t l = p < tail ? p % 16 : p - tail;
        lanes[l] = fused ? fmaf(x[p], w[p], lanes[l]) : lanes[l] + x[p] * w[p];
    }
    for (int half = 8; half > 0; half /= 2)
        for (int l = 0; l < half; l++) lanes[l] += lanes[l + half];
    return lanes[0];
}

/* got (m x n) against x (rows lda apart) @ w^T (rows ldw apart) summed in
 * double, within float32 summation error of the sum of magnitudes, and
 * bit for bit the documented order */
static void assert_product(const float *got, const float *x, int64_t lda, const float *w, int64_t ldw, int64_t m,
                           int64_t n, int64_t k)
{
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double exact = 0, magnitude = 0;
            for (int64_t p = 0; p < k; p++) {
                exact += (double)x[i * lda + p] * w[j * ldw + p];
                magnitude += fabs((double)x[i * lda + p] * w[j * ldw + p]);
            }
            double tol = magnitude * (double)(k / 16 + 5) * 0x1p-23 + 1e-30;
            float g = got[i * n + j], model = lane_sum(x + i * lda, w + j * ldw, k);
            if (fabs(g - exact) > tol || memcmp(&g, &model, sizeof g) != 0)
                fail_msg("m=%lld n=%lld k=%lld: [%lld][%lld] = %.9g, want %.9g (tol %.3g), documented order %.9g",
                         (long long)m, (long long)n, (long long)k, (long long)i, (long long)j, g, exact, tol, model);
        }
}

/* Every m of the kernel, n around its blocks of 4 columns, k around its
 * blocks of 16 elements; a's rows with padding (lda > k), the weight's
 * rows padded (ldw > k) and at an odd byte address (a mapped file) */
static void f32_rows_product_matches_a_float64_reference_at_odd_sizes(void **state)
{
    (void)state;
    static const int64_t ks[] = { 1, 3, 15, 16, 17, 37, 100, 1001 }, ns[] = { 1, 3, 4, 5, 7, 9, 33 };
    uint32_t seed = 3;
    for (int64_t m = 1; m <= LINALG_GEMV_MAX_ROWS; m++)
        for (size_t ki = 0; ki < sizeof ks / sizeof *ks; ki++)
            for (size_t ni = 0; ni < sizeof ns / sizeof *ns; ni++) {
                int64_t k = ks[ki], n = ns[ni], lda = k + 2, ldw = k + 3;
                float *x = test_malloc((size_t)(m * lda) * sizeof *x), *w = test_malloc((size_t)(n * ldw) * sizeof *w);
                float *c = test_malloc((size_t)(m * n) * sizeof *c);
                unsigned char *wbuf = test_malloc((size_t)(n * ldw) * sizeof *w + 1);
                fill(&seed, x, m * lda);
                fill(&seed, w, n * ldw);
                memcpy(wbuf + 1, w, (size_t)(n * ldw) * sizeof *w);
                linalg_gemv(c, x, lda, wbuf + 1, ldw, m, n, k);
                assert_product(c, x, lda, w, ldw, m, n, k);
                test_free(x), test_free(w), test_free(c), test_free(wbuf);
            }
}

/* Products big enough to be shared by threads: tasks of 4 columns
 * (k = 5000) and of 52 (k = 300), the last one short (37 and 4099
 * columns), 3 and 5 threads: every output has the bits of the
 * one-thread run */
static void f32_rows_product_shares_columns_over_threads_with_the_same_bits(void **state)
{
    (void)state;
    static const int64_t ns[] = { 37, 4099 }, ks[] = { 5000, 300 }, ms[] = { 1, 8 };
    static const int32_t threads[] = { 3, 5 };
    uint32_t seed = 9;
    for (size_t ni = 0; ni < 2; ni++)
        for (size_t mi = 0; mi < 2; mi++) {
            int64_t n = ns[ni], k = ks[ni], m = ms[mi];
            float *x = test_malloc((size_t)(m * k) * sizeof *x), *w = test_malloc((size_t)(n * k) * sizeof *w);
            float *one = test_malloc((size_t)(m * n) * sizeof *one), *many = test_malloc((size_t)(m * n) * sizeof *many);
            fill(&seed, x, m * k);
            fill(&seed, w, n * k);
            int32_t previous = mtk_parallel_scope_begin(1);
            linalg_gemv(one, x, k, w, k, m, n, k);
            assert_product(one, x, k, w, k, m, n, k);
            for (size_t t = 0; t < 2; t++) {
                mtk_parallel_scope_begin(threads[t]);
                memset(many, 0, (size_t)(m * n) * sizeof *many);
                linalg_gemv(many, x, k, w, k, m, n, k);
                assert_memory_equal(one, many, (size_t)(m * n) * sizeof *one);
            }
            mtk_parallel_scope_end(previous);
            test_free(x), test_free(w), test_free(one), test_free(many);
        }
}

/* float32 linear of 1..8 rows (a decode step's) runs the kernel: its
 * documented sums, bit for bit, plus the bias; a matmul with the
 * weight's transpose as a view, and an input read through a transposed
 * view (gathered first), give the same */
static void f32_linear_of_few_rows_sums_in_the_documented_order(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_ctx_set_num_threads(ctx, 2);
    enum { K = 203, N = 67, MAXM = 8 };
    static float x[MAXM * K], xt[K * MAXM], w[N * K], bias[N];
    uint32_t seed = 5;
    fill(&seed, w, N * K);
    fill(&seed, bias, N);
    static const int64_t ms[] = { 1, 2, 5, 8 };
    for (size_t mi = 0; mi < 4; mi++) {
        int64_t m = ms[mi];
        fill(&seed, x, m * K);
        for (int64_t i = 0; i < m; i++)
            for (int64_t p = 0; p < K; p++) xt[p * m + i] = x[i * K + p];
        mtk_tensor *tx = mtk_tensor_from_data(ctx, MTK_FLOAT32, SHAPE(m, K), 2, NULL, x);
        mtk_tensor *txt = mtk_tensor_from_data(ctx, MTK_FLOAT32, SHAPE(m, K), 2, SHAPE(1, m), xt);
        mtk_tensor *tw = mtk_tensor_from_data(ctx, MTK_FLOAT32, SHAPE(N, K), 2, NULL, w);
        mtk_tensor *tw_t = mtk_tensor_from_data(ctx, MTK_FLOAT32, SHAPE(K, N), 2, SHAPE(1, K), w);
        mtk_tensor *tb = mtk_tensor_from_data(ctx, MTK_FLOAT32, SHAPE(N), 1, NULL, bias);
        mtk_tensor *outs[4] = { mtk_linear(ctx, tx, tw, NULL), mtk_matmul(ctx, tx, tw_t),
                                mtk_linear(ctx, txt, tw, NULL), mtk_linear(ctx, tx, tw, tb) };
        for (int o = 0; o < 4; o++) {
            assert_non_null(outs[o]);
            const float *got = mtk_tensor_data(outs[o]);
            for (int64_t i = 0; i < m; i++)
                for (int64_t j = 0; j < N; j++) {
                    float want = lane_sum(x + i * K, w + j * K, K);
                    if (o == 3) want += bias[j];
                    if (memcmp(&got[i * N + j], &want, sizeof want) != 0)
                        fail_msg("output %d, m=%lld: [%lld][%lld] = %.9g, want %.9g", o, (long long)m, (long long)i,
                                 (long long)j, got[i * N + j], want);
                }
        }
    }
    mtk_ctx_free(ctx);
}

/* Outside the kernel's reach: more rows than a decode step (sgemm), a
 * weight whose k elements are not adjacent, a dtype other than float32 */
static void f32_rows_product_fits_only_few_rows_of_adjacent_float32(void **state)
{
    (void)state;
    assert_true(linalg_gemv_fit(1, MTK_FLOAT32, 1));
    assert_true(linalg_gemv_fit(LINALG_GEMV_MAX_ROWS, MTK_FLOAT32, 1));
    assert_false(linalg_gemv_fit(LINALG_GEMV_MAX_ROWS + 1, MTK_FLOAT32, 1));
    assert_false(linalg_gemv_fit(0, MTK_FLOAT32, 1));
    assert_false(linalg_gemv_fit(1, MTK_FLOAT32, 7));
    assert_false(linalg_gemv_fit(1, MTK_FLOAT64, 1));
    assert_false(linalg_gemv_fit(1, MTK_BFLOAT16, 1));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(f32_rows_product_matches_a_float64_reference_at_odd_sizes),
        cmocka_unit_test(f32_rows_product_shares_columns_over_threads_with_the_same_bits),
        cmocka_unit_test(f32_linear_of_few_rows_sums_in_the_documented_order),
        cmocka_unit_test(f32_rows_product_fits_only_few_rows_of_adjacent_float32),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
