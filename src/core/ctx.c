/* The context: arena for metadata, sticky error, and the scope stacks. */
#include "ctx_internal.h"
#include "core/parallel.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define ARENA_BLOCK_MIN ((size_t)64 * 1024)
#define ARENA_BLOCK_MAX ((size_t)16 * 1024 * 1024)
#define ALIGN16(n) (((n) + 15u) & ~(size_t)15u)

/* Blocks of HUGE_BLOCK_MIN bytes or more (big tensors' data) are 2 MiB
 * aligned and advised to use transparent huge pages: first-touch page
 * faults, which take most of the time of a big element-wise op, then
 * come 512 times less often. */
#define HUGE_BLOCK_MIN ((size_t)32 << 20)
#define HUGE_PAGE ((size_t)2 << 20)

static void *default_alloc(size_t size, void *user)
{
    (void)user;
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (size >= HUGE_BLOCK_MIN) {
        void *p = NULL;
        if (posix_memalign(&p, HUGE_PAGE, size) != 0) return NULL;
        madvise(p, size, MADV_HUGEPAGE); /* advice only: failure changes nothing */
        return p;
    }
#endif
    return malloc(size);
}
static void default_free(void *ptr, void *user) { (void)user; free(ptr); }

/* Arena blocks of MAPPED_BLOCK_MIN bytes or more, with the default
 * allocator, are mapped by the arena itself: their pages come zeroed, so
 * mtk_ctx_alloc does not clear what was never handed out, and those of a
 * huge page or more are 2 MiB aligned and advised to use transparent huge
 * pages (a model's metadata is megabytes: one fault per 2 MiB instead of
 * one per 4 KiB). */
#define MAPPED_BLOCK_MIN ((size_t)256 * 1024)

static arena_block *map_block(size_t bytes)
{
#if defined(__linux__) && defined(MAP_ANONYMOUS)
    size_t align = bytes >= HUGE_PAGE ? HUGE_PAGE : 4096;
    size_t length = (bytes + align - 1) & ~(align - 1);
    size_t span = align > 4096 ? length + align : length;
    char *raw = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED) return NULL;
    char *start = (char *)(((uintptr_t)raw + align - 1) & ~(uintptr_t)(align - 1));
    /* the slack around the aligned part goes back */
    if (start > raw) munmap(raw, (size_t)(start - raw));
    if (raw + span > start + length) munmap(start + length, (size_t)(raw + span - (start + length)));
#if defined(MADV_HUGEPAGE)
    if (align == HUGE_PAGE) madvise(start, length, MADV_HUGEPAGE); /* advice only */
#endif
    arena_block *b = (arena_block *)start;
    b->mapped = length;
    return b;
#else
    (void)bytes;
    return NULL;
#endif
}

static void release_block(mtk_ctx *ctx, arena_block *b)
{
#if defined(__linux__) && defined(MAP_ANONYMOUS)
    if (b->mapped) {
        munmap(b, b->mapped);
        return;
    }
#endif
    ctx->allocator.free(b, ctx->allocator.user);
}

mtk_ctx *mtk_ctx_new(void) { return mtk_ctx_new_with_allocator(NULL); }

mtk_ctx *mtk_ctx_new_with_allocator(const mtk_allocator *alloc)
{
    mtk_allocator a = { default_alloc, default_free, NULL };
    if (alloc && alloc->alloc) a = *alloc;
    if (!a.free) a.free = default_free;
    mtk_ctx *ctx = a.alloc(sizeof *ctx, a.user);
    if (!ctx) return NULL;
    memset(ctx, 0, sizeof *ctx);
    ctx->allocator = a;
    ctx->device_stack[0] = MTK_DEVICE_CPU;
    ctx->device_depth = 1;
    ctx->dtype_stack[0] = MTK_FLOAT32;
    ctx->dtype_depth = 1;
    ctx->init_stack[0] = MTK_INIT_INIT;
    ctx->init_depth = 1;
    return ctx;
}

