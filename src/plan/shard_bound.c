/* What a replayed stage peak is bound to be before it is replayed: the
 * search (shard_search.c) skips the replays of configurations whose
 * bound is already over the GPU's memory.  The earlier stages' saved
 * bytes a stage's points do not hold are the replay index's own
 * (shard_cost.c's replay_index_fill reads them from here). */
#include "plan/shard_internal.h"

const shard_point *shard_replay_points(const mtk_shard_analysis *a, const mtk_shard_options *o, int32_t *npoints)
{
    bool full = o->training && o->recompute == MTK_RECOMPUTE_FULL;
    bool selective = o->training && o->recompute == MTK_RECOMPUTE_SELECTIVE;
    *npoints = full ? a->npoints_full : selective ? a->npoints_selective : a->npoints;
    return full ? a->points_full : selective ? a->points_selective : a->points;
}

void shard_replay_before(const mtk_shard_analysis *a, const mtk_shard_plan *plan, int64_t *before)
{
    const mtk_shard_options *o = &plan->options;
    bool full = o->training && o->recompute == MTK_RECOMPUTE_FULL;
    bool selective = o->training && o->recompute == MTK_RECOMPUTE_SELECTIVE;
    int64_t sum = 0;
    for (int32_t s = 0; s < o->pp; s++) {
        if (s == 1) sum += a->units[SHARD_UNIT_PRE(a)].saved.replicated + a->units[SHARD_UNIT_PRE(a)].saved.sharded;
        /* an earlier layer keeps its saved activations (less its
           attention core's own under selective recompute), or under full
           recompute its checkpointed input */
        for (int32_t l = s > 0 ? plan->stage_first_layer[s - 1] : 0; s > 0 && l < plan->stage_first_layer[s]; l++) {
            const shard_unit *un = &a->units[l];
            sum += full ? un->input.replicated + un->input.sharded : un->saved.replicated + un->saved.sharded;
            if (selective) sum -= un->saved_attention.replicated + un->saved_attention.sharded;
        }
        before[s] = sum;
    }
}

void shard_unit_saved_max(const mtk_shard_analysis *a, const mtk_shard_options *o, int64_t *unit_max)
{
    int32_t n;
    const shard_point *points = shard_replay_points(a, o, &n);
    for (int32_t u = 0; u < a->nlayers + 2; u++) unit_max[u] = -1;
    for (int32_t i = 0; i < n; i++) {
        const shard_point *p = &points[i];
        if (p->phase == MTK_PHASE_OPTIMIZER || p->unit < 0) continue; /* the optimizer's */
        if (p->saved > unit_max[p->unit]) unit_max[p->unit] = p->saved;
    }
}

int64_t shard_stage_saved_floor(const mtk_shard_analysis *a, const mtk_shard_plan *plan, const int64_t *unit_max,
                                int64_t before, int32_t s)
{
    int32_t pp = plan->options.pp, tp = plan->options.tp;
    int64_t most = -1;
    /* the stage's layers, the embedding on the first stage, the head on
       the last: their points are the stage's */
    for (int32_t k = plan->stage_first_layer[s] - 1; k <= plan->stage_first_layer[s + 1]; k++) {
        int32_t u = k < plan->stage_first_layer[s] ? SHARD_UNIT_PRE(a)
                    : k == plan->stage_first_layer[s + 1] ? SHARD_UNIT_POST(a) : k;
        if ((u == SHARD_UNIT_PRE(a) && s != 0) || (u == SHARD_UNIT_POST(a) && s != pp - 1) || unit_max[u] < 0)
            continue;
        int64_t mine = unit_max[u] > before ? unit_max[u] - before : 0;
        if (mine > most) most = mine;
    }
    /* a slot's share of mine bytes on a rank is at least ceil(mine / tp),
       with or without sequence parallelism (replay_index_fill's scaled) */
    return most < 0 ? -1 : tp > 1 ? (most + tp - 1) / tp : most;
}
