/* One parallel configuration from an analysis (shard.c): the checks that
 * say why a plan cannot work, the pipeline stages, every parameter's
 * placement, local shapes and per-rank slices.  Memory and
 * communication are shard_cost.c's. */
#include "plan/shard_internal.h"

#include <assert.h>
#include <stdio.h>
#include <string.h>

/* Slices a plan lists at most (about 200 bytes each). */
#define SHARD_MAX_SLICES (1LL << 20)

static bool fail(mtk_ctx *ctx, const char *fmt, long long a, long long b, const char *what)
{
    char msg[256];
    snprintf(msg, sizeof msg, fmt, what, a, b);
    mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "shard: %s", msg);
    return false;
}

/* The checks that name why a configuration cannot work. */
static bool check(mtk_ctx *ctx, const mtk_shard_analysis *a, const mtk_shard_options *o)
{
    const mtk_shard_options *ao = &a->options;
    if (o->tp < 1 || o->pp < 1 || o->dp < 1 || o->ep < 1) {
        mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "shard: --tp, --pp, --dp and --ep must be >= 1 (got %d, %d, %d, %d)",
                  o->tp, o->pp, o->dp, o->ep);
        return false;
    }
    if ((int64_t)o->tp * o->pp * o->dp > (1 << 20)) {
        mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "shard: a world of %lld ranks is more than mtk plans (2^20)",
                  (long long)o->tp * o->pp * o->dp);
        return false;
    }
    if (o->zero < 0 || o->zero > 3) {
        mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "shard: --zero %d is not a ZeRO stage (0, 1, 2 or 3)", o->zero);
        return false;
    }
    if (o->fsdp && o->zero) {
        mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "shard: --fsdp and --zero %d both shard over dp: pick one", o->zero);
        return false;
    }
    if (o->micro_batch != ao->micro_batch || o->seq != ao->seq || o->training != ao->training) {
        mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "shard: the analysis was made at another micro-batch, length or mode");
        return false;
    }
    if (o->tp > 1 && !a->plan) {
        mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT,
                  "shard: %s models have no tensor-parallel plan in transformers (base_model_tp_plan): use --tp 1",
                  a->family);
        return false;
    }
    if (o->tp > 1 && a->heads > 0 && a->heads % o->tp)
        return fail(ctx, "%s=%lld is not divisible by --tp %lld", a->heads, o->tp, "num_attention_heads");
    if (o->tp > 1 && a->kv_heads > 0 && a->kv_heads % o->tp)
        return fail(ctx, "%s=%lld is not divisible by --tp %lld", a->kv_heads, o->tp, "num_key_value_heads");
    if (o->tp > 1 && a->vocab > 0 && a->vocab % o->tp)
        return fail(ctx, "%s=%lld is not divisible by --tp %lld (pad the vocabulary)", a->vocab, o->tp, "vocab_size");
    if (a->nlayers < o->pp) return fail(ctx, "%s: %lld layers cannot fill --pp %lld stages", a->nlayers, o->pp, "model");
    if (o->ep > 1) {
        if (!a->plan || !a->plan->ep || a->experts < 1) {
            mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "shard: --ep %d needs a mixture-of-experts model; %s has no experts",
                      o->ep, a->family);
            return false;
        }
        /* transformers' DistributedConfig: the expert group spans the
           tensor-parallel ranks and divides the tp x dp world */
        if (o->ep % o->tp)
            return fail(ctx, "%s %lld is not a multiple of --tp %lld (the expert group spans the tensor-parallel ranks)",
                        o->ep, o->tp, "--ep");
        if ((int64_t)o->tp * o->dp % o->ep)
            return fail(ctx, "%s %lld does not divide --tp x --dp = %lld", o->ep, (long long)o->tp * o->dp, "--ep");
        if (a->experts % o->ep) return fail(ctx, "%s: %lld experts are not divisible by --ep %lld", a->experts, o->ep, "model");
    }
    int64_t slices = (int64_t)o->tp * o->dp * (a->nparams + 1);
    if (!o->without_slices && slices > SHARD_MAX_SLICES) {
        mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT,
                  "shard: %d parameters on %d ranks a stage make %lld slices, more than mtk lists (%lld)",
                  (int)a->nparams, o->tp * o->dp, (long long)slices, (long long)SHARD_MAX_SLICES);
        return false;
    }
    int64_t per_step = o->micro_batch * o->dp;
    if (o->global_batch && o->global_batch % per_step) {
        mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT,
                  "shard: --global-batch %lld is not a multiple of --micro-batch %lld x --dp %d = %lld",
                  (long long)o->global_batch, (long long)o->micro_batch, o->dp, (long long)per_step);
        return false;
    }
    return true;
}

