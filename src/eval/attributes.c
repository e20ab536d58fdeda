/* Tensor attributes (x.shape, x.dtype, x.ndim, x.nbytes, x.T, ...) and the
 * tensor methods that read metadata rather than run an op (x.size(),
 * x.stride(1), x.numel(), x.dim(), ...), with torch's results and errors. */
#include "eval/eval_internal.h"
#include "mtk/op.h"

#include <string.h>

/* A torch.Size (or a plain tuple) of n ints. */
static bool int_tuple(evaluator *ev, const node *n, const int64_t *items, int32_t count, bool is_size,
                      mtk_value *out)
{
    mtk_value t = mtk_value_list(ev->ctx, count, true);
    if (t.kind == MTK_VALUE_NONE) return eval_fail_at(ev, n);
    for (int32_t i = 0; i < count; i++) t.as.list.items[i] = mtk_value_int(items[i]);
    t.as.list.is_size = is_size;
    *out = t;
    return true;
}

/* ------------------------------------------------------------ attributes */

typedef enum member {
    ATTR_SHAPE, ATTR_DTYPE, ATTR_DEVICE, ATTR_NDIM, ATTR_NBYTES, ATTR_ITEMSIZE, ATTR_T, ATTR_MT,
    ATTR_H, ATTR_MH, ATTR_IS_META, ATTR_IS_CPU, ATTR_IS_CUDA, ATTR_REQUIRES_GRAD, ATTR_IS_LEAF,
    ATTR_GRAD, ATTR_DATA,
    METHOD_SIZE, METHOD_STRIDE, METHOD_NUMEL, METHOD_NELEMENT, METHOD_DIM, METHOD_NDIMENSION,
    METHOD_ELEMENT_SIZE, METHOD_STORAGE_OFFSET, METHOD_IS_CONTIGUOUS, METHOD_IS_FLOATING_POINT,
    METHOD_IS_COMPLEX, METHOD_GET_DEVICE
} member;

/* One table: every member's name, whether it is a method, and the type
 * of the attribute's value (for "'int' object is not callable"). */
static const struct member_info {
    const char *name;
    member id;
    bool method;
    const char *type;
} members[] = {
    { "shape", ATTR_SHAPE, false, "torch.Size" },
    { "dtype", ATTR_DTYPE, false, "torch.dtype" },
    { "device", ATTR_DEVICE, false, "torch.device" },
    { "ndim", ATTR_NDIM, false, "int" },
    { "nbytes", ATTR_NBYTES, false, "int" },
    { "itemsize", ATTR_ITEMSIZE, false, "int" },
    { "T", ATTR_T, false, "Tensor" },
    { "mT", ATTR_MT, false, "Tensor" },
    { "H", ATTR_H, false, "Tensor" },
    { "mH", ATTR_MH, false, "Tensor" },
    { "is_meta", ATTR_IS_META, false, "bool" },
    { "is_cpu", ATTR_IS_CPU, false, "bool" },
    { "is_cuda", ATTR_IS_CUDA, false, "bool" },
    { "requires_grad", ATTR_REQUIRES_GRAD, false, "bool" },
    { "is_leaf", ATTR_IS_LEAF, false, "bool" },
    { "grad", ATTR_GRAD, false, "NoneType" },
    { "data", ATTR_DATA, false, "Tensor" },
    { "size", METHOD_SIZE, true, NULL },
    { "stride", METHOD_STRIDE, true, NULL },
    { "numel", METHOD_NUMEL, true, NULL },
    { "nelement", METHOD_NELEMENT, true, NULL },
    { "dim", METHOD_DIM, true, NULL },
    { "ndimension", METHOD_NDIMENSION, true, NULL },
    { "element_size", METHOD_ELEMENT_SIZE, true, NULL },
    { "storage_offset", METHOD_STORAGE_OFFSET, true, NULL },
    { "is_contiguous", METHOD_IS_CONTIGUOUS, true, NULL },
    { "is_floating_point", METHOD_IS_FLOATING_POINT, true, NULL },
    { "is_complex", METHOD_IS_COMPLEX, true, NULL },
    { "get_device", METHOD_GET_DEVICE, true, NULL },
};
enum { MEMBER_COUNT = sizeof members / sizeof members[0] };

