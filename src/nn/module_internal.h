/* Internal layout of modules, shared by src/nn only.
 *
 * A module is arena metadata: its type, a POD config blob, and three
 * ordered lists of named slots (children, parameters, buffers) plus the
 * unregistered templates.  A parameter slot points at a tensor; two slots
 * pointing at the same tensor are *tied*.  Transitions (to_empty, to,
 * materialize) rewrite each tensor's metadata in place, so ties survive
 * them without bookkeeping. */
#ifndef MTK_NN_MODULE_INTERNAL_H
#define MTK_NN_MODULE_INTERNAL_H

#include "mtk/nn.h"

typedef struct module_slot {
    const char *name;
    mtk_module *module;
} module_slot;

typedef struct tensor_slot {
    const char *name;
    mtk_tensor *tensor;
    bool persistent; /* buffers: in the state dict; parameters: always */
} tensor_slot;

/* A growing arena array of slots: `items` reallocated (in the arena) on
 * doubling; the old copy stays in the arena, which is fine for the few
 * slots a module has. */
#define SLOT_LIST(type) \
    struct {            \
        type *items;    \
        int32_t count;  \
        int32_t cap;    \
    }

/* Which list a name is in. */
typedef enum nn_name_kind { NN_NAME_CHILD, NN_NAME_PARAM, NN_NAME_BUFFER } nn_name_kind;

/* A hash table of a module's names (src/nn/module_names.c), in the arena;
 * built once the module has many names, so that lookups and registration
 * take constant time.  It holds the first `children`, `params` and
 * `buffers` slots of the lists. */
typedef struct nn_name_index {
    uint64_t *entries; /* cap entries, 0 = empty; NULL: not built */
    size_t cap;        /* a power of two                          */
    size_t used;
    int32_t children, params, buffers;
} nn_name_index;

struct mtk_module {
    mtk_ctx *ctx;
    const mtk_module_type *type;
    void *config;              /* type-specific POD, config_size bytes */
    size_t config_size;
    SLOT_LIST(module_slot) children;
    SLOT_LIST(tensor_slot) params;
    SLOT_LIST(tensor_slot) buffers;
    SLOT_LIST(module_slot) templates; /* unregistered: never traversed */
    nn_name_index names;       /* children, params and buffers by name */
    mtk_init_mode init_mode;   /* the mode it was built in (lazy params
                                  use it when they get their shape)   */
    bool training;
    bool frameless;            /* a container the planner reads as no
                                  frame (mtk_module_set_frameless)     */
    int32_t scratch;           /* 1 + its index in the running trace   */
};

/* Grows an arena array to hold `need` items (doubling); false on out of
 * memory.  Used for slot lists and other growing arrays of src/nn. */
bool nn_slots_reserve(mtk_ctx *ctx, void **items, int32_t *cap, int32_t need, size_t item_size);

/* Finds name[0..len) among m's children, parameters and buffers (names
 * are unique across the three): its list and index.  False when absent,
 * or when the index cannot be built (out of memory: error set). */
bool nn_names_find(mtk_module *m, const char *name, size_t len, nn_name_kind *kind, int32_t *index);

/* Tells the name index that slot `index` of list `kind` was just appended.
 * False on out of memory (error set). */
bool nn_names_added(mtk_module *m, nn_name_kind kind, int32_t index);

/* The device of a new tensor of a module built now: meta in the meta
 * init mode, else the context's default device. */
mtk_device nn_new_tensor_device(mtk_ctx *ctx);

/* Fresh uninitialized storage for a cpu tensor (no-op on meta). */
bool nn_alloc_if_real(mtk_tensor *t);

/* Replaces t's metadata (shape, strides, dtype, device, storage) with
 * src's, keeping t's flags (parameter, buffer, requires_grad) and its
 * identity, so every slot that points at t sees the change.  The storage
 * reference is taken for t's context.  Clears the lazy flag. */
bool nn_tensor_assign(mtk_tensor *t, const mtk_tensor *src);

/* Runs m's own reset_parameters when it has real tensors and none of them
 * is lazy (meta tensors have nothing to initialize). */
bool nn_reset_own(mtk_module *m, mtk_rng *rng);

/* Runs every module's reset_parameters in post-order (children before
 * their parent, so a parent's overrides win as at construction), drawing
 * from `rng`.  Modules on meta do nothing. */
bool nn_reset_tree(mtk_module *m, mtk_rng *rng);

/* Whether any parameter or buffer of m itself (not its children) is lazy. */
bool nn_module_has_lazy(const mtk_module *m);

#endif
