/* mtk load: builds a model on meta and materializes it on the cpu from a
 * safetensors checkpoint (mtk_model_load, mtk/load.h: key matching as
 * transformers 5 does it), then reports what was read and how fast.
 * This file parses options, draws the progress bar and prints. */
#include "cli/cli.h"
#include "cli/load_plan.h"
#include "mtk/mtk.h"
#include "core/text.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char usage[] =
    "usage: mtk load MODEL --weights PATH [--dtype D] [--strip-prefix P]\n"
    "                [--rename REGEX=TEXT]... [--threads N] [--copy] [--output FILE]\n"
    "                [--json]\n"
    "       mpirun -np N mtk load MODEL --weights PATH --plan PLAN.json [--verify]\n"
    "                [--dtype D] [--strip-prefix P] [--rename REGEX=TEXT]... [--json]\n"
    "\n"
    "Builds MODEL (a built-in name, a config.json, or a directory holding one;\n"
    "a directory wins over a built-in of the same name, with a note) on the\n"
    "meta device, then materializes it on the cpu from the safetensors\n"
    "checkpoint PATH (a .safetensors file, a *.safetensors.index.json, or a\n"
    "directory).  Keys match as transformers 5 matches them: each family's\n"
    "legacy layouts are converted (per-expert MoE tensors fused, renamed\n"
    "heads), the base model's prefix (model., transformer.) is added or\n"
    "removed, keys of non-persistent buffers and the family's ignorable keys\n"
    "are skipped (and listed), and a torch.compile (_orig_mod.) or DDP\n"
    "(module.) prefix on every key is stripped.  Loading is strict: every\n"
    "missing, unexpected, mis-shaped or mis-typed key is reported in one\n"
    "error and nothing is loaded.  Tied parameters are read once; computed\n"
    "buffers (rotary inv_freq) are recomputed.  A tensor the file holds as\n"
    "the model does (same dtype, whole, aligned) is used where it lies in the\n"
    "mapped file (no copy; a write into it is copy-on-write, the file never\n"
    "changes); every other one is read into one block of memory, converting\n"
    "dtypes, by several threads.\n"
    "\n"
    "options:\n"
    "  -w, --weights PATH  the checkpoint (required)\n"
    "  -d, --dtype D       build the model in floating dtype D (float32,\n"
    "                      bfloat16, float16, ... or F32, BF16, ...) and convert\n"
    "                      the checkpoint's tensors to it; without it the model\n"
    "                      has its config's dtype and every tensor must match\n"
    "  -p, --strip-prefix P  remove P from every key that starts with it\n"
    "  -r, --rename REGEX=TEXT  replace the first match of REGEX (POSIX extended;\n"
    "                      \\1..\\9 its groups in TEXT) in every key, before the\n"
    "                      family's renames (from_pretrained's key_mapping);\n"
    "                      may be given several times, applied in order\n"
    "  -t, --threads N     reader threads (default: one per cpu)\n"
    "  -c, --copy          copy every tensor into memory of its own, none left\n"
    "                      mapped (for a file that may change under the model)\n"
    "  -o, --output FILE   write the loaded state dict (mtk's and transformers\n"
    "                      5's layout, each tied tensor once) to FILE.safetensors\n"
    "  -j, --json          print one JSON document: {\"model\", \"architecture\",\n"
    "                      \"weights\", \"dtype\", \"tensors\", \"tied\",\n"
    "                      \"converted\", \"computed_buffers\", \"parameters\",\n"
    "                      \"bytes\", \"mapped\", \"mapped_bytes\", \"seconds\",\n"
    "                      \"gb_per_s\", \"threads\",\n"
    "                      \"stripped_prefix\", \"skipped\": [{\"name\", \"source\",\n"
    "                      \"why\", \"dtype\", \"shape\"}], \"note\"}; on an error\n"
    "                      {\"error\": {\"code\", \"message\"}} on one line, and\n"
    "                      when keys do not match (code \"key_mismatch\") the\n"
    "                      error also has \"missing\" and \"unexpected\": [{\"name\",\n"
    "                      \"dtype\", \"shape\"}], \"mismatched\": [{\"name\",\n"
    "                      \"mismatch\": \"shape\"|\"dtype\", \"checkpoint\": {\"dtype\",\n"
    "                      \"shape\"}, \"model\": {\"dtype\", \"shape\"}}], \"skipped\"\n"
    "                      and \"prefix_hint\"\n"
    "  -P, --plan PLAN.json  a parallel plan (docs/sharding.md): run under\n"
    "                      mpirun with the plan's world_size ranks; each rank\n"
    "                      builds MODEL on meta and materializes on the cpu only\n"
    "                      the slices the plan gives it, reading only their\n"
    "                      bytes (keys matched as above).  Rank 0 prints a report\n"
    "                      per rank: tensors held, bytes read, time; with --json\n"
    "                      {\"model\", \"architecture\", \"weights\", \"plan\",\n"
    "                      \"world_size\", \"checkpoint_bytes\", \"ranks\": [{\"rank\",\n"
    "                      \"tensors\", \"elements\", \"bytes\", \"seconds\",\n"
    "                      \"wall_seconds\", \"slices\": [{\"name\", \"offset\",\n"
    "                      \"shape\", \"bytes\"}]}], \"verify\"}.  A plan that does\n"
    "                      not fit the model or the world is an error on every\n"
    "                      rank, before anything is read\n"
    "  -V, --verify        with --plan: rank 0 also loads the whole checkpoint and\n"
    "                      checks that the ranks' slices equal it bit for bit and\n"
    "                      hold every element (once, unless the placement has a\n"
    "                      Replicate): \"verify\": {\"ok\", \"tensors\", \"slices\",\n"
    "                      \"bytes_compared\", \"problem_count\", \"problems\"}\n"
    "  -h, --help          show this help and exit\n"
    "\n"
    "A progress bar goes to stderr when stderr is a terminal and the load is\n"
    "large.  Exit status: 0 when loaded and verified, 1 on an error, 2 on a\n"
    "usage error.\n";

