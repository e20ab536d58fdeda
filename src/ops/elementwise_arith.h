/* Element functions of the binary arithmetic, comparison, logical and
 * bitwise ops (see ew_fns in elementwise_kernel.h). */
#ifndef MTK_OPS_ELEMENTWISE_ARITH_H
#define MTK_OPS_ELEMENTWISE_ARITH_H

#include "ops/elementwise_kernel.h"

extern const ew_fns ew_add_fns;       /* a + b                         */
extern const ew_fns ew_sub_fns;       /* a - b                         */
extern const ew_fns ew_add_alpha_fns; /* a + p->f[0]|p->i[0] * b (fused) */
extern const ew_fns ew_mul_fns;
extern const ew_fns ew_true_div_fns;
extern const ew_fns ew_trunc_div_fns;  /* integers: zero divisor sets p->zero_division */
extern const ew_fns ew_floor_div_fns;
extern const ew_fns ew_remainder_fns;  /* sign of the divisor (Python's %) */
extern const ew_fns ew_fmod_fns;       /* sign of the dividend (C's fmod)  */
extern const ew_fns ew_pow_fns;
extern const ew_fns ew_maximum_fns;    /* NaN propagates */
extern const ew_fns ew_minimum_fns;
extern const ew_fns ew_atan2_fns;
extern const ew_fns ew_eq_fns, ew_ne_fns, ew_lt_fns, ew_le_fns, ew_gt_fns, ew_ge_fns;
extern const ew_fns ew_logical_and_fns, ew_logical_or_fns, ew_logical_xor_fns;
extern const ew_fns ew_bitwise_and_fns, ew_bitwise_or_fns, ew_bitwise_xor_fns;

/* pow with a Python-number exponent (PyTorch's Tensor_Scalar kernel): the
 * functions read the exponent from p->f[0] / p->i[0] and take the exact
 * shortcuts PyTorch takes (x*x for 2, sqrt for 0.5, 1 for 0, ...).
 * `floating`: the compute dtype is floating. */
const ew_fns *ew_pow_scalar_fns(double exponent, bool floating);

/* Python's float floor division and modulo (sign of the divisor). */
double ew_floor_divide_f64(double a, double b);
double ew_remainder_f64(double a, double b);

#endif
