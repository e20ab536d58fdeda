/* llama4_text: the text model of Llama 4 (Llama4TextModel,
 * Llama4ForCausalLM), e.g. Llama-4-Scout-17B-16E: Llama's layers where
 *   - the MLP child is `feed_forward`: a Llama4TextMoe on the layers in
 *     moe_layers (every interleave_moe_layer_step-th layer when absent;
 *     experts of intermediate_size, a sigmoid top-k router, a shared expert,
 *     decoder_moe_fused.c), a dense Llama4TextMLP of intermediate_size_mlp
 *     on the others;
 *   - rope rotates pairs of dims (complex multiplication) on the layers
 *     with no_rope_layers[i] = 1 (absent: all but every
 *     no_rope_layer_interval-th), and the others have no rope but scale
 *     their queries by attn_temperature_tuning (floor_scale, attn_scale);
 *   - use_qk_norm L2-normalizes queries and keys (no weight) on rope layers;
 *   - layer_types (absent: chunked_attention on rope layers when
 *     attention_chunk_size is set, full_attention on the others): a
 *     chunked layer attends within its chunk of attention_chunk_size
 *     tokens, and its KV cache keeps as many as a sliding window's.
 * A `llama4` config (Llama4ForConditionalGeneration) builds its text_config
 * (family_llama4_mm.c). */
#include "models/decoder.h"

#include <string.h>

typedef struct llama4_layers {
    int64_t use_rope[DECODER_MAX_MLP_ONLY];
} llama4_layers;

/* The family's layer; without rope on a NoPE layer. */
static mtk_module *llama4_layer(mtk_ctx *ctx, const decoder_types *t, const decoder_spec *spec, int64_t index)
{
    const llama4_layers *layers = spec->layer_data;
    if (layers->use_rope[index]) return models_decoder_layer(ctx, t, spec, index);
    decoder_spec nope = *spec;
    nope.rope.dim = 0;
    return models_decoder_layer(ctx, t, &nope, index);
}

/* moe_layers (or every interleave_moe_layer_step-th layer) as the dense
 * layers models_decoder_layer reads: mlp_only = the others. */
static bool read_moe_layers(model_config *c, decoder_spec *spec)
{
    int64_t moe[DECODER_MAX_MLP_ONLY];
    int32_t n = models_cfg_int_list(c, "moe_layers", moe, DECODER_MAX_MLP_ONLY);
    int64_t step = models_cfg_positive(c, "interleave_moe_layer_step", 1);
    if (!models_cfg_ok(c)) return false;
    spec->sparse_step = 1;
    spec->n_mlp_only = 0;
    for (int64_t i = 0; i < spec->layers; i++) {
        bool sparse = (i + 1) % step == 0;
        if (n >= 0) {
            sparse = false;
            for (int32_t j = 0; j < n; j++) sparse = sparse || moe[j] == i;
        }
        if (!sparse) spec->mlp_only[spec->n_mlp_only++] = i;
    }
    return true;
}

