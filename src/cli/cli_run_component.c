/* mtk run of a diffusers component (UNet2DConditionModel, AutoencoderKL,
 * SD3 / FLUX / Lumina 2 transformers): loads it as `mtk load` does, reads
 * its named inputs (--input NAME=VALUE: a file, a number, randn:SHAPE; or
 * a .safetensors file of several), runs one call (mtk_component_run) and
 * writes / reports the outputs; --list-inputs prints the call's
 * arguments.  This file parses the inputs and prints. */
#include "cli/cli.h"
#include "core/text.h"
#include "mtk/mtk.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

/* "1x4x8x8" (or "1,4,8,8") -> a float32 cpu tensor of N(0, 1) from rng. */
static mtk_tensor *randn(mtk_ctx *ctx, const char *name, const char *text, mtk_rng *rng)
{
    int64_t shape[MTK_MAX_DIMS];
    int32_t ndim = 0;
    const char *p = text;
    while (*p) {
        char *end;
        errno = 0;
        long long v = strtoll(p, &end, 10);
        if (end == p || errno || v < 1 || v > ((int64_t)1 << 40) || ndim == MTK_MAX_DIMS || (*end && *end != 'x' && *end != ',')) {
            mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT,
                      "--input %s=randn:%s: expected a shape of positive sizes like randn:1x4x64x64", name, text);
            return NULL;
        }
        shape[ndim++] = v;
        p = *end ? end + 1 : end;
    }
    if (ndim == 0) {
        mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "--input %s=randn:: no shape (randn:1x4x64x64)", name);
        return NULL;
    }
    mtk_tensor *t = mtk_tensor_new(ctx, MTK_FLOAT32, shape, ndim, NULL, MTK_DEVICE_CPU);
    return t && mtk_tensor_alloc_storage(t) && mtk_init_normal_(t, 0.0, 1.0, rng) ? t : NULL;
}

/* "999" -> a 0-d int64 tensor, "0.5" -> a 0-d float32 one (as diffusers
 * makes a tensor of a Python timestep); NULL (no error) when not a number. */
static mtk_tensor *number(mtk_ctx *ctx, const char *text)
{
    char *end;
    errno = 0;
    long long i = strtoll(text, &end, 10);
    if (*text && !*end && !errno) {
        mtk_tensor *t = mtk_tensor_new(ctx, MTK_INT64, NULL, 0, NULL, MTK_DEVICE_CPU);
        if (t && mtk_tensor_alloc_storage(t)) *(int64_t *)mtk_tensor_data(t) = i;
        return t;
    }
    errno = 0;
    double v = strtod(text, &end);
    if (!*text || *end || errno || !isfinite(v)) return NULL;
    mtk_tensor *t = mtk_tensor_new(ctx, MTK_FLOAT32, NULL, 0, NULL, MTK_DEVICE_CPU);
    if (t && mtk_tensor_alloc_storage(t)) *(float *)mtk_tensor_data(t) = (float)v;
    return t;
}

static bool is_argument(const char *const *args, int32_t nargs, const char *name, size_t len)
{
    for (int32_t i = 0; i < nargs; i++)
        if (strlen(args[i]) == len && strncmp(args[i], name, len) == 0) return true;
    return false;
}

static bool add_input(mtk_ctx *ctx, mtk_component_inputs *in, const char *name, mtk_tensor *t)
{
    if (!t) return false;
    for (int32_t i = 0; i < in->count; i++)
        if (strcmp(in->names[i], name) == 0)
            return mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "--input: '%s' is given twice", name);
    if (in->count == MTK_COMPONENT_MAX_INPUTS)
        return mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "--input: more than %d inputs", MTK_COMPONENT_MAX_INPUTS);
    in->names[in->count] = name;
    in->tensors[in->count++] = t;
    return true;
}

