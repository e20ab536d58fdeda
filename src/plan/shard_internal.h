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
    shard_bytes saved_attention;/* of which the attention cores' own
                                   (mem_attention_cores: storages only
                                   they save and made themselves), what
                                   selective recompute drops               */
    shard_bytes transient;      /* the largest node working set             */
    shard_bytes input;          /* the layer's input (full recompute keeps) */
    double recompute_flops[3];  /* [mtk_shard_recompute]: forward FLOPs of
                                   the nodes its backward recomputes (the
                                   replay's checkpoints'; none: 0)         */
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
    int16_t phase;              /* mtk_memory_phase                         */
    int16_t entry;              /* 1: kept only as the state entering the
                                   next unit (a layer's), where FSDP2's
                                   hooks run: another point of its unit and
                                   phase covers it                          */
    int64_t saved;              /* kept for backward                        */
    int64_t other;              /* gradients in flight, outputs, workspaces */
    int64_t grads;              /* the parameters' .grad                    */
} shard_point;

/* What one trace gives that the micro-batch scales, per node, saved
 * storage, layer, site and replayed point, with the structure (units,
 * splits, phases) that it does not: an analysis's numbers are made from
 * it (shard.c's finish), and so are those of another micro-batch
 * (shard_analysis_at). */
typedef struct shard_raw {
    const mtk_graph *graph;     /* the trace's                               */
    int32_t nnodes, nsaved, npoints;
    int32_t *node_unit;         /* per node: SHARD_UNIT_* or a layer         */
    bool *node_sharded;         /* its first output sharded by tp            */
    int64_t *flops;             /* per node its FLOPs, then ws               */
    uint8_t *node_recomputed;   /* per node: bit 1 << mtk_shard_recompute
                                   when that mode's replay recomputes it;
                                   NULL: not replayed                      */
    int64_t *ws;                /* per node [forward, backward] working set  */
    int32_t *saved_unit;        /* per saved storage (each once)             */
    uint8_t *saved_flags;       /* 1: sharded by tp, 2: an attention core's
                                   own                                      */
    int64_t *saved;
    int64_t *input;             /* per layer: its input's bytes              */
    int64_t *site;              /* per site: [input, output] bytes           */
    int64_t boundary;           /* a layer's output                          */
    int64_t kv_layer;           /* inference: one layer's KV cache (the
                                   DynamicCache model(input_ids) fills)    */
    int32_t run_end[3];         /* the points' replays end here: training
                                   without recompute, with full, with
                                   selective; inference one (the rest
                                   empty)                                  */
    int32_t *point_unit, *point_phase; /* per replayed point                 */
    int64_t *point_bytes;       /* [saved, grads, live, model] per point     */
} shard_raw;

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
    int64_t kv_layer_bytes;     /* inference: a layer's KV cache, 0: none   */
    int32_t tied_param;         /* the embedding lm_head shares, -1: none  */
    shard_point *points;        /* the replayed step (training without
                                   recompute, or inference); NULL: none     */
    int32_t npoints;
    shard_point *points_full;   /* training's with full recompute           */
    int32_t npoints_full;
    shard_point *points_selective; /* training's with selective recompute  */
    int32_t npoints_selective;
    shard_raw *raw;             /* what the numbers above are made from     */
};

/* The analysis's numbers that follow the micro-batch (units, sites'
 * bytes, the boundary, the replayed points) made from its raw. */
void shard_analysis_finish(mtk_shard_analysis *a);

/* Whether a1 and a2, analyses of one model traced at micro-batches q and
 * 2 q (the same length, mode, dtype and device kind), make the one at m
 * from b1 and b2 at p and 2 p (p a multiple of q, m of 2 p; traced, or
 * made so themselves) by scaling (shard_scale.c): the same structure,
 * every shape growing in at most one dimension, every allocation's
 * rounded size at m the one at p plus m / p - 1 times its growth from p to
 * 2 p. */
bool shard_analyses_scale(const mtk_shard_analysis *a1, const mtk_shard_analysis *a2, const mtk_shard_analysis *b1,
                          const mtk_shard_analysis *b2, int64_t m);

