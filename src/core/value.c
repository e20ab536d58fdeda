/* Boxed values for ops called by name. */
#include "mtk/value.h"

#include <string.h>

mtk_value mtk_value_list(mtk_ctx *ctx, int32_t count, bool is_tuple)
{
    mtk_value v = mtk_value_none();
    if (count < 0) {
        mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "a list of %d items", (int)count);
        return v;
    }
    mtk_value *items = mtk_ctx_alloc(ctx, (size_t)(count > 0 ? count : 1) * sizeof *items);
    if (!items) return v;
    v.kind = is_tuple ? MTK_VALUE_TUPLE : MTK_VALUE_LIST;
    v.as.list.items = items; /* zeroed memory is a list of None */
    v.as.list.count = count;
    v.as.list.is_size = false;
    return v;
}

mtk_value mtk_value_int_list(mtk_ctx *ctx, const int64_t *items, int32_t count)
{
    mtk_value v = mtk_value_none();
    if (count < 0) {
        mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "a list of %d items", (int)count);
        return v;
    }
    /* every item is written: no need to zero the memory first */
    mtk_value *list = mtk_ctx_alloc_uninit(ctx, (size_t)(count > 0 ? count : 1) * sizeof *list);
    if (!list) return v;
    for (int32_t i = 0; i < count; i++) list[i] = mtk_value_int(items[i]);
    v.kind = MTK_VALUE_LIST;
    v.as.list.items = list;
    v.as.list.count = count;
    v.as.list.is_size = false;
    return v;
}

bool mtk_value_is_number(const mtk_value *v)
{
    return v->kind == MTK_VALUE_BOOL || v->kind == MTK_VALUE_INT || v->kind == MTK_VALUE_FLOAT;
}

double mtk_value_as_double(const mtk_value *v)
{
    switch (v->kind) {
    case MTK_VALUE_BOOL: return v->as.b ? 1.0 : 0.0;
    case MTK_VALUE_INT: return (double)v->as.i;
    case MTK_VALUE_FLOAT: return v->as.f;
    default: return 0.0;
    }
}

int32_t mtk_value_to_ints(mtk_ctx *ctx, const mtk_value *v, int64_t *out, int32_t cap,
                          const char *op, const char *arg)
{
    if (v->kind == MTK_VALUE_INT) {
        if (cap < 1) goto too_many;
        out[0] = v->as.i;
        return 1;
    }
    if (v->kind != MTK_VALUE_LIST && v->kind != MTK_VALUE_TUPLE) {
        mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT,
                  "%s(): argument '%s' must be tuple of ints, not %s", op, arg, mtk_value_type_name(v));
        return -1;
    }
    if (v->as.list.count > cap) goto too_many;
    for (int32_t i = 0; i < v->as.list.count; i++) {
        const mtk_value *item = &v->as.list.items[i];
        if (item->kind != MTK_VALUE_INT) {
            mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT,
                      "%s(): argument '%s' must be tuple of ints, but found element of type %s at pos %d",
                      op, arg, mtk_value_type_name(item), (int)i);
            return -1;
        }
        out[i] = item->as.i;
    }
    return v->as.list.count;
too_many:
    mtk_error(ctx, MTK_ERR_SHAPE, "%s(): argument '%s' has more than %d items", op, arg, (int)cap);
    return -1;
}

const char *mtk_value_type_name(const mtk_value *v)
{
    switch (v->kind) {
    case MTK_VALUE_NONE: return "NoneType";
    case MTK_VALUE_BOOL: return "bool";
    case MTK_VALUE_INT: return "int";
    case MTK_VALUE_FLOAT: return "float";
    case MTK_VALUE_STRING: return "str";
    case MTK_VALUE_DTYPE: return "torch.dtype";
    case MTK_VALUE_DEVICE: return "torch.device";
    case MTK_VALUE_TENSOR: return "Tensor";
    case MTK_VALUE_LIST: return "list";
    case MTK_VALUE_TUPLE: return "tuple";
    }
    return "unknown";
}
