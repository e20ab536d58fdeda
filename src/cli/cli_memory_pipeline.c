/* mtk memory PIPELINE --image HxW: memory per stage and offload plans of
 * a diffusers pipeline (mtk_pipeline_memory_plan). */
#include "cli/cli.h"
#include "cli/cli_memory_pipeline.h"
#include "core/text.h"
#include "mtk/mtk.h"
#include "mtk/plan.h"
#include "mtk/plan_memory.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool cli_parse_max_memory(const char *text, int64_t *gpu, int64_t *cpu)
{
    char buf[256];
    if (strlen(text) >= sizeof buf) return false;
    strcpy(buf, text);
    char *save = NULL;
    for (char *item = strtok_r(buf, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(item, '=');
        int64_t bytes;
        if (!eq || !cli_parse_bytes(eq + 1, &bytes) || bytes <= 0) return false;
        *eq = '\0';
        if (strcmp(item, "cpu") == 0) *cpu = bytes;
        else if (strcmp(item, "0") == 0 || strcmp(item, "cuda") == 0 || strcmp(item, "cuda:0") == 0) *gpu = bytes;
        else return false;
    }
    return true;
}

static int64_t bytes_mode(const int64_t *v, mtk_offload_mode mode)
{
    return v[mode];
}

static cJSON *raw_int(int64_t v)
{
    char buf[32];
    snprintf(buf, sizeof buf, "%" PRId64, v);
    return cJSON_CreateRaw(buf);
}

static cJSON *offload_json(const mtk_pipeline_offload *o)
{
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "mode", mtk_offload_mode_name(o->mode));
    cJSON_AddItemToObject(j, "gpu_peak_bytes", raw_int(o->gpu_peak_bytes));
    cJSON_AddStringToObject(j, "peak_stage", o->peak_stage ? o->peak_stage : "");
    cJSON_AddItemToObject(j, "bytes_moved_per_image", raw_int(o->bytes_moved_per_image));
    cJSON_AddItemToObject(j, "bytes_to_host_per_image", raw_int(o->bytes_to_host_per_image));
    cJSON_AddItemToObject(j, "host_bytes", raw_int(o->host_bytes));
    cJSON_AddBoolToObject(j, "fits", o->fits);
    return j;
}

static int print_json(const mtk_pipeline_memory *m)
{
    const mtk_pipeline *p = m->pipeline;
    cJSON *root = cJSON_CreateObject(), *stages = cJSON_CreateArray(), *modes = cJSON_CreateArray();
    cJSON *notes = cJSON_CreateArray();
    cJSON_AddStringToObject(root, "pipeline", p->name);
    cJSON_AddNumberToObject(root, "height", (double)p->options.height);
    cJSON_AddNumberToObject(root, "width", (double)p->options.width);
    cJSON_AddNumberToObject(root, "batch", (double)p->options.batch);
    cJSON_AddNumberToObject(root, "steps", (double)p->options.steps);
    cJSON_AddBoolToObject(root, "guidance", p->options.guidance);
    cJSON_AddItemToObject(root, "weights_bytes", raw_int(m->weights_bytes));
    cJSON_AddItemToObject(root, "peak_bytes", raw_int(m->offload[m->mode].gpu_peak_bytes));
    for (int32_t i = 0; i < m->nstages; i++) {
        const mtk_pipeline_stage *s = &m->stages[i];
        cJSON *j = cJSON_CreateObject();
        cJSON_AddStringToObject(j, "stage", s->stage);
        cJSON_AddStringToObject(j, "component", s->component);
        cJSON_AddStringToObject(j, "method", s->method);
        cJSON_AddNumberToObject(j, "calls_per_image", (double)s->calls_per_image);
        cJSON_AddItemToObject(j, "weights_bytes", raw_int(bytes_mode(s->weights_bytes, m->mode)));
        cJSON_AddItemToObject(j, "activation_peak_bytes", raw_int(s->activation_peak_bytes));
        cJSON_AddItemToObject(j, "cache_bytes", raw_int(s->cache_bytes));
        cJSON_AddItemToObject(j, "peak_bytes", raw_int(bytes_mode(s->peak_bytes, m->mode)));
        cJSON_AddStringToObject(j, "resident", s->resident[m->mode]);
        cJSON_AddItemToObject(j, "sequential_moved_per_call", raw_int(s->sequential_moved_per_call));
        cJSON *at = cJSON_CreateObject();
        cJSON_AddStringToObject(at, "op", s->plan->peak.peak_at.op ? s->plan->peak.peak_at.op : "");
        cJSON_AddStringToObject(at, "module", s->plan->peak.peak_at.module ? s->plan->peak.peak_at.module : "");
        cJSON_AddItemToObject(j, "peak_at", at);
        /* after each node: the activation bytes live (parameters excluded), to
         * set against torch's profiler op by op */
        cJSON *timeline = cJSON_CreateArray();
        for (int32_t t = 0; t < s->plan->ntimeline; t++) {
            const mtk_memory_point *pt = &s->plan->timeline[t];
            cJSON *e = cJSON_CreateObject();
            cJSON_AddStringToObject(e, "op", pt->op ? pt->op : "");
            cJSON_AddStringToObject(e, "module", pt->module ? pt->module : "");
            cJSON_AddItemToObject(e, "activation_bytes", raw_int(pt->live_bytes - pt->model_bytes));
            cJSON_AddItemToArray(timeline, e);
        }
        cJSON_AddItemToObject(j, "timeline", timeline);
        cJSON_AddItemToArray(stages, j);
    }
    cJSON_AddItemToObject(root, "stages", stages);
    cJSON_AddItemToObject(root, "offload", offload_json(&m->offload[m->mode]));
    for (int k = 0; k < MTK_OFFLOAD_MODES; k++) cJSON_AddItemToArray(modes, offload_json(&m->offload[k]));
    cJSON_AddItemToObject(root, "offload_modes", modes);
    cJSON *budget = cJSON_CreateObject();
    cJSON_AddItemToObject(budget, "gpu_bytes", raw_int(m->gpu_budget));
    cJSON_AddItemToObject(budget, "cpu_bytes", raw_int(m->cpu_budget));
    cJSON_AddItemToObject(root, "max_memory", budget);
    for (int32_t i = 0; i < m->nnotes; i++) cJSON_AddItemToArray(notes, cJSON_CreateString(m->notes[i]));
    for (int32_t i = 0; i < p->nnotes; i++) cJSON_AddItemToArray(notes, cJSON_CreateString(p->notes[i]));
    cJSON_AddItemToObject(root, "notes", notes);
    char *text = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    if (!text) return cli_fail(true, "out_of_memory", NULL, "out of memory");
    puts(text);
    cJSON_free(text);
    return CLI_EXIT_OK;
}

