/* The op table's rows come from the per-family lists (list_*.h).  Each
 * list row is
 *   MTK_OP(ID, "name", "signature", meta, cpu, cost, flags, info)
 * ID becomes OPID_<ID>; op families call their own rows through
 * mtk_op_by_id().  Adding an op touches its family's list and .c only. */
#ifndef MTK_OPS_REGISTRY_H
#define MTK_OPS_REGISTRY_H

#include "mtk/op.h"
#include "ops/families.h"

typedef enum mtk_op_id {
#define MTK_OP(ID, name, sig, meta, cpu, cost, flags, info) OPID_##ID,
#include "ops/list_all.h"
#undef MTK_OP
    OPID_COUNT
} mtk_op_id;

/* The row of an op id (never NULL for a valid id). */
const mtk_op_def *mtk_op_by_id(mtk_op_id id);

/* Runs a typed call of `id` whose args the caller filled (nargs set by
 * mtk_op_call_init from the signature); returns the single tensor result
 * or NULL with the context's error set. */
mtk_tensor *mtk_op_run_tensor(mtk_op_call *call);

#endif
