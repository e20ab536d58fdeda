/* A placement as text (a table per device and its map keys) and as one
 * JSON document (accelerate's device_map and the devices' budgets). */
#include "plan/place_internal.h"
#include "core/text.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The length of name's prefix before a trailing ".N", and N; -1 if the
 * name does not end in a number. */
static int64_t trailing_number(const char *name, size_t *prefix)
{
    const char *dot = strrchr(name, '.');
    if (!dot || !dot[1]) return -1;
    char *end;
    long long v = strtoll(dot + 1, &end, 10);
    if (*end || v < 0) return -1;
    *prefix = (size_t)(dot - name);
    return v;
}

/* The run of entries from e on the same device named prefix.N,
 * prefix.N+1, ...: returns its length (1 when there is none). */
static int32_t run_length(const mtk_place_plan *p, int32_t e)
{
    size_t pre;
    int64_t n = trailing_number(p->entries[e].name, &pre);
    if (n < 0) return 1;
    int32_t k = 1;
    for (; e + k < p->nentries; k++) {
        const mtk_place_entry *x = &p->entries[e + k];
        size_t pre2;
        if (x->device != p->entries[e].device || trailing_number(x->name, &pre2) != n + k || pre2 != pre ||
            strncmp(x->name, p->entries[e].name, pre) != 0)
            break;
    }
    return k;
}

char *mtk_place_plan_text(mtk_ctx *ctx, const mtk_place_plan *p)
{
    if (!ctx) return NULL;
    if (!p) {
        mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "place: NULL plan");
        return NULL;
    }
    mtk_text t = { .ctx = ctx };
    char a[TEXT_NUMBER_CAP], b[TEXT_NUMBER_CAP], c[TEXT_NUMBER_CAP], d[TEXT_NUMBER_CAP];
    const mtk_place_options *o = &p->options;
    mtk_text_printf(&t, "%s: %s, input %lldx%lld", p->model ? p->model : "model",
                    o->mode == MTK_MEMORY_GENERATE ? "generate" : "inference", (long long)o->batch, (long long)o->seq);
    if (o->mode == MTK_MEMORY_GENERATE) mtk_text_printf(&t, " + %lld new tokens", (long long)o->new_tokens);
    mtk_text_printf(&t, ", %s; weights %s, offloaded %s\n\n",
                    o->strategy == MTK_PLACE_SEQUENTIAL ? "sequential" : "balanced",
                    text_bytes((uint64_t)p->weights_bytes, a, sizeof a),
                    text_bytes((uint64_t)p->offloaded_bytes, b, sizeof b));
    for (int32_t i = 0; i < p->ndevices; i++) {
        const mtk_place_device_plan *dv = &p->devices[i];
        if (dv->device.budget_bytes >= 0) text_bytes((uint64_t)dv->device.budget_bytes, a, sizeof a);
        else strcpy(a, "unlimited");
        mtk_text_printf(&t, "device %s%s: budget %s, margin %s, weights %s, peak %s", dv->label,
                        i == p->execution_device && p->offloaded_bytes > 0 ? " (runs the offloaded modules)" : "", a,
                        text_bytes((uint64_t)dv->margin_bytes, b, sizeof b),
                        text_bytes((uint64_t)dv->weights_bytes, c, sizeof c),
                        text_bytes((uint64_t)dv->peak_bytes, d, sizeof d));
        if (dv->peak_module) mtk_text_printf(&t, " (in %s)", dv->peak_module[0] ? dv->peak_module : "(model)");
        mtk_text_puts(&t, "\n");
        if (dv->nentries == 0) {
            mtk_text_puts(&t, "  (nothing)\n\n");
            continue;
        }
        mtk_text_printf(&t, "  %-48s %12s\n", "module", "weights");
        for (int32_t e = 0; e < p->nentries;) {
            if (p->entries[e].device != i) {
                e++;
                continue;
            }
            int32_t k = run_length(p, e);
            int64_t w = 0;
            for (int32_t j = 0; j < k; j++) w += p->entries[e + j].weights_bytes;
            char name[256];
            const char *n0 = p->entries[e].name[0] ? p->entries[e].name : "(model)";
            if (k > 1) {
                size_t pre = 0;
                int64_t first = trailing_number(p->entries[e].name, &pre);
                snprintf(name, sizeof name, "%.*s.%lld-%lld", (int)pre, p->entries[e].name, (long long)first,
                         (long long)(first + k - 1));
            } else {
                snprintf(name, sizeof name, "%s", n0);
            }
            mtk_text_printf(&t, "  %-48s %12s\n", name, text_bytes((uint64_t)w, a, sizeof a));
            e += k;
        }
        mtk_text_puts(&t, "\n");
    }
    if (p->nno_split > 0) {
        mtk_text_puts(&t, "kept whole (_no_split_modules):");
        for (int32_t i = 0; i < p->nno_split; i++) mtk_text_printf(&t, "%s %s", i ? "," : "", p->no_split[i]);
        mtk_text_puts(&t, "\n");
    }
    for (int32_t i = 0; i < p->nnotes; i++) mtk_text_printf(&t, "note: %s\n", p->notes[i]);
    return mtk_text_finish(&t);
}

