/* Preparing a memory replay (last uses, the loss's backward path,
 * checkpointed layers and what they keep) and turning its record into
 * the plan's timeline and module table. */
#include "plan/memory_sim.h"
#include "mtk/op.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

const char *mem_op_name(const mtk_op_def *op) { return op && op->name ? op->name : "?"; }

static void *owned(mem_sim *s, size_t count, size_t size, int fill)
{
    if (s->oom) return NULL;
    size_t bytes = (count ? count : 1) * size;
    void *p = mtk_ctx_malloc(s->ctx, bytes);
    if (!p || s->nowned == (int32_t)(sizeof s->owned / sizeof s->owned[0])) {
        mtk_ctx_mfree(s->ctx, p);
        s->oom = true;
        return NULL;
    }
    memset(p, fill, bytes);
    s->owned[s->nowned++] = p;
    return p;
}

void mem_sim_free(mem_sim *s)
{
    for (int32_t i = 0; i < s->nowned; i++) mtk_ctx_mfree(s->ctx, s->owned[i]);
    mtk_ctx_mfree(s->ctx, s->bufs);
    mtk_ctx_mfree(s->ctx, s->free_ids);
    s->nowned = 0;
    s->bufs = NULL;
    s->free_ids = NULL;
}

bool mem_numbered_module(const char *name)
{
    const char *dot = strrchr(name, '.');
    const char *last = dot ? dot + 1 : name;
    if (!*last) return false;
    for (const char *p = last; *p; p++)
        if (*p < '0' || *p > '9') return false;
    return true;
}

static bool node_units(mem_sim *s, int32_t *unit_of, int32_t nunits);

/* Ops that move data without arithmetic: what repeat_kv (expand, then
 * reshape) and a key/value slice do between the projections and sdpa. */
static bool movement_op(const mtk_op_def *op)
{
    static const char *const names[] = { "expand", "reshape", "view", "transpose", "unsqueeze",
                                         "slice", "narrow", "contiguous", "clone" };
    for (size_t i = 0; op && op->name && i < sizeof names / sizeof names[0]; i++)
        if (strcmp(op->name, names[i]) == 0) return true;
    return false;
}

/* Whether an output of node m is an input of a node of core c in
 * (m, end]. */
static bool feeds_core(const mem_graph *g, int32_t m, int32_t end, const int32_t *unit_of, int32_t c)
{
    const mtk_graph_node *node = &g->nodes[m];
    for (int32_t k = m + 1; k <= end; k++) {
        if (unit_of[k] != c) continue;
        for (int32_t i = 0; i < g->nodes[k].ninputs; i++)
            for (int32_t o = 0; o < node->noutputs; o++)
                if (node->outputs[o] >= 0 && g->nodes[k].inputs[i] == node->outputs[o]) return true;
    }
    return false;
}

int32_t mem_attention_cores(const mem_graph *g, int32_t *unit_of)
{
    int32_t ncores = 0;
    for (int32_t n = 0; n < g->nnodes; n++) unit_of[n] = -1;
    for (int32_t n = 0; n < g->nnodes; n++) {
        const mtk_op_def *op = g->nodes[n].op;
        if (!op || !op->name || strcmp(op->name, "scaled_dot_product_attention") != 0) continue;
        int32_t first = n, module = g->nodes[n].module;
        unit_of[n] = ncores;
        while (first > 0 && unit_of[first - 1] < 0 && g->nodes[first - 1].module == module &&
               movement_op(g->nodes[first - 1].op) && feeds_core(g, first - 1, n, unit_of, ncores))
            unit_of[--first] = ncores;
        ncores++;
    }
    return ncores;
}

/* Layers = the shallowest numbered modules (not MoE experts inside them);
 * under selective recompute, the attention cores. */
