/* Device layouts: where the device's kernels lay an output out unlike
 * torch's meta device (which the trace records), the graph gives the
 * tensor the device's strides and replays the meta functions of the ops
 * that read it, so that views and copies downstream are the device's.
 *
 * Three sources today:
 *   rope   transformers computes it as x * cos + rotate_half(x) * sin,
 *          element-wise ops whose result takes x's dim order (mtk's op
 *          returns a contiguous tensor): after q.transpose(1, 2) the
 *          rotated q is (B, S, H, D) in memory; rope_complex too (llama4's
 *          complex product, element-wise on q's pairs);
 *   rms_norm  likewise weight * (x * rsqrt(mean(x^2) + eps)): a q/k norm
 *          over head_dim after the transpose keeps (B, S, H, D);
 *   sdpa   the flash and efficient kernels allocate the output in the
 *          query's dim order (the math path, and meta, give contiguous),
 *          so attn.transpose(1, 2).reshape(B, S, H * D) is a view. */
#include "plan/graph.h"

#include "ops/autograd.h"

#include <string.h>

/* A dense layout with t's dim order (strides sorted decreasing; ties and
 * size-1 dims keep their place), as empty_like / TensorIterator give. */
static void dense_like(const mtk_tensor *t, int64_t *stride)
{
    int32_t order[MTK_MAX_DIMS], n = t->ndim;
    for (int32_t i = 0; i < n; i++) order[i] = i;
    /* insertion sort, outermost first: larger stride first */
    for (int32_t i = 1; i < n; i++) {
        int32_t d = order[i], j = i;
        while (j > 0 && t->shape[d] != 1 && t->shape[order[j - 1]] != 1 && t->stride[order[j - 1]] < t->stride[d]) {
            order[j] = order[j - 1];
            j--;
        }
        order[j] = d;
    }
    int64_t s = 1;
    for (int32_t i = n - 1; i >= 0; i--) {
        stride[order[i]] = s;
        s *= t->shape[order[i]] > 1 ? t->shape[order[i]] : 1;
    }
}

static bool same_strides(const mtk_tensor *a, const int64_t *stride)
{
    for (int32_t d = 0; d < a->ndim; d++)
        if (a->shape[d] > 1 && a->stride[d] != stride[d]) return false;
    return true;
}

mtk_tensor *plan_device_layout(mtk_graph *g, const mtk_op_def *op, const mtk_autograd_query *q, int32_t output,
                               mtk_tensor *out)
{
    if (!op || output != 0 || !out) return NULL;
    const mtk_tensor *like = NULL;
    if (strcmp(op->name, "rope") == 0 || strcmp(op->name, "rope_complex") == 0 || strcmp(op->name, "rms_norm") == 0) {
        like = ag_arg(q, 0);
    } else if (strcmp(op->name, "scaled_dot_product_attention") == 0) {
        if (ag_sdpa_kernel_of(q) != AG_SDPA_MATH) like = ag_arg(q, 0);
    }
    if (!like || like->ndim != out->ndim || memcmp(like->shape, out->shape, (size_t)out->ndim * sizeof *out->shape))
        return NULL;
    int64_t stride[MTK_MAX_DIMS];
    dense_like(like, stride);
    if (same_strides(out, stride)) return NULL;
    mtk_tensor *t = mtk_ctx_alloc(g->ctx, sizeof *t);
    if (!t) return NULL;
    *t = *out;
    memcpy(t->stride, stride, (size_t)t->ndim * sizeof *stride);
    return t;
}

/* Copies v with every tensor in it replaced by the graph's geometry. */
static bool relaid_value(mtk_graph *g, const mtk_value *v, mtk_value *out)
{
    *out = *v;
    if (v->kind == MTK_VALUE_TENSOR && v->as.tensor) {
        int32_t id = mtk_graph_tensor_id(g, v->as.tensor);
        if (id >= 0) out->as.tensor = g->tensors[id].tensor;
    } else if ((v->kind == MTK_VALUE_LIST || v->kind == MTK_VALUE_TUPLE) && v->as.list.count > 0) {
        mtk_value *items = mtk_ctx_alloc(g->ctx, (size_t)v->as.list.count * sizeof *items);
        if (!items) return false;
        for (int32_t i = 0; i < v->as.list.count; i++)
            if (!relaid_value(g, &v->as.list.items[i], &items[i])) return false;
        out->as.list.items = items;
    }
    return true;
}

bool plan_replay_meta(mtk_graph *g, const mtk_trace_op *op, mtk_tensor **out, int8_t *view_of)
{
    if (!op->def || !op->def->meta || op->noutputs <= 0) return false;
    mtk_ctx *ctx = g->ctx;
    mtk_op_call call;
    mtk_op_call_init(&call, ctx, op->def);
    call.nargs = op->nargs;
    for (int32_t i = 0; i < op->nargs; i++)
        if (!relaid_value(g, &op->args[i], &call.args[i])) return false;
    call.device = MTK_DEVICE_META;
    bool was_ok = mtk_ctx_status(ctx) == MTK_OK;
    bool ok = op->def->meta(&call) && call.nout == op->noutputs;
    if (!ok) {
        if (was_ok) mtk_ctx_clear_error(ctx);
        return false;
    }
    for (int32_t i = 0; i < call.nout; i++) {
        if (!call.out[i]) return false;
        out[i] = call.out[i];
        view_of[i] = call.out_view_of ? call.out_view_of[i] : -1;
    }
    return true;
}
