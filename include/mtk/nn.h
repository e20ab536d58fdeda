/*
 * mtk nn: modules on the meta device (torch.nn without the data).
 *
 * A module is a node of a tree: a type (forward + reset_parameters +
 * repr), a small config, named children, named parameters and buffers.
 * Full names are dotted paths exactly as PyTorch's state-dict keys
 * ("layers.0.self_attn.out_proj.weight").  Everything lives in the
 * context's arena and is freed with it: modules are never freed one by one.
 *
 * How a module allocates its tensors is decided when it is built, by the
 * context's scopes (mtk_ctx_push_device, mtk_ctx_push_dtype,
 * mtk_ctx_push_init_mode):
 *   - default device meta, or init mode MTK_INIT_META: meta tensors, no
 *     memory at all;
 *   - MTK_INIT_EMPTY on cpu: uninitialized memory (Lightning's empty
 *     init: just a mode, nothing intercepted);
 *   - MTK_INIT_INIT on cpu (the default): memory initialized by the type's
 *     reset_parameters with PyTorch's distributions, from a seed drawn from
 *     the context's generator (mtk_ctx_manual_seed), so a model built after
 *     the same seed has the same values.  Values need not equal torch's
 *     bit for bit; their distributions do.
 *
 * Errors are values, as everywhere in mtk: functions return NULL/false/-1
 * and set the context's sticky error; a NULL module or tensor argument
 * (a failed earlier call) passes through as a failure without a new error.
 */
#ifndef MTK_NN_H
#define MTK_NN_H

#include "mtk/core.h"
#include "mtk/value.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mtk_module mtk_module;

/* ================================================================ random */

/* A small seeded generator (xoshiro256**, seeded through splitmix64):
 * deterministic per seed, on every platform. */
typedef struct mtk_rng {
    uint64_t s[4];
    bool has_spare; /* Box-Muller makes normals in pairs */
    double spare;
} mtk_rng;

MTK_API void mtk_rng_seed(mtk_rng *rng, uint64_t seed);
MTK_API uint64_t mtk_rng_next(mtk_rng *rng);
/* Uniform in [0, 1) with 53 random bits. */
MTK_API double mtk_rng_uniform(mtk_rng *rng);
/* Standard normal N(0, 1). */
MTK_API double mtk_rng_normal(mtk_rng *rng);

/* torch.nn.init: fill a tensor in place.  A meta tensor has nothing to
 * fill: they succeed without doing anything.  A lazy (uninitialized)
 * tensor is an error.  Values are stored rounded to the tensor's dtype;
 * any strides. */
MTK_API bool mtk_init_uniform_(mtk_tensor *t, double low, double high, mtk_rng *rng);
MTK_API bool mtk_init_normal_(mtk_tensor *t, double mean, double std, mtk_rng *rng);
MTK_API bool mtk_init_constant_(mtk_tensor *t, double value);
MTK_API bool mtk_init_zeros_(mtk_tensor *t);
MTK_API bool mtk_init_ones_(mtk_tensor *t);
/* kaiming_uniform_(t, a, mode='fan_in', nonlinearity='leaky_relu'):
 * U(-b, b) with b = sqrt(6 / ((1 + a^2) * fan_in)); a = sqrt(5) gives
 * b = 1 / sqrt(fan_in), the default of Linear and Conv weights. */
MTK_API bool mtk_init_kaiming_uniform_(mtk_tensor *t, double a, mtk_rng *rng);
/* xavier_uniform_ / xavier_normal_ with a gain (1.0 usually). */
MTK_API bool mtk_init_xavier_uniform_(mtk_tensor *t, double gain, mtk_rng *rng);
MTK_API bool mtk_init_xavier_normal_(mtk_tensor *t, double gain, mtk_rng *rng);
/* _calculate_fan_in_and_fan_out: fan_in = size(1) * receptive field,
 * fan_out = size(0) * receptive field.  Errors for fewer than 2 dims
 * ("Fan in and fan out can not be computed for tensor with fewer than 2
 * dimensions") and for a lazy tensor. */
