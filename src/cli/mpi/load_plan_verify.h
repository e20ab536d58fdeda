/* mtk load --plan --verify: the union of every rank's slices compared
 * with the whole checkpoint, bit for bit, on rank 0. */
#ifndef MTK_CLI_LOAD_PLAN_VERIFY_H
#define MTK_CLI_LOAD_PLAN_VERIFY_H

#include "cli/load_plan.h"

#include <cjson/cJSON.h>

typedef struct plan_verifier plan_verifier;

/* Prepares the check on this rank: rank 0 loads the whole checkpoint
 * `weights` into a second model (mtk_model_load with `resolve` and `spec`,
 * as a plain `mtk load` does) and a buffer for the biggest slice; other
 * ranks only keep the plan.  `meta_model` is the rank's model on meta,
 * whose state dict names what the checkpoint holds.  NULL with the
 * context's error.  Free with plan_verify_free. */
plan_verifier *plan_verify_new(mtk_ctx *ctx, int rank, const parallel_plan *plan, mtk_module *meta_model,
                               const char *model, const char *weights, const mtk_model_resolve_options *resolve,
                               const mtk_load_spec *spec);

/* Runs the check, a collective over MPI_COMM_WORLD: every rank sends
 * its slices (`slices`, in plan order, as mtk_load_slices filled them) to
 * rank 0, which compares each with the same box of the whole tensor and
 * counts how many ranks hold each element.  On rank 0 returns {"ok",
 * "tensors", "slices", "bytes_compared", "problems": [text]} (the
 * caller frees it); NULL elsewhere.  ok: every slice equals the
 * checkpoint, every tensor of the checkpoint is in the plan, every
 * element is held by some rank, and by exactly one when the parameter's
 * placement has no Replicate. */
cJSON *plan_verify_run(plan_verifier *v, const mtk_load_slice *slices, int64_t nslices);

/* Prints a verify report (plan_verify_run's) as text. */
void plan_verify_print(const cJSON *report);

/* Accepts NULL. */
void plan_verify_free(plan_verifier *v);

#endif
