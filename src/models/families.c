/* The family table: one row per transformers model_type (or diffusers
 * _class_name), with the classes mtk builds for it and the builder
 * (src/models/family_<model_type>.c, diffusers_<class>.c), and for a
 * diffusers component how a pipeline calls it. */
#include "models/diffusers.h"

#include <stdio.h>
#include <string.h>

#define ARCHS(...) (const char *const[]){ __VA_ARGS__, NULL }
/* transformers' _no_split_modules of the family's classes (with those of
 * the sub-models they hold: a vision tower's): modules of these classes
 * stay whole on one device in a device map (mtk place) */
#define NO_SPLIT(...) (const char *const[]){ __VA_ARGS__, NULL }

/* a transformers family's row leaves its third field, the diffusers
   component (models/diffusers.h), out: NULL */
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

static const model_family families[] = {
    { { "llama", ARCHS("LlamaModel", "LlamaForCausalLM", "LlamaForSequenceClassification",
            "LlamaForTokenClassification",
            "LlamaForQuestionAnswering"), "LlamaModel", MTK_MODEL_INPUT_TOKEN_IDS, NO_SPLIT("LlamaDecoderLayer") },
      models_family_llama_build },
    { { "mistral", ARCHS("MistralModel", "MistralForCausalLM", "MistralForSequenceClassification",
            "MistralForTokenClassification",
            "MistralForQuestionAnswering"), "MistralModel", MTK_MODEL_INPUT_TOKEN_IDS, NO_SPLIT("MistralDecoderLayer") },
      models_family_mistral_build },
    { { "mixtral", ARCHS("MixtralModel", "MixtralForCausalLM", "MixtralForSequenceClassification",
            "MixtralForTokenClassification",
            "MixtralForQuestionAnswering"), "MixtralModel", MTK_MODEL_INPUT_TOKEN_IDS, NO_SPLIT("MixtralDecoderLayer") },
      models_family_mixtral_build },
    { { "qwen2", ARCHS("Qwen2Model", "Qwen2ForCausalLM", "Qwen2ForSequenceClassification",
            "Qwen2ForTokenClassification",
            "Qwen2ForQuestionAnswering"), "Qwen2Model", MTK_MODEL_INPUT_TOKEN_IDS, NO_SPLIT("Qwen2DecoderLayer") },
      models_family_qwen2_build },
    { { "qwen2_moe", ARCHS("Qwen2MoeModel", "Qwen2MoeForCausalLM", "Qwen2MoeForSequenceClassification",
            "Qwen2MoeForTokenClassification",
            "Qwen2MoeForQuestionAnswering"), "Qwen2MoeModel", MTK_MODEL_INPUT_TOKEN_IDS, NO_SPLIT("Qwen2MoeDecoderLayer") },
      models_family_qwen2_moe_build },
    { { "qwen3", ARCHS("Qwen3Model", "Qwen3ForCausalLM", "Qwen3ForSequenceClassification",
            "Qwen3ForTokenClassification",
            "Qwen3ForQuestionAnswering"), "Qwen3Model", MTK_MODEL_INPUT_TOKEN_IDS, NO_SPLIT("Qwen3DecoderLayer") },
      models_family_qwen3_build },
    { { "qwen3_moe", ARCHS("Qwen3MoeModel", "Qwen3MoeForCausalLM", "Qwen3MoeForSequenceClassification",
            "Qwen3MoeForTokenClassification",
            "Qwen3MoeForQuestionAnswering"), "Qwen3MoeModel", MTK_MODEL_INPUT_TOKEN_IDS, NO_SPLIT("Qwen3MoeDecoderLayer") },
      models_family_qwen3_moe_build },
    { { "olmo2", ARCHS("Olmo2Model", "Olmo2ForCausalLM", "Olmo2ForSequenceClassification"), "Olmo2Model", MTK_MODEL_INPUT_TOKEN_IDS, NO_SPLIT("Olmo2DecoderLayer") },
      models_family_olmo2_build },
    { { "smollm3", ARCHS("SmolLM3Model", "SmolLM3ForCausalLM", "SmolLM3ForSequenceClassification",
            "SmolLM3ForTokenClassification",
            "SmolLM3ForQuestionAnswering"), "SmolLM3Model", MTK_MODEL_INPUT_TOKEN_IDS, NO_SPLIT("SmolLM3DecoderLayer") },
      models_family_smollm3_build },
    { { "granite", ARCHS("GraniteModel", "GraniteForCausalLM"), "GraniteModel", MTK_MODEL_INPUT_TOKEN_IDS, NO_SPLIT("GraniteDecoderLayer") },
      models_family_granite_build },
    { { "phi", ARCHS("PhiModel", "PhiForCausalLM", "PhiForSequenceClassification",
                             "PhiForTokenClassification"), "PhiModel", MTK_MODEL_INPUT_TOKEN_IDS, NO_SPLIT("PhiDecoderLayer") }, models_family_phi_build },
    { { "gemma", ARCHS("GemmaModel", "GemmaForCausalLM", "GemmaForSequenceClassification",
            "GemmaForTokenClassification"), "GemmaModel", MTK_MODEL_INPUT_TOKEN_IDS, NO_SPLIT("GemmaDecoderLayer") },
      models_family_gemma_build },
    { { "gemma2", ARCHS("Gemma2Model", "Gemma2ForCausalLM", "Gemma2ForSequenceClassification",
            "Gemma2ForTokenClassification"), "Gemma2Model", MTK_MODEL_INPUT_TOKEN_IDS, NO_SPLIT("Gemma2DecoderLayer") },
      models_family_gemma2_build },
    { { "phi3", ARCHS("Phi3Model", "Phi3ForCausalLM", "Phi3ForSequenceClassification",
            "Phi3ForTokenClassification"), "Phi3Model", MTK_MODEL_INPUT_TOKEN_IDS, NO_SPLIT("Phi3DecoderLayer") },
      models_family_phi3_build },
    { { "gpt2", ARCHS("GPT2Model", "GPT2LMHeadModel", "GPT2ForSequenceClassification", "GPT2ForTokenClassification",
            "GPT2ForQuestionAnswering"), "GPT2Model", MTK_MODEL_INPUT_TOKEN_IDS, NO_SPLIT("GPT2Block") },
      models_family_gpt2_build },
    { { "gpt_neox", ARCHS("GPTNeoXModel", "GPTNeoXForCausalLM", "GPTNeoXForSequenceClassification",
            "GPTNeoXForTokenClassification", "GPTNeoXForQuestionAnswering"), "GPTNeoXModel", MTK_MODEL_INPUT_TOKEN_IDS, NO_SPLIT("GPTNeoXLayer") },
      models_family_gpt_neox_build },
    { { "bert", ARCHS("BertModel", "BertForMaskedLM", "BertForSequenceClassification",
                              "BertForTokenClassification"), "BertModel",
        MTK_MODEL_INPUT_TOKEN_IDS, NO_SPLIT("BertEmbeddings", "BertLayer") },
      models_family_bert_build },
    { { "vit", ARCHS("ViTModel", "ViTForImageClassification"), "ViTModel", MTK_MODEL_INPUT_PIXELS, NO_SPLIT("ViTEmbeddings", "ViTLayer") },
      models_family_vit_build },
    { { "roberta", ARCHS("RobertaModel", "RobertaForMaskedLM", "RobertaForSequenceClassification",
                                 "RobertaForTokenClassification"), "RobertaModel", MTK_MODEL_INPUT_TOKEN_IDS, NO_SPLIT("RobertaEmbeddings", "RobertaLayer") },
      models_family_roberta_build },
    { { "xlm-roberta", ARCHS("XLMRobertaModel", "XLMRobertaForMaskedLM", "XLMRobertaForSequenceClassification",
                                     "XLMRobertaForTokenClassification"), "XLMRobertaModel", MTK_MODEL_INPUT_TOKEN_IDS, NO_SPLIT("XLMRobertaEmbeddings", "XLMRobertaLayer") },
      models_family_xlm_roberta_build },
    { { "modernbert", ARCHS("ModernBertModel", "ModernBertForMaskedLM", "ModernBertForSequenceClassification",
                                    "ModernBertForTokenClassification"), "ModernBertModel", MTK_MODEL_INPUT_TOKEN_IDS, NO_SPLIT("ModernBertEmbeddings", "ModernBertEncoderLayer") },
      models_family_modernbert_build },
    { { "t5", ARCHS("T5Model", "T5ForConditionalGeneration", "T5EncoderModel", "T5ForTokenClassification",
            "T5ForSequenceClassification"), "T5Model",
        MTK_MODEL_INPUT_SEQ2SEQ_IDS, NO_SPLIT("T5Block") },
      models_family_t5_build },
    { { "gpt_oss", ARCHS("GptOssModel", "GptOssForCausalLM", "GptOssForSequenceClassification",
            "GptOssForTokenClassification"), "GptOssModel", MTK_MODEL_INPUT_TOKEN_IDS, NO_SPLIT("GptOssDecoderLayer") },
      models_family_gpt_oss_build },
    { { "llama4_text", ARCHS("Llama4TextModel", "Llama4ForCausalLM"), "Llama4TextModel", MTK_MODEL_INPUT_TOKEN_IDS, NO_SPLIT("Llama4TextDecoderLayer") },
      models_family_llama4_text_build },
    { { "llama4", ARCHS("Llama4ForConditionalGeneration"), "Llama4ForConditionalGeneration", MTK_MODEL_INPUT_TOKEN_IDS, NO_SPLIT("Llama4TextDecoderLayer", "Llama4VisionEncoderLayer") },
      models_family_llama4_build },
    { { "deepseek_v3", ARCHS("DeepseekV3Model", "DeepseekV3ForCausalLM", "DeepseekV3ForSequenceClassification",
            "DeepseekV3ForTokenClassification"), "DeepseekV3Model", MTK_MODEL_INPUT_TOKEN_IDS, NO_SPLIT("DeepseekV3DecoderLayer") },
      models_family_deepseek_v3_build },
    /* Kimi-K2's config.json names its remote code's model_type; the
       classes are DeepseekV3's */
    { { "kimi_k2", ARCHS("DeepseekV3Model", "DeepseekV3ForCausalLM", "DeepseekV3ForSequenceClassification",
            "DeepseekV3ForTokenClassification"), "DeepseekV3Model", MTK_MODEL_INPUT_TOKEN_IDS, NO_SPLIT("DeepseekV3DecoderLayer") },
      models_family_deepseek_v3_build },
    { { "gemma3_text", ARCHS("Gemma3TextModel", "Gemma3ForCausalLM", "Gemma3TextForSequenceClassification"),
        "Gemma3TextModel", MTK_MODEL_INPUT_TOKEN_IDS, NO_SPLIT("Gemma3DecoderLayer") },
      models_family_gemma3_text_build },
    { { "gemma3", ARCHS("Gemma3Model", "Gemma3ForConditionalGeneration", "Gemma3ForSequenceClassification"), "Gemma3Model", MTK_MODEL_INPUT_TOKEN_IDS, NO_SPLIT("Gemma3DecoderLayer", "SiglipVisionEmbeddings", "SiglipEncoderLayer", "SiglipMultiheadAttentionPoolingHead") },
      models_family_gemma3_build },
    { { "mistral3", ARCHS("Mistral3Model", "Mistral3ForConditionalGeneration"), "Mistral3Model",
        MTK_MODEL_INPUT_TOKEN_IDS, NO_SPLIT("MistralDecoderLayer", "PixtralAttentionLayer") },
      models_family_mistral3_build },
    { { "glm4_moe", ARCHS("Glm4MoeModel", "Glm4MoeForCausalLM"), "Glm4MoeModel", MTK_MODEL_INPUT_TOKEN_IDS, NO_SPLIT("Glm4MoeDecoderLayer") },
      models_family_glm4_moe_build },
    /* diffusers components (keyed by _class_name) and the CLIP text
       encoders of their pipelines */
    { { "UNet2DConditionModel", ARCHS("UNet2DConditionModel"), "UNet2DConditionModel", MTK_MODEL_INPUT_LATENTS },
      models_family_unet2d_condition_build, &diffusers_unet2d_condition_component },
    { { "AutoencoderKL", ARCHS("AutoencoderKL"), "AutoencoderKL", MTK_MODEL_INPUT_LATENTS },
      models_family_autoencoder_kl_build, &diffusers_autoencoder_kl_component },
    { { "clip_text_model", ARCHS("CLIPTextModel", "CLIPTextModelWithProjection"), "CLIPTextModel",
        MTK_MODEL_INPUT_TOKEN_IDS },
      models_family_clip_text_build },
    /* diffusers' transformer denoisers, keyed by their config's _class_name */
    { { "SD3Transformer2DModel", ARCHS("SD3Transformer2DModel"), "SD3Transformer2DModel", MTK_MODEL_INPUT_LATENTS },
      models_family_sd3_build, &diffusers_sd3_component },
    { { "FluxTransformer2DModel", ARCHS("FluxTransformer2DModel"), "FluxTransformer2DModel", MTK_MODEL_INPUT_LATENTS },
      models_family_flux_build, &diffusers_flux_component },
    { { "Lumina2Transformer2DModel", ARCHS("Lumina2Transformer2DModel"), "Lumina2Transformer2DModel",
        MTK_MODEL_INPUT_LATENTS },
      models_family_lumina2_build, &diffusers_lumina2_component },
};

