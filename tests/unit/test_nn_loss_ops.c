/* The loss ops of the nn family against torch 2.13: dtypes and strides on
 * device='meta' (torch's meta decompositions) and on cpu (its ATen
 * kernels), and cpu values with torch's roundings.  Every expected value
 * below was printed by torch on the same expression. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "mtk/mtk.h"
#include "unit_eval.h"
#include "core/scalar.h"

/* expr evaluated on `device`; fails the test when it errors */
static mtk_tensor *eval_on(mtk_ctx *ctx, mtk_device device, const char *expr)
{
    mtk_value v = unit_eval_on(ctx, device, expr);
    assert_int_equal(v.kind, MTK_VALUE_TENSOR);
    return v.as.tensor;
}

static void eval_fails(mtk_ctx *ctx, mtk_device device, const char *expr)
{
    mtk_value v;
    assert_true(mtk_ctx_push_device(ctx, device));
    bool ok = mtk_eval(ctx, expr, &v);
    assert_true(mtk_ctx_pop_device(ctx));
    if (ok) fail_msg("eval(%s) succeeded", expr);
    mtk_ctx_clear_error(ctx);
}

static void assert_layout(const mtk_tensor *t, mtk_dtype dtype, int32_t ndim, const int64_t *shape,
                          const int64_t *stride)
{
    assert_int_equal(t->dtype, dtype);
    assert_int_equal(t->ndim, ndim);
    for (int32_t i = 0; i < ndim; i++) {
        assert_int_equal(t->shape[i], shape[i]);
        assert_int_equal(t->stride[i], stride[i]);
    }
}

#define L(...) ((const int64_t[]){ __VA_ARGS__ })

/* element i (logical row-major order) of a cpu tensor, as a double */
static double element(const mtk_tensor *t, int64_t i)
{
    int64_t offset = 0;
    for (int32_t d = t->ndim - 1; d >= 0; d--) {
        offset += (i % t->shape[d]) * t->stride[d];
        i /= t->shape[d];
    }
    const char *base = mtk_tensor_data(t);
    return mtk_load_f64(t->dtype, base + offset * (int64_t)mtk_dtype_size(t->dtype));
}

static void assert_values(const mtk_tensor *t, const double *want, int64_t n, double rtol)
{
    assert_int_equal(mtk_tensor_numel(t), n);
    for (int64_t i = 0; i < n; i++) {
        double got = element(t, i);
        if (!(fabs(got - want[i]) <= rtol * fabs(want[i])))
            fail_msg("element %lld: got %.17g, want %.17g", (long long)i, got, want[i]);
    }
}

/* ------------------------------------------------------------- meta */

static void mse_loss_meta_follows_the_decomposition_strides(void **state)
{
    mtk_ctx *ctx = *state;
    /* (x - y) then ** 2: the size-1 dim ends up with a contiguous stride */
    mtk_tensor *t = eval_on(ctx, MTK_DEVICE_META,
                            "mse_loss(f16[4,4,1,2], permute(f16[2, 4, 1, 4], [1, 3, 2, 0]), reduction='none')");
    assert_layout(t, MTK_FLOAT16, 4, L(4, 4, 1, 2), L(8, 2, 2, 1));
    t = eval_on(ctx, MTK_DEVICE_META, "l1_loss(t(expand(f32[], [3, 5])), t(f64[3,5]), reduction='none')");
    assert_layout(t, MTK_FLOAT64, 2, L(5, 3), L(3, 1));
    t = eval_on(ctx, MTK_DEVICE_META,
                "binary_cross_entropy_with_logits(f32[0,1,0], narrow(f32[0,1,3], 2, 1, 0), pos_weight=f32[], "
                "reduction='none')");
    assert_layout(t, MTK_FLOAT32, 3, L(0, 1, 0), L(1, 1, 1));
}

