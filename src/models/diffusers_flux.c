/* FluxTransformer2DModel (diffusers), the denoiser of FLUX.1: packed
 * latents (2 x 2 latent patches flattened by the pipeline) and T5 prompt
 * embeddings go through num_layers double-stream FluxTransformerBlocks
 * (image and text weights apart, one joint attention) and
 * num_single_layers FluxSingleTransformerBlocks (one stream over
 * [text, image], attention and MLP side by side), with 3-axis rotary
 * embeddings of img_ids / txt_ids and a conditioning vector from the
 * timestep, the pooled CLIP embedding and (guidance_embeds: FLUX.1-dev)
 * the guidance scale.
 *
 * Config fields (diffusers' defaults): patch_size 1, in_channels 64,
 * out_channels null (in_channels), num_layers 19, num_single_layers 38,
 * attention_head_dim 128, num_attention_heads 24, joint_attention_dim
 * 4096, pooled_projection_dim 768, guidance_embeds false, axes_dims_rope
 * [16, 56, 56] (summing to attention_head_dim).
 *
 * Forward, as diffusers' (hidden_states, encoder_hidden_states,
 * pooled_projections, timestep, img_ids, txt_ids[, guidance]): packed
 * latents (B, N, in_channels), prompt embeddings (B, S,
 * joint_attention_dim), pooled (B, pooled_projection_dim), timesteps (B,)
 * (in [0, 1]: scaled by 1000 inside), img_ids (N, 3), txt_ids (S, 3),
 * guidance (B,) when guidance_embeds -> (B, N, patch^2 out_channels). */
#include "models/diffusers.h"
#include "models/diffusers_dit.h"
#include "mtk/ops.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static mtk_module *child(mtk_module *m, int32_t i) { return blocks_child(m, i); }
static mtk_module *named(mtk_module *m, const char *name) { return mtk_module_child(m, name); }

#define FLUX_MAX_AXES 8

typedef struct flux_spec {
    int64_t patch, in_channels, out_channels, layers, single_layers, head_dim, heads, inner, joint_dim, pooled_dim;
    int64_t axes[FLUX_MAX_AXES];
    int32_t naxes;
    bool guidance;
} flux_spec;

/* -------------------------------------------------------- FluxPosEmbed */

typedef struct pos_config {
    int64_t axes[FLUX_MAX_AXES];
    int32_t naxes;
    double theta;
} pos_config;

/* ids (S, axes) -> cos, sin (S, sum(axes_dim)) float32: per axis the
 * positions times 1 / theta^(2j / d) in float64, each frequency twice
 * (repeat_interleave_real) */
static bool pos_forward(mtk_module *m, mtk_module_io *io)
{
    mtk_ctx *ctx = mtk_module_ctx(m);
    const pos_config *c = mtk_module_config(m);
    mtk_tensor *ids = io->in[0];
    if (ids->ndim != 2 || ids->shape[1] != c->naxes)
        return mtk_error(ctx, MTK_ERR_SHAPE, "FluxPosEmbed: ids must be (sequence, %d), got %d dims", (int)c->naxes,
                         (int)ids->ndim);
    mtk_tensor *pos = mtk_to_dtype(ctx, ids, MTK_FLOAT32);
    mtk_tensor *cos[FLUX_MAX_AXES], *sin[FLUX_MAX_AXES];
    for (int32_t i = 0; i < c->naxes; i++) {
        int64_t d = c->axes[i];
        if (!mtk_ctx_push_device(ctx, ids->device)) return false;
        mtk_tensor *j = mtk_arange(ctx, 0, (double)d, 2, MTK_FLOAT64); /* (d/2,) */
        mtk_ctx_pop_device(ctx);
        mtk_tensor *freqs = mtk_reciprocal(ctx, mtk_pow_scalar_base(ctx, mtk_value_float(c->theta),
                                                                    mtk_div_scalar(ctx, j, mtk_value_int(d))));
        mtk_tensor *angles = mtk_mul(ctx, mtk_unsqueeze(ctx, mtk_select(ctx, pos, 1, i), 1),
                                     mtk_unsqueeze(ctx, freqs, 0)); /* (S, d/2) float64 */
        cos[i] = mtk_to_dtype(ctx, mtk_repeat_interleave(ctx, mtk_cos(ctx, angles), 2, 1), MTK_FLOAT32);
        sin[i] = mtk_to_dtype(ctx, mtk_repeat_interleave(ctx, mtk_sin(ctx, angles), 2, 1), MTK_FLOAT32);
    }
    io->out[0] = mtk_cat(ctx, cos, c->naxes, -1);
    io->out[1] = mtk_cat(ctx, sin, c->naxes, -1);
    io->nout = 2;
    return io->out[0] && io->out[1];
}

