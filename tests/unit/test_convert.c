/* Device and dtype transitions (to, to_empty, type_as, clone, copy_,
 * item) and the data-dependent ops (nonzero, masked_select, unique):
 * expectations taken from torch 2.13 on meta and cpu. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "mtk/mtk.h"

#define SHAPE(...) ((const int64_t[]){ __VA_ARGS__ })

static mtk_tensor *meta(mtk_ctx *ctx, mtk_dtype dtype, int32_t ndim, const int64_t *shape, const int64_t *stride)
{
    return mtk_tensor_new(ctx, dtype, shape, ndim, stride, MTK_DEVICE_META);
}

static void assert_strides(const mtk_tensor *t, int32_t ndim, const int64_t *stride)
{
    assert_non_null(t);
    assert_int_equal(t->ndim, ndim);
    for (int32_t i = 0; i < ndim; i++) assert_int_equal(t->stride[i], stride[i]);
}

static void assert_error(mtk_ctx *ctx, mtk_status status, const char *text)
{
    assert_int_equal(mtk_ctx_status(ctx), status);
    if (!strstr(mtk_ctx_message(ctx), text)) fail_msg("message '%s' lacks '%s'", mtk_ctx_message(ctx), text);
    mtk_ctx_clear_error(ctx);
}

/* Calls an op by name; returns the result (None on error). */
static mtk_value call(mtk_ctx *ctx, const char *op, int32_t npos, const mtk_value *pos, int32_t nkw,
                      const char *const *kw, const mtk_value *kwv)
{
    mtk_value r;
    if (!mtk_op_call_by_name(ctx, op, pos, npos, kw, kwv, nkw, &r)) return mtk_value_none();
    return r;
}

static const float example[12] = { 0, 1.5f, 0, 2, 3, 0, 0, -1, 0, 0, 0, 0 }; /* (3, 4) */

/* --------------------------------------------------------------------- to */

static void to_with_nothing_to_change_returns_the_input_itself(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_tensor *m = meta(ctx, MTK_FLOAT32, 2, SHAPE(3, 4), NULL);
    assert_ptr_equal(mtk_to(ctx, m, MTK_DEVICE_META, MTK_FLOAT32, false), m);
    assert_ptr_equal(mtk_to_dtype(ctx, m, MTK_FLOAT32), m);
    mtk_tensor *c = mtk_tensor_from_data(ctx, MTK_FLOAT32, SHAPE(3, 4), 2, NULL, (void *)example);
    assert_ptr_equal(mtk_to_device(ctx, c, MTK_DEVICE_CPU), c);
    /* copy=True always copies */
    mtk_tensor *copy = mtk_to(ctx, m, MTK_DEVICE_META, MTK_FLOAT32, true);
    assert_non_null(copy);
    assert_ptr_not_equal(copy, m);
    mtk_ctx_free(ctx);
}

/* torch's _to_copy: dense strides are kept, others made dense in the
 * same dim order; the offset is dropped */
static void to_dtype_keeps_dense_strides_and_densifies_others(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_tensor *t = meta(ctx, MTK_FLOAT32, 2, SHAPE(4, 3), SHAPE(1, 4));
    assert_strides(mtk_to_dtype(ctx, t, MTK_FLOAT16), 2, SHAPE(1, 4));
    mtk_tensor *sliced = meta(ctx, MTK_FLOAT32, 2, SHAPE(3, 2), SHAPE(4, 2));
    assert_strides(mtk_to_dtype(ctx, sliced, MTK_FLOAT16), 2, SHAPE(2, 1));
    mtk_tensor *perm = meta(ctx, MTK_FLOAT32, 4, SHAPE(2, 4, 3, 3), SHAPE(60, 5, 2, 20));
    assert_strides(mtk_to_dtype(ctx, perm, MTK_FLOAT16), 4, SHAPE(36, 3, 1, 12));
    mtk_tensor *expanded = meta(ctx, MTK_FLOAT32, 2, SHAPE(3, 4), SHAPE(1, 0));
    assert_strides(mtk_to_dtype(ctx, expanded, MTK_FLOAT16), 2, SHAPE(4, 1));
    mtk_tensor *offset = meta(ctx, MTK_FLOAT32, 2, SHAPE(2, 4), NULL);
    offset->storage_offset = 4;
    mtk_tensor *out = mtk_to_dtype(ctx, offset, MTK_BFLOAT16);
    assert_int_equal(out->storage_offset, 0);
    assert_int_equal(out->dtype, MTK_BFLOAT16);
    assert_int_equal(out->device, MTK_DEVICE_META);
    mtk_ctx_free(ctx);
}

