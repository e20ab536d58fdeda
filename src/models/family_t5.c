/* The t5 family (encoder-decoder): T5Model, T5ForConditionalGeneration,
 * T5EncoderModel, T5ForTokenClassification and T5ForSequenceClassification,
 * as transformers 5 builds
 * them.  One `shared` embedding, tied to the encoder's and the decoder's
 * embed_tokens and (always, in transformers 5: T5Config forces
 * tie_word_embeddings) to lm_head; a config's tie_word_embeddings false
 * only turns off the decoder output's scaling by d_model**-0.5 (saved by
 * transformers 5 as scale_decoder_outputs false, tie_word_embeddings
 * true, which mtk reads first).
 *
 * Each stack's first block holds the relative attention bias (an
 * Embedding(num_buckets, num_heads)): relative positions are bucketed
 * (bidirectionally in the encoder, causally in the decoder; exact below
 * half the buckets, logarithmic up to relative_attention_max_distance),
 * the bias computed once per stack and passed to the later blocks.  The
 * decoder's cross-attention bias is zeros, made in block 0.  The decoder's
 * attentions copy their keys and values into transformers'
 * EncoderDecoderCache (use_cache) and return the copies.  Attention is
 * sdpa with the bias as the float mask, unscaled (scale 1): what
 * transformers' sdpa_attention_forward does with a position_bias (the
 * decoder's causal mask folded in with torch.where).
 *
 * Forward inputs: encoder ids (B, S) and decoder ids (B, T) for T5Model
 * and T5ForConditionalGeneration (outputs: the decoder's last hidden
 * state or logits, then the encoder's last hidden state), encoder ids
 * only for T5EncoderModel and T5ForTokenClassification.
 *
 * Config fields (T5Config's defaults): vocab_size 32128, d_model 512
 * (hidden_size), d_kv 64 (head_dim), d_ff 2048, num_layers 6
 * (num_hidden_layers), num_decoder_layers (num_layers), num_heads 8
 * (num_attention_heads), relative_attention_num_buckets 32,
 * relative_attention_max_distance 128, dropout_rate 0.1,
 * layer_norm_epsilon 1e-6, feed_forward_proj "relu" ("gated-gelu": wi_0,
 * wi_1 and gelu_new; "ACT" or "gated-ACT" in general),
 * scale_decoder_outputs (tie_word_embeddings), tie_word_embeddings (true), classifier_dropout 0.0, id2label /
 * num_labels.
 *
 * T5ForSequenceClassification runs T5Model on the ids and on them shifted
 * right (decoder_start_token_id first), then its classification head
 * (dense, tanh, out_proj) on the decoder's state at each row's last
 * eos_token_id: on meta the ids have no values and the last token stands
 * for it, as torch's meta nonzero assumes every position selected.
 *
 * Not modelled: T5ForQuestionAnswering, float16's
 * clamping of infinities between sublayers (values only), eager
 * attention (sdpa is built whatever _attn_implementation says). */
#include "models/blocks.h"
#include "models/t5.h"
#include "mtk/ops.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>


static mtk_module *child(mtk_module *m, int32_t i) { return blocks_child(m, i); }

static bool done(mtk_module_io *io, int32_t nout)
{
    io->nout = nout;
    for (int32_t i = 0; i < nout; i++)
        if (!io->out[i]) return false;
    return true;
}

double models_t5_dtype_min(mtk_dtype dtype)
{
    switch (dtype) {
    case MTK_FLOAT16: return -65504.0;
    case MTK_BFLOAT16: return -3.3895313892515355e38;
    case MTK_FLOAT64: return -DBL_MAX;
    default: return -FLT_MAX;
    }
}

/* ------------------------------------------------------------ T5LayerNorm */

typedef struct norm_config {
    int64_t hidden;
    double eps;
} norm_config;

static bool norm_reset(mtk_module *m, mtk_rng *rng)
{
    (void)rng;
    return mtk_init_ones_(mtk_module_param_at(m, 0, NULL));
}

/* weight * (x * rsqrt(mean(x.float()^2) + eps)), cast to a half weight's
 * dtype first: (..., D) -> (..., D) */
static bool norm_forward(mtk_module *m, mtk_module_io *io)
{
    mtk_ctx *ctx = mtk_module_ctx(m);
    const norm_config *c = mtk_module_config(m);
    mtk_tensor *w = mtk_module_param_at(m, 0, NULL), *x = io->in[0];
    int64_t last = -1;
    mtk_tensor *variance = mtk_mean(ctx, mtk_pow_scalar(ctx, mtk_to_dtype(ctx, x, MTK_FLOAT32), mtk_value_int(2)),
                                    &last, 1, true, MTK_DTYPE_UNDEFINED); /* (..., 1) f32 */
    mtk_tensor *h = mtk_mul(ctx, x, mtk_rsqrt(ctx, mtk_add_scalar(ctx, variance, mtk_value_float(c->eps))));
    if (w->dtype == MTK_FLOAT16 || w->dtype == MTK_BFLOAT16) h = mtk_to_dtype(ctx, h, w->dtype);
    io->out[0] = mtk_mul(ctx, w, h);
    return done(io, 1);
}

static const mtk_module_type norm_type = { "T5LayerNorm", norm_forward, norm_reset, NULL };

static mtk_module *layer_norm(mtk_ctx *ctx, const t5_spec *s)
{
    mtk_module *m = mtk_module_new(ctx, &norm_type, sizeof(norm_config));
    if (!m) return NULL;
    *(norm_config *)mtk_module_config(m) = (norm_config){ s->d_model, s->eps };
    return mtk_module_new_parameter(m, "weight", &s->d_model, 1) ? mtk_module_finish(m) : NULL;
}

/* ------------------------------------------------------------ feed-forward */

