/* mtk shard: a parallel plan for a model (mtk_shard_plan_model):
 * placements and per-rank slices of every parameter, per-rank memory,
 * the collectives of a step and the pipeline bubble. */
#include "cli/cli.h"
#include "cli/cli_shard_search.h"
#include "mtk/mtk.h"
#include "mtk/plan.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "usage: mtk shard MODEL --input BxS [--tp T] [--pp P] [--dp D] [--ep E]\n"
    "                 [--zero 0|1|2|3 | --fsdp] [--sp] [--micro-batch M]\n"
    "                 [--global-batch G] [--recompute none|selective|full]\n"
    "                 [--mode training|inference] [--dtype D] [--device-kind K]\n"
    "                 [--rank R] [--json]\n"
    "                 [--gpu NAME [--efficiency E] ...]\n"
    "       mtk shard MODEL --search --gpus N --gpu NAME --input BxS --global-batch G\n"
    "                 [--top K] [--max-micro-batch M] [--efficiency E] [--nvlink-gbps GB/s]\n"
    "                 [--ib-gbps GB/s] [--gpus-per-node K] [--gpu-memory GiB]\n"
    "                 [--margin BYTES] [--json]\n"
    "\n"
    "A parallel plan for MODEL over tp x pp x dp ranks (rank = t + tp * (d + dp *\n"
    "stage)): every parameter's DTensor placement under transformers' tensor-\n"
    "parallel plan of its family and its slice on each rank; pipeline stages\n"
    "balanced by FLOPs; each rank's memory (parameters, gradients and optimizer\n"
    "states as ZeRO or FSDP divide them, the activations of its stage for the\n"
    "micro-batches 1F1B keeps in flight, the largest working set) from the\n"
    "graph of one traced forward; the collectives of one step and the pipeline\n"
    "bubble.  docs/sharding.md says what is modelled and how.\n"
    "\n"
    "  mtk shard llama-3-8b --tp 4 --input 1x2048\n"
    "  mtk shard llama-3.1-70b --tp 8 --pp 4 --dp 2 --zero 1 --input 1x4096 --global-batch 64\n"
    "  mtk shard mixtral-8x7b --tp 2 --dp 4 --ep 4 --input 1x4096 --json\n"
    "  mtk shard llama-3.1-70b --search --gpus 64 --gpu h100-80gb --input 1x4096 --global-batch 512\n"
    "\n"
    "options:\n"
    "  -i, --input BxS          micro-batch x sequence length (required; B is\n"
    "                           the micro-batch unless --micro-batch says)\n"
    "      --tp T               tensor parallel ranks (default 1)\n"
    "      --pp P               pipeline stages (default 1)\n"
    "      --dp D               data parallel replicas (default 1)\n"
    "      --ep E               expert parallel (MoE models): a multiple of --tp\n"
    "                           dividing tp x dp, as transformers' ep_size\n"
    "      --zero N             DeepSpeed ZeRO stage 0-3 over dp\n"
    "      --fsdp               FSDP2: parameters, gradients, states Shard(0) over dp\n"
    "      --sp                 sequence parallel with tp\n"
    "      --micro-batch M      sequences per micro-batch\n"
    "      --global-batch G     sequences per step (default micro-batch x dp)\n"
    "      --recompute R        none (default), selective (attention), full (layers)\n"
    "  -m, --mode MODE          training (default) or inference\n"
    "  -t, --dtype D            parameters' dtype (default: the config's)\n"
    "      --device-kind K      cuda (default) or cpu: whose kernels and allocator\n"
    "                           the per-rank memory replay follows\n"
    "  -r, --rank R             only rank R's slices, memory and collectives\n"
    "  -j, --json               one JSON document: world_size, mesh, parameters,\n"
    "                           ranks, communication, bubble (docs/sharding.md)\n"
    "\n"
    "search (--search) and the step estimate (--gpu without --search):\n"
    "      --search             try every tp x pp x dp = N, ep (MoE), ZeRO 0-3 or\n"
    "                           FSDP, sp, recompute and micro-batch 1, 2, 4 ..;\n"
    "                           print the fastest that fit and why they win\n"
    "      --gpus N             GPUs to fill (required with --search)\n"
    "      --gpu NAME           h100-80gb (default), h100-sxm, h100-pcie, h200,\n"
    "                           a100-80gb, a100-40gb, b200, l40s, rtx-4090\n"
    "      --top K              plans printed (default 5)\n"
    "      --max-micro-batch M  largest micro-batch tried (default 8)\n"
    "      --efficiency E       share of the peak FLOP/s reached (default 0.5)\n"
    "      --nvlink-gbps B      GB/s one way a GPU inside a node (the GPU's)\n"
    "      --ib-gbps B          GB/s one way a GPU between nodes (the GPU's)\n"
    "      --gpus-per-node K    GPUs sharing NVLink (default 8)\n"
    "      --gpu-memory GIB     memory a GPU (the GPU's)\n"
    "      --margin BYTES       kept free a GPU (default: mtk place's margin)\n"
    "  -h, --help               show this help and exit\n"
    "\n"
    "Exit status: 0 on success, 1 on an error, 2 on a usage error.\n";

