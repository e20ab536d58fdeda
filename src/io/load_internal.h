/* Internal to the model loader (src/io/load_*.c): the read plan that key
 * matching (load_match.c) makes and loading (load_module.c) carries out. */
#ifndef MTK_IO_LOAD_INTERNAL_H
#define MTK_IO_LOAD_INTERNAL_H

#include "mtk/load.h"
#include "mtk/nn.h"
#include "mtk/ops.h"

/* One read: a checkpoint tensor into a model tensor, or into the slice
 * fused[expert] narrowed along `dim` to chunk `part` of `nparts` (made
 * once the model has storage). */
typedef struct load_read {
    mtk_tensor *target;
    int64_t expert; /* -1: the whole tensor */
    int32_t part, nparts, dim;
    mtk_st_file *file;
    const mtk_st_info *info;
    const char *name; /* the model's name a whole read fills (arena), else NULL */
} load_read;

typedef struct load_plan {
    load_read *reads;
    int64_t nreads;
} load_plan;

/* The distinct tensors a plan fills: each with its number of reads (more
 * than one for a fused tensor filled per expert) and its first read. */
typedef struct load_target {
    mtk_tensor *tensor;
    int64_t first;
    int64_t nreads;
} load_target;

typedef struct load_targets {
    load_target *items;
    mtk_tensor **tensors; /* the same tensors, for mtk_module_to_empty_except */
    int64_t count;
} load_targets;

/* Fills `out` (arrays in the arena) from the plan's reads; false on out of
 * memory. */
bool load_targets_collect(mtk_ctx *ctx, const load_plan *plan, load_targets *out);

/* Gives every target its data (load_place.c says where): a view of the
 * mapped checkpoint (mapped[i] set for its read i; never with `copy`), or
 * a slot of one slab of memory, uninitialized.  Counts the views in
 * result->mapped and mapped_bytes.  False with the context's error (out
 * of memory). */
bool load_place(mtk_ctx *ctx, const load_plan *plan, const load_targets *targets, bool copy, bool *mapped,
                mtk_load_result *result);

/* Matches every key of `ckpt` against `model`'s state dict per `spec`
 * (see mtk/load.h), filling `plan` and the report of `result` (missing,
 * unexpected, mismatched, skipped, prefixes, tensors, tied, converted,
 * parameters, bytes).  Arrays in the arena.  False only on out of memory
 * or a rule that does not compile (the context's error). */
bool load_match(mtk_ctx *ctx, mtk_module *model, const mtk_checkpoint *ckpt, const mtk_load_spec *spec,
                load_plan *plan, mtk_load_result *result);

/* Sets the error of a key mismatch (MTK_ERR_INVALID_ARGUMENT, counting
 * the keys of `r` and naming a wrapper's prefix with its fix); false. */
bool load_mismatch_error(mtk_ctx *ctx, mtk_module *model, const mtk_checkpoint *ckpt, const mtk_load_result *r);

/* Every parameter and buffer of `model` is a cpu tensor with storage (the
 * last step of a load).  False with MTK_ERR_IO "<who>: verify: parameter
 * NAME was not materialized" otherwise. */
bool load_verify_materialized(mtk_ctx *ctx, mtk_module *model, const char *who);

/* Calls fn(owner, arg) once for each module owning a non-persistent
 * buffer (computed, never in a checkpoint), in the order the buffers are
 * listed.  Returns how many such buffers there are; -1 when listing them
 * fails or fn returns false (fn's error on the context). */
int32_t load_each_buffer_owner(mtk_module *model, bool (*fn)(mtk_module *owner, void *arg), void *arg);

#endif
