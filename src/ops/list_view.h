/* Op rows of the view family (see registry.h for the row format).  Views
 * (MTK_OP_VIEW) share their input's storage; reshape, flatten and
 * contiguous share it when torch would, and copy otherwise. */
MTK_OP(VIEW, "view", "view(Tensor input, int... size) -> Tensor",
       mtk_view_meta, mtk_view_cpu, NULL, MTK_OP_VIEW, NULL)
MTK_OP(RESHAPE, "reshape", "reshape(Tensor input, int... shape) -> Tensor",
       mtk_reshape_meta, mtk_copy_unless_view_cpu, NULL, MTK_OP_VIEW, NULL)
MTK_OP(VIEW_AS, "view_as", "view_as(Tensor input, Tensor other) -> Tensor",
       mtk_view_as_meta, mtk_view_cpu, NULL, MTK_OP_VIEW, NULL)
MTK_OP(RESHAPE_AS, "reshape_as", "reshape_as(Tensor input, Tensor other) -> Tensor",
       mtk_reshape_as_meta, mtk_copy_unless_view_cpu, NULL, MTK_OP_VIEW, NULL)
MTK_OP(FLATTEN, "flatten", "flatten(Tensor input, int start_dim=0, int end_dim=-1) -> Tensor",
       mtk_flatten_meta, mtk_copy_unless_view_cpu, NULL, MTK_OP_VIEW, NULL)
MTK_OP(UNFLATTEN, "unflatten", "unflatten(Tensor input, int dim, int[] sizes) -> Tensor",
       mtk_unflatten_meta, mtk_view_cpu, NULL, MTK_OP_VIEW, NULL)
MTK_OP(CONTIGUOUS, "contiguous", "contiguous(Tensor input, Any? memory_format=None) -> Tensor",
       mtk_contiguous_meta, mtk_copy_unless_view_cpu, NULL, MTK_OP_VIEW, NULL)
MTK_OP(EXPAND, "expand", "expand(Tensor input, int... size) -> Tensor",
       mtk_expand_meta, mtk_view_cpu, NULL, MTK_OP_VIEW, NULL)
MTK_OP(EXPAND_AS, "expand_as", "expand_as(Tensor input, Tensor other) -> Tensor",
       mtk_expand_as_meta, mtk_view_cpu, NULL, MTK_OP_VIEW, NULL)
MTK_OP(TRANSPOSE, "transpose", "transpose(Tensor input, int dim0, int dim1) -> Tensor",
       mtk_transpose_meta, mtk_view_cpu, NULL, MTK_OP_VIEW, NULL)
MTK_OP(SWAPAXES, "swapaxes", "swapaxes(Tensor input, int axis0, int axis1) -> Tensor",
       mtk_transpose_meta, mtk_view_cpu, NULL, MTK_OP_VIEW, NULL)
MTK_OP(SWAPDIMS, "swapdims", "swapdims(Tensor input, int dim0, int dim1) -> Tensor",
       mtk_transpose_meta, mtk_view_cpu, NULL, MTK_OP_VIEW, NULL)
MTK_OP(T, "t", "t(Tensor input) -> Tensor",
       mtk_t_meta, mtk_view_cpu, NULL, MTK_OP_VIEW, NULL)
MTK_OP(PERMUTE, "permute", "permute(Tensor input, int... dims) -> Tensor",
       mtk_permute_meta, mtk_view_cpu, NULL, MTK_OP_VIEW, NULL)
MTK_OP(MOVEDIM, "movedim", "movedim(Tensor input, int[1] source, int[1] destination) -> Tensor",
       mtk_movedim_meta, mtk_view_cpu, NULL, MTK_OP_VIEW, NULL)
MTK_OP(MOVEAXIS, "moveaxis", "moveaxis(Tensor input, int[1] source, int[1] destination) -> Tensor",
       mtk_movedim_meta, mtk_view_cpu, NULL, MTK_OP_VIEW, NULL)
MTK_OP(SQUEEZE, "squeeze", "squeeze(Tensor input, int[1] dim=None) -> Tensor",
       mtk_squeeze_meta, mtk_view_cpu, NULL, MTK_OP_VIEW, NULL)
MTK_OP(UNSQUEEZE, "unsqueeze", "unsqueeze(Tensor input, int dim) -> Tensor",
       mtk_unsqueeze_meta, mtk_view_cpu, NULL, MTK_OP_VIEW, NULL)
MTK_OP(NARROW, "narrow", "narrow(Tensor input, int dim, int start, int length) -> Tensor",
       mtk_narrow_meta, mtk_view_cpu, NULL, MTK_OP_VIEW, NULL)
MTK_OP(SELECT, "select", "select(Tensor input, int dim, int index) -> Tensor",
       mtk_select_meta, mtk_view_cpu, NULL, MTK_OP_VIEW, NULL)
MTK_OP(SLICE, "slice", "slice(Tensor input, int dim=0, int? start=None, int? end=None, int step=1) -> Tensor",
       mtk_slice_meta, mtk_view_cpu, NULL, MTK_OP_VIEW, NULL)
MTK_OP(AS_STRIDED, "as_strided",
       "as_strided(Tensor input, int[] size, int[] stride, int? storage_offset=None) -> Tensor",
       mtk_as_strided_meta, mtk_view_cpu, NULL, MTK_OP_VIEW, NULL) /* view_strided.c */
MTK_OP(SPLIT, "split", "split(Tensor tensor, int[1] split_size_or_sections, int dim=0) -> Tensor[]",
       mtk_split_meta, mtk_view_cpu, NULL, MTK_OP_VIEW, NULL)
MTK_OP(CHUNK, "chunk", "chunk(Tensor input, int chunks, int dim=0) -> Tensor[]",
       mtk_chunk_meta, mtk_view_cpu, NULL, MTK_OP_VIEW, NULL)
MTK_OP(UNBIND, "unbind", "unbind(Tensor input, int dim=0) -> Tensor[]",
       mtk_unbind_meta, mtk_view_cpu, NULL, MTK_OP_VIEW, NULL)
MTK_OP(REPEAT, "repeat", "repeat(Tensor input, int... repeats) -> Tensor",
       mtk_repeat_meta, mtk_repeat_cpu, NULL, 0, NULL)
