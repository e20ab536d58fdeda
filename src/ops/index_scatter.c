/* Writing by index and by mask: scatter, scatter_add, index_add,
 * masked_fill and F.one_hot.  Each returns a fresh contiguous tensor (a
 * copy of the input with the writes applied), as torch's meta device
 * describes them. */
#include "ops/index.h"
#include "ops/op_util.h"
#include "ops/view.h"
#include "ops/creation.h"
#include "ops/elementwise.h"
#include "core/scalar.h"

#include <math.h>
#include <string.h>

static bool no_float8_on_cpu(mtk_op_call *call, const mtk_tensor *x, const char *kernel)
{
    if (call->device != MTK_DEVICE_CPU || !mtk_dtype_is_float8(x->dtype)) return true;
    return mtk_call_error(call, MTK_ERR_DTYPE, "\"%s\" not implemented for '%s'", kernel, mtk_dtype_cpp_name(x->dtype));
}

/* ---------------------------------------------------- element arithmetic */

/* One element of the output: read, combined with `v`, written back, in
 * the dtype's own arithmetic (each step rounded to the dtype, as torch's
 * scalar_t arithmetic on cpu). */
typedef enum { COMBINE_SET, COMBINE_ADD, COMBINE_MUL } combine_op;

static void combine(mtk_dtype dtype, char *dst, const char *src, mtk_dtype src_dtype, combine_op op)
{
    if (op == COMBINE_SET) {
        mtk_convert_element(dtype, dst, src_dtype, src);
        return;
    }
    if (mtk_dtype_is_floating(dtype)) {
        double a = mtk_load_f64(dtype, dst), b = mtk_load_f64(src_dtype, src);
        mtk_store_f64(dtype, dst, op == COMBINE_ADD ? a + b : a * b);
    } else {
        uint64_t a = (uint64_t)mtk_load_i64(dtype, dst), b = (uint64_t)mtk_load_i64(src_dtype, src);
        mtk_store_i64(dtype, dst, (int64_t)(op == COMBINE_ADD ? a + b : a * b)); /* wraps */
    }
}

/* The output starts as a copy of the input. */
static void copy_input(mtk_tensor *out, const mtk_tensor *x) { mtk_copy_strided(out, x); }

/* ------------------------------------------------------ scatter (+ _add) */

enum { SCATTER_PLAIN, SCATTER_ADD };
const ix_info mtk_ix_info_scatter = { SCATTER_PLAIN }, mtk_ix_info_scatter_add = { SCATTER_ADD };

typedef struct scatter_form {
    const mtk_tensor *x, *index, *src; /* src NULL: a value */
    mtk_value value;
    int32_t dim;
    combine_op op;
} scatter_form;

