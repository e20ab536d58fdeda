/* Creation ops: shapes, dtypes, devices, strides and errors as torch 2.13
 * reports them on device='meta', and cpu values equal to torch's bit for
 * bit (arange's vector blocks, linspace's two-sided formula). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "mtk/mtk.h"

#define SHAPE(...) ((const int64_t[]){ __VA_ARGS__ })

/* ---------------------------------------------------------------- helpers */

static void assert_shape(const mtk_tensor *t, int32_t ndim, const int64_t *shape)
{
    assert_non_null(t);
    assert_int_equal(t->ndim, ndim);
    for (int32_t i = 0; i < ndim; i++) assert_int_equal(t->shape[i], shape[i]);
}

static void assert_error(mtk_ctx *ctx, mtk_status status, const char *text)
{
    assert_int_equal(mtk_ctx_status(ctx), status);
    if (!strstr(mtk_ctx_message(ctx), text)) fail_msg("message '%s' lacks '%s'", mtk_ctx_message(ctx), text);
    mtk_ctx_clear_error(ctx);
}

/* Calls an op by name; positional args, then keyword args (NULL-ended). */
static mtk_tensor *call(mtk_ctx *ctx, const char *op, const mtk_value *args, int32_t nargs, const char *const *kw_names,
                        const mtk_value *kw_values)
{
    int32_t nkw = 0;
    while (kw_names && kw_names[nkw]) nkw++;
    mtk_value result;
    if (!mtk_op_call_by_name(ctx, op, args, nargs, kw_names, kw_values, nkw, &result)) return NULL;
    return result.as.tensor;
}

static uint16_t bits16(const mtk_tensor *t, int64_t i) { return ((const uint16_t *)mtk_tensor_data(t))[i]; }

/* ------------------------------------------------------- sized creation */

static void zeros_ones_full_fill_every_dtype(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new(); /* default device cpu, default dtype float32 */
    mtk_tensor *z = mtk_zeros(ctx, SHAPE(2, 3), 2, MTK_DTYPE_UNDEFINED);
    assert_shape(z, 2, SHAPE(2, 3));
    assert_int_equal(z->dtype, MTK_FLOAT32);
    for (int i = 0; i < 6; i++) assert_true(((float *)mtk_tensor_data(z))[i] == 0.0f);
    mtk_tensor *o = mtk_ones(ctx, SHAPE(3), 1, MTK_FLOAT8_E4M3FN);
    for (int i = 0; i < 3; i++) assert_int_equal(((uint8_t *)mtk_tensor_data(o))[i], 0x38); /* torch: 1.0 is 0x38 */
    mtk_tensor *h = mtk_ones(ctx, SHAPE(2), 1, MTK_BFLOAT16);
    assert_int_equal(bits16(h, 1), 0x3f80);
    mtk_tensor *f = mtk_full_int(ctx, SHAPE(2, 2), 2, -1, MTK_UINT8); /* torch wraps -1 to 255 */
    for (int i = 0; i < 4; i++) assert_int_equal(((uint8_t *)mtk_tensor_data(f))[i], 255);
    mtk_tensor *g = mtk_full(ctx, NULL, 0, 2.7, MTK_INT32); /* truncates, 0-dim */
    assert_int_equal(g->ndim, 0);
    assert_int_equal(*(int32_t *)mtk_tensor_data(g), 2);
    mtk_tensor *e = mtk_eye(ctx, 2, 4, MTK_INT32);
    const int32_t want_eye[] = { 1, 0, 0, 0, 0, 1, 0, 0 };
    assert_memory_equal(mtk_tensor_data(e), want_eye, sizeof want_eye);
    assert_int_equal(mtk_ctx_status(ctx), MTK_OK);
    mtk_ctx_free(ctx);
}