/* Per recompute mode and stage, the forward FLOPs one micro-batch of
 * the stage's units recomputes (recompute[mode * P + s]; none's 0). */
static double *stage_recompute(mtk_ctx *ctx, const mtk_shard_analysis *a, int32_t P, const int32_t *first)
{
    double *out = mtk_ctx_alloc(ctx, 3 * (size_t)P * sizeof *out);
    if (!out) return NULL;
    for (int32_t r = MTK_RECOMPUTE_SELECTIVE; r <= MTK_RECOMPUTE_FULL; r++) {
        for (int32_t s = 0; s < P; s++) {
            double sum = s == 0 ? a->units[SHARD_UNIT_PRE(a)].recompute_flops[r] : 0.0;
            if (s == P - 1) sum += a->units[SHARD_UNIT_POST(a)].recompute_flops[r];
            for (int32_t l = first[s]; l < first[s + 1]; l++) sum += a->units[l].recompute_flops[r];
            out[(size_t)r * (size_t)P + (size_t)s] = sum;
        }
    }
    return out;
}

/* Contiguous stages minimizing the most expensive one (FLOPs; the
 * embedding with layer 0, the head and loss with the last layer). */
static int32_t *partition(mtk_ctx *ctx, const mtk_shard_analysis *a, int32_t P, double **stage_flops)
{
    int32_t L = a->nlayers;
    double *cost = mtk_ctx_alloc(ctx, (size_t)(L + 1) * sizeof *cost); /* prefix sums */
    double *best = mtk_ctx_alloc(ctx, (size_t)(P + 1) * (size_t)(L + 1) * sizeof *best);
    int32_t *cut = mtk_ctx_alloc(ctx, (size_t)(P + 1) * (size_t)(L + 1) * sizeof *cut);
    int32_t *first = mtk_ctx_alloc(ctx, (size_t)(P + 1) * sizeof *first);
    *stage_flops = mtk_ctx_alloc(ctx, (size_t)P * sizeof **stage_flops);
    if (!cost || !best || !cut || !first || !*stage_flops) return NULL;
    for (int32_t l = 0; l < L; l++) {
        double c = a->units[l].flops;
        if (l == 0) c += a->units[SHARD_UNIT_PRE(a)].flops;
        if (l == L - 1) c += a->units[SHARD_UNIT_POST(a)].flops;
        cost[l + 1] = cost[l] + c;
    }
#define AT(p, l) ((size_t)(p) * (size_t)(L + 1) + (size_t)(l))
    for (int32_t l = 0; l <= L; l++) best[AT(1, l)] = l ? cost[l] : 1e300;
    for (int32_t p = 2; p <= P; p++) {
        for (int32_t l = 0; l <= L; l++) {
            best[AT(p, l)] = 1e300;
            for (int32_t k = p - 1; k < l; k++) { /* stages 1..p-1 take [0, k) */
                double here = cost[l] - cost[k], prev = best[AT(p - 1, k)];
                double m = here > prev ? here : prev;
                if (m < best[AT(p, l)]) best[AT(p, l)] = m, cut[AT(p, l)] = k;
            }
        }
    }
    first[P] = L;
    for (int32_t p = P, l = L; p >= 1; p--) {
        first[p - 1] = p == 1 ? 0 : cut[AT(p, l)];
        l = first[p - 1];
    }
#undef AT
    for (int32_t s = 0; s < P; s++) (*stage_flops)[s] = cost[first[s + 1]] - cost[first[s]];
    return first;
}

