/*
 * mtk plan: the traced graph, and the analyses that read it (summary,
 * memory and liveness, fit; placement and sharding later).
 *
 * A graph is what one traced forward recorded (mtk_trace_begin/end around
 * a module call), turned into ids: every tensor that took part is one
 * mtk_graph_tensor, every tensor's storage one mtk_graph_storage (views
 * share their base's storage, so aliasing is known on meta, where there
 * is no storage at all), and every op one mtk_graph_node, in the order the
 * ops ran.  Per-op knowledge the analyses need (what autograd saves for
 * backward, what backward allocates) is read from the op table's columns
 * when the node is recorded and kept on the node.
 *
 * Everything lives in the context's arena; nothing needs freeing.
 */
#ifndef MTK_PLAN_H
#define MTK_PLAN_H

#include "mtk/core.h"
#include "mtk/value.h"
#include "mtk/models.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mtk_op_def mtk_op_def;
typedef struct mtk_trace mtk_trace;
typedef struct mtk_module mtk_module;

/* ================================================================ graph */

/* Where a storage comes from: the analyses count each kind apart. */
typedef enum mtk_graph_storage_kind {
    MTK_STORAGE_ACTIVATION = 0, /* made by a node of the graph              */
    MTK_STORAGE_PARAMETER,      /* a parameter of the traced module tree     */
    MTK_STORAGE_BUFFER,         /* a buffer of the traced module tree        */
    MTK_STORAGE_INPUT,          /* given to the traced call, or made outside */
} mtk_graph_storage_kind;

typedef struct mtk_graph_storage {
    int64_t nbytes;             /* bytes torch's allocator is asked for      */
    mtk_graph_storage_kind kind;
    int32_t base;               /* the tensor that owns it (not a view)      */
} mtk_graph_storage;

typedef struct mtk_graph_tensor {
    mtk_tensor *tensor;         /* shape, dtype, strides, offset (meta)      */
    int32_t storage;            /* index into the graph's storages           */
    int32_t view_of;            /* tensor id it is a view of, -1: none       */
    int32_t producer;           /* node that made it, -1 for parameters,
                                   buffers and inputs                        */
    bool requires_grad;         /* a trainable parameter, or made by a
                                   differentiable op from one               */
    const char *name;           /* parameter or buffer name, else NULL       */
} mtk_graph_tensor;

/* One tensor autograd keeps for a node's backward (torch 2.13's
 * derivatives: what saved_tensors_hooks would see). */
typedef enum mtk_saved_kind {
    MTK_SAVED_INPUT = 0,        /* the node's input `index` (its storage)    */
    MTK_SAVED_OUTPUT,           /* the node's output `index`                 */
    MTK_SAVED_NEW,              /* a tensor the op makes only for backward
                                   (dropout's mask, layer_norm's mean/rstd,
                                   sdpa's logsumexp): dtype and shape below  */
} mtk_saved_kind;

typedef struct mtk_saved {
    mtk_saved_kind kind;
    int32_t index;
    mtk_dtype dtype;            /* MTK_SAVED_NEW                             */
    int32_t ndim;
    int64_t shape[MTK_MAX_DIMS];
} mtk_saved;

/* One allocation a node's backward makes. */
typedef struct mtk_backward_alloc {
    int32_t grad_of;            /* the input whose gradient it is (alive
                                   until consumed or accumulated into .grad),
                                   -1: a temporary freed when the node's
                                   backward ends                            */
    int64_t nbytes;
    bool view;                  /* the gradient reaches its input as a view
                                   of this allocation (linear's weight: the
                                   t() of TBackward0), so an InputBuffer
                                   cannot add into it in place              */
} mtk_backward_alloc;

