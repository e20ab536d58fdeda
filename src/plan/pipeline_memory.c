/* Memory per stage and offload plans of a diffusers pipeline
 * (mtk/diffusion.h): each call of each component replayed as an
 * inference plan, and what each of diffusers' offload modes keeps on the
 * GPU around it and moves per image. */
#include "models/pipeline.h"
#include "mtk/nn.h"
#include "mtk/plan.h"

#include <stdio.h>
#include <string.h>

static const char *const mode_names[MTK_OFFLOAD_MODES] = { "none", "model", "sequential" };

const char *mtk_offload_mode_name(mtk_offload_mode mode)
{
    return (unsigned)mode < MTK_OFFLOAD_MODES ? mode_names[mode] : "unknown";
}

/* The stage a call is: the pipeline's phase by the component's role. */
static const char *stage_name(const mtk_pipeline_component *c, const mtk_pipeline_call *call)
{
    if (strcmp(c->role, "text_encoder") == 0) return "encode_prompt";
    if (strcmp(c->role, "denoiser") == 0) return "denoise_step";
    return strcmp(call->method, "encode") == 0 ? "vae_encode" : "vae_decode";
}

static int64_t own_param_bytes(const mtk_module *m)
{
    int64_t bytes = 0;
    for (int32_t k = 0; k < mtk_module_param_count(m); k++) {
        const mtk_tensor *t = mtk_module_param_at(m, k, NULL);
        if (t) bytes += mtk_tensor_numel(t) * (int64_t)mtk_dtype_size(t->dtype);
    }
    return bytes;
}

/* What sequential offload moves around one call: accelerate hooks every
 * module owning parameters, moving them in before each of its forwards
 * and dropping them after, so the call moves each called module's own
 * parameters once per time it runs, and the GPU holds at most the largest
 * of them. */
typedef struct call_moves {
    int64_t moved;          /* bytes moved host -> GPU by the call        */
    int64_t largest;        /* the largest module's own parameters         */
    const char *largest_name;
} call_moves;

static void sequential_moves(const mtk_trace *trace, call_moves *out)
{
    *out = (call_moves){ .largest_name = "" };
    for (int32_t i = 0; i < mtk_trace_module_count(trace); i++) {
        const mtk_trace_module *tm = mtk_trace_module_at(trace, i);
        if (tm->calls <= 0) continue;
        int64_t bytes = own_param_bytes(tm->module);
        out->moved += bytes * tm->calls;
        if (bytes > out->largest) out->largest = bytes, out->largest_name = tm->name;
    }
}

/* The inference plan of one call: the component's module called on the
 * call's meta inputs under a trace, the graph replayed. */
static const mtk_memory_plan *plan_call(mtk_ctx *ctx, mtk_pipeline_component *c, const mtk_pipeline_call *call,
                                        int32_t device_kind, call_moves *moves)
{
    if (!diffusers_select_method(c->module, call->method)) return NULL;
    mtk_module_io io = { .nin = call->nin };
    for (int32_t i = 0; i < call->nin; i++) io.in[i] = call->inputs[i];
    mtk_trace *trace = mtk_trace_begin(c->module);
    if (!trace) return NULL;
    bool ok = mtk_module_call(c->module, &io);
    mtk_trace_end(trace);
    diffusers_select_method(c->module, "forward");
    if (!ok) return NULL;
    sequential_moves(trace, moves);
    mtk_graph *graph = mtk_graph_from_trace_on(trace, (mtk_device_kind)device_kind);
    if (!graph) return NULL;
    mtk_memory_options o;
    mtk_memory_options_init(&o);
    o.mode = MTK_MEMORY_INFERENCE;
    o.dtype = c->dtype;
    o.device_kind = device_kind;
    return mtk_memory_plan_graph(ctx, graph, &o);
}

static int64_t weights_of(const mtk_pipeline_component *c) { return c->param_bytes + c->buffer_bytes; }

/* enable_model_cpu_offload: accelerate's cpu_offload_with_hook chained in
 * the pipeline's order, each component's hook moving it to the GPU before
 * its forward and first moving the component before it in that order back
 * to the host (the first one has none to move).  Replayed over one image's
 * calls: the text encoders in turn for the prompt, again for the negative
 * prompt (encode_prompt), then the denoiser, then the VAE, every component
 * on the host at the start (maybe_free_model_hooks ends the call by moving
 * them all back).  Sets each stage's model-offload weights (the most
 * resident during it) and the mode's bytes moved each way. */
