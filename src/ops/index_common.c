/* Helpers the index family shares: outputs, memory formats, index
 * loading, the cost function and the worker threads of its kernels. */
#include "ops/index.h"
#include "ops/op_util.h"
#include "core/scalar.h"
#include "core/parallel.h"
#include "mtk/ops/index.h"

#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

/* ------------------------------------------------------------- outputs */

mtk_tensor *ix_new_tensor(mtk_op_call *call, mtk_dtype dtype, const int64_t *shape, int32_t ndim,
                          const int64_t *stride, const mtk_tensor *like)
{
    if (!mtk_shape_check(call->ctx, call->op->name, shape, ndim, NULL)) return NULL;
    mtk_tensor *t = mtk_tensor_new(call->ctx, dtype, shape, ndim, stride, call->device);
    if (t && like) t->flags = like->flags & MTK_TENSOR_REQUIRES_GRAD;
    return t;
}

bool ix_single_output(mtk_op_call *call, mtk_dtype dtype, const int64_t *shape, int32_t ndim,
                      const int64_t *stride, const mtk_tensor *like)
{
    mtk_tensor *t = ix_new_tensor(call, dtype, shape, ndim, stride, like);
    if (!t || !mtk_call_set_outputs(call, 1)) return false;
    mtk_call_output(call, 0, t, -1);
    return true;
}

/* ------------------------------------------------------ memory formats */

mtk_memory_format ix_suggest_memory_format(const mtk_tensor *t)
{
    if (!mtk_strides_suggest_channels_last(t->ndim, t->shape, t->stride)) return MTK_MEMORY_FORMAT_CONTIGUOUS;
    return t->ndim == 4 ? MTK_MEMORY_FORMAT_CHANNELS_LAST : MTK_MEMORY_FORMAT_CHANNELS_LAST_3D;
}

void ix_format_strides(mtk_memory_format format, const int64_t *shape, int32_t ndim, int64_t *stride_out)
{
    if ((format == MTK_MEMORY_FORMAT_CHANNELS_LAST && ndim == 4) ||
        (format == MTK_MEMORY_FORMAT_CHANNELS_LAST_3D && ndim == 5))
        mtk_channels_last_strides(shape, ndim, stride_out);
    else
        mtk_contiguous_strides(shape, ndim, stride_out);
}

void ix_elementwise_then_contiguous(const mtk_tensor *const *inputs, int32_t n, const int64_t *shape, int32_t ndim,
                                    int64_t *stride_out)
{
    mtk_tensor probe;
    memset(&probe, 0, sizeof probe);
    probe.ndim = ndim;
    memcpy(probe.shape, shape, (size_t)ndim * sizeof *shape);
    mtk_ti_output_strides(inputs, n, shape, ndim, probe.stride);
    if (mtk_tensor_is_contiguous(&probe)) memcpy(stride_out, probe.stride, (size_t)ndim * sizeof *shape);
    else mtk_contiguous_strides(shape, ndim, stride_out);
}

bool ix_can_flatten_view(const mtk_tensor *x)
{
    if (mtk_tensor_numel(x) == 0) return true;
    /* every dim of size > 1 must continue the next such dim's span */
    int64_t inner = -1; /* stride * size of the inner kept dim */
    for (int32_t d = x->ndim - 1; d >= 0; d--) {
        if (x->shape[d] == 1) continue;
        if (inner >= 0 && x->stride[d] != inner) return false;
        inner = x->stride[d] * x->shape[d];
    }
    return true;
}