/* no_rope_layers and layer_types into the layer table and spec->layer_chunk. */
static bool read_layers(model_config *c, decoder_spec *spec, llama4_layers *layers)
{
    int32_t n = models_cfg_int_list(c, "no_rope_layers", layers->use_rope, DECODER_MAX_MLP_ONLY);
    int64_t interval = models_cfg_positive(c, "no_rope_layer_interval", 4);
    const cJSON *chunk_item = cJSON_GetObjectItemCaseSensitive(c->root, "attention_chunk_size");
    int64_t chunk = chunk_item && cJSON_IsNull(chunk_item) ? 0 : models_cfg_positive(c, "attention_chunk_size", 8192);
    if (!models_cfg_ok(c)) return false;
    if (n <= 0) { /* absent or empty: the interval's pattern */
        for (int64_t i = 0; i < spec->layers; i++) layers->use_rope[i] = (i + 1) % interval != 0;
    } else if (n < spec->layers) {
        return models_cfg_fail(c, "no_rope_layers", "has %d entries for %lld layers", n, (long long)spec->layers);
    }
    int64_t *chunks = mtk_ctx_alloc(c->ctx, (size_t)(spec->layers ? spec->layers : 1) * sizeof *chunks);
    if (!chunks) return false;
    const cJSON *types = cJSON_GetObjectItemCaseSensitive(c->root, "layer_types");
    if (types && !cJSON_IsNull(types) && (!cJSON_IsArray(types) || cJSON_GetArraySize(types) != spec->layers))
        return models_cfg_fail(c, "layer_types", "must be a list of num_hidden_layers=%lld strings",
                               (long long)spec->layers);
    for (int64_t i = 0; i < spec->layers; i++) {
        bool chunked = layers->use_rope[i] && chunk > 0;
        if (types && !cJSON_IsNull(types)) {
            const cJSON *t = cJSON_GetArrayItem(types, (int)i);
            if (!cJSON_IsString(t)) return models_cfg_fail(c, "layer_types", "item %lld is not a string", (long long)i);
            chunked = strcmp(t->valuestring, "chunked_attention") == 0;
        }
        chunks[i] = chunked ? chunk : 0;
        spec->masks |= chunked ? DECODER_MASK_CHUNKED : DECODER_MASK_FULL; /* one per layer type present */
    }
    spec->layer_chunk = chunks;
    return true;
}

mtk_module *models_family_llama4_text_build(model_config *c, const char *architecture)
{
    static const decoder_defaults defaults = { .kv_heads = 8, .head_dim = 128, .eps = 1e-5, .tie_embeddings = false,
                                               .act = "silu", .pad_token_id = MTK_NN_NO_PADDING_IDX,
                                               .rope_theta = 500000.0 };
    decoder_spec spec;
    if (!models_decoder_read_common(c, &spec, "Llama4Text", &defaults)) return NULL;
    if (spec.layers > DECODER_MAX_MLP_ONLY)
        return models_cfg_fail(c, "num_hidden_layers", "at most %d layers, got %lld", DECODER_MAX_MLP_ONLY,
                               (long long)spec.layers),
               NULL;
    llama4_layers *layers = mtk_ctx_alloc(c->ctx, sizeof *layers);
    if (!layers || !read_moe_layers(c, &spec) || !read_layers(c, &spec, layers)) return NULL;
    spec.causal_lm_class = "Llama4ForCausalLM";
    spec.mlp_name = "feed_forward";
    spec.qkv_bias = spec.o_bias = models_cfg_bool(c, "attention_bias", false);
    spec.rope.interleaved = true;
    spec.qk_l2_norm = models_cfg_bool(c, "use_qk_norm", true);
    spec.mlp_activation_fn = true; /* Llama4TextMLP's activation_fn */
    if (models_cfg_bool(c, "attn_temperature_tuning", true)) {
        spec.temperature_floor = models_cfg_float(c, "floor_scale", 8192);
        spec.temperature_scale = models_cfg_float(c, "attn_scale", 0.1);
    }
    spec.moe = MOE_LLAMA4;
    c->experts_input_major = true; /* gate_up_proj (E, H, 2I), used as x @ W */
    spec.moe_intermediate = spec.intermediate;
    spec.intermediate = models_cfg_positive(c, "intermediate_size_mlp", 16384);
    spec.experts = models_cfg_positive(c, "num_local_experts", 16);
    spec.top_k = models_cfg_positive(c, "num_experts_per_tok", 1);
    if (!models_cfg_ok(c)) return NULL;
    if (spec.temperature_floor < 0 || (spec.temperature_floor == 0 && models_cfg_bool(c, "attn_temperature_tuning", true)))
        return models_cfg_fail(c, "floor_scale", "must be positive, got %g", spec.temperature_floor), NULL;
    if (spec.top_k > spec.experts)
        return models_cfg_fail(c, "num_experts_per_tok", "%lld is more than num_local_experts=%lld",
                               (long long)spec.top_k, (long long)spec.experts),
               NULL;
    spec.layer_builder = llama4_layer;
    spec.layer_data = layers;
    mtk_module *m = models_decoder_build(c, &spec, architecture);
    models_decoder_note_active(c, &spec, m);
    return m;
}
