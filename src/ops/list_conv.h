/* Op rows of the conv family (see registry.h for the row format):
 * convolutions, pooling and interpolation, with torch.nn.functional's
 * names, argument names and defaults. */
MTK_OP(CONV1D, .name = "conv1d",
       .signature = "conv1d(Tensor input, Tensor weight, Tensor? bias=None, int[1] stride=1, Any padding=0, int[1] dilation=1, int groups=1) -> Tensor",
       .meta = mtk_conv_meta, .cpu = mtk_conv_cpu, .cost = mtk_conv_cost,
       .info = &mtk_conv1d_info,
       .saved = ag_saved_conv)
MTK_OP(CONV2D, .name = "conv2d",
       .signature = "conv2d(Tensor input, Tensor weight, Tensor? bias=None, int[1] stride=1, Any padding=0, int[1] dilation=1, int groups=1) -> Tensor",
       .meta = mtk_conv_meta, .cpu = mtk_conv_cpu, .cost = mtk_conv_cost,
       .info = &mtk_conv2d_info,
       .saved = ag_saved_conv)
MTK_OP(CONV3D, .name = "conv3d",
       .signature = "conv3d(Tensor input, Tensor weight, Tensor? bias=None, int[1] stride=1, Any padding=0, int[1] dilation=1, int groups=1) -> Tensor",
       .meta = mtk_conv_meta, .cpu = mtk_conv_cpu, .cost = mtk_conv_cost,
       .info = &mtk_conv3d_info,
       .saved = ag_saved_conv)
MTK_OP(CONV_TRANSPOSE1D, .name = "conv_transpose1d",
       .signature = "conv_transpose1d(Tensor input, Tensor weight, Tensor? bias=None, int[1] stride=1, int[1] padding=0, int[1] output_padding=0, int groups=1, int[1] dilation=1) -> Tensor",
       .meta = mtk_conv_meta, .cpu = mtk_conv_cpu, .cost = mtk_conv_cost,
       .info = &mtk_conv_transpose1d_info,
       .saved = ag_saved_conv)
MTK_OP(CONV_TRANSPOSE2D, .name = "conv_transpose2d",
       .signature = "conv_transpose2d(Tensor input, Tensor weight, Tensor? bias=None, int[1] stride=1, int[1] padding=0, int[1] output_padding=0, int groups=1, int[1] dilation=1) -> Tensor",
       .meta = mtk_conv_meta, .cpu = mtk_conv_cpu, .cost = mtk_conv_cost,
       .info = &mtk_conv_transpose2d_info,
       .saved = ag_saved_conv)
MTK_OP(CONV_TRANSPOSE3D, .name = "conv_transpose3d",
       .signature = "conv_transpose3d(Tensor input, Tensor weight, Tensor? bias=None, int[1] stride=1, int[1] padding=0, int[1] output_padding=0, int groups=1, int[1] dilation=1) -> Tensor",
       .meta = mtk_conv_meta, .cpu = mtk_conv_cpu, .cost = mtk_conv_cost,
       .info = &mtk_conv_transpose3d_info,
       .saved = ag_saved_conv)
MTK_OP(MAX_POOL1D, .name = "max_pool1d",
       .signature = "max_pool1d(Tensor input, int[1] kernel_size, int[1]? stride=None, int[1] padding=0, int[1] dilation=1, bool ceil_mode=False, Any return_indices=False) -> Tensor",
       .meta = mtk_pool_meta, .cpu = mtk_pool_cpu, .cost = mtk_pool_cost,
       .info = &mtk_max_pool1d_info,
       .saved = ag_saved_max_pool)
MTK_OP(MAX_POOL2D, .name = "max_pool2d",
       .signature = "max_pool2d(Tensor input, int[1] kernel_size, int[1]? stride=None, int[1] padding=0, int[1] dilation=1, bool ceil_mode=False, Any return_indices=False) -> Tensor",
       .meta = mtk_pool_meta, .cpu = mtk_pool_cpu, .cost = mtk_pool_cost,
       .info = &mtk_max_pool2d_info,
       .saved = ag_saved_max_pool)
MTK_OP(MAX_POOL3D, .name = "max_pool3d",
       .signature = "max_pool3d(Tensor input, int[1] kernel_size, int[1]? stride=None, int[1] padding=0, int[1] dilation=1, bool ceil_mode=False, Any return_indices=False) -> Tensor",
       .meta = mtk_pool_meta, .cpu = mtk_pool_cpu, .cost = mtk_pool_cost,
       .info = &mtk_max_pool3d_info,
       .saved = ag_saved_max_pool)
