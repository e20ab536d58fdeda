/* The graph's record (graph.c) and the helpers the analyses share. */
#ifndef MTK_PLAN_GRAPH_H
#define MTK_PLAN_GRAPH_H

#include "mtk/nn.h"
#include "mtk/op.h"
#include "mtk/plan.h"
#include "nn/ptrset.h"

struct mtk_graph {
    mtk_ctx *ctx;
    const mtk_trace *trace;
    mtk_device_kind device_kind;
    mtk_graph_node *nodes;
    int32_t nnodes;
    mtk_graph_tensor *tensors;
    int32_t ntensors, tensor_cap;
    mtk_graph_storage *storages;
    int32_t nstorages, storage_cap;
    ptrset ids;                 /* tensor pointer -> id + 1              */
    mtk_autograd_result scratch;/* the column functions' output         */
};

/* Bytes torch's allocator is asked for when t is made fresh: its extent,
 * itemsize x (offset + 1 + sum((size - 1) x stride)); 0 when empty. */
int64_t plan_tensor_extent_bytes(const mtk_tensor *t);

#endif