/* Loads of at least this many bytes get a progress bar (on a terminal). */
#define PROGRESS_MIN_BYTES (256u << 20)
/* Skipped keys listed in the text report; the rest are counted. */
#define SKIPPED_SHOWN 8
/* --rename options at most. */
#define MAX_RENAMES 32

typedef struct load_args {
    const char *model, *weights, *strip_prefix, *output, *plan;
    mtk_key_rule renames[MAX_RENAMES];
    int32_t nrenames;
    mtk_dtype dtype;
    int32_t threads;
    bool json, verify, copy;
} load_args;

static void draw_progress(void *arg, uint64_t done, uint64_t total)
{
    (void)arg;
    int filled = total ? (int)(done * 40 / total) : 40;
    fprintf(stderr, "\r[%.*s%*s] %3d%%", filled, "========================================", 40 - filled, "",
            total ? (int)(done * 100 / total) : 100);
    if (done == total) fputc('\n', stderr);
    fflush(stderr);
}

static cJSON *shape_json(const int64_t *shape, int32_t ndim)
{
    cJSON *dims = cJSON_CreateArray();
    for (int32_t d = 0; dims && d < ndim; d++) cJSON_AddItemToArray(dims, text_json_int(shape[d]));
    return dims;
}

/* {"name", ["source", "why",] "dtype", "shape"} */
static cJSON *key_json(const mtk_load_key *k, bool with_source)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", k->name);
    if (with_source) {
        cJSON_AddStringToObject(o, "source", k->source ? k->source : k->name);
        cJSON_AddStringToObject(o, "why", k->why ? k->why : "");
    }
    cJSON_AddStringToObject(o, "dtype", k->dtype);
    cJSON_AddItemToObject(o, "shape", shape_json(k->shape, k->ndim));
    return o;
}

static cJSON *mismatch_json(const mtk_load_key *k)
{
    cJSON *o = cJSON_CreateObject(), *ck = cJSON_CreateObject(), *model = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", k->name);
    cJSON_AddStringToObject(o, "mismatch", k->why);
    cJSON_AddStringToObject(ck, "dtype", k->file_dtype);
    cJSON_AddItemToObject(ck, "shape", shape_json(k->file_shape, k->file_ndim));
    cJSON_AddStringToObject(model, "dtype", k->dtype);
    cJSON_AddItemToObject(model, "shape", shape_json(k->shape, k->ndim));
    cJSON_AddItemToObject(o, "checkpoint", ck);
    cJSON_AddItemToObject(o, "model", model);
    return o;
}

