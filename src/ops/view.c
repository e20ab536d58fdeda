/* Reshaping views: view, reshape, view_as, reshape_as, flatten, unflatten
 * and contiguous, with the helpers every view file shares.
 *
 * A view describes new shape/strides/offset over its input's storage; the
 * dispatcher points a cpu view at the input's storage.  reshape, flatten
 * and contiguous are views when PyTorch's rules allow one and fresh
 * contiguous copies otherwise, exactly when torch copies. */
#include "ops/view.h"
#include "ops/creation.h"
#include "ops/registry.h"
#include "ops/op_util.h"
#include "mtk/ops/view.h"

#include <string.h>

/* ---------------------------------------------------------- shared helpers */

int32_t mtk_view_wrap_dim(mtk_op_call *call, int64_t dim, int32_t ndim)
{
    int64_t n = ndim > 0 ? ndim : 1; /* a scalar accepts dims -1 and 0 */
    if (dim < -n || dim >= n) {
        mtk_call_error(call, MTK_ERR_INDEX,
                       "Dimension out of range (expected to be in range of [%lld, %lld], but got %lld)",
                       (long long)-n, (long long)(n - 1), (long long)dim);
        return -1;
    }
    return (int32_t)(dim < 0 ? dim + n : dim);
}

int32_t mtk_view_ints(mtk_op_call *call, int arg, int64_t *out, const char *name)
{
    return mtk_value_to_ints(call->ctx, &call->args[arg], out, MTK_MAX_DIMS, call->op->name, name);
}

mtk_tensor *mtk_view_make(mtk_op_call *call, const mtk_tensor *x, const int64_t *shape,
                          const int64_t *stride, int32_t ndim, int64_t storage_offset)
{
    mtk_tensor *t = mtk_tensor_new(call->ctx, x->dtype, shape, ndim, stride, x->device);
    if (t) {
        t->storage_offset = storage_offset;
        t->flags = x->flags & MTK_TENSOR_REQUIRES_GRAD; /* autograd would track it */
    }
    return t;
}

bool mtk_view_fresh_output(mtk_op_call *call, const mtk_tensor *x, const int64_t *shape, int32_t ndim,
                           const int64_t *stride)
{
    mtk_tensor *t = mtk_tensor_new(call->ctx, x->dtype, shape, ndim, stride, x->device);
    if (!t || !mtk_call_set_outputs(call, 1)) return false;
    t->flags = x->flags & MTK_TENSOR_REQUIRES_GRAD;
    mtk_call_output(call, 0, t, -1);
    return true;
}

bool mtk_view_single(mtk_op_call *call, const mtk_tensor *x, const int64_t *shape,
                     const int64_t *stride, int32_t ndim, int64_t storage_offset)
{
    mtk_tensor *t = mtk_view_make(call, x, shape, stride, ndim, storage_offset);
    if (!t || !mtk_call_set_outputs(call, 1)) return false;
    mtk_call_output(call, 0, t, 0);
    return true;
}

/* The input itself, as a view with identical metadata (torch returns
 * `self` for contiguous() of a contiguous tensor, flatten(d, d), ...). */
static bool same_view(mtk_op_call *call, const mtk_tensor *x)
{
    return mtk_view_single(call, x, x->shape, x->stride, x->ndim, x->storage_offset);
}

/* Strides that view `x` as newshape, following PyTorch's computeStride:
 * old dims merge into chunks that are contiguous with each other; each
 * new dim must lie inside one chunk.  False when some new dim would span
 * two chunks. */