/* T5DenseActDense: wo(dropout(act(wi(x)))); children wi, wo, dropout, act */
static bool dense_forward(mtk_module *m, mtk_module_io *io)
{
    mtk_tensor *h = mtk_module_forward(child(m, 3), mtk_module_forward(child(m, 0), io->in[0])); /* (B, S, F) */
    io->out[0] = mtk_module_forward(child(m, 1), mtk_module_forward(child(m, 2), h));
    return done(io, 1);
}

/* T5DenseGatedActDense: wo(dropout(act(wi_0(x)) * wi_1(x))); children
 * wi_0, wi_1, wo, dropout, act */
static bool gated_forward(mtk_module *m, mtk_module_io *io)
{
    mtk_ctx *ctx = mtk_module_ctx(m);
    mtk_tensor *gate = mtk_module_forward(child(m, 4), mtk_module_forward(child(m, 0), io->in[0])); /* (B, S, F) */
    mtk_tensor *h = mtk_mul(ctx, gate, mtk_module_forward(child(m, 1), io->in[0]));
    io->out[0] = mtk_module_forward(child(m, 2), mtk_module_forward(child(m, 3), h));
    return done(io, 1);
}

static const mtk_module_type dense_type = { "T5DenseActDense", dense_forward, NULL, NULL };
static const mtk_module_type gated_type = { "T5DenseGatedActDense", gated_forward, NULL, NULL };

/* T5LayerFF: x + dropout(DenseReluDense(layer_norm(x))) */
static bool ff_forward(mtk_module *m, mtk_module_io *io)
{
    mtk_tensor *h = mtk_module_forward(child(m, 0), mtk_module_forward(child(m, 1), io->in[0]));
    io->out[0] = mtk_add(mtk_module_ctx(m), io->in[0], mtk_module_forward(child(m, 2), h));
    return done(io, 1);
}

static const mtk_module_type ff_type = { "T5LayerFF", ff_forward, NULL, NULL };

static mtk_module *feed_forward(const model_config *c, const t5_spec *s)
{
    mtk_ctx *ctx = c->ctx;
    mtk_module *dense = mtk_module_new(ctx, s->gated ? &gated_type : &dense_type, 0);
    bool ok = dense != NULL;
    if (ok && s->gated)
        ok = mtk_module_add(dense, "wi_0", mtk_nn_linear(ctx, s->d_model, s->d_ff, false)) &&
             mtk_module_add(dense, "wi_1", mtk_nn_linear(ctx, s->d_model, s->d_ff, false));
    else if (ok)
        ok = mtk_module_add(dense, "wi", mtk_nn_linear(ctx, s->d_model, s->d_ff, false));
    ok = ok && mtk_module_add(dense, "wo", mtk_nn_linear(ctx, s->d_ff, s->d_model, false)) &&
         mtk_module_add(dense, "dropout", mtk_nn_dropout(ctx, s->dropout)) &&
         mtk_module_add(dense, "act", models_blocks_activation(c, "feed_forward_proj", s->act));
    mtk_module *m = ok ? mtk_module_new(ctx, &ff_type, 0) : NULL;
    ok = m && mtk_module_add(m, "DenseReluDense", mtk_module_finish(dense)) &&
         mtk_module_add(m, "layer_norm", layer_norm(ctx, s)) && mtk_module_add(m, "dropout", mtk_nn_dropout(ctx, s->dropout));
    return ok ? mtk_module_finish(m) : NULL;
}

/* --------------------------------------------------------------- attention */


/* _relative_position_bucket of (Q, K) int64 relative positions (memory -
 * query): bidirectional halves the buckets by sign; below max_exact
 * exact, then logarithmic up to max_distance, capped at the last.  Its
 * locals (the positions' abs or clamp, is_small, the large buckets) live
 * until it returns, as the Python frame keeps them. */
static mtk_tensor *relative_bucket(mtk_ctx *ctx, mtk_tensor *rel, const t5_attention_config *c)
{
    int64_t buckets = c->buckets;
    mtk_tensor *base = NULL; /* the sign's buckets (bidirectional) */
    if (!c->decoder) {
        buckets /= 2;
        base = mtk_mul_scalar(ctx, mtk_to_dtype(ctx, mtk_gt(ctx, rel, mtk_zeros(ctx, NULL, 0, MTK_INT64)), MTK_INT64),
                              mtk_value_int(buckets));
        rel = mtk_abs(ctx, rel);
    } else {
        rel = mtk_neg(ctx, mtk_minimum(ctx, rel, mtk_zeros_like(ctx, rel, MTK_DTYPE_UNDEFINED)));
    }
    int64_t max_exact = buckets / 2;
    mtk_tensor *is_small = mtk_lt(ctx, rel, mtk_full(ctx, NULL, 0, (double)max_exact, MTK_INT64));
    mtk_tensor *ratio = mtk_div_scalar(ctx, mtk_to_dtype(ctx, rel, MTK_FLOAT32), mtk_value_int(max_exact));
    mtk_tensor *scaled = mtk_mul_scalar(
        ctx, mtk_div_scalar(ctx, mtk_log(ctx, ratio), mtk_value_float(log((double)c->max_distance / (double)max_exact))),
        mtk_value_int(buckets - max_exact));
    mtk_tensor *large = mtk_add_scalar(ctx, mtk_to_dtype(ctx, scaled, MTK_INT64), mtk_value_int(max_exact));
    large = mtk_minimum(ctx, large, mtk_full_like(ctx, large, (double)(buckets - 1), MTK_DTYPE_UNDEFINED));
    mtk_tensor *picked = mtk_where(ctx, is_small, rel, large);
    mtk_tensor *out = base ? mtk_add(ctx, base, picked) : mtk_add_scalar(ctx, picked, mtk_value_int(0));
    bool held = models_blocks_held_until_here(ctx, rel) && models_blocks_held_until_here(ctx, is_small) &&
                models_blocks_held_until_here(ctx, large);
    return held ? out : NULL;
}

