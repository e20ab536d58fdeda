/* sort, argsort and topk.
 *
 * On meta, torch's sort checks nothing (not even the dim) and lays its
 * outputs out as empty_like(input); topk checks dim and k and returns
 * contiguous tensors.  On cpu the indices of equal values are the ones
 * torch's libstdc++-based kernels give (index_sort_algo.c). */
#include "ops/index.h"
#include "ops/index_sort.h"
#include "ops/op_util.h"
#include "ops/view.h"
#include "ops/elementwise.h"
#include "core/scalar.h"

#include <string.h>

enum { SORT_VALUES_AND_INDICES, SORT_INDICES_ONLY };
const ix_info mtk_ix_info_sort = { SORT_VALUES_AND_INDICES }, mtk_ix_info_argsort = { SORT_INDICES_ONLY };

/* One sorting job: slices of x along dim, written to values/indices
 * (values may be NULL: argsort). */
typedef struct slice_job {
    const mtk_tensor *x;
    mtk_tensor *values, *indices;
    int32_t dim;
    int64_t len;          /* slice length (x's size along dim)      */
    int64_t k;            /* topk: how many to keep; sort: len      */
    bool descending, stable, floating, topk, sorted, radix;
    ix_sort_elem *scratch; /* per chunk: len elements + len / 2 + 1 of merge space */
} slice_job;

/* shape of x without dim: the slices */
static void slice_shape(const mtk_tensor *x, int32_t dim, int64_t *shape, int32_t *ndim)
{
    int32_t n = 0;
    for (int32_t d = 0; d < x->ndim; d++)
        if (d != dim) shape[n++] = x->shape[d];
    *ndim = n;
}

/* base element offset of slice `at` (a multi-index without dim) in t */
static int64_t slice_base(const mtk_tensor *t, int32_t dim, const int64_t *at)
{
    int64_t off = 0;
    for (int32_t d = 0, j = 0; d < t->ndim; d++)
        if (d != dim) off += at[j++] * t->stride[d];
    return off;
}

static int64_t scratch_per_chunk(int64_t len) { return len + len / 2 + 1; }

static void sort_slices(int64_t begin, int64_t end, int32_t chunk, void *user)
{
    slice_job *job = user;
    const mtk_tensor *x = job->x;
    int64_t len = job->len, k = job->k;
    ix_sort_elem *elems = job->scratch + chunk * scratch_per_chunk(len), *merge = elems + len;
    ix_sort_cmp cmp = ix_sort_comparator(job->floating, job->descending); /* topk: largest */
    int64_t shape[MTK_MAX_DIMS], at[MTK_MAX_DIMS];
    int32_t ndim;
    slice_shape(x, job->dim, shape, &ndim);
    ix_unravel(begin, shape, ndim, at);
    int64_t es = (int64_t)mtk_dtype_size(x->dtype);
    int64_t xstride = x->stride[job->dim];
    const char *xs = mtk_tensor_data(x);
    for (int64_t s = begin; s < end; s++) {
        const char *xb = xs + slice_base(x, job->dim, at) * es;
        for (int64_t j = 0; j < len; j++) {
            const char *p = xb + j * xstride * es;
            if (job->floating) elems[j].key.f = mtk_load_f64(x->dtype, p);
            else elems[j].key.i = mtk_load_i64(x->dtype, p);
            elems[j].index = j;
        }
        if (job->topk) {
            if (k > 0) {
                if (k * 64 <= len) {
                    ix_std_partial_sort(elems, k, len, &cmp);
                } else {
                    ix_std_nth_element(elems, k - 1, len, &cmp);
                    if (job->sorted) ix_std_sort(elems, k - 1, &cmp);
                }
            }
        } else if (xstride == 0 && len > 1) {
            /* torch leaves the indices in order along a broadcast dim */
        } else if (job->stable || job->radix) {
            ix_std_stable_sort(elems, len, merge, &cmp);
        } else {
            ix_std_sort(elems, len, &cmp);
        }
        /* write the first k: values copied from their input positions */
        mtk_tensor *iv = job->indices, *vv = job->values;
        int64_t ib = slice_base(iv, job->dim, at), istride = iv->stride[job->dim];
        int64_t *idata = mtk_tensor_data(iv);
        char *vdata = vv ? mtk_tensor_data(vv) : NULL;
        int64_t vb = vv ? slice_base(vv, job->dim, at) : 0, vstride = vv ? vv->stride[job->dim] : 0;
        for (int64_t j = 0; j < k; j++) {
            idata[ib + j * istride] = elems[j].index;
            if (vdata) memcpy(vdata + (vb + j * vstride) * es, xb + elems[j].index * xstride * es, (size_t)es);
        }
        ix_next_index(at, shape, ndim);
    }
}

