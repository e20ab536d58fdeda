/* mtk_place_model: the walk of accelerate's infer_auto_device_map over
 * the module tree (modules in order; one that does not fit is split into
 * its own tensors and children unless its class is in _no_split_modules;
 * tied tensors go with the first module that holds one; a device once
 * left is not come back to), where "fits" is the per-device replay of
 * the traced graphs (place_sim.c) against the device's budget less its
 * margin.  When offloaded modules make the execution device overflow,
 * the walk is run again with that much reserved there. */
#include "plan/place_internal.h"
#include "mtk/nn.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- tree */

typedef struct tensor_key {
    const mtk_tensor *t;
    int32_t index;
} tensor_key;

static int cmp_key(const void *a, const void *b)
{
    const tensor_key *x = a, *y = b;
    return x->t < y->t ? -1 : x->t > y->t;
}

static int32_t find_tensor(const tensor_key *keys, int32_t n, const mtk_tensor *t)
{
    tensor_key k = { t, -1 };
    const tensor_key *hit = bsearch(&k, keys, (size_t)n, sizeof k, cmp_key);
    return hit ? hit->index : -1;
}

static const char *join_name(mtk_ctx *ctx, const char *prefix, const char *local)
{
    size_t a = strlen(prefix), b = strlen(local);
    char *s = mtk_ctx_alloc(ctx, a + b + 2);
    if (!s) return NULL;
    if (a) memcpy(s, prefix, a), s[a++] = '.';
    memcpy(s + a, local, b + 1);
    return s;
}

static bool is_no_split(const char *type, const char *const *classes)
{
    for (int32_t i = 0; classes && classes[i]; i++)
        if (strcmp(type, classes[i]) == 0) return true;
    return false;
}

/* Slots of module m's subtree: [first, last). */
static void subtree_slots(const place_state *st, int32_t m, int32_t *first, int32_t *last)
{
    const place_module *e = &st->modules[st->modules[m].end - 1];
    *first = st->modules[m].first_slot;
    *last = e->first_slot + e->nslots;
}

