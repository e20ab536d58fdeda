/*
 * bench_meta_ops: nanoseconds per op on the meta device, through the public
 * API only (mtk/mtk.h and its typed ops, mtk/ops/<family>.h).  Prints one JSON document:
 *
 *   {"unit":"ns/op","results":[{"name":"add","what":"[64,128] + [64,128]",
 *     "ops":..., "ns_per_op":...}, ...]}
 *
 * Usage: bench_meta_ops [SCALE]   (SCALE multiplies the op counts; default 1)
 *
 * Every batch of ops runs in a fresh context that is freed afterwards, so
 * memory stays bounded however long the run; the time of creating and
 * freeing contexts and inputs is excluded from ns_per_op and reported
 * separately as "ctx_ns_per_batch".  bench/run.py runs this next to the
 * same calls on torch's meta device.
 */
#include "mtk/mtk.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define BATCH 10000 /* ops per context for the single-op benchmarks */
#define CHAIN 1000  /* ops in one chain                             */

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* A contiguous meta tensor of the given shape. */
static mtk_tensor *meta_tensor(mtk_ctx *ctx, mtk_dtype dtype, const int64_t *shape, int32_t ndim)
{
    return mtk_tensor_new(ctx, dtype, shape, ndim, NULL, MTK_DEVICE_META);
}

/* Dies (this is a benchmark, not the library) when an op failed. */
static void check(mtk_ctx *ctx, const void *result, const char *what)
{
    if (result && mtk_ctx_status(ctx) == MTK_OK) return;
    fprintf(stderr, "bench_meta_ops: %s failed: %s\n", what, mtk_ctx_message(ctx));
    exit(1);
}

/* ------------------------------------------------------------ the ops */

/* Through the typed API (mtk/ops/<family>.h), as a C program would call them. */

static const int64_t X_SHAPE[2] = { 64, 128 };
static const int64_t W_SHAPE[2] = { 128, 256 };
static const int64_t XT_SHAPE[2] = { 128, 64 };

typedef struct inputs {
    mtk_tensor *x; /* (64, 128)  */
    mtk_tensor *y; /* (64, 128)  */
    mtk_tensor *w; /* (128, 256) */
} inputs;

static inputs make_inputs(mtk_ctx *ctx)
{
    inputs in;
    in.x = meta_tensor(ctx, MTK_FLOAT32, X_SHAPE, 2);
    in.y = meta_tensor(ctx, MTK_FLOAT32, X_SHAPE, 2);
    in.w = meta_tensor(ctx, MTK_FLOAT32, W_SHAPE, 2);
    check(ctx, in.x && in.y ? in.w : NULL, "making inputs");
    return in;
}

static mtk_tensor *op_add(mtk_ctx *ctx, const inputs *in)
{
    return mtk_add(ctx, in->x, in->y); /* (64, 128) */
}

static mtk_tensor *op_matmul(mtk_ctx *ctx, const inputs *in)
{
    return mtk_matmul(ctx, in->x, in->w); /* (64, 256) */
}

static mtk_tensor *op_reshape(mtk_ctx *ctx, const inputs *in)
{
    return mtk_reshape(ctx, in->x, XT_SHAPE, 2); /* (128, 64), a view */
}

/* 1,000 dependent ops, five kinds in turn, each on the previous result:
 * add, mul, transpose, reshape (a copy on real devices), sigmoid.  A failed
 * op returns NULL and the rest pass it through. */
static mtk_tensor *run_chain(mtk_ctx *ctx, const inputs *in)
{
    mtk_tensor *h = in->x; /* (64, 128) */
    for (int i = 0; i < CHAIN / 5; i++) {
        h = mtk_add(ctx, h, in->y);          /* (64, 128) */
        h = mtk_mul(ctx, h, in->y);          /* (64, 128) */
        h = mtk_transpose(ctx, h, 0, 1);     /* (128, 64), strides (1, 128) */
        h = mtk_reshape(ctx, h, X_SHAPE, 2); /* (64, 128), contiguous */
        h = mtk_sigmoid(ctx, h);             /* (64, 128) */
    }
    return h;
}

