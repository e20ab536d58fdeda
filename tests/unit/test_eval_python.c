/* The eval language's Python side: operators with Python's precedence,
 * tensor attributes and metadata methods, torch's basic indexing, the
 * printing of non-tensor values, and the language's limits (each chain or
 * nesting that the evaluator would recurse through is refused before it
 * can exhaust the stack). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "unit_eval.h"
#include "mtk/op.h"

static mtk_value ok(mtk_ctx *ctx, const char *expr) { return unit_eval_on(ctx, MTK_DEVICE_META, expr); }

static const char *repr(mtk_ctx *ctx, const char *expr)
{
    mtk_value v = ok(ctx, expr);
    char *r = mtk_value_repr(ctx, &v);
    assert_non_null(r);
    return r;
}

static void fails_on(mtk_ctx *ctx, mtk_device device, const char *expr, mtk_status status, const char *fragment)
{
    mtk_value v;
    assert_true(mtk_ctx_push_device(ctx, device));
    bool good = mtk_eval(ctx, expr, &v);
    assert_true(mtk_ctx_pop_device(ctx));
    if (good || mtk_ctx_status(ctx) != status || !strstr(mtk_ctx_message(ctx), fragment))
        print_message("eval(%.200s): ok=%d status=%s message=%s\n", expr, good,
                      mtk_status_name(mtk_ctx_status(ctx)), mtk_ctx_message(ctx));
    assert_false(good);
    assert_string_equal(mtk_status_name(mtk_ctx_status(ctx)), mtk_status_name(status));
    assert_non_null(strstr(mtk_ctx_message(ctx), fragment));
    mtk_ctx_clear_error(ctx);
}

static void fails(mtk_ctx *ctx, const char *expr, mtk_status status, const char *fragment)
{
    fails_on(ctx, MTK_DEVICE_META, expr, status, fragment);
}

/* `prefix` + `n` copies of `unit` + `suffix`, malloc'ed. */
static char *chain(const char *prefix, const char *unit, int n, const char *suffix)
{
    size_t np = strlen(prefix), nu = strlen(unit), ns = strlen(suffix);
    char *s = malloc(np + nu * (size_t)n + ns + 1);
    memcpy(s, prefix, np);
    for (int i = 0; i < n; i++) memcpy(s + np + nu * (size_t)i, unit, nu);
    memcpy(s + np + nu * (size_t)n, suffix, ns + 1);
    return s;
}

static void python_numbers_follow_python(void **state)
{
    mtk_ctx *ctx = *state;
    assert_string_equal(repr(ctx, "-2 ** 2"), "-4");
    assert_string_equal(repr(ctx, "2 ** -1"), "0.5");
    assert_string_equal(repr(ctx, "2 ** 3 ** 2"), "512");
    assert_string_equal(repr(ctx, "1 + 2 * 3 - 4 / 2"), "5.0");
    assert_string_equal(repr(ctx, "7 // -2"), "-4");
    assert_string_equal(repr(ctx, "7 % -2"), "-1");
    assert_string_equal(repr(ctx, "-7.5 // 2"), "-4.0");
    assert_string_equal(repr(ctx, "(1 << 4) | 1 ^ 3 & 2"), "19");
    assert_string_equal(repr(ctx, "~True"), "-2");
    assert_string_equal(repr(ctx, "True & True"), "True");
    assert_string_equal(repr(ctx, "1 < 2 < 3"), "True");
    assert_string_equal(repr(ctx, "3 > 2 > 2"), "False");
    assert_string_equal(repr(ctx, "2 == 2.0"), "True");
    assert_string_equal(repr(ctx, "9007199254740993 == 9007199254740992.0"), "False");
    assert_string_equal(repr(ctx, "[1, 2] + [3]"), "[1, 2, 3]");
    assert_string_equal(repr(ctx, "(0,) * 3"), "(0, 0, 0)");
    fails(ctx, "1 / 0", MTK_ERR_INVALID_ARGUMENT, "division by zero");
    fails(ctx, "1 // 0", MTK_ERR_INVALID_ARGUMENT, "integer division or modulo by zero");
    fails(ctx, "1.0 % 0", MTK_ERR_INVALID_ARGUMENT, "float modulo by zero");
    fails(ctx, "0 ** -1", MTK_ERR_INVALID_ARGUMENT, "0.0 cannot be raised to a negative power");
    fails(ctx, "2 ** 64", MTK_ERR_OVERFLOW, "does not fit in int64");
    fails(ctx, "9223372036854775807 + 1", MTK_ERR_OVERFLOW, "does not fit in int64");
    fails(ctx, "1 << -1", MTK_ERR_INVALID_ARGUMENT, "negative shift count");
    fails(ctx, "1.5 << 1", MTK_ERR_INVALID_ARGUMENT, "unsupported operand type(s) for <<");
    fails(ctx, "2 @ 3", MTK_ERR_INVALID_ARGUMENT, "unsupported operand type(s) for @");
    fails(ctx, "(1,) + [2]", MTK_ERR_INVALID_ARGUMENT, "can only concatenate tuple");
    fails(ctx, "[0] * 100000", MTK_ERR_INVALID_ARGUMENT, "MTK_EVAL_MAX_ITEMS");
}

