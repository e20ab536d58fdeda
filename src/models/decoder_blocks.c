/* The dense blocks of the decoder families: <Prefix>RMSNorm,
 * <Prefix>TextScaledWordEmbedding (gemma), <Prefix>Attention and
 * <Prefix>MLP, with transformers' parameter names and forward shapes. */
#include "models/blocks.h"
#include "models/decoder.h"
#include "mtk/ops.h"

#include <math.h>
#include <stdio.h>

/* ---------------------------------------------------------------- RMSNorm */

typedef struct norm_config {
    int64_t hidden;
    double eps;
    bool plus_one; /* gemma: weight starts at 0, the output is x * (1 + w) */
    bool weight_float32; /* olmo2: (w * normed x in float32).to(x's dtype) */
} norm_config;

static void norm_repr(const mtk_module *m, char *buf, size_t cap)
{
    const norm_config *c = mtk_module_config(m);
    snprintf(buf, cap, "(%lld,), eps=%g", (long long)c->hidden, c->eps);
}

static bool norm_reset(mtk_module *m, mtk_rng *rng)
{
    (void)rng;
    const norm_config *c = mtk_module_config(m);
    mtk_tensor *w = mtk_module_param_at(m, 0, NULL);
    return c->plus_one ? mtk_init_zeros_(w) : mtk_init_ones_(w);
}

/* (..., hidden) -> (..., hidden) */
static bool norm_forward(mtk_module *m, mtk_module_io *io)
{
    mtk_ctx *ctx = mtk_module_ctx(m);
    const norm_config *c = mtk_module_config(m);
    mtk_tensor *w = mtk_module_param_at(m, 0, NULL);
    if (c->plus_one) {
        /* GemmaRMSNorm: _norm(x.float()) * (1.0 + weight.float()), then
           type_as(x): in float32 whatever the model's dtype */
        mtk_tensor *x = io->in[0];
        mtk_tensor *normed = mtk_rms_norm(ctx, mtk_to_dtype(ctx, x, MTK_FLOAT32), &c->hidden, 1, NULL, c->eps);
        mtk_tensor *scale = mtk_add_scalar(ctx, mtk_to_dtype(ctx, w, MTK_FLOAT32), mtk_value_float(1.0));
        io->out[0] = mtk_to_dtype(ctx, mtk_mul(ctx, normed, scale), x ? x->dtype : MTK_FLOAT32);
    } else if (c->weight_float32) {
        /* Olmo2RMSNorm: (weight * _norm(x.float())).to(x's dtype): the
           product promoted to float32 */
        mtk_tensor *x = io->in[0];
        mtk_tensor *normed = mtk_rms_norm(ctx, mtk_to_dtype(ctx, x, MTK_FLOAT32), &c->hidden, 1, NULL, c->eps);
        io->out[0] = mtk_to_dtype(ctx, mtk_mul(ctx, w, normed), x ? x->dtype : MTK_FLOAT32);
    } else {
        io->out[0] = mtk_rms_norm(ctx, io->in[0], &c->hidden, 1, w, c->eps);
    }
    io->nout = 1;
    return io->out[0] != NULL;
}

const mtk_module_type models_decoder_norm_base = { "RMSNorm", norm_forward, norm_reset, norm_repr };

mtk_module *models_decoder_norm(mtk_ctx *ctx, const decoder_types *t, const decoder_spec *spec)
{
    mtk_module *m = mtk_module_new(ctx, &t->norm, sizeof(norm_config));
    if (!m) return NULL;
    *(norm_config *)mtk_module_config(m) = (norm_config){ spec->hidden, spec->eps, spec->norm_plus_one,
                                                          spec->norm_weight_float32 };
    if (!mtk_module_new_parameter(m, "weight", &spec->hidden, 1)) return NULL;
    return mtk_module_finish(m);
}

/* ------------------------------------------------- scaled embedding (gemma) */

typedef struct embedding_config {
    int64_t vocab, hidden, padding_idx;
    double scale; /* hidden ** 0.5, stored in the model's dtype (torch.tensor
                     under the default dtype transformers sets) */
} embedding_config;

static void embedding_repr(const mtk_module *m, char *buf, size_t cap)
{
    const embedding_config *c = mtk_module_config(m);
    int n = snprintf(buf, cap, "%lld, %lld", (long long)c->vocab, (long long)c->hidden);
    if (c->padding_idx != MTK_NN_NO_PADDING_IDX && n > 0 && (size_t)n < cap)
        snprintf(buf + n, cap - (size_t)n, ", padding_idx=%lld", (long long)c->padding_idx);
}

/* Embedding.reset_parameters (N(0, 1), the padding row zeroed) and the
 * embed_scale buffer. */
