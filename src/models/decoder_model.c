/* The decoder-only model: <Prefix>DecoderLayer, <Prefix>Model (embed_tokens,
 * layers, norm, rotary_emb), <Prefix>ForCausalLM (model, lm_head, tied to
 * the embedding when tie_word_embeddings), and the config fields every
 * decoder family shares. */
#include "models/blocks.h"
#include "models/decoder.h"
#include "mtk/models.h"
#include "mtk/ops.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* ------------------------------------------------------------------ types */

static bool layer_forward(mtk_module *m, mtk_module_io *io);
static bool model_forward(mtk_module *m, mtk_module_io *io);
static bool causal_lm_forward(mtk_module *m, mtk_module_io *io);

static const mtk_module_type layer_base = { "DecoderLayer", layer_forward, NULL, NULL };
static const mtk_module_type model_base = { "Model", model_forward, NULL, NULL };
static const mtk_module_type causal_lm_base = { "ForCausalLM", causal_lm_forward, NULL, NULL };
static bool wrapper_forward(mtk_module *m, mtk_module_io *io);

bool models_decoder_types_init(mtk_ctx *ctx, decoder_types *t, const char *prefix)
{
    return models_blocks_named_type(ctx, &t->causal_lm, &causal_lm_base, prefix) &&
           models_blocks_named_type(ctx, &t->model, &model_base, prefix) &&
           models_blocks_named_type(ctx, &t->layer, &layer_base, prefix) &&
           models_blocks_named_type(ctx, &t->attention, &models_decoder_attention_base, prefix) &&
           models_blocks_named_type(ctx, &t->mlp, &models_decoder_mlp_base, prefix) &&
           models_blocks_named_type(ctx, &t->norm, &models_decoder_norm_base, prefix) &&
           models_blocks_named_type(ctx, &t->rotary, &models_decoder_rotary_base, prefix) &&
           models_blocks_named_type(ctx, &t->embedding, &models_decoder_embedding_base, prefix) &&
           models_blocks_named_type(ctx, &t->moe_block, &models_decoder_moe_block_base, prefix) &&
           models_blocks_named_type(ctx, &t->router, &models_decoder_router_base, prefix) &&
           models_blocks_named_type(ctx, &t->experts, &models_decoder_experts_base, prefix);
}

/* ---------------------------------------------------------- decoder layer */

typedef struct layer_config {
    bool sandwich; /* gemma2: post_attention_layernorm on the attention output,
                      pre/post_feedforward_layernorm around the MLP */
    bool dropout;  /* phi3: resid_attn_dropout, resid_mlp_dropout       */
} layer_config;

/* Child indices, in registration order. */
enum { L_ATTN, L_MLP, L_INPUT_NORM, L_POST_ATTN_NORM, L_PRE_FF_NORM, L_POST_FF_NORM };
enum { L_ATTN_DROPOUT = 4, L_MLP_DROPOUT = 5 };

static mtk_module *child(mtk_module *m, int32_t i) { return mtk_module_child_at(m, i, NULL); }

/* forward(x (B, S, hidden), cos, sin) -> (B, S, hidden); with a KV cache
 * forward(x, cos, sin, past_k, past_v[, mask]) -> (h, keys, values), the
 * attention's (see attention_forward). */
static bool layer_forward(mtk_module *m, mtk_module_io *io)
{
    mtk_ctx *ctx = mtk_module_ctx(m);
    const layer_config *c = mtk_module_config(m);
    mtk_tensor *x = io->in[0];
    mtk_module_io attn = { .in = { mtk_module_forward(child(m, L_INPUT_NORM), x) }, .nin = io->nin };
    for (int32_t i = 1; i < io->nin; i++) attn.in[i] = io->in[i];
    if (!mtk_module_call(child(m, L_ATTN), &attn)) return false;
    mtk_tensor *h = attn.out[0];
    if (c->sandwich) h = mtk_module_forward(child(m, L_POST_ATTN_NORM), h);
    if (c->dropout) h = mtk_module_forward(child(m, L_ATTN_DROPOUT), h);
    x = mtk_add(ctx, x, h);
    h = mtk_module_forward(child(m, c->sandwich ? L_PRE_FF_NORM : L_POST_ATTN_NORM), x);
    h = mtk_module_forward(child(m, L_MLP), h);
    if (c->sandwich) h = mtk_module_forward(child(m, L_POST_FF_NORM), h);
    if (c->dropout) h = mtk_module_forward(child(m, L_MLP_DROPOUT), h);
    io->out[0] = mtk_add(ctx, x, h);
    io->nout = attn.nout >= 3 ? 3 : 1; /* the cache's keys and values, not eager's weights */
    for (int32_t i = 1; i < io->nout; i++) io->out[i] = attn.out[i];
    return io->out[0] != NULL;
}

