/* mtk generate: loads a decoder language model (mtk_model_load) and
 * decodes greedily with the KV cache (mtk_lm_generate), as transformers'
 * generate(do_sample=False); prints the ids and the speed.  The eos, pad
 * and decoder start tokens come from the options, else the model
 * directory's generation_config.json, else its config.json. */
#include "cli/cli.h"
#include "core/text.h"
#include "mtk/mtk.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char usage[] =
    "usage: mtk generate MODEL --weights PATH --input-ids IDS --max-new-tokens N\n"
    "                    [--attention-mask M] [--dtype D] [--eos-token-id IDS]\n"
    "                    [--pad-token-id ID] [--decoder-start-token-id ID]\n"
    "                    [--threads N] [--output FILE]\n"
    "                    [--max-ram BYTES] [--json]\n"
    "\n"
    "Loads MODEL (a built-in name, a config.json, or a directory holding one)\n"
    "with the safetensors checkpoint PATH, as `mtk load` does, and decodes\n"
    "greedily with a KV cache, as transformers' model.generate(input_ids,\n"
    "attention_mask, do_sample=False, max_new_tokens=N): the prompt in one\n"
    "forward (the prefill), then one token per step, each the argmax of the\n"
    "last logits.  A row that produces an eos token is finished and gets the\n"
    "pad token from then on; decoding stops after N tokens or when every row\n"
    "is finished.  Sliding-window layers keep their window as transformers'\n"
    "DynamicSlidingWindowLayer does.  Works for the decoder ForCausalLM\n"
    "classes of the zoo (llama, mistral, qwen2, qwen3, olmo2, smollm3,\n"
    "granite, phi3, gemma, gemma2, gemma3_text, ...) and for\n"
    "T5ForConditionalGeneration: the encoder runs once over IDS (with the\n"
    "attention mask as given), the decoder from decoder_start_token_id with\n"
    "its self-attention cached and the cross-attention's keys and values\n"
    "made once; the sequences are then the start token and the new tokens.\n"
    "\n"
    "options:\n"
    "  -w, --weights PATH      the checkpoint (required)\n"
    "  -i, --input-ids IDS     the prompt: ids separated by ',', rows by ';'\n"
    "                          (1,2,3;4,5,6), every row as long (required)\n"
    "  -m, --attention-mask M  1 for a token, 0 for padding, the shape of IDS\n"
    "                          (left padding: 0,1,1;1,1,1); default: ids !=\n"
    "                          pad token when the pad token occurs in IDS and\n"
    "                          is not an eos token, else ones (as generate);\n"
    "                          for T5 ones (generate infers none there)\n"
    "  -n, --max-new-tokens N  tokens to generate, >= 1 (required)\n"
    "  -d, --dtype D           build the model in D (float32, bfloat16, ...)\n"
    "                          and convert the checkpoint to it; default: the\n"
    "                          config's dtype\n"
    "  -e, --eos-token-id IDS  eos tokens (1 or 1,2), or 'none'; default: the\n"
    "                          generation_config.json beside the config, else\n"
    "                          the config's eos_token_id\n"
    "  -p, --pad-token-id ID   the pad token; default: as eos, then the first\n"
    "                          eos token (as transformers)\n"
    "  -s, --decoder-start-token-id ID\n"
    "                          T5's first decoder token; default: as eos\n"
    "                          (generation_config.json, then the config's\n"
    "                          decoder_start_token_id, else its pad token)\n"
    "  -t, --threads N         cpu threads (mtk's kernels and OpenBLAS)\n"
    "  -r, --max-ram BYTES     stream the weights under a RAM budget (\"2GB\",\n"
    "                          \"500MiB\"), as `mtk run --max-ram`: each decoder\n"
    "                          layer is mapped in before it runs, every step\n"
    "                          (the next by a thread) and dropped after; the\n"
    "                          tokens are the same.  The budget must hold the\n"
    "                          tensors outside the layers and one layer; what\n"
    "                          is left keeps the first layers resident across\n"
    "                          steps.  The KV cache and activations come on top.\n"
    "                          A decode step whose --threads take every cpu\n"
    "                          brings each streamed layer in on those threads,\n"
    "                          just before it runs (a prefetch thread would\n"
    "                          take a core from them: measured slower); the\n"
    "                          prefill, and fewer threads, keep the prefetch.\n"
    "                          MTK_STREAM_COMPUTE_THREADS=N decodes on N\n"
    "                          threads beside the prefetch, 0 on --threads;\n"
    "                          the JSON's \"stream\" says which (\"decode_threads\",\n"
    "                          \"decode_inline\")\n"
    "  -o, --output FILE       also write FILE.safetensors: \"sequences\" (B, S + n)\n"
    "                          int64 and \"logits\" (n, B, vocab) float32, each\n"
    "                          step's last logits (generate's output_logits)\n"
    "  -j, --json              print one JSON document: {\"model\",\n"
    "                          \"architecture\", \"dtype\", \"input_ids\",\n"
    "                          \"sequences\": [[ids]], \"new_tokens\", \"prompt_tokens\",\n"
    "                          \"prefill_seconds\", \"prefill_tokens_per_s\",\n"
    "                          \"decode_seconds\", \"decode_tokens_per_s\",\n"
    "                          \"load_seconds\", \"threads\", \"stream\" (null, or\n"
    "                          as mtk run's)}; on an error\n"
    "                          {\"error\": {\"code\", \"message\"}} on one line\n"
    "  -h, --help              show this help and exit\n"
    "\n"
    "Exit status: 0 when generated, 1 on an error, 2 on a usage error.\n";

