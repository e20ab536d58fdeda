/* SD3Transformer2DModel (diffusers), the MMDiT denoiser of Stable
 * Diffusion 3 / 3.5: latents patchified by a Conv2d (PatchEmbed) plus a
 * sin-cos position table cropped to the latent's size, a conditioning
 * vector from the timestep and the pooled text embedding, and
 * JointTransformerBlocks in which the image and text streams have their
 * own weights and attend jointly (SD 3.5: the first dual_attention_layers
 * blocks add a second, image-only attention, attn2; qk_norm "rms_norm"
 * normalizes queries and keys per head).  The last block is
 * context_pre_only: its text stream stops after the attention.
 *
 * Config fields (diffusers' defaults): sample_size 128, patch_size 2,
 * in_channels 16, num_layers 18, attention_head_dim 64,
 * num_attention_heads 18, joint_attention_dim 4096,
 * caption_projection_dim 1152, pooled_projection_dim 2048, out_channels
 * 16, pos_embed_max_size 96 (null: a table of the sample size, not kept
 * in the state dict), dual_attention_layers [], qk_norm null or
 * "rms_norm".
 *
 * Forward, as diffusers' (hidden_states, encoder_hidden_states,
 * pooled_projections, timestep): latents (B, C, H, W), prompt embeddings
 * (B, S, joint_attention_dim), pooled (B, pooled_projection_dim),
 * timesteps (B,) -> the prediction (B, out_channels, H, W). */
#include "models/diffusers.h"
#include "models/diffusers_dit.h"
#include "mtk/ops.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static mtk_module *child(mtk_module *m, int32_t i) { return blocks_child(m, i); }
static mtk_module *named(mtk_module *m, const char *name) { return mtk_module_child(m, name); }

typedef struct sd3_spec {
    int64_t sample, patch, in_channels, out_channels, layers, head_dim, heads, inner;
    int64_t joint_dim, caption_dim, pooled_dim, pos_max; /* pos_max 0: null */
    bool dual[1024];                                     /* dual_attention_layers, by block */
    bool qk_norm;
} sd3_spec;

/* ----------------------------------------------------------- PatchEmbed */

typedef struct patch_config {
    int64_t patch, pos_max, grid; /* grid: the table's side when pos_max is 0 */
} patch_config;

/* latents (B, C, H, W) -> (B, (H/p)(W/p), dim) plus the position table
 * cropped to (H/p, W/p) around its centre */
static bool patch_forward(mtk_module *m, mtk_module_io *io)
{
    mtk_ctx *ctx = mtk_module_ctx(m);
    const patch_config *c = mtk_module_config(m);
    mtk_tensor *x = io->in[0];
    int64_t h = x->shape[2] / c->patch, w = x->shape[3] / c->patch;
    int64_t side = c->pos_max ? c->pos_max : c->grid;
    if (c->pos_max && (h > c->pos_max || w > c->pos_max))
        return mtk_error(ctx, MTK_ERR_SHAPE, "PatchEmbed: %s (%lld) cannot be greater than `pos_embed_max_size`: %lld.",
                         h > c->pos_max ? "Height" : "Width", (long long)(h > c->pos_max ? h : w), (long long)c->pos_max);
    if (!c->pos_max && (h != c->grid || w != c->grid))
        return mtk_error(ctx, MTK_ERR_SHAPE,
                         "PatchEmbed: latents of %lld x %lld patches, but without pos_embed_max_size the position "
                         "table is %lld x %lld (mtk does not recompute it at another size)",
                         (long long)h, (long long)w, (long long)c->grid, (long long)c->grid);
    mtk_tensor *latent = mtk_module_forward(child(m, 0), x);            /* (B, dim, h, w) */
    latent = mtk_transpose(ctx, mtk_flatten(ctx, latent, 2, -1), 1, 2); /* (B, h w, dim) */
    mtk_tensor *table = mtk_module_find_tensor(m, "pos_embed");         /* (1, side^2, dim) */
    if (!latent) return false;
    int64_t top = (side - h) / 2, left = (side - w) / 2;
    mtk_tensor *pos = mtk_reshape(ctx, table, (const int64_t[]){ 1, side, side, -1 }, 4);
    pos = mtk_slice(ctx, mtk_slice(ctx, pos, 1, top, top + h, 1), 2, left, left + w, 1);
    pos = mtk_reshape(ctx, pos, (const int64_t[]){ 1, -1, table->shape[2] }, 3); /* (1, h w, dim) */
    io->out[0] = mtk_to_dtype(ctx, mtk_add(ctx, latent, pos), latent->dtype);
    io->nout = 1;
    return io->out[0] != NULL;
}

