/* Greedy decoding with the KV cache, as transformers 5's
 * generate(do_sample=False) runs it for a decoder-only model: the
 * attention mask (given, or inferred from the pad token), position ids
 * from its cumsum, the prefill, then one token per step with the cache
 * (mtk_lm_forward_cached); eos tokens finish rows, finished rows get the
 * pad token.  Each step's temporaries are freed when it ends.  A
 * T5ForConditionalGeneration goes to family_t5_generate.c after the
 * common checks. */
#include "models/decoder.h"
#include "models/t5.h"
#include "mtk/models.h"
#include "mtk/nn.h"
#include "mtk/ops.h"

#include <string.h>
#include <time.h>

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* A new int64 cpu tensor (rows, cols) holding `values` (row-major, each
 * row `pitch` apart, the columns first..first + cols). */
static mtk_tensor *int64_matrix(mtk_ctx *ctx, const int64_t *values, int64_t rows, int64_t cols, int64_t pitch,
                                int64_t first)
{
    int64_t shape[2] = { rows, cols };
    mtk_tensor *t = mtk_empty(ctx, shape, 2, MTK_INT64);
    if (!t) return NULL;
    int64_t *data = mtk_tensor_data(t);
    for (int64_t r = 0; r < rows; r++) memcpy(data + r * cols, values + r * pitch + first, (size_t)cols * sizeof *data);
    return t;
}

/* Element (r, c) of a 2-D integer or bool cpu tensor, as int64. */
static int64_t int_at(const mtk_tensor *t, int64_t r, int64_t c)
{
    const char *p = (const char *)mtk_tensor_data(t) +
                    (r * t->stride[0] + c * t->stride[1]) * (int64_t)mtk_dtype_size(t->dtype);
    switch (t->dtype) {
    case MTK_BOOL: return *(const bool *)p;
    case MTK_UINT8: return *(const uint8_t *)p;
    case MTK_INT8: return *(const int8_t *)p;
    case MTK_INT16: return *(const int16_t *)p;
    case MTK_INT32: return *(const int32_t *)p;
    default: return *(const int64_t *)p;
    }
}

bool models_generate_is_eos(const mtk_generate_options *o, int64_t token)
{
    for (int32_t i = 0; i < o->n_eos; i++)
        if (o->eos_token_ids[i] == token) return true;
    return false;
}

bool models_generate_last_argmax(mtk_ctx *ctx, mtk_tensor *logits, int64_t *out, float *keep)
{
    if (!logits) return false;
    int64_t b = logits->shape[0], k = logits->shape[1], vocab = logits->shape[2];
    mtk_tensor *last = mtk_contiguous(ctx, mtk_to_dtype(ctx, mtk_narrow(ctx, logits, 1, k - 1, 1), MTK_FLOAT32));
    if (!last) return false;
    const float *v = mtk_tensor_data(last); /* (B, 1, vocab) */
    if (keep) memcpy(keep, v, (size_t)(b * vocab) * sizeof *v);
    for (int64_t r = 0; r < b; r++) {
        const float *row = v + r * vocab;
        int64_t best = 0;
        for (int64_t j = 1; j < vocab && row[best] == row[best]; j++)
            if (row[j] > row[best] || row[j] != row[j]) best = j;
        out[r] = best;
    }
    return true;
}

/* The (B, S + N) attention mask as generate starts it: the caller's, else
 * inferred from the pad token (_prepare_attention_mask_for_generation);
 * the generated columns are ones. */
static bool initial_mask(mtk_ctx *ctx, const mtk_generate_options *o, const int64_t *ids, int64_t b, int64_t s,
                         int64_t width, int64_t *mask)
{
    const mtk_tensor *m = o->attention_mask;
    if (m && (m->ndim != 2 || m->shape[0] != b || m->shape[1] != s || mtk_tensor_is_meta(m) ||
              !mtk_dtype_is_integral(m->dtype, true)))
        return mtk_error(ctx, MTK_ERR_SHAPE, "generate: attention_mask must be (%lld, %lld) integers or bools on the "
                         "cpu, like input_ids, got %d dims of %s", (long long)b, (long long)s, (int)m->ndim,
                         mtk_dtype_name(m->dtype));
    bool has_pad = o->has_pad || o->n_eos > 0;
    int64_t pad = o->has_pad ? o->pad_token_id : o->n_eos > 0 ? o->eos_token_ids[0] : 0;
    bool pad_in_ids = false;
    for (int64_t i = 0; has_pad && i < b * s; i++) pad_in_ids = pad_in_ids || ids[i] == pad;
    bool infer = !m && has_pad && pad_in_ids && !models_generate_is_eos(o, pad);
    for (int64_t r = 0; r < b; r++)
        for (int64_t c = 0; c < width; c++)
            mask[r * width + c] = c >= s ? 1 : m ? (int_at(m, r, c) != 0) : infer ? ids[r * s + c] != pad : 1;
    return true;
}

