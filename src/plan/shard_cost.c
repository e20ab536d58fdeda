/* What a placed plan costs each rank: memory (model states as ZeRO and
 * FSDP divide them, the activations of its stage for the micro-batches
 * 1F1B keeps in flight, the largest working set) and the collectives of
 * one step. */
#include "plan/shard_internal.h"

#include <string.h>

#define DDP_BUCKET_BYTES (25LL << 20) /* DistributedDataParallel's bucket_cap_mb=25 */

static int64_t ceil_div(int64_t a, int64_t b) { return b > 1 ? (a + b - 1) / b : a; }

/* Bytes of one parameter element in the optimizer: Adam's exp_avg and
 * exp_avg_sq in float32, and a float32 master copy of a 16-bit weight. */
static int64_t state_bytes(mtk_dtype dtype) { return (mtk_dtype_size(dtype) < 4 ? 4 : 0) + 8; }

static int64_t numel(const int64_t *shape, int32_t ndim)
{
    int64_t n = 1;
    for (int32_t d = 0; d < ndim; d++) n *= shape[d];
    return n;
}

static bool in_stage(const mtk_shard_analysis *a, const mtk_shard_plan *plan, int32_t unit, int32_t s)
{
    if (unit == SHARD_UNIT_PRE(a)) return s == 0;
    if (unit == SHARD_UNIT_POST(a)) return s == plan->options.pp - 1;
    return unit >= plan->stage_first_layer[s] && unit < plan->stage_first_layer[s + 1];
}

/* b's bytes on one rank: the sharded part over tp, and with sequence
 * parallelism inside a layer the replicated part too. */
static int64_t on_rank(shard_bytes b, const mtk_shard_options *o, bool layer)
{
    int64_t shard = ceil_div(b.sharded, o->tp);
    return shard + (o->sp && layer ? ceil_div(b.replicated, o->tp) : b.replicated);
}

/* One micro-batch's saved activations and the largest working set of
 * stage s. */
static void stage_activations(const mtk_shard_analysis *a, const mtk_shard_plan *plan, int32_t s, int64_t *saved,
                              int64_t *transient)
{
    const mtk_shard_options *o = &plan->options;
    *saved = *transient = 0;
    int64_t recompute = 0;
    for (int32_t u = 0; u < a->nlayers + 2; u++) {
        if (!in_stage(a, plan, u, s)) continue;
        const shard_unit *unit = &a->units[u];
        bool layer = u < a->nlayers;
        int64_t full = on_rank(unit->saved, o, layer);
        int64_t keep = full;
        if (layer && o->recompute == MTK_RECOMPUTE_FULL) {
            keep = on_rank(unit->input, o, layer);
            if (full > recompute) recompute = full;
        } else if (layer && o->recompute == MTK_RECOMPUTE_SELECTIVE) {
            keep = full - on_rank(unit->saved_attention, o, layer);
        }
        *saved += keep;
        int64_t ws = on_rank(unit->transient, o, layer);
        if (ws > *transient) *transient = ws;
    }
    *transient += recompute;
}

/* Model states of one rank (parameters, gradients, optimizer states) as
 * ZeRO or FSDP leave them, and the largest layer's gathered parameters. */
