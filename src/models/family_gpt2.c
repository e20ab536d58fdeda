/* The gpt2 family: GPT2Model, GPT2LMHeadModel and the classification heads
 * (GPT2ForSequenceClassification, GPT2ForTokenClassification: transformer,
 * dropout, classifier) as transformers builds them, with its Conv1D layers (weights stored (in, out), the transpose of
 * a Linear's), the optional cross-attention of add_cross_attention, and
 * the LM head tied to wte when tie_word_embeddings (the default).
 *
 * Config fields (transformers' defaults): vocab_size 50257, n_positions
 * 1024, n_embd 768, n_layer 12, n_head 12 (or their names hidden_size,
 * max_position_embeddings, num_hidden_layers, num_attention_heads), n_inner
 * (4 * n_embd when null), activation_function "gelu_new",
 * layer_norm_epsilon 1e-5, resid/embd/attn_pdrop 0.1, scale_attn_weights,
 * scale_attn_by_inverse_layer_idx, add_cross_attention,
 * tie_word_embeddings, use_cache (true: outside training, model(input_ids)
 * builds a DynamicCache that keeps every layer's keys and values). */
#include "models/blocks.h"
#include "models/decoder.h"
#include "mtk/ops.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

typedef struct gpt2_spec {
    int64_t vocab, positions, embed, layers, heads, inner;
    const char *act;
    double eps, resid_pdrop, embd_pdrop, attn_pdrop;
    bool scale_attn_weights, scale_by_layer, cross_attention, tie, use_cache;
} gpt2_spec;

/* ---------------------------------------------------------------- Conv1D */

typedef struct conv1d_config {
    int64_t nf, nx; /* out and in features */
} conv1d_config;

static void conv1d_repr(const mtk_module *m, char *buf, size_t cap)
{
    const conv1d_config *c = mtk_module_config(m);
    snprintf(buf, cap, "nf=%lld, nx=%lld", (long long)c->nf, (long long)c->nx);
}

/* Conv1D.__init__: weight N(0, 0.02), bias zeros. */
static bool conv1d_reset(mtk_module *m, mtk_rng *rng)
{
    return mtk_init_normal_(mtk_module_find_tensor(m, "weight"), 0.0, 0.02, rng) &&
           mtk_init_zeros_(mtk_module_find_tensor(m, "bias"));
}

/* x @ weight + bias: (..., nx) -> (..., nf) */
static bool conv1d_forward(mtk_module *m, mtk_module_io *io)
{
    mtk_ctx *ctx = mtk_module_ctx(m);
    mtk_tensor *y = mtk_matmul(ctx, io->in[0], mtk_module_find_tensor(m, "weight"));
    io->out[0] = mtk_add(ctx, y, mtk_module_find_tensor(m, "bias"));
    io->nout = 1;
    return io->out[0] != NULL;
}

static const mtk_module_type conv1d_type = { "Conv1D", conv1d_forward, conv1d_reset, conv1d_repr };

/* Conv1D(nf, nx): weight (nx, nf), bias (nf). */
static mtk_module *conv1d(mtk_ctx *ctx, int64_t nf, int64_t nx)
{
    mtk_module *m = mtk_module_new(ctx, &conv1d_type, sizeof(conv1d_config));
    if (!m) return NULL;
    *(conv1d_config *)mtk_module_config(m) = (conv1d_config){ nf, nx };
    int64_t wshape[2] = { nx, nf };
    if (!mtk_module_new_parameter(m, "weight", wshape, 2) || !mtk_module_new_parameter(m, "bias", &nf, 1))
        return NULL;
    return mtk_module_finish(m);
}

/* ------------------------------------------------------------- attention */

typedef struct attention_config {
    int64_t embed, heads, head_dim;
    double scale;
    bool cross; /* children c_attn (2E), q_attn, c_proj, ...; unused without encoder states */
    double dropout; /* attn_pdrop: sdpa's dropout_p in training, as transformers passes it */
    bool use_cache; /* outside training: the DynamicCache's update copies keys and values */
    mtk_tensor *keys, *values; /* the cache layer of the last call (NULL: none) */
} attention_config;

