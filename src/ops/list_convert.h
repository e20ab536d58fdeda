/* Op rows of the convert family (see registry.h for the row format). */
MTK_OP(TO, .name = "to",
       .signature = "to(Tensor input, Any? arg1=None, Any? arg2=None, Any? arg3=None, Any? arg4=None, *, " "Any? device=None, ScalarType? dtype=None, bool non_blocking=False, bool copy=False, " "Any? memory_format=None) -> Tensor",
       .meta = mtk_to_meta, .cpu = mtk_convert_copy_cpu,
       .flags = MTK_OP_VIEW | MTK_OP_ANY_DEVICES)
MTK_OP(TYPE_AS, .name = "type_as",
       .signature = "type_as(Tensor input, Tensor other) -> Tensor",
       .meta = mtk_type_as_meta, .cpu = mtk_convert_copy_cpu,
       .flags = MTK_OP_VIEW | MTK_OP_ANY_DEVICES)
MTK_OP(TO_EMPTY, .name = "to_empty",
       .signature = "to_empty(Tensor input, *, Device device) -> Tensor",
       .meta = mtk_to_empty_meta,
       .flags = MTK_OP_NO_KERNEL)
MTK_OP(CLONE, .name = "clone",
       .signature = "clone(Tensor input, *, Any? memory_format=None) -> Tensor",
       .meta = mtk_clone_meta, .cpu = mtk_convert_copy_cpu)
MTK_OP(COPY_, .name = "copy_",
       .signature = "copy_(Tensor self, Tensor|Scalar src, bool non_blocking=False) -> Tensor",
       .meta = mtk_copy__meta, .cpu = mtk_copy__cpu,
       .flags = MTK_OP_INPLACE | MTK_OP_ANY_DEVICES)
MTK_OP(FILL_, .name = "fill_",
       .signature = "fill_(Tensor self, Tensor|Scalar value) -> Tensor",
       .meta = mtk_ew_fill_meta, .cpu = mtk_ew_fill_cpu, .cost = mtk_ew_fill_cost,
       .flags = MTK_OP_INPLACE) /* elementwise_fill.c */
MTK_OP(ZERO_, .name = "zero_",
       .signature = "zero_(Tensor self) -> Tensor",
       .meta = mtk_ew_zero_meta, .cpu = mtk_ew_zero_cpu, .cost = mtk_ew_fill_cost,
       .flags = MTK_OP_INPLACE)
MTK_OP(ITEM, .name = "item",
       .signature = "item(Tensor input) -> Scalar",
       .meta = mtk_item_meta, .cpu = mtk_item_cpu)
MTK_OP(NONZERO, .name = "nonzero",
       .signature = "nonzero(Tensor input, *, bool as_tuple=False) -> Tensor",
       .meta = mtk_nonzero_meta, .cpu = mtk_nonzero_cpu,
       .flags = MTK_OP_DATA_DEPENDENT)
MTK_OP(MASKED_SELECT, .name = "masked_select",
       .signature = "masked_select(Tensor input, Tensor mask) -> Tensor",
       .meta = mtk_masked_select_meta, .cpu = mtk_masked_select_cpu,
       .flags = MTK_OP_DATA_DEPENDENT)
MTK_OP(UNIQUE, .name = "unique",
       .signature = "unique(Tensor input, bool sorted=True, bool return_inverse=False, bool return_counts=False, " "int? dim=None) -> Tensor",
       .meta = mtk_unique_meta, .cpu = mtk_unique_cpu,
       .flags = MTK_OP_DATA_DEPENDENT)
