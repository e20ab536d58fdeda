/*
 * mtk nn layers: the torch.nn layers, with PyTorch's parameter names,
 * shapes, default initialization and forward shapes.  Included by
 * mtk/nn.h.
 *
 * Every constructor takes the context first, builds per the context's
 * scopes (device, default dtype, init mode: see mtk/nn.h) and returns the
 * module, or NULL with the context's error set (bad sizes say which
 * argument and why).  Options structs: pass NULL for PyTorch's defaults,
 * or start from the matching *_defaults() function.
 */
#ifndef MTK_NN_LAYERS_H
#define MTK_NN_LAYERS_H

#include "mtk/core.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mtk_module mtk_module;

/* =============================================================== linear */

/* Linear(in_features, out_features, bias): weight (out, in), bias (out).
 * Init: weight kaiming_uniform(a=sqrt(5)) = U(+-1/sqrt(in)), bias the same
 * bound.  Forward: (*, in) -> (*, out). */
MTK_API mtk_module *mtk_nn_linear(mtk_ctx *ctx, int64_t in_features, int64_t out_features, bool bias);
/* LazyLinear(out_features, bias): in_features from the first input's last
 * dim; becomes a Linear then. */
MTK_API mtk_module *mtk_nn_lazy_linear(mtk_ctx *ctx, int64_t out_features, bool bias);
/* Bilinear(in1, in2, out, bias): weight (out, in1, in2), bias (out), both
 * U(+-1/sqrt(in1)).  Forward takes two inputs (*, in1), (*, in2) -> (*, out). */
MTK_API mtk_module *mtk_nn_bilinear(mtk_ctx *ctx, int64_t in1_features, int64_t in2_features,
                                    int64_t out_features, bool bias);
/* Identity(): returns its input. */
MTK_API mtk_module *mtk_nn_identity(mtk_ctx *ctx);

/* ============================================================ embedding */

#define MTK_NN_NO_PADDING_IDX INT64_MIN
/* Embedding(num_embeddings, embedding_dim, padding_idx): weight (num, dim)
 * N(0, 1) with the padding row zeroed.  padding_idx may be negative (from
 * the end) or MTK_NN_NO_PADDING_IDX.  Forward: integer (*) -> (*, dim). */
MTK_API mtk_module *mtk_nn_embedding(mtk_ctx *ctx, int64_t num_embeddings, int64_t embedding_dim,
                                     int64_t padding_idx);

/* ======================================================== normalization */

/* LayerNorm(normalized_shape, eps, elementwise_affine, bias): weight ones,
 * bias zeros, both of normalized_shape. */
MTK_API mtk_module *mtk_nn_layer_norm(mtk_ctx *ctx, const int64_t *normalized_shape, int32_t ndim,
                                      double eps, bool elementwise_affine, bool bias);
/* RMSNorm(normalized_shape, eps, elementwise_affine): weight ones.  A NaN
 * eps means None (torch.finfo(input.dtype).eps at forward). */
MTK_API mtk_module *mtk_nn_rms_norm(mtk_ctx *ctx, const int64_t *normalized_shape, int32_t ndim,
                                    double eps, bool elementwise_affine);
/* GroupNorm(num_groups, num_channels, eps, affine, bias=bias): weight
 * ones, bias zeros (num_channels; bias only with affine and bias);
 * num_channels must divide by num_groups. */
MTK_API mtk_module *mtk_nn_group_norm(mtk_ctx *ctx, int64_t num_groups, int64_t num_channels, double eps,
                                      bool affine, bool bias);

typedef struct mtk_batch_norm_options {
    double eps;               /* 1e-5                                 */
    double momentum;          /* 0.1; NaN means None (cumulative avg) */
    bool affine;              /* true: weight (and bias)              */
    bool bias;                /* true: bias too (torch 2.13's bias=)  */
    bool track_running_stats; /* true: running_mean, running_var,
                                 num_batches_tracked buffers          */
} mtk_batch_norm_options;
MTK_API mtk_batch_norm_options mtk_batch_norm_defaults(void);

