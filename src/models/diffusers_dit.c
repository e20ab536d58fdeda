/* Shared pieces of diffusers' transformer denoisers: see diffusers_dit.h. */
#include "models/diffusers_dit.h"
#include "mtk/ops.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static mtk_module *child(mtk_module *m, int32_t i) { return blocks_child(m, i); }

/* ----------------------------------------------------- MLP-shaped blocks */

/* linear_2(act(linear_1(x))): children linear_1, act, linear_2 */
static bool mlp_forward(mtk_module *m, mtk_module_io *io)
{
    mtk_tensor *h = mtk_module_forward(child(m, 1), mtk_module_forward(child(m, 0), io->in[0]));
    io->out[0] = mtk_module_forward(child(m, 2), h);
    io->nout = 1;
    return io->out[0] != NULL;
}

static const mtk_module_type timestep_embedding_type = { "TimestepEmbedding", mlp_forward, NULL, NULL };
static const mtk_module_type text_projection_type = { "PixArtAlphaTextProjection", mlp_forward, NULL, NULL };

static mtk_module *mlp(mtk_ctx *ctx, const mtk_module_type *type, int64_t in, int64_t dim, const char *act_name)
{
    mtk_module *m = mtk_module_new(ctx, type, 0);
    bool ok = m && mtk_module_add(m, "linear_1", mtk_nn_linear(ctx, in, dim, true)) &&
              mtk_module_add(m, act_name, mtk_nn_activation(ctx, "SiLU")) &&
              mtk_module_add(m, "linear_2", mtk_nn_linear(ctx, dim, dim, true));
    return ok ? mtk_module_finish(m) : NULL;
}

mtk_module *dit_timestep_embedding(mtk_ctx *ctx, int64_t in, int64_t dim)
{
    return mlp(ctx, &timestep_embedding_type, in, dim, "act");
}

/* ------------------------------------------------ time / text embedding */

enum { E_TIME_PROJ, E_TIMESTEP, E_GUIDANCE_OR_TEXT, E_TEXT };

/* (timestep, [guidance,] pooled) -> (B, dim) */
static bool time_text_forward(mtk_module *m, mtk_module_io *io)
{
    mtk_ctx *ctx = mtk_module_ctx(m);
    bool guidance = mtk_module_child_count(m) > E_TEXT;
    mtk_tensor *pooled = io->in[guidance ? 2 : 1];
    if (!pooled) return false;
    mtk_tensor *t = mtk_module_forward(child(m, E_TIME_PROJ), io->in[0]);
    mtk_tensor *emb = mtk_module_forward(child(m, E_TIMESTEP), mtk_to_dtype(ctx, t, pooled->dtype)); /* (B, dim) */
    if (guidance) {
        mtk_tensor *g = mtk_module_forward(child(m, E_TIME_PROJ), io->in[1]);
        emb = mtk_add(ctx, emb, mtk_module_forward(child(m, E_GUIDANCE_OR_TEXT), mtk_to_dtype(ctx, g, pooled->dtype)));
    }
    mtk_tensor *text = mtk_module_forward(child(m, guidance ? E_TEXT : E_GUIDANCE_OR_TEXT), pooled);
    io->out[0] = mtk_add(ctx, emb, text);
    io->nout = 1;
    return io->out[0] != NULL;
}

static const mtk_module_type time_text_type = { "CombinedTimestepTextProjEmbeddings", time_text_forward, NULL, NULL };
static const mtk_module_type time_guidance_text_type = { "CombinedTimestepGuidanceTextProjEmbeddings",
                                                         time_text_forward, NULL, NULL };

mtk_module *dit_time_text_embedding(mtk_ctx *ctx, int64_t dim, int64_t pooled, bool guidance)
{
    mtk_module *m = mtk_module_new(ctx, guidance ? &time_guidance_text_type : &time_text_type, 0);
    bool ok = m && mtk_module_add(m, "time_proj", diffusers_timesteps(ctx, 256, true, 0.0)) &&
              mtk_module_add(m, "timestep_embedder", dit_timestep_embedding(ctx, 256, dim));
    if (ok && guidance) ok = mtk_module_add(m, "guidance_embedder", dit_timestep_embedding(ctx, 256, dim));
    ok = ok && mtk_module_add(m, "text_embedder", mlp(ctx, &text_projection_type, pooled, dim, "act_1"));
    return ok ? mtk_module_finish(m) : NULL;
}

/* --------------------------------------------------------- modulation */

