/* Shared by the unit tests that drive mtk through expressions: a context
 * per test (cmocka setup/teardown) and `mtk_eval` on a chosen device.
 * Include after <cmocka.h>. */
#ifndef MTK_TESTS_UNIT_EVAL_H
#define MTK_TESTS_UNIT_EVAL_H

#include "mtk/mtk.h"
#include "mtk/eval.h"

/* cmocka fixtures: *state is a fresh context, freed after the test */
static inline int unit_ctx_setup(void **state)
{
    mtk_ctx *ctx = mtk_ctx_new();
    if (!ctx) return -1;
    *state = ctx;
    return 0;
}

static inline int unit_ctx_teardown(void **state)
{
    mtk_ctx_free(*state);
    return 0;
}

/* A test run with those fixtures. */
#define UNIT_CTX_TEST(f) cmocka_unit_test_setup_teardown(f, unit_ctx_setup, unit_ctx_teardown)

/* expr evaluated with `device` as the default device; fails the test,
 * with mtk's message, when it errors */
static inline mtk_value unit_eval_on(mtk_ctx *ctx, mtk_device device, const char *expr)
{
    mtk_value v;
    assert_true(mtk_ctx_push_device(ctx, device));
    bool ok = mtk_eval(ctx, expr, &v);
    assert_true(mtk_ctx_pop_device(ctx));
    if (!ok) fail_msg("eval(%s) failed: %s", expr, mtk_ctx_message(ctx));
    return v;
}

#endif
