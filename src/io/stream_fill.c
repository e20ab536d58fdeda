/* Weight streaming's read fill: a streamed layer's tensors are read
 * (pread, from the page cache) into a reused layer-sized slot, and the
 * tensors point at the slot for the layer's forward.  The alternative to
 * mapping the layer's pages in and dropping them (stream_run.c), whose
 * cost is the page tables: with the page cache in 4 KiB folios, 4-7 ms to
 * map and 3-6 ms to drop 64 MiB, and the forward then reads through 4 KiB
 * TLB entries; a read costs one copy per byte (6 ms per 64 MiB from large
 * folios, 13-15 ms from 4 KiB ones) and leaves the forward warm huge
 * pages.  Which one a stream uses is measured when it starts. */
#include "io/stream_internal.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define SLOT_ALIGN ((size_t)2 << 20) /* a PMD: huge pages need it */
#define PIECE_ALIGN ((size_t)64)

static double thread_cpu(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The storage's release: the whole reservation, alignment included. */
static void slot_unmap(void *data, size_t nbytes, void *user)
{
    (void)data;
    (void)nbytes;
    stream_range *r = user;
    munmap(r->start, r->length);
    free(r);
}

bool stream_slot_init(mtk_ctx *ctx, stream_slot *slot, size_t size)
{
    memset(slot, 0, sizeof *slot);
    slot->unit = -1;
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size = (size + page - 1) & ~(page - 1); /* resident: this; the alignment only reserved */
    stream_range *whole = malloc(sizeof *whole);
    void *raw = whole ? mmap(NULL, size + SLOT_ALIGN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
                      : MAP_FAILED;
    if (raw == MAP_FAILED) {
        free(whole);
        return mtk_error(ctx, MTK_ERR_OUT_OF_MEMORY, "stream: cannot map a slot of %zu bytes: %s", size,
                         strerror(errno));
    }
    *whole = (stream_range){ raw, size + SLOT_ALIGN };
    char *data = (char *)(((uintptr_t)raw + SLOT_ALIGN - 1) & ~(uintptr_t)(SLOT_ALIGN - 1));
    (void)madvise(data, size, MADV_HUGEPAGE); /* best effort: THP may be off */
    memset(data, 0, size);                    /* faulted in once, here */
    slot->storage = mtk_storage_wrap(ctx, MTK_STORAGE_OWNED, data, size, slot_unmap, whole);
    if (!slot->storage) {
        munmap(raw, size + SLOT_ALIGN);
        free(whole);
        return false;
    }
    slot->data = data;
    slot->size = size;
    return true;
}

void stream_slot_fini(stream_slot *slot)
{
    if (slot->storage) mtk_storage_release(slot->storage);
    memset(slot, 0, sizeof *slot);
    slot->unit = -1;
}

/* Reads chunk `c` of `u` into the slot: its piece and the bytes within. */
static void read_chunk(const stream_slot *slot, const stream_unit *u, int32_t c)
{
    int32_t p = 0;
    while (p + 1 < u->npieces && u->pieces[p + 1].first_chunk <= c) p++;
    const stream_piece *pc = &u->pieces[p];
    size_t at = (size_t)(c - pc->first_chunk) * STREAM_CHUNK;
    size_t n = pc->bytes - at < STREAM_CHUNK ? pc->bytes - at : STREAM_CHUNK;
    char *dst = (char *)slot->data + pc->slot_offset + at;
    uint64_t off = pc->file_offset + at;
    while (n > 0) {
        ssize_t got = pread(pc->fd, dst, n, (off_t)off);
        if (got <= 0) {
            if (got < 0 && errno == EINTR) continue;
            /* a file cut short under us: the mapping's bytes (a SIGBUS there
               too, as a mapped run would meet it) */
            memcpy(dst, (const char *)mtk_storage_data(pc->mapped) + off, n);
            return;
        }
        dst += got;
        off += (uint64_t)got;
        n -= (size_t)got;
    }
}

double stream_slot_fill(stream_slot *slot, const stream_unit *u, uint32_t gen)
{
    double t0 = thread_cpu();
    uint64_t v = atomic_load(&slot->next);
    for (;;) {
        if ((uint32_t)(v >> 32) != gen || (int64_t)(uint32_t)v >= u->nchunks) break;
        if (!atomic_compare_exchange_weak(&slot->next, &v, v + 1)) continue; /* v reloaded */
        read_chunk(slot, u, (int32_t)(uint32_t)v);
        atomic_fetch_add(&slot->done, 1);
        v = atomic_load(&slot->next);
    }
    return thread_cpu() - t0;
}

void stream_unit_point(const stream_unit *u, const stream_slot *slot, bool at_slot)
{
    for (int32_t i = 0; i < u->npieces; i++) {
        const stream_piece *pc = &u->pieces[i];
        if (at_slot) {
            pc->tensor->storage = slot->storage;
            pc->tensor->storage_offset = (int64_t)(pc->slot_offset / mtk_dtype_size(pc->tensor->dtype));
        } else {
            pc->tensor->storage = pc->mapped;
            pc->tensor->storage_offset = pc->mapped_offset;
        }
    }
}

bool stream_unit_pieces(mtk_ctx *ctx, stream_unit *u, int (*fd_of)(void *user, const mtk_storage *mapping),
                        void *user)
{
    mtk_named_tensor *all;
    int32_t n = mtk_module_named_parameters(u->module, &all);
    if (n < 0) return false;
    u->pieces = mtk_ctx_alloc(ctx, (size_t)(n ? n : 1) * sizeof *u->pieces);
    if (!u->pieces) return false;
    size_t at = 0;
    int32_t chunks = 0;
    for (int32_t i = 0; i < n; i++) {
        mtk_tensor *t = all[i].tensor;
        size_t bytes = mtk_tensor_nbytes(t);
        if (!t->storage || mtk_storage_kind_of(t->storage) != MTK_STORAGE_MAPPED || bytes == 0) continue;
        int fd = fd_of(user, t->storage);
        if (fd < 0 || !mtk_tensor_is_contiguous(t)) { /* a memory image, or a strided view: mapped only */
            u->npieces = 0;
            u->slot_bytes = 0;
            return true;
        }
        size_t esize = mtk_dtype_size(t->dtype);
        size_t align = PIECE_ALIGN % esize == 0 ? PIECE_ALIGN : esize;
        at = (at + align - 1) / align * align;
        u->pieces[u->npieces++] = (stream_piece){
            .tensor = t, .mapped = t->storage, .mapped_offset = t->storage_offset, .fd = fd,
            .file_offset = (uint64_t)((const char *)mtk_tensor_data(t) - (const char *)mtk_storage_data(t->storage)),
            .bytes = bytes, .slot_offset = at, .first_chunk = chunks };
        at += bytes;
        chunks += (int32_t)((bytes + STREAM_CHUNK - 1) / STREAM_CHUNK);
    }
    u->nchunks = chunks;
    u->slot_bytes = at;
    return true;
}
