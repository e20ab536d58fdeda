/* Mixture-of-experts blocks (mixtral, qwen2_moe, qwen3_moe, glm4_moe) as
 * transformers 5 lays them out: <Prefix>SparseMoeBlock with a <Prefix>TopKRouter `gate`
 * (weight (E, hidden)) and <Prefix>Experts `experts` holding all experts in
 * two 3-D parameters, gate_up_proj (E, 2 I, hidden) and down_proj
 * (E, hidden, I); qwen2_moe adds a dense shared_expert and its
 * shared_expert_gate; deepseek_v3 and glm4_moe (<Prefix>MoE) route with a
 * <Prefix>TopkRouter (sigmoid scores, grouped top-k, a float32 score
 * correction bias) and add their shared_experts ungated.
 *
 * Which tokens go to which expert depends on the data.  On meta the
 * experts run as transformers' experts implementation does, whose sizes
 * are set by the T * top_k (token, expert) pairs whatever the routing:
 * grouped_mm, its default (models_moe_grouped), or batched_mm
 * (batched_experts).  Any other implementation assumes balanced routing:
 * each expert gets T * top_k / E pairs (the first T * top_k % E experts
 * one more), at most two batched matmuls.  On a real device each expert
 * runs on exactly the tokens routed to it (models_moe_dispatch). */
#include "models/blocks.h"
#include "models/decoder.h"
#include "mtk/ops.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* ----------------------------------------------------------------- config */

bool models_decoder_read_qwen_moe(model_config *c, decoder_spec *spec)
{
    spec->norm_topk_prob = models_cfg_bool(c, "norm_topk_prob", false);
    spec->sparse_step = models_cfg_positive(c, "decoder_sparse_step", 1);
    spec->n_mlp_only = models_cfg_int_list(c, "mlp_only_layers", spec->mlp_only, DECODER_MAX_MLP_ONLY);
    if (spec->n_mlp_only < 0) spec->n_mlp_only = 0;
    if (!models_cfg_ok(c)) return false;
    if (spec->experts < 0)
        return models_cfg_fail(c, "num_experts", "must be non-negative, got %lld", (long long)spec->experts);
    if (spec->experts > 0 && spec->top_k > spec->experts)
        return models_cfg_fail(c, "num_experts_per_tok", "%lld is more than num_experts=%lld",
                               (long long)spec->top_k, (long long)spec->experts);
    if (spec->experts == 0) spec->moe = MOE_NONE; /* every layer dense */
    return true;
}

/* ----------------------------------------------------------------- router */

typedef struct router_config {
    int64_t experts, top_k;
    bool norm_topk;          /* renormalize the top-k probabilities */
    bool float32_weights;    /* mixtral: the weights stay float32 (qwen: cast to the logits' dtype) */
    double initializer_range;
} router_config;

static bool normal_reset(mtk_module *m, mtk_rng *rng, double std)
{
    for (int32_t i = 0; i < mtk_module_param_count(m); i++)
        if (!mtk_init_normal_(mtk_module_param_at(m, i, NULL), 0.0, std, rng)) return false;
    return true;
}

static bool router_reset(mtk_module *m, mtk_rng *rng)
{
    return normal_reset(m, rng, ((const router_config *)mtk_module_config(m))->initializer_range);
}

/* x (T, hidden) -> logits (T, E), top-k weights (T, k), top-k indices (T, k) */
static bool router_forward(mtk_module *m, mtk_module_io *io)
{
    mtk_ctx *ctx = mtk_module_ctx(m);
    const router_config *c = mtk_module_config(m);
    mtk_tensor *logits = mtk_linear(ctx, io->in[0], mtk_module_param_at(m, 0, NULL), NULL);
    mtk_tensor *probs = mtk_softmax(ctx, logits, -1, MTK_FLOAT32);
    mtk_tensor *values = NULL, *indices = NULL;
    if (probs && !mtk_topk(ctx, probs, c->top_k, -1, true, true, &values, &indices)) return false;
    if (c->norm_topk) {
        int64_t last = -1;
        values = mtk_div(ctx, values, mtk_sum(ctx, values, &last, 1, true, MTK_DTYPE_UNDEFINED));
    }
    io->out[0] = logits;
    io->out[1] = logits && !c->float32_weights ? mtk_to_dtype(ctx, values, logits->dtype) : values;
    io->out[2] = indices;
    io->nout = 3;
    return io->out[1] && io->out[2];
}

