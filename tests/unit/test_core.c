/* The context: arena, strdup, the sticky error, scopes, the allocator;
 * and the boxed values of mtk/value.h. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "mtk/core.h"
#include "mtk/value.h"

/* ------------------------------------------------ allocators for testing */

/* Counts allocations and frees; optionally hands out memory that is only
 * 8-byte aligned (never 16), to check the arena aligns by itself. */
typedef struct counting {
    long allocs, frees;
    size_t live_bytes;
    bool misalign;
} counting;

typedef struct { void *raw; size_t size; } block_header; /* 16 bytes */

static void *counting_alloc(size_t size, void *user)
{
    counting *c = user;
    char *raw = malloc(size + sizeof(block_header) + 8);
    if (!raw) return NULL;
    char *p = raw + sizeof(block_header) + (c->misalign ? 8 : 0);
    block_header h = { raw, size };
    memcpy(p - sizeof h, &h, sizeof h);
    c->allocs++;
    c->live_bytes += size;
    return p;
}

static void counting_free(void *ptr, void *user)
{
    counting *c = user;
    if (!ptr) return;
    block_header h;
    memcpy(&h, (char *)ptr - sizeof h, sizeof h);
    c->frees++;
    c->live_bytes -= h.size;
    free(h.raw);
}

static mtk_ctx *counting_ctx(counting *c)
{
    mtk_allocator a = { counting_alloc, counting_free, c };
    return mtk_ctx_new_with_allocator(&a);
}

/* ----------------------------------------------------------- defaults */

static void new_context_defaults_to_cpu_float32_init(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    assert_non_null(ctx);
    assert_int_equal(mtk_ctx_device(ctx), MTK_DEVICE_CPU);      /* torch's default device */
    assert_int_equal(mtk_ctx_dtype(ctx), MTK_FLOAT32);          /* torch.get_default_dtype() */
    assert_int_equal(mtk_ctx_init_mode(ctx), MTK_INIT_INIT);
    assert_int_equal(mtk_ctx_status(ctx), MTK_OK);
    assert_string_equal(mtk_ctx_message(ctx), "");
    assert_int_equal(mtk_ctx_arena_bytes(ctx), 0);
    mtk_ctx_free(ctx);
    mtk_ctx_free(NULL); /* accepted */
    assert_int_equal(mtk_ctx_arena_bytes(NULL), 0);
}

static void null_alloc_function_means_the_default_allocator(void **state)
{
    (void)state;
    mtk_allocator a = { NULL, NULL, NULL };
    mtk_ctx *ctx = mtk_ctx_new_with_allocator(&a);
    assert_non_null(ctx);
    assert_non_null(mtk_ctx_alloc(ctx, 10));
    mtk_ctx_free(ctx);
}

/* -------------------------------------------------------------- arena */

static void arena_memory_is_zeroed_and_16_byte_aligned(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    for (size_t size = 0; size < 200; size++) {
        unsigned char *p = mtk_ctx_alloc(ctx, size);
        assert_non_null(p);
        assert_int_equal((uintptr_t)p % 16, 0);
        for (size_t i = 0; i < size; i++) assert_int_equal(p[i], 0);
        memset(p, 0xab, size); /* must not spill into the next allocation */
    }
    mtk_ctx_free(ctx);
}

/* Past the first blocks the arena maps its own (zero pages it need not
 * clear): memory handed out again after a reset is cleared all the same,
 * in those blocks and in a big request's own one. */
static void arena_memory_is_zeroed_again_after_a_reset(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    for (int i = 0; i < 600; i++) assert_non_null(mtk_ctx_alloc(ctx, 1000)); /* into a mapped block */
    mtk_arena_mark mark = mtk_ctx_arena_mark(ctx);
    for (int round = 0; round < 3; round++) {
        unsigned char *small = mtk_ctx_alloc(ctx, 3000);
        unsigned char *big = mtk_ctx_alloc(ctx, 300000);
        assert_non_null(small);
        assert_non_null(big);
        for (size_t i = 0; i < 3000; i++) assert_int_equal(small[i], 0);
        for (size_t i = 0; i < 300000; i++)
            if (big[i]) fail_msg("round %d: byte %zu of the big block is %d", round, i, big[i]);
        memset(small, 0xab, 3000);
        memset(big, 0xcd, 300000);
        assert_true(mtk_ctx_arena_reset(ctx, &mark, NULL, 0));
    }
    mtk_ctx_free(ctx);
}

