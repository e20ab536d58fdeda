/* The cpu values of the max pools against torch 2.13: which index a
 * window reports when no element beats the start value (ties at the
 * lowest integer, all -inf, or a window wholly in the padding), per torch
 * kernel: the contiguous kernel starts at the window's first element, the
 * channels-last 3-D kernel drops the depth term for the channels past the
 * last whole 32-byte vector; and the layout of the cpu result of an
 * unbatched channels-last max_pool3d.  Every expected value was printed by
 * torch on the same expression. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "mtk/mtk.h"
#include "unit_eval.h"
#include "core/scalar.h"

/* the indices (second result) of a max pool with return_indices on cpu */
static mtk_tensor *indices_of(mtk_ctx *ctx, const char *expr)
{
    mtk_value v = unit_eval_on(ctx, MTK_DEVICE_CPU, expr);
    assert_true(v.kind == MTK_VALUE_TUPLE || v.kind == MTK_VALUE_LIST);
    assert_int_equal(v.as.list.count, 2);
    assert_int_equal(v.as.list.items[1].kind, MTK_VALUE_TENSOR);
    mtk_tensor *t = v.as.list.items[1].as.tensor;
    assert_int_equal(t->dtype, MTK_INT64);
    return t;
}

/* element i (logical row-major order) of an int64 cpu tensor */
static int64_t element(const mtk_tensor *t, int64_t i)
{
    int64_t offset = 0;
    for (int32_t d = t->ndim - 1; d >= 0; d--) {
        offset += (i % t->shape[d]) * t->stride[d];
        i /= t->shape[d];
    }
    const char *base = mtk_tensor_data(t);
    return mtk_load_i64(MTK_INT64, base + offset * 8);
}

static void assert_indices(const mtk_tensor *t, const int64_t *want, int64_t n)
{
    assert_int_equal(mtk_tensor_numel(t), n);
    for (int64_t i = 0; i < n; i++)
        if (element(t, i) != want[i])
            fail_msg("index %lld: %lld, torch %lld", (long long)i, (long long)element(t, i), (long long)want[i]);
}

static void max_pool3d_channels_last_tail_channels_drop_the_depth(void **state)
{
    mtk_ctx *ctx = *state;
    /* 40 uint8 channels: 32 in a vector (index d0*H*W + ...), 8 past it */
    mtk_tensor *t = indices_of(ctx, "max_pool3d(permute(reshape(to(mul(arange(480), 0), u8), [1, 3, 2, 2, 40]), "
                                    "[0, 4, 1, 2, 3]), (1, 2, 2), stride=(2, 1, 1), return_indices=True)");
    int64_t want[80];
    for (int64_t c = 0; c < 40; c++) want[2 * c] = 0, want[2 * c + 1] = c < 32 ? 8 : 0;
    assert_indices(t, want, 80);
    /* the same input contiguous: torch's contiguous kernel keeps the depth */
    t = indices_of(ctx, "max_pool3d(reshape(to(mul(arange(480), 0), u8), [1, 40, 3, 2, 2]), (1, 2, 2), "
                        "stride=(2, 1, 1), return_indices=True)");
    for (int64_t c = 0; c < 40; c++) want[2 * c] = 0, want[2 * c + 1] = 8;
    assert_indices(t, want, 80);
}

static void max_pool3d_unbatched_channels_last_input_runs_the_channels_last_kernel(void **state)
{
    mtk_ctx *ctx = *state;
    /* 4-D input whose unsqueeze(0) is channels_last_3d: ties at 0 */
    mtk_tensor *t = indices_of(ctx, "max_pool3d(permute(movedim(reshape(to(remainder(arange(36), 7), u8), "
                                    "[1, 3, 3, 4]), 1, 0), 3, -4, -2, 1), (2, 2, 1), padding=[1, 1, 0], "
                                    "dilation=(2, 1, 1), return_indices=True)");
    assert_indices(t, (const int64_t[]){ 3, 5, 3, 5, 3, 4, 3, 4, 0, 4, 0, 4, 3, 4, 3, 4 }, 16);
}

static void max_pool3d_empty_windows_report_the_start_index(void **state)
{
    mtk_ctx *ctx = *state;
    /* windows wholly in the depth padding: -inf; channels-last drops d0 */
    mtk_tensor *t = indices_of(ctx, "max_pool3d(permute(reshape(linspace(-2.5, 2.25, 60, dtype=f64), "
                                    "[2, 1, 5, 3, 2]), [0, 4, 1, 2, 3]), (2, 1, 1), [2, 3, 3], padding=[1, 0, 0], "
                                    "dilation=(2, 2, 1), return_indices=True)");
    assert_indices(t, (const int64_t[]){ 0, 9, 0, 9, 0, 9, 0, 9 }, 8);
    t = indices_of(ctx, "max_pool3d(contiguous(permute(reshape(linspace(-2.5, 2.25, 60, dtype=f64), "
                        "[2, 1, 5, 3, 2]), [0, 4, 1, 2, 3])), (2, 1, 1), [2, 3, 3], padding=[1, 0, 0], "
                        "dilation=(2, 2, 1), return_indices=True)");
    assert_indices(t, (const int64_t[]){ 15, 24, 15, 24, 15, 24, 15, 24 }, 8);
}

