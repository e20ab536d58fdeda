/* Storage and tensors: reference counts through aliases and views,
 * borrowed memory that is never freed, wrapped memory released exactly
 * once, the context dropping its references, extents and data pointers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "mtk/core.h"

/* An allocator that counts, so tests can see what was freed. */
typedef struct { long allocs, frees; } counts;

static void *count_alloc(size_t size, void *user)
{
    ((counts *)user)->allocs++;
    return malloc(size);
}

static void count_free(void *ptr, void *user)
{
    if (ptr) ((counts *)user)->frees++;
    free(ptr);
}

static mtk_ctx *counted_ctx(counts *c)
{
    mtk_allocator a = { count_alloc, count_free, c };
    return mtk_ctx_new_with_allocator(&a);
}

/* A release callback that records its calls. */
typedef struct { int calls; void *data; size_t nbytes; } released;

static void record_release(void *data, size_t nbytes, void *user)
{
    released *r = user;
    r->calls++;
    r->data = data;
    r->nbytes = nbytes;
}

/* ------------------------------------------------------------ storage */

static void new_storage_is_owned_aligned_with_one_reference(void **state)
{
    (void)state;
    counts c = { 0 };
    mtk_ctx *ctx = counted_ctx(&c);
    long before = c.allocs;
    mtk_storage *s = mtk_storage_new(ctx, 1000);
    assert_non_null(s);
    assert_int_equal(mtk_storage_kind_of(s), MTK_STORAGE_OWNED);
    assert_int_equal(mtk_storage_nbytes(s), 1000);
    assert_int_equal(mtk_storage_refcount(s), 1);
    assert_int_equal((uintptr_t)mtk_storage_data(s) % 64, 0);
    memset(mtk_storage_data(s), 0x5a, 1000); /* all of it is writable */
    assert_int_equal(c.allocs - before, 2);  /* the struct and the data */
    mtk_storage_retain(s);
    assert_int_equal(mtk_storage_refcount(s), 2);
    long frees = c.frees;
    mtk_storage_release(s);
    assert_int_equal(c.frees, frees); /* still referenced */
    mtk_storage_release(s);
    assert_int_equal(c.frees, frees + 2);
    mtk_storage_release(NULL);
    mtk_storage_retain(NULL);
    assert_int_equal(mtk_storage_refcount(NULL), 0);
    assert_null(mtk_storage_data(NULL));
    assert_int_equal(mtk_storage_nbytes(NULL), 0);
    mtk_ctx_free(ctx);
    assert_int_equal(c.allocs, c.frees);
}

static void zero_byte_storage_is_valid(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_storage *s = mtk_storage_new(ctx, 0);
    assert_non_null(s);
    assert_int_equal(mtk_storage_nbytes(s), 0);
    assert_non_null(mtk_storage_data(s));
    mtk_storage_release(s);
    mtk_ctx_free(ctx);
}

static void huge_storage_fails_cleanly(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    assert_null(mtk_storage_new(ctx, SIZE_MAX - 10));
    assert_int_equal(mtk_ctx_status(ctx), MTK_ERR_OUT_OF_MEMORY);
    mtk_ctx_free(ctx);
}

/* Borrowed memory is the caller's: mtk never frees it (ASan would report
 * a free of this stack array). */
static void borrowed_memory_is_never_freed(void **state)
{
    (void)state;
    counts c = { 0 };
    float data[6] = { 1, 2, 3, 4, 5, 6 };
    mtk_ctx *ctx = counted_ctx(&c);
    int64_t shape[2] = { 2, 3 };
    mtk_tensor *t = mtk_tensor_from_data(ctx, MTK_FLOAT32, shape, 2, NULL, data);
    assert_non_null(t);
    assert_ptr_equal(mtk_tensor_data(t), data);
    assert_int_equal(mtk_storage_kind_of(t->storage), MTK_STORAGE_BORROWED);
    assert_int_equal(mtk_storage_nbytes(t->storage), sizeof data);
    assert_int_equal(mtk_storage_refcount(t->storage), 1); /* the tensor's only */
    mtk_tensor *a = mtk_tensor_alias(t);
    assert_int_equal(mtk_storage_refcount(t->storage), 2);
    assert_ptr_equal(mtk_tensor_data(a), data);
    mtk_ctx_free(ctx);
    assert_int_equal(c.allocs, c.frees); /* the storage struct went, the data stayed */
    assert_true(data[5] == 6.0f);
}

