/* Op rows of the conv family (see registry.h for the row format):
 * convolutions, pooling and interpolation, with torch.nn.functional's
 * names, argument names and defaults. */
MTK_OP(CONV1D, "conv1d",
       "conv1d(Tensor input, Tensor weight, Tensor? bias=None, int[1] stride=1, Any padding=0, int[1] dilation=1, int groups=1) -> Tensor",
       mtk_conv_meta, mtk_conv_cpu, mtk_conv_cost, 0, &mtk_conv1d_info)
MTK_OP(CONV2D, "conv2d",
       "conv2d(Tensor input, Tensor weight, Tensor? bias=None, int[1] stride=1, Any padding=0, int[1] dilation=1, int groups=1) -> Tensor",
       mtk_conv_meta, mtk_conv_cpu, mtk_conv_cost, 0, &mtk_conv2d_info)
MTK_OP(CONV3D, "conv3d",
       "conv3d(Tensor input, Tensor weight, Tensor? bias=None, int[1] stride=1, Any padding=0, int[1] dilation=1, int groups=1) -> Tensor",
       mtk_conv_meta, mtk_conv_cpu, mtk_conv_cost, 0, &mtk_conv3d_info)
MTK_OP(CONV_TRANSPOSE1D, "conv_transpose1d",
       "conv_transpose1d(Tensor input, Tensor weight, Tensor? bias=None, int[1] stride=1, int[1] padding=0, int[1] output_padding=0, int groups=1, int[1] dilation=1) -> Tensor",
       mtk_conv_meta, mtk_conv_cpu, mtk_conv_cost, 0, &mtk_conv_transpose1d_info)
MTK_OP(CONV_TRANSPOSE2D, "conv_transpose2d",
       "conv_transpose2d(Tensor input, Tensor weight, Tensor? bias=None, int[1] stride=1, int[1] padding=0, int[1] output_padding=0, int groups=1, int[1] dilation=1) -> Tensor",
       mtk_conv_meta, mtk_conv_cpu, mtk_conv_cost, 0, &mtk_conv_transpose2d_info)
MTK_OP(CONV_TRANSPOSE3D, "conv_transpose3d",
       "conv_transpose3d(Tensor input, Tensor weight, Tensor? bias=None, int[1] stride=1, int[1] padding=0, int[1] output_padding=0, int groups=1, int[1] dilation=1) -> Tensor",
       mtk_conv_meta, mtk_conv_cpu, mtk_conv_cost, 0, &mtk_conv_transpose3d_info)
MTK_OP(MAX_POOL1D, "max_pool1d",
       "max_pool1d(Tensor input, int[1] kernel_size, int[1]? stride=None, int[1] padding=0, int[1] dilation=1, bool ceil_mode=False, Any return_indices=False) -> Tensor",
       mtk_pool_meta, mtk_pool_cpu, mtk_pool_cost, 0, &mtk_max_pool1d_info)
MTK_OP(MAX_POOL2D, "max_pool2d",
       "max_pool2d(Tensor input, int[1] kernel_size, int[1]? stride=None, int[1] padding=0, int[1] dilation=1, bool ceil_mode=False, Any return_indices=False) -> Tensor",
       mtk_pool_meta, mtk_pool_cpu, mtk_pool_cost, 0, &mtk_max_pool2d_info)
MTK_OP(MAX_POOL3D, "max_pool3d",
       "max_pool3d(Tensor input, int[1] kernel_size, int[1]? stride=None, int[1] padding=0, int[1] dilation=1, bool ceil_mode=False, Any return_indices=False) -> Tensor",
       mtk_pool_meta, mtk_pool_cpu, mtk_pool_cost, 0, &mtk_max_pool3d_info)
MTK_OP(AVG_POOL1D, "avg_pool1d",
       "avg_pool1d(Tensor input, int[1] kernel_size, int[1]? stride=None, int[1] padding=0, bool ceil_mode=False, bool count_include_pad=True) -> Tensor",
       mtk_pool_meta, mtk_pool_cpu, mtk_pool_cost, 0, &mtk_avg_pool1d_info)
MTK_OP(AVG_POOL2D, "avg_pool2d",
       "avg_pool2d(Tensor input, int[1] kernel_size, int[1]? stride=None, int[1] padding=0, bool ceil_mode=False, bool count_include_pad=True, int? divisor_override=None) -> Tensor",
       mtk_pool_meta, mtk_pool_cpu, mtk_pool_cost, 0, &mtk_avg_pool2d_info)
MTK_OP(AVG_POOL3D, "avg_pool3d",
       "avg_pool3d(Tensor input, int[1] kernel_size, int[1]? stride=None, int[1] padding=0, bool ceil_mode=False, bool count_include_pad=True, int? divisor_override=None) -> Tensor",
       mtk_pool_meta, mtk_pool_cpu, mtk_pool_cost, 0, &mtk_avg_pool3d_info)
MTK_OP(ADAPTIVE_AVG_POOL1D, "adaptive_avg_pool1d",
       "adaptive_avg_pool1d(Tensor input, int[1] output_size) -> Tensor",
       mtk_pool_meta, mtk_pool_cpu, mtk_pool_cost, 0, &mtk_adaptive_avg_pool1d_info)
MTK_OP(ADAPTIVE_AVG_POOL2D, "adaptive_avg_pool2d",
       "adaptive_avg_pool2d(Tensor input, Any output_size) -> Tensor",
       mtk_pool_meta, mtk_pool_cpu, mtk_pool_cost, 0, &mtk_adaptive_avg_pool2d_info)
MTK_OP(ADAPTIVE_AVG_POOL3D, "adaptive_avg_pool3d",
       "adaptive_avg_pool3d(Tensor input, Any output_size) -> Tensor",
       mtk_pool_meta, mtk_pool_cpu, mtk_pool_cost, 0, &mtk_adaptive_avg_pool3d_info)
MTK_OP(ADAPTIVE_MAX_POOL1D, "adaptive_max_pool1d",
       "adaptive_max_pool1d(Tensor input, int[1] output_size, Any return_indices=False) -> Tensor",
       mtk_pool_meta, mtk_pool_cpu, mtk_pool_cost, 0, &mtk_adaptive_max_pool1d_info)
MTK_OP(ADAPTIVE_MAX_POOL2D, "adaptive_max_pool2d",
       "adaptive_max_pool2d(Tensor input, Any output_size, Any return_indices=False) -> Tensor",
       mtk_pool_meta, mtk_pool_cpu, mtk_pool_cost, 0, &mtk_adaptive_max_pool2d_info)
MTK_OP(ADAPTIVE_MAX_POOL3D, "adaptive_max_pool3d",
       "adaptive_max_pool3d(Tensor input, Any output_size, Any return_indices=False) -> Tensor",
       mtk_pool_meta, mtk_pool_cpu, mtk_pool_cost, 0, &mtk_adaptive_max_pool3d_info)
MTK_OP(INTERPOLATE, "interpolate",
       "interpolate(Tensor input, Any? size=None, Any? scale_factor=None, str mode='nearest', bool? align_corners=None, bool? recompute_scale_factor=None, bool antialias=False) -> Tensor",
       mtk_interp_meta, mtk_interp_cpu, mtk_interp_cost, 0, NULL)
