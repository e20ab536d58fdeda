/* matmul, mm, bmm, dot, mv and linear: shapes, strides, errors and FLOPs
 * as torch (meta and cpu) and torch.utils.flop_counter.FlopCounterMode
 * report them, and cpu values computed by torch 2.13. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "mtk/mtk.h"
#include "ops/registry.h"

/* ---------------------------------------------------------------- helpers */

static mtk_tensor *meta(mtk_ctx *ctx, mtk_dtype dtype, int32_t ndim, const int64_t *shape)
{
    return mtk_tensor_new(ctx, dtype, shape, ndim, NULL, MTK_DEVICE_META);
}

#define SHAPE(...) ((const int64_t[]){ __VA_ARGS__ })
#define NDIM(...) ((int32_t)(sizeof((const int64_t[]){ __VA_ARGS__ }) / sizeof(int64_t)))
#define META(ctx, dtype, ...) meta(ctx, dtype, NDIM(__VA_ARGS__), SHAPE(__VA_ARGS__))
#define META0(ctx, dtype) meta(ctx, dtype, 0, NULL)

/* A cpu tensor with uninitialized data (for calls that fail before any
 * kernel reads it). */
static mtk_tensor *cpu(mtk_ctx *ctx, mtk_dtype dtype, int32_t ndim, const int64_t *shape)
{
    mtk_tensor *t = mtk_tensor_new(ctx, dtype, shape, ndim, NULL, MTK_DEVICE_CPU);
    assert_non_null(t);
    assert_true(mtk_tensor_alloc_storage(t));
    return t;
}

#define CPU(ctx, dtype, ...) cpu(ctx, dtype, NDIM(__VA_ARGS__), SHAPE(__VA_ARGS__))
#define CPU0(ctx, dtype) cpu(ctx, dtype, 0, NULL)

static void assert_shape(const mtk_tensor *t, int32_t ndim, const int64_t *shape)
{
    assert_non_null(t);
    assert_int_equal(t->ndim, ndim);
    for (int32_t i = 0; i < ndim; i++) assert_int_equal(t->shape[i], shape[i]);
}

static void assert_contiguous(const mtk_tensor *t)
{
    int64_t want[MTK_MAX_DIMS];
    mtk_contiguous_strides(t->shape, t->ndim, want);
    for (int32_t i = 0; i < t->ndim; i++) assert_int_equal(t->stride[i], want[i]);
}

/* The FLOPs the op table's cost function reports for a typed call. */
static int64_t flops_of(mtk_ctx *ctx, mtk_op_id id, mtk_tensor *a, mtk_tensor *b, mtk_tensor *c)
{
    mtk_op_call call;
    mtk_op_call_init(&call, ctx, mtk_op_by_id(id));
    call.args[0] = mtk_value_tensor(a);
    call.args[1] = mtk_value_tensor(b);
    if (c) call.args[2] = mtk_value_tensor(c);
    assert_true(mtk_op_run(&call));
    return call.op->cost(&call).flops;
}

static void assert_error(mtk_ctx *ctx, mtk_status status, const char *text)
{
    assert_int_equal(mtk_ctx_status(ctx), status);
    if (!strstr(mtk_ctx_message(ctx), text)) fail_msg("message '%s' lacks '%s'", mtk_ctx_message(ctx), text);
    mtk_ctx_clear_error(ctx);
}

static void assert_floats(const mtk_tensor *t, const float *want, int64_t n)
{
    assert_int_equal(mtk_tensor_numel(t), n);
    const float *got = mtk_tensor_data(t);
    for (int64_t i = 0; i < n; i++)
        if (got[i] != want[i]) fail_msg("element %lld: got %g, want %g", (long long)i, got[i], want[i]);
}

/* ------------------------------------------------------------ meta shapes */

/* torch.matmul on meta: every case's shape, and contiguous strides */
static void matmul_shapes_follow_torch_on_meta(void **state)
{
    (void)state;
    static const struct {
        int32_t na, nb, nout;
        int64_t a[4], b[4], out[4];
    } cases[] = {
        { 1, 1, 0, { 3 }, { 3 }, { 0 } },                                   /* dot            */
        { 2, 1, 1, { 3, 4 }, { 4 }, { 3 } },                                /* mv             */
        { 1, 2, 1, { 3 }, { 3, 4 }, { 4 } },                                /* vector @ matrix*/
        { 3, 1, 2, { 2, 3, 4 }, { 4 }, { 2, 3 } },                          /* folded mv      */
        { 1, 3, 2, { 3 }, { 2, 3, 4 }, { 2, 4 } },                          /* vector @ batch */
        { 3, 2, 3, { 2, 3, 4 }, { 4, 5 }, { 2, 3, 5 } },                    /* folded mm      */
        { 2, 3, 3, { 3, 4 }, { 2, 4, 5 }, { 2, 3, 5 } },
        { 4, 3, 4, { 2, 1, 3, 4 }, { 5, 4, 6 }, { 2, 5, 3, 6 } },           /* broadcast batch*/
        { 3, 3, 3, { 1, 3, 4 }, { 2, 4, 5 }, { 2, 3, 5 } },
        { 1, 4, 3, { 4 }, { 2, 3, 4, 5 }, { 2, 3, 5 } },
        { 2, 2, 2, { 0, 3 }, { 3, 4 }, { 0, 4 } },
        { 2, 2, 2, { 3, 0 }, { 0, 4 }, { 3, 4 } },
        { 3, 2, 3, { 2, 0, 4 }, { 4, 5 }, { 2, 0, 5 } },
    };
    mtk_ctx *ctx = mtk_ctx_new();
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        mtk_tensor *a = meta(ctx, MTK_FLOAT32, cases[i].na, cases[i].a);
        mtk_tensor *b = meta(ctx, MTK_FLOAT32, cases[i].nb, cases[i].b);
        mtk_tensor *out = mtk_matmul(ctx, a, b);
        assert_shape(out, cases[i].nout, cases[i].out);
        assert_contiguous(out);
        assert_int_equal(out->device, MTK_DEVICE_META);
        assert_int_equal(out->dtype, MTK_FLOAT32);
    }
    mtk_ctx_free(ctx);
}

/* transposed operands still give contiguous results, as torch's meta */
static void matmul_of_transposed_operands_is_contiguous(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_tensor *a = mtk_tensor_new(ctx, MTK_FLOAT32, SHAPE(2, 3, 4), 3, SHAPE(12, 1, 3), MTK_DEVICE_META);
    mtk_tensor *out = mtk_matmul(ctx, a, META(ctx, MTK_FLOAT32, 4, 5));
    assert_shape(out, 3, SHAPE(2, 3, 5));
    assert_int_equal(out->stride[0], 15);
    assert_int_equal(out->stride[1], 5);
    assert_int_equal(out->stride[2], 1);
    mtk_ctx_free(ctx);
}