static void loss_meta_integer_dtypes_follow_torch(void **state)
{
    mtk_ctx *ctx = *state;
    mtk_tensor *t = eval_on(ctx, MTK_DEVICE_META, "binary_cross_entropy_with_logits(i32[4], i32[4], reduction='none')");
    assert_layout(t, MTK_INT32, 1, L(4), L(1));
    t = eval_on(ctx, MTK_DEVICE_META, "binary_cross_entropy_with_logits(i32[4], i32[4], reduction='sum')");
    assert_int_equal(t->dtype, MTK_INT64);
    t = eval_on(ctx, MTK_DEVICE_META, "smooth_l1_loss(i32[3], i32[3])"); /* floats inside, cast back */
    assert_int_equal(t->dtype, MTK_INT32);
    t = eval_on(ctx, MTK_DEVICE_META, "binary_cross_entropy(u8[1,5,2], u8[1,5,2])");
    assert_int_equal(t->dtype, MTK_UINT8);
    t = eval_on(ctx, MTK_DEVICE_META, "mse_loss(u8[5,3,2], u8[5,3,2], weight=u8[5,3,2])"); /* sum / sum */
    assert_int_equal(t->dtype, MTK_FLOAT32);
    eval_fails(ctx, MTK_DEVICE_META, "mse_loss(i32[3], i32[3])");
    eval_fails(ctx, MTK_DEVICE_META, "huber_loss(u8[1], u8[1], weight=u8[1])");
    eval_fails(ctx, MTK_DEVICE_META, "binary_cross_entropy_with_logits(bool[1, 1], f16[1,1], reduction='sum')");
}

static void class_loss_meta_dtypes_follow_torch(void **state)
{
    mtk_ctx *ctx = *state;
    mtk_tensor *t = eval_on(ctx, MTK_DEVICE_META, "nll_loss(u8[4], i64[], reduction='sum')");
    assert_int_equal(t->dtype, MTK_INT64);
    t = eval_on(ctx, MTK_DEVICE_META, "nll_loss(u8[4], i64[], reduction='mean')");
    assert_int_equal(t->dtype, MTK_FLOAT32);
    t = eval_on(ctx, MTK_DEVICE_META, "nll_loss(f16[3], i64[], weight=bf16[3], reduction='none')");
    assert_int_equal(t->dtype, MTK_FLOAT32);
    t = eval_on(ctx, MTK_DEVICE_META, "cross_entropy(i64[2], i64[], reduction='sum')");
    assert_int_equal(t->dtype, MTK_INT64);
    t = eval_on(ctx, MTK_DEVICE_META, "cross_entropy(i32[2,3,4], i64[2,4], reduction='none', label_smoothing=0.1)");
    assert_layout(t, MTK_FLOAT32, 2, L(2, 4), L(4, 1));
    eval_fails(ctx, MTK_DEVICE_CPU, "cross_entropy(i64[2], i64[], reduction='sum')");
    /* 4-D: the meta decomposition only broadcasts the weight; cpu wants one per class */
    t = eval_on(ctx, MTK_DEVICE_META,
                "nll_loss(transpose(f32[1, 2, 1, 1], 2, 1), i64[1,2,1], weight=f64[2], reduction='mean')");
    assert_int_equal(t->dtype, MTK_FLOAT64);
    eval_fails(ctx, MTK_DEVICE_CPU,
               "nll_loss(transpose(f32[1, 2, 1, 1], 2, 1), i64[1,2,1], weight=f64[2], reduction='mean')");
}

static void bce_weight_broadcasts_on_meta_only(void **state)
{
    mtk_ctx *ctx = *state;
    const char *expr = "binary_cross_entropy(f64[2,1,1], f64[2,1,1], f64[2], reduction='mean')";
    mtk_tensor *t = eval_on(ctx, MTK_DEVICE_META, expr);
    assert_layout(t, MTK_FLOAT64, 0, L(0), L(0));
    eval_fails(ctx, MTK_DEVICE_CPU, expr); /* loss.mul_(weight) cannot grow */
}

/* A 1-D input (one sample's class scores) with a 1-D target: torch's cpu
 * takes a target of one element as its 0-D form, refuses others with a
 * ValueError, and cross_entropy's label smoothing cannot add its [1]
 * term to the 0-D loss; torch's meta decomposition refuses every 1-D
 * target (torch 2.13). */