mtk_tensor *models_t5_position_bias(mtk_module *m, int64_t q_len, int64_t k_len, int64_t past, const mtk_tensor *like)
{
    mtk_ctx *ctx = mtk_module_ctx(m);
    const t5_attention_config *c = mtk_module_config(m);
    if (!like || !mtk_ctx_push_device(ctx, like->device)) return NULL;
    int64_t col[2] = { q_len, 1 }, row[2] = { 1, k_len };
    mtk_tensor *context = mtk_add_scalar(ctx, mtk_view(ctx, mtk_arange_int(ctx, 0, q_len, 1, MTK_INT64), col, 2),
                                         mtk_value_int(past)); /* (Q, 1) + past_seen_tokens */
    mtk_tensor *memory = mtk_view(ctx, mtk_arange_int(ctx, 0, k_len, 1, MTK_INT64), row, 2); /* (1, K) */
    mtk_tensor *rel = mtk_sub(ctx, memory, context);
    mtk_tensor *bucket = relative_bucket(ctx, rel, c); /* (Q, K) */
    mtk_ctx_pop_device(ctx);
    mtk_tensor *values = mtk_module_forward(child(m, 4), bucket); /* (Q, K, H) */
    int64_t perm[3] = { 2, 0, 1 };
    mtk_tensor *bias = mtk_unsqueeze(ctx, mtk_permute(ctx, values, perm, 3), 0); /* (1, H, Q, K) */
    /* compute_bias's locals, the (Q, K) int64 positions and buckets among
       them, live until it returns */
    bool held = models_blocks_held_until_here(ctx, context) && models_blocks_held_until_here(ctx, memory) &&
                models_blocks_held_until_here(ctx, rel) && models_blocks_held_until_here(ctx, bucket);
    return held ? bias : NULL;
}

mtk_tensor *models_t5_cross_padding_bias(mtk_ctx *ctx, mtk_tensor *attention_mask, int64_t heads, int64_t t_len,
                                         mtk_dtype dtype, const mtk_tensor *like, bool *failed)
{
    /* (B, 1, S, S), the keys' padding expanded over the queries */
    mtk_tensor *padding = models_blocks_bidirectional_mask(ctx, attention_mask, failed);
    if (!padding || !like) {
        *failed = *failed || !like;
        return NULL;
    }
    int64_t b = padding->shape[0], s = padding->shape[3];
    int64_t keys[4] = { b, 1, 1, s }, zeros_shape[4] = { 1, heads, t_len, s };
    mtk_tensor *out = NULL;
    if (mtk_ctx_push_device(ctx, like->device)) {
        mtk_tensor *key_mask = mtk_narrow(ctx, padding, 2, 0, 1); /* (B, 1, 1, S) */
        mtk_tensor *zeros = mtk_zeros(ctx, zeros_shape, 4, dtype);
        mtk_tensor *low = mtk_full(ctx, NULL, 0, models_t5_dtype_min(dtype), dtype);
        out = mtk_contiguous(ctx, mtk_where(ctx, mtk_view(ctx, mtk_contiguous(ctx, key_mask), keys, 4), zeros, low));
        mtk_ctx_pop_device(ctx); /* (B, H, T, S) */
    }
    *failed = out == NULL;
    return out;
}

/* io: hidden (B, Q, D) [, key_value_states (B, K, D) when cross]
 * [, position_bias (1, H, Q, K)] -> output (B, Q, D), position_bias
 * [, in a decoder: the cached keys and values (B, H, K, d)] */
static bool attention_forward(mtk_module *m, mtk_module_io *io)
{
    mtk_ctx *ctx = mtk_module_ctx(m);
    const t5_attention_config *c = mtk_module_config(m);
    int32_t nfixed = c->cross ? 2 : 1;
    mtk_tensor *x = io->in[0], *kv = c->cross ? io->in[1] : x;
    mtk_tensor *bias = io->nin > nfixed ? io->in[nfixed] : NULL;
    mtk_tensor *q = models_blocks_split_heads(ctx, mtk_module_forward(child(m, 0), x), c->heads, c->d_kv);  /* (B, H, Q, d) */
    mtk_tensor *k = models_blocks_split_heads(ctx, mtk_module_forward(child(m, 1), kv), c->heads, c->d_kv); /* (B, H, K, d) */
    mtk_tensor *v = models_blocks_split_heads(ctx, mtk_module_forward(child(m, 2), kv), c->heads, c->d_kv);
    if (c->decoder && k && v) {
        /* a decoder's T5Stack builds an EncoderDecoderCache (use_cache,
           the config's default; off only under gradient checkpointing in
           training): DynamicLayer.update concatenates the new keys and
           values onto its empty cache, copies (B, H, K, d) the model's
           output holds (outputs 2 and 3); the projections are freed */
        k = mtk_cat(ctx, &k, 1, 2);
        v = mtk_cat(ctx, &v, 1, 2);
    }
    if (!q || !k || !v) return false;
    int64_t q_len = x->shape[1], k_len = k->shape[2];
    if (!bias) {
        if (c->relative_bias) {
            bias = models_t5_position_bias(m, q_len, k_len, 0, q);
        } else {
            int64_t shape[4] = { 1, c->heads, q_len, k_len };
            if (!mtk_ctx_push_device(ctx, q->device)) return false;
            bias = mtk_zeros(ctx, shape, 4, q->dtype);
            mtk_ctx_pop_device(ctx);
        }
    }
    /* sdpa_attention_forward: the decoder's causal self-attention over
       more than one query folds the causal mask into the bias */
    mtk_tensor *mask = bias, *causal = NULL;
    if (c->decoder && !c->cross && q_len > 1) {
        if (!mtk_ctx_push_device(ctx, q->device)) return false;
        int64_t col[2] = { q_len, 1 }, row[2] = { 1, k_len }, shape[4] = { 1, 1, q_len, k_len };
        causal = mtk_ge(ctx, mtk_view(ctx, mtk_arange_int(ctx, 0, q_len, 1, MTK_INT64), col, 2),
                                    mtk_view(ctx, mtk_arange_int(ctx, 0, k_len, 1, MTK_INT64), row, 2));
        mtk_tensor *low = mtk_full(ctx, NULL, 0, models_t5_dtype_min(k->dtype), bias ? bias->dtype : k->dtype);
        mask = mtk_where(ctx, mtk_view(ctx, causal, shape, 4), bias, low);
        mtk_ctx_pop_device(ctx);
    }
    mask = mtk_contiguous(ctx, mask);
    /* create_position_bias_mask's causal_mask (Q, K) bool lives until it
       returns: through the copy contiguous makes of where's output, laid
       out as the permuted bias */
    if (causal && !models_blocks_held_until_here(ctx, causal)) return false;
    double dropout = mtk_module_is_training(m) ? c->dropout : 0.0;
    mtk_tensor *attn = mtk_scaled_dot_product_attention(ctx, q, k, v, mask, dropout, false, 1.0, false);
    io->out[0] = mtk_module_forward(child(m, 3), mtk_contiguous(ctx, models_blocks_merge_heads(ctx, attn)));
    io->out[1] = bias;
    io->out[2] = k;
    io->out[3] = v;
    return done(io, c->decoder ? 4 : 2);
}