#define MAX_EOS 16

typedef struct generate_args {
    const char *model, *weights, *ids, *mask, *output;
    int64_t max_new_tokens;
    mtk_dtype dtype;
    int64_t eos[MAX_EOS];
    int32_t neos;
    bool eos_given, eos_none;
    int64_t pad;
    bool pad_given;
    int64_t start;
    bool start_given;
    int32_t threads;
    uint64_t max_ram; /* 0: in RAM */
    bool json;
} generate_args;

static bool parse_int(const char *text, long long lo, long long hi, long long *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (end == text || *end || errno || v < lo || v > hi) return false;
    *out = v;
    return true;
}

/* eos_token_id (an int or a list), pad_token_id and decoder_start_token_id
 * of a config object, where the options left them unset. */
static void tokens_from_json(generate_args *a, const cJSON *root)
{
    const cJSON *eos = cJSON_GetObjectItemCaseSensitive(root, "eos_token_id");
    if (!a->eos_given && eos && !cJSON_IsNull(eos)) {
        a->eos_given = true;
        if (cJSON_IsNumber(eos)) {
            a->eos[a->neos++] = (int64_t)eos->valuedouble;
        } else if (cJSON_IsArray(eos)) {
            const cJSON *e;
            cJSON_ArrayForEach(e, eos) if (cJSON_IsNumber(e) && a->neos < MAX_EOS) a->eos[a->neos++] =
                (int64_t)e->valuedouble;
        }
    }
    const cJSON *pad = cJSON_GetObjectItemCaseSensitive(root, "pad_token_id");
    if (!a->pad_given && pad && cJSON_IsNumber(pad)) {
        a->pad_given = true;
        a->pad = (int64_t)pad->valuedouble;
    }
    const cJSON *start = cJSON_GetObjectItemCaseSensitive(root, "decoder_start_token_id");
    if (!a->start_given && start && cJSON_IsNumber(start)) {
        a->start_given = true;
        a->start = (int64_t)start->valuedouble;
    }
}

static cJSON *read_json_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *text = NULL;
    long n = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
    if (n >= 0 && n < (64L << 20) && fseek(f, 0, SEEK_SET) == 0 && (text = malloc((size_t)n + 1)) != NULL) {
        text[fread(text, 1, (size_t)n, f)] = '\0';
    }
    fclose(f);
    cJSON *doc = text ? cJSON_Parse(text) : NULL;
    free(text);
    return doc;
}

/* The special tokens: generation_config.json beside the config, then the
 * config (a file, a directory's config.json, or a built-in's text). */
