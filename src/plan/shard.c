/* The parallel planner's analysis: one traced forward of a model (with
 * its loss for training) read once for what every configuration needs:
 * the decoder layers and their FLOPs, which parameters the family's
 * tensor- and expert-parallel rules name, what autograd saves per layer
 * split into the part tensor parallelism divides and the part it does
 * not, and the modules that communicate.  shard_eval.c makes a plan of
 * one configuration from it. */
#include "plan/shard_internal.h"
#include "plan/graph.h"
#include "plan/memory_internal.h"

#include "mtk/nn.h"

#include <ctype.h>
#include <string.h>

void mtk_shard_options_init(mtk_shard_options *o)
{
    if (!o) return;
    memset(o, 0, sizeof *o);
    o->tp = o->pp = o->dp = o->ep = 1;
    o->micro_batch = o->seq = 1;
    o->training = true;
    o->dtype = MTK_DTYPE_UNDEFINED;
    o->device_kind = MTK_DEVICE_KIND_CUDA;
}

static char *dup_n(mtk_ctx *ctx, const char *s, size_t n)
{
    char *out = mtk_ctx_alloc(ctx, n + 1);
    if (out) memcpy(out, s, n);
    return out;
}

/* `pattern` against `path`, component by component; `*` matches a layer
 * number (a run of digits). */
static bool pattern_matches(const char *pattern, const char *path)
{
    while (*pattern && *path) {
        if (*pattern == '*') {
            if (!isdigit((unsigned char)*path)) return false;
            while (isdigit((unsigned char)*path)) path++;
            pattern++;
            continue;
        }
        if (*pattern != *path) return false;
        pattern++, path++;
    }
    return !*pattern && !*path;
}

bool shard_rule_matches(const mtk_shard_analysis *a, const mtk_tp_rule *rule, const char *path)
{
    if (rule->root) return pattern_matches(rule->pattern, path);
    size_t n = strlen(a->base_prefix);
    return strncmp(path, a->base_prefix, n) == 0 && pattern_matches(rule->pattern, path + n);
}

shard_split shard_style_split(mtk_tp_style style, const char *param_name, int32_t ndim)
{
    const char *leaf = strrchr(param_name, '.');
    leaf = leaf ? leaf + 1 : param_name;
    switch (style) {
    case MTK_TP_COLWISE:
    case MTK_TP_PACKED_COLWISE: return SHARD_SPLIT_OUT;
    case MTK_TP_COLWISE_GATHER_OUTPUT:
    case MTK_TP_EMBEDDING_ROWWISE: return SHARD_SPLIT_GATHERED;
    case MTK_TP_ROWWISE:
    case MTK_TP_ROWWISE_SPLIT_INPUT: return strcmp(leaf, "bias") == 0 ? SHARD_SPLIT_NONE : SHARD_SPLIT_IN;
    case MTK_TP_PACKED_ROWWISE: return ndim == 1 ? SHARD_SPLIT_NONE : SHARD_SPLIT_IN;
    default: return SHARD_SPLIT_NONE;
    }
}

/* The first rule of `rules` naming `path`, -1 if none. */
static int32_t find_rule(const mtk_shard_analysis *a, const mtk_tp_rule *rules, const char *path)
{
    for (int32_t i = 0; rules && rules[i].pattern; i++)
        if (shard_rule_matches(a, &rules[i], path)) return i;
    return -1;
}

/* A parameter's rule: one naming the parameter itself, else its module. */
static int32_t param_rule(const mtk_shard_analysis *a, const mtk_tp_rule *rules, const char *name)
{
    int32_t r = find_rule(a, rules, name);
    if (r >= 0) return r;
    const char *dot = strrchr(name, '.');
    if (!dot) return -1;
    char *module = dup_n(a->ctx, name, (size_t)(dot - name));
    return module ? find_rule(a, rules, module) : -1;
}