static void to_meta_from_cpu_keeps_metadata_without_data(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_tensor *c = mtk_tensor_from_data(ctx, MTK_FLOAT32, SHAPE(4, 3), 2, SHAPE(1, 4), (void *)example);
    mtk_tensor *m = mtk_to_device(ctx, c, MTK_DEVICE_META);
    assert_non_null(m);
    assert_int_equal(m->device, MTK_DEVICE_META);
    assert_null(m->storage);
    assert_strides(m, 2, SHAPE(1, 4));
    mtk_ctx_free(ctx);
}

static void copy_out_of_meta_fails_with_hint(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_tensor *m = meta(ctx, MTK_FLOAT32, 2, SHAPE(3, 4), NULL);
    assert_null(mtk_to_device(ctx, m, MTK_DEVICE_CPU));
    assert_int_equal(mtk_ctx_status(ctx), MTK_ERR_META_NO_DATA);
    const char *msg = mtk_ctx_message(ctx);
    assert_true(strncmp(msg, "to: Cannot copy out of meta tensor; no data!", 44) == 0);
    assert_non_null(strstr(msg, "to_empty(device="));
    assert_non_null(strstr(msg, "checkpoint"));
    mtk_ctx_clear_error(ctx);
    /* a dtype change on the way does not help */
    assert_null(mtk_to(ctx, m, MTK_DEVICE_CPU, MTK_FLOAT16, true));
    assert_error(ctx, MTK_ERR_META_NO_DATA, "Cannot copy out of meta tensor; no data!");
    mtk_ctx_free(ctx);
}

static void to_converts_values_on_cpu(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    float v[4] = { -1.5f, 0.25f, 2.75f, 300.0f };
    mtk_tensor *c = mtk_tensor_from_data(ctx, MTK_FLOAT32, SHAPE(4), 1, NULL, v);
    mtk_tensor *i = mtk_to_dtype(ctx, c, MTK_INT64);
    const int64_t *iv = mtk_tensor_data(i);
    assert_int_equal(iv[0], -1); /* truncation toward zero, as torch */
    assert_int_equal(iv[2], 2);
    assert_int_equal(iv[3], 300);
    mtk_tensor *b = mtk_to_dtype(ctx, c, MTK_BOOL);
    const bool *bv = mtk_tensor_data(b);
    assert_true(bv[0] && bv[1] && bv[2] && bv[3]);
    mtk_ctx_free(ctx);
}

/* every spelling torch accepts, through the op table */
static void to_binds_dtype_device_and_keywords_by_name(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_value x = mtk_value_tensor(meta(ctx, MTK_FLOAT32, 2, SHAPE(3, 4), NULL));
    mtk_value f16 = mtk_value_dtype(MTK_FLOAT16), cpu = mtk_value_string("cpu"), metas = mtk_value_string("meta");
    mtk_value r;

    r = call(ctx, "to", 2, (mtk_value[]){ x, f16 }, 0, NULL, NULL);
    assert_int_equal(r.as.tensor->dtype, MTK_FLOAT16);
    r = call(ctx, "to", 2, (mtk_value[]){ x, metas }, 0, NULL, NULL);
    assert_ptr_equal(r.as.tensor, x.as.tensor);
    r = call(ctx, "to", 1, (mtk_value[]){ x }, 1, (const char *[]){ "dtype" }, (mtk_value[]){ f16 });
    assert_int_equal(r.as.tensor->dtype, MTK_FLOAT16);
    r = call(ctx, "to", 3, (mtk_value[]){ x, metas, f16 }, 0, NULL, NULL);
    assert_int_equal(r.as.tensor->dtype, MTK_FLOAT16);
    r = call(ctx, "to", 2, (mtk_value[]){ x, metas }, 1, (const char *[]){ "copy" }, (mtk_value[]){ mtk_value_bool(true) });
    assert_ptr_not_equal(r.as.tensor, x.as.tensor);
    r = call(ctx, "to", 4, (mtk_value[]){ x, mtk_value_dtype(MTK_FLOAT32), mtk_value_bool(false), mtk_value_bool(true) }, 0, NULL, NULL);
    assert_ptr_not_equal(r.as.tensor, x.as.tensor); /* to(dtype, non_blocking, copy) */

    assert_int_equal(call(ctx, "to", 1, (mtk_value[]){ x }, 1, (const char *[]){ "device" }, (mtk_value[]){ cpu }).kind,
                     MTK_VALUE_NONE);
    assert_error(ctx, MTK_ERR_META_NO_DATA, "Cannot copy out of meta tensor; no data!");
    assert_int_equal(call(ctx, "to", 3, (mtk_value[]){ x, cpu, f16 }, 0, NULL, NULL).kind, MTK_VALUE_NONE);
    assert_error(ctx, MTK_ERR_META_NO_DATA, "Cannot copy out of meta tensor");
    /* to(dtype, device) is not an overload */
    assert_int_equal(call(ctx, "to", 3, (mtk_value[]){ x, f16, cpu }, 0, NULL, NULL).kind, MTK_VALUE_NONE);
    assert_error(ctx, MTK_ERR_INVALID_ARGUMENT, "to() received an invalid combination of arguments");
    assert_int_equal(call(ctx, "to", 2, (mtk_value[]){ x, mtk_value_string("foo") }, 0, NULL, NULL).kind, MTK_VALUE_NONE);
    assert_error(ctx, MTK_ERR_DEVICE, "Expected one of cpu, meta, cuda device type at start of device string: foo");
    mtk_ctx_free(ctx);
}

