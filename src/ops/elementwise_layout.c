/* Output strides of element-wise ops as torch's meta device computes them.
 *
 * On device='meta', PyTorch runs each element-wise op's Python reference
 * (torch._refs): type conversions, broadcasts and a chain of primitive
 * ops, each giving its result the strides of the torch._prims rule
 * (mtk_ti_output_strides).  For most ops that is one primitive over the
 * inputs; relu, clamp, the activations, floor division, logical ops and a
 * few more chain several, and in corner cases (size-1 dims with odd
 * strides, layouts that are both contiguous and channels-last) the chain
 * decides the strides.  This file replays those chains on layouts.  (On
 * cpu, torch lays outputs out by its TensorIterator instead:
 * elementwise_layout_cpu.c.) */
#include "ops/elementwise_kernel.h"

#include <string.h>

ew_lay ew_lay_of(const mtk_tensor *t, mtk_device op_device)
{
    ew_lay l;
    l.t = *t;
    l.t.storage = NULL;
    /* a 0-dim cpu tensor is a "cpu scalar" only among tensors of another
     * device; in an op on cpu it is an operand like any other, as a 0-dim
     * meta tensor is on meta (torch's cpu TensorIterator agrees) */
    if (t->flags & MTK_TENSOR_WRAPPED_NUMBER) l.kind = EW_LAY_NUMBER;
    else if (t->ndim == 0 && t->device == MTK_DEVICE_CPU && op_device != MTK_DEVICE_CPU) l.kind = EW_LAY_CPU_SCALAR;
    else l.kind = EW_LAY_TENSOR;
    return l;
}

ew_lay ew_lay_scalar(void)
{
    ew_lay l;
    memset(&l, 0, sizeof l);
    l.t.device = MTK_DEVICE_META; /* a 0-dim tensor on the op's device, not a cpu scalar */
    l.t.dtype = MTK_FLOAT32;
    l.kind = EW_LAY_TENSOR;
    return l;
}

ew_lay ew_lay_number(void)
{
    ew_lay l;
    memset(&l, 0, sizeof l);
    l.t.device = MTK_DEVICE_CPU;
    l.t.dtype = MTK_INT64;
    l.kind = EW_LAY_NUMBER;
    return l;
}

/* numbers and cpu scalars are 0-dim cpu tensors to mtk_ti_output_strides;
 * every other operand takes part, whatever its device */
static void as_operand(const ew_lay *l, mtk_tensor *out)
{
    *out = l->t;
    if (l->kind != EW_LAY_TENSOR) {
        out->ndim = 0;
        out->device = MTK_DEVICE_CPU;
    } else {
        out->device = MTK_DEVICE_META;
    }
}

void ew_lay_common_shape(int32_t n, const ew_lay *ops, int64_t *shape, int32_t *ndim)
{
    *ndim = 0;
    for (int32_t k = 0; k < n; k++)
        if (ops[k].kind != EW_LAY_NUMBER && ops[k].t.ndim > *ndim) *ndim = ops[k].t.ndim;
    for (int32_t i = 0; i < *ndim; i++) shape[i] = 1;
    for (int32_t k = 0; k < n; k++) {
        if (ops[k].kind == EW_LAY_NUMBER) continue;
        int32_t off = *ndim - ops[k].t.ndim;
        for (int32_t i = 0; i < ops[k].t.ndim; i++)
            if (ops[k].t.shape[i] != 1) shape[off + i] = ops[k].t.shape[i];
    }
}

ew_lay ew_lay_elem(int32_t n, const ew_lay *ops)
{
    ew_lay r;
    memset(&r, 0, sizeof r);
    mtk_tensor operands[EW_MAX_LAY];
    const mtk_tensor *ptrs[EW_MAX_LAY];
    r.kind = EW_LAY_NUMBER;
    for (int32_t k = 0; k < n; k++) {
        as_operand(&ops[k], &operands[k]);
        ptrs[k] = &operands[k];
        if (ops[k].kind == EW_LAY_TENSOR) r.kind = EW_LAY_TENSOR;
        else if (ops[k].kind == EW_LAY_CPU_SCALAR && r.kind == EW_LAY_NUMBER) r.kind = EW_LAY_CPU_SCALAR;
        if (ops[k].kind == EW_LAY_TENSOR || r.t.dtype == 0) r.t.dtype = ops[k].t.dtype;
    }
    ew_lay_common_shape(n, ops, r.t.shape, &r.t.ndim);
    r.t.device = r.kind == EW_LAY_TENSOR ? MTK_DEVICE_META : MTK_DEVICE_CPU;
    mtk_ti_output_strides(ptrs, n, r.t.shape, r.t.ndim, r.t.stride);
    return r;
}

