/*
 * mtk plan: memory.  Included by mtk/plan.h.
 *
 * A memory plan is liveness over a traced graph, replayed as torch 2.13
 * runs it: the forward (every storage freed after its last use, views
 * keeping their storage alive), and for training the backward as
 * autograd's engine runs it (saved tensors held until their node's
 * backward, gradient buffers allocated, accumulated and freed, parameter
 * gradients stolen into .grad), the optimizer step and
 * zero_grad(set_to_none=True).  The result is the peak, what fills memory
 * at the peak, where the peak happens, a timeline and a per-module table,
 * with a text and a JSON rendering (docs/memory.md).
 *
 * Everything lives in the context's arena; nothing needs freeing.
 */
#ifndef MTK_PLAN_MEMORY_H
#define MTK_PLAN_MEMORY_H

#include "mtk/core.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mtk_graph mtk_graph;

typedef enum mtk_memory_mode {
    MTK_MEMORY_INFERENCE = 0,   /* model(input_ids) under torch.no_grad()     */
    MTK_MEMORY_TRAINING,        /* labels=input_ids, backward, step, zero_grad */
    MTK_MEMORY_GENERATE,        /* model.generate: prefill, then decode        */
} mtk_memory_mode;

typedef enum mtk_optimizer_kind {
    MTK_OPTIMIZER_SGD = 0,      /* torch.optim.SGD, momentum 0                 */
    MTK_OPTIMIZER_MOMENTUM,     /* torch.optim.SGD, momentum != 0              */
    MTK_OPTIMIZER_ADAM,         /* torch.optim.Adam                            */
    MTK_OPTIMIZER_ADAMW,        /* torch.optim.AdamW                           */
} mtk_optimizer_kind;

typedef enum mtk_mixed_precision {
    MTK_MIXED_NONE = 0,
    MTK_MIXED_BF16,             /* fp32 parameters, torch.autocast(bfloat16)   */
    MTK_MIXED_FP16,             /* the same with float16 and a GradScaler      */
} mtk_mixed_precision;

typedef enum mtk_attention_kind {
    MTK_ATTENTION_SDPA = 0,     /* attn_implementation="sdpa" (the default)    */
    MTK_ATTENTION_EAGER,        /* attn_implementation="eager"                 */
} mtk_attention_kind;

typedef enum mtk_experts_kind {
    MTK_EXPERTS_CONFIG = 0,     /* the config's _experts_implementation      */
    MTK_EXPERTS_GROUPED_MM,     /* transformers' default: balanced routing   */
    MTK_EXPERTS_BATCHED_MM,     /* per-pair gathers and bmm, op by op: exact
                                   whatever the routing (docs/memory.md)     */
} mtk_experts_kind;

/* The device constants a cpu machine cannot measure: one table
 * (mtk_memory_constant_at), each with its source, overridable per plan. */
typedef struct mtk_memory_constants {
    int64_t cuda_block_bytes;      /* caching allocator rounds each block up  */
    int64_t cuda_small_segment;    /* segment of requests <= small_request    */
    int64_t cuda_small_request;
    int64_t cuda_large_segment;    /* segment of requests < large_min_alloc   */
    int64_t cuda_large_min_alloc;
    int64_t cuda_large_rounding;   /* larger segments round up to this        */
    int64_t cuda_context_bytes;    /* the CUDA context (not in allocated)     */
    int64_t cublas_workspace_bytes;/* cuBLAS workspace, in allocated          */
    int64_t cpu_rng_state_bytes;   /* torch.get_rng_state() (checkpointing)   */
} mtk_memory_constants;

typedef struct mtk_memory_constant {
    const char *name;           /* "cuda_block_bytes"                          */
    size_t offset;              /* of its field in mtk_memory_constants        */
    int64_t value;              /* the default                                 */
    const char *source;         /* where the value comes from                  */
} mtk_memory_constant;

MTK_API int32_t mtk_memory_constant_count(void);
/* The i-th constant (NULL past the end). */
MTK_API const mtk_memory_constant *mtk_memory_constant_at(int32_t i);
/* Fills c with every constant's default. */
MTK_API void mtk_memory_constants_default(mtk_memory_constants *c);
/* Sets constant `name` of c to value.  False (and an error on ctx naming
 * the constants) for an unknown name or a negative value. */
