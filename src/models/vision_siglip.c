/* The SigLIP vision tower (SiglipVisionModel, as transformers 5 builds it
 * from a siglip_vision_model config inside gemma3) and Gemma 3's
 * multi-modal projector, with transformers' keys:
 *   embeddings: patch_embedding (Conv2d, stride = patch), position_embedding
 *     (Embedding(patches, hidden)), position_ids (1, patches) non-persistent;
 *   encoder.layers.N: layer_norm1, self_attn (k/v/q/out_proj, biased),
 *     layer_norm2, mlp (activation_fn, fc1, fc2);
 *   post_layernorm; head (SiglipMultiheadAttentionPoolingHead) when
 *     vision_use_head (gemma3's configs turn it off);
 *   Gemma3MultiModalProjector: mm_input_projection_weight (vision hidden,
 *     text hidden), mm_soft_emb_norm (Gemma3RMSNorm), avg_pool.
 * Forward: pixels (B, C, H, W) -> last hidden state (B, patches, hidden);
 * the projector (B, patches, hidden) -> (B, mm_tokens_per_image, text
 * hidden).  The multimodal model's forward takes token ids only and does
 * not run them (as transformers without pixel_values). */
#include "models/blocks.h"
#include "models/decoder.h"
#include "mtk/ops.h"

#include <math.h>

typedef struct siglip_spec {
    int64_t hidden, intermediate, layers, heads, channels, image, patch;
    double eps;
    const char *act;
    bool use_head;
} siglip_spec;

static mtk_module *child(mtk_module *m, int32_t i) { return blocks_child(m, i); }

/* ------------------------------------------------------------- embeddings */

static bool embeddings_reset(mtk_module *m, mtk_rng *rng)
{
    (void)rng;
    mtk_tensor *t = mtk_module_buffer_at(m, 0, NULL, NULL); /* position_ids = arange(patches) */
    if (t && !mtk_tensor_is_meta(t) && t->dtype == MTK_INT64 && mtk_tensor_is_contiguous(t)) {
        int64_t *data = mtk_tensor_data(t);
        for (int64_t k = 0; k < mtk_tensor_numel(t); k++) data[k] = k;
    }
    return true;
}

/* pixels (B, C, H, W) -> patch_embedding flattened (B, patches, hidden) +
 * position_embedding(position_ids) */
static bool embeddings_forward(mtk_module *m, mtk_module_io *io)
{
    mtk_ctx *ctx = mtk_module_ctx(m);
    mtk_module *patch = child(m, 0);
    const mtk_tensor *w = mtk_module_param_at(patch, 0, NULL);
    mtk_tensor *h = mtk_module_forward(patch, mtk_to_dtype(ctx, io->in[0], w->dtype)); /* (B, hidden, h, w) */
    h = mtk_transpose(ctx, mtk_flatten(ctx, h, 2, -1), 1, 2);                          /* (B, patches, hidden) */
    mtk_tensor *positions = mtk_module_forward(child(m, 1), mtk_module_buffer_at(m, 0, NULL, NULL));
    io->out[0] = mtk_add(ctx, h, positions);
    io->nout = 1;
    return io->out[0] != NULL;
}

static const mtk_module_type embeddings_type = { "SiglipVisionEmbeddings", embeddings_forward, embeddings_reset,
                                                 NULL };

static mtk_module *embeddings(mtk_ctx *ctx, const siglip_spec *s)
{
    mtk_module *m = mtk_module_new(ctx, &embeddings_type, 0);
    if (!m) return NULL;
    mtk_conv_options conv = mtk_conv_defaults();
    conv.stride[0] = conv.stride[1] = s->patch;
    int64_t kernel[2] = { s->patch, s->patch }, side = s->image / s->patch, patches = side * side;
    int64_t ids_shape[2] = { 1, patches };
    bool ok = mtk_module_add(m, "patch_embedding", mtk_nn_conv(ctx, 2, s->channels, s->hidden, kernel, &conv)) &&
              mtk_module_add(m, "position_embedding", mtk_nn_embedding(ctx, patches, s->hidden, MTK_NN_NO_PADDING_IDX)) &&
              mtk_module_new_buffer(m, "position_ids", ids_shape, 2, MTK_INT64, false);
    return ok ? mtk_module_finish(m) : NULL;
}

/* ------------------------------------------------------------------ layer */

typedef struct attention_config {
    int64_t heads, head_dim;
} attention_config;

/* (B, S, hidden) -> (B, S, hidden): children k_proj, v_proj, q_proj,
 * out_proj; attention over every patch, scaled by head_dim^-0.5 */