static void model_states(const mtk_shard_analysis *a, const mtk_shard_plan *plan, int32_t t, int32_t d, int32_t s,
                         mtk_memory_breakdown *m, int64_t *gathered)
{
    const mtk_shard_options *o = &plan->options;
    int64_t pb[2] = { 0, 0 }, ob[2] = { 0, 0 }, fsdp_p = 0, fsdp_o = 0; /* [dense, expert] */
    int64_t best = 0;
    int32_t cur_layer = -2;
    int64_t cur = 0;
    for (int32_t i = 0; i < plan->nparams; i++) {
        const mtk_shard_param *p = &plan->params[i];
        bool copy = i == a->tied_param && s == o->pp - 1 && s != p->stage;
        if (p->stage != s && !copy) continue;
        int32_t index = p->expert ? d % o->ep : p->nlocal > 1 ? t : 0;
        int64_t n = numel(p->local_shapes + (size_t)index * (size_t)p->ndim, p->ndim);
        int64_t item = (int64_t)mtk_dtype_size(p->dtype);
        pb[p->expert] += n * item;
        ob[p->expert] += n * state_bytes(p->dtype);
        /* FSDP2 pads each shard's storage to ceil(dim 0 / dp) rows */
        int64_t groups = p->expert ? o->dp / o->ep : o->dp;
        const int64_t *ls = p->local_shapes + (size_t)index * (size_t)p->ndim;
        int64_t fn = p->ndim > 0 && ls[0] > 0 ? ceil_div(ls[0], groups) * (n / ls[0]) : n;
        fsdp_p += fn * item;
        fsdp_o += fn * state_bytes(p->dtype);
        if (p->layer != cur_layer) {
            if (cur > best) best = cur;
            cur_layer = p->layer, cur = 0;
        }
        cur += n * item;
    }
    if (cur > best) best = cur;
    int64_t groups[2] = { o->dp, o->dp / (o->ep > 0 ? o->ep : 1) };
    int64_t params = pb[0] + pb[1], grads = params, states = ob[0] + ob[1];
    if (o->fsdp || o->zero == 3) {
        params = fsdp_p, grads = fsdp_p, states = fsdp_o;
        if (o->zero == 3) {
            params = grads = ceil_div(pb[0], groups[0]) + ceil_div(pb[1], groups[1]);
            states = ceil_div(ob[0], groups[0]) + ceil_div(ob[1], groups[1]);
        }
        *gathered = o->dp > 1 ? best : 0;
    } else {
        if (o->zero >= 1) states = ceil_div(ob[0], groups[0]) + ceil_div(ob[1], groups[1]);
        if (o->zero >= 2) grads = ceil_div(pb[0], groups[0]) + ceil_div(pb[1], groups[1]);
        *gathered = 0;
    }
    m->parameters = params;
    m->gradients = o->training ? grads : 0;
    m->optimizer_states = o->training ? states : 0;
}

/* Per unit of stage s, tp index 0 (tp's uneven last chunks aside): the
 * bytes of its parameters whole (as the replay saw them), on the rank
 * (tp's local shapes), FSDP2's padded unsharded copy, and its padded
 * dp shard. */
typedef struct unit_params {
    int64_t global, local, padded, shard;
} unit_params;

static void unit_param_bytes(const mtk_shard_analysis *a, const mtk_shard_plan *plan, int32_t s, unit_params *u)
{
    const mtk_shard_options *o = &plan->options;
    for (int32_t i = 0; i < plan->nparams; i++) {
        const mtk_shard_param *p = &plan->params[i];
        bool copy = i == a->tied_param && s == o->pp - 1 && s != p->stage;
        if (p->stage != s && !copy) continue;
        int32_t unit = copy ? SHARD_UNIT_POST(a) : a->params[i].unit;
        int64_t item = (int64_t)mtk_dtype_size(p->dtype), n = numel(p->local_shapes, p->ndim);
        int64_t groups = p->expert ? o->dp / o->ep : o->dp;
        int64_t rows = p->ndim > 0 ? p->local_shapes[0] : 1, rest = rows > 0 ? n / rows : 0;
        int64_t shard = p->ndim > 0 ? ceil_div(rows, groups) * rest : n;
        u[unit].global += numel(p->shape, p->ndim) * item;
        u[unit].local += n * item;
        u[unit].shard += shard * item;
        u[unit].padded += (p->ndim > 0 ? shard * groups : n) * item;
    }
}

/* b on one rank of unit u: tp divides the part of it the unit's saved
 * activations say tp divides (sequence parallelism the rest too, in a
 * layer). */
static int64_t scaled(const mtk_shard_analysis *a, const mtk_shard_options *o, int32_t u, int64_t b)
{
    if (o->tp == 1 || u < 0) return b;
    shard_bytes sv = a->units[u].saved;
    int64_t total = sv.sharded + sv.replicated;
    double f = total > 0 ? (double)sv.sharded / (double)total : 0.0;
    int64_t sh = (int64_t)((double)b * f);
    return on_rank((shard_bytes){ b - sh, sh }, o, u < a->nlayers);
}