/* BatchNorm1d/2d/3d (dims 1, 2, 3).  Inputs: 1d (N, C) or (N, C, L), 2d
 * (N, C, H, W), 3d (N, C, D, H, W). */
MTK_API mtk_module *mtk_nn_batch_norm(mtk_ctx *ctx, int32_t dims, int64_t num_features,
                                      const mtk_batch_norm_options *options);
/* LazyBatchNorm1d/2d/3d: num_features from the input's dim 1. */
MTK_API mtk_module *mtk_nn_lazy_batch_norm(mtk_ctx *ctx, int32_t dims, const mtk_batch_norm_options *options);

/* ========================================================== convolution */

typedef struct mtk_conv_options {
    int64_t stride[3];          /* 1                                     */
    int64_t padding[3];         /* 0                                     */
    int64_t dilation[3];        /* 1                                     */
    int64_t output_padding[3];  /* 0 (transposed convolutions only)      */
    int64_t groups;             /* 1                                     */
    bool bias;                  /* true                                  */
    const char *padding_mode;   /* "zeros" (also reflect, replicate,
                                   circular: repr only for now)          */
} mtk_conv_options;
MTK_API mtk_conv_options mtk_conv_defaults(void);

/* Conv1d/2d/3d(in, out, kernel_size[dims], ...): weight (out, in/groups,
 * *kernel), bias (out), both U(+-1/sqrt(fan_in)), fan_in = in/groups *
 * prod(kernel). */
MTK_API mtk_module *mtk_nn_conv(mtk_ctx *ctx, int32_t dims, int64_t in_channels, int64_t out_channels,
                                const int64_t *kernel_size, const mtk_conv_options *options);
/* ConvTranspose1d/2d/3d: weight (in, out/groups, *kernel). */
MTK_API mtk_module *mtk_nn_conv_transpose(mtk_ctx *ctx, int32_t dims, int64_t in_channels,
                                          int64_t out_channels, const int64_t *kernel_size,
                                          const mtk_conv_options *options);
/* LazyConv1d/2d/3d(out, kernel_size, ...): in_channels from the input's
 * dim 1 (dim 0 for an unbatched input). */
MTK_API mtk_module *mtk_nn_lazy_conv(mtk_ctx *ctx, int32_t dims, int64_t out_channels,
                                     const int64_t *kernel_size, const mtk_conv_options *options);
/* Shorthand: Conv2d(in, out, k) with a square kernel and defaults. */
MTK_API mtk_module *mtk_nn_conv2d(mtk_ctx *ctx, int64_t in_channels, int64_t out_channels, int64_t kernel);

/* ============================================================== pooling */

typedef struct mtk_pool_options {
    int64_t stride[3];       /* 0: the kernel size (stride=None)        */
    int64_t padding[3];      /* 0                                        */
    int64_t dilation[3];     /* 1 (max pooling only)                     */
    bool ceil_mode;          /* false                                    */
    bool count_include_pad;  /* true (average pooling only)              */
    bool tuple_repr;         /* repr: kernel_size / output_size (and a
                                stride that defaulted to it) as a tuple,
                                as torch prints MaxPool2d((2, 2)); false
                                prints one int when every dim agrees    */
} mtk_pool_options;
MTK_API mtk_pool_options mtk_pool_defaults(void);

/* MaxPool1d/2d/3d and AvgPool1d/2d/3d with kernel_size[dims]. */
MTK_API mtk_module *mtk_nn_max_pool(mtk_ctx *ctx, int32_t dims, const int64_t *kernel_size,
                                    const mtk_pool_options *options);
MTK_API mtk_module *mtk_nn_avg_pool(mtk_ctx *ctx, int32_t dims, const int64_t *kernel_size,
                                    const mtk_pool_options *options);
