/* Saved activations: what a traced forward keeps for backward, counted as
 * torch's saved_tensors_hooks see it (each storage once, parameters left
 * out).  An analysis of the graph's nodes' saved entries. */
#include "plan/graph.h"

#include <string.h>

int32_t mtk_graph_saved_entry_storage(const mtk_graph *g, const mtk_graph_node *node, const mtk_saved *s)
{
    if (!g || !node || !s) return -1;
    if (s->kind == MTK_SAVED_INPUT && s->index >= 0 && s->index < node->ninputs)
        return g->tensors[node->inputs[s->index]].storage;
    if (s->kind == MTK_SAVED_OUTPUT && s->index >= 0 && s->index < node->noutputs)
        return g->tensors[node->outputs[s->index]].storage;
    return -1;
}

int64_t mtk_graph_saved_entry_bytes(const mtk_graph *g, const mtk_graph_node *node, const mtk_saved *s)
{
    int32_t storage = mtk_graph_saved_entry_storage(g, node, s);
    if (storage >= 0) return g->storages[storage].nbytes;
    if (!s || s->kind != MTK_SAVED_NEW) return 0;
    int64_t numel = mtk_shape_numel(s->shape, s->ndim);
    return numel < 0 ? 0 : numel * (int64_t)mtk_dtype_size(s->dtype);
}

int64_t mtk_graph_saved_bytes(const mtk_graph *g, int64_t *per_module)
{
    if (!g) return 0;
    int32_t nmodules = mtk_trace_module_count(g->trace);
    if (per_module) memset(per_module, 0, (size_t)nmodules * sizeof *per_module);
    bool *counted = mtk_ctx_malloc(g->ctx, (size_t)(g->nstorages ? g->nstorages : 1) * sizeof *counted);
    if (!counted) return -1;
    memset(counted, 0, (size_t)(g->nstorages ? g->nstorages : 1) * sizeof *counted);
    int64_t total = 0;
    for (int32_t n = 0; n < g->nnodes; n++) {
        const mtk_graph_node *node = &g->nodes[n];
        for (int32_t i = 0; i < node->nsaved; i++) {
            int32_t storage = mtk_graph_saved_entry_storage(g, node, &node->saved[i]);
            if (storage >= 0) {
                if (counted[storage] || g->storages[storage].kind == MTK_STORAGE_PARAMETER) continue;
                counted[storage] = true;
            }
            int64_t bytes = mtk_graph_saved_entry_bytes(g, node, &node->saved[i]);
            total += bytes;
            if (per_module && node->module >= 0 && node->module < nmodules) per_module[node->module] += bytes;
        }
    }
    mtk_ctx_mfree(g->ctx, counted);
    return total;
}
