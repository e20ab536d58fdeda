/* qwen3: Qwen3 dense models (Qwen3Model, Qwen3ForCausalLM): Qwen2's layers
 * with an RMSNorm over head_dim on every query and key head (q_norm,
 * k_norm, before the rotary embedding), attention_bias on all four
 * projections (none by default), head_dim 128 unless the config says. */
#include "models/decoder.h"

mtk_module *models_family_qwen3_build(model_config *c, const char *architecture)
{
    static const decoder_defaults defaults = { .kv_heads = 32, .head_dim = 128, .eps = 1e-6, .tie_embeddings = false,
                                               .act = "silu", .pad_token_id = MTK_NN_NO_PADDING_IDX,
                                               .rope_theta = 10000.0 };
    decoder_spec spec;
    if (!models_decoder_read_common(c, &spec, "Qwen3", &defaults)) return NULL;
    spec.qkv_bias = spec.o_bias = models_cfg_bool(c, "attention_bias", false);
    spec.qk_norm = true;
    return models_cfg_ok(c) ? models_decoder_build(c, &spec, architecture) : NULL;
}