static void full_infers_its_dtype_from_the_fill_value(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_value size = mtk_value_int_list(ctx, SHAPE(2), 1);
    mtk_value b[] = { size, mtk_value_bool(true) }, i[] = { size, mtk_value_int(3) }, f[] = { size, mtk_value_float(3.5) };
    assert_int_equal(call(ctx, "full", b, 2, NULL, NULL)->dtype, MTK_BOOL);
    assert_int_equal(call(ctx, "full", i, 2, NULL, NULL)->dtype, MTK_INT64);
    assert_int_equal(call(ctx, "full", f, 2, NULL, NULL)->dtype, MTK_FLOAT32);
    mtk_ctx_push_dtype(ctx, MTK_FLOAT64); /* torch.set_default_dtype(torch.float64) */
    assert_int_equal(call(ctx, "full", f, 2, NULL, NULL)->dtype, MTK_FLOAT64);
    assert_int_equal(mtk_zeros(ctx, SHAPE(1), 1, MTK_DTYPE_UNDEFINED)->dtype, MTK_FLOAT64);
    mtk_ctx_free(ctx);
}

static void full_checks_the_value_fits_on_cpu_only(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    assert_null(mtk_full_int(ctx, SHAPE(2), 1, 300, MTK_INT8));
    assert_error(ctx, MTK_ERR_OVERFLOW, "full: value cannot be converted to type int8_t without overflow");
    assert_null(mtk_full(ctx, SHAPE(2), 1, 70000.0, MTK_FLOAT16));
    assert_error(ctx, MTK_ERR_OVERFLOW, "value cannot be converted to type c10::Half without overflow");
    /* torch's one-element fill converts 16-bit floats unchecked */
    mtk_tensor *one = mtk_full(ctx, SHAPE(1), 1, 70000.0, MTK_FLOAT16);
    assert_int_equal(bits16(one, 0), 0x7c00); /* inf */
    mtk_ctx_push_device(ctx, MTK_DEVICE_META);
    mtk_tensor *m = mtk_full_int(ctx, SHAPE(2), 1, 300, MTK_INT8); /* meta has no values to check */
    assert_non_null(m);
    assert_null(m->storage);
    mtk_ctx_free(ctx);
}

static void negative_sizes_fail_with_torch_words(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    assert_null(mtk_zeros(ctx, SHAPE(-1, 3), 2, MTK_DTYPE_UNDEFINED));
    assert_error(ctx, MTK_ERR_SHAPE, "zeros: Trying to create tensor with negative dimension -1: [-1, 3]");
    assert_null(mtk_empty(ctx, SHAPE(2, -3), 2, MTK_DTYPE_UNDEFINED));
    assert_error(ctx, MTK_ERR_SHAPE, "empty: Trying to create tensor with negative dimension -3: [2, -3]");
    assert_null(mtk_eye(ctx, -1, -1, MTK_DTYPE_UNDEFINED));
    assert_error(ctx, MTK_ERR_SHAPE, "eye: n must be greater or equal to 0, got -1");
    mtk_ctx_free(ctx);
}

static void device_comes_from_the_argument_else_the_scope(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_ctx_push_device(ctx, MTK_DEVICE_META); /* with torch.device('meta'): */
    mtk_tensor *m = mtk_ones(ctx, SHAPE(2, 3), 2, MTK_DTYPE_UNDEFINED);
    assert_int_equal(m->device, MTK_DEVICE_META);
    assert_null(m->storage);
    /* torch.ones(3, device='cpu') inside the scope: a filled cpu tensor */
    mtk_value args[] = { mtk_value_int(3) };
    const char *names[] = { "device", "dtype", NULL };
    mtk_value kw[] = { mtk_value_string("cpu"), mtk_value_dtype(MTK_INT16) };
    mtk_tensor *c = call(ctx, "ones", args, 1, names, kw);
    assert_non_null(c);
    assert_int_equal(c->device, MTK_DEVICE_CPU);
    for (int i = 0; i < 3; i++) assert_int_equal(((int16_t *)mtk_tensor_data(c))[i], 1);
    mtk_ctx_free(ctx);
}

static void requires_grad_needs_a_floating_dtype(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_value args[] = { mtk_value_int(2) };
    const char *names[] = { "requires_grad", "dtype", NULL };
    mtk_value kw[] = { mtk_value_bool(true), mtk_value_dtype(MTK_INT64) };
    assert_null(call(ctx, "zeros", args, 1, names, kw));
    assert_error(ctx, MTK_ERR_DTYPE, "Only Tensors of floating point and complex dtype can require gradients");
    kw[1] = mtk_value_dtype(MTK_BFLOAT16);
    mtk_tensor *t = call(ctx, "zeros", args, 1, names, kw);
    assert_non_null(t);
    assert_true(t->flags & MTK_TENSOR_REQUIRES_GRAD);
    mtk_ctx_free(ctx);
}

