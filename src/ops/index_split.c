/* Splitting and repeating: tensor_split (views), tile and
 * repeat_interleave (fresh contiguous tensors). */
#include "ops/index.h"
#include "ops/op_util.h"
#include "ops/view.h"
#include "ops/elementwise.h"

#include <string.h>

/* ---------------------------------------------------------- tensor_split */

/* The split points: `sections` (>= 1) equal-ish pieces, or explicit
 * indices.  count < 0: sections. */
typedef struct split_how {
    int64_t sections;
    const int64_t *indices;
    int32_t count;
    int64_t *owned; /* indices read from a tensor (arena) */
} split_how;

/* Reads the one given form of indices_or_sections (positional, or the
 * keywords sections / indices / tensor_indices_or_sections). */
static bool split_how_of(mtk_op_call *call, split_how *how)
{
    const mtk_value *given = NULL;
    int32_t forms = 0;
    for (int i = 1; i <= 5; i++) {
        if (i == 2) continue; /* dim */
        if (!ix_refuse_explicit_none(call, i)) return false;
        if (!arg_is_none(call, i)) given = &call->args[i], forms++;
    }
    if (forms != 1)
        return mtk_call_error(call, MTK_ERR_INVALID_ARGUMENT,
                              "tensor_split() received an invalid combination of arguments: give exactly one of "
                              "indices_or_sections, sections, indices, tensor_indices_or_sections");
    memset(how, 0, sizeof *how);
    how->count = -1;
    if (given->kind == MTK_VALUE_INT) {
        how->sections = given->as.i;
        return true;
    }
    if (given->kind == MTK_VALUE_LIST || given->kind == MTK_VALUE_TUPLE) {
        int32_t n = given->as.list.count;
        int64_t *idx = mtk_ctx_alloc(call->ctx, (size_t)(n > 0 ? n : 1) * sizeof *idx);
        if (!idx) return false;
        for (int32_t i = 0; i < n; i++) {
            const mtk_value *v = &given->as.list.items[i];
            if (v->kind != MTK_VALUE_INT)
                return mtk_call_error(call, MTK_ERR_INVALID_ARGUMENT,
                                      "tensor_split(): indices must be a tuple of ints, but found element of type "
                                      "%s at pos %d",
                                      mtk_value_type_name(v), (int)i);
            idx[i] = v->as.i;
        }
        how->indices = idx, how->count = n;
        return true;
    }
    if (given->kind != MTK_VALUE_TENSOR)
        return mtk_call_error(call, MTK_ERR_INVALID_ARGUMENT,
                              "tensor_split(): indices_or_sections must be an int, a tuple of ints or a Tensor, not %s",
                              mtk_value_type_name(given));
    const mtk_tensor *t = given->as.tensor;
    char dev[32];
    if (t->device != MTK_DEVICE_CPU)
        return mtk_call_error(call, MTK_ERR_DEVICE,
                              "tensor_split expected tensor_indices_or_sections to be on cpu, but it's on %s",
                              mtk_device_str(t->device, dev, sizeof dev));
    if (t->dtype != MTK_INT64)
        return mtk_call_error(call, MTK_ERR_DTYPE,
                              "tensor_split expected tensor_indices_or_sections to have dtype of long, but got %s",
                              mtk_dtype_cpp_name(t->dtype));
    if (t->ndim > 1)
        return mtk_call_error(call, MTK_ERR_SHAPE,
                              "tensor_split expected tensor_indices_or_sections to be a zero-dimensional or "
                              "one-dimensional tensor, but got a tensor with %d dims",
                              (int)t->ndim);
    const int64_t *data = mtk_tensor_data(t);
    if (t->ndim == 0) {
        how->sections = data[0];
        return true;
    }
    int64_t n = t->shape[0];
    if (n > MTK_MAX_OP_OUTPUTS - 1)
        return mtk_call_error(call, MTK_ERR_INVALID_ARGUMENT,
                              "would return %lld tensors, more than mtk's limit of %d tensors from one op "
                              "(MTK_MAX_OP_OUTPUTS)",
                              (long long)n + 1, MTK_MAX_OP_OUTPUTS);
    int64_t *idx = mtk_ctx_alloc(call->ctx, (size_t)(n > 0 ? n : 1) * sizeof *idx);
    if (!idx) return false;
    for (int64_t i = 0; i < n; i++) idx[i] = data[i * t->stride[0]];
    how->indices = idx, how->count = (int32_t)n;
    return true;
}