static const mtk_module_type patch_type = { "PatchEmbed", patch_forward, NULL, NULL };

static mtk_module *patch_embed(mtk_ctx *ctx, const sd3_spec *s)
{
    mtk_module *m = mtk_module_new(ctx, &patch_type, sizeof(patch_config));
    if (!m) return NULL;
    int64_t grid = s->sample / s->patch, side = s->pos_max ? s->pos_max : grid;
    *(patch_config *)mtk_module_config(m) = (patch_config){ s->patch, s->pos_max, grid };
    mtk_conv_options conv = mtk_conv_defaults();
    conv.stride[0] = conv.stride[1] = s->patch;
    int64_t kernel[2] = { s->patch, s->patch }, table[3] = { 1, side * side, s->inner };
    /* the sin-cos table is float32 (diffusers' .float()); kept in the state
       dict only when it is cropped from a fixed maximum */
    bool ok = mtk_module_add(m, "proj", mtk_nn_conv(ctx, 2, s->in_channels, s->inner, kernel, &conv)) &&
              mtk_module_new_buffer(m, "pos_embed", table, 3, MTK_FLOAT32, s->pos_max > 0);
    return ok ? mtk_module_finish(m) : NULL;
}

/* ------------------------------------------------------------ Attention */

typedef struct attn_config {
    int64_t heads, head_dim;
    bool qk_norm, joint, context_pre_only;
} attn_config;

/* (B, S, H D) -> (B, H, S, D), then the per-head norm if any */
static mtk_tensor *heads_of(mtk_module *m, const char *proj, const char *norm, mtk_tensor *x)
{
    mtk_ctx *ctx = mtk_module_ctx(m);
    const attn_config *c = mtk_module_config(m);
    mtk_tensor *h = models_blocks_split_heads(ctx, mtk_module_forward(named(m, proj), x), c->heads, c->head_dim);
    return norm && c->qk_norm ? mtk_module_forward(named(m, norm), h) : h;
}

/* JointAttnProcessor2_0: (x (B, N, dim)[, context (B, S, dim)]) ->
 * (x (B, N, dim)[, context (B, S, dim)]), one attention over [x, context] */
static bool attn_forward(mtk_module *m, mtk_module_io *io)
{
    mtk_ctx *ctx = mtk_module_ctx(m);
    const attn_config *c = mtk_module_config(m);
    mtk_tensor *x = io->in[0], *context = io->nin > 1 ? io->in[1] : NULL;
    if (!x) return false;
    mtk_tensor *q = heads_of(m, "to_q", "norm_q", x), *k = heads_of(m, "to_k", "norm_k", x);
    mtk_tensor *v = heads_of(m, "to_v", NULL, x);
    if (context) {
        mtk_tensor *qs[2] = { q, heads_of(m, "add_q_proj", "norm_added_q", context) };
        mtk_tensor *ks[2] = { k, heads_of(m, "add_k_proj", "norm_added_k", context) };
        mtk_tensor *vs[2] = { v, heads_of(m, "add_v_proj", NULL, context) };
        q = mtk_cat(ctx, qs, 2, 2), k = mtk_cat(ctx, ks, 2, 2), v = mtk_cat(ctx, vs, 2, 2); /* (B, H, N + S, D) */
    }
    mtk_tensor *h = mtk_scaled_dot_product_attention(ctx, q, k, v, NULL, 0.0, false, 1.0 / sqrt((double)c->head_dim), false);
    h = models_blocks_merge_heads(ctx, h); /* (B, N + S, H D) */
    if (!h) return false;
    int64_t n = x->shape[1];
    mtk_tensor *out = mtk_slice(ctx, h, 1, 0, n, 1);
    mtk_module *to_out = named(m, "to_out");
    io->out[0] = mtk_module_forward(child(to_out, 1), mtk_module_forward(child(to_out, 0), out));
    io->nout = 1;
    if (context) {
        mtk_tensor *ctx_out = mtk_slice(ctx, h, 1, n, h->shape[1], 1);
        io->out[1] = c->context_pre_only ? ctx_out : mtk_module_forward(named(m, "to_add_out"), ctx_out);
        io->nout = 2;
    }
    return io->out[0] && io->out[io->nout - 1];
}

