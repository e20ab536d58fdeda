/*
 * mtk plan: the search for the best parallel plan (`mtk shard --search`).
 * Included by mtk/plan.h.
 *
 * A roofline estimate of one training step: each stage's FLOPs at a
 * stated efficiency of the GPU's peak, each collective at the bandwidth
 * of the link it crosses (NVLink when its group fits inside a node,
 * InfiniBand when it does not), a 1F1B pipeline's bubble; nothing
 * overlapped.  docs/sharding.md says how each term is made.
 */
#ifndef MTK_PLAN_SEARCH_H
#define MTK_PLAN_SEARCH_H

#include "mtk/core.h"
#include "mtk/plan_shard.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One GPU and the links of the machines it usually comes in. */
typedef struct mtk_gpu_spec {
    const char *name;           /* "h100-80gb"                               */
    double tflops;              /* peak dense bf16 tensor TFLOP/s            */
    double memory_gib;          /* device memory, GiB                        */
    double nvlink_gbps;         /* GB/s one way per GPU inside a node        */
    double ib_gbps;             /* GB/s one way per GPU between nodes        */
    int32_t gpus_per_node;
    const char *source;         /* the datasheet the numbers come from       */
} mtk_gpu_spec;

/* The table's entries, in order; *count gets their number. */
MTK_API const mtk_gpu_spec *mtk_gpu_specs(int32_t *count);
/* The spec called `name`; NULL if none. */
MTK_API const mtk_gpu_spec *mtk_gpu_spec_find(const char *name);

typedef struct mtk_shard_search_options {
    int32_t gpus;               /* world size to fill                        */
    mtk_gpu_spec gpu;           /* with any overrides applied                */
    double efficiency;          /* share of the peak matmuls reach (0, 1]    */
    int64_t seq;                /* sequence length                           */
    int64_t global_batch;       /* sequences per step                        */
    int64_t max_micro_batch;    /* micro-batches tried: 1, 2, 4 .. this      */
    bool training;
    mtk_dtype dtype;            /* UNDEFINED: the config's                   */
    int64_t margin_bytes;       /* kept free per GPU; -1: mtk place's default */
    int32_t top;                /* plans returned                            */
} mtk_shard_search_options;

/* Defaults: h100-80gb, efficiency 0.5, training, micro-batches up to 8,
 * the default margin, top 5. */
MTK_API void mtk_shard_search_options_init(mtk_shard_search_options *options);

/* What one configuration costs under the search's model. */
typedef struct mtk_shard_estimate {
    mtk_shard_options options;  /* tp, pp, dp, ep, zero, fsdp, sp, micro-batch,
                                   recompute                                 */
    int64_t micro_batches;      /* per step, per data-parallel rank          */
    int64_t peak_bytes;         /* the largest rank's peak                   */
    int64_t budget_bytes;       /* the GPU's memory less the margin          */
    bool fits;                  /* peak_bytes <= budget_bytes                */
    int32_t bottleneck_stage;   /* the stage the pipeline runs at            */
    double step_seconds;        /* compute + communication + bubble          */
    double compute_seconds;     /* the bottleneck stage's matmuls            */
    double communication_seconds; /* its tp/ep/pp collectives and the step's
                                   data-parallel ones                       */
    double bubble_seconds;      /* (pp - 1) micro-batch slots idle           */
    double bubble;              /* (pp - 1) / (micro_batches + pp - 1)       */
    double mfu;                 /* model FLOPs / (step x gpus x peak)        */
    double recompute_flops;     /* FLOPs the step's backward recomputes, all
                                   GPUs (counted in compute, not in MFU)   */
} mtk_shard_estimate;

/* The estimate of a plan made by mtk_shard_evaluate (or
 * mtk_shard_plan_model): its ranks' peaks and its communication list. */
MTK_API bool mtk_shard_plan_estimate(mtk_ctx *ctx, const mtk_shard_plan *plan,
                                     const mtk_shard_search_options *options, mtk_shard_estimate *estimate);

typedef struct mtk_shard_search_result {
    const mtk_shard_estimate *plans; /* the best that fit, fastest first     */
    int32_t nplans;
    int64_t searched;           /* configurations estimated                  */
    int64_t feasible;           /* of which fit in memory                    */
    double seconds;             /* the search's time, analyses excluded      */
    double cpu_seconds;         /* the same in processor time (clock())      */
    double analysis_seconds;    /* the analyses: the model traced at
                                   micro-batches 1, 2 and 4, the larger
                                   ones scaled from 2 and 4 (exact: the
                                   traces were checked to scale) or traced
                                   too                                     */
    int32_t scaled;             /* analyses scaled rather than traced        */
} mtk_shard_search_result;

/* Enumerates tp x pp x dp = gpus, ep (MoE), ZeRO 0-3 or FSDP, sequence
 * parallelism (tp > 1), recompute none/selective/full and micro-batches
 * 1, 2, 4 .. max_micro_batch dividing global_batch / dp; estimates each
 * (the same numbers as mtk_shard_plan_estimate on mtk_shard_evaluate's
 * plan) and keeps the `top` fastest that fit.  NULL with
 * MTK_ERR_INVALID_ARGUMENT naming the numbers when no tp x pp x dp of
 * `gpus` can work for the model, or with the context's error of the
 * analysis.  A result with nplans 0 when none fits.  In the arena. */
MTK_API mtk_shard_search_result *mtk_shard_search(mtk_ctx *ctx, const char *model,
                                                  const mtk_shard_search_options *options);

#ifdef __cplusplus
}
#endif
#endif /* MTK_PLAN_SEARCH_H */
