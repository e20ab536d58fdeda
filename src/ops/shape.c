/* Views that rearrange or add/remove dims: transpose (swapaxes, swapdims),
 * t, permute, movedim (moveaxis), squeeze, unsqueeze, expand, expand_as.
 * Each only rewrites shape and strides; the storage offset is kept. */
#include "ops/view.h"
#include "ops/registry.h"
#include "ops/op_util.h"
#include "mtk/ops/view.h"

#include <stdio.h>
#include <string.h>

/* Output = x with its dims reordered: out dim i is x's dim order[i]. */
static bool permuted_view(mtk_op_call *call, const mtk_tensor *x, const int32_t *order)
{
    int64_t shape[MTK_MAX_DIMS], stride[MTK_MAX_DIMS];
    for (int32_t i = 0; i < x->ndim; i++) {
        shape[i] = x->shape[order[i]];
        stride[i] = x->stride[order[i]];
    }
    return mtk_view_single(call, x, shape, stride, x->ndim, x->storage_offset);
}

static void identity_order(int32_t *order, int32_t n)
{
    for (int32_t i = 0; i < n; i++) order[i] = i;
}

/* ------------------------------------------------------------- transpose */

static bool transpose_view(mtk_op_call *call, const mtk_tensor *x, int64_t dim0, int64_t dim1)
{
    int32_t d0 = mtk_view_wrap_dim(call, dim0, x->ndim);
    int32_t d1 = d0 < 0 ? -1 : mtk_view_wrap_dim(call, dim1, x->ndim);
    if (d0 < 0 || d1 < 0) return false;
    int32_t order[MTK_MAX_DIMS];
    identity_order(order, x->ndim);
    if (x->ndim > 0) {
        order[d0] = d1;
        order[d1] = d0;
    }
    return permuted_view(call, x, order);
}

bool mtk_transpose_meta(mtk_op_call *call)
{
    return transpose_view(call, arg_tensor(call, 0), arg_int(call, 1), arg_int(call, 2));
}

bool mtk_t_meta(mtk_op_call *call)
{
    const mtk_tensor *x = arg_tensor(call, 0);
    if (x->ndim > 2)
        return mtk_call_error(call, MTK_ERR_SHAPE, "t() expects a tensor with <= 2 dimensions, but self is %dD",
                              (int)x->ndim);
    return transpose_view(call, x, 0, x->ndim < 2 ? 0 : 1);
}

/* --------------------------------------------------------------- permute */

/* Wraps dims[n] into out[n]. */
static bool wrap_dims(mtk_op_call *call, const int64_t *dims, int32_t n, int32_t ndim, int32_t *out)
{
    for (int32_t i = 0; i < n; i++)
        if ((out[i] = mtk_view_wrap_dim(call, dims[i], ndim)) < 0) return false;
    return true;
}

static bool has_repeats(const int32_t *dims, int32_t n)
{
    uint32_t seen = 0;
    for (int32_t i = 0; i < n; i++) {
        if (seen & (1u << dims[i])) return true;
        seen |= 1u << dims[i];
    }
    return false;
}

bool mtk_permute_meta(mtk_op_call *call)
{
    const mtk_tensor *x = arg_tensor(call, 0);
    int64_t dims[MTK_MAX_DIMS];
    int32_t order[MTK_MAX_DIMS];
    int32_t n = mtk_view_ints(call, 1, dims, "dims");
    if (n < 0) return false;
    if (n != x->ndim)
        return mtk_call_error(call, MTK_ERR_SHAPE,
                              "permute(): number of dimensions in the tensor input does not match the length "
                              "of the desired ordering of dimensions i.e. input.dim() = %d is not equal to "
                              "len(dims) = %d",
                              (int)x->ndim, (int)n);
    if (!wrap_dims(call, dims, n, x->ndim, order)) return false;
    if (has_repeats(order, n)) return mtk_call_error(call, MTK_ERR_SHAPE, "permute(): duplicate dims are not allowed.");
    return permuted_view(call, x, order);
}

/* --------------------------------------------------------------- movedim */

