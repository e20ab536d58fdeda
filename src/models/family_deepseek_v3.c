/* deepseek_v3: DeepSeek-V3 and Kimi-K2 (DeepseekV3Model,
 * DeepseekV3ForCausalLM and the classification heads): multi-head latent
 * attention (decoder_mla.c) with decoupled rope (qk_rope_head_dim, pairs
 * interleaved when rope_interleave), the first first_k_dense_replace
 * layers a dense MLP of intermediate_size, the others a DeepseekV3MoE:
 * n_routed_experts experts of moe_intermediate_size picked by sigmoid
 * scores with grouped top-k (n_group groups, the best topk_group of them,
 * num_experts_per_tok experts, e_score_correction_bias, norm_topk_prob,
 * routed_scaling_factor), plus n_shared_experts shared ones as one MLP of
 * moe_intermediate_size * n_shared_experts.
 *
 * The softmax scale is qk_head_dim^-0.5, times mscale^2 where the rope
 * type is not the default and the rope object has mscale_all_dim (yarn's
 * 0.1 * mscale_all_dim * ln(factor) + 1).  The published checkpoints
 * also hold num_nextn_predict_layers multi-token-prediction layers
 * (model.layers.61 of DeepSeek-V3) that transformers does not build; mtk
 * builds what transformers builds. */
#include "models/decoder.h"

#include <math.h>
#include <string.h>

/* An int field that may be null (q_lora_rank: None is a plain q_proj):
 * 0 when null, the default when absent. */
static int64_t nullable_rank(model_config *c, const char *key, int64_t dflt)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(c->root, key); /* models_cfg_get reads null as absent */
    if (v && cJSON_IsNull(v)) return 0;
    return models_cfg_positive(c, key, dflt);
}

/* yarn_get_mscale(factor, mscale_all_dim)^2 when the rope type is not the
 * default and mscale_all_dim is set, else 1. */
static double mscale_squared(model_config *c, const decoder_spec *spec)
{
    if (spec->rope.kind == ROPE_DEFAULT) return 1.0;
    const char *obj_name = models_cfg_has(c, "rope_parameters") ? "rope_parameters" : "rope_scaling";
    double all_dim = models_cfg_obj_float(c, models_cfg_get(c, obj_name), obj_name, "mscale_all_dim", 0.0);
    if (all_dim == 0 || spec->rope.factor <= 1) return 1.0;
    double m = 0.1 * all_dim * log(spec->rope.factor) + 1.0;
    return m * m;
}

static bool read_mla(model_config *c, decoder_spec *spec)
{
    mla_dims *d = &spec->mla_dims;
    d->q_lora_rank = nullable_rank(c, "q_lora_rank", 1536);
    d->kv_lora_rank = models_cfg_positive(c, "kv_lora_rank", 512);
    d->qk_nope_dim = models_cfg_positive(c, "qk_nope_head_dim", 128);
    d->qk_rope_dim = models_cfg_positive(c, "qk_rope_head_dim", 64);
    d->v_head_dim = models_cfg_positive(c, "v_head_dim", 128);
    d->interleave = models_cfg_bool(c, "rope_interleave", true);
    if (!models_cfg_ok(c)) return false;
    spec->mla = true;
    /* the config sets head_dim = qk_rope_head_dim: the rotary embedding's size */
    if (spec->attn.head_dim != d->qk_rope_dim) {
        spec->attn.head_dim = d->qk_rope_dim;
        if (!models_decoder_read_rope(c, spec, 10000.0)) return false;
    }
    spec->attn_scale = mscale_squared(c, spec) / sqrt((double)(d->qk_nope_dim + d->qk_rope_dim));
    return models_cfg_ok(c);
}

static bool read_moe(model_config *c, decoder_spec *spec)
{
    spec->moe = MOE_DEEPSEEK;
    spec->moe_experts_first = true; /* experts, gate, shared_experts */
    spec->experts = models_cfg_int(c, "n_routed_experts", models_cfg_int(c, "num_local_experts", 256));
    spec->top_k = models_cfg_positive(c, "num_experts_per_tok", 8);
    spec->moe_intermediate = models_cfg_positive(c, "moe_intermediate_size", 2048);
    spec->shared_intermediate = spec->moe_intermediate * models_cfg_int(c, "n_shared_experts", 1);
    spec->n_group = models_cfg_positive(c, "n_group", 8);
    spec->topk_group = models_cfg_positive(c, "topk_group", 4);
    spec->first_dense = models_cfg_int(c, "first_k_dense_replace", 3);
    spec->norm_topk_prob = models_cfg_bool(c, "norm_topk_prob", true);
    spec->routed_scaling = models_cfg_float(c, "routed_scaling_factor", 2.5);
    if (!models_cfg_ok(c)) return false;
    if (spec->experts < 1)
        return models_cfg_fail(c, "n_routed_experts", "must be positive, got %lld", (long long)spec->experts);
    if (spec->shared_intermediate < 0) return models_cfg_fail(c, "n_shared_experts", "must be non-negative");
    if (spec->first_dense < 0) return models_cfg_fail(c, "first_k_dense_replace", "must be non-negative");
    /* the router views the scores as (T, n_group, experts / n_group) and
       sums each group's best two */
    if (spec->experts % spec->n_group != 0 || spec->experts / spec->n_group < 2)
        return models_cfg_fail(c, "n_group", "%lld groups of n_routed_experts=%lld: each group needs an equal "
                               "share of at least 2 experts", (long long)spec->n_group, (long long)spec->experts);
    if (spec->topk_group > spec->n_group)
        return models_cfg_fail(c, "topk_group", "%lld is more than n_group=%lld", (long long)spec->topk_group,
                               (long long)spec->n_group);
    if (spec->top_k > spec->experts)
        return models_cfg_fail(c, "num_experts_per_tok", "%lld is more than n_routed_experts=%lld",
                               (long long)spec->top_k, (long long)spec->experts);
    return true;
}

mtk_module *models_family_deepseek_v3_build(model_config *c, const char *architecture)
{
    decoder_defaults defaults = { .kv_heads = 0, .eps = 1e-6, .tie_embeddings = false, .act = "silu",
                                  .pad_token_id = MTK_NN_NO_PADDING_IDX, .rope_theta = 10000.0 };
    defaults.head_dim = models_cfg_positive(c, "qk_rope_head_dim", 64);
    if (!models_cfg_ok(c)) return NULL;
    decoder_spec spec;
    if (!models_decoder_read_common(c, &spec, "DeepseekV3", &defaults)) return NULL;
    spec.qkv_bias = spec.o_bias = models_cfg_bool(c, "attention_bias", false);
    if (!read_mla(c, &spec) || !read_moe(c, &spec)) return NULL;
    if (spec.first_dense >= spec.layers) spec.moe = MOE_NONE; /* every layer dense */
    mtk_module *m = models_decoder_build(c, &spec, architecture);
    if (spec.moe != MOE_NONE) models_decoder_note_active(c, &spec, m);
    return m;
}
