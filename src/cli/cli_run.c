/* mtk run: loads a model from a checkpoint (mtk_model_load), runs one
 * forward on the cpu with transformers' inputs (mtk_model_run), writes the
 * outputs to a safetensors file and reports the time, the speed and the
 * top next tokens of each row.  This file parses options and prints. */
#include "cli/cli.h"
#include "core/text.h"
#include "mtk/mtk.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char usage[] =
    "usage: mtk run MODEL --weights PATH --input-ids IDS [--attention-mask M]\n"
    "               [--token-type-ids T] [--position-ids P]\n"
    "               [--decoder-input-ids IDS] [--dtype D]\n"
    "               [--output FILE.safetensors] [--top K] [--threads N]\n"
    "               [--max-ram BYTES] [--json]\n"
    "       mtk run COMPONENT --weights PATH --input NAME=VALUE [--input ...]\n"
    "               [--method M] [--seed N] [--dtype D] [--output FILE] [--json]\n"
    "       mtk run COMPONENT --list-inputs [--method M] [--json]\n"
    "\n"
    "Loads MODEL (a built-in name, a config.json or a directory holding one)\n"
    "from the safetensors checkpoint PATH as `mtk load` does, then runs one\n"
    "forward on the cpu as transformers 5 runs model(input_ids, attention_mask,\n"
    "...) under no_grad: decoders with masking_utils' masks (causal, sliding\n"
    "window, padding), encoders with the padding and token types.\n"
    "\n"
    "IDS, M, T and P are each '1,2,3;4,5,6' (one row per sequence, all of one\n"
    "length), a .safetensors file (the tensor input_ids / attention_mask /\n"
    "token_type_ids / position_ids / decoder_input_ids, or its only tensor)\n"
    "or a .npy file.  The mask holds 1 for a token and 0 for padding (left or\n"
    "right).  An encoder-decoder (T5Model, T5ForConditionalGeneration) takes\n"
    "the encoder's ids and the decoder's (--decoder-input-ids) and gives the\n"
    "decoder's output and encoder_last_hidden_state.\n"
    "\n"
    "options:\n"
    "  -w, --weights PATH       the checkpoint (required)\n"
    "  -i, --input-ids IDS      the token ids (required)\n"
    "  -m, --attention-mask M   0 / 1 per token (default: all 1)\n"
    "  -T, --token-type-ids T   segment ids of the encoders (default: 0)\n"
    "  -P, --position-ids P     positions of the decoders (default: 0..S-1)\n"
    "  -D, --decoder-input-ids IDS  an encoder-decoder's decoder ids (B, T)\n"
    "  -d, --dtype D            run in floating dtype D (float32, bfloat16, ...):\n"
    "                           the weights are converted on load; default:\n"
    "                           the config's dtype\n"
    "  -o, --output FILE        write the outputs (logits, or last_hidden_state\n"
    "                           and pooler_output) to FILE.safetensors,\n"
    "                           atomically; nothing is written on an error\n"
    "  -k, --top K              next tokens shown per row (default 5; 0: none)\n"
    "  -t, --threads N          cpu threads (default: one per cpu)\n"
    "  -r, --max-ram BYTES      stream the weights under a RAM budget (\"2GB\",\n"
    "                           \"500MiB\", bytes): they stay mapped from the\n"
    "                           checkpoint and each decoder layer is brought in\n"
    "                           just before it runs (the next one by a thread)\n"
    "                           and dropped after; the outputs are the same.\n"
    "                           The budget must hold the tensors outside the\n"
    "                           layers plus one layer (two to prefetch); what\n"
    "                           is left keeps the first layers resident.  The\n"
    "                           activations come on top.  --dtype must then be\n"
    "                           the checkpoint's (the file's bytes are used).\n"
    "                           A forward of at most 8 tokens (batch x\n"
    "                           sequence) whose --threads take every cpu brings\n"
    "                           each streamed layer in on those threads (the\n"
    "                           prefetch thread would take a core from them);\n"
    "                           MTK_STREAM_COMPUTE_THREADS=N runs it on N\n"
    "                           threads beside the prefetch, 0 on --threads\n"
    "  -j, --json               print one JSON document: {\"model\",\n"
    "                           \"architecture\", \"dtype\", \"batch\", \"sequence\",\n"
    "                           \"load_seconds\", \"seconds\", \"tokens_per_s\",\n"
    "                           \"outputs\": [{\"name\", \"dtype\", \"shape\"}],\n"
    "                           \"output_file\", \"top\": [[{\"id\", \"logit\"}]],\n"
    "                           \"stream\": null or {\"budget\", \"fixed_bytes\",\n"
    "                           \"layer_bytes\", \"layers\", \"prefetch\", \"releases\",\n"
    "                           \"prefetched\", \"wait_seconds\", \"kept_layers\",\n"
    "                           \"brought_in\", \"bring_in_seconds\",\n"
    "                           \"release_seconds\", \"prefill_threads\",\n"
    "                           \"decode_threads\", \"decode_calls\",\n"
    "                           \"decode_inline\"}}\n"
    "\n"
    "diffusers components (UNet2DConditionModel, AutoencoderKL,\n"
    "SD3Transformer2DModel, FluxTransformer2DModel, Lumina2Transformer2DModel;\n"
    "a directory as diffusers' save_pretrained writes it, config.json and\n"
    "diffusion_pytorch_model.safetensors) take named inputs instead of ids and\n"
    "run as diffusers runs model(**inputs, return_dict=False) under no_grad:\n"
    "  -I, --input NAME=VALUE   an argument of the call, as diffusers names it\n"
    "                           (UNet: sample, timestep, encoder_hidden_states\n"
    "                           [, text_embeds, time_ids]; VAE: x to encode, z\n"
    "                           to decode, sample for forward; SD3:\n"
    "                           hidden_states, encoder_hidden_states,\n"
    "                           pooled_projections, timestep; FLUX: the same\n"
    "                           plus img_ids, txt_ids[, guidance]; Lumina 2:\n"
    "                           hidden_states, timestep, encoder_hidden_states,\n"
    "                           encoder_attention_mask, all ones).  VALUE is a\n"
    "                           .safetensors file (the tensor NAME, else its\n"
    "                           only tensor), a .npy file, a number (timestep=999)\n"
    "                           or randn:SHAPE (randn:1x4x64x64, standard normal\n"
    "                           float32 from --seed).  --input FILE.safetensors\n"
    "                           takes every tensor of the file as the argument\n"
    "                           of its name (each must be one)\n"
    "  -L, --list-inputs        print the call's arguments in order (optional\n"
    "                           ones marked) and exit; no --weights needed.\n"
    "                           --json: {\"model\", \"architecture\", \"method\",\n"
    "                           \"arguments\", \"required\"}\n"
    "  -M, --method M           forward (default), encode or decode (the VAE)\n"
    "  -S, --seed N             seed of the randn inputs (default 0)\n"
    "  floating inputs are cast as the pipelines cast them (latents and\n"
    "  embeddings to the model's dtype, a transformer's timestep to float32).\n"
    "  The outputs are named by diffusers' output fields: sample, or\n"
    "  latent_dist.mean for encode (the distribution's mode)\n"
    "\n"
    "  -h, --help               show this help and exit\n"
    "\n"
    "Exit status: 0 on success, 1 on an error (bad ids, a mask of another\n"
    "shape, a key mismatch), 2 on a usage error.\n";