const mtk_module_type models_decoder_router_base = { "TopKRouter", router_forward, router_reset, NULL };

/* --------------------------------------------------- grouped router (deepseek) */

typedef struct grouped_router_config {
    int64_t experts, top_k, groups, topk_groups;
    bool norm_topk;
    double scaling;            /* routed_scaling_factor */
    double initializer_range;
} grouped_router_config;

/* weight normal, e_score_correction_bias zeros */
static bool grouped_router_reset(mtk_module *m, mtk_rng *rng)
{
    const grouped_router_config *c = mtk_module_config(m);
    mtk_tensor *bias = mtk_module_buffer_at(m, 0, NULL, NULL);
    return mtk_init_normal_(mtk_module_param_at(m, 0, NULL), 0.0, c->initializer_range, rng) &&
           mtk_init_constant_(bias, 0.0);
}

/* Sigmoid scores; the experts of the topk_groups groups whose two best
 * (bias-corrected) scores sum highest compete for the top_k; the chosen
 * experts' plain scores, renormalized when norm_topk, times the scaling.
 * x (T, hidden) -> logits (T, E) float32, weights (T, k), indices (T, k). */
static bool grouped_router_forward(mtk_module *m, mtk_module_io *io)
{
    mtk_ctx *ctx = mtk_module_ctx(m);
    const grouped_router_config *c = mtk_module_config(m);
    mtk_tensor *x = io->in[0];
    mtk_tensor *w = mtk_module_param_at(m, 0, NULL), *bias = mtk_module_buffer_at(m, 0, NULL, NULL);
    mtk_tensor *logits = mtk_linear(ctx, mtk_to_dtype(ctx, x, MTK_FLOAT32), mtk_to_dtype(ctx, w, MTK_FLOAT32), NULL);
    mtk_tensor *scores = mtk_sigmoid(ctx, logits);
    mtk_tensor *choice = mtk_add(ctx, scores, bias);                                /* (T, E)    */
    int64_t t = x->shape[0], per = c->experts / c->groups;
    int64_t grouped[3] = { t, c->groups, per }, last = -1;
    mtk_tensor *best2 = NULL, *idx = NULL, *group_idx = NULL, *top = NULL;
    /* the two best of each group (a group of one: its only expert) */
    if (!mtk_topk(ctx, mtk_view(ctx, choice, grouped, 3), per < 2 ? per : 2, -1, true, true, &best2, &idx))
        return false;
    mtk_tensor *group_scores = mtk_sum(ctx, best2, &last, 1, false, MTK_DTYPE_UNDEFINED); /* (T, G) */
    if (!mtk_topk(ctx, group_scores, c->topk_groups, -1, true, false, &top, &group_idx)) return false;
    mtk_tensor *group_mask = mtk_scatter_value(ctx, mtk_zeros_like(ctx, group_scores, MTK_DTYPE_UNDEFINED), 1,
                                               group_idx, 1.0, NULL);              /* (T, G)    */
    int64_t flat[2] = { t, c->experts };
    mtk_tensor *score_mask = mtk_reshape(ctx, mtk_expand(ctx, mtk_unsqueeze(ctx, group_mask, -1), grouped, 3), flat, 2);
    mtk_tensor *dropped = mtk_logical_not(ctx, mtk_to_dtype(ctx, score_mask, MTK_BOOL));
    choice = mtk_masked_fill(ctx, choice, dropped, -INFINITY);
    mtk_tensor *indices = NULL;
    if (!mtk_topk(ctx, choice, c->top_k, -1, true, false, &top, &indices)) return false;
    mtk_tensor *weights = mtk_gather(ctx, scores, 1, indices);                      /* (T, k)    */
    if (c->norm_topk) {
        mtk_tensor *sum = mtk_sum(ctx, weights, &last, 1, true, MTK_DTYPE_UNDEFINED);
        weights = mtk_div(ctx, weights, mtk_add_scalar(ctx, sum, mtk_value_float(1e-20)));
    }
    io->out[0] = logits;
    io->out[1] = mtk_mul_scalar(ctx, weights, mtk_value_float(c->scaling));
    io->out[2] = indices;
    io->nout = 3;
    return io->out[0] && io->out[1] && io->out[2];
}

