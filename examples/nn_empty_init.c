/* Empty init, then loading weights: build a model in the `empty` init mode
 * (real memory, nothing initialized: Lightning's empty init as a plain
 * mode), fill it from a state dict built in C, and run it on cpu.  Also
 * shows the strict load error that lists every bad key at once.
 *
 * Prints the output values; exits 1 if any step fails. */
#include <mtk/mtk.h>

#include <stdio.h>

static int fail(mtk_ctx *ctx)
{
    fprintf(stderr, "nn_empty_init: %s\n", mtk_ctx_message(ctx));
    mtk_ctx_free(ctx);
    return 1;
}

int main(void)
{
    mtk_ctx *ctx = mtk_ctx_new();
    if (!ctx) return 1;
    mtk_ctx_push_init_mode(ctx, MTK_INIT_EMPTY);
    mtk_module *net = mtk_model_simplenet(ctx, NULL); /* Linear(10, 20) -> ReLU -> Linear(20, 1) */
    mtk_ctx_pop_init_mode(ctx);
    if (!net) return fail(ctx);
    printf("built in the empty mode: 0.weight on %s, memory allocated, not initialized\n",
           mtk_module_tensor(net, "0.weight")->device == MTK_DEVICE_CPU ? "cpu" : "meta");

    /* a "checkpoint": w1 = 0.1, b1 = 0, w2 = 1, b2 = 0.5 */
    static float w1[200], b1[20], w2[20], b2[1] = { 0.5f };
    for (int i = 0; i < 200; i++) w1[i] = 0.1f;
    for (int i = 0; i < 20; i++) w2[i] = 1.0f;
    int64_t w1_shape[2] = { 20, 10 }, b1_shape[1] = { 20 }, w2_shape[2] = { 1, 20 }, b2_shape[1] = { 1 };
    mtk_state_dict *sd = mtk_state_dict_new(ctx);
    mtk_state_dict_set(sd, "0.weight", mtk_tensor_from_data(ctx, MTK_FLOAT32, w1_shape, 2, NULL, w1));
    mtk_state_dict_set(sd, "0.bias", mtk_tensor_from_data(ctx, MTK_FLOAT32, b1_shape, 1, NULL, b1));
    mtk_state_dict_set(sd, "2.weight", mtk_tensor_from_data(ctx, MTK_FLOAT32, w2_shape, 2, NULL, w2));

    /* strict loading reports every bad key in one error */
    mtk_state_dict_set(sd, "2.wieght", mtk_state_dict_get(sd, "2.weight"));
    if (mtk_module_load_state_dict(net, sd, NULL, NULL)) return fail(ctx);
    printf("strict load of a state dict with a typo:\n%s\n", mtk_ctx_message(ctx));
    mtk_ctx_clear_error(ctx);

    /* the right one: values are copied into the module's memory */
    mtk_state_dict *good = mtk_state_dict_new(ctx);
    const char *names[4] = { "0.weight", "0.bias", "2.weight", "2.bias" };
    mtk_state_dict_set(sd, "2.bias", mtk_tensor_from_data(ctx, MTK_FLOAT32, b2_shape, 1, NULL, b2));
    for (int i = 0; i < 4; i++) mtk_state_dict_set(good, names[i], mtk_state_dict_get(sd, names[i]));
    if (!mtk_module_load_state_dict(net, good, NULL, NULL)) return fail(ctx);

    /* x = [1, 2, ..., 10]: hidden = relu(0.1 * 55) = 5.5 each, y = 20 * 5.5 + 0.5 = 110.5 */
    float x[10];
    for (int i = 0; i < 10; i++) x[i] = (float)(i + 1);
    int64_t x_shape[2] = { 1, 10 };
    mtk_tensor *y = mtk_module_forward(net, mtk_tensor_from_data(ctx, MTK_FLOAT32, x_shape, 2, NULL, x));
    if (!y) return fail(ctx);
    printf("loaded and ran on cpu: y = %s (expected 110.5)\n", mtk_tensor_repr(ctx, y));
    float got = ((float *)mtk_tensor_data(y))[0];
    mtk_ctx_free(ctx);
    return got > 110.49f && got < 110.51f ? 0 : 1;
}
