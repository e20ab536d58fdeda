/* phi: Phi-1, Phi-1.5 and Phi-2 (PhiModel, PhiForCausalLM): one LayerNorm
 * per layer feeding attention and MLP in parallel
 *   out = x + dropout(attn(ln(x))) + dropout(mlp(ln(x)))
 * attention with biased q/k/v and `dense` output projections, rope on the
 * first partial_rotary_factor (0.5 by default) of each head, optional
 * per-head q/k LayerNorms (qk_layernorm), an fc1/fc2 MLP (gelu_new), a
 * final_layernorm, and an lm_head with a bias; the decoders' sequence and
 * token classification heads. */
#include "models/blocks.h"
#include "models/decoder.h"
#include "mtk/ops.h"

#include <string.h>

typedef struct phi_spec {
    decoder_spec d;
    double ln_eps, resid_dropout, embd_dropout;
    bool qk_layernorm;
} phi_spec;

/* ---------------------------------------------------------------- attention */

typedef struct phi_attention_config {
    int64_t heads, kv_heads, head_dim, rotary_dim;
    double scale;
    bool qk_layernorm;
} phi_attention_config;

/* (B, S, n * D) -> (B, n, S, D) */
static mtk_tensor *heads_first(mtk_ctx *ctx, mtk_tensor *x, int64_t n, int64_t d)
{
    if (!x) return NULL;
    int64_t shape[4] = { x->shape[0], x->shape[1], n, d };
    return mtk_transpose(ctx, mtk_view(ctx, x, shape, 4), 1, 2);
}

/* rope on the first rotary_dim dims of (B, n, S, D) */
static mtk_tensor *partial_rope(mtk_ctx *ctx, mtk_tensor *x, mtk_tensor *cos, mtk_tensor *sin, int64_t rotary_dim)
{
    if (!x) return NULL;
    int64_t d = x->shape[3];
    if (rotary_dim == d) return mtk_rope(ctx, x, cos, sin, false);
    mtk_tensor *parts[2] = { mtk_rope(ctx, mtk_narrow(ctx, x, -1, 0, rotary_dim), cos, sin, false),
                             mtk_narrow(ctx, x, -1, rotary_dim, d - rotary_dim) };
    return mtk_cat(ctx, parts, 2, -1);
}

/* forward(x (B, S, hidden), cos, sin[, mask (B, 1, S, S) bool: padding])
 * -> (B, S, hidden); with a KV cache (mtk_lm_forward_cached) forward(x,
 * cos, sin, past_k, past_v (B, KV, P, D)[, mask (B, 1, S, P + S)]) -> (out,
 * keys, values), the past and this step's concatenated.  Children q_proj,
 * k_proj, v_proj, dense[, q_layernorm, k_layernorm] */
