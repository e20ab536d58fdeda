/* The nn op family: meta/cpu/cost functions named by list_nn.h. */
#ifndef MTK_OPS_NN_H
#define MTK_OPS_NN_H

#include "mtk/op.h"

#endif