static cJSON *keys_json(const mtk_load_key *keys, int32_t n, bool with_source)
{
    cJSON *arr = cJSON_CreateArray();
    for (int32_t i = 0; arr && i < n; i++) cJSON_AddItemToArray(arr, key_json(&keys[i], with_source));
    return arr;
}

/* " (was SOURCE)" when the checkpoint named it otherwise. */
static const char *was(const mtk_load_key *k, char *buf, size_t cap)
{
    if (!k->source || strcmp(k->source, k->name) == 0) return "";
    snprintf(buf, cap, ", key %s", k->source);
    return buf;
}

static int print_mismatch(const load_args *a, const mtk_load_result *r)
{
    int32_t total = r->nmissing + r->nunexpected + r->nmismatched;
    char hint[256] = "", x[256], y[256], w[1100];
    if (r->prefix_hint)
        snprintf(hint, sizeof hint, "; the unexpected keys start with '%s' (a %s): pass --strip-prefix %s",
                 r->prefix_hint, strcmp(r->prefix_hint, "module.") == 0 ? "DistributedDataParallel wrapper"
                                                                         : "torch.compile'd model",
                 r->prefix_hint);
    if (a->json) {
        cJSON *d = cJSON_CreateObject();
        cJSON_AddItemToObject(d, "missing", keys_json(r->missing, r->nmissing, false));
        cJSON_AddItemToObject(d, "unexpected", keys_json(r->unexpected, r->nunexpected, false));
        cJSON *mm = cJSON_CreateArray();
        for (int32_t i = 0; mm && i < r->nmismatched; i++) cJSON_AddItemToArray(mm, mismatch_json(&r->mismatched[i]));
        cJSON_AddItemToObject(d, "mismatched", mm);
        cJSON_AddItemToObject(d, "skipped", keys_json(r->skipped, r->nskipped, true));
        if (r->prefix_hint) cJSON_AddStringToObject(d, "prefix_hint", r->prefix_hint);
        else cJSON_AddNullToObject(d, "prefix_hint");
        return cli_fail(true, "key_mismatch", d,
                        "cannot load '%s' into %s: %d key%s not match (%d missing, %d unexpected, %d mismatched)%s",
                        a->weights, a->model, total, total == 1 ? " does" : "s do", r->nmissing, r->nunexpected,
                        r->nmismatched, hint);
    }
    cli_error("cannot load '%s' into %s: %d key%s not match (%d missing, %d unexpected, %d mismatched)%s", a->weights,
              a->model, total, total == 1 ? " does" : "s do", r->nmissing, r->nunexpected, r->nmismatched, hint);
    for (int32_t i = 0; i < r->nmissing; i++) {
        const mtk_load_key *k = &r->missing[i];
        fprintf(stderr, "  missing:    %s (%s %s%s%s)\n", k->name, k->dtype, mtk_shape_list_str(k->shape, k->ndim, x, sizeof x),
                k->why ? ", " : "", k->why ? k->why : "");
    }
    for (int32_t i = 0; i < r->nunexpected; i++) {
        const mtk_load_key *k = &r->unexpected[i];
        fprintf(stderr, "  unexpected: %s (%s %s%s)\n", k->name, k->dtype, mtk_shape_list_str(k->shape, k->ndim, x, sizeof x),
                was(k, w, sizeof w));
    }
    for (int32_t i = 0; i < r->nmismatched; i++) {
        const mtk_load_key *k = &r->mismatched[i];
        if (strcmp(k->why, "shape") == 0)
            fprintf(stderr, "  mismatched: %s: checkpoint has shape %s, model %s%s\n", k->name,
                    mtk_shape_list_str(k->file_shape, k->file_ndim, x, sizeof x),
                    mtk_shape_list_str(k->shape, k->ndim, y, sizeof y), was(k, w, sizeof w));
        else
            fprintf(stderr, "  mismatched: %s: checkpoint has dtype %s, model %s (%s)\n", k->name, k->file_dtype,
                    k->dtype,
                    mtk_st_dtype_to_mtk(mtk_st_dtype_from_name(k->file_dtype)) == MTK_DTYPE_UNDEFINED
                        ? "no mtk dtype"
                        : "pass --dtype to convert");
    }
    return CLI_EXIT_ERROR;
}