static bool model_offload(mtk_ctx *ctx, mtk_pipeline_memory *m, const int32_t *stage_comp)
{
    const mtk_pipeline *p = m->pipeline;
    mtk_pipeline_offload *o = &m->offload[MTK_OFFLOAD_MODEL];
    bool resident[MTK_PIPELINE_MAX_COMPONENTS] = { false };
    int64_t passes = 1;
    for (int32_t i = 0; i < m->nstages; i++)
        if (strcmp(m->stages[i].stage, "encode_prompt") == 0 && m->stages[i].calls_per_image > passes)
            passes = m->stages[i].calls_per_image;
    int32_t order[2 * MTK_PIPELINE_MAX_STAGES], n = 0;
    for (int64_t pass = 0; pass < passes && pass < 2; pass++)
        for (int32_t i = 0; i < m->nstages; i++)
            if (strcmp(m->stages[i].stage, "encode_prompt") == 0 && m->stages[i].calls_per_image > pass) order[n++] = i;
    for (int32_t i = 0; i < m->nstages; i++)
        if (strcmp(m->stages[i].stage, "encode_prompt") != 0) order[n++] = i;
    for (int32_t e = 0; e < n; e++) {
        mtk_pipeline_stage *s = &m->stages[order[e]];
        int32_t c = stage_comp[order[e]];
        if (c > 0 && resident[c - 1]) {
            resident[c - 1] = false;
            o->bytes_to_host_per_image += weights_of(&p->components[c - 1]);
        }
        if (!resident[c]) {
            resident[c] = true;
            o->bytes_moved_per_image += weights_of(&p->components[c]);
        }
        int64_t on_gpu = 0;
        char names[512] = "";
        size_t len = 0;
        for (int32_t k = 0; k < p->ncomponents; k++)
            if (resident[k]) {
                on_gpu += weights_of(&p->components[k]);
                if (len < sizeof names)
                    len += (size_t)snprintf(names + len, sizeof names - len, "%s%s", len ? " + " : "",
                                            p->components[k].name);
            }
        if (on_gpu > s->weights_bytes[MTK_OFFLOAD_MODEL]) {
            s->weights_bytes[MTK_OFFLOAD_MODEL] = on_gpu;
            s->resident[MTK_OFFLOAD_MODEL] = mtk_ctx_strdup(ctx, names);
            if (!s->resident[MTK_OFFLOAD_MODEL]) return false;
        }
    }
    for (int32_t k = 0; k < p->ncomponents; k++)
        if (resident[k]) o->bytes_to_host_per_image += weights_of(&p->components[k]);
    return true;
}

static void add_note(mtk_pipeline_memory *m, const char *note)
{
    if (m->nnotes < MTK_PIPELINE_MAX_NOTES) m->notes[m->nnotes++] = note;
}