/* The tree of `root` as st's modules, tensors and slots. */
static bool build_tree(place_state *st, mtk_module *root, const char *const *no_split)
{
    mtk_ctx *ctx = st->ctx;
    mtk_named_module *mods;
    mtk_named_tensor *params, *bufs;
    int32_t nm = mtk_module_named_modules(root, &mods);
    int32_t np = mtk_module_named_parameters(root, &params);
    int32_t nb = mtk_module_named_buffers(root, &bufs);
    if (nm < 0 || np < 0 || nb < 0) return false;
    st->nmodules = nm;
    st->ntensors = np + nb;
    st->modules = mtk_ctx_alloc(ctx, (size_t)nm * sizeof *st->modules);
    st->tensors = mtk_ctx_alloc(ctx, (size_t)(st->ntensors + 1) * sizeof *st->tensors);
    tensor_key *keys = mtk_ctx_alloc(ctx, (size_t)(st->ntensors + 1) * sizeof *keys);
    if (!st->modules || !st->tensors || !keys) return false;
    for (int32_t i = 0; i < st->ntensors; i++) {
        mtk_tensor *t = i < np ? params[i].tensor : bufs[i - np].tensor;
        st->tensors[i] = (place_tensor){ .tensor = t, .bytes = (int64_t)mtk_tensor_nbytes(t), .device = -1 };
        keys[i] = (tensor_key){ t, i };
    }
    qsort(keys, (size_t)st->ntensors, sizeof *keys, cmp_key);
    int32_t nslots = 0;
    for (int32_t m = 0; m < nm; m++)
        nslots += mtk_module_param_count(mods[m].module) + mtk_module_buffer_count(mods[m].module);
    st->nslots = nslots;
    st->slot_tensor = mtk_ctx_alloc(ctx, (size_t)(nslots + 1) * sizeof *st->slot_tensor);
    st->slot_name = mtk_ctx_alloc(ctx, (size_t)(nslots + 1) * sizeof *st->slot_name);
    st->slot_item = mtk_ctx_alloc(ctx, (size_t)(nslots + 1) * sizeof *st->slot_item);
    int32_t *stack = mtk_ctx_alloc(ctx, (size_t)(nm + 1) * sizeof *stack);
    int32_t *stamp = mtk_ctx_alloc(ctx, (size_t)(st->ntensors + 1) * sizeof *stamp);
    if (!st->slot_tensor || !st->slot_name || !st->slot_item || !stack || !stamp) return false;
    int32_t slot = 0, depth = 0;
    for (int32_t m = 0; m < nm; m++) {
        place_module *pm = &st->modules[m];
        mtk_module *mod = mods[m].module;
        *pm = (place_module){ .name = mods[m].name, .module = mod, .depth = mods[m].depth, .end = nm,
                              .no_split = is_no_split(mtk_module_type_name(mod), no_split),
                              .first_slot = slot, .state = PLACE_PENDING };
        /* close the subtrees this module is not in */
        while (depth > 0 && st->modules[stack[depth - 1]].depth >= pm->depth) st->modules[stack[--depth]].end = m;
        stack[depth++] = m;
        for (int32_t i = 0; i < mtk_module_param_count(mod) + mtk_module_buffer_count(mod); i++) {
            const char *local;
            int32_t np_m = mtk_module_param_count(mod);
            mtk_tensor *t = i < np_m ? mtk_module_param_at(mod, i, &local)
                                     : mtk_module_buffer_at(mod, i - np_m, &local, NULL);
            int32_t id = t ? find_tensor(keys, st->ntensors, t) : -1;
            if (id < 0) continue; /* a lazy or unset slot */
            st->slot_tensor[slot] = id;
            st->slot_name[slot] = join_name(ctx, pm->name, local);
            st->slot_item[slot] = -1;
            if (!st->slot_name[slot]) return false;
            st->tensors[id].holders++;
            slot++;
        }
        pm->nslots = slot - pm->first_slot;
        for (int32_t k = pm->first_slot; k < slot; k++) pm->own_bytes += st->tensors[st->slot_tensor[k]].bytes;
    }
    st->nslots = slot;
    /* subtree weights, each tensor once */
    for (int32_t i = 0; i < st->ntensors; i++) stamp[i] = -1;
    for (int32_t m = 0; m < nm; m++) {
        int64_t w = 0;
        int32_t first, last;
        subtree_slots(st, m, &first, &last);
        for (int32_t k = first; k < last; k++) {
            int32_t id = st->slot_tensor[k];
            if (stamp[id] != m) stamp[id] = m, w += st->tensors[id].bytes;
        }
        st->modules[m].weights = w;
    }
    st->items_cap = nm + slot + 1;
    st->items = mtk_ctx_alloc(ctx, (size_t)st->items_cap * sizeof *st->items);
    return st->items != NULL;
}


/* ---------------------------------------------------------------- walk */

static int32_t new_item(place_state *st, int32_t module, int32_t slot)
{
    place_item *it = &st->items[st->nitems];
    it->module = module;
    it->slot = slot;
    it->device = -1;
    it->weights = slot < 0 ? st->modules[module].weights : st->tensors[st->slot_tensor[slot]].bytes;
    return st->nitems++;
}

/* Tensors whose device an assignment set (undone when it does not fit). */
typedef struct undo_log {
    int32_t *tensors;
    int32_t n;
} undo_log;

static void set_tensor(place_state *st, int32_t id, int32_t d, undo_log *log)
{
    if (st->tensors[id].device >= 0) return;
    st->tensors[id].device = d;
    st->weights[d] += st->tensors[id].bytes;
    log->tensors[log->n++] = id;
}

static void assign(place_state *st, int32_t item, int32_t d, undo_log *log)
{
    place_item *it = &st->items[item];
    it->device = d;
    if (it->slot >= 0) {
        st->slot_item[it->slot] = item;
        set_tensor(st, st->slot_tensor[it->slot], d, log);
        return;
    }
    for (int32_t m = it->module; m < st->modules[it->module].end; m++) st->modules[m].state = item;
    int32_t a, b;
    subtree_slots(st, it->module, &a, &b);
    for (int32_t k = a; k < b; k++) set_tensor(st, st->slot_tensor[k], d, log);
}

