/* The dtype table: names, spellings, sizes, kinds, and PyTorch's type
 * promotion lattice (the full 12 x 12 table from torch.promote_types). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "mtk/core.h"
#include "mtk/io.h"

static void every_dtype_has_a_table_row(void **state)
{
    (void)state;
    for (int d = 0; d < MTK_DTYPE_COUNT; d++) {
        const mtk_dtype_info *info = mtk_dtype_get((mtk_dtype)d);
        assert_non_null(info);
        assert_int_equal(info->dtype, d);
        assert_non_null(info->name);
        assert_non_null(info->short_name);
        assert_non_null(info->st_name);
        assert_string_equal(mtk_dtype_name((mtk_dtype)d), info->name);
        assert_int_equal(mtk_dtype_size((mtk_dtype)d), info->size);
    }
    assert_null(mtk_dtype_get(MTK_DTYPE_UNDEFINED));
    assert_null(mtk_dtype_get(MTK_DTYPE_COUNT));
    assert_null(mtk_dtype_get((mtk_dtype)1000));
    assert_string_equal(mtk_dtype_name(MTK_DTYPE_UNDEFINED), "undefined");
    assert_int_equal(mtk_dtype_size(MTK_DTYPE_UNDEFINED), 0);
}

/* torch.<dtype>.itemsize, is_floating_point, is_signed */
static void names_sizes_and_kinds_match_torch(void **state)
{
    (void)state;
    static const struct {
        mtk_dtype dtype;
        const char *name, *short_name, *st_name;
        size_t size;
        mtk_dtype_kind kind;
        bool storage_only;
    } want[] = {
        { MTK_UINT8, "uint8", "u8", "U8", 1, MTK_KIND_UINT, false },
        { MTK_INT8, "int8", "i8", "I8", 1, MTK_KIND_INT, false },
        { MTK_INT16, "int16", "i16", "I16", 2, MTK_KIND_INT, false },
        { MTK_INT32, "int32", "i32", "I32", 4, MTK_KIND_INT, false },
        { MTK_INT64, "int64", "i64", "I64", 8, MTK_KIND_INT, false },
        { MTK_FLOAT16, "float16", "f16", "F16", 2, MTK_KIND_FLOAT, false },
        { MTK_FLOAT32, "float32", "f32", "F32", 4, MTK_KIND_FLOAT, false },
        { MTK_FLOAT64, "float64", "f64", "F64", 8, MTK_KIND_FLOAT, false },
        { MTK_BOOL, "bool", "bool", "BOOL", 1, MTK_KIND_BOOL, false },
        { MTK_BFLOAT16, "bfloat16", "bf16", "BF16", 2, MTK_KIND_FLOAT, false },
        { MTK_FLOAT8_E5M2, "float8_e5m2", "f8e5m2", "F8_E5M2", 1, MTK_KIND_FLOAT, true },
        { MTK_FLOAT8_E4M3FN, "float8_e4m3fn", "f8e4m3", "F8_E4M3", 1, MTK_KIND_FLOAT, true },
    };
    assert_int_equal(sizeof want / sizeof want[0], MTK_DTYPE_COUNT);
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        const mtk_dtype_info *info = mtk_dtype_get(want[i].dtype);
        assert_string_equal(info->name, want[i].name);
        assert_string_equal(info->short_name, want[i].short_name);
        assert_string_equal(info->st_name, want[i].st_name);
        assert_int_equal(info->size, want[i].size);
        assert_int_equal(info->kind, want[i].kind);
        assert_int_equal(info->storage_only, want[i].storage_only);
    }
}

static void predicates_follow_the_kinds(void **state)
{
    (void)state;
    /* torch.<dtype>.is_floating_point */
    static const bool floating[MTK_DTYPE_COUNT] = {
        [MTK_FLOAT16] = true, [MTK_FLOAT32] = true, [MTK_FLOAT64] = true,
        [MTK_BFLOAT16] = true, [MTK_FLOAT8_E5M2] = true, [MTK_FLOAT8_E4M3FN] = true,
    };
    for (int d = 0; d < MTK_DTYPE_COUNT; d++) {
        assert_int_equal(mtk_dtype_is_floating((mtk_dtype)d), floating[d]);
        bool integral = !floating[d] && d != MTK_BOOL;
        assert_int_equal(mtk_dtype_is_integral((mtk_dtype)d, false), integral);
        assert_int_equal(mtk_dtype_is_integral((mtk_dtype)d, true), !floating[d]);
        assert_int_equal(mtk_dtype_is_float8((mtk_dtype)d),
                         d == MTK_FLOAT8_E5M2 || d == MTK_FLOAT8_E4M3FN);
    }
    assert_false(mtk_dtype_is_floating(MTK_DTYPE_UNDEFINED));
    assert_false(mtk_dtype_is_integral(MTK_DTYPE_UNDEFINED, true));
}

