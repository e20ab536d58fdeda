/* Generation's memory plan for a T5ForConditionalGeneration:
 * model.generate(input_ids, max_new_tokens=N, do_sample=False) as
 * transformers 5 runs an encoder-decoder under no_grad.  The encoder runs
 * once; the decoder then runs N forwards of one token from
 * decoder_start_token_id with an EncoderDecoderCache: each layer's
 * self-attention keys and values grow by torch.cat (old and new alive at
 * once), the cross-attention's (B, H, S, d_kv) are the encoder output's
 * projections, made in the first decoder forward and kept.  After the
 * last forward the self cache holds N positions.
 *
 * The plan traces the models' own generate path on meta
 * (family_t5_generate.c: models_t5_encode, models_t5_fill_cross,
 * models_t5_decoder_step) as three steps and replays each: the encoder
 * with the first decoder forward, the second forward (one cached
 * position) and the last (N - 1 cached).  Between the forwards generate
 * holds the prompt ids and its attention mask (B, S) int64, the encoder's
 * output (B, S, D), the decoder ids (B, k) int64, unfinished_sequences,
 * the float32 copy of the last logits (B, vocab) and the next tokens.
 * generate's attention_mask of ones reaches the encoder only under eager
 * attention (sdpa's mask creation drops a mask without padding).
 *
 * Also what --mode inference keeps of the plain forward
 * (mem_t5_forward_keep): the output and the EncoderDecoderCache it holds. */
#include "models/t5.h"
#include "plan/memory_internal.h"
#include "mtk/nn.h"
#include "mtk/op.h"

#include <stdio.h>
#include <string.h>

static int32_t add_id(const mtk_graph *graph, int32_t *ids, int32_t n, const mtk_tensor *t)
{
    int32_t id = t ? mtk_graph_tensor_id(graph, t) : -1;
    if (id >= 0) ids[n++] = id;
    return n;
}

/* A meta tensor (B, H, len, d_kv) in `dtype`. */
static mtk_tensor *cache_tensor(mtk_ctx *ctx, int64_t b, int64_t h, int64_t len, int64_t d, mtk_dtype dtype)
{
    int64_t shape[4] = { b, h, len, d };
    return mtk_tensor_new(ctx, dtype, shape, 4, NULL, MTK_DEVICE_META);
}

/* Traces one step and replays it.  past < 0: the encoder (ids (B, S)),
 * the cross keys and values and the first decoder forward; otherwise one
 * decoder forward over `past` cached positions and the cross cache of an
 * S-token prompt.  Each layer's new self keys and values, the cross ones
 * and the logits are kept; the encoder's output too in the first step. */
