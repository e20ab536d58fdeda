/* Lumina2Transformer2DModel (diffusers), the denoiser of Lumina-Image-2.0:
 * a single-stream DiT.  The caption (Gemma-2 hidden states) goes through
 * num_refiner_layers context_refiner blocks (no modulation), the patchified
 * latents through as many noise_refiner blocks (modulated by the
 * timestep), then [caption, image] through num_layers blocks; attention
 * is grouped-query (num_kv_heads) with per-head rms qk norm and 3-axis
 * rotary embeddings (caption position, image row, image column), the MLP
 * SwiGLU-shaped (LuminaFeedForward), and each block's attention and MLP
 * outputs are rms-normed before the tanh-gated residual.
 *
 * Config fields (diffusers' defaults): sample_size 128, patch_size 2,
 * in_channels 16, out_channels null (in_channels), hidden_size 2304,
 * num_layers 26, num_refiner_layers 2, num_attention_heads 24,
 * num_kv_heads 8, multiple_of 256, ffn_dim_multiplier null, norm_eps
 * 1e-5, scaling_factor 1.0, axes_dim_rope [32, 32, 32], axes_lens [300,
 * 512, 512], cap_feat_dim 1024.
 *
 * Forward, as diffusers' (hidden_states, timestep, encoder_hidden_states,
 * encoder_attention_mask): latents (B, C, H, W), timesteps (B,), caption
 * features (B, L, cap_feat_dim), mask (B, L) -> (B, out_channels, H, W).
 *
 * On meta the mask has no values: every caption token is taken as real
 * (the mask all ones, as a prompt padded to its own length gives).
 * diffusers reads the mask's row sums with .tolist() to lay out the
 * sequence, which fails on meta; with a full mask its layout is the plain
 * concatenation mtk builds, and the main layers run without a mask. */
#include "models/diffusers.h"
#include "models/diffusers_dit.h"
#include "mtk/ops.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static mtk_module *child(mtk_module *m, int32_t i) { return blocks_child(m, i); }
static mtk_module *named(mtk_module *m, const char *name) { return mtk_module_child(m, name); }

typedef struct lumina_spec {
    int64_t patch, in_channels, out_channels, hidden, layers, refiner_layers, heads, kv_heads, head_dim, ffn;
    int64_t cap_dim, cond_dim, axes[3], axes_lens[3];
    double eps;
} lumina_spec;

/* ----------------------------------------------------------- embeddings */

/* (hidden_states, timestep (B,), caption (B, L, cap)) -> temb (B, cond),
 * caption (B, L, hidden) */
static bool time_caption_forward(mtk_module *m, mtk_module_io *io)
{
    mtk_ctx *ctx = mtk_module_ctx(m);
    mtk_tensor *t = mtk_module_forward(child(m, 0), io->in[1]);
    io->out[0] = io->in[0] ? mtk_module_forward(child(m, 1), mtk_to_dtype(ctx, t, io->in[0]->dtype)) : NULL;
    io->out[1] = mtk_module_forward(child(m, 2), io->in[2]);
    io->nout = 2;
    return io->out[0] && io->out[1];
}

static const mtk_module_type time_caption_type = { "Lumina2CombinedTimestepCaptionEmbedding", time_caption_forward,
                                                   NULL, NULL };

static mtk_module *time_caption(mtk_ctx *ctx, const lumina_spec *s)
{
    mtk_module *m = mtk_module_new(ctx, &time_caption_type, 0);
    mtk_module *parts[2] = { mtk_nn_rms_norm(ctx, &s->cap_dim, 1, s->eps, true),
                             mtk_nn_linear(ctx, s->cap_dim, s->hidden, true) };
    bool ok = m && mtk_module_add(m, "time_proj", diffusers_timesteps(ctx, 256, true, 0.0)) &&
              mtk_module_add(m, "timestep_embedder", dit_timestep_embedding(ctx, 256, s->cond_dim)) &&
              mtk_module_add(m, "caption_embedder", mtk_nn_sequential(ctx, 2, parts));
    return ok ? mtk_module_finish(m) : NULL;
}

/* ------------------------------------------------------ rotary embedding */

typedef struct rope_config {
    int64_t axes[3], axes_lens[3];
    double theta;
} rope_config;

typedef struct rope_module_config {
    rope_config rope;
    int64_t patch;
} rope_module_config;

/* cos / sin (S, D) float32, each frequency twice, for positions (S, 3)
 * float64: per axis pos * 1 / theta^(2j / d) (diffusers keeps them as
 * complex numbers; the pairs here are their real and imaginary parts) */