MTK_API bool mtk_init_fans(const mtk_tensor *t, int64_t *fan_in, int64_t *fan_out);

/* ========================================================== module types */

/* Most tensors a module call takes or returns. */
#define MTK_MODULE_MAX_IO 8

/* The inputs and outputs of one module call. */
typedef struct mtk_module_io {
    mtk_tensor *in[MTK_MODULE_MAX_IO];
    int32_t nin;
    mtk_tensor *out[MTK_MODULE_MAX_IO];
    int32_t nout;
} mtk_module_io;

/* A module type: what `class Linear(nn.Module)` is in PyTorch.  A type is
 * static data; the layers of mtk/nn_layers.h each have one, and a user
 * can define more (see examples/).
 *   forward           fills io->out from io->in (NULL: the module is a
 *                     container that cannot be called, e.g. ModuleList);
 *   reset_parameters  (re)initializes the module's own parameters and
 *                     buffers, recomputing computed buffers (NULL:
 *                     nothing to do); called on cpu tensors only;
 *   extra_repr        writes the text inside "Linear(...)" into buf
 *                     (NULL: empty). */
typedef struct mtk_module_type {
    const char *name;
    bool (*forward)(mtk_module *m, mtk_module_io *io);
    bool (*reset_parameters)(mtk_module *m, mtk_rng *rng);
    void (*extra_repr)(const mtk_module *m, char *buf, size_t cap);
} mtk_module_type;

/* ============================================================== building */

/* A new module of `type` with a zeroed config of `config_size` bytes (POD
 * only: it is copied byte for byte by mtk_module_copy_meta).  It is in
 * training mode, as PyTorch's modules start.  NULL on out of memory. */
MTK_API mtk_module *mtk_module_new(mtk_ctx *ctx, const mtk_module_type *type, size_t config_size);

/* A new module of m's type with a copy of m's config (and training and
 * frameless flags), without parameters, buffers or children: to rebuild m with other
 * tensors (quantized storage).  NULL propagates. */
MTK_API mtk_module *mtk_module_new_like(mtk_module *m);
MTK_API mtk_ctx *mtk_module_ctx(const mtk_module *m);
MTK_API const mtk_module_type *mtk_module_type_of(const mtk_module *m);
MTK_API const char *mtk_module_type_name(const mtk_module *m); /* "Linear" */
MTK_API void *mtk_module_config(const mtk_module *m);
/* Switches the module's type (a lazy module becomes its eager type once
 * its shapes are known, as torch's cls_to_become). */
MTK_API void mtk_module_set_type(mtk_module *m, const mtk_module_type *type);
/* The init mode the module was built in. */
MTK_API mtk_init_mode mtk_module_init_mode(const mtk_module *m);

/* register_module / add_module: `child` becomes m's child `name` (no
 * dots, unique among m's children, parameters and buffers).  A module
 * may be the child of several parents (it is then shared, as in torch). */
MTK_API bool mtk_module_add(mtk_module *m, const char *name, mtk_module *child);
/* Puts `child` in the place of m's child number `index` (setattr over an
 * existing submodule: same name, same position).  The old child stays in
 * the context's arena, unreachable from m.  False with MTK_ERR_INDEX when
 * there is no such child. */
MTK_API bool mtk_module_replace_child(mtk_module *m, int32_t index, mtk_module *child);

/* A new parameter `name` of m with `shape`, the context's default dtype,
 * trainable (requires_grad), allocated per the init mode (see the top of
 * this file).  Returns the tensor (owned by the context). */
MTK_API mtk_tensor *mtk_module_new_parameter(mtk_module *m, const char *name, const int64_t *shape,
                                             int32_t ndim);
