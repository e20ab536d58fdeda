/* The KV cache of the decoder families and the forward that uses it, as
 * transformers 5 runs `model(input_ids, past_key_values=cache)`: the
 * family's attention masks built once per call (masking_utils: causal,
 * sliding window, the padding of a 2-D attention_mask; none where sdpa
 * can use is_causal), rotary positions from the cache's length, each
 * layer's DynamicLayer / DynamicSlidingWindowLayer update, the lm_head on
 * the last logits_to_keep positions. */
#include "models/blocks.h"
#include "models/decoder.h"
#include "mtk/models.h"
#include "mtk/ops.h"

#include <float.h>
#include <math.h>
#include <string.h>

struct mtk_kv_cache {
    mtk_ctx *ctx;
    mtk_module *model;
    mtk_kv_cache_layer *layers;
    int32_t nlayers;
    int64_t length; /* tokens seen */
    int64_t batch;  /* -1 before the first step */
    bool plannable; /* the zoo's decoder layers (not a family's own) */
};

static mtk_module *layer_attention(mtk_module *layers, int32_t i)
{
    return mtk_module_child_at(mtk_module_child_at(layers, i, NULL), 0, NULL);
}

/* What layer i caches; `chunk` (may be NULL): its attention chunk. */
static void layer_shape(const decoder_parts *p, int32_t i, decoder_cache_shape *out, int64_t *chunk)
{
    if (chunk) *chunk = 0;
    if (p->own_layers) {
        p->own_layers(mtk_module_child_at(p->layers, i, NULL), out);
        return;
    }
    models_decoder_attention_shape(layer_attention(p->layers, i), out);
    if (chunk) *chunk = models_decoder_attention_chunk(layer_attention(p->layers, i));
}

static bool cache_update(mtk_ctx *ctx, mtk_kv_cache_layer *l, mtk_tensor *keys, mtk_tensor *values);

mtk_kv_cache *mtk_kv_cache_new(mtk_module *model)
{
    if (!model) return NULL;
    mtk_ctx *ctx = mtk_module_ctx(model);
    decoder_parts p;
    if (!models_decoder_parts_of(model, &p)) {
        mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT,
                  "kv_cache: %s is not a decoder model of the zoo (llama, mistral, mixtral, qwen2, qwen2_moe, qwen3, "
                  "olmo2, smollm3, granite, gemma, gemma2, gemma3, phi3, phi, gpt2, gpt_neox, ...)",
                  mtk_module_type_name(model));
        return NULL;
    }
    mtk_kv_cache *c = mtk_ctx_alloc(ctx, sizeof *c);
    if (!c) return NULL;
    c->ctx = ctx;
    c->model = model;
    c->batch = -1;
    c->plannable = p.own_layers == NULL;
    c->nlayers = mtk_module_child_count(p.layers);
    c->layers = mtk_ctx_alloc(ctx, (size_t)(c->nlayers ? c->nlayers : 1) * sizeof *c->layers);
    if (!c->layers) return NULL;
    for (int32_t i = 0; i < c->nlayers; i++) {
        decoder_cache_shape shape;
        layer_shape(&p, i, &shape, NULL);
        c->layers[i].window = shape.window;
    }
    return c;
}

int32_t mtk_kv_cache_layer_count(const mtk_kv_cache *cache) { return cache ? cache->nlayers : 0; }

bool mtk_kv_cache_plannable(const mtk_kv_cache *cache) { return cache && cache->plannable; }

const mtk_kv_cache_layer *mtk_kv_cache_layer_at(const mtk_kv_cache *cache, int32_t i)
{
    return cache && i >= 0 && i < cache->nlayers ? &cache->layers[i] : NULL;
}

mtk_tensor **models_kv_cache_slot(mtk_kv_cache *cache, int32_t layer, int32_t which)
{
    if (!cache || layer < 0 || layer >= cache->nlayers) return NULL;
    mtk_kv_cache_layer *l = &cache->layers[layer];
    switch (which) {
    case 0: return &l->keys_base;
    case 1: return &l->values_base;
    case 2: return &l->keys;
    case 3: return &l->values;
    default: return NULL;
    }
}

int64_t mtk_kv_cache_length(const mtk_kv_cache *cache) { return cache ? cache->length : 0; }

int64_t mtk_kv_cache_storage_bytes(const mtk_kv_cache *cache)
{
    int64_t n = 0;
    for (int32_t i = 0; cache && i < cache->nlayers; i++) {
        const mtk_kv_cache_layer *l = &cache->layers[i];
        if (l->keys_base) n += (int64_t)mtk_tensor_nbytes(l->keys_base) + (int64_t)mtk_tensor_nbytes(l->values_base);
    }
    return n;
}

