/*
 * mtk core: status codes, devices, dtypes, the context, storage and tensors.
 *
 * Ownership in one paragraph: a context (mtk_ctx) owns every tensor created
 * in it; tensor metadata lives in the context's arena and is freed all at
 * once by mtk_ctx_free().  Real data lives in reference-counted storage
 * (mtk_storage); a tensor holds one reference, views share it, and the
 * context drops its tensors' references when it is freed.  A meta tensor
 * has no storage at all.
 *
 * Errors are values: functions that can fail on user input return NULL or
 * false and record the error on the context (the *sticky* error: the first
 * one is kept until mtk_ctx_clear_error()).  Nothing here calls exit() or
 * abort() on user input.
 */
#ifndef MTK_CORE_H
#define MTK_CORE_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* MTK_API marks a declaration of the public API: the only symbols the
 * shared library exports (it is built with hidden visibility). */
#if defined(__GNUC__)
#define MTK_API __attribute__((visibility("default")))
#else
#define MTK_API
#endif

#define MTK_VERSION_MAJOR 0
#define MTK_VERSION_MINOR 1
#define MTK_VERSION_PATCH 0
#define MTK_VERSION_STRING "0.1.0"

/* Most dimensions a tensor may have (PyTorch allows more; 16 covers every
 * model we know of and keeps tensor metadata inline). */
#define MTK_MAX_DIMS 16

/* ------------------------------------------------------------------ status */

typedef enum mtk_status {
    MTK_OK = 0,
    MTK_ERR_INVALID_ARGUMENT, /* a bad argument value or type            */
    MTK_ERR_SHAPE,            /* shapes that do not fit the op           */
    MTK_ERR_DTYPE,            /* a dtype the op does not accept          */
    MTK_ERR_DEVICE,           /* tensors on different devices, bad device*/
    MTK_ERR_INDEX,            /* dim or index out of range               */
    MTK_ERR_META_NO_DATA,     /* data asked of a meta tensor             */
    MTK_ERR_DATA_DEPENDENT,   /* output shape depends on data (on meta)  */
    MTK_ERR_OVERFLOW,         /* a size computation overflowed           */
    MTK_ERR_OUT_OF_MEMORY,    /* an allocation failed                    */
    MTK_ERR_NOT_IMPLEMENTED,  /* valid, but mtk cannot do it (yet)       */
    MTK_ERR_SYNTAX,           /* a malformed expression or file          */
    MTK_ERR_UNKNOWN_OP,       /* no op with that name                    */
    MTK_ERR_IO,               /* the operating system said no            */
    MTK_STATUS_COUNT
} mtk_status;

/* The stable lower-case name of a status ("shape_error", ...), used as the
 * "code" of JSON errors.  Never NULL. */
MTK_API const char *mtk_status_name(mtk_status status);

/* ----------------------------------------------------------------- devices */

/* A device is a small integer: meta, cpu, and room for accelerators
 * (MTK_DEVICE_CUDA(n)).  Compare devices with ==. */
typedef int32_t mtk_device;
#define MTK_DEVICE_META ((mtk_device)0)
#define MTK_DEVICE_CPU ((mtk_device)1)
#define MTK_DEVICE_CUDA(n) ((mtk_device)(16 + (n)))

/* Writes the PyTorch spelling ("meta", "cpu", "cuda:0") of `device` into
 * buf (size `cap`, always NUL-terminated); returns buf. */
MTK_API const char *mtk_device_str(mtk_device device, char *buf, size_t cap);

/* Parses "meta", "cpu", "cuda", "cuda:N" into *out; "meta:N" and "cpu:N"
 * mean meta and cpu, as in PyTorch.  N is decimal without sign or leading
 * zeros.  Returns false (and leaves *out alone) for anything else. */
MTK_API bool mtk_device_parse(const char *text, mtk_device *out);

/* ------------------------------------------------------------------ dtypes */

/* The dtype enum is ordered as PyTorch's ScalarType promotion lattice is
 * listed in mtk's table; never rely on numeric order, use the functions. */
typedef enum mtk_dtype {
    MTK_UINT8 = 0,
    MTK_INT8,
    MTK_INT16,
    MTK_INT32,
    MTK_INT64,
    MTK_FLOAT16,
    MTK_FLOAT32,
    MTK_FLOAT64,
    MTK_BOOL,
    MTK_BFLOAT16,
    MTK_FLOAT8_E5M2,
    MTK_FLOAT8_E4M3FN,
    MTK_DTYPE_COUNT,
    MTK_DTYPE_UNDEFINED = -1
} mtk_dtype;

