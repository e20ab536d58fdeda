/* The modernbert family, as transformers 5 builds it:
 *
 *   ModernBertModel          embeddings (tok_embeddings, norm, drop), layers,
 *                            final_norm, rotary_emb
 *   ModernBertForMaskedLM    model, head (dense, act, norm), decoder (weight
 *                            tied to the token embeddings when
 *                            tie_word_embeddings; bias per decoder_bias)
 *   ModernBertForSequenceClassification  model, head, drop, classifier on
 *                            the first token ("cls") or the mean of all
 *                            ("mean" pooling)
 *   ModernBertForTokenClassification     model, head, drop, classifier
 *
 * A layer is pre-norm: attn_norm (an Identity in layer 0), attn (fused
 * Wqkv, rope, bidirectional attention, Wo, out_drop), mlp_norm, mlp (GeGLU:
 * Wi to twice intermediate_size, act(input) * gate, drop, Wo).  Layers
 * alternate global and local attention: layer i is global when i is a
 * multiple of global_attn_every_n_layers (or as layer_types lists); local
 * layers see the tokens within local_attention / 2 of their own and rotate
 * with local_rope_theta, global ones with global_rope_theta.  The rotary
 * module holds non-persistent float32 buffers <type>_inv_freq and
 * <type>_original_inv_freq for each layer type present.
 *
 * Config fields (ModernBertConfig's defaults): vocab_size 50368,
 * hidden_size 768, intermediate_size 1152, num_hidden_layers 22,
 * num_attention_heads 12, hidden_activation "gelu", norm_eps 1e-5,
 * norm_bias false, pad_token_id 50283, attention_bias false, mlp_bias
 * false, attention/embedding/mlp/classifier_dropout 0, local_attention 128,
 * global_attn_every_n_layers 3, layer_types, global_rope_theta 160000,
 * local_rope_theta 10000 (or rope_parameters per layer type, "default"
 * rope only), decoder_bias true, classifier_bias false,
 * classifier_activation "gelu", classifier_pooling "cls",
 * tie_word_embeddings true, id2label / num_labels (2). */
#include "models/blocks.h"
#include "mtk/ops.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

enum { FULL, SLIDING, LAYER_TYPES };
static const char *const layer_type_names[LAYER_TYPES] = { "full_attention", "sliding_attention" };

typedef struct modernbert_spec {
    int64_t vocab, hidden, layers, heads, head_dim, intermediate, labels, padding_idx;
    int64_t half_window;           /* local_attention // 2                        */
    const char *act, *classifier_act;
    double eps, attention_dropout, embedding_dropout, mlp_dropout, classifier_dropout;
    double theta[LAYER_TYPES];     /* rope_theta per layer type                   */
    bool norm_bias, attention_bias, mlp_bias, decoder_bias, classifier_bias, tie, mean_pooling;
    bool present[LAYER_TYPES];     /* which layer types some layer has            */
    uint8_t *layer_type;           /* per layer: FULL or SLIDING (arena)          */
} modernbert_spec;

static mtk_module *child(mtk_module *m, int32_t i) { return blocks_child(m, i); }

static mtk_module *norm(mtk_ctx *ctx, const modernbert_spec *s)
{
    return mtk_nn_layer_norm(ctx, &s->hidden, 1, s->eps, true, s->norm_bias);
}

/* ------------------------------------------------------------ embeddings */

/* drop(norm(tok_embeddings(ids))): (B, S) -> (B, S, H) */
static bool chain_forward(mtk_module *m, mtk_module_io *io)
{
    mtk_tensor *h = io->in[0];
    for (int32_t i = 0; h && i < mtk_module_child_count(m); i++) h = mtk_module_forward(child(m, i), h);
    io->out[0] = h;
    io->nout = 1;
    return h != NULL;
}

static const mtk_module_type embeddings_type = { "ModernBertEmbeddings", chain_forward, NULL, NULL };

