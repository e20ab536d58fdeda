/* The op table, the dispatcher and the by-name binder: every row parses,
 * names resolve with torch's prefixes, arguments bind like Python's
 * (gathered ints, keywords, defaults), binding errors use PyTorch's words,
 * failed ops propagate as NULL, devices are checked, cpu outputs get
 * storage (views share it), and results have the signature's shape. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "mtk/mtk.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))
#define T(t) mtk_value_tensor(t)
#define I(i) mtk_value_int(i)
#define F(f) mtk_value_float(f)
#define S(s) mtk_value_string(s)

static int setup_ctx(void **state)
{
    *state = mtk_ctx_new();
    return *state ? 0 : -1;
}

static int teardown_ctx(void **state)
{
    mtk_ctx_free(*state);
    return 0;
}

/* Calls by name and returns the result (None on failure). */
static mtk_value callv(mtk_ctx *ctx, const char *name, const mtk_value *pos, int32_t npos,
                       const char *const *kw, const mtk_value *kwv, int32_t nkw)
{
    mtk_value r = mtk_value_int(12345);
    if (!mtk_op_call_by_name(ctx, name, pos, npos, kw, kwv, nkw, &r)) {
        assert_int_equal(r.kind, MTK_VALUE_NONE); /* a failed call leaves None */
        assert_int_not_equal(mtk_ctx_status(ctx), MTK_OK);
    }
    return r;
}

/* Calls by name and returns the tensor result, or NULL. */
static mtk_tensor *callt(mtk_ctx *ctx, const char *name, const mtk_value *pos, int32_t npos,
                         const char *const *kw, const mtk_value *kwv, int32_t nkw)
{
    mtk_value r = callv(ctx, name, pos, npos, kw, kwv, nkw);
    return r.kind == MTK_VALUE_TENSOR ? r.as.tensor : NULL;
}

#define CALL(ctx, name, ...) callt(ctx, name, (mtk_value[]){ __VA_ARGS__ }, \
                                   (int32_t)COUNT(((mtk_value[]){ __VA_ARGS__ })), NULL, NULL, 0)

static void assert_shape(const mtk_tensor *t, int32_t ndim, const int64_t *shape)
{
    assert_non_null(t);
    assert_int_equal(t->ndim, ndim);
    assert_memory_equal(t->shape, shape, (size_t)ndim * sizeof(int64_t));
}

/* The call fails with `status` and exactly `message`. */
static void assert_fails_with(mtk_ctx *ctx, const char *name, const mtk_value *pos, int32_t npos,
                              const char *const *kw, const mtk_value *kwv, int32_t nkw,
                              mtk_status status, const char *message)
{
    mtk_ctx_clear_error(ctx);
    mtk_value r;
    assert_false(mtk_op_call_by_name(ctx, name, pos, npos, kw, kwv, nkw, &r));
    assert_int_equal(r.kind, MTK_VALUE_NONE);
    if (mtk_ctx_status(ctx) != status || strcmp(mtk_ctx_message(ctx), message) != 0)
        print_message("  got %s: %s\n", mtk_status_name(mtk_ctx_status(ctx)), mtk_ctx_message(ctx));
    assert_int_equal(mtk_ctx_status(ctx), status);
    assert_string_equal(mtk_ctx_message(ctx), message);
    mtk_ctx_clear_error(ctx);
}

/* ------------------------------------------------------------ the table */

static void every_row_has_a_parsable_signature_and_a_unique_name(void **state)
{
    (void)state;
    assert_true(mtk_op_count() > 50);
    for (int32_t i = 0; i < mtk_op_count(); i++) {
        const mtk_op_def *op = mtk_op_at(i);
        assert_non_null(op);
        assert_non_null(op->name);
        assert_non_null(op->meta);
        size_t n = strlen(op->name);
        if (strncmp(op->signature, op->name, n) != 0 || op->signature[n] != '(')
            fail_msg("op %s: signature '%s' does not start with its name", op->name, op->signature);
        const mtk_arg_spec *specs;
        int32_t nargs = mtk_op_args(op, &specs);
        if (nargs < 0) fail_msg("op %s: malformed signature '%s'", op->name, op->signature);
        assert_true(nargs <= MTK_MAX_OP_ARGS);
        for (int32_t k = 0; k < nargs; k++) {
            assert_non_null(specs[k].name);
            assert_true(strlen(specs[k].name) > 0);
            for (int32_t j = 0; j < k; j++) assert_string_not_equal(specs[j].name, specs[k].name);
        }
        assert_ptr_equal(mtk_op_find(op->name), op);
        for (int32_t j = 0; j < i; j++) assert_string_not_equal(mtk_op_at(j)->name, op->name);
    }
    assert_null(mtk_op_at(-1));
    assert_null(mtk_op_at(mtk_op_count()));
}

