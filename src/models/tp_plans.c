/* The parallel plans of the families: transformers 5.24's
 * base_model_tp_plan and base_model_ep_plan of each config class, the
 * model class's _tp_plan (lm_head), and the vocab-parallel input
 * embeddings init_parallel_plans adds to every base model that has a
 * plan and an nn.Embedding named embed_tokens.  One row per family; the
 * rule lists are shared where transformers' are the same. */
#include "models/config.h"

#include <string.h>

#define BASE(p, s) { p, MTK_TP_##s, false }
#define ROOT(p, s) { p, MTK_TP_##s, true }
#define END { NULL, MTK_TP_COLWISE, false }
#define LM_HEAD ROOT("lm_head", COLWISE_GATHER_OUTPUT)

#define ATTN_QKV_O                                                                                      \
    BASE("layers.*.self_attn.q_proj", COLWISE), BASE("layers.*.self_attn.k_proj", COLWISE),            \
        BASE("layers.*.self_attn.v_proj", COLWISE), BASE("layers.*.self_attn.o_proj", ROWWISE)
#define QK_NORMS                                                                                        \
    BASE("layers.*.self_attn.q_norm", REPLICATED_GRAD_ALLREDUCE),                                       \
        BASE("layers.*.self_attn.k_norm", REPLICATED_GRAD_ALLREDUCE)
#define GATED_MLP(m)                                                                                    \
    BASE("layers.*." m ".gate_proj", COLWISE), BASE("layers.*." m ".up_proj", COLWISE),                \
        BASE("layers.*." m ".down_proj", ROWWISE)
#define FUSED_EXPERTS                                                                                   \
    BASE("layers.*.mlp.experts.gate_up_proj", PACKED_COLWISE), BASE("layers.*.mlp.experts.down_proj", ROWWISE), \
        BASE("layers.*.mlp.experts", MOE_EXPERTS)
#define EMBED BASE("embed_tokens", EMBEDDING_ROWWISE)

/* llama, mistral, qwen2, smollm3, granite, gemma, gemma2 */
static const mtk_tp_rule dense[] = { EMBED, ATTN_QKV_O, GATED_MLP("mlp"), LM_HEAD, END };
/* qwen3, gemma3_text: q and k norms over the head dim */
static const mtk_tp_rule dense_qk_norm[] = { EMBED, ATTN_QKV_O, QK_NORMS, GATED_MLP("mlp"), LM_HEAD, END };
/* mixtral */
static const mtk_tp_rule moe[] = { EMBED, ATTN_QKV_O, FUSED_EXPERTS, LM_HEAD, END };
/* qwen2_moe, glm4_moe (dense layers' mlp too; glm4's shared experts) */
static const mtk_tp_rule moe_dense[] = { EMBED, ATTN_QKV_O, FUSED_EXPERTS, GATED_MLP("mlp.shared_experts"),
                                         GATED_MLP("mlp"), LM_HEAD, END };
static const mtk_tp_rule moe_qk_norm[] = { EMBED, ATTN_QKV_O, QK_NORMS, FUSED_EXPERTS, GATED_MLP("mlp"), LM_HEAD,
                                           END };
/* deepseek_v3: multi-head latent attention stays replicated */
static const mtk_tp_rule deepseek[] = { EMBED, FUSED_EXPERTS, GATED_MLP("mlp.shared_experts"), GATED_MLP("mlp"),
                                        LM_HEAD, END };
