/*
 * mtk plan: device maps with offload.  Included by mtk/plan.h.
 *
 * A placement is accelerate's `device_map` for a model (module name ->
 * GPU index, "cpu" or "disk"), usable as is by transformers'
 * from_pretrained(device_map=...), found the way accelerate's
 * infer_auto_device_map walks the module tree (in order, splitting a
 * module that does not fit into its children unless its class is one of
 * transformers' _no_split_modules, tied parameters placed together), but
 * with each device's budget charged for what runs there: the activations,
 * KV cache and logits of its modules at the given input and generation
 * length, replayed over the traced graph (every node carries its module
 * path), plus a margin for what a cpu machine cannot see (CUDA context,
 * cuBLAS workspace, allocator fragmentation).  Modules offloaded to cpu
 * or disk run on the first GPU (accelerate's execution device): their
 * weights are streamed there one unit at a time and their activations
 * and KV cache live there.  docs/placement.md says what is modelled.
 *
 * Everything lives in the context's arena; nothing needs freeing.
 */
#ifndef MTK_PLAN_PLACE_H
#define MTK_PLAN_PLACE_H

#include "mtk/core.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum mtk_place_kind {
    MTK_PLACE_GPU = 0,          /* a CUDA device by index                    */
    MTK_PLACE_CPU,              /* host memory ("cpu")                        */
    MTK_PLACE_DISK,             /* accelerate's disk offload ("disk")         */
} mtk_place_kind;

/* One device a map may use, as --max-memory names it. */
typedef struct mtk_place_device {
    mtk_place_kind kind;
    int32_t index;              /* GPU index; -1 for cpu and disk            */
    int64_t budget_bytes;       /* its max memory; -1: unlimited (disk only) */
} mtk_place_device;

#define MTK_PLACE_MAX_DEVICES 32

typedef enum mtk_place_strategy {
    MTK_PLACE_BALANCED = 0,     /* spread over the GPUs (accelerate's
                                   "balanced"), the last GPU takes the rest  */
    MTK_PLACE_SEQUENTIAL,       /* fill each GPU before the next one         */
} mtk_place_strategy;

typedef struct mtk_place_options {
    mtk_place_device devices[MTK_PLACE_MAX_DEVICES]; /* GPUs in the order
                                   given, then cpu, then disk (the parser
                                   sorts them so)                          */
    int32_t ndevices;
    mtk_memory_mode mode;       /* MTK_MEMORY_INFERENCE (model(ids), the
                                   KV cache it builds) or _GENERATE         */
    int64_t batch, seq;         /* input_ids (batch, seq)                    */
    int64_t new_tokens;         /* generate: the cache grows to seq + N - 1  */
    mtk_dtype dtype;            /* MTK_DTYPE_UNDEFINED: the config's         */
    mtk_place_strategy strategy;
    int64_t margin_bytes;       /* per GPU; -1: mtk_place_default_margin     */
    mtk_memory_constants constants; /* the CUDA context and cuBLAS
                                   workspace of the default margin, the
                                   allocator's block size                  */
} mtk_place_options;

/* Defaults: no devices, inference, 1x1 input, 1 new token, the config's
 * dtype, balanced, the default margin, the memory constants' defaults. */
MTK_API void mtk_place_options_init(mtk_place_options *options);

/* Parses a --max-memory list into options->devices: comma-separated
 * INDEX=SIZE (a GPU), cpu=SIZE, disk or disk=SIZE; SIZE as mtk_parse_size
 * reads it (80GiB, 24GB, 1.5TiB, 1024).  False with an error on ctx that
 * quotes the bad entry (an unknown device, a bad size, a device named
 * twice, too many devices, nothing at all); options unchanged then. */
MTK_API bool mtk_place_parse_max_memory(mtk_ctx *ctx, const char *spec, mtk_place_options *options);

/* The margin kept free on each GPU of `budget_bytes` when the options
 * give none: the CUDA context (constants' cuda_context_bytes), the
 * cuBLAS workspace (cublas_workspace_bytes) and 5% of the budget for the
 * caching allocator's fragmentation (docs/placement.md gives sources). */
