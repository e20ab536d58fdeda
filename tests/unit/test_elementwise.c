/* Element-wise ops (unary, binary, where, clamp, activations): shapes,
 * dtypes, output strides as torch's meta device gives them (and its cpu
 * TensorIterator on cpu), cpu values and errors.  Every expectation was taken from torch 2.13 (meta for strides
 * and meta errors, cpu for values and kernel errors). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mtk/mtk.h"
#include "fault_alloc.h"
#include "core/scalar.h"

#define SHAPE(...) ((const int64_t[]){ __VA_ARGS__ })
#define VALUES(...) ((const double[]){ __VA_ARGS__ })

static mtk_tensor *meta(mtk_ctx *ctx, mtk_dtype dtype, int32_t ndim, const int64_t *shape, const int64_t *stride)
{
    return mtk_tensor_new(ctx, dtype, shape, ndim, stride, MTK_DEVICE_META);
}

/* A cpu tensor of shape[ndim] (contiguous) holding `values`. */
static mtk_tensor *cpu(mtk_ctx *ctx, mtk_dtype dtype, int32_t ndim, const int64_t *shape, const double *values)
{
    mtk_tensor *t = mtk_tensor_new(ctx, dtype, shape, ndim, NULL, MTK_DEVICE_CPU);
    assert_non_null(t);
    assert_true(mtk_tensor_alloc_storage(t));
    int64_t n = mtk_tensor_numel(t);
    size_t es = mtk_dtype_size(dtype);
    for (int64_t i = 0; i < n; i++) {
        char *p = (char *)mtk_tensor_data(t) + i * (int64_t)es;
        if (mtk_dtype_is_floating(dtype)) mtk_store_f64(dtype, p, values[i]);
        else mtk_store_i64(dtype, p, (int64_t)values[i]);
    }
    return t;
}

/* element i of `t` in row-major logical order, as a double */
static double at(const mtk_tensor *t, int64_t i)
{
    int64_t off = 0;
    for (int32_t d = t->ndim - 1; d >= 0; d--) {
        off += (i % t->shape[d]) * t->stride[d];
        i /= t->shape[d];
    }
    const char *p = (const char *)mtk_tensor_data(t) + off * (int64_t)mtk_dtype_size(t->dtype);
    return mtk_dtype_is_floating(t->dtype) ? mtk_load_f64(t->dtype, p) : (double)mtk_load_i64(t->dtype, p);
}

static void assert_values(const mtk_tensor *t, int64_t n, const double *expected)
{
    assert_non_null(t);
    assert_int_equal(mtk_tensor_numel(t), n);
    for (int64_t i = 0; i < n; i++) {
        double v = at(t, i);
        if (isnan(expected[i]) && isnan(v)) continue;
        if (v != expected[i] || signbit(v) != signbit(expected[i]))
            fail_msg("element %lld: got %.17g, expected %.17g", (long long)i, v, expected[i]);
    }
}

/* relative tolerance for transcendental functions (libm vs PyTorch's SLEEF) */
static void assert_close(const mtk_tensor *t, int64_t n, const double *expected)
{
    assert_non_null(t);
    for (int64_t i = 0; i < n; i++)
        if (fabs(at(t, i) - expected[i]) > 1e-6 * fabs(expected[i]) + 1e-7)
            fail_msg("element %lld: got %.9g, expected %.9g", (long long)i, at(t, i), expected[i]);
}

static void assert_layout(const mtk_tensor *t, mtk_dtype dtype, int32_t ndim, const int64_t *shape,
                          const int64_t *stride)
{
    assert_non_null(t);
    assert_int_equal(t->dtype, dtype);
    assert_int_equal(t->ndim, ndim);
    for (int32_t i = 0; i < ndim; i++) {
        assert_int_equal(t->shape[i], shape[i]);
        assert_int_equal(t->stride[i], stride[i]);
    }
}

static void assert_error(mtk_ctx *ctx, mtk_status status, const char *text)
{
    assert_int_equal(mtk_ctx_status(ctx), status);
    if (!strstr(mtk_ctx_message(ctx), text)) fail_msg("message '%s' lacks '%s'", mtk_ctx_message(ctx), text);
    mtk_ctx_clear_error(ctx);
}

/* an op by name; the tensor result or NULL */
static mtk_tensor *by_name(mtk_ctx *ctx, const char *op, int32_t npos, const mtk_value *pos, int32_t nkw,
                           const char *const *kw, const mtk_value *kwv)
{
    mtk_value r;
    if (!mtk_op_call_by_name(ctx, op, pos, npos, kw, kwv, nkw, &r)) return NULL;
    return r.kind == MTK_VALUE_TENSOR ? r.as.tensor : NULL;
}

/* ------------------------------------------------------ output strides */

/* lerp, addcmul, addcdiv, glu: values from torch 2.13; dtype rules */
static void ternary_ops_compute_as_torch_and_check_its_dtype_rules(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_tensor *a = cpu(ctx, MTK_FLOAT32, 1, SHAPE(3), VALUES(1, 2, 3));
    mtk_tensor *b = cpu(ctx, MTK_FLOAT32, 1, SHAPE(3), VALUES(5, -2, 0.5));
    assert_values(mtk_lerp(ctx, a, b, mtk_value_float(0.25)), 3, VALUES(2, 1, 2.375));
    assert_values(mtk_lerp(ctx, a, b, mtk_value_tensor(cpu(ctx, MTK_FLOAT32, 1, SHAPE(3), VALUES(0, 0.75, 1)))), 3,
                  VALUES(1, -1, 0.5));
    assert_values(mtk_addcmul(ctx, a, b, b, mtk_value_float(0.5)), 3, VALUES(13.5, 4, 3.125));
    assert_values(mtk_addcdiv(ctx, a, b, cpu(ctx, MTK_FLOAT32, 1, SHAPE(3), VALUES(2, 4, -1)), mtk_value_int(2)), 3,
                  VALUES(6, 1, 2));
    mtk_tensor *i = cpu(ctx, MTK_INT64, 1, SHAPE(2), VALUES(1, 2));
    assert_values(mtk_addcmul(ctx, i, cpu(ctx, MTK_INT64, 1, SHAPE(2), VALUES(3, 4)),
                              cpu(ctx, MTK_INT64, 1, SHAPE(2), VALUES(5, 6)), mtk_value_int(2)),
                  2, VALUES(31, 50));
    assert_close(mtk_glu(ctx, cpu(ctx, MTK_FLOAT32, 2, SHAPE(1, 4), VALUES(1, 2, 0, -1)), -1), 2,
                 VALUES(0.5, 0.5378828644752502));
    /* end must have input's dtype; a 0-dim weight of a higher category promotes */
    mtk_tensor *m32 = meta(ctx, MTK_FLOAT32, 2, SHAPE(2, 3), NULL);
    assert_null(mtk_lerp(ctx, m32, meta(ctx, MTK_FLOAT64, 1, SHAPE(3), NULL), mtk_value_float(0.5)));
    assert_error(ctx, MTK_ERR_DTYPE, "for `end`");
    mtk_tensor *mb = meta(ctx, MTK_BOOL, 1, SHAPE(2), NULL);
    assert_layout(mtk_lerp(ctx, mb, mb, mtk_value_tensor(meta(ctx, MTK_FLOAT32, 0, NULL, NULL))), MTK_FLOAT32, 1,
                  SHAPE(2), SHAPE(1));
    /* integer division refused; odd halving dims refused */
    mtk_tensor *mi = meta(ctx, MTK_INT64, 1, SHAPE(2), NULL);
    assert_null(mtk_addcdiv(ctx, m32, mi, mi, mtk_value_int(1)));
    assert_error(ctx, MTK_ERR_DTYPE, "Integer division with addcdiv is no longer supported");
    assert_null(mtk_glu(ctx, meta(ctx, MTK_FLOAT32, 2, SHAPE(3, 4), NULL), 0));
    assert_error(ctx, MTK_ERR_SHAPE, "Halving dimension must be even, but dimension 0 is size 3");
    mtk_ctx_free(ctx);
}

