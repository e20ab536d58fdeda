/* Shared pieces of the layer files (src/nn/layers_*.c). */
#ifndef MTK_NN_LAYERS_INTERNAL_H
#define MTK_NN_LAYERS_INTERNAL_H

#include "mtk/nn.h"
#include "nn/repr.h"

#include <stdio.h>

/* Types other layers build on. */
extern const mtk_module_type nn_linear_type;
extern const mtk_module_type nn_ndq_linear_type;

/* MultiheadAttention's out_proj: a Linear named NonDynamicallyQuantizableLinear. */
mtk_module *nn_ndq_linear(mtk_ctx *ctx, int64_t in_features, int64_t out_features, bool bias);

/* U(+-1/sqrt(fan_in of weight)): the bias init of Linear and Conv. */
bool nn_init_bias_from_weight(mtk_tensor *bias, const mtk_tensor *weight, mtk_rng *rng);

/* Sets io's single output; returns whether it is non-NULL. */
static inline bool nn_output(mtk_module_io *io, mtk_tensor *out)
{
    io->out[0] = out;
    io->nout = 1;
    return out != NULL;
}

/* "True" / "False". */
static inline const char *nn_py_bool(bool b) { return b ? "True" : "False"; }

#endif
