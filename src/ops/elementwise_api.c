/* The typed C API of the elementwise ops (include/mtk/ops/elementwise.h):
 * each function fills a call of its op row and runs it. */
#include "mtk/ops/elementwise.h"
#include "ops/registry.h"

/* Runs op `id` with its leading arguments set to args[0..n); the rest
 * keep their signature defaults. */
static mtk_tensor *run(mtk_ctx *ctx, mtk_op_id id, const mtk_value *args, int32_t n)
{
    mtk_op_call call;
    mtk_op_call_init(&call, ctx, mtk_op_by_id(id));
    for (int32_t i = 0; i < n; i++) call.args[i] = args[i];
    return mtk_op_run_tensor(&call);
}

static mtk_tensor *run1(mtk_ctx *ctx, mtk_op_id id, mtk_tensor *input)
{
    mtk_value args[1] = { mtk_value_tensor(input) };
    return run(ctx, id, args, 1);
}

static mtk_tensor *run2(mtk_ctx *ctx, mtk_op_id id, mtk_value a, mtk_value b)
{
    mtk_value args[2] = { a, b };
    return run(ctx, id, args, 2);
}

#define UNARY(fn, ID) \
    mtk_tensor *mtk_##fn(mtk_ctx *ctx, mtk_tensor *input) { return run1(ctx, OPID_##ID, input); }

UNARY(neg, NEG)
UNARY(abs, ABS)
UNARY(sign, SIGN)
UNARY(floor, FLOOR)
UNARY(ceil, CEIL)
UNARY(trunc, TRUNC)
UNARY(round, ROUND)
UNARY(relu, RELU)
UNARY(square, SQUARE)
UNARY(bitwise_not, BITWISE_NOT)
UNARY(logical_not, LOGICAL_NOT)
UNARY(positive, POSITIVE)
UNARY(exp, EXP)
UNARY(exp2, EXP2)
UNARY(expm1, EXPM1)
UNARY(log, LOG)
UNARY(log2, LOG2)
UNARY(log10, LOG10)
UNARY(log1p, LOG1P)
UNARY(sqrt, SQRT)
UNARY(rsqrt, RSQRT)
UNARY(sin, SIN)
UNARY(cos, COS)
UNARY(tan, TAN)
UNARY(asin, ASIN)
UNARY(acos, ACOS)
UNARY(atan, ATAN)
UNARY(sinh, SINH)
UNARY(cosh, COSH)
UNARY(tanh, TANH)
UNARY(sigmoid, SIGMOID)
UNARY(erf, ERF)
UNARY(erfc, ERFC)
UNARY(reciprocal, RECIPROCAL)
UNARY(isnan, ISNAN)
UNARY(isinf, ISINF)
UNARY(isfinite, ISFINITE)
UNARY(silu, SILU)
UNARY(mish, MISH)
UNARY(selu, SELU)
UNARY(relu6, RELU6)
UNARY(hardswish, HARDSWISH)
UNARY(hardsigmoid, HARDSIGMOID)

mtk_tensor *mtk_round_decimals(mtk_ctx *ctx, mtk_tensor *input, int64_t decimals)
{
    return run2(ctx, OPID_ROUND, mtk_value_tensor(input), mtk_value_int(decimals));
}

mtk_tensor *mtk_gelu(mtk_ctx *ctx, mtk_tensor *input, const char *approximate)
{
    return run2(ctx, OPID_GELU, mtk_value_tensor(input), mtk_value_string(approximate ? approximate : "none"));
}

mtk_tensor *mtk_softplus(mtk_ctx *ctx, mtk_tensor *input, double beta, double threshold)
{
    mtk_value args[3] = { mtk_value_tensor(input), mtk_value_float(beta), mtk_value_float(threshold) };
    return run(ctx, OPID_SOFTPLUS, args, 3);
}

mtk_tensor *mtk_elu(mtk_ctx *ctx, mtk_tensor *input, double alpha)
{
    return run2(ctx, OPID_ELU, mtk_value_tensor(input), mtk_value_float(alpha));
}

mtk_tensor *mtk_leaky_relu(mtk_ctx *ctx, mtk_tensor *input, double negative_slope)
{
    return run2(ctx, OPID_LEAKY_RELU, mtk_value_tensor(input), mtk_value_float(negative_slope));
}

mtk_tensor *mtk_hardtanh(mtk_ctx *ctx, mtk_tensor *input, double min_val, double max_val)
{
    mtk_value args[3] = { mtk_value_tensor(input), mtk_value_float(min_val), mtk_value_float(max_val) };
    return run(ctx, OPID_HARDTANH, args, 3);
}