bool ix_view_strides(const int64_t *shape, const int64_t *stride, int32_t ndim, const int64_t *newshape,
                     int32_t newn, int64_t *newstride)
{
    if (mtk_shape_numel(shape, ndim) == 0 || ndim == 0) {
        mtk_contiguous_strides(newshape, newn, newstride);
        if (ndim == 0)
            for (int32_t d = 0; d < newn; d++) newstride[d] = 1;
        return true;
    }
    /* old dims merge into chunks that are contiguous with each other;
     * each new dim must lie inside one chunk */
    int32_t view_d = newn - 1;
    int64_t base = stride[ndim - 1], chunk_numel = 1, view_numel = 1;
    for (int32_t d = ndim - 1; d >= 0; d--) {
        chunk_numel *= shape[d];
        int64_t next;
        bool ends = d == 0 || (shape[d - 1] != 1 && (__builtin_mul_overflow(chunk_numel, base, &next) ||
                                                    stride[d - 1] != next));
        if (!ends) continue;
        while (view_d >= 0 && (view_numel < chunk_numel || newshape[view_d] == 1)) {
            newstride[view_d] = view_numel * base;
            view_numel *= newshape[view_d];
            view_d--;
        }
        if (view_numel != chunk_numel) return false;
        if (d > 0) {
            base = stride[d - 1];
            chunk_numel = view_numel = 1;
        }
    }
    return view_d == -1;
}

/* --------------------------------------------------------------- indices */

bool ix_refuse_explicit_none(mtk_op_call *call, int arg)
{
    if (!(call->given_args & (1u << arg)) || call->args[arg].kind != MTK_VALUE_NONE) return true;
    const mtk_arg_spec *specs;
    const char *name = mtk_op_args(call->op, &specs) > arg ? specs[arg].name : "?";
    return mtk_call_error(call, MTK_ERR_INVALID_ARGUMENT,
                          "%s() received an invalid combination of arguments: '%s' cannot be None",
                          call->op->name, name);
}

bool ix_is_index_dtype(mtk_dtype dtype) { return dtype == MTK_INT64 || dtype == MTK_INT32; }

int64_t ix_load_index(mtk_dtype dtype, const void *p)
{
    switch (dtype) {
    case MTK_INT64: { int64_t v; memcpy(&v, p, sizeof v); return v; }
    case MTK_INT32: { int32_t v; memcpy(&v, p, sizeof v); return v; }
    default: return mtk_load_i64(dtype, p);
    }
}

void ix_unravel(int64_t linear, const int64_t *shape, int32_t ndim, int64_t *index)
{
    for (int32_t d = ndim - 1; d >= 0; d--) {
        index[d] = shape[d] > 0 ? linear % shape[d] : 0;
        linear = shape[d] > 0 ? linear / shape[d] : 0;
    }
}

/* --------------------------------------------------------------- threads */

/* the context's threads (in scope while a kernel runs), at most 64 */
int32_t ix_num_threads(void)
{
    int32_t n = mtk_parallel_threads(0);
    return n < 64 ? n : 64;
}

int32_t ix_parallel_chunks(int64_t n, int64_t grain)
{
    if (n <= 0) return 0;
    int64_t threads = ix_num_threads();
    if (grain < 1) grain = 1;
    if (threads > n / grain) threads = n / grain;
    return threads > 1 ? (int32_t)threads : 1;
}

void ix_parallel_for(int64_t n, int64_t grain, void (*fn)(int64_t begin, int64_t end, int32_t chunk, void *user),
                     void *user)
{
    ix_parallel_run(n, ix_parallel_chunks(n, grain), fn, user);
}

void ix_parallel_run(int64_t n, int32_t chunks, void (*fn)(int64_t begin, int64_t end, int32_t chunk, void *user),
                     void *user)
{
    if (n <= 0 || chunks <= 0) return;
    mtk_parallel_range(n, chunks < 64 ? chunks : 64, fn, user);
}

/* ------------------------------------------------------ mapped copies */

typedef struct mapped_job {
    mtk_tensor *out;
    const mtk_tensor *in;
    const int64_t *const *maps;
    size_t esize;
} mapped_job;

static inline void copy_elem(char *dst, const char *src, size_t esize)
{
    switch (esize) {
    case 1: *dst = *src; break;
    case 2: memcpy(dst, src, 2); break;
    case 4: memcpy(dst, src, 4); break;
    case 8: memcpy(dst, src, 8); break;
    default: memcpy(dst, src, esize); break;
    }
}

