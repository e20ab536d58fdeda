/* UNet2DConditionModel, as diffusers builds it from a unet/config.json:
 * SD 1.x / 2.x and SDXL (addition_embed_type "text_time": pooled text
 * embeddings and the six size/crop time ids added to the time embedding).
 *
 * conv_in, time_proj (Timesteps), time_embedding, [add_time_proj,
 * add_embedding], down_blocks, up_blocks, mid_block, conv_norm_out,
 * conv_act, conv_out.
 *
 * Forward: sample (B, in_channels, h, w), timestep (() or (B,)),
 * encoder_hidden_states (B, T, cross_attention_dim) [, text_embeds (B, D),
 * time_ids (B, 6)] -> (B, out_channels, h, w).
 *
 * Config fields (diffusers' defaults): in_channels 4, out_channels 4,
 * block_out_channels [320, 640, 1280, 1280], down_block_types,
 * up_block_types, mid_block_type "UNetMidBlock2DCrossAttn",
 * layers_per_block 2 (int or list), attention_head_dim 8 (int or list; the
 * number of heads when num_attention_heads is null, as diffusers reads
 * it), num_attention_heads, transformer_layers_per_block 1 (int or list),
 * cross_attention_dim 1280, norm_num_groups 32, norm_eps 1e-5,
 * flip_sin_to_cos true, freq_shift 0, use_linear_projection false,
 * downsample_padding 1, mid_block_scale_factor 1, time_embedding_dim,
 * addition_embed_type, addition_time_embed_dim,
 * projection_class_embeddings_input_dim.  Fields that change the network
 * in ways mtk does not model (class embeddings, encoder_hid_proj, a
 * conditioning projection of the time embedding, dual or cross-only
 * attention, "scale_shift" resnets, other activations) are refused,
 * naming the field. */
#include "models/blocks.h"
#include "models/diffusers_blocks.h"
#include "mtk/ops.h"

#include <stdio.h>
#include <string.h>

#define UNET_MAX_BLOCKS 8

typedef struct unet_spec {
    int64_t in, out, nblocks, channels[UNET_MAX_BLOCKS], layers[UNET_MAX_BLOCKS], heads[UNET_MAX_BLOCKS];
    int64_t transformer_layers[UNET_MAX_BLOCKS];
    bool down_cross[UNET_MAX_BLOCKS], up_cross[UNET_MAX_BLOCKS], mid;
    int64_t cross_dim, groups, time_dim, downsample_padding, conv_in_kernel, conv_out_kernel;
    double eps, freq_shift, mid_scale;
    bool flip, linear;
    bool text_time;               /* SDXL's added conditions */
    int64_t add_time_dim, add_in; /* addition_time_embed_dim, projection_class_embeddings_input_dim */
} unet_spec;

typedef struct unet_config {
    diffusers_root root;
    bool text_time;
    int64_t nblocks;
} unet_config;

static mtk_module *kid(mtk_module *m, const char *name) { return mtk_module_child(m, name); }

/* ---------------------------------------------------------------- forward */

/* timestep () or (B,) -> (B,) */
static mtk_tensor *timesteps_for(mtk_ctx *ctx, mtk_tensor *t, int64_t batch)
{
    if (!t) return NULL;
    if (t->ndim == 0) t = mtk_view(ctx, t, (int64_t[]){ 1 }, 1);
    return mtk_expand(ctx, t, &batch, 1);
}

/* the time embedding (B, time_dim), SDXL's added conditions included;
 * held[0..2) get what the forward's frame keeps to its end: `t_emb` and
 * SDXL's `aug_emb` (NULL when none) */