bool mtk_view_strides(const mtk_tensor *x, const int64_t *newshape, int32_t newn, int64_t *newstride)
{
    if (x->ndim == 0) { /* a scalar: any shape of ones, all strides 1 */
        for (int32_t d = 0; d < newn; d++) newstride[d] = 1;
        return true;
    }
    if (mtk_tensor_numel(x) == 0) {
        /* strides are arbitrary: keep them for the same shape, else resize's */
        if (newn == x->ndim && memcmp(newshape, x->shape, (size_t)newn * sizeof *newshape) == 0) {
            memcpy(newstride, x->stride, (size_t)newn * sizeof *newstride);
            return true;
        }
        for (int32_t d = newn - 1; d >= 0; d--)
            newstride[d] = d == newn - 1 ? 1 : ops_sat_mul(newshape[d + 1] > 1 ? newshape[d + 1] : 1, newstride[d + 1]);
        return true;
    }
    int32_t view_d = newn - 1;
    int64_t chunk_base_stride = x->stride[x->ndim - 1]; /* stride of the chunk's innermost dim */
    int64_t chunk_numel = 1, view_numel = 1;
    for (int32_t d = x->ndim - 1; d >= 0; d--) {
        chunk_numel *= x->shape[d];
        int64_t next_stride;
        bool chunk_ends = d == 0 || (x->shape[d - 1] != 1 &&
                                     (__builtin_mul_overflow(chunk_numel, chunk_base_stride, &next_stride) ||
                                      x->stride[d - 1] != next_stride));
        if (!chunk_ends) continue;
        /* new dims (and any ones) that fill this chunk */
        while (view_d >= 0 && (view_numel < chunk_numel || newshape[view_d] == 1)) {
            newstride[view_d] = view_numel * chunk_base_stride;
            view_numel *= newshape[view_d];
            view_d--;
        }
        if (view_numel != chunk_numel) return false;
        if (d > 0) {
            chunk_base_stride = x->stride[d - 1];
            chunk_numel = view_numel = 1;
        }
    }
    return view_d == -1;
}

enum { INFER_OK, INFER_BAD_NUMEL, INFER_ERROR };

/* infer_size: replaces one -1 in sizes[n] so that they multiply to numel,
 * into out.  INFER_BAD_NUMEL (no error set) when the sizes cannot make
 * numel; INFER_ERROR (error set) for two -1, a negative size, or a -1
 * that 0 elements make ambiguous. */
static int infer_sizes(mtk_op_call *call, const int64_t *sizes, int32_t n, int64_t numel, int64_t *out)
{
    char buf[256];
    int32_t infer = -1;
    int64_t product = 1;
    bool overflow = false;
    for (int32_t i = 0; i < n; i++) {
        out[i] = sizes[i];
        if (sizes[i] == -1) {
            if (infer >= 0) {
                mtk_call_error(call, MTK_ERR_SHAPE, "only one dimension can be inferred");
                return INFER_ERROR;
            }
            infer = i;
        } else if (sizes[i] >= 0) {
            if (__builtin_mul_overflow(product, sizes[i], &product)) overflow = true;
        } else {
            mtk_call_error(call, MTK_ERR_SHAPE, "invalid shape dimension %lld at index %d of shape %s",
                           (long long)sizes[i], (int)i, mtk_shape_list_str(sizes, n, buf, sizeof buf));
            return INFER_ERROR;
        }
    }
    if (overflow) return INFER_BAD_NUMEL;
    if (numel == product || (infer >= 0 && product > 0 && numel % product == 0)) {
        if (infer >= 0) {
            if (product == 0) {
                mtk_call_error(call, MTK_ERR_SHAPE,
                               "cannot reshape tensor of 0 elements into shape %s because the "
                               "unspecified dimension size -1 can be any value and is ambiguous",
                               mtk_shape_list_str(sizes, n, buf, sizeof buf));
                return INFER_ERROR;
            }
            out[infer] = numel / product;
        }
        return INFER_OK;
    }
    return INFER_BAD_NUMEL;
}

/* infer_sizes for view/reshape: the bad-numel case is an error too. */
static bool infer_shape(mtk_op_call *call, const int64_t *sizes, int32_t n, int64_t numel, int64_t *out)
{
    char buf[256];
    int r = infer_sizes(call, sizes, n, numel, out);
    if (r == INFER_BAD_NUMEL)
        mtk_call_error(call, MTK_ERR_SHAPE, "shape '%s' is invalid for input of size %lld",
                       mtk_shape_list_str(sizes, n, buf, sizeof buf), (long long)numel);
    return r == INFER_OK;
}