static void empty_and_likes_choose_torch_strides(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_ctx_push_device(ctx, MTK_DEVICE_META);
    /* torch.empty(2, 3, 4, 5, memory_format=torch.channels_last) */
    mtk_value args[] = { mtk_value_int_list(ctx, SHAPE(2, 3, 4, 5), 4) };
    const char *names[] = { "memory_format", NULL };
    mtk_value kw[] = { mtk_value_string("torch.channels_last") };
    mtk_tensor *cl = call(ctx, "empty", args, 1, names, kw);
    const int64_t want_cl[] = { 60, 1, 15, 3 };
    assert_memory_equal(cl->stride, want_cl, sizeof want_cl);
    args[0] = mtk_value_int_list(ctx, SHAPE(2, 3, 4), 3);
    assert_null(call(ctx, "empty", args, 1, names, kw));
    assert_error(ctx, MTK_ERR_SHAPE, "required rank 4 tensor to use channels_last format");
    /* zeros_like(x.permute(2, 0, 1)) keeps the permuted layout */
    mtk_tensor *x = mtk_empty(ctx, SHAPE(2, 3, 4), 3, MTK_DTYPE_UNDEFINED);
    mtk_tensor *like = mtk_zeros_like(ctx, mtk_permute(ctx, x, SHAPE(2, 0, 1), 3), MTK_INT32);
    const int64_t want_like[] = { 1, 12, 4 };
    assert_memory_equal(like->stride, want_like, sizeof want_like);
    assert_int_equal(like->dtype, MTK_INT32);
    assert_int_equal(like->device, MTK_DEVICE_META);
    /* full_like keeps the input's dtype whatever the fill value */
    mtk_tensor *h = mtk_empty(ctx, SHAPE(3), 1, MTK_FLOAT16);
    assert_int_equal(mtk_full_like(ctx, h, 7, MTK_DTYPE_UNDEFINED)->dtype, MTK_FLOAT16);
    assert_null(mtk_zeros_like(ctx, NULL, MTK_DTYPE_UNDEFINED));
    mtk_ctx_free(ctx);
}

/* ---------------------------------------------------------------- arange */

static void arange_follows_pythons_forms(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    /* torch.arange(5), arange(1, 5), arange(end=5): int64 */
    mtk_value five[] = { mtk_value_int(5) };
    mtk_tensor *a = call(ctx, "arange", five, 1, NULL, NULL);
    assert_shape(a, 1, SHAPE(5));
    assert_int_equal(a->dtype, MTK_INT64);
    assert_int_equal(((int64_t *)mtk_tensor_data(a))[4], 4);
    mtk_value one_five[] = { mtk_value_int(1), mtk_value_int(5) };
    mtk_tensor *b = call(ctx, "arange", one_five, 2, NULL, NULL);
    assert_shape(b, 1, SHAPE(4));
    assert_int_equal(((int64_t *)mtk_tensor_data(b))[0], 1);
    const char *end_kw[] = { "end", NULL };
    assert_shape(call(ctx, "arange", NULL, 0, end_kw, five), 1, SHAPE(5));
    /* a float anywhere: the default dtype */
    mtk_value half_step[] = { mtk_value_int(0), mtk_value_int(5), mtk_value_float(0.5) };
    mtk_tensor *c = call(ctx, "arange", half_step, 3, NULL, NULL);
    assert_shape(c, 1, SHAPE(10));
    assert_int_equal(c->dtype, MTK_FLOAT32);
    /* torch's lengths: ceil for floats, truncated bounds for int64 */
    assert_shape(mtk_arange_int(ctx, 0, 10, 3, MTK_DTYPE_UNDEFINED), 1, SHAPE(4));
    assert_shape(mtk_arange_int(ctx, 0, -10, -3, MTK_DTYPE_UNDEFINED), 1, SHAPE(4));
    assert_shape(mtk_arange(ctx, 1, 2.5, 1, MTK_INT64), 1, SHAPE(1));
    assert_shape(mtk_arange(ctx, 1, 2.5, 1, MTK_INT32), 1, SHAPE(2));
    assert_shape(mtk_arange(ctx, 0, 1, 0.1, MTK_DTYPE_UNDEFINED), 1, SHAPE(10));
    mtk_ctx_free(ctx);
}

