/*
 * bench_cpu_kernels: times mtk's cpu kernels on real float32 data, through
 * the public API only.  Cases (issue 3):
 *
 *   matmul        (1024, 1024) @ (1024, 1024)
 *   conv2d_r50_b1 (1, 3, 224, 224) * (64, 3, 7, 7), stride 2, padding 3
 *   conv2d_r50_b8 (8, 3, 224, 224) * (64, 3, 7, 7), stride 2, padding 3
 *   conv2d_3x3    (8, 64, 56, 56) * (64, 64, 3, 3), padding 1
 *   softmax       (8, 2048, 4096), dim -1
 *   layer_norm    (8, 2048, 4096) over the last dim, weight and bias (4096)
 *   add           (64M) + (64M)
 *
 * Inputs are filled with fill_value(i, seed) below, a formula that
 * bench/bench_cpu_kernels.py reproduces in torch, so the output checksums
 * (sums of absolute values, in double) can be compared.  Each case warms
 * up (one call, more while they total under WARMUP_MS, at most
 * WARMUP_MAX_CALLS) and then makes RUNS timed calls; each call happens in a fresh context wrapping the
 * persistent input buffers (mtk_tensor_from_data), so the output storage
 * of a run is released before the next.  The time covers the op call only
 * (output allocation included, as in torch).  Prints one JSON document:
 *
 *   {"threads":T, "runs":R,
 *    "cpu":{"model":..., "isa_present":[...], "isa_best":..., "isa_active":...,
 *           "isa_request":... or null, "kernels":{CASE: "what ran", ...}},
 *    "cases":[{"name":..., "best_ms":..., "median_ms":..., "times_ms":[...], "checksum":...}, ...]}
 *
 * "cpu" says which machine a figure comes from: its model (/proc/cpuinfo),
 * the vector instruction sets it has, the variant the kernels run
 * (core/cpu_isa.h: the best one, or MTK_CPU_ISA's) and, per case, the
 * kernel that variant dispatches to.
 *
 * Usage: bench_cpu_kernels [THREADS [RUNS [CASE...]]]   (default 2, 5, all)
 * THREADS goes to mtk_ctx_set_num_threads of each run's context; OpenBLAS
 * (matmul) reads OPENBLAS_NUM_THREADS from the environment.
 */
#include "mtk/mtk.h"
#include "core/cpu_isa.h"
#include "ops/conv.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_RUNS 50
#define MAX_INPUTS 3
#define WARMUP_MS 500.0
#define WARMUP_MAX_CALLS 20

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Deterministic value in [-0.5, 0.5) for element i of input `seed`. */
static float fill_value(uint64_t i, uint64_t seed)
{
    uint64_t h = ((i + seed * 7919u) * 2654435761u) & 0xffffffffu;
    return (float)((double)h / 4294967296.0 - 0.5);
}

/* One input: a shape and its malloc'd data. */
typedef struct bench_input {
    int64_t shape[4];
    int32_t ndim;
    float *data;
} bench_input;

typedef struct bench_case {
    const char *name;
    bench_input in[MAX_INPUTS];
    int32_t n_in;
} bench_case;

static bool input_init(bench_input *in, const int64_t *shape, int32_t ndim, uint64_t seed)
{
    memcpy(in->shape, shape, (size_t)ndim * sizeof *shape);
    in->ndim = ndim;
    int64_t n = mtk_shape_numel(shape, ndim);
    in->data = malloc((size_t)n * sizeof(float));
    if (!in->data) return false;
    for (int64_t i = 0; i < n; i++) in->data[i] = fill_value((uint64_t)i, seed);
    return true;
}

/* Runs case `c` once in `ctx`; returns the result (NULL on error). */
static mtk_tensor *run_op(mtk_ctx *ctx, const bench_case *c, mtk_tensor **t)
{
    const char *name = c->name;
    if (!strcmp(name, "matmul")) return mtk_matmul(ctx, t[0], t[1]);
    if (!strncmp(name, "conv2d_r50", 10)) {
        mtk_conv_args a = mtk_conv_args_default();
        a.stride[0] = a.stride[1] = 2;
        a.padding[0] = a.padding[1] = 3;
        return mtk_conv2d(ctx, t[0], t[1], NULL, &a);
    }
    if (!strcmp(name, "conv2d_3x3")) {
        mtk_conv_args a = mtk_conv_args_default();
        a.padding[0] = a.padding[1] = 1;
        return mtk_conv2d(ctx, t[0], t[1], NULL, &a);
    }
    if (!strcmp(name, "softmax")) return mtk_softmax(ctx, t[0], -1, MTK_DTYPE_UNDEFINED);
    if (!strcmp(name, "layer_norm")) {
        int64_t normalized[1] = { 4096 };
        return mtk_layer_norm(ctx, t[0], normalized, 1, t[1], t[2], 1e-5);
    }
    if (!strcmp(name, "add")) return mtk_add(ctx, t[0], t[1]);
    return NULL;
}

