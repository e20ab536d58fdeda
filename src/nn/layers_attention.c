/* MultiheadAttention and TransformerEncoderLayer, following
 * torch.nn.functional.multi_head_attention_forward's steps (the training
 * path, without masks). */
#include "nn/layers.h"
#include "mtk/ops.h"
#include "mtk/ops/creation.h"
#include "mtk/ops/elementwise.h"
#include "mtk/ops/linalg.h"
#include "mtk/ops/view.h"

#include <math.h>
#include <string.h>

typedef struct mha_config {
    int64_t embed_dim, num_heads, head_dim;
    mtk_mha_options o;  /* kdim/vdim filled in */
    bool packed;        /* kdim == vdim == embed_dim: in_proj_weight */
} mha_config;

mtk_mha_options mtk_mha_defaults(void)
{
    return (mtk_mha_options){ .bias = true, .need_weights = true, .average_attn_weights = true };
}

/* _reset_parameters: xavier_uniform projections, zero biases (out_proj's
 * too: this runs after out_proj's own Linear init), xavier_normal bias_k/v. */
static bool mha_reset(mtk_module *m, mtk_rng *rng)
{
    const mha_config *c = mtk_module_config(m);
    if (c->packed) {
        if (!mtk_init_xavier_uniform_(mtk_module_find_tensor(m, "in_proj_weight"), 1.0, rng)) return false;
    } else {
        const char *names[3] = { "q_proj_weight", "k_proj_weight", "v_proj_weight" };
        for (int i = 0; i < 3; i++)
            if (!mtk_init_xavier_uniform_(mtk_module_find_tensor(m, names[i]), 1.0, rng)) return false;
    }
    mtk_tensor *in_bias = mtk_module_find_tensor(m, "in_proj_bias");
    if (in_bias && (!mtk_init_zeros_(in_bias) || !mtk_init_zeros_(mtk_module_find_tensor(m, "out_proj.bias"))))
        return false;
    mtk_tensor *bias_k = mtk_module_find_tensor(m, "bias_k"), *bias_v = mtk_module_find_tensor(m, "bias_v");
    return (!bias_k || mtk_init_xavier_normal_(bias_k, 1.0, rng)) &&
           (!bias_v || mtk_init_xavier_normal_(bias_v, 1.0, rng));
}

/* torch.cat([a, b], dim). */
static mtk_tensor *cat2(mtk_ctx *ctx, mtk_tensor *a, mtk_tensor *b, int64_t dim)
{
    if (!a || !b) return NULL;
    mtk_tensor *both[2] = { a, b };
    return mtk_cat(ctx, both, 2, dim);
}

/* (S, B, E) projections q, k, v of the inputs. */
static bool project(mtk_module *m, const mha_config *c, mtk_tensor *query, mtk_tensor *key, mtk_tensor *value,
                    mtk_tensor **q, mtk_tensor **k, mtk_tensor **v)
{
    mtk_ctx *ctx = mtk_module_ctx(m);
    mtk_tensor *bias = mtk_module_find_tensor(m, "in_proj_bias");
    mtk_tensor *b[3] = { NULL, NULL, NULL };
    if (bias && mtk_chunk(ctx, bias, 3, 0, b, 3) != 3) return false;
    if (!c->packed) {
        *q = mtk_linear(ctx, query, mtk_module_find_tensor(m, "q_proj_weight"), b[0]);
        *k = mtk_linear(ctx, key, mtk_module_find_tensor(m, "k_proj_weight"), b[1]);
        *v = mtk_linear(ctx, value, mtk_module_find_tensor(m, "v_proj_weight"), b[2]);
        return *q && *k && *v;
    }
    mtk_tensor *w = mtk_module_find_tensor(m, "in_proj_weight");
    if (query == key && key == value) {
        /* self-attention: one (L, B, 3E) projection, split in three */
        mtk_tensor *parts[3];
        if (mtk_chunk(ctx, mtk_linear(ctx, query, w, bias), 3, -1, parts, 3) != 3) return false;
        *q = parts[0], *k = parts[1], *v = parts[2];
        return true;
    }
    mtk_tensor *ws[3];
    if (mtk_chunk(ctx, w, 3, 0, ws, 3) != 3) return false;
    *q = mtk_linear(ctx, query, ws[0], b[0]);
    *k = mtk_linear(ctx, key, ws[1], b[1]);
    *v = mtk_linear(ctx, value, ws[2], b[2]);
    return *q && *k && *v;
}

