/* diffusers' convolutional blocks: ResnetBlock2D, Downsample2D,
 * Upsample2D, the Attention class, the VAE's UNetMidBlock2D, Timesteps and
 * TimestepEmbedding (diffusers_blocks.h). */
#include "models/blocks.h"
#include "models/diffusers_blocks.h"
#include "mtk/ops.h"

#include <math.h>
#include <string.h>

static mtk_module *kid(mtk_module *m, const char *name) { return mtk_module_child(m, name); }

mtk_tensor *diffusers_call2(mtk_module *m, mtk_tensor *x, mtk_tensor *y)
{
    if (!m || !x) return NULL;
    mtk_module_io io = { .in = { x, y }, .nin = y ? 2 : 1 };
    return mtk_module_call(m, &io) && io.nout > 0 ? io.out[0] : NULL;
}

static mtk_module *conv2d(mtk_ctx *ctx, int64_t in, int64_t out, int64_t k, int64_t stride, int64_t padding)
{
    mtk_conv_options o = mtk_conv_defaults();
    o.stride[0] = o.stride[1] = stride;
    o.padding[0] = o.padding[1] = padding;
    return mtk_nn_conv(ctx, 2, in, out, (int64_t[]){ k, k }, &o);
}

/* ---------------------------------------------------------- ResnetBlock2D */

typedef struct resnet_config {
    double output_scale_factor;
    bool time, shortcut;
} resnet_config;

/* x (B, in, H, W), temb (B, T) -> (x' + h) / output_scale_factor, (B, out, H, W) */
static bool resnet_forward(mtk_module *m, mtk_module_io *io)
{
    mtk_ctx *ctx = mtk_module_ctx(m);
    const resnet_config *c = mtk_module_config(m);
    mtk_module *act = kid(m, "nonlinearity");
    mtk_tensor *x = io->in[0];
    mtk_tensor *h = mtk_module_forward(kid(m, "conv1"), mtk_module_forward(act, mtk_module_forward(kid(m, "norm1"), x)));
    if (c->time) {
        if (io->nin < 2 || !io->in[1]) return mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "ResnetBlock2D: no temb given");
        mtk_tensor *t = mtk_module_forward(kid(m, "time_emb_proj"), mtk_module_forward(act, io->in[1])); /* (B, out) */
        if (!t) return false;
        h = mtk_add(ctx, h, mtk_view(ctx, t, (int64_t[]){ t->shape[0], t->shape[1], 1, 1 }, 4));
    }
    h = mtk_module_forward(act, mtk_module_forward(kid(m, "norm2"), h));
    h = mtk_module_forward(kid(m, "conv2"), mtk_module_forward(kid(m, "dropout"), h));
    if (c->shortcut) x = mtk_module_forward(kid(m, "conv_shortcut"), x);
    h = mtk_add(ctx, x, h);
    io->out[0] = mtk_div_scalar(ctx, h, mtk_value_float(c->output_scale_factor));
    io->nout = 1;
    return io->out[0] != NULL;
}

static const mtk_module_type resnet_type = { "ResnetBlock2D", resnet_forward, NULL, NULL };

mtk_module *diffusers_resnet(mtk_ctx *ctx, int64_t in, int64_t out, int64_t temb_channels, int64_t groups, double eps,
                             double output_scale_factor)
{
    mtk_module *m = mtk_module_new(ctx, &resnet_type, sizeof(resnet_config));
    if (!m) return NULL;
    *(resnet_config *)mtk_module_config(m) = (resnet_config){ output_scale_factor, temb_channels > 0, in != out };
    bool ok = mtk_module_add(m, "norm1", mtk_nn_group_norm(ctx, groups, in, eps, true, true)) &&
              mtk_module_add(m, "conv1", conv2d(ctx, in, out, 3, 1, 1)) &&
              (temb_channels <= 0 || mtk_module_add(m, "time_emb_proj", mtk_nn_linear(ctx, temb_channels, out, true))) &&
              mtk_module_add(m, "norm2", mtk_nn_group_norm(ctx, groups, out, eps, true, true)) &&
              mtk_module_add(m, "dropout", mtk_nn_dropout(ctx, 0.0)) &&
              mtk_module_add(m, "conv2", conv2d(ctx, out, out, 3, 1, 1)) &&
              mtk_module_add(m, "nonlinearity", mtk_nn_activation(ctx, "SiLU")) &&
              (in == out || mtk_module_add(m, "conv_shortcut", conv2d(ctx, in, out, 1, 1, 0)));
    return ok ? mtk_module_finish(m) : NULL;
}

/* ------------------------------------------------ Downsample2D, Upsample2D */