/* Writes each distinct tensor of the state dict once, under its first name. */
static bool write_output(mtk_ctx *ctx, mtk_module *model, const char *path)
{
    mtk_named_tensor *params, *buffers;
    int32_t np = mtk_module_named_parameters(model, &params), nb = mtk_module_named_buffers(model, &buffers);
    mtk_st_writer *w = np >= 0 && nb >= 0 ? mtk_st_writer_new(ctx) : NULL;
    bool ok = w && mtk_st_writer_set_metadata(w, "format", "pt");
    for (int32_t i = 0; ok && i < np; i++) ok = mtk_st_writer_add(w, params[i].name, params[i].tensor);
    for (int32_t i = 0; ok && i < nb; i++)
        if (buffers[i].persistent) ok = mtk_st_writer_add(w, buffers[i].name, buffers[i].tensor);
    ok = ok && mtk_st_writer_write(w, path);
    mtk_st_writer_free(w);
    return ok;
}

static void print_text(const load_args *a, const mtk_model_info *info, const mtk_load_result *r)
{
    char n[TEXT_NUMBER_CAP], size[TEXT_NUMBER_CAP], exact[TEXT_NUMBER_CAP], speed[TEXT_NUMBER_CAP];
    double rate = r->seconds > 0 ? (double)r->bytes / r->seconds : 0;
    printf("loaded %s (%s, %s) from %s\n", a->model, info->architecture ? info->architecture : "?",
           mtk_dtype_name(info->dtype), a->weights);
    printf("  tensors:          %s read (+%d tied name%s sharing one)\n", text_grouped(r->tensors, n, sizeof n),
           r->tied, r->tied == 1 ? "" : "s");
    if (r->converted) printf("  converted:        %d from renamed or per-expert keys\n", r->converted);
    if (r->stripped_prefix)
        printf("  stripped prefix:  %s (%s)\n", r->stripped_prefix, a->strip_prefix ? "--strip-prefix" : "on every key");
    if (r->nskipped) {
        printf("  skipped:          %d key%s\n", r->nskipped, r->nskipped == 1 ? "" : "s");
        for (int32_t i = 0; i < r->nskipped && i < SKIPPED_SHOWN; i++)
            printf("                    %s (%s)\n", r->skipped[i].name, r->skipped[i].why);
        if (r->nskipped > SKIPPED_SHOWN) printf("                    ... and %d more\n", r->nskipped - SKIPPED_SHOWN);
    }
    printf("  parameters:       %s\n", text_grouped((int64_t)r->parameters, n, sizeof n));
    printf("  computed buffers: %d recomputed\n", r->computed_buffers);
    printf("  bytes read:       %s", text_bytes(r->bytes, size, sizeof size));
    if (r->bytes >= 1024) printf(" (%s bytes)", text_grouped((int64_t)r->bytes, exact, sizeof exact));
    if (r->mapped) printf("\n  mapped:           %d tensor%s, %s, used in the mapped file (no copy)", r->mapped,
                          r->mapped == 1 ? "" : "s", text_bytes(r->mapped_bytes, size, sizeof size));
    printf("\n  time:             %.3f s with %d thread%s, %s/s\n", r->seconds, r->threads, r->threads == 1 ? "" : "s",
           text_bytes((uint64_t)rate, speed, sizeof speed));
}

