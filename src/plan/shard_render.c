/* A parallel plan as JSON (docs/sharding.md) and as text. */
#include "plan/shard_internal.h"
#include "core/text.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

const char *mtk_collective_name(mtk_collective op)
{
    static const char *const names[] = { "all_reduce", "all_gather", "reduce_scatter", "all_to_all", "send", "recv" };
    return (unsigned)op < sizeof names / sizeof names[0] ? names[op] : "?";
}

static const char *placement_text(mtk_placement pl, char *buf, size_t cap)
{
    if (pl.kind == MTK_PLACEMENT_SHARD) snprintf(buf, cap, "Shard(%d)", (int)pl.dim);
    else if (pl.kind == MTK_PLACEMENT_STRIDED) snprintf(buf, cap, "_StridedShard(%d,%d)", (int)pl.dim, (int)pl.split_factor);
    else snprintf(buf, cap, "Replicate");
    return buf;
}

/* Whether `rank` holds part of p (any rank when rank < 0). */
static bool holds(const mtk_shard_param *p, int32_t rank)
{
    for (int32_t k = 0; rank >= 0 && k < p->nslices; k++)
        if (p->slices[k].rank == rank) return true;
    return rank < 0;
}

static cJSON *ints(const int64_t *v, int32_t n)
{
    cJSON *a = cJSON_CreateArray();
    for (int32_t i = 0; a && i < n; i++) cJSON_AddItemToArray(a, text_json_int(v[i]));
    return a;
}

static cJSON *breakdown_json(const mtk_memory_breakdown *m)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddItemToObject(o, "parameters", text_json_int(m->parameters));
    cJSON_AddItemToObject(o, "gradients", text_json_int(m->gradients));
    cJSON_AddItemToObject(o, "optimizer_states", text_json_int(m->optimizer_states));
    cJSON_AddItemToObject(o, "activations_saved", text_json_int(m->activations_saved));
    cJSON_AddItemToObject(o, "kv_cache", text_json_int(m->kv_cache));
    cJSON_AddItemToObject(o, "transient_at_peak", text_json_int(m->transient_at_peak));
    return o;
}

static cJSON *param_json(const mtk_shard_plan *plan, const mtk_shard_param *p, int32_t rank)
{
    char buf[64];
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", p->name);
    cJSON_AddItemToObject(o, "shape", ints(p->shape, p->ndim));
    cJSON_AddStringToObject(o, "dtype", mtk_dtype_name(p->dtype));
    cJSON_AddItemToObject(o, "style", p->style ? cJSON_CreateString(p->style) : cJSON_CreateNull());
    cJSON_AddStringToObject(o, "placement", placement_text(p->placement, buf, sizeof buf));
    cJSON_AddStringToObject(o, "mesh_dim", p->expert ? "ep" : "tp");
    cJSON_AddStringToObject(o, "dp_placement", p->dp_sharded ? "Shard(0)" : "Replicate");
    cJSON_AddNumberToObject(o, "stage", p->stage);
    cJSON *local = cJSON_CreateArray();
    for (int32_t k = 0; k < p->nlocal; k++)
        cJSON_AddItemToArray(local, ints(p->local_shapes + (size_t)k * (size_t)p->ndim, p->ndim));
    cJSON_AddItemToObject(o, "local_shapes", local);
    cJSON *slices = cJSON_CreateArray();
    for (int32_t k = 0; k < p->nslices; k++) {
        const mtk_shard_slice *sl = &p->slices[k];
        if (rank >= 0 && sl->rank != rank) continue;
        cJSON *s = cJSON_CreateObject();
        cJSON_AddNumberToObject(s, "rank", sl->rank);
        cJSON_AddItemToObject(s, "offset", ints(sl->parts[0].offset, p->ndim));
        cJSON_AddItemToObject(s, "shape", ints(sl->nparts > 1 ? sl->local : sl->parts[0].shape, p->ndim));
        if (sl->nparts > 1) {
            cJSON *parts = cJSON_CreateArray();
            for (int32_t b = 0; b < sl->nparts; b++) {
                cJSON *box = cJSON_CreateObject();
                cJSON_AddItemToObject(box, "offset", ints(sl->parts[b].offset, p->ndim));
                cJSON_AddItemToObject(box, "shape", ints(sl->parts[b].shape, p->ndim));
                cJSON_AddItemToArray(parts, box);
            }
            cJSON_AddItemToObject(s, "parts", parts);
        }
        cJSON_AddItemToArray(slices, s);
    }
    cJSON_AddItemToObject(o, "slices", slices);
    (void)plan;
    return o;
}

