/* Joining tensors: cat (concat, concatenate), stack, hstack, vstack and
 * dstack.
 *
 * Every op is planned as torch's meta device plans cat (torch._refs.cat):
 * the inputs promote to one dtype (torch.result_type; on meta a float8
 * type wins over the others, as torch._refs do), 1-D tensors of shape [0]
 * are skipped (the legacy rule), and the output is channels-last (3d)
 * when every input suggests that memory format, contiguous otherwise.
 * stack, hstack, vstack and dstack feed cat views of their inputs, as
 * torch decomposes them. */
#include "ops/index.h"
#include "ops/elementwise.h"
#include "ops/op_util.h"
#include "ops/view.h"

#include <string.h>

enum { JOIN_CAT, JOIN_STACK, JOIN_HSTACK, JOIN_VSTACK, JOIN_DSTACK };

const ix_info mtk_ix_info_cat = { JOIN_CAT }, mtk_ix_info_stack = { JOIN_STACK };
const ix_info mtk_ix_info_hstack = { JOIN_HSTACK }, mtk_ix_info_vstack = { JOIN_VSTACK },
              mtk_ix_info_dstack = { JOIN_DSTACK };

/* What cat of some inputs gives. */
typedef struct cat_plan {
    mtk_dtype dtype;
    int32_t ndim;
    int32_t dim; /* -1 when every input was skipped */
    int64_t shape[MTK_MAX_DIMS], stride[MTK_MAX_DIMS];
} cat_plan;

static bool skipped(const mtk_tensor *t) { return t->ndim == 1 && t->shape[0] == 0; }

/* Plans cat(views[n], dim) (views: tensor metadata). */
static bool plan_cat(mtk_op_call *call, const mtk_tensor *views, int32_t n, int64_t dim, cat_plan *plan)
{
    mtk_ctx *ctx = call->ctx;
    for (int32_t i = 0; i < n; i++)
        if (views[i].ndim == 0)
            return mtk_call_error(call, MTK_ERR_SHAPE, "zero-dimensional tensor (at position %d) cannot be concatenated",
                                  (int)i);
    /* the rank: of the first tensor that is not 1-D, else 1 */
    const mtk_tensor *example = NULL;
    for (int32_t i = 0; i < n && !example; i++)
        if (views[i].ndim != 1) example = &views[i];
    for (int32_t i = 0; example && i < n; i++) {
        const mtk_tensor *t = &views[i];
        if (t->ndim != example->ndim && !skipped(t))
            return mtk_call_error(call, MTK_ERR_SHAPE,
                                  "Tensors must have same number of dimensions: got %d and %d (tensor number %d "
                                  "in the list)",
                                  (int)example->ndim, (int)t->ndim, (int)i);
    }

    /* the dtype, over every input (skipped ones too) */
    mtk_value *values = mtk_ctx_alloc(ctx, (size_t)n * sizeof *values);
    if (!values) return false;
    for (int32_t i = 0; i < n; i++) values[i] = mtk_value_tensor((mtk_tensor *)&views[i]);
    plan->dtype = call->device == MTK_DEVICE_META ? mtk_meta_result_type(ctx, values, n)
                                                  : mtk_result_type(ctx, values, n);
    if (plan->dtype == MTK_DTYPE_UNDEFINED) return false;

    /* the memory format, over every input too */
    mtk_memory_format format = ix_suggest_memory_format(&views[0]);
    for (int32_t i = 1; i < n && format != MTK_MEMORY_FORMAT_CONTIGUOUS; i++)
        if (ix_suggest_memory_format(&views[i]) != format) format = MTK_MEMORY_FORMAT_CONTIGUOUS;

    const mtk_tensor *first = NULL;
    for (int32_t i = 0; i < n && !first; i++)
        if (!skipped(&views[i])) first = &views[i];
    if (!first) { /* everything skipped: an empty (0,) tensor, dim unchecked */
        plan->ndim = 1, plan->dim = -1;
        plan->shape[0] = 0, plan->stride[0] = 1;
        return true;
    }
    int32_t d = mtk_view_wrap_dim(call, dim, first->ndim);
    if (d < 0) return false;
    plan->ndim = first->ndim, plan->dim = d;
    memcpy(plan->shape, first->shape, (size_t)first->ndim * sizeof *first->shape);
    plan->shape[d] = 0;
    for (int32_t i = 0; i < n; i++) {
        const mtk_tensor *t = &views[i];
        if (skipped(t)) continue;
        for (int32_t k = 0; k < t->ndim; k++)
            if (k != d && t->shape[k] != first->shape[k])
                return mtk_call_error(call, MTK_ERR_SHAPE,
                                      "Sizes of tensors must match except in dimension %d. Expected size %lld but "
                                      "got size %lld for tensor number %d in the list.",
                                      (int)d, (long long)first->shape[k], (long long)t->shape[k], (int)i);
        if (__builtin_add_overflow(plan->shape[d], t->shape[d], &plan->shape[d]))
            return mtk_call_error(call, MTK_ERR_OVERFLOW, "the concatenated size overflows int64");
    }
    ix_format_strides(format, plan->shape, plan->ndim, plan->stride);
    return true;
}

