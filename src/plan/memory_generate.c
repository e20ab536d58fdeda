/* Generation's memory plan: model.generate(input_ids, max_new_tokens=N,
 * do_sample=False) under no_grad as transformers 5 runs it on a decoder
 * of the zoo: the prefill (logits_to_keep=1, generate's attention_mask of
 * ones, the DynamicCache built), then N - 1 decode steps of one token
 * each, the cache growing by torch.cat (old and new alive at once while
 * each layer updates).  Between the forwards generate keeps the token ids
 * and the attention mask (B, S + k) int64, the float32 copy of the last
 * logits (B, vocab) and the next tokens.
 *
 * Every decode step has the same ops and grows, so the plan traces three
 * steps and replays each with its inputs: the prefill, the first decode
 * step (a sliding layer then still holds the prefill's whole
 * concatenation) and the last one (the cache at S + N - 2 tokens, made by
 * mtk_kv_cache_assume).  The peak is the largest of theirs. */
#include "models/t5.h"
#include "plan/memory_internal.h"
#include "mtk/models.h"
#include "mtk/nn.h"

#include <stdio.h>
#include <string.h>

/* One traced forward of the generation and its replay. */

/* Graph ids of `t` and its storage's base, appended to ids (skipping
 * tensors that took no part). */
static int32_t add_id(const mtk_graph *graph, int32_t *ids, int32_t n, const mtk_tensor *t)
{
    int32_t id = t ? mtk_graph_tensor_id(graph, t) : -1;
    if (id >= 0) ids[n++] = id;
    return n;
}

/* DynamicSlidingWindowLayer.update concatenates keys and values before it
 * lets go of the old ones, so a sliding layer's past keys live until the
 * values' concatenation: that node reads them too (in a copy of the
 * graph's nodes). */
static bool sliding_keeps_old_keys(mtk_ctx *ctx, const mtk_graph *graph, mem_graph *g, const mtk_kv_cache *cache,
                                   mtk_tensor *const *past)
{
    mtk_graph_node *nodes = NULL;
    for (int32_t i = 0; i < mtk_kv_cache_layer_count(cache); i++) {
        const mtk_kv_cache_layer *l = mtk_kv_cache_layer_at(cache, i);
        int32_t old = past[2 * i] ? mtk_graph_tensor_id(graph, past[2 * i]) : -1;
        int32_t vid = mtk_graph_tensor_id(graph, l->values_base);
        if (l->window <= 0 || old < 0 || vid < 0) continue;
        int32_t n = g->tensors[vid].producer;
        if (n < 0) continue;
        if (!nodes) {
            nodes = mtk_ctx_alloc(ctx, (size_t)g->nnodes * sizeof *nodes);
            if (!nodes) return false;
            memcpy(nodes, g->nodes, (size_t)g->nnodes * sizeof *nodes);
            g->nodes = nodes;
        }
        int32_t *inputs = mtk_ctx_alloc(ctx, (size_t)(nodes[n].ninputs + 1) * sizeof *inputs);
        if (!inputs) return false;
        memcpy(inputs, nodes[n].inputs, (size_t)nodes[n].ninputs * sizeof *inputs);
        inputs[nodes[n].ninputs] = old;
        nodes[n].inputs = inputs;
        nodes[n].ninputs++;
    }
    return true;
}

/* Traces model(ids (b, s), past_key_values=cache, logits_to_keep=1) and
 * replays it: the cache it was given is consumed, the logits and the new
 * cache kept. */