enum { A_C_ATTN, A_C_PROJ, A_ATTN_DROPOUT, A_RESID_DROPOUT };

/* causal self-attention (under the bool mask in[1] (B, 1, S, S) when
 * given: padding): (B, S, E) -> (B, S, E).  Outside training with
 * use_cache, DynamicLayer.update concatenates this call's keys and values
 * onto the empty cache (new (B, H, S, D) tensors, what the attention then
 * reads); the config keeps them for the model, whose cache outlives it.
 * With a KV cache (mtk_lm_forward_cached): (x, past_k, past_v (B, H, P,
 * D)[, mask (B, 1, S, P + S) bool]) -> (out, keys, values), the past and
 * this step's concatenated (B, H, P + S, D). */
static bool attention_forward(mtk_module *m, mtk_module_io *io)
{
    mtk_ctx *ctx = mtk_module_ctx(m);
    attention_config *c = mtk_module_config(m);
    c->keys = c->values = NULL;
    bool cached = io->nin >= 3;
    if (c->cross)
        return mtk_error(ctx, MTK_ERR_NOT_IMPLEMENTED,
                         "GPT2Attention: cross-attention needs encoder hidden states, which a summary does not take");
    mtk_tensor *qkv = mtk_module_forward(blocks_child(m, A_C_ATTN), io->in[0]); /* (B, S, 3E) */
    mtk_tensor *q = mtk_narrow(ctx, qkv, -1, 0, c->embed);
    mtk_tensor *k = mtk_narrow(ctx, qkv, -1, c->embed, c->embed);
    mtk_tensor *v = mtk_narrow(ctx, qkv, -1, 2 * c->embed, c->embed);
    q = models_blocks_split_heads(ctx, q, c->heads, c->head_dim); /* (B, H, S, D) */
    k = models_blocks_split_heads(ctx, k, c->heads, c->head_dim);
    v = models_blocks_split_heads(ctx, v, c->heads, c->head_dim);
    if (cached) {
        mtk_tensor *keys[2] = { io->in[1], k }, *values[2] = { io->in[2], v };
        k = mtk_cat(ctx, keys, 2, 2); /* (B, H, P + S, D) */
        v = mtk_cat(ctx, values, 2, 2);
        decoder_attend attend = { c->heads, c->heads, c->head_dim, c->scale, 0.0, false, 0, 0, NULL };
        mtk_tensor *attn = models_decoder_attend(ctx, &attend, q, k, v, io->nin > 3 ? io->in[3] : NULL, true, NULL);
        io->out[0] = mtk_module_forward(blocks_child(m, A_C_PROJ), models_blocks_merge_heads(ctx, attn));
        io->out[1] = k;
        io->out[2] = v;
        io->nout = 3;
        return io->out[0] && k && v;
    }
    if (c->use_cache && !mtk_module_is_training(m) && k && v) {
        int64_t empty[4] = { k->shape[0], c->heads, 0, c->head_dim };
        if (!mtk_ctx_push_device(ctx, k->device)) return false; /* the empty cache on k's device */
        mtk_tensor *keys[2] = { mtk_empty(ctx, empty, 4, k->dtype), k };
        mtk_tensor *values[2] = { mtk_empty(ctx, empty, 4, v->dtype), v };
        mtk_ctx_pop_device(ctx);
        k = c->keys = mtk_cat(ctx, keys, 2, 2); /* (B, H, S, D) */
        v = c->values = mtk_cat(ctx, values, 2, 2);
    }
    double dropout = mtk_module_is_training(m) ? c->dropout : 0.0;
    mtk_tensor *mask = io->nin > 1 ? io->in[1] : NULL;
    mtk_tensor *attn = mtk_scaled_dot_product_attention(ctx, q, k, v, mask, dropout, !mask, c->scale, false);
    mtk_tensor *out = mtk_module_forward(blocks_child(m, A_C_PROJ), models_blocks_merge_heads(ctx, attn));
    io->out[0] = mtk_module_forward(blocks_child(m, A_RESID_DROPOUT), out);
    io->nout = 1;
    return io->out[0] != NULL;
}

