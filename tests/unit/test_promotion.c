/* Type promotion: torch.promote_types, torch.result_type (three priority
 * classes, categories, Python numbers, the default dtype), the meta
 * variant for float8, and Python numbers as wrapped tensors.  Every
 * expectation was taken from torch 2.13. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "mtk/mtk.h"
#include "ops/elementwise.h"
#include "core/scalar.h"

#define U8 MTK_UINT8
#define I8 MTK_INT8
#define I16 MTK_INT16
#define I32 MTK_INT32
#define I64 MTK_INT64
#define F16 MTK_FLOAT16
#define F32 MTK_FLOAT32
#define F64 MTK_FLOAT64
#define B MTK_BOOL
#define BF MTK_BFLOAT16
#define E5 MTK_FLOAT8_E5M2
#define E4 MTK_FLOAT8_E4M3FN
#define UD MTK_DTYPE_UNDEFINED

static const int64_t two[1] = { 2 };

/* a tensor of `dtype` with one dimension (dim) or none (0-dim) */
static mtk_value dim_tensor(mtk_ctx *ctx, mtk_dtype dtype)
{
    return mtk_value_tensor(mtk_tensor_new(ctx, dtype, two, 1, NULL, MTK_DEVICE_META));
}

static mtk_value zero_dim(mtk_ctx *ctx, mtk_dtype dtype)
{
    return mtk_value_tensor(mtk_tensor_new(ctx, dtype, NULL, 0, NULL, MTK_DEVICE_META));
}

static mtk_dtype result_type2(mtk_ctx *ctx, mtk_value a, mtk_value b)
{
    mtk_value args[2] = { a, b };
    return mtk_result_type(ctx, args, 2);
}

/* torch.promote_types over every pair, in the dtype enum's order */
static void promote_types_matches_torch_for_every_pair(void **state)
{
    (void)state;
    static const mtk_dtype expected[MTK_DTYPE_COUNT][MTK_DTYPE_COUNT] = {
        /* U8  */ { U8, I16, I16, I32, I64, F16, F32, F64, U8, BF, UD, UD },
        /* I8  */ { I16, I8, I16, I32, I64, F16, F32, F64, I8, BF, UD, UD },
        /* I16 */ { I16, I16, I16, I32, I64, F16, F32, F64, I16, BF, UD, UD },
        /* I32 */ { I32, I32, I32, I32, I64, F16, F32, F64, I32, BF, UD, UD },
        /* I64 */ { I64, I64, I64, I64, I64, F16, F32, F64, I64, BF, UD, UD },
        /* F16 */ { F16, F16, F16, F16, F16, F16, F32, F64, F16, F32, UD, UD },
        /* F32 */ { F32, F32, F32, F32, F32, F32, F32, F64, F32, F32, UD, UD },
        /* F64 */ { F64, F64, F64, F64, F64, F64, F64, F64, F64, F64, UD, UD },
        /* B   */ { U8, I8, I16, I32, I64, F16, F32, F64, B, BF, UD, UD },
        /* BF  */ { BF, BF, BF, BF, BF, F32, F32, F64, BF, BF, UD, UD },
        /* E5  */ { UD, UD, UD, UD, UD, UD, UD, UD, UD, UD, E5, UD },
        /* E4  */ { UD, UD, UD, UD, UD, UD, UD, UD, UD, UD, UD, E4 },
    };
    for (int a = 0; a < MTK_DTYPE_COUNT; a++)
        for (int b = 0; b < MTK_DTYPE_COUNT; b++)
            assert_int_equal(mtk_promote_types((mtk_dtype)a, (mtk_dtype)b), expected[a][b]);
}

static void promote_types_checked_names_float8_pairs(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    assert_int_equal(mtk_promote_types_checked(ctx, E5, F32), UD);
    assert_string_equal(mtk_ctx_message(ctx),
                        "Promotion for Float8 Types is not supported, attempted to promote Float8_e5m2 and Float");
    mtk_ctx_clear_error(ctx);
    assert_int_equal(mtk_promote_types_checked(ctx, E4, E4), E4);
    assert_int_equal(mtk_ctx_status(ctx), MTK_OK);
    mtk_ctx_free(ctx);
}

