/* The vit family: ViTModel (with its pooler) and ViTForImageClassification
 * (no pooler; a classifier on the [CLS] token, Identity when num_labels is
 * 0), as transformers 5 builds them: patch embedding by a Conv2d of
 * kernel = stride = patch_size, a cls_token (1, 1, H) and
 * position_embeddings (1, patches + 1, H) parameter, pre-norm layers with
 * q_proj / k_proj / v_proj / o_proj attention and an fc1 / fc2 MLP.
 * (Checkpoints written by transformers 4 name these
 * encoder.layer.N.attention.attention.query ...; transformers 5 renames
 * them on load, and mtk names them as transformers 5 does.)
 *
 * Config fields (transformers' defaults): hidden_size 768,
 * num_hidden_layers 12, num_attention_heads 12, intermediate_size 3072,
 * hidden_act "gelu", hidden_dropout_prob and attention_probs_dropout_prob
 * 0, layer_norm_eps 1e-12, image_size 224 and patch_size 16 (an int or
 * [height, width]), num_channels 3, qkv_bias true, pooler_output_size
 * (hidden_size when null), pooler_act "tanh", id2label / num_labels (2).
 * The input must be num_channels x image_size pixels, as transformers
 * requires without interpolate_pos_encoding. */
#include "models/blocks.h"
#include "mtk/ops.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

typedef struct vit_spec {
    int64_t hidden, layers, heads, head_dim, intermediate, channels, labels, pooler_size;
    int64_t image[2], patch[2]; /* (height, width) */
    const char *act, *pooler_act;
    double eps, hidden_dropout, initializer_range;
    bool qkv_bias;
} vit_spec;

static mtk_module *child(mtk_module *m, int32_t i) { return blocks_child(m, i); }

/* ------------------------------------------------------------ embeddings */

typedef struct embeddings_config {
    int64_t channels, image[2];
    double initializer_range;
} embeddings_config;

/* ViTPatchEmbeddings: projection(x).flatten(2).transpose(1, 2):
 * (B, C, H, W) -> (B, patches, hidden) */
static bool patch_embeddings_forward(mtk_module *m, mtk_module_io *io)
{
    mtk_ctx *ctx = mtk_module_ctx(m);
    mtk_tensor *h = mtk_module_forward(child(m, 0), io->in[0]);
    io->out[0] = mtk_transpose(ctx, mtk_flatten(ctx, h, 2, -1), 1, 2);
    io->nout = 1;
    return io->out[0] != NULL;
}

static const mtk_module_type patch_embeddings_type = { "ViTPatchEmbeddings", patch_embeddings_forward, NULL, NULL };

/* cls_token and position_embeddings: N(0, initializer_range) (transformers
 * draws them from a truncated normal of that std). */
static bool embeddings_reset(mtk_module *m, mtk_rng *rng)
{
    const embeddings_config *c = mtk_module_config(m);
    return mtk_init_normal_(mtk_module_find_tensor(m, "cls_token"), 0.0, c->initializer_range, rng) &&
           mtk_init_normal_(mtk_module_find_tensor(m, "position_embeddings"), 0.0, c->initializer_range, rng);
}

/* pixels (B, C, H, W) -> cat(cls, patches) + position embeddings:
 * (B, patches + 1, hidden) */
static bool embeddings_forward(mtk_module *m, mtk_module_io *io)
{
    mtk_ctx *ctx = mtk_module_ctx(m);
    const embeddings_config *c = mtk_module_config(m);
    mtk_tensor *x = io->in[0];
    if (x->ndim != 4)
        return mtk_error(ctx, MTK_ERR_SHAPE,
                         "ViTEmbeddings: expects pixel values (batch, channels, height, width), got %d dim%s (try "
                         "--input Bx%lldx%lldx%lld)",
                         (int)x->ndim, x->ndim == 1 ? "" : "s", (long long)c->channels, (long long)c->image[0],
                         (long long)c->image[1]);
    if (x->shape[1] != c->channels)
        return mtk_error(ctx, MTK_ERR_SHAPE,
                         "ViTPatchEmbeddings: Make sure that the channel dimension of the pixel values match with the "
                         "one set in the configuration. Expected %lld but got %lld.",
                         (long long)c->channels, (long long)x->shape[1]);
    if (x->shape[2] != c->image[0] || x->shape[3] != c->image[1])
        return mtk_error(ctx, MTK_ERR_SHAPE, "ViTEmbeddings: Input image size (%lld*%lld) doesn't match model (%lld*%lld).",
                         (long long)x->shape[2], (long long)x->shape[3], (long long)c->image[0], (long long)c->image[1]);
    mtk_tensor *cls = mtk_module_find_tensor(m, "cls_token");
    /* pixel values of any dtype (uint8 images too) are cast to the
     * projection's dtype first, as transformers does */
    mtk_tensor *patches = mtk_module_forward(child(m, 0), mtk_to_dtype(ctx, x, cls->dtype)); /* (B, N, hidden) */
    if (!patches) return false;
    int64_t cls_shape[3] = { x->shape[0], 1, cls->shape[2] };
    mtk_tensor *parts[2] = { mtk_expand(ctx, cls, cls_shape, 3), patches };
    mtk_tensor *h = mtk_add(ctx, mtk_cat(ctx, parts, 2, 1), mtk_module_find_tensor(m, "position_embeddings"));
    io->out[0] = mtk_module_forward(child(m, 1), h);
    io->nout = 1;
    return io->out[0] != NULL;
}