const mtk_module_type models_decoder_grouped_router_base = { "TopkRouter", grouped_router_forward,
                                                             grouped_router_reset, NULL };

/* DeepseekV3TopkRouter: weight (E, hidden) and e_score_correction_bias (E),
 * both float32 whatever the model's dtype. */
static mtk_module *grouped_router(mtk_ctx *ctx, const decoder_types *t, const decoder_spec *spec)
{
    mtk_module *m = mtk_module_new(ctx, &t->router, sizeof(grouped_router_config));
    if (!m) return NULL;
    *(grouped_router_config *)mtk_module_config(m) =
        (grouped_router_config){ spec->experts, spec->top_k, spec->n_group, spec->topk_group, spec->norm_topk_prob,
                                 spec->routed_scaling, spec->initializer_range };
    int64_t shape[2] = { spec->experts, spec->hidden };
    if (!mtk_ctx_push_dtype(ctx, MTK_FLOAT32)) return NULL;
    bool ok = mtk_module_new_parameter(m, "weight", shape, 2) &&
              mtk_module_new_buffer(m, "e_score_correction_bias", &spec->experts, 1, MTK_FLOAT32, true);
    mtk_ctx_pop_dtype(ctx);
    return ok ? mtk_module_finish(m) : NULL;
}

/* ---------------------------------------------------------------- experts */

typedef struct experts_config {
    int64_t experts, top_k, intermediate;
    double initializer_range;
    bool batched_mm; /* _experts_implementation "batched_mm" (batched_experts) */
    bool grouped_mm; /* "grouped_mm", transformers' default (models_moe_grouped) */
} experts_config;

static bool experts_reset(mtk_module *m, mtk_rng *rng)
{
    return normal_reset(m, rng, ((const experts_config *)mtk_module_config(m))->initializer_range);
}

/* `count` experts from `first` on, each on `tokens` tokens of x (T, H):
 * (count, tokens, H) -> (count, tokens, H). */
static mtk_tensor *expert_group(mtk_module *m, mtk_tensor *x, int64_t first, int64_t count, int64_t tokens)
{
    mtk_ctx *ctx = mtk_module_ctx(m);
    const experts_config *c = mtk_module_config(m);
    int64_t hidden = x->shape[1], routed[3] = { count, tokens, hidden };
    /* the tokens routed to each expert (which ones is data: on meta, a slice stands for them) */
    mtk_tensor *in = mtk_expand(ctx, mtk_unsqueeze(ctx, mtk_narrow(ctx, x, 0, 0, tokens), 0), routed, 3);
    /* the weights, or their quantized storage cast back (models_quant_weight) */
    mtk_tensor *gate_up = models_quant_weight(m, "gate_up_proj", x->dtype, false);
    mtk_tensor *down = models_quant_weight(m, "down_proj", x->dtype, false);
    gate_up = mtk_narrow(ctx, gate_up, 0, first, count); /* (n, 2I, H) */
    down = mtk_narrow(ctx, down, 0, first, count);       /* (n, H, I)  */
    mtk_tensor *h = mtk_bmm(ctx, in, mtk_transpose(ctx, gate_up, 1, 2));                     /* (n, t, 2I) */
    mtk_tensor *gate = mtk_narrow(ctx, h, -1, 0, c->intermediate);
    mtk_tensor *up = mtk_narrow(ctx, h, -1, c->intermediate, c->intermediate);
    h = mtk_mul(ctx, mtk_module_forward(mtk_module_child_at(m, 0, NULL), gate), up);          /* (n, t, I)  */
    return mtk_bmm(ctx, h, mtk_transpose(ctx, down, 1, 2));                                  /* (n, t, H)  */
}