static const mtk_module_type pos_type = { "FluxPosEmbed", pos_forward, NULL, NULL };

/* -------------------------------------------------------- FluxAttention */

typedef struct attn_config {
    int64_t heads, head_dim;
    bool joint; /* added_kv_proj_dim: the text stream's projections */
} attn_config;

/* proj(x) as (B, H, S, D) with its rms norm */
static mtk_tensor *heads_of(mtk_module *m, const char *proj, const char *norm, mtk_tensor *x)
{
    mtk_ctx *ctx = mtk_module_ctx(m);
    const attn_config *c = mtk_module_config(m);
    mtk_tensor *h = mtk_unflatten(ctx, mtk_module_forward(named(m, proj), x), -1, (const int64_t[]){ -1, c->head_dim },
                                  2); /* (B, S, H, D) */
    if (norm) h = mtk_module_forward(named(m, norm), h);
    return mtk_transpose(ctx, h, 1, 2);
}

/* FluxAttnProcessor: (x (B, N, dim), [context (B, S, dim),] cos, sin
 * (S [+ N], D)) -> joint: (x (B, N, dim), context (B, S, dim)); single:
 * the attention over x (B, N, H D) without an output projection */
static bool attn_forward(mtk_module *m, mtk_module_io *io)
{
    mtk_ctx *ctx = mtk_module_ctx(m);
    const attn_config *c = mtk_module_config(m);
    mtk_tensor *x = io->in[0], *context = c->joint ? io->in[1] : NULL;
    mtk_tensor *cos = io->in[c->joint ? 2 : 1], *sin = io->in[c->joint ? 3 : 2];
    mtk_tensor *q = heads_of(m, "to_q", "norm_q", x), *k = heads_of(m, "to_k", "norm_k", x);
    mtk_tensor *v = heads_of(m, "to_v", NULL, x);
    if (c->joint) {
        mtk_tensor *qs[2] = { heads_of(m, "add_q_proj", "norm_added_q", context), q };
        mtk_tensor *ks[2] = { heads_of(m, "add_k_proj", "norm_added_k", context), k };
        mtk_tensor *vs[2] = { heads_of(m, "add_v_proj", NULL, context), v };
        q = mtk_cat(ctx, qs, 2, 2), k = mtk_cat(ctx, ks, 2, 2), v = mtk_cat(ctx, vs, 2, 2); /* (B, H, S + N, D) */
    }
    if (!q || !k) return false;
    mtk_dtype dtype = q->dtype;
    q = mtk_to_dtype(ctx, mtk_rope(ctx, mtk_to_dtype(ctx, q, MTK_FLOAT32), cos, sin, true), dtype);
    k = mtk_to_dtype(ctx, mtk_rope(ctx, mtk_to_dtype(ctx, k, MTK_FLOAT32), cos, sin, true), dtype);
    mtk_tensor *h = mtk_scaled_dot_product_attention(ctx, q, k, v, NULL, 0.0, false, 1.0 / sqrt((double)c->head_dim),
                                                     false);
    h = models_blocks_merge_heads(ctx, h); /* (B, S + N, H D) */
    if (!h) return false;
    io->nout = 1;
    if (!c->joint) {
        io->out[0] = h;
        return true;
    }
    int64_t s = context->shape[1];
    mtk_module *to_out = named(m, "to_out");
    mtk_tensor *img = mtk_contiguous(ctx, mtk_slice(ctx, h, 1, s, h->shape[1], 1));
    io->out[0] = mtk_module_forward(child(to_out, 1), mtk_module_forward(child(to_out, 0), img));
    io->out[1] = mtk_module_forward(named(m, "to_add_out"), mtk_contiguous(ctx, mtk_slice(ctx, h, 1, 0, s, 1)));
    io->nout = 2;
    return io->out[0] && io->out[1];
}