static bool phi_attention_forward(mtk_module *m, mtk_module_io *io)
{
    mtk_ctx *ctx = mtk_module_ctx(m);
    const phi_attention_config *c = mtk_module_config(m);
    mtk_tensor *x = io->in[0];
    if (io->nin < 3 || io->nin > 6 || x->ndim != 3)
        return mtk_error(ctx, MTK_ERR_SHAPE, "%s: takes hidden states (B, S, hidden), cos and sin (and past keys, "
                         "past values and a mask)", mtk_module_type_name(m));
    mtk_tensor *q = heads_first(ctx, mtk_module_forward(mtk_module_child_at(m, 0, NULL), x), c->heads, c->head_dim);
    mtk_tensor *k = heads_first(ctx, mtk_module_forward(mtk_module_child_at(m, 1, NULL), x), c->kv_heads, c->head_dim);
    mtk_tensor *v = heads_first(ctx, mtk_module_forward(mtk_module_child_at(m, 2, NULL), x), c->kv_heads, c->head_dim);
    if (c->qk_layernorm) {
        q = mtk_module_forward(mtk_module_child_at(m, 4, NULL), q);
        k = mtk_module_forward(mtk_module_child_at(m, 5, NULL), k);
    }
    q = partial_rope(ctx, q, io->in[1], io->in[2], c->rotary_dim); /* (B, H, S, D)  */
    k = partial_rope(ctx, k, io->in[1], io->in[2], c->rotary_dim); /* (B, KV, S, D) */
    int64_t merged[3] = { x->shape[0], x->shape[1], c->heads * c->head_dim };
    if (io->nin >= 5) {
        mtk_tensor *keys[2] = { io->in[3], k }, *values[2] = { io->in[4], v };
        k = mtk_cat(ctx, keys, 2, 2); /* (B, KV, P + S, D) */
        v = mtk_cat(ctx, values, 2, 2);
        decoder_attend attend = { c->heads, c->kv_heads, c->head_dim, c->scale, 0.0, false, 0, 0, NULL };
        mtk_tensor *attn = models_decoder_attend(ctx, &attend, q, k, v, io->nin == 6 ? io->in[5] : NULL, true, NULL);
        attn = mtk_reshape(ctx, mtk_transpose(ctx, attn, 1, 2), merged, 3); /* (B, S, H * D) */
        io->out[0] = mtk_module_forward(mtk_module_child_at(m, 3, NULL), attn);
        io->out[1] = k;
        io->out[2] = v;
        io->nout = 3;
        return io->out[0] && k && v;
    }
    mtk_tensor *mask = io->nin == 4 ? io->in[3] : NULL;
    if (mask && c->kv_heads != c->heads) { /* a mask turns enable_gqa off: repeat_kv */
        int64_t rep[4] = { k->shape[0], c->heads, k->shape[2], c->head_dim };
        int64_t wide[5] = { k->shape[0], c->kv_heads, c->heads / c->kv_heads, k->shape[2], c->head_dim };
        k = mtk_reshape(ctx, mtk_expand(ctx, mtk_unsqueeze(ctx, k, 2), wide, 5), rep, 4);
        v = mtk_reshape(ctx, mtk_expand(ctx, mtk_unsqueeze(ctx, v, 2), wide, 5), rep, 4);
    }
    mtk_tensor *attn = mtk_scaled_dot_product_attention(ctx, q, k, v, mask, 0.0, !mask, c->scale,
                                                        !mask && c->kv_heads != c->heads);
    attn = mtk_reshape(ctx, mtk_transpose(ctx, attn, 1, 2), merged, 3); /* (B, S, H * D) */
    io->out[0] = mtk_module_forward(mtk_module_child_at(m, 3, NULL), attn);
    io->nout = 1;
    return io->out[0] != NULL;
}

static mtk_module *phi_attention(mtk_ctx *ctx, const phi_spec *s)
{
    static const mtk_module_type type = { "PhiAttention", phi_attention_forward, NULL, NULL };
    const cfg_attention_dims *a = &s->d.attn;
    mtk_module *m = mtk_module_new(ctx, &type, sizeof(phi_attention_config));
    if (!m) return NULL;
    *(phi_attention_config *)mtk_module_config(m) = (phi_attention_config){
        a->heads, a->kv_heads, a->head_dim, s->d.rope.dim, s->d.attn_scale, s->qk_layernorm };
    int64_t q_size = a->heads * a->head_dim, kv_size = a->kv_heads * a->head_dim;
    bool ok = mtk_module_add(m, "q_proj", mtk_nn_linear(ctx, s->d.hidden, q_size, true)) &&
              mtk_module_add(m, "k_proj", mtk_nn_linear(ctx, s->d.hidden, kv_size, true)) &&
              mtk_module_add(m, "v_proj", mtk_nn_linear(ctx, s->d.hidden, kv_size, true)) &&
              mtk_module_add(m, "dense", mtk_nn_linear(ctx, q_size, s->d.hidden, true));
    if (ok && s->qk_layernorm) {
        int64_t per_head = s->d.hidden / a->heads; /* hidden // heads, as transformers sizes them */
        ok = mtk_module_add(m, "q_layernorm", mtk_nn_layer_norm(ctx, &per_head, 1, s->ln_eps, true, true)) &&
             mtk_module_add(m, "k_layernorm", mtk_nn_layer_norm(ctx, &per_head, 1, s->ln_eps, true, true));
    }
    return ok ? mtk_module_finish(m) : NULL;
}

