/* The model loader: a module on meta filled from a checkpoint.  Keys are
 * matched first (load_match.c) and every problem reported before any
 * memory is allocated; then the tensors no read fills (computed buffers)
 * go to the cpu and are recomputed (the reset of each module owning a
 * non-persistent buffer: the tensors to read are still on meta, so no
 * time goes into random values that the read would overwrite); then each
 * tensor to read gets its place (load_place.c: a view of the mapped file,
 * or a slot of one slab) and the reads run on several threads (st_read_many:
 * a view is only faulted in, the others read straight into their
 * parameter, or its slice of a fused one, by pread), and every tensor is
 * verified to have data. */
#include "io/io_internal.h"
#include "io/load_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define PROGRESS_STEPS 20

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int32_t load_each_buffer_owner(mtk_module *model, bool (*fn)(mtk_module *owner, void *arg), void *arg)
{
    mtk_named_tensor *buffers;
    int32_t n = mtk_module_named_buffers(model, &buffers);
    if (n < 0) return -1;
    int32_t computed = 0;
    for (int32_t i = 0; i < n; i++) {
        if (buffers[i].persistent) continue;
        computed++;
        bool done = false;
        for (int32_t j = 0; j < i && !done; j++)
            done = !buffers[j].persistent && buffers[j].owner == buffers[i].owner;
        if (!done && !fn(buffers[i].owner, arg)) return -1;
    }
    return computed;
}

static bool reset_owner(mtk_module *owner, void *arg)
{
    (void)arg;
    return mtk_module_reset_parameters(owner, 0);
}

/* The destination of a read: the tensor, or its slice
 * fused[expert].narrow(dim - 1, part * chunk, chunk). */
static mtk_tensor *destination(mtk_ctx *ctx, const load_read *r)
{
    if (r->expert < 0) return r->target;
    mtk_tensor *expert = mtk_select(ctx, r->target, 0, r->expert); /* (...) without the expert dim */
    int64_t chunk = r->target->shape[r->dim] / r->nparts;
    return mtk_narrow(ctx, expert, r->dim - 1, r->part * chunk, chunk);
}

static bool read_all(mtk_ctx *ctx, const load_plan *plan, const mtk_load_spec *spec, const bool *mapped,
                     uint64_t total, int32_t threads)
{
    mtk_st_read *reads = malloc(sizeof *reads * (size_t)(plan->nreads ? plan->nreads : 1));
    if (!reads) return mtk_error(ctx, MTK_ERR_OUT_OF_MEMORY, "load: out of memory");
    bool ok = true;
    for (int64_t i = 0; ok && i < plan->nreads; i++) {
        const load_read *r = &plan->reads[i];
        reads[i] = (mtk_st_read){ r->file, r->info->name, destination(ctx, r) };
        ok = reads[i].dst != NULL;
    }
    bool batches = spec->progress && total >= spec->progress_min_bytes;
    if (ok && !batches) {
        ok = st_read_many(ctx, reads, plan->nreads, threads, mapped);
    } else if (ok) {
        uint64_t done = 0, step = total / PROGRESS_STEPS + 1;
        spec->progress(spec->progress_arg, 0, total);
        for (int64_t start = 0; ok && start < plan->nreads;) {
            int64_t end = start;
            uint64_t batch = 0;
            while (end < plan->nreads && (batch < step || end == start)) {
                batch += plan->reads[end].info->end - plan->reads[end].info->begin;
                end++;
            }
            ok = st_read_many(ctx, reads + start, end - start, threads, mapped + start);
            done += batch;
            start = end;
            spec->progress(spec->progress_arg, done, total);
        }
    }
    free(reads);
    return ok;
}

bool load_verify_materialized(mtk_ctx *ctx, mtk_module *model, const char *who)
{
    mtk_named_tensor *all[2];
    int32_t n[2] = { mtk_module_named_parameters(model, &all[0]), mtk_module_named_buffers(model, &all[1]) };
    if (n[0] < 0 || n[1] < 0) return false;
    for (int k = 0; k < 2; k++)
        for (int32_t i = 0; i < n[k]; i++)
            if (all[k][i].tensor->device != MTK_DEVICE_CPU || !all[k][i].tensor->storage)
                return mtk_error(ctx, MTK_ERR_IO, "%s: verify: %s %s was not materialized", who,
                                 k ? "buffer" : "parameter", all[k][i].name);
    return true;
}

/* A short name for the checkpoint in messages. */
static const char *label(const mtk_checkpoint *ckpt)
{
    if (mtk_checkpoint_index_path(ckpt)) return mtk_checkpoint_index_path(ckpt);
    return mtk_checkpoint_file_count(ckpt) > 0 ? mtk_st_path(mtk_checkpoint_file_at(ckpt, 0)) : "checkpoint";
}

bool load_mismatch_error(mtk_ctx *ctx, mtk_module *model, const mtk_checkpoint *ckpt, const mtk_load_result *r)
{
    int32_t total = r->nmissing + r->nunexpected + r->nmismatched;
    char hint[256] = "";
    if (r->prefix_hint)
        snprintf(hint, sizeof hint,
                 "; the unexpected keys start with '%s', the prefix a %s adds: strip it (--strip-prefix %s)",
                 r->prefix_hint, strcmp(r->prefix_hint, "module.") == 0 ? "DistributedDataParallel wrapper"
                                                                         : "torch.compile'd model",
                 r->prefix_hint);
    return mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT,
                     "cannot load '%s' into %s: %d key%s not match (%d missing, %d unexpected, %d mismatched)%s",
                     label(ckpt), mtk_module_type_name(model), total, total == 1 ? " does" : "s do", r->nmissing,
                     r->nunexpected, r->nmismatched, hint);
}

bool mtk_load_module(mtk_ctx *ctx, mtk_module *model, mtk_checkpoint *ckpt, const mtk_load_spec *spec,
                     mtk_load_result *result)
{
    static const mtk_load_spec exact = { 0 };
    if (!spec) spec = &exact;
    if (!result) return mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "load: no result to fill");
    memset(result, 0, sizeof *result);
    if (!model || !ckpt) return mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "load: no model or no checkpoint");
    load_plan plan = { 0 };
    if (!load_match(ctx, model, ckpt, spec, &plan, result)) return false;
    if (result->nmissing + result->nunexpected + result->nmismatched > 0)
        return load_mismatch_error(ctx, model, ckpt, result);
    int32_t threads = spec->threads > 0 ? spec->threads : (int32_t)sysconf(_SC_NPROCESSORS_ONLN);
    result->threads = threads < 1 ? 1 : threads;
    double start = now_seconds();
    load_targets targets;
    if (!load_targets_collect(ctx, &plan, &targets)) return false;
    if (targets.count > INT32_MAX) return mtk_error(ctx, MTK_ERR_OVERFLOW, "load: too many tensors");
    if (!mtk_module_to_empty_except(model, MTK_DEVICE_CPU, targets.tensors, (int32_t)targets.count)) return false;
    result->computed_buffers = load_each_buffer_owner(model, reset_owner, NULL);
    if (result->computed_buffers < 0) return false;
    bool *mapped = mtk_ctx_alloc(ctx, (size_t)(plan.nreads ? plan.nreads : 1) * sizeof *mapped);
    if (!mapped || !load_place(ctx, &plan, &targets, spec->copy, mapped, result)) return false;
    if (!read_all(ctx, &plan, spec, mapped, result->bytes, result->threads) ||
        !load_verify_materialized(ctx, model, "load"))
        return false;
    result->seconds = now_seconds() - start;
    return true;
}