/* dimensioned tensors > 0-dim tensors > numbers, unless a lower class is
 * of a higher category (bool < integral < floating) */
static void result_type_follows_priority_classes_and_categories(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    assert_int_equal(result_type2(ctx, dim_tensor(ctx, I32), zero_dim(ctx, F64)), F64);
    assert_int_equal(result_type2(ctx, dim_tensor(ctx, I8), zero_dim(ctx, I64)), I8);
    assert_int_equal(result_type2(ctx, dim_tensor(ctx, B), zero_dim(ctx, I8)), I8);
    assert_int_equal(result_type2(ctx, dim_tensor(ctx, U8), dim_tensor(ctx, I8)), I16);
    assert_int_equal(result_type2(ctx, dim_tensor(ctx, F16), zero_dim(ctx, F64)), F16);
    assert_int_equal(result_type2(ctx, dim_tensor(ctx, F16), dim_tensor(ctx, BF)), F32);
    assert_int_equal(result_type2(ctx, zero_dim(ctx, U8), zero_dim(ctx, I8)), I16);
    assert_int_equal(mtk_ctx_status(ctx), MTK_OK);
    mtk_ctx_free(ctx);
}

/* a Python float counts as the default dtype, an int as int64, a bool as
 * bool; numbers only matter across categories */
static void result_type_treats_python_numbers_as_wrapped(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    assert_int_equal(result_type2(ctx, dim_tensor(ctx, I32), mtk_value_float(2.5)), F32);
    assert_int_equal(result_type2(ctx, dim_tensor(ctx, I8), mtk_value_int(1000)), I8);
    assert_int_equal(result_type2(ctx, dim_tensor(ctx, B), mtk_value_bool(true)), B);
    assert_int_equal(result_type2(ctx, dim_tensor(ctx, B), mtk_value_int(3)), I64);
    assert_int_equal(result_type2(ctx, zero_dim(ctx, I64), mtk_value_float(2.5)), F32);
    assert_int_equal(result_type2(ctx, zero_dim(ctx, F16), mtk_value_float(2.5)), F16);
    assert_int_equal(result_type2(ctx, zero_dim(ctx, B), mtk_value_int(7)), I64);
    assert_int_equal(result_type2(ctx, dim_tensor(ctx, BF), mtk_value_float(1e10)), BF);
    assert_int_equal(result_type2(ctx, mtk_value_int(2), mtk_value_int(3)), I64);
    mtk_ctx_free(ctx);
}

static void result_type_uses_the_default_dtype_scope_for_floats(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    assert_true(mtk_ctx_push_dtype(ctx, F64));
    assert_int_equal(result_type2(ctx, dim_tensor(ctx, I32), mtk_value_float(2.5)), F64);
    assert_int_equal(result_type2(ctx, dim_tensor(ctx, F16), mtk_value_float(2.5)), F16);
    assert_int_equal(result_type2(ctx, mtk_value_int(2), mtk_value_float(2.5)), F64);
    /* a wrapped float tensor counts as the default dtype too */
    mtk_value half = mtk_value_float(0.5);
    mtk_value wrapped = mtk_value_tensor(mtk_wrap_number(ctx, &half));
    assert_int_equal(result_type2(ctx, dim_tensor(ctx, I32), wrapped), F64);
    assert_true(mtk_ctx_pop_dtype(ctx));
    assert_int_equal(result_type2(ctx, dim_tensor(ctx, I32), wrapped), F32);
    mtk_ctx_free(ctx);
}

static void result_type_refuses_float8_with_other_types(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    /* a higher-priority float hides the 0-dim float8 (torch: Float) */
    assert_int_equal(result_type2(ctx, dim_tensor(ctx, F32), zero_dim(ctx, E5)), F32);
    assert_int_equal(result_type2(ctx, dim_tensor(ctx, E4), mtk_value_float(1.0)), E4);
    assert_int_equal(result_type2(ctx, dim_tensor(ctx, I32), zero_dim(ctx, E5)), UD);
    assert_int_equal(mtk_ctx_status(ctx), MTK_ERR_DTYPE);
    assert_string_equal(mtk_ctx_message(ctx),
                        "Promotion for Float8 Types is not supported, attempted to promote Int and Float8_e5m2");
    mtk_ctx_clear_error(ctx);
    assert_int_equal(result_type2(ctx, dim_tensor(ctx, B), zero_dim(ctx, E5)), UD);
    mtk_ctx_free(ctx);
}

