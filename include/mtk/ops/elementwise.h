/* Typed C API of the elementwise ops.  Every function takes the context first,
 * returns NULL (error on the context) on failure, and passes a NULL tensor
 * argument through as NULL without a new error.
 *
 * Semantics are PyTorch's: broadcasting, type promotion (torch.result_type),
 * output strides (as torch's meta device computes them), errors.  Results
 * are new tensors on the inputs' device, owned by the context.  Where PyTorch takes a Python number
 * the API takes an mtk_value: mtk_value_int(2), mtk_value_float(0.5) and
 * mtk_value_bool(true) promote like Python's int, float and bool (a float
 * becomes the context's default dtype, an int does not widen an integer
 * tensor). */
#ifndef MTK_OPS_ELEMENTWISE_PUBLIC_H
#define MTK_OPS_ELEMENTWISE_PUBLIC_H

#include "mtk/core.h"
#include "mtk/value.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- unary, same dtype.  neg refuses bool; positive returns `input`
 * itself; square of bool is int64. */
MTK_API mtk_tensor *mtk_neg(mtk_ctx *ctx, mtk_tensor *input);
MTK_API mtk_tensor *mtk_abs(mtk_ctx *ctx, mtk_tensor *input);
MTK_API mtk_tensor *mtk_sign(mtk_ctx *ctx, mtk_tensor *input);
MTK_API mtk_tensor *mtk_floor(mtk_ctx *ctx, mtk_tensor *input);
MTK_API mtk_tensor *mtk_ceil(mtk_ctx *ctx, mtk_tensor *input);
MTK_API mtk_tensor *mtk_trunc(mtk_ctx *ctx, mtk_tensor *input);
MTK_API mtk_tensor *mtk_round(mtk_ctx *ctx, mtk_tensor *input);
/* torch.round(input, decimals=decimals): half to even at 10^-decimals */
MTK_API mtk_tensor *mtk_round_decimals(mtk_ctx *ctx, mtk_tensor *input, int64_t decimals);
MTK_API mtk_tensor *mtk_relu(mtk_ctx *ctx, mtk_tensor *input);
MTK_API mtk_tensor *mtk_square(mtk_ctx *ctx, mtk_tensor *input);
MTK_API mtk_tensor *mtk_bitwise_not(mtk_ctx *ctx, mtk_tensor *input);
MTK_API mtk_tensor *mtk_logical_not(mtk_ctx *ctx, mtk_tensor *input); /* -> bool */
MTK_API mtk_tensor *mtk_positive(mtk_ctx *ctx, mtk_tensor *input);

/* ---- unary, integral and bool inputs give the default float dtype */
MTK_API mtk_tensor *mtk_exp(mtk_ctx *ctx, mtk_tensor *input);
MTK_API mtk_tensor *mtk_exp2(mtk_ctx *ctx, mtk_tensor *input);
MTK_API mtk_tensor *mtk_expm1(mtk_ctx *ctx, mtk_tensor *input);
MTK_API mtk_tensor *mtk_log(mtk_ctx *ctx, mtk_tensor *input);
MTK_API mtk_tensor *mtk_log2(mtk_ctx *ctx, mtk_tensor *input);
MTK_API mtk_tensor *mtk_log10(mtk_ctx *ctx, mtk_tensor *input);
MTK_API mtk_tensor *mtk_log1p(mtk_ctx *ctx, mtk_tensor *input);
MTK_API mtk_tensor *mtk_sqrt(mtk_ctx *ctx, mtk_tensor *input);
MTK_API mtk_tensor *mtk_rsqrt(mtk_ctx *ctx, mtk_tensor *input);
MTK_API mtk_tensor *mtk_sin(mtk_ctx *ctx, mtk_tensor *input);
MTK_API mtk_tensor *mtk_cos(mtk_ctx *ctx, mtk_tensor *input);
MTK_API mtk_tensor *mtk_tan(mtk_ctx *ctx, mtk_tensor *input);
MTK_API mtk_tensor *mtk_asin(mtk_ctx *ctx, mtk_tensor *input);
MTK_API mtk_tensor *mtk_acos(mtk_ctx *ctx, mtk_tensor *input);
MTK_API mtk_tensor *mtk_atan(mtk_ctx *ctx, mtk_tensor *input);
MTK_API mtk_tensor *mtk_sinh(mtk_ctx *ctx, mtk_tensor *input);
MTK_API mtk_tensor *mtk_cosh(mtk_ctx *ctx, mtk_tensor *input);
MTK_API mtk_tensor *mtk_tanh(mtk_ctx *ctx, mtk_tensor *input);
MTK_API mtk_tensor *mtk_sigmoid(mtk_ctx *ctx, mtk_tensor *input);
MTK_API mtk_tensor *mtk_erf(mtk_ctx *ctx, mtk_tensor *input);
MTK_API mtk_tensor *mtk_erfc(mtk_ctx *ctx, mtk_tensor *input);
MTK_API mtk_tensor *mtk_reciprocal(mtk_ctx *ctx, mtk_tensor *input);

