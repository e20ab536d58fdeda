/*
 * bench_nn: a 32-layer stack of TransformerEncoderLayer(d_model=4096,
 * nhead=32, dim_feedforward=16384) built on the meta device and run
 * through one traced forward on a meta (128, 1, 4096) input, once, in C.
 * Prints one JSON document:
 *
 *   {"layers":32, "d_model":4096, "params":..., "build_ms":..., "forward_ms":...,
 *    "total_ms":..., "ops":..., "flops":..., "model_arena_bytes":...}
 *
 * model_arena_bytes is the context's metadata after building (arena blocks
 * reserved, so an upper bound).  bench/bench_nn.py runs this next to the
 * same model in torch on torch.device('meta') and prints the ratio.
 *
 * Usage: bench_nn [LAYERS]   (default 32)
 */
#include "mtk/mtk.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
    int layers = argc > 1 ? atoi(argv[1]) : 32;
    mtk_ctx *ctx = mtk_ctx_new();
    if (!ctx || layers < 1) return 1;
    mtk_ctx_push_device(ctx, MTK_DEVICE_META);

    double t0 = now_ms();
    mtk_transformer_options o = mtk_transformer_defaults();
    o.dim_feedforward = 16384;
    mtk_module *model = mtk_nn_sequential(ctx, 0, NULL);
    for (int i = 0; i < layers; i++) mtk_nn_sequential_append(model, mtk_nn_transformer_encoder_layer(ctx, 4096, 32, &o));
    double t1 = now_ms();
    size_t model_bytes = mtk_ctx_arena_bytes(ctx);

    int64_t shape[3] = { 128, 1, 4096 }; /* (S, N, E) */
    mtk_tensor *x = mtk_tensor_new(ctx, MTK_FLOAT32, shape, 3, NULL, MTK_DEVICE_META);
    mtk_trace *trace = mtk_trace_begin(model);
    mtk_tensor *y = mtk_module_forward(model, x);
    mtk_trace_end(trace);
    double t2 = now_ms();
    if (!y) {
        fprintf(stderr, "bench_nn: %s\n", mtk_ctx_message(ctx));
        return 1;
    }
    printf("{\"layers\":%d,\"d_model\":4096,\"params\":%lld,\"build_ms\":%.4f,\"forward_ms\":%.4f,"
           "\"total_ms\":%.4f,\"ops\":%d,\"flops\":%lld,\"model_arena_bytes\":%zu}\n",
           layers, (long long)mtk_module_num_parameters(model, false), t1 - t0, t2 - t1, t2 - t0,
           (int)mtk_trace_op_count(trace), (long long)mtk_trace_flops(trace), model_bytes);
    mtk_trace_free(trace);
    mtk_ctx_free(ctx);
    return 0;
}
