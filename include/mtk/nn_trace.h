/*
 * mtk nn tracing, summaries and the demo networks.  Included by mtk/nn.h.
 *
 * Tracing: between mtk_trace_begin(root) and mtk_trace_end(), every op
 * that runs in the context is recorded with the module path it ran in
 * (one node per op: name, input and output tensors, FLOPs as
 * torch.utils.flop_counter counts them), and every module call with its
 * input and output tensors.  A summary is an analysis of that record.
 */
#ifndef MTK_NN_TRACE_H
#define MTK_NN_TRACE_H

#include "mtk/core.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mtk_module mtk_module;
typedef struct mtk_trace mtk_trace;
typedef struct mtk_op_def mtk_op_def;
typedef struct mtk_value mtk_value;

/* One recorded op. */
typedef struct mtk_trace_op {
    const char *op;             /* "linear", "relu"                  */
    const char *module;         /* dotted path it ran in ("" root)   */
    int32_t module_index;       /* index into the trace's modules    */
    mtk_tensor *const *inputs;  /* tensor arguments, in order         */
    int32_t ninputs;
    mtk_tensor *const *outputs;
    int32_t noutputs;
    int64_t flops;
    const mtk_op_def *def;      /* its row of the op table            */
    const mtk_value *args;      /* bound arguments (defaults filled),
                                   copied into the arena, lists too   */
    int32_t nargs;
    const int8_t *out_view_of;  /* per output: the argument index whose
                                   storage it shares, -1: fresh       */
} mtk_trace_op;

/* One module of the traced tree (each module once, pre-order). */
typedef struct mtk_trace_module {
    const char *name;           /* dotted path, "" for the root      */
    mtk_module *module;
    int32_t depth;
    int32_t calls;              /* how many times it was called      */
    mtk_tensor *const *inputs;  /* of its first call                  */
    int32_t ninputs;
    mtk_tensor *const *outputs;
    int32_t noutputs;
    int64_t flops;              /* its ops and its children's, all calls */
    int64_t ops;                /* number of ops, same scope          */
} mtk_trace_module;

/* Starts recording the ops run in root's context, attributing them to
 * root's modules (by their names under root).  One trace per context at
 * a time (MTK_ERR_INVALID_ARGUMENT otherwise).  The trace is freed with
 * mtk_trace_free (or with the context). */
MTK_API mtk_trace *mtk_trace_begin(mtk_module *root);
/* Stops recording (the record stays readable). */
MTK_API void mtk_trace_end(mtk_trace *trace);
/* Stops if still recording and frees the record.  Accepts NULL. */
MTK_API void mtk_trace_free(mtk_trace *trace);

MTK_API int32_t mtk_trace_op_count(const mtk_trace *trace);
/* The i-th op (NULL past the end); valid until the trace is freed. */
MTK_API const mtk_trace_op *mtk_trace_op_at(const mtk_trace *trace, int32_t i);
MTK_API int32_t mtk_trace_module_count(const mtk_trace *trace);
MTK_API const mtk_trace_module *mtk_trace_module_at(const mtk_trace *trace, int32_t i);
/* Total FLOPs of every op recorded (this and the modules' counts stop at
 * INT64_MAX rather than wrap). */
MTK_API int64_t mtk_trace_flops(const mtk_trace *trace);

/* =============================================================== summary */

typedef struct mtk_summary mtk_summary;

/* Summarizes m (Lightning's ModelSummary / torchinfo): with inputs
 * (ninputs > 0) it runs one traced forward first, which also gives lazy
 * modules their shapes, then counts; without, it counts what is known and
 * reports lazy parameters as uninitialized.  Returns NULL on error (a
 * failing forward's error, for one). */
MTK_API mtk_summary *mtk_summary_new(mtk_module *m, mtk_tensor *const *inputs, int32_t ninputs);
MTK_API void mtk_summary_free(mtk_summary *summary);

/* Adds a line the summary shows after its totals (text) and in "notes"
 * (JSON): an assumption its numbers rest on (e.g. balanced MoE routing).
 * `note` is copied; at most 16 notes. */
MTK_API bool mtk_summary_add_note(mtk_summary *summary, const char *note);

/* The text table down to `depth` (0: m's own row; 1: m's children; < 0:
 * every level): columns Name, Type, Params and, with inputs, In sizes,
 * Out sizes, FLOPs.  A run of identical siblings named by consecutive
 * integers (the layers of a ModuleList: same type, parameters, shapes and
 * FLOPs, with identical subtrees) is one row, "layers.0-79" of type
 * "80 x LlamaDecoderLayer", whose Params and FLOPs are the run's total and
 * whose sizes are each layer's, as a note under the table says (its
 * descendants likewise: "layers.0-79.mlp").  A module that was not called
 * itself (a ModuleList) shows its children's FLOPs summed and "-" for
 * sizes.  Then the totals (trainable, non-trainable, total params, memory
 * of the parameters by dtype, FLOPs) and, with lazy parameters left, how
 * many are uninitialized, in which modules, and that an example input
 * makes the count exact.  Sizes are binary units, counts grouped
 * ("15.0 GiB", "8,030,261,248").  In the arena. */
MTK_API char *mtk_summary_text(const mtk_summary *summary, int32_t depth);
/* The same as one JSON document: total_params, trainable_params,
 * non_trainable_params, uninitialized_params (lazy tensors left),
 * param_bytes, param_bytes_by_dtype, flops (null without inputs),
 * input_shapes, output_shapes, notes, modules [{name, type, depth,
 * params, in_shapes, out_shapes, flops}] down to `depth` (0: m's own
 * row), one row per module (no collapsing: every figure is the module's
 * own; flops of a module not called itself are its children's sum, null
 * when none ran).  In the arena. */
MTK_API char *mtk_summary_json(const mtk_summary *summary, int32_t depth);

/* ========================================================= demo models */

/* The demo networks (MODEL names through mtk_model_resolve, mtk/models.h). */
/* simplenet: Linear(10, 20) -> ReLU -> Linear(20, 1), 241 parameters. */
MTK_API mtk_module *mtk_model_simplenet(mtk_ctx *ctx, const void *config);
/* lazynet: Conv2d(3, 8, 3) -> ReLU -> Flatten -> LazyLinear(10): 224
 * parameters known before an input; 72,234 after a 1x3x32x32 one. */
MTK_API mtk_module *mtk_model_lazynet(mtk_ctx *ctx, const void *config);

#ifdef __cplusplus
}
#endif
#endif /* MTK_NN_TRACE_H */