static void to_a_tensor_and_type_as_take_its_dtype_and_device(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_tensor *x = meta(ctx, MTK_FLOAT32, 2, SHAPE(3, 4), NULL);
    mtk_tensor *other = meta(ctx, MTK_INT32, 1, SHAPE(1), NULL);
    mtk_tensor *r = mtk_type_as(ctx, x, other);
    assert_int_equal(r->dtype, MTK_INT32);
    assert_int_equal(r->device, MTK_DEVICE_META);
    assert_ptr_equal(mtk_type_as(ctx, x, meta(ctx, MTK_FLOAT32, 1, SHAPE(1), NULL)), x);
    /* a cpu `other` moves a meta input to cpu: the copy-out error */
    int32_t one = 1;
    mtk_tensor *cpu_other = mtk_tensor_from_data(ctx, MTK_INT32, SHAPE(1), 1, NULL, &one);
    assert_null(mtk_type_as(ctx, x, cpu_other));
    assert_error(ctx, MTK_ERR_META_NO_DATA, "Cannot copy out of meta tensor");
    mtk_ctx_free(ctx);
}

/* ----------------------------------------------------- to_empty and clone */

static void to_empty_gives_uninitialized_cpu_memory_from_meta(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_tensor *m = meta(ctx, MTK_BFLOAT16, 2, SHAPE(4, 3), SHAPE(1, 4));
    mtk_tensor *c = mtk_to_empty(ctx, m, MTK_DEVICE_CPU);
    assert_non_null(c);
    assert_int_equal(c->device, MTK_DEVICE_CPU);
    assert_non_null(c->storage);
    assert_true(mtk_storage_nbytes(c->storage) >= 24);
    assert_int_equal(c->dtype, MTK_BFLOAT16);
    assert_strides(c, 2, SHAPE(1, 4));
    /* non-dense inputs get dense strides */
    mtk_tensor *sliced = meta(ctx, MTK_FLOAT32, 2, SHAPE(3, 2), SHAPE(4, 2));
    assert_strides(mtk_to_empty(ctx, sliced, MTK_DEVICE_CPU), 2, SHAPE(2, 1));
    mtk_tensor *again = mtk_to_empty(ctx, c, MTK_DEVICE_META);
    assert_int_equal(again->device, MTK_DEVICE_META);
    assert_null(again->storage);
    assert_null(mtk_to_empty(ctx, m, MTK_DEVICE_CUDA(0)));
    assert_error(ctx, MTK_ERR_DEVICE, "cuda:0");
    mtk_ctx_free(ctx);
}

/* torch's Module.to_empty is empty_like(t, device=...): for a meta t torch
 * runs its reference (the element-wise stride rule: contiguous when t is,
 * an empty t included), for a real t its kernel (dense strides kept) */
static void to_empty_strides_follow_empty_like_of_the_input_device(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    /* t(i32[1,3]) and transpose(bf16[3,3,2,0], 0, 1) */
    mtk_tensor *col = meta(ctx, MTK_INT32, 2, SHAPE(3, 1), SHAPE(1, 3));
    mtk_tensor *empty = meta(ctx, MTK_BFLOAT16, 4, SHAPE(3, 3, 2, 0), SHAPE(2, 6, 1, 1));
    assert_strides(mtk_to_empty(ctx, col, MTK_DEVICE_CPU), 2, SHAPE(1, 1));
    assert_strides(mtk_to_empty(ctx, empty, MTK_DEVICE_CPU), 4, SHAPE(6, 2, 1, 1));
    assert_strides(mtk_to_empty(ctx, empty, MTK_DEVICE_META), 4, SHAPE(6, 2, 1, 1));
    int32_t data[3] = { 0 };
    mtk_tensor *real_col = mtk_tensor_from_data(ctx, MTK_INT32, SHAPE(3, 1), 2, SHAPE(1, 3), data);
    assert_strides(mtk_to_empty(ctx, real_col, MTK_DEVICE_CPU), 2, SHAPE(1, 3));
    mtk_ctx_free(ctx);
}