static void unassign(place_state *st, int32_t item, undo_log *log, int32_t from)
{
    place_item *it = &st->items[item];
    it->device = -1;
    if (it->slot >= 0) st->slot_item[it->slot] = -1;
    else
        for (int32_t m = it->module; m < st->modules[it->module].end; m++) st->modules[m].state = PLACE_PENDING;
    while (log->n > from) {
        int32_t id = log->tensors[--log->n];
        st->weights[st->tensors[id].device] -= st->tensors[id].bytes;
        st->tensors[id].device = -1;
    }
}

/* Whether item covers slot k (a tensor of module `owner`). */
static bool covers(const place_state *st, const place_item *it, int32_t k)
{
    if (it->slot >= 0) return it->slot == k;
    int32_t a, b;
    subtree_slots(st, it->module, &a, &b);
    return k >= a && k < b;
}

/* Queue positions (after 0) of the items holding a tensor tied to one
 * of queue[0]'s; returns how many went to out. */
static int32_t tied_partners(const place_state *st, const int32_t *queue, int32_t nq, int32_t *out)
{
    const place_item *it = &st->items[queue[0]];
    int32_t n = 0;
    for (int32_t k = 0; k < st->nslots; k++) {
        if (st->tensors[st->slot_tensor[k]].holders < 2 || !covers(st, it, k)) continue;
        int32_t id = st->slot_tensor[k];
        for (int32_t j = 0; j < st->nslots; j++) {
            if (st->slot_tensor[j] != id || covers(st, it, j)) continue;
            for (int32_t q = 1; q < nq; q++) {
                if (!covers(st, &st->items[queue[q]], j)) continue;
                bool seen = false;
                for (int32_t i = 0; i < n; i++) seen = seen || out[i] == q;
                if (!seen) out[n++] = q;
            }
        }
    }
    return n;
}

static bool splittable(const place_state *st, const place_item *it)
{
    if (it->slot >= 0) return false;
    const place_module *m = &st->modules[it->module];
    return !m->no_split && m->end > it->module + 1;
}

/* Replaces queue[q] (a splittable module item) by its own tensors and
 * children, in place.  Returns the queue's new length. */
static int32_t split(place_state *st, int32_t *queue, int32_t nq, int32_t q)
{
    int32_t m = st->items[queue[q]].module;
    const place_module *pm = &st->modules[m];
    int32_t add[4096], n = 0, *parts = add;
    int32_t children = 0;
    for (int32_t c = m + 1; c < pm->end; c = st->modules[c].end) children++;
    int32_t want = pm->nslots + children;
    if (want > (int32_t)(sizeof add / sizeof add[0])) {
        parts = mtk_ctx_alloc(st->ctx, (size_t)want * sizeof *parts);
        if (!parts) return -1;
    }
    for (int32_t k = 0; k < pm->nslots; k++) parts[n++] = new_item(st, m, pm->first_slot + k);
    for (int32_t c = m + 1; c < pm->end; c = st->modules[c].end) parts[n++] = new_item(st, c, -1);
    st->modules[m].state = PLACE_SPLIT;
    memmove(queue + q + n, queue + q + 1, (size_t)(nq - q - 1) * sizeof *queue);
    memcpy(queue + q, parts, (size_t)n * sizeof *queue);
    return nq - 1 + n;
}

/* Whether device d holds what is placed on it now. */
static bool fits(place_state *st, int32_t d)
{
    int64_t limit = st->limit[d];
    if (limit < 0) return true;
    if (place_exec_of(st, d) != d) return st->weights[d] <= limit; /* offload storage only */
    place_usage u;
    place_sim(st, &u);
    return st->weights[d] + u.active[d] <= limit;
}

static void reset(place_state *st)
{
    st->nitems = 0;
    for (int32_t m = 0; m < st->nmodules; m++) st->modules[m].state = PLACE_PENDING;
    for (int32_t i = 0; i < st->ntensors; i++) st->tensors[i].device = -1;
    for (int32_t k = 0; k < st->nslots; k++) st->slot_item[k] = -1;
    memset(st->weights, 0, sizeof st->weights);
}

/* One walk under st->limit.  False with the context's error when the
 * model does not fit. */
