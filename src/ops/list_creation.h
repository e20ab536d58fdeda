/* Op rows of the creation family (see registry.h for the row format). */
MTK_OP(EMPTY, "empty",
       "empty(int... size, *, ScalarType? dtype=None, Device? device=None, bool requires_grad=False, "
       "Any? memory_format=None, Any? layout=None) -> Tensor",
       mtk_empty_meta, mtk_empty_cpu, NULL, MTK_OP_CREATION, NULL)
MTK_OP(ZEROS, "zeros",
       "zeros(int... size, *, ScalarType? dtype=None, Device? device=None, bool requires_grad=False, Any? layout=None) -> Tensor",
       mtk_zeros_meta, mtk_zeros_cpu, NULL, MTK_OP_CREATION, NULL)
MTK_OP(ONES, "ones",
       "ones(int... size, *, ScalarType? dtype=None, Device? device=None, bool requires_grad=False, Any? layout=None) -> Tensor",
       mtk_zeros_meta, mtk_ones_cpu, NULL, MTK_OP_CREATION, NULL)
MTK_OP(FULL, "full",
       "full(int[] size, Scalar fill_value, *, ScalarType? dtype=None, Device? device=None, "
       "bool requires_grad=False, Any? layout=None) -> Tensor",
       mtk_full_meta, mtk_full_cpu, NULL, MTK_OP_CREATION, NULL)
MTK_OP(ARANGE, "arange",
       "arange(Scalar start=None, Scalar end=None, Scalar step=None, *, ScalarType? dtype=None, "
       "Device? device=None, bool requires_grad=False, Any? layout=None) -> Tensor",
       mtk_arange_meta, mtk_arange_cpu, NULL, MTK_OP_CREATION, NULL)
MTK_OP(LINSPACE, "linspace",
       "linspace(Tensor|Scalar start, Tensor|Scalar end, int steps, *, ScalarType? dtype=None, Device? device=None, "
       "bool requires_grad=False, Any? layout=None) -> Tensor",
       mtk_linspace_meta, mtk_linspace_cpu, NULL, MTK_OP_CREATION, NULL)
MTK_OP(EYE, "eye",
       "eye(int n, int m=None, *, ScalarType? dtype=None, Device? device=None, bool requires_grad=False, Any? layout=None) -> Tensor",
       mtk_eye_meta, mtk_eye_cpu, NULL, MTK_OP_CREATION, NULL)
MTK_OP(EMPTY_LIKE, "empty_like",
       "empty_like(Tensor input, *, ScalarType? dtype=None, Device? device=None, bool requires_grad=False, "
       "Any? memory_format=None, Any? layout=None) -> Tensor",
       mtk_like_meta, mtk_empty_cpu, NULL, 0, NULL)
MTK_OP(ZEROS_LIKE, "zeros_like",
       "zeros_like(Tensor input, *, ScalarType? dtype=None, Device? device=None, bool requires_grad=False, "
       "Any? memory_format=None, Any? layout=None) -> Tensor",
       mtk_like_meta, mtk_zeros_cpu, NULL, 0, NULL)
MTK_OP(ONES_LIKE, "ones_like",
       "ones_like(Tensor input, *, ScalarType? dtype=None, Device? device=None, bool requires_grad=False, "
       "Any? memory_format=None, Any? layout=None) -> Tensor",
       mtk_like_meta, mtk_ones_cpu, NULL, 0, NULL)
MTK_OP(FULL_LIKE, "full_like",
       "full_like(Tensor input, Scalar fill_value, *, ScalarType? dtype=None, Device? device=None, "
       "bool requires_grad=False, Any? memory_format=None, Any? layout=None) -> Tensor",
       mtk_full_like_meta, mtk_full_like_cpu, NULL, 0, NULL)
