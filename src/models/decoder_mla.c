/* Multi-head latent attention (MLA) of DeepSeek-V3 and Kimi-K2, as
 * transformers 5's DeepseekV3Attention lays it out:
 *
 *   q_proj (no q_lora_rank) or q_a_proj, q_a_layernorm, q_b_proj: each
 *     head's query, qk_nope_dim plain dims then qk_rope_dim rotated ones;
 *   kv_a_proj_with_mqa: the kv latent (kv_lora_rank, normed by
 *     kv_a_layernorm) and one rotated key of qk_rope_dim shared by every
 *     head;
 *   kv_b_proj: the latent decompressed into each head's plain key
 *     (qk_nope_dim) and value (v_head_dim);
 *   o_proj: heads * v_head_dim -> hidden.
 *
 * The two low-rank norms keep RMSNorm's default eps (1e-6), not
 * rms_norm_eps.  With a KV cache the latents are cached (as transformers
 * 5's DynamicCache gets them: keys (B, 1, T, kv_lora_rank), values
 * (B, 1, T, qk_rope_dim)) and decompressed at every step. */
#include "models/decoder.h"
#include "mtk/ops.h"

#include <math.h>

typedef struct mla_config {
    int64_t heads;
    mla_dims d;
    double scale;
    bool eager;
} mla_config;

/* Child indices after the query's one (q_proj) or three (q_a_proj,
 * q_a_layernorm, q_b_proj) children. */
enum { KV_A, KV_NORM, KV_B, O_PROJ };

static int32_t q_children(const mla_config *c) { return c->d.q_lora_rank > 0 ? 3 : 1; }

static mtk_module *child(mtk_module *m, int32_t i) { return mtk_module_child_at(m, i, NULL); }

/* apply_rotary_pos_emb_interleave's result: the pairs (x0, x1), (x2, x3)...
 * taken apart into (x0, x2, ...; x1, x3, ...), then rotate_half's rope.
 * (B, n, S, D) -> (B, n, S, D), cos/sin (., S, D). */
static mtk_tensor *rope(mtk_ctx *ctx, mtk_tensor *x, mtk_tensor *cos, mtk_tensor *sin, bool interleave)
{
    if (!x) return NULL;
    if (interleave) {
        int64_t b = x->shape[0], n = x->shape[1], s = x->shape[2], d = x->shape[3];
        int64_t pairs[5] = { b, n, s, d / 2, 2 }, flat[4] = { b, n, s, d };
        x = mtk_reshape(ctx, mtk_transpose(ctx, mtk_reshape(ctx, x, pairs, 5), 3, 4), flat, 4);
    }
    return mtk_rope(ctx, x, cos, sin, false);
}

/* forward(x (B, S, hidden), cos, sin) -> (B, S, hidden); with a KV cache
 * forward(x, cos, sin, past_latent, past_rope_key[, mask]) -> (out,
 * latents, rope keys), both concatenated along T. */
static bool mla_forward(mtk_module *m, mtk_module_io *io)
{
    mtk_ctx *ctx = mtk_module_ctx(m);
    const mla_config *c = mtk_module_config(m);
    const mla_dims *d = &c->d;
    mtk_tensor *x = io->in[0], *cos = io->in[1], *sin = io->in[2];
    if (io->nin != 3 && io->nin != 5 && io->nin != 6)
        return mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT,
                         "%s: takes hidden states, cos and sin (and past latents, past rope keys and a mask)",
                         mtk_module_type_name(m));
    if (x->ndim != 3)
        return mtk_error(ctx, MTK_ERR_SHAPE, "%s: expected hidden states (B, S, hidden), got %d dim%s",
                         mtk_module_type_name(m), (int)x->ndim, x->ndim == 1 ? "" : "s");
    bool cached = io->nin > 3;
    int64_t b = x->shape[0], s = x->shape[1], qk_dim = d->qk_nope_dim + d->qk_rope_dim;
    int32_t at = q_children(c);
    mtk_tensor *q = at == 1 ? mtk_module_forward(child(m, 0), x)
                            : mtk_module_forward(child(m, 2), mtk_module_forward(child(m, 1),
                                                                                 mtk_module_forward(child(m, 0), x)));
    int64_t qshape[4] = { b, s, c->heads, qk_dim };
    q = mtk_transpose(ctx, mtk_view(ctx, q, qshape, 4), 1, 2);                   /* (B, H, S, qk)    */
    mtk_tensor *q_pass = mtk_narrow(ctx, q, -1, 0, d->qk_nope_dim);               /* (B, H, S, nope)  */
    mtk_tensor *q_rot = mtk_narrow(ctx, q, -1, d->qk_nope_dim, d->qk_rope_dim);   /* (B, H, S, rope)  */

    mtk_tensor *compressed = mtk_module_forward(child(m, at + KV_A), x);          /* (B, S, r + rope) */
    mtk_tensor *latent = mtk_narrow(ctx, compressed, -1, 0, d->kv_lora_rank);
    latent = mtk_module_forward(child(m, at + KV_NORM), latent);                  /* (B, S, r)        */
    mtk_tensor *k_rot = mtk_narrow(ctx, compressed, -1, d->kv_lora_rank, d->qk_rope_dim);
    latent = mtk_unsqueeze(ctx, latent, 1);                                       /* (B, 1, S, r)     */
    k_rot = mtk_unsqueeze(ctx, k_rot, 1);                                         /* (B, 1, S, rope)  */
    q_rot = rope(ctx, q_rot, cos, sin, d->interleave);
    k_rot = rope(ctx, k_rot, cos, sin, d->interleave);
    if (cached) {
        mtk_tensor *latents[2] = { io->in[3], latent }, *keys[2] = { io->in[4], k_rot };
        latent = mtk_cat(ctx, latents, 2, 2);                                     /* (B, 1, T, r)     */
        k_rot = mtk_cat(ctx, keys, 2, 2);                                         /* (B, 1, T, rope)  */
    }
    mtk_tensor *parts[2] = { q_pass, q_rot };
    mtk_tensor *query = mtk_cat(ctx, parts, 2, -1);                               /* (B, H, S, qk)    */

    /* expand_kv: the latent decompressed per head */
    int64_t t = latent ? latent->shape[2] : 0;
    int64_t kvshape[4] = { b, t, c->heads, d->qk_nope_dim + d->v_head_dim };
    mtk_tensor *kv = mtk_module_forward(child(m, at + KV_B), latent);            /* (B, 1, T, H*(nope+v)) */
    kv = mtk_transpose(ctx, mtk_view(ctx, kv, kvshape, 4), 1, 2);                 /* (B, H, T, nope + v)   */
    mtk_tensor *k_nope = mtk_narrow(ctx, kv, -1, 0, d->qk_nope_dim);
    mtk_tensor *value = mtk_narrow(ctx, kv, -1, d->qk_nope_dim, d->v_head_dim);   /* (B, H, T, v)     */
    int64_t rshape[4] = { b, c->heads, t, d->qk_rope_dim };
    mtk_tensor *kparts[2] = { k_nope, mtk_expand(ctx, k_rot, rshape, 4) };
    mtk_tensor *key = mtk_cat(ctx, kparts, 2, -1);                                /* (B, H, T, qk)    */

    decoder_attend attend = { c->heads, c->heads, qk_dim, c->scale, 0.0, c->eager, 0, 0, NULL };
    mtk_tensor *weights = NULL;
    mtk_tensor *attn = models_decoder_attend(ctx, &attend, query, key, value, io->nin == 6 ? io->in[5] : NULL, cached,
                                             &weights);
    int64_t merged[3] = { b, s, c->heads * d->v_head_dim };
    attn = mtk_reshape(ctx, mtk_transpose(ctx, attn, 1, 2), merged, 3);           /* (B, S, H * v)    */
    io->out[0] = mtk_module_forward(child(m, at + O_PROJ), attn);
    io->nout = 1;
    if (cached) {
        io->out[1] = latent;
        io->out[2] = k_rot;
        io->nout = 3;
    }
    if (weights) io->out[io->nout++] = weights; /* eager: the attention weights, last */
    return io->out[0] != NULL && io->out[io->nout - 1] != NULL;
}