static bool walk(place_state *st)
{
    reset(st);
    int32_t *queue = mtk_ctx_alloc(st->ctx, (size_t)st->items_cap * sizeof *queue);
    int32_t *partners = mtk_ctx_alloc(st->ctx, (size_t)st->items_cap * sizeof *partners);
    undo_log log = { mtk_ctx_alloc(st->ctx, (size_t)(st->ntensors + 1) * sizeof(int32_t)), 0 };
    if (!queue || !partners || !log.tensors) return false;
    int32_t nq = 0;
    queue[nq++] = new_item(st, 0, -1);
    nq = split(st, queue, nq, 0); /* the root's parts, as accelerate starts */
    if (nq < 0) return false;
    int32_t d = 0;
    while (nq > 0) {
        if (d == st->ndev) {
            int64_t left = 0;
            for (int32_t q = 0; q < nq; q++) left += st->items[queue[q]].weights;
            mtk_error(st->ctx, MTK_ERR_INVALID_ARGUMENT,
                      "place: the model does not fit: %lld bytes of weights are left (from '%s' on) after every "
                      "device is full; give more memory or add cpu=SIZE or disk to --max-memory",
                      (long long)left,
                      st->items[queue[0]].slot >= 0 ? st->slot_name[st->items[queue[0]].slot]
                                                    : st->modules[st->items[queue[0]].module].name);
            return false;
        }
        int32_t np = tied_partners(st, queue, nq, partners);
        int32_t mark = log.n;
        assign(st, queue[0], d, &log);
        for (int32_t i = 0; i < np; i++) assign(st, queue[partners[i]], d, &log);
        if (fits(st, d)) {
            /* drop the item and its placed partners from the queue */
            int32_t kept = 0;
            for (int32_t q = 1; q < nq; q++) {
                bool placed = false;
                for (int32_t i = 0; i < np; i++) placed = placed || partners[i] == q;
                if (!placed) queue[kept++] = queue[q];
            }
            nq = kept;
            continue;
        }
        for (int32_t i = np - 1; i >= 0; i--) unassign(st, queue[partners[i]], &log, log.n);
        unassign(st, queue[0], &log, mark);
        if (splittable(st, &st->items[queue[0]])) {
            if ((nq = split(st, queue, nq, 0)) < 0) return false;
            continue;
        }
        int32_t best = -1;
        for (int32_t i = 0; i < np; i++)
            if (splittable(st, &st->items[queue[partners[i]]]) &&
                (best < 0 || st->items[queue[partners[i]]].weights > st->items[queue[best]].weights))
                best = partners[i];
        if (best >= 0) {
            if ((nq = split(st, queue, nq, best)) < 0) return false;
            continue;
        }
        d++;
    }
    return true;
}

/* ------------------------------------------------------------ the plan */

/* The device every tensor and module of m's subtree is on, -2 if mixed. */
static int32_t uniform(const place_state *st, int32_t m)
{
    int32_t state = st->modules[m].state;
    if (state >= 0) return st->items[state].device;
    int32_t dev = -1;
    const place_module *pm = &st->modules[m];
    for (int32_t k = pm->first_slot; k < pm->first_slot + pm->nslots; k++) {
        int32_t d = st->items[st->slot_item[k]].device;
        if (dev >= 0 && d != dev) return -2;
        dev = d;
    }
    for (int32_t c = m + 1; c < pm->end; c = st->modules[c].end) {
        int32_t d = uniform(st, c);
        if (d == -1) continue; /* nothing of its own: it runs where its input is */
        if (d == -2 || (dev >= 0 && d != dev)) return -2;
        dev = d;
    }
    return dev;
}

typedef struct entry_list {
    mtk_place_entry *at;
    int32_t n;
} entry_list;

static void emit(const place_state *st, int32_t m, entry_list *out)
{
    int32_t d = uniform(st, m);
    if (d >= 0) {
        out->at[out->n++] = (mtk_place_entry){ .name = st->modules[m].name, .device = d };
        return;
    }
    const place_module *pm = &st->modules[m];
    for (int32_t k = pm->first_slot; k < pm->first_slot + pm->nslots; k++)
        out->at[out->n++] = (mtk_place_entry){ .name = st->slot_name[k], .device = st->items[st->slot_item[k]].device };
    for (int32_t c = m + 1; c < pm->end; c = st->modules[c].end) emit(st, c, out);
}

