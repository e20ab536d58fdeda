/* The traced graph: a finished trace turned into ids.  Tensors are
 * numbered in the order they first appear (parameters and buffers of the
 * traced tree first, with their names); a view shares its base's storage;
 * each node keeps its arguments, its inputs and outputs as ids, and what
 * the op table's autograd columns say it keeps for backward. */
#include "plan/graph.h"

#include "nn/ptrset.h"
#include "nn/trace_internal.h"
#include "ops/autograd.h"

#include <string.h>

/* Bytes torch's allocator is asked for when t is a fresh tensor: its
 * extent (numel x itemsize when contiguous). */
int64_t plan_tensor_extent_bytes(const mtk_tensor *t)
{
    int64_t span = t->storage_offset + 1;
    for (int32_t d = 0; d < t->ndim; d++) {
        if (t->shape[d] == 0) return 0;
        span += (t->shape[d] - 1) * t->stride[d];
    }
    return span * (int64_t)mtk_dtype_size(t->dtype);
}

static bool grow(mtk_ctx *ctx, void **items, int32_t *cap, int32_t need, size_t size)
{
    if (need <= *cap) return true;
    int32_t n = *cap ? *cap : 64;
    while (n < need) n *= 2;
    void *p = mtk_ctx_alloc(ctx, (size_t)n * size);
    if (!p) return false;
    if (*cap) memcpy(p, *items, (size_t)*cap * size);
    *items = p;
    *cap = n;
    return true;
}

static int32_t add_storage(mtk_graph *g, int64_t nbytes, mtk_graph_storage_kind kind, int32_t base)
{
    if (!grow(g->ctx, (void **)&g->storages, &g->storage_cap, g->nstorages + 1, sizeof *g->storages)) return -1;
    g->storages[g->nstorages] = (mtk_graph_storage){ .nbytes = nbytes, .kind = kind, .base = base };
    return g->nstorages++;
}

/* A new tensor id for `key` (the traced tensor) with the geometry of t
 * (the device's layout, usually key itself): its own storage of `kind`,
 * or a view of `view_of`. */
static int32_t add_tensor_as(mtk_graph *g, const mtk_tensor *key, mtk_tensor *t, mtk_graph_storage_kind kind,
                             int32_t view_of, int32_t producer, bool requires_grad, const char *name)
{
    if (!grow(g->ctx, (void **)&g->tensors, &g->tensor_cap, g->ntensors + 1, sizeof *g->tensors)) return -1;
    int32_t id = g->ntensors;
    int32_t storage = view_of >= 0 ? g->tensors[view_of].storage
                                   : add_storage(g, plan_tensor_extent_bytes(t), kind, id);
    if (storage < 0) return -1;
    g->tensors[id] = (mtk_graph_tensor){ .tensor = t, .storage = storage, .view_of = view_of,
                                         .producer = producer, .requires_grad = requires_grad, .name = name };
    if (nn_ptrset_add(&g->ids, key, (void *)(intptr_t)(id + 1)) < 0) return -1;
    g->ntensors++;
    return id;
}

static int32_t add_tensor(mtk_graph *g, mtk_tensor *t, mtk_graph_storage_kind kind, int32_t view_of, int32_t producer,
                          bool requires_grad, const char *name)
{
    return add_tensor_as(g, t, t, kind, view_of, producer, requires_grad, name);
}

int32_t mtk_graph_tensor_id(const mtk_graph *g, const mtk_tensor *t)
{
    if (!g || !t) return -1;
    return (int32_t)(intptr_t)nn_ptrset_get(&g->ids, t) - 1;
}

/* Ids for the traced tree's parameters and buffers, named. */
static bool add_module_tensors(mtk_graph *g, mtk_module *root)
{
    mtk_named_tensor *params, *buffers;
    int32_t np = mtk_module_named_parameters(root, &params);
    int32_t nb = mtk_module_named_buffers(root, &buffers);
    if (np < 0 || nb < 0) return false;
    for (int32_t i = 0; i < np; i++) {
        mtk_tensor *t = params[i].tensor;
        if (mtk_graph_tensor_id(g, t) >= 0) continue;
        bool rg = (t->flags & MTK_TENSOR_REQUIRES_GRAD) != 0;
        if (add_tensor(g, t, MTK_STORAGE_PARAMETER, -1, -1, rg, params[i].name) < 0) return false;
    }
    for (int32_t i = 0; i < nb; i++) {
        mtk_tensor *t = buffers[i].tensor;
        if (!t || mtk_graph_tensor_id(g, t) >= 0) continue;
        if (add_tensor(g, t, MTK_STORAGE_BUFFER, -1, -1, false, buffers[i].name) < 0) return false;
    }
    return true;
}

/* An input seen for the first time: given to the traced call or made
 * outside it. */
static int32_t input_id(mtk_graph *g, mtk_tensor *t)
{
    int32_t id = mtk_graph_tensor_id(g, t);
    if (id >= 0) return id;
    return add_tensor(g, t, MTK_STORAGE_INPUT, -1, -1, (t->flags & MTK_TENSOR_REQUIRES_GRAD) != 0, NULL);
}

