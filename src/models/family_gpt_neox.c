/* The gpt_neox family (Pythia, GPT-NeoX-20B): GPTNeoXModel and
 * GPTNeoXForCausalLM, GPTNeoXForSequenceClassification and
 * GPTNeoXForTokenClassification (gpt_neox, dropout, classifier) as
 * transformers builds them: a fused query_key_value
 * projection, partial rotary embedding (rotary_pct of each head), parallel
 * or sequential residuals, LayerNorms with biases, and an untied lm_head
 * unless tie_word_embeddings.  The rotary embedding module is the decoder
 * families' (decoder_rope.c) named GPTNeoXRotaryEmbedding.
 *
 * Config fields (transformers' defaults): vocab_size 50432, hidden_size
 * 6144, num_hidden_layers 44, num_attention_heads 64, intermediate_size
 * 24576, hidden_act "gelu", rotary_pct 0.25, rotary_emb_base 10000 (or
 * rope_parameters / rope_scaling), max_position_embeddings 2048,
 * layer_norm_eps 1e-5, attention_dropout and hidden_dropout 0,
 * use_parallel_residual true, attention_bias true, tie_word_embeddings
 * false, use_cache true (outside training, model(input_ids) builds a
 * DynamicCache that keeps every layer's keys and values). */
#include "models/blocks.h"
#include "models/decoder.h"
#include "mtk/ops.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

typedef struct neox_spec {
    int64_t vocab, hidden, layers, heads, head_dim, intermediate;
    const char *act;
    double eps, attention_dropout, hidden_dropout;
    bool parallel_residual, bias, tie, use_cache;
    decoder_spec rope; /* only .rope is used: the rotary embedding's settings */
} neox_spec;

static mtk_module *child(mtk_module *m, int32_t i) { return blocks_child(m, i); }

/* ------------------------------------------------------------- attention */

typedef struct attention_config {
    int64_t heads, head_dim, rotary_dim;
    bool use_cache;            /* outside training: the DynamicCache's update copies keys and values */
    mtk_tensor *keys, *values; /* the cache layer of the last call (NULL: none) */
} attention_config;

/* apply_rotary_pos_emb on the first rotary_dim dims of (B, H, S, D). */
static mtk_tensor *rotate(mtk_ctx *ctx, mtk_tensor *x, mtk_tensor *cos, mtk_tensor *sin, int64_t rotary_dim)
{
    if (!x) return NULL;
    int64_t head_dim = x->shape[3];
    /* cat even when nothing passes (rotary_pct 1): transformers does, and
       the new contiguous q/k is what sdpa sees */
    mtk_tensor *parts[2] = { mtk_rope(ctx, mtk_narrow(ctx, x, -1, 0, rotary_dim), cos, sin, false),
                             mtk_narrow(ctx, x, -1, rotary_dim, head_dim - rotary_dim) };
    return mtk_cat(ctx, parts, 2, -1);
}

/* forward(x (B, S, E), cos, sin (1, S, rotary_dim)[, mask (B, 1, S, S)
 * bool: padding]) -> (B, S, E); with a KV cache (mtk_lm_forward_cached)
 * forward(x, cos, sin, past_k, past_v (B, H, P, D)[, mask (B, 1, S, P +
 * S)]) -> (out, keys, values), the past and this step's concatenated */
