/* Op rows of the convert family (see registry.h for the row format). */
MTK_OP(TO, "to",
       "to(Tensor input, Any? arg1=None, Any? arg2=None, Any? arg3=None, Any? arg4=None, *, "
       "Any? device=None, ScalarType? dtype=None, bool non_blocking=False, bool copy=False, "
       "Any? memory_format=None) -> Tensor",
       mtk_to_meta, mtk_convert_copy_cpu, NULL, MTK_OP_VIEW | MTK_OP_ANY_DEVICES, NULL)
MTK_OP(TYPE_AS, "type_as", "type_as(Tensor input, Tensor other) -> Tensor",
       mtk_type_as_meta, mtk_convert_copy_cpu, NULL, MTK_OP_VIEW | MTK_OP_ANY_DEVICES, NULL)
MTK_OP(TO_EMPTY, "to_empty", "to_empty(Tensor input, *, Device device) -> Tensor",
       mtk_to_empty_meta, NULL, NULL, MTK_OP_NO_KERNEL, NULL)
MTK_OP(CLONE, "clone", "clone(Tensor input, *, Any? memory_format=None) -> Tensor",
       mtk_clone_meta, mtk_convert_copy_cpu, NULL, 0, NULL)
MTK_OP(COPY_, "copy_", "copy_(Tensor self, Tensor|Scalar src, bool non_blocking=False) -> Tensor",
       mtk_copy__meta, mtk_copy__cpu, NULL, MTK_OP_INPLACE | MTK_OP_ANY_DEVICES, NULL)
MTK_OP(FILL_, "fill_", "fill_(Tensor self, Tensor|Scalar value) -> Tensor",
       mtk_ew_fill_meta, mtk_ew_fill_cpu, mtk_ew_fill_cost, MTK_OP_INPLACE, NULL) /* elementwise_fill.c */
MTK_OP(ZERO_, "zero_", "zero_(Tensor self) -> Tensor",
       mtk_ew_zero_meta, mtk_ew_zero_cpu, mtk_ew_fill_cost, MTK_OP_INPLACE, NULL)
MTK_OP(ITEM, "item", "item(Tensor input) -> Scalar",
       mtk_item_meta, mtk_item_cpu, NULL, 0, NULL)
MTK_OP(NONZERO, "nonzero", "nonzero(Tensor input, *, bool as_tuple=False) -> Tensor",
       mtk_nonzero_meta, mtk_nonzero_cpu, NULL, MTK_OP_DATA_DEPENDENT, NULL)
MTK_OP(MASKED_SELECT, "masked_select", "masked_select(Tensor input, Tensor mask) -> Tensor",
       mtk_masked_select_meta, mtk_masked_select_cpu, NULL, MTK_OP_DATA_DEPENDENT, NULL)
MTK_OP(UNIQUE, "unique",
       "unique(Tensor input, bool sorted=True, bool return_inverse=False, bool return_counts=False, "
       "int? dim=None) -> Tensor",
       mtk_unique_meta, mtk_unique_cpu, NULL, MTK_OP_DATA_DEPENDENT, NULL)