enum {
    OPT_TP = 256, OPT_PP, OPT_DP, OPT_EP, OPT_ZERO, OPT_FSDP, OPT_SP, OPT_MICRO, OPT_GLOBAL, OPT_RECOMPUTE,
    OPT_SEARCH, OPT_GPUS, OPT_GPU, OPT_TOP, OPT_MAX_MICRO, OPT_EFFICIENCY, OPT_NVLINK, OPT_IB, OPT_PER_NODE,
    OPT_GPU_MEMORY, OPT_MARGIN, OPT_DEVICE_KIND
};

static bool parse_real(const char *text, double lo, double hi, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    if (errno || end == text || *end || !(v > lo) || v > hi) return false;
    *out = v;
    return true;
}

/* The estimate of one plan on --gpu, after the plan (text or JSON). */
static int print_estimate(mtk_ctx *ctx, const mtk_shard_plan *plan, const mtk_shard_search_options *so, bool json,
                          const char *text)
{
    mtk_shard_estimate e;
    if (!mtk_shard_plan_estimate(ctx, plan, so, &e)) return cli_fail_ctx(json, ctx);
    if (!json) {
        fputs(text, stdout);
        printf("\nestimate on %d x %s at %.0f%% of peak: ", plan->world_size, so->gpu.name, 100.0 * so->efficiency);
        cli_shard_estimate_print(&e, stdout);
        return CLI_EXIT_OK;
    }
    cJSON *root = cJSON_Parse(text), *est = cli_shard_estimate_json(&e);
    char *out = root && est && cJSON_AddItemToObject(root, "estimate", est) ? cJSON_PrintUnformatted(root) : NULL;
    if (!out) {
        if (!root || !cJSON_GetObjectItem(root, "estimate")) cJSON_Delete(est);
        cJSON_Delete(root);
        return cli_fail(json, "out_of_memory", NULL, "shard: out of memory");
    }
    puts(out);
    cJSON_free(out);
    cJSON_Delete(root);
    return CLI_EXIT_OK;
}

static bool parse_int(const char *text, int64_t lo, int64_t hi, int64_t *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (errno || end == text || *end || v < lo || v > hi) return false;
    *out = v;
    return true;
}

static bool parse_input(const char *text, int64_t *batch, int64_t *seq)
{
    char *end;
    errno = 0;
    long long b = strtoll(text, &end, 10);
    if (errno || end == text || (*end != 'x' && *end != 'X')) return false;
    const char *rest = end + 1;
    long long s = strtoll(rest, &end, 10);
    if (errno || end == rest || *end || b < 1 || s < 1 || b > (1LL << 30) || s > (1LL << 30)) return false;
    *batch = b, *seq = s;
    return true;
}

