/* Shapes and strides: numel and its overflow, shape checks and their
 * messages, contiguous and channels-last strides, PyTorch's contiguity
 * predicates (against a torch-generated table, tests/unit/data/
 * shape_table.h from gen_shape_table.py), and dim wrapping. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "mtk/core.h"
#include "data/shape_table.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static int setup_ctx(void **state)
{
    *state = mtk_ctx_new();
    return *state ? 0 : -1;
}

static int teardown_ctx(void **state)
{
    mtk_ctx_free(*state);
    return 0;
}

/* -------------------------------------------------------------- numel */

static void numel_multiplies_sizes(void **state)
{
    (void)state;
    int64_t s[3] = { 2, 3, 4 };
    assert_int_equal(mtk_shape_numel(s, 3), 24);
    assert_int_equal(mtk_shape_numel(s, 0), 1); /* a 0-dim tensor has one element */
    int64_t z[3] = { 2, 0, 4 };
    assert_int_equal(mtk_shape_numel(z, 3), 0);
}

static void numel_reports_overflow_as_minus_one(void **state)
{
    (void)state;
    int64_t big[2] = { INT64_C(1) << 40, INT64_C(1) << 40 };
    assert_int_equal(mtk_shape_numel(big, 2), -1);
    int64_t edge[2] = { INT64_C(1) << 31, INT64_C(1) << 31 }; /* 2^62 fits */
    assert_int_equal(mtk_shape_numel(edge, 2), INT64_C(1) << 62);
    int64_t max[1] = { INT64_MAX };
    assert_int_equal(mtk_shape_numel(max, 1), INT64_MAX);
    int64_t over[2] = { INT64_MAX, 2 };
    assert_int_equal(mtk_shape_numel(over, 2), -1);
    /* an empty dim makes the tensor empty, even after an overflow */
    int64_t empty[3] = { INT64_C(1) << 40, INT64_C(1) << 40, 0 };
    assert_int_equal(mtk_shape_numel(empty, 3), 0);
}

/* torch.empty(2, -1): "Trying to create tensor with negative dimension -1: [2, -1]" */
static void negative_dims_error_names_the_shape(void **state)
{
    mtk_ctx *ctx = *state;
    int64_t s[2] = { 2, -1 }, n = 99;
    assert_false(mtk_shape_check(ctx, "empty", s, 2, &n));
    assert_int_equal(mtk_ctx_status(ctx), MTK_ERR_SHAPE);
    assert_string_equal(mtk_ctx_message(ctx),
                        "empty: Trying to create tensor with negative dimension -1: [2, -1]");
    assert_int_equal(n, 99); /* untouched on failure */
}

static void shape_check_limits_the_number_of_dims(void **state)
{
    mtk_ctx *ctx = *state;
    int64_t s[MTK_MAX_DIMS + 1];
    for (int i = 0; i <= MTK_MAX_DIMS; i++) s[i] = 1;
    int64_t n;
    assert_true(mtk_shape_check(ctx, "view", s, MTK_MAX_DIMS, &n));
    assert_int_equal(n, 1);
    assert_false(mtk_shape_check(ctx, "view", s, MTK_MAX_DIMS + 1, &n));
    assert_int_equal(mtk_ctx_status(ctx), MTK_ERR_SHAPE);
    assert_string_equal(mtk_ctx_message(ctx), "view: 17 dimensions is more than mtk supports (16)");
    mtk_ctx_clear_error(ctx);
    assert_false(mtk_shape_check(ctx, "view", s, -1, &n));
    assert_int_equal(mtk_ctx_status(ctx), MTK_ERR_SHAPE);
    assert_string_equal(mtk_ctx_message(ctx), "view: invalid number of dimensions -1");
}