static const mtk_module_type embeddings_type = { "ViTEmbeddings", embeddings_forward, embeddings_reset, NULL };

static mtk_module *embeddings(mtk_ctx *ctx, const vit_spec *s)
{
    mtk_module *m = mtk_module_new(ctx, &embeddings_type, sizeof(embeddings_config));
    mtk_module *patch = mtk_module_new(ctx, &patch_embeddings_type, 0);
    if (!m || !patch) return NULL;
    *(embeddings_config *)mtk_module_config(m) =
        (embeddings_config){ s->channels, { s->image[0], s->image[1] }, s->initializer_range };
    mtk_conv_options conv = mtk_conv_defaults();
    conv.stride[0] = s->patch[0], conv.stride[1] = s->patch[1];
    int64_t patches = (s->image[1] / s->patch[1]) * (s->image[0] / s->patch[0]);
    int64_t cls_shape[3] = { 1, 1, s->hidden }, pos_shape[3] = { 1, patches + 1, s->hidden };
    bool ok = mtk_module_add(patch, "projection", mtk_nn_conv(ctx, 2, s->channels, s->hidden, s->patch, &conv)) &&
              mtk_module_new_parameter(m, "cls_token", cls_shape, 3) &&
              mtk_module_add(m, "patch_embeddings", mtk_module_finish(patch)) &&
              mtk_module_new_parameter(m, "position_embeddings", pos_shape, 3) &&
              mtk_module_add(m, "dropout", mtk_nn_dropout(ctx, s->hidden_dropout));
    return ok ? mtk_module_finish(m) : NULL;
}

/* ----------------------------------------------------------------- layer */

typedef struct attention_config {
    int64_t heads, head_dim;
} attention_config;

/* bidirectional attention: (B, N, hidden) -> (B, N, hidden) */
static bool attention_forward(mtk_module *m, mtk_module_io *io)
{
    const attention_config *c = mtk_module_config(m);
    io->out[0] = mtk_module_forward(child(m, 3), models_blocks_qkv_attention(m, io->in[0], c->heads, c->head_dim, false, 0.0, NULL));
    io->nout = 1;
    return io->out[0] != NULL;
}

static const mtk_module_type attention_type = { "ViTAttention", attention_forward, NULL, NULL };

/* fc2(act(fc1(x))); children activation_fn, fc1, fc2 */
static bool mlp_forward(mtk_module *m, mtk_module_io *io)
{
    mtk_tensor *h = mtk_module_forward(child(m, 1), io->in[0]);
    io->out[0] = mtk_module_forward(child(m, 2), mtk_module_forward(child(m, 0), h));
    io->nout = 1;
    return io->out[0] != NULL;
}

static const mtk_module_type mlp_type = { "ViTMLP", mlp_forward, NULL, NULL };

enum { L_ATTENTION, L_NORM_BEFORE, L_NORM_AFTER, L_MLP, L_DROPOUT };

/* pre-norm residual blocks: (B, N, hidden) -> (B, N, hidden) */
static bool layer_forward(mtk_module *m, mtk_module_io *io)
{
    mtk_ctx *ctx = mtk_module_ctx(m);
    mtk_tensor *x = io->in[0];
    mtk_tensor *h = mtk_module_forward(child(m, L_ATTENTION), mtk_module_forward(child(m, L_NORM_BEFORE), x));
    x = mtk_add(ctx, mtk_module_forward(child(m, L_DROPOUT), h), x);
    h = mtk_module_forward(child(m, L_MLP), mtk_module_forward(child(m, L_NORM_AFTER), x));
    io->out[0] = mtk_add(ctx, mtk_module_forward(child(m, L_DROPOUT), h), x);
    io->nout = 1;
    return io->out[0] != NULL;
}

static const mtk_module_type layer_type = { "ViTLayer", layer_forward, NULL, NULL };

