/* The memory replay: liveness over a graph as torch 2.13 runs it.
 *
 * Every allocation is a buffer with a reference count (the forward's use,
 * autograd's saved holds, gradient aliases) and a category (parameter,
 * .grad, optimizer state, saved activation, KV cache, the rest); running
 * totals per category make the breakdown at the peak exact and O(1).
 *
 *   forward   a node allocates its fresh outputs and what it saves new
 *             (layer_norm's mean/rstd), holds what it saves for backward,
 *             peaks with its workspace, then frees each storage whose last
 *             use it was (views share their base's storage).
 *   backward  nodes on the loss's path in reverse order (the order torch's
 *             engine pops them: the highest sequence number first), each
 *             allocating its input gradients (a zero-byte one aliases the
 *             incoming gradient, as add's backward passes it through), then
 *             freeing its incoming gradient and its saved tensors; input
 *             gradients are accumulated per tensor and per parameter
 *             (InputBuffer: into the first in place when it is a tensor of
 *             its own, not shared and not a view, else old + new); a
 *             parameter's sum goes to .grad when its last edge reports
 *             (AccumulateGrad: stolen when not shared, else cloned; added
 *             in place once .grad exists).
 *   checkpointing (transformers 5: torch.utils.checkpoint, use_reentrant
 *             False): a layer's nodes save nothing in the forward, its
 *             inputs are kept; its backward starts by recomputing the
 *             layer's forward up to the last node that saves (early stop).
 *   optimizer memory_optim.c; then zero_grad(set_to_none=True).
 */
#include "plan/memory_internal.h"
#include "plan/memory_sim.h"
#include "mtk/op.h"

#include <limits.h>
#include <string.h>

/* ------------------------------------------------------------ buffers */

static int eff_cat(const mem_buf *b) { return b->base == MEM_CAT_OTHER && b->holds > 0 ? MEM_CAT_SAVED : b->base; }

void mem_observe(mem_sim *s, int64_t extra)
{
    int64_t total = s->live + extra;
    if (s->record && s->g->node_peaks && total > s->node_peak.live_bytes) s->node_peak = mem_point(s, total);
    if (s->record && s->mod_peak && s->node >= 0) {
        int32_t own = s->g->nodes[s->node].module;
        for (int32_t m = own >= 0 ? own : 0; m >= 0; m = s->parent[m]) /* -1: the root's */
            if (total > s->mod_peak[m]) s->mod_peak[m] = total;
    }
    if (!s->step || total <= s->step->peak_bytes) return;
    mtk_memory_step *st = s->step;
    st->peak_bytes = total;
    st->breakdown = (mtk_memory_breakdown){
        .parameters = s->cat[MEM_CAT_PARAM],
        .gradients = s->cat[MEM_CAT_GRAD],
        .optimizer_states = s->cat[MEM_CAT_STATE],
        .activations_saved = s->cat[MEM_CAT_SAVED],
        .kv_cache = s->cat[MEM_CAT_KV],
        .transient_at_peak = s->cat[MEM_CAT_OTHER] + extra,
    };
    st->peak_at = mem_point(s, total);
}

mtk_memory_point mem_point(const mem_sim *s, int64_t live)
{
    mtk_memory_point p = { .op = s->op, .module = "", .node = s->node, .phase = s->phase, .live_bytes = live,
                           .model_bytes = s->cat[MEM_CAT_PARAM] + s->cat[MEM_CAT_STATE] + s->cat[MEM_CAT_KV],
                           .grad_bytes = s->cat[MEM_CAT_GRAD], .saved_bytes = s->cat[MEM_CAT_SAVED] };
    if (s->node >= 0) {
        int32_t m = s->g->nodes[s->node].module;
        if (m >= 0 && m < s->g->nmodules) p.module = s->g->module_names[m];
        if (!p.op) p.op = s->g->nodes[s->node].op ? mem_op_name(s->g->nodes[s->node].op) : "?";
    }
    if (!p.op) p.op = "";
    return p;
}

