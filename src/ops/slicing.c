/* Views of a part of a tensor: narrow, select, slice, and the list-valued
 * split, chunk and unbind.  They move the storage offset to the first
 * element kept and shrink (or drop) one dim. */
#include "ops/view.h"
#include "ops/registry.h"
#include "ops/op_util.h"
#include "mtk/ops/view.h"

#include <string.h>

/* x[..., start:start + length*step:step, ...] along `dim` (already valid). */
static mtk_tensor *slice_of(mtk_op_call *call, const mtk_tensor *x, int32_t dim, int64_t start, int64_t length,
                            int64_t step)
{
    int64_t shape[MTK_MAX_DIMS], stride[MTK_MAX_DIMS];
    memcpy(shape, x->shape, (size_t)x->ndim * sizeof *shape);
    memcpy(stride, x->stride, (size_t)x->ndim * sizeof *stride);
    shape[dim] = length;
    stride[dim] = (int64_t)((uint64_t)x->stride[dim] * (uint64_t)step); /* wraps like torch's */
    int64_t offset;
    if (!ops_offset_of(call, x->storage_offset, start, x->stride[dim], &offset)) return NULL;
    return mtk_view_make(call, x, shape, stride, x->ndim, offset);
}

static bool single(mtk_op_call *call, mtk_tensor *t)
{
    if (!t || !mtk_call_set_outputs(call, 1)) return false;
    mtk_call_output(call, 0, t, 0);
    return true;
}

/* ----------------------------------------------------- narrow/select/slice */

/* narrow's checks; on success *start_out is the non-negative start. */
static bool narrow_check(mtk_op_call *call, const mtk_tensor *x, int64_t dim_arg, int64_t start, int64_t length,
                         int32_t *dim_out, int64_t *start_out)
{
    if (x->ndim == 0) return mtk_call_error(call, MTK_ERR_INDEX, "narrow() cannot be applied to a 0-dim tensor.");
    if (length < 0) return mtk_call_error(call, MTK_ERR_INDEX, "narrow(): length must be non-negative.");
    int32_t dim = mtk_view_wrap_dim(call, dim_arg, x->ndim);
    if (dim < 0) return false;
    int64_t size = x->shape[dim];
    if (start < -size || start > size)
        return mtk_call_error(call, MTK_ERR_INDEX,
                              "start out of range (expected to be in range of [%lld, %lld], but got %lld)",
                              (long long)-size, (long long)size, (long long)start);
    if (start < 0) start += size;
    if (start > size - length)
        return mtk_call_error(call, MTK_ERR_INDEX, "start (%lld) + length (%lld) exceeds dimension size (%lld).",
                              (long long)start, (long long)length, (long long)size);
    *dim_out = dim;
    *start_out = start;
    return true;
}

bool mtk_narrow_meta(mtk_op_call *call)
{
    const mtk_tensor *x = arg_tensor(call, 0);
    int32_t dim = 0;
    int64_t start = 0, length = arg_int(call, 3);
    if (!narrow_check(call, x, arg_int(call, 1), arg_int(call, 2), length, &dim, &start)) return false;
    return single(call, slice_of(call, x, dim, start, length, 1));
}

static mtk_tensor *select_of(mtk_op_call *call, const mtk_tensor *x, int32_t dim, int64_t index)
{
    int64_t shape[MTK_MAX_DIMS], stride[MTK_MAX_DIMS];
    int32_t n = 0;
    for (int32_t d = 0; d < x->ndim; d++)
        if (d != dim) shape[n] = x->shape[d], stride[n++] = x->stride[d];
    int64_t offset;
    if (!ops_offset_of(call, x->storage_offset, index, x->stride[dim], &offset)) return NULL;
    return mtk_view_make(call, x, shape, stride, n, offset);
}