static bool embedding_reset(mtk_module *m, mtk_rng *rng)
{
    const embedding_config *c = mtk_module_config(m);
    mtk_tensor *w = mtk_module_param_at(m, 0, NULL);
    if (!mtk_init_normal_(w, 0.0, 1.0, rng)) return false;
    if (c->padding_idx != MTK_NN_NO_PADDING_IDX && !mtk_tensor_is_meta(w)) {
        mtk_tensor *row = mtk_select(mtk_module_ctx(m), w, 0, c->padding_idx);
        if (!row || !mtk_init_zeros_(row)) return false;
    }
    return mtk_init_constant_(mtk_module_buffer_at(m, 0, NULL, NULL), c->scale);
}

/* ids (B, S) -> (B, S, hidden) * embed_scale */
static bool embedding_forward(mtk_module *m, mtk_module_io *io)
{
    mtk_ctx *ctx = mtk_module_ctx(m);
    const embedding_config *c = mtk_module_config(m);
    mtk_tensor *w = mtk_module_param_at(m, 0, NULL);
    mtk_tensor *scale = mtk_module_buffer_at(m, 0, NULL, NULL);
    mtk_tensor *rows = mtk_embedding(ctx, io->in[0], w, c->padding_idx != MTK_NN_NO_PADDING_IDX, c->padding_idx);
    io->out[0] = mtk_mul(ctx, rows, mtk_to_dtype(ctx, scale, w->dtype));
    io->nout = 1;
    return io->out[0] != NULL;
}

const mtk_module_type models_decoder_embedding_base = { "TextScaledWordEmbedding", embedding_forward, embedding_reset,
                                                 embedding_repr };

mtk_module *models_decoder_embedding(mtk_ctx *ctx, const decoder_types *t, const decoder_spec *spec)
{
    if (!spec->scaled_embedding) return mtk_nn_embedding(ctx, spec->vocab, spec->hidden, spec->padding_idx);
    mtk_module *m = mtk_module_new(ctx, &t->embedding, sizeof(embedding_config));
    if (!m) return NULL;
    *(embedding_config *)mtk_module_config(m) =
        (embedding_config){ spec->vocab, spec->hidden, spec->padding_idx, sqrt((double)spec->hidden) };
    int64_t shape[2] = { spec->vocab, spec->hidden };
    if (!mtk_module_new_parameter(m, "weight", shape, 2) ||
        !mtk_module_new_buffer(m, "embed_scale", NULL, 0, MTK_DTYPE_UNDEFINED, false))
        return NULL;
    return mtk_module_finish(m);
}

/* -------------------------------------------------------------- attention */

typedef struct attention_config {
    int64_t heads, kv_heads, head_dim, rotary_dim;
    double scale, softcap;
    bool fused_qkv, eager;
    int64_t window;  /* this layer's sliding window, 0: full attention */
    bool qk_norm;       /* qwen3: children q_norm, k_norm after o_proj        */
    bool qk_norm_whole; /* olmo2: over the projections, before the heads split */
    int64_t chunk;      /* llama4: chunked attention (keys of the query's chunk only), 0: none */
    bool sinks;         /* gpt_oss: parameter sinks (heads) after o_proj      */
    bool interleaved;   /* llama4: rope on (x[2i], x[2i+1]) pairs             */
    bool always_cat;    /* glm4_moe: cat(rotated, passed) even with none passed */
    bool l2_norm;       /* llama4: q and k L2-normalized after rope           */
    double eps;         /* the L2 norm's                                      */
    double temperature_floor, temperature_scale; /* llama4 NoPE layers; 0: none */
    double init_std;    /* the sinks' N(0, initializer_range)                */
} attention_config;

/* (B, S, n * head_dim) -> (B, n, S, head_dim) */
static mtk_tensor *split_heads(mtk_ctx *ctx, mtk_tensor *x, int64_t n, int64_t head_dim)
{
    if (!x) return NULL;
    int64_t shape[4] = { x->shape[0], x->shape[1], n, head_dim };
    return mtk_transpose(ctx, mtk_view(ctx, x, shape, 4), 1, 2);
}

/* apply_rotary_pos_emb on the first rotary_dim dims of (B, n, S, head_dim)
 * (all of them unless partial_rotary_factor < 1). */