/* An uninitialized (lazy) parameter: a tensor flagged MTK_TENSOR_LAZY
 * with no shape yet (torch's UninitializedParameter).  Its shape comes
 * with mtk_module_materialize_lazy(), on the first forward. */
MTK_API mtk_tensor *mtk_module_new_lazy_parameter(mtk_module *m, const char *name);
/* A new buffer (not trainable) of the given dtype (UNDEFINED: default
 * dtype); `persistent` false keeps it out of the state dict.  Allocated
 * as parameters are: the type's reset_parameters gives it its values in
 * the init mode (and at materialize), the empty mode leaves it as is. */
MTK_API mtk_tensor *mtk_module_new_buffer(mtk_module *m, const char *name, const int64_t *shape,
                                          int32_t ndim, mtk_dtype dtype, bool persistent);
MTK_API mtk_tensor *mtk_module_new_lazy_buffer(mtk_module *m, const char *name, mtk_dtype dtype,
                                               bool persistent);

/* register_parameter / register_buffer with an existing tensor (which
 * gets the parameter / buffer flag).  Registering one tensor under two
 * names ties them. */
MTK_API bool mtk_module_register_parameter(mtk_module *m, const char *name, mtk_tensor *t);
MTK_API bool mtk_module_register_buffer(mtk_module *m, const char *name, mtk_tensor *t, bool persistent);

/* Gives a lazy tensor of m its shape: on the tensor's device (no memory
 * on meta, uninitialized memory on cpu), the lazy flag cleared.  Lazy
 * modules call it in their first forward, then mtk_module_finish_lazy. */
MTK_API bool mtk_module_materialize_lazy(mtk_module *m, mtk_tensor *t, const int64_t *shape, int32_t ndim);
/* After a lazy module's tensors got their shapes: runs its
 * reset_parameters if it was built in the init mode on a real device, and
 * switches it to `eager_type` (NULL: keep the type). */
MTK_API bool mtk_module_finish_lazy(mtk_module *m, const mtk_module_type *eager_type);

/* Ends a constructor: in the init mode, runs the type's reset_parameters
 * on m's real tensors with a seed from the context's generator.  Returns
 * m, or NULL when m is NULL or the reset failed. */
MTK_API mtk_module *mtk_module_finish(mtk_module *m);

/* ================================================================ lookup */

/* The child at a dotted path ("layers.0.mlp"); "" is m itself.  NULL and
 * MTK_ERR_INDEX naming the missing part when there is none. */
MTK_API mtk_module *mtk_module_child(mtk_module *m, const char *path);
/* The parameter or buffer at a dotted path ("0.weight").  NULL and
 * MTK_ERR_INDEX naming what the module has when there is none. */
MTK_API mtk_tensor *mtk_module_tensor(mtk_module *m, const char *path);
/* Same without an error: NULL when there is none. */
MTK_API mtk_tensor *mtk_module_find_tensor(mtk_module *m, const char *path);

/* Direct children, parameters and buffers by index (registration order).
 * *name_out gets the local name.  NULL past the end. */
MTK_API int32_t mtk_module_child_count(const mtk_module *m);
MTK_API mtk_module *mtk_module_child_at(const mtk_module *m, int32_t i, const char **name_out);
MTK_API int32_t mtk_module_param_count(const mtk_module *m);
MTK_API mtk_tensor *mtk_module_param_at(const mtk_module *m, int32_t i, const char **name_out);
MTK_API int32_t mtk_module_buffer_count(const mtk_module *m);
MTK_API mtk_tensor *mtk_module_buffer_at(const mtk_module *m, int32_t i, const char **name_out,
                                         bool *persistent_out);

/* Ties parameters: the parameter at `path` becomes the very tensor at
 * `source_path` (lm_head.weight = embed_tokens.weight).  Shapes must
 * agree (MTK_ERR_SHAPE otherwise).  The tie survives every transition. */