/* The peak of stage s replayed over the traced step: at each point the
 * rank's model states, its share of the point's activations (with the
 * in-flight micro-batches of 1F1B and without the earlier stages'),
 * the gradients it holds then, and under FSDP/ZeRO-3 the parameters
 * gathered then: the root's all step, a layer's in its forward and its
 * backward with the all-gather buffer of the next layer to run
 * (FSDP2's reshard_after_forward and backward prefetch), gradients
 * reduce-scattered to padded shards as each layer's backward ends. */
static bool replay_peak(mtk_ctx *ctx, const mtk_shard_analysis *a, const mtk_shard_plan *plan, int32_t s,
                        int32_t in_flight, int64_t saved_per_mb, mtk_memory_breakdown *m)
{
    const mtk_shard_options *o = &plan->options;
    int32_t U = a->nlayers + 2, first = plan->stage_first_layer[s], last = plan->stage_first_layer[s + 1] - 1;
    unit_params *u = mtk_ctx_alloc(ctx, (size_t)U * sizeof *u);
    if (!u) return false;
    unit_param_bytes(a, plan, s, u);
    bool fsdp = (o->fsdp || o->zero == 3) && o->dp > 1;
    int64_t root = u[SHARD_UNIT_PRE(a)].padded + u[SHARD_UNIT_POST(a)].padded, global = 0, local = 0;
    for (int32_t k = 0; k < U; k++) global += u[k].global, local += u[k].local;
    double tp_ratio = global > 0 ? (double)local / (double)global : 1.0;
    int64_t before = 0; /* the earlier stages' saved bytes, one micro-batch */
    for (int32_t l = 0; l < first; l++) before += a->units[l].saved.replicated + a->units[l].saved.sharded;
    if (s > 0) before += a->units[SHARD_UNIT_PRE(a)].saved.replicated + a->units[SHARD_UNIT_PRE(a)].saved.sharded;
    /* the later stages' parameters (their .grad is in the replay's by
       this stage's backward) and the whole model's */
    int64_t later = 0, whole = 0;
    for (int32_t i = 0; i < plan->nparams; i++) {
        const mtk_shard_param *q = &plan->params[i];
        int64_t bytes = numel(q->shape, q->ndim) * (int64_t)mtk_dtype_size(q->dtype);
        whole += bytes;
        if (q->stage > s) later += bytes;
    }
    int64_t base = m->parameters + m->optimizer_states, best = -1;
    for (int32_t i = 0; i < a->npoints; i++) {
        const shard_point *p = &a->points[i];
        bool optim = p->phase == MTK_PHASE_OPTIMIZER || p->unit < 0;
        if (!optim && !in_stage(a, plan, p->unit, s)) continue;
        bool bwd = p->phase == MTK_PHASE_BACKWARD || p->phase == MTK_PHASE_RECOMPUTE;
        int64_t saved = scaled(a, o, p->unit, p->saved > before ? p->saved - before : 0);
        int64_t other = scaled(a, o, p->unit, p->other);
        int64_t grads = 0, gathered = 0;
        if (optim) {
            /* the step's temporaries follow the rank's share of the
               parameters (the whole model's in the replay) */
            grads = m->gradients;
            other = (int64_t)((double)other * (whole > 0 ? (double)local / (double)whole : 1.0));
            if (fsdp || o->zero >= 1) other = ceil_div(other, o->dp);
        } else if (fsdp && bwd) {
            /* layers after this one are done: their shards, the last
               reduce-scatter's input; the rest unsharded in flight */
            int32_t done_from = p->unit == SHARD_UNIT_PRE(a) ? first : p->unit == SHARD_UNIT_POST(a) ? last + 1 : p->unit + 1;
            int64_t done_global = 0;
            for (int32_t l = done_from; l <= last; l++) grads += u[l].shard, done_global += u[l].global;
            if (done_from <= last) grads += u[done_from].padded;
            int64_t flying = p->grads - later - done_global;
            grads += flying > 0 ? (int64_t)((double)flying * tp_ratio) : 0;
        } else if (bwd) {
            grads = p->grads > later ? (int64_t)((double)(p->grads - later) * tp_ratio) : 0;
            if (o->zero >= 2) grads = ceil_div(grads, o->dp);
        }
        if (fsdp && !optim) {
            gathered = root;
            bool layer = p->unit < a->nlayers;
            if (!bwd && layer) gathered += 2 * u[p->unit].padded;                /* copy and all-gather buffer */
            else if (!bwd && p->unit == SHARD_UNIT_POST(a)) gathered += u[last].padded; /* the buffer kept */
            else if (bwd && layer) gathered += u[p->unit].padded + (p->unit > first ? u[p->unit - 1].padded : 0);
            else if (bwd && p->unit == SHARD_UNIT_POST(a)) gathered += u[last].padded; /* prefetched */
        }
        int64_t held = (in_flight > 1 && !optim ? (in_flight - 1) * saved_per_mb : 0) + saved;
        int64_t total = base + grads + held + other + gathered;
        if (total > best) {
            best = total;
            m->gradients = grads;
            m->activations_saved = held;
            m->transient_at_peak = other + gathered;
        }
    }
    return true;
}

