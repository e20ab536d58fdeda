/* mistral3: Mistral Small 3.1 (Mistral3Model,
 * Mistral3ForConditionalGeneration): a mistral text_config as
 * model.language_model, lm_head tied unless the top-level
 * tie_word_embeddings is false (transformers 5's default is true), the
 * Pixtral vision tower and the projector (their parameters and buffers:
 * image inputs are not modelled). */
#include "models/decoder.h"

#include <string.h>

static bool mistral3_vision(model_config *c, model_config *vision, int64_t text_hidden, mtk_module **tower,
                            mtk_module **projector)
{
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(vision->root, "model_type");
    if (type && !(cJSON_IsString(type) && strcmp(type->valuestring, "pixtral") == 0))
        return models_cfg_fail(c, "vision_config.model_type", "expected 'pixtral'");
    const cJSON *text = models_cfg_get(c, "text_config");
    double eps = models_cfg_obj_float(c, text, "text_config", "rms_norm_eps", 1e-6);
    *tower = models_pixtral_vision(vision);
    *projector = *tower ? models_mistral3_projector(c, vision, text_hidden, eps) : NULL;
    return *projector != NULL;
}

mtk_module *models_family_mistral3_build(model_config *c, const char *architecture)
{
    return models_decoder_build_multimodal(c, architecture, "Mistral3", models_family_mistral_build, "mistral",
                                           "MistralModel", mistral3_vision);
}
