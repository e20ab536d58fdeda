/* x[...]: torch's basic indexing of tensors (ints, slices, None, ...),
 * applied left to right through the select, slice and unsqueeze ops as
 * torch's applySlicing does, so the result is a view with torch's exact
 * sizes, strides and offset; and Python's indexing of tuples and lists
 * (x.shape[0], x.shape[1:]). */
#include "eval/eval_internal.h"
#include "mtk/op.h"

#include <string.h>

/* An index or slice bound: an int (a bool counts as one in a slice). */
static bool int_index(const mtk_value *v, int64_t *out)
{
    if (v->kind == MTK_VALUE_INT) *out = v->as.i;
    else if (v->kind == MTK_VALUE_BOOL) *out = v->as.b;
    else return false;
    return true;
}

/* A slice's start, stop and step (has_* false for None or left out). */
typedef struct slice_bounds {
    int64_t start, stop, step;
    bool has_start, has_stop;
} slice_bounds;

static bool read_slice(evaluator *ev, const node *s, slice_bounds *b)
{
    mtk_value v[3];
    int64_t *dest[3] = { &b->start, &b->stop, &b->step };
    bool present[3] = { false, false, false };
    b->step = 1;
    for (int k = 0; k < 3; k++) {
        if (!s->items[k]) continue;
        if (!eval_node(ev, s->items[k], &v[k])) return false;
        if (v[k].kind == MTK_VALUE_NONE) continue;
        if (!int_index(&v[k], dest[k]))
            return eval_error_at(ev, s, MTK_ERR_INVALID_ARGUMENT,
                                 "slice indices must be integers or None, not %s", mtk_value_type_name(&v[k]));
        present[k] = true;
    }
    b->has_start = present[0];
    b->has_stop = present[1];
    if (b->step == 0) return eval_error_at(ev, s, MTK_ERR_INVALID_ARGUMENT, "slice step cannot be zero");
    return true;
}

/* ------------------------------------------------------ tuples and lists */

static bool sequence_subscript(evaluator *ev, const node *n, const mtk_value *seq, mtk_value *out)
{
    const char *type = seq->kind == MTK_VALUE_TUPLE ? "tuple" : "list";
    int64_t count = seq->as.list.count;
    const node *index = n->items[1];
    if (n->count != 2 || n->index_tuple)
        return eval_error_at(ev, n, MTK_ERR_INVALID_ARGUMENT, "%s indices must be integers or slices, not tuple",
                             type);
    if (index->kind == NODE_SLICE) {
        slice_bounds b;
        if (!read_slice(ev, index, &b)) return false;
        /* Python's slice.indices(count) */
        int64_t lower = b.step < 0 ? -1 : 0, upper = b.step < 0 ? count - 1 : count;
        int64_t start = b.has_start ? b.start : (b.step < 0 ? upper : lower);
        int64_t stop = b.has_stop ? b.stop : (b.step < 0 ? lower : upper);
        if (b.has_start) start = start < 0 ? (start + count < lower ? lower : start + count) : (start > upper ? upper : start);
        if (b.has_stop) stop = stop < 0 ? (stop + count < lower ? lower : stop + count) : (stop > upper ? upper : stop);
        int64_t length = 0;
        if (b.step > 0 && stop > start) length = (stop - start - 1) / b.step + 1;
        if (b.step < 0 && start > stop) length = (start - stop - 1) / (-b.step) + 1;
        mtk_value r = mtk_value_list(ev->ctx, (int32_t)length, seq->kind == MTK_VALUE_TUPLE);
        if (r.kind == MTK_VALUE_NONE) return eval_fail_at(ev, n);
        for (int64_t i = 0; i < length; i++) r.as.list.items[i] = seq->as.list.items[start + i * b.step];
        r.as.list.is_size = seq->as.list.is_size;
        *out = r;
        return true;
    }
    mtk_value v;
    int64_t i;
    if (!eval_node(ev, index, &v)) return false;
    if (!int_index(&v, &i))
        return eval_error_at(ev, n, MTK_ERR_INVALID_ARGUMENT, "%s indices must be integers or slices, not %s", type,
                             mtk_value_type_name(&v));
    if (i < -count || i >= count) return eval_error_at(ev, n, MTK_ERR_INDEX, "%s index out of range", type);
    *out = seq->as.list.items[i < 0 ? i + count : i];
    return true;
}

/* --------------------------------------------------------------- tensors */

/* One evaluated index of a tensor subscript. */
typedef enum index_kind { INDEX_INT, INDEX_SLICE, INDEX_NONE, INDEX_ELLIPSIS } index_kind;

typedef struct tensor_index {
    index_kind kind;
    int64_t value;      /* INDEX_INT */
    slice_bounds slice; /* INDEX_SLICE */
    const node *at;
} tensor_index;

/* Reads one index node (a tuple value expands into several, as x[(0, 1)]
 * is x[0, 1]); appends to idx. */