int32_t mem_buf_new(mem_sim *s, int64_t nbytes, int base)
{
    int32_t id;
    if (s->nfree > 0) {
        id = s->free_ids[--s->nfree];
    } else {
        if (s->nbufs == s->bufs_cap) {
            int32_t cap = s->bufs_cap ? 2 * s->bufs_cap : 1024;
            mem_buf *b = mtk_ctx_malloc(s->ctx, (size_t)cap * sizeof *b);
            int32_t *f = mtk_ctx_malloc(s->ctx, (size_t)cap * sizeof *f);
            if (!b || !f) {
                mtk_ctx_mfree(s->ctx, b);
                mtk_ctx_mfree(s->ctx, f);
                s->oom = true;
                return -1;
            }
            if (s->nbufs) {
                memcpy(b, s->bufs, (size_t)s->nbufs * sizeof *b);
                memcpy(f, s->free_ids, (size_t)s->nfree * sizeof *f);
            }
            mtk_ctx_mfree(s->ctx, s->bufs);
            mtk_ctx_mfree(s->ctx, s->free_ids);
            s->bufs = b;
            s->free_ids = f;
            s->bufs_cap = cap;
        }
        id = s->nbufs++;
    }
    int64_t bytes = mem_alloc_bytes(s->o, nbytes);
    s->bufs[id] = (mem_buf){ .bytes = bytes, .refs = 1, .holds = 0, .storage = -1, .base = (uint8_t)base };
    s->live += bytes;
    s->cat[base] += bytes;
    mem_observe(s, 0);
    return id;
}

int32_t mem_buf_for_storage(mem_sim *s, int32_t st, int base)
{
    int32_t id = mem_buf_new(s, s->g->storages[st].nbytes, base);
    if (id >= 0) {
        s->bufs[id].storage = st;
        s->sbuf[st] = id;
    }
    return id;
}

void mem_buf_ref(mem_sim *s, int32_t id)
{
    if (id >= 0) s->bufs[id].refs++;
}

void mem_buf_unref(mem_sim *s, int32_t id)
{
    if (id < 0) return;
    mem_buf *b = &s->bufs[id];
    if (--b->refs > 0) return;
    s->live -= b->bytes;
    s->cat[eff_cat(b)] -= b->bytes;
    if (b->storage >= 0 && s->sbuf[b->storage] == id) s->sbuf[b->storage] = -1;
    s->free_ids[s->nfree++] = id;
}

static void move_cat(mem_sim *s, const mem_buf *b, int from)
{
    int to = eff_cat(b);
    if (to == from) return;
    s->cat[from] -= b->bytes;
    s->cat[to] += b->bytes;
}

/* A saved hold: keeps the buffer and counts it as saved.  True when it
 * was the first hold (the storage became saved). */
static bool hold(mem_sim *s, int32_t id)
{
    mem_buf *b = &s->bufs[id];
    int from = eff_cat(b);
    b->refs++;
    b->holds++;
    move_cat(s, b, from);
    return b->holds == 1;
}

static void unhold(mem_sim *s, int32_t id)
{
    if (id < 0) return;
    mem_buf *b = &s->bufs[id];
    int from = eff_cat(b);
    b->holds--;
    move_cat(s, b, from);
    mem_buf_unref(s, id);
}

void mem_buf_set_base(mem_sim *s, int32_t id, int base)
{
    mem_buf *b = &s->bufs[id];
    int from = eff_cat(b);
    b->base = (uint8_t)base;
    move_cat(s, b, from);
}