/* ---- predicates -> bool */
MTK_API mtk_tensor *mtk_isnan(mtk_ctx *ctx, mtk_tensor *input);
MTK_API mtk_tensor *mtk_isinf(mtk_ctx *ctx, mtk_tensor *input);
MTK_API mtk_tensor *mtk_isfinite(mtk_ctx *ctx, mtk_tensor *input);

/* ---- torch.nn.functional activations (same dtype; float-only kernels) */
MTK_API mtk_tensor *mtk_silu(mtk_ctx *ctx, mtk_tensor *input);
/* approximate: "none" (or NULL) or "tanh" */
MTK_API mtk_tensor *mtk_gelu(mtk_ctx *ctx, mtk_tensor *input, const char *approximate);
MTK_API mtk_tensor *mtk_softplus(mtk_ctx *ctx, mtk_tensor *input, double beta, double threshold);
MTK_API mtk_tensor *mtk_mish(mtk_ctx *ctx, mtk_tensor *input);
MTK_API mtk_tensor *mtk_elu(mtk_ctx *ctx, mtk_tensor *input, double alpha);
MTK_API mtk_tensor *mtk_selu(mtk_ctx *ctx, mtk_tensor *input);
MTK_API mtk_tensor *mtk_leaky_relu(mtk_ctx *ctx, mtk_tensor *input, double negative_slope);
MTK_API mtk_tensor *mtk_relu6(mtk_ctx *ctx, mtk_tensor *input);
MTK_API mtk_tensor *mtk_hardswish(mtk_ctx *ctx, mtk_tensor *input);
MTK_API mtk_tensor *mtk_hardsigmoid(mtk_ctx *ctx, mtk_tensor *input);
MTK_API mtk_tensor *mtk_hardtanh(mtk_ctx *ctx, mtk_tensor *input, double min_val, double max_val);

/* ---- binary, tensor with tensor (broadcasting) */
MTK_API mtk_tensor *mtk_add(mtk_ctx *ctx, mtk_tensor *input, mtk_tensor *other);
MTK_API mtk_tensor *mtk_sub(mtk_ctx *ctx, mtk_tensor *input, mtk_tensor *other);
MTK_API mtk_tensor *mtk_mul(mtk_ctx *ctx, mtk_tensor *input, mtk_tensor *other);
MTK_API mtk_tensor *mtk_div(mtk_ctx *ctx, mtk_tensor *input, mtk_tensor *other); /* true division */
MTK_API mtk_tensor *mtk_floor_divide(mtk_ctx *ctx, mtk_tensor *input, mtk_tensor *other);
MTK_API mtk_tensor *mtk_remainder(mtk_ctx *ctx, mtk_tensor *input, mtk_tensor *other);
MTK_API mtk_tensor *mtk_fmod(mtk_ctx *ctx, mtk_tensor *input, mtk_tensor *other);
MTK_API mtk_tensor *mtk_pow(mtk_ctx *ctx, mtk_tensor *input, mtk_tensor *exponent);
MTK_API mtk_tensor *mtk_maximum(mtk_ctx *ctx, mtk_tensor *input, mtk_tensor *other);
MTK_API mtk_tensor *mtk_minimum(mtk_ctx *ctx, mtk_tensor *input, mtk_tensor *other);
MTK_API mtk_tensor *mtk_atan2(mtk_ctx *ctx, mtk_tensor *input, mtk_tensor *other);
MTK_API mtk_tensor *mtk_eq(mtk_ctx *ctx, mtk_tensor *input, mtk_tensor *other);
MTK_API mtk_tensor *mtk_ne(mtk_ctx *ctx, mtk_tensor *input, mtk_tensor *other);
MTK_API mtk_tensor *mtk_lt(mtk_ctx *ctx, mtk_tensor *input, mtk_tensor *other);
MTK_API mtk_tensor *mtk_le(mtk_ctx *ctx, mtk_tensor *input, mtk_tensor *other);
MTK_API mtk_tensor *mtk_gt(mtk_ctx *ctx, mtk_tensor *input, mtk_tensor *other);
MTK_API mtk_tensor *mtk_ge(mtk_ctx *ctx, mtk_tensor *input, mtk_tensor *other);
MTK_API mtk_tensor *mtk_logical_and(mtk_ctx *ctx, mtk_tensor *input, mtk_tensor *other);
MTK_API mtk_tensor *mtk_logical_or(mtk_ctx *ctx, mtk_tensor *input, mtk_tensor *other);
MTK_API mtk_tensor *mtk_logical_xor(mtk_ctx *ctx, mtk_tensor *input, mtk_tensor *other);
MTK_API mtk_tensor *mtk_bitwise_and(mtk_ctx *ctx, mtk_tensor *input, mtk_tensor *other);
MTK_API mtk_tensor *mtk_bitwise_or(mtk_ctx *ctx, mtk_tensor *input, mtk_tensor *other);
MTK_API mtk_tensor *mtk_bitwise_xor(mtk_ctx *ctx, mtk_tensor *input, mtk_tensor *other);

