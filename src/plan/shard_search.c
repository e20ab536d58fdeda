/* The search for the best parallel plan (mtk_shard_search) and the
 * roofline estimate of one step it ranks plans by.
 *
 * The cheap path: the model is traced once per micro-batch; each mesh
 * (tp, pp, dp, ep) is laid out once (stages, placements; no slices) and
 * its ranks' model-state sums, one per (t, d % ep, stage) since ranks
 * that share those hold the same, and its collectives' bytes per stage
 * (two sequence-parallel and three ZeRO/FSDP variants) are made once;
 * the 30 variants of ZeRO/FSDP, sequence parallelism and recompute are
 * then arithmetic over them.  The numbers are shard_cost.c's own, so
 * mtk_shard_plan_estimate on mtk_shard_evaluate's plan gives the same. */
#include "plan/shard_internal.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#define CELLS (SHARD_NOPS * SHARD_NGROUPS) /* one stage's bytes per op and group */

static double now_seconds(void)
{
    struct timespec ts;
    timespec_get(&ts, TIME_UTC);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void mtk_shard_search_options_init(mtk_shard_search_options *o)
{
    memset(o, 0, sizeof *o);
    o->gpus = 8;
    o->gpu = *mtk_gpu_spec_find("h100-80gb");
    o->efficiency = 0.5;
    o->seq = 1;
    o->max_micro_batch = 8;
    o->training = true;
    o->dtype = MTK_DTYPE_UNDEFINED;
    o->margin_bytes = -1;
    o->top = 5;
}

static int64_t budget_of(const mtk_shard_search_options *so)
{
    int64_t memory = (int64_t)(so->gpu.memory_gib * (double)(1LL << 30));
    int64_t margin = so->margin_bytes;
    if (margin < 0) {
        mtk_memory_constants c;
        mtk_memory_constants_default(&c);
        margin = mtk_place_default_margin(&c, memory);
    }
    return memory - margin;
}

/* GB/s one way of the link group g's collectives cross: NVLink when the
 * ranks they span fit in a node (tp innermost, then dp, then stages). */
static double link_gbps(const mtk_shard_search_options *so, const mtk_shard_options *o, int32_t g)
{
    int64_t span = g == 0 ? o->tp : g == 1 ? (int64_t)o->tp * o->dp : g == 2 ? (int64_t)o->tp * o->dp * o->pp
                                                                             : (int64_t)o->ep;
    return span <= so->gpu.gpus_per_node ? so->gpu.nvlink_gbps : so->gpu.ib_gbps;
}

/* Bytes a rank moves per byte of the collective's tensor: a ring
 * all-reduce 2 (n - 1) / n, all-gather, reduce-scatter and all-to-all
 * (n - 1) / n, a send 1 (its receive is the same transfer). */
static double wire_factor(int32_t op, int64_t n)
{
    double f = n > 1 ? (double)(n - 1) / (double)n : 0.0;
    switch (op) {
    case MTK_COLL_ALL_REDUCE: return 2.0 * f;
    case MTK_COLL_SEND: return 1.0;
    case MTK_COLL_RECV: return 0.0;
    default: return f;
    }
}

/* The estimate from a plan's per-stage FLOPs (forward, and recomputed
 * under each mode: stage_recompute[mode * pp + s]) and collectives'
 * bytes (pp x CELLS) and its largest peak. */
static void estimate(const mtk_shard_search_options *so, const mtk_shard_options *o, int64_t m,
                     const double *stage_flops, const double *stage_recompute, const int64_t *bytes, int64_t peak,
                     mtk_shard_estimate *e)
{
    double flops_s = so->gpu.tflops * 1e12 * so->efficiency;
    double passes = o->training ? 3.0 : 1.0;
    const double *recompute = o->training ? stage_recompute + (size_t)o->recompute * (size_t)o->pp : NULL;
    double worst = -1.0, worst_compute = 0.0, worst_comm = 0.0, dp_seconds = 0.0, model_flops = 0.0;
    double recompute_flops = 0.0;
    int32_t bottleneck = 0;
    for (int32_t s = 0; s < o->pp; s++) {
        double rc = recompute ? recompute[s] : 0.0;
        double compute = (stage_flops[s] * passes + rc) / (double)o->tp / flops_s, comm = 0.0, dp = 0.0;
        model_flops += stage_flops[s];
        recompute_flops += rc;
        for (int32_t op = 0; op < SHARD_NOPS; op++) {
            for (int32_t g = 0; g < SHARD_NGROUPS; g++) {
                int64_t b = bytes[(size_t)s * CELLS + (size_t)(op * SHARD_NGROUPS + g)];
                if (!b) continue;
                int64_t n = g == 0 ? o->tp : g == 1 ? o->dp : g == 2 ? 2 : o->ep;
                double t = (double)b * wire_factor(op, n) / (link_gbps(so, o, g) * 1e9);
                if (g == 1) dp += t;
                else comm += t;
            }
        }
        double slot = compute + comm / (double)m; /* one micro-batch of the stage */
        if (slot > worst) worst = slot, worst_compute = compute, worst_comm = comm, bottleneck = s;
        if (dp > dp_seconds) dp_seconds = dp;
    }
    memset(e, 0, sizeof *e);
    e->options = *o;
    e->micro_batches = m;
    e->peak_bytes = peak;
    e->budget_bytes = budget_of(so);
    e->fits = peak <= e->budget_bytes;
    e->bottleneck_stage = bottleneck;
    e->compute_seconds = (double)m * worst_compute;
    e->communication_seconds = worst_comm + dp_seconds;
    e->bubble_seconds = (double)(o->pp - 1) * worst;
    e->step_seconds = e->compute_seconds + e->communication_seconds + e->bubble_seconds;
    e->bubble = o->pp > 1 ? (double)(o->pp - 1) / (double)(m + o->pp - 1) : 0.0;
    model_flops *= (o->training ? 3.0 : 1.0) * (double)m * (double)o->dp;
    e->recompute_flops = recompute_flops * (double)m * (double)o->dp;
    int64_t world = (int64_t)o->tp * o->pp * o->dp;
    e->mfu = e->step_seconds > 0 ? model_flops / (e->step_seconds * (double)world * so->gpu.tflops * 1e12) : 0.0;
}

/* The cost model's own numbers: the GPU's and the efficiency. */
static bool check_cost_model(mtk_ctx *ctx, const mtk_shard_search_options *so)
{
    const mtk_gpu_spec *g = &so->gpu;
    if (!(so->efficiency > 0.0 && so->efficiency <= 1.0))
        return mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "shard --search: --efficiency %g is not in (0, 1]",
                         so->efficiency);
    if (!(g->tflops > 0.0) || !(g->memory_gib > 0.0) || !(g->nvlink_gbps > 0.0) || !(g->ib_gbps > 0.0) ||
        g->gpus_per_node < 1)
        return mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT,
                         "shard --search: GPU %s needs positive TFLOP/s, memory, NVLink and IB bandwidth and "
                         "GPUs per node (got %g, %g, %g, %g, %d)",
                         g->name ? g->name : "?", g->tflops, g->memory_gib, g->nvlink_gbps, g->ib_gbps,
                         g->gpus_per_node);
    return true;
}

