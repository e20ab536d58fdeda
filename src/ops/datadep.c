/* Ops whose output size depends on the input's values: nonzero,
 * masked_select and unique.  Their meta functions validate the arguments
 * (so a bad call fails the same way on every device) and describe no
 * output; on meta the dispatcher then reports that the size depends on
 * data.  The cpu kernels make their outputs themselves. */
#include "ops/convert.h"
#include "ops/op_util.h"
#include "ops/registry.h"
#include "core/scalar.h"
#include "mtk/ops/convert.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ helpers */

/* A fresh contiguous cpu tensor (strides NULL) with storage, or NULL. */
static mtk_tensor *new_cpu_tensor(mtk_ctx *ctx, mtk_dtype dtype, const int64_t *shape, int32_t ndim,
                                  const int64_t *stride)
{
    mtk_tensor *t = mtk_tensor_new(ctx, dtype, shape, ndim, stride, MTK_DEVICE_CPU);
    if (!t || !mtk_tensor_alloc_storage(t)) return NULL;
    return t;
}

typedef struct pointer_list {
    const char **items;
    int64_t count;
} pointer_list;

static void collect_inner(char **ptrs, const int64_t *bs, int64_t count, void *user)
{
    pointer_list *list = user;
    for (int64_t i = 0; i < count; i++) list->items[list->count++] = ptrs[0] + i * bs[0];
}

/* Addresses of t's elements in row-major order (the caller frees
 * list->items with mtk_ctx_mfree).  False on out of memory. */
static bool element_pointers(mtk_ctx *ctx, const mtk_tensor *t, pointer_list *list)
{
    int64_t n = mtk_tensor_numel(t);
    list->count = 0;
    list->items = mtk_ctx_malloc(ctx, (size_t)(n > 0 ? n : 1) * sizeof *list->items);
    if (!list->items) return mtk_error(ctx, MTK_ERR_OUT_OF_MEMORY, "out of memory");
    int64_t strides[MTK_MAX_DIMS];
    mtk_broadcast_byte_strides(t, t->shape, t->ndim, strides);
    char *base[1] = { mtk_tensor_data(t) };
    const int64_t *s[1] = { strides };
    mtk_foreach_strided(1, base, s, t->shape, t->ndim, collect_inner, list);
    return true;
}

static bool is_nonzero(mtk_dtype dtype, const char *p)
{
    if (mtk_dtype_is_floating(dtype)) return mtk_load_f64(dtype, p) != 0.0; /* NaN counts */
    return mtk_load_i64(dtype, p) != 0;
}

static bool set_outputs(mtk_op_call *call, mtk_tensor *const *outs, int32_t n)
{
    if (!mtk_call_set_outputs(call, n)) return false;
    for (int32_t i = 0; i < n; i++) mtk_call_output(call, i, outs[i], -1);
    return true;
}

/* ------------------------------------------------------------- nonzero */

bool mtk_nonzero_meta(mtk_op_call *call)
{
    (void)call; /* any dtype and shape; the size is the data's business */
    return true;
}

/* (n, ndim) int64 indices with torch's column-major strides (1, n); with
 * as_tuple, one (n,) tensor per dim (a 0-dim input counts as 1-D), each a
 * view of that block. */