static const mtk_module_type attention_type = { "GPT2Attention", attention_forward, NULL, NULL };

static mtk_module *attention(mtk_ctx *ctx, const gpt2_spec *s, int64_t layer, bool cross)
{
    mtk_module *m = mtk_module_new(ctx, &attention_type, sizeof(attention_config));
    if (!m) return NULL;
    int64_t head_dim = s->embed / s->heads;
    double scale = s->scale_attn_weights ? 1.0 / sqrt((double)head_dim) : 1.0;
    if (s->scale_by_layer) scale /= (double)(layer + 1);
    *(attention_config *)mtk_module_config(m) = (attention_config){ s->embed, s->heads, head_dim, scale, cross,
                                                                    s->attn_pdrop, s->use_cache, NULL, NULL };
    bool ok = cross ? mtk_module_add(m, "c_attn", conv1d(ctx, 2 * s->embed, s->embed)) &&
                          mtk_module_add(m, "q_attn", conv1d(ctx, s->embed, s->embed))
                    : mtk_module_add(m, "c_attn", conv1d(ctx, 3 * s->embed, s->embed));
    ok = ok && mtk_module_add(m, "c_proj", conv1d(ctx, s->embed, s->embed)) &&
         mtk_module_add(m, "attn_dropout", mtk_nn_dropout(ctx, s->attn_pdrop)) &&
         mtk_module_add(m, "resid_dropout", mtk_nn_dropout(ctx, s->resid_pdrop));
    return ok ? mtk_module_finish(m) : NULL;
}

/* ------------------------------------------------------------------- MLP */

enum { P_C_FC, P_C_PROJ, P_ACT, P_DROPOUT };

/* dropout(c_proj(act(c_fc(x)))): (B, S, E) -> (B, S, E) */
static bool mlp_forward(mtk_module *m, mtk_module_io *io)
{
    mtk_tensor *h = mtk_module_forward(blocks_child(m, P_C_FC), io->in[0]); /* (B, S, inner) */
    h = mtk_module_forward(blocks_child(m, P_ACT), h);
    h = mtk_module_forward(blocks_child(m, P_C_PROJ), h);
    io->out[0] = mtk_module_forward(blocks_child(m, P_DROPOUT), h);
    io->nout = 1;
    return io->out[0] != NULL;
}

static const mtk_module_type mlp_type = { "GPT2MLP", mlp_forward, NULL, NULL };

static mtk_module *mlp(const model_config *c, const gpt2_spec *s)
{
    mtk_ctx *ctx = c->ctx;
    mtk_module *m = mtk_module_new(ctx, &mlp_type, 0);
    bool ok = m && mtk_module_add(m, "c_fc", conv1d(ctx, s->inner, s->embed)) &&
              mtk_module_add(m, "c_proj", conv1d(ctx, s->embed, s->inner)) &&
              mtk_module_add(m, "act", models_blocks_activation(c, "activation_function", s->act)) &&
              mtk_module_add(m, "dropout", mtk_nn_dropout(ctx, s->resid_pdrop));
    return ok ? mtk_module_finish(m) : NULL;
}

/* ----------------------------------------------------------------- block */

enum { B_LN_1, B_ATTN, B_LN_2 };

/* x + attn(ln_1(x)[, mask]), then + mlp(ln_2(.)): (B, S, E) -> (B, S, E);
 * with a KV cache (x, past_k, past_v[, mask]) -> (h, keys, values), the
 * attention's */
static bool block_forward(mtk_module *m, mtk_module_io *io)
{
    mtk_ctx *ctx = mtk_module_ctx(m);
    int32_t mlp_index = mtk_module_child_count(m) - 1; /* after crossattention, ln_cross_attn if any */
    mtk_tensor *x = io->in[0];
    mtk_module_io attn = { .in = { mtk_module_forward(blocks_child(m, B_LN_1), x) }, .nin = io->nin };
    for (int32_t i = 1; i < io->nin; i++) attn.in[i] = io->in[i];
    if (!attn.in[0] || !mtk_module_call(blocks_child(m, B_ATTN), &attn)) return false;
    x = mtk_add(ctx, attn.out[0], x);
    mtk_tensor *h = mtk_module_forward(blocks_child(m, mlp_index), mtk_module_forward(blocks_child(m, B_LN_2), x));
    io->out[0] = mtk_add(ctx, x, h);
    io->nout = attn.nout;
    for (int32_t i = 1; i < attn.nout; i++) io->out[i] = attn.out[i];
    return io->out[0] != NULL;
}