static bool trace_step(mtk_ctx *ctx, mtk_module *model, mtk_dtype dtype, int64_t b, int64_t s, int64_t past,
                       const mtk_memory_options *o, mem_generate_step *step, int64_t *vocab, int64_t *encoded_bytes)
{
    const t5_spec *spec = mtk_module_config(model);
    mtk_module *blocks = mtk_module_child_at(mtk_module_child_at(model, 2, NULL), 1, NULL);
    int32_t nl = mtk_module_child_count(blocks);
    t5_layer_cache *cache = mtk_ctx_alloc(ctx, (size_t)(nl ? nl : 1) * sizeof *cache);
    int32_t *keep = mtk_ctx_alloc(ctx, (size_t)(6 * nl + 2) * sizeof *keep);
    int32_t *kv = mtk_ctx_alloc(ctx, (size_t)(6 * nl + 2) * sizeof *kv);
    mtk_tensor **past_kv = mtk_ctx_alloc(ctx, (size_t)(2 * nl + 1) * sizeof *past_kv);
    if (!cache || !keep || !kv || !past_kv) return false;
    memset(cache, 0, (size_t)(nl ? nl : 1) * sizeof *cache);
    memset(past_kv, 0, (size_t)(2 * nl + 1) * sizeof *past_kv);
    int64_t one[2] = { b, 1 }, prompt[2] = { b, s }, bias_shape[4] = { b, spec->heads, 1, s };
    mtk_tensor *ids = mtk_tensor_new(ctx, MTK_INT64, past < 0 ? prompt : one, 2, NULL, MTK_DEVICE_META);
    mtk_tensor *dec_ids = past < 0 ? mtk_tensor_new(ctx, MTK_INT64, one, 2, NULL, MTK_DEVICE_META) : ids;
    mtk_tensor *encoded = NULL, *cross_bias = NULL;
    if (past >= 0) {
        for (int32_t i = 0; i < nl; i++) {
            cache[i].cross_k = cache_tensor(ctx, b, spec->heads, s, spec->d_kv, dtype);
            cache[i].cross_v = cache_tensor(ctx, b, spec->heads, s, spec->d_kv, dtype);
            cache[i].self_k = past ? cache_tensor(ctx, b, spec->heads, past, spec->d_kv, dtype) : NULL;
            cache[i].self_v = past ? cache_tensor(ctx, b, spec->heads, past, spec->d_kv, dtype) : NULL;
            if (!cache[i].cross_k || !cache[i].cross_v || (past && (!cache[i].self_k || !cache[i].self_v))) return false;
            past_kv[2 * i] = cache[i].self_k;
            past_kv[2 * i + 1] = cache[i].self_v;
        }
        if (o->attention != MTK_ATTENTION_EAGER) bias_shape[0] = 1;
        cross_bias = mtk_tensor_new(ctx, dtype, bias_shape, 4, NULL, MTK_DEVICE_META);
    }
    if (!ids || !dec_ids || (past >= 0 && !cross_bias)) return false;
    if (!mtk_ctx_push_device(ctx, MTK_DEVICE_META)) return false;
    mtk_trace *trace = mtk_trace_begin(model);
    bool ok = trace != NULL;
    if (ok && past < 0) {
        /* generate's attention_mask of ones (no pad token to infer it
           from) goes to the encoder: create_bidirectional_mask drops it
           for sdpa (no padding), eager adds it to the position bias,
           (B, H, S, S), and to the decoder's cross bias, (B, H, 1, S) */
        bool eager = o->attention == MTK_ATTENTION_EAGER;
        mtk_tensor *mask = eager ? mtk_tensor_new(ctx, MTK_INT64, prompt, 2, NULL, MTK_DEVICE_META) : NULL;
        int64_t cross_shape[4] = { eager ? b : 1, spec->heads, 1, s };
        cross_bias = mtk_tensor_new(ctx, dtype, cross_shape, 4, NULL, MTK_DEVICE_META);
        mtk_module *encoder = mtk_module_child_at(model, 1, NULL);
        encoded = !cross_bias || (eager && !mask) ? NULL
                  : eager                         ? mtk_module_forward2(encoder, ids, mask)
                                                  : mtk_module_forward(encoder, ids);
        ok = encoded && models_t5_fill_cross(ctx, blocks, encoded, cache, nl);
    }
    mtk_tensor *logits = ok ? models_t5_decoder_step(model, dec_ids, past < 0 ? 0 : past, cache, nl, cross_bias) : NULL;
    if (trace) mtk_trace_end(trace);
    mtk_ctx_pop_device(ctx);
    if (!logits) return false;
    *vocab = logits->shape[logits->ndim - 1];
    if (encoded) *encoded_bytes = mtk_tensor_nbytes(encoded);
    mtk_graph *graph = mtk_graph_from_trace_on(trace, (mtk_device_kind)o->device_kind);
    mem_graph g;
    if (!graph || !mem_graph_of(ctx, graph, &g)) return false;
    int32_t nkeep = add_id(graph, keep, 0, logits), nkv = 0;
    nkeep = add_id(graph, keep, nkeep, encoded);
    for (int32_t i = 0; i < nl; i++) {
        int32_t before = nkeep;
        nkeep = add_id(graph, keep, nkeep, cache[i].self_k);
        nkeep = add_id(graph, keep, nkeep, cache[i].self_v);
        nkeep = add_id(graph, keep, nkeep, cache[i].cross_k);
        nkeep = add_id(graph, keep, nkeep, cache[i].cross_v);
        for (int32_t k = before; k < nkeep; k++) kv[nkv++] = keep[k];
    }
    for (int32_t i = 0; i < 2 * nl; i++) nkv = add_id(graph, kv, nkv, past_kv[i]);
    g.keep = keep;
    g.nkeep = nkeep;
    g.kv = kv;
    g.nkv = nkv;
    g.loss = -1;
    return mem_replay(ctx, &g, o, &step->plan);
}

bool mem_t5_forward_keep(mtk_ctx *ctx, const mtk_plan_model *pm, mem_graph *g)
{
    int32_t nmod = mtk_trace_module_count(pm->trace), n = 0, nkv = 0;
    const mtk_trace_module *root = mtk_trace_module_at(pm->trace, 0);
    int32_t cap = (root ? root->noutputs : 0) + 1;
    for (int32_t i = 0; i < nmod; i++) cap += mtk_trace_module_at(pm->trace, i)->noutputs;
    int32_t *keep = mtk_ctx_alloc(ctx, (size_t)cap * sizeof *keep), *kv = mtk_ctx_alloc(ctx, (size_t)cap * sizeof *kv);
    if (!keep || !kv) return false;
    /* Seq2SeqLMOutput: the logits and encoder_last_hidden_state */
    n = add_id(pm->graph, keep, n, pm->output);
    for (int32_t i = 0; root && i < root->noutputs; i++) n = add_id(pm->graph, keep, n, root->outputs[i]);
    /* its cache: a decoder T5Attention returns the keys and values
       DynamicLayer.update concatenated as outputs 2 and 3 */
    for (int32_t i = 0; i < nmod; i++) {
        const mtk_trace_module *m = mtk_trace_module_at(pm->trace, i);
        if (strcmp(mtk_module_type_name(m->module), "T5Attention") != 0 || m->noutputs != 4) continue;
        for (int32_t k = 2; k < 4; k++) {
            int32_t before = n;
            n = add_id(pm->graph, keep, n, m->outputs[k]);
            if (n > before) kv[nkv++] = keep[before];
        }
    }
    g->keep = keep;
    g->nkeep = n;
    g->kv = kv;
    g->nkv = nkv;
    return true;
}