static bool find_units(mem_sim *s)
{
    const mem_graph *g = s->g;
    if (g->attention_cores) {
        int32_t *unit_of = owned(s, (size_t)g->nnodes, sizeof *unit_of, 0xff);
        if (!unit_of) return false;
        int32_t ncores = mem_attention_cores(g, unit_of);
        return ncores == 0 || node_units(s, unit_of, ncores);
    }
    int32_t depth = INT_MAX;
    for (int32_t m = 0; m < g->nmodules; m++)
        if (mem_numbered_module(g->module_names[m]) && g->module_depths[m] < depth) depth = g->module_depths[m];
    if (depth == INT_MAX && !g->units) return true;
    int32_t *unit_of_module = owned(s, (size_t)g->nmodules, sizeof *unit_of_module, 0xff);
    bool *is_unit = owned(s, (size_t)g->nmodules, sizeof *is_unit, 0);
    if (!unit_of_module || !is_unit) return false;
    for (int32_t m = 0; m < g->nmodules; m++)
        is_unit[m] = !g->units && g->module_depths[m] == depth && mem_numbered_module(g->module_names[m]);
    for (int32_t i = 0; g->units && i < g->nunits; i++)
        if (g->units[i] >= 0 && g->units[i] < g->nmodules) is_unit[g->units[i]] = true;
    int32_t nunits = 0;
    for (int32_t m = 0; m < g->nmodules; m++) {
        if (is_unit[m]) unit_of_module[m] = nunits++;
        else if (s->parent[m] >= 0) unit_of_module[m] = unit_of_module[s->parent[m]];
    }
    if (!nunits) return true;
    int32_t *unit_of = owned(s, (size_t)g->nnodes, sizeof *unit_of, 0xff);
    if (!unit_of) return false;
    for (int32_t n = 0; n < g->nnodes; n++) {
        int32_t m = g->nodes[n].module;
        unit_of[n] = m >= 0 && m < g->nmodules ? unit_of_module[m] : -1;
    }
    return node_units(s, unit_of, nunits);
}

/* The checkpointed units' extents from each node's unit (-1: none; a
 * unit's nodes in one run), and the storages each keeps (pins). */
static bool node_units(mem_sim *s, int32_t *unit_of, int32_t nunits)
{
    const mem_graph *g = s->g;
    s->nunits = nunits;
    s->unit_of = unit_of;
    s->unit_first = owned(s, (size_t)nunits, sizeof *s->unit_first, 0xff);
    s->unit_stop = owned(s, (size_t)nunits, sizeof *s->unit_stop, 0xff);
    s->pin_start = owned(s, (size_t)nunits + 1, sizeof *s->pin_start, 0);
    s->rngbuf = owned(s, (size_t)nunits, sizeof *s->rngbuf, 0xff);
    int32_t *stamp = owned(s, (size_t)g->nstorages, sizeof *stamp, 0xff);
    if (s->oom) return false;
    for (int32_t n = 0; n < g->nnodes; n++) {
        int32_t u = s->unit_of[n];
        if (u < 0) continue;
        if (s->unit_first[u] < 0) s->unit_first[u] = n;
        if (s->need[n] && g->nodes[n].nsaved > 0) s->unit_stop[u] = n;
    }
    /* the layer's inputs made outside it: kept by the checkpoint */
    int32_t npins = 0, cap = 0;
    for (int pass = 0; pass < 2; pass++) {
        npins = 0;
        for (int32_t i = 0; i < g->nstorages; i++) stamp[i] = -1;
        for (int32_t n = 0; n < g->nnodes; n++) {
            int32_t u = s->unit_of[n];
            if (u < 0) continue;
            if (pass == 1 && n == s->unit_first[u]) s->pin_start[u] = npins;
            const mtk_graph_node *node = &g->nodes[n];
            for (int32_t k = 0; k < node->ninputs; k++) {
                int32_t t = node->inputs[k];
                if (t < 0) continue;
                int32_t st = g->tensors[t].storage;
                int32_t p = s->produced_by[st];
                if (p < 0 || p >= s->unit_first[u] || stamp[st] == u) continue;
                stamp[st] = u;
                if (pass == 1) s->pins[npins] = st;
                npins++;
            }
        }
        if (pass == 0) {
            cap = npins;
            s->pins = owned(s, (size_t)cap, sizeof *s->pins, 0);
            s->pinbuf = owned(s, (size_t)cap, sizeof *s->pinbuf, 0xff);
            if (s->oom) return false;
        }
    }
    /* pin_start[u + 1] is the end of u's run: units are in node order */
    for (int32_t u = nunits - 1; u >= 0; u--)
        if (s->unit_first[u] < 0) s->pin_start[u] = u + 1 <= nunits - 1 ? s->pin_start[u + 1] : npins;
    s->pin_start[nunits] = npins;
    return true;
}