static mtk_module *embeddings(mtk_ctx *ctx, const modernbert_spec *s)
{
    mtk_module *m = mtk_module_new(ctx, &embeddings_type, 0);
    bool ok = m && mtk_module_add(m, "tok_embeddings", mtk_nn_embedding(ctx, s->vocab, s->hidden, s->padding_idx)) &&
              mtk_module_add(m, "norm", norm(ctx, s)) && mtk_module_add(m, "drop", mtk_nn_dropout(ctx, s->embedding_dropout));
    return ok ? mtk_module_finish(m) : NULL;
}

/* ---------------------------------------------------------------- rotary */

typedef struct rotary_config {
    int64_t dim;
    double theta[LAYER_TYPES];
    bool present[LAYER_TYPES];
} rotary_config;

/* The buffers' layer type, in registration order (2 per present type). */
static int32_t buffer_layer_type(const rotary_config *c, int32_t buffer)
{
    int32_t seen = 0;
    for (int32_t t = 0; t < LAYER_TYPES; t++)
        if (c->present[t] && seen++ == buffer / 2) return t;
    return FULL;
}

/* inv_freq = 1 / theta ** (arange(0, dim, 2) / dim), in float32, per type. */
static bool rotary_reset(mtk_module *m, mtk_rng *rng)
{
    (void)rng;
    const rotary_config *c = mtk_module_config(m);
    for (int32_t i = 0; i < mtk_module_buffer_count(m); i++) {
        mtk_tensor *t = mtk_module_buffer_at(m, i, NULL, NULL);
        if (!t || mtk_tensor_is_meta(t) || t->dtype != MTK_FLOAT32 || !mtk_tensor_is_contiguous(t)) continue;
        float *out = mtk_tensor_data(t);
        float base = (float)c->theta[buffer_layer_type(c, i)];
        for (int64_t k = 0; k < c->dim / 2; k++) out[k] = 1.0f / powf(base, (float)(2 * k) / (float)c->dim);
    }
    return true;
}

/* forward(x (B, S, H)[, position_ids (1, S) int64]) -> cos, sin (1, S,
 * head_dim) in x's dtype for each present layer type in turn (full
 * first); positions 0..S-1 made here when not given. */
static bool rotary_forward(mtk_module *m, mtk_module_io *io)
{
    mtk_ctx *ctx = mtk_module_ctx(m);
    mtk_tensor *x = io->in[0];
    mtk_tensor *positions = io->nin > 1 ? io->in[1]
                                        : mtk_unsqueeze(ctx, models_blocks_positions(ctx, x->shape[1], x), 0); /* (1, S) */
    positions = mtk_unsqueeze(ctx, mtk_to_dtype(ctx, positions, MTK_FLOAT32), -1); /* (1, S, 1) */
    io->nout = 0;
    for (int32_t i = 0; i + 1 < mtk_module_buffer_count(m); i += 2) {
        mtk_tensor *inv_freq = mtk_module_buffer_at(m, i, NULL, NULL);
        mtk_tensor *freqs = mtk_mul(ctx, positions, inv_freq); /* (1, S, dim / 2) */
        mtk_tensor *both[2] = { freqs, freqs };
        mtk_tensor *emb = mtk_cat(ctx, both, 2, -1);          /* (1, S, dim)     */
        io->out[io->nout++] = mtk_to_dtype(ctx, mtk_cos(ctx, emb), x->dtype);
        io->out[io->nout++] = mtk_to_dtype(ctx, mtk_sin(ctx, emb), x->dtype);
    }
    for (int32_t i = 0; i < io->nout; i++)
        if (!io->out[i]) return false;
    return io->nout > 0;
}

static const mtk_module_type rotary_type = { "ModernBertRotaryEmbedding", rotary_forward, rotary_reset, NULL };

static mtk_module *rotary(mtk_ctx *ctx, const modernbert_spec *s)
{
    mtk_module *m = mtk_module_new(ctx, &rotary_type, sizeof(rotary_config));
    if (!m) return NULL;
    rotary_config *c = mtk_module_config(m);
    c->dim = s->head_dim;
    int64_t half = s->head_dim / 2;
    for (int32_t t = 0; t < LAYER_TYPES; t++) {
        c->theta[t] = s->theta[t];
        c->present[t] = s->present[t];
        if (!s->present[t]) continue;
        char name[64], original[64];
        snprintf(name, sizeof name, "%s_inv_freq", layer_type_names[t]);
        snprintf(original, sizeof original, "%s_original_inv_freq", layer_type_names[t]);
        if (!mtk_module_new_buffer(m, name, &half, 1, MTK_FLOAT32, false) ||
            !mtk_module_new_buffer(m, original, &half, 1, MTK_FLOAT32, false))
            return NULL;
    }
    return mtk_module_finish(m);
}