bool models_decoder_layer_is_sparse(const decoder_spec *spec, int64_t index)
{
    if (spec->moe == MOE_NONE) return false;
    if (spec->moe == MOE_MIXTRAL || spec->moe == MOE_GPT_OSS) return true;
    if (index < spec->first_dense) return false;
    for (int32_t i = 0; i < spec->n_mlp_only; i++)
        if (spec->mlp_only[i] == index) return false;
    return spec->experts > 0 && (index + 1) % spec->sparse_step == 0;
}

mtk_module *models_decoder_layer(mtk_ctx *ctx, const decoder_types *t, const decoder_spec *spec, int64_t index)
{
    mtk_module *m = mtk_module_new(ctx, &t->layer, sizeof(layer_config));
    if (!m) return NULL;
    layer_config *c = mtk_module_config(m);
    c->sandwich = spec->sandwich_norms;
    c->dropout = spec->resid_dropout >= 0;
    mtk_module *mlp;
    if (!models_decoder_layer_is_sparse(spec, index)) mlp = models_decoder_mlp(ctx, t, spec, spec->intermediate);
    else if (spec->moe == MOE_GPT_OSS || spec->moe == MOE_LLAMA4) mlp = models_decoder_moe_fused(ctx, t, spec);
    else mlp = models_decoder_moe(ctx, t, spec);
    bool ok = mtk_module_add(m, "self_attn", models_decoder_attention(ctx, t, spec, index)) &&
              mtk_module_add(m, spec->mlp_name ? spec->mlp_name : "mlp", mlp) &&
              mtk_module_add(m, "input_layernorm", models_decoder_norm(ctx, t, spec)) &&
              mtk_module_add(m, "post_attention_layernorm", models_decoder_norm(ctx, t, spec));
    if (ok && c->sandwich)
        ok = mtk_module_add(m, "pre_feedforward_layernorm", models_decoder_norm(ctx, t, spec)) &&
             mtk_module_add(m, "post_feedforward_layernorm", models_decoder_norm(ctx, t, spec));
    if (ok && c->dropout)
        ok = mtk_module_add(m, "resid_attn_dropout", mtk_nn_dropout(ctx, spec->resid_dropout)) &&
             mtk_module_add(m, "resid_mlp_dropout", mtk_nn_dropout(ctx, spec->resid_dropout));
    return ok ? mtk_module_finish(m) : NULL;
}

/* ------------------------------------------------------------ base model */

enum { M_EMBED, M_LAYERS, M_NORM, M_ROTARY };

typedef struct model_config {
    uint8_t masks;               /* DECODER_MASK_*, for the forward with a cache */
    int64_t mask_window;
    double embedding_multiplier; /* granite; 1: none */
    int64_t padding_idx;         /* pad_token_id or MTK_NN_NO_PADDING_IDX */
} model_config_;

/* forward(input_ids (B, S) int64[, attention_mask (B, S)[, position_ids
 * (B or 1, S)]]) -> last hidden state (B, S, hidden).  With a mask or
 * positions it runs as transformers does, through the cached forward
 * with a fresh cache (masking_utils' masks). */