static void mark_backward_path(mem_sim *s)
{
    const mem_graph *g = s->g;
    bool *on = (bool *)s->scratch; /* ntensors bools: scratch is big enough */
    memset(on, 0, (size_t)g->ntensors);
    on[g->loss] = true;
    for (int32_t n = g->nnodes - 1; n >= 0; n--) {
        const mtk_graph_node *node = &g->nodes[n];
        bool need = false;
        for (int32_t k = 0; k < node->noutputs && !need; k++) {
            int32_t t = node->outputs[k];
            need = t >= 0 && on[t] && g->tensors[t].requires_grad;
        }
        s->need[n] = need;
        if (!need) continue;
        for (int32_t k = 0; k < node->ninputs; k++) {
            int32_t t = node->inputs[k];
            if (t >= 0 && g->tensors[t].requires_grad) on[t] = true;
        }
    }
}

/* Per parameter storage, the backward edges into its AccumulateGrad:
 * one per input slot of a node on the loss's path that reads the
 * parameter itself (a tied weight read by the embedding and lm_head has
 * two).  torch's engine runs AccumulateGrad when the last one reports. */
static void count_param_edges(mem_sim *s)
{
    const mem_graph *g = s->g;
    for (int32_t n = 0; n < g->nnodes; n++) {
        if (!s->need[n]) continue;
        const mtk_graph_node *node = &g->nodes[n];
        for (int32_t k = 0; k < node->ninputs; k++)
            if (mem_is_param_tensor(g, node->inputs[k])) s->pedges[g->tensors[node->inputs[k]].storage]++;
    }
}

bool mem_is_param_tensor(const mem_graph *g, int32_t t)
{
    if (t < 0 || t >= g->ntensors) return false;
    const mtk_graph_tensor *tt = &g->tensors[t];
    return tt->requires_grad && tt->view_of < 0 && tt->producer < 0 &&
           g->storages[tt->storage].kind == MTK_STORAGE_PARAMETER;
}

/* Modules' parents from the pre-order depths, and their tables. */
static bool module_parents(mem_sim *s)
{
    const mem_graph *g = s->g;
    if (g->nmodules == 0) return true;
    int32_t stack[64], depth = 0;
    for (int32_t m = 0; m < g->nmodules; m++) {
        int32_t d = g->module_depths[m];
        while (depth > 0 && g->module_depths[stack[depth - 1]] >= d) depth--;
        s->parent[m] = depth > 0 ? stack[depth - 1] : -1;
        if (depth < 64) stack[depth++] = m;
    }
    s->mod_peak = owned(s, (size_t)g->nmodules, sizeof *s->mod_peak, 0);
    s->mod_saved = owned(s, (size_t)g->nmodules, sizeof *s->mod_saved, 0);
    return !s->oom;
}

/* A module call's arguments are held by the caller's frame until the call
 * returns (Python passes references: `self.self_attn(self.norm(h))` keeps
 * the norm's output through the attention), so a tensor made before a
 * module call and used inside it lives at least to the call's last node.
 * An output the caller never uses (`hidden, _ = self.self_attn(...)`: eager
 * attention's weights) is bound in its frame until the caller returns.
 * Modules called more than once span several calls: left out.  A container
 * (never called) holds like a call, as the loop's frame keeping its first
 * input does, unless it is frameless. */
