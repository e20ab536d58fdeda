/* The MoE blocks whose experts are stored input-major, as transformers 5
 * keeps them for gpt_oss and llama4: gate_up_proj (E, H, 2I) and down_proj
 * (E, I, H), multiplied from the left (x @ W).
 *
 *   GptOssMLP (MOE_GPT_OSS): router GptOssTopKRouter (weight (E, H), bias
 *     (E)): softmax over the top-k logits; experts GptOssExperts with
 *     gate_up_proj_bias (E, 2I) and down_proj_bias (E, H), gate and up
 *     interleaved in the 2I columns (gate the even ones), and the clamped
 *     swiglu (up + 1) * gate * sigmoid(alpha * gate), gate clamped above at
 *     limit, up to [-limit, limit].  On meta, transformers' grouped_mm
 *     (models_moe_grouped) or batched_mm (batched_experts) op by op, other
 *     implementations balanced routing as decoder_moe.c; on a real device
 *     each expert runs on exactly its tokens (models_moe_dispatch).
 *   Llama4TextMoe (MOE_LLAMA4): experts Llama4TextExperts (no biases, gate
 *     the first I columns), router Llama4Router (Linear(H, E), no bias):
 *     the top-k logits through a sigmoid, the other experts' scores 0;
 *     on meta every expert runs on every token pre-scaled by its score, as
 *     transformers does (so FLOPs are E / top_k times a sparse router's);
 *     on a real device only the top-k experts of each token run, on the
 *     token pre-scaled by its score (the others' inputs, outputs and so
 *     their terms are exactly zero); plus shared_expert (Llama4TextMLP of
 *     intermediate_size). */
#include "models/blocks.h"
#include "models/decoder.h"
#include "mtk/ops.h"

#include <math.h>
#include <string.h>

typedef struct fused_config {
    moe_kind kind;
    int64_t experts, top_k, intermediate;
    double alpha, limit;      /* gpt_oss swiglu */
    double initializer_range;
    bool batched_mm;          /* _experts_implementation "batched_mm" (gpt_oss: batched_experts) */
    bool grouped_mm;          /* "grouped_mm", the default (gpt_oss: models_moe_grouped) */
} fused_config;

static const fused_config *config_of(const mtk_module *m) { return mtk_module_config(m); }

/* Weights N(0, initializer_range), the experts' biases zero (transformers'
 * _init_weights). */
static bool fused_reset(mtk_module *m, mtk_rng *rng)
{
    const fused_config *c = config_of(m);
    for (int32_t i = 0; i < mtk_module_param_count(m); i++) {
        const char *name = NULL;
        mtk_tensor *p = mtk_module_param_at(m, i, &name);
        bool zero = name && strstr(name, "_proj_bias") != NULL;
        if (!(zero ? mtk_init_zeros_(p) : mtk_init_normal_(p, 0.0, c->initializer_range, rng))) return false;
    }
    return true;
}

/* ---------------------------------------------------------------- routers */

/* GptOssTopKRouter: x (T, H) -> logits (T, E), scores (T, k) (softmax of the
 * top-k logits), indices (T, k). */
static bool gpt_oss_router_forward(mtk_module *m, mtk_module_io *io)
{
    mtk_ctx *ctx = mtk_module_ctx(m);
    mtk_tensor *logits = mtk_linear(ctx, io->in[0], mtk_module_param_at(m, 0, NULL), mtk_module_param_at(m, 1, NULL));
    mtk_tensor *values = NULL, *indices = NULL;
    if (!logits || !mtk_topk(ctx, logits, config_of(m)->top_k, -1, true, true, &values, &indices)) return false;
    io->out[0] = logits;
    io->out[1] = mtk_softmax(ctx, values, 1, values->dtype);
    io->out[2] = indices;
    io->nout = 3;
    return io->out[1] != NULL;
}