static void arena_aligns_even_when_the_allocator_does_not(void **state)
{
    (void)state;
    counting c = { .misalign = true };
    mtk_ctx *ctx = counting_ctx(&c);
    assert_non_null(ctx);
    for (int i = 0; i < 100; i++) {
        void *p = mtk_ctx_alloc(ctx, (size_t)(i * 7 + 1));
        assert_non_null(p);
        assert_int_equal((uintptr_t)p % 16, 0);
    }
    void *big = mtk_ctx_alloc(ctx, 1 << 20);
    assert_non_null(big);
    assert_int_equal((uintptr_t)big % 16, 0);
    mtk_ctx_free(ctx);
    assert_int_equal(c.allocs, c.frees);
    assert_int_equal(c.live_bytes, 0);
}

static void zero_size_allocations_are_distinct(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    void *a = mtk_ctx_alloc(ctx, 0), *b = mtk_ctx_alloc(ctx, 0);
    assert_non_null(a);
    assert_non_null(b);
    assert_ptr_not_equal(a, b);
    mtk_ctx_free(ctx);
}

/* Many small allocations: the arena grows block by block; earlier memory
 * stays where it was and keeps its contents. */
static void arena_grows_and_keeps_earlier_memory(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    enum { N = 20000, SIZE = 40 };
    static unsigned char *ptrs[N];
    size_t last_bytes = 0;
    int growths = 0;
    for (int i = 0; i < N; i++) {
        ptrs[i] = mtk_ctx_alloc(ctx, SIZE);
        assert_non_null(ptrs[i]);
        memset(ptrs[i], i & 0xff, SIZE);
        if (mtk_ctx_arena_bytes(ctx) != last_bytes) growths++, last_bytes = mtk_ctx_arena_bytes(ctx);
    }
    for (int i = 0; i < N; i++)
        for (int k = 0; k < SIZE; k++) assert_int_equal(ptrs[i][k], i & 0xff);
    /* 20000 * 48 bytes = 960000: blocks of 64K, 128K, 256K, 512K, 1M */
    assert_true(mtk_ctx_arena_bytes(ctx) >= (size_t)N * 48);
    assert_true(growths >= 2 && growths <= 8);
    mtk_ctx_free(ctx);
}

/* A big request gets a block of its own; the current block keeps serving
 * small requests afterwards (no space is thrown away). */
static void big_allocation_gets_its_own_block(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    assert_non_null(mtk_ctx_alloc(ctx, 16));
    size_t first = mtk_ctx_arena_bytes(ctx);
    assert_int_equal(first, 64 * 1024);
    unsigned char *big = mtk_ctx_alloc(ctx, 1000000);
    assert_non_null(big);
    assert_int_equal(big[0], 0);
    assert_int_equal(big[999999], 0);
    assert_int_equal(mtk_ctx_arena_bytes(ctx), first + 1000000);
    for (int i = 0; i < 100; i++) assert_non_null(mtk_ctx_alloc(ctx, 64));
    assert_int_equal(mtk_ctx_arena_bytes(ctx), first + 1000000);
    mtk_ctx_free(ctx);
}

/* Like malloc on a machine with 1 GiB: refuses anything bigger (real
 * malloc of SIZE_MAX / 2 aborts under ASan instead of returning NULL). */
static void *capped_alloc(size_t size, void *user)
{
    (void)user;
    return size > ((size_t)1 << 30) ? NULL : malloc(size);
}

static void capped_free(void *ptr, void *user)
{
    (void)user;
    free(ptr);
}

static void arena_refuses_impossible_sizes(void **state)
{
    (void)state;
    mtk_allocator capped = { capped_alloc, capped_free, NULL };
    mtk_ctx *ctx = mtk_ctx_new_with_allocator(&capped);
    assert_null(mtk_ctx_alloc(ctx, SIZE_MAX));
    assert_int_equal(mtk_ctx_status(ctx), MTK_ERR_OUT_OF_MEMORY);
    mtk_ctx_clear_error(ctx);
    assert_null(mtk_ctx_alloc(ctx, SIZE_MAX - 8));
    assert_int_equal(mtk_ctx_status(ctx), MTK_ERR_OUT_OF_MEMORY);
    mtk_ctx_clear_error(ctx);
    assert_null(mtk_ctx_alloc(ctx, SIZE_MAX / 2));
    assert_int_equal(mtk_ctx_status(ctx), MTK_ERR_OUT_OF_MEMORY);
    mtk_ctx_clear_error(ctx);
    assert_non_null(mtk_ctx_alloc(ctx, 32)); /* still usable */
    mtk_ctx_free(ctx);
}

