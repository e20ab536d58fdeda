/* The per-device replay of a placement: every node of the traced graphs
 * runs on the device of the module it ran in (an offloaded module on the
 * execution device), every storage lives on the device of the node that
 * made it from that node to its last use anywhere (kept tensors, the
 * logits and the KV cache, to the end), and a device that reads a
 * storage made elsewhere holds a copy from its first use there to its
 * last (accelerate's hooks move a module's inputs to its device).
 * An offloaded module's own weights are streamed to the execution device
 * for the span of its nodes (accelerate's AlignDevicesHook sits on each
 * module that holds tensors and moves them in and out around its
 * forward).  Parameters and buffers are the weights,
 * counted apart. */
#include "plan/place_internal.h"

#include <string.h>

int32_t place_exec_of(const place_state *st, int32_t device)
{
    if (device < 0) return -1;
    return st->o->devices[device].kind == MTK_PLACE_GPU ? device : st->exec;
}

bool place_sim_init(place_state *st)
{
    int32_t nodes = 1, storages = 1;
    for (int32_t i = 0; i < st->ngraphs; i++) {
        if (st->graphs[i].g.nnodes > nodes) nodes = st->graphs[i].g.nnodes;
        if (st->graphs[i].g.nstorages > storages) storages = st->graphs[i].g.nstorages;
    }
    size_t per = (size_t)storages * (size_t)st->ndev;
    st->node_dev = mtk_ctx_alloc(st->ctx, (size_t)nodes * sizeof *st->node_dev);
    st->first_use = mtk_ctx_alloc(st->ctx, per * sizeof *st->first_use);
    st->last_use = mtk_ctx_alloc(st->ctx, per * sizeof *st->last_use);
    st->last_any = mtk_ctx_alloc(st->ctx, (size_t)storages * sizeof *st->last_any);
    st->span = mtk_ctx_alloc(st->ctx, 2 * (size_t)(st->nmodules + 1) * sizeof *st->span);
    st->delta = mtk_ctx_alloc(st->ctx, (size_t)st->ndev * (size_t)(nodes + 1) * sizeof *st->delta);
    return st->node_dev && st->first_use && st->last_use && st->last_any && st->span && st->delta;
}

/* Bytes an allocation takes on device d: the CUDA caching allocator's
 * blocks on a GPU, exact on the cpu. */
static int64_t alloc_bytes(const place_state *st, int32_t d, int64_t nbytes)
{
    int64_t block = st->o->constants.cuda_block_bytes;
    if (st->o->devices[d].kind != MTK_PLACE_GPU || block <= 1 || nbytes <= 0) return nbytes;
    return (nbytes + block - 1) / block * block;
}

/* Live bytes on device d from node `from` to node `to`, both included. */
static void charge(place_state *st, int32_t nnodes, int32_t d, int32_t from, int32_t to, int64_t bytes)
{
    if (d < 0 || bytes <= 0 || from < 0) return;
    if (to < from) to = from;
    int64_t *row = st->delta + (size_t)d * (size_t)(nnodes + 1);
    row[from] += alloc_bytes(st, d, bytes);
    row[to + 1] -= alloc_bytes(st, d, bytes);
}

/* The device node n runs on: its module's item's, or for a node of a
 * split module (the glue of LlamaModel.forward: masks, positions) the
 * device of the first activation it reads, else the execution device;
 * -1 while that is not placed. */
static int32_t node_device(place_state *st, const place_graph *pg, int32_t n)
{
    int32_t m = pg->node_module[n];
    int32_t state = st->modules[m].state;
    if (state >= 0) return place_exec_of(st, st->items[state].device);
    if (state == PLACE_PENDING) return -1;
    const mtk_graph_node *node = &pg->g.nodes[n];
    for (int32_t i = 0; i < node->ninputs; i++) {
        const mtk_graph_tensor *t = &pg->g.tensors[node->inputs[i]];
        if (pg->g.storages[t->storage].kind != MTK_STORAGE_ACTIVATION) continue;
        int32_t p = pg->g.tensors[pg->g.storages[t->storage].base].producer;
        if (p >= 0) return st->node_dev[p];
    }
    return st->exec;
}

