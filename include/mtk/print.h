/* Printing tensors the way PyTorch does. */
#ifndef MTK_PRINT_H
#define MTK_PRINT_H

#include "mtk/core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* PyTorch's repr of a tensor, as a NUL-terminated string in the context's
 * arena.  Meta: "tensor(..., device='meta', size=(3, 4))", with
 * ", dtype=torch.float16" when the dtype is not the default float32.  Cpu:
 * the values as torch prints them ("tensor([[0., 1.],\n        [2., 3.]])").
 * NULL on out of memory. */
char *mtk_tensor_repr(mtk_ctx *ctx, const mtk_tensor *t);

#ifdef __cplusplus
}
#endif
#endif