/* The layer a dotted name lies in (the layer's own name or below it), -1. */
static int32_t layer_of(const char *const *layer_names, int32_t nlayers, const char *name)
{
    for (int32_t l = 0; l < nlayers; l++) {
        size_t n = strlen(layer_names[l]);
        if (strncmp(name, layer_names[l], n) == 0 && (name[n] == '.' || name[n] == '\0')) return l;
    }
    return -1;
}

static void add_bytes(shard_bytes *b, int64_t bytes, bool sharded)
{
    if (sharded) b->sharded += bytes;
    else b->replicated += bytes;
}

/* The config's head counts, vocabulary and experts. */
static bool read_config(mtk_ctx *ctx, const char *model, mtk_shard_analysis *a)
{
    const mtk_builtin_model *b = mtk_builtin_model_find(model);
    mtk_model_config *c = NULL;
    if (b) c = mtk_model_config_parse(ctx, b->config_json, b->name);
    else if (!mtk_demo_model_find(model)) c = mtk_model_config_load(ctx, model);
    if (!c) return mtk_ctx_status(ctx) == MTK_OK;
    a->heads = mtk_model_config_int(c, "num_attention_heads", 0);
    a->kv_heads = mtk_model_config_int(c, "num_key_value_heads", a->heads);
    a->vocab = mtk_model_config_int(c, "vocab_size", 0);
    a->hidden = mtk_model_config_int(c, "hidden_size", 0);
    a->experts = mtk_model_config_int(c, "num_local_experts", 0);
    if (!a->experts) a->experts = mtk_model_config_int(c, "num_experts", 0);
    if (!a->experts) a->experts = mtk_model_config_int(c, "n_routed_experts", 0);
    a->top_k = mtk_model_config_int(c, "num_experts_per_tok", a->experts ? 1 : 0);
    mtk_model_config_free(c);
    return true;
}

/* Which tensors tensor parallelism shards: a node's outputs are sharded
 * when it reads a colwise parameter or a sharded activation, and not when
 * it reads a rowwise, gathered or vocab-parallel one (its partial output
 * is reduced). */
static bool *propagate(mtk_shard_analysis *a, const mtk_graph *g, const int8_t *storage_split)
{
    int32_t nt = mtk_graph_tensor_count(g);
    bool *sharded = mtk_ctx_alloc(a->ctx, (size_t)(nt ? nt : 1) * sizeof *sharded);
    if (!sharded) return NULL;
    for (int32_t n = 0; n < mtk_graph_node_count(g); n++) {
        const mtk_graph_node *node = mtk_graph_node_at(g, n);
        bool reads_out = false, reduces = false, act = false;
        for (int32_t i = 0; i < node->ninputs; i++) {
            int32_t t = node->inputs[i];
            if (t < 0) continue;
            int8_t split = storage_split[mtk_graph_tensor_at(g, t)->storage];
            reads_out |= split == SHARD_SPLIT_OUT;
            reduces |= split == SHARD_SPLIT_IN || split == SHARD_SPLIT_GATHERED;
            act |= sharded[t];
        }
        for (int32_t k = 0; k < node->noutputs; k++)
            if (node->outputs[k] >= 0) sharded[node->outputs[k]] = !reduces && (reads_out || act);
    }
    return sharded;
}

/* Per node of the trace: its unit, whether its output is sharded, its
 * FLOPs and forward and backward working sets; per saved storage (each
 * once, parameters left out): its unit, split and bytes. */