/* Expert `e` on its rows (n, H): down(act(gate) * up) -> (n, H). */
static mtk_tensor *one_expert(mtk_module *m, int64_t e, mtk_tensor *rows)
{
    mtk_ctx *ctx = mtk_module_ctx(m);
    const experts_config *c = mtk_module_config(m);
    mtk_tensor *gate_up = models_quant_weight(m, "gate_up_proj", rows->dtype, false); /* (E, 2I, H) */
    mtk_tensor *down = models_quant_weight(m, "down_proj", rows->dtype, false);       /* (E, H, I)  */
    if (!gate_up || !down) return NULL;
    mtk_tensor *h = mtk_linear(ctx, rows, mtk_select(ctx, gate_up, 0, e), NULL);      /* (n, 2I)    */
    mtk_tensor *gate = mtk_narrow(ctx, h, -1, 0, c->intermediate);
    mtk_tensor *up = mtk_narrow(ctx, h, -1, c->intermediate, c->intermediate);
    h = mtk_mul(ctx, mtk_module_forward(mtk_module_child_at(m, 0, NULL), gate), up);  /* (n, I)     */
    return mtk_linear(ctx, h, mtk_select(ctx, down, 0, e), NULL);                     /* (n, H)     */
}

/* transformers' batched_mm, op by op: every (token, slot) pair gathers
 * its expert's weights and one bmm multiplies them, so every size is set
 * by T * k and none by the routing (the planner is exact for any routing).
 * x (T, H), indices (T, k), weights (T, k) -> (T, H) in x's dtype. */
static mtk_tensor *batched_experts(mtk_module *m, mtk_tensor *x, mtk_tensor *indices, mtk_tensor *weights)
{
    mtk_ctx *ctx = mtk_module_ctx(m);
    const experts_config *c = mtk_module_config(m);
    if (!indices || !weights) return NULL;
    int64_t tokens = x->shape[0], hidden = x->shape[1], k = indices->shape[1], pairs = tokens * k;
    mtk_tensor *gate_up = models_quant_weight(m, "gate_up_proj", x->dtype, false); /* (E, 2I, H) */
    mtk_tensor *down = models_quant_weight(m, "down_proj", x->dtype, false);       /* (E, H, I)  */
    if (!gate_up || !down) return NULL;
    mtk_tensor *rows = mtk_repeat_interleave(ctx, x, k, 0);                         /* (S, H)     */
    mtk_tensor *sample = mtk_reshape(ctx, weights, &pairs, 1);                      /* (S)        */
    mtk_tensor *ids = mtk_reshape(ctx, indices, &pairs, 1);                         /* (S)        */
    mtk_tensor *w = mtk_index_select(ctx, gate_up, 0, ids);                         /* (S, 2I, H) */
    mtk_tensor *h = mtk_squeeze_dim(ctx, mtk_bmm(ctx, w, mtk_unsqueeze(ctx, rows, -1)), -1); /* (S, 2I) */
    mtk_tensor *gate = mtk_narrow(ctx, h, -1, 0, c->intermediate);
    mtk_tensor *up = mtk_narrow(ctx, h, -1, c->intermediate, c->intermediate);
    h = mtk_mul(ctx, mtk_module_forward(mtk_module_child_at(m, 0, NULL), gate), up);          /* (S, I)     */
    mtk_tensor *gate_up_rows = w;
    w = mtk_index_select(ctx, down, 0, ids);                                        /* (S, H, I)  */
    if (!models_blocks_held_until_here(ctx, gate_up_rows)) return NULL;
    mtk_tensor *down_rows = mtk_squeeze_dim(ctx, mtk_bmm(ctx, w, mtk_unsqueeze(ctx, h, -1)), -1); /* (S, H) */
    h = down_rows;
    /* float32 routing weights (mixtral) promote the weighted rows */
    h = mtk_mul(ctx, h, mtk_unsqueeze(ctx, sample, -1));                            /* (S, H)     */
    int64_t per_token[3] = { tokens, k, hidden }, slots = 1;
    mtk_tensor *out = mtk_sum(ctx, mtk_view(ctx, h, per_token, 3), &slots, 1, false, MTK_DTYPE_UNDEFINED);
    out = out ? mtk_to_dtype(ctx, out, x->dtype) : NULL;                           /* (T, H)     */
    /* the forward's locals hold the repeated rows, the last gathered
     * weights, the down projection's and the weighted rows until it
     * returns; the gate_up gather lived until the down gather rebound its
     * name */
    if (!models_blocks_held_until_here(ctx, rows) || !models_blocks_held_until_here(ctx, w) ||
        !models_blocks_held_until_here(ctx, down_rows) || !models_blocks_held_until_here(ctx, h))
        return NULL;
    return out;
}