static void matmul_keeps_dtype_of_every_dtype_on_meta(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    for (int d = 0; d < MTK_DTYPE_COUNT; d++) {
        mtk_tensor *out = mtk_matmul(ctx, META(ctx, (mtk_dtype)d, 3, 4), META(ctx, (mtk_dtype)d, 4, 5));
        assert_non_null(out); /* torch's meta accepts bool and float8 too */
        assert_int_equal(out->dtype, d);
    }
    mtk_ctx_free(ctx);
}

/* ----------------------------------------------------------------- errors */

static void matmul_errors_use_torch_words(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    assert_null(mtk_matmul(ctx, META0(ctx, MTK_FLOAT32), META(ctx, MTK_FLOAT32, 3, 4)));
    assert_error(ctx, MTK_ERR_SHAPE, "both arguments to matmul need to be at least 1D, but they are 0D and 2D");
    assert_null(mtk_matmul(ctx, META(ctx, MTK_FLOAT32, 3, 4), META(ctx, MTK_FLOAT32, 5, 6)));
    assert_error(ctx, MTK_ERR_SHAPE, "mat1 and mat2 shapes cannot be multiplied (3x4 and 5x6)");
    /* folded: the batch joins the rows */
    assert_null(mtk_matmul(ctx, META(ctx, MTK_FLOAT32, 2, 3, 4), META(ctx, MTK_FLOAT32, 5, 6)));
    assert_error(ctx, MTK_ERR_SHAPE, "mat1 and mat2 shapes cannot be multiplied (6x4 and 5x6)");
    assert_null(mtk_matmul(ctx, META(ctx, MTK_FLOAT32, 3), META(ctx, MTK_FLOAT32, 5, 6)));
    assert_error(ctx, MTK_ERR_SHAPE, "(1x3 and 5x6)");
    assert_null(mtk_matmul(ctx, META(ctx, MTK_FLOAT32, 3, 4), META(ctx, MTK_FLOAT32, 5)));
    assert_error(ctx, MTK_ERR_SHAPE, "size mismatch, got input (3), mat (3x4), vec (5)");
    assert_null(mtk_matmul(ctx, META(ctx, MTK_FLOAT32, 5), META(ctx, MTK_FLOAT32, 4)));
    assert_error(ctx, MTK_ERR_SHAPE, "inconsistent tensor size, expected tensor [5] and src [4]");
    assert_null(mtk_matmul(ctx, META(ctx, MTK_FLOAT32, 2, 3, 4), META(ctx, MTK_FLOAT32, 3, 4, 5)));
    assert_error(ctx, MTK_ERR_SHAPE, "The size of tensor a (2) must match the size of tensor b (3) at non-singleton dimension 0");
    assert_null(mtk_matmul(ctx, META(ctx, MTK_FLOAT32, 2, 3, 4), META(ctx, MTK_FLOAT32, 2, 5, 6)));
    assert_error(ctx, MTK_ERR_SHAPE, "Expected size for first two dimensions of batch2 tensor to be: [2, 4] but got: [2, 5].");
    mtk_ctx_free(ctx);
}

/* torch's cpu kernels refuse mixed dtypes in every product that
 * computes something */
static void mixed_dtypes_are_refused_on_cpu(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    assert_null(mtk_matmul(ctx, CPU(ctx, MTK_FLOAT32, 3, 4), CPU(ctx, MTK_FLOAT16, 4, 5)));
    assert_error(ctx, MTK_ERR_DTYPE, "expected m1 and m2 to have the same dtype, but got: float32 != float16");
    assert_null(mtk_mm(ctx, CPU(ctx, MTK_FLOAT16, 3, 4), CPU(ctx, MTK_FLOAT32, 4, 5)));
    assert_error(ctx, MTK_ERR_DTYPE, "float16 != float32");
    assert_null(mtk_mv(ctx, CPU(ctx, MTK_FLOAT16, 3, 4), CPU(ctx, MTK_FLOAT32, 4)));
    assert_error(ctx, MTK_ERR_DTYPE, "float16 != float32");
    assert_null(mtk_dot(ctx, CPU(ctx, MTK_FLOAT32, 4), CPU(ctx, MTK_FLOAT16, 4)));
    assert_error(ctx, MTK_ERR_DTYPE, "expected both vectors to have same dtype");
    assert_null(mtk_bmm(ctx, CPU(ctx, MTK_FLOAT32, 2, 3, 4), CPU(ctx, MTK_FLOAT16, 2, 4, 5)));
    assert_error(ctx, MTK_ERR_DTYPE, "expected scalar type float32 but found float16");
    assert_null(mtk_linear(ctx, CPU(ctx, MTK_FLOAT32, 3, 4), CPU(ctx, MTK_FLOAT16, 5, 4), NULL));
    assert_error(ctx, MTK_ERR_DTYPE, "float32 != float16");
    mtk_ctx_free(ctx);
}

/* torch's cpu bmm (and matmul's batched path, which is one bmm on cpu,
 * with no squeeze of a batch-1 operand) takes batch2's dtype and checks
 * dtypes only when it computes: an empty output or an empty contraction
 * (zeros) passes with any pair, and a bool one too; mm and mv zero-fill an
 * empty contraction of bools, dot refuses bool always (torch 2.13 cpu) */