void mem_timeline(mem_sim *s)
{
    if (!s->record) return;
    if (s->ntl + 2 > s->tl_cap) { /* a node's peak and the state after */
        int32_t cap = s->tl_cap ? 2 * s->tl_cap : 1024;
        mtk_memory_point *p = mtk_ctx_alloc_uninit(s->ctx, (size_t)cap * sizeof *p);
        if (!p) {
            s->oom = true;
            return;
        }
        if (s->ntl) memcpy(p, s->tl, (size_t)s->ntl * sizeof *p);
        s->tl = p;
        s->tl_cap = cap;
    }
    if (s->g->node_peaks && s->node_peak.live_bytes > s->live) s->tl[s->ntl++] = s->node_peak;
    s->node_peak.live_bytes = -1;
    s->tl[s->ntl++] = mem_point(s, s->live);
}

/* ------------------------------------------------------------ forward */

static int64_t saved_new_bytes(const mtk_saved *sv)
{
    int64_t n = 1;
    for (int32_t d = 0; d < sv->ndim; d++) n *= sv->shape[d];
    return n * (int64_t)mtk_dtype_size(sv->dtype);
}

static int32_t saved_tensor(const mtk_graph_node *node, const mtk_saved *sv)
{
    if (sv->kind == MTK_SAVED_INPUT) return sv->index >= 0 && sv->index < node->ninputs ? node->inputs[sv->index] : -1;
    return sv->index >= 0 && sv->index < node->noutputs ? node->outputs[sv->index] : -1;
}

/* Mixed precision: autocast casts each weight a matmul reads to the low
 * dtype once per forward (its cache) and the matmul saves the copy: held
 * until this node's backward.  The embedding reads its weight as it is. */
static void autocast_weights(mem_sim *s, int32_t n)
{
    const mem_graph *g = s->g;
    const mtk_graph_node *node = &g->nodes[n];
    if (node->op && node->op->name && strcmp(node->op->name, "embedding") == 0) return;
    for (int32_t k = 0; k < node->ninputs; k++) {
        int32_t t = node->inputs[k];
        if (t < 0) continue;
        int32_t st = g->tensors[t].storage;
        if (g->storages[st].kind != MTK_STORAGE_PARAMETER || s->wcopy[st] >= 0) continue;
        int32_t b = mem_buf_new(s, g->storages[st].nbytes, MEM_CAT_OTHER);
        if (b < 0) return;
        hold(s, b);
        mem_buf_unref(s, b);
        s->wcopy[st] = b;
        s->wcopy_node[st] = n;
    }
}

/* Node n of a training forward that autograd records but the backward
 * never reaches (its outputs are dropped, as the index of topk(...)[1]):
 * torch saves what it saves, then frees the node, and that, before the
 * forward ends.  Only noted: it counts in what the forward saved (each
 * storage once) but holds nothing here. */
static void note_dropped_saves(mem_sim *s, int32_t n)
{
    const mem_graph *g = s->g;
    const mtk_graph_node *node = &g->nodes[n];
    for (int32_t k = 0; k < node->nsaved; k++) {
        const mtk_saved *sv = &node->saved[k];
        int64_t bytes = 0;
        if (sv->kind == MTK_SAVED_NEW) {
            bytes = saved_new_bytes(sv);
            s->dropped_new += bytes;
        } else {
            int32_t t = saved_tensor(node, sv);
            if (t < 0) continue;
            int32_t st = g->tensors[t].storage;
            if (g->storages[st].kind == MTK_STORAGE_PARAMETER || s->sbuf[st] < 0 || s->saved_seen[st]) continue;
            s->saved_seen[st] |= MEM_SEEN_DROPPED;
            bytes = g->storages[st].nbytes;
        }
        if (s->count_saved && s->mod_saved) s->mod_saved[node->module >= 0 ? node->module : 0] += bytes;
    }
}

/* What the forward just run saved, each storage once, as torch's saved
 * tensor hooks see it: what autograd still holds, and what the nodes it
 * dropped during the forward saved and nothing kept. */
static int64_t saved_by_forward(const mem_sim *s)
{
    int64_t bytes = s->cat[MEM_CAT_SAVED] + s->dropped_new;
    for (int32_t st = 0; st < s->g->nstorages; st++)
        if (s->saved_seen[st] == MEM_SEEN_DROPPED) bytes += s->g->storages[st].nbytes;
    return bytes;
}