void mtk_ctx_free(mtk_ctx *ctx)
{
    if (!ctx) return;
    /* storage_ref nodes live in the arena: release storage first */
    for (storage_ref *r = ctx->storage_refs; r; r = r->next) mtk_storage_release(r->storage);
    arena_block *b = ctx->arena;
    while (b) {
        arena_block *next = b->next;
        release_block(ctx, b);
        b = next;
    }
    ctx->allocator.free(ctx, ctx->allocator.user);
}

void mtk_ctx_set_num_threads(mtk_ctx *ctx, int32_t n)
{
    if (ctx) ctx->num_threads = n > 0 ? n : 0;
}

int32_t mtk_ctx_num_threads(const mtk_ctx *ctx) { return mtk_parallel_threads(ctx ? ctx->num_threads : 0); }

size_t mtk_ctx_arena_bytes(const mtk_ctx *ctx) { return ctx ? ctx->arena_bytes : 0; }

void *mtk_ctx_malloc(mtk_ctx *ctx, size_t size)
{
    void *p = ctx->allocator.alloc(size ? size : 1, ctx->allocator.user);
    if (!p) mtk_error(ctx, MTK_ERR_OUT_OF_MEMORY, "out of memory allocating %zu bytes", size);
    return p;
}

void mtk_ctx_mfree(mtk_ctx *ctx, void *ptr)
{
    if (ptr) ctx->allocator.free(ptr, ctx->allocator.user);
}

/* A new block with room for `cap` bytes of 16-byte aligned data (the
 * allocator may return memory aligned to less than 16). */
static arena_block *new_block(mtk_ctx *ctx, size_t cap)
{
    size_t header = sizeof(arena_block) + 15;
    if (cap > SIZE_MAX - header) {
        mtk_error(ctx, MTK_ERR_OUT_OF_MEMORY, "arena allocation of %zu bytes is too large", cap);
        return NULL;
    }
    arena_block *b = NULL;
    if (ctx->allocator.alloc == default_alloc && cap >= MAPPED_BLOCK_MIN) b = map_block(header + cap);
    if (!b) {
        b = ctx->allocator.alloc(header + cap, ctx->allocator.user);
        if (b) b->mapped = 0;
    }
    if (!b) {
        mtk_error(ctx, MTK_ERR_OUT_OF_MEMORY, "out of memory growing the arena by %zu bytes", cap);
        return NULL;
    }
    b->next = NULL;
    b->data = (char *)(((uintptr_t)(b + 1) + 15) & ~(uintptr_t)15);
    b->used = b->dirty = 0;
    b->cap = cap;
    ctx->arena_bytes += cap;
    return b;
}

static void *arena_take(mtk_ctx *ctx, size_t size, bool *zero);

void *mtk_ctx_alloc(mtk_ctx *ctx, size_t size)
{
    bool zero = false;
    void *p = arena_take(ctx, size, &zero);
    if (p && !zero) memset(p, 0, ALIGN16(size ? size : 1));
    return p;
}

void *mtk_ctx_alloc_uninit(mtk_ctx *ctx, size_t size)
{
    bool zero;
    return arena_take(ctx, size, &zero);
}

/* `size` bytes of the arena; *zero tells whether they are known to be
 * zero (never handed out before, in a mapped block). */