static bool scatter_form_of(mtk_op_call *call, scatter_form *f)
{
    const ix_info *info = call->op->info;
    char a[256], b[256];
    memset(f, 0, sizeof *f);
    f->x = arg_tensor(call, 0);
    f->index = arg_tensor(call, 2);
    f->op = info->kind == SCATTER_ADD ? COMBINE_ADD : COMBINE_SET;
    const mtk_value *src = &call->args[3];
    if (info->kind == SCATTER_PLAIN) {
        const mtk_value *value = &call->args[4];
        for (int i = 3; i <= 5; i++)
            if (!ix_refuse_explicit_none(call, i)) return false;
        if ((src->kind == MTK_VALUE_NONE) == (value->kind == MTK_VALUE_NONE))
            return mtk_call_error(call, MTK_ERR_INVALID_ARGUMENT,
                                  "scatter() received an invalid combination of arguments: give src or value");
        if (src->kind == MTK_VALUE_TENSOR) f->src = src->as.tensor;
        else f->value = src->kind != MTK_VALUE_NONE ? *src : *value;
        if (!arg_is_none(call, 5)) {
            const char *reduce = call->args[5].as.s;
            if (strcmp(reduce, "add") == 0) f->op = COMBINE_ADD;
            else if (strcmp(reduce, "multiply") == 0) f->op = COMBINE_MUL;
            else return mtk_call_error(call, MTK_ERR_INVALID_ARGUMENT, "reduce argument must be either add or multiply.");
        }
    } else {
        f->src = src->as.tensor;
    }
    const mtk_tensor *x = f->x, *index = f->index, *s = f->src;
    int32_t d = mtk_view_wrap_dim(call, arg_int(call, 1), x->ndim);
    if (d < 0) return false;
    f->dim = d;
    bool empty = mtk_tensor_numel(index) == 0;
    if (!empty && !ix_is_index_dtype(index->dtype))
        return mtk_call_error(call, MTK_ERR_DTYPE, "%s(): Expected dtype int32/int64 for index", call->op->name);
    if (s && s->dtype != x->dtype)
        return mtk_call_error(call, MTK_ERR_DTYPE, "%s(): Expected self.dtype to be equal to src.dtype", call->op->name);
    if (empty) return true;
    int32_t xd = x->ndim ? x->ndim : 1;
    if (xd != (index->ndim ? index->ndim : 1))
        return mtk_call_error(call, MTK_ERR_SHAPE, "Index tensor must have the same number of dimensions as self tensor");
    for (int32_t k = 0; k < xd; k++) {
        int64_t is = index->ndim ? index->shape[k] : 1, xs = x->ndim ? x->shape[k] : 1;
        if (k != d && is > xs)
            return mtk_call_error(call, MTK_ERR_SHAPE, "Expected index %s to be no larger than self %s apart from dimension %d",
                                  mtk_shape_list_str(index->shape, index->ndim, a, sizeof a),
                                  mtk_shape_list_str(x->shape, x->ndim, b, sizeof b), (int)d);
    }
    if (s) {
        if (xd != (s->ndim ? s->ndim : 1))
            return mtk_call_error(call, MTK_ERR_SHAPE, "Index tensor must have the same number of dimensions as src tensor");
        for (int32_t k = 0; k < xd; k++) {
            int64_t is = index->ndim ? index->shape[k] : 1, ss = s->ndim ? s->shape[k] : 1;
            if (is > ss)
                return mtk_call_error(call, MTK_ERR_SHAPE, "Expected index %s to be no larger than src %s",
                                      mtk_shape_list_str(index->shape, index->ndim, a, sizeof a),
                                      mtk_shape_list_str(s->shape, s->ndim, b, sizeof b));
        }
    }
    return true;
}

bool mtk_scatter_meta(mtk_op_call *call)
{
    scatter_form f;
    if (!scatter_form_of(call, &f)) return false;
    if (!no_float8_on_cpu(call, f.x, f.src ? "scatter_gather_tensor_cpu" : "scatter_gather_scalar_cpu")) return false;
    if (call->device == MTK_DEVICE_CPU && !f.src && !mtk_scalar_fits(call, &f.value, f.x->dtype)) return false;
    return ix_single_output(call, f.x->dtype, f.x->shape, f.x->ndim, NULL, f.x);
}

bool mtk_scatter_cpu(mtk_op_call *call)
{
    mtk_tensor *out = call->out[0];
    scatter_form f;
    if (!scatter_form_of(call, &f)) return false;
    const mtk_tensor *index = f.index, *src = f.src;
    int64_t n = mtk_tensor_numel(index), size = f.x->ndim ? f.x->shape[f.dim] : 1;
    int64_t at[MTK_MAX_DIMS] = { 0 }, es = (int64_t)mtk_dtype_size(out->dtype);
    int64_t ies = (int64_t)mtk_dtype_size(index->dtype);
    const char *is = mtk_tensor_data(index);
    /* every index first: no partial writes on error */
    for (int64_t k = 0; k < n; k++) {
        int64_t i = ix_load_index(index->dtype, is + ix_offset(index, at) * ies);
        if (i < 0 || i >= size)
            return mtk_call_error(call, MTK_ERR_INDEX, "index %lld is out of bounds for dimension %d with size %lld",
                                  (long long)i, (int)f.dim, (long long)size);
        ix_next_index(at, index->shape, index->ndim);
    }
    copy_input(out, f.x);
    char value[16];
    mtk_dtype value_dtype = out->dtype;
    if (!src) mtk_scalar_store(&f.value, out->dtype, value);
    char *os = mtk_tensor_data(out);
    const char *ss = src ? mtk_tensor_data(src) : value;
    if (src) value_dtype = src->dtype;
    memset(at, 0, sizeof at);
    for (int64_t k = 0; k < n; k++) { /* row-major: ascending along dim */
        int64_t i = ix_load_index(index->dtype, is + ix_offset(index, at) * ies), off = 0;
        for (int32_t d = 0; d < out->ndim; d++) off += (d == f.dim ? i : at[d]) * out->stride[d];
        combine(out->dtype, os + off * es, src ? ss + ix_offset(src, at) * es : value, value_dtype, f.op);
        ix_next_index(at, index->shape, index->ndim);
    }
    return true;
}

