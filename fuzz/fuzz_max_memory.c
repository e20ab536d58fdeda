/* libFuzzer target for mtk place's --max-memory list: any byte string
 * (NUL-terminated here) is parsed into devices.  Every failure must be a
 * recorded error that quotes the list's bad entry; a success must leave
 * 1..MTK_PLACE_MAX_DEVICES devices, GPUs first, then cpu, then disk, each
 * named once.  AddressSanitizer and UndefinedBehaviorSanitizer check the
 * rest.
 *
 *   make fuzz        runs it with the other targets */
#include "mtk/mtk.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *spec = malloc(size + 1);
    if (!spec) return 0;
    memcpy(spec, data, size);
    spec[size] = '\0';
    mtk_ctx *ctx = mtk_ctx_new();
    if (!ctx) {
        free(spec);
        return 0;
    }
    mtk_place_options o;
    mtk_place_options_init(&o);
    if (mtk_place_parse_max_memory(ctx, spec, &o)) {
        if (o.ndevices < 1 || o.ndevices > MTK_PLACE_MAX_DEVICES) abort();
        for (int32_t i = 0; i < o.ndevices; i++) {
            if (i > 0 && o.devices[i].kind < o.devices[i - 1].kind) abort();
            if (o.devices[i].kind != MTK_PLACE_DISK && o.devices[i].budget_bytes <= 0) abort();
            for (int32_t j = 0; j < i; j++)
                if (o.devices[i].kind == o.devices[j].kind && o.devices[i].index == o.devices[j].index) abort();
        }
    } else if (mtk_ctx_status(ctx) == MTK_OK || !mtk_ctx_message(ctx)[0]) {
        abort();
    }
    mtk_ctx_free(ctx);
    free(spec);
    return 0;
}