static void tensor_operators_call_torch_ops(void **state)
{
    mtk_ctx *ctx = *state;
    mtk_tensor *t = ok(ctx, "f32[2,3] + f32[2,5] @ f32[5,3][:, :]").as.tensor;
    assert_int_equal(t->ndim, 2);
    assert_int_equal(t->shape[0], 2);
    t = ok(ctx, "2 / i64[3]").as.tensor; /* reciprocal() * 2: float */
    assert_int_equal(t->dtype, MTK_FLOAT32);
    assert_int_equal(ok(ctx, "2 - i32[3]").as.tensor->dtype, MTK_INT32);
    assert_int_equal(ok(ctx, "1 < f32[3]").as.tensor->dtype, MTK_BOOL);
    assert_int_equal(ok(ctx, "~i16[3]").as.tensor->dtype, MTK_INT16);
    assert_int_equal(ok(ctx, "f32[3] ** 2 // 3 % 2").as.tensor->dtype, MTK_FLOAT32);
    /* -a ** 2 is -(a ** 2): the neg of an int64 pow, not a neg of bool */
    assert_int_equal(ok(ctx, "-bool[2] ** 2").as.tensor->dtype, MTK_INT64);
    fails(ctx, "(-bool[2]) ** 2", MTK_ERR_DTYPE, "Negation, the `-` operator, on a bool tensor");
    assert_int_equal(ok(ctx, "2 - bool[2]").as.tensor->dtype, MTK_INT64); /* rsub, as torch */
    fails(ctx, "bool[2] - bool[2]", MTK_ERR_DTYPE, "Subtraction, the `-` operator, with two bool tensors");
    fails(ctx, "+bool[2]", MTK_ERR_DTYPE, "The `+` operator, on a bool tensor");
    fails(ctx, "f32[2] @ 2", MTK_ERR_INVALID_ARGUMENT, "unsupported operand type(s) for @");
    fails(ctx, "f32[2] < f32[2] < f32[2]", MTK_ERR_INVALID_ARGUMENT, "(a < b) & (b < c)");
    fails(ctx, "f32[2] << 1", MTK_ERR_NOT_IMPLEMENTED, "bitwise shift");
}

