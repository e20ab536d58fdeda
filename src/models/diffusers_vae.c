/* AutoencoderKL, as diffusers builds it from a vae/config.json: encoder
 * (conv_in, down_blocks of DownEncoderBlock2D, mid_block, conv_norm_out,
 * conv_act, conv_out to 2 x latent_channels), decoder (conv_in,
 * up_blocks of UpDecoderBlock2D, mid_block, conv_norm_out, conv_act,
 * conv_out), quant_conv and post_quant_conv (1x1).
 *
 * Methods (diffusers_root): encode: image (B, in_channels, H, W) -> the
 * latent distribution's mean, its mode (B, latent_channels, H/f, W/f);
 * decode: latents (B, latent_channels, h, w) -> image (B, out_channels,
 * h*f, w*f); forward: decode(encode(x).mode()).  f = 2^(blocks - 1).
 *
 * Config fields (diffusers' defaults): in_channels 3, out_channels 3,
 * block_out_channels [64], down_block_types / up_block_types (as many
 * DownEncoderBlock2D / UpDecoderBlock2D), layers_per_block 1,
 * latent_channels 4, norm_num_groups 32, act_fn "silu", use_quant_conv
 * and use_post_quant_conv true, mid_block_add_attention true. */
#include "models/blocks.h"
#include "models/diffusers_blocks.h"
#include "mtk/ops.h"

#include <string.h>

#define VAE_MAX_BLOCKS 8
#define VAE_EPS 1e-6

typedef struct vae_spec {
    int64_t in, out, latent, groups, layers, nblocks, channels[VAE_MAX_BLOCKS];
    bool quant, post_quant;
} vae_spec;

typedef struct vae_config {
    diffusers_root root;
} vae_config;

static mtk_module *kid(mtk_module *m, const char *name)
{
    for (int32_t i = 0; m && i < mtk_module_child_count(m); i++) {
        const char *n;
        mtk_module *c = mtk_module_child_at(m, i, &n);
        if (strcmp(n, name) == 0) return c;
    }
    return NULL;
}

static mtk_tensor *maybe(mtk_module *m, mtk_tensor *x) { return m ? mtk_module_forward(m, x) : x; }

/* ------------------------------------------------------ encoder, decoder */

/* image (B, C, H, W) -> moments (B, 2 x latent, H/f, W/f) */
static bool encoder_forward(mtk_module *m, mtk_module_io *io)
{
    mtk_tensor *h = mtk_module_forward(kid(m, "conv_in"), io->in[0]);
    mtk_module *down = kid(m, "down_blocks");
    for (int32_t i = 0; i < mtk_module_child_count(down); i++) {
        mtk_module_io d = { .in = { h }, .nin = 1 };
        if (!mtk_module_call(blocks_child(down, i), &d)) return false;
        h = d.out[d.nout - 1];
    }
    h = mtk_module_forward(kid(m, "mid_block"), h);
    h = mtk_module_forward(kid(m, "conv_act"), mtk_module_forward(kid(m, "conv_norm_out"), h));
    io->out[0] = mtk_module_forward(kid(m, "conv_out"), h);
    io->nout = 1;
    return io->out[0] != NULL;
}

/* latents (B, latent, h, w) -> image (B, C, h*f, w*f) (diffusers casts
 * to the up blocks' dtype after the middle: one dtype here) */
static bool decoder_forward(mtk_module *m, mtk_module_io *io)
{
    mtk_tensor *h = mtk_module_forward(kid(m, "conv_in"), io->in[0]);
    h = mtk_module_forward(kid(m, "mid_block"), h);
    mtk_module *up = kid(m, "up_blocks");
    for (int32_t i = 0; i < mtk_module_child_count(up); i++) h = mtk_module_forward(blocks_child(up, i), h);
    h = mtk_module_forward(kid(m, "conv_act"), mtk_module_forward(kid(m, "conv_norm_out"), h));
    io->out[0] = mtk_module_forward(kid(m, "conv_out"), h);
    io->nout = 1;
    return io->out[0] != NULL;
}

static const mtk_module_type encoder_type = { "Encoder", encoder_forward, NULL, NULL };
static const mtk_module_type decoder_type = { "Decoder", decoder_forward, NULL, NULL };

static mtk_module *conv(mtk_ctx *ctx, int64_t in, int64_t out, int64_t k)
{
    mtk_conv_options o = mtk_conv_defaults();
    o.padding[0] = o.padding[1] = (k - 1) / 2;
    return mtk_nn_conv(ctx, 2, in, out, (int64_t[]){ k, k }, &o);
}

static diffusers_block_spec vae_block(const vae_spec *s)
{
    return (diffusers_block_spec){ .groups = s->groups, .eps = VAE_EPS, .vae = true };
}

