/* The index family (cat/stack, tensor_split, tile, repeat_interleave,
 * roll, flip, tril/triu, index_select, gather, scatter, index_add,
 * take_along_dim, embedding, one_hot, pad, sort/argsort/topk,
 * masked_fill): shapes, dtypes, strides and errors as torch 2.13 reports
 * them on device='meta', and cpu values as torch's cpu computes them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mtk/mtk.h"
#include "fault_alloc.h"

#define SHAPE(...) ((const int64_t[]){ __VA_ARGS__ })
#define NDIM(...) ((int32_t)(sizeof((const int64_t[]){ __VA_ARGS__ }) / sizeof(int64_t)))
#define VALUES(...) ((const double[]){ __VA_ARGS__ }), ((int64_t)(sizeof((const double[]){ __VA_ARGS__ }) / sizeof(double)))

/* ---------------------------------------------------------------- helpers */

static mtk_tensor *meta(mtk_ctx *ctx, mtk_dtype dtype, int32_t ndim, const int64_t *shape, const int64_t *stride)
{
    return mtk_tensor_new(ctx, dtype, shape, ndim, stride, MTK_DEVICE_META);
}

/* Evaluates `expr` with literals and creation ops on `device`. */
static mtk_value eval_on(mtk_ctx *ctx, mtk_device device, const char *expr)
{
    mtk_value v;
    mtk_ctx_push_device(ctx, device);
    bool ok = mtk_eval(ctx, expr, &v);
    mtk_ctx_pop_device(ctx);
    if (!ok) fail_msg("%s failed: %s", expr, mtk_ctx_message(ctx));
    return v;
}

static mtk_tensor *eval_tensor(mtk_ctx *ctx, mtk_device device, const char *expr)
{
    mtk_value v = eval_on(ctx, device, expr);
    assert_int_equal(v.kind, MTK_VALUE_TENSOR);
    return v.as.tensor;
}

/* The expression fails with `status` and a message holding `text`. */
static void eval_fails(mtk_ctx *ctx, mtk_device device, const char *expr, mtk_status status, const char *text)
{
    mtk_value v;
    mtk_ctx_push_device(ctx, device);
    bool ok = mtk_eval(ctx, expr, &v);
    mtk_ctx_pop_device(ctx);
    if (ok) fail_msg("%s succeeded", expr);
    assert_int_equal(mtk_ctx_status(ctx), status);
    if (!strstr(mtk_ctx_message(ctx), text)) fail_msg("%s: message '%s' lacks '%s'", expr, mtk_ctx_message(ctx), text);
    mtk_ctx_clear_error(ctx);
}

static void assert_geometry(const mtk_tensor *t, mtk_dtype dtype, int32_t ndim, const int64_t *shape,
                            const int64_t *stride)
{
    assert_non_null(t);
    assert_int_equal(t->dtype, dtype);
    assert_int_equal(t->ndim, ndim);
    for (int32_t i = 0; i < ndim; i++) {
        assert_int_equal(t->shape[i], shape[i]);
        if (stride) assert_int_equal(t->stride[i], stride[i]);
    }
}

/* t's elements in row-major order equal `want` (floats exactly: the
 * cases are exact in every dtype they use). */
static void assert_values(const mtk_tensor *t, const double *want, int64_t n)
{
    assert_non_null(t);
    assert_int_equal(mtk_tensor_numel(t), n);
    int64_t index[MTK_MAX_DIMS] = { 0 };
    const char *base = mtk_tensor_data(t);
    size_t es = mtk_dtype_size(t->dtype);
    for (int64_t k = 0; k < n; k++) {
        int64_t off = 0;
        for (int32_t d = 0; d < t->ndim; d++) off += index[d] * t->stride[d];
        const char *p = base + off * (int64_t)es;
        double got;
        switch (t->dtype) {
        case MTK_FLOAT32: { float f; memcpy(&f, p, 4); got = f; break; }
        case MTK_FLOAT64: memcpy(&got, p, 8); break;
        case MTK_INT64: { int64_t i; memcpy(&i, p, 8); got = (double)i; break; }
        case MTK_INT32: { int32_t i; memcpy(&i, p, 4); got = i; break; }
        case MTK_BOOL: got = *(const bool *)p; break;
        default: fail_msg("dtype %s not read by this test", mtk_dtype_name(t->dtype)); return;
        }
        if (!(got == want[k] || (isnan(got) && isnan(want[k]))))
            fail_msg("element %lld is %g, torch gives %g", (long long)k, got, want[k]);
        for (int32_t d = t->ndim - 1; d >= 0 && ++index[d] == t->shape[d]; d--) index[d] = 0;
    }
}

static mtk_tensor *item(const mtk_value *v, int32_t i)
{
    assert_true(v->kind == MTK_VALUE_TUPLE || v->kind == MTK_VALUE_LIST);
    assert_true(i < v->as.list.count);
    return v->as.list.items[i].as.tensor;
}

/* ------------------------------------------------------------------ joining */