static bool rope_tables(mtk_ctx *ctx, const rope_config *c, mtk_tensor *pos, mtk_tensor **cos, mtk_tensor **sin)
{
    mtk_tensor *cs[3], *sn[3];
    for (int32_t i = 0; i < 3; i++) {
        int64_t d = c->axes[i];
        if (!mtk_ctx_push_device(ctx, pos->device)) return false;
        mtk_tensor *j = mtk_arange(ctx, 0, (double)d, 2, MTK_FLOAT64); /* (d/2,) */
        mtk_ctx_pop_device(ctx);
        mtk_tensor *freqs = mtk_reciprocal(ctx, mtk_pow_scalar_base(ctx, mtk_value_float(c->theta),
                                                                    mtk_div_scalar(ctx, j, mtk_value_int(d))));
        mtk_tensor *angles = mtk_mul(ctx, mtk_unsqueeze(ctx, mtk_select(ctx, pos, 1, i), 1), mtk_unsqueeze(ctx, freqs, 0));
        cs[i] = mtk_to_dtype(ctx, mtk_repeat_interleave(ctx, mtk_cos(ctx, angles), 2, 1), MTK_FLOAT32);
        sn[i] = mtk_to_dtype(ctx, mtk_repeat_interleave(ctx, mtk_sin(ctx, angles), 2, 1), MTK_FLOAT32);
    }
    *cos = mtk_cat(ctx, cs, 3, -1), *sin = mtk_cat(ctx, sn, 3, -1); /* (S, D) */
    return *cos && *sin;
}

/* (latents (B, C, H, W), mask (B, L)) -> patches (B, N, p p C), then the
 * cos / sin tables of the caption (L, D), the image (N, D) and the joint
 * sequence (L + N, D): caption token t at (t, 0, 0), patch (r, c) at
 * (L, r, c) */
static bool rope_forward(mtk_module *m, mtk_module_io *io)
{
    mtk_ctx *ctx = mtk_module_ctx(m);
    const rope_module_config *rc = mtk_module_config(m);
    const rope_config *c = &rc->rope;
    mtk_tensor *x = io->in[0], *mask = io->in[1];
    int64_t p = rc->patch;
    int64_t b = x->shape[0], ch = x->shape[1], h = x->shape[2] / p, w = x->shape[3] / p, l = mask->shape[1];
    if (l > c->axes_lens[0] || h > c->axes_lens[1] || w > c->axes_lens[2])
        return mtk_error(ctx, MTK_ERR_SHAPE,
                         "Lumina2RotaryPosEmbed: positions (caption %lld, rows %lld, columns %lld) past axes_lens "
                         "[%lld, %lld, %lld]",
                         (long long)l, (long long)h, (long long)w, (long long)c->axes_lens[0],
                         (long long)c->axes_lens[1], (long long)c->axes_lens[2]);
    if (!mtk_ctx_push_device(ctx, x->device)) return false;
    mtk_tensor *t = mtk_arange(ctx, 0, (double)l, 1, MTK_FLOAT64);                      /* (L,) */
    mtk_tensor *zeros = mtk_zeros(ctx, (const int64_t[]){ l }, 1, MTK_FLOAT64);
    mtk_tensor *first = mtk_full(ctx, (const int64_t[]){ h * w }, 1, (double)l, MTK_FLOAT64); /* (N,) */
    mtk_tensor *rows = mtk_repeat_interleave(ctx, mtk_arange(ctx, 0, (double)h, 1, MTK_FLOAT64), w, 0);
    mtk_tensor *cols = mtk_repeat(ctx, mtk_arange(ctx, 0, (double)w, 1, MTK_FLOAT64), (const int64_t[]){ h }, 1);
    mtk_ctx_pop_device(ctx);
    mtk_tensor *cap_axes[3] = { t, zeros, zeros }, *img_axes[3] = { first, rows, cols };
    mtk_tensor *cap = mtk_stack(ctx, cap_axes, 3, 1), *img = mtk_stack(ctx, img_axes, 3, 1); /* (L, 3), (N, 3) */
    mtk_tensor *both[2] = { cap, img };
    mtk_tensor *all = mtk_cat(ctx, both, 2, 0);
    if (!all || !rope_tables(ctx, c, cap, &io->out[1], &io->out[2]) || !rope_tables(ctx, c, img, &io->out[3], &io->out[4]) ||
        !rope_tables(ctx, c, all, &io->out[5], &io->out[6]))
        return false;
    mtk_tensor *patches = mtk_view(ctx, x, (const int64_t[]){ b, ch, h, p, w, p }, 6);
    patches = mtk_permute(ctx, patches, (const int64_t[]){ 0, 2, 4, 3, 5, 1 }, 6);
    io->out[0] = mtk_flatten(ctx, mtk_flatten(ctx, patches, 3, -1), 1, 2); /* (B, N, p p C) */
    io->nout = 7;
    return io->out[0] != NULL;
}

