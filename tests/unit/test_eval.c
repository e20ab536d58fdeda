/* The eval language (src/eval): lexer, parser, evaluator, repr and JSON.
 * Expected values are Python's and torch's (repr(1e-05) == '1e-05',
 * torch.empty(2, -1) raises "Trying to create tensor with negative
 * dimension -1: [2, -1]", ...).  Tests that need a particular op skip
 * when the op table does not have it yet. */
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

/* Every test gets a fresh context whose default device is meta, as in
 * `mtk eval`. */
static int setup(void **state)
{
    mtk_ctx *ctx = mtk_ctx_new();
    if (!ctx || !mtk_ctx_push_device(ctx, MTK_DEVICE_META)) return -1;
    *state = ctx;
    return 0;
}

static int teardown(void **state)
{
    mtk_ctx_free(*state);
    return 0;
}

static mtk_value eval_ok(mtk_ctx *ctx, const char *expr)
{
    mtk_value v;
    bool ok = mtk_eval(ctx, expr, &v);
    if (!ok) print_message("eval(%s) failed: %s\n", expr, mtk_ctx_message(ctx));
    assert_true(ok);
    return v;
}

/* Evaluates `expr` expecting an error with this status, column (0: do not
 * check) and a fragment of the message; clears the error afterwards. */
static void eval_fails(mtk_ctx *ctx, const char *expr, mtk_status status, int32_t column,
                       const char *fragment)
{
    mtk_value v;
    int32_t got_column = -1;
    bool ok = mtk_eval_text(ctx, expr, strlen(expr), &v, &got_column);
    if (ok || mtk_ctx_status(ctx) != status || !strstr(mtk_ctx_message(ctx), fragment) ||
        (column && got_column != column))
        print_message("eval(%s): ok=%d status=%s column=%d message=%s\n", expr, ok,
                      mtk_status_name(mtk_ctx_status(ctx)), got_column, mtk_ctx_message(ctx));
    assert_false(ok);
    assert_int_equal(v.kind, MTK_VALUE_NONE);
    assert_string_equal(mtk_status_name(mtk_ctx_status(ctx)), mtk_status_name(status));
    assert_non_null(strstr(mtk_ctx_message(ctx), fragment));
    if (column) assert_int_equal(got_column, column);
    mtk_ctx_clear_error(ctx);
}

static mtk_tensor *eval_tensor(mtk_ctx *ctx, const char *expr)
{
    mtk_value v = eval_ok(ctx, expr);
    assert_int_equal(v.kind, MTK_VALUE_TENSOR);
    assert_non_null(v.as.tensor);
    return v.as.tensor;
}

static const char *repr_of(mtk_ctx *ctx, const char *expr)
{
    mtk_value v = eval_ok(ctx, expr);
    char *r = mtk_value_repr(ctx, &v);
    assert_non_null(r);
    return r;
}

static const char *json_of(mtk_ctx *ctx, const char *expr, uint32_t flags)
{
    mtk_value v = eval_ok(ctx, expr);
    char *j = mtk_value_to_json(ctx, &v, flags);
    assert_non_null(j);
    return j;
}

static void check_shape(const mtk_tensor *t, int32_t ndim, const int64_t *shape, const int64_t *stride)
{
    assert_int_equal(t->ndim, ndim);
    for (int32_t i = 0; i < ndim; i++) {
        assert_int_equal(t->shape[i], shape[i]);
        assert_int_equal(t->stride[i], stride[i]);
    }
}

/* ------------------------------------------------------ tensor literals */

static void literal_is_contiguous_meta_tensor(void **state)
{
    mtk_tensor *t = eval_tensor(*state, "f32[3,4]");
    check_shape(t, 2, (int64_t[]){ 3, 4 }, (int64_t[]){ 4, 1 });
    assert_int_equal(t->dtype, MTK_FLOAT32);
    assert_int_equal(t->device, MTK_DEVICE_META);
    assert_int_equal(t->storage_offset, 0);
    assert_null(t->storage);
}

static void literal_with_no_sizes_is_zero_dim(void **state)
{
    mtk_tensor *t = eval_tensor(*state, "bf16[]");
    assert_int_equal(t->ndim, 0);
    assert_int_equal(t->dtype, MTK_BFLOAT16);
    assert_int_equal(mtk_tensor_numel(t), 1);
}

static void literal_with_zero_size_has_torch_strides(void **state)
{
    /* torch.empty(2, 0).stride() == (1, 1) */
    mtk_tensor *t = eval_tensor(*state, "i64[2,0]");
    check_shape(t, 2, (int64_t[]){ 2, 0 }, (int64_t[]){ 1, 1 });
    assert_int_equal(t->dtype, MTK_INT64);
}