mtk_tensor *dit_modulate(mtk_ctx *ctx, mtk_tensor *x, mtk_tensor *scale, mtk_tensor *shift)
{
    mtk_tensor *h = mtk_mul(ctx, x, mtk_add_scalar(ctx, mtk_unsqueeze(ctx, scale, 1), mtk_value_int(1)));
    return shift ? mtk_add(ctx, h, mtk_unsqueeze(ctx, shift, 1)) : h;
}

mtk_tensor *dit_gate(mtk_ctx *ctx, mtk_tensor *gate, mtk_tensor *x)
{
    return mtk_mul(ctx, mtk_unsqueeze(ctx, gate, 1), x);
}

/* ----------------------------------------------------- adaptive norms */

enum { N_SILU, N_LINEAR, N_NORM };

static int32_t ada_chunks(dit_ada_kind kind) { return kind == DIT_ADA_ZERO ? 6 : kind == DIT_ADA_ZERO_X ? 9 : 3; }

typedef struct ada_config {
    dit_ada_kind kind;
} ada_config;

/* (x (B, S, dim), emb (B, dim)) -> the modulated x and the rows it hands on */
static bool ada_zero_forward(mtk_module *m, mtk_module_io *io)
{
    mtk_ctx *ctx = mtk_module_ctx(m);
    dit_ada_kind kind = ((const ada_config *)mtk_module_config(m))->kind;
    mtk_tensor *emb = mtk_module_forward(child(m, N_LINEAR), mtk_module_forward(child(m, N_SILU), io->in[1]));
    mtk_tensor *r[9] = { 0 };
    int32_t n = ada_chunks(kind);
    if (!emb || mtk_chunk(ctx, emb, n, 1, r, n) != n) return false; /* each (B, dim) */
    mtk_tensor *normed = mtk_module_forward(child(m, N_NORM), io->in[0]);
    io->out[0] = dit_modulate(ctx, normed, r[1], r[0]);
    if (kind == DIT_ADA_ZERO_SINGLE) {
        io->out[1] = r[2];
        io->nout = 2;
        return io->out[0] != NULL;
    }
    /* shift_msa, scale_msa, gate_msa, shift_mlp, scale_mlp, gate_mlp[, shift_msa2, scale_msa2, gate_msa2] */
    io->out[1] = r[2], io->out[2] = r[3], io->out[3] = r[4], io->out[4] = r[5];
    io->nout = 5;
    if (kind == DIT_ADA_ZERO_X) {
        io->out[5] = dit_modulate(ctx, normed, r[7], r[6]);
        io->out[6] = r[8];
        io->nout = 7;
    }
    return io->out[0] && io->out[io->nout - 1];
}

static const mtk_module_type ada_zero_types[] = {
    [DIT_ADA_ZERO] = { "AdaLayerNormZero", ada_zero_forward, NULL, NULL },
    [DIT_ADA_ZERO_X] = { "SD35AdaLayerNormZeroX", ada_zero_forward, NULL, NULL },
    [DIT_ADA_ZERO_SINGLE] = { "AdaLayerNormZeroSingle", ada_zero_forward, NULL, NULL },
};

static mtk_module *ada_norm(mtk_ctx *ctx, const mtk_module_type *type, int64_t dim, int64_t cond, int64_t out)
{
    mtk_module *m = mtk_module_new(ctx, type, sizeof(ada_config));
    bool ok = m && mtk_module_add(m, "silu", mtk_nn_activation(ctx, "SiLU")) &&
              mtk_module_add(m, "linear", mtk_nn_linear(ctx, cond, out, true)) &&
              mtk_module_add(m, "norm", mtk_nn_layer_norm(ctx, &dim, 1, 1e-6, false, false));
    return ok ? m : NULL;
}

mtk_module *dit_ada_norm_zero(mtk_ctx *ctx, int64_t dim, dit_ada_kind kind)
{
    mtk_module *m = ada_norm(ctx, &ada_zero_types[kind], dim, dim, ada_chunks(kind) * dim);
    if (!m) return NULL;
    ((ada_config *)mtk_module_config(m))->kind = kind;
    return mtk_module_finish(m);
}