static mtk_tensor *embedding(mtk_module *m, mtk_module_io *io, const unet_config *c, mtk_tensor *sample,
                             mtk_tensor **held)
{
    mtk_ctx *ctx = mtk_module_ctx(m);
    int64_t b = sample->shape[0];
    mtk_tensor *t = mtk_module_forward(kid(m, "time_proj"), timesteps_for(ctx, io->in[1], b)); /* (B, C0) float32 */
    held[0] = mtk_to_dtype(ctx, t, sample->dtype);
    held[1] = NULL;
    mtk_tensor *emb = mtk_module_forward(kid(m, "time_embedding"), held[0]);
    if (!c->text_time || !emb) return emb;
    if (io->nin < 5 || !io->in[3] || !io->in[4]) {
        mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT,
                  "UNet2DConditionModel has the config `addition_embed_type` set to 'text_time' which requires the "
                  "keyword arguments `text_embeds` and `time_ids` to be passed in `added_cond_kwargs`");
        return NULL;
    }
    mtk_tensor *text = io->in[3], *ids = io->in[4];
    mtk_tensor *time = mtk_module_forward(kid(m, "add_time_proj"), mtk_flatten(ctx, ids, 0, -1)); /* (6B, D) */
    if (!time) return NULL;
    time = mtk_reshape(ctx, time, (int64_t[]){ text->shape[0], -1 }, 2);
    mtk_tensor *parts[2] = { text, time };
    mtk_tensor *add = mtk_to_dtype(ctx, mtk_cat(ctx, parts, 2, -1), emb->dtype);
    held[1] = mtk_module_forward(kid(m, "add_embedding"), add);
    /* get_aug_embed's `time_embeds` and `add_embeds` live until it returns */
    if (!held[1] || !models_blocks_held_until_here(ctx, time) || !models_blocks_held_until_here(ctx, add)) return NULL;
    return mtk_add(ctx, emb, held[1]);
}

static bool unet_forward(mtk_module *m, mtk_module_io *io)
{
    mtk_ctx *ctx = mtk_module_ctx(m);
    const unet_config *c = mtk_module_config(m);
    if (io->nin < 3)
        return mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT,
                         "UNet2DConditionModel: expects sample, timestep, encoder_hidden_states%s, got %d inputs",
                         c->text_time ? ", text_embeds, time_ids" : "", (int)io->nin);
    mtk_tensor *sample = io->in[0], *context = io->in[2];
    if (!sample || !context) return false;
    if (sample->ndim != 4)
        return mtk_error(ctx, MTK_ERR_SHAPE, "UNet2DConditionModel: sample must be (B, C, H, W), got %d dims", (int)sample->ndim);
    /* diffusers passes upsample sizes when the latents do not halve
       evenly down the blocks */
    int64_t factor = (int64_t)1 << (c->nblocks - 1);
    bool sizes = sample->shape[2] % factor != 0 || sample->shape[3] % factor != 0;
    mtk_tensor *held[2];
    mtk_tensor *temb = embedding(m, io, c, sample, held);
    mtk_tensor *h = mtk_module_forward(kid(m, "conv_in"), sample);
    if (!temb || !h) return false;
    mtk_tensor *skips[64];
    int32_t nskips = 0;
    skips[nskips++] = h;
    mtk_module *down = kid(m, "down_blocks"), *up = kid(m, "up_blocks");
    for (int32_t i = 0; i < mtk_module_child_count(down); i++) {
        mtk_module_io d = { .in = { h, temb, context }, .nin = 3 };
        if (!mtk_module_call(blocks_child(down, i), &d)) return false;
        for (int32_t k = 0; k < d.nout && nskips < 64; k++) skips[nskips++] = d.out[k];
        h = d.out[d.nout - 1];
    }
    for (int32_t i = 0; i < mtk_module_child_count(m); i++) {
        const char *name;
        mtk_module *ch = mtk_module_child_at(m, i, &name);
        if (strcmp(name, "mid_block") == 0) {
            mtk_module_io d = { .in = { h, temb, context }, .nin = 3 };
            if (!mtk_module_call(ch, &d)) return false;
            h = d.out[0];
        }
    }
    mtk_module_io last = { .nin = 0 }; /* the last up block's call: its `res_samples` outlive it */
    for (int32_t i = 0; i < mtk_module_child_count(up); i++) {
        mtk_module *block = blocks_child(up, i);
        int32_t n = mtk_module_child_count(kid(block, "resnets"));
        if (n > nskips || 3 + n + 1 > MTK_MODULE_MAX_IO)
            return mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "UNet2DConditionModel: up block %d needs %d skips", (int)i, (int)n);
        mtk_module_io d = { .in = { h, temb, context }, .nin = 3 };
        for (int32_t k = 0; k < n; k++) d.in[d.nin++] = skips[nskips - n + k];
        nskips -= n;
        if (sizes && i + 1 < mtk_module_child_count(up) && nskips > 0) d.in[d.nin++] = skips[nskips - 1];
        if (!mtk_module_call(block, &d)) return false;
        h = d.out[0];
        last = d;
    }
    h = mtk_module_forward(kid(m, "conv_act"), mtk_module_forward(kid(m, "conv_norm_out"), h));
    io->out[0] = mtk_module_forward(kid(m, "conv_out"), h);
    io->nout = 1;
    if (!io->out[0] || !models_blocks_held_until_here(ctx, held[0]) || !models_blocks_held_until_here(ctx, held[1]))
        return false;
    for (int32_t k = 3; k < last.nin; k++)
        if (!models_blocks_held_until_here(ctx, last.in[k])) return false;
    return true;
}