/* torch: "Storage size calculation overflowed with sizes=[1099511627776, 1099511627776]" */
static void numel_overflow_is_an_overflow_error(void **state)
{
    mtk_ctx *ctx = *state;
    int64_t s[2] = { INT64_C(1) << 40, INT64_C(1) << 40 };
    assert_false(mtk_shape_check(ctx, "empty", s, 2, NULL));
    assert_int_equal(mtk_ctx_status(ctx), MTK_ERR_OVERFLOW);
    assert_string_equal(mtk_ctx_message(ctx),
                        "empty: Storage size calculation overflowed with sizes=[1099511627776, 1099511627776] "
                        "(the number of elements overflows int64)");
}

/* torch.empty(n, dtype=d, device='meta') succeeds exactly when n * itemsize
 * (computed without overflow over all sizes) fits in int64. */
static void new_contiguous_tensor_storage_must_fit_int64_bytes(void **state)
{
    mtk_ctx *ctx = *state;
    static const struct { int64_t shape[3]; int32_t ndim; mtk_dtype dtype; bool ok; } cases[] = {
        { { (INT64_C(1) << 61) - 1 }, 1, MTK_FLOAT32, true },
        { { INT64_C(1) << 61 }, 1, MTK_FLOAT32, false },
        { { INT64_C(1) << 62 }, 1, MTK_FLOAT32, false },
        { { (INT64_C(1) << 60) - 1 }, 1, MTK_FLOAT64, true },
        { { INT64_C(1) << 60 }, 1, MTK_FLOAT64, false },
        { { INT64_MAX }, 1, MTK_UINT8, true },
        { { INT64_C(1) << 62, 2 }, 2, MTK_UINT8, false },
        { { INT64_C(1) << 62, 2, 0 }, 3, MTK_UINT8, true },    /* 2^63 fits uint64, then 0 */
        { { INT64_C(1) << 62, 4, 0 }, 3, MTK_UINT8, false },   /* 2^64 overflowed first */
        { { INT64_C(1) << 40, INT64_C(1) << 30, 0 }, 3, MTK_FLOAT32, false },
    };
    for (size_t i = 0; i < COUNT(cases); i++) {
        mtk_tensor *t = mtk_tensor_new(ctx, cases[i].dtype, cases[i].shape, cases[i].ndim, NULL,
                                       MTK_DEVICE_META);
        if (cases[i].ok) {
            assert_non_null(t);
            assert_int_equal(mtk_ctx_status(ctx), MTK_OK);
        } else {
            assert_null(t);
            assert_int_equal(mtk_ctx_status(ctx), MTK_ERR_OVERFLOW);
            assert_non_null(strstr(mtk_ctx_message(ctx), "Storage size calculation overflowed with sizes=["));
            mtk_ctx_clear_error(ctx);
        }
    }
    /* with explicit strides (views, expand) there is no storage to size */
    int64_t shape[1] = { INT64_C(1) << 62 }, stride[1] = { 0 };
    assert_non_null(mtk_tensor_new(ctx, MTK_FLOAT32, shape, 1, stride, MTK_DEVICE_META));
}

static void tensor_new_rejects_invalid_dtypes(void **state)
{
    mtk_ctx *ctx = *state;
    int64_t s[1] = { 2 };
    assert_null(mtk_tensor_new(ctx, MTK_DTYPE_UNDEFINED, s, 1, NULL, MTK_DEVICE_META));
    assert_int_equal(mtk_ctx_status(ctx), MTK_ERR_DTYPE);
    mtk_ctx_clear_error(ctx);
    assert_null(mtk_tensor_new(ctx, MTK_DTYPE_COUNT, s, 1, NULL, MTK_DEVICE_META));
    assert_int_equal(mtk_ctx_status(ctx), MTK_ERR_DTYPE);
}

/* ------------------------------------------------------------ strides */