int32_t eval_member_names(const char **names, int32_t cap)
{
    int32_t n = 0;
    for (int32_t i = 0; i < MEMBER_COUNT && n < cap; i++) names[n++] = members[i].name;
    return n;
}

static const struct member_info *find_member(const char *name)
{
    for (int32_t i = 0; i < MEMBER_COUNT; i++)
        if (strcmp(members[i].name, name) == 0) return &members[i];
    return NULL;
}

/* x.T: dims reversed (torch deprecates it beside 2 dims, but still does
 * it); x.mT: the last two swapped, matrices or batches of them only. */
static bool transposed(evaluator *ev, const node *n, const mtk_value *x, bool matrix, mtk_value *out)
{
    const mtk_tensor *t = x->as.tensor;
    if (matrix) {
        if (t->ndim < 2)
            return eval_error_at(ev, n, MTK_ERR_SHAPE,
                                 "tensor.mT is only supported on matrices or batches of matrices. Got %d-D tensor.",
                                 (int)t->ndim);
        mtk_value args[3] = { *x, mtk_value_int(-2), mtk_value_int(-1) };
        return eval_op(ev, n, "transpose", args, 3, out);
    }
    int64_t dims[MTK_MAX_DIMS];
    for (int32_t d = 0; d < t->ndim; d++) dims[d] = t->ndim - 1 - d;
    mtk_value args[2] = { *x, mtk_value_int_list(ev->ctx, dims, t->ndim) };
    if (args[1].kind == MTK_VALUE_NONE) return eval_fail_at(ev, n);
    return eval_op(ev, n, "permute", args, 2, out);
}

static bool tensor_attribute(evaluator *ev, const node *n, const mtk_value *x, member id, mtk_value *out)
{
    const mtk_tensor *t = x->as.tensor;
    switch (id) {
    case ATTR_SHAPE: return int_tuple(ev, n, t->shape, t->ndim, true, out);
    case ATTR_DTYPE: *out = mtk_value_dtype(t->dtype); return true;
    case ATTR_DEVICE: *out = mtk_value_device(t->device); return true;
    case ATTR_NDIM: *out = mtk_value_int(t->ndim); return true;
    case ATTR_NBYTES: {
        int64_t numel = mtk_tensor_numel(t), size = (int64_t)mtk_dtype_size(t->dtype), bytes;
        if (__builtin_mul_overflow(numel, size, &bytes))
            return eval_error_at(ev, n, MTK_ERR_OVERFLOW, "nbytes of %lld elements does not fit in int64",
                                 (long long)numel);
        *out = mtk_value_int(bytes);
        return true;
    }
    case ATTR_ITEMSIZE: *out = mtk_value_int((int64_t)mtk_dtype_size(t->dtype)); return true;
    case ATTR_T:
    case ATTR_H: return transposed(ev, n, x, false, out);
    case ATTR_MT:
    case ATTR_MH: return transposed(ev, n, x, true, out);
    case ATTR_IS_META: *out = mtk_value_bool(t->device == MTK_DEVICE_META); return true;
    case ATTR_IS_CPU: *out = mtk_value_bool(t->device == MTK_DEVICE_CPU); return true;
    case ATTR_IS_CUDA: *out = mtk_value_bool(t->device >= MTK_DEVICE_CUDA(0)); return true;
    case ATTR_REQUIRES_GRAD: *out = mtk_value_bool((t->flags & MTK_TENSOR_REQUIRES_GRAD) != 0); return true;
    case ATTR_IS_LEAF: *out = mtk_value_bool(true); return true;
    case ATTR_GRAD: *out = mtk_value_none(); return true;
    case ATTR_DATA: *out = *x; return true;
    default: break;
    }
    return eval_error_at(ev, n, MTK_ERR_INVALID_ARGUMENT, "'%s' is not an attribute", n->name);
}