static void default_tokens(generate_args *a)
{
    struct stat st;
    char path[4096];
    bool dir = stat(a->model, &st) == 0 && S_ISDIR(st.st_mode);
    bool file = !dir && stat(a->model, &st) == 0;
    if (dir || file) {
        const char *slash = strrchr(a->model, '/');
        int base = dir ? (int)strlen(a->model) : slash ? (int)(slash - a->model) : 0;
        const char *names[2] = { "generation_config.json", "config.json" };
        for (int i = 0; i < 2; i++) {
            if (i == 1 && file) snprintf(path, sizeof path, "%s", a->model);
            else if (base) snprintf(path, sizeof path, "%.*s/%s", base, a->model, names[i]);
            else snprintf(path, sizeof path, "%s", names[i]);
            cJSON *doc = read_json_file(path);
            if (doc) tokens_from_json(a, doc);
            cJSON_Delete(doc);
        }
        return;
    }
    const mtk_builtin_model *b = mtk_builtin_model_find(a->model);
    cJSON *doc = b ? cJSON_Parse(b->config_json) : NULL;
    if (doc) tokens_from_json(a, doc);
    cJSON_Delete(doc);
}

static cJSON *ids_json(const mtk_tensor *t)
{
    cJSON *rows = cJSON_CreateArray();
    const int64_t *v = mtk_tensor_data(t);
    for (int64_t r = 0; rows && r < t->shape[0]; r++) {
        cJSON *row = cJSON_CreateArray();
        for (int64_t c = 0; row && c < t->shape[1]; c++) cJSON_AddItemToArray(row, text_json_int(v[r * t->shape[1] + c]));
        cJSON_AddItemToArray(rows, row);
    }
    return rows;
}

static double per_second(int64_t n, double s) { return s > 0 ? (double)n / s : 0.0; }

static void print_text(const generate_args *a, const mtk_model_info *info, const mtk_tensor *prompt,
                       const mtk_tensor *out, const mtk_generate_stats *st, double load_seconds,
                       const mtk_stream *stream)
{
    printf("%s (%s, %s): %lld new token%s for %lld prompt%s of %lld\n", a->model, info->architecture,
           mtk_dtype_name(info->dtype), (long long)st->new_tokens, st->new_tokens == 1 ? "" : "s",
           (long long)prompt->shape[0], prompt->shape[0] == 1 ? "" : "s", (long long)prompt->shape[1]);
    const int64_t *v = mtk_tensor_data(out);
    /* the sequences: the prompt then the new tokens, or (encoder-decoder) the decoder's start then them */
    int64_t width = out->shape[1], s = st->encoder_decoder ? 1 : prompt->shape[1];
    for (int64_t r = 0; r < out->shape[0]; r++) {
        printf("  [%lld] ", (long long)r);
        for (int64_t c = 0; c < width; c++) printf("%s%lld", c == 0 ? "" : c == s ? " | " : ",", (long long)v[r * width + c]);
        putchar('\n');
    }
    printf("  load:    %.3f s\n", load_seconds);
    cli_stream_text(stream);
    printf("  prefill: %lld tokens in %.3f s, %.1f tokens/s\n", (long long)st->prompt_tokens, st->prefill_seconds,
           per_second(st->prompt_tokens, st->prefill_seconds));
    printf("  decode:  %lld tokens in %.3f s, %.1f tokens/s\n", (long long)st->decode_tokens, st->decode_seconds,
           per_second(st->decode_tokens, st->decode_seconds));
}

static void print_json(const generate_args *a, const mtk_model_info *info, const mtk_tensor *prompt,
                       const mtk_tensor *out, const mtk_generate_stats *st, double load_seconds, int32_t threads,
                       const mtk_stream *stream)
{
    cJSON *doc = cJSON_CreateObject();
    cJSON_AddStringToObject(doc, "model", a->model);
    cJSON_AddStringToObject(doc, "architecture", info->architecture);
    cJSON_AddStringToObject(doc, "dtype", mtk_dtype_name(info->dtype));
    cJSON_AddItemToObject(doc, "input_ids", ids_json(prompt));
    cJSON_AddItemToObject(doc, "sequences", ids_json(out));
    cJSON_AddItemToObject(doc, "new_tokens", text_json_int(st->new_tokens));
    cJSON_AddItemToObject(doc, "prompt_tokens", text_json_int(st->prompt_tokens));
    cJSON_AddNumberToObject(doc, "prefill_seconds", st->prefill_seconds);
    cJSON_AddNumberToObject(doc, "prefill_tokens_per_s", per_second(st->prompt_tokens, st->prefill_seconds));
    cJSON_AddItemToObject(doc, "decode_tokens", text_json_int(st->decode_tokens));
    cJSON_AddNumberToObject(doc, "decode_seconds", st->decode_seconds);
    cJSON_AddNumberToObject(doc, "decode_tokens_per_s", per_second(st->decode_tokens, st->decode_seconds));
    cJSON_AddNumberToObject(doc, "load_seconds", load_seconds);
    cJSON_AddItemToObject(doc, "threads", text_json_int(threads));
    cJSON_AddItemToObject(doc, "stream", cli_stream_json(stream));
    char *text = cJSON_PrintUnformatted(doc);
    if (text) puts(text);
    else cli_fail(true, "out_of_memory", NULL, "out of memory");
    cJSON_free(text);
    cJSON_Delete(doc);
}