/* torch.chunk's piece `index` of `n` in `parts`: DTensor's uneven Shard. */
void shard_chunk(int64_t n, int64_t parts, int64_t index, int64_t *offset, int64_t *length)
{
    int64_t c = (n + parts - 1) / parts;
    int64_t lo = index * c < n ? index * c : n, hi = (index + 1) * c < n ? (index + 1) * c : n;
    *offset = lo;
    *length = hi - lo;
}

/* The boxes one mesh index holds under placement pl (over `parts`). */
static int32_t place_boxes(const mtk_shard_param *p, mtk_placement pl, int64_t parts, int64_t index,
                           mtk_shard_box *boxes)
{
    mtk_shard_box whole = { { 0 }, { 0 } };
    for (int32_t d = 0; d < p->ndim; d++) whole.shape[d] = p->shape[d];
    if (pl.kind == MTK_PLACEMENT_REPLICATE || parts == 1) {
        boxes[0] = whole;
        return 1;
    }
    int32_t d = pl.dim;
    if (pl.kind == MTK_PLACEMENT_SHARD) {
        boxes[0] = whole;
        shard_chunk(p->shape[d], parts, index, &boxes[0].offset[d], &boxes[0].shape[d]);
        return 1;
    }
    /* _StridedShard(d, sf): each of the sf blocks of dim d chunked */
    int64_t block = p->shape[d] / pl.split_factor;
    for (int32_t k = 0; k < pl.split_factor; k++) {
        boxes[k] = whole;
        int64_t off, len;
        shard_chunk(block, parts, index, &off, &len);
        boxes[k].offset[d] = k * block + off;
        boxes[k].shape[d] = len;
    }
    return pl.split_factor;
}

/* Whether place_boxes gives every index of `parts` the same shape:
 * torch.chunk's pieces are all alike when the length chunked divides
 * (the whole dim, or each of _StridedShard's blocks). */
static bool pieces_alike(const mtk_shard_param *p, mtk_placement pl, int64_t parts)
{
    if (parts <= 1 || pl.kind == MTK_PLACEMENT_REPLICATE) return true;
    int64_t n = p->shape[pl.dim];
    if (pl.kind == MTK_PLACEMENT_STRIDED) n /= pl.split_factor;
    return n % parts == 0;
}

bool shard_param_uniform(const mtk_shard_param *p)
{
    bool alike = pieces_alike(p, p->placement, p->nlocal);
#ifndef NDEBUG
    for (int32_t k = 1; alike && k < p->nlocal; k++)
        assert(memcmp(p->local_shapes + (size_t)k * (size_t)p->ndim, p->local_shapes,
                      (size_t)p->ndim * sizeof *p->local_shapes) == 0);
#endif
    return alike;
}

static mtk_placement placement_of(mtk_tp_style style, const char *name, int32_t ndim)
{
    mtk_placement pl = { MTK_PLACEMENT_REPLICATE, 0, 0 };
    const char *leaf = strrchr(name, '.');
    bool bias = strcmp(leaf ? leaf + 1 : name, "bias") == 0;
    switch (style) {
    case MTK_TP_COLWISE:
    case MTK_TP_COLWISE_GATHER_OUTPUT: pl = (mtk_placement){ MTK_PLACEMENT_SHARD, ndim >= 2 ? ndim - 2 : 0, 0 }; break;
    case MTK_TP_ROWWISE:
    case MTK_TP_ROWWISE_SPLIT_INPUT:
        if (!bias) pl = (mtk_placement){ MTK_PLACEMENT_SHARD, ndim - 1, 0 };
        break;
    case MTK_TP_EMBEDDING_ROWWISE:
    case MTK_TP_GROUPED_GEMM: pl = (mtk_placement){ MTK_PLACEMENT_SHARD, 0, 0 }; break;
    case MTK_TP_PACKED_COLWISE:
        pl = ndim == 1 ? (mtk_placement){ MTK_PLACEMENT_SHARD, 0, 0 }
                       : (mtk_placement){ MTK_PLACEMENT_STRIDED, ndim - 2, 2 };
        break;
    case MTK_TP_PACKED_ROWWISE:
        if (ndim > 1) pl = (mtk_placement){ MTK_PLACEMENT_STRIDED, ndim - 1, 2 };
        break;
    default: break;
    }
    return pl;
}