static bool attention_forward(mtk_module *m, mtk_module_io *io)
{
    mtk_ctx *ctx = mtk_module_ctx(m);
    const attention_config *c = mtk_module_config(m);
    mtk_tensor *x = io->in[0];
    mtk_tensor *k = models_blocks_split_heads(ctx, mtk_module_forward(child(m, 0), x), c->heads, c->head_dim);
    mtk_tensor *v = models_blocks_split_heads(ctx, mtk_module_forward(child(m, 1), x), c->heads, c->head_dim);
    mtk_tensor *q = models_blocks_split_heads(ctx, mtk_module_forward(child(m, 2), x), c->heads, c->head_dim);
    mtk_tensor *a = mtk_scaled_dot_product_attention(ctx, q, k, v, NULL, 0.0, false,
                                                     1.0 / sqrt((double)c->head_dim), false); /* (B, H, S, D) */
    io->out[0] = mtk_module_forward(child(m, 3), models_blocks_merge_heads(ctx, a));
    io->nout = 1;
    return io->out[0] != NULL;
}

static const mtk_module_type attention_type = { "SiglipAttention", attention_forward, NULL, NULL };

/* fc2(act(fc1(x))); children activation_fn, fc1, fc2 */
static bool mlp_forward(mtk_module *m, mtk_module_io *io)
{
    io->out[0] = mtk_module_forward(child(m, 2), mtk_module_forward(child(m, 0), mtk_module_forward(child(m, 1), io->in[0])));
    io->nout = 1;
    return io->out[0] != NULL;
}

static const mtk_module_type mlp_type = { "SiglipMLP", mlp_forward, NULL, NULL };

static mtk_module *mlp(mtk_ctx *ctx, const siglip_spec *s)
{
    mtk_module *m = mtk_module_new(ctx, &mlp_type, 0);
    bool ok = m && mtk_module_add(m, "activation_fn", mtk_nn_activation(ctx, s->act)) &&
              mtk_module_add(m, "fc1", mtk_nn_linear(ctx, s->hidden, s->intermediate, true)) &&
              mtk_module_add(m, "fc2", mtk_nn_linear(ctx, s->intermediate, s->hidden, true));
    return ok ? mtk_module_finish(m) : NULL;
}

/* x + attn(norm1(x)), then + mlp(norm2(.)); children layer_norm1,
 * self_attn, layer_norm2, mlp */
static bool layer_forward(mtk_module *m, mtk_module_io *io)
{
    mtk_ctx *ctx = mtk_module_ctx(m);
    mtk_tensor *x = io->in[0];
    x = mtk_add(ctx, x, mtk_module_forward(child(m, 1), mtk_module_forward(child(m, 0), x)));
    io->out[0] = mtk_add(ctx, x, mtk_module_forward(child(m, 3), mtk_module_forward(child(m, 2), x)));
    io->nout = 1;
    return io->out[0] != NULL;
}

static const mtk_module_type layer_type = { "SiglipEncoderLayer", layer_forward, NULL, NULL };

static mtk_module *attention(mtk_ctx *ctx, const siglip_spec *s)
{
    mtk_module *m = mtk_module_new(ctx, &attention_type, sizeof(attention_config));
    if (!m) return NULL;
    *(attention_config *)mtk_module_config(m) = (attention_config){ s->heads, s->hidden / s->heads };
    bool ok = mtk_module_add(m, "k_proj", mtk_nn_linear(ctx, s->hidden, s->hidden, true)) &&
              mtk_module_add(m, "v_proj", mtk_nn_linear(ctx, s->hidden, s->hidden, true)) &&
              mtk_module_add(m, "q_proj", mtk_nn_linear(ctx, s->hidden, s->hidden, true)) &&
              mtk_module_add(m, "out_proj", mtk_nn_linear(ctx, s->hidden, s->hidden, true));
    return ok ? mtk_module_finish(m) : NULL;
}

static mtk_module *layer(mtk_ctx *ctx, const siglip_spec *s)
{
    mtk_module *m = mtk_module_new(ctx, &layer_type, 0);
    bool ok = m && mtk_module_add(m, "layer_norm1", mtk_nn_layer_norm(ctx, &s->hidden, 1, s->eps, true, true)) &&
              mtk_module_add(m, "self_attn", attention(ctx, s)) &&
              mtk_module_add(m, "layer_norm2", mtk_nn_layer_norm(ctx, &s->hidden, 1, s->eps, true, true)) &&
              mtk_module_add(m, "mlp", mlp(ctx, s));
    return ok ? mtk_module_finish(m) : NULL;
}

