/* mistral: Mistral 7B (MistralModel, MistralForCausalLM): Llama's layers
 * without biases; the sliding window changes the mask, not the shapes. */
#include "models/decoder.h"

mtk_module *models_family_mistral_build(model_config *c, const char *architecture)
{
    static const decoder_defaults defaults = { .kv_heads = 8, .eps = 1e-6, .tie_embeddings = false, .act = "silu",
                                               .pad_token_id = MTK_NN_NO_PADDING_IDX, .rope_theta = 10000.0 };
    decoder_spec spec;
    if (!models_decoder_read_common(c, &spec, "Mistral", &defaults)) return NULL;
    return models_decoder_build(c, &spec, architecture);
}