static const mtk_module_type block_type = { "GPT2Block", block_forward, NULL, NULL };

static mtk_module *block(const model_config *c, const gpt2_spec *s, int64_t layer)
{
    mtk_ctx *ctx = c->ctx;
    mtk_module *m = mtk_module_new(ctx, &block_type, 0);
    bool ok = m && mtk_module_add(m, "ln_1", mtk_nn_layer_norm(ctx, &s->embed, 1, s->eps, true, true)) &&
              mtk_module_add(m, "attn", attention(ctx, s, layer, false)) &&
              mtk_module_add(m, "ln_2", mtk_nn_layer_norm(ctx, &s->embed, 1, s->eps, true, true));
    if (ok && s->cross_attention)
        ok = mtk_module_add(m, "crossattention", attention(ctx, s, layer, true)) &&
             mtk_module_add(m, "ln_cross_attn", mtk_nn_layer_norm(ctx, &s->embed, 1, s->eps, true, true));
    ok = ok && mtk_module_add(m, "mlp", mlp(c, s));
    return ok ? mtk_module_finish(m) : NULL;
}

/* ------------------------------------------------------------ GPT2Model */

typedef struct gpt2_model_config {
    int64_t positions;
} gpt2_model_config;

enum { M_WTE, M_WPE, M_DROP, M_H, M_LN_F };

/* The DynamicCache of the last call, held by its owner until here. */
static bool hold_cache(mtk_ctx *ctx, mtk_module *base)
{
    mtk_module *layers = blocks_child(base, M_H);
    bool ok = true;
    for (int32_t i = 0; ok && i < mtk_module_child_count(layers); i++) {
        const attention_config *a = mtk_module_config(blocks_child(blocks_child(layers, i), B_ATTN));
        ok = models_blocks_held_until_here(ctx, a->keys) && models_blocks_held_until_here(ctx, a->values);
    }
    return ok;
}

/* Every position id of `positions` on the cpu is in 0..n_positions - 1
 * (wpe's rows); meta ones are not read. */
static bool gpt2_check_positions(mtk_module *m, mtk_tensor *positions, int64_t n_positions)
{
    mtk_ctx *ctx = mtk_module_ctx(m);
    if (mtk_tensor_is_meta(positions)) return true;
    mtk_tensor *p = mtk_contiguous(ctx, mtk_to_dtype(ctx, positions, MTK_INT64));
    const int64_t *v = p ? mtk_tensor_data(p) : NULL;
    if (!v) return false;
    for (int64_t i = 0; i < mtk_tensor_numel(p); i++)
        if (v[i] < 0 || v[i] >= n_positions)
            return mtk_error(ctx, MTK_ERR_INDEX, "%s: position id %lld is outside 0..%lld (n_positions %lld)",
                             mtk_module_type_name(m), (long long)v[i], (long long)(n_positions - 1),
                             (long long)n_positions);
    return true;
}

/* input_ids (B, S)[, attention_mask (B, S) 0 / 1[, position_ids (B or 1, S)]] -> last hidden state
 * (B, S, E); its locals
 * inputs_embeds, position_ids and position_embeds, and the cache it returns, live until
 * it returns */