/* Every --input into `in`; names checked against the call's arguments. */
static bool read_inputs(mtk_ctx *ctx, const cli_component_run *a, const char *const *args, int32_t nargs,
                        mtk_component_inputs *in)
{
    mtk_rng rng;
    mtk_rng_seed(&rng, a->seed);
    char list[256] = "";
    size_t len = 0;
    for (int32_t i = 0; i < nargs; i++) len += (size_t)snprintf(list + len, sizeof list - len, "%s%s", i ? ", " : "", args[i]);
    for (int32_t k = 0; k < a->ninputs; k++) {
        const char *spec = a->inputs[k], *eq = strchr(spec, '=');
        if (eq && is_argument(args, nargs, spec, (size_t)(eq - spec))) {
            char *name = mtk_ctx_alloc(ctx, (size_t)(eq - spec) + 1);
            if (!name) return mtk_error(ctx, MTK_ERR_OUT_OF_MEMORY, "out of memory");
            memcpy(name, spec, (size_t)(eq - spec));
            name[eq - spec] = '\0';
            const char *value = eq + 1;
            mtk_tensor *t;
            if (strncmp(value, "randn:", 6) == 0) t = randn(ctx, name, value + 6, &rng);
            else if (ends_with(value, ".safetensors") || ends_with(value, ".npy")) t = cli_tensor_read(ctx, value, name, "input");
            else if (!(t = number(ctx, value)) && mtk_ctx_status(ctx) == MTK_OK)
                return mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT,
                                 "--input %s=%s: expected a .safetensors or .npy file, a number or randn:SHAPE", name,
                                 value);
            if (!add_input(ctx, in, name, t)) return false;
        } else if (ends_with(spec, ".safetensors")) {
            /* a file of several inputs, each named as an argument */
            mtk_st_file *f = mtk_st_open(ctx, spec);
            if (!f) return false;
            int64_t n = mtk_st_tensor_count(f);
            bool ok = true;
            for (int64_t i = 0; ok && i < n; i++) {
                const char *name = mtk_st_tensor_at(f, i)->name;
                if (!is_argument(args, nargs, name, strlen(name))) {
                    ok = mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT,
                                   "--input %s: the tensor '%s' is not an argument of the call (it takes %s)", spec,
                                   name, list);
                    break;
                }
                const char *own = mtk_ctx_strdup(ctx, name);
                ok = own && add_input(ctx, in, own, mtk_st_load(ctx, f, name, MTK_DTYPE_UNDEFINED));
            }
            mtk_st_close(f);
            if (!ok) return false;
            if (!n) return mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "--input %s: no tensor (the call takes %s)", spec, list);
        } else {
            return mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT,
                             "--input '%s': expected NAME=VALUE with NAME one of %s, or a .safetensors file of them",
                             spec, list);
        }
    }
    return true;
}

static cJSON *tensor_json(const char *name, const mtk_tensor *t)
{
    cJSON *o = cJSON_CreateObject(), *shape = cJSON_CreateArray();
    cJSON_AddStringToObject(o, "name", name);
    cJSON_AddStringToObject(o, "dtype", mtk_dtype_name(t->dtype));
    for (int32_t d = 0; shape && d < t->ndim; d++) cJSON_AddItemToArray(shape, text_json_int(t->shape[d]));
    cJSON_AddItemToObject(o, "shape", shape);
    return o;
}

static int report(mtk_ctx *ctx, const cli_component_run *a, const mtk_model_info *info, const char *method,
                  const mtk_component_inputs *in, const mtk_model_outputs *out, double load_s, double run_s)
{
    if (a->json) {
        cJSON *doc = cJSON_CreateObject(), *ins = cJSON_CreateArray(), *outs = cJSON_CreateArray();
        cJSON_AddStringToObject(doc, "model", a->model);
        cJSON_AddStringToObject(doc, "architecture", info->architecture ? info->architecture : "");
        cJSON_AddStringToObject(doc, "method", method);
        cJSON_AddStringToObject(doc, "dtype", mtk_dtype_name(info->dtype));
        cJSON_AddNumberToObject(doc, "load_seconds", load_s);
        cJSON_AddNumberToObject(doc, "seconds", run_s);
        for (int32_t i = 0; i < in->count; i++) cJSON_AddItemToArray(ins, tensor_json(in->names[i], in->tensors[i]));
        for (int32_t i = 0; i < out->count; i++) cJSON_AddItemToArray(outs, tensor_json(out->names[i], out->tensors[i]));
        cJSON_AddItemToObject(doc, "inputs", ins);
        cJSON_AddItemToObject(doc, "outputs", outs);
        if (a->output) cJSON_AddStringToObject(doc, "output_file", a->output);
        else cJSON_AddNullToObject(doc, "output_file");
        char *text = cJSON_PrintUnformatted(doc);
        if (text) puts(text);
        cJSON_free(text);
        cJSON_Delete(doc);
        return text ? CLI_EXIT_OK : cli_fail(true, "out_of_memory", NULL, "out of memory");
    }
    printf("ran %s (%s.%s, %s)\n", a->model, info->architecture ? info->architecture : "?", method,
           mtk_dtype_name(info->dtype));
    printf("  load:    %.3f s\n", load_s);
    char label[32];
    snprintf(label, sizeof label, "%s:", method);
    printf("  %-8s %.3f s with %d thread%s\n", label, run_s, mtk_ctx_num_threads(ctx),
           mtk_ctx_num_threads(ctx) == 1 ? "" : "s");
    char shape[128];
    for (int32_t i = 0; i < in->count; i++)
        printf("  in  %-22s %s %s\n", in->names[i], mtk_dtype_name(in->tensors[i]->dtype),
               mtk_shape_str(in->tensors[i]->shape, in->tensors[i]->ndim, shape, sizeof shape));
    for (int32_t i = 0; i < out->count; i++) {
        mtk_tensor *t = out->tensors[i];
        mtk_tensor *f = mtk_contiguous(ctx, mtk_to_dtype(ctx, t, MTK_FLOAT64));
        double sum = 0, sq = 0;
        int64_t n = f ? mtk_tensor_numel(f) : 0;
        for (int64_t j = 0; j < n; j++) {
            double v = ((const double *)mtk_tensor_data(f))[j];
            sum += v, sq += v * v;
        }
        double mean = n ? sum / (double)n : 0, std = n ? sqrt(fmax(sq / (double)n - mean * mean, 0)) : 0;
        printf("  out %-22s %s %s  mean %.6g std %.6g\n", out->names[i], mtk_dtype_name(t->dtype),
               mtk_shape_str(t->shape, t->ndim, shape, sizeof shape), mean, std);
    }
    if (a->output) printf("  written: %s\n", a->output);
    return CLI_EXIT_OK;
}