bool mtk_movedim_meta(mtk_op_call *call)
{
    const mtk_tensor *x = arg_tensor(call, 0);
    char a[256], b[256];
    /* PyTorch's overloads: two ints, or two lists */
    if ((call->args[1].kind == MTK_VALUE_INT) != (call->args[2].kind == MTK_VALUE_INT))
        return mtk_call_error(call, MTK_ERR_INVALID_ARGUMENT,
                              "received an invalid combination of arguments - got (%s, %s), but expected one "
                              "of: (int source, int destination) | (tuple of ints source, tuple of ints "
                              "destination)",
                              mtk_value_type_name(&call->args[1]), mtk_value_type_name(&call->args[2]));
    int64_t src[MTK_MAX_DIMS], dst[MTK_MAX_DIMS];
    int32_t nsrc = mtk_view_ints(call, 1, src, "source");
    int32_t ndst = nsrc < 0 ? -1 : mtk_view_ints(call, 2, dst, "destination");
    if (ndst < 0) return false;
    if (nsrc != ndst)
        return mtk_call_error(call, MTK_ERR_SHAPE,
                              "Invalid source or destination dims: source (%s dims) should contain the same "
                              "number of dims as destination (%s dims)",
                              mtk_shape_list_str(src, nsrc, a, sizeof a), mtk_shape_list_str(dst, ndst, b, sizeof b));
    int32_t from[MTK_MAX_DIMS], to[MTK_MAX_DIMS];
    if (!wrap_dims(call, src, nsrc, x->ndim, from) || !wrap_dims(call, dst, ndst, x->ndim, to)) return false;
    if (has_repeats(from, nsrc))
        return mtk_call_error(call, MTK_ERR_SHAPE, "repeated dim in `source` (%s)",
                              mtk_shape_list_str(src, nsrc, a, sizeof a));
    if (has_repeats(to, ndst))
        return mtk_call_error(call, MTK_ERR_SHAPE, "repeated dim in `destination` (%s)",
                              mtk_shape_list_str(dst, ndst, a, sizeof a));
    /* the moved dims land at their destinations; the others keep their
     * relative order in the free positions */
    int32_t order[MTK_MAX_DIMS];
    bool src_used[MTK_MAX_DIMS] = { false }, dst_used[MTK_MAX_DIMS] = { false };
    for (int32_t i = 0; i < nsrc && x->ndim > 0; i++) {
        order[to[i]] = from[i];
        src_used[from[i]] = dst_used[to[i]] = true;
    }
    int32_t next_src = 0;
    for (int32_t d = 0; d < x->ndim; d++) {
        if (dst_used[d]) continue;
        while (src_used[next_src]) next_src++;
        order[d] = next_src++;
    }
    return permuted_view(call, x, order);
}

/* --------------------------------------------------------- squeeze/unsqueeze */

bool mtk_squeeze_meta(mtk_op_call *call)
{
    const mtk_tensor *x = arg_tensor(call, 0);
    bool drop[MTK_MAX_DIMS] = { false };
    if (arg_is_none(call, 1)) {
        for (int32_t d = 0; d < x->ndim; d++) drop[d] = x->shape[d] == 1;
    } else {
        int64_t dims[MTK_MAX_DIMS];
        bool seen[MTK_MAX_DIMS] = { false };
        int32_t n = mtk_view_ints(call, 1, dims, "dim");
        if (n < 0) return false;
        for (int32_t i = 0; i < n; i++) {
            int32_t d = mtk_view_wrap_dim(call, dims[i], x->ndim);
            if (d < 0) return false;
            if (seen[d])
                return mtk_call_error(call, MTK_ERR_SHAPE, "dim %d appears multiple times in the list of dims",
                                      (int)d);
            seen[d] = true;
            if (x->ndim > 0) drop[d] = x->shape[d] == 1;
        }
    }
    int64_t shape[MTK_MAX_DIMS], stride[MTK_MAX_DIMS];
    int32_t n = 0;
    for (int32_t d = 0; d < x->ndim; d++)
        if (!drop[d]) shape[n] = x->shape[d], stride[n++] = x->stride[d];
    return mtk_view_single(call, x, shape, stride, n, x->storage_offset);
}

