/* mtk denoise: loads a diffusers denoiser (SD3, FLUX, Lumina 2 ...) from
 * its save_pretrained checkpoint, runs one forward on the cpu on named
 * inputs read from a safetensors file (mtk_denoiser_run), writes the
 * prediction and reports its shape and the time.  This file parses
 * options and prints. */
#include "cli/cli.h"
#include "core/text.h"
#include "mtk/denoise.h"
#include "mtk/mtk.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

static const char usage[] =
    "usage: mtk denoise MODEL --weights PATH --inputs FILE.safetensors\n"
    "                   [--dtype D] [--output FILE.safetensors] [--threads N]\n"
    "                   [--json]\n"
    "\n"
    "Loads the diffusers denoiser MODEL (a built-in name, a config.json or a\n"
    "directory holding one: SD3Transformer2DModel, FluxTransformer2DModel,\n"
    "Lumina2Transformer2DModel) from the safetensors checkpoint PATH (the\n"
    "diffusion_pytorch_model.safetensors save_pretrained writes), then runs\n"
    "one forward on the cpu as diffusers runs model(**inputs,\n"
    "return_dict=False)[0] under no_grad.\n"
    "\n"
    "FILE holds one tensor per argument of the forward, named as diffusers\n"
    "names it (`mtk denoise MODEL --list-inputs` lists them): SD3\n"
    "hidden_states, encoder_hidden_states, pooled_projections, timestep; FLUX\n"
    "the same plus img_ids, txt_ids[, guidance]; Lumina 2 hidden_states,\n"
    "timestep, encoder_hidden_states, encoder_attention_mask (all ones).\n"
    "\n"
    "options:\n"
    "  -w, --weights PATH       the checkpoint (required)\n"
    "  -i, --inputs FILE        the forward's arguments (required)\n"
    "  -l, --list-inputs        print the argument names, in order, and exit\n"
    "  -d, --dtype D            run in floating dtype D (weights converted on\n"
    "                           load, inputs cast as the pipeline casts them);\n"
    "                           default: the config's dtype\n"
    "  -o, --output FILE        write the prediction (\"sample\") to\n"
    "                           FILE.safetensors, atomically\n"
    "  -t, --threads N          cpu threads (default: one per cpu)\n"
    "  -j, --json               print one JSON document: {\"model\",\n"
    "                           \"architecture\", \"dtype\", \"inputs\": [{\"name\",\n"
    "                           \"dtype\", \"shape\"}], \"load_seconds\", \"seconds\",\n"
    "                           \"output\": {\"name\", \"dtype\", \"shape\"},\n"
    "                           \"output_file\"}\n"
    "  -h, --help               show this help and exit\n"
    "\n"
    "Exit status: 0 on success, 1 on an error (a missing or unknown argument,\n"
    "a key mismatch, shapes the model refuses), 2 on a usage error.\n";

typedef struct denoise_args {
    const char *model, *weights, *inputs, *output;
    mtk_dtype dtype;
    int32_t threads;
    bool json, list;
} denoise_args;

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* MODEL's config as mtk_model_resolve reads it: a config.json (or a
 * directory holding one) of that name before a built-in of that name. */
static mtk_model_config *config_of(mtk_ctx *ctx, const char *model)
{
    struct stat st;
    char path[4096];
    const mtk_builtin_model *b = mtk_builtin_model_find(model);
    bool local = stat(model, &st) == 0;
    if (local && S_ISDIR(st.st_mode)) {
        snprintf(path, sizeof path, "%s/config.json", model);
        local = stat(path, &st) == 0;
    }
    if (b && !local) return mtk_model_config_parse(ctx, b->config_json, b->name);
    return mtk_model_config_load(ctx, model);
}

/* Every tensor of FILE, loaded (names in the arena). */
static int32_t read_inputs(mtk_ctx *ctx, const char *path, mtk_named_tensor *out, int32_t cap)
{
    mtk_st_file *f = mtk_st_open(ctx, path);
    if (!f) return -1;
    int64_t n = mtk_st_tensor_count(f);
    if (n > cap) {
        mtk_st_close(f);
        mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "denoise: %s holds %lld tensors, more than the %d arguments a "
                  "denoiser takes", path, (long long)n, (int)cap);
        return -1;
    }
    for (int64_t i = 0; i < n; i++) {
        const char *name = mtk_st_tensor_at(f, i)->name;
        out[i] = (mtk_named_tensor){ .name = mtk_ctx_strdup(ctx, name),
                                     .tensor = mtk_st_load(ctx, f, name, MTK_DTYPE_UNDEFINED) };
        if (!out[i].name || !out[i].tensor) {
            mtk_st_close(f);
            return -1;
        }
    }
    mtk_st_close(f);
    return (int32_t)n;
}

