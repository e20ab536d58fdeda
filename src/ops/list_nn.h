/* Op rows of the nn family (see registry.h for the row format).
 * Signatures are torch.nn.functional's (argument names, order, defaults);
 * `rope` is mtk's own (docs/ops.md). */

/* ---- softmax (F.softmax; torch.softmax's dtype may come third) */
MTK_OP(SOFTMAX, "softmax",
       "softmax(Tensor input, int? dim=None, Any _stacklevel=3, ScalarType? dtype=None) -> Tensor",
       mtk_nn_softmax_meta, mtk_nn_softmax_cpu, mtk_outputs_cost, 0, &mtk_nn_softmax_info)
MTK_OP(LOG_SOFTMAX, "log_softmax",
       "log_softmax(Tensor input, int? dim=None, Any _stacklevel=3, ScalarType? dtype=None) -> Tensor",
       mtk_nn_softmax_meta, mtk_nn_softmax_cpu, mtk_outputs_cost, 0, &mtk_nn_log_softmax_info)

/* ---- dropout */
MTK_OP(DROPOUT, "dropout", "dropout(Tensor input, float p=0.5, bool training=True, bool inplace=False) -> Tensor",
       mtk_nn_dropout_meta, mtk_nn_dropout_cpu, mtk_outputs_cost, MTK_OP_VIEW, &mtk_nn_dropout_info)
MTK_OP(DROPOUT1D, "dropout1d", "dropout1d(Tensor input, float p=0.5, bool training=True, bool inplace=False) -> Tensor",
       mtk_nn_dropout_meta, mtk_nn_dropout_cpu, mtk_outputs_cost, MTK_OP_VIEW, &mtk_nn_dropout1d_info)
MTK_OP(DROPOUT2D, "dropout2d", "dropout2d(Tensor input, float p=0.5, bool training=True, bool inplace=False) -> Tensor",
       mtk_nn_dropout_meta, mtk_nn_dropout_cpu, mtk_outputs_cost, MTK_OP_VIEW, &mtk_nn_dropout2d_info)
MTK_OP(DROPOUT3D, "dropout3d", "dropout3d(Tensor input, float p=0.5, bool training=True, bool inplace=False) -> Tensor",
       mtk_nn_dropout_meta, mtk_nn_dropout_cpu, mtk_outputs_cost, MTK_OP_VIEW, &mtk_nn_dropout3d_info)
MTK_OP(ALPHA_DROPOUT, "alpha_dropout",
       "alpha_dropout(Tensor input, float p=0.5, bool training=False, bool inplace=False) -> Tensor",
       mtk_nn_dropout_meta, mtk_nn_dropout_cpu, mtk_outputs_cost, MTK_OP_VIEW, &mtk_nn_alpha_dropout_info)
MTK_OP(FEATURE_ALPHA_DROPOUT, "feature_alpha_dropout",
       "feature_alpha_dropout(Tensor input, float p=0.5, bool training=False, bool inplace=False) -> Tensor",
       mtk_nn_dropout_meta, mtk_nn_dropout_cpu, mtk_outputs_cost, MTK_OP_VIEW,
       &mtk_nn_feature_alpha_dropout_info)

/* ---- normalization */
MTK_OP(LAYER_NORM, "layer_norm",
       "layer_norm(Tensor input, int[] normalized_shape, Tensor? weight=None, Tensor? bias=None, float eps=1e-05) -> Tensor",
       mtk_nn_layer_norm_meta, mtk_nn_layer_norm_cpu, mtk_outputs_cost, 0, NULL)
MTK_OP(RMS_NORM, "rms_norm",
       "rms_norm(Tensor input, int[] normalized_shape, Tensor? weight=None, float? eps=None) -> Tensor",
       mtk_nn_rms_norm_meta, mtk_nn_rms_norm_cpu, mtk_outputs_cost, 0, NULL)
MTK_OP(GROUP_NORM, "group_norm",
       "group_norm(Tensor input, int num_groups, Tensor? weight=None, Tensor? bias=None, float eps=1e-05) -> Tensor",
       mtk_nn_group_norm_meta, mtk_nn_group_norm_cpu, mtk_outputs_cost, 0, NULL)
MTK_OP(BATCH_NORM, "batch_norm",
       "batch_norm(Tensor input, Tensor? running_mean, Tensor? running_var, Tensor? weight=None, Tensor? bias=None, "
       "bool training=False, float momentum=0.1, float eps=1e-05) -> Tensor",
       mtk_nn_batch_norm_meta, mtk_nn_batch_norm_cpu, mtk_outputs_cost, 0, NULL)
