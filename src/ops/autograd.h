/* The op table's autograd columns (mtk/plan.h: mtk_saved_fn,
 * mtk_backward_fn): what torch 2.13's autograd keeps for each op's
 * backward, read from tools/autograd/derivatives.yaml and checked with
 * saved_tensors_hooks (tests/plan).  The functions the rows name, and the
 * helpers they share.
 *
 *   autograd_saved.c   element-wise, reductions, views, linear algebra
 *   autograd_nn.c      norms, attention, rope, losses, dropout
 */
#ifndef MTK_OPS_AUTOGRAD_H
#define MTK_OPS_AUTOGRAD_H

#include "mtk/op.h"
#include "mtk/plan.h"

/* ---- helpers */

/* The tensor of argument `arg`, NULL for none. */
const mtk_tensor *ag_arg(const mtk_autograd_query *q, int32_t arg);
/* Whether argument `arg`'s tensor requires grad. */
bool ag_rg(const mtk_autograd_query *q, int32_t arg);
/* Saves argument `arg`'s tensor (its storage); nothing when it has none. */
void ag_save_arg(const mtk_autograd_query *q, mtk_autograd_result *r, int32_t arg);
void ag_save_output(mtk_autograd_result *r, int32_t index);
/* Saves a tensor the op makes for backward. */
void ag_save_new(mtk_autograd_result *r, mtk_dtype dtype, const int64_t *shape, int32_t ndim);
/* Saves argument `arg` when it is a tensor; a Python number (x * 2.0) is
 * wrapped in a 0-dim cpu tensor that saved_tensors_hooks never see. */
void ag_save_wrapped(const mtk_autograd_query *q, mtk_autograd_result *r, int32_t arg);

/* ---- saved columns (autograd_saved.c) */
void ag_saved_input(const mtk_autograd_query *q, mtk_autograd_result *r);  /* self     */
void ag_saved_result(const mtk_autograd_query *q, mtk_autograd_result *r); /* result   */
void ag_saved_input_result(const mtk_autograd_query *q, mtk_autograd_result *r);
void ag_saved_mul(const mtk_autograd_query *q, mtk_autograd_result *r);
void ag_saved_div(const mtk_autograd_query *q, mtk_autograd_result *r);
void ag_saved_pow(const mtk_autograd_query *q, mtk_autograd_result *r);
void ag_saved_mm(const mtk_autograd_query *q, mtk_autograd_result *r);
void ag_saved_grouped_mm(const mtk_autograd_query *q, mtk_autograd_result *r);
void ag_saved_matmul(const mtk_autograd_query *q, mtk_autograd_result *r);
void ag_saved_linear(const mtk_autograd_query *q, mtk_autograd_result *r);
void ag_saved_indices(const mtk_autograd_query *q, mtk_autograd_result *r); /* embedding */
void ag_saved_index_select(const mtk_autograd_query *q, mtk_autograd_result *r);
void ag_saved_gather(const mtk_autograd_query *q, mtk_autograd_result *r);
void ag_saved_topk(const mtk_autograd_query *q, mtk_autograd_result *r);
void ag_saved_extreme(const mtk_autograd_query *q, mtk_autograd_result *r); /* max, min */
void ag_saved_masked_fill(const mtk_autograd_query *q, mtk_autograd_result *r);
void ag_saved_clamp(const mtk_autograd_query *q, mtk_autograd_result *r);

/* ---- saved columns (autograd_nn.c) */
void ag_saved_layer_norm(const mtk_autograd_query *q, mtk_autograd_result *r);
void ag_backward_layer_norm(const mtk_autograd_query *q, mtk_autograd_result *r);
void ag_saved_rms_norm(const mtk_autograd_query *q, mtk_autograd_result *r);
void ag_saved_rope(const mtk_autograd_query *q, mtk_autograd_result *r);
void ag_saved_rope_complex(const mtk_autograd_query *q, mtk_autograd_result *r);
void ag_saved_sdpa(const mtk_autograd_query *q, mtk_autograd_result *r);
void ag_saved_cross_entropy(const mtk_autograd_query *q, mtk_autograd_result *r);
void ag_saved_nll_loss(const mtk_autograd_query *q, mtk_autograd_result *r);
void ag_saved_dropout(const mtk_autograd_query *q, mtk_autograd_result *r);
void ag_saved_conv(const mtk_autograd_query *q, mtk_autograd_result *r);
void ag_saved_max_pool(const mtk_autograd_query *q, mtk_autograd_result *r);

/* ---- backward columns (autograd_nn.c) */
/* The gradient of each input that requires grad (the default). */
void ag_backward_grads(const mtk_autograd_query *q, mtk_autograd_result *r);
void ag_backward_passthrough(const mtk_autograd_query *q, mtk_autograd_result *r);
void ag_backward_rms_norm(const mtk_autograd_query *q, mtk_autograd_result *r);
void ag_backward_rope(const mtk_autograd_query *q, mtk_autograd_result *r);
void ag_backward_matmul(const mtk_autograd_query *q, mtk_autograd_result *r);
void ag_backward_linear(const mtk_autograd_query *q, mtk_autograd_result *r);
void ag_backward_cross_entropy(const mtk_autograd_query *q, mtk_autograd_result *r);
void ag_backward_softmax(const mtk_autograd_query *q, mtk_autograd_result *r);
void ag_backward_sdpa(const mtk_autograd_query *q, mtk_autograd_result *r);

/* Which sdpa kernel torch runs for this call on the query's device kind. */
typedef enum ag_sdpa_kernel { AG_SDPA_MATH, AG_SDPA_FLASH, AG_SDPA_EFFICIENT } ag_sdpa_kernel;
ag_sdpa_kernel ag_sdpa_kernel_of(const mtk_autograd_query *q);

#endif
