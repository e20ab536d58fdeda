/* Element conversions (src/core/scalar.c) against PyTorch's .to(), bit for
 * bit.  The expected bits come from torch via tests/unit/gen_scalar_table.py
 * (tests/unit/data/scalar_table.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/bf16_round.h"
#include "core/scalar.h"
#include "data/scalar_table.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static float f32_of(uint32_t bits) { float f; memcpy(&f, &bits, 4); return f; }
static uint32_t bits_of(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }

/* Counts mismatches and prints the first few, so one failure shows the
 * pattern instead of stopping at the first row. */
#define CHECK_BITS(got, want, label, in)                                              \
    do {                                                                              \
        if ((uint32_t)(got) != (uint32_t)(want)) {                                    \
            if (bad < 8) print_message("  %s: input 0x%08x got 0x%x want 0x%x\n", label, \
                                       (unsigned)(in), (unsigned)(got), (unsigned)(want)); \
            bad++;                                                                    \
        }                                                                             \
    } while (0)

/* ----------------------------------------------------------- float32 -> x */

static void f32_to_f16_matches_torch(void **state)
{
    (void)state;
    int bad = 0;
    for (size_t i = 0; i < COUNT(f32_encode_table); i++) {
        const f32_encode_row *r = &f32_encode_table[i];
        CHECK_BITS(mtk_f32_to_f16(f32_of(r->f32)), r->f16, "f16", r->f32);
    }
    assert_int_equal(bad, 0);
}

static void f32_to_bf16_matches_torch(void **state)
{
    (void)state;
    int bad = 0;
    for (size_t i = 0; i < COUNT(f32_encode_table); i++) {
        const f32_encode_row *r = &f32_encode_table[i];
        CHECK_BITS(mtk_f32_to_bf16(f32_of(r->f32)), r->bf16, "bf16", r->f32);
    }
    assert_int_equal(bad, 0);
}

/* The array conversion of loads (core/bf16_round.h, vectorized per
 * instruction set: ctest runs this under each) against torch's bits for
 * every row of the table -- ties, one ulp either side of them, float32
 * subnormals, infinities, the carry into infinity, NaNs of both signs
 * and any payload (-> 0x7fc0) -- with each value in every vector lane
 * and in the scalar tail: the table converted at 17 start offsets, dst
 * and src at odd byte addresses. */
static void f32_to_bf16_arrays_match_torch_in_every_lane(void **state)
{
    (void)state;
    enum { N = COUNT(f32_encode_table), SHIFTS = 17 };
    static unsigned char src[4 * (N + SHIFTS) + 1], dst[2 * (N + SHIFTS) + 1];
    int bad = 0;
    for (size_t shift = 0; shift < SHIFTS; shift++) {
        /* element j of the array is row (j + shift) % N: a count that is
         * no multiple of 16 leaves the last rows to the tail */
        size_t count = N - shift;
        for (size_t j = 0; j < count; j++) memcpy(src + 1 + 4 * j, &f32_encode_table[(j + shift) % N].f32, 4);
        memset(dst, 0xa5, sizeof dst);
        bf16_round_f32(dst + 1, src + 1, count);
        for (size_t j = 0; j < count; j++) {
            const f32_encode_row *r = &f32_encode_table[(j + shift) % N];
            uint16_t got;
            memcpy(&got, dst + 1 + 2 * j, 2);
            CHECK_BITS(got, r->bf16, "bf16 array", r->f32);
        }
        assert_int_equal(dst[1 + 2 * count], 0xa5); /* nothing past the end */
    }
    assert_int_equal(bad, 0);
}

static void f32_to_f8e4m3fn_matches_torch(void **state)
{
    (void)state;
    int bad = 0;
    for (size_t i = 0; i < COUNT(f32_encode_table); i++) {
        const f32_encode_row *r = &f32_encode_table[i];
        CHECK_BITS(mtk_f32_to_f8e4m3fn(f32_of(r->f32)), r->e4m3fn, "e4m3fn", r->f32);
    }
    assert_int_equal(bad, 0);
}

static void f32_to_f8e5m2_matches_torch(void **state)
{
    (void)state;
    int bad = 0;
    for (size_t i = 0; i < COUNT(f32_encode_table); i++) {
        const f32_encode_row *r = &f32_encode_table[i];
        CHECK_BITS(mtk_f32_to_f8e5m2(f32_of(r->f32)), r->e5m2, "e5m2", r->f32);
    }
    assert_int_equal(bad, 0);
}