bool mtk_nonzero_cpu(mtk_op_call *call)
{
    const mtk_tensor *input = arg_tensor(call, 0);
    bool as_tuple = arg_bool(call, 1);
    pointer_list elems;
    if (!element_pointers(call->ctx, input, &elems)) return false;
    int64_t n = 0;
    for (int64_t i = 0; i < elems.count; i++) n += is_nonzero(input->dtype, elems.items[i]);

    int32_t ndim = input->ndim;
    int64_t shape[2] = { n, ndim }, stride[2] = { 1, n };
    mtk_tensor *block = new_cpu_tensor(call->ctx, MTK_INT64, shape, 2, stride);
    if (!block) {
        mtk_ctx_mfree(call->ctx, elems.items);
        return false;
    }
    // block[row, d] = index of the row-th nonzero element along dim d
    int64_t *indices = mtk_tensor_data(block);
    int64_t counter[MTK_MAX_DIMS] = { 0 }, row = 0;
    for (int64_t i = 0; i < elems.count; i++) {
        if (is_nonzero(input->dtype, elems.items[i])) {
            for (int32_t d = 0; d < ndim; d++) indices[row + d * n] = counter[d];
            row++;
        }
        for (int32_t d = ndim - 1; d >= 0; d--) {
            if (++counter[d] < input->shape[d]) break;
            counter[d] = 0;
        }
    }
    mtk_ctx_mfree(call->ctx, elems.items);
    if (!as_tuple) return set_outputs(call, &block, 1);

    int32_t count = ndim > 0 ? ndim : 1;
    mtk_tensor *parts[MTK_MAX_DIMS];
    mtk_value tuple = mtk_value_list(call->ctx, count, true);
    if (tuple.kind == MTK_VALUE_NONE) return false;
    for (int32_t d = 0; d < count; d++) {
        int64_t one = 1;
        if (ndim == 0) {
            /* a 0-dim input: one all-zero index per nonzero (0 or 1) */
            parts[d] = new_cpu_tensor(call->ctx, MTK_INT64, &n, 1, &one);
            if (!parts[d]) return false;
            memset(mtk_tensor_data(parts[d]), 0, (size_t)n * sizeof(int64_t));
        } else {
            parts[d] = mtk_tensor_new(call->ctx, MTK_INT64, &n, 1, &one, MTK_DEVICE_CPU);
            if (!parts[d]) return false;
            parts[d]->storage_offset = d * n;
            if (!mtk_tensor_set_storage(parts[d], block->storage)) return false;
        }
        tuple.as.list.items[d] = mtk_value_tensor(parts[d]);
    }
    if (!set_outputs(call, parts, count)) return false;
    call->result = tuple;
    return true;
}

/* ------------------------------------------------------- masked_select */

bool mtk_masked_select_meta(mtk_op_call *call)
{
    const mtk_tensor *input = arg_tensor(call, 0), *mask = arg_tensor(call, 1);
    if (mask->dtype != MTK_BOOL) return mtk_call_error(call, MTK_ERR_DTYPE, "expected BoolTensor for mask");
    int64_t shape[MTK_MAX_DIMS];
    int32_t ndim;
    return mtk_broadcast_shapes(call->ctx, call->op->name, input->shape, input->ndim, mask->shape, mask->ndim,
                                shape, &ndim);
}

typedef struct select_state {
    size_t elem_size;
    char *out;     /* NULL: only count */
    int64_t count;
} select_state;

static void select_inner(char **ptrs, const int64_t *bs, int64_t count, void *user)
{
    select_state *st = user;
    const char *value = ptrs[0], *mask = ptrs[1];
    for (int64_t i = 0; i < count; i++, value += bs[0], mask += bs[1]) {
        if (!*(const bool *)mask) continue;
        if (st->out) memcpy(st->out + st->count * (int64_t)st->elem_size, value, st->elem_size);
        st->count++;
    }
}

/* The input's elements where the (broadcast) mask is true, in row-major
 * order of the broadcast shape: a 1-D tensor of the input's dtype. */
bool mtk_masked_select_cpu(mtk_op_call *call)
{
    const mtk_tensor *input = arg_tensor(call, 0), *mask = arg_tensor(call, 1);
    int64_t shape[MTK_MAX_DIMS], sv[MTK_MAX_DIMS], sm[MTK_MAX_DIMS];
    int32_t ndim;
    if (!mtk_broadcast_shapes(call->ctx, call->op->name, input->shape, input->ndim, mask->shape, mask->ndim,
                              shape, &ndim))
        return false;
    mtk_broadcast_byte_strides(input, shape, ndim, sv);
    mtk_broadcast_byte_strides(mask, shape, ndim, sm);
    char *base[2] = { mtk_tensor_data(input), mtk_tensor_data(mask) };
    const int64_t *strides[2] = { sv, sm };
    select_state st = { mtk_dtype_size(input->dtype), NULL, 0 };
    mtk_foreach_strided(2, base, strides, shape, ndim, select_inner, &st);
    int64_t n = st.count;
    mtk_tensor *out = new_cpu_tensor(call->ctx, input->dtype, &n, 1, NULL);
    if (!out) return false;
    st.out = mtk_tensor_data(out);
    st.count = 0;
    mtk_foreach_strided(2, base, strides, shape, ndim, select_inner, &st);
    return set_outputs(call, &out, 1);
}

