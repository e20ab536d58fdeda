/* Routing real tokens to experts: on a real device each expert runs on
 * exactly the tokens its router sent it, as transformers 5's default
 * experts implementation (grouped_mm) does it.  The (token, slot) pairs of
 * the router's top-k indices are grouped by expert (counting sort, token
 * order within an expert), the tokens gathered once (index_select), each
 * hit expert runs on its slice of rows, the rows are multiplied by their
 * routing weights, put back in (token, slot) order and summed over the
 * slots (accumulated in double, rounded once: a bfloat16 model rounds as
 * torch's sum does, not after every add as index_add_).  Experts no token
 * reaches do not run. */
#include "models/decoder.h"
#include "mtk/ops.h"

#include <stdint.h>

/* A cpu int64 tensor (n) on x's device holding `values`. */
static mtk_tensor *index_tensor(mtk_ctx *ctx, const mtk_tensor *like, const int64_t *values, int64_t n)
{
    if (!mtk_ctx_push_device(ctx, like->device)) return NULL;
    mtk_tensor *t = mtk_empty(ctx, &n, 1, MTK_INT64);
    mtk_ctx_pop_device(ctx);
    if (!t) return NULL;
    int64_t *data = mtk_tensor_data(t);
    for (int64_t i = 0; i < n; i++) data[i] = values[i];
    return t;
}

mtk_tensor *models_moe_dispatch(mtk_module *m, mtk_tensor *x, mtk_tensor *indices, mtk_tensor *weights,
                                int64_t experts, bool scale_input, models_moe_expert_fn expert)
{
    mtk_ctx *ctx = mtk_module_ctx(m);
    if (!x || !indices || !weights) return NULL;
    if (x->ndim != 2 || indices->ndim != 2 || indices->shape[0] != x->shape[0] || weights->ndim != 2 ||
        weights->shape[0] != indices->shape[0] || weights->shape[1] != indices->shape[1]) {
        mtk_error(ctx, MTK_ERR_SHAPE,
                  "%s: expected tokens (T, hidden), indices and weights (T, k), got %d, %d and %d dims",
                  mtk_module_type_name(m), (int)x->ndim, (int)indices->ndim, (int)weights->ndim);
        return NULL;
    }
    int64_t tokens = indices->shape[0], k = indices->shape[1], pairs = tokens * k;
    mtk_tensor *idx = mtk_contiguous(ctx, mtk_to_dtype(ctx, indices, MTK_INT64));
    int64_t *count = mtk_ctx_alloc(ctx, (size_t)(experts + 1) * sizeof *count);
    int64_t *token_of = mtk_ctx_alloc_uninit(ctx, (size_t)(pairs ? pairs : 1) * sizeof *token_of);
    int64_t *slot_of = mtk_ctx_alloc_uninit(ctx, (size_t)(pairs ? pairs : 1) * sizeof *slot_of);
    int64_t *row_of = mtk_ctx_alloc_uninit(ctx, (size_t)(pairs ? pairs : 1) * sizeof *row_of);
    if (!idx || !count || !token_of || !slot_of || !row_of) return NULL;
    const int64_t *chosen = mtk_tensor_data(idx); /* (T, k) */
    /* count[e + 1]: the pairs routed to expert e; then prefix sums: count[e] its first row */
    for (int64_t p = 0; p < pairs; p++) {
        if (chosen[p] < 0 || chosen[p] >= experts) {
            mtk_error(ctx, MTK_ERR_INDEX, "%s: token %lld was routed to expert %lld, out of range for %lld experts",
                      mtk_module_type_name(m), (long long)(p / k), (long long)chosen[p], (long long)experts);
            return NULL;
        }
        count[chosen[p] + 1]++;
    }
    for (int64_t e = 0; e < experts; e++) count[e + 1] += count[e];
    int64_t *next = mtk_ctx_alloc_uninit(ctx, (size_t)(experts ? experts : 1) * sizeof *next);
    if (!next) return NULL;
    for (int64_t e = 0; e < experts; e++) next[e] = count[e];
    for (int64_t p = 0; p < pairs; p++) {
        int64_t row = next[chosen[p]]++;
        token_of[row] = p / k;
        slot_of[row] = p;
        row_of[p] = row;
    }
    if (pairs == 0) return mtk_zeros_like(ctx, x, MTK_DTYPE_UNDEFINED);
    mtk_tensor *token_index = index_tensor(ctx, x, token_of, pairs);           /* (P)    */
    mtk_tensor *slot_index = index_tensor(ctx, x, slot_of, pairs);             /* (P)    */
    mtk_tensor *row_index = index_tensor(ctx, x, row_of, pairs);               /* (P)    */
    mtk_tensor *w = mtk_index_select(ctx, mtk_reshape(ctx, weights, &pairs, 1), 0, slot_index);
    w = mtk_unsqueeze(ctx, w, -1);                                              /* (P, 1) */
    mtk_tensor *rows = mtk_index_select(ctx, x, 0, token_index);                /* (P, H) */
    if (scale_input) rows = mtk_to_dtype(ctx, mtk_mul(ctx, rows, w), x->dtype);
    mtk_tensor **parts = mtk_ctx_alloc_uninit(ctx, (size_t)(experts ? experts : 1) * sizeof *parts);
    if (!rows || !parts) return NULL;
    int32_t hit = 0;
    for (int64_t e = 0; e < experts; e++) {
        int64_t n = count[e + 1] - count[e];
        if (n == 0) continue;
        parts[hit] = expert(m, e, mtk_narrow(ctx, rows, 0, count[e], n)); /* (n, H) */
        if (!parts[hit++]) return NULL;
    }
    mtk_tensor *routed = hit == 1 ? parts[0] : mtk_cat(ctx, parts, hit, 0);   /* (P, H) */
    if (!scale_input) routed = mtk_mul(ctx, routed, w);
    int64_t per_token[3] = { tokens, k, x->shape[1] }, slot_dim = 1;
    routed = mtk_view(ctx, mtk_index_select(ctx, routed, 0, row_index), per_token, 3); /* (T, k, H) */
    return mtk_to_dtype(ctx, mtk_sum(ctx, routed, &slot_dim, 1, false, MTK_DTYPE_UNDEFINED), x->dtype);
}