int cli_shard(int argc, char **argv)
{
    static const struct option longopts[] = {
        { "input", required_argument, NULL, 'i' },      { "tp", required_argument, NULL, OPT_TP },
        { "pp", required_argument, NULL, OPT_PP },       { "dp", required_argument, NULL, OPT_DP },
        { "ep", required_argument, NULL, OPT_EP },       { "zero", required_argument, NULL, OPT_ZERO },
        { "fsdp", no_argument, NULL, OPT_FSDP },         { "sp", no_argument, NULL, OPT_SP },
        { "micro-batch", required_argument, NULL, OPT_MICRO }, { "global-batch", required_argument, NULL, OPT_GLOBAL },
        { "recompute", required_argument, NULL, OPT_RECOMPUTE },
        { "device-kind", required_argument, NULL, OPT_DEVICE_KIND }, { "mode", required_argument, NULL, 'm' },
        { "dtype", required_argument, NULL, 't' },       { "rank", required_argument, NULL, 'r' },
        { "json", no_argument, NULL, 'j' },             { "help", no_argument, NULL, 'h' },
        { "search", no_argument, NULL, OPT_SEARCH },     { "gpus", required_argument, NULL, OPT_GPUS },
        { "gpu", required_argument, NULL, OPT_GPU },     { "top", required_argument, NULL, OPT_TOP },
        { "max-micro-batch", required_argument, NULL, OPT_MAX_MICRO },
        { "efficiency", required_argument, NULL, OPT_EFFICIENCY },
        { "nvlink-gbps", required_argument, NULL, OPT_NVLINK }, { "ib-gbps", required_argument, NULL, OPT_IB },
        { "gpus-per-node", required_argument, NULL, OPT_PER_NODE },
        { "gpu-memory", required_argument, NULL, OPT_GPU_MEMORY }, { "margin", required_argument, NULL, OPT_MARGIN },
        { NULL, 0, NULL, 0 },
    };
    mtk_shard_options o;
    mtk_shard_options_init(&o);
    bool json = false, have_input = false, search = false, have_gpu = false;
    int64_t v = 0, micro = 0, rank = -1;
    mtk_shard_search_options so;
    mtk_shard_search_options_init(&so);
    double nvlink = 0, ib = 0, gpu_memory = 0;
    int64_t per_node = 0;
    int c;
    cli_options_reset();
    while ((c = cli_getopt("shard", argc, argv, "i:m:t:r:jh", longopts)) != -1) {
        bool ok = true;
        switch (c) {
        case 'i': ok = parse_input(optarg, &o.micro_batch, &o.seq), have_input = ok; break;
        case OPT_TP: ok = parse_int(optarg, 1, 1 << 16, &v), o.tp = (int32_t)v; break;
        case OPT_PP: ok = parse_int(optarg, 1, 1 << 16, &v), o.pp = (int32_t)v; break;
        case OPT_DP: ok = parse_int(optarg, 1, 1 << 20, &v), o.dp = (int32_t)v; break;
        case OPT_EP: ok = parse_int(optarg, 1, 1 << 16, &v), o.ep = (int32_t)v; break;
        case OPT_ZERO: ok = parse_int(optarg, 0, 3, &v), o.zero = (int32_t)v; break;
        case OPT_FSDP: o.fsdp = true; break;
        case OPT_SP: o.sp = true; break;
        case OPT_MICRO: ok = parse_int(optarg, 1, 1LL << 30, &micro); break;
        case OPT_GLOBAL: ok = parse_int(optarg, 1, 1LL << 40, &o.global_batch); break;
        case 'r': ok = parse_int(optarg, 0, 1 << 30, &rank); break;
        case OPT_RECOMPUTE:
            if (strcmp(optarg, "none") == 0) o.recompute = MTK_RECOMPUTE_NONE;
            else if (strcmp(optarg, "selective") == 0) o.recompute = MTK_RECOMPUTE_SELECTIVE;
            else if (strcmp(optarg, "full") == 0) o.recompute = MTK_RECOMPUTE_FULL;
            else ok = false;
            break;
        case OPT_DEVICE_KIND:
            if (strcmp(optarg, "cuda") == 0) o.device_kind = MTK_DEVICE_KIND_CUDA;
            else if (strcmp(optarg, "cpu") == 0) o.device_kind = MTK_DEVICE_KIND_CPU;
            else ok = false;
            break;
        case 'm':
            if (strcmp(optarg, "training") == 0) o.training = true;
            else if (strcmp(optarg, "inference") == 0) o.training = false;
            else ok = false;
            break;
        case 't':
            o.dtype = cli_parse_floating_dtype("shard", "--dtype", optarg);
            if (o.dtype == MTK_DTYPE_UNDEFINED) return CLI_EXIT_USAGE;
            break;
        case OPT_SEARCH: search = true; break;
        case OPT_GPUS: ok = parse_int(optarg, 1, 1 << 20, &v), so.gpus = (int32_t)v; break;
        case OPT_GPU: {
            const mtk_gpu_spec *g = mtk_gpu_spec_find(optarg);
            if (!g) return cli_usage_error("shard", "unknown --gpu '%s' (mtk shard --help lists them)", optarg);
            so.gpu = *g, have_gpu = true;
            break;
        }
        case OPT_TOP: ok = parse_int(optarg, 1, 1000, &v), so.top = (int32_t)v; break;
        case OPT_MAX_MICRO: ok = parse_int(optarg, 1, 1 << 20, &so.max_micro_batch); break;
        case OPT_EFFICIENCY: ok = parse_real(optarg, 0.0, 1.0, &so.efficiency); break;
        case OPT_NVLINK: ok = parse_real(optarg, 0.0, 1e6, &nvlink); break;
        case OPT_IB: ok = parse_real(optarg, 0.0, 1e6, &ib); break;
        case OPT_PER_NODE: ok = parse_int(optarg, 1, 1 << 20, &per_node); break;
        case OPT_GPU_MEMORY: ok = parse_real(optarg, 0.0, 1e9, &gpu_memory); break;
        case OPT_MARGIN: ok = cli_parse_bytes(optarg, &so.margin_bytes); break;
        case 'j': json = true; break;
        case 'h': fputs(usage, stdout); return CLI_EXIT_OK;
        default: return CLI_EXIT_USAGE;
        }
        if (!ok) {
            const char *name = "option";
            for (const struct option *lo = longopts; lo->name; lo++)
                if (lo->val == c) name = lo->name;
            return cli_usage_error("shard", "bad value '%s' for --%s", optarg, name);
        }
    }
    if (optind != argc - 1)
        return cli_usage_error("shard", optind >= argc ? "missing MODEL" : "one MODEL expected, got '%s' too",
                               optind < argc - 1 ? argv[optind + 1] : "");
    if (!have_input) return cli_usage_error("shard", "--input BxS is required (e.g. --input 1x2048)");
    if (micro) o.micro_batch = micro;
    if (nvlink > 0) so.gpu.nvlink_gbps = nvlink;
    if (ib > 0) so.gpu.ib_gbps = ib;
    if (per_node > 0) so.gpu.gpus_per_node = (int32_t)per_node;
    if (gpu_memory > 0) so.gpu.memory_gib = gpu_memory;
    if (search) {
        if (!so.gpus || !o.global_batch)
            return cli_usage_error("shard", "--search needs --gpus N and --global-batch G");
        so.seq = o.seq, so.global_batch = o.global_batch, so.training = o.training, so.dtype = o.dtype;
        return cli_shard_search(argv[optind], &so, json);
    }
    mtk_ctx *ctx = mtk_ctx_new();
    if (!ctx) return cli_fail(json, "out_of_memory", NULL, "shard: out of memory");
    mtk_shard_plan *plan = mtk_shard_plan_model(ctx, argv[optind], &o);
    if (plan && rank >= plan->world_size) {
        mtk_ctx_free(ctx);
        return cli_usage_error("shard", "--rank %lld is outside the world of %d ranks", (long long)rank,
                               plan->world_size);
    }
    char *text = plan ? (json ? mtk_shard_plan_json(ctx, plan, (int32_t)rank)
                              : mtk_shard_plan_text(ctx, plan, (int32_t)rank))
                      : NULL;
    if (!text) {
        int rc = cli_fail_ctx(json, ctx);
        mtk_ctx_free(ctx);
        return rc;
    }
    int rc = CLI_EXIT_OK;
    if (have_gpu) {
        rc = print_estimate(ctx, plan, &so, json, text);
    } else {
        fputs(text, stdout);
        if (json) fputc('\n', stdout);
    }
    mtk_ctx_free(ctx);
    return rc;
}
