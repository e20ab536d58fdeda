/* Reading by index: index_select, gather, take_along_dim and
 * F.embedding.  Outputs are fresh contiguous tensors.  Index values are
 * checked on cpu; a meta index has no values, so on meta they are not
 * (as torch). */
#include "ops/index.h"
#include "ops/op_util.h"
#include "ops/view.h"
#include "ops/elementwise.h"

#include <string.h>

static bool float8_on_cpu(mtk_op_call *call, const mtk_tensor *x, const char *kernel)
{
    if (call->device != MTK_DEVICE_CPU || !mtk_dtype_is_float8(x->dtype)) return true;
    return mtk_call_error(call, MTK_ERR_DTYPE, "\"%s\" not implemented for '%s'", kernel, mtk_dtype_cpp_name(x->dtype));
}

/* ---------------------------------------------------------- index_select */

bool mtk_index_select_meta(mtk_op_call *call)
{
    const mtk_tensor *x = arg_tensor(call, 0), *index = arg_tensor(call, 2);
    int64_t dim = arg_int(call, 1), shape[MTK_MAX_DIMS];
    memcpy(shape, x->shape, (size_t)x->ndim * sizeof *shape);
    if (call->device == MTK_DEVICE_META) {
        /* torch's meta kernel: any index, dim checked only for ndim > 0 */
        if (x->ndim > 0) {
            int32_t d = mtk_view_wrap_dim(call, dim, x->ndim);
            if (d < 0) return false;
            shape[d] = mtk_tensor_numel(index);
        }
        return ix_single_output(call, x->dtype, shape, x->ndim, NULL, x);
    }
    int32_t d = mtk_view_wrap_dim(call, dim, x->ndim);
    if (d < 0) return false;
    if (index->ndim > 1) return mtk_call_error(call, MTK_ERR_INDEX, "index_select(): Index is supposed to be a vector");
    if (!ix_is_index_dtype(index->dtype))
        return mtk_call_error(call, MTK_ERR_DTYPE, "index_select(): Expected dtype int32 or int64 for index");
    int64_t n = mtk_tensor_numel(index);
    if (x->ndim == 0) {
        if (n != 1)
            return mtk_call_error(call, MTK_ERR_INDEX,
                                  "index_select(): Index to scalar can have only 1 value, got %lld value(s)",
                                  (long long)n);
    } else {
        if (x->shape[d] == 0 && n > 0)
            return mtk_call_error(call, MTK_ERR_INDEX, "index_select(): self indexing axis dim should be positive");
        shape[d] = n;
    }
    return ix_single_output(call, x->dtype, shape, x->ndim, NULL, x);
}

/* Reads a 0/1-D index tensor into a malloc'ed array, checking every value
 * is in [0, size); NULL (error set) otherwise. */
static int64_t *read_indices(mtk_op_call *call, const mtk_tensor *index, int64_t size, const char *oob_message)
{
    int64_t n = mtk_tensor_numel(index);
    int64_t *values = mtk_ctx_malloc(call->ctx, (size_t)(n > 0 ? n : 1) * sizeof *values);
    if (!values) {
        mtk_call_error(call, MTK_ERR_OUT_OF_MEMORY, "out of memory");
        return NULL;
    }
    const char *p = mtk_tensor_data(index);
    int64_t step = index->ndim ? index->stride[0] : 0, es = (int64_t)mtk_dtype_size(index->dtype);
    for (int64_t i = 0; i < n; i++) {
        values[i] = ix_load_index(index->dtype, p + i * step * es);
        if (values[i] < 0 || values[i] >= size) {
            mtk_call_error(call, MTK_ERR_INDEX, "%s (index %lld, size %lld)", oob_message, (long long)values[i],
                           (long long)size);
            mtk_ctx_mfree(call->ctx, values);
            return NULL;
        }
    }
    return values;
}

bool mtk_index_select_cpu(mtk_op_call *call)
{
    const mtk_tensor *x = arg_tensor(call, 0), *index = arg_tensor(call, 2);
    int32_t d = mtk_view_wrap_dim(call, arg_int(call, 1), x->ndim);
    if (d < 0) return false;
    int64_t *values = read_indices(call, index, x->ndim ? x->shape[d] : 1, "index out of range in self");
    if (!values) return false;
    const int64_t *maps[MTK_MAX_DIMS] = { NULL };
    if (x->ndim > 0) maps[d] = values;
    ix_copy_mapped(call->out[0], x, maps);
    mtk_ctx_mfree(call->ctx, values);
    return true;
}

/* ---------------------------------------------------------------- gather */