/* A wrapped (mapped) storage is released exactly once, when the last
 * reference goes, here after the context that used it. */
static void wrapped_storage_is_released_once_by_the_last_reference(void **state)
{
    (void)state;
    static char region[256];
    released r = { 0 };
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_storage *s = mtk_storage_wrap(ctx, MTK_STORAGE_MAPPED, region, sizeof region,
                                      record_release, &r);
    assert_non_null(s);
    assert_int_equal(mtk_storage_kind_of(s), MTK_STORAGE_MAPPED);
    int64_t shape[1] = { 64 };
    mtk_tensor *t = mtk_tensor_new(ctx, MTK_FLOAT32, shape, 1, NULL, MTK_DEVICE_CPU);
    assert_true(mtk_tensor_set_storage(t, s));
    mtk_tensor *v = mtk_tensor_alias(t);
    assert_non_null(v);
    assert_int_equal(mtk_storage_refcount(s), 3); /* ours, t's, v's */
    mtk_ctx_free(ctx);                             /* drops t's and v's */
    assert_int_equal(mtk_storage_refcount(s), 1);
    assert_int_equal(r.calls, 0);
    mtk_storage_release(s);
    assert_int_equal(r.calls, 1);
    assert_ptr_equal(r.data, region);
    assert_int_equal(r.nbytes, sizeof region);
}

static void wrapped_storage_without_tensors_is_released_by_its_owner(void **state)
{
    (void)state;
    static char region[16];
    released r = { 0 };
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_storage *s = mtk_storage_wrap(ctx, MTK_STORAGE_MAPPED, region, 16, record_release, &r);
    mtk_storage_release(s);
    assert_int_equal(r.calls, 1);
    mtk_ctx_free(ctx);
    assert_int_equal(r.calls, 1);
}

/* The context holds one reference per tensor that uses a storage and
 * drops them all when freed; a storage no one else holds goes with it. */
static void context_releases_its_references_on_free(void **state)
{
    (void)state;
    released r = { 0 };
    static char region[64];
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_storage *s = mtk_storage_wrap(ctx, MTK_STORAGE_MAPPED, region, 64, record_release, &r);
    int64_t shape[1] = { 16 };
    for (int i = 0; i < 5; i++) {
        mtk_tensor *t = mtk_tensor_new(ctx, MTK_FLOAT32, shape, 1, NULL, MTK_DEVICE_CPU);
        assert_true(mtk_tensor_set_storage(t, s));
    }
    assert_int_equal(mtk_storage_refcount(s), 6);
    mtk_storage_release(s); /* the context's tensors keep it alive */
    assert_int_equal(r.calls, 0);
    mtk_ctx_free(ctx);
    assert_int_equal(r.calls, 1);
}

/* Storage may outlive its context: it keeps a copy of the allocator. */
static void storage_outlives_its_context(void **state)
{
    (void)state;
    counts c = { 0 };
    mtk_ctx *ctx = counted_ctx(&c);
    mtk_storage *s = mtk_storage_new(ctx, 64);
    int64_t shape[1] = { 16 };
    mtk_tensor *t = mtk_tensor_new(ctx, MTK_INT32, shape, 1, NULL, MTK_DEVICE_CPU);
    assert_true(mtk_tensor_set_storage(t, s));
    mtk_ctx_free(ctx);
    assert_int_equal(mtk_storage_refcount(s), 1);
    memset(mtk_storage_data(s), 1, 64);
    mtk_storage_release(s);
    assert_int_equal(c.allocs, c.frees);
}

/* ------------------------------------------------------------ tensors */

static void alloc_storage_covers_strides_and_offset(void **state)
{
    (void)state;
    counts c = { 0 };
    mtk_ctx *ctx = counted_ctx(&c);
    int64_t shape[2] = { 2, 3 }, stride[2] = { 1, 4 };
    mtk_tensor *t = mtk_tensor_new(ctx, MTK_FLOAT64, shape, 2, stride, MTK_DEVICE_CPU);
    t->storage_offset = 5;
    assert_true(mtk_tensor_alloc_storage(t));
    /* elements 5 .. 5 + 1*1 + 2*4 = 14: 15 doubles */
    assert_int_equal(mtk_storage_nbytes(t->storage), 15 * 8);
    assert_int_equal(mtk_storage_refcount(t->storage), 1);
    assert_ptr_equal(mtk_tensor_data(t), (char *)mtk_storage_data(t->storage) + 5 * 8);
    double *d = mtk_tensor_data(t);
    d[1 + 2 * 4] = 3.0; /* the last element is inside the storage */
    mtk_ctx_free(ctx);
    assert_int_equal(c.allocs, c.frees);
}

