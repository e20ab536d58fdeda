/* Broadcasting, output strides and strided loops (see op_util.h). */
#include "op_util.h"
#include "core/scalar.h"

#include <assert.h>
#include <string.h>

bool mtk_broadcast_shapes(mtk_ctx *ctx, const char *op, const int64_t *a, int32_t na,
                          const int64_t *b, int32_t nb, int64_t *out, int32_t *nout)
{
    int32_t n = na > nb ? na : nb;
    if (n > MTK_MAX_DIMS)
        return mtk_error(ctx, MTK_ERR_SHAPE, "%s: %d dimensions is more than mtk supports", op, (int)n);
    for (int32_t i = n - 1; i >= 0; i--) {
        int32_t ia = i - (n - na), ib = i - (n - nb);
        int64_t sa = ia >= 0 ? a[ia] : 1, sb = ib >= 0 ? b[ib] : 1;
        if (sa != sb && sa != 1 && sb != 1)
            return mtk_error(ctx, MTK_ERR_SHAPE,
                             "%s: The size of tensor a (%lld) must match the size of tensor b (%lld) "
                             "at non-singleton dimension %d",
                             op, (long long)sa, (long long)sb, (int)i);
        out[i] = sa == 1 ? sb : sa;
    }
    *nout = n;
    return true;
}

/* operand strides in the broadcast shape, in elements (0 = broadcast) */
static void broadcast_elem_strides(const mtk_tensor *t, const int64_t *shape, int32_t ndim, int64_t *out)
{
    assert(t->ndim <= ndim); /* callers broadcast to a shape at least as long */
    int32_t offset = ndim - t->ndim;
    for (int32_t i = 0; i < ndim; i++) out[i] = 0;
    for (int32_t i = 0; i < t->ndim; i++)
        out[offset + i] = (t->shape[i] == 1 && shape[offset + i] != 1) ? 0 : t->stride[i];
}

void mtk_broadcast_byte_strides(const mtk_tensor *t, const int64_t *shape, int32_t ndim, int64_t *out)
{
    broadcast_elem_strides(t, shape, ndim, out);
    int64_t es = (int64_t)mtk_dtype_size(t->dtype);
    for (int32_t i = 0; i < ndim; i++) out[i] = ops_wrap_mul(out[i], es); /* wraps only when empty */
}

/* reorder_dimensions: perm[0] is the fastest-moving dim */
static void ti_permutation(int32_t n, const int64_t (*strides)[MTK_MAX_DIMS], const int64_t *shape,
                           int32_t ndim, int32_t *perm)
{
    for (int32_t i = 0; i < ndim; i++) perm[i] = ndim - 1 - i;
    for (int32_t i = 1; i < ndim; i++) {
        int32_t dim1 = i;
        for (int32_t dim0 = i - 1; dim0 >= 0; dim0--) {
            int32_t d0 = perm[dim0], d1 = perm[dim1];
            int comparison = 0;
            for (int32_t k = 0; k < n; k++) {
                int64_t s0 = strides[k][d0], s1 = strides[k][d1];
                if (s0 == 0 || s1 == 0) continue;
                if (s0 < s1) { comparison = -1; break; }
                if (s0 > s1) { comparison = 1; break; }
                if (shape[d0] > shape[d1]) { comparison = 1; break; }
            }
            if (comparison > 0) {
                int32_t tmp = perm[dim0];
                perm[dim0] = perm[dim1];
                perm[dim1] = tmp;
                dim1 = dim0;
            } else if (comparison < 0) {
                break;
            }
        }
    }
}

/* dense strides laying dims out in perm order (perm[0] fastest); a size-0
 * dim counts as 1, as PyTorch's make_contiguous_strides_for and
 * infer_dense_strides do (saturating as mtk_contiguous_strides does, so
 * the identity order gives exactly its strides) */
static void strides_from_perm(const int32_t *perm, const int64_t *shape, int32_t ndim, int64_t *stride_out)
{
    int64_t next = 1;
    for (int32_t i = 0; i < ndim; i++) {
        stride_out[perm[i]] = next;
        if (__builtin_mul_overflow(next, shape[perm[i]] > 1 ? shape[perm[i]] : 1, &next)) next = INT64_MAX;
    }
}