static const mtk_module_type attn_type = { "Attention", attn_forward, NULL, NULL };

static mtk_module *rms(mtk_ctx *ctx, int64_t dim) { return mtk_nn_rms_norm(ctx, &dim, 1, 1e-6, true); }

/* Attention(query_dim=dim, heads, dim_head, out_dim=dim, bias=True,
 * qk_norm, eps=1e-6[, added_kv_proj_dim=dim, context_pre_only]) */
static mtk_module *attention(mtk_ctx *ctx, const sd3_spec *s, bool joint, bool context_pre_only)
{
    mtk_module *m = mtk_module_new(ctx, &attn_type, sizeof(attn_config));
    mtk_module *to_out = mtk_nn_module_list(ctx);
    if (!m || !to_out) return NULL;
    *(attn_config *)mtk_module_config(m) = (attn_config){ s->heads, s->head_dim, s->qk_norm, joint, context_pre_only };
    int64_t d = s->inner;
    bool ok = true;
    if (s->qk_norm) ok = mtk_module_add(m, "norm_q", rms(ctx, s->head_dim)) && mtk_module_add(m, "norm_k", rms(ctx, s->head_dim));
    ok = ok && mtk_module_add(m, "to_q", mtk_nn_linear(ctx, d, d, true)) &&
         mtk_module_add(m, "to_k", mtk_nn_linear(ctx, d, d, true)) && mtk_module_add(m, "to_v", mtk_nn_linear(ctx, d, d, true));
    if (ok && joint)
        ok = mtk_module_add(m, "add_k_proj", mtk_nn_linear(ctx, d, d, true)) &&
             mtk_module_add(m, "add_v_proj", mtk_nn_linear(ctx, d, d, true)) &&
             mtk_module_add(m, "add_q_proj", mtk_nn_linear(ctx, d, d, true));
    ok = ok && mtk_nn_module_list_append(to_out, mtk_nn_linear(ctx, d, d, true)) &&
         mtk_nn_module_list_append(to_out, mtk_nn_dropout(ctx, 0.0)) && mtk_module_add(m, "to_out", to_out);
    if (ok && joint && !context_pre_only) ok = mtk_module_add(m, "to_add_out", mtk_nn_linear(ctx, d, d, true));
    if (ok && joint && s->qk_norm)
        ok = mtk_module_add(m, "norm_added_q", rms(ctx, s->head_dim)) &&
             mtk_module_add(m, "norm_added_k", rms(ctx, s->head_dim));
    return ok ? mtk_module_finish(m) : NULL;
}

/* ------------------------------------------------ JointTransformerBlock */

typedef struct block_config {
    bool dual, context_pre_only;
} block_config;

/* (x (B, N, dim), context (B, S, dim), temb (B, dim)) -> (context or
 * nothing when context_pre_only, x) as diffusers returns them; here
 * out[0] = x, out[1] = context (NULL when pre-only) */
