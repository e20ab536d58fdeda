/* Output strides of element-wise ops on device cpu, as torch's cpu kernels
 * lay them out.
 *
 * On cpu, PyTorch runs an element-wise op as one TensorIterator: the
 * inputs of another dtype are first converted to the common dtype with
 * Tensor.to (dense strides kept, others made dense), then the iterator
 * lays its output out by its own rule (mtk_ti_cpu_output_strides), in
 * which Python numbers and 0-dim tensors are operands like any other.
 * That rule differs from the meta device's (elementwise_layout.c) where
 * size-1 dims have odd strides and where dims have size 0.  A few ops are
 * not one iterator on cpu: hardtanh and relu6 write into
 * torch.empty_like(input), isinf/isfinite chain several iterators or, for
 * integral inputs, fill zeros_like/ones_like. */
#include "ops/elementwise_kernel.h"

#include <string.h>

ew_lay ew_lay_iter(int32_t n, const ew_lay *ops)
{
    mtk_tensor operands[EW_MAX_LAY];
    const mtk_tensor *ptrs[EW_MAX_LAY];
    ew_lay r;
    memset(&r, 0, sizeof r);
    if (n > EW_MAX_LAY) n = EW_MAX_LAY;
    for (int32_t k = 0; k < n; k++) {
        operands[k] = ops[k].t;
        if (ops[k].kind != EW_LAY_TENSOR) operands[k].ndim = 0; /* a number is a 0-dim operand */
        ptrs[k] = &operands[k];
    }
    r.kind = EW_LAY_TENSOR;
    r.t.dtype = n > 0 ? ops[0].t.dtype : MTK_FLOAT32;
    r.t.device = MTK_DEVICE_CPU;
    ew_lay_common_shape(n, ops, r.t.shape, &r.t.ndim);
    mtk_ti_cpu_output_strides(ptrs, n, r.t.shape, r.t.ndim, r.t.stride);
    return r;
}

ew_lay ew_lay_iter_to(int32_t n, const ew_lay *ops, mtk_dtype common)
{
    ew_lay converted[EW_MAX_LAY];
    if (n > EW_MAX_LAY) n = EW_MAX_LAY;
    for (int32_t k = 0; k < n; k++) {
        converted[k] = ew_lay_to(ops[k], ops[k].t.dtype != common);
        converted[k].t.dtype = common;
    }
    return ew_lay_iter(n, converted);
}

ew_lay ew_lay_iter1(ew_lay a) { return ew_lay_iter(1, &a); }

ew_lay ew_lay_iter2(ew_lay a, ew_lay b)
{
    ew_lay ops[2] = { a, b };
    return ew_lay_iter(2, ops);
}

ew_lay ew_lay_empty_like(ew_lay a)
{
    if (a.kind != EW_LAY_TENSOR) a.t.ndim = 0;
    a.kind = EW_LAY_TENSOR;
    return ew_lay_to(a, true);
}

ew_lay ew_lay_cpu_unary(ew_recipe recipe, ew_lay a, mtk_dtype compute)
{
    ew_lay number = ew_lay_number();
    switch (recipe) {
    case EW_R_ISINF: /* floats: abs(a) == inf; others: zeros_like(a) */
        if (!mtk_dtype_is_floating(a.t.dtype)) return ew_lay_empty_like(a);
        return ew_lay_iter2(ew_lay_iter1(a), number);
    case EW_R_ISFINITE: /* floats: (a == a) * (abs(a) != inf); others: ones_like(a) */
        if (!mtk_dtype_is_floating(a.t.dtype)) return ew_lay_empty_like(a);
        return ew_lay_iter2(ew_lay_iter2(a, a), ew_lay_iter2(ew_lay_iter1(a), number));
    default:
        return ew_lay_cpu_activation(recipe, a, compute);
    }
}

ew_lay ew_lay_cpu_activation(ew_recipe recipe, ew_lay a, mtk_dtype compute)
{
    if (recipe == EW_R_HARDTANH) return ew_lay_empty_like(a); /* hardtanh's out= into empty_like */
    return ew_lay_iter_to(1, &a, compute);
}
