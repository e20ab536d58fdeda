/* The placer's insides: the module tree as flat arrays, the items the
 * walk places (whole modules or single tensors of a split module), the
 * traced graphs whose nodes are charged to the devices their modules run
 * on, and the per-device replay (place_sim.c). */
#ifndef PLAN_PLACE_INTERNAL_H
#define PLAN_PLACE_INTERNAL_H

#include "plan/memory_internal.h"

#define PLACE_PENDING (-1) /* a module not placed yet                    */
#define PLACE_SPLIT (-2)   /* a module split into its tensors and children */

/* A parameter or buffer of the tree, each tensor once (tied ones too). */
typedef struct place_tensor {
    mtk_tensor *tensor;
    int64_t bytes;
    int32_t device;             /* -1: not placed                            */
    int32_t holders;            /* modules that register it (2+: tied)      */
} place_tensor;

/* A module of the tree, pre-order (mtk_module_named_modules). */
typedef struct place_module {
    const char *name;
    mtk_module *module;
    int32_t depth;
    int32_t end;                /* its subtree is [index, end)               */
    bool no_split;              /* a class of _no_split_modules              */
    int32_t first_slot, nslots; /* its own tensors: slots of place_state's
                                   slot_tensor / slot_name / slot_item      */
    int64_t weights;            /* its subtree's tensors, each once          */
    int64_t own_bytes;          /* its own tensors (what accelerate's hook
                                   streams in when it runs offloaded)       */
    int32_t state;              /* PLACE_PENDING, PLACE_SPLIT or the item
                                   that holds it                            */
} place_module;

/* What the walk places: a module with its subtree, or one tensor of a
 * split module (accelerate's `model.some_param` keys). */
typedef struct place_item {
    int32_t module;             /* tree index; for a tensor, its owner       */
    int32_t slot;               /* -1: the module; else the tensor's slot    */
    int64_t weights;
    int32_t device;             /* -1: pending                               */
} place_item;

/* One traced forward the devices are charged for. */
typedef struct place_graph {
    const mtk_graph *graph;
    mem_graph g;
    int32_t *node_module;       /* per node: the tree module it ran in       */
} place_graph;

typedef struct place_state {
    mtk_ctx *ctx;
    const mtk_place_options *o;
    int32_t ndev;
    int32_t exec;               /* where offloaded items run                 */
    bool gpu;                   /* any GPU among the devices                 */
    place_module *modules;
    int32_t nmodules;
    place_tensor *tensors;
    int32_t ntensors;
    int32_t *slot_tensor;       /* per slot: tensor index                    */
    const char **slot_name;     /* per slot: its full name                   */
    int32_t *slot_item;         /* per slot: the tensor item, -1: none        */
    int32_t nslots;
    place_item *items;
    int32_t nitems, items_cap;
    place_graph graphs[2];
    int32_t ngraphs;
    int64_t margin[MTK_PLACE_MAX_DEVICES];
    int64_t limit[MTK_PLACE_MAX_DEVICES];  /* what weights + activations may
                                   reach: budget - margin - reserve, capped
                                   by the balanced share; -1: unlimited      */
    int64_t weights[MTK_PLACE_MAX_DEVICES];/* resident, as placed so far     */
    /* the replay's scratch, sized for the largest graph */
    int32_t *node_dev, *first_use, *last_use, *last_any, *span;
    int64_t *delta;
} place_state;

/* The replay's answer: per device the most its activations, KV cache,
 * logits and streamed weights reach (weights resident excluded), and the
 * tree module running then. */
typedef struct place_usage {
    int64_t active[MTK_PLACE_MAX_DEVICES];
    int32_t at_module[MTK_PLACE_MAX_DEVICES];
} place_usage;

/* Allocates the replay's scratch for st's graphs and items.  False on
 * out of memory. */
bool place_sim_init(place_state *st);

/* Replays every graph under the current assignment (pending modules run
 * nowhere; storages they make or read count only where placed modules
 * use them) and fills *u. */
void place_sim(place_state *st, place_usage *u);

/* The device an item placed on `device` runs on: itself for a GPU (or
 * the cpu without GPUs), the execution device for cpu and disk. */
int32_t place_exec_of(const place_state *st, int32_t device);

/* Traces MODEL for st (place_trace.c): resolves it on meta, fills the
 * graphs (inference: one; generate: prefill and last decode step).
 * Returns the model's root module, NULL with the context's error. */
mtk_module *place_trace(place_state *st, const char *model, mtk_model_info *info);

#endif
