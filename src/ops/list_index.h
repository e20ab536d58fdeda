/* Op rows of the index family (see registry.h for the row format). */

/* ---- joining (index_cat.c) */
MTK_OP(CAT, .name = "cat",
       .signature = "cat(Tensor[] tensors, int dim=0) -> Tensor",
       .meta = mtk_cat_meta, .cpu = mtk_cat_cpu, .cost = mtk_outputs_cost,
       .info = &mtk_ix_info_cat)
MTK_OP(CONCAT, .name = "concat",
       .signature = "concat(Tensor[] tensors, int dim=0) -> Tensor",
       .meta = mtk_cat_meta, .cpu = mtk_cat_cpu, .cost = mtk_outputs_cost,
       .info = &mtk_ix_info_cat)
MTK_OP(CONCATENATE, .name = "concatenate",
       .signature = "concatenate(Tensor[] tensors, int axis=0, *, int? dim=None) -> Tensor",
       .meta = mtk_cat_meta, .cpu = mtk_cat_cpu, .cost = mtk_outputs_cost,
       .info = &mtk_ix_info_cat)
MTK_OP(STACK, .name = "stack",
       .signature = "stack(Tensor[] tensors, int dim=0) -> Tensor",
       .meta = mtk_cat_meta, .cpu = mtk_cat_cpu, .cost = mtk_outputs_cost,
       .info = &mtk_ix_info_stack)
MTK_OP(HSTACK, .name = "hstack",
       .signature = "hstack(Tensor[] tensors) -> Tensor",
       .meta = mtk_cat_meta, .cpu = mtk_cat_cpu, .cost = mtk_outputs_cost,
       .info = &mtk_ix_info_hstack)
MTK_OP(VSTACK, .name = "vstack",
       .signature = "vstack(Tensor[] tensors) -> Tensor",
       .meta = mtk_cat_meta, .cpu = mtk_cat_cpu, .cost = mtk_outputs_cost,
       .info = &mtk_ix_info_vstack)
MTK_OP(ROW_STACK, .name = "row_stack",
       .signature = "row_stack(Tensor[] tensors) -> Tensor",
       .meta = mtk_cat_meta, .cpu = mtk_cat_cpu, .cost = mtk_outputs_cost,
       .info = &mtk_ix_info_vstack)
MTK_OP(DSTACK, .name = "dstack",
       .signature = "dstack(Tensor[] tensors) -> Tensor",
       .meta = mtk_cat_meta, .cpu = mtk_cat_cpu, .cost = mtk_outputs_cost,
       .info = &mtk_ix_info_dstack)

/* ---- splitting and repeating (index_split.c) */
MTK_OP(TENSOR_SPLIT, .name = "tensor_split",
       .signature = "tensor_split(Tensor input, Any? indices_or_sections=None, int dim=0, *, int? sections=None, " "int[]? indices=None, Tensor? tensor_indices_or_sections=None) -> Tensor[]",
       .meta = mtk_tensor_split_meta, .cpu = mtk_view_cpu,
       .flags = MTK_OP_VIEW | MTK_OP_ANY_DEVICES)
MTK_OP(TILE, .name = "tile",
       .signature = "tile(Tensor input, int[] dims) -> Tensor",
       .meta = mtk_tile_meta, .cpu = mtk_tile_cpu, .cost = mtk_outputs_cost)
MTK_OP(REPEAT_INTERLEAVE, .name = "repeat_interleave",
       .signature = "repeat_interleave(Tensor input, Any? repeats=None, int? dim=None, *, int? output_size=None) -> Tensor",
       .meta = mtk_repeat_interleave_meta, .cpu = mtk_repeat_interleave_cpu, .cost = mtk_outputs_cost,
       .flags = MTK_OP_ANY_DEVICES)

/* ---- reordering (index_reorder.c) */
MTK_OP(ROLL, .name = "roll",
       .signature = "roll(Tensor input, int[1] shifts, int[1]? dims=None) -> Tensor",
       .meta = mtk_roll_meta, .cpu = mtk_roll_cpu, .cost = mtk_outputs_cost)
MTK_OP(FLIP, .name = "flip",
       .signature = "flip(Tensor input, int[] dims) -> Tensor",
       .meta = mtk_flip_meta, .cpu = mtk_flip_cpu, .cost = mtk_outputs_cost)
MTK_OP(TRIL, .name = "tril",
       .signature = "tril(Tensor input, int diagonal=0) -> Tensor",
       .meta = mtk_tril_meta, .cpu = mtk_tril_cpu, .cost = mtk_outputs_cost,
       .info = &mtk_ix_info_tril)