static void cat_promotes_and_skips_legacy_empty_tensors(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_tensor *in[3] = { meta(ctx, MTK_INT32, 2, SHAPE(2, 3), NULL), meta(ctx, MTK_FLOAT64, 1, SHAPE(0), NULL),
                          meta(ctx, MTK_FLOAT16, 2, SHAPE(4, 3), NULL) };
    /* torch.cat([i32 (2,3), f64 (0,), f16 (4,3)]) -> float64 (6, 3): the
     * skipped tensor still takes part in promotion */
    assert_geometry(mtk_cat(ctx, in, 3, 0), MTK_FLOAT64, 2, SHAPE(6, 3), SHAPE(3, 1));
    /* every input skipped: an empty (0,) tensor whatever the dim */
    mtk_tensor *empty[2] = { in[1], in[1] };
    assert_geometry(mtk_cat(ctx, empty, 2, 5), MTK_FLOAT64, 1, SHAPE(0), SHAPE(1));
    /* on cpu the values are joined, a long tensor promoted to float */
    mtk_tensor *c = eval_tensor(ctx, MTK_DEVICE_CPU, "cat([reshape(arange(2.), [1, 2]), i64[0], reshape(arange(4), [2, 2])])");
    assert_geometry(c, MTK_FLOAT32, 2, SHAPE(3, 2), SHAPE(2, 1));
    assert_values(c, VALUES(0, 1, 0, 1, 2, 3));
    mtk_ctx_free(ctx);
}

static void cat_is_channels_last_only_when_every_input_is(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_tensor *cl = meta(ctx, MTK_FLOAT32, 4, SHAPE(2, 3, 4, 5), SHAPE(60, 1, 15, 3));
    mtk_tensor *plain = meta(ctx, MTK_FLOAT32, 4, SHAPE(2, 3, 4, 5), NULL);
    mtk_tensor *both_cl[2] = { cl, cl }, *mixed[2] = { cl, plain };
    assert_geometry(mtk_cat(ctx, both_cl, 2, 1), MTK_FLOAT32, 4, SHAPE(2, 6, 4, 5), SHAPE(120, 1, 30, 6));
    assert_geometry(mtk_cat(ctx, mixed, 2, 1), MTK_FLOAT32, 4, SHAPE(2, 6, 4, 5), SHAPE(120, 20, 5, 1));
    /* torch.stack of channels-last tensors views cat's result */
    assert_geometry(mtk_stack(ctx, both_cl, 2, 1), MTK_FLOAT32, 5, SHAPE(2, 2, 3, 4, 5), SHAPE(120, 3, 1, 30, 6));
    mtk_ctx_free(ctx);
}

static void cat_errors_name_the_mismatch(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    eval_fails(ctx, MTK_DEVICE_META, "cat([f32[2,3], f32[2,4]], 0)", MTK_ERR_SHAPE,
               "Sizes of tensors must match except in dimension 0. Expected size 3 but got size 4 for tensor number 1");
    eval_fails(ctx, MTK_DEVICE_META, "cat([f32[2], f32[]])", MTK_ERR_SHAPE,
               "zero-dimensional tensor (at position 1) cannot be concatenated");
    eval_fails(ctx, MTK_DEVICE_META, "cat([f32[2,3], f32[3]])", MTK_ERR_SHAPE, "same number of dimensions");
    eval_fails(ctx, MTK_DEVICE_META, "cat([])", MTK_ERR_INVALID_ARGUMENT, "non-empty list");
    eval_fails(ctx, MTK_DEVICE_META, "cat([f32[2,3]], 2)", MTK_ERR_INDEX, "Dimension out of range");
    mtk_ctx_free(ctx);
}

static void stack_and_friends_insert_and_join_dims(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_value v = eval_on(ctx, MTK_DEVICE_META, "[stack([f32[2,3], f32[2,3]], -1), stack([f32[0], f32[0]]), "
                                                "hstack([f32[2], f32[3]]), vstack([f32[3], f32[3]]), "
                                                "dstack([f32[3], f32[3]])]");
    assert_geometry(item(&v, 0), MTK_FLOAT32, 3, SHAPE(2, 3, 2), SHAPE(6, 2, 1));
    assert_geometry(item(&v, 1), MTK_FLOAT32, 2, SHAPE(2, 0), SHAPE(1, 1));
    assert_geometry(item(&v, 2), MTK_FLOAT32, 1, SHAPE(5), SHAPE(1));
    assert_geometry(item(&v, 3), MTK_FLOAT32, 2, SHAPE(2, 3), SHAPE(3, 1));
    assert_geometry(item(&v, 4), MTK_FLOAT32, 3, SHAPE(1, 3, 2), SHAPE(6, 2, 1));
    mtk_tensor *s = eval_tensor(ctx, MTK_DEVICE_CPU, "stack([arange(3.), add(arange(3.), 10)], 1)");
    assert_values(s, VALUES(0, 10, 1, 11, 2, 12));
    eval_fails(ctx, MTK_DEVICE_META, "stack([f32[2,3], f32[3,2]])", MTK_ERR_SHAPE,
               "stack expects each tensor to be equal size, but got [2, 3] at entry 0 and [3, 2] at entry 1");
    mtk_ctx_free(ctx);
}

/* ------------------------------------------------------ splitting, repeating */

