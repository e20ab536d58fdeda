/* A memory plan as text and as JSON. */
#include "plan/memory_internal.h"
#include "core/text.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* bytes as every mtk command prints sizes (text_bytes: "1.5 KiB"). */
static const char *human(int64_t bytes, char *buf, size_t cap)
{
    return text_bytes(bytes > 0 ? (uint64_t)bytes : 0, buf, cap);
}

static const char *mode_name(mtk_memory_mode m)
{
    return m == MTK_MEMORY_TRAINING ? "training" : m == MTK_MEMORY_GENERATE ? "generate" : "inference";
}

static const char *optimizer_name(mtk_optimizer_kind k)
{
    static const char *const names[] = { "sgd", "momentum", "adam", "adamw" };
    return (unsigned)k < 4 ? names[k] : "?";
}

static const char *mixed_name(mtk_mixed_precision m)
{
    return m == MTK_MIXED_BF16 ? "bf16" : m == MTK_MIXED_FP16 ? "fp16" : "none";
}

static void where_text(mtk_text *t, const mtk_memory_point *p)
{
    if (p->node >= 0)
        mtk_text_printf(t, "%s of op '%s' in %s", mtk_memory_phase_name(p->phase), p->op,
                        p->module && *p->module ? p->module : "the model's root");
    else
        mtk_text_printf(t, "%s (%s)", mtk_memory_phase_name(p->phase), p->op);
}

static void breakdown_text(mtk_text *t, const mtk_memory_breakdown *b, int64_t peak)
{
    const struct { const char *name; int64_t v; } rows[] = {
        { "parameters", b->parameters },         { "gradients", b->gradients },
        { "optimizer_states", b->optimizer_states }, { "activations_saved", b->activations_saved },
        { "kv_cache", b->kv_cache },             { "transient_at_peak", b->transient_at_peak },
    };
    char h[32];
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        mtk_text_printf(t, "  %-18s %12s %6.1f%%  %" PRId64 "\n", rows[i].name, human(rows[i].v, h, sizeof h),
                        peak > 0 ? 100.0 * (double)rows[i].v / (double)peak : 0.0, rows[i].v);
}

/* The next sibling of module i (same depth before the depth drops), -1. */
static int32_t next_sibling(const mtk_memory_plan *p, int32_t i)
{
    for (int32_t j = i + 1; j < p->nmodules; j++) {
        if (p->modules[j].depth < p->modules[i].depth) return -1;
        if (p->modules[j].depth == p->modules[i].depth) return j;
    }
    return -1;
}

static void module_table(mtk_text *t, const mtk_memory_plan *p, int32_t depth)
{
    if (p->nmodules == 0) return;
    char a[32], b[32], c[32], name[256];
    mtk_text_printf(t, "\n%-40s %12s %12s %12s\n", "module", "parameters", "saved", "peak inside");
    int32_t skip_depth = -1;
    for (int32_t i = 0; i < p->nmodules; i++) {
        const mtk_memory_module *m = &p->modules[i];
        if (skip_depth >= 0 && m->depth > skip_depth) continue;
        skip_depth = -1;
        if (depth >= 0 && m->depth > depth) continue;
        int64_t params = m->parameters, saved = m->activations_saved, peak = m->peak_bytes;
        int32_t count = 1, last = i;
        if (mem_numbered_module(m->name)) {
            for (int32_t j = next_sibling(p, i); j >= 0 && mem_numbered_module(p->modules[j].name);
                 j = next_sibling(p, j)) {
                params += p->modules[j].parameters;
                saved += p->modules[j].activations_saved;
                if (p->modules[j].peak_bytes > peak) peak = p->modules[j].peak_bytes;
                count++;
                last = j;
            }
        }
        const char *label = *m->name ? m->name : "(model)";
        if (count > 1) {
            const char *tail = strrchr(p->modules[last].name, '.');
            snprintf(name, sizeof name, "%s-%s (%d x)", m->name, tail ? tail + 1 : p->modules[last].name, (int)count);
            label = name;
            /* the run's children are folded into its row */
            skip_depth = m->depth;
            i = last;
        }
        mtk_text_printf(t, "%*s%-*s %12s %12s %12s\n", 2 * m->depth, "", 40 - 2 * m->depth, label,
                        human(params, a, sizeof a), human(saved, b, sizeof b), human(peak, c, sizeof c));
    }
}