static cJSON *tensor_json(const char *name, const mtk_tensor *t)
{
    cJSON *o = cJSON_CreateObject(), *shape = cJSON_CreateArray();
    cJSON_AddStringToObject(o, "name", name);
    cJSON_AddStringToObject(o, "dtype", mtk_dtype_name(t->dtype));
    for (int32_t d = 0; d < t->ndim; d++) cJSON_AddItemToArray(shape, text_json_int(t->shape[d]));
    cJSON_AddItemToObject(o, "shape", shape);
    return o;
}

static int list_inputs(mtk_ctx *ctx, const denoise_args *a)
{
    const char *names[MTK_DENOISER_MAX_INPUTS];
    mtk_model_config *config = config_of(ctx, a->model);
    int32_t n = config ? mtk_denoiser_input_names(config, names, MTK_DENOISER_MAX_INPUTS) : -1;
    mtk_model_config_free(config);
    if (n < 0) return cli_fail_ctx(a->json, ctx);
    cJSON *list = a->json ? cJSON_CreateArray() : NULL;
    for (int32_t i = 0; i < n; i++) {
        if (list) cJSON_AddItemToArray(list, cJSON_CreateString(names[i]));
        else puts(names[i]);
    }
    if (list) {
        char *text = cJSON_PrintUnformatted(list);
        if (text) puts(text);
        cJSON_free(text);
        cJSON_Delete(list);
    }
    return CLI_EXIT_OK;
}

static int report(const denoise_args *a, const mtk_model_info *info, const mtk_named_tensor *in, int32_t nin,
                  const mtk_tensor *out, double load_s, double run_s)
{
    if (a->json) {
        cJSON *doc = cJSON_CreateObject(), *inputs = cJSON_CreateArray();
        cJSON_AddStringToObject(doc, "model", a->model);
        cJSON_AddStringToObject(doc, "architecture", info->architecture ? info->architecture : "");
        cJSON_AddStringToObject(doc, "dtype", mtk_dtype_name(info->dtype));
        for (int32_t i = 0; i < nin; i++) cJSON_AddItemToArray(inputs, tensor_json(in[i].name, in[i].tensor));
        cJSON_AddItemToObject(doc, "inputs", inputs);
        cJSON_AddNumberToObject(doc, "load_seconds", load_s);
        cJSON_AddNumberToObject(doc, "seconds", run_s);
        cJSON_AddItemToObject(doc, "output", tensor_json("sample", out));
        if (a->output) cJSON_AddStringToObject(doc, "output_file", a->output);
        else cJSON_AddNullToObject(doc, "output_file");
        char *text = cJSON_PrintUnformatted(doc);
        if (text) puts(text);
        cJSON_free(text);
        cJSON_Delete(doc);
        return text ? CLI_EXIT_OK : cli_fail(true, "out_of_memory", NULL, "out of memory");
    }
    char shape[128];
    printf("ran %s (%s, %s)\n", a->model, info->architecture ? info->architecture : "?", mtk_dtype_name(info->dtype));
    for (int32_t i = 0; i < nin; i++)
        printf("  %-24s %s %s\n", in[i].name, mtk_dtype_name(in[i].tensor->dtype),
               mtk_shape_str(in[i].tensor->shape, in[i].tensor->ndim, shape, sizeof shape));
    printf("  load:    %.3f s\n", load_s);
    printf("  forward: %.3f s\n", run_s);
    printf("  %-24s %s %s\n", "sample", mtk_dtype_name(out->dtype), mtk_shape_str(out->shape, out->ndim, shape, sizeof shape));
    if (a->output) printf("  written: %s\n", a->output);
    return CLI_EXIT_OK;
}

