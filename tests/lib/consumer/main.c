/* A program outside the tree, built against an installed mtk (by
 * tests/lib/test_lib_install.py, with pkg-config and with find_package):
 * a meta matmul and a model built without its data, one line each. */
#include <mtk/mtk.h>

#include <stdio.h>

int main(int argc, char **argv)
{
    const char *model = argc > 1 ? argv[1] : "gpt2";
    mtk_ctx *ctx = mtk_ctx_new();
    if (!ctx) return 1;

    int64_t a_shape[] = { 2, 3 }, b_shape[] = { 3, 4 };
    mtk_tensor *c = NULL;
    if (mtk_ctx_push_device(ctx, MTK_DEVICE_META)) {
        c = mtk_matmul(ctx, mtk_empty(ctx, a_shape, 2, MTK_FLOAT32), mtk_empty(ctx, b_shape, 2, MTK_FLOAT32));
        mtk_ctx_pop_device(ctx);
    }
    mtk_module *m = c ? mtk_model_resolve(ctx, model, NULL, NULL) : NULL; /* on meta: no data */
    mtk_named_tensor *params = NULL;
    int32_t n = m ? mtk_module_named_parameters(m, &params) : -1;
    if (n < 1) {
        fprintf(stderr, "consumer: %s\n", mtk_ctx_message(ctx));
        mtk_ctx_free(ctx);
        return 1;
    }
    char shape[64], device[16];
    printf("matmul %s on %s\n", mtk_shape_str(c->shape, c->ndim, shape, sizeof shape),
           mtk_device_str(c->device, device, sizeof device));
    printf("%s: %lld parameters, %s %s on %s\n", model, (long long)mtk_module_num_parameters(m, false),
           params[0].name, mtk_shape_str(params[0].tensor->shape, params[0].tensor->ndim, shape, sizeof shape),
           mtk_device_str(params[0].tensor->device, device, sizeof device));
    mtk_ctx_free(ctx);
    return 0;
}