bool mtk_ti_all_contiguous(const mtk_tensor *const *inputs, int32_t ninputs, const int64_t *shape,
                           int32_t ndim)
{
    if (ndim == 4) return false; /* contiguous and channels-last at once: a tie to break */
    for (int32_t k = 0; k < ninputs; k++) {
        const mtk_tensor *t = inputs[k];
        if (t->flags & MTK_TENSOR_WRAPPED_NUMBER) return false;
        if (t->ndim != ndim) return false;
        for (int32_t i = 0; i < ndim; i++)
            if (t->shape[i] != shape[i]) return false;
        if (!mtk_tensor_is_contiguous(t)) return false;
    }
    return true;
}

int64_t ops_size_product(const int64_t *sizes, int32_t begin, int32_t end)
{
    for (int32_t i = begin; i < end; i++)
        if (sizes[i] == 0) return 0;
    int64_t p = 1;
    for (int32_t i = begin; i < end; i++)
        if (__builtin_mul_overflow(p, sizes[i], &p)) return INT64_MAX;
    return p;
}

bool ops_offset_of(mtk_op_call *call, int64_t offset, int64_t index, int64_t stride, int64_t *out)
{
    int64_t moved;
    if (!__builtin_mul_overflow(index, stride, &moved) && !__builtin_add_overflow(offset, moved, out)) return true;
    return mtk_call_error(call, MTK_ERR_OVERFLOW,
                          "the storage offset %lld + %lld * %lld (index times stride) does not fit in int64",
                          (long long)offset, (long long)index, (long long)stride);
}

void mtk_expand_strides(const mtk_tensor *t, const int64_t *shape, int32_t ndim, int64_t *out)
{
    for (int32_t i = ndim - 1; i >= 0; i--) {
        int32_t d = t->ndim - (ndim - i);
        int64_t size, stride;
        if (d >= 0) {
            size = t->shape[d];
            stride = t->stride[d];
        } else {
            size = 1;
            stride = i + 1 < ndim ? ops_wrap_mul(shape[i + 1], out[i + 1]) : 0; /* as torch's */
        }
        if (size != shape[i]) stride = 0;
        out[i] = stride;
    }
}

void mtk_ti_output_strides(const mtk_tensor *const *inputs, int32_t ninputs, const int64_t *shape,
                           int32_t ndim, int64_t *stride_out)
{
    /* the operands torch's meta sees: cpu scalars (0-dim cpu tensors,
     * Python numbers) drop out, the rest are expanded to the shape */
    enum { MAX_OPERANDS = 8 };
    if (mtk_ti_all_contiguous(inputs, ninputs, shape, ndim)) { /* the common case, decided at once */
        mtk_contiguous_strides(shape, ndim, stride_out);
        return;
    }
    int64_t strides[MAX_OPERANDS][MTK_MAX_DIMS];
    int32_t n = 0;
    bool contiguous = true, channels_last = true;
    for (int32_t k = 0; k < ninputs && n < MAX_OPERANDS; k++) {
        const mtk_tensor *t = inputs[k];
        if (t->ndim == 0 && t->device == MTK_DEVICE_CPU) continue;
        mtk_tensor view = *t;
        view.ndim = ndim;
        memcpy(view.shape, shape, (size_t)ndim * sizeof *shape);
        if (t->ndim == ndim && memcmp(t->shape, shape, (size_t)ndim * sizeof *shape) == 0)
            memcpy(view.stride, t->stride, (size_t)ndim * sizeof *shape);
        else
            mtk_expand_strides(t, shape, ndim, view.stride);
        memcpy(strides[n++], view.stride, (size_t)ndim * sizeof *shape);
        contiguous &= mtk_tensor_is_contiguous(&view);
        channels_last &= mtk_tensor_is_channels_last(&view);
    }
    if (ndim == 0) return;
    int32_t perm[MTK_MAX_DIMS];
    if (n == 0 || ndim == 1 || (contiguous && !channels_last)) {
        for (int32_t i = 0; i < ndim; i++) perm[i] = ndim - 1 - i;
    } else if (channels_last && !contiguous) {
        perm[0] = 1, perm[1] = 3, perm[2] = 2, perm[3] = 0;
    } else {
        ti_permutation(n, (const int64_t (*)[MTK_MAX_DIMS])strides, shape, ndim, perm);
    }
    strides_from_perm(perm, shape, ndim, stride_out);
}

/* TensorIterator's fast setup: inputs of one shape that are all
 * contiguous, all channels-last, or all non-overlapping and dense with
 * equal strides; false when none holds */