static int64_t end_live(const mem_generate_step *st)
{
    return st->plan.ntimeline ? st->plan.timeline[st->plan.ntimeline - 1].live_bytes : 0;
}

/* The self-attention cache's bytes after `tokens` decoder forwards and the
 * cross-attention cache's. */
static void cache_bytes(mtk_module *model, mtk_dtype dtype, int64_t b, int64_t s, int64_t tokens, int64_t *self, int64_t *cross)
{
    const t5_spec *spec = mtk_module_config(model);
    mtk_module *blocks = mtk_module_child_at(mtk_module_child_at(model, 2, NULL), 1, NULL);
    int64_t per = 2 * (int64_t)mtk_module_child_count(blocks) * b * spec->heads * spec->d_kv *
                  (int64_t)mtk_dtype_size(dtype);
    *self = per * tokens;
    *cross = per * s;
}

mtk_memory_plan *mem_plan_generate_t5(mtk_ctx *ctx, mtk_module *model, const mtk_model_info *info,
                                      const char *model_name, const mtk_memory_options *o)
{
    int64_t b = o->batch, s = o->seq, n = o->new_tokens, vocab = 0, encoded = 0;
    mtk_memory_options so = *o;
    so.mode = MTK_MEMORY_GENERATE;
    mtk_dtype dtype = o->dtype == MTK_DTYPE_UNDEFINED ? info->dtype : o->dtype;
    mem_generate_step steps[3];
    memset(steps, 0, sizeof steps);
    int32_t nsteps = 0;
    int64_t pasts[3] = { -1, 1, n - 1 };
    for (int32_t i = 0; i < 3 && i < n; i++) {
        if (!trace_step(ctx, model, dtype, b, s, pasts[i], &so, &steps[i], &vocab, &encoded)) return NULL;
        steps[i].phase = i == 0 ? MTK_PHASE_PREFILL : MTK_PHASE_DECODE;
        nsteps++;
    }
    for (int32_t i = 0; i < nsteps; i++) {
        int64_t tokens = i == 0 ? 1 : pasts[i] + 1; /* decoder ids before the step */
        /* the prompt ids (the prefill's graph input), generate's attention
           mask of ones, unfinished_sequences, the decoder ids */
        steps[i].extra = b * s * 8 + b * 8 + b * tokens * 8;
        if (i > 0) /* the prompt ids, the encoder's output, the previous logits and next tokens */
            steps[i].extra += b * s * 8 + encoded + b * vocab * 4 + b * 8;
        int64_t logits = b * vocab * 4, grown = b * (tokens + 1) * 8;
        steps[i].after = end_live(&steps[i]) + steps[i].extra + b * 8 +
                         (i == 0 ? logits + grown : (logits > grown ? logits : grown));
    }
    int64_t phase_peak[2]; /* prefill (encoder and first decoder forward), decode */
    mtk_memory_plan *plan = mem_generate_join_steps(ctx, steps, nsteps, o, info, model_name, phase_peak);
    if (!plan) return NULL;
    char buf[256];
    int64_t self = 0, cross = 0;
    cache_bytes(model, dtype, b, s, n, &self, &cross);
    const char *notes[3];
    snprintf(buf, sizeof buf, "generate (encoder-decoder): the encoder on %lld tokens, then %lld decoder forwards of "
             "one token from decoder_start_token_id (the first, second and last planned)", (long long)s, (long long)n);
    notes[0] = mtk_ctx_strdup(ctx, buf);
    snprintf(buf, sizeof buf, "peak of the encoder and first decoder forward: %lld bytes; of the decode steps: %lld bytes",
             (long long)phase_peak[0], (long long)phase_peak[1]);
    notes[1] = mtk_ctx_strdup(ctx, buf);
    snprintf(buf, sizeof buf, "KV cache after the last token: %lld bytes of self-attention cache for %lld positions, "
             "%lld bytes of cross-attention cache", (long long)self, (long long)n, (long long)cross);
    notes[2] = mtk_ctx_strdup(ctx, buf);
    for (int32_t i = 0; i < 3; i++) mem_note(plan, notes[i]);
    for (int32_t i = 0; i < info->nnotes; i++) mem_note(plan, info->notes[i]);
    return plan;
}