static const mtk_module_type rope_type = { "Lumina2RotaryPosEmbed", rope_forward, NULL, NULL };

/* ------------------------------------------------------------ Attention */

typedef struct attn_config {
    int64_t heads, kv_heads, head_dim;
} attn_config;

/* proj(x) as (B, n, S, D), normed when `norm`, rotated when cos */
static mtk_tensor *heads_of(mtk_module *m, const char *proj, const char *norm, mtk_tensor *x, int64_t n,
                            mtk_tensor *cos, mtk_tensor *sin)
{
    mtk_ctx *ctx = mtk_module_ctx(m);
    const attn_config *c = mtk_module_config(m);
    mtk_tensor *h = mtk_module_forward(named(m, proj), x);
    if (!h) return NULL;
    h = mtk_view(ctx, h, (const int64_t[]){ x->shape[0], -1, n, c->head_dim }, 4); /* (B, S, n, D) */
    if (norm) h = mtk_module_forward(named(m, norm), h);
    h = mtk_transpose(ctx, h, 1, 2);
    if (cos && h) h = mtk_to_dtype(ctx, mtk_rope(ctx, mtk_to_dtype(ctx, h, MTK_FLOAT32), cos, sin, true), x->dtype);
    return h;
}

/* Lumina2AttnProcessor2_0: (x (B, S, dim), cos, sin (S, D)[, mask (B,
 * S)]) -> (B, S, dim); keys and values repeated to every query head */
static bool attn_forward(mtk_module *m, mtk_module_io *io)
{
    mtk_ctx *ctx = mtk_module_ctx(m);
    const attn_config *c = mtk_module_config(m);
    mtk_tensor *x = io->in[0], *cos = io->in[1], *sin = io->in[2], *mask = io->nin > 3 ? io->in[3] : NULL;
    mtk_tensor *q = heads_of(m, "to_q", "norm_q", x, c->heads, cos, sin);
    mtk_tensor *k = heads_of(m, "to_k", "norm_k", x, c->kv_heads, cos, sin);
    mtk_tensor *v = heads_of(m, "to_v", NULL, x, c->kv_heads, NULL, NULL);
    int64_t rep = c->heads / c->kv_heads;
    if (rep > 1) { /* (B, kv, S, D) -> (B, H, S, D), kv head j serving heads j rep .. j rep + rep - 1 */
        k = mtk_repeat_interleave(ctx, k, rep, 1);
        v = mtk_repeat_interleave(ctx, v, rep, 1);
    }
    mtk_tensor *bool_mask = NULL;
    if (mask) {
        bool_mask = mtk_to_dtype(ctx, mask, MTK_BOOL);
        bool_mask = mtk_view(ctx, bool_mask, (const int64_t[]){ mask->shape[0], 1, 1, -1 }, 4);
    }
    mtk_tensor *h = mtk_scaled_dot_product_attention(ctx, q, k, v, bool_mask, 0.0, false,
                                                     1.0 / sqrt((double)c->head_dim), false);
    h = models_blocks_merge_heads(ctx, h); /* (B, S, H D) */
    mtk_module *to_out = named(m, "to_out");
    io->out[0] = mtk_module_forward(child(to_out, 1), mtk_module_forward(child(to_out, 0), h));
    io->nout = 1;
    return io->out[0] != NULL;
}

static const mtk_module_type attn_type = { "Attention", attn_forward, NULL, NULL };

static mtk_module *attention(mtk_ctx *ctx, const lumina_spec *s)
{
    mtk_module *m = mtk_module_new(ctx, &attn_type, sizeof(attn_config));
    mtk_module *to_out = mtk_nn_module_list(ctx);
    if (!m || !to_out) return NULL;
    *(attn_config *)mtk_module_config(m) = (attn_config){ s->heads, s->kv_heads, s->head_dim };
    int64_t q = s->heads * s->head_dim, kv = s->kv_heads * s->head_dim;
    bool ok = mtk_module_add(m, "norm_q", mtk_nn_rms_norm(ctx, &s->head_dim, 1, 1e-5, true)) &&
              mtk_module_add(m, "norm_k", mtk_nn_rms_norm(ctx, &s->head_dim, 1, 1e-5, true)) &&
              mtk_module_add(m, "to_q", mtk_nn_linear(ctx, s->hidden, q, false)) &&
              mtk_module_add(m, "to_k", mtk_nn_linear(ctx, s->hidden, kv, false)) &&
              mtk_module_add(m, "to_v", mtk_nn_linear(ctx, s->hidden, kv, false)) &&
              mtk_nn_module_list_append(to_out, mtk_nn_linear(ctx, q, s->hidden, false)) &&
              mtk_nn_module_list_append(to_out, mtk_nn_dropout(ctx, 0.0)) && mtk_module_add(m, "to_out", to_out);
    return ok ? mtk_module_finish(m) : NULL;
}

