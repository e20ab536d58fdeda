/* The memory plan of a zoo model: traced on the meta device at the
 * options' input (mtk_plan_trace_model), then replayed. */
#include "plan/memory_internal.h"
#include "mtk/nn.h"

mtk_memory_plan *mtk_memory_plan_model(mtk_ctx *ctx, const char *model, const mtk_memory_options *o)
{
    if (!ctx) return NULL;
    if (!model || !o) {
        mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "memory: NULL model or options");
        return NULL;
    }
    if (!mem_options_check(ctx, o)) return NULL;
    if (o->mode == MTK_MEMORY_GENERATE) return mem_plan_generate(ctx, model, o);
    if (o->mixed_precision != MTK_MIXED_NONE && o->mode != MTK_MEMORY_TRAINING) {
        mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "memory: --mixed-precision is a training recipe (--mode training)");
        return NULL;
    }
    bool training = o->mode == MTK_MEMORY_TRAINING;
    if (!training) {
        mtk_memory_plan *cached = mem_plan_inference_cached(ctx, model, o);
        if (cached || mtk_ctx_status(ctx) != MTK_OK) return cached;
    }
    mtk_plan_trace_options to = {
        .batch = o->batch, .seq = o->seq, .dtype = o->dtype,
        .attention = o->attention == MTK_ATTENTION_EAGER ? "eager" : "sdpa", .experts = mem_experts_name(o),
        .device_kind = (mtk_device_kind)o->device_kind, .with_loss = training, .training = training,
        .decoder_seq = o->decoder_seq,
    };
    if (o->mixed_precision != MTK_MIXED_NONE) to.dtype = o->mixed_precision == MTK_MIXED_BF16 ? MTK_BFLOAT16 : MTK_FLOAT16;
    mtk_plan_model *pm = mtk_plan_trace_model(ctx, model, &to);
    if (!pm) return NULL;
    mem_graph g;
    if (!mem_graph_of(ctx, pm->graph, &g)) return NULL;
    int32_t *keep = mtk_ctx_alloc(ctx, 2 * sizeof *keep);
    if (!keep) return NULL;
    g.keep = keep;
    g.nkeep = 0;
    if (training) {
        g.loss = mtk_graph_tensor_id(pm->graph, pm->loss);
        keep[g.nkeep++] = g.loss;
    } else {
        g.loss = -1;
        if (pm->decoder_input) {
            if (!mem_t5_forward_keep(ctx, pm, &g)) return NULL;
        } else if (pm->output) {
            keep[g.nkeep++] = mtk_graph_tensor_id(pm->graph, pm->output);
        }
    }
    g.units = pm->layers;
    if (o->mixed_precision != MTK_MIXED_NONE) g.master_scale = 2; /* float32 masters of a 16-bit trace */
    g.nunits = pm->nlayers;
    mtk_memory_plan *plan = mtk_ctx_alloc(ctx, sizeof *plan);
    if (!plan) return NULL;
    mtk_memory_options opts = *o;
    if (opts.dtype == MTK_DTYPE_UNDEFINED) opts.dtype = pm->info.dtype;
    if (!mem_replay(ctx, &g, &opts, plan)) return NULL;
    plan->model = model;
    if (o->device_kind == MTK_DEVICE_KIND_CUDA) plan->overhead_bytes = o->constants.cuda_context_bytes;
    for (int32_t i = 0; i < pm->info.nnotes; i++) mem_note(plan, pm->info.notes[i]);
    if (pm->decoder_input && !training)
        mem_note(plan, "an encoder-decoder's inference as model(input_ids, decoder_input_ids) under no_grad: the "
                       "EncoderDecoderCache transformers fills (use_cache: each decoder layer's self- and "
                       "cross-attention keys and values) is counted, live with the output to the end");
    if (training && o->checkpointing)
        mem_note(plan, "gradient checkpointing as transformers 5's gradient_checkpointing_enable(): "
                       "torch.utils.checkpoint per decoder layer, use_reentrant=False");
    return plan;
}
