/* Reordering elements: roll, flip, tril and triu.
 *
 * Output layouts follow torch's meta device: roll gives a contiguous
 * tensor (its decomposition ends in index_select), except for an empty
 * input, which it clones with its strides; flip allocates
 * empty_like(input) (the element-wise stride rule); tril and triu are
 * always contiguous. */
#include "ops/index.h"
#include "ops/op_util.h"
#include "ops/view.h"
#include "ops/elementwise.h"
#include "core/scalar.h"

#include <string.h>

/* Reads an int[] argument and wraps each entry as a dim of an ndim-D
 * tensor (a 0-dim tensor accepts -1 and 0). */
static int32_t wrapped_dims(mtk_op_call *call, int arg, int32_t ndim, int64_t *dims, const char *name)
{
    int32_t n = arg_is_none(call, arg) ? 0 : mtk_view_ints(call, arg, dims, name);
    for (int32_t i = 0; i < n; i++) {
        int32_t d = mtk_view_wrap_dim(call, dims[i], ndim);
        if (d < 0) return -1;
        dims[i] = d;
    }
    return n;
}

/* ----------------------------------------------------------------- roll */

typedef struct roll_form {
    int64_t shifts[MTK_MAX_DIMS], dims[MTK_MAX_DIMS];
    int32_t nshifts, ndims;
    bool empty;   /* numel 0: a clone */
    bool flat;    /* no dims: roll of the flattened tensor */
} roll_form;

static bool roll_form_of(mtk_op_call *call, roll_form *f)
{
    const mtk_tensor *x = arg_tensor(call, 0);
    memset(f, 0, sizeof *f);
    f->ndims = wrapped_dims(call, 2, x->ndim, f->dims, "dims");
    if (f->ndims < 0) return false;
    f->nshifts = mtk_view_ints(call, 1, f->shifts, "shifts");
    if (f->nshifts < 0) return false;
    f->empty = mtk_tensor_numel(x) == 0;
    /* torch's meta clones an empty input before any check; its cpu kernel
     * still checks shifts against dims */
    if (f->empty && call->device == MTK_DEVICE_META) return true;
    if (x->ndim == 0 && f->ndims > 0)
        return mtk_call_error(call, MTK_ERR_INDEX, "Dimension specified as %lld but tensor has no dimensions",
                              (long long)f->dims[0]);
    if (f->nshifts == 1 && f->ndims == 1) return true;
    if (f->nshifts == 0) return mtk_call_error(call, MTK_ERR_INVALID_ARGUMENT, "`shifts` required");
    if (f->ndims == 0 && f->nshifts == 1) {
        f->flat = true;
        return true;
    }
    if (f->nshifts != f->ndims)
        return mtk_call_error(call, MTK_ERR_SHAPE, "shifts and dimensions must align. shifts: %d, dims: %d",
                              (int)f->nshifts, (int)f->ndims);
    return true;
}

bool mtk_roll_meta(mtk_op_call *call)
{
    const mtk_tensor *x = arg_tensor(call, 0);
    roll_form f;
    if (!roll_form_of(call, &f)) return false;
    int64_t stride[MTK_MAX_DIMS];
    if (f.empty) mtk_dense_strides_like(x, stride);
    else mtk_contiguous_strides(x->shape, x->ndim, stride);
    return ix_single_output(call, x->dtype, x->shape, x->ndim, stride, x);
}

/* map[j] = (j - shift) mod size: where output position j reads from */
static int64_t *shift_map(mtk_op_call *call, int64_t size, int64_t shift)
{
    int64_t *map = mtk_ctx_malloc(call->ctx, (size_t)(size > 0 ? size : 1) * sizeof *map);
    if (!map) {
        mtk_call_error(call, MTK_ERR_OUT_OF_MEMORY, "out of memory");
        return NULL;
    }
    int64_t s = size > 0 ? shift % size : 0;
    if (s < 0) s += size;
    for (int64_t j = 0; j < size; j++) map[j] = j >= s ? j - s : j - s + size;
    return map;
}