static const mtk_module_type unet_type = { "UNet2DConditionModel", unet_forward, NULL, NULL };

/* ----------------------------------------------------------------- config */

/* An int or a list of n ints into out[0..n); `dflt` when absent. */
static bool int_or_list(model_config *c, const char *key, int64_t dflt, int64_t n, int64_t *out)
{
    const cJSON *item = models_cfg_get(c, key);
    if (item && cJSON_IsArray(item)) {
        int32_t got = models_cfg_int_list(c, key, out, UNET_MAX_BLOCKS);
        if (!models_cfg_ok(c)) return false;
        if (got != n || cJSON_GetArraySize(item) != n)
            return models_cfg_fail(c, key, "expected %lld entries (one per block), got %d", (long long)n,
                                   cJSON_GetArraySize(item));
    } else {
        int64_t v = models_cfg_int(c, key, dflt);
        for (int64_t i = 0; i < n; i++) out[i] = v;
    }
    for (int64_t i = 0; i < n; i++)
        if (out[i] <= 0) return models_cfg_fail(c, key, "entries must be positive, got %lld", (long long)out[i]);
    return models_cfg_ok(c);
}

/* A list of block type names; true/false per entry for "CrossAttn..." */
static bool block_types(model_config *c, const char *key, int64_t n, const char *cross, const char *plain, bool *out)
{
    const cJSON *item = models_cfg_get(c, key);
    if (!item && n == 4) { /* diffusers' defaults: cross-attention but in the deepest block */
        bool down = strcmp(cross, "CrossAttnDownBlock2D") == 0;
        for (int64_t i = 0; i < 4; i++) out[i] = down ? i < 3 : i > 0;
        return true;
    }
    if (!item) return models_cfg_fail(c, key, "missing required field '%s' (diffusers' default has 4 blocks, the config %lld)",
                                      key, (long long)n);
    if (!cJSON_IsArray(item) || cJSON_GetArraySize(item) != n)
        return models_cfg_fail(c, key, "expected a list of %lld block types (one per block_out_channels)", (long long)n);
    for (int64_t i = 0; i < n; i++) {
        const cJSON *t = cJSON_GetArrayItem(item, (int)i);
        if (!cJSON_IsString(t)) return models_cfg_fail(c, key, "entry %lld is not a string", (long long)i);
        if (strcmp(t->valuestring, cross) == 0) out[i] = true;
        else if (strcmp(t->valuestring, plain) == 0) out[i] = false;
        else return models_cfg_fail(c, key, "unsupported block type '%s' (supported: %s, %s)", t->valuestring, cross, plain);
    }
    return true;
}

/* A field mtk does not model must be absent, null or its default. */
static bool refuse(model_config *c, const char *key, const char *allowed)
{
    const cJSON *item = models_cfg_get(c, key);
    if (!item || cJSON_IsFalse(item)) return true;
    if (allowed && cJSON_IsString(item) && strcmp(item->valuestring, allowed) == 0) return true;
    return models_cfg_fail(c, key, "not modelled by mtk (UNet2DConditionModel supports SD 1.x/2.x and SDXL's fields)");
}