static void class_loss_of_one_sample_follows_each_device(void **state)
{
    mtk_ctx *ctx = *state;
    mtk_tensor *t = eval_on(ctx, MTK_DEVICE_CPU, "nll_loss(linspace(0.1, 0.9, 3), add(arange(1), 2), reduction='none')");
    assert_layout(t, MTK_FLOAT32, 0, L(0), L(0));
    assert_float_equal(*(const float *)mtk_tensor_data(t), -0.9f, 1e-7);
    t = eval_on(ctx, MTK_DEVICE_CPU, "cross_entropy(linspace(0.1, 0.9, 3), add(arange(1), 2))");
    assert_float_equal(*(const float *)mtk_tensor_data(t), 0.7512505054473877f, 1e-6);
    eval_fails(ctx, MTK_DEVICE_CPU, "nll_loss(f32[3], i64[2])");
    eval_fails(ctx, MTK_DEVICE_CPU, "nll_loss(f32[3], i64[0])");
    eval_fails(ctx, MTK_DEVICE_CPU, "cross_entropy(f32[3], i64[1], label_smoothing=0.2)");
    eval_fails(ctx, MTK_DEVICE_META, "nll_loss(f32[3], i64[1])");
    eval_fails(ctx, MTK_DEVICE_META, "nll_loss(f32[2], i64[2])");
    t = eval_on(ctx, MTK_DEVICE_META, "nll_loss(f32[3], i64[])");
    assert_layout(t, MTK_FLOAT32, 0, L(0), L(0));
}

/* cross_entropy with probability targets runs torch's composition step
 * by step: float16 log-probabilities times float16 targets round to
 * float16 before the float32 weight (values printed by torch 2.13) */
static void cross_entropy_probabilities_round_in_their_dtypes(void **state)
{
    mtk_ctx *ctx = *state;
    mtk_tensor *t = eval_on(ctx, MTK_DEVICE_CPU,
                            "cross_entropy(permute(select(reshape(linspace(-2.5, 1.5, 24, dtype=f16), [2, 4, 3]), 0, "
                            "-1), -1, -2), reshape(linspace(-1.0, 3.0, 12, dtype=f16), [3, 4]), weight=reshape("
                            "linspace(0.5, 3.5, 4), [4]), reduction='none')");
    assert_int_equal(t->dtype, MTK_FLOAT32);
    static const float want[3] = { -3.53155517578125f, 10.7138671875f, 24.9580078125f };
    for (int i = 0; i < 3; i++) assert_float_equal(((const float *)mtk_tensor_data(t))[i], want[i], 2e-6);
}

/* -------------------------------------------------------------- cpu */

static void loss_cpu_strides_follow_the_aten_kernels(void **state)
{
    mtk_ctx *ctx = *state;
    /* huber: empty_like(input) */
    mtk_tensor *t = eval_on(ctx, MTK_DEVICE_CPU, "huber_loss(f64[5,2,1,4], transpose(f64[5, 4, 1, 2], 1, 3), reduction='none')");
    assert_layout(t, MTK_FLOAT64, 4, L(5, 2, 1, 4), L(8, 4, 4, 1));
    /* binary_cross_entropy: empty_like(input) */
    t = eval_on(ctx, MTK_DEVICE_CPU,
                "binary_cross_entropy(transpose(f32[5, 1, 5, 2], 1, 2), transpose(f32[5,2,1,5], 1, 3), reduction='none')");
    assert_layout(t, MTK_FLOAT32, 4, L(5, 5, 1, 2), L(10, 2, 10, 1));
    /* l1: (x - y).abs(), whose TensorIterator takes the channels-last fast path */
    t = eval_on(ctx, MTK_DEVICE_CPU, "l1_loss(transpose(f32[5,2,1,3], 3, 1), f32[5,3,1,2], reduction='none')");
    assert_layout(t, MTK_FLOAT32, 4, L(5, 3, 1, 2), L(6, 1, 6, 3));
    eval_fails(ctx, MTK_DEVICE_CPU, "l1_loss(bool[2, 1], bf16[2,1])");
}