MTK_API bool mtk_module_tie(mtk_module *m, const char *path, const char *source_path);
/* Unties the parameter at `path`: it gets a tensor of its own, like the
 * one it shared (dtype, shape, device, flags): metadata only on meta, a
 * contiguous copy of the values on a real device.  The other names keep
 * the shared tensor.  Returns the new tensor (owned by the context), or
 * NULL with MTK_ERR_INDEX when m has no such parameter. */
MTK_API mtk_tensor *mtk_module_untie(mtk_module *m, const char *path);

/* ============================================================= traversal */

typedef struct mtk_named_tensor {
    const char *name;   /* full dotted name, in the arena   */
    mtk_tensor *tensor;
    mtk_module *owner;  /* the module that registered it    */
    bool persistent;    /* buffers; true for parameters     */
} mtk_named_tensor;

typedef struct mtk_named_module {
    const char *name;   /* "" for the root                  */
    mtk_module *module;
    int32_t depth;      /* 0 for the root, 1 for its children */
} mtk_named_module;

/* named_parameters() / named_buffers(): every tensor once (tied ones
 * under their first name), in PyTorch's order (a module's own tensors,
 * then its children's, depth first).  *out is an arena array; returns the
 * count, or -1 on error. */
MTK_API int32_t mtk_module_named_parameters(mtk_module *m, mtk_named_tensor **out);
MTK_API int32_t mtk_module_named_buffers(mtk_module *m, mtk_named_tensor **out);
/* named_modules(): pre-order, each module once, the root first as "". */
MTK_API int32_t mtk_module_named_modules(mtk_module *m, mtk_named_module **out);

/* Parameter totals of a tree, each tensor once. */
typedef struct mtk_param_stats {
    int64_t total;            /* elements of initialized parameters (packed
                                 values as mtk_module_num_parameters) */
    int64_t trainable;        /* ... with requires_grad                  */
    int64_t non_trainable;
    int64_t bytes;            /* their bytes                              */
    int64_t bytes_by_dtype[MTK_DTYPE_COUNT];
    int64_t count_by_dtype[MTK_DTYPE_COUNT];
    int64_t buffer_elements;  /* initialized buffers (all of them)        */
    int64_t buffer_bytes;
    int32_t tensors;          /* parameter tensors, lazy ones included   */
    int32_t uninitialized;    /* lazy parameter tensors                   */
    int32_t lazy_modules;     /* modules holding a lazy parameter/buffer  */
} mtk_param_stats;

/* Fills *out for the tree under m.  Never fails on lazy parameters: they
 * are counted in `uninitialized`, not in the totals. */
MTK_API bool mtk_module_param_stats(mtk_module *m, mtk_param_stats *out);

/* sum(p.numel() for p in m.parameters() [if p.requires_grad]), quantized
 * storage counted as the values it stands for (MTK_TENSOR_PACKED_PAIRS
 * two an element, MTK_TENSOR_QUANT_SCALES none: a model card's count).  With
 * lazy parameters the count is unknown: -1 and MTK_ERR_INVALID_ARGUMENT
 * saying which module holds them and to run a forward with an example
 * input first. */
MTK_API int64_t mtk_module_num_parameters(mtk_module *m, bool trainable_only);

/* ================================================================= modes */

/* train(mode) / eval(): the whole tree. */
MTK_API void mtk_module_train(mtk_module *m, bool mode);
MTK_API bool mtk_module_is_training(const mtk_module *m);
/* requires_grad_(flag): every parameter of the tree (trainable or frozen). */
MTK_API void mtk_module_requires_grad_(mtk_module *m, bool requires_grad);

/* How the memory planner reads a container (a module without a forward,
 * e.g. a ModuleList) that a forward iterates.  By default the loop's frame
 * keeps what it passed to the children until the last child returns
 * (`hidden = inputs_embeds; for layer in self.layers: hidden = layer(hidden)`
 * keeps the embeddings through every layer).  `frameless` true: the
 * container is no frame; each child's arguments are kept only as long as
 * the caller's own frame keeps them (diffusers' UNet, whose up-block loop
 * rebinds `sample` and its skip tuple at every block).  No effect on a
 * module with a forward; a NULL module is ignored.  Copies (new_like,
 * copy_meta) keep it. */
