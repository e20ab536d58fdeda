/* The UNet's down, mid and up blocks (CrossAttnDownBlock2D, DownBlock2D,
 * UNetMidBlock2DCrossAttn, CrossAttnUpBlock2D, UpBlock2D), as diffusers'
 * unet_2d_blocks builds them for UNet2DConditionModel, and the VAE's
 * DownEncoderBlock2D / UpDecoderBlock2D.
 *
 * Calls: a down block takes (h, temb, context) and returns every state it
 * leaves for the skip connections, the last being its output; an up
 * block takes (h, temb, context, the skips it consumes in the order they
 * were made [, a tensor whose last two sizes its upsampler must reach]). */
#include "models/blocks.h"
#include "models/diffusers_blocks.h"
#include "mtk/ops.h"

#include <string.h>

/* A child by name, NULL (no error) when absent. */
static mtk_module *kid(mtk_module *m, const char *name)
{
    for (int32_t i = 0; m && i < mtk_module_child_count(m); i++) {
        const char *n;
        mtk_module *c = mtk_module_child_at(m, i, &n);
        if (strcmp(n, name) == 0) return c;
    }
    return NULL;
}

static mtk_tensor *call3(mtk_module *m, mtk_tensor *x, mtk_tensor *temb, mtk_tensor *context)
{
    (void)context;
    return diffusers_call2(m, x, temb);
}

/* ------------------------------------------------------------ down blocks */

/* (h, temb, context) -> (states...): resnet [-> attention] per layer, each
 * output kept, then the downsampler's */
static bool down_forward(mtk_module *m, mtk_module_io *io)
{
    mtk_module *resnets = kid(m, "resnets"), *attentions = kid(m, "attentions"), *down = kid(m, "downsamplers");
    mtk_tensor *h = io->in[0], *temb = io->nin > 1 ? io->in[1] : NULL, *context = io->nin > 2 ? io->in[2] : NULL;
    io->nout = 0;
    for (int32_t i = 0; i < mtk_module_child_count(resnets); i++) {
        h = call3(blocks_child(resnets, i), h, temb, context);
        if (attentions) h = diffusers_call2(blocks_child(attentions, i), h, context);
        if (io->nout == MTK_MODULE_MAX_IO) return false;
        io->out[io->nout++] = h;
    }
    if (down) {
        h = mtk_module_forward(blocks_child(down, 0), h);
        if (io->nout == MTK_MODULE_MAX_IO) return false;
        io->out[io->nout++] = h;
    }
    return h != NULL;
}

static const mtk_module_type cross_down_type = { "CrossAttnDownBlock2D", down_forward, NULL, NULL };
static const mtk_module_type down_type = { "DownBlock2D", down_forward, NULL, NULL };
static const mtk_module_type encoder_down_type = { "DownEncoderBlock2D", down_forward, NULL, NULL };

mtk_module *diffusers_down_block(mtk_ctx *ctx, const diffusers_block_spec *s)
{
    const mtk_module_type *type = s->vae ? &encoder_down_type : s->cross ? &cross_down_type : &down_type;
    mtk_module *m = mtk_module_new(ctx, type, 0);
    mtk_module *resnets = mtk_nn_module_list(ctx), *attentions = s->cross ? mtk_nn_module_list(ctx) : NULL;
    if (!m || !resnets || (s->cross && !attentions)) return NULL;
    for (int64_t i = 0; i < s->layers; i++) {
        int64_t in = i == 0 ? s->in : s->out;
        if (!mtk_nn_module_list_append(resnets, diffusers_resnet(ctx, in, s->out, s->temb, s->groups, s->eps, 1.0)))
            return NULL;
        if (s->cross && !mtk_nn_module_list_append(attentions, diffusers_transformer_2d(ctx, s->heads, s->out / s->heads,
                                                                                     s->out, s->transformer_layers,
                                                                                     s->cross_dim, s->groups,
                                                                                     s->linear_projection)))
            return NULL;
    }
    bool ok = (!attentions || mtk_module_add(m, "attentions", attentions)) && mtk_module_add(m, "resnets", resnets);
    if (ok && s->resample) {
        mtk_module *down = mtk_nn_module_list(ctx);
        ok = down && mtk_nn_module_list_append(down, diffusers_downsample(ctx, s->out, s->out, s->downsample_padding)) &&
             mtk_module_add(m, "downsamplers", down);
    }
    return ok ? mtk_module_finish(m) : NULL;
}

/* -------------------------------------------------------------- mid block */

/* (h, temb, context): resnets[0], then (attention, resnet) pairs */
static bool cross_mid_forward(mtk_module *m, mtk_module_io *io)
{
    mtk_module *resnets = kid(m, "resnets"), *attentions = kid(m, "attentions");
    mtk_tensor *temb = io->nin > 1 ? io->in[1] : NULL, *context = io->nin > 2 ? io->in[2] : NULL;
    mtk_tensor *h = call3(blocks_child(resnets, 0), io->in[0], temb, context);
    for (int32_t i = 0; i < mtk_module_child_count(attentions); i++) {
        h = diffusers_call2(blocks_child(attentions, i), h, context);
        h = call3(blocks_child(resnets, i + 1), h, temb, context);
    }
    io->out[0] = h;
    io->nout = 1;
    return h != NULL;
}