/* Llama4Router: x (T, H) -> scores (T, E) (sigmoid of the top-k logits, 0
 * elsewhere: sigmoid(-inf)), logits (T, E), top-k indices (T, k). */
static bool llama4_router_forward(mtk_module *m, mtk_module_io *io)
{
    mtk_ctx *ctx = mtk_module_ctx(m);
    mtk_tensor *logits = mtk_linear(ctx, io->in[0], mtk_module_param_at(m, 0, NULL), NULL);
    mtk_tensor *values = NULL, *indices = NULL;
    if (!logits || !mtk_topk(ctx, logits, config_of(m)->top_k, 1, true, true, &values, &indices)) return false;
    mtk_tensor *scores = mtk_scatter(ctx, mtk_full_like(ctx, logits, -INFINITY, MTK_DTYPE_UNDEFINED), 1, indices,
                                     values, NULL);
    io->out[0] = mtk_to_dtype(ctx, mtk_sigmoid(ctx, mtk_to_dtype(ctx, scores, MTK_FLOAT32)), logits->dtype);
    io->out[1] = logits;
    io->out[2] = indices;
    io->nout = 3;
    return io->out[0] != NULL;
}

/* ---------------------------------------------------------------- experts */

/* The gated activation of h (n, t, 2I) -> (n, t, I). */
static mtk_tensor *gated(mtk_module *m, mtk_tensor *h)
{
    mtk_ctx *ctx = mtk_module_ctx(m);
    const fused_config *c = config_of(m);
    int64_t two_i = 2 * c->intermediate;
    if (c->kind == MOE_LLAMA4) {
        mtk_tensor *gate = mtk_narrow(ctx, h, -1, 0, c->intermediate);
        mtk_tensor *up = mtk_narrow(ctx, h, -1, c->intermediate, c->intermediate);
        return mtk_mul(ctx, up, mtk_module_forward(mtk_module_child_at(m, 0, NULL), gate));
    }
    /* gate h[..., ::2] clamped above, up h[..., 1::2] clamped both sides */
    mtk_tensor *gate = mtk_clamp(ctx, mtk_slice(ctx, h, -1, 0, two_i, 2), mtk_value_none(), mtk_value_float(c->limit));
    mtk_tensor *up = mtk_clamp(ctx, mtk_slice(ctx, h, -1, 1, two_i, 2), mtk_value_float(-c->limit),
                               mtk_value_float(c->limit));
    mtk_tensor *glu = mtk_mul(ctx, gate, mtk_sigmoid(ctx, mtk_mul_scalar(ctx, gate, mtk_value_float(c->alpha))));
    mtk_tensor *up1 = mtk_add_scalar(ctx, up, mtk_value_float(1.0));
    mtk_tensor *out = mtk_mul(ctx, up1, glu);
    /* _apply_gate's locals (the clamped gate and up, glu, up + 1) live until it returns */
    if (!models_blocks_held_until_here(ctx, gate) || !models_blocks_held_until_here(ctx, up) ||
        !models_blocks_held_until_here(ctx, glu) || !models_blocks_held_until_here(ctx, up1))
        return NULL;
    return out;
}

/* `count` experts from `first` on, each on the rows of in (count, t, H):
 * x @ gate_up (+ bias), gated, @ down (+ bias) -> (count, t, H). */
