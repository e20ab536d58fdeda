/* olmo2: OLMo 2 (Olmo2Model, Olmo2ForCausalLM): Llama's blocks with
 * q_norm / k_norm over the whole query and key projections (before the
 * heads split) and norms after each sublayer instead of before:
 *   h = x + post_attention_layernorm(self_attn(x))
 *   out = h + post_feedforward_layernorm(mlp(h))
 * (no input_layernorm). */
#include "models/decoder.h"
#include "mtk/ops.h"

#include <stdio.h>
#include <string.h>

enum { L_ATTN, L_MLP, L_POST_ATTN_NORM, L_POST_FF_NORM };

/* forward(x (B, S, hidden), cos, sin) -> (B, S, hidden); with a KV cache
 * forward(x, cos, sin, past_k, past_v[, mask]) -> (h, keys, values), the
 * attention's */
static bool olmo2_layer_forward(mtk_module *m, mtk_module_io *io)
{
    mtk_ctx *ctx = mtk_module_ctx(m);
    mtk_tensor *x = io->in[0];
    mtk_module_io attn = { .nin = io->nin };
    for (int32_t i = 0; i < io->nin; i++) attn.in[i] = io->in[i];
    if (!mtk_module_call(mtk_module_child_at(m, L_ATTN, NULL), &attn)) return false;
    x = mtk_add(ctx, x, mtk_module_forward(mtk_module_child_at(m, L_POST_ATTN_NORM, NULL), attn.out[0]));
    mtk_tensor *h = mtk_module_forward(mtk_module_child_at(m, L_MLP, NULL), x);
    io->out[0] = mtk_add(ctx, x, mtk_module_forward(mtk_module_child_at(m, L_POST_FF_NORM, NULL), h));
    io->nout = attn.nout >= 3 ? 3 : 1; /* the cache's keys and values, not eager's weights */
    for (int32_t i = 1; i < io->nout; i++) io->out[i] = attn.out[i];
    return io->out[0] != NULL;
}

static mtk_module *olmo2_layer(mtk_ctx *ctx, const decoder_types *t, const decoder_spec *spec, int64_t index)
{
    static const mtk_module_type base = { "Olmo2DecoderLayer", olmo2_layer_forward, NULL, NULL };
    mtk_module *m = mtk_module_new(ctx, &base, 0);
    if (!m) return NULL;
    bool ok = mtk_module_add(m, "self_attn", models_decoder_attention(ctx, t, spec, index)) &&
              mtk_module_add(m, "mlp", models_decoder_mlp(ctx, t, spec, spec->intermediate)) &&
              mtk_module_add(m, "post_attention_layernorm", models_decoder_norm(ctx, t, spec)) &&
              mtk_module_add(m, "post_feedforward_layernorm", models_decoder_norm(ctx, t, spec));
    return ok ? mtk_module_finish(m) : NULL;
}

mtk_module *models_family_olmo2_build(model_config *c, const char *architecture)
{
    static const decoder_defaults defaults = { .kv_heads = 0, .eps = 1e-5, .tie_embeddings = false, .act = "silu",
                                               .pad_token_id = 1, .rope_theta = 10000.0 };
    decoder_spec spec;
    if (!models_decoder_read_common(c, &spec, "Olmo2", &defaults)) return NULL;
    spec.qkv_bias = spec.o_bias = models_cfg_bool(c, "attention_bias", false);
    spec.qk_norm = spec.qk_norm_whole = true;
    spec.norm_weight_float32 = true;
    spec.rope.keep_float32 = true;
    spec.layer_builder = olmo2_layer;
    return models_cfg_ok(c) ? models_decoder_build(c, &spec, architecture) : NULL;
}