MTK_API void mtk_module_set_frameless(mtk_module *m, bool frameless);
MTK_API bool mtk_module_is_frameless(const mtk_module *m);

/* =========================================================== transitions */

/* Each transition rewrites every tensor of the tree once, in place (the
 * same mtk_tensor, new metadata and storage), so pointers to parameters
 * and ties stay valid.  Old storage is released with the context, as all
 * of a context's memory is: converting a real model keeps its previous
 * copy alive until mtk_ctx_free (do transitions on meta when you can). */

/* Module.to(device).  Moving a tree that has meta tensors to a real device
 * fails, before changing anything, with PyTorch's words and the fix:
 * "Cannot copy out of meta tensor; no data! ... use to_empty ..."
 * (MTK_ERR_META_NO_DATA).  cpu -> meta drops the data.  Lazy tensors just
 * change device.  Tied tensors stay tied. */
MTK_API bool mtk_module_to_device(mtk_module *m, mtk_device device);
/* Module.to(dtype): every floating parameter and buffer (integer buffers
 * such as num_batches_tracked keep their dtype), converting values on cpu.
 * `dtype` must be floating (MTK_ERR_DTYPE otherwise). */
MTK_API bool mtk_module_to_dtype(mtk_module *m, mtk_dtype dtype);
/* Module.to_empty(device): every tensor gets uninitialized memory on
 * `device` (none on meta), with its shape and dtype. */
MTK_API bool mtk_module_to_empty(mtk_module *m, mtk_device device);
/* to_empty(device) of every tensor except the `nkeep` of `keep`, which stay
 * as they are (a loader gives them their data afterwards, with
 * mtk_module_assign_tensor, and a reset in between skips them while they
 * are on meta).  keep may be NULL when nkeep is 0. */
MTK_API bool mtk_module_to_empty_except(mtk_module *m, mtk_device device, mtk_tensor *const *keep,
                                        int32_t nkeep);
/* Rewrites the module tensor `t` in place as `src` (its dtype, shape,
 * strides, offset, device, and a reference to its storage), keeping t's
 * parameter/buffer flags and requires_grad: every name holding t (tied
 * parameters) sees the new data, as load_state_dict's assign does for one
 * tensor already found.  False (the context's error) when the storage
 * cannot be held. */
MTK_API bool mtk_module_assign_tensor(mtk_tensor *t, const mtk_tensor *src);
/* to_empty(device), then every module's reset_parameters from `seed`
 * (children before parents), which also recomputes computed buffers:
 * nothing is left as garbage.  Deterministic per seed. */
MTK_API bool mtk_module_materialize(mtk_module *m, mtk_device device, uint64_t seed);
/* Only the reset, on the tensors where they are (meta ones are skipped). */
MTK_API bool mtk_module_reset_parameters(mtk_module *m, uint64_t seed);

/* ============================================== templates and factories */

/* Keeps `tmpl` in m as an unregistered module (a template): to, to_empty,
 * materialize, state dicts, traversal and summaries never touch it.  A
 * name already used by a template is replaced. */
MTK_API bool mtk_module_set_template(mtk_module *m, const char *name, mtk_module *tmpl);
/* The template `name`, or NULL (no error) when m has none. */
MTK_API mtk_module *mtk_module_template(const mtk_module *m, const char *name);

/* A deep copy of the tree under m on the meta device: same types,
 * configs, names, shapes, dtypes and flags, ties kept, no memory.  Shared
 * submodules stay shared; templates are shared, not copied. */
MTK_API mtk_module *mtk_module_copy_meta(mtk_module *m);

