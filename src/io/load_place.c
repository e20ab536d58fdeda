/* Where a load puts each tensor's data (load_module.c reads into it).
 *
 * A tensor read whole from a mapped checkpoint in its own dtype, with
 * contiguous strides and a file offset that is a multiple of its element
 * size, becomes a view of the mapping: no memory allocated, no byte
 * copied, as from_pretrained uses safetensors' mapped storage.  The
 * tensor's storage is the file's mapping, reference-counted, so the
 * mapping outlives mtk_checkpoint_close for as long as the tensor lives.
 * The mapping is private and writable (st_file.c), so a write into a
 * weight is copy-on-write: the process gets its own copy of that page and
 * the file never changes.  A file that could only be mapped read-only is
 * copied instead, so that a write never faults.
 *
 * Every other tensor read (converted, a slice of a fused tensor, a
 * misaligned one, or all of them with spec->copy) gets a slot of one slab:
 * one anonymous mapping for all of them (one system call, not one
 * allocation per tensor), never zero-filled by us: the reader threads
 * fault its pages in, each for the chunk it copies into. */
#include "io/io_internal.h"
#include "io/load_internal.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define SLOT_ALIGN ((size_t)64)

static int by_target(const void *a, const void *b)
{
    uintptr_t x = (uintptr_t)((const load_target *)a)->tensor, y = (uintptr_t)((const load_target *)b)->tensor;
    return x < y ? -1 : x > y;
}

bool load_targets_collect(mtk_ctx *ctx, const load_plan *plan, load_targets *out)
{
    memset(out, 0, sizeof *out);
    size_t n = (size_t)(plan->nreads ? plan->nreads : 1);
    load_target *all = mtk_ctx_alloc(ctx, n * sizeof *all);
    out->tensors = mtk_ctx_alloc(ctx, n * sizeof *out->tensors);
    if (!all || !out->tensors) return false;
    for (int64_t i = 0; i < plan->nreads; i++) all[i] = (load_target){ plan->reads[i].target, i, 1 };
    qsort(all, (size_t)plan->nreads, sizeof *all, by_target);
    int64_t count = 0;
    for (int64_t i = 0; i < plan->nreads; i++) {
        if (count > 0 && all[count - 1].tensor == all[i].tensor) {
            all[count - 1].nreads++;
            if (all[i].first < all[count - 1].first) all[count - 1].first = all[i].first;
            continue;
        }
        all[count++] = all[i];
    }
    for (int64_t i = 0; i < count; i++) out->tensors[i] = all[i].tensor;
    out->items = all;
    out->count = count;
    return true;
}

/* Whether read r, the only one of its target, can be a view of the
 * mapped file (see the top of the file). */
static bool mappable(const load_read *r)
{
    const mtk_st_file *f = r->file;
    const mtk_tensor *t = r->target;
    if (r->expert >= 0 || f->fd < 0 || !f->writable || !f->mapping) return false;
    if (mtk_st_dtype_to_mtk(r->info->dtype) != t->dtype || !mtk_tensor_is_contiguous(t)) return false;
    if (r->info->ndim != t->ndim) return false;
    for (int32_t d = 0; d < t->ndim; d++)
        if (r->info->shape[d] != t->shape[d]) return false;
    size_t esize = mtk_dtype_size(t->dtype);
    return esize > 0 && (f->data_start + r->info->begin) % esize == 0;
}

static void slab_release(void *data, size_t nbytes, void *user)
{
    (void)user;
    munmap(data, nbytes);
}

/* One anonymous mapping of at least `bytes` as storage; NULL with
 * MTK_ERR_OUT_OF_MEMORY.  Not advised to use huge pages: on this project's
 * machine (a VM) faulting them in cost 1.3-2x the cpu time of 4 KiB pages
 * (clear_page of fresh huge pages), measured with `mtk load --copy`. */
static mtk_storage *slab_new(mtk_ctx *ctx, size_t bytes)
{
    void *start = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (start == MAP_FAILED) {
        mtk_error(ctx, MTK_ERR_OUT_OF_MEMORY, "load: out of memory allocating %zu bytes for the model's tensors",
                  bytes);
        return NULL;
    }
    mtk_storage *s = mtk_storage_wrap(ctx, MTK_STORAGE_OWNED, start, bytes, slab_release, NULL);
    if (!s) munmap(start, bytes);
    return s;
}

/* t on the cpu as a contiguous view of `storage` at byte `offset`,
 * assigned in place to the model's tensor. */
static bool assign_view(mtk_ctx *ctx, mtk_tensor *t, mtk_storage *storage, uint64_t offset)
{
    mtk_tensor *view = mtk_tensor_new(ctx, t->dtype, t->shape, t->ndim, NULL, MTK_DEVICE_CPU);
    if (!view) return false;
    view->storage_offset = (int64_t)(offset / mtk_dtype_size(t->dtype));
    return mtk_tensor_set_storage(view, storage) && mtk_module_assign_tensor(t, view);
}

bool load_place(mtk_ctx *ctx, const load_plan *plan, const load_targets *tg, bool copy, bool *mapped,
                mtk_load_result *result)
{
    for (int64_t i = 0; i < plan->nreads; i++) mapped[i] = false;
    size_t slab_bytes = 0;
    for (int64_t i = 0; i < tg->count; i++) {
        load_target *g = &tg->items[i];
        const load_read *r = &plan->reads[g->first];
        if (!copy && g->nreads == 1 && mappable(r)) {
            mapped[g->first] = true;
            if (!assign_view(ctx, g->tensor, r->file->mapping, r->file->data_start + r->info->begin)) return false;
            result->mapped++;
            result->mapped_bytes += r->info->end - r->info->begin;
        } else if (mtk_tensor_is_contiguous(g->tensor)) {
            size_t n = (size_t)mtk_tensor_nbytes(g->tensor);
            if (n > SIZE_MAX - slab_bytes - SLOT_ALIGN)
                return mtk_error(ctx, MTK_ERR_OVERFLOW, "load: the model's tensors overflow the address space");
            slab_bytes += (n + SLOT_ALIGN - 1) & ~(SLOT_ALIGN - 1);
        }
    }
    mtk_storage *slab = slab_bytes ? slab_new(ctx, slab_bytes) : NULL;
    if (slab_bytes && !slab) return false;
    bool ok = true;
    uint64_t at = 0;
    for (int64_t i = 0; ok && i < tg->count; i++) {
        mtk_tensor *t = tg->items[i].tensor;
        if (mapped[tg->items[i].first]) continue;
        if (!mtk_tensor_is_contiguous(t)) { /* its own memory, strides kept */
            mtk_tensor *fresh = mtk_to_empty(ctx, t, MTK_DEVICE_CPU);
            ok = fresh && mtk_module_assign_tensor(t, fresh);
            continue;
        }
        ok = assign_view(ctx, t, slab, at);
        at += (mtk_tensor_nbytes(t) + SLOT_ALIGN - 1) & ~(SLOT_ALIGN - 1);
    }
    mtk_storage_release(slab); /* the tensors hold it now */
    return ok;
}