/* glu on meta replays torch's reference: the input converted to its
 * computation dtype, b * sigmoid(c), converted back (torch 2.13 meta) */
static void glu_meta_strides_follow_the_computation_dtype(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    /* f16[2,1,3,4].permute(2,3,1,0).expand(3,4,3,2), dim 3 */
    const int64_t *shape = SHAPE(3, 4, 3, 2), *stride = SHAPE(4, 1, 0, 12);
    assert_layout(mtk_glu(ctx, meta(ctx, MTK_FLOAT16, 4, shape, stride), 3), MTK_FLOAT16, 4, SHAPE(3, 4, 3, 1),
                  SHAPE(12, 1, 4, 4));
    assert_layout(mtk_glu(ctx, meta(ctx, MTK_FLOAT32, 4, shape, stride), 3), MTK_FLOAT32, 4, SHAPE(3, 4, 3, 1),
                  SHAPE(12, 1, 4, 36));
    /* i16[3,2].t(), dim 0: the float product is converted back densely */
    assert_layout(mtk_glu(ctx, meta(ctx, MTK_INT16, 2, SHAPE(2, 3), SHAPE(1, 2)), 0), MTK_INT16, 2, SHAPE(1, 3),
                  SHAPE(3, 1));
    assert_layout(mtk_glu(ctx, meta(ctx, MTK_FLOAT32, 2, SHAPE(2, 3), SHAPE(1, 2)), 0), MTK_FLOAT32, 2, SHAPE(1, 3),
                  SHAPE(1, 1));
    mtk_ctx_free(ctx);
}

static void binary_ops_broadcast_and_keep_the_inputs_layout(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    /* (2,3,4).permute(2,0,1) + itself keeps the permutation */
    mtk_tensor *p = meta(ctx, MTK_FLOAT32, 3, SHAPE(4, 2, 3), SHAPE(1, 12, 4));
    assert_layout(mtk_add(ctx, p, p), MTK_FLOAT32, 3, SHAPE(4, 2, 3), SHAPE(1, 12, 4));
    mtk_tensor *a = meta(ctx, MTK_FLOAT32, 3, SHAPE(4, 2, 3), NULL), *b = meta(ctx, MTK_FLOAT32, 1, SHAPE(3), NULL);
    assert_layout(mtk_add(ctx, a, b), MTK_FLOAT32, 3, SHAPE(4, 2, 3), SHAPE(6, 3, 1));
    /* channels_last wins when every input has it, or when it comes first */
    mtk_tensor *cl = meta(ctx, MTK_FLOAT32, 4, SHAPE(2, 3, 4, 5), SHAPE(60, 1, 15, 3));
    mtk_tensor *c = meta(ctx, MTK_FLOAT32, 4, SHAPE(2, 3, 4, 5), NULL);
    assert_layout(mtk_add(ctx, cl, cl), MTK_FLOAT32, 4, SHAPE(2, 3, 4, 5), SHAPE(60, 1, 15, 3));
    assert_layout(mtk_add_scalar(ctx, cl, mtk_value_int(1)), MTK_FLOAT32, 4, SHAPE(2, 3, 4, 5), SHAPE(60, 1, 15, 3));
    assert_layout(mtk_mul(ctx, cl, c), MTK_FLOAT32, 4, SHAPE(2, 3, 4, 5), SHAPE(60, 1, 15, 3));
    assert_layout(mtk_mul(ctx, c, cl), MTK_FLOAT32, 4, SHAPE(2, 3, 4, 5), SHAPE(60, 20, 5, 1));
    mtk_ctx_free(ctx);
}

static void unary_ops_make_non_dense_inputs_dense_in_their_order(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    /* torch.empty(6, 4)[::2].t(): shape (4, 3), strides (1, 8) */
    mtk_tensor *s = meta(ctx, MTK_FLOAT32, 2, SHAPE(4, 3), SHAPE(1, 8));
    assert_layout(mtk_exp(ctx, s), MTK_FLOAT32, 2, SHAPE(4, 3), SHAPE(1, 4));
    mtk_tensor *e = meta(ctx, MTK_FLOAT32, 2, SHAPE(4, 3), SHAPE(0, 1)); /* expanded */
    assert_layout(mtk_sin(ctx, e), MTK_FLOAT32, 2, SHAPE(4, 3), SHAPE(3, 1));
    mtk_tensor *z = meta(ctx, MTK_FLOAT32, 3, SHAPE(3, 2, 0), SHAPE(1, 3, 3)); /* size 0 */
    assert_layout(mtk_add_scalar(ctx, z, mtk_value_int(1)), MTK_FLOAT32, 3, SHAPE(3, 2, 0), SHAPE(2, 1, 1));
    mtk_ctx_free(ctx);
}

/* A 0-dim cpu tensor is a "cpu scalar" that drops out of the stride rule
 * only among tensors of another device; on cpu it takes part as a 0-dim
 * meta tensor does on meta (torch: (1, 1) on both, (3, 1) for a cpu
 * scalar with a meta tensor). */
static void zero_dim_cpu_operands_take_part_on_cpu(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    /* select(movedim(f16[2,3,1], 1, 2), 0, -1): shape (1, 3), strides (1, 1) */
    mtk_tensor *y = mtk_tensor_new(ctx, MTK_FLOAT16, SHAPE(1, 3), 2, SHAPE(1, 1), MTK_DEVICE_CPU);
    assert_true(mtk_tensor_alloc_storage(y));
    mtk_tensor *s = cpu(ctx, MTK_INT16, 0, NULL, VALUES(0));
    assert_layout(mtk_ge(ctx, s, y), MTK_BOOL, 2, SHAPE(1, 3), SHAPE(1, 1));
    mtk_tensor *ym = meta(ctx, MTK_FLOAT16, 2, SHAPE(1, 3), SHAPE(1, 1));
    assert_layout(mtk_ge(ctx, meta(ctx, MTK_INT16, 0, NULL, NULL), ym), MTK_BOOL, 2, SHAPE(1, 3), SHAPE(1, 1));
    assert_layout(mtk_ge(ctx, s, ym), MTK_BOOL, 2, SHAPE(1, 3), SHAPE(3, 1));
    mtk_ctx_free(ctx);
}

/* relu is where(le(x, 0), 0, x) on torch's meta; a bool x meets the int 0
 * as int64, which converts (and so re-lays out) a non-dense input */
static void relu_of_a_bool_converts_in_its_decomposition(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    /* transpose(narrow(bool[1,3,2,3], 3, -1, 1), 0, 3) */
    const int64_t *shape = SHAPE(1, 3, 2, 1), *stride = SHAPE(1, 6, 3, 18);
    assert_layout(mtk_relu(ctx, meta(ctx, MTK_BOOL, 4, shape, stride)), MTK_BOOL, 4, shape, SHAPE(6, 2, 1, 2));
    assert_layout(mtk_relu(ctx, meta(ctx, MTK_INT32, 4, shape, stride)), MTK_INT32, 4, shape, SHAPE(1, 2, 1, 6));
    assert_layout(mtk_relu(ctx, meta(ctx, MTK_FLOAT16, 4, shape, stride)), MTK_FLOAT16, 4, shape, SHAPE(6, 2, 1, 2));
    mtk_ctx_free(ctx);
}

/* torch's meta (its Python references) lays out size-1 dims by sorting,
 * not as TensorIterator's contiguous fast path does; relu is
 * where(x <= 0, 0, x), whose scalar tensor changes the outcome */
static void meta_strides_follow_torch_references_for_size_one_dims(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_tensor *x = meta(ctx, MTK_FLOAT32, 4, SHAPE(4, 1, 3, 2), SHAPE(6, 1, 2, 1));
    assert_layout(mtk_neg(ctx, x), MTK_FLOAT32, 4, SHAPE(4, 1, 3, 2), SHAPE(6, 1, 2, 1));
    mtk_tensor *y = meta(ctx, MTK_FLOAT32, 4, SHAPE(3, 3, 1, 4), SHAPE(12, 4, 100, 1));
    assert_layout(mtk_relu(ctx, y), MTK_FLOAT32, 4, SHAPE(3, 3, 1, 4), SHAPE(12, 4, 12, 1));
    assert_layout(mtk_neg(ctx, y), MTK_FLOAT32, 4, SHAPE(3, 3, 1, 4), SHAPE(12, 4, 4, 1));
    mtk_ctx_free(ctx);
}