static void names_round_trip(void **state)
{
    (void)state;
    for (int d = 0; d < MTK_DTYPE_COUNT; d++) {
        const mtk_dtype_info *info = mtk_dtype_get((mtk_dtype)d);
        char torch_name[64];
        snprintf(torch_name, sizeof torch_name, "torch.%s", info->name);
        assert_int_equal(mtk_dtype_from_name(info->name), d);
        assert_int_equal(mtk_dtype_from_name(info->short_name), d);
        assert_int_equal(mtk_dtype_from_name(torch_name), d);
    }
}

/* The aliases torch itself has: torch.float is torch.float32, ... */
static void torch_aliases_are_understood(void **state)
{
    (void)state;
    assert_int_equal(mtk_dtype_from_name("float"), MTK_FLOAT32);
    assert_int_equal(mtk_dtype_from_name("torch.float"), MTK_FLOAT32);
    assert_int_equal(mtk_dtype_from_name("double"), MTK_FLOAT64);
    assert_int_equal(mtk_dtype_from_name("half"), MTK_FLOAT16);
    assert_int_equal(mtk_dtype_from_name("torch.half"), MTK_FLOAT16);
    assert_int_equal(mtk_dtype_from_name("long"), MTK_INT64);
    assert_int_equal(mtk_dtype_from_name("torch.long"), MTK_INT64);
    assert_int_equal(mtk_dtype_from_name("int"), MTK_INT32);
    assert_int_equal(mtk_dtype_from_name("short"), MTK_INT16);
    assert_int_equal(mtk_dtype_from_name("bool"), MTK_BOOL);
    assert_int_equal(mtk_dtype_from_name("torch.float32"), MTK_FLOAT32);
    assert_int_equal(mtk_dtype_from_name("bf16"), MTK_BFLOAT16);
    assert_int_equal(mtk_dtype_from_name("f8e4m3fn"), MTK_FLOAT8_E4M3FN);
    /* Tensor.byte() and Tensor.char() name uint8 and int8 */
    assert_int_equal(mtk_dtype_from_name("byte"), MTK_UINT8);
    assert_int_equal(mtk_dtype_from_name("char"), MTK_INT8);
}

static void unknown_names_are_undefined(void **state)
{
    (void)state;
    assert_int_equal(mtk_dtype_from_name(NULL), MTK_DTYPE_UNDEFINED);
    assert_int_equal(mtk_dtype_from_name(""), MTK_DTYPE_UNDEFINED);
    assert_int_equal(mtk_dtype_from_name("torch."), MTK_DTYPE_UNDEFINED);
    assert_int_equal(mtk_dtype_from_name("float31"), MTK_DTYPE_UNDEFINED);
    assert_int_equal(mtk_dtype_from_name("Float32"), MTK_DTYPE_UNDEFINED);
    assert_int_equal(mtk_dtype_from_name("complex64"), MTK_DTYPE_UNDEFINED);
    assert_int_equal(mtk_dtype_from_name("cfloat"), MTK_DTYPE_UNDEFINED);
    assert_int_equal(mtk_dtype_from_name("torch.torch.float32"), MTK_DTYPE_UNDEFINED);
    assert_int_equal(mtk_dtype_from_name("float32 "), MTK_DTYPE_UNDEFINED);
}

/* torch.promote_types(a, b) for every pair, rows and columns in mtk's
 * enum order (u8 i8 i16 i32 i64 f16 f32 f64 bool bf16 e5m2 e4m3fn);
 * generated with torch 2.13.0:
 *   [[promote(a, b) for b in dtypes] for a in dtypes], RuntimeError -> UD */
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
static const mtk_dtype torch_promotion[MTK_DTYPE_COUNT][MTK_DTYPE_COUNT] = {
    /* uint8   */ { U8, I16, I16, I32, I64, F16, F32, F64, U8, BF, UD, UD },
    /* int8    */ { I16, I8, I16, I32, I64, F16, F32, F64, I8, BF, UD, UD },
    /* int16   */ { I16, I16, I16, I32, I64, F16, F32, F64, I16, BF, UD, UD },
    /* int32   */ { I32, I32, I32, I32, I64, F16, F32, F64, I32, BF, UD, UD },
    /* int64   */ { I64, I64, I64, I64, I64, F16, F32, F64, I64, BF, UD, UD },
    /* float16 */ { F16, F16, F16, F16, F16, F16, F32, F64, F16, F32, UD, UD },
    /* float32 */ { F32, F32, F32, F32, F32, F32, F32, F64, F32, F32, UD, UD },
    /* float64 */ { F64, F64, F64, F64, F64, F64, F64, F64, F64, F64, UD, UD },
    /* bool    */ { U8, I8, I16, I32, I64, F16, F32, F64, B, BF, UD, UD },
    /* bf16    */ { BF, BF, BF, BF, BF, F32, F32, F64, BF, BF, UD, UD },
    /* e5m2    */ { UD, UD, UD, UD, UD, UD, UD, UD, UD, UD, E5, UD },
    /* e4m3fn  */ { UD, UD, UD, UD, UD, UD, UD, UD, UD, UD, UD, E4 },
};

