/* mtk summary: builds a model on the meta device and prints its summary
 * (mtk_summary_new / mtk_summary_text / mtk_summary_json). */
#include "cli/cli.h"
#include "cli/cli_summary_pipeline.h"
#include "mtk/mtk.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "usage: mtk summary [--input SHAPE]... [--depth N] [--dtype D] [--json] MODEL\n"
    "       mtk summary PIPELINE [--image HxW] [--steps N] [--batch N] [--guidance] [--json]\n"
    "\n"
    "Builds MODEL on the meta device (no memory for its weights) and prints a\n"
    "summary like Lightning's ModelSummary: each module's name, type and\n"
    "parameter count down to --depth, then trainable, non-trainable and total\n"
    "parameters and their memory by dtype.  With --input, a forward pass on a\n"
    "meta tensor of that shape is traced first: the table gains each module's\n"
    "in and out sizes and FLOPs (as torch.utils.flop_counter counts them), and\n"
    "lazy modules (LazyLinear, LazyConv*, LazyBatchNorm*) get their shapes, so\n"
    "their parameters are counted.  Without it, lazy parameters are reported as\n"
    "uninitialized.\n"
    "\n"
    "MODEL is a built-in model name ('mtk models' lists them), a Hugging Face\n"
    "config.json, or a directory holding one.  Language models take --input as\n"
    "token ids BxS (int64), ViT as pixels BxCxHxW, encoder-decoders (t5) twice:\n"
    "the encoder's ids BxS, then the decoder's BxT.  Demo models:\n"
    "%s"
    "\n"
    "  mtk summary llama-3-8b --input 1x2048\n"
    "  mtk summary path/to/config.json --input 4x512 --depth 4\n"
    "  mtk summary lazynet --input 1x3x32x32 --json\n"
    "  mtk summary t5-base --input 1x512 --input 1x128\n"
    "  mtk summary sdxl-base --image 1024x1024 --steps 30 --guidance\n"
    "\n"
    "A PIPELINE is a built-in diffusers pipeline (sd-1.5, sdxl-base) or a\n"
    "directory holding model_index.json and one folder per component: each\n"
    "model component (text encoders, denoiser, VAE) is built on meta and called\n"
    "as the pipeline calls it at the image size: its inputs and outputs, its\n"
    "parameters, FLOPs per call and per image (steps x denoiser calls).\n"
    "\n"
    "options:\n"
    "  -i, --input SHAPE  an example input: sizes separated by 'x' or ','\n"
    "                     (1x3x32x32, [1, 10]), optionally ':DTYPE' (1x16:int64);\n"
    "                     repeat for a model with several inputs\n"
    "  -d, --depth N      rows down to depth N (0: the model's own row; 1: its\n"
    "                     children; -1: all; default 3); identical layers are one\n"
    "                     row (\"layers.0-79 | 80 \u00d7 LlamaDecoderLayer\") whose\n"
    "                     Params and FLOPs are the total of all 80 and whose\n"
    "                     sizes are each layer's; a container that is not called\n"
    "                     itself (ModuleList) shows its children's FLOPs summed\n"
    "  -t, --dtype D      build the model (and float inputs) in floating dtype D\n"
    "                     (float32, float16, bfloat16, float64, float8_e4m3fn,\n"
    "                     float8_e5m2, or safetensors' F32, BF16, ...;\n"
    "                     default: the config's torch_dtype)\n"
    "  -j, --json         print one JSON document: total_params,\n"
    "                     trainable_params, non_trainable_params,\n"
    "                     uninitialized_params, param_bytes, param_bytes_by_dtype,\n"
    "                     flops (null without --input), input_shapes,\n"
    "                     output_shapes, uninitialized_modules, notes, model\n"
    "                     {name, source, family, class, dtype}, and modules\n"
    "                     (one per module, not collapsed: every figure is\n"
    "                     that module's own):\n"
    "                     [{name, type, depth, params, uninitialized_params,\n"
    "                     in_shapes, out_shapes, flops}]\n"
    "  --image HxW        a pipeline's image size in pixels (default: the\n"
    "                     denoiser's sample_size x the VAE's factor)\n"
    "  --steps N          denoising steps (default 50)\n"
    "  --batch N          images per call (default 1)\n"
    "  --guidance         classifier-free guidance: the denoiser sees a doubled\n"
    "                     batch, text encoders encode the negative prompt too\n"
    "  -h, --help         show this help and exit\n"
    "\n"
    "Errors go to stderr as 'mtk: error: ...' (with --json, as one line\n"
    "{\"error\": {\"code\", \"message\"}} on stdout).\n"
    "Exit status: 0 on success, 1 on an error (unknown model, a forward that\n"
    "fails on the input), 2 on a usage error.\n";