/* ------------------------------------------------------------- MLP, layer */

/* fc2(act(fc1(x))); children activation_fn, fc1, fc2 */
static bool phi_mlp_forward(mtk_module *m, mtk_module_io *io)
{
    mtk_tensor *h = mtk_module_forward(mtk_module_child_at(m, 1, NULL), io->in[0]);
    h = mtk_module_forward(mtk_module_child_at(m, 0, NULL), h);
    io->out[0] = mtk_module_forward(mtk_module_child_at(m, 2, NULL), h);
    io->nout = 1;
    return io->out[0] != NULL;
}

static mtk_module *phi_mlp(mtk_ctx *ctx, const phi_spec *s)
{
    static const mtk_module_type type = { "PhiMLP", phi_mlp_forward, NULL, NULL };
    mtk_module *m = mtk_module_new(ctx, &type, 0);
    bool ok = m && mtk_module_add(m, "activation_fn", mtk_nn_activation(ctx, s->d.act)) &&
              mtk_module_add(m, "fc1", mtk_nn_linear(ctx, s->d.hidden, s->d.intermediate, true)) &&
              mtk_module_add(m, "fc2", mtk_nn_linear(ctx, s->d.intermediate, s->d.hidden, true));
    return ok ? mtk_module_finish(m) : NULL;
}

/* forward(x, cos, sin[, mask]) -> x + drop(attn(ln(x))) + drop(mlp(ln(x)));
 * with a KV cache (x, cos, sin, past_k, past_v[, mask]) -> (h, keys,
 * values).  Children self_attn, mlp, input_layernorm, resid_dropout */
static bool phi_layer_forward(mtk_module *m, mtk_module_io *io)
{
    mtk_ctx *ctx = mtk_module_ctx(m);
    mtk_module *dropout = mtk_module_child_at(m, 3, NULL);
    mtk_tensor *x = io->in[0], *h = mtk_module_forward(mtk_module_child_at(m, 2, NULL), x);
    mtk_module_io attn = { .in = { h }, .nin = io->nin };
    for (int32_t i = 1; i < io->nin; i++) attn.in[i] = io->in[i];
    if (!h || !mtk_module_call(mtk_module_child_at(m, 0, NULL), &attn)) return false;
    mtk_tensor *a = mtk_module_forward(dropout, attn.out[0]);
    mtk_tensor *f = mtk_module_forward(dropout, mtk_module_forward(mtk_module_child_at(m, 1, NULL), h));
    io->out[0] = mtk_add(ctx, mtk_add(ctx, a, f), x);
    io->nout = attn.nout;
    for (int32_t i = 1; i < attn.nout; i++) io->out[i] = attn.out[i];
    return io->out[0] != NULL;
}

static mtk_module *phi_layer(mtk_ctx *ctx, const phi_spec *s)
{
    static const mtk_module_type type = { "PhiDecoderLayer", phi_layer_forward, NULL, NULL };
    mtk_module *m = mtk_module_new(ctx, &type, 0);
    bool ok = m && mtk_module_add(m, "self_attn", phi_attention(ctx, s)) && mtk_module_add(m, "mlp", phi_mlp(ctx, s)) &&
              mtk_module_add(m, "input_layernorm", mtk_nn_layer_norm(ctx, &s->d.hidden, 1, s->ln_eps, true, true)) &&
              mtk_module_add(m, "resid_dropout", mtk_nn_dropout(ctx, s->resid_dropout));
    return ok ? mtk_module_finish(m) : NULL;
}