static bool block_forward(mtk_module *m, mtk_module_io *io)
{
    mtk_ctx *ctx = mtk_module_ctx(m);
    const block_config *c = mtk_module_config(m);
    mtk_tensor *x = io->in[0], *context = io->in[1], *temb = io->in[2];
    mtk_module_io n1 = { .in = { x, temb }, .nin = 2 }, n1c = { .in = { context, temb }, .nin = 2 };
    if (!mtk_module_call(named(m, "norm1"), &n1) || !mtk_module_call(named(m, "norm1_context"), &n1c)) return false;
    mtk_module_io a = { .in = { n1.out[0], n1c.out[0] }, .nin = 2 };
    if (!mtk_module_call(named(m, "attn"), &a)) return false;
    mtk_tensor *attn_output = dit_gate(ctx, n1.out[1], a.out[0]), *attn_output2 = NULL;
    x = mtk_add(ctx, x, attn_output);
    if (c->dual) {
        attn_output2 = dit_gate(ctx, n1.out[6], mtk_module_forward(named(m, "attn2"), n1.out[5]));
        x = mtk_add(ctx, x, attn_output2);
    }
    mtk_tensor *h = dit_modulate(ctx, mtk_module_forward(named(m, "norm2"), x), n1.out[3], n1.out[2]);
    mtk_tensor *ff_output = dit_gate(ctx, n1.out[4], mtk_module_forward(named(m, "ff"), h));
    x = mtk_add(ctx, x, ff_output);
    io->out[0] = x;
    io->out[1] = NULL;
    io->nout = 2;
    mtk_tensor *context_attn_output = a.out[1], *hc = n1c.out[0], *context_ff_output = NULL;
    if (!c->context_pre_only) {
        context_attn_output = dit_gate(ctx, n1c.out[1], a.out[1]);
        context = mtk_add(ctx, context, context_attn_output);
        hc = dit_modulate(ctx, mtk_module_forward(named(m, "norm2_context"), context), n1c.out[3], n1c.out[2]);
        context_ff_output = mtk_module_forward(named(m, "ff_context"), hc);
        io->out[1] = mtk_add(ctx, context, dit_gate(ctx, n1c.out[4], context_ff_output));
        if (!io->out[1]) return false;
    }
    if (!x) return false;
    /* the forward's locals hold their tensors until it returns (the caller
       holds the inputs): the norms' outputs (norm_hidden_states2, the gates
       and shifts as views of their linears' outputs), the gated attention
       and feed-forward outputs, the last normed inputs, context_ff_output */
    mtk_tensor *held[] = { io->in[0], io->in[1], n1.out[1], n1c.out[1], c->dual ? n1.out[5] : NULL, attn_output,
                           attn_output2, h, ff_output, context_attn_output, hc, context_ff_output };
    for (size_t i = 0; i < sizeof held / sizeof held[0]; i++)
        if (held[i] && !models_blocks_held_until_here(ctx, held[i])) return false;
    return true;
}

static const mtk_module_type block_type = { "JointTransformerBlock", block_forward, NULL, NULL };

static mtk_module *block(mtk_ctx *ctx, const sd3_spec *s, int64_t i)
{
    bool pre_only = i == s->layers - 1, dual = i < (int64_t)(sizeof s->dual) && s->dual[i];
    mtk_module *m = mtk_module_new(ctx, &block_type, sizeof(block_config));
    if (!m) return NULL;
    *(block_config *)mtk_module_config(m) = (block_config){ dual, pre_only };
    int64_t d = s->inner;
    mtk_module *norm1_context = pre_only ? dit_ada_norm_continuous(ctx, d, d) : dit_ada_norm_zero(ctx, d, DIT_ADA_ZERO);
    bool ok = mtk_module_add(m, "norm1", dit_ada_norm_zero(ctx, d, dual ? DIT_ADA_ZERO_X : DIT_ADA_ZERO)) &&
              mtk_module_add(m, "norm1_context", norm1_context) &&
              mtk_module_add(m, "attn", attention(ctx, s, true, pre_only));
    if (ok && dual) ok = mtk_module_add(m, "attn2", attention(ctx, s, false, false));
    ok = ok && mtk_module_add(m, "norm2", mtk_nn_layer_norm(ctx, &d, 1, 1e-6, false, false)) &&
         mtk_module_add(m, "ff", dit_feed_forward(ctx, d));
    if (ok && !pre_only)
        ok = mtk_module_add(m, "norm2_context", mtk_nn_layer_norm(ctx, &d, 1, 1e-6, false, false)) &&
             mtk_module_add(m, "ff_context", dit_feed_forward(ctx, d));
    return ok ? mtk_module_finish(m) : NULL;
}

/* ---------------------------------------------------------------- model */

typedef struct root_config {
    int64_t patch, out_channels;
} root_config;

enum { M_POS, M_TIME, M_CONTEXT, M_BLOCKS, M_NORM_OUT, M_PROJ_OUT };

static const char *const input_names[] = { "hidden_states", "encoder_hidden_states", "pooled_projections", "timestep" };