static void every_row_binds_the_types_it_declares(void **state)
{
    (void)state;
    static const char *const known[] = { "Tensor", "Tensor[]", "Scalar", "Tensor|Scalar", "int",
                                         "int[]", "int...", "int[1]", "float", "bool", "str", "ScalarType",
                                         "Device", "Any" };
    for (int32_t i = 0; i < mtk_op_count(); i++) {
        const mtk_op_def *op = mtk_op_at(i);
        const mtk_arg_spec *specs;
        int32_t nargs = mtk_op_args(op, &specs);
        bool keyword = false;
        for (int32_t k = 0; k < nargs; k++) {
            bool ok = false;
            for (size_t t = 0; t < COUNT(known); t++) ok |= strcmp(specs[k].type, known[t]) == 0;
            if (!ok) fail_msg("op %s: argument %s has unknown type %s", op->name, specs[k].name, specs[k].type);
            /* keyword-only arguments come last, as in Python */
            if (keyword) assert_true(specs[k].keyword_only);
            keyword |= specs[k].keyword_only;
        }
    }
}

static void ops_are_found_with_torch_prefixes(void **state)
{
    (void)state;
    const mtk_op_def *zeros = mtk_op_find("zeros"), *linear = mtk_op_find("linear");
    assert_non_null(zeros);
    assert_non_null(linear);
    assert_ptr_equal(mtk_op_find("torch.zeros"), zeros);
    assert_ptr_equal(mtk_op_find("torch.nn.functional.linear"), linear);
    assert_ptr_equal(mtk_op_find("F.linear"), linear);
    assert_ptr_equal(mtk_op_find("nn.functional.linear"), linear);
    assert_null(mtk_op_find("frobnicate"));
    assert_null(mtk_op_find("torch.frobnicate"));
    assert_null(mtk_op_find("Zeros"));
    assert_null(mtk_op_find(""));
}

static void call_init_fills_the_defaults(void **state)
{
    mtk_ctx *ctx = *state;
    mtk_op_call call;
    mtk_op_call_init(&call, ctx, mtk_op_find("softplus"));
    /* softplus(Tensor input, Scalar beta=1, Scalar threshold=20) */
    assert_int_equal(call.nargs, 3);
    assert_int_equal(call.args[0].kind, MTK_VALUE_NONE);
    assert_int_equal(call.args[1].kind, MTK_VALUE_INT);
    assert_int_equal(call.args[1].as.i, 1);
    assert_int_equal(call.args[2].as.i, 20);
    assert_int_equal(call.keyword_args, 0);
    assert_null(call.out);
    assert_int_equal(call.nout, 0);
    assert_int_equal(call.device, MTK_DEVICE_CPU);
    mtk_op_call_init(&call, ctx, mtk_op_find("arange"));
    /* arange(Scalar start=None, Scalar end=None, Scalar step=None, *, ScalarType? dtype=None, ...,
     * Any? layout=None) */
    assert_int_equal(call.nargs, 7);
    assert_int_equal(call.args[6].kind, MTK_VALUE_NONE);
    assert_int_equal(call.args[0].kind, MTK_VALUE_NONE);
    assert_int_equal(call.args[2].kind, MTK_VALUE_NONE);
    assert_int_equal(call.args[5].kind, MTK_VALUE_BOOL);
    assert_false(call.args[5].as.b);
    mtk_op_call_init(&call, ctx, mtk_op_find("gelu"));
    /* gelu(Tensor input, *, str approximate='none') */
    assert_int_equal(call.args[1].kind, MTK_VALUE_STRING);
    assert_string_equal(call.args[1].as.s, "none");
    mtk_op_call_init(&call, ctx, mtk_op_find("leaky_relu"));
    assert_int_equal(call.args[1].kind, MTK_VALUE_FLOAT);
    assert_true(call.args[1].as.f == 0.01);
}

/* ---------------------------------------------------------- binding */

static void trailing_ints_gather_into_an_int_list(void **state)
{
    mtk_ctx *ctx = *state;
    static const int64_t s23[2] = { 2, 3 }, s4[1] = { 4 };
    assert_shape(CALL(ctx, "zeros", I(2), I(3)), 2, s23);              /* torch.zeros(2, 3) */
    assert_shape(CALL(ctx, "zeros", mtk_value_int_list(ctx, s23, 2)), 2, s23); /* zeros([2, 3]) */
    assert_shape(CALL(ctx, "zeros", I(4)), 1, s4);                     /* zeros(4) */
    mtk_value tuple = mtk_value_list(ctx, 2, true);
    tuple.as.list.items[0] = I(2);
    tuple.as.list.items[1] = I(3);
    mtk_tensor *x = CALL(ctx, "zeros", tuple);                        /* zeros((2, 3)) */
    assert_shape(x, 2, s23);
    static const int64_t s32[2] = { 3, 2 }, s6[1] = { 6 };
    assert_shape(CALL(ctx, "view", T(x), I(3), I(2)), 2, s32);         /* x.view(3, 2) */
    assert_shape(CALL(ctx, "view", T(x), I(-1)), 1, s6);               /* x.view(-1) */
    static const int64_t s0[1] = { 0 };
    mtk_tensor *empty = callt(ctx, "zeros", (mtk_value[]){ mtk_value_list(ctx, 0, false) }, 1, NULL, NULL, 0);
    assert_shape(empty, 0, s0);                                        /* zeros([]) is 0-dim */
    assert_int_equal(mtk_ctx_status(ctx), MTK_OK);
}

