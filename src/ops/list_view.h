/* Op rows of the view family (see registry.h for the row format).  Views
 * (MTK_OP_VIEW) share their input's storage; reshape, flatten and
 * contiguous share it when torch would, and copy otherwise. */
MTK_OP(VIEW, .name = "view",
       .signature = "view(Tensor input, int... size) -> Tensor",
       .meta = mtk_view_meta, .cpu = mtk_view_cpu,
       .flags = MTK_OP_VIEW)
MTK_OP(RESHAPE, .name = "reshape",
       .signature = "reshape(Tensor input, int... shape) -> Tensor",
       .meta = mtk_reshape_meta, .cpu = mtk_copy_unless_view_cpu,
       .flags = MTK_OP_VIEW)
MTK_OP(VIEW_AS, .name = "view_as",
       .signature = "view_as(Tensor input, Tensor other) -> Tensor",
       .meta = mtk_view_as_meta, .cpu = mtk_view_cpu,
       .flags = MTK_OP_VIEW)
MTK_OP(RESHAPE_AS, .name = "reshape_as",
       .signature = "reshape_as(Tensor input, Tensor other) -> Tensor",
       .meta = mtk_reshape_as_meta, .cpu = mtk_copy_unless_view_cpu,
       .flags = MTK_OP_VIEW)
MTK_OP(FLATTEN, .name = "flatten",
       .signature = "flatten(Tensor input, int start_dim=0, int end_dim=-1) -> Tensor",
       .meta = mtk_flatten_meta, .cpu = mtk_copy_unless_view_cpu,
       .flags = MTK_OP_VIEW)
MTK_OP(UNFLATTEN, .name = "unflatten",
       .signature = "unflatten(Tensor input, int dim, int[] sizes) -> Tensor",
       .meta = mtk_unflatten_meta, .cpu = mtk_view_cpu,
       .flags = MTK_OP_VIEW)
MTK_OP(CONTIGUOUS, .name = "contiguous",
       .signature = "contiguous(Tensor input, Any? memory_format=None) -> Tensor",
       .meta = mtk_contiguous_meta, .cpu = mtk_copy_unless_view_cpu,
       .flags = MTK_OP_VIEW)
MTK_OP(EXPAND, .name = "expand",
       .signature = "expand(Tensor input, int... size) -> Tensor",
       .meta = mtk_expand_meta, .cpu = mtk_view_cpu,
       .flags = MTK_OP_VIEW)
MTK_OP(EXPAND_AS, .name = "expand_as",
       .signature = "expand_as(Tensor input, Tensor other) -> Tensor",
       .meta = mtk_expand_as_meta, .cpu = mtk_view_cpu,
       .flags = MTK_OP_VIEW)
MTK_OP(TRANSPOSE, .name = "transpose",
       .signature = "transpose(Tensor input, int dim0, int dim1) -> Tensor",
       .meta = mtk_transpose_meta, .cpu = mtk_view_cpu,
       .flags = MTK_OP_VIEW, .backward = ag_backward_passthrough)
MTK_OP(SWAPAXES, .name = "swapaxes",
       .signature = "swapaxes(Tensor input, int axis0, int axis1) -> Tensor",
       .meta = mtk_transpose_meta, .cpu = mtk_view_cpu,
       .flags = MTK_OP_VIEW, .backward = ag_backward_passthrough)
MTK_OP(SWAPDIMS, .name = "swapdims",
       .signature = "swapdims(Tensor input, int dim0, int dim1) -> Tensor",
       .meta = mtk_transpose_meta, .cpu = mtk_view_cpu,
       .flags = MTK_OP_VIEW, .backward = ag_backward_passthrough)
MTK_OP(T, .name = "t",
       .signature = "t(Tensor input) -> Tensor",
       .meta = mtk_t_meta, .cpu = mtk_view_cpu,
       .flags = MTK_OP_VIEW, .backward = ag_backward_passthrough)
MTK_OP(PERMUTE, .name = "permute",
       .signature = "permute(Tensor input, int... dims) -> Tensor",
       .meta = mtk_permute_meta, .cpu = mtk_view_cpu,
       .flags = MTK_OP_VIEW)
MTK_OP(MOVEDIM, .name = "movedim",
       .signature = "movedim(Tensor input, int[1] source, int[1] destination) -> Tensor",
       .meta = mtk_movedim_meta, .cpu = mtk_view_cpu,
       .flags = MTK_OP_VIEW)
MTK_OP(MOVEAXIS, .name = "moveaxis",
       .signature = "moveaxis(Tensor input, int[1] source, int[1] destination) -> Tensor",
       .meta = mtk_movedim_meta, .cpu = mtk_view_cpu,
       .flags = MTK_OP_VIEW)
MTK_OP(SQUEEZE, .name = "squeeze",
       .signature = "squeeze(Tensor input, int[1] dim=None) -> Tensor",
       .meta = mtk_squeeze_meta, .cpu = mtk_view_cpu,
       .flags = MTK_OP_VIEW)
MTK_OP(UNSQUEEZE, .name = "unsqueeze",
       .signature = "unsqueeze(Tensor input, int dim) -> Tensor",
       .meta = mtk_unsqueeze_meta, .cpu = mtk_view_cpu,
       .flags = MTK_OP_VIEW)
MTK_OP(NARROW, .name = "narrow",
       .signature = "narrow(Tensor input, int dim, int start, int length) -> Tensor",
       .meta = mtk_narrow_meta, .cpu = mtk_view_cpu,
       .flags = MTK_OP_VIEW)
MTK_OP(SELECT, .name = "select",
       .signature = "select(Tensor input, int dim, int index) -> Tensor",
       .meta = mtk_select_meta, .cpu = mtk_view_cpu,
       .flags = MTK_OP_VIEW)
MTK_OP(SLICE, .name = "slice",
       .signature = "slice(Tensor input, int dim=0, int? start=None, int? end=None, int step=1) -> Tensor",
       .meta = mtk_slice_meta, .cpu = mtk_view_cpu,
       .flags = MTK_OP_VIEW)
MTK_OP(AS_STRIDED, .name = "as_strided",
       .signature = "as_strided(Tensor input, int[] size, int[] stride, int? storage_offset=None) -> Tensor",
       .meta = mtk_as_strided_meta, .cpu = mtk_view_cpu,
       .flags = MTK_OP_VIEW) /* view_strided.c */
MTK_OP(SPLIT, .name = "split",
       .signature = "split(Tensor tensor, int[1] split_size_or_sections, int dim=0) -> Tensor[]",
       .meta = mtk_split_meta, .cpu = mtk_view_cpu,
       .flags = MTK_OP_VIEW)
MTK_OP(CHUNK, .name = "chunk",
       .signature = "chunk(Tensor input, int chunks, int dim=0) -> Tensor[]",
       .meta = mtk_chunk_meta, .cpu = mtk_view_cpu,
       .flags = MTK_OP_VIEW)
MTK_OP(UNBIND, .name = "unbind",
       .signature = "unbind(Tensor input, int dim=0) -> Tensor[]",
       .meta = mtk_unbind_meta, .cpu = mtk_view_cpu,
       .flags = MTK_OP_VIEW)
MTK_OP(REPEAT, .name = "repeat",
       .signature = "repeat(Tensor input, int... repeats) -> Tensor",
       .meta = mtk_repeat_meta, .cpu = mtk_repeat_cpu)
