/* qwen3_moe: Qwen3 mixture-of-experts models (Qwen3MoeModel,
 * Qwen3MoeForCausalLM), e.g. Qwen3-30B-A3B and Qwen3-235B-A22B: Qwen3's
 * attention (q_norm, k_norm); every decoder_sparse_step-th layer not in
 * mlp_only_layers has a sparse MoE block (experts registered before the
 * router `gate`, no shared expert; top-k renormalized when
 * norm_topk_prob), the others a dense MLP of intermediate_size.  The
 * summary notes the parameters active per token. */
#include "models/decoder.h"

mtk_module *models_family_qwen3_moe_build(model_config *c, const char *architecture)
{
    static const decoder_defaults defaults = { .kv_heads = 4, .eps = 1e-6, .tie_embeddings = false, .act = "silu",
                                               .pad_token_id = MTK_NN_NO_PADDING_IDX, .rope_theta = 10000.0 };
    decoder_spec spec;
    if (!models_decoder_read_common(c, &spec, "Qwen3Moe", &defaults)) return NULL;
    spec.qkv_bias = spec.o_bias = models_cfg_bool(c, "attention_bias", false);
    spec.qk_norm = true;
    spec.moe = MOE_QWEN3;
    spec.moe_experts_first = true;
    /* num_experts is transformers' alias of num_local_experts */
    spec.experts = models_cfg_int(c, "num_experts", models_cfg_int(c, "num_local_experts", 128));
    spec.top_k = models_cfg_positive(c, "num_experts_per_tok", 8);
    spec.moe_intermediate = models_cfg_positive(c, "moe_intermediate_size", 768);
    if (!models_decoder_read_qwen_moe(c, &spec)) return NULL;
    mtk_module *m = models_decoder_build(c, &spec, architecture);
    if (m && spec.moe != MOE_NONE) models_decoder_note_active(c, &spec, m);
    return m;
}
