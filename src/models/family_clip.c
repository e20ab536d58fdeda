/* The clip_text_model family: CLIPTextModel and CLIPTextModelWithProjection,
 * the text encoders of the Stable Diffusion pipelines, as transformers 5
 * builds them: CLIPTextModel is embeddings (token_embedding,
 * position_embedding and the non-persistent position_ids buffer),
 * encoder.layers of self_attn (k_proj, v_proj, q_proj, out_proj),
 * layer_norm1, mlp (fc1, fc2), layer_norm2, and final_layer_norm (the
 * checkpoints' "text_model." prefix is renamed away on load);
 * CLIPTextModelWithProjection is text_model (a CLIPTextModel) and
 * text_projection (no bias).
 *
 * Forward: input_ids (B, S), S <= max_position_embeddings, causal
 * attention -> CLIPTextModel: last_hidden_state (B, S, hidden) and
 * pooler_output (B, hidden), the state at each row's end-of-text token
 * (argmax of the ids, transformers' rule for eos_token_id 2, or the first
 * eos_token_id); CLIPTextModelWithProjection: text_embeds (B,
 * projection_dim) and last_hidden_state.
 *
 * Config fields (CLIPTextConfig's defaults): vocab_size 49408,
 * hidden_size 512, intermediate_size 2048, projection_dim 512,
 * num_hidden_layers 12, num_attention_heads 8, max_position_embeddings
 * 77, hidden_act "quick_gelu", layer_norm_eps 1e-5, attention_dropout 0,
 * eos_token_id 49407. */
#include "models/blocks.h"
#include "mtk/ops.h"

#include <math.h>
#include <string.h>

typedef struct clip_spec {
    int64_t vocab, hidden, intermediate, projection, layers, heads, head_dim, positions, eos;
    double eps;
    const char *act;
} clip_spec;

typedef struct clip_config {
    int64_t heads, head_dim, positions, eos;
} clip_config;

static mtk_module *kid(mtk_module *m, const char *name) { return mtk_module_child(m, name); }

/* QuickGELUActivation: x * sigmoid(1.702 x) */
static bool quick_gelu_forward(mtk_module *m, mtk_module_io *io)
{
    mtk_ctx *ctx = mtk_module_ctx(m);
    mtk_tensor *x = io->in[0];
    io->out[0] = mtk_mul(ctx, x, mtk_sigmoid(ctx, mtk_mul_scalar(ctx, x, mtk_value_float(1.702))));
    io->nout = 1;
    return io->out[0] != NULL;
}

static const mtk_module_type quick_gelu_type = { "QuickGELUActivation", quick_gelu_forward, NULL, NULL };

static mtk_module *activation(const model_config *c, const char *name)
{
    if (strcmp(name, "quick_gelu") != 0) return models_blocks_activation(c, "hidden_act", name);
    mtk_module *m = mtk_module_new(c->ctx, &quick_gelu_type, 0);
    return m ? mtk_module_finish(m) : NULL;
}

/* ------------------------------------------------------------- attention */

/* causal self-attention: (B, S, hidden) -> (B, S, hidden) */
static bool attention_forward(mtk_module *m, mtk_module_io *io)
{
    mtk_ctx *ctx = mtk_module_ctx(m);
    const clip_config *c = mtk_module_config(m);
    mtk_tensor *x = io->in[0];
    mtk_tensor *q = models_blocks_split_heads(ctx, mtk_module_forward(kid(m, "q_proj"), x), c->heads, c->head_dim);
    mtk_tensor *k = models_blocks_split_heads(ctx, mtk_module_forward(kid(m, "k_proj"), x), c->heads, c->head_dim);
    mtk_tensor *v = models_blocks_split_heads(ctx, mtk_module_forward(kid(m, "v_proj"), x), c->heads, c->head_dim);
    mtk_tensor *h = mtk_scaled_dot_product_attention(ctx, q, k, v, NULL, 0.0, true, NAN, false); /* (B, n, S, d) */
    io->out[0] = mtk_module_forward(kid(m, "out_proj"), models_blocks_merge_heads(ctx, h));
    io->nout = 1;
    return io->out[0] != NULL;
}