mtk_tensor *mtk_lm_generate(mtk_module *model, mtk_tensor *input_ids, const mtk_generate_options *o,
                            mtk_generate_stats *stats)
{
    if (!model || !input_ids || !o) return NULL;
    mtk_ctx *ctx = mtk_module_ctx(model);
    decoder_parts parts;
    bool seq2seq = models_t5_generates(model);
    if (!seq2seq && (!models_decoder_parts_of(model, &parts) || !parts.lm_head)) {
        mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "generate: %s is not a language model of the zoo (a "
                  "<Family>ForCausalLM of llama, mistral, mixtral, qwen2, qwen3, olmo2, smollm3, granite, phi, phi3, "
                  "gemma, gemma2, gemma3_text, gpt_neox, ..., GPT2LMHeadModel or T5ForConditionalGeneration)",
                  mtk_module_type_name(model));
        return NULL;
    }
    if (o->max_new_tokens < 1) {
        mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "generate: max_new_tokens must be >= 1, got %lld",
                  (long long)o->max_new_tokens);
        return NULL;
    }
    mtk_state_dict *sd = mtk_module_state_dict(model);
    if (!sd) return NULL;
    if (mtk_state_dict_count(sd) > 0 && mtk_tensor_is_meta(mtk_state_dict_at(sd, 0, NULL))) {
        mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "generate: the model is on meta (no weights): load a checkpoint "
                  "into it first (mtk_model_load)");
        return NULL;
    }
    if (input_ids->ndim != 2 || input_ids->dtype != MTK_INT64 || mtk_tensor_is_meta(input_ids) ||
        input_ids->shape[0] < 1 || input_ids->shape[1] < 1) {
        mtk_error(ctx, MTK_ERR_SHAPE, "generate: input_ids must be (batch, sequence) int64 on the cpu with at least "
                  "one token, got %d dims of %s", (int)input_ids->ndim, mtk_dtype_name(input_ids->dtype));
        return NULL;
    }
    int64_t b = input_ids->shape[0], s = input_ids->shape[1], n = o->max_new_tokens, width = s + n;
    if (n > INT64_MAX / 4 / b - s) {
        mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "generate: max_new_tokens %lld is too large", (long long)n);
        return NULL;
    }
    if (seq2seq) return models_t5_generate(model, input_ids, o, stats);
    /* the result (B, S + N), filled as steps go; the mask beside it */
    int64_t shape[2] = { b, width };
    if (!mtk_ctx_push_device(ctx, MTK_DEVICE_CPU)) return NULL;
    mtk_tensor *out = mtk_empty(ctx, shape, 2, MTK_INT64), *mask_all = mtk_empty(ctx, shape, 2, MTK_INT64);
    mtk_tensor *cur_in = out ? mtk_contiguous(ctx, input_ids) : NULL;
    int64_t *ids = out ? mtk_tensor_data(out) : NULL, *mask = mask_all ? mtk_tensor_data(mask_all) : NULL;
    int64_t *next = mtk_ctx_alloc(ctx, (size_t)b * sizeof *next), *pos = mtk_ctx_alloc(ctx, (size_t)b * sizeof *pos);
    bool *done = mtk_ctx_alloc(ctx, (size_t)b * sizeof *done);
    mtk_kv_cache *cache = mtk_kv_cache_new(model);
    bool ok = cur_in && mask && next && pos && done && cache;
    for (int64_t r = 0; ok && r < b; r++)
        memcpy(ids + r * width, (const int64_t *)mtk_tensor_data(cur_in) + r * s, (size_t)s * sizeof *ids);
    ok = ok && initial_mask(ctx, o, (const int64_t *)mtk_tensor_data(cur_in), b, s, width, mask);
    int64_t pad = o->has_pad ? o->pad_token_id : o->n_eos > 0 ? o->eos_token_ids[0] : 0;
    if (stats) memset(stats, 0, sizeof *stats);
    mtk_tensor *kept = NULL; /* output_logits */
    /* what each step keeps (the cache's tensors, the result, the mask, the ids, the logits), then the
       arena's mark: a step's temporaries and metadata are given back as it ends */
    int32_t nl = mtk_kv_cache_layer_count(cache);
    mtk_tensor **keep = ok ? mtk_ctx_alloc(ctx, (size_t)(4 * nl + 4) * sizeof *keep) : NULL;
    ok = ok && keep;
    const mtk_arena_mark mark = mtk_ctx_arena_mark(ctx);
    double t0 = now_seconds(), t_prefill = t0;
    int64_t steps = 0;
    while (ok && steps < n) {
        int64_t len = s + steps, q = steps == 0 ? s : 1;
        /* position_ids: cumsum(mask) - 1, 0 at padding, for the prefill;
           then the last position + 1 */
        int64_t *pid = mtk_ctx_alloc(ctx, (size_t)(b * q) * sizeof *pid);
        ok = pid != NULL;
        for (int64_t r = 0; ok && r < b; r++) {
            if (steps == 0) {
                int64_t sum = 0;
                for (int64_t c = 0; c < s; c++) {
                    sum += mask[r * width + c];
                    pid[r * s + c] = mask[r * width + c] ? sum - 1 : 0;
                }
                pos[r] = pid[r * s + s - 1];
            } else {
                pid[r] = ++pos[r];
            }
        }
        mtk_lm_step step = { .logits_to_keep = 1, .attention_mask = true };
        mtk_tensor *logits = NULL;
        if (ok) {
            mtk_tensor *step_ids = int64_matrix(ctx, ids, b, q, width, len - q);
            step.position_ids = step_ids ? int64_matrix(ctx, pid, b, q, q, 0) : NULL;
            step.padding_mask = step.position_ids ? int64_matrix(ctx, mask, b, len, width, 0) : NULL;
            logits = step.padding_mask ? mtk_lm_forward_cached(model, step_ids, cache, &step) : NULL;
        }
        if (logits && (logits->ndim != 3 || logits->shape[0] != b)) {
            ok = mtk_error(ctx, MTK_ERR_SHAPE, "generate: %s gave outputs of %d dims, not logits (B, S, vocab)",
                           mtk_module_type_name(model), (int)logits->ndim);
            logits = NULL;
        }
        if (o->output_logits && !kept && logits) {
            /* (N, B, vocab), filled step by step */
            int64_t kshape[3] = { n, b, logits->shape[2] };
            kept = mtk_zeros(ctx, kshape, 3, MTK_FLOAT32);
        }
        ok = (!o->output_logits || kept) &&
             models_generate_last_argmax(ctx, logits, next, kept ? (float *)mtk_tensor_data(kept) + steps * b * kept->shape[2] : NULL);
        bool all_done = true;
        for (int64_t r = 0; ok && r < b; r++) {
            int64_t token = done[r] ? pad : next[r]; /* next * unfinished + pad * (1 - unfinished) */
            ids[r * width + len] = token;
            if (!done[r] && o->n_eos > 0 && models_generate_is_eos(o, token)) done[r] = true;
            all_done = all_done && done[r];
        }
        steps++;
        if (steps == 1) t_prefill = now_seconds();
        /* free the step's activations, the cache it replaced and the step's metadata */
        for (int32_t i = 0; ok && i < nl; i++)
            for (int32_t w = 0; w < 4; w++) keep[4 * i + w] = *models_kv_cache_slot(cache, i, w);
        if (ok) {
            keep[4 * nl] = out;
            keep[4 * nl + 1] = mask_all;
            keep[4 * nl + 2] = cur_in;
            keep[4 * nl + 3] = kept;
            ok = mtk_ctx_arena_reset(ctx, &mark, keep, 4 * nl + 4);
        }
        for (int32_t i = 0; ok && i < nl; i++)
            for (int32_t w = 0; w < 4; w++) *models_kv_cache_slot(cache, i, w) = keep[4 * i + w];
        if (ok) {
            out = keep[4 * nl];
            mask_all = keep[4 * nl + 1];
            cur_in = keep[4 * nl + 2];
            kept = keep[4 * nl + 3];
        }
        if (all_done && o->n_eos > 0) break;
    }
    double t_end = now_seconds();
    mtk_ctx_pop_device(ctx);
    if (!ok) return NULL;
    if (stats) {
        stats->prompt_tokens = b * s;
        stats->new_tokens = steps;
        stats->decode_tokens = b * (steps - 1);
        stats->prefill_seconds = t_prefill - t0;
        stats->decode_seconds = t_end - t_prefill;
        stats->logits = kept && steps < n ? mtk_contiguous(ctx, mtk_narrow(ctx, kept, 0, 0, steps)) : kept;
    }
    /* the columns filled: out[:, :S + steps] */
    return steps == n ? out : mtk_contiguous(ctx, mtk_narrow(ctx, out, 1, 0, s + steps));
}