static void tensor_split_makes_views_with_python_slice_rules(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_tensor *x = meta(ctx, MTK_FLOAT32, 2, SHAPE(7, 2), NULL), *out[4];
    assert_int_equal(mtk_tensor_split(ctx, x, 3, 0, out, 4), 3);
    assert_int_equal(out[0]->shape[0], 3);
    assert_int_equal(out[1]->storage_offset, 6);
    assert_int_equal(out[2]->storage_offset, 10);
    /* indices [5, 1]: [0:5], [5:1] (empty, at 5), [1:] */
    assert_int_equal(mtk_tensor_split_indices(ctx, x, SHAPE(5, 1), 2, 0, out, 4), 3);
    assert_int_equal(out[1]->shape[0], 0);
    assert_int_equal(out[1]->storage_offset, 10);
    assert_int_equal(out[2]->shape[0], 6);
    assert_int_equal(out[2]->storage_offset, 2);
    /* on cpu the pieces share the input's storage */
    mtk_value v = eval_on(ctx, MTK_DEVICE_CPU, "tensor_split(arange(7.), [2, 5])");
    assert_int_equal(v.as.list.count, 3);
    assert_ptr_equal(item(&v, 1)->storage, item(&v, 0)->storage);
    assert_values(item(&v, 1), VALUES(2, 3, 4));
    eval_fails(ctx, MTK_DEVICE_META, "tensor_split(f32[7], 0)", MTK_ERR_INVALID_ARGUMENT,
               "number of sections must be larger than 0, got 0");
    eval_fails(ctx, MTK_DEVICE_META, "tensor_split(f32[7], i64[2])", MTK_ERR_DEVICE,
               "expected tensor_indices_or_sections to be on cpu");
    mtk_ctx_free(ctx);
}

static void tile_and_repeat_interleave_repeat_elements(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_tensor *x = meta(ctx, MTK_FLOAT32, 2, SHAPE(3, 2), SHAPE(1, 3)); /* a transpose */
    assert_geometry(mtk_tile(ctx, x, SHAPE(2, 1, 1), 3), MTK_FLOAT32, 3, SHAPE(2, 3, 2), SHAPE(6, 2, 1));
    assert_geometry(mtk_repeat_interleave(ctx, x, 2, -1), MTK_FLOAT32, 2, SHAPE(3, 4), SHAPE(4, 1));
    assert_geometry(mtk_repeat_interleave(ctx, x, 2, MTK_INDEX_NO_DIM), MTK_FLOAT32, 1, SHAPE(12), SHAPE(1));
    /* a repeats tensor: the size depends on its values */
    mtk_tensor *reps = meta(ctx, MTK_INT64, 1, SHAPE(2), NULL);
    assert_null(mtk_repeat_interleave_tensor(ctx, x, reps, 1, -1));
    assert_int_equal(mtk_ctx_status(ctx), MTK_ERR_DATA_DEPENDENT);
    assert_non_null(strstr(mtk_ctx_message(ctx), "output_size"));
    mtk_ctx_clear_error(ctx);
    assert_geometry(mtk_repeat_interleave_tensor(ctx, x, reps, 1, 7), MTK_FLOAT32, 2, SHAPE(3, 7), SHAPE(7, 1));
    /* on cpu the repeats' values give the size */
    /* repeats [2, 1, 0] */
    assert_values(eval_tensor(ctx, MTK_DEVICE_CPU, "repeat_interleave(arange(3.), remainder(add(mul(arange(3), 2), 2), 3))"),
                  VALUES(0, 0, 1));
    assert_values(eval_tensor(ctx, MTK_DEVICE_CPU, "tile(arange(2.), [2, 2])"), VALUES(0, 1, 0, 1, 0, 1, 0, 1));
    /* torch checks output_size against the repeats' sum only when there are repeats */
    mtk_tensor *none = eval_tensor(ctx, MTK_DEVICE_CPU, "repeat_interleave(i64[0], output_size=1)");
    assert_geometry(none, MTK_INT64, 1, SHAPE(0), SHAPE(1));
    none = eval_tensor(ctx, MTK_DEVICE_CPU, "repeat_interleave(i8[2,0,4], i64[1], 1, output_size=5)");
    assert_geometry(none, MTK_INT8, 3, SHAPE(2, 0, 4), SHAPE(4, 4, 1)); /* one repeat, broadcast to none */
    eval_fails(ctx, MTK_DEVICE_CPU, "repeat_interleave(f32[2], i64[2], output_size=3)", MTK_ERR_SHAPE,
               "allocated size does not match required size");
    eval_fails(ctx, MTK_DEVICE_META, "repeat_interleave(f32[2,3], -1)", MTK_ERR_INVALID_ARGUMENT,
               "Repeats must be non-negative");
    eval_fails(ctx, MTK_DEVICE_META, "tile(f32[2,3], [-1, 2])", MTK_ERR_SHAPE, "Repeats cannot be negative, found -1 at index 0");
    mtk_ctx_free(ctx);
}

/* -------------------------------------------------------------- reordering */

static void roll_and_flip_move_elements(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    assert_values(eval_tensor(ctx, MTK_DEVICE_CPU, "roll(reshape(arange(6.), [2, 3]), 1, 1)"), VALUES(2, 0, 1, 5, 3, 4));
    assert_values(eval_tensor(ctx, MTK_DEVICE_CPU, "roll(reshape(arange(6.), [2, 3]), [1, -1], [0, 1])"),
                  VALUES(4, 5, 3, 1, 2, 0));
    assert_values(eval_tensor(ctx, MTK_DEVICE_CPU, "roll(reshape(arange(6.), [2, 3]), 2)"), VALUES(4, 5, 0, 1, 2, 3));
    /* flip allocates like its input (a transpose stays one) */
    mtk_tensor *f = eval_tensor(ctx, MTK_DEVICE_CPU, "flip(t(reshape(arange(6.), [2, 3])), [0])");
    assert_geometry(f, MTK_FLOAT32, 2, SHAPE(3, 2), SHAPE(1, 3));
    assert_values(f, VALUES(2, 5, 1, 4, 0, 3));
    /* roll of an empty tensor clones it with its strides */
    mtk_tensor *empty = meta(ctx, MTK_FLOAT32, 2, SHAPE(3, 0), SHAPE(1, 3));
    assert_geometry(mtk_roll(ctx, empty, SHAPE(1), 1, NULL, 0), MTK_FLOAT32, 2, SHAPE(3, 0), SHAPE(1, 3));
    eval_fails(ctx, MTK_DEVICE_META, "roll(f32[2,3], [1, 2], [0])", MTK_ERR_SHAPE,
               "shifts and dimensions must align. shifts: 2, dims: 1");
    eval_fails(ctx, MTK_DEVICE_META, "flip(f32[2,3], [0, -2])", MTK_ERR_INVALID_ARGUMENT, "duplicate value in the list of dims");
    mtk_ctx_free(ctx);
}

