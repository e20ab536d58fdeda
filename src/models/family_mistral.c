/* mistral: Mistral 7B (MistralModel, MistralForCausalLM): Llama's layers
 * without biases; the sliding window (4096 unless set, null: none)
 * changes the mask and the KV cache, not the parameters. */
#include "models/decoder.h"

mtk_module *models_family_mistral_build(model_config *c, const char *architecture)
{
    static const decoder_defaults defaults = { .kv_heads = 8, .eps = 1e-6, .tie_embeddings = false, .act = "silu",
                                               .pad_token_id = MTK_NN_NO_PADDING_IDX, .rope_theta = 10000.0 };
    decoder_spec spec;
    if (!models_decoder_read_common(c, &spec, "Mistral", &defaults) || !models_decoder_read_windows(c, &spec, WINDOW_ALL, 4096))
        return NULL;
    return models_decoder_build(c, &spec, architecture);
}
