/* The elementwise op family: meta/cpu/cost functions named by list_elementwise.h. */
#ifndef MTK_OPS_ELEMENTWISE_H
#define MTK_OPS_ELEMENTWISE_H

#include "mtk/op.h"

#endif