static bool model_forward(mtk_module *m, mtk_module_io *io)
{
    mtk_ctx *ctx = mtk_module_ctx(m);
    mtk_tensor *ids = io->in[0];
    if (ids->ndim != 2 || !mtk_dtype_is_integral(ids->dtype, false))
        return mtk_error(ctx, MTK_ERR_SHAPE,
                         "%s: expects token ids (batch, sequence) of an integer dtype, got %d dim%s of %s (try "
                         "--input BxS, e.g. 1x2048)",
                         mtk_module_type_name(m), (int)ids->ndim, ids->ndim == 1 ? "" : "s", mtk_dtype_name(ids->dtype));
    if (io->nin > 1) {
        mtk_kv_cache *cache = mtk_kv_cache_new(m);
        mtk_lm_step step = { .attention_mask = io->in[1] != NULL, .padding_mask = io->in[1],
                             .position_ids = io->nin > 2 ? io->in[2] : NULL };
        io->out[0] = cache ? mtk_lm_forward_cached(m, ids, cache, &step) : NULL;
        io->nout = 1;
        return io->out[0] != NULL;
    }
    mtk_tensor *h = mtk_module_forward(child(m, M_EMBED), ids); /* (B, S, hidden) */
    double multiplier = ((const model_config_ *)mtk_module_config(m))->embedding_multiplier;
    if (multiplier != 1.0) h = mtk_mul_scalar(ctx, h, mtk_value_float(multiplier));
    io->out[0] = models_decoder_run_layers(child(m, M_ROTARY), child(m, M_LAYERS), child(m, M_NORM), h);
    io->nout = 1;
    return io->out[0] != NULL;
}

mtk_tensor *models_decoder_run_layers(mtk_module *rotary, mtk_module *layers, mtk_module *norm, mtk_tensor *h)
{
    return models_decoder_run_layers_masked(rotary, layers, norm, h, NULL, NULL);
}

mtk_tensor *models_decoder_run_layers_masked(mtk_module *rotary, mtk_module *layers, mtk_module *norm, mtk_tensor *h,
                                             mtk_tensor *mask, mtk_tensor *positions)
{
    /* -> cos, sin (gemma3: full, then sliding) at positions (NULL: 0..S-1) */
    mtk_module_io cos_sin = { .in = { h, positions }, .nin = positions ? 2 : 1 };
    if (!h || !mtk_module_call(rotary, &cos_sin)) return NULL;
    for (int32_t i = 0; i < mtk_module_child_count(layers); i++) {
        mtk_module *child_layer = mtk_module_child_at(layers, i, NULL);
        mtk_module_io layer = { .in = { h, NULL, NULL, mask }, .nin = mask ? 4 : 3 };
        models_decoder_layer_rope(&cos_sin, child_layer, &layer.in[1], &layer.in[2]);
        if (!mtk_module_call(child_layer, &layer)) return NULL;
        h = layer.out[0];
    }
    return mtk_module_forward(norm, h);
}

void models_decoder_layer_rope(const mtk_module_io *cos_sin, mtk_module *layer, mtk_tensor **cos, mtk_tensor **sin)
{
    int32_t at = 0;
    if (cos_sin->nout == 4) {
        decoder_cache_shape shape;
        models_decoder_attention_shape(child(layer, L_ATTN), &shape);
        at = shape.window > 0 ? 2 : 0;
    }
    *cos = cos_sin->out[at];
    *sin = cos_sin->out[at + 1];
}

static mtk_module *base_model(mtk_ctx *ctx, const decoder_types *t, const decoder_spec *spec)
{
    mtk_module *m = mtk_module_new(ctx, &t->model, sizeof(model_config_));
    mtk_module *layers = mtk_nn_module_list(ctx);
    if (!m || !layers) return NULL;
    double multiplier = spec->embedding_multiplier;
    *(model_config_ *)mtk_module_config(m) = (model_config_){ spec->masks ? spec->masks : DECODER_MASK_FULL,
                                                              spec->mask_window, multiplier != 0 ? multiplier : 1.0,
                                                              spec->padding_idx };
    decoder_layer_builder layer = spec->layer_builder ? spec->layer_builder : models_decoder_layer;
    for (int64_t i = 0; i < spec->layers; i++)
        if (!mtk_nn_module_list_append(layers, layer(ctx, t, spec, i))) return NULL;
    bool ok = mtk_module_add(m, "embed_tokens", models_decoder_embedding(ctx, t, spec)) &&
              mtk_module_add(m, "layers", layers) && mtk_module_add(m, "norm", models_decoder_norm(ctx, t, spec)) &&
              mtk_module_add(m, "rotary_emb", models_decoder_rotary(ctx, t, spec));
    return ok ? mtk_module_finish(m) : NULL;
}