/* The FLOPs one micro-batch of stage s recomputes under the plan's
 * recompute (training only). */
static double stage_recompute(const mtk_shard_plan *plan, int32_t s)
{
    const mtk_shard_options *o = &plan->options;
    if (!o->training || !plan->stage_recompute_flops) return 0.0;
    return plan->stage_recompute_flops[(size_t)o->recompute * (size_t)o->pp + (size_t)s];
}

/* The step's forward and recomputed FLOPs over every rank: each stage's
 * per micro-batch, times the micro-batches and the data-parallel
 * replicas. */
static void step_flops(const mtk_shard_plan *plan, double *forward, double *recomputed)
{
    const mtk_shard_options *o = &plan->options;
    double k = (double)plan->micro_batches * (double)o->dp;
    *forward = *recomputed = 0.0;
    for (int32_t s = 0; s < o->pp; s++) {
        *forward += plan->stage_flops[s] * k;
        *recomputed += stage_recompute(plan, s) * k;
    }
}

char *mtk_shard_plan_json(mtk_ctx *ctx, const mtk_shard_plan *plan, int32_t rank)
{
    if (!ctx) return NULL;
    if (!plan) {
        mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "shard: NULL plan");
        return NULL;
    }
    const mtk_shard_options *o = &plan->options;
    static const char *const recompute[] = { "none", "selective", "full" };
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "model", plan->model);
    cJSON_AddStringToObject(root, "family", plan->family);
    cJSON_AddNumberToObject(root, "world_size", plan->world_size);
    cJSON *mesh = cJSON_CreateObject();
    cJSON_AddNumberToObject(mesh, "tp", o->tp);
    cJSON_AddNumberToObject(mesh, "pp", o->pp);
    cJSON_AddNumberToObject(mesh, "dp", o->dp);
    cJSON_AddNumberToObject(mesh, "ep", o->ep);
    cJSON_AddItemToObject(root, "mesh", mesh);
    cJSON *opts = cJSON_CreateObject();
    cJSON_AddStringToObject(opts, "mode", o->training ? "training" : "inference");
    cJSON_AddNumberToObject(opts, "zero", o->zero);
    cJSON_AddBoolToObject(opts, "fsdp", o->fsdp);
    cJSON_AddBoolToObject(opts, "sp", o->sp);
    cJSON_AddItemToObject(opts, "micro_batch", text_json_int(o->micro_batch));
    cJSON_AddItemToObject(opts, "global_batch", text_json_int(o->global_batch));
    cJSON_AddItemToObject(opts, "seq", text_json_int(o->seq));
    cJSON_AddStringToObject(opts, "recompute", recompute[o->recompute]);
    cJSON_AddStringToObject(opts, "dtype", mtk_dtype_name(o->dtype));
    cJSON_AddItemToObject(root, "options", opts);
    cJSON_AddItemToObject(root, "micro_batches", text_json_int(plan->micro_batches));
    cJSON_AddNumberToObject(root, "bubble", plan->bubble);
    double fwd_step, rc_step;
    step_flops(plan, &fwd_step, &rc_step);
    cJSON_AddNumberToObject(root, "recompute_flops", rc_step);
    cJSON *stages = cJSON_CreateArray();
    for (int32_t s = 0; s < o->pp; s++) {
        cJSON *st = cJSON_CreateObject();
        cJSON_AddNumberToObject(st, "stage", s);
        int64_t layers[2] = { plan->stage_first_layer[s], plan->stage_first_layer[s + 1] };
        cJSON_AddItemToObject(st, "layers", ints(layers, 2));
        cJSON_AddNumberToObject(st, "flops", plan->stage_flops[s]);
        cJSON_AddNumberToObject(st, "recompute_flops", stage_recompute(plan, s));
        cJSON_AddItemToArray(stages, st);
    }
    cJSON_AddItemToObject(root, "stages", stages);
    cJSON *params = cJSON_CreateArray();
    for (int32_t i = 0; i < plan->nparams; i++) {
        if (!holds(&plan->params[i], rank)) continue;
        cJSON_AddItemToArray(params, param_json(plan, &plan->params[i], rank));
    }
    cJSON_AddItemToObject(root, "parameters", params);
    cJSON *ranks = cJSON_CreateArray();
    for (int32_t r = 0; r < plan->world_size; r++) {
        const mtk_shard_rank *k = &plan->ranks[r];
        if (rank >= 0 && r != rank) continue;
        cJSON *ro = cJSON_CreateObject();
        cJSON_AddNumberToObject(ro, "rank", k->rank);
        cJSON_AddNumberToObject(ro, "stage", k->stage);
        cJSON_AddNumberToObject(ro, "tp", k->tp_index);
        cJSON_AddNumberToObject(ro, "dp", k->dp_index);
        cJSON_AddItemToObject(ro, "memory", breakdown_json(&k->memory));
        cJSON_AddItemToObject(ro, "peak_bytes", text_json_int(k->peak_bytes));
        cJSON_AddNumberToObject(ro, "in_flight", k->in_flight);
        cJSON_AddItemToObject(ro, "at_peak", breakdown_json(&k->at_peak));
        cJSON_AddItemToArray(ranks, ro);
    }
    cJSON_AddItemToObject(root, "ranks", ranks);
    cJSON *comms = cJSON_CreateArray();
    for (int32_t i = 0; i < plan->ncomms; i++) {
        const mtk_shard_comm *c = &plan->comms[i];
        if (rank >= 0 && c->stage != rank / (o->tp * o->dp)) continue;
        cJSON *co = cJSON_CreateObject();
        cJSON_AddStringToObject(co, "op", mtk_collective_name(c->op));
        cJSON_AddStringToObject(co, "group", c->group);
        cJSON_AddNumberToObject(co, "stage", c->stage);
        cJSON_AddStringToObject(co, "what", c->what);
        cJSON_AddItemToObject(co, "count", text_json_int(c->count));
        cJSON_AddItemToObject(co, "bytes", text_json_int(c->bytes));
        cJSON_AddItemToArray(comms, co);
    }
    cJSON_AddItemToObject(root, "communication", comms);
    cJSON *notes = cJSON_CreateArray();
    for (int32_t i = 0; i < plan->nnotes; i++) cJSON_AddItemToArray(notes, cJSON_CreateString(plan->notes[i]));
    cJSON_AddItemToObject(root, "notes", notes);
    char *text = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    char *out = text ? mtk_ctx_strdup(ctx, text) : NULL;
    cJSON_free(text);
    if (!out) mtk_error(ctx, MTK_ERR_OUT_OF_MEMORY, "shard: out of memory rendering the plan");
    return out;
}

