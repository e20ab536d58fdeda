/* Greedy decoding of a T5ForConditionalGeneration, as transformers 5's
 * generate(input_ids, attention_mask, do_sample=False) runs an
 * encoder-decoder: the encoder once (its attention_mask as given: generate
 * infers none from the pad token for an encoder-decoder), then the decoder
 * one token per step from decoder_start_token_id, with an
 * EncoderDecoderCache: each layer's self-attention keys and values grow by
 * torch.cat, the cross-attention's are the encoder output's projections,
 * made once.  Block 0's relative position bias is computed for the current
 * position over the cache (compute_bias with past_seen_tokens) and shared
 * by the later blocks; the cross-attention's bias is zeros with the
 * encoder's padding at finfo.min.  eos tokens finish rows, finished rows
 * get the pad token.  The sequences start with decoder_start_token_id, as
 * generate returns them.  Each step's temporaries are freed when it ends. */
#include "models/blocks.h"
#include "models/decoder.h"
#include "models/t5.h"
#include "mtk/models.h"
#include "mtk/nn.h"
#include "mtk/ops.h"

#include <math.h>
#include <string.h>
#include <time.h>

static mtk_module *child(mtk_module *m, int32_t i) { return blocks_child(m, i); }

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

bool models_t5_generates(const mtk_module *model)
{
    return model && strcmp(mtk_module_type_name(model), "T5ForConditionalGeneration") == 0;
}

/* The attention module of a block's sublayer: block.layer[i].<Attention> */
static mtk_module *sublayer(mtk_module *block, int32_t i) { return child(child(block, 0), i); }

/* attention (B, H, 1, d) over keys and values (B, H, K, d) with the
 * float bias (1 or B, H, 1, K), unscaled, then `o`: (B, 1, D) */
static mtk_tensor *attend(mtk_ctx *ctx, mtk_module *attn, mtk_tensor *q, mtk_tensor *k, mtk_tensor *v, mtk_tensor *bias)
{
    mtk_tensor *a = mtk_scaled_dot_product_attention(ctx, q, k, v, bias, 0.0, false, 1.0, false); /* (B, H, 1, d) */
    return mtk_module_forward(child(attn, 3), mtk_contiguous(ctx, models_blocks_merge_heads(ctx, a)));
}

/* The cross-attention keys and values of every decoder layer from the
 * encoder's hidden states (B, S, D). */
bool models_t5_fill_cross(mtk_ctx *ctx, mtk_module *blocks, mtk_tensor *encoded, t5_layer_cache *cache, int32_t nl)
{
    void *hook_user = NULL;
    mtk_module_hook hook = mtk_ctx_module_hook(ctx, &hook_user); /* the block's weights used: as a call of it */
    for (int32_t i = 0; i < nl; i++) {
        mtk_module *block = child(blocks, i), *attn = child(sublayer(block, 1), 0); /* EncDecAttention */
        const t5_attention_config *c = mtk_module_config(attn);
        if (hook && !hook(hook_user, block, NULL, false)) return false;
        cache[i].cross_k = models_blocks_split_heads(ctx, mtk_module_forward(child(attn, 1), encoded), c->heads, c->d_kv);
        cache[i].cross_v = models_blocks_split_heads(ctx, mtk_module_forward(child(attn, 2), encoded), c->heads, c->d_kv);
        if (hook) hook(hook_user, block, NULL, true);
        if (!cache[i].cross_k || !cache[i].cross_v) return false;
    }
    return true;
}

/* One decoder block on the new token's hidden state (B, 1, D): cached
 * self-attention, cross-attention over the encoder's keys and values,
 * feed-forward.  The layer's self keys and values become the
 * concatenation of the cached ones and the new token's. */
static mtk_tensor *block_step(mtk_ctx *ctx, mtk_module *block, mtk_tensor *h, mtk_tensor *self_bias,
                              t5_layer_cache *cache, mtk_tensor *cross_bias)
{
    mtk_module *self = sublayer(block, 0), *attn = child(self, 0);
    const t5_attention_config *c = mtk_module_config(attn);
    mtk_tensor *x = mtk_module_forward(child(self, 1), h);
    mtk_tensor *q = models_blocks_split_heads(ctx, mtk_module_forward(child(attn, 0), x), c->heads, c->d_kv);
    mtk_tensor *k = models_blocks_split_heads(ctx, mtk_module_forward(child(attn, 1), x), c->heads, c->d_kv);
    mtk_tensor *v = models_blocks_split_heads(ctx, mtk_module_forward(child(attn, 2), x), c->heads, c->d_kv);
    if (cache->self_k && k && v) { /* DynamicLayer.update: torch.cat on the sequence dim */
        mtk_tensor *ks[2] = { cache->self_k, k }, *vs[2] = { cache->self_v, v };
        k = mtk_cat(ctx, ks, 2, 2);
        v = mtk_cat(ctx, vs, 2, 2);
    }
    if (!q || !k || !v) return NULL;
    cache->self_k = k; /* (B, H, past + 1, d) */
    cache->self_v = v;
    h = mtk_add(ctx, h, mtk_module_forward(child(self, 2), attend(ctx, attn, q, k, v, self_bias)));
    mtk_module *cross = sublayer(block, 1), *cattn = child(cross, 0);
    x = mtk_module_forward(child(cross, 1), h);
    q = models_blocks_split_heads(ctx, mtk_module_forward(child(cattn, 0), x), c->heads, c->d_kv);
    mtk_tensor *a = q ? attend(ctx, cattn, q, cache->cross_k, cache->cross_v, cross_bias) : NULL;
    h = mtk_add(ctx, h, mtk_module_forward(child(cross, 2), a));
    return mtk_module_forward(sublayer(block, 2), h); /* T5LayerFF */
}