/* The analysis at micro-batch m made from a1 and a2 (at p and 2 p) for
 * which shard_analyses_scale(traced pair, a1, a2, m) holds: the same as
 * mtk_shard_analyze at m.  It shares a1's parameters, rules and structure.  NULL on out of
 * memory. */
mtk_shard_analysis *shard_analysis_at(mtk_ctx *ctx, const mtk_shard_analysis *a1, const mtk_shard_analysis *a2,
                                      int64_t m);

/* Expert parallelism on transformers' expert mesh: the ep ranks of a
 * group are consecutive in the stage's tp x dp world (position t + tp d),
 * so an ep that is a multiple of tp spans the tensor-parallel ranks.
 * The expert-parallel index of rank (t, d), and the replica of its
 * experts (of tp dp / ep, the ranks that hold the same ones). */
static inline int32_t shard_expert_index(const mtk_shard_options *o, int32_t t, int32_t d)
{
    return (int32_t)(((int64_t)t + (int64_t)o->tp * d) % o->ep);
}

static inline int32_t shard_expert_replica(const mtk_shard_options *o, int32_t t, int32_t d)
{
    return (int32_t)(((int64_t)t + (int64_t)o->tp * d) / o->ep);
}

static inline int32_t shard_expert_replicas(const mtk_shard_options *o)
{
    return (int32_t)((int64_t)o->tp * o->dp / o->ep);
}

#define SHARD_UNIT_PRE(a) ((a)->nlayers)
#define SHARD_UNIT_POST(a) ((a)->nlayers + 1)

static inline int64_t shard_ceil_div(int64_t a, int64_t b) { return b > 1 ? (a + b - 1) / b : a; }

static inline int64_t shard_numel(const int64_t *shape, int32_t ndim)
{
    int64_t n = 1;
    for (int32_t d = 0; d < ndim; d++) n *= shape[d];
    return n;
}

/* Whether unit (a layer, or the embedding before them or the head after)
 * runs on stage s of the plan. */
static inline bool shard_unit_in_stage(const mtk_shard_analysis *a, const mtk_shard_plan *plan, int32_t unit,
                                       int32_t s)
{
    if (unit == SHARD_UNIT_PRE(a)) return s == 0;
    if (unit == SHARD_UNIT_POST(a)) return s == plan->options.pp - 1;
    return unit >= plan->stage_first_layer[s] && unit < plan->stage_first_layer[s + 1];
}

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

/* mtk_shard_evaluate without the costs: the checks, the stages and every
 * parameter's placement.  same_pp (may be NULL): a plan of the same
 * analysis whose partition is reused when its pp is o's; same_tp (may be
 * NULL): one whose placements and local shapes are reused when its tp and
 * ep are o's and neither has slices or shards parameters over dp; `into`
 * (may be NULL, may be same_tp's own, which then changes) receives them;
 * when it is same_tp's own, its stages must be same_tp's, and they are
 * not walked again if o's stages are the same.  NULL with the context's
 * error. */
mtk_shard_plan *shard_layout(mtk_ctx *ctx, const mtk_shard_analysis *a, const mtk_shard_options *o,
                             const mtk_shard_plan *same_pp, const mtk_shard_plan *same_tp, mtk_shard_param *into);

/* One rank's model-state sums before ZeRO or FSDP divide them. */
typedef struct shard_state_sums {
    int64_t params[2], states[2];  /* [dense, expert] bytes on the rank     */
    int64_t fsdp_params, fsdp_states; /* with FSDP2's padded Shard(0)       */
    int64_t fsdp_master;           /* of fsdp_states: 16-bit parameters'
                                      float32 copies                       */
    int64_t largest_layer;         /* the largest layer's parameter bytes   */
} shard_state_sums;

/* Each stage's parameters (the tied embedding also in the last stage)
 * and tensor/expert-parallel sites, in index order: stage s's are
 * params[param_start[s] .. param_start[s + 1]), likewise sites. */