static bool ti_cpu_fast_setup(const mtk_tensor *const *inputs, int32_t n, const int64_t *shape, int32_t ndim,
                              int64_t *stride_out)
{
    bool contiguous = true, channels_last = true, same_dense = true;
    for (int32_t k = 0; k < n; k++) {
        const mtk_tensor *t = inputs[k];
        if (t->ndim != ndim || memcmp(t->shape, shape, (size_t)ndim * sizeof *shape) != 0) return false;
        contiguous &= mtk_tensor_is_contiguous(t);
        channels_last &= mtk_tensor_is_channels_last(t);
        same_dense &= mtk_tensor_is_non_overlapping_and_dense(t) &&
                      memcmp(t->stride, inputs[0]->stride, (size_t)ndim * sizeof *shape) == 0;
    }
    if (contiguous) {
        mtk_contiguous_strides(shape, ndim, stride_out);
    } else if (channels_last) {
        static const int32_t order[4] = { 1, 3, 2, 0 };
        strides_from_perm(order, shape, ndim, stride_out);
    } else if (same_dense) {
        memcpy(stride_out, inputs[0]->stride, (size_t)ndim * sizeof *shape);
    } else {
        return false;
    }
    return true;
}

void mtk_ti_cpu_output_strides(const mtk_tensor *const *inputs, int32_t ninputs, const int64_t *shape,
                               int32_t ndim, int64_t *stride_out)
{
    enum { MAX_OPERANDS = 8 };
    int32_t n = ninputs < MAX_OPERANDS ? ninputs : MAX_OPERANDS;
    if (n > 0 && ti_cpu_fast_setup(inputs, n, shape, ndim, stride_out)) return;
    if (ndim == 0) return;
    int64_t strides[MAX_OPERANDS][MTK_MAX_DIMS];
    /* a broadcast dim and a missing leading one are 0, a size-1 dim of
     * size 1 in the shape keeps its own stride */
    for (int32_t k = 0; k < n; k++) broadcast_elem_strides(inputs[k], shape, ndim, strides[k]);
    int32_t perm[MTK_MAX_DIMS];
    bool identity = true;
    if (ndim == 1) {
        perm[0] = 0;
    } else {
        ti_permutation(n, (const int64_t (*)[MTK_MAX_DIMS])strides, shape, ndim, perm);
        for (int32_t i = 0; i < ndim; i++) identity &= perm[i] == ndim - 1 - i;
    }
    if (identity) {
        mtk_contiguous_strides(shape, ndim, stride_out);
        return;
    }
    /* TensorIterator's compatible strides: sizes multiply as they are */
    int64_t next = 1;
    for (int32_t i = 0; i < ndim; i++) {
        stride_out[perm[i]] = next;
        if (__builtin_mul_overflow(next, shape[perm[i]], &next)) next = INT64_MAX;
    }
}

void mtk_dense_strides_like(const mtk_tensor *t, int64_t *stride_out)
{
    if (mtk_tensor_is_non_overlapping_and_dense(t)) {
        memcpy(stride_out, t->stride, (size_t)t->ndim * sizeof(int64_t));
        return;
    }
    if (t->ndim == 0) return;
    int64_t strides[1][MTK_MAX_DIMS];
    memcpy(strides[0], t->stride, (size_t)t->ndim * sizeof(int64_t));
    int32_t perm[MTK_MAX_DIMS];
    if (t->ndim == 1) perm[0] = 0;
    else ti_permutation(1, (const int64_t (*)[MTK_MAX_DIMS])strides, t->shape, t->ndim, perm);
    strides_from_perm(perm, t->shape, t->ndim, stride_out);
}

void mtk_foreach_strided(int32_t n, char *const *base, const int64_t *const *strides,
                         const int64_t *shape, int32_t ndim, mtk_inner_loop inner, void *user)
{
    char *ptrs[16];
    int64_t inner_strides[16];
    int64_t counter[MTK_MAX_DIMS] = { 0 };
    assert(n >= 0 && n <= 16 && ndim >= 0 && ndim <= MTK_MAX_DIMS);
    for (int32_t i = 0; i < ndim; i++)
        if (shape[i] == 0) return;
    if (ndim == 0) {
        for (int32_t k = 0; k < n; k++) ptrs[k] = base[k], inner_strides[k] = 0;
        inner(ptrs, inner_strides, 1, user);
        return;
    }
    int32_t last = ndim - 1;
    for (int32_t k = 0; k < n; k++) inner_strides[k] = strides[k][last];
    for (;;) {
        for (int32_t k = 0; k < n; k++) {
            char *p = base[k];
            for (int32_t d = 0; d < last; d++) p += counter[d] * strides[k][d];
            ptrs[k] = p;
        }
        inner(ptrs, inner_strides, shape[last], user);
        int32_t d = last - 1;
        while (d >= 0) {
            if (++counter[d] < shape[d]) break;
            counter[d] = 0;
            d--;
        }
        if (d < 0) return;
    }
}

