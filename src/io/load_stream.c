/* Weight streaming (mtk/stream.h): a model loaded as views of the mapped
 * checkpoint, whose decoder layers are made resident just before their
 * forward (a prefetch thread runs one layer ahead) and dropped from the
 * process just after it.  The loading half: match keys, assign views,
 * recompute buffers, size the layers against the budget. */
#include "io/io_internal.h"
#include "io/load_internal.h"
#include "io/stream_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* The name of `t` among `all` (n of them), or NULL. */
static const char *name_of(const mtk_named_tensor *all, int32_t n, const mtk_tensor *t)
{
    for (int32_t i = 0; i < n; i++)
        if (all[i].tensor == t) return all[i].name;
    return NULL;
}

/* Puts `owner`'s parameters back on meta (their views come later), so
 * that the memory its reset filled is freed before the next owner's. */
static bool drop_parameters(mtk_ctx *ctx, mtk_module *owner)
{
    mtk_named_tensor *params;
    int32_t n = mtk_module_named_parameters(owner, &params);
    if (n <= 0) return n == 0;
    mtk_state_dict *sd = mtk_state_dict_new(ctx);
    for (int32_t i = 0; sd && i < n; i++) {
        const mtk_tensor *t = params[i].tensor;
        mtk_tensor *meta = mtk_tensor_new(ctx, t->dtype, t->shape, t->ndim, NULL, MTK_DEVICE_META);
        if (!meta || !mtk_state_dict_set(sd, params[i].name, meta)) return false;
    }
    mtk_load_options o = { .strict = false, .assign = true };
    mtk_load_report report;
    return sd && mtk_module_load_state_dict(owner, sd, &o, &report);
}

/* A module owning non-persistent buffers goes to the cpu (still without
 * any checkpoint data), is reset once, and its parameters go back to
 * meta. */
static bool materialize_owner(mtk_module *owner, void *ctx)
{
    return mtk_module_to_empty(owner, MTK_DEVICE_CPU) && mtk_module_reset_parameters(owner, 0) &&
           drop_parameters(ctx, owner);
}

/* Views of every read's checkpoint tensor, assigned to the model's
 * tensors (load_state_dict with assign, so tied tensors stay tied). */
static bool assign_views(mtk_ctx *ctx, mtk_module *model, const load_plan *plan)
{
    mtk_named_tensor *all[2];
    int32_t n[2] = { mtk_module_named_parameters(model, &all[0]), mtk_module_named_buffers(model, &all[1]) };
    if (n[0] < 0 || n[1] < 0) return false;
    mtk_state_dict *sd = mtk_state_dict_new(ctx);
    if (!sd) return false;
    for (int64_t i = 0; i < plan->nreads; i++) {
        const load_read *r = &plan->reads[i];
        const char *name = name_of(all[0], n[0], r->target);
        if (!name) name = name_of(all[1], n[1], r->target);
        if (r->expert >= 0)
            return mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT,
                             "stream: %s is one expert of the fused %s: streaming maps tensors as the model holds "
                             "them; convert the checkpoint (mtk convert) or run without --max-ram",
                             r->info->name, name ? name : "tensor");
        mtk_dtype file_dtype = mtk_st_dtype_to_mtk(r->info->dtype);
        if (file_dtype != r->target->dtype)
            return mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT,
                             "stream: %s is %s in the checkpoint and %s in the model: streaming maps the file's "
                             "bytes, so run in the checkpoint's dtype (drop --dtype) or without --max-ram",
                             r->info->name, mtk_st_dtype_name(r->info->dtype), mtk_dtype_name(r->target->dtype));
        mtk_tensor *view = mtk_st_view(ctx, r->file, r->info->name);
        if (!view || !name || !mtk_state_dict_set(sd, name, view)) {
            if (!name) mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "stream: %s fills no named tensor", r->info->name);
            return false;
        }
    }
    mtk_load_options o = { .strict = false, .assign = true };
    mtk_load_report report;
    return mtk_module_load_state_dict(model, sd, &o, &report);
}

/* A descriptor (dup) of each distinct checkpoint file the reads map,
 * with its mapping, into *files (the context's arena); -1 on failure. */
static int32_t open_files(mtk_ctx *ctx, const load_plan *plan, stream_file **files)
{
    *files = mtk_ctx_alloc(ctx, (size_t)(plan->nreads ? plan->nreads : 1) * sizeof **files);
    if (!*files) return -1;
    int32_t n = 0;
    for (int64_t i = 0; i < plan->nreads; i++) {
        const mtk_st_file *f = plan->reads[i].file;
        bool seen = f->fd < 0;
        for (int32_t k = 0; k < n && !seen; k++) seen = (*files)[k].mapping == f->mapping;
        if (seen) continue;
        int fd = dup(f->fd);
        if (fd < 0) continue; /* its layers stay mapped */
        (*files)[n++] = (stream_file){ f->mapping, fd };
    }
    return n;
}

/* The bytes of the distinct parameters and buffers under `m`. */
static uint64_t tensor_bytes(mtk_module *m)
{
    mtk_named_tensor *all[2];
    int32_t n[2] = { mtk_module_named_parameters(m, &all[0]), mtk_module_named_buffers(m, &all[1]) };
    uint64_t bytes = 0;
    for (int k = 0; k < 2; k++)
        for (int32_t i = 0; i < n[k]; i++) bytes += mtk_tensor_nbytes(all[k][i].tensor);
    return bytes;
}