typedef enum mtk_dtype_kind {
    MTK_KIND_BOOL,
    MTK_KIND_UINT,
    MTK_KIND_INT,
    MTK_KIND_FLOAT
} mtk_dtype_kind;

/* One row of the dtype table. */
typedef struct mtk_dtype_info {
    mtk_dtype dtype;
    const char *name;       /* PyTorch's name without "torch.": "float32"  */
    const char *short_name; /* eval's short literal name: "f32"            */
    const char *st_name;    /* safetensors' name: "F32"                    */
    size_t size;            /* bytes per element                           */
    mtk_dtype_kind kind;
    bool storage_only;      /* float8: conversion only, no arithmetic on cpu */
    /* How PyTorch's C++ messages spell it: */
    const char *scalar_type_name; /* c10::ScalarType: "Float", "Long"      */
    const char *typeid_name;      /* typeid / TypeMeta: "float", "long int",
                                     "c10::Half"                           */
    const char *c10_name;         /* c10 conversion checks: "int64_t",
                                     "float", "c10::Half"                  */
} mtk_dtype_info;

/* The table row of a valid dtype; NULL for anything else. */
MTK_API const mtk_dtype_info *mtk_dtype_get(mtk_dtype dtype);
/* "float32" etc.; "undefined" for an invalid dtype. */
MTK_API const char *mtk_dtype_name(mtk_dtype dtype);
/* Element size in bytes; 0 for an invalid dtype. */
MTK_API size_t mtk_dtype_size(mtk_dtype dtype);
/* Looks up a dtype by any of its spellings: "float32", "float", "f32",
 * "torch.float32", "half", "bf16", "long", "int", "bool", ...  Returns
 * MTK_DTYPE_UNDEFINED when unknown. */
MTK_API mtk_dtype mtk_dtype_from_name(const char *name);

MTK_API bool mtk_dtype_is_floating(mtk_dtype dtype); /* f16 bf16 f32 f64 f8 */
MTK_API bool mtk_dtype_is_integral(mtk_dtype dtype, bool include_bool);
MTK_API bool mtk_dtype_is_float8(mtk_dtype dtype);

/* torch.promote_types(a, b).  Float8 types promote only with themselves:
 * any other pair involving one returns MTK_DTYPE_UNDEFINED (PyTorch raises
 * "Promotion for Float8 Types is not supported"). */
MTK_API mtk_dtype mtk_promote_types(mtk_dtype a, mtk_dtype b);

/* ----------------------------------------------------------------- context */

typedef struct mtk_ctx mtk_ctx;

/* A user-supplied allocator.  alloc returns NULL on failure; free accepts
 * NULL.  Used for the arena, storage and everything else mtk allocates. */
typedef struct mtk_allocator {
    void *(*alloc)(size_t size, void *user);
    void (*free)(void *ptr, void *user);
    void *user;
} mtk_allocator;

/* Init modes: how modules allocate their parameters (see nn). */
typedef enum mtk_init_mode {
    MTK_INIT_META = 0, /* no memory at all                        */
    MTK_INIT_EMPTY,    /* uninitialized memory                     */
    MTK_INIT_INIT      /* allocated and initialized from a seed    */
} mtk_init_mode;

/* Creates a context with the default allocator (malloc/free).  The default
 * device is cpu, the default dtype float32, the init mode `init`, as in
 * PyTorch.  Returns NULL only when memory is exhausted. */
MTK_API mtk_ctx *mtk_ctx_new(void);

/* Same, with a caller-supplied allocator (copied; it must outlive the
 * context).  NULL `alloc` means the default allocator. */
MTK_API mtk_ctx *mtk_ctx_new_with_allocator(const mtk_allocator *alloc);

/* Frees the context, every tensor created in it and its references to
 * storage.  Accepts NULL. */
MTK_API void mtk_ctx_free(mtk_ctx *ctx);

/* Bytes the arena holds (metadata only, not tensor data). */
MTK_API size_t mtk_ctx_arena_bytes(const mtk_ctx *ctx);

/* The sticky error: MTK_OK when none.  The message is owned by the context
 * and valid until the error is cleared; "" when there is no error. */
