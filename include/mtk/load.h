/*
 * mtk load: a model built on the meta device, filled from a safetensors
 * checkpoint on the cpu, as transformers 5's from_pretrained matches keys.
 *
 * The steps: build on meta (no memory), open the checkpoint, match every
 * checkpoint key to a tensor of the model's state dict (below), and only
 * when nothing is missing, unexpected or mis-shaped: the computed buffers
 * (rotary inv_freq, position ids) go to the cpu and are recomputed, then
 * each tensor the file holds as the model does (same dtype, whole,
 * aligned) becomes a view of the mapped file (zero copy, copy-on-write:
 * the file never changes), every other one is read by several threads
 * into one slab of memory (converting dtypes), and all are verified.
 *
 * Key matching, per checkpoint key, in transformers' order:
 *   1. a prefix of a wrapped model is removed: the caller's strip_prefix,
 *      or, when none is given, "_orig_mod." (torch.compile) and "module."
 *      (DistributedDataParallel) when every key carries it;
 *   2. the caller's key_mapping and the family's renames (regular
 *      expressions) all apply in turn, then
 *      at most one merge: per-expert tensors ("experts.3.w1.weight") go
 *      into their slice of a fused tensor ("experts.gate_up_proj");
 *   3. the base model's prefix ("model.", "transformer.") is added or
 *      removed when that names a tensor of the model (a ForCausalLM from
 *      a base model's file, or the other way round);
 *   4. a key that names no tensor is skipped when it names a non-persistent
 *      buffer of the model, or matches the family's ignorable keys (and
 *      transformers' two generic ones: rotary_emb.inv_freq and
 *      position_ids when the model has such a buffer); else unexpected.
 * A tied tensor (lm_head.weight = embed_tokens.weight) is read once, from
 * whichever of its names the checkpoint holds first.
 *
 * Errors are values (the context's sticky error, false or NULL returned):
 * MTK_ERR_INVALID_ARGUMENT "cannot load 'PATH' into CLASS: N keys do not
 * match (...)" with every key in the result, and a line naming a wrapper's
 * prefix and its fix when the unexpected keys carry one; the io errors of
 * mtk_checkpoint_open and mtk_st_read_into_many; the model errors of
 * mtk_model_resolve.
 */
#ifndef MTK_LOAD_H
#define MTK_LOAD_H

#include "mtk/core.h"
#include "mtk/io.h"
#include "mtk/models.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ============================================================ key rules */

typedef enum mtk_key_rule_kind {
    MTK_KEY_RENAME = 0, /* the text `pattern` matches becomes `target`      */
    MTK_KEY_MERGE,      /* per-expert tensors fill slices of one tensor      */
    MTK_KEY_IGNORE      /* an unmatched key that `pattern` matches is skipped */
} mtk_key_rule_kind;

/* One rule of a family's table.  `pattern` is a POSIX extended regular
 * expression searched in the key (transformers' patterns, written so that
 * both engines agree).
 *   RENAME: the first match is replaced by `target`, where \1..\9 stand for
 *           the pattern's groups.
 *   MERGE:  `parts` (NULL-terminated, at most 4) are literal texts where
 *           `*` stands for the expert index; the first part found in the key
 *           is replaced by `target`, and the tensor goes to
 *           fused[expert] narrowed along `dim` (of the fused tensor, >= 1)
 *           to its part's chunk (parts split that dim evenly).  `pattern`
 *           is unused.
 *   IGNORE: `target` is unused.
 * `architecture`: the rule applies only when the model built is this class
 * (GPTNeoXForCausalLM's embed_out); NULL: to every class. */
typedef struct mtk_key_rule {
    mtk_key_rule_kind kind;
    const char *pattern;
    const char *target;
    const char *parts[5];
    int32_t dim;
    const char *architecture;
} mtk_key_rule;

/* A family's rules: its transformers base_model_prefix and its table. */
typedef struct mtk_key_rules {
    const char *model_type;        /* "llama"                          */
    const char *base_model_prefix; /* "model"; NULL: none              */
    const mtk_key_rule *rules;
    int32_t count;
} mtk_key_rules;

/* The rules of a model_type ("mixtral"): its renames, merges and ignorable
 * keys, then the renames transformers applies to every family (legacy
 * LayerNorm.gamma/beta).  Never NULL: a family without a row of its own
 * gets the common renames and no base-model prefix. */
MTK_API const mtk_key_rules *mtk_model_key_rules(const char *model_type);

/* ============================================================== loading */

/* How to load. */
typedef struct mtk_load_spec {
    const mtk_key_rules *rules; /* NULL: exact names only                   */
    const char *strip_prefix;   /* removed from every key that starts with
                                   it ("_orig_mod."); NULL: automatic (see
                                   above)                                   */
    const mtk_key_rule *key_mapping; /* the caller's rules, before the
                                   family's (from_pretrained's key_mapping:
                                   RENAME rules); may be NULL              */
    int32_t key_mapping_count;
    bool convert_dtype;         /* any dtype is accepted and converted on
                                   read; else dtypes must be the model's    */
    int32_t threads;            /* reader threads; 0: one per online cpu    */
    bool copy;                  /* copy every tensor into memory of its own;
                                   by default a tensor the file holds as the
                                   model does (same dtype, whole, aligned) is
                                   a view of the mapped file (zero copy; a
                                   write into it is copy-on-write and never
                                   reaches the file)                        */
    /* Called after each batch of reads with the bytes done and the total
     * (a load of total >= progress_min_bytes is read in about 20 batches;
     * a smaller one in one batch, without calls).  May be NULL. */
    void (*progress)(void *arg, uint64_t done, uint64_t total);
    void *progress_arg;
    uint64_t progress_min_bytes;
} mtk_load_spec;

