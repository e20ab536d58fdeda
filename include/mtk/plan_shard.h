/*
 * mtk plan: parallel plans (`mtk shard`).  Included by mtk/plan.h.
 *
 * A parallel plan splits a model over tp x pp x dp ranks (tensor,
 * pipeline and data parallel; expert parallel inside the data-parallel
 * group; ZeRO 1/2/3 or FSDP over it).  Global rank
 *     rank = t + tp * (d + dp * s)
 * for tensor-parallel index t, data-parallel index d and pipeline stage s
 * (Megatron's order: tensor parallel innermost); the expert-parallel
 * index is d % ep.
 *
 * Tensor parallelism follows transformers' plans (mtk_model_tp_plan_find)
 * with DTensor's placement semantics: Shard(d) splits dim d as
 * torch.chunk does (chunks of ceil(n / T), the last ones shorter or
 * empty), Replicate keeps the whole tensor, _StridedShard(d, 2) (packed
 * gate/up) shards each half of dim d.  Pipeline stages are contiguous
 * runs of decoder layers balanced by the FLOPs of the traced forward, the
 * embedding going with the first and the final norm, lm_head and loss
 * with the last.
 *
 * The per-rank numbers come from the graph `mtk memory` replays (one
 * traced forward at the micro-batch): what autograd saves, per layer,
 * with the tensors between a colwise and a rowwise projection divided
 * over the tensor-parallel ranks (docs/sharding.md says how).
 *
 * Two steps, so a search can evaluate many configurations cheaply:
 * mtk_shard_analyze traces the model once per (micro-batch, seq, mode,
 * dtype); mtk_shard_evaluate makes the plan of one configuration from
 * that analysis without tracing again.  Everything lives in the
 * context's arena; nothing needs freeing.
 */
#ifndef MTK_PLAN_SHARD_H
#define MTK_PLAN_SHARD_H

#include "mtk/core.h"
#include "mtk/plan_memory.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum mtk_shard_recompute {
    MTK_RECOMPUTE_NONE = 0,
    MTK_RECOMPUTE_SELECTIVE,    /* attention's core recomputed (Megatron)    */
    MTK_RECOMPUTE_FULL,         /* each layer recomputed from its input      */
} mtk_shard_recompute;

typedef struct mtk_shard_options {
    int32_t tp, pp, dp;         /* >= 1; world size tp * pp * dp            */
    int32_t ep;                 /* expert parallel, divides dp; 1: none     */
    int32_t zero;               /* 0..3: DeepSpeed ZeRO stage over dp       */
    bool fsdp;                  /* FSDP2 fully_shard: parameters, gradients
                                   and states Shard(0) over dp               */
    bool sp;                    /* sequence parallel (with tp)               */
    int64_t micro_batch;        /* sequences per micro-batch                */
    int64_t global_batch;       /* sequences per step; 0: micro_batch * dp  */
    int64_t seq;                /* sequence length                          */
    mtk_shard_recompute recompute;
    bool training;              /* false: inference (a forward, no grads)   */
    mtk_dtype dtype;            /* parameters and compute; UNDEFINED: the
                                   config's.  A 16-bit dtype trains with
                                   float32 master weights (2+2+12 bytes a
                                   parameter with Adam)                     */
    int32_t device_kind;        /* mtk_device_kind, CUDA by default         */
    bool without_slices;        /* leave the parameters' slices out (a
                                   search that reads only the costs)        */
} mtk_shard_options;

/* Defaults: tp = pp = dp = ep = 1, no ZeRO, training, micro-batch 1,
 * seq 1, no recompute, the config's dtype, CUDA. */
MTK_API void mtk_shard_options_init(mtk_shard_options *options);

typedef enum mtk_placement_kind {
    MTK_PLACEMENT_REPLICATE = 0,
    MTK_PLACEMENT_SHARD,        /* Shard(dim)                                */
    MTK_PLACEMENT_STRIDED,      /* _StridedShard(dim, split_factor)          */
} mtk_placement_kind;

typedef struct mtk_placement {
    mtk_placement_kind kind;
    int32_t dim;
    int32_t split_factor;
} mtk_placement;

/* A contiguous box of a parameter: offset and shape per dim. */
typedef struct mtk_shard_box {
    int64_t offset[MTK_MAX_DIMS];
    int64_t shape[MTK_MAX_DIMS];
} mtk_shard_box;

/* What one global rank holds of a parameter: one box, or for a
 * _StridedShard several (`parts`, in the order they are concatenated
 * along the strided dim of the local tensor).  `local` is the local
 * tensor's shape. */
typedef struct mtk_shard_slice {
    int32_t rank;
    int64_t local[MTK_MAX_DIMS];
    const mtk_shard_box *parts;
    int32_t nparts;
} mtk_shard_slice;

typedef struct mtk_shard_param {
    const char *name;           /* state-dict key                           */
    mtk_dtype dtype;
    int32_t ndim;
    int64_t shape[MTK_MAX_DIMS];
    const char *style;          /* transformers' style, NULL: no rule       */
    bool expert;                /* split over the expert group, not tp       */
    mtk_placement placement;    /* over the tp (expert: ep) mesh dim        */
    bool dp_sharded;            /* ZeRO-3 / FSDP: Shard(0) over dp too      */
    int32_t stage;              /* pipeline stage holding it                */
    int32_t layer;              /* decoder layer, -1: embedding or head     */
    const int64_t *local_shapes;/* tp (expert: ep) x ndim: the local shape
                                   on each index of its mesh dim            */
    int32_t nlocal;
    const mtk_shard_slice *slices; /* every global rank holding part of it,
                                   each once, ascending                     */
    int32_t nslices;
} mtk_shard_param;

