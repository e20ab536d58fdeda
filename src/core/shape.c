/* Shapes and strides: numel with overflow checks, contiguous and
 * channels-last strides, PyTorch's contiguity predicates, dim wrapping. */
#include "mtk/core.h"

#include <stdio.h>
#include <string.h>

int64_t mtk_shape_numel(const int64_t *shape, int32_t ndim)
{
    int64_t n = 1;
    bool overflow = false;
    for (int32_t i = 0; i < ndim; i++) {
        if (shape[i] == 0) return 0;
        if (!overflow && __builtin_mul_overflow(n, shape[i], &n)) overflow = true;
    }
    return overflow ? -1 : n;
}

bool mtk_shape_check(mtk_ctx *ctx, const char *op, const int64_t *shape, int32_t ndim,
                     int64_t *numel_out)
{
    char buf[256];
    if (ndim < 0)
        return mtk_error(ctx, MTK_ERR_SHAPE, "%s: invalid number of dimensions %d", op, (int)ndim);
    if (ndim > MTK_MAX_DIMS)
        return mtk_error(ctx, MTK_ERR_SHAPE, "%s: %d dimensions is more than mtk supports (%d)",
                         op, (int)ndim, MTK_MAX_DIMS);
    for (int32_t i = 0; i < ndim; i++)
        if (shape[i] < 0)
            return mtk_error(ctx, MTK_ERR_SHAPE,
                             "%s: Trying to create tensor with negative dimension %lld: %s", op,
                             (long long)shape[i], mtk_shape_list_str(shape, ndim, buf, sizeof buf));
    int64_t n = mtk_shape_numel(shape, ndim);
    if (n < 0)
        return mtk_error(ctx, MTK_ERR_OVERFLOW, "%s: Storage size calculation overflowed with sizes=%s "
                         "(the number of elements overflows int64)",
                         op, mtk_shape_list_str(shape, ndim, buf, sizeof buf));
    if (numel_out) *numel_out = n;
    return true;
}

void mtk_contiguous_strides(const int64_t *shape, int32_t ndim, int64_t *stride)
{
    int64_t s = 1;
    for (int32_t i = ndim - 1; i >= 0; i--) {
        stride[i] = s;
        int64_t m = shape[i] > 1 ? shape[i] : 1; /* PyTorch: max(size, 1) */
        if (__builtin_mul_overflow(s, m, &s)) s = INT64_MAX;
    }
}

void mtk_channels_last_strides(const int64_t *shape, int32_t ndim, int64_t *stride)
{
    /* order of increasing stride: C, then spatial from last, then N.
     * Unlike contiguous strides, PyTorch multiplies the sizes as they are
     * (a size-0 dim makes the slower strides 0): (2,3,0,5) -> (0,1,15,3). */
    static const int32_t order4[] = { 1, 3, 2, 0 }, order5[] = { 1, 4, 3, 2, 0 };
    const int32_t *order = ndim == 4 ? order4 : ndim == 5 ? order5 : NULL;
    if (!order) { mtk_contiguous_strides(shape, ndim, stride); return; }
    int64_t s = 1;
    for (int32_t k = 0; k < ndim; k++) {
        stride[order[k]] = s;
        if (__builtin_mul_overflow(s, shape[order[k]], &s)) s = INT64_MAX;
    }
}

static int append(char *buf, size_t cap, size_t *len, const char *fmt, long long v)
{
    if (*len >= cap) return 0;
    int n = snprintf(buf + *len, cap - *len, fmt, v);
    if (n > 0) *len += (size_t)n;
    if (*len >= cap) *len = cap - 1;
    return n;
}

const char *mtk_shape_str(const int64_t *shape, int32_t ndim, char *buf, size_t cap)
{
    if (cap == 0) return buf;
    size_t len = 0;
    snprintf(buf, cap, "(");
    len = strlen(buf);
    for (int32_t i = 0; i < ndim; i++) append(buf, cap, &len, i ? ", %lld" : "%lld", (long long)shape[i]);
    if (ndim == 1 && len + 1 < cap) buf[len++] = ',', buf[len] = '\0';
    if (len + 1 < cap) buf[len++] = ')', buf[len] = '\0';
    return buf;
}