static void sim_graph(place_state *st, const place_graph *pg, place_usage *u)
{
    const mem_graph *g = &pg->g;
    int32_t nn = g->nnodes, nd = st->ndev, ns = g->nstorages;
    if (nn == 0) return;
    memset(st->delta, 0, (size_t)nd * (size_t)(nn + 1) * sizeof *st->delta);
    for (size_t i = 0; i < (size_t)ns * (size_t)nd; i++) st->first_use[i] = st->last_use[i] = -1;
    for (int32_t s = 0; s < ns; s++) st->last_any[s] = -1;
    for (int32_t i = 0; i < 2 * st->nmodules; i++) st->span[i] = -1;
    for (int32_t n = 0; n < nn; n++) {
        int32_t d = st->node_dev[n] = node_device(st, pg, n);
        const mtk_graph_node *node = &g->nodes[n];
        for (int32_t i = 0; i < node->ninputs; i++) {
            int32_t s = g->tensors[node->inputs[i]].storage;
            st->last_any[s] = n;
            if (d < 0) continue;
            size_t k = (size_t)s * (size_t)nd + (size_t)d;
            if (st->first_use[k] < 0) st->first_use[k] = n;
            st->last_use[k] = n;
        }
        charge(st, nn, d, n, n, node->transient_nograd_bytes);
        /* the span of an offloaded module's nodes: its weights streamed in */
        int32_t m = pg->node_module[n], item = st->modules[m].state;
        if (item >= 0 && d >= 0 && st->items[item].device != d) {
            if (st->span[2 * m] < 0) st->span[2 * m] = n;
            st->span[2 * m + 1] = n;
        }
    }
    for (int32_t k = 0; k < g->nkeep; k++)
        if (g->keep[k] >= 0) st->last_any[g->tensors[g->keep[k]].storage] = nn - 1;
    for (int32_t s = 0; s < ns; s++) {
        const mtk_graph_storage *sg = &g->storages[s];
        if (sg->kind == MTK_STORAGE_PARAMETER || sg->kind == MTK_STORAGE_BUFFER) continue;
        int32_t home = -1, start = 0;
        if (sg->kind == MTK_STORAGE_ACTIVATION) {
            start = g->tensors[sg->base].producer;
            if (start >= 0) home = st->node_dev[start];
        } else { /* an input: where it is first read */
            int32_t first = nn;
            for (int32_t d = 0; d < nd; d++) {
                int32_t f = st->first_use[(size_t)s * (size_t)nd + (size_t)d];
                if (f >= 0 && f < first) first = f, home = d;
            }
        }
        if (start < 0) start = 0;
        charge(st, nn, home, start, st->last_any[s], sg->nbytes);
        for (int32_t d = 0; d < nd; d++) {
            size_t k = (size_t)s * (size_t)nd + (size_t)d;
            if (d != home && st->first_use[k] >= 0) charge(st, nn, d, st->first_use[k], st->last_use[k], sg->nbytes);
        }
    }
    for (int32_t m = 0; m < st->nmodules; m++)
        if (st->span[2 * m] >= 0)
            charge(st, nn, st->exec, st->span[2 * m], st->span[2 * m + 1], st->modules[m].own_bytes);
    for (int32_t d = 0; d < nd; d++) {
        const int64_t *row = st->delta + (size_t)d * (size_t)(nn + 1);
        int64_t live = 0;
        for (int32_t n = 0; n < nn; n++) {
            live += row[n];
            if (live > u->active[d]) u->active[d] = live, u->at_module[d] = pg->node_module[n];
        }
    }
}

void place_sim(place_state *st, place_usage *u)
{
    memset(u, 0, sizeof *u);
    for (int32_t i = 0; i < st->ngraphs; i++) sim_graph(st, &st->graphs[i], u);
}