typedef struct mtk_shard_rank {
    int32_t rank, stage, tp_index, dp_index;
    mtk_memory_breakdown memory; /* the same keys as mtk memory's: model
                                    states, the in-flight micro-batches'
                                    saved activations at the end of their
                                    forward, transient_at_peak's of at_peak  */
    int64_t peak_bytes;          /* at_peak's sum                             */
    int32_t in_flight;           /* micro-batches whose activations 1F1B keeps */
    mtk_memory_breakdown at_peak;/* what fills the rank at its peak: training
                                    replays the step (gradients then held,
                                    activations then saved, gathered FSDP
                                    parameters in transient_at_peak); else
                                    = memory                                 */
} mtk_shard_rank;

typedef enum mtk_collective {
    MTK_COLL_ALL_REDUCE = 0,
    MTK_COLL_ALL_GATHER,
    MTK_COLL_REDUCE_SCATTER,
    MTK_COLL_ALL_TO_ALL,
    MTK_COLL_SEND,
    MTK_COLL_RECV,
} mtk_collective;

MTK_API const char *mtk_collective_name(mtk_collective op);

/* The collectives one rank of `stage` takes part in during one step:
 * `count` calls moving `bytes` in all (each call's tensor, as torch's
 * CommDebugMode sees its argument: the full buffer of an all-reduce, the
 * gathered output of an all-gather, the input of a reduce-scatter). */
typedef struct mtk_shard_comm {
    mtk_collective op;
    const char *group;          /* "tp", "dp", "pp", "ep"                   */
    int32_t stage;
    const char *what;           /* "forward activations", "gradients", ...  */
    int64_t count;
    int64_t bytes;
} mtk_shard_comm;

typedef struct mtk_shard_plan {
    mtk_shard_options options;
    const char *model;
    const char *family;
    int32_t world_size;
    int64_t micro_batches;      /* per step, per data-parallel rank          */
    double bubble;              /* 1F1B: (pp - 1) / (micro_batches + pp - 1) */
    int32_t nlayers;
    const int32_t *stage_first_layer; /* pp + 1 entries: stage s holds layers
                                   [first[s], first[s + 1])                  */
    const double *stage_flops;  /* forward FLOPs of each stage's micro-batch */
    const double *stage_recompute_flops; /* [recompute * pp + stage], per
                                   mtk_shard_recompute: the forward FLOPs
                                   one micro-batch of the stage recomputes
                                   in its backward (training; the traced
                                   nodes the replay's checkpoints rerun)   */
    const mtk_shard_param *params;
    int32_t nparams;
    const mtk_shard_rank *ranks; /* world_size, by rank                      */
    const mtk_shard_comm *comms;
    int32_t ncomms;
    const char *notes[8];
    int32_t nnotes;
} mtk_shard_plan;

/* A traced model, its layers and what each costs: the part of a plan
 * that does not depend on tp/pp/dp/zero.  Opaque. */
typedef struct mtk_shard_analysis mtk_shard_analysis;

/* Builds MODEL on meta and traces one forward at options' micro_batch x
 * seq (with the loss for training) in options' dtype; reads the family's
 * tensor-parallel plan.  NULL with the context's error (unknown model, a
 * bad option). */
MTK_API mtk_shard_analysis *mtk_shard_analyze(mtk_ctx *ctx, const char *model, const mtk_shard_options *options);

/* The plan of one configuration (options' tp, pp, dp, ep, zero, fsdp,
 * sp, global batch, recompute) from an analysis made at the same
 * micro-batch, seq, mode and dtype.  NULL with MTK_ERR_INVALID_ARGUMENT
 * naming the numbers for a plan that cannot work: heads, key-value heads
 * or vocabulary not divisible by tp, fewer layers than pp, ep not
 * dividing dp or the experts, a global batch that is not a multiple of
 * micro_batch * dp, tp > 1 for a family without a plan. */
MTK_API mtk_shard_plan *mtk_shard_evaluate(mtk_ctx *ctx, const mtk_shard_analysis *analysis,
                                           const mtk_shard_options *options);

/* mtk_shard_analyze then mtk_shard_evaluate. */
MTK_API mtk_shard_plan *mtk_shard_plan_model(mtk_ctx *ctx, const char *model, const mtk_shard_options *options);

/* One JSON document (docs/sharding.md): world_size, mesh {tp, pp, dp,
 * ep}, options, micro_batches, bubble, stages [{stage, layers [first,
 * end), flops}], parameters [{name, shape, dtype, style, placement,
 * dp_placement, stage, local_shapes, slices [{rank, offset, shape
 * (, parts)}]}], ranks [{rank, stage, tp, dp, memory {parameters,
 * gradients, optimizer_states, activations_saved, kv_cache,
 * transient_at_peak}, peak_bytes, in_flight, at_peak {...}}], communication [{op,
 * group, stage, what, count, bytes}], notes.  `rank` >= 0 keeps only
 * that rank's slices and row.  In the arena. */
MTK_API char *mtk_shard_plan_json(mtk_ctx *ctx, const mtk_shard_plan *plan, int32_t rank);
/* The text rendering: mesh, stages, per-stage memory, communication,
 * bubble and the parameters' placements (runs of layers folded); with
 * `rank` >= 0 that rank's local shapes.  In the arena. */
MTK_API char *mtk_shard_plan_text(mtk_ctx *ctx, const mtk_shard_plan *plan, int32_t rank);

#ifdef __cplusplus
}
#endif
#endif /* MTK_PLAN_SHARD_H */