bool mtk_select_meta(mtk_op_call *call)
{
    const mtk_tensor *x = arg_tensor(call, 0);
    char buf[256];
    if (x->ndim == 0) return mtk_call_error(call, MTK_ERR_INDEX, "select() cannot be applied to a 0-dim tensor.");
    int32_t dim = mtk_view_wrap_dim(call, arg_int(call, 1), x->ndim);
    if (dim < 0) return false;
    int64_t index = arg_int(call, 2), size = x->shape[dim];
    if (index < -size || index >= size)
        return mtk_call_error(call, MTK_ERR_INDEX, "select(): index %lld out of range for tensor of size %s at dimension %d",
                              (long long)index, mtk_shape_list_str(x->shape, x->ndim, buf, sizeof buf), (int)dim);
    if (index < 0) index += size;
    return single(call, select_of(call, x, dim, index));
}

bool mtk_slice_meta(mtk_op_call *call)
{
    const mtk_tensor *x = arg_tensor(call, 0);
    if (x->ndim == 0) return mtk_call_error(call, MTK_ERR_INDEX, "slice() cannot be applied to a 0-dim tensor.");
    int32_t dim = mtk_view_wrap_dim(call, arg_int(call, 1), x->ndim);
    if (dim < 0) return false;
    int64_t step = arg_int(call, 4), size = x->shape[dim];
    if (step <= 0) return mtk_call_error(call, MTK_ERR_INVALID_ARGUMENT, "slice step must be positive");
    int64_t start = arg_is_none(call, 2) ? 0 : arg_int(call, 2);
    int64_t end = arg_is_none(call, 3) ? INT64_MAX : arg_int(call, 3);
    /* Python slicing: negatives count from the end, then clamp */
    if (start < 0) start += size;
    if (end < 0) end += size;
    if (start < 0) start = 0;
    else if (start > size) start = size;
    if (end < start) end = start;
    else if (end > size) end = size;
    int64_t span = end - start;
    int64_t length = span == 0 ? 0 : 1 + (span - 1) / step;
    return single(call, slice_of(call, x, dim, start, length, step));
}

/* ------------------------------------------------------- list results */

/* Describes `n` outputs (filled by the caller) and makes the call's result
 * a list of them, as torch returns for split/chunk/unbind. */
static bool list_outputs(mtk_op_call *call, int64_t n)
{
    if (n > MTK_MAX_OP_OUTPUTS)
        return mtk_call_error(call, MTK_ERR_INVALID_ARGUMENT,
                              "would return %lld tensors, more than mtk's limit of %d tensors from one op "
                              "(MTK_MAX_OP_OUTPUTS)",
                              (long long)n, MTK_MAX_OP_OUTPUTS);
    if (!mtk_call_set_outputs(call, (int32_t)n)) return false;
    call->result = mtk_value_list(call->ctx, (int32_t)n, true); /* Python gives a tuple */
    return call->result.kind == MTK_VALUE_TUPLE;
}

static bool put_piece(mtk_op_call *call, int32_t i, mtk_tensor *t)
{
    if (!t) return false;
    mtk_call_output(call, i, t, 0);
    call->result.as.list.items[i] = mtk_value_tensor(t);
    return true;
}

/* Pieces of lengths sizes[n] along dim (they sum to the dim's size). */
static bool pieces(mtk_op_call *call, const mtk_tensor *x, int32_t dim, const int64_t *sizes, int64_t n)
{
    if (!list_outputs(call, n)) return false;
    int64_t start = 0;
    for (int64_t i = 0; i < n; i++) {
        if (!put_piece(call, (int32_t)i, slice_of(call, x, dim, start, sizes[i], 1))) return false;
        start += sizes[i];
    }
    return true;
}

/* Pieces of `split_size` along dim, the last one shorter. */
static bool equal_pieces(mtk_op_call *call, const mtk_tensor *x, int32_t dim, int64_t split_size, int64_t n)
{
    int64_t size = x->shape[dim];
    if (!list_outputs(call, n)) return false;
    for (int64_t i = 0; i < n; i++) {
        int64_t start = i * split_size;
        int64_t length = i + 1 < n ? split_size : size - start;
        if (!put_piece(call, (int32_t)i, slice_of(call, x, dim, start, length, 1))) return false;
    }
    return true;
}

