/* Slices of a model read from a checkpoint: what one rank of a parallel
 * plan holds.  Keys are matched as for a whole load (load_match.c), every
 * slice is checked against the model before anything is allocated, then
 * each slice gets a tensor of its own shape and only its bytes are copied
 * out of the checkpoint's mapping: the box is walked as runs of the
 * innermost dims that are contiguous both in the file and in the slice
 * (one run for a split of dim 0, one run per row for a split of dim 1). */
#include "io/io_internal.h"
#include "io/load_internal.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* Runs closer than this (bytes between them) have their pages faulted in
 * together (a page: what the kernel reads anyway). */
#define PAGE_GAP 4096u

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The box of the target tensor that read `r` fills, in the target's
 * coordinates (lo, len), and the file's element stride along each target
 * dim (0 along the expert dim of a merged read, whose file tensor lacks
 * it). */
static void read_box(const load_read *r, int64_t *lo, int64_t *len, int64_t *fstride)
{
    const mtk_tensor *t = r->target;
    int64_t contiguous[MTK_MAX_DIMS];
    mtk_contiguous_strides(r->info->shape, r->info->ndim, contiguous);
    for (int32_t d = 0; d < t->ndim; d++) {
        lo[d] = 0;
        len[d] = t->shape[d];
    }
    if (r->expert < 0) {
        for (int32_t d = 0; d < t->ndim; d++) fstride[d] = contiguous[d];
        return;
    }
    int64_t chunk = t->shape[r->dim] / r->nparts;
    lo[0] = r->expert;
    len[0] = 1;
    lo[r->dim] = r->part * chunk;
    len[r->dim] = chunk;
    fstride[0] = 0;
    for (int32_t d = 1; d < t->ndim; d++) fstride[d] = contiguous[d - 1];
}

/* Copies the part of read `r` that lies inside slice `s` into s->tensor:
 * runs of the innermost dims contiguous on both sides, one
 * st_convert_mapped each.  Adds the file bytes copied to s->bytes; 0 or
 * EIO. */
static int read_intersection(const load_read *r, mtk_load_slice *s, mtk_st_dtype to)
{
    int32_t n = r->target->ndim;
    int64_t lo[MTK_MAX_DIMS], len[MTK_MAX_DIMS], fstride[MTK_MAX_DIMS], dstride[MTK_MAX_DIMS];
    int64_t from[MTK_MAX_DIMS] = { 0 }, count[MTK_MAX_DIMS] = { 0 }; /* the intersection, target coordinates */
    read_box(r, lo, len, fstride);
    mtk_contiguous_strides(s->shape, n, dstride);
    for (int32_t d = 0; d < n; d++) {
        int64_t a = lo[d] > s->offset[d] ? lo[d] : s->offset[d];
        int64_t b = lo[d] + len[d] < s->offset[d] + s->shape[d] ? lo[d] + len[d] : s->offset[d] + s->shape[d];
        if (b <= a) return 0;
        from[d] = a;
        count[d] = b - a;
    }
    /* run: elements copied at once; dims [outer, n) fold into it */
    int64_t run = n ? count[n - 1] : 1;
    int32_t outer = n ? n - 1 : 0;
    while (outer > 0 && fstride[outer - 1] == fstride[outer] * count[outer] &&
           dstride[outer - 1] == dstride[outer] * count[outer]) {
        outer--;
        run *= count[outer];
    }
    size_t fsize = mtk_st_dtype_size(r->info->dtype), dsize = mtk_st_dtype_size(to);
    uint8_t *dst = mtk_tensor_data(s->tensor);
    int64_t first = 0, last = 0, runs = 1; /* file offsets of the first and last run */
    for (int32_t d = 0; d < n; d++) {
        first += (from[d] - lo[d]) * fstride[d];
        last += (from[d] + (d < outer ? count[d] - 1 : 0) - lo[d]) * fstride[d];
        if (d < outer) runs *= count[d];
    }
    /* Many runs less than a page apart (the pages between them are read
     * anyway): fault the whole span in at once, not run by run.  Runs far
     * apart (a narrow column of long rows) fault in only their own pages. */
    uint64_t span = (uint64_t)(last + run - first) * fsize, copied = (uint64_t)(runs * run) * fsize;
    bool batched = runs > 1 && (span - copied) / (uint64_t)(runs - 1) < PAGE_GAP;
    if (batched) {
        int e = st_populate(r->file, r->info->begin + (uint64_t)first * fsize, (size_t)span);
        if (e == EIO) return EIO;
        st_populate_write(dst, mtk_tensor_nbytes(s->tensor));
    }
    int64_t index[MTK_MAX_DIMS] = { 0 }; /* odometer over dims [0, outer) */
    for (;;) {
        int64_t foff = 0, doff = 0;
        for (int32_t d = 0; d < n; d++) {
            int64_t i = d < outer ? index[d] : 0;
            foff += (from[d] + i - lo[d]) * fstride[d];
            doff += (from[d] + i - s->offset[d]) * dstride[d];
        }
        uint64_t at = r->info->begin + (uint64_t)foff * fsize;
        int e = batched ? st_convert_mapped_run(r->file, at, to, dst + (size_t)doff * dsize, r->info->dtype, (size_t)run)
                         : st_convert_mapped(r->file, at, to, dst + (size_t)doff * dsize, r->info->dtype, (size_t)run);
        if (e) return e;
        s->bytes += (uint64_t)run * fsize;
        int32_t d = outer - 1;
        while (d >= 0 && ++index[d] == count[d]) index[d--] = 0;
        if (d < 0) return 0;
    }
}