static bool plan_step(mtk_ctx *ctx, mtk_module *model, mtk_kv_cache *cache, int64_t b, int64_t s,
                      const mtk_lm_step *how, const mtk_memory_options *o, mem_generate_step *step)
{
    int32_t nl = mtk_kv_cache_layer_count(cache);
    mtk_tensor **past = mtk_ctx_alloc(ctx, (size_t)(2 * nl + 1) * sizeof *past);
    int32_t *keep = mtk_ctx_alloc(ctx, (size_t)(2 * nl + 1) * sizeof *keep);
    int32_t *kv = mtk_ctx_alloc(ctx, (size_t)(4 * nl + 1) * sizeof *kv);
    if (!past || !keep || !kv) return false;
    for (int32_t i = 0; i < nl; i++) {
        const mtk_kv_cache_layer *l = mtk_kv_cache_layer_at(cache, i);
        past[2 * i] = l->keys;
        past[2 * i + 1] = l->values;
    }
    int64_t shape[2] = { b, s };
    mtk_tensor *ids = mtk_tensor_new(ctx, MTK_INT64, shape, 2, NULL, MTK_DEVICE_META);
    /* generate passes position_ids (B, S) int64 made from its attention
     * mask (a clone, held through the forward) */
    mtk_lm_step with = *how;
    if (how->attention_mask && !how->position_ids)
        with.position_ids = mtk_tensor_new(ctx, MTK_INT64, shape, 2, NULL, MTK_DEVICE_META);
    mtk_trace *trace = ids && (with.position_ids || !how->attention_mask) ? mtk_trace_begin(model) : NULL;
    if (!trace) return false;
    mtk_tensor *logits = mtk_lm_forward_cached(model, ids, cache, &with);
    mtk_trace_end(trace);
    if (!logits) return false;
    step->vocab = logits->shape[logits->ndim - 1];
    mtk_graph *graph = mtk_graph_from_trace_on(trace, (mtk_device_kind)o->device_kind);
    mem_graph g;
    if (!graph || !mem_graph_of(ctx, graph, &g)) return false;
    int32_t nkeep = add_id(graph, keep, 0, logits), nkv = 0;
    for (int32_t i = 0; i < nl; i++) {
        const mtk_kv_cache_layer *l = mtk_kv_cache_layer_at(cache, i);
        nkeep = add_id(graph, keep, nkeep, l->keys_base);
        nkeep = add_id(graph, keep, nkeep, l->values_base);
    }
    for (int32_t i = 1; i < nkeep; i++) kv[nkv++] = keep[i];
    for (int32_t i = 0; i < 2 * nl; i++) nkv = add_id(graph, kv, nkv, past[i]);
    if (!sliding_keeps_old_keys(ctx, graph, &g, cache, past)) return false;
    g.keep = keep;
    g.nkeep = nkeep;
    g.kv = kv;
    g.nkv = nkv;
    g.loss = -1;
    return mem_replay(ctx, &g, o, &step->plan);
}

/* The phase of every point of a decode step's replay. */
static void set_phase(mem_generate_step *st)
{
    st->plan.peak.peak_at.phase = st->phase;
    mtk_memory_point *tl = (mtk_memory_point *)st->plan.timeline;
    for (int32_t i = 0; i < st->plan.ntimeline; i++) tl[i].phase = st->phase;
}

