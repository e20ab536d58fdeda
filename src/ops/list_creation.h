/* Op rows of the creation family (see registry.h for the row format). */
MTK_OP(EMPTY, .name = "empty",
       .signature = "empty(int... size, *, ScalarType? dtype=None, Device? device=None, bool requires_grad=False, " "Any? memory_format=None, Any? layout=None) -> Tensor",
       .meta = mtk_empty_meta, .cpu = mtk_empty_cpu,
       .flags = MTK_OP_CREATION)
MTK_OP(ZEROS, .name = "zeros",
       .signature = "zeros(int... size, *, ScalarType? dtype=None, Device? device=None, bool requires_grad=False, Any? layout=None) -> Tensor",
       .meta = mtk_zeros_meta, .cpu = mtk_zeros_cpu,
       .flags = MTK_OP_CREATION)
MTK_OP(ONES, .name = "ones",
       .signature = "ones(int... size, *, ScalarType? dtype=None, Device? device=None, bool requires_grad=False, Any? layout=None) -> Tensor",
       .meta = mtk_zeros_meta, .cpu = mtk_ones_cpu,
       .flags = MTK_OP_CREATION)
MTK_OP(FULL, .name = "full",
       .signature = "full(int[] size, Scalar fill_value, *, ScalarType? dtype=None, Device? device=None, " "bool requires_grad=False, Any? layout=None) -> Tensor",
       .meta = mtk_full_meta, .cpu = mtk_full_cpu,
       .flags = MTK_OP_CREATION)
MTK_OP(ARANGE, .name = "arange",
       .signature = "arange(Scalar start=None, Scalar end=None, Scalar step=None, *, ScalarType? dtype=None, " "Device? device=None, bool requires_grad=False, Any? layout=None) -> Tensor",
       .meta = mtk_arange_meta, .cpu = mtk_arange_cpu,
       .flags = MTK_OP_CREATION)
MTK_OP(LINSPACE, .name = "linspace",
       .signature = "linspace(Tensor|Scalar start, Tensor|Scalar end, int steps, *, ScalarType? dtype=None, Device? device=None, " "bool requires_grad=False, Any? layout=None) -> Tensor",
       .meta = mtk_linspace_meta, .cpu = mtk_linspace_cpu,
       .flags = MTK_OP_CREATION)
MTK_OP(EYE, .name = "eye",
       .signature = "eye(int n, int m=None, *, ScalarType? dtype=None, Device? device=None, bool requires_grad=False, Any? layout=None) -> Tensor",
       .meta = mtk_eye_meta, .cpu = mtk_eye_cpu,
       .flags = MTK_OP_CREATION)
MTK_OP(EMPTY_LIKE, .name = "empty_like",
       .signature = "empty_like(Tensor input, *, ScalarType? dtype=None, Device? device=None, bool requires_grad=False, " "Any? memory_format=None, Any? layout=None) -> Tensor",
       .meta = mtk_like_meta, .cpu = mtk_empty_cpu)
MTK_OP(ZEROS_LIKE, .name = "zeros_like",
       .signature = "zeros_like(Tensor input, *, ScalarType? dtype=None, Device? device=None, bool requires_grad=False, " "Any? memory_format=None, Any? layout=None) -> Tensor",
       .meta = mtk_like_meta, .cpu = mtk_zeros_cpu)
MTK_OP(ONES_LIKE, .name = "ones_like",
       .signature = "ones_like(Tensor input, *, ScalarType? dtype=None, Device? device=None, bool requires_grad=False, " "Any? memory_format=None, Any? layout=None) -> Tensor",
       .meta = mtk_like_meta, .cpu = mtk_ones_cpu)
MTK_OP(FULL_LIKE, .name = "full_like",
       .signature = "full_like(Tensor input, Scalar fill_value, *, ScalarType? dtype=None, Device? device=None, " "bool requires_grad=False, Any? memory_format=None, Any? layout=None) -> Tensor",
       .meta = mtk_full_like_meta, .cpu = mtk_full_like_cpu)
