/* Type promotion as torch.result_type computes it, and Python numbers as
 * wrapped 0-dim tensors. */
#include "ops/elementwise.h"
#include "core/scalar.h"

mtk_dtype mtk_promote_types_checked(mtk_ctx *ctx, mtk_dtype a, mtk_dtype b)
{
    mtk_dtype r = mtk_promote_types(a, b);
    if (r == MTK_DTYPE_UNDEFINED && (mtk_dtype_get(a) || mtk_dtype_get(b)))
        mtk_error(ctx, MTK_ERR_DTYPE,
                  "Promotion for Float8 Types is not supported, attempted to promote %s and %s",
                  mtk_dtype_cpp_name(a), mtk_dtype_cpp_name(b));
    return r;
}

/* The three priority classes of PyTorch's ResultTypeState. */
typedef struct result_state {
    mtk_dtype dim;     /* tensors with at least one dimension */
    mtk_dtype zero;    /* 0-dim tensors                        */
    mtk_dtype wrapped; /* Python numbers                       */
    bool float8_wins;  /* torch._refs' rule instead of result_type's */
    bool failed;
} result_state;

/* promote_types, or torch._refs' get_higher_dtype for float8: a float8
 * type wins over every other type, two different ones fail */
static mtk_dtype promote(mtk_ctx *ctx, result_state *s, mtk_dtype a, mtk_dtype b)
{
    if (s->float8_wins && a != b && mtk_dtype_is_float8(a) != mtk_dtype_is_float8(b))
        return mtk_dtype_is_float8(a) ? a : b;
    mtk_dtype r = mtk_promote_types_checked(ctx, a, b);
    if (r == MTK_DTYPE_UNDEFINED) s->failed = true;
    return r;
}

static void promote_into(mtk_ctx *ctx, result_state *s, mtk_dtype *slot, mtk_dtype d)
{
    if (*slot == MTK_DTYPE_UNDEFINED) {
        *slot = d;
        return;
    }
    mtk_dtype r = promote(ctx, s, *slot, d);
    if (r != MTK_DTYPE_UNDEFINED) *slot = r;
}

/* PyTorch's combine_categories: a lower class counts only when it is of a
 * higher category (a float below integers, anything below bool). */
static mtk_dtype combine(mtk_ctx *ctx, result_state *s, mtk_dtype higher, mtk_dtype lower)
{
    if (mtk_dtype_is_floating(higher)) return higher;
    if (higher == MTK_BOOL || mtk_dtype_is_floating(lower)) {
        if (higher == MTK_DTYPE_UNDEFINED) return lower;
        if (lower == MTK_DTYPE_UNDEFINED) return higher;
        return promote(ctx, s, higher, lower);
    }
    return higher != MTK_DTYPE_UNDEFINED ? higher : lower;
}

static mtk_dtype result_type(mtk_ctx *ctx, const mtk_value *args, int32_t n, bool float8_wins)
{
    result_state s = { MTK_DTYPE_UNDEFINED, MTK_DTYPE_UNDEFINED, MTK_DTYPE_UNDEFINED, float8_wins, false };
    for (int32_t i = 0; i < n; i++) {
        const mtk_value *v = &args[i];
        switch (v->kind) {
        case MTK_VALUE_TENSOR: {
            const mtk_tensor *t = v->as.tensor;
            if (!t) break;
            if (t->flags & MTK_TENSOR_WRAPPED_NUMBER) {
                mtk_dtype d = mtk_dtype_is_floating(t->dtype) ? mtk_ctx_dtype(ctx) : t->dtype;
                promote_into(ctx, &s, &s.wrapped, d);
            } else if (t->ndim > 0) {
                promote_into(ctx, &s, &s.dim, t->dtype);
            } else {
                promote_into(ctx, &s, &s.zero, t->dtype);
            }
            break;
        }
        case MTK_VALUE_BOOL: promote_into(ctx, &s, &s.wrapped, MTK_BOOL); break;
        case MTK_VALUE_INT: promote_into(ctx, &s, &s.wrapped, MTK_INT64); break;
        case MTK_VALUE_FLOAT: promote_into(ctx, &s, &s.wrapped, mtk_ctx_dtype(ctx)); break;
        default: break;
        }
        if (s.failed) return MTK_DTYPE_UNDEFINED;
    }
    mtk_dtype lower = combine(ctx, &s, s.zero, s.wrapped);
    if (s.failed) return MTK_DTYPE_UNDEFINED;
    mtk_dtype r = combine(ctx, &s, s.dim, lower);
    if (s.failed) return MTK_DTYPE_UNDEFINED;
    if (r == MTK_DTYPE_UNDEFINED)
        mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "result_type: no tensor or number to promote");
    return r;
}

mtk_dtype mtk_result_type(mtk_ctx *ctx, const mtk_value *args, int32_t n)
{
    return result_type(ctx, args, n, false);
}

mtk_dtype mtk_meta_result_type(mtk_ctx *ctx, const mtk_value *args, int32_t n)
{
    return result_type(ctx, args, n, true);
}

mtk_tensor *mtk_wrap_number(mtk_ctx *ctx, const mtk_value *number)
{
    mtk_dtype dtype;
    switch (number->kind) {
    case MTK_VALUE_BOOL: dtype = MTK_BOOL; break;
    case MTK_VALUE_INT: dtype = MTK_INT64; break;
    case MTK_VALUE_FLOAT: dtype = MTK_FLOAT64; break;
    default:
        mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "expected a number, got %s", mtk_value_type_name(number));
        return NULL;
    }
    mtk_tensor *t = mtk_tensor_new(ctx, dtype, NULL, 0, NULL, MTK_DEVICE_CPU);
    if (!t || !mtk_tensor_alloc_storage(t)) return NULL;
    t->flags |= MTK_TENSOR_WRAPPED_NUMBER;
    void *data = mtk_tensor_data(t);
    if (number->kind == MTK_VALUE_FLOAT) mtk_store_f64(dtype, data, number->as.f);
    else mtk_store_i64(dtype, data, number->kind == MTK_VALUE_INT ? number->as.i : number->as.b);
    return t;
}

mtk_tensor *mtk_call_operand(mtk_op_call *call, int32_t i)
{
    const mtk_value *v = &call->args[i];
    if (v->kind == MTK_VALUE_TENSOR) return v->as.tensor;
    if (mtk_value_is_number(v)) return mtk_wrap_number(call->ctx, v);
    mtk_call_error(call, MTK_ERR_INVALID_ARGUMENT, "argument %d must be a Tensor or a number, not %s",
                   (int)i + 1, mtk_value_type_name(v));
    return NULL;
}