const char *mtk_shape_list_str(const int64_t *shape, int32_t ndim, char *buf, size_t cap)
{
    if (cap == 0) return buf;
    size_t len = 0;
    snprintf(buf, cap, "[");
    len = strlen(buf);
    for (int32_t i = 0; i < ndim; i++) append(buf, cap, &len, i ? ", %lld" : "%lld", (long long)shape[i]);
    if (len + 1 < cap) buf[len++] = ']', buf[len] = '\0';
    return buf;
}

int32_t mtk_wrap_dim(mtk_ctx *ctx, int64_t dim, int32_t ndim)
{
    int64_t n = ndim > 0 ? ndim : 1; /* a scalar accepts dims -1 and 0 */
    if (dim < -n || dim >= n) {
        mtk_error(ctx, MTK_ERR_INDEX,
                  "Dimension out of range (expected to be in range of [%lld, %lld], but got %lld)",
                  (long long)-n, (long long)(n - 1), (long long)dim);
        return -1;
    }
    return (int32_t)(dim < 0 ? dim + n : dim);
}

/* ------------------------------------------------------ contiguity rules */

/* (The products below cannot overflow for a tensor whose numel fits in
 * int64, which mtk_tensor_new checks; the saturating multiply keeps a
 * hand-edited tensor from being undefined behaviour.) */
static int64_t mul_saturating(int64_t a, int64_t b)
{
    int64_t r;
    return __builtin_mul_overflow(a, b, &r) ? INT64_MAX : r;
}

bool mtk_tensor_is_contiguous(const mtk_tensor *t)
{
    /* the stride scan first: an empty tensor (a size-0 dim) is contiguous
     * whatever its strides, which only matters when the scan fails */
    int64_t expected = 1;
    for (int32_t i = t->ndim - 1; i >= 0; i--) {
        if (t->shape[i] == 1) continue;
        if (t->stride[i] != expected) return mtk_tensor_numel(t) == 0;
        expected = mul_saturating(expected, t->shape[i]);
    }
    return true;
}

/* PyTorch's channels-last contiguity: like is_contiguous in the dim order
 * C, W, H, N (C, W, H, D, N), but with no shortcut for empty tensors. */
static bool channels_last_order(const mtk_tensor *t, const int32_t *order, int32_t n)
{
    int64_t expected = 1;
    for (int32_t k = 0; k < n; k++) {
        int32_t d = order[k];
        if (t->shape[d] == 1) continue;
        if (t->stride[d] != expected) return false;
        expected = mul_saturating(expected, t->shape[d]);
    }
    return true;
}

bool mtk_tensor_is_channels_last(const mtk_tensor *t)
{
    static const int32_t order[] = { 1, 3, 2, 0 };
    return t->ndim == 4 && channels_last_order(t, order, 4);
}

bool mtk_tensor_is_channels_last_3d(const mtk_tensor *t)
{
    static const int32_t order[] = { 1, 4, 3, 2, 0 };
    return t->ndim == 5 && channels_last_order(t, order, 5);
}

bool mtk_tensor_is_non_overlapping_and_dense(const mtk_tensor *t)
{
    if (t->ndim == 1) return t->shape[0] < 2 || t->stride[0] == 1;
    if (mtk_tensor_is_contiguous(t) || mtk_tensor_is_channels_last(t)) return true;
    /* sort dims by stride, size<2 dims last (insertion sort: ndim is small) */
    int32_t perm[MTK_MAX_DIMS];
    for (int32_t i = 0; i < t->ndim; i++) perm[i] = i;
    for (int32_t i = 1; i < t->ndim; i++) {
        int32_t p = perm[i], j = i - 1;
        while (j >= 0) {
            int32_t q = perm[j];
            bool p_before_q;
            if (t->shape[p] < 2) p_before_q = false;
            else if (t->shape[q] < 2) p_before_q = true;
            else p_before_q = t->stride[p] < t->stride[q];
            if (!p_before_q) break;
            perm[j + 1] = q;
            j--;
        }
        perm[j + 1] = p;
    }
    int64_t require = 1;
    for (int32_t i = 0; i < t->ndim; i++) {
        int64_t size = t->shape[perm[i]];
        if (size < 2) return true;
        if (t->stride[perm[i]] != require) return false;
        require = mul_saturating(require, size);
    }
    return true;
}
