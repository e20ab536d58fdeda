/* mtk summary PIPELINE --image HxW: a diffusers pipeline's components on
 * meta, each call at that image size (mtk_pipeline_resolve). */
#include "cli/cli.h"
#include "cli/cli_summary_pipeline.h"
#include "mtk/mtk.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool cli_parse_image(const char *text, int64_t *height, int64_t *width)
{
    char *end;
    long long h = strtoll(text, &end, 10);
    if (end == text || (*end != 'x' && *end != 'X')) return false;
    const char *rest = end + 1;
    long long w = strtoll(rest, &end, 10);
    if (end == rest || *end || h <= 0 || w <= 0 || h > (1 << 20) || w > (1 << 20)) return false;
    *height = h, *width = w;
    return true;
}

/* 1234567 -> "1,234,567" into buf */
static const char *grouped(int64_t v, char *buf, size_t cap)
{
    char digits[32];
    int n = snprintf(digits, sizeof digits, "%lld", (long long)(v < 0 ? -v : v));
    size_t at = 0;
    if (v < 0 && at + 1 < cap) buf[at++] = '-';
    for (int i = 0; i < n && at + 2 < cap; i++) {
        buf[at++] = digits[i];
        if ((n - 1 - i) % 3 == 0 && i != n - 1) buf[at++] = ',';
    }
    buf[at] = '\0';
    return buf;
}

/* "[2, 4, 64, 64]" (", int64" for integer tensors) into buf */
static const char *shape_text(const mtk_tensor *t, char *buf, size_t cap)
{
    size_t at = (size_t)snprintf(buf, cap, "[");
    for (int32_t i = 0; t && i < t->ndim && at < cap; i++)
        at += (size_t)snprintf(buf + at, cap - at, "%s%lld", i ? ", " : "", (long long)t->shape[i]);
    if (at < cap) at += (size_t)snprintf(buf + at, cap - at, "]");
    if (t && !mtk_dtype_is_floating(t->dtype) && at < cap) snprintf(buf + at, cap - at, " %s", mtk_dtype_name(t->dtype));
    return buf;
}

static void print_text(const mtk_pipeline *p)
{
    char a[64], b[64], s[128];
    const mtk_pipeline_options *o = &p->options;
    printf("%s: %s (%s%s%s), %lldx%lld, batch %lld, %lld steps, %s\n", p->name, p->class_name, p->source,
           p->hf_id ? ", " : "", p->hf_id ? p->hf_id : "", (long long)o->height, (long long)o->width,
           (long long)o->batch, (long long)o->steps,
           o->guidance ? "classifier-free guidance (the denoiser's batch doubled)" : "no guidance");
    printf("latents: VAE factor %lld\n\n", (long long)p->scale_factor);
    for (int32_t i = 0; i < p->ncomponents; i++) {
        const mtk_pipeline_component *c = &p->components[i];
        printf("%s: %s (%s), %s params, %s\n", c->name, c->class_name, c->role, grouped(c->params, a, sizeof a),
               mtk_dtype_name(c->dtype));
        for (int32_t k = 0; k < c->ncalls; k++) {
            const mtk_pipeline_call *call = &c->calls[k];
            printf("  %s x %lld per image%s\n", call->method, (long long)call->per_image,
                   call->per_image == 0 ? " (image-to-image only)" : "");
            for (int32_t j = 0; j < call->nin; j++)
                printf("    in  %-22s %s\n", call->input_names[j], shape_text(call->inputs[j], s, sizeof s));
            for (int32_t j = 0; j < call->nout; j++) printf("    out %-22d %s\n", (int)j, shape_text(call->outputs[j], s, sizeof s));
            printf("    FLOPs per call %s\n", grouped(call->flops, a, sizeof a));
        }
        printf("  FLOPs per image %s\n\n", grouped(c->flops_per_image, b, sizeof b));
    }
    printf("%s params in %d components\n", grouped(p->params, a, sizeof a), (int)p->ncomponents);
    printf("%s FLOPs per image\n", grouped(p->flops_per_image, a, sizeof a));
    for (int32_t i = 0; i < p->nnotes; i++) printf("note: %s\n", p->notes[i]);
}

static cJSON *shape_json(const mtk_tensor *t)
{
    cJSON *o = cJSON_CreateObject(), *shape = cJSON_CreateArray();
    for (int32_t i = 0; t && i < t->ndim; i++) cJSON_AddItemToArray(shape, cJSON_CreateNumber((double)t->shape[i]));
    cJSON_AddItemToObject(o, "shape", shape);
    cJSON_AddStringToObject(o, "dtype", t ? mtk_dtype_name(t->dtype) : "");
    return o;
}