/* ------------------------------------------------------------- attention */

typedef struct attention_config {
    int64_t heads, head_dim;
    double dropout;
} attention_config;

/* forward(x (B, S, H), cos, sin (1, S, head_dim)[, mask (B, 1, S, S) bool])
 * -> out_drop(Wo(attention)) (B, S, H) */
static bool attention_forward(mtk_module *m, mtk_module_io *io)
{
    mtk_ctx *ctx = mtk_module_ctx(m);
    const attention_config *c = mtk_module_config(m);
    mtk_tensor *x = io->in[0];
    int64_t b = x->shape[0], seq = x->shape[1];
    int64_t split[5] = { b, seq, 3, c->heads, c->head_dim };
    mtk_tensor *qkv = mtk_view(ctx, mtk_module_forward(child(m, 0), x), split, 5); /* (B, S, 3, n, d) */
    mtk_tensor *q = mtk_transpose(ctx, mtk_select(ctx, qkv, 2, 0), 1, 2);            /* (B, n, S, d)    */
    mtk_tensor *k = mtk_transpose(ctx, mtk_select(ctx, qkv, 2, 1), 1, 2);
    mtk_tensor *v = mtk_transpose(ctx, mtk_select(ctx, qkv, 2, 2), 1, 2);
    q = mtk_rope(ctx, q, io->in[1], io->in[2], false);
    k = mtk_rope(ctx, k, io->in[1], io->in[2], false);
    mtk_tensor *mask = io->nin > 3 ? io->in[3] : NULL;
    double p = mtk_module_is_training(m) ? c->dropout : 0.0;
    mtk_tensor *attn = mtk_scaled_dot_product_attention(ctx, q, k, v, mask, p, false,
                                                        1.0 / sqrt((double)c->head_dim), false); /* (B, n, S, d) */
    int64_t merged[3] = { b, seq, c->heads * c->head_dim };
    attn = mtk_reshape(ctx, mtk_transpose(ctx, attn, 1, 2), merged, 3); /* (B, S, H) */
    io->out[0] = mtk_module_forward(child(m, 2), mtk_module_forward(child(m, 1), attn));
    io->nout = 1;
    return io->out[0] != NULL;
}

static const mtk_module_type attention_type = { "ModernBertAttention", attention_forward, NULL, NULL };

static mtk_module *attention(mtk_ctx *ctx, const modernbert_spec *s)
{
    mtk_module *m = mtk_module_new(ctx, &attention_type, sizeof(attention_config));
    if (!m) return NULL;
    *(attention_config *)mtk_module_config(m) = (attention_config){ s->heads, s->head_dim, s->attention_dropout };
    /* out_drop is an Identity when attention_dropout is 0 */
    mtk_module *drop = s->attention_dropout > 0 ? mtk_nn_dropout(ctx, s->attention_dropout) : mtk_nn_identity(ctx);
    bool ok = mtk_module_add(m, "Wqkv", mtk_nn_linear(ctx, s->hidden, 3 * s->hidden, s->attention_bias)) &&
              mtk_module_add(m, "Wo", mtk_nn_linear(ctx, s->hidden, s->hidden, s->attention_bias)) &&
              mtk_module_add(m, "out_drop", drop);
    return ok ? mtk_module_finish(m) : NULL;
}

/* ------------------------------------------------------------------- MLP */

/* Wo(drop(act(input) * gate)), input and gate the halves of Wi(x):
 * (B, S, H) -> (B, S, H) */
