/* The demo networks of PyTorch's meta-device guides, built from nn's
 * layers.  They are models by name (simplenet, lazynet) through the zoo's
 * one resolver, mtk_model_resolve (src/models/demos.c lists them). */
#include "mtk/nn.h"


/* simplenet: the network of PyTorch's meta-tensor guide. */
mtk_module *mtk_model_simplenet(mtk_ctx *ctx, const void *config)
{
    (void)config;
    mtk_module *layers[3] = { mtk_nn_linear(ctx, 10, 20, true), mtk_nn_activation(ctx, "ReLU"),
                              mtk_nn_linear(ctx, 20, 1, true) };
    return mtk_nn_sequential(ctx, 3, layers);
}

/* lazynet: a convolution whose flattened output size LazyLinear learns
 * from the first input. */
mtk_module *mtk_model_lazynet(mtk_ctx *ctx, const void *config)
{
    (void)config;
    mtk_module *layers[4] = { mtk_nn_conv2d(ctx, 3, 8, 3), mtk_nn_activation(ctx, "ReLU"),
                              mtk_nn_flatten(ctx, 1, -1), mtk_nn_lazy_linear(ctx, 10, true) };
    return mtk_nn_sequential(ctx, 4, layers);
}
