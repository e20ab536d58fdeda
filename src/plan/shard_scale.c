/* A shard analysis at another micro-batch without tracing the model
 * again (what the search does for micro-batches 8, 16, ..).
 *
 * A decoder's tensors carry the micro-batch as one dimension, so every
 * number an analysis reads from its trace (a node's FLOPs and working
 * sets, a saved storage's bytes, a layer's input, a replayed point's
 * bytes) is v1 + (k - 1) (v2 - v1) at micro-batch k p from its values
 * v1 at micro-batch p and v2 at 2 p, and the trace's structure (nodes,
 * storages, units, phases) is the same at every such micro-batch.  Not
 * from p = 1: there a size-1 dimension makes some reshapes views that
 * are copies at 2 and more.  Two more things could break it: a shape in
 * which the micro-batch enters other than as one dimension, and the CUDA
 * allocator's rounding of each block (affine when a block grows by whole
 * blocks, else only at some k).  All three are checked on the two
 * traces, the rounding at the micro-batch asked for (shard_analyses_scale);
 * the maxima and the dropping of covered points are then redone from the
 * scaled numbers (shard_analysis_finish), exactly as a trace at k p
 * makes them.  The basis need not be the traces themselves: any two
 * analyses at p and 2 p (a multiple of the traces' micro-batch, traced or
 * scaled) make the one at k p the same way where the rounding allows, so
 * a micro-batch past where it stops being affine from the traces is
 * traced and the next scaled from it and the one before. */
#include "plan/shard_internal.h"
#include "plan/memory_internal.h"

#include <string.h>

/* x at micro-batch p and y at 2 p (the same tensor of the two traces):
 * the same dtype and rank, at most one dimension twice as long. */
static bool shape_scales(const mtk_tensor *x, const mtk_tensor *y)
{
    if (x->ndim != y->ndim || x->dtype != y->dtype) return false;
    int32_t grown = 0;
    for (int32_t d = 0; d < x->ndim; d++) {
        if (x->shape[d] == y->shape[d]) continue;
        if (2 * x->shape[d] != y->shape[d]) return false;
        grown++;
    }
    return grown <= 1;
}

/* An allocation of b1 bytes at micro-batch q and b2 at 2 q: b1 + (x / q -
 * 1) (b2 - b1) at x (a multiple of q), and its rounded size at m = k p
 * the one at p plus k - 1 times its growth from p to 2 p (the CUDA
 * allocator's blocks: a growth by whole blocks always is). */
static bool grows_affinely(const mtk_memory_options *mo, int64_t b1, int64_t b2, int64_t j, int64_t k)
{
    int64_t d = b2 - b1;
    if (d < 0) return false;
    if (mem_alloc_bytes(mo, d) == d) return true; /* cpu, or whole blocks */
    int64_t r1 = mem_alloc_bytes(mo, b1 + (j - 1) * d), r2 = mem_alloc_bytes(mo, b1 + (2 * j - 1) * d);
    return mem_alloc_bytes(mo, b1 + (k * j - 1) * d) == r1 + (k - 1) * (r2 - r1);
}

static bool same_structure(const shard_raw *r1, const shard_raw *r2)
{
    if (r1->nnodes != r2->nnodes || r1->nsaved != r2->nsaved || r1->npoints != r2->npoints ||
        memcmp(r1->run_end, r2->run_end, sizeof r1->run_end) != 0)
        return false;
    size_t nn = (size_t)r1->nnodes, ns = (size_t)r1->nsaved, np = (size_t)r1->npoints;
    return memcmp(r1->node_unit, r2->node_unit, nn * sizeof *r1->node_unit) == 0 &&
           memcmp(r1->node_sharded, r2->node_sharded, nn * sizeof *r1->node_sharded) == 0 &&
           memcmp(r1->saved_unit, r2->saved_unit, ns * sizeof *r1->saved_unit) == 0 &&
           memcmp(r1->saved_flags, r2->saved_flags, ns * sizeof *r1->saved_flags) == 0 &&
           (np == 0 || (memcmp(r1->point_unit, r2->point_unit, np * sizeof *r1->point_unit) == 0 &&
                        memcmp(r1->point_phase, r2->point_phase, np * sizeof *r1->point_phase) == 0));
}