static bool mlp_forward(mtk_module *m, mtk_module_io *io)
{
    mtk_ctx *ctx = mtk_module_ctx(m);
    mtk_tensor *wi = mtk_module_forward(child(m, 0), io->in[0]); /* (B, S, 2I) */
    if (!wi) return false;
    int64_t inter = wi->shape[2] / 2;
    mtk_tensor *input = mtk_narrow(ctx, wi, -1, 0, inter), *gate = mtk_narrow(ctx, wi, -1, inter, inter);
    mtk_tensor *h = mtk_mul(ctx, mtk_module_forward(child(m, 1), input), gate);
    io->out[0] = mtk_module_forward(child(m, 3), mtk_module_forward(child(m, 2), h));
    io->nout = 1;
    return io->out[0] != NULL;
}

static const mtk_module_type mlp_type = { "ModernBertMLP", mlp_forward, NULL, NULL };

static mtk_module *mlp(const model_config *c, const modernbert_spec *s)
{
    mtk_ctx *ctx = c->ctx;
    mtk_module *m = mtk_module_new(ctx, &mlp_type, 0);
    bool ok = m && mtk_module_add(m, "Wi", mtk_nn_linear(ctx, s->hidden, 2 * s->intermediate, s->mlp_bias)) &&
              mtk_module_add(m, "act", models_blocks_activation(c, "hidden_activation", s->act)) &&
              mtk_module_add(m, "drop", mtk_nn_dropout(ctx, s->mlp_dropout)) &&
              mtk_module_add(m, "Wo", mtk_nn_linear(ctx, s->intermediate, s->hidden, s->mlp_bias));
    return ok ? mtk_module_finish(m) : NULL;
}

/* ----------------------------------------------------------------- layer */

/* forward(h, cos, sin[, mask]): h + attn(attn_norm(h)), then
 * + mlp(mlp_norm(.)): (B, S, H) -> (B, S, H).  The local attn_output
 * lives until it returns. */
static bool layer_forward(mtk_module *m, mtk_module_io *io)
{
    mtk_ctx *ctx = mtk_module_ctx(m);
    mtk_module_io a = { .in = { mtk_module_forward(child(m, 0), io->in[0]), io->in[1], io->in[2], io->in[3] },
                        .nin = io->nin };
    if (!a.in[0] || !mtk_module_call(child(m, 1), &a)) return false;
    mtk_tensor *h = mtk_add(ctx, io->in[0], a.out[0]);
    io->out[0] = mtk_add(ctx, h, mtk_module_forward(child(m, 3), mtk_module_forward(child(m, 2), h)));
    io->nout = 1;
    return io->out[0] != NULL && models_blocks_held_until_here(ctx, a.out[0]);
}

static const mtk_module_type layer_type = { "ModernBertEncoderLayer", layer_forward, NULL, NULL };

static mtk_module *layer(const model_config *c, const modernbert_spec *s, int64_t index)
{
    mtk_ctx *ctx = c->ctx;
    mtk_module *m = mtk_module_new(ctx, &layer_type, 0);
    bool ok = m && mtk_module_add(m, "attn_norm", index == 0 ? mtk_nn_identity(ctx) : norm(ctx, s)) &&
              mtk_module_add(m, "attn", attention(ctx, s)) && mtk_module_add(m, "mlp_norm", norm(ctx, s)) &&
              mtk_module_add(m, "mlp", mlp(c, s));
    return ok ? mtk_module_finish(m) : NULL;
}

/* ----------------------------------------------------------------- model */

typedef struct model_config_ {
    int64_t half_window;
    bool present[LAYER_TYPES];
    uint8_t layer_type[]; /* per layer */
} model_config_;

/* create_bidirectional_sliding_window_mask: token i sees token j when
 * |i - j| <= half_window; (1, 1, S, S) bool on x's device, expanded to
 * (B, 1, S, S) as sdpa_mask returns it. */
static mtk_tensor *sliding_mask(mtk_ctx *ctx, const mtk_tensor *x, int64_t half_window)
{
    int64_t seq = x->shape[1];
    mtk_tensor *q = mtk_unsqueeze(ctx, models_blocks_positions(ctx, seq, x), 1); /* (S, 1) */
    mtk_tensor *kv = models_blocks_positions(ctx, seq, x);                        /* (S)    */
    mtk_tensor *near = mtk_le_scalar(ctx, mtk_abs(ctx, mtk_sub(ctx, q, kv)), mtk_value_int(half_window));
    int64_t shape[4] = { 1, 1, seq, seq }, batch[4] = { x->shape[0], 1, seq, seq };
    return mtk_expand(ctx, mtk_view(ctx, near, shape, 4), batch, 4);
}