/* -------------------------------------------------------------- unique */

enum { UQ_INPUT, UQ_SORTED, UQ_INVERSE, UQ_COUNTS, UQ_DIM };

bool mtk_unique_meta(mtk_op_call *call)
{
    const mtk_tensor *input = arg_tensor(call, UQ_INPUT);
    if (arg_is_none(call, UQ_DIM)) return true;
    if (input->ndim == 0)
        return mtk_call_error(call, MTK_ERR_INDEX, "Dimension specified as %lld but tensor has no dimensions",
                              (long long)arg_int(call, UQ_DIM));
    int32_t dim = mtk_wrap_dim(call->ctx, arg_int(call, UQ_DIM), input->ndim);
    if (dim < 0) return false;
    int32_t zero_dims = 0;
    for (int32_t i = 0; i < input->ndim; i++) zero_dims += input->shape[i] == 0;
    if (input->shape[dim] == 0 && zero_dims > 1)
        return mtk_call_error(call, MTK_ERR_SHAPE,
                              "Number of zero sized dimensions is more than one, so unique cannot be applied");
    if (input->shape[dim] != 0 && zero_dims > 0)
        return mtk_call_error(call, MTK_ERR_SHAPE,
                              "There are 0 sized dimensions, and they aren't selected, so unique cannot be "
                              "applied");
    return true;
}

/* Rows to sort: `count` slices of `width` elements each (one element
 * each without dim), compared element by element. */
typedef struct unique_rows {
    const char **elems; /* row r's element j at elems[r * width + j] */
    int64_t width;
    mtk_dtype dtype;
} unique_rows;

static int compare_elements(mtk_dtype dtype, const char *a, const char *b)
{
    if (mtk_dtype_is_floating(dtype)) {
        double x = mtk_load_f64(dtype, a), y = mtk_load_f64(dtype, b);
        bool nx = isnan(x), ny = isnan(y);
        if (nx || ny) return nx && ny ? 0 : nx ? 1 : -1; /* NaN sorts last */
        return x < y ? -1 : x > y;
    }
    int64_t x = mtk_load_i64(dtype, a), y = mtk_load_i64(dtype, b);
    return x < y ? -1 : x > y;
}

static int compare_rows(const unique_rows *rows, int64_t a, int64_t b)
{
    for (int64_t j = 0; j < rows->width; j++) {
        int c = compare_elements(rows->dtype, rows->elems[a * rows->width + j], rows->elems[b * rows->width + j]);
        if (c) return c;
    }
    return 0;
}

/* Rows equal for grouping: NaN never equals anything (each NaN is its own
 * value, as torch's sort-based unique reports). */
static bool rows_equal(const unique_rows *rows, int64_t a, int64_t b)
{
    for (int64_t j = 0; j < rows->width; j++) {
        const char *x = rows->elems[a * rows->width + j], *y = rows->elems[b * rows->width + j];
        if (mtk_dtype_is_floating(rows->dtype)) {
            if (!(mtk_load_f64(rows->dtype, x) == mtk_load_f64(rows->dtype, y))) return false;
        } else if (mtk_load_i64(rows->dtype, x) != mtk_load_i64(rows->dtype, y)) {
            return false;
        }
    }
    return true;
}

/* Stable merge sort of row indices (qsort has no context argument and is
 * not stable; the first of equal values must lead its group). */