typedef struct mtk_graph_node {
    const mtk_op_def *op;
    const mtk_value *args;      /* bound arguments, copied into the arena    */
    int32_t nargs;
    const int32_t *inputs;      /* tensor ids of the tensor arguments, in
                                   order, lists flattened                    */
    int32_t ninputs;
    const int32_t *outputs;     /* tensor ids                                */
    int32_t noutputs;
    int32_t module;             /* index into the trace's modules, -1: root  */
    const mtk_saved *saved;     /* what autograd keeps for backward          */
    int32_t nsaved;
    const mtk_backward_alloc *backward; /* what its backward allocates      */
    int32_t nbackward;
    int64_t transient_bytes;    /* workspace the forward allocates and frees
                                   inside the op (peak above its outputs
                                   and what autograd saves of its own)     */
    int64_t transient_nograd_bytes; /* the same when autograd does not
                                   record the call (no_grad, a node no
                                   backward needs): what it would have
                                   saved is workspace too                 */
    int64_t flops;              /* as torch.utils.flop_counter counts them */
} mtk_graph_node;

typedef struct mtk_graph mtk_graph;

/* The kind of device the analysis models: where torch's cpu and CUDA
 * kernels keep different tensors for backward (sdpa: the cpu flash kernel
 * vs CUDA's flash/efficient ones; dropout: a float mask vs a bool one). */
typedef enum mtk_device_kind {
    MTK_DEVICE_KIND_CPU = 0,
    MTK_DEVICE_KIND_CUDA,
} mtk_device_kind;

/* Turns a finished trace into a graph (mtk_trace_end first), modelling
 * autograd as it runs on cpu.  NULL with the context's error on out of
 * memory. */
MTK_API mtk_graph *mtk_graph_from_trace(const mtk_trace *trace);
/* The same, modelling autograd on `device_kind`. */
MTK_API mtk_graph *mtk_graph_from_trace_on(const mtk_trace *trace, mtk_device_kind device_kind);

MTK_API int32_t mtk_graph_node_count(const mtk_graph *graph);
MTK_API const mtk_graph_node *mtk_graph_node_at(const mtk_graph *graph, int32_t i);
MTK_API int32_t mtk_graph_tensor_count(const mtk_graph *graph);
MTK_API const mtk_graph_tensor *mtk_graph_tensor_at(const mtk_graph *graph, int32_t i);
MTK_API int32_t mtk_graph_storage_count(const mtk_graph *graph);
MTK_API const mtk_graph_storage *mtk_graph_storage_at(const mtk_graph *graph, int32_t i);
/* The trace it was made from (its modules name the nodes' modules). */
MTK_API const mtk_trace *mtk_graph_trace(const mtk_graph *graph);
MTK_API mtk_device_kind mtk_graph_device_kind(const mtk_graph *graph);
/* The graph's tensor id of t (a tensor of the traced run), -1 if it took
 * no part.  Constant time. */
MTK_API int32_t mtk_graph_tensor_id(const mtk_graph *graph, const mtk_tensor *t);
/* Bytes of one saved entry of `node`: its tensor's whole storage for an
 * input or output (what saved_tensors_hooks' untyped_storage().nbytes()
 * reports), numel x itemsize for a new one. */
MTK_API int64_t mtk_graph_saved_entry_bytes(const mtk_graph *graph, const mtk_graph_node *node,
                                            const mtk_saved *saved);
/* The storage a saved entry keeps alive, -1 for a new tensor (its own). */
MTK_API int32_t mtk_graph_saved_entry_storage(const mtk_graph *graph, const mtk_graph_node *node,
                                              const mtk_saved *saved);
/* What the forward keeps for backward, as GROUND_TRUTH.md measures it:
 * every storage once (views share), new tensors each once, parameters
 * left out (buffers and inputs counted).  With `per_module` non-NULL it
 * also gets, per module of the trace (mtk_trace_module_count entries),
 * the bytes first saved by a node that ran directly in it. */
MTK_API int64_t mtk_graph_saved_bytes(const mtk_graph *graph, int64_t *per_module);

/* ================================================= tracing a zoo model */