static const mtk_module_type attention_type = { "T5Attention", attention_forward, NULL, NULL };

static mtk_module *attention(mtk_ctx *ctx, const t5_spec *s, bool relative_bias, bool decoder, bool cross)
{
    mtk_module *m = mtk_module_new(ctx, &attention_type, sizeof(t5_attention_config));
    if (!m) return NULL;
    *(t5_attention_config *)mtk_module_config(m) =
        (t5_attention_config){ s->heads, s->d_kv, s->buckets, s->max_distance, s->dropout, relative_bias, decoder, cross };
    int64_t inner = s->heads * s->d_kv;
    bool ok = mtk_module_add(m, "q", mtk_nn_linear(ctx, s->d_model, inner, false)) &&
              mtk_module_add(m, "k", mtk_nn_linear(ctx, s->d_model, inner, false)) &&
              mtk_module_add(m, "v", mtk_nn_linear(ctx, s->d_model, inner, false)) &&
              mtk_module_add(m, "o", mtk_nn_linear(ctx, inner, s->d_model, false));
    if (ok && relative_bias)
        ok = mtk_module_add(m, "relative_attention_bias",
                            mtk_nn_embedding(ctx, s->buckets, s->heads, MTK_NN_NO_PADDING_IDX));
    return ok ? mtk_module_finish(m) : NULL;
}

/* T5LayerSelfAttention / T5LayerCrossAttention: x + dropout(attention(
 * layer_norm(x) [, kv] [, bias])); children: attention, layer_norm,
 * dropout.  io as the attention's, out: hidden, position_bias */
static bool sublayer_forward(mtk_module *m, mtk_module_io *io)
{
    mtk_module_io a = *io;
    a.in[0] = mtk_module_forward(child(m, 1), io->in[0]);
    a.nout = 0;
    if (!a.in[0] || !mtk_module_call(child(m, 0), &a)) return false;
    io->out[0] = mtk_add(mtk_module_ctx(m), io->in[0], mtk_module_forward(child(m, 2), a.out[0]));
    io->out[1] = a.out[1];
    return done(io, 2);
}

static const mtk_module_type self_layer_type = { "T5LayerSelfAttention", sublayer_forward, NULL, NULL };
static const mtk_module_type cross_layer_type = { "T5LayerCrossAttention", sublayer_forward, NULL, NULL };

static mtk_module *sublayer(mtk_ctx *ctx, const t5_spec *s, bool relative_bias, bool decoder, bool cross)
{
    mtk_module *m = mtk_module_new(ctx, cross ? &cross_layer_type : &self_layer_type, 0);
    bool ok = m && mtk_module_add(m, cross ? "EncDecAttention" : "SelfAttention",
                                  attention(ctx, s, relative_bias, decoder, cross)) &&
              mtk_module_add(m, "layer_norm", layer_norm(ctx, s)) && mtk_module_add(m, "dropout", mtk_nn_dropout(ctx, s->dropout));
    return ok ? mtk_module_finish(m) : NULL;
}

/* ------------------------------------------------------------------ block */

/* T5Block.  Encoder io: hidden [, self bias] -> hidden, self bias.
 * Decoder io: hidden, encoder hidden [, self bias, cross bias] -> hidden,
 * self bias, cross bias.  Child 0 is the `layer` ModuleList. */
static bool block_forward(mtk_module *m, mtk_module_io *io)
{
    mtk_module *layers = child(m, 0);
    bool decoder = mtk_module_child_count(layers) == 3;
    bool first = io->nin == (decoder ? 2 : 1);
    mtk_module_io self = { .in = { io->in[0] }, .nin = 1 };
    if (!first) self.in[self.nin++] = io->in[decoder ? 2 : 1];
    if (!mtk_module_call(child(layers, 0), &self)) return false;
    mtk_tensor *h = self.out[0];
    if (decoder) {
        mtk_module_io cross = { .in = { h, io->in[1] }, .nin = 2 };
        if (!first) cross.in[cross.nin++] = io->in[3];
        if (!mtk_module_call(child(layers, 1), &cross)) return false;
        h = cross.out[0];
        io->out[2] = cross.out[1];
    }
    io->out[0] = mtk_module_forward(child(layers, decoder ? 2 : 1), h);
    io->out[1] = self.out[1];
    return done(io, decoder ? 3 : 2);
}