/* Per argument, the index of its first tensor among the flattened inputs
 * (the order the trace recorded them in). */
static void map_args(const mtk_trace_op *op, int32_t *arg_input)
{
    int32_t k = 0;
    for (int32_t a = 0; a < op->nargs; a++) {
        const mtk_value *v = &op->args[a];
        arg_input[a] = -1;
        if (k >= op->ninputs) continue; /* a record cut short by out of memory */
        if (v->kind == MTK_VALUE_TENSOR && v->as.tensor) {
            arg_input[a] = k++;
        } else if (v->kind == MTK_VALUE_LIST || v->kind == MTK_VALUE_TUPLE) {
            for (int32_t i = 0; i < v->as.list.count; i++)
                if (v->as.list.items[i].kind == MTK_VALUE_TENSOR && v->as.list.items[i].as.tensor) {
                    if (arg_input[a] < 0) arg_input[a] = k;
                    k++;
                }
        }
    }
}

/* An empty autograd result: the counts only (each column's function
 * fills the entries it adds in full), not the 2.5 KB of entries, which
 * cleared twice per node were a large part of recording a big graph. */
static void clear_result(mtk_autograd_result *r)
{
    r->nsaved = 0;
    r->nbackward = 0;
    r->transient_bytes = 0;
}

static bool record_node(mtk_graph *g, const mtk_trace_op *op, int32_t index)
{
    mtk_ctx *ctx = g->ctx;
    mtk_graph_node *node = &g->nodes[index];
    *node = (mtk_graph_node){ .op = op->def, .args = op->args, .nargs = op->nargs, .module = op->module_index,
                              .flops = op->flops };
    int32_t *inputs = op->ninputs ? mtk_ctx_alloc(ctx, (size_t)op->ninputs * sizeof *inputs) : NULL;
    bool *input_rg = op->ninputs ? mtk_ctx_alloc(ctx, (size_t)op->ninputs * sizeof *input_rg) : NULL;
    int32_t *outputs = op->noutputs ? mtk_ctx_alloc(ctx, (size_t)op->noutputs * sizeof *outputs) : NULL;
    if ((op->ninputs && (!inputs || !input_rg)) || (op->noutputs && !outputs)) return false;
    bool any_rg = false, relaid = false;
    mtk_tensor **geom_in = op->ninputs ? mtk_ctx_alloc(ctx, (size_t)op->ninputs * sizeof *geom_in) : NULL;
    if (op->ninputs && !geom_in) return false;
    for (int32_t i = 0; i < op->ninputs; i++) {
        inputs[i] = input_id(g, op->inputs[i]);
        if (inputs[i] < 0) return false;
        input_rg[i] = g->tensors[inputs[i]].requires_grad;
        any_rg = any_rg || input_rg[i];
        geom_in[i] = g->tensors[inputs[i]].tensor;
        relaid = relaid || geom_in[i] != op->inputs[i];
    }
    int32_t arg_input[MTK_MAX_OP_ARGS];
    map_args(op, arg_input);
    mtk_autograd_query q = {
        .op = op->def, .args = op->args, .nargs = op->nargs, .arg_input = arg_input,
        .inputs = geom_in, .input_requires_grad = input_rg, .ninputs = op->ninputs,
        .noutputs = op->noutputs, .device_kind = g->device_kind,
    };
    /* the outputs' geometry: as traced, or replayed on the device layouts
       of the inputs, then the device's own layout where it differs */
    mtk_tensor *geom[MTK_MAX_OP_ARGS];
    int8_t views[MTK_MAX_OP_ARGS];
    if (op->noutputs > MTK_MAX_OP_ARGS) return false;
    for (int32_t o = 0; o < op->noutputs; o++) {
        geom[o] = op->outputs[o];
        views[o] = op->out_view_of ? op->out_view_of[o] : -1;
    }
    if (relaid) plan_replay_meta(g, op, geom, views);
    for (int32_t o = 0; o < op->noutputs; o++) {
        mtk_tensor *t = op->outputs[o];
        int32_t id = mtk_graph_tensor_id(g, t); /* in place, or an input returned as is */
        if (id < 0) {
            int32_t arg = views[o];
            int32_t base = arg >= 0 && arg < op->nargs && arg_input[arg] >= 0 && arg_input[arg] < op->ninputs
                               ? inputs[arg_input[arg]]
                               : -1;
            mtk_tensor *device = base < 0 ? plan_device_layout(g, op->def, &q, o, geom[o]) : NULL;
            if (device) geom[o] = device;
            bool rg = any_rg && mtk_dtype_is_floating(t->dtype);
            id = add_tensor_as(g, t, geom[o], MTK_STORAGE_ACTIVATION, base, index, rg, NULL);
            if (id < 0) return false;
        }
        outputs[o] = id;
        geom[o] = g->tensors[id].tensor;
    }
    node->inputs = inputs;
    node->ninputs = op->ninputs;
    node->outputs = outputs;
    node->noutputs = op->noutputs;
    if (!op->def) return true;
    q.outputs = geom;

    mtk_autograd_result *r = &g->scratch;
    clear_result(r);
    int64_t nograd = 0;
    if (op->def->backward) {
        /* no autograd node: only the forward's workspace is left */
        bool *none = op->ninputs ? mtk_ctx_alloc(ctx, (size_t)op->ninputs * sizeof *none) : NULL;
        if (op->ninputs && !none) return false;
        if (none) memset(none, 0, (size_t)op->ninputs * sizeof *none);
        mtk_autograd_query q0 = q;
        q0.input_requires_grad = none;
        op->def->backward(&q0, r);
        nograd = r->transient_bytes;
        clear_result(r);
    }
    if (any_rg) {
        if (op->def->saved) op->def->saved(&q, r);
        if (op->def->backward) op->def->backward(&q, r);
        else ag_backward_grads(&q, r);
    } else {
        r->transient_bytes = nograd;
    }
    node->transient_nograd_bytes = nograd;
    if (r->nsaved) {
        mtk_saved *saved = mtk_ctx_alloc(ctx, (size_t)r->nsaved * sizeof *saved);
        if (!saved) return false;
        memcpy(saved, r->saved, (size_t)r->nsaved * sizeof *saved);
        node->saved = saved;
        node->nsaved = r->nsaved;
    }
    if (r->nbackward) {
        mtk_backward_alloc *b = mtk_ctx_alloc(ctx, (size_t)r->nbackward * sizeof *b);
        if (!b) return false;
        memcpy(b, r->backward, (size_t)r->nbackward * sizeof *b);
        node->backward = b;
        node->nbackward = r->nbackward;
    }
    node->transient_bytes = r->transient_bytes;
    return true;
}

