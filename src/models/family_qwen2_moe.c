/* qwen2_moe: Qwen1.5-MoE, Qwen2-57B-A14B (Qwen2MoeModel,
 * Qwen2MoeForCausalLM): Qwen2's attention (biases per qkv_bias); every
 * decoder_sparse_step-th layer not in mlp_only_layers has a sparse MoE
 * block (num_experts experts of moe_intermediate_size, a shared expert of
 * shared_expert_intermediate_size and its gate), the others a dense MLP of
 * intermediate_size. */
#include "models/decoder.h"

mtk_module *models_family_qwen2_moe_build(model_config *c, const char *architecture)
{
    static const decoder_defaults defaults = { .kv_heads = 0, .eps = 1e-6, .tie_embeddings = false, .act = "silu",
                                               .pad_token_id = MTK_NN_NO_PADDING_IDX, .rope_theta = 10000.0 };
    decoder_spec spec;
    if (!models_decoder_read_common(c, &spec, "Qwen2Moe", &defaults) ||
        !models_decoder_read_windows(c, &spec, WINDOW_EVEN_BELOW, 4096))
        return NULL;
    spec.qkv_bias = models_cfg_bool(c, "qkv_bias", true);
    spec.moe = MOE_QWEN2;
    spec.experts = models_cfg_int(c, "num_experts", 60);
    spec.top_k = models_cfg_positive(c, "num_experts_per_tok", 4);
    spec.moe_intermediate = models_cfg_positive(c, "moe_intermediate_size", 1408);
    spec.shared_intermediate = models_cfg_positive(c, "shared_expert_intermediate_size", 5632);
    if (!models_decoder_read_qwen_moe(c, &spec)) return NULL;
    return models_decoder_build(c, &spec, architecture);
}