typedef struct run_args {
    const char *model, *weights, *ids, *mask, *types, *positions, *decoder_ids, *output;
    mtk_dtype dtype;
    int32_t threads, top;
    uint64_t max_ram; /* 0: in RAM */
    bool json;
    const char *inputs[MTK_COMPONENT_MAX_INPUTS], *method; /* components */
    int32_t ninputs;
    bool list;
    uint64_t seed;
} run_args;

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The position whose logits predict row b's next token: the last one the
 * mask keeps (S - 1 without a mask or with left padding). */
static int64_t last_position(const mtk_tensor *mask, int64_t b, int64_t s)
{
    if (!mask) return s - 1;
    const int64_t *m = (const int64_t *)mtk_tensor_data(mask) + b * s;
    for (int64_t j = s - 1; j >= 0; j--)
        if (m[j]) return j;
    return s - 1;
}

/* The top k (id, value) of logits (B, S, V) float32 at row b's last
 * position, best first. */
static int32_t top_tokens(const mtk_tensor *logits, const mtk_tensor *mask, int64_t b, int32_t k, int64_t *ids,
                          float *values)
{
    int64_t s = logits->shape[1], v = logits->shape[2];
    const float *row = (const float *)mtk_tensor_data(logits) + (b * s + last_position(mask, b, s)) * v;
    int32_t n = 0;
    for (int64_t i = 0; i < v; i++) {
        if (n == k && row[i] <= values[n - 1]) continue;
        int32_t at = n < k ? n++ : n - 1;
        while (at > 0 && values[at - 1] < row[i]) {
            values[at] = values[at - 1];
            ids[at] = ids[at - 1];
            at--;
        }
        values[at] = row[i];
        ids[at] = i;
    }
    return n;
}