static bool collect_nodes(mtk_shard_analysis *a, const mtk_graph *g, const int32_t *module_layer,
                          const bool *sharded, shard_raw *raw)
{
    int32_t ns = mtk_graph_storage_count(g), nn = mtk_graph_node_count(g);
    bool *counted = mtk_ctx_alloc(a->ctx, (size_t)(ns ? ns : 1) * sizeof *counted);
    raw->node_unit = mtk_ctx_alloc_uninit(a->ctx, (size_t)(nn ? nn : 1) * sizeof *raw->node_unit);
    raw->node_sharded = mtk_ctx_alloc_uninit(a->ctx, (size_t)(nn ? nn : 1) * sizeof *raw->node_sharded);
    raw->flops = mtk_ctx_alloc_uninit(a->ctx, 3 * (size_t)(nn ? nn : 1) * sizeof *raw->flops);
    size_t cap = 1; /* saved entries: at most every node's */
    for (int32_t n = 0; n < nn; n++) cap += (size_t)mtk_graph_node_at(g, n)->nsaved;
    raw->saved_unit = mtk_ctx_alloc_uninit(a->ctx, cap * sizeof *raw->saved_unit);
    raw->saved_flags = mtk_ctx_alloc_uninit(a->ctx, cap * sizeof *raw->saved_flags);
    raw->saved = mtk_ctx_alloc_uninit(a->ctx, cap * sizeof *raw->saved);
    if (!counted || !raw->node_unit || !raw->node_sharded || !raw->flops || !raw->saved_unit || !raw->saved_flags ||
        !raw->saved)
        return false;
    raw->nnodes = nn;
    raw->ws = raw->flops + nn; /* [fwd, bwd] per node */
    /* attention's cores (selective recompute's units): what they alone
       save and made themselves is what selective recompute drops */
    mem_graph mg;
    int32_t *core = mtk_ctx_alloc_uninit(a->ctx, (size_t)(nn ? nn : 1) * sizeof *core);
    bool *kept_outside = mtk_ctx_alloc(a->ctx, (size_t)(ns ? ns : 1) * sizeof *kept_outside);
    if (!core || !kept_outside || !mem_graph_of(a->ctx, g, &mg)) return false;
    mem_attention_cores(&mg, core);
    for (int32_t n = 0; n < nn; n++) {
        const mtk_graph_node *node = mtk_graph_node_at(g, n);
        for (int32_t i = 0; core[n] < 0 && i < node->nsaved; i++) {
            int32_t st = mtk_graph_saved_entry_storage(g, node, &node->saved[i]);
            if (st >= 0) kept_outside[st] = true;
        }
    }
    bool seen_layer = false;
    for (int32_t n = 0; n < nn; n++) {
        const mtk_graph_node *node = mtk_graph_node_at(g, n);
        int32_t layer = node->module >= 0 ? module_layer[node->module] : -1;
        seen_layer |= layer >= 0;
        int32_t u = layer >= 0 ? layer : seen_layer ? SHARD_UNIT_POST(a) : SHARD_UNIT_PRE(a);
        raw->node_unit[n] = u;
        raw->flops[n] = node->flops;
        bool out_sharded = node->noutputs > 0 && node->outputs[0] >= 0 && sharded[node->outputs[0]];
        raw->node_sharded[n] = out_sharded;
        for (int32_t i = 0; i < node->nsaved; i++) {
            int32_t st = mtk_graph_saved_entry_storage(g, node, &node->saved[i]);
            bool sh = out_sharded, attention = core[n] >= 0;
            if (st >= 0) {
                const mtk_graph_storage *s = mtk_graph_storage_at(g, st);
                if (counted[st] || s->kind == MTK_STORAGE_PARAMETER) continue;
                counted[st] = true;
                sh = sharded[s->base];
                int32_t made = s->base >= 0 ? mtk_graph_tensor_at(g, s->base)->producer : -1;
                attention = attention && !kept_outside[st] && made >= 0 && core[made] == core[n];
            }
            raw->saved_unit[raw->nsaved] = u;
            raw->saved_flags[raw->nsaved] = (uint8_t)(sh | (attention << 1));
            raw->saved[raw->nsaved++] = mtk_graph_saved_entry_bytes(g, node, &node->saved[i]);
        }
        int64_t fwd = node->transient_bytes, bwd = 0;
        for (int32_t k = 0; k < node->noutputs; k++) {
            int32_t t = node->outputs[k];
            if (t < 0) continue;
            const mtk_graph_tensor *tt = mtk_graph_tensor_at(g, t);
            if (tt->view_of < 0) fwd += mtk_graph_storage_at(g, tt->storage)->nbytes;
        }
        for (int32_t k = 0; k < node->nbackward; k++) {
            /* a parameter's gradient becomes its .grad: a model state */
            int32_t i = node->backward[k].grad_of, t = i >= 0 && i < node->ninputs ? node->inputs[i] : -1;
            if (t >= 0 && mtk_graph_storage_at(g, mtk_graph_tensor_at(g, t)->storage)->kind == MTK_STORAGE_PARAMETER)
                continue;
            bwd += node->backward[k].nbytes;
        }
        raw->ws[2 * n] = fwd, raw->ws[2 * n + 1] = bwd;
    }
    return true;
}