static bool read_index(evaluator *ev, const node *item, tensor_index *idx, int32_t *count, int32_t cap)
{
    mtk_value v;
    if (item->kind == NODE_SLICE) {
        if (*count >= cap) goto too_many;
        idx[*count].kind = INDEX_SLICE;
        idx[*count].at = item;
        if (!read_slice(ev, item, &idx[*count].slice)) return false;
        if (idx[*count].slice.step < 0)
            return eval_error_at(ev, item, MTK_ERR_INVALID_ARGUMENT, "step must be greater than zero");
        (*count)++;
        return true;
    }
    if (item->kind == NODE_ELLIPSIS) {
        v.kind = MTK_VALUE_NONE;
        if (*count >= cap) goto too_many;
        idx[*count].kind = INDEX_ELLIPSIS;
        idx[*count].at = item;
        (*count)++;
        return true;
    }
    if (!eval_node(ev, item, &v)) return false;
    const mtk_value *items = &v;
    int32_t n = 1;
    if (v.kind == MTK_VALUE_TUPLE) items = v.as.list.items, n = v.as.list.count;
    for (int32_t k = 0; k < n; k++) {
        const mtk_value *e = &items[k];
        if (*count >= cap) goto too_many;
        idx[*count].at = item;
        if (e->kind == MTK_VALUE_INT) {
            idx[*count].kind = INDEX_INT;
            idx[*count].value = e->as.i;
        } else if (e->kind == MTK_VALUE_NONE) {
            idx[*count].kind = INDEX_NONE;
        } else if (e->kind == MTK_VALUE_TENSOR || e->kind == MTK_VALUE_LIST || e->kind == MTK_VALUE_BOOL) {
            return eval_error_at(ev, item, MTK_ERR_NOT_IMPLEMENTED,
                                 "advanced indexing (an index that is a %s) is not supported by mtk eval; "
                                 "use index_select(x, dim, index), masked_select or gather",
                                 e->kind == MTK_VALUE_TENSOR ? "tensor" : mtk_value_type_name(e));
        } else {
            return eval_error_at(ev, item, MTK_ERR_INDEX,
                                 "only integers, slices (`:`), ellipsis (`...`), None and long or byte "
                                 "Variables are valid indices (got %s)",
                                 mtk_value_type_name(e));
        }
        (*count)++;
    }
    return true;
too_many:
    return eval_error_at(ev, item, MTK_ERR_INDEX, "too many indices (more than %d)", cap);
}

static bool tensor_subscript(evaluator *ev, const node *n, const mtk_value *x, mtk_value *out)
{
    enum { CAP = 2 * MTK_MAX_DIMS + 2 };
    tensor_index idx[CAP];
    int32_t count = 0, consumed = 0, ellipses = 0;
    for (int32_t i = 1; i < n->count; i++)
        if (!read_index(ev, n->items[i], idx, &count, CAP)) return false;
    for (int32_t i = 0; i < count; i++) {
        if (idx[i].kind == INDEX_INT || idx[i].kind == INDEX_SLICE) consumed++;
        if (idx[i].kind == INDEX_ELLIPSIS) ellipses++;
    }
    const mtk_tensor *t = x->as.tensor;
    if (ellipses > 1)
        return eval_error_at(ev, n, MTK_ERR_INDEX, "an index can only have a single ellipsis ('...')");
    if (t->ndim == 0 && consumed > 0 && idx[0].kind == INDEX_INT)
        return eval_error_at(ev, n, MTK_ERR_INDEX,
                             "invalid index of a 0-dim tensor. Use `tensor.item()` in Python or "
                             "`tensor.item<T>()` in C++ to convert a 0-dim tensor to a number");
    if (consumed > t->ndim)
        return eval_error_at(ev, n, MTK_ERR_INDEX, "too many indices for tensor of dimension %d", (int)t->ndim);
    mtk_value result = *x;
    int64_t dim = 0;
    for (int32_t i = 0; i < count; i++) {
        const mtk_tensor *r = result.as.tensor;
        switch (idx[i].kind) {
        case INDEX_INT: {
            int64_t size = r->shape[dim], k = idx[i].value;
            if (k < -size || k >= size)
                return eval_error_at(ev, idx[i].at, MTK_ERR_INDEX, "index %lld is out of bounds for dimension %lld with size %lld",
                                     (long long)k, (long long)dim, (long long)size);
            mtk_value args[3] = { result, mtk_value_int(dim), mtk_value_int(k) };
            if (!eval_op(ev, idx[i].at, "select", args, 3, &result)) return false;
            break; /* the dim is gone: the next index reads the same position */
        }
        case INDEX_SLICE: {
            const slice_bounds *b = &idx[i].slice;
            mtk_value args[5] = { result, mtk_value_int(dim),
                                  b->has_start ? mtk_value_int(b->start) : mtk_value_none(),
                                  b->has_stop ? mtk_value_int(b->stop) : mtk_value_none(), mtk_value_int(b->step) };
            if (!eval_op(ev, idx[i].at, "slice", args, 5, &result)) return false;
            dim++;
            break;
        }
        case INDEX_NONE: {
            mtk_value args[2] = { result, mtk_value_int(dim) };
            if (!eval_op(ev, idx[i].at, "unsqueeze", args, 2, &result)) return false;
            dim++;
            break;
        }
        case INDEX_ELLIPSIS: dim += t->ndim - consumed; break;
        }
    }
    *out = result;
    return true;
}

bool eval_subscript(evaluator *ev, const node *n, mtk_value *out)
{
    mtk_value x;
    if (!eval_node(ev, n->items[0], &x)) return false;
    if (x.kind == MTK_VALUE_TENSOR && x.as.tensor) return tensor_subscript(ev, n, &x, out);
    if (x.kind == MTK_VALUE_TUPLE || x.kind == MTK_VALUE_LIST) return sequence_subscript(ev, n, &x, out);
    return eval_error_at(ev, n, MTK_ERR_INVALID_ARGUMENT, "'%s' object is not subscriptable",
                         x.kind == MTK_VALUE_DTYPE ? "torch.dtype" : mtk_value_type_name(&x));
}
