/* mtk eval: a Python-compatible expression language over the op table. */
#ifndef MTK_EVAL_H
#define MTK_EVAL_H

#include "mtk/core.h"
#include "mtk/value.h"

#ifdef __cplusplus
extern "C" {
#endif

#ifdef __cplusplus
}
#endif
#endif