static bool attention_forward(mtk_module *m, mtk_module_io *io)
{
    mtk_ctx *ctx = mtk_module_ctx(m);
    attention_config *c = mtk_module_config(m);
    c->keys = c->values = NULL;
    mtk_tensor *x = io->in[0];
    if (io->nin < 3 || io->nin > 6 || x->ndim != 3)
        return mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "GPTNeoXAttention: takes hidden states (B, S, E), cos and sin "
                         "(and past keys, past values and a mask)");
    bool cached = io->nin >= 5;
    mtk_tensor *qkv = mtk_module_forward(child(m, 0), x); /* (B, S, 3E) */
    if (!qkv) return false;
    /* view (B, S, H, 3D), heads first, then q, k, v side by side in each head */
    int64_t shape[4] = { x->shape[0], x->shape[1], c->heads, 3 * c->head_dim };
    qkv = mtk_transpose(ctx, mtk_view(ctx, qkv, shape, 4), 1, 2); /* (B, H, S, 3D) */
    mtk_tensor *parts[3] = { NULL, NULL, NULL };
    if (qkv && mtk_chunk(ctx, qkv, 3, -1, parts, 3) != 3) return false;
    mtk_tensor *q = rotate(ctx, parts[0], io->in[1], io->in[2], c->rotary_dim);
    mtk_tensor *k = rotate(ctx, parts[1], io->in[1], io->in[2], c->rotary_dim), *v = parts[2];
    if (cached) {
        mtk_tensor *keys[2] = { io->in[3], k }, *values[2] = { io->in[4], v };
        k = mtk_cat(ctx, keys, 2, 2); /* (B, H, P + S, D) */
        v = mtk_cat(ctx, values, 2, 2);
        decoder_attend attend = { c->heads, c->heads, c->head_dim, 1.0 / sqrt((double)c->head_dim), 0.0, false, 0, 0,
                                  NULL };
        mtk_tensor *attn = models_decoder_attend(ctx, &attend, q, k, v, io->nin == 6 ? io->in[5] : NULL, true, NULL);
        io->out[0] = mtk_module_forward(child(m, 1), models_blocks_merge_heads(ctx, attn));
        io->out[1] = k;
        io->out[2] = v;
        io->nout = 3;
        return io->out[0] && k && v;
    }
    if (c->use_cache && !mtk_module_is_training(m) && k && v) {
        /* DynamicLayer.update: cat onto the empty cache, (B, H, S, D) copies */
        int64_t empty[4] = { k->shape[0], c->heads, 0, c->head_dim };
        if (!mtk_ctx_push_device(ctx, k->device)) return false; /* the empty cache on k's device */
        mtk_tensor *keys[2] = { mtk_empty(ctx, empty, 4, k->dtype), k };
        mtk_tensor *values[2] = { mtk_empty(ctx, empty, 4, v->dtype), v };
        mtk_ctx_pop_device(ctx);
        k = c->keys = mtk_cat(ctx, keys, 2, 2);
        v = c->values = mtk_cat(ctx, values, 2, 2);
    }
    mtk_tensor *mask = io->nin == 4 ? io->in[3] : NULL;
    mtk_tensor *attn = mtk_scaled_dot_product_attention(ctx, q, k, v, mask, 0.0, !mask,
                                                        1.0 / sqrt((double)c->head_dim), false);
    io->out[0] = mtk_module_forward(child(m, 1), models_blocks_merge_heads(ctx, attn));
    io->nout = 1;
    /* the forward's locals qkv and query_states live until it returns */
    return io->out[0] != NULL && models_blocks_held_until_here(ctx, qkv) && models_blocks_held_until_here(ctx, q);
}

static const mtk_module_type attention_type = { "GPTNeoXAttention", attention_forward, NULL, NULL };

static mtk_module *attention(mtk_ctx *ctx, const neox_spec *s)
{
    mtk_module *m = mtk_module_new(ctx, &attention_type, sizeof(attention_config));
    if (!m) return NULL;
    *(attention_config *)mtk_module_config(m) = (attention_config){ s->heads, s->head_dim, s->rope.rope.dim,
                                                                    s->use_cache, NULL, NULL };
    bool ok = mtk_module_add(m, "query_key_value", mtk_nn_linear(ctx, s->hidden, 3 * s->hidden, s->bias)) &&
              mtk_module_add(m, "dense", mtk_nn_linear(ctx, s->hidden, s->hidden, s->bias));
    return ok ? mtk_module_finish(m) : NULL;
}

/* ------------------------------------------------------------------- MLP */

/* dense_4h_to_h(act(dense_h_to_4h(x))) */
static bool mlp_forward(mtk_module *m, mtk_module_io *io)
{
    mtk_tensor *h = mtk_module_forward(child(m, 0), io->in[0]);
    h = mtk_module_forward(child(m, 2), h);
    io->out[0] = mtk_module_forward(child(m, 1), h);
    io->nout = 1;
    return io->out[0] != NULL;
}

static const mtk_module_type mlp_type = { "GPTNeoXMLP", mlp_forward, NULL, NULL };

static mtk_module *mlp(const model_config *c, const neox_spec *s)
{
    mtk_ctx *ctx = c->ctx;
    mtk_module *m = mtk_module_new(ctx, &mlp_type, 0);
    bool ok = m && mtk_module_add(m, "dense_h_to_4h", mtk_nn_linear(ctx, s->hidden, s->intermediate, true)) &&
              mtk_module_add(m, "dense_4h_to_h", mtk_nn_linear(ctx, s->intermediate, s->hidden, true)) &&
              mtk_module_add(m, "act", models_blocks_activation(c, "hidden_act", s->act));
    return ok ? mtk_module_finish(m) : NULL;
}