static const mtk_module_type block_type = { "T5Block", block_forward, NULL, NULL };

static mtk_module *block(const model_config *c, const t5_spec *s, bool first, bool decoder)
{
    mtk_ctx *ctx = c->ctx;
    mtk_module *layers = mtk_nn_module_list(ctx);
    bool ok = layers && mtk_nn_module_list_append(layers, sublayer(ctx, s, first, decoder, false));
    if (ok && decoder) ok = mtk_nn_module_list_append(layers, sublayer(ctx, s, false, true, true));
    ok = ok && mtk_nn_module_list_append(layers, feed_forward(c, s));
    mtk_module *m = ok ? mtk_module_new(ctx, &block_type, 0) : NULL;
    return m && mtk_module_add(m, "layer", layers) ? mtk_module_finish(m) : NULL;
}

/* ------------------------------------------------------------------ stack */

/* The encoder's padding folded into block 0's position bias, as
 * sdpa_attention_forward's create_position_bias_mask does in every layer:
 * where(mask, position_bias, finfo.min), (B, H, S, S); the later blocks
 * reuse it.  NULL with *failed false when nothing is padding. */
static mtk_tensor *padded_bias(mtk_module *blocks, mtk_tensor *h, mtk_tensor *attention_mask, bool *failed)
{
    mtk_ctx *ctx = mtk_module_ctx(blocks);
    mtk_tensor *padding = models_blocks_bidirectional_mask(ctx, attention_mask, failed); /* (B, 1, S, S) */
    if (!padding) return NULL;
    /* blocks[0].layer[0].SelfAttention */
    mtk_module *attn = child(child(child(child(blocks, 0), 0), 0), 0);
    const t5_attention_config *c = mtk_module_config(attn);
    int64_t s = h->shape[1], shape[4] = { 1, c->heads, s, s };
    mtk_tensor *bias;
    if (c->relative_bias) {
        bias = models_t5_position_bias(attn, s, s, 0, h);
    } else {
        if (!mtk_ctx_push_device(ctx, h->device)) return NULL;
        bias = mtk_zeros(ctx, shape, 4, h->dtype);
        mtk_ctx_pop_device(ctx);
    }
    mtk_tensor *low = bias ? mtk_full(ctx, NULL, 0, models_t5_dtype_min(h->dtype), bias->dtype) : NULL;
    mtk_tensor *out = mtk_where(ctx, padding, bias, low);
    *failed = out == NULL;
    return out;
}

/* T5Stack.  Encoder: ids (B, S) [, attention_mask (B, S)]; decoder: ids
 * (B, T), encoder hidden (B, S, D) [, the encoder's attention_mask (B, S)]
 * -> hidden (B, S or T, D).  Children: embed_tokens, block,
 * final_layer_norm, dropout. */
static bool stack_forward(mtk_module *m, mtk_module_io *io)
{
    if (!models_blocks_check_token_ids(m, io->in[0], 0, NULL)) return false;
    mtk_module *blocks = child(m, 1);
    /* the decoder's second input is the encoder's hidden states, the
       encoder's a 2-D attention_mask */
    bool decoder = io->nin > 1 && io->in[1]->ndim == 3;
    mtk_tensor *h = mtk_module_forward(child(m, 3), mtk_module_forward(child(m, 0), io->in[0])); /* (B, S, D) */
    mtk_tensor *self_bias = NULL, *cross_bias = NULL;
    if (!decoder && io->nin > 1 && h) {
        bool failed;
        self_bias = padded_bias(blocks, h, io->in[1], &failed);
        if (failed) return false;
    } else if (decoder && io->nin > 2 && h) {
        /* the encoder's attention_mask (B, S): its padding folded into the
           cross-attention bias (B, H, T, S), block 0's self-attention bias
           made here so that both go to every block */
        mtk_module *self_attn = child(child(child(child(blocks, 0), 0), 0), 0);
        const t5_attention_config *c = mtk_module_config(self_attn);
        bool failed;
        cross_bias = models_t5_cross_padding_bias(mtk_module_ctx(m), io->in[2], c->heads, h->shape[1], h->dtype, h,
                                                  &failed);
        if (failed) return false;
        if (cross_bias) {
            self_bias = models_t5_position_bias(self_attn, h->shape[1], h->shape[1], 0, h);
            if (!self_bias) return false;
        }
    }
    for (int32_t i = 0; h && i < mtk_module_child_count(blocks); i++) {
        mtk_module_io b = { .in = { h }, .nin = 1 };
        if (decoder) b.in[b.nin++] = io->in[1];
        if (i > 0 || self_bias) { /* the biases block 0 returned, or the padded ones */
            b.in[b.nin++] = self_bias;
            if (decoder) b.in[b.nin++] = cross_bias;
        }
        if (!mtk_module_call(child(blocks, i), &b)) return false;
        h = b.out[0];
        self_bias = b.out[1];
        if (decoder) cross_bias = b.out[2];
    }
    io->out[0] = mtk_module_forward(child(m, 3), mtk_module_forward(child(m, 2), h));
    return done(io, 1);
}

static const mtk_module_type stack_type = { "T5Stack", stack_forward, NULL, NULL };

static mtk_module *stack(const model_config *c, const t5_spec *s, bool decoder)
{
    mtk_ctx *ctx = c->ctx;
    mtk_module *blocks = mtk_nn_module_list(ctx);
    if (!blocks) return NULL;
    int64_t n = decoder ? s->decoder_layers : s->layers;
    for (int64_t i = 0; i < n; i++)
        if (!mtk_nn_module_list_append(blocks, block(c, s, i == 0, decoder))) return NULL;
    mtk_module *m = mtk_module_new(ctx, &stack_type, 0);
    bool ok = m && mtk_module_add(m, "embed_tokens", mtk_nn_embedding(ctx, s->vocab, s->d_model, MTK_NN_NO_PADDING_IDX)) &&
              mtk_module_add(m, "block", blocks) && mtk_module_add(m, "final_layer_norm", layer_norm(ctx, s)) &&
              mtk_module_add(m, "dropout", mtk_nn_dropout(ctx, s->dropout));
    return ok ? mtk_module_finish(m) : NULL;
}