static bool caller_holds(mem_sim *s)
{
    const mem_graph *g = s->g;
    int32_t nm = g->nmodules;
    if (nm == 0) return true;
    int32_t *first = owned(s, (size_t)nm, sizeof *first, 0xff);
    int32_t *last = owned(s, (size_t)nm, sizeof *last, 0xff);
    if (s->oom) return false;
    for (int32_t n = 0; n < g->nnodes; n++) {
        for (int32_t m = g->nodes[n].module; m >= 0 && m < nm; m = s->parent[m]) {
            if (first[m] < 0) first[m] = n;
            last[m] = n;
        }
    }
    for (int32_t n = 0; n < g->nnodes; n++) {
        const mtk_graph_node *node = &g->nodes[n];
        for (int32_t k = 0; k < node->ninputs; k++) {
            if (node->inputs[k] < 0) continue;
            int32_t st = g->tensors[node->inputs[k]].storage, p = s->produced_by[st];
            if (p < 0) continue;
            /* the outermost call that started after the producer */
            int32_t end = -1;
            for (int32_t m = node->module; m >= 0 && m < nm && first[m] > p; m = s->parent[m])
                if ((!g->module_calls || g->module_calls[m] <= 1) && !(g->module_frameless && g->module_frameless[m]))
                    end = last[m];
            if (end > s->lastuse[st]) s->lastuse[st] = end;
        }
    }
    for (int32_t m = 1; g->module_out_start && m < nm; m++) {
        int32_t p = s->parent[m];
        while (p >= 0 && g->module_frameless && g->module_frameless[p]) p = s->parent[p]; /* the frame is above */
        if (p < 0 || last[m] < 0 || (g->module_calls && (g->module_calls[m] > 1 || g->module_calls[p] > 1)))
            continue;
        for (int32_t i = g->module_out_start[m]; i < g->module_out_start[m + 1]; i++) {
            int32_t t = g->module_out[i];
            if (t < 0 || t >= g->ntensors) continue;
            int32_t st = g->tensors[t].storage;
            if (s->produced_by[st] >= 0 && s->lastuse[st] <= last[m] && last[p] > s->lastuse[st])
                s->lastuse[st] = last[p];
        }
    }
    return true;
}