static const mtk_module_type attn_type = { "FluxAttention", attn_forward, NULL, NULL };

static mtk_module *rms(mtk_ctx *ctx, int64_t dim) { return mtk_nn_rms_norm(ctx, &dim, 1, 1e-6, true); }

/* FluxAttention(query_dim=dim, heads, dim_head, out_dim=dim, bias=True,
 * eps=1e-6): joint with added_kv_proj_dim=dim, single with pre_only */
static mtk_module *attention(mtk_ctx *ctx, const flux_spec *s, bool joint)
{
    mtk_module *m = mtk_module_new(ctx, &attn_type, sizeof(attn_config));
    if (!m) return NULL;
    *(attn_config *)mtk_module_config(m) = (attn_config){ s->heads, s->head_dim, joint };
    int64_t d = s->inner;
    bool ok = mtk_module_add(m, "norm_q", rms(ctx, s->head_dim)) && mtk_module_add(m, "norm_k", rms(ctx, s->head_dim)) &&
              mtk_module_add(m, "to_q", mtk_nn_linear(ctx, d, d, true)) &&
              mtk_module_add(m, "to_k", mtk_nn_linear(ctx, d, d, true)) &&
              mtk_module_add(m, "to_v", mtk_nn_linear(ctx, d, d, true));
    if (ok && joint) {
        mtk_module *to_out = mtk_nn_module_list(ctx);
        ok = to_out && mtk_nn_module_list_append(to_out, mtk_nn_linear(ctx, d, d, true)) &&
             mtk_nn_module_list_append(to_out, mtk_nn_dropout(ctx, 0.0)) && mtk_module_add(m, "to_out", to_out) &&
             mtk_module_add(m, "norm_added_q", rms(ctx, s->head_dim)) &&
             mtk_module_add(m, "norm_added_k", rms(ctx, s->head_dim)) &&
             mtk_module_add(m, "add_q_proj", mtk_nn_linear(ctx, d, d, true)) &&
             mtk_module_add(m, "add_k_proj", mtk_nn_linear(ctx, d, d, true)) &&
             mtk_module_add(m, "add_v_proj", mtk_nn_linear(ctx, d, d, true)) &&
             mtk_module_add(m, "to_add_out", mtk_nn_linear(ctx, d, d, true));
    }
    return ok ? mtk_module_finish(m) : NULL;
}

/* float16 activations are clipped to its range, as diffusers does */
static mtk_tensor *clip_half(mtk_ctx *ctx, mtk_tensor *x)
{
    if (!x || x->dtype != MTK_FLOAT16) return x;
    return mtk_clamp(ctx, x, mtk_value_float(-65504.0), mtk_value_float(65504.0));
}

/* ------------------------------------------------- FluxTransformerBlock */

/* (x (B, N, dim), context (B, S, dim), temb (B, dim), cos, sin) ->
 * out[0] = x, out[1] = context (diffusers returns them the other way) */
