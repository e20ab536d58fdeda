/* The elementwise op family: type promotion (torch.result_type), Python
 * numbers as wrapped 0-dim tensors, and the meta/cpu/cost functions and
 * info objects named by list_elementwise.h.
 *
 * Other op families call mtk_result_type() and mtk_wrap_number() to
 * promote exactly as PyTorch does. */
#ifndef MTK_OPS_ELEMENTWISE_H
#define MTK_OPS_ELEMENTWISE_H

#include "mtk/op.h"
#include "ops/op_util.h"

/* ------------------------------------------------------------ promotion */

/* torch.result_type over `n` arguments: tensors and Python numbers (NONE
 * values are skipped).  Three priority classes, highest first: tensors
 * with dimensions, 0-dim tensors, then Python numbers and wrapped-number
 * tensors (MTK_TENSOR_WRAPPED_NUMBER).  A lower class only matters when it
 * is of a higher category (bool < integral < floating).  A Python float
 * counts as the context's default dtype, an int as int64, a bool as bool.
 * Returns MTK_DTYPE_UNDEFINED with MTK_ERR_DTYPE set when float8 types
 * would have to promote with another type ("Promotion for Float8 Types is
 * not supported, ...") or when no argument has a dtype. */
mtk_dtype mtk_result_type(mtk_ctx *ctx, const mtk_value *args, int32_t n);

/* The same as torch's meta device computes it for element-wise ops
 * (torch._refs' elementwise_dtypes): identical except that a float8 type
 * wins over any non-float8 type instead of failing (two different float8
 * types still fail).  PyTorch's cpu kernels use mtk_result_type. */
mtk_dtype mtk_meta_result_type(mtk_ctx *ctx, const mtk_value *args, int32_t n);

/* torch.promote_types(a, b) with PyTorch's error for float8: on success
 * the promoted dtype, else MTK_DTYPE_UNDEFINED with MTK_ERR_DTYPE set. */
mtk_dtype mtk_promote_types_checked(mtk_ctx *ctx, mtk_dtype a, mtk_dtype b);

/* A Python number as PyTorch wraps it for tensor arithmetic: a 0-dim cpu
 * tensor flagged MTK_TENSOR_WRAPPED_NUMBER holding the value, int64 for an
 * int, float64 for a float, bool for a bool.  The tensor lives in the
 * context.  NULL (error set) on out of memory or when `number` is not a
 * number. */
mtk_tensor *mtk_wrap_number(mtk_ctx *ctx, const mtk_value *number);

/* Argument i of a call as a tensor: the tensor itself, or a Python number
 * wrapped by mtk_wrap_number().  NULL (error set) for anything else. */
mtk_tensor *mtk_call_operand(mtk_op_call *call, int32_t i);

/* ------------------------------------------- meta / cpu / cost functions */


/* unary ops (info: ew_unary_info) */
bool mtk_ew_unary_meta(mtk_op_call *call);
bool mtk_ew_unary_cpu(mtk_op_call *call);
bool mtk_ew_positive_meta(mtk_op_call *call);
bool mtk_ew_round_meta(mtk_op_call *call);
bool mtk_ew_round_cpu(mtk_op_call *call);

/* binary ops (info: ew_binary_info) */
bool mtk_ew_binary_meta(mtk_op_call *call);
bool mtk_ew_binary_cpu(mtk_op_call *call);

/* where and clamp */
bool mtk_ew_where_meta(mtk_op_call *call);
bool mtk_ew_where_cpu(mtk_op_call *call);
bool mtk_ew_clamp_meta(mtk_op_call *call);
bool mtk_ew_clamp_cpu(mtk_op_call *call);

/* lerp, addcmul/addcdiv, glu (elementwise_ternary.c) */
bool mtk_ew_lerp_meta(mtk_op_call *call);
bool mtk_ew_lerp_cpu(mtk_op_call *call);
bool mtk_ew_addc_meta(mtk_op_call *call);
bool mtk_ew_addc_cpu(mtk_op_call *call);
bool mtk_ew_glu_meta(mtk_op_call *call);
bool mtk_ew_glu_cpu(mtk_op_call *call);

/* fill_ and zero_ (in place; cost: the elements written) */
bool mtk_ew_fill_meta(mtk_op_call *call);
bool mtk_ew_fill_cpu(mtk_op_call *call);
bool mtk_ew_zero_meta(mtk_op_call *call);
bool mtk_ew_zero_cpu(mtk_op_call *call);
mtk_op_cost mtk_ew_fill_cost(const mtk_op_call *call);

/* activation functions with parameters (torch.nn.functional) */
bool mtk_ew_activation_meta(mtk_op_call *call);
bool mtk_ew_activation_cpu(mtk_op_call *call);

/* ------------------------------------------------------------ info rows */

typedef struct ew_unary_info ew_unary_info;
typedef struct ew_binary_info ew_binary_info;
typedef struct ew_activation_info ew_activation_info;

#define EW_UNARY_OP(ID, name, sig, ...) extern const ew_unary_info mtk_ew_info_##ID;
#define EW_BINARY_OP(ID, name, sig, ...) extern const ew_binary_info mtk_ew_info_##ID;
#define EW_ACTIVATION_OP(ID, name, sig, ...) extern const ew_activation_info mtk_ew_info_##ID;
#define EW_OTHER_OP(ID, name, sig, meta, cpu, flags, ...)
#include "ops/list_elementwise.h"
#undef EW_UNARY_OP
#undef EW_BINARY_OP
#undef EW_ACTIVATION_OP
#undef EW_OTHER_OP

#endif
