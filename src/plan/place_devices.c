/* The devices of a placement: --max-memory's list, the options'
 * defaults and the margin kept free on a GPU. */
#include "mtk/plan.h"
#include "mtk/io.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void mtk_place_options_init(mtk_place_options *o)
{
    if (!o) return;
    memset(o, 0, sizeof *o);
    o->mode = MTK_MEMORY_INFERENCE;
    o->batch = o->seq = 1;
    o->new_tokens = 1;
    o->dtype = MTK_DTYPE_UNDEFINED;
    o->strategy = MTK_PLACE_BALANCED;
    o->margin_bytes = -1;
    mtk_memory_constants_default(&o->constants);
}

/* Fragmentation reserve: 5% of a GPU's budget (docs/placement.md). */
#define FRAGMENTATION_PERCENT 5

int64_t mtk_place_default_margin(const mtk_memory_constants *c, int64_t budget)
{
    int64_t fixed = c ? c->cuda_context_bytes + c->cublas_workspace_bytes : 0;
    return fixed + (budget > 0 ? budget / 100 * FRAGMENTATION_PERCENT : 0);
}

/* Sort key: GPUs by their order of mention, then cpu, then disk. */
static int rank_of(const mtk_place_device *d)
{
    return d->kind == MTK_PLACE_GPU ? 0 : d->kind == MTK_PLACE_CPU ? 1 : 2;
}

/* One entry "NAME[=SIZE]" of the list into *d; false with an error. */
static bool parse_entry(mtk_ctx *ctx, const char *entry, mtk_place_device *d)
{
    const char *eq = strchr(entry, '=');
    size_t klen = eq ? (size_t)(eq - entry) : strlen(entry);
    char key[32];
    if (klen == 0 || klen >= sizeof key) {
        mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT,
                  "place: --max-memory entry '%s' has no device (expected INDEX=SIZE, cpu=SIZE or disk)", entry);
        return false;
    }
    memcpy(key, entry, klen);
    key[klen] = '\0';
    d->index = -1;
    d->budget_bytes = -1;
    if (strcmp(key, "cpu") == 0) d->kind = MTK_PLACE_CPU;
    else if (strcmp(key, "disk") == 0) d->kind = MTK_PLACE_DISK;
    else {
        char *end;
        errno = 0;
        long v = strtol(key, &end, 10);
        if (errno || *end || v < 0 || v > 1023 || key[0] == '-' || key[0] == '+') {
            mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT,
                      "place: --max-memory entry '%s' names an unknown device '%s' (a GPU index such as 0, cpu "
                      "or disk)",
                      entry, key);
            return false;
        }
        d->kind = MTK_PLACE_GPU;
        d->index = (int32_t)v;
    }
    if (!eq) {
        if (d->kind == MTK_PLACE_DISK) return true;
        mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "place: --max-memory entry '%s' needs a size (%s=SIZE, e.g. %s=24GiB)",
                  entry, key, key);
        return false;
    }
    uint64_t bytes;
    if (!mtk_parse_size(eq + 1, &bytes) || bytes > (uint64_t)INT64_MAX || bytes == 0) {
        mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT,
                  "place: --max-memory entry '%s' has a bad size '%s' (expected e.g. 80GiB, 24GB, 1.5TiB or "
                  "bytes > 0)",
                  entry, eq + 1);
        return false;
    }
    d->budget_bytes = (int64_t)bytes;
    return true;
}

bool mtk_place_parse_max_memory(mtk_ctx *ctx, const char *spec, mtk_place_options *o)
{
    if (!ctx) return false;
    if (!spec || !o || !*spec) {
        mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "place: --max-memory is empty (e.g. 0=24GiB,cpu=64GiB)");
        return false;
    }
    mtk_place_device devs[MTK_PLACE_MAX_DEVICES];
    int32_t n = 0;
    const char *at = spec;
    for (;;) {
        const char *comma = strchr(at, ',');
        size_t len = comma ? (size_t)(comma - at) : strlen(at);
        char entry[96];
        if (len >= sizeof entry) len = sizeof entry - 1;
        memcpy(entry, at, len);
        entry[len] = '\0';
        if (n == MTK_PLACE_MAX_DEVICES) {
            mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "place: --max-memory names more than %d devices",
                      MTK_PLACE_MAX_DEVICES);
            return false;
        }
        if (!parse_entry(ctx, entry, &devs[n])) return false;
        for (int32_t i = 0; i < n; i++)
            if (devs[i].kind == devs[n].kind && devs[i].index == devs[n].index) {
                mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "place: --max-memory entry '%s' names a device twice",
                          entry);
                return false;
            }
        n++;
        if (!comma) break;
        at = comma + 1;
    }
    /* stable: GPUs in the order given, then cpu, then disk */
    int32_t k = 0;
    for (int r = 0; r < 3; r++)
        for (int32_t i = 0; i < n; i++)
            if (rank_of(&devs[i]) == r) o->devices[k++] = devs[i];
    o->ndevices = n;
    return true;
}