static mtk_tensor *run_experts(mtk_module *m, mtk_tensor *in, int64_t first, int64_t count)
{
    mtk_ctx *ctx = mtk_module_ctx(m);
    bool bias = config_of(m)->kind == MOE_GPT_OSS;
    /* the weights, or their quantized storage unpacked to this layout (models_quant_weight) */
    mtk_tensor *gate_up = models_quant_weight(m, "gate_up_proj", in->dtype, true);     /* (E, H, 2I) */
    mtk_tensor *down = models_quant_weight(m, "down_proj", in->dtype, true);           /* (E, I, H)  */
    if (!gate_up || !down) return NULL;
    gate_up = mtk_narrow(ctx, gate_up, 0, first, count);                                /* (n, H, 2I) */
    down = mtk_narrow(ctx, down, 0, first, count);                                      /* (n, I, H)  */
    mtk_tensor *h = mtk_bmm(ctx, in, gate_up);                                          /* (n, t, 2I) */
    if (bias) {
        mtk_tensor *b = mtk_narrow(ctx, mtk_module_find_tensor(m, "gate_up_proj_bias"), 0, first, count);
        h = mtk_add(ctx, h, mtk_unsqueeze(ctx, b, 1));
    }
    h = mtk_bmm(ctx, gated(m, h), down);                                                /* (n, t, H)  */
    if (bias) {
        mtk_tensor *b = mtk_narrow(ctx, mtk_module_find_tensor(m, "down_proj_bias"), 0, first, count);
        h = mtk_add(ctx, h, mtk_unsqueeze(ctx, b, 1));
    }
    return h;
}

/* Expert `e` alone on its rows (n, H) -> (n, H). */
static mtk_tensor *one_expert(mtk_module *m, int64_t e, mtk_tensor *rows)
{
    mtk_ctx *ctx = mtk_module_ctx(m);
    return mtk_squeeze_dim(ctx, run_experts(m, mtk_unsqueeze(ctx, rows, 0), e, 1), 0);
}

/* transformers' batched_mm for GptOssExperts (input-major weights with
 * biases), op by op: every (token, slot) pair gathers its expert's
 * weights and biases, one bmm per projection; sizes set by T * k, none by
 * the routing.  The biases are added in place in transformers (out.add_):
 * here out of place, which only adds the product's size for the moment
 * of the add (the gathered weights are the peak).
 * x (T, H), indices (T, k), scores (T, k) -> (T, H). */
static mtk_tensor *batched_experts(mtk_module *m, mtk_tensor *x, mtk_tensor *indices, mtk_tensor *scores)
{
    mtk_ctx *ctx = mtk_module_ctx(m);
    if (!indices || !scores) return NULL;
    int64_t tokens = x->shape[0], hidden = x->shape[1], k = indices->shape[1], pairs = tokens * k;
    mtk_tensor *gate_up = models_quant_weight(m, "gate_up_proj", x->dtype, true);        /* (E, H, 2I) */
    mtk_tensor *down = models_quant_weight(m, "down_proj", x->dtype, true);              /* (E, I, H)  */
    if (!gate_up || !down) return NULL;
    mtk_tensor *rows = mtk_repeat_interleave(ctx, x, k, 0);                               /* (S, H)     */
    mtk_tensor *sample = mtk_reshape(ctx, scores, &pairs, 1);                             /* (S)        */
    mtk_tensor *ids = mtk_reshape(ctx, indices, &pairs, 1);                               /* (S)        */
    mtk_tensor *w = mtk_index_select(ctx, gate_up, 0, ids);                               /* (S, H, 2I) */
    mtk_tensor *b = mtk_index_select(ctx, mtk_module_find_tensor(m, "gate_up_proj_bias"), 0, ids); /* (S, 2I) */
    mtk_tensor *h = mtk_squeeze_dim(ctx, mtk_bmm(ctx, mtk_unsqueeze(ctx, rows, 1), w), 1); /* (S, 2I)    */
    h = gated(m, mtk_add(ctx, h, b));                                                     /* (S, I)     */
    mtk_tensor *gate_up_w = w, *gate_up_b = b;
    w = mtk_index_select(ctx, down, 0, ids);                                              /* (S, I, H)  */
    if (!models_blocks_held_until_here(ctx, gate_up_w)) return NULL;
    b = mtk_index_select(ctx, mtk_module_find_tensor(m, "down_proj_bias"), 0, ids);       /* (S, H)     */
    if (!models_blocks_held_until_here(ctx, gate_up_b)) return NULL;
    mtk_tensor *down_rows = mtk_squeeze_dim(ctx, mtk_bmm(ctx, mtk_unsqueeze(ctx, h, 1), w), 1);
    down_rows = mtk_add(ctx, down_rows, b);                                               /* (S, H)     */
    h = mtk_mul(ctx, down_rows, mtk_unsqueeze(ctx, sample, -1));                          /* (S, H)     */
    int64_t per_token[3] = { tokens, k, hidden }, slots = 1;
    mtk_tensor *out = mtk_sum(ctx, mtk_view(ctx, h, per_token, 3), &slots, 1, false, MTK_DTYPE_UNDEFINED);
    out = out ? mtk_to_dtype(ctx, out, x->dtype) : NULL;                                 /* (T, H)     */
    /* the forward's locals, held until it returns */
    if (!models_blocks_held_until_here(ctx, rows) || !models_blocks_held_until_here(ctx, w) ||
        !models_blocks_held_until_here(ctx, b) || !models_blocks_held_until_here(ctx, down_rows) ||
        !models_blocks_held_until_here(ctx, h))
        return NULL;
    return out;
}