/* ---------------------------------------------------------- feed-forward */

/* F.silu(x.float()).to(x.dtype) */
static bool fp32_silu_forward(mtk_module *m, mtk_module_io *io)
{
    mtk_ctx *ctx = mtk_module_ctx(m);
    mtk_tensor *x = io->in[0];
    io->out[0] = mtk_to_dtype(ctx, mtk_silu(ctx, mtk_to_dtype(ctx, x, MTK_FLOAT32)), x->dtype);
    io->nout = 1;
    return io->out[0] != NULL;
}

static const mtk_module_type fp32_silu_type = { "FP32SiLU", fp32_silu_forward, NULL, NULL };

/* linear_2(silu(linear_1(x)) * linear_3(x)) */
static bool ff_forward(mtk_module *m, mtk_module_io *io)
{
    mtk_ctx *ctx = mtk_module_ctx(m);
    mtk_tensor *gate = mtk_module_forward(child(m, 3), mtk_module_forward(child(m, 0), io->in[0]));
    io->out[0] = mtk_module_forward(child(m, 1), mtk_mul(ctx, gate, mtk_module_forward(child(m, 2), io->in[0])));
    io->nout = 1;
    return io->out[0] != NULL;
}

static const mtk_module_type ff_type = { "LuminaFeedForward", ff_forward, NULL, NULL };

static mtk_module *feed_forward(mtk_ctx *ctx, const lumina_spec *s)
{
    mtk_module *m = mtk_module_new(ctx, &ff_type, 0);
    bool ok = m && mtk_module_add(m, "linear_1", mtk_nn_linear(ctx, s->hidden, s->ffn, false)) &&
              mtk_module_add(m, "linear_2", mtk_nn_linear(ctx, s->ffn, s->hidden, false)) &&
              mtk_module_add(m, "linear_3", mtk_nn_linear(ctx, s->hidden, s->ffn, false)) &&
              mtk_module_add(m, "silu", mtk_module_finish(mtk_module_new(ctx, &fp32_silu_type, 0)));
    return ok ? mtk_module_finish(m) : NULL;
}

/* ------------------------------------------------------------- norms */

/* LuminaRMSNormZero: (x (B, S, dim), temb (B, cond)) -> norm(x) * (1 +
 * scale_msa), gate_msa, scale_mlp, gate_mlp */
static bool rms_zero_forward(mtk_module *m, mtk_module_io *io)
{
    mtk_ctx *ctx = mtk_module_ctx(m);
    mtk_tensor *emb = mtk_module_forward(child(m, 1), mtk_module_forward(child(m, 0), io->in[1]));
    mtk_tensor *r[4];
    if (!emb || mtk_chunk(ctx, emb, 4, 1, r, 4) != 4) return false;
    io->out[0] = dit_modulate(ctx, mtk_module_forward(child(m, 2), io->in[0]), r[0], NULL);
    io->out[1] = r[1], io->out[2] = r[2], io->out[3] = r[3];
    io->nout = 4;
    return io->out[0] != NULL;
}

static const mtk_module_type rms_zero_type = { "LuminaRMSNormZero", rms_zero_forward, NULL, NULL };

/* LuminaLayerNormContinuous: (x (B, S, dim), temb (B, cond)) ->
 * linear_2(norm(x) * (1 + linear_1(silu(temb)))) */
static bool norm_out_forward(mtk_module *m, mtk_module_io *io)
{
    mtk_ctx *ctx = mtk_module_ctx(m);
    mtk_tensor *x = io->in[0];
    mtk_tensor *cond = mtk_module_forward(child(m, 0), io->in[1]);
    mtk_tensor *scale = x ? mtk_module_forward(child(m, 1), mtk_to_dtype(ctx, cond, x->dtype)) : NULL;
    mtk_tensor *h = scale ? dit_modulate(ctx, mtk_module_forward(child(m, 2), x), scale, NULL) : NULL;
    io->out[0] = mtk_module_forward(child(m, 3), h);
    io->nout = 1;
    return io->out[0] != NULL;
}

