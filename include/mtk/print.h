/* Printing tensors the way PyTorch does. */
#ifndef MTK_PRINT_H
#define MTK_PRINT_H

#include "mtk/core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* PyTorch's repr of a tensor (torch 2.13, default print options), as a
 * NUL-terminated string in the context's arena.
 *
 * Meta: "tensor(..., device='meta', size=(3, 4))", with
 * ", dtype=torch.float16" when the dtype is not the context's default
 * dtype (int64 and bool included: there are no values to tell).
 * Cpu: the values as torch's _tensor_str formats them: integer-valued
 * floats as "1.", others with 4 decimals, scientific notation when the
 * nonzero finite magnitudes span more than 1000x, exceed 1e8 or go below
 * 1e-4; right-aligned columns, rows wrapped at 80 columns, nested brackets
 * with blank lines between blocks; tensors above 1000 elements summarized
 * with "..." (3 items at each edge).  ", dtype=torch.X" follows unless the
 * dtype is the default, int64 or bool; empty tensors show "[]" with their
 * size (unless 1-D) and any non-default dtype.  ", requires_grad=True"
 * for tensors with MTK_TENSOR_REQUIRES_GRAD.  Suffixes wrap as torch's.
 * NULL for a NULL tensor, or on out of memory (error set). */
MTK_API char *mtk_tensor_repr(mtk_ctx *ctx, const mtk_tensor *t);

#ifdef __cplusplus
}
#endif
#endif