typedef struct sample_config {
    int64_t padding;
} sample_config;

/* (B, C, H, W) -> conv stride 2 (padding 0: F.pad (0, 1, 0, 1) first) */
static bool downsample_forward(mtk_module *m, mtk_module_io *io)
{
    mtk_ctx *ctx = mtk_module_ctx(m);
    const sample_config *c = mtk_module_config(m);
    mtk_tensor *x = io->in[0];
    if (c->padding == 0) x = mtk_pad(ctx, x, (int64_t[]){ 0, 1, 0, 1 }, 4, "constant", 0.0);
    io->out[0] = mtk_module_forward(kid(m, "conv"), x);
    io->nout = 1;
    return io->out[0] != NULL;
}

static const mtk_module_type downsample_type = { "Downsample2D", downsample_forward, NULL, NULL };

mtk_module *diffusers_downsample(mtk_ctx *ctx, int64_t channels, int64_t out, int64_t padding)
{
    mtk_module *m = mtk_module_new(ctx, &downsample_type, sizeof(sample_config));
    if (!m) return NULL;
    ((sample_config *)mtk_module_config(m))->padding = padding;
    return mtk_module_add(m, "conv", conv2d(ctx, channels, out, 3, 2, padding)) ? mtk_module_finish(m) : NULL;
}

/* (B, C, H, W) [, size] -> nearest 2x -> conv: (B, out, 2H, 2W).  diffusers runs
 * the interpolation in float32 for bfloat16 inputs and casts back. */
static bool upsample_forward(mtk_module *m, mtk_module_io *io)
{
    mtk_ctx *ctx = mtk_module_ctx(m);
    mtk_tensor *x = io->in[0];
    if (!x) return false;
    mtk_dtype dtype = x->dtype;
    if (dtype == MTK_BFLOAT16) x = mtk_to_dtype(ctx, x, MTK_FLOAT32);
    /* in[1], when given, is a tensor of the size to reach (diffusers'
       output_size, for latents that do not halve evenly) */
    mtk_tensor *size = io->nin > 1 ? io->in[1] : NULL;
    double scale[2] = { 2.0, 2.0 };
    mtk_interp_args a = { .size = size ? size->shape + size->ndim - 2 : NULL, .scale_factor = size ? NULL : scale,
                          .mode = "nearest", .align_corners = -1, .recompute_scale_factor = -1, .antialias = false };
    x = mtk_interpolate(ctx, x, &a);
    if (dtype == MTK_BFLOAT16) x = mtk_to_dtype(ctx, x, dtype);
    io->out[0] = mtk_module_forward(kid(m, "conv"), x);
    io->nout = 1;
    return io->out[0] != NULL;
}

static const mtk_module_type upsample_type = { "Upsample2D", upsample_forward, NULL, NULL };

mtk_module *diffusers_upsample(mtk_ctx *ctx, int64_t channels, int64_t out)
{
    mtk_module *m = mtk_module_new(ctx, &upsample_type, 0);
    if (!m) return NULL;
    return mtk_module_add(m, "conv", conv2d(ctx, channels, out, 3, 1, 1)) ? mtk_module_finish(m) : NULL;
}

/* --------------------------------------------------------------- Attention */

typedef struct attention_config {
    int64_t heads, dim_head;
    bool spatial; /* group_norm over a (B, C, H, W) map, residual added */
} attention_config;

/* (B, S, heads * d) -> (B, heads, S, d) */
static mtk_tensor *heads_first(mtk_ctx *ctx, mtk_tensor *x, int64_t heads, int64_t d)
{
    if (!x) return NULL;
    return mtk_transpose(ctx, mtk_view(ctx, x, (int64_t[]){ x->shape[0], -1, heads, d }, 4), 1, 2);
}

/* AttnProcessor2_0: x (B, S, Q) [or (B, C, H, W)], context (B, T, K) ->
 * to_out(sdpa(q, k, v)) [+ residual] */