/* -------------------------------------------------------------- causal LM */

typedef struct causal_lm_config {
    double final_softcap;  /* gemma2: logits = tanh(logits / cap) * cap */
    double logits_scaling; /* granite: logits / scaling; 1: none        */
} causal_lm_config;

/* forward(input_ids (B, S)) -> logits (B, S, vocab) */
static bool causal_lm_forward(mtk_module *m, mtk_module_io *io)
{
    mtk_ctx *ctx = mtk_module_ctx(m);
    const causal_lm_config *c = mtk_module_config(m);
    mtk_tensor *logits = mtk_module_forward(child(m, 1), mtk_module_forward(child(m, 0), io->in[0]));
    if (c->final_softcap > 0) {
        logits = mtk_div_scalar(ctx, logits, mtk_value_float(c->final_softcap));
        logits = mtk_mul_scalar(ctx, mtk_tanh(ctx, logits), mtk_value_float(c->final_softcap));
    }
    if (c->logits_scaling != 1.0) logits = mtk_div_scalar(ctx, logits, mtk_value_float(c->logits_scaling));
    io->out[0] = logits;
    io->nout = 1;
    return logits != NULL;
}

/* The families with layer stacks of their own. */
static bool (*const own_layer_families[])(mtk_module *, decoder_parts *) = {
    models_gpt2_parts_of, models_gpt_neox_parts_of, models_phi_parts_of,
};

bool models_decoder_parts_of(mtk_module *m, decoder_parts *out)
{
    memset(out, 0, sizeof *out);
    out->embedding_multiplier = out->logits_scaling = 1.0;
    const mtk_module_type *type = m ? mtk_module_type_of(m) : NULL;
    if (!type) return false;
    for (size_t i = 0; i < sizeof own_layer_families / sizeof *own_layer_families; i++)
        if (own_layer_families[i](m, out)) return true;
    mtk_module *model = m;
    if (type->forward == causal_lm_forward) {
        out->final_softcap = ((const causal_lm_config *)mtk_module_config(m))->final_softcap;
        out->logits_scaling = ((const causal_lm_config *)mtk_module_config(m))->logits_scaling;
        out->lm_head = child(m, 1);
        model = child(m, 0);
    } else if (type->forward != model_forward && type->forward != wrapper_forward) {
        /* a multimodal wrapper whose text model is its only child, language_model
           (llama4's Llama4ForConditionalGeneration as mtk builds it) */
        const char *name = NULL;
        mtk_module *inner = mtk_module_child_count(m) == 1 ? mtk_module_child_at(m, 0, &name) : NULL;
        return inner && name && strcmp(name, "language_model") == 0 && models_decoder_parts_of(inner, out);
    }
    if (mtk_module_type_of(model)->forward == wrapper_forward) /* language_model */
        model = child(model, mtk_module_child_count(model) - 1);
    if (mtk_module_type_of(model)->forward != model_forward) return false;
    const model_config_ *c = mtk_module_config(model);
    out->embed = child(model, M_EMBED);
    out->layers = child(model, M_LAYERS);
    out->norm = child(model, M_NORM);
    out->rotary = child(model, M_ROTARY);
    out->masks = c->masks;
    out->mask_window = c->mask_window;
    out->embedding_multiplier = c->embedding_multiplier;
    out->padding_idx = c->padding_idx;
    return true;
}

static const char moe_note[] =
    "MoE routing depends on the data: on meta the experts run as transformers' grouped_mm (its default) or "
    "batched_mm, whose sizes and FLOPs are set by tokens x top_k whatever the routing; other experts "
    "implementations assume balanced routing (tokens x top_k / num_experts tokens per expert)";