#define BINARY(fn, ID)                                                                \
    mtk_tensor *mtk_##fn(mtk_ctx *ctx, mtk_tensor *input, mtk_tensor *other)          \
    {                                                                                 \
        return run2(ctx, OPID_##ID, mtk_value_tensor(input), mtk_value_tensor(other)); \
    }
#define BINARY_SCALAR(fn, ID)                                                      \
    mtk_tensor *mtk_##fn##_scalar(mtk_ctx *ctx, mtk_tensor *input, mtk_value other) \
    {                                                                              \
        return run2(ctx, OPID_##ID, mtk_value_tensor(input), other);               \
    }

BINARY(add, ADD)
BINARY(sub, SUB)
BINARY(mul, MUL)
BINARY(div, DIV)
BINARY(floor_divide, FLOOR_DIVIDE)
BINARY(remainder, REMAINDER)
BINARY(fmod, FMOD)
BINARY(pow, POW)
BINARY(maximum, MAXIMUM)
BINARY(minimum, MINIMUM)
BINARY(atan2, ATAN2)
BINARY(eq, EQ)
BINARY(ne, NE)
BINARY(lt, LT)
BINARY(le, LE)
BINARY(gt, GT)
BINARY(ge, GE)
BINARY(logical_and, LOGICAL_AND)
BINARY(logical_or, LOGICAL_OR)
BINARY(logical_xor, LOGICAL_XOR)
BINARY(bitwise_and, BITWISE_AND)
BINARY(bitwise_or, BITWISE_OR)
BINARY(bitwise_xor, BITWISE_XOR)

BINARY_SCALAR(add, ADD)
BINARY_SCALAR(sub, SUB)
BINARY_SCALAR(mul, MUL)
BINARY_SCALAR(div, DIV)
BINARY_SCALAR(floor_divide, FLOOR_DIVIDE)
BINARY_SCALAR(remainder, REMAINDER)
BINARY_SCALAR(fmod, FMOD)
BINARY_SCALAR(pow, POW)
BINARY_SCALAR(eq, EQ)
BINARY_SCALAR(ne, NE)
BINARY_SCALAR(lt, LT)
BINARY_SCALAR(le, LE)
BINARY_SCALAR(gt, GT)
BINARY_SCALAR(ge, GE)

mtk_tensor *mtk_add_alpha(mtk_ctx *ctx, mtk_tensor *input, mtk_tensor *other, mtk_value alpha)
{
    mtk_value args[3] = { mtk_value_tensor(input), mtk_value_tensor(other), alpha };
    return run(ctx, OPID_ADD, args, 3);
}

mtk_tensor *mtk_sub_alpha(mtk_ctx *ctx, mtk_tensor *input, mtk_tensor *other, mtk_value alpha)
{
    mtk_value args[3] = { mtk_value_tensor(input), mtk_value_tensor(other), alpha };
    return run(ctx, OPID_SUB, args, 3);
}

mtk_tensor *mtk_rsub(mtk_ctx *ctx, mtk_tensor *input, mtk_value other)
{
    return run2(ctx, OPID_RSUB, mtk_value_tensor(input), other);
}

mtk_tensor *mtk_div_rounding(mtk_ctx *ctx, mtk_tensor *input, mtk_value other, const char *rounding_mode)
{
    mtk_value args[3] = { mtk_value_tensor(input), other,
                          rounding_mode ? mtk_value_string(rounding_mode) : mtk_value_none() };
    return run(ctx, OPID_DIV, args, 3);
}

mtk_tensor *mtk_pow_scalar_base(mtk_ctx *ctx, mtk_value base, mtk_tensor *exponent)
{
    return run2(ctx, OPID_POW, base, mtk_value_tensor(exponent));
}

mtk_tensor *mtk_where(mtk_ctx *ctx, mtk_tensor *condition, mtk_tensor *input, mtk_tensor *other)
{
    return mtk_where_values(ctx, condition, mtk_value_tensor(input), mtk_value_tensor(other));
}

mtk_tensor *mtk_where_values(mtk_ctx *ctx, mtk_tensor *condition, mtk_value input, mtk_value other)
{
    mtk_value args[3] = { mtk_value_tensor(condition), input, other };
    return run(ctx, OPID_WHERE, args, 3);
}

mtk_tensor *mtk_clamp(mtk_ctx *ctx, mtk_tensor *input, mtk_value min, mtk_value max)
{
    mtk_value args[3] = { mtk_value_tensor(input), min, max };
    return run(ctx, OPID_CLAMP, args, 3);
}