/* _default_apply_gate: act(gate) * up of h (S, 2I) -> (S, I). */
static mtk_tensor *apply_gate(mtk_module *m, mtk_tensor *h)
{
    mtk_ctx *ctx = mtk_module_ctx(m);
    int64_t i = ((const experts_config *)mtk_module_config(m))->intermediate;
    mtk_tensor *gate = mtk_narrow(ctx, h, -1, 0, i), *up = mtk_narrow(ctx, h, -1, i, i);
    return mtk_mul(ctx, mtk_module_forward(mtk_module_child_at(m, 0, NULL), gate), up);
}

/* transformers' grouped_mm with the output-major weights (E, 2I, H) and
 * (E, H, I), transposed to the input-major form the op takes. */
static mtk_tensor *grouped_experts(mtk_module *m, mtk_tensor *x, mtk_tensor *indices, mtk_tensor *weights)
{
    mtk_ctx *ctx = mtk_module_ctx(m);
    mtk_tensor *gate_up = models_quant_weight(m, "gate_up_proj", x->dtype, false); /* (E, 2I, H) */
    mtk_tensor *down = models_quant_weight(m, "down_proj", x->dtype, false);       /* (E, H, I)  */
    models_moe_grouped_weights w = { .gate_up = mtk_transpose(ctx, gate_up, 1, 2), .down = mtk_transpose(ctx, down, 1, 2),
                                     .gate = apply_gate };
    return models_moe_grouped(m, x, indices, weights, &w);
}

/* forward(x (T, H), top_k_index (T, k), top_k_weights (T, k)) -> (T, H) */
static bool experts_forward(mtk_module *m, mtk_module_io *io)
{
    mtk_ctx *ctx = mtk_module_ctx(m);
    const experts_config *c = mtk_module_config(m);
    mtk_tensor *x = io->in[0];
    if (x->ndim != 2)
        return mtk_error(ctx, MTK_ERR_SHAPE, "%s: expected tokens (T, hidden), got %d dim%s", mtk_module_type_name(m),
                         (int)x->ndim, x->ndim == 1 ? "" : "s");
    io->nout = 1;
    if (!mtk_tensor_is_meta(x)) {
        /* each expert on the tokens routed to it, weighted, added back */
        io->out[0] = models_moe_dispatch(m, x, io->in[1], io->in[2], c->experts, false, one_expert);
        return io->out[0] != NULL;
    }
    if (c->batched_mm || c->grouped_mm) {
        io->out[0] = (c->batched_mm ? batched_experts : grouped_experts)(m, x, io->in[1], io->in[2]);
        return io->out[0] != NULL;
    }
    /* another implementation (transformers' eager loop over the experts
       a token reached): balanced routing stands for the data */
    int64_t pairs = x->shape[0] * c->top_k;
    int64_t base = pairs / c->experts, extra = pairs % c->experts;
    /* experts [0, extra) get base + 1 tokens, the others base */
    if (extra > 0 && !expert_group(m, x, 0, extra, base + 1)) return false;
    if (base > 0 && !expert_group(m, x, extra, c->experts - extra, base)) return false;
    io->out[0] = mtk_zeros_like(ctx, x, MTK_DTYPE_UNDEFINED); /* the weighted sum of the experts' outputs, per token */
    return io->out[0] != NULL;
}