/* torch's meta decompositions let a float8 type win instead */
static void meta_result_type_lets_float8_win(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_value args[2] = { dim_tensor(ctx, E4), dim_tensor(ctx, F32) };
    assert_int_equal(mtk_meta_result_type(ctx, args, 2), E4);
    args[0] = dim_tensor(ctx, I8);
    args[1] = zero_dim(ctx, E5);
    assert_int_equal(mtk_meta_result_type(ctx, args, 2), E5);
    args[0] = dim_tensor(ctx, E4);
    args[1] = dim_tensor(ctx, E5);
    assert_int_equal(mtk_meta_result_type(ctx, args, 2), UD);
    assert_int_equal(mtk_ctx_status(ctx), MTK_ERR_DTYPE);
    mtk_ctx_free(ctx);
}

static void result_type_skips_none_and_needs_something(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_value args[2] = { mtk_value_none(), dim_tensor(ctx, I16) };
    assert_int_equal(mtk_result_type(ctx, args, 2), I16);
    assert_int_equal(mtk_result_type(ctx, args, 1), UD);
    assert_int_equal(mtk_ctx_status(ctx), MTK_ERR_INVALID_ARGUMENT);
    mtk_ctx_free(ctx);
}

static void wrap_number_makes_flagged_zero_dim_cpu_tensors(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_value f = mtk_value_float(2.5), i = mtk_value_int(-7), b = mtk_value_bool(true);
    mtk_tensor *tf = mtk_wrap_number(ctx, &f), *ti = mtk_wrap_number(ctx, &i), *tb = mtk_wrap_number(ctx, &b);
    assert_non_null(tf);
    assert_int_equal(tf->dtype, F64);
    assert_int_equal(ti->dtype, I64);
    assert_int_equal(tb->dtype, B);
    assert_int_equal(tf->ndim, 0);
    assert_int_equal(tf->device, MTK_DEVICE_CPU);
    assert_true(tf->flags & MTK_TENSOR_WRAPPED_NUMBER);
    assert_true(mtk_load_f64(F64, mtk_tensor_data(tf)) == 2.5);
    assert_int_equal(mtk_load_i64(I64, mtk_tensor_data(ti)), -7);
    assert_int_equal(mtk_load_i64(B, mtk_tensor_data(tb)), 1);
    mtk_value s = mtk_value_string("x");
    assert_null(mtk_wrap_number(ctx, &s));
    assert_int_equal(mtk_ctx_status(ctx), MTK_ERR_INVALID_ARGUMENT);
    mtk_ctx_free(ctx);
}

static void dtype_cpp_names_are_pytorch_spellings(void **state)
{
    (void)state;
    assert_string_equal(mtk_dtype_cpp_name(U8), "Byte");
    assert_string_equal(mtk_dtype_cpp_name(I8), "Char");
    assert_string_equal(mtk_dtype_cpp_name(I64), "Long");
    assert_string_equal(mtk_dtype_cpp_name(F16), "Half");
    assert_string_equal(mtk_dtype_cpp_name(BF), "BFloat16");
    assert_string_equal(mtk_dtype_cpp_name(E4), "Float8_e4m3fn");
    assert_string_equal(mtk_dtype_cpp_name(UD), "Undefined");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(promote_types_matches_torch_for_every_pair),
        cmocka_unit_test(promote_types_checked_names_float8_pairs),
        cmocka_unit_test(result_type_follows_priority_classes_and_categories),
        cmocka_unit_test(result_type_treats_python_numbers_as_wrapped),
        cmocka_unit_test(result_type_uses_the_default_dtype_scope_for_floats),
        cmocka_unit_test(result_type_refuses_float8_with_other_types),
        cmocka_unit_test(meta_result_type_lets_float8_win),
        cmocka_unit_test(result_type_skips_none_and_needs_something),
        cmocka_unit_test(wrap_number_makes_flagged_zero_dim_cpu_tensors),
        cmocka_unit_test(dtype_cpp_names_are_pytorch_spellings),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
