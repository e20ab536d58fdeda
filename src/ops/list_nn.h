/* Op rows of the nn family (see registry.h for the row format).
 * Signatures are torch.nn.functional's (argument names, order, defaults);
 * `rope` and `rope_complex` are mtk's own (docs/ops.md). */

/* ---- softmax (F.softmax; torch.softmax's dtype may come third) */
MTK_OP(SOFTMAX, .name = "softmax",
       .signature = "softmax(Tensor input, int? dim=None, Any _stacklevel=3, ScalarType? dtype=None) -> Tensor",
       .meta = mtk_nn_softmax_meta, .cpu = mtk_nn_softmax_cpu, .cost = mtk_outputs_cost,
       .info = &mtk_nn_softmax_info, .saved = ag_saved_result,
       .backward = ag_backward_softmax)
MTK_OP(LOG_SOFTMAX, .name = "log_softmax",
       .signature = "log_softmax(Tensor input, int? dim=None, Any _stacklevel=3, ScalarType? dtype=None) -> Tensor",
       .meta = mtk_nn_softmax_meta, .cpu = mtk_nn_softmax_cpu, .cost = mtk_outputs_cost,
       .info = &mtk_nn_log_softmax_info, .saved = ag_saved_result,
       .backward = ag_backward_softmax)

/* ---- dropout */
MTK_OP(DROPOUT, .name = "dropout",
       .signature = "dropout(Tensor input, float p=0.5, bool training=True, bool inplace=False) -> Tensor",
       .meta = mtk_nn_dropout_meta, .cpu = mtk_nn_dropout_cpu, .cost = mtk_outputs_cost,
       .flags = MTK_OP_VIEW, .info = &mtk_nn_dropout_info, .saved = ag_saved_dropout)
MTK_OP(DROPOUT1D, .name = "dropout1d",
       .signature = "dropout1d(Tensor input, float p=0.5, bool training=True, bool inplace=False) -> Tensor",
       .meta = mtk_nn_dropout_meta, .cpu = mtk_nn_dropout_cpu, .cost = mtk_outputs_cost,
       .flags = MTK_OP_VIEW, .info = &mtk_nn_dropout1d_info, .saved = ag_saved_dropout)
MTK_OP(DROPOUT2D, .name = "dropout2d",
       .signature = "dropout2d(Tensor input, float p=0.5, bool training=True, bool inplace=False) -> Tensor",
       .meta = mtk_nn_dropout_meta, .cpu = mtk_nn_dropout_cpu, .cost = mtk_outputs_cost,
       .flags = MTK_OP_VIEW, .info = &mtk_nn_dropout2d_info, .saved = ag_saved_dropout)
MTK_OP(DROPOUT3D, .name = "dropout3d",
       .signature = "dropout3d(Tensor input, float p=0.5, bool training=True, bool inplace=False) -> Tensor",
       .meta = mtk_nn_dropout_meta, .cpu = mtk_nn_dropout_cpu, .cost = mtk_outputs_cost,
       .flags = MTK_OP_VIEW, .info = &mtk_nn_dropout3d_info, .saved = ag_saved_dropout)
MTK_OP(ALPHA_DROPOUT, .name = "alpha_dropout",
       .signature = "alpha_dropout(Tensor input, float p=0.5, bool training=False, bool inplace=False) -> Tensor",
       .meta = mtk_nn_dropout_meta, .cpu = mtk_nn_dropout_cpu, .cost = mtk_outputs_cost,
       .flags = MTK_OP_VIEW, .info = &mtk_nn_alpha_dropout_info)
MTK_OP(FEATURE_ALPHA_DROPOUT, .name = "feature_alpha_dropout",
       .signature = "feature_alpha_dropout(Tensor input, float p=0.5, bool training=False, bool inplace=False) -> Tensor",
       .meta = mtk_nn_dropout_meta, .cpu = mtk_nn_dropout_cpu, .cost = mtk_outputs_cost,
       .flags = MTK_OP_VIEW, .info = &mtk_nn_feature_alpha_dropout_info)