/* (S, B, E) -> (B * H, S, hd). */
static mtk_tensor *split_heads(mtk_ctx *ctx, const mha_config *c, mtk_tensor *x, int64_t batch)
{
    if (!x) return NULL;
    int64_t shape[3] = { x->shape[0], batch * c->num_heads, c->head_dim };
    return mtk_transpose(ctx, mtk_reshape(ctx, mtk_contiguous(ctx, x), shape, 3), 0, 1);
}

static bool check_mha_inputs(mtk_module *m, const mha_config *c, mtk_tensor *q, mtk_tensor *k, mtk_tensor *v)
{
    mtk_ctx *ctx = mtk_module_ctx(m);
    char a[128], b[128];
    bool batched = q->ndim == 3;
    if ((q->ndim != 3 && q->ndim != 2) || k->ndim != q->ndim || v->ndim != q->ndim)
        return mtk_error(ctx, MTK_ERR_SHAPE,
                         "MultiheadAttention: query should be unbatched 2D or batched 3D tensor (with key and "
                         "value of the same dim) but received %dD query, %dD key and %dD value",
                         (int)q->ndim, (int)k->ndim, (int)v->ndim);
    int64_t e = q->shape[q->ndim - 1];
    if (e != c->embed_dim)
        return mtk_error(ctx, MTK_ERR_SHAPE, "MultiheadAttention: was expecting embedding dimension of %lld, but got %lld",
                         (long long)c->embed_dim, (long long)e);
    if (k->shape[k->ndim - 1] != c->o.kdim || v->shape[v->ndim - 1] != c->o.vdim)
        return mtk_error(ctx, MTK_ERR_SHAPE, "MultiheadAttention: key and value last dims %lld and %lld, expected kdim %lld and vdim %lld",
                         (long long)k->shape[k->ndim - 1], (long long)v->shape[v->ndim - 1],
                         (long long)c->o.kdim, (long long)c->o.vdim);
    if (k->ndim >= 2 && (k->shape[k->ndim - 2] != v->shape[v->ndim - 2] || (batched && k->shape[0] != v->shape[0])))
        return mtk_error(ctx, MTK_ERR_SHAPE, "MultiheadAttention: key shape %s does not match value shape %s",
                         mtk_shape_list_str(k->shape, k->ndim, a, sizeof a), mtk_shape_list_str(v->shape, v->ndim, b, sizeof b));
    return true;
}