static const mtk_module_type attention_type = { "CLIPAttention", attention_forward, NULL, NULL };

/* fc2(act(fc1(x))) */
static bool mlp_forward(mtk_module *m, mtk_module_io *io)
{
    mtk_tensor *h = mtk_module_forward(kid(m, "fc1"), io->in[0]);
    io->out[0] = mtk_module_forward(kid(m, "fc2"), mtk_module_forward(kid(m, "activation_fn"), h));
    io->nout = 1;
    return io->out[0] != NULL;
}

static const mtk_module_type mlp_type = { "CLIPMLP", mlp_forward, NULL, NULL };

/* x += attn(ln1(x)); x += mlp(ln2(x)) */
static bool layer_forward(mtk_module *m, mtk_module_io *io)
{
    mtk_ctx *ctx = mtk_module_ctx(m);
    mtk_tensor *x = io->in[0];
    x = mtk_add(ctx, x, mtk_module_forward(kid(m, "self_attn"), mtk_module_forward(kid(m, "layer_norm1"), x)));
    io->out[0] = mtk_add(ctx, x, mtk_module_forward(kid(m, "mlp"), mtk_module_forward(kid(m, "layer_norm2"), x)));
    io->nout = 1;
    return io->out[0] != NULL;
}

static const mtk_module_type layer_type = { "CLIPEncoderLayer", layer_forward, NULL, NULL };

static mtk_module *layer(const model_config *c, const clip_spec *s)
{
    mtk_ctx *ctx = c->ctx;
    mtk_module *attn = mtk_module_new(ctx, &attention_type, sizeof(clip_config));
    mtk_module *mlp = mtk_module_new(ctx, &mlp_type, 0);
    mtk_module *m = mtk_module_new(ctx, &layer_type, 0);
    if (!attn || !mlp || !m) return NULL;
    *(clip_config *)mtk_module_config(attn) = (clip_config){ s->heads, s->head_dim, s->positions, s->eos };
    int64_t inner = s->heads * s->head_dim;
    bool ok = mtk_module_add(attn, "k_proj", mtk_nn_linear(ctx, s->hidden, inner, true)) &&
              mtk_module_add(attn, "v_proj", mtk_nn_linear(ctx, s->hidden, inner, true)) &&
              mtk_module_add(attn, "q_proj", mtk_nn_linear(ctx, s->hidden, inner, true)) &&
              mtk_module_add(attn, "out_proj", mtk_nn_linear(ctx, inner, s->hidden, true)) &&
              mtk_module_add(mlp, "activation_fn", activation(c, s->act)) &&
              mtk_module_add(mlp, "fc1", mtk_nn_linear(ctx, s->hidden, s->intermediate, true)) &&
              mtk_module_add(mlp, "fc2", mtk_nn_linear(ctx, s->intermediate, s->hidden, true)) &&
              mtk_module_add(m, "self_attn", mtk_module_finish(attn)) &&
              mtk_module_add(m, "layer_norm1", mtk_nn_layer_norm(ctx, &s->hidden, 1, s->eps, true, true)) &&
              mtk_module_add(m, "mlp", mtk_module_finish(mlp)) &&
              mtk_module_add(m, "layer_norm2", mtk_nn_layer_norm(ctx, &s->hidden, 1, s->eps, true, true));
    return ok ? mtk_module_finish(m) : NULL;
}

/* ------------------------------------------------------------ embeddings */

