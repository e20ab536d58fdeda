/*
 * bench_zoo: the in-process half of bench/bench_zoo.py.  Builds a model of
 * the zoo (default llama-3-70b) on the meta device from its config and
 * runs one traced forward on a meta input (default 1x4096 token ids), in
 * a fresh context each time, REPEATS times, and prints one JSON document:
 *
 *   {"model":..., "input":[...], "params":..., "flops":..., "ops":...,
 *    "first_ms":..., "build_ms":..., "trace_ms":..., "total_ms":...,
 *    "median_total_ms":..., "arena_bytes":..., "max_rss_kb":...}
 *
 * first_ms is the first (cold) build + trace; build_ms, trace_ms and
 * total_ms are the fastest of the repeats, median_total_ms their median.
 * arena_bytes is the context's metadata after the trace; max_rss_kb the
 * process's peak resident set (VmHWM of /proc/self/status, which unlike
 * getrusage does not include what a parent had before exec).
 *
 * Usage: bench_zoo [MODEL [SHAPE [REPEATS]]]   (llama-3-70b 1x4096 200)
 *        bench_zoo --config MODEL              the built-in's config.json
 *        bench_zoo --rss CMD [ARG...]          runs CMD (output discarded)
 *                                              and prints {"max_rss_kb", "status"}
 *
 * --rss exists because Linux carries a process's peak RSS across fork and
 * exec: a child started by a big process (Python) reports at least its
 * parent's size.  Started from this small launcher, it reports its own.
 */
#include "mtk/mtk.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int compare_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

typedef struct run_result {
    double build_ms, trace_ms;
    int64_t params, flops;
    int32_t ops;
    size_t arena_bytes;
} run_result;

/* One build + traced forward in a fresh context; false (message printed)
 * on an error. */
static bool run_once(const char *model, const int64_t *shape, int32_t ndim, run_result *out)
{
    mtk_ctx *ctx = mtk_ctx_new();
    if (!ctx) return false;
    double t0 = now_ms();
    mtk_model_resolve_options options = { .dtype = MTK_DTYPE_UNDEFINED, .meta = true };
    mtk_model_info info;
    mtk_module *m = mtk_model_resolve(ctx, model, &options, &info);
    double t1 = now_ms();
    mtk_tensor *y = NULL;
    mtk_trace *trace = NULL;
    if (m) {
        mtk_tensor *x = mtk_tensor_new(ctx, info.input_dtype, shape, ndim, NULL, MTK_DEVICE_META);
        trace = mtk_trace_begin(m);
        y = x && trace ? mtk_module_forward(m, x) : NULL;
        mtk_trace_end(trace);
    }
    double t2 = now_ms();
    if (!y) {
        fprintf(stderr, "bench_zoo: %s\n", mtk_ctx_message(ctx));
        mtk_trace_free(trace);
        mtk_ctx_free(ctx);
        return false;
    }
    *out = (run_result){ t1 - t0, t2 - t1, mtk_module_num_parameters(m, false), mtk_trace_flops(trace),
                         mtk_trace_op_count(trace), mtk_ctx_arena_bytes(ctx) };
    mtk_trace_free(trace);
    mtk_ctx_free(ctx);
    return true;
}

/* Peak RSS in KiB of this process image: VmHWM, else getrusage. */
static long peak_rss_kb(void)
{
    long kb = -1;
    char line[256];
    FILE *f = fopen("/proc/self/status", "r");
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, "VmHWM:", 6) == 0) kb = strtol(line + 6, NULL, 10);
    if (f) fclose(f);
    if (kb < 0) {
        struct rusage usage;
        getrusage(RUSAGE_SELF, &usage);
        kb = usage.ru_maxrss;
    }
    return kb;
}

static int print_config(const char *name)
{
    const mtk_builtin_model *b = mtk_builtin_model_find(name);
    if (!b) {
        fprintf(stderr, "bench_zoo: no built-in model '%s'\n", name);
        return 1;
    }
    puts(b->config_json);
    return 0;
}

static int print_child_rss(char **argv)
{
    pid_t pid = fork();
    if (pid < 0) return 1;
    if (pid == 0) {
        int devnull = open("/dev/null", O_WRONLY);
        if (devnull >= 0) dup2(devnull, 1), dup2(devnull, 2);
        execvp(argv[0], argv);
        _exit(127);
    }
    int status = 0;
    struct rusage usage;
    if (wait4(pid, &status, 0, &usage) < 0) return 1;
    printf("{\"max_rss_kb\":%ld,\"status\":%d}\n", usage.ru_maxrss, WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc > 2 && strcmp(argv[1], "--config") == 0) return print_config(argv[2]);
    if (argc > 2 && strcmp(argv[1], "--rss") == 0) return print_child_rss(argv + 2);
    const char *model = argc > 1 ? argv[1] : "llama-3-70b";
    const char *shape_text = argc > 2 ? argv[2] : "1x4096";
    int repeats = argc > 3 ? atoi(argv[3]) : 200;
    if (repeats < 1) repeats = 1;
    int64_t shape[MTK_MAX_DIMS];
    int32_t ndim = 0;
    for (const char *p = shape_text; *p && ndim < MTK_MAX_DIMS;) {
        char *end;
        shape[ndim++] = strtoll(p, &end, 10);
        if (end == p) {
            fprintf(stderr, "bench_zoo: bad shape '%s' (use e.g. 1x4096)\n", shape_text);
            return 2;
        }
        p = *end == 'x' ? end + 1 : end;
    }

    run_result first, best, r;
    if (!run_once(model, shape, ndim, &first)) return 1;
    best = first;
    double *totals = malloc(sizeof(double) * (size_t)repeats);
    if (!totals) return 1;
    for (int i = 0; i < repeats; i++) {
        if (!run_once(model, shape, ndim, &r)) return 1;
        totals[i] = r.build_ms + r.trace_ms;
        if (totals[i] < best.build_ms + best.trace_ms) best = r;
    }
    qsort(totals, (size_t)repeats, sizeof(double), compare_double);
    printf("{\"model\":\"%s\",\"input\":[", model);
    for (int32_t d = 0; d < ndim; d++) printf("%s%lld", d ? "," : "", (long long)shape[d]);
    printf("],\"repeats\":%d,\"params\":%lld,\"flops\":%lld,\"ops\":%d,\"first_ms\":%.4f,\"build_ms\":%.4f,"
           "\"trace_ms\":%.4f,\"total_ms\":%.4f,\"median_total_ms\":%.4f,\"arena_bytes\":%zu,\"max_rss_kb\":%ld}\n",
           repeats, (long long)best.params, (long long)best.flops, (int)best.ops, first.build_ms + first.trace_ms,
           best.build_ms, best.trace_ms, best.build_ms + best.trace_ms, totals[repeats / 2], best.arena_bytes,
           peak_rss_kb());
    free(totals);
    return 0;
}