static void empty_products_on_cpu_follow_torch_cpu(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_tensor *t = mtk_bmm(ctx, CPU(ctx, MTK_FLOAT64, 2, 2, 0), CPU(ctx, MTK_FLOAT32, 2, 0, 4));
    assert_shape(t, 3, SHAPE(2, 2, 4));
    assert_int_equal(t->dtype, MTK_FLOAT32);
    assert_floats(t, (const float[]){ 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0 }, 16);
    t = mtk_bmm(ctx, CPU(ctx, MTK_INT64, 1, 0, 3), CPU(ctx, MTK_FLOAT64, 1, 3, 3));
    assert_shape(t, 3, SHAPE(1, 0, 3));
    assert_int_equal(t->dtype, MTK_FLOAT64);
    t = mtk_bmm(ctx, CPU(ctx, MTK_BOOL, 2, 2, 0), CPU(ctx, MTK_BOOL, 2, 0, 3));
    assert_shape(t, 3, SHAPE(2, 2, 3));
    assert_false(((const bool *)mtk_tensor_data(t))[5]);
    assert_null(mtk_bmm(ctx, CPU(ctx, MTK_BOOL, 1, 2, 3), CPU(ctx, MTK_BOOL, 1, 3, 4)));
    assert_error(ctx, MTK_ERR_DTYPE, "not implemented for 'bool'");
    t = mtk_matmul(ctx, CPU(ctx, MTK_INT64, 0, 3), CPU(ctx, MTK_FLOAT32, 3, 3, 3));
    assert_shape(t, 3, SHAPE(3, 0, 3));
    assert_int_equal(t->dtype, MTK_FLOAT32);
    t = mtk_matmul(ctx, CPU(ctx, MTK_FLOAT64, 0, 2, 3), CPU(ctx, MTK_FLOAT32, 1, 3, 4));
    assert_shape(t, 3, SHAPE(0, 2, 4));
    assert_int_equal(t->dtype, MTK_FLOAT32);
    assert_null(mtk_matmul(ctx, CPU(ctx, MTK_FLOAT64, 2, 2, 3), CPU(ctx, MTK_FLOAT32, 1, 3, 4)));
    assert_error(ctx, MTK_ERR_DTYPE, "expected scalar type float64 but found float32");
    assert_null(mtk_matmul(ctx, CPU(ctx, MTK_FLOAT64, 0, 2, 3), CPU(ctx, MTK_FLOAT32, 3, 4)));
    assert_error(ctx, MTK_ERR_DTYPE, "expected m1 and m2 to have the same dtype");
    t = mtk_mm(ctx, CPU(ctx, MTK_BOOL, 2, 0), CPU(ctx, MTK_BOOL, 0, 4));
    assert_shape(t, 2, SHAPE(2, 4));
    t = mtk_mv(ctx, CPU(ctx, MTK_BOOL, 2, 0), CPU(ctx, MTK_BOOL, 0));
    assert_shape(t, 1, SHAPE(2));
    assert_null(mtk_mv(ctx, CPU(ctx, MTK_FLOAT64, 2, 0), CPU(ctx, MTK_FLOAT32, 0)));
    assert_error(ctx, MTK_ERR_DTYPE, "float64 != float32");
    assert_null(mtk_dot(ctx, CPU(ctx, MTK_BOOL, 0), CPU(ctx, MTK_BOOL, 0)));
    assert_error(ctx, MTK_ERR_DTYPE, "not implemented for 'bool'");
    mtk_ctx_free(ctx);
}

/* torch's meta device runs Python decompositions that take mixed dtypes
 * in mm (the first operand's dtype) and mv (promoted); dot and bmm refuse
 * them there too */
static void mixed_dtypes_follow_torch_meta_on_meta(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_tensor *t = mtk_matmul(ctx, META(ctx, MTK_FLOAT32, 3, 4), META(ctx, MTK_FLOAT16, 4, 5));
    assert_shape(t, 2, SHAPE(3, 5));
    assert_int_equal(t->dtype, MTK_FLOAT32);
    assert_int_equal(mtk_mm(ctx, META(ctx, MTK_FLOAT16, 3, 4), META(ctx, MTK_FLOAT32, 4, 5))->dtype, MTK_FLOAT16);
    assert_int_equal(mtk_matmul(ctx, META(ctx, MTK_INT64, 4), META(ctx, MTK_FLOAT32, 4, 5))->dtype, MTK_INT64);
    assert_int_equal(mtk_mv(ctx, META(ctx, MTK_FLOAT16, 3, 4), META(ctx, MTK_FLOAT32, 4))->dtype, MTK_FLOAT32);
    assert_int_equal(mtk_mv(ctx, META(ctx, MTK_INT32, 3, 4), META(ctx, MTK_INT64, 4))->dtype, MTK_INT64);
    assert_int_equal(mtk_linear(ctx, META(ctx, MTK_FLOAT32, 3, 4), META(ctx, MTK_FLOAT16, 5, 4), NULL)->dtype,
                     MTK_FLOAT32);
    assert_null(mtk_dot(ctx, META(ctx, MTK_FLOAT32, 4), META(ctx, MTK_FLOAT16, 4)));
    assert_error(ctx, MTK_ERR_DTYPE, "expected both vectors to have same dtype");
    assert_null(mtk_bmm(ctx, META(ctx, MTK_FLOAT32, 2, 3, 4), META(ctx, MTK_FLOAT16, 2, 4, 5)));
    assert_error(ctx, MTK_ERR_DTYPE, "expected scalar type float32 but found float16");
    assert_null(mtk_matmul(ctx, META(ctx, MTK_FLOAT32, 2, 3, 4), META(ctx, MTK_FLOAT16, 2, 4, 5)));
    assert_error(ctx, MTK_ERR_DTYPE, "expected scalar type float32 but found float16");
    mtk_ctx_free(ctx);
}

static void mm_bmm_dot_mv_check_their_ranks(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    assert_null(mtk_mm(ctx, META(ctx, MTK_FLOAT32, 3), META(ctx, MTK_FLOAT32, 3, 4)));
    assert_error(ctx, MTK_ERR_SHAPE, "self must be a matrix");
    assert_null(mtk_mm(ctx, META(ctx, MTK_FLOAT32, 3, 4), META(ctx, MTK_FLOAT32, 2, 4, 5)));
    assert_error(ctx, MTK_ERR_SHAPE, "mat2 must be a matrix");
    assert_null(mtk_bmm(ctx, META(ctx, MTK_FLOAT32, 3, 4), META(ctx, MTK_FLOAT32, 4, 5)));
    assert_error(ctx, MTK_ERR_SHAPE, "batch1 must be a 3D tensor");
    assert_null(mtk_bmm(ctx, META(ctx, MTK_FLOAT32, 2, 3, 4), META(ctx, MTK_FLOAT32, 3, 4, 5)));
    assert_error(ctx, MTK_ERR_SHAPE, "to be: [2, 4] but got: [3, 4].");
    assert_null(mtk_dot(ctx, META(ctx, MTK_FLOAT32, 3, 4), META(ctx, MTK_FLOAT32, 4)));
    assert_error(ctx, MTK_ERR_SHAPE, "1D tensors expected, but got 2D and 1D tensors");
    assert_null(mtk_mv(ctx, META(ctx, MTK_FLOAT32, 3), META(ctx, MTK_FLOAT32, 4)));
    assert_error(ctx, MTK_ERR_SHAPE, "matrix @ vector expected, got 1, 1");
    assert_shape(mtk_bmm(ctx, META(ctx, MTK_FLOAT32, 2, 3, 4), META(ctx, MTK_FLOAT32, 2, 4, 5)), 3, SHAPE(2, 3, 5));
    assert_shape(mtk_dot(ctx, META(ctx, MTK_FLOAT32, 4), META(ctx, MTK_FLOAT32, 4)), 0, NULL);
    assert_shape(mtk_mv(ctx, META(ctx, MTK_FLOAT32, 3, 4), META(ctx, MTK_FLOAT32, 4)), 1, SHAPE(3));
    mtk_ctx_free(ctx);
}

static void null_inputs_pass_through_without_a_new_error(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    assert_null(mtk_matmul(ctx, META(ctx, MTK_FLOAT32, 3, 4), META(ctx, MTK_FLOAT32, 5, 6)));
    const char *first = mtk_ctx_message(ctx);
    assert_null(mtk_linear(ctx, NULL, META(ctx, MTK_FLOAT32, 5, 4), NULL));
    assert_ptr_equal(mtk_ctx_message(ctx), first);
    assert_true(strstr(first, "3x4 and 5x6") != NULL);
    mtk_ctx_free(ctx);
}

