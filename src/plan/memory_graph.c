/* The memory plan of an mtk_graph: its rows as the flat arrays the
 * replay reads, its modules and roles from the trace it came from. */
#include "plan/memory_internal.h"
#include "mtk/nn.h"

/* --------------------------------------------------------------- a graph */

/* The graph's arrays: the accessors' rows when they are one array (they
 * are for mtk_graph_from_trace), else copies. */
static bool flatten(mtk_ctx *ctx, const mtk_graph *graph, mem_graph *g)
{
    g->nnodes = mtk_graph_node_count(graph);
    g->ntensors = mtk_graph_tensor_count(graph);
    g->nstorages = mtk_graph_storage_count(graph);
    g->nodes = g->nnodes ? mtk_graph_node_at(graph, 0) : NULL;
    g->tensors = g->ntensors ? mtk_graph_tensor_at(graph, 0) : NULL;
    g->storages = g->nstorages ? mtk_graph_storage_at(graph, 0) : NULL;
    if (g->nnodes && mtk_graph_node_at(graph, g->nnodes - 1) != g->nodes + g->nnodes - 1) {
        mtk_graph_node *n = mtk_ctx_alloc_uninit(ctx, (size_t)g->nnodes * sizeof *n);
        if (!n) return false;
        for (int32_t i = 0; i < g->nnodes; i++) n[i] = *mtk_graph_node_at(graph, i);
        g->nodes = n;
    }
    if (g->ntensors && mtk_graph_tensor_at(graph, g->ntensors - 1) != g->tensors + g->ntensors - 1) {
        mtk_graph_tensor *t = mtk_ctx_alloc_uninit(ctx, (size_t)g->ntensors * sizeof *t);
        if (!t) return false;
        for (int32_t i = 0; i < g->ntensors; i++) t[i] = *mtk_graph_tensor_at(graph, i);
        g->tensors = t;
    }
    if (g->nstorages && mtk_graph_storage_at(graph, g->nstorages - 1) != g->storages + g->nstorages - 1) {
        mtk_graph_storage *s = mtk_ctx_alloc_uninit(ctx, (size_t)g->nstorages * sizeof *s);
        if (!s) return false;
        for (int32_t i = 0; i < g->nstorages; i++) s[i] = *mtk_graph_storage_at(graph, i);
        g->storages = s;
    }
    return true;
}

/* Modules and roles from the trace: the root's outputs are what the
 * caller keeps; the loss is the last node's first output. */
static bool roles_from_trace(mtk_ctx *ctx, const mtk_graph *graph, mem_graph *g)
{
    const mtk_trace *tr = mtk_graph_trace(graph);
    int32_t nm = mtk_trace_module_count(tr);
    if (nm > 0) {
        const char **names = mtk_ctx_alloc(ctx, (size_t)nm * sizeof *names);
        int32_t *depths = mtk_ctx_alloc(ctx, (size_t)nm * sizeof *depths);
        int32_t *calls = mtk_ctx_alloc(ctx, (size_t)nm * sizeof *calls);
        bool *frameless = mtk_ctx_alloc(ctx, (size_t)nm * sizeof *frameless);
        if (!names || !depths || !calls || !frameless) return false;
        for (int32_t m = 0; m < nm; m++) {
            const mtk_trace_module *tm = mtk_trace_module_at(tr, m);
            names[m] = tm->name;
            depths[m] = tm->depth;
            calls[m] = tm->calls;
            frameless[m] = tm->calls == 0 && mtk_module_is_frameless(tm->module);
        }
        g->module_calls = calls;
        g->module_frameless = frameless;
        int32_t nout = 0;
        for (int32_t m = 0; m < nm; m++) nout += mtk_trace_module_at(tr, m)->noutputs;
        int32_t *start = mtk_ctx_alloc(ctx, (size_t)(nm + 1) * sizeof *start);
        int32_t *outs = mtk_ctx_alloc(ctx, (size_t)(nout ? nout : 1) * sizeof *outs);
        if (!start || !outs) return false;
        nout = 0;
        for (int32_t m = 0; m < nm; m++) {
            const mtk_trace_module *tm = mtk_trace_module_at(tr, m);
            start[m] = nout;
            for (int32_t i = 0; i < tm->noutputs; i++) outs[nout++] = mtk_graph_tensor_id(graph, tm->outputs[i]);
        }
        start[nm] = nout;
        g->module_out_start = start;
        g->module_out = outs;
        g->module_names = names;
        g->module_depths = depths;
        g->nmodules = nm;
        const mtk_trace_module *root = mtk_trace_module_at(tr, 0);
        if (root && root->noutputs > 0) {
            int32_t *keep = mtk_ctx_alloc(ctx, (size_t)root->noutputs * sizeof *keep);
            if (!keep) return false;
            for (int32_t i = 0; i < root->noutputs; i++) keep[g->nkeep++] = mtk_graph_tensor_id(graph, root->outputs[i]);
            g->keep = keep;
        }
    }
    g->loss = -1;
    for (int32_t n = g->nnodes - 1; n >= 0 && g->loss < 0; n--)
        if (g->nodes[n].noutputs > 0) g->loss = g->nodes[n].outputs[0];
    return true;
}

bool mem_graph_of(mtk_ctx *ctx, const mtk_graph *graph, mem_graph *g)
{
    *g = (mem_graph){ .loss = -1 };
    return flatten(ctx, graph, g) && roles_from_trace(ctx, graph, g);
}

mtk_memory_plan *mtk_memory_plan_graph(mtk_ctx *ctx, const mtk_graph *graph, const mtk_memory_options *options)
{
    if (!ctx) return NULL;
    if (!graph || !options) {
        mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "memory: NULL graph or options");
        return NULL;
    }
    if (!mem_options_check(ctx, options)) return NULL;
    mem_graph g;
    if (!mem_graph_of(ctx, graph, &g)) return NULL;
    mtk_memory_plan *plan = mtk_ctx_alloc(ctx, sizeof *plan);
    if (!plan) return NULL;
    plan->options = *options;
    if (!mem_replay(ctx, &g, options, plan)) return NULL;
    if (options->device_kind == MTK_DEVICE_KIND_CUDA) plan->overhead_bytes = options->constants.cuda_context_bytes;
    return plan;
}