/* --list-inputs: the call's arguments, from the model built on meta. */
static int list_inputs(mtk_ctx *ctx, const cli_component_run *a)
{
    mtk_model_resolve_options ropts = { .dtype = a->dtype, .meta = true };
    mtk_model_info info;
    mtk_module *model = mtk_model_resolve(ctx, a->model, &ropts, &info);
    if (!model) return cli_fail_ctx(a->json, ctx);
    const char *method = a->method ? a->method : "forward";
    const char *args[MTK_COMPONENT_MAX_INPUTS];
    int32_t required = 0, n = mtk_component_arguments(model, method, args, MTK_COMPONENT_MAX_INPUTS, &required);
    if (n < 0) { /* the library says why */
        mtk_component_inputs in = { .method = method };
        mtk_model_outputs out;
        mtk_component_run(model, &in, &out);
        return cli_fail_ctx(a->json, ctx);
    }
    if (!a->json) {
        for (int32_t i = 0; i < n; i++) printf("%s%s\n", args[i], i < required ? "" : " (optional)");
        return CLI_EXIT_OK;
    }
    cJSON *doc = cJSON_CreateObject(), *list = cJSON_CreateArray();
    cJSON_AddStringToObject(doc, "model", a->model);
    cJSON_AddStringToObject(doc, "architecture", info.architecture ? info.architecture : "");
    cJSON_AddStringToObject(doc, "method", method);
    for (int32_t i = 0; i < n; i++) cJSON_AddItemToArray(list, cJSON_CreateString(args[i]));
    cJSON_AddItemToObject(doc, "arguments", list);
    cJSON_AddNumberToObject(doc, "required", required);
    char *text = cJSON_PrintUnformatted(doc);
    if (text) puts(text);
    cJSON_free(text);
    cJSON_Delete(doc);
    return text ? CLI_EXIT_OK : cli_fail(true, "out_of_memory", NULL, "out of memory");
}

int cli_run_component(mtk_ctx *ctx, const cli_component_run *a)
{
    if (a->list) return list_inputs(ctx, a);
    mtk_model_resolve_options ropts = { .dtype = a->dtype, .meta = true };
    mtk_load_spec spec = { .convert_dtype = a->dtype != MTK_DTYPE_UNDEFINED, .threads = a->threads };
    mtk_model_info info;
    mtk_load_result r;
    memset(&r, 0, sizeof r);
    double t0 = now_seconds();
    mtk_module *model = mtk_model_load(ctx, a->model, a->weights, &ropts, &spec, &info, &r);
    if (!model) return cli_fail_ctx(a->json, ctx);
    double t1 = now_seconds();
    const char *method = a->method ? a->method : "forward";
    const char *args[MTK_COMPONENT_MAX_INPUTS];
    int32_t required = 0, nargs = mtk_component_arguments(model, method, args, MTK_COMPONENT_MAX_INPUTS, &required);
    mtk_component_inputs in = { .method = method };
    mtk_model_outputs out;
    if (nargs < 0) { /* the library says why */
        if (!mtk_component_run(model, &in, &out)) return cli_fail_ctx(a->json, ctx);
    }
    if (!read_inputs(ctx, a, args, nargs, &in)) return cli_fail_ctx(a->json, ctx);
    double t2 = now_seconds();
    if (!mtk_component_run(model, &in, &out)) return cli_fail_ctx(a->json, ctx);
    double t3 = now_seconds();
    if (a->output && !cli_run_write_outputs(ctx, &out, a->output)) return cli_fail_ctx(a->json, ctx);
    return report(ctx, a, &info, method, &in, &out, t1 - t0, t3 - t2);
}