static cJSON *device_value(const mtk_place_device *d)
{
    if (d->kind == MTK_PLACE_GPU) return cJSON_CreateNumber(d->index);
    return cJSON_CreateString(d->kind == MTK_PLACE_CPU ? "cpu" : "disk");
}

char *mtk_place_plan_json(mtk_ctx *ctx, const mtk_place_plan *p)
{
    if (!ctx) return NULL;
    if (!p) {
        mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "place: NULL plan");
        return NULL;
    }
    cJSON *root = cJSON_CreateObject(), *map = cJSON_CreateObject(), *devs = cJSON_CreateArray();
    cJSON *opts = cJSON_CreateObject(), *notes = cJSON_CreateArray(), *ns = cJSON_CreateArray();
    cJSON_AddItemToObject(root, "model", cJSON_CreateString(p->model ? p->model : ""));
    cJSON_AddItemToObject(root, "device_map", map);
    for (int32_t e = 0; e < p->nentries; e++)
        cJSON_AddItemToObject(map, p->entries[e].name, device_value(&p->devices[p->entries[e].device].device));
    cJSON_AddItemToObject(root, "devices", devs);
    for (int32_t i = 0; i < p->ndevices; i++) {
        const mtk_place_device_plan *dv = &p->devices[i];
        cJSON *d = cJSON_CreateObject();
        cJSON_AddItemToObject(d, "device", device_value(&dv->device));
        cJSON_AddItemToObject(d, "budget_bytes", dv->device.budget_bytes >= 0 ? text_json_int(dv->device.budget_bytes)
                                                                              : cJSON_CreateNull());
        cJSON_AddItemToObject(d, "margin_bytes", text_json_int(dv->margin_bytes));
        cJSON_AddItemToObject(d, "weights_bytes", text_json_int(dv->weights_bytes));
        cJSON_AddItemToObject(d, "peak_bytes", text_json_int(dv->peak_bytes));
        cJSON_AddItemToObject(d, "peak_module",
                              dv->peak_module ? cJSON_CreateString(dv->peak_module) : cJSON_CreateNull());
        cJSON_AddItemToArray(devs, d);
    }
    cJSON_AddItemToObject(root, "offloaded_bytes", text_json_int(p->offloaded_bytes));
    cJSON_AddItemToObject(root, "weights_bytes", text_json_int(p->weights_bytes));
    cJSON_AddItemToObject(root, "execution_device", device_value(&p->devices[p->execution_device].device));
    for (int32_t i = 0; i < p->nno_split; i++) cJSON_AddItemToArray(ns, cJSON_CreateString(p->no_split[i]));
    cJSON_AddItemToObject(root, "no_split_modules", ns);
    const mtk_place_options *o = &p->options;
    cJSON_AddStringToObject(opts, "mode", o->mode == MTK_MEMORY_GENERATE ? "generate" : "inference");
    cJSON_AddItemToObject(opts, "batch", text_json_int(o->batch));
    cJSON_AddItemToObject(opts, "seq", text_json_int(o->seq));
    cJSON_AddItemToObject(opts, "new_tokens", text_json_int(o->new_tokens));
    cJSON_AddStringToObject(opts, "strategy", o->strategy == MTK_PLACE_SEQUENTIAL ? "sequential" : "balanced");
    cJSON_AddStringToObject(opts, "dtype", o->dtype >= 0 ? mtk_dtype_name(o->dtype) : "config");
    cJSON_AddItemToObject(root, "options", opts);
    for (int32_t i = 0; i < p->nnotes; i++) cJSON_AddItemToArray(notes, cJSON_CreateString(p->notes[i]));
    cJSON_AddItemToObject(root, "notes", notes);
    char *text = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    if (!text) {
        mtk_error(ctx, MTK_ERR_OUT_OF_MEMORY, "place: out of memory rendering the plan");
        return NULL;
    }
    size_t len = strlen(text);
    char *out = mtk_ctx_alloc(ctx, len + 1);
    if (out) memcpy(out, text, len + 1);
    cJSON_free(text);
    return out;
}