typedef struct shard_stage_index {
    const int32_t *param_start, *params;
    const int32_t *site_start, *sites;
} shard_stage_index;

/* The index of a placed plan's stages.  NULL on out of memory. */
shard_stage_index *shard_stage_index_build(mtk_ctx *ctx, const mtk_shard_analysis *a, const mtk_shard_plan *plan);

/* Whether every index of p's mesh dim (tp, or ep for an expert) holds
 * the same local shape: its placement chunks a length its indices
 * divide, or it is whole. */
bool shard_param_uniform(const mtk_shard_param *p);

/* The sums of the rank (t, d, s) of a placed plan: ranks with the same t,
 * d % ep and s have the same.  ix (may be NULL: every parameter is
 * looked at) limits the walk to the stage's own. */
void shard_state_sums_of(const mtk_shard_analysis *a, const mtk_shard_plan *plan, const shard_stage_index *ix,
                         int32_t t, int32_t d, int32_t s, shard_state_sums *sums);

/* A stage's sums split once for all its ranks: base, what every rank
 * holds alike (the parameters whose local shape does not depend on the
 * tp or ep index, and the largest layer among the walk's runs of one
 * layer that hold only those), and the parameters to add per rank. */
typedef struct shard_vary_param {
    int32_t param, run;         /* its index, its run in run_bytes          */
    int64_t item, state, groups;/* element and optimizer bytes, FSDP groups */
} shard_vary_param;

typedef struct shard_stage_sums {
    shard_state_sums base;
    shard_vary_param *vary;
    int32_t nvary, nruns;
    int64_t *run_bytes;         /* nruns: the alike bytes of each run that
                                   holds a varying parameter                */
    int64_t *cur;               /* nruns: shard_stage_sums_at's scratch      */
    bool vary_t, vary_e;        /* a tp-split (expert) parameter varies      */
    int64_t dp_walk[2];         /* the stage's shard_stage_dp_walk           */
} shard_stage_sums;

/* Split stage s of a placed plan (ix its stage index) into ss, from ctx.
 * False on out of memory (the error on ctx). */
bool shard_stage_sums_split(mtk_ctx *ctx, const mtk_shard_analysis *a, const mtk_shard_plan *plan,
                            const shard_stage_index *ix, int32_t s, shard_stage_sums *ss);

/* The sums of the rank (t, d) of ss's stage: shard_state_sums_of's
 * exactly.  Uses ss's scratch (not reentrant on one ss). */
void shard_stage_sums_at(const mtk_shard_plan *plan, const shard_stage_sums *ss, int32_t t, int32_t d,
                         shard_state_sums *sums);

/* One micro-batch's saved activations and the largest working set of
 * stage s under the plan's options (tp, sp, recompute). */
void shard_stage_activations(const mtk_shard_analysis *a, const mtk_shard_plan *plan, int32_t s, int64_t *saved,
                             int64_t *transient);

/* A rank's memory and peak from its sums and its stage's activations,
 * under the plan's options (zero, fsdp) and micro-batches. */
/* The micro-batches stage s holds at once under 1F1B (training; 0 in
 * inference). */
int32_t shard_stage_in_flight(const mtk_shard_plan *plan, int32_t s);

void shard_rank_memory(const mtk_shard_plan *plan, const shard_state_sums *sums, int64_t saved, int64_t transient,
                       mtk_shard_rank *rank);

/* A rank's at_peak takes a moment of its stage (gradients, activations
 * and transient bytes then held; its own model states), and its peak. */
void shard_rank_take_moment(mtk_shard_rank *rank, const mtk_memory_breakdown *moment);

/* Whether the plan's peaks are replayed over the traced step (training
 * without recompute, with an analysis that has its points). */
bool shard_replays(const mtk_shard_analysis *a, const mtk_shard_options *o);

/* Per unit of a stage, tp index 0: its parameters' bytes whole, on the
 * rank, FSDP2's padded unsharded copy and padded dp shard; layers also
 * the shard and whole bytes of themselves and the stage's later layers. */
typedef struct shard_unit_params {
    int64_t global, local, padded, shard;
    int64_t shard_after, global_after;
} shard_unit_params;