/* The brief's question, spelled out: torch.tensor([500.]).to(float8_e4m3fn)
 * is 448 (0x7e), not NaN; inf saturates too; e5m2 keeps inf. */
static void f8e4m3fn_saturates_to_448_on_overflow(void **state)
{
    (void)state;
    assert_int_equal(mtk_f32_to_f8e4m3fn(500.0f), 0x7e);
    assert_int_equal(mtk_f32_to_f8e4m3fn(-500.0f), 0xfe);
    assert_int_equal(mtk_f32_to_f8e4m3fn(INFINITY), 0x7e);
    assert_int_equal(mtk_f32_to_f8e4m3fn(-INFINITY), 0xfe);
    assert_int_equal(mtk_f32_to_f8e4m3fn(NAN), 0x7f);
    assert_float_equal(mtk_f8e4m3fn_to_f32(0x7e), 448.0f, 0.0f);
    assert_int_equal(mtk_f32_to_f8e5m2(1e9f), 0x7c);
    assert_int_equal(mtk_f32_to_f8e5m2(-INFINITY), 0xfc);
    assert_int_equal(mtk_f32_to_f8e5m2(61439.0f), 0x7b); /* below the tie: 57344 */
    assert_int_equal(mtk_f32_to_f8e5m2(61440.0f), 0x7c); /* tie rounds to even: inf */
}

static void conversions_keep_negative_zero(void **state)
{
    (void)state;
    assert_int_equal(mtk_f32_to_f16(-0.0f), 0x8000);
    assert_int_equal(mtk_f32_to_bf16(-0.0f), 0x8000);
    assert_int_equal(mtk_f32_to_f8e4m3fn(-0.0f), 0x80);
    assert_int_equal(mtk_f32_to_f8e5m2(-0.0f), 0x80);
    assert_true(signbit(mtk_f16_to_f32(0x8000)));
    assert_true(signbit(mtk_bf16_to_f32(0x8000)));
    assert_true(signbit(mtk_f8e4m3fn_to_f32(0x80)));
    assert_true(signbit(mtk_f8e5m2_to_f32(0x80)));
    /* a negative value too small for the format rounds to -0, not +0 */
    assert_int_equal(mtk_f32_to_f16(-1e-10f), 0x8000);
    assert_int_equal(mtk_f32_to_f8e4m3fn(-1e-10f), 0x80);
}

static void f16_rounds_ties_to_even_and_subnormals(void **state)
{
    (void)state;
    assert_int_equal(mtk_f32_to_f16(1.0f + 0x1p-11f), 0x3c00);     /* tie, even below */
    assert_int_equal(mtk_f32_to_f16(1.0f + 3 * 0x1p-11f), 0x3c02); /* tie, even above */
    assert_int_equal(mtk_f32_to_f16(0x1p-24f), 0x0001);            /* smallest subnormal */
    assert_int_equal(mtk_f32_to_f16(0x1p-25f), 0x0000);            /* half of it: tie to 0 */
    assert_int_equal(mtk_f32_to_f16(0x1.8p-25f), 0x0001);
    assert_int_equal(mtk_f32_to_f16(65504.0f), 0x7bff);
    assert_int_equal(mtk_f32_to_f16(65520.0f), 0x7c00); /* rounds up past the largest */
    assert_int_equal(mtk_f32_to_f16(65519.0f), 0x7bff);
}

/* ----------------------------------------------------------- x -> float32 */

static int check_decode(const char *name, const uint32_t (*table)[2], size_t n,
                        float (*decode)(uint32_t))
{
    int bad = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t got = bits_of(decode(table[i][0]));
        CHECK_BITS(got, table[i][1], name, table[i][0]);
    }
    return bad;
}

static float dec_f16(uint32_t v) { return mtk_f16_to_f32((uint16_t)v); }
static float dec_bf16(uint32_t v) { return mtk_bf16_to_f32((uint16_t)v); }
static float dec_e4m3fn(uint32_t v) { return mtk_f8e4m3fn_to_f32((uint8_t)v); }
static float dec_e5m2(uint32_t v) { return mtk_f8e5m2_to_f32((uint8_t)v); }