static void *arena_take(mtk_ctx *ctx, size_t size, bool *zero)
{
    ctx->arena_requests++;
    if (ctx->arena_fail_at &&
        (ctx->arena_requests == ctx->arena_fail_at ||
         (ctx->arena_fail_after && ctx->arena_requests > ctx->arena_fail_at))) {
        mtk_error(ctx, MTK_ERR_OUT_OF_MEMORY, "out of memory allocating %zu bytes in the arena", size);
        return NULL;
    }
    if (size > MTK_ARENA_MAX_REQUEST) {
        mtk_error(ctx, MTK_ERR_OUT_OF_MEMORY,
                  "refusing to allocate %zu bytes of metadata at once: the limit of one arena request is %zu bytes "
                  "(MTK_ARENA_MAX_REQUEST; sizes that large come from a runaway count, not a model)",
                  size, MTK_ARENA_MAX_REQUEST);
        return NULL;
    }
    size = ALIGN16(size ? size : 1);
    arena_block *b = ctx->arena;
    if (!b || b->cap - b->used < size) {
        if (size > ARENA_BLOCK_MIN / 4) {
            /* a big request gets a block of its own, linked behind the
             * current one so that the current one keeps serving small ones */
            arena_block *big = new_block(ctx, size);
            if (!big) return NULL;
            big->used = big->dirty = size;
            *zero = big->mapped != 0;
            if (b) {
                big->next = b->next;
                b->next = big;
            } else {
                ctx->arena = big;
            }
            return big->data;
        }
        /* blocks double from 64 KiB up to 16 MiB */
        size_t cap = ARENA_BLOCK_MIN;
        if (b && b->cap >= cap && b->cap <= ARENA_BLOCK_MAX / 2) cap = b->cap * 2;
        arena_block *nb = new_block(ctx, cap);
        if (!nb) return NULL;
        nb->next = b;
        ctx->arena = nb;
        b = nb;
    }
    char *p = b->data + b->used;
    *zero = b->mapped && b->used >= b->dirty;
    b->used += size;
    if (b->used > b->dirty) b->dirty = b->used;
    return p;
}

char *mtk_ctx_strdup(mtk_ctx *ctx, const char *s)
{
    if (!s) {
        mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "strdup of a NULL string");
        return NULL;
    }
    size_t n = strlen(s);
    char *p = mtk_ctx_alloc(ctx, n + 1);
    if (p) memcpy(p, s, n + 1);
    return p;
}

bool mtk_ctx_hold_storage(mtk_ctx *ctx, mtk_storage *storage)
{
    storage_ref *r = mtk_ctx_alloc(ctx, sizeof *r);
    if (!r) return false;
    r->storage = storage;
    r->next = ctx->storage_refs;
    ctx->storage_refs = r;
    return true;
}

const void *mtk_ctx_storage_mark(const mtk_ctx *ctx) { return ctx ? ctx->storage_refs : NULL; }

void mtk_ctx_release_storage_since(mtk_ctx *ctx, const void *mark, mtk_tensor *const *keep, int32_t nkeep)
{
    if (!ctx) return;
    /* the list is newest first: everything before `mark` came after it */
    storage_ref **link = &ctx->storage_refs;
    while (*link && (const void *)*link != mark) {
        storage_ref *r = *link;
        bool kept = false;
        for (int32_t i = 0; !kept && i < nkeep; i++) kept = keep[i] && keep[i]->storage == r->storage;
        if (kept) {
            link = &r->next;
        } else {
            *link = r->next; /* the node itself stays in the arena */
            mtk_storage_release(r->storage);
        }
    }
}

mtk_arena_mark mtk_ctx_arena_mark(const mtk_ctx *ctx)
{
    mtk_arena_mark m = { NULL, 0, NULL, NULL };
    if (!ctx) return m;
    m.block = ctx->arena;
    m.used = ctx->arena ? ctx->arena->used : 0;
    m.behind = ctx->arena ? ctx->arena->next : NULL;
    m.storage = ctx->storage_refs;
    return m;
}

static void free_block(mtk_ctx *ctx, arena_block *b)
{
    ctx->arena_bytes -= b->cap;
    release_block(ctx, b);
}

