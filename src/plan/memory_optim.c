/* The optimizer step as torch 2.13's default implementations allocate
 * (torch/optim/sgd.py, adam.py; AdamW is Adam with decoupled weight
 * decay, an in-place mul_ of the parameter):
 *
 *   device    cpu tensors take the single-tensor loop; CUDA ones the
 *             `foreach` implementation (_default_to_fused_or_foreach).
 *   Adam(W)   the first step's _init_group creates every state before the
 *             update: `step` (a float32 scalar, on the cpu unless capturable
 *             or fused), exp_avg and exp_avg_sq (zeros_like the parameter).
 *             Single-tensor: per parameter, denom = (exp_avg_sq.sqrt() / c)
 *             .add_(eps) allocates the sqrt and the quotient (the sqrt freed
 *             after the division) while the previous parameter's denom is
 *             still bound to `denom` until the new one replaces it.
 *             Foreach: exp_avg_sq_sqrt = _foreach_sqrt(exp_avg_sqs), one
 *             temporary per parameter, all alive until the step ends.
 *   SGD       in place: no temporaries.  With momentum the first step
 *             clones each gradient into its momentum_buffer, in the loop.
 */
#include "plan/memory_sim.h"

#include "mtk/plan.h"

static const char *step_name(mtk_optimizer_kind k)
{
    switch (k) {
    case MTK_OPTIMIZER_SGD: return "sgd.step";
    case MTK_OPTIMIZER_MOMENTUM: return "sgd.step";
    case MTK_OPTIMIZER_ADAM: return "adam.step";
    case MTK_OPTIMIZER_ADAMW: return "adamw.step";
    }
    return "step";
}

static void adam_step(mem_sim *s, bool first, bool foreach)
{
    if (first) {
        for (int32_t i = 0; i < s->nparams; i++) {
            int64_t bytes = mem_param_bytes(s, s->params[i]);
            if (!foreach) mem_buf_new(s, 4, MEM_CAT_STATE); /* step, float32 on cpu */
            mem_buf_new(s, bytes, MEM_CAT_STATE);           /* exp_avg             */
            mem_buf_new(s, bytes, MEM_CAT_STATE);           /* exp_avg_sq          */
        }
    }
    if (foreach) {
        int32_t *tmp = s->scratch; /* holds >= ntensors ids */
        int32_t n = 0;
        for (int32_t i = 0; i < s->nparams; i++) {
            int32_t b = mem_buf_new(s, mem_param_bytes(s, s->params[i]), MEM_CAT_OTHER);
            if (b < 0) return;
            tmp[n++] = b;
        }
        mem_timeline(s);
        for (int32_t i = 0; i < n; i++) mem_buf_unref(s, tmp[i]);
        return;
    }
    int32_t denom = -1;
    for (int32_t i = 0; i < s->nparams; i++) {
        int64_t bytes = mem_param_bytes(s, s->params[i]);
        int32_t root = mem_buf_new(s, bytes, MEM_CAT_OTHER);
        int32_t quotient = mem_buf_new(s, bytes, MEM_CAT_OTHER);
        if (root < 0 || quotient < 0) return;
        mem_buf_unref(s, root);
        mem_buf_unref(s, denom);
        denom = quotient;
        mem_timeline(s);
    }
    mem_buf_unref(s, denom);
}

void mem_optimizer_step(mem_sim *s, bool first)
{
    /* only parameters with a .grad take part (p.grad is None: skipped) */
    int32_t n = 0;
    for (int32_t i = 0; i < s->ntrainable; i++)
        if (s->pgrad[s->trainable[i]] >= 0) s->params[n++] = s->trainable[i];
    s->nparams = n;
    s->phase = MTK_PHASE_OPTIMIZER;
    s->node = -1;
    s->op = step_name(s->o->optimizer);
    bool foreach = s->o->device_kind == MTK_DEVICE_KIND_CUDA;
    switch (s->o->optimizer) {
    case MTK_OPTIMIZER_ADAM:
    case MTK_OPTIMIZER_ADAMW:
        adam_step(s, first, foreach);
        break;
    case MTK_OPTIMIZER_MOMENTUM:
        if (first)
            for (int32_t i = 0; i < s->nparams; i++)
                mem_buf_new(s, mem_param_bytes(s, s->params[i]), MEM_CAT_STATE); /* momentum_buffer */
        break;
    case MTK_OPTIMIZER_SGD:
        break;
    }
    mem_timeline(s);
}