MTK_API mtk_status mtk_ctx_status(const mtk_ctx *ctx);
MTK_API const char *mtk_ctx_message(const mtk_ctx *ctx);
MTK_API void mtk_ctx_clear_error(mtk_ctx *ctx);

/* Records an error (printf-style message) unless one is already recorded.
 * Always returns false, so callers can `return mtk_error(...)`. */
MTK_API bool mtk_error(mtk_ctx *ctx, mtk_status status, const char *fmt, ...)
#if defined(__GNUC__)
            __attribute__((format(printf, 3, 4)))
#endif
            ;
MTK_API bool mtk_verror(mtk_ctx *ctx, mtk_status status, const char *fmt, va_list ap);

/* Default-device scope: push makes `device` the default for creation ops
 * and modules until the matching pop (with torch.device('meta')).  Push
 * fails (false, error set) past 64 nested scopes; pop fails on an empty
 * stack. */
MTK_API bool mtk_ctx_push_device(mtk_ctx *ctx, mtk_device device);
MTK_API bool mtk_ctx_pop_device(mtk_ctx *ctx);
MTK_API mtk_device mtk_ctx_device(const mtk_ctx *ctx);
/* How many device scopes are pushed (0: the default device is the
 * context's base one, cpu).  Builders that default to meta
 * (mtk_model_resolve) read it to honour a device the caller asked for. */
MTK_API int32_t mtk_ctx_device_scopes(const mtk_ctx *ctx);

/* Default-dtype scope (torch.set_default_dtype), floating dtypes only. */
MTK_API bool mtk_ctx_push_dtype(mtk_ctx *ctx, mtk_dtype dtype);
MTK_API bool mtk_ctx_pop_dtype(mtk_ctx *ctx);
MTK_API mtk_dtype mtk_ctx_dtype(const mtk_ctx *ctx);

/* Init-mode scope, same rules. */
MTK_API bool mtk_ctx_push_init_mode(mtk_ctx *ctx, mtk_init_mode mode);
MTK_API bool mtk_ctx_pop_init_mode(mtk_ctx *ctx);
MTK_API mtk_init_mode mtk_ctx_init_mode(const mtk_ctx *ctx);

/* The threads the context's cpu work uses: every op's kernel (element-
 * wise, reductions, indexing, nn, convolutions) and the checkpoint
 * readers (mtk_st_read_into_many with 0 threads).  n <= 0 restores the
 * default, one thread per online core; counts are clamped to [1, 256].
 * (OpenBLAS keeps its own pool, sized by OPENBLAS_NUM_THREADS.) */
MTK_API void mtk_ctx_set_num_threads(mtk_ctx *ctx, int32_t n);
/* The count in effect: the setting, or the online cores. */
MTK_API int32_t mtk_ctx_num_threads(const mtk_ctx *ctx);

/* The op observer: `hook(user, call)` runs after every op call that
 * succeeds (the call's arguments and outputs are final), until replaced;
 * ops that an op runs inside its own implementation are not reported (no
 * cost is seen twice).
 * nn's tracing installs one for a forward pass; NULL removes it.  One
 * observer at a time: set returns nothing, read the previous one first
 * with mtk_ctx_op_hook() to restore it. */
struct mtk_op_call;
typedef void (*mtk_op_hook)(void *user, const struct mtk_op_call *call);
MTK_API void mtk_ctx_set_op_hook(mtk_ctx *ctx, mtk_op_hook hook, void *user);
/* The installed observer (NULL: none); its user pointer in *user_out when
 * user_out is not NULL. */
MTK_API mtk_op_hook mtk_ctx_op_hook(const mtk_ctx *ctx, void **user_out);

/* The module call observer: `hook(user, module, io, after)` runs in
 * mtk_module_call before the module's forward (after = false) and after
 * it returns (after = true, whether or not it succeeded), for every module
 * called, nested ones included: a forward pre-hook and post-hook on every
 * module at once.  `io` is the call's inputs and outputs (mtk/nn.h; the
 * outputs filled in the post-call), as torch's hooks get the args; NULL
 * when a forward announces a module it runs piecewise without one call
 * (T5's generate fills cross-attention keys).  A pre-call returning false
 * fails the call (the hook sets the context's error); a post-call's result
 * is ignored.  Weight streaming (mtk/stream.h) installs one; NULL removes
 * it.  One observer at a time, as for the op hook. */
