/* Typed C API of the conv ops: convolutions (torch.nn.functional.conv1d
 * ... conv_transpose3d), pooling (max/avg/adaptive, 1-D to 3-D) and
 * interpolate.  Every function takes the context first, returns NULL
 * (error on the context) on failure, and passes a NULL tensor argument
 * through as NULL without a new error.  Output shapes, dtypes, strides
 * and errors follow PyTorch (see docs/writing-ops.md). */
#ifndef MTK_OPS_CONV_PUBLIC_H
#define MTK_OPS_CONV_PUBLIC_H

#include "mtk/core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* -------------------------------------------------------- convolutions */

/* How conv1d/2d/3d pad: explicit `padding`, or torch's 'same' / 'valid'. */
typedef enum mtk_conv_padding_mode {
    MTK_CONV_PADDING_EXPLICIT = 0,
    MTK_CONV_PADDING_SAME,
    MTK_CONV_PADDING_VALID
} mtk_conv_padding_mode;

/* Arguments of a convolution, one entry per spatial dim (1, 2 or 3
 * used).  mtk_conv_args_default() gives torch's defaults: stride 1,
 * padding 0, dilation 1, output_padding 0, groups 1, explicit padding. */
typedef struct mtk_conv_args {
    int64_t stride[3];
    int64_t padding[3];
    int64_t dilation[3];
    int64_t output_padding[3]; /* transposed convolutions only */
    int64_t groups;
    mtk_conv_padding_mode padding_mode; /* not for transposed ones */
} mtk_conv_args;

MTK_API mtk_conv_args mtk_conv_args_default(void);

/* F.conv1d/2d/3d(input, weight, bias, ...): input (N, C_in, *spatial) or
 * unbatched (C_in, *spatial), weight (C_out, C_in / groups, *kernel),
 * bias (C_out) or NULL.  `args` NULL: the defaults.  The result is
 * contiguous (torch's meta). */
MTK_API mtk_tensor *mtk_conv1d(mtk_ctx *ctx, mtk_tensor *input, mtk_tensor *weight, mtk_tensor *bias,
                               const mtk_conv_args *args);
MTK_API mtk_tensor *mtk_conv2d(mtk_ctx *ctx, mtk_tensor *input, mtk_tensor *weight, mtk_tensor *bias,
                               const mtk_conv_args *args);
MTK_API mtk_tensor *mtk_conv3d(mtk_ctx *ctx, mtk_tensor *input, mtk_tensor *weight, mtk_tensor *bias,
                               const mtk_conv_args *args);

/* F.conv_transpose1d/2d/3d: weight (C_in, C_out / groups, *kernel), bias
 * (C_out) or NULL. */
MTK_API mtk_tensor *mtk_conv_transpose1d(mtk_ctx *ctx, mtk_tensor *input, mtk_tensor *weight,
                                         mtk_tensor *bias, const mtk_conv_args *args);
MTK_API mtk_tensor *mtk_conv_transpose2d(mtk_ctx *ctx, mtk_tensor *input, mtk_tensor *weight,
                                         mtk_tensor *bias, const mtk_conv_args *args);
MTK_API mtk_tensor *mtk_conv_transpose3d(mtk_ctx *ctx, mtk_tensor *input, mtk_tensor *weight,
                                         mtk_tensor *bias, const mtk_conv_args *args);

/* ------------------------------------------------------------- pooling */

/* Arguments of max/avg pooling, one entry per spatial dim.
 * mtk_pool_args_default(kernel) gives torch's defaults for a square
 * kernel: stride = kernel_size, padding 0, dilation 1, ceil_mode false,
 * count_include_pad true, no divisor override. */
typedef struct mtk_pool_args {
    int64_t kernel_size[3];
    int64_t stride[3];
    int64_t padding[3];
    int64_t dilation[3];          /* max pooling only */
    bool ceil_mode;
    bool count_include_pad;       /* avg pooling only */
    int64_t divisor_override;     /* avg pooling (2-D, 3-D); 0: none */
} mtk_pool_args;

MTK_API mtk_pool_args mtk_pool_args_default(int64_t kernel_size);

/* F.max_pool1d/2d/3d.  With `indices` non-NULL the call is
 * return_indices=True and *indices receives the int64 indices (flat
 * positions within each input plane). */
MTK_API mtk_tensor *mtk_max_pool1d(mtk_ctx *ctx, mtk_tensor *input, const mtk_pool_args *args,
                                   mtk_tensor **indices);
MTK_API mtk_tensor *mtk_max_pool2d(mtk_ctx *ctx, mtk_tensor *input, const mtk_pool_args *args,
                                   mtk_tensor **indices);
MTK_API mtk_tensor *mtk_max_pool3d(mtk_ctx *ctx, mtk_tensor *input, const mtk_pool_args *args,
                                   mtk_tensor **indices);

/* F.avg_pool1d/2d/3d. */
MTK_API mtk_tensor *mtk_avg_pool1d(mtk_ctx *ctx, mtk_tensor *input, const mtk_pool_args *args);
MTK_API mtk_tensor *mtk_avg_pool2d(mtk_ctx *ctx, mtk_tensor *input, const mtk_pool_args *args);
MTK_API mtk_tensor *mtk_avg_pool3d(mtk_ctx *ctx, mtk_tensor *input, const mtk_pool_args *args);

/* F.adaptive_avg_pool{1,2,3}d / adaptive_max_pool{1,2,3}d: output_size
 * has one entry per spatial dim; -1 stands for None (keep the input's
 * size). */
MTK_API mtk_tensor *mtk_adaptive_avg_pool1d(mtk_ctx *ctx, mtk_tensor *input, const int64_t *output_size);
MTK_API mtk_tensor *mtk_adaptive_avg_pool2d(mtk_ctx *ctx, mtk_tensor *input, const int64_t *output_size);
MTK_API mtk_tensor *mtk_adaptive_avg_pool3d(mtk_ctx *ctx, mtk_tensor *input, const int64_t *output_size);
MTK_API mtk_tensor *mtk_adaptive_max_pool1d(mtk_ctx *ctx, mtk_tensor *input, const int64_t *output_size,
                                            mtk_tensor **indices);
MTK_API mtk_tensor *mtk_adaptive_max_pool2d(mtk_ctx *ctx, mtk_tensor *input, const int64_t *output_size,
                                            mtk_tensor **indices);
MTK_API mtk_tensor *mtk_adaptive_max_pool3d(mtk_ctx *ctx, mtk_tensor *input, const int64_t *output_size,
                                            mtk_tensor **indices);

/* ------------------------------------------------------- interpolation */

/* F.interpolate's arguments: exactly one of `size` (input.ndim - 2
 * entries) and `scale_factor` (as many) non-NULL; mode "nearest",
 * "nearest-exact", "linear", "bilinear", "bicubic", "trilinear" or
 * "area"; align_corners and recompute_scale_factor -1 for None, else
 * 0/1. */
typedef struct mtk_interp_args {
    const int64_t *size;
    const double *scale_factor;
    const char *mode;
    int align_corners;
    int recompute_scale_factor;
    bool antialias;
} mtk_interp_args;

MTK_API mtk_tensor *mtk_interpolate(mtk_ctx *ctx, mtk_tensor *input, const mtk_interp_args *args);

#ifdef __cplusplus
}
#endif
#endif