/* ------------------------------------------------------------------ models */

/* The seq2seq input check: encoder ids and decoder ids, same batch. */
static bool check_seq2seq(mtk_module *m, const mtk_module_io *io)
{
    if (io->nin == 3 && (io->in[2]->ndim != 2 || io->in[0]->ndim != 2 || io->in[2]->shape[0] != io->in[0]->shape[0] ||
                         io->in[2]->shape[1] != io->in[0]->shape[1]))
        return mtk_error(mtk_module_ctx(m), MTK_ERR_SHAPE, "%s: the attention_mask must be (B, S) like the encoder's ids",
                         mtk_module_type_name(m));
    if ((io->nin == 2 || io->nin == 3) && io->in[0]->ndim == 2 && io->in[1]->ndim == 2 &&
        io->in[0]->shape[0] == io->in[1]->shape[0])
        return true;
    if (io->nin >= 2 && io->in[0]->ndim == 2 && io->in[1]->ndim == 2)
        return mtk_error(mtk_module_ctx(m), MTK_ERR_SHAPE,
                         "%s: the encoder's ids have a batch of %lld, the decoder's of %lld",
                         mtk_module_type_name(m), (long long)io->in[0]->shape[0], (long long)io->in[1]->shape[0]);
    return mtk_error(mtk_module_ctx(m), MTK_ERR_SHAPE,
                     "%s is an encoder-decoder: it takes the encoder's token ids (B, S) and the decoder's (B, T), "
                     "got %d input%s (try --input 1x512 --input 1x64)",
                     mtk_module_type_name(m), (int)io->nin, io->nin == 1 ? "" : "s");
}

/* T5Model / T5ForConditionalGeneration: ids (B, S), decoder ids (B, T)
 * [, attention_mask (B, S)] -> decoder hidden (B, T, D) or logits (B, T,
 * V), encoder hidden (B, S, D).  The mask's padding is applied in the
 * encoder's self-attention and the decoder's cross-attention.
 * Children: shared, encoder, decoder [, lm_head]. */
static bool seq2seq_forward(mtk_module *m, mtk_module_io *io)
{
    if (!check_seq2seq(m, io)) return false;
    mtk_ctx *ctx = mtk_module_ctx(m);
    mtk_tensor *mask = io->nin == 3 ? io->in[2] : NULL, *h = NULL;
    mtk_tensor *encoded = mask ? mtk_module_forward2(child(m, 1), io->in[0], mask)
                               : mtk_module_forward(child(m, 1), io->in[0]);
    mtk_module_io d = { .in = { io->in[1], encoded, mask }, .nin = mask ? 3 : 2 };
    if (encoded && mtk_module_call(child(m, 2), &d)) h = d.out[0];
    if (mtk_module_child_count(m) == 4) {
        const t5_spec *s = mtk_module_config(m);
        if (s->scale_output) h = mtk_mul_scalar(ctx, h, mtk_value_float(pow((double)s->d_model, -0.5)));
        h = mtk_module_forward(child(m, 3), h);
    }
    io->out[0] = h;
    io->out[1] = encoded;
    return done(io, 2);
}

/* The encoder-only classes take the encoder's ids alone. */
static bool check_one_input(mtk_module *m, const mtk_module_io *io)
{
    if (io->nin == 1) return true;
    return mtk_error(mtk_module_ctx(m), MTK_ERR_SHAPE,
                     "%s has no decoder: it takes the encoder's token ids (B, S) only, got %d inputs",
                     mtk_module_type_name(m), (int)io->nin);
}

/* T5EncoderModel: ids (B, S)[, attention_mask (B, S)] -> hidden (B, S,
 * D); children shared, encoder */
static bool encoder_model_forward(mtk_module *m, mtk_module_io *io)
{
    bool masked = io->nin == 2 && io->in[1]->ndim == 2 && io->in[1]->shape[0] == io->in[0]->shape[0] &&
                  io->in[1]->shape[1] == io->in[0]->shape[1]; /* an attention_mask like the ids */
    if (!masked && !check_one_input(m, io)) return false;
    io->out[0] = masked ? mtk_module_forward2(child(m, 1), io->in[0], io->in[1]) : mtk_module_forward(child(m, 1), io->in[0]);
    return done(io, 1);
}

/* T5ForTokenClassification: ids (B, S) -> logits (B, S, labels) */
static bool token_classification_forward(mtk_module *m, mtk_module_io *io)
{
    if (!check_one_input(m, io)) return false;
    mtk_tensor *h = mtk_module_forward(child(m, 1), mtk_module_forward(child(m, 0), io->in[0]));
    io->out[0] = mtk_module_forward(child(m, 2), h);
    return done(io, 1);
}

/* The index of row b's last eos token and the row's eos count (ids on the cpu). */
static int64_t last_eos(const mtk_tensor *ids, int64_t b, int64_t eos, int64_t *count)
{
    int64_t last = -1;
    *count = 0;
    for (int64_t i = 0; i < ids->shape[1]; i++) {
        const char *at = (const char *)mtk_tensor_data(ids) +
                         (b * ids->stride[0] + i * ids->stride[1]) * (int64_t)mtk_dtype_size(ids->dtype);
        int64_t v = ids->dtype == MTK_INT64 ? *(const int64_t *)at : *(const int32_t *)at;
        if (v == eos) last = i, (*count)++;
    }
    return last;
}

/* The decoder state (B, S, D) at each row's last eos of ids (B, S) -> (B, D);
 * every row must hold as many eos tokens, at least one. */