mtk_module *models_decoder_build(model_config *c, const decoder_spec *spec, const char *architecture)
{
    mtk_ctx *ctx = c->ctx;
    decoder_types *t = mtk_ctx_alloc(ctx, sizeof *t);
    if (!t || !models_decoder_types_init(ctx, t, spec->prefix)) return NULL;
    if (spec->causal_lm_class) t->causal_lm.name = spec->causal_lm_class;
    if (spec->model_name) t->model.name = spec->model_name; /* gemma3: Gemma3TextModel */
    /* deepseek_v3 and glm4_moe: <Prefix>MoE with a <Prefix>TopkRouter; deepseek_v3's MLA attention */
    mtk_module_type moe_named = models_decoder_moe_block_base;
    moe_named.name = "MoE";
    if (spec->mla && !models_blocks_named_type(ctx, &t->attention, &models_decoder_mla_base, spec->prefix)) return NULL;
    if (spec->moe == MOE_DEEPSEEK &&
        (!models_blocks_named_type(ctx, &t->router, &models_decoder_grouped_router_base, spec->prefix) ||
         !models_blocks_named_type(ctx, &t->moe_block, &moe_named, spec->prefix)))
        return NULL;
    if (spec->moe != MOE_NONE && spec->moe != MOE_LLAMA4) models_cfg_note(c, moe_note);
    size_t n = strlen(architecture);
    bool causal_lm = n > 11 && strcmp(architecture + n - 11, "ForCausalLM") == 0;
    mtk_module *model = base_model(ctx, t, spec);
    if (model && models_decoder_is_classifier(architecture)) return models_decoder_classifier(c, spec, model, architecture);
    if (!model || !causal_lm) return model;
    mtk_module *m = mtk_module_new(ctx, &t->causal_lm, sizeof(causal_lm_config));
    if (!m) return NULL;
    *(causal_lm_config *)mtk_module_config(m) =
        (causal_lm_config){ spec->final_softcap, spec->logits_scaling != 0 ? spec->logits_scaling : 1.0 };
    if (!mtk_module_add(m, "model", model) ||
        !mtk_module_add(m, "lm_head", mtk_nn_linear(ctx, spec->hidden, spec->vocab, false)))
        return NULL;
    if (spec->tie_embeddings && !mtk_module_tie(m, "lm_head.weight", "model.embed_tokens.weight")) return NULL;
    return mtk_module_finish(m);
}

/* ------------------------------------------------------- multimodal wrap */

/* forward(input_ids (B, S)[, attention_mask (B, S)[, position_ids]]) ->
 * language_model's (the last child's) last hidden state (B, S, hidden);
 * the mask and positions go to the text model as they come */
static bool wrapper_forward(mtk_module *m, mtk_module_io *io)
{
    mtk_module_io text = { .nin = io->nin < 3 ? io->nin : 3 };
    for (int32_t i = 0; i < text.nin; i++) text.in[i] = io->in[i];
    if (!mtk_module_call(child(m, mtk_module_child_count(m) - 1), &text)) return false;
    io->out[0] = text.out[0];
    io->nout = 1;
    return io->out[0] != NULL;
}

mtk_module *models_decoder_wrap_text(model_config *c, mtk_module *text, mtk_module *tower, mtk_module *projector,
                                     const char *prefix, const char *architecture, bool tie)
{
    mtk_ctx *ctx = c->ctx;
    decoder_parts parts;
    if (!text) return NULL;
    if (!models_decoder_parts_of(text, &parts) || parts.lm_head)
        return mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "%s: the text model is not a decoder base model", c->origin), NULL;
    mtk_module_type *types = mtk_ctx_alloc(ctx, 2 * sizeof *types);
    const mtk_module_type wrapper_base = { "Model", wrapper_forward, NULL, NULL };
    const mtk_module_type generation_base = { "ForConditionalGeneration", causal_lm_forward, NULL, NULL };
    if (!types || !models_blocks_named_type(ctx, &types[0], &wrapper_base, prefix) ||
        !models_blocks_named_type(ctx, &types[1], &generation_base, prefix))
        return NULL;
    mtk_module *model = mtk_module_new(ctx, &types[0], 0);
    if (!model) return NULL;
    if (tower && (!mtk_module_add(model, "vision_tower", tower) ||
                  !mtk_module_add(model, "multi_modal_projector", projector)))
        return NULL;
    if (!mtk_module_add(model, "language_model", text) || !mtk_module_finish(model)) return NULL;
    size_t n = strlen(architecture);
    if (n < 24 || strcmp(architecture + n - 24, "ForConditionalGeneration") != 0) return model;
    const mtk_tensor *embed = mtk_module_param_at(parts.embed, 0, NULL); /* (vocab, hidden) */
    mtk_module *m = mtk_module_new(ctx, &types[1], sizeof(causal_lm_config));
    if (!m) return NULL;
    *(causal_lm_config *)mtk_module_config(m) = (causal_lm_config){ 0, 1.0 };
    if (!mtk_module_add(m, "model", model) ||
        !mtk_module_add(m, "lm_head", mtk_nn_linear(ctx, embed->shape[1], embed->shape[0], false)))
        return NULL;
    if (tie && !mtk_module_tie(m, "lm_head.weight", "model.language_model.embed_tokens.weight")) return NULL;
    return mtk_module_finish(m);
}