static void print_json(const load_args *a, const mtk_model_info *info, const mtk_load_result *r)
{
    double rate = r->seconds > 0 ? (double)r->bytes / r->seconds : 0;
    cJSON *doc = cJSON_CreateObject();
    cJSON_AddStringToObject(doc, "model", a->model);
    cJSON_AddStringToObject(doc, "architecture", info->architecture ? info->architecture : "");
    cJSON_AddStringToObject(doc, "weights", a->weights);
    cJSON_AddStringToObject(doc, "dtype", mtk_dtype_name(info->dtype));
    cJSON_AddItemToObject(doc, "tensors", text_json_int(r->tensors));
    cJSON_AddItemToObject(doc, "tied", text_json_int(r->tied));
    cJSON_AddItemToObject(doc, "converted", text_json_int(r->converted));
    cJSON_AddItemToObject(doc, "computed_buffers", text_json_int(r->computed_buffers));
    cJSON_AddItemToObject(doc, "parameters", text_json_int((int64_t)r->parameters));
    cJSON_AddItemToObject(doc, "bytes", text_json_int((int64_t)r->bytes));
    cJSON_AddItemToObject(doc, "mapped", text_json_int(r->mapped));
    cJSON_AddItemToObject(doc, "mapped_bytes", text_json_int((int64_t)r->mapped_bytes));
    cJSON_AddNumberToObject(doc, "seconds", r->seconds);
    cJSON_AddNumberToObject(doc, "gb_per_s", rate / 1e9);
    cJSON_AddItemToObject(doc, "threads", text_json_int(r->threads));
    if (r->stripped_prefix) cJSON_AddStringToObject(doc, "stripped_prefix", r->stripped_prefix);
    else cJSON_AddNullToObject(doc, "stripped_prefix");
    cJSON_AddItemToObject(doc, "skipped", keys_json(r->skipped, r->nskipped, true));
    if (info->ambiguity) cJSON_AddStringToObject(doc, "note", info->ambiguity);
    else cJSON_AddNullToObject(doc, "note");
    char *text = cJSON_PrintUnformatted(doc);
    if (text) puts(text);
    else cli_fail(true, "out_of_memory", NULL, "out of memory");
    cJSON_free(text);
    cJSON_Delete(doc);
}

static int load(mtk_ctx *ctx, const load_args *a)
{
    mtk_model_resolve_options ropts = { .dtype = a->dtype, .meta = true };
    mtk_load_spec spec = { .strip_prefix = a->strip_prefix, .key_mapping = a->renames,
                           .key_mapping_count = a->nrenames, .convert_dtype = a->dtype != MTK_DTYPE_UNDEFINED,
                           .threads = a->threads, .copy = a->copy, .progress_min_bytes = PROGRESS_MIN_BYTES };
    if (isatty(STDERR_FILENO)) spec.progress = draw_progress;
    mtk_model_info info;
    mtk_load_result r;
    memset(&r, 0, sizeof r);
    mtk_module *model = mtk_model_load(ctx, a->model, a->weights, &ropts, &spec, &info, &r);
    if (!a->json && info.ambiguity) fprintf(stderr, "mtk: note: %s\n", info.ambiguity);
    if (!model) {
        if (r.nmissing + r.nunexpected + r.nmismatched > 0) return print_mismatch(a, &r);
        return cli_fail_ctx(a->json, ctx);
    }
    if (a->output && !write_output(ctx, model, a->output)) return cli_fail_ctx(a->json, ctx);
    if (a->json) print_json(a, &info, &r);
    else print_text(a, &info, &r);
    return CLI_EXIT_OK;
}

/* --plan: the MPI load (load_plan.h) with this command's options. */
static int load_plan(const load_args *a, char **given)
{
    if (a->output) return cli_usage_error("load", "--output cannot be combined with --plan");
    plan_load_args p = { .model = a->model, .weights = a->weights, .plan = a->plan, .json = a->json,
                         .verify = a->verify, .argv = given };
    p.resolve = (mtk_model_resolve_options){ .dtype = a->dtype, .meta = true };
    p.spec = (mtk_load_spec){ .strip_prefix = a->strip_prefix, .key_mapping = a->renames,
                              .key_mapping_count = a->nrenames, .convert_dtype = a->dtype != MTK_DTYPE_UNDEFINED,
                              .threads = a->threads };
    return plan_load_run(&p);
}