static bool check_search_options(mtk_ctx *ctx, const mtk_shard_search_options *so)
{
    if (!check_cost_model(ctx, so)) return false;
    if (so->gpus < 1 || so->seq < 1 || so->global_batch < 1 || so->max_micro_batch < 1 || so->top < 1)
        return mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT,
                         "shard --search: --gpus %d, sequence %lld, --global-batch %lld, --max-micro-batch %lld and "
                         "--top %d must all be >= 1",
                         so->gpus, (long long)so->seq, (long long)so->global_batch, (long long)so->max_micro_batch,
                         so->top);
    return true;
}

bool mtk_shard_plan_estimate(mtk_ctx *ctx, const mtk_shard_plan *plan, const mtk_shard_search_options *so,
                             mtk_shard_estimate *e)
{
    if (!ctx) return false;
    if (!plan || !so || !e) return mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "shard: NULL plan, options or estimate");
    if (!check_cost_model(ctx, so)) return false;
    const mtk_shard_options *o = &plan->options;
    int64_t *bytes = mtk_ctx_alloc(ctx, (size_t)o->pp * CELLS * sizeof *bytes);
    if (!bytes) return false;
    memset(bytes, 0, (size_t)o->pp * CELLS * sizeof *bytes);
    for (int32_t i = 0; i < plan->ncomms; i++) {
        const mtk_shard_comm *c = &plan->comms[i];
        bytes[(size_t)c->stage * CELLS + (size_t)((int32_t)c->op * SHARD_NGROUPS + shard_group_index(c->group))] +=
            c->bytes;
    }
    int64_t peak = 0;
    for (int32_t r = 0; r < plan->world_size; r++)
        if (plan->ranks[r].peak_bytes > peak) peak = plan->ranks[r].peak_bytes;
    estimate(so, o, plan->micro_batches, plan->stage_flops, plan->stage_recompute_flops, bytes, peak, e);
    return true;
}

/* ------------------------------------------------------------- the search */

#define MAX_MICRO 63            /* micro-batches 1, 2, 4 .. 2^62 at most     */

/* What one mesh (tp, pp, dp, ep) keeps across its micro-batches while
 * its stages stay the same: the plan whose placements and stages its
 * parameters hold, their stage index, the distinct model-state sums of
 * its ranks and the replay index's parameter bytes. */
typedef struct mesh_cache {
    const mtk_shard_plan *plan;
    const shard_stage_index *ix;
    shard_state_sums *sums;     /* stage s's distinct ones: [start[s],
                                   start[s + 1]), its rank (t 0, d 0) first */
    int32_t *start;
    int64_t *dp_walk;           /* pp x 2: each stage's shard_stage_dp_walk  */
    shard_replay_index *params; /* the replay index's parameter bytes,
                                   NULL until a replay needs them           */
} mesh_cache;

/* The points part of a replay index (shard_replay_index_params aside):
 * the same for every mesh of one micro-batch, recompute, tp and stages,
 * kept per micro-batch and recompute for the latest of those and rebuilt
 * in place for the next. */
typedef struct points_cache {
    shard_replay_index *rx;     /* NULL until built                          */
    int32_t tp, pp;
    const int32_t *stage_first_layer; /* its pp + 1 cuts                      */
} points_cache;