/* ------------------------------------------------------------- index_add */

/* torch's meta: index_put(x, ...).contiguous(), index_put giving
 * empty_like(x) */
static bool index_add_output(mtk_op_call *call, const mtk_tensor *x)
{
    int64_t stride[MTK_MAX_DIMS];
    const mtk_tensor *ins[1] = { x };
    ix_elementwise_then_contiguous(ins, 1, x->shape, x->ndim, stride);
    return ix_single_output(call, x->dtype, x->shape, x->ndim, stride, x);
}

bool mtk_index_add_meta(mtk_op_call *call)
{
    const mtk_tensor *x = arg_tensor(call, 0), *index = arg_tensor(call, 2), *source = arg_tensor(call, 3);
    const mtk_value *alpha = &call->args[4];
    int32_t d = mtk_view_wrap_dim(call, arg_int(call, 1), x->ndim);
    if (d < 0) return false;
    char a[256], b[256];
    if (call->device == MTK_DEVICE_META) {
        /* torch's meta decomposition (index_put with accumulate) */
        if (index->ndim > 1)
            return mtk_call_error(call, MTK_ERR_INDEX, "Index should have dimension 1 or 0 (got %d)", (int)index->ndim);
        int64_t index_size = index->ndim == 1 ? index->shape[0] : 1, source_size = 1;
        if (source->ndim > 0) {
            if (d >= source->ndim)
                return mtk_call_error(call, MTK_ERR_INDEX,
                                      "Dimension out of range (expected to be in range of [%d, %d], but got %d)",
                                      -(int)source->ndim, (int)source->ndim - 1, (int)d);
            source_size = source->shape[d];
        }
        if (index_size != source_size)
            return mtk_call_error(call, MTK_ERR_SHAPE,
                                  "Number of indices (%lld) should be equal to tensor.size(dim) (%lld), for dim=%d",
                                  (long long)index_size, (long long)source_size, (int)d);
        bool is_one = mtk_value_as_double(alpha) == 1.0;
        if (!is_one && x->dtype != MTK_BOOL && !mtk_dtype_is_floating(x->dtype) && alpha->kind == MTK_VALUE_FLOAT)
            return mtk_call_error(call, MTK_ERR_DTYPE,
                                  "alpha argument of type <class 'float'> cannot be safely cast to type <class 'int'>!");
        return index_add_output(call, x);
    }
    /* torch's cpu checks (index_func_meta_impl) */
    if (index->ndim > 1)
        return mtk_call_error(call, MTK_ERR_INDEX,
                              "index_add_(): Index is supposed to be a vector, but got dim: %d with type: %s and size: %s",
                              (int)index->ndim, mtk_dtype_cpp_name(index->dtype),
                              mtk_shape_list_str(index->shape, index->ndim, a, sizeof a));
    if (!ix_is_index_dtype(index->dtype))
        return mtk_call_error(call, MTK_ERR_DTYPE, "index_add_(): Expected dtype int32/int64 for index but got: %s",
                              mtk_dtype_cpp_name(index->dtype));
    if (x->dtype != source->dtype)
        return mtk_call_error(call, MTK_ERR_DTYPE, "index_add_(): self (%s) and source (%s) must have the same scalar type",
                              mtk_dtype_cpp_name(x->dtype), mtk_dtype_cpp_name(source->dtype));
    if (d != 0 && d >= source->ndim)
        return mtk_call_error(call, MTK_ERR_INDEX,
                              "index_add_(): Indexing dim %d is out of bounds of the source tensor with dim %d", (int)d,
                              (int)source->ndim);
    int64_t numel = mtk_tensor_numel(index), source_size = source->ndim == 0 ? 1 : source->shape[d];
    if (numel != source_size)
        return mtk_call_error(call, MTK_ERR_SHAPE,
                              "index_add_(): Number of indices (%lld) should be equal to source.size(dim) (%lld)",
                              (long long)numel, (long long)source_size);
    bool same = x->ndim == source->ndim;
    for (int32_t k = 0; same && k < x->ndim; k++)
        if (k != d && x->shape[k] != source->shape[k]) same = false;
    if (x->ndim == 0 || source->ndim == 0) same = x->ndim == source->ndim;
    if (!same)
        return mtk_call_error(call, MTK_ERR_SHAPE,
                              "source tensor shape must match self tensor shape, excluding the specified dimension. "
                              "Got self.shape = %s source.shape = %s",
                              mtk_shape_list_str(x->shape, x->ndim, a, sizeof a),
                              mtk_shape_list_str(source->shape, source->ndim, b, sizeof b));
    if (!no_float8_on_cpu(call, x, "index_add_")) return false;
    return index_add_output(call, x);
}