static void literal_accepts_short_and_long_dtype_names(void **state)
{
    static const struct { const char *expr; mtk_dtype dtype; } cases[] = {
        { "f16[1]", MTK_FLOAT16 }, { "f64[1]", MTK_FLOAT64 }, { "i32[1]", MTK_INT32 },
        { "i16[1]", MTK_INT16 }, { "i8[1]", MTK_INT8 }, { "u8[1]", MTK_UINT8 },
        { "bool[1]", MTK_BOOL }, { "float32[1]", MTK_FLOAT32 }, { "bfloat16[1]", MTK_BFLOAT16 },
        { "int64[1]", MTK_INT64 }, { "uint8[1]", MTK_UINT8 },
        { "float8_e4m3fn[1]", MTK_FLOAT8_E4M3FN }, { "float8_e5m2[1]", MTK_FLOAT8_E5M2 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        assert_int_equal(eval_tensor(*state, cases[i].expr)->dtype, cases[i].dtype);
}

static void literal_allows_spaces_and_trailing_comma(void **state)
{
    mtk_tensor *t = eval_tensor(*state, "  f32 [ 2 , 3 , ]  ");
    check_shape(t, 2, (int64_t[]){ 2, 3 }, (int64_t[]){ 3, 1 });
}

static void cpu_literal_is_zero_filled(void **state)
{
    mtk_ctx *ctx = *state;
    assert_true(mtk_ctx_push_device(ctx, MTK_DEVICE_CPU));
    mtk_tensor *t = eval_tensor(ctx, "f32[2,3]");
    assert_int_equal(t->device, MTK_DEVICE_CPU);
    const float *data = mtk_tensor_data(t);
    assert_non_null(data);
    for (int i = 0; i < 6; i++) assert_true(data[i] == 0.0f);
}

static void negative_literal_size_reports_torch_error(void **state)
{
    eval_fails(*state, "f32[2,-1]", MTK_ERR_SHAPE, 1,
               "Trying to create tensor with negative dimension -1: [2, -1]");
}

static void literal_of_unknown_dtype_fails(void **state)
{
    eval_fails(*state, "f33[2]", MTK_ERR_DTYPE, 1, "unknown dtype 'f33'");
}

static void literal_with_too_many_dims_fails(void **state)
{
    eval_fails(*state, "f32[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]", MTK_ERR_SHAPE, 1, "17 dimensions");
}

static void literal_whose_numel_overflows_fails(void **state)
{
    eval_fails(*state, "f32[4611686018427387904, 4]", MTK_ERR_OVERFLOW, 1, "overflows");
}

static void literal_sizes_must_be_integer_literals(void **state)
{
    eval_fails(*state, "f32[2.5]", MTK_ERR_SYNTAX, 5, "integer size");
    eval_fails(*state, "f32[n]", MTK_ERR_SYNTAX, 5, "integer size");
}

/* --------------------------------------------------------------- numbers */

static void integers_parse_as_python_does(void **state)
{
    mtk_ctx *ctx = *state;
    static const struct { const char *expr; int64_t value; } cases[] = {
        { "3", 3 }, { "-3", -3 }, { "0", 0 }, { "00", 0 }, { "1_000", 1000 }, { "0x10", 16 },
        { "0o17", 15 }, { "0b101", 5 }, { "9223372036854775807", INT64_MAX },
        { "-9223372036854775808", INT64_MIN }, { "--2", 2 }, { "+7", 7 }, { "-(3)", -3 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        mtk_value v = eval_ok(ctx, cases[i].expr);
        assert_int_equal(v.kind, MTK_VALUE_INT);
        assert_int_equal(v.as.i, cases[i].value);
    }
}

static void integers_beyond_int64_fail_as_overflow(void **state)
{
    eval_fails(*state, "9223372036854775808", MTK_ERR_OVERFLOW, 1, "does not fit in int64");
    eval_fails(*state, "[1, 99999999999999999999999999]", MTK_ERR_OVERFLOW, 5, "does not fit in int64");
    eval_fails(*state, "-(-9223372036854775808)", MTK_ERR_OVERFLOW, 1, "does not fit in int64");
}

static void floats_parse_as_python_does(void **state)
{
    mtk_ctx *ctx = *state;
    static const struct { const char *expr; double value; } cases[] = {
        { "1.5", 1.5 }, { "1e-3", 1e-3 }, { ".5", 0.5 }, { "2.", 2.0 }, { "1E5", 1e5 },
        { "-2.5", -2.5 }, { "1.e2", 100.0 }, { "1_0.5", 10.5 }, { "float('1e3')", 1000.0 },
        { "float(3)", 3.0 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        mtk_value v = eval_ok(ctx, cases[i].expr);
        assert_int_equal(v.kind, MTK_VALUE_FLOAT);
        assert_true(v.as.f == cases[i].value);
    }
    mtk_value big = eval_ok(ctx, "1e999"); /* Python: inf */
    assert_true(isinf(big.as.f) && big.as.f > 0);
}

static void inf_and_nan_are_floats(void **state)
{
    mtk_ctx *ctx = *state;
    assert_true(isinf(eval_ok(ctx, "inf").as.f));
    assert_true(isinf(eval_ok(ctx, "math.inf").as.f));
    assert_true(eval_ok(ctx, "-inf").as.f < 0);
    assert_true(eval_ok(ctx, "float('-inf')").as.f < 0);
    assert_true(isinf(eval_ok(ctx, "float(\"Infinity\")").as.f));
    assert_true(isnan(eval_ok(ctx, "nan").as.f));
    assert_true(isnan(eval_ok(ctx, "torch.nan").as.f));
    assert_true(isnan(eval_ok(ctx, "float('nan')").as.f));
    eval_fails(ctx, "float('abc')", MTK_ERR_INVALID_ARGUMENT, 1, "could not convert string to float: 'abc'");
}

static void malformed_numbers_are_syntax_errors(void **state)
{
    mtk_ctx *ctx = *state;
    eval_fails(ctx, "007", MTK_ERR_SYNTAX, 1, "leading zeros in decimal integer literals are not permitted '007'");
    eval_fails(ctx, "3abc", MTK_ERR_SYNTAX, 1, "invalid decimal literal");
    eval_fails(ctx, "1e", MTK_ERR_SYNTAX, 1, "invalid float literal '1e'");
    eval_fails(ctx, "1__0", MTK_ERR_SYNTAX, 1, "invalid number literal '1__0'");
    eval_fails(ctx, "0x", MTK_ERR_SYNTAX, 1, "invalid integer literal");
    eval_fails(ctx, "2j", MTK_ERR_SYNTAX, 1, "invalid decimal literal");
}

/* ------------------------------------------------ names, strings, lists */

static void constants_and_dtypes_resolve(void **state)
{
    mtk_ctx *ctx = *state;
    assert_true(eval_ok(ctx, "True").as.b);
    assert_true(eval_ok(ctx, "true").as.b);
    assert_false(eval_ok(ctx, "False").as.b);
    assert_false(eval_ok(ctx, "false").as.b);
    assert_int_equal(eval_ok(ctx, "None").kind, MTK_VALUE_NONE);
    static const struct { const char *expr; mtk_dtype dtype; } dtypes[] = {
        { "bf16", MTK_BFLOAT16 }, { "torch.float16", MTK_FLOAT16 }, { "float32", MTK_FLOAT32 },
        { "torch.float", MTK_FLOAT32 }, { "torch.int", MTK_INT32 }, { "torch.long", MTK_INT64 },
        { "torch.bool", MTK_BOOL }, { "bool", MTK_BOOL },
        /* Python's own types, as torch maps them: dtype=float is float64 */
        { "float", MTK_FLOAT64 }, { "int", MTK_INT64 },
    };
    for (size_t i = 0; i < sizeof dtypes / sizeof dtypes[0]; i++) {
        mtk_value v = eval_ok(ctx, dtypes[i].expr);
        assert_int_equal(v.kind, MTK_VALUE_DTYPE);
        assert_int_equal(v.as.dtype, dtypes[i].dtype);
    }
    mtk_value d = eval_ok(ctx, "torch.device('cpu')");
    assert_int_equal(d.kind, MTK_VALUE_DEVICE);
    assert_int_equal(d.as.device, MTK_DEVICE_CPU);
    eval_fails(ctx, "torch.device('tpu')", MTK_ERR_DEVICE, 1, "device string: tpu");
    /* torch's memory formats, as the ops take them (torch 2.13 meta strides) */
    mtk_value cl = eval_ok(ctx, "contiguous(f32[1,2,3,4], memory_format=torch.channels_last)");
    check_shape(cl.as.tensor, 4, (const int64_t[]){ 1, 2, 3, 4 }, (const int64_t[]){ 24, 1, 8, 2 });
    mtk_value cl3 = eval_ok(ctx, "empty_like(f32[1,2,3,4,5], memory_format=torch.channels_last_3d)");
    check_shape(cl3.as.tensor, 5, (const int64_t[]){ 1, 2, 3, 4, 5 }, (const int64_t[]){ 120, 1, 40, 10, 2 });
    assert_string_equal(eval_ok(ctx, "torch.contiguous_format").as.s, "contiguous_format");
    assert_string_equal(eval_ok(ctx, "torch.preserve_format").as.s, "preserve_format");
    eval_fails(ctx, "channels_last", MTK_ERR_INVALID_ARGUMENT, 1, "name 'channels_last' is not defined");
}

static void undefined_names_fail(void **state)
{
    eval_fails(*state, "foo", MTK_ERR_INVALID_ARGUMENT, 1, "name 'foo' is not defined");
    eval_fails(*state, "[1, bar.baz]", MTK_ERR_INVALID_ARGUMENT, 5, "name 'bar.baz' is not defined");
}

static void strings_use_either_quote_and_escapes(void **state)
{
    mtk_ctx *ctx = *state;
    assert_string_equal(eval_ok(ctx, "'cpu'").as.s, "cpu");
    assert_string_equal(eval_ok(ctx, "\"meta\"").as.s, "meta");
    assert_string_equal(eval_ok(ctx, "'it\\'s'").as.s, "it's");
    assert_string_equal(eval_ok(ctx, "'a\\tb\\x41'").as.s, "a\tbA");
    eval_fails(ctx, "'abc", MTK_ERR_SYNTAX, 1, "unterminated string");
    eval_fails(ctx, "r'abc'", MTK_ERR_SYNTAX, 1, "unsupported string prefix 'r''");
}

static void lists_and_tuples_follow_python(void **state)
{
    mtk_ctx *ctx = *state;
    mtk_value v = eval_ok(ctx, "[1, 2.5, 'x', [True], (None,)]");
    assert_int_equal(v.kind, MTK_VALUE_LIST);
    assert_int_equal(v.as.list.count, 5);
    assert_int_equal(v.as.list.items[0].as.i, 1);
    assert_int_equal(v.as.list.items[3].kind, MTK_VALUE_LIST);
    assert_int_equal(v.as.list.items[4].kind, MTK_VALUE_TUPLE);
    assert_int_equal(v.as.list.items[4].as.list.count, 1);

    v = eval_ok(ctx, "(1,)");
    assert_int_equal(v.kind, MTK_VALUE_TUPLE);
    assert_int_equal(v.as.list.count, 1);
    v = eval_ok(ctx, "(1)"); /* grouping, not a tuple */
    assert_int_equal(v.kind, MTK_VALUE_INT);
    v = eval_ok(ctx, "()");
    assert_int_equal(v.kind, MTK_VALUE_TUPLE);
    assert_int_equal(v.as.list.count, 0);
    v = eval_ok(ctx, "[]");
    assert_int_equal(v.kind, MTK_VALUE_LIST);
    assert_int_equal(v.as.list.count, 0);
    v = eval_ok(ctx, "(f32[2], i64[3],)");
    assert_int_equal(v.kind, MTK_VALUE_TUPLE);
    assert_int_equal(v.as.list.count, 2);
    assert_int_equal(v.as.list.items[1].as.tensor->dtype, MTK_INT64);
}

static void unary_minus_follows_python(void **state)
{
    mtk_ctx *ctx = *state;
    assert_int_equal(eval_ok(ctx, "-True").as.i, -1);
    assert_true(eval_ok(ctx, "+2.5").as.f == 2.5);
    assert_true(eval_ok(ctx, "-(-1.5)").as.f == 1.5);
    eval_fails(ctx, "-'a'", MTK_ERR_INVALID_ARGUMENT, 1, "bad operand type for unary -: 'str'");
    eval_fails(ctx, "-None", MTK_ERR_INVALID_ARGUMENT, 1, "NoneType");
}

/* --------------------------------------------------------- syntax errors */

static void syntax_errors_name_the_column(void **state)
{
    mtk_ctx *ctx = *state;
    eval_fails(ctx, "", MTK_ERR_SYNTAX, 1, "empty expression");
    eval_fails(ctx, "   # just a comment", MTK_ERR_SYNTAX, 1, "empty expression");
    eval_fails(ctx, "f32[3,4", MTK_ERR_SYNTAX, 4, "'[' was never closed");
    eval_fails(ctx, "zeros(3, 4", MTK_ERR_SYNTAX, 6, "'(' was never closed");
    eval_fails(ctx, "[1, 2", MTK_ERR_SYNTAX, 1, "'[' was never closed");
    eval_fails(ctx, "(1, 2]", MTK_ERR_SYNTAX, 6, "closing bracket ']' does not match opening parenthesis '('");
    eval_fails(ctx, "3)", MTK_ERR_SYNTAX, 2, "unmatched ')'");
    eval_fails(ctx, "3 4", MTK_ERR_SYNTAX, 3, "number 4");
    eval_fails(ctx, "f32[3] f32[4]", MTK_ERR_SYNTAX, 8, "name 'f32'");
    eval_fails(ctx, "3 + ", MTK_ERR_SYNTAX, 5, "expected an expression, found end of input");
    eval_fails(ctx, "zeros(3) += 2", MTK_ERR_SYNTAX, 11, "unexpected '='");
    eval_fails(ctx, "f32[3]; 1", MTK_ERR_SYNTAX, 7, "';' is not supported here");
    eval_fails(ctx, "zeros(,)", MTK_ERR_SYNTAX, 7, "unexpected ','");
    eval_fails(ctx, "zeros(3,,4)", MTK_ERR_SYNTAX, 9, "unexpected ','");
    eval_fails(ctx, "zeros(dtype=f16, 3)", MTK_ERR_SYNTAX, 18, "positional argument follows keyword argument");
    eval_fails(ctx, "zeros(3, dtype=f16, dtype=f32)", MTK_ERR_SYNTAX, 21, "keyword argument repeated: dtype");
    eval_fails(ctx, "$", MTK_ERR_SYNTAX, 1, "invalid character '$'");
    eval_fails(ctx, "f32[3][]", MTK_ERR_SYNTAX, 8, "expected an index, found ']'");
    eval_fails(ctx, "f32[3](1)", MTK_ERR_SYNTAX, 7, "only op names and methods can be called");
}

static void nul_byte_inside_text_is_a_syntax_error(void **state)
{
    mtk_ctx *ctx = *state;
    static const char text[] = { '[', '1', ',', '\0', '2', ']' };
    mtk_value v;
    int32_t column;
    assert_false(mtk_eval_text(ctx, text, sizeof text, &v, &column));
    assert_int_equal(mtk_ctx_status(ctx), MTK_ERR_SYNTAX);
    assert_int_equal(column, 4);
    assert_non_null(strstr(mtk_ctx_message(ctx), "invalid character '\\x00'"));
}

static void syntax_errors_come_before_any_evaluation(void **state)
{
    /* Python parses the whole expression first: the bad dtype is never
     * reached */
    eval_fails(*state, "[f33[2], (]", MTK_ERR_SYNTAX, 11, "unexpected ']'");
}

static char *repeat(const char *open, int n, const char *middle, const char *close)
{
    size_t no = strlen(open), nm = strlen(middle), nc = strlen(close);
    char *s = malloc(no * (size_t)n + nm + nc * (size_t)n + 1);
    size_t k = 0;
    for (int i = 0; i < n; i++) memcpy(s + k, open, no), k += no;
    memcpy(s + k, middle, nm), k += nm;
    for (int i = 0; i < n; i++) memcpy(s + k, close, nc), k += nc;
    s[k] = '\0';
    return s;
}

static void deep_nesting_is_bounded(void **state)
{
    mtk_ctx *ctx = *state;
    char *ok_expr = repeat("[", 200, "1", "]");
    mtk_value v = eval_ok(ctx, ok_expr);
    for (int i = 0; i < 200; i++) {
        assert_int_equal(v.kind, MTK_VALUE_LIST);
        v = v.as.list.items[0];
    }
    assert_int_equal(v.as.i, 1);
    free(ok_expr);

    char *deep = repeat("(", 100000, "1", ")");
    eval_fails(ctx, deep, MTK_ERR_SYNTAX, MTK_EVAL_MAX_DEPTH + 1, "nested too deeply");
    free(deep);
    char *minus = repeat("-", 100000, "1", "");
    eval_fails(ctx, minus, MTK_ERR_SYNTAX, 0, "nested too deeply");
    free(minus);
    char *calls = repeat("abs(", 5000, "f32[1]", ")");
    eval_fails(ctx, calls, MTK_ERR_SYNTAX, 0, "nested too deeply");
    free(calls);
}

static void very_long_input_is_handled(void **state)
{
    mtk_ctx *ctx = *state;
    const int n = MTK_EVAL_MAX_ITEMS;
    char *s = malloc((size_t)n * 2 + 2);
    size_t k = 0;
    s[k++] = '[';
    for (int i = 0; i < n; i++) {
        s[k++] = '7';
        s[k++] = ',';
    }
    s[k - 1] = ']';
    s[k] = '\0';
    mtk_value v = eval_ok(ctx, s);
    assert_int_equal(v.kind, MTK_VALUE_LIST);
    assert_int_equal(v.as.list.count, n);
    assert_int_equal(v.as.list.items[n - 1].as.i, 7);
    s[k - 1] = ')'; /* [7, ..., 7) */
    eval_fails(ctx, s, MTK_ERR_SYNTAX, (int32_t)k, "closing parenthesis ')' does not match");
    free(s);
}

/* ----------------------------------------------------------------- calls */

static void unknown_op_fails_before_its_arguments(void **state)
{
    mtk_ctx *ctx = *state;
    eval_fails(ctx, "nosuchop(f33[2])", MTK_ERR_UNKNOWN_OP, 1, "unknown op 'nosuchop'");
    eval_fails(ctx, "[1, torch.nosuchop(2)]", MTK_ERR_UNKNOWN_OP, 5, "unknown op 'torch.nosuchop'");
    eval_fails(ctx, "f32[2].nosuchmethod()", MTK_ERR_UNKNOWN_OP, 8, "unknown op 'nosuchmethod'");
}

static void unknown_op_suggests_a_near_name(void **state)
{
    mtk_ctx *ctx = *state;
    if (mtk_op_count() == 0) skip();
    const char *name = mtk_op_at(0)->name;
    char typo[128];
    snprintf(typo, sizeof typo, "%sx(1)", name); /* one letter too many */
    mtk_value v;
    assert_false(mtk_eval(ctx, typo, &v));
    assert_int_equal(mtk_ctx_status(ctx), MTK_ERR_UNKNOWN_OP);
    char want[160];
    snprintf(want, sizeof want, "did you mean '%s'", name);
    assert_non_null(strstr(mtk_ctx_message(ctx), want));
}

static void op_name_without_call_is_explained(void **state)
{
    mtk_ctx *ctx = *state;
    if (mtk_op_count() == 0) skip();
    const char *name = mtk_op_at(0)->name;
    mtk_value v;
    assert_false(mtk_eval(ctx, name, &v));
    assert_non_null(strstr(mtk_ctx_message(ctx), "is an op: call it"));
}

static void sticky_error_makes_eval_fail_at_once(void **state)
{
    mtk_ctx *ctx = *state;
    mtk_error(ctx, MTK_ERR_SHAPE, "an earlier error");
    mtk_value v;
    assert_false(mtk_eval(ctx, "3", &v));
    assert_string_equal(mtk_ctx_message(ctx), "an earlier error");
    mtk_ctx_clear_error(ctx);
    assert_int_equal(eval_ok(ctx, "3").as.i, 3);
}

static bool have_op(const char *name) { return mtk_op_find(name) != NULL; }

static void creation_ops_run_on_the_eval_device(void **state)
{
    mtk_ctx *ctx = *state;
    if (!have_op("zeros")) skip();
    mtk_tensor *t = eval_tensor(ctx, "zeros(3, 4)");
    check_shape(t, 2, (int64_t[]){ 3, 4 }, (int64_t[]){ 4, 1 });
    assert_int_equal(t->device, MTK_DEVICE_META);
    assert_int_equal(t->dtype, MTK_FLOAT32);
    t = eval_tensor(ctx, "torch.zeros([2, 3], dtype=torch.float16)");
    check_shape(t, 2, (int64_t[]){ 2, 3 }, (int64_t[]){ 3, 1 });
    assert_int_equal(t->dtype, MTK_FLOAT16);
    t = eval_tensor(ctx, "zeros(2, dtype=float)"); /* Python's float: float64 */
    assert_int_equal(t->dtype, MTK_FLOAT64);
    assert_true(mtk_ctx_push_device(ctx, MTK_DEVICE_CPU));
    t = eval_tensor(ctx, "zeros((2,))");
    assert_int_equal(t->device, MTK_DEVICE_CPU);
    assert_non_null(mtk_tensor_data(t));
}

static void op_errors_keep_the_op_message_and_column(void **state)
{
    mtk_ctx *ctx = *state;
    if (!have_op("zeros")) skip();
    eval_fails(ctx, "[0, zeros(2, dtype='x')]", MTK_ERR_INVALID_ARGUMENT, 5, "zeros");
    eval_fails(ctx, "zeros(2, nosuchkw=1)", MTK_ERR_INVALID_ARGUMENT, 1, "unexpected keyword argument 'nosuchkw'");
}

static void method_calls_pass_the_receiver_first(void **state)
{
    mtk_ctx *ctx = *state;
    if (!have_op("view")) skip();
    mtk_tensor *t = eval_tensor(ctx, "f32[3,4].view(2, 6)");
    check_shape(t, 2, (int64_t[]){ 2, 6 }, (int64_t[]){ 6, 1 });
    t = eval_tensor(ctx, "f32[3,4].view(-1).view(2, 2, 3)");
    check_shape(t, 3, (int64_t[]){ 2, 2, 3 }, (int64_t[]){ 6, 3, 1 });
}

static void prefixes_and_nested_calls_work(void **state)
{
    mtk_ctx *ctx = *state;
    if (!have_op("add") || !have_op("relu")) skip();
    mtk_tensor *t = eval_tensor(ctx, "F.relu(torch.add(f32[8,1,6], torch.nn.functional.relu(i64[7,1])))");
    check_shape(t, 3, (int64_t[]){ 8, 7, 6 }, (int64_t[]){ 42, 6, 1 });
    assert_int_equal(t->dtype, MTK_FLOAT32);
}

static void unary_minus_of_a_tensor_negates(void **state)
{
    mtk_ctx *ctx = *state;
    if (!have_op("neg")) skip();
    mtk_tensor *t = eval_tensor(ctx, "-f32[2,3]");
    check_shape(t, 2, (int64_t[]){ 2, 3 }, (int64_t[]){ 3, 1 });
}

/* ------------------------------------------------------------------ repr */

static void numbers_print_like_python(void **state)
{
    mtk_ctx *ctx = *state;
    static const struct { const char *expr, *repr; } cases[] = {
        { "3", "3" }, { "-9223372036854775808", "-9223372036854775808" }, { "2.5", "2.5" },
        { "0.1", "0.1" }, { "1e-5", "1e-05" }, { "0.0001", "0.0001" }, { "1e16", "1e+16" },
        { "1e15", "1000000000000000.0" }, { "123456789.125", "123456789.125" },
        { "1.5e300", "1.5e+300" }, { "5e-324", "5e-324" }, { "2.", "2.0" }, { "-0.0", "-0.0" },
        { "inf", "inf" }, { "-inf", "-inf" }, { "nan", "nan" },
        { "0.30000000000000004", "0.30000000000000004" }, { "True", "True" },
        { "False", "False" }, { "None", "None" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        assert_string_equal(repr_of(ctx, cases[i].expr), cases[i].repr);
}

static void values_print_like_python(void **state)
{
    mtk_ctx *ctx = *state;
    static const struct { const char *expr, *repr; } cases[] = {
        { "'cpu'", "'cpu'" }, { "\"it's\"", "\"it's\"" }, { "'a\\nb'", "'a\\nb'" },
        { "(1,)", "(1,)" }, { "()", "()" }, { "[1, (2, 3.5), []]", "[1, (2, 3.5), []]" },
        { "torch.float16", "torch.float16" }, { "bf16", "torch.bfloat16" },
        { "torch.device('meta')", "device(type='meta')" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        assert_string_equal(repr_of(ctx, cases[i].expr), cases[i].repr);
}

static void tuples_of_tensors_print_each_repr(void **state)
{
    mtk_ctx *ctx = *state;
    mtk_value v = eval_ok(ctx, "(f32[2], i64[3,1])");
    char *a = mtk_tensor_repr(ctx, v.as.list.items[0].as.tensor);
    char *b = mtk_tensor_repr(ctx, v.as.list.items[1].as.tensor);
    char want[1024];
    snprintf(want, sizeof want, "(%s, %s)", a, b);
    assert_string_equal(mtk_value_repr(ctx, &v), want);
}

/* ------------------------------------------------------------------ JSON */

static void tensor_json_has_shape_dtype_stride_offset_device(void **state)
{
    mtk_ctx *ctx = *state;
    assert_string_equal(json_of(ctx, "f32[3,5]", 0),
                        "{\"shape\":[3,5],\"dtype\":\"float32\",\"stride\":[5,1],"
                        "\"storage_offset\":0,\"device\":\"meta\"}");
    assert_string_equal(json_of(ctx, "bf16[]", MTK_JSON_VALUES),
                        "{\"shape\":[],\"dtype\":\"bfloat16\",\"stride\":[],"
                        "\"storage_offset\":0,\"device\":\"meta\"}");
}

static void cpu_tensor_json_has_values_on_request(void **state)
{
    mtk_ctx *ctx = *state;
    assert_true(mtk_ctx_push_device(ctx, MTK_DEVICE_CPU));
    assert_string_equal(json_of(ctx, "f16[2,2]", MTK_JSON_VALUES),
                        "{\"shape\":[2,2],\"dtype\":\"float16\",\"stride\":[2,1],"
                        "\"storage_offset\":0,\"device\":\"cpu\",\"values\":[0.0,0.0,0.0,0.0]}");
    assert_string_equal(json_of(ctx, "[bool[2], i64[1]]", MTK_JSON_VALUES),
                        "[{\"shape\":[2],\"dtype\":\"bool\",\"stride\":[1],\"storage_offset\":0,"
                        "\"device\":\"cpu\",\"values\":[false,false]},"
                        "{\"shape\":[1],\"dtype\":\"int64\",\"stride\":[1],\"storage_offset\":0,"
                        "\"device\":\"cpu\",\"values\":[0]}]");
    assert_null(strstr(json_of(ctx, "f32[2]", 0), "values"));
}

static void strided_cpu_values_are_in_logical_order(void **state)
{
    mtk_ctx *ctx = *state;
    /* a (2, 3) view with strides (1, 2) over 0..5: logical order is
     * 0 2 4 1 3 5, as torch.arange(6.).view(3, 2).t().flatten() */
    float data[6] = { 0, 1, 2, 3, 4, 5 };
    mtk_tensor *t = mtk_tensor_from_data(ctx, MTK_FLOAT32, (int64_t[]){ 2, 3 }, 2, (int64_t[]){ 1, 2 }, data);
    assert_non_null(t);
    mtk_value v = mtk_value_tensor(t);
    assert_string_equal(mtk_value_to_json(ctx, &v, MTK_JSON_VALUES),
                        "{\"shape\":[2,3],\"dtype\":\"float32\",\"stride\":[1,2],"
                        "\"storage_offset\":0,\"device\":\"cpu\","
                        "\"values\":[0.0,2.0,4.0,1.0,3.0,5.0]}");
}

static void scalars_json_as_python_json_writes_them(void **state)
{
    mtk_ctx *ctx = *state;
    static const struct { const char *expr, *json; } cases[] = {
        { "3", "{\"scalar\":3}" }, { "2.0", "{\"scalar\":2.0}" }, { "1e-5", "{\"scalar\":1e-05}" },
        { "True", "{\"scalar\":true}" }, { "nan", "{\"scalar\":NaN}" },
        { "-inf", "{\"scalar\":-Infinity}" }, { "None", "null" },
        { "9007199254740993", "{\"scalar\":9007199254740993}" },
        { "-9223372036854775808", "{\"scalar\":-9223372036854775808}" },
        { "'cpu'", "{\"string\":\"cpu\"}" }, { "torch.float16", "{\"dtype\":\"float16\"}" },
        { "torch.device('cpu')", "{\"device\":\"cpu\"}" }, { "(1, [2])", "[{\"scalar\":1},[{\"scalar\":2}]]" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        assert_string_equal(json_of(ctx, cases[i].expr, 0), cases[i].json);
}

static void error_json_has_code_and_message(void **state)
{
    mtk_ctx *ctx = *state;
    mtk_value v;
    assert_false(mtk_eval(ctx, "f32[\"x\"]", &v));
    assert_string_equal(mtk_error_to_json(ctx),
                        "{\"error\":{\"code\":\"syntax_error\",\"message\":\"syntax error at column 5: "
                        "expected an integer size in the tensor literal (sizes are integer literals), "
                        "found string \\\"x\\\"\"}}");
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(literal_is_contiguous_meta_tensor),
        T(literal_with_no_sizes_is_zero_dim),
        T(literal_with_zero_size_has_torch_strides),
        T(literal_accepts_short_and_long_dtype_names),
        T(literal_allows_spaces_and_trailing_comma),
        T(cpu_literal_is_zero_filled),
        T(negative_literal_size_reports_torch_error),
        T(literal_of_unknown_dtype_fails),
        T(literal_with_too_many_dims_fails),
        T(literal_whose_numel_overflows_fails),
        T(literal_sizes_must_be_integer_literals),
        T(integers_parse_as_python_does),
        T(integers_beyond_int64_fail_as_overflow),
        T(floats_parse_as_python_does),
        T(inf_and_nan_are_floats),
        T(malformed_numbers_are_syntax_errors),
        T(constants_and_dtypes_resolve),
        T(undefined_names_fail),
        T(strings_use_either_quote_and_escapes),
        T(lists_and_tuples_follow_python),
        T(unary_minus_follows_python),
        T(syntax_errors_name_the_column),
        T(nul_byte_inside_text_is_a_syntax_error),
        T(syntax_errors_come_before_any_evaluation),
        T(deep_nesting_is_bounded),
        T(very_long_input_is_handled),
        T(unknown_op_fails_before_its_arguments),
        T(unknown_op_suggests_a_near_name),
        T(op_name_without_call_is_explained),
        T(sticky_error_makes_eval_fail_at_once),
        T(creation_ops_run_on_the_eval_device),
        T(op_errors_keep_the_op_message_and_column),
        T(method_calls_pass_the_receiver_first),
        T(prefixes_and_nested_calls_work),
        T(unary_minus_of_a_tensor_negates),
        T(numbers_print_like_python),
        T(values_print_like_python),
        T(tuples_of_tensors_print_each_repr),
        T(tensor_json_has_shape_dtype_stride_offset_device),
        T(cpu_tensor_json_has_values_on_request),
        T(strided_cpu_values_are_in_logical_order),
        T(scalars_json_as_python_json_writes_them),
        T(error_json_has_code_and_message),
    };
#undef T
    return cmocka_run_group_tests(tests, NULL, NULL);
}