/* A cpu tensor of shape[ndim] with the given strides (storage allocated). */
static mtk_tensor *cpu_strided(mtk_ctx *ctx, mtk_dtype dtype, int32_t ndim, const int64_t *shape,
                               const int64_t *stride)
{
    mtk_tensor *t = mtk_tensor_new(ctx, dtype, shape, ndim, stride, MTK_DEVICE_CPU);
    assert_non_null(t);
    assert_true(mtk_tensor_alloc_storage(t));
    return t;
}

/* torch's cpu runs an element-wise op as one TensorIterator: inputs of one
 * shape that are dense with equal strides lend them to the output, odd
 * strides of size-1 dims included (meta re-lays those dims out). */
static void cpu_iterator_keeps_dense_inputs_strides(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    const int64_t *shape = SHAPE(3, 1, 4), *odd = SHAPE(1, 5, 3);
    assert_layout(mtk_sigmoid(ctx, cpu_strided(ctx, MTK_FLOAT32, 3, shape, odd)), MTK_FLOAT32, 3, shape, odd);
    /* an int32 input is converted to float32 first, keeping its strides */
    assert_layout(mtk_sigmoid(ctx, cpu_strided(ctx, MTK_INT32, 3, shape, odd)), MTK_FLOAT32, 3, shape, odd);
    assert_layout(mtk_sigmoid(ctx, meta(ctx, MTK_FLOAT32, 3, shape, odd)), MTK_FLOAT32, 3, shape, SHAPE(1, 12, 3));
    /* f32 + f64 of the same layout: the f32 one converts keeping strides */
    mtk_tensor *lo = cpu_strided(ctx, MTK_FLOAT64, 3, shape, odd);
    assert_layout(mtk_clamp(ctx, cpu_strided(ctx, MTK_FLOAT32, 3, shape, odd), mtk_value_tensor(lo), mtk_value_none()),
                  MTK_FLOAT64, 3, shape, odd);
    /* not dense: the stride-sorting order, size-1 dim laid out in it */
    mtk_tensor *y = cpu_strided(ctx, MTK_FLOAT32, 3, SHAPE(3, 2, 4), SHAPE(1, 24, 3));
    assert_layout(mtk_neg(ctx, y), MTK_FLOAT32, 3, SHAPE(3, 2, 4), SHAPE(1, 12, 3));
    /* pow of a number base is laid out contiguous in the exponent's shape */
    assert_layout(mtk_pow_scalar_base(ctx, mtk_value_int(2), y), MTK_FLOAT32, 3, SHAPE(3, 2, 4), SHAPE(8, 4, 1));
    mtk_ctx_free(ctx);
}

/* A Python number or 0-dim tensor is an operand of the cpu iterator (no
 * fast path then), and its dense strides of empty outputs multiply by the
 * size 0 (torch: add(f32 (0,1,3) strides (1,5,7), f32[3]) has strides
 * (1, 0, 0) on cpu, (3, 3, 1) on meta). */
static void cpu_iterator_lays_out_empty_and_scalar_operands_as_torch(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_tensor *a = cpu_strided(ctx, MTK_FLOAT32, 3, SHAPE(0, 1, 3), SHAPE(1, 5, 7));
    mtk_tensor *b = cpu_strided(ctx, MTK_FLOAT32, 1, SHAPE(3), NULL);
    assert_layout(mtk_add(ctx, a, b), MTK_FLOAT32, 3, SHAPE(0, 1, 3), SHAPE(1, 0, 0));
    assert_layout(mtk_mul_scalar(ctx, a, mtk_value_int(2)), MTK_FLOAT32, 3, SHAPE(0, 1, 3), SHAPE(1, 0, 0));
    mtk_tensor *am = meta(ctx, MTK_FLOAT32, 3, SHAPE(0, 1, 3), SHAPE(1, 5, 7));
    assert_layout(mtk_add(ctx, am, meta(ctx, MTK_FLOAT32, 1, SHAPE(3), NULL)), MTK_FLOAT32, 3, SHAPE(0, 1, 3),
                  SHAPE(3, 3, 1));
    /* clamp with number bounds iterates over the input alone: all
     * inputs (one, empty) contiguous gives contiguous strides */
    mtk_tensor *e = cpu_strided(ctx, MTK_INT8, 4, SHAPE(0, 4, 5, 2), SHAPE(40, 1, 8, 4));
    assert_layout(mtk_clamp(ctx, e, mtk_value_int(-2), mtk_value_none()), MTK_INT8, 4, SHAPE(0, 4, 5, 2),
                  SHAPE(40, 10, 2, 1));
    /* where(transpose(u8[2,0,2,5,1], 1, 0), transpose(f64[0,2,2,1,5], 4, 3), 1) */
    mtk_tensor *c = cpu_strided(ctx, MTK_UINT8, 5, SHAPE(0, 2, 2, 5, 1), SHAPE(10, 10, 5, 1, 1));
    mtk_tensor *v = cpu_strided(ctx, MTK_FLOAT64, 5, SHAPE(0, 2, 2, 5, 1), SHAPE(20, 10, 5, 1, 5));
    assert_layout(mtk_where_values(ctx, c, mtk_value_tensor(v), mtk_value_int(1)), MTK_FLOAT64, 5,
                  SHAPE(0, 2, 2, 5, 1), SHAPE(10, 0, 5, 1, 5));
    mtk_ctx_free(ctx);
}

/* isinf of floats is abs(x) == inf on cpu (two iterators, the second with
 * a number operand), of integers zeros_like(x); hardtanh writes into
 * empty_like(x) */
static void cpu_composite_ops_chain_their_iterators(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    const int64_t *shape = SHAPE(2, 1, 3), *odd = SHAPE(1, 9, 2);
    assert_layout(mtk_isinf(ctx, cpu_strided(ctx, MTK_FLOAT32, 3, shape, odd)), MTK_BOOL, 3, shape, SHAPE(1, 6, 2));
    assert_layout(mtk_isinf(ctx, cpu_strided(ctx, MTK_INT32, 3, shape, odd)), MTK_BOOL, 3, shape, odd);
    assert_layout(mtk_hardtanh(ctx, cpu_strided(ctx, MTK_FLOAT32, 3, shape, odd), -1.0, 1.0), MTK_FLOAT32, 3, shape,
                  odd);
    assert_layout(mtk_isinf(ctx, meta(ctx, MTK_INT32, 3, shape, odd)), MTK_BOOL, 3, shape, SHAPE(1, 6, 2));
    mtk_ctx_free(ctx);
}

static void where_broadcasts_three_ways_with_the_promoted_dtype(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_tensor *cond = meta(ctx, MTK_BOOL, 3, SHAPE(4, 2, 3), NULL);
    mtk_tensor *a = meta(ctx, MTK_FLOAT32, 3, SHAPE(4, 2, 3), SHAPE(1, 12, 4));
    mtk_tensor *b = meta(ctx, MTK_FLOAT64, 1, SHAPE(3), NULL);
    assert_layout(mtk_where(ctx, cond, a, b), MTK_FLOAT64, 3, SHAPE(4, 2, 3), SHAPE(6, 3, 1));
    mtk_tensor *w = mtk_where_values(ctx, cond, mtk_value_int(2), mtk_value_int(3));
    assert_layout(w, MTK_INT64, 3, SHAPE(4, 2, 3), SHAPE(6, 3, 1));
    mtk_tensor *i8 = meta(ctx, MTK_INT8, 1, SHAPE(3), NULL);
    assert_int_equal(mtk_where_values(ctx, cond, mtk_value_tensor(i8), mtk_value_float(3.5))->dtype, MTK_FLOAT32);
    assert_int_equal(mtk_where_values(ctx, cond, mtk_value_tensor(i8), mtk_value_int(3))->dtype, MTK_INT8);
    mtk_tensor *bad = meta(ctx, MTK_FLOAT32, 1, SHAPE(2), NULL);
    assert_null(mtk_where(ctx, cond, a, bad));
    assert_error(ctx, MTK_ERR_SHAPE, "must match the size of tensor b");
    mtk_ctx_free(ctx);
}

