/* granite: IBM Granite 3.x (GraniteModel, GraniteForCausalLM): Llama's
 * modules with four scalars: embeddings times embedding_multiplier, each
 * sublayer's output times residual_multiplier before its residual add,
 * attention_multiplier as the attention scale (instead of head_dim^-0.5),
 * logits divided by logits_scaling. */
#include "models/decoder.h"
#include "mtk/ops.h"

enum { L_ATTN, L_MLP, L_INPUT_NORM, L_POST_ATTN_NORM };

typedef struct granite_layer_config {
    double residual_multiplier;
} granite_layer_config;

/* forward(x (B, S, hidden), cos, sin) -> (B, S, hidden); with a KV cache
 * forward(x, cos, sin, past_k, past_v[, mask]) -> (h, keys, values), the
 * attention's */
static bool granite_layer_forward(mtk_module *m, mtk_module_io *io)
{
    mtk_ctx *ctx = mtk_module_ctx(m);
    mtk_value scale = mtk_value_float(((const granite_layer_config *)mtk_module_config(m))->residual_multiplier);
    mtk_tensor *x = io->in[0];
    mtk_module_io attn = { .in = { mtk_module_forward(mtk_module_child_at(m, L_INPUT_NORM, NULL), x) }, .nin = io->nin };
    for (int32_t i = 1; i < io->nin; i++) attn.in[i] = io->in[i];
    if (!mtk_module_call(mtk_module_child_at(m, L_ATTN, NULL), &attn)) return false;
    x = mtk_add(ctx, x, mtk_mul_scalar(ctx, attn.out[0], scale));
    mtk_tensor *h = mtk_module_forward(mtk_module_child_at(m, L_POST_ATTN_NORM, NULL), x);
    h = mtk_module_forward(mtk_module_child_at(m, L_MLP, NULL), h);
    io->out[0] = mtk_add(ctx, x, mtk_mul_scalar(ctx, h, scale));
    io->nout = attn.nout >= 3 ? 3 : 1; /* the cache's keys and values, not eager's weights */
    for (int32_t i = 1; i < io->nout; i++) io->out[i] = attn.out[i];
    return io->out[0] != NULL;
}

static mtk_module *granite_layer(mtk_ctx *ctx, const decoder_types *t, const decoder_spec *spec, int64_t index)
{
    static const mtk_module_type base = { "GraniteDecoderLayer", granite_layer_forward, NULL, NULL };
    mtk_module *m = mtk_module_new(ctx, &base, sizeof(granite_layer_config));
    if (!m) return NULL;
    ((granite_layer_config *)mtk_module_config(m))->residual_multiplier = *(const double *)spec->layer_data;
    bool ok = mtk_module_add(m, "self_attn", models_decoder_attention(ctx, t, spec, index)) &&
              mtk_module_add(m, "mlp", models_decoder_mlp(ctx, t, spec, spec->intermediate)) &&
              mtk_module_add(m, "input_layernorm", models_decoder_norm(ctx, t, spec)) &&
              mtk_module_add(m, "post_attention_layernorm", models_decoder_norm(ctx, t, spec));
    return ok ? mtk_module_finish(m) : NULL;
}

mtk_module *models_family_granite_build(model_config *c, const char *architecture)
{
    static const decoder_defaults defaults = { .kv_heads = 0, .eps = 1e-6, .tie_embeddings = false, .act = "silu",
                                               .pad_token_id = MTK_NN_NO_PADDING_IDX, .rope_theta = 10000.0 };
    decoder_spec spec;
    if (!models_decoder_read_common(c, &spec, "Granite", &defaults)) return NULL;
    spec.qkv_bias = spec.o_bias = models_cfg_bool(c, "attention_bias", false);
    spec.mlp_bias = models_cfg_bool(c, "mlp_bias", false);
    spec.embedding_multiplier = models_cfg_float(c, "embedding_multiplier", 1.0);
    spec.logits_scaling = models_cfg_float(c, "logits_scaling", 1.0);
    spec.attn_scale = models_cfg_float(c, "attention_multiplier", 1.0);
    double *residual = mtk_ctx_alloc(c->ctx, sizeof *residual);
    if (!residual) return NULL;
    *residual = models_cfg_float(c, "residual_multiplier", 1.0);
    if (!models_cfg_ok(c)) return NULL;
    if (spec.logits_scaling == 0) return models_cfg_fail(c, "logits_scaling", "must not be 0"), NULL;
    spec.layer_data = residual;
    spec.layer_builder = granite_layer;
    return models_decoder_build(c, &spec, architecture);
}