static void f16_to_f32_matches_torch(void **state)
{
    (void)state;
    assert_int_equal(check_decode("f16", f16_decode_table, COUNT(f16_decode_table), dec_f16), 0);
}

static void bf16_to_f32_matches_torch(void **state)
{
    (void)state;
    assert_int_equal(check_decode("bf16", bf16_decode_table, COUNT(bf16_decode_table), dec_bf16), 0);
}

static void f8e4m3fn_to_f32_matches_torch_for_all_256(void **state)
{
    (void)state;
    assert_int_equal(check_decode("e4m3fn", e4m3fn_decode_table, COUNT(e4m3fn_decode_table),
                                  dec_e4m3fn), 0);
}

static void f8e5m2_to_f32_matches_torch_for_all_256(void **state)
{
    (void)state;
    assert_int_equal(check_decode("e5m2", e5m2_decode_table, COUNT(e5m2_decode_table), dec_e5m2),
                     0);
}

/* Every finite float8 value survives a round trip through float32. */
static void f8_round_trips_every_finite_value(void **state)
{
    (void)state;
    for (int v = 0; v < 256; v++) {
        float a = mtk_f8e4m3fn_to_f32((uint8_t)v), b = mtk_f8e5m2_to_f32((uint8_t)v);
        if (!isnan(a)) assert_int_equal(mtk_f32_to_f8e4m3fn(a), v);
        if (!isnan(b)) assert_int_equal(mtk_f32_to_f8e5m2(b), v);
    }
}

/* -------------------------------------------------------- float -> integer */

static void float_to_int_matches_torch(void **state)
{
    (void)state;
    for (size_t i = 0; i < COUNT(float_to_int_table); i++) {
        const float_to_int_row *r = &float_to_int_table[i];
        uint8_t u8; int8_t i8; int16_t i16; int32_t i32; int64_t i64; uint8_t b;
        mtk_store_f64(MTK_UINT8, &u8, r->value);
        mtk_store_f64(MTK_INT8, &i8, r->value);
        mtk_store_f64(MTK_INT16, &i16, r->value);
        mtk_store_f64(MTK_INT32, &i32, r->value);
        mtk_store_f64(MTK_INT64, &i64, r->value);
        mtk_store_f64(MTK_BOOL, &b, r->value);
        if (u8 != r->u8 || i8 != r->i8 || i16 != r->i16 || i32 != r->i32 || i64 != r->i64 ||
            b != r->b)
            print_message("  value %.17g: got %u %d %d %d %lld %u\n", r->value, u8, i8, i16,
                          i32, (long long)i64, b);
        assert_int_equal(u8, r->u8);
        assert_int_equal(i8, r->i8);
        assert_int_equal(i16, r->i16);
        assert_int_equal(i32, r->i32);
        assert_true(i64 == r->i64);
        assert_int_equal(b, r->b);
    }
}

/* The same through mtk_convert_element from a float32 and a float64
 * element (the copy kernels' path). */
static void convert_element_float_to_int_matches_torch(void **state)
{
    (void)state;
    static const mtk_dtype targets[] = { MTK_UINT8, MTK_INT8, MTK_INT16, MTK_INT32, MTK_INT64, MTK_BOOL };
    for (size_t i = 0; i < COUNT(float_to_int_table); i++) {
        const float_to_int_row *r = &float_to_int_table[i];
        float f = (float)r->value;
        bool exact_in_f32 = isnan(r->value) || (double)f == r->value;
        for (size_t k = 0; k < COUNT(targets); k++) {
            unsigned char out64[8] = { 0 }, out32[8] = { 0 }, want[8] = { 0 };
            mtk_convert_element(targets[k], out64, MTK_FLOAT64, &r->value);
            mtk_convert_element(targets[k], out32, MTK_FLOAT32, &f);
            switch (targets[k]) {
            case MTK_UINT8: memcpy(want, &r->u8, 1); break;
            case MTK_INT8: memcpy(want, &r->i8, 1); break;
            case MTK_INT16: memcpy(want, &r->i16, 2); break;
            case MTK_INT32: memcpy(want, &r->i32, 4); break;
            case MTK_INT64: memcpy(want, &r->i64, 8); break;
            default: memcpy(want, &r->b, 1); break;
            }
            assert_memory_equal(out64, want, 8);
            if (exact_in_f32) assert_memory_equal(out32, want, 8);
        }
    }
}

