/* The key rules of each family: how checkpoints that transformers 5 loads
 * map onto the model mtk builds (mtk/load.h says how rules apply).  One
 * row per model_type, from transformers' conversion_mapping.py (renames
 * and expert merges), each class's _keys_to_ignore_on_load_unexpected and
 * base_model_prefix; then the renames transformers applies to every
 * family ("legacy"). */
#include "mtk/load.h"

#include <string.h>

#define RULES(...) (const mtk_key_rule[]){ __VA_ARGS__ }
#define COUNT(...) ((int32_t)(sizeof((const mtk_key_rule[]){ __VA_ARGS__ }) / sizeof(mtk_key_rule)))
#define ROW(type, prefix, ...) { type, prefix, RULES(__VA_ARGS__), COUNT(__VA_ARGS__) }

/* Per-expert tensors of the qwen2_moe layout (also qwen3_moe's):
 * gate_up_proj (E, 2 I, H) = [gate_proj; up_proj] per expert along dim 1,
 * down_proj (E, H, I). */
#define QWEN2_MOE_EXPERTS                                                                                   \
    { .kind = MTK_KEY_MERGE, .parts = { "mlp.experts.*.gate_proj.weight", "mlp.experts.*.up_proj.weight" }, \
      .target = "mlp.experts.gate_up_proj", .dim = 1 },                                                    \
    { .kind = MTK_KEY_MERGE, .parts = { "mlp.experts.*.down_proj.weight" }, .target = "mlp.experts.down_proj", .dim = 1 }

/* A llava-style multimodal checkpoint (transformers 4's layout, the
 * published Gemma 3 and Mistral Small 3.1 files): the text model under
 * language_model.model, its head language_model.lm_head, the tower and
 * projector at the top; transformers 5 keeps them under model. */
#define LLAVA_RENAMES                                                                                      \
    { .kind = MTK_KEY_RENAME, .pattern = "^language_model\\.lm_head\\.", .target = "lm_head." },           \
    { .kind = MTK_KEY_RENAME, .pattern = "^language_model\\.model\\.", .target = "model.language_model." }, \
    { .kind = MTK_KEY_RENAME, .pattern = "^vision_tower\\.", .target = "model.vision_tower." },              \
    { .kind = MTK_KEY_RENAME, .pattern = "^multi_modal_projector\\.", .target = "model.multi_modal_projector." }

/* Renames every family gets, after its own. */
#define LEGACY_RENAMES                                                              \
    { .kind = MTK_KEY_RENAME, .pattern = "LayerNorm\\.gamma", .target = "LayerNorm.weight" }, \
    { .kind = MTK_KEY_RENAME, .pattern = "LayerNorm\\.beta", .target = "LayerNorm.bias" }

