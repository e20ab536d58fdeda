/* The cpu kernels of pooling: max (with indices), average, adaptive
 * average and adaptive max, for 1-D to 3-D windows over planes of any
 * strides, split over planes across threads.  Arithmetic follows torch's
 * cpu kernels: floating sums in double then rounded once (torch sums in
 * float; the difference is below float32's tolerance), integer sums in
 * int64 divided with truncation, NaN wins a max (the last NaN's index),
 * ties keep the first index (a window where nothing beats the start value
 * reports the window's first index, or torch's channels-last max_pool3d
 * kernel's variant of it, see short_index_channel). */
#include "ops/pool_internal.h"
#include "ops/op_util.h"
#include "core/scalar.h"

#include <math.h>
#include <string.h>

mtk_planes mtk_planes_of(const mtk_tensor *t, int32_t spatial)
{
    mtk_planes p;
    memset(&p, 0, sizeof p);
    p.base = mtk_tensor_data(t);
    p.dtype = t->dtype;
    int64_t es = (int64_t)mtk_dtype_size(t->dtype);
    p.plane_ndim = t->ndim - spatial;
    for (int32_t i = 0; i < p.plane_ndim; i++) p.plane_shape[i] = t->shape[i], p.plane_stride[i] = t->stride[i] * es;
    for (int32_t i = 0; i < spatial; i++) p.stride[3 - spatial + i] = t->stride[p.plane_ndim + i] * es;
    return p;
}

char *mtk_plane_at(const mtk_planes *p, int64_t index)
{
    char *at = p->base;
    for (int32_t i = p->plane_ndim - 1; i >= 0; i--) {
        at += (index % p->plane_shape[i]) * p->plane_stride[i];
        index /= p->plane_shape[i];
    }
    return at;
}

static char *elem(const mtk_planes *p, char *plane, int64_t d, int64_t h, int64_t w)
{
    return plane + d * p->stride[0] + h * p->stride[1] + w * p->stride[2];
}

static int64_t lowest_int(mtk_dtype d)
{
    switch (d) {
    case MTK_UINT8: return 0;
    case MTK_INT8: return INT8_MIN;
    case MTK_INT16: return INT16_MIN;
    case MTK_INT32: return INT32_MIN;
    default: return INT64_MIN;
    }
}

typedef struct pool_job {
    const mtk_pool_plan *p;
    mtk_planes in, out, idx;
    bool has_indices;
    bool integral;
    int32_t spatial; /* dims of the original tensors that are spatial */
    /* torch's channels-last max_pool3d kernel: the channels from this one
     * on (past the last whole vector) start their index without the depth
     * term; `channels` when torch runs its contiguous kernel */
    int64_t short_index_from;
} pool_job;

/* --------------------------------------------------------------- max */

/* max over the window [start, end) with step `step` per dim; a window
 * with no element above the lowest value (or empty) gives `first` */
static void window_max(const pool_job *j, char *ip, const int64_t *start, const int64_t *end, const int64_t *step,
                       int64_t first, char *op, char *xp)
{
    const int64_t *is = j->p->in_size;
    int64_t best = first;
    if (j->integral) {
        int64_t maxval = lowest_int(j->in.dtype);
        for (int64_t d = start[0]; d < end[0]; d += step[0])
            for (int64_t h = start[1]; h < end[1]; h += step[1])
                for (int64_t w = start[2]; w < end[2]; w += step[2]) {
                    int64_t v = mtk_load_i64(j->in.dtype, elem(&j->in, ip, d, h, w));
                    if (v > maxval) maxval = v, best = (d * is[1] + h) * is[2] + w;
                }
        mtk_store_i64(j->out.dtype, op, maxval);
    } else {
        double maxval = -INFINITY;
        for (int64_t d = start[0]; d < end[0]; d += step[0])
            for (int64_t h = start[1]; h < end[1]; h += step[1])
                for (int64_t w = start[2]; w < end[2]; w += step[2]) {
                    double v = mtk_load_f64(j->in.dtype, elem(&j->in, ip, d, h, w));
                    if (v > maxval || isnan(v)) maxval = v, best = (d * is[1] + h) * is[2] + w;
                }
        mtk_store_f64(j->out.dtype, op, maxval);
    }
    if (xp) mtk_store_i64(MTK_INT64, xp, best);
}