/* The heaviest ModuleList of the model: its path and the module. */
static mtk_module *find_layers(mtk_module *model, const char **path)
{
    mtk_named_module *mods;
    int32_t n = mtk_module_named_modules(model, &mods);
    mtk_module *best = NULL;
    uint64_t best_bytes = 0;
    for (int32_t i = 0; i < n; i++) {
        if (strcmp(mtk_module_type_name(mods[i].module), "ModuleList") != 0) continue;
        if (mtk_module_child_count(mods[i].module) < 1) continue;
        uint64_t b = tensor_bytes(mods[i].module);
        if (b > best_bytes) {
            best = mods[i].module;
            best_bytes = b;
            *path = mods[i].name;
        }
    }
    return best;
}

/* The page ranges of the mapped tensors under `layer`, into *unit. */
static bool unit_ranges(mtk_ctx *ctx, mtk_module *layer, stream_unit *unit)
{
    mtk_named_tensor *all;
    int32_t n = mtk_module_named_parameters(layer, &all);
    if (n < 0) return false;
    unit->module = layer;
    unit->ranges = mtk_ctx_alloc(ctx, (size_t)(n ? n : 1) * sizeof *unit->ranges);
    if (!unit->ranges) return false;
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    for (int32_t i = 0; i < n; i++) {
        const mtk_tensor *t = all[i].tensor;
        unit->bytes += mtk_tensor_nbytes(t);
        if (!t->storage || mtk_storage_kind_of(t->storage) != MTK_STORAGE_MAPPED) continue;
        uintptr_t begin = (uintptr_t)mtk_tensor_data(t), end = begin + mtk_tensor_nbytes(t);
        begin &= ~(page - 1);
        end = (end + page - 1) & ~(page - 1);
        unit->ranges[unit->nranges++] = (stream_range){ (void *)begin, (size_t)(end - begin) };
    }
    return true;
}

/* "N bytes (X.Y MiB)" or "(X.Y KiB)" into buf. */
static const char *sized(uint64_t bytes, char *buf, size_t size)
{
    double k = (double)bytes / 1024.0;
    if (k < 1024.0) snprintf(buf, size, "%llu bytes (%.1f KiB)", (unsigned long long)bytes, k);
    else snprintf(buf, size, "%llu bytes (%.1f MiB)", (unsigned long long)bytes, k / 1024.0);
    return buf;
}

mtk_stream *mtk_stream_load(mtk_ctx *ctx, mtk_module *model, mtk_checkpoint *ckpt, const mtk_load_spec *spec,
                            uint64_t max_ram, mtk_load_result *result)
{
    static const mtk_load_spec exact = { 0 };
    if (!spec) spec = &exact;
    if (!result) {
        mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "stream: no result to fill");
        return NULL;
    }
    memset(result, 0, sizeof *result);
    if (!model || !ckpt) {
        mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "stream: no model or no checkpoint");
        return NULL;
    }
    const char *path = NULL;
    mtk_module *layers = find_layers(model, &path);
    if (!layers) {
        mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "stream: %s has no list of layers (a ModuleList) to stream",
                  mtk_module_type_name(model));
        return NULL;
    }
    /* sizes first: a budget that cannot run fails before anything is mapped */
    int32_t count = mtk_module_child_count(layers);
    stream_unit *units = mtk_ctx_alloc(ctx, (size_t)count * sizeof *units);
    if (!units) return NULL;
    uint64_t total = tensor_bytes(model), in_layers = 0, largest = 0;
    for (int32_t i = 0; i < count; i++) {
        uint64_t b = tensor_bytes(mtk_module_child_at(layers, i, NULL));
        in_layers += b;
        largest = b > largest ? b : largest;
    }
    uint64_t fixed = total - in_layers;
    if (max_ram < fixed + largest) {
        char b[4][64];
        mtk_error(ctx, MTK_ERR_OUT_OF_MEMORY,
                  "stream: --max-ram %s cannot hold %s's tensors outside its %d layers (embeddings, norms, "
                  "head: %s) plus one layer of %s (%s): at least %llu bytes are needed (the whole model: %s)",
                  sized(max_ram, b[0], sizeof b[0]), mtk_module_type_name(model), (int)count,
                  sized(fixed, b[1], sizeof b[1]), path, sized(largest, b[2], sizeof b[2]),
                  (unsigned long long)(fixed + largest), sized(total, b[3], sizeof b[3]));
        return NULL;
    }
    load_plan plan = { 0 };
    if (!load_match(ctx, model, ckpt, spec, &plan, result)) return NULL;
    if (result->nmissing + result->nunexpected + result->nmismatched > 0) {
        load_mismatch_error(ctx, model, ckpt, result);
        return NULL;
    }
    double start = stream_now();
    result->threads = 1;
    result->computed_buffers = load_each_buffer_owner(model, materialize_owner, ctx);
    if (result->computed_buffers < 0 || !assign_views(ctx, model, &plan) ||
        !load_verify_materialized(ctx, model, "stream"))
        return NULL;
    for (int32_t i = 0; i < count; i++)
        if (!unit_ranges(ctx, mtk_module_child_at(layers, i, NULL), &units[i])) return NULL;
    result->seconds = stream_now() - start;
    stream_file *files;
    int32_t nfiles = open_files(ctx, &plan, &files);
    if (nfiles < 0) return NULL;
    mtk_stream_stats stats = { .budget = max_ram, .total_bytes = total, .fixed_bytes = fixed,
                               .layer_bytes = largest, .layers = path, .layer_count = count,
                               .prefetch = max_ram >= fixed + 2 * largest, .releases = max_ram < total };
    return stream_start(ctx, units, count, &stats, files, nfiles);
}