/* What a placed plan's replayed stage peaks share whatever sp, ZeRO,
 * FSDP and the micro-batches: the units' parameter bytes (a layer's at
 * units[layer], stage s's embedding and head at units[nlayers + 2 s]
 * and [nlayers + 2 s + 1]); per stage its parameters' whole and on-rank
 * bytes, the later stages' whole bytes, and its points in step order
 * (points[point_start[s] .. point_start[s + 1]): its units', then the
 * optimizer's) with their saved (less the earlier stages') and other
 * bytes on a rank, without and with sequence parallelism. */
typedef struct shard_replay_index {
    shard_unit_params *units;
    struct { int64_t global, local, later; } *stage;
    int64_t whole;              /* the model's parameters, whole */
    const shard_point *pts;     /* the analysis's points it indexes: its
                                   points, or under full recompute
                                   points_full                             */
    bool full;
    int32_t *point_start, *points;
    int32_t nopt;               /* the optimizer's: each stage's last slots */
    int64_t *saved[2], *other[2]; /* [sp] a slot's point's bytes on a rank */
    size_t cap_slots;           /* the slots points, saved, other hold     */
    int32_t *layer_stage, *fill; /* scratch of a build                     */
    double *frac;
    int64_t *before;
} shard_replay_index;

/* The index of a placed plan (mesh) for shard_stage_peak.  same_params
 * (may be NULL): an index of a plan with the same mesh, placements and
 * stages at another micro-batch, whose parameter bytes (units, stage,
 * whole) are shared rather than summed again.  NULL on out of memory. */
shard_replay_index *shard_replay_index_build(mtk_ctx *ctx, const mtk_shard_analysis *a, const mtk_shard_plan *plan,
                                             const shard_replay_index *same_params);

/* rx rebuilt in place for the plan, a plan with the same mesh,
 * placements and stages as rx's at another micro-batch or recompute:
 * its parameter bytes kept, its buffers reused where big enough (a
 * search keeps one index a recompute, not one a micro-batch).  False on
 * out of memory. */
bool shard_replay_index_rebuild(mtk_ctx *ctx, const mtk_shard_analysis *a, const mtk_shard_plan *plan,
                                shard_replay_index *rx);

/* Only rx's parameter bytes (units, stage, whole) for the plan: what a
 * rebuild keeps.  rx's other fields are left as they are, so an index
 * of the same analysis, recompute, tp and stages (its points, saved and
 * other bytes: the same whatever dp, ep and placements) can lend them.
 * False on out of memory. */
bool shard_replay_index_params(mtk_ctx *ctx, const mtk_shard_analysis *a, const mtk_shard_plan *plan,
                               shard_replay_index *rx);

/* The largest moment of stage s's forward and backward (the optimizer's
 * aside): the gradients, saved activations and transient bytes then
 * held, and their sum (extra; -1: no point).  It depends on tp, sp, dp,
 * whether parameters are gathered (FSDP, ZeRO-3), ZeRO >= 2 and the
 * in-flight micro-batches, not on the rank's model states. */
typedef struct shard_moment {
    int64_t extra, gradients, activations_saved, transient_at_peak;
} shard_moment;

void shard_stage_moment(const mtk_shard_analysis *a, const mtk_shard_plan *plan, const shard_replay_index *rx,
                        int32_t s, int32_t in_flight, int64_t saved_per_mb, shard_moment *mo);

/* What of the options changes a stage's moment besides sp: ZeRO's stage
 * and FSDP (ZeRO 0 and 1 share theirs). */
typedef struct shard_moment_class {
    int32_t zero;
    bool fsdp;
} shard_moment_class;
#define SHARD_MOMENT_CLASSES 4 /* the most shard_stage_moments takes */

/* shard_stage_moment of each of ncls classes (up to SHARD_MOMENT_CLASSES)
 * under each of nsp sp values (sps[v], with its saved_per_mb[v]; up to
 * 2), the plan's other options as they are: mo[c * nsp + v].  One pass
 * over the stage's points, the same moments as a call per class and sp. */