static mtk_tensor *rotate(mtk_ctx *ctx, mtk_tensor *x, mtk_tensor *cos, mtk_tensor *sin, int64_t rotary_dim,
                          bool interleaved, bool always_cat)
{
    if (!x || rotary_dim == 0) return x; /* smollm3's no-rope layers */
    int64_t head_dim = x->shape[3];
    if (rotary_dim == head_dim && !always_cat) {
        /* float32 cos and sin (olmo2) promote the product: cast back */
        mtk_tensor *r = mtk_rope(ctx, x, cos, sin, interleaved);
        return r && r->dtype != x->dtype ? mtk_to_dtype(ctx, r, x->dtype) : r;
    }
    mtk_tensor *parts[2] = { mtk_rope(ctx, mtk_narrow(ctx, x, -1, 0, rotary_dim), cos, sin, interleaved),
                             mtk_narrow(ctx, x, -1, rotary_dim, head_dim - rotary_dim) };
    return mtk_cat(ctx, parts, 2, -1);
}

/* llama4's apply_rotary_emb on (B, n, S, head_dim) q and k: each made
 * float32 (a copy below float32), times the complex frequencies (a float32
 * product), and cast back to its dtype (a copy below float32); the float
 * copies and products of both live until it returns, and k (q is held by
 * the caller). */
static bool rotate_complex(mtk_ctx *ctx, mtk_tensor **q, mtk_tensor **k, mtk_tensor *freqs_cis)
{
    if (!*q || !*k) return false;
    mtk_tensor *k_in = *k; /* its caller's key_states, held while q and k rotate */
    mtk_dtype dq = (*q)->dtype, dk = (*k)->dtype;
    mtk_tensor *qf = mtk_to_dtype(ctx, *q, MTK_FLOAT32), *kf = mtk_to_dtype(ctx, *k, MTK_FLOAT32);
    mtk_tensor *qp = mtk_rope_complex(ctx, qf, freqs_cis), *kp = mtk_rope_complex(ctx, kf, freqs_cis);
    *q = mtk_to_dtype(ctx, qp, dq);
    *k = mtk_to_dtype(ctx, kp, dk);
    return *q && *k && models_blocks_held_until_here(ctx, k_in) && models_blocks_held_until_here(ctx, qf) && models_blocks_held_until_here(ctx, kf) &&
           models_blocks_held_until_here(ctx, qp) && models_blocks_held_until_here(ctx, kp);
}

/* repeat_kv: (B, kv, S, D) -> (B, kv * n_rep, S, D) */
static mtk_tensor *repeat_kv(mtk_ctx *ctx, mtk_tensor *x, int64_t n_rep)
{
    if (!x || n_rep == 1) return x;
    int64_t b = x->shape[0], kv = x->shape[1], s = x->shape[2], d = x->shape[3];
    int64_t expanded[5] = { b, kv, n_rep, s, d }, merged[4] = { b, kv * n_rep, s, d };
    return mtk_reshape(ctx, mtk_expand(ctx, mtk_unsqueeze(ctx, x, 2), expanded, 5), merged, 4);
}

/* The mask of the forward without a cache for a layer that slides or
 * attends by chunks, (1, 1, S, S): key j is seen by query i when j <= i,
 * j > i - window (sliding) and j / chunk == i / chunk (chunked); bool, or
 * 0 / -inf in `dtype` for eager.  NULL (no error) when the sequence fits
 * the window and the chunk, where it equals the causal mask. */
static mtk_tensor *local_mask(mtk_ctx *ctx, const decoder_attend *c, const mtk_tensor *q, bool eager)
{
    int64_t s = q->shape[2];
    if (!(c->window > 0 && s > c->window) && !(c->chunk > 0 && s > c->chunk)) return NULL;
    if (!mtk_ctx_push_device(ctx, q->device)) return NULL;
    int64_t rows[4] = { 1, 1, s, 1 }, cols[4] = { 1, 1, 1, s };
    mtk_tensor *q_idx = mtk_view(ctx, mtk_arange_int(ctx, 0, s, 1, MTK_INT64), rows, 4);
    mtk_tensor *kv_idx = mtk_view(ctx, mtk_arange_int(ctx, 0, s, 1, MTK_INT64), cols, 4);
    mtk_tensor *mask = mtk_le(ctx, kv_idx, q_idx); /* (1, 1, S, S) */
    if (c->window > 0)
        mask = mtk_logical_and(ctx, mask, mtk_gt(ctx, kv_idx, mtk_sub_scalar(ctx, q_idx, mtk_value_int(c->window))));
    if (c->chunk > 0)
        mask = mtk_logical_and(ctx, mask, mtk_eq(ctx, mtk_floor_divide_scalar(ctx, kv_idx, mtk_value_int(c->chunk)),
                                                 mtk_floor_divide_scalar(ctx, q_idx, mtk_value_int(c->chunk))));
    if (eager)
        mask = mtk_where(ctx, mask, mtk_zeros(ctx, NULL, 0, q->dtype), mtk_full(ctx, NULL, 0, -INFINITY, q->dtype));
    mtk_ctx_pop_device(ctx);
    return mask;
}