bool mtk_index_add_cpu(mtk_op_call *call)
{
    mtk_tensor *out = call->out[0];
    const mtk_tensor *x = arg_tensor(call, 0), *index = arg_tensor(call, 2), *source = arg_tensor(call, 3);
    int32_t d = mtk_view_wrap_dim(call, arg_int(call, 1), x->ndim);
    if (d < 0) return false;
    int64_t n = mtk_tensor_numel(index), size = x->ndim ? x->shape[d] : 1;
    int64_t step = index->ndim ? index->stride[0] : 0, ies = (int64_t)mtk_dtype_size(index->dtype);
    const char *is = mtk_tensor_data(index);
    for (int64_t k = 0; k < n; k++) {
        int64_t i = ix_load_index(index->dtype, is + k * step * ies);
        if (i < 0 || i >= size)
            return mtk_call_error(call, MTK_ERR_INDEX, "index %lld is out of bounds for dimension %d with size %lld",
                                  (long long)i, (int)d, (long long)size);
    }
    copy_input(out, x);
    /* alpha in the dtype (torch converts it to scalar_t) */
    char alpha[16];
    mtk_scalar_store(&call->args[4], out->dtype, alpha);
    int64_t es = (int64_t)mtk_dtype_size(out->dtype);
    char *os = mtk_tensor_data(out);
    const char *ss = mtk_tensor_data(source);
    /* slice k of source (along d) adds into slice index[k] of out */
    mtk_tensor slice = *source;
    if (slice.ndim > 0) {
        for (int32_t k = d; k + 1 < slice.ndim; k++) slice.shape[k] = source->shape[k + 1], slice.stride[k] = source->stride[k + 1];
        slice.ndim--;
    }
    for (int64_t k = 0; k < n; k++) {
        int64_t i = ix_load_index(index->dtype, is + k * step * ies);
        const char *sbase = ss + (source->ndim ? k * source->stride[d] : 0) * es;
        char *obase = os + (out->ndim ? i * out->stride[d] : 0) * es;
        int64_t at[MTK_MAX_DIMS] = { 0 }, count = mtk_shape_numel(slice.shape, slice.ndim);
        for (int64_t e = 0; e < count; e++) {
            int64_t so = 0, oo = 0;
            for (int32_t j = 0; j < slice.ndim; j++) {
                so += at[j] * slice.stride[j];
                oo += at[j] * out->stride[j < d ? j : j + 1];
            }
            char prod[16];
            memcpy(prod, sbase + so * es, (size_t)es);
            combine(out->dtype, prod, alpha, out->dtype, COMBINE_MUL); /* source * alpha, rounded */
            combine(out->dtype, obase + oo * es, prod, out->dtype, COMBINE_ADD);
            ix_next_index(at, slice.shape, slice.ndim);
        }
    }
    return true;
}

/* ----------------------------------------------------------- masked_fill */