static mtk_tensor *pool_eos(mtk_module *m, mtk_tensor *h, const mtk_tensor *ids, int64_t eos)
{
    mtk_ctx *ctx = mtk_module_ctx(m);
    int64_t batch = h->shape[0], seq = h->shape[1], first_count = 0;
    if (batch > 4096) {
        mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "%s: at most 4096 sequences, got %lld", mtk_module_type_name(m),
                  (long long)batch);
        return NULL;
    }
    bool known = !mtk_tensor_is_meta(ids) && (ids->dtype == MTK_INT64 || ids->dtype == MTK_INT32);
    mtk_tensor *rows[4096];
    for (int64_t b = 0; b < batch; b++) {
        int64_t count = 1, at = known ? last_eos(ids, b, eos, &count) : seq - 1;
        if (b == 0) first_count = count;
        if (count != first_count || count == 0) {
            mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT,
                      "%s: every row needs the same number of <eos> tokens (eos_token_id %lld), at least one: "
                      "row 0 has %lld, row %lld has %lld",
                      mtk_module_type_name(m), (long long)eos, (long long)first_count, (long long)b, (long long)count);
            return NULL;
        }
        rows[b] = mtk_select(ctx, mtk_select(ctx, h, 0, b), 0, at); /* (D) */
    }
    return mtk_stack(ctx, rows, (int32_t)batch, 0);
}

/* T5ForSequenceClassification: ids (B, S) [, decoder ids (B, T)] ->
 * logits (B, labels); children transformer (T5Model), classification_head */
static bool sequence_classification_forward(mtk_module *m, mtk_module_io *io)
{
    mtk_ctx *ctx = mtk_module_ctx(m);
    const t5_spec *s = mtk_module_config(m);
    mtk_tensor *ids = io->in[0], *decoder_ids = io->nin > 1 ? io->in[1] : NULL;
    if (io->nin > 2 || ids->ndim != 2)
        return mtk_error(ctx, MTK_ERR_SHAPE, "%s: takes token ids (B, S) and optionally decoder ids (B, T), got %d inputs",
                         mtk_module_type_name(m), (int)io->nin);
    if (!decoder_ids) {
        int64_t shift[2] = { 1, -1 }; /* the decoder start first, the last token dropped */
        decoder_ids = mtk_pad(ctx, ids, shift, 2, "constant", (double)s->decoder_start); /* (B, S) */
    }
    mtk_tensor *h = mtk_module_forward2(child(m, 0), ids, decoder_ids); /* (B, T, D) */
    if (!h) return false;
    if (h->shape[1] != ids->shape[1])
        return mtk_error(ctx, MTK_ERR_SHAPE, "%s: pools the decoder at the encoder ids' <eos> positions, so the "
                         "decoder ids need the encoder's length %lld, got %lld", mtk_module_type_name(m),
                         (long long)ids->shape[1], (long long)h->shape[1]);
    io->out[0] = mtk_module_forward(child(m, 1), pool_eos(m, h, ids, s->eos)); /* (B, labels) */
    return done(io, 1);
}

/* T5ClassificationHead: dropout, dense, tanh, dropout, out_proj: (B, D) -> (B, labels) */
static bool classification_head_forward(mtk_module *m, mtk_module_io *io)
{
    mtk_module *dropout = child(m, 1);
    mtk_tensor *h = mtk_module_forward(child(m, 0), mtk_module_forward(dropout, io->in[0]));
    h = mtk_module_forward(dropout, mtk_tanh(mtk_module_ctx(m), h));
    io->out[0] = mtk_module_forward(child(m, 2), h);
    return done(io, 1);
}

static const mtk_module_type sequence_classification_type = { "T5ForSequenceClassification",
                                                              sequence_classification_forward, NULL, NULL };
static const mtk_module_type classification_head_type = { "T5ClassificationHead", classification_head_forward,
                                                          NULL, NULL };

static const mtk_module_type model_type = { "T5Model", seq2seq_forward, NULL, NULL };
static const mtk_module_type generation_type = { "T5ForConditionalGeneration", seq2seq_forward, NULL, NULL };
static const mtk_module_type encoder_model_type = { "T5EncoderModel", encoder_model_forward, NULL, NULL };
static const mtk_module_type token_classification_type = { "T5ForTokenClassification", token_classification_forward,
                                                           NULL, NULL };

/* shared, encoder [, decoder [, lm_head]], with transformers' ties. */
static mtk_module *t5_model(const model_config *c, const t5_spec *s, const mtk_module_type *type)
{
    mtk_ctx *ctx = c->ctx;
    bool decoder = type != &encoder_model_type, lm_head = type == &generation_type;
    mtk_module *m = mtk_module_new(ctx, type, sizeof(t5_spec));
    if (!m) return NULL;
    *(t5_spec *)mtk_module_config(m) = *s;
    bool ok = mtk_module_add(m, "shared", mtk_nn_embedding(ctx, s->vocab, s->d_model, MTK_NN_NO_PADDING_IDX)) &&
              mtk_module_add(m, "encoder", stack(c, s, false));
    if (ok && decoder) ok = mtk_module_add(m, "decoder", stack(c, s, true));
    if (ok && lm_head) ok = mtk_module_add(m, "lm_head", mtk_nn_linear(ctx, s->d_model, s->vocab, false));
    ok = ok && mtk_module_tie(m, "encoder.embed_tokens.weight", "shared.weight");
    if (ok && decoder) ok = mtk_module_tie(m, "decoder.embed_tokens.weight", "shared.weight");
    if (ok && lm_head) ok = mtk_module_tie(m, "lm_head.weight", "shared.weight");
    return ok ? mtk_module_finish(m) : NULL;
}