/* ---- binary, tensor with a Python number on the right (torch.mul(x, 2)) */
MTK_API mtk_tensor *mtk_add_scalar(mtk_ctx *ctx, mtk_tensor *input, mtk_value other);
MTK_API mtk_tensor *mtk_sub_scalar(mtk_ctx *ctx, mtk_tensor *input, mtk_value other);
MTK_API mtk_tensor *mtk_mul_scalar(mtk_ctx *ctx, mtk_tensor *input, mtk_value other);
MTK_API mtk_tensor *mtk_div_scalar(mtk_ctx *ctx, mtk_tensor *input, mtk_value other);
MTK_API mtk_tensor *mtk_floor_divide_scalar(mtk_ctx *ctx, mtk_tensor *input, mtk_value other);
MTK_API mtk_tensor *mtk_remainder_scalar(mtk_ctx *ctx, mtk_tensor *input, mtk_value other);
MTK_API mtk_tensor *mtk_fmod_scalar(mtk_ctx *ctx, mtk_tensor *input, mtk_value other);
MTK_API mtk_tensor *mtk_pow_scalar(mtk_ctx *ctx, mtk_tensor *input, mtk_value exponent);
MTK_API mtk_tensor *mtk_eq_scalar(mtk_ctx *ctx, mtk_tensor *input, mtk_value other);
MTK_API mtk_tensor *mtk_ne_scalar(mtk_ctx *ctx, mtk_tensor *input, mtk_value other);
MTK_API mtk_tensor *mtk_lt_scalar(mtk_ctx *ctx, mtk_tensor *input, mtk_value other);
MTK_API mtk_tensor *mtk_le_scalar(mtk_ctx *ctx, mtk_tensor *input, mtk_value other);
MTK_API mtk_tensor *mtk_gt_scalar(mtk_ctx *ctx, mtk_tensor *input, mtk_value other);
MTK_API mtk_tensor *mtk_ge_scalar(mtk_ctx *ctx, mtk_tensor *input, mtk_value other);

/* ---- binary with options */
/* input + alpha * other; alpha a number value (torch.add(..., alpha=)) */
MTK_API mtk_tensor *mtk_add_alpha(mtk_ctx *ctx, mtk_tensor *input, mtk_tensor *other, mtk_value alpha);
MTK_API mtk_tensor *mtk_sub_alpha(mtk_ctx *ctx, mtk_tensor *input, mtk_tensor *other, mtk_value alpha);
/* other - input (torch.rsub); other may be a number or a tensor value */
MTK_API mtk_tensor *mtk_rsub(mtk_ctx *ctx, mtk_tensor *input, mtk_value other);
/* torch.div(input, other, rounding_mode=...): NULL, "trunc" or "floor";
 * other may be a number or a tensor value */
MTK_API mtk_tensor *mtk_div_rounding(mtk_ctx *ctx, mtk_tensor *input, mtk_value other, const char *rounding_mode);
/* torch.pow(base, exponent) with a number base */
MTK_API mtk_tensor *mtk_pow_scalar_base(mtk_ctx *ctx, mtk_value base, mtk_tensor *exponent);

/* ---- ternary */
/* torch.where(condition, input, other): condition bool; result dtype
 * torch.result_type(input, other); all three broadcast */
MTK_API mtk_tensor *mtk_where(mtk_ctx *ctx, mtk_tensor *condition, mtk_tensor *input, mtk_tensor *other);
/* the same with number or tensor values for input and other */
MTK_API mtk_tensor *mtk_where_values(mtk_ctx *ctx, mtk_tensor *condition, mtk_value input, mtk_value other);
/* torch.clamp(input, min, max): each bound None (mtk_value_none()), a
 * number, or a tensor value; not both None */
MTK_API mtk_tensor *mtk_clamp(mtk_ctx *ctx, mtk_tensor *input, mtk_value min, mtk_value max);
/* torch.lerp(input, end, weight): input + weight * (end - input); end
 * (and a weight tensor with dimensions) must have input's dtype; weight a
 * number or a tensor value */
MTK_API mtk_tensor *mtk_lerp(mtk_ctx *ctx, mtk_tensor *input, mtk_tensor *end, mtk_value weight);
/* torch.addcmul / torch.addcdiv(input, tensor1, tensor2, value=value):
 * input + value * tensor1 * tensor2 (or / tensor2), the three promoted;
 * addcdiv refuses two integral tensor1/tensor2 */
MTK_API mtk_tensor *mtk_addcmul(mtk_ctx *ctx, mtk_tensor *input, mtk_tensor *tensor1, mtk_tensor *tensor2, mtk_value value);
MTK_API mtk_tensor *mtk_addcdiv(mtk_ctx *ctx, mtk_tensor *input, mtk_tensor *tensor1, mtk_tensor *tensor2, mtk_value value);
/* F.glu(input, dim): a * sigmoid(b) for the halves a, b of input along dim
 * (whose size must be even) */
MTK_API mtk_tensor *mtk_glu(mtk_ctx *ctx, mtk_tensor *input, int64_t dim);

#ifdef __cplusplus
}
#endif
#endif