const mtk_module_type models_decoder_experts_base = { "Experts", experts_forward, experts_reset, NULL };

/* ------------------------------------------------------------------ block */

typedef struct moe_config {
    bool shared;        /* qwen2_moe: shared_expert + shared_expert_gate */
    bool experts_first; /* qwen3_moe: children experts, gate             */
    bool ungated;       /* deepseek: shared_experts added as they are   */
} moe_config;

/* (B, S, H) -> (B, S, H) */
static bool moe_forward(mtk_module *m, mtk_module_io *io)
{
    mtk_ctx *ctx = mtk_module_ctx(m);
    const moe_config *c = mtk_module_config(m);
    mtk_tensor *x = io->in[0];
    if (x->ndim != 3)
        return mtk_error(ctx, MTK_ERR_SHAPE, "%s: expected hidden states (B, S, hidden), got %d dim%s",
                         mtk_module_type_name(m), (int)x->ndim, x->ndim == 1 ? "" : "s");
    int64_t tokens[2] = { x->shape[0] * x->shape[1], x->shape[2] };
    mtk_tensor *flat = mtk_view(ctx, x, tokens, 2); /* (T, H) */
    mtk_tensor *shared = NULL;
    /* qwen2_moe runs its shared expert first, deepseek after the routed ones */
    if (c->shared && !c->ungated) shared = mtk_module_forward(mtk_module_child_at(m, 2, NULL), flat);
    int32_t gate_at = c->experts_first ? 1 : 0;
    mtk_module_io route = { .in = { flat }, .nin = 1 };
    if (!mtk_module_call(mtk_module_child_at(m, gate_at, NULL), &route)) return false;
    mtk_module_io expert = { .in = { flat, route.out[2], route.out[1] }, .nin = 3 };
    if (!mtk_module_call(mtk_module_child_at(m, 1 - gate_at, NULL), &expert)) return false;
    mtk_tensor *out = expert.out[0];
    if (c->shared && c->ungated) {
        /* experts(...).view(shape) + shared_experts(residuals) */
        shared = mtk_module_forward(mtk_module_child_at(m, 2, NULL), x);                  /* (B, S, H) */
        io->out[0] = mtk_add(ctx, mtk_view(ctx, out, x->shape, 3), shared);
        io->nout = 1;
        return io->out[0] != NULL;
    } else if (c->shared) {
        mtk_tensor *gate = mtk_sigmoid(ctx, mtk_module_forward(mtk_module_child_at(m, 3, NULL), flat)); /* (T, 1) */
        out = mtk_add(ctx, out, mtk_mul(ctx, gate, shared));
    }
    io->out[0] = mtk_reshape(ctx, out, x->shape, 3);
    io->nout = 1;
    return io->out[0] != NULL;
}

const mtk_module_type models_decoder_moe_block_base = { "SparseMoeBlock", moe_forward, NULL, NULL };

