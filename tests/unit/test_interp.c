/* F.interpolate's corners against torch 2.13: the strides of its result
 * on meta (the replay of torch's decompositions of the linear and cubic
 * modes) and on cpu (torch's kernels: a fresh tensor in
 * input.suggest_memory_format()), and the calls torch's cpu kernels
 * accept before their dtype dispatch.  Every expected value was printed
 * by torch on the same expression. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "mtk/mtk.h"
#include "unit_eval.h"

/* evaluates expr on `device` and checks the result's shape and strides */
static void assert_layout(mtk_ctx *ctx, mtk_device device, const char *expr, int32_t ndim, const int64_t *shape,
                          const int64_t *stride)
{
    mtk_value v = unit_eval_on(ctx, device, expr);
    assert_int_equal(v.kind, MTK_VALUE_TENSOR);
    const mtk_tensor *t = v.as.tensor;
    assert_int_equal(t->ndim, ndim);
    for (int32_t i = 0; i < ndim; i++) {
        if (t->shape[i] != shape[i]) fail_msg("%s: shape[%d] %lld, torch %lld", expr, (int)i, (long long)t->shape[i], (long long)shape[i]);
        if (t->stride[i] != stride[i])
            fail_msg("%s: stride[%d] %lld, torch %lld", expr, (int)i, (long long)t->stride[i], (long long)stride[i]);
    }
}

#define META MTK_DEVICE_META
#define CPU MTK_DEVICE_CPU
#define DIMS(...) (const int64_t[]){ __VA_ARGS__ }

static void meta_cubic_one_pixel_keeps_the_gathers_layout(void **state)
{
    mtk_ctx *ctx = *state;
    /* N=1, channel stride = batch stride, 1x1 output: the gather orders N
     * inside C and .contiguous() keeps it */
    const char *e = "interpolate(permute(unsqueeze(f32[3, 3, 5], 1), [1, 0, 3, 2]), scale_factor=[0.3, 0.5], "
                    "mode='bicubic', align_corners=False)";
    assert_layout(ctx, META, e, 4, DIMS(1, 3, 1, 1), DIMS(1, 1, 1, 1));
    assert_layout(ctx, CPU, e, 4, DIMS(1, 3, 1, 1), DIMS(3, 1, 1, 1));
}

static void meta_half_inputs_are_converted_before_the_gather(void **state)
{
    mtk_ctx *ctx = *state;
    /* float16 becomes float32 by Tensor.to first (dense strides), and
     * suggest_memory_format reads the converted input */
    assert_layout(ctx, META, "interpolate(as_strided(f16[9], [1, 3, 1, 2], [1, 2, 2, 1]), size=[1, 1], mode='bicubic')",
                  4, DIMS(1, 3, 1, 1), DIMS(1, 1, 1, 1));
    assert_layout(ctx, META,
                  "interpolate(as_strided(f16[19], [2, 1, 1, 5], [2, 0, 4, 4]), size=[6, 1], mode='bilinear', "
                  "align_corners=True)",
                  4, DIMS(2, 1, 6, 1), DIMS(6, 12, 1, 1));
    assert_layout(ctx, META,
                  "interpolate(as_strided(f16[6], [1, 2, 2, 1], [0, 1, 4, 3]), scale_factor=[3, 1.5], mode='bilinear')",
                  4, DIMS(1, 2, 6, 1), DIMS(12, 1, 2, 2));
}

static void meta_integer_linear_rounds_after_contiguous(void **state)
{
    mtk_ctx *ctx = *state;
    /* empty outputs: .contiguous(channels_last) zeroes N's stride, round()
     * then lays the empty tensor out densely */
    assert_layout(ctx, META,
                  "interpolate(as_strided(u8[75], [5, 5, 1, 3], [15, 1, 15, 5]), scale_factor=[0.5, 1.5], "
                  "mode='bilinear', align_corners=False)",
                  4, DIMS(5, 5, 0, 4), DIMS(20, 1, 20, 5));
    assert_layout(ctx, META,
                  "interpolate(as_strided(u8[253], [5, 2, 1, 5, 5], [50, 1, 50, 10, 2]), scale_factor=[0.5, 2, 0.3], "
                  "mode='trilinear')",
                  5, DIMS(5, 2, 0, 10, 1), DIMS(20, 10, 10, 1, 1));
}