static void arange_refuses_bad_ranges_like_torch(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    assert_null(mtk_arange_int(ctx, 0, 5, 0, MTK_DTYPE_UNDEFINED));
    assert_error(ctx, MTK_ERR_INVALID_ARGUMENT, "arange: step must be nonzero");
    assert_null(mtk_arange_int(ctx, 0, 5, -1, MTK_DTYPE_UNDEFINED));
    assert_error(ctx, MTK_ERR_INVALID_ARGUMENT, "upper bound and lower bound inconsistent with step sign");
    assert_null(mtk_arange(ctx, 0, INFINITY, 1, MTK_DTYPE_UNDEFINED));
    assert_error(ctx, MTK_ERR_INVALID_ARGUMENT, "unsupported range: 0.0 -> inf");
    assert_null(mtk_arange(ctx, 0, 3, NAN, MTK_DTYPE_UNDEFINED));
    assert_error(ctx, MTK_ERR_INVALID_ARGUMENT, "step must be finite but got nan");
    assert_null(mtk_arange(ctx, 0, 5, 0.5, MTK_INT32)); /* the step truncates to 0 */
    assert_error(ctx, MTK_ERR_INVALID_ARGUMENT, "step must be nonzero");
    /* bool has a meta shape but no cpu kernel */
    assert_null(mtk_arange_int(ctx, 0, 5, 1, MTK_BOOL));
    assert_error(ctx, MTK_ERR_NOT_IMPLEMENTED, "\"arange_cpu\" not implemented for 'Bool'");
    mtk_ctx_push_device(ctx, MTK_DEVICE_META);
    assert_shape(mtk_arange_int(ctx, 0, 5, 1, MTK_BOOL), 1, SHAPE(5));
    mtk_ctx_free(ctx);
}

static void arange_values_equal_torch_bit_for_bit(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    /* torch.arange(0, 1, 0.1) */
    const float want01[] = { 0x0p+0f, 0x1.99999ap-4f, 0x1.99999ap-3f, 0x1.333334p-2f, 0x1.99999ap-2f,
                             0x1p-1f, 0x1.333334p-1f, 0x1.666666p-1f, 0x1.99999ap-1f, 0x1.ccccccp-1f };
    assert_memory_equal(mtk_tensor_data(mtk_arange(ctx, 0, 1, 0.1, MTK_DTYPE_UNDEFINED)), want01, sizeof want01);
    /* float64: vector lanes add lane * step to the block's first value */
    mtk_tensor *d = mtk_arange(ctx, 0, 100, 0.37, MTK_FLOAT64);
    const double *dv = mtk_tensor_data(d);
    assert_int_equal(d->shape[0], 271);
    assert_true(dv[13] == 0x1.33d70a3d70a3dp+2 && dv[21] == 0x1.f147ae147ae15p+2);
    assert_true(dv[25] == 0x1.27fffffffffffp+3 && dv[270] == 0x1.8f9999999999ap+6);
    /* float32 */
    mtk_tensor *f = mtk_arange(ctx, -3, 7, 0.013, MTK_FLOAT32);
    const float *fv = mtk_tensor_data(f);
    assert_int_equal(f->shape[0], 770);
    assert_true(fv[11] == -0x1.6db22cp+1f && fv[12] == -0x1.6c0830p+1f && fv[769] == 0x1.bfcedap+2f);
    /* float16 and bfloat16 (block bases rounded to the dtype) */
    mtk_tensor *h = mtk_arange(ctx, 0, 100, 0.37, MTK_FLOAT16);
    assert_int_equal(bits16(h, 17), 0x464b);
    assert_int_equal(bits16(h, 20), 0x4767);
    assert_int_equal(bits16(h, 270), 0x563e);
    mtk_tensor *b = mtk_arange(ctx, -17, 93.68210232371838, 0.1, MTK_BFLOAT16);
    assert_int_equal(b->shape[0], 1107);
    assert_int_equal(bits16(b, 160), 0xbf80);
    assert_int_equal(bits16(b, 170), 0x0000);
    assert_int_equal(bits16(b, 171), 0x3dcd);
    assert_int_equal(bits16(b, 1106), 0x42bb);
    /* integers wrap like torch's: arange(0, 300, dtype=int8)[128] == -128 */
    mtk_tensor *i8 = mtk_arange_int(ctx, 0, 300, 1, MTK_INT8);
    assert_int_equal(((int8_t *)mtk_tensor_data(i8))[128], -128);
    mtk_ctx_free(ctx);
}