bool mem_sim_init(mem_sim *s, mtk_ctx *ctx, const mem_graph *g, const mtk_memory_options *o, bool training)
{
    memset(s, 0, sizeof *s);
    s->ctx = ctx;
    s->g = g;
    s->o = o;
    s->node = -1;
    s->rc_first = s->rc_stop = -1;
    int32_t ns = g->nstorages, nt = g->ntensors, nn = g->nnodes;
    s->sbuf = owned(s, (size_t)ns, sizeof *s->sbuf, 0xff);
    s->lastuse = owned(s, (size_t)ns, sizeof *s->lastuse, 0xff);
    s->produced_by = owned(s, (size_t)ns, sizeof *s->produced_by, 0xff);
    s->is_kv = owned(s, (size_t)ns, 1, 0);
    s->pgrad = owned(s, (size_t)ns, sizeof *s->pgrad, 0xff);
    s->pbuf = owned(s, (size_t)ns, sizeof *s->pbuf, 0xff);
    s->pbuf_view = owned(s, (size_t)ns, 1, 0);
    s->pedges = owned(s, (size_t)ns, sizeof *s->pedges, 0);
    s->pleft = owned(s, (size_t)ns, sizeof *s->pleft, 0);
    s->rc_stamp = owned(s, (size_t)ns, sizeof *s->rc_stamp, 0);
    s->saved_seen = owned(s, (size_t)ns, 1, 0);
    s->wcopy = owned(s, (size_t)ns, sizeof *s->wcopy, 0xff);
    s->wcopy_node = owned(s, (size_t)ns, sizeof *s->wcopy_node, 0xff);
    s->free_start = owned(s, (size_t)nn + 2, sizeof *s->free_start, 0);
    s->free_list = owned(s, (size_t)ns, sizeof *s->free_list, 0);
    s->need = owned(s, (size_t)nn, sizeof *s->need, 0);
    s->hold_start = owned(s, (size_t)nn + 1, sizeof *s->hold_start, 0);
    s->gbuf = owned(s, (size_t)nt, sizeof *s->gbuf, 0xff);
    s->gbuf_view = owned(s, (size_t)nt, 1, 0);
    s->parent = owned(s, (size_t)g->nmodules, sizeof *s->parent, 0xff);
    s->params = owned(s, (size_t)ns, sizeof *s->params, 0);
    s->trainable = owned(s, (size_t)ns, sizeof *s->trainable, 0);
    if (s->oom) return false;

    /* scratch: a node's input gradients and temporaries; the path marks */
    int64_t scratch = nt > nn ? nt : nn;
    int32_t nsaved = 0;
    for (int32_t n = 0; n < nn; n++) {
        const mtk_graph_node *node = &g->nodes[n];
        if (node->ninputs + node->nbackward > scratch) scratch = node->ninputs + node->nbackward;
        s->hold_start[n] = nsaved;
        nsaved += node->nsaved;
    }
    s->hold_start[nn] = nsaved;
    s->holdbuf = owned(s, (size_t)nsaved, sizeof *s->holdbuf, 0xff);
    s->scratch = owned(s, (size_t)scratch, sizeof *s->scratch, 0);
    s->scratch_view = owned(s, (size_t)scratch, 1, 0);
    if (s->oom) return false;

    /* storages: producers, last uses (kept ones never), kv */
    for (int32_t st = 0; st < ns; st++) {
        int32_t base = g->storages[st].base;
        if (g->storages[st].kind == MTK_STORAGE_ACTIVATION && base >= 0 && base < nt)
            s->produced_by[st] = g->tensors[base].producer;
    }
    for (int32_t n = 0; n < nn; n++) {
        const mtk_graph_node *node = &g->nodes[n];
        for (int32_t k = 0; k < node->ninputs; k++)
            if (node->inputs[k] >= 0) s->lastuse[g->tensors[node->inputs[k]].storage] = n;
        for (int32_t k = 0; k < node->noutputs; k++)
            if (node->outputs[k] >= 0) s->lastuse[g->tensors[node->outputs[k]].storage] = n;
    }
    if (!module_parents(s) || !caller_holds(s)) return false;
    for (int32_t i = 0; i < g->nkeep; i++)
        if (g->keep[i] >= 0 && g->keep[i] < nt) s->lastuse[g->tensors[g->keep[i]].storage] = INT_MAX;
    if (training) s->lastuse[g->tensors[g->loss].storage] = INT_MAX; /* backward() needs it */
    for (int32_t i = 0; i < g->nkv; i++)
        if (g->kv[i] >= 0 && g->kv[i] < nt) s->is_kv[g->tensors[g->kv[i]].storage] = 1;
    /* inputs live on, but for a KV cache the step was given (the past
     * keys and values): the cache's update drops them after their use */
    for (int32_t st = 0; st < ns; st++)
        if (s->produced_by[st] < 0 && !s->is_kv[st]) s->lastuse[st] = INT_MAX;
    for (int32_t st = 0; st < ns; st++)
        if (s->lastuse[st] >= 0 && s->lastuse[st] < nn) s->free_start[s->lastuse[st] + 1]++;
    for (int32_t n = 0; n < nn; n++) s->free_start[n + 1] += s->free_start[n];
    int32_t *fill = s->scratch;
    memcpy(fill, s->free_start, (size_t)nn * sizeof *fill);
    for (int32_t st = 0; st < ns; st++)
        if (s->lastuse[st] >= 0 && s->lastuse[st] < nn) s->free_list[fill[s->lastuse[st]]++] = st;


    if (training) {
        mark_backward_path(s);
        count_param_edges(s);
        if (o->checkpointing && !find_units(s)) return false;
    }

    /* what is live before the step: parameters, buffers, inputs */
    for (int32_t st = 0; st < ns; st++) {
        if (s->produced_by[st] >= 0) continue;
        mtk_graph_storage_kind k = g->storages[st].kind;
        int cat = k == MTK_STORAGE_PARAMETER || k == MTK_STORAGE_BUFFER ? MEM_CAT_PARAM
                  : s->is_kv[st]                                          ? MEM_CAT_KV
                                                                          : MEM_CAT_OTHER;
        if (k == MTK_STORAGE_PARAMETER && g->master_scale > 1) {
            s->sbuf[st] = mem_buf_new(s, mem_param_bytes(s, st), cat); /* float32 masters */
            s->bufs[s->sbuf[st]].storage = st;
        } else {
            mem_buf_for_storage(s, st, cat);
        }
        int32_t base = g->storages[st].base;
        if (k == MTK_STORAGE_PARAMETER && base >= 0 && base < nt && g->tensors[base].requires_grad)
            s->trainable[s->ntrainable++] = st;
    }
    /* CUDA: cuBLAS's workspace, allocated through the caching allocator at
     * the first matmul and kept: counted from the start */
    if (o->device_kind == MTK_DEVICE_KIND_CUDA && o->constants.cublas_workspace_bytes > 0 && nn > 0)
        mem_buf_new(s, o->constants.cublas_workspace_bytes, MEM_CAT_OTHER);
    return !s->oom;
}