/* The tree module of each node of each graph, by the trace's modules. */
static bool map_nodes(place_state *st)
{
    for (int32_t gi = 0; gi < st->ngraphs; gi++) {
        place_graph *pg = &st->graphs[gi];
        const mtk_trace *tr = mtk_graph_trace(pg->graph);
        int32_t nt = mtk_trace_module_count(tr);
        int32_t *tree_of = mtk_ctx_alloc(st->ctx, (size_t)(nt + 1) * sizeof *tree_of);
        pg->node_module = mtk_ctx_alloc(st->ctx, (size_t)(pg->g.nnodes + 1) * sizeof *pg->node_module);
        if (!tree_of || !pg->node_module) return false;
        int32_t at = 0;
        for (int32_t i = 0; i < nt; i++) {
            const mtk_module *m = mtk_trace_module_at(tr, i)->module;
            tree_of[i] = 0;
            for (int32_t k = 0; k < st->nmodules; k++) {
                int32_t j = (at + k) % st->nmodules;
                if (st->modules[j].module == m) {
                    tree_of[i] = j, at = j;
                    break;
                }
            }
        }
        for (int32_t n = 0; n < pg->g.nnodes; n++) {
            int32_t m = pg->g.nodes[n].module;
            pg->node_module[n] = m >= 0 && m < nt ? tree_of[m] : 0;
        }
    }
    return true;
}

static void note(mtk_place_plan *plan, const char *text)
{
    int32_t cap = (int32_t)(sizeof plan->notes / sizeof plan->notes[0]);
    if (text && plan->nnotes < cap) plan->notes[plan->nnotes++] = text;
}

static const char *device_label(mtk_ctx *ctx, const mtk_place_device *d)
{
    if (d->kind == MTK_PLACE_CPU) return "cpu";
    if (d->kind == MTK_PLACE_DISK) return "disk";
    char buf[16];
    int n = snprintf(buf, sizeof buf, "%d", (int)d->index);
    char *s = mtk_ctx_alloc(ctx, (size_t)n + 1);
    if (s) memcpy(s, buf, (size_t)n + 1);
    return s;
}

static bool check_options(mtk_ctx *ctx, const mtk_place_options *o)
{
    const char *bad = NULL;
    if (o->ndevices <= 0 || o->ndevices > MTK_PLACE_MAX_DEVICES) bad = "--max-memory names no devices";
    else if (o->batch < 1 || o->seq < 1) bad = "--input needs B, S >= 1";
    else if (o->mode != MTK_MEMORY_INFERENCE && o->mode != MTK_MEMORY_GENERATE)
        bad = "--mode is inference or generate";
    else if (o->new_tokens < 1) bad = "--new-tokens must be >= 1";
    else if (o->strategy != MTK_PLACE_BALANCED && o->strategy != MTK_PLACE_SEQUENTIAL)
        bad = "--strategy is balanced or sequential";
    if (bad) mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "place: %s", bad);
    return bad == NULL;
}

/* The balanced share of each GPU but the last (accelerate's
 * get_balanced_memory): the weights spread evenly, plus the largest unit
 * that cannot be split and what runs on one device (the whole model's
 * activations, an upper bound); only when the whole model fits the GPUs. */
static void balance(place_state *st, int64_t *limit)
{
    int32_t gpus = 0, last = -1;
    int64_t room = 0;
    for (int32_t d = 0; d < st->ndev; d++)
        if (st->o->devices[d].kind == MTK_PLACE_GPU) gpus++, last = d, room += st->limit[d];
    if (gpus < 2 || st->o->strategy != MTK_PLACE_BALANCED) return;
    reset(st);
    undo_log log = { mtk_ctx_alloc(st->ctx, (size_t)(st->ntensors + 1) * sizeof(int32_t)), 0 };
    if (!log.tensors) return;
    assign(st, new_item(st, 0, -1), 0, &log);
    place_usage u;
    place_sim(st, &u);
    int64_t total = st->modules[0].weights, unit = 0;
    for (int32_t m = 0; m < st->nmodules; m++)
        if ((st->modules[m].no_split || st->modules[m].end == m + 1) && st->modules[m].weights > unit)
            unit = st->modules[m].weights;
    reset(st);
    if (total + u.active[0] > room) return;
    int64_t share = total / gpus + unit + u.active[0];
    for (int32_t d = 0; d < st->ndev; d++)
        if (st->o->devices[d].kind == MTK_PLACE_GPU && d != last && share < limit[d]) limit[d] = share;
}