static int generate(mtk_ctx *ctx, generate_args *a, mtk_stream **stream)
{
    if (a->threads > 0) mtk_ctx_set_num_threads(ctx, a->threads);
    mtk_tensor *ids = cli_ids_read(ctx, a->ids, "input-ids");
    mtk_tensor *mask = ids && a->mask ? cli_ids_read(ctx, a->mask, "attention-mask") : NULL;
    if (!ids || (a->mask && !mask)) return cli_fail_ctx(a->json, ctx);
    if (mask && (mask->shape[0] != ids->shape[0] || mask->shape[1] != ids->shape[1]))
        return cli_fail(a->json, "invalid_argument", NULL,
                        "--attention-mask is %lldx%lld, --input-ids %lldx%lld: they must have the same shape",
                        (long long)mask->shape[0], (long long)mask->shape[1], (long long)ids->shape[0],
                        (long long)ids->shape[1]);
    if (!a->eos_given || !a->pad_given || !a->start_given) default_tokens(a);
    if (a->eos_none) a->neos = 0;
    mtk_model_resolve_options ropts = { .dtype = a->dtype, .meta = true };
    mtk_load_spec spec = { .convert_dtype = a->dtype != MTK_DTYPE_UNDEFINED, .threads = a->threads };
    mtk_model_info info;
    mtk_load_result r;
    memset(&r, 0, sizeof r);
    mtk_module *model = NULL;
    if (a->max_ram) *stream = mtk_model_load_streamed(ctx, a->model, a->weights, &ropts, &spec, a->max_ram, &info,
                                                      &r, &model);
    else model = mtk_model_load(ctx, a->model, a->weights, &ropts, &spec, &info, &r);
    if (!model) return cli_fail_ctx(a->json, ctx);
    mtk_module_train(model, false);
    mtk_generate_options o = { .max_new_tokens = a->max_new_tokens, .attention_mask = mask, .eos_token_ids = a->eos,
                               .n_eos = a->neos, .pad_token_id = a->pad, .has_pad = a->pad_given,
                               .decoder_start_token_id = a->start, .has_decoder_start = a->start_given,
                               .output_logits = a->output != NULL };
    mtk_generate_stats st;
    int32_t threads = mtk_ctx_num_threads(ctx); /* the setting (a stream decodes on fewer: its "decode_threads") */
    mtk_tensor *out = mtk_lm_generate(model, ids, &o, &st);
    if (!out) return cli_fail_ctx(a->json, ctx);
    if (a->output) {
        mtk_st_writer *w = mtk_st_writer_new(ctx);
        bool ok = w && mtk_st_writer_add(w, "sequences", out) && mtk_st_writer_add(w, "logits", st.logits) &&
                  mtk_st_writer_write(w, a->output);
        mtk_st_writer_free(w);
        if (!ok) return cli_fail_ctx(a->json, ctx);
    }
    if (a->json) print_json(a, &info, ids, out, &st, r.seconds, threads, *stream);
    else print_text(a, &info, ids, out, &st, r.seconds, *stream);
    return CLI_EXIT_OK;
}

