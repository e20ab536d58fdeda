/* diffusers' Transformer2DModel as the UNet's cross-attention blocks use
 * it (continuous input): GroupNorm, proj_in (1x1 conv, or a Linear with
 * use_linear_projection), BasicTransformerBlocks (self-attention,
 * cross-attention, GEGLU feed-forward, each after a LayerNorm), proj_out,
 * plus the residual. */
#include "models/blocks.h"
#include "models/diffusers_blocks.h"
#include "mtk/ops.h"

static mtk_module *kid(mtk_module *m, const char *name) { return mtk_module_child(m, name); }

/* ------------------------------------------------------------------ GEGLU */

/* proj(x).chunk(2, -1): h * gelu(gate): (B, S, dim) -> (B, S, inner) */
static bool geglu_forward(mtk_module *m, mtk_module_io *io)
{
    mtk_ctx *ctx = mtk_module_ctx(m);
    mtk_tensor *h = mtk_module_forward(kid(m, "proj"), io->in[0]);
    mtk_tensor *parts[2] = { NULL, NULL };
    if (!h || mtk_chunk(ctx, h, 2, -1, parts, 2) != 2) return false;
    io->out[0] = mtk_mul(ctx, parts[0], mtk_gelu(ctx, parts[1], "none"));
    io->nout = 1;
    return io->out[0] != NULL;
}

static const mtk_module_type geglu_type = { "GEGLU", geglu_forward, NULL, NULL };

/* net: GEGLU, Dropout, Linear(inner, dim): (B, S, dim) -> (B, S, dim) */
static bool feed_forward(mtk_module *m, mtk_module_io *io)
{
    mtk_module *net = kid(m, "net");
    mtk_tensor *h = io->in[0];
    for (int32_t i = 0; i < mtk_module_child_count(net); i++) h = mtk_module_forward(blocks_child(net, i), h);
    io->out[0] = h;
    io->nout = 1;
    return h != NULL;
}

static const mtk_module_type feed_forward_type = { "FeedForward", feed_forward, NULL, NULL };

static mtk_module *feed_forward_new(mtk_ctx *ctx, int64_t dim)
{
    int64_t inner = 4 * dim;
    mtk_module *geglu = mtk_module_new(ctx, &geglu_type, 0);
    mtk_module *net = mtk_nn_module_list(ctx);
    mtk_module *m = mtk_module_new(ctx, &feed_forward_type, 0);
    bool ok = geglu && net && m && mtk_module_add(geglu, "proj", mtk_nn_linear(ctx, dim, 2 * inner, true)) &&
              mtk_nn_module_list_append(net, mtk_module_finish(geglu)) &&
              mtk_nn_module_list_append(net, mtk_nn_dropout(ctx, 0.0)) &&
              mtk_nn_module_list_append(net, mtk_nn_linear(ctx, inner, dim, true)) && mtk_module_add(m, "net", net);
    return ok ? mtk_module_finish(m) : NULL;
}

/* ------------------------------------------------- BasicTransformerBlock */

/* x (B, S, dim), context (B, T, cross):
 * x += attn1(norm1(x)); x += attn2(norm2(x), context); x += ff(norm3(x)).
 * diffusers binds each norm's output to `norm_hidden_states` and each
 * attention's to `attn_output`: one lives until the next norm (or
 * attention) rebinds it, the last ones until the block returns. */
static bool basic_block_forward(mtk_module *m, mtk_module_io *io)
{
    mtk_ctx *ctx = mtk_module_ctx(m);
    mtk_tensor *x = io->in[0], *context = io->nin > 1 ? io->in[1] : NULL;
    mtk_tensor *n1 = mtk_module_forward(kid(m, "norm1"), x);
    mtk_tensor *a1 = mtk_module_forward(kid(m, "attn1"), n1);
    x = mtk_add(ctx, a1, x);
    mtk_tensor *n2 = mtk_module_forward(kid(m, "norm2"), x);
    if (!n2 || !models_blocks_held_until_here(ctx, n1)) return false;
    mtk_tensor *a2 = diffusers_call2(kid(m, "attn2"), n2, context);
    if (!a2 || !models_blocks_held_until_here(ctx, a1)) return false;
    x = mtk_add(ctx, a2, x);
    mtk_tensor *n3 = mtk_module_forward(kid(m, "norm3"), x);
    if (!n3 || !models_blocks_held_until_here(ctx, n2)) return false;
    mtk_tensor *f = mtk_module_forward(kid(m, "ff"), n3);
    io->out[0] = mtk_add(ctx, f, x);
    io->nout = 1;
    return io->out[0] != NULL && models_blocks_held_until_here(ctx, a2) && models_blocks_held_until_here(ctx, n3) &&
           models_blocks_held_until_here(ctx, f);
}

static const mtk_module_type basic_block_type = { "BasicTransformerBlock", basic_block_forward, NULL, NULL };

