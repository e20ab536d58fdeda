/* The linalg op family: meta/cpu/cost functions named by list_linalg.h. */
#ifndef MTK_OPS_LINALG_H
#define MTK_OPS_LINALG_H

#include "mtk/op.h"

#endif
