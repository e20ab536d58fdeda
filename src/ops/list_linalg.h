/* Op rows of the linalg family (see registry.h for the row format). */
MTK_OP(MATMUL, .name = "matmul",
       .signature = "matmul(Tensor input, Tensor other) -> Tensor",
       .meta = mtk_linalg_meta, .cpu = mtk_linalg_cpu, .cost = mtk_linalg_cost,
       .info = &mtk_linalg_matmul_info, .saved = ag_saved_matmul,
       .backward = ag_backward_matmul)
MTK_OP(MM, .name = "mm",
       .signature = "mm(Tensor input, Tensor mat2) -> Tensor",
       .meta = mtk_linalg_meta, .cpu = mtk_linalg_cpu, .cost = mtk_linalg_cost,
       .info = &mtk_linalg_mm_info, .saved = ag_saved_mm)
MTK_OP(BMM, .name = "bmm",
       .signature = "bmm(Tensor input, Tensor mat2) -> Tensor",
       .meta = mtk_linalg_meta, .cpu = mtk_linalg_cpu, .cost = mtk_linalg_cost,
       .info = &mtk_linalg_bmm_info, .saved = ag_saved_mm)
MTK_OP(DOT, .name = "dot",
       .signature = "dot(Tensor input, Tensor tensor) -> Tensor",
       .meta = mtk_linalg_meta, .cpu = mtk_linalg_cpu, .cost = mtk_linalg_cost,
       .info = &mtk_linalg_dot_info, .saved = ag_saved_mm)
MTK_OP(MV, .name = "mv",
       .signature = "mv(Tensor input, Tensor vec) -> Tensor",
       .meta = mtk_linalg_meta, .cpu = mtk_linalg_cpu, .cost = mtk_linalg_cost,
       .info = &mtk_linalg_mv_info, .saved = ag_saved_mm)
MTK_OP(LINEAR, .name = "linear",
       .signature = "linear(Tensor input, Tensor weight, Tensor? bias=None) -> Tensor",
       .meta = mtk_linalg_meta, .cpu = mtk_linalg_cpu, .cost = mtk_linalg_cost,
       .info = &mtk_linalg_linear_info, .saved = ag_saved_linear,
       .backward = ag_backward_linear)
MTK_OP(GROUPED_MM, .name = "_grouped_mm",
       .signature = "_grouped_mm(Tensor self, Tensor mat2, Tensor? offs=None) -> Tensor",
       .meta = mtk_grouped_mm_meta, .cpu = mtk_grouped_mm_cpu, .cost = mtk_grouped_mm_cost,
       .saved = ag_saved_grouped_mm)