MTK_API int64_t mtk_place_default_margin(const mtk_memory_constants *constants, int64_t budget_bytes);

/* One key of the device map. */
typedef struct mtk_place_entry {
    const char *name;           /* module or tensor name; "" for the root    */
    int32_t device;             /* index into the plan's devices             */
    int64_t weights_bytes;      /* its parameters and buffers (tied ones in
                                   the entry that holds them first)         */
} mtk_place_entry;

/* What one device holds. */
typedef struct mtk_place_device_plan {
    mtk_place_device device;
    const char *label;          /* "0", "cpu", "disk"                        */
    int64_t margin_bytes;       /* kept free (GPUs), 0 elsewhere            */
    int64_t weights_bytes;      /* parameters and buffers resident on it     */
    int64_t peak_bytes;         /* the most it holds at once: its weights,
                                   offloaded weights streamed in, the live
                                   activations, KV cache and logits of what
                                   runs there, plus the margin; <= budget   */
    const char *peak_module;    /* the module running at the peak ("" root) */
    int32_t nentries;           /* map keys on it                            */
} mtk_place_device_plan;

typedef struct mtk_place_plan {
    mtk_place_options options;
    const char *model;
    const mtk_place_entry *entries; /* the device map, in module order: the
                                   coarsest names that cover every
                                   parameter and buffer exactly once        */
    int32_t nentries;
    const mtk_place_device_plan *devices; /* as options->devices             */
    int32_t ndevices;
    int32_t execution_device;   /* where offloaded modules run (the first
                                   GPU, else cpu); index into devices      */
    int64_t weights_bytes;      /* all parameters and buffers, each once     */
    int64_t offloaded_bytes;    /* weights on cpu and disk                   */
    const char *no_split[8];    /* the family's _no_split_modules classes    */
    int32_t nno_split;
    const char *notes[8];       /* assumptions the numbers rest on           */
    int32_t nnotes;
} mtk_place_plan;

/* Places MODEL (a built-in name, a config.json or a directory holding
 * one) on options' devices: builds it on meta, traces model(input_ids)
 * at batch x seq (with the KV cache where the family has one; for
 * generate the prefill and the last decode step at seq + new_tokens - 2
 * cached tokens), then assigns modules in order under each device's
 * budget.  NULL with the context's error: no devices, an option out of
 * range, a GPU budget under its margin, or a model that does not fit
 * (naming what is left and the devices' budgets; add cpu or disk).  In
 * ctx's arena. */
MTK_API mtk_place_plan *mtk_place_model(mtk_ctx *ctx, const char *model, const mtk_place_options *options);

/* The same accounting for a given device map (accelerate's, or one a
 * user wrote): `entries` name modules, parameters or buffers of MODEL
 * and index options->devices (weights_bytes ignored).  The plan's peaks
 * may exceed the budgets: that is what it is for.  NULL with the
 * context's error for a key that names nothing in the model, two keys
 * covering one tensor, a tensor no key covers, a device out of range, or
 * the errors of mtk_place_model's setup. */
MTK_API mtk_place_plan *mtk_place_evaluate(mtk_ctx *ctx, const char *model, const mtk_place_options *options,
                                           const mtk_place_entry *entries, int32_t nentries);

/* A table per device (budget, margin, weights, peak, where the peak is)
 * and its map keys (runs of numbered layers folded), then the notes.  In
 * the arena. */
MTK_API char *mtk_place_plan_text(mtk_ctx *ctx, const mtk_place_plan *plan);
/* One JSON document: device_map {name: index | "cpu" | "disk"},
 * devices [{device, budget_bytes, margin_bytes, weights_bytes,
 * peak_bytes, peak_module}], offloaded_bytes, weights_bytes,
 * execution_device, no_split_modules, options, notes, model.  In the
 * arena. */
MTK_API char *mtk_place_plan_json(mtk_ctx *ctx, const mtk_place_plan *plan);

#ifdef __cplusplus
}
#endif
#endif /* MTK_PLAN_PLACE_H */
