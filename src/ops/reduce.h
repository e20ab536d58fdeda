/* The reduce op family: meta/cpu/cost functions named by list_reduce.h. */
#ifndef MTK_OPS_REDUCE_H
#define MTK_OPS_REDUCE_H

#include "mtk/op.h"

#endif