bool eval_attribute(evaluator *ev, const node *n, mtk_value *out)
{
    mtk_value x;
    if (!eval_node(ev, n->items[0], &x)) return false;
    const struct member_info *m = find_member(n->name);
    if (x.kind == MTK_VALUE_TENSOR && x.as.tensor) {
        if (m && !m->method) return tensor_attribute(ev, n, &x, m->id, out);
        if (m || mtk_op_find(n->name))
            return eval_error_at(ev, n, MTK_ERR_INVALID_ARGUMENT,
                                 "'%s' is a method of Tensor: call it, as in x.%s(...)", n->name, n->name);
        const char *names[64];
        int32_t count = eval_member_names(names, 64);
        const char *near = eval_nearest_name(n->name, names, count);
        if (near)
            return eval_error_at(ev, n, MTK_ERR_INVALID_ARGUMENT,
                                 "'Tensor' object has no attribute '%s'; did you mean '%s'%s?", n->name, near,
                                 find_member(near)->method ? " (a method: x.NAME(...))" : "");
        return eval_error_at(ev, n, MTK_ERR_INVALID_ARGUMENT,
                             "'Tensor' object has no attribute '%s' (tensors have shape, dtype, device, "
                             "ndim, nbytes, itemsize, T, mT; methods are the ops of 'mtk ops' and size(), "
                             "stride(), numel(), dim(), ...)",
                             n->name);
    }
    if (x.kind == MTK_VALUE_DTYPE && strcmp(n->name, "itemsize") == 0) {
        *out = mtk_value_int((int64_t)mtk_dtype_size(x.as.dtype));
        return true;
    }
    if (x.kind == MTK_VALUE_DTYPE && strcmp(n->name, "is_floating_point") == 0) {
        *out = mtk_value_bool(mtk_dtype_is_floating(x.as.dtype));
        return true;
    }
    return eval_error_at(ev, n, MTK_ERR_INVALID_ARGUMENT, "'%s' object has no attribute '%s'",
                         x.kind == MTK_VALUE_TUPLE && x.as.list.is_size ? "torch.Size" : mtk_value_type_name(&x),
                         n->name);
}

/* --------------------------------------------------------------- methods */

/* The optional `dim` of size() and stride(): positional or keyword. */
static bool optional_dim(evaluator *ev, const node *n, bool *has_dim, int64_t *dim)
{
    int32_t nargs = n->count - 1; /* after the receiver */
    *has_dim = false;
    if (nargs == 0) return true;
    if (nargs > 1 || (n->nkw == 1 && strcmp(n->kw_names[0], "dim") != 0))
        return eval_error_at(ev, n, MTK_ERR_INVALID_ARGUMENT,
                             "%s() takes at most one argument, dim (an int or None)", n->name);
    mtk_value v;
    if (!eval_node(ev, n->items[1], &v)) return false;
    if (v.kind == MTK_VALUE_NONE) return true;
    if (v.kind != MTK_VALUE_INT)
        return eval_error_at(ev, n, MTK_ERR_INVALID_ARGUMENT, "%s(): argument 'dim' must be int, not %s", n->name,
                             mtk_value_type_name(&v));
    *has_dim = true;
    *dim = v.as.i;
    return true;
}

static bool no_arguments(evaluator *ev, const node *n)
{
    if (n->count == 1) return true;
    return eval_error_at(ev, n, MTK_ERR_INVALID_ARGUMENT, "%s() takes no arguments (%d given)", n->name,
                         (int)(n->count - 1));
}