static bool block_forward(mtk_module *m, mtk_module_io *io)
{
    mtk_ctx *ctx = mtk_module_ctx(m);
    mtk_tensor *x = io->in[0], *context = io->in[1], *temb = io->in[2];
    mtk_module_io n1 = { .in = { x, temb }, .nin = 2 }, n1c = { .in = { context, temb }, .nin = 2 };
    if (!mtk_module_call(named(m, "norm1"), &n1) || !mtk_module_call(named(m, "norm1_context"), &n1c)) return false;
    mtk_module_io a = { .in = { n1.out[0], n1c.out[0], io->in[3], io->in[4] }, .nin = 4 };
    if (!mtk_module_call(named(m, "attn"), &a)) return false;
    x = mtk_add(ctx, x, dit_gate(ctx, n1.out[1], a.out[0]));
    mtk_tensor *h = dit_modulate(ctx, mtk_module_forward(named(m, "norm2"), x), n1.out[3], n1.out[2]);
    io->out[0] = mtk_add(ctx, x, dit_gate(ctx, n1.out[4], mtk_module_forward(named(m, "ff"), h)));
    context = mtk_add(ctx, context, dit_gate(ctx, n1c.out[1], a.out[1]));
    h = dit_modulate(ctx, mtk_module_forward(named(m, "norm2_context"), context), n1c.out[3], n1c.out[2]);
    context = mtk_add(ctx, context, dit_gate(ctx, n1c.out[4], mtk_module_forward(named(m, "ff_context"), h)));
    io->out[1] = clip_half(ctx, context);
    io->nout = 2;
    return io->out[0] && io->out[1];
}

static const mtk_module_type block_type = { "FluxTransformerBlock", block_forward, NULL, NULL };

static mtk_module *block(mtk_ctx *ctx, const flux_spec *s)
{
    int64_t d = s->inner;
    mtk_module *m = mtk_module_new(ctx, &block_type, 0);
    bool ok = m && mtk_module_add(m, "norm1", dit_ada_norm_zero(ctx, d, DIT_ADA_ZERO)) &&
              mtk_module_add(m, "norm1_context", dit_ada_norm_zero(ctx, d, DIT_ADA_ZERO)) &&
              mtk_module_add(m, "attn", attention(ctx, s, true)) &&
              mtk_module_add(m, "norm2", mtk_nn_layer_norm(ctx, &d, 1, 1e-6, false, false)) &&
              mtk_module_add(m, "ff", dit_feed_forward(ctx, d)) &&
              mtk_module_add(m, "norm2_context", mtk_nn_layer_norm(ctx, &d, 1, 1e-6, false, false)) &&
              mtk_module_add(m, "ff_context", dit_feed_forward(ctx, d));
    return ok ? mtk_module_finish(m) : NULL;
}

/* ------------------------------------------- FluxSingleTransformerBlock */

enum { S_NORM, S_PROJ_MLP, S_ACT_MLP, S_PROJ_OUT, S_ATTN };

/* the same arguments and results as FluxTransformerBlock, one stream over
 * [context, x] inside */
static bool single_forward(mtk_module *m, mtk_module_io *io)
{
    mtk_ctx *ctx = mtk_module_ctx(m);
    mtk_tensor *x = io->in[0], *context = io->in[1], *temb = io->in[2];
    if (!x || !context) return false;
    int64_t s = context->shape[1];
    mtk_tensor *both[2] = { context, x };
    mtk_tensor *residual = mtk_cat(ctx, both, 2, 1); /* (B, S + N, dim) */
    mtk_module_io n = { .in = { residual, temb }, .nin = 2 };
    if (!mtk_module_call(child(m, S_NORM), &n)) return false;
    mtk_tensor *mlp = mtk_module_forward(child(m, S_ACT_MLP), mtk_module_forward(child(m, S_PROJ_MLP), n.out[0]));
    mtk_module_io a = { .in = { n.out[0], io->in[3], io->in[4] }, .nin = 3 };
    if (!mtk_module_call(child(m, S_ATTN), &a)) return false;
    mtk_tensor *parts[2] = { a.out[0], mlp };
    mtk_tensor *h = dit_gate(ctx, n.out[1], mtk_module_forward(child(m, S_PROJ_OUT), mtk_cat(ctx, parts, 2, 2)));
    h = clip_half(ctx, mtk_add(ctx, residual, h));
    if (!h) return false;
    io->out[0] = mtk_slice(ctx, h, 1, s, h->shape[1], 1);
    io->out[1] = mtk_slice(ctx, h, 1, 0, s, 1);
    io->nout = 2;
    return io->out[0] && io->out[1];
}