ew_lay ew_lay_elem1(ew_lay a) { return ew_lay_elem(1, &a); }

ew_lay ew_lay_elem2(ew_lay a, ew_lay b)
{
    ew_lay ops[2] = { a, b };
    return ew_lay_elem(2, ops);
}

ew_lay ew_lay_elem3(ew_lay a, ew_lay b, ew_lay c)
{
    ew_lay ops[3] = { a, b, c };
    return ew_lay_elem(3, ops);
}

void ew_lay_broadcast(int32_t n, ew_lay *ops)
{
    int64_t shape[MTK_MAX_DIMS];
    int32_t ndim;
    ew_lay_common_shape(n, ops, shape, &ndim);
    for (int32_t k = 0; k < n; k++) {
        mtk_tensor *t = &ops[k].t;
        if (ops[k].kind != EW_LAY_TENSOR) continue;
        if (t->ndim == ndim && memcmp(t->shape, shape, (size_t)ndim * sizeof *shape) == 0) continue;
        int64_t stride[MTK_MAX_DIMS];
        mtk_expand_strides(t, shape, ndim, stride);
        t->ndim = ndim;
        memcpy(t->shape, shape, (size_t)ndim * sizeof *shape);
        memcpy(t->stride, stride, (size_t)ndim * sizeof *stride);
    }
}

ew_lay ew_lay_convert(ew_lay a, bool changes)
{
    if (!changes || a.kind != EW_LAY_TENSOR || a.t.ndim == 0) return a;
    if (mtk_tensor_is_non_overlapping_and_dense(&a.t)) return a;
    return ew_lay_elem1(a); /* empty_like */
}

ew_lay ew_lay_to(ew_lay a, bool changes)
{
    if (!changes || a.kind != EW_LAY_TENSOR || a.t.ndim == 0) return a;
    int64_t stride[MTK_MAX_DIMS];
    mtk_dense_strides_like(&a.t, stride);
    memcpy(a.t.stride, stride, (size_t)a.t.ndim * sizeof *stride);
    return a;
}

mtk_dtype ew_opmath(mtk_dtype d)
{
    return d == MTK_FLOAT16 || d == MTK_BFLOAT16 ? MTK_FLOAT32 : d;
}

/* ------------------------------------------------------------- recipes */

/* clamp(a, min, max) as torch._refs.clamp: for each bound,
 * where(ge(a, bound) | isnan(a), a, bound) (le for max) */
static ew_lay clamp_chain(ew_lay a, const ew_lay *min, const ew_lay *max)
{
    const ew_lay *bounds[2] = { min, max };
    for (int32_t i = 0; i < 2; i++) {
        if (!bounds[i]) continue;
        ew_lay bound = *bounds[i];
        ew_lay isnan = ew_lay_elem2(a, a);
        ew_lay cond = ew_lay_elem2(ew_lay_elem2(a, bound), isnan);
        /* a number bound reaches where() as a scalar tensor on a's device */
        ew_lay where_bound = bound.kind == EW_LAY_NUMBER ? ew_lay_scalar() : bound;
        a = ew_lay_elem3(cond, a, where_bound);
    }
    return a;
}

ew_lay ew_lay_clamp(ew_lay a, const ew_lay *min, const ew_lay *max, mtk_dtype compute)
{
    ew_lay x = ew_lay_convert(a, a.t.dtype != compute);
    ew_lay lo, hi;
    if (min) lo = ew_lay_convert(*min, min->t.dtype != compute);
    if (max) hi = ew_lay_convert(*max, max->t.dtype != compute);
    return clamp_chain(x, min ? &lo : NULL, max ? &hi : NULL);
}

/* softplus(a) with beta given (aten passes beta=1): where(a*beta >
 * threshold, a, log1p(exp(a*beta)) / beta) */
static ew_lay softplus_chain(ew_lay a)
{
    ew_lay scaled = ew_lay_elem1(a);
    ew_lay rhs = ew_lay_elem1(ew_lay_elem1(ew_lay_elem1(scaled)));
    return ew_lay_elem3(ew_lay_elem1(scaled), a, rhs);
}

