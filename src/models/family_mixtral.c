/* mixtral: Mixtral 8x7B, 8x22B (MixtralModel, MixtralForCausalLM): Mistral's
 * attention and a sparse MoE block in every layer (num_local_experts
 * experts of intermediate_size, num_experts_per_tok of them per token). */
#include "models/decoder.h"

mtk_module *models_family_mixtral_build(model_config *c, const char *architecture)
{
    static const decoder_defaults defaults = { .kv_heads = 8, .eps = 1e-5, .tie_embeddings = false, .act = "silu",
                                               .pad_token_id = MTK_NN_NO_PADDING_IDX, .rope_theta = 1e6 };
    decoder_spec spec;
    if (!models_decoder_read_common(c, &spec, "Mixtral", &defaults) || !models_decoder_read_windows(c, &spec, WINDOW_ALL, 0))
        return NULL;
    spec.moe = MOE_MIXTRAL;
    spec.experts = models_cfg_positive(c, "num_local_experts", 8);
    spec.top_k = models_cfg_positive(c, "num_experts_per_tok", 2);
    spec.moe_intermediate = spec.intermediate;
    if (!models_cfg_ok(c)) return NULL;
    if (spec.top_k > spec.experts)
        return models_cfg_fail(c, "num_experts_per_tok", "%lld is more than num_local_experts=%lld", (long long)spec.top_k,
                        (long long)spec.experts),
               NULL;
    return models_decoder_build(c, &spec, architecture);
}