/* A function that builds a model from a config (NULL allowed). */
typedef mtk_module *(*mtk_module_builder)(mtk_ctx *ctx, const void *config);

/* Builds a fresh model on meta: runs `build` under a meta device scope and
 * the meta init mode, so it costs only metadata. */
MTK_API mtk_module *mtk_module_build_meta(mtk_ctx *ctx, mtk_module_builder build, const void *config);

/* =============================================================== forward */

/* Calls m's forward on io->in (io->nin tensors), filling io->out.  Records
 * the call when a trace is running.  Errors: a container with no forward,
 * a NULL input (propagated), whatever the ops set. */
MTK_API bool mtk_module_call(mtk_module *m, mtk_module_io *io);
/* One input, first output. */
MTK_API mtk_tensor *mtk_module_forward(mtk_module *m, mtk_tensor *input);
/* Two inputs (Bilinear), first output. */
MTK_API mtk_tensor *mtk_module_forward2(mtk_module *m, mtk_tensor *a, mtk_tensor *b);

/* ================================================================== repr */

/* PyTorch's repr of the tree ("Sequential(\n  (0): Linear(in_features=10,
 * out_features=20, bias=True)\n ...)"), in the arena. */
MTK_API char *mtk_module_repr(mtk_module *m);

/* ============================================================ state dicts */

typedef struct mtk_state_dict mtk_state_dict;

/* An empty state dict (ordered name -> tensor) in the arena. */
MTK_API mtk_state_dict *mtk_state_dict_new(mtk_ctx *ctx);
/* Sets `name` (replacing an entry of that name). */
MTK_API bool mtk_state_dict_set(mtk_state_dict *sd, const char *name, mtk_tensor *t);
MTK_API mtk_tensor *mtk_state_dict_get(const mtk_state_dict *sd, const char *name);
MTK_API int32_t mtk_state_dict_count(const mtk_state_dict *sd);
/* The i-th entry; NULL past the end. */
MTK_API mtk_tensor *mtk_state_dict_at(const mtk_state_dict *sd, int32_t i, const char **name_out);

/* state_dict(): every parameter and persistent buffer under its full
 * name, in PyTorch's order.  Tied tensors appear under each of their
 * names (as torch's).  The entries are the module's tensors themselves. */
MTK_API mtk_state_dict *mtk_module_state_dict(mtk_module *m);

typedef struct mtk_load_options {
    bool strict;        /* missing or unexpected keys are errors         */
    bool assign;        /* real modules: take the loaded tensors instead
                           of copying (a meta module always assigns)    */
    bool convert_dtype; /* accept other dtypes, converting on copy      */
} mtk_load_options;

/* What load_state_dict found; the arrays are in the arena. */
typedef struct mtk_load_report {
    const char **missing;    int32_t nmissing;
    const char **unexpected; int32_t nunexpected;
    const char **mismatched; int32_t nmismatched; /* shape or dtype      */
} mtk_load_report;

/* load_state_dict(sd): by name.  Into a meta tensor (or with `assign`)
 * the slot takes the loaded tensor's metadata and storage (PyTorch's
 * silent no-op without assign=True is not copied); into a real tensor the
 * values are copied (a meta source is the copy-out error).  A lazy tensor
 * takes the loaded shape.  Shape mismatches are always errors, dtype
 * mismatches unless convert_dtype; missing/unexpected keys with strict.
 * Every bad key is reported in one error (MTK_ERR_INVALID_ARGUMENT,
 * "Error(s) in loading state_dict for Linear: Missing key(s) ...") and
 * nothing is loaded then.  `report` (may be NULL) lists the keys. */
MTK_API bool mtk_module_load_state_dict(mtk_module *m, const mtk_state_dict *sd,
                                        const mtk_load_options *options, mtk_load_report *report);

#ifdef __cplusplus
}
#endif

#include "mtk/nn_layers.h"
#include "mtk/nn_trace.h"

#endif /* MTK_NN_H */