static void keywords_bind_by_name_in_any_order(void **state)
{
    mtk_ctx *ctx = *state;
    static const int64_t s2[1] = { 2 }, s34[2] = { 3, 4 };
    const char *kw[3] = { "dtype", "fill_value", "size" };
    mtk_value kwv[3] = { mtk_value_dtype(MTK_FLOAT64), F(1.5), mtk_value_int_list(ctx, s2, 1) };
    mtk_tensor *t = callt(ctx, "full", NULL, 0, kw, kwv, 3);
    assert_shape(t, 1, s2);
    assert_int_equal(t->dtype, MTK_FLOAT64);
    assert_true(((double *)mtk_tensor_data(t))[1] == 1.5);
    /* keywords for positional parameters: torch.mm(input=a, mat2=b) */
    mtk_tensor *a = CALL(ctx, "ones", I(3), I(5)), *b = CALL(ctx, "ones", I(5), I(4));
    const char *mkw[2] = { "mat2", "input" };
    assert_shape(callt(ctx, "mm", NULL, 0, mkw, (mtk_value[]){ T(b), T(a) }, 2), 2, s34);
    /* a float parameter takes an int: F.leaky_relu(x, 1) */
    assert_non_null(CALL(ctx, "leaky_relu", T(a), I(1)));
    assert_int_equal(mtk_ctx_status(ctx), MTK_OK);
}

static void device_strings_and_the_default_device_scope(void **state)
{
    mtk_ctx *ctx = *state;
    mtk_tensor *cpu = CALL(ctx, "zeros", I(2));
    assert_int_equal(cpu->device, MTK_DEVICE_CPU);
    assert_non_null(cpu->storage);
    assert_true(mtk_ctx_push_device(ctx, MTK_DEVICE_META)); /* with torch.device('meta'): */
    mtk_tensor *meta = CALL(ctx, "zeros", I(2));
    assert_int_equal(meta->device, MTK_DEVICE_META);
    assert_null(meta->storage);
    const char *kw[1] = { "device" };
    mtk_tensor *forced = callt(ctx, "zeros", (mtk_value[]){ I(2) }, 1, kw, (mtk_value[]){ S("cpu") }, 1);
    assert_int_equal(forced->device, MTK_DEVICE_CPU); /* device= beats the scope */
    assert_true(mtk_ctx_pop_device(ctx));
    mtk_tensor *m2 = callt(ctx, "zeros", (mtk_value[]){ I(2) }, 1, kw, (mtk_value[]){ S("meta") }, 1);
    assert_int_equal(m2->device, MTK_DEVICE_META);
    assert_fails_with(ctx, "zeros", (mtk_value[]){ I(2) }, 1, kw, (mtk_value[]){ S("gpu") }, 1,
                      MTK_ERR_DEVICE,
                      "zeros(): Expected one of cpu, meta, cuda device type at start of device string: gpu");
}

/* torch.set_default_dtype(torch.float64); torch.zeros(2).dtype is float64,
 * torch.arange(3).dtype stays int64 */
static void creation_follows_the_default_dtype_scope(void **state)
{
    mtk_ctx *ctx = *state;
    assert_int_equal(CALL(ctx, "zeros", I(2))->dtype, MTK_FLOAT32);
    assert_true(mtk_ctx_push_dtype(ctx, MTK_FLOAT64));
    assert_int_equal(CALL(ctx, "zeros", I(2))->dtype, MTK_FLOAT64);
    assert_int_equal(CALL(ctx, "full", mtk_value_int_list(ctx, (int64_t[]){ 2 }, 1), F(1.5))->dtype, MTK_FLOAT64);
    assert_int_equal(CALL(ctx, "arange", I(3))->dtype, MTK_INT64);
    assert_true(mtk_ctx_pop_dtype(ctx));
}

/* ------------------------------------------------- binding errors */