/* x[start:end] along dim with Python's slice rules, as a view */
static mtk_tensor *slice_view(mtk_op_call *call, const mtk_tensor *x, int32_t dim, int64_t start, int64_t end)
{
    int64_t size = x->shape[dim];
    if (start < 0) start += size;
    if (end < 0) end += size;
    start = start < 0 ? 0 : start > size ? size : start;
    end = end < start ? start : end > size ? size : end;
    int64_t shape[MTK_MAX_DIMS];
    memcpy(shape, x->shape, (size_t)x->ndim * sizeof *shape);
    shape[dim] = end - start;
    int64_t offset;
    if (!ops_offset_of(call, x->storage_offset, start, x->stride[dim], &offset)) return NULL;
    return mtk_view_make(call, x, shape, x->stride, x->ndim, offset);
}

bool mtk_tensor_split_meta(mtk_op_call *call)
{
    const mtk_tensor *x = arg_tensor(call, 0);
    split_how how;
    if (!split_how_of(call, &how)) return false;
    if (x->ndim == 0)
        return mtk_call_error(call, MTK_ERR_SHAPE,
                              "tensor_split expected at least a 1-dimensional tensor, but got a tensor with 0 dims");
    int32_t dim = mtk_view_wrap_dim(call, arg_int(call, 2), x->ndim);
    if (dim < 0) return false;
    int64_t size = x->shape[dim];
    if (how.count < 0) {
        if (how.sections <= 0)
            return mtk_call_error(call, MTK_ERR_INVALID_ARGUMENT, "number of sections must be larger than 0, got %lld",
                                  (long long)how.sections);
        if (how.sections > MTK_MAX_OP_OUTPUTS)
            return mtk_call_error(call, MTK_ERR_INVALID_ARGUMENT,
                                  "would return %lld tensors, more than mtk's limit of %d tensors from one op "
                                  "(MTK_MAX_OP_OUTPUTS)",
                                  (long long)how.sections, MTK_MAX_OP_OUTPUTS);
        int32_t n = (int32_t)how.sections;
        if (!mtk_call_set_outputs(call, n)) return false;
        int64_t small = size / n, extra = size % n, at = 0;
        for (int32_t i = 0; i < n; i++) {
            int64_t len = small + (i < extra);
            mtk_tensor *piece = slice_view(call, x, dim, at, at + len);
            if (!piece) return false;
            mtk_call_output(call, i, piece, 0);
            at += len;
        }
        return true;
    }
    int32_t n = how.count + 1;
    if (!mtk_call_set_outputs(call, n)) return false;
    for (int32_t i = 0; i < n; i++) {
        int64_t start = i == 0 ? 0 : how.indices[i - 1];
        int64_t end = i == how.count ? size : how.indices[i];
        mtk_tensor *piece = slice_view(call, x, dim, start, end);
        if (!piece) return false;
        mtk_call_output(call, i, piece, 0);
    }
    return true;
}

/* ----------------------------------------------------------------- tile */

bool mtk_tile_meta(mtk_op_call *call)
{
    const mtk_tensor *x = arg_tensor(call, 0);
    int64_t dims[MTK_MAX_DIMS], reps[MTK_MAX_DIMS], shape[MTK_MAX_DIMS];
    int32_t n = mtk_view_ints(call, 1, dims, "dims");
    if (n < 0) return false;
    /* dims padded with leading ones to x's rank, then x.repeat(dims) */
    int32_t ndim = n > x->ndim ? n : x->ndim;
    for (int32_t i = 0; i < ndim; i++) reps[i] = i < ndim - n ? 1 : dims[i - (ndim - n)];
    for (int32_t i = 0; i < ndim; i++)
        if (reps[i] < 0)
            return mtk_call_error(call, MTK_ERR_SHAPE, "Repeats cannot be negative, found %lld at index %d",
                                  (long long)reps[i], (int)i);
    int32_t lead = ndim - x->ndim;
    for (int32_t i = 0; i < ndim; i++) {
        int64_t size = i < lead ? 1 : x->shape[i - lead];
        if (__builtin_mul_overflow(size, reps[i], &shape[i]))
            return mtk_call_error(call, MTK_ERR_OVERFLOW, "the tiled size of dim %d overflows int64", (int)i);
    }
    return ix_single_output(call, x->dtype, shape, ndim, NULL, x);
}

