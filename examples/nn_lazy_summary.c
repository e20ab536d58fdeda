/* A lazy model summarized with and without an example input: lazynet is
 * Conv2d(3, 8, 3) -> ReLU -> Flatten -> LazyLinear(10).  Without an input
 * the LazyLinear's parameters have no shape, so the summary counts 224
 * parameters and says which are missing; a meta forward on a 1x3x32x32
 * input gives them their shape (in_features 7200) without allocating
 * anything, and the count becomes exact: 72,234.
 *
 * Prints both summaries; exits 1 if any step fails. */
#include <mtk/mtk.h>

#include <stdio.h>

static int fail(mtk_ctx *ctx)
{
    fprintf(stderr, "nn_lazy_summary: %s\n", mtk_ctx_message(ctx));
    mtk_ctx_free(ctx);
    return 1;
}

int main(void)
{
    mtk_ctx *ctx = mtk_ctx_new();
    if (!ctx) return 1;
    mtk_ctx_push_device(ctx, MTK_DEVICE_META);
    mtk_module *net = mtk_model_lazynet(ctx, NULL);
    if (!net) return fail(ctx);

    mtk_summary *before = mtk_summary_new(net, NULL, 0);
    char *text = before ? mtk_summary_text(before, 1) : NULL;
    if (!text) return fail(ctx);
    printf("== without an input ==\n%s\n", text);
    if (mtk_module_num_parameters(net, false) >= 0) return fail(ctx);
    printf("num_parameters: %s\n\n", mtk_ctx_message(ctx));
    mtk_ctx_clear_error(ctx);

    int64_t shape[4] = { 1, 3, 32, 32 };
    mtk_tensor *x = mtk_tensor_new(ctx, MTK_FLOAT32, shape, 4, NULL, MTK_DEVICE_META);
    mtk_summary *after = mtk_summary_new(net, &x, 1);
    text = after ? mtk_summary_text(after, 1) : NULL;
    if (!text) return fail(ctx);
    printf("== with a 1x3x32x32 example input ==\n%s", text);
    int64_t total = mtk_module_num_parameters(net, false);
    mtk_ctx_free(ctx);
    return total == 72234 ? 0 : 1;
}