static bool memory(mtk_ctx *ctx, const mtk_shard_analysis *a, mtk_shard_plan *plan)
{
    const mtk_shard_options *o = &plan->options;
    mtk_shard_rank *ranks = mtk_ctx_alloc(ctx, (size_t)plan->world_size * sizeof *ranks);
    int64_t *saved = mtk_ctx_alloc(ctx, (size_t)o->pp * 2 * sizeof *saved);
    if (!ranks || !saved) return false;
    for (int32_t s = 0; s < o->pp; s++) stage_activations(a, plan, s, &saved[2 * s], &saved[2 * s + 1]);
    for (int32_t r = 0; r < plan->world_size; r++) {
        mtk_shard_rank *k = &ranks[r];
        k->rank = r;
        k->tp_index = r % o->tp;
        k->dp_index = (r / o->tp) % o->dp;
        k->stage = r / (o->tp * o->dp);
        int64_t gathered;
        model_states(a, plan, k->tp_index, k->dp_index, k->stage, &k->memory, &gathered);
        int64_t mb = plan->micro_batches;
        k->in_flight = o->training ? (int32_t)(o->pp - k->stage < mb ? o->pp - k->stage : mb) : 0;
        k->memory.activations_saved = k->in_flight * saved[2 * k->stage];
        /* the gathered layer, and its prefetched successor; training also
           holds the layer's unsharded gradients before reduce-scatter */
        k->memory.transient_at_peak = saved[2 * k->stage + 1] + gathered * (o->training ? 3 : 2);
        k->at_peak = k->memory;
        if (o->training && a->npoints > 0 && o->recompute == MTK_RECOMPUTE_NONE) {
            /* replayed once a stage (its first rank); the others take
               its moment with their own model states */
            const mtk_shard_rank *first = &ranks[k->stage * o->tp * o->dp];
            if (first == k && !replay_peak(ctx, a, plan, k->stage, k->in_flight, saved[2 * k->stage], &k->at_peak))
                return false;
            if (first != k) {
                k->at_peak.gradients = first->at_peak.gradients;
                k->at_peak.activations_saved = first->at_peak.activations_saved;
                k->at_peak.transient_at_peak = first->at_peak.transient_at_peak;
            }
            k->memory.transient_at_peak = k->at_peak.transient_at_peak;
        }
        const mtk_memory_breakdown *m = &k->at_peak;
        k->peak_bytes = m->parameters + m->gradients + m->optimizer_states + m->activations_saved + m->kv_cache +
                        m->transient_at_peak;
    }
    plan->ranks = ranks;
    return true;
}

/* ------------------------------------------------------------ collectives */

typedef struct comm_list {
    mtk_shard_comm *items;
    int32_t n, cap;
    mtk_ctx *ctx;
} comm_list;