/* ------------------------------------------------- the views each op cats */

/* x.unsqueeze(d) metadata (d in [0, ndim]), as torch computes its stride */
static mtk_tensor unsqueezed(const mtk_tensor *x, int32_t d)
{
    mtk_tensor v = *x;
    for (int32_t k = x->ndim; k > d; k--) v.shape[k] = x->shape[k - 1], v.stride[k] = x->stride[k - 1];
    v.shape[d] = 1;
    v.stride[d] = d >= x->ndim ? 1 : x->shape[d] * x->stride[d];
    v.ndim = x->ndim + 1;
    return v;
}

/* torch.atleast_1d/2d/3d of one tensor (views). */
static mtk_tensor at_least(const mtk_tensor *x, int32_t rank)
{
    mtk_tensor v = *x;
    if (rank >= 1 && v.ndim == 0) v = unsqueezed(&v, 0);               /* ()  -> (1)      */
    if (rank >= 2 && v.ndim == 1) v = unsqueezed(&v, 0);               /* (n) -> (1, n)   */
    if (rank >= 3 && v.ndim == 2) v = unsqueezed(&v, 2);               /* (m, n) -> (m, n, 1) */
    return v;
}

/* The op's inputs as cat sees them, and the dim it cats along. */
typedef struct join_inputs {
    int32_t kind, n;
    mtk_tensor *views;   /* n views (arena) */
    int64_t dim;         /* cat's dim                         */
    int32_t stack_dim;   /* stack: the new dim, wrapped        */
    bool unsqueezed;     /* stack: views got a new last dim    */
} join_inputs;

static bool join_inputs_of(mtk_op_call *call, join_inputs *in)
{
    const ix_info *info = call->op->info;
    const mtk_value *list = &call->args[0];
    in->kind = info->kind;
    in->n = list->as.list.count;
    in->stack_dim = -1;
    in->unsqueezed = false;
    if (in->n == 0) {
        if (in->kind == JOIN_CAT)
            return mtk_call_error(call, MTK_ERR_INVALID_ARGUMENT, "expected a non-empty list of Tensors");
        return mtk_call_error(call, MTK_ERR_INVALID_ARGUMENT, "%s expects a non-empty TensorList", call->op->name);
    }
    in->views = mtk_ctx_alloc(call->ctx, (size_t)in->n * sizeof *in->views);
    if (!in->views) return false;
    for (int32_t i = 0; i < in->n; i++) in->views[i] = *list->as.list.items[i].as.tensor;

    switch (in->kind) {
    case JOIN_CAT: /* concatenate also takes its axis as `dim` */
        in->dim = call->nargs > 2 && !arg_is_none(call, 2) ? arg_int(call, 2) : arg_int(call, 1);
        return true;
    case JOIN_HSTACK:
        for (int32_t i = 0; i < in->n; i++) in->views[i] = at_least(&in->views[i], 1);
        in->dim = in->views[0].ndim == 1 ? 0 : 1;
        return true;
    case JOIN_VSTACK:
        for (int32_t i = 0; i < in->n; i++) in->views[i] = at_least(&in->views[i], 2);
        in->dim = 0;
        return true;
    case JOIN_DSTACK:
        for (int32_t i = 0; i < in->n; i++) in->views[i] = at_least(&in->views[i], 3);
        in->dim = 2;
        return true;
    default: break;
    }
    /* stack: every tensor the same shape; cat along the new dim, or along
     * a new last dim of unsqueezed views */
    const mtk_tensor *t0 = &in->views[0];
    int32_t d = mtk_view_wrap_dim(call, arg_int(call, 1), t0->ndim + 1);
    if (d < 0) return false;
    for (int32_t i = 1; i < in->n; i++) {
        const mtk_tensor *t = &in->views[i];
        if (t->ndim != t0->ndim || memcmp(t->shape, t0->shape, (size_t)t->ndim * sizeof *t->shape) != 0) {
            char a[256], b[256];
            return mtk_call_error(call, MTK_ERR_SHAPE,
                                  "stack expects each tensor to be equal size, but got %s at entry 0 and %s at "
                                  "entry %d",
                                  mtk_shape_list_str(t0->shape, t0->ndim, a, sizeof a),
                                  mtk_shape_list_str(t->shape, t->ndim, b, sizeof b), (int)i);
        }
    }
    if (t0->ndim + 1 > MTK_MAX_DIMS)
        return mtk_call_error(call, MTK_ERR_SHAPE, "%d dimensions is more than mtk supports (%d)", (int)t0->ndim + 1,
                              MTK_MAX_DIMS);
    in->stack_dim = d;
    in->dim = d;
    in->unsqueezed = d == t0->ndim;
    if (in->unsqueezed)
        for (int32_t i = 0; i < in->n; i++) in->views[i] = unsqueezed(&in->views[i], d);
    return true;
}