/* AdaptiveAvgPool1d/2d/3d and AdaptiveMaxPool1d/2d/3d(output_size[dims]);
 * of the options only tuple_repr applies (NULL: defaults). */
MTK_API mtk_module *mtk_nn_adaptive_avg_pool(mtk_ctx *ctx, int32_t dims, const int64_t *output_size,
                                             const mtk_pool_options *options);
MTK_API mtk_module *mtk_nn_adaptive_max_pool(mtk_ctx *ctx, int32_t dims, const int64_t *output_size,
                                             const mtk_pool_options *options);

/* ======================================================== shape layers */

/* Flatten(start_dim, end_dim): torch's defaults are 1, -1. */
MTK_API mtk_module *mtk_nn_flatten(mtk_ctx *ctx, int64_t start_dim, int64_t end_dim);
/* Unflatten(dim, unflattened_size). */
MTK_API mtk_module *mtk_nn_unflatten(mtk_ctx *ctx, int64_t dim, const int64_t *sizes, int32_t n);

/* ============================================================== dropout */

/* Dropout(p): identity in eval mode; in training mode F.dropout (on meta
 * only the shape). p must be in [0, 1]. */
MTK_API mtk_module *mtk_nn_dropout(mtk_ctx *ctx, double p);

/* ========================================================== activations */

/* An activation module by its torch.nn class name with PyTorch's default
 * arguments: ReLU, ReLU6, LeakyReLU, PReLU, RReLU, ELU, CELU, SELU, GELU,
 * SiLU, Mish, Sigmoid, Tanh, Softplus, Softsign, Hardswish, Hardsigmoid,
 * Hardtanh, Hardshrink, Softshrink, Tanhshrink, LogSigmoid, Threshold
 * (needs arguments: use mtk_nn_threshold), GLU, Softmax, Softmin,
 * LogSoftmax, Softmax2d.  Also accepts the lower-case activation names of
 * Hugging Face configs ("gelu", "relu", "silu", "swish", "gelu_new",
 * "gelu_pytorch_tanh", "tanh", "sigmoid", "quick_gelu" not included).
 * Unknown names: MTK_ERR_INVALID_ARGUMENT listing the known ones. */
MTK_API mtk_module *mtk_nn_activation(mtk_ctx *ctx, const char *name);
/* Activations with arguments. */
MTK_API mtk_module *mtk_nn_leaky_relu(mtk_ctx *ctx, double negative_slope);
MTK_API mtk_module *mtk_nn_elu(mtk_ctx *ctx, double alpha);
MTK_API mtk_module *mtk_nn_celu(mtk_ctx *ctx, double alpha);
MTK_API mtk_module *mtk_nn_gelu(mtk_ctx *ctx, const char *approximate); /* "none" or "tanh" */
MTK_API mtk_module *mtk_nn_softplus(mtk_ctx *ctx, double beta, double threshold);
MTK_API mtk_module *mtk_nn_hardtanh(mtk_ctx *ctx, double min_val, double max_val);
MTK_API mtk_module *mtk_nn_hardshrink(mtk_ctx *ctx, double lambd);
MTK_API mtk_module *mtk_nn_softshrink(mtk_ctx *ctx, double lambd);
MTK_API mtk_module *mtk_nn_threshold(mtk_ctx *ctx, double threshold, double value);
MTK_API mtk_module *mtk_nn_rrelu(mtk_ctx *ctx, double lower, double upper);
/* PReLU(num_parameters, init): weight (num_parameters) filled with init. */
MTK_API mtk_module *mtk_nn_prelu(mtk_ctx *ctx, int64_t num_parameters, double init);
/* GLU(dim), Softmax(dim), Softmin(dim), LogSoftmax(dim).  For softmax-
 * like ones, MTK_NN_DIM_NONE means dim=None (torch's legacy choice). */