static void add(comm_list *l, mtk_collective op, const char *group, int32_t stage, const char *what, int64_t count,
                int64_t bytes)
{
    if (count <= 0) return;
    for (int32_t i = 0; i < l->n; i++) {
        mtk_shard_comm *c = &l->items[i];
        if (c->op == op && c->stage == stage && strcmp(c->group, group) == 0 && strcmp(c->what, what) == 0) {
            c->count += count;
            c->bytes += bytes;
            return;
        }
    }
    if (l->n == l->cap) {
        int32_t cap = l->cap ? 2 * l->cap : 32;
        mtk_shard_comm *items = mtk_ctx_alloc(l->ctx, (size_t)cap * sizeof *items);
        if (!items) return;
        if (l->n) memcpy(items, l->items, (size_t)l->n * sizeof *items);
        l->items = items, l->cap = cap;
    }
    l->items[l->n++] = (mtk_shard_comm){ op, group, stage, what, count, bytes };
}

/* Tensor and expert parallelism: per site, per micro-batch. */
static void tp_comms(const mtk_shard_analysis *a, const mtk_shard_plan *plan, int32_t s, comm_list *l)
{
    const mtk_shard_options *o = &plan->options;
    int64_t m = plan->micro_batches;
    bool train = o->training;
    for (int32_t i = 0; i < a->nsites; i++) {
        const shard_site *site = &a->sites[i];
        if (!in_stage(a, plan, site->unit, s)) continue;
        int64_t in = site->in_bytes, out = site->out_bytes;
        switch (site->style) {
        case MTK_TP_EP_DISPATCH:
            if (o->ep > 1) {
                int64_t bytes = in * (a->top_k > 0 ? a->top_k : 1);
                add(l, MTK_COLL_ALL_TO_ALL, "ep", s, "token dispatch and combine", 2 * m, 2 * m * bytes);
                if (train) add(l, MTK_COLL_ALL_TO_ALL, "ep", s, "their gradients", 2 * m, 2 * m * bytes);
            }
            break;
        default: break;
        }
        if (o->tp == 1) continue;
        switch (site->style) {
        case MTK_TP_COLWISE_GATHER_OUTPUT: {
            /* DTensor gathers shards padded to ceil(n / tp) */
            int64_t n = site->out_features, padded = out;
            if (n > 0) padded = out / n * ceil_div(n, o->tp) * o->tp;
            add(l, MTK_COLL_ALL_GATHER, "tp", s, "gathered outputs", m, m * padded);
        } /* fall through */
        case MTK_TP_COLWISE:
        case MTK_TP_PACKED_COLWISE:
            if (o->sp) {
                add(l, MTK_COLL_ALL_GATHER, "tp", s, "sequence-parallel inputs", m, m * in);
                if (train) add(l, MTK_COLL_REDUCE_SCATTER, "tp", s, "input gradients", m, m * in);
            } else if (train) {
                add(l, MTK_COLL_ALL_REDUCE, "tp", s, "input gradients", m, m * in);
            }
            break;
        case MTK_TP_ROWWISE:
        case MTK_TP_ROWWISE_SPLIT_INPUT:
        case MTK_TP_EMBEDDING_ROWWISE:
            if (o->sp && site->style != MTK_TP_EMBEDDING_ROWWISE) {
                add(l, MTK_COLL_REDUCE_SCATTER, "tp", s, "partial outputs", m, m * out);
                if (train) add(l, MTK_COLL_ALL_GATHER, "tp", s, "output gradients", m, m * out);
            } else {
                add(l, MTK_COLL_ALL_REDUCE, "tp", s, "partial outputs", m, m * out);
            }
            if (train && site->style == MTK_TP_ROWWISE_SPLIT_INPUT)
                add(l, MTK_COLL_ALL_GATHER, "tp", s, "input gradients", m, m * in);
            break;
        case MTK_TP_REPLICATED_GRAD_ALLREDUCE:
            if (train) add(l, MTK_COLL_ALL_REDUCE, "tp", s, "replicated parameters' gradients", m, m * site->param_bytes);
            break;
        case MTK_TP_MOE_EXPERTS:
            if (o->ep == 1) {
                add(l, MTK_COLL_ALL_REDUCE, "tp", s, "partial outputs", m, m * out);
                if (train) add(l, MTK_COLL_ALL_REDUCE, "tp", s, "input gradients", m, m * in);
            }
            break;
        default: break;
        }
    }
}