static void print_usage(void)
{
    char models[2048] = "";
    size_t len = 0;
    for (int32_t i = 0; i < mtk_demo_model_count() && len < sizeof models; i++) {
        const mtk_demo_model *e = mtk_demo_model_at(i);
        len += (size_t)snprintf(models + len, sizeof models - len, "  %-10s %s\n", e->name, e->description);
    }
    printf(usage, models);
}

#define MAX_INPUTS MTK_MODULE_MAX_IO

typedef struct input_spec {
    int64_t shape[MTK_MAX_DIMS];
    int32_t ndim;
    mtk_dtype dtype; /* UNDEFINED: the model's dtype */
} input_spec;

/* "1x3x32x32", "1,10", "[1, 10]", "(2,)", "[]", with an optional
 * ":dtype".  False with a message for anything else. */
static bool parse_shape(const char *text, input_spec *out, char *err, size_t errcap)
{
    memset(out, 0, sizeof *out);
    out->dtype = MTK_DTYPE_UNDEFINED;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", text);
    char *colon = strrchr(buf, ':');
    if (colon) {
        *colon = '\0';
        out->dtype = cli_dtype_from_name(colon + 1);
        if (out->dtype == MTK_DTYPE_UNDEFINED) {
            snprintf(err, errcap, "unknown dtype '%s' in --input %s", colon + 1, text);
            return false;
        }
    }
    const char *p = buf;
    while (isspace((unsigned char)*p) || *p == '[' || *p == '(') p++;
    for (;;) {
        while (isspace((unsigned char)*p)) p++;
        if (*p == '\0' || *p == ']' || *p == ')') break;
        if (!isdigit((unsigned char)*p)) {
            snprintf(err, errcap, "bad --input '%s': sizes are non-negative integers separated by 'x' or ','", text);
            return false;
        }
        if (out->ndim == MTK_MAX_DIMS) {
            snprintf(err, errcap, "--input '%s' has more than %d dims", text, MTK_MAX_DIMS);
            return false;
        }
        errno = 0;
        char *end;
        long long v = strtoll(p, &end, 10);
        if (errno) {
            snprintf(err, errcap, "--input '%s': a size is too large", text);
            return false;
        }
        out->shape[out->ndim++] = v;
        p = end;
        while (isspace((unsigned char)*p)) p++;
        if (*p == 'x' || *p == 'X' || *p == ',') p++;
    }
    while (*p == ']' || *p == ')' || isspace((unsigned char)*p)) p++;
    if (*p) {
        snprintf(err, errcap, "bad --input '%s': unexpected '%c'", text, *p);
        return false;
    }
    return true;
}

/* {"name", "source", "family", "class", "dtype"} of the model, printed
 * (NULL on out of memory; free with cJSON_free). */
static char *model_json(const mtk_model_info *info)
{
    cJSON *o = cJSON_CreateObject();
    if (!o) return NULL;
    cJSON_AddStringToObject(o, "name", info->name);
    cJSON_AddStringToObject(o, "source", info->source);
    cJSON_AddStringToObject(o, "family", info->family);
    cJSON_AddStringToObject(o, "class", info->architecture);
    cJSON_AddStringToObject(o, "dtype", mtk_dtype_name(info->dtype));
    char *out = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return out;
}

static int fail(mtk_ctx *ctx, bool json)
{
    cli_fail_ctx(json, ctx);
    mtk_ctx_free(ctx);
    return CLI_EXIT_ERROR;
}