/* Everything but the assignment: margins and limits, the traced graphs,
 * the tree and the replay's scratch.  False with the context's error. */
static bool setup(place_state *st, mtk_ctx *ctx, const char *model, const mtk_place_options *o,
                  mtk_model_info *info, const char *const **no_split_out)
{
    if (!model || !o) {
        mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "place: NULL model or options");
        return false;
    }
    if (!check_options(ctx, o)) return false;
    *st = (place_state){ .ctx = ctx, .o = o, .ndev = o->ndevices, .exec = -1 };
    for (int32_t d = 0; d < st->ndev; d++) {
        const mtk_place_device *dev = &o->devices[d];
        if (dev->kind == MTK_PLACE_GPU && st->exec < 0) st->exec = d;
        if (dev->kind == MTK_PLACE_GPU) st->gpu = true;
        st->margin[d] = dev->kind != MTK_PLACE_GPU ? 0
                       : o->margin_bytes >= 0     ? o->margin_bytes
                                                  : mtk_place_default_margin(&o->constants, dev->budget_bytes);
        st->limit[d] = dev->budget_bytes < 0 ? -1 : dev->budget_bytes - st->margin[d];
        if (dev->budget_bytes >= 0 && st->limit[d] < 0) {
            mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT,
                      "place: GPU %d's budget (%lld bytes) is smaller than its margin (%lld bytes: CUDA context, "
                      "workspace, fragmentation; see --margin)",
                      (int)dev->index, (long long)dev->budget_bytes, (long long)st->margin[d]);
            return false;
        }
    }
    for (int32_t d = 0; st->exec < 0 && d < st->ndev; d++)
        if (o->devices[d].kind == MTK_PLACE_CPU) st->exec = d;
    if (st->exec < 0) {
        mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "place: --max-memory needs a GPU or cpu to run the model on "
                                                 "(disk only holds offloaded weights)");
        return false;
    }
    mtk_module *root = place_trace(st, model, info);
    if (!root) return false;
    const mtk_model_family_info *family = mtk_model_family_find(info->family);
    const char *const *no_split = family ? family->no_split_modules : NULL;
    *no_split_out = no_split;
    return build_tree(st, root, no_split) && map_nodes(st) && place_sim_init(st);
}
/* The plan of st's assignment, replayed as u. */
static mtk_place_plan *finish(place_state *st, const place_usage *u, const mtk_model_info *info,
                              const char *const *no_split, const char *model, int32_t round)
{
    mtk_ctx *ctx = st->ctx;
    const mtk_place_options *o = st->o;
    mtk_place_plan *plan = mtk_ctx_alloc(ctx, sizeof *plan);
    mtk_place_device_plan *devs = mtk_ctx_alloc(ctx, (size_t)st->ndev * sizeof *devs);
    entry_list list = { mtk_ctx_alloc(ctx, (size_t)(st->nmodules + st->nslots + 1) * sizeof *list.at), 0 };
    if (!plan || !devs || !list.at) return NULL;
    memset(plan, 0, sizeof *plan);
    emit(st, 0, &list);
    /* each entry's weights: tensors not counted by an earlier entry */
    bool *counted = mtk_ctx_alloc(ctx, (size_t)(st->ntensors + 1) * sizeof *counted);
    if (!counted) return NULL;
    for (int32_t e = 0; e < list.n; e++) {
        mtk_place_entry *en = &list.at[e];
        int32_t a = -1, b = -1;
        for (int32_t m = 0; m < st->nmodules && a < 0; m++)
            if (strcmp(st->modules[m].name, en->name) == 0) subtree_slots(st, m, &a, &b);
        for (int32_t k = 0; a < 0 && k < st->nslots; k++)
            if (strcmp(st->slot_name[k], en->name) == 0) a = k, b = k + 1;
        for (int32_t k = a; k >= 0 && k < b; k++) {
            int32_t id = st->slot_tensor[k];
            if (!counted[id]) counted[id] = true, en->weights_bytes += st->tensors[id].bytes;
        }
    }
    for (int32_t d = 0; d < st->ndev; d++) {
        mtk_place_device_plan *p = &devs[d];
        p->device = o->devices[d];
        p->label = device_label(ctx, &o->devices[d]);
        p->margin_bytes = st->margin[d];
        p->weights_bytes = st->weights[d];
        bool runs = place_exec_of(st, d) == d;
        p->peak_bytes = st->weights[d] + (runs ? u->active[d] + st->margin[d] : 0);
        p->peak_module = runs && u->active[d] > 0 ? st->modules[u->at_module[d]].name : NULL;
        for (int32_t e = 0; e < list.n; e++) p->nentries += list.at[e].device == d;
        if (p->device.kind != MTK_PLACE_GPU) plan->offloaded_bytes += st->weights[d];
    }
    plan->options = *o;
    plan->model = model;
    plan->entries = list.at;
    plan->nentries = list.n;
    plan->devices = devs;
    plan->ndevices = st->ndev;
    plan->execution_device = st->exec;
    plan->weights_bytes = st->modules[0].weights;
    for (int32_t i = 0; no_split && no_split[i] && plan->nno_split < 8; i++)
        plan->no_split[plan->nno_split++] = no_split[i];
    note(plan, o->mode == MTK_MEMORY_GENERATE
                   ? "generate: the prefill and the last decode step are replayed per device; the KV cache of a "
                     "layer lives where the layer runs"
                   : "inference: model(input_ids) under no_grad, with the KV cache transformers builds "
                     "(use_cache) where the family has one");
    if (plan->offloaded_bytes > 0)
        note(plan, "modules on cpu or disk run on the execution device: each module's own weights are streamed "
                   "in around its forward (accelerate's hooks), and their activations and KV cache live there");
    if (st->gpu)
        note(plan, "each GPU keeps its margin free (CUDA context, cuBLAS workspace, allocator fragmentation; "
                   "docs/placement.md), counted in peak_bytes");
    if (round > 0) note(plan, "the execution device's share was reduced until the offloaded modules' activations fit");
    for (int32_t i = 0; i < info->nnotes && plan->nnotes < 8; i++) note(plan, info->notes[i]);
    return plan;
}