static bool mha_forward(mtk_module *m, mtk_module_io *io)
{
    mtk_ctx *ctx = mtk_module_ctx(m);
    const mha_config *c = mtk_module_config(m);
    if (io->nin != 1 && io->nin != 3)
        return mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT,
                         "MultiheadAttention.forward takes (query, key, value) or one input for self-attention "
                         "(masks are not supported yet), got %d inputs", (int)io->nin);
    mtk_tensor *query = io->in[0], *key = io->nin == 3 ? io->in[1] : query, *value = io->nin == 3 ? io->in[2] : query;
    if (!check_mha_inputs(m, c, query, key, value)) return false;
    bool batched = query->ndim == 3, self = query == key && key == value;
    /* to (L, B, E) */
    if (batched && c->o.batch_first) {
        query = mtk_transpose(ctx, query, 0, 1);
        key = self ? query : mtk_transpose(ctx, key, 0, 1);
        value = self ? query : mtk_transpose(ctx, value, 0, 1);
    } else if (!batched) {
        query = mtk_unsqueeze(ctx, query, 1);
        key = self ? query : mtk_unsqueeze(ctx, key, 1);
        value = self ? query : mtk_unsqueeze(ctx, value, 1);
    }
    if (!query || !key || !value) return false;
    int64_t tgt_len = query->shape[0], batch = query->shape[1], e = c->embed_dim;
    mtk_tensor *q, *k, *v;
    if (!project(m, c, query, key, value, &q, &k, &v)) return false;
    if (c->o.add_bias_kv) {
        int64_t reps[3] = { 1, batch, 1 };
        k = cat2(ctx, k, mtk_repeat(ctx, mtk_module_find_tensor(m, "bias_k"), reps, 3), 0);
        v = cat2(ctx, v, mtk_repeat(ctx, mtk_module_find_tensor(m, "bias_v"), reps, 3), 0);
    }
    q = split_heads(ctx, c, q, batch); /* (B*H, L, hd) */
    k = split_heads(ctx, c, k, batch); /* (B*H, S, hd) */
    v = split_heads(ctx, c, v, batch);
    if (c->o.add_zero_attn && k && v) {
        int64_t zshape[3] = { batch * c->num_heads, 1, c->head_dim };
        mtk_tensor *zeros = mtk_zeros(ctx, zshape, 3, k->dtype);
        k = cat2(ctx, k, zeros, 1);
        v = cat2(ctx, v, zeros, 1);
    }
    if (!q || !k || !v) return false;
    int64_t src_len = k->shape[1];
    bool training = mtk_module_is_training(m);
    double dropout_p = training ? c->o.dropout : 0.0;
    mtk_tensor *out, *weights = NULL;
    if (c->o.need_weights) {
        /* softmax(q k^T / sqrt(hd)) v with the weights kept */
        mtk_tensor *scaled = mtk_mul_scalar(ctx, q, mtk_value_float(1.0 / sqrt((double)c->head_dim)));
        weights = mtk_softmax(ctx, mtk_bmm(ctx, scaled, mtk_transpose(ctx, k, -2, -1)), -1, MTK_DTYPE_UNDEFINED);
        mtk_tensor *dropped = weights;
        if (dropout_p > 0.0 && weights) dropped = mtk_dropout(ctx, weights, dropout_p, true, false);
        out = mtk_bmm(ctx, dropped, v); /* (B*H, L, hd) */
        int64_t flat[2] = { tgt_len * batch, e };
        out = mtk_reshape(ctx, mtk_contiguous(ctx, mtk_transpose(ctx, out, 0, 1)), flat, 2);
        int64_t wshape[4] = { batch, c->num_heads, tgt_len, src_len };
        weights = mtk_reshape(ctx, weights, wshape, 4);
        const int64_t heads_dim = 1;
        if (c->o.average_attn_weights) weights = mtk_mean(ctx, weights, &heads_dim, 1, false, MTK_DTYPE_UNDEFINED);
        if (!batched) weights = mtk_squeeze_dim(ctx, weights, 0);
    } else {
        int64_t qshape[4] = { batch, c->num_heads, tgt_len, c->head_dim };
        int64_t kshape[4] = { batch, c->num_heads, src_len, c->head_dim };
        out = mtk_scaled_dot_product_attention(ctx, mtk_reshape(ctx, q, qshape, 4), mtk_reshape(ctx, k, kshape, 4),
                                               mtk_reshape(ctx, v, kshape, 4), NULL, dropout_p, false, NAN,
                                               false); /* (B, H, L, hd) */
        int64_t perm[4] = { 2, 0, 1, 3 }, flat[2] = { tgt_len * batch, e };
        out = mtk_reshape(ctx, mtk_contiguous(ctx, mtk_permute(ctx, out, perm, 4)), flat, 2);
    }
    out = mtk_module_forward(mtk_module_child(m, "out_proj"), out); /* (L*B, E) */
    int64_t oshape[3] = { tgt_len, batch, e };
    out = mtk_reshape(ctx, out, oshape, 3);
    if (batched && c->o.batch_first) out = mtk_transpose(ctx, out, 0, 1);
    else if (!batched) out = mtk_squeeze_dim(ctx, out, 1);
    io->out[0] = out;
    io->nout = 1;
    if (c->o.need_weights) io->out[io->nout++] = weights;
    return out && (!c->o.need_weights || weights);
}