bool mtk_roll_cpu(mtk_op_call *call)
{
    mtk_tensor *out = call->out[0];
    const mtk_tensor *x = arg_tensor(call, 0);
    roll_form f;
    if (!roll_form_of(call, &f)) return false;
    if (f.empty) return true;
    bool ok = true;
    if (f.flat) { /* out is contiguous: its elements in order are a 1-D view */
        mtk_tensor flat, out_flat = *out;
        void *tmp;
        out_flat.ndim = 1, out_flat.shape[0] = mtk_tensor_numel(out), out_flat.stride[0] = 1;
        int64_t *map = shift_map(call, out_flat.shape[0], f.shifts[0]);
        if (!map || !ix_flat_source(call, x, &flat, &tmp)) {
            mtk_ctx_mfree(call->ctx, map);
            return false;
        }
        const int64_t *maps[1] = { map };
        ix_copy_mapped(&out_flat, &flat, maps);
        mtk_ctx_mfree(call->ctx, tmp);
        mtk_ctx_mfree(call->ctx, map);
        return true;
    }
    /* shifts of a dim listed twice add up */
    int64_t total[MTK_MAX_DIMS] = { 0 };
    bool rolled[MTK_MAX_DIMS] = { false };
    for (int32_t i = 0; i < f.ndims; i++) {
        int64_t size = x->ndim ? x->shape[f.dims[i]] : 1;
        total[f.dims[i]] = (total[f.dims[i]] + (size ? f.shifts[i] % size : 0)) % (size ? size : 1);
        rolled[f.dims[i]] = true;
    }
    int64_t *maps[MTK_MAX_DIMS] = { NULL };
    for (int32_t d = 0; d < x->ndim && ok; d++)
        if (rolled[d]) ok = (maps[d] = shift_map(call, x->shape[d], total[d])) != NULL;
    if (ok) ix_copy_mapped(out, x, (const int64_t *const *)maps);
    for (int32_t d = 0; d < x->ndim; d++) mtk_ctx_mfree(call->ctx, maps[d]);
    return ok;
}

/* ----------------------------------------------------------------- flip */

static int32_t flip_dims(mtk_op_call *call, const mtk_tensor *x, int64_t *dims)
{
    int32_t n = wrapped_dims(call, 1, x->ndim, dims, "dims");
    for (int32_t i = 0; i < n; i++)
        for (int32_t j = 0; j < i; j++)
            if (dims[i] == dims[j]) {
                mtk_call_error(call, MTK_ERR_INVALID_ARGUMENT, "duplicate value in the list of dims");
                return -1;
            }
    return n;
}

bool mtk_flip_meta(mtk_op_call *call)
{
    const mtk_tensor *x = arg_tensor(call, 0);
    int64_t dims[MTK_MAX_DIMS], stride[MTK_MAX_DIMS];
    if (flip_dims(call, x, dims) < 0) return false;
    if (call->device == MTK_DEVICE_CPU && mtk_dtype_is_float8(x->dtype))
        return mtk_call_error(call, MTK_ERR_DTYPE, "\"flip_cpu\" not implemented for '%s'", mtk_dtype_cpp_name(x->dtype));
    const mtk_tensor *ins[1] = { x };
    mtk_ti_output_strides(ins, 1, x->shape, x->ndim, stride);
    return ix_single_output(call, x->dtype, x->shape, x->ndim, stride, x);
}

bool mtk_flip_cpu(mtk_op_call *call)
{
    const mtk_tensor *x = arg_tensor(call, 0);
    int64_t dims[MTK_MAX_DIMS];
    int32_t n = flip_dims(call, x, dims);
    if (n < 0) return false;
    int64_t *maps[MTK_MAX_DIMS] = { NULL };
    bool ok = true;
    for (int32_t i = 0; i < n && x->ndim > 0 && ok; i++) {
        int64_t size = x->shape[dims[i]];
        ok = (maps[dims[i]] = mtk_ctx_malloc(call->ctx, (size_t)(size > 0 ? size : 1) * sizeof(int64_t))) != NULL;
        for (int64_t j = 0; ok && j < size; j++) maps[dims[i]][j] = size - 1 - j;
    }
    if (ok) ix_copy_mapped(call->out[0], x, (const int64_t *const *)maps);
    else mtk_call_error(call, MTK_ERR_OUT_OF_MEMORY, "out of memory");
    for (int32_t d = 0; d < x->ndim; d++) mtk_ctx_mfree(call->ctx, maps[d]);
    return ok;
}