static void float_to_uint8_wraps_negative_values(void **state)
{
    (void)state;
    uint8_t u;
    float neg = -1.5f;
    mtk_convert_element(MTK_UINT8, &u, MTK_FLOAT32, &neg);
    assert_int_equal(u, 255); /* torch.tensor([-1.5]).to(torch.uint8) == 255 */
    neg = -200.0f;
    mtk_convert_element(MTK_UINT8, &u, MTK_FLOAT32, &neg);
    assert_int_equal(u, 56);
}

/* --------------------------------------------------------- integer -> x */

static void int64_to_float32_rounds_once(void **state)
{
    (void)state;
    for (size_t i = 0; i < COUNT(int_to_f32_table); i++) {
        float f;
        mtk_store_i64(MTK_FLOAT32, &f, int_to_f32_table[i].value);
        assert_int_equal(bits_of(f), int_to_f32_table[i].f32);
        mtk_convert_element(MTK_FLOAT32, &f, MTK_INT64, &int_to_f32_table[i].value);
        assert_int_equal(bits_of(f), int_to_f32_table[i].f32);
    }
}

static void int_to_int_wraps_like_torch(void **state)
{
    (void)state;
    /* torch.tensor([300, -1, 70000, 2**40+5]).to(uint8/int8/int16/int32) */
    static const int64_t in[] = { 300, -1, 70000, (INT64_C(1) << 40) + 5 };
    static const uint8_t u8[] = { 44, 255, 112, 5 };
    static const int8_t i8[] = { 44, -1, 112, 5 };
    static const int16_t i16[] = { 300, -1, 4464, 5 };
    static const int32_t i32[] = { 300, -1, 70000, 5 };
    for (int i = 0; i < 4; i++) {
        uint8_t a; int8_t b; int16_t c; int32_t d; uint8_t e;
        mtk_convert_element(MTK_UINT8, &a, MTK_INT64, &in[i]);
        mtk_convert_element(MTK_INT8, &b, MTK_INT64, &in[i]);
        mtk_convert_element(MTK_INT16, &c, MTK_INT64, &in[i]);
        mtk_convert_element(MTK_INT32, &d, MTK_INT64, &in[i]);
        mtk_convert_element(MTK_BOOL, &e, MTK_INT64, &in[i]);
        assert_int_equal(a, u8[i]);
        assert_int_equal(b, i8[i]);
        assert_int_equal(c, i16[i]);
        assert_int_equal(d, i32[i]);
        assert_int_equal(e, 1);
    }
}

static void int64_stays_exact_through_int_paths(void **state)
{
    (void)state;
    int64_t big = INT64_MAX - 7, out = 0;
    mtk_convert_element(MTK_INT64, &out, MTK_INT64, &big);
    assert_true(out == big);
    assert_true(mtk_load_i64(MTK_INT64, &big) == big);
    int32_t small = -5;
    mtk_convert_element(MTK_INT64, &out, MTK_INT32, &small);
    assert_true(out == -5);
}

static void bool_conversions(void **state)
{
    (void)state;
    uint8_t b;
    double nan = NAN, zero = -0.0, tiny = 1e-300;
    mtk_convert_element(MTK_BOOL, &b, MTK_FLOAT64, &nan);
    assert_int_equal(b, 1);
    mtk_convert_element(MTK_BOOL, &b, MTK_FLOAT64, &zero);
    assert_int_equal(b, 0);
    mtk_convert_element(MTK_BOOL, &b, MTK_FLOAT64, &tiny);
    assert_int_equal(b, 1);
    uint8_t two = 2; /* a non-canonical bool byte loads as 1 */
    assert_true(mtk_load_i64(MTK_BOOL, &two) == 1);
    assert_true(mtk_load_f64(MTK_BOOL, &two) == 1.0);
    float f;
    mtk_convert_element(MTK_FLOAT32, &f, MTK_BOOL, &two);
    assert_true(f == 1.0f);
}

/* double -> 16-bit and 8-bit floats rounds to float32 first, as torch
 * does: 1.0625 + 2^-40 is just above a float8 tie, but torch gives 1.0. */