static void clone_preserves_dense_strides(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_tensor *perm = meta(ctx, MTK_FLOAT32, 4, SHAPE(2, 4, 5, 3), SHAPE(60, 5, 1, 20));
    assert_strides(mtk_clone(ctx, perm), 4, SHAPE(60, 5, 1, 20));
    mtk_value r = call(ctx, "clone", 1, (mtk_value[]){ mtk_value_tensor(perm) }, 1, (const char *[]){ "memory_format" },
                       (mtk_value[]){ mtk_value_string("torch.channels_last") });
    assert_strides(r.as.tensor, 4, SHAPE(60, 1, 12, 4));
    mtk_tensor *t2 = meta(ctx, MTK_FLOAT32, 2, SHAPE(2, 6), SHAPE(1, 2));
    assert_int_equal(call(ctx, "clone", 1, (mtk_value[]){ mtk_value_tensor(t2) }, 1, (const char *[]){ "memory_format" },
                          (mtk_value[]){ mtk_value_string("channels_last") }).kind,
                     MTK_VALUE_NONE);
    assert_error(ctx, MTK_ERR_SHAPE, "required rank 4 tensor to use channels_last format");
    mtk_tensor *c = mtk_tensor_from_data(ctx, MTK_FLOAT32, SHAPE(3, 4), 2, NULL, (void *)example);
    mtk_tensor *copy = mtk_clone(ctx, c);
    assert_ptr_not_equal(copy->storage, c->storage);
    assert_memory_equal(mtk_tensor_data(copy), example, sizeof example);
    mtk_ctx_free(ctx);
}

/* ------------------------------------------------------------------ copy_ */

static void copy_into_meta_checks_shapes_and_does_nothing(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_tensor *self = meta(ctx, MTK_FLOAT32, 2, SHAPE(3, 4), NULL);
    mtk_tensor *src = mtk_tensor_from_data(ctx, MTK_FLOAT32, SHAPE(4), 1, NULL, (void *)example);
    assert_ptr_equal(mtk_copy_(ctx, self, src), self);
    assert_null(mtk_copy_(ctx, self, meta(ctx, MTK_FLOAT32, 1, SHAPE(5), NULL)));
    assert_error(ctx, MTK_ERR_SHAPE, "The size of tensor a (4) must match the size of tensor b (5) at non-singleton dimension 1");
    assert_null(mtk_copy_(ctx, self, meta(ctx, MTK_FLOAT32, 3, SHAPE(2, 3, 4), NULL)));
    assert_error(ctx, MTK_ERR_SHAPE, "output with shape [3, 4] doesn't match the broadcast shape [2, 3, 4]");
    mtk_ctx_free(ctx);
}

static void copy_from_meta_into_cpu_fails_with_hint(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    float buf[12] = { 0 };
    mtk_tensor *self = mtk_tensor_from_data(ctx, MTK_FLOAT32, SHAPE(3, 4), 2, NULL, buf);
    assert_null(mtk_copy_(ctx, self, meta(ctx, MTK_FLOAT32, 1, SHAPE(4), NULL)));
    assert_error(ctx, MTK_ERR_META_NO_DATA, "copy_: Cannot copy out of meta tensor; no data!");
    mtk_ctx_free(ctx);
}

/* torch's parser takes a Python number for copy_'s src (and to's other) */
static void copy_and_to_take_python_numbers(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    int32_t buf[3] = { 7, 7, 7 };
    mtk_tensor *self = mtk_tensor_from_data(ctx, MTK_INT32, SHAPE(3), 1, NULL, buf);
    mtk_value r = call(ctx, "copy_", 2, (mtk_value[]){ mtk_value_tensor(self), mtk_value_float(2.5) }, 0, NULL, NULL);
    assert_ptr_equal(r.as.tensor, self);
    assert_int_equal(buf[0], 2);
    assert_int_equal(buf[2], 2);
    call(ctx, "copy_", 2, (mtk_value[]){ mtk_value_tensor(self), mtk_value_bool(true) }, 0, NULL, NULL);
    assert_int_equal(buf[1], 1);
    mtk_tensor *m = meta(ctx, MTK_INT32, 2, SHAPE(3, 1), NULL);
    r = call(ctx, "copy_", 2, (mtk_value[]){ mtk_value_tensor(m), mtk_value_bool(true) }, 0, NULL, NULL);
    assert_ptr_equal(r.as.tensor, m);
    /* x.to(1.5) is x.to(a float64 cpu tensor): a copy out of meta fails */
    r = call(ctx, "to", 2, (mtk_value[]){ mtk_value_tensor(self), mtk_value_float(1.5) }, 0, NULL, NULL);
    assert_int_equal(r.as.tensor->dtype, MTK_FLOAT64);
    assert_int_equal(r.as.tensor->device, MTK_DEVICE_CPU);
    r = call(ctx, "to", 2, (mtk_value[]){ mtk_value_tensor(m), mtk_value_float(1.5) }, 0, NULL, NULL);
    assert_int_equal(r.kind, MTK_VALUE_NONE);
    assert_error(ctx, MTK_ERR_META_NO_DATA, "Cannot copy out of meta tensor");
    mtk_ctx_free(ctx);
}

