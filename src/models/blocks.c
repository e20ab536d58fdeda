/* Shared pieces of the gpt2, gpt_neox, bert and vit families. */
#include "models/blocks.h"
#include "mtk/ops.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

int64_t models_blocks_positive_alias(const model_config *c, const char *key, const char *alias, int64_t dflt)
{
    const char *field = !models_cfg_has(c, key) && alias && models_cfg_has(c, alias) ? alias : key;
    return models_cfg_positive(c, field, dflt);
}

int64_t models_blocks_num_labels(const model_config *c)
{
    const cJSON *labels = models_cfg_get(c, "id2label");
    if (labels) {
        if (!cJSON_IsObject(labels)) {
            models_cfg_fail(c, "id2label", "expected an object (label id -> name)");
            return 0;
        }
        return cJSON_GetArraySize(labels);
    }
    int64_t n = models_cfg_int(c, "num_labels", 2);
    if (models_cfg_ok(c) && n < 0) models_cfg_fail(c, "num_labels", "must be >= 0, got %lld", (long long)n);
    return n;
}

mtk_module *models_blocks_activation(const model_config *c, const char *field, const char *name)
{
    if (!models_cfg_ok(c)) return NULL;
    mtk_module *act = mtk_nn_activation(c->ctx, name);
    if (act) return act;
    /* restate the error with the config and the field in front */
    char message[512];
    snprintf(message, sizeof message, "%s", mtk_ctx_message(c->ctx));
    mtk_ctx_clear_error(c->ctx);
    models_cfg_fail(c, field, "%s", message);
    return NULL;
}

double models_blocks_dropout(const model_config *c, const char *key, double dflt)
{
    double p = models_cfg_float(c, key, dflt);
    if (models_cfg_ok(c) && !(p >= 0.0 && p <= 1.0)) models_cfg_fail(c, key, "a dropout probability is in [0, 1], got %g", p);
    return p;
}

double models_blocks_eps(const model_config *c, const char *key, double dflt)
{
    double eps = models_cfg_float(c, key, dflt);
    if (models_cfg_ok(c) && !(eps > 0)) models_cfg_fail(c, key, "must be positive, got %g", eps);
    return eps;
}

mtk_tensor *models_blocks_split_heads(mtk_ctx *ctx, mtk_tensor *x, int64_t n, int64_t head_dim)
{
    if (!x) return NULL;
    int64_t shape[4] = { x->shape[0], x->shape[1], n, head_dim };
    return mtk_transpose(ctx, mtk_view(ctx, x, shape, 4), 1, 2);
}

mtk_tensor *models_blocks_merge_heads(mtk_ctx *ctx, mtk_tensor *x)
{
    if (!x) return NULL;
    int64_t shape[3] = { x->shape[0], x->shape[2], x->shape[1] * x->shape[3] };
    return mtk_reshape(ctx, mtk_transpose(ctx, x, 1, 2), shape, 3);
}

mtk_tensor *models_blocks_qkv_attention(mtk_module *m, mtk_tensor *x, int64_t heads, int64_t head_dim, bool causal,
                                 double dropout, mtk_tensor *mask)
{
    mtk_ctx *ctx = mtk_module_ctx(m);
    mtk_tensor *q = models_blocks_split_heads(ctx, mtk_module_forward(blocks_child(m, 0), x), heads, head_dim);
    mtk_tensor *k = models_blocks_split_heads(ctx, mtk_module_forward(blocks_child(m, 1), x), heads, head_dim);
    mtk_tensor *v = models_blocks_split_heads(ctx, mtk_module_forward(blocks_child(m, 2), x), heads, head_dim);
    mtk_tensor *attn = mtk_scaled_dot_product_attention(ctx, q, k, v, mask, dropout, causal, 1.0 / sqrt((double)head_dim),
                                                        false);
    return models_blocks_merge_heads(ctx, attn);
}

mtk_tensor *models_blocks_run_layers(mtk_module *layers, mtk_tensor *h)
{
    for (int32_t i = 0; h && i < mtk_module_child_count(layers); i++) h = mtk_module_forward(blocks_child(layers, i), h);
    return h;
}

bool models_blocks_encoder_forward(mtk_module *m, mtk_module_io *io)
{
    io->out[0] = models_blocks_run_layers(blocks_child(m, 0), io->in[0]);
    io->nout = 1;
    return io->out[0] != NULL;
}

bool models_blocks_named_type(mtk_ctx *ctx, mtk_module_type *out, const mtk_module_type *base, const char *prefix)
{
    size_t n = strlen(prefix) + strlen(base->name) + 1;
    char *name = mtk_ctx_alloc(ctx, n);
    if (!name) return false;
    snprintf(name, n, "%s%s", prefix, base->name);
    *out = *base;
    out->name = name;
    return true;
}

bool models_blocks_held_until_here(mtk_ctx *ctx, mtk_tensor *t)
{
    return !t || mtk_narrow(ctx, t, -1, 0, 0) != NULL;
}

mtk_tensor *models_blocks_positions(mtk_ctx *ctx, int64_t n, const mtk_tensor *like)
{
    if (!like || !mtk_ctx_push_device(ctx, like->device)) return NULL;
    mtk_tensor *positions = mtk_arange_int(ctx, 0, n, 1, MTK_INT64);
    mtk_ctx_pop_device(ctx);
    return positions;
}

bool models_blocks_check_token_ids(mtk_module *m, const mtk_tensor *ids, int64_t max_positions, const char *field)
{
    mtk_ctx *ctx = mtk_module_ctx(m);
    if (ids->ndim != 2 || !mtk_dtype_is_integral(ids->dtype, false))
        return mtk_error(ctx, MTK_ERR_SHAPE,
                         "%s: expects token ids (batch, sequence) of an integer dtype, got %d dim%s of %s (try "
                         "--input BxS, e.g. 1x512)",
                         mtk_module_type_name(m), (int)ids->ndim, ids->ndim == 1 ? "" : "s", mtk_dtype_name(ids->dtype));
    if (max_positions > 0 && ids->shape[1] > max_positions)
        return mtk_error(ctx, MTK_ERR_SHAPE,
                         "%s: a sequence of %lld tokens is longer than the %lld positions the model has (%s)",
                         mtk_module_type_name(m), (long long)ids->shape[1], (long long)max_positions, field);
    return true;
}

/* create_bidirectional_mask for sdpa: the 2-D attention_mask (B, S) of
 * 0 / 1 as bool (B, 1, S, S), key j seen where mask[b, j]; NULL (no
 * error) when it has no 0, where transformers passes no mask. */
mtk_tensor *models_blocks_bidirectional_mask(mtk_ctx *ctx, mtk_tensor *mask, bool *failed)
{
    *failed = false;
    if (!mask) return NULL;
    mtk_tensor *b = mtk_contiguous(ctx, mtk_to_dtype(ctx, mask, MTK_BOOL));
    const uint8_t *v = b && b->device != MTK_DEVICE_META ? mtk_tensor_data(b) : NULL;
    bool padded = b && b->device == MTK_DEVICE_META;
    for (int64_t i = 0; v && i < mtk_tensor_numel(b) && !padded; i++) padded = v[i] == 0;
    if (!b) *failed = true;
    if (!padded) return NULL;
    int64_t s = b->shape[1], keys[4] = { b->shape[0], 1, 1, s }, full[4] = { b->shape[0], 1, s, s };
    mtk_tensor *out = mtk_expand(ctx, mtk_view(ctx, b, keys, 4), full, 4);
    if (!out) *failed = true;
    return out;
}