/* input_ids (B, S)[, attention_mask (B, S)] -> last hidden state (B, S,
 * H); padding (a 0 in the mask) hides those keys from every layer, and-ed
 * with the local layers' window.  Its locals
 * position_ids and the masks' mapping (both masks, whichever layer types
 * are present) live until it returns. */
static bool model_forward(mtk_module *m, mtk_module_io *io)
{
    mtk_ctx *ctx = mtk_module_ctx(m);
    const model_config_ *c = mtk_module_config(m);
    if (!models_blocks_check_token_ids(m, io->in[0], 0, NULL)) return false;
    mtk_module *layers = child(m, 1);
    mtk_tensor *positions = mtk_unsqueeze(ctx, models_blocks_positions(ctx, io->in[0]->shape[1], io->in[0]), 0);
    mtk_tensor *h = mtk_module_forward(child(m, 0), io->in[0]);
    if (!h || !positions) return false;
    /* the local layers' mask: sdpa skips it only for fewer keys than the
     * half window (_ignore_bidirectional_mask_sdpa), even where every token
     * is within reach */
    mtk_tensor *mask = h->shape[1] >= c->half_window ? sliding_mask(ctx, h, c->half_window) : NULL;
    bool failed;
    mtk_tensor *padding = models_blocks_bidirectional_mask(ctx, io->nin > 1 ? io->in[1] : NULL, &failed);
    if (failed) return false;
    if (padding && mask) mask = mtk_logical_and(ctx, mask, padding);
    else if (padding) mask = padding;
    mtk_module_io rope = { .in = { h, positions }, .nin = 2 };
    if ((c->present[FULL] || c->present[SLIDING]) && !mtk_module_call(child(m, 3), &rope)) return false;
    mtk_tensor *cos[LAYER_TYPES], *sin[LAYER_TYPES];
    for (int32_t t = 0, at = 0; t < LAYER_TYPES; t++) {
        cos[t] = c->present[t] ? rope.out[at] : NULL;
        sin[t] = c->present[t] ? rope.out[at + 1] : NULL;
        if (c->present[t]) at += 2;
    }
    for (int32_t i = 0; h && i < mtk_module_child_count(layers); i++) {
        int32_t t = c->layer_type[i];
        mtk_tensor *layer_mask = t == SLIDING ? mask : padding;
        mtk_module_io l = { .in = { h, cos[t], sin[t], layer_mask }, .nin = layer_mask ? 4 : 3 };
        h = mtk_module_call(child(layers, i), &l) ? l.out[0] : NULL;
    }
    io->out[0] = mtk_module_forward(child(m, 2), h);
    io->nout = 1;
    return io->out[0] != NULL && models_blocks_held_until_here(ctx, positions) &&
           models_blocks_held_until_here(ctx, mask);
}

static const mtk_module_type model_type = { "ModernBertModel", model_forward, NULL, NULL };

static mtk_module *base_model(const model_config *c, const modernbert_spec *s)
{
    mtk_ctx *ctx = c->ctx;
    mtk_module *layers = mtk_nn_module_list(ctx);
    if (!layers) return NULL;
    for (int64_t i = 0; i < s->layers; i++)
        if (!mtk_nn_module_list_append(layers, layer(c, s, i))) return NULL;
    mtk_module *m = mtk_module_new(ctx, &model_type, sizeof(model_config_) + (size_t)s->layers);
    if (!m) return NULL;
    model_config_ *mc = mtk_module_config(m);
    mc->half_window = s->half_window;
    memcpy(mc->present, s->present, sizeof mc->present);
    memcpy(mc->layer_type, s->layer_type, (size_t)s->layers);
    bool ok = mtk_module_add(m, "embeddings", embeddings(ctx, s)) && mtk_module_add(m, "layers", layers) &&
              mtk_module_add(m, "final_norm", norm(ctx, s)) && mtk_module_add(m, "rotary_emb", rotary(ctx, s));
    return ok ? mtk_module_finish(m) : NULL;
}

/* ----------------------------------------------------------------- heads */