/* ----------------------------------------------------------------- layer */

typedef struct layer_config {
    bool parallel_residual;
} layer_config;

enum { L_INPUT_NORM, L_POST_ATTN_NORM, L_ATTN_DROPOUT, L_MLP_DROPOUT, L_ATTN, L_MLP };

/* parallel: x + attn(ln1(x)) + mlp(ln2(x)); sequential: h = x + attn(ln1(x)),
 * h + mlp(ln2(h)).  (B, S, E), cos, sin[, mask] -> (B, S, E); with a KV
 * cache (x, cos, sin, past_k, past_v[, mask]) -> (h, keys, values) */
static bool layer_forward(mtk_module *m, mtk_module_io *io)
{
    mtk_ctx *ctx = mtk_module_ctx(m);
    const layer_config *c = mtk_module_config(m);
    mtk_tensor *x = io->in[0];
    mtk_module_io attn = { .in = { mtk_module_forward(child(m, L_INPUT_NORM), x) }, .nin = io->nin };
    for (int32_t i = 1; i < io->nin; i++) attn.in[i] = io->in[i];
    if (!attn.in[0] || !mtk_module_call(child(m, L_ATTN), &attn)) return false;
    mtk_tensor *a = mtk_module_forward(child(m, L_ATTN_DROPOUT), attn.out[0]);
    if (c->parallel_residual) {
        mtk_tensor *f = mtk_module_forward(child(m, L_MLP), mtk_module_forward(child(m, L_POST_ATTN_NORM), x));
        f = mtk_module_forward(child(m, L_MLP_DROPOUT), f);
        io->out[0] = mtk_add(ctx, mtk_add(ctx, f, a), x);
    } else {
        a = mtk_add(ctx, a, x);
        mtk_tensor *f = mtk_module_forward(child(m, L_MLP), mtk_module_forward(child(m, L_POST_ATTN_NORM), a));
        f = mtk_module_forward(child(m, L_MLP_DROPOUT), f);
        io->out[0] = mtk_add(ctx, f, a);
    }
    io->nout = attn.nout;
    for (int32_t i = 1; i < attn.nout; i++) io->out[i] = attn.out[i];
    return io->out[0] != NULL;
}

static const mtk_module_type layer_type = { "GPTNeoXLayer", layer_forward, NULL, NULL };

static mtk_module *layer(const model_config *c, const neox_spec *s)
{
    mtk_ctx *ctx = c->ctx;
    mtk_module *m = mtk_module_new(ctx, &layer_type, sizeof(layer_config));
    if (!m) return NULL;
    ((layer_config *)mtk_module_config(m))->parallel_residual = s->parallel_residual;
    bool ok = mtk_module_add(m, "input_layernorm", mtk_nn_layer_norm(ctx, &s->hidden, 1, s->eps, true, true)) &&
              mtk_module_add(m, "post_attention_layernorm", mtk_nn_layer_norm(ctx, &s->hidden, 1, s->eps, true, true)) &&
              mtk_module_add(m, "post_attention_dropout", mtk_nn_dropout(ctx, s->hidden_dropout)) &&
              mtk_module_add(m, "post_mlp_dropout", mtk_nn_dropout(ctx, s->hidden_dropout)) &&
              mtk_module_add(m, "attention", attention(ctx, s)) && mtk_module_add(m, "mlp", mlp(c, s));
    return ok ? mtk_module_finish(m) : NULL;
}

/* ----------------------------------------------------------------- model */

enum { M_EMBED_IN, M_EMB_DROPOUT, M_LAYERS, M_FINAL_NORM, M_ROTARY };

/* input_ids (B, S) -> last hidden state (B, S, E) */
/* The DynamicCache of the last call, held by its owner until here. */
static bool hold_cache(mtk_ctx *ctx, mtk_module *base)
{
    mtk_module *layers = child(base, M_LAYERS);
    bool ok = true;
    for (int32_t i = 0; ok && i < mtk_module_child_count(layers); i++) {
        const attention_config *a = mtk_module_config(child(child(layers, i), L_ATTN));
        ok = models_blocks_held_until_here(ctx, a->keys) && models_blocks_held_until_here(ctx, a->values);
    }
    return ok;
}