/* Runs node n of the forward.  `save`: autograd records it (holds what it
 * saves); `recompute`: a checkpointed layer's recompute (every output is
 * a new allocation; only what this recompute made is freed here);
 * `dropped`: autograd records it but the backward never reaches it
 * (note_dropped_saves). */
static void forward_node(mem_sim *s, int32_t n, bool save, bool recompute, bool dropped)
{
    const mem_graph *g = s->g;
    const mtk_graph_node *node = &g->nodes[n];
    s->node = n;
    s->op = NULL;
    for (int32_t k = 0; k < node->noutputs; k++) {
        int32_t t = node->outputs[k];
        if (t < 0 || t >= g->ntensors) continue;
        int32_t st = g->tensors[t].storage;
        if (g->tensors[t].view_of >= 0 || g->storages[st].base != t) continue;
        /* a recompute makes its own copy, once (an op returning its input,
         * as to() of the same dtype, names the same tensor again) */
        if (recompute ? s->rc_stamp[st] == s->rc_epoch : s->sbuf[st] >= 0) continue;
        if (recompute) s->rc_stamp[st] = s->rc_epoch;
        mem_buf_for_storage(s, st, s->is_kv[st] ? MEM_CAT_KV : MEM_CAT_OTHER);
    }
    if (save && g->master_scale > 1) autocast_weights(s, n);
    if (save) {
        int32_t *holds = &s->holdbuf[s->hold_start[n]];
        for (int32_t k = 0; k < node->nsaved; k++) {
            const mtk_saved *sv = &node->saved[k];
            int32_t b = -1;
            bool first = false;
            if (sv->kind == MTK_SAVED_NEW) {
                b = mem_buf_new(s, saved_new_bytes(sv), MEM_CAT_OTHER);
                if (b < 0) return;
                first = hold(s, b);
                mem_buf_unref(s, b); /* only the hold keeps it */
            } else {
                int32_t t = saved_tensor(node, sv);
                if (t < 0) continue;
                int32_t st = g->tensors[t].storage;
                if (g->storages[st].kind == MTK_STORAGE_PARAMETER || s->sbuf[st] < 0) continue;
                b = s->sbuf[st];
                first = hold(s, b);
            }
            holds[k] = b;
            int32_t st = s->bufs[b].storage;
            bool dropped_first = st >= 0 && (s->saved_seen[st] & MEM_SEEN_DROPPED);
            if (st >= 0) s->saved_seen[st] |= MEM_SEEN_KEPT;
            if (first && !dropped_first && s->count_saved && s->mod_saved)
                s->mod_saved[node->module >= 0 ? node->module : 0] += s->bufs[b].bytes;
        }
    }
    if (dropped) note_dropped_saves(s, n); /* before its dead inputs and outputs go */
    mem_observe(s, mem_alloc_bytes(s->o, save ? node->transient_bytes : node->transient_nograd_bytes));
    for (int32_t i = s->free_start[n]; i < s->free_start[n + 1]; i++) {
        int32_t st = s->free_list[i];
        if (recompute && !(s->produced_by[st] >= s->rc_first && s->produced_by[st] <= s->rc_stop)) continue;
        mem_buf_unref(s, s->sbuf[st]);
    }
    mem_timeline(s);
}

/* torch.get_rng_state() as checkpointing takes it on the cpu device kind
 * (CUDA's generator states are host tensors): a buffer, -1 for none. */
static int32_t rng_state(mem_sim *s)
{
    int64_t bytes = s->o->constants.cpu_rng_state_bytes;
    if (s->o->device_kind != MTK_DEVICE_KIND_CPU || bytes <= 0) return -1;
    return mem_buf_new(s, bytes, MEM_CAT_OTHER);
}

/* A checkpointed layer's forward pins its inputs made outside it and the
 * rng state (preserve_rng_state) until its backward ends. */
