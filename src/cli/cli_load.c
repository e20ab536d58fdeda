/* mtk load: builds a model on meta and materializes it on the cpu from a
 * safetensors checkpoint, then reports how fast the bytes moved.
 *
 * Where this lives: matching a module's state dict against a checkpoint
 * needs both io (the checkpoint) and nn (the module).  DESIGN.md's layers
 * forbid io -> nn, and models/ builds models rather than filling them, so
 * the glue sits here in the CLI, which may use every layer.  It uses only
 * public API (mtk/io.h, mtk/nn.h, mtk/models.h).
 *
 * Steps: (1) resolve MODEL on meta; (2) open the checkpoint; (3) plan: one
 * read per distinct tensor of the state dict (tied names share a tensor
 * and are read once, from the first of their names the checkpoint holds);
 * every missing, unexpected, mis-shaped or mis-typed key is collected and
 * reported in one error before any memory is allocated; (4) to_empty on
 * the cpu (each tensor allocated once), recompute computed buffers (reset
 * of the modules owning non-persistent buffers); (5) read every tensor
 * straight into its parameter with mtk_st_read_into_many (threads, no
 * intermediate copy); (6) verify and report. */
#include "cli/cli.h"
#include "mtk/mtk.h"
#include "core/text.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char usage[] =
    "usage: mtk load MODEL --weights PATH [--dtype D] [--threads N] [--json]\n"
    "\n"
    "Builds MODEL (a built-in name, a config.json, or a directory holding one)\n"
    "on the meta device, then materializes it on the cpu from the safetensors\n"
    "checkpoint PATH (a .safetensors file, a *.safetensors.index.json, or a\n"
    "directory), matching tensors by name.  Loading is strict: every missing,\n"
    "unexpected, mis-shaped or mis-typed key is reported in one error and\n"
    "nothing is loaded.  Tied parameters are read once; computed buffers\n"
    "(rotary inv_freq) are recomputed.  Each parameter is allocated once and\n"
    "read into directly, by several threads.\n"
    "\n"
    "options:\n"
    "  -w, --weights PATH  the checkpoint (required)\n"
    "  -d, --dtype D       build the model in floating dtype D (float32,\n"
    "                      bfloat16, float16, ... or F32, BF16, ...) and convert\n"
    "                      the checkpoint's tensors to it; without it the model\n"
    "                      has its config's dtype and every tensor must match\n"
    "  -t, --threads N     reader threads (default: one per cpu)\n"
    "  -j, --json          print one JSON document: {\"model\", \"weights\",\n"
    "                      \"dtype\", \"tensors\", \"tied\", \"computed_buffers\",\n"
    "                      \"parameters\", \"bytes\", \"seconds\", \"gb_per_s\",\n"
    "                      \"threads\"}; on an error {\"error\": {\"code\",\n"
    "                      \"message\"}} on one line, and when keys do not\n"
    "                      match (code \"key_mismatch\") the error also has\n"
    "                      \"missing\" and \"unexpected\": [{\"name\", \"dtype\",\n"
    "                      \"shape\"}], \"mismatched\": [{\"name\", \"mismatch\":\n"
    "                      \"shape\"|\"dtype\", \"checkpoint\": {\"dtype\",\n"
    "                      \"shape\"}, \"model\": {\"dtype\", \"shape\"}}]\n"
    "  -h, --help          show this help and exit\n"
    "\n"
    "A progress bar goes to stderr when stderr is a terminal and the load is\n"
    "large.  Exit status: 0 when loaded and verified, 1 on an error, 2 on a\n"
    "usage error.\n";

/* Loads of at least this many bytes get a progress bar (on a terminal). */
#define PROGRESS_MIN_BYTES (256u << 20)
#define PROGRESS_STEPS 20

/* One distinct tensor of the model and where its data comes from. */
typedef struct planned {
    const char *name;      /* the checkpoint name it is read from */
    mtk_tensor *tensor;
    mtk_st_file *file;
    const mtk_st_info *info;
} planned;