/* ------------------------------------------------------------ meta */

static bool join_meta(mtk_op_call *call)
{
    join_inputs in;
    cat_plan plan;
    if (!join_inputs_of(call, &in) || !plan_cat(call, in.views, in.n, in.dim, &plan)) return false;
    const mtk_tensor *like = NULL;
    for (int32_t i = 0; i < in.n && !like; i++)
        if (in.views[i].flags & MTK_TENSOR_REQUIRES_GRAD) like = &in.views[i];
    /* cat, or stack along a new last dim (cat of unsqueezed views) */
    if (in.kind != JOIN_STACK || in.unsqueezed)
        return ix_single_output(call, plan.dtype, plan.shape, plan.ndim, plan.stride, like);
    /* stack inside the rank: cat along dim, then view (.., n * s, ..) as
     * (.., n, s, ..) */
    int32_t d = in.stack_dim, ndim = plan.ndim + 1;
    int64_t shape[MTK_MAX_DIMS], stride[MTK_MAX_DIMS];
    for (int32_t k = 0, j = 0; k < ndim; k++) shape[k] = k == d ? in.n : in.views[0].shape[j++];
    if (!ix_view_strides(plan.shape, plan.stride, plan.ndim, shape, ndim, stride))
        return mtk_call_error(call, MTK_ERR_SHAPE, "internal: the stacked result cannot be viewed");
    return ix_single_output(call, plan.dtype, shape, ndim, stride, like);
}

bool mtk_cat_meta(mtk_op_call *call) { return join_meta(call); }

/* ------------------------------------------------------------ cpu */

bool mtk_cat_cpu(mtk_op_call *call)
{
    mtk_tensor *out = call->out[0];
    join_inputs in;
    if (!join_inputs_of(call, &in)) return false;
    if (in.kind == JOIN_STACK) {
        /* input i is out.select(stack_dim, i) */
        int32_t d = in.stack_dim;
        for (int32_t i = 0; i < in.n; i++) {
            const mtk_tensor *src = call->args[0].as.list.items[i].as.tensor;
            mtk_tensor dst = *out;
            dst.storage_offset += i * out->stride[d];
            for (int32_t k = d; k + 1 < out->ndim; k++) dst.shape[k] = out->shape[k + 1], dst.stride[k] = out->stride[k + 1];
            dst.ndim = out->ndim - 1;
            mtk_copy_strided(&dst, src);
        }
        return true;
    }
    if (mtk_tensor_numel(out) == 0) return true;
    int32_t d = mtk_view_wrap_dim(call, in.dim, out->ndim);
    if (d < 0) return false;
    int64_t at = 0;
    for (int32_t i = 0; i < in.n; i++) {
        const mtk_tensor *src = &in.views[i];
        if (skipped(src)) continue;
        mtk_tensor dst = *out; /* out.narrow(d, at, size) */
        dst.shape[d] = src->shape[d];
        dst.storage_offset += at * out->stride[d];
        at += src->shape[d];
        mtk_copy_strided(&dst, src);
    }
    return true;
}