/* ------------------------------------------------------------------ FLOPs */

/* FlopCounterMode counts mm, addmm and bmm only: dot and mv are free */
static void matmul_flops_follow_flop_counter_mode(void **state)
{
    (void)state;
    static const struct {
        int32_t na, nb;
        int64_t a[4], b[4], flops;
    } cases[] = {
        { 1, 1, { 3 }, { 3 }, 0 },
        { 2, 1, { 3, 4 }, { 4 }, 0 },
        { 1, 2, { 3 }, { 3, 4 }, 24 },
        { 3, 1, { 2, 3, 4 }, { 4 }, 0 },
        { 1, 3, { 3 }, { 2, 3, 4 }, 48 },
        { 3, 2, { 2, 3, 4 }, { 4, 5 }, 240 },
        { 2, 3, { 3, 4 }, { 2, 4, 5 }, 240 },
        { 4, 3, { 2, 1, 3, 4 }, { 5, 4, 6 }, 1440 },
        { 3, 3, { 2, 3, 4 }, { 2, 4, 5 }, 240 },
    };
    mtk_ctx *ctx = mtk_ctx_new();
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        mtk_tensor *a = meta(ctx, MTK_FLOAT32, cases[i].na, cases[i].a);
        mtk_tensor *b = meta(ctx, MTK_FLOAT32, cases[i].nb, cases[i].b);
        assert_int_equal(flops_of(ctx, OPID_MATMUL, a, b, NULL), cases[i].flops);
    }
    mtk_ctx_free(ctx);
}

/* a batch that cannot fold without a copy runs as bmm, which counts */
static void matmul_of_unfoldable_batch_and_vector_counts_bmm_flops(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_tensor *a = mtk_tensor_new(ctx, MTK_FLOAT32, SHAPE(2, 3, 4), 3, SHAPE(12, 1, 3), MTK_DEVICE_META);
    assert_int_equal(flops_of(ctx, OPID_MATMUL, a, META(ctx, MTK_FLOAT32, 4), NULL), 48);
    assert_int_equal(flops_of(ctx, OPID_MATMUL, META(ctx, MTK_FLOAT32, 2, 3, 4), META(ctx, MTK_FLOAT32, 4), NULL), 0);
    mtk_ctx_free(ctx);
}

static void linear_flops_leave_out_the_bias(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_tensor *w = META(ctx, MTK_FLOAT32, 5, 4), *b = META(ctx, MTK_FLOAT32, 5);
    assert_int_equal(flops_of(ctx, OPID_LINEAR, META(ctx, MTK_FLOAT32, 3, 4), w, b), 120);
    assert_int_equal(flops_of(ctx, OPID_LINEAR, META(ctx, MTK_FLOAT32, 3, 4), w, NULL), 120);
    assert_int_equal(flops_of(ctx, OPID_LINEAR, META(ctx, MTK_FLOAT32, 2, 3, 4), w, b), 240);
    assert_int_equal(flops_of(ctx, OPID_LINEAR, META(ctx, MTK_FLOAT32, 4), w, b), 40);
    assert_int_equal(flops_of(ctx, OPID_LINEAR, META(ctx, MTK_FLOAT32, 3, 4), META(ctx, MTK_FLOAT32, 4), NULL), 0);
    assert_int_equal(flops_of(ctx, OPID_MM, META(ctx, MTK_FLOAT32, 3, 4), META(ctx, MTK_FLOAT32, 4, 5), NULL), 120);
    assert_int_equal(flops_of(ctx, OPID_BMM, META(ctx, MTK_FLOAT32, 2, 3, 4), META(ctx, MTK_FLOAT32, 2, 4, 5), NULL), 240);
    mtk_ctx_free(ctx);
}

/* ----------------------------------------------------------------- linear */

static void linear_handles_1d_input_and_bias_broadcasting(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_tensor *w = META(ctx, MTK_FLOAT32, 5, 4);
    assert_shape(mtk_linear(ctx, META(ctx, MTK_FLOAT32, 4), w, META(ctx, MTK_FLOAT32, 5)), 1, SHAPE(5));
    assert_shape(mtk_linear(ctx, META(ctx, MTK_FLOAT32, 4), w, META(ctx, MTK_FLOAT32, 1, 5)), 1, SHAPE(5));
    assert_shape(mtk_linear(ctx, META(ctx, MTK_FLOAT32, 3, 4), w, META(ctx, MTK_FLOAT32, 3, 1)), 2, SHAPE(3, 5));
    assert_shape(mtk_linear(ctx, META(ctx, MTK_FLOAT32, 2, 3, 4), w, META(ctx, MTK_FLOAT32, 3, 5)), 3, SHAPE(2, 3, 5));
    assert_shape(mtk_linear(ctx, META(ctx, MTK_FLOAT32, 2, 3, 4), META(ctx, MTK_FLOAT32, 4), NULL), 2, SHAPE(2, 3));
    assert_shape(mtk_linear(ctx, META(ctx, MTK_FLOAT32, 4), META(ctx, MTK_FLOAT32, 4), NULL), 0, NULL);
    assert_shape(mtk_linear(ctx, META(ctx, MTK_FLOAT32, 2, 2, 3, 4), w, META0(ctx, MTK_FLOAT32)), 4, SHAPE(2, 2, 3, 5));
    mtk_ctx_free(ctx);
}

/* the errors of torch's cpu paths: addmm expands the bias in place, the
 * matmul path adds it in place */