/* ------------------------------------------------------------ model, head */

/* forward(ids (B, S)) -> (B, S, hidden); children embed_tokens, layers,
 * rotary_emb, embed_dropout, final_layernorm */
static bool phi_model_forward(mtk_module *m, mtk_module_io *io)
{
    mtk_tensor *ids = io->in[0];
    if (ids->ndim != 2 || !mtk_dtype_is_integral(ids->dtype, false))
        return mtk_error(mtk_module_ctx(m), MTK_ERR_SHAPE,
                         "%s: expects token ids (batch, sequence) of an integer dtype, got %d dim%s of %s",
                         mtk_module_type_name(m), (int)ids->ndim, ids->ndim == 1 ? "" : "s", mtk_dtype_name(ids->dtype));
    mtk_tensor *h = mtk_module_forward(mtk_module_child_at(m, 0, NULL), ids);
    h = mtk_module_forward(mtk_module_child_at(m, 3, NULL), h);
    bool failed; /* in[1]: a 2-D attention_mask, padding where 0 */
    mtk_tensor *mask = models_padded_causal_mask(mtk_module_ctx(m), io->nin > 1 ? io->in[1] : NULL, 0, &failed);
    if (failed) return false;
    io->out[0] = models_decoder_run_layers_masked(mtk_module_child_at(m, 2, NULL), mtk_module_child_at(m, 1, NULL),
                                                  mtk_module_child_at(m, 4, NULL), h, mask,
                                                  io->nin > 2 ? io->in[2] : NULL);
    io->nout = 1;
    return io->out[0] != NULL;
}

/* forward(ids) -> logits (B, S, vocab) */
static bool phi_lm_forward(mtk_module *m, mtk_module_io *io)
{
    mtk_module_io base = *io; /* input_ids[, attention_mask] */
    if (!mtk_module_call(mtk_module_child_at(m, 0, NULL), &base)) return false;
    io->out[0] = mtk_module_forward(mtk_module_child_at(m, 1, NULL), base.out[0]);
    io->nout = 1;
    return io->out[0] != NULL;
}

static const mtk_module_type phi_model_type = { "PhiModel", phi_model_forward, NULL, NULL };
static const mtk_module_type phi_lm_type = { "PhiForCausalLM", phi_lm_forward, NULL, NULL };

static mtk_module *phi_model(mtk_ctx *ctx, const phi_spec *s)
{
    decoder_types *t = mtk_ctx_alloc(ctx, sizeof *t);
    if (!t || !models_decoder_types_init(ctx, t, "Phi")) return NULL;
    mtk_module *m = mtk_module_new(ctx, &phi_model_type, 0);
    mtk_module *layers = mtk_nn_module_list(ctx);
    if (!m || !layers) return NULL;
    for (int64_t i = 0; i < s->d.layers; i++)
        if (!mtk_nn_module_list_append(layers, phi_layer(ctx, s))) return NULL;
    bool ok = mtk_module_add(m, "embed_tokens", mtk_nn_embedding(ctx, s->d.vocab, s->d.hidden, s->d.padding_idx)) &&
              mtk_module_add(m, "layers", layers) && mtk_module_add(m, "rotary_emb", models_decoder_rotary(ctx, t, &s->d)) &&
              mtk_module_add(m, "embed_dropout", mtk_nn_dropout(ctx, s->embd_dropout)) &&
              mtk_module_add(m, "final_layernorm", mtk_nn_layer_norm(ctx, &s->d.hidden, 1, s->ln_eps, true, true));
    return ok ? mtk_module_finish(m) : NULL;
}

static bool probability(model_config *c, const char *key, double *out)
{
    *out = models_cfg_float(c, key, 0.0);
    return models_cfg_ok(c) && (*out >= 0 && *out <= 1 ? true : models_cfg_fail(c, key, "must be in [0, 1], got %g", *out));
}