static const mtk_module_type mha_type = { "MultiheadAttention", mha_forward, mha_reset, NULL };

mtk_module *mtk_nn_multihead_attention(mtk_ctx *ctx, int64_t embed_dim, int64_t num_heads,
                                       const mtk_mha_options *options)
{
    mtk_mha_options o = options ? *options : mtk_mha_defaults();
    if (embed_dim <= 0 || num_heads <= 0) {
        mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT,
                  "embed_dim and num_heads must be greater than 0, got embed_dim=%lld and num_heads=%lld instead",
                  (long long)embed_dim, (long long)num_heads);
        return NULL;
    }
    if (embed_dim % num_heads != 0) {
        mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "embed_dim must be divisible by num_heads");
        return NULL;
    }
    if (!(o.dropout >= 0.0 && o.dropout <= 1.0)) {
        mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "dropout probability has to be between 0 and 1, but got %g", o.dropout);
        return NULL;
    }
    if (o.kdim <= 0) o.kdim = embed_dim;
    if (o.vdim <= 0) o.vdim = embed_dim;
    mtk_module *m = mtk_module_new(ctx, &mha_type, sizeof(mha_config));
    if (!m) return NULL;
    mha_config *c = mtk_module_config(m);
    *c = (mha_config){ embed_dim, num_heads, embed_dim / num_heads, o, o.kdim == embed_dim && o.vdim == embed_dim };
    /* torch's registration order: projections, in_proj_bias, bias_k, bias_v, out_proj */
    if (c->packed) {
        int64_t shape[2] = { 3 * embed_dim, embed_dim };
        if (!mtk_module_new_parameter(m, "in_proj_weight", shape, 2)) return NULL;
    } else {
        int64_t q[2] = { embed_dim, embed_dim }, k[2] = { embed_dim, o.kdim }, v[2] = { embed_dim, o.vdim };
        if (!mtk_module_new_parameter(m, "q_proj_weight", q, 2) || !mtk_module_new_parameter(m, "k_proj_weight", k, 2) ||
            !mtk_module_new_parameter(m, "v_proj_weight", v, 2))
            return NULL;
    }
    int64_t three_e = 3 * embed_dim, kv[3] = { 1, 1, embed_dim };
    if (o.bias && !mtk_module_new_parameter(m, "in_proj_bias", &three_e, 1)) return NULL;
    if (o.add_bias_kv &&
        (!mtk_module_new_parameter(m, "bias_k", kv, 3) || !mtk_module_new_parameter(m, "bias_v", kv, 3)))
        return NULL;
    if (!mtk_module_add(m, "out_proj", nn_ndq_linear(ctx, embed_dim, embed_dim, o.bias))) return NULL;
    return mtk_module_finish(m);
}

/* ------------------------------------------------ TransformerEncoderLayer */

typedef struct encoder_config {
    int64_t d_model, nhead;
    mtk_transformer_options o;
    bool gelu;
} encoder_config;

mtk_transformer_options mtk_transformer_defaults(void)
{
    return (mtk_transformer_options){ .dim_feedforward = 2048, .dropout = 0.1, .activation = "relu",
                                      .layer_norm_eps = 1e-5, .bias = true };
}

static mtk_tensor *child(mtk_module *m, const char *name, mtk_tensor *x)
{
    return mtk_module_forward(mtk_module_child(m, name), x);
}