int cli_generate(int argc, char **argv)
{
    static const struct option longopts[] = {
        { "weights", required_argument, NULL, 'w' },      { "input-ids", required_argument, NULL, 'i' },
        { "attention-mask", required_argument, NULL, 'm' }, { "max-new-tokens", required_argument, NULL, 'n' },
        { "dtype", required_argument, NULL, 'd' },        { "eos-token-id", required_argument, NULL, 'e' },
        { "pad-token-id", required_argument, NULL, 'p' }, { "threads", required_argument, NULL, 't' },
        { "json", no_argument, NULL, 'j' },               { "help", no_argument, NULL, 'h' },
        { "output", required_argument, NULL, 'o' },       { "max-ram", required_argument, NULL, 'r' },
        { "decoder-start-token-id", required_argument, NULL, 's' },
        { NULL, 0, NULL, 0 },
    };
    generate_args a = { .dtype = MTK_DTYPE_UNDEFINED };
    bool have_n = false;
    long long v;
    int opt;
    cli_options_reset();
    while ((opt = cli_getopt("generate", argc, argv, "w:i:m:n:d:e:p:s:t:o:r:jh", longopts)) != -1) {
        switch (opt) {
        case 'w': a.weights = optarg; break;
        case 'i': a.ids = optarg; break;
        case 'm': a.mask = optarg; break;
        case 'n':
            if (!parse_int(optarg, LLONG_MIN, LLONG_MAX, &v))
                return cli_usage_error("generate", "--max-new-tokens '%s' is not an integer", optarg);
            if (v < 1) return cli_usage_error("generate", "--max-new-tokens must be >= 1, got %lld", v);
            a.max_new_tokens = v;
            have_n = true;
            break;
        case 'd':
            a.dtype = cli_parse_floating_dtype("generate", "--dtype", optarg);
            if (a.dtype == MTK_DTYPE_UNDEFINED) return CLI_EXIT_USAGE;
            break;
        case 'e': {
            a.eos_given = true;
            a.neos = 0;
            a.eos_none = strcmp(optarg, "none") == 0;
            for (char *tok = a.eos_none ? NULL : strtok(optarg, ","); tok; tok = strtok(NULL, ",")) {
                if (a.neos == MAX_EOS) return cli_usage_error("generate", "at most %d eos tokens", MAX_EOS);
                if (!parse_int(tok, 0, LLONG_MAX, &v))
                    return cli_usage_error("generate", "--eos-token-id '%s' is not a token id", tok);
                a.eos[a.neos++] = v;
            }
            if (!a.eos_none && a.neos == 0) return cli_usage_error("generate", "--eos-token-id needs ids or 'none'");
            break;
        }
        case 'p':
            if (!parse_int(optarg, 0, LLONG_MAX, &v))
                return cli_usage_error("generate", "--pad-token-id '%s' is not a token id", optarg);
            a.pad = v;
            a.pad_given = true;
            break;
        case 's':
            if (!parse_int(optarg, 0, LLONG_MAX, &v))
                return cli_usage_error("generate", "--decoder-start-token-id '%s' is not a token id", optarg);
            a.start = v;
            a.start_given = true;
            break;
        case 't':
            if (!parse_int(optarg, 1, 1024, &v)) return cli_usage_error("generate", "--threads '%s' is not 1..1024", optarg);
            a.threads = (int32_t)v;
            break;
        case 'o': a.output = optarg; break;
        case 'r':
            if (!mtk_parse_size(optarg, &a.max_ram))
                return cli_usage_error("generate", "--max-ram '%s' is not a size (bytes, or 500MB, 2GiB)", optarg);
            break;
        case 'j': a.json = true; break;
        case 'h': fputs(usage, stdout); return CLI_EXIT_OK;
        default: return CLI_EXIT_USAGE;
        }
    }
    if (argc - optind != 1)
        return cli_usage_error("generate", "expected one MODEL, got %d argument%s", argc - optind,
                               argc - optind == 1 ? "" : "s");
    if (!a.weights) return cli_usage_error("generate", "--weights PATH is required");
    if (!a.ids) return cli_usage_error("generate", "--input-ids IDS is required (e.g. 1,2,3;4,5,6)");
    if (!have_n) return cli_usage_error("generate", "--max-new-tokens N is required");
    a.model = argv[optind];
    if (a.threads > 0) {
        /* OpenBLAS reads it when it is loaded, at the first matrix product */
        char n[16];
        snprintf(n, sizeof n, "%d", (int)a.threads);
        setenv("OPENBLAS_NUM_THREADS", n, 1);
    }
    mtk_ctx *ctx = mtk_ctx_new();
    if (!ctx) return cli_fail(a.json, "out_of_memory", NULL, "out of memory");
    mtk_stream *stream = NULL;
    int status = generate(ctx, &a, &stream);
    mtk_stream_free(stream);
    mtk_ctx_free(ctx);
    return status;
}