static void tril_and_triu_keep_a_triangle(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    assert_values(eval_tensor(ctx, MTK_DEVICE_CPU, "tril(reshape(arange(12.), [3, 4]), -1)"),
                  VALUES(0, 0, 0, 0, 4, 0, 0, 0, 8, 9, 0, 0));
    assert_values(eval_tensor(ctx, MTK_DEVICE_CPU, "triu(reshape(arange(12.), [3, 4]), 1)"),
                  VALUES(0, 1, 2, 3, 0, 0, 6, 7, 0, 0, 0, 11));
    /* torch's meta: where(mask, x, 0).contiguous() keeps a size-1 dim's stride */
    mtk_tensor *x = meta(ctx, MTK_FLOAT32, 3, SHAPE(2, 1, 3), SHAPE(3, 6, 1));
    assert_geometry(mtk_tril(ctx, x, -3), MTK_FLOAT32, 3, SHAPE(2, 1, 3), SHAPE(3, 6, 1));
    eval_fails(ctx, MTK_DEVICE_META, "tril(f32[3])", MTK_ERR_SHAPE, "tril: input tensor must have at least 2 dimensions");
    mtk_ctx_free(ctx);
}

/* ------------------------------------------------------------------ reading */

static void index_select_and_gather_read_by_index(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    assert_values(eval_tensor(ctx, MTK_DEVICE_CPU, "index_select(reshape(arange(12.), [3, 4]), 1, full([1], 3))"),
                  VALUES(3, 7, 11));
    assert_values(eval_tensor(ctx, MTK_DEVICE_CPU,
                              "gather(reshape(arange(12.), [3, 4]), 1, reshape(remainder(arange(6), 4), [3, 2]))"),
                  VALUES(0, 1, 6, 7, 8, 9));
    /* torch's meta kernel of index_select checks no index dtype or rank */
    mtk_tensor *x = meta(ctx, MTK_FLOAT32, 2, SHAPE(3, 2), NULL);
    assert_geometry(mtk_index_select(ctx, x, 0, meta(ctx, MTK_FLOAT32, 2, SHAPE(2, 2), NULL)), MTK_FLOAT32, 2,
                    SHAPE(4, 2), SHAPE(2, 1));
    eval_fails(ctx, MTK_DEVICE_CPU, "index_select(f32[3, 2], 0, f32[2])", MTK_ERR_DTYPE,
               "index_select(): Expected dtype int32 or int64 for index");
    eval_fails(ctx, MTK_DEVICE_CPU, "index_select(f32[3, 2], 0, add(arange(2), 2))", MTK_ERR_INDEX,
               "index out of range in self");
    eval_fails(ctx, MTK_DEVICE_CPU, "gather(f32[3, 4], 1, reshape(add(arange(2), 3), [1, 2]))", MTK_ERR_INDEX,
               "index 4 is out of bounds for dimension 1 with size 4");
    eval_fails(ctx, MTK_DEVICE_META, "gather(f32[3, 4], 1, i64[4, 2])", MTK_ERR_SHAPE,
               "Size does not match at dimension 0 expected index [4, 2] to be no larger than self [3, 4] apart from dimension 1");
    /* on meta the values are unknown: no bounds check */
    assert_geometry(eval_tensor(ctx, MTK_DEVICE_META, "gather(f32[3, 4], 1, i64[3, 6])"), MTK_FLOAT32, 2, SHAPE(3, 6),
                    SHAPE(6, 1));
    mtk_ctx_free(ctx);
}

static void take_along_dim_wraps_indices_along_a_dim(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    /* take_along_dim(arange(4.), [0, 3, -4, -1], 0): indices modulo 4 */
    assert_values(eval_tensor(ctx, MTK_DEVICE_CPU, "take_along_dim(arange(4.), sub(mul(remainder(arange(4), 2), 5), "
                                                   "mul(arange(4), 2)), 0)"),
                  VALUES(0, 3, 0, 3));
    eval_fails(ctx, MTK_DEVICE_META, "take_along_dim(f32[3,4], i32[3,2], 1)", MTK_ERR_DTYPE,
               "dtype of indices should be Long but got Int");
    eval_fails(ctx, MTK_DEVICE_META, "take_along_dim(t(f32[3,4]), i64[5])", MTK_ERR_SHAPE, "view size is not compatible");
    mtk_ctx_free(ctx);
}