/* 'meta:0' and 'cpu:0' are meta and cpu, but not the device of a tensor
 * (which has no index): torch copies */
static void to_a_device_with_an_index_copies(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_tensor *m = meta(ctx, MTK_FLOAT32, 2, SHAPE(3, 1), SHAPE(2, 1)); /* narrow(f32[3,2], 1, 0, 1) */
    mtk_value r = call(ctx, "to", 2, (mtk_value[]){ mtk_value_tensor(m), mtk_value_string("meta") }, 0, NULL, NULL);
    assert_ptr_equal(r.as.tensor, m);
    r = call(ctx, "to", 2, (mtk_value[]){ mtk_value_tensor(m), mtk_value_string("meta:0") }, 0, NULL, NULL);
    assert_ptr_not_equal(r.as.tensor, m);
    assert_int_equal(r.as.tensor->device, MTK_DEVICE_META);
    assert_strides(r.as.tensor, 2, SHAPE(1, 1));
    r = call(ctx, "to", 1, (mtk_value[]){ mtk_value_tensor(m) }, 1, (const char *[]){ "device" },
             (mtk_value[]){ mtk_value_string("meta:0") });
    assert_ptr_not_equal(r.as.tensor, m);
    r = call(ctx, "to", 2, (mtk_value[]){ mtk_value_tensor(m), mtk_value_string("meta:01") }, 0, NULL, NULL);
    assert_int_equal(r.kind, MTK_VALUE_NONE);
    assert_error(ctx, MTK_ERR_DEVICE, "meta:01");
    mtk_ctx_free(ctx);
}

static void copy_broadcasts_and_converts_on_cpu(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    float buf[6] = { 0 };
    int64_t row[3] = { 7, -2, 5 };
    mtk_tensor *self = mtk_tensor_from_data(ctx, MTK_FLOAT32, SHAPE(2, 3), 2, NULL, buf);
    assert_ptr_equal(mtk_copy_(ctx, self, mtk_tensor_from_data(ctx, MTK_INT64, SHAPE(3), 1, NULL, row)), self);
    static const float want[6] = { 7, -2, 5, 7, -2, 5 };
    assert_memory_equal(buf, want, sizeof want);
    /* an expanded destination is refused, as torch's cpu does */
    mtk_tensor *expanded = mtk_tensor_from_data(ctx, MTK_FLOAT32, SHAPE(2, 3), 2, SHAPE(0, 1), buf);
    assert_null(mtk_copy_(ctx, expanded, self));
    assert_error(ctx, MTK_ERR_INVALID_ARGUMENT, "more than one element of the written-to tensor refers to a single memory location");
    /* ... unless it is empty: torch counts an empty tensor dense */
    mtk_tensor *empty = mtk_tensor_from_data(ctx, MTK_FLOAT32, SHAPE(0, 3), 2, SHAPE(0, 0), buf);
    assert_ptr_equal(mtk_copy_(ctx, empty, mtk_tensor_from_data(ctx, MTK_FLOAT32, SHAPE(3), 1, NULL, buf)), empty);
    /* x[1:].copy_(x[:2]) overlaps partly; x.copy_(x) is a no-op */
    float x[3] = { 0, 1, 2 };
    mtk_tensor *base = mtk_tensor_from_data(ctx, MTK_FLOAT32, SHAPE(3), 1, NULL, x);
    mtk_tensor *head = mtk_tensor_alias(base), *tail = mtk_tensor_alias(base);
    head->shape[0] = tail->shape[0] = 2;
    tail->storage_offset = 1;
    assert_null(mtk_copy_(ctx, tail, head));
    assert_error(ctx, MTK_ERR_INVALID_ARGUMENT, "some elements of the input tensor and the written-to tensor refer to a single memory location");
    assert_ptr_equal(mtk_copy_(ctx, head, head), head);
    mtk_ctx_free(ctx);
}