/* What mtk_plan_trace_model builds and traces. */
typedef struct mtk_plan_trace_options {
    int64_t batch, seq;         /* token ids (B, S); for pixel models B
                                   images of the config's size (seq unused) */
    mtk_dtype dtype;            /* MTK_DTYPE_UNDEFINED (not 0: uint8): the
                                   config's torch_dtype                   */
    const char *attention;      /* "eager", "sdpa", NULL: the family's     */
    const char *experts;        /* "batched_mm", "grouped_mm", NULL: the
                                   config's _experts_implementation       */
    mtk_device_kind device_kind;/* whose kernels autograd is modelled on  */
    bool with_loss;             /* labels=input_ids: transformers 5's
                                   ForCausalLMLoss after the forward
                                   (float32 logits, labels padded with
                                   -100 and shifted, cross_entropy mean);
                                   for a *ForMaskedLM its masked-LM loss
                                   (cross_entropy mean over every token;
                                   float32 logits for ModernBERT, BERT's
                                   and RoBERTa's as they are)             */
    bool training;              /* module.train() (dropout active); the
                                   trace of a training step wants it      */
    int64_t decoder_seq;        /* an encoder-decoder's (t5) decoder ids
                                   (B, decoder_seq), its second input;
                                   with_loss: the labels (B, decoder_seq),
                                   passed as the decoder's ids.  0: none
                                   (an error for such a model)             */
} mtk_plan_trace_options;

/* A traced model: the module tree, the record and its graph. */
typedef struct mtk_plan_model {
    mtk_module *model;
    mtk_model_info info;
    mtk_tensor *input;          /* the ids (or pixels) it was called with  */
    mtk_tensor *output;         /* logits or last hidden state             */
    mtk_tensor *loss;           /* 0-dim with_loss (float32, or the logits'
                                   dtype for BERT's and T5's losses), else
                                   NULL                                    */
    mtk_tensor *decoder_input;  /* an encoder-decoder's decoder ids, else
                                   NULL                                    */
    mtk_trace *trace;
    mtk_graph *graph;
    const int32_t *layers;      /* trace module indices of the units of
                                   gradient checkpointing, in order: the
                                   decoder layers (transformers'
                                   _no_split_modules that repeat)         */
    int32_t nlayers;
} mtk_plan_model;

/* Builds MODEL (a built-in name, a config.json or a directory holding
 * one) on the meta device, then traces one forward with `options` (loss
 * ops run after the root's call: their nodes have module -1).  Ops with
 * the loss need a causal or masked LM or an encoder-decoder's
 * ForConditionalGeneration (MTK_ERR_INVALID_ARGUMENT otherwise); an
 * encoder-decoder needs options->decoder_seq.  In the
 * context's arena; NULL with the context's error. */
MTK_API mtk_plan_model *mtk_plan_trace_model(mtk_ctx *ctx, const char *model, const mtk_plan_trace_options *options);

/* ======================================================= autograd column */

/* What an op's autograd column functions see of one recorded call. */
typedef struct mtk_autograd_query {
    const mtk_op_def *op;
    const mtk_value *args;            /* bound arguments                    */
    int32_t nargs;
    const int32_t *arg_input;         /* per argument: index into inputs of
                                         its (first) tensor, -1 for none    */
    mtk_tensor *const *inputs;        /* tensor arguments, lists flattened  */
    const bool *input_requires_grad;
    int32_t ninputs;
    mtk_tensor *const *outputs;
    int32_t noutputs;
    mtk_device_kind device_kind;
} mtk_autograd_query;

#define MTK_MAX_SAVED 16

/* What the column functions fill (zeroed before the call). */
typedef struct mtk_autograd_result {
    mtk_saved saved[MTK_MAX_SAVED];
    int32_t nsaved;
    mtk_backward_alloc backward[MTK_MAX_SAVED];
    int32_t nbackward;
    int64_t transient_bytes;
} mtk_autograd_result;

/* The op table's `saved` column: fills r->saved with what torch 2.13's
 * autograd keeps when the call runs with grad (called only when some
 * input requires grad).  `backward` column: fills r->backward and
 * r->transient_bytes; an op without one allocates the gradient of each
 * input that requires grad and no workspace.  The graph calls `backward`
 * a second time with no input requiring grad for the workspace of a call
 * autograd does not record (mtk_graph_node's transient_nograd_bytes). */
typedef void (*mtk_saved_fn)(const mtk_autograd_query *q, mtk_autograd_result *r);
typedef void (*mtk_backward_fn)(const mtk_autograd_query *q, mtk_autograd_result *r);

#ifdef __cplusplus
}
#endif

#include "mtk/plan_memory.h"
#include "mtk/plan_place.h"
#include "mtk/plan_shard.h"
#include "mtk/plan_search.h"

#endif /* MTK_PLAN_H */
