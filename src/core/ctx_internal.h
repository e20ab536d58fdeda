/* Internal layout of the context, shared by the core's files only. */
#ifndef MTK_CTX_INTERNAL_H
#define MTK_CTX_INTERNAL_H

#include "mtk/core.h"

#define SCOPE_DEPTH 64 /* nested pushes allowed per scope stack */
#define MESSAGE_CAP 1024

typedef struct arena_block {
    struct arena_block *next;
    char *data;       /* first byte, 16-byte aligned (whatever the allocator gave) */
    size_t used, cap; /* bytes of data handed out, and available               */
    size_t dirty;     /* bytes from data that were ever handed out: those past
                         them are still zero when the block came mapped          */
    size_t mapped;    /* the mapping's length when the block is mmap'd (fresh
                         zero pages, unmapped on free); 0: the allocator's      */
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

    /* [0] is the base value, then up to SCOPE_DEPTH pushed scopes */
    mtk_device device_stack[SCOPE_DEPTH + 1];
    int32_t device_depth;      /* entries used, >= 1 */
    mtk_dtype dtype_stack[SCOPE_DEPTH + 1];
    int32_t dtype_depth;
    mtk_init_mode init_stack[SCOPE_DEPTH + 1];
    int32_t init_depth;
    int32_t num_threads;       /* mtk_ctx_set_num_threads; 0: the default */

    /* The op observer (nn's tracing; NULL: none), called by the
     * dispatcher after every op that succeeds, and the state of the
     * default generator (mtk_ctx_manual_seed). */
    mtk_op_hook op_hook;
    void *op_hook_user;
    /* The module call observer (nn/forward.c; NULL: none): before and
     * after every mtk_module_call, as mtk_ctx_set_module_hook says. */
    mtk_module_hook module_hook;
    void *module_hook_user;
    uint64_t seed_state;

    /* Fault injection for tests (tests/unit/test_oom.c): arena requests
     * are counted, and request number `arena_fail_at` (1-based; 0: never)
     * fails as if the allocator had, and every later one too when
     * `arena_fail_after` is set.  The allocator itself only sees new
     * blocks, so this reaches every mtk_ctx_alloc call site. */
    int64_t arena_requests;
    int64_t arena_fail_at;
    bool arena_fail_after;
};

/* Remembers that the context holds one reference to `storage` (dropped in
 * mtk_ctx_free).  False on out of memory. */
bool mtk_ctx_hold_storage(mtk_ctx *ctx, mtk_storage *storage);

#endif