void shard_stage_moments(const mtk_shard_analysis *a, const mtk_shard_plan *plan, const shard_replay_index *rx,
                         int32_t s, int32_t in_flight, const shard_moment_class *cls, int32_t ncls,
                         const bool *sps, const int64_t *saved_per_mb, int32_t nsp, shard_moment *mo);

/* Stage s's peak from its moment and the optimizer's points, given m as
 * for shard_stage_peak. */
void shard_stage_peak_of(const mtk_shard_plan *plan, const shard_replay_index *rx,
                         int32_t s, const shard_moment *mo, mtk_memory_breakdown *m);

/* Stage s's peak replayed over the traced step under the plan's options:
 * m holds the stage's first rank's model states (shard_rank_memory's)
 * and receives the gradients, saved activations and transient bytes at
 * the peak.  m is unchanged when the stage has no points. */
void shard_stage_peak(const mtk_shard_analysis *a, const mtk_shard_plan *plan, const shard_replay_index *rx,
                      int32_t s, int32_t in_flight, int64_t saved_per_mb, mtk_memory_breakdown *m);

/* The replayed points of the plan's options (training without, with
 * full or with selective recompute; inference): *npoints of them. */
const shard_point *shard_replay_points(const mtk_shard_analysis *a, const mtk_shard_options *o, int32_t *npoints);

/* Per stage (pp of them), the saved bytes of one micro-batch that the
 * earlier stages' units hold in the replay (each stage's points are less
 * those), under the plan's recompute. */
void shard_replay_before(const mtk_shard_analysis *a, const mtk_shard_plan *plan, int64_t *before);

/* Per unit (nlayers + 2), the largest saved bytes of its forward and
 * backward points under o's recompute; -1 where it has none.  The same
 * for every mesh of the analysis. */
void shard_unit_saved_max(const mtk_shard_analysis *a, const mtk_shard_options *o, int64_t *unit_max);

/* A floor of the largest saved bytes on a rank (either sp) of stage s's
 * forward and backward points in the replay index, from unit_max and the
 * stage's shard_replay_before: the stage's moment (shard_stage_moments)
 * holds at least its in-flight micro-batches' saved bytes and this.  -1
 * when the stage has no such point. */
int64_t shard_stage_saved_floor(const mtk_shard_analysis *a, const mtk_shard_plan *plan, const int64_t *unit_max,
                                int64_t before, int32_t s);

/* Which collectives shard_stage_comm_bytes adds up. */
enum { SHARD_COMMS_TP = 1, SHARD_COMMS_DP = 2, SHARD_COMMS_PP = 4 };
#define SHARD_NGROUPS 4 /* tp, dp, pp, ep */
#define SHARD_NOPS 6    /* mtk_collective */

/* Stage s's parameter bytes on a rank of tp index 0 (walk[0]) and the
 * runs of one layer among them (walk[1]), what its data-parallel
 * collectives move; ix as for shard_state_sums_of. */
void shard_stage_dp_walk(const mtk_shard_analysis *a, const mtk_shard_plan *plan, const shard_stage_index *ix,
                         int32_t s, int64_t walk[2]);

/* The bytes of stage s's collectives (those of `which`) added into
 * bytes[op * SHARD_NGROUPS + group], as shard_cost lists them; ix as for
 * shard_state_sums_of; dp_walk (may be NULL: walked here) the stage's
 * shard_stage_dp_walk, the same whatever zero, fsdp and sp. */
void shard_stage_comm_bytes(const mtk_shard_analysis *a, const mtk_shard_plan *plan, const shard_stage_index *ix,
                            int32_t s, int which, const int64_t *dp_walk, int64_t *bytes);

/* The group index of "tp", "dp", "pp" or "ep". */
int32_t shard_group_index(const char *group);

/* Every collective of one step, stage by stage, into plan->comms and
 * plan->ncomms.  False with the context's error on out of memory. */
bool shard_comms_list(mtk_ctx *ctx, const mtk_shard_analysis *a, mtk_shard_plan *plan);

#endif