bool mtk_tile_cpu(mtk_op_call *call)
{
    mtk_tensor *out = call->out[0];
    const mtk_tensor *x = arg_tensor(call, 0);
    if (mtk_tensor_numel(out) == 0) return true;
    /* out[i] = x[i mod size] per dim; leading dims of out have no x dim */
    int32_t lead = out->ndim - x->ndim;
    int64_t *maps[MTK_MAX_DIMS] = { NULL };
    mtk_tensor src = *x;
    src.ndim = out->ndim;
    for (int32_t d = 0; d < out->ndim; d++) {
        int64_t size = d < lead ? 1 : x->shape[d - lead];
        src.shape[d] = size;
        src.stride[d] = d < lead ? 0 : x->stride[d - lead];
        maps[d] = mtk_ctx_alloc(call->ctx, (size_t)out->shape[d] * sizeof *maps[d]);
        if (!maps[d]) return false;
        for (int64_t j = 0; j < out->shape[d]; j++) maps[d][j] = j % size;
    }
    ix_copy_mapped(out, &src, (const int64_t *const *)maps);
    return true;
}

/* ----------------------------------------------------- repeat_interleave */

/* The call's form: int repeats, a repeats tensor, or the repeats alone
 * (repeat_interleave(repeats_tensor)). */
typedef enum { RI_INT, RI_TENSOR, RI_SELF } ri_form;

typedef struct ri_plan {
    ri_form form;
    int64_t repeats;          /* RI_INT                                  */
    const mtk_tensor *rep;    /* RI_TENSOR / RI_SELF: the repeats tensor */
    bool flatten;             /* dim=None: the input is flattened        */
    int32_t dim;              /* the repeated dim (0 when flattened)     */
    int64_t in_size;          /* input size along dim                    */
    int64_t out_size;         /* output size along dim, -1: unknown      */
} ri_plan;

/* Sum of a cpu repeats tensor after torch's cpu checks; -1 (error set)
 * when they fail. */
static int64_t repeats_sum(mtk_op_call *call, const mtk_tensor *rep)
{
    if (rep->ndim != 1)
        return mtk_call_error(call, MTK_ERR_SHAPE, "repeat_interleave only accept 1D vector as repeat"), -1;
    if (!ix_is_index_dtype(rep->dtype))
        return mtk_call_error(call, MTK_ERR_DTYPE, "\"repeat_interleave_cpu\" not implemented for '%s'",
                              mtk_dtype_cpp_name(rep->dtype)), -1;
    const char *p = mtk_tensor_data(rep);
    int64_t es = (int64_t)mtk_dtype_size(rep->dtype), sum = 0;
    for (int64_t i = 0; i < rep->shape[0]; i++) {
        int64_t r = ix_load_index(rep->dtype, p + i * rep->stride[0] * es);
        if (r < 0) return mtk_call_error(call, MTK_ERR_INVALID_ARGUMENT, "repeats can not be negative"), -1;
        if (__builtin_add_overflow(sum, r, &sum))
            return mtk_call_error(call, MTK_ERR_OVERFLOW, "the repeated size overflows int64"), -1;
    }
    return sum;
}