const mtk_module_type models_decoder_mla_base = { "Attention", mla_forward, NULL, NULL };

bool models_decoder_mla_shape(const mtk_module *attn, decoder_cache_shape *out)
{
    const mtk_module_type *type = mtk_module_type_of(attn);
    if (!type || type->forward != mla_forward) return false;
    const mla_config *c = mtk_module_config(attn);
    *out = (decoder_cache_shape){ 1, c->d.kv_lora_rank, c->d.qk_rope_dim, 0, c->eager };
    return true;
}

/* RMSNorm(size) with its default eps (1e-6), as DeepseekV3RMSNorm(rank). */
static mtk_module *low_rank_norm(mtk_ctx *ctx, const decoder_types *t, const decoder_spec *spec, int64_t size)
{
    decoder_spec norm = *spec;
    norm.hidden = size;
    norm.eps = 1e-6;
    return models_decoder_norm(ctx, t, &norm);
}

mtk_module *models_decoder_mla(mtk_ctx *ctx, const decoder_types *t, const decoder_spec *spec, int64_t layer)
{
    (void)layer;
    const mla_dims *d = &spec->mla_dims;
    int64_t heads = spec->attn.heads, qk_dim = d->qk_nope_dim + d->qk_rope_dim;
    mtk_module *m = mtk_module_new(ctx, &t->attention, sizeof(mla_config));
    if (!m) return NULL;
    *(mla_config *)mtk_module_config(m) =
        (mla_config){ heads, *d, spec->attn_scale, spec->eager_attention };
    bool bias = spec->qkv_bias, ok;
    if (d->q_lora_rank > 0)
        ok = mtk_module_add(m, "q_a_proj", mtk_nn_linear(ctx, spec->hidden, d->q_lora_rank, bias)) &&
             mtk_module_add(m, "q_a_layernorm", low_rank_norm(ctx, t, spec, d->q_lora_rank)) &&
             mtk_module_add(m, "q_b_proj", mtk_nn_linear(ctx, d->q_lora_rank, heads * qk_dim, false));
    else
        ok = mtk_module_add(m, "q_proj", mtk_nn_linear(ctx, spec->hidden, heads * qk_dim, false));
    ok = ok &&
         mtk_module_add(m, "kv_a_proj_with_mqa",
                        mtk_nn_linear(ctx, spec->hidden, d->kv_lora_rank + d->qk_rope_dim, bias)) &&
         mtk_module_add(m, "kv_a_layernorm", low_rank_norm(ctx, t, spec, d->kv_lora_rank)) &&
         mtk_module_add(m, "kv_b_proj",
                        mtk_nn_linear(ctx, d->kv_lora_rank, heads * (d->qk_nope_dim + d->v_head_dim), false)) &&
         mtk_module_add(m, "o_proj", mtk_nn_linear(ctx, heads * d->v_head_dim, spec->hidden, spec->o_bias));
    return ok ? mtk_module_finish(m) : NULL;
}