static void contiguous_strides_match_torch(void **state)
{
    (void)state;
    /* torch.empty(s).stride() */
    static const struct { int64_t shape[4]; int32_t ndim; int64_t stride[4]; } cases[] = {
        { { 2, 3, 4 }, 3, { 12, 4, 1 } },
        { { 2, 0, 3 }, 3, { 3, 3, 1 } },
        { { 0, 0 }, 2, { 1, 1 } },
        { { 1, 1, 1 }, 3, { 1, 1, 1 } },
        { { 3, 1, 2 }, 3, { 2, 2, 1 } },
        { { 5 }, 1, { 1 } },
        { { 2, 3, 4, 5 }, 4, { 60, 20, 5, 1 } },
    };
    for (size_t i = 0; i < COUNT(cases); i++) {
        int64_t st[4];
        mtk_contiguous_strides(cases[i].shape, cases[i].ndim, st);
        assert_memory_equal(st, cases[i].stride, (size_t)cases[i].ndim * sizeof(int64_t));
    }
}

static void channels_last_strides_match_torch(void **state)
{
    (void)state;
    /* torch.empty(s, memory_format=torch.channels_last[_3d]).stride() */
    static const struct { int64_t shape[5]; int32_t ndim; int64_t stride[5]; } cases[] = {
        { { 2, 3, 4, 5 }, 4, { 60, 1, 15, 3 } },
        { { 2, 3, 0, 5 }, 4, { 0, 1, 15, 3 } },
        { { 1, 1, 4, 5 }, 4, { 20, 1, 5, 1 } },
        { { 2, 1, 1, 1 }, 4, { 1, 1, 1, 1 } },
        { { 0, 3, 4, 5 }, 4, { 60, 1, 15, 3 } },
        { { 2, 3, 1, 5 }, 4, { 15, 1, 15, 3 } },
        { { 5, 0, 1, 2 }, 4, { 0, 1, 0, 0 } },
        { { 2, 3, 4, 5, 6 }, 5, { 360, 1, 90, 18, 3 } },
        { { 2, 3, 0, 5, 1 }, 5, { 0, 1, 15, 3, 3 } },
        { { 1, 1, 4, 1, 5 }, 5, { 20, 1, 5, 5, 1 } },
        { { 2, 3, 4 }, 3, { 12, 4, 1 } }, /* other ndims: contiguous */
    };
    for (size_t i = 0; i < COUNT(cases); i++) {
        int64_t st[5];
        mtk_channels_last_strides(cases[i].shape, cases[i].ndim, st);
        assert_memory_equal(st, cases[i].stride, (size_t)cases[i].ndim * sizeof(int64_t));
    }
}

static void stride_helpers_saturate_instead_of_overflowing(void **state)
{
    (void)state;
    int64_t s[3] = { INT64_C(1) << 40, INT64_C(1) << 40, 2 }, st[3];
    mtk_contiguous_strides(s, 3, st);
    assert_int_equal(st[2], 1);
    assert_int_equal(st[1], 2);
    assert_int_equal(st[0], INT64_C(1) << 41);
    int64_t c[4] = { INT64_C(1) << 40, INT64_C(1) << 40, INT64_C(1) << 40, 2 }, cs[4];
    mtk_channels_last_strides(c, 4, cs);
    assert_int_equal(cs[1], 1);
    assert_int_equal(cs[0], INT64_MAX);
}

/* ---------------------------------------------------- the predicates */

static mtk_tensor *strided(mtk_ctx *ctx, const int64_t *shape, int32_t ndim, const int64_t *stride)
{
    return mtk_tensor_new(ctx, MTK_FLOAT32, shape, ndim, stride, MTK_DEVICE_META);
}

static void contiguity_predicates_match_torch(void **state)
{
    mtk_ctx *ctx = *state;
    int bad = 0;
    for (size_t i = 0; i < COUNT(contiguity_table); i++) {
        const contiguity_row *r = &contiguity_table[i];
        mtk_tensor *t = strided(ctx, r->shape, r->ndim, r->stride);
        assert_non_null(t);
        bool c = mtk_tensor_is_contiguous(t), cl = mtk_tensor_is_channels_last(t);
        bool cl3 = mtk_tensor_is_channels_last_3d(t), d = mtk_tensor_is_non_overlapping_and_dense(t);
        if (c != r->contiguous || cl != r->channels_last || cl3 != r->channels_last_3d ||
            d != r->non_overlapping_and_dense) {
            char a[128], b[128];
            if (bad++ < 10)
                print_message("  shape %s stride %s: got %d %d %d %d, torch %d %d %d %d\n",
                              mtk_shape_str(r->shape, r->ndim, a, sizeof a),
                              mtk_shape_str(r->stride, r->ndim, b, sizeof b), c, cl, cl3, d,
                              r->contiguous, r->channels_last, r->channels_last_3d,
                              r->non_overlapping_and_dense);
        }
    }
    assert_int_equal(bad, 0);
}