static void linear_bias_errors_follow_torch_cpu(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_tensor *w = CPU(ctx, MTK_FLOAT32, 5, 4);
    assert_null(mtk_linear(ctx, CPU(ctx, MTK_FLOAT32, 3, 4), w, CPU(ctx, MTK_FLOAT32, 4)));
    assert_error(ctx, MTK_ERR_SHAPE, "The expanded size of the tensor (5) must match the existing size (4) at non-singleton dimension 1");
    assert_null(mtk_linear(ctx, CPU(ctx, MTK_FLOAT32, 3, 4), w, CPU(ctx, MTK_FLOAT32, 2, 3, 5)));
    assert_error(ctx, MTK_ERR_SHAPE, "the number of sizes provided (2) must be greater or equal");
    assert_null(mtk_linear(ctx, CPU(ctx, MTK_FLOAT32, 2, 3, 4), w, CPU(ctx, MTK_FLOAT32, 3, 1)));
    assert_error(ctx, MTK_ERR_SHAPE, "Target sizes: [6, 5].  Tensor sizes: [3, 1]");
    assert_null(mtk_linear(ctx, CPU(ctx, MTK_FLOAT32, 2, 3, 4), w, CPU(ctx, MTK_FLOAT32, 4, 2, 3, 5)));
    assert_error(ctx, MTK_ERR_SHAPE, "output with shape [2, 3, 5] doesn't match the broadcast shape [4, 2, 3, 5]");
    assert_null(mtk_linear(ctx, CPU(ctx, MTK_FLOAT32, 3, 4), w, CPU(ctx, MTK_FLOAT16, 5)));
    assert_error(ctx, MTK_ERR_DTYPE, "self and mat2 must have the same dtype, but got float16 and float32");
    assert_null(mtk_linear(ctx, CPU(ctx, MTK_FLOAT32, 3, 4), CPU(ctx, MTK_FLOAT32, 2, 5, 4), NULL));
    assert_error(ctx, MTK_ERR_SHAPE, "t() expects a tensor with <= 2 dimensions, but self is 3D");
    assert_null(mtk_linear(ctx, CPU0(ctx, MTK_FLOAT32), w, NULL));
    assert_error(ctx, MTK_ERR_SHAPE, "both arguments to linear need to be at least 1D, but they are 0D and 2D");
    assert_null(mtk_linear(ctx, CPU(ctx, MTK_FLOAT32, 3, 4), CPU(ctx, MTK_FLOAT32, 4), CPU(ctx, MTK_FLOAT32, 3)));
    assert_error(ctx, MTK_ERR_SHAPE, "mat2 must be a matrix, got 1-D tensor");
    assert_null(mtk_linear(ctx, CPU(ctx, MTK_FLOAT32, 3, 4), CPU(ctx, MTK_FLOAT32, 5, 3), NULL));
    assert_error(ctx, MTK_ERR_SHAPE, "mat1 and mat2 shapes cannot be multiplied (3x4 and 3x5)");
    mtk_ctx_free(ctx);
}

/* torch's meta device decomposes linear: addmm promotes to the bias's
 * dtype and broadcasts it out of place, as does the matmul path's add */
static void linear_bias_on_meta_promotes_and_broadcasts(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_tensor *w = META(ctx, MTK_FLOAT32, 5, 4);
    mtk_tensor *t = mtk_linear(ctx, META(ctx, MTK_FLOAT32, 3, 4), w, META(ctx, MTK_FLOAT16, 5));
    assert_shape(t, 2, SHAPE(3, 5));
    assert_int_equal(t->dtype, MTK_FLOAT32);
    t = mtk_linear(ctx, META(ctx, MTK_FLOAT16, 3, 4), META(ctx, MTK_FLOAT16, 5, 4), META(ctx, MTK_FLOAT32, 5));
    assert_int_equal(t->dtype, MTK_FLOAT32);
    t = mtk_linear(ctx, META(ctx, MTK_INT64, 2, 3, 4), META(ctx, MTK_INT64, 5, 4), META(ctx, MTK_FLOAT32, 5));
    assert_shape(t, 3, SHAPE(2, 3, 5));
    assert_int_equal(t->dtype, MTK_FLOAT32);
    t = mtk_linear(ctx, META(ctx, MTK_FLOAT32, 3, 4), w, META(ctx, MTK_FLOAT32, 2, 3, 5));
    assert_shape(t, 3, SHAPE(2, 3, 5));
    assert_contiguous(t);
    t = mtk_linear(ctx, META(ctx, MTK_FLOAT32, 2, 3, 4), w, META(ctx, MTK_FLOAT32, 4, 2, 3, 5));
    assert_shape(t, 4, SHAPE(4, 2, 3, 5));
    assert_contiguous(t);
    assert_null(mtk_linear(ctx, META(ctx, MTK_FLOAT32, 3, 4), w, META(ctx, MTK_FLOAT32, 4)));
    assert_error(ctx, MTK_ERR_SHAPE, "must match the size of tensor b (4)");
    assert_null(mtk_linear(ctx, META(ctx, MTK_FLOAT32, 2, 3, 4), w, META(ctx, MTK_FLOAT32, 3, 1)));
    assert_error(ctx, MTK_ERR_SHAPE, "must match the size of tensor b (3)");
    mtk_ctx_free(ctx);
}

static void linear_is_reachable_by_name_with_keyword_bias(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_value pos[2] = { mtk_value_tensor(META(ctx, MTK_BFLOAT16, 2, 7, 16)),
                         mtk_value_tensor(META(ctx, MTK_BFLOAT16, 32, 16)) };
    const char *kw[1] = { "bias" };
    mtk_value kwv[1] = { mtk_value_tensor(META(ctx, MTK_BFLOAT16, 32)) };
    mtk_value result;
    assert_true(mtk_op_call_by_name(ctx, "F.linear", pos, 2, kw, kwv, 1, &result));
    assert_int_equal(result.kind, MTK_VALUE_TENSOR);
    assert_shape(result.as.tensor, 3, SHAPE(2, 7, 32));
    assert_int_equal(result.as.tensor->dtype, MTK_BFLOAT16);
    mtk_ctx_free(ctx);
}

/* ------------------------------------------------------------- cpu values */

static void mm_on_cpu_matches_torch(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    float a[12], b[20], at[12];
    for (int i = 0; i < 12; i++) a[i] = (float)i * 0.5f - 2.0f, at[i] = (float)i;
    for (int i = 0; i < 20; i++) b[i] = (float)i - 7.0f;
    mtk_tensor *ta = mtk_tensor_from_data(ctx, MTK_FLOAT32, SHAPE(3, 4), 2, NULL, a);
    mtk_tensor *tb = mtk_tensor_from_data(ctx, MTK_FLOAT32, SHAPE(4, 5), 2, NULL, b);
    static const float want[15] = { 10, 5, 0, -5, -10, 14, 17, 20, 23, 26, 18, 29, 40, 51, 62 };
    mtk_tensor *out = mtk_mm(ctx, ta, tb);
    assert_non_null(out);
    assert_int_equal(out->device, MTK_DEVICE_CPU);
    assert_floats(out, want, 15);
    /* torch.arange(12.).reshape(4, 3).t() @ b: a transposed operand */
    mtk_tensor *tt = mtk_tensor_from_data(ctx, MTK_FLOAT32, SHAPE(3, 4), 2, SHAPE(1, 3), at);
    static const float want_t[15] = { 84, 102, 120, 138, 156, 86, 108, 130, 152, 174, 88, 114, 140, 166, 192 };
    assert_floats(mtk_matmul(ctx, tt, tb), want_t, 15);
    mtk_ctx_free(ctx);
}