bool mtk_view_reshape_output(mtk_op_call *call, const mtk_tensor *x, const int64_t *shape, int32_t ndim)
{
    int64_t stride[MTK_MAX_DIMS];
    if (mtk_view_strides(x, shape, ndim, stride)) return mtk_view_single(call, x, shape, stride, ndim, x->storage_offset);
    return mtk_view_fresh_output(call, x, shape, ndim, NULL); /* no view: a contiguous copy */
}

/* ------------------------------------------------------ view and reshape */

/* x.view(sizes), sizes possibly holding one -1. */
static bool view_to(mtk_op_call *call, const mtk_tensor *x, const int64_t *sizes, int32_t n)
{
    int64_t shape[MTK_MAX_DIMS], stride[MTK_MAX_DIMS];
    if (!infer_shape(call, sizes, n, mtk_tensor_numel(x), shape)) return false;
    if (!mtk_view_strides(x, shape, n, stride))
        return mtk_call_error(call, MTK_ERR_SHAPE,
                              "view size is not compatible with input tensor's size and stride (at least "
                              "one dimension spans across two contiguous subspaces). Use .reshape(...) instead.");
    return mtk_view_single(call, x, shape, stride, n, x->storage_offset);
}

/* x.reshape(sizes): a view when one exists, else a copy. */
static bool reshape_to(mtk_op_call *call, const mtk_tensor *x, const int64_t *sizes, int32_t n)
{
    int64_t shape[MTK_MAX_DIMS];
    if (!infer_shape(call, sizes, n, mtk_tensor_numel(x), shape)) return false;
    return mtk_view_reshape_output(call, x, shape, n);
}

bool mtk_view_meta(mtk_op_call *call)
{
    int64_t sizes[MTK_MAX_DIMS];
    int32_t n = mtk_view_ints(call, 1, sizes, "size");
    return n >= 0 && view_to(call, arg_tensor(call, 0), sizes, n);
}

bool mtk_reshape_meta(mtk_op_call *call)
{
    int64_t sizes[MTK_MAX_DIMS];
    int32_t n = mtk_view_ints(call, 1, sizes, "shape");
    return n >= 0 && reshape_to(call, arg_tensor(call, 0), sizes, n);
}

bool mtk_view_as_meta(mtk_op_call *call)
{
    const mtk_tensor *other = arg_tensor(call, 1);
    return view_to(call, arg_tensor(call, 0), other->shape, other->ndim);
}

bool mtk_reshape_as_meta(mtk_op_call *call)
{
    const mtk_tensor *other = arg_tensor(call, 1);
    return reshape_to(call, arg_tensor(call, 0), other->shape, other->ndim);
}

/* ------------------------------------------------------ flatten/unflatten */

bool mtk_flatten_meta(mtk_op_call *call)
{
    const mtk_tensor *x = arg_tensor(call, 0);
    int32_t start = mtk_view_wrap_dim(call, arg_int(call, 1), x->ndim);
    int32_t end = start < 0 ? -1 : mtk_view_wrap_dim(call, arg_int(call, 2), x->ndim);
    if (start < 0 || end < 0) return false;
    if (start > end)
        return mtk_call_error(call, MTK_ERR_INVALID_ARGUMENT,
                              "flatten() has invalid args: start_dim cannot come after end_dim");
    if (x->ndim == 0) { /* a scalar flattens to (1,) */
        int64_t one = 1;
        return mtk_view_reshape_output(call, x, &one, 1);
    }
    if (start == end) return same_view(call, x);
    int64_t shape[MTK_MAX_DIMS];
    int32_t n = 0;
    for (int32_t d = 0; d < start; d++) shape[n++] = x->shape[d];
    shape[n++] = ops_size_product(x->shape, start, end + 1); /* exact: numel fits int64 */
    for (int32_t d = end + 1; d < x->ndim; d++) shape[n++] = x->shape[d];
    return mtk_view_reshape_output(call, x, shape, n);
}