/* (x (B, S, dim), cond (B, cond)) -> norm(x) * (1 + scale) + shift */
static bool ada_continuous_forward(mtk_module *m, mtk_module_io *io)
{
    mtk_ctx *ctx = mtk_module_ctx(m);
    mtk_tensor *x = io->in[0];
    mtk_tensor *cond = mtk_module_forward(child(m, N_SILU), io->in[1]);
    mtk_tensor *emb = x ? mtk_module_forward(child(m, N_LINEAR), mtk_to_dtype(ctx, cond, x->dtype)) : NULL;
    mtk_tensor *r[2];
    if (!emb || mtk_chunk(ctx, emb, 2, 1, r, 2) != 2) return false; /* scale, shift: (B, dim) */
    io->out[0] = dit_modulate(ctx, mtk_module_forward(child(m, N_NORM), x), r[0], r[1]);
    io->nout = 1;
    return io->out[0] != NULL;
}

static const mtk_module_type ada_continuous_type = { "AdaLayerNormContinuous", ada_continuous_forward, NULL, NULL };

mtk_module *dit_ada_norm_continuous(mtk_ctx *ctx, int64_t dim, int64_t cond)
{
    return mtk_module_finish(ada_norm(ctx, &ada_continuous_type, dim, cond, 2 * dim));
}

/* -------------------------------------------------------- feed-forward */

/* diffusers' GELU: gelu(proj(x), approximate="tanh") */
static bool gelu_forward(mtk_module *m, mtk_module_io *io)
{
    io->out[0] = mtk_gelu(mtk_module_ctx(m), mtk_module_forward(child(m, 0), io->in[0]), "tanh");
    io->nout = 1;
    return io->out[0] != NULL;
}

static const mtk_module_type gelu_type = { "GELU", gelu_forward, NULL, NULL };

/* net[2](net[1](net[0](x))) */
static bool feed_forward_forward(mtk_module *m, mtk_module_io *io)
{
    io->out[0] = models_blocks_run_layers(child(m, 0), io->in[0]);
    io->nout = 1;
    return io->out[0] != NULL;
}

static const mtk_module_type feed_forward_type = { "FeedForward", feed_forward_forward, NULL, NULL };

mtk_module *dit_feed_forward(mtk_ctx *ctx, int64_t dim)
{
    int64_t inner = 4 * dim;
    mtk_module *gelu = mtk_module_new(ctx, &gelu_type, 0);
    mtk_module *net = mtk_nn_module_list(ctx);
    mtk_module *m = mtk_module_new(ctx, &feed_forward_type, 0);
    bool ok = gelu && net && m && mtk_module_add(gelu, "proj", mtk_nn_linear(ctx, dim, inner, true)) &&
              mtk_nn_module_list_append(net, mtk_module_finish(gelu)) &&
              mtk_nn_module_list_append(net, mtk_nn_dropout(ctx, 0.0)) &&
              mtk_nn_module_list_append(net, mtk_nn_linear(ctx, inner, dim, true)) && mtk_module_add(m, "net", net);
    return ok ? mtk_module_finish(m) : NULL;
}

/* ------------------------------------------------------------- checks */

bool dit_check_inputs(mtk_module *m, const mtk_module_io *io, int32_t n, const char *const *names,
                      const int32_t *ranks)
{
    mtk_ctx *ctx = mtk_module_ctx(m);
    char list[512] = "";
    size_t at = 0;
    for (int32_t i = 0; i < n && at < sizeof list; i++)
        at += (size_t)snprintf(list + at, sizeof list - at, "%s%s", i ? ", " : "", names[i]);
    if (io->nin != n)
        return mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "%s: expects %d inputs (%s), got %d",
                         mtk_module_type_name(m), (int)n, list, (int)io->nin);
    for (int32_t i = 0; i < n; i++) {
        if (!io->in[i]) return false;
        if (ranks[i] && io->in[i]->ndim != ranks[i])
            return mtk_error(ctx, MTK_ERR_SHAPE, "%s: %s must have %d dims, got %d (inputs: %s)",
                             mtk_module_type_name(m), names[i], (int)ranks[i], (int)io->in[i]->ndim, list);
    }
    return true;
}

bool dit_check_fields(model_config *c, const char *cls, const char *const *known)
{
    const cJSON *item;
    cJSON_ArrayForEach(item, c->root)
    {
        const char *key = item->string;
        if (!key || key[0] == '_' || strcmp(key, "torch_dtype") == 0 || strcmp(key, "dtype") == 0) continue;
        bool found = false;
        for (int32_t i = 0; known[i] && !found; i++) found = strcmp(known[i], key) == 0;
        if (!found) return models_cfg_fail(c, key, "%s has no option '%s' (mtk builds the class's arguments only)", cls, key);
    }
    return true;
}