struct mtk_module;
struct mtk_module_io;
typedef bool (*mtk_module_hook)(void *user, struct mtk_module *module, const struct mtk_module_io *io, bool after);
MTK_API void mtk_ctx_set_module_hook(mtk_ctx *ctx, mtk_module_hook hook, void *user);
/* The installed module observer (NULL: none), its user in *user_out. */
MTK_API mtk_module_hook mtk_ctx_module_hook(const mtk_ctx *ctx, void **user_out);

/* The default generator (torch.manual_seed): nn's `init` mode draws the
 * seed of each module's initialization from it, so a model built after
 * the same seed gets the same values.  A new context starts as if seeded
 * with 0.  mtk_ctx_next_seed returns a fresh 64-bit seed and advances. */
MTK_API void mtk_ctx_manual_seed(mtk_ctx *ctx, uint64_t seed);
MTK_API uint64_t mtk_ctx_next_seed(mtk_ctx *ctx);

/* The most bytes one arena request may ask for.  The arena holds
 * metadata (shapes, names, lists of tensors), where a gigabyte in one
 * piece means a runaway size (a list of a billion views), not a model:
 * such a request is refused with an error stating the limit, before any
 * memory is committed. */
#define MTK_ARENA_MAX_REQUEST ((size_t)1 << 30)

/* Arena allocation: zeroed, 16-byte aligned memory (whatever the
 * allocator's own alignment) that lives as long as the context.  NULL (and
 * MTK_ERR_OUT_OF_MEMORY) on failure, or for a request over
 * MTK_ARENA_MAX_REQUEST bytes. */
MTK_API void *mtk_ctx_alloc(mtk_ctx *ctx, size_t size);
/* The same without zeroing, for callers that write every byte they use. */
MTK_API void *mtk_ctx_alloc_uninit(mtk_ctx *ctx, size_t size);
/* Copies a NUL-terminated string into the arena.  NULL (and an error:
 * MTK_ERR_OUT_OF_MEMORY, or MTK_ERR_INVALID_ARGUMENT for a NULL `s`) on
 * failure. */
MTK_API char *mtk_ctx_strdup(mtk_ctx *ctx, const char *s);

/* The context's allocator, for memory that outlives the arena pattern. */
MTK_API void *mtk_ctx_malloc(mtk_ctx *ctx, size_t size);
MTK_API void mtk_ctx_mfree(mtk_ctx *ctx, void *ptr);

/* Temporaries of a loop (a decoding step's activations).  The context
 * holds a reference to the storage of every tensor made in it until it is
 * freed, so a loop of forwards would keep every step's activations.
 * mtk_ctx_storage_mark returns a mark of the references held now (NULL is
 * a valid mark: none yet); mtk_ctx_release_storage_since then drops every
 * reference taken after `mark`, except those to the storage of the
 * `nkeep` tensors of `keep` (NULL entries are skipped), freeing what no
 * one else references.  Contract: a tensor made after the mark whose
 * storage is not kept must not be read or written afterwards (its data
 * may be gone; its metadata stays in the arena); the mark must be one of
 * this context's, taken before, and still held (references older than a
 * mark are never dropped).  Storage made before the mark (parameters) is
 * untouched. */
struct mtk_tensor;
MTK_API const void *mtk_ctx_storage_mark(const mtk_ctx *ctx);
MTK_API void mtk_ctx_release_storage_since(mtk_ctx *ctx, const void *mark, struct mtk_tensor *const *keep,
                                           int32_t nkeep);

/* The same for the arena's metadata: mtk_ctx_arena_mark notes where the
 * arena and the storage references stand; mtk_ctx_arena_reset releases
 * the references taken since (as mtk_ctx_release_storage_since, keeping
 * the storage of the `nkeep` tensors of `keep`), then gives back every
 * arena allocation made after the mark.  Each non-NULL keep[i] is copied
 * into the arena after the rewind and keep[i] is set to the copy: the
 * caller replaces its pointers with them.  Contract: nothing else
 * allocated from the arena after the mark is used afterwards (pointers to
 * it dangle); the mark must be this context's and still live (no reset
 * to an earlier mark since).  A loop that resets each iteration keeps the
 * arena flat.  False (the context's error) when out of memory: before
 * anything is released when the copies cannot be made (keep[] unchanged),
 * else with the arena reset and the kept tensors lost. */
