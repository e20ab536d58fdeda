/* Op rows of the elementwise family (see registry.h for the row format).
 *
 * Most rows go through three family macros, so that this file is the only
 * list: elementwise.h expands them into declarations of the info objects,
 * and here they default to MTK_OP rows.  Each info object is defined next
 * to its kernels (elementwise_unary.c, elementwise_binary.c,
 * elementwise_activation.c).
 *   EW_UNARY_OP(ID, name, signature)       info: ew_unary_info
 *   EW_BINARY_OP(ID, name, signature)      info: ew_binary_info
 *   EW_ACTIVATION_OP(ID, name, signature)  info: ew_activation_info
 * Further columns (.saved = ...) follow the signature. */
#ifndef EW_UNARY_OP
#define EW_UNARY_OP(ID, name_, sig, ...) \
    MTK_OP(ID, .name = name_, \
           .signature = sig, \
           .meta = mtk_ew_unary_meta, .cpu = mtk_ew_unary_cpu, .cost = mtk_outputs_cost, \
           .info = &mtk_ew_info_##ID, __VA_ARGS__)
#define EW_LIST_DEFAULT_UNARY
#endif
#ifndef EW_BINARY_OP
#define EW_BINARY_OP(ID, name_, sig, ...) \
    MTK_OP(ID, .name = name_, \
           .signature = sig, \
           .meta = mtk_ew_binary_meta, .cpu = mtk_ew_binary_cpu, .cost = mtk_outputs_cost, \
           .info = &mtk_ew_info_##ID, __VA_ARGS__)
#define EW_LIST_DEFAULT_BINARY
#endif
#ifndef EW_ACTIVATION_OP
#define EW_ACTIVATION_OP(ID, name_, sig, ...) \
    MTK_OP(ID, .name = name_, \
           .signature = sig, \
           .meta = mtk_ew_activation_meta, .cpu = mtk_ew_activation_cpu, .cost = mtk_outputs_cost, \
           .info = &mtk_ew_info_##ID, __VA_ARGS__)
#define EW_LIST_DEFAULT_ACTIVATION
#endif
#ifndef EW_OTHER_OP
#define EW_OTHER_OP(ID, name_, sig, meta_, cpu_, flags_, ...) MTK_OP(ID, .name = name_, \
           .signature = sig, \
           .meta = meta_, .cpu = cpu_, .cost = mtk_outputs_cost, \
           .flags = flags_, __VA_ARGS__)
#define EW_LIST_DEFAULT_OTHER
#endif

/* ---- unary, same dtype */
EW_UNARY_OP(NEG, "neg", "neg(Tensor input) -> Tensor")
EW_UNARY_OP(NEGATIVE, "negative", "negative(Tensor input) -> Tensor")
EW_UNARY_OP(ABS, "abs", "abs(Tensor input) -> Tensor", .saved = ag_saved_input)
EW_UNARY_OP(SIGN, "sign", "sign(Tensor input) -> Tensor")
EW_UNARY_OP(FLOOR, "floor", "floor(Tensor input) -> Tensor")
EW_UNARY_OP(CEIL, "ceil", "ceil(Tensor input) -> Tensor")
EW_UNARY_OP(TRUNC, "trunc", "trunc(Tensor input) -> Tensor")
EW_UNARY_OP(RELU, "relu", "relu(Tensor input, bool inplace=False) -> Tensor", .saved = ag_saved_result)
EW_UNARY_OP(SQUARE, "square", "square(Tensor input) -> Tensor", .saved = ag_saved_input)
EW_UNARY_OP(BITWISE_NOT, "bitwise_not", "bitwise_not(Tensor input) -> Tensor")
EW_UNARY_OP(LOGICAL_NOT, "logical_not", "logical_not(Tensor input) -> Tensor")
EW_OTHER_OP(POSITIVE, "positive", "positive(Tensor input) -> Tensor", mtk_ew_positive_meta, NULL, MTK_OP_NO_KERNEL)
EW_OTHER_OP(ROUND, "round", "round(Tensor input, *, int decimals=0) -> Tensor", mtk_ew_round_meta, mtk_ew_round_cpu, 0)

/* ---- unary, integers promote to the default float dtype */
EW_UNARY_OP(EXP, "exp", "exp(Tensor input) -> Tensor", .saved = ag_saved_result)
EW_UNARY_OP(EXP2, "exp2", "exp2(Tensor input) -> Tensor", .saved = ag_saved_result)
EW_UNARY_OP(EXPM1, "expm1", "expm1(Tensor input) -> Tensor", .saved = ag_saved_result)
EW_UNARY_OP(LOG, "log", "log(Tensor input) -> Tensor", .saved = ag_saved_input)
EW_UNARY_OP(LOG2, "log2", "log2(Tensor input) -> Tensor", .saved = ag_saved_input)
EW_UNARY_OP(LOG10, "log10", "log10(Tensor input) -> Tensor", .saved = ag_saved_input)
EW_UNARY_OP(LOG1P, "log1p", "log1p(Tensor input) -> Tensor", .saved = ag_saved_input)
EW_UNARY_OP(SQRT, "sqrt", "sqrt(Tensor input) -> Tensor", .saved = ag_saved_result)
EW_UNARY_OP(RSQRT, "rsqrt", "rsqrt(Tensor input) -> Tensor", .saved = ag_saved_result)
EW_UNARY_OP(SIN, "sin", "sin(Tensor input) -> Tensor", .saved = ag_saved_input)
EW_UNARY_OP(COS, "cos", "cos(Tensor input) -> Tensor", .saved = ag_saved_input)
EW_UNARY_OP(TAN, "tan", "tan(Tensor input) -> Tensor", .saved = ag_saved_input)
EW_UNARY_OP(ASIN, "asin", "asin(Tensor input) -> Tensor", .saved = ag_saved_input)
EW_UNARY_OP(ACOS, "acos", "acos(Tensor input) -> Tensor", .saved = ag_saved_input)
EW_UNARY_OP(ATAN, "atan", "atan(Tensor input) -> Tensor", .saved = ag_saved_input)
EW_UNARY_OP(SINH, "sinh", "sinh(Tensor input) -> Tensor", .saved = ag_saved_input)
EW_UNARY_OP(COSH, "cosh", "cosh(Tensor input) -> Tensor", .saved = ag_saved_input)
EW_UNARY_OP(TANH, "tanh", "tanh(Tensor input) -> Tensor", .saved = ag_saved_result)
EW_UNARY_OP(SIGMOID, "sigmoid", "sigmoid(Tensor input) -> Tensor", .saved = ag_saved_result)
EW_UNARY_OP(ERF, "erf", "erf(Tensor input) -> Tensor", .saved = ag_saved_input)
EW_UNARY_OP(ERFC, "erfc", "erfc(Tensor input) -> Tensor", .saved = ag_saved_input)
EW_UNARY_OP(RECIPROCAL, "reciprocal", "reciprocal(Tensor input) -> Tensor", .saved = ag_saved_result)

/* ---- unary predicates -> bool */
EW_UNARY_OP(ISNAN, "isnan", "isnan(Tensor input) -> Tensor")
EW_UNARY_OP(ISINF, "isinf", "isinf(Tensor input) -> Tensor")
EW_UNARY_OP(ISFINITE, "isfinite", "isfinite(Tensor input) -> Tensor")

/* ---- torch.nn.functional activations */
EW_ACTIVATION_OP(SILU, "silu", "silu(Tensor input, bool inplace=False) -> Tensor", .saved = ag_saved_input)
EW_ACTIVATION_OP(GELU, "gelu", "gelu(Tensor input, *, str approximate='none') -> Tensor", .saved = ag_saved_input)
EW_ACTIVATION_OP(SOFTPLUS, "softplus", "softplus(Tensor input, Scalar beta=1, Scalar threshold=20) -> Tensor", .saved = ag_saved_input)
EW_ACTIVATION_OP(MISH, "mish", "mish(Tensor input, bool inplace=False) -> Tensor", .saved = ag_saved_input)
EW_ACTIVATION_OP(ELU, "elu", "elu(Tensor input, float alpha=1.0, bool inplace=False) -> Tensor")
EW_ACTIVATION_OP(SELU, "selu", "selu(Tensor input, bool inplace=False) -> Tensor")
EW_ACTIVATION_OP(LEAKY_RELU, "leaky_relu", "leaky_relu(Tensor input, Scalar negative_slope=0.01, bool inplace=False) -> Tensor", .saved = ag_saved_input)
EW_ACTIVATION_OP(RELU6, "relu6", "relu6(Tensor input, bool inplace=False) -> Tensor", .saved = ag_saved_input)
EW_ACTIVATION_OP(HARDSWISH, "hardswish", "hardswish(Tensor input, bool inplace=False) -> Tensor", .saved = ag_saved_input)
EW_ACTIVATION_OP(HARDSIGMOID, "hardsigmoid", "hardsigmoid(Tensor input, bool inplace=False) -> Tensor", .saved = ag_saved_input)
EW_ACTIVATION_OP(HARDTANH, "hardtanh", "hardtanh(Tensor input, float min_val=-1.0, float max_val=1.0, bool inplace=False) -> Tensor", .saved = ag_saved_input)

/* ---- binary arithmetic */
EW_BINARY_OP(ADD, "add", "add(Tensor|Scalar input, Tensor|Scalar other, *, Scalar alpha=1) -> Tensor")
EW_BINARY_OP(SUB, "sub", "sub(Tensor|Scalar input, Tensor|Scalar other, *, Scalar alpha=1) -> Tensor")
EW_BINARY_OP(RSUB, "rsub", "rsub(Tensor input, Tensor|Scalar other, Scalar alpha=None) -> Tensor")
EW_BINARY_OP(MUL, "mul", "mul(Tensor|Scalar input, Tensor|Scalar other) -> Tensor", .saved = ag_saved_mul)
EW_BINARY_OP(DIV, "div", "div(Tensor|Scalar input, Tensor|Scalar other, *, str? rounding_mode=None) -> Tensor", .saved = ag_saved_div)
EW_BINARY_OP(TRUE_DIVIDE, "true_divide", "true_divide(Tensor|Scalar input, Tensor|Scalar other) -> Tensor", .saved = ag_saved_div)
EW_BINARY_OP(FLOOR_DIVIDE, "floor_divide", "floor_divide(Tensor|Scalar input, Tensor|Scalar other) -> Tensor")
EW_BINARY_OP(REMAINDER, "remainder", "remainder(Tensor|Scalar input, Tensor|Scalar other) -> Tensor")
EW_BINARY_OP(FMOD, "fmod", "fmod(Tensor input, Tensor|Scalar other) -> Tensor")
EW_BINARY_OP(POW, "pow", "pow(Tensor|Scalar input, Tensor|Scalar exponent) -> Tensor", .saved = ag_saved_pow)
EW_BINARY_OP(MAXIMUM, "maximum", "maximum(Tensor input, Tensor other) -> Tensor")
EW_BINARY_OP(MINIMUM, "minimum", "minimum(Tensor input, Tensor other) -> Tensor")
EW_BINARY_OP(ATAN2, "atan2", "atan2(Tensor input, Tensor other) -> Tensor")

/* ---- comparisons and logical ops -> bool */
EW_BINARY_OP(EQ, "eq", "eq(Tensor input, Tensor|Scalar other) -> Tensor")
EW_BINARY_OP(NE, "ne", "ne(Tensor input, Tensor|Scalar other) -> Tensor")
EW_BINARY_OP(LT, "lt", "lt(Tensor input, Tensor|Scalar other) -> Tensor")
EW_BINARY_OP(LE, "le", "le(Tensor input, Tensor|Scalar other) -> Tensor")
EW_BINARY_OP(GT, "gt", "gt(Tensor input, Tensor|Scalar other) -> Tensor")
EW_BINARY_OP(GE, "ge", "ge(Tensor input, Tensor|Scalar other) -> Tensor")
EW_BINARY_OP(LOGICAL_AND, "logical_and", "logical_and(Tensor input, Tensor other) -> Tensor")
EW_BINARY_OP(LOGICAL_OR, "logical_or", "logical_or(Tensor input, Tensor other) -> Tensor")
EW_BINARY_OP(LOGICAL_XOR, "logical_xor", "logical_xor(Tensor input, Tensor other) -> Tensor")

/* ---- bitwise (integers and bool) */
EW_BINARY_OP(BITWISE_AND, "bitwise_and", "bitwise_and(Tensor|Scalar input, Tensor|Scalar other) -> Tensor")
EW_BINARY_OP(BITWISE_OR, "bitwise_or", "bitwise_or(Tensor|Scalar input, Tensor|Scalar other) -> Tensor")
EW_BINARY_OP(BITWISE_XOR, "bitwise_xor", "bitwise_xor(Tensor|Scalar input, Tensor|Scalar other) -> Tensor")

/* ---- ternary */
EW_OTHER_OP(WHERE, "where", "where(Tensor condition, Tensor|Scalar input, Tensor|Scalar other) -> Tensor", mtk_ew_where_meta, mtk_ew_where_cpu, 0)
EW_OTHER_OP(CLAMP, "clamp", "clamp(Tensor input, Tensor|Scalar? min=None, Tensor|Scalar? max=None) -> Tensor", mtk_ew_clamp_meta, mtk_ew_clamp_cpu, 0,
            .saved = ag_saved_clamp)
EW_OTHER_OP(CLIP, "clip", "clip(Tensor input, Tensor|Scalar? min=None, Tensor|Scalar? max=None) -> Tensor", mtk_ew_clamp_meta, mtk_ew_clamp_cpu, 0,
            .saved = ag_saved_clamp)

EW_OTHER_OP(LERP, "lerp", "lerp(Tensor input, Tensor end, Tensor|Scalar weight) -> Tensor", mtk_ew_lerp_meta, mtk_ew_lerp_cpu, 0)
EW_OTHER_OP(ADDCMUL, "addcmul", "addcmul(Tensor input, Tensor tensor1, Tensor tensor2, *, Scalar value=1) -> Tensor", mtk_ew_addc_meta, mtk_ew_addc_cpu, 0)
EW_OTHER_OP(ADDCDIV, "addcdiv", "addcdiv(Tensor input, Tensor tensor1, Tensor tensor2, *, Scalar value=1) -> Tensor", mtk_ew_addc_meta, mtk_ew_addc_cpu, 0)
EW_OTHER_OP(GLU, "glu", "glu(Tensor input, int dim=-1) -> Tensor", mtk_ew_glu_meta, mtk_ew_glu_cpu, 0)
#ifdef EW_LIST_DEFAULT_UNARY
#undef EW_UNARY_OP
#undef EW_LIST_DEFAULT_UNARY
#endif
#ifdef EW_LIST_DEFAULT_BINARY
#undef EW_BINARY_OP
#undef EW_LIST_DEFAULT_BINARY
#endif
#ifdef EW_LIST_DEFAULT_ACTIVATION
#undef EW_ACTIVATION_OP
#undef EW_LIST_DEFAULT_ACTIVATION
#endif
#ifdef EW_LIST_DEFAULT_OTHER
#undef EW_OTHER_OP
#undef EW_LIST_DEFAULT_OTHER
#endif