static void pin_unit_inputs(mem_sim *s, int32_t u, bool pin)
{
    if (pin) {
        s->rngbuf[u] = rng_state(s);
    } else if (s->rngbuf[u] >= 0) {
        mem_buf_unref(s, s->rngbuf[u]);
        s->rngbuf[u] = -1;
    }
    for (int32_t i = s->pin_start[u]; i < s->pin_start[u + 1]; i++) {
        int32_t st = s->pins[i];
        if (pin) {
            s->pinbuf[i] = s->sbuf[st];
            if (s->pinbuf[i] >= 0) hold(s, s->pinbuf[i]);
        } else {
            unhold(s, s->pinbuf[i]);
            s->pinbuf[i] = -1;
        }
    }
}

static void run_forward(mem_sim *s, bool training)
{
    const mem_graph *g = s->g;
    s->phase = s->prefill_phase;
    memset(s->saved_seen, 0, (size_t)g->nstorages);
    s->dropped_new = 0;
    for (int32_t n = 0; n < g->nnodes && !s->oom; n++) {
        int32_t u = s->unit_of ? s->unit_of[n] : -1;
        if (u >= 0 && n == s->unit_first[u] && training) pin_unit_inputs(s, u, true);
        bool save = training && s->need[n] && u < 0;
        forward_node(s, n, save, false, training && !s->need[n] && u < 0);
    }
}

/* ----------------------------------------------------------- backward */

/* The nodes torch's non-reentrant checkpoint reruns of a unit [first,
 * stop] (stop: its last node that saves): with early stopping (torch's
 * default) the recompute ends when the last saved tensor is packed, and
 * a node packs the inputs it saves before its kernel runs, its outputs
 * after; so the last node runs only when it saves an output of its own
 * or a new tensor (sdpa's logsumexp), not when it saves only its inputs
 * (a matmul's).  The replay still allocates that node's outputs. */
static void mark_recomputed(const mem_graph *g, int32_t first, int32_t stop)
{
    const mtk_graph_node *last = &g->nodes[stop];
    bool runs = false;
    for (int32_t k = 0; k < last->nsaved; k++) runs |= last->saved[k].kind != MTK_SAVED_INPUT;
    for (int32_t n = first; n <= stop; n++) g->recomputed[n] = (uint8_t)(n < stop || runs);
}

static void recompute_unit(mem_sim *s, int32_t u)
{
    int32_t first = s->unit_first[u], stop = s->unit_stop[u];
    if (stop < first) return;
    s->phase = MTK_PHASE_RECOMPUTE;
    s->rc_epoch++;
    s->rc_first = first;
    s->rc_stop = stop;
    int32_t fork = rng_state(s); /* fork_rng keeps the generator's state while it recomputes */
    for (int32_t n = first; n <= stop && !s->oom; n++) forward_node(s, n, s->need[n], true, false);
    if (s->g->recomputed) mark_recomputed(s->g, first, stop);
    if (fork >= 0) mem_buf_unref(s, fork);
    /* what the recompute made and still holds for the forward's sake */
    for (int32_t n = first; n <= stop; n++) {
        const mtk_graph_node *node = &s->g->nodes[n];
        for (int32_t k = 0; k < node->noutputs; k++) {
            int32_t t = node->outputs[k];
            if (t < 0) continue;
            int32_t st = s->g->tensors[t].storage;
            if (s->produced_by[st] != n || s->lastuse[st] <= stop) continue;
            mem_buf_unref(s, s->sbuf[st]);
        }
    }
    s->rc_first = s->rc_stop = -1;
}

static int64_t tensor_bytes(const mem_sim *s, int32_t t)
{
    const mtk_graph_tensor *tt = &s->g->tensors[t];
    if (tt->tensor) return (int64_t)mtk_tensor_nbytes(tt->tensor);
    return s->g->storages[tt->storage].nbytes;
}