static void empty_tensors_get_empty_storage(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    int64_t shape[2] = { 0, 3 };
    mtk_tensor *t = mtk_tensor_new(ctx, MTK_FLOAT32, shape, 2, NULL, MTK_DEVICE_CPU);
    assert_true(mtk_tensor_alloc_storage(t));
    assert_int_equal(mtk_storage_nbytes(t->storage), 0);
    assert_int_equal(mtk_tensor_nbytes(t), 0);
    int64_t lo = -1, hi = -1;
    assert_true(mtk_tensor_extent(t, &lo, &hi));
    assert_int_equal(lo, 0);
    assert_int_equal(hi, 0);
    mtk_ctx_free(ctx);
}

static void extent_spans_every_element(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    int64_t shape[3] = { 2, 3, 4 }, stride[3] = { 1, 2, 0 }; /* with a broadcast dim */
    mtk_tensor *t = mtk_tensor_new(ctx, MTK_FLOAT32, shape, 3, stride, MTK_DEVICE_META);
    t->storage_offset = 7;
    int64_t lo, hi;
    assert_true(mtk_tensor_extent(t, &lo, &hi));
    assert_int_equal(lo, 7);
    assert_int_equal(hi, 7 + 1 + 4 + 1);
    int64_t huge[2] = { INT64_C(1) << 40, INT64_C(1) << 20 }, hstride[2] = { INT64_C(1) << 30, 1 };
    mtk_tensor *h = mtk_tensor_new(ctx, MTK_UINT8, huge, 2, hstride, MTK_DEVICE_META);
    assert_non_null(h);
    assert_false(mtk_tensor_extent(h, &lo, &hi)); /* (2^40 - 1) * 2^30 overflows int64 */
    h->device = MTK_DEVICE_CPU;
    assert_false(mtk_tensor_alloc_storage(h));
    assert_int_equal(mtk_ctx_status(ctx), MTK_ERR_OVERFLOW);
    mtk_ctx_free(ctx);
}

static void storage_cannot_start_after_the_first_element(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    int64_t shape[1] = { 3 }, stride[1] = { -1 }; /* mtk_tensor_new takes any strides */
    mtk_tensor *t = mtk_tensor_new(ctx, MTK_FLOAT32, shape, 1, stride, MTK_DEVICE_CPU);
    assert_false(mtk_tensor_alloc_storage(t));
    assert_int_equal(mtk_ctx_status(ctx), MTK_ERR_INVALID_ARGUMENT);
    assert_string_equal(mtk_ctx_message(ctx),
                        "the tensor's strides and offset reach before the start of its storage");
    mtk_ctx_clear_error(ctx);
    t->storage_offset = 2; /* elements 2, 1, 0: fine */
    assert_true(mtk_tensor_alloc_storage(t));
    assert_int_equal(mtk_storage_nbytes(t->storage), 12);
    mtk_ctx_free(ctx);
}

static void set_storage_refuses_storage_too_small(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_storage *s = mtk_storage_new(ctx, 20);
    int64_t shape[1] = { 6 };
    mtk_tensor *t = mtk_tensor_new(ctx, MTK_FLOAT32, shape, 1, NULL, MTK_DEVICE_CPU);
    assert_false(mtk_tensor_set_storage(t, s));
    assert_int_equal(mtk_ctx_status(ctx), MTK_ERR_INVALID_ARGUMENT);
    assert_string_equal(mtk_ctx_message(ctx),
                        "storage of 20 bytes is too small for the tensor's shape and strides");
    assert_null(t->storage);
    assert_int_equal(mtk_storage_refcount(s), 1); /* no reference taken */
    mtk_ctx_clear_error(ctx);
    shape[0] = 5;
    mtk_tensor *u = mtk_tensor_new(ctx, MTK_FLOAT32, shape, 1, NULL, MTK_DEVICE_CPU);
    assert_true(mtk_tensor_set_storage(u, s)); /* exactly fits */
    mtk_storage_release(s);
    mtk_ctx_free(ctx);
}