bool mtk_masked_fill_meta(mtk_op_call *call)
{
    const mtk_tensor *x = arg_tensor(call, 0), *mask = arg_tensor(call, 1);
    const mtk_value *value = &call->args[2];
    if (mask->dtype != MTK_BOOL)
        return mtk_call_error(call, MTK_ERR_DTYPE, "masked_fill_ only supports boolean masks, but got mask with dtype %s",
                              mtk_dtype_name(mask->dtype));
    if (value->kind == MTK_VALUE_TENSOR) {
        const mtk_tensor *v = value->as.tensor;
        if (v->ndim != 0)
            return mtk_call_error(call, MTK_ERR_SHAPE,
                                  "only supports a 0-dimensional value tensor, but got tensor with %d dimension(s)",
                                  (int)v->ndim);
        if (v->device != x->device) return mtk_call_error(call, MTK_ERR_DEVICE, "Expected `value` to be on same device as `a`");
    } else if (call->device == MTK_DEVICE_META) {
        /* torch's meta decomposition converts the number to the input's
         * Python type: a non-finite float has no int */
        double v = mtk_value_as_double(value);
        if (!isfinite(v) && value->kind == MTK_VALUE_FLOAT && mtk_dtype_is_integral(x->dtype, false))
            return mtk_call_error(call, MTK_ERR_OVERFLOW, "cannot convert float %s to integer",
                                  isnan(v) ? "NaN" : "infinity");
    }
    if (!no_float8_on_cpu(call, x, "masked_fill")) return false;
    int64_t shape[MTK_MAX_DIMS], stride[MTK_MAX_DIMS];
    int32_t ndim;
    if (!mtk_broadcast_shapes(call->ctx, call->op->name, x->shape, x->ndim, mask->shape, mask->ndim, shape, &ndim))
        return false;
    /* torch's meta: where(mask, value, x).contiguous(), the value a 0-dim
     * tensor on the device (scalar_tensor for a number) */
    mtk_tensor scalar = *x;
    scalar.ndim = 0, scalar.device = MTK_DEVICE_META;
    const mtk_tensor *ins[3] = { mask, &scalar, x };
    ix_elementwise_then_contiguous(ins, 3, shape, ndim, stride);
    return ix_single_output(call, x->dtype, shape, ndim, stride, x);
}

static void fill_where(char **ptrs, const int64_t *bs, int64_t count, void *user)
{
    const char *value = ((void **)user)[0];
    size_t es = *(const size_t *)((void **)user)[1];
    for (int64_t i = 0; i < count; i++)
        if (*(const bool *)(ptrs[1] + i * bs[1])) memcpy(ptrs[0] + i * bs[0], value, es);
}

bool mtk_masked_fill_cpu(mtk_op_call *call)
{
    mtk_tensor *out = call->out[0];
    const mtk_tensor *x = arg_tensor(call, 0), *mask = arg_tensor(call, 1);
    mtk_value value = call->args[2];
    if (value.kind == MTK_VALUE_TENSOR) { /* value.item() */
        const mtk_tensor *v = value.as.tensor;
        const void *p = mtk_tensor_data(v);
        if (v->dtype == MTK_BOOL) value = mtk_value_bool(mtk_load_i64(v->dtype, p) != 0);
        else if (mtk_dtype_is_integral(v->dtype, false)) value = mtk_value_int(mtk_load_i64(v->dtype, p));
        else value = mtk_value_float(mtk_load_f64(v->dtype, p));
    }
    if (!mtk_scalar_fits(call, &value, out->dtype)) return false;
    mtk_copy_strided(out, x); /* x broadcast to out's shape */
    char elem[16];
    size_t es = mtk_dtype_size(out->dtype);
    mtk_scalar_store(&value, out->dtype, elem);
    int64_t so[MTK_MAX_DIMS], sm[MTK_MAX_DIMS];
    mtk_broadcast_byte_strides(out, out->shape, out->ndim, so);
    mtk_broadcast_byte_strides(mask, out->shape, out->ndim, sm);
    char *base[2] = { mtk_tensor_data(out), mtk_tensor_data(mask) };
    const int64_t *strides[2] = { so, sm };
    void *user[2] = { elem, &es };
    mtk_foreach_strided(2, base, strides, out->shape, out->ndim, fill_where, user);
    return true;
}