static bool ri_plan_of(mtk_op_call *call, ri_plan *plan)
{
    const mtk_tensor *x = arg_tensor(call, 0);
    const mtk_value *repeats = &call->args[1];
    bool has_dim = !arg_is_none(call, 2), has_size = !arg_is_none(call, 3);
    int64_t output_size = has_size ? arg_int(call, 3) : -1;
    memset(plan, 0, sizeof *plan);
    plan->out_size = -1;
    char dev[32];
    if (!ix_refuse_explicit_none(call, 1)) return false;

    if (repeats->kind == MTK_VALUE_NONE) { /* repeat_interleave(repeats) */
        if (has_dim)
            return mtk_call_error(call, MTK_ERR_INVALID_ARGUMENT,
                                  "repeat_interleave() received an invalid combination of arguments: dim needs "
                                  "repeats");
        plan->form = RI_SELF, plan->rep = x;
        if (x->device == MTK_DEVICE_META) {
            if (!has_size)
                return mtk_call_error(call, MTK_ERR_DATA_DEPENDENT,
                                      "the output size depends on the values of repeats, and a meta tensor has "
                                      "none: pass output_size (cannot repeat_interleave a meta tensor without "
                                      "output_size)");
            plan->out_size = output_size;
            return true;
        }
        int64_t sum = repeats_sum(call, x);
        if (sum < 0) return false;
        if (has_size && output_size != sum && mtk_tensor_numel(x) > 0) /* torch checks no empty repeats */
            return mtk_call_error(call, MTK_ERR_SHAPE, "allocated size does not match required size");
        plan->out_size = sum;
        return true;
    }

    plan->flatten = !has_dim;
    if (has_dim) {
        int32_t d = mtk_view_wrap_dim(call, arg_int(call, 2), x->ndim);
        if (d < 0) return false;
        if (x->ndim == 0) /* torch unsqueezes (or sizes) dim 0 of a 0-dim tensor */
            return mtk_call_error(call, MTK_ERR_INDEX, "Dimension out of range (expected to be in range of [-1, 0], "
                                  "but got 1)");
        plan->dim = d;
        plan->in_size = x->shape[d];
    } else {
        plan->dim = 0;
        plan->in_size = mtk_tensor_numel(x);
    }

    if (repeats->kind == MTK_VALUE_INT) {
        plan->form = RI_INT, plan->repeats = repeats->as.i;
        if (plan->repeats < 0) return mtk_call_error(call, MTK_ERR_INVALID_ARGUMENT, "Repeats must be non-negative");
        if (__builtin_mul_overflow(plan->repeats, plan->in_size, &plan->out_size))
            return mtk_call_error(call, MTK_ERR_OVERFLOW, "the repeated size overflows int64");
        if (has_size && output_size != plan->out_size)
            return mtk_call_error(call, MTK_ERR_SHAPE, "Invalid output_size, expected %lld but got %lld",
                                  (long long)plan->out_size, (long long)output_size);
        return true;
    }
    if (repeats->kind != MTK_VALUE_TENSOR)
        return mtk_call_error(call, MTK_ERR_INVALID_ARGUMENT,
                              "repeat_interleave(): argument 'repeats' must be int or Tensor, not %s",
                              mtk_value_type_name(repeats));
    const mtk_tensor *rep = repeats->as.tensor;
    plan->form = RI_TENSOR, plan->rep = rep;
    if (rep->device != x->device && !(rep->device == MTK_DEVICE_CPU && x->device == MTK_DEVICE_META)) {
        char dev2[32];
        return mtk_call_error(call, MTK_ERR_DEVICE,
                              "Expected all tensors to be on the same device, but found at least two devices, %s "
                              "and %s!",
                              mtk_device_str(x->device, dev, sizeof dev), mtk_device_str(rep->device, dev2, sizeof dev2));
    }
    bool broadcast = rep->ndim == 0 || (rep->ndim == 1 && rep->shape[0] == 1);
    if (!broadcast && rep->ndim == 1 && rep->shape[0] != plan->in_size)
        return mtk_call_error(call, MTK_ERR_SHAPE,
                              "repeats must have the same size as input along dim, but got repeats.size(0) = %lld and "
                              "input.size(%d) = %lld",
                              (long long)rep->shape[0], (int)plan->dim, (long long)plan->in_size);
    if (rep->ndim > 1) return mtk_call_error(call, MTK_ERR_SHAPE, "repeats must be 0-dim or 1-dim tensor");
    if (rep->device == MTK_DEVICE_META) {
        if (!has_size)
            return mtk_call_error(call, MTK_ERR_DATA_DEPENDENT,
                                  "the output size depends on the values of repeats, and a meta tensor has none: "
                                  "pass output_size (cannot repeat_interleave a meta tensor without output_size)");
        plan->out_size = output_size;
        return true;
    }
    /* cpu repeats: their values give the size (torch checks them as a 1-D
     * vector, after broadcasting a single value) */
    if (broadcast) {
        mtk_tensor one = *rep;
        one.ndim = 1, one.shape[0] = plan->in_size, one.stride[0] = 0;
        int64_t sum = repeats_sum(call, &one);
        if (sum < 0) return false;
        plan->out_size = sum;
    } else {
        int64_t sum = repeats_sum(call, rep);
        if (sum < 0) return false;
        plan->out_size = sum;
    }
    if (has_size && output_size != plan->out_size && plan->in_size > 0) /* as above */
        return mtk_call_error(call, MTK_ERR_SHAPE, "allocated size does not match required size");
    return true;
}