bool mtk_unflatten_meta(mtk_op_call *call)
{
    const mtk_tensor *x = arg_tensor(call, 0);
    char buf[256];
    int64_t sizes[MTK_MAX_DIMS], inferred[MTK_MAX_DIMS], shape[MTK_MAX_DIMS], stride[MTK_MAX_DIMS];
    int32_t dim = mtk_view_wrap_dim(call, arg_int(call, 1), x->ndim);
    if (dim < 0) return false;
    if (x->ndim == 0)
        return mtk_call_error(call, MTK_ERR_INDEX, "Dimension specified as %d but tensor has no dimensions", (int)dim);
    int32_t n = mtk_view_ints(call, 2, sizes, "sizes");
    if (n < 0) return false;
    if (n == 0) return mtk_call_error(call, MTK_ERR_SHAPE, "sizes must be non-empty");
    int r = infer_sizes(call, sizes, n, x->shape[dim], inferred);
    if (r == INFER_BAD_NUMEL)
        return mtk_call_error(call, MTK_ERR_SHAPE,
                              "Provided sizes %s don't multiply up to the size of dim %d (%lld) in the input tensor",
                              mtk_shape_list_str(sizes, n, buf, sizeof buf), (int)dim, (long long)x->shape[dim]);
    if (r != INFER_OK) return false;
    int32_t ndim = x->ndim - 1 + n;
    if (ndim > MTK_MAX_DIMS)
        return mtk_call_error(call, MTK_ERR_SHAPE, "%d dimensions is more than mtk supports (%d)", (int)ndim, MTK_MAX_DIMS);
    int32_t k = 0;
    for (int32_t d = 0; d < dim; d++) shape[k++] = x->shape[d];
    for (int32_t i = 0; i < n; i++) shape[k++] = inferred[i];
    for (int32_t d = dim + 1; d < x->ndim; d++) shape[k++] = x->shape[d];
    if (!mtk_view_strides(x, shape, ndim, stride)) /* splitting one dim always views */
        return mtk_call_error(call, MTK_ERR_SHAPE, "view size is not compatible with input tensor's size and stride");
    return mtk_view_single(call, x, shape, stride, ndim, x->storage_offset);
}

/* ------------------------------------------------------------ contiguous */

bool mtk_contiguous_meta(mtk_op_call *call)
{
    const mtk_tensor *x = arg_tensor(call, 0);
    mtk_memory_format format;
    int64_t stride[MTK_MAX_DIMS];
    if (!mtk_memory_format_arg(call, 1, MTK_MEMORY_FORMAT_CONTIGUOUS, &format)) return false;
    if (mtk_is_contiguous_as(x, format)) return same_view(call, x);
    if (format == MTK_MEMORY_FORMAT_PRESERVE)
        return mtk_call_error(call, MTK_ERR_INVALID_ARGUMENT,
                              "preserve memory format is unsupported by the contiguous operator");
    if (!mtk_memory_format_strides(call, format, x->shape, x->ndim, stride)) return false;
    return mtk_view_fresh_output(call, x, x->shape, x->ndim, stride);
}

/* ------------------------------------------------------------ cpu kernels */

bool mtk_view_cpu(mtk_op_call *call)
{
    (void)call;
    return true;
}

bool mtk_copy_unless_view_cpu(mtk_op_call *call)
{
    mtk_tensor *out = call->out[0];
    const mtk_tensor *x = arg_tensor(call, 0);
    if (call->out_view_of[0] >= 0) return true;
    if (out->ndim == x->ndim && memcmp(out->shape, x->shape, (size_t)x->ndim * sizeof *x->shape) == 0) {
        mtk_copy_strided(out, x);
        return true;
    }
    /* reshape: copy in row-major order into the fresh contiguous output,
     * seen with x's shape */
    mtk_tensor as_input = *out;
    as_input.ndim = x->ndim;
    memcpy(as_input.shape, x->shape, (size_t)x->ndim * sizeof *x->shape);
    mtk_contiguous_strides(x->shape, x->ndim, as_input.stride);
    mtk_copy_strided(&as_input, x);
    return true;
}

/* ------------------------------------------------------------ typed API */