bool mtk_ctx_arena_reset(mtk_ctx *ctx, const mtk_arena_mark *mark, mtk_tensor **keep, int32_t nkeep)
{
    if (!ctx || !mark) return false;
    /* the kept tensors' metadata and storage, out of the arena while it rewinds */
    mtk_tensor *copies = nkeep > 0 ? mtk_ctx_malloc(ctx, (size_t)nkeep * sizeof *copies) : NULL;
    if (nkeep > 0 && !copies) return false;
    for (int32_t i = 0; i < nkeep; i++)
        if (keep[i]) copies[i] = *keep[i];
    /* the references taken since the mark: the kept ones are carried over (their nodes are in the
       part of the arena given back), the others released */
    storage_ref *carried = NULL;
    storage_ref **link = &ctx->storage_refs;
    while (*link && (const void *)*link != mark->storage) {
        storage_ref *r = *link;
        *link = r->next;
        bool kept = false;
        for (int32_t i = 0; !kept && i < nkeep; i++) kept = keep[i] && keep[i]->storage == r->storage;
        if (kept) {
            r->next = carried; /* reused below, before its node is overwritten */
            carried = r;
        } else {
            mtk_storage_release(r->storage);
        }
    }
    mtk_storage **held = NULL;
    int32_t nheld = 0;
    for (storage_ref *r = carried; r; r = r->next) nheld++;
    if (nheld) {
        held = mtk_ctx_malloc(ctx, (size_t)nheld * sizeof *held);
        nheld = 0;
        for (storage_ref *r = carried; r; r = r->next) {
            if (held) held[nheld++] = r->storage;
            else mtk_storage_release(r->storage); /* out of memory: the kept tensors are lost */
        }
    }
    /* the blocks made since the mark: those in front of it, and the big ones put behind it */
    arena_block *b = ctx->arena;
    while (b && (const void *)b != mark->block) {
        arena_block *next = b->next;
        free_block(ctx, b);
        b = next;
    }
    ctx->arena = b;
    if (b) {
        while (b->next && (const void *)b->next != mark->behind) {
            arena_block *next = b->next->next;
            free_block(ctx, b->next);
            b->next = next;
        }
        b->used = mark->used;
    }
    /* the carried references get new nodes; the kept tensors new metadata */
    bool ok = !carried || held;
    for (int32_t i = 0; ok && i < nheld; i++) ok = mtk_ctx_hold_storage(ctx, held[i]);
    for (int32_t i = 0; ok && i < nkeep; i++) {
        if (!keep[i]) continue;
        mtk_tensor *t = mtk_ctx_alloc(ctx, sizeof *t);
        if (!t) {
            ok = false;
            break;
        }
        *t = copies[i];
        keep[i] = t;
    }
    mtk_ctx_mfree(ctx, held);
    mtk_ctx_mfree(ctx, copies);
    return ok;
}

/* ---------------------------------------------------- observer and seed */

void mtk_ctx_set_op_hook(mtk_ctx *ctx, mtk_op_hook hook, void *user)
{
    ctx->op_hook = hook;
    ctx->op_hook_user = hook ? user : NULL;
}

void mtk_ctx_set_module_hook(mtk_ctx *ctx, mtk_module_hook hook, void *user)
{
    ctx->module_hook = hook;
    ctx->module_hook_user = hook ? user : NULL;
}

mtk_module_hook mtk_ctx_module_hook(const mtk_ctx *ctx, void **user_out)
{
    if (user_out) *user_out = ctx->module_hook_user;
    return ctx->module_hook;
}

mtk_op_hook mtk_ctx_op_hook(const mtk_ctx *ctx, void **user_out)
{
    if (user_out) *user_out = ctx->op_hook_user;
    return ctx->op_hook;
}

void mtk_ctx_manual_seed(mtk_ctx *ctx, uint64_t seed) { ctx->seed_state = seed; }