static bool split_by_size(mtk_op_call *call, const mtk_tensor *x, int32_t dim, int64_t split_size)
{
    int64_t size = x->shape[dim];
    if (split_size < 0)
        return mtk_call_error(call, MTK_ERR_INVALID_ARGUMENT,
                              "split expects split_size be non-negative, but got split_size=%lld",
                              (long long)split_size);
    if (split_size == 0 && size != 0)
        return mtk_call_error(call, MTK_ERR_INVALID_ARGUMENT,
                              "split_size can only be 0 if dimension size is 0, but got dimension size of %lld",
                              (long long)size);
    int64_t n = 1; /* at least one piece, even when split_size > size */
    if (split_size > 0 && size > 0) n = 1 + (size - 1) / split_size;
    return equal_pieces(call, x, dim, split_size, n);
}

static bool split_by_sizes(mtk_op_call *call, const mtk_tensor *x, int32_t dim, const mtk_value *list)
{
    char buf[512];
    int32_t n = list->as.list.count;
    int64_t *sizes = mtk_ctx_alloc(call->ctx, (size_t)(n > 0 ? n : 1) * sizeof *sizes);
    if (!sizes) return false;
    int64_t total = 0;
    bool overflow = false;
    for (int32_t i = 0; i < n; i++) {
        sizes[i] = list->as.list.items[i].as.i;
        if (__builtin_add_overflow(total, sizes[i], &total)) overflow = true;
    }
    for (int32_t i = 0; i < n; i++)
        if (sizes[i] < 0)
            return mtk_call_error(call, MTK_ERR_INVALID_ARGUMENT,
                                  "split_with_sizes expects split_sizes have only non-negative entries, but got "
                                  "split_sizes=%s",
                                  mtk_shape_list_str(sizes, n, buf, sizeof buf));
    if (overflow || total != x->shape[dim])
        return mtk_call_error(call, MTK_ERR_SHAPE,
                              "split_with_sizes expects split_sizes to sum exactly to %lld (input tensor's size at "
                              "dimension %lld), but got split_sizes=%s",
                              (long long)x->shape[dim], (long long)arg_int(call, 2),
                              mtk_shape_list_str(sizes, n, buf, sizeof buf));
    return pieces(call, x, dim, sizes, n);
}

bool mtk_split_meta(mtk_op_call *call)
{
    const mtk_tensor *x = arg_tensor(call, 0);
    const mtk_value *how = &call->args[1];
    if (x->ndim == 0) return mtk_call_error(call, MTK_ERR_SHAPE, "split expects at least a 1-dimensional tensor");
    if (how->kind == MTK_VALUE_INT && how->as.i < 0)
        return mtk_call_error(call, MTK_ERR_INVALID_ARGUMENT,
                              "split expects split_size be non-negative, but got split_size=%lld",
                              (long long)how->as.i);
    int32_t dim = mtk_view_wrap_dim(call, arg_int(call, 2), x->ndim);
    if (dim < 0) return false;
    if (how->kind == MTK_VALUE_INT) return split_by_size(call, x, dim, how->as.i);
    return split_by_sizes(call, x, dim, how);
}

bool mtk_chunk_meta(mtk_op_call *call)
{
    const mtk_tensor *x = arg_tensor(call, 0);
    int64_t chunks = arg_int(call, 1);
    if (x->ndim == 0) return mtk_call_error(call, MTK_ERR_SHAPE, "chunk expects at least a 1-dimensional tensor");
    if (chunks <= 0)
        return mtk_call_error(call, MTK_ERR_INVALID_ARGUMENT, "chunk expects `chunks` to be greater than 0, got: %lld",
                              (long long)chunks);
    int32_t dim = mtk_view_wrap_dim(call, arg_int(call, 2), x->ndim);
    if (dim < 0) return false;
    int64_t size = x->shape[dim];
    int64_t split_size = size / chunks + (size % chunks != 0); /* ceil without overflow */
    if (split_size == 0) { /* size 0: keep the number of chunks, all empty */
        if (!list_outputs(call, chunks)) return false;
        for (int64_t i = 0; i < chunks; i++)
            if (!put_piece(call, (int32_t)i, slice_of(call, x, dim, 0, 0, 1))) return false;
        return true;
    }
    return split_by_size(call, x, dim, split_size);
}