static void strdup_copies_into_the_arena(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    char text[] = "model.layers.0.self_attn.q_proj.weight";
    char *copy = mtk_ctx_strdup(ctx, text);
    assert_non_null(copy);
    assert_ptr_not_equal(copy, text);
    text[0] = 'X';
    assert_string_equal(copy, "model.layers.0.self_attn.q_proj.weight");
    char *empty = mtk_ctx_strdup(ctx, "");
    assert_non_null(empty);
    assert_string_equal(empty, "");
    assert_null(mtk_ctx_strdup(ctx, NULL));
    assert_int_equal(mtk_ctx_status(ctx), MTK_ERR_INVALID_ARGUMENT);
    mtk_ctx_free(ctx);
}

static void every_allocation_is_returned_on_free(void **state)
{
    (void)state;
    counting c = { 0 };
    mtk_ctx *ctx = counting_ctx(&c);
    for (int i = 0; i < 5000; i++) mtk_ctx_alloc(ctx, (size_t)(i % 300));
    mtk_ctx_alloc(ctx, 3 << 20);
    void *m = mtk_ctx_malloc(ctx, 100);
    assert_non_null(m);
    mtk_ctx_mfree(ctx, m);
    mtk_ctx_mfree(ctx, NULL);
    int64_t shape[2] = { 3, 4 };
    mtk_tensor *t = mtk_tensor_new(ctx, MTK_FLOAT32, shape, 2, NULL, MTK_DEVICE_CPU);
    assert_true(mtk_tensor_alloc_storage(t));
    assert_true(c.allocs > 3);
    mtk_ctx_free(ctx);
    assert_int_equal(c.allocs, c.frees);
    assert_int_equal(c.live_bytes, 0);
}

/* ------------------------------------------------------- sticky error */

static void first_error_is_kept_until_cleared(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    assert_false(mtk_error(ctx, MTK_ERR_SHAPE, "first %d", 1));
    assert_false(mtk_error(ctx, MTK_ERR_DTYPE, "second %d", 2));
    assert_int_equal(mtk_ctx_status(ctx), MTK_ERR_SHAPE);
    assert_string_equal(mtk_ctx_message(ctx), "first 1");
    mtk_ctx_clear_error(ctx);
    assert_int_equal(mtk_ctx_status(ctx), MTK_OK);
    assert_string_equal(mtk_ctx_message(ctx), "");
    mtk_error(ctx, MTK_ERR_DTYPE, "second %d", 2);
    assert_int_equal(mtk_ctx_status(ctx), MTK_ERR_DTYPE);
    assert_string_equal(mtk_ctx_message(ctx), "second 2");
    mtk_ctx_free(ctx);
}

static void error_with_ok_status_still_records_an_error(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_error(ctx, MTK_OK, "oops");
    assert_int_equal(mtk_ctx_status(ctx), MTK_ERR_INVALID_ARGUMENT);
    assert_string_equal(mtk_ctx_message(ctx), "oops");
    mtk_ctx_free(ctx);
    assert_false(mtk_error(NULL, MTK_ERR_SHAPE, "no context")); /* no crash */
}

static void long_messages_are_truncated_safely(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    char big[5000];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    mtk_error(ctx, MTK_ERR_SHAPE, "%s", big);
    size_t n = strlen(mtk_ctx_message(ctx));
    assert_true(n > 500 && n < sizeof big - 1);
    assert_int_equal(mtk_ctx_message(ctx)[0], 'x');
    mtk_ctx_free(ctx);
}

/* ------------------------------------------------------------- scopes */

static void device_scopes_nest_and_unwind(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    assert_true(mtk_ctx_push_device(ctx, MTK_DEVICE_META));
    assert_int_equal(mtk_ctx_device(ctx), MTK_DEVICE_META);
    assert_true(mtk_ctx_push_device(ctx, MTK_DEVICE_CPU));
    assert_int_equal(mtk_ctx_device(ctx), MTK_DEVICE_CPU);
    assert_true(mtk_ctx_pop_device(ctx));
    assert_int_equal(mtk_ctx_device(ctx), MTK_DEVICE_META);
    assert_true(mtk_ctx_pop_device(ctx));
    assert_int_equal(mtk_ctx_device(ctx), MTK_DEVICE_CPU);
    assert_int_equal(mtk_ctx_status(ctx), MTK_OK);
    mtk_ctx_free(ctx);
}