static void matmul_broadcasts_batch_dims_on_cpu(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    float a[12], y[16], x[24], v[4] = { 1, -1, 2, 0.5f };
    for (int i = 0; i < 12; i++) a[i] = (float)i;
    for (int i = 0; i < 16; i++) y[i] = (float)i;
    for (int i = 0; i < 24; i++) x[i] = (float)i;
    /* (3, 4) @ (2, 1, 4, 2) -> (2, 1, 3, 2) */
    mtk_tensor *out = mtk_matmul(ctx, mtk_tensor_from_data(ctx, MTK_FLOAT32, SHAPE(3, 4), 2, NULL, a),
                                 mtk_tensor_from_data(ctx, MTK_FLOAT32, SHAPE(2, 1, 4, 2), 4, NULL, y));
    assert_shape(out, 4, SHAPE(2, 1, 3, 2));
    static const float want[12] = { 28, 34, 76, 98, 124, 162, 76, 82, 252, 274, 428, 466 };
    assert_floats(out, want, 12);
    /* (2, 3, 4) @ (4,) -> (2, 3) */
    out = mtk_matmul(ctx, mtk_tensor_from_data(ctx, MTK_FLOAT32, SHAPE(2, 3, 4), 3, NULL, x),
                     mtk_tensor_from_data(ctx, MTK_FLOAT32, SHAPE(4), 1, NULL, v));
    static const float want_v[6] = { 4.5f, 14.5f, 24.5f, 34.5f, 44.5f, 54.5f };
    assert_shape(out, 2, SHAPE(2, 3));
    assert_floats(out, want_v, 6);
    float p[3] = { 1, 2, 3 }, q[3] = { 4, -5, 6 };
    out = mtk_dot(ctx, mtk_tensor_from_data(ctx, MTK_FLOAT32, SHAPE(3), 1, NULL, p),
                  mtk_tensor_from_data(ctx, MTK_FLOAT32, SHAPE(3), 1, NULL, q));
    static const float want_dot[1] = { 12 };
    assert_shape(out, 0, NULL);
    assert_floats(out, want_dot, 1);
    mtk_ctx_free(ctx);
}

static void integer_matmul_is_exact_and_wraps(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    int64_t i[6] = { -2, -1, 0, 1, 2, 3 }, j[6] = { 0, 3, 6, 9, 12, 15 };
    mtk_tensor *out = mtk_matmul(ctx, mtk_tensor_from_data(ctx, MTK_INT64, SHAPE(2, 3), 2, NULL, i),
                                 mtk_tensor_from_data(ctx, MTK_INT64, SHAPE(3, 2), 2, NULL, j));
    assert_non_null(out);
    const int64_t *got = mtk_tensor_data(out);
    assert_int_equal(got[0], -6);
    assert_int_equal(got[1], -15);
    assert_int_equal(got[2], 48);
    assert_int_equal(got[3], 66);
    int8_t a8[6] = { 0, 40, 80, 120, -96, -56 }, b8[6] = { 3, 3, 3, 3, 3, 3 };
    out = mtk_mm(ctx, mtk_tensor_from_data(ctx, MTK_INT8, SHAPE(2, 3), 2, NULL, a8),
                 mtk_tensor_from_data(ctx, MTK_INT8, SHAPE(3, 2), 2, NULL, b8));
    const int8_t *got8 = mtk_tensor_data(out);
    assert_int_equal(got8[0], 104);
    assert_int_equal(got8[2], -96);
    mtk_ctx_free(ctx);
}

/* float16 is computed in float32 and rounded once */
static void half_matmul_rounds_like_torch(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    float hf[6], kf[6];
    for (int i = 0; i < 6; i++) hf[i] = (float)i / 3.0f, kf[i] = (float)i / 7.0f;
    mtk_tensor *h = mtk_to_dtype(ctx, mtk_tensor_from_data(ctx, MTK_FLOAT32, SHAPE(2, 3), 2, NULL, hf), MTK_FLOAT16);
    mtk_tensor *k = mtk_to_dtype(ctx, mtk_tensor_from_data(ctx, MTK_FLOAT32, SHAPE(3, 2), 2, NULL, kf), MTK_FLOAT16);
    mtk_tensor *out = mtk_to_dtype(ctx, mtk_matmul(ctx, h, k), MTK_FLOAT32);
    static const float want[4] = { 0.47607421875f, 0.619140625f, 1.3330078125f, 1.9052734375f };
    assert_floats(out, want, 4);
    mtk_ctx_free(ctx);
}

static void linear_with_bias_on_cpu_matches_torch(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    float in[6], w[12], bias[4] = { 0.5f, -1, 2, 3 }, v[3] = { 1, 2, 3 };
    for (int i = 0; i < 6; i++) in[i] = (float)i;
    for (int i = 0; i < 12; i++) w[i] = (float)i - 5;
    mtk_tensor *tw = mtk_tensor_from_data(ctx, MTK_FLOAT32, SHAPE(4, 3), 2, NULL, w);
    mtk_tensor *tb = mtk_tensor_from_data(ctx, MTK_FLOAT32, SHAPE(4), 1, NULL, bias);
    mtk_tensor *out = mtk_linear(ctx, mtk_tensor_from_data(ctx, MTK_FLOAT32, SHAPE(2, 3), 2, NULL, in), tw, tb);
    static const float want[8] = { -9.5f, -2, 10, 20, -45.5f, -11, 28, 65 };
    assert_shape(out, 2, SHAPE(2, 4));
    assert_floats(out, want, 8);
    out = mtk_linear(ctx, mtk_tensor_from_data(ctx, MTK_FLOAT32, SHAPE(3), 1, NULL, v), tw, tb);
    static const float want_1d[4] = { -21.5f, -5, 16, 35 };
    assert_shape(out, 1, SHAPE(4));
    assert_floats(out, want_1d, 4);
    mtk_ctx_free(ctx);
}

/* torch's cpu has no bool matmul ("addmm_impl_cpu_" not implemented) */
static void bool_matmul_works_on_meta_but_not_on_cpu(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    assert_non_null(mtk_matmul(ctx, META(ctx, MTK_BOOL, 3, 4), META(ctx, MTK_BOOL, 4, 5)));
    bool a[12] = { 0 }, b[20] = { 0 };
    assert_null(mtk_matmul(ctx, mtk_tensor_from_data(ctx, MTK_BOOL, SHAPE(3, 4), 2, NULL, a),
                           mtk_tensor_from_data(ctx, MTK_BOOL, SHAPE(4, 5), 2, NULL, b)));
    assert_error(ctx, MTK_ERR_DTYPE, "not implemented for 'bool'");
    mtk_ctx_free(ctx);
}

static void empty_inner_dim_gives_zeros(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    float none[1];
    mtk_tensor *out = mtk_matmul(ctx, mtk_tensor_from_data(ctx, MTK_FLOAT32, SHAPE(3, 0), 2, NULL, none),
                                 mtk_tensor_from_data(ctx, MTK_FLOAT32, SHAPE(0, 4), 2, NULL, none));
    static const float zeros[12] = { 0 };
    assert_shape(out, 2, SHAPE(3, 4));
    assert_floats(out, zeros, 12);
    mtk_ctx_free(ctx);
}

