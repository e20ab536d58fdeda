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
    "                      \"threads\"}; on a mismatch {\"error\", \"missing\",\n"
    "                      \"unexpected\", \"mismatched\"}\n"
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

/* Every problem found while matching, by kind (arena-free: malloc'd). */
typedef struct problems {
    char **missing, **unexpected, **mismatched;
    int32_t nmissing, nunexpected, nmismatched;
} problems;

static void add_problem(char ***list, int32_t *n, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

static void add_problem(char ***list, int32_t *n, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    char **grown = realloc(*list, sizeof **list * (size_t)(*n + 1));
    if (!grown) return;
    *list = grown;
    grown[*n] = strdup(buf);
    if (grown[*n]) (*n)++;
}

static void free_problems(problems *p)
{
    for (int32_t i = 0; i < p->nmissing; i++) free(p->missing[i]);
    for (int32_t i = 0; i < p->nunexpected; i++) free(p->unexpected[i]);
    for (int32_t i = 0; i < p->nmismatched; i++) free(p->mismatched[i]);
    free(p->missing);
    free(p->unexpected);
    free(p->mismatched);
}

/* "[64, 128]" */
static const char *shape_text(const int64_t *shape, int32_t ndim, char *buf, size_t cap)
{
    size_t len = (size_t)snprintf(buf, cap, "[");
    for (int32_t d = 0; d < ndim && len < cap; d++)
        len += (size_t)snprintf(buf + len, cap - len, "%s%" PRId64, d ? ", " : "", shape[d]);
    if (len < cap) snprintf(buf + len, cap - len, "]");
    return buf;
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
        if (!same_shape(t, info)) {
            add_problem(&probs->mismatched, &probs->nmismatched, "%s: checkpoint has shape %s, model %s", name,
                        shape_text(info->shape, info->ndim, a, sizeof a), shape_text(t->shape, t->ndim, b, sizeof b));
            continue;
        }
        mtk_dtype from = mtk_st_dtype_to_mtk(info->dtype);
        if (from != t->dtype && (!convert || from == MTK_DTYPE_UNDEFINED)) {
            add_problem(&probs->mismatched, &probs->nmismatched, "%s: checkpoint has dtype %s, model %s%s", name,
                        mtk_st_dtype_name(info->dtype), mtk_dtype_name(t->dtype),
                        from == MTK_DTYPE_UNDEFINED ? " (no mtk dtype)" : " (pass --dtype to convert)");
            continue;
        }
        if (!set_add(&planned_set, t)) continue; /* a tied name: read once */
        plan[n++] = (planned){ name, t, file, info };
    }
    /* Second pass: tensors none of whose names the checkpoint holds. */
    for (int32_t i = 0; i < count; i++) {
        const char *name;
        mtk_tensor *t = mtk_state_dict_at(sd, i, &name);
        if (!set_has(&named, t))
            add_problem(&probs->missing, &probs->nmissing, "%s (%s %s)", name, mtk_dtype_name(t->dtype),
                        shape_text(t->shape, t->ndim, a, sizeof a));
    }
    free(named.slots);
    free(planned_set.slots);
    for (int64_t i = 0; i < mtk_checkpoint_tensor_count(ckpt); i++) {
        const mtk_st_info *info = mtk_checkpoint_tensor_at(ckpt, i, NULL);
        if (!mtk_state_dict_get(sd, info->name))
            add_problem(&probs->unexpected, &probs->nunexpected, "%s (%s %s)", info->name,
                        mtk_st_dtype_name(info->dtype), shape_text(info->shape, info->ndim, a, sizeof a));
    }
    return n;
}