/* -------------------------------------------------------------- linspace */

static void linspace_computes_from_both_ends(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    const float want10[] = { 0x0p+0f, 0x1.c71c72p-4f, 0x1.c71c72p-3f, 0x1.555556p-2f, 0x1.c71c72p-2f,
                             0x1.1c71c8p-1f, 0x1.555556p-1f, 0x1.8e38e4p-1f, 0x1.c71c72p-1f, 0x1p+0f };
    assert_memory_equal(mtk_tensor_data(mtk_linspace(ctx, 0, 1, 10, MTK_DTYPE_UNDEFINED)), want10, sizeof want10);
    /* the middle element of linspace(-1, 1, 7) comes from the end: 2**-54 */
    const double *d = mtk_tensor_data(mtk_linspace(ctx, -1, 1, 7, MTK_FLOAT64));
    assert_true(d[3] == 0x1p-54 && d[2] == -0x1.5555555555556p-2);
    /* float16 arithmetic rounds every step */
    mtk_tensor *h = mtk_linspace(ctx, -3.3, 7.1, 9, MTK_FLOAT16);
    const uint16_t want_h[] = { 0xc29a, 0xc000, 0xb998, 0x38d0, 0x3f98, 0x4266, 0x4480, 0x45cd, 0x471a };
    assert_memory_equal(mtk_tensor_data(h), want_h, sizeof want_h);
    /* integers: a double step, truncated; uint8 wraps the int -1 to 255
     * first (torch.linspace(-1, 5, 4, dtype=torch.uint8)); a float -1.0
     * does not fit */
    mtk_value ends[] = { mtk_value_int(-1), mtk_value_int(5), mtk_value_int(4) };
    const char *names[] = { "dtype", NULL };
    mtk_value kw[] = { mtk_value_dtype(MTK_UINT8) };
    const uint8_t want_u8[] = { 255, 171, 88, 5 };
    assert_memory_equal(mtk_tensor_data(call(ctx, "linspace", ends, 3, names, kw)), want_u8, sizeof want_u8);
    assert_null(mtk_linspace(ctx, -1, 5, 4, MTK_UINT8));
    assert_error(ctx, MTK_ERR_OVERFLOW, "value cannot be converted to type uint8_t without overflow");
    const int32_t want_i32[] = { 0, 3, 6, 10 };
    assert_memory_equal(mtk_tensor_data(mtk_linspace(ctx, 0, 10, 4, MTK_INT32)), want_i32, sizeof want_i32);
    /* steps 1 is start, steps 0 is empty, negative steps fail */
    assert_true(*(float *)mtk_tensor_data(mtk_linspace(ctx, 0.3, 1, 1, MTK_DTYPE_UNDEFINED)) == 0.3f);
    assert_shape(mtk_linspace(ctx, 0, 1, 0, MTK_DTYPE_UNDEFINED), 1, SHAPE(0));
    assert_null(mtk_linspace(ctx, 0, 1, -1, MTK_DTYPE_UNDEFINED));
    assert_error(ctx, MTK_ERR_INVALID_ARGUMENT, "linspace: number of steps must be non-negative");
    mtk_ctx_free(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(zeros_ones_full_fill_every_dtype),
        cmocka_unit_test(full_infers_its_dtype_from_the_fill_value),
        cmocka_unit_test(full_checks_the_value_fits_on_cpu_only),
        cmocka_unit_test(negative_sizes_fail_with_torch_words),
        cmocka_unit_test(device_comes_from_the_argument_else_the_scope),
        cmocka_unit_test(requires_grad_needs_a_floating_dtype),
        cmocka_unit_test(empty_and_likes_choose_torch_strides),
        cmocka_unit_test(arange_follows_pythons_forms),
        cmocka_unit_test(arange_refuses_bad_ranges_like_torch),
        cmocka_unit_test(arange_values_equal_torch_bit_for_bit),
        cmocka_unit_test(linspace_computes_from_both_ends),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
