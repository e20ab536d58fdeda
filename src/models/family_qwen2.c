/* qwen2: Qwen2 and Qwen2.5 (Qwen2Model, Qwen2ForCausalLM): Llama's layers
 * with biases on q_proj, k_proj and v_proj (always), none on o_proj. */
#include "models/decoder.h"

mtk_module *models_family_qwen2_build(model_config *c, const char *architecture)
{
    static const decoder_defaults defaults = { .kv_heads = 0, .eps = 1e-6, .tie_embeddings = false, .act = "silu",
                                               .pad_token_id = MTK_NN_NO_PADDING_IDX, .rope_theta = 10000.0 };
    decoder_spec spec;
    if (!models_decoder_read_common(c, &spec, "Qwen2", &defaults) || !models_decoder_read_windows(c, &spec, WINDOW_FROM, 4096))
        return NULL;
    spec.qkv_bias = true;
    return models_decoder_build(c, &spec, architecture);
}