/* InputBuffer::accumulate, a second gradient b for a slot that holds one:
 * added into the held one in place when that is a tensor of its own that
 * only the buffer references (not a view, as linear's weight gradient is,
 * and not shared); otherwise old + new is a new tensor (all three live at
 * once) and both go.  The incoming gradient is never the target. */
static void buffer_add(mem_sim *s, int32_t *slot, uint8_t *slot_view, int32_t b, bool view, int64_t bytes)
{
    int32_t old = *slot;
    if (old < 0) {
        *slot = b;
        *slot_view = view;
        return;
    }
    if (s->bufs[old].refs == 1 && !*slot_view) {
        mem_buf_unref(s, b); /* old += new */
        return;
    }
    /* the node's moments so far make a point of their own: the sum's
       moment is another (each grows with the batch on its own line) */
    mem_timeline(s);
    int32_t sum = mem_buf_new(s, bytes, MEM_CAT_OTHER);
    if (sum < 0) return;
    mem_buf_unref(s, old);
    mem_buf_unref(s, b);
    *slot = sum;
    *slot_view = 0;
}

/* AccumulateGrad on parameter storage st's summed gradient b: stolen into
 * .grad when nothing else references it (a view too: it keeps its base),
 * cloned otherwise; added into .grad in place once .grad exists. */
static void accumulate_grad(mem_sim *s, int32_t st, int32_t b)
{
    if (s->pgrad[st] >= 0) {
        mem_buf_unref(s, b);
        return;
    }
    if (s->bufs[b].refs == 1) {
        mem_buf_set_base(s, b, MEM_CAT_GRAD);
        s->pgrad[st] = b;
        return;
    }
    s->pgrad[st] = mem_buf_new(s, mem_param_bytes(s, st), MEM_CAT_GRAD);
    mem_buf_unref(s, b);
}

/* Parameter storage st's AccumulateGrad, once its last edge has reported
 * (the engine runs it next: its priority is the highest). */
static void param_edge_done(mem_sim *s, int32_t st)
{
    if (--s->pleft[st] > 0 || s->pbuf[st] < 0) return;
    int32_t b = s->pbuf[st];
    s->pbuf[st] = -1;
    accumulate_grad(s, st, b);
}

/* Gradient b (a view of its buffer when `view`) for tensor t: into t's
 * InputBuffer, or its parameter's AccumulateGrad's. */
static void deliver(mem_sim *s, int32_t t, int32_t b, bool view)
{
    const mtk_graph_tensor *tt = &s->g->tensors[t];
    if (!tt->requires_grad) {
        mem_buf_unref(s, b);
        return;
    }
    if (mem_is_param_tensor(s->g, t)) {
        int32_t st = tt->storage;
        if (s->g->master_scale > 1) {
            /* the cast's backward makes a float32 gradient of its own */
            int32_t f32 = mem_buf_new(s, mem_param_bytes(s, st), MEM_CAT_OTHER);
            mem_buf_unref(s, b);
            if (f32 < 0) return;
            b = f32;
            view = false;
        }
        buffer_add(s, &s->pbuf[st], &s->pbuf_view[st], b, view, mem_param_bytes(s, st));
        return;
    }
    if (tt->producer < 0 || !s->need[tt->producer]) {
        mem_buf_unref(s, b);
        return;
    }
    buffer_add(s, &s->gbuf[t], &s->gbuf_view[t], b, view, tensor_bytes(s, t));
}