static bool model_forward(mtk_module *m, mtk_module_io *io)
{
    mtk_ctx *ctx = mtk_module_ctx(m);
    const root_config *c = mtk_module_config(m);
    if (!dit_check_inputs(m, io, 4, input_names, (const int32_t[]){ 4, 3, 2, 1 })) return false;
    mtk_tensor *latents = io->in[0];
    int64_t batch = latents->shape[0], h = latents->shape[2] / c->patch, w = latents->shape[3] / c->patch;
    mtk_tensor *x = mtk_contiguous(ctx, mtk_module_forward(child(m, M_POS), latents)); /* (B, h w, dim) */
    mtk_module_io t = { .in = { io->in[3], io->in[2] }, .nin = 2 };
    if (!mtk_module_call(child(m, M_TIME), &t)) return false;
    mtk_tensor *temb = t.out[0];                                              /* (B, dim) */
    mtk_tensor *context = mtk_module_forward(child(m, M_CONTEXT), io->in[1]); /* (B, S, caption_dim) */
    mtk_module *blocks = child(m, M_BLOCKS);
    for (int32_t i = 0; i < mtk_module_child_count(blocks); i++) {
        mtk_module_io b = { .in = { x, context, temb }, .nin = 3 };
        if (!mtk_module_call(child(blocks, i), &b)) return false;
        x = b.out[0], context = b.out[1];
    }
    mtk_tensor *y = mtk_module_forward2(child(m, M_NORM_OUT), x, temb);
    y = mtk_module_forward(child(m, M_PROJ_OUT), y); /* (B, h w, p p C) */
    int64_t p = c->patch, oc = c->out_channels;
    y = mtk_reshape(ctx, y, (const int64_t[]){ batch, h, w, p, p, oc }, 6);
    y = mtk_permute(ctx, y, (const int64_t[]){ 0, 5, 1, 3, 2, 4 }, 6); /* nhwpqc -> nchpwq */
    io->out[0] = mtk_reshape(ctx, y, (const int64_t[]){ batch, oc, h * p, w * p }, 4);
    io->nout = 1;
    return io->out[0] != NULL;
}

static const mtk_module_type model_type = { "SD3Transformer2DModel", model_forward, NULL, NULL };

/* --------------------------------------------------------------- config */

static const char *const known_fields[] = { "sample_size", "patch_size", "in_channels", "num_layers",
                                            "attention_head_dim", "num_attention_heads", "joint_attention_dim",
                                            "caption_projection_dim", "pooled_projection_dim", "out_channels",
                                            "pos_embed_max_size", "dual_attention_layers", "qk_norm", NULL };

static bool read_spec(model_config *c, sd3_spec *s)
{
    memset(s, 0, sizeof *s);
    if (!dit_check_fields(c, "SD3Transformer2DModel", known_fields)) return false;
    s->sample = models_cfg_positive(c, "sample_size", 128);
    s->patch = models_cfg_positive(c, "patch_size", 2);
    s->in_channels = models_cfg_positive(c, "in_channels", 16);
    s->layers = models_cfg_int(c, "num_layers", 18);
    s->head_dim = models_cfg_positive(c, "attention_head_dim", 64);
    s->heads = models_cfg_positive(c, "num_attention_heads", 18);
    s->joint_dim = models_cfg_positive(c, "joint_attention_dim", 4096);
    s->caption_dim = models_cfg_positive(c, "caption_projection_dim", 1152);
    s->pooled_dim = models_cfg_positive(c, "pooled_projection_dim", 2048);
    /* absent: diffusers' default; null: in_channels / no maximum */
    const cJSON *raw_out = cJSON_GetObjectItemCaseSensitive(c->root, "out_channels");
    const cJSON *raw_pos = cJSON_GetObjectItemCaseSensitive(c->root, "pos_embed_max_size");
    s->out_channels = !raw_out ? 16 : models_cfg_get(c, "out_channels") ? models_cfg_positive(c, "out_channels", 16)
                                                                        : s->in_channels;
    s->pos_max = !raw_pos ? 96 : models_cfg_get(c, "pos_embed_max_size") ? models_cfg_positive(c, "pos_embed_max_size", 96)
                                                                          : 0;
    const char *qk = models_cfg_string(c, "qk_norm", NULL);
    if (!models_cfg_ok(c) || !models_cfg_check_layers(c, "num_layers", s->layers)) return false;
    if (s->layers > (int64_t)sizeof s->dual)
        return models_cfg_fail(c, "num_layers", "%lld layers is over mtk's limit of %d for this class",
                               (long long)s->layers, (int)sizeof s->dual);
    if (qk && strcmp(qk, "rms_norm") != 0)
        return models_cfg_fail(c, "qk_norm", "qk_norm '%s' is not supported (supported: null, 'rms_norm')", qk);
    s->qk_norm = qk != NULL;
    const cJSON *dual = models_cfg_get(c, "dual_attention_layers");
    if (dual) {
        int64_t idx[1024];
        int32_t n = models_cfg_int_list(c, "dual_attention_layers", idx, 1024);
        if (n < 0 || !models_cfg_ok(c)) return false;
        for (int32_t i = 0; i < n; i++)
            if (idx[i] >= 0 && idx[i] < s->layers) s->dual[idx[i]] = true;
    }
    s->inner = s->heads * s->head_dim;
    if (!s->pos_max && s->sample < s->patch)
        return models_cfg_fail(c, "sample_size", "%lld is smaller than patch_size %lld", (long long)s->sample,
                               (long long)s->patch);
    return models_cfg_ok(c);
}

