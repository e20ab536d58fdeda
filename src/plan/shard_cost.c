/* What a placed plan costs each rank: memory (model states as ZeRO and
 * FSDP divide them, the activations of its stage for the micro-batches
 * 1F1B keeps in flight, the largest working set); the collectives of one
 * step are shard_comms.c's. */
#include "plan/shard_internal.h"

#include <string.h>

/* Bytes of one parameter element in the optimizer: Adam's exp_avg and
 * exp_avg_sq in float32, and a float32 master copy of a 16-bit weight. */
static int64_t state_bytes(mtk_dtype dtype) { return (mtk_dtype_size(dtype) < 4 ? 4 : 0) + 8; }

/* b's bytes on one rank: the sharded part over tp, and with sequence
 * parallelism inside a layer the replicated part too. */
static int64_t on_rank(shard_bytes b, const mtk_shard_options *o, bool layer)
{
    int64_t shard = shard_ceil_div(b.sharded, o->tp);
    return shard + (o->sp && layer ? shard_ceil_div(b.replicated, o->tp) : b.replicated);
}

/* One micro-batch's saved activations and the largest working set of
 * stage s. */
void shard_stage_activations(const mtk_shard_analysis *a, const mtk_shard_plan *plan, int32_t s, int64_t *saved,
                             int64_t *transient)
{
    const mtk_shard_options *o = &plan->options;
    *saved = *transient = 0;
    int64_t recompute = 0;
    int32_t pre = SHARD_UNIT_PRE(a), post = SHARD_UNIT_POST(a);
    for (int32_t k = plan->stage_first_layer[s] - 1; k <= plan->stage_first_layer[s + 1]; k++) {
        /* the stage's layers, the embedding before the first stage's and
           the head after the last's */
        int32_t u = k < plan->stage_first_layer[s] ? pre : k == plan->stage_first_layer[s + 1] ? post : k;
        if (!shard_unit_in_stage(a, plan, u, s)) continue;
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

/* One parameter's part of a rank's sums, ls its local shape there and
 * groups the data-parallel ranks FSDP2 pads its shard over; its bytes. */
static int64_t sums_add(shard_state_sums *sums, const mtk_shard_param *p, const int64_t *ls, int64_t item,
                        int64_t state, int64_t groups)
{
    int64_t n = shard_numel(ls, p->ndim);
    sums->params[p->expert] += n * item;
    sums->states[p->expert] += n * state;
    /* FSDP2 pads each shard's storage to ceil(dim 0 / dp) rows */
    int64_t fn = p->ndim > 0 && ls[0] > 0 ? shard_ceil_div(ls[0], groups) * (n / ls[0]) : n;
    sums->fsdp_params += fn * item;
    sums->fsdp_states += fn * state;
    if (item < 4) sums->fsdp_master += fn * 4;
    return n * item;
}

/* Model-state sums of one rank (parameters and optimizer states of its
 * stage, FSDP2's padded shards, the largest layer's parameters). */
void shard_state_sums_of(const mtk_shard_analysis *a, const mtk_shard_plan *plan, const shard_stage_index *ix,
                         int32_t t, int32_t d, int32_t s, shard_state_sums *sums)
{
    const mtk_shard_options *o = &plan->options;
    memset(sums, 0, sizeof *sums);
    int64_t best = 0;
    int32_t cur_layer = -2;
    int64_t cur = 0;
    int32_t lo = ix ? ix->param_start[s] : 0, hi = ix ? ix->param_start[s + 1] : plan->nparams;
    mtk_dtype dtype = MTK_DTYPE_UNDEFINED; /* the latest parameter's, and its sizes */
    int64_t item = 0, state = 0;
    for (int32_t k = lo; k < hi; k++) {
        int32_t i = ix ? ix->params[k] : k;
        const mtk_shard_param *p = &plan->params[i];
        bool copy = i == a->tied_param && s == o->pp - 1 && s != p->stage;
        if (p->stage != s && !copy) continue;
        int32_t index = p->expert ? shard_expert_index(o, t, d) : p->nlocal > 1 ? t : 0;
        if (p->dtype != dtype) dtype = p->dtype, item = (int64_t)mtk_dtype_size(dtype), state = state_bytes(dtype);
        int64_t groups = p->expert ? shard_expert_replicas(o) : o->dp;
        if (p->layer != cur_layer) {
            if (cur > best) best = cur;
            cur_layer = p->layer, cur = 0;
        }
        cur += sums_add(sums, p, p->local_shapes + (size_t)index * (size_t)p->ndim, item, state, groups);
    }
    if (cur > best) best = cur;
    sums->largest_layer = best;
}

bool shard_stage_sums_split(mtk_ctx *ctx, const mtk_shard_analysis *a, const mtk_shard_plan *plan,
                            const shard_stage_index *ix, int32_t s, shard_stage_sums *ss)
{
    const mtk_shard_options *o = &plan->options;
    int32_t lo = ix->param_start[s], hi = ix->param_start[s + 1], n = hi - lo;
    memset(ss, 0, sizeof *ss);
    ss->vary = mtk_ctx_alloc_uninit(ctx, (size_t)(n > 0 ? n : 1) * sizeof *ss->vary);
    ss->run_bytes = mtk_ctx_alloc_uninit(ctx, (size_t)(n > 0 ? n : 1) * sizeof *ss->run_bytes);
    ss->cur = mtk_ctx_alloc_uninit(ctx, (size_t)(n > 0 ? n : 1) * sizeof *ss->cur);
    if (!ss->vary || !ss->run_bytes || !ss->cur) return false;
    /* runs: the walk's stretches of one layer, as shard_state_sums_of
       takes its largest; a run holding no varying parameter is final */
    int32_t cur_layer = -2, nruns = 0;
    bool run_varies = false;
    int64_t run = 0, best = 0;
    mtk_dtype dtype = MTK_DTYPE_UNDEFINED;
    int64_t item = 0, state = 0;
    for (int32_t k = lo; k < hi; k++) {
        int32_t i = ix->params[k];
        const mtk_shard_param *p = &plan->params[i];
        bool copy = i == a->tied_param && s == o->pp - 1 && s != p->stage;
        if (p->stage != s && !copy) continue;
        if (p->dtype != dtype) dtype = p->dtype, item = (int64_t)mtk_dtype_size(dtype), state = state_bytes(dtype);
        int64_t groups = p->expert ? shard_expert_replicas(o) : o->dp;
        if (p->layer != cur_layer) {
            if (run_varies) ss->run_bytes[nruns++] = run;
            else if (run > best) best = run;
            cur_layer = p->layer, run = 0, run_varies = false;
            ss->dp_walk[1]++;
        }
        if ((!p->expert && p->nlocal <= 1) || shard_param_uniform(p)) {
            /* the same local shape on every index: index 0's */
            int64_t bytes = sums_add(&ss->base, p, p->local_shapes, item, state, groups);
            run += bytes, ss->dp_walk[0] += bytes;
            continue;
        }
        ss->dp_walk[0] += shard_numel(p->local_shapes, p->ndim) * item;
        run_varies = true;
        if (p->expert) ss->vary_e = true;
        else ss->vary_t = true;
        ss->vary[ss->nvary++] = (shard_vary_param){ i, nruns, item, state, groups };
    }
    if (run_varies) ss->run_bytes[nruns++] = run;
    else if (run > best) best = run;
    ss->nruns = nruns;
    ss->base.largest_layer = best;
    return true;
}

void shard_stage_sums_at(const mtk_shard_plan *plan, const shard_stage_sums *ss, int32_t t, int32_t d,
                         shard_state_sums *sums)
{
    const mtk_shard_options *o = &plan->options;
    *sums = ss->base;
    memcpy(ss->cur, ss->run_bytes, (size_t)ss->nruns * sizeof *ss->cur);
    for (int32_t v = 0; v < ss->nvary; v++) {
        const shard_vary_param *q = &ss->vary[v];
        const mtk_shard_param *p = &plan->params[q->param];
        int32_t index = p->expert ? shard_expert_index(o, t, d) : t;
        ss->cur[q->run] += sums_add(sums, p, p->local_shapes + (size_t)index * (size_t)p->ndim, q->item, q->state,
                                    q->groups);
    }
    for (int32_t r = 0; r < ss->nruns; r++)
        if (ss->cur[r] > sums->largest_layer) sums->largest_layer = ss->cur[r];
}

/* Model states of one rank (parameters, gradients, optimizer states) as
 * ZeRO or FSDP leave them, and the largest layer's gathered parameters. */
static void model_states(const shard_state_sums *sums, const mtk_shard_options *o, mtk_memory_breakdown *m,
                         int64_t *gathered)
{
    const int64_t *pb = sums->params, *ob = sums->states;
    int64_t groups[2] = { o->dp, o->ep > 0 ? shard_expert_replicas(o) : o->dp };
    int64_t params = pb[0] + pb[1], grads = params, states = ob[0] + ob[1];
    if (o->fsdp || o->zero == 3) {
        params = sums->fsdp_params, grads = sums->fsdp_params, states = sums->fsdp_states;
        if (sums->fsdp_master > 0 && o->zero != 3) {
            /* FSDP2's mixed precision (param_dtype 16-bit, reduce_dtype
               float32): float32 shards and their float32 .grad, the 16 bit
               copies only gathered; AdamW's moments */
            params = grads = sums->fsdp_master + (sums->fsdp_params - sums->fsdp_master / 2);
            states = sums->fsdp_states - sums->fsdp_master;
        }
        if (o->zero == 3) {
            params = grads = shard_ceil_div(pb[0], groups[0]) + shard_ceil_div(pb[1], groups[1]);
            states = shard_ceil_div(ob[0], groups[0]) + shard_ceil_div(ob[1], groups[1]);
        }
        *gathered = o->dp > 1 ? sums->largest_layer : 0;
    } else {
        if (o->zero >= 1) states = shard_ceil_div(ob[0], groups[0]) + shard_ceil_div(ob[1], groups[1]);
        if (o->zero >= 2) grads = shard_ceil_div(pb[0], groups[0]) + shard_ceil_div(pb[1], groups[1]);
        *gathered = 0;
    }
    m->parameters = params;
    m->gradients = o->training ? grads : 0;
    m->optimizer_states = o->training ? states : 0;
}

int32_t shard_stage_in_flight(const mtk_shard_plan *plan, int32_t s)
{
    const mtk_shard_options *o = &plan->options;
    int64_t mb = plan->micro_batches;
    return o->training ? (int32_t)(o->pp - s < mb ? o->pp - s : mb) : 0;
}

void shard_rank_memory(const mtk_shard_plan *plan, const shard_state_sums *sums, int64_t saved, int64_t transient,
                       mtk_shard_rank *k)
{
    const mtk_shard_options *o = &plan->options;
    int64_t gathered;
    memset(&k->memory, 0, sizeof k->memory);
    model_states(sums, o, &k->memory, &gathered);
    k->in_flight = shard_stage_in_flight(plan, k->stage);
    k->memory.activations_saved = k->in_flight * saved;
    /* the gathered layer, and its prefetched successor; training also
       holds the layer's unsharded gradients before reduce-scatter */
    k->memory.transient_at_peak = transient + gathered * (o->training ? 3 : 2);
    k->at_peak = k->memory;
    const mtk_memory_breakdown *m = &k->memory;
    k->peak_bytes = m->parameters + m->gradients + m->optimizer_states + m->activations_saved + m->kv_cache +
                    m->transient_at_peak;
}

void shard_rank_take_moment(mtk_shard_rank *k, const mtk_memory_breakdown *moment)
{
    k->at_peak.gradients = moment->gradients;
    k->at_peak.activations_saved = moment->activations_saved;
    k->at_peak.transient_at_peak = moment->transient_at_peak;
    k->memory.transient_at_peak = moment->transient_at_peak;
    const mtk_memory_breakdown *m = &k->at_peak;
    k->peak_bytes = m->parameters + m->gradients + m->optimizer_states + m->activations_saved + m->kv_cache +
                    m->transient_at_peak;
}

bool shard_replays(const mtk_shard_analysis *a, const mtk_shard_options *o)
{
    if (!o->training) return a->npoints > 0;
    if (o->recompute == MTK_RECOMPUTE_FULL) return a->npoints_full > 0;
    if (o->recompute == MTK_RECOMPUTE_SELECTIVE) return a->npoints_selective > 0;
    return a->npoints > 0;
}

/* shard_ceil_div(a, d) for one divisor d (tp, dp) used many times: a shift
 * when d is a power of two, else a double product by 1/d corrected to
 * the exact quotient (an integer division costs the replay index most of
 * its time). */
typedef struct tp_divisor {
    int64_t d;
    double inv;
    int32_t shift;              /* log2(d) when d is a power of two, else -1 */
} tp_divisor;

static tp_divisor divisor_of(int64_t d)
{
    tp_divisor t = { d, 1.0 / (double)d, -1 };
    int32_t k = 0;
    while (k < 62 && ((int64_t)1 << k) < d) k++;
    if (d > 0 && ((int64_t)1 << k) == d) t.shift = k;
    return t;
}

static inline int64_t ceil_div_by(int64_t a, const tp_divisor *t)
{
    if (t->d <= 1) return a;
    int64_t n = a + t->d - 1;
    if (n >= 0 && t->shift >= 0) return n >> t->shift;
    if (n < 0 || n > ((int64_t)1 << 52)) return n / t->d;
    int64_t q = (int64_t)((double)n * t->inv);
    while (q * t->d > n) q--;
    while ((q + 1) * t->d <= n) q++;
    return q;
}

/* b on one rank of unit u, out[0] without and out[1] with sequence
 * parallelism: tp divides the part of it the unit's saved activations
 * say tp divides (frac[u]; on_rank's split), sequence parallelism the
 * rest too, in a layer. */
static void scaled(const mtk_shard_analysis *a, const tp_divisor *tp, const double *frac, int32_t u, int64_t b,
                   int64_t out[2])
{
    if (tp->d == 1 || u < 0) {
        out[0] = out[1] = b;
        return;
    }
    int64_t sh = (int64_t)((double)b * frac[u]), shard = ceil_div_by(sh, tp);
    out[0] = shard + (b - sh);
    out[1] = u < a->nlayers ? shard + ceil_div_by(b - sh, tp) : out[0];
}

/* The stage of unit u (SHARD_UNIT_* or a layer) under layer_stage. */
static int32_t stage_of_unit(const mtk_shard_analysis *a, const mtk_shard_plan *plan, const int32_t *layer_stage,
                             int32_t u)
{
    return u == SHARD_UNIT_PRE(a) ? 0 : u == SHARD_UNIT_POST(a) ? plan->options.pp - 1 : layer_stage[u];
}

/* The units' and stages' parameter bytes of a replay index (what
 * depends on the mesh and its stages, not on the micro-batch). */
static bool replay_params(mtk_ctx *ctx, const mtk_shard_analysis *a, const mtk_shard_plan *plan,
                          shard_replay_index *rx)
{
    const mtk_shard_options *o = &plan->options;
    int32_t pp = o->pp;
    int64_t *own = mtk_ctx_alloc(ctx, (size_t)pp * sizeof *own);
    rx->units = mtk_ctx_alloc(ctx, (size_t)(a->nlayers + 2 * pp) * sizeof *rx->units);
    rx->stage = mtk_ctx_alloc(ctx, (size_t)pp * sizeof *rx->stage);
    if (!own || !rx->units || !rx->stage) return false;
    /* per unit of each stage, tp index 0 (tp's uneven last chunks aside):
       its parameters whole (as the replay saw them), on the rank (tp's
       local shapes), FSDP2's padded unsharded copy and its padded dp
       shard; the tied embedding again in the last stage's head */
    for (int32_t i = 0; i < plan->nparams; i++) {
        const mtk_shard_param *p = &plan->params[i];
        int64_t item = (int64_t)mtk_dtype_size(p->dtype), n = shard_numel(p->local_shapes, p->ndim);
        int64_t global = shard_numel(p->shape, p->ndim) * item;
        int64_t groups = p->expert ? shard_expert_replicas(o) : o->dp;
        int64_t rows = p->ndim > 0 ? p->local_shapes[0] : 1, rest = rows > 0 ? n / rows : 0;
        int64_t shard = p->ndim > 0 ? shard_ceil_div(rows, groups) * rest : n;
        int64_t padded = p->ndim > 0 ? shard * groups : n;
        rx->whole += global;
        own[p->stage] += global;
        bool copy = i == a->tied_param && p->stage != pp - 1;
        for (int32_t c = 0; c <= (int32_t)copy; c++) {
            int32_t s = c ? pp - 1 : p->stage, unit = c ? SHARD_UNIT_POST(a) : a->params[i].unit;
            shard_unit_params *u = &rx->units[unit < a->nlayers ? unit : a->nlayers + 2 * s + (unit != SHARD_UNIT_PRE(a))];
            u->global += global;
            u->local += n * item;
            u->shard += shard * item;
            u->padded += padded * item;
            rx->stage[s].global += global;
            rx->stage[s].local += n * item;
        }
    }
    int64_t later = 0;
    for (int32_t s = pp - 1; s >= 0; s--) {
        rx->stage[s].later = later;
        later += own[s];
        /* each layer's shard and whole bytes with the stage's later layers' */
        shard_unit_params *u = rx->units;
        int64_t sh = 0, gl = 0;
        for (int32_t l = plan->stage_first_layer[s + 1] - 1; l >= plan->stage_first_layer[s]; l--) {
            sh += u[l].shard, gl += u[l].global;
            u[l].shard_after = sh, u[l].global_after = gl;
        }
    }
    return true;
}

/* The index rx of the plan under its recompute: its parameter bytes
 * (units, stage, whole) already there when have_params, and its buffers
 * reused where they hold what this replay needs (rx->cap_slots: the
 * slots its points, saved and other arrays hold; the rest sized by the
 * mesh's stages and the model's layers, the same for a rebuild). */
static bool replay_index_fill(mtk_ctx *ctx, const mtk_shard_analysis *a, const mtk_shard_plan *plan,
                              shard_replay_index *rx, bool have_params)
{
    const mtk_shard_options *o = &plan->options;
    int32_t pp = o->pp;
    if (!rx->layer_stage) {
        rx->layer_stage = mtk_ctx_alloc_uninit(ctx, (size_t)(a->nlayers ? a->nlayers : 1) * sizeof *rx->layer_stage);
        rx->point_start = mtk_ctx_alloc_uninit(ctx, (size_t)(pp + 1) * sizeof *rx->point_start);
        rx->fill = mtk_ctx_alloc_uninit(ctx, (size_t)pp * sizeof *rx->fill);
        rx->frac = mtk_ctx_alloc_uninit(ctx, (size_t)(a->nlayers + 2) * sizeof *rx->frac);
        rx->before = mtk_ctx_alloc_uninit(ctx, (size_t)pp * sizeof *rx->before);
        if (!rx->layer_stage || !rx->point_start || !rx->fill || !rx->frac || !rx->before) return false;
    }
    int32_t *layer_stage = rx->layer_stage;
    memset(rx->point_start, 0, (size_t)(pp + 1) * sizeof *rx->point_start);
    for (int32_t s = 0; s < pp; s++)
        for (int32_t l = plan->stage_first_layer[s]; l < plan->stage_first_layer[s + 1]; l++) layer_stage[l] = s;
    if (!have_params && !replay_params(ctx, a, plan, rx)) return false;
    /* full recompute: the replay with gradient checkpointing of the
       layers; selective: of the attention cores */
    bool full = o->training && o->recompute == MTK_RECOMPUTE_FULL;
    bool selective = o->training && o->recompute == MTK_RECOMPUTE_SELECTIVE;
    int32_t npoints;
    const shard_point *points = shard_replay_points(a, o, &npoints);
    rx->pts = points;
    rx->full = full;
    /* each stage's points in step order: its units', then the optimizer's */
    int32_t nopt = 0;
    for (int32_t i = 0; i < npoints; i++) {
        const shard_point *p = &points[i];
        if (p->phase == MTK_PHASE_OPTIMIZER || p->unit < 0) nopt++;
        else rx->point_start[stage_of_unit(a, plan, layer_stage, p->unit) + 1]++;
    }
    for (int32_t s = 0; s < pp; s++) rx->point_start[s + 1] += rx->point_start[s] + nopt;
    /* each slot's saved (without the earlier stages' saved bytes of one
       micro-batch) and other bytes on a rank, without and with sp */
    size_t nslots = (size_t)(rx->point_start[pp] ? rx->point_start[pp] : 1);
    int32_t variants = o->tp > 1 ? 2 : 1; /* sp changes nothing without tp */
    if (nslots > rx->cap_slots || (variants == 2 && rx->saved[1] == rx->saved[0])) { /* sp's own, for a tp > 1 */
        rx->points = mtk_ctx_alloc_uninit(ctx, nslots * sizeof *rx->points);
        if (!rx->points) return false;
        for (int32_t v = 0; v < variants; v++) {
            rx->saved[v] = mtk_ctx_alloc_uninit(ctx, nslots * sizeof *rx->saved[v]);
            rx->other[v] = mtk_ctx_alloc_uninit(ctx, nslots * sizeof *rx->other[v]);
            if (!rx->saved[v] || !rx->other[v]) return false;
        }
        if (variants == 1) rx->saved[1] = rx->saved[0], rx->other[1] = rx->other[0];
        rx->cap_slots = nslots;
    }
    int32_t *fill = rx->fill;
    memcpy(fill, rx->point_start, (size_t)pp * sizeof *fill);
    rx->nopt = nopt;
    int32_t nopt_seen = 0;
    for (int32_t i = 0; i < npoints; i++) {
        const shard_point *p = &points[i];
        if (p->phase == MTK_PHASE_OPTIMIZER || p->unit < 0) {
            for (int32_t s = 0; s < pp; s++) rx->points[rx->point_start[s + 1] - nopt + nopt_seen] = i;
            nopt_seen++;
        } else {
            int32_t s = stage_of_unit(a, plan, layer_stage, p->unit);
            rx->points[fill[s]++] = i;
        }
    }
    tp_divisor tp = divisor_of(o->tp);
    double *frac = rx->frac;
    for (int32_t u = 0; u < a->nlayers + 2; u++) {
        shard_bytes sv = a->units[u].saved;
        int64_t total = sv.sharded + sv.replicated;
        frac[u] = total > 0 ? (double)sv.sharded / (double)total : 0.0;
    }
    shard_replay_before(a, plan, rx->before);
    for (int32_t s = 0; s < pp; s++) {
        int64_t before = rx->before[s];
        /* the head's points (after the stage's layers ran forward, before
           their backward) hold the layers' saved bytes too: those scale
           as the layers' (sp divides them), the rest as the head's */
        int64_t own = 0, own_rank[2] = { 0, 0 };
        for (int32_t l = plan->stage_first_layer[s]; l < plan->stage_first_layer[s + 1]; l++) {
            const shard_unit *un = &a->units[l];
            shard_bytes b = full ? un->input : un->saved;
            if (selective) b.replicated -= un->saved_attention.replicated, b.sharded -= un->saved_attention.sharded;
            own += b.replicated + b.sharded;
            int64_t r[2];
            scaled(a, &tp, frac, l, b.replicated + b.sharded, r);
            own_rank[0] += r[0], own_rank[1] += r[1];
        }
        for (int32_t k = rx->point_start[s]; k < rx->point_start[s + 1]; k++) {
            const shard_point *p = &points[rx->points[k]];
            int64_t mine = p->saved > before ? p->saved - before : 0;
            bool head = p->unit == SHARD_UNIT_POST(a) && mine >= own;
            int64_t sv[2], ot[2];
            scaled(a, &tp, frac, p->unit, head ? mine - own : mine, sv);
            scaled(a, &tp, frac, p->unit, p->other, ot);
            for (int32_t v = 0; v < variants; v++) {
                rx->saved[v][k] = head ? sv[v] + own_rank[v] : sv[v];
                rx->other[v][k] = ot[v];
            }
        }
    }
    return true;
}

shard_replay_index *shard_replay_index_build(mtk_ctx *ctx, const mtk_shard_analysis *a, const mtk_shard_plan *plan,
                                             const shard_replay_index *same_params)
{
    shard_replay_index *rx = mtk_ctx_alloc(ctx, sizeof *rx);
    if (!rx) return NULL;
    memset(rx, 0, sizeof *rx);
    if (same_params) {
        /* the same mesh and stages at another micro-batch */
        rx->units = same_params->units, rx->stage = same_params->stage, rx->whole = same_params->whole;
    }
    return replay_index_fill(ctx, a, plan, rx, same_params != NULL) ? rx : NULL;
}

bool shard_replay_index_rebuild(mtk_ctx *ctx, const mtk_shard_analysis *a, const mtk_shard_plan *plan,
                                shard_replay_index *rx)
{
    return replay_index_fill(ctx, a, plan, rx, true);
}

/* What a stage's moments share while its points are walked. */
typedef struct moment_walk {
    const shard_unit_params *u;
    int32_t first, last;         /* the stage's layers                       */
    int64_t root, later, in_flight_held[2], out_grad[2];
    double tp_ratio;
    bool fsdp2[SHARD_MOMENT_CLASSES];
    int64_t up[SHARD_MOMENT_CLASSES];
    shard_moment (*best)[2];
} moment_walk;

static void take(shard_moment *best, int64_t grads, int64_t held, int64_t transient)
{
    if (grads + held + transient <= best->extra) return;
    best->extra = grads + held + transient;
    best->gradients = grads, best->activations_saved = held, best->transient_at_peak = transient;
}

/* FSDP2's pre-backward of layer l (the hook on its output's gradient,
 * before its first backward node), in the state after the unit before it
 * in the backward (q, its point k: the later layer or the head, its
 * saved bytes released; under full recompute only the checkpointed
 * inputs held): that unit's gradients reduce-scattered into shards, its
 * reduce-scatter input kept; l's output gradient in flight; and gathered
 * the root and l's all-gather output with the unsharded copy made from it
 * (wait_for_unshard copies out, then frees the output; the prefetch of
 * the layer before comes after). */
static void pre_backward_moment(const moment_walk *w, int32_t l, const shard_point *q, int32_t k,
                                const int64_t *const saved_at[2])
{
    int64_t shards = 0, done_global = 0;
    if (l < w->last) shards = w->u[l + 1].shard_after + w->u[l + 1].padded, done_global = w->u[l + 1].global_after;
    int64_t flying = q->grads - w->later - done_global;
    int64_t flying_rank = flying > 0 ? (int64_t)((double)flying * w->tp_ratio) : 0;
    int64_t gathered = w->root + 2 * w->u[l].padded;
    for (int32_t c = 0; c < SHARD_MOMENT_CLASSES; c++) {
        if (!w->fsdp2[c]) continue;
        for (int32_t v = 0; v < 2; v++)
            take(&w->best[c][v], w->up[c] * shards + flying_rank, w->in_flight_held[v] + saved_at[v][k],
                 w->out_grad[v] + gathered);
    }
}

/* FSDP2's pre-forward of layer l: in the state after the unit before
 * it (its point k), the all-gather of l's parameters is issued while the
 * one before (the layer before's, or the first layer's: the root's) is
 * still held, and l's unsharded copy is made from it before the one
 * before is freed (wait_for_unshard drops it, but its local reference
 * keeps it until the copy-out is done); inference holds the cache of
 * the layers before. */
static void pre_forward_moment(const moment_walk *w, int32_t l, int32_t k, const int64_t *const saved_at[2],
                               const int64_t *const other_at[2], int64_t kv)
{
    int64_t before = l > w->first ? w->u[l - 1].padded : w->root;
    int64_t gathered = w->root + before + 2 * w->u[l].padded + (l - w->first) * kv;
    for (int32_t c = 0; c < SHARD_MOMENT_CLASSES; c++) {
        if (!w->fsdp2[c]) continue;
        for (int32_t v = 0; v < 2; v++)
            take(&w->best[c][v], 0, w->in_flight_held[v] + saved_at[v][k], other_at[v][k] + gathered);
    }
}

bool shard_replay_index_params(mtk_ctx *ctx, const mtk_shard_analysis *a, const mtk_shard_plan *plan,
                               shard_replay_index *rx)
{
    return replay_params(ctx, a, plan, rx);
}

/* The peak of stage s replayed over the traced step: at each point the
 * rank's model states, its share of the point's activations (with the
 * in-flight micro-batches of 1F1B and without the earlier stages'),
 * the gradients it holds then, and under FSDP/ZeRO-3 the parameters
 * gathered then: the root's all step, a layer's in its forward and its
 * backward with the all-gather buffer of the next layer to run
 * (FSDP2's reshard_after_forward and backward prefetch), gradients
 * reduce-scattered to padded shards as each layer's backward ends; and
 * under FSDP each layer's pre-backward (pre_backward_moment).
 * One pass over the stage's points serves every class and sp asked:
 * what a point holds apart from the class (its saved and other bytes,
 * its gradients' parts) is read once. */
void shard_stage_moments(const mtk_shard_analysis *a, const mtk_shard_plan *plan, const shard_replay_index *rx,
                         int32_t s, int32_t in_flight, const shard_moment_class *cls, int32_t ncls,
                         const bool *sps, const int64_t *saved_per_mb, int32_t nsp, shard_moment *mo)
{
    const mtk_shard_options *o = &plan->options;
    int32_t first = plan->stage_first_layer[s], last = plan->stage_first_layer[s + 1] - 1;
    const shard_unit_params *u = rx->units; /* the layers' */
    int64_t root = u[a->nlayers + 2 * s].padded + u[a->nlayers + 2 * s + 1].padded;
    int64_t global = rx->stage[s].global, local = rx->stage[s].local, later = rx->stage[s].later;
    double tp_ratio = global > 0 ? (double)local / (double)global : 1.0;
    const int64_t *saved_at[2], *other_at[2];
    int64_t in_flight_held[2];
    for (int32_t v = 0; v < 2; v++) {
        /* the loop below runs both sp: a second one as the first */
        int32_t w = v < nsp ? v : 0;
        saved_at[v] = rx->saved[sps[w]], other_at[v] = rx->other[sps[w]];
        in_flight_held[v] = in_flight > 1 ? (in_flight - 1) * saved_per_mb[w] : 0;
    }
    /* per class: gathered (FSDP or ZeRO-3 over dp > 1), ZeRO >= 2, and
       FSDP2's mixed precision reducing in float32 into float32 shards
       (MixedPrecisionPolicy reduce_dtype); the loop below runs every
       class, those not asked as the first */
    int64_t item = (int64_t)mtk_dtype_size(a->dtype);
    bool fsdp[SHARD_MOMENT_CLASSES], zero2[SHARD_MOMENT_CLASSES];
    int64_t up[SHARD_MOMENT_CLASSES];
    shard_moment best[SHARD_MOMENT_CLASSES][2];
    moment_walk walk = { .u = u, .first = first, .last = last, .root = root, .later = later, .tp_ratio = tp_ratio,
                         .best = best };
    bool any_fsdp = false, any_zero2 = false;
    tp_divisor dp = divisor_of(o->dp); /* ZeRO-2's gradient shards */
    for (int32_t c = 0; c < SHARD_MOMENT_CLASSES; c++) {
        const shard_moment_class *k = &cls[c < ncls ? c : 0];
        fsdp[c] = (k->fsdp || k->zero == 3) && o->dp > 1;
        zero2[c] = k->zero >= 2;
        up[c] = k->fsdp && item < 4 ? 4 / item : 1;
        walk.fsdp2[c] = fsdp[c] && k->fsdp;
        walk.up[c] = up[c];
        any_fsdp |= fsdp[c];
        any_zero2 |= zero2[c] && !fsdp[c];
    }
    for (int32_t c = 0; c < SHARD_MOMENT_CLASSES; c++)
        for (int32_t v = 0; v < 2; v++) {
            memset(&best[c][v], 0, sizeof best[c][v]);
            best[c][v].extra = -1;
        }
    int64_t kv = a->kv_layer_bytes && a->kv_heads % o->tp == 0 ? shard_ceil_div(a->kv_layer_bytes, o->tp) : a->kv_layer_bytes;
    bool any_fsdp2 = false;
    for (int32_t v = 0; v < 2; v++) {
        /* a layer's output gradient on a rank (sp divides it) */
        walk.in_flight_held[v] = in_flight_held[v];
        walk.out_grad[v] = sps[v < nsp ? v : 0] ? shard_ceil_div(a->boundary_bytes, o->tp) : a->boundary_bytes;
    }
    for (int32_t c = 0; c < SHARD_MOMENT_CLASSES; c++) any_fsdp2 |= walk.fsdp2[c];
    for (int32_t k = rx->point_start[s]; k < rx->point_start[s + 1] - rx->nopt; k++) {
        const shard_point *p = &rx->pts[rx->points[k]];
        bool bwd = p->phase == MTK_PHASE_BACKWARD || p->phase == MTK_PHASE_RECOMPUTE;
        bool layer = p->unit < a->nlayers, post = p->unit == SHARD_UNIT_POST(a);
        /* a layer's first point in the forward or the backward follows
           the state after the unit before it (finish_points keeps it):
           FSDP2's hooks run there; on a stage but the first (the last),
           its first layer's forward (its last layer's backward) follows
           none */
        if (any_fsdp2 && layer && k > rx->point_start[s]) {
            const shard_point *q = &rx->pts[rx->points[k - 1]];
            if (q->unit != p->unit && !bwd) pre_forward_moment(&walk, p->unit, k - 1, saved_at, other_at, kv);
            else if (q->unit != p->unit && o->training && q->phase == MTK_PHASE_BACKWARD)
                pre_backward_moment(&walk, p->unit, q, k - 1, saved_at);
        }
        if (p->entry) continue;
        /* gathered: fsdp_gathered under a gathering class, plus kv */
        int64_t plain_grads = 0, zero2_grads = 0, fsdp_shards = 0, fsdp_flying = 0, fsdp_gathered = 0, kv_held = 0;
        if (bwd) {
            plain_grads = p->grads > later ? (int64_t)((double)(p->grads - later) * tp_ratio) : 0;
            if (any_zero2) zero2_grads = ceil_div_by(plain_grads, &dp);
            if (any_fsdp) {
                /* layers after this one are done: their shards, the last
                   reduce-scatter's input; the rest unsharded in flight */
                int32_t done_from = p->unit == SHARD_UNIT_PRE(a) ? first : post ? last + 1 : p->unit + 1;
                int64_t done_global = 0;
                if (done_from <= last) {
                    fsdp_shards = u[done_from].shard_after + u[done_from].padded;
                    done_global = u[done_from].global_after;
                }
                int64_t flying = p->grads - later - done_global;
                fsdp_flying = flying > 0 ? (int64_t)((double)flying * tp_ratio) : 0;
            }
        }
        if (!bwd) {
            /* the forward (training's, or inference's under no_grad): the
               root's unsharded parameters all step and its all-gather
               output until the first layer's copy-out; a layer's
               unsharded copy and its all-gather output (kept until the
               next layer's copy-out, the last one's until the root's
               post-forward); inference also the DynamicCache of the layers
               run */
            fsdp_gathered = root + (layer ? 2 * u[p->unit].padded : post ? u[last].padded : root);
            if (!o->training) {
                int32_t upto = layer ? p->unit : post ? last : first - 1;
                kv_held = (upto >= first ? upto - first + 1 : 0) * kv;
            }
        } else {
            fsdp_gathered = root;
            if (layer) {                                                       /* and the prefetched layer */
                fsdp_gathered += u[p->unit].padded;
                if (p->unit > first) fsdp_gathered += u[p->unit - 1].padded;
            } else if (post) fsdp_gathered += u[last].padded;                  /* prefetched */
        }
        int64_t held[2], other[2];
        for (int32_t v = 0; v < 2; v++) held[v] = in_flight_held[v] + saved_at[v][k], other[v] = other_at[v][k];
        for (int32_t c = 0; c < SHARD_MOMENT_CLASSES; c++) {
            int64_t grads = 0, gathered = kv_held;
            if (fsdp[c] && bwd) grads = up[c] * fsdp_shards + fsdp_flying;
            else if (bwd) grads = zero2[c] ? zero2_grads : plain_grads;
            if (fsdp[c]) gathered += fsdp_gathered;
            for (int32_t v = 0; v < 2; v++) take(&best[c][v], grads, held[v], other[v] + gathered);
        }
    }
    for (int32_t c = 0; c < ncls; c++)
        for (int32_t v = 0; v < nsp; v++) mo[c * nsp + v] = best[c][v];
}

void shard_stage_moment(const mtk_shard_analysis *a, const mtk_shard_plan *plan, const shard_replay_index *rx,
                        int32_t s, int32_t in_flight, int64_t saved_per_mb, shard_moment *mo)
{
    const mtk_shard_options *o = &plan->options;
    shard_moment_class c = { o->zero, o->fsdp };
    bool sp = o->sp;
    shard_stage_moments(a, plan, rx, s, in_flight, &c, 1, &sp, &saved_per_mb, 1, mo);
}

void shard_stage_peak_of(const mtk_shard_plan *plan, const shard_replay_index *rx,
                         int32_t s, const shard_moment *mo, mtk_memory_breakdown *m)
{
    const mtk_shard_options *o = &plan->options;
    bool fsdp = (o->fsdp || o->zero == 3) && o->dp > 1;
    /* the step's temporaries follow the rank's share of the parameters
       (the whole model's in the replay) */
    double optim_share = rx->whole > 0 ? (double)rx->stage[s].local / (double)rx->whole : 1.0;
    int64_t base = m->parameters + m->optimizer_states, best = -1, grads = m->gradients;
    if (mo->extra >= 0) {
        best = base + mo->extra;
        m->gradients = mo->gradients;
        m->activations_saved = mo->activations_saved;
        m->transient_at_peak = mo->transient_at_peak;
    }
    for (int32_t k = rx->point_start[s + 1] - rx->nopt; k < rx->point_start[s + 1]; k++) {
        int64_t other = (int64_t)((double)rx->other[o->sp][k] * optim_share);
        if (fsdp || o->zero >= 1) other = shard_ceil_div(other, o->dp);
        int64_t saved = rx->saved[o->sp][k];
        if (base + grads + saved + other > best) {
            best = base + grads + saved + other;
            m->gradients = grads;
            m->activations_saved = saved;
            m->transient_at_peak = other;
        }
    }
}

void shard_stage_peak(const mtk_shard_analysis *a, const mtk_shard_plan *plan, const shard_replay_index *rx,
                      int32_t s, int32_t in_flight, int64_t saved_per_mb, mtk_memory_breakdown *m)
{
    shard_moment mo;
    shard_stage_moment(a, plan, rx, s, in_flight, saved_per_mb, &mo);
    shard_stage_peak_of(plan, rx, s, &mo, m);
}

static bool memory(mtk_ctx *ctx, const mtk_shard_analysis *a, mtk_shard_plan *plan)
{
    const mtk_shard_options *o = &plan->options;
    mtk_shard_rank *ranks = mtk_ctx_alloc(ctx, (size_t)plan->world_size * sizeof *ranks);
    int64_t *saved = mtk_ctx_alloc(ctx, (size_t)o->pp * 2 * sizeof *saved);
    if (!ranks || !saved) return false;
    for (int32_t s = 0; s < o->pp; s++) shard_stage_activations(a, plan, s, &saved[2 * s], &saved[2 * s + 1]);
    const shard_replay_index *rx = NULL;
    if (shard_replays(a, o) && !(rx = shard_replay_index_build(ctx, a, plan, NULL))) return false;
    for (int32_t r = 0; r < plan->world_size; r++) {
        mtk_shard_rank *k = &ranks[r];
        k->rank = r;
        k->tp_index = r % o->tp;
        k->dp_index = (r / o->tp) % o->dp;
        k->stage = r / (o->tp * o->dp);
        shard_state_sums sums;
        shard_state_sums_of(a, plan, NULL, k->tp_index, k->dp_index, k->stage, &sums);
        shard_rank_memory(plan, &sums, saved[2 * k->stage], saved[2 * k->stage + 1], k);
        if (rx) {
            /* replayed once a stage (its first rank); the others take
               its moment with their own model states */
            const mtk_shard_rank *first = &ranks[k->stage * o->tp * o->dp];
            if (first == k) shard_stage_peak(a, plan, rx, k->stage, k->in_flight, saved[2 * k->stage], &k->at_peak);
            shard_rank_take_moment(k, &first->at_peak);
        }
    }
    plan->ranks = ranks;
    return true;
}

/* The stage of a unit. */
static int32_t unit_stage(const mtk_shard_analysis *a, const mtk_shard_plan *plan, int32_t unit)
{
    for (int32_t s = 0; s < plan->options.pp; s++)
        if (shard_unit_in_stage(a, plan, unit, s)) return s;
    return 0;
}

shard_stage_index *shard_stage_index_build(mtk_ctx *ctx, const mtk_shard_analysis *a, const mtk_shard_plan *plan)
{
    int32_t pp = plan->options.pp, np = plan->nparams, last = pp - 1;
    shard_stage_index *ix = mtk_ctx_alloc(ctx, sizeof *ix);
    int32_t *pstart = mtk_ctx_alloc(ctx, (size_t)(pp + 2) * sizeof *pstart);
    int32_t *sstart = mtk_ctx_alloc(ctx, (size_t)(pp + 2) * sizeof *sstart);
    int32_t *params = mtk_ctx_alloc_uninit(ctx, (size_t)(np + 2) * sizeof *params);
    int32_t *sites = mtk_ctx_alloc_uninit(ctx, (size_t)(a->nsites + 1) * sizeof *sites);
    int32_t *site_stage = mtk_ctx_alloc_uninit(ctx, (size_t)(a->nsites + 1) * sizeof *site_stage);
    if (!ix || !pstart || !sstart || !params || !sites || !site_stage) return NULL;
    /* counting sort, each bucket in index order; the tied embedding also
       in the last stage */
    for (int32_t i = 0; i < np; i++) {
        int32_t st = plan->params[i].stage;
        pstart[st + 2]++;
        if (i == a->tied_param && st != last) pstart[last + 2]++;
    }
    for (int32_t i = 0; i < a->nsites; i++) sstart[(site_stage[i] = unit_stage(a, plan, a->sites[i].unit)) + 2]++;
    for (int32_t s = 2; s <= pp + 1; s++) pstart[s] += pstart[s - 1], sstart[s] += sstart[s - 1];
    for (int32_t i = 0; i < np; i++) {
        int32_t st = plan->params[i].stage;
        params[pstart[st + 1]++] = i;
        if (i == a->tied_param && st != last) params[pstart[last + 1]++] = i;
    }
    for (int32_t i = 0; i < a->nsites; i++) sites[sstart[site_stage[i] + 1]++] = i;
    ix->param_start = pstart, ix->params = params, ix->site_start = sstart, ix->sites = sites;
    return ix;
}

bool shard_cost(mtk_ctx *ctx, const mtk_shard_analysis *a, mtk_shard_plan *plan)
{
    if (!memory(ctx, a, plan)) return false;
    if (!shard_comms_list(ctx, a, plan)) return false;
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