char *mtk_memory_plan_text(mtk_ctx *ctx, const mtk_memory_plan *p, int32_t depth)
{
    if (!ctx || !p) return NULL;
    const mtk_memory_options *o = &p->options;
    mtk_text t = { .ctx = ctx };
    char h[32];
    mtk_text_printf(&t, "%s%s%s, input %" PRId64 "x%" PRId64, p->model ? p->model : "", p->model ? ": " : "",
                    mode_name(o->mode), o->batch, o->seq);
    if (o->decoder_seq > 0) mtk_text_printf(&t, ", decoder input %" PRId64 "x%" PRId64, o->batch, o->decoder_seq);
    mtk_text_printf(&t, ", %s", o->dtype >= 0 ? mtk_dtype_name(o->dtype) : "config dtype");
    if (o->mode == MTK_MEMORY_TRAINING) {
        mtk_text_printf(&t, ", %s", optimizer_name(o->optimizer));
        if (o->mixed_precision) mtk_text_printf(&t, ", mixed precision %s", mixed_name(o->mixed_precision));
        if (o->checkpointing) mtk_text_puts(&t, ", gradient checkpointing");
        if (o->grad_accum > 1) mtk_text_printf(&t, ", %d micro-batches", (int)o->grad_accum);
    }
    if (o->mode == MTK_MEMORY_GENERATE) mtk_text_printf(&t, ", %" PRId64 " new tokens", o->new_tokens);
    mtk_text_printf(&t, ", %s attention, %s\n\n", o->attention == MTK_ATTENTION_EAGER ? "eager" : "sdpa",
                    o->device_kind == MTK_DEVICE_KIND_CUDA ? "cuda" : "cpu");
    mtk_text_printf(&t, "peak %s (%" PRId64 " bytes)%s\n", human(p->peak.peak_bytes, h, sizeof h), p->peak.peak_bytes,
                    o->mode == MTK_MEMORY_TRAINING ? ", every step after the first" : "");
    breakdown_text(&t, &p->peak.breakdown, p->peak.peak_bytes);
    mtk_text_puts(&t, "peak at: ");
    where_text(&t, &p->peak.peak_at);
    mtk_text_puts(&t, "\n");
    if (o->mode == MTK_MEMORY_TRAINING) {
        mtk_text_printf(&t, "first step: peak %s (%" PRId64 " bytes; it also creates the optimizer states) at ",
                        human(p->first_step.peak_bytes, h, sizeof h), p->first_step.peak_bytes);
        where_text(&t, &p->first_step.peak_at);
        mtk_text_printf(&t, "\nsaved for backward by the forward: %s\n",
                        human(p->activations_saved_forward, h, sizeof h));
    }
    if (p->overhead_bytes)
        mtk_text_printf(&t, "outside torch's allocated bytes: %s (CUDA context); device total %s\n",
                        human(p->overhead_bytes, h, sizeof h),
                        human(p->overhead_bytes + p->peak.peak_bytes, (char[32]){ 0 }, 32));
    module_table(&t, p, depth);
    for (int32_t i = 0; i < p->nnotes; i++) mtk_text_printf(&t, "%snote: %s\n", i ? "" : "\n", p->notes[i]);
    return mtk_text_finish(&t);
}

/* ------------------------------------------------------------------ JSON */

static cJSON *json_int(int64_t v)
{
    char buf[32];
    snprintf(buf, sizeof buf, "%" PRId64, v);
    return cJSON_CreateRaw(buf);
}

static cJSON *json_breakdown(const mtk_memory_breakdown *b)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddItemToObject(o, "parameters", json_int(b->parameters));
    cJSON_AddItemToObject(o, "gradients", json_int(b->gradients));
    cJSON_AddItemToObject(o, "optimizer_states", json_int(b->optimizer_states));
    cJSON_AddItemToObject(o, "activations_saved", json_int(b->activations_saved));
    cJSON_AddItemToObject(o, "kv_cache", json_int(b->kv_cache));
    cJSON_AddItemToObject(o, "transient_at_peak", json_int(b->transient_at_peak));
    return o;
}

static cJSON *json_point(const mtk_memory_point *p)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "op", p->op ? p->op : "");
    cJSON_AddStringToObject(o, "module", p->module ? p->module : "");
    cJSON_AddStringToObject(o, "phase", mtk_memory_phase_name(p->phase));
    cJSON_AddItemToObject(o, "node", json_int(p->node));
    return o;
}

static void add_step(cJSON *o, const mtk_memory_step *s)
{
    cJSON_AddItemToObject(o, "peak_bytes", json_int(s->peak_bytes));
    cJSON_AddItemToObject(o, "breakdown", json_breakdown(&s->breakdown));
    cJSON_AddItemToObject(o, "peak_at", json_point(&s->peak_at));
}