/* Every problem found while matching, by kind: a line of text and a JSON
 * object each (arena-free: malloc'd). */
typedef struct problem_list {
    char **lines;
    int32_t n;
    cJSON *json; /* array of objects */
} problem_list;

typedef struct problems {
    problem_list missing, unexpected, mismatched;
} problems;

/* {"dtype", "shape"} of a tensor as one side sees it. */
static cJSON *tensor_desc(cJSON *obj, const char *dtype, const int64_t *shape, int32_t ndim)
{
    cJSON *dims = cJSON_CreateArray();
    for (int32_t d = 0; dims && d < ndim; d++) cJSON_AddItemToArray(dims, text_json_int(shape[d]));
    cJSON_AddStringToObject(obj, "dtype", dtype);
    cJSON_AddItemToObject(obj, "shape", dims);
    return obj;
}

static void add_problem(problem_list *list, cJSON *entry, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* Adds a line and its JSON entry (taken). */
static void add_problem(problem_list *list, cJSON *entry, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (!list->json) list->json = cJSON_CreateArray();
    if (!list->json || !cJSON_AddItemToArray(list->json, entry)) cJSON_Delete(entry);
    char **grown = realloc(list->lines, sizeof *list->lines * (size_t)(list->n + 1));
    if (!grown) return;
    list->lines = grown;
    grown[list->n] = strdup(buf);
    if (grown[list->n]) list->n++;
}

static void free_list(problem_list *l)
{
    for (int32_t i = 0; i < l->n; i++) free(l->lines[i]);
    free(l->lines);
    cJSON_Delete(l->json);
}

static void free_problems(problems *p)
{
    free_list(&p->missing);
    free_list(&p->unexpected);
    free_list(&p->mismatched);
}

static bool same_shape(const mtk_tensor *t, const mtk_st_info *info)
{
    if (t->ndim != info->ndim) return false;
    for (int32_t d = 0; d < t->ndim; d++)
        if (t->shape[d] != info->shape[d]) return false;
    return true;
}

/* A set of tensor pointers (open addressing; capacity a power of two at
 * least twice the entries), so that matching stays linear in the number
 * of tensors. */
typedef struct tensor_set {
    const mtk_tensor **slots;
    size_t mask;
} tensor_set;

static bool set_init(tensor_set *set, int32_t entries)
{
    size_t cap = 16;
    while (cap < 2 * (size_t)entries) cap *= 2;
    set->slots = calloc(cap, sizeof *set->slots);
    set->mask = cap - 1;
    return set->slots != NULL;
}

/* Adds t; returns false when it was already there. */
static bool set_add(tensor_set *set, const mtk_tensor *t)
{
    size_t i = (size_t)(((uintptr_t)t >> 4) * 0x9E3779B97F4A7C15ull) & set->mask;
    while (set->slots[i]) {
        if (set->slots[i] == t) return false;
        i = (i + 1) & set->mask;
    }
    set->slots[i] = t;
    return true;
}

static bool set_has(const tensor_set *set, const mtk_tensor *t)
{
    size_t i = (size_t)(((uintptr_t)t >> 4) * 0x9E3779B97F4A7C15ull) & set->mask;
    for (; set->slots[i]; i = (i + 1) & set->mask)
        if (set->slots[i] == t) return true;
    return false;
}

/* Builds the read plan: one entry per distinct tensor of `sd`.  Tensors
 * with no name in the checkpoint, checkpoint names the model lacks, and
 * shape or dtype mismatches go to *probs.  `convert`: any dtype is
 * accepted (converted on read).  -1 on out of memory. */
static int64_t make_plan(const mtk_state_dict *sd, const mtk_checkpoint *ckpt, bool convert,
                         planned *plan, problems *probs)
{
    int32_t count = mtk_state_dict_count(sd);
    int64_t n = 0;
    char a[256], b[256];
    tensor_set named, planned_set; /* tensors with a name in the checkpoint; tensors planned */
    if (!set_init(&named, count) || !set_init(&planned_set, count)) {
        free(named.slots);
        return -1;
    }
    /* First pass: every state-dict name the checkpoint holds. */
    for (int32_t i = 0; i < count; i++) {
        const char *name;
        mtk_tensor *t = mtk_state_dict_at(sd, i, &name);
        mtk_st_file *file;
        const mtk_st_info *info = mtk_checkpoint_find(ckpt, name, &file);
        if (!info) continue;
        set_add(&named, t);
        mtk_dtype from = mtk_st_dtype_to_mtk(info->dtype);
        bool shape_ok = same_shape(t, info), dtype_ok = from == t->dtype || (convert && from != MTK_DTYPE_UNDEFINED);
        if (!shape_ok || !dtype_ok) {
            const char *hint = from == MTK_DTYPE_UNDEFINED ? "no mtk dtype" : "pass --dtype to convert";
            cJSON *entry = cJSON_CreateObject();
            cJSON_AddStringToObject(entry, "name", name);
            cJSON_AddStringToObject(entry, "mismatch", shape_ok ? "dtype" : "shape");
            cJSON_AddItemToObject(entry, "checkpoint", tensor_desc(cJSON_CreateObject(), mtk_st_dtype_name(info->dtype),
                                                                   info->shape, info->ndim));
            cJSON_AddItemToObject(entry, "model", tensor_desc(cJSON_CreateObject(), mtk_dtype_name(t->dtype),
                                                              t->shape, t->ndim));
            if (!shape_ok)
                add_problem(&probs->mismatched, entry, "%s: checkpoint has shape %s, model %s", name,
                            mtk_shape_list_str(info->shape, info->ndim, a, sizeof a),
                            mtk_shape_list_str(t->shape, t->ndim, b, sizeof b));
            else
                add_problem(&probs->mismatched, entry, "%s: checkpoint has dtype %s, model %s (%s)", name,
                            mtk_st_dtype_name(info->dtype), mtk_dtype_name(t->dtype), hint);
            continue;
        }
        if (!set_add(&planned_set, t)) continue; /* a tied name: read once */
        plan[n++] = (planned){ name, t, file, info };
    }
    /* Second pass: tensors none of whose names the checkpoint holds. */
    for (int32_t i = 0; i < count; i++) {
        const char *name;
        mtk_tensor *t = mtk_state_dict_at(sd, i, &name);
        if (set_has(&named, t)) continue;
        cJSON *entry = cJSON_CreateObject();
        cJSON_AddStringToObject(entry, "name", name);
        add_problem(&probs->missing, tensor_desc(entry, mtk_dtype_name(t->dtype), t->shape, t->ndim), "%s (%s %s)",
                    name, mtk_dtype_name(t->dtype), mtk_shape_list_str(t->shape, t->ndim, a, sizeof a));
    }
    free(named.slots);
    free(planned_set.slots);
    for (int64_t i = 0; i < mtk_checkpoint_tensor_count(ckpt); i++) {
        const mtk_st_info *info = mtk_checkpoint_tensor_at(ckpt, i, NULL);
        if (mtk_state_dict_get(sd, info->name)) continue;
        cJSON *entry = cJSON_CreateObject();
        cJSON_AddStringToObject(entry, "name", info->name);
        add_problem(&probs->unexpected, tensor_desc(entry, mtk_st_dtype_name(info->dtype), info->shape, info->ndim),
                    "%s (%s %s)", info->name, mtk_st_dtype_name(info->dtype),
                    mtk_shape_list_str(info->shape, info->ndim, a, sizeof a));
    }
    return n;
}

/* "1 key does not match", "3 keys do not match". */
static int print_problems(const problems *p, const char *model, const char *weights, bool json)
{
    int32_t total = p->missing.n + p->unexpected.n + p->mismatched.n;
    if (!json) {
        cli_error("cannot load '%s' into %s: %d key%s not match (%d missing, %d unexpected, %d mismatched)", weights,
                  model, total, total == 1 ? " does" : "s do", p->missing.n, p->unexpected.n, p->mismatched.n);
        for (int32_t i = 0; i < p->missing.n; i++) fprintf(stderr, "  missing:    %s\n", p->missing.lines[i]);
        for (int32_t i = 0; i < p->unexpected.n; i++) fprintf(stderr, "  unexpected: %s\n", p->unexpected.lines[i]);
        for (int32_t i = 0; i < p->mismatched.n; i++) fprintf(stderr, "  mismatched: %s\n", p->mismatched.lines[i]);
        return CLI_EXIT_ERROR;
    }
    cJSON *details = cJSON_CreateObject();
    const problem_list *lists[3] = { &p->missing, &p->unexpected, &p->mismatched };
    static const char *const keys[3] = { "missing", "unexpected", "mismatched" };
    for (int k = 0; details && k < 3; k++)
        cJSON_AddItemToObject(details, keys[k],
                              lists[k]->json ? cJSON_Duplicate(lists[k]->json, true) : cJSON_CreateArray());
    return cli_fail(true, "key_mismatch", details,
                    "cannot load '%s' into %s: %d key%s not match (%d missing, %d unexpected, %d mismatched)", weights,
                    model, total, total == 1 ? " does" : "s do", p->missing.n, p->unexpected.n, p->mismatched.n);
}

/* Recomputes computed (non-persistent) buffers: resets each module that
 * owns one.  Returns the number of such buffers, -1 on error. */
static int32_t recompute_buffers(mtk_module *model)
{
    mtk_named_tensor *buffers;
    int32_t n = mtk_module_named_buffers(model, &buffers);
    if (n < 0) return -1;
    int32_t computed = 0;
    for (int32_t i = 0; i < n; i++) {
        if (buffers[i].persistent) continue;
        computed++;
        bool done = false; /* one reset per owner */
        for (int32_t j = 0; j < i; j++)
            if (!buffers[j].persistent && buffers[j].owner == buffers[i].owner) done = true;
        if (!done && !mtk_module_reset_parameters(buffers[i].owner, 0)) return -1;
    }
    return computed;
}

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void draw_progress(uint64_t done, uint64_t total)
{
    int filled = total ? (int)(done * 40 / total) : 40;
    fprintf(stderr, "\r[%.*s%*s] %3d%%", filled, "========================================", 40 - filled, "",
            total ? (int)(done * 100 / total) : 100);
    fflush(stderr);
}

/* Reads every planned tensor; in PROGRESS_STEPS batches with a bar when
 * `progress`, else in one batch. */
static bool read_all(mtk_ctx *ctx, const planned *plan, int64_t n, uint64_t total_bytes, int32_t threads,
                     bool progress, bool json)
{
    mtk_st_read *reads = malloc(sizeof *reads * (size_t)(n ? n : 1));
    if (!reads) {
        cli_fail(json, "out_of_memory", NULL, "out of memory");
        return false;
    }
    for (int64_t i = 0; i < n; i++) reads[i] = (mtk_st_read){ plan[i].file, plan[i].name, plan[i].tensor };
    bool ok = true;
    if (!progress) {
        ok = mtk_st_read_into_many(ctx, reads, n, threads);
    } else {
        uint64_t done = 0, step = total_bytes / PROGRESS_STEPS + 1;
        int64_t start = 0;
        draw_progress(0, total_bytes);
        while (ok && start < n) {
            int64_t end = start;
            uint64_t batch = 0;
            while (end < n && (batch < step || end == start)) {
                batch += plan[end].info->end - plan[end].info->begin;
                end++;
            }
            ok = mtk_st_read_into_many(ctx, reads + start, end - start, threads);
            done += batch;
            start = end;
            draw_progress(done, total_bytes);
        }
        fputc('\n', stderr);
    }
    free(reads);
    if (!ok) cli_fail_ctx(json, ctx);
    return ok;
}

/* Every parameter and buffer must be a cpu tensor with storage now. */
static bool verify(mtk_module *model, bool json)
{
    mtk_state_dict *sd = mtk_module_state_dict(model);
    mtk_named_tensor *buffers;
    int32_t nb = mtk_module_named_buffers(model, &buffers);
    if (!sd || nb < 0) return false;
    for (int32_t i = 0; i < mtk_state_dict_count(sd); i++) {
        const char *name;
        mtk_tensor *t = mtk_state_dict_at(sd, i, &name);
        if (t->device != MTK_DEVICE_CPU || !t->storage) {
            cli_fail(json, "io_error", NULL, "verify: %s was not materialized", name);
            return false;
        }
    }
    for (int32_t i = 0; i < nb; i++) {
        if (buffers[i].tensor->device != MTK_DEVICE_CPU || !buffers[i].tensor->storage) {
            cli_fail(json, "io_error", NULL, "verify: buffer %s was not materialized", buffers[i].name);
            return false;
        }
    }
    return true;
}

typedef struct load_args {
    const char *model, *weights;
    mtk_dtype dtype;
    int32_t threads;
    bool json;
} load_args;

static void print_report(const load_args *a, const mtk_model_info *info, int64_t tensors, int32_t tied,
                         int32_t computed, uint64_t params, uint64_t bytes, double seconds, int32_t threads)
{
    double rate = seconds > 0 ? (double)bytes / seconds : 0; /* bytes per second */
    if (!a->json) {
        char n[TEXT_NUMBER_CAP], size[TEXT_NUMBER_CAP], exact[TEXT_NUMBER_CAP], speed[TEXT_NUMBER_CAP];
        printf("loaded %s (%s, %s) from %s\n", a->model, info->architecture ? info->architecture : "?",
               mtk_dtype_name(info->dtype), a->weights);
        printf("  tensors:          %s read (+%d tied name%s sharing one)\n", text_grouped(tensors, n, sizeof n), tied,
               tied == 1 ? "" : "s");
        printf("  parameters:       %s\n", text_grouped((int64_t)params, n, sizeof n));
        printf("  computed buffers: %d recomputed\n", computed);
        printf("  bytes read:       %s", text_bytes(bytes, size, sizeof size));
        if (bytes >= 1024) printf(" (%s bytes)", text_grouped((int64_t)bytes, exact, sizeof exact));
        printf("\n  time:             %.3f s with %d thread%s, %s/s\n", seconds, threads, threads == 1 ? "" : "s",
               text_bytes((uint64_t)rate, speed, sizeof speed));
        return;
    }
    cJSON *doc = cJSON_CreateObject();
    cJSON_AddStringToObject(doc, "model", a->model);
    cJSON_AddStringToObject(doc, "architecture", info->architecture ? info->architecture : "");
    cJSON_AddStringToObject(doc, "weights", a->weights);
    cJSON_AddStringToObject(doc, "dtype", mtk_dtype_name(info->dtype));
    cJSON_AddItemToObject(doc, "tensors", text_json_int(tensors));
    cJSON_AddItemToObject(doc, "tied", text_json_int(tied));
    cJSON_AddItemToObject(doc, "computed_buffers", text_json_int(computed));
    cJSON_AddItemToObject(doc, "parameters", text_json_int((int64_t)params));
    cJSON_AddItemToObject(doc, "bytes", text_json_int((int64_t)bytes));
    cJSON_AddNumberToObject(doc, "seconds", seconds);
    cJSON_AddNumberToObject(doc, "gb_per_s", rate / 1e9);
    cJSON_AddItemToObject(doc, "threads", text_json_int(threads));
    char *text = cJSON_PrintUnformatted(doc);
    if (text) puts(text);
    else cli_fail(true, "out_of_memory", NULL, "out of memory");
    cJSON_free(text);
    cJSON_Delete(doc);
}

static int load(mtk_ctx *ctx, const load_args *a)
{
    mtk_model_resolve_options ropts = { .dtype = a->dtype, .meta = true };
    mtk_model_info info;
    mtk_module *model = mtk_model_resolve(ctx, a->model, &ropts, &info);
    mtk_checkpoint *ckpt = model ? mtk_checkpoint_open(ctx, a->weights) : NULL;
    mtk_state_dict *sd = ckpt ? mtk_module_state_dict(model) : NULL;
    if (!sd) {
        cli_fail_ctx(a->json, ctx);
        mtk_checkpoint_close(ckpt);
        return CLI_EXIT_ERROR;
    }
    int status = CLI_EXIT_ERROR;
    problems probs = { 0 };
    planned *plan = malloc(sizeof *plan * (size_t)(mtk_state_dict_count(sd) + 1));
    if (!plan) {
        cli_fail(a->json, "out_of_memory", NULL, "out of memory");
        goto done;
    }
    int64_t n = make_plan(sd, ckpt, a->dtype != MTK_DTYPE_UNDEFINED, plan, &probs);
    if (n < 0) {
        cli_fail(a->json, "out_of_memory", NULL, "out of memory");
        goto done;
    }
    if (probs.missing.n + probs.unexpected.n + probs.mismatched.n > 0) {
        print_problems(&probs, a->model, a->weights, a->json);
        goto done;
    }
    uint64_t bytes = 0, params = 0;
    for (int64_t i = 0; i < n; i++) {
        bytes += plan[i].info->end - plan[i].info->begin;
        if (plan[i].tensor->flags & MTK_TENSOR_PARAMETER) params += (uint64_t)plan[i].info->numel;
    }
    int32_t threads = a->threads > 0 ? a->threads : (int32_t)sysconf(_SC_NPROCESSORS_ONLN);
    if (threads < 1) threads = 1;
    double start = now_seconds();
    int32_t computed;
    if (!mtk_module_to_empty(model, MTK_DEVICE_CPU) || (computed = recompute_buffers(model)) < 0) {
        cli_fail_ctx(a->json, ctx);
        goto done;
    }
    bool progress = isatty(STDERR_FILENO) && bytes >= PROGRESS_MIN_BYTES;
    if (!read_all(ctx, plan, n, bytes, threads, progress, a->json) || !verify(model, a->json)) goto done;
    double seconds = now_seconds() - start;
    int32_t tied = mtk_state_dict_count(sd) - (int32_t)n;
    print_report(a, &info, n, tied, computed, params, bytes, seconds, threads);
    status = CLI_EXIT_OK;
done:
    free_problems(&probs);
    free(plan);
    mtk_checkpoint_close(ckpt);
    return status;
}

int cli_load(int argc, char **argv)
{
    static const struct option longopts[] = {
        { "weights", required_argument, NULL, 'w' }, { "dtype", required_argument, NULL, 'd' },
        { "threads", required_argument, NULL, 't' }, { "json", no_argument, NULL, 'j' },
        { "help", no_argument, NULL, 'h' },          { NULL, 0, NULL, 0 },
    };
    load_args a = { .dtype = MTK_DTYPE_UNDEFINED };
    int opt;
    cli_options_reset();
    while ((opt = cli_getopt("load", argc, argv, "w:d:t:jh", longopts)) != -1) {
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
    mtk_ctx *ctx = mtk_ctx_new();
    if (!ctx) return cli_fail(a.json, "out_of_memory", NULL, "out of memory");
    int status = load(ctx, &a);
    mtk_ctx_free(ctx);
    return status;
}