static bool attention_forward(mtk_module *m, mtk_module_io *io)
{
    mtk_ctx *ctx = mtk_module_ctx(m);
    const attention_config *c = mtk_module_config(m);
    mtk_tensor *x = io->in[0], *residual = x;
    if (!x) return false;
    int64_t b = x->shape[0], ch = 0, hgt = 0, wid = 0;
    if (c->spatial) {
        if (x->ndim != 4) return mtk_error(ctx, MTK_ERR_SHAPE, "Attention: expects (B, C, H, W), got %d dims", (int)x->ndim);
        ch = x->shape[1], hgt = x->shape[2], wid = x->shape[3];
        x = mtk_transpose(ctx, mtk_view(ctx, x, (int64_t[]){ b, ch, hgt * wid }, 3), 1, 2); /* (B, HW, C) */
        x = mtk_transpose(ctx, mtk_module_forward(kid(m, "group_norm"), mtk_transpose(ctx, x, 1, 2)), 1, 2);
    }
    mtk_tensor *context = io->nin > 1 && io->in[1] ? io->in[1] : x;
    mtk_tensor *q = heads_first(ctx, mtk_module_forward(kid(m, "to_q"), x), c->heads, c->dim_head);
    mtk_tensor *k = heads_first(ctx, mtk_module_forward(kid(m, "to_k"), context), c->heads, c->dim_head);
    mtk_tensor *v = heads_first(ctx, mtk_module_forward(kid(m, "to_v"), context), c->heads, c->dim_head);
    mtk_tensor *h = mtk_scaled_dot_product_attention(ctx, q, k, v, NULL, 0.0, false, NAN, false); /* (B, n, S, d) */
    if (!h) return false;
    h = mtk_reshape(ctx, mtk_transpose(ctx, h, 1, 2), (int64_t[]){ b, -1, c->heads * c->dim_head }, 3);
    mtk_module *out = kid(m, "to_out");
    h = mtk_module_forward(blocks_child(out, 1), mtk_module_forward(blocks_child(out, 0), h));
    if (c->spatial) {
        h = mtk_reshape(ctx, mtk_transpose(ctx, h, -1, -2), (int64_t[]){ b, ch, hgt, wid }, 4);
        h = mtk_add(ctx, h, residual);
    }
    io->out[0] = mtk_div_scalar(ctx, h, mtk_value_float(1.0)); /* rescale_output_factor */
    io->nout = 1;
    /* the processor's locals query, key, value and encoder_hidden_states
       (the normed input in self-attention) hold their tensors until it
       returns */
    return io->out[0] != NULL && models_blocks_held_until_here(ctx, q) && models_blocks_held_until_here(ctx, k) &&
           models_blocks_held_until_here(ctx, v) && models_blocks_held_until_here(ctx, context);
}

static const mtk_module_type attention_type = { "Attention", attention_forward, NULL, NULL };

mtk_module *diffusers_attention(mtk_ctx *ctx, int64_t query_dim, int64_t cross_dim, int64_t heads, int64_t dim_head,
                                bool bias, int64_t groups, double eps)
{
    int64_t inner = heads * dim_head, kv_in = cross_dim > 0 ? cross_dim : query_dim;
    mtk_module *m = mtk_module_new(ctx, &attention_type, sizeof(attention_config));
    mtk_module *out = mtk_nn_module_list(ctx);
    if (!m || !out) return NULL;
    *(attention_config *)mtk_module_config(m) = (attention_config){ heads, dim_head, groups > 0 };
    bool ok = (groups <= 0 || mtk_module_add(m, "group_norm", mtk_nn_group_norm(ctx, groups, query_dim, eps, true, true))) &&
              mtk_module_add(m, "to_q", mtk_nn_linear(ctx, query_dim, inner, bias)) &&
              mtk_module_add(m, "to_k", mtk_nn_linear(ctx, kv_in, inner, bias)) &&
              mtk_module_add(m, "to_v", mtk_nn_linear(ctx, kv_in, inner, bias)) &&
              mtk_nn_module_list_append(out, mtk_nn_linear(ctx, inner, query_dim, true)) &&
              mtk_nn_module_list_append(out, mtk_nn_dropout(ctx, 0.0)) && mtk_module_add(m, "to_out", out);
    return ok ? mtk_module_finish(m) : NULL;
}

/* ---------------------------------------------------------- UNetMidBlock2D */

/* resnets[0] -> (attention -> resnet) */
static bool vae_mid_forward(mtk_module *m, mtk_module_io *io)
{
    mtk_module *attentions = kid(m, "attentions"), *resnets = kid(m, "resnets");
    mtk_tensor *h = mtk_module_forward(blocks_child(resnets, 0), io->in[0]);
    for (int32_t i = 0; i < mtk_module_child_count(attentions); i++)
        h = mtk_module_forward(blocks_child(resnets, i + 1), mtk_module_forward(blocks_child(attentions, i), h));
    io->out[0] = h;
    io->nout = 1;
    return h != NULL;
}

static const mtk_module_type vae_mid_type = { "UNetMidBlock2D", vae_mid_forward, NULL, NULL };