static cJSON *shape_json(const mtk_tensor *t)
{
    cJSON *a = cJSON_CreateArray();
    for (int32_t d = 0; a && d < t->ndim; d++) cJSON_AddItemToArray(a, text_json_int(t->shape[d]));
    return a;
}

bool cli_run_write_outputs(mtk_ctx *ctx, const mtk_model_outputs *out, const char *path)
{
    mtk_st_writer *w = mtk_st_writer_new(ctx);
    bool ok = w && mtk_st_writer_set_metadata(w, "format", "pt");
    for (int32_t i = 0; ok && i < out->count; i++)
        ok = mtk_st_writer_add(w, out->names[i], mtk_contiguous(ctx, out->tensors[i]));
    ok = ok && mtk_st_writer_write(w, path);
    mtk_st_writer_free(w);
    return ok;
}

static int report(mtk_ctx *ctx, const run_args *a, const mtk_model_info *info, const mtk_tensor *ids,
                  const mtk_tensor *mask, const mtk_model_outputs *out, const mtk_stream *stream, double load_s,
                  double run_s, int32_t threads)
{
    int64_t batch = ids->shape[0], seq = ids->shape[1];
    double tokens = (double)(batch * seq), speed = run_s > 0 ? tokens / run_s : 0;
    const mtk_tensor *logits = NULL;
    for (int32_t i = 0; i < out->count; i++)
        if (strcmp(out->names[i], "logits") == 0 && out->tensors[i]->ndim == 3) logits = out->tensors[i];
    mtk_tensor *logits32 = logits && a->top > 0 ? mtk_contiguous(ctx, mtk_to_dtype(ctx, (mtk_tensor *)logits,
                                                                                   MTK_FLOAT32))
                                                : NULL;
    if (logits && a->top > 0 && !logits32) return cli_fail_ctx(a->json, ctx);
    int64_t *top_ids = mtk_ctx_alloc(ctx, (size_t)(a->top + 1) * sizeof *top_ids);
    float *top_values = mtk_ctx_alloc(ctx, (size_t)(a->top + 1) * sizeof *top_values);
    if (!top_ids || !top_values) return cli_fail(a->json, "out_of_memory", NULL, "out of memory");
    if (a->json) {
        cJSON *doc = cJSON_CreateObject(), *outs = cJSON_CreateArray();
        cJSON_AddStringToObject(doc, "model", a->model);
        cJSON_AddStringToObject(doc, "architecture", info->architecture ? info->architecture : "");
        cJSON_AddStringToObject(doc, "dtype", mtk_dtype_name(info->dtype));
        cJSON_AddItemToObject(doc, "batch", text_json_int(batch));
        cJSON_AddItemToObject(doc, "sequence", text_json_int(seq));
        cJSON_AddNumberToObject(doc, "load_seconds", load_s);
        cJSON_AddNumberToObject(doc, "seconds", run_s);
        cJSON_AddNumberToObject(doc, "tokens_per_s", speed);
        for (int32_t i = 0; i < out->count; i++) {
            cJSON *o = cJSON_CreateObject();
            cJSON_AddStringToObject(o, "name", out->names[i]);
            cJSON_AddStringToObject(o, "dtype", mtk_dtype_name(out->tensors[i]->dtype));
            cJSON_AddItemToObject(o, "shape", shape_json(out->tensors[i]));
            cJSON_AddItemToArray(outs, o);
        }
        cJSON_AddItemToObject(doc, "outputs", outs);
        if (a->output) cJSON_AddStringToObject(doc, "output_file", a->output);
        else cJSON_AddNullToObject(doc, "output_file");
        cJSON *top = cJSON_CreateArray();
        for (int64_t b = 0; logits32 && b < batch; b++) {
            cJSON *row = cJSON_CreateArray();
            int32_t n = top_tokens(logits32, mask, b, a->top, top_ids, top_values);
            for (int32_t i = 0; i < n; i++) {
                cJSON *o = cJSON_CreateObject();
                cJSON_AddItemToObject(o, "id", text_json_int(top_ids[i]));
                cJSON_AddNumberToObject(o, "logit", top_values[i]);
                cJSON_AddItemToArray(row, o);
            }
            cJSON_AddItemToArray(top, row);
        }
        cJSON_AddItemToObject(doc, "top", top);
        cJSON_AddItemToObject(doc, "stream", cli_stream_json(stream));
        char *text = cJSON_PrintUnformatted(doc);
        if (text) puts(text);
        cJSON_free(text);
        cJSON_Delete(doc);
        return text ? CLI_EXIT_OK : cli_fail(true, "out_of_memory", NULL, "out of memory");
    }
    printf("ran %s (%s, %s) on %lld x %lld tokens\n", a->model, info->architecture ? info->architecture : "?",
           mtk_dtype_name(info->dtype), (long long)batch, (long long)seq);
    printf("  load:    %.3f s\n", load_s);
    printf("  forward: %.3f s, %.1f tokens/s with %d thread%s\n", run_s, speed, (int)threads, threads == 1 ? "" : "s");
    for (int32_t i = 0; i < out->count; i++) {
        char shape[128];
        printf("  %-17s %s %s\n", out->names[i], mtk_dtype_name(out->tensors[i]->dtype),
               mtk_shape_str(out->tensors[i]->shape, out->tensors[i]->ndim, shape, sizeof shape));
    }
    cli_stream_text(stream);
    if (a->output) printf("  written: %s\n", a->output);
    for (int64_t b = 0; logits32 && b < batch; b++) {
        int32_t n = top_tokens(logits32, mask, b, a->top, top_ids, top_values);
        printf("  row %lld next:", (long long)b);
        for (int32_t i = 0; i < n; i++) printf(" %lld (%.3f)", (long long)top_ids[i], top_values[i]);
        printf("\n");
    }
    return CLI_EXIT_OK;
}