typedef struct { mtk_dtype to, from; } copy_info;

static void copy_inner(char **ptrs, const int64_t *bs, int64_t count, void *user)
{
    const copy_info *ci = user;
    size_t es = mtk_dtype_size(ci->to);
    if (ci->to == ci->from && bs[0] == (int64_t)es && bs[1] == (int64_t)es) {
        memcpy(ptrs[0], ptrs[1], (size_t)count * es);
        return;
    }
    char *d = ptrs[0], *s = ptrs[1];
    for (int64_t i = 0; i < count; i++, d += bs[0], s += bs[1])
        mtk_convert_element(ci->to, d, ci->from, s);
}

const char *mtk_dtype_cpp_name(mtk_dtype dtype)
{
    const mtk_dtype_info *info = mtk_dtype_get(dtype);
    return info ? info->scalar_type_name : "Undefined";
}

const char *mtk_cpp_type_name(mtk_dtype d)
{
    const mtk_dtype_info *info = mtk_dtype_get(d);
    return info ? info->typeid_name : "undefined";
}

mtk_op_cost mtk_outputs_cost(const mtk_op_call *call)
{
    mtk_op_cost cost = { 0, 0 };
    for (int32_t i = 0; i < call->nout; i++)
        if (call->out[i]) cost.elementwise += mtk_tensor_numel(call->out[i]);
    return cost;
}

bool mtk_check_writable(mtk_op_call *call, const mtk_tensor *t)
{
    if (mtk_tensor_numel(t) == 0) return true; /* empty counts as dense: no overlap */
    for (int32_t i = 0; i < t->ndim; i++)
        if (t->shape[i] > 1 && t->stride[i] == 0)
            return mtk_call_error(call, MTK_ERR_INVALID_ARGUMENT,
                                  "unsupported operation: more than one element of the written-to tensor "
                                  "refers to a single memory location. Please clone() the tensor before "
                                  "performing the operation.");
    return true;
}

bool mtk_views_partially_overlap(const mtk_tensor *a, const mtk_tensor *b)
{
    bool same = a->storage_offset == b->storage_offset && a->dtype == b->dtype && a->ndim == b->ndim &&
                memcmp(a->shape, b->shape, (size_t)a->ndim * sizeof *a->shape) == 0 &&
                memcmp(a->stride, b->stride, (size_t)a->ndim * sizeof *a->stride) == 0;
    if (same || !mtk_tensor_is_non_overlapping_and_dense(a) || !mtk_tensor_is_non_overlapping_and_dense(b))
        return false;
    int64_t alo, ahi, blo, bhi;
    if (!mtk_tensor_extent(a, &alo, &ahi) || !mtk_tensor_extent(b, &blo, &bhi)) return false;
    if (alo == ahi || blo == bhi) return false; /* empty */
    int64_t as = (int64_t)mtk_dtype_size(a->dtype), bs = (int64_t)mtk_dtype_size(b->dtype);
    return alo * as < bhi * bs && blo * bs < ahi * as;
}

void mtk_copy_strided(mtk_tensor *dst, const mtk_tensor *src)
{
    int64_t sd[MTK_MAX_DIMS], ss[MTK_MAX_DIMS];
    mtk_broadcast_byte_strides(dst, dst->shape, dst->ndim, sd);
    mtk_broadcast_byte_strides(src, dst->shape, dst->ndim, ss);
    char *base[2] = { mtk_tensor_data(dst), mtk_tensor_data(src) };
    const int64_t *strides[2] = { sd, ss };
    copy_info ci = { dst->dtype, src->dtype };
    mtk_foreach_strided(2, base, strides, dst->shape, dst->ndim, copy_inner, &ci);
}

bool mtk_strides_suggest_channels_last(int32_t ndim, const int64_t *shape, const int64_t *stride)
{
    static const int32_t order4[] = { 1, 3, 2, 0 }, order5[] = { 1, 4, 3, 2, 0 };
    const int32_t *order = ndim == 4 ? order4 : ndim == 5 ? order5 : NULL;
    if (!order || stride[1] == 0) return false;
    int64_t min = 0;
    for (int32_t k = 0; k < ndim; k++) {
        int32_t d = order[k];
        if (shape[d] == 0 || stride[d] < min) return false;
        if (d == 0 && min == stride[1]) return false;
        if (__builtin_mul_overflow(stride[d], shape[d], &min)) min = INT64_MAX;
    }
    return true;
}