/* eager_attention_forward: softmax(q k^T * scale [softcapped] + mask) v;
 * q (B, H, S, D), k and v (B, KV, T, D) -> (B, H, S, D).  `mask` (B, 1, S,
 * T) in the scores' dtype, as transformers' eager_mask builds it; NULL:
 * the causal mask made here (the forward without a cache). */
static mtk_tensor *eager_attention(mtk_ctx *ctx, const decoder_attend *c, mtk_tensor *q, mtk_tensor *k,
                                   mtk_tensor *v, mtk_tensor *mask, mtk_tensor **weights)
{
    int64_t n_rep = c->heads / c->kv_heads;
    k = repeat_kv(ctx, k, n_rep);
    v = repeat_kv(ctx, v, n_rep);
    mtk_tensor *scores = mtk_mul_scalar(ctx, mtk_matmul(ctx, q, mtk_transpose(ctx, k, 2, 3)),
                                        mtk_value_float(c->scale)); /* (B, H, S, S) */
    if (c->softcap > 0) {
        scores = mtk_div_scalar(ctx, scores, mtk_value_float(c->softcap));
        scores = mtk_mul_scalar(ctx, mtk_tanh(ctx, scores), mtk_value_float(c->softcap));
    }
    if (mask) {
        scores = mtk_add(ctx, scores, mask);
    } else if (scores) {
        /* the causal mask: 0 on and below the diagonal, -inf above */
        int64_t s = scores->shape[2], t = scores->shape[3], mshape[4] = { 1, 1, s, t };
        if (!mtk_ctx_push_device(ctx, scores->device)) return NULL;
        mtk_tensor *mask = mtk_triu(ctx, mtk_full(ctx, mshape, 4, -INFINITY, scores->dtype), 1);
        mtk_ctx_pop_device(ctx);
        scores = mtk_add(ctx, scores, mask);
    }
    mtk_tensor *sinks = c->sinks;
    if (sinks && scores) {
        /* gpt_oss: one more logit per head in the softmax, dropped after it
           (in the scores' dtype, as transformers) */
        int64_t b = scores->shape[0], h = scores->shape[1], s = scores->shape[2], t = scores->shape[3];
        int64_t per_head[4] = { 1, h, 1, 1 }, wide[4] = { b, h, s, 1 };
        mtk_tensor *sink = mtk_expand(ctx, mtk_view(ctx, mtk_to_dtype(ctx, sinks, scores->dtype), per_head, 4), wide, 4);
        mtk_tensor *parts[2] = { scores, sink };
        mtk_tensor *combined = mtk_cat(ctx, parts, 2, -1), *top = NULL, *where = NULL; /* (B, H, S, T + 1) */
        if (!combined || !mtk_max_dim(ctx, combined, -1, true, &top, &where)) return NULL;
        combined = mtk_sub(ctx, combined, top); /* transformers subtracts the max (bf16 / fp16 overflow) */
        mtk_tensor *probs = mtk_softmax(ctx, combined, -1, scores->dtype);
        probs = mtk_to_dtype(ctx, mtk_narrow(ctx, probs, -1, 0, t), v ? v->dtype : scores->dtype);
        if (weights) *weights = probs;
        mtk_tensor *out = mtk_matmul(ctx, probs, v);
        return models_blocks_held_until_here(ctx, k) ? out : NULL;
    }
    mtk_tensor *probs = mtk_to_dtype(ctx, mtk_softmax(ctx, scores, -1, MTK_FLOAT32), q ? q->dtype : MTK_FLOAT32);
    if (weights) *weights = probs;
    mtk_tensor *out = mtk_matmul(ctx, probs, v);
    /* its local key_states (heads repeated) lives until it returns */
    return models_blocks_held_until_here(ctx, k) ? out : NULL;
}

/* sdpa_attention_forward with a KV cache: no mask (full layers, and
 * sliding ones shorter than their window) runs is_causal when S > 1 with
 * enable_gqa; a mask (B, 1, S, T) bool turns both off, and grouped heads
 * then take pack_gqa for one query token, repeat_kv for more.
 * q (B, H, S, D), k and v (B, KV, T, D) -> (B, H, S, D). */