static void unknown_ops_are_unknown_op_errors(void **state)
{
    mtk_ctx *ctx = *state;
    assert_fails_with(ctx, "frobnicate", NULL, 0, NULL, NULL, 0, MTK_ERR_UNKNOWN_OP,
                      "unknown op 'frobnicate' (mtk ops lists them)");
    assert_fails_with(ctx, "torch.frobnicate", NULL, 0, NULL, NULL, 0, MTK_ERR_UNKNOWN_OP,
                      "unknown op 'torch.frobnicate' (mtk ops lists them)");
    assert_fails_with(ctx, NULL, NULL, 0, NULL, NULL, 0, MTK_ERR_UNKNOWN_OP,
                      "unknown op '(null)' (mtk ops lists them)");
}

/* The messages below are PyTorch's, from torch 2.13.0 on the same calls. */
static void keyword_errors_use_python_words(void **state)
{
    mtk_ctx *ctx = *state;
    mtk_tensor *x = CALL(ctx, "ones", I(2), I(2));
    /* torch.zeros(2, foo=1) */
    assert_fails_with(ctx, "zeros", (mtk_value[]){ I(2) }, 1, (const char *[]){ "foo" },
                      (mtk_value[]){ I(1) }, 1, MTK_ERR_INVALID_ARGUMENT,
                      "zeros() got an unexpected keyword argument 'foo'");
    /* F.linear(x, x, weight=x) */
    assert_fails_with(ctx, "linear", (mtk_value[]){ T(x), T(x) }, 2, (const char *[]){ "weight" },
                      (mtk_value[]){ T(x) }, 1, MTK_ERR_INVALID_ARGUMENT,
                      "linear() got multiple values for argument 'weight'");
}

static void missing_and_extra_arguments_use_python_words(void **state)
{
    mtk_ctx *ctx = *state;
    mtk_tensor *x = CALL(ctx, "ones", I(2), I(2));
    /* F.linear(x): torch says "missing 1 required positional arguments" (sic) */
    assert_fails_with(ctx, "linear", (mtk_value[]){ T(x) }, 1, NULL, NULL, 0, MTK_ERR_INVALID_ARGUMENT,
                      "linear() missing 1 required positional argument: \"weight\"");
    assert_fails_with(ctx, "linear", NULL, 0, NULL, NULL, 0, MTK_ERR_INVALID_ARGUMENT,
                      "linear() missing 2 required positional arguments: \"input\", \"weight\"");
    /* F.linear(x, x, bias=x) binds; F.linear(x, bias=x) misses weight */
    assert_fails_with(ctx, "linear", (mtk_value[]){ T(x) }, 1, (const char *[]){ "bias" },
                      (mtk_value[]){ T(x) }, 1, MTK_ERR_INVALID_ARGUMENT,
                      "linear() missing 1 required positional argument: \"weight\"");
    /* F.linear(x, x, None, 3) and torch.zeros_like(x, 1) */
    assert_fails_with(ctx, "linear", (mtk_value[]){ T(x), T(x), mtk_value_none(), I(3) }, 4, NULL, NULL, 0,
                      MTK_ERR_INVALID_ARGUMENT,
                      "linear() takes from 2 to 3 positional arguments but 4 were given");
    assert_fails_with(ctx, "zeros_like", (mtk_value[]){ T(x), I(1) }, 2, NULL, NULL, 0,
                      MTK_ERR_INVALID_ARGUMENT,
                      "zeros_like() takes 1 positional argument but 2 were given");
}