int64_t mtk_kv_cache_tensor_bytes(const mtk_kv_cache *cache)
{
    int64_t n = 0;
    for (int32_t i = 0; cache && i < cache->nlayers; i++) {
        const mtk_kv_cache_layer *l = &cache->layers[i];
        if (l->keys) n += (int64_t)mtk_tensor_nbytes(l->keys) + (int64_t)mtk_tensor_nbytes(l->values);
    }
    return n;
}

bool mtk_kv_cache_assume(mtk_kv_cache *cache, int64_t batch, int64_t length)
{
    if (!cache) return false;
    mtk_ctx *ctx = cache->ctx;
    if (batch < 1 || length < 1)
        return mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "kv_cache_assume: batch and length must be >= 1, got %lld and %lld",
                         (long long)batch, (long long)length);
    decoder_parts p;
    if (!models_decoder_parts_of(cache->model, &p)) return false;
    const mtk_tensor *w = mtk_module_param_at(p.embed, 0, NULL);
    if (!mtk_ctx_push_device(ctx, MTK_DEVICE_META)) return false;
    bool ok = true;
    for (int32_t i = 0; ok && i < cache->nlayers; i++) {
        mtk_kv_cache_layer *l = &cache->layers[i];
        decoder_cache_shape a;
        layer_shape(&p, i, &a, NULL);
        int64_t t = a.window > 0 && a.window < length ? a.window : length;
        int64_t kshape[4] = { batch, a.kv_heads, t, a.key_dim }, vshape[4] = { batch, a.kv_heads, t, a.value_dim };
        ok = cache_update(ctx, l, mtk_empty(ctx, kshape, 4, w->dtype), mtk_empty(ctx, vshape, 4, w->dtype));
    }
    mtk_ctx_pop_device(ctx);
    if (!ok) return false;
    cache->length = length;
    cache->batch = batch;
    return true;
}

/* ------------------------------------------------------------------ masks */

/* torch.finfo(dtype).min */
static double dtype_min(mtk_dtype dtype)
{
    switch (dtype) {
    case MTK_FLOAT16: return -65504.0;
    case MTK_BFLOAT16: return -3.3895313892515355e38;
    case MTK_FLOAT64: return -DBL_MAX;
    default: return -FLT_MAX;
    }
}

/* What one mask is built from (masking_utils' sdpa_mask / eager_mask). */
typedef struct mask_request {
    int64_t batch, q_len, q_offset, kv_len, kv_offset;
    int64_t window;        /* sliding_window_overlay; 0: causal only       */
    int64_t chunk;         /* chunked_overlay (llama4); 0: none            */
    mtk_tensor *padding;   /* (B, >= kv_offset + kv_len) bool, or NULL     */
    mtk_tensor *left_padding; /* chunk: (B, 1, 1, 1) int64, each row's
                                 leading padding tokens, or NULL (none) */
    bool eager;            /* eager_mask: a float mask in `dtype`          */
    mtk_dtype dtype;
} mask_request;

/* arange(n) + offset, viewed (1, 1, n, 1) (rows) or (1, 1, 1, n). */
static mtk_tensor *index_range(mtk_ctx *ctx, int64_t n, int64_t offset, bool rows)
{
    mtk_tensor *r = mtk_add_scalar(ctx, mtk_arange_int(ctx, 0, n, 1, MTK_INT64), mtk_value_int(offset));
    int64_t shape[4] = { 1, 1, rows ? n : 1, rows ? 1 : n };
    return mtk_view(ctx, r, shape, 4);
}

/* and_masks: ones(()) & each mask in turn. */
static mtk_tensor *and_masks(mtk_ctx *ctx, mtk_tensor *const *masks, int32_t n)
{
    mtk_tensor *r = mtk_ones(ctx, NULL, 0, MTK_BOOL);
    for (int32_t i = 0; i < n; i++) r = mtk_bitwise_and(ctx, r, masks[i]);
    return r;
}

/* The (B, 1, q_len, kv_len) mask of one request: bool for sdpa, 0 / the
 * dtype's min for eager.  Runs on the current device scope. */