static const mtk_module_type cross_mid_type = { "UNetMidBlock2DCrossAttn", cross_mid_forward, NULL, NULL };

mtk_module *diffusers_cross_mid_block(mtk_ctx *ctx, const diffusers_block_spec *s, double output_scale_factor)
{
    mtk_module *m = mtk_module_new(ctx, &cross_mid_type, 0);
    mtk_module *resnets = mtk_nn_module_list(ctx), *attentions = mtk_nn_module_list(ctx);
    bool ok = m && resnets && attentions &&
              mtk_nn_module_list_append(resnets, diffusers_resnet(ctx, s->in, s->in, s->temb, s->groups, s->eps,
                                                                  output_scale_factor)) &&
              mtk_nn_module_list_append(attentions, diffusers_transformer_2d(ctx, s->heads, s->in / s->heads, s->in,
                                                                             s->transformer_layers, s->cross_dim,
                                                                             s->groups, s->linear_projection)) &&
              mtk_nn_module_list_append(resnets, diffusers_resnet(ctx, s->in, s->in, s->temb, s->groups, s->eps,
                                                                  output_scale_factor)) &&
              mtk_module_add(m, "attentions", attentions) && mtk_module_add(m, "resnets", resnets);
    return ok ? mtk_module_finish(m) : NULL;
}

/* -------------------------------------------------------------- up blocks */

/* (h, temb, context, skips... [, size]): per layer cat(h, last skip) on
 * channels, resnet [-> attention]; then the upsampler (to size's H, W
 * when given) */
static bool up_forward(mtk_module *m, mtk_module_io *io)
{
    mtk_ctx *ctx = mtk_module_ctx(m);
    mtk_module *resnets = kid(m, "resnets"), *attentions = kid(m, "attentions"), *up = kid(m, "upsamplers");
    int32_t layers = mtk_module_child_count(resnets);
    mtk_tensor *h = io->in[0], *temb = io->in[1], *context = io->in[2];
    bool vae = strcmp(mtk_module_type_name(m), "UpDecoderBlock2D") == 0;
    int32_t first_skip = 3, nskips = vae ? 0 : layers;
    if (vae) h = io->in[0], temb = NULL, context = NULL;
    if (io->nin < (vae ? 1 : first_skip + nskips))
        return mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "%s: expects %d skip states", mtk_module_type_name(m), (int)nskips);
    for (int32_t i = 0; i < layers; i++) {
        if (!vae) {
            mtk_tensor *pair[2] = { h, io->in[first_skip + nskips - 1 - i] };
            h = mtk_cat(ctx, pair, 2, 1);
        }
        h = call3(blocks_child(resnets, i), h, temb, context);
        if (attentions) h = diffusers_call2(blocks_child(attentions, i), h, context);
    }
    if (up) {
        mtk_tensor *size = !vae && io->nin > first_skip + nskips ? io->in[first_skip + nskips] : NULL;
        h = diffusers_call2(blocks_child(up, 0), h, size);
    }
    io->out[0] = h;
    io->nout = 1;
    return h != NULL;
}

static const mtk_module_type cross_up_type = { "CrossAttnUpBlock2D", up_forward, NULL, NULL };
static const mtk_module_type up_type = { "UpBlock2D", up_forward, NULL, NULL };
static const mtk_module_type decoder_up_type = { "UpDecoderBlock2D", up_forward, NULL, NULL };

mtk_module *diffusers_up_block(mtk_ctx *ctx, const diffusers_block_spec *s)
{
    const mtk_module_type *type = s->vae ? &decoder_up_type : s->cross ? &cross_up_type : &up_type;
    mtk_module *m = mtk_module_new(ctx, type, 0);
    mtk_module *resnets = mtk_nn_module_list(ctx), *attentions = s->cross ? mtk_nn_module_list(ctx) : NULL;
    if (!m || !resnets || (s->cross && !attentions)) return NULL;
    for (int64_t i = 0; i < s->layers; i++) {
        int64_t in;
        if (s->vae) {
            in = i == 0 ? s->in : s->out;
        } else {
            /* the skip is the previous (deeper) block's width on the last layer */
            int64_t skip = i == s->layers - 1 ? s->in : s->out;
            in = (i == 0 ? s->prev_out : s->out) + skip;
        }
        if (!mtk_nn_module_list_append(resnets, diffusers_resnet(ctx, in, s->out, s->temb, s->groups, s->eps, 1.0)))
            return NULL;
        if (s->cross && !mtk_nn_module_list_append(attentions, diffusers_transformer_2d(ctx, s->heads, s->out / s->heads,
                                                                                     s->out, s->transformer_layers,
                                                                                     s->cross_dim, s->groups,
                                                                                     s->linear_projection)))
            return NULL;
    }
    bool ok = (!attentions || mtk_module_add(m, "attentions", attentions)) && mtk_module_add(m, "resnets", resnets);
    if (ok && s->resample) {
        mtk_module *up = mtk_nn_module_list(ctx);
        ok = up && mtk_nn_module_list_append(up, diffusers_upsample(ctx, s->out, s->out)) &&
             mtk_module_add(m, "upsamplers", up);
    }
    return ok ? mtk_module_finish(m) : NULL;
}