typedef struct search_state {
    mtk_ctx *ctx;
    const mtk_shard_search_options *so;
    mtk_shard_search_result *result;
    mtk_shard_estimate *top;
    char why[1024];             /* why meshes could not work (first pass)    */
    size_t why_len;
    int64_t meshes;             /* meshes that passed the checks             */
    int32_t nmicro;             /* micro-batches tried and their analyses    */
    int64_t micros[MAX_MICRO];
    const mtk_shard_analysis *analyses[MAX_MICRO];
    const mtk_shard_plan *by_pp[MAX_MICRO][64]; /* one partition per pp and
                                   micro-batch, to reuse                    */
    int32_t nby_pp[MAX_MICRO];
    bool doubled[MAX_MICRO];    /* the units' FLOPs twice the micro-batch
                                   before's: its partitions serve          */
    const mtk_shard_plan *by_tp[64]; /* per tp x ep the latest plan laid out
                                   in its placement array (restaged in place,
                                   meshes searched one at a time)           */
    int32_t nby_tp;
    /* scratch of one mesh and micro-batch, for pp up to max_pp */
    int32_t max_pp;
    int64_t budget;             /* the GPU's memory less the margin          */
    points_cache points[MAX_MICRO][3]; /* per micro-batch and recompute  */
    const int64_t *unit_max[MAX_MICRO][3]; /* per micro-batch and recompute:
                                   shard_unit_saved_max's, made once        */
    int64_t *tpc;               /* 5 x cells: sp 0, sp 1, dp none, zero, sharded */
    int64_t *bytes;             /* cells                                     */
    int64_t *act;               /* [sp][recompute][stage][saved, transient]  */
    mtk_memory_breakdown *moment; /* pp                                     */
    shard_moment *fb;           /* [recompute][class][sp][stage]             */
    int64_t *floor;             /* [zero][stage], then [sp][recompute][stage] */
    int64_t *before;            /* pp: shard_replay_before's                 */
} search_state;

static void note_why(search_state *st, const char *fmt, int32_t tp, int32_t pp, int32_t dp, const char *reason)
{
    if (st->why_len + 8 >= sizeof st->why) return;
    int n = snprintf(st->why + st->why_len, sizeof st->why - st->why_len, fmt, tp, pp, dp, reason);
    if (n > 0) st->why_len += (size_t)n < sizeof st->why - st->why_len ? (size_t)n : sizeof st->why - st->why_len - 1;
}

/* The order configurations are enumerated in by the brute force (micro-
 * batch, tp, pp, ep, ZeRO 0-3 then FSDP, sp, recompute): ties in time
 * and peak go to the first, so the answer does not depend on the order
 * the search walks them. */
static int compare_keys(const mtk_shard_options *a, const mtk_shard_options *b)
{
    int64_t ka[7] = { a->micro_batch, a->tp, a->pp, a->ep, a->fsdp ? 4 : a->zero, a->sp, a->recompute };
    int64_t kb[7] = { b->micro_batch, b->tp, b->pp, b->ep, b->fsdp ? 4 : b->zero, b->sp, b->recompute };
    for (int32_t i = 0; i < 7; i++)
        if (ka[i] != kb[i]) return ka[i] < kb[i] ? -1 : 1;
    return 0;
}

/* Faster, or as fast with a smaller peak, or as both and first. */
static bool better(const mtk_shard_estimate *e, const mtk_shard_estimate *f)
{
    if (e->step_seconds != f->step_seconds) return e->step_seconds < f->step_seconds;
    if (e->peak_bytes != f->peak_bytes) return e->peak_bytes < f->peak_bytes;
    return compare_keys(&e->options, &f->options) < 0;
}

static void keep(search_state *st, const mtk_shard_estimate *e)
{
    mtk_shard_search_result *r = st->result;
    int32_t k = st->so->top, n = r->nplans;
    if (n == k && !better(e, &st->top[n - 1])) return;
    int32_t at = n < k ? n : k - 1;
    while (at > 0 && better(e, &st->top[at - 1])) {
        st->top[at] = st->top[at - 1];
        at--;
    }
    st->top[at] = *e;
    if (n < k) r->nplans++;
}

/* The mesh cache of a plan whose parameters or stages differ from the
 * cache's: stage index and the distinct sums of each stage's ranks. */
