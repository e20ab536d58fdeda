/* Declarations of each op family's meta/cpu/cost functions and info
 * objects, so the registry can name them. */
#ifndef MTK_OPS_FAMILIES_H
#define MTK_OPS_FAMILIES_H

#include "ops/op_util.h" /* mtk_outputs_cost, the cost of many rows */
#include "ops/creation.h"
#include "ops/view.h"
#include "ops/elementwise.h"
#include "ops/linalg.h"
#include "ops/convert.h"
#include "ops/nn.h"
#include "ops/conv.h"
#include "ops/index.h"
#include "ops/reduce.h"
#include "ops/autograd.h"

#endif