static bool model_forward(mtk_module *m, mtk_module_io *io)
{
    mtk_ctx *ctx = mtk_module_ctx(m);
    const gpt2_model_config *c = mtk_module_config(m);
    mtk_tensor *ids = io->in[0];
    if (!models_blocks_check_token_ids(m, ids, c->positions, "n_positions")) return false;
    mtk_tensor *embeds = mtk_module_forward(blocks_child(m, M_WTE), ids);               /* (B, S, E) */
    /* in[2]: the caller's position_ids (B or 1, S); else arange(S) + past_seen_tokens (0: the cache starts
       empty), unsqueezed: (1, S) */
    mtk_tensor *positions = io->nin > 2 ? io->in[2] : NULL;
    if (positions && !gpt2_check_positions(m, positions, c->positions)) return false;
    if (!positions) {
        positions = models_blocks_positions(ctx, ids->shape[1], ids);
        positions = mtk_unsqueeze(ctx, positions ? mtk_add_scalar(ctx, positions, mtk_value_int(0)) : NULL, 0);
    }
    mtk_tensor *position_embeds = mtk_module_forward(blocks_child(m, M_WPE), positions);
    mtk_tensor *h = mtk_add(ctx, embeds, position_embeds);
    h = mtk_module_forward(blocks_child(m, M_DROP), h);
    bool failed;
    mtk_tensor *mask = models_padded_causal_mask(ctx, io->nin > 1 ? io->in[1] : NULL, 0, &failed);
    if (failed) return false;
    if (mask) {
        mtk_module *layers = blocks_child(m, M_H);
        for (int32_t i = 0; h && i < mtk_module_child_count(layers); i++)
            h = mtk_module_forward2(blocks_child(layers, i), h, mask);
    } else {
        h = models_blocks_run_layers(blocks_child(m, M_H), h);
    }
    io->out[0] = mtk_module_forward(blocks_child(m, M_LN_F), h);
    io->nout = 1;
    return io->out[0] != NULL && models_blocks_held_until_here(ctx, embeds) && models_blocks_held_until_here(ctx, positions) &&
           models_blocks_held_until_here(ctx, position_embeds) && hold_cache(ctx, m);
}

static const mtk_module_type model_type = { "GPT2Model", model_forward, NULL, NULL };

static mtk_module *model(const model_config *c, const gpt2_spec *s)
{
    mtk_ctx *ctx = c->ctx;
    mtk_module *m = mtk_module_new(ctx, &model_type, sizeof(gpt2_model_config));
    mtk_module *h = mtk_nn_module_list(ctx);
    if (!m || !h) return NULL;
    ((gpt2_model_config *)mtk_module_config(m))->positions = s->positions;
    for (int64_t i = 0; i < s->layers; i++)
        if (!mtk_nn_module_list_append(h, block(c, s, i))) return NULL;
    bool ok = mtk_module_add(m, "wte", mtk_nn_embedding(ctx, s->vocab, s->embed, MTK_NN_NO_PADDING_IDX)) &&
              mtk_module_add(m, "wpe", mtk_nn_embedding(ctx, s->positions, s->embed, MTK_NN_NO_PADDING_IDX)) &&
              mtk_module_add(m, "drop", mtk_nn_dropout(ctx, s->embd_pdrop)) && mtk_module_add(m, "h", h) &&
              mtk_module_add(m, "ln_f", mtk_nn_layer_norm(ctx, &s->embed, 1, s->eps, true, true));
    return ok ? mtk_module_finish(m) : NULL;
}

/* ------------------------------------------------------ GPT2LMHeadModel */

/* input_ids (B, S)[, attention_mask] -> logits (B, S, vocab); the output
 * holds the cache */
static bool lm_head_model_forward(mtk_module *m, mtk_module_io *io)
{
    mtk_module_io base = *io;
    if (!mtk_module_call(blocks_child(m, 0), &base)) return false;
    io->out[0] = mtk_module_forward(blocks_child(m, 1), base.out[0]);
    io->nout = 1;
    return io->out[0] != NULL && hold_cache(mtk_module_ctx(m), blocks_child(m, 0));
}

static const mtk_module_type lm_head_model_type = { "GPT2LMHeadModel", lm_head_model_forward, NULL, NULL };

/* --------------------------------------------------------------- config */

