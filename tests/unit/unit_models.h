/* Shared by the unit tests that build models from config.json text.
 * Include after <cmocka.h>. */
#ifndef MTK_TESTS_UNIT_MODELS_H
#define MTK_TESTS_UNIT_MODELS_H

#include "mtk/mtk.h"

/* The model that config text `json` describes, built on meta (meta device,
 * meta init, the config's dtype); `origin` names the text in errors.
 * NULL with the context's error when the text or the build fails. */
static inline mtk_module *unit_model_from_text(mtk_ctx *ctx, const char *json, const char *origin)
{
    mtk_model_config *c = mtk_model_config_parse(ctx, json, origin);
    if (!c) return NULL;
    mtk_ctx_push_device(ctx, MTK_DEVICE_META);
    mtk_ctx_push_init_mode(ctx, MTK_INIT_META);
    mtk_module *m = mtk_model_build_config(ctx, c, MTK_DTYPE_UNDEFINED);
    mtk_ctx_pop_init_mode(ctx);
    mtk_ctx_pop_device(ctx);
    mtk_model_config_free(c);
    return m;
}

#endif