/* -------------------------------------------------------- fill_, zero_ */

static void fill_and_zero_write_every_element_with_torchs_checks(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    int8_t buf[6] = { 0 };
    mtk_tensor *self = mtk_tensor_from_data(ctx, MTK_INT8, SHAPE(2, 3), 2, NULL, buf);
    assert_ptr_equal(mtk_fill_(ctx, self, mtk_value_float(-1.75)), self); /* truncates, as torch */
    static const int8_t minus_one[6] = { -1, -1, -1, -1, -1, -1 };
    assert_memory_equal(buf, minus_one, sizeof buf);
    assert_null(mtk_fill_(ctx, self, mtk_value_int(300)));
    assert_error(ctx, MTK_ERR_OVERFLOW, "value cannot be converted to type int8_t without overflow");
    assert_ptr_equal(mtk_zero_(ctx, self), self);
    static const int8_t zeros[6] = { 0 };
    assert_memory_equal(buf, zeros, sizeof buf);
    /* uint8 takes -1 (wraps to 255) but not -2.25 */
    uint8_t u[2] = { 0 };
    mtk_tensor *bytes = mtk_tensor_from_data(ctx, MTK_UINT8, SHAPE(2), 1, NULL, u);
    assert_non_null(mtk_fill_(ctx, bytes, mtk_value_int(-1)));
    assert_int_equal(u[0], 255);
    assert_null(mtk_fill_(ctx, bytes, mtk_value_float(-2.25)));
    assert_error(ctx, MTK_ERR_OVERFLOW, "uint8_t");
    /* an expanded tensor takes a number, not a tensor value (torch's cpu) */
    float one = 0.0f, value = 4.0f;
    mtk_tensor *expanded = mtk_tensor_from_data(ctx, MTK_FLOAT32, SHAPE(3), 1, SHAPE(0), &one);
    assert_non_null(mtk_fill_(ctx, expanded, mtk_value_float(2.5)));
    assert_true(one == 2.5f);
    mtk_tensor *scalar = mtk_tensor_from_data(ctx, MTK_FLOAT32, NULL, 0, NULL, &value);
    assert_null(mtk_fill_(ctx, expanded, mtk_value_tensor(scalar)));
    assert_error(ctx, MTK_ERR_INVALID_ARGUMENT, "more than one element of the written-to tensor");
    /* the value tensor must be 0-dim, on meta too, where nothing else is checked */
    mtk_tensor *m = meta(ctx, MTK_INT8, 1, SHAPE(4), NULL);
    assert_ptr_equal(mtk_fill_(ctx, m, mtk_value_int(300)), m);
    assert_null(mtk_fill_(ctx, m, mtk_value_tensor(meta(ctx, MTK_FLOAT32, 1, SHAPE(1), NULL))));
    assert_error(ctx, MTK_ERR_SHAPE, "fill_ only supports 0-dimension value tensor but got tensor with 1 dimensions.");
    mtk_ctx_free(ctx);
}

/* ------------------------------------------------------------------- item */

static void item_returns_a_number_of_the_dtype_kind(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_value v;
    float f = 0.1f;
    assert_true(mtk_item(ctx, mtk_tensor_from_data(ctx, MTK_FLOAT32, SHAPE(1, 1), 2, NULL, &f), &v));
    assert_int_equal(v.kind, MTK_VALUE_FLOAT);
    assert_true(v.as.f == (double)0.1f);
    int32_t i = -7;
    assert_true(mtk_item(ctx, mtk_tensor_from_data(ctx, MTK_INT32, NULL, 0, NULL, &i), &v));
    assert_int_equal(v.kind, MTK_VALUE_INT);
    assert_int_equal(v.as.i, -7);
    bool b = true;
    assert_true(mtk_item(ctx, mtk_tensor_from_data(ctx, MTK_BOOL, SHAPE(1), 1, NULL, &b), &v));
    assert_int_equal(v.kind, MTK_VALUE_BOOL);
    assert_true(v.as.b);
    mtk_ctx_free(ctx);
}

