/* libFuzzer target for the eval language: any byte string is an
 * expression, parsed and evaluated on the meta device (no data, so no op
 * allocates what a shape asks for), then printed as repr and as JSON.
 * Every failure must be a recorded error with a message; AddressSanitizer
 * and UndefinedBehaviorSanitizer check the rest (stack depth included:
 * the parser bounds every recursion).
 *
 *   make fuzz        runs it with the other targets
 *   fuzz/eval.dict   the language's tokens, for the mutator */
#include "mtk/eval.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A machine with 256 MiB to give: a bigger block (device='cpu' in an
 * expression asks for real memory) must come back as mtk's out-of-memory
 * error, not reach the sanitizer's allocator, which would stop the run. */
enum { ALLOC_LIMIT = 256 << 20 };

static void *limited_alloc(size_t size, void *user)
{
    (void)user;
    return size > ALLOC_LIMIT ? NULL : malloc(size);
}

static void limited_free(void *p, void *user)
{
    (void)user;
    free(p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const mtk_allocator limited = { limited_alloc, limited_free, NULL };
    mtk_ctx *ctx = mtk_ctx_new_with_allocator(&limited);
    if (!ctx) return 0;
    if (!mtk_ctx_push_device(ctx, MTK_DEVICE_META)) {
        mtk_ctx_free(ctx);
        return 0;
    }
    mtk_value result;
    int32_t column;
    if (mtk_eval_text(ctx, (const char *)data, size, &result, &column)) {
        char *repr = mtk_value_repr(ctx, &result);
        if (!repr) __builtin_trap();
        /* values of a cpu result may pass MTK_JSON_MAX_VALUES: an error */
        char *json = mtk_value_to_json(ctx, &result, MTK_JSON_VALUES);
        if (!json && (mtk_ctx_status(ctx) != MTK_ERR_INVALID_ARGUMENT || !mtk_value_to_json(ctx, &result, 0)))
            __builtin_trap();
    } else if (mtk_ctx_status(ctx) == MTK_OK || mtk_ctx_message(ctx)[0] == '\0' || column < 0 ||
               (size_t)column > size + 1) {
        __builtin_trap();
    } else if (!mtk_error_to_json(ctx)) {
        __builtin_trap();
    }
    mtk_ctx_free(ctx);
    return 0;
}