mtk_memory_plan *mem_generate_join_steps(mtk_ctx *ctx, mem_generate_step *steps, int32_t nsteps,
                                         const mtk_memory_options *o, const mtk_model_info *info,
                                         const char *model_name, int64_t phase_peak[2])
{
    /* the peak: each step's own, or just after it */
    int32_t best = 0;
    int64_t best_bytes = -1;
    bool best_after = false;
    phase_peak[0] = phase_peak[1] = 0;
    for (int32_t i = 0; i < nsteps; i++) {
        set_phase(&steps[i]);
        int64_t during = steps[i].plan.peak.peak_bytes + steps[i].extra;
        if (during > best_bytes) best = i, best_bytes = during, best_after = false;
        if (steps[i].after > best_bytes) best = i, best_bytes = steps[i].after, best_after = true;
        int64_t most = during > steps[i].after ? during : steps[i].after;
        int32_t k = steps[i].phase == MTK_PHASE_DECODE;
        if (most > phase_peak[k]) phase_peak[k] = most;
    }
    mtk_memory_plan *plan = mem_generate_result_plan(ctx, &steps[best].plan, o, info, model_name);
    if (!plan) return NULL;
    mtk_memory_step *peak = &plan->peak;
    if (best_after) {
        peak->peak_at = (mtk_memory_point){ .op = "generate: next-token logits to float32", .module = "",
                                            .node = -1, .phase = steps[best].phase, .live_bytes = best_bytes };
        /* at the end of the step everything but the parameters and the
         * cache is in flight */
        peak->breakdown.transient_at_peak = best_bytes - peak->breakdown.parameters - peak->breakdown.kv_cache;
    } else {
        peak->breakdown.transient_at_peak += steps[best].extra;
    }
    peak->peak_bytes = best_bytes;
    peak->peak_at.live_bytes = best_bytes;
    plan->first_step = *peak;
    /* one timeline: the prefill, then the decode steps planned */
    int32_t total = 0;
    for (int32_t i = 0; i < nsteps; i++) total += steps[i].plan.ntimeline;
    mtk_memory_point *tl = mtk_ctx_alloc(ctx, (size_t)(total ? total : 1) * sizeof *tl);
    if (!tl) return NULL;
    total = 0;
    for (int32_t i = 0; i < nsteps; i++)
        for (int32_t k = 0; k < steps[i].plan.ntimeline; k++) {
            tl[total] = steps[i].plan.timeline[k];
            tl[total++].live_bytes += steps[i].extra;
        }
    plan->timeline = tl;
    plan->ntimeline = total;
    plan->nnotes = 0;
    return plan;
}

/* generate's own tensors around the forward that sees `tokens` ids so far
 * of a `prompt`-token prompt:
 * - the prefill: the prompt's ids are the graph's input; generate adds its
 *   (B, prompt) int64 position_ids kwarg and unfinished_sequences (B);
 * - a decode step: input_ids and attention_mask (B, tokens) int64, the
 *   caller's prompt ids and the prefill's position_ids kwarg (B, prompt),
 *   unfinished_sequences, the previous step's float32 logits (B, vocab)
 *   and next tokens (B) (the step's (B, 1) ids, a copy of input_ids' last
 *   column, are the graph's);
 * - in both, each sliding-window cache layer's window as a 0-dim int64
 *   tensor (DynamicSlidingWindowLayer._sliding_window_tensor). */
static void scaffolding(mem_generate_step *st, int64_t b, int64_t prompt, int64_t tokens, int64_t vocab, int64_t end_live,
                        int64_t sliding_layers)
{
    bool decode = st->phase == MTK_PHASE_DECODE;
    st->extra = b * 8 + 8 * sliding_layers +
                (decode ? 2 * b * tokens * 8 + 2 * b * prompt * 8 + b * vocab * 4 + b * 8 : b * prompt * 8);
    /* after the prefill's forward: the logits' float32 copy, the next
     * tokens and the appended input_ids (the caller's kept) */
    int64_t grown = b * (tokens + 1) * 8, logits = b * vocab * 4;
    st->after = end_live + st->extra + logits + b * 8 + grown;
    /* after a decode step's: the mask and the input_ids each grown by a
     * column by torch.cat beside the old one, the new float32 logits
     * beside the previous ones; each replaces its predecessor (one column
     * more kept) */
    if (decode) st->after = end_live + st->extra + b * 8 + (logits > grown ? logits : grown);
}

/* The cache layers with a window: each holds its window as a tensor. */
static int64_t sliding_layers(const mtk_kv_cache *cache)
{
    int64_t n = 0;
    for (int32_t i = 0; i < mtk_kv_cache_layer_count(cache); i++) n += mtk_kv_cache_layer_at(cache, i)->window > 0;
    return n;
}

static int64_t end_live(const mem_generate_step *st)
{
    return st->plan.ntimeline ? st->plan.timeline[st->plan.ntimeline - 1].live_bytes : 0;
}

static const char *note_bytes(mtk_ctx *ctx, const char *fmt, long long a, long long b)
{
    char buf[256];
    int n = snprintf(buf, sizeof buf, fmt, a, b);
    char *s = n > 0 ? mtk_ctx_alloc(ctx, (size_t)n + 1) : NULL;
    if (s) memcpy(s, buf, (size_t)n + 1);
    return s;
}