/* transformers' grouped_mm for GptOssExperts: input-major weights as the
 * op takes them, the biases gathered per sorted pair.
 * x (T, H), indices (T, k), scores (T, k) -> (T, H). */
static mtk_tensor *grouped_experts(mtk_module *m, mtk_tensor *x, mtk_tensor *indices, mtk_tensor *scores)
{
    models_moe_grouped_weights w = {
        .gate_up = models_quant_weight(m, "gate_up_proj", x->dtype, true),                /* (E, H, 2I) */
        .down = models_quant_weight(m, "down_proj", x->dtype, true),                      /* (E, I, H)  */
        .gate_up_bias = mtk_module_find_tensor(m, "gate_up_proj_bias"),                   /* (E, 2I)    */
        .down_bias = mtk_module_find_tensor(m, "down_proj_bias"),                         /* (E, H)     */
        .gate = gated,
    };
    return models_moe_grouped(m, x, indices, scores, &w);
}

/* GptOssExperts: forward(x (T, H), indices (T, k), scores (T, k)) -> (T, H) */
static bool gpt_oss_experts_forward(mtk_module *m, mtk_module_io *io)
{
    mtk_ctx *ctx = mtk_module_ctx(m);
    const fused_config *c = config_of(m);
    mtk_tensor *x = io->in[0], *indices = io->in[1], *scores = io->in[2];
    if (mtk_tensor_is_meta(x) && (c->batched_mm || c->grouped_mm)) {
        io->out[0] = (c->batched_mm ? batched_experts : grouped_experts)(m, x, indices, scores);
    } else if (mtk_tensor_is_meta(x)) {
        /* balanced routing: experts [0, extra) get base + 1 tokens, the others base */
        int64_t pairs = x->shape[0] * c->top_k, base = pairs / c->experts, extra = pairs % c->experts;
        for (int32_t group = 0; group < 2; group++) {
            int64_t first = group ? extra : 0, count = group ? c->experts - extra : extra, rows = base + !group;
            if (count == 0 || rows == 0) continue;
            int64_t routed[3] = { count, rows, x->shape[1] };
            mtk_tensor *in = mtk_expand(ctx, mtk_unsqueeze(ctx, mtk_narrow(ctx, x, 0, 0, rows), 0), routed, 3);
            if (!run_experts(m, in, first, count)) return false;
        }
        io->out[0] = mtk_zeros_like(ctx, x, MTK_DTYPE_UNDEFINED);
    } else {
        /* each expert on the tokens routed to it, weighted, added back */
        io->out[0] = models_moe_dispatch(m, x, indices, scores, c->experts, false, one_expert);
    }
    io->nout = 1;
    return io->out[0] != NULL;
}