static const mtk_module_type single_type = { "FluxSingleTransformerBlock", single_forward, NULL, NULL };

static mtk_module *single_block(mtk_ctx *ctx, const flux_spec *s)
{
    int64_t d = s->inner, mlp = 4 * d;
    mtk_module *m = mtk_module_new(ctx, &single_type, 0);
    bool ok = m && mtk_module_add(m, "norm", dit_ada_norm_zero(ctx, d, DIT_ADA_ZERO_SINGLE)) &&
              mtk_module_add(m, "proj_mlp", mtk_nn_linear(ctx, d, mlp, true)) &&
              mtk_module_add(m, "act_mlp", mtk_nn_gelu(ctx, "tanh")) &&
              mtk_module_add(m, "proj_out", mtk_nn_linear(ctx, d + mlp, d, true)) &&
              mtk_module_add(m, "attn", attention(ctx, s, false));
    return ok ? mtk_module_finish(m) : NULL;
}

/* ---------------------------------------------------------------- model */

enum { M_POS, M_TIME, M_CONTEXT, M_X, M_BLOCKS, M_SINGLE, M_NORM_OUT, M_PROJ_OUT };

typedef struct root_config {
    bool guidance;
} root_config;

static const char *const input_names[] = { "hidden_states", "encoder_hidden_states", "pooled_projections", "timestep",
                                           "img_ids", "txt_ids", "guidance" };

/* ids (S, 3), or the deprecated (1, S, 3): its first row */
static mtk_tensor *ids_2d(mtk_ctx *ctx, mtk_tensor *ids) { return ids && ids->ndim == 3 ? mtk_select(ctx, ids, 0, 0) : ids; }

static bool run_blocks(mtk_module *blocks, mtk_tensor **x, mtk_tensor **context, mtk_tensor *temb, mtk_tensor *cos,
                       mtk_tensor *sin)
{
    for (int32_t i = 0; i < mtk_module_child_count(blocks); i++) {
        mtk_module_io b = { .in = { *x, *context, temb, cos, sin }, .nin = 5 };
        if (!mtk_module_call(child(blocks, i), &b)) return false;
        *x = b.out[0], *context = b.out[1];
    }
    return true;
}

static bool model_forward(mtk_module *m, mtk_module_io *io)
{
    mtk_ctx *ctx = mtk_module_ctx(m);
    bool guidance = ((const root_config *)mtk_module_config(m))->guidance;
    int32_t n = guidance ? 7 : 6;
    if (!dit_check_inputs(m, io, n, input_names, (const int32_t[]){ 3, 3, 2, 1, 0, 0, 1 })) return false;
    mtk_tensor *x = mtk_module_forward(child(m, M_X), io->in[0]); /* (B, N, dim) */
    if (!x) return false;
    mtk_value thousand = mtk_value_int(1000);
    mtk_tensor *t = mtk_mul_scalar(ctx, mtk_to_dtype(ctx, io->in[3], x->dtype), thousand);
    mtk_module_io e = { .in = { t, io->in[2] }, .nin = 2 };
    if (guidance) {
        e.in[1] = mtk_mul_scalar(ctx, mtk_to_dtype(ctx, io->in[6], x->dtype), thousand);
        e.in[2] = io->in[2];
        e.nin = 3;
    }
    if (!mtk_module_call(child(m, M_TIME), &e)) return false;
    mtk_tensor *temb = e.out[0];                                              /* (B, dim) */
    mtk_tensor *context = mtk_module_forward(child(m, M_CONTEXT), io->in[1]); /* (B, S, dim) */
    mtk_tensor *ids[2] = { ids_2d(ctx, io->in[5]), ids_2d(ctx, io->in[4]) };
    mtk_module_io r = { .in = { mtk_cat(ctx, ids, 2, 0) }, .nin = 1 }; /* (S + N, 3) */
    if (!mtk_module_call(child(m, M_POS), &r)) return false;
    if (!run_blocks(child(m, M_BLOCKS), &x, &context, temb, r.out[0], r.out[1]) ||
        !run_blocks(child(m, M_SINGLE), &x, &context, temb, r.out[0], r.out[1]))
        return false;
    io->out[0] = mtk_module_forward(child(m, M_PROJ_OUT), mtk_module_forward2(child(m, M_NORM_OUT), x, temb));
    io->nout = 1;
    /* the forward's locals hold their tensors until it returns: timestep and
       guidance scaled by 1000, ids (txt_ids and img_ids concatenated) and
       image_rotary_emb (cos, sin) */
    return io->out[0] != NULL && models_blocks_held_until_here(ctx, t) &&
           (!guidance || models_blocks_held_until_here(ctx, e.in[1])) &&
           models_blocks_held_until_here(ctx, r.in[0]) && models_blocks_held_until_here(ctx, r.out[0]) &&
           models_blocks_held_until_here(ctx, r.out[1]);
}