/* The decoder on ids (B, 1) at position `past` with the cache, then the
 * (scaled) lm_head: logits (B, 1, V).  Each layer's self keys and values
 * become the concatenation of the cached ones and the new token's. */
mtk_tensor *models_t5_decoder_step(mtk_module *model, mtk_tensor *ids, int64_t past, t5_layer_cache *cache, int32_t nl,
                                mtk_tensor *cross_bias)
{
    mtk_ctx *ctx = mtk_module_ctx(model);
    const t5_spec *s = mtk_module_config(model);
    mtk_module *decoder = child(model, 2), *blocks = child(decoder, 1);
    mtk_tensor *h = mtk_module_forward(child(decoder, 3), mtk_module_forward(child(decoder, 0), ids)); /* (B, 1, D) */
    mtk_module *attn0 = child(sublayer(child(blocks, 0), 0), 0);
    /* (1, H, 1, past + 1): the query at `past` over every decoded token */
    mtk_tensor *self_bias = mtk_contiguous(ctx, models_t5_position_bias(attn0, 1, past + 1, past, h));
    void *hook_user = NULL;
    mtk_module_hook hook = mtk_ctx_module_hook(ctx, &hook_user);
    for (int32_t i = 0; h && self_bias && i < nl; i++) {
        /* the block runs as one call for the module observer, as
           mtk_module_call would: weight streaming (mtk/stream.h) maps a
           layer in before it runs */
        mtk_module *block = child(blocks, i);
        mtk_module_io io = { .in = { h }, .nin = 1 };
        if (hook && !hook(hook_user, block, &io, false)) return NULL;
        h = block_step(ctx, block, h, self_bias, &cache[i], cross_bias);
        io.out[0] = h;
        io.nout = 1;
        if (hook) hook(hook_user, block, &io, true);
    }
    h = mtk_module_forward(child(decoder, 3), mtk_module_forward(child(decoder, 2), h));
    if (s->scale_output) h = mtk_mul_scalar(ctx, h, mtk_value_float(pow((double)s->d_model, -0.5)));
    return mtk_module_forward(child(model, 3), h); /* (B, 1, V) */
}

/* The encoder's output (B, S, D) and the cross-attention bias (1 or B, H,
 * 1, S) of the attention_mask (NULL: none). */
bool models_t5_encode(mtk_module *model, mtk_tensor *ids, mtk_tensor *mask, mtk_tensor **encoded, mtk_tensor **cross_bias)
{
    mtk_ctx *ctx = mtk_module_ctx(model);
    if (mask && (mask->ndim != 2 || mask->shape[0] != ids->shape[0] || mask->shape[1] != ids->shape[1] ||
                 mtk_tensor_is_meta(mask) || !mtk_dtype_is_integral(mask->dtype, true)))
        return mtk_error(ctx, MTK_ERR_SHAPE, "generate: attention_mask must be (%lld, %lld) integers or bools on the "
                         "cpu, like input_ids, got %d dims of %s", (long long)ids->shape[0], (long long)ids->shape[1],
                         (int)mask->ndim, mtk_dtype_name(mask->dtype));
    mtk_module *encoder = child(model, 1), *blocks = child(child(model, 2), 1);
    *encoded = mask ? mtk_module_forward2(encoder, ids, mask) : mtk_module_forward(encoder, ids); /* (B, S, D) */
    if (!*encoded) return false;
    const t5_attention_config *c = mtk_module_config(child(sublayer(child(blocks, 0), 1), 0));
    bool failed = false;
    *cross_bias = mask ? models_t5_cross_padding_bias(ctx, mask, c->heads, 1, (*encoded)->dtype, *encoded, &failed)
                       : NULL;
    if (failed) return false;
    if (!*cross_bias) { /* no padding: T5Attention's zeros (1, H, 1, S) */
        int64_t shape[4] = { 1, c->heads, 1, ids->shape[1] };
        *cross_bias = mtk_zeros(ctx, shape, 4, (*encoded)->dtype);
    }
    return *cross_bias != NULL;
}

