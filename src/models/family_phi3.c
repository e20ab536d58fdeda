/* phi3: Phi-3 (Phi3Model, Phi3ForCausalLM): fused qkv_proj (registered
 * after o_proj, as transformers does) and gate_up_proj, residual dropouts,
 * partial_rotary_factor; longrope (Phi-3.5, Phi-4-mini; the older names
 * "su" and "yarn" mean longrope here) with Phi3Config's
 * original_max_position_embeddings (4096 unless the config says). */
#include "models/decoder.h"

mtk_module *models_family_phi3_build(model_config *c, const char *architecture)
{
    static const decoder_defaults defaults = { .kv_heads = 0, .eps = 1e-5, .tie_embeddings = false, .act = "silu",
                                               .pad_token_id = 32000, .rope_theta = 10000.0,
                                               .longrope_aliases = true, .original_max_position = 4096 };
    decoder_spec spec;
    if (!models_decoder_read_common(c, &spec, "Phi3", &defaults) || !models_decoder_read_windows(c, &spec, WINDOW_ALL, 0))
        return NULL;
    spec.fused_qkv = true;
    spec.fused_gate_up = true;
    spec.resid_dropout = models_cfg_float(c, "resid_pdrop", 0.0);
    if (!models_cfg_ok(c)) return NULL;
    if (!(spec.resid_dropout >= 0 && spec.resid_dropout <= 1))
        return models_cfg_fail(c, "resid_pdrop", "must be in [0, 1], got %g", spec.resid_dropout), NULL;
    return models_decoder_build(c, &spec, architecture);
}