/* One key of a report.  Strings live in the context's arena. */
typedef struct mtk_load_key {
    const char *name;       /* the model's name (missing, mismatched) or
                               the key after renaming (unexpected,
                               skipped)                                     */
    const char *source;     /* the checkpoint's own key; NULL for missing   */
    const char *why;        /* skipped: "non-persistent buffer" or
                               "ignorable (PATTERN)"; mismatched: "shape"
                               or "dtype"; missing: NULL or "N of M parts" */
    const char *dtype;      /* the model's ("float32"), or the file's
                               ("F32") for unexpected and skipped keys      */
    int32_t ndim;
    int64_t shape[MTK_MAX_DIMS];
    const char *file_dtype; /* mismatched: the checkpoint's side            */
    int32_t file_ndim;
    int64_t file_shape[MTK_MAX_DIMS];
} mtk_load_key;

/* What a load did, or found wrong.  Arrays live in the context's arena. */
typedef struct mtk_load_result {
    mtk_load_key *missing, *unexpected, *mismatched, *skipped;
    int32_t nmissing, nunexpected, nmismatched, nskipped;
    const char *stripped_prefix; /* removed from every key, or NULL          */
    const char *prefix_hint;     /* a wrapper's prefix the unexpected keys
                                    carry ("module."), or NULL               */
    int64_t reads;               /* checkpoint tensors read                  */
    int32_t tensors;             /* distinct model tensors filled            */
    int32_t tied;                /* state-dict names sharing one of them     */
    int32_t converted;           /* tensors filled from renamed or merged keys */
    int32_t computed_buffers;    /* recomputed                               */
    uint64_t parameters;         /* elements of the parameters filled        */
    uint64_t bytes;              /* bytes read from the checkpoint           */
    int32_t mapped;              /* tensors that are views of the mapped
                                    checkpoint (no copy)                     */
    uint64_t mapped_bytes;       /* their bytes                              */
    int32_t threads;
    double seconds;              /* recompute, place, read and verify        */
} mtk_load_result;

/* Fills `model`, a module on meta (built with mtk_model_resolve), from the
 * open checkpoint `ckpt`, matching keys as described above.  `spec` may be
 * NULL (exact names, same dtypes).  `result` (required) is filled in both
 * cases: on a key mismatch it lists every missing, unexpected and
 * mis-shaped key, the model stays on meta, and false is returned with
 * MTK_ERR_INVALID_ARGUMENT (the message counts them and names a
 * wrapper's prefix with its fix); on success the model is on the cpu with
 * every tensor mapped or read, and verified (a mapped tensor keeps the
 * file's mapping alive after mtk_checkpoint_close; a file truncated after
 * the load makes its use fault with SIGBUS, as any mapped file does:
 * spec->copy when the file may change).  An io error midway leaves the model on
 * the cpu with partial data (false, the read's error). */
MTK_API bool mtk_load_module(mtk_ctx *ctx, mtk_module *model, mtk_checkpoint *ckpt, const mtk_load_spec *spec,
                             mtk_load_result *result);

/* Resolves MODEL (mtk_model_resolve, on meta, with `options`), opens the
 * checkpoint at `weights` (mtk_checkpoint_open: a file, an index, a
 * directory), and loads it with the family's key rules
 * (mtk_model_key_rules) and `spec` (its `rules` is replaced by the
 * family's when NULL).  Returns the model on the cpu, NULL with the
 * context's error; `info` and `result` (may be NULL / required) as above. */
MTK_API mtk_module *mtk_model_load(mtk_ctx *ctx, const char *model, const char *weights,
                                   const mtk_model_resolve_options *options, const mtk_load_spec *spec,
                                   mtk_model_info *info, mtk_load_result *result);

/* ===================================================== loading slices */

/* One rectangular slice of a model tensor to materialize: the box
 * offset[d] <= i_d < offset[d] + shape[d] of the tensor called `name` (a
 * state-dict name of the model; a tied name reaches the same tensor).
 * `ndim` must be the tensor's.  Filled by mtk_load_slices: `tensor`, a new
 * contiguous cpu tensor of `shape` in the model tensor's dtype holding the
 * slice (owned by the context), and `bytes`, the checkpoint bytes read
 * for it. */
typedef struct mtk_load_slice {
    const char *name;
    int32_t ndim;
    int64_t offset[MTK_MAX_DIMS];
    int64_t shape[MTK_MAX_DIMS];
    mtk_tensor *tensor; /* out */
    uint64_t bytes;     /* out */
} mtk_load_slice;

/* Materializes only `slices` (count of them) of `model`, a module on meta
 * that stays on meta: keys are matched exactly as mtk_load_module matches
 * them (a mismatch is the same error, with `result` listing the keys),
 * every slice is checked (the name is a tensor of the model that the
 * checkpoint fills: else MTK_ERR_INVALID_ARGUMENT; the box lies inside the
 * tensor: else MTK_ERR_INDEX naming the dim, the offset, the size and the
 * tensor's shape) before anything is allocated, then each slice is read
 * from the checkpoint reading only its own bytes: one contiguous range
 * when the box spans whole trailing dims (a split of dim 0), else one
 * range per run of the last dims (a split of dim 1 reads row by row).
 * `spec` as for mtk_load_module (threads and progress unused); `result`
 * (required): the key report, `bytes` (the sum of the slices' bytes),
 * `tensors` (slices filled), `parameters` (their elements), `seconds`.
 * An io error midway: false, the read's error, slices partially filled. */
MTK_API bool mtk_load_slices(mtk_ctx *ctx, mtk_module *model, mtk_checkpoint *ckpt, const mtk_load_spec *spec,
                             mtk_load_slice *slices, int64_t count, mtk_load_result *result);

#ifdef __cplusplus
}
#endif
#endif /* MTK_LOAD_H */
