/* gemma2: Gemma 2 (Gemma2Model, Gemma2ForCausalLM): Gemma's layers with
 * four norms per layer (post_attention_layernorm on the attention output,
 * pre/post_feedforward_layernorm around the MLP), attention scaled by
 * query_pre_attn_scalar^-0.5 with tanh soft-capping of the scores
 * (eager attention, as transformers runs it) and of the final logits. */
#include "models/decoder.h"

#include <math.h>

static bool is_null(const model_config *c, const char *key)
{
    return cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(c->root, key));
}

mtk_module *models_family_gemma2_build(model_config *c, const char *architecture)
{
    static const decoder_defaults defaults = { .kv_heads = 4, .head_dim = 256, .eps = 1e-6, .tie_embeddings = true,
                                               .act = "gelu_pytorch_tanh", .pad_token_id = 0, .rope_theta = 10000.0 };
    decoder_spec spec;
    if (!models_decoder_read_common(c, &spec, "Gemma2", &defaults) || !models_decoder_read_windows(c, &spec, WINDOW_EVEN, 4096))
        return NULL;
    spec.act = models_cfg_string(c, "hidden_activation", "gelu_pytorch_tanh");
    spec.qkv_bias = spec.o_bias = models_cfg_bool(c, "attention_bias", false);
    spec.norm_plus_one = true;
    spec.scaled_embedding = true;
    spec.sandwich_norms = true;
    /* eager unless sdpa is asked for (soft-capping needs eager) */
    spec.eager_attention = !cJSON_IsString(cJSON_GetObjectItemCaseSensitive(c->root, "_attn_implementation")) ||
                           spec.eager_attention;
    double scalar = models_cfg_float(c, "query_pre_attn_scalar", 256);
    /* null turns soft-capping off */
    spec.attn_softcap = is_null(c, "attn_logit_softcapping") ? 0 : models_cfg_float(c, "attn_logit_softcapping", 50.0);
    spec.final_softcap = is_null(c, "final_logit_softcapping") ? 0 : models_cfg_float(c, "final_logit_softcapping", 30.0);
    if (!models_cfg_ok(c)) return NULL;
    if (!(scalar > 0)) return models_cfg_fail(c, "query_pre_attn_scalar", "must be positive, got %g", scalar), NULL;
    spec.attn_scale = 1.0 / sqrt(scalar);
    return models_decoder_build(c, &spec, architecture);
}