static bool read_spec(model_config *c, gpt2_spec *s)
{
    memset(s, 0, sizeof *s);
    s->vocab = models_cfg_positive(c, "vocab_size", 50257);
    s->positions = models_blocks_positive_alias(c, "n_positions", "max_position_embeddings", 1024);
    s->embed = models_blocks_positive_alias(c, "n_embd", "hidden_size", 768);
    s->heads = models_blocks_positive_alias(c, "n_head", "num_attention_heads", 12);
    const char *layers_key = !models_cfg_has(c, "n_layer") && models_cfg_has(c, "num_hidden_layers") ? "num_hidden_layers" : "n_layer";
    s->layers = models_cfg_int(c, layers_key, 12);
    if (!models_cfg_check_layers(c, layers_key, s->layers)) return false;
    s->inner = models_cfg_has(c, "n_inner") ? models_cfg_positive(c, "n_inner", 0) : 4 * s->embed;
    s->act = models_cfg_string(c, "activation_function", "gelu_new");
    s->eps = models_blocks_eps(c, "layer_norm_epsilon", 1e-5);
    s->resid_pdrop = models_blocks_dropout(c, "resid_pdrop", 0.1);
    s->embd_pdrop = models_blocks_dropout(c, "embd_pdrop", 0.1);
    s->attn_pdrop = models_blocks_dropout(c, "attn_pdrop", 0.1);
    s->scale_attn_weights = models_cfg_bool(c, "scale_attn_weights", true);
    s->scale_by_layer = models_cfg_bool(c, "scale_attn_by_inverse_layer_idx", false);
    s->cross_attention = models_cfg_bool(c, "add_cross_attention", false);
    s->tie = models_cfg_bool(c, "tie_word_embeddings", true);
    s->use_cache = models_cfg_bool(c, "use_cache", true);
    if (!models_cfg_ok(c)) return false;
    if (s->embed % s->heads != 0)
        return models_cfg_fail(c, "n_embd", "n_embd=%lld is not divisible by n_head=%lld", (long long)s->embed,
                        (long long)s->heads);
    return true;
}

mtk_module *models_family_gpt2_build(model_config *c, const char *architecture)
{
    gpt2_spec s;
    if (!read_spec(c, &s)) return NULL;
    mtk_module *base = model(c, &s);
    if (!base || strcmp(architecture, "GPT2Model") == 0) return base;
    if (models_decoder_is_classifier(architecture)) {
        /* the token head's Linear keeps its bias; dropout by the generic rule */
        classifier_head head = { "transformer", s.embed, models_classifier_pad(c), "classifier", true,
                                 models_classifier_dropout(c) };
        return models_classifier(c, base, architecture, &head);
    }
    mtk_ctx *ctx = c->ctx;
    mtk_module *m = mtk_module_new(ctx, &lm_head_model_type, 0);
    if (!m || !mtk_module_add(m, "transformer", base) ||
        !mtk_module_add(m, "lm_head", mtk_nn_linear(ctx, s.embed, s.vocab, false)))
        return NULL;
    if (s.tie && !mtk_module_tie(m, "lm_head.weight", "transformer.wte.weight")) return NULL;
    return mtk_module_finish(m);
}

/* ------------------------------------------------------ the cached forward */

/* Every layer caches (B, n_head, T, head_dim) keys and values. */
static void layer_shape(mtk_module *layer, decoder_cache_shape *out)
{
    const attention_config *a = mtk_module_config(blocks_child(layer, B_ATTN));
    *out = (decoder_cache_shape){ .kv_heads = a->heads, .key_dim = a->head_dim, .value_dim = a->head_dim };
}

bool models_gpt2_parts_of(mtk_module *m, decoder_parts *out)
{
    const mtk_module_type *type = mtk_module_type_of(m);
    mtk_module *base = type == &lm_head_model_type ? blocks_child(m, 0) : type == &model_type ? m : NULL;
    if (!base) return false;
    /* add_cross_attention: without encoder states transformers skips the crossattention blocks, as here */
    out->embed = blocks_child(base, M_WTE);
    out->positions = blocks_child(base, M_WPE);
    out->layers = blocks_child(base, M_H);
    out->norm = blocks_child(base, M_LN_F);
    out->lm_head = base == m ? NULL : blocks_child(m, 1);
    out->masks = DECODER_MASK_FULL;
    out->own_layers = layer_shape;
    return true;
}