/* Saved bytes, working sets and FLOPs per unit from the nodes' numbers. */
static void measure_units(mtk_shard_analysis *a, const shard_raw *raw)
{
    for (int32_t u = 0; u < a->nlayers + 2; u++) {
        shard_bytes input = a->units[u].input;
        memset(&a->units[u], 0, sizeof a->units[u]);
        a->units[u].input = input;
    }
    int64_t *best = mtk_ctx_alloc(a->ctx, (size_t)(a->nlayers + 2) * sizeof *best);
    if (!best) return;
    for (int32_t n = 0; n < raw->nnodes; n++) {
        int32_t u = raw->node_unit[n];
        shard_unit *unit = &a->units[u];
        unit->flops += (double)raw->flops[n];
        for (int32_t r = MTK_RECOMPUTE_SELECTIVE; raw->node_recomputed && r <= MTK_RECOMPUTE_FULL; r++)
            if (raw->node_recomputed[n] & (1u << r)) unit->recompute_flops[r] += (double)raw->flops[n];
        int64_t fwd = raw->ws[2 * n], bwd = raw->ws[2 * n + 1];
        int64_t ws = a->options.training && bwd > fwd ? bwd : fwd;
        if (ws > best[u]) {
            best[u] = ws;
            unit->transient = (shard_bytes){ 0, 0 };
            add_bytes(&unit->transient, ws, raw->node_sharded[n]);
        }
    }
    for (int32_t i = 0; i < raw->nsaved; i++) {
        shard_unit *unit = &a->units[raw->saved_unit[i]];
        bool sh = raw->saved_flags[i] & 1;
        add_bytes(&unit->saved, raw->saved[i], sh);
        if (raw->saved_flags[i] & 2) add_bytes(&unit->saved_attention, raw->saved[i], sh);
    }
}

/* Modules the plan makes communicate, with the bytes of one call. */
static bool find_sites(mtk_shard_analysis *a, const mtk_trace *tr, const int32_t *module_layer, int32_t first_layer)
{
    int32_t nm = mtk_trace_module_count(tr);
    a->sites = mtk_ctx_alloc(a->ctx, (size_t)(nm ? 2 * nm : 1) * sizeof *a->sites);
    if (!a->sites) return false;
    for (int32_t m = 1; m < nm; m++) {
        const mtk_trace_module *tm = mtk_trace_module_at(tr, m);
        const mtk_tp_rule *rules[2] = { a->plan ? a->plan->tp : NULL, a->plan ? a->plan->ep : NULL };
        for (int32_t k = 0; k < 2; k++) {
            int32_t r = find_rule(a, rules[k], tm->name);
            if (r < 0) continue;
            shard_site *s = &a->sites[a->nsites++];
            s->style = rules[k][r].style;
            s->unit = module_layer[m] >= 0 ? module_layer[m] : m < first_layer ? SHARD_UNIT_PRE(a) : SHARD_UNIT_POST(a);
            s->in_bytes = tm->ninputs > 0 && tm->inputs[0] ? (int64_t)mtk_tensor_nbytes(tm->inputs[0]) : 0;
            s->out_bytes = tm->noutputs > 0 && tm->outputs[0] ? (int64_t)mtk_tensor_nbytes(tm->outputs[0]) : 0;
            if (tm->noutputs > 0 && tm->outputs[0] && tm->outputs[0]->ndim > 0)
                s->out_features = tm->outputs[0]->shape[tm->outputs[0]->ndim - 1];
            for (int32_t p = 0; p < mtk_module_param_count(tm->module); p++) {
                mtk_tensor *t = mtk_module_param_at(tm->module, p, NULL);
                if (t) s->param_bytes += (int64_t)mtk_tensor_nbytes(t);
            }
        }
    }
    return true;
}