static void item_on_meta_or_many_elements_fails(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_value v;
    assert_false(mtk_item(ctx, meta(ctx, MTK_FLOAT32, 0, NULL, NULL), &v));
    assert_int_equal(v.kind, MTK_VALUE_NONE);
    assert_error(ctx, MTK_ERR_META_NO_DATA, "item: Tensor.item() cannot be called on meta tensors");
    /* the element count is checked first, on every device */
    assert_false(mtk_item(ctx, meta(ctx, MTK_FLOAT32, 2, SHAPE(2, 3), NULL), &v));
    assert_error(ctx, MTK_ERR_SHAPE, "a Tensor with 6 elements cannot be converted to Scalar");
    float none[1];
    assert_false(mtk_item(ctx, mtk_tensor_from_data(ctx, MTK_FLOAT32, SHAPE(0), 1, NULL, none), &v));
    assert_error(ctx, MTK_ERR_SHAPE, "a Tensor with 0 elements cannot be converted to Scalar");
    mtk_ctx_free(ctx);
}

/* ------------------------------------------------------ data-dependent ops */

static void data_dependent_ops_fail_on_meta_after_checking_arguments(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_tensor *m = meta(ctx, MTK_FLOAT32, 2, SHAPE(3, 4), NULL);
    assert_null(mtk_nonzero(ctx, m));
    assert_error(ctx, MTK_ERR_DATA_DEPENDENT, "nonzero");
    assert_null(mtk_masked_select(ctx, m, meta(ctx, MTK_BOOL, 1, SHAPE(4), NULL)));
    assert_error(ctx, MTK_ERR_DATA_DEPENDENT, "masked_select");
    assert_null(mtk_unique(ctx, m, true, NULL, NULL));
    assert_error(ctx, MTK_ERR_DATA_DEPENDENT, "unique");
    /* bad arguments are reported as such, not as data dependence */
    assert_null(mtk_masked_select(ctx, m, meta(ctx, MTK_UINT8, 1, SHAPE(4), NULL)));
    assert_error(ctx, MTK_ERR_DTYPE, "masked_select: expected BoolTensor for mask");
    assert_null(mtk_masked_select(ctx, m, meta(ctx, MTK_BOOL, 1, SHAPE(3), NULL)));
    assert_error(ctx, MTK_ERR_SHAPE, "The size of tensor a (4) must match the size of tensor b (3)");
    assert_null(mtk_unique_dim(ctx, m, 2, true, NULL, NULL));
    assert_error(ctx, MTK_ERR_INDEX, "Dimension out of range (expected to be in range of [-2, 1], but got 2)");
    mtk_ctx_free(ctx);
}

static void nonzero_gives_indices_with_torch_strides(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_tensor *c = mtk_tensor_from_data(ctx, MTK_FLOAT32, SHAPE(3, 4), 2, NULL, (void *)example);
    mtk_tensor *nz = mtk_nonzero(ctx, c);
    assert_non_null(nz);
    assert_int_equal(nz->dtype, MTK_INT64);
    assert_int_equal(nz->shape[0], 4);
    assert_int_equal(nz->shape[1], 2);
    assert_strides(nz, 2, SHAPE(1, 4));
    /* [[0, 1], [0, 3], [1, 0], [1, 3]] stored column by column */
    static const int64_t want[8] = { 0, 0, 1, 1, 1, 3, 0, 3 };
    assert_memory_equal(mtk_tensor_data(nz), want, sizeof want);

    mtk_value r = call(ctx, "nonzero", 1, (mtk_value[]){ mtk_value_tensor(c) }, 1, (const char *[]){ "as_tuple" },
                       (mtk_value[]){ mtk_value_bool(true) });
    assert_int_equal(r.kind, MTK_VALUE_TUPLE);
    assert_int_equal(r.as.list.count, 2);
    static const int64_t cols[4] = { 1, 3, 0, 3 };
    assert_memory_equal(mtk_tensor_data(r.as.list.items[1].as.tensor), cols, sizeof cols);
    mtk_ctx_free(ctx);
}

static void masked_select_broadcasts_the_mask(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_tensor *c = mtk_tensor_from_data(ctx, MTK_FLOAT32, SHAPE(3, 4), 2, NULL, (void *)example);
    bool mask[4] = { true, false, true, false };
    mtk_tensor *out = mtk_masked_select(ctx, c, mtk_tensor_from_data(ctx, MTK_BOOL, SHAPE(4), 1, NULL, mask));
    assert_non_null(out);
    assert_int_equal(out->ndim, 1);
    assert_int_equal(out->shape[0], 6);
    static const float want[6] = { 0, 0, 3, 0, 0, 0 };
    assert_memory_equal(mtk_tensor_data(out), want, sizeof want);
    mtk_ctx_free(ctx);
}