/* ids (B, S) -> token_embedding(ids) + position_embedding(position_ids[:, :S]) */
static bool embeddings_forward(mtk_module *m, mtk_module_io *io)
{
    mtk_ctx *ctx = mtk_module_ctx(m);
    mtk_tensor *ids = io->in[0];
    mtk_tensor *positions = mtk_module_find_tensor(m, "position_ids"); /* (1, P) */
    if (!ids || !positions) return false;
    mtk_tensor *pos = mtk_slice(ctx, positions, 1, 0, ids->shape[1], 1);
    io->out[0] = mtk_add(ctx, mtk_module_forward(kid(m, "token_embedding"), ids),
                         mtk_module_forward(kid(m, "position_embedding"), pos));
    io->nout = 1;
    return io->out[0] != NULL;
}

/* position_ids = arange(max_position_embeddings), recomputed on materialization */
static bool embeddings_reset(mtk_module *m, mtk_rng *rng)
{
    (void)rng;
    mtk_tensor *t = mtk_module_find_tensor(m, "position_ids");
    if (!t || mtk_tensor_is_meta(t) || !mtk_tensor_is_contiguous(t)) return true;
    int64_t *data = mtk_tensor_data(t);
    for (int64_t k = 0; k < mtk_tensor_numel(t); k++) data[k] = k;
    return true;
}

static const mtk_module_type embeddings_type = { "CLIPTextEmbeddings", embeddings_forward, embeddings_reset, NULL };

static mtk_module *embeddings(mtk_ctx *ctx, const clip_spec *s)
{
    mtk_module *m = mtk_module_new(ctx, &embeddings_type, 0);
    bool ok = m && mtk_module_add(m, "token_embedding", mtk_nn_embedding(ctx, s->vocab, s->hidden, -1)) &&
              mtk_module_add(m, "position_embedding", mtk_nn_embedding(ctx, s->positions, s->hidden, -1));
    if (!ok) return NULL;
    /* torch.arange(P).expand((1, -1)), non-persistent */
    mtk_tensor *ids = mtk_module_new_buffer(m, "position_ids", (int64_t[]){ 1, s->positions }, 2, MTK_INT64, false);
    return ids ? mtk_module_finish(m) : NULL;
}

/* ---------------------------------------------------------- CLIPTextModel */

/* ids (B, S) -> last_hidden_state (B, S, hidden), pooled (B, hidden) */
static bool transformer_forward(mtk_module *m, mtk_module_io *io)
{
    mtk_ctx *ctx = mtk_module_ctx(m);
    const clip_config *c = mtk_module_config(m);
    mtk_tensor *ids = io->in[0];
    if (!ids || !models_blocks_check_token_ids(m, ids, c->positions, "max_position_embeddings")) return false;
    mtk_tensor *h = mtk_module_forward(kid(m, "embeddings"), ids);
    h = mtk_module_forward(kid(m, "encoder"), h);
    h = mtk_module_forward(kid(m, "final_layer_norm"), h);
    if (!h) return false;
    /* the end-of-text position of each row: argmax of the ids (eos 2, the
       legacy rule) or of ids == eos_token_id */
    int64_t last = -1;
    mtk_tensor *eos = c->eos == 2 ? mtk_to_dtype(ctx, ids, MTK_INT32)
                                  : mtk_to_dtype(ctx, mtk_eq_scalar(ctx, ids, mtk_value_int(c->eos)), MTK_INT32);
    mtk_tensor *at = mtk_argmax(ctx, eos, &last, false); /* (B,) */
    if (!at) return false;
    int64_t b = h->shape[0], width = h->shape[2];
    at = mtk_expand(ctx, mtk_view(ctx, at, (int64_t[]){ b, 1, 1 }, 3), (int64_t[]){ b, 1, width }, 3);
    io->out[0] = h;
    io->out[1] = mtk_select(ctx, mtk_gather(ctx, h, 1, at), 1, 0);
    io->nout = 2;
    return io->out[1] != NULL;
}