mtk_tensor *models_t5_generate(mtk_module *model, mtk_tensor *input_ids, const mtk_generate_options *o,
                               mtk_generate_stats *stats)
{
    mtk_ctx *ctx = mtk_module_ctx(model);
    const t5_spec *s = mtk_module_config(model);
    mtk_module *blocks = child(child(model, 2), 1);
    int32_t nl = mtk_module_child_count(blocks);
    int64_t b = input_ids->shape[0], n = o->max_new_tokens, width = 1 + n;
    int64_t pad = o->has_pad ? o->pad_token_id : o->n_eos > 0 ? o->eos_token_ids[0] : 0;
    int64_t start = o->has_decoder_start ? o->decoder_start_token_id : s->decoder_start;
    if (stats) memset(stats, 0, sizeof *stats);
    if (!mtk_ctx_push_device(ctx, MTK_DEVICE_CPU)) return NULL;
    /* the sequences (B, 1 + N): decoder_start_token_id, then the steps' tokens */
    int64_t shape[2] = { b, width };
    mtk_tensor *out = mtk_empty(ctx, shape, 2, MTK_INT64), *kept = NULL;
    int64_t *next = mtk_ctx_alloc(ctx, (size_t)b * sizeof *next);
    bool *done = mtk_ctx_alloc(ctx, (size_t)b * sizeof *done);
    t5_layer_cache *cache = mtk_ctx_alloc(ctx, (size_t)nl * sizeof *cache);
    mtk_tensor **keep = mtk_ctx_alloc(ctx, (size_t)(2 * nl + 2) * sizeof *keep);
    bool ok = out && next && done && cache && keep;
    if (ok) {
        memset(done, 0, (size_t)b * sizeof *done);
        memset(cache, 0, (size_t)nl * sizeof *cache);
        for (int64_t r = 0; r < b; r++) ((int64_t *)mtk_tensor_data(out))[r * width] = start;
    }
    double t0 = now_seconds(), t_prefill = t0;
    mtk_tensor *encoded = NULL, *cross_bias = NULL;
    ok = ok && models_t5_encode(model, input_ids, o->attention_mask, &encoded, &cross_bias) &&
         models_t5_fill_cross(ctx, blocks, encoded, cache, nl);
    /* the encoder's output, the cross keys and values, the bias are older
       than the mark: each step's reset keeps them */
    const mtk_arena_mark mark = mtk_ctx_arena_mark(ctx);
    int64_t steps = 0;
    while (ok && steps < n) {
        int64_t *ids = mtk_tensor_data(out);
        int64_t one[2] = { b, 1 };
        mtk_tensor *step_ids = mtk_empty(ctx, one, 2, MTK_INT64); /* (B, 1): the last token */
        if (step_ids)
            for (int64_t r = 0; r < b; r++) ((int64_t *)mtk_tensor_data(step_ids))[r] = ids[r * width + steps];
        mtk_tensor *logits = step_ids ? models_t5_decoder_step(model, step_ids, steps, cache, nl, cross_bias) : NULL;
        if (o->output_logits && !kept && logits) {
            int64_t kshape[3] = { n, b, logits->shape[2] }; /* (N, B, V), filled step by step */
            kept = mtk_zeros(ctx, kshape, 3, MTK_FLOAT32);
        }
        ok = (!o->output_logits || kept) &&
             models_generate_last_argmax(ctx, logits, next, kept ? (float *)mtk_tensor_data(kept) + steps * b * kept->shape[2] : NULL);
        bool all_done = true;
        for (int64_t r = 0; ok && r < b; r++) {
            int64_t token = done[r] ? pad : next[r]; /* next * unfinished + pad * (1 - unfinished) */
            ids[r * width + steps + 1] = token;
            if (!done[r] && models_generate_is_eos(o, token)) done[r] = true;
            all_done = all_done && done[r];
        }
        steps++;
        if (steps == 1) t_prefill = now_seconds();
        /* free the step's activations, the cache tensors it replaced, its metadata */
        for (int32_t i = 0; ok && i < nl; i++) keep[2 * i] = cache[i].self_k, keep[2 * i + 1] = cache[i].self_v;
        if (ok) {
            keep[2 * nl] = out;
            keep[2 * nl + 1] = kept;
            ok = mtk_ctx_arena_reset(ctx, &mark, keep, 2 * nl + 2);
        }
        for (int32_t i = 0; ok && i < nl; i++) cache[i].self_k = keep[2 * i], cache[i].self_v = keep[2 * i + 1];
        if (ok) out = keep[2 * nl], kept = keep[2 * nl + 1];
        if (all_done && o->n_eos > 0) break;
    }
    double t_end = now_seconds();
    mtk_ctx_pop_device(ctx);
    if (!ok) return NULL;
    if (stats) {
        stats->prompt_tokens = b * input_ids->shape[1];
        stats->new_tokens = steps;
        stats->decode_tokens = b * (steps - 1);
        stats->prefill_seconds = t_prefill - t0;
        stats->decode_seconds = t_end - t_prefill;
        stats->encoder_decoder = true;
        stats->logits = kept && steps < n ? mtk_contiguous(ctx, mtk_narrow(ctx, kept, 0, 0, steps)) : kept;
    }
    /* the columns filled: out[:, :1 + steps] */
    return steps == n ? out : mtk_contiguous(ctx, mtk_narrow(ctx, out, 1, 0, 1 + steps));
}