static void embedding_picks_rows(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_tensor *e = eval_tensor(ctx, MTK_DEVICE_CPU,
                                "F.embedding(reshape(remainder(add(arange(4), 2), 3), [2, 2]), reshape(arange(6.), [3, 2]))");
    assert_geometry(e, MTK_FLOAT32, 3, SHAPE(2, 2, 2), SHAPE(4, 2, 1));
    assert_values(e, VALUES(4, 5, 0, 1, 2, 3, 4, 5));
    mtk_tensor *w = meta(ctx, MTK_BFLOAT16, 2, SHAPE(10, 4), SHAPE(1, 10));
    assert_geometry(mtk_embedding(ctx, meta(ctx, MTK_INT32, 0, SHAPE(0), NULL), w, true, -10), MTK_BFLOAT16, 1,
                    SHAPE(4), SHAPE(1));
    eval_fails(ctx, MTK_DEVICE_META, "F.embedding(i16[2], f32[5, 3])", MTK_ERR_DTYPE, "Long, Int; but got int16");
    eval_fails(ctx, MTK_DEVICE_META, "F.embedding(i64[2], f32[5, 3], padding_idx=5)", MTK_ERR_INVALID_ARGUMENT,
               "Padding_idx must be within num_embeddings");
    eval_fails(ctx, MTK_DEVICE_CPU, "F.embedding(full([1], 5), f32[5, 3])", MTK_ERR_INDEX, "index out of range in self");
    mtk_ctx_free(ctx);
}

/* ------------------------------------------------------------------ writing */

static void scatter_and_index_add_write_in_index_order(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    /* index [[3, 3], [1, 0]]: the later write to (0, 3) wins, or adds */
    const char *index = "reshape(sub(3, mul(arange(4), ge(arange(4), 2))), [2, 2])";
    char expr[512];
    snprintf(expr, sizeof expr, "scatter(zeros(3, 4), 1, %s, reshape(add(arange(4.), 1), [2, 2]))", index);
    assert_values(eval_tensor(ctx, MTK_DEVICE_CPU, expr), VALUES(0, 0, 0, 2, 4, 3, 0, 0, 0, 0, 0, 0));
    snprintf(expr, sizeof expr, "scatter_add(ones(3, 4), 1, %s, reshape(add(arange(4.), 1), [2, 2]))", index);
    assert_values(eval_tensor(ctx, MTK_DEVICE_CPU, expr), VALUES(1, 1, 1, 4, 5, 4, 1, 1, 1, 1, 1, 1));
    /* index_add(ones(3, 4), 0, [2, 0, 2], arange(12.).view(3, 4), alpha=0.5) */
    assert_values(eval_tensor(ctx, MTK_DEVICE_CPU, "index_add(ones(3, 4), 0, mul(remainder(add(arange(3), 1), 2), 2), "
                                                   "reshape(arange(12.), [3, 4]), alpha=0.5)"),
                  VALUES(3, 3.5, 4, 4.5, 1, 1, 1, 1, 5, 6, 7, 8));
    /* the meta outputs are fresh contiguous tensors */
    mtk_tensor *x = meta(ctx, MTK_FLOAT32, 2, SHAPE(3, 4), SHAPE(1, 3));
    mtk_tensor *idx = meta(ctx, MTK_INT64, 2, SHAPE(2, 2), NULL);
    assert_geometry(mtk_scatter_value(ctx, x, 1, idx, 1.5, NULL), MTK_FLOAT32, 2, SHAPE(3, 4), SHAPE(4, 1));
    eval_fails(ctx, MTK_DEVICE_META, "scatter(f32[3, 4], 1, i64[2, 2], f64[2, 2])", MTK_ERR_DTYPE,
               "Expected self.dtype to be equal to src.dtype");
    eval_fails(ctx, MTK_DEVICE_META, "scatter(f32[3, 4], 1, i64[2, 2], f32[2, 2], reduce='sum')", MTK_ERR_INVALID_ARGUMENT,
               "reduce argument must be either add or multiply.");
    eval_fails(ctx, MTK_DEVICE_CPU, "scatter(zeros(3), 0, full([1], 3), 1.0)", MTK_ERR_INDEX,
               "index 3 is out of bounds for dimension 0 with size 3");
    eval_fails(ctx, MTK_DEVICE_META, "index_add(i64[3, 4], 1, i64[2], i64[3, 2], alpha=2.5)", MTK_ERR_DTYPE,
               "cannot be safely cast");
    eval_fails(ctx, MTK_DEVICE_CPU, "index_add(f32[3, 4], 1, zeros(2, dtype=i64), f64[3, 2])", MTK_ERR_DTYPE,
               "self (Float) and source (Double) must have the same scalar type");
    mtk_ctx_free(ctx);
}

static void masked_fill_broadcasts_and_checks_the_value(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    assert_values(eval_tensor(ctx, MTK_DEVICE_CPU, "masked_fill(arange(4.), eq(remainder(arange(4), 3), 0), -1.)"),
                  VALUES(-1, 1, 2, -1));
    /* the mask may broadcast the input; layout of where(...).contiguous() */
    mtk_tensor *x = meta(ctx, MTK_FLOAT32, 2, SHAPE(3, 1), SHAPE(1, 3));
    mtk_tensor *mask = meta(ctx, MTK_BOOL, 2, SHAPE(3, 1), SHAPE(1, 3));
    assert_geometry(mtk_masked_fill(ctx, x, mask, 0.5), MTK_FLOAT32, 2, SHAPE(3, 1), SHAPE(1, 3));
    assert_geometry(mtk_masked_fill(ctx, meta(ctx, MTK_FLOAT32, 1, SHAPE(4), NULL), meta(ctx, MTK_BOOL, 2, SHAPE(3, 4), NULL), 1),
                    MTK_FLOAT32, 2, SHAPE(3, 4), SHAPE(4, 1));
    eval_fails(ctx, MTK_DEVICE_META, "masked_fill(f32[4], u8[4], 1.0)", MTK_ERR_DTYPE, "only supports boolean masks");
    eval_fails(ctx, MTK_DEVICE_CPU, "masked_fill(i8[4], full([4], True), 1000)", MTK_ERR_OVERFLOW,
               "value cannot be converted to type int8_t without overflow");
    eval_fails(ctx, MTK_DEVICE_META, "masked_fill(f32[4], bool[4], f32[1])", MTK_ERR_SHAPE, "0-dimensional value tensor");
    mtk_ctx_free(ctx);
}

