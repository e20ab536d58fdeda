/* Op rows of the index family (see registry.h for the row format). */

/* ---- joining (index_cat.c) */
MTK_OP(CAT, "cat", "cat(Tensor[] tensors, int dim=0) -> Tensor",
       mtk_cat_meta, mtk_cat_cpu, mtk_outputs_cost, 0, &mtk_ix_info_cat)
MTK_OP(CONCAT, "concat", "concat(Tensor[] tensors, int dim=0) -> Tensor",
       mtk_cat_meta, mtk_cat_cpu, mtk_outputs_cost, 0, &mtk_ix_info_cat)
MTK_OP(CONCATENATE, "concatenate", "concatenate(Tensor[] tensors, int axis=0, *, int? dim=None) -> Tensor",
       mtk_cat_meta, mtk_cat_cpu, mtk_outputs_cost, 0, &mtk_ix_info_cat)
MTK_OP(STACK, "stack", "stack(Tensor[] tensors, int dim=0) -> Tensor",
       mtk_cat_meta, mtk_cat_cpu, mtk_outputs_cost, 0, &mtk_ix_info_stack)
MTK_OP(HSTACK, "hstack", "hstack(Tensor[] tensors) -> Tensor",
       mtk_cat_meta, mtk_cat_cpu, mtk_outputs_cost, 0, &mtk_ix_info_hstack)
MTK_OP(VSTACK, "vstack", "vstack(Tensor[] tensors) -> Tensor",
       mtk_cat_meta, mtk_cat_cpu, mtk_outputs_cost, 0, &mtk_ix_info_vstack)
MTK_OP(ROW_STACK, "row_stack", "row_stack(Tensor[] tensors) -> Tensor",
       mtk_cat_meta, mtk_cat_cpu, mtk_outputs_cost, 0, &mtk_ix_info_vstack)
MTK_OP(DSTACK, "dstack", "dstack(Tensor[] tensors) -> Tensor",
       mtk_cat_meta, mtk_cat_cpu, mtk_outputs_cost, 0, &mtk_ix_info_dstack)

/* ---- splitting and repeating (index_split.c) */
MTK_OP(TENSOR_SPLIT, "tensor_split",
       "tensor_split(Tensor input, Any? indices_or_sections=None, int dim=0, *, int? sections=None, "
       "int[]? indices=None, Tensor? tensor_indices_or_sections=None) -> Tensor[]",
       mtk_tensor_split_meta, mtk_view_cpu, NULL, MTK_OP_VIEW | MTK_OP_ANY_DEVICES, NULL)
MTK_OP(TILE, "tile", "tile(Tensor input, int[] dims) -> Tensor",
       mtk_tile_meta, mtk_tile_cpu, mtk_outputs_cost, 0, NULL)
MTK_OP(REPEAT_INTERLEAVE, "repeat_interleave",
       "repeat_interleave(Tensor input, Any? repeats=None, int? dim=None, *, int? output_size=None) -> Tensor",
       mtk_repeat_interleave_meta, mtk_repeat_interleave_cpu, mtk_outputs_cost, MTK_OP_ANY_DEVICES, NULL)

/* ---- reordering (index_reorder.c) */
MTK_OP(ROLL, "roll", "roll(Tensor input, int[1] shifts, int[1]? dims=None) -> Tensor",
       mtk_roll_meta, mtk_roll_cpu, mtk_outputs_cost, 0, NULL)
MTK_OP(FLIP, "flip", "flip(Tensor input, int[] dims) -> Tensor",
       mtk_flip_meta, mtk_flip_cpu, mtk_outputs_cost, 0, NULL)
MTK_OP(TRIL, "tril", "tril(Tensor input, int diagonal=0) -> Tensor",
       mtk_tril_meta, mtk_tril_cpu, mtk_outputs_cost, 0, &mtk_ix_info_tril)
MTK_OP(TRIU, "triu", "triu(Tensor input, int diagonal=0) -> Tensor",
       mtk_tril_meta, mtk_tril_cpu, mtk_outputs_cost, 0, &mtk_ix_info_triu)