bool mtk_repeat_interleave_meta(mtk_op_call *call)
{
    const mtk_tensor *x = arg_tensor(call, 0);
    ri_plan plan;
    if (!ri_plan_of(call, &plan)) return false;
    if (plan.form == RI_SELF) return ix_single_output(call, x->dtype, &plan.out_size, 1, NULL, NULL);
    int64_t shape[MTK_MAX_DIMS];
    int32_t ndim = 1;
    if (plan.flatten) {
        shape[0] = plan.out_size;
    } else {
        ndim = x->ndim;
        memcpy(shape, x->shape, (size_t)ndim * sizeof *shape);
        shape[plan.dim] = plan.out_size;
    }
    return ix_single_output(call, x->dtype, shape, ndim, NULL, x);
}

/* map[j]: the input position output position j repeats */
static int64_t *repeat_map(mtk_op_call *call, const ri_plan *plan)
{
    int64_t *map = mtk_ctx_malloc(call->ctx, (size_t)(plan->out_size > 0 ? plan->out_size : 1) * sizeof *map);
    if (!map) {
        mtk_call_error(call, MTK_ERR_OUT_OF_MEMORY, "out of memory");
        return NULL;
    }
    if (plan->form == RI_INT) {
        for (int64_t j = 0; j < plan->out_size; j++) map[j] = j / plan->repeats;
        return map;
    }
    const mtk_tensor *rep = plan->rep;
    const char *p = mtk_tensor_data(rep);
    int64_t es = (int64_t)mtk_dtype_size(rep->dtype), count, step, at = 0;
    if (plan->form == RI_SELF) {
        count = rep->shape[0], step = rep->stride[0];
    } else { /* one value per input position, or one for all */
        count = plan->in_size;
        step = rep->ndim == 0 || rep->shape[0] == 1 ? 0 : rep->stride[0];
    }
    for (int64_t i = 0; i < count; i++) {
        int64_t r = ix_load_index(rep->dtype, p + i * step * es);
        for (int64_t k = 0; k < r && at < plan->out_size; k++) map[at++] = i;
    }
    return map;
}

bool mtk_repeat_interleave_cpu(mtk_op_call *call)
{
    mtk_tensor *out = call->out[0];
    const mtk_tensor *x = arg_tensor(call, 0);
    ri_plan plan;
    if (!ri_plan_of(call, &plan)) return false;
    int64_t *map = repeat_map(call, &plan);
    if (!map) return false;
    bool ok = true;
    if (plan.form == RI_SELF) {
        /* the positions themselves, in the repeats' dtype */
        char *dst = mtk_tensor_data(out);
        for (int64_t j = 0; j < plan.out_size; j++) {
            if (out->dtype == MTK_INT32) ((int32_t *)dst)[j] = (int32_t)map[j];
            else ((int64_t *)dst)[j] = map[j];
        }
    } else if (plan.flatten) {
        mtk_tensor flat;
        void *tmp;
        if ((ok = ix_flat_source(call, x, &flat, &tmp))) {
            const int64_t *maps[1] = { map };
            ix_copy_mapped(out, &flat, maps);
            mtk_ctx_mfree(call->ctx, tmp);
        }
    } else {
        const int64_t *maps[MTK_MAX_DIMS] = { NULL };
        maps[plan.dim] = map;
        ix_copy_mapped(out, x, maps);
    }
    mtk_ctx_mfree(call->ctx, map);
    return ok;
}