static const mtk_module_type norm_out_type = { "LuminaLayerNormContinuous", norm_out_forward, NULL, NULL };

/* ------------------------------------------------ Lumina2TransformerBlock */

typedef struct block_config {
    bool modulation;
} block_config;

/* (x (B, S, dim), cos, sin, temb (B, cond)) -> (B, S, dim) with
 * modulation, (x, cos, sin[, mask (B, S)]) without */
static bool block_forward(mtk_module *m, mtk_module_io *io)
{
    mtk_ctx *ctx = mtk_module_ctx(m);
    bool modulation = ((const block_config *)mtk_module_config(m))->modulation;
    mtk_tensor *x = io->in[0];
    mtk_module_io n = { .in = { x, modulation ? io->in[3] : NULL }, .nin = modulation ? 2 : 1 };
    if (!mtk_module_call(named(m, "norm1"), &n)) return false;
    mtk_module_io a = { .in = { n.out[0], io->in[1], io->in[2] }, .nin = 3 };
    if (!modulation && io->nin > 3) a.in[a.nin++] = io->in[3];
    if (!mtk_module_call(named(m, "attn"), &a)) return false;
    mtk_tensor *h = mtk_module_forward(named(m, "norm2"), a.out[0]);
    x = mtk_add(ctx, x, modulation ? dit_gate(ctx, mtk_tanh(ctx, n.out[1]), h) : h);
    h = mtk_module_forward(named(m, "ffn_norm1"), x);
    if (modulation) h = dit_modulate(ctx, h, n.out[2], NULL);
    h = mtk_module_forward(named(m, "ffn_norm2"), mtk_module_forward(named(m, "feed_forward"), h));
    io->out[0] = mtk_add(ctx, x, modulation ? dit_gate(ctx, mtk_tanh(ctx, n.out[3]), h) : h);
    io->nout = 1;
    /* the forward's locals hold their tensors until it returns (the caller
       holds its input): norm_hidden_states, the gates, attn_output */
    if (!io->out[0] || !models_blocks_held_until_here(ctx, io->in[0]) ||
        !models_blocks_held_until_here(ctx, n.out[0]) || !models_blocks_held_until_here(ctx, a.out[0]))
        return false;
    return !modulation || models_blocks_held_until_here(ctx, n.out[1]);
}

static const mtk_module_type block_type = { "Lumina2TransformerBlock", block_forward, NULL, NULL };

static mtk_module *block(mtk_ctx *ctx, const lumina_spec *s, bool modulation)
{
    mtk_module *m = mtk_module_new(ctx, &block_type, sizeof(block_config));
    if (!m) return NULL;
    ((block_config *)mtk_module_config(m))->modulation = modulation;
    const int64_t *d = &s->hidden;
    mtk_module *norm1 = mtk_nn_rms_norm(ctx, d, 1, s->eps, true);
    if (modulation) {
        norm1 = mtk_module_new(ctx, &rms_zero_type, 0);
        bool ok = norm1 && mtk_module_add(norm1, "silu", mtk_nn_activation(ctx, "SiLU")) &&
                  mtk_module_add(norm1, "linear", mtk_nn_linear(ctx, s->cond_dim, 4 * s->hidden, true)) &&
                  mtk_module_add(norm1, "norm", mtk_nn_rms_norm(ctx, d, 1, s->eps, true));
        norm1 = ok ? mtk_module_finish(norm1) : NULL;
    }
    bool ok = mtk_module_add(m, "attn", attention(ctx, s)) && mtk_module_add(m, "feed_forward", feed_forward(ctx, s)) &&
              mtk_module_add(m, "norm1", norm1) &&
              mtk_module_add(m, "ffn_norm1", mtk_nn_rms_norm(ctx, d, 1, s->eps, true)) &&
              mtk_module_add(m, "norm2", mtk_nn_rms_norm(ctx, d, 1, s->eps, true)) &&
              mtk_module_add(m, "ffn_norm2", mtk_nn_rms_norm(ctx, d, 1, s->eps, true));
    return ok ? mtk_module_finish(m) : NULL;
}

/* ---------------------------------------------------------------- model */

enum { M_ROPE, M_X, M_TIME, M_NOISE_REFINER, M_CONTEXT_REFINER, M_LAYERS, M_NORM_OUT };

typedef struct root_config {
    int64_t patch, out_channels;
} root_config;

static const char *const input_names[] = { "hidden_states", "timestep", "encoder_hidden_states",
                                           "encoder_attention_mask" };