/* The checks of one slice: its tensor, rank and box.  *target gets the
 * model's tensor. */
static bool check_slice(mtk_ctx *ctx, mtk_module *model, mtk_state_dict *sd, const load_plan *plan,
                        const mtk_load_slice *s, mtk_tensor **target)
{
    mtk_tensor *t = s->name ? mtk_state_dict_get(sd, s->name) : NULL;
    if (!t)
        return mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "load: slice of '%s': %s has no tensor of that name",
                         s->name ? s->name : "(null)", mtk_module_type_name(model));
    bool filled = false;
    for (int64_t i = 0; i < plan->nreads && !filled; i++) filled = plan->reads[i].target == t;
    if (!filled)
        return mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT,
                         "load: slice of '%s': the checkpoint does not hold it (a computed buffer?)", s->name);
    if (s->ndim != t->ndim)
        return mtk_error(ctx, MTK_ERR_INDEX, "load: slice of '%s' has %d dims, the tensor has %d", s->name, s->ndim,
                         t->ndim);
    for (int32_t d = 0; d < t->ndim; d++)
        if (s->offset[d] < 0 || s->shape[d] < 0 || s->offset[d] > t->shape[d] ||
            s->shape[d] > t->shape[d] - s->offset[d]) {
            char dims[MTK_MAX_DIMS * 24 + 2];
            mtk_shape_list_str(t->shape, t->ndim, dims, sizeof dims);
            return mtk_error(ctx, MTK_ERR_INDEX,
                             "load: slice of '%s' is out of bounds: dim %d offset %lld size %lld does not fit in "
                             "%lld (tensor shape %s)",
                             s->name, d, (long long)s->offset[d], (long long)s->shape[d], (long long)t->shape[d],
                             dims);
        }
    *target = t;
    return true;
}

bool mtk_load_slices(mtk_ctx *ctx, mtk_module *model, mtk_checkpoint *ckpt, const mtk_load_spec *spec,
                     mtk_load_slice *slices, int64_t count, mtk_load_result *result)
{
    static const mtk_load_spec exact = { 0 };
    if (!spec) spec = &exact;
    if (!result) return mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "load: no result to fill");
    memset(result, 0, sizeof *result);
    if (!model || !ckpt || (count > 0 && !slices))
        return mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "load: no model, checkpoint or slices");
    load_plan plan = { 0 };
    if (!load_match(ctx, model, ckpt, spec, &plan, result)) return false;
    if (result->nmissing + result->nunexpected + result->nmismatched > 0)
        return load_mismatch_error(ctx, model, ckpt, result);
    mtk_state_dict *sd = mtk_module_state_dict(model);
    mtk_tensor **targets = count ? mtk_ctx_alloc(ctx, sizeof *targets * (size_t)count) : NULL;
    if (!sd || (count && !targets)) return false;
    for (int64_t i = 0; i < count; i++)
        if (!check_slice(ctx, model, sd, &plan, &slices[i], &targets[i])) return false;
    for (int64_t i = 0; i < plan.nreads; i++) /* the dtypes, before anything is allocated */
        if (!st_check_conversion(ctx, plan.reads[i].info->name, plan.reads[i].info->dtype,
                                 mtk_st_dtype_from_mtk(plan.reads[i].target->dtype)))
            return false;
    double start = now_seconds();
    result->bytes = 0; /* the match counted the whole checkpoint */
    result->parameters = 0;
    result->tensors = 0;
    result->threads = 1;
    for (int64_t i = 0; i < count; i++) {
        mtk_load_slice *s = &slices[i];
        s->bytes = 0;
        s->tensor = mtk_tensor_new(ctx, targets[i]->dtype, s->shape, s->ndim, NULL, MTK_DEVICE_CPU);
        if (!s->tensor || !mtk_tensor_alloc_storage(s->tensor)) return false;
    }
    st_guard_hold(); /* one install of the SIGBUS handler for every run */
    int err = 0;
    for (int64_t i = 0; i < count && !err; i++) {
        mtk_load_slice *s = &slices[i];
        mtk_st_dtype to = mtk_st_dtype_from_mtk(targets[i]->dtype);
        for (int64_t k = 0; k < plan.nreads && !err; k++)
            if (plan.reads[k].target == targets[i]) {
                err = read_intersection(&plan.reads[k], s, to);
                if (err) mtk_error(ctx, MTK_ERR_IO, "load: reading '%s' from %s: %s", s->name,
                                   mtk_st_path(plan.reads[k].file), strerror(err));
            }
        result->bytes += s->bytes;
        result->parameters += (uint64_t)mtk_tensor_numel(s->tensor);
        result->tensors++;
    }
    st_guard_release();
    result->seconds = now_seconds() - start;
    return !err;
}