/* -------------------------------------------------------- encoder, model */

/* each layer in turn */
static const mtk_module_type encoder_type = { "SiglipEncoder", models_blocks_encoder_forward, NULL, NULL };

/* The pooling head's forward (attention of a learned probe over the
 * patches) is not modelled: gemma3 has no head. */
static bool head_forward(mtk_module *m, mtk_module_io *io)
{
    (void)io;
    return mtk_error(mtk_module_ctx(m), MTK_ERR_NOT_IMPLEMENTED, "%s: the pooling head's forward is not modelled",
                     mtk_module_type_name(m));
}

static const mtk_module_type head_type = { "SiglipMultiheadAttentionPoolingHead", head_forward, NULL, NULL };
static const mtk_module_type mha_type = { "MultiheadAttention", head_forward, NULL, NULL };

/* probe (1, 1, H), attention (in_proj_weight (3H, H), in_proj_bias (3H),
 * out_proj), layernorm, mlp */
static mtk_module *head(mtk_ctx *ctx, const siglip_spec *s)
{
    mtk_module *m = mtk_module_new(ctx, &head_type, 0), *mha = mtk_module_new(ctx, &mha_type, 0);
    if (!m || !mha) return NULL;
    int64_t probe[3] = { 1, 1, s->hidden }, in_proj[2] = { 3 * s->hidden, s->hidden }, in_bias = 3 * s->hidden;
    bool ok = mtk_module_new_parameter(mha, "in_proj_weight", in_proj, 2) &&
              mtk_module_new_parameter(mha, "in_proj_bias", &in_bias, 1) &&
              mtk_module_add(mha, "out_proj", mtk_nn_linear(ctx, s->hidden, s->hidden, true)) &&
              mtk_module_new_parameter(m, "probe", probe, 3) && mtk_module_add(m, "attention", mtk_module_finish(mha)) &&
              mtk_module_add(m, "layernorm", mtk_nn_layer_norm(ctx, &s->hidden, 1, s->eps, true, true)) &&
              mtk_module_add(m, "mlp", mlp(ctx, s));
    return ok ? mtk_module_finish(m) : NULL;
}

/* pixels (B, C, H, W) -> post_layernorm(encoder(embeddings)) */
static bool model_forward(mtk_module *m, mtk_module_io *io)
{
    mtk_tensor *x = io->in[0];
    if (x->ndim != 4)
        return mtk_error(mtk_module_ctx(m), MTK_ERR_SHAPE, "%s: expects pixels (B, C, H, W), got %d dims",
                         mtk_module_type_name(m), (int)x->ndim);
    io->out[0] = mtk_module_forward(child(m, 2), mtk_module_forward(child(m, 1), mtk_module_forward(child(m, 0), x)));
    io->nout = 1;
    return io->out[0] != NULL;
}

static const mtk_module_type model_type = { "SiglipVisionModel", model_forward, NULL, NULL };

mtk_module *models_siglip_vision(model_config *c)
{
    mtk_ctx *ctx = c->ctx;
    siglip_spec s = {
        .hidden = models_cfg_positive(c, "hidden_size", 768),
        .intermediate = models_cfg_positive(c, "intermediate_size", 3072),
        .layers = models_cfg_int(c, "num_hidden_layers", 12),
        .heads = models_cfg_positive(c, "num_attention_heads", 12),
        .channels = models_cfg_positive(c, "num_channels", 3),
        .image = models_cfg_positive(c, "image_size", 224),
        .patch = models_cfg_positive(c, "patch_size", 16),
        .eps = models_blocks_eps(c, "layer_norm_eps", 1e-6),
        .act = models_cfg_string(c, "hidden_act", "gelu_pytorch_tanh"),
        .use_head = models_cfg_bool(c, "vision_use_head", true),
    };
    if (!models_cfg_ok(c) || !models_cfg_check_layers(c, "num_hidden_layers", s.layers)) return NULL;
    if (s.hidden % s.heads != 0)
        return models_cfg_fail(c, "hidden_size", "%lld is not a multiple of num_attention_heads=%lld",
                               (long long)s.hidden, (long long)s.heads),
               NULL;
    if (s.patch > s.image)
        return models_cfg_fail(c, "patch_size", "%lld is larger than image_size=%lld", (long long)s.patch,
                               (long long)s.image),
               NULL;
    mtk_module *m = mtk_module_new(ctx, &model_type, 0), *encoder = mtk_module_new(ctx, &encoder_type, 0);
    mtk_module *layers = mtk_nn_module_list(ctx);
    if (!m || !encoder || !layers) return NULL;
    for (int64_t i = 0; i < s.layers; i++)
        if (!mtk_nn_module_list_append(layers, layer(ctx, &s))) return NULL;
    bool ok = mtk_module_add(encoder, "layers", layers) && mtk_module_add(m, "embeddings", embeddings(ctx, &s)) &&
              mtk_module_add(m, "encoder", mtk_module_finish(encoder)) &&
              mtk_module_add(m, "post_layernorm", mtk_nn_layer_norm(ctx, &s.hidden, 1, s.eps, true, true));
    if (ok && s.use_head) ok = mtk_module_add(m, "head", head(ctx, &s));
    return ok ? mtk_module_finish(m) : NULL;
}