static void type_errors_use_python_words(void **state)
{
    mtk_ctx *ctx = *state;
    mtk_tensor *x = CALL(ctx, "ones", I(2), I(2));
    /* torch.mm(x, 3) */
    assert_fails_with(ctx, "mm", (mtk_value[]){ T(x), I(3) }, 2, NULL, NULL, 0, MTK_ERR_INVALID_ARGUMENT,
                      "mm(): argument 'mat2' (position 2) must be Tensor, not int");
    /* F.linear(x, weight='a'): keyword arguments name no position */
    assert_fails_with(ctx, "linear", (mtk_value[]){ T(x) }, 1, (const char *[]){ "weight" },
                      (mtk_value[]){ S("a") }, 1, MTK_ERR_INVALID_ARGUMENT,
                      "linear(): argument 'weight' must be Tensor, not str");
    /* F.linear(x, x, bias='a') */
    assert_fails_with(ctx, "linear", (mtk_value[]){ T(x), T(x) }, 2, (const char *[]){ "bias" },
                      (mtk_value[]){ S("a") }, 1, MTK_ERR_INVALID_ARGUMENT,
                      "linear(): argument 'bias' must be Tensor, not str");
    /* torch.full((2,), 'a') and torch.full((2,), fill_value=None) */
    mtk_value size = mtk_value_int_list(ctx, (int64_t[]){ 2 }, 1);
    assert_fails_with(ctx, "full", (mtk_value[]){ size, S("a") }, 2, NULL, NULL, 0, MTK_ERR_INVALID_ARGUMENT,
                      "full(): argument 'fill_value' (position 2) must be Number, not str");
    assert_fails_with(ctx, "full", (mtk_value[]){ size }, 1, (const char *[]){ "fill_value" },
                      (mtk_value[]){ mtk_value_none() }, 1, MTK_ERR_INVALID_ARGUMENT,
                      "full(): argument 'fill_value' must be Number, not NoneType");
    /* torch.zeros(2, dtype=3) and torch.zeros(2, requires_grad=1) */
    assert_fails_with(ctx, "zeros", (mtk_value[]){ I(2) }, 1, (const char *[]){ "dtype" },
                      (mtk_value[]){ I(3) }, 1, MTK_ERR_INVALID_ARGUMENT,
                      "zeros(): argument 'dtype' must be torch.dtype, not int");
    assert_fails_with(ctx, "zeros", (mtk_value[]){ I(2) }, 1, (const char *[]){ "requires_grad" },
                      (mtk_value[]){ I(1) }, 1, MTK_ERR_INVALID_ARGUMENT,
                      "zeros(): argument 'requires_grad' must be bool, not int");
    /* torch.eye(2.5), torch.eye(True), torch.zeros(True) */
    assert_fails_with(ctx, "eye", (mtk_value[]){ F(2.5) }, 1, NULL, NULL, 0, MTK_ERR_INVALID_ARGUMENT,
                      "eye(): argument 'n' (position 1) must be int, not float");
    assert_fails_with(ctx, "eye", (mtk_value[]){ mtk_value_bool(true) }, 1, NULL, NULL, 0,
                      MTK_ERR_INVALID_ARGUMENT, "eye(): argument 'n' (position 1) must be int, not bool");
    assert_fails_with(ctx, "zeros", (mtk_value[]){ mtk_value_bool(true) }, 1, NULL, NULL, 0,
                      MTK_ERR_INVALID_ARGUMENT,
                      "zeros(): argument 'size' (position 1) must be tuple of ints, not bool");
    /* torch.zeros((2, 'a')): a bad item after the first */
    mtk_value bad = mtk_value_list(ctx, 2, true);
    bad.as.list.items[0] = I(2);
    bad.as.list.items[1] = S("a");
    assert_fails_with(ctx, "zeros", (mtk_value[]){ bad }, 1, NULL, NULL, 0, MTK_ERR_INVALID_ARGUMENT,
                      "zeros(): argument 'size' failed to unpack the object at pos 2 with error \"type must "
                      "be tuple of ints,but got str\"");
    /* torch.zeros(2, 'a') gathers, then finds the str */
    assert_fails_with(ctx, "zeros", (mtk_value[]){ I(2), S("a") }, 2, NULL, NULL, 0, MTK_ERR_INVALID_ARGUMENT,
                      "zeros(): argument 'size' failed to unpack the object at pos 2 with error \"type must "
                      "be tuple of ints,but got str\"");
    /* torch.zeros(('a', 2)): a bad first item */
    bad = mtk_value_list(ctx, 2, true);
    bad.as.list.items[0] = S("a");
    bad.as.list.items[1] = I(2);
    assert_fails_with(ctx, "zeros", (mtk_value[]){ bad }, 1, NULL, NULL, 0, MTK_ERR_INVALID_ARGUMENT,
                      "zeros(): argument 'size' (position 1) must be tuple of ints, but found element of "
                      "type str at pos 0");
}

/* PyTorch's int lists: a lone int stands for one only in var-args
 * position ("int...": zeros(3), x.view(6)) or for an int[1] (squeeze(x, 1)); a bool
 * reads as an int after the first item; None only where the type says so.
 * Messages from torch 2.13.0. */