/* -------------------------------------------------------------- dtypes */

static void integer_inputs_promote_to_the_default_float(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_tensor *i = meta(ctx, MTK_INT32, 1, SHAPE(3), NULL);
    mtk_tensor *b = meta(ctx, MTK_BOOL, 1, SHAPE(3), NULL);
    assert_int_equal(mtk_exp(ctx, i)->dtype, MTK_FLOAT32);
    assert_int_equal(mtk_sigmoid(ctx, b)->dtype, MTK_FLOAT32);
    assert_int_equal(mtk_div(ctx, i, i)->dtype, MTK_FLOAT32);
    assert_int_equal(mtk_div_rounding(ctx, i, mtk_value_tensor(i), "floor")->dtype, MTK_INT32);
    assert_int_equal(mtk_atan2(ctx, i, i)->dtype, MTK_FLOAT32);
    assert_int_equal(mtk_square(ctx, b)->dtype, MTK_INT64);
    assert_int_equal(mtk_abs(ctx, i)->dtype, MTK_INT32);
    assert_int_equal(mtk_isnan(ctx, i)->dtype, MTK_BOOL);
    assert_int_equal(mtk_logical_not(ctx, i)->dtype, MTK_BOOL);
    assert_int_equal(mtk_lt_scalar(ctx, i, mtk_value_float(2.5))->dtype, MTK_BOOL);
    assert_true(mtk_ctx_push_dtype(ctx, MTK_FLOAT64));
    assert_int_equal(mtk_exp(ctx, i)->dtype, MTK_FLOAT64);
    assert_int_equal(mtk_add_scalar(ctx, i, mtk_value_float(0.5))->dtype, MTK_FLOAT64);
    assert_true(mtk_ctx_pop_dtype(ctx));
    mtk_ctx_free(ctx);
}

static void python_numbers_do_not_widen_tensors_of_their_category(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_tensor *i8 = meta(ctx, MTK_INT8, 1, SHAPE(3), NULL);
    mtk_tensor *h = meta(ctx, MTK_FLOAT16, 1, SHAPE(3), NULL);
    assert_int_equal(mtk_add_scalar(ctx, i8, mtk_value_int(1000))->dtype, MTK_INT8);
    assert_int_equal(mtk_mul_scalar(ctx, h, mtk_value_float(1e10))->dtype, MTK_FLOAT16);
    assert_int_equal(mtk_mul_scalar(ctx, i8, mtk_value_float(0.5))->dtype, MTK_FLOAT32);
    assert_int_equal(mtk_pow_scalar_base(ctx, mtk_value_int(2), i8)->dtype, MTK_INT8);
    assert_int_equal(mtk_pow_scalar_base(ctx, mtk_value_float(2.5), i8)->dtype, MTK_FLOAT32);
    assert_int_equal(mtk_clamp(ctx, i8, mtk_value_float(2.5), mtk_value_none())->dtype, MTK_FLOAT32);
    assert_int_equal(mtk_clamp(ctx, i8, mtk_value_none(), mtk_value_int(2))->dtype, MTK_INT8);
    mtk_ctx_free(ctx);
}

/* ---------------------------------------------------------- cpu values */

static void cpu_add_of_int_and_python_float_gives_float32(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_tensor *x = cpu(ctx, MTK_INT32, 2, SHAPE(2, 3), VALUES(1, -2, 3, 4, 5, -6));
    mtk_tensor *r = mtk_add_scalar(ctx, x, mtk_value_float(2.5));
    assert_int_equal(r->dtype, MTK_FLOAT32);
    assert_values(r, 6, VALUES(3.5, 0.5, 5.5, 6.5, 7.5, -3.5));
    /* the int is cast to int8 first, then the sum wraps */
    mtk_tensor *x8 = cpu(ctx, MTK_INT8, 2, SHAPE(2, 3), VALUES(1, -2, 3, 4, 5, -6));
    assert_values(mtk_add_scalar(ctx, x8, mtk_value_int(1000)), 6, VALUES(-23, -26, -21, -20, -19, -30));
    mtk_ctx_free(ctx);
}

static void cpu_kernels_read_transposed_and_broadcast_inputs(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_tensor *x = cpu(ctx, MTK_FLOAT32, 2, SHAPE(2, 3), VALUES(1.5, -2.25, 3, 4, 0.5, -6));
    mtk_tensor *xt = mtk_tensor_alias(x); /* x.t(): (3, 2), strides (1, 3) */
    xt->shape[0] = 3, xt->shape[1] = 2, xt->stride[0] = 1, xt->stride[1] = 3;
    mtk_tensor *row = cpu(ctx, MTK_FLOAT32, 1, SHAPE(2), VALUES(10, 20));
    assert_values(mtk_mul(ctx, xt, row), 6, VALUES(15, 80, -22.5, 10, 30, -120));
    mtk_ctx_free(ctx);
}

static void cpu_division_rounds_as_requested(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_tensor *a = cpu(ctx, MTK_INT64, 1, SHAPE(4), VALUES(7, -7, 7, -7));
    mtk_tensor *b = cpu(ctx, MTK_INT64, 1, SHAPE(4), VALUES(2, 2, -2, -2));
    assert_values(mtk_div(ctx, a, b), 4, VALUES(3.5, -3.5, -3.5, 3.5));
    assert_values(mtk_div_rounding(ctx, a, mtk_value_tensor(b), "trunc"), 4, VALUES(3, -3, -3, 3));
    assert_values(mtk_div_rounding(ctx, a, mtk_value_tensor(b), "floor"), 4, VALUES(3, -4, -4, 3));
    assert_values(mtk_floor_divide(ctx, a, b), 4, VALUES(3, -4, -4, 3));
    mtk_tensor *c = cpu(ctx, MTK_INT64, 1, SHAPE(4), VALUES(3, 3, -3, -3));
    assert_values(mtk_remainder(ctx, a, c), 4, VALUES(1, 2, -2, -1));
    assert_values(mtk_fmod(ctx, a, c), 4, VALUES(1, -1, 1, -1));
    mtk_tensor *f = cpu(ctx, MTK_FLOAT32, 1, SHAPE(4), VALUES(7.5, -7.5, 7.5, -0.0));
    mtk_tensor *g = cpu(ctx, MTK_FLOAT32, 1, SHAPE(4), VALUES(2, 2, -2, 3));
    assert_values(mtk_div_rounding(ctx, f, mtk_value_tensor(g), "floor"), 4, VALUES(3, -4, -4, -0.0));
    mtk_tensor *h = cpu(ctx, MTK_FLOAT32, 1, SHAPE(2), VALUES(5.5, -5.5));
    assert_values(mtk_remainder_scalar(ctx, h, mtk_value_float(2.0)), 2, VALUES(1.5, 0.5));
    assert_values(mtk_fmod_scalar(ctx, h, mtk_value_float(2.0)), 2, VALUES(1.5, -1.5));
    mtk_ctx_free(ctx);
}

/* PyTorch raises ZeroDivisionError for integer division by zero; INT64_MIN
 * / -1 wraps (torch's own cpu kernel traps on it) */