static const mtk_key_rules family_rules[] = {
    ROW("llama", "model", LEGACY_RENAMES),
    ROW("mistral", "model", LEGACY_RENAMES),
    /* Hub and save_pretrained files: block_sparse_moe.experts.N.w1/w3 (gate, up) and w2 (down) */
    ROW("mixtral", "model",
        { .kind = MTK_KEY_RENAME, .pattern = "\\.block_sparse_moe\\.", .target = ".mlp." },
        { .kind = MTK_KEY_MERGE, .parts = { ".experts.*.w1.weight", ".experts.*.w3.weight" },
          .target = ".experts.gate_up_proj", .dim = 1 },
        { .kind = MTK_KEY_MERGE, .parts = { ".experts.*.w2.weight" }, .target = ".experts.down_proj", .dim = 1 },
        LEGACY_RENAMES),
    ROW("qwen2", "model", LEGACY_RENAMES),
    ROW("qwen2_moe", "model", QWEN2_MOE_EXPERTS, LEGACY_RENAMES),
    ROW("qwen3", "model", LEGACY_RENAMES),
    ROW("qwen3_moe", "model", QWEN2_MOE_EXPERTS, LEGACY_RENAMES),
    ROW("olmo2", "model", LEGACY_RENAMES),
    ROW("smollm3", "model", LEGACY_RENAMES),
    ROW("granite", "model", LEGACY_RENAMES),
    ROW("phi", "model", LEGACY_RENAMES),
    ROW("gemma", "model", LEGACY_RENAMES),
    ROW("gemma2", "model", LEGACY_RENAMES),
    ROW("phi3", "model", LEGACY_RENAMES),
    /* the causal mask buffers of transformers 4 (attn.bias, attn.masked_bias) */
    ROW("gpt2", "transformer", { .kind = MTK_KEY_IGNORE, .pattern = "attn.bias" },
        { .kind = MTK_KEY_IGNORE, .pattern = "crossattention.bias" },
        { .kind = MTK_KEY_IGNORE, .pattern = "attn\\.masked_bias$" }, LEGACY_RENAMES),
    /* Pythia and save_pretrained name the head embed_out */
    ROW("gpt_neox", "gpt_neox",
        { .kind = MTK_KEY_RENAME, .pattern = "^embed_out\\.", .target = "lm_head.",
          .architecture = "GPTNeoXForCausalLM" },
        { .kind = MTK_KEY_IGNORE, .pattern = "attention.bias" },
        { .kind = MTK_KEY_IGNORE, .pattern = "attention.masked_bias" }, LEGACY_RENAMES),
    ROW("bert", "bert", LEGACY_RENAMES),
    /* save_pretrained writes ViT in transformers 4's layout (encoder.layer.N.attention.attention.query) */
    ROW("vit", "vit", { .kind = MTK_KEY_RENAME, .pattern = "encoder\\.layer\\.", .target = "layers." },
        { .kind = MTK_KEY_RENAME, .pattern = "attention.query", .target = "q_proj" },
        { .kind = MTK_KEY_RENAME, .pattern = "attention.key", .target = "k_proj" },
        { .kind = MTK_KEY_RENAME, .pattern = "attention.value", .target = "v_proj" },
        { .kind = MTK_KEY_RENAME, .pattern = "attention.output.dense", .target = "attention.o_proj" },
        { .kind = MTK_KEY_RENAME, .pattern = "intermediate.dense", .target = "mlp.fc1" },
        { .kind = MTK_KEY_RENAME, .pattern = "output.dense", .target = "mlp.fc2" }, LEGACY_RENAMES),
    ROW("roberta", "roberta", LEGACY_RENAMES),
    ROW("xlm-roberta", "roberta", LEGACY_RENAMES),
    ROW("modernbert", "model", LEGACY_RENAMES),
    /* T5ForConditionalGeneration's ignorable key; T5EncoderModel ignores the decoder */
    ROW("t5", NULL, { .kind = MTK_KEY_IGNORE, .pattern = "decoder\\.block\\.0\\.layer\\.1\\.EncDecAttention\\.relative_attention_bias" },
        { .kind = MTK_KEY_IGNORE, .pattern = "^decoder\\.", .architecture = "T5EncoderModel" }, LEGACY_RENAMES),
    ROW("gpt_oss", "model", LEGACY_RENAMES),
    ROW("llama4_text", "model", LEGACY_RENAMES),
    ROW("llama4", NULL, LEGACY_RENAMES),
    /* transformers maps deepseek_v3 and glm4_moe onto qwen2_moe's per-expert layout */
    ROW("deepseek_v3", "model", QWEN2_MOE_EXPERTS, LEGACY_RENAMES),
    ROW("kimi_k2", "model", QWEN2_MOE_EXPERTS, LEGACY_RENAMES),
    ROW("glm4_moe", "model", QWEN2_MOE_EXPERTS, LEGACY_RENAMES),
    ROW("gemma3_text", "model", LEGACY_RENAMES),
    ROW("gemma3", "model", LLAVA_RENAMES, LEGACY_RENAMES),
    ROW("mistral3", "model", LLAVA_RENAMES, LEGACY_RENAMES),
};

static const mtk_key_rules common_rules = ROW(NULL, NULL, LEGACY_RENAMES);

const mtk_key_rules *mtk_model_key_rules(const char *model_type)
{
    for (size_t i = 0; model_type && i < sizeof family_rules / sizeof family_rules[0]; i++)
        if (strcmp(family_rules[i].model_type, model_type) == 0) return &family_rules[i];
    return &common_rules;
}
