/* The forwards a placement is charged for: model(input_ids) with the
 * DynamicCache transformers builds (a decoder family), the plain forward
 * otherwise; for generation the prefill (logits_to_keep=1, generate's
 * attention mask) and the last decode step, whose cache holds
 * seq + new_tokens - 2 tokens (mtk_kv_cache_assume). */
#include "plan/place_internal.h"
#include "mtk/nn.h"

#include <string.h>

/* Traces model(ids (b, s), past_key_values=cache) into pg: the logits and
 * the new cache kept.  False with the context's error. */
static bool trace_cached(mtk_ctx *ctx, mtk_module *model, mtk_kv_cache *cache, int64_t b, int64_t s,
                         const mtk_lm_step *how, mtk_device_kind kind, place_graph *pg)
{
    int32_t nl = mtk_kv_cache_layer_count(cache);
    int32_t *keep = mtk_ctx_alloc(ctx, (size_t)(2 * nl + 1) * sizeof *keep);
    int64_t shape[2] = { b, s };
    mtk_tensor *ids = mtk_tensor_new(ctx, MTK_INT64, shape, 2, NULL, MTK_DEVICE_META);
    if (!keep || !ids) return false;
    mtk_lm_step with = *how;
    if (how->attention_mask) /* generate's position_ids (B, S) */
        with.position_ids = mtk_tensor_new(ctx, MTK_INT64, shape, 2, NULL, MTK_DEVICE_META);
    if (how->attention_mask && !with.position_ids) return false;
    mtk_trace *trace = mtk_trace_begin(model);
    if (!trace) return false;
    mtk_tensor *logits = mtk_lm_forward_cached(model, ids, cache, &with);
    mtk_trace_end(trace);
    if (!logits) return false;
    mtk_graph *graph = mtk_graph_from_trace_on(trace, kind);
    if (!graph || !mem_graph_of(ctx, graph, &pg->g)) return false;
    int32_t nkeep = 0, id = mtk_graph_tensor_id(graph, logits);
    if (id >= 0) keep[nkeep++] = id;
    for (int32_t i = 0; i < nl; i++) {
        const mtk_kv_cache_layer *l = mtk_kv_cache_layer_at(cache, i);
        if ((id = mtk_graph_tensor_id(graph, l->keys_base)) >= 0) keep[nkeep++] = id;
        if ((id = mtk_graph_tensor_id(graph, l->values_base)) >= 0) keep[nkeep++] = id;
    }
    pg->graph = graph;
    pg->g.keep = keep;
    pg->g.nkeep = nkeep;
    return true;
}

mtk_module *place_trace(place_state *st, const char *model_name, mtk_model_info *info)
{
    mtk_ctx *ctx = st->ctx;
    const mtk_place_options *o = st->o;
    mtk_device_kind kind = st->gpu ? MTK_DEVICE_KIND_CUDA : MTK_DEVICE_KIND_CPU;
    mtk_model_resolve_options ro = { .dtype = o->dtype, .meta = true, .attention = "sdpa" };
    mtk_module *model = mtk_model_resolve(ctx, model_name, &ro, info);
    if (!model) return NULL;
    mtk_module_train(model, false);
    mtk_kv_cache *cache = info->input == MTK_MODEL_INPUT_TOKEN_IDS ? mtk_kv_cache_new(model) : NULL;
    if (!mtk_kv_cache_plannable(cache)) { /* gpt2, gpt_neox, phi: their plain forward */
        mtk_ctx_clear_error(ctx);
        cache = NULL;
    }
    int64_t b = o->batch, s = o->seq, n = o->new_tokens;
    if (o->mode == MTK_MEMORY_GENERATE) {
        if (!cache) {
            mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT,
                      "place: --mode generate models the KV cache of the decoder families; %s (%s) has none "
                      "(place it with --mode inference)",
                      model_name, info->architecture);
            return NULL;
        }
        const mtk_lm_step how = { .logits_to_keep = 1, .attention_mask = true };
        if (!trace_cached(ctx, model, cache, b, s, &how, kind, &st->graphs[0])) return NULL;
        st->ngraphs = 1;
        if (n >= 2) {
            mtk_kv_cache *late = mtk_kv_cache_new(model);
            if (!late || !mtk_kv_cache_assume(late, b, s + n - 2)) return NULL;
            if (!trace_cached(ctx, model, late, b, 1, &how, kind, &st->graphs[1])) return NULL;
            st->ngraphs = 2;
        }
        return model;
    }
    if (cache) {
        const mtk_lm_step how = { .logits_to_keep = 0, .attention_mask = false };
        if (!trace_cached(ctx, model, cache, b, s, &how, kind, &st->graphs[0])) return NULL;
        st->ngraphs = 1;
        return model;
    }
    /* no cache (encoders, t5, vit): the plain forward, its outputs kept;
       an encoder-decoder's decoder gets as many tokens as the encoder */
    mtk_plan_trace_options to = { .batch = b, .seq = s, .dtype = o->dtype, .attention = "sdpa",
                                  .device_kind = kind, .decoder_seq = s };
    mtk_plan_model *pm = mtk_plan_trace_model(ctx, model_name, &to);
    if (!pm || !mem_graph_of(ctx, pm->graph, &st->graphs[0].g)) return NULL;
    st->graphs[0].graph = pm->graph;
    st->ngraphs = 1;
    *info = pm->info;
    return pm->model;
}