mtk_module *models_decoder_moe(mtk_ctx *ctx, const decoder_types *t, const decoder_spec *spec)
{
    bool deepseek = spec->moe == MOE_DEEPSEEK;
    mtk_module *router =
        deepseek ? grouped_router(ctx, t, spec) : mtk_module_new(ctx, &t->router, sizeof(router_config));
    mtk_module *experts = mtk_module_new(ctx, &t->experts, sizeof(experts_config));
    mtk_module *block = mtk_module_new(ctx, &t->moe_block, sizeof(moe_config));
    if (!router || !experts || !block) return NULL;
    if (!deepseek)
        *(router_config *)mtk_module_config(router) =
        (router_config){ spec->experts, spec->top_k, spec->moe == MOE_MIXTRAL || spec->norm_topk_prob,
                         spec->moe == MOE_MIXTRAL, spec->initializer_range };
    *(experts_config *)mtk_module_config(experts) =
        (experts_config){ spec->experts, spec->top_k, spec->moe_intermediate, spec->initializer_range,
                         spec->experts_batched_mm, spec->experts_grouped_mm };
    *(moe_config *)mtk_module_config(block) =
        (moe_config){ spec->moe == MOE_QWEN2 || deepseek, spec->moe_experts_first, deepseek };
    int64_t router_shape[2] = { spec->experts, spec->hidden };
    int64_t gate_up_shape[3] = { spec->experts, 2 * spec->moe_intermediate, spec->hidden };
    int64_t down_shape[3] = { spec->experts, spec->hidden, spec->moe_intermediate };
    if ((!deepseek && !mtk_module_new_parameter(router, "weight", router_shape, 2)) ||
        !mtk_module_new_parameter(experts, "gate_up_proj", gate_up_shape, 3) ||
        !mtk_module_new_parameter(experts, "down_proj", down_shape, 3) ||
        !mtk_module_add(experts, "act_fn", mtk_nn_activation(ctx, spec->act)))
        return NULL;
    mtk_module *first = deepseek ? router : mtk_module_finish(router), *second = mtk_module_finish(experts);
    const char *first_name = "gate", *second_name = "experts";
    if (spec->moe_experts_first) {
        mtk_module *swap = first;
        first = second, second = swap;
        first_name = "experts", second_name = "gate";
    }
    if (!mtk_module_add(block, first_name, first) || !mtk_module_add(block, second_name, second)) return NULL;
    if (spec->moe == MOE_QWEN2 &&
        (!mtk_module_add(block, "shared_expert", models_decoder_mlp(ctx, t, spec, spec->shared_intermediate)) ||
         !mtk_module_add(block, "shared_expert_gate", mtk_nn_linear(ctx, spec->hidden, 1, false))))
        return NULL;
    if (deepseek &&
        !mtk_module_add(block, "shared_experts", models_decoder_mlp(ctx, t, spec, spec->shared_intermediate)))
        return NULL;
    return mtk_module_finish(block);
}

/* ----------------------------------------------------------- active params */

/* The parameters of one routed expert. */
static int64_t expert_numel(const decoder_spec *spec)
{
    int64_t h = spec->hidden, i = spec->moe_intermediate;
    if (spec->moe == MOE_GPT_OSS) return h * 2 * i + 2 * i + i * h + h; /* gate_up, its bias, down, its bias */
    return 3 * h * i;
}

void models_decoder_note_active(model_config *c, const decoder_spec *spec, mtk_module *m)
{
    if (!m || spec->moe == MOE_NONE) return;
    int64_t sparse = 0;
    for (int64_t i = 0; i < spec->layers; i++) sparse += models_decoder_layer_is_sparse(spec, i);
    int64_t total = mtk_module_num_parameters(m, false);
    int64_t idle = sparse * (spec->experts - spec->top_k) * expert_numel(spec);
    c->active_params = total - idle;
    char *note = mtk_ctx_alloc(c->ctx, 160);
    if (!note) return;
    snprintf(note, 160, "active parameters per token: %lld of %lld (%lld of %lld experts in each of %lld MoE layers)",
             (long long)(total - idle), (long long)total, (long long)spec->top_k, (long long)spec->experts,
             (long long)sparse);
    models_cfg_note(c, note);
}