static void sort_rows(const unique_rows *rows, int64_t *order, int64_t *tmp, int64_t n)
{
    if (n < 2) return;
    int64_t half = n / 2;
    sort_rows(rows, order, tmp, half);
    sort_rows(rows, order + half, tmp, n - half);
    int64_t i = 0, j = half, k = 0;
    while (i < half && j < n) tmp[k++] = compare_rows(rows, order[j], order[i]) < 0 ? order[j++] : order[i++];
    while (i < half) tmp[k++] = order[i++];
    while (j < n) tmp[k++] = order[j++];
    memcpy(order, tmp, (size_t)n * sizeof *order);
}

/* Sorted unique values (of the whole tensor, or of slices along dim),
 * with inverse indices and counts when asked; always sorted, as torch's
 * cpu unique is. */
bool mtk_unique_cpu(mtk_op_call *call)
{
    mtk_ctx *ctx = call->ctx;
    const mtk_tensor *input = arg_tensor(call, UQ_INPUT);
    bool want_inverse = arg_bool(call, UQ_INVERSE), want_counts = arg_bool(call, UQ_COUNTS);
    bool by_dim = !arg_is_none(call, UQ_DIM);
    int32_t dim = by_dim ? mtk_wrap_dim(ctx, arg_int(call, UQ_DIM), input->ndim) : 0;

    /* view the input as (nrows, width): moveaxis(dim, 0), or flattened */
    mtk_tensor moved = *input;
    if (by_dim) {
        for (int32_t i = dim; i > 0; i--) {
            moved.shape[i] = input->shape[i - 1];
            moved.stride[i] = input->stride[i - 1];
        }
        moved.shape[0] = input->shape[dim];
        moved.stride[0] = input->stride[dim];
    }
    int64_t numel = mtk_tensor_numel(input);
    int64_t nrows = by_dim ? moved.shape[0] : numel;
    int64_t width = by_dim ? (nrows ? numel / nrows : 0) : 1;

    pointer_list elems;
    if (!element_pointers(ctx, &moved, &elems)) return false;
    unique_rows rows = { elems.items, width, input->dtype };
    int64_t *order = mtk_ctx_malloc(ctx, (size_t)(nrows > 0 ? nrows : 1) * 2 * sizeof *order);
    if (!order) {
        mtk_ctx_mfree(ctx, elems.items);
        return mtk_error(ctx, MTK_ERR_OUT_OF_MEMORY, "unique: out of memory");
    }
    for (int64_t r = 0; r < nrows; r++) order[r] = r;
    sort_rows(&rows, order, order + nrows, nrows);

    /* groups: group_of[order position], counts */
    int64_t nunique = 0;
    int64_t *group_start = order + nrows; /* reuse the tmp half: first sorted position of each group */
    for (int64_t s = 0; s < nrows; s++)
        if (s == 0 || !rows_equal(&rows, order[s - 1], order[s])) group_start[nunique++] = s;

    /* output: unique values, (nunique, ...) in moved order, moved back */
    int64_t out_shape[MTK_MAX_DIMS], out_stride[MTK_MAX_DIMS];
    mtk_tensor *outs[3];
    int32_t nout = 0;
    if (by_dim) {
        int64_t moved_shape[MTK_MAX_DIMS], moved_stride[MTK_MAX_DIMS];
        memcpy(moved_shape, moved.shape, sizeof moved_shape);
        moved_shape[0] = nunique;
        mtk_contiguous_strides(moved_shape, input->ndim, moved_stride);
        if (nrows == 0) mtk_contiguous_strides(input->shape, input->ndim, out_stride); /* torch: empty(sizes) */
        for (int32_t i = 0; i < input->ndim; i++) out_shape[i] = input->shape[i];
        out_shape[dim] = nunique;
        if (nrows > 0) out_stride[dim] = moved_stride[0];
        for (int32_t i = 0, j = 1; i < input->ndim && nrows > 0; i++)
            if (i != dim) out_stride[i] = moved_stride[j++];
        outs[nout] = new_cpu_tensor(ctx, input->dtype, out_shape, input->ndim, out_stride);
    } else {
        outs[nout] = new_cpu_tensor(ctx, input->dtype, &nunique, 1, NULL);
    }
    mtk_tensor *values = outs[nout++];
    int64_t inverse_len = by_dim ? nrows : numel;
    mtk_tensor *inverse = NULL, *counts = NULL;
    if (values && want_inverse) {
        if (by_dim) inverse = new_cpu_tensor(ctx, MTK_INT64, &inverse_len, 1, NULL);
        else inverse = new_cpu_tensor(ctx, MTK_INT64, input->shape, input->ndim, NULL);
        outs[nout++] = inverse;
    }
    if (values && want_counts) {
        counts = new_cpu_tensor(ctx, MTK_INT64, &nunique, 1, NULL);
        outs[nout++] = counts;
    }
    bool ok = values && (!want_inverse || inverse) && (!want_counts || counts);
    if (ok) {
        /* values are contiguous in moved order: row g, element j */
        char *dst = mtk_tensor_data(values);
        size_t es = mtk_dtype_size(input->dtype);
        int64_t *inv = inverse ? mtk_tensor_data(inverse) : NULL, *cnt = counts ? mtk_tensor_data(counts) : NULL;
        for (int64_t g = 0; g < nunique; g++) {
            int64_t first = group_start[g], end = g + 1 < nunique ? group_start[g + 1] : nrows;
            for (int64_t j = 0; j < width; j++)
                memcpy(dst + (g * width + j) * (int64_t)es, elems.items[order[first] * width + j], es);
            if (cnt) cnt[g] = end - first;
            if (inv)
                for (int64_t s = first; s < end; s++) inv[order[s]] = g;
        }
        ok = set_outputs(call, outs, nout);
    }
    mtk_ctx_mfree(ctx, order);
    mtk_ctx_mfree(ctx, elems.items);
    return ok;
}