mtk_module *diffusers_vae_mid_block(mtk_ctx *ctx, int64_t channels, int64_t groups, double eps)
{
    mtk_module *m = mtk_module_new(ctx, &vae_mid_type, 0);
    mtk_module *attentions = mtk_nn_module_list(ctx), *resnets = mtk_nn_module_list(ctx);
    /* one head of the full width (attention_head_dim = channels) */
    bool ok = m && attentions && resnets &&
              mtk_nn_module_list_append(attentions, diffusers_attention(ctx, channels, 0, 1, channels, true, groups, eps)) &&
              mtk_nn_module_list_append(resnets, diffusers_resnet(ctx, channels, channels, 0, groups, eps, 1.0)) &&
              mtk_nn_module_list_append(resnets, diffusers_resnet(ctx, channels, channels, 0, groups, eps, 1.0)) &&
              mtk_module_add(m, "attentions", attentions) && mtk_module_add(m, "resnets", resnets);
    return ok ? mtk_module_finish(m) : NULL;
}

/* ------------------------------------------------ Timesteps, its embedding */

typedef struct timesteps_config {
    int64_t channels;
    bool flip;
    double shift;
} timesteps_config;

/* get_timestep_embedding: t (B,) -> (B, channels) float32:
 * exp(-ln(10000) * arange(half) / (half - shift)), t[:, None] * freqs,
 * cat(sin, cos) (flipped to cos, sin) */
static bool timesteps_forward(mtk_module *m, mtk_module_io *io)
{
    mtk_ctx *ctx = mtk_module_ctx(m);
    const timesteps_config *c = mtk_module_config(m);
    mtk_tensor *t = io->in[0];
    if (!t) return false;
    if (t->ndim != 1) return mtk_error(ctx, MTK_ERR_SHAPE, "Timesteps: timesteps should be a 1d-array, got %d dims", (int)t->ndim);
    int64_t half = c->channels / 2;
    if (!mtk_ctx_push_device(ctx, t->device)) return false;
    mtk_tensor *e = mtk_arange(ctx, 0, (double)half, 1, MTK_FLOAT32);
    mtk_ctx_pop_device(ctx);
    e = mtk_div_scalar(ctx, mtk_mul_scalar(ctx, e, mtk_value_float(-log(10000.0))), mtk_value_float((double)half - c->shift));
    e = mtk_exp(ctx, e);
    e = mtk_mul(ctx, mtk_unsqueeze(ctx, mtk_to_dtype(ctx, t, MTK_FLOAT32), 1), mtk_unsqueeze(ctx, e, 0)); /* (B, half) */
    mtk_tensor *parts[2] = { mtk_sin(ctx, e), mtk_cos(ctx, e) };
    if (c->flip) {
        mtk_tensor *s = parts[0];
        parts[0] = parts[1], parts[1] = s;
    }
    e = mtk_cat(ctx, parts, 2, -1);
    if (c->channels % 2 == 1) e = mtk_pad(ctx, e, (int64_t[]){ 0, 1, 0, 0 }, 4, "constant", 0.0);
    io->out[0] = e;
    io->nout = 1;
    return e != NULL;
}

static void timesteps_repr(const mtk_module *m, char *buf, size_t cap)
{
    (void)m;
    if (cap) buf[0] = '\0';
}

static const mtk_module_type timesteps_type = { "Timesteps", timesteps_forward, NULL, timesteps_repr };

mtk_module *diffusers_timesteps(mtk_ctx *ctx, int64_t channels, bool flip_sin_to_cos, double shift)
{
    mtk_module *m = mtk_module_new(ctx, &timesteps_type, sizeof(timesteps_config));
    if (!m) return NULL;
    *(timesteps_config *)mtk_module_config(m) = (timesteps_config){ channels, flip_sin_to_cos, shift };
    return mtk_module_finish(m);
}

/* linear_2(act(linear_1(x))) */
static bool timestep_embedding_forward(mtk_module *m, mtk_module_io *io)
{
    mtk_tensor *h = mtk_module_forward(kid(m, "linear_1"), io->in[0]);
    io->out[0] = mtk_module_forward(kid(m, "linear_2"), mtk_module_forward(kid(m, "act"), h));
    io->nout = 1;
    return io->out[0] != NULL;
}

static const mtk_module_type timestep_embedding_type = { "TimestepEmbedding", timestep_embedding_forward, NULL, NULL };

mtk_module *diffusers_timestep_embedding(mtk_ctx *ctx, int64_t in, int64_t dim)
{
    mtk_module *m = mtk_module_new(ctx, &timestep_embedding_type, 0);
    bool ok = m && mtk_module_add(m, "linear_1", mtk_nn_linear(ctx, in, dim, true)) &&
              mtk_module_add(m, "act", mtk_nn_activation(ctx, "SiLU")) &&
              mtk_module_add(m, "linear_2", mtk_nn_linear(ctx, dim, dim, true));
    return ok ? mtk_module_finish(m) : NULL;
}