static void attributes_and_metadata_methods_read_the_tensor(void **state)
{
    mtk_ctx *ctx = *state;
    assert_string_equal(repr(ctx, "f32[3,4].shape"), "torch.Size([3, 4])");
    assert_string_equal(repr(ctx, "f32[3,4].size()"), "torch.Size([3, 4])");
    assert_string_equal(repr(ctx, "f32[3,4].size(-1)"), "4");
    assert_string_equal(repr(ctx, "f32[3,4].size(dim=0)"), "3");
    assert_string_equal(repr(ctx, "f32[3,4].t().stride()"), "(1, 4)");
    assert_string_equal(repr(ctx, "f32[3,4].stride(1)"), "1");
    assert_string_equal(repr(ctx, "(f32[3,4].numel(), f32[3,4].dim(), f32[3,4].ndim)"), "(12, 2, 2)");
    assert_string_equal(repr(ctx, "bf16[3,4].nbytes"), "24");
    assert_string_equal(repr(ctx, "f64[2].element_size()"), "8");
    assert_string_equal(repr(ctx, "f32[3,4].dtype"), "torch.float32");
    assert_string_equal(repr(ctx, "f32[3,4].device"), "device(type='meta')");
    assert_string_equal(repr(ctx, "f32[3,4][1:].storage_offset()"), "4");
    assert_string_equal(repr(ctx, "f32[3,4].t().is_contiguous()"), "False");
    assert_string_equal(repr(ctx, "f32[2,3,4].T.shape"), "torch.Size([4, 3, 2])");
    assert_string_equal(repr(ctx, "f32[2,3,4].mT.shape"), "torch.Size([2, 4, 3])");
    assert_string_equal(repr(ctx, "f32[2,3].shape + (1,)"), "torch.Size([2, 3, 1])");
    assert_string_equal(repr(ctx, "f32[2,3].shape[-1]"), "3");
    assert_string_equal(repr(ctx, "f32[2,3,4].shape[1:]"), "torch.Size([3, 4])");
    assert_string_equal(repr(ctx, "f32[2,3].shape.numel()"), "6");
    assert_string_equal(repr(ctx, "f32[2].dtype == torch.float32"), "True");
    assert_string_equal(repr(ctx, "(len(f32[5,2]), len(f32[5,2].shape), len(split(f32[5], 2)))"), "(5, 2, 3)");
    fails(ctx, "len(f32[])", MTK_ERR_INVALID_ARGUMENT, "len() of a 0-d tensor");
    assert_string_equal(repr(ctx, "zeros(f32[2,3].shape).shape"), "torch.Size([2, 3])");
    fails(ctx, "f32[3].size(1)", MTK_ERR_INDEX, "Dimension out of range (expected to be in range of [-1, 0], but got 1)");
    fails(ctx, "f32[].size(0)", MTK_ERR_INDEX, "Dimension specified as 0 but tensor has no dimensions");
    fails(ctx, "f32[3].mT", MTK_ERR_SHAPE, "tensor.mT is only supported on matrices or batches of matrices");
    fails(ctx, "f32[3].numel(1)", MTK_ERR_INVALID_ARGUMENT, "numel() takes no arguments (1 given)");
}

static void suggestions_name_what_works(void **state)
{
    mtk_ctx *ctx = *state;
    fails(ctx, "f32[3,4].shape()", MTK_ERR_INVALID_ARGUMENT, "'torch.Size' object is not callable");
    fails(ctx, "f32[3,4].ndim()", MTK_ERR_INVALID_ARGUMENT, "'int' object is not callable");
    fails(ctx, "f32[3,4].shap", MTK_ERR_INVALID_ARGUMENT, "has no attribute 'shap'; did you mean 'shape'?");
    fails(ctx, "f32[3,4].relu", MTK_ERR_INVALID_ARGUMENT, "call it, as in x.relu(...)");
    fails(ctx, "f32[3,4].numel", MTK_ERR_INVALID_ARGUMENT, "call it, as in x.numel(...)");
    fails(ctx, "f32[3,4].sizes()", MTK_ERR_UNKNOWN_OP, "did you mean 'size'?");
    fails(ctx, "f32[3,4].shape.foo", MTK_ERR_INVALID_ARGUMENT, "'torch.Size' object has no attribute 'foo'");
    fails(ctx, "f32[2] > 0 and f32[2] < 1", MTK_ERR_SYNTAX, "Python's 'and' is not part of mtk eval's language");
    fails(ctx, "not f32[2]", MTK_ERR_SYNTAX, "Python's 'not' is not part of");
}