static void integer_division_by_zero_is_an_error_not_a_crash(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_tensor *a = cpu(ctx, MTK_INT8, 1, SHAPE(2), VALUES(1, 2));
    assert_null(mtk_div_rounding(ctx, a, mtk_value_int(0), "trunc"));
    assert_error(ctx, MTK_ERR_INVALID_ARGUMENT, "ZeroDivisionError");
    assert_null(mtk_remainder_scalar(ctx, a, mtk_value_int(0)));
    assert_error(ctx, MTK_ERR_INVALID_ARGUMENT, "ZeroDivisionError");
    assert_values(mtk_div_scalar(ctx, a, mtk_value_int(0)), 2, VALUES(INFINITY, INFINITY));
    mtk_tensor *m = cpu(ctx, MTK_INT64, 1, SHAPE(1), VALUES(0));
    *(int64_t *)mtk_tensor_data(m) = INT64_MIN;
    mtk_tensor *q = mtk_floor_divide_scalar(ctx, m, mtk_value_int(-1));
    assert_int_equal(*(int64_t *)mtk_tensor_data(q), INT64_MIN);
    assert_values(mtk_remainder_scalar(ctx, m, mtk_value_int(-1)), 1, VALUES(0));
    mtk_ctx_free(ctx);
}

/* bfloat16 * 0.1: PyTorch multiplies by the unrounded scalar in float */
static void reduced_float_scalars_stay_unrounded_in_mul(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_tensor *b = cpu(ctx, MTK_BFLOAT16, 1, SHAPE(3), VALUES(9, 13, 18));
    assert_values(mtk_mul_scalar(ctx, b, mtk_value_float(0.1)), 3, VALUES(0.8984375, 1.296875, 1.796875));
    mtk_tensor *h = cpu(ctx, MTK_FLOAT16, 1, SHAPE(2), VALUES(1.0, 2049.0));
    mtk_tensor *k = cpu(ctx, MTK_FLOAT16, 1, SHAPE(2), VALUES(0.0004, 1.0));
    assert_values(mtk_add(ctx, h, k), 2, VALUES(1.0, 2048.0));
    mtk_ctx_free(ctx);
}

static void pow_takes_tensors_and_numbers_on_either_side(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_tensor *i = cpu(ctx, MTK_INT64, 1, SHAPE(3), VALUES(2, -3, 0));
    assert_values(mtk_pow_scalar(ctx, i, mtk_value_int(3)), 3, VALUES(8, -27, 0));
    mtk_tensor *e = cpu(ctx, MTK_INT64, 1, SHAPE(3), VALUES(0, 3, -1));
    assert_values(mtk_pow_scalar_base(ctx, mtk_value_int(2), e), 3, VALUES(1, 8, 0));
    mtk_tensor *base = cpu(ctx, MTK_INT64, 1, SHAPE(4), VALUES(2, -1, 1, 3));
    mtk_tensor *expo = cpu(ctx, MTK_INT64, 1, SHAPE(4), VALUES(-1, -3, -5, 2));
    assert_values(mtk_pow(ctx, base, expo), 4, VALUES(0, -1, 1, 9));
    mtk_tensor *f = cpu(ctx, MTK_FLOAT32, 1, SHAPE(2), VALUES(4, 2));
    assert_values(mtk_pow_scalar(ctx, f, mtk_value_float(0.5)), 2, VALUES(2.0, 1.4142135381698608));
    assert_null(mtk_pow_scalar(ctx, i, mtk_value_int(-1)));
    assert_error(ctx, MTK_ERR_INVALID_ARGUMENT, "Integers to negative integer powers are not allowed.");
    /* bool ** bool is int64 on meta, and has no cpu kernel */
    mtk_tensor *b = meta(ctx, MTK_BOOL, 1, SHAPE(2), NULL);
    assert_int_equal(mtk_pow(ctx, b, b)->dtype, MTK_INT64);
    mtk_ctx_free(ctx);
}

static void unary_math_matches_torch_values(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_tensor *i = cpu(ctx, MTK_INT32, 1, SHAPE(2), VALUES(0, 1));
    assert_close(mtk_exp(ctx, i), 2, VALUES(1.0, 2.7182817459106445));
    mtk_tensor *x = cpu(ctx, MTK_FLOAT32, 1, SHAPE(3), VALUES(-1, 0, 2));
    assert_close(mtk_sigmoid(ctx, x), 3, VALUES(0.2689414322376251, 0.5, 0.8807970285415649));
    mtk_tensor *r = cpu(ctx, MTK_FLOAT32, 1, SHAPE(5), VALUES(0.5, 1.5, 2.5, -2.5, 1.2345));
    assert_values(mtk_round(ctx, r), 5, VALUES(0, 2, 2, -2, 1));
    mtk_tensor *d = cpu(ctx, MTK_FLOAT32, 2, SHAPE(1, 2), VALUES(1.2345, 1255.0));
    assert_values(mtk_round_decimals(ctx, d, 2), 2, VALUES(1.2300000190734863, 1255.0));
    assert_values(mtk_round_decimals(ctx, d, -1), 2, VALUES(0, 1260));
    mtk_tensor *s = cpu(ctx, MTK_FLOAT32, 1, SHAPE(4), VALUES(-2, 0, NAN, 3));
    assert_values(mtk_sign(ctx, s), 4, VALUES(-1, 0, 0, 1));
    mtk_tensor *u = cpu(ctx, MTK_UINT8, 1, SHAPE(2), VALUES(1, 0));
    assert_values(mtk_neg(ctx, u), 2, VALUES(255, 0));
    assert_values(mtk_bitwise_not(ctx, u), 2, VALUES(254, 255));
    mtk_tensor *m = cpu(ctx, MTK_INT8, 1, SHAPE(1), VALUES(-128));
    assert_values(mtk_abs(ctx, m), 1, VALUES(-128));
    mtk_tensor *bl = cpu(ctx, MTK_BOOL, 1, SHAPE(2), VALUES(1, 0));
    assert_values(mtk_bitwise_not(ctx, bl), 2, VALUES(0, 1));
    assert_values(mtk_square(ctx, bl), 2, VALUES(1, 0));
    mtk_ctx_free(ctx);
}

static void nan_and_inf_predicates_and_propagation(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_tensor *x = cpu(ctx, MTK_FLOAT32, 1, SHAPE(3), VALUES(1, NAN, -INFINITY));
    assert_values(mtk_isnan(ctx, x), 3, VALUES(0, 1, 0));
    assert_values(mtk_isinf(ctx, x), 3, VALUES(0, 0, 1));
    assert_values(mtk_isfinite(ctx, x), 3, VALUES(1, 0, 0));
    mtk_tensor *a = cpu(ctx, MTK_FLOAT32, 1, SHAPE(3), VALUES(1, NAN, -0.0));
    mtk_tensor *b = cpu(ctx, MTK_FLOAT32, 1, SHAPE(3), VALUES(2, 0, 0));
    assert_values(mtk_maximum(ctx, a, b), 3, VALUES(2, NAN, -0.0));
    mtk_tensor *r = cpu(ctx, MTK_FLOAT32, 1, SHAPE(4), VALUES(NAN, -0.0, 0.0, -2));
    assert_values(mtk_relu(ctx, r), 4, VALUES(NAN, -0.0, 0.0, 0.0));
    mtk_tensor *c = cpu(ctx, MTK_FLOAT32, 1, SHAPE(3), VALUES(1, 5, NAN));
    assert_values(mtk_clamp(ctx, c, mtk_value_int(3), mtk_value_int(2)), 3, VALUES(2, 2, NAN));
    assert_values(mtk_clamp(ctx, c, mtk_value_float(NAN), mtk_value_none()), 3, VALUES(NAN, NAN, NAN));
    mtk_ctx_free(ctx);
}