static mtk_tensor *run(mtk_module *layers, mtk_tensor *x, mtk_tensor *mask, mtk_tensor *cos, mtk_tensor *sin,
                       mtk_tensor *temb)
{
    for (int32_t i = 0; x && i < mtk_module_child_count(layers); i++) {
        mtk_module_io b = { .in = { x, cos, sin, temb ? temb : mask }, .nin = temb || mask ? 4 : 3 };
        x = mtk_module_call(child(layers, i), &b) ? b.out[0] : NULL;
    }
    return x;
}

static bool model_forward(mtk_module *m, mtk_module_io *io)
{
    mtk_ctx *ctx = mtk_module_ctx(m);
    const root_config *c = mtk_module_config(m);
    if (!dit_check_inputs(m, io, 4, input_names, (const int32_t[]){ 4, 1, 3, 2 })) return false;
    mtk_tensor *latents = io->in[0], *mask = io->in[3];
    if (mask->shape[0] != io->in[2]->shape[0] || mask->shape[1] != io->in[2]->shape[1])
        return mtk_error(ctx, MTK_ERR_SHAPE, "Lumina2Transformer2DModel: encoder_attention_mask must be (%lld, %lld) as "
                         "encoder_hidden_states, got (%lld, %lld)", (long long)io->in[2]->shape[0],
                         (long long)io->in[2]->shape[1], (long long)mask->shape[0], (long long)mask->shape[1]);
    mtk_module_io e = { .in = { latents, io->in[1], io->in[2] }, .nin = 3 };
    mtk_module_io r = { .in = { latents, mask }, .nin = 2 };
    if (!mtk_module_call(child(m, M_TIME), &e) || !mtk_module_call(child(m, M_ROPE), &r)) return false;
    mtk_tensor *temb = e.out[0], *caption = e.out[1]; /* (B, cond), (B, L, hidden) */
    mtk_tensor *x = mtk_module_forward(child(m, M_X), r.out[0]); /* (B, N, hidden) */
    caption = run(child(m, M_CONTEXT_REFINER), caption, mask, r.out[1], r.out[2], NULL);
    x = run(child(m, M_NOISE_REFINER), x, NULL, r.out[3], r.out[4], temb);
    if (!x || !caption) return false;
    int64_t l = caption->shape[1];
    mtk_tensor *both[2] = { caption, x };
    mtk_tensor *joint = mtk_cat(ctx, both, 2, 1);                         /* (B, L + N, hidden) */
    /* attention_mask (B, L + N) bool: diffusers builds it for the joint
       sequence and passes it only when the lengths differ (never here) */
    if (!joint || !mtk_ctx_push_device(ctx, joint->device)) return false;
    mtk_tensor *joint_mask = mtk_empty(ctx, (const int64_t[]){ joint->shape[0], joint->shape[1] }, 2, MTK_BOOL);
    mtk_ctx_pop_device(ctx);
    if (!joint_mask) return false;
    mtk_tensor *h = run(child(m, M_LAYERS), joint, NULL, r.out[5], r.out[6], temb);
    h = mtk_module_forward2(child(m, M_NORM_OUT), h, temb); /* (B, L + N, p p C) */
    if (!h) return false;
    int64_t p = c->patch, b = latents->shape[0], hp = latents->shape[2] / p, wp = latents->shape[3] / p;
    h = mtk_slice(ctx, h, 1, l, h->shape[1], 1);
    h = mtk_reshape(ctx, h, (const int64_t[]){ b, hp, wp, p, p, c->out_channels }, 6);
    h = mtk_permute(ctx, h, (const int64_t[]){ 0, 5, 1, 3, 2, 4 }, 6);
    io->out[0] = mtk_reshape(ctx, h, (const int64_t[]){ b, c->out_channels, hp * p, wp * p }, 4);
    io->nout = 1;
    if (!io->out[0]) return false;
    /* the forward's locals hold their tensors until it returns: the refined
       caption (encoder_hidden_states), joint_hidden_states, attention_mask,
       the three rotary embeddings (context, noise, joint) */
    mtk_tensor *held[] = { caption, joint, joint_mask, r.out[1], r.out[2], r.out[3], r.out[4], r.out[5], r.out[6] };
    for (size_t i = 0; i < sizeof held / sizeof held[0]; i++)
        if (held[i] && !models_blocks_held_until_here(ctx, held[i])) return false;
    return true;
}

static const mtk_module_type model_type = { "Lumina2Transformer2DModel", model_forward, NULL, NULL };

/* --------------------------------------------------------------- config */