static void fresh_tensors_are_contiguous_and_dense(void **state)
{
    mtk_ctx *ctx = *state;
    int64_t s[4] = { 2, 3, 4, 5 }, cl[4];
    mtk_tensor *t = mtk_tensor_new(ctx, MTK_FLOAT16, s, 4, NULL, MTK_DEVICE_META);
    assert_true(mtk_tensor_is_contiguous(t));
    assert_false(mtk_tensor_is_channels_last(t));
    assert_true(mtk_tensor_is_non_overlapping_and_dense(t));
    mtk_channels_last_strides(s, 4, cl);
    mtk_tensor *u = mtk_tensor_new(ctx, MTK_FLOAT16, s, 4, cl, MTK_DEVICE_META);
    assert_false(mtk_tensor_is_contiguous(u));
    assert_true(mtk_tensor_is_channels_last(u));
    assert_false(mtk_tensor_is_channels_last_3d(u));
    assert_true(mtk_tensor_is_non_overlapping_and_dense(u));
    mtk_tensor *scalar = mtk_tensor_new(ctx, MTK_FLOAT32, NULL, 0, NULL, MTK_DEVICE_META);
    assert_non_null(scalar);
    assert_int_equal(mtk_tensor_numel(scalar), 1);
    assert_true(mtk_tensor_is_contiguous(scalar));
    assert_true(mtk_tensor_is_non_overlapping_and_dense(scalar));
}

/* ----------------------------------------------------------- wrap_dim */

static void wrap_dim_maps_negative_dims(void **state)
{
    mtk_ctx *ctx = *state;
    assert_int_equal(mtk_wrap_dim(ctx, -1, 2), 1);
    assert_int_equal(mtk_wrap_dim(ctx, -2, 2), 0);
    assert_int_equal(mtk_wrap_dim(ctx, 0, 2), 0);
    assert_int_equal(mtk_wrap_dim(ctx, 1, 2), 1);
    assert_int_equal(mtk_wrap_dim(ctx, -1, 0), 0); /* a 0-dim tensor takes -1 and 0 */
    assert_int_equal(mtk_wrap_dim(ctx, 0, 0), 0);
    assert_int_equal(mtk_wrap_dim(ctx, -16, 16), 0);
    assert_int_equal(mtk_ctx_status(ctx), MTK_OK);
}

/* torch.ones(2, 3).sum(5) and torch.tensor(1.).sum(1) / sum(-2) */
static void wrap_dim_errors_use_torch_words(void **state)
{
    mtk_ctx *ctx = *state;
    assert_int_equal(mtk_wrap_dim(ctx, 5, 2), -1);
    assert_int_equal(mtk_ctx_status(ctx), MTK_ERR_INDEX);
    assert_string_equal(mtk_ctx_message(ctx),
                        "Dimension out of range (expected to be in range of [-2, 1], but got 5)");
    mtk_ctx_clear_error(ctx);
    assert_int_equal(mtk_wrap_dim(ctx, -3, 2), -1);
    assert_string_equal(mtk_ctx_message(ctx),
                        "Dimension out of range (expected to be in range of [-2, 1], but got -3)");
    mtk_ctx_clear_error(ctx);
    assert_int_equal(mtk_wrap_dim(ctx, 1, 0), -1);
    assert_string_equal(mtk_ctx_message(ctx),
                        "Dimension out of range (expected to be in range of [-1, 0], but got 1)");
    mtk_ctx_clear_error(ctx);
    assert_int_equal(mtk_wrap_dim(ctx, -2, 0), -1);
    assert_string_equal(mtk_ctx_message(ctx),
                        "Dimension out of range (expected to be in range of [-1, 0], but got -2)");
    mtk_ctx_clear_error(ctx);
    assert_int_equal(mtk_wrap_dim(ctx, INT64_MIN, 3), -1);
    assert_int_equal(mtk_wrap_dim(ctx, INT64_MAX, 3), -1);
}