/* Adds the plan's keys to an object (the CLI adds its own around them). */
static void add_plan(cJSON *root, const mtk_memory_plan *p)
{
    const mtk_memory_options *o = &p->options;
    add_step(root, &p->peak);
    cJSON *first = cJSON_CreateObject();
    add_step(first, &p->first_step);
    cJSON_AddItemToObject(root, "first_step", first);
    cJSON_AddItemToObject(root, "activations_saved_forward", json_int(p->activations_saved_forward));
    cJSON_AddItemToObject(root, "parameter_bytes", json_int(p->parameter_bytes));
    cJSON_AddItemToObject(root, "overhead_bytes", json_int(p->overhead_bytes));
    cJSON *opts = cJSON_CreateObject();
    cJSON_AddStringToObject(opts, "mode", mode_name(o->mode));
    cJSON_AddStringToObject(opts, "optimizer", optimizer_name(o->optimizer));
    cJSON_AddStringToObject(opts, "dtype", o->dtype >= 0 ? mtk_dtype_name(o->dtype) : "config");
    cJSON_AddStringToObject(opts, "mixed_precision", mixed_name(o->mixed_precision));
    cJSON_AddBoolToObject(opts, "checkpointing", o->checkpointing);
    cJSON_AddStringToObject(opts, "attention", o->attention == MTK_ATTENTION_EAGER ? "eager" : "sdpa");
    cJSON_AddStringToObject(opts, "device_kind", o->device_kind == MTK_DEVICE_KIND_CUDA ? "cuda" : "cpu");
    cJSON_AddItemToObject(opts, "batch", json_int(o->batch));
    cJSON_AddItemToObject(opts, "seq", json_int(o->seq));
    if (o->decoder_seq > 0) cJSON_AddItemToObject(opts, "decoder_seq", json_int(o->decoder_seq));
    cJSON_AddItemToObject(opts, "new_tokens", json_int(o->new_tokens));
    cJSON_AddItemToObject(opts, "grad_accum", json_int(o->grad_accum));
    cJSON *consts = cJSON_CreateObject();
    for (int32_t i = 0; i < mtk_memory_constant_count(); i++) {
        const mtk_memory_constant *c = mtk_memory_constant_at(i);
        cJSON_AddItemToObject(consts, c->name, json_int(*(const int64_t *)((const char *)&o->constants + c->offset)));
    }
    cJSON_AddItemToObject(opts, "constants", consts);
    cJSON_AddItemToObject(root, "options", opts);
    cJSON *tl = cJSON_CreateArray();
    for (int32_t i = 0; i < p->ntimeline; i++) {
        const mtk_memory_point *q = &p->timeline[i];
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "op", q->op ? q->op : "");
        cJSON_AddStringToObject(e, "module", q->module ? q->module : "");
        cJSON_AddStringToObject(e, "phase", mtk_memory_phase_name(q->phase));
        cJSON_AddItemToObject(e, "live_bytes", json_int(q->live_bytes));
        cJSON_AddItemToArray(tl, e);
    }
    cJSON_AddItemToObject(root, "timeline", tl);
    cJSON *mods = cJSON_CreateArray();
    for (int32_t i = 0; i < p->nmodules; i++) {
        const mtk_memory_module *m = &p->modules[i];
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "name", m->name);
        cJSON_AddItemToObject(e, "depth", json_int(m->depth));
        cJSON_AddItemToObject(e, "parameters", json_int(m->parameters));
        cJSON_AddItemToObject(e, "activations_saved", json_int(m->activations_saved));
        cJSON_AddItemToObject(e, "peak_bytes", json_int(m->peak_bytes));
        cJSON_AddItemToArray(mods, e);
    }
    cJSON_AddItemToObject(root, "modules", mods);
    cJSON *notes = cJSON_CreateArray();
    for (int32_t i = 0; i < p->nnotes; i++) cJSON_AddItemToArray(notes, cJSON_CreateString(p->notes[i]));
    cJSON_AddItemToObject(root, "notes", notes);
}

void *mem_plan_json_object(const mtk_memory_plan *p)
{
    cJSON *root = cJSON_CreateObject();
    if (root) add_plan(root, p);
    return root;
}

char *mtk_memory_plan_json(mtk_ctx *ctx, const mtk_memory_plan *p)
{
    if (!ctx || !p) return NULL;
    cJSON *root = mem_plan_json_object(p);
    char *printed = root ? cJSON_PrintUnformatted(root) : NULL;
    cJSON_Delete(root);
    char *out = printed ? mtk_ctx_strdup(ctx, printed) : NULL;
    cJSON_free(printed);
    if (!out) mtk_error(ctx, MTK_ERR_OUT_OF_MEMORY, "memory: out of memory printing JSON");
    return out;
}
