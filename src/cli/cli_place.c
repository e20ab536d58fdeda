/* mtk place: accelerate's device_map for a model under per-device
 * budgets, with the activations, KV cache and logits of what runs on each
 * device counted (mtk_place_model). */
#include "cli/cli.h"
#include "mtk/mtk.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "usage: mtk place MODEL --max-memory 0=80GiB,1=80GiB,cpu=256GiB[,disk] --input BxS\n"
    "                 [--mode inference|generate] [--new-tokens N] [--strategy balanced|sequential]\n"
    "                 [--margin BYTES] [--dtype D] [--map FILE] [--json]\n"
    "\n"
    "A device map for MODEL in accelerate's format (module name -> GPU index,\n"
    "\"cpu\" or \"disk\"), to pass as is to transformers' from_pretrained(device_map=...).\n"
    "Modules are placed in order as accelerate's infer_auto_device_map does\n"
    "(the classes of transformers' _no_split_modules kept whole, tied parameters\n"
    "on one device), but each device must also hold what runs there: the\n"
    "activations, KV cache and logits of its modules at the input (and\n"
    "generation length), replayed over the traced graph, plus a margin for\n"
    "the CUDA context, cuBLAS workspace and allocator fragmentation.  Modules on\n"
    "cpu or disk run on the first GPU.  docs/placement.md says what is modelled.\n"
    "\n"
    "  mtk place mixtral-8x7b --max-memory 0=24GiB,cpu=128GiB --input 1x2048\n"
    "  mtk place llama-3.1-70b --max-memory 0=80GiB,1=80GiB --input 8x4096 --json\n"
    "  mtk place llama-3.1-8b --max-memory 0=16GiB,cpu=64GiB,disk --input 1x512 --mode generate --new-tokens 512\n"
    "\n"
    "options:\n"
    "  -M, --max-memory LIST    devices and their budgets: INDEX=SIZE for a GPU,\n"
    "                           cpu=SIZE, disk (unlimited) or disk=SIZE; SIZE as\n"
    "                           80GiB, 24GB (= 24e9), 1.5TiB or bytes (required)\n"
    "  -i, --input BxS          token ids: batch x sequence length (required)\n"
    "  -m, --mode MODE          inference (model(ids) with its KV cache; default)\n"
    "                           or generate (prefill, then decode to S + N - 1)\n"
    "      --new-tokens N       generate: tokens to generate (default 1)\n"
    "  -s, --strategy S         balanced (spread over the GPUs; default) or\n"
    "                           sequential (fill each GPU before the next)\n"
    "      --margin BYTES       kept free on each GPU (default: CUDA context\n"
    "                           512 MiB + cuBLAS workspace 32 MiB + 5% of the\n"
    "                           budget for fragmentation)\n"
    "  -t, --dtype D            parameters' dtype (default: the config's)\n"
    "      --map FILE           do not search: charge the device map in FILE (a\n"
    "                           JSON object as accelerate's infer_auto_device_map\n"
    "                           returns it) and report each device's peak, over\n"
    "                           its budget or not (exit 0 either way)\n"
    "  -j, --json               one JSON document: device_map, devices [{device,\n"
    "                           budget_bytes, margin_bytes, weights_bytes,\n"
    "                           peak_bytes, peak_module}], offloaded_bytes,\n"
    "                           weights_bytes, execution_device, no_split_modules,\n"
    "                           options, notes, model\n"
    "  -h, --help               show this help and exit\n"
    "\n"
    "Exit status: 0 on success, 1 on an error (the model does not fit), 2 on a\n"
    "usage error.\n";

enum { OPT_NEW_TOKENS = 256, OPT_MARGIN, OPT_MAP };

/* The device map in `path` ({name: index | "cpu" | "disk"}) as entries
 * over o's devices; NULL after printing the error. */
static mtk_place_entry *read_map(mtk_ctx *ctx, const char *path, const mtk_place_options *o, int32_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        cli_error("place: cannot read --map '%s': %s", path, strerror(errno));
        return NULL;
    }
    char *text = NULL;
    size_t len = 0, cap = 0, got;
    char buf[65536];
    while ((got = fread(buf, 1, sizeof buf, f)) > 0) {
        if (len + got + 1 > cap) {
            cap = (len + got + 1) * 2;
            char *grown = realloc(text, cap);
            if (!grown) break;
            text = grown;
        }
        memcpy(text + len, buf, got);
        len += got;
        text[len] = '\0';
    }
    fclose(f);
    cJSON *root = text ? cJSON_Parse(text) : NULL;
    free(text);
    if (!cJSON_IsObject(root)) {
        cli_error("place: --map '%s' is not a JSON object of module names to devices", path);
        cJSON_Delete(root);
        return NULL;
    }
    mtk_place_entry *entries = mtk_ctx_alloc(ctx, (size_t)(cJSON_GetArraySize(root) + 1) * sizeof *entries);
    *n = 0;
    for (cJSON *it = root->child; entries && it; it = it->next) {
        int32_t d = -1;
        for (int32_t i = 0; i < o->ndevices; i++) {
            const mtk_place_device *dv = &o->devices[i];
            if ((cJSON_IsNumber(it) && dv->kind == MTK_PLACE_GPU && dv->index == it->valueint) ||
                (cJSON_IsString(it) && dv->kind == MTK_PLACE_CPU && strcmp(it->valuestring, "cpu") == 0) ||
                (cJSON_IsString(it) && dv->kind == MTK_PLACE_DISK && strcmp(it->valuestring, "disk") == 0))
                d = i;
        }
        if (d < 0) {
            char *v = cJSON_PrintUnformatted(it);
            cli_error("place: --map puts '%s' on %s, which --max-memory does not name", it->string, v ? v : "?");
            cJSON_free(v);
            cJSON_Delete(root);
            return NULL;
        }
        size_t nl = strlen(it->string);
        char *name = mtk_ctx_alloc(ctx, nl + 1);
        if (!name) break;
        memcpy(name, it->string, nl + 1);
        entries[(*n)++] = (mtk_place_entry){ .name = name, .device = d };
    }
    cJSON_Delete(root);
    if (!entries) cli_error("place: out of memory");
    return entries;
}