/* Whether point q covers p: the same unit and phase, and no fewer bytes
 * of each kind (so p never makes a larger peak, whatever the scales). */
static bool covers(const shard_point *q, const shard_point *p)
{
    return q->unit == p->unit && q->phase == p->phase && q->saved >= p->saved && q->other >= p->other &&
           q->grads >= p->grads;
}

/* One replay of the traced step as mtk memory makes it: training (AdamW,
 * its second step) without recompute, with gradient checkpointing of each
 * layer (full) or of each attention core (selective), or inference's
 * forward under no_grad. */
static mtk_memory_plan *replay_one(mtk_shard_analysis *a, const mtk_plan_model *pm, mtk_shard_recompute recompute,
                                   uint8_t *recomputed)
{
    const mtk_graph *g = pm->graph;
    bool training = a->options.training;
    mem_graph mg;
    if (!mem_graph_of(a->ctx, g, &mg)) return NULL;
    int32_t *keep = mtk_ctx_alloc(a->ctx, sizeof *keep);
    if (!keep) return NULL;
    mg.keep = keep;
    mg.nkeep = 0;
    if (training) {
        mg.loss = keep[mg.nkeep++] = mtk_graph_tensor_id(g, pm->loss);
    } else {
        mg.loss = -1;
        if (pm->output) keep[mg.nkeep++] = mtk_graph_tensor_id(g, pm->output);
    }
    mg.units = pm->layers;
    mg.nunits = pm->nlayers;
    mg.attention_cores = recompute == MTK_RECOMPUTE_SELECTIVE;
    mg.recomputed = recomputed;
    /* a node's own peak (a backward node's gradients with its saved
       tensors still held: the training step's, often); inference keeps
       the states after each node, which FSDP's no_grad rule was fitted
       on */
    mg.node_peaks = training;
    mtk_memory_options mo;
    mtk_memory_options_init(&mo);
    mo.mode = training ? MTK_MEMORY_TRAINING : MTK_MEMORY_INFERENCE;
    mo.optimizer = MTK_OPTIMIZER_ADAMW;
    mo.checkpointing = recompute != MTK_RECOMPUTE_NONE;
    mo.dtype = a->dtype;
    mo.device_kind = a->options.device_kind;
    mo.batch = a->options.micro_batch;
    mo.seq = mo.decoder_seq = a->options.seq;
    mtk_memory_plan *plan = mtk_ctx_alloc(a->ctx, sizeof *plan);
    if (!plan || !mem_replay(a->ctx, &mg, &mo, plan)) return NULL;
    return plan;
}

/* The step as mtk memory replays it, each timeline point tagged with the
 * unit of its node: what the evaluation lays FSDP's gathers and the
 * ranks' shares over.  Training replays it three times, without gradient
 * checkpointing, with each layer checkpointed (full recompute) and with
 * each attention core (selective), and marks the nodes each recompute
 * reruns (raw->node_recomputed); inference once, its forward. */