mtk_pipeline_memory *mtk_pipeline_memory_plan(mtk_ctx *ctx, const mtk_pipeline *p, mtk_offload_mode mode,
                                              int32_t device_kind, int64_t gpu_budget, int64_t cpu_budget)
{
    if (!ctx) return NULL;
    if (!p || (unsigned)mode >= MTK_OFFLOAD_MODES || device_kind < 0 || device_kind > MTK_DEVICE_KIND_CUDA ||
        gpu_budget < 0 || cpu_budget < 0) {
        mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "memory: a NULL pipeline, or an offload mode (%d), device kind (%d) "
                  "or budget out of range", (int)mode, (int)device_kind);
        return NULL;
    }
    mtk_pipeline_memory *m = mtk_ctx_alloc(ctx, sizeof *m);
    if (!m) return NULL;
    memset(m, 0, sizeof *m);
    m->pipeline = p, m->mode = mode, m->gpu_budget = gpu_budget, m->cpu_budget = cpu_budget;

    int64_t buffers = 0, params = 0;
    for (int32_t i = 0; i < p->ncomponents; i++) {
        buffers += p->components[i].buffer_bytes;
        params += p->components[i].param_bytes;
    }
    m->weights_bytes = params + buffers;
    int64_t overhead = 0;
    for (int k = 0; k < MTK_OFFLOAD_MODES; k++) m->offload[k].mode = (mtk_offload_mode)k;
    m->offload[MTK_OFFLOAD_MODEL].host_bytes = m->weights_bytes;
    m->offload[MTK_OFFLOAD_SEQUENTIAL].host_bytes = params;

    int32_t stage_comp[MTK_PIPELINE_MAX_STAGES];
    if (!mtk_ctx_push_device(ctx, MTK_DEVICE_META)) return NULL;
    bool ok = true;
    for (int32_t i = 0; ok && i < p->ncomponents; i++) {
        mtk_pipeline_component *c = (mtk_pipeline_component *)&p->components[i];
        for (int32_t k = 0; ok && k < c->ncalls; k++) {
            const mtk_pipeline_call *call = &c->calls[k];
            if (call->per_image <= 0) continue; /* image-to-image only */
            call_moves moves;
            const mtk_memory_plan *plan = plan_call(ctx, c, call, device_kind, &moves);
            if (!plan) {
                ok = false;
                break;
            }
            overhead = plan->overhead_bytes;
            stage_comp[m->nstages] = i;
            mtk_pipeline_stage *s = &m->stages[m->nstages++];
            s->stage = stage_name(c, call);
            s->component = c->name;
            s->method = call->method;
            s->calls_per_image = call->per_image;
            s->plan = plan;
            s->activation_peak_bytes = plan->peak.peak_bytes - plan->peak.breakdown.parameters;
            s->cache_bytes = c->cache_bytes;
            s->weights_bytes[MTK_OFFLOAD_NONE] = m->weights_bytes;
            s->resident[MTK_OFFLOAD_NONE] = "every component";
            s->weights_bytes[MTK_OFFLOAD_SEQUENTIAL] = buffers + moves.largest;
            s->sequential_moved_per_call = moves.moved;
            m->offload[MTK_OFFLOAD_SEQUENTIAL].bytes_moved_per_image += moves.moved * call->per_image;
            char buf[512];
            snprintf(buf, sizeof buf, "%s%s%s (the largest own parameters) + every component's buffers", c->name,
                     *moves.largest_name ? "." : "", moves.largest_name);
            s->resident[MTK_OFFLOAD_SEQUENTIAL] = mtk_ctx_strdup(ctx, buf);
        }
    }
    mtk_ctx_pop_device(ctx);
    if (!ok || !model_offload(ctx, m, stage_comp)) return NULL;
    for (int32_t i = 0; i < m->nstages; i++) {
        mtk_pipeline_stage *s = &m->stages[i];
        for (int md = 0; md < MTK_OFFLOAD_MODES; md++) {
            s->peak_bytes[md] = s->weights_bytes[md] + s->activation_peak_bytes + s->cache_bytes;
            if (s->peak_bytes[md] > m->offload[md].gpu_peak_bytes) {
                m->offload[md].gpu_peak_bytes = s->peak_bytes[md];
                m->offload[md].peak_stage = s->stage;
            }
        }
    }
    for (int k = 0; k < MTK_OFFLOAD_MODES; k++) {
        mtk_pipeline_offload *o = &m->offload[k];
        o->gpu_peak_bytes += overhead;
        o->fits = (gpu_budget == 0 || o->gpu_peak_bytes <= gpu_budget) && (cpu_budget == 0 || o->host_bytes <= cpu_budget);
    }
    add_note(m, "a stage's peak: the weights its mode keeps on the GPU + the call's inference plan (parameters "
                "excluded) + the component's KV cache; tensors carried between stages (prompt embeddings, "
                "latents) are not added");
    add_note(m, "sequential offload as diffusers' enable_sequential_cpu_offload: accelerate hooks every module "
                "owning parameters, buffers stay on the GPU (offload_buffers=False)");
    if (overhead > 0) add_note(m, "gpu_peak_bytes includes the CUDA context (cuda_context_bytes)");
    for (int32_t i = 0; i < m->nstages; i++)
        if (m->stages[i].cache_bytes > 0) {
            add_note(m, "a decoder text encoder's KV cache (transformers 5's DynamicCache from its config: full and "
                        "sliding-window layers, each keeping the prompt's keys and values) is added to its stage "
                        "whole; sized from the config, no tensor read");
            break;
        }
    return m;
}