#define FAMILY_COUNT ((int32_t)(sizeof families / sizeof families[0]))

int32_t mtk_model_family_count(void) { return FAMILY_COUNT; }

const mtk_model_family_info *mtk_model_family_at(int32_t i)
{
    return i >= 0 && i < FAMILY_COUNT ? &families[i].info : NULL;
}

const model_family *models_family_lookup(const char *model_type)
{
    for (int32_t i = 0; model_type && i < FAMILY_COUNT; i++)
        if (strcmp(families[i].info.model_type, model_type) == 0) return &families[i];
    return NULL;
}

const mtk_model_family_info *mtk_model_family_find(const char *model_type)
{
    const model_family *f = models_family_lookup(model_type);
    return f ? &f->info : NULL;
}

/* Joins strings with ", " into the arena. */
static const char *join(mtk_ctx *ctx, const char *const *items, int32_t n)
{
    size_t len = 1;
    for (int32_t i = 0; i < n; i++) len += strlen(items[i]) + 2;
    char *out = mtk_ctx_alloc(ctx, len);
    if (!out) return "";
    size_t at = 0;
    for (int32_t i = 0; i < n; i++) at += (size_t)snprintf(out + at, len - at, "%s%s", i ? ", " : "", items[i]);
    return out;
}

const char *models_family_names(mtk_ctx *ctx)
{
    const char *names[FAMILY_COUNT];
    for (int32_t i = 0; i < FAMILY_COUNT; i++) names[i] = families[i].info.model_type;
    return join(ctx, names, FAMILY_COUNT);
}

const char *models_family_architectures(mtk_ctx *ctx, const model_family *f)
{
    int32_t n = 0;
    while (f->info.architectures[n]) n++;
    return join(ctx, f->info.architectures, n);
}
