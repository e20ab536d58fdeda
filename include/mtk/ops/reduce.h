/* Typed C API of the reduce ops.  Every function takes the context first,
 * returns NULL (error on the context) on failure, and passes a NULL tensor
 * argument through as NULL without a new error. */
#ifndef MTK_OPS_REDUCE_PUBLIC_H
#define MTK_OPS_REDUCE_PUBLIC_H

#include "mtk/core.h"

#ifdef __cplusplus
extern "C" {
#endif

#ifdef __cplusplus
}
#endif
#endif
