/* mtk load --plan: the parallel plan a rank reads (docs/sharding.md,
 * "Loading a plan on MPI"), and the MPI side of the command.
 *
 * The MPI side lives in its own program, mtk-mpi (src/cli/mpi/: the
 * load command, linked with OpenMPI), installed next to mtk: `mtk load
 * --plan` executes it in place of itself (load_plan_exec.c), so that
 * mtk itself does not load OpenMPI's libraries at every start (5 ms). */
#ifndef MTK_CLI_LOAD_PLAN_H
#define MTK_CLI_LOAD_PLAN_H

#include "mtk/load.h"

/* One slice of a parameter: the box a rank holds. */
typedef struct plan_slice {
    int32_t rank;
    int32_t ndim;
    int64_t offset[MTK_MAX_DIMS];
    int64_t shape[MTK_MAX_DIMS];
} plan_slice;

/* One parameter of the plan (strings in the context's arena). */
typedef struct plan_param {
    const char *name;
    const char *placement; /* its JSON text ("Shard(0)", ["Shard(0)","Replicate()"]); "" when absent */
    mtk_dtype dtype;       /* MTK_DTYPE_UNDEFINED when absent */
    int32_t ndim;          /* -1 when "shape" is absent       */
    int64_t shape[MTK_MAX_DIMS];
    plan_slice *slices;
    int32_t nslices;
} plan_param;

typedef struct parallel_plan {
    const char *path;
    int32_t world_size;
    plan_param *params;
    int32_t nparams;
} parallel_plan;

/* Reads the plan at `path` into `plan` (arena).  False with
 * MTK_ERR_SYNTAX naming the file and the member when it is not a plan. */
bool plan_read(mtk_ctx *ctx, const char *path, parallel_plan *plan);

/* Checks the plan against `model` (on meta) for `world` ranks: the world
 * size, every name a tensor of the model, its shape and dtype when given,
 * every slice's rank in 0..world-1, its dims and its box inside the
 * tensor.  False with the context's error (the same on every rank). */
bool plan_check(mtk_ctx *ctx, const parallel_plan *plan, mtk_module *model, int32_t world);

/* The options of `mtk load` that a plan load uses. */
typedef struct plan_load_args {
    const char *model, *weights, *plan;
    mtk_model_resolve_options resolve;
    mtk_load_spec spec;
    bool json, verify;
    char **argv; /* the command's arguments as given, "load" first (NULL-terminated) */
} plan_load_args;

/* Runs `mtk load --plan` on this MPI rank.  In mtk-mpi
 * (mpi/load_plan_mpi.c): MPI_Init .. MPI_Finalize inside, loads the
 * rank's slices, gathers the per-rank reports to rank 0 which prints them
 * (and the --verify check); returns the exit status, the same on every
 * rank.  In mtk (load_plan_exec.c): executes mtk-mpi from mtk's own
 * directory with args->argv, returning only when it cannot. */
int plan_load_run(const plan_load_args *args);

#endif