/* olmo2: the q/k norms span all heads, so q/k/v are gathered */
static const mtk_tp_rule olmo2[] = {
    EMBED,
    BASE("layers.*.self_attn.q_proj", COLWISE_GATHER_OUTPUT), BASE("layers.*.self_attn.k_proj", COLWISE_GATHER_OUTPUT),
    BASE("layers.*.self_attn.v_proj", COLWISE_GATHER_OUTPUT), BASE("layers.*.self_attn.o_proj", ROWWISE_SPLIT_INPUT),
    GATED_MLP("mlp"), LM_HEAD, END,
};
/* phi3: fused qkv and gate_up, sliced after the projection */
static const mtk_tp_rule phi3[] = {
    EMBED,
    BASE("layers.*.self_attn.qkv_proj", COLWISE_GATHER_OUTPUT), BASE("layers.*.self_attn.o_proj", ROWWISE_SPLIT_INPUT),
    BASE("layers.*.mlp.gate_up_proj", COLWISE_GATHER_OUTPUT), BASE("layers.*.mlp.down_proj", ROWWISE_SPLIT_INPUT),
    LM_HEAD, END,
};
static const mtk_tp_rule phi[] = {
    EMBED, BASE("layers.*.self_attn.q_proj", COLWISE), BASE("layers.*.self_attn.k_proj", COLWISE),
    BASE("layers.*.self_attn.v_proj", COLWISE), BASE("layers.*.self_attn.dense", ROWWISE),
    BASE("layers.*.mlp.fc1", COLWISE), BASE("layers.*.mlp.fc2", ROWWISE), LM_HEAD, END,
};
static const mtk_tp_rule gpt_neox[] = {
    BASE("embed_in", EMBEDDING_ROWWISE), BASE("layers.*.attention.query_key_value", COLWISE),
    BASE("layers.*.attention.dense", ROWWISE), BASE("layers.*.mlp.dense_h_to_4h", COLWISE),
    BASE("layers.*.mlp.dense_4h_to_h", ROWWISE), LM_HEAD, END,
};
static const mtk_tp_rule gpt_oss[] = { EMBED, LM_HEAD, END };
/* llama4_text: fused experts stored (E, in, out), so packed rowwise */
static const mtk_tp_rule llama4[] = {
    EMBED, ATTN_QKV_O, GATED_MLP("feed_forward.shared_expert"),
    BASE("layers.*.feed_forward.experts.gate_up_proj", PACKED_ROWWISE),
    BASE("layers.*.feed_forward.experts.down_proj", COLWISE), BASE("layers.*.feed_forward.experts", MOE_EXPERTS),
    GATED_MLP("feed_forward"), LM_HEAD, END,
};

static const mtk_tp_rule ep_experts[] = {
    BASE("layers.*.mlp.experts.gate_up_proj", GROUPED_GEMM), BASE("layers.*.mlp.experts.down_proj", GROUPED_GEMM),
    BASE("layers.*.mlp.experts", EP_DISPATCH), END,
};
static const mtk_tp_rule ep_gpt_oss[] = {
    BASE("layers.*.mlp.experts.gate_up_proj", GROUPED_GEMM), BASE("layers.*.mlp.experts.gate_up_proj_bias", GROUPED_GEMM),
    BASE("layers.*.mlp.experts.down_proj", GROUPED_GEMM), BASE("layers.*.mlp.experts.down_proj_bias", GROUPED_GEMM),
    BASE("layers.*.mlp.experts", EP_DISPATCH), END,
};

static const mtk_tp_plan plans[] = {
    { "llama", dense, NULL },           { "mistral", dense, NULL },        { "mixtral", moe, ep_experts },
    { "qwen2", dense, NULL },           { "qwen2_moe", moe_dense, ep_experts },
    { "qwen3", dense_qk_norm, NULL },   { "qwen3_moe", moe_qk_norm, ep_experts },
    { "olmo2", olmo2, NULL },           { "smollm3", dense, NULL },        { "granite", dense, NULL },
    { "phi", phi, NULL },               { "gemma", dense, NULL },          { "gemma2", dense, NULL },
    { "phi3", phi3, NULL },             { "gpt_neox", gpt_neox, NULL },    { "gpt_oss", gpt_oss, ep_gpt_oss },
    { "deepseek_v3", deepseek, ep_experts }, { "kimi_k2", deepseek, ep_experts },
    { "gemma3_text", dense_qk_norm, NULL }, { "glm4_moe", moe_dense, ep_experts },
    { "llama4_text", llama4, NULL },
    /* multimodal: the language model's plan under its own prefix (the
       vision tower and projector have no rules in transformers) */
    { "gemma3", dense_qk_norm, NULL },  { "mistral3", dense, NULL },
};

const mtk_tp_plan *mtk_model_tp_plan_find(const char *model_type)
{
    for (size_t i = 0; model_type && i < sizeof plans / sizeof plans[0]; i++)
        if (strcmp(plans[i].model_type, model_type) == 0) return &plans[i];
    return NULL;
}

const char *mtk_tp_style_name(mtk_tp_style style)
{
    static const char *const names[] = {
        "colwise",       "colwise_gather_output", "rowwise",        "rowwise_split_input",
        "embedding_rowwise", "replicated_with_grad_allreduce", "packed_colwise", "packed_rowwise",
        "moe_tp_experts", "grouped_gemm",         "ep_dispatch_experts",
    };
    return (unsigned)style < sizeof names / sizeof names[0] ? names[style] : "?";
}

int64_t mtk_model_config_int(const mtk_model_config *config, const char *key, int64_t fallback)
{
    if (!config || !config->root || !key) return fallback;
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(config->root, key);
    if (!v) {
        const cJSON *text = cJSON_GetObjectItemCaseSensitive(config->root, "text_config");
        if (cJSON_IsObject(text)) v = cJSON_GetObjectItemCaseSensitive(text, key);
    }
    if (!cJSON_IsNumber(v) || v->valuedouble != (double)(int64_t)v->valuedouble) return fallback;
    return (int64_t)v->valuedouble;
}