static const mtk_module_type transformer_type = { "CLIPTextModel", transformer_forward, NULL, NULL };
static const mtk_module_type encoder_type = { "CLIPEncoder", models_blocks_encoder_forward, NULL, NULL };

static mtk_module *text_transformer(const model_config *c, const clip_spec *s)
{
    mtk_ctx *ctx = c->ctx;
    mtk_module *m = mtk_module_new(ctx, &transformer_type, sizeof(clip_config));
    mtk_module *encoder = mtk_module_new(ctx, &encoder_type, 0), *layers = mtk_nn_module_list(ctx);
    if (!m || !encoder || !layers) return NULL;
    *(clip_config *)mtk_module_config(m) = (clip_config){ s->heads, s->head_dim, s->positions, s->eos };
    for (int64_t i = 0; i < s->layers; i++)
        if (!mtk_nn_module_list_append(layers, layer(c, s))) return NULL;
    bool ok = mtk_module_add(encoder, "layers", layers) && mtk_module_add(m, "embeddings", embeddings(ctx, s)) &&
              mtk_module_add(m, "encoder", mtk_module_finish(encoder)) &&
              mtk_module_add(m, "final_layer_norm", mtk_nn_layer_norm(ctx, &s->hidden, 1, s->eps, true, true));
    return ok ? mtk_module_finish(m) : NULL;
}

/* ------------------------------------------------------------ the classes */

/* CLIPTextModelWithProjection: (text_embeds, last_hidden_state) */
static bool with_projection_forward(mtk_module *m, mtk_module_io *io)
{
    mtk_module_io t = { .in = { io->in[0] }, .nin = 1 };
    if (!mtk_module_call(kid(m, "text_model"), &t)) return false;
    io->out[0] = mtk_module_forward(kid(m, "text_projection"), t.out[1]);
    io->out[1] = t.out[0], io->nout = 2;
    return io->out[0] != NULL;
}

static const mtk_module_type with_projection_type = { "CLIPTextModelWithProjection", with_projection_forward, NULL, NULL };

static bool read_spec(model_config *c, clip_spec *s)
{
    memset(s, 0, sizeof *s);
    s->vocab = models_cfg_positive(c, "vocab_size", 49408);
    s->projection = models_cfg_positive(c, "projection_dim", 512);
    s->intermediate = models_cfg_positive(c, "intermediate_size", 2048);
    s->layers = models_cfg_int(c, "num_hidden_layers", 12);
    if (!models_cfg_check_layers(c, "num_hidden_layers", s->layers)) return false;
    s->positions = models_cfg_positive(c, "max_position_embeddings", 77);
    s->eps = models_blocks_eps(c, "layer_norm_eps", 1e-5);
    s->act = models_cfg_string(c, "hidden_act", "quick_gelu");
    s->eos = models_cfg_int(c, "eos_token_id", 49407);
    s->hidden = models_cfg_positive(c, "hidden_size", 512);
    s->heads = models_cfg_positive(c, "num_attention_heads", 8);
    if (!models_cfg_ok(c)) return false;
    if (s->hidden % s->heads != 0)
        return models_cfg_fail(c, "hidden_size", "hidden_size=%lld is not a multiple of num_attention_heads=%lld",
                               (long long)s->hidden, (long long)s->heads);
    s->head_dim = s->hidden / s->heads;
    return true;
}

mtk_module *models_family_clip_text_build(model_config *c, const char *architecture)
{
    clip_spec s;
    if (!read_spec(c, &s)) return NULL;
    if (strcmp(architecture, "CLIPTextModelWithProjection") != 0) return text_transformer(c, &s);
    mtk_module *m = mtk_module_new(c->ctx, &with_projection_type, 0);
    bool ok = m && mtk_module_add(m, "text_model", text_transformer(c, &s)) &&
              mtk_module_add(m, "text_projection", mtk_nn_linear(c->ctx, s.hidden, s.projection, false));
    return ok ? mtk_module_finish(m) : NULL;
}
