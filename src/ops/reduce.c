/* The reduce family's meta function, cpu kernel entry and cost, shared by
 * every row of list_reduce.h (see reduce.h). */
#include "ops/reduce_kernel.h"
#include "ops/registry.h"

#include <string.h>

#define RED_INFO(ID, KIND) const mtk_reduce_info mtk_reduce_info_##ID = { KIND };
RED_INFO(SUM, MTK_RED_SUM)
RED_INFO(NANSUM, MTK_RED_NANSUM)
RED_INFO(MEAN, MTK_RED_MEAN)
RED_INFO(NANMEAN, MTK_RED_NANMEAN)
RED_INFO(PROD, MTK_RED_PROD)
RED_INFO(AMAX, MTK_RED_AMAX)
RED_INFO(AMIN, MTK_RED_AMIN)
RED_INFO(MAX, MTK_RED_MAX)
RED_INFO(MIN, MTK_RED_MIN)
RED_INFO(ARGMAX, MTK_RED_ARGMAX)
RED_INFO(ARGMIN, MTK_RED_ARGMIN)
RED_INFO(VAR, MTK_RED_VAR)
RED_INFO(STD, MTK_RED_STD)
RED_INFO(VAR_MEAN, MTK_RED_VAR_MEAN)
RED_INFO(STD_MEAN, MTK_RED_STD_MEAN)
RED_INFO(LOGSUMEXP, MTK_RED_LOGSUMEXP)
RED_INFO(NORM, MTK_RED_NORM)
RED_INFO(VECTOR_NORM, MTK_RED_VECTOR_NORM)
RED_INFO(ALL, MTK_RED_ALL)
RED_INFO(ANY, MTK_RED_ANY)
RED_INFO(COUNT_NONZERO, MTK_RED_COUNT_NONZERO)
RED_INFO(CUMSUM, MTK_RED_CUMSUM)
RED_INFO(CUMPROD, MTK_RED_CUMPROD)
RED_INFO(CUMMAX, MTK_RED_CUMMAX)
RED_INFO(CUMMIN, MTK_RED_CUMMIN)
RED_INFO(MEDIAN, MTK_RED_MEDIAN)
RED_INFO(NANMEDIAN, MTK_RED_NANMEDIAN)
RED_INFO(MODE, MTK_RED_MODE)
#undef RED_INFO

/* max(x, other) / min(x, other) are maximum / minimum: a call of that row
 * over the same tensors, whose meta and cpu functions do the work. */
static void start_binary(mtk_op_call *sub, const mtk_op_call *call, const red_desc *d)
{
    mtk_op_call_init(sub, call->ctx, mtk_op_by_id(d->kind == MTK_RED_MAX ? OPID_MAXIMUM : OPID_MINIMUM));
    sub->args[0] = mtk_value_tensor(arg_tensor(call, 0));
    sub->args[1] = mtk_value_tensor(d->binary_other);
    sub->device = call->device;
}

bool mtk_reduce_meta(mtk_op_call *call)
{
    red_desc d;
    if (!red_describe(call, &d)) return false;
    if (d.binary_other) {
        mtk_op_call sub;
        start_binary(&sub, call, &d);
        if (!sub.op->meta(&sub) || sub.nout != 1 || !mtk_call_set_outputs(call, 1)) return false;
        mtk_call_output(call, 0, sub.out[0], -1);
        return true;
    }
    if (!mtk_call_set_outputs(call, d.nout)) return false;
    for (int32_t k = 0; k < d.nout; k++) {
        mtk_tensor *t =
            mtk_tensor_new(call->ctx, d.out_dtype[k], d.out_shape, d.out_ndim, d.out_stride[k], call->device);
        if (!t) return false;
        mtk_call_output(call, k, t, -1);
    }
    return true;
}

bool mtk_reduce_cpu(mtk_op_call *call)
{
    red_desc d;
    if (!red_describe(call, &d)) return false;
    if (d.binary_other) {
        mtk_op_call sub;
        start_binary(&sub, call, &d);
        sub.out = call->out;
        sub.out_view_of = call->out_view_of;
        sub.nout = call->nout;
        return sub.op->cpu(&sub);
    }
    if (d.cpu_refusal[0]) return mtk_call_error(call, d.cpu_status, "%s", d.cpu_refusal);
    switch (d.kind) {
    case MTK_RED_CUMSUM:
    case MTK_RED_CUMPROD:
    case MTK_RED_CUMMAX:
    case MTK_RED_CUMMIN: return red_scan_run(call->ctx, &d, call->out);
    case MTK_RED_MEDIAN:
    case MTK_RED_NANMEDIAN:
    case MTK_RED_MODE: return red_sort_run(call->ctx, &d, call->out);
    case MTK_RED_NORM: return red_nuclear_run(call->ctx, &d, call->out); /* p='nuc' */
    default: return red_engine_run(call->ctx, &d, call->out);
    }
}