static bool model_forward(mtk_module *m, mtk_module_io *io)
{
    mtk_ctx *ctx = mtk_module_ctx(m);
    mtk_tensor *ids = io->in[0];
    if (!models_blocks_check_token_ids(m, ids, 0, NULL)) return false;
    mtk_tensor *embeds = mtk_module_forward(child(m, M_EMBED_IN), ids); /* (B, S, E) */
    mtk_tensor *h = mtk_module_forward(child(m, M_EMB_DROPOUT), embeds);
    bool failed; /* in[1]: a 2-D attention_mask, padding where 0 */
    mtk_tensor *mask = models_padded_causal_mask(ctx, io->nin > 1 ? io->in[1] : NULL, 0, &failed);
    if (failed) return false;
    io->out[0] = models_decoder_run_layers_masked(child(m, M_ROTARY), child(m, M_LAYERS), child(m, M_FINAL_NORM), h,
                                                  mask, io->nin > 2 ? io->in[2] : NULL);
    io->nout = 1;
    /* its local inputs_embeds, and the cache it returns, live until it returns */
    return io->out[0] != NULL && models_blocks_held_until_here(ctx, embeds) && hold_cache(ctx, m);
}

static const mtk_module_type model_type = { "GPTNeoXModel", model_forward, NULL, NULL };

static mtk_module *model(const model_config *c, const neox_spec *s)
{
    mtk_ctx *ctx = c->ctx;
    decoder_types *types = mtk_ctx_alloc(ctx, sizeof *types);
    if (!types || !models_decoder_types_init(ctx, types, "GPTNeoX")) return NULL;
    mtk_module *m = mtk_module_new(ctx, &model_type, 0);
    mtk_module *layers = mtk_nn_module_list(ctx);
    if (!m || !layers) return NULL;
    for (int64_t i = 0; i < s->layers; i++)
        if (!mtk_nn_module_list_append(layers, layer(c, s))) return NULL;
    bool ok = mtk_module_add(m, "embed_in", mtk_nn_embedding(ctx, s->vocab, s->hidden, MTK_NN_NO_PADDING_IDX)) &&
              mtk_module_add(m, "emb_dropout", mtk_nn_dropout(ctx, s->hidden_dropout)) &&
              mtk_module_add(m, "layers", layers) &&
              mtk_module_add(m, "final_layer_norm", mtk_nn_layer_norm(ctx, &s->hidden, 1, s->eps, true, true)) &&
              mtk_module_add(m, "rotary_emb", models_decoder_rotary(ctx, types, &s->rope));
    return ok ? mtk_module_finish(m) : NULL;
}

/* input_ids (B, S) -> logits (B, S, vocab) */
/* the output holds the cache */
static bool causal_lm_forward(mtk_module *m, mtk_module_io *io)
{
    mtk_module_io base = *io; /* input_ids[, attention_mask] */
    if (!mtk_module_call(child(m, 0), &base)) return false;
    io->out[0] = mtk_module_forward(child(m, 1), base.out[0]);
    io->nout = 1;
    return io->out[0] != NULL && hold_cache(mtk_module_ctx(m), child(m, 0));
}

static const mtk_module_type causal_lm_type = { "GPTNeoXForCausalLM", causal_lm_forward, NULL, NULL };

/* --------------------------------------------------------------- config */

/* The rotary settings: rope_parameters / rope_scaling as the decoder
 * families read them, with GPT-NeoX's legacy rotary_emb_base (theta) and
 * rotary_pct (the rotated share of each head, 0.25 by default). */
static bool read_rope(model_config *c, neox_spec *s)
{
    const char *obj_name = models_cfg_has(c, "rope_parameters") ? "rope_parameters" : "rope_scaling";
    const cJSON *obj = models_cfg_get(c, obj_name);
    bool partial_given = models_cfg_has(c, "partial_rotary_factor") ||
                         (cJSON_IsObject(obj) && cJSON_GetObjectItemCaseSensitive(obj, "partial_rotary_factor"));
    double theta = models_cfg_float(c, "rotary_emb_base", 10000.0);
    double pct = models_cfg_float(c, "rotary_pct", 0.25);
    if (!models_cfg_ok(c)) return false;
    memset(&s->rope, 0, sizeof s->rope);
    /* with no partial_rotary_factor, read the rest with a stand-in head
     * size that always gives valid dims, then apply rotary_pct */
    s->rope.attn.head_dim = partial_given ? s->head_dim : 2;
    if (!models_decoder_read_rope(c, &s->rope, theta)) return false;
    if (partial_given) return true;
    if (!(pct > 0 && pct <= 1)) return models_cfg_fail(c, "rotary_pct", "must be in (0, 1], got %g", pct);
    int64_t dim = (int64_t)((double)s->head_dim * pct);
    if (dim < 2 || dim % 2 != 0)
        return models_cfg_fail(c, "rotary_pct", "rotary_pct=%g of the head size %lld gives %lld rotary dims; mtk supports an "
                        "even number, at least 2", pct, (long long)s->head_dim, (long long)dim);
    s->rope.rope.dim = dim;
    return true;
}