static void int_lists_bind_as_pytorch_parses_them(void **state)
{
    mtk_ctx *ctx = *state;
    static const int64_t s21[2] = { 2, 1 }, s6[1] = { 6 }, s32[2] = { 3, 2 };
    mtk_value b1 = mtk_value_bool(true);
    assert_shape(CALL(ctx, "zeros", I(2), b1), 2, s21);               /* torch.zeros(2, True) */
    mtk_value l = mtk_value_list(ctx, 2, false);
    l.as.list.items[0] = I(2);
    l.as.list.items[1] = b1;
    assert_shape(CALL(ctx, "zeros", l), 2, s21);                      /* torch.zeros([2, True]) */
    mtk_tensor *x = CALL(ctx, "zeros", I(6));
    assert_shape(x, 1, s6);
    assert_shape(CALL(ctx, "view", T(x), I(3), I(2)), 2, s32);         /* x.view(3, 2) */
    assert_fails_with(ctx, "view", (mtk_value[]){ T(x), b1, I(6) }, 3, NULL, NULL, 0, MTK_ERR_INVALID_ARGUMENT,
                      "view(): argument 'size' (position 2) must be tuple of ints, not bool");
    assert_fails_with(ctx, "zeros", NULL, 0, (const char *[]){ "size" }, (mtk_value[]){ I(3) }, 1,
                      MTK_ERR_INVALID_ARGUMENT, "zeros(): argument 'size' must be tuple of ints, not int");
    assert_fails_with(ctx, "full", (mtk_value[]){ I(3), F(1.5) }, 2, NULL, NULL, 0, MTK_ERR_INVALID_ARGUMENT,
                      "full(): argument 'size' (position 1) must be tuple of ints, not int");
    mtk_tensor *col = CALL(ctx, "zeros", I(6), I(1));
    assert_fails_with(ctx, "unflatten", (mtk_value[]){ T(col), I(0), I(6) }, 3, NULL, NULL, 0,
                      MTK_ERR_INVALID_ARGUMENT,
                      "unflatten(): argument 'sizes' (position 3) must be tuple of ints, not int");
    assert_shape(CALL(ctx, "squeeze", T(col), I(1)), 1, s6);           /* squeeze(x, 1): int[1] */
    assert_fails_with(ctx, "squeeze", (mtk_value[]){ T(col), mtk_value_none() }, 2, NULL, NULL, 0,
                      MTK_ERR_INVALID_ARGUMENT,
                      "squeeze(): argument 'dim' (position 2) must be tuple of ints, not NoneType");
    assert_fails_with(ctx, "eye", (mtk_value[]){ I(4), mtk_value_none() }, 2, NULL, NULL, 0,
                      MTK_ERR_INVALID_ARGUMENT, "eye(): argument 'm' (position 2) must be int, not NoneType");
}

/* arange's overloads, arange(end) and arange(start, end, step=1) */
static void arange_binds_like_its_overloads(void **state)
{
    mtk_ctx *ctx = *state;
    static const int64_t s5[1] = { 5 }, s4[1] = { 4 }, s2[1] = { 2 };
    assert_shape(CALL(ctx, "arange", I(5)), 1, s5);
    assert_shape(callt(ctx, "arange", NULL, 0, (const char *[]){ "end" }, (mtk_value[]){ I(5) }, 1), 1, s5);
    assert_shape(callt(ctx, "arange", NULL, 0, (const char *[]){ "start", "end" }, (mtk_value[]){ I(1), I(5) }, 2),
                 1, s4);
    assert_shape(callt(ctx, "arange", (mtk_value[]){ I(1) }, 1, (const char *[]){ "end", "step" },
                       (mtk_value[]){ I(5), I(2) }, 2),
                 1, s2);
    mtk_value r;
    assert_false(mtk_op_call_by_name(ctx, "arange", NULL, 0, (const char *[]){ "start" }, (mtk_value[]){ I(3) },
                                     1, &r)); /* arange(start=3) */
    mtk_ctx_clear_error(ctx);
    assert_false(mtk_op_call_by_name(ctx, "arange", (mtk_value[]){ I(5) }, 1, (const char *[]){ "step" },
                                     (mtk_value[]){ I(2) }, 1, &r)); /* arange(5, step=2) */
    mtk_ctx_clear_error(ctx);
    assert_false(mtk_op_call_by_name(ctx, "arange", NULL, 0, (const char *[]){ "dtype" },
                                     (mtk_value[]){ mtk_value_dtype(MTK_INT32) }, 1, &r)); /* arange(dtype=i32) */
    mtk_ctx_clear_error(ctx);
    assert_fails_with(ctx, "arange", (mtk_value[]){ I(2), mtk_value_none(), I(3) }, 3, NULL, NULL, 0,
                      MTK_ERR_INVALID_ARGUMENT, "arange(): argument 'end' (position 2) must be Number, not NoneType");
}

/* A binding error is not overwritten by later ones, and leaves no result. */
static void binding_errors_are_sticky(void **state)
{
    mtk_ctx *ctx = *state;
    mtk_value r;
    assert_false(mtk_op_call_by_name(ctx, "frobnicate", NULL, 0, NULL, NULL, 0, &r));
    assert_false(mtk_op_call_by_name(ctx, "eye", (mtk_value[]){ F(2.5) }, 1, NULL, NULL, 0, &r));
    assert_int_equal(mtk_ctx_status(ctx), MTK_ERR_UNKNOWN_OP);
    assert_int_equal(r.kind, MTK_VALUE_NONE);
}

/* --------------------------------------------------- NULL propagation */