int cli_place(int argc, char **argv)
{
    static const struct option longopts[] = {
        { "max-memory", required_argument, NULL, 'M' }, { "input", required_argument, NULL, 'i' },
        { "mode", required_argument, NULL, 'm' },       { "new-tokens", required_argument, NULL, OPT_NEW_TOKENS },
        { "strategy", required_argument, NULL, 's' },   { "margin", required_argument, NULL, OPT_MARGIN },
        { "dtype", required_argument, NULL, 't' },      { "json", no_argument, NULL, 'j' },
        { "map", required_argument, NULL, OPT_MAP },    { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    mtk_place_options o;
    mtk_place_options_init(&o);
    mtk_ctx *ctx = mtk_ctx_new();
    if (!ctx) {
        cli_error("place: out of memory");
        return CLI_EXIT_ERROR;
    }
    bool json = false, input = false;
    const char *map = NULL;
    int c, rc = -1;
    cli_options_reset();
    while (rc < 0 && (c = cli_getopt("place", argc, argv, "M:i:m:s:t:jh", longopts)) != -1) {
        bool bad = false;
        switch (c) {
        case 'M':
            if (!mtk_place_parse_max_memory(ctx, optarg, &o))
                rc = cli_usage_error("place", "%s", mtk_ctx_message(ctx));
            break;
        case 'i': bad = !cli_parse_input(optarg, &o.batch, &o.seq), input = true; break;
        case 'm':
            if (strcmp(optarg, "inference") == 0) o.mode = MTK_MEMORY_INFERENCE;
            else if (strcmp(optarg, "generate") == 0) o.mode = MTK_MEMORY_GENERATE;
            else bad = true;
            break;
        case 's':
            if (strcmp(optarg, "balanced") == 0) o.strategy = MTK_PLACE_BALANCED;
            else if (strcmp(optarg, "sequential") == 0) o.strategy = MTK_PLACE_SEQUENTIAL;
            else bad = true;
            break;
        case OPT_NEW_TOKENS: {
            char *end;
            errno = 0;
            long long v = strtoll(optarg, &end, 10);
            bad = errno || end == optarg || *end || v < 1 || v > (1LL << 40);
            o.new_tokens = v;
            break;
        }
        case OPT_MARGIN: bad = !cli_parse_bytes(optarg, &o.margin_bytes); break;
        case 't':
            o.dtype = cli_parse_floating_dtype("place", "--dtype", optarg);
            if (o.dtype == MTK_DTYPE_UNDEFINED) rc = CLI_EXIT_USAGE;
            break;
        case 'j': json = true; break;
        case OPT_MAP: map = optarg; break;
        case 'h': fputs(usage, stdout); rc = CLI_EXIT_OK; break;
        default: rc = CLI_EXIT_USAGE; break;
        }
        if (bad) {
            const char *name = "option";
            for (const struct option *lo = longopts; lo->name; lo++)
                if (lo->val == c) name = lo->name;
            rc = cli_usage_error("place", "bad value '%s' for --%s", optarg, name);
        }
    }
    if (rc < 0 && optind != argc - 1)
        rc = cli_usage_error("place", optind >= argc ? "missing MODEL" : "one MODEL expected, got '%s' too",
                             optind < argc - 1 ? argv[optind + 1] : "");
    if (rc < 0 && o.ndevices == 0)
        rc = cli_usage_error("place", "--max-memory is required (e.g. --max-memory 0=24GiB,cpu=64GiB)");
    if (rc < 0 && !input) rc = cli_usage_error("place", "--input BxS is required (e.g. --input 1x2048)");
    if (rc >= 0) {
        mtk_ctx_free(ctx);
        return rc;
    }
    mtk_place_plan *plan;
    if (map) {
        int32_t n = 0;
        mtk_place_entry *entries = read_map(ctx, map, &o, &n);
        if (!entries) {
            mtk_ctx_free(ctx);
            return CLI_EXIT_ERROR;
        }
        plan = mtk_place_evaluate(ctx, argv[optind], &o, entries, n);
    } else {
        plan = mtk_place_model(ctx, argv[optind], &o);
    }
    char *text = !plan ? NULL : json ? mtk_place_plan_json(ctx, plan) : mtk_place_plan_text(ctx, plan);
    if (!text) {
        rc = cli_fail_ctx(json, ctx);
        mtk_ctx_free(ctx);
        return rc;
    }
    if (json) puts(text);
    else fputs(text, stdout);
    mtk_ctx_free(ctx);
    return CLI_EXIT_OK;
}