/* a mapped checkpoint may place float data at any byte offset */
static void matmul_reads_unaligned_operands(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    static const float a[4] = { 1, 2, 3, 4 }, b[4] = { 5, 6, 7, 8 };
    _Alignas(16) char buf[40];
    memcpy(buf + 1, a, sizeof a);
    memcpy(buf + 1 + sizeof a, b, sizeof b);
    mtk_tensor *ta = mtk_tensor_from_data(ctx, MTK_FLOAT32, SHAPE(2, 2), 2, NULL, buf + 1);
    mtk_tensor *tb = mtk_tensor_from_data(ctx, MTK_FLOAT32, SHAPE(2, 2), 2, NULL, buf + 1 + sizeof a);
    static const float want[4] = { 19, 22, 43, 50 };
    assert_floats(mtk_matmul(ctx, ta, tb), want, 4);
    static const float want_linear[4] = { 17, 23, 39, 53 };
    assert_floats(mtk_linear(ctx, ta, tb, NULL), want_linear, 4);
    mtk_ctx_free(ctx);
}

/* ------------------------------------------ bfloat16 products (decode) */

static uint32_t lcg_next(uint32_t *state)
{
    *state = *state * 1664525u + 1013904223u;
    return *state >> 8;
}

/* n bfloat16 values in [-2, 2) at dst (any byte address) and as floats */
static void fill_bf16(uint32_t *state, unsigned char *dst, float *values, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        float f = (float)(lcg_next(state) % 4096) / 1024.0f - 2.0f;
        uint32_t bits;
        memcpy(&bits, &f, sizeof bits);
        uint16_t h = (uint16_t)(bits >> 16); /* truncated: exactly a bfloat16 */
        memcpy(dst + 2 * i, &h, sizeof h);
        bits = (uint32_t)h << 16;
        memcpy(&values[i], &bits, sizeof bits);
    }
}

/* Checks out (m x n bfloat16) against x (m x k) @ w^T (+ bias) summed in
 * double: within one bfloat16 ulp of the exact value, plus float32
 * summation error. */
static void assert_bf16_product(mtk_ctx *ctx, mtk_tensor *out, const float *x, const float *w, const float *bias,
                                int64_t m, int64_t n, int64_t k)
{
    assert_non_null(out);
    assert_int_equal(out->dtype, MTK_BFLOAT16);
    mtk_tensor *got = mtk_to_dtype(ctx, out, MTK_FLOAT32);
    assert_non_null(got);
    const float *g = mtk_tensor_data(got);
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double exact = bias ? bias[j] : 0, magnitude = bias ? fabs(bias[j]) : 0;
            for (int64_t p = 0; p < k; p++) {
                exact += (double)x[i * k + p] * w[j * k + p];
                magnitude += fabs((double)x[i * k + p] * w[j * k + p]);
            }
            double tol = fabs(exact) / 128.0 + magnitude * 1e-6 + 1e-30;
            if (fabs(g[i * n + j] - exact) > tol)
                fail_msg("m=%lld n=%lld k=%lld: [%lld][%lld] = %.9g, want %.9g (tol %.3g)", (long long)m,
                         (long long)n, (long long)k, (long long)i, (long long)j, g[i * n + j], exact, tol);
        }
}

/* bfloat16 linear, decode-sized (a few rows: the weight read in place)
 * and prefill-sized (widened and multiplied by sgemm), with and without
 * a bias, against a float64 reference of the same bfloat16 inputs */
static void bf16_linear_matches_a_float64_reference(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    static const int64_t ms[] = { 1, 2, 8, 9, 33 }, ks[] = { 1, 15, 16, 37, 100 }, ns[] = { 1, 7, 19 };
    uint32_t seed = 7;
    for (size_t mi = 0; mi < 5; mi++)
        for (size_t ki = 0; ki < 5; ki++)
            for (size_t ni = 0; ni < 3; ni++) {
                int64_t m = ms[mi], k = ks[ki], n = ns[ni];
                float *x = test_malloc((size_t)(m * k) * sizeof *x), *w = test_malloc((size_t)(n * k) * sizeof *w);
                float bias[19];
                unsigned char *xb = test_malloc((size_t)(m * k) * 2), *wb = test_malloc((size_t)(n * k) * 2);
                unsigned char bb[38];
                fill_bf16(&seed, xb, x, m * k);
                fill_bf16(&seed, wb, w, n * k);
                fill_bf16(&seed, bb, bias, n);
                mtk_tensor *tx = mtk_tensor_from_data(ctx, MTK_BFLOAT16, SHAPE(m, k), 2, NULL, xb);
                mtk_tensor *tw = mtk_tensor_from_data(ctx, MTK_BFLOAT16, SHAPE(n, k), 2, NULL, wb);
                mtk_tensor *tb = mtk_tensor_from_data(ctx, MTK_BFLOAT16, SHAPE(n), 1, NULL, bb);
                assert_bf16_product(ctx, mtk_linear(ctx, tx, tw, NULL), x, w, NULL, m, n, k);
                assert_bf16_product(ctx, mtk_linear(ctx, tx, tw, tb), x, w, bias, m, n, k);
                test_free(x), test_free(w), test_free(xb), test_free(wb);
            }
    mtk_ctx_free(ctx);
}

/* the in-place bfloat16 path reads a weight at an odd byte address (a
 * mapped checkpoint) and an input that is a transposed view */
static void bf16_linear_reads_unaligned_weights_and_strided_inputs(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    enum { M = 3, K = 40, N = 5 };
    float x[M * K], xt[K * M], w[N * K];
    unsigned char xb[2 * M * K], wbuf[2 * N * K + 1];
    uint32_t seed = 11;
    fill_bf16(&seed, xb, xt, K * M); /* stored (K, M): x = its transpose */
    for (int i = 0; i < M; i++)
        for (int p = 0; p < K; p++) x[i * K + p] = xt[p * M + i];
    fill_bf16(&seed, wbuf + 1, w, N * K);
    mtk_tensor *tx = mtk_tensor_from_data(ctx, MTK_BFLOAT16, SHAPE(M, K), 2, SHAPE(1, M), xb);
    mtk_tensor *tw = mtk_tensor_from_data(ctx, MTK_BFLOAT16, SHAPE(N, K), 2, NULL, wbuf + 1);
    assert_bf16_product(ctx, mtk_linear(ctx, tx, tw, NULL), x, w, NULL, M, N, K);
    /* matmul with the weight's transpose as a view: the same product */
    mtk_tensor *tw_t = mtk_tensor_from_data(ctx, MTK_BFLOAT16, SHAPE(K, N), 2, SHAPE(1, K), wbuf + 1);
    assert_bf16_product(ctx, mtk_matmul(ctx, tx, tw_t), x, w, NULL, M, N, K);
    mtk_ctx_free(ctx);
}