mtk_graph *mtk_graph_from_trace_on(const mtk_trace *trace, mtk_device_kind device_kind)
{
    if (!trace) return NULL;
    mtk_ctx *ctx = trace->ctx;
    if (mtk_ctx_status(ctx) != MTK_OK) return NULL; /* the record may be cut short */
    mtk_graph *g = mtk_ctx_alloc(ctx, sizeof *g);
    if (!g) return NULL;
    memset(g, 0, sizeof *g);
    g->ctx = ctx;
    g->trace = trace;
    g->device_kind = device_kind;
    nn_ptrset_init(&g->ids, ctx);
    g->nodes = mtk_ctx_alloc(ctx, (size_t)(trace->nops ? trace->nops : 1) * sizeof *g->nodes);
    bool ok = g->nodes && add_module_tensors(g, trace->root);
    for (int32_t i = 0; ok && i < trace->nops; i++) ok = record_node(g, &trace->ops[i], i);
    if (ok) g->nnodes = trace->nops;
    /* the id map stays for mtk_graph_tensor_id: moved into the arena, so
       that it goes with the context (no more adds after this) */
    if (ok && g->ids.cap) {
        const void **keys = mtk_ctx_alloc(ctx, g->ids.cap * sizeof *keys);
        void **values = mtk_ctx_alloc(ctx, g->ids.cap * sizeof *values);
        ok = keys && values;
        if (ok) {
            memcpy(keys, g->ids.keys, g->ids.cap * sizeof *keys);
            memcpy(values, g->ids.values, g->ids.cap * sizeof *values);
            size_t cap = g->ids.cap, count = g->ids.count;
            nn_ptrset_free(&g->ids);
            g->ids = (ptrset){ .ctx = ctx, .keys = keys, .values = values, .cap = cap, .count = count };
        }
    }
    if (!ok) {
        nn_ptrset_free(&g->ids);
        if (mtk_ctx_status(ctx) == MTK_OK) mtk_error(ctx, MTK_ERR_OUT_OF_MEMORY, "graph: out of memory");
        return NULL;
    }
    return g;
}

mtk_graph *mtk_graph_from_trace(const mtk_trace *trace)
{
    return mtk_graph_from_trace_on(trace, MTK_DEVICE_KIND_CPU);
}

int32_t mtk_graph_node_count(const mtk_graph *g) { return g ? g->nnodes : 0; }
const mtk_graph_node *mtk_graph_node_at(const mtk_graph *g, int32_t i)
{
    return g && i >= 0 && i < g->nnodes ? &g->nodes[i] : NULL;
}
int32_t mtk_graph_tensor_count(const mtk_graph *g) { return g ? g->ntensors : 0; }
const mtk_graph_tensor *mtk_graph_tensor_at(const mtk_graph *g, int32_t i)
{
    return g && i >= 0 && i < g->ntensors ? &g->tensors[i] : NULL;
}
int32_t mtk_graph_storage_count(const mtk_graph *g) { return g ? g->nstorages : 0; }
const mtk_graph_storage *mtk_graph_storage_at(const mtk_graph *g, int32_t i)
{
    return g && i >= 0 && i < g->nstorages ? &g->storages[i] : NULL;
}
const mtk_trace *mtk_graph_trace(const mtk_graph *g) { return g ? g->trace : NULL; }
mtk_device_kind mtk_graph_device_kind(const mtk_graph *g) { return g ? g->device_kind : MTK_DEVICE_KIND_CPU; }