static bool mesh_cache_fill(search_state *st, const mtk_shard_analysis *a, const mtk_shard_plan *plan,
                            mesh_cache *mc)
{
    const mtk_shard_options *o = &plan->options;
    int32_t tp = o->tp, pp = o->pp, ep = o->ep;
    mc->plan = plan;
    mc->params = NULL;
    mc->ix = shard_stage_index_build(st->ctx, a, plan);
    mc->sums = mtk_ctx_alloc_uninit(st->ctx, (size_t)tp * (size_t)ep * (size_t)pp * sizeof *mc->sums);
    mc->start = mtk_ctx_alloc_uninit(st->ctx, (size_t)(pp + 1) * sizeof *mc->start);
    mc->dp_walk = mtk_ctx_alloc_uninit(st->ctx, 2 * (size_t)pp * sizeof *mc->dp_walk);
    if (!mc->ix || !mc->sums || !mc->start || !mc->dp_walk) return false;
    int32_t n = 0;
    for (int32_t s = 0; s < pp; s++) {
        mc->start[s] = n;
        /* the ranks of a stage whose tp-split (expert) parameters hold
           alike shapes on every tp (ep) index have the same sums whatever
           that index: the first (0) only */
        shard_stage_sums ss;
        if (!shard_stage_sums_split(st->ctx, a, plan, mc->ix, s, &ss)) return false;
        mc->dp_walk[2 * s] = ss.dp_walk[0], mc->dp_walk[2 * s + 1] = ss.dp_walk[1];
        for (int32_t e = 0; e < (ss.vary_e ? ep : 1); e++)
            for (int32_t t = 0; t < (ss.vary_t ? tp : 1); t++) {
                /* ranks with the same sums have the same memory and peak */
                shard_stage_sums_at(plan, &ss, t, e, &mc->sums[n]);
                bool seen = false;
                for (int32_t k = mc->start[s]; k < n && !seen; k++)
                    seen = memcmp(&mc->sums[k], &mc->sums[n], sizeof mc->sums[n]) == 0;
                if (!seen) n++;
            }
    }
    mc->start[pp] = n;
    return true;
}

/* Each stage's collective bytes (tpc: sp off and on, DDP, ZeRO 1/2 and
 * ZeRO 3/FSDP), under the mesh's own options. */
static void mesh_comms(search_state *st, const mtk_shard_analysis *a, mtk_shard_plan *plan, const mesh_cache *mc,
                       const mtk_shard_options *base)
{
    mtk_shard_options *o = &plan->options, now = *o;
    size_t cells = (size_t)o->pp * CELLS;
    *o = *base;
    memset(st->tpc, 0, 5 * cells * sizeof *st->tpc);
    for (int32_t s = 0; s < o->pp; s++) {
        /* the stage's parameters walked once (mesh_cache_fill) for its
           three DP schemes */
        for (int32_t v = 0; v < 5; v++) {
            o->sp = v == 1 && o->tp > 1;
            o->zero = v == 3 ? 1 : v == 4 ? 3 : 0;
            shard_stage_comm_bytes(a, plan, mc->ix, s, v < 2 ? SHARD_COMMS_TP | SHARD_COMMS_PP : SHARD_COMMS_DP,
                                   mc->dp_walk + 2 * (size_t)s, st->tpc + (size_t)v * cells + (size_t)s * CELLS);
        }
    }
    *o = now;
}

/* The largest saved bytes of each unit's points under recompute rc at
 * micro-batch k (the same for every mesh): made once. */
static const int64_t *unit_saved_max(search_state *st, int32_t k, const mtk_shard_analysis *a, int32_t rc)
{
    if (!st->unit_max[k][rc]) {
        int64_t *m = mtk_ctx_alloc_uninit(st->ctx, (size_t)(a->nlayers + 2) * sizeof *m);
        if (!m) return NULL;
        mtk_shard_options o = a->options;
        o.recompute = (mtk_shard_recompute)rc;
        shard_unit_saved_max(a, &o, m);
        st->unit_max[k][rc] = m;
    }
    return st->unit_max[k][rc];
}

/* The points part of the replay index of the plan (its recompute rc) at
 * micro-batch k: the cached one when its tp and stages are the plan's,
 * else rebuilt in place (its scratch sized for the most stages).  NULL
 * on out of memory. */
static const shard_replay_index *points_index(search_state *st, int32_t k, int32_t rc, const mtk_shard_analysis *a,
                                              const mtk_shard_plan *plan)
{
    points_cache *pc = &st->points[k][rc];
    int32_t tp = plan->options.tp, pp = plan->options.pp;
    if (pc->rx && pc->tp == tp && pc->pp == pp &&
        (pc->stage_first_layer == plan->stage_first_layer ||
         memcmp(pc->stage_first_layer, plan->stage_first_layer, (size_t)(pp + 1) * sizeof(int32_t)) == 0))
        return pc->rx;
    if (!pc->rx) {
        /* the scratch a build sizes by the plan's stages, for any */
        size_t most = (size_t)(st->max_pp > 0 ? st->max_pp : 1);
        shard_replay_index *rx = mtk_ctx_alloc(st->ctx, sizeof *rx);
        if (!rx) return NULL;
        rx->layer_stage = mtk_ctx_alloc_uninit(st->ctx, (size_t)(a->nlayers ? a->nlayers : 1) * sizeof *rx->layer_stage);
        rx->point_start = mtk_ctx_alloc_uninit(st->ctx, (most + 1) * sizeof *rx->point_start);
        rx->fill = mtk_ctx_alloc_uninit(st->ctx, most * sizeof *rx->fill);
        rx->frac = mtk_ctx_alloc_uninit(st->ctx, (size_t)(a->nlayers + 2) * sizeof *rx->frac);
        rx->before = mtk_ctx_alloc_uninit(st->ctx, most * sizeof *rx->before);
        if (!rx->layer_stage || !rx->point_start || !rx->fill || !rx->frac || !rx->before) return NULL;
        pc->rx = rx;
    }
    pc->tp = -1; /* until rebuilt */
    if (!shard_replay_index_rebuild(st->ctx, a, plan, pc->rx)) return NULL;
    pc->tp = tp, pc->pp = pp, pc->stage_first_layer = plan->stage_first_layer;
    return pc->rx;
}