static int run(mtk_ctx *ctx, const run_args *a, mtk_stream **stream)
{
    mtk_model_inputs in = { 0 };
    in.input_ids = cli_ids_read(ctx, a->ids, "input-ids");
    if (!in.input_ids || (a->mask && !(in.attention_mask = cli_ids_read(ctx, a->mask, "attention-mask"))) ||
        (a->types && !(in.token_type_ids = cli_ids_read(ctx, a->types, "token-type-ids"))) ||
        (a->positions && !(in.position_ids = cli_ids_read(ctx, a->positions, "position-ids"))) ||
        (a->decoder_ids && !(in.decoder_input_ids = cli_ids_read(ctx, a->decoder_ids, "decoder-input-ids"))))
        return cli_fail_ctx(a->json, ctx);
    mtk_model_resolve_options ropts = { .dtype = a->dtype, .meta = true };
    mtk_load_spec spec = { .convert_dtype = a->dtype != MTK_DTYPE_UNDEFINED, .threads = a->threads };
    mtk_model_info info;
    mtk_load_result r;
    memset(&r, 0, sizeof r);
    double t0 = now_seconds();
    mtk_module *model = NULL;
    if (a->max_ram) *stream = mtk_model_load_streamed(ctx, a->model, a->weights, &ropts, &spec, a->max_ram, &info,
                                                      &r, &model);
    else model = mtk_model_load(ctx, a->model, a->weights, &ropts, &spec, &info, &r);
    if (!a->json && info.ambiguity) fprintf(stderr, "mtk: note: %s\n", info.ambiguity);
    if (!model) return cli_fail_ctx(a->json, ctx);
    double t1 = now_seconds();
    int32_t threads = mtk_ctx_num_threads(ctx); /* the setting (a stream may run a few tokens on fewer) */
    mtk_model_outputs out;
    if (!mtk_model_run(model, &in, &out)) return cli_fail_ctx(a->json, ctx);
    double t2 = now_seconds();
    if (a->output && !cli_run_write_outputs(ctx, &out, a->output)) return cli_fail_ctx(a->json, ctx);
    /* an encoder-decoder's logits are the decoder's: its rows have no padding */
    return report(ctx, a, &info, in.input_ids, in.decoder_input_ids ? NULL : in.attention_mask, &out, *stream,
                  t1 - t0, t2 - t1, threads);
}

