/* libFuzzer target for config.json: any byte string is the text of a
 * config.json.  It is parsed (mtk_model_config_parse) and, when it parses,
 * the model is built on the meta device (device and init-mode scopes of
 * meta, so nothing is allocated for data), then its parameters are
 * walked.  Every failure must be a recorded error with a message; a crash,
 * a sanitizer report, a timeout or a huge allocation is a bug.
 *
 * Seeds: tests/models/corpus (the built-in configs, written by
 * tests/models/make_config_corpus.py); dictionary: fuzz/config.dict.
 * By hand (the Makefile's fuzz rules build it the same way):
 *   build-fuzz/fuzz_config -dict=fuzz/config.dict -rss_limit_mb=2048 \
 *       -max_len=16384 build-fuzz/config-corpus tests/models/corpus */
#include "mtk/models.h"
#include "mtk/nn.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Every failure must leave an error with a message behind. */
static void check_failure(mtk_ctx *ctx)
{
    if (mtk_ctx_status(ctx) == MTK_OK || mtk_ctx_message(ctx)[0] == '\0') __builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1); /* the parser takes NUL-terminated text */
    if (!text) return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    mtk_ctx *ctx = mtk_ctx_new();
    if (!ctx) {
        free(text);
        return 0;
    }
    mtk_model_config *config = mtk_model_config_parse(ctx, text, "fuzz");
    if (!config) {
        check_failure(ctx);
    } else if (mtk_ctx_push_device(ctx, MTK_DEVICE_META) && mtk_ctx_push_init_mode(ctx, MTK_INIT_META)) {
        mtk_module *model = mtk_model_build_config(ctx, config, MTK_DTYPE_UNDEFINED);
        if (!model) check_failure(ctx);
        else if (mtk_module_num_parameters(model, false) < 0) __builtin_trap();
        mtk_ctx_pop_init_mode(ctx);
        mtk_ctx_pop_device(ctx);
    }
    mtk_model_config_free(config);
    mtk_ctx_free(ctx);
    free(text);
    return 0;
}