bool mtk_unsqueeze_meta(mtk_op_call *call)
{
    const mtk_tensor *x = arg_tensor(call, 0);
    if (x->ndim >= MTK_MAX_DIMS)
        return mtk_call_error(call, MTK_ERR_SHAPE, "%d dimensions is more than mtk supports (%d)",
                              (int)x->ndim + 1, MTK_MAX_DIMS);
    int32_t dim = mtk_view_wrap_dim(call, arg_int(call, 1), x->ndim + 1);
    if (dim < 0) return false;
    int64_t shape[MTK_MAX_DIMS], stride[MTK_MAX_DIMS];
    for (int32_t d = 0, k = 0; d <= x->ndim; d++) {
        if (d == dim) {
            shape[d] = 1;
            stride[d] = dim < x->ndim ? ops_wrap_mul(x->shape[dim], x->stride[dim]) : 1; /* as torch's */
        } else {
            shape[d] = x->shape[k];
            stride[d] = x->stride[k++];
        }
    }
    return mtk_view_single(call, x, shape, stride, x->ndim + 1, x->storage_offset);
}

/* ---------------------------------------------------------------- expand */

/* PyTorch's legacy type string in expand's message: "MetaFloatType". */
static const char *type_string(const mtk_tensor *x, char *buf, size_t cap)
{
    const char *device = x->device == MTK_DEVICE_META ? "Meta" : x->device == MTK_DEVICE_CPU ? "CPU" : "CUDA";
    snprintf(buf, cap, "%s%sType", device, mtk_dtype_cpp_name(x->dtype));
    return buf;
}

static bool expand_to(mtk_op_call *call, const mtk_tensor *x, const int64_t *sizes, int32_t n)
{
    char a[256], b[256], type[48];
    if (n < x->ndim)
        return mtk_call_error(call, MTK_ERR_SHAPE,
                              "expand(%s{%s}, size=%s): the number of sizes provided (%d) must be greater or "
                              "equal to the number of dimensions in the tensor (%d)",
                              type_string(x, type, sizeof type), mtk_shape_list_str(x->shape, x->ndim, a, sizeof a),
                              mtk_shape_list_str(sizes, n, b, sizeof b), (int)n, (int)x->ndim);
    int64_t shape[MTK_MAX_DIMS], stride[MTK_MAX_DIMS];
    for (int32_t i = n - 1; i >= 0; i--) {
        int32_t d = i - (n - x->ndim); /* x's dim aligned with output dim i */
        int64_t size = d >= 0 ? x->shape[d] : 1;
        int64_t st = d >= 0 ? x->stride[d] : (i + 1 < n ? shape[i + 1] * stride[i + 1] : 0); /* 0-dim x: 0 */
        int64_t target = sizes[i];
        if (target == -1) {
            if (d < 0)
                return mtk_call_error(call, MTK_ERR_SHAPE,
                                      "The expanded size of the tensor (-1) isn't allowed in a leading, "
                                      "non-existing dimension %d",
                                      (int)i);
            target = size;
        }
        if (size != target) {
            if (size != 1)
                return mtk_call_error(call, MTK_ERR_SHAPE,
                                      "The expanded size of the tensor (%lld) must match the existing size (%lld) "
                                      "at non-singleton dimension %d.  Target sizes: %s.  Tensor sizes: %s",
                                      (long long)target, (long long)size, (int)i,
                                      mtk_shape_list_str(sizes, n, a, sizeof a),
                                      mtk_shape_list_str(x->shape, x->ndim, b, sizeof b));
            size = target;
            st = 0;
        }
        shape[i] = size;
        stride[i] = st;
    }
    if (!mtk_shape_check(call->ctx, call->op->name, shape, n, NULL)) return false;
    return mtk_view_single(call, x, shape, stride, n, x->storage_offset);
}

bool mtk_expand_meta(mtk_op_call *call)
{
    int64_t sizes[MTK_MAX_DIMS];
    int32_t n = mtk_view_ints(call, 1, sizes, "size");
    return n >= 0 && expand_to(call, arg_tensor(call, 0), sizes, n);
}

bool mtk_expand_as_meta(mtk_op_call *call)
{
    const mtk_tensor *other = arg_tensor(call, 1);
    return expand_to(call, arg_tensor(call, 0), other->shape, other->ndim);
}

/* ------------------------------------------------------------ typed API */

static mtk_tensor *run_call(mtk_op_call *call, mtk_ctx *ctx, mtk_op_id id, mtk_tensor *x)
{
    mtk_op_call_init(call, ctx, mtk_op_by_id(id));
    call->args[0] = mtk_value_tensor(x);
    return x;
}

