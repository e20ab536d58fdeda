/* smollm3: SmolLM3 (SmolLM3Model, SmolLM3ForCausalLM): Llama's layers where
 * some skip the rotary embedding (NoPE): no_rope_layers[i] is 1 for a layer
 * with rope, 0 without; absent, every no_rope_layer_interval-th layer has
 * none.  Embeddings tied by default, rope_theta 2e6 by default. */
#include "models/decoder.h"

#define SMOLLM3_MAX_LAYERS 1024

typedef struct smollm3_layers {
    int64_t use_rope[SMOLLM3_MAX_LAYERS];
    int64_t count;
} smollm3_layers;

/* Llama's layer; its spec has no rotary dims when the layer has no rope. */
static mtk_module *smollm3_layer(mtk_ctx *ctx, const decoder_types *t, const decoder_spec *spec, int64_t index)
{
    const smollm3_layers *layers = spec->layer_data;
    if (layers->use_rope[index]) return models_decoder_layer(ctx, t, spec, index);
    decoder_spec nope = *spec;
    nope.rope.dim = 0;
    return models_decoder_layer(ctx, t, &nope, index);
}

mtk_module *models_family_smollm3_build(model_config *c, const char *architecture)
{
    static const decoder_defaults defaults = { .kv_heads = 4, .eps = 1e-6, .tie_embeddings = true, .act = "silu",
                                               .pad_token_id = 128004, .rope_theta = 2000000.0 };
    decoder_spec spec;
    if (!models_decoder_read_common(c, &spec, "SmolLM3", &defaults)) return NULL;
    spec.qkv_bias = spec.o_bias = models_cfg_bool(c, "attention_bias", false);
    spec.mlp_bias = models_cfg_bool(c, "mlp_bias", false);
    if (spec.layers > SMOLLM3_MAX_LAYERS)
        return models_cfg_fail(c, "num_hidden_layers", "at most %d layers, got %lld", SMOLLM3_MAX_LAYERS,
                        (long long)spec.layers),
               NULL;
    smollm3_layers *layers = mtk_ctx_alloc(c->ctx, sizeof *layers);
    if (!layers) return NULL;
    layers->count = spec.layers;
    int32_t n = models_cfg_int_list(c, "no_rope_layers", layers->use_rope, SMOLLM3_MAX_LAYERS);
    int64_t interval = models_cfg_positive(c, "no_rope_layer_interval", 4);
    if (!models_cfg_ok(c)) return NULL;
    if (n < 0) {
        for (int64_t i = 0; i < spec.layers; i++) layers->use_rope[i] = (i + 1) % interval != 0;
    } else if (n < spec.layers) {
        return models_cfg_fail(c, "no_rope_layers", "has %d entries for %lld layers", n, (long long)spec.layers), NULL;
    }
    spec.layer_builder = smollm3_layer;
    spec.layer_data = layers;
    return models_decoder_build(c, &spec, architecture);
}