/* Every variant of one laid-out mesh at micro-batch k.  A variant's peak
 * is at least its ranks' parameters and optimizer states with the
 * saved bytes its stages' replays hold at least (their in-flight
 * micro-batches' and shard_stage_saved_floor's): a recompute whose
 * variants are all over the GPU's memory so is not replayed, and only
 * the variants that fit are timed. */
static bool search_mesh(search_state *st, int32_t k, const mtk_shard_analysis *a, mtk_shard_plan *plan,
                        mesh_cache *mc)
{
    mtk_ctx *ctx = st->ctx;
    mtk_shard_options *o = &plan->options, base = plan->options; /* restored after */
    int32_t tp = o->tp, pp = o->pp;
    int32_t nrc = o->training ? 3 : 1, nsp = tp > 1 ? 2 : 1, nz = o->dp > 1 ? 5 : 1;
    size_t cells = (size_t)pp * CELLS;
    if (!mc->plan || mc->plan->params != plan->params || mc->plan->options.pp != pp ||
        memcmp(mc->plan->stage_first_layer, plan->stage_first_layer, (size_t)(pp + 1) * sizeof(int32_t)) != 0) {
        if (!mesh_cache_fill(st, a, plan, mc)) return false;
    }
    int64_t *bytes = st->bytes, *act = st->act, budget = st->budget;
    mtk_memory_breakdown *moment = st->moment;
    shard_moment *fb = st->fb;
    /* a stage's activations depend on sp and recompute only */
    o->zero = 0;
    for (int32_t sp = 0; sp < nsp; sp++)
        for (int32_t rc = 0; rc < nrc; rc++) {
            o->sp = sp, o->recompute = (mtk_shard_recompute)rc;
            int64_t *at = act + (size_t)(sp * 3 + rc) * 2 * (size_t)pp;
            for (int32_t s = 0; s < pp; s++) shard_stage_activations(a, plan, s, &at[2 * s], &at[2 * s + 1]);
        }
    /* floors: each stage's largest parameters and optimizer states of a
       rank [z][stage], and the saved bytes its replay holds at least
       [sp][recompute][stage] */
    int64_t *states = st->floor, *held = st->floor + 5 * (size_t)pp;
    mtk_shard_rank rank;
    for (int32_t z = 0; z < nz; z++) {
        o->zero = z < 4 ? z : 0;
        o->fsdp = z == 4;
        for (int32_t s = 0; s < pp; s++) {
            int64_t most = 0;
            rank.stage = s;
            for (int32_t g = mc->start[s]; g < mc->start[s + 1]; g++) {
                shard_rank_memory(plan, &mc->sums[g], 0, 0, &rank);
                int64_t b = rank.memory.parameters + rank.memory.optimizer_states;
                if (b > most) most = b;
            }
            states[(size_t)z * (size_t)pp + (size_t)s] = most;
        }
    }
    o->zero = base.zero, o->fsdp = base.fsdp;
    bool replays[3] = { false, false, false }, need[3] = { false, false, false };
    bool alive[5][2][3];
    for (int32_t rc = 0; rc < nrc; rc++) {
        o->recompute = (mtk_shard_recompute)rc;
        if (!(replays[rc] = shard_replays(a, o))) continue;
        const int64_t *unit_max = unit_saved_max(st, k, a, rc);
        if (!unit_max) return false;
        shard_replay_before(a, plan, st->before);
        for (int32_t s = 0; s < pp; s++) {
            int64_t floor = shard_stage_saved_floor(a, plan, unit_max, st->before[s], s);
            int32_t in_flight = shard_stage_in_flight(plan, s);
            for (int32_t sp = 0; sp < nsp; sp++) {
                int64_t per_mb = act[(size_t)(sp * 3 + rc) * 2 * (size_t)pp + 2 * (size_t)s];
                held[((size_t)sp * 3 + (size_t)rc) * (size_t)pp + (size_t)s] =
                    floor < 0 ? 0 : floor + (in_flight > 1 ? (in_flight - 1) * per_mb : 0);
            }
        }
        for (int32_t z = 0; z < nz; z++)
            for (int32_t sp = 0; sp < nsp; sp++) {
                int64_t least = 0;
                for (int32_t s = 0; s < pp; s++) {
                    int64_t b = states[(size_t)z * (size_t)pp + (size_t)s] +
                                held[((size_t)sp * 3 + (size_t)rc) * (size_t)pp + (size_t)s];
                    if (b > least) least = b;
                }
                alive[z][sp][rc] = least <= budget;
                need[rc] |= alive[z][sp][rc];
            }
    }
    o->recompute = base.recompute;
    /* each stage's peak replayed (once a stage and variant, as
       mtk_shard_evaluate does) where some variant may fit, the moments
       here: training without, with selective and with full recompute
       (each its replay, kept per mesh), inference */
    const shard_replay_index *rxs[3] = { NULL, NULL, NULL };
    shard_replay_index rx_of[3];
    for (int32_t f = 0; f < nrc; f++) {
        if (!need[f]) continue;
        if (!mc->params) {
            mc->params = mtk_ctx_alloc(ctx, sizeof *mc->params);
            if (!mc->params || !shard_replay_index_params(ctx, a, plan, mc->params)) return false;
        }
        plan->options.recompute = (mtk_shard_recompute)f;
        const shard_replay_index *px = points_index(st, k, f, a, plan);
        plan->options.recompute = base.recompute;
        if (!px) return false;
        rx_of[f] = *px;
        rx_of[f].units = mc->params->units, rx_of[f].stage = mc->params->stage, rx_of[f].whole = mc->params->whole;
        rxs[f] = &rx_of[f];
    }
    /* fb [recompute][class][sp][stage]: ZeRO 0 and 1 share their forward
       and backward moments; ZeRO-2, ZeRO-3 and FSDP (its float32
       reduce-scatters under mixed precision) have their own; the
       optimizer's differ.  Each stage's moments: a pass over its points
       a recompute, for every class of ZeRO and FSDP searched and both sp */
    static const shard_moment_class classes[SHARD_MOMENT_CLASSES] = { { 0, false }, { 2, false }, { 3, false },
                                                                     { 0, true } };
    static const bool sps[2] = { false, true };
    int32_t ncls = o->dp > 1 ? SHARD_MOMENT_CLASSES : 1;
    for (int32_t rc = 0; rc < nrc; rc++)
        for (int32_t s = 0; rxs[rc] && s < pp; s++) {
            shard_moment mo[2 * SHARD_MOMENT_CLASSES];
            int64_t per_mb[2] = { act[(size_t)rc * 2 * (size_t)pp + 2 * (size_t)s], 0 };
            if (nsp == 2) per_mb[1] = act[(size_t)(3 + rc) * 2 * (size_t)pp + 2 * (size_t)s];
            shard_stage_moments(a, plan, rxs[rc], s, shard_stage_in_flight(plan, s), classes, ncls, sps, per_mb, nsp,
                                mo);
            for (int32_t c = 0; c < ncls; c++)
                for (int32_t v = 0; v < nsp; v++)
                    fb[((size_t)(rc * SHARD_MOMENT_CLASSES + c) * 2 + (size_t)v) * (size_t)pp + (size_t)s] =
                        mo[c * nsp + v];
        }
    bool have_comms = false;
    for (int32_t z = 0; z < nz; z++) {          /* ZeRO 0, 1, 2, 3, then FSDP */
        o->zero = z < 4 ? z : 0;
        o->fsdp = z == 4;
        for (int32_t sp = 0; sp < nsp; sp++) {
            o->sp = sp;
            bool have_bytes = false;
            for (int32_t rc = 0; rc < nrc; rc++) {
                o->recompute = (mtk_shard_recompute)rc;
                st->result->searched++;
                bool replay = replays[rc];
                if (replay && !alive[z][sp][rc]) continue; /* over memory already */
                const int64_t *at = act + (size_t)(sp * 3 + rc) * 2 * (size_t)pp;
                int64_t peak = 0;
                int32_t cls = z < 2 ? 0 : z - 1;
                for (int32_t s = 0; replay && s < pp; s++) {
                    /* the stage's first rank (tp 0, dp 0) leads its sums */
                    rank.stage = s;
                    shard_rank_memory(plan, &mc->sums[mc->start[s]], at[2 * s], at[2 * s + 1], &rank);
                    const shard_moment *mo =
                        &fb[((size_t)(rc * SHARD_MOMENT_CLASSES + cls) * 2 + (size_t)sp) * (size_t)pp + (size_t)s];
                    shard_stage_peak_of(plan, rxs[rc], s, mo, &rank.at_peak);
                    moment[s] = rank.at_peak;
                }
                for (int32_t s = 0; s < pp; s++) {
                    rank.stage = s;
                    for (int32_t g = mc->start[s]; g < mc->start[s + 1]; g++) {
                        shard_rank_memory(plan, &mc->sums[g], at[2 * s], at[2 * s + 1], &rank);
                        if (replay) shard_rank_take_moment(&rank, &moment[s]);
                        if (rank.peak_bytes > peak) peak = rank.peak_bytes;
                    }
                }
                if (peak > budget) continue;
                if (!have_comms) mesh_comms(st, a, plan, mc, &base), have_comms = true;
                if (!have_bytes) {
                    const int64_t *tpcs = st->tpc + (size_t)sp * cells;
                    const int64_t *dpc = st->tpc + (size_t)(z == 0 ? 2 : z < 3 ? 3 : 4) * cells;
                    for (size_t i = 0; i < cells; i++) bytes[i] = tpcs[i] + dpc[i];
                    have_bytes = true;
                }
                mtk_shard_estimate e;
                estimate(st->so, o, plan->micro_batches, plan->stage_flops, plan->stage_recompute_flops, bytes, peak,
                         &e);
                e.options.without_slices = false;
                st->result->feasible++;
                keep(st, &e);
            }
        }
    }
    *o = base;
    return true;
}