/* One call in a fresh context: its time in ms (< 0 on error), and the
 * sum of the output's absolute values (in double) into *checksum when
 * non-NULL. */
static int bench_threads = 2;

static double time_once(const bench_case *c, double *checksum)
{
    mtk_ctx *ctx = mtk_ctx_new();
    if (!ctx) return -1;
    mtk_ctx_set_num_threads(ctx, bench_threads);
    mtk_tensor *t[MAX_INPUTS] = { NULL };
    for (int32_t i = 0; i < c->n_in; i++)
        t[i] = mtk_tensor_from_data(ctx, MTK_FLOAT32, c->in[i].shape, c->in[i].ndim, NULL, c->in[i].data);
    double t0 = now_ms();
    mtk_tensor *y = run_op(ctx, c, t);
    double ms = now_ms() - t0;
    if (!y) {
        fprintf(stderr, "bench_cpu_kernels: %s: %s\n", c->name, mtk_ctx_message(ctx));
        mtk_ctx_free(ctx);
        return -1;
    }
    if (checksum) {
        const float *d = mtk_tensor_data(y);
        int64_t n = mtk_tensor_numel(y);
        double s = 0;
        for (int64_t i = 0; i < n; i++) s += d[i] < 0 ? -(double)d[i] : (double)d[i];
        *checksum = s;
    }
    mtk_ctx_free(ctx);
    return ms;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static bool case_wanted(const char *name, int argc, char **argv)
{
    if (argc <= 3) return true;
    for (int i = 3; i < argc; i++)
        if (!strcmp(argv[i], name)) return true;
    return false;
}

/* The "model name" of /proc/cpuinfo into buf ("unknown" without one). */
static void cpu_model(char *buf, size_t cap)
{
    snprintf(buf, cap, "unknown");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        char *colon = strchr(line, ':');
        if (strncmp(line, "model name", 10) || !colon) continue;
        colon += 1 + (colon[1] == ' ');
        colon[strcspn(colon, "\n")] = 0;
        snprintf(buf, cap, "%s", colon);
        break;
    }
    fclose(f);
}

/* Prints a JSON string: s with quotes and backslashes escaped. */
static void print_json_string(const char *s)
{
    putchar('"');
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') putchar('\\');
        if ((unsigned char)*s >= 0x20) putchar(*s);
    }
    putchar('"');
}

/* The "cpu" member of the output: machine and dispatched kernels. */
static void print_cpu(void)
{
    static const char *features[] = { "sse4.2", "avx", "avx2", "fma", "avx512f", "avx512bw", "avx512vl" };
    char model[256];
    cpu_model(model, sizeof model);
    printf("\"cpu\":{\"model\":");
    print_json_string(model);
    printf(",\"isa_present\":[");
    bool first = true;
    for (size_t i = 0; i < sizeof features / sizeof *features; i++)
        if (cpu_isa_has(features[i])) {
            printf("%s\"%s\"", first ? "" : ",", features[i]);
            first = false;
        }
    const char *isa = cpu_isa_name(cpu_isa_active()), *request = cpu_isa_request();
    printf("],\"isa_best\":\"%s\",\"isa_active\":\"%s\",\"isa_request\":", cpu_isa_name(cpu_isa_best()), isa);
    if (request) print_json_string(request);
    else printf("null");
    const char *tile = mtk_conv_direct_kernel_name();
    char conv[96];
    if (strcmp(tile, "none")) snprintf(conv, sizeof conv, "direct tile %s", tile);
    else snprintf(conv, sizeof conv, "im2col + OpenBLAS sgemm");
    printf(",\"kernels\":{\"matmul\":\"OpenBLAS sgemm (its own dispatch)\","
           "\"conv2d\":\"%s\",\"softmax\":\"nn_fast %s\",\"layer_norm\":\"nn_fast %s\","
           "\"add\":\"elementwise binary_f32 %s\"}},",
           conv, isa, isa, isa);
}