static void null_tensor_from_a_failed_op_propagates_quietly(void **state)
{
    mtk_ctx *ctx = *state;
    mtk_tensor *x = CALL(ctx, "ones", I(2), I(3));
    mtk_tensor *bad = CALL(ctx, "mm", T(x), T(x)); /* (2,3) @ (2,3): a shape error */
    assert_null(bad);
    assert_int_equal(mtk_ctx_status(ctx), MTK_ERR_SHAPE);
    char first[1024];
    snprintf(first, sizeof first, "%s", mtk_ctx_message(ctx));
    /* the chain goes on returning NULL; the first error stays */
    mtk_tensor *y = CALL(ctx, "relu", T(bad));
    assert_null(y);
    assert_null(CALL(ctx, "add", T(y), T(x)));
    assert_null(CALL(ctx, "linear", T(x), T(x), T(y)));
    assert_null(mtk_mm(ctx, y, x));
    assert_int_equal(mtk_ctx_status(ctx), MTK_ERR_SHAPE);
    assert_string_equal(mtk_ctx_message(ctx), first);
}

static void null_tensor_without_an_error_is_reported(void **state)
{
    mtk_ctx *ctx = *state;
    mtk_tensor *x = CALL(ctx, "ones", I(2), I(2));
    assert_fails_with(ctx, "mm", (mtk_value[]){ T(x), T(NULL) }, 2, NULL, NULL, 0, MTK_ERR_INVALID_ARGUMENT,
                      "mm: argument 'mat2' is a NULL tensor");
}

/* ------------------------------------------------------- devices */

static void mixed_devices_are_refused(void **state)
{
    mtk_ctx *ctx = *state;
    mtk_tensor *cpu = CALL(ctx, "ones", I(2), I(2));
    mtk_ctx_push_device(ctx, MTK_DEVICE_META);
    mtk_tensor *meta = CALL(ctx, "ones", I(2), I(2));
    mtk_ctx_pop_device(ctx);
    assert_fails_with(ctx, "add", (mtk_value[]){ T(meta), T(cpu) }, 2, NULL, NULL, 0, MTK_ERR_DEVICE,
                      "add: Expected all tensors to be on the same device, but found at least two "
                      "devices, meta and cpu!");
    /* a 0-dim cpu tensor joins any device: meta + torch.tensor(2.) is meta */
    mtk_tensor *scalar = CALL(ctx, "full", mtk_value_list(ctx, 0, false), F(2.0));
    assert_non_null(scalar);
    assert_int_equal(scalar->ndim, 0);
    mtk_tensor *sum = CALL(ctx, "add", T(meta), T(scalar));
    assert_non_null(sum);
    assert_int_equal(sum->device, MTK_DEVICE_META);
    assert_null(sum->storage);
}

/* ------------------------------------------- outputs, views, results */

static void cpu_outputs_get_storage_and_kernels_fill_them(void **state)
{
    mtk_ctx *ctx = *state;
    mtk_tensor *f = CALL(ctx, "full", mtk_value_int_list(ctx, (int64_t[]){ 2 }, 1), F(1.5));
    assert_non_null(f->storage);
    assert_int_equal(mtk_storage_refcount(f->storage), 1);
    assert_true(((float *)mtk_tensor_data(f))[0] == 1.5f && ((float *)mtk_tensor_data(f))[1] == 1.5f);
    mtk_tensor *z = CALL(ctx, "zeros", I(3));
    for (int i = 0; i < 3; i++) assert_true(((float *)mtk_tensor_data(z))[i] == 0.0f);
}

static void cpu_views_share_their_input_storage(void **state)
{
    mtk_ctx *ctx = *state;
    mtk_tensor *x = CALL(ctx, "arange", I(12));
    mtk_tensor *v = CALL(ctx, "view", T(x), I(3), I(4));
    mtk_tensor *t = CALL(ctx, "transpose", T(v), I(0), I(1));
    assert_ptr_equal(v->storage, x->storage);
    assert_ptr_equal(t->storage, x->storage);
    assert_int_equal(mtk_storage_refcount(x->storage), 3);
    assert_ptr_equal(mtk_tensor_data(t), mtk_tensor_data(x));
    static const int64_t want_stride[2] = { 1, 4 };
    assert_memory_equal(t->stride, want_stride, sizeof want_stride);
    mtk_tensor *row = CALL(ctx, "select", T(v), I(0), I(2)); /* v[2] */
    assert_int_equal(row->storage_offset, 8);
    assert_int_equal(((int64_t *)mtk_tensor_data(row))[0], 8);
}

static bool is_sequence(mtk_value v) { return v.kind == MTK_VALUE_TUPLE || v.kind == MTK_VALUE_LIST; }

/* torch.split(x, 3) on a (3, 4) tensor is a 1-tuple, torch.split(x, 2) a
 * 2-tuple: "-> Tensor[]" results are sequences even of one tensor.  (The
 * dispatcher makes them tuples; split sets its own result, a list.) */