static int denoise(mtk_ctx *ctx, const denoise_args *a)
{
    mtk_named_tensor in[MTK_DENOISER_MAX_INPUTS];
    int32_t nin = read_inputs(ctx, a->inputs, in, MTK_DENOISER_MAX_INPUTS);
    if (nin < 0) return cli_fail_ctx(a->json, ctx);
    mtk_model_resolve_options ropts = { .dtype = a->dtype, .meta = true };
    mtk_load_spec spec = { .convert_dtype = a->dtype != MTK_DTYPE_UNDEFINED, .threads = a->threads };
    mtk_model_info info;
    mtk_load_result r;
    memset(&r, 0, sizeof r);
    double t0 = now_seconds();
    mtk_module *model = mtk_model_load(ctx, a->model, a->weights, &ropts, &spec, &info, &r);
    if (!model) return cli_fail_ctx(a->json, ctx);
    mtk_model_config *config = config_of(ctx, a->model);
    double t1 = now_seconds();
    mtk_tensor *out = config ? mtk_denoiser_run(model, config, in, nin) : NULL;
    out = out ? mtk_contiguous(ctx, out) : NULL;
    double t2 = now_seconds();
    mtk_model_config_free(config);
    if (!out) return cli_fail_ctx(a->json, ctx);
    if (a->output) {
        mtk_st_writer *w = mtk_st_writer_new(ctx);
        bool ok = w && mtk_st_writer_set_metadata(w, "format", "pt") && mtk_st_writer_add(w, "sample", out) &&
                  mtk_st_writer_write(w, a->output);
        mtk_st_writer_free(w);
        if (!ok) return cli_fail_ctx(a->json, ctx);
    }
    return report(a, &info, in, nin, out, t1 - t0, t2 - t1);
}

int cli_denoise(int argc, char **argv)
{
    static const struct option longopts[] = {
        { "weights", required_argument, NULL, 'w' }, { "inputs", required_argument, NULL, 'i' },
        { "list-inputs", no_argument, NULL, 'l' },   { "dtype", required_argument, NULL, 'd' },
        { "output", required_argument, NULL, 'o' },  { "threads", required_argument, NULL, 't' },
        { "json", no_argument, NULL, 'j' },          { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    denoise_args a = { .dtype = MTK_DTYPE_UNDEFINED };
    int opt;
    cli_options_reset();
    while ((opt = cli_getopt("denoise", argc, argv, "w:i:ld:o:t:jh", longopts)) != -1) {
        switch (opt) {
        case 'w': a.weights = optarg; break;
        case 'i': a.inputs = optarg; break;
        case 'l': a.list = true; break;
        case 'd':
            a.dtype = cli_parse_floating_dtype("denoise", "--dtype", optarg);
            if (a.dtype == MTK_DTYPE_UNDEFINED) return CLI_EXIT_USAGE;
            break;
        case 'o': a.output = optarg; break;
        case 't': {
            char *end;
            long v = strtol(optarg, &end, 10);
            if (*end || v < 1 || v > 1024) return cli_usage_error("denoise", "--threads '%s' is not 1..1024", optarg);
            a.threads = (int32_t)v;
            break;
        }
        case 'j': a.json = true; break;
        case 'h': fputs(usage, stdout); return CLI_EXIT_OK;
        default: return CLI_EXIT_USAGE;
        }
    }
    if (argc - optind != 1)
        return cli_usage_error("denoise", "expected one MODEL, got %d argument%s", argc - optind,
                               argc - optind == 1 ? "" : "s");
    a.model = argv[optind];
    if (!a.list && !a.weights) return cli_usage_error("denoise", "--weights PATH is required");
    if (!a.list && !a.inputs) return cli_usage_error("denoise", "--inputs FILE is required");
    if (a.threads > 0) {
        char n[16];
        snprintf(n, sizeof n, "%d", (int)a.threads);
        setenv("OPENBLAS_NUM_THREADS", n, 1); /* before the first product loads OpenBLAS */
    }
    mtk_ctx *ctx = mtk_ctx_new();
    if (!ctx) return cli_fail(a.json, "out_of_memory", NULL, "out of memory");
    if (a.threads > 0) mtk_ctx_set_num_threads(ctx, a.threads);
    int status = a.list ? list_inputs(ctx, &a) : denoise(ctx, &a);
    mtk_ctx_free(ctx);
    return status;
}