/* "model.layers.12.mlp.up_proj.weight" -> "model.layers.*.mlp.up_proj.weight" */
static void fold_layer(const char *name, char *out, size_t cap)
{
    size_t j = 0;
    for (size_t i = 0; name[i] && j + 1 < cap;) {
        if ((i == 0 || name[i - 1] == '.') && name[i] >= '0' && name[i] <= '9') {
            size_t k = i;
            while (name[k] >= '0' && name[k] <= '9') k++;
            if (name[k] == '.' || name[k] == '\0') {
                out[j++] = '*';
                i = k;
                continue;
            }
        }
        out[j++] = name[i++];
    }
    out[j] = '\0';
}

char *mtk_shard_plan_text(mtk_ctx *ctx, const mtk_shard_plan *plan, int32_t rank)
{
    if (!ctx) return NULL;
    if (!plan) {
        mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "shard: NULL plan");
        return NULL;
    }
    const mtk_shard_options *o = &plan->options;
    mtk_text t = { .ctx = ctx };
    char a[TEXT_NUMBER_CAP], b[TEXT_NUMBER_CAP], c[TEXT_NUMBER_CAP], d[TEXT_NUMBER_CAP], e[TEXT_NUMBER_CAP],
        f[TEXT_NUMBER_CAP];
    mtk_text_printf(&t, "%s (%s), %s, %s, micro-batch %" PRId64 " x %" PRId64 " tokens, global batch %" PRId64 "\n",
                    plan->model, plan->family, o->training ? "training" : "inference", mtk_dtype_name(o->dtype),
                    o->micro_batch, o->seq, o->global_batch);
    mtk_text_printf(&t, "mesh: tp %d x pp %d x dp %d = %d ranks (ep %d)%s%s%s\n", o->tp, o->pp, o->dp,
                    plan->world_size, o->ep, o->zero ? ", ZeRO-" : "", o->zero ? (o->zero == 1 ? "1" : o->zero == 2 ? "2" : "3") : "",
                    o->fsdp ? ", FSDP" : "");
    mtk_text_printf(&t, "micro-batches per step: %" PRId64 ", pipeline bubble (1F1B): %.1f%%\n", plan->micro_batches,
                    100.0 * plan->bubble);
    double fwd_step, rc_step;
    step_flops(plan, &fwd_step, &rc_step);
    if (o->training && o->recompute != MTK_RECOMPUTE_NONE)
        mtk_text_printf(&t, "recompute (%s): %.6g FLOPs a step rerun in the backward, %.1f%% of the forward's %.6g\n",
                        o->recompute == MTK_RECOMPUTE_FULL ? "full" : "selective", rc_step,
                        fwd_step > 0 ? 100.0 * rc_step / fwd_step : 0.0, fwd_step);
    mtk_text_printf(&t, "\n");
    mtk_text_printf(&t, "%-6s %-8s %12s %12s %12s %12s %12s %12s\n", "stage", "layers", "params", "grads", "optimizer",
                    "activations", "transient", "peak");
    for (int32_t s = 0; s < o->pp; s++) {
        const mtk_shard_rank *k = &plan->ranks[s * o->tp * o->dp];
        for (int32_t r = s * o->tp * o->dp; r < (s + 1) * o->tp * o->dp; r++)
            if (plan->ranks[r].peak_bytes > k->peak_bytes) k = &plan->ranks[r];
        char layers[32];
        snprintf(layers, sizeof layers, "%d-%d", (int)plan->stage_first_layer[s], (int)plan->stage_first_layer[s + 1] - 1);
        const mtk_memory_breakdown *m = &k->at_peak; /* sums to the peak */
        mtk_text_printf(&t, "%-6d %-8s %12s %12s %12s %12s %12s %12s\n", (int)s, layers,
                        text_bytes((uint64_t)m->parameters, a, sizeof a), text_bytes((uint64_t)m->gradients, b, sizeof b),
                        text_bytes((uint64_t)m->optimizer_states, c, sizeof c),
                        text_bytes((uint64_t)m->activations_saved, d, sizeof d),
                        text_bytes((uint64_t)m->transient_at_peak, e, sizeof e),
                        text_bytes((uint64_t)k->peak_bytes, f, sizeof f));
    }
    mtk_text_printf(&t, "(each stage's largest rank, at its peak)\n\ncommunication per step, per rank:\n");
    for (int32_t i = 0; i < plan->ncomms; i++) {
        const mtk_shard_comm *cm = &plan->comms[i];
        if (rank >= 0 && cm->stage != rank / (o->tp * o->dp)) continue;
        mtk_text_printf(&t, "  stage %-3d %-14s %-3s %8" PRId64 " x  %12s  %s\n", (int)cm->stage, mtk_collective_name(cm->op),
                        cm->group, cm->count, text_bytes((uint64_t)cm->bytes, a, sizeof a), cm->what);
    }
    mtk_text_printf(&t, "\nparameters (layers folded)%s:\n", rank >= 0 ? ", local shapes of this rank" : "");
    for (int32_t i = 0; i < plan->nparams; i++) {
        const mtk_shard_param *p = &plan->params[i];
        char folded[256], pl[64], shape[96] = "", local[96] = "";
        fold_layer(p->name, folded, sizeof folded);
        if (!holds(p, rank)) continue;
        if (p->layer >= 0 && p->layer != plan->stage_first_layer[p->stage]) continue; /* one layer a stage */
        size_t n = 0;
        for (int32_t dd = 0; dd < p->ndim; dd++)
            n += (size_t)snprintf(shape + n, sizeof shape - n, "%s%" PRId64, dd ? "x" : "", p->shape[dd]);
        const int64_t *ls = p->local_shapes;
        if (rank >= 0) {
            for (int32_t k = 0; k < p->nslices; k++)
                if (p->slices[k].rank == rank) ls = p->slices[k].local;
        }
        n = 0;
        for (int32_t dd = 0; dd < p->ndim; dd++)
            n += (size_t)snprintf(local + n, sizeof local - n, "%s%" PRId64, dd ? "x" : "", ls[dd]);
        mtk_text_printf(&t, "  %-52s %-14s %-22s %-16s -> %s\n", folded, shape, p->style ? p->style : "-",
                        placement_text(p->placement, pl, sizeof pl), local);
    }
    for (int32_t i = 0; i < plan->nnotes; i++) mtk_text_printf(&t, "note: %s\n", plan->notes[i]);
    char *out = mtk_text_finish(&t);
    if (!out) mtk_error(ctx, MTK_ERR_OUT_OF_MEMORY, "shard: out of memory rendering the plan");
    return out;
}