/* ----------------------------------------------------------- typed API */

mtk_tensor *mtk_nonzero(mtk_ctx *ctx, mtk_tensor *input)
{
    mtk_op_call call;
    mtk_op_call_init(&call, ctx, mtk_op_by_id(OPID_NONZERO));
    call.args[0] = mtk_value_tensor(input);
    return mtk_op_run_tensor(&call);
}

mtk_tensor *mtk_masked_select(mtk_ctx *ctx, mtk_tensor *input, mtk_tensor *mask)
{
    mtk_op_call call;
    mtk_op_call_init(&call, ctx, mtk_op_by_id(OPID_MASKED_SELECT));
    call.args[0] = mtk_value_tensor(input);
    call.args[1] = mtk_value_tensor(mask);
    return mtk_op_run_tensor(&call);
}

static mtk_tensor *run_unique(mtk_ctx *ctx, mtk_tensor *input, const int64_t *dim, bool sorted,
                              mtk_tensor **inverse_out, mtk_tensor **counts_out)
{
    mtk_op_call call;
    mtk_op_call_init(&call, ctx, mtk_op_by_id(OPID_UNIQUE));
    call.args[UQ_INPUT] = mtk_value_tensor(input);
    call.args[UQ_SORTED] = mtk_value_bool(sorted);
    call.args[UQ_INVERSE] = mtk_value_bool(inverse_out != NULL);
    call.args[UQ_COUNTS] = mtk_value_bool(counts_out != NULL);
    if (dim) call.args[UQ_DIM] = mtk_value_int(*dim);
    if (inverse_out) *inverse_out = NULL;
    if (counts_out) *counts_out = NULL;
    if (!mtk_op_run(&call)) return NULL;
    int32_t next = 1;
    if (inverse_out) *inverse_out = call.out[next++];
    if (counts_out) *counts_out = call.out[next++];
    return call.out[0];
}

mtk_tensor *mtk_unique(mtk_ctx *ctx, mtk_tensor *input, bool sorted, mtk_tensor **inverse_out,
                       mtk_tensor **counts_out)
{
    return run_unique(ctx, input, NULL, sorted, inverse_out, counts_out);
}

mtk_tensor *mtk_unique_dim(mtk_ctx *ctx, mtk_tensor *input, int64_t dim, bool sorted,
                           mtk_tensor **inverse_out, mtk_tensor **counts_out)
{
    return run_unique(ctx, input, &dim, sorted, inverse_out, counts_out);
}
