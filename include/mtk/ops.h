/* The typed C API of every op, by family.  The same ops are reachable by
 * name through the op table (mtk/op.h). */
#ifndef MTK_OPS_H
#define MTK_OPS_H

#include "mtk/ops/creation.h"
#include "mtk/ops/view.h"
#include "mtk/ops/elementwise.h"
#include "mtk/ops/linalg.h"
#include "mtk/ops/convert.h"
#include "mtk/ops/nn.h"
#include "mtk/ops/conv.h"
#include "mtk/ops/index.h"
#include "mtk/ops/reduce.h"

#endif