static void float64_to_small_floats_rounds_through_float32(void **state)
{
    (void)state;
    double d = 1.0625 + 0x1p-40;
    uint8_t e4;
    mtk_convert_element(MTK_FLOAT8_E4M3FN, &e4, MTK_FLOAT64, &d);
    assert_int_equal(e4, 0x38);
    double d2 = 1.00390625 + 0x1p-40;
    uint16_t bf;
    mtk_convert_element(MTK_BFLOAT16, &bf, MTK_FLOAT64, &d2);
    assert_int_equal(bf, 0x3f80);
    double nan = NAN;
    mtk_convert_element(MTK_BFLOAT16, &bf, MTK_FLOAT64, &nan);
    assert_int_equal(bf, 0x7fc0);
}

static void same_dtype_copies_bits(void **state)
{
    (void)state;
    uint16_t h = 0x7e01, out;
    mtk_convert_element(MTK_FLOAT16, &out, MTK_FLOAT16, &h);
    assert_int_equal(out, 0x7e01);
    uint8_t f8 = 0xff, o8;
    mtk_convert_element(MTK_FLOAT8_E4M3FN, &o8, MTK_FLOAT8_E4M3FN, &f8);
    assert_int_equal(o8, 0xff);
}

/* Borrowed or mapped data may sit at any address (a safetensors file does
 * not align its tensors); loads and stores must not assume alignment
 * (UBSan's alignment check catches a typed access). */
static void conversions_work_on_unaligned_memory(void **state)
{
    (void)state;
    _Alignas(16) unsigned char buf[32] = { 0 };
    double d = -1234.5;
    memcpy(buf + 1, &d, sizeof d);                 /* bytes 1..8   */
    assert_true(mtk_load_f64(MTK_FLOAT64, buf + 1) == -1234.5);
    mtk_store_f64(MTK_FLOAT32, buf + 9, 2.5);      /* bytes 9..12  */
    float f;
    memcpy(&f, buf + 9, 4);
    assert_true(f == 2.5f);
    int64_t big = INT64_C(1) << 50;
    mtk_store_i64(MTK_INT64, buf + 13, big);       /* bytes 13..20 */
    assert_true(mtk_load_i64(MTK_INT64, buf + 13) == big);
    mtk_convert_element(MTK_BFLOAT16, buf + 21, MTK_FLOAT64, buf + 1); /* bytes 21..22 */
    assert_true(mtk_load_f64(MTK_BFLOAT16, buf + 21) == -1232.0);     /* -1234.5 to bf16 */
    mtk_convert_element(MTK_INT32, buf + 23, MTK_BFLOAT16, buf + 21); /* bytes 23..26 */
    int32_t i;
    memcpy(&i, buf + 23, 4);
    assert_int_equal(i, -1232);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(f32_to_f16_matches_torch),
        cmocka_unit_test(f32_to_bf16_matches_torch),
        cmocka_unit_test(f32_to_bf16_arrays_match_torch_in_every_lane),
        cmocka_unit_test(f32_to_f8e4m3fn_matches_torch),
        cmocka_unit_test(f32_to_f8e5m2_matches_torch),
        cmocka_unit_test(f8e4m3fn_saturates_to_448_on_overflow),
        cmocka_unit_test(conversions_keep_negative_zero),
        cmocka_unit_test(f16_rounds_ties_to_even_and_subnormals),
        cmocka_unit_test(f16_to_f32_matches_torch),
        cmocka_unit_test(bf16_to_f32_matches_torch),
        cmocka_unit_test(f8e4m3fn_to_f32_matches_torch_for_all_256),
        cmocka_unit_test(f8e5m2_to_f32_matches_torch_for_all_256),
        cmocka_unit_test(f8_round_trips_every_finite_value),
        cmocka_unit_test(float_to_int_matches_torch),
        cmocka_unit_test(convert_element_float_to_int_matches_torch),
        cmocka_unit_test(float_to_uint8_wraps_negative_values),
        cmocka_unit_test(int64_to_float32_rounds_once),
        cmocka_unit_test(int_to_int_wraps_like_torch),
        cmocka_unit_test(int64_stays_exact_through_int_paths),
        cmocka_unit_test(bool_conversions),
        cmocka_unit_test(float64_to_small_floats_rounds_through_float32),
        cmocka_unit_test(same_dtype_copies_bits),
        cmocka_unit_test(conversions_work_on_unaligned_memory),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