/* The plan returned: a copy of the chosen step's `from` in ctx's arena,
 * with the options asked for (the model's dtype where o left it
 * undefined), the model's name, and CUDA's context as overhead.  NULL on
 * out of memory. */
mtk_memory_plan *mem_generate_result_plan(mtk_ctx *ctx, const mtk_memory_plan *from, const mtk_memory_options *o,
                                    const mtk_model_info *info, const char *model_name)
{
    mtk_memory_plan *plan = mtk_ctx_alloc(ctx, sizeof *plan);
    if (!plan) return NULL;
    *plan = *from;
    plan->options = *o;
    if (plan->options.dtype == MTK_DTYPE_UNDEFINED) plan->options.dtype = info->dtype;
    plan->model = model_name;
    if (o->device_kind == MTK_DEVICE_KIND_CUDA) plan->overhead_bytes = o->constants.cuda_context_bytes;
    return plan;
}

/* MODEL built on meta in the options' dtype and attention, in eval mode
 * (generate and model(ids) run under no_grad with dropout off). */
static mtk_module *resolve_for_inference(mtk_ctx *ctx, const char *model_name, const mtk_memory_options *o,
                                         mtk_model_info *info)
{
    mtk_model_resolve_options ro = { .dtype = o->dtype, .meta = true,
                                     .attention = o->attention == MTK_ATTENTION_EAGER ? "eager" : "sdpa",
                                     .experts = mem_experts_name(o) };
    mtk_module *model = mtk_model_resolve(ctx, model_name, &ro, info);
    if (model) mtk_module_train(model, false);
    return model;
}