/* The pipeline stage holding `unit`. */
static int32_t stage_of(const mtk_shard_analysis *a, const mtk_shard_plan *plan, int32_t unit)
{
    int32_t pp = plan->options.pp;
    if (unit == SHARD_UNIT_PRE(a)) return 0;
    if (unit == SHARD_UNIT_POST(a)) return pp - 1;
    for (int32_t s = 0; s < pp; s++)
        if (unit >= plan->stage_first_layer[s] && unit < plan->stage_first_layer[s + 1]) return s;
    return 0;
}

/* Local shapes made for a shape, placement and mesh dim size: a pure
 * function of those, so parameters alike in them (a model's experts and
 * layers) share one read-only array. */
typedef struct local_memo {
    int32_t ndim, parts;
    mtk_placement placement;
    int64_t shape[MTK_MAX_DIMS];
    const int64_t *local;
} local_memo;
#define LOCAL_MEMOS 8

/* p's local shapes on each of its p->nlocal indices (NULL on out of
 * memory), from memo when made before for its shape and placement. */
static const int64_t *local_shapes_of(mtk_ctx *ctx, const mtk_shard_param *p, local_memo *memo)
{
    const mtk_placement *pl = &p->placement;
    int32_t parts = p->nlocal;
    for (int32_t m = 0; m < LOCAL_MEMOS; m++) {
        const local_memo *e = &memo[m];
        if (e->local && e->ndim == p->ndim && e->parts == parts && e->placement.kind == pl->kind &&
            e->placement.dim == pl->dim && e->placement.split_factor == pl->split_factor &&
            memcmp(e->shape, p->shape, (size_t)p->ndim * sizeof *p->shape) == 0)
            return e->local;
    }
    int64_t *local = mtk_ctx_alloc(ctx, (size_t)parts * (size_t)(p->ndim ? p->ndim : 1) * sizeof *local);
    if (!local) return NULL;
    mtk_shard_box boxes[8];
    bool alike = pieces_alike(p, *pl, parts); /* index 0's shape for all */
    for (int32_t k = 0; k < parts; k++) {
        if (k > 0 && alike) {
            memcpy(local + (size_t)k * (size_t)p->ndim, local, (size_t)p->ndim * sizeof *local);
            continue;
        }
        int32_t nb = place_boxes(p, *pl, parts, k, boxes);
        for (int32_t d = 0; d < p->ndim; d++) {
            int64_t len = 0;
            for (int32_t b = 0; b < nb; b++)
                len = (pl->kind == MTK_PLACEMENT_STRIDED && d == pl->dim) ? len + boxes[b].shape[d] : boxes[b].shape[d];
            local[(size_t)k * (size_t)p->ndim + (size_t)d] = len;
        }
    }
    /* the oldest entry makes room (memo[0] the newest) */
    memmove(&memo[1], &memo[0], (LOCAL_MEMOS - 1) * sizeof *memo);
    memo[0] = (local_memo){ .ndim = p->ndim, .parts = parts, .placement = *pl, .local = local };
    memcpy(memo[0].shape, p->shape, (size_t)p->ndim * sizeof *p->shape);
    return local;
}