static bool run_slices(mtk_op_call *call, slice_job *job)
{
    const mtk_tensor *x = job->x;
    if (x->ndim == 0) { /* a scalar: itself, at index 0 */
        if (job->values) memcpy(mtk_tensor_data(job->values), mtk_tensor_data(x), mtk_dtype_size(x->dtype));
        *(int64_t *)mtk_tensor_data(job->indices) = 0;
        return true;
    }
    if (job->k == 0 || mtk_tensor_numel(x) == 0) return true;
    int64_t slices = mtk_tensor_numel(x) / job->len, grain = 32768 / job->len + 1;
    int32_t chunks = ix_parallel_chunks(slices, grain);
    size_t bytes = (size_t)chunks * (size_t)scratch_per_chunk(job->len) * sizeof *job->scratch;
    job->scratch = mtk_ctx_malloc(call->ctx, bytes);
    if (!job->scratch) return mtk_call_error(call, MTK_ERR_OUT_OF_MEMORY, "out of memory (%zu bytes of sort scratch)", bytes);
    ix_parallel_run(slices, chunks, sort_slices, job);
    mtk_ctx_mfree(call->ctx, job->scratch);
    return true;
}

/* ------------------------------------------------------------ sort */

bool mtk_sort_meta(mtk_op_call *call)
{
    const ix_info *info = call->op->info;
    const mtk_tensor *x = arg_tensor(call, 0);
    /* torch's overloads: (input, dim=-1, descending=False) and (input, *,
     * stable, dim=-1, descending=False): with `stable`, dim and descending
     * only by keyword */
    uint32_t positional = call->given_args & ~call->keyword_args;
    if ((call->given_args & (1u << 3)) && (positional & ((1u << 1) | (1u << 2))))
        return mtk_call_error(call, MTK_ERR_INVALID_ARGUMENT,
                              "%s() received an invalid combination of arguments: with stable=, pass dim and "
                              "descending by keyword",
                              call->op->name);
    if (call->device == MTK_DEVICE_CPU) {
        if (mtk_view_wrap_dim(call, arg_int(call, 1), x->ndim) < 0) return false;
        if (mtk_dtype_is_float8(x->dtype))
            return mtk_call_error(call, MTK_ERR_DTYPE, "\"sorting_kernel_method_name\" not implemented for '%s'",
                                  mtk_dtype_cpp_name(x->dtype));
    }
    int64_t stride[MTK_MAX_DIMS];
    const mtk_tensor *ins[1] = { x };
    mtk_ti_output_strides(ins, 1, x->shape, x->ndim, stride);
    bool both = info->kind == SORT_VALUES_AND_INDICES;
    mtk_tensor *values = both ? ix_new_tensor(call, x->dtype, x->shape, x->ndim, stride, x) : NULL;
    mtk_tensor *indices = ix_new_tensor(call, MTK_INT64, x->shape, x->ndim, stride, NULL);
    if ((both && !values) || !indices || !mtk_call_set_outputs(call, both ? 2 : 1)) return false;
    if (both) mtk_call_output(call, 0, values, -1);
    mtk_call_output(call, both ? 1 : 0, indices, -1);
    return true;
}