mtk_place_plan *mtk_place_model(mtk_ctx *ctx, const char *model, const mtk_place_options *o)
{
    if (!ctx) return NULL;
    place_state st;
    mtk_model_info info;
    const char *const *no_split;
    if (!setup(&st, ctx, model, o, &info, &no_split)) return NULL;
    int64_t base[MTK_PLACE_MAX_DEVICES], cap[MTK_PLACE_MAX_DEVICES], reserve[MTK_PLACE_MAX_DEVICES] = { 0 };
    memcpy(base, st.limit, sizeof base);
    balance(&st, st.limit);
    memcpy(cap, st.limit, sizeof cap);
    /* walk; while the replay finds a device over its cap (offloaded
       modules run on the execution device), reserve the excess there and
       walk again */
    place_usage u;
    int32_t round = 0, over_dev = -1;
    int64_t over_used = 0, over_weights = 0, over_active = 0;
    int32_t over_module = 0;
    for (;; round++) {
        if (!walk(&st)) return NULL;
        place_sim(&st, &u);
        over_dev = -1;
        for (int32_t d = 0; d < st.ndev && over_dev < 0; d++) {
            if (base[d] < 0 || place_exec_of(&st, d) != d) continue;
            int64_t used = st.weights[d] + u.active[d];
            if (used <= cap[d]) continue;
            over_dev = d, over_used = used, over_weights = st.weights[d], over_active = u.active[d];
            over_module = u.at_module[d];
        }
        if (over_dev < 0) break;
        int32_t d = over_dev;
        if (reserve[d] < cap[d] && round < 64) {
            reserve[d] += over_used - cap[d];
        } else {
            const char *label = device_label(ctx, &o->devices[d]);
            mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT,
                      "place: the model does not fit: device %s needs %lld bytes (%lld of weights, %lld of "
                      "activations, KV cache and streamed offloaded weights, peak in '%s') where %lld are left "
                      "after the margin; give it more memory, a shorter input or fewer new tokens",
                      label ? label : "?", (long long)over_used, (long long)over_weights, (long long)over_active,
                      st.modules[over_module].name, (long long)cap[d]);
            return NULL;
        }
        for (int32_t k = 0; k < st.ndev; k++)
            if (cap[k] >= 0) st.limit[k] = cap[k] > reserve[k] ? cap[k] - reserve[k] : 0;
    }
    return finish(&st, &u, &info, no_split, model, round);
}

