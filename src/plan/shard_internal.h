/* The parallel planner's insides: what one trace of a model tells every
 * configuration (shard.c), read by the evaluation (shard_eval.c). */
#ifndef PLAN_SHARD_INTERNAL_H
#define PLAN_SHARD_INTERNAL_H

#include "mtk/plan.h"

/* Which way a parameter splits under tensor parallelism. */
typedef enum shard_split {
    SHARD_SPLIT_NONE = 0,       /* replicated                               */
    SHARD_SPLIT_OUT,            /* colwise-like: the output is sharded      */
    SHARD_SPLIT_IN,             /* rowwise-like: the output is partial and
                                   all-reduced (replicated after)           */
    SHARD_SPLIT_GATHERED,       /* sharded, the output gathered             */
} shard_split;

typedef struct shard_param_info {
    const char *name;
    mtk_tensor *tensor;
    int32_t unit;               /* layer index, or SHARD_UNIT_PRE/POST      */
    int32_t tp_rule;            /* index into the plan's tp rules, -1: none */
    int32_t ep_rule;            /* index into the plan's ep rules, -1: none */
} shard_param_info;

/* Bytes autograd keeps (or a node works in) per unit, split by whether
 * tensor parallelism divides them. */
typedef struct shard_bytes {
    int64_t replicated, sharded;
} shard_bytes;

typedef struct shard_unit {
    double flops;               /* forward FLOPs                             */
    shard_bytes saved;          /* saved for backward, each storage once     */
    shard_bytes saved_attention;/* of which attention's core (selective
                                   recompute drops it)                      */
    shard_bytes transient;      /* the largest node working set             */
    shard_bytes input;          /* the layer's input (full recompute keeps) */
} shard_unit;

/* A module that tensor or expert parallelism makes communicate. */
typedef struct shard_site {
    int32_t unit;
    mtk_tp_style style;
    int64_t in_bytes, out_bytes; /* its first input and output (one call)   */
    int64_t param_bytes;         /* its own parameters                      */
    int64_t out_features;        /* its output's last dim                   */
} shard_site;

/* One moment of the traced step's replay (mtk memory's, one rank, no
 * parallelism): the unit whose node ran, and the bytes that parallelism
 * rescales.  Points a same-unit, same-phase point covers are dropped. */
typedef struct shard_point {
    int32_t unit;               /* SHARD_UNIT_*, or a layer; -1: optimizer  */
    int32_t phase;              /* mtk_memory_phase                         */
    int64_t saved;              /* kept for backward                        */
    int64_t other;              /* gradients in flight, outputs, workspaces */
    int64_t grads;              /* the parameters' .grad                    */
} shard_point;

struct mtk_shard_analysis {
    mtk_ctx *ctx;
    const char *model;
    const char *family;
    mtk_shard_options options;  /* micro_batch, seq, training, dtype used   */
    mtk_dtype dtype;            /* the parameters' (resolved)               */
    const mtk_tp_plan *plan;    /* NULL: the family has none                */
    const char *base_prefix;    /* "model." : where base-model rules apply   */
    int64_t heads, kv_heads, vocab, experts, top_k, hidden;
    int32_t nlayers;
    shard_unit *units;          /* nlayers + 2: layers, then PRE and POST   */
    shard_param_info *params;
    int32_t nparams;
    shard_site *sites;
    int32_t nsites;
    int64_t boundary_bytes;     /* a layer's output: what stages send       */
    int32_t tied_param;         /* the embedding lm_head shares, -1: none  */
    shard_point *points;        /* training's replayed step; NULL: none     */
    int32_t npoints;
};

#define SHARD_UNIT_PRE(a) ((a)->nlayers)
#define SHARD_UNIT_POST(a) ((a)->nlayers + 1)

/* Whether `path` (a full dotted name) matches `rule` of analysis a's plan. */
bool shard_rule_matches(const mtk_shard_analysis *a, const mtk_tp_rule *rule, const char *path);

/* How a parameter splits under `style` (which the evaluation places). */
shard_split shard_style_split(mtk_tp_style style, const char *param_name, int32_t ndim);

/* torch.chunk's piece `index` of n in `parts` (DTensor's uneven Shard):
 * chunks of ceil(n / parts), the last ones shorter or empty. */
void shard_chunk(int64_t n, int64_t parts, int64_t index, int64_t *offset, int64_t *length);

/* Adds a note to the plan (at most 8; the string is kept). */
void shard_note(mtk_shard_plan *plan, const char *note);

/* Per-rank memory and the step's collectives (shard_cost.c) of a plan
 * whose stages and parameters are placed.  False on out of memory. */
bool shard_cost(mtk_ctx *ctx, const mtk_shard_analysis *a, mtk_shard_plan *plan);

#endif
