/* The output strides of F.interpolate.
 *
 * On cpu torch's upsample kernels allocate their result fresh in
 * input.suggest_memory_format().  On meta the nearest and antialias ops
 * have meta functions that do the same (the 2-D nearest one through
 * .contiguous(format), which keeps contiguous strides that already count
 * as channels-last), while the linear and cubic modes run torch's Python
 * decompositions: float16/bfloat16 inputs are first converted to float32
 * (Tensor.to), the input is gathered at the source positions (aten.index,
 * whose meta function lays the result out by the input's batch and
 * channel strides), the gathers are blended by element-wise arithmetic
 * with 1-D weight vectors (each op laid out by torch._prims' rule), and
 * the blend ends in .contiguous(suggest_memory_format(input)) (then, for
 * integer inputs of the linear modes, round()).  Size-1 dims and layouts
 * that are both contiguous and channels-last make the chain show through
 * that last step, so it is replayed here on layouts (ew_lay,
 * elementwise_layout.c). */
#include "ops/interp_layout.h"
#include "ops/elementwise_kernel.h"
#include "ops/op_util.h"

#include <string.h>

/* a fresh meta tensor's layout: contiguous strides unless given */
static ew_lay lay_new(mtk_dtype dtype, const int64_t *shape, int32_t ndim, const int64_t *stride)
{
    ew_lay l;
    memset(&l, 0, sizeof l);
    l.kind = EW_LAY_TENSOR;
    l.t.dtype = dtype;
    l.t.device = MTK_DEVICE_META;
    l.t.ndim = ndim;
    memcpy(l.t.shape, shape, (size_t)ndim * sizeof *shape);
    if (stride) memcpy(l.t.stride, stride, (size_t)ndim * sizeof *stride);
    else mtk_contiguous_strides(shape, ndim, l.t.stride);
    return l;
}

/* a 0-dim tensor on meta (it takes part in the stride rule, expanded) */
static ew_lay lay_scalar(mtk_dtype dtype)
{
    ew_lay l = ew_lay_scalar();
    l.t.dtype = dtype;
    return l;
}

static ew_lay lay_cast(ew_lay a, mtk_dtype dtype)
{
    ew_lay r = ew_lay_to(a, a.t.dtype != dtype);
    r.t.dtype = dtype;
    return r;
}

static ew_lay lay_binary(ew_lay a, ew_lay b)
{
    return ew_lay_binary(EW_R_PRIM, a, b, a.t.dtype, NULL);
}

/* The weight vector of spatial dim i of n: shape [out, 1, ...] with a 1
 * for each later dim, contiguous. */
static ew_lay weight_vector(mtk_dtype dtype, int64_t out, int32_t i, int32_t n)
{
    int64_t shape[3] = { out, 1, 1 };
    return lay_new(dtype, shape, n - i, NULL);
}

/* aten.index(x, [None, None, idx...]) with index tensors broadcasting to
 * the output's spatial sizes: the meta function's layout.  An empty x
 * gives contiguous strides; otherwise x with its spatial dims replaced by
 * the output's at stride 0 orders the dims (torch._prims' permutation)
 * and the result is dense in that order. */
static ew_lay gather(const ew_lay *x, const mtk_interp_plan *p)
{
    ew_lay r = lay_new(x->t.dtype, p->out_shape, p->out_ndim, NULL);
    if (mtk_tensor_numel(&x->t) == 0) return r;
    mtk_tensor restrided = r.t;
    restrided.stride[0] = x->t.stride[0];
    restrided.stride[1] = x->t.stride[1];
    for (int32_t i = 2; i < p->out_ndim; i++) restrided.stride[i] = 0;
    const mtk_tensor *ops[1] = { &restrided };
    mtk_ti_output_strides(ops, 1, r.t.shape, r.t.ndim, r.t.stride);
    return r;
}

/* _upsample_linear: the 2^n gathers (all laid out alike) are blended dim
 * by dim from the last, v1 + (v2 - v1) * weight. */
static ew_lay linear_chain(const ew_lay *x, const mtk_interp_plan *p, mtk_dtype compute)
{
    int32_t n = p->spatial;
    ew_lay v = lay_cast(gather(x, p), compute); /* prims.convert_element_type */
    for (int32_t i = n - 1; i >= 0; i--) {
        ew_lay w = weight_vector(compute, p->out_shape[2 + i], i, n);
        v = lay_binary(v, lay_binary(lay_binary(v, v), w));
    }
    return v;
}