static const mtk_module_type head_type = { "ModernBertPredictionHead", chain_forward, NULL, NULL };

/* ModernBertPredictionHead: norm(act(dense(h))) */
static mtk_module *prediction_head(const model_config *c, const modernbert_spec *s)
{
    mtk_ctx *ctx = c->ctx;
    mtk_module *m = mtk_module_new(ctx, &head_type, 0);
    bool ok = m && mtk_module_add(m, "dense", mtk_nn_linear(ctx, s->hidden, s->hidden, s->classifier_bias)) &&
              mtk_module_add(m, "act", models_blocks_activation(c, "classifier_activation", s->classifier_act)) &&
              mtk_module_add(m, "norm", norm(ctx, s));
    return ok ? mtk_module_finish(m) : NULL;
}

typedef struct task_config {
    bool pool;         /* sequence classification: pool before the head */
    bool mean_pooling; /* "mean" (else "cls")                           */
} task_config;

/* The mean over the sequence as transformers computes it: (h * mask)
 * summed over S, divided by the mask's count; no mask: ones (B, S) bool.
 * (B, S, H) -> (B, H) */
static mtk_tensor *mean_pool(mtk_ctx *ctx, mtk_tensor *h, mtk_tensor *mask)
{
    if (!h || !mtk_ctx_push_device(ctx, h->device)) return NULL;
    mtk_tensor *ones = mask ? mask : mtk_ones(ctx, h->shape, 2, MTK_BOOL); /* (B, S) */
    mtk_ctx_pop_device(ctx);
    int64_t dim = 1;
    mtk_tensor *sum = mtk_sum(ctx, mtk_mul(ctx, h, mtk_unsqueeze(ctx, ones, -1)), &dim, 1, false, MTK_DTYPE_UNDEFINED);
    return mtk_div(ctx, sum, mtk_sum(ctx, ones, &dim, 1, true, MTK_DTYPE_UNDEFINED));
}

/* model, head, then (masked LM) decoder or (classification) drop,
 * classifier: input_ids (B, S)[, attention_mask (B, S), passed to the
 * model and to mean pooling] -> logits */
static bool task_forward(mtk_module *m, mtk_module_io *io)
{
    mtk_ctx *ctx = mtk_module_ctx(m);
    const task_config *c = mtk_module_config(m);
    mtk_module_io base = { .in = { io->in[0], io->nin > 1 ? io->in[1] : NULL }, .nin = io->nin > 1 ? 2 : 1 };
    mtk_tensor *h = mtk_module_call(child(m, 0), &base) ? base.out[0] : NULL;
    if (c->pool) h = c->mean_pooling ? mean_pool(ctx, h, io->nin > 1 ? io->in[1] : NULL) : mtk_select(ctx, h, 1, 0);
    h = mtk_module_forward(child(m, 1), h);
    for (int32_t i = 2; h && i < mtk_module_child_count(m); i++) h = mtk_module_forward(child(m, i), h);
    io->out[0] = h;
    io->nout = 1;
    return h != NULL;
}

static const mtk_module_type masked_lm_type = { "ModernBertForMaskedLM", task_forward, NULL, NULL };
static const mtk_module_type sequence_type = { "ModernBertForSequenceClassification", task_forward, NULL, NULL };
static const mtk_module_type token_type = { "ModernBertForTokenClassification", task_forward, NULL, NULL };

static mtk_module *task_model(const model_config *c, const modernbert_spec *s, const mtk_module_type *type)
{
    mtk_ctx *ctx = c->ctx;
    mtk_module *m = mtk_module_new(ctx, type, sizeof(task_config));
    if (!m) return NULL;
    *(task_config *)mtk_module_config(m) = (task_config){ type == &sequence_type, s->mean_pooling };
    bool ok = mtk_module_add(m, "model", base_model(c, s)) && mtk_module_add(m, "head", prediction_head(c, s));
    if (ok && type == &masked_lm_type) {
        ok = mtk_module_add(m, "decoder", mtk_nn_linear(ctx, s->hidden, s->vocab, s->decoder_bias));
        if (ok && s->tie) ok = mtk_module_tie(m, "decoder.weight", "model.embeddings.tok_embeddings.weight");
    } else if (ok) {
        ok = mtk_module_add(m, "drop", mtk_nn_dropout(ctx, s->classifier_dropout)) &&
             mtk_module_add(m, "classifier", mtk_nn_linear(ctx, s->hidden, s->labels, true));
    }
    return ok ? mtk_module_finish(m) : NULL;
}

