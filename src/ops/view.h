/* The view op family: meta/cpu/cost functions named by list_view.h. */
#ifndef MTK_OPS_VIEW_H
#define MTK_OPS_VIEW_H

#include "mtk/op.h"

#endif