bool mtk_sort_cpu(mtk_op_call *call)
{
    const ix_info *info = call->op->info;
    const mtk_tensor *x = arg_tensor(call, 0);
    bool both = info->kind == SORT_VALUES_AND_INDICES;
    int32_t dim = mtk_view_wrap_dim(call, arg_int(call, 1), x->ndim);
    if (dim < 0) return false;
    slice_job job;
    memset(&job, 0, sizeof job);
    job.x = x;
    job.values = both ? call->out[0] : NULL;
    job.indices = call->out[both ? 1 : 0];
    job.dim = dim;
    job.len = x->ndim ? x->shape[dim] : 1;
    job.k = job.len;
    job.descending = arg_bool(call, 2);
    job.stable = call->args[3].kind == MTK_VALUE_BOOL && call->args[3].as.b;
    job.floating = mtk_dtype_is_floating(x->dtype);
    /* torch's radix sort (stable) for big 1-D ascending integer sorts */
    job.radix = x->ndim == 1 && job.len >= 32768 && mtk_dtype_is_integral(x->dtype, false) && !job.descending;
    return run_slices(call, &job);
}

/* ------------------------------------------------------------ topk */

/* topk(input, k, dim, largest, sorted): the wrapped dim, or -1 */
static int32_t topk_dim(mtk_op_call *call, const mtk_tensor *x)
{
    int32_t dim = mtk_view_wrap_dim(call, arg_int(call, 2), x->ndim);
    if (dim < 0) return -1;
    int64_t k = arg_int(call, 1), slice = x->ndim ? x->shape[dim] : 1;
    if (k < 0 || k > slice) {
        mtk_call_error(call, MTK_ERR_INDEX, "k not in range for dimension (selected index k out of range: k = %lld, "
                       "size %lld)",
                       (long long)k, (long long)slice);
        return -1;
    }
    return dim;
}

bool mtk_topk_meta(mtk_op_call *call)
{
    const mtk_tensor *x = arg_tensor(call, 0);
    int32_t dim = topk_dim(call, x);
    if (dim < 0) return false;
    if (call->device == MTK_DEVICE_CPU) {
        if (x->dtype == MTK_BOOL) return mtk_call_error(call, MTK_ERR_DTYPE, "topk does not support bool dtypes on CPU");
        if (mtk_dtype_is_float8(x->dtype))
            return mtk_call_error(call, MTK_ERR_DTYPE, "\"topk_cpu\" not implemented for '%s'", mtk_dtype_cpp_name(x->dtype));
    }
    int64_t shape[MTK_MAX_DIMS];
    memcpy(shape, x->shape, (size_t)x->ndim * sizeof *shape);
    if (x->ndim > 0) shape[dim] = arg_int(call, 1);
    mtk_tensor *values = ix_new_tensor(call, x->dtype, shape, x->ndim, NULL, x);
    mtk_tensor *indices = ix_new_tensor(call, MTK_INT64, shape, x->ndim, NULL, NULL);
    if (!values || !indices || !mtk_call_set_outputs(call, 2)) return false;
    mtk_call_output(call, 0, values, -1);
    mtk_call_output(call, 1, indices, -1);
    return true;
}

bool mtk_topk_cpu(mtk_op_call *call)
{
    const mtk_tensor *x = arg_tensor(call, 0);
    int32_t dim = topk_dim(call, x);
    if (dim < 0) return false;
    slice_job job;
    memset(&job, 0, sizeof job);
    job.x = x;
    job.values = call->out[0];
    job.indices = call->out[1];
    job.dim = dim;
    job.len = x->ndim ? x->shape[dim] : 1;
    job.k = arg_int(call, 1);
    job.descending = arg_bool(call, 3); /* largest */
    job.sorted = arg_bool(call, 4);
    job.topk = true;
    job.floating = mtk_dtype_is_floating(x->dtype);
    return run_slices(call, &job);
}