static bool read_spec(model_config *c, neox_spec *s)
{
    memset(s, 0, sizeof *s);
    s->vocab = models_cfg_positive(c, "vocab_size", 50432);
    s->hidden = models_cfg_positive(c, "hidden_size", 6144);
    s->heads = models_cfg_positive(c, "num_attention_heads", 64);
    s->layers = models_cfg_int(c, "num_hidden_layers", 44);
    if (!models_cfg_check_layers(c, "num_hidden_layers", s->layers)) return false;
    s->intermediate = models_cfg_positive(c, "intermediate_size", 24576);
    s->act = models_cfg_string(c, "hidden_act", "gelu");
    s->eps = models_blocks_eps(c, "layer_norm_eps", 1e-5);
    s->attention_dropout = models_blocks_dropout(c, "attention_dropout", 0.0);
    s->hidden_dropout = models_blocks_dropout(c, "hidden_dropout", 0.0);
    s->parallel_residual = models_cfg_bool(c, "use_parallel_residual", true);
    s->bias = models_cfg_bool(c, "attention_bias", true);
    s->tie = models_cfg_bool(c, "tie_word_embeddings", false);
    s->use_cache = models_cfg_bool(c, "use_cache", true);
    if (!models_cfg_ok(c)) return false;
    if (s->hidden % s->heads != 0)
        return models_cfg_fail(c, "hidden_size", "hidden_size=%lld is not divisible by num_attention_heads=%lld",
                        (long long)s->hidden, (long long)s->heads);
    s->head_dim = s->hidden / s->heads;
    /* max_position_embeddings is read (and checked) with the rope settings */
    return read_rope(c, s);
}

mtk_module *models_family_gpt_neox_build(model_config *c, const char *architecture)
{
    neox_spec s;
    if (!read_spec(c, &s)) return NULL;
    mtk_module *base = model(c, &s);
    if (!base || strcmp(architecture, "GPTNeoXModel") == 0) return base;
    if (models_decoder_is_classifier(architecture)) {
        /* classifier_dropout is a config field with default 0.1 (hidden_dropout is not consulted) */
        classifier_head head = { "gpt_neox", s.hidden, models_classifier_pad(c), "classifier", true,
                                 models_blocks_dropout(c, "classifier_dropout", 0.1) };
        return models_classifier(c, base, architecture, &head);
    }
    mtk_ctx *ctx = c->ctx;
    mtk_module *m = mtk_module_new(ctx, &causal_lm_type, 0);
    if (!m || !mtk_module_add(m, "gpt_neox", base) ||
        !mtk_module_add(m, "lm_head", mtk_nn_linear(ctx, s.hidden, s.vocab, false)))
        return NULL;
    if (s.tie && !mtk_module_tie(m, "lm_head.weight", "gpt_neox.embed_in.weight")) return NULL;
    return mtk_module_finish(m);
}

/* ------------------------------------------------------ the cached forward */

/* Every layer caches (B, heads, T, head_dim) keys and values. */
static void layer_shape(mtk_module *layer, decoder_cache_shape *out)
{
    const attention_config *a = mtk_module_config(child(layer, L_ATTN));
    *out = (decoder_cache_shape){ .kv_heads = a->heads, .key_dim = a->head_dim, .value_dim = a->head_dim };
}

bool models_gpt_neox_parts_of(mtk_module *m, decoder_parts *out)
{
    const mtk_module_type *type = mtk_module_type_of(m);
    mtk_module *base = type == &causal_lm_type ? child(m, 0) : type == &model_type ? m : NULL;
    if (!base) return false;
    out->embed = child(base, M_EMBED_IN);
    out->layers = child(base, M_LAYERS);
    out->norm = child(base, M_FINAL_NORM);
    out->rotary = child(base, M_ROTARY);
    out->lm_head = base == m ? NULL : child(m, 1);
    out->masks = DECODER_MASK_FULL;
    out->own_layers = layer_shape;
    return true;
}
