/* Helpers shared by the module tests (test_nn*.c): shape literals, shape
 * and error assertions, and meta contexts/inputs.  Include after cmocka.h. */
#ifndef MTK_TEST_NN_HELPERS_H
#define MTK_TEST_NN_HELPERS_H

#include <string.h>

#include "mtk/mtk.h"

#define SHAPE(...) ((const int64_t[]){ __VA_ARGS__ })

static inline void assert_shape(const mtk_tensor *t, int32_t ndim, const int64_t *shape)
{
    assert_non_null(t);
    assert_int_equal(t->ndim, ndim);
    for (int32_t i = 0; i < ndim; i++) assert_int_equal(t->shape[i], shape[i]);
}

/* The context's sticky error has `status` and a message containing
 * `text`; clears it. */
static inline void assert_error(mtk_ctx *ctx, mtk_status status, const char *text)
{
    assert_int_equal(mtk_ctx_status(ctx), status);
    if (!strstr(mtk_ctx_message(ctx), text)) fail_msg("message '%s' lacks '%s'", mtk_ctx_message(ctx), text);
    mtk_ctx_clear_error(ctx);
}

/* A context whose default device is meta. */
static inline mtk_ctx *meta_ctx(void)
{
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_ctx_push_device(ctx, MTK_DEVICE_META);
    return ctx;
}

static inline mtk_tensor *meta_input(mtk_ctx *ctx, int32_t ndim, const int64_t *shape)
{
    return mtk_tensor_new(ctx, MTK_FLOAT32, shape, ndim, NULL, MTK_DEVICE_META);
}

#endif