static mtk_module *layer(const model_config *c, const vit_spec *s)
{
    mtk_ctx *ctx = c->ctx;
    int64_t all_heads = s->heads * s->head_dim;
    mtk_module *attn = mtk_module_new(ctx, &attention_type, sizeof(attention_config));
    if (!attn) return NULL;
    *(attention_config *)mtk_module_config(attn) = (attention_config){ s->heads, s->head_dim };
    bool ok = mtk_module_add(attn, "q_proj", mtk_nn_linear(ctx, s->hidden, all_heads, s->qkv_bias)) &&
              mtk_module_add(attn, "k_proj", mtk_nn_linear(ctx, s->hidden, all_heads, s->qkv_bias)) &&
              mtk_module_add(attn, "v_proj", mtk_nn_linear(ctx, s->hidden, all_heads, s->qkv_bias)) &&
              mtk_module_add(attn, "o_proj", mtk_nn_linear(ctx, all_heads, s->hidden, true));
    mtk_module *mlp = ok ? mtk_module_new(ctx, &mlp_type, 0) : NULL;
    ok = mlp && mtk_module_add(mlp, "activation_fn", models_blocks_activation(c, "hidden_act", s->act)) &&
         mtk_module_add(mlp, "fc1", mtk_nn_linear(ctx, s->hidden, s->intermediate, true)) &&
         mtk_module_add(mlp, "fc2", mtk_nn_linear(ctx, s->intermediate, s->hidden, true));
    mtk_module *m = ok ? mtk_module_new(ctx, &layer_type, 0) : NULL;
    ok = m && mtk_module_add(m, "attention", mtk_module_finish(attn)) &&
         mtk_module_add(m, "layernorm_before", mtk_nn_layer_norm(ctx, &s->hidden, 1, s->eps, true, true)) &&
         mtk_module_add(m, "layernorm_after", mtk_nn_layer_norm(ctx, &s->hidden, 1, s->eps, true, true)) &&
         mtk_module_add(m, "mlp", mtk_module_finish(mlp)) &&
         mtk_module_add(m, "dropout", mtk_nn_dropout(ctx, s->hidden_dropout));
    return ok ? mtk_module_finish(m) : NULL;
}

/* -------------------------------------------------------------- ViTModel */

/* act(dense(h[:, 0])): (B, N, hidden) -> (B, pooler_output_size) */
static bool pooler_forward(mtk_module *m, mtk_module_io *io)
{
    mtk_tensor *first = mtk_select(mtk_module_ctx(m), io->in[0], 1, 0);
    io->out[0] = mtk_module_forward(child(m, 1), mtk_module_forward(child(m, 0), first));
    io->nout = 1;
    return io->out[0] != NULL;
}

static const mtk_module_type pooler_type = { "ViTPooler", pooler_forward, NULL, NULL };

enum { M_EMBEDDINGS, M_LAYERS, M_LAYERNORM, M_POOLER };

/* pixels (B, C, H, W) -> last hidden state (B, N + 1, hidden)
 * [, pooler output (B, pooler_output_size)] */
static bool model_forward(mtk_module *m, mtk_module_io *io)
{
    mtk_tensor *h = mtk_module_forward(child(m, M_EMBEDDINGS), io->in[0]);
    h = models_blocks_run_layers(child(m, M_LAYERS), h);
    h = mtk_module_forward(child(m, M_LAYERNORM), h);
    io->out[0] = h;
    io->nout = 1;
    if (mtk_module_child_count(m) > M_POOLER) {
        io->out[1] = mtk_module_forward(child(m, M_POOLER), h);
        io->nout = 2;
    }
    return io->out[0] && io->out[io->nout - 1];
}

static const mtk_module_type model_type = { "ViTModel", model_forward, NULL, NULL };

static mtk_module *vit_model(const model_config *c, const vit_spec *s, bool pooler)
{
    mtk_ctx *ctx = c->ctx;
    mtk_module *m = mtk_module_new(ctx, &model_type, 0);
    mtk_module *layers = mtk_nn_module_list(ctx);
    if (!m || !layers) return NULL;
    for (int64_t i = 0; i < s->layers; i++)
        if (!mtk_nn_module_list_append(layers, layer(c, s))) return NULL;
    bool ok = mtk_module_add(m, "embeddings", embeddings(ctx, s)) && mtk_module_add(m, "layers", layers) &&
              mtk_module_add(m, "layernorm", mtk_nn_layer_norm(ctx, &s->hidden, 1, s->eps, true, true));
    if (ok && pooler) {
        mtk_module *p = mtk_module_new(ctx, &pooler_type, 0);
        ok = p && mtk_module_add(p, "dense", mtk_nn_linear(ctx, s->hidden, s->pooler_size, true)) &&
             mtk_module_add(p, "activation", models_blocks_activation(c, "pooler_act", s->pooler_act)) &&
             mtk_module_add(m, "pooler", mtk_module_finish(p));
    }
    return ok ? mtk_module_finish(m) : NULL;
}