/* ------------------------------------------------------------ timing */

typedef struct result {
    const char *name;
    const char *what;
    int64_t ops;
    double ns_per_op;
    double ctx_ns_per_batch;
} result;

typedef mtk_tensor *(*single_op)(mtk_ctx *ctx, const inputs *in);

/* Runs `batches` batches of BATCH calls of `op`, each in a fresh context. */
static result time_single(const char *name, const char *what, single_op op, int64_t batches)
{
    double op_ns = 0, ctx_ns = 0;
    for (int64_t b = 0; b < batches; b++) {
        double t0 = now_ns();
        mtk_ctx *ctx = mtk_ctx_new();
        check(ctx, ctx, "mtk_ctx_new");
        inputs in = make_inputs(ctx);
        double t1 = now_ns();
        mtk_tensor *last = NULL;
        for (int i = 0; i < BATCH; i++) last = op(ctx, &in);
        double t2 = now_ns();
        check(ctx, last, name);
        mtk_ctx_free(ctx);
        double t3 = now_ns();
        op_ns += t2 - t1;
        ctx_ns += (t1 - t0) + (t3 - t2);
    }
    result r = { name, what, batches * BATCH, op_ns / (double)(batches * BATCH),
                 ctx_ns / (double)batches };
    return r;
}

/* Runs `chains` chains of CHAIN ops, each chain in a fresh context. */
static result time_chain(int64_t chains)
{
    double op_ns = 0, ctx_ns = 0;
    for (int64_t c = 0; c < chains; c++) {
        double t0 = now_ns();
        mtk_ctx *ctx = mtk_ctx_new();
        check(ctx, ctx, "mtk_ctx_new");
        inputs in = make_inputs(ctx);
        double t1 = now_ns();
        mtk_tensor *h = run_chain(ctx, &in);
        double t2 = now_ns();
        check(ctx, h, "chain");
        mtk_ctx_free(ctx);
        double t3 = now_ns();
        op_ns += t2 - t1;
        ctx_ns += (t1 - t0) + (t3 - t2);
    }
    result r = { "chain", "1000 ops: (add, mul, transpose, reshape, sigmoid) x 200 on [64,128]",
                 chains * CHAIN, op_ns / (double)(chains * CHAIN), ctx_ns / (double)chains };
    return r;
}

static void print_result(const result *r, bool last)
{
    printf("    {\"name\": \"%s\", \"what\": \"%s\", \"ops\": %" PRId64
           ", \"ns_per_op\": %.1f, \"ctx_ns_per_batch\": %.0f}%s\n",
           r->name, r->what, r->ops, r->ns_per_op, r->ctx_ns_per_batch, last ? "" : ",");
}

int main(int argc, char **argv)
{
    double scale = argc > 1 ? atof(argv[1]) : 1.0;
    if (!(scale > 0)) {
        fprintf(stderr, "usage: bench_meta_ops [SCALE]  (SCALE > 0 multiplies the op counts)\n");
        return 2;
    }
    int64_t batches = (int64_t)(100 * scale) > 0 ? (int64_t)(100 * scale) : 1;

    /* warm up: page in the code and the signature tables */
    time_single("add", "", op_add, 2);
    time_chain(2);

    result results[] = {
        time_single("add", "[64,128] + [64,128] f32", op_add, batches),
        time_single("matmul", "[64,128] @ [128,256] f32", op_matmul, batches),
        time_single("reshape", "[64,128] -> [128,64] f32 (a view)", op_reshape, batches),
        time_chain(batches * (BATCH / CHAIN)),
    };
    size_t n = sizeof results / sizeof results[0];
    printf("{\n  \"unit\": \"ns/op\",\n  \"device\": \"meta\",\n  \"results\": [\n");
    for (size_t i = 0; i < n; i++) print_result(&results[i], i + 1 == n);
    printf("  ]\n}\n");
    return 0;
}
