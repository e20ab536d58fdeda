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

    if (!mtk_ctx_push_device(ctx, MTK_DEVICE_META)) return NULL;
    bool ok = true;
    for (int32_t i = 0; ok && i < p->ncomponents; i++) {
        mtk_pipeline_component *c = (mtk_pipeline_component *)&p->components[i];
        int64_t weights = c->param_bytes + c->buffer_bytes, calls = 0;
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
            calls += call->per_image;
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
            s->weights_bytes[MTK_OFFLOAD_MODEL] = weights;
            s->resident[MTK_OFFLOAD_MODEL] = c->name;
            s->weights_bytes[MTK_OFFLOAD_SEQUENTIAL] = buffers + moves.largest;
            s->sequential_moved_per_call = moves.moved;
            m->offload[MTK_OFFLOAD_SEQUENTIAL].bytes_moved_per_image += moves.moved * call->per_image;
            char buf[512];
            snprintf(buf, sizeof buf, "%s%s%s (the largest own parameters) + every component's buffers", c->name,
                     *moves.largest_name ? "." : "", moves.largest_name);
            s->resident[MTK_OFFLOAD_SEQUENTIAL] = mtk_ctx_strdup(ctx, buf);
            for (int md = 0; md < MTK_OFFLOAD_MODES; md++) {
                s->peak_bytes[md] = s->weights_bytes[md] + s->activation_peak_bytes + s->cache_bytes;
                if (s->peak_bytes[md] > m->offload[md].gpu_peak_bytes) {
                    m->offload[md].gpu_peak_bytes = s->peak_bytes[md];
                    m->offload[md].peak_stage = s->stage;
                }
            }
        }
        if (calls > 0) {
            /* model offload: the component moved in once per image, the
               previous one moved out (module.to("cpu") copies back) */
            m->offload[MTK_OFFLOAD_MODEL].bytes_moved_per_image += weights;
            m->offload[MTK_OFFLOAD_MODEL].bytes_to_host_per_image += weights;
        }
    }
    mtk_ctx_pop_device(ctx);
    if (!ok) return NULL;
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