static void one_hot_needs_num_classes_on_meta(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_tensor *labels = meta(ctx, MTK_INT64, 2, SHAPE(2, 3), SHAPE(1, 2));
    /* eq(input.unsqueeze(-1), arange(n)): the input's layout shows through */
    assert_geometry(mtk_one_hot(ctx, labels, 5), MTK_INT64, 3, SHAPE(2, 3, 5), SHAPE(5, 10, 1));
    assert_null(mtk_one_hot(ctx, labels, -1));
    assert_int_equal(mtk_ctx_status(ctx), MTK_ERR_DATA_DEPENDENT);
    assert_non_null(strstr(mtk_ctx_message(ctx), "one_hot"));
    mtk_ctx_clear_error(ctx);
    mtk_tensor *h = eval_tensor(ctx, MTK_DEVICE_CPU, "F.one_hot(remainder(add(arange(3), 2), 3))");
    assert_geometry(h, MTK_INT64, 2, SHAPE(3, 3), NULL);
    assert_values(h, VALUES(0, 0, 1, 1, 0, 0, 0, 1, 0));
    eval_fails(ctx, MTK_DEVICE_META, "F.one_hot(i32[3], 4)", MTK_ERR_DTYPE, "one_hot is only applicable to index tensor of type LongTensor.");
    eval_fails(ctx, MTK_DEVICE_CPU, "F.one_hot(arange(3), 2)", MTK_ERR_INDEX, "Class values must be smaller than num_classes.");
    mtk_ctx_free(ctx);
}

/* ------------------------------------------------------------------ padding */

static void pad_modes_follow_torch(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    assert_values(eval_tensor(ctx, MTK_DEVICE_CPU, "F.pad(reshape(arange(4.), [1, 4]), [2, 1], mode='reflect')"),
                  VALUES(2, 1, 0, 1, 2, 3, 2));
    assert_values(eval_tensor(ctx, MTK_DEVICE_CPU, "F.pad(reshape(arange(4.), [1, 4]), [2, 1], mode='replicate')"),
                  VALUES(0, 0, 0, 1, 2, 3, 3));
    assert_values(eval_tensor(ctx, MTK_DEVICE_CPU, "F.pad(reshape(arange(4.), [1, 4]), [2, 1], mode='circular')"),
                  VALUES(2, 3, 0, 1, 2, 3, 0));
    assert_values(eval_tensor(ctx, MTK_DEVICE_CPU, "F.pad(reshape(arange(4.), [1, 4]), [2, -1], value=9)"),
                  VALUES(9, 9, 0, 1, 2));
    /* constant padding keeps channels-last; pure cropping clones the
     * cropped view's layout */
    mtk_tensor *cl = meta(ctx, MTK_FLOAT32, 4, SHAPE(2, 3, 4, 5), SHAPE(60, 1, 15, 3));
    assert_geometry(mtk_pad(ctx, cl, SHAPE(1, 1, 1, 1), 4, "constant", 0), MTK_FLOAT32, 4, SHAPE(2, 3, 6, 7),
                    SHAPE(126, 1, 21, 3));
    assert_geometry(mtk_pad(ctx, meta(ctx, MTK_FLOAT32, 2, SHAPE(3, 4), NULL), SHAPE(-1, -2), 2, "constant", 0),
                    MTK_FLOAT32, 2, SHAPE(3, 1), SHAPE(1, 1));
    assert_geometry(mtk_pad(ctx, cl, SHAPE(1, 1, 1, 1), 4, "reflect", 0), MTK_FLOAT32, 4, SHAPE(2, 3, 6, 7),
                    SHAPE(126, 42, 7, 1));
    eval_fails(ctx, MTK_DEVICE_META, "F.pad(f32[4], [1, 1], mode='reflect')", MTK_ERR_NOT_IMPLEMENTED,
               "Padding size 2 is not supported for 1D input tensor.");
    eval_fails(ctx, MTK_DEVICE_META, "F.pad(f32[2, 4], [4, 1], mode='reflect')", MTK_ERR_SHAPE,
               "Padding size should be less than the corresponding input dimension");
    eval_fails(ctx, MTK_DEVICE_META, "F.pad(f32[2, 4], [5, 1], mode='circular')", MTK_ERR_SHAPE,
               "Padding value causes wrapping around more than once.");
    /* torch's cpu fills a circular border by a copy within its output:
     * with a negative pad on the other side, a dense source that overlaps
     * the border is refused (meta has no such copy) */
    eval_fails(ctx, MTK_DEVICE_CPU, "F.pad(f32[1, 1, 4], [3, -2], mode='circular')", MTK_ERR_INVALID_ARGUMENT,
               "some elements of the input tensor and the written-to tensor refer to a single memory location");
    eval_fails(ctx, MTK_DEVICE_CPU, "F.pad(f32[1, 1, 4], [-2, 3], mode='circular')", MTK_ERR_INVALID_ARGUMENT,
               "refer to a single memory location");
    eval_fails(ctx, MTK_DEVICE_CPU, "F.pad(f32[1, 3, 3, 1], [0, 1, -1, 3, 3, -1], mode='circular')",
               MTK_ERR_INVALID_ARGUMENT, "refer to a single memory location");
    assert_geometry(eval_tensor(ctx, MTK_DEVICE_META, "F.pad(f32[1, 1, 4], [3, -2], mode='circular')"), MTK_FLOAT32,
                    3, SHAPE(1, 1, 5), SHAPE(5, 5, 1));
    /* a source that is not dense (two channels before it) is copied as is */
    assert_geometry(eval_tensor(ctx, MTK_DEVICE_CPU, "F.pad(f32[1, 2, 4], [3, -2], mode='circular')"), MTK_FLOAT32, 3,
                    SHAPE(1, 2, 5), SHAPE(10, 5, 1));
    eval_fails(ctx, MTK_DEVICE_META, "F.pad(f32[3, 4], [-5, 2])", MTK_ERR_SHAPE, "narrow(): length must be non-negative.");
    eval_fails(ctx, MTK_DEVICE_META, "F.pad(f32[3, 4], [1])", MTK_ERR_SHAPE, "Padding length must be divisible by 2");
    mtk_ctx_free(ctx);
}