typedef struct mtk_arena_mark {
    const void *block;   /* the newest block (NULL: none yet)    */
    size_t used;         /* its bytes in use                     */
    const void *behind;  /* the block behind it then             */
    const void *storage; /* mtk_ctx_storage_mark                 */
} mtk_arena_mark;
MTK_API mtk_arena_mark mtk_ctx_arena_mark(const mtk_ctx *ctx);
MTK_API bool mtk_ctx_arena_reset(mtk_ctx *ctx, const mtk_arena_mark *mark, struct mtk_tensor **keep, int32_t nkeep);

/* ----------------------------------------------------------------- storage */

typedef enum mtk_storage_kind {
    MTK_STORAGE_OWNED,    /* allocated by mtk, freed with the last reference */
    MTK_STORAGE_BORROWED, /* caller's memory; mtk never frees it             */
    MTK_STORAGE_MAPPED    /* a file mapping; released through `release`      */
} mtk_storage_kind;

typedef struct mtk_storage mtk_storage;

/* Allocates `nbytes` of uninitialized cpu memory (64-byte aligned) with a
 * reference count of 1.  NULL and MTK_ERR_OUT_OF_MEMORY on failure. */
MTK_API mtk_storage *mtk_storage_new(mtk_ctx *ctx, size_t nbytes);

/* Wraps caller memory without copying; the caller keeps it alive for as
 * long as any tensor uses it.  Reference count 1. */
MTK_API mtk_storage *mtk_storage_borrow(mtk_ctx *ctx, void *data, size_t nbytes);

/* Wraps memory released by `release(data, nbytes, user)` when the last
 * reference goes (used for file mappings).  Reference count 1. */
MTK_API mtk_storage *mtk_storage_wrap(mtk_ctx *ctx, mtk_storage_kind kind, void *data,
                                      size_t nbytes,
                                      void (*release)(void *data, size_t nbytes, void *user),
                                      void *user);

MTK_API void mtk_storage_retain(mtk_storage *storage);
/* Drops one reference; frees at zero.  Accepts NULL. */
MTK_API void mtk_storage_release(mtk_storage *storage);
MTK_API void *mtk_storage_data(const mtk_storage *storage);
MTK_API size_t mtk_storage_nbytes(const mtk_storage *storage);
MTK_API mtk_storage_kind mtk_storage_kind_of(const mtk_storage *storage);
MTK_API int64_t mtk_storage_refcount(const mtk_storage *storage);

/* ----------------------------------------------------------------- tensors */

enum mtk_tensor_flags {
    MTK_TENSOR_PARAMETER = 1u << 0,
    MTK_TENSOR_BUFFER = 1u << 1,
    MTK_TENSOR_LAZY = 1u << 2,          /* shape not known yet            */
    MTK_TENSOR_REQUIRES_GRAD = 1u << 3,
    MTK_TENSOR_WRAPPED_NUMBER = 1u << 4, /* a Python scalar made a tensor  */
    /* quantized storage (mxfp4): parameter counts count the values a
       tensor stands for, as model cards do; bytes are unchanged */
    MTK_TENSOR_PACKED_PAIRS = 1u << 5,  /* each byte packs two 4-bit values */
    MTK_TENSOR_QUANT_SCALES = 1u << 6   /* blocks' scales: no values        */
};

/* Tensor metadata.  Fields are public to read; change them only through
 * the API.  Strides are in elements.  `storage` is NULL on meta. */
typedef struct mtk_tensor {
    mtk_ctx *ctx;
    mtk_dtype dtype;
    int32_t ndim;
    int64_t shape[MTK_MAX_DIMS];
    int64_t stride[MTK_MAX_DIMS];
    int64_t storage_offset;
    mtk_device device;
    uint32_t flags;
    mtk_storage *storage;
} mtk_tensor;

/* Checks a shape (ndim <= MTK_MAX_DIMS, sizes >= 0) and computes its numel
 * with overflow checks.  On failure sets an error naming `op` and returns
 * false. */
MTK_API bool mtk_shape_check(mtk_ctx *ctx, const char *op, const int64_t *shape,
                             int32_t ndim, int64_t *numel_out);

/* Product of sizes; -1 on overflow (no error set). */
MTK_API int64_t mtk_shape_numel(const int64_t *shape, int32_t ndim);