int cli_summary(int argc, char **argv)
{
    static const struct option longopts[] = {
        { "input", required_argument, NULL, 'i' }, { "depth", required_argument, NULL, 'd' },
        { "dtype", required_argument, NULL, 't' }, { "json", no_argument, NULL, 'j' },
        { "help", no_argument, NULL, 'h' },        { "image", required_argument, NULL, 'I' },
        { "steps", required_argument, NULL, 'S' }, { "batch", required_argument, NULL, 'B' },
        { "guidance", no_argument, NULL, 'g' },    { NULL, 0, NULL, 0 },
    };
    mtk_pipeline_options pipe = { 0 };
    bool pipeline_options = false;
    input_spec inputs[MAX_INPUTS];
    int32_t ninputs = 0, depth = 3;
    mtk_dtype dtype = MTK_DTYPE_UNDEFINED;
    bool json = false;
    char err[512];
    int opt;
    cli_options_reset();
    while ((opt = cli_getopt("summary", argc, argv, "i:d:t:jh", longopts)) != -1) {
        switch (opt) {
        case 'i':
            if (ninputs == MAX_INPUTS) return cli_usage_error("summary", "at most %d --input options", MAX_INPUTS);
            if (!parse_shape(optarg, &inputs[ninputs++], err, sizeof err)) return cli_usage_error("summary", "%s", err);
            break;
        case 'd': {
            char *end;
            errno = 0;
            long v = strtol(optarg, &end, 10);
            if (errno || *end || end == optarg || v < -1 || v > 1000)
                return cli_usage_error("summary", "--depth takes an integer from -1 to 1000, not '%s'", optarg);
            depth = (int32_t)v;
            break;
        }
        case 't':
            dtype = cli_parse_floating_dtype("summary", "--dtype", optarg);
            if (dtype == MTK_DTYPE_UNDEFINED) return CLI_EXIT_USAGE;
            break;
        case 'j': json = true; break;
        case 'I':
            if (!cli_parse_image(optarg, &pipe.height, &pipe.width))
                return cli_usage_error("summary", "--image takes HxW in pixels (e.g. 1024x1024), not '%s'", optarg);
            pipeline_options = true;
            break;
        case 'S':
        case 'B': {
            char *end;
            errno = 0;
            long long v = strtoll(optarg, &end, 10);
            if (errno || *end || end == optarg || v < 1 || v > 100000)
                return cli_usage_error("summary", "--%s takes an integer from 1 to 100000, not '%s'",
                                       opt == 'S' ? "steps" : "batch", optarg);
            *(opt == 'S' ? &pipe.steps : &pipe.batch) = v;
            pipeline_options = true;
            break;
        }
        case 'g': pipe.guidance = true, pipeline_options = true; break;
        case 'h': print_usage(); return CLI_EXIT_OK;
        default: return CLI_EXIT_USAGE;
        }
    }
    if (argc - optind != 1)
        return cli_usage_error("summary", argc - optind == 0 ? "no MODEL given" : "one MODEL, got %d",
                               argc - optind);
    const char *model_name = argv[optind];
    if (pipeline_options || mtk_pipeline_exists(model_name)) {
        if (ninputs > 0) return cli_usage_error("summary", "a pipeline takes --image, not --input");
        pipe.dtype = dtype;
        return cli_summary_pipeline(model_name, &pipe, json);
    }

    mtk_ctx *ctx = mtk_ctx_new();
    if (!ctx) return cli_fail(json, "out_of_memory", NULL, "out of memory");
    /* everything on meta: no memory for weights or activations.  A float8
     * dtype cannot be the default one (as in torch.set_default_dtype): the
     * model is built in its config's dtype and then converted, as
     * model.to(torch.float8_e4m3fn) does. */
    bool storage_only = mtk_dtype_is_float8(dtype);
    mtk_dtype build_dtype = storage_only ? MTK_DTYPE_UNDEFINED : dtype;
    if (!mtk_ctx_push_device(ctx, MTK_DEVICE_META) || !mtk_ctx_push_init_mode(ctx, MTK_INIT_META) ||
        (build_dtype != MTK_DTYPE_UNDEFINED && !mtk_ctx_push_dtype(ctx, build_dtype)))
        return fail(ctx, json);
    mtk_model_resolve_options options = { .dtype = build_dtype, .meta = true };
    mtk_model_info info;
    mtk_module *model = mtk_model_resolve(ctx, model_name, &options, &info);
    if (!model) return fail(ctx, json);
    if (storage_only) {
        if (!mtk_module_to_dtype(model, dtype)) return fail(ctx, json);
        info.dtype = dtype;
        if (mtk_dtype_is_floating(info.input_dtype)) info.input_dtype = dtype;
    }
    mtk_tensor *tensors[MAX_INPUTS];
    for (int32_t i = 0; i < ninputs; i++) {
        mtk_dtype d = inputs[i].dtype != MTK_DTYPE_UNDEFINED ? inputs[i].dtype : info.input_dtype;
        tensors[i] = mtk_tensor_new(ctx, d, inputs[i].shape, inputs[i].ndim, NULL, MTK_DEVICE_META);
        if (!tensors[i]) return fail(ctx, json);
    }
    mtk_summary *summary = mtk_summary_new(model, tensors, ninputs);
    if (!summary) return fail(ctx, json);
    for (int32_t i = 0; i < info.nnotes; i++)
        if (ninputs > 0 && !mtk_summary_add_note(summary, info.notes[i])) return fail(ctx, json);
    char *text = json ? mtk_summary_json(summary, depth) : mtk_summary_text(summary, depth);
    if (!text) return fail(ctx, json);
    if (json && text[0] == '{') {
        /* the model's identity first, then the summary's fields */
        char *identity = model_json(&info);
        if (!identity) {
            mtk_error(ctx, MTK_ERR_OUT_OF_MEMORY, "summary: out of memory");
            return fail(ctx, json);
        }
        printf("{\"model\":%s,", identity);
        cJSON_free(identity);
        text++;
    } else if (!json) {
        if (strcmp(info.source, "demo") == 0)
            printf("%s: %s (demo model), %s\n", info.name, info.architecture, mtk_dtype_name(info.dtype));
        else
            printf("%s: %s (%s, %s), %s\n", info.name, info.architecture, info.family, info.source,
                   mtk_dtype_name(info.dtype));
    }
    fputs(text, stdout);
    if (json) fputc('\n', stdout);
    mtk_summary_free(summary);
    mtk_ctx_free(ctx);
    return CLI_EXIT_OK;
}