/* ------------------------------------------------------------------ sorting */

static void sort_orders_ties_as_torch_does(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    /* torch's unstable sort of 40 equal values (libstdc++ introsort) */
    mtk_value v = eval_on(ctx, MTK_DEVICE_CPU, "sort(zeros(40))");
    assert_values(item(&v, 1), VALUES(30, 21, 22, 23, 24, 25, 26, 27, 28, 29, 20, 31, 32, 33, 34, 35, 36, 37, 38, 39,
                                      10, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 11, 12, 13, 14, 15, 16, 17, 18, 19));
    v = eval_on(ctx, MTK_DEVICE_CPU, "sort(zeros(40), stable=True)");
    assert_values(item(&v, 1), VALUES(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19,
                                      20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39));
    /* NaN sorts as the largest value: [1, nan, -1, -inf, -0.0] */
    v = eval_on(ctx, MTK_DEVICE_CPU, "sort(div(sub(remainder(arange(5), 3), 1.), sub(remainder(arange(5), 2), 1)), descending=True)");
    assert_values(item(&v, 0), VALUES(NAN, 1, -0.0, -1, -INFINITY));
    assert_values(item(&v, 1), VALUES(1, 0, 4, 2, 3));
    /* topk: nth_element then a sort of the first k - 1 */
    v = eval_on(ctx, MTK_DEVICE_CPU, "topk(zeros(10), 3)");
    assert_values(item(&v, 1), VALUES(8, 6, 7));
    /* meta: sort lays out like its input and checks no dim; topk is contiguous */
    mtk_tensor *x = meta(ctx, MTK_FLOAT32, 2, SHAPE(3, 4), SHAPE(1, 3)), *values, *indices;
    assert_true(mtk_sort(ctx, x, 7, false, false, &values, &indices));
    assert_geometry(indices, MTK_INT64, 2, SHAPE(3, 4), SHAPE(1, 3));
    assert_true(mtk_topk(ctx, x, 2, -1, true, true, &values, &indices));
    assert_geometry(values, MTK_FLOAT32, 2, SHAPE(3, 2), SHAPE(2, 1));
    eval_fails(ctx, MTK_DEVICE_META, "topk(f32[3, 4], 5)", MTK_ERR_INDEX, "k not in range for dimension");
    eval_fails(ctx, MTK_DEVICE_CPU, "topk(bool[3, 4], 1)", MTK_ERR_DTYPE, "topk does not support bool dtypes on CPU");
    eval_fails(ctx, MTK_DEVICE_CPU, "sort(f32[3, 4], 7)", MTK_ERR_INDEX, "Dimension out of range");
    mtk_ctx_free(ctx);
}

/* ---------------------------------------------------------- cost, threads */

static void cost_counts_elements_produced(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    const mtk_op_def *op = mtk_op_find("topk");
    assert_non_null(op);
    mtk_op_call call;
    mtk_op_call_init(&call, ctx, op);
    call.args[0] = mtk_value_tensor(meta(ctx, MTK_FLOAT32, 2, SHAPE(3, 4), NULL));
    call.args[1] = mtk_value_int(2);
    assert_true(mtk_op_run(&call));
    mtk_op_cost cost = op->cost(&call);
    assert_int_equal(cost.flops, 0);
    assert_int_equal(cost.elementwise, 12); /* values (3, 2) and indices (3, 2) */
    mtk_ctx_free(ctx);
}

