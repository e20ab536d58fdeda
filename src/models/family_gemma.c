/* gemma: Gemma 2B and 7B (GemmaModel, GemmaForCausalLM): Llama's layers
 * with GemmaRMSNorm (x * (1 + w): the weight starts at zero), embeddings
 * scaled by sqrt(hidden_size) (GemmaTextScaledWordEmbedding with its
 * non-persistent embed_scale), head_dim 256 by default, GELU (tanh) and
 * tied embeddings. */
#include "models/decoder.h"

#include <string.h>

mtk_module *models_family_gemma_build(model_config *c, const char *architecture)
{
    static const decoder_defaults defaults = { .kv_heads = 0, .head_dim = 256, .eps = 1e-6, .tie_embeddings = true,
                                               .act = "gelu_pytorch_tanh", .pad_token_id = 0, .rope_theta = 10000.0 };
    decoder_spec spec;
    if (!models_decoder_read_common(c, &spec, "Gemma", &defaults)) return NULL;
    /* transformers reads the legacy "gelu" of the released configs as the tanh approximation */
    if (strcmp(spec.act, "gelu") == 0) spec.act = "gelu_pytorch_tanh";
    spec.qkv_bias = spec.o_bias = models_cfg_bool(c, "attention_bias", false);
    spec.norm_plus_one = true;
    spec.scaled_embedding = true;
    return models_cfg_ok(c) ? models_decoder_build(c, &spec, architecture) : NULL;
}