uint64_t mtk_ctx_next_seed(mtk_ctx *ctx)
{
    /* splitmix64: a Weyl sequence through a 64-bit mixer */
    uint64_t z = (ctx->seed_state += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

/* ---------------------------------------------------------------- errors */

mtk_status mtk_ctx_status(const mtk_ctx *ctx) { return ctx->status; }
const char *mtk_ctx_message(const mtk_ctx *ctx) { return ctx->status ? ctx->message : ""; }

void mtk_ctx_clear_error(mtk_ctx *ctx)
{
    ctx->status = MTK_OK;
    ctx->message[0] = '\0';
}

bool mtk_verror(mtk_ctx *ctx, mtk_status status, const char *fmt, va_list ap)
{
    if (!ctx || ctx->status != MTK_OK) return false; /* sticky: keep the first */
    ctx->status = status == MTK_OK ? MTK_ERR_INVALID_ARGUMENT : status;
    vsnprintf(ctx->message, sizeof ctx->message, fmt, ap);
    return false;
}

bool mtk_error(mtk_ctx *ctx, mtk_status status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    mtk_verror(ctx, status, fmt, ap);
    va_end(ap);
    return false;
}

static const char *const status_names[MTK_STATUS_COUNT] = {
    [MTK_OK] = "ok",
    [MTK_ERR_INVALID_ARGUMENT] = "invalid_argument",
    [MTK_ERR_SHAPE] = "shape_error",
    [MTK_ERR_DTYPE] = "dtype_error",
    [MTK_ERR_DEVICE] = "device_error",
    [MTK_ERR_INDEX] = "index_error",
    [MTK_ERR_META_NO_DATA] = "meta_no_data",
    [MTK_ERR_DATA_DEPENDENT] = "data_dependent",
    [MTK_ERR_OVERFLOW] = "overflow",
    [MTK_ERR_OUT_OF_MEMORY] = "out_of_memory",
    [MTK_ERR_NOT_IMPLEMENTED] = "not_implemented",
    [MTK_ERR_SYNTAX] = "syntax_error",
    [MTK_ERR_UNKNOWN_OP] = "unknown_op",
    [MTK_ERR_IO] = "io_error",
};

const char *mtk_status_name(mtk_status status)
{
    if ((int)status < 0 || status >= MTK_STATUS_COUNT) return "unknown";
    return status_names[status];
}

/* ---------------------------------------------------------------- scopes */

#define SCOPE_PUSH(stack, depth, value, what)                                        \
    do {                                                                             \
        if (ctx->depth > SCOPE_DEPTH)                                                \
            return mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT,                          \
                             "too many nested " what " scopes (at most %d)", SCOPE_DEPTH); \
        ctx->stack[ctx->depth++] = (value);                                          \
        return true;                                                                 \
    } while (0)

#define SCOPE_POP(depth, what)                                                       \
    do {                                                                             \
        if (ctx->depth <= 1)                                                         \
            return mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT,                          \
                             "pop of the " what " scope without a matching push");       \
        ctx->depth--;                                                                \
        return true;                                                                 \
    } while (0)

bool mtk_ctx_push_device(mtk_ctx *ctx, mtk_device device)
{
    char buf[32];
    if (device != MTK_DEVICE_META && device != MTK_DEVICE_CPU)
        return mtk_error(ctx, MTK_ERR_DEVICE, "device %s is not supported by this build",
                         mtk_device_str(device, buf, sizeof buf));
    SCOPE_PUSH(device_stack, device_depth, device, "device");
}
bool mtk_ctx_pop_device(mtk_ctx *ctx) { SCOPE_POP(device_depth, "device"); }
mtk_device mtk_ctx_device(const mtk_ctx *ctx) { return ctx->device_stack[ctx->device_depth - 1]; }
int32_t mtk_ctx_device_scopes(const mtk_ctx *ctx) { return ctx->device_depth - 1; }

bool mtk_ctx_push_dtype(mtk_ctx *ctx, mtk_dtype dtype)
{
    if (dtype != MTK_FLOAT16 && dtype != MTK_BFLOAT16 && dtype != MTK_FLOAT32 && dtype != MTK_FLOAT64)
        return mtk_error(ctx, MTK_ERR_DTYPE,
                         "only floating-point types are supported as the default type (got %s)",
                         mtk_dtype_name(dtype));
    SCOPE_PUSH(dtype_stack, dtype_depth, dtype, "dtype");
}
bool mtk_ctx_pop_dtype(mtk_ctx *ctx) { SCOPE_POP(dtype_depth, "dtype"); }
mtk_dtype mtk_ctx_dtype(const mtk_ctx *ctx) { return ctx->dtype_stack[ctx->dtype_depth - 1]; }

bool mtk_ctx_push_init_mode(mtk_ctx *ctx, mtk_init_mode mode)
{
    if (mode != MTK_INIT_META && mode != MTK_INIT_EMPTY && mode != MTK_INIT_INIT)
        return mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "unknown init mode %d", (int)mode);
    SCOPE_PUSH(init_stack, init_depth, mode, "init-mode");
}
bool mtk_ctx_pop_init_mode(mtk_ctx *ctx) { SCOPE_POP(init_depth, "init-mode"); }
mtk_init_mode mtk_ctx_init_mode(const mtk_ctx *ctx) { return ctx->init_stack[ctx->init_depth - 1]; }