static void kernels_agree_on_one_and_many_threads(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    const char *expr = "gather(reshape(arange(200000.), [400, 500]), 1, reshape(remainder(mul(arange(120000), 7), 500), [400, 300]))";
    mtk_ctx_set_num_threads(ctx, 1);
    assert_int_equal(mtk_ctx_num_threads(ctx), 1);
    mtk_tensor *one = eval_tensor(ctx, MTK_DEVICE_CPU, expr);
    mtk_ctx_set_num_threads(ctx, 4);
    mtk_tensor *many = eval_tensor(ctx, MTK_DEVICE_CPU, expr);
    mtk_ctx_set_num_threads(ctx, 0);
    assert_true(mtk_ctx_num_threads(ctx) >= 1);
    assert_memory_equal(mtk_tensor_data(one), mtk_tensor_data(many), (size_t)mtk_tensor_nbytes(one));
    /* row 1, column 0 reads index (300 * 7) % 500 = 100 */
    assert_true(((const float *)mtk_tensor_data(one))[300] == 600.0f);
    mtk_ctx_free(ctx);
}

static void null_inputs_pass_through(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_tensor *x = meta(ctx, MTK_FLOAT32, 1, SHAPE(3), NULL);
    assert_null(mtk_gather(ctx, NULL, 0, x));
    assert_null(mtk_index_select(ctx, x, 0, NULL));
    assert_null(mtk_flip(ctx, NULL, SHAPE(0), 1));
    mtk_tensor *list[2] = { x, NULL };
    assert_null(mtk_cat(ctx, list, 2, 0));
    assert_int_equal(mtk_ctx_status(ctx), MTK_OK);
    mtk_ctx_free(ctx);
}

/* ------------------------------------------------------------ out of memory */


/* Every index op's cpu path, with the Nth allocation failing for N = 1, 2,
 * ...: each failure is an out-of-memory error (no crash), and freeing the
 * context returns every block. */
static void kernels_report_out_of_memory_and_leak_nothing(void **state)
{
    (void)state;
    static const char *const exprs[] = {
        "cat([reshape(arange(6.), [2, 3]), t(reshape(arange(6.), [3, 2]))], 1)",
        "stack([arange(3.), arange(3.)], 1)",
        "tensor_split(arange(7.), [2, 5])",
        "tile(t(reshape(arange(6.), [2, 3])), [2, 2])",
        "repeat_interleave(t(reshape(arange(6.), [2, 3])), full([1], 2))",
        "roll(t(reshape(arange(6.), [2, 3])), 1)",
        "flip(t(reshape(arange(6.), [2, 3])), [0, 1])",
        "triu(reshape(arange(6.), [2, 3]))",
        "index_select(reshape(arange(6.), [2, 3]), 1, full([2], 1))",
        "take_along_dim(t(reshape(arange(6.), [2, 3])), full([3, 1], 1), 1)",
        "take_along_dim(reshape(arange(6.), [2, 3]), full([2], 1))",
        "scatter_add(zeros(2, 3), 1, full([2, 2], 1), ones(2, 2))",
        "index_add(zeros(2, 3), 0, full([1], 1), ones(1, 3))",
        "masked_fill(arange(4.), gt(arange(4), 1), 7.0)",
        "F.one_hot(arange(3))",
        "F.embedding(full([2], 1), reshape(arange(6.), [3, 2]))",
        "F.pad(reshape(arange(6.), [1, 2, 3]), [1, 1], mode='reflect')",
        "sort(remainder(arange(40), 3), stable=True)",
        "topk(remainder(arange(40), 3), 5)",
    };
    for (size_t e = 0; e < sizeof exprs / sizeof exprs[0]; e++) {
        for (long n = 1;; n++) {
            injector in = { .fail_at = n };
            mtk_allocator alloc = { inject_alloc, inject_free, &in };
            mtk_ctx *ctx = mtk_ctx_new_with_allocator(&alloc);
            if (!ctx) {
                assert_int_equal(in.live, 0);
                continue;
            }
            mtk_value v;
            bool ok = mtk_ctx_push_device(ctx, MTK_DEVICE_CPU) && mtk_eval(ctx, exprs[e], &v);
            if (!ok && mtk_ctx_status(ctx) != MTK_ERR_OUT_OF_MEMORY)
                fail_msg("%s with allocation %ld failing: %s", exprs[e], n, mtk_ctx_message(ctx));
            mtk_ctx_free(ctx);
            assert_int_equal(in.live, 0);
            if (ok) break;
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(cat_promotes_and_skips_legacy_empty_tensors),
        cmocka_unit_test(cat_is_channels_last_only_when_every_input_is),
        cmocka_unit_test(cat_errors_name_the_mismatch),
        cmocka_unit_test(stack_and_friends_insert_and_join_dims),
        cmocka_unit_test(tensor_split_makes_views_with_python_slice_rules),
        cmocka_unit_test(tile_and_repeat_interleave_repeat_elements),
        cmocka_unit_test(roll_and_flip_move_elements),
        cmocka_unit_test(tril_and_triu_keep_a_triangle),
        cmocka_unit_test(index_select_and_gather_read_by_index),
        cmocka_unit_test(take_along_dim_wraps_indices_along_a_dim),
        cmocka_unit_test(embedding_picks_rows),
        cmocka_unit_test(scatter_and_index_add_write_in_index_order),
        cmocka_unit_test(masked_fill_broadcasts_and_checks_the_value),
        cmocka_unit_test(one_hot_needs_num_classes_on_meta),
        cmocka_unit_test(pad_modes_follow_torch),
        cmocka_unit_test(sort_orders_ties_as_torch_does),
        cmocka_unit_test(cost_counts_elements_produced),
        cmocka_unit_test(kernels_agree_on_one_and_many_threads),
        cmocka_unit_test(null_inputs_pass_through),
        cmocka_unit_test(kernels_report_out_of_memory_and_leak_nothing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