mtk_module *models_family_phi_build(model_config *c, const char *architecture)
{
    static const decoder_defaults defaults = { .kv_heads = 0, .eps = 1e-5, .tie_embeddings = false, .act = "gelu_new",
                                               .pad_token_id = MTK_NN_NO_PADDING_IDX, .rope_theta = 10000.0 };
    phi_spec *s = mtk_ctx_alloc(c->ctx, sizeof *s);
    if (!s || !models_decoder_read_common(c, &s->d, "Phi", &defaults)) return NULL;
    /* PhiConfig's partial_rotary_factor defaults to 0.5 */
    const cJSON *rope = models_cfg_get(c, models_cfg_has(c, "rope_parameters") ? "rope_parameters" : "rope_scaling");
    if (!models_cfg_has(c, "partial_rotary_factor") && !(rope && cJSON_GetObjectItemCaseSensitive(rope, "partial_rotary_factor"))) {
        s->d.rope.dim = (int64_t)((double)s->d.attn.head_dim * 0.5);
        if (s->d.rope.dim < 2 || s->d.rope.dim % 2 != 0)
            return models_cfg_fail(c, "partial_rotary_factor", "the default 0.5 gives %lld rotary dims of head_dim %lld; they "
                            "must be even and >= 2", (long long)s->d.rope.dim, (long long)s->d.attn.head_dim),
                   NULL;
    }
    s->ln_eps = models_cfg_float(c, "layer_norm_eps", 1e-5);
    s->qk_layernorm = models_cfg_bool(c, "qk_layernorm", false);
    if (!probability(c, "resid_pdrop", &s->resid_dropout) || !probability(c, "embd_pdrop", &s->embd_dropout))
        return NULL;
    if (!(s->ln_eps > 0)) return models_cfg_fail(c, "layer_norm_eps", "must be positive, got %g", s->ln_eps), NULL;
    mtk_module *model = phi_model(c->ctx, s);
    if (model && models_decoder_is_classifier(architecture)) return models_decoder_classifier(c, &s->d, model, architecture);
    if (!model || strcmp(architecture, "PhiForCausalLM") != 0) return model;
    mtk_module *m = mtk_module_new(c->ctx, &phi_lm_type, 0);
    if (!m || !mtk_module_add(m, "model", model) ||
        !mtk_module_add(m, "lm_head", mtk_nn_linear(c->ctx, s->d.hidden, s->d.vocab, true)))
        return NULL;
    if (s->d.tie_embeddings && !mtk_module_tie(m, "lm_head.weight", "model.embed_tokens.weight")) return NULL;
    return mtk_module_finish(m);
}

/* ------------------------------------------------------ the cached forward */

/* Every layer caches (B, kv_heads, T, head_dim) keys and values. */
static void phi_layer_shape(mtk_module *layer, decoder_cache_shape *out)
{
    const phi_attention_config *a = mtk_module_config(mtk_module_child_at(layer, 0, NULL));
    *out = (decoder_cache_shape){ .kv_heads = a->kv_heads, .key_dim = a->head_dim, .value_dim = a->head_dim };
}

bool models_phi_parts_of(mtk_module *m, decoder_parts *out)
{
    const mtk_module_type *type = mtk_module_type_of(m);
    mtk_module *base = type == &phi_lm_type ? mtk_module_child_at(m, 0, NULL) : type == &phi_model_type ? m : NULL;
    if (!base) return false;
    out->embed = mtk_module_child_at(base, 0, NULL);
    out->layers = mtk_module_child_at(base, 1, NULL);
    out->rotary = mtk_module_child_at(base, 2, NULL);
    out->norm = mtk_module_child_at(base, 4, NULL);
    out->lm_head = base == m ? NULL : mtk_module_child_at(m, 1, NULL);
    out->masks = DECODER_MASK_FULL;
    out->own_layers = phi_layer_shape;
    return true;
}