static mtk_module *encoder(mtk_ctx *ctx, const vae_spec *s)
{
    int64_t n = s->nblocks;
    mtk_module *m = mtk_module_new(ctx, &encoder_type, 0), *down = mtk_nn_module_list(ctx);
    bool ok = m && down && mtk_module_add(m, "conv_in", conv(ctx, s->in, s->channels[0], 3)) &&
              mtk_module_add(m, "down_blocks", down);
    for (int64_t i = 0; ok && i < n; i++) {
        diffusers_block_spec b = vae_block(s);
        b.in = i == 0 ? s->channels[0] : s->channels[i - 1], b.out = s->channels[i], b.layers = s->layers;
        b.resample = i < n - 1, b.downsample_padding = 0;
        ok = mtk_nn_module_list_append(down, diffusers_down_block(ctx, &b));
    }
    ok = ok && mtk_module_add(m, "mid_block", diffusers_vae_mid_block(ctx, s->channels[n - 1], s->groups, VAE_EPS)) &&
         mtk_module_add(m, "conv_norm_out", mtk_nn_group_norm(ctx, s->groups, s->channels[n - 1], VAE_EPS, true, true)) &&
         mtk_module_add(m, "conv_act", mtk_nn_activation(ctx, "SiLU")) &&
         mtk_module_add(m, "conv_out", conv(ctx, s->channels[n - 1], 2 * s->latent, 3));
    return ok ? mtk_module_finish(m) : NULL;
}

static mtk_module *decoder(mtk_ctx *ctx, const vae_spec *s)
{
    int64_t n = s->nblocks;
    mtk_module *m = mtk_module_new(ctx, &decoder_type, 0), *up = mtk_nn_module_list(ctx);
    bool ok = m && up && mtk_module_add(m, "conv_in", conv(ctx, s->latent, s->channels[n - 1], 3)) &&
              mtk_module_add(m, "up_blocks", up) &&
              mtk_module_add(m, "mid_block", diffusers_vae_mid_block(ctx, s->channels[n - 1], s->groups, VAE_EPS));
    int64_t prev = s->channels[n - 1];
    for (int64_t i = 0; ok && i < n; i++) {
        diffusers_block_spec b = vae_block(s);
        b.in = prev, b.out = s->channels[n - 1 - i], b.layers = s->layers + 1, b.resample = i < n - 1;
        ok = mtk_nn_module_list_append(up, diffusers_up_block(ctx, &b));
        prev = b.out;
    }
    ok = ok && mtk_module_add(m, "conv_norm_out", mtk_nn_group_norm(ctx, s->groups, s->channels[0], VAE_EPS, true, true)) &&
         mtk_module_add(m, "conv_act", mtk_nn_activation(ctx, "SiLU")) &&
         mtk_module_add(m, "conv_out", conv(ctx, s->channels[0], s->out, 3));
    return ok ? mtk_module_finish(m) : NULL;
}

/* --------------------------------------------------------- AutoencoderKL */

/* encode: moments -> DiagonalGaussianDistribution's mean (its mode) */
static mtk_tensor *encode(mtk_module *m, mtk_tensor *x)
{
    mtk_ctx *ctx = mtk_module_ctx(m);
    mtk_tensor *moments = maybe(kid(m, "quant_conv"), mtk_module_forward(kid(m, "encoder"), x));
    mtk_tensor *parts[2] = { NULL, NULL };
    if (!moments || mtk_chunk(ctx, moments, 2, 1, parts, 2) != 2) return NULL;
    /* the distribution clamps logvar and keeps std and var beside the mean */
    mtk_tensor *logvar = mtk_clamp(ctx, parts[1], mtk_value_float(-30.0), mtk_value_float(20.0));
    mtk_tensor *std = mtk_exp(ctx, mtk_mul_scalar(ctx, logvar, mtk_value_float(0.5)));
    mtk_tensor *var = mtk_exp(ctx, logvar);
    return std && var ? parts[0] : NULL;
}

static mtk_tensor *decode(mtk_module *m, mtk_tensor *z)
{
    return mtk_module_forward(kid(m, "decoder"), maybe(kid(m, "post_quant_conv"), z));
}

static bool vae_forward(mtk_module *m, mtk_module_io *io)
{
    const vae_config *c = mtk_module_config(m);
    const char *method = c->root.method ? c->root.method : "forward";
    if (strcmp(method, "encode") == 0) io->out[0] = encode(m, io->in[0]);
    else if (strcmp(method, "decode") == 0) io->out[0] = decode(m, io->in[0]);
    else io->out[0] = decode(m, encode(m, io->in[0]));
    io->nout = 1;
    return io->out[0] != NULL;
}

static const mtk_module_type vae_type = { "AutoencoderKL", vae_forward, NULL, NULL };