static const char *bytes_text(int64_t v, char *buf, size_t cap)
{
    return text_bytes(v > 0 ? (uint64_t)v : 0, buf, cap);
}

static void print_text(const mtk_pipeline_memory *m)
{
    const mtk_pipeline *p = m->pipeline;
    char a[64], b[64], c[64], d[64];
    printf("%s: %lldx%lld, batch %lld, %lld steps%s; offload %s\n", p->name, (long long)p->options.height,
           (long long)p->options.width, (long long)p->options.batch, (long long)p->options.steps,
           p->options.guidance ? ", classifier-free guidance" : "", mtk_offload_mode_name(m->mode));
    printf("weights %s in %d components\n\n", bytes_text(m->weights_bytes, a, sizeof a), (int)p->ncomponents);
    printf("%-14s %-16s %7s %12s %12s %12s %12s  on the GPU\n", "stage", "component", "calls", "weights",
           "activations", "cache", "peak");
    for (int32_t i = 0; i < m->nstages; i++) {
        const mtk_pipeline_stage *s = &m->stages[i];
        printf("%-14s %-16s %7lld %12s %12s %12s %12s  %s\n", s->stage, s->component, (long long)s->calls_per_image,
               bytes_text(s->weights_bytes[m->mode], a, sizeof a), bytes_text(s->activation_peak_bytes, b, sizeof b),
               bytes_text(s->cache_bytes, c, sizeof c), bytes_text(s->peak_bytes[m->mode], d, sizeof d),
               s->resident[m->mode]);
    }
    printf("\n%-12s %12s %-14s %16s %14s  %s\n", "offload", "GPU peak", " at", "moved per image", "host", "fits");
    for (int k = 0; k < MTK_OFFLOAD_MODES; k++) {
        const mtk_pipeline_offload *o = &m->offload[k];
        printf("%-12s %12s  %-13s %16s %14s  %s%s\n", mtk_offload_mode_name(o->mode),
               bytes_text(o->gpu_peak_bytes, a, sizeof a), o->peak_stage ? o->peak_stage : "-",
               bytes_text(o->bytes_moved_per_image, b, sizeof b), bytes_text(o->host_bytes, c, sizeof c),
               m->gpu_budget || m->cpu_budget ? (o->fits ? "yes" : "no") : "-", k == (int)m->mode ? "  <-" : "");
    }
    if (m->gpu_budget || m->cpu_budget)
        printf("max memory: gpu %s, cpu %s\n", m->gpu_budget ? bytes_text(m->gpu_budget, a, sizeof a) : "-",
               m->cpu_budget ? bytes_text(m->cpu_budget, b, sizeof b) : "-");
    for (int32_t i = 0; i < m->nnotes; i++) printf("note: %s\n", m->notes[i]);
    for (int32_t i = 0; i < p->nnotes; i++) printf("note: %s\n", p->notes[i]);
}

int cli_memory_pipeline(const char *name, const mtk_pipeline_options *options, const cli_pipeline_memory_args *args)
{
    mtk_ctx *ctx = mtk_ctx_new();
    if (!ctx) return cli_fail(args->json, "out_of_memory", NULL, "out of memory");
    mtk_pipeline *p = mtk_pipeline_resolve(ctx, name, options);
    mtk_pipeline_memory *m =
        p ? mtk_pipeline_memory_plan(ctx, p, args->mode, args->device_kind, args->gpu_budget, args->cpu_budget) : NULL;
    if (!m) {
        cli_fail_ctx(args->json, ctx);
        mtk_ctx_free(ctx);
        return CLI_EXIT_ERROR;
    }
    int rc = CLI_EXIT_OK;
    if (args->json) rc = print_json(m);
    else print_text(m);
    mtk_ctx_free(ctx);
    return rc;
}