/* ---- reading by index (index_gather.c) */
MTK_OP(INDEX_SELECT, "index_select", "index_select(Tensor input, int dim, Tensor index) -> Tensor",
       mtk_index_select_meta, mtk_index_select_cpu, mtk_outputs_cost, 0, NULL)
MTK_OP(GATHER, "gather", "gather(Tensor input, int dim, Tensor index, *, bool sparse_grad=False) -> Tensor",
       mtk_gather_meta, mtk_gather_cpu, mtk_outputs_cost, 0, NULL)
MTK_OP(TAKE_ALONG_DIM, "take_along_dim", "take_along_dim(Tensor input, Tensor indices, int? dim=None) -> Tensor",
       mtk_take_along_dim_meta, mtk_take_along_dim_cpu, mtk_outputs_cost, 0, NULL)
MTK_OP(EMBEDDING, "embedding",
       "embedding(Tensor input, Tensor weight, int? padding_idx=None, float? max_norm=None, float norm_type=2.0, "
       "bool scale_grad_by_freq=False, bool sparse=False) -> Tensor",
       mtk_embedding_meta, mtk_embedding_cpu, mtk_outputs_cost, 0, NULL)

/* ---- writing by index and by mask (index_scatter.c) */
MTK_OP(SCATTER, "scatter",
       "scatter(Tensor input, int dim, Tensor index, Tensor|Scalar? src=None, *, Scalar? value=None, "
       "str? reduce=None) -> Tensor",
       mtk_scatter_meta, mtk_scatter_cpu, mtk_outputs_cost, 0, &mtk_ix_info_scatter)
MTK_OP(SCATTER_ADD, "scatter_add", "scatter_add(Tensor input, int dim, Tensor index, Tensor src) -> Tensor",
       mtk_scatter_meta, mtk_scatter_cpu, mtk_outputs_cost, 0, &mtk_ix_info_scatter_add)
MTK_OP(INDEX_ADD, "index_add",
       "index_add(Tensor input, int dim, Tensor index, Tensor source, *, Scalar alpha=1) -> Tensor",
       mtk_index_add_meta, mtk_index_add_cpu, mtk_outputs_cost, 0, NULL)
MTK_OP(MASKED_FILL, "masked_fill", "masked_fill(Tensor input, Tensor mask, Tensor|Scalar value) -> Tensor",
       mtk_masked_fill_meta, mtk_masked_fill_cpu, mtk_outputs_cost, 0, NULL)
MTK_OP(ONE_HOT, "one_hot", "one_hot(Tensor input, int num_classes=-1) -> Tensor",
       mtk_one_hot_meta, mtk_one_hot_cpu, mtk_outputs_cost, 0, NULL)

/* ---- padding (index_pad.c) */
MTK_OP(PAD, "pad", "pad(Tensor input, int[] pad, str mode='constant', float? value=None) -> Tensor",
       mtk_pad_meta, mtk_pad_cpu, mtk_outputs_cost, 0, NULL)

/* ---- sorting (index_sort.c) */
MTK_OP(SORT, "sort",
       "sort(Tensor input, int dim=-1, bool descending=False, *, bool? stable=False) -> (Tensor values, Tensor indices)",
       mtk_sort_meta, mtk_sort_cpu, mtk_outputs_cost, 0, &mtk_ix_info_sort)
MTK_OP(ARGSORT, "argsort", "argsort(Tensor input, int dim=-1, bool descending=False, *, bool stable=False) -> Tensor",
       mtk_sort_meta, mtk_sort_cpu, mtk_outputs_cost, 0, &mtk_ix_info_argsort)
MTK_OP(TOPK, "topk",
       "topk(Tensor input, int k, int dim=-1, bool largest=True, bool sorted=True) -> (Tensor values, Tensor indices)",
       mtk_topk_meta, mtk_topk_cpu, mtk_outputs_cost, 0, NULL)