static bool replay_points(mtk_shard_analysis *a, const mtk_plan_model *pm, shard_raw *raw)
{
    int32_t nn = raw->nnodes, runs = a->options.training ? 3 : 1;
    const int32_t *node_unit = raw->node_unit;
    const mtk_shard_recompute modes[3] = { MTK_RECOMPUTE_NONE, MTK_RECOMPUTE_FULL, MTK_RECOMPUTE_SELECTIVE };
    mtk_memory_plan *plans[3];
    int32_t nt = 0;
    uint8_t *once = mtk_ctx_alloc_uninit(a->ctx, (size_t)(nn ? nn : 1));
    raw->node_recomputed = mtk_ctx_alloc(a->ctx, (size_t)(nn ? nn : 1));
    if (!once || !raw->node_recomputed) return false;
    for (int32_t r = 0; r < runs; r++) {
        memset(once, 0, (size_t)(nn ? nn : 1));
        if (!(plans[r] = replay_one(a, pm, modes[r], modes[r] != MTK_RECOMPUTE_NONE ? once : NULL))) return false;
        nt += plans[r]->ntimeline;
        for (int32_t n = 0; modes[r] != MTK_RECOMPUTE_NONE && n < nn; n++)
            if (once[n]) raw->node_recomputed[n] |= (uint8_t)(1u << modes[r]);
    }
    if (nt < 1) nt = 1;
    raw->point_unit = mtk_ctx_alloc_uninit(a->ctx, (size_t)nt * sizeof *raw->point_unit);
    raw->point_phase = mtk_ctx_alloc_uninit(a->ctx, (size_t)nt * sizeof *raw->point_phase);
    raw->point_bytes = mtk_ctx_alloc_uninit(a->ctx, 4 * (size_t)nt * sizeof *raw->point_bytes);
    a->points = mtk_ctx_alloc(a->ctx, (size_t)nt * sizeof *a->points);
    a->points_full = mtk_ctx_alloc(a->ctx, (size_t)nt * sizeof *a->points_full);
    a->points_selective = mtk_ctx_alloc(a->ctx, (size_t)nt * sizeof *a->points_selective);
    if (!raw->point_unit || !raw->point_phase || !raw->point_bytes || !a->points || !a->points_full ||
        !a->points_selective)
        return false;
    for (int32_t r = 0; r < runs; r++) {
        const mtk_memory_plan *plan = plans[r];
        for (int32_t i = 0; i < plan->ntimeline; i++) {
            const mtk_memory_point *t = &plan->timeline[i];
            if (t->phase == MTK_PHASE_SETUP || t->phase == MTK_PHASE_ZERO_GRAD) continue;
            int32_t k = raw->npoints++;
            raw->point_unit[k] = t->node >= 0 && t->node < nn ? node_unit[t->node] : -1;
            raw->point_phase[k] = (int32_t)t->phase;
            int64_t *b = &raw->point_bytes[4 * k];
            b[0] = t->saved_bytes, b[1] = t->grad_bytes, b[2] = t->live_bytes, b[3] = t->model_bytes;
        }
        raw->run_end[r] = raw->npoints;
    }
    for (int32_t r = runs; r < 3; r++) raw->run_end[r] = raw->npoints;
    return true;
}

/* The raw timeline's points [from, to) into out (*n of them): points a
 * same-unit, same-phase point covers dropped, except the state after a
 * unit's last node before a layer's (where FSDP2's hooks of the layer
 * run, shard_stage_moments), which ends its unit's points, an entry if
 * covered. */
static void finish_points(const shard_raw *raw, int32_t nlayers, int32_t from, int32_t to, shard_point *out,
                          int32_t *n)
{
    *n = 0;
    for (int32_t i = from; i < to; i++) {
        const int64_t *b = &raw->point_bytes[4 * i];
        shard_point p = {
            .unit = raw->point_unit[i], .phase = (int16_t)raw->point_phase[i], .saved = b[0], .grads = b[1],
            .other = b[2] - b[3] - b[1] - b[0],
        };
        if (p.other < 0) p.other = 0;
        bool covered = false;
        for (int32_t k = *n - 1; k >= 0 && !covered && out[k].unit == p.unit; k--) {
            covered = covers(&out[k], &p);
            if (!covered && covers(&p, &out[k])) out[k] = out[--*n];
        }
        int32_t next = i + 1 < to ? raw->point_unit[i + 1] : -1;
        p.entry = covered;
        if (!covered || (next != p.unit && next >= 0 && next < nlayers)) out[(*n)++] = p;
    }
}