/* -------------------------------------------- ViTForImageClassification */

/* pixels (B, C, H, W) -> logits (B, num_labels) from the [CLS] token */
static bool classification_forward(mtk_module *m, mtk_module_io *io)
{
    mtk_tensor *h = mtk_module_forward(child(m, 0), io->in[0]);
    mtk_tensor *first = mtk_select(mtk_module_ctx(m), h, 1, 0);
    io->out[0] = mtk_module_forward(child(m, 1), first);
    io->nout = 1;
    return io->out[0] != NULL;
}

static const mtk_module_type classification_type = { "ViTForImageClassification", classification_forward, NULL,
                                                     NULL };

/* --------------------------------------------------------------- config */

/* image_size / patch_size: an int, or [height, width]. */
static bool read_size_pair(model_config *c, const char *key, int64_t dflt, int64_t out[2])
{
    const cJSON *item = models_cfg_get(c, key);
    if (item && cJSON_IsArray(item)) {
        int32_t n = models_cfg_int_list(c, key, out, 2);
        if (models_cfg_ok(c) && (n != 2 || cJSON_GetArraySize(item) != 2))
            return models_cfg_fail(c, key, "expected an integer or a list of two integers");
    } else {
        out[0] = out[1] = models_cfg_int(c, key, dflt);
    }
    if (!models_cfg_ok(c)) return false;
    if (out[0] <= 0 || out[1] <= 0)
        return models_cfg_fail(c, key, "sizes must be positive, got %lld x %lld", (long long)out[0], (long long)out[1]);
    return true;
}

static bool read_spec(model_config *c, vit_spec *s)
{
    memset(s, 0, sizeof *s);
    s->hidden = models_cfg_positive(c, "hidden_size", 768);
    s->heads = models_cfg_positive(c, "num_attention_heads", 12);
    s->layers = models_cfg_int(c, "num_hidden_layers", 12);
    if (!models_cfg_check_layers(c, "num_hidden_layers", s->layers)) return false;
    s->intermediate = models_cfg_positive(c, "intermediate_size", 3072);
    s->channels = models_cfg_positive(c, "num_channels", 3);
    s->act = models_cfg_string(c, "hidden_act", "gelu");
    s->pooler_act = models_cfg_string(c, "pooler_act", "tanh");
    s->eps = models_blocks_eps(c, "layer_norm_eps", 1e-12);
    s->hidden_dropout = models_blocks_dropout(c, "hidden_dropout_prob", 0.0);
    s->initializer_range = models_cfg_float(c, "initializer_range", 0.02);
    s->qkv_bias = models_cfg_bool(c, "qkv_bias", true);
    s->labels = models_blocks_num_labels(c);
    s->pooler_size = models_cfg_has(c, "pooler_output_size") ? models_cfg_positive(c, "pooler_output_size", 0) : s->hidden;
    if (!models_cfg_ok(c) || !read_size_pair(c, "image_size", 224, s->image) || !read_size_pair(c, "patch_size", 16, s->patch))
        return false;
    if (models_cfg_has(c, "head_dim")) {
        s->head_dim = models_cfg_positive(c, "head_dim", 0);
    } else {
        if (s->hidden % s->heads != 0)
            return models_cfg_fail(c, "hidden_size", "hidden_size=%lld is not a multiple of num_attention_heads=%lld (and no "
                            "head_dim is given)", (long long)s->hidden, (long long)s->heads);
        s->head_dim = s->hidden / s->heads;
    }
    if (s->image[0] < s->patch[0] || s->image[1] < s->patch[1])
        return models_cfg_fail(c, "patch_size", "a %lld x %lld patch does not fit a %lld x %lld image", (long long)s->patch[0],
                        (long long)s->patch[1], (long long)s->image[0], (long long)s->image[1]);
    return models_cfg_ok(c);
}

mtk_module *models_family_vit_build(model_config *c, const char *architecture)
{
    vit_spec s;
    if (!read_spec(c, &s)) return NULL;
    if (strcmp(architecture, "ViTForImageClassification") != 0) return vit_model(c, &s, true);
    mtk_ctx *ctx = c->ctx;
    mtk_module *m = mtk_module_new(ctx, &classification_type, 0);
    mtk_module *classifier =
        s.labels > 0 ? mtk_nn_linear(ctx, s.hidden, s.labels, true) : mtk_nn_identity(ctx);
    bool ok = m && mtk_module_add(m, "vit", vit_model(c, &s, false)) && mtk_module_add(m, "classifier", classifier);
    return ok ? mtk_module_finish(m) : NULL;
}