static void comparisons_logical_and_bitwise_ops(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_tensor *u = cpu(ctx, MTK_UINT8, 1, SHAPE(2), VALUES(44, 45));
    /* 300 is cast to uint8 (44) first */
    assert_values(mtk_eq_scalar(ctx, u, mtk_value_int(300)), 2, VALUES(1, 0));
    mtk_tensor *f = cpu(ctx, MTK_FLOAT32, 1, SHAPE(3), VALUES(0, 1, 2));
    mtk_tensor *i = cpu(ctx, MTK_INT64, 1, SHAPE(3), VALUES(0, 0, 3));
    mtk_tensor *x = mtk_logical_xor(ctx, f, i);
    assert_int_equal(x->dtype, MTK_BOOL);
    assert_values(x, 3, VALUES(0, 1, 0));
    mtk_tensor *b = cpu(ctx, MTK_UINT8, 1, SHAPE(2), VALUES(12, 10));
    mtk_value args[2] = { mtk_value_tensor(b), mtk_value_int(6) };
    assert_values(by_name(ctx, "bitwise_and", 2, args, 0, NULL, NULL), 2, VALUES(4, 2));
    /* floats: fine on meta, no cpu kernel */
    mtk_tensor *m = meta(ctx, MTK_FLOAT32, 1, SHAPE(3), NULL);
    assert_int_equal(mtk_bitwise_and(ctx, m, m)->dtype, MTK_FLOAT32);
    assert_null(mtk_bitwise_and(ctx, f, f));
    assert_error(ctx, MTK_ERR_DTYPE, "\"bitwise_and_cpu\" not implemented for 'Float'");
    mtk_ctx_free(ctx);
}

static void where_and_clamp_values(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_tensor *c = cpu(ctx, MTK_BOOL, 1, SHAPE(3), VALUES(1, 0, 1));
    mtk_tensor *a = cpu(ctx, MTK_INT8, 1, SHAPE(3), VALUES(1, 2, 3));
    mtk_tensor *w = mtk_where_values(ctx, c, mtk_value_tensor(a), mtk_value_float(2.5));
    assert_int_equal(w->dtype, MTK_FLOAT32);
    assert_values(w, 3, VALUES(1, 2.5, 3));
    mtk_tensor *u = cpu(ctx, MTK_UINT8, 1, SHAPE(3), VALUES(1, 2, 200));
    assert_null(mtk_where_values(ctx, c, mtk_value_tensor(u), mtk_value_int(300)));
    assert_error(ctx, MTK_ERR_OVERFLOW, "value cannot be converted to type uint8_t without overflow");
    assert_values(mtk_where_values(ctx, c, mtk_value_tensor(u), mtk_value_int(-1)), 3, VALUES(1, 255, 200));
    mtk_tensor *i = cpu(ctx, MTK_INT32, 1, SHAPE(3), VALUES(1, 5, 9));
    assert_values(mtk_clamp(ctx, i, mtk_value_float(2.5), mtk_value_none()), 3, VALUES(2.5, 5, 9));
    assert_null(mtk_clamp(ctx, u, mtk_value_none(), mtk_value_int(300)));
    assert_error(ctx, MTK_ERR_OVERFLOW, "without overflow");
    mtk_ctx_free(ctx);
}

static void activations_match_torch_values(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_tensor *x = cpu(ctx, MTK_FLOAT32, 1, SHAPE(3), VALUES(-1, 0.5, 2));
    assert_close(mtk_gelu(ctx, x, "tanh"), 3, VALUES(-0.15880799293518066, 0.3457140028476715, 1.9545977115631104));
    assert_close(mtk_gelu(ctx, x, NULL), 3, VALUES(-0.15865525603294373, 0.3457312285900116, 1.9544997215270996));
    assert_close(mtk_silu(ctx, x), 3, VALUES(-0.2689414322376251, 0.3112296760082245, 1.7615940570831299));
    mtk_tensor *s = cpu(ctx, MTK_FLOAT32, 1, SHAPE(3), VALUES(-1, 0.5, 30));
    assert_close(mtk_softplus(ctx, s, 1, 20), 3, VALUES(0.3132616877555847, 0.9740769863128662, 30));
    assert_close(mtk_softplus(ctx, s, 2, 1), 3, VALUES(0.06346400082111359, 0.65663081407547, 30));
    mtk_tensor *h = cpu(ctx, MTK_FLOAT32, 1, SHAPE(3), VALUES(-4, 0.5, 4));
    assert_values(mtk_hardswish(ctx, h), 3, VALUES(-0.0, 0.2916666567325592, 4));
    mtk_tensor *e = cpu(ctx, MTK_FLOAT32, 1, SHAPE(2), VALUES(-1, 0.5));
    assert_close(mtk_elu(ctx, e, 1.0), 2, VALUES(-0.6321205496788025, 0.5));
    assert_values(mtk_leaky_relu(ctx, e, 0.01), 2, VALUES(-0.009999999776482582, 0.5));
    /* integers: meta accepts silu, the cpu kernel does not; elu refuses them */
    mtk_tensor *mi = meta(ctx, MTK_INT64, 1, SHAPE(2), NULL);
    assert_int_equal(mtk_silu(ctx, mi)->dtype, MTK_INT64);
    mtk_tensor *ci = cpu(ctx, MTK_INT64, 1, SHAPE(2), VALUES(1, 2));
    assert_null(mtk_silu(ctx, ci));
    assert_error(ctx, MTK_ERR_DTYPE, "\"silu_cpu\" not implemented for 'Long'");
    assert_null(mtk_elu(ctx, mi, 1.0));
    assert_error(ctx, MTK_ERR_DTYPE, "not implemented for 'Long'");
    mtk_tensor *u = meta(ctx, MTK_UINT8, 1, SHAPE(2), NULL);
    assert_null(mtk_hardtanh(ctx, u, -1, 1));
    assert_error(ctx, MTK_ERR_DTYPE, "Cannot do hardtanh on an unsigned type with negative limits");
    assert_null(mtk_gelu(ctx, x, "fast"));
    assert_error(ctx, MTK_ERR_INVALID_ARGUMENT, "approximate argument must be either none or tanh.");
    mtk_ctx_free(ctx);
}

/* ----------------------------------------------------------------- errors */

static void bool_negation_and_subtraction_are_refused(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_tensor *b = meta(ctx, MTK_BOOL, 1, SHAPE(3), NULL);
    mtk_tensor *f = meta(ctx, MTK_FLOAT32, 1, SHAPE(3), NULL);
    assert_null(mtk_neg(ctx, b));
    assert_error(ctx, MTK_ERR_DTYPE,
                 "Negation, the `-` operator, on a bool tensor is not supported. If you are trying to invert a "
                 "mask, use the `~` or `logical_not()` operator instead.");
    assert_null(mtk_positive(ctx, b));
    assert_error(ctx, MTK_ERR_DTYPE, "The `+` operator, on a bool tensor is not supported.");
    assert_null(mtk_sub(ctx, b, b));
    assert_error(ctx, MTK_ERR_DTYPE, "with two bool tensors is not supported. Use the `^` or `logical_xor()`");
    /* one bool tensor: torch's meta computes float32, its cpu kernel refuses */
    assert_int_equal(mtk_sub(ctx, b, f)->dtype, MTK_FLOAT32);
    mtk_tensor *cb = cpu(ctx, MTK_BOOL, 1, SHAPE(1), VALUES(1));
    mtk_tensor *cf = cpu(ctx, MTK_FLOAT32, 1, SHAPE(1), VALUES(1));
    assert_null(mtk_sub(ctx, cb, cf));
    assert_error(ctx, MTK_ERR_DTYPE, "Subtraction, the `-` operator, with a bool tensor is not supported.");
    mtk_ctx_free(ctx);
}

static void alpha_must_fit_the_result_type(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_tensor *i = meta(ctx, MTK_INT8, 1, SHAPE(3), NULL);
    assert_null(mtk_add_alpha(ctx, i, i, mtk_value_float(2.5)));
    assert_error(ctx, MTK_ERR_DTYPE, "alpha argument of type <class 'float'> cannot be safely cast to type <class 'int'>!");
    mtk_tensor *ci = cpu(ctx, MTK_INT32, 1, SHAPE(2), VALUES(1, 2));
    assert_values(mtk_sub_alpha(ctx, ci, ci, mtk_value_int(3)), 2, VALUES(-2, -4));
    mtk_tensor *cf = cpu(ctx, MTK_FLOAT32, 1, SHAPE(2), VALUES(1, 2));
    assert_null(mtk_add_alpha(ctx, cf, cf, mtk_value_bool(true)));
    assert_error(ctx, MTK_ERR_DTYPE, "Boolean alpha only supported for Boolean results.");
    /* bool tensors: the kernel's alpha is a bool too, so alpha=-1 adds
     * like alpha=True (torch: [F, T] + [F, T] * -1 == [F, T]) */
    mtk_tensor *cb = cpu(ctx, MTK_BOOL, 1, SHAPE(2), VALUES(0, 1));
    mtk_tensor *sum = mtk_add_alpha(ctx, cb, cb, mtk_value_int(-1));
    assert_int_equal(sum->dtype, MTK_BOOL);
    assert_values(sum, 2, VALUES(0, 1));
    assert_values(mtk_add_alpha(ctx, cb, cb, mtk_value_int(0)), 2, VALUES(0, 1));
    mtk_ctx_free(ctx);
}

