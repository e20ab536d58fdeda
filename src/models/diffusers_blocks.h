/* The building blocks diffusers' UNet and VAE share (diffusers_blocks.c,
 * diffusers_transformer.c), each with diffusers' class name and its
 * state-dict names:
 *   ResnetBlock2D     norm1, conv1, [time_emb_proj], norm2, dropout, conv2,
 *                     nonlinearity, [conv_shortcut]
 *   Downsample2D      conv (3x3, stride 2; padding 0 pads (0, 1, 0, 1) first)
 *   Upsample2D        conv after a nearest 2x upsampling
 *   Attention         [group_norm], to_q, to_k, to_v, to_out (Linear, Dropout)
 *   UNetMidBlock2D    attentions, resnets (the VAE's middle)
 *   Transformer2DModel  norm, proj_in, transformer_blocks, proj_out
 *   BasicTransformerBlock  norm1, attn1, norm2, attn2, norm3, ff
 *   Timesteps / TimestepEmbedding  sinusoidal timestep features and
 *                     linear_1, act, linear_2
 * Builders return NULL with the context's error. */
#ifndef MTK_MODELS_DIFFUSERS_BLOCKS_H
#define MTK_MODELS_DIFFUSERS_BLOCKS_H

#include "models/diffusers.h"

/* ResnetBlock2D(in, out, temb_channels (0: no time embedding), groups,
 * eps, output_scale_factor).  Forward: x (B, in, H, W) [, temb (B, T)]
 * -> (B, out, H, W). */
mtk_module *diffusers_resnet(mtk_ctx *ctx, int64_t in, int64_t out, int64_t temb_channels, int64_t groups, double eps,
                             double output_scale_factor);
/* Downsample2D(channels, out, padding): (B, C, H, W) -> (B, out, H/2, W/2). */
mtk_module *diffusers_downsample(mtk_ctx *ctx, int64_t channels, int64_t out, int64_t padding);
/* Upsample2D(channels, out): (B, C, H, W) -> (B, out, 2H, 2W). */
mtk_module *diffusers_upsample(mtk_ctx *ctx, int64_t channels, int64_t out);

/* diffusers' Attention(query_dim, cross_attention_dim (0: self), heads,
 * dim_head, qkv bias, group_norm groups (0: none; with it the input is a
 * (B, C, H, W) map and the output adds the residual), eps).
 * Forward: x (B, S, query_dim) [, context (B, T, cross)] -> same as x. */
mtk_module *diffusers_attention(mtk_ctx *ctx, int64_t query_dim, int64_t cross_dim, int64_t heads, int64_t dim_head,
                                bool bias, int64_t groups, double eps);

/* UNetMidBlock2D of the VAE: resnet, one-head attention over the map,
 * resnet (no time embedding).  (B, C, H, W) -> (B, C, H, W). */
mtk_module *diffusers_vae_mid_block(mtk_ctx *ctx, int64_t channels, int64_t groups, double eps);

/* Transformer2DModel(heads, head_dim, in_channels, layers, cross_dim,
 * groups, linear projection).  Forward: x (B, C, H, W), context (B, T,
 * cross) -> (B, C, H, W). */
mtk_module *diffusers_transformer_2d(mtk_ctx *ctx, int64_t heads, int64_t head_dim, int64_t in_channels, int64_t layers,
                                     int64_t cross_dim, int64_t groups, bool linear_projection);

/* Timesteps(channels, flip_sin_to_cos, shift): t (B,) -> (B, channels)
 * float32. */
mtk_module *diffusers_timesteps(mtk_ctx *ctx, int64_t channels, bool flip_sin_to_cos, double shift);
/* TimestepEmbedding(in, dim): (B, in) -> (B, dim). */
mtk_module *diffusers_timestep_embedding(mtk_ctx *ctx, int64_t in, int64_t dim);

/* One down, mid or up block of a UNet (or the VAE's encoder / decoder). */
typedef struct diffusers_block_spec {
    int64_t in, out;            /* channels: a down block's input and output; an
                                   up block's `in` is the deeper skip's width   */
    int64_t prev_out;           /* an up block: the width coming from below     */
    int64_t temb;               /* time embedding width (0: none, the VAE)      */
    int64_t groups, layers;     /* GroupNorm groups, resnets per block          */
    int64_t heads, transformer_layers, cross_dim; /* cross-attention blocks     */
    int64_t downsample_padding;
    double eps;
    bool cross;                 /* Transformer2DModel after each resnet         */
    bool resample;              /* a down- or upsampler at the end              */
    bool linear_projection;
    bool vae;                   /* DownEncoderBlock2D / UpDecoderBlock2D        */
} diffusers_block_spec;

/* CrossAttnDownBlock2D / DownBlock2D / DownEncoderBlock2D. */
mtk_module *diffusers_down_block(mtk_ctx *ctx, const diffusers_block_spec *s);
/* CrossAttnUpBlock2D / UpBlock2D / UpDecoderBlock2D. */
mtk_module *diffusers_up_block(mtk_ctx *ctx, const diffusers_block_spec *s);
/* UNetMidBlock2DCrossAttn on s->in channels. */
mtk_module *diffusers_cross_mid_block(mtk_ctx *ctx, const diffusers_block_spec *s, double output_scale_factor);

/* Forwards of a ModuleList member taking (x, y): y may be NULL. */
mtk_tensor *diffusers_call2(mtk_module *m, mtk_tensor *x, mtk_tensor *y);

#endif