int cli_run(int argc, char **argv)
{
    static const struct option longopts[] = {
        { "weights", required_argument, NULL, 'w' },        { "input-ids", required_argument, NULL, 'i' },
        { "attention-mask", required_argument, NULL, 'm' }, { "token-type-ids", required_argument, NULL, 'T' },
        { "position-ids", required_argument, NULL, 'P' },   { "dtype", required_argument, NULL, 'd' },
        { "output", required_argument, NULL, 'o' },         { "top", required_argument, NULL, 'k' },
        { "threads", required_argument, NULL, 't' },        { "json", no_argument, NULL, 'j' },
        { "max-ram", required_argument, NULL, 'r' },        { "decoder-input-ids", required_argument, NULL, 'D' },
        { "input", required_argument, NULL, 'I' },          { "method", required_argument, NULL, 'M' },
        { "seed", required_argument, NULL, 'S' },          { "list-inputs", no_argument, NULL, 'L' },
        { "help", no_argument, NULL, 'h' },                 { NULL, 0, NULL, 0 },
    };
    run_args a = { .dtype = MTK_DTYPE_UNDEFINED, .top = 5 };
    int opt;
    cli_options_reset();
    while ((opt = cli_getopt("run", argc, argv, "w:i:m:T:P:D:d:o:k:t:r:jI:M:S:Lh", longopts)) != -1) {
        switch (opt) {
        case 'w': a.weights = optarg; break;
        case 'i': a.ids = optarg; break;
        case 'm': a.mask = optarg; break;
        case 'T': a.types = optarg; break;
        case 'P': a.positions = optarg; break;
        case 'D': a.decoder_ids = optarg; break;
        case 'd':
            a.dtype = cli_parse_floating_dtype("run", "--dtype", optarg);
            if (a.dtype == MTK_DTYPE_UNDEFINED) return CLI_EXIT_USAGE;
            break;
        case 'o': a.output = optarg; break;
        case 'k':
        case 't': {
            char *end;
            long v = strtol(optarg, &end, 10);
            long low = opt == 'k' ? 0 : 1;
            if (*end || v < low || v > 1024)
                return cli_usage_error("run", "--%s '%s' is not %ld..1024", opt == 'k' ? "top" : "threads", optarg,
                                       low);
            if (opt == 'k') a.top = (int32_t)v;
            else a.threads = (int32_t)v;
            break;
        }
        case 'r':
            if (!mtk_parse_size(optarg, &a.max_ram))
                return cli_usage_error("run", "--max-ram '%s' is not a size (bytes, or 500MB, 2GiB)", optarg);
            break;
        case 'j': a.json = true; break;
        case 'I':
            if (a.ninputs == MTK_COMPONENT_MAX_INPUTS)
                return cli_usage_error("run", "more than %d --input", MTK_COMPONENT_MAX_INPUTS);
            a.inputs[a.ninputs++] = optarg;
            break;
        case 'M': a.method = optarg; break;
        case 'L': a.list = true; break;
        case 'S': {
            char *end;
            errno = 0;
            unsigned long long v = strtoull(optarg, &end, 10);
            if (!*optarg || *end || errno || optarg[0] == '-')
                return cli_usage_error("run", "--seed '%s' is not a non-negative integer", optarg);
            a.seed = v;
            break;
        }
        case 'h': fputs(usage, stdout); return CLI_EXIT_OK;
        default: return CLI_EXIT_USAGE;
        }
    }
    if (argc - optind != 1)
        return cli_usage_error("run", "expected one MODEL, got %d argument%s", argc - optind,
                               argc - optind == 1 ? "" : "s");
    if (!a.weights && !a.list) return cli_usage_error("run", "--weights PATH is required");
    bool component = a.ninputs > 0 || a.method || a.list;
    if (a.list && a.ninputs > 0) return cli_usage_error("run", "--list-inputs takes no --input");
    if (component && (a.ids || a.mask || a.types || a.positions || a.decoder_ids || a.max_ram))
        return cli_usage_error("run", "--input / --method / --list-inputs are for a diffusers component: they take no %s",
                               a.max_ram ? "--max-ram" : "token ids, mask, types or positions");
    if (!a.ids && !component)
        return cli_usage_error("run", "--input-ids IDS is required (or --input NAME=VALUE for a diffusers component)");
    a.model = argv[optind];
    if (a.threads > 0) {
        char n[16];
        snprintf(n, sizeof n, "%d", (int)a.threads);
        setenv("OPENBLAS_NUM_THREADS", n, 1); /* before the first product loads OpenBLAS */
    }
    mtk_ctx *ctx = mtk_ctx_new();
    if (!ctx) return cli_fail(a.json, "out_of_memory", NULL, "out of memory");
    if (a.threads > 0) mtk_ctx_set_num_threads(ctx, a.threads);
    mtk_stream *stream = NULL;
    cli_component_run c = { a.model, a.weights, a.output, a.method, a.inputs, a.ninputs, a.dtype, a.threads, a.seed,
                            a.json, a.list };
    int status = component ? cli_run_component(ctx, &c) : run(ctx, &a, &stream);
    mtk_stream_free(stream);
    mtk_ctx_free(ctx);
    return status;
}
