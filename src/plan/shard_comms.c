/* The collectives of one step of a placed plan, per stage: tensor
 * parallelism's all-reduces and gathers (and sequence parallelism's
 * reduce-scatters), expert parallelism's all-to-alls, data parallelism's
 * gradient all-reduce (DDP's buckets), ZeRO's and FSDP's gathers and
 * reduce-scatters, the pipeline's sends and receives. */
#include "plan/shard_internal.h"

#include <string.h>

#define DDP_BUCKET_BYTES (25LL << 20) /* DistributedDataParallel's bucket_cap_mb=25 */

typedef struct comm_list {
    mtk_shard_comm *items;
    int32_t n, cap;
    mtk_ctx *ctx;
    int64_t *sums;              /* not NULL: only add bytes up, per op and group */
    const shard_stage_index *ix;/* not NULL: each stage's sites and parameters */
    const int64_t *dp_walk;     /* not NULL: the stage's shard_stage_dp_walk */
} comm_list;

int32_t shard_group_index(const char *group)
{
    return group[0] == 't' ? 0 : group[0] == 'd' ? 1 : group[0] == 'p' ? 2 : 3;
}

static void add(comm_list *l, mtk_collective op, const char *group, int32_t stage, const char *what, int64_t count,
                int64_t bytes)
{
    if (count <= 0) return;
    if (l->sums) {
        l->sums[(int32_t)op * SHARD_NGROUPS + shard_group_index(group)] += bytes;
        return;
    }
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

/* transformers' expert dispatch (its ep_dispatch_experts rule) of one
 * MoE layer, per micro-batch.  The tp ranks share their batch.  At
 * inference with ep == tp (the expert group is the tp group) AutoEP
 * takes AllReduceEP: each rank runs its own experts on the whole batch
 * and the outputs are all-reduced.  Otherwise AllToAllEP: each rank
 * keeps its torch.chunk of the rows over tp (the first, ceil(rows / tp),
 * on the rank counted), all-to-alls the per-expert token counts (int64,
 * one per global expert; no backward), then its (row, expert) pairs out
 * and their results back, and the tp ranks all-gather the combined rows;
 * the backward all-to-alls those two again and all-gathers the slices'
 * gradients (the rows and their routing weights). */
static void ep_comms(const mtk_shard_analysis *a, const mtk_shard_options *o, const shard_site *site, int32_t s,
                     int64_t m, comm_list *l)
{
    int64_t in = site->in_bytes, out = site->out_bytes, k = a->top_k > 0 ? a->top_k : 1;
    if (!o->training && o->ep == o->tp) {
        add(l, MTK_COLL_ALL_REDUCE, "ep", s, "experts' partial outputs", m, m * out);
        return;
    }
    int64_t item = (int64_t)mtk_dtype_size(a->dtype), row = a->hidden * item;
    int64_t rows = row > 0 && in % row == 0 ? in / row : 0; /* (rows, hidden) */
    int64_t slice = rows > 0 ? shard_ceil_div(rows, o->tp) : 0; /* rows a rank keeps */
    int64_t sent = rows > 0 ? slice * row * k : shard_ceil_div(in, o->tp) * k;
    /* DTensor gathers the uneven Shard(0) slices padded to tp x slice rows */
    int64_t gathered = rows > 0 ? slice * o->tp : 0;
    add(l, MTK_COLL_ALL_TO_ALL, "ep", s, "tokens per expert", m, m * a->experts * 8);
    add(l, MTK_COLL_ALL_TO_ALL, "ep", s, "token dispatch and combine", 2 * m, 2 * m * sent);
    if (o->tp > 1) add(l, MTK_COLL_ALL_GATHER, "tp", s, "combined expert rows", m, m * (rows > 0 ? gathered * row : out));
    if (!o->training) return;
    add(l, MTK_COLL_ALL_TO_ALL, "ep", s, "their gradients", 2 * m, 2 * m * sent);
    if (o->tp > 1)
        add(l, MTK_COLL_ALL_GATHER, "tp", s, "row slices' and routing weights' gradients", 2 * m,
            m * (rows > 0 ? gathered * (row + k * item) : in));
}

/* Tensor and expert parallelism: per site, per micro-batch. */
static void tp_comms(const mtk_shard_analysis *a, const mtk_shard_plan *plan, int32_t s, comm_list *l)
{
    const mtk_shard_options *o = &plan->options;
    int64_t m = plan->micro_batches;
    bool train = o->training;
    const shard_stage_index *ix = l->ix;
    int32_t lo = ix ? ix->site_start[s] : 0, hi = ix ? ix->site_start[s + 1] : a->nsites;
    for (int32_t k = lo; k < hi; k++) {
        const shard_site *site = &a->sites[ix ? ix->sites[k] : k];
        if (!shard_unit_in_stage(a, plan, site->unit, s)) continue;
        int64_t in = site->in_bytes, out = site->out_bytes;
        switch (site->style) {
        case MTK_TP_EP_DISPATCH:
            if (o->ep > 1) ep_comms(a, o, site, s, m, l);
            break;
        default: break;
        }
        if (o->tp == 1) continue;
        switch (site->style) {
        case MTK_TP_COLWISE_GATHER_OUTPUT: {
            /* DTensor gathers shards padded to ceil(n / tp) */
            int64_t n = site->out_features, padded = out;
            if (n > 0) padded = out / n * shard_ceil_div(n, o->tp) * o->tp;
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
void shard_stage_dp_walk(const mtk_shard_analysis *a, const mtk_shard_plan *plan, const shard_stage_index *ix,
                         int32_t s, int64_t walk[2])
{
    const mtk_shard_options *o = &plan->options;
    int64_t bytes = 0, units = 0, last = -3, item = 0;
    mtk_dtype dtype = MTK_DTYPE_UNDEFINED; /* the latest parameter's, and its size */
    int32_t lo = ix ? ix->param_start[s] : 0, hi = ix ? ix->param_start[s + 1] : plan->nparams;
    for (int32_t k = lo; k < hi; k++) {
        int32_t i = ix ? ix->params[k] : k;
        const mtk_shard_param *p = &plan->params[i];
        if (p->stage != s && !(i == a->tied_param && s == o->pp - 1)) continue;
        if (p->dtype != dtype) dtype = p->dtype, item = (int64_t)mtk_dtype_size(dtype);
        bytes += shard_numel(p->local_shapes, p->ndim) * item;
        if (p->layer != last) units++, last = p->layer;
    }
    walk[0] = bytes, walk[1] = units;
}

static void dp_comms(const mtk_shard_analysis *a, const mtk_shard_plan *plan, int32_t s, comm_list *l)
{
    const mtk_shard_options *o = &plan->options;
    if (o->dp == 1) return;
    int64_t walk[2];
    if (l->dp_walk) walk[0] = l->dp_walk[0], walk[1] = l->dp_walk[1];
    else shard_stage_dp_walk(a, plan, l->ix, s, walk);
    int64_t m = plan->micro_batches, bytes = walk[0], units = walk[1];
    int64_t buckets = shard_ceil_div(bytes, DDP_BUCKET_BYTES);
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
    int64_t m = plan->micro_batches, b = o->sp ? shard_ceil_div(a->boundary_bytes, o->tp) : a->boundary_bytes;
    if (a->tied_param >= 0 && o->training && (s == 0 || s == o->pp - 1) && o->pp > 1) {
        const mtk_shard_param *p = &plan->params[a->tied_param];
        add(l, MTK_COLL_ALL_REDUCE, "pp", s, "tied embeddings' gradients", 1,
            shard_numel(p->local_shapes, p->ndim) * (int64_t)mtk_dtype_size(p->dtype));
    }
    if (s < o->pp - 1) add(l, MTK_COLL_SEND, "pp", s, "activations to the next stage", m, m * b);
    if (s > 0) add(l, MTK_COLL_RECV, "pp", s, "activations from the previous stage", m, m * b);
    if (!o->training) return;
    if (s > 0) add(l, MTK_COLL_SEND, "pp", s, "gradients to the previous stage", m, m * b);
    if (s < o->pp - 1) add(l, MTK_COLL_RECV, "pp", s, "gradients from the next stage", m, m * b);
}

void shard_stage_comm_bytes(const mtk_shard_analysis *a, const mtk_shard_plan *plan, const shard_stage_index *ix,
                            int32_t s, int which, const int64_t *dp_walk, int64_t *bytes)
{
    comm_list l = { .sums = bytes, .ix = ix, .dp_walk = dp_walk };
    if (which & SHARD_COMMS_TP) tp_comms(a, plan, s, &l);
    if (which & SHARD_COMMS_DP) dp_comms(a, plan, s, &l);
    if (which & SHARD_COMMS_PP) pp_comms(a, plan, s, &l);
}

/* Every collective of one step, stage by stage, into plan->comms. */
bool shard_comms_list(mtk_ctx *ctx, const mtk_shard_analysis *a, mtk_shard_plan *plan)
{
    comm_list l = { .ctx = ctx };
    for (int32_t s = 0; s < plan->options.pp; s++) {
        tp_comms(a, plan, s, &l);
        dp_comms(a, plan, s, &l);
        pp_comms(a, plan, s, &l);
    }
    if (mtk_ctx_status(ctx) != MTK_OK) return false;
    plan->comms = l.items;
    plan->ncomms = l.n;
    return true;
}