static const char *const known_fields[] = { "sample_size", "patch_size", "in_channels", "out_channels", "hidden_size",
                                            "num_layers", "num_refiner_layers", "num_attention_heads", "num_kv_heads",
                                            "multiple_of", "ffn_dim_multiplier", "norm_eps", "scaling_factor",
                                            "axes_dim_rope", "axes_lens", "cap_feat_dim", NULL };

static bool read_triple(model_config *c, const char *key, int64_t a, int64_t b, int64_t d, int64_t out[3])
{
    out[0] = a, out[1] = b, out[2] = d;
    if (!models_cfg_get(c, key)) return true;
    int32_t n = models_cfg_int_list(c, key, out, 3);
    if (!models_cfg_ok(c)) return false;
    if (n != 3 || cJSON_GetArraySize(models_cfg_get(c, key)) != 3)
        return models_cfg_fail(c, key, "expected a list of three integers (caption, rows, columns)");
    for (int32_t i = 0; i < 3; i++)
        if (out[i] <= 0) return models_cfg_fail(c, key, "sizes must be positive, got %lld", (long long)out[i]);
    return true;
}

static bool read_spec(model_config *c, lumina_spec *s)
{
    memset(s, 0, sizeof *s);
    if (!dit_check_fields(c, "Lumina2Transformer2DModel", known_fields)) return false;
    models_cfg_positive(c, "sample_size", 128);
    s->patch = models_cfg_positive(c, "patch_size", 2);
    s->in_channels = models_cfg_positive(c, "in_channels", 16);
    s->out_channels = models_cfg_positive(c, "out_channels", s->in_channels);
    s->hidden = models_cfg_positive(c, "hidden_size", 2304);
    s->layers = models_cfg_int(c, "num_layers", 26);
    s->refiner_layers = models_cfg_int(c, "num_refiner_layers", 2);
    s->heads = models_cfg_positive(c, "num_attention_heads", 24);
    s->kv_heads = models_cfg_positive(c, "num_kv_heads", 8);
    int64_t multiple_of = models_cfg_positive(c, "multiple_of", 256);
    double multiplier = models_cfg_float(c, "ffn_dim_multiplier", NAN);
    s->eps = models_blocks_eps(c, "norm_eps", 1e-5);
    double scaling = models_cfg_float(c, "scaling_factor", 1.0);
    s->cap_dim = models_cfg_positive(c, "cap_feat_dim", 1024);
    if (!models_cfg_ok(c) || !models_cfg_check_layers(c, "num_layers", s->layers) ||
        !models_cfg_check_layers(c, "num_refiner_layers", s->refiner_layers) ||
        !read_triple(c, "axes_dim_rope", 32, 32, 32, s->axes) || !read_triple(c, "axes_lens", 300, 512, 512, s->axes_lens))
        return false;
    (void)scaling; /* stored by diffusers, read by no layer */
    if (s->hidden % s->heads != 0)
        return models_cfg_fail(c, "hidden_size", "%lld is not a multiple of num_attention_heads=%lld",
                               (long long)s->hidden, (long long)s->heads);
    if (s->heads % s->kv_heads != 0)
        return models_cfg_fail(c, "num_kv_heads", "num_attention_heads=%lld is not a multiple of num_kv_heads=%lld",
                               (long long)s->heads, (long long)s->kv_heads);
    s->head_dim = s->hidden / s->heads;
    if (s->axes[0] + s->axes[1] + s->axes[2] != s->head_dim || s->axes[0] % 2 || s->axes[1] % 2 || s->axes[2] % 2)
        return models_cfg_fail(c, "axes_dim_rope", "even sizes summing to the head dim %lld, got [%lld, %lld, %lld]",
                               (long long)s->head_dim, (long long)s->axes[0], (long long)s->axes[1],
                               (long long)s->axes[2]);
    s->ffn = 4 * s->hidden;
    if (!isnan(multiplier)) {
        double width = multiplier * (double)s->ffn; /* int() truncates */
        if (!(width >= 1.0 && width <= (double)MODEL_MAX_WIDTH))
            return models_cfg_fail(c, "ffn_dim_multiplier", "%g gives a feed-forward width of %g (1 to %lld)", multiplier,
                                   width, (long long)MODEL_MAX_WIDTH);
        s->ffn = (int64_t)width;
    }
    s->ffn = multiple_of * ((s->ffn + multiple_of - 1) / multiple_of);
    s->cond_dim = s->hidden < 1024 ? s->hidden : 1024;
    return true;
}

