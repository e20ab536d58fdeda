/* batch_norm's cpu values for bfloat16 and float16 inputs, bit for bit as
 * torch 2.13's cpu computes them (expected values printed by torch on the
 * same expressions; before nn_batchnorm_half.c mtk was off by an ulp or
 * more on each of these). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "mtk/mtk.h"
#include "unit_eval.h"
#include "mtk/eval.h"
#include "core/scalar.h"

/* Evaluates expr on cpu; asserts a contiguous tensor of `n` elements
 * equal to `expected` exactly (as doubles). */
static void assert_values(const char *expr, const double *expected, int64_t n)
{
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_value v = unit_eval_on(ctx, MTK_DEVICE_CPU, expr);
    assert_int_equal(v.kind, MTK_VALUE_TENSOR);
    const mtk_tensor *t = v.as.tensor;
    assert_int_equal(mtk_tensor_numel(t), n);
    assert_true(mtk_tensor_is_contiguous(t));
    const unsigned char *data = mtk_tensor_data(t);
    size_t size = mtk_dtype_size(t->dtype);
    for (int64_t i = 0; i < n; i++) {
        double got = mtk_load_f64(t->dtype, data + (size_t)i * size);
        if (got != expected[i]) fail_msg("%s: element %lld is %.17g, torch gives %.17g", expr, (long long)i, got,
                                         expected[i]);
    }
    mtk_ctx_free(ctx);
}

/* An expanded (not contiguous) weight: torch's generic kernel, each step
 * rounded to bfloat16, on statistics from its dense kernel. */
static void batch_norm_bf16_expanded_weight_matches_torch(void **state)
{
    (void)state;
    assert_values("batch_norm(reshape(linspace(-1.0, 2.25, 4, dtype=bf16), [2, 2, 1, 1, 1]), "
                  "reshape(linspace(-3.0, 2.25, 2, dtype=bf16), [2]), reshape(linspace(-3.0, 2.25, 2, dtype=bf16), "
                  "[2]), expand(reshape(linspace(-3.0, 4.0, 1, dtype=bf16), [1]), [2]), "
                  "reshape(linspace(0.5, 3.5, 2, dtype=bf16), [2]), training=True, eps=1e-5)",
                  (const double[]){ 3.46875, 6.5, -2.46875, 0.53125 }, 4);
}

/* (N, C) input: torch's channels-last statistics, bfloat16 mean and
 * variance sum, fused multiply-adds in the transform. */
static void batch_norm_bf16_training_matches_torch(void **state)
{
    (void)state;
    static const double expected[80] = {
        -1.109375,   -0.140625,     -0.98828125,   0.78125,    -0.1328125,   -1.0078125,   0.76953125, -0.279296875,
        1.28125,     -0.265625,     -0.98828125,   0.76953125, -0.1328125,   -1.0,         0.75,       -0.98828125,
        0.671875,    -0.265625,     -1.109375,     0.76953125, 0.22265625,   1.40625,      0.2197265625, -1.4453125,
        1.4609375,   0.224609375,   -1.5390625,    1.3984375,  -0.546875,    1.328125,     0.2197265625, -1.5390625,
        1.4609375,   0.333984375,   -1.5,          0.2197265625, -1.5703125, 1.328125,     0.22265625, -1.5390625,
        1.4453125,   -1.40625,      1.5390625,     -0.22265625, -1.328125,   1.5703125,    -0.2197265625, -1.3984375,
        0.45703125,  -1.4609375,    1.5390625,     -0.2197265625, -1.328125, 1.5625,       -0.21484375, 1.5390625,
        -0.224609375, -1.4609375,   1.4453125,     -0.2197265625, -0.78125,  0.140625,     -0.76953125, 1.109375,
        0.265625,    -0.671875,     0.98828125,    0.1396484375, -1.3671875, 0.1328125,    -0.76953125, 0.98828125,
        0.265625,    -0.66796875,   1.078125,      -0.76953125, 1.0078125,   0.1328125,    -0.78125,   0.98828125,
    };
    assert_values("batch_norm(reshape(to(add(mul(sub(remainder(mul(linspace(0.0, 79.0, 80, dtype=f32), 0.618034), "
                  "1.0), 0.5), 0.5), 3.0), bf16), [4, 20]), None, None, None, None, training=True)",
                  expected, 80);
}

/* float16: statistics kept in float until stored in float16. */
static void batch_norm_f16_training_matches_torch(void **state)
{
    (void)state;
    static const double expected[33] = {
        1.5927734375,     0.0904541015625, 1.5322265625,  0.76171875,         0.8037109375,    1.431640625,
        0.0755615234375,  -1.5712890625,   -0.65283203125, -0.900390625,      -1.3818359375,   -5.960464477539063e-08,
        -0.0,             -1.248046875,    -0.0,           -0.6552734375,     -0.0004341602325439453, -0.06158447265625,
        -0.0,             0.5322265625,    0.0001366138458251953, 1.1259765625, -1.591796875,  -0.09039306640625,
        -0.28369140625,   -0.76123046875,  -0.148681640625, -1.431640625,     -0.01397705078125, 1.5712890625,
        0.12066650390625, 0.900390625,     0.25537109375,
    };
    assert_values("batch_norm(reshape(to(mul(sub(remainder(mul(linspace(0.0, 32.0, 33, dtype=f32), 39.477968), 1.0), "
                  "0.5), 200.0), f16), [3, 11]), None, None, to(add(mul(sub(remainder(mul(linspace(0.0, 10.0, 11, "
                  "dtype=f32), 33.408709), 1.0), 0.5), 3.0), 0.2), f16), None, training=True, eps=1e-05)",
                  expected, 33);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(batch_norm_bf16_expanded_weight_matches_torch),
        cmocka_unit_test(batch_norm_bf16_training_matches_torch),
        cmocka_unit_test(batch_norm_f16_training_matches_torch),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