/* ---- normalization */
MTK_OP(LAYER_NORM, .name = "layer_norm",
       .signature = "layer_norm(Tensor input, int[] normalized_shape, Tensor? weight=None, Tensor? bias=None, float eps=1e-05) -> Tensor",
       .meta = mtk_nn_layer_norm_meta, .cpu = mtk_nn_layer_norm_cpu, .cost = mtk_outputs_cost, .saved = ag_saved_layer_norm,
       .backward = ag_backward_layer_norm)
MTK_OP(RMS_NORM, .name = "rms_norm",
       .signature = "rms_norm(Tensor input, int[] normalized_shape, Tensor? weight=None, float? eps=None) -> Tensor",
       .meta = mtk_nn_rms_norm_meta, .cpu = mtk_nn_rms_norm_cpu, .cost = mtk_outputs_cost, .saved = ag_saved_rms_norm,
       .backward = ag_backward_rms_norm)
MTK_OP(GROUP_NORM, .name = "group_norm",
       .signature = "group_norm(Tensor input, int num_groups, Tensor? weight=None, Tensor? bias=None, float eps=1e-05) -> Tensor",
       .meta = mtk_nn_group_norm_meta, .cpu = mtk_nn_group_norm_cpu, .cost = mtk_outputs_cost)
MTK_OP(BATCH_NORM, .name = "batch_norm",
       .signature = "batch_norm(Tensor input, Tensor? running_mean, Tensor? running_var, Tensor? weight=None, Tensor? bias=None, " "bool training=False, float momentum=0.1, float eps=1e-05) -> Tensor",
       .meta = mtk_nn_batch_norm_meta, .cpu = mtk_nn_batch_norm_cpu, .cost = mtk_outputs_cost)
MTK_OP(INSTANCE_NORM, .name = "instance_norm",
       .signature = "instance_norm(Tensor input, Tensor? running_mean=None, Tensor? running_var=None, Tensor? weight=None, " "Tensor? bias=None, bool use_input_stats=True, float momentum=0.1, float eps=1e-05) -> Tensor",
       .meta = mtk_nn_instance_norm_meta, .cpu = mtk_nn_instance_norm_cpu, .cost = mtk_outputs_cost)

/* ---- attention */
MTK_OP(SCALED_DOT_PRODUCT_ATTENTION, .name = "scaled_dot_product_attention",
       .signature = "scaled_dot_product_attention(Tensor query, Tensor key, Tensor value, Tensor? attn_mask=None, " "float dropout_p=0.0, bool is_causal=False, *, float? scale=None, bool enable_gqa=False) -> Tensor",
       .meta = mtk_nn_sdpa_meta, .cpu = mtk_nn_sdpa_cpu, .cost = mtk_nn_sdpa_cost, .saved = ag_saved_sdpa,
       .backward = ag_backward_sdpa)

/* ---- losses */
MTK_OP(CROSS_ENTROPY, .name = "cross_entropy",
       .signature = "cross_entropy(Tensor input, Tensor target, Tensor? weight=None, Any? size_average=None, " "int ignore_index=-100, Any? reduce=None, str reduction='mean', float label_smoothing=0.0) -> Tensor",
       .meta = mtk_nn_cross_entropy_meta, .cpu = mtk_nn_cross_entropy_cpu, .cost = mtk_outputs_cost, .saved = ag_saved_cross_entropy,
       .backward = ag_backward_cross_entropy)
MTK_OP(NLL_LOSS, .name = "nll_loss",
       .signature = "nll_loss(Tensor input, Tensor target, Tensor? weight=None, Any? size_average=None, " "int ignore_index=-100, Any? reduce=None, str reduction='mean') -> Tensor",
       .meta = mtk_nn_nll_loss_meta, .cpu = mtk_nn_nll_loss_cpu, .cost = mtk_outputs_cost, .saved = ag_saved_nll_loss)