/* --------------------------------------------------------------- one_hot */

/* min and max of a cpu int64 tensor (numel > 0) */
static void int_range(const mtk_tensor *t, int64_t *lo, int64_t *hi)
{
    int64_t at[MTK_MAX_DIMS] = { 0 }, n = mtk_tensor_numel(t);
    const int64_t *p = mtk_tensor_data(t);
    *lo = INT64_MAX, *hi = INT64_MIN;
    for (int64_t k = 0; k < n; k++) {
        int64_t v = p[ix_offset(t, at)];
        if (v < *lo) *lo = v;
        if (v > *hi) *hi = v;
        ix_next_index(at, t->shape, t->ndim);
    }
}

bool mtk_one_hot_meta(mtk_op_call *call)
{
    const mtk_tensor *x = arg_tensor(call, 0);
    int64_t classes = arg_int(call, 1);
    if (x->dtype != MTK_INT64)
        return mtk_call_error(call, MTK_ERR_DTYPE, "one_hot is only applicable to index tensor of type LongTensor.");
    if (x->ndim + 1 > MTK_MAX_DIMS)
        return mtk_call_error(call, MTK_ERR_SHAPE, "%d dimensions is more than mtk supports", (int)x->ndim + 1);
    int64_t shape[MTK_MAX_DIMS], stride[MTK_MAX_DIMS];
    memcpy(shape, x->shape, (size_t)x->ndim * sizeof *shape);
    if (call->device == MTK_DEVICE_META) {
        if (classes == -1)
            return mtk_call_error(call, MTK_ERR_DATA_DEPENDENT,
                                  "num_classes=-1 means max(input) + 1, which depends on the data of the input, and "
                                  "a meta tensor has none; pass num_classes");
        if (classes < 0) return mtk_call_error(call, MTK_ERR_INVALID_ARGUMENT, "upper bound and lower bound inconsistent with step sign");
    } else if (mtk_tensor_numel(x) == 0) {
        if (classes <= 0)
            return mtk_call_error(call, MTK_ERR_INVALID_ARGUMENT, "Can not infer total number of classes from empty tensor.");
    } else {
        int64_t lo, hi;
        int_range(x, &lo, &hi);
        if (lo < 0) return mtk_call_error(call, MTK_ERR_INDEX, "Class values must be non-negative.");
        if (classes == -1) classes = hi + 1;
        else if (hi >= classes) return mtk_call_error(call, MTK_ERR_INDEX, "Class values must be smaller than num_classes.");
    }
    shape[x->ndim] = classes;
    int32_t ndim = x->ndim + 1;
    /* torch's meta: eq(input.unsqueeze(-1), arange(classes)).to(int64),
     * the element-wise stride rule over those two */
    mtk_tensor col = *x, range = *x;
    col.ndim = ndim, col.shape[x->ndim] = 1, col.stride[x->ndim] = 1;
    range.ndim = 1, range.shape[0] = classes, range.stride[0] = 1, range.storage_offset = 0;
    const mtk_tensor *ins[2] = { &col, &range };
    mtk_ti_output_strides(ins, 2, shape, ndim, stride);
    return ix_single_output(call, MTK_INT64, shape, ndim, stride, NULL);
}

bool mtk_one_hot_cpu(mtk_op_call *call)
{
    mtk_tensor *out = call->out[0];
    const mtk_tensor *x = arg_tensor(call, 0);
    int64_t classes = out->shape[out->ndim - 1], at[MTK_MAX_DIMS] = { 0 }, n = mtk_tensor_numel(x);
    int64_t *o = mtk_tensor_data(out);
    const int64_t *p = mtk_tensor_data(x);
    for (int64_t k = 0; k < n; k++) {
        int64_t v = p[ix_offset(x, at)];
        int64_t base = ix_offset(out, at); /* at's last entry stays 0 */
        for (int64_t c = 0; c < classes; c++) o[base + c * out->stride[out->ndim - 1]] = c == v;
        ix_next_index(at, x->shape, x->ndim);
    }
    return true;
}