/* Parses the options into *out: -1 to go on, else the exit status. */
static int parse(load_args *out, int argc, char **argv)
{
    static const struct option longopts[] = {
        { "weights", required_argument, NULL, 'w' }, { "dtype", required_argument, NULL, 'd' },
        { "threads", required_argument, NULL, 't' }, { "strip-prefix", required_argument, NULL, 'p' },
        { "output", required_argument, NULL, 'o' },  { "json", no_argument, NULL, 'j' },
        { "rename", required_argument, NULL, 'r' },  { "help", no_argument, NULL, 'h' },
        { "plan", required_argument, NULL, 'P' },    { "verify", no_argument, NULL, 'V' },
        { "copy", no_argument, NULL, 'c' },          { NULL, 0, NULL, 0 },
    };
    load_args a = { .dtype = MTK_DTYPE_UNDEFINED };
    int opt;
    cli_options_reset();
    while ((opt = cli_getopt("load", argc, argv, "w:d:t:p:o:r:P:Vcjh", longopts)) != -1) {
        switch (opt) {
        case 'w': a.weights = optarg; break;
        case 'd':
            a.dtype = cli_parse_floating_dtype("load", "--dtype", optarg);
            if (a.dtype == MTK_DTYPE_UNDEFINED) return CLI_EXIT_USAGE;
            break;
        case 't': {
            char *end;
            long v = strtol(optarg, &end, 10);
            if (*end || v < 1 || v > 1024) return cli_usage_error("load", "--threads '%s' is not 1..1024", optarg);
            a.threads = (int32_t)v;
            break;
        }
        case 'p':
            if (!*optarg) return cli_usage_error("load", "--strip-prefix needs a prefix such as _orig_mod.");
            a.strip_prefix = optarg;
            break;
        case 'o': a.output = optarg; break;
        case 'r': {
            char *eq = strchr(optarg, '=');
            if (!eq || eq == optarg) return cli_usage_error("load", "--rename '%s' is not REGEX=TEXT", optarg);
            if (a.nrenames == MAX_RENAMES) return cli_usage_error("load", "at most %d --rename options", MAX_RENAMES);
            *eq = '\0'; /* argv is ours to split */
            a.renames[a.nrenames++] = (mtk_key_rule){ .kind = MTK_KEY_RENAME, .pattern = optarg, .target = eq + 1 };
            break;
        }
        case 'P': a.plan = optarg; break;
        case 'V': a.verify = true; break;
        case 'c': a.copy = true; break;
        case 'j': a.json = true; break;
        case 'h': fputs(usage, stdout); return CLI_EXIT_OK;
        default: return CLI_EXIT_USAGE;
        }
    }
    if (argc - optind != 1)
        return cli_usage_error("load", "expected one MODEL, got %d argument%s", argc - optind,
                               argc - optind == 1 ? "" : "s");
    if (!a.weights) return cli_usage_error("load", "--weights PATH is required");
    a.model = argv[optind];
    if (a.verify && !a.plan) return cli_usage_error("load", "--verify needs --plan");
    *out = a;
    return -1;
}

/* A copy of argv (NULL-terminated), or NULL on out of memory. */
static char **copy_args(int argc, char **argv)
{
    char **copy = calloc((size_t)argc + 1, sizeof *copy);
    for (int i = 0; copy && i < argc; i++)
        if (!(copy[i] = strdup(argv[i]))) {
            while (i-- > 0) free(copy[i]);
            free(copy);
            return NULL;
        }
    return copy;
}

int cli_load(int argc, char **argv)
{
    /* the arguments as given, for --plan's mtk-mpi: parsing permutes argv
     * and cuts --rename's values */
    char **given = copy_args(argc, argv);
    if (!given) return cli_fail(false, "out_of_memory", NULL, "out of memory");
    load_args a;
    int status = parse(&a, argc, argv);
    if (status < 0 && a.plan) {
        status = load_plan(&a, given);
    } else if (status < 0) {
        mtk_ctx *ctx = mtk_ctx_new();
        status = ctx ? load(ctx, &a) : cli_fail(a.json, "out_of_memory", NULL, "out of memory");
        mtk_ctx_free(ctx);
    }
    for (int i = 0; i < argc; i++) free(given[i]);
    free(given);
    return status;
}