static void from_data_with_strides_borrows_the_extent(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    int32_t data[12] = { 0 };
    int64_t shape[2] = { 3, 2 }, stride[2] = { 1, 3 }; /* a transposed (2, 3) */
    mtk_tensor *t = mtk_tensor_from_data(ctx, MTK_INT32, shape, 2, stride, data);
    assert_non_null(t);
    assert_int_equal(mtk_storage_nbytes(t->storage), 6 * 4);
    assert_false(mtk_tensor_is_contiguous(t));
    assert_true(mtk_tensor_is_non_overlapping_and_dense(t));
    int64_t neg[1] = { -1 }, two[1] = { 2 };
    assert_null(mtk_tensor_from_data(ctx, MTK_INT32, two, 1, neg, data));
    assert_int_equal(mtk_ctx_status(ctx), MTK_ERR_INVALID_ARGUMENT);
    mtk_ctx_free(ctx);
}

static void alias_shares_storage_and_drops_module_flags(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    int64_t shape[2] = { 4, 4 };
    mtk_tensor *t = mtk_tensor_new(ctx, MTK_BFLOAT16, shape, 2, NULL, MTK_DEVICE_CPU);
    assert_true(mtk_tensor_alloc_storage(t));
    t->flags = MTK_TENSOR_PARAMETER | MTK_TENSOR_BUFFER | MTK_TENSOR_REQUIRES_GRAD;
    t->storage_offset = 3;
    mtk_tensor *a = mtk_tensor_alias(t);
    assert_non_null(a);
    assert_ptr_not_equal(a, t);
    assert_ptr_equal(a->storage, t->storage);
    assert_int_equal(a->storage_offset, 3);
    assert_int_equal(a->flags, MTK_TENSOR_REQUIRES_GRAD);
    assert_int_equal(a->dtype, MTK_BFLOAT16);
    assert_memory_equal(a->shape, t->shape, sizeof t->shape);
    assert_int_equal(mtk_storage_refcount(t->storage), 2);
    mtk_tensor *b = mtk_tensor_alias(a);
    assert_int_equal(mtk_storage_refcount(t->storage), 3);
    assert_ptr_equal(mtk_tensor_data(b), mtk_tensor_data(t));
    assert_null(mtk_tensor_alias(NULL));
    mtk_ctx_free(ctx);
}

static void meta_tensors_have_no_storage_or_data(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    int64_t shape[3] = { 1024, 1024, 1024 };
    mtk_tensor *t = mtk_tensor_new(ctx, MTK_FLOAT32, shape, 3, NULL, MTK_DEVICE_META);
    assert_true(mtk_tensor_is_meta(t));
    assert_null(t->storage);
    assert_null(mtk_tensor_data(t));
    assert_int_equal(mtk_tensor_numel(t), INT64_C(1) << 30);
    assert_int_equal(mtk_tensor_nbytes(t), (size_t)4 << 30);
    mtk_tensor *a = mtk_tensor_alias(t);
    assert_non_null(a);
    assert_null(a->storage);
    assert_true(mtk_ctx_arena_bytes(ctx) < 1 << 20); /* metadata only */
    mtk_ctx_free(ctx);
}

static void release_since_a_mark_frees_all_but_the_kept_storage(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    int64_t shape[1] = { 4 };
    mtk_tensor *before = mtk_tensor_new(ctx, MTK_FLOAT32, shape, 1, NULL, MTK_DEVICE_CPU);
    assert_true(mtk_tensor_alloc_storage(before));
    const void *mark = mtk_ctx_storage_mark(ctx);
    mtk_tensor *kept = mtk_tensor_new(ctx, MTK_FLOAT32, shape, 1, NULL, MTK_DEVICE_CPU);
    mtk_tensor *temp = mtk_tensor_new(ctx, MTK_FLOAT32, shape, 1, NULL, MTK_DEVICE_CPU);
    assert_true(mtk_tensor_alloc_storage(kept) && mtk_tensor_alloc_storage(temp));
    mtk_tensor *view = mtk_tensor_alias(kept);          /* a second reference to kept's storage */
    mtk_tensor *before_view = mtk_tensor_alias(before); /* taken after the mark: dropped */
    mtk_storage *watched = temp->storage;
    mtk_storage_retain(watched); /* to watch its count */
    assert_int_equal(mtk_storage_refcount(watched), 2);
    assert_int_equal(mtk_storage_refcount(before->storage), 2);
    mtk_tensor *keep[2] = { NULL, view };
    mtk_ctx_release_storage_since(ctx, mark, keep, 2);
    assert_int_equal(mtk_storage_refcount(watched), 1);        /* the context's reference is gone */
    assert_int_equal(mtk_storage_refcount(kept->storage), 2);  /* kept and its view */
    assert_int_equal(mtk_storage_refcount(before->storage), 1); /* made before the mark: held */
    (void)before_view;
    mtk_storage_release(watched);
    mtk_ctx_release_storage_since(ctx, mark, NULL, 0); /* now kept goes too */
    mtk_ctx_free(ctx);                                 /* and nothing is released twice (ASan) */
}