static void max_plane(const pool_job *j, int64_t plane)
{
    const mtk_pool_plan *p = j->p;
    char *ip = mtk_plane_at(&j->in, plane), *op = mtk_plane_at(&j->out, plane);
    char *xp = j->has_indices ? mtk_plane_at(&j->idx, plane) : NULL;
    const int64_t *os = p->out_size, *is = p->in_size;
    bool short_index = plane % p->channels >= j->short_index_from;
    for (int64_t od = 0; od < os[0]; od++)
        for (int64_t oh = 0; oh < os[1]; oh++)
            for (int64_t ow = 0; ow < os[2]; ow++) {
                int64_t o[3] = { od, oh, ow }, start[3], end[3];
                for (int i = 0; i < 3; i++) {
                    start[i] = o[i] * p->stride[i] - p->pad[i];
                    end[i] = start[i] + (p->kernel[i] - 1) * p->dilation[i] + 1;
                    if (end[i] > is[i]) end[i] = is[i];
                    while (start[i] < 0) start[i] += p->dilation[i];
                }
                int64_t first = (short_index ? 0 : start[0] * is[1] * is[2]) + start[1] * is[2] + start[2];
                window_max(j, ip, start, end, p->dilation, first, elem(&j->out, op, od, oh, ow),
                           xp ? elem(&j->idx, xp, od, oh, ow) : NULL);
            }
}

/* ------------------------------------------------------------ average */

static void avg_plane(const pool_job *j, int64_t plane)
{
    const mtk_pool_plan *p = j->p;
    char *ip = mtk_plane_at(&j->in, plane), *op = mtk_plane_at(&j->out, plane);
    const int64_t *os = p->out_size, *is = p->in_size;
    for (int64_t od = 0; od < os[0]; od++)
        for (int64_t oh = 0; oh < os[1]; oh++)
            for (int64_t ow = 0; ow < os[2]; ow++) {
                int64_t o[3] = { od, oh, ow }, start[3], end[3], pool_size = 1, count = 1;
                bool empty = false;
                for (int i = 0; i < 3; i++) {
                    start[i] = o[i] * p->stride[i] - p->pad[i];
                    end[i] = start[i] + p->kernel[i];
                    if (end[i] > is[i] + p->pad[i]) end[i] = is[i] + p->pad[i];
                    pool_size *= end[i] - start[i];
                    if (start[i] < 0) start[i] = 0;
                    if (end[i] > is[i]) end[i] = is[i];
                    if (start[i] >= end[i]) empty = true;
                    count *= end[i] - start[i];
                }
                char *e = elem(&j->out, op, od, oh, ow);
                if (empty) {
                    mtk_store_i64(j->out.dtype, e, 0);
                    continue;
                }
                int64_t divisor = p->divisor ? p->divisor : p->count_include_pad ? pool_size : count;
                if (j->integral) {
                    uint64_t sum = 0;
                    for (int64_t d = start[0]; d < end[0]; d++)
                        for (int64_t h = start[1]; h < end[1]; h++)
                            for (int64_t w = start[2]; w < end[2]; w++)
                                sum += (uint64_t)mtk_load_i64(j->in.dtype, elem(&j->in, ip, d, h, w));
                    mtk_store_i64(j->out.dtype, e, (int64_t)sum / divisor);
                } else {
                    double sum = 0;
                    for (int64_t d = start[0]; d < end[0]; d++)
                        for (int64_t h = start[1]; h < end[1]; h++)
                            for (int64_t w = start[2]; w < end[2]; w++)
                                sum += mtk_load_f64(j->in.dtype, elem(&j->in, ip, d, h, w));
                    mtk_store_f64(j->out.dtype, e, sum / (double)divisor);
                }
            }
}

/* ----------------------------------------------------------- adaptive */

/* v rounded to a floating dtype (float32 / float16 / bfloat16 / float64) */
static double round_to(mtk_dtype dtype, double v)
{
    char buf[8];
    mtk_store_f64(dtype, buf, v);
    return mtk_load_f64(dtype, buf);
}

/* torch's start_index / end_index: floor(o * in / out), ceil((o+1) * in / out) */
static int64_t start_index(int64_t o, int64_t out, int64_t in) { return (o / out) * in + ((o % out) * in) / out; }
static int64_t end_index(int64_t o, int64_t out, int64_t in) { return 1 + ((o + 1) * in - 1) / out; }