ew_lay ew_lay_activation(ew_recipe recipe, ew_lay a, bool tanh_approximation)
{
    mtk_dtype opmath = ew_opmath(a.t.dtype);
    ew_lay x = ew_lay_convert(a, opmath != a.t.dtype);
    ew_lay s = ew_lay_scalar(), number = ew_lay_number();
    switch (recipe) {
    case EW_R_EMPTY_LIKE:
        return a.kind == EW_LAY_TENSOR ? ew_lay_elem1(a) : a;
    case EW_R_RELU: { /* where(le(a, 0), 0, a); a bool `a` meets the int 0 as int64 */
        bool promotes = x.t.dtype == MTK_BOOL;
        ew_lay le = ew_lay_elem1(ew_lay_convert(x, promotes));   /* prims.convert_element_type */
        return ew_lay_elem3(le, s, ew_lay_to(x, promotes));       /* where.ScalarSelf: Tensor.to */
    }
    case EW_R_GELU:
        if (tanh_approximation) { /* 0.5*a * (1 + tanh(k * (a + c * a*a*a))) */
            ew_lay cube = ew_lay_elem2(ew_lay_elem2(x, x), x);
            ew_lay inner = ew_lay_elem1(ew_lay_elem2(x, ew_lay_elem1(cube)));
            return ew_lay_elem2(ew_lay_elem1(x), ew_lay_elem1(ew_lay_elem1(inner)));
        } /* a*0.5 * (1 + erf(a * k)) */
        return ew_lay_elem2(ew_lay_elem1(x), ew_lay_elem1(ew_lay_elem1(ew_lay_elem1(x))));
    case EW_R_LEAKY_RELU: /* where(a > 0, a, a * slope) */
        return ew_lay_elem3(ew_lay_elem1(x), x, ew_lay_elem1(x));
    case EW_R_ELU: /* where(a > 0, scale*a, c * expm1(a * input_scale)) */
        return ew_lay_elem3(ew_lay_elem1(x), ew_lay_elem1(x), ew_lay_elem1(ew_lay_elem1(ew_lay_elem1(x))));
    case EW_R_SELU: /* scale * where(a > 0, a, alpha * expm1(a)) */
        return ew_lay_elem1(ew_lay_elem3(ew_lay_elem1(x), x, ew_lay_elem1(ew_lay_elem1(x))));
    case EW_R_SOFTPLUS:
        return softplus_chain(x);
    case EW_R_MISH: /* a * tanh(softplus(a)); tanh makes an integral a's softplus float, so
                        the product converts a itself */
        return ew_lay_elem2(ew_lay_convert(x, !mtk_dtype_is_floating(x.t.dtype)),
                            ew_lay_elem1(softplus_chain(x)));
    case EW_R_HARDTANH:
        return clamp_chain(x, &number, &number);
    case EW_R_HARDSWISH:
    case EW_R_HARDSIGMOID: { /* [self *] clamp(clamp(self + 3, min=0), max=6) / 6, in opmath */
        ew_lay y = ew_lay_to(a, opmath != a.t.dtype);
        ew_lay c = clamp_chain(clamp_chain(ew_lay_elem1(y), &number, NULL), NULL, &number);
        return recipe == EW_R_HARDSWISH ? ew_lay_elem1(ew_lay_elem2(y, c)) : ew_lay_elem1(c);
    }
    default:
        return ew_lay_elem1(x);
    }
}

ew_lay ew_lay_unary(ew_recipe recipe, ew_lay a, mtk_dtype compute)
{
    ew_lay x = ew_lay_convert(a, compute != a.t.dtype);
    switch (recipe) {
    case EW_R_ISINF: /* floats: abs(a) == inf; others: zeros_like(a) */
        if (!mtk_dtype_is_floating(a.t.dtype)) return ew_lay_elem1(a);
        return ew_lay_elem1(ew_lay_elem1(x));
    case EW_R_ISFINITE: /* floats: (a == a) * (abs(a) != inf); others: ones_like(a) */
        if (!mtk_dtype_is_floating(a.t.dtype)) return ew_lay_elem1(a);
        return ew_lay_elem2(ew_lay_elem1(x), ew_lay_elem1(ew_lay_elem1(x)));
    case EW_R_PRIM:
        return ew_lay_elem1(x);
    default:
        return ew_lay_activation(recipe, a, false);
    }
}