static mtk_tensor *cached_sdpa(mtk_ctx *ctx, const decoder_attend *c, mtk_tensor *q, mtk_tensor *k,
                               mtk_tensor *v, mtk_tensor *mask)
{
    if (!q) return NULL;
    int64_t n_rep = c->heads / c->kv_heads, s = q->shape[2];
    if (!mask)
        return mtk_scaled_dot_product_attention(ctx, q, k, v, NULL, 0.0, s > 1, c->scale,
                                                n_rep > 1 && c->head_dim <= 256);
    if (n_rep > 1 && s == 1) {
        int64_t packed[4] = { q->shape[0], c->kv_heads, n_rep, c->head_dim }; /* (B, KV, n_rep, D) */
        mtk_tensor *out = mtk_scaled_dot_product_attention(ctx, mtk_reshape(ctx, q, packed, 4), k, v, mask, 0.0,
                                                           false, c->scale, false);
        int64_t heads[4] = { q->shape[0], c->heads, 1, c->head_dim };
        return mtk_reshape(ctx, out, heads, 4);
    }
    return mtk_scaled_dot_product_attention(ctx, q, repeat_kv(ctx, k, n_rep), repeat_kv(ctx, v, n_rep), mask, 0.0,
                                            false, c->scale, false);
}

/* Llama4TextL2Norm: x / sqrt(mean(x^2) + eps) over head_dim, in float32. */
static mtk_tensor *l2_norm(mtk_ctx *ctx, mtk_tensor *x, double eps)
{
    if (!x) return NULL;
    int64_t d = x->shape[x->ndim - 1];
    return mtk_to_dtype(ctx, mtk_rms_norm(ctx, mtk_to_dtype(ctx, x, MTK_FLOAT32), &d, 1, NULL, eps), x->dtype);
}

/* Llama4TextL2Norm: l2_norm over the last dim, a module without weights. */
static bool l2_norm_forward(mtk_module *m, mtk_module_io *io)
{
    const double *eps = mtk_module_config(m);
    io->out[0] = l2_norm(mtk_module_ctx(m), io->in[0], *eps);
    io->nout = 1;
    return io->out[0] != NULL;
}

static const mtk_module_type l2_norm_type = { "L2Norm", l2_norm_forward, NULL, NULL };

static mtk_module *l2_norm_module(mtk_ctx *ctx, double eps)
{
    mtk_module *m = mtk_module_new(ctx, &l2_norm_type, sizeof eps);
    if (!m) return NULL;
    *(double *)mtk_module_config(m) = eps;
    return mtk_module_finish(m);
}

/* attn_temperature_tuning: q (B, H, S, D) times 1 + attn_scale *
 * log1p(floor((position + 1) / floor_scale)), positions past.. past + S. */
static mtk_tensor *tuned_temperature(mtk_ctx *ctx, const attention_config *c, mtk_tensor *q, int64_t past)
{
    if (!q) return NULL;
    int64_t s = q->shape[2], shape[4] = { 1, 1, s, 1 };
    if (!mtk_ctx_push_device(ctx, q->device)) return NULL;
    mtk_tensor *pos = mtk_to_dtype(ctx, mtk_arange_int(ctx, past, past + s, 1, MTK_INT64), MTK_FLOAT32);
    mtk_ctx_pop_device(ctx);
    mtk_tensor *scale = mtk_floor(ctx, mtk_div_scalar(ctx, mtk_add_scalar(ctx, pos, mtk_value_float(1.0)),
                                                      mtk_value_float(c->temperature_floor)));
    scale = mtk_add_scalar(ctx, mtk_mul_scalar(ctx, mtk_log1p(ctx, scale), mtk_value_float(c->temperature_scale)),
                           mtk_value_float(1.0));
    return mtk_to_dtype(ctx, mtk_mul(ctx, q, mtk_view(ctx, scale, shape, 4)), q->dtype);
}

/* forward(x (B, S, hidden), cos, sin (1, S, rotary_dim)) -> (B, S, hidden);
 * with a KV cache, forward(x, cos, sin, past_k, past_v[, mask]) ->
 * (out, keys, values): the past (B, KV, P, D) and this step's rotated keys
 * and values concatenated (DynamicLayer.update's torch.cat, a new tensor
 * of (B, KV, P + S, D)), attention over all P + S positions.  Eager
 * attention also returns its weights (B, H, S, T) last, as transformers'
 * attention returns (attn_output, attn_weights): the layer's `_` holds
 * them until it returns. */