static void adaptive_plane(const pool_job *j, int64_t plane)
{
    const mtk_pool_plan *p = j->p;
    char *ip = mtk_plane_at(&j->in, plane), *op = mtk_plane_at(&j->out, plane);
    char *xp = j->has_indices ? mtk_plane_at(&j->idx, plane) : NULL;
    const int64_t *os = p->out_size, *is = p->in_size;
    static const int64_t ones[3] = { 1, 1, 1 };
    for (int64_t od = 0; od < os[0]; od++)
        for (int64_t oh = 0; oh < os[1]; oh++)
            for (int64_t ow = 0; ow < os[2]; ow++) {
                int64_t o[3] = { od, oh, ow }, start[3], end[3], count = 1;
                for (int i = 0; i < 3; i++) {
                    start[i] = start_index(o[i], os[i], is[i]);
                    end[i] = end_index(o[i], os[i], is[i]);
                    count *= end[i] - start[i];
                }
                char *e = elem(&j->out, op, od, oh, ow);
                if (p->kind == MTK_POOL_ADAPTIVE_MAX) {
                    int64_t first = (start[0] * is[1] + start[1]) * is[2] + start[2];
                    window_max(j, ip, start, end, ones, first, e, xp ? elem(&j->idx, xp, od, oh, ow) : NULL);
                    continue;
                }
                double sum = 0;
                if (p->spatial == 3 && os[0] * os[1] * os[2] != 1) {
                    /* torch's 3-D kernel sums in the input's dtype, then
                     * divides by kd, kh and kw in turn (an output of one
                     * element is a mean, summed in float) */
                    mtk_dtype dt = j->in.dtype;
                    for (int64_t d = start[0]; d < end[0]; d++)
                        for (int64_t h = start[1]; h < end[1]; h++)
                            for (int64_t w = start[2]; w < end[2]; w++)
                                sum = round_to(dt, sum + mtk_load_f64(dt, elem(&j->in, ip, d, h, w)));
                    for (int i = 0; i < 3; i++) sum = round_to(dt, sum / (double)(end[i] - start[i]));
                    mtk_store_f64(j->out.dtype, e, sum);
                    continue;
                }
                for (int64_t d = start[0]; d < end[0]; d++)
                    for (int64_t h = start[1]; h < end[1]; h++)
                        for (int64_t w = start[2]; w < end[2]; w++)
                            sum += mtk_load_f64(j->in.dtype, elem(&j->in, ip, d, h, w));
                mtk_store_f64(j->out.dtype, e, sum / (double)count);
            }
}

/* ------------------------------------------------------------- driver */

/* torch's max_pool3d runs its channels-last kernel on a 5-D input whose
 * strides suggest channels_last_3d, and on a 4-D input whose unsqueeze(0)
 * is not contiguous but is channels_last_3d-contiguous.  That kernel works
 * on 32-byte vectors of channels; the channels past the last whole vector
 * start each window's index at h0 * W + w0, dropping d0 * H * W, which
 * shows when no element beats the start value (the lowest integer, -inf)
 * or the window is empty.  The first such channel, or `channels` for
 * torch's contiguous kernel. */
static int64_t short_index_channel(const mtk_tensor *input, const mtk_pool_plan *p)
{
    if (p->kind != MTK_POOL_MAX || p->spatial != 3) return p->channels;
    bool channels_last = false;
    if (input->ndim == 5) {
        mtk_pool_input in = mtk_pool_input_as_is(input);
        channels_last = mtk_pool_like_channels_last(&in);
    } else {
        channels_last = mtk_pool3d_unbatched_channels_last(input);
    }
    if (!channels_last) return p->channels;
    int64_t lanes = 32 / (int64_t)mtk_dtype_size(input->dtype);
    return p->channels - p->channels % lanes;
}

#define PLANES_PER_TASK 16

static void run_planes(int64_t task, int32_t worker, void *user)
{
    (void)worker;
    const pool_job *j = user;
    int64_t planes_total = j->p->batch * j->p->channels;
    int64_t first = task * PLANES_PER_TASK, last = first + PLANES_PER_TASK;
    if (last > planes_total) last = planes_total;
    for (int64_t plane = first; plane < last; plane++) {
        switch (j->p->kind) {
        case MTK_POOL_MAX: max_plane(j, plane); break;
        case MTK_POOL_AVG: avg_plane(j, plane); break;
        default: adaptive_plane(j, plane); break;
        }
    }
}

static void run_job(pool_job *j)
{
    int64_t planes_total = j->p->batch * j->p->channels;
    int64_t tasks = (planes_total + PLANES_PER_TASK - 1) / PLANES_PER_TASK;
    mtk_conv_parallel_for(tasks, mtk_conv_workers(tasks), run_planes, j);
}

bool mtk_pool_cpu(mtk_op_call *call)
{
    mtk_pool_plan plan;
    if (!mtk_pool_make_plan(call->ctx, call, true, &plan)) return false;
    const mtk_tensor *input = arg_tensor(call, 0);
    mtk_tensor *out = call->out[0];
    if (mtk_tensor_numel(out) == 0) return true;
    /* the spatial dims of the tensors as given (1-D ops: just one) */
    int32_t spatial = plan.spatial;
    pool_job j;
    memset(&j, 0, sizeof j);
    j.p = &plan;
    j.spatial = spatial;
    j.in = mtk_planes_of(input, spatial);
    j.out = mtk_planes_of(out, spatial);
    j.has_indices = plan.with_indices;
    if (j.has_indices) j.idx = mtk_planes_of(call->out[1], spatial);
    j.integral = !mtk_dtype_is_floating(input->dtype);
    j.short_index_from = short_index_channel(input, &plan);
    run_job(&j);
    return true;
}