/* The decode product's documented float32 sums (ops/linalg_half.h): 16
 * partial sums, sum l taking the elements p % 16 == l in order, the
 * remainder added into sums 0.., then the sums pairwise (0+8, 1+9, ...,
 * then 0+4, ...), each output rounded once to bfloat16.  Columns in
 * blocks of four and a lone tail column (n = 7), a k with a tail (37)
 * and without (64), 1 and 3 rows: every output's bits equal the model's. */
static void bf16_decode_product_sums_in_its_documented_order(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    static const int64_t ks[] = { 37, 64, 200 }, ms[] = { 1, 3 };
    enum { N = 7, MAXK = 200, MAXM = 3 };
    uint32_t seed = 5;
    for (size_t ki = 0; ki < 3; ki++)
        for (size_t mi = 0; mi < 2; mi++) {
            int64_t k = ks[ki], m = ms[mi];
            float x[MAXM * MAXK], w[N * MAXK];
            unsigned char xb[2 * MAXM * MAXK], wb[2 * N * MAXK];
            fill_bf16(&seed, xb, x, m * k);
            fill_bf16(&seed, wb, w, N * k);
            mtk_tensor *tx = mtk_tensor_from_data(ctx, MTK_BFLOAT16, SHAPE(m, k), 2, NULL, xb);
            mtk_tensor *tw = mtk_tensor_from_data(ctx, MTK_BFLOAT16, SHAPE(N, k), 2, NULL, wb);
            mtk_tensor *want = mtk_empty(ctx, SHAPE(m, N), 2, MTK_FLOAT32);
            assert_non_null(want);
            for (int64_t i = 0; i < m; i++)
                for (int64_t j = 0; j < N; j++) {
                    float lanes[16] = { 0 };
                    int64_t p = 0;
                    for (; p < k - k % 16; p++) lanes[p % 16] += x[i * k + p] * w[j * k + p];
                    for (int64_t l = 0; p < k; p++, l++) lanes[l] += x[i * k + p] * w[j * k + p];
                    for (int half = 8; half > 0; half /= 2)
                        for (int l = 0; l < half; l++) lanes[l] += lanes[l + half];
                    ((float *)mtk_tensor_data(want))[i * N + j] = lanes[0];
                }
            mtk_tensor *got = mtk_linear(ctx, tx, tw, NULL), *w16 = mtk_to_dtype(ctx, want, MTK_BFLOAT16);
            assert_non_null(got);
            assert_non_null(w16);
            assert_memory_equal(mtk_tensor_data(got), mtk_tensor_data(w16), (size_t)(m * N) * 2);
        }
    mtk_ctx_free(ctx);
}

/* one row of float32 (a decode step) goes to sgemv: a read with a stride,
 * b as linear's weight (transposed) and as a plain (k, n) matrix */
static void f32_single_row_products_match_a_float64_reference(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    enum { K = 37, N = 19 };
    float a2[2 * K], w[N * K], b[K * N];
    for (int i = 0; i < 2 * K; i++) a2[i] = (float)((i * 7) % 23) / 8.0f - 1.0f;
    for (int i = 0; i < N * K; i++) w[i] = (float)((i * 5) % 31) / 16.0f - 0.9f;
    for (int p = 0; p < K; p++)
        for (int j = 0; j < N; j++) b[p * N + j] = w[j * K + p];
    /* a = column 0 of a2 seen as (K, 2): shape (1, K), strides (K, 2) */
    mtk_tensor *ta = mtk_tensor_from_data(ctx, MTK_FLOAT32, SHAPE(1, K), 2, SHAPE(2 * K, 2), a2);
    mtk_tensor *tw = mtk_tensor_from_data(ctx, MTK_FLOAT32, SHAPE(N, K), 2, NULL, w);
    mtk_tensor *tb = mtk_tensor_from_data(ctx, MTK_FLOAT32, SHAPE(K, N), 2, NULL, b);
    const mtk_tensor *outs[2] = { mtk_linear(ctx, ta, tw, NULL), mtk_matmul(ctx, ta, tb) };
    for (int o = 0; o < 2; o++) {
        assert_non_null(outs[o]);
        assert_shape(outs[o], 2, SHAPE(1, N));
        const float *got = mtk_tensor_data(outs[o]);
        for (int j = 0; j < N; j++) {
            double want = 0;
            for (int p = 0; p < K; p++) want += (double)a2[2 * p] * w[j * K + p];
            assert_true(fabs(got[j] - want) <= 1e-5 * (1 + fabs(want)));
        }
    }
    mtk_ctx_free(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(matmul_shapes_follow_torch_on_meta),
        cmocka_unit_test(matmul_of_transposed_operands_is_contiguous),
        cmocka_unit_test(matmul_keeps_dtype_of_every_dtype_on_meta),
        cmocka_unit_test(matmul_errors_use_torch_words),
        cmocka_unit_test(mixed_dtypes_are_refused_on_cpu),
        cmocka_unit_test(mixed_dtypes_follow_torch_meta_on_meta),
        cmocka_unit_test(empty_products_on_cpu_follow_torch_cpu),
        cmocka_unit_test(mm_bmm_dot_mv_check_their_ranks),
        cmocka_unit_test(null_inputs_pass_through_without_a_new_error),
        cmocka_unit_test(matmul_flops_follow_flop_counter_mode),
        cmocka_unit_test(matmul_of_unfoldable_batch_and_vector_counts_bmm_flops),
        cmocka_unit_test(linear_flops_leave_out_the_bias),
        cmocka_unit_test(linear_handles_1d_input_and_bias_broadcasting),
        cmocka_unit_test(linear_bias_errors_follow_torch_cpu),
        cmocka_unit_test(linear_bias_on_meta_promotes_and_broadcasts),
        cmocka_unit_test(linear_is_reachable_by_name_with_keyword_bias),
        cmocka_unit_test(mm_on_cpu_matches_torch),
        cmocka_unit_test(matmul_broadcasts_batch_dims_on_cpu),
        cmocka_unit_test(integer_matmul_is_exact_and_wraps),
        cmocka_unit_test(half_matmul_rounds_like_torch),
        cmocka_unit_test(linear_with_bias_on_cpu_matches_torch),
        cmocka_unit_test(bool_matmul_works_on_meta_but_not_on_cpu),
        cmocka_unit_test(empty_inner_dim_gives_zeros),
        cmocka_unit_test(matmul_reads_unaligned_operands),
        cmocka_unit_test(bf16_linear_matches_a_float64_reference),
        cmocka_unit_test(bf16_linear_reads_unaligned_weights_and_strided_inputs),
        cmocka_unit_test(bf16_decode_product_sums_in_its_documented_order),
        cmocka_unit_test(f32_single_row_products_match_a_float64_reference),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