/* A loop that resets the arena to a mark each iteration stays flat; the
 * kept tensor comes back as a copy with its data, the others' storage is
 * released. */
static void arena_reset_gives_back_metadata_and_keeps_the_kept_tensor(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    int64_t shape[1] = { 4 };
    mtk_tensor *before = mtk_tensor_new(ctx, MTK_FLOAT32, shape, 1, NULL, MTK_DEVICE_CPU);
    assert_true(mtk_tensor_alloc_storage(before));
    mtk_arena_mark mark = mtk_ctx_arena_mark(ctx);
    mtk_tensor *kept = NULL;
    size_t after_first = 0;
    for (int32_t step = 0; step < 200; step++) {
        for (int32_t i = 0; i < 300; i++) assert_non_null(mtk_ctx_alloc(ctx, 200)); /* 60 KB of metadata */
        assert_non_null(mtk_ctx_alloc(ctx, 100 * 1024));                         /* a big block */
        mtk_tensor *t = mtk_tensor_new(ctx, MTK_FLOAT32, shape, 1, NULL, MTK_DEVICE_CPU);
        mtk_tensor *temp = mtk_tensor_new(ctx, MTK_FLOAT32, shape, 1, NULL, MTK_DEVICE_CPU);
        assert_true(mtk_tensor_alloc_storage(t) && mtk_tensor_alloc_storage(temp));
        float *v = mtk_tensor_data(t);
        for (int32_t j = 0; j < 4; j++) v[j] = (float)(step + j) + (kept ? ((float *)mtk_tensor_data(kept))[j] : 0);
        mtk_tensor *keep[3] = { t, NULL, before };
        assert_true(mtk_ctx_arena_reset(ctx, &mark, keep, 3));
        assert_true(keep[0] != t && keep[0]->storage == t->storage);
        kept = keep[0];
        assert_int_equal(mtk_storage_refcount(kept->storage), 1);
        assert_int_equal(mtk_storage_refcount(before->storage), 1); /* made before the mark: held once */
        before = keep[2];
        if (step == 0) after_first = mtk_ctx_arena_bytes(ctx);
        assert_true(mtk_ctx_arena_bytes(ctx) <= after_first);
    }
    /* sum over steps s of (s + j) */
    for (int32_t j = 0; j < 4; j++) assert_true(((float *)mtk_tensor_data(kept))[j] == (float)(199 * 200 / 2 + 200 * j));
    mtk_ctx_free(ctx); /* nothing released twice, nothing leaked (ASan) */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(new_storage_is_owned_aligned_with_one_reference),
        cmocka_unit_test(release_since_a_mark_frees_all_but_the_kept_storage),
        cmocka_unit_test(arena_reset_gives_back_metadata_and_keeps_the_kept_tensor),
        cmocka_unit_test(zero_byte_storage_is_valid),
        cmocka_unit_test(huge_storage_fails_cleanly),
        cmocka_unit_test(borrowed_memory_is_never_freed),
        cmocka_unit_test(wrapped_storage_is_released_once_by_the_last_reference),
        cmocka_unit_test(wrapped_storage_without_tensors_is_released_by_its_owner),
        cmocka_unit_test(context_releases_its_references_on_free),
        cmocka_unit_test(storage_outlives_its_context),
        cmocka_unit_test(alloc_storage_covers_strides_and_offset),
        cmocka_unit_test(empty_tensors_get_empty_storage),
        cmocka_unit_test(extent_spans_every_element),
        cmocka_unit_test(storage_cannot_start_after_the_first_element),
        cmocka_unit_test(set_storage_refuses_storage_too_small),
        cmocka_unit_test(from_data_with_strides_borrows_the_extent),
        cmocka_unit_test(alias_shares_storage_and_drops_module_flags),
        cmocka_unit_test(meta_tensors_have_no_storage_or_data),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