/* --------------------------------------------------------------- config */

/* rope_theta of a layer type: rope_parameters.<type>.rope_theta (rope
 * type "default" only), else the legacy field. */
static bool read_theta(model_config *c, modernbert_spec *s, int32_t t, const char *legacy, double dflt)
{
    s->theta[t] = models_cfg_float(c, legacy, dflt);
    const cJSON *params = models_cfg_get(c, "rope_parameters");
    const cJSON *scaling = models_cfg_get(c, "rope_scaling");
    char name[64];
    snprintf(name, sizeof name, "rope_parameters.%s", layer_type_names[t]);
    const cJSON *obj = params && cJSON_IsObject(params) ? cJSON_GetObjectItemCaseSensitive(params, layer_type_names[t])
                                                        : NULL;
    if (obj && cJSON_IsNull(obj)) obj = NULL;
    if (obj && !cJSON_IsObject(obj)) return models_cfg_fail(c, name, "expected an object");
    s->theta[t] = models_cfg_obj_float(c, obj, name, "rope_theta", s->theta[t]);
    const char *type = models_cfg_obj_string(c, obj, name, "rope_type", "default");
    if (scaling && cJSON_IsObject(scaling)) {
        type = models_cfg_obj_string(c, scaling, "rope_scaling", "type", type);
        type = models_cfg_obj_string(c, scaling, "rope_scaling", "rope_type", type);
    }
    if (!models_cfg_ok(c)) return false;
    if (strcmp(type, "default") != 0)
        return mtk_error(c->ctx, MTK_ERR_NOT_IMPLEMENTED,
                         "%s: field '%s.rope_type': rope type '%s' is not supported for modernbert (supported: default)",
                         c->origin, name, type);
    if (!(s->theta[t] > 0)) return models_cfg_fail(c, name, "rope_theta must be positive, got %g", s->theta[t]);
    return true;
}

/* layer_types, or every global_attn_every_n_layers-th layer global. */
static bool read_layer_types(model_config *c, modernbert_spec *s)
{
    int64_t every = models_cfg_positive(c, "global_attn_every_n_layers", 3);
    if (!models_cfg_ok(c)) return false;
    s->layer_type = mtk_ctx_alloc(c->ctx, (size_t)s->layers + 1);
    if (!s->layer_type) return false;
    const cJSON *types = models_cfg_get(c, "layer_types");
    if (types && (!cJSON_IsArray(types) || cJSON_GetArraySize(types) != s->layers))
        return models_cfg_fail(c, "layer_types", "must be a list of num_hidden_layers=%lld strings", (long long)s->layers);
    for (int64_t i = 0; i < s->layers; i++) {
        if (types) {
            const cJSON *t = cJSON_GetArrayItem(types, (int)i);
            bool full = cJSON_IsString(t) && strcmp(t->valuestring, "full_attention") == 0;
            if (!full && !(cJSON_IsString(t) && strcmp(t->valuestring, "sliding_attention") == 0))
                return models_cfg_fail(c, "layer_types", "item %lld is not \"full_attention\" or \"sliding_attention\"",
                                       (long long)i);
            s->layer_type[i] = full ? FULL : SLIDING;
        } else {
            s->layer_type[i] = i % every ? SLIDING : FULL;
        }
        s->present[s->layer_type[i]] = true;
    }
    return true;
}