/* Placement, local shapes and slices of every parameter. */
static bool place_params(mtk_ctx *ctx, const mtk_shard_analysis *a, const mtk_shard_options *o, mtk_shard_plan *plan)
{
    mtk_shard_param *params = mtk_ctx_alloc(ctx, (size_t)(a->nparams ? a->nparams : 1) * sizeof *params);
    if (!params) return false;
    bool dp_shard = o->fsdp || o->zero == 3;
    local_memo memo[LOCAL_MEMOS];
    memset(memo, 0, sizeof memo);
    for (int32_t i = 0; i < a->nparams; i++) {
        const shard_param_info *info = &a->params[i];
        mtk_shard_param *p = &params[i];
        p->name = info->name;
        p->dtype = info->tensor->dtype;
        p->ndim = info->tensor->ndim;
        memcpy(p->shape, info->tensor->shape, (size_t)p->ndim * sizeof p->shape[0]);
        p->layer = info->unit < a->nlayers ? info->unit : -1;
        p->stage = stage_of(a, plan, info->unit);
        int32_t parts = 1;
        if (o->ep > 1 && info->ep_rule >= 0) {
            p->expert = true;
            p->style = mtk_tp_style_name(a->plan->ep[info->ep_rule].style);
            p->placement = placement_of(a->plan->ep[info->ep_rule].style, p->name, p->ndim);
            parts = o->ep;
        } else if (o->tp > 1 && info->tp_rule >= 0) {
            p->style = mtk_tp_style_name(a->plan->tp[info->tp_rule].style);
            p->placement = placement_of(a->plan->tp[info->tp_rule].style, p->name, p->ndim);
            parts = o->tp;
        }
        p->dp_sharded = dp_shard && o->dp > 1 && p->ndim > 0;
        p->nlocal = parts;
        p->local_shapes = local_shapes_of(ctx, p, memo);
        if (!p->local_shapes) return false;
        mtk_shard_box boxes[8];
        /* every rank of the stage, ascending: t fastest, then d; a tied
           embedding also on the last stage's ranks */
        int32_t copies = i == a->tied_param && o->pp > 1 ? 2 : 1;
        int32_t n = o->without_slices ? 0 : o->tp * o->dp * copies;
        mtk_shard_slice *slices = mtk_ctx_alloc(ctx, (size_t)(n ? n : 1) * sizeof *slices);
        if (!slices) return false;
        int32_t dp_groups = p->expert ? shard_expert_replicas(o) : o->dp;
        for (int32_t c = 0; n > 0 && c < copies; c++)
        for (int32_t d = 0; d < o->dp; d++) {
            for (int32_t t = 0; t < o->tp; t++) {
                mtk_shard_slice *sl = &slices[c * o->tp * o->dp + d * o->tp + t];
                sl->rank = t + o->tp * (d + o->dp * (c ? o->pp - 1 : p->stage));
                int32_t index = p->expert ? shard_expert_index(o, t, d) : parts > 1 ? t : 0;
                int32_t nb = place_boxes(p, p->placement, parts, index, boxes);
                if (p->dp_sharded) {
                    /* FSDP2's Shard(0) over dp of the local tensor */
                    int32_t di = p->expert ? shard_expert_replica(o, t, d) : d;
                    for (int32_t b = 0; b < nb; b++) {
                        int64_t off, len;
                        shard_chunk(boxes[b].shape[0], dp_groups, di, &off, &len);
                        boxes[b].offset[0] += off;
                        boxes[b].shape[0] = len;
                    }
                }
                mtk_shard_box *parts_out = mtk_ctx_alloc(ctx, (size_t)nb * sizeof *parts_out);
                if (!parts_out) return false;
                memcpy(parts_out, boxes, (size_t)nb * sizeof *boxes);
                sl->parts = parts_out;
                sl->nparts = nb;
                for (int32_t dd = 0; dd < p->ndim; dd++) {
                    int64_t len = 0;
                    for (int32_t b = 0; b < nb; b++)
                        len = (nb > 1 && dd == p->placement.dim) ? len + boxes[b].shape[dd] : boxes[b].shape[dd];
                    sl->local[dd] = len;
                }
            }
        }
        p->slices = slices;
        p->nslices = n;
    }
    plan->params = params;
    plan->nparams = a->nparams;
    return true;
}