/* sum of the four products src[k] * weight[k] (reduce(add)); uint8 in
 * int32 with the rounding offset and shift by 0-dim tensors, clamped to
 * [0, 255] and converted back */
static ew_lay cubic_sum(ew_lay src, ew_lay w, bool u8)
{
    if (u8) {
        src = lay_cast(src, MTK_INT32);
        w = lay_cast(w, MTK_INT32);
    }
    ew_lay term = lay_binary(src, w);
    ew_lay sum = lay_binary(term, term);
    sum = lay_binary(sum, term);
    sum = lay_binary(sum, term);
    if (!u8) return sum;
    sum = lay_binary(sum, lay_scalar(MTK_INT32));
    sum = lay_binary(sum, lay_scalar(MTK_INT32));
    ew_lay lo = ew_lay_number(), hi = ew_lay_number();
    sum = ew_lay_clamp(sum, &lo, &hi, MTK_INT32);
    return lay_cast(sum, MTK_UINT8);
}

/* upsample_bicubic2d: 4x4 gathers, blended along W by weights [ow], then
 * along H by weights [oh, 1] */
static ew_lay cubic_chain(const ew_lay *x, const mtk_interp_plan *p, mtk_dtype compute)
{
    bool u8 = x->t.dtype == MTK_UINT8;
    mtk_dtype wdtype = u8 ? MTK_INT16 : compute;
    ew_lay rows = cubic_sum(gather(x, p), weight_vector(wdtype, p->out_shape[3], 1, 2), u8);
    return cubic_sum(rows, weight_vector(wdtype, p->out_shape[2], 0, 2), u8);
}

/* result.contiguous(memory_format): kept when already in that format */
static void contiguous_in(ew_lay *r, bool channels_last)
{
    mtk_tensor *t = &r->t;
    if (channels_last) {
        bool already = t->ndim == 4 ? mtk_tensor_is_channels_last(t) : mtk_tensor_is_channels_last_3d(t);
        if (!already) mtk_channels_last_strides(t->shape, t->ndim, t->stride);
    } else if (!mtk_tensor_is_contiguous(t)) {
        mtk_contiguous_strides(t->shape, t->ndim, t->stride);
    }
}

/* the linear and cubic decompositions (pw_cast_for_opmath around them) */
static void decomposition_strides(const mtk_tensor *input, mtk_interp_plan *p)
{
    ew_lay x = ew_lay_of(input, MTK_DEVICE_META);
    mtk_dtype compute = ew_opmath(input->dtype);
    x = lay_cast(x, compute);
    mtk_dtype blend = mtk_dtype_is_floating(compute) ? compute : MTK_FLOAT32;
    bool cl = mtk_strides_suggest_channels_last(x.t.ndim, x.t.shape, x.t.stride);
    ew_lay r = p->mode == MTK_INTERP_BICUBIC ? cubic_chain(&x, p, blend) : linear_chain(&x, p, blend);
    contiguous_in(&r, cl);
    if (p->mode != MTK_INTERP_BICUBIC && !mtk_dtype_is_floating(input->dtype)) r = ew_lay_elem1(r); /* round() */
    r = ew_lay_to(r, r.t.dtype != input->dtype); /* back to the input's dtype */
    memcpy(p->out_stride, r.t.stride, sizeof p->out_stride);
}

void mtk_interp_output_strides(const mtk_tensor *input, bool for_cpu, mtk_interp_plan *p)
{
    bool cl = mtk_strides_suggest_channels_last(input->ndim, input->shape, input->stride);
    bool nearest = p->mode == MTK_INTERP_NEAREST || p->mode == MTK_INTERP_NEAREST_EXACT;
    if (!for_cpu && !nearest && !p->antialias) {
        decomposition_strides(input, p);
        return;
    }
    ew_lay r = lay_new(input->dtype, p->out_shape, p->out_ndim, NULL);
    /* the 2-D nearest meta function: new_empty(...).contiguous(format);
     * the others, and every cpu kernel: a fresh tensor in the format */
    if (!for_cpu && nearest && p->spatial == 2) contiguous_in(&r, cl);
    else if (cl) mtk_channels_last_strides(r.t.shape, r.t.ndim, r.t.stride);
    memcpy(p->out_stride, r.t.stride, sizeof p->out_stride);
}