static void promotion_matches_torch_promote_types(void **state)
{
    (void)state;
    for (int a = 0; a < MTK_DTYPE_COUNT; a++)
        for (int b = 0; b < MTK_DTYPE_COUNT; b++) {
            mtk_dtype got = mtk_promote_types((mtk_dtype)a, (mtk_dtype)b);
            if (got != torch_promotion[a][b])
                print_message("promote(%s, %s) = %s, torch says %s\n", mtk_dtype_name((mtk_dtype)a),
                              mtk_dtype_name((mtk_dtype)b), mtk_dtype_name(got),
                              mtk_dtype_name(torch_promotion[a][b]));
            assert_int_equal(got, torch_promotion[a][b]);
        }
}

static void promotion_is_symmetric_and_idempotent(void **state)
{
    (void)state;
    for (int a = 0; a < MTK_DTYPE_COUNT; a++) {
        assert_int_equal(mtk_promote_types((mtk_dtype)a, (mtk_dtype)a), a);
        for (int b = 0; b < MTK_DTYPE_COUNT; b++)
            assert_int_equal(mtk_promote_types((mtk_dtype)a, (mtk_dtype)b),
                             mtk_promote_types((mtk_dtype)b, (mtk_dtype)a));
    }
}

/* An undefined operand leaves the other one (the identity of a fold over
 * operands that starts from UNDEFINED). */
static void promotion_with_undefined_returns_the_other(void **state)
{
    (void)state;
    assert_int_equal(mtk_promote_types(MTK_DTYPE_UNDEFINED, MTK_INT32), MTK_INT32);
    assert_int_equal(mtk_promote_types(MTK_BFLOAT16, MTK_DTYPE_UNDEFINED), MTK_BFLOAT16);
    assert_int_equal(mtk_promote_types(MTK_DTYPE_UNDEFINED, MTK_DTYPE_UNDEFINED), MTK_DTYPE_UNDEFINED);
}

static void status_names_are_stable(void **state)
{
    (void)state;
    assert_string_equal(mtk_status_name(MTK_OK), "ok");
    assert_string_equal(mtk_status_name(MTK_ERR_SHAPE), "shape_error");
    assert_string_equal(mtk_status_name(MTK_ERR_OUT_OF_MEMORY), "out_of_memory");
    assert_string_equal(mtk_status_name(MTK_ERR_UNKNOWN_OP), "unknown_op");
    assert_string_equal(mtk_status_name(MTK_STATUS_COUNT), "unknown");
    assert_string_equal(mtk_status_name((mtk_status)-1), "unknown");
    for (int s = 0; s < MTK_STATUS_COUNT; s++) {
        assert_non_null(mtk_status_name((mtk_status)s));
        assert_string_not_equal(mtk_status_name((mtk_status)s), "unknown");
        for (int t = 0; t < s; t++)
            assert_string_not_equal(mtk_status_name((mtk_status)s), mtk_status_name((mtk_status)t));
    }
}

static void devices_print_and_parse_like_torch(void **state)
{
    (void)state;
    char buf[32];
    mtk_device d = -5;
    assert_string_equal(mtk_device_str(MTK_DEVICE_META, buf, sizeof buf), "meta");
    assert_string_equal(mtk_device_str(MTK_DEVICE_CPU, buf, sizeof buf), "cpu");
    assert_string_equal(mtk_device_str(MTK_DEVICE_CUDA(3), buf, sizeof buf), "cuda:3");
    assert_string_equal(mtk_device_str((mtk_device)7, buf, sizeof buf), "unknown");
    assert_string_equal(mtk_device_str(MTK_DEVICE_CUDA(1), buf, 4), "cud"); /* truncated, terminated */
    assert_true(mtk_device_parse("meta", &d));
    assert_int_equal(d, MTK_DEVICE_META);
    assert_true(mtk_device_parse("cpu", &d));
    assert_int_equal(d, MTK_DEVICE_CPU);
    assert_true(mtk_device_parse("cuda", &d));
    assert_int_equal(d, MTK_DEVICE_CUDA(0));
    assert_true(mtk_device_parse("cuda:12", &d));
    assert_int_equal(d, MTK_DEVICE_CUDA(12));
    /* torch.device('meta:0') and 'cpu:3' are meta and cpu */
    assert_true(mtk_device_parse("meta:0", &d));
    assert_int_equal(d, MTK_DEVICE_META);
    assert_true(mtk_device_parse("cpu:3", &d));
    assert_int_equal(d, MTK_DEVICE_CPU);
    d = MTK_DEVICE_CPU;
    assert_false(mtk_device_parse("meta:01", &d)); /* torch: Invalid device string */
    assert_false(mtk_device_parse("cpu:-1", &d));
    assert_false(mtk_device_parse("cpu: 0", &d));
    assert_false(mtk_device_parse("cpu:", &d));
    assert_false(mtk_device_parse("metal", &d));
    assert_false(mtk_device_parse("cuda:", &d));
    assert_false(mtk_device_parse("cuda:-1", &d));
    assert_false(mtk_device_parse("cuda:1x", &d));
    assert_false(mtk_device_parse("CPU", &d));
    assert_false(mtk_device_parse("", &d));
    assert_false(mtk_device_parse(NULL, &d));
    assert_int_equal(d, MTK_DEVICE_CPU); /* left alone on failure */
}