void shard_note(mtk_shard_plan *plan, const char *note)
{
    if (plan->nnotes < (int32_t)(sizeof plan->notes / sizeof plan->notes[0])) plan->notes[plan->nnotes++] = note;
}

mtk_shard_plan *shard_layout(mtk_ctx *ctx, const mtk_shard_analysis *a, const mtk_shard_options *o,
                             const mtk_shard_plan *same_pp, const mtk_shard_plan *same_tp, mtk_shard_param *into)
{
    if (!ctx) return NULL;
    if (!a || !o) {
        mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "shard: NULL analysis or options");
        return NULL;
    }
    if (!check(ctx, a, o)) return NULL;
    mtk_shard_plan *plan = mtk_ctx_alloc(ctx, sizeof *plan);
    if (!plan) return NULL;
    plan->options = *o;
    plan->options.dtype = a->dtype;
    plan->model = a->model;
    plan->family = a->family;
    plan->world_size = o->tp * o->pp * o->dp;
    int64_t global = o->global_batch ? o->global_batch : o->micro_batch * o->dp;
    plan->options.global_batch = global;
    plan->micro_batches = global / (o->micro_batch * o->dp);
    plan->bubble = o->pp > 1 ? (double)(o->pp - 1) / (double)(plan->micro_batches + o->pp - 1) : 0.0;
    plan->nlayers = a->nlayers;
    if (same_pp && same_pp->options.pp == o->pp) {
        plan->stage_first_layer = same_pp->stage_first_layer;
        plan->stage_flops = same_pp->stage_flops;
        plan->stage_recompute_flops = same_pp->stage_recompute_flops;
    } else {
        double *flops;
        plan->stage_first_layer = partition(ctx, a, o->pp, &flops);
        if (!plan->stage_first_layer) return NULL;
        plan->stage_flops = flops;
        plan->stage_recompute_flops = stage_recompute(ctx, a, o->pp, plan->stage_first_layer);
        if (!plan->stage_recompute_flops) return NULL;
    }
    bool sharded = o->fsdp || o->zero == 3;
    const mtk_shard_options *lo = same_tp ? &same_tp->options : NULL;
    if (lo && o->without_slices && lo->without_slices && lo->tp == o->tp && lo->ep == o->ep && !sharded &&
        !(lo->fsdp || lo->zero == 3)) {
        /* the same placements and local shapes: only the stages differ */
        mtk_shard_param *params =
            into ? into : mtk_ctx_alloc_uninit(ctx, (size_t)(a->nparams ? a->nparams : 1) * sizeof *params);
        if (!params) return NULL;
        bool restage = true;
        if (params != same_tp->params) memcpy(params, same_tp->params, (size_t)a->nparams * sizeof *params);
        else if (same_tp->options.pp == o->pp)
            restage = memcmp(same_tp->stage_first_layer, plan->stage_first_layer,
                             (size_t)(o->pp + 1) * sizeof *plan->stage_first_layer) != 0;
        for (int32_t i = 0; restage && i < a->nparams; i++) params[i].stage = stage_of(a, plan, a->params[i].unit);
        plan->params = params;
        plan->nparams = a->nparams;
        return plan;
    }
    if (!place_params(ctx, a, o, plan)) return NULL;
    return plan;
}

mtk_shard_plan *mtk_shard_evaluate(mtk_ctx *ctx, const mtk_shard_analysis *a, const mtk_shard_options *o)
{
    mtk_shard_plan *plan = shard_layout(ctx, a, o, NULL, NULL, NULL);
    if (!plan || !shard_cost(ctx, a, plan)) return NULL;
    return plan;
}