static void list_results_are_sequences_even_of_one(void **state)
{
    mtk_ctx *ctx = *state;
    mtk_tensor *x = CALL(ctx, "zeros", I(3), I(4));
    mtk_value one = callv(ctx, "split", (mtk_value[]){ T(x), I(3) }, 2, NULL, NULL, 0);
    assert_true(is_sequence(one));
    assert_int_equal(one.as.list.count, 1);
    mtk_value two = callv(ctx, "split", (mtk_value[]){ T(x), I(2) }, 2, NULL, NULL, 0);
    assert_true(is_sequence(two));
    assert_int_equal(two.as.list.count, 2);
    static const int64_t a[2] = { 2, 4 }, b[2] = { 1, 4 };
    assert_shape(two.as.list.items[0].as.tensor, 2, a);
    assert_shape(two.as.list.items[1].as.tensor, 2, b);
    /* torch.unbind(torch.empty(0, 3)) is () */
    mtk_tensor *e = CALL(ctx, "zeros", I(0), I(3));
    mtk_value none = callv(ctx, "unbind", (mtk_value[]){ T(e) }, 1, NULL, NULL, 0);
    assert_true(is_sequence(none));
    assert_int_equal(none.as.list.count, 0);
}

static void inplace_ops_return_their_first_argument(void **state)
{
    mtk_ctx *ctx = *state;
    mtk_tensor *dst = CALL(ctx, "zeros", I(3));
    mtk_tensor *src = CALL(ctx, "arange", I(3));
    mtk_tensor *r = CALL(ctx, "copy_", T(dst), T(src));
    assert_ptr_equal(r, dst);
    assert_true(((float *)mtk_tensor_data(dst))[2] == 2.0f);
}

/* nonzero on meta: the output size depends on data (torch raises too) */
static void data_dependent_ops_fail_on_meta_and_run_on_cpu(void **state)
{
    mtk_ctx *ctx = *state;
    mtk_ctx_push_device(ctx, MTK_DEVICE_META);
    mtk_tensor *m = CALL(ctx, "ones", I(3), I(4));
    mtk_ctx_pop_device(ctx);
    assert_null(CALL(ctx, "nonzero", T(m)));
    assert_int_equal(mtk_ctx_status(ctx), MTK_ERR_DATA_DEPENDENT);
    assert_non_null(strstr(mtk_ctx_message(ctx), "nonzero"));
    mtk_ctx_clear_error(ctx);
    mtk_tensor *x = CALL(ctx, "arange", I(5));
    mtk_tensor *nz = CALL(ctx, "nonzero", T(x));
    static const int64_t s41[2] = { 4, 1 };
    assert_shape(nz, 2, s41);
}

/* The typed path: bind args by hand, then mtk_op_run. */
static void op_run_runs_a_hand_bound_call(void **state)
{
    mtk_ctx *ctx = *state;
    mtk_tensor *x = CALL(ctx, "full", mtk_value_int_list(ctx, (int64_t[]){ 2 }, 1), F(-3.0));
    mtk_op_call call;
    mtk_op_call_init(&call, ctx, mtk_op_find("neg"));
    call.args[0] = T(x);
    assert_true(mtk_op_run(&call));
    assert_int_equal(call.result.kind, MTK_VALUE_TENSOR);
    assert_int_equal(call.nout, 1);
    assert_true(((float *)mtk_tensor_data(call.result.as.tensor))[1] == 3.0f);
    /* mtk_call_error prefixes the op name */
    assert_false(mtk_call_error(&call, MTK_ERR_SHAPE, "bad %s", "thing"));
    assert_string_equal(mtk_ctx_message(ctx), "neg: bad thing");
}

int main(void)
{
#define TEST(f) cmocka_unit_test_setup_teardown(f, setup_ctx, teardown_ctx)
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_row_has_a_parsable_signature_and_a_unique_name),
        cmocka_unit_test(every_row_binds_the_types_it_declares),
        cmocka_unit_test(ops_are_found_with_torch_prefixes),
        TEST(call_init_fills_the_defaults),
        TEST(trailing_ints_gather_into_an_int_list),
        TEST(keywords_bind_by_name_in_any_order),
        TEST(device_strings_and_the_default_device_scope),
        TEST(creation_follows_the_default_dtype_scope),
        TEST(unknown_ops_are_unknown_op_errors),
        TEST(keyword_errors_use_python_words),
        TEST(missing_and_extra_arguments_use_python_words),
        TEST(type_errors_use_python_words),
        TEST(int_lists_bind_as_pytorch_parses_them),
        TEST(arange_binds_like_its_overloads),
        TEST(binding_errors_are_sticky),
        TEST(null_tensor_from_a_failed_op_propagates_quietly),
        TEST(null_tensor_without_an_error_is_reported),
        TEST(mixed_devices_are_refused),
        TEST(cpu_outputs_get_storage_and_kernels_fill_them),
        TEST(cpu_views_share_their_input_storage),
        TEST(list_results_are_sequences_even_of_one),
        TEST(inplace_ops_return_their_first_argument),
        TEST(data_dependent_ops_fail_on_meta_and_run_on_cpu),
        TEST(op_run_runs_a_hand_bound_call),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
