/* glm4_moe: GLM-4.5 / GLM-4.5-Air (Glm4MoeModel, Glm4MoeForCausalLM):
 * Llama-style layers with biased q/k/v (attention_bias; o_proj never),
 * optional per-head q_norm/k_norm (use_qk_norm), partial rotary (half of
 * head_dim by default); the first first_k_dense_replace layers have a
 * dense MLP, the others a Glm4MoeMoE: routed experts (fused
 * gate_up_proj/down_proj), a float32 Glm4MoeTopkRouter `gate` (sigmoid
 * scores plus the persistent e_score_correction_bias buffer, top-k within
 * the best topk_group of n_group groups, routed_scaling_factor) and
 * n_shared_experts shared experts as one MLP.  The multi-token-prediction
 * layers (num_nextn_predict_layers) are not built, as in transformers. */
#include "models/decoder.h"

mtk_module *models_family_glm4_moe_build(model_config *c, const char *architecture)
{
    static const decoder_defaults defaults = { .kv_heads = 8, .eps = 1e-5, .tie_embeddings = false, .act = "silu",
                                               .pad_token_id = MTK_NN_NO_PADDING_IDX, .rope_theta = 10000.0,
                                               .partial_rotary = 0.5 };
    decoder_spec spec;
    if (!models_decoder_read_common(c, &spec, "Glm4Moe", &defaults)) return NULL;
    spec.qkv_bias = models_cfg_bool(c, "attention_bias", false);
    spec.qk_norm = models_cfg_bool(c, "use_qk_norm", false);
    /* apply_rotary_pos_emb splits q and k at the rotary dim and concatenates
       them back, even when nothing passes through */
    spec.rope.always_cat = true;
    spec.moe = MOE_DEEPSEEK;
    spec.moe_experts_first = true;
    /* n_routed_experts, or its alias num_local_experts */
    spec.experts = models_cfg_int(c, "n_routed_experts", models_cfg_int(c, "num_local_experts", 128));
    spec.top_k = models_cfg_positive(c, "num_experts_per_tok", 8);
    spec.moe_intermediate = models_cfg_positive(c, "moe_intermediate_size", 1408);
    int64_t shared = models_cfg_positive(c, "n_shared_experts", 1);
    spec.n_group = models_cfg_positive(c, "n_group", 1);
    spec.topk_group = models_cfg_positive(c, "topk_group", 1);
    spec.routed_scaling = models_cfg_float(c, "routed_scaling_factor", 1.0);
    spec.norm_topk_prob = models_cfg_bool(c, "norm_topk_prob", true);
    spec.first_dense = models_cfg_int(c, "first_k_dense_replace", 1);
    if (!models_cfg_ok(c)) return NULL;
    if (spec.experts < 1)
        return models_cfg_fail(c, "n_routed_experts", "must be positive, got %lld", (long long)spec.experts), NULL;
    if (spec.top_k > spec.experts)
        return models_cfg_fail(c, "num_experts_per_tok", "%lld is more than n_routed_experts=%lld",
                               (long long)spec.top_k, (long long)spec.experts),
               NULL;
    if (spec.experts % spec.n_group != 0 || spec.topk_group > spec.n_group)
        return models_cfg_fail(c, "n_group", "n_routed_experts=%lld must divide into n_group=%lld groups, of which "
                               "topk_group=%lld are kept", (long long)spec.experts, (long long)spec.n_group,
                               (long long)spec.topk_group),
               NULL;
    if (spec.top_k > spec.topk_group * (spec.experts / spec.n_group))
        return models_cfg_fail(c, "num_experts_per_tok", "%lld is more than the %lld experts of topk_group=%lld groups",
                               (long long)spec.top_k, (long long)(spec.topk_group * (spec.experts / spec.n_group)),
                               (long long)spec.topk_group),
               NULL;
    if (spec.first_dense < 0)
        return models_cfg_fail(c, "first_k_dense_replace", "must be non-negative, got %lld",
                               (long long)spec.first_dense),
               NULL;
    spec.shared_intermediate = spec.moe_intermediate * shared;
    mtk_module *m = models_decoder_build(c, &spec, architecture);
    if (m) models_decoder_note_active(c, &spec, m);
    return m;
}