static const mtk_module_type model_type = { "FluxTransformer2DModel", model_forward, NULL, NULL };

/* --------------------------------------------------------------- config */

static const char *const known_fields[] = { "patch_size", "in_channels", "out_channels", "num_layers",
                                            "num_single_layers", "attention_head_dim", "num_attention_heads",
                                            "joint_attention_dim", "pooled_projection_dim", "guidance_embeds",
                                            "axes_dims_rope", NULL };

static bool read_spec(model_config *c, flux_spec *s)
{
    memset(s, 0, sizeof *s);
    if (!dit_check_fields(c, "FluxTransformer2DModel", known_fields)) return false;
    s->patch = models_cfg_positive(c, "patch_size", 1);
    s->in_channels = models_cfg_positive(c, "in_channels", 64);
    s->out_channels = models_cfg_positive(c, "out_channels", s->in_channels);
    s->layers = models_cfg_int(c, "num_layers", 19);
    s->single_layers = models_cfg_int(c, "num_single_layers", 38);
    s->head_dim = models_cfg_positive(c, "attention_head_dim", 128);
    s->heads = models_cfg_positive(c, "num_attention_heads", 24);
    s->joint_dim = models_cfg_positive(c, "joint_attention_dim", 4096);
    s->pooled_dim = models_cfg_positive(c, "pooled_projection_dim", 768);
    s->guidance = models_cfg_bool(c, "guidance_embeds", false);
    if (!models_cfg_ok(c) || !models_cfg_check_layers(c, "num_layers", s->layers) ||
        !models_cfg_check_layers(c, "num_single_layers", s->single_layers))
        return false;
    s->inner = s->heads * s->head_dim;
    if (models_cfg_get(c, "axes_dims_rope")) {
        s->naxes = models_cfg_int_list(c, "axes_dims_rope", s->axes, FLUX_MAX_AXES);
        if (!models_cfg_ok(c)) return false;
        if (s->naxes < 1 || cJSON_GetArraySize(models_cfg_get(c, "axes_dims_rope")) > FLUX_MAX_AXES)
            return models_cfg_fail(c, "axes_dims_rope", "expected a list of 1 to %d integers", FLUX_MAX_AXES);
    } else {
        s->naxes = 3, s->axes[0] = 16, s->axes[1] = 56, s->axes[2] = 56;
    }
    for (int32_t i = 0; i < s->naxes; i++)
        if (s->axes[i] <= 0 || s->axes[i] % 2 != 0)
            return models_cfg_fail(c, "axes_dims_rope", "each axis needs a positive even size, got %lld",
                                   (long long)s->axes[i]);
    return true;
}