/* Llama4TextExperts: forward(in (E, T, H), every token pre-scaled by its
 * score) -> (E, T, H); or, routed on a real device, forward(x (T, H),
 * indices (T, k), scores (T, k)) -> (T, H), the sum of the token's k
 * experts on the token scaled by each one's score. */
static bool llama4_experts_forward(mtk_module *m, mtk_module_io *io)
{
    if (io->nin == 3) {
        io->out[0] = models_moe_dispatch(m, io->in[0], io->in[1], io->in[2], config_of(m)->experts, true, one_expert);
        io->nout = 1;
        return io->out[0] != NULL;
    }
    io->out[0] = run_experts(m, io->in[0], 0, config_of(m)->experts);
    io->nout = 1;
    return io->out[0] != NULL;
}

/* ------------------------------------------------------------------ block */

/* (B, S, H) -> (B, S, H) */
static bool fused_block_forward(mtk_module *m, mtk_module_io *io)
{
    mtk_ctx *ctx = mtk_module_ctx(m);
    const fused_config *c = config_of(m);
    mtk_tensor *x = io->in[0];
    if (x->ndim != 3)
        return mtk_error(ctx, MTK_ERR_SHAPE, "%s: expected hidden states (B, S, hidden), got %d dim%s",
                         mtk_module_type_name(m), (int)x->ndim, x->ndim == 1 ? "" : "s");
    int64_t tokens[2] = { x->shape[0] * x->shape[1], x->shape[2] };
    mtk_tensor *flat = mtk_reshape(ctx, x, tokens, 2); /* (T, H) */
    mtk_tensor *out;
    if (c->kind == MOE_GPT_OSS) {
        /* children: router, experts */
        mtk_module_io route = { .in = { flat }, .nin = 1 };
        if (!mtk_module_call(mtk_module_child_at(m, 0, NULL), &route)) return false;
        mtk_module_io expert = { .in = { flat, route.out[2], route.out[1] }, .nin = 3 };
        if (!mtk_module_call(mtk_module_child_at(m, 1, NULL), &expert)) return false;
        out = expert.out[0];
    } else {
        /* children: experts, router, shared_expert */
        mtk_module_io route = { .in = { flat }, .nin = 1 };
        if (!mtk_module_call(mtk_module_child_at(m, 1, NULL), &route)) return false;
        mtk_tensor *routed;
        if (mtk_tensor_is_meta(flat)) {
            /* every expert on every token, as transformers runs them: the
             * tokens repeated E times (a copy), times the scores transposed
             * to one column (a copy too: reshape of a transpose) */
            int64_t t = flat->shape[0], h = flat->shape[1], times[2] = { c->experts, 1 };
            int64_t column[2] = { c->experts * t, 1 }, per_expert[3] = { c->experts, t, h };
            mtk_tensor *scores = mtk_reshape(ctx, mtk_transpose(ctx, route.out[0], 0, 1), column, 2); /* (E T, 1) */
            mtk_tensor *in = mtk_mul(ctx, mtk_repeat(ctx, flat, times, 2), scores);                /* (E T, H) */
            routed = mtk_module_forward(mtk_module_child_at(m, 0, NULL), mtk_view(ctx, in, per_expert, 3));
            int64_t e_dim = 0;
            routed = mtk_sum(ctx, routed, &e_dim, 1, false, MTK_DTYPE_UNDEFINED);        /* (T, H)    */
        } else {
            /* the top-k experts of each token only: the others' terms are zeros */
            mtk_tensor *scores = mtk_gather(ctx, route.out[0], 1, route.out[2]);           /* (T, k)    */
            mtk_module_io expert = { .in = { flat, route.out[2], scores }, .nin = 3 };
            if (!mtk_module_call(mtk_module_child_at(m, 0, NULL), &expert)) return false;
            routed = expert.out[0];
        }
        out = mtk_add(ctx, mtk_module_forward(mtk_module_child_at(m, 2, NULL), flat), routed);
    }
    io->out[0] = mtk_reshape(ctx, out, x->shape, 3);
    io->nout = 1;
    return io->out[0] != NULL;
}