/* size(dim) and stride(dim): the dim wrapped as torch wraps it. */
static bool size_or_stride(evaluator *ev, const node *n, const mtk_tensor *t, bool stride, mtk_value *out)
{
    bool has_dim;
    int64_t dim = 0;
    if (!optional_dim(ev, n, &has_dim, &dim)) return false;
    const int64_t *items = stride ? t->stride : t->shape;
    if (!has_dim) return int_tuple(ev, n, items, t->ndim, !stride, out);
    if (t->ndim == 0)
        return eval_error_at(ev, n, MTK_ERR_INDEX, "Dimension specified as %lld but tensor has no dimensions",
                             (long long)dim);
    int32_t d = mtk_wrap_dim(ev->ctx, dim, t->ndim);
    if (d < 0) return eval_fail_at(ev, n);
    *out = mtk_value_int(items[d]);
    return true;
}

static bool tensor_method(evaluator *ev, const node *n, const mtk_tensor *t, member id, mtk_value *out)
{
    switch (id) {
    case METHOD_SIZE: return size_or_stride(ev, n, t, false, out);
    case METHOD_STRIDE: return size_or_stride(ev, n, t, true, out);
    case METHOD_IS_CONTIGUOUS:
        /* memory_format= is read by the op-free check only for the default */
        if (n->count > 1)
            return eval_error_at(ev, n, MTK_ERR_NOT_IMPLEMENTED,
                                 "is_contiguous(memory_format=...) is not supported; use is_contiguous()");
        *out = mtk_value_bool(mtk_tensor_is_contiguous(t));
        return true;
    default: break;
    }
    if (!no_arguments(ev, n)) return false;
    switch (id) {
    case METHOD_NUMEL:
    case METHOD_NELEMENT: *out = mtk_value_int(mtk_tensor_numel(t)); return true;
    case METHOD_DIM:
    case METHOD_NDIMENSION: *out = mtk_value_int(t->ndim); return true;
    case METHOD_ELEMENT_SIZE: *out = mtk_value_int((int64_t)mtk_dtype_size(t->dtype)); return true;
    case METHOD_STORAGE_OFFSET: *out = mtk_value_int(t->storage_offset); return true;
    case METHOD_IS_FLOATING_POINT: *out = mtk_value_bool(mtk_dtype_is_floating(t->dtype)); return true;
    case METHOD_IS_COMPLEX: *out = mtk_value_bool(false); return true;
    case METHOD_GET_DEVICE:
        *out = mtk_value_int(t->device >= MTK_DEVICE_CUDA(0) ? (int64_t)(t->device - MTK_DEVICE_CUDA(0)) : -1);
        return true;
    default: break;
    }
    return eval_error_at(ev, n, MTK_ERR_INVALID_ARGUMENT, "'%s' is not a method", n->name);
}

bool eval_builtin_method(evaluator *ev, const node *n, const mtk_value *receiver, mtk_value *out, bool *ok)
{
    const struct member_info *m = find_member(n->name);
    if (receiver->kind == MTK_VALUE_TUPLE && receiver->as.list.is_size && strcmp(n->name, "numel") == 0 &&
        n->count == 1) {
        /* torch.Size.numel(): the product of the sizes */
        int64_t numel = 1;
        for (int32_t i = 0; i < receiver->as.list.count; i++)
            if (__builtin_mul_overflow(numel, receiver->as.list.items[i].as.i, &numel)) {
                *ok = eval_error_at(ev, n, MTK_ERR_OVERFLOW, "torch.Size.numel() does not fit in int64");
                return true;
            }
        *out = mtk_value_int(numel);
        *ok = true;
        return true;
    }
    if (!m || receiver->kind != MTK_VALUE_TENSOR || !receiver->as.tensor) return false;
    if (!m->method) {
        *ok = eval_error_at(ev, n, MTK_ERR_INVALID_ARGUMENT,
                            "'%s' object is not callable (x.%s is an attribute: write it without "
                            "parentheses)",
                            m->type, n->name);
        return true;
    }
    *ok = tensor_method(ev, n, receiver->as.tensor, m->id, out);
    return true;
}