static bool read_spec(model_config *c, unet_spec *s)
{
    memset(s, 0, sizeof *s);
    const cJSON *channels = models_cfg_get(c, "block_out_channels");
    if (channels) {
        int32_t n = models_cfg_int_list(c, "block_out_channels", s->channels, UNET_MAX_BLOCKS);
        if (!models_cfg_ok(c)) return false;
        if (n < 1 || cJSON_GetArraySize(channels) > UNET_MAX_BLOCKS)
            return models_cfg_fail(c, "block_out_channels", "expected 1 to %d blocks", UNET_MAX_BLOCKS);
        s->nblocks = n;
    } else {
        int64_t dflt[4] = { 320, 640, 1280, 1280 };
        memcpy(s->channels, dflt, sizeof dflt);
        s->nblocks = 4;
    }
    int64_t n = s->nblocks;
    s->in = models_cfg_positive(c, "in_channels", 4);
    s->out = models_cfg_positive(c, "out_channels", 4);
    s->cross_dim = models_cfg_positive(c, "cross_attention_dim", 1280);
    s->groups = models_cfg_positive(c, "norm_num_groups", 32);
    s->eps = models_blocks_eps(c, "norm_eps", 1e-5);
    s->flip = models_cfg_bool(c, "flip_sin_to_cos", true);
    s->freq_shift = models_cfg_float(c, "freq_shift", 0);
    s->linear = models_cfg_bool(c, "use_linear_projection", false);
    s->downsample_padding = models_cfg_int(c, "downsample_padding", 1);
    s->mid_scale = models_cfg_float(c, "mid_block_scale_factor", 1.0);
    s->conv_in_kernel = models_cfg_positive(c, "conv_in_kernel", 3);
    s->conv_out_kernel = models_cfg_positive(c, "conv_out_kernel", 3);
    s->time_dim = models_cfg_has(c, "time_embedding_dim") ? models_cfg_positive(c, "time_embedding_dim", 0) : 0;
    const char *act = models_cfg_string(c, "act_fn", "silu");
    if (models_cfg_ok(c) && strcmp(act, "silu") != 0 && strcmp(act, "swish") != 0)
        return models_cfg_fail(c, "act_fn", "unsupported act_fn '%s' (supported: silu)", act);
    const char *mid = models_cfg_string(c, "mid_block_type", "UNetMidBlock2DCrossAttn");
    if (!models_cfg_ok(c)) return false;
    if (models_cfg_get(c, "mid_block_type") && strcmp(mid, "UNetMidBlock2DCrossAttn") != 0)
        return models_cfg_fail(c, "mid_block_type", "unsupported mid_block_type '%s' (supported: UNetMidBlock2DCrossAttn, null)", mid);
    const cJSON *raw_mid = cJSON_GetObjectItemCaseSensitive(c->root, "mid_block_type");
    s->mid = !(raw_mid && cJSON_IsNull(raw_mid)); /* null: no middle block */
    if (!refuse(c, "class_embed_type", NULL) || !refuse(c, "num_class_embeds", NULL) ||
        !refuse(c, "encoder_hid_dim", NULL) || !refuse(c, "encoder_hid_dim_type", NULL) ||
        !refuse(c, "time_cond_proj_dim", NULL) || !refuse(c, "dual_cross_attention", NULL) ||
        !refuse(c, "only_cross_attention", NULL) || !refuse(c, "resnet_time_scale_shift", "default") ||
        !refuse(c, "time_embedding_type", "positional") || !refuse(c, "timestep_post_act", NULL) ||
        !refuse(c, "time_embedding_act_fn", NULL) || !refuse(c, "class_embeddings_concat", NULL) ||
        !refuse(c, "resnet_skip_time_act", NULL) || !refuse(c, "mid_block_only_cross_attention", NULL) ||
        !refuse(c, "cross_attention_norm", NULL) || !refuse(c, "attention_type", "default"))
        return false;
    if (models_cfg_has(c, "cross_attention_dim") && cJSON_IsArray(models_cfg_get(c, "cross_attention_dim")))
        return models_cfg_fail(c, "cross_attention_dim", "a list per block is not modelled");
    const char *add = models_cfg_string(c, "addition_embed_type", NULL);
    if (add && strcmp(add, "text_time") != 0)
        return models_cfg_fail(c, "addition_embed_type", "unsupported addition_embed_type '%s' (supported: text_time, null)", add);
    s->text_time = add != NULL;
    if (s->text_time) {
        s->add_time_dim = models_cfg_positive_required(c, "addition_time_embed_dim");
        s->add_in = models_cfg_positive_required(c, "projection_class_embeddings_input_dim");
    }
    if (!block_types(c, "down_block_types", n, "CrossAttnDownBlock2D", "DownBlock2D", s->down_cross) ||
        !block_types(c, "up_block_types", n, "CrossAttnUpBlock2D", "UpBlock2D", s->up_cross) ||
        !int_or_list(c, "layers_per_block", 2, n, s->layers) ||
        !int_or_list(c, "transformer_layers_per_block", 1, n, s->transformer_layers))
        return false;
    /* diffusers' legacy naming: attention_head_dim is the number of heads
       when num_attention_heads is not given */
    const char *heads_key = models_cfg_has(c, "num_attention_heads") ? "num_attention_heads" : "attention_head_dim";
    if (!int_or_list(c, heads_key, 8, n, s->heads)) return false;
    for (int64_t i = 0; i < n; i++)
        if ((s->down_cross[i] || s->up_cross[n - 1 - i] || i == n - 1) && s->channels[i] % s->heads[i] != 0)
            return models_cfg_fail(c, heads_key, "block %lld: %lld channels do not split into %lld heads", (long long)i,
                                   (long long)s->channels[i], (long long)s->heads[i]);
    for (int64_t i = 0; i < n; i++)
        if (s->channels[i] % s->groups != 0)
            return models_cfg_fail(c, "norm_num_groups", "%lld channels (block %lld) do not divide into %lld groups",
                                   (long long)s->channels[i], (long long)i, (long long)s->groups);
    if (s->text_time && s->add_in <= 6 * s->add_time_dim)
        return models_cfg_fail(c, "projection_class_embeddings_input_dim",
                               "%lld leaves no room for the pooled text embeddings next to 6 x addition_time_embed_dim = %lld",
                               (long long)s->add_in, (long long)(6 * s->add_time_dim));
    /* an up block takes (h, temb, context, its layers + 1 skips, a size) */
    int64_t blocks = 0;
    for (int64_t i = 0; i < n; i++) {
        if (s->layers[i] + 1 + 4 > MTK_MODULE_MAX_IO)
            return models_cfg_fail(c, "layers_per_block", "at most %d layers per block, got %lld", MTK_MODULE_MAX_IO - 5,
                                   (long long)s->layers[i]);
        blocks += s->transformer_layers[i] * (2 * s->layers[i] + 2);
    }
    if (blocks > MODEL_MAX_LAYERS)
        return models_cfg_fail(c, "transformer_layers_per_block", "%lld transformer blocks in all, more than mtk's limit %d",
                               (long long)blocks, MODEL_MAX_LAYERS);
    return models_cfg_ok(c);
}

