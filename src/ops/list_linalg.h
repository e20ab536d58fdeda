/* Op rows of the linalg family (see registry.h for the row format). */
MTK_OP(MATMUL, "matmul", "matmul(Tensor input, Tensor other) -> Tensor",
       mtk_linalg_meta, mtk_linalg_cpu, mtk_linalg_cost, 0, &mtk_linalg_matmul_info)
MTK_OP(MM, "mm", "mm(Tensor input, Tensor mat2) -> Tensor",
       mtk_linalg_meta, mtk_linalg_cpu, mtk_linalg_cost, 0, &mtk_linalg_mm_info)
MTK_OP(BMM, "bmm", "bmm(Tensor input, Tensor mat2) -> Tensor",
       mtk_linalg_meta, mtk_linalg_cpu, mtk_linalg_cost, 0, &mtk_linalg_bmm_info)
MTK_OP(DOT, "dot", "dot(Tensor input, Tensor tensor) -> Tensor",
       mtk_linalg_meta, mtk_linalg_cpu, mtk_linalg_cost, 0, &mtk_linalg_dot_info)
MTK_OP(MV, "mv", "mv(Tensor input, Tensor vec) -> Tensor",
       mtk_linalg_meta, mtk_linalg_cpu, mtk_linalg_cost, 0, &mtk_linalg_mv_info)
MTK_OP(LINEAR, "linear", "linear(Tensor input, Tensor weight, Tensor? bias=None) -> Tensor",
       mtk_linalg_meta, mtk_linalg_cpu, mtk_linalg_cost, 0, &mtk_linalg_linear_info)