static mtk_value int_list(mtk_op_call *call, const int64_t *items, int32_t n)
{
    if (n < 0 || n > MTK_MAX_DIMS) {
        mtk_call_error(call, MTK_ERR_SHAPE, "%d items is more than mtk supports (%d)", (int)n, MTK_MAX_DIMS);
        return mtk_value_none();
    }
    return mtk_value_int_list(call->ctx, items, n);
}

mtk_tensor *mtk_transpose(mtk_ctx *ctx, mtk_tensor *x, int64_t dim0, int64_t dim1)
{
    mtk_op_call call;
    if (!run_call(&call, ctx, OPID_TRANSPOSE, x)) return NULL;
    call.args[1] = mtk_value_int(dim0);
    call.args[2] = mtk_value_int(dim1);
    return mtk_op_run_tensor(&call);
}

mtk_tensor *mtk_t(mtk_ctx *ctx, mtk_tensor *x)
{
    mtk_op_call call;
    if (!run_call(&call, ctx, OPID_T, x)) return NULL;
    return mtk_op_run_tensor(&call);
}

mtk_tensor *mtk_permute(mtk_ctx *ctx, mtk_tensor *x, const int64_t *dims, int32_t n)
{
    mtk_op_call call;
    if (!run_call(&call, ctx, OPID_PERMUTE, x)) return NULL;
    call.args[1] = int_list(&call, dims, n);
    return call.args[1].kind == MTK_VALUE_NONE ? NULL : mtk_op_run_tensor(&call);
}

mtk_tensor *mtk_movedim(mtk_ctx *ctx, mtk_tensor *x, const int64_t *source, const int64_t *destination, int32_t n)
{
    mtk_op_call call;
    if (!run_call(&call, ctx, OPID_MOVEDIM, x)) return NULL;
    call.args[1] = int_list(&call, source, n);
    call.args[2] = int_list(&call, destination, n);
    if (call.args[1].kind == MTK_VALUE_NONE || call.args[2].kind == MTK_VALUE_NONE) return NULL;
    return mtk_op_run_tensor(&call);
}

mtk_tensor *mtk_squeeze(mtk_ctx *ctx, mtk_tensor *x)
{
    mtk_op_call call;
    if (!run_call(&call, ctx, OPID_SQUEEZE, x)) return NULL;
    return mtk_op_run_tensor(&call);
}

mtk_tensor *mtk_squeeze_dims(mtk_ctx *ctx, mtk_tensor *x, const int64_t *dims, int32_t n)
{
    mtk_op_call call;
    if (!run_call(&call, ctx, OPID_SQUEEZE, x)) return NULL;
    call.args[1] = int_list(&call, dims, n);
    return call.args[1].kind == MTK_VALUE_NONE ? NULL : mtk_op_run_tensor(&call);
}

mtk_tensor *mtk_squeeze_dim(mtk_ctx *ctx, mtk_tensor *x, int64_t dim)
{
    return mtk_squeeze_dims(ctx, x, &dim, 1);
}

mtk_tensor *mtk_unsqueeze(mtk_ctx *ctx, mtk_tensor *x, int64_t dim)
{
    mtk_op_call call;
    if (!run_call(&call, ctx, OPID_UNSQUEEZE, x)) return NULL;
    call.args[1] = mtk_value_int(dim);
    return mtk_op_run_tensor(&call);
}

mtk_tensor *mtk_expand(mtk_ctx *ctx, mtk_tensor *x, const int64_t *shape, int32_t ndim)
{
    mtk_op_call call;
    if (!run_call(&call, ctx, OPID_EXPAND, x)) return NULL;
    call.args[1] = int_list(&call, shape, ndim);
    return call.args[1].kind == MTK_VALUE_NONE ? NULL : mtk_op_run_tensor(&call);
}

mtk_tensor *mtk_expand_as(mtk_ctx *ctx, mtk_tensor *x, mtk_tensor *other)
{
    mtk_op_call call;
    if (!other || !run_call(&call, ctx, OPID_EXPAND_AS, x)) return NULL;
    call.args[1] = mtk_value_tensor(other);
    return mtk_op_run_tensor(&call);
}