/* ------------------------------------------------------------------ build */

/* Marks m's containers, m's own included, frameless: diffusers' UNet loops
 * rebind their variables at every block (`sample`, the skip tuple
 * `res_samples`, `hidden_states`), so a list's first input is kept no
 * longer than the frame that made it keeps it. */
static void frameless_containers(mtk_module *m)
{
    const mtk_module_type *type = mtk_module_type_of(m);
    if (type && !type->forward) mtk_module_set_frameless(m, true);
    for (int32_t i = 0; i < mtk_module_child_count(m); i++) frameless_containers(mtk_module_child_at(m, i, NULL));
}

static mtk_module *conv(mtk_ctx *ctx, int64_t in, int64_t out, int64_t k)
{
    mtk_conv_options o = mtk_conv_defaults();
    o.padding[0] = o.padding[1] = (k - 1) / 2;
    return mtk_nn_conv(ctx, 2, in, out, (int64_t[]){ k, k }, &o);
}

static diffusers_block_spec block_spec(const unet_spec *s, int64_t temb)
{
    return (diffusers_block_spec){ .temb = temb, .groups = s->groups, .eps = s->eps, .cross_dim = s->cross_dim,
                                   .downsample_padding = s->downsample_padding, .linear_projection = s->linear };
}

mtk_module *models_family_unet2d_condition_build(model_config *c, const char *architecture)
{
    (void)architecture;
    unet_spec s;
    if (!read_spec(c, &s)) return NULL;
    mtk_ctx *ctx = c->ctx;
    int64_t n = s.nblocks, c0 = s.channels[0], temb = s.time_dim ? s.time_dim : 4 * c0;
    mtk_module *m = mtk_module_new(ctx, &unet_type, sizeof(unet_config));
    mtk_module *down = mtk_nn_module_list(ctx), *up = mtk_nn_module_list(ctx);
    if (!m || !down || !up) return NULL;
    *(unet_config *)mtk_module_config(m) = (unet_config){ { NULL }, s.text_time, n };
    bool ok = mtk_module_add(m, "conv_in", conv(ctx, s.in, c0, s.conv_in_kernel)) &&
              mtk_module_add(m, "time_proj", diffusers_timesteps(ctx, c0, s.flip, s.freq_shift)) &&
              mtk_module_add(m, "time_embedding", diffusers_timestep_embedding(ctx, c0, temb));
    if (ok && s.text_time)
        ok = mtk_module_add(m, "add_time_proj", diffusers_timesteps(ctx, s.add_time_dim, s.flip, s.freq_shift)) &&
             mtk_module_add(m, "add_embedding", diffusers_timestep_embedding(ctx, s.add_in, temb));
    ok = ok && mtk_module_add(m, "down_blocks", down) && mtk_module_add(m, "up_blocks", up);
    for (int64_t i = 0; ok && i < n; i++) {
        diffusers_block_spec b = block_spec(&s, temb);
        b.in = i == 0 ? c0 : s.channels[i - 1], b.out = s.channels[i], b.layers = s.layers[i];
        b.heads = s.heads[i], b.transformer_layers = s.transformer_layers[i];
        b.cross = s.down_cross[i], b.resample = i < n - 1;
        ok = mtk_nn_module_list_append(down, diffusers_down_block(ctx, &b));
    }
    if (ok && s.mid) {
        diffusers_block_spec b = block_spec(&s, temb);
        b.in = s.channels[n - 1], b.heads = s.heads[n - 1], b.transformer_layers = s.transformer_layers[n - 1];
        ok = mtk_module_add(m, "mid_block", diffusers_cross_mid_block(ctx, &b, s.mid_scale));
    }
    int64_t prev = s.channels[n - 1];
    for (int64_t i = 0; ok && i < n; i++) {
        int64_t r = n - 1 - i; /* the down block this one mirrors */
        diffusers_block_spec b = block_spec(&s, temb);
        b.prev_out = prev, b.out = s.channels[r], b.in = s.channels[r > 0 ? r - 1 : 0];
        b.layers = s.layers[r] + 1, b.heads = s.heads[r], b.transformer_layers = s.transformer_layers[r];
        b.cross = s.up_cross[i], b.resample = i < n - 1;
        ok = mtk_nn_module_list_append(up, diffusers_up_block(ctx, &b));
        prev = s.channels[r];
    }
    ok = ok && mtk_module_add(m, "conv_norm_out", mtk_nn_group_norm(ctx, s.groups, c0, s.eps, true, true)) &&
         mtk_module_add(m, "conv_act", mtk_nn_activation(ctx, "SiLU")) &&
         mtk_module_add(m, "conv_out", conv(ctx, c0, s.out, s.conv_out_kernel));
    if (ok) frameless_containers(m);
    return ok ? mtk_module_finish(m) : NULL;
}

