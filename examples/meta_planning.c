/* Meta tensors as a planning tool (the story of PyTorch's meta-tensor
 * guide): create tensors with a shape and no data, run ops on them, push
 * a meta input through a small network to learn its output shape, then
 * turn a meta tensor into a real one with to_empty.
 *
 * Prints what it learns; exits 1 if any step fails. */
#include <mtk/mtk.h>

#include <stdio.h>

static int fail(mtk_ctx *ctx)
{
    fprintf(stderr, "meta_planning: %s\n", mtk_ctx_message(ctx));
    mtk_ctx_free(ctx);
    return 1;
}

int main(void)
{
    mtk_ctx *ctx = mtk_ctx_new();
    if (!ctx) return 1;
    mtk_ctx_push_device(ctx, MTK_DEVICE_META); /* with torch.device('meta'): */

    /* 3x4 @ 4x5 -> 3x5, no data anywhere */
    int64_t a_shape[] = { 3, 4 }, b_shape[] = { 4, 5 };
    mtk_tensor *c = mtk_matmul(ctx, mtk_empty(ctx, a_shape, 2, MTK_FLOAT32),
                               mtk_empty(ctx, b_shape, 2, MTK_FLOAT32));
    if (!c) return fail(ctx);
    printf("matmul: %s\n", mtk_tensor_repr(ctx, c));

    /* Linear(10, 20) -> ReLU -> Linear(20, 1) on a batch of 32 */
    int64_t x_shape[] = { 32, 10 }, w1_shape[] = { 20, 10 }, b1_shape[] = { 20 };
    int64_t w2_shape[] = { 1, 20 }, b2_shape[] = { 1 };
    mtk_tensor *x = mtk_empty(ctx, x_shape, 2, MTK_FLOAT32);
    mtk_tensor *h = mtk_relu(ctx, mtk_linear(ctx, x, mtk_empty(ctx, w1_shape, 2, MTK_FLOAT32),
                                             mtk_empty(ctx, b1_shape, 1, MTK_FLOAT32)));
    mtk_tensor *y = mtk_linear(ctx, h, mtk_empty(ctx, w2_shape, 2, MTK_FLOAT32),
                               mtk_empty(ctx, b2_shape, 1, MTK_FLOAT32));
    if (!y) return fail(ctx); /* errors propagate: one check at the end */
    printf("network output: %s\n", mtk_tensor_repr(ctx, y));

    /* Copying out of meta fails with PyTorch's words and the fix ... */
    if (mtk_to_device(ctx, y, MTK_DEVICE_CPU) != NULL) return fail(ctx);
    printf("to(cpu): %s (%s)\n", mtk_ctx_message(ctx), mtk_status_name(mtk_ctx_status(ctx)));
    mtk_ctx_clear_error(ctx);

    /* ... and to_empty gives the same metadata with real (uninitialized) memory. */
    mtk_tensor *real = mtk_to_empty(ctx, y, MTK_DEVICE_CPU);
    if (!real || !mtk_tensor_data(real)) return fail(ctx);
    printf("to_empty(cpu): shape (%lld, %lld), %zu bytes of real storage\n",
           (long long)real->shape[0], (long long)real->shape[1], mtk_tensor_nbytes(real));
    mtk_ctx_free(ctx);
    return 0;
}