/* torch's gather checks (ScatterGatherChecks.h): an int32/int64 index of
 * x's rank, no larger than x apart from dim.  An empty index passes. */
static bool gather_checks(mtk_op_call *call, const mtk_tensor *x, int32_t dim, const mtk_tensor *index)
{
    if (mtk_tensor_numel(index) == 0) return true;
    if (!ix_is_index_dtype(index->dtype))
        return mtk_call_error(call, MTK_ERR_DTYPE, "gather(): Expected dtype int32/int64 for index, but got %s",
                              mtk_dtype_name(index->dtype));
    int32_t xd = x->ndim > 0 ? x->ndim : 1, id = index->ndim > 0 ? index->ndim : 1;
    if (xd != id)
        return mtk_call_error(call, MTK_ERR_SHAPE, "Index tensor must have the same number of dimensions as input tensor");
    for (int32_t d = 0; d < xd; d++) {
        int64_t is = index->ndim ? index->shape[d] : 1, xs = x->ndim ? x->shape[d] : 1;
        if (d != dim && is > xs) {
            char a[256], b[256];
            return mtk_call_error(call, MTK_ERR_SHAPE,
                                  "Size does not match at dimension %d expected index %s to be no larger than self %s "
                                  "apart from dimension %d",
                                  (int)d, mtk_shape_list_str(index->shape, index->ndim, a, sizeof a),
                                  mtk_shape_list_str(x->shape, x->ndim, b, sizeof b), (int)dim);
        }
    }
    return true;
}

bool mtk_gather_meta(mtk_op_call *call)
{
    const mtk_tensor *x = arg_tensor(call, 0), *index = arg_tensor(call, 2);
    int32_t d = mtk_view_wrap_dim(call, arg_int(call, 1), x->ndim);
    if (d < 0 || !gather_checks(call, x, d, index)) return false;
    if (!float8_on_cpu(call, x, "gather_expanded_index")) return false;
    return ix_single_output(call, x->dtype, index->shape, index->ndim, NULL, x);
}

/* out[i] = x[i with dim replaced by index[i]] over out's (index's)
 * shape.  `wrap`: indices are taken modulo x's size (take_along_dim). */
typedef struct gather_job {
    mtk_tensor *out;
    const mtk_tensor *x, *index;
    int32_t dim;
    bool wrap;
} gather_job;

static void gather_chunk(int64_t begin, int64_t end, int32_t chunk, void *user)
{
    (void)chunk;
    const gather_job *job = user;
    const mtk_tensor *x = job->x, *index = job->index, *out = job->out;
    int32_t nd = out->ndim, dim = job->dim;
    int64_t at[MTK_MAX_DIMS] = { 0 }, size = x->ndim ? x->shape[dim] : 1;
    int64_t es = (int64_t)mtk_dtype_size(x->dtype), ies = (int64_t)mtk_dtype_size(index->dtype);
    const char *xs = mtk_tensor_data(x), *is = mtk_tensor_data(index);
    char *os = mtk_tensor_data(out);
    ix_unravel(begin, out->shape, nd, at);
    for (int64_t k = begin; k < end; k++) {
        int64_t i = ix_load_index(index->dtype, is + ix_offset(index, at) * ies);
        if (job->wrap) i = ((i % size) + size) % size;
        int64_t off = 0;
        for (int32_t d = 0; d < x->ndim; d++) off += (d == dim ? i : at[d]) * x->stride[d];
        memcpy(os + ix_offset(out, at) * es, xs + off * es, (size_t)es);
        ix_next_index(at, out->shape, nd);
    }
}

/* Checks every index value (unless wrapped) before any copying. */
static bool gather_bounds(mtk_op_call *call, const gather_job *job)
{
    const mtk_tensor *index = job->index;
    int64_t size = job->x->ndim ? job->x->shape[job->dim] : 1, at[MTK_MAX_DIMS] = { 0 };
    int64_t n = mtk_tensor_numel(index), ies = (int64_t)mtk_dtype_size(index->dtype);
    const char *is = mtk_tensor_data(index);
    for (int64_t k = 0; k < n; k++) {
        int64_t i = ix_load_index(index->dtype, is + ix_offset(index, at) * ies);
        if (job->wrap ? size == 0 : (i < 0 || i >= size))
            return mtk_call_error(call, MTK_ERR_INDEX, "index %lld is out of bounds for dimension %d with size %lld",
                                  (long long)i, (int)job->dim, (long long)size);
        ix_next_index(at, index->shape, index->ndim);
    }
    return true;
}