static void mapped_chunk(int64_t begin, int64_t end, int32_t chunk, void *user)
{
    (void)chunk;
    const mapped_job *job = user;
    const mtk_tensor *out = job->out, *in = job->in;
    int32_t ndim = out->ndim, last = ndim - 1;
    int64_t index[MTK_MAX_DIMS], part[MTK_MAX_DIMS]; /* part[d]: in offset of dim d */
    char *dst = mtk_tensor_data(out);
    const char *src = mtk_tensor_data(in);
    int64_t es = (int64_t)job->esize;
    if (ndim == 0) {
        copy_elem(dst, src, job->esize);
        return;
    }
    ix_unravel(begin, out->shape, ndim, index);
    int64_t outer = 0, out_outer = 0;
    for (int32_t d = 0; d < last; d++) {
        part[d] = (job->maps[d] ? job->maps[d][index[d]] : index[d]) * in->stride[d];
        outer += part[d];
        out_outer += index[d] * out->stride[d];
    }
    const int64_t *map = job->maps[last];
    int64_t k = begin;
    while (k < end) {
        /* one run along the last dim */
        int64_t j = index[last], stop = out->shape[last];
        if (stop - j > end - k) stop = j + (end - k);
        for (; j < stop; j++, k++) {
            int64_t s = outer + (map ? map[j] : j) * in->stride[last];
            copy_elem(dst + (out_outer + j * out->stride[last]) * es, src + s * es, job->esize);
        }
        if (k >= end) break;
        index[last] = 0;
        int32_t d = last - 1;
        while (d >= 0 && ++index[d] == out->shape[d]) index[d--] = 0;
        if (d < 0) break;
        outer = out_outer = 0;
        for (int32_t e = 0; e < last; e++) {
            if (e >= d) part[e] = (job->maps[e] ? job->maps[e][index[e]] : index[e]) * in->stride[e];
            outer += part[e];
            out_outer += index[e] * out->stride[e];
        }
    }
}

void ix_copy_mapped(mtk_tensor *out, const mtk_tensor *in, const int64_t *const *maps)
{
    int64_t n = mtk_tensor_numel(out);
    if (n == 0) return;
    static const int64_t *const none[MTK_MAX_DIMS] = { NULL };
    mapped_job job = { out, in, maps ? maps : none, mtk_dtype_size(out->dtype) };
    ix_parallel_for(n, 1 << 16, mapped_chunk, &job);
}

bool ix_flat_source(mtk_op_call *call, const mtk_tensor *x, mtk_tensor *flat, void **tmp)
{
    *tmp = NULL;
    *flat = *x;
    flat->ndim = 1;
    flat->shape[0] = mtk_tensor_numel(x);
    flat->stride[0] = 1;
    if (ix_can_flatten_view(x)) {
        for (int32_t d = x->ndim - 1; d >= 0; d--)
            if (x->shape[d] != 1) {
                flat->stride[0] = x->stride[d];
                break;
            }
        return true;
    }
    /* a contiguous copy in row-major order */
    size_t esize = mtk_dtype_size(x->dtype);
    void *data = mtk_ctx_malloc(call->ctx, (size_t)flat->shape[0] * esize);
    if (!data) return mtk_call_error(call, MTK_ERR_OUT_OF_MEMORY, "out of memory");
    mtk_tensor *copy = mtk_tensor_from_data(call->ctx, x->dtype, x->shape, x->ndim, NULL, data);
    if (!copy) {
        mtk_ctx_mfree(call->ctx, data);
        return false;
    }
    mtk_copy_strided(copy, x);
    *flat = *copy;
    flat->ndim = 1;
    flat->shape[0] = mtk_tensor_numel(x);
    flat->stride[0] = 1;
    *tmp = data;
    return true;
}