static const mtk_module_type gpt_oss_block = { "GptOssMLP", fused_block_forward, NULL, NULL };
static const mtk_module_type gpt_oss_router = { "GptOssTopKRouter", gpt_oss_router_forward, fused_reset, NULL };
static const mtk_module_type gpt_oss_experts = { "GptOssExperts", gpt_oss_experts_forward, fused_reset, NULL };
static const mtk_module_type llama4_block = { "Llama4TextMoe", fused_block_forward, NULL, NULL };
static const mtk_module_type llama4_router = { "Llama4Router", llama4_router_forward, fused_reset, NULL };
static const mtk_module_type llama4_experts = { "Llama4TextExperts", llama4_experts_forward, fused_reset, NULL };

static mtk_module *fused_module(mtk_ctx *ctx, const mtk_module_type *type, const decoder_spec *spec)
{
    mtk_module *m = mtk_module_new(ctx, type, sizeof(fused_config));
    if (!m) return NULL;
    *(fused_config *)mtk_module_config(m) = (fused_config){
        .kind = spec->moe, .experts = spec->experts, .top_k = spec->top_k, .intermediate = spec->moe_intermediate,
        .alpha = spec->swiglu_alpha, .limit = spec->swiglu_limit, .initializer_range = spec->initializer_range,
        .batched_mm = spec->experts_batched_mm, .grouped_mm = spec->experts_grouped_mm && spec->moe == MOE_GPT_OSS,
    };
    return m;
}

mtk_module *models_decoder_moe_fused(mtk_ctx *ctx, const decoder_types *t, const decoder_spec *spec)
{
    bool gpt_oss = spec->moe == MOE_GPT_OSS;
    mtk_module *block = fused_module(ctx, gpt_oss ? &gpt_oss_block : &llama4_block, spec);
    mtk_module *router = fused_module(ctx, gpt_oss ? &gpt_oss_router : &llama4_router, spec);
    mtk_module *experts = fused_module(ctx, gpt_oss ? &gpt_oss_experts : &llama4_experts, spec);
    if (!block || !router || !experts) return NULL;
    int64_t e = spec->experts, h = spec->hidden, i = spec->moe_intermediate;
    int64_t router_shape[2] = { e, h }, gate_up[3] = { e, h, 2 * i }, gate_up_bias[2] = { e, 2 * i };
    int64_t down[3] = { e, i, h }, down_bias[2] = { e, h };
    if (!mtk_module_new_parameter(router, "weight", router_shape, 2)) return NULL;
    if (gpt_oss) {
        bool ok = mtk_module_new_parameter(router, "bias", &e, 1) &&
                  mtk_module_new_parameter(experts, "gate_up_proj", gate_up, 3) &&
                  mtk_module_new_parameter(experts, "gate_up_proj_bias", gate_up_bias, 2) &&
                  mtk_module_new_parameter(experts, "down_proj", down, 3) &&
                  mtk_module_new_parameter(experts, "down_proj_bias", down_bias, 2) &&
                  mtk_module_add(block, "router", mtk_module_finish(router)) &&
                  mtk_module_add(block, "experts", mtk_module_finish(experts));
        return ok ? mtk_module_finish(block) : NULL;
    }
    bool ok = mtk_module_new_parameter(experts, "gate_up_proj", gate_up, 3) &&
              mtk_module_new_parameter(experts, "down_proj", down, 3) &&
              mtk_module_add(experts, "act_fn", mtk_nn_activation(ctx, spec->act)) &&
              mtk_module_add(block, "experts", mtk_module_finish(experts)) &&
              mtk_module_add(block, "router", mtk_module_finish(router)) &&
              mtk_module_add(block, "shared_expert", models_decoder_mlp(ctx, t, spec, spec->moe_intermediate));
    return ok ? mtk_module_finish(block) : NULL;
}
