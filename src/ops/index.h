/* The index op family: meta/cpu/cost functions named by list_index.h. */
#ifndef MTK_OPS_INDEX_H
#define MTK_OPS_INDEX_H

#include "mtk/op.h"

#endif