static mtk_module *basic_block(mtk_ctx *ctx, int64_t dim, int64_t heads, int64_t head_dim, int64_t cross_dim)
{
    mtk_module *m = mtk_module_new(ctx, &basic_block_type, 0);
    bool ok = m && mtk_module_add(m, "norm1", mtk_nn_layer_norm(ctx, &dim, 1, 1e-5, true, true)) &&
              mtk_module_add(m, "attn1", diffusers_attention(ctx, dim, 0, heads, head_dim, false, 0, 0.0)) &&
              mtk_module_add(m, "norm2", mtk_nn_layer_norm(ctx, &dim, 1, 1e-5, true, true)) &&
              mtk_module_add(m, "attn2", diffusers_attention(ctx, dim, cross_dim, heads, head_dim, false, 0, 0.0)) &&
              mtk_module_add(m, "norm3", mtk_nn_layer_norm(ctx, &dim, 1, 1e-5, true, true)) &&
              mtk_module_add(m, "ff", feed_forward_new(ctx, dim));
    return ok ? mtk_module_finish(m) : NULL;
}

/* ---------------------------------------------------- Transformer2DModel */

typedef struct transformer_config {
    int64_t inner;
    bool linear;
} transformer_config;

/* x (B, C, H, W), context (B, T, cross) -> (B, C, H, W) */
static bool transformer_forward(mtk_module *m, mtk_module_io *io)
{
    mtk_ctx *ctx = mtk_module_ctx(m);
    const transformer_config *c = mtk_module_config(m);
    mtk_tensor *x = io->in[0], *context = io->nin > 1 ? io->in[1] : NULL;
    if (!x) return false;
    if (x->ndim != 4) return mtk_error(ctx, MTK_ERR_SHAPE, "Transformer2DModel: expects (B, C, H, W), got %d dims", (int)x->ndim);
    int64_t b = x->shape[0], ch = x->shape[1], hgt = x->shape[2], wid = x->shape[3];
    static const int64_t to_last[4] = { 0, 2, 3, 1 }, to_first[4] = { 0, 3, 1, 2 };
    mtk_tensor *h = mtk_module_forward(kid(m, "norm"), x);
    if (!c->linear) h = mtk_module_forward(kid(m, "proj_in"), h); /* (B, inner, H, W) */
    h = mtk_reshape(ctx, mtk_permute(ctx, h, to_last, 4), (int64_t[]){ b, hgt * wid, c->linear ? ch : c->inner }, 3);
    if (c->linear) h = mtk_module_forward(kid(m, "proj_in"), h); /* (B, HW, inner) */
    mtk_module *blocks = kid(m, "transformer_blocks");
    for (int32_t i = 0; i < mtk_module_child_count(blocks); i++) h = diffusers_call2(blocks_child(blocks, i), h, context);
    mtk_tensor *blocks_out = h; /* the forward's `hidden_states` while the output is made */
    if (c->linear) h = mtk_module_forward(kid(m, "proj_out"), h); /* (B, HW, C) */
    h = mtk_contiguous(ctx, mtk_permute(ctx, mtk_reshape(ctx, h, (int64_t[]){ b, hgt, wid, c->linear ? ch : c->inner }, 4),
                                        to_first, 4));
    if (!c->linear) h = mtk_module_forward(kid(m, "proj_out"), h);
    io->out[0] = mtk_add(ctx, h, x);
    io->nout = 1;
    return io->out[0] != NULL && models_blocks_held_until_here(ctx, blocks_out);
}

static const mtk_module_type transformer_type = { "Transformer2DModel", transformer_forward, NULL, NULL };

static mtk_module *projection(mtk_ctx *ctx, int64_t in, int64_t out, bool linear)
{
    if (linear) return mtk_nn_linear(ctx, in, out, true);
    mtk_conv_options o = mtk_conv_defaults();
    return mtk_nn_conv(ctx, 2, in, out, (int64_t[]){ 1, 1 }, &o);
}

mtk_module *diffusers_transformer_2d(mtk_ctx *ctx, int64_t heads, int64_t head_dim, int64_t in_channels, int64_t layers,
                                     int64_t cross_dim, int64_t groups, bool linear_projection)
{
    int64_t inner = heads * head_dim;
    mtk_module *m = mtk_module_new(ctx, &transformer_type, sizeof(transformer_config));
    mtk_module *blocks = mtk_nn_module_list(ctx);
    if (!m || !blocks) return NULL;
    *(transformer_config *)mtk_module_config(m) = (transformer_config){ inner, linear_projection };
    for (int64_t i = 0; i < layers; i++)
        if (!mtk_nn_module_list_append(blocks, basic_block(ctx, inner, heads, head_dim, cross_dim))) return NULL;
    bool ok = mtk_module_add(m, "norm", mtk_nn_group_norm(ctx, groups, in_channels, 1e-6, true, true)) &&
              mtk_module_add(m, "proj_in", projection(ctx, in_channels, inner, linear_projection)) &&
              mtk_module_add(m, "transformer_blocks", blocks) &&
              mtk_module_add(m, "proj_out", projection(ctx, inner, in_channels, linear_projection));
    return ok ? mtk_module_finish(m) : NULL;
}