static void device_scope_allows_64_levels_then_fails(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    for (int i = 0; i < 64; i++)
        assert_true(mtk_ctx_push_device(ctx, i % 2 ? MTK_DEVICE_CPU : MTK_DEVICE_META));
    assert_int_equal(mtk_ctx_status(ctx), MTK_OK);
    assert_int_equal(mtk_ctx_device(ctx), MTK_DEVICE_CPU); /* the 64th push */
    assert_false(mtk_ctx_push_device(ctx, MTK_DEVICE_META));
    assert_int_equal(mtk_ctx_status(ctx), MTK_ERR_INVALID_ARGUMENT);
    assert_string_equal(mtk_ctx_message(ctx), "too many nested device scopes (at most 64)");
    assert_int_equal(mtk_ctx_device(ctx), MTK_DEVICE_CPU); /* unchanged */
    mtk_ctx_clear_error(ctx);
    for (int i = 63; i >= 0; i--) {
        assert_int_equal(mtk_ctx_device(ctx), i % 2 ? MTK_DEVICE_CPU : MTK_DEVICE_META);
        assert_true(mtk_ctx_pop_device(ctx));
    }
    assert_int_equal(mtk_ctx_device(ctx), MTK_DEVICE_CPU);
    mtk_ctx_free(ctx);
}

static void pop_on_an_empty_scope_fails(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    assert_false(mtk_ctx_pop_device(ctx));
    assert_int_equal(mtk_ctx_status(ctx), MTK_ERR_INVALID_ARGUMENT);
    assert_string_equal(mtk_ctx_message(ctx), "pop of the device scope without a matching push");
    assert_int_equal(mtk_ctx_device(ctx), MTK_DEVICE_CPU);
    mtk_ctx_clear_error(ctx);
    assert_false(mtk_ctx_pop_dtype(ctx));
    assert_string_equal(mtk_ctx_message(ctx), "pop of the dtype scope without a matching push");
    assert_int_equal(mtk_ctx_dtype(ctx), MTK_FLOAT32);
    mtk_ctx_clear_error(ctx);
    assert_false(mtk_ctx_pop_init_mode(ctx));
    assert_string_equal(mtk_ctx_message(ctx), "pop of the init-mode scope without a matching push");
    assert_int_equal(mtk_ctx_init_mode(ctx), MTK_INIT_INIT);
    mtk_ctx_free(ctx);
}

static void device_scope_refuses_devices_this_build_lacks(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    assert_false(mtk_ctx_push_device(ctx, MTK_DEVICE_CUDA(0)));
    assert_int_equal(mtk_ctx_status(ctx), MTK_ERR_DEVICE);
    assert_string_equal(mtk_ctx_message(ctx), "device cuda:0 is not supported by this build");
    assert_int_equal(mtk_ctx_device(ctx), MTK_DEVICE_CPU);
    mtk_ctx_free(ctx);
}

/* torch.set_default_dtype accepts float16, bfloat16, float32, float64 */
static void dtype_scope_takes_floating_types_only(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    static const mtk_dtype ok[] = { MTK_FLOAT16, MTK_BFLOAT16, MTK_FLOAT64, MTK_FLOAT32 };
    for (int i = 0; i < 4; i++) {
        assert_true(mtk_ctx_push_dtype(ctx, ok[i]));
        assert_int_equal(mtk_ctx_dtype(ctx), ok[i]);
    }
    for (int i = 3; i > 0; i--) {
        assert_true(mtk_ctx_pop_dtype(ctx));
        assert_int_equal(mtk_ctx_dtype(ctx), ok[i - 1]);
    }
    assert_true(mtk_ctx_pop_dtype(ctx));
    assert_int_equal(mtk_ctx_dtype(ctx), MTK_FLOAT32);
    static const mtk_dtype bad[] = { MTK_INT64, MTK_BOOL, MTK_UINT8, MTK_FLOAT8_E4M3FN,
                                     MTK_FLOAT8_E5M2, MTK_DTYPE_UNDEFINED };
    for (int i = 0; i < 6; i++) {
        assert_false(mtk_ctx_push_dtype(ctx, bad[i]));
        assert_int_equal(mtk_ctx_status(ctx), MTK_ERR_DTYPE);
        assert_non_null(strstr(mtk_ctx_message(ctx),
                               "only floating-point types are supported as the default type"));
        mtk_ctx_clear_error(ctx);
    }
    assert_int_equal(mtk_ctx_dtype(ctx), MTK_FLOAT32);
    for (int i = 0; i < 64; i++) assert_true(mtk_ctx_push_dtype(ctx, MTK_FLOAT16));
    assert_false(mtk_ctx_push_dtype(ctx, MTK_FLOAT16));
    assert_string_equal(mtk_ctx_message(ctx), "too many nested dtype scopes (at most 64)");
    mtk_ctx_free(ctx);
}

