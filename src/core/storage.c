/* Reference-counted storage: owned, borrowed, or mapped memory. */
#include "mtk/core.h"
#include "ctx_internal.h"

#include <stdlib.h>
#include <string.h>

struct mtk_storage {
    int64_t refcount;
    mtk_storage_kind kind;
    void *data;
    size_t nbytes;
    mtk_allocator allocator; /* frees the struct (and owned data)      */
    void *raw;               /* owned: the unaligned block to free      */
    void (*release)(void *data, size_t nbytes, void *user);
    void *user;
};

static mtk_storage *storage_alloc(mtk_ctx *ctx)
{
    mtk_storage *s = ctx->allocator.alloc(sizeof *s, ctx->allocator.user);
    if (!s) {
        mtk_error(ctx, MTK_ERR_OUT_OF_MEMORY, "out of memory allocating storage");
        return NULL;
    }
    memset(s, 0, sizeof *s);
    s->refcount = 1;
    s->allocator = ctx->allocator;
    return s;
}

mtk_storage *mtk_storage_new(mtk_ctx *ctx, size_t nbytes)
{
    if (nbytes > SIZE_MAX - 64) {
        mtk_error(ctx, MTK_ERR_OUT_OF_MEMORY, "storage of %zu bytes is too large", nbytes);
        return NULL;
    }
    mtk_storage *s = storage_alloc(ctx);
    if (!s) return NULL;
    void *raw = ctx->allocator.alloc(nbytes + 64, ctx->allocator.user);
    if (!raw) {
        ctx->allocator.free(s, ctx->allocator.user);
        mtk_error(ctx, MTK_ERR_OUT_OF_MEMORY, "out of memory allocating %zu bytes of tensor data", nbytes);
        return NULL;
    }
    s->kind = MTK_STORAGE_OWNED;
    s->raw = raw;
    s->data = (void *)(((uintptr_t)raw + 63) & ~(uintptr_t)63);
    s->nbytes = nbytes;
    return s;
}

mtk_storage *mtk_storage_borrow(mtk_ctx *ctx, void *data, size_t nbytes)
{
    return mtk_storage_wrap(ctx, MTK_STORAGE_BORROWED, data, nbytes, NULL, NULL);
}

mtk_storage *mtk_storage_wrap(mtk_ctx *ctx, mtk_storage_kind kind, void *data, size_t nbytes,
                              void (*release)(void *, size_t, void *), void *user)
{
    mtk_storage *s = storage_alloc(ctx);
    if (!s) return NULL;
    s->kind = kind;
    s->data = data;
    s->nbytes = nbytes;
    s->release = release;
    s->user = user;
    return s;
}

void mtk_storage_retain(mtk_storage *s)
{
    if (s) s->refcount++;
}

void mtk_storage_release(mtk_storage *s)
{
    if (!s || --s->refcount > 0) return;
    if (s->release) s->release(s->data, s->nbytes, s->user);
    if (s->raw) s->allocator.free(s->raw, s->allocator.user);
    s->allocator.free(s, s->allocator.user);
}

void *mtk_storage_data(const mtk_storage *s) { return s ? s->data : NULL; }
size_t mtk_storage_nbytes(const mtk_storage *s) { return s ? s->nbytes : 0; }
mtk_storage_kind mtk_storage_kind_of(const mtk_storage *s) { return s->kind; }
int64_t mtk_storage_refcount(const mtk_storage *s) { return s ? s->refcount : 0; }