static void loss_cpu_values_round_as_torch(void **state)
{
    mtk_ctx *ctx = *state;
    /* bfloat16 log_softmax over the last dim rounds its sum and log */
    mtk_tensor *t = eval_on(ctx, MTK_DEVICE_CPU,
                            "cross_entropy(reshape(linspace(0.5, 1.375, 2, dtype=bf16), [2]), "
                            "reshape(linspace(-2.5, 1.5, 2), [2]), reduction='sum', label_smoothing=0.1)");
    assert_values(t, (const double[]){ -2.197265863418579 }, 1, 1e-6);
    /* log_sigmoid in float32, then float64 arithmetic */
    t = eval_on(ctx, MTK_DEVICE_CPU,
                "binary_cross_entropy_with_logits(reshape(linspace(-1.0, 1.5, 1), []), "
                "sigmoid(select(expand(reshape(linspace(-2.5, 4.0, 1, dtype=f64), [1]), [-1]), 0, 0)), reduction='none')");
    assert_values(t, (const double[]){ 0.38911992738147305 }, 1, 1e-12);
    /* ls.mul_(log_weight) rounds into bfloat16 */
    t = eval_on(ctx, MTK_DEVICE_CPU,
                "binary_cross_entropy_with_logits(reshape(linspace(-3.0, 3.0, 6, dtype=bf16), [2, 3]), "
                "sigmoid(reshape(linspace(-2.5, 2.25, 6, dtype=bf16), [2, 3])), "
                "pos_weight=reshape(linspace(0.5, 2.25, 1, dtype=bf16), [1, 1]), reduction='none')");
    assert_values(t, (const double[]){ 0.140625, 0.3046875, 0.466796875, 0.5546875, 0.48046875, 0.30859375 }, 6, 0);
    /* F's weighted mse: sum(loss) / sum(weight), the weights summed in float16 */
    t = eval_on(ctx, MTK_DEVICE_CPU,
                "mse_loss(narrow(reshape(linspace(-1.0, 2.25, 9, dtype=f16), [1, 3, 3]), 1, 0, 2), "
                "reshape(linspace(-1.0, 1.5, 3, dtype=bf16), [1, 1, 3]), "
                "weight=unsqueeze(reshape(linspace(0.5, 1.5, 6, dtype=f16), [2, 3]), 0), reduction='mean')");
    assert_values(t, (const double[]){ 0.867795467376709 }, 1, 1e-6);
    /* uint8 input - target wraps before abs and the int64 sum */
    t = eval_on(ctx, MTK_DEVICE_CPU,
                "l1_loss(narrow(reshape(to(remainder(arange(12), 6), u8), [3, 1, 4]), 2, 2, 2), "
                "reshape(to(remainder(arange(6), 5), u8), [3, 1, 2]), reduction='sum')");
    assert_int_equal(t->dtype, MTK_INT64);
    assert_values(t, (const double[]){ 517 }, 1, 0);
}