static void backward_node(mem_sim *s, int32_t n)
{
    const mem_graph *g = s->g;
    const mtk_graph_node *node = &g->nodes[n];
    s->node = n;
    s->op = NULL;
    int32_t gout = -1;
    for (int32_t k = 0; k < node->noutputs && gout < 0; k++)
        if (node->outputs[k] >= 0) gout = s->gbuf[node->outputs[k]];
    int32_t *grads = s->scratch;
    uint8_t *views = s->scratch_view;
    for (int32_t i = 0; i < node->ninputs; i++) grads[i] = -1;
    int32_t ntemps = 0, *temps = s->scratch + node->ninputs;
    for (int32_t k = 0; k < node->nbackward; k++) {
        const mtk_backward_alloc *a = &node->backward[k];
        int32_t i = a->grad_of;
        bool is_grad = i >= 0 && i < node->ninputs && grads[i] < 0;
        int32_t b;
        if (a->nbytes > 0 || !is_grad) {
            b = mem_buf_new(s, a->nbytes, MEM_CAT_OTHER);
            if (b < 0) return;
        } else if (gout >= 0) {
            b = gout; /* passed through: the incoming gradient itself */
            mem_buf_ref(s, b);
        } else {
            continue;
        }
        if (is_grad) {
            grads[i] = b;
            views[i] = a->view;
        } else {
            temps[ntemps++] = b;
        }
    }
    mem_observe(s, 0);
    for (int32_t k = 0; k < ntemps; k++) mem_buf_unref(s, temps[k]);
    for (int32_t k = 0; k < node->noutputs; k++) {
        int32_t t = node->outputs[k];
        if (t < 0 || s->gbuf[t] < 0) continue;
        mem_buf_unref(s, s->gbuf[t]);
        s->gbuf[t] = -1;
    }
    int32_t *holds = &s->holdbuf[s->hold_start[n]];
    for (int32_t k = 0; k < node->nsaved; k++) {
        unhold(s, holds[k]);
        holds[k] = -1;
    }
    for (int32_t k = 0; g->master_scale > 1 && k < node->ninputs; k++) {
        int32_t st = node->inputs[k] >= 0 ? g->tensors[node->inputs[k]].storage : -1;
        if (st < 0 || s->wcopy_node[st] != n || s->wcopy[st] < 0) continue;
        unhold(s, s->wcopy[st]);
        s->wcopy[st] = s->wcopy_node[st] = -1;
    }
    for (int32_t i = 0; i < node->ninputs; i++)
        if (grads[i] >= 0) deliver(s, node->inputs[i], grads[i], views[i]);
    for (int32_t i = 0; i < node->ninputs; i++)
        if (mem_is_param_tensor(g, node->inputs[i])) param_edge_done(s, g->tensors[node->inputs[i]].storage);
    mem_timeline(s);
}

static void run_backward(mem_sim *s)
{
    const mem_graph *g = s->g;
    /* torch.autograd.backward(loss): the seed gradient, ones_like(loss) */
    s->phase = MTK_PHASE_BACKWARD;
    s->node = -1;
    s->op = "backward";
    s->gbuf[g->loss] = mem_buf_new(s, tensor_bytes(s, g->loss), MEM_CAT_OTHER);
    memcpy(s->pleft, s->pedges, (size_t)g->nstorages * sizeof *s->pleft);
    int32_t unit = -1;
    for (int32_t n = g->nnodes - 1; n >= 0 && !s->oom; n--) {
        int32_t u = s->unit_of ? s->unit_of[n] : -1;
        if (u != unit) {
            if (unit >= 0) pin_unit_inputs(s, unit, false);
            unit = u;
        }
        /* the first unpack of a saved tensor of the layer recomputes it */
        if (u >= 0 && n == s->unit_stop[u]) recompute_unit(s, u);
        s->phase = MTK_PHASE_BACKWARD;
        if (s->need[n]) backward_node(s, n);
    }
    if (unit >= 0) pin_unit_inputs(s, unit, false);
    for (int32_t st = 0; st < g->nstorages; st++) /* every edge has reported: none left */
        if (s->pbuf[st] >= 0) {
            accumulate_grad(s, st, s->pbuf[st]);
            s->pbuf[st] = -1;
        }
    /* gradients nobody consumed (inputs' that no node produced) */
    for (int32_t t = 0; t < g->ntensors; t++)
        if (s->gbuf[t] >= 0) {
            mem_buf_unref(s, s->gbuf[t]);
            s->gbuf[t] = -1;
        }
}