MTK_OP(TRIU, .name = "triu",
       .signature = "triu(Tensor input, int diagonal=0) -> Tensor",
       .meta = mtk_tril_meta, .cpu = mtk_tril_cpu, .cost = mtk_outputs_cost,
       .info = &mtk_ix_info_triu)

/* ---- reading by index (index_gather.c) */
MTK_OP(INDEX_SELECT, .name = "index_select",
       .signature = "index_select(Tensor input, int dim, Tensor index) -> Tensor",
       .meta = mtk_index_select_meta, .cpu = mtk_index_select_cpu, .cost = mtk_outputs_cost,
       .saved = ag_saved_index_select)
MTK_OP(GATHER, .name = "gather",
       .signature = "gather(Tensor input, int dim, Tensor index, *, bool sparse_grad=False) -> Tensor",
       .meta = mtk_gather_meta, .cpu = mtk_gather_cpu, .cost = mtk_outputs_cost, .saved = ag_saved_gather)
MTK_OP(TAKE_ALONG_DIM, .name = "take_along_dim",
       .signature = "take_along_dim(Tensor input, Tensor indices, int? dim=None) -> Tensor",
       .meta = mtk_take_along_dim_meta, .cpu = mtk_take_along_dim_cpu, .cost = mtk_outputs_cost)
MTK_OP(EMBEDDING, .name = "embedding",
       .signature = "embedding(Tensor input, Tensor weight, int? padding_idx=None, float? max_norm=None, float norm_type=2.0, " "bool scale_grad_by_freq=False, bool sparse=False) -> Tensor",
       .meta = mtk_embedding_meta, .cpu = mtk_embedding_cpu, .cost = mtk_outputs_cost, .saved = ag_saved_indices)

/* ---- writing by index and by mask (index_scatter.c) */
MTK_OP(SCATTER, .name = "scatter",
       .signature = "scatter(Tensor input, int dim, Tensor index, Tensor|Scalar? src=None, *, Scalar? value=None, " "str? reduce=None) -> Tensor",
       .meta = mtk_scatter_meta, .cpu = mtk_scatter_cpu, .cost = mtk_outputs_cost,
       .info = &mtk_ix_info_scatter)
MTK_OP(SCATTER_ADD, .name = "scatter_add",
       .signature = "scatter_add(Tensor input, int dim, Tensor index, Tensor src) -> Tensor",
       .meta = mtk_scatter_meta, .cpu = mtk_scatter_cpu, .cost = mtk_outputs_cost,
       .info = &mtk_ix_info_scatter_add)
MTK_OP(INDEX_ADD, .name = "index_add",
       .signature = "index_add(Tensor input, int dim, Tensor index, Tensor source, *, Scalar alpha=1) -> Tensor",
       .meta = mtk_index_add_meta, .cpu = mtk_index_add_cpu, .cost = mtk_outputs_cost)
MTK_OP(MASKED_FILL, .name = "masked_fill",
       .signature = "masked_fill(Tensor input, Tensor mask, Tensor|Scalar value) -> Tensor",
       .meta = mtk_masked_fill_meta, .cpu = mtk_masked_fill_cpu, .cost = mtk_outputs_cost,
       .saved = ag_saved_masked_fill)
MTK_OP(ONE_HOT, .name = "one_hot",
       .signature = "one_hot(Tensor input, int num_classes=-1) -> Tensor",
       .meta = mtk_one_hot_meta, .cpu = mtk_one_hot_cpu, .cost = mtk_outputs_cost)

/* ---- padding (index_pad.c) */
MTK_OP(PAD, .name = "pad",
       .signature = "pad(Tensor input, int[] pad, str mode='constant', float? value=None) -> Tensor",
       .meta = mtk_pad_meta, .cpu = mtk_pad_cpu, .cost = mtk_outputs_cost)

/* ---- sorting (index_sort.c) */
MTK_OP(SORT, .name = "sort",
       .signature = "sort(Tensor input, int dim=-1, bool descending=False, *, bool? stable=False) -> (Tensor values, Tensor indices)",
       .meta = mtk_sort_meta, .cpu = mtk_sort_cpu, .cost = mtk_outputs_cost,
       .info = &mtk_ix_info_sort)
MTK_OP(ARGSORT, .name = "argsort",
       .signature = "argsort(Tensor input, int dim=-1, bool descending=False, *, bool stable=False) -> Tensor",
       .meta = mtk_sort_meta, .cpu = mtk_sort_cpu, .cost = mtk_outputs_cost,
       .info = &mtk_ix_info_argsort)
MTK_OP(TOPK, .name = "topk",
       .signature = "topk(Tensor input, int k, int dim=-1, bool largest=True, bool sorted=True) -> (Tensor values, Tensor indices)",
       .meta = mtk_topk_meta, .cpu = mtk_topk_cpu, .cost = mtk_outputs_cost,
       .saved = ag_saved_topk)