static mtk_tensor *build_mask(mtk_ctx *ctx, const mask_request *r)
{
    mtk_tensor *q_idx = index_range(ctx, r->q_len, r->q_offset, true);
    mtk_tensor *kv_idx = index_range(ctx, r->kv_len, r->kv_offset, false);
    mtk_tensor *mask;
    if (r->window > 0) {
        /* sliding_window_causal_mask_function: and_masks(overlay, causal) */
        mtk_tensor *overlay = mtk_gt(ctx, kv_idx, mtk_sub_scalar(ctx, q_idx, mtk_value_int(r->window)));
        mtk_tensor *first = mtk_bitwise_and(ctx, mtk_ones(ctx, NULL, 0, MTK_BOOL), overlay);
        mask = mtk_bitwise_and(ctx, first, mtk_le(ctx, kv_idx, q_idx));
    } else if (r->chunk > 0) {
        /* chunked_causal_mask_function: and_masks(overlay, causal), the chunks counted from each row's
           first token: (kv - left_padding) // chunk == (q - left_padding) // chunk */
        mtk_tensor *kv_row = r->left_padding ? mtk_sub(ctx, kv_idx, r->left_padding) : kv_idx; /* (B, 1, 1, kv) */
        mtk_tensor *q_row = r->left_padding ? mtk_sub(ctx, q_idx, r->left_padding) : q_idx;    /* (B, 1, q, 1)  */
        mtk_tensor *overlay = mtk_eq(ctx, mtk_floor_divide_scalar(ctx, kv_row, mtk_value_int(r->chunk)),
                                     mtk_floor_divide_scalar(ctx, q_row, mtk_value_int(r->chunk)));
        mtk_tensor *first = mtk_bitwise_and(ctx, mtk_ones(ctx, NULL, 0, MTK_BOOL), overlay);
        mask = mtk_bitwise_and(ctx, first, mtk_le(ctx, kv_idx, q_idx));
    } else {
        mask = mtk_le(ctx, kv_idx, q_idx); /* causal_mask_function */
    }
    if (r->padding) {
        /* and_masks(mask_function, padding_mask[batch_idx, kv_idx]) */
        int64_t flat = r->kv_len, pshape[4] = { r->batch, 1, 1, r->kv_len };
        mtk_tensor *kv_flat = mtk_view(ctx, kv_idx, &flat, 1);
        mtk_tensor *pad = mtk_view(ctx, mtk_index_select(ctx, r->padding, 1, kv_flat), pshape, 4);
        mtk_tensor *parts[2] = { mask, pad };
        mask = and_masks(ctx, parts, 2);
    }
    int64_t shape[4] = { r->batch, mask ? mask->shape[1] : 1, r->q_len, r->kv_len };
    mask = mtk_expand(ctx, mask, shape, 4);
    if (!r->eager) return mask;
    mtk_tensor *zero = mtk_zeros(ctx, NULL, 0, r->dtype);
    mtk_tensor *low = mtk_full(ctx, NULL, 0, dtype_min(r->dtype), r->dtype);
    return mtk_where(ctx, mask, zero, low);
}

/* Whether the padding mask's columns kv_offset.. kv_offset + kv_len are
 * all true (fast_all of the slice): none, or no padding there. */
static bool padding_all_true(const mask_request *r)
{
    if (!r->padding || mtk_tensor_is_meta(r->padding)) return true;
    const mtk_tensor *p = r->padding; /* (B, >= kv_offset + kv_len) bool */
    const char *base = mtk_tensor_data(p);
    for (int64_t b = 0; b < p->shape[0]; b++)
        for (int64_t j = r->kv_offset; j < r->kv_offset + r->kv_len; j++)
            if (!*(const bool *)(base + (b * p->stride[0] + j * p->stride[1]) * (int64_t)sizeof(bool))) return false;
    return true;
}

/* _ignore_causal_mask_sdpa: no mask when one query token or as many as
 * keys, the keys fit in the window and no key is padding. */
static bool sdpa_can_skip(const mask_request *r)
{
    if (r->window > 0 && r->kv_len >= r->window) return false;
    if (r->chunk > 0 && r->kv_len >= r->chunk) return false;
    return (r->q_len == 1 || r->kv_len == r->q_len) && padding_all_true(r);
}

/* The caller's 2-D attention_mask as a contiguous bool (B, T).  NULL with
 * the error set. */
static mtk_tensor *padding_bool(mtk_ctx *ctx, mtk_tensor *mask)
{
    return mtk_contiguous(ctx, mtk_to_dtype(ctx, mask, MTK_BOOL));
}