static void unique_sorts_and_reports_inverse_and_counts(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_tensor *c = mtk_tensor_from_data(ctx, MTK_FLOAT32, SHAPE(3, 4), 2, NULL, (void *)example);
    mtk_tensor *inverse, *counts;
    mtk_tensor *values = mtk_unique(ctx, c, true, &inverse, &counts);
    assert_non_null(values);
    static const float want_values[5] = { -1, 0, 1.5f, 2, 3 };
    static const int64_t want_inverse[12] = { 1, 2, 1, 3, 4, 1, 1, 0, 1, 1, 1, 1 };
    static const int64_t want_counts[5] = { 1, 8, 1, 1, 1 };
    assert_int_equal(values->shape[0], 5);
    assert_memory_equal(mtk_tensor_data(values), want_values, sizeof want_values);
    assert_int_equal(inverse->ndim, 2);
    assert_memory_equal(mtk_tensor_data(inverse), want_inverse, sizeof want_inverse);
    assert_memory_equal(mtk_tensor_data(counts), want_counts, sizeof want_counts);

    /* by name: a tuple only when something beyond the values is asked for */
    mtk_value r = call(ctx, "unique", 1, (mtk_value[]){ mtk_value_tensor(c) }, 0, NULL, NULL);
    assert_int_equal(r.kind, MTK_VALUE_TENSOR);
    r = call(ctx, "unique", 1, (mtk_value[]){ mtk_value_tensor(c) }, 1, (const char *[]){ "return_counts" },
             (mtk_value[]){ mtk_value_bool(true) });
    assert_int_equal(r.kind, MTK_VALUE_TUPLE);
    assert_int_equal(r.as.list.count, 2);
    mtk_ctx_free(ctx);
}

/* torch.arange(24).reshape(2, 3, 4) % 3, unique along dim 2 */
static void unique_along_a_dim_keeps_torch_layout(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    int64_t a[24];
    for (int i = 0; i < 24; i++) a[i] = i % 3;
    mtk_tensor *t = mtk_tensor_from_data(ctx, MTK_INT64, SHAPE(2, 3, 4), 3, NULL, a);
    mtk_tensor *inverse;
    mtk_tensor *u = mtk_unique_dim(ctx, t, 2, true, &inverse, NULL);
    assert_non_null(u);
    assert_int_equal(u->shape[2], 3);
    assert_strides(u, 3, SHAPE(3, 1, 6));
    const int64_t *d = mtk_tensor_data(u);
    /* u[0] == [[0, 1, 2], [1, 2, 0], [2, 0, 1]] */
    assert_int_equal(d[0 * 3 + 1 * 1 + 2 * 6], 0);
    assert_int_equal(d[0 * 3 + 2 * 1 + 0 * 6], 2);
    assert_int_equal(d[1 * 3 + 1 * 1 + 1 * 6], 2);
    static const int64_t want_inverse[4] = { 0, 1, 2, 0 };
    assert_memory_equal(mtk_tensor_data(inverse), want_inverse, sizeof want_inverse);
    mtk_ctx_free(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(to_with_nothing_to_change_returns_the_input_itself),
        cmocka_unit_test(fill_and_zero_write_every_element_with_torchs_checks),
        cmocka_unit_test(to_dtype_keeps_dense_strides_and_densifies_others),
        cmocka_unit_test(to_meta_from_cpu_keeps_metadata_without_data),
        cmocka_unit_test(copy_out_of_meta_fails_with_hint),
        cmocka_unit_test(to_converts_values_on_cpu),
        cmocka_unit_test(to_binds_dtype_device_and_keywords_by_name),
        cmocka_unit_test(to_a_tensor_and_type_as_take_its_dtype_and_device),
        cmocka_unit_test(to_empty_gives_uninitialized_cpu_memory_from_meta),
        cmocka_unit_test(to_empty_strides_follow_empty_like_of_the_input_device),
        cmocka_unit_test(clone_preserves_dense_strides),
        cmocka_unit_test(copy_and_to_take_python_numbers),
        cmocka_unit_test(to_a_device_with_an_index_copies),
        cmocka_unit_test(copy_into_meta_checks_shapes_and_does_nothing),
        cmocka_unit_test(copy_from_meta_into_cpu_fails_with_hint),
        cmocka_unit_test(copy_broadcasts_and_converts_on_cpu),
        cmocka_unit_test(item_returns_a_number_of_the_dtype_kind),
        cmocka_unit_test(item_on_meta_or_many_elements_fails),
        cmocka_unit_test(data_dependent_ops_fail_on_meta_after_checking_arguments),
        cmocka_unit_test(nonzero_gives_indices_with_torch_strides),
        cmocka_unit_test(masked_select_broadcasts_the_mask),
        cmocka_unit_test(unique_sorts_and_reports_inverse_and_counts),
        cmocka_unit_test(unique_along_a_dim_keeps_torch_layout),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
