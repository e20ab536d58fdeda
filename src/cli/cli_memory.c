/* mtk memory: the peak memory of inference, a training step or
 * generation for a model, and what fits in a budget
 * (mtk_memory_plan_model / mtk_memory_fit_model). */
#include "cli/cli.h"
#include "cli/cli_memory_pipeline.h"
#include "cli/cli_summary_pipeline.h"
#include "mtk/mtk.h"
#include "mtk/plan.h"
#include "core/text.h"
#include "plan/memory_internal.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char usage[] =
    "usage: mtk memory MODEL --input BxS [--input BxT] [--mode inference|training|generate]\n"
    "                  [--optimizer OPT] [--dtype D] [--mixed-precision P] [--checkpointing]\n"
    "                  [--attention A] [--experts E] [--device-kind K] [--new-tokens N]\n"
    "                  [--grad-accum K]\n"
    "                  [--fit BYTES [--fit-context]] [--set NAME=BYTES] [--constants]\n"
    "                  [--depth N] [--json]\n"
    "       mtk memory PIPELINE --image HxW [--steps N] [--guidance] [--dtype D]\n"
    "                  [--offload none|model|sequential] [--max-memory 0=8GiB,cpu=32GiB]\n"
    "                  [--device-kind K] [--json]\n"
    "\n"
    "The peak memory torch 2.13 reaches running MODEL, exact in bytes, without\n"
    "its weights: the model is built on the meta device, one forward is traced\n"
    "at the input, and its graph is replayed as torch runs it: each tensor freed\n"
    "after its last use; for training the backward as autograd's engine runs it\n"
    "(saved tensors held until their backward, gradients accumulated into .grad),\n"
    "the optimizer's step and zero_grad(set_to_none=True).  Prints the peak,\n"
    "what fills memory at the peak, the op, module and phase it happens in, and\n"
    "a per-module table.  docs/memory.md says what is modelled and how.\n"
    "\n"
    "  mtk memory llama-3-8b --input 1x2048\n"
    "  mtk memory llama-3.1-8b --input 4x4096 --mode training --dtype bfloat16 --checkpointing\n"
    "  mtk memory llama-3.1-8b --input 1x4096 --mode training --fit 80GiB\n"
    "  mtk memory llama-3.1-70b --input 1x1 --mode generate --fit 160GB --fit-context\n"
    "  mtk memory t5-base --input 8x512 --input 8x128 --mode training\n"
    "\n"
    "options:\n"
    "  -i, --input BxS          token ids: batch x sequence length (required);\n"
    "                           an encoder-decoder (t5) takes it twice: the\n"
    "                           encoder's ids, then the decoder's BxT (in\n"
    "                           training also the labels); same batch\n"
    "  -m, --mode MODE          inference (model(ids) under no_grad; default),\n"
    "                           training (labels=ids, backward, step, zero_grad;\n"
    "                           the second step is reported, the first also shown),\n"
    "                           generate (model.generate: prefill, then decode;\n"
    "                           decoder-only models)\n"
    "  -o, --optimizer OPT      sgd, momentum, adam, adamw (default adamw)\n"
    "  -t, --dtype D            parameters' dtype (default: the config's)\n"
    "      --mixed-precision P  bf16 or fp16: fp32 parameters under torch.autocast\n"
    "      --checkpointing      gradient checkpointing per decoder layer\n"
    "                           (transformers' gradient_checkpointing_enable())\n"
    "  -a, --attention A        sdpa (default) or eager\n"
    "      --experts E          MoE experts as transformers' experts_implementation:\n"
    "                           batched_mm (per-pair weight gathers), grouped_mm\n"
    "                           (pairs sorted by expert, one grouped matmul per\n"
    "                           projection; both exact for any routing) or config\n"
    "                           (default: the config's, else grouped_mm)\n"
    "      --device-kind K      cpu (default) or cuda: whose kernels, optimizer\n"
    "                           implementation (single-tensor / foreach) and\n"
    "                           allocator (exact / 512-byte blocks) are modelled\n"
    "      --new-tokens N       generate: tokens to generate (default 1)\n"
    "      --grad-accum K       training: K micro-batches per optimizer step\n"
    "      --fit BYTES          the largest batch (S from --input) whose peak fits\n"
    "                           in BYTES (80GiB, 80GB = 80e9, 1.5TiB, 81920MiB)\n"
    "      --fit-context        with --fit: the largest sequence length instead\n"
    "                           (B from --input)\n"
    "      --set NAME=BYTES     override a device constant (see --constants)\n"
    "      --constants          list the device constants, their values and sources\n"
    "  -d, --depth N            module table rows down to depth N (default 2; -1: all)\n"
    "  -j, --json               one JSON document: peak_bytes, breakdown {parameters,\n"
    "                           gradients, optimizer_states, activations_saved,\n"
    "                           kv_cache, transient_at_peak}, peak_at {op, module,\n"
    "                           phase, node}, first_step, activations_saved_forward,\n"
    "                           overhead_bytes, options, timeline [{op, module, phase,\n"
    "                           live_bytes}], modules [{name, depth, parameters,\n"
    "                           activations_saved, peak_bytes}], notes, model; with\n"
    "                           --fit also fit {max_batch | max_context, peak_bytes,\n"
    "                           peak_bytes_next, budget_bytes}\n"
    "\n"
    "A diffusers PIPELINE (a built-in: sd-1.5, sdxl-base, sd-3.5-medium,\n"
    "flux.1-dev, lumina-image-2.0; a model_index.json directory; or one\n"
    "component's config.json) takes --image instead of --input: the peak of\n"
    "each stage (encode prompt, a denoising step, VAE decode) as the weights\n"
    "on the GPU + the call's inference plan + a text encoder's KV cache, and\n"
    "each offload mode's GPU peak and bytes moved per image (docs/diffusion.md).\n"
    "      --image HxW          the image in pixels (a pipeline)\n"
    "      --steps N            denoising steps (default 50)\n"
    "      --guidance           classifier-free guidance\n"
    "      --offload MODE       none (default), model (enable_model_cpu_offload),\n"
    "                           sequential (enable_sequential_cpu_offload)\n"
    "      --max-memory SPEC    budgets as accelerate's max_memory: 0=8GiB,cpu=32GiB;\n"
    "                           each mode says whether it fits\n"
    "                           (a pipeline's --device-kind defaults to cuda)\n"
    "  -h, --help               show this help and exit\n"
    "\n"
    "Exit status: 0 on success, 1 on an error, 2 on a usage error.\n";