/* ---------------------------------------------------------- shape text */

static void shapes_print_like_python(void **state)
{
    (void)state;
    char buf[64];
    int64_t s[3] = { 3, 4, 5 };
    assert_string_equal(mtk_shape_str(s, 3, buf, sizeof buf), "(3, 4, 5)");
    assert_string_equal(mtk_shape_str(s, 1, buf, sizeof buf), "(3,)");
    assert_string_equal(mtk_shape_str(s, 0, buf, sizeof buf), "()");
    assert_string_equal(mtk_shape_list_str(s, 3, buf, sizeof buf), "[3, 4, 5]");
    assert_string_equal(mtk_shape_list_str(s, 1, buf, sizeof buf), "[3]");
    assert_string_equal(mtk_shape_list_str(s, 0, buf, sizeof buf), "[]");
    int64_t neg[2] = { -1, INT64_MIN };
    assert_string_equal(mtk_shape_list_str(neg, 2, buf, sizeof buf), "[-1, -9223372036854775808]");
}

static void shape_text_truncates_within_the_buffer(void **state)
{
    (void)state;
    int64_t s[16];
    for (int i = 0; i < 16; i++) s[i] = 1000000007;
    for (size_t cap = 1; cap < 40; cap++) {
        char buf[40];
        memset(buf, '#', sizeof buf);
        mtk_shape_str(s, 16, buf, cap);
        assert_true(strlen(buf) < cap);
        for (size_t k = cap; k < sizeof buf; k++) assert_int_equal(buf[k], '#');
        memset(buf, '#', sizeof buf);
        mtk_shape_list_str(s, 16, buf, cap);
        assert_true(strlen(buf) < cap);
        for (size_t k = cap; k < sizeof buf; k++) assert_int_equal(buf[k], '#');
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(numel_multiplies_sizes),
        cmocka_unit_test(numel_reports_overflow_as_minus_one),
        cmocka_unit_test_setup_teardown(negative_dims_error_names_the_shape, setup_ctx, teardown_ctx),
        cmocka_unit_test_setup_teardown(shape_check_limits_the_number_of_dims, setup_ctx, teardown_ctx),
        cmocka_unit_test_setup_teardown(numel_overflow_is_an_overflow_error, setup_ctx, teardown_ctx),
        cmocka_unit_test_setup_teardown(new_contiguous_tensor_storage_must_fit_int64_bytes, setup_ctx, teardown_ctx),
        cmocka_unit_test_setup_teardown(tensor_new_rejects_invalid_dtypes, setup_ctx, teardown_ctx),
        cmocka_unit_test(contiguous_strides_match_torch),
        cmocka_unit_test(channels_last_strides_match_torch),
        cmocka_unit_test(stride_helpers_saturate_instead_of_overflowing),
        cmocka_unit_test_setup_teardown(contiguity_predicates_match_torch, setup_ctx, teardown_ctx),
        cmocka_unit_test_setup_teardown(fresh_tensors_are_contiguous_and_dense, setup_ctx, teardown_ctx),
        cmocka_unit_test_setup_teardown(wrap_dim_maps_negative_dims, setup_ctx, teardown_ctx),
        cmocka_unit_test_setup_teardown(wrap_dim_errors_use_torch_words, setup_ctx, teardown_ctx),
        cmocka_unit_test(shapes_print_like_python),
        cmocka_unit_test(shape_text_truncates_within_the_buffer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