static void cpu_result_is_fresh_in_the_suggested_format(void **state)
{
    mtk_ctx *ctx = *state;
    /* one channel, channels-last strides: meta keeps row-major strides
     * (they count as channels-last), cpu allocates channels-last ones */
    const char *e = "interpolate(permute(f64[2, 5, 3, 1], [0, 3, 1, 2]), scale_factor=(2.0, 1.5), "
                    "recompute_scale_factor=True, mode='nearest-exact')";
    assert_layout(ctx, META, e, 4, DIMS(2, 1, 10, 4), DIMS(40, 40, 4, 1));
    assert_layout(ctx, CPU, e, 4, DIMS(2, 1, 10, 4), DIMS(40, 1, 4, 1));
    e = "interpolate(permute(f32[2, 6, 4, 2], [0, 3, 1, 2]), size=(1, 1), mode='bilinear', align_corners=False)";
    assert_layout(ctx, META, e, 4, DIMS(2, 2, 1, 1), DIMS(2, 1, 1, 1));
    assert_layout(ctx, CPU, e, 4, DIMS(2, 2, 1, 1), DIMS(2, 1, 2, 2));
    e = "interpolate(movedim(f16[1, 5, 6, 6, 3], 4, 1), size=1, mode='trilinear', align_corners=False)";
    assert_layout(ctx, META, e, 5, DIMS(1, 3, 1, 1, 1), DIMS(3, 1, 1, 1, 1));
    assert_layout(ctx, CPU, e, 5, DIMS(1, 3, 1, 1, 1), DIMS(3, 1, 3, 3, 3));
    e = "interpolate(permute(f32[2, 2, 5, 1], [0, 3, 1, 2]), size=(6, 3), mode='bicubic', align_corners=False)";
    assert_layout(ctx, CPU, e, 4, DIMS(2, 1, 6, 3), DIMS(18, 1, 3, 1));
}

static void cpu_antialias_of_unchanged_size_copies_any_float(void **state)
{
    mtk_ctx *ctx = *state;
    /* torch's separable kernel copies before dispatching on the dtype;
     * float16 is refused only when something is resampled */
    mtk_value v;
    assert_true(mtk_ctx_push_device(ctx, CPU));
    assert_true(mtk_eval(ctx, "interpolate(f16[2, 3, 4, 4], scale_factor=[1.1, 1.1], mode='bicubic', antialias=True)", &v));
    assert_int_equal(v.kind, MTK_VALUE_TENSOR);
    assert_int_equal(v.as.tensor->dtype, MTK_FLOAT16);
    assert_int_equal(v.as.tensor->shape[3], 4);
    assert_false(mtk_eval(ctx, "interpolate(f16[2, 3, 4, 4], size=[4, 3], mode='bilinear', antialias=True)", &v));
    assert_int_equal(mtk_ctx_status(ctx), MTK_ERR_DTYPE);
    mtk_ctx_clear_error(ctx);
    assert_true(mtk_ctx_pop_device(ctx));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        UNIT_CTX_TEST(meta_cubic_one_pixel_keeps_the_gathers_layout),
        UNIT_CTX_TEST(meta_half_inputs_are_converted_before_the_gather),
        UNIT_CTX_TEST(meta_integer_linear_rounds_after_contiguous),
        UNIT_CTX_TEST(cpu_result_is_fresh_in_the_suggested_format),
        UNIT_CTX_TEST(cpu_antialias_of_unchanged_size_copies_any_float),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
