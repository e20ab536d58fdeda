/* llama: Llama 1, 2, 3, 3.1 and 3.2 (LlamaModel, LlamaForCausalLM), with
 * rope_scaling (llama3, linear, dynamic), attention_bias, mlp_bias, a
 * head_dim override and tie_word_embeddings. */
#include "models/decoder.h"

mtk_module *models_family_llama_build(model_config *c, const char *architecture)
{
    static const decoder_defaults defaults = { .kv_heads = 0, .eps = 1e-6, .tie_embeddings = false, .act = "silu",
                                               .pad_token_id = MTK_NN_NO_PADDING_IDX, .rope_theta = 10000.0 };
    decoder_spec spec;
    if (!models_decoder_read_common(c, &spec, "Llama", &defaults)) return NULL;
    spec.qkv_bias = spec.o_bias = models_cfg_bool(c, "attention_bias", false);
    spec.mlp_bias = models_cfg_bool(c, "mlp_bias", false);
    return models_cfg_ok(c) ? models_decoder_build(c, &spec, architecture) : NULL;
}