/* ------------------------------------------------------ gemma3 projector */

typedef struct projector_config {
    int64_t patches_per_side, kernel;
} projector_config;

/* (B, patches, Hv) -> avg-pooled to (B, tokens, Hv), normed, times
 * mm_input_projection_weight: (B, tokens, Ht) in the input's dtype */
static bool projector_forward(mtk_module *m, mtk_module_io *io)
{
    mtk_ctx *ctx = mtk_module_ctx(m);
    const projector_config *c = mtk_module_config(m);
    mtk_tensor *x = io->in[0];
    if (x->ndim != 3)
        return mtk_error(ctx, MTK_ERR_SHAPE, "%s: expects vision states (B, patches, hidden)", mtk_module_type_name(m));
    int64_t grid[4] = { x->shape[0], x->shape[2], c->patches_per_side, c->patches_per_side };
    mtk_tensor *h = mtk_contiguous(ctx, mtk_reshape(ctx, mtk_transpose(ctx, x, 1, 2), grid, 4)); /* (B, Hv, p, p) */
    h = mtk_transpose(ctx, mtk_flatten(ctx, mtk_module_forward(child(m, 1), h), 2, -1), 1, 2);    /* (B, T, Hv)   */
    h = mtk_matmul(ctx, mtk_module_forward(child(m, 0), h), mtk_module_param_at(m, 0, NULL));     /* (B, T, Ht)   */
    io->out[0] = mtk_to_dtype(ctx, h, x->dtype);
    io->nout = 1;
    return io->out[0] != NULL;
}

static const mtk_module_type projector_type = { "Gemma3MultiModalProjector", projector_forward, NULL, NULL };

mtk_module *models_gemma3_projector(model_config *c, model_config *vision, int64_t text_hidden)
{
    mtk_ctx *ctx = c->ctx;
    int64_t hidden = models_cfg_positive(vision, "hidden_size", 768);
    int64_t side = models_cfg_positive(vision, "image_size", 224) / models_cfg_positive(vision, "patch_size", 16);
    double eps = models_blocks_eps(vision, "layer_norm_eps", 1e-6);
    int64_t tokens = models_cfg_positive(c, "mm_tokens_per_image", 256);
    if (!models_cfg_ok(c)) return NULL;
    int64_t per_side = (int64_t)sqrt((double)tokens);
    if (per_side < 1 || side / per_side < 1)
        return models_cfg_fail(c, "mm_tokens_per_image", "%lld tokens do not pool %lld x %lld patches",
                               (long long)tokens, (long long)side, (long long)side),
               NULL;
    decoder_types *t = mtk_ctx_alloc(ctx, sizeof *t);
    if (!t || !models_decoder_types_init(ctx, t, "Gemma3")) return NULL;
    decoder_spec norm = { .hidden = hidden, .eps = eps, .norm_plus_one = true };
    mtk_module *m = mtk_module_new(ctx, &projector_type, sizeof(projector_config));
    if (!m) return NULL;
    *(projector_config *)mtk_module_config(m) = (projector_config){ side, side / per_side };
    int64_t shape[2] = { hidden, text_hidden }, kernel[2] = { side / per_side, side / per_side };
    mtk_pool_options pool = mtk_pool_defaults();
    bool ok = mtk_module_new_parameter(m, "mm_input_projection_weight", shape, 2) &&
              mtk_module_add(m, "mm_soft_emb_norm", models_decoder_norm(ctx, t, &norm)) &&
              mtk_module_add(m, "avg_pool", mtk_nn_avg_pool(ctx, 2, kernel, &pool));
    return ok ? mtk_module_finish(m) : NULL;
}
