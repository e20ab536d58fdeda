/* A model on the meta device: build a 300-million-parameter transformer
 * stack without allocating its weights, run a forward on a meta input to
 * learn the output shape and FLOPs, see moving it to cpu refused with the
 * fix, then give one layer real memory with materialize.
 *
 * Prints what it learns; exits 1 if any step fails. */
#include <mtk/mtk.h>

#include <stdio.h>

static int fail(mtk_ctx *ctx)
{
    fprintf(stderr, "nn_meta_model: %s\n", mtk_ctx_message(ctx));
    mtk_ctx_free(ctx);
    return 1;
}

int main(void)
{
    mtk_ctx *ctx = mtk_ctx_new();
    if (!ctx) return 1;
    mtk_ctx_push_device(ctx, MTK_DEVICE_META); /* with torch.device('meta'): */

    /* 24 x TransformerEncoderLayer(d_model=1024, nhead=16, dim_feedforward=4096) */
    mtk_transformer_options options = mtk_transformer_defaults();
    options.dim_feedforward = 4096;
    options.batch_first = true;
    mtk_module *model = mtk_nn_sequential(ctx, 0, NULL);
    for (int i = 0; i < 24; i++)
        mtk_nn_sequential_append(model, mtk_nn_transformer_encoder_layer(ctx, 1024, 16, &options));
    int64_t params = mtk_module_num_parameters(model, false);
    if (params < 0) return fail(ctx);
    printf("built %lld parameters (%.1f GB in float32) with %zu KB of metadata\n", (long long)params,
           (double)params * 4 / 1e9, mtk_ctx_arena_bytes(ctx) / 1024);

    /* a traced forward on a meta batch: shapes and FLOPs, no data */
    int64_t batch[3] = { 8, 512, 1024 }; /* (B, T, d_model) */
    mtk_tensor *x = mtk_tensor_new(ctx, MTK_FLOAT32, batch, 3, NULL, MTK_DEVICE_META);
    mtk_trace *trace = mtk_trace_begin(model);
    mtk_tensor *y = mtk_module_forward(model, x);
    mtk_trace_end(trace);
    if (!y) return fail(ctx);
    printf("forward: %s, %d ops, %.2f TFLOPs\n", mtk_tensor_repr(ctx, y), (int)mtk_trace_op_count(trace),
           (double)mtk_trace_flops(trace) / 1e12);
    mtk_trace_free(trace);

    /* model.to('cpu') cannot invent the weights: PyTorch's words and the fix */
    if (mtk_module_to_device(model, MTK_DEVICE_CPU)) return fail(ctx);
    printf("to(cpu): %s\n", mtk_ctx_message(ctx));
    mtk_ctx_clear_error(ctx);

    /* materialize one layer: to_empty + reset_parameters from a seed */
    mtk_module *layer = mtk_module_child(model, "0");
    if (!mtk_module_materialize(layer, MTK_DEVICE_CPU, 1234)) return fail(ctx);
    mtk_tensor *w = mtk_module_tensor(layer, "linear1.weight");
    printf("layer 0 materialized: linear1.weight on %s, first value %.6f, norm1.weight[0] = %.1f\n",
           w->device == MTK_DEVICE_CPU ? "cpu" : "meta", ((float *)mtk_tensor_data(w))[0],
           ((float *)mtk_tensor_data(mtk_module_tensor(layer, "norm1.weight")))[0]);
    mtk_ctx_free(ctx);
    return 0;
}
