/* The memory planner's insides: the graph as flat arrays (from an
 * mtk_graph, or built by hand in tests), the roles the caller gives its
 * tensors, and the replay that walks it. */
#ifndef PLAN_MEMORY_INTERNAL_H
#define PLAN_MEMORY_INTERNAL_H

#include "mtk/models.h"
#include "mtk/plan.h"

/* The graph the replay reads: arrays indexed by id. */
typedef struct mem_graph {
    const mtk_graph_node *nodes;
    int32_t nnodes;
    const mtk_graph_tensor *tensors;
    int32_t ntensors;
    const mtk_graph_storage *storages;
    int32_t nstorages;
    /* modules, pre-order (the trace's); nodes' `module` index them */
    const char *const *module_names;
    const int32_t *module_depths;
    int32_t nmodules;
    const int32_t *module_calls; /* per module, times called; NULL: once  */
    const bool *module_frameless; /* per module: a container that is no
                                   frame (mtk_module_set_frameless); NULL:
                                   none                                   */
    const int32_t *module_out_start; /* per module + 1: its outputs' run in
                                   module_out (tensor ids, of its first
                                   call); NULL: none known                 */
    const int32_t *module_out;
    /* roles */
    int32_t loss;               /* tensor backward starts from, -1: none     */
    const int32_t *keep;        /* tensors the caller holds after the call
                                   (the loss, logits, the KV cache)          */
    int32_t nkeep;
    const int32_t *kv;          /* tensors of the KV cache (counted apart);
                                   an input among them is the past cache,
                                   freed after its last use               */
    int32_t nkv;
    const int32_t *units;       /* modules gradient checkpointing wraps (the
                                   decoder layers); NULL: the shallowest
                                   numbered modules                          */
    int32_t nunits;
    bool attention_cores;       /* checkpointing wraps each attention core
                                   (mem_attention_cores: selective
                                   recompute) instead of the units         */
    uint8_t *recomputed;        /* not NULL (nnodes, zeroed by the caller):
                                   set to 1 for each node a checkpoint's
                                   recompute runs in the backward          */
    bool node_peaks;            /* the timeline also records a node's own
                                   peak (its outputs, gradients and
                                   workspace with what it frees still
                                   held) where it exceeds the state after */
    int32_t master_scale;       /* mixed precision: parameters, .grad and
                                   states are this many times the traced
                                   (16-bit) parameters' bytes; 0 or 1: as
                                   traced                                   */
} mem_graph;

/* Replays g under o and fills plan (its options, steps, timeline, modules).
 * False with ctx's error on out of memory or a training graph without a
 * loss. */
bool mem_replay(mtk_ctx *ctx, const mem_graph *g, const mtk_memory_options *o, mtk_memory_plan *plan);

/* Bytes an allocation of `nbytes` takes under o's device kind (torch's
 * cpu allocator: exact; CUDA's caching allocator: rounded up to blocks). */
int64_t mem_alloc_bytes(const mtk_memory_options *o, int64_t nbytes);

/* Checks the options' ranges; false with an error naming the option. */
bool mem_options_check(mtk_ctx *ctx, const mtk_memory_options *o);

/* Adds an assumption to the plan's notes (at most 8; the string is kept). */
void mem_note(mtk_memory_plan *plan, const char *note);

/* Whether a module's name ends in a number ("model.layers.3",
 * "transformer.h.0"): a decoder layer, the unit gradient checkpointing
 * wraps and the report folds into runs. */
bool mem_numbered_module(const char *name);

/* The plan's JSON keys as a cJSON object (the caller deletes it), for a
 * caller that adds keys of its own (the CLI's `fit`, `model`). */
void *mem_plan_json_object(const mtk_memory_plan *plan);

/* The flat view of an mtk_graph: its arrays, its trace's modules, and
 * the last node's first output as the loss, the root's outputs kept. */
bool mem_graph_of(mtk_ctx *ctx, const mtk_graph *graph, mem_graph *g);

/* Selective recompute's units (Megatron's: attention's core recomputed,
 * the rest saved): each scaled_dot_product_attention node with the data
 * movement that runs right before it in its module (expand, reshape,
 * view, transpose, unsqueeze, slice, narrow, contiguous, clone: the
 * repeat of the key/value heads, a key/value slice), which is what
 * transformers' sdpa_attention_forward runs around the kernel.  unit_of
 * (nnodes) receives each node's core, -1 for none; returns the number of
 * cores (0: the graph has no sdpa, eager attention is left whole). */
int32_t mem_attention_cores(const mem_graph *g, int32_t *unit_of);

/* Generation (memory_generate.c): prefill then decode for `model`. */
mtk_memory_plan *mem_plan_generate(mtk_ctx *ctx, const char *model, const mtk_memory_options *o);
/* Generation of a T5ForConditionalGeneration (memory_generate_t5.c):
 * the encoder, then one-token decoder forwards with the
 * EncoderDecoderCache; `model` is built on meta in eval mode. */
mtk_memory_plan *mem_plan_generate_t5(mtk_ctx *ctx, mtk_module *model, const mtk_model_info *info,
                                      const char *model_name, const mtk_memory_options *o);
/* --mode inference of an encoder-decoder traced as its plain forward
 * (pm): what model(input_ids, decoder_input_ids) returns stays live to
 * the end: the root's outputs (the logits, the encoder's last hidden
 * state) and the EncoderDecoderCache, each decoder attention's cached
 * keys and values (memory_generate_t5.c).  Sets g's keep and kv; false
 * on out of memory. */
bool mem_t5_forward_keep(mtk_ctx *ctx, const mtk_plan_model *pm, mem_graph *g);
/* One forward that generate runs, planned: its graph's plan, its phase,
 * the logits' last dim, the bytes generate holds beside the graph (extra)
 * and what is live just after it, when generate copies the last logits to
 * float32 and appends the next token (after). */
typedef struct mem_generate_step {
    mtk_memory_plan plan;
    mtk_memory_phase phase;
    int64_t vocab;
    int64_t extra;
    int64_t after;
} mem_generate_step;

/* The plan of a generate from its planned steps (the prefill first): each
 * step's points stamped with its phase; the peak, during a step or just
 * after it; one timeline of every step with its extra bytes; no notes.
 * phase_peak[0] is the prefill's largest live bytes, [1] the decode
 * steps'.  NULL on out of memory. */
mtk_memory_plan *mem_generate_join_steps(mtk_ctx *ctx, mem_generate_step *steps, int32_t nsteps,
                                         const mtk_memory_options *o, const mtk_model_info *info,
                                         const char *model_name, int64_t phase_peak[2]);
/* The generation plan returned: a copy of `from` in ctx's arena with the
 * options asked for (the model's dtype where o left it undefined), the
 * model's name and CUDA's context as overhead.  NULL on out of memory. */
mtk_memory_plan *mem_generate_result_plan(mtk_ctx *ctx, const mtk_memory_plan *from, const mtk_memory_options *o,
                                          const mtk_model_info *info, const char *model_name);
/* --mode inference of a decoder family with a KV cache: model(input_ids)
 * under no_grad as transformers 5 runs it, the DynamicCache it builds
 * (use_cache) counted.  NULL without an error for a model that has no
 * cache (the caller plans the plain forward), NULL with the context's
 * error otherwise. */
mtk_memory_plan *mem_plan_inference_cached(mtk_ctx *ctx, const char *model, const mtk_memory_options *o);

/* The experts_implementation the options ask for, NULL: the config's. */
const char *mem_experts_name(const mtk_memory_options *o);

#endif
