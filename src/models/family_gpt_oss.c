/* gpt_oss: OpenAI's gpt-oss (GptOssModel, GptOssForCausalLM and the
 * classification heads): Llama-like layers where every attention has
 * biases (attention_bias, true by default) and a learned sink logit per
 * head (self_attn.sinks) in its softmax, eager attention as transformers
 * runs it, sliding and full layers alternating (layer_types; sliding first
 * by default, window 128), yarn rope by default (factor 32 over 4096
 * positions, beta_fast 32, beta_slow 1, truncate false), and a GptOssMLP
 * in every layer: router with bias, num_experts_per_tok experts of
 * intermediate_size with biases, interleaved gate/up and the clamped swiglu
 * (swiglu_alpha, swiglu_limit), decoder_moe_fused.c.  The summary notes
 * the parameters active per token. */
#include "models/decoder.h"

/* GptOssConfig's rope when a config gives none (rope_parameters and
 * rope_scaling absent or null). */
static bool add_default_rope(model_config *c)
{
    if (models_cfg_get(c, "rope_parameters") || models_cfg_get(c, "rope_scaling")) return true;
    cJSON_DeleteItemFromObjectCaseSensitive(c->root, "rope_parameters");
    cJSON_DeleteItemFromObjectCaseSensitive(c->root, "rope_scaling");
    cJSON *rope = cJSON_Parse("{\"rope_type\": \"yarn\", \"factor\": 32.0, \"beta_fast\": 32.0, \"beta_slow\": 1.0,"
                              " \"truncate\": false, \"original_max_position_embeddings\": 4096}");
    if (!rope || !cJSON_AddItemToObject(c->root, "rope_scaling", rope)) {
        cJSON_Delete(rope);
        return mtk_error(c->ctx, MTK_ERR_OUT_OF_MEMORY, "%s: out of memory", c->origin);
    }
    return true;
}

mtk_module *models_family_gpt_oss_build(model_config *c, const char *architecture)
{
    static const decoder_defaults defaults = { .kv_heads = 8, .head_dim = 64, .eps = 1e-5, .tie_embeddings = false,
                                               .act = "silu", .pad_token_id = MTK_NN_NO_PADDING_IDX,
                                               .rope_theta = 150000.0 };
    decoder_spec spec;
    if (!add_default_rope(c) || !models_decoder_read_common(c, &spec, "GptOss", &defaults) ||
        !models_decoder_read_windows(c, &spec, WINDOW_EVEN, 128))
        return NULL;
    spec.qkv_bias = spec.o_bias = models_cfg_bool(c, "attention_bias", true);
    spec.attn_sinks = true;
    spec.rope.half_width = true; /* GptOssRotaryEmbedding: cos, sin of dim / 2 (no cat) */
    spec.norm_weight_float32 = true; /* GptOssRMSNorm: (weight * x.float() normed).to(x's dtype) */
    spec.eager_attention = true; /* GptOss has no sdpa (sinks) */
    spec.moe = MOE_GPT_OSS;
    c->experts_input_major = true; /* gate_up_proj (E, H, 2I): mxfp4 packs (E, 2I, H) as the checkpoints */
    /* num_experts is transformers' alias of num_local_experts */
    spec.experts = models_cfg_positive(c, "num_local_experts", models_cfg_positive(c, "num_experts", 128));
    spec.top_k = models_cfg_positive(c, "num_experts_per_tok", 4);
    spec.moe_intermediate = spec.intermediate;
    spec.swiglu_alpha = models_cfg_float(c, "swiglu_alpha", 1.702);
    spec.swiglu_limit = models_cfg_float(c, "swiglu_limit", 7.0);
    if (!models_cfg_ok(c)) return NULL;
    if (spec.top_k > spec.experts)
        return models_cfg_fail(c, "num_experts_per_tok", "%lld is more than num_local_experts=%lld",
                               (long long)spec.top_k, (long long)spec.experts),
               NULL;
    mtk_module *m = models_decoder_build(c, &spec, architecture);
    models_decoder_note_active(c, &spec, m);
    return m;
}