enum {
    OPT_MIXED = 256,
    OPT_CHECKPOINTING,
    OPT_DEVICE_KIND,
    OPT_NEW_TOKENS,
    OPT_GRAD_ACCUM,
    OPT_FIT,
    OPT_FIT_CONTEXT,
    OPT_SET,
    OPT_CONSTANTS,
    OPT_IMAGE,
    OPT_STEPS,
    OPT_GUIDANCE,
    OPT_OFFLOAD,
    OPT_MAX_MEMORY,
    OPT_EXPERTS,
};

/* One of `names` (index), -1 if none. */
static int pick(const char *text, const char *const *names, int n)
{
    for (int i = 0; i < n; i++)
        if (strcmp(text, names[i]) == 0) return i;
    return -1;
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

static int print_constants(void)
{
    for (int32_t i = 0; i < mtk_memory_constant_count(); i++) {
        const mtk_memory_constant *c = mtk_memory_constant_at(i);
        printf("%-24s %12" PRId64 "  %s\n", c->name, c->value, c->source);
    }
    return CLI_EXIT_OK;
}

static int fail(mtk_ctx *ctx)
{
    cli_error("%s", mtk_ctx_message(ctx));
    mtk_ctx_free(ctx);
    return CLI_EXIT_ERROR;
}

static void print_fit_text(const mtk_memory_fit *fit, int64_t budget, const mtk_memory_options *o)
{
    char b[TEXT_NUMBER_CAP], p[TEXT_NUMBER_CAP], n[TEXT_NUMBER_CAP];
    const char *what = fit->context ? "sequence length" : "batch";
    text_bytes((uint64_t)budget, b, sizeof b);
    text_bytes(fit->peak_bytes > 0 ? (uint64_t)fit->peak_bytes : 0, p, sizeof p);
    text_bytes(fit->peak_bytes_next > 0 ? (uint64_t)fit->peak_bytes_next : 0, n, sizeof n);
    if (fit->max == 0) {
        printf("nothing fits in %s: %s 1 needs %s (%" PRId64 " bytes)\n", b, what, n, fit->peak_bytes_next);
        return;
    }
    if (fit->context)
        printf("largest sequence length that fits in %s at batch %" PRId64 ": %" PRId64 "\n", b, o->batch, fit->max);
    else
        printf("largest batch that fits in %s at sequence length %" PRId64 ": %" PRId64 "\n", b, o->seq, fit->max);
    printf("  peak at %" PRId64 ": %s (%" PRId64 " bytes); at %" PRId64 ": %s (%" PRId64 " bytes)  [%d plans]\n\n",
           fit->max, p, fit->peak_bytes, fit->max + 1, n, fit->peak_bytes_next, (int)fit->evaluations);
}

int cli_memory(int argc, char **argv)
{
    static const struct option longopts[] = {
        { "input", required_argument, NULL, 'i' },     { "mode", required_argument, NULL, 'm' },
        { "optimizer", required_argument, NULL, 'o' }, { "dtype", required_argument, NULL, 't' },
        { "mixed-precision", required_argument, NULL, OPT_MIXED },
        { "checkpointing", no_argument, NULL, OPT_CHECKPOINTING },
        { "attention", required_argument, NULL, 'a' }, { "device-kind", required_argument, NULL, OPT_DEVICE_KIND },
        { "new-tokens", required_argument, NULL, OPT_NEW_TOKENS },
        { "grad-accum", required_argument, NULL, OPT_GRAD_ACCUM }, { "fit", required_argument, NULL, OPT_FIT },
        { "fit-context", no_argument, NULL, OPT_FIT_CONTEXT }, { "set", required_argument, NULL, OPT_SET },
        { "constants", no_argument, NULL, OPT_CONSTANTS }, { "depth", required_argument, NULL, 'd' },
        { "json", no_argument, NULL, 'j' },            { "help", no_argument, NULL, 'h' },
        { "image", required_argument, NULL, OPT_IMAGE }, { "steps", required_argument, NULL, OPT_STEPS },
        { "guidance", no_argument, NULL, OPT_GUIDANCE }, { "offload", required_argument, NULL, OPT_OFFLOAD },
        { "max-memory", required_argument, NULL, OPT_MAX_MEMORY },
        { "experts", required_argument, NULL, OPT_EXPERTS },
        { NULL, 0, NULL, 0 },
    };
    static const char *const modes[] = { "inference", "training", "generate" };
    static const char *const optimizers[] = { "sgd", "momentum", "adam", "adamw" };
    static const char *const mixed[] = { "none", "bf16", "fp16" };
    static const char *const attentions[] = { "sdpa", "eager" };
    static const char *const experts[] = { "config", "grouped_mm", "batched_mm" };
    static const char *const kinds[] = { "cpu", "cuda" };
    static const char *const offloads[] = { "none", "model", "sequential" };
    mtk_pipeline_options pipe = { 0 };
    cli_pipeline_memory_args pargs = { .mode = MTK_OFFLOAD_NONE, .device_kind = MTK_DEVICE_KIND_CUDA };
    bool pipeline_options = false, kind_set = false;
    mtk_memory_options o;
    mtk_memory_options_init(&o);
    mtk_ctx *ctx = mtk_ctx_new();
    if (!ctx) {
        cli_error("memory: out of memory");
        return CLI_EXIT_ERROR;
    }
    bool json = false, fit_context = false;
    int ninputs = 0;
    int64_t fit = 0, v, depth = 2;
    int c;
    cli_options_reset();
    while ((c = cli_getopt("memory", argc, argv, "i:m:o:t:a:d:jh", longopts)) != -1) {
        int k = 0;
        switch (c) {
        case 'i': {
            int64_t batch, seq;
            if (!cli_parse_input(optarg, &batch, &seq)) {
                mtk_ctx_free(ctx);
                return cli_usage_error("memory", "bad --input '%s': expected BxS with B, S >= 1 (e.g. 4x4096)",
                                       optarg);
            }
            if (ninputs == 2 || (ninputs == 1 && batch != o.batch)) {
                mtk_ctx_free(ctx);
                return cli_usage_error("memory",
                                       ninputs == 2 ? "at most two --input: an encoder-decoder's encoder and decoder ids"
                                                    : "the decoder's --input '%s' has another batch than the "
                                                      "encoder's (%lld)",
                                       optarg, (long long)o.batch);
            }
            if (ninputs++ == 0) o.batch = batch, o.seq = seq;
            else o.decoder_seq = seq;
            break;
        }
        case 'm': k = pick(optarg, modes, 3), o.mode = (mtk_memory_mode)k; break;
        case 'o': k = pick(optarg, optimizers, 4), o.optimizer = (mtk_optimizer_kind)k; break;
        case OPT_MIXED: k = pick(optarg, mixed, 3), o.mixed_precision = (mtk_mixed_precision)k; break;
        case 'a': k = pick(optarg, attentions, 2), o.attention = (mtk_attention_kind)k; break;
        case OPT_EXPERTS: k = pick(optarg, experts, 3), o.experts = (mtk_experts_kind)k; break;
        case OPT_DEVICE_KIND: k = pick(optarg, kinds, 2), o.device_kind = k, kind_set = true; break;
        case OPT_IMAGE:
            if (!cli_parse_image(optarg, &pipe.height, &pipe.width)) k = -1;
            pipeline_options = true;
            break;
        case OPT_STEPS:
            if (!parse_int(optarg, 1, 100000, &pipe.steps)) k = -1;
            pipeline_options = true;
            break;
        case OPT_GUIDANCE: pipe.guidance = true, pipeline_options = true; break;
        case OPT_OFFLOAD:
            k = pick(optarg, offloads, 3), pargs.mode = (mtk_offload_mode)k, pipeline_options = true;
            break;
        case OPT_MAX_MEMORY:
            if (!cli_parse_max_memory(optarg, &pargs.gpu_budget, &pargs.cpu_budget)) k = -1;
            pipeline_options = true;
            break;
        case OPT_CHECKPOINTING: o.checkpointing = true; break;
        case OPT_FIT_CONTEXT: fit_context = true; break;
        case 'j': json = true; break;
        case 't':
            o.dtype = mtk_dtype_from_name(optarg);
            if (o.dtype == MTK_DTYPE_UNDEFINED || !mtk_dtype_is_floating(o.dtype) || mtk_dtype_is_float8(o.dtype))
                k = -1;
            break;
        case OPT_NEW_TOKENS:
            if (!parse_int(optarg, 1, 1LL << 40, &o.new_tokens)) k = -1;
            break;
        case OPT_GRAD_ACCUM:
            if (!parse_int(optarg, 1, 1 << 30, &v)) k = -1;
            else o.grad_accum = (int32_t)v;
            break;
        case 'd':
            if (!parse_int(optarg, -1, 1000, &depth)) k = -1;
            break;
        case OPT_FIT:
            if (!cli_parse_bytes(optarg, &fit) || fit <= 0) k = -1;
            break;
        case OPT_SET: {
            char name[64];
            const char *eq = strchr(optarg, '=');
            int64_t bytes;
            if (!eq || (size_t)(eq - optarg) >= sizeof name || !cli_parse_bytes(eq + 1, &bytes)) {
                k = -1;
                break;
            }
            memcpy(name, optarg, (size_t)(eq - optarg));
            name[eq - optarg] = '\0';
            if (!mtk_memory_constants_set(ctx, &o.constants, name, bytes)) {
                int rc = cli_usage_error("memory", "--set: %s", mtk_ctx_message(ctx));
                mtk_ctx_free(ctx);
                return rc;
            }
            break;
        }
        case OPT_CONSTANTS: mtk_ctx_free(ctx); return print_constants();
        case 'h': fputs(usage, stdout); mtk_ctx_free(ctx); return CLI_EXIT_OK;
        default: mtk_ctx_free(ctx); return CLI_EXIT_USAGE;
        }
        if (k < 0) {
            mtk_ctx_free(ctx);
            const char *name = "option";
            for (const struct option *lo = longopts; lo->name; lo++)
                if (lo->val == c) name = lo->name;
            return cli_usage_error("memory", "bad value '%s' for --%s", optarg, name);
        }
    }
    if (optind != argc - 1) {
        mtk_ctx_free(ctx);
        return cli_usage_error("memory", optind >= argc ? "missing MODEL" : "one MODEL expected, got '%s' too",
                               optind < argc - 1 ? argv[optind + 1] : "");
    }
    if (pipeline_options || mtk_pipeline_exists(argv[optind])) {
        mtk_ctx_free(ctx);
        if (ninputs > 0) return cli_usage_error("memory", "a pipeline takes --image, not --input");
        pipe.dtype = o.dtype;
        pargs.json = json;
        if (kind_set) pargs.device_kind = o.device_kind;
        return cli_memory_pipeline(argv[optind], &pipe, &pargs);
    }
    if (ninputs == 0) {
        mtk_ctx_free(ctx);
        return cli_usage_error("memory", "--input BxS is required (e.g. --input 1x2048)");
    }
    if (fit_context && !fit) {
        mtk_ctx_free(ctx);
        return cli_usage_error("memory", "--fit-context goes with --fit BYTES");
    }
    const char *model = argv[optind];
    mtk_memory_fit result = { 0 };
    mtk_memory_plan *plan;
    if (fit) {
        if (!mtk_memory_fit_model(ctx, model, &o, fit, fit_context, 0, &result)) return fail(ctx);
        plan = result.plan;
    } else {
        plan = mtk_memory_plan_model(ctx, model, &o);
        if (!plan) return fail(ctx);
    }
    if (json) {
        cJSON *root = plan ? mem_plan_json_object(plan) : cJSON_CreateObject();
        if (!root) return fail(ctx);
        cJSON_AddStringToObject(root, "model", model);
        if (fit) {
            cJSON *f = cJSON_CreateObject();
            char buf[32];
            snprintf(buf, sizeof buf, "%" PRId64, result.max);
            cJSON_AddItemToObject(f, fit_context ? "max_context" : "max_batch", cJSON_CreateRaw(buf));
            snprintf(buf, sizeof buf, "%" PRId64, result.peak_bytes);
            cJSON_AddItemToObject(f, "peak_bytes", cJSON_CreateRaw(buf));
            snprintf(buf, sizeof buf, "%" PRId64, result.peak_bytes_next);
            cJSON_AddItemToObject(f, "peak_bytes_next", cJSON_CreateRaw(buf));
            snprintf(buf, sizeof buf, "%" PRId64, fit);
            cJSON_AddItemToObject(f, "budget_bytes", cJSON_CreateRaw(buf));
            cJSON_AddItemToObject(f, "evaluations", cJSON_CreateNumber(result.evaluations));
            cJSON_AddItemToObject(root, "fit", f);
        }
        char *text = cJSON_PrintUnformatted(root);
        cJSON_Delete(root);
        if (!text) return fail(ctx);
        puts(text);
        cJSON_free(text);
    } else {
        if (fit) print_fit_text(&result, fit, &o);
        if (plan) {
            char *text = mtk_memory_plan_text(ctx, plan, (int32_t)depth);
            if (!text) return fail(ctx);
            fputs(text, stdout);
        }
    }
    mtk_ctx_free(ctx);
    return CLI_EXIT_OK;
}