static void init_mode_scope_nests_and_checks_values(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    assert_true(mtk_ctx_push_init_mode(ctx, MTK_INIT_META));
    assert_true(mtk_ctx_push_init_mode(ctx, MTK_INIT_EMPTY));
    assert_int_equal(mtk_ctx_init_mode(ctx), MTK_INIT_EMPTY);
    assert_true(mtk_ctx_pop_init_mode(ctx));
    assert_int_equal(mtk_ctx_init_mode(ctx), MTK_INIT_META);
    assert_false(mtk_ctx_push_init_mode(ctx, (mtk_init_mode)7));
    assert_int_equal(mtk_ctx_status(ctx), MTK_ERR_INVALID_ARGUMENT);
    assert_string_equal(mtk_ctx_message(ctx), "unknown init mode 7");
    assert_int_equal(mtk_ctx_init_mode(ctx), MTK_INIT_META);
    mtk_ctx_clear_error(ctx);
    for (int i = 1; i < 64; i++) assert_true(mtk_ctx_push_init_mode(ctx, MTK_INIT_EMPTY));
    assert_false(mtk_ctx_push_init_mode(ctx, MTK_INIT_INIT));
    assert_string_equal(mtk_ctx_message(ctx), "too many nested init-mode scopes (at most 64)");
    mtk_ctx_free(ctx);
}

/* The three stacks are independent. */
static void scopes_are_independent(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_ctx_push_device(ctx, MTK_DEVICE_META);
    mtk_ctx_push_dtype(ctx, MTK_BFLOAT16);
    mtk_ctx_push_init_mode(ctx, MTK_INIT_EMPTY);
    assert_true(mtk_ctx_pop_device(ctx));
    assert_int_equal(mtk_ctx_dtype(ctx), MTK_BFLOAT16);
    assert_int_equal(mtk_ctx_init_mode(ctx), MTK_INIT_EMPTY);
    assert_false(mtk_ctx_pop_device(ctx));
    mtk_ctx_free(ctx);
}

/* ------------------------------------------------------------- values */

static void value_lists_start_as_none(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_value l = mtk_value_list(ctx, 3, false);
    assert_int_equal(l.kind, MTK_VALUE_LIST);
    assert_int_equal(l.as.list.count, 3);
    for (int i = 0; i < 3; i++) assert_int_equal(l.as.list.items[i].kind, MTK_VALUE_NONE);
    mtk_value t = mtk_value_list(ctx, 0, true);
    assert_int_equal(t.kind, MTK_VALUE_TUPLE);
    assert_int_equal(t.as.list.count, 0);
    mtk_value bad = mtk_value_list(ctx, -1, false);
    assert_int_equal(bad.kind, MTK_VALUE_NONE);
    assert_int_equal(mtk_ctx_status(ctx), MTK_ERR_INVALID_ARGUMENT);
    mtk_ctx_free(ctx);
}

static void int_lists_read_back_as_ints(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    int64_t in[3] = { 2, -1, 4 }, out[4];
    mtk_value v = mtk_value_int_list(ctx, in, 3);
    assert_int_equal(mtk_value_to_ints(ctx, &v, out, 4, "view", "size"), 3);
    assert_memory_equal(out, in, sizeof in);
    mtk_value one = mtk_value_int(7);
    assert_int_equal(mtk_value_to_ints(ctx, &one, out, 4, "view", "size"), 1);
    assert_int_equal(out[0], 7);
    assert_int_equal(mtk_ctx_status(ctx), MTK_OK);
    mtk_ctx_free(ctx);
}