MTK_OP(MSE_LOSS, .name = "mse_loss",
       .signature = "mse_loss(Tensor input, Tensor target, Any? size_average=None, Any? reduce=None, " "str reduction='mean', Tensor? weight=None) -> Tensor",
       .meta = mtk_nn_pointwise_loss_meta, .cpu = mtk_nn_pointwise_loss_cpu, .cost = mtk_outputs_cost,
       .info = &mtk_nn_mse_info)
MTK_OP(L1_LOSS, .name = "l1_loss",
       .signature = "l1_loss(Tensor input, Tensor target, Any? size_average=None, Any? reduce=None, " "str reduction='mean', Tensor? weight=None) -> Tensor",
       .meta = mtk_nn_pointwise_loss_meta, .cpu = mtk_nn_pointwise_loss_cpu, .cost = mtk_outputs_cost,
       .info = &mtk_nn_l1_info)
MTK_OP(SMOOTH_L1_LOSS, .name = "smooth_l1_loss",
       .signature = "smooth_l1_loss(Tensor input, Tensor target, Any? size_average=None, Any? reduce=None, " "str reduction='mean', float beta=1.0) -> Tensor",
       .meta = mtk_nn_pointwise_loss_meta, .cpu = mtk_nn_pointwise_loss_cpu, .cost = mtk_outputs_cost,
       .info = &mtk_nn_smooth_l1_info)
MTK_OP(HUBER_LOSS, .name = "huber_loss",
       .signature = "huber_loss(Tensor input, Tensor target, str reduction='mean', float delta=1.0, Tensor? weight=None) -> Tensor",
       .meta = mtk_nn_pointwise_loss_meta, .cpu = mtk_nn_pointwise_loss_cpu, .cost = mtk_outputs_cost,
       .info = &mtk_nn_huber_info)
MTK_OP(BINARY_CROSS_ENTROPY, .name = "binary_cross_entropy",
       .signature = "binary_cross_entropy(Tensor input, Tensor target, Tensor? weight=None, Any? size_average=None, " "Any? reduce=None, str reduction='mean') -> Tensor",
       .meta = mtk_nn_pointwise_loss_meta, .cpu = mtk_nn_pointwise_loss_cpu, .cost = mtk_outputs_cost,
       .info = &mtk_nn_bce_info)
MTK_OP(BINARY_CROSS_ENTROPY_WITH_LOGITS, .name = "binary_cross_entropy_with_logits",
       .signature = "binary_cross_entropy_with_logits(Tensor input, Tensor target, Tensor? weight=None, Any? size_average=None, " "Any? reduce=None, str reduction='mean', Tensor? pos_weight=None) -> Tensor",
       .meta = mtk_nn_pointwise_loss_meta, .cpu = mtk_nn_pointwise_loss_cpu, .cost = mtk_outputs_cost,
       .info = &mtk_nn_bce_logits_info)

/* ---- rotary position embedding (mtk's op; docs/ops.md) */
MTK_OP(ROPE, .name = "rope",
       .signature = "rope(Tensor x, Tensor cos, Tensor sin, bool interleaved=False) -> Tensor",
       .meta = mtk_nn_rope_meta, .cpu = mtk_nn_rope_cpu, .cost = mtk_outputs_cost, .saved = ag_saved_rope,
       .backward = ag_backward_rope)
MTK_OP(ROPE_COMPLEX, .name = "rope_complex",
       .signature = "rope_complex(Tensor x, Tensor freqs_cis) -> Tensor",
       .meta = mtk_nn_rope_complex_meta, .cpu = mtk_nn_rope_complex_cpu, .cost = mtk_outputs_cost,
       .saved = ag_saved_rope_complex, .backward = ag_backward_grads)