MTK_API bool mtk_memory_constants_set(mtk_ctx *ctx, mtk_memory_constants *c, const char *name,
                                      int64_t value);

typedef struct mtk_memory_options {
    mtk_memory_mode mode;
    mtk_optimizer_kind optimizer;     /* training                              */
    mtk_dtype dtype;                  /* parameters; UNDEFINED: the config's  */
    mtk_mixed_precision mixed_precision;
    bool checkpointing;               /* gradient_checkpointing_enable()       */
    mtk_attention_kind attention;
    int32_t device_kind;              /* mtk_device_kind (mtk/plan.h)          */
    int64_t batch, seq;               /* input_ids (batch, seq)                */
    int64_t new_tokens;               /* generate                              */
    int32_t grad_accum;               /* micro-batches per optimizer step, >=1 */
    mtk_memory_constants constants;
    int64_t decoder_seq;              /* encoder-decoders (t5): the decoder's
                                         ids (batch, decoder_seq), also the
                                         labels in training; 0: none given
                                         (an error for such a model)       */
    mtk_experts_kind experts;         /* MoE experts' implementation         */
} mtk_memory_options;

/* Defaults: inference, AdamW, the config's dtype, no mixed precision, no
 * checkpointing, sdpa, cpu, 1x1 input, 1 new token, no accumulation, the
 * constants' defaults. */
MTK_API void mtk_memory_options_init(mtk_memory_options *options);

typedef enum mtk_memory_phase {
    MTK_PHASE_SETUP = 0,        /* what is live before the step                */
    MTK_PHASE_FORWARD,
    MTK_PHASE_BACKWARD,
    MTK_PHASE_RECOMPUTE,        /* a checkpointed layer's forward, in backward */
    MTK_PHASE_OPTIMIZER,
    MTK_PHASE_ZERO_GRAD,
    MTK_PHASE_PREFILL,
    MTK_PHASE_DECODE,
} mtk_memory_phase;

MTK_API const char *mtk_memory_phase_name(mtk_memory_phase phase);

/* What fills memory at one moment; the parts sum to the total. */
typedef struct mtk_memory_breakdown {
    int64_t parameters;         /* parameters and buffers                      */
    int64_t gradients;          /* the parameters' .grad                       */
    int64_t optimizer_states;
    int64_t activations_saved;  /* held for backward (saved tensors, layer
                                   inputs kept by checkpointing)               */
    int64_t kv_cache;
    int64_t transient_at_peak;  /* the rest: inputs, activations and
                                   gradients in flight, workspaces,
                                   optimizer temporaries                       */
} mtk_memory_breakdown;

/* A moment of the replay. */
typedef struct mtk_memory_point {
    const char *op;             /* the node's op, or the optimizer's step      */
    const char *module;         /* dotted module path ("" for the root)        */
    int32_t node;               /* graph node, -1 outside the graph            */
    mtk_memory_phase phase;
    int64_t live_bytes;         /* after the node (timeline); at the peak
                                   (peak_at), workspace included               */
    int64_t model_bytes;        /* of which parameters, buffers, optimizer
                                   states and KV cache                         */
    int64_t grad_bytes;         /* of which the parameters' .grad              */
    int64_t saved_bytes;        /* of which what autograd keeps for backward;
                                   the rest: gradients in flight, outputs,
                                   workspaces                                  */
} mtk_memory_point;

/* One step's peak. */
typedef struct mtk_memory_step {
    int64_t peak_bytes;
    mtk_memory_breakdown breakdown;
    mtk_memory_point peak_at;
} mtk_memory_step;

typedef struct mtk_memory_module {
    const char *name;           /* dotted path, "" for the root                */
    int32_t depth;
    int64_t parameters;         /* bytes of its parameters and buffers, its
                                   children's included                         */
    int64_t activations_saved;  /* bytes first saved by its nodes (children
                                   included), each storage once                */
    int64_t peak_bytes;         /* the most live while its nodes ran (0: none) */
} mtk_memory_module;

