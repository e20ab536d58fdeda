/* In-place fills: Tensor.fill_(value) and Tensor.zero_().
 *
 * PyTorch's rules: the value is a number or a 0-dim tensor ("fill_ only
 * supports 0-dimension value tensor but got tensor with 1 dimensions.");
 * the cpu kernel converts a number into self's dtype with the overflow
 * check ("value cannot be converted to type int8_t without overflow"),
 * the meta device checks nothing about the value; an expanded self (one
 * element written through several indices) takes a number but not a
 * tensor value (that path writes as copy_ does). */
#include "ops/elementwise_kernel.h"
#include "ops/registry.h"
#include "mtk/ops/convert.h"

#include <string.h>

/* The value argument as a number: a Python number as given, a 0-dim
 * tensor's element (cpu) via item(); false with the error set otherwise. */
static bool value_tensor_ok(mtk_op_call *call, const mtk_value *value)
{
    if (value->kind != MTK_VALUE_TENSOR) return true;
    const mtk_tensor *v = value->as.tensor;
    if (v->ndim != 0)
        return mtk_call_error(call, MTK_ERR_SHAPE,
                              "fill_ only supports 0-dimension value tensor but got tensor with %d dimensions.",
                              (int)v->ndim);
    return true;
}

bool mtk_ew_fill_meta(mtk_op_call *call)
{
    return value_tensor_ok(call, &call->args[1]);
}

bool mtk_ew_fill_cpu(mtk_op_call *call)
{
    mtk_tensor *self = call->args[0].as.tensor;
    const mtk_value *value = &call->args[1];
    if (!value_tensor_ok(call, value)) return false;
    if (value->kind == MTK_VALUE_TENSOR && value->as.tensor->device == MTK_DEVICE_META)
        return mtk_call_error(call, MTK_ERR_META_NO_DATA,
                              "Cannot copy out of meta tensor; no data! (the fill value is a meta tensor)");
    /* one float16/bfloat16 element is filled without the check (inf) */
    bool half = self->dtype == MTK_FLOAT16 || self->dtype == MTK_BFLOAT16;
    bool checked = !(half && mtk_tensor_numel(self) == 1);
    if (value->kind != MTK_VALUE_TENSOR && checked && !ew_number_fits(call, value, self->dtype)) return false;
    /* fill_.Tensor writes as copy_ does */
    if (value->kind == MTK_VALUE_TENSOR && mtk_tensor_numel(self) > 0 && !mtk_check_writable(call, self)) return false;
    mtk_tensor *v = mtk_call_operand(call, 1); /* a number: a 0-dim cpu tensor holding it */
    if (!v) return false;
    mtk_copy_strided(self, v); /* broadcasts the one element, converting */
    return true;
}

bool mtk_ew_zero_cpu(mtk_op_call *call)
{
    mtk_tensor *self = call->args[0].as.tensor;
    mtk_value zero = mtk_value_int(0);
    mtk_tensor *v = mtk_wrap_number(call->ctx, &zero);
    if (!v) return false;
    mtk_copy_strided(self, v);
    return true;
}

mtk_op_cost mtk_ew_fill_cost(const mtk_op_call *call)
{
    mtk_op_cost cost = { 0, mtk_tensor_numel(call->args[0].as.tensor) }; /* every element written */
    return cost;
}

bool mtk_ew_zero_meta(mtk_op_call *call)
{
    (void)call; /* any tensor can be zeroed */
    return true;
}

/* ------------------------------------------------------------ C API */

mtk_tensor *mtk_fill_(mtk_ctx *ctx, mtk_tensor *self, mtk_value value)
{
    if (!self) return NULL;
    mtk_op_call call;
    mtk_op_call_init(&call, ctx, mtk_op_by_id(OPID_FILL_));
    call.args[0] = mtk_value_tensor(self);
    call.args[1] = value;
    return mtk_op_run_tensor(&call);
}

mtk_tensor *mtk_zero_(mtk_ctx *ctx, mtk_tensor *self)
{
    if (!self) return NULL;
    mtk_op_call call;
    mtk_op_call_init(&call, ctx, mtk_op_by_id(OPID_ZERO_));
    call.args[0] = mtk_value_tensor(self);
    return mtk_op_run_tensor(&call);
}