static mtk_module *token_classification(const model_config *c, const t5_spec *s)
{
    mtk_ctx *ctx = c->ctx;
    mtk_module *m = mtk_module_new(ctx, &token_classification_type, 0);
    bool ok = m && mtk_module_add(m, "transformer", t5_model(c, s, &encoder_model_type)) &&
              mtk_module_add(m, "dropout", mtk_nn_dropout(ctx, s->classifier_dropout)) &&
              mtk_module_add(m, "classifier", mtk_nn_linear(ctx, s->d_model, s->labels, true));
    return ok ? mtk_module_finish(m) : NULL;
}

/* transformer (T5Model), classification_head (dense, dropout, out_proj) */
static mtk_module *sequence_classification(const model_config *c, const t5_spec *s)
{
    mtk_ctx *ctx = c->ctx;
    mtk_module *head = mtk_module_new(ctx, &classification_head_type, 0);
    bool ok = head && mtk_module_add(head, "dense", mtk_nn_linear(ctx, s->d_model, s->d_model, true)) &&
              mtk_module_add(head, "dropout", mtk_nn_dropout(ctx, s->classifier_dropout)) &&
              mtk_module_add(head, "out_proj", mtk_nn_linear(ctx, s->d_model, s->labels, true));
    mtk_module *m = ok ? mtk_module_new(ctx, &sequence_classification_type, sizeof(t5_spec)) : NULL;
    if (!m) return NULL;
    *(t5_spec *)mtk_module_config(m) = *s;
    ok = mtk_module_add(m, "transformer", t5_model(c, s, &model_type)) &&
         mtk_module_add(m, "classification_head", mtk_module_finish(head));
    return ok ? mtk_module_finish(m) : NULL;
}

/* ------------------------------------------------------------------ config */

/* feed_forward_proj: "ACT" or "gated-ACT"; gated-gelu means gelu_new. */
static bool read_feed_forward(model_config *c, t5_spec *s)
{
    const char *proj = models_cfg_string(c, "feed_forward_proj", "relu");
    if (!models_cfg_ok(c)) return false;
    const char *dash = strchr(proj, '-');
    if (dash && (strncmp(proj, "gated-", 6) != 0 || strchr(dash + 1, '-')))
        return models_cfg_fail(c, "feed_forward_proj", "'%s' is not ACT or gated-ACT (e.g. 'relu', 'gated-gelu')", proj);
    s->gated = dash != NULL;
    s->act = dash ? dash + 1 : proj;
    if (strcmp(proj, "gated-gelu") == 0) s->act = "gelu_new";
    return true;
}

static bool read_spec(model_config *c, t5_spec *s)
{
    memset(s, 0, sizeof *s);
    s->vocab = models_cfg_positive(c, "vocab_size", 32128);
    s->d_model = models_blocks_positive_alias(c, "d_model", "hidden_size", 512);
    s->d_kv = models_blocks_positive_alias(c, "d_kv", "head_dim", 64);
    s->d_ff = models_cfg_positive(c, "d_ff", 2048);
    s->heads = models_blocks_positive_alias(c, "num_heads", "num_attention_heads", 8);
    const char *layers_key = !models_cfg_has(c, "num_layers") && models_cfg_has(c, "num_hidden_layers")
                                 ? "num_hidden_layers" : "num_layers";
    s->layers = models_cfg_int(c, layers_key, 6);
    if (!models_cfg_check_layers(c, layers_key, s->layers)) return false;
    s->decoder_layers = models_cfg_int(c, "num_decoder_layers", s->layers);
    if (!models_cfg_check_layers(c, "num_decoder_layers", s->decoder_layers)) return false;
    s->buckets = models_cfg_positive(c, "relative_attention_num_buckets", 32);
    s->max_distance = models_cfg_positive(c, "relative_attention_max_distance", 128);
    s->dropout = models_blocks_dropout(c, "dropout_rate", 0.1);
    s->eps = models_blocks_eps(c, "layer_norm_epsilon", 1e-6);
    s->classifier_dropout = models_blocks_dropout(c, "classifier_dropout", 0.0);
    /* transformers 5 turns tie_word_embeddings false into
       scale_decoder_outputs false (and saves both, tie_word_embeddings then
       true); a config of transformers 4 has the first only */
    s->scale_output = models_cfg_bool(c, "scale_decoder_outputs", models_cfg_bool(c, "tie_word_embeddings", true));
    s->labels = models_blocks_num_labels(c);
    s->eos = models_cfg_int(c, "eos_token_id", 1);
    /* T5Config has no default; T5 checkpoints start the decoder with the pad token */
    s->decoder_start = models_cfg_int(c, "decoder_start_token_id", models_cfg_int(c, "pad_token_id", 0));
    /* no checks of the bucket arithmetic: transformers builds and runs
       any bucket count and distance on meta (a degenerate one, such as 2
       buckets, gives indices out of the bias table on a real device, where
       the embedding refuses them) */
    return read_feed_forward(c, s) && models_cfg_ok(c);
}

mtk_module *models_family_t5_build(model_config *c, const char *architecture)
{
    t5_spec s;
    if (!read_spec(c, &s)) return NULL;
    if (strcmp(architecture, "T5ForConditionalGeneration") == 0) {
        if (!s.scale_output)
            models_cfg_note(c, "lm_head is tied to shared, as transformers 5 builds this config (from_config); "
                               "from_pretrained unties it when the checkpoint holds its own lm_head.weight "
                               "(flan-t5): vocab_size x d_model parameters more");
        return t5_model(c, &s, &generation_type);
    }
    if (strcmp(architecture, "T5EncoderModel") == 0) return t5_model(c, &s, &encoder_model_type);
    if (strcmp(architecture, "T5ForTokenClassification") == 0) return token_classification(c, &s);
    if (strcmp(architecture, "T5ForSequenceClassification") == 0) return sequence_classification(c, &s);
    return t5_model(c, &s, &model_type);
}