/* The tree module named `name`, -1 if none. */
static int32_t module_named(const place_state *st, const char *name)
{
    for (int32_t m = 0; m < st->nmodules; m++)
        if (strcmp(st->modules[m].name, name) == 0) return m;
    return -1;
}

/* The slot named `name` and its module, -1 if none. */
static int32_t slot_named(const place_state *st, const char *name, int32_t *owner)
{
    for (int32_t m = 0; m < st->nmodules; m++)
        for (int32_t k = st->modules[m].first_slot; k < st->modules[m].first_slot + st->modules[m].nslots; k++)
            if (strcmp(st->slot_name[k], name) == 0) return *owner = m, k;
    return -1;
}

mtk_place_plan *mtk_place_evaluate(mtk_ctx *ctx, const char *model, const mtk_place_options *o,
                                   const mtk_place_entry *entries, int32_t nentries)
{
    if (!ctx) return NULL;
    if (nentries < 0 || (nentries > 0 && !entries)) {
        mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "place: a device map of %d entries without entries", (int)nentries);
        return NULL;
    }
    place_state st;
    mtk_model_info info;
    const char *const *no_split;
    if (!setup(&st, ctx, model, o, &info, &no_split)) return NULL;
    reset(&st);
    undo_log log = { mtk_ctx_alloc(ctx, (size_t)(st.ntensors + 1) * sizeof(int32_t)), 0 };
    if (!log.tensors) return NULL;
    for (int32_t e = 0; e < nentries; e++) {
        const char *name = entries[e].name ? entries[e].name : "";
        int32_t d = entries[e].device, owner = -1, m = module_named(&st, name), k = -1;
        if (d < 0 || d >= st.ndev) {
            mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "place: the map puts '%s' on device %d of %d", name, (int)d,
                      (int)st.ndev);
            return NULL;
        }
        if (m < 0 && (k = slot_named(&st, name, &owner)) < 0) {
            mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT,
                      "place: the map's key '%s' names no module, parameter or buffer of %s",
                      name, model);
            return NULL;
        }
        bool taken;
        if (m >= 0) { /* a module: nothing of its subtree placed yet */
            int32_t first, last;
            subtree_slots(&st, m, &first, &last);
            taken = false;
            for (int32_t i = m; i < st.modules[m].end; i++) taken = taken || st.modules[i].state >= 0;
            for (int32_t j = first; j < last; j++) taken = taken || st.slot_item[j] >= 0;
        } else {
            taken = st.slot_item[k] >= 0 || st.modules[owner].state >= 0;
        }
        if (taken) {
            mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "place: the map's key '%s' covers what another key covers", name);
            return NULL;
        }
        assign(&st, new_item(&st, m >= 0 ? m : owner, m >= 0 ? -1 : k), d, &log);
    }
    for (int32_t k = 0; k < st.nslots; k++) {
        int32_t owner = 0;
        for (int32_t m = 0; m < st.nmodules; m++)
            if (k >= st.modules[m].first_slot && k < st.modules[m].first_slot + st.modules[m].nslots) owner = m;
        if (st.slot_item[k] < 0 && st.modules[owner].state < 0) {
            mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "place: the map does not place '%s'", st.slot_name[k]);
            return NULL;
        }
    }
    /* what no key names holds no tensor: it runs where its input is */
    for (int32_t m = 0; m < st.nmodules; m++)
        if (st.modules[m].state == PLACE_PENDING) st.modules[m].state = PLACE_SPLIT;
    place_usage u;
    place_sim(&st, &u);
    return finish(&st, &u, &info, no_split, model, 0);
}