static bool run_gather(mtk_op_call *call, gather_job *job)
{
    if (!gather_bounds(call, job)) return false;
    ix_parallel_for(mtk_tensor_numel(job->out), 1 << 15, gather_chunk, job);
    return true;
}

bool mtk_gather_cpu(mtk_op_call *call)
{
    const mtk_tensor *x = arg_tensor(call, 0);
    int32_t d = mtk_view_wrap_dim(call, arg_int(call, 1), x->ndim);
    if (d < 0) return false;
    gather_job job = { call->out[0], x, arg_tensor(call, 2), d, false };
    return run_gather(call, &job);
}

/* -------------------------------------------------------- take_along_dim */

/* With a dim: x and indices broadcast against each other except along
 * dim (torch's _take_along_dim_helper); shapes and strides of both. */
typedef struct along_plan {
    mtk_tensor x, index; /* broadcast views */
    int32_t dim;
} along_plan;

static bool along_plan_of(mtk_op_call *call, along_plan *plan)
{
    const mtk_tensor *x = arg_tensor(call, 0), *index = arg_tensor(call, 1);
    if (x->ndim != index->ndim)
        return mtk_call_error(call, MTK_ERR_SHAPE,
                              "torch.take_along_dim(): input and indices should have the same number of dimensions, "
                              "but got %d dimensions for input, and %d dimensions for indices",
                              (int)x->ndim, (int)index->ndim);
    if (index->dtype != MTK_INT64)
        return mtk_call_error(call, MTK_ERR_DTYPE, "torch.take_along_dim(): dtype of indices should be Long but got %s",
                              mtk_dtype_cpp_name(index->dtype));
    int32_t d = mtk_view_wrap_dim(call, arg_int(call, 2), x->ndim);
    if (d < 0) return false;
    if (x->ndim == 0)
        return mtk_call_error(call, MTK_ERR_INDEX, "Dimension specified as 0 but tensor has no dimensions");
    int64_t sizes[MTK_MAX_DIMS], ishape[MTK_MAX_DIMS], xshape[MTK_MAX_DIMS];
    int32_t n;
    memcpy(sizes, x->shape, (size_t)x->ndim * sizeof *sizes);
    sizes[d] = index->shape[d];
    if (!mtk_broadcast_shapes(call->ctx, call->op->name, sizes, x->ndim, index->shape, index->ndim, ishape, &n))
        return false;
    memcpy(sizes, index->shape, (size_t)x->ndim * sizeof *sizes);
    sizes[d] = x->shape[d];
    if (!mtk_broadcast_shapes(call->ctx, call->op->name, sizes, x->ndim, x->shape, x->ndim, xshape, &n)) return false;
    plan->dim = d;
    plan->x = *x, plan->index = *index;
    memcpy(plan->x.shape, xshape, (size_t)n * sizeof *xshape);
    memcpy(plan->index.shape, ishape, (size_t)n * sizeof *ishape);
    mtk_expand_strides(x, xshape, n, plan->x.stride);
    mtk_expand_strides(index, ishape, n, plan->index.stride);
    return true;
}

bool mtk_take_along_dim_meta(mtk_op_call *call)
{
    const mtk_tensor *x = arg_tensor(call, 0), *index = arg_tensor(call, 1);
    if (arg_is_none(call, 2)) {
        /* x.view(-1).gather(0, indices.view(-1)) */
        if (!ix_can_flatten_view(x) || !ix_can_flatten_view(index))
            return mtk_call_error(call, MTK_ERR_SHAPE,
                                  "view size is not compatible with input tensor's size and stride (at least one "
                                  "dimension spans across two contiguous subspaces). Use .reshape(...) instead.");
        int64_t n = mtk_tensor_numel(index);
        if (n > 0 && !ix_is_index_dtype(index->dtype))
            return mtk_call_error(call, MTK_ERR_DTYPE, "gather(): Expected dtype int32/int64 for index, but got %s",
                                  mtk_dtype_name(index->dtype));
        if (!float8_on_cpu(call, x, "gather_expanded_index")) return false;
        return ix_single_output(call, x->dtype, &n, 1, NULL, x);
    }
    along_plan plan;
    if (!along_plan_of(call, &plan) || !float8_on_cpu(call, x, "gather_expanded_index")) return false;
    return ix_single_output(call, x->dtype, plan.index.shape, plan.index.ndim, NULL, x);
}