static void print_problems(const problems *p, const char *model, const char *weights, bool json)
{
    int32_t total = p->nmissing + p->nunexpected + p->nmismatched;
    cli_error("cannot load '%s' into %s: %d key%s do not match (%d missing, %d unexpected, %d mismatched)",
              weights, model, total, total == 1 ? "" : "s", p->nmissing, p->nunexpected, p->nmismatched);
    for (int32_t i = 0; i < p->nmissing; i++) fprintf(stderr, "  missing:    %s\n", p->missing[i]);
    for (int32_t i = 0; i < p->nunexpected; i++) fprintf(stderr, "  unexpected: %s\n", p->unexpected[i]);
    for (int32_t i = 0; i < p->nmismatched; i++) fprintf(stderr, "  mismatched: %s\n", p->mismatched[i]);
    if (!json) return;
    cJSON *doc = cJSON_CreateObject();
    cJSON_AddStringToObject(doc, "error", "keys do not match");
    cJSON_AddItemToObject(doc, "missing", cJSON_CreateStringArray((const char *const *)p->missing, p->nmissing));
    cJSON_AddItemToObject(doc, "unexpected",
                          cJSON_CreateStringArray((const char *const *)p->unexpected, p->nunexpected));
    cJSON_AddItemToObject(doc, "mismatched",
                          cJSON_CreateStringArray((const char *const *)p->mismatched, p->nmismatched));
    char *text = cJSON_Print(doc);
    if (text) puts(text);
    free(text);
    cJSON_Delete(doc);
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
                     bool progress)
{
    mtk_st_read *reads = malloc(sizeof *reads * (size_t)(n ? n : 1));
    if (!reads) {
        cli_error("out of memory");
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
    if (!ok) cli_error("%s", mtk_ctx_message(ctx));
    return ok;
}

/* Every parameter and buffer must be a cpu tensor with storage now. */
static bool verify(mtk_module *model)
{
    mtk_state_dict *sd = mtk_module_state_dict(model);
    mtk_named_tensor *buffers;
    int32_t nb = mtk_module_named_buffers(model, &buffers);
    if (!sd || nb < 0) return false;
    for (int32_t i = 0; i < mtk_state_dict_count(sd); i++) {
        const char *name;
        mtk_tensor *t = mtk_state_dict_at(sd, i, &name);
        if (t->device != MTK_DEVICE_CPU || !t->storage) {
            cli_error("verify: %s was not materialized", name);
            return false;
        }
    }
    for (int32_t i = 0; i < nb; i++) {
        if (buffers[i].tensor->device != MTK_DEVICE_CPU || !buffers[i].tensor->storage) {
            cli_error("verify: buffer %s was not materialized", buffers[i].name);
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
    double gbps = seconds > 0 ? (double)bytes / seconds / 1e9 : 0;
    if (!a->json) {
        printf("loaded %s (%s, %s) from %s\n", a->model, info->architecture ? info->architecture : "?",
               mtk_dtype_name(info->dtype), a->weights);
        printf("  tensors:          %" PRId64 " read (+%d tied name%s sharing one)\n", tensors, tied,
               tied == 1 ? "" : "s");
        printf("  parameters:       %" PRIu64 "\n", params);
        printf("  computed buffers: %d recomputed\n", computed);
        printf("  bytes read:       %" PRIu64 " (%.2f MB)\n", bytes, (double)bytes / 1e6);
        printf("  time:             %.3f s with %d thread%s, %.2f GB/s\n", seconds, threads, threads == 1 ? "" : "s",
               gbps);
        return;
    }
    cJSON *doc = cJSON_CreateObject();
    cJSON_AddStringToObject(doc, "model", a->model);
    cJSON_AddStringToObject(doc, "architecture", info->architecture ? info->architecture : "");
    cJSON_AddStringToObject(doc, "weights", a->weights);
    cJSON_AddStringToObject(doc, "dtype", mtk_dtype_name(info->dtype));
    cJSON_AddNumberToObject(doc, "tensors", (double)tensors);
    cJSON_AddNumberToObject(doc, "tied", tied);
    cJSON_AddNumberToObject(doc, "computed_buffers", computed);
    cJSON_AddNumberToObject(doc, "parameters", (double)params);
    cJSON_AddNumberToObject(doc, "bytes", (double)bytes);
    cJSON_AddNumberToObject(doc, "seconds", seconds);
    cJSON_AddNumberToObject(doc, "gb_per_s", gbps);
    cJSON_AddNumberToObject(doc, "threads", threads);
    char *text = cJSON_Print(doc);
    if (text) puts(text);
    free(text);
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
        cli_error("%s", mtk_ctx_message(ctx));
        mtk_checkpoint_close(ckpt);
        return CLI_EXIT_ERROR;
    }
    int status = CLI_EXIT_ERROR;
    problems probs = { 0 };
    planned *plan = malloc(sizeof *plan * (size_t)(mtk_state_dict_count(sd) + 1));
    if (!plan) {
        cli_error("out of memory");
        goto done;
    }
    int64_t n = make_plan(sd, ckpt, a->dtype != MTK_DTYPE_UNDEFINED, plan, &probs);
    if (n < 0) {
        cli_error("out of memory");
        goto done;
    }
    if (probs.nmissing + probs.nunexpected + probs.nmismatched > 0) {
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
        cli_error("%s", mtk_ctx_message(ctx));
        goto done;
    }
    bool progress = isatty(STDERR_FILENO) && bytes >= PROGRESS_MIN_BYTES;
    if (!read_all(ctx, plan, n, bytes, threads, progress) || !verify(model)) goto done;
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

/* A floating dtype for --dtype, by mtk's or safetensors' name. */
static mtk_dtype parse_dtype(const char *text)
{
    mtk_dtype d = mtk_dtype_from_name(text);
    if (d == MTK_DTYPE_UNDEFINED) d = mtk_st_dtype_to_mtk(mtk_st_dtype_from_name(text));
    return mtk_dtype_is_floating(d) ? d : MTK_DTYPE_UNDEFINED;
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
            a.dtype = parse_dtype(optarg);
            if (a.dtype == MTK_DTYPE_UNDEFINED)
                return cli_usage_error("load", "--dtype '%s' is not a floating-point dtype (float32, float16, "
                                               "bfloat16, float64, float8_e4m3fn, float8_e5m2)", optarg);
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
    if (!ctx) {
        cli_error("out of memory");
        return CLI_EXIT_ERROR;
    }
    int status = load(ctx, &a);
    mtk_ctx_free(ctx);
    return status;
}
