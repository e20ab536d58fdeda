/* The convert op family: meta/cpu/cost functions named by list_convert.h. */
#ifndef MTK_OPS_CONVERT_H
#define MTK_OPS_CONVERT_H

#include "mtk/op.h"

#endif
