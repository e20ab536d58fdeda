/* Generation's memory plan: model.generate(input_ids, max_new_tokens=N,
 * do_sample=False) as prefill then decode steps, with the KV cache as
 * transformers 5 builds it per family.  The entry point the memory
 * planner dispatches --mode generate to; its body belongs to the
 * generation planner (issue 13, plan-generate). */
#include "plan/memory_internal.h"

mtk_memory_plan *mem_plan_generate(mtk_ctx *ctx, const char *model, const mtk_memory_options *o)
{
    (void)o;
    mtk_error(ctx, MTK_ERR_NOT_IMPLEMENTED, "memory: --mode generate is not implemented yet (model %s)",
              model ? model : "?");
    return NULL;
}