void shard_analysis_finish(mtk_shard_analysis *a)
{
    const shard_raw *raw = a->raw;
    for (int32_t l = 0; l < a->nlayers; l++) a->units[l].input.replicated = raw->input[l];
    measure_units(a, raw);
    for (int32_t i = 0; i < a->nsites; i++) a->sites[i].in_bytes = raw->site[2 * i], a->sites[i].out_bytes = raw->site[2 * i + 1];
    a->boundary_bytes = raw->boundary;
    a->kv_layer_bytes = raw->kv_layer;
    if (a->points) {
        finish_points(raw, a->nlayers, 0, raw->run_end[0], a->points, &a->npoints);
        finish_points(raw, a->nlayers, raw->run_end[0], raw->run_end[1], a->points_full, &a->npoints_full);
        finish_points(raw, a->nlayers, raw->run_end[1], raw->run_end[2], a->points_selective, &a->npoints_selective);
    }
}

mtk_shard_analysis *mtk_shard_analyze(mtk_ctx *ctx, const char *model, const mtk_shard_options *o)
{
    if (!ctx) return NULL;
    if (!model || !o) {
        mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "shard: NULL model or options");
        return NULL;
    }
    if (o->micro_batch < 1 || o->seq < 1) {
        mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "shard: the micro-batch (%lld) and sequence length (%lld) must be "
                  "positive", (long long)o->micro_batch, (long long)o->seq);
        return NULL;
    }
    mtk_shard_analysis *a = mtk_ctx_alloc(ctx, sizeof *a);
    if (!a) return NULL;
    a->ctx = ctx;
    a->model = model;
    a->options = *o;
    if (!read_config(ctx, model, a)) return NULL;
    mtk_plan_trace_options to = {
        .batch = o->micro_batch, .seq = o->seq, .dtype = o->dtype, .attention = "sdpa",
        .device_kind = (mtk_device_kind)o->device_kind, .with_loss = o->training, .training = o->training,
        .decoder_seq = o->seq,
    };
    mtk_plan_model *pm = mtk_plan_trace_model(ctx, model, &to);
    if (!pm) return NULL;
    a->family = pm->info.family;
    a->dtype = pm->info.dtype;
    a->plan = mtk_model_tp_plan_find(a->family);
    const mtk_trace *tr = pm->trace;
    int32_t nm = mtk_trace_module_count(tr);
    a->nlayers = pm->nlayers;
    if (a->nlayers < 1) {
        mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "shard: %s has no decoder layers to split", model);
        return NULL;
    }
    const char **layer_names = mtk_ctx_alloc(ctx, (size_t)a->nlayers * sizeof *layer_names);
    int32_t *module_layer = mtk_ctx_alloc(ctx, (size_t)nm * sizeof *module_layer);
    a->units = mtk_ctx_alloc(ctx, (size_t)(a->nlayers + 2) * sizeof *a->units);
    if (!layer_names || !module_layer || !a->units) return NULL;
    for (int32_t l = 0; l < a->nlayers; l++) layer_names[l] = mtk_trace_module_at(tr, pm->layers[l])->name;
    for (int32_t m = 0; m < nm; m++) module_layer[m] = layer_of(layer_names, a->nlayers, mtk_trace_module_at(tr, m)->name);
    /* "model.layers.0" -> "model.": where the base model's rules apply */
    const char *first = layer_names[0], *dot = strrchr(first, '.');
    const char *cut = first;
    for (const char *p = first; dot && p < dot; p++)
        if (*p == '.') cut = p + 1;
    a->base_prefix = dup_n(ctx, first, (size_t)(cut - first));
    shard_raw *raw = mtk_ctx_alloc(ctx, sizeof *raw);
    if (!raw) return NULL;
    a->raw = raw;
    raw->graph = pm->graph;
    raw->input = mtk_ctx_alloc(ctx, (size_t)a->nlayers * sizeof *raw->input);
    if (!raw->input) return NULL;
    const mtk_trace_module *l0 = mtk_trace_module_at(tr, pm->layers[0]);
    raw->boundary = l0->noutputs > 0 ? (int64_t)mtk_tensor_nbytes(l0->outputs[0]) : 0;
    for (int32_t l = 0; l < a->nlayers; l++) {
        const mtk_trace_module *lm = mtk_trace_module_at(tr, pm->layers[l]);
        if (lm->ninputs > 0 && lm->inputs[0]) raw->input[l] = (int64_t)mtk_tensor_nbytes(lm->inputs[0]);
    }
    /* parameters: unit and rules */
    mtk_named_tensor *named;
    int32_t np = mtk_module_named_parameters(pm->model, &named);
    if (np < 0) return NULL;
    a->params = mtk_ctx_alloc(ctx, (size_t)(np ? np : 1) * sizeof *a->params);
    if (!a->params || !a->base_prefix) return NULL;
    a->nparams = np;
    const mtk_graph *g = pm->graph;
    int32_t ns = mtk_graph_storage_count(g);
    int8_t *storage_split = mtk_ctx_alloc(ctx, (size_t)(ns ? ns : 1));
    if (!storage_split) return NULL;
    bool seen_layer = false;
    for (int32_t i = 0; i < np; i++) {
        shard_param_info *p = &a->params[i];
        p->name = named[i].name;
        p->tensor = named[i].tensor;
        int32_t layer = layer_of(layer_names, a->nlayers, p->name);
        seen_layer |= layer >= 0;
        p->unit = layer >= 0 ? layer : seen_layer ? SHARD_UNIT_POST(a) : SHARD_UNIT_PRE(a);
        p->tp_rule = a->plan ? param_rule(a, a->plan->tp, p->name) : -1;
        p->ep_rule = a->plan && a->plan->ep ? param_rule(a, a->plan->ep, p->name) : -1;
        int32_t t = mtk_graph_tensor_id(g, p->tensor);
        if (t >= 0 && p->tp_rule >= 0)
            storage_split[mtk_graph_tensor_at(g, t)->storage] =
                (int8_t)shard_style_split(a->plan->tp[p->tp_rule].style, p->name, p->tensor->ndim);
    }
    /* lm_head tied to the input embeddings: named once, under the
       embedding's name; the last stage needs it too */
    a->tied_param = -1;
    mtk_tensor *head = mtk_module_find_tensor(pm->model, "lm_head.weight");
    for (int32_t i = 0; head && i < np; i++)
        if (a->params[i].tensor == head && strcmp(a->params[i].name, "lm_head.weight") != 0) a->tied_param = i;
    bool *sharded = propagate(a, g, storage_split);
    if (!sharded) return NULL;
    if (!collect_nodes(a, g, module_layer, sharded, raw)) return NULL;
    if (!find_sites(a, tr, module_layer, pm->layers[0])) return NULL;
    raw->site = mtk_ctx_alloc(ctx, 2 * (size_t)(a->nsites ? a->nsites : 1) * sizeof *raw->site);
    if (!raw->site) return NULL;
    for (int32_t i = 0; i < a->nsites; i++) raw->site[2 * i] = a->sites[i].in_bytes, raw->site[2 * i + 1] = a->sites[i].out_bytes;
    if ((!o->training || pm->loss) && !replay_points(a, pm, raw)) return NULL;
    if (!o->training) {
        /* eval's model(input_ids) fills a DynamicCache (use_cache) */
        mtk_kv_cache *cache = mtk_kv_cache_new(pm->model);
        if (cache && mtk_kv_cache_plannable(cache) && mtk_kv_cache_layer_count(cache) > 0 &&
            mtk_kv_cache_assume(cache, o->micro_batch, o->seq))
            raw->kv_layer = mtk_kv_cache_storage_bytes(cache) / mtk_kv_cache_layer_count(cache);
        if (mtk_ctx_status(ctx) != MTK_OK) return NULL;
    }
    shard_analysis_finish(a);
    return mtk_ctx_status(ctx) == MTK_OK ? a : NULL;
}

mtk_shard_plan *mtk_shard_plan_model(mtk_ctx *ctx, const char *model, const mtk_shard_options *options)
{
    mtk_shard_analysis *a = mtk_shard_analyze(ctx, model, options);
    return a ? mtk_shard_evaluate(ctx, a, options) : NULL;
}
