/* libFuzzer target for the safetensors header parser and validator: any
 * byte string is a whole file image.  A file that validates is then read
 * tensor by tensor (views, and copies converted to float32), so that the
 * validator's promises (offsets inside the data, sizes that add up) are
 * checked by AddressSanitizer too.
 *
 *   make fuzz        runs it for FUZZ_SECONDS (60) seconds
 *   make test-fuzz   a short run (10 seconds), part of the tests */
#include "mtk/io.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    mtk_ctx *ctx = mtk_ctx_new();
    if (!ctx) return 0;
    mtk_st_file *file = mtk_st_open_memory(ctx, data, size, "fuzz");
    if (!file) {
        /* every failure is a recorded error with a message */
        if (mtk_ctx_status(ctx) == MTK_OK || mtk_ctx_message(ctx)[0] == '\0') __builtin_trap();
    } else {
        for (int64_t i = 0; i < mtk_st_tensor_count(file); i++) {
            const mtk_st_info *info = mtk_st_tensor_at(file, i);
            if (mtk_st_find(file, info->name) != info) __builtin_trap();
            if (mtk_st_dtype_to_mtk(info->dtype) == MTK_DTYPE_UNDEFINED) continue;
            mtk_tensor *view = mtk_st_view(ctx, file, info->name);
            mtk_tensor *copy = mtk_st_load(ctx, file, info->name, MTK_FLOAT32);
            if (!view || !copy) __builtin_trap();
            if (info->ndim > 0 && info->shape[0] > 0) mtk_st_load_slice(ctx, file, info->name, 0, 0, 1, MTK_DTYPE_UNDEFINED);
        }
        for (int64_t i = 0; i < mtk_st_metadata_count(file); i++) {
            const char *key, *value;
            mtk_st_metadata_at(file, i, &key, &value);
            if (mtk_st_metadata_get(file, key) != value) __builtin_trap();
        }
        mtk_st_close(file);
    }
    mtk_ctx_free(ctx);
    return 0;
}