static bool read_spec(model_config *c, modernbert_spec *s)
{
    memset(s, 0, sizeof *s);
    s->vocab = models_cfg_positive(c, "vocab_size", 50368);
    s->hidden = models_cfg_positive(c, "hidden_size", 768);
    s->intermediate = models_cfg_positive(c, "intermediate_size", 1152);
    s->layers = models_cfg_int(c, "num_hidden_layers", 22);
    if (!models_cfg_check_layers(c, "num_hidden_layers", s->layers)) return false;
    s->heads = models_cfg_positive(c, "num_attention_heads", 12);
    s->act = models_cfg_string(c, "hidden_activation", "gelu");
    s->classifier_act = models_cfg_string(c, "classifier_activation", "gelu");
    s->eps = models_blocks_eps(c, "norm_eps", 1e-5);
    s->norm_bias = models_cfg_bool(c, "norm_bias", false);
    s->attention_bias = models_cfg_bool(c, "attention_bias", false);
    s->mlp_bias = models_cfg_bool(c, "mlp_bias", false);
    s->decoder_bias = models_cfg_bool(c, "decoder_bias", true);
    s->classifier_bias = models_cfg_bool(c, "classifier_bias", false);
    s->tie = models_cfg_bool(c, "tie_word_embeddings", true);
    s->attention_dropout = models_blocks_dropout(c, "attention_dropout", 0.0);
    s->embedding_dropout = models_blocks_dropout(c, "embedding_dropout", 0.0);
    s->mlp_dropout = models_blocks_dropout(c, "mlp_dropout", 0.0);
    s->classifier_dropout = models_blocks_dropout(c, "classifier_dropout", 0.0);
    int64_t local = models_cfg_positive(c, "local_attention", 128);
    const char *pooling = models_cfg_string(c, "classifier_pooling", "cls");
    s->labels = models_blocks_num_labels(c);
    const cJSON *pad = cJSON_GetObjectItemCaseSensitive(c->root, "pad_token_id");
    s->padding_idx = pad && cJSON_IsNull(pad) ? MTK_NN_NO_PADDING_IDX : models_cfg_int(c, "pad_token_id", 50283);
    if (!models_cfg_ok(c)) return false;
    s->half_window = local / 2;
    if (strcmp(pooling, "cls") != 0 && strcmp(pooling, "mean") != 0)
        return models_cfg_fail(c, "classifier_pooling", "must be \"cls\" or \"mean\", got \"%s\"", pooling);
    s->mean_pooling = strcmp(pooling, "mean") == 0;
    if (s->hidden % s->heads != 0)
        return models_cfg_fail(c, "hidden_size", "hidden_size=%lld is not a multiple of num_attention_heads=%lld",
                               (long long)s->hidden, (long long)s->heads);
    s->head_dim = s->hidden / s->heads;
    if (s->head_dim % 2 != 0)
        return models_cfg_fail(c, "hidden_size", "gives an odd head dim %lld (hidden_size / num_attention_heads); "
                               "rope needs it even", (long long)s->head_dim);
    int64_t head_dim = models_cfg_int(c, "head_dim", s->head_dim);
    if (models_cfg_ok(c) && head_dim != s->head_dim)
        return models_cfg_fail(c, "head_dim", "%lld differs from hidden_size / num_attention_heads = %lld, which "
                               "ModernBertAttention uses; not supported", (long long)head_dim, (long long)s->head_dim);
    if (s->padding_idx != MTK_NN_NO_PADDING_IDX && (s->padding_idx >= s->vocab || s->padding_idx < -s->vocab))
        return models_cfg_fail(c, "pad_token_id", "%lld is not a row of the embedding (vocab_size %lld): Padding_idx "
                               "must be within num_embeddings", (long long)s->padding_idx, (long long)s->vocab);
    if (s->padding_idx < 0 && s->padding_idx != MTK_NN_NO_PADDING_IDX) s->padding_idx += s->vocab;
    return read_layer_types(c, s) && read_theta(c, s, FULL, "global_rope_theta", 160000.0) &&
           read_theta(c, s, SLIDING, "local_rope_theta", 10000.0);
}

mtk_module *models_family_modernbert_build(model_config *c, const char *architecture)
{
    modernbert_spec s;
    if (!read_spec(c, &s)) return NULL;
    if (strcmp(architecture, "ModernBertForMaskedLM") == 0) return task_model(c, &s, &masked_lm_type);
    if (strcmp(architecture, "ModernBertForSequenceClassification") == 0) return task_model(c, &s, &sequence_type);
    if (strcmp(architecture, "ModernBertForTokenClassification") == 0) return task_model(c, &s, &token_type);
    return base_model(c, &s);
}