#define MTK_NN_DIM_NONE INT64_MIN
MTK_API mtk_module *mtk_nn_glu(mtk_ctx *ctx, int64_t dim);
MTK_API mtk_module *mtk_nn_softmax(mtk_ctx *ctx, int64_t dim);
MTK_API mtk_module *mtk_nn_softmin(mtk_ctx *ctx, int64_t dim);
MTK_API mtk_module *mtk_nn_log_softmax(mtk_ctx *ctx, int64_t dim);

/* =========================================================== containers */

/* Sequential(modules...): children "0", "1", ...; forward chains them. */
MTK_API mtk_module *mtk_nn_sequential(mtk_ctx *ctx, int32_t n, mtk_module *const *modules);
/* Appends one more (child str(len)). */
MTK_API bool mtk_nn_sequential_append(mtk_module *seq, mtk_module *m);
/* ModuleList(): children "0", "1", ...; not callable. */
MTK_API mtk_module *mtk_nn_module_list(mtk_ctx *ctx);
MTK_API bool mtk_nn_module_list_append(mtk_module *list, mtk_module *m);
/* ModuleDict(): children by key; not callable. */
MTK_API mtk_module *mtk_nn_module_dict(mtk_ctx *ctx);
MTK_API bool mtk_nn_module_dict_set(mtk_module *dict, const char *key, mtk_module *m);

/* ============================================================ attention */

typedef struct mtk_mha_options {
    double dropout;           /* 0.0                                        */
    bool bias;                /* true: in_proj_bias and out_proj.bias       */
    bool add_bias_kv;         /* false: bias_k, bias_v (1, 1, embed_dim)    */
    bool add_zero_attn;       /* false                                      */
    int64_t kdim, vdim;       /* 0: embed_dim.  Different from embed_dim:
                                 q_proj_weight, k_proj_weight, v_proj_weight
                                 instead of in_proj_weight                  */
    bool batch_first;         /* false: (L, N, E)                           */
    bool need_weights;        /* true: forward also returns the attention
                                 weights (N, L, S), averaged over heads     */
    bool average_attn_weights;/* true                                       */
} mtk_mha_options;
MTK_API mtk_mha_options mtk_mha_defaults(void);

/* MultiheadAttention(embed_dim, num_heads, ...): in_proj_weight
 * (3E, E) xavier_uniform, in_proj_bias (3E) zeros, out_proj (a
 * NonDynamicallyQuantizableLinear(E, E)) with its bias zeroed.  Forward:
 * (query, key, value) -> (attn_output, attn_weights if need_weights);
 * key and value may be omitted (self-attention); masks (attn_mask,
 * key_padding_mask, is_causal) are not supported yet.  embed_dim must divide by
 * num_heads. */
MTK_API mtk_module *mtk_nn_multihead_attention(mtk_ctx *ctx, int64_t embed_dim, int64_t num_heads,
                                               const mtk_mha_options *options);

typedef struct mtk_transformer_options {
    int64_t dim_feedforward;  /* 2048                          */
    double dropout;           /* 0.1                           */
    const char *activation;   /* "relu" (or "gelu")            */
    double layer_norm_eps;    /* 1e-5                          */
    bool batch_first;         /* false                         */
    bool norm_first;          /* false                         */
    bool bias;                /* true                          */
} mtk_transformer_options;
MTK_API mtk_transformer_options mtk_transformer_defaults(void);

/* TransformerEncoderLayer(d_model, nhead, ...): self_attn, linear1,
 * dropout, linear2, norm1, norm2, dropout1, dropout2, as torch's.
 * Forward: src (S, N, E) (or (N, S, E) batch_first) -> same shape. */
MTK_API mtk_module *mtk_nn_transformer_encoder_layer(mtk_ctx *ctx, int64_t d_model, int64_t nhead,
                                                     const mtk_transformer_options *options);

#ifdef __cplusplus
}
#endif
#endif /* MTK_NN_LAYERS_H */