/* ------------------------------------------------------------------ calls */

/* The denoising step: latents (2B with guidance, in_channels, H/f, W/f),
 * the step's timestep (a 0-d tensor, as the schedulers give it), the
 * prompt embeddings (2B, tokens, cross_attention_dim); SDXL adds the
 * pooled embeddings of its second text encoder (2B, D) and the time ids
 * (2B, 6): original size, crop top-left, target size. */
static int32_t unet_calls(model_config *c, const diffusers_image *image, diffusers_call *out, int32_t cap)
{
    unet_spec s;
    if (!read_spec(c, &s)) return -1;
    int64_t f = diffusers_scale_factor(image), b = diffusers_denoiser_batch(image);
    if (!diffusers_check_image(c, image, f)) return -1;
    int32_t n = 0;
    diffusers_call *call = diffusers_call_add(c, out, cap, &n, "forward", image->steps);
    diffusers_input_add(c, call, "sample", MTK_DTYPE_UNDEFINED, 4, (int64_t[]){ b, s.in, image->height / f, image->width / f });
    diffusers_input_add(c, call, "timestep", MTK_FLOAT32, 0, NULL);
    diffusers_input_add(c, call, "encoder_hidden_states", MTK_DTYPE_UNDEFINED, 3,
                        (int64_t[]){ b, diffusers_tokens(image, 77), s.cross_dim });
    if (s.text_time) {
        diffusers_input_add(c, call, "text_embeds", MTK_DTYPE_UNDEFINED, 2, (int64_t[]){ b, s.add_in - 6 * s.add_time_dim });
        diffusers_input_add(c, call, "time_ids", MTK_DTYPE_UNDEFINED, 2, (int64_t[]){ b, 6 });
    }
    return models_cfg_ok(c) ? n : -1;
}

const diffusers_component diffusers_unet2d_condition_component = { DIFFUSERS_DENOISER, unet_calls, NULL };
