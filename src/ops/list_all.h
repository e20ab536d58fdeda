/* Every op family's list, in table order.  No include guard: expanded once
 * per use of MTK_OP. */
#include "ops/list_creation.h"
#include "ops/list_view.h"
#include "ops/list_elementwise.h"
#include "ops/list_linalg.h"
#include "ops/list_convert.h"
#include "ops/list_reduce.h"
#include "ops/list_index.h"
#include "ops/list_conv.h"
#include "ops/list_nn.h"