bool shard_analyses_scale(const mtk_shard_analysis *a1, const mtk_shard_analysis *a2, const mtk_shard_analysis *b1,
                          const mtk_shard_analysis *b2, int64_t m)
{
    const mtk_shard_options *o1 = &a1->options, *o2 = &a2->options;
    if (o1->micro_batch < 1 || o2->micro_batch != 2 * o1->micro_batch || o1->seq != o2->seq ||
        o1->training != o2->training || o1->dtype != o2->dtype || o1->device_kind != o2->device_kind)
        return false;
    if (a1->nlayers != a2->nlayers || a1->nsites != a2->nsites || a1->nparams != a2->nparams ||
        (a1->points == NULL) != (a2->points == NULL) || !same_structure(a1->raw, a2->raw))
        return false;
    /* the basis: analyses of the same model at p and 2 p, p a multiple of q */
    int64_t q = o1->micro_batch, p = b1->options.micro_batch;
    if (b2->options.micro_batch != 2 * p || p % q || m % p || m / p < 2 || m / q > (1LL << 40) ||
        b1->options.seq != o1->seq || b2->options.seq != o1->seq || b1->options.training != o1->training ||
        b2->options.training != o1->training || b1->options.dtype != o1->dtype || b2->options.dtype != o1->dtype ||
        b1->options.device_kind != o1->device_kind || b2->options.device_kind != o1->device_kind ||
        b1->nsites != a1->nsites || b2->nsites != a1->nsites || (b1->points == NULL) != (a1->points == NULL) ||
        (b2->points == NULL) != (a1->points == NULL) || !same_structure(a1->raw, b1->raw) ||
        !same_structure(a1->raw, b2->raw))
        return false;
    const mtk_graph *g1 = a1->raw->graph, *g2 = a2->raw->graph;
    int32_t nt = mtk_graph_tensor_count(g1), ns = mtk_graph_storage_count(g1), nn = mtk_graph_node_count(g1);
    if (nt != mtk_graph_tensor_count(g2) || ns != mtk_graph_storage_count(g2) || nn != mtk_graph_node_count(g2))
        return false;
    mtk_memory_options mo;
    mtk_memory_options_init(&mo);
    mo.device_kind = (mtk_device_kind)o1->device_kind;
    int64_t j = p / q, k = m / p;
    for (int32_t t = 0; t < nt; t++)
        if (!shape_scales(mtk_graph_tensor_at(g1, t)->tensor, mtk_graph_tensor_at(g2, t)->tensor)) return false;
    for (int32_t s = 0; s < ns; s++)
        if (!grows_affinely(&mo, mtk_graph_storage_at(g1, s)->nbytes, mtk_graph_storage_at(g2, s)->nbytes, j, k))
            return false;
    for (int32_t n = 0; n < nn; n++) {
        const mtk_graph_node *x = mtk_graph_node_at(g1, n), *y = mtk_graph_node_at(g2, n);
        if (x->op != y->op || x->nsaved != y->nsaved || x->nbackward != y->nbackward) return false;
        if (!grows_affinely(&mo, x->transient_bytes, y->transient_bytes, j, k) ||
            !grows_affinely(&mo, x->transient_nograd_bytes, y->transient_nograd_bytes, j, k))
            return false;
        for (int32_t e = 0; e < x->nbackward; e++)
            if (!grows_affinely(&mo, x->backward[e].nbytes, y->backward[e].nbytes, j, k)) return false;
        for (int32_t e = 0; e < x->nsaved; e++)
            if (!grows_affinely(&mo, mtk_graph_saved_entry_bytes(g1, x, &x->saved[e]),
                                 mtk_graph_saved_entry_bytes(g2, y, &y->saved[e]), j, k))
                return false;
    }
    return true;
}

/* out[i] = v1[i] + (k - 1) (v2[i] - v1[i]) into a new array. */
static int64_t *scaled(mtk_ctx *ctx, const int64_t *v1, const int64_t *v2, size_t n, int64_t k)
{
    int64_t *out = mtk_ctx_alloc_uninit(ctx, (n ? n : 1) * sizeof *out);
    if (!out) return NULL;
    for (size_t i = 0; i < n; i++) out[i] = v1[i] + (k - 1) * (v2[i] - v1[i]);
    return out;
}

mtk_shard_analysis *shard_analysis_at(mtk_ctx *ctx, const mtk_shard_analysis *a1, const mtk_shard_analysis *a2,
                                      int64_t m)
{
    const shard_raw *r1 = a1->raw, *r2 = a2->raw;
    int64_t k = m / a1->options.micro_batch;
    mtk_shard_analysis *a = mtk_ctx_alloc_uninit(ctx, sizeof *a);
    shard_raw *raw = mtk_ctx_alloc_uninit(ctx, sizeof *raw);
    if (!a || !raw) return NULL;
    *a = *a1;
    *raw = *r1; /* the structure, shared */
    a->options.micro_batch = m;
    a->raw = raw;
    raw->flops = scaled(ctx, r1->flops, r2->flops, 3 * (size_t)r1->nnodes, k);
    raw->saved = scaled(ctx, r1->saved, r2->saved, (size_t)r1->nsaved, k);
    raw->input = scaled(ctx, r1->input, r2->input, (size_t)a1->nlayers, k);
    raw->site = scaled(ctx, r1->site, r2->site, 2 * (size_t)a1->nsites, k);
    raw->point_bytes = scaled(ctx, r1->point_bytes, r2->point_bytes, 4 * (size_t)r1->npoints, k);
    raw->boundary = r1->boundary + (k - 1) * (r2->boundary - r1->boundary);
    raw->kv_layer = r1->kv_layer + (k - 1) * (r2->kv_layer - r1->kv_layer);
    a->units = mtk_ctx_alloc(ctx, (size_t)(a1->nlayers + 2) * sizeof *a->units);
    a->sites = mtk_ctx_alloc_uninit(ctx, (size_t)(a1->nsites ? a1->nsites : 1) * sizeof *a->sites);
    a->points = a1->points ? mtk_ctx_alloc(ctx, (size_t)(r1->npoints ? r1->npoints : 1) * sizeof *a->points) : NULL;
    a->points_full = a1->points ? mtk_ctx_alloc(ctx, (size_t)(r1->npoints ? r1->npoints : 1) * sizeof *a->points) : NULL;
    a->points_selective = a1->points ? mtk_ctx_alloc(ctx, (size_t)(r1->npoints ? r1->npoints : 1) * sizeof *a->points)
                                     : NULL;
    if (!raw->flops || !raw->saved || !raw->input || !raw->site || !raw->point_bytes || !a->units || !a->sites ||
        (a1->points && (!a->points || !a->points_full || !a->points_selective)))
        return NULL;
    raw->ws = raw->flops + r1->nnodes;
    if (a1->nsites) memcpy(a->sites, a1->sites, (size_t)a1->nsites * sizeof *a->sites);
    shard_analysis_finish(a);
    return mtk_ctx_status(ctx) == MTK_OK ? a : NULL;
}