static bool attention_forward(mtk_module *m, mtk_module_io *io)
{
    mtk_ctx *ctx = mtk_module_ctx(m);
    const attention_config *c = mtk_module_config(m);
    mtk_tensor *x = io->in[0], *cos = io->in[1], *sin = io->in[2];
    if (io->nin != 3 && io->nin != 5 && io->nin != 6)
        return mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT,
                         "%s: takes hidden states, cos and sin (and past keys, past values and a mask)",
                         mtk_module_type_name(m));
    bool cached = io->nin > 3;
    mtk_tensor *mask = io->nin == 6 ? io->in[5] : NULL;
    if (x->ndim != 3)
        return mtk_error(ctx, MTK_ERR_SHAPE, "%s: expected hidden states (B, S, hidden), got %d dim%s",
                         mtk_module_type_name(m), (int)x->ndim, x->ndim == 1 ? "" : "s");
    int64_t q_size = c->heads * c->head_dim, kv_size = c->kv_heads * c->head_dim;
    mtk_tensor *q, *k, *v, *qkv = NULL;
    if (c->fused_qkv) {
        /* children: o_proj, qkv_proj */
        qkv = mtk_module_forward(mtk_module_child_at(m, 1, NULL), x); /* (B, S, q + 2 kv) */
        q = mtk_narrow(ctx, qkv, -1, 0, q_size);
        k = mtk_narrow(ctx, qkv, -1, q_size, kv_size);
        v = mtk_narrow(ctx, qkv, -1, q_size + kv_size, kv_size);
    } else {
        /* children: q_proj, k_proj, v_proj, o_proj */
        q = mtk_module_forward(mtk_module_child_at(m, 0, NULL), x);
        k = mtk_module_forward(mtk_module_child_at(m, 1, NULL), x);
        v = mtk_module_forward(mtk_module_child_at(m, 2, NULL), x);
    }
    if (c->qk_norm_whole) {
        q = mtk_module_forward(mtk_module_child_at(m, 4, NULL), q); /* (B, S, H * D)  */
        k = mtk_module_forward(mtk_module_child_at(m, 5, NULL), k); /* (B, S, KV * D) */
    }
    q = split_heads(ctx, q, c->heads, c->head_dim);    /* (B, H, S, D)  */
    k = split_heads(ctx, k, c->kv_heads, c->head_dim); /* (B, KV, S, D) */
    if (c->qk_norm && !c->qk_norm_whole) {
        /* RMSNorm over head_dim, per head (the last dim either side of the transpose) */
        q = mtk_module_forward(mtk_module_child_at(m, 4, NULL), q);
        k = mtk_module_forward(mtk_module_child_at(m, 5, NULL), k);
    }
    /* apply_rotary_pos_emb(q, k, cos, sin): its caller holds q while k
     * is rotated */
    mtk_tensor *unrotated_q = q;
    if (c->interleaved && c->rotary_dim > 0 && c->rotary_dim == c->head_dim) {
        if (!rotate_complex(ctx, &q, &k, cos)) return false; /* cos: freqs_cis */
    } else {
        q = rotate(ctx, q, cos, sin, c->rotary_dim, c->interleaved, c->always_cat);
        k = rotate(ctx, k, cos, sin, c->rotary_dim, c->interleaved, c->always_cat);
    }
    if (!models_blocks_held_until_here(ctx, unrotated_q)) return false;
    if (c->l2_norm && c->rotary_dim > 0) {
        mtk_module *qk_norm = mtk_module_child_at(m, 4, NULL); /* one module for both */
        q = mtk_module_forward(qk_norm, q);
        k = mtk_module_forward(qk_norm, k);
    }
    /* positions from the cached length: right for llama4's NoPE layers, which attend fully (a NoPE layer
       made chunked by layer_types would need the tokens seen, not the tokens its cache keeps) */
    if (c->temperature_floor > 0 && c->rotary_dim == 0)
        q = tuned_temperature(ctx, c, q, cached && io->in[3] ? io->in[3]->shape[2] : 0);
    v = split_heads(ctx, v, c->kv_heads, c->head_dim);
    if (cached) {
        mtk_tensor *keys[2] = { io->in[3], k }, *values[2] = { io->in[4], v };
        k = mtk_cat(ctx, keys, 2, 2);   /* (B, KV, P + S, D) */
        v = mtk_cat(ctx, values, 2, 2);
    }
    decoder_attend attend = { c->heads, c->kv_heads, c->head_dim, c->scale, c->softcap, c->eager,
                              c->window, c->chunk, c->sinks ? mtk_module_param_at(m, 0, NULL) : NULL };
    mtk_tensor *weights = NULL;
    mtk_tensor *attn = models_decoder_attend(ctx, &attend, q, k, v, mask, cached, &weights);
    int64_t merged[3] = { x->shape[0], x->shape[1], q_size };
    attn = mtk_reshape(ctx, mtk_transpose(ctx, attn, 1, 2), merged, 3); /* (B, S, H * D) */
    io->out[0] = mtk_module_forward(mtk_module_child_at(m, c->fused_qkv ? 0 : 3, NULL), attn);
    io->nout = 1;
    if (cached) {
        io->out[1] = k;
        io->out[2] = v;
        io->nout = 3;
    }
    if (weights) io->out[io->nout++] = weights; /* eager: the attention weights, last */
    /* the forward's locals hold the fused projection (qkv) and the rotated
     * queries (query_states) until it returns */
    if (!models_blocks_held_until_here(ctx, qkv) || !models_blocks_held_until_here(ctx, q)) return false;
    return io->out[0] != NULL && io->out[io->nout - 1] != NULL;
}

