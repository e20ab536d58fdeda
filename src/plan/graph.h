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

/* The device's layout of output `output` of a node where its kernel lays
 * it out unlike meta (layout.c: rope, sdpa's fused kernels): a copy of
 * `out` with the device's strides, or NULL when they agree. */
mtk_tensor *plan_device_layout(mtk_graph *g, const mtk_op_def *op, const mtk_autograd_query *q, int32_t output,
                               mtk_tensor *out);

/* Runs op's meta function again on the graph's geometry of its inputs
 * (some laid out by the device); out/view_of get the outputs.  False
 * (nothing changed, no error left) when it cannot. */
bool plan_replay_meta(mtk_graph *g, const mtk_trace_op *op, mtk_tensor **out, int8_t *view_of);

#endif