static void int_list_errors_name_the_op_and_argument(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    int64_t out[2];
    mtk_value f = mtk_value_float(1.5);
    assert_int_equal(mtk_value_to_ints(ctx, &f, out, 2, "zeros", "size"), -1);
    assert_string_equal(mtk_ctx_message(ctx), "zeros(): argument 'size' must be tuple of ints, not float");
    mtk_ctx_clear_error(ctx);

    mtk_value l = mtk_value_list(ctx, 2, true);
    l.as.list.items[0] = mtk_value_int(1);
    l.as.list.items[1] = mtk_value_bool(true); /* torch refuses bools in sizes */
    assert_int_equal(mtk_value_to_ints(ctx, &l, out, 2, "zeros", "size"), -1);
    assert_string_equal(mtk_ctx_message(ctx),
                        "zeros(): argument 'size' must be tuple of ints, but found element of type bool at pos 1");
    mtk_ctx_clear_error(ctx);

    int64_t three[3] = { 1, 2, 3 };
    mtk_value big = mtk_value_int_list(ctx, three, 3);
    assert_int_equal(mtk_value_to_ints(ctx, &big, out, 2, "zeros", "size"), -1);
    assert_int_equal(mtk_ctx_status(ctx), MTK_ERR_SHAPE);
    mtk_ctx_free(ctx);
}

static void value_numbers_and_type_names(void **state)
{
    (void)state;
    mtk_value b = mtk_value_bool(true), i = mtk_value_int(-3), f = mtk_value_float(2.5);
    mtk_value s = mtk_value_string("x"), n = mtk_value_none();
    assert_true(mtk_value_is_number(&b));
    assert_true(mtk_value_is_number(&i));
    assert_true(mtk_value_is_number(&f));
    assert_false(mtk_value_is_number(&s));
    assert_false(mtk_value_is_number(&n));
    assert_true(mtk_value_as_double(&b) == 1.0);
    assert_true(mtk_value_as_double(&i) == -3.0);
    assert_true(mtk_value_as_double(&f) == 2.5);
    assert_true(mtk_value_as_double(&s) == 0.0);
    /* the words of Python's type errors */
    assert_string_equal(mtk_value_type_name(&n), "NoneType");
    assert_string_equal(mtk_value_type_name(&b), "bool");
    assert_string_equal(mtk_value_type_name(&i), "int");
    assert_string_equal(mtk_value_type_name(&f), "float");
    assert_string_equal(mtk_value_type_name(&s), "str");
    mtk_value d = mtk_value_dtype(MTK_FLOAT16), dev = mtk_value_device(MTK_DEVICE_META);
    mtk_value t = mtk_value_tensor(NULL);
    assert_string_equal(mtk_value_type_name(&d), "torch.dtype");
    assert_string_equal(mtk_value_type_name(&dev), "torch.device");
    assert_string_equal(mtk_value_type_name(&t), "Tensor");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(new_context_defaults_to_cpu_float32_init),
        cmocka_unit_test(null_alloc_function_means_the_default_allocator),
        cmocka_unit_test(arena_memory_is_zeroed_and_16_byte_aligned),
        cmocka_unit_test(arena_memory_is_zeroed_again_after_a_reset),
        cmocka_unit_test(arena_aligns_even_when_the_allocator_does_not),
        cmocka_unit_test(zero_size_allocations_are_distinct),
        cmocka_unit_test(arena_grows_and_keeps_earlier_memory),
        cmocka_unit_test(big_allocation_gets_its_own_block),
        cmocka_unit_test(arena_refuses_impossible_sizes),
        cmocka_unit_test(strdup_copies_into_the_arena),
        cmocka_unit_test(every_allocation_is_returned_on_free),
        cmocka_unit_test(first_error_is_kept_until_cleared),
        cmocka_unit_test(error_with_ok_status_still_records_an_error),
        cmocka_unit_test(long_messages_are_truncated_safely),
        cmocka_unit_test(device_scopes_nest_and_unwind),
        cmocka_unit_test(device_scope_allows_64_levels_then_fails),
        cmocka_unit_test(pop_on_an_empty_scope_fails),
        cmocka_unit_test(device_scope_refuses_devices_this_build_lacks),
        cmocka_unit_test(dtype_scope_takes_floating_types_only),
        cmocka_unit_test(init_mode_scope_nests_and_checks_values),
        cmocka_unit_test(scopes_are_independent),
        cmocka_unit_test(value_lists_start_as_none),
        cmocka_unit_test(int_lists_read_back_as_ints),
        cmocka_unit_test(int_list_errors_name_the_op_and_argument),
        cmocka_unit_test(value_numbers_and_type_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