mtk_module *models_family_flux_build(model_config *c, const char *architecture)
{
    (void)architecture;
    flux_spec s;
    if (!read_spec(c, &s)) return NULL;
    mtk_ctx *ctx = c->ctx;
    mtk_module *m = mtk_module_new(ctx, &model_type, sizeof(root_config));
    mtk_module *pos = mtk_module_new(ctx, &pos_type, sizeof(pos_config));
    mtk_module *blocks = mtk_nn_module_list(ctx), *singles = mtk_nn_module_list(ctx);
    if (!m || !pos || !blocks || !singles) return NULL;
    ((root_config *)mtk_module_config(m))->guidance = s.guidance;
    pos_config *pc = mtk_module_config(pos);
    memcpy(pc->axes, s.axes, sizeof s.axes);
    pc->naxes = s.naxes, pc->theta = 10000.0;
    for (int64_t i = 0; i < s.layers; i++)
        if (!mtk_nn_module_list_append(blocks, block(ctx, &s))) return NULL;
    for (int64_t i = 0; i < s.single_layers; i++)
        if (!mtk_nn_module_list_append(singles, single_block(ctx, &s))) return NULL;
    bool ok = mtk_module_add(m, "pos_embed", mtk_module_finish(pos)) &&
              mtk_module_add(m, "time_text_embed", dit_time_text_embedding(ctx, s.inner, s.pooled_dim, s.guidance)) &&
              mtk_module_add(m, "context_embedder", mtk_nn_linear(ctx, s.joint_dim, s.inner, true)) &&
              mtk_module_add(m, "x_embedder", mtk_nn_linear(ctx, s.in_channels, s.inner, true)) &&
              mtk_module_add(m, "transformer_blocks", blocks) && mtk_module_add(m, "single_transformer_blocks", singles) &&
              mtk_module_add(m, "norm_out", dit_ada_norm_continuous(ctx, s.inner, s.inner)) &&
              mtk_module_add(m, "proj_out", mtk_nn_linear(ctx, s.inner, s.patch * s.patch * s.out_channels, true));
    return ok ? mtk_module_finish(m) : NULL;
}

/* ------------------------------------------------------ pipeline calls */

/* FluxPipeline: latents (B, C, H/f, W/f) packed in 2 x 2 patches to (B,
 * (H/2f)(W/2f), 4C), the T5 embeddings (512 tokens: max_sequence_length),
 * the pooled CLIP embedding, the timestep and guidance scale (B,) and the
 * position ids, in the model's dtype as the pipeline casts them.  FLUX.1-dev
 * is guidance-distilled: true CFG (a negative prompt with true_cfg_scale)
 * runs the transformer a second time on B, which the guidance flag counts
 * as two calls of B. */
static int32_t flux_calls(model_config *c, const diffusers_image *image, diffusers_call *out, int32_t cap)
{
    flux_spec s;
    if (!read_spec(c, &s)) return -1;
    int64_t f = diffusers_scale_factor(image), b = image->batch, tokens = diffusers_tokens(image, 512);
    if (!diffusers_check_image(c, image, 2 * f)) return -1;
    int64_t patches = (image->height / (2 * f)) * (image->width / (2 * f));
    int32_t n = 0;
    diffusers_call *call = diffusers_call_add(c, out, cap, &n, "forward", image->steps * (image->guidance ? 2 : 1));
    diffusers_input_add(c, call, "hidden_states", MTK_DTYPE_UNDEFINED, 3, (int64_t[]){ b, patches, s.in_channels });
    diffusers_input_add(c, call, "encoder_hidden_states", MTK_DTYPE_UNDEFINED, 3, (int64_t[]){ b, tokens, s.joint_dim });
    diffusers_input_add(c, call, "pooled_projections", MTK_DTYPE_UNDEFINED, 2, (int64_t[]){ b, s.pooled_dim });
    diffusers_input_add(c, call, "timestep", MTK_DTYPE_UNDEFINED, 1, (int64_t[]){ b });
    diffusers_input_add(c, call, "img_ids", MTK_DTYPE_UNDEFINED, 2, (int64_t[]){ patches, s.naxes });
    diffusers_input_add(c, call, "txt_ids", MTK_DTYPE_UNDEFINED, 2, (int64_t[]){ tokens, s.naxes });
    if (s.guidance) diffusers_input_add(c, call, "guidance", MTK_FLOAT32, 1, (int64_t[]){ b });
    return models_cfg_ok(c) ? n : -1;
}

const diffusers_component diffusers_flux_component = { DIFFUSERS_DENOISER, flux_calls, NULL };