/* evaluates expr on `device`; checks the (first) result's shape and strides */
static void assert_layout(mtk_ctx *ctx, mtk_device device, const char *expr, int32_t ndim, const int64_t *shape,
                          const int64_t *stride)
{
    mtk_value v;
    assert_true(mtk_ctx_push_device(ctx, device));
    bool ok = mtk_eval(ctx, expr, &v);
    assert_true(mtk_ctx_pop_device(ctx));
    if (!ok) fail_msg("eval(%s) failed: %s", expr, mtk_ctx_message(ctx));
    if (v.kind == MTK_VALUE_TUPLE || v.kind == MTK_VALUE_LIST) v = v.as.list.items[0];
    assert_int_equal(v.kind, MTK_VALUE_TENSOR);
    const mtk_tensor *t = v.as.tensor;
    assert_int_equal(t->ndim, ndim);
    for (int32_t i = 0; i < ndim; i++) {
        assert_int_equal(t->shape[i], shape[i]);
        assert_int_equal(t->stride[i], stride[i]);
    }
}

#define DIMS(...) (const int64_t[]){ __VA_ARGS__ }

static void cpu_max_pool3d_unbatched_channels_last_result(void **state)
{
    mtk_ctx *ctx = *state;
    /* a 4-D input whose unsqueeze(0) is channels_last_3d: torch's cpu
     * kernel resizes the output channels_last_3d and squeezes it */
    const char *e = "max_pool3d(transpose(f32[1, 4, 6, 4], 3, 0), (3, 3, 2), [1, 3, 2], padding=(0, 0, 1), "
                    "dilation=(1, 1, 2), ceil_mode=True)";
    assert_layout(ctx, MTK_DEVICE_META, e, 4, DIMS(4, 2, 2, 1), DIMS(4, 2, 1, 1));
    assert_layout(ctx, MTK_DEVICE_CPU, e, 4, DIMS(4, 2, 2, 1), DIMS(1, 8, 4, 4));
    e = "max_pool3d(movedim(f16[6, 5, 4, 2], 3, 0), [2, 2, 2], [2, 1, 1], padding=[1, 1, 1], dilation=[2, 1, 1], "
        "ceil_mode=True)";
    assert_layout(ctx, MTK_DEVICE_CPU, e, 4, DIMS(2, 4, 6, 5), DIMS(1, 60, 10, 2));
}

static void cpu_adaptive_avg_pool2d_of_empty_output_skips_the_dtype_check(void **state)
{
    mtk_ctx *ctx = *state;
    /* torch's 2-D cpu kernel returns before dispatching on the dtype */
    assert_layout(ctx, MTK_DEVICE_CPU, "adaptive_avg_pool2d(u8[2, 3, 4, 4], [0, 2])", 4, DIMS(2, 3, 0, 2),
                  DIMS(6, 2, 2, 1));
    assert_layout(ctx, MTK_DEVICE_CPU, "interpolate(u8[2, 3, 4], scale_factor=0.2, mode='area')", 3, DIMS(2, 3, 0),
                  DIMS(3, 1, 1));
    /* the 3-D one does not */
    mtk_value v;
    assert_true(mtk_ctx_push_device(ctx, MTK_DEVICE_CPU));
    assert_false(mtk_eval(ctx, "adaptive_avg_pool3d(i64[0, 3, 4, 4, 4], [2, 3, 2])", &v));
    assert_int_equal(mtk_ctx_status(ctx), MTK_ERR_DTYPE);
    mtk_ctx_clear_error(ctx);
    assert_true(mtk_ctx_pop_device(ctx));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        UNIT_CTX_TEST(max_pool3d_channels_last_tail_channels_drop_the_depth),
        UNIT_CTX_TEST(max_pool3d_unbatched_channels_last_input_runs_the_channels_last_kernel),
        UNIT_CTX_TEST(max_pool3d_empty_windows_report_the_start_index),
        UNIT_CTX_TEST(cpu_max_pool3d_unbatched_channels_last_result),
        UNIT_CTX_TEST(cpu_adaptive_avg_pool2d_of_empty_output_skips_the_dtype_check),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