mtk_tensor *models_padded_causal_mask(mtk_ctx *ctx, mtk_tensor *attention_mask, int64_t window, bool *failed)
{
    *failed = false;
    if (!attention_mask) return NULL;
    mtk_tensor *padding = padding_bool(ctx, attention_mask);
    if (!padding) {
        *failed = true;
        return NULL;
    }
    int64_t b = padding->shape[0], s = padding->shape[1];
    mask_request r = { .batch = b, .q_len = s, .kv_len = s, .window = window, .padding = padding,
                       .dtype = MTK_BOOL };
    if (sdpa_can_skip(&r)) return NULL;
    if (!mtk_ctx_push_device(ctx, padding->device)) {
        *failed = true;
        return NULL;
    }
    mtk_tensor *mask = build_mask(ctx, &r);
    mtk_ctx_pop_device(ctx);
    if (!mask) *failed = true;
    return mask;
}

/* --------------------------------------------------------------- forward */

/* get_mask_sizes of a cache layer before this step's update. */
static void mask_sizes(const mtk_kv_cache *c, int64_t window, int64_t q_len, int64_t *kv_len, int64_t *kv_offset)
{
    if (window <= 0) {
        *kv_len = c->length + q_len;
        *kv_offset = 0;
        return;
    }
    bool full = c->length >= window;
    *kv_offset = c->length - window + 1 > 0 ? c->length - window + 1 : 0;
    *kv_len = full ? window - 1 + q_len : c->length + q_len;
}

/* (attention_mask.cumsum(-1) == 0).sum(-1) of the (B, T) bool padding on
 * the cpu, viewed (B, 1, 1, 1): the leading padding of each row; NULL
 * (no error) when the padding is on meta or there is none. */
static mtk_tensor *left_padding_of(mtk_ctx *ctx, const mtk_tensor *padding, bool *failed)
{
    *failed = false;
    if (!padding || mtk_tensor_is_meta(padding)) return NULL;
    int64_t b = padding->shape[0], t = padding->shape[1], shape[4] = { b, 1, 1, 1 };
    mtk_tensor *out = mtk_zeros(ctx, shape, 4, MTK_INT64);
    if (!out) {
        *failed = true;
        return NULL;
    }
    const bool *v = mtk_tensor_data(padding); /* contiguous */
    int64_t *lead = mtk_tensor_data(out);
    for (int64_t r = 0; r < b; r++)
        while (lead[r] < t && !v[r * t + lead[r]]) lead[r]++;
    return out;
}

/* The masks the family builds: [0] full, [1] sliding, [2] chunked (NULL:
 * none). */
static bool build_masks(mtk_ctx *ctx, const mtk_kv_cache *c, const decoder_parts *p, mtk_tensor *ids,
                        const mtk_lm_step *step, mtk_dtype dtype, mtk_tensor **masks)
{
    int64_t b = ids->shape[0], s = ids->shape[1];
    bool eager = false;
    int64_t layer_window = 0, chunk = 0;
    for (int32_t i = 0; i < c->nlayers; i++) {
        decoder_cache_shape a;
        int64_t layer_chunk;
        layer_shape(p, i, &a, &layer_chunk);
        eager = eager || a.eager;
        if (a.window > 0 && layer_window == 0 && layer_chunk == 0) layer_window = a.window;
        if (chunk == 0) chunk = layer_chunk;
    }
    mtk_tensor *padding = NULL;
    if (step->padding_mask) {
        /* checked by the caller: (B, past + S) integers or bools */
        padding = padding_bool(ctx, step->padding_mask);
        if (!padding) return false;
    } else if (step->attention_mask) {
        /* generate's attention_mask (B, P + S) of ones, as bool */
        int64_t shape[2] = { b, c->length + s };
        padding = mtk_ones(ctx, shape, 2, MTK_BOOL);
    }
    masks[0] = masks[1] = masks[2] = NULL;
    bool failed = false;
    mtk_tensor *left = (p->masks & DECODER_MASK_CHUNKED) && step->padding_mask ? left_padding_of(ctx, padding, &failed)
                                                                               : NULL;
    if (failed) return false;
    static const uint8_t kinds[3] = { DECODER_MASK_FULL, DECODER_MASK_SLIDING, DECODER_MASK_CHUNKED };
    for (int32_t kind = 0; kind < 3; kind++) {
        if (!(p->masks & kinds[kind])) continue;
        /* a chunked layer's cache is a sliding one of the chunk (its sizes from the first such layer) */
        mask_request r = { .batch = b, .q_len = s, .q_offset = c->length, .window = kind == 1 ? p->mask_window : 0,
                           .chunk = kind == 2 ? chunk : 0, .padding = padding, .left_padding = left, .eager = eager,
                           .dtype = dtype };
        mask_sizes(c, kind == 1 ? layer_window : kind == 2 ? chunk : 0, s, &r.kv_len, &r.kv_offset);
        if (!eager && sdpa_can_skip(&r)) continue;
        masks[kind] = build_mask(ctx, &r);
        if (!masks[kind]) return false;
    }
    return true;
}

