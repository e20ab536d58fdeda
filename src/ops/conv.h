/* The conv op family: meta/cpu/cost functions named by list_conv.h. */
#ifndef MTK_OPS_CONV_H
#define MTK_OPS_CONV_H

#include "mtk/op.h"

#endif
