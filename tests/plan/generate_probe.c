/* generate_probe: mtk's side of the generation oracle.  Reads lines
 *   CONFIG_PATH DTYPE ATTENTION BATCH SEQ NEW_TOKENS
 * and prints one JSON object per line: the generation plan's peak, its
 * breakdown and where it happens, and the KV cache after the prefill and
 * after the whole generation, made by running the prefill and every
 * decode step on meta through the cache (not the plan's shortcut). */
#include "mtk/mtk.h"

#include <stdio.h>
#include <string.h>

/* The generation planner's entry point (src/plan/memory_generate.c). */
mtk_memory_plan *mem_plan_generate(mtk_ctx *ctx, const char *model, const mtk_memory_options *o);

static mtk_dtype dtype_of(const char *name)
{
    return strcmp(name, "bfloat16") == 0 ? MTK_BFLOAT16 : strcmp(name, "float16") == 0 ? MTK_FLOAT16 : MTK_FLOAT32;
}

/* Prefill then n - 1 one-token steps; *prefill gets the storage after the
 * prefill. */
static bool run_cache(mtk_ctx *ctx, const char *path, mtk_dtype dtype, bool eager, int64_t b, int64_t s, int64_t n,
                      int64_t *prefill, int64_t *storage, int64_t *nbytes)
{
    mtk_model_resolve_options ro = { .dtype = dtype, .meta = true, .attention = eager ? "eager" : "sdpa" };
    mtk_module *m = mtk_model_resolve(ctx, path, &ro, NULL);
    if (!m) return false;
    mtk_kv_cache *cache = mtk_kv_cache_new(m);
    mtk_lm_step step = { 1, true, NULL };
    int64_t shape[2] = { b, s }, one[2] = { b, 1 };
    if (!mtk_lm_forward_cached(m, mtk_tensor_new(ctx, MTK_INT64, shape, 2, NULL, MTK_DEVICE_META), cache, &step))
        return false;
    *prefill = mtk_kv_cache_storage_bytes(cache);
    for (int64_t i = 1; i < n; i++)
        if (!mtk_lm_forward_cached(m, mtk_tensor_new(ctx, MTK_INT64, one, 2, NULL, MTK_DEVICE_META), cache, &step))
            return false;
    *storage = mtk_kv_cache_storage_bytes(cache);
    *nbytes = mtk_kv_cache_tensor_bytes(cache);
    return true;
}

int main(void)
{
    char line[4096], path[3000], dtype[32], attention[32];
    long long b, s, n;
    while (fgets(line, sizeof line, stdin)) {
        if (sscanf(line, "%2999s %31s %31s %lld %lld %lld", path, dtype, attention, &b, &s, &n) != 6) continue;
        mtk_ctx *ctx = mtk_ctx_new();
        mtk_memory_options o;
        mtk_memory_options_init(&o);
        o.mode = MTK_MEMORY_GENERATE;
        o.dtype = dtype_of(dtype);
        o.attention = strcmp(attention, "eager") == 0 ? MTK_ATTENTION_EAGER : MTK_ATTENTION_SDPA;
        o.batch = b, o.seq = s, o.new_tokens = n;
        mtk_memory_plan *plan = mem_plan_generate(ctx, path, &o);
        int64_t prefill = 0, storage = 0, nbytes = 0;
        bool ok = plan && run_cache(ctx, path, o.dtype, o.attention == MTK_ATTENTION_EAGER, b, s, n, &prefill,
                                    &storage, &nbytes);
        if (!ok) {
            printf("{\"error\": \"%s\"}\n", mtk_ctx_message(ctx));
        } else {
            const mtk_memory_step *p = &plan->peak;
            long long prefill_peak = 0, decode_peak = 0;
            for (int32_t i = 0; i < plan->nnotes; i++)
                sscanf(plan->notes[i], "peak of the prefill: %lld bytes; of the decode steps: %lld bytes",
                       &prefill_peak, &decode_peak);
            printf("{\"peak_bytes\": %lld, \"parameters\": %lld, \"kv_cache_at_peak\": %lld, "
                   "\"transient_at_peak\": %lld, \"peak_op\": \"%s\", \"peak_module\": \"%s\", "
                   "\"peak_phase\": \"%s\", \"kv_prefill_storage\": %lld, \"kv_storage\": %lld, "
                   "\"kv_nbytes\": %lld, \"prefill_peak\": %lld, \"decode_peak\": %lld}\n",
                   (long long)p->peak_bytes, (long long)p->breakdown.parameters, (long long)p->breakdown.kv_cache,
                   (long long)p->breakdown.transient_at_peak, p->peak_at.op, p->peak_at.module,
                   mtk_memory_phase_name(p->peak_at.phase), (long long)prefill, (long long)storage,
                   (long long)nbytes, prefill_peak, decode_peak);
        }
        fflush(stdout);
        mtk_ctx_free(ctx);
    }
    return 0;
}