/* dropout1(self_attn(x, x, x, need_weights=False)[0]) */
static mtk_tensor *self_attention_block(mtk_module *m, mtk_tensor *x)
{
    mtk_module *attn = mtk_module_child(m, "self_attn");
    if (!attn || !x) return NULL;
    mha_config *c = mtk_module_config(attn);
    bool need = c->o.need_weights;
    c->o.need_weights = false;
    mtk_module_io io = { .in = { x }, .nin = 1 };
    bool ok = mtk_module_call(attn, &io);
    c->o.need_weights = need;
    return ok ? child(m, "dropout1", io.out[0]) : NULL;
}

/* dropout2(linear2(dropout(activation(linear1(x))))) */
static mtk_tensor *feed_forward_block(mtk_module *m, mtk_tensor *x)
{
    const encoder_config *c = mtk_module_config(m);
    mtk_ctx *ctx = mtk_module_ctx(m);
    mtk_tensor *h = child(m, "linear1", x);
    h = c->gelu ? mtk_gelu(ctx, h, "none") : mtk_relu(ctx, h);
    return child(m, "dropout2", child(m, "linear2", child(m, "dropout", h)));
}

static bool encoder_forward(mtk_module *m, mtk_module_io *io)
{
    const encoder_config *c = mtk_module_config(m);
    mtk_ctx *ctx = mtk_module_ctx(m);
    mtk_tensor *x = io->in[0];
    if (c->o.norm_first) {
        x = mtk_add(ctx, x, self_attention_block(m, child(m, "norm1", x)));
        x = mtk_add(ctx, x, feed_forward_block(m, child(m, "norm2", x)));
    } else {
        x = child(m, "norm1", mtk_add(ctx, x, self_attention_block(m, x)));
        x = child(m, "norm2", mtk_add(ctx, x, feed_forward_block(m, x)));
    }
    return nn_output(io, x);
}

static const mtk_module_type encoder_type = { "TransformerEncoderLayer", encoder_forward, NULL, NULL };

mtk_module *mtk_nn_transformer_encoder_layer(mtk_ctx *ctx, int64_t d_model, int64_t nhead,
                                             const mtk_transformer_options *options)
{
    mtk_transformer_options o = options ? *options : mtk_transformer_defaults();
    const char *act = o.activation ? o.activation : "relu";
    bool gelu = strcmp(act, "gelu") == 0;
    if (!gelu && strcmp(act, "relu") != 0) {
        mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "activation should be relu/gelu, not %s", act);
        return NULL;
    }
    o.activation = NULL; /* POD config: the flag below keeps the choice */
    mtk_module *m = mtk_module_new(ctx, &encoder_type, sizeof(encoder_config));
    if (!m) return NULL;
    *(encoder_config *)mtk_module_config(m) = (encoder_config){ d_model, nhead, o, gelu };
    mtk_mha_options attn = mtk_mha_defaults();
    attn.dropout = o.dropout;
    attn.bias = o.bias;
    attn.batch_first = o.batch_first;
    int64_t norm_shape[1] = { d_model };
    bool ok = mtk_module_add(m, "self_attn", mtk_nn_multihead_attention(ctx, d_model, nhead, &attn)) &&
              mtk_module_add(m, "linear1", mtk_nn_linear(ctx, d_model, o.dim_feedforward, o.bias)) &&
              mtk_module_add(m, "dropout", mtk_nn_dropout(ctx, o.dropout)) &&
              mtk_module_add(m, "linear2", mtk_nn_linear(ctx, o.dim_feedforward, d_model, o.bias)) &&
              mtk_module_add(m, "norm1", mtk_nn_layer_norm(ctx, norm_shape, 1, o.layer_norm_eps, true, o.bias)) &&
              mtk_module_add(m, "norm2", mtk_nn_layer_norm(ctx, norm_shape, 1, o.layer_norm_eps, true, o.bias)) &&
              mtk_module_add(m, "dropout1", mtk_nn_dropout(ctx, o.dropout)) &&
              mtk_module_add(m, "dropout2", mtk_nn_dropout(ctx, o.dropout));
    return ok ? m : NULL;
}