/* The stages of pp at micro-batch k from those of micro-batch k - 1 (half
 * of it) when every unit's FLOPs at k are exactly twice those at k - 1:
 * the partition's sums and comparisons are then all exactly twice its
 * (a product by two is exact), so its cuts are the same and its stage
 * FLOPs twice.  NULL when not (or out of memory: the context says). */
static const mtk_shard_plan *stages_of_half(search_state *st, int32_t k, int32_t pp)
{
    if (k == 0 || !st->doubled[k]) return NULL;
    const mtk_shard_plan *half = NULL;
    for (int32_t i = 0; i < st->nby_pp[k - 1]; i++)
        if (st->by_pp[k - 1][i]->options.pp == pp) half = st->by_pp[k - 1][i];
    if (!half) return NULL;
    mtk_shard_plan *p = mtk_ctx_alloc(st->ctx, sizeof *p);
    double *flops = mtk_ctx_alloc_uninit(st->ctx, (size_t)pp * sizeof *flops);
    double *recompute = mtk_ctx_alloc_uninit(st->ctx, 3 * (size_t)pp * sizeof *recompute);
    if (!p || !flops || !recompute) return NULL;
    for (int32_t s = 0; s < pp; s++) flops[s] = 2.0 * half->stage_flops[s];
    for (int32_t i = 0; i < 3 * pp; i++) recompute[i] = 2.0 * half->stage_recompute_flops[i];
    p->options.pp = pp;
    p->stage_first_layer = half->stage_first_layer;
    p->stage_flops = flops;
    p->stage_recompute_flops = recompute;
    return p;
}

