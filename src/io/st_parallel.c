/* Reading many tensors with worker threads: every read is checked in the
 * caller's thread, then cut into chunks of at most CHUNK_BYTES that the
 * workers take in turn (a copy or a conversion by pread, or for a read
 * whose destination is the mapping itself, faulting its pages in), so that
 * a few huge tensors keep every thread busy too.  Workers never touch the
 * context: the first failure is kept and reported after the join. */
#include "io_internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#define CHUNK_BYTES ((uint64_t)16 << 20)

/* A piece of one tensor: elements [first, first + count). */
typedef struct chunk {
    const mtk_st_file *file;
    const mtk_st_info *info;
    mtk_st_dtype to;
    uint8_t *dst; /* the destination's first element */
    int64_t first, count;
    bool mapped;  /* dst is the file's own bytes: fault them in, no copy */
} chunk;

typedef struct work {
    chunk *chunks;
    int64_t count;
    atomic_llong next;
    atomic_int error;          /* first errno, 0 if none */
    atomic_llong failed_chunk; /* its chunk */
} work;

static void do_chunk(work *w, int64_t i)
{
    const chunk *c = &w->chunks[i];
    size_t fsize = mtk_st_dtype_size(c->info->dtype), tsize = mtk_st_dtype_size(c->to);
    uint64_t offset = c->info->begin + (uint64_t)c->first * fsize;
    uint8_t *dst = c->dst + (size_t)c->first * tsize;
    int e;
    if (c->mapped) { /* EIO: truncated; an old kernel's EINVAL is no error (the pages come on first use) */
        e = st_populate(c->file, offset, (size_t)c->count * fsize);
        if (e != EIO) e = 0;
    } else { /* read, not copied out of the mapping: the process keeps no
              * file pages (a file that shrinks under the read answers EIO) */
        e = st_convert_read(c->file, offset, c->to, dst, c->info->dtype, (size_t)c->count);
    }
    int none = 0;
    if (e && atomic_compare_exchange_strong(&w->error, &none, e)) atomic_store(&w->failed_chunk, i);
}

static void *worker(void *arg)
{
    work *w = arg;
    for (int64_t i; (i = atomic_fetch_add(&w->next, 1)) < w->count && atomic_load(&w->error) == 0;) do_chunk(w, i);
    return NULL;
}

/* Chunks of every contiguous read (strided ones are done here, serially:
 * a failure is -1 - r, r the read that failed, with its errno in *error). */
static int64_t plan(const mtk_st_read *reads, int64_t count, const bool *mapped, chunk *chunks,
                    const mtk_st_info **infos, const mtk_st_dtype *tos, int *error)
{
    int64_t n = 0;
    for (int64_t r = 0; r < count; r++) {
        mtk_tensor *dst = reads[r].dst;
        if (!mtk_tensor_is_contiguous(dst)) {
            if ((*error = st_scatter_strided(reads[r].file, infos[r], dst, tos[r])) != 0) return -1 - r;
            continue;
        }
        size_t esize = mtk_st_dtype_size(infos[r]->dtype) > mtk_st_dtype_size(tos[r]) ? mtk_st_dtype_size(infos[r]->dtype)
                                                                                      : mtk_st_dtype_size(tos[r]);
        int64_t per = (int64_t)(CHUNK_BYTES / esize);
        for (int64_t first = 0; first < infos[r]->numel; first += per) {
            int64_t left = infos[r]->numel - first;
            chunks[n++] = (chunk){ reads[r].file, infos[r], tos[r], mtk_tensor_data(dst), first, left < per ? left : per,
                                   mapped && mapped[r] };
        }
    }
    return n;
}

/* Chunks needed: one per CHUNK_BYTES (of the wider dtype) of each read. */
static int64_t chunks_needed(const mtk_st_read *reads, int64_t count, const mtk_st_info **infos, const mtk_st_dtype *tos)
{
    int64_t n = 0;
    for (int64_t r = 0; r < count; r++) {
        size_t esize = mtk_st_dtype_size(infos[r]->dtype) > mtk_st_dtype_size(tos[r]) ? mtk_st_dtype_size(infos[r]->dtype)
                                                                                      : mtk_st_dtype_size(tos[r]);
        int64_t per = (int64_t)(CHUNK_BYTES / esize);
        if (mtk_tensor_is_contiguous(reads[r].dst)) n += (infos[r]->numel + per - 1) / per;
    }
    return n;
}

bool mtk_st_read_into_many(mtk_ctx *ctx, const mtk_st_read *reads, int64_t count, int32_t threads)
{
    return st_read_many(ctx, reads, count, threads, NULL);
}

bool st_read_many(mtk_ctx *ctx, const mtk_st_read *reads, int64_t count, int32_t threads, const bool *mapped)
{
    if (count < 0 || (count > 0 && !reads))
        return mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "read_into_many: no reads given");
    size_t n = (size_t)(count ? count : 1);
    const mtk_st_info **infos = mtk_ctx_malloc(ctx, n * sizeof *infos);
    mtk_st_dtype *tos = mtk_ctx_malloc(ctx, n * sizeof *tos);
    bool ok = infos && tos;
    for (int64_t r = 0; ok && r < count; r++)
        ok = reads[r].file && st_check_read(ctx, reads[r].file, reads[r].name, reads[r].dst, &infos[r], &tos[r]);
    work w = { 0 };
    int64_t planned = ok ? chunks_needed(reads, count, infos, tos) : 0;
    w.chunks = ok ? mtk_ctx_malloc(ctx, (size_t)(planned ? planned : 1) * sizeof *w.chunks) : NULL;
    ok = ok && w.chunks;
    int strided_error = 0;
    if (ok && (w.count = plan(reads, count, mapped, w.chunks, infos, tos, &strided_error)) < 0) {
        const mtk_st_read *r = &reads[-1 - w.count];
        ok = mtk_error(ctx, MTK_ERR_IO, "%s: cannot read tensor '%s': %s (was the file truncated while it was read?)",
                       r->file->path, r->name, strerror(strided_error));
    }
    if (ok) {
        atomic_init(&w.next, 0);
        atomic_init(&w.error, 0);
        atomic_init(&w.failed_chunk, -1);
        int32_t wanted = threads > 0 ? threads : mtk_ctx_num_threads(ctx); /* default: one per cpu */
        if (wanted > 64) wanted = 64;
        if (wanted > w.count) wanted = (int32_t)(w.count > 0 ? w.count : 1);
        pthread_t ids[64];
        int32_t started = 0;
        st_guard_hold(); /* one install of the SIGBUS handler for every chunk */
        for (; started < wanted - 1; started++) /* the caller's thread is one of them */
            if (pthread_create(&ids[started], NULL, worker, &w) != 0) break;
        worker(&w);
        for (int32_t i = 0; i < started; i++) pthread_join(ids[i], NULL);
        st_guard_release();
        int e = atomic_load(&w.error);
        if (e) {
            const chunk *c = &w.chunks[atomic_load(&w.failed_chunk)];
            ok = mtk_error(ctx, MTK_ERR_IO, "%s: cannot read tensor '%s': %s (was the file truncated while it was read?)",
                           c->file->path, c->info->name, strerror(e));
        }
    }
    mtk_ctx_mfree(ctx, w.chunks);
    mtk_ctx_mfree(ctx, (void *)infos);
    mtk_ctx_mfree(ctx, tos);
    return ok;
}