static void float8_has_no_arithmetic_kernels_on_cpu(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_tensor *m = meta(ctx, MTK_FLOAT8_E4M3FN, 1, SHAPE(2), NULL);
    assert_int_equal(mtk_add(ctx, m, m)->dtype, MTK_FLOAT8_E4M3FN);
    mtk_tensor *f = meta(ctx, MTK_FLOAT32, 1, SHAPE(2), NULL);
    assert_int_equal(mtk_add(ctx, m, f)->dtype, MTK_FLOAT8_E4M3FN); /* torch's meta: float8 wins */
    mtk_tensor *c = cpu(ctx, MTK_FLOAT8_E4M3FN, 1, SHAPE(2), VALUES(-1.5, 2));
    assert_values(mtk_abs(ctx, c), 2, VALUES(1.5, 2)); /* abs has one */
    assert_null(mtk_neg(ctx, c));
    assert_error(ctx, MTK_ERR_DTYPE, "\"neg_cpu\" not implemented for 'Float8_e4m3fn'");
    mtk_tensor *cf = cpu(ctx, MTK_FLOAT32, 1, SHAPE(2), VALUES(1, 2));
    assert_null(mtk_add(ctx, c, cf));
    assert_error(ctx, MTK_ERR_DTYPE, "Promotion for Float8 Types is not supported");
    mtk_ctx_free(ctx);
}

static void where_wants_a_bool_condition(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_tensor *f = meta(ctx, MTK_FLOAT32, 1, SHAPE(3), NULL);
    assert_null(mtk_where(ctx, f, f, f));
    assert_error(ctx, MTK_ERR_DTYPE, "where expected condition to be a boolean tensor, but got a tensor with dtype Float");
    /* uint8: deprecated; torch's cpu still takes it, its meta does not */
    mtk_tensor *mu = meta(ctx, MTK_UINT8, 1, SHAPE(3), NULL);
    assert_null(mtk_where(ctx, mu, f, f));
    assert_error(ctx, MTK_ERR_DTYPE, "with dtype Byte");
    mtk_tensor *cu = cpu(ctx, MTK_UINT8, 1, SHAPE(2), VALUES(0, 7));
    mtk_tensor *x = cpu(ctx, MTK_FLOAT32, 1, SHAPE(2), VALUES(1, 2));
    assert_values(mtk_where_values(ctx, cu, mtk_value_tensor(x), mtk_value_float(9)), 2, VALUES(9, 2));
    mtk_ctx_free(ctx);
}

/* ---------------------------------------------------------- call by name */

static void ops_called_by_name_accept_numbers_where_torch_does(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_tensor *x = cpu(ctx, MTK_FLOAT32, 1, SHAPE(2), VALUES(1, 3));
    /* torch.sub(2, x, alpha=2) */
    mtk_value pos[2] = { mtk_value_int(2), mtk_value_tensor(x) };
    const char *kw[1] = { "alpha" };
    mtk_value kwv[1] = { mtk_value_int(2) };
    assert_values(by_name(ctx, "torch.sub", 2, pos, 1, kw, kwv), 2, VALUES(0, -4));
    /* torch.add(2, 3) is a 0-dim int64 tensor */
    mtk_value nums[2] = { mtk_value_int(2), mtk_value_int(3) };
    mtk_tensor *five = by_name(ctx, "add", 2, nums, 0, NULL, NULL);
    assert_non_null(five);
    assert_int_equal(five->ndim, 0);
    assert_int_equal(five->dtype, MTK_INT64);
    /* remainder has a Scalar-self overload but no two-number one */
    assert_null(by_name(ctx, "remainder", 2, nums, 0, NULL, NULL));
    assert_error(ctx, MTK_ERR_INVALID_ARGUMENT, "remainder() received an invalid combination of arguments");
    /* eq has no Scalar-self overload at all */
    mtk_value eq_args[2] = { mtk_value_int(2), mtk_value_tensor(x) };
    assert_null(by_name(ctx, "eq", 2, eq_args, 0, NULL, NULL));
    assert_error(ctx, MTK_ERR_INVALID_ARGUMENT, "argument 'input'");
    /* torch.rsub(x, 10) is 10 - x; F.relu(x, inplace=True) returns x */
    mtk_value rs[2] = { mtk_value_tensor(x), mtk_value_int(10) };
    assert_values(by_name(ctx, "rsub", 2, rs, 0, NULL, NULL), 2, VALUES(9, 7));
    mtk_tensor *y = cpu(ctx, MTK_FLOAT32, 1, SHAPE(2), VALUES(-1, 3));
    mtk_value rl[1] = { mtk_value_tensor(y) };
    const char *inplace[1] = { "inplace" };
    mtk_value yes[1] = { mtk_value_bool(true) };
    assert_ptr_equal(by_name(ctx, "F.relu", 1, rl, 1, inplace, yes), y);
    /* two numbers are two wrapped cpu tensors: torch.true_divide(1, True)
     * is a cpu tensor whatever the default device */
    assert_true(mtk_ctx_push_device(ctx, MTK_DEVICE_META));
    mtk_value one_true[2] = { mtk_value_int(1), mtk_value_bool(true) };
    mtk_tensor *q = by_name(ctx, "true_divide", 2, one_true, 0, NULL, NULL);
    assert_non_null(q);
    assert_int_equal(q->device, MTK_DEVICE_CPU);
    assert_int_equal(q->dtype, MTK_FLOAT32);
    assert_values(q, 1, VALUES(1));
    assert_null(by_name(ctx, "sub", 2, one_true, 0, NULL, NULL)); /* its cpu kernel refuses bools */
    assert_error(ctx, MTK_ERR_DTYPE, "Subtraction, the `-` operator, with a bool tensor");
    assert_true(mtk_ctx_pop_device(ctx));
    /* rsub(x, other, alpha) is other - alpha * x; a positional alpha needs
     * a number `other` (torch: rsub(x, 10, 2) = [8, 4]) */
    mtk_value rs_alpha[3] = { mtk_value_tensor(x), mtk_value_int(10), mtk_value_int(2) };
    assert_values(by_name(ctx, "rsub", 3, rs_alpha, 0, NULL, NULL), 2, VALUES(8, 4));
    mtk_value rs_tensor[3] = { mtk_value_tensor(x), mtk_value_tensor(x), mtk_value_int(2) };
    assert_null(by_name(ctx, "rsub", 3, rs_tensor, 0, NULL, NULL));
    assert_error(ctx, MTK_ERR_INVALID_ARGUMENT, "rsub() received an invalid combination of arguments");
    assert_values(y, 2, VALUES(0, 3));
    mtk_value bad[3] = { mtk_value_tensor(x), mtk_value_tensor(x), mtk_value_string("round") };
    const char *mode[1] = { "rounding_mode" };
    assert_null(by_name(ctx, "div", 2, bad, 1, mode, &bad[2]));
    assert_error(ctx, MTK_ERR_INVALID_ARGUMENT,
                 "div expected rounding_mode to be one of None, 'trunc', or 'floor' but found 'round'");
    mtk_ctx_free(ctx);
}

/* pow(bool tensor, True/False): torch's cpu copies the base or fills
 * ones, in bool; its meta says int64; bool ** bool tensor fails on cpu */