/* floor division as torch._refs._floor_divide_float / _integer */
static ew_lay floor_divide_chain(ew_lay a, ew_lay b, mtk_dtype compute)
{
    if (a.kind == EW_LAY_NUMBER) a = ew_lay_scalar();
    if (b.kind == EW_LAY_NUMBER) b = ew_lay_scalar();
    if (mtk_dtype_is_floating(compute)) {
        ew_lay s = ew_lay_scalar();
        ew_lay mod = ew_lay_elem2(a, b);
        ew_lay div = ew_lay_elem2(ew_lay_elem2(a, mod), b);
        ew_lay signs_differ = ew_lay_elem2(ew_lay_elem1(a), ew_lay_elem1(b));
        ew_lay mask = ew_lay_elem2(ew_lay_elem1(mod), signs_differ);
        div = ew_lay_elem3(mask, ew_lay_elem1(div), div);
        ew_lay floor_div = ew_lay_elem1(div);
        mask = ew_lay_elem1(ew_lay_elem2(div, floor_div));
        floor_div = ew_lay_elem3(mask, ew_lay_elem1(floor_div), floor_div);
        ew_lay basic = ew_lay_elem2(a, b);
        ew_lay abs_zero = ew_lay_elem1(s);
        ew_lay copysign = ew_lay_elem3(ew_lay_elem1(basic), ew_lay_elem1(abs_zero), abs_zero);
        floor_div = ew_lay_elem3(ew_lay_elem1(div), floor_div, copysign);
        return ew_lay_elem3(ew_lay_elem1(b), floor_div, basic);
    }
    if (compute == MTK_UINT8) return ew_lay_elem2(a, b);
    ew_lay ops[2] = { a, b };
    ew_lay_broadcast(2, ops);
    ew_lay offset = ew_lay_elem2(ew_lay_elem2(ew_lay_elem1(ops[0]), ew_lay_elem1(ops[1])),
                                 ew_lay_elem1(ew_lay_elem2(ops[0], ops[1])));
    return ew_lay_elem2(ew_lay_elem2(ops[0], ops[1]), ew_lay_convert(offset, true));
}

ew_lay ew_lay_binary(ew_recipe recipe, ew_lay a, ew_lay b, mtk_dtype compute, const ew_lay_options *opt)
{
    ew_lay ops[2] = { ew_lay_convert(a, a.t.dtype != compute), ew_lay_convert(b, b.t.dtype != compute) };
    switch (recipe) {
    case EW_R_ADD_ALPHA: /* b = b * alpha, then a + b */
        ew_lay_broadcast(2, ops);
        if (ops[1].kind == EW_LAY_TENSOR) ops[1] = ew_lay_elem1(ops[1]);
        return ew_lay_elem(2, ops);
    case EW_R_TRUNC_DIVIDE: { /* integers: a / b; floats and bool: trunc(a / b) */
        ew_lay_broadcast(2, ops);
        ew_lay q = ew_lay_elem(2, ops);
        return mtk_dtype_is_integral(compute, false) ? q : ew_lay_elem1(q);
    }
    case EW_R_FLOOR_DIVIDE:
        ew_lay_broadcast(2, ops);
        return floor_divide_chain(ops[0], ops[1], compute);
    case EW_R_LOGICAL: /* non-bool operands become (x != 0) first */
        ew_lay_broadcast(2, ops);
        if (compute != MTK_BOOL)
            for (int32_t i = 0; i < 2; i++)
                if (ops[i].kind != EW_LAY_NUMBER) ops[i] = ew_lay_elem1(ops[i]);
        return ew_lay_elem(2, ops);
    case EW_R_POW:
        if (opt && opt->exponent_is_number) {
            if (opt->number == 1.0) return ew_lay_convert(ops[0], true); /* clone */
            if (opt->number == 2.0 || opt->number == 0.5) return ew_lay_elem1(ops[0]);
        } else if (opt && opt->base_is_number) {
            if (opt->number == 1.0) return ew_lay_elem1(ops[1]); /* fill */
            if (opt->number == 2.0 && mtk_dtype_is_floating(compute)) return ew_lay_elem1(ops[1]); /* exp2 */
        }
        ew_lay_broadcast(2, ops);
        return ew_lay_elem(2, ops);
    default:
        ew_lay_broadcast(2, ops);
        return ew_lay_elem(2, ops);
    }
}

ew_lay ew_lay_where(ew_lay cond, ew_lay a, ew_lay b, mtk_dtype result)
{
    ew_lay ops[3] = { cond, a, b };
    bool both_tensors = a.kind != EW_LAY_NUMBER && b.kind != EW_LAY_NUMBER;
    for (int32_t i = 1; i < 3; i++) {
        if (ops[i].kind == EW_LAY_NUMBER) ops[i] = ew_lay_scalar(); /* scalar_tensor */
        else if (both_tensors) ops[i] = ew_lay_convert(ops[i], ops[i].t.dtype != result);
        else ops[i] = ew_lay_to(ops[i], ops[i].t.dtype != result); /* Tensor.to */
    }
    ew_lay_broadcast(3, ops);
    return ew_lay_elem(3, ops);
}