MTK_OP(AVG_POOL1D, .name = "avg_pool1d",
       .signature = "avg_pool1d(Tensor input, int[1] kernel_size, int[1]? stride=None, int[1] padding=0, bool ceil_mode=False, bool count_include_pad=True) -> Tensor",
       .meta = mtk_pool_meta, .cpu = mtk_pool_cpu, .cost = mtk_pool_cost,
       .info = &mtk_avg_pool1d_info,
       .saved = ag_saved_input)
MTK_OP(AVG_POOL2D, .name = "avg_pool2d",
       .signature = "avg_pool2d(Tensor input, int[1] kernel_size, int[1]? stride=None, int[1] padding=0, bool ceil_mode=False, bool count_include_pad=True, int? divisor_override=None) -> Tensor",
       .meta = mtk_pool_meta, .cpu = mtk_pool_cpu, .cost = mtk_pool_cost,
       .info = &mtk_avg_pool2d_info,
       .saved = ag_saved_input)
MTK_OP(AVG_POOL3D, .name = "avg_pool3d",
       .signature = "avg_pool3d(Tensor input, int[1] kernel_size, int[1]? stride=None, int[1] padding=0, bool ceil_mode=False, bool count_include_pad=True, int? divisor_override=None) -> Tensor",
       .meta = mtk_pool_meta, .cpu = mtk_pool_cpu, .cost = mtk_pool_cost,
       .info = &mtk_avg_pool3d_info,
       .saved = ag_saved_input)
MTK_OP(ADAPTIVE_AVG_POOL1D, .name = "adaptive_avg_pool1d",
       .signature = "adaptive_avg_pool1d(Tensor input, int[1] output_size) -> Tensor",
       .meta = mtk_pool_meta, .cpu = mtk_pool_cpu, .cost = mtk_pool_cost,
       .info = &mtk_adaptive_avg_pool1d_info,
       .saved = ag_saved_input)
MTK_OP(ADAPTIVE_AVG_POOL2D, .name = "adaptive_avg_pool2d",
       .signature = "adaptive_avg_pool2d(Tensor input, Any output_size) -> Tensor",
       .meta = mtk_pool_meta, .cpu = mtk_pool_cpu, .cost = mtk_pool_cost,
       .info = &mtk_adaptive_avg_pool2d_info,
       .saved = ag_saved_input)
MTK_OP(ADAPTIVE_AVG_POOL3D, .name = "adaptive_avg_pool3d",
       .signature = "adaptive_avg_pool3d(Tensor input, Any output_size) -> Tensor",
       .meta = mtk_pool_meta, .cpu = mtk_pool_cpu, .cost = mtk_pool_cost,
       .info = &mtk_adaptive_avg_pool3d_info,
       .saved = ag_saved_input)
MTK_OP(ADAPTIVE_MAX_POOL1D, .name = "adaptive_max_pool1d",
       .signature = "adaptive_max_pool1d(Tensor input, int[1] output_size, Any return_indices=False) -> Tensor",
       .meta = mtk_pool_meta, .cpu = mtk_pool_cpu, .cost = mtk_pool_cost,
       .info = &mtk_adaptive_max_pool1d_info,
       .saved = ag_saved_max_pool)
MTK_OP(ADAPTIVE_MAX_POOL2D, .name = "adaptive_max_pool2d",
       .signature = "adaptive_max_pool2d(Tensor input, Any output_size, Any return_indices=False) -> Tensor",
       .meta = mtk_pool_meta, .cpu = mtk_pool_cpu, .cost = mtk_pool_cost,
       .info = &mtk_adaptive_max_pool2d_info,
       .saved = ag_saved_max_pool)
MTK_OP(ADAPTIVE_MAX_POOL3D, .name = "adaptive_max_pool3d",
       .signature = "adaptive_max_pool3d(Tensor input, Any output_size, Any return_indices=False) -> Tensor",
       .meta = mtk_pool_meta, .cpu = mtk_pool_cpu, .cost = mtk_pool_cost,
       .info = &mtk_adaptive_max_pool3d_info,
       .saved = ag_saved_max_pool)
MTK_OP(INTERPOLATE, .name = "interpolate",
       .signature = "interpolate(Tensor input, Any? size=None, Any? scale_factor=None, str mode='nearest', bool? align_corners=None, bool? recompute_scale_factor=None, bool antialias=False) -> Tensor",
       .meta = mtk_interp_meta, .cpu = mtk_interp_cpu, .cost = mtk_interp_cost)