mtk_memory_plan *mem_plan_generate(mtk_ctx *ctx, const char *model_name, const mtk_memory_options *o)
{
    if (!ctx || !o || !mem_options_check(ctx, o)) return NULL;
    mtk_model_info info;
    mtk_module *model = resolve_for_inference(ctx, model_name, o, &info);
    if (!model) return NULL;
    size_t len = strlen(info.architecture);
    if (models_t5_generates(model)) return mem_plan_generate_t5(ctx, model, &info, model_name, o);
    if (info.input == MTK_MODEL_INPUT_SEQ2SEQ_IDS) {
        mtk_error(ctx, MTK_ERR_NOT_IMPLEMENTED,
                  "memory: --mode generate models T5ForConditionalGeneration among the encoder-decoders (%s is "
                  "%s); plan --mode inference with the encoder's and the decoder's lengths instead",
                  model_name, info.architecture);
        return NULL;
    }
    mtk_kv_cache *cache = mtk_kv_cache_new(model);
    if (!mtk_kv_cache_plannable(cache)) { /* gpt2, gpt_neox, phi: not yet */
        mtk_ctx_clear_error(ctx);
        mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT,
                  "memory: --mode generate models the KV cache of the decoder families (llama, mistral, mixtral, "
                  "qwen2, qwen2_moe, qwen3, gemma, gemma2, gemma3, phi3, ...); %s (%s) is not one of them",
                  model_name, info.architecture);
        return NULL;
    }
    /* an LM head: <Prefix>ForCausalLM, or the text model of a multimodal
       <Prefix>ForConditionalGeneration (gemma3, mistral3, llama4) */
    bool with_head = (len >= 11 && strcmp(info.architecture + len - 11, "ForCausalLM") == 0) ||
                     (len >= 24 && strcmp(info.architecture + len - 24, "ForConditionalGeneration") == 0);
    if (!with_head) {
        mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT,
                  "memory: --mode generate needs a ForCausalLM (%s is %s, a base model without lm_head)", model_name,
                  info.architecture);
        return NULL;
    }
    int64_t b = o->batch, s = o->seq, n = o->new_tokens;
    const mtk_lm_step how = { .logits_to_keep = 1, .attention_mask = true };
    mtk_memory_options so = *o;
    so.mode = MTK_MEMORY_GENERATE;
    mem_generate_step steps[3];
    int32_t nsteps = 0;
    memset(steps, 0, sizeof steps);
    /* the prefill, then the first decode step on its cache */
    steps[0].phase = MTK_PHASE_PREFILL;
    if (!plan_step(ctx, model, cache, b, s, &how, &so, &steps[nsteps])) return NULL;
    int64_t vocab = steps[0].vocab, windows = sliding_layers(cache);
    scaffolding(&steps[0], b, s, s, vocab, end_live(&steps[0]), windows);
    nsteps++;
    if (n >= 2) {
        steps[1].phase = MTK_PHASE_DECODE;
        if (!plan_step(ctx, model, cache, b, 1, &how, &so, &steps[1])) return NULL;
        scaffolding(&steps[1], b, s, s + 1, vocab, end_live(&steps[1]), windows);
        nsteps++;
    }
    if (n >= 3) {
        /* the last decode step: the cache holds S + N - 2 tokens */
        mtk_kv_cache *late = mtk_kv_cache_new(model);
        if (!late || !mtk_kv_cache_assume(late, b, s + n - 2)) return NULL;
        steps[2].phase = MTK_PHASE_DECODE;
        if (!plan_step(ctx, model, late, b, 1, &how, &so, &steps[2])) return NULL;
        scaffolding(&steps[2], b, s, s + n - 1, vocab, end_live(&steps[2]), windows);
        nsteps++;
        cache = late;
    }
    int64_t phase_peak[2]; /* prefill, decode */
    mtk_memory_plan *plan = mem_generate_join_steps(ctx, steps, nsteps, o, &info, model_name, phase_peak);
    if (!plan) return NULL;
    mem_note(plan, note_bytes(ctx, "generate: prefill of %lld tokens, then %lld decode steps of one token "
                                   "(the first and the last planned; the ones between grow monotonically)",
                              (long long)s, (long long)(n - 1)));
    mem_note(plan, note_bytes(ctx, "peak of the prefill: %lld bytes; of the decode steps: %lld bytes",
                              (long long)phase_peak[0], (long long)phase_peak[1]));
    mtk_kv_cache *final = mtk_kv_cache_new(model);
    if (!final || !mtk_kv_cache_assume(final, b, s + n - 1)) return NULL;
    mem_note(plan, note_bytes(ctx, "KV cache after the last token: %lld bytes of storage for %lld tokens "
                                   "(sliding-window layers keep at most their window)",
                              (long long)mtk_kv_cache_storage_bytes(n >= 2 ? final : cache), (long long)(s + n - 1)));
    for (int32_t i = 0; i < info.nnotes; i++) mem_note(plan, info.notes[i]);
    return plan;
}

mtk_memory_plan *mem_plan_inference_cached(mtk_ctx *ctx, const char *model_name, const mtk_memory_options *o)
{
    mtk_model_info info;
    mtk_module *model = resolve_for_inference(ctx, model_name, o, &info);
    if (!model) return NULL;
    mtk_kv_cache *cache = mtk_kv_cache_new(model);
    if (!mtk_kv_cache_plannable(cache)) { /* the plain forward (gpt2, gpt_neox, phi hold their cache there) */
        mtk_ctx_clear_error(ctx);
        return NULL;
    }
    /* model(input_ids): every position's logits, no attention mask */
    const mtk_lm_step how = { .logits_to_keep = 0, .attention_mask = false };
    mem_generate_step step;
    memset(&step, 0, sizeof step);
    if (!plan_step(ctx, model, cache, o->batch, o->seq, &how, o, &step)) return NULL;
    mtk_memory_plan *plan = mem_generate_result_plan(ctx, &step.plan, o, &info, model_name);
    if (!plan) return NULL;
    plan->nnotes = 0;
    mem_note(plan, "inference as model(input_ids) under no_grad: the DynamicCache transformers builds (use_cache) "
                   "is counted");
    for (int32_t i = 0; i < info.nnotes; i++) mem_note(plan, info.notes[i]);
    return plan;
}