/* ---------------------------------------------------------- common fields */

bool models_decoder_read_common(model_config *c, decoder_spec *spec, const char *prefix, const decoder_defaults *d)
{
    memset(spec, 0, sizeof *spec);
    spec->prefix = prefix;
    spec->partial_rotary_default = d->partial_rotary;
    spec->vocab = models_cfg_positive_required(c, "vocab_size");
    spec->layers = models_cfg_int_required(c, "num_hidden_layers");
    if (!models_cfg_check_layers(c, "num_hidden_layers", spec->layers)) return false;
    spec->intermediate = models_cfg_positive_required(c, "intermediate_size");
    if (!models_cfg_ok(c)) return false;
    if (!models_cfg_attention(c, "hidden_size", "num_attention_heads", "num_key_value_heads", d->kv_heads, "head_dim",
                       d->head_dim, &spec->attn))
        return false;
    spec->hidden = spec->attn.hidden;
    spec->eps = models_cfg_float(c, "rms_norm_eps", d->eps);
    spec->act = models_cfg_string(c, "hidden_act", d->act);
    spec->tie_embeddings = models_cfg_bool(c, "tie_word_embeddings", d->tie_embeddings);
    spec->initializer_range = models_cfg_float(c, "initializer_range", 0.02);
    /* an explicit null is None; an absent field the family's default */
    const cJSON *pad = cJSON_GetObjectItemCaseSensitive(c->root, "pad_token_id");
    spec->padding_idx = pad && cJSON_IsNull(pad) ? MTK_NN_NO_PADDING_IDX : models_cfg_int(c, "pad_token_id", d->pad_token_id);
    if (!models_cfg_ok(c)) return false;
    if (!(spec->eps > 0)) return models_cfg_fail(c, "rms_norm_eps", "must be positive, got %g", spec->eps);
    if (spec->padding_idx != MTK_NN_NO_PADDING_IDX &&
        (spec->padding_idx >= spec->vocab || spec->padding_idx < -spec->vocab))
        return models_cfg_fail(c, "pad_token_id", "%lld is not a row of the embedding (vocab_size %lld): "
                        "Padding_idx must be within num_embeddings", (long long)spec->padding_idx, (long long)spec->vocab);
    if (spec->padding_idx < 0 && spec->padding_idx != MTK_NN_NO_PADDING_IDX) spec->padding_idx += spec->vocab;
    spec->attn_scale = 1.0 / sqrt((double)spec->attn.head_dim);
    spec->resid_dropout = -1;
    spec->sparse_step = 1;
    /* transformers' attn_implementation (set by mtk_model_resolve_options'
       attention): eager is matmul-softmax-matmul, sdpa the fused op */
    const char *attn = models_cfg_string(c, "_attn_implementation", "sdpa");
    spec->eager_attention = attn && strcmp(attn, "eager") == 0;
    /* transformers' experts_implementation: batched_mm and grouped_mm (its
       default) traced op by op; anything else (eager) balanced routing */
    const char *experts = models_cfg_string(c, "_experts_implementation", "grouped_mm");
    spec->experts_batched_mm = experts && strcmp(experts, "batched_mm") == 0;
    spec->experts_grouped_mm = !experts || strcmp(experts, "grouped_mm") == 0;
    spec->rope_longrope_aliases = d->longrope_aliases;
    spec->rope_original_max = d->original_max_position;
    return models_decoder_read_rope(c, spec, d->rope_theta);
}