/* DynamicLayer.update / DynamicSlidingWindowLayer.update after the
 * attention made the concatenations. */
static bool cache_update(mtk_ctx *ctx, mtk_kv_cache_layer *l, mtk_tensor *keys, mtk_tensor *values)
{
    l->keys_base = keys;
    l->values_base = values;
    l->keys = keys;
    l->values = values;
    if (l->window > 0) {
        /* full[:, :, -window + 1:, :] */
        int64_t t = keys->shape[2], keep = l->window - 1 < t ? l->window - 1 : t;
        if (l->window == 1) keep = t; /* -0: keeps everything */
        l->keys = mtk_narrow(ctx, keys, 2, t - keep, keep);
        l->values = mtk_narrow(ctx, values, 2, t - keep, keep);
    }
    return l->keys && l->values;
}

mtk_tensor *mtk_lm_forward_cached(mtk_module *model, mtk_tensor *ids, mtk_kv_cache *cache, const mtk_lm_step *step)
{
    if (!model || !ids || !cache) return NULL;
    mtk_ctx *ctx = mtk_module_ctx(model);
    static const mtk_lm_step defaults = { 0, false, NULL, NULL };
    if (!step) step = &defaults;
    decoder_parts p;
    if (cache->model != model || !models_decoder_parts_of(model, &p)) {
        mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "lm_forward_cached: the cache was made for another model");
        return NULL;
    }
    if (ids->ndim != 2 || !mtk_dtype_is_integral(ids->dtype, false)) {
        mtk_error(ctx, MTK_ERR_SHAPE, "lm_forward_cached: expects token ids (batch, sequence) of an integer dtype, "
                  "got %d dims of %s", (int)ids->ndim, mtk_dtype_name(ids->dtype));
        return NULL;
    }
    int64_t b = ids->shape[0], s = ids->shape[1];
    if (cache->batch >= 0 && cache->batch != b) {
        mtk_error(ctx, MTK_ERR_SHAPE, "lm_forward_cached: batch %lld, but the cache holds a batch of %lld",
                  (long long)b, (long long)cache->batch);
        return NULL;
    }
    if (step->logits_to_keep < 0) {
        mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "lm_forward_cached: logits_to_keep must be >= 0, got %lld",
                  (long long)step->logits_to_keep);
        return NULL;
    }
    const mtk_tensor *pid = step->position_ids;
    if (pid && (pid->ndim != 2 || (pid->shape[0] != b && pid->shape[0] != 1) || pid->shape[1] != s ||
                !mtk_dtype_is_integral(pid->dtype, false))) {
        mtk_error(ctx, MTK_ERR_SHAPE, "lm_forward_cached: position_ids must be (%lld or 1, %lld) integers, got %d dims",
                  (long long)b, (long long)s, pid ? (int)pid->ndim : 0);
        return NULL;
    }
    const mtk_tensor *pad = step->padding_mask;
    if (pad && (pad->ndim != 2 || pad->shape[0] != b || pad->shape[1] != cache->length + s ||
                pad->device != ids->device ||
                !mtk_dtype_is_integral(pad->dtype, true))) {
        mtk_error(ctx, MTK_ERR_SHAPE, "lm_forward_cached: the attention mask must be (%lld, %lld) integers or bools on "
                  "the ids' device (the past and this step's tokens), got %d dims of %s",
                  (long long)b, (long long)(cache->length + s), (int)pad->ndim, mtk_dtype_name(pad->dtype));
        return NULL;
    }
    mtk_tensor *h = mtk_module_forward(p.embed, ids); /* (B, S, hidden) */
    if (p.embedding_multiplier != 1.0) h = mtk_mul_scalar(ctx, h, mtk_value_float(p.embedding_multiplier));
    if (!h || !mtk_ctx_push_device(ctx, ids->device)) return NULL;
    mtk_tensor *masks[3];
    bool ok = build_masks(ctx, cache, &p, ids, step, h->dtype, masks);
    /* position_ids: the caller's (generate's), else cache_position[None]: (1, S) */
    int64_t pshape[2] = { 1, s };
    mtk_tensor *positions = !ok                ? NULL
                            : step->position_ids ? step->position_ids
                                                 : mtk_view(ctx, mtk_arange_int(ctx, cache->length, cache->length + s,
                                                                                1, MTK_INT64),
                                                            pshape, 2);
    if (ok && p.positions) /* gpt2: inputs_embeds + wpe(position_ids) */
        h = mtk_add(ctx, h, mtk_module_forward(p.positions, positions));
    mtk_module_io cos_sin = { .in = { h, positions }, .nin = 2 };
    ok = ok && positions && h && (!p.rotary || mtk_module_call(p.rotary, &cos_sin));
    /* On a real device a layer's temporaries are dropped as it ends (torch frees them as their last
       reference goes): the next layer's outputs reuse memory the allocator still holds, warm in the
       caches, instead of first-touching fresh pages (a 128-token prefill of a 110M llama touched
       160 MB otherwise).  What survives a layer: the hidden state and the cache's tensors. */
    const bool drop_temporaries = ok && h->device != MTK_DEVICE_META;
    const void *layers_mark = mtk_ctx_storage_mark(ctx);
    mtk_tensor **survivors = drop_temporaries ? mtk_ctx_alloc(ctx, (size_t)(2 * cache->nlayers + 1) * sizeof *survivors)
                                              : NULL;
    for (int32_t i = 0; ok && i < cache->nlayers; i++) {
        mtk_kv_cache_layer *l = &cache->layers[i];
        mtk_tensor *past_k = l->keys, *past_v = l->values;
        decoder_cache_shape a;
        int64_t chunk;
        layer_shape(&p, i, &a, &chunk);
        if (!past_k) {
            /* the first update concatenates onto an empty tensor */
            int64_t kshape[4] = { b, a.kv_heads, 0, a.key_dim }, vshape[4] = { b, a.kv_heads, 0, a.value_dim };
            past_k = mtk_empty(ctx, kshape, 4, h->dtype);
            past_v = mtk_empty(ctx, vshape, 4, h->dtype);
        }
        mtk_tensor *mask = masks[chunk > 0 ? 2 : l->window > 0 ? 1 : 0];
        mtk_module *layer = mtk_module_child_at(p.layers, i, NULL);
        mtk_module_io io = { .in = { h, NULL, NULL, past_k, past_v, mask }, .nin = mask ? 6 : 5 };
        if (p.rotary) {
            models_decoder_layer_rope(&cos_sin, layer, &io.in[1], &io.in[2]); /* gemma3: the layer type's rope */
        } else { /* no rotary (gpt2): (h, past_k, past_v[, mask]) */
            io = (mtk_module_io){ .in = { h, past_k, past_v, mask }, .nin = mask ? 4 : 3 };
        }
        ok = mtk_module_call(layer, &io);
        if (ok && io.nout != 3)
            ok = mtk_error(ctx, MTK_ERR_NOT_IMPLEMENTED, "lm_forward_cached: %s takes no KV cache",
                           mtk_module_type_name(layer));
        ok = ok && cache_update(ctx, l, io.out[1], io.out[2]);
        h = io.out[0];
        if (ok && survivors) {
            for (int32_t j = 0; j <= i; j++) {
                survivors[2 * j] = cache->layers[j].keys;
                survivors[2 * j + 1] = cache->layers[j].values;
            }
            survivors[2 * i + 2] = h;
            mtk_ctx_release_storage_since(ctx, layers_mark, survivors, 2 * i + 3);
        }
    }
    mtk_ctx_pop_device(ctx);
    if (!ok) return NULL;
    cache->length += s;
    cache->batch = b;
    h = mtk_module_forward(p.norm, h);
    if (!p.lm_head) return h;
    if (step->logits_to_keep > 0 && step->logits_to_keep < s)
        h = mtk_narrow(ctx, h, 1, s - step->logits_to_keep, step->logits_to_keep); /* hidden[:, -k:, :] */
    mtk_tensor *logits = mtk_module_forward(p.lm_head, h);
    if (p.final_softcap > 0) {
        logits = mtk_div_scalar(ctx, logits, mtk_value_float(p.final_softcap));
        logits = mtk_mul_scalar(ctx, mtk_tanh(ctx, logits), mtk_value_float(p.final_softcap));
    }
    if (p.logits_scaling != 1.0) logits = mtk_div_scalar(ctx, logits, mtk_value_float(p.logits_scaling));
    return logits;
}