bool mtk_unbind_meta(mtk_op_call *call)
{
    const mtk_tensor *x = arg_tensor(call, 0);
    int32_t dim = mtk_view_wrap_dim(call, arg_int(call, 1), x->ndim);
    if (dim < 0) return false;
    if (x->ndim == 0)
        return mtk_call_error(call, MTK_ERR_INDEX, "Dimension specified as %d but tensor has no dimensions", (int)dim);
    if (!list_outputs(call, x->shape[dim])) return false;
    for (int64_t i = 0; i < x->shape[dim]; i++)
        if (!put_piece(call, (int32_t)i, select_of(call, x, dim, i))) return false;
    return true;
}

/* ------------------------------------------------------------ typed API */

static bool start(mtk_op_call *call, mtk_ctx *ctx, mtk_op_id id, mtk_tensor *x)
{
    if (!x) return false;
    mtk_op_call_init(call, ctx, mtk_op_by_id(id));
    call->args[0] = mtk_value_tensor(x);
    return true;
}

mtk_tensor *mtk_narrow(mtk_ctx *ctx, mtk_tensor *x, int64_t dim, int64_t start_index, int64_t length)
{
    mtk_op_call call;
    if (!start(&call, ctx, OPID_NARROW, x)) return NULL;
    call.args[1] = mtk_value_int(dim);
    call.args[2] = mtk_value_int(start_index);
    call.args[3] = mtk_value_int(length);
    return mtk_op_run_tensor(&call);
}

mtk_tensor *mtk_select(mtk_ctx *ctx, mtk_tensor *x, int64_t dim, int64_t index)
{
    mtk_op_call call;
    if (!start(&call, ctx, OPID_SELECT, x)) return NULL;
    call.args[1] = mtk_value_int(dim);
    call.args[2] = mtk_value_int(index);
    return mtk_op_run_tensor(&call);
}

mtk_tensor *mtk_slice(mtk_ctx *ctx, mtk_tensor *x, int64_t dim, int64_t start_index, int64_t end, int64_t step)
{
    mtk_op_call call;
    if (!start(&call, ctx, OPID_SLICE, x)) return NULL;
    call.args[1] = mtk_value_int(dim);
    call.args[2] = mtk_value_int(start_index);
    call.args[3] = mtk_value_int(end);
    call.args[4] = mtk_value_int(step);
    return mtk_op_run_tensor(&call);
}

int32_t mtk_split(mtk_ctx *ctx, mtk_tensor *x, int64_t split_size, int64_t dim, mtk_tensor **out, int32_t cap)
{
    mtk_op_call call;
    if (!start(&call, ctx, OPID_SPLIT, x)) return -1;
    call.args[1] = mtk_value_int(split_size);
    call.args[2] = mtk_value_int(dim);
    return mtk_op_run_tensors(&call, out, cap);
}

int32_t mtk_split_sizes(mtk_ctx *ctx, mtk_tensor *x, const int64_t *sizes, int32_t n, int64_t dim,
                        mtk_tensor **out, int32_t cap)
{
    mtk_op_call call;
    if (!start(&call, ctx, OPID_SPLIT, x) || n < 0) return -1;
    call.args[1] = mtk_value_int_list(ctx, sizes, n);
    call.args[2] = mtk_value_int(dim);
    if (call.args[1].kind == MTK_VALUE_NONE) return -1;
    return mtk_op_run_tensors(&call, out, cap);
}

int32_t mtk_chunk(mtk_ctx *ctx, mtk_tensor *x, int64_t chunks, int64_t dim, mtk_tensor **out, int32_t cap)
{
    mtk_op_call call;
    if (!start(&call, ctx, OPID_CHUNK, x)) return -1;
    call.args[1] = mtk_value_int(chunks);
    call.args[2] = mtk_value_int(dim);
    return mtk_op_run_tensors(&call, out, cap);
}

int32_t mtk_unbind(mtk_ctx *ctx, mtk_tensor *x, int64_t dim, mtk_tensor **out, int32_t cap)
{
    mtk_op_call call;
    if (!start(&call, ctx, OPID_UNBIND, x)) return -1;
    call.args[1] = mtk_value_int(dim);
    return mtk_op_run_tensors(&call, out, cap);
}