/* The C++ spellings torch's messages use, one column each of the table:
 * c10::ScalarType ("expected scalar type Float"), typeid (caffe2's
 * TypeMeta: "expected scalar type float"), c10's conversion checks
 * ("value cannot be converted to type int64_t without overflow"). */
static void cpp_spellings_are_columns_of_the_table(void **state)
{
    (void)state;
    static const struct { mtk_dtype d; const char *scalar, *typeid_, *c10; } want[] = {
        { MTK_UINT8, "Byte", "unsigned char", "uint8_t" },
        { MTK_INT8, "Char", "signed char", "int8_t" },
        { MTK_INT16, "Short", "short int", "int16_t" },
        { MTK_INT32, "Int", "int", "int" },
        { MTK_INT64, "Long", "long int", "int64_t" },
        { MTK_FLOAT16, "Half", "c10::Half", "c10::Half" },
        { MTK_FLOAT32, "Float", "float", "float" },
        { MTK_FLOAT64, "Double", "double", "double" },
        { MTK_BOOL, "Bool", "bool", "bool" },
        { MTK_BFLOAT16, "BFloat16", "c10::BFloat16", "c10::BFloat16" },
        { MTK_FLOAT8_E5M2, "Float8_e5m2", "c10::Float8_e5m2", "c10::Float8_e5m2" },
        { MTK_FLOAT8_E4M3FN, "Float8_e4m3fn", "c10::Float8_e4m3fn", "c10::Float8_e4m3fn" },
    };
    assert_int_equal(sizeof want / sizeof want[0], MTK_DTYPE_COUNT);
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        const mtk_dtype_info *info = mtk_dtype_get(want[i].d);
        assert_string_equal(info->scalar_type_name, want[i].scalar);
        assert_string_equal(info->typeid_name, want[i].typeid_);
        assert_string_equal(info->c10_name, want[i].c10);
    }
}

/* safetensors' names of mtk's dtypes come from the dtype table. */
static void safetensors_names_come_from_the_dtype_table(void **state)
{
    (void)state;
    for (int d = 0; d < MTK_DTYPE_COUNT; d++) {
        const mtk_dtype_info *info = mtk_dtype_get((mtk_dtype)d);
        mtk_st_dtype st = mtk_st_dtype_from_mtk((mtk_dtype)d);
        assert_int_not_equal(st, MTK_ST_DTYPE_INVALID);
        assert_string_equal(mtk_st_dtype_name(st), info->st_name);
        assert_int_equal(mtk_st_dtype_from_name(info->st_name), st);
    }
    assert_string_equal(mtk_st_dtype_name(MTK_ST_U32), "U32"); /* no mtk dtype: its own name */
    assert_int_equal(mtk_st_dtype_to_mtk(mtk_st_dtype_from_name("U64")), MTK_DTYPE_UNDEFINED);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_dtype_has_a_table_row),
        cmocka_unit_test(names_sizes_and_kinds_match_torch),
        cmocka_unit_test(predicates_follow_the_kinds),
        cmocka_unit_test(names_round_trip),
        cmocka_unit_test(torch_aliases_are_understood),
        cmocka_unit_test(unknown_names_are_undefined),
        cmocka_unit_test(promotion_matches_torch_promote_types),
        cmocka_unit_test(promotion_is_symmetric_and_idempotent),
        cmocka_unit_test(promotion_with_undefined_returns_the_other),
        cmocka_unit_test(status_names_are_stable),
        cmocka_unit_test(devices_print_and_parse_like_torch),
        cmocka_unit_test(cpp_spellings_are_columns_of_the_table),
        cmocka_unit_test(safetensors_names_come_from_the_dtype_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