static mtk_tensor *run_with_ints(mtk_ctx *ctx, mtk_op_id id, mtk_tensor *x, const int64_t *ints, int32_t n)
{
    if (!x) return NULL;
    mtk_op_call call;
    mtk_op_call_init(&call, ctx, mtk_op_by_id(id));
    if (n < 0 || n > MTK_MAX_DIMS) {
        mtk_call_error(&call, MTK_ERR_SHAPE, "%d sizes is more than mtk supports (%d)", (int)n, MTK_MAX_DIMS);
        return NULL;
    }
    call.args[0] = mtk_value_tensor(x);
    call.args[1] = mtk_value_int_list(ctx, ints, n);
    if (call.args[1].kind == MTK_VALUE_NONE) return NULL;
    return mtk_op_run_tensor(&call);
}

static mtk_tensor *run_with_tensor(mtk_ctx *ctx, mtk_op_id id, mtk_tensor *x, mtk_tensor *other)
{
    if (!x || !other) return NULL;
    mtk_op_call call;
    mtk_op_call_init(&call, ctx, mtk_op_by_id(id));
    call.args[0] = mtk_value_tensor(x);
    call.args[1] = mtk_value_tensor(other);
    return mtk_op_run_tensor(&call);
}

mtk_tensor *mtk_view(mtk_ctx *ctx, mtk_tensor *x, const int64_t *shape, int32_t ndim)
{
    return run_with_ints(ctx, OPID_VIEW, x, shape, ndim);
}

mtk_tensor *mtk_reshape(mtk_ctx *ctx, mtk_tensor *x, const int64_t *shape, int32_t ndim)
{
    return run_with_ints(ctx, OPID_RESHAPE, x, shape, ndim);
}

mtk_tensor *mtk_view_as(mtk_ctx *ctx, mtk_tensor *x, mtk_tensor *other)
{
    return run_with_tensor(ctx, OPID_VIEW_AS, x, other);
}

mtk_tensor *mtk_reshape_as(mtk_ctx *ctx, mtk_tensor *x, mtk_tensor *other)
{
    return run_with_tensor(ctx, OPID_RESHAPE_AS, x, other);
}

mtk_tensor *mtk_flatten(mtk_ctx *ctx, mtk_tensor *x, int64_t start_dim, int64_t end_dim)
{
    if (!x) return NULL;
    mtk_op_call call;
    mtk_op_call_init(&call, ctx, mtk_op_by_id(OPID_FLATTEN));
    call.args[0] = mtk_value_tensor(x);
    call.args[1] = mtk_value_int(start_dim);
    call.args[2] = mtk_value_int(end_dim);
    return mtk_op_run_tensor(&call);
}

mtk_tensor *mtk_unflatten(mtk_ctx *ctx, mtk_tensor *x, int64_t dim, const int64_t *sizes, int32_t n)
{
    if (!x) return NULL;
    mtk_op_call call;
    mtk_op_call_init(&call, ctx, mtk_op_by_id(OPID_UNFLATTEN));
    if (n < 0 || n > MTK_MAX_DIMS) {
        mtk_call_error(&call, MTK_ERR_SHAPE, "%d sizes is more than mtk supports (%d)", (int)n, MTK_MAX_DIMS);
        return NULL;
    }
    call.args[0] = mtk_value_tensor(x);
    call.args[1] = mtk_value_int(dim);
    call.args[2] = mtk_value_int_list(ctx, sizes, n);
    if (call.args[2].kind == MTK_VALUE_NONE) return NULL;
    return mtk_op_run_tensor(&call);
}

mtk_tensor *mtk_contiguous_format(mtk_ctx *ctx, mtk_tensor *x, mtk_memory_format format)
{
    static const char *const names[] = { "preserve_format", "contiguous_format", "channels_last",
                                         "channels_last_3d" };
    if (!x) return NULL;
    mtk_op_call call;
    mtk_op_call_init(&call, ctx, mtk_op_by_id(OPID_CONTIGUOUS));
    call.args[0] = mtk_value_tensor(x);
    if ((unsigned)format < sizeof names / sizeof names[0]) call.args[1] = mtk_value_string(names[format]);
    return mtk_op_run_tensor(&call);
}

mtk_tensor *mtk_contiguous(mtk_ctx *ctx, mtk_tensor *x)
{
    return mtk_contiguous_format(ctx, x, MTK_MEMORY_FORMAT_CONTIGUOUS);
}