int64_t mem_param_bytes(const mem_sim *s, int32_t st)
{
    int64_t bytes = s->g->storages[st].nbytes;
    return s->g->master_scale > 1 && s->g->storages[st].kind == MTK_STORAGE_PARAMETER ? bytes * s->g->master_scale
                                                                                       : bytes;
}

/* ------------------------------------------------------------- results */

static uint32_t hash_str(const char *p)
{
    uint32_t h = 2166136261u;
    for (; *p; p++) h = (h ^ (uint8_t)*p) * 16777619u;
    return h;
}

/* Parameter and buffer bytes per module, its children's included: each
 * storage once, under the module its (first) name belongs to. */
static bool module_parameters(mem_sim *s, mtk_memory_module *mods)
{
    const mem_graph *g = s->g;
    uint32_t cap = 16;
    while (cap < 2u * (uint32_t)g->nmodules) cap *= 2;
    int32_t *table = owned(s, cap, sizeof *table, 0xff);
    if (!table) return false;
    for (int32_t m = 0; m < g->nmodules; m++) {
        uint32_t h = hash_str(g->module_names[m]) & (cap - 1);
        while (table[h] >= 0) h = (h + 1) & (cap - 1);
        table[h] = m;
    }
    char name[512];
    for (int32_t st = 0; st < g->nstorages; st++) {
        mtk_graph_storage_kind k = g->storages[st].kind;
        if (k != MTK_STORAGE_PARAMETER && k != MTK_STORAGE_BUFFER) continue;
        int32_t base = g->storages[st].base;
        const char *pname = base >= 0 && base < g->ntensors ? g->tensors[base].name : NULL;
        int32_t owner = 0; /* the root's, when unnamed */
        if (pname) {
            const char *dot = strrchr(pname, '.');
            size_t len = dot ? (size_t)(dot - pname) : 0;
            if (len >= sizeof name) len = sizeof name - 1;
            memcpy(name, pname, len);
            name[len] = '\0';
            uint32_t h = hash_str(name) & (cap - 1);
            while (table[h] >= 0 && strcmp(g->module_names[table[h]], name) != 0) h = (h + 1) & (cap - 1);
            if (table[h] >= 0) owner = table[h];
        }
        for (int32_t m = owner; m >= 0; m = s->parent[m]) mods[m].parameters += g->storages[st].nbytes;
    }
    return true;
}

bool mem_sim_finish(mem_sim *s, mtk_memory_plan *plan)
{
    const mem_graph *g = s->g;
    plan->timeline = s->tl;
    plan->ntimeline = s->ntl;
    plan->activations_saved_forward = s->saved_forward;
    for (int32_t st = 0; st < g->nstorages; st++) {
        mtk_graph_storage_kind k = g->storages[st].kind;
        if (k == MTK_STORAGE_PARAMETER || k == MTK_STORAGE_BUFFER) plan->parameter_bytes += g->storages[st].nbytes;
    }
    if (g->nmodules == 0) return true;
    mtk_memory_module *mods = mtk_ctx_alloc(s->ctx, (size_t)g->nmodules * sizeof *mods);
    if (!mods) return false;
    for (int32_t m = 0; m < g->nmodules; m++)
        mods[m] = (mtk_memory_module){ .name = g->module_names[m], .depth = g->module_depths[m],
                                       .activations_saved = s->mod_saved[m], .peak_bytes = s->mod_peak[m] };
    /* saved bytes are per node's own module: add children into parents
     * (pre-order: a child comes after its parent) */
    for (int32_t m = g->nmodules - 1; m > 0; m--)
        if (s->parent[m] >= 0) mods[s->parent[m]].activations_saved += mods[m].activations_saved;
    if (!module_parameters(s, mods)) return false;
    plan->modules = mods;
    plan->nmodules = g->nmodules;
    return true;
}