/* The projections reset themselves; gpt_oss's sinks are N(0, initializer_range). */
static bool attention_reset(mtk_module *m, mtk_rng *rng)
{
    const attention_config *c = mtk_module_config(m);
    return !c->sinks || mtk_init_normal_(mtk_module_param_at(m, 0, NULL), 0.0, c->init_std, rng);
}

const mtk_module_type models_decoder_attention_base = { "Attention", attention_forward, attention_reset, NULL };

mtk_tensor *models_decoder_attend(mtk_ctx *ctx, const decoder_attend *a, mtk_tensor *q, mtk_tensor *k, mtk_tensor *v,
                                  mtk_tensor *mask, bool cached, mtk_tensor **weights)
{
    if (cached) return a->eager ? eager_attention(ctx, a, q, k, v, mask, weights) : cached_sdpa(ctx, a, q, k, v, mask);
    mtk_tensor *local = q ? local_mask(ctx, a, q, a->eager) : NULL;
    if (a->eager) return eager_attention(ctx, a, q, k, v, local, weights);
    if (local)
        return mtk_scaled_dot_product_attention(ctx, q, repeat_kv(ctx, k, a->heads / a->kv_heads),
                                                repeat_kv(ctx, v, a->heads / a->kv_heads), local, 0.0, false, a->scale,
                                                false);
    return mtk_scaled_dot_product_attention(ctx, q, k, v, NULL, 0.0, true, a->scale, a->kv_heads != a->heads);
}

void models_decoder_attention_shape(const mtk_module *attn, decoder_cache_shape *out)
{
    if (models_decoder_mla_shape(attn, out)) return;
    const attention_config *c = mtk_module_config(attn);
    /* chunked layers cache as sliding ones (transformers 5) */
    *out = (decoder_cache_shape){ c->kv_heads, c->head_dim, c->head_dim, c->window ? c->window : c->chunk, c->eager };
}

int64_t models_decoder_attention_chunk(const mtk_module *attn)
{
    decoder_cache_shape mla;
    if (models_decoder_mla_shape(attn, &mla)) return 0;
    return ((const attention_config *)mtk_module_config(attn))->chunk;
}

mtk_module *models_decoder_attention(mtk_ctx *ctx, const decoder_types *t, const decoder_spec *spec, int64_t layer)
{
    if (spec->mla) return models_decoder_mla(ctx, t, spec, layer);
    const cfg_attention_dims *a = &spec->attn;
    mtk_module *m = mtk_module_new(ctx, &t->attention, sizeof(attention_config));
    if (!m) return NULL;
    *(attention_config *)mtk_module_config(m) = (attention_config){
        .heads = a->heads, .kv_heads = a->kv_heads, .head_dim = a->head_dim, .rotary_dim = spec->rope.dim,
        .scale = spec->attn_scale, .softcap = spec->attn_softcap, .fused_qkv = spec->fused_qkv,
        .eager = spec->eager_attention, .window = spec->layer_window ? spec->layer_window[layer] : 0,
        .qk_norm = spec->qk_norm, .qk_norm_whole = spec->qk_norm && spec->qk_norm_whole,
        .chunk = spec->layer_chunk ? spec->layer_chunk[layer] : 0, .sinks = spec->attn_sinks,
        .interleaved = spec->rope.interleaved, .always_cat = spec->rope.always_cat, .l2_norm = spec->qk_l2_norm, .eps = spec->eps,
        .temperature_floor = spec->temperature_floor, .temperature_scale = spec->temperature_scale,
        .init_std = spec->initializer_range,
    };
    int64_t q_size = a->heads * a->head_dim, kv_size = a->kv_heads * a->head_dim;
    bool ok;
    if (spec->fused_qkv) {
        ok = mtk_module_add(m, "o_proj", mtk_nn_linear(ctx, q_size, spec->hidden, spec->o_bias)) &&
             mtk_module_add(m, "qkv_proj", mtk_nn_linear(ctx, spec->hidden, q_size + 2 * kv_size, spec->qkv_bias));
    } else {
        ok = mtk_module_add(m, "q_proj", mtk_nn_linear(ctx, spec->hidden, q_size, spec->qkv_bias)) &&
             mtk_module_add(m, "k_proj", mtk_nn_linear(ctx, spec->hidden, kv_size, spec->qkv_bias)) &&
             mtk_module_add(m, "v_proj", mtk_nn_linear(ctx, spec->hidden, kv_size, spec->qkv_bias)) &&
             mtk_module_add(m, "o_proj", mtk_nn_linear(ctx, q_size, spec->hidden, spec->o_bias));
        if (ok && spec->attn_sinks) ok = mtk_module_new_parameter(m, "sinks", &a->heads, 1) != NULL;
    }
    if (ok && spec->qk_norm && !spec->fused_qkv) {
        decoder_spec q_spec = *spec, k_spec = *spec; /* the norms' sizes: head_dim, or the projections' */
        q_spec.hidden = spec->qk_norm_whole ? q_size : a->head_dim;
        k_spec.hidden = spec->qk_norm_whole ? kv_size : a->head_dim;
        ok = mtk_module_add(m, "q_norm", models_decoder_norm(ctx, t, &q_spec)) &&
             mtk_module_add(m, "k_norm", models_decoder_norm(ctx, t, &k_spec));
    }
    if (ok && spec->qk_l2_norm && spec->rope.dim > 0 && !spec->qk_norm && !spec->fused_qkv)
        ok = mtk_module_add(m, "qk_norm", l2_norm_module(ctx, spec->eps));
    return ok ? mtk_module_finish(m) : NULL;
}