static int print_json(const mtk_pipeline *p)
{
    cJSON *root = cJSON_CreateObject(), *components = cJSON_CreateArray(), *notes = cJSON_CreateArray();
    cJSON_AddStringToObject(root, "pipeline", p->name);
    cJSON_AddStringToObject(root, "class", p->class_name);
    cJSON_AddStringToObject(root, "source", p->source);
    if (p->hf_id) cJSON_AddStringToObject(root, "hf_id", p->hf_id);
    cJSON_AddNumberToObject(root, "height", (double)p->options.height);
    cJSON_AddNumberToObject(root, "width", (double)p->options.width);
    cJSON_AddNumberToObject(root, "batch", (double)p->options.batch);
    cJSON_AddNumberToObject(root, "steps", (double)p->options.steps);
    cJSON_AddBoolToObject(root, "guidance", p->options.guidance);
    cJSON_AddNumberToObject(root, "vae_scale_factor", (double)p->scale_factor);
    cJSON_AddNumberToObject(root, "total_params", (double)p->params);
    cJSON_AddNumberToObject(root, "flops_per_image", (double)p->flops_per_image);
    for (int32_t i = 0; i < p->ncomponents; i++) {
        const mtk_pipeline_component *c = &p->components[i];
        cJSON *o = cJSON_CreateObject(), *calls = cJSON_CreateArray();
        cJSON_AddStringToObject(o, "name", c->name);
        cJSON_AddStringToObject(o, "class", c->class_name);
        cJSON_AddStringToObject(o, "role", c->role);
        cJSON_AddStringToObject(o, "dtype", mtk_dtype_name(c->dtype));
        cJSON_AddNumberToObject(o, "params", (double)c->params);
        cJSON_AddNumberToObject(o, "param_bytes", (double)c->param_bytes);
        cJSON_AddNumberToObject(o, "buffer_bytes", (double)c->buffer_bytes);
        cJSON_AddNumberToObject(o, "cache_bytes", (double)c->cache_bytes);
        cJSON_AddNumberToObject(o, "flops_per_image", (double)c->flops_per_image);
        for (int32_t k = 0; k < c->ncalls; k++) {
            const mtk_pipeline_call *call = &c->calls[k];
            cJSON *co = cJSON_CreateObject(), *ins = cJSON_CreateObject(), *outs = cJSON_CreateArray();
            cJSON_AddStringToObject(co, "method", call->method);
            cJSON_AddNumberToObject(co, "per_image", (double)call->per_image);
            for (int32_t j = 0; j < call->nin; j++) cJSON_AddItemToObject(ins, call->input_names[j], shape_json(call->inputs[j]));
            for (int32_t j = 0; j < call->nout; j++) cJSON_AddItemToArray(outs, shape_json(call->outputs[j]));
            cJSON_AddItemToObject(co, "inputs", ins);
            cJSON_AddItemToObject(co, "outputs", outs);
            cJSON_AddNumberToObject(co, "flops", (double)call->flops);
            cJSON_AddItemToArray(calls, co);
        }
        cJSON_AddItemToObject(o, "calls", calls);
        cJSON_AddItemToArray(components, o);
    }
    cJSON_AddItemToObject(root, "components", components);
    for (int32_t i = 0; i < p->nnotes; i++) cJSON_AddItemToArray(notes, cJSON_CreateString(p->notes[i]));
    cJSON_AddItemToObject(root, "notes", notes);
    char *text = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    if (!text) return cli_fail(true, "out_of_memory", NULL, "out of memory");
    puts(text);
    cJSON_free(text);
    return CLI_EXIT_OK;
}

int cli_summary_pipeline(const char *name, const mtk_pipeline_options *options, bool json)
{
    mtk_ctx *ctx = mtk_ctx_new();
    if (!ctx) return cli_fail(json, "out_of_memory", NULL, "out of memory");
    mtk_pipeline *p = mtk_pipeline_resolve(ctx, name, options);
    if (!p) {
        cli_fail_ctx(json, ctx);
        mtk_ctx_free(ctx);
        return CLI_EXIT_ERROR;
    }
    int rc = CLI_EXIT_OK;
    if (json) rc = print_json(p);
    else print_text(p);
    mtk_ctx_free(ctx);
    return rc;
}