static bool read_spec(model_config *c, vae_spec *s)
{
    memset(s, 0, sizeof *s);
    int32_t n = models_cfg_int_list(c, "block_out_channels", s->channels, VAE_MAX_BLOCKS);
    if (!models_cfg_ok(c)) return false;
    if (n < 0) s->channels[0] = 64, n = 1;
    if (n < 1 || cJSON_GetArraySize(models_cfg_get(c, "block_out_channels")) > VAE_MAX_BLOCKS)
        return models_cfg_fail(c, "block_out_channels", "expected 1 to %d blocks", VAE_MAX_BLOCKS);
    s->nblocks = n;
    s->in = models_cfg_positive(c, "in_channels", 3);
    s->out = models_cfg_positive(c, "out_channels", 3);
    s->latent = models_cfg_positive(c, "latent_channels", 4);
    s->groups = models_cfg_positive(c, "norm_num_groups", 32);
    s->layers = models_cfg_positive(c, "layers_per_block", 1);
    if (models_cfg_ok(c) && s->layers * s->nblocks > 10000) /* resnets, beyond any VAE */
        return models_cfg_fail(c, "layers_per_block", "%lld resnets per block is more than mtk models", (long long)s->layers);
    s->quant = models_cfg_bool(c, "use_quant_conv", true);
    s->post_quant = models_cfg_bool(c, "use_post_quant_conv", true);
    const char *act = models_cfg_string(c, "act_fn", "silu");
    if (!models_cfg_ok(c)) return false;
    if (strcmp(act, "silu") != 0) return models_cfg_fail(c, "act_fn", "unsupported act_fn '%s' (supported: silu)", act);
    if (!models_cfg_bool(c, "mid_block_add_attention", true))
        return models_cfg_fail(c, "mid_block_add_attention", "false is not modelled");
    static const char *const keys[2] = { "down_block_types", "up_block_types" };
    static const char *const types[2] = { "DownEncoderBlock2D", "UpDecoderBlock2D" };
    for (int k = 0; k < 2; k++) {
        const cJSON *list = models_cfg_get(c, keys[k]);
        if (!list) continue;
        if (!cJSON_IsArray(list) || cJSON_GetArraySize(list) != n)
            return models_cfg_fail(c, keys[k], "expected a list of %d block types (one per block_out_channels)", (int)n);
        for (int i = 0; i < n; i++) {
            const cJSON *t = cJSON_GetArrayItem(list, i);
            if (!cJSON_IsString(t) || strcmp(t->valuestring, types[k]) != 0)
                return models_cfg_fail(c, keys[k], "unsupported block type at %d (supported: %s)", i, types[k]);
        }
    }
    for (int i = 0; i < n; i++)
        if (s->channels[i] <= 0 || s->channels[i] % s->groups != 0)
            return models_cfg_fail(c, "block_out_channels", "%lld channels (block %d) do not divide into %lld groups",
                                   (long long)s->channels[i], i, (long long)s->groups);
    return true;
}

mtk_module *models_family_autoencoder_kl_build(model_config *c, const char *architecture)
{
    (void)architecture;
    vae_spec s;
    if (!read_spec(c, &s)) return NULL;
    mtk_ctx *ctx = c->ctx;
    mtk_module *m = mtk_module_new(ctx, &vae_type, sizeof(vae_config));
    if (!m) return NULL;
    bool ok = mtk_module_add(m, "encoder", encoder(ctx, &s)) && mtk_module_add(m, "decoder", decoder(ctx, &s)) &&
              (!s.quant || mtk_module_add(m, "quant_conv", conv(ctx, 2 * s.latent, 2 * s.latent, 1))) &&
              (!s.post_quant || mtk_module_add(m, "post_quant_conv", conv(ctx, s.latent, s.latent, 1)));
    return ok ? mtk_module_finish(m) : NULL;
}

/* --------------------------------------------------------------- calls */

/* text-to-image decodes the final latents once per image (batch B); the
 * image-to-image pipelines encode the init image: both are listed, the
 * pipeline keeps the one it makes. */
static int32_t vae_calls(model_config *c, const diffusers_image *image, diffusers_call *out, int32_t cap)
{
    vae_spec s;
    if (!read_spec(c, &s)) return -1;
    int64_t f = (int64_t)1 << (s.nblocks - 1);
    if (!diffusers_check_image(c, image, f)) return -1;
    int32_t n = 0;
    diffusers_call *call = diffusers_call_add(c, out, cap, &n, "decode", 1);
    diffusers_input_add(c, call, "z", MTK_DTYPE_UNDEFINED, 4, (int64_t[]){ image->batch, s.latent, image->height / f, image->width / f });
    call = diffusers_call_add(c, out, cap, &n, "encode", 0);
    diffusers_input_add(c, call, "x", MTK_DTYPE_UNDEFINED, 4, (int64_t[]){ image->batch, s.in, image->height, image->width });
    return models_cfg_ok(c) ? n : -1;
}

static const char *const vae_methods[] = { "encode", "decode", NULL };

const diffusers_component diffusers_autoencoder_kl_component = { DIFFUSERS_VAE, vae_calls, vae_methods };

/* 2^(len(block_out_channels) - 1), 0 with the error for a bad config. */
int64_t diffusers_vae_scale_factor(model_config *c)
{
    vae_spec s;
    return read_spec(c, &s) ? (int64_t)1 << (s.nblocks - 1) : 0;
}