/* Whether every unit's FLOPs in b, and those each recompute mode
 * reruns, are exactly twice a's. */
static bool flops_doubled(const mtk_shard_analysis *a, const mtk_shard_analysis *b)
{
    if (a->nlayers != b->nlayers) return false;
    for (int32_t u = 0; u < a->nlayers + 2; u++) {
        if (b->units[u].flops != 2.0 * a->units[u].flops) return false;
        for (int32_t r = MTK_RECOMPUTE_SELECTIVE; r <= MTK_RECOMPUTE_FULL; r++)
            if (b->units[u].recompute_flops[r] != 2.0 * a->units[u].recompute_flops[r]) return false;
    }
    return true;
}

/* One mesh at every micro-batch: laid out once a micro-batch, its
 * placements and (while its stages stay) its sums shared. */
static bool search_mesh_micros(search_state *st, int32_t tp, int32_t pp, int32_t dp, int32_t ep)
{
    const mtk_shard_search_options *so = st->so;
    mesh_cache mc = { 0 };
    for (int32_t k = 0; k < st->nmicro; k++) {
        const mtk_shard_analysis *a = st->analyses[k];
        int64_t micro = st->micros[k];
        bool first_pass = k == 0;
        if (so->global_batch % (micro * dp)) {
            if (first_pass && ep == 1) {
                char why[96];
                snprintf(why, sizeof why, "--global-batch %lld is not a multiple of dp %d",
                         (long long)so->global_batch, dp);
                note_why(st, "tp %d pp %d dp %d: %s; ", tp, pp, dp, why);
            }
            continue;
        }
        if (ep > 1 && (!a->plan || !a->plan->ep || a->experts < 1 || a->experts % ep)) return true;
        mtk_shard_options o;
        mtk_shard_options_init(&o);
        o.tp = tp, o.pp = pp, o.dp = dp, o.ep = ep;
        o.micro_batch = micro, o.seq = so->seq, o.global_batch = so->global_batch;
        o.training = so->training, o.dtype = so->dtype, o.without_slices = true;
        const mtk_shard_plan *same_pp = NULL;
        int32_t same_tp = -1;
        for (int32_t i = 0; i < st->nby_pp[k]; i++)
            if (st->by_pp[k][i]->options.pp == pp) same_pp = st->by_pp[k][i];
        bool listed = same_pp != NULL;
        if (!same_pp && !(same_pp = stages_of_half(st, k, pp)) && mtk_ctx_status(st->ctx) != MTK_OK) return false;
        for (int32_t i = 0; i < st->nby_tp; i++)
            if (st->by_tp[i]->options.tp == tp && st->by_tp[i]->options.ep == ep) same_tp = i;
        const mtk_shard_plan *prev = same_tp >= 0 ? st->by_tp[same_tp] : NULL;
        mtk_shard_plan *plan = shard_layout(st->ctx, a, &o, same_pp, prev, prev ? (mtk_shard_param *)prev->params : NULL);
        if (!plan) {
            if (mtk_ctx_status(st->ctx) != MTK_ERR_INVALID_ARGUMENT) return false;
            if (first_pass && ep == 1) {
                const char *why = mtk_ctx_message(st->ctx);
                if (strncmp(why, "shard: ", 7) == 0) why += 7;
                note_why(st, "tp %d pp %d dp %d: %s; ", tp, pp, dp, why);
            }
            mtk_ctx_clear_error(st->ctx);
            continue;
        }
        if (!listed && st->nby_pp[k] < 64) st->by_pp[k][st->nby_pp[k]++] = plan;
        if (same_tp >= 0) st->by_tp[same_tp] = plan;
        else if (st->nby_tp < 64) st->by_tp[st->nby_tp++] = plan;
        st->meshes++;
        if (!search_mesh(st, k, a, plan, &mc)) return false;
    }
    return true;
}