static void basic_indexing_gives_torch_views(void **state)
{
    mtk_ctx *ctx = *state;
    /* x of (2, 3, 4) transposed to (4, 3, 2), strides (1, 4, 12) */
    mtk_tensor *t = ok(ctx, "f32[2,3,4].transpose(0, 2)[1:, None, ..., ::2]").as.tensor;
    int64_t shape[] = { 3, 1, 3, 1 }, stride[] = { 1, 12, 4, 24 };
    assert_int_equal(t->ndim, 4);
    for (int d = 0; d < 4; d++) {
        assert_int_equal(t->shape[d], shape[d]);
        assert_int_equal(t->stride[d], stride[d]);
    }
    assert_int_equal(t->storage_offset, 1);
    t = ok(ctx, "f32[3,4][0, 1:3]").as.tensor;
    assert_int_equal(t->ndim, 1);
    assert_int_equal(t->shape[0], 2);
    assert_int_equal(t->storage_offset, 1);
    t = ok(ctx, "f32[3,4][(2, 1)]").as.tensor;
    assert_int_equal(t->ndim, 0);
    assert_int_equal(t->storage_offset, 9);
    assert_int_equal(ok(ctx, "f32[3,4][...]").as.tensor->ndim, 2);
    assert_int_equal(ok(ctx, "f32[3,4][10:].shape[0] == 0").as.b, true);
    fails(ctx, "f32[3][5]", MTK_ERR_INDEX, "index 5 is out of bounds for dimension 0 with size 3");
    fails(ctx, "f32[][0]", MTK_ERR_INDEX, "invalid index of a 0-dim tensor");
    fails(ctx, "f32[3,4][0,0,0]", MTK_ERR_INDEX, "too many indices for tensor of dimension 2");
    fails(ctx, "f32[3][::-1]", MTK_ERR_INVALID_ARGUMENT, "step must be greater than zero");
    fails(ctx, "f32[3][::0]", MTK_ERR_INVALID_ARGUMENT, "slice step cannot be zero");
    fails(ctx, "f32[3][..., ...]", MTK_ERR_INDEX, "an index can only have a single ellipsis");
    fails(ctx, "f32[3][1.5]", MTK_ERR_INDEX, "only integers, slices");
    fails(ctx, "f32[3][i64[2]]", MTK_ERR_NOT_IMPLEMENTED, "advanced indexing");
    fails(ctx, "(1, 2)[2]", MTK_ERR_INDEX, "tuple index out of range");
    assert_string_equal(repr(ctx, "(1, 2, 3, 4)[::-2]"), "(4, 2)");
}

/* Every chain the evaluator, the printer or the JSON writer recurses
 * through is bounded at parse time (a stack overflow before: 40,000
 * .relu() calls crashed mtk eval). */
static void long_chains_are_refused_not_overflowed(void **state)
{
    mtk_ctx *ctx = *state;
    static const struct { const char *prefix, *unit, *suffix; } chains[] = {
        { "f32[2]", ".relu()", "" }, { "f32[2]", ".t()", "" },   { "f32[2]", "+f32[2]", "" },
        { "f32[2]", "[0:]", "" },    { "f32[2]", ".T", "" },     { "1", "**1", "" },
        { "", "-", "1" },            { "", "~", "1" },           { "", "[", "1" },
        { "f32[2]", ".shape", "" },  { "1", " if 1 else 1", "" },
    };
    for (size_t i = 0; i < sizeof chains / sizeof chains[0]; i++) {
        char *text = chain(chains[i].prefix, chains[i].unit, 40000, chains[i].suffix);
        mtk_value v;
        assert_false(mtk_eval(ctx, text, &v));
        assert_int_equal(mtk_ctx_status(ctx), MTK_ERR_SYNTAX);
        mtk_ctx_clear_error(ctx);
        free(text);
    }
    char *fits = chain("f32[2]", ".relu()", MTK_EVAL_MAX_DEPTH - 1, "");
    assert_int_equal(ok(ctx, fits).as.tensor->shape[0], 2);
    free(fits);
}

