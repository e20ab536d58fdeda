/*
 * mtk — meta tensor kit: tensors and models without their data.
 * The umbrella header: include this one.
 */
#ifndef MTK_MTK_H
#define MTK_MTK_H

#include "mtk/core.h"
#include "mtk/value.h"
#include "mtk/op.h"
#include "mtk/plan.h"
#include "mtk/ops.h"
#include "mtk/print.h"
#include "mtk/eval.h"
#include "mtk/nn.h"
#include "mtk/io.h"
#include "mtk/models.h"
#include "mtk/load.h"
#include "mtk/run.h"
#include "mtk/stream.h"
#include "mtk/diffusion.h"

#endif