MTK_OP(INSTANCE_NORM, "instance_norm",
       "instance_norm(Tensor input, Tensor? running_mean=None, Tensor? running_var=None, Tensor? weight=None, "
       "Tensor? bias=None, bool use_input_stats=True, float momentum=0.1, float eps=1e-05) -> Tensor",
       mtk_nn_instance_norm_meta, mtk_nn_instance_norm_cpu, mtk_outputs_cost, 0, NULL)

/* ---- attention */
MTK_OP(SCALED_DOT_PRODUCT_ATTENTION, "scaled_dot_product_attention",
       "scaled_dot_product_attention(Tensor query, Tensor key, Tensor value, Tensor? attn_mask=None, "
       "float dropout_p=0.0, bool is_causal=False, *, float? scale=None, bool enable_gqa=False) -> Tensor",
       mtk_nn_sdpa_meta, mtk_nn_sdpa_cpu, mtk_nn_sdpa_cost, 0, NULL)

/* ---- losses */
MTK_OP(CROSS_ENTROPY, "cross_entropy",
       "cross_entropy(Tensor input, Tensor target, Tensor? weight=None, Any? size_average=None, "
       "int ignore_index=-100, Any? reduce=None, str reduction='mean', float label_smoothing=0.0) -> Tensor",
       mtk_nn_cross_entropy_meta, mtk_nn_cross_entropy_cpu, mtk_outputs_cost, 0, NULL)
MTK_OP(NLL_LOSS, "nll_loss",
       "nll_loss(Tensor input, Tensor target, Tensor? weight=None, Any? size_average=None, "
       "int ignore_index=-100, Any? reduce=None, str reduction='mean') -> Tensor",
       mtk_nn_nll_loss_meta, mtk_nn_nll_loss_cpu, mtk_outputs_cost, 0, NULL)
MTK_OP(MSE_LOSS, "mse_loss",
       "mse_loss(Tensor input, Tensor target, Any? size_average=None, Any? reduce=None, "
       "str reduction='mean', Tensor? weight=None) -> Tensor",
       mtk_nn_pointwise_loss_meta, mtk_nn_pointwise_loss_cpu, mtk_outputs_cost, 0, &mtk_nn_mse_info)
MTK_OP(L1_LOSS, "l1_loss",
       "l1_loss(Tensor input, Tensor target, Any? size_average=None, Any? reduce=None, "
       "str reduction='mean', Tensor? weight=None) -> Tensor",
       mtk_nn_pointwise_loss_meta, mtk_nn_pointwise_loss_cpu, mtk_outputs_cost, 0, &mtk_nn_l1_info)
MTK_OP(SMOOTH_L1_LOSS, "smooth_l1_loss",
       "smooth_l1_loss(Tensor input, Tensor target, Any? size_average=None, Any? reduce=None, "
       "str reduction='mean', float beta=1.0) -> Tensor",
       mtk_nn_pointwise_loss_meta, mtk_nn_pointwise_loss_cpu, mtk_outputs_cost, 0, &mtk_nn_smooth_l1_info)
MTK_OP(HUBER_LOSS, "huber_loss",
       "huber_loss(Tensor input, Tensor target, str reduction='mean', float delta=1.0, Tensor? weight=None) -> Tensor",
       mtk_nn_pointwise_loss_meta, mtk_nn_pointwise_loss_cpu, mtk_outputs_cost, 0, &mtk_nn_huber_info)
MTK_OP(BINARY_CROSS_ENTROPY, "binary_cross_entropy",
       "binary_cross_entropy(Tensor input, Tensor target, Tensor? weight=None, Any? size_average=None, "
       "Any? reduce=None, str reduction='mean') -> Tensor",
       mtk_nn_pointwise_loss_meta, mtk_nn_pointwise_loss_cpu, mtk_outputs_cost, 0, &mtk_nn_bce_info)
MTK_OP(BINARY_CROSS_ENTROPY_WITH_LOGITS, "binary_cross_entropy_with_logits",
       "binary_cross_entropy_with_logits(Tensor input, Tensor target, Tensor? weight=None, Any? size_average=None, "
       "Any? reduce=None, str reduction='mean', Tensor? pos_weight=None) -> Tensor",
       mtk_nn_pointwise_loss_meta, mtk_nn_pointwise_loss_cpu, mtk_outputs_cost, 0, &mtk_nn_bce_logits_info)

/* ---- rotary position embedding (mtk's op; docs/ops.md) */
MTK_OP(ROPE, "rope", "rope(Tensor x, Tensor cos, Tensor sin, bool interleaved=False) -> Tensor",
       mtk_nn_rope_meta, mtk_nn_rope_cpu, mtk_outputs_cost, 0, NULL)