/* Builds case `name` (inputs filled); false if out of memory. */
static bool case_init(bench_case *c, const char *name)
{
    memset(c, 0, sizeof *c);
    c->name = name;
    bool ok = true;
    if (!strcmp(name, "matmul")) {
        int64_t s[2] = { 1024, 1024 };
        c->n_in = 2;
        ok = input_init(&c->in[0], s, 2, 1) && input_init(&c->in[1], s, 2, 2);
    } else if (!strncmp(name, "conv2d_r50", 10)) {
        int64_t x[4] = { !strcmp(name, "conv2d_r50_b8") ? 8 : 1, 3, 224, 224 }, w[4] = { 64, 3, 7, 7 };
        c->n_in = 2;
        ok = input_init(&c->in[0], x, 4, 1) && input_init(&c->in[1], w, 4, 2);
    } else if (!strcmp(name, "conv2d_3x3")) {
        int64_t x[4] = { 8, 64, 56, 56 }, w[4] = { 64, 64, 3, 3 };
        c->n_in = 2;
        ok = input_init(&c->in[0], x, 4, 1) && input_init(&c->in[1], w, 4, 2);
    } else if (!strcmp(name, "softmax")) {
        int64_t x[3] = { 8, 2048, 4096 };
        c->n_in = 1;
        ok = input_init(&c->in[0], x, 3, 1);
    } else if (!strcmp(name, "layer_norm")) {
        int64_t x[3] = { 8, 2048, 4096 }, v[1] = { 4096 };
        c->n_in = 3;
        ok = input_init(&c->in[0], x, 3, 1) && input_init(&c->in[1], v, 1, 2) && input_init(&c->in[2], v, 1, 3);
    } else if (!strcmp(name, "add")) {
        int64_t n[1] = { 64LL * 1024 * 1024 };
        c->n_in = 2;
        ok = input_init(&c->in[0], n, 1, 1) && input_init(&c->in[1], n, 1, 2);
    }
    return ok;
}

static void case_free(bench_case *c)
{
    for (int32_t i = 0; i < c->n_in; i++) free(c->in[i].data);
}

int main(int argc, char **argv)
{
    int threads = argc > 1 ? atoi(argv[1]) : 2;
    int runs = argc > 2 ? atoi(argv[2]) : 5;
    if (threads < 1 || runs < 1 || runs > MAX_RUNS) {
        fprintf(stderr, "usage: bench_cpu_kernels [THREADS [RUNS(1..%d) [CASE...]]]\n", MAX_RUNS);
        return 2;
    }
    bench_threads = threads;

    static const char *names[] = { "matmul", "conv2d_r50_b1", "conv2d_r50_b8", "conv2d_3x3",
                                   "softmax", "layer_norm", "add" };
    printf("{\"threads\":%d,\"runs\":%d,", threads, runs);
    print_cpu();
    printf("\"cases\":[");
    bool first = true;
    int status = 0;
    for (size_t k = 0; k < sizeof names / sizeof *names; k++) {
        if (!case_wanted(names[k], argc, argv)) continue;
        bench_case c;
        if (!case_init(&c, names[k])) {
            fprintf(stderr, "bench_cpu_kernels: %s: out of memory\n", names[k]);
            case_free(&c);
            status = 1;
            continue;
        }
        double checksum = 0, times[MAX_RUNS];
        /* warm-up: at least one call, more while they add up to under
         * WARMUP_MS (caches, thread pools, first-touch of the allocator) */
        double warm = 0, ms = 0;
        bool ok = true;
        for (int w = 0; ok && (w == 0 || (warm < WARMUP_MS && w < WARMUP_MAX_CALLS)); w++) {
            ok = (ms = time_once(&c, w == 0 ? &checksum : NULL)) >= 0;
            warm += ms;
        }
        for (int r = 0; ok && r < runs; r++) ok = (times[r] = time_once(&c, NULL)) >= 0;
        case_free(&c);
        if (!ok) {
            status = 1;
            continue;
        }
        qsort(times, (size_t)runs, sizeof *times, cmp_double);
        printf("%s{\"name\":\"%s\",\"best_ms\":%.4f,\"median_ms\":%.4f,\"checksum\":%.9g,\"times_ms\":[",
               first ? "" : ",", names[k], times[0], times[runs / 2], checksum);
        for (int r = 0; r < runs; r++) printf("%s%.4f", r ? "," : "", times[r]);
        printf("]}");
        fflush(stdout);
        first = false;
    }
    printf("]}\n");
    return status;
}