/* ---------------------------------------------------------------- steps */

/* The tensors the caller holds after a forward (the loss): detached from
 * their storages, so the next forward makes its own, and returned for
 * release_held (the Python variable lives until it is assigned again, or
 * the step function returns).  At most `cap`. */
static int32_t take_kept(mem_sim *s, int32_t *held, int32_t cap)
{
    int32_t n = 0;
    for (int32_t i = -1; i < s->g->nkeep && n < cap; i++) {
        int32_t t = i < 0 ? s->g->loss : s->g->keep[i];
        if (t < 0 || t >= s->g->ntensors) continue;
        int32_t st = s->g->tensors[t].storage, b = s->sbuf[st];
        if (s->produced_by[st] < 0 || b < 0) continue;
        s->bufs[b].storage = -1;
        s->sbuf[st] = -1;
        held[n++] = b;
    }
    return n;
}

static void release_held(mem_sim *s, const int32_t *held, int32_t n)
{
    for (int32_t i = 0; i < n; i++) mem_buf_unref(s, held[i]);
}

static void begin_step(mem_sim *s, mtk_memory_step *step)
{
    s->step = step;
    s->phase = MTK_PHASE_SETUP;
    s->node = -1;
    s->op = "setup";
    *step = (mtk_memory_step){ .peak_bytes = -1 };
    mem_observe(s, 0);
}

static void run_training_step(mem_sim *s, mtk_memory_step *step, bool first)
{
    begin_step(s, step);
    int32_t micro = s->o->grad_accum > 1 ? 2 : 1; /* the 3rd..Kth are the 2nd again */
    int32_t held[8], nheld = 0;
    for (int32_t mb = 0; mb < micro && !s->oom; mb++) {
        s->count_saved = s->record && mb == 0;
        run_forward(s, true);
        release_held(s, held, nheld); /* loss = model(...): the previous one goes */
        if (mb == 0 && first) s->saved_forward = saved_by_forward(s);
        s->count_saved = false;
        run_backward(s);
        nheld = take_kept(s, held, 8);
    }
    mem_optimizer_step(s, first);
    s->phase = MTK_PHASE_ZERO_GRAD;
    s->node = -1;
    s->op = "zero_grad";
    for (int32_t st = 0; st < s->g->nstorages; st++)
        if (s->pgrad[st] >= 0) {
            mem_buf_unref(s, s->pgrad[st]);
            s->pgrad[st] = -1;
        }
    release_held(s, held, nheld); /* the step's function returns */
    mem_timeline(s);
}

bool mem_replay(mtk_ctx *ctx, const mem_graph *g, const mtk_memory_options *o, mtk_memory_plan *plan)
{
    bool training = o->mode == MTK_MEMORY_TRAINING;
    if (training && (g->loss < 0 || g->loss >= g->ntensors || !g->tensors[g->loss].requires_grad))
        return mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT,
                         "memory: a training plan needs the graph's loss, a tensor that requires grad "
                         "(the model's forward with labels)");
    plan->options = *o;
    mem_sim sim, *s = &sim;
    if (!mem_sim_init(s, ctx, g, o, training)) {
        mem_sim_free(s);
        return false;
    }
    s->prefill_phase = o->mode == MTK_MEMORY_GENERATE ? MTK_PHASE_PREFILL : MTK_PHASE_FORWARD;
    if (training) {
        run_training_step(s, &plan->first_step, true);
        s->record = true;
        run_training_step(s, &plan->peak, false);
    } else {
        s->record = true;
        begin_step(s, &plan->peak);
        s->count_saved = true;
        run_forward(s, false);
        plan->first_step = plan->peak;
    }
    bool ok = !s->oom;
    if (ok) ok = mem_sim_finish(s, plan);
    mem_sim_free(s);
    if (!ok && mtk_ctx_status(ctx) == MTK_OK) mtk_error(ctx, MTK_ERR_OUT_OF_MEMORY, "memory: out of memory");
    return ok;
}
