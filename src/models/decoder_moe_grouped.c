/* transformers 5's grouped_mm experts (its default experts
 * implementation), op by op, as the memory plan needs them: the
 * (token, slot) pairs sorted by expert, the tokens gathered in that order
 * (one row per pair), the per-expert row counts (histc) and their
 * cumulative ends (int32 offsets), one _grouped_mm per projection over
 * every expert's weights, the rows weighted and put back in (token, slot)
 * order, summed over the slots.  Every size is set by T * top_k and the
 * number of experts, none by which expert a pair goes to, so the plan is
 * exact for any routing (unlike a balanced split, it also reaches every
 * expert's weights, which get gradients as torch's do).
 *
 * Meta only: on a real device the experts run on their tokens through
 * models_moe_dispatch, which computes the same sum. */
#include "models/blocks.h"
#include "models/decoder.h"
#include "mtk/ops.h"

mtk_tensor *models_moe_grouped(mtk_module *m, mtk_tensor *x, mtk_tensor *indices, mtk_tensor *weights,
                               const models_moe_grouped_weights *w)
{
    mtk_ctx *ctx = mtk_module_ctx(m);
    if (!x || !indices || !weights || !w->gate_up || !w->down) return NULL;
    int64_t tokens = x->shape[0], hidden = x->shape[1], k = indices->shape[1], pairs = tokens * k;
    int64_t experts = w->gate_up->shape[0];
    mtk_tensor *sample = mtk_reshape(ctx, weights, &pairs, 1);                   /* (S)         */
    mtk_tensor *ids = mtk_reshape(ctx, indices, &pairs, 1);                      /* (S)         */
    mtk_tensor *ids_sorted = NULL, *perm = NULL;
    if (!ids || !mtk_sort(ctx, ids, -1, false, false, &ids_sorted, &perm)) return NULL;
    mtk_tensor *token_of = mtk_floor_divide_scalar(ctx, perm, mtk_value_int(k)); /* (S)         */
    mtk_tensor *rows = mtk_index_select(ctx, x, 0, token_of);                    /* (S, H)      */
    mtk_tensor *sample_sorted = mtk_index_select(ctx, sample, 0, perm);          /* (S)         */
    mtk_tensor *counted = mtk_to_dtype(ctx, ids_sorted, MTK_FLOAT32);            /* (S)         */
    mtk_tensor *per_expert = mtk_histc(ctx, counted, experts, 0.0, (double)(experts - 1)); /* (E) */
    mtk_tensor *offsets = mtk_cumsum(ctx, per_expert, 0, MTK_INT32);             /* (E) int32   */
    mtk_tensor *bias = w->gate_up_bias ? mtk_index_select(ctx, w->gate_up_bias, 0, ids_sorted) : NULL; /* (S, 2I) */
    mtk_tensor *h = mtk_grouped_mm(ctx, rows, w->gate_up, offsets);              /* (S, 2I)     */
    /* out.add_(bias) in transformers: in place there, so the sum takes
       the product's place (both are live only at the add) */
    if (bias) h = mtk_add(ctx, h, bias);
    mtk_tensor *gate_up_out = h;
    h = w->gate(m, h);                                                           /* (S, I)      */
    /* proj_out holds the up projection until the gate returns and rebinds it */
    if (!models_blocks_held_until_here(ctx, gate_up_out)) return NULL;
    mtk_tensor *gate_up_bias = bias;
    bias = w->down_bias ? mtk_index_select(ctx, w->down_bias, 0, ids_sorted) : NULL; /* (S, H) */
    /* selected_biases holds the up projection's bias until rebound here */
    if (!models_blocks_held_until_here(ctx, gate_up_bias)) return NULL;
    mtk_tensor *out = mtk_grouped_mm(ctx, h, w->down, offsets);                  /* (S, H)      */
    if (bias) out = mtk_add(ctx, out, bias);
    /* float32 routing weights (mixtral) promote the weighted rows */
    mtk_tensor *weighted = mtk_mul(ctx, out, mtk_unsqueeze(ctx, sample_sorted, -1)); /* (S, H)  */
    /* inv_perm[perm] = arange(S): where each pair's row went */
    mtk_tensor *inv_perm = mtk_empty_like(ctx, perm, MTK_DTYPE_UNDEFINED);
    mtk_tensor *positions = NULL;
    if (inv_perm && mtk_ctx_push_device(ctx, perm->device)) { /* arange on the tokens' device */
        positions = mtk_arange_int(ctx, 0, pairs, 1, MTK_INT64);
        mtk_ctx_pop_device(ctx);
    }
    inv_perm = mtk_scatter(ctx, inv_perm, 0, perm, positions, NULL);             /* (S)         */
    weighted = mtk_index_select(ctx, weighted, 0, inv_perm);                     /* (S, H)      */
    int64_t per_token[3] = { tokens, k, hidden }, slots = 1;
    mtk_tensor *sum = mtk_sum(ctx, mtk_view(ctx, weighted, per_token, 3), &slots, 1, false, MTK_DTYPE_UNDEFINED);
    sum = sum ? mtk_to_dtype(ctx, sum, x->dtype) : NULL;                         /* (T, H)      */
    /* the forward's locals, held until it returns */
    mtk_tensor *locals[] = { ids_sorted, perm, rows, sample_sorted, counted, per_expert, offsets, bias, out,
                             weighted, inv_perm };
    for (size_t i = 0; i < sizeof locals / sizeof *locals; i++)
        if (sum && !models_blocks_held_until_here(ctx, locals[i])) return NULL;
    return sum;
}