/* Contiguous (row-major) strides for a shape. */
MTK_API void mtk_contiguous_strides(const int64_t *shape, int32_t ndim, int64_t *stride_out);

/* Channels-last strides for a 4-D (N,C,H,W) or 5-D (N,C,D,H,W) shape, as
 * PyTorch computes them (sizes multiplied as they are, so a size-0 dim
 * zeroes the slower strides); contiguous strides for any other ndim. */
MTK_API void mtk_channels_last_strides(const int64_t *shape, int32_t ndim, int64_t *stride_out);

/* Writes "(3, 4)"-style text of a shape; returns buf. */
MTK_API const char *mtk_shape_str(const int64_t *shape, int32_t ndim, char *buf, size_t cap);
/* Writes "[3, 4]"-style text of a shape (PyTorch's messages); returns buf. */
MTK_API const char *mtk_shape_list_str(const int64_t *shape, int32_t ndim, char *buf, size_t cap);

/* Creates tensor metadata (no data) in the arena: given shape, the given
 * strides (NULL: contiguous), offset 0, on `device`, with no storage.
 * Used by meta functions; a cpu tensor made this way gets its storage
 * from mtk_tensor_alloc_storage() or mtk_tensor_set_storage().  Errors: bad
 * shape, too many dims, overflow, out of memory.  With NULL strides the
 * tensor's contiguous storage size must fit in int64 bytes, as PyTorch
 * requires of a new tensor (MTK_ERR_OVERFLOW, "Storage size calculation
 * overflowed with sizes=[...]"). */
MTK_API mtk_tensor *mtk_tensor_new(mtk_ctx *ctx, mtk_dtype dtype, const int64_t *shape,
                                   int32_t ndim, const int64_t *stride, mtk_device device);

/* Gives a cpu tensor fresh uninitialized storage big enough for its shape,
 * strides and offset.  False on overflow or out of memory. */
MTK_API bool mtk_tensor_alloc_storage(mtk_tensor *t);

/* Points `t` at `storage` (taking a new reference; the context releases it
 * when freed).  The storage must cover t's extent: false otherwise. */
MTK_API bool mtk_tensor_set_storage(mtk_tensor *t, mtk_storage *storage);

/* A new cpu tensor over existing memory, without copying.  The tensor
 * borrows `data` (the caller keeps it alive).  Strides NULL: contiguous. */
MTK_API mtk_tensor *mtk_tensor_from_data(mtk_ctx *ctx, mtk_dtype dtype, const int64_t *shape,
                                         int32_t ndim, const int64_t *stride, void *data);

/* Shallow copy of the metadata that shares the storage (a view with the
 * same shape).  NULL propagates. */
MTK_API mtk_tensor *mtk_tensor_alias(mtk_tensor *t);

MTK_API int64_t mtk_tensor_numel(const mtk_tensor *t);
MTK_API size_t mtk_tensor_nbytes(const mtk_tensor *t);      /* numel * element size */
MTK_API bool mtk_tensor_is_meta(const mtk_tensor *t);
MTK_API bool mtk_tensor_is_contiguous(const mtk_tensor *t); /* PyTorch's rule   */
MTK_API bool mtk_tensor_is_channels_last(const mtk_tensor *t);   /* 4-D, is_contiguous(channels_last) */
MTK_API bool mtk_tensor_is_channels_last_3d(const mtk_tensor *t);/* 5-D */
MTK_API bool mtk_tensor_is_non_overlapping_and_dense(const mtk_tensor *t);

/* Address of the first element (storage data + offset), NULL on meta. */
MTK_API void *mtk_tensor_data(const mtk_tensor *t);

/* Smallest and one-past-largest element offset the tensor touches
 * (relative to storage start); both 0 for an empty tensor.  False on
 * overflow. */
MTK_API bool mtk_tensor_extent(const mtk_tensor *t, int64_t *lo, int64_t *hi);

/* Wraps a negative dim: dim in [-ndim, ndim) -> [0, ndim).  For a 0-dim
 * tensor the valid range is [-1, 0] as in PyTorch.  On error sets
 * MTK_ERR_INDEX with PyTorch's message "Dimension out of range (expected
 * to be in range of [-2, 1], but got 5)" and returns -1. */
MTK_API int32_t mtk_wrap_dim(mtk_ctx *ctx, int64_t dim, int32_t ndim);

#ifdef __cplusplus
}
#endif
#endif /* MTK_CORE_H */