/* Every mesh of the world, each at every micro-batch. */
static bool search_meshes(search_state *st)
{
    int32_t n = st->so->gpus;
    for (int32_t tp = 1; tp <= n; tp++) {
        if (n % tp) continue;
        for (int32_t pp = 1; pp <= n / tp; pp++) {
            if ((n / tp) % pp) continue;
            int32_t dp = n / tp / pp;
            for (int32_t ep = 1; ep <= tp * dp; ep++) {
                /* transformers' expert mesh: a multiple of tp dividing tp x dp */
                if (ep > 1 && (ep % tp || (tp * dp) % ep)) continue;
                if (!search_mesh_micros(st, tp, pp, dp, ep)) return false;
            }
        }
    }
    return true;
}

/* The scratch of search_mesh for stages up to max_pp. */
static bool alloc_scratch(search_state *st, int32_t max_pp)
{
    size_t pp = (size_t)(max_pp > 0 ? max_pp : 1), cells = pp * CELLS;
    st->max_pp = max_pp;
    st->tpc = mtk_ctx_alloc_uninit(st->ctx, 5 * cells * sizeof *st->tpc);
    st->bytes = mtk_ctx_alloc_uninit(st->ctx, cells * sizeof *st->bytes);
    st->act = mtk_ctx_alloc_uninit(st->ctx, 6 * 2 * pp * sizeof *st->act);
    st->moment = mtk_ctx_alloc_uninit(st->ctx, pp * sizeof *st->moment);
    st->fb = mtk_ctx_alloc_uninit(st->ctx, 3 * 8 * pp * sizeof *st->fb);
    st->floor = mtk_ctx_alloc_uninit(st->ctx, (5 + 6) * pp * sizeof *st->floor);
    st->before = mtk_ctx_alloc_uninit(st->ctx, pp * sizeof *st->before);
    return st->tpc && st->bytes && st->act && st->moment && st->fb && st->floor && st->before;
}

mtk_shard_search_result *mtk_shard_search(mtk_ctx *ctx, const char *model, const mtk_shard_search_options *so)
{
    if (!ctx) return NULL;
    if (!model || !so) {
        mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "shard --search: NULL model or options");
        return NULL;
    }
    if (!check_search_options(ctx, so)) return NULL;
    search_state *st = mtk_ctx_alloc(ctx, sizeof *st);
    mtk_shard_search_result *r = mtk_ctx_alloc(ctx, sizeof *r);
    mtk_shard_estimate *top = mtk_ctx_alloc(ctx, (size_t)so->top * sizeof *top);
    if (!st || !r || !top) return NULL;
    memset(st, 0, sizeof *st);
    memset(r, 0, sizeof *r);
    st->ctx = ctx, st->so = so, st->result = r, st->top = top;
    st->budget = budget_of(so);
    /* the model traced at micro-batches 1, 2 and 4; each larger one
       scaled from the two before it (checked against the last two traced
       in a row) where that is exact, else traced too */
    double t0 = now_seconds();
    const mtk_shard_analysis *traced[2] = { NULL, NULL };
    bool traced_half = false; /* the previous micro-batch was traced */
    for (int64_t micro = 1; micro <= so->max_micro_batch && micro <= so->global_batch && st->nmicro < MAX_MICRO;
         micro *= 2) {
        if (so->global_batch % micro) break;
        mtk_shard_options o;
        mtk_shard_options_init(&o);
        o.micro_batch = micro, o.seq = so->seq, o.training = so->training, o.dtype = so->dtype;
        const mtk_shard_analysis *b1 = st->nmicro >= 2 ? st->analyses[st->nmicro - 2] : NULL;
        const mtk_shard_analysis *b2 = st->nmicro >= 2 ? st->analyses[st->nmicro - 1] : NULL;
        bool scale = micro >= 8 && traced[0] && shard_analyses_scale(traced[0], traced[1], b1, b2, micro);
        mtk_shard_analysis *a = scale ? shard_analysis_at(ctx, b1, b2, micro) : mtk_shard_analyze(ctx, model, &o);
        if (!a) return NULL;
        if (!scale && traced_half && micro >= 4) traced[0] = st->analyses[st->nmicro - 1], traced[1] = a;
        traced_half = !scale;
        r->scaled += scale;
        st->micros[st->nmicro] = micro;
        st->doubled[st->nmicro] = st->nmicro > 0 && flops_doubled(st->analyses[st->nmicro - 1], a);
        st->analyses[st->nmicro++] = a;
    }
    double t1 = now_seconds();
    r->analysis_seconds = t1 - t0;
    clock_t c0 = clock();
    bool ok = alloc_scratch(st, st->analyses[0]->nlayers) && search_meshes(st);
    r->cpu_seconds = (double)(clock() - c0) / CLOCKS_PER_SEC;
    r->seconds = now_seconds() - t1;
    if (!ok) return NULL;
    if (st->meshes == 0) {
        if (st->why_len >= 2) st->why[st->why_len - 2] = '\0';
        mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "shard --search: no tp x pp x dp of --gpus %d works for %s (%s)",
                  so->gpus, model, st->why);
        return NULL;
    }
    r->plans = top;
    return r;
}