/* Data parallelism over the stage's parameters (one rank's share of tp). */
static void dp_comms(const mtk_shard_analysis *a, const mtk_shard_plan *plan, int32_t s, comm_list *l)
{
    const mtk_shard_options *o = &plan->options;
    if (o->dp == 1) return;
    int64_t m = plan->micro_batches, bytes = 0, units = 0, last = -3;
    for (int32_t i = 0; i < plan->nparams; i++) {
        const mtk_shard_param *p = &plan->params[i];
        if (p->stage != s && !(i == a->tied_param && s == o->pp - 1)) continue;
        bytes += numel(p->local_shapes, p->ndim) * (int64_t)mtk_dtype_size(p->dtype);
        if (p->layer != last) units++, last = p->layer;
    }
    int64_t buckets = ceil_div(bytes, DDP_BUCKET_BYTES);
    if (o->fsdp || o->zero == 3) {
        add(l, MTK_COLL_ALL_GATHER, "dp", s, "parameters for the forward", units * m, bytes * m);
        if (o->training) {
            add(l, MTK_COLL_ALL_GATHER, "dp", s, "parameters for the backward", units * m, bytes * m);
            add(l, MTK_COLL_REDUCE_SCATTER, "dp", s, "gradients", units * m, bytes * m);
        }
    } else if (o->training && o->zero >= 1) {
        add(l, MTK_COLL_REDUCE_SCATTER, "dp", s, "gradients", buckets, bytes);
        add(l, MTK_COLL_ALL_GATHER, "dp", s, "updated parameters", buckets, bytes);
    } else if (o->training) {
        add(l, MTK_COLL_ALL_REDUCE, "dp", s, "gradients", buckets, bytes);
    }
}

static void pp_comms(const mtk_shard_analysis *a, const mtk_shard_plan *plan, int32_t s, comm_list *l)
{
    const mtk_shard_options *o = &plan->options;
    int64_t m = plan->micro_batches, b = o->sp ? ceil_div(a->boundary_bytes, o->tp) : a->boundary_bytes;
    if (a->tied_param >= 0 && o->training && (s == 0 || s == o->pp - 1) && o->pp > 1) {
        const mtk_shard_param *p = &plan->params[a->tied_param];
        add(l, MTK_COLL_ALL_REDUCE, "pp", s, "tied embeddings' gradients", 1,
            numel(p->local_shapes, p->ndim) * (int64_t)mtk_dtype_size(p->dtype));
    }
    if (s < o->pp - 1) add(l, MTK_COLL_SEND, "pp", s, "activations to the next stage", m, m * b);
    if (s > 0) add(l, MTK_COLL_RECV, "pp", s, "activations from the previous stage", m, m * b);
    if (!o->training) return;
    if (s > 0) add(l, MTK_COLL_SEND, "pp", s, "gradients to the previous stage", m, m * b);
    if (s < o->pp - 1) add(l, MTK_COLL_RECV, "pp", s, "gradients from the next stage", m, m * b);
}

bool shard_cost(mtk_ctx *ctx, const mtk_shard_analysis *a, mtk_shard_plan *plan)
{
    if (!memory(ctx, a, plan)) return false;
    comm_list l = { .ctx = ctx };
    for (int32_t s = 0; s < plan->options.pp; s++) {
        tp_comms(a, plan, s, &l);
        dp_comms(a, plan, s, &l);
        pp_comms(a, plan, s, &l);
    }
    if (mtk_ctx_status(ctx) != MTK_OK) return false;
    plan->comms = l.items;
    plan->ncomms = l.n;
    const mtk_shard_options *o = &plan->options;
    if (o->training)
        shard_note(plan, "model states: the parameters' dtype for weights and gradients, Adam's two float32 moments, "
                         "and a float32 master copy of 16-bit weights (DeepSpeed's 2+2+12 bytes a parameter)");
    if (o->training && o->pp > 1)
        shard_note(plan, "activations: each stage holds min(pp - stage, micro-batches) micro-batches (1F1B)");
    if (a->tied_param >= 0 && o->pp > 1)
        shard_note(plan, "tied embeddings: the last stage keeps its own copy for lm_head (Megatron's shared word "
                         "embeddings), its gradient all-reduced with the first stage's");
    return true;
}