bool mtk_take_along_dim_cpu(mtk_op_call *call)
{
    const mtk_tensor *x = arg_tensor(call, 0), *index = arg_tensor(call, 1);
    if (arg_is_none(call, 2)) {
        mtk_tensor fx, fi;
        void *tx, *ti;
        if (!ix_flat_source(call, x, &fx, &tx)) return false;
        if (!ix_flat_source(call, index, &fi, &ti)) {
            mtk_ctx_mfree(call->ctx, tx);
            return false;
        }
        gather_job job = { call->out[0], &fx, &fi, 0, false };
        bool ok = run_gather(call, &job);
        mtk_ctx_mfree(call->ctx, tx);
        mtk_ctx_mfree(call->ctx, ti);
        return ok;
    }
    along_plan plan;
    if (!along_plan_of(call, &plan)) return false;
    gather_job job = { call->out[0], &plan.x, &plan.index, plan.dim, true };
    return run_gather(call, &job);
}

/* ------------------------------------------------------------ embedding */

/* F.embedding(input, weight, padding_idx, max_norm, ...): arg 0 the
 * indices, arg 1 the weight. */
bool mtk_embedding_meta(mtk_op_call *call)
{
    const mtk_tensor *input = arg_tensor(call, 0), *weight = arg_tensor(call, 1);
    if (!arg_is_none(call, 2)) {
        int64_t pad = arg_int(call, 2);
        if (weight->ndim == 0)
            return mtk_call_error(call, MTK_ERR_INDEX, "Dimension specified as 0 but tensor has no dimensions");
        if ((pad > 0 && pad >= weight->shape[0]) || (pad < 0 && pad < -weight->shape[0]))
            return mtk_call_error(call, MTK_ERR_INVALID_ARGUMENT, "Padding_idx must be within num_embeddings");
    }
    if (weight->ndim != 2) return mtk_call_error(call, MTK_ERR_SHAPE, "'weight' must be 2-D, got %d-D", (int)weight->ndim);
    if (!ix_is_index_dtype(input->dtype))
        return mtk_call_error(call, MTK_ERR_DTYPE,
                              "Expected tensor for argument #1 'indices' to have one of the following scalar types: "
                              "Long, Int; but got %s instead",
                              mtk_dtype_name(input->dtype));
    if (call->device == MTK_DEVICE_CPU && !arg_is_none(call, 3))
        return mtk_call_error(call, MTK_ERR_NOT_IMPLEMENTED,
                              "max_norm renormalizes the weight in place; mtk's cpu kernel does not do that yet");
    if (input->ndim + 1 > MTK_MAX_DIMS)
        return mtk_call_error(call, MTK_ERR_SHAPE, "%d dimensions is more than mtk supports", (int)input->ndim + 1);
    int64_t shape[MTK_MAX_DIMS];
    memcpy(shape, input->shape, (size_t)input->ndim * sizeof *shape);
    shape[input->ndim] = weight->shape[1];
    return ix_single_output(call, weight->dtype, shape, input->ndim + 1, NULL, weight);
}

bool mtk_embedding_cpu(mtk_op_call *call)
{
    const mtk_tensor *input = arg_tensor(call, 0), *weight = arg_tensor(call, 1);
    mtk_tensor *out = call->out[0]; /* contiguous (input..., D) */
    int64_t n = mtk_tensor_numel(input), rows = weight->shape[0], width = weight->shape[1];
    int64_t at[MTK_MAX_DIMS] = { 0 }, es = (int64_t)mtk_dtype_size(weight->dtype);
    int64_t ies = (int64_t)mtk_dtype_size(input->dtype);
    const char *is = mtk_tensor_data(input), *ws = mtk_tensor_data(weight);
    char *os = mtk_tensor_data(out);
    for (int64_t k = 0; k < n; k++) {
        int64_t i = ix_load_index(input->dtype, is + ix_offset(input, at) * ies);
        if (i < 0 || i >= rows)
            return mtk_call_error(call, MTK_ERR_INDEX, "index out of range in self (index %lld, num_embeddings %lld)",
                                  (long long)i, (long long)rows);
        ix_next_index(at, input->shape, input->ndim);
    }
    memset(at, 0, sizeof at);
    for (int64_t k = 0; k < n; k++) {
        int64_t i = ix_load_index(input->dtype, is + ix_offset(input, at) * ies);
        const char *row = ws + i * weight->stride[0] * es;
        char *dst = os + k * width * es;
        if (weight->stride[1] == 1) {
            memcpy(dst, row, (size_t)(width * es));
        } else {
            for (int64_t j = 0; j < width; j++) memcpy(dst + j * es, row + j * weight->stride[1] * es, (size_t)es);
        }
        ix_next_index(at, input->shape, input->ndim);
    }
    return true;
}
