/* Internal layout of the context, shared by the core's files only. */
#ifndef MTK_CTX_INTERNAL_H
#define MTK_CTX_INTERNAL_H

#include "mtk/core.h"

#define SCOPE_DEPTH 64
#define MESSAGE_CAP 1024

typedef struct arena_block {
    struct arena_block *next;
    size_t used, cap;
    /* data follows, 16-byte aligned */
} arena_block;

typedef struct storage_ref {
    struct storage_ref *next;
    mtk_storage *storage;
} storage_ref;

struct mtk_ctx {
    mtk_allocator allocator;
    arena_block *arena;        /* newest block first */
    size_t arena_bytes;
    storage_ref *storage_refs; /* references held by this context's tensors */

    mtk_status status;
    char message[MESSAGE_CAP];

    mtk_device device_stack[SCOPE_DEPTH];
    int32_t device_depth;      /* entries used; [0] is the base */
    mtk_dtype dtype_stack[SCOPE_DEPTH];
    int32_t dtype_depth;
    mtk_init_mode init_stack[SCOPE_DEPTH];
    int32_t init_depth;
};

/* Remembers that the context holds one reference to `storage` (dropped in
 * mtk_ctx_free).  False on out of memory. */
bool mtk_ctx_hold_storage(mtk_ctx *ctx, mtk_storage *storage);

#endif