/* -------------------------------------------------------------------- MLP */

typedef struct mlp_config {
    int64_t intermediate;
    bool fused; /* phi3: gate_up_proj, down_proj, activation_fn */
} mlp_config;

/* down(act(gate(x)) * up(x)): (..., hidden) -> (..., hidden) */
static bool mlp_forward(mtk_module *m, mtk_module_io *io)
{
    mtk_ctx *ctx = mtk_module_ctx(m);
    const mlp_config *c = mtk_module_config(m);
    mtk_tensor *x = io->in[0], *gate, *up;
    mtk_module *down, *act;
    if (c->fused) {
        mtk_tensor *both = mtk_module_forward(mtk_module_child_at(m, 0, NULL), x); /* (..., 2 I) */
        gate = mtk_narrow(ctx, both, -1, 0, c->intermediate);
        up = mtk_narrow(ctx, both, -1, c->intermediate, c->intermediate);
        down = mtk_module_child_at(m, 1, NULL);
        act = mtk_module_child_at(m, 2, NULL);
    } else {
        gate = mtk_module_forward(mtk_module_child_at(m, 0, NULL), x);
        up = mtk_module_forward(mtk_module_child_at(m, 1, NULL), x);
        down = mtk_module_child_at(m, 2, NULL);
        act = mtk_module_child_at(m, 3, NULL);
    }
    io->out[0] = mtk_module_forward(down, mtk_mul(ctx, mtk_module_forward(act, gate), up));
    io->nout = 1;
    return io->out[0] != NULL;
}

const mtk_module_type models_decoder_mlp_base = { "MLP", mlp_forward, NULL, NULL };

mtk_module *models_decoder_mlp(mtk_ctx *ctx, const decoder_types *t, const decoder_spec *spec, int64_t intermediate)
{
    mtk_module *m = mtk_module_new(ctx, &t->mlp, sizeof(mlp_config));
    if (!m) return NULL;
    *(mlp_config *)mtk_module_config(m) = (mlp_config){ intermediate, spec->fused_gate_up };
    bool ok;
    if (spec->fused_gate_up) {
        ok = mtk_module_add(m, "gate_up_proj", mtk_nn_linear(ctx, spec->hidden, 2 * intermediate, spec->mlp_bias)) &&
             mtk_module_add(m, "down_proj", mtk_nn_linear(ctx, intermediate, spec->hidden, spec->mlp_bias)) &&
             mtk_module_add(m, "activation_fn", mtk_nn_activation(ctx, spec->act));
    } else {
        ok = mtk_module_add(m, "gate_proj", mtk_nn_linear(ctx, spec->hidden, intermediate, spec->mlp_bias)) &&
             mtk_module_add(m, "up_proj", mtk_nn_linear(ctx, spec->hidden, intermediate, spec->mlp_bias)) &&
             mtk_module_add(m, "down_proj", mtk_nn_linear(ctx, intermediate, spec->hidden, spec->mlp_bias)) &&
             mtk_module_add(m, spec->mlp_activation_fn ? "activation_fn" : "act_fn", mtk_nn_activation(ctx, spec->act));
    }
    return ok ? mtk_module_finish(m) : NULL;
}