typedef struct mtk_memory_plan {
    mtk_memory_options options;
    const char *model;            /* what was planned (NULL for a graph)       */
    mtk_memory_step peak;         /* the step reported: training's second step */
    mtk_memory_step first_step;   /* training's first step (it also creates the
                                     optimizer states); = peak otherwise       */
    int64_t activations_saved_forward; /* saved for backward at the end of the
                                     forward (saved_tensors_hooks' count)      */
    int64_t parameter_bytes;
    int64_t overhead_bytes;       /* outside torch's allocated bytes: the CUDA
                                     context; 0 on cpu                          */
    const mtk_memory_point *timeline; /* the reported step, one point per node */
    int32_t ntimeline;
    const mtk_memory_module *modules; /* pre-order, as the trace's modules     */
    int32_t nmodules;
    const char *notes[8];         /* assumptions the numbers rest on           */
    int32_t nnotes;
} mtk_memory_plan;

/* Plans memory for one traced graph (a forward that, for training, ends
 * in the loss).  The graph's device kind and dtype are the options'
 * business of whoever traced it; here the options choose the mode,
 * optimizer, checkpointing, accumulation and allocator.  NULL with the
 * context's error for an option out of range, a training graph without a
 * loss that requires grad, or out of memory.  In ctx's arena. */
MTK_API mtk_memory_plan *mtk_memory_plan_graph(mtk_ctx *ctx, const mtk_graph *graph,
                                               const mtk_memory_options *options);

/* Plans memory for MODEL (a built-in name, a config.json or a directory
 * holding one) under `options`: builds it on the meta device, traces one
 * forward at options' batch x seq (with transformers' loss for
 * training), and replays it; --mode generate goes to the generation
 * planner.  NULL with the context's error (an unknown model, a model that
 * cannot compute a loss for training, an option out of range). */
MTK_API mtk_memory_plan *mtk_memory_plan_model(mtk_ctx *ctx, const char *model,
                                               const mtk_memory_options *options);

/* What fits in a budget: the largest batch (options' seq fixed) or, with
 * `context`, the largest sequence length (options' batch fixed) whose
 * peak plus overhead is at most `budget` bytes. */
typedef struct mtk_memory_fit {
    bool context;               /* searched the sequence length             */
    int64_t max;                /* the largest that fits; 0: not even 1     */
    int64_t peak_bytes;         /* peak + overhead at max (0 when max 0)    */
    int64_t peak_bytes_next;    /* peak + overhead at max + 1               */
    int32_t evaluations;        /* plans made by the search                 */
    mtk_memory_plan *plan;      /* the plan at max (NULL when max is 0)     */
} mtk_memory_fit;

/* Searches with the peak's monotonicity in batch and sequence length
 * (secant steps between a fitting and a failing size, bisection when they
 * stall), up to `limit` (<= 0: 2^20 for batch, 2^24 for context).  False
 * with the context's error when a plan fails. */
MTK_API bool mtk_memory_fit_model(mtk_ctx *ctx, const char *model, const mtk_memory_options *options,
                                  int64_t budget, bool context, int64_t limit, mtk_memory_fit *out);

/* The text rendering: the options, the breakdown and the peak, where it
 * happens, both steps for training, and the per-module table down to
 * `depth` (runs of numbered layers as one row).  In the arena. */
MTK_API char *mtk_memory_plan_text(mtk_ctx *ctx, const mtk_memory_plan *plan, int32_t depth);
/* One JSON document: peak_bytes, breakdown {parameters, gradients,
 * optimizer_states, activations_saved, kv_cache, transient_at_peak},
 * peak_at {op, module, phase, node}, first_step {peak_bytes, breakdown,
 * peak_at}, activations_saved_forward, overhead_bytes, options, timeline
 * [{op, module, phase, live_bytes}], modules [{name, depth, parameters,
 * activations_saved, peak_bytes}], notes.  In the arena. */
MTK_API char *mtk_memory_plan_json(mtk_ctx *ctx, const mtk_memory_plan *plan);

#ifdef __cplusplus
}
#endif
#endif /* MTK_PLAN_MEMORY_H */