mtk_module *models_family_lumina2_build(model_config *c, const char *architecture)
{
    (void)architecture;
    lumina_spec s;
    if (!read_spec(c, &s)) return NULL;
    mtk_ctx *ctx = c->ctx;
    models_cfg_note(c, "encoder_attention_mask taken as all ones on meta (diffusers reads it with .tolist())");
    mtk_module *m = mtk_module_new(ctx, &model_type, sizeof(root_config));
    mtk_module *rope = mtk_module_new(ctx, &rope_type, sizeof(rope_module_config));
    mtk_module *noise = mtk_nn_module_list(ctx), *context = mtk_nn_module_list(ctx), *layers = mtk_nn_module_list(ctx);
    mtk_module *norm_out = mtk_module_new(ctx, &norm_out_type, 0);
    if (!m || !rope || !noise || !context || !layers || !norm_out) return NULL;
    *(root_config *)mtk_module_config(m) = (root_config){ s.patch, s.out_channels };
    rope_module_config *rc = mtk_module_config(rope);
    memcpy(rc->rope.axes, s.axes, sizeof s.axes);
    memcpy(rc->rope.axes_lens, s.axes_lens, sizeof s.axes_lens);
    rc->rope.theta = 10000.0, rc->patch = s.patch;
    for (int64_t i = 0; i < s.refiner_layers; i++)
        if (!mtk_nn_module_list_append(noise, block(ctx, &s, true)) ||
            !mtk_nn_module_list_append(context, block(ctx, &s, false)))
            return NULL;
    for (int64_t i = 0; i < s.layers; i++)
        if (!mtk_nn_module_list_append(layers, block(ctx, &s, true))) return NULL;
    int64_t out_dim = s.patch * s.patch * s.out_channels;
    bool ok = mtk_module_add(norm_out, "silu", mtk_nn_activation(ctx, "SiLU")) &&
              mtk_module_add(norm_out, "linear_1", mtk_nn_linear(ctx, s.cond_dim, s.hidden, true)) &&
              mtk_module_add(norm_out, "norm", mtk_nn_layer_norm(ctx, &s.hidden, 1, 1e-6, false, true)) &&
              mtk_module_add(norm_out, "linear_2", mtk_nn_linear(ctx, s.hidden, out_dim, true));
    ok = ok && mtk_module_add(m, "rope_embedder", mtk_module_finish(rope)) &&
         mtk_module_add(m, "x_embedder", mtk_nn_linear(ctx, s.patch * s.patch * s.in_channels, s.hidden, true)) &&
         mtk_module_add(m, "time_caption_embed", time_caption(ctx, &s)) && mtk_module_add(m, "noise_refiner", noise) &&
         mtk_module_add(m, "context_refiner", context) && mtk_module_add(m, "layers", layers) &&
         mtk_module_add(m, "norm_out", mtk_module_finish(norm_out));
    return ok ? mtk_module_finish(m) : NULL;
}

/* ------------------------------------------------------ pipeline calls */

/* Lumina2Pipeline: latents (B, C, H/f, W/f), the float32 timestep, the
 * Gemma-2 hidden states of the system prompt + prompt (256 tokens:
 * max_sequence_length) and their attention mask.  With guidance the
 * negative prompt is a second call on B (not a batch of 2B), every step
 * while cfg_trunc_ratio is 1.0, diffusers' default. */
static int32_t lumina2_calls(model_config *c, const diffusers_image *image, diffusers_call *out, int32_t cap)
{
    lumina_spec s;
    if (!read_spec(c, &s)) return -1;
    int64_t f = diffusers_scale_factor(image), b = image->batch, tokens = diffusers_tokens(image, 256);
    if (!diffusers_check_image(c, image, f * s.patch)) return -1;
    int32_t n = 0;
    diffusers_call *call = diffusers_call_add(c, out, cap, &n, "forward", image->steps * (image->guidance ? 2 : 1));
    diffusers_input_add(c, call, "hidden_states", MTK_DTYPE_UNDEFINED, 4,
                        (int64_t[]){ b, s.in_channels, image->height / f, image->width / f });
    diffusers_input_add(c, call, "timestep", MTK_FLOAT32, 1, (int64_t[]){ b });
    diffusers_input_add(c, call, "encoder_hidden_states", MTK_DTYPE_UNDEFINED, 3, (int64_t[]){ b, tokens, s.cap_dim });
    diffusers_input_add(c, call, "encoder_attention_mask", MTK_INT64, 2, (int64_t[]){ b, tokens });
    return models_cfg_ok(c) ? n : -1;
}

const diffusers_component diffusers_lumina2_component = { DIFFUSERS_DENOISER, lumina2_calls, NULL };