static void bool_to_a_bool_power_follows_each_device(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_tensor *b = cpu(ctx, MTK_BOOL, 1, SHAPE(2), VALUES(1, 0));
    mtk_tensor *t = mtk_pow_scalar(ctx, b, mtk_value_bool(true));
    assert_int_equal(t->dtype, MTK_BOOL);
    assert_values(t, 2, VALUES(1, 0));
    assert_values(mtk_pow_scalar(ctx, b, mtk_value_bool(false)), 2, VALUES(1, 1));
    assert_int_equal(mtk_pow_scalar(ctx, meta(ctx, MTK_BOOL, 1, SHAPE(2), NULL), mtk_value_bool(true))->dtype,
                     MTK_INT64);
    assert_null(mtk_pow(ctx, b, b));
    assert_error(ctx, MTK_ERR_DTYPE, "\"pow\" not implemented for 'Bool'");
    mtk_ctx_free(ctx);
}

/* F.leaky_relu: torch's meta takes an integral input when the slope is an
 * int (a bool input: a bool slope); the cpu kernel has floats only */
static void leaky_relu_takes_integers_with_an_int_slope_on_meta(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_value u8[2] = { mtk_value_tensor(meta(ctx, MTK_UINT8, 1, SHAPE(3), NULL)), mtk_value_int(1) };
    mtk_tensor *t = by_name(ctx, "leaky_relu", 2, u8, 0, NULL, NULL);
    assert_non_null(t);
    assert_int_equal(t->dtype, MTK_UINT8);
    u8[1] = mtk_value_float(0.5);
    assert_null(by_name(ctx, "leaky_relu", 2, u8, 0, NULL, NULL));
    assert_error(ctx, MTK_ERR_DTYPE, "negative_slope argument of type <class 'float'> cannot be safely cast");
    mtk_value flag[2] = { mtk_value_tensor(meta(ctx, MTK_BOOL, 1, SHAPE(3), NULL)), mtk_value_int(1) };
    assert_null(by_name(ctx, "leaky_relu", 2, flag, 0, NULL, NULL));
    assert_error(ctx, MTK_ERR_DTYPE, "to type <class 'bool'>");
    mtk_value on_cpu[2] = { mtk_value_tensor(cpu(ctx, MTK_UINT8, 1, SHAPE(3), VALUES(1, 2, 3))), mtk_value_int(1) };
    assert_null(by_name(ctx, "leaky_relu", 2, on_cpu, 0, NULL, NULL));
    assert_error(ctx, MTK_ERR_DTYPE, "\"leaky_relu_cpu\" not implemented for 'Byte'");
    mtk_ctx_free(ctx);
}

static void positive_returns_the_input_and_cost_counts_elements(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_tensor *x = meta(ctx, MTK_FLOAT32, 2, SHAPE(3, 4), NULL);
    assert_ptr_equal(mtk_positive(ctx, x), x);
    const mtk_op_def *add = mtk_op_find("add");
    assert_non_null(add);
    mtk_op_call call;
    mtk_op_call_init(&call, ctx, add);
    call.args[0] = mtk_value_tensor(x);
    call.args[1] = mtk_value_tensor(meta(ctx, MTK_FLOAT32, 1, SHAPE(4), NULL));
    assert_true(mtk_op_run(&call));
    mtk_op_cost cost = add->cost(&call);
    assert_int_equal(cost.elementwise, 12);
    assert_int_equal(cost.flops, 0);
    mtk_ctx_free(ctx);
}

static void null_inputs_pass_through_without_a_new_error(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_tensor *x = meta(ctx, MTK_BOOL, 1, SHAPE(3), NULL);
    mtk_tensor *bad = mtk_neg(ctx, x); /* fails */
    assert_null(bad);
    assert_null(mtk_exp(ctx, mtk_add(ctx, bad, x)));
    assert_error(ctx, MTK_ERR_DTYPE, "Negation"); /* the first error stays */
    mtk_ctx_free(ctx);
}

/* ------------------------------------------------------- out of memory */


/* every allocation an op makes (outputs, wrapped numbers, storage) may
 * fail: the op reports out of memory and leaks nothing */
static void ops_report_out_of_memory_at_every_allocation(void **state)
{
    (void)state;
    for (long n = 1;; n++) {
        injector f = { .fail_at = n };
        mtk_allocator a = { inject_alloc, inject_free, &f };
        mtk_ctx *ctx = mtk_ctx_new_with_allocator(&a);
        if (!ctx) continue;
        bool done = false;
        mtk_tensor *x = mtk_tensor_new(ctx, MTK_INT32, SHAPE(2, 3), 2, NULL, MTK_DEVICE_CPU);
        if (x && mtk_tensor_alloc_storage(x)) {
            memset(mtk_tensor_data(x), 0, 24);
            mtk_tensor *c = mtk_gt_scalar(ctx, x, mtk_value_int(0));
            mtk_tensor *r = mtk_where_values(ctx, c, mtk_value_float(1.5), mtk_value_tensor(x));
            r = mtk_add_scalar(ctx, mtk_clamp(ctx, r, mtk_value_int(0), mtk_value_none()), mtk_value_float(0.5));
            done = r != NULL;
            if (!done) assert_int_equal(mtk_ctx_status(ctx), MTK_ERR_OUT_OF_MEMORY);
        }
        mtk_ctx_free(ctx);
        assert_int_equal(f.live, 0);
        if (done && f.count < n) break;
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(binary_ops_broadcast_and_keep_the_inputs_layout),
        cmocka_unit_test(ternary_ops_compute_as_torch_and_check_its_dtype_rules),
        cmocka_unit_test(unary_ops_make_non_dense_inputs_dense_in_their_order),
        cmocka_unit_test(meta_strides_follow_torch_references_for_size_one_dims),
        cmocka_unit_test(where_broadcasts_three_ways_with_the_promoted_dtype),
        cmocka_unit_test(cpu_iterator_keeps_dense_inputs_strides),
        cmocka_unit_test(cpu_iterator_lays_out_empty_and_scalar_operands_as_torch),
        cmocka_unit_test(cpu_composite_ops_chain_their_iterators),
        cmocka_unit_test(integer_inputs_promote_to_the_default_float),
        cmocka_unit_test(python_numbers_do_not_widen_tensors_of_their_category),
        cmocka_unit_test(cpu_add_of_int_and_python_float_gives_float32),
        cmocka_unit_test(cpu_kernels_read_transposed_and_broadcast_inputs),
        cmocka_unit_test(cpu_division_rounds_as_requested),
        cmocka_unit_test(integer_division_by_zero_is_an_error_not_a_crash),
        cmocka_unit_test(reduced_float_scalars_stay_unrounded_in_mul),
        cmocka_unit_test(pow_takes_tensors_and_numbers_on_either_side),
        cmocka_unit_test(unary_math_matches_torch_values),
        cmocka_unit_test(nan_and_inf_predicates_and_propagation),
        cmocka_unit_test(comparisons_logical_and_bitwise_ops),
        cmocka_unit_test(where_and_clamp_values),
        cmocka_unit_test(activations_match_torch_values),
        cmocka_unit_test(bool_negation_and_subtraction_are_refused),
        cmocka_unit_test(alpha_must_fit_the_result_type),
        cmocka_unit_test(float8_has_no_arithmetic_kernels_on_cpu),
        cmocka_unit_test(where_wants_a_bool_condition),
        cmocka_unit_test(ops_called_by_name_accept_numbers_where_torch_does),
        cmocka_unit_test(zero_dim_cpu_operands_take_part_on_cpu),
        cmocka_unit_test(relu_of_a_bool_converts_in_its_decomposition),
        cmocka_unit_test(bool_to_a_bool_power_follows_each_device),
        cmocka_unit_test(glu_meta_strides_follow_the_computation_dtype),
        cmocka_unit_test(leaky_relu_takes_integers_with_an_int_slope_on_meta),
        cmocka_unit_test(positive_returns_the_input_and_cost_counts_elements),
        cmocka_unit_test(null_inputs_pass_through_without_a_new_error),
        cmocka_unit_test(ops_report_out_of_memory_at_every_allocation),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