static void loss_cpu_reductions_add_up_in_torch_order(void **state)
{
    mtk_ctx *ctx = *state;
    /* nll_loss sums in bfloat16 with its cascade: 0, not the exact -0.27 + 0.27 */
    mtk_tensor *t = eval_on(ctx, MTK_DEVICE_CPU,
                            "nll_loss(reshape(linspace(-3.0, 3.0, 12, dtype=bf16), [3, 1, 2, 2]), "
                            "reshape(remainder(arange(12), 1), [3, 2, 2]), reduction='sum')");
    assert_values(t, (const double[]){ 0.015625 }, 1, 0);
    /* 'mean' divides by the count in bfloat16: 257 becomes 256 */
    t = eval_on(ctx, MTK_DEVICE_CPU,
                "nll_loss(reshape(linspace(-3.0, 3.0, 514, dtype=bf16), [257, 2]), "
                "reshape(remainder(arange(257), 1), [257]))");
    assert_values(t, (const double[]){ 0.01171875 }, 1, 0);
    t = eval_on(ctx, MTK_DEVICE_CPU,
                "cross_entropy(reshape(linspace(-3.0, 3.0, 60, dtype=bf16), [20, 3]), "
                "reshape(remainder(arange(20), 3), [20]), weight=reshape(linspace(0.5, 3.5, 3, dtype=bf16), [3]), "
                "reduction='sum')");
    assert_values(t, (const double[]){ 40.75 }, 1, 0);
    /* torch.sum(weight) in memory order is exactly 0: the mean is -inf */
    t = eval_on(ctx, MTK_DEVICE_CPU,
                "mse_loss(reshape(linspace(-1.0, 2.25, 8, dtype=f64), [2, 2, 2]), "
                "reshape(linspace(0.5, 3.0, 8, dtype=f64), [2, 2, 2]), "
                "weight=permute(select(reshape(linspace(-3.0, 3.0, 8, dtype=f64), [2, 1, 2, 2]), 1, -1), 1, 2, -3))");
    assert_true(isinf(element(t, 0)) && element(t, 0) < 0);
    t = eval_on(ctx, MTK_DEVICE_CPU,
                "l1_loss(reshape(linspace(-3.0, 3.0, 40, dtype=f64), [5, 8]), "
                "reshape(linspace(0.5, 1.5, 40, dtype=f64), [5, 8]), "
                "weight=t(reshape(linspace(-3.0, 3.0, 40, dtype=f64), [8, 5])))");
    assert_true(isinf(element(t, 0)) && element(t, 0) < 0);
    /* bfloat16 sums add in float and round once: rows of a strided weight */
    t = eval_on(ctx, MTK_DEVICE_CPU,
                "mse_loss(reshape(linspace(-1.0, 4.0, 6, dtype=bf16), [2, 3, 1]), "
                "reshape(linspace(-2.5, 2.25, 6, dtype=bf16), [2, 3, 1]), "
                "weight=narrow(narrow(reshape(linspace(-3.0, 4.0, 18, dtype=bf16), [3, 6, 1]), 1, 2, 3), 0, 0, 2))");
    assert_values(t, (const double[]){ 1.9765625 }, 1, 0);
    /* float32: (a - b) squared in float, then the vectorized cascade sum */
    t = eval_on(ctx, MTK_DEVICE_CPU,
                "mse_loss(reshape(linspace(0.5, 4.0, 128), [4, 4, 4, 2]), reshape(linspace(-1.0, 1.5, 128), "
                "[4, 4, 4, 2]), reduction='sum')");
    assert_values(t, (const double[]){ 522.8346557617188 }, 1, 0);
}

static void bce_with_logits_float_log_sigmoid_rounds_as_torch(void **state)
{
    mtk_ctx *ctx = *state;
    /* a float32 input's log_sigmoid is SLEEF's exp and log1p in float:
     * here an ulp below the C library's, which a float64 target shows */
    mtk_tensor *t = eval_on(ctx, MTK_DEVICE_CPU,
                            "binary_cross_entropy_with_logits(narrow(reshape(linspace(-1.0, 3.0, 72), [3, 2, 4, 3]), "
                            "0, 0, 2), sigmoid(reshape(linspace(-2.5, 2.25, 48, dtype=f64), [2, 2, 4, 3])), "
                            "reduction='none')");
    assert_int_equal(t->dtype, MTK_FLOAT64);
    assert_int_equal(mtk_tensor_numel(t), 48);
    static const int64_t at[4] = { 0, 1, 2, 8 };
    static const double want[4] = { 0.38911992738147305, 0.407291518315434, 0.4258465280166638, 0.5412095868726596 };
    for (int i = 0; i < 4; i++)
        if (element(t, at[i]) != want[i])
            fail_msg("element %lld: %.17g, torch %.17g", (long long)at[i], element(t, at[i]), want[i]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        UNIT_CTX_TEST(mse_loss_meta_follows_the_decomposition_strides),
        UNIT_CTX_TEST(loss_meta_integer_dtypes_follow_torch),
        UNIT_CTX_TEST(class_loss_meta_dtypes_follow_torch),
        UNIT_CTX_TEST(bce_weight_broadcasts_on_meta_only),
        UNIT_CTX_TEST(class_loss_of_one_sample_follows_each_device),
        UNIT_CTX_TEST(cross_entropy_probabilities_round_in_their_dtypes),
        UNIT_CTX_TEST(loss_cpu_strides_follow_the_aten_kernels),
        UNIT_CTX_TEST(loss_cpu_values_round_as_torch),
        UNIT_CTX_TEST(loss_cpu_reductions_add_up_in_torch_order),
        UNIT_CTX_TEST(bce_with_logits_float_log_sigmoid_rounds_as_torch),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