static void input_limits_are_errors_naming_the_limit(void **state)
{
    mtk_ctx *ctx = *state;
    char *items = chain("[", "1,", MTK_EVAL_MAX_ITEMS + 1, "]");
    fails(ctx, items, MTK_ERR_INVALID_ARGUMENT, "more than 65536 items in one list, tuple, call or subscript");
    free(items);
    char *string = chain("'", "a", MTK_EVAL_MAX_STRING + 1, "'");
    fails(ctx, string, MTK_ERR_INVALID_ARGUMENT, "more than mtk eval's limit of 4096 (MTK_EVAL_MAX_STRING)");
    free(string);
    char *text = chain("", " ", MTK_EVAL_MAX_TEXT, "1");
    fails(ctx, text, MTK_ERR_INVALID_ARGUMENT, "longer than mtk eval's limit of 1048576 bytes");
    free(text);
    /* shared sublists would print exponentially many items */
    fails(ctx, "[[[0] * 256] * 256] * 256", MTK_ERR_INVALID_ARGUMENT, "nested ones included");
    fails(ctx, "[0] * 65536 + [1]", MTK_ERR_INVALID_ARGUMENT, "the expression builds more than");
    fails(ctx, "unbind(i8[65536]), unbind(i8[1])", MTK_ERR_INVALID_ARGUMENT, "the expression builds more than");
    fails_on(ctx, MTK_DEVICE_CPU, "f32[1000000, 1000000]", MTK_ERR_INVALID_ARGUMENT,
             "MTK_EVAL_MAX_CPU_LITERAL_NUMEL");
    assert_int_equal(ok(ctx, "f32[1000000, 1000000]").as.tensor->shape[0], 1000000); /* meta: any size */
}

static void ops_returning_absurd_tensor_lists_are_refused(void **state)
{
    mtk_ctx *ctx = *state;
    fails(ctx, "unbind(i8[1000000000])", MTK_ERR_INVALID_ARGUMENT,
          "unbind: would return 1000000000 tensors, more than mtk's limit of 65536");
    fails(ctx, "split(i8[1000000000], 1)", MTK_ERR_INVALID_ARGUMENT, "split: would return 1000000000 tensors");
    fails(ctx, "chunk(i8[1000000000], 1000000000)", MTK_ERR_INVALID_ARGUMENT, "MTK_MAX_OP_OUTPUTS");
    fails(ctx, "tensor_split(i8[10], 1000000000)", MTK_ERR_INVALID_ARGUMENT, "tensor_split: would return");
    mtk_value v = ok(ctx, "unbind(i8[65536])");
    assert_int_equal(v.as.list.count, MTK_MAX_OP_OUTPUTS);
}

static void *small_alloc(size_t size, void *user)
{
    (void)user;
    return size > (64u << 20) ? NULL : malloc(size);
}

static void small_free(void *p, void *user)
{
    (void)user;
    free(p);
}

/* found by the eval fuzzer: a creation op asked for cpu memory inside a
 * meta expression; a machine without it answers with mtk's error */
static void cpu_memory_that_is_not_there_is_an_error(void **state)
{
    (void)state;
    static const mtk_allocator small = { small_alloc, small_free, NULL };
    mtk_ctx *ctx = mtk_ctx_new_with_allocator(&small);
    assert_non_null(ctx);
    fails(ctx, "zeros(21474836481, device='cpu')", MTK_ERR_OUT_OF_MEMORY, "out of memory allocating 85899345924 bytes");
    mtk_ctx_free(ctx);
}

static void json_values_are_bounded(void **state)
{
    mtk_ctx *ctx = *state;
    mtk_value v = unit_eval_on(ctx, MTK_DEVICE_CPU, "zeros(1048577)");
    assert_null(mtk_value_to_json(ctx, &v, MTK_JSON_VALUES));
    assert_int_equal(mtk_ctx_status(ctx), MTK_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(mtk_ctx_message(ctx), "MTK_JSON_MAX_VALUES"));
    mtk_ctx_clear_error(ctx);
    assert_non_null(mtk_value_to_json(ctx, &v, 0)); /* metadata only: fine */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        UNIT_CTX_TEST(python_numbers_follow_python),
        UNIT_CTX_TEST(tensor_operators_call_torch_ops),
        UNIT_CTX_TEST(attributes_and_metadata_methods_read_the_tensor),
        UNIT_CTX_TEST(suggestions_name_what_works),
        UNIT_CTX_TEST(basic_indexing_gives_torch_views),
        UNIT_CTX_TEST(long_chains_are_refused_not_overflowed),
        UNIT_CTX_TEST(input_limits_are_errors_naming_the_limit),
        UNIT_CTX_TEST(ops_returning_absurd_tensor_lists_are_refused),
        UNIT_CTX_TEST(cpu_memory_that_is_not_there_is_an_error),
        UNIT_CTX_TEST(json_values_are_bounded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
