/* bench_moe: the cpu forward of a mixture-of-experts model with real
 * routing, timed (bench/bench_moe.py runs it beside transformers).
 *
 *   bench_moe CONFIG WEIGHTS THREADS RUNS [DTYPE [OUT]]
 *
 * Builds CONFIG on the cpu in DTYPE (default float32), reads WEIGHTS (a
 * safetensors file with the state dict and `input_ids`), then runs the
 * forward RUNS times, each in the same context after the load; OUT: the
 * last run's output is written there as `output` (safetensors).  Prints
 * one JSON object:
 *   {"load_ms": L, "ms": [t1, ...], "best_ms": B, "checksum": S}
 * where S is the sum of |output| of the last run (in double), or
 *   {"error": "..."}  (exit status 1). */
#include "mtk/mtk.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define MAX_RUNS 64

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int fail(mtk_ctx *ctx, const char *what)
{
    printf("{\"error\": \"%s: %s\"}\n", what, ctx ? mtk_ctx_message(ctx) : "out of memory");
    mtk_ctx_free(ctx);
    return 1;
}

int main(int argc, char **argv)
{
    if (argc < 5 || argc > 7) {
        fprintf(stderr, "usage: bench_moe CONFIG WEIGHTS THREADS RUNS [DTYPE [OUT]]\n");
        return 2;
    }
    int threads = atoi(argv[3]), runs = atoi(argv[4]);
    mtk_dtype dtype = argc > 5 ? mtk_dtype_from_name(argv[5]) : MTK_FLOAT32;
    if (threads < 1 || runs < 1 || runs > MAX_RUNS || dtype == MTK_DTYPE_UNDEFINED) {
        fprintf(stderr, "bench_moe: THREADS must be >= 1, RUNS in 1..%d and DTYPE a dtype name\n", MAX_RUNS);
        return 2;
    }
    mtk_ctx *ctx = mtk_ctx_new();
    if (!ctx) return fail(NULL, "context");
    mtk_ctx_set_num_threads(ctx, threads);
    double t0 = now_ms();
    /* real parameters: mtk_model_resolve builds on meta unless a device is scoped */
    mtk_model_resolve_options opt = { .dtype = dtype, .meta = false };
    mtk_module *m = mtk_ctx_push_device(ctx, MTK_DEVICE_CPU) ? mtk_model_resolve(ctx, argv[1], &opt, NULL) : NULL;
    mtk_st_file *file = m ? mtk_st_open(ctx, argv[2]) : NULL;
    mtk_state_dict *sd = file ? mtk_module_state_dict(m) : NULL;
    bool ok = sd != NULL;
    for (int32_t i = 0; ok && i < mtk_state_dict_count(sd); i++) {
        const char *name;
        mtk_tensor *t = mtk_state_dict_at(sd, i, &name);
        ok = mtk_st_read_into(ctx, file, name, t);
    }
    mtk_tensor *ids = ok ? mtk_st_load(ctx, file, "input_ids", MTK_INT64) : NULL;
    mtk_st_close(file);
    if (!ids) return fail(ctx, "load");
    double load_ms = now_ms() - t0;
    mtk_module_train(m, false);
    double ms[MAX_RUNS], best = INFINITY, checksum = 0.0;
    for (int r = 0; r < runs; r++) {
        mtk_module_io io = { .in = { ids }, .nin = 1 };
        double start = now_ms();
        if (!mtk_module_call(m, &io)) return fail(ctx, "forward");
        ms[r] = now_ms() - start;
        if (ms[r] < best) best = ms[r];
        if (r == runs - 1) {
            mtk_tensor *out = mtk_contiguous(ctx, mtk_to_dtype(ctx, io.out[0], MTK_FLOAT64));
            const double *data = out ? mtk_tensor_data(out) : NULL;
            if (!data) return fail(ctx, "checksum");
            for (int64_t i = 0; i < mtk_tensor_numel(out); i++) checksum += fabs(data[i]);
            mtk_st_writer *w = argc > 6 ? mtk_st_writer_new(ctx) : NULL;
            bool written = argc <= 6 || (w && mtk_st_writer_add(w, "output", mtk_contiguous(ctx, io.out[0])) &&
                                         mtk_st_writer_write(w, argv[6]));
            mtk_st_writer_free(w);
            if (!written) return fail(ctx, "output");
        }
    }
    printf("{\"load_ms\": %.3f, \"ms\": [", load_ms);
    for (int r = 0; r < runs; r++) printf("%s%.3f", r ? ", " : "", ms[r]);
    printf("], \"best_ms\": %.3f, \"checksum\": %.17g}\n", best, checksum);
    mtk_ctx_free(ctx);
    return 0;
}