mtk_module *models_family_sd3_build(model_config *c, const char *architecture)
{
    (void)architecture;
    sd3_spec s;
    if (!read_spec(c, &s)) return NULL;
    mtk_ctx *ctx = c->ctx;
    mtk_module *m = mtk_module_new(ctx, &model_type, sizeof(root_config));
    mtk_module *blocks = mtk_nn_module_list(ctx);
    if (!m || !blocks) return NULL;
    *(root_config *)mtk_module_config(m) = (root_config){ s.patch, s.out_channels };
    for (int64_t i = 0; i < s.layers; i++)
        if (!mtk_nn_module_list_append(blocks, block(ctx, &s, i))) return NULL;
    bool ok = mtk_module_add(m, "pos_embed", patch_embed(ctx, &s)) &&
              mtk_module_add(m, "time_text_embed", dit_time_text_embedding(ctx, s.inner, s.pooled_dim, false)) &&
              mtk_module_add(m, "context_embedder", mtk_nn_linear(ctx, s.joint_dim, s.caption_dim, true)) &&
              mtk_module_add(m, "transformer_blocks", blocks) &&
              mtk_module_add(m, "norm_out", dit_ada_norm_continuous(ctx, s.inner, s.inner)) &&
              mtk_module_add(m, "proj_out", mtk_nn_linear(ctx, s.inner, s.patch * s.patch * s.out_channels, true));
    return ok ? mtk_module_finish(m) : NULL;
}

/* ------------------------------------------------------ pipeline calls */

/* StableDiffusion3Pipeline: each step one call on the latents (2B with
 * guidance: the negative and positive prompts batched), the prompt
 * embeddings of CLIP-L + CLIP-G (77 tokens, padded to T5's width) and T5
 * (256 tokens: max_sequence_length) concatenated, the pooled CLIP
 * embeddings, and the scheduler's float32 timesteps. */
static int32_t sd3_calls(model_config *c, const diffusers_image *image, diffusers_call *out, int32_t cap)
{
    sd3_spec s;
    if (!read_spec(c, &s)) return -1;
    int64_t f = diffusers_scale_factor(image), b = diffusers_denoiser_batch(image);
    if (!diffusers_check_image(c, image, f * s.patch)) return -1;
    int32_t n = 0;
    diffusers_call *call = diffusers_call_add(c, out, cap, &n, "forward", image->steps);
    diffusers_input_add(c, call, "hidden_states", MTK_DTYPE_UNDEFINED, 4,
                        (int64_t[]){ b, s.in_channels, image->height / f, image->width / f });
    diffusers_input_add(c, call, "encoder_hidden_states", MTK_DTYPE_UNDEFINED, 3,
                        (int64_t[]){ b, diffusers_tokens(image, 77 + 256), s.joint_dim });
    diffusers_input_add(c, call, "pooled_projections", MTK_DTYPE_UNDEFINED, 2, (int64_t[]){ b, s.pooled_dim });
    diffusers_input_add(c, call, "timestep", MTK_FLOAT32, 1, (int64_t[]){ b });
    return models_cfg_ok(c) ? n : -1;
}

const diffusers_component diffusers_sd3_component = { DIFFUSERS_DENOISER, sd3_calls, NULL };
