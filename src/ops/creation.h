/* The creation op family: meta/cpu/cost functions named by list_creation.h. */
#ifndef MTK_OPS_CREATION_H
#define MTK_OPS_CREATION_H

#include "mtk/op.h"

#endif