/* ------------------------------------------------------------ tril, triu */

enum { TRI_LOWER, TRI_UPPER };
const ix_info mtk_ix_info_tril = { TRI_LOWER }, mtk_ix_info_triu = { TRI_UPPER };

bool mtk_tril_meta(mtk_op_call *call)
{
    const mtk_tensor *x = arg_tensor(call, 0);
    if (x->ndim < 2)
        return mtk_call_error(call, MTK_ERR_SHAPE, "%s: input tensor must have at least 2 dimensions", call->op->name);
    if (call->device == MTK_DEVICE_CPU && mtk_dtype_is_float8(x->dtype))
        return mtk_call_error(call, MTK_ERR_DTYPE, "\"%s\" not implemented for '%s'", call->op->name,
                              mtk_dtype_cpp_name(x->dtype));
    /* torch's meta: where(mask, x, 0).contiguous() with a (h, w) mask
     * (logical_and(mask, x) for bool: no scalar) */
    mtk_tensor mask = *x, zero = *x;
    mask.ndim = 2;
    mask.shape[0] = x->shape[x->ndim - 2], mask.shape[1] = x->shape[x->ndim - 1];
    mtk_contiguous_strides(mask.shape, 2, mask.stride);
    zero.ndim = 0, zero.device = MTK_DEVICE_META; /* scalar_tensor(0) on the device */
    const mtk_tensor *ins[3] = { &mask, x, &zero };
    int64_t stride[MTK_MAX_DIMS];
    ix_elementwise_then_contiguous(ins, x->dtype == MTK_BOOL ? 2 : 3, x->shape, x->ndim, stride);
    return ix_single_output(call, x->dtype, x->shape, x->ndim, stride, x);
}

typedef struct tri_job {
    mtk_tensor *out;
    const mtk_tensor *x;
    int64_t diagonal;
    bool upper;
} tri_job;

/* rows [begin, end) of the flattened (batch * h) rows; out may have
 * any strides */
static void tri_rows(int64_t begin, int64_t end, int32_t chunk, void *user)
{
    (void)chunk;
    const tri_job *job = user;
    const mtk_tensor *x = job->x, *out = job->out;
    int32_t nd = x->ndim;
    int64_t w = x->shape[nd - 1];
    size_t es = mtk_dtype_size(x->dtype);
    int64_t index[MTK_MAX_DIMS];
    const char *src = mtk_tensor_data(x);
    char *dst = mtk_tensor_data(out);
    for (int64_t r = begin; r < end; r++) {
        /* (batch..., row) of this row; out is contiguous */
        ix_unravel(r, x->shape, nd - 1, index);
        index[nd - 1] = 0;
        int64_t i = index[nd - 2];
        const char *srow = src + ix_offset(x, index) * (int64_t)es;
        char *drow = dst + ix_offset(out, index) * (int64_t)es;
        for (int64_t j = 0; j < w; j++) {
            bool keep = job->upper ? j - i >= job->diagonal : j - i <= job->diagonal;
            char *d = drow + j * out->stride[nd - 1] * (int64_t)es;
            if (keep) memcpy(d, srow + j * x->stride[nd - 1] * (int64_t)es, es);
            else memset(d, 0, es);
        }
    }
}

bool mtk_tril_cpu(mtk_op_call *call)
{
    const ix_info *info = call->op->info;
    tri_job job = { call->out[0], arg_tensor(call, 0), arg_int(call, 1), info->kind == TRI_UPPER };
    int64_t w = job.x->shape[job.x->ndim - 1];
    int64_t rows = w ? mtk_tensor_numel(job.x) / w : 0;
    ix_parallel_for(rows, (1 << 16) / (w > 0 ? w : 1) + 1, tri_rows, &job);
    return true;
}
