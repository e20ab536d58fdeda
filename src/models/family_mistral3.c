/* mistral3: Mistral Small 3.1 (Mistral3Model,
 * Mistral3ForConditionalGeneration): a mistral text_config as
 * model.language_model, lm_head tied unless the top-level
 * tie_word_embeddings is false (transformers 5's default is true).  The
 * Pixtral vision tower and the projector are not modelled. */
#include "models/decoder.h"

mtk_module *models_family_mistral3_build(model_config *c, const char *architecture)
{
    return models_decoder_build_multimodal(c, architecture, "Mistral3", models_family_mistral_build, "mistral",
                                           "MistralModel", NULL);
}
