/* Ternary point-wise ops: lerp(input, end, weight), addcmul and addcdiv
 * (input + value * tensor1 op tensor2), and glu(input, dim) (the halves
 * of input along dim: a * sigmoid(b)).
 *
 * PyTorch's rules, as its meta device and cpu kernels give them:
 *   lerp     end must have input's dtype ("expected dtype float for `end`
 *            but got dtype double"), and so must a weight tensor with
 *            dimensions; a 0-dim weight of any dtype is accepted and
 *            promotes with input and end; the cpu kernel takes float
 *            types only, the meta device any.
 *   addcmul  the three tensors promote (torch.result_type); the cpu
 *   addcdiv  kernels refuse bool; addcdiv refuses two integral divisor
 *            operands ("Integer division with addcdiv is no longer
 *            supported ...").
 *   glu      dim's size must be even ("Halving dimension must be even,
 *            but dimension 0 is size 3"), never a 0-dim input; float
 *            types only on cpu.
 * Output strides: the element-wise rule (mtk_ti_output_strides) over the
 * operands (addcmul/addcdiv: after converting those of another dtype, as
 * TensorIterator does); on cpu torch's cpu TensorIterator rule over the
 * converted operands (ew_lay_iter), for glu over its two halves; glu on
 * meta replays torch's reference (glu_meta_layout). */
#include "ops/elementwise_kernel.h"
#include "ops/registry.h"
#include "mtk/ops/elementwise.h"

#include <math.h>
#include <string.h>

/* The shape every operand broadcasts to; false with the error set. */
static bool broadcast_all(mtk_op_call *call, mtk_tensor *const *ops, int32_t n, int64_t *shape, int32_t *ndim)
{
    *ndim = ops[0]->ndim;
    memcpy(shape, ops[0]->shape, (size_t)*ndim * sizeof *shape);
    for (int32_t i = 1; i < n; i++) {
        int64_t next[MTK_MAX_DIMS];
        if (!mtk_broadcast_shapes(call->ctx, call->op->name, shape, *ndim, ops[i]->shape, ops[i]->ndim, next, ndim))
            return false;
        memcpy(shape, next, (size_t)*ndim * sizeof *shape);
    }
    return true;
}

/* The output over `ops` (numbers wrapped as 0-dim cpu tensors). */
static bool set_pointwise_output(mtk_op_call *call, mtk_tensor *const *ops, int32_t n, mtk_dtype dtype)
{
    int64_t shape[MTK_MAX_DIMS];
    int32_t ndim;
    if (!broadcast_all(call, ops, n, shape, &ndim)) return false; /* the error; ew_lay_elem broadcasts too */
    ew_lay lays[EW_MAX_LAY];
    for (int32_t i = 0; i < n; i++) lays[i] = ew_lay_of(ops[i], call->device);
    /* on cpu torch's TensorIterator converts operands of another dtype */
    ew_lay out = call->device == MTK_DEVICE_CPU ? ew_lay_iter_to(n, lays, dtype) : ew_lay_elem(n, lays);
    return ew_set_output(call, dtype, &out);
}

/* ------------------------------------------------------------------ lerp */

/* PyTorch's lerp: exact at both ends, w < 0.5 from the start, else from
 * the end. */
#define LERP(a, b, w) (fabs((double)(w)) < 0.5 ? (a) + (w) * ((b) - (a)) : (b) - ((b) - (a)) * (1 - (w)))

static void lerp_f32(float *o, const float *const *in, int64_t n, ew_params *p)
{
    const float *a = in[0], *b = in[1], *w = in[2];
    (void)p;
    for (int64_t j = 0; j < n; j++) o[j] = fabsf(w[j]) < 0.5f ? a[j] + w[j] * (b[j] - a[j]) : b[j] - (b[j] - a[j]) * (1.0f - w[j]);
}

static void lerp_f64(double *o, const double *const *in, int64_t n, ew_params *p)
{
    const double *a = in[0], *b = in[1], *w = in[2];
    (void)p;
    for (int64_t j = 0; j < n; j++) o[j] = LERP(a[j], b[j], w[j]);
}

static void lerp_scalar_f32(float *o, const float *const *in, int64_t n, ew_params *p)
{
    const float *a = in[0], *b = in[1];
    float w = (float)p->f[0];
    for (int64_t j = 0; j < n; j++) o[j] = fabsf(w) < 0.5f ? a[j] + w * (b[j] - a[j]) : b[j] - (b[j] - a[j]) * (1.0f - w);
}

static void lerp_scalar_f64(double *o, const double *const *in, int64_t n, ew_params *p)
{
    const double *a = in[0], *b = in[1];
    double w = p->f[0];
    for (int64_t j = 0; j < n; j++) o[j] = LERP(a[j], b[j], w);
}

static const ew_fns lerp_fns = { lerp_f32, lerp_f64, NULL };
static const ew_fns lerp_scalar_fns = { lerp_scalar_f32, lerp_scalar_f64, NULL };

static bool lerp_check(mtk_op_call *call, const mtk_tensor *input, const mtk_tensor *end, const mtk_value *weight)
{
    bool meta = call->device == MTK_DEVICE_META;
    if (end->dtype != input->dtype)
        return mtk_call_error(call, MTK_ERR_DTYPE, "expected dtype %s for `end` but got dtype %s",
                              meta ? mtk_dtype_name(input->dtype) : mtk_dtype_cpp_name(input->dtype),
                              meta ? mtk_dtype_name(end->dtype) : mtk_dtype_cpp_name(end->dtype));
    if (weight->kind == MTK_VALUE_TENSOR && weight->as.tensor->ndim != 0 && weight->as.tensor->dtype != input->dtype)
        return mtk_call_error(call, MTK_ERR_DTYPE, "expected dtype %s for `weight` but got dtype %s",
                              mtk_dtype_name(input->dtype), mtk_dtype_name(weight->as.tensor->dtype));
    return true;
}

/* The result dtype: input's, unless a 0-dim weight tensor of a higher
 * category promotes it (lerp(bool, bool, f32[]) is float32); a number
 * weight never does. */
static mtk_dtype lerp_dtype(mtk_op_call *call)
{
    int32_t n = call->args[2].kind == MTK_VALUE_TENSOR ? 3 : 2;
    return call->device == MTK_DEVICE_META ? mtk_meta_result_type(call->ctx, call->args, n)
                                           : mtk_result_type(call->ctx, call->args, n);
}

bool mtk_ew_lerp_meta(mtk_op_call *call)
{
    mtk_tensor *input = call->args[0].as.tensor, *end = call->args[1].as.tensor;
    const mtk_value *weight = &call->args[2];
    if (!lerp_check(call, input, end, weight)) return false;
    mtk_dtype dtype = lerp_dtype(call);
    if (dtype == MTK_DTYPE_UNDEFINED) return false;
    mtk_tensor *ops[3] = { input, end, NULL };
    int32_t n = 2;
    if (weight->kind == MTK_VALUE_TENSOR) ops[n++] = weight->as.tensor;
    return set_pointwise_output(call, ops, n, dtype);
}

bool mtk_ew_lerp_cpu(mtk_op_call *call)
{
    mtk_tensor *input = call->args[0].as.tensor, *end = call->args[1].as.tensor;
    const mtk_value *weight = &call->args[2];
    bool scalar = weight->kind != MTK_VALUE_TENSOR;
    mtk_dtype dtype = call->out[0]->dtype;
    if (lerp_dtype(call) == MTK_DTYPE_UNDEFINED) return false; /* float8 mixes */
    if (!ew_check_cpu_dtype(call, scalar ? "lerp_kernel_scalar" : "lerp_kernel_tensor", EW_FLOATS, dtype))
        return false;
    ew_params params;
    memset(&params, 0, sizeof params);
    if (scalar) {
        params.f[0] = mtk_value_as_double(weight);
        const mtk_tensor *ins[2] = { input, end };
        ew_run(call->out[0], ins, 2, dtype, &lerp_scalar_fns, &params, 0);
    } else {
        const mtk_tensor *ins[3] = { input, end, weight->as.tensor };
        ew_run(call->out[0], ins, 3, dtype, &lerp_fns, &params, 0);
    }
    return true;
}

/* ----------------------------------------------------- addcmul, addcdiv */

/* out = self + value * t1 * t2 (addcmul) or self + value * t1 / t2 */
static void addcmul_f32(float *o, const float *const *in, int64_t n, ew_params *p)
{
    float v = (float)p->f[0];
    for (int64_t j = 0; j < n; j++) o[j] = in[0][j] + v * in[1][j] * in[2][j];
}

static void addcmul_f64(double *o, const double *const *in, int64_t n, ew_params *p)
{
    double v = p->f[0];
    for (int64_t j = 0; j < n; j++) o[j] = in[0][j] + v * in[1][j] * in[2][j];
}

static void addcmul_i64(int64_t *o, const int64_t *const *in, int64_t n, ew_params *p)
{
    int64_t v = p->i[0];
    for (int64_t j = 0; j < n; j++) o[j] = ew_wrap_add(in[0][j], ew_wrap_mul(ew_wrap_mul(v, in[1][j]), in[2][j]));
}

static void addcdiv_f32(float *o, const float *const *in, int64_t n, ew_params *p)
{
    float v = (float)p->f[0];
    for (int64_t j = 0; j < n; j++) o[j] = in[0][j] + v * in[1][j] / in[2][j];
}

static void addcdiv_f64(double *o, const double *const *in, int64_t n, ew_params *p)
{
    double v = p->f[0];
    for (int64_t j = 0; j < n; j++) o[j] = in[0][j] + v * in[1][j] / in[2][j];
}

static const ew_fns addcmul_fns = { addcmul_f32, addcmul_f64, addcmul_i64 };
static const ew_fns addcdiv_fns = { addcdiv_f32, addcdiv_f64, NULL };

static bool is_addcdiv(const mtk_op_call *call) { return strcmp(call->op->name, "addcdiv") == 0; }

/* The three tensors and their common dtype; the integer-division check. */
static mtk_dtype addc_dtype(mtk_op_call *call, mtk_tensor **ops)
{
    for (int32_t i = 0; i < 3; i++) ops[i] = call->args[i].as.tensor;
    bool with_bool = call->device != MTK_DEVICE_META; /* the meta check leaves bool out, the cpu one not */
    if (is_addcdiv(call) && mtk_dtype_is_integral(ops[1]->dtype, with_bool) &&
        mtk_dtype_is_integral(ops[2]->dtype, with_bool)) {
        mtk_call_error(call, MTK_ERR_DTYPE,
                       "Integer division with addcdiv is no longer supported, and in a future release addcdiv will "
                       "perform a true division of tensor1 and tensor2. The historic addcdiv behavior can be "
                       "implemented as (input + value * torch.trunc(tensor1 / tensor2)).to(input.dtype) for integer "
                       "inputs and as (input + value * tensor1 / tensor2) for float inputs. The future addcdiv "
                       "behavior is just the latter implementation: (input + value * tensor1 / tensor2), for all "
                       "dtypes.");
        return MTK_DTYPE_UNDEFINED;
    }
    mtk_value v[3] = { call->args[0], call->args[1], call->args[2] };
    return call->device == MTK_DEVICE_META ? mtk_meta_result_type(call->ctx, v, 3) : mtk_result_type(call->ctx, v, 3);
}

bool mtk_ew_addc_meta(mtk_op_call *call)
{
    mtk_tensor *ops[3];
    mtk_dtype dtype = addc_dtype(call, ops);
    if (dtype == MTK_DTYPE_UNDEFINED) return false;
    int64_t shape[MTK_MAX_DIMS];
    int32_t ndim;
    if (!broadcast_all(call, ops, 3, shape, &ndim)) return false;
    /* TensorIterator first converts each operand of another dtype with
     * Tensor.to (dense strides kept, others made dense), then lays out */
    ew_lay lays[3];
    for (int32_t i = 0; i < 3; i++) lays[i] = ew_lay_to(ew_lay_of(ops[i], call->device), ops[i]->dtype != dtype);
    ew_lay out = call->device == MTK_DEVICE_CPU ? ew_lay_iter(3, lays) : ew_lay_elem(3, lays);
    return ew_set_output(call, dtype, &out);
}

bool mtk_ew_addc_cpu(mtk_op_call *call)
{
    mtk_tensor *ops[3];
    mtk_dtype dtype = addc_dtype(call, ops);
    if (dtype == MTK_DTYPE_UNDEFINED) return false;
    bool div = is_addcdiv(call);
    if (!ew_check_cpu_dtype(call, div ? "addcdiv_cpu_out" : "addcmul_cpu_out", EW_INTS | EW_FLOATS, dtype)) return false;
    if (!ew_number_fits(call, &call->args[3], dtype)) return false; /* value is cast to the result's type */
    ew_params params;
    memset(&params, 0, sizeof params);
    ew_param_set(&params, 0, &call->args[3]);
    const mtk_tensor *ins[3] = { ops[0], ops[1], ops[2] };
    if (!ew_run(call->out[0], ins, 3, dtype, div ? &addcdiv_fns : &addcmul_fns, &params, 0))
        return mtk_call_error(call, MTK_ERR_DTYPE, "%s has no kernel for %s", call->op->name, mtk_dtype_name(dtype));
    return true;
}

/* ------------------------------------------------------------------- glu */

static void glu_f32(float *o, const float *const *in, int64_t n, ew_params *p)
{
    (void)p;
    for (int64_t j = 0; j < n; j++) o[j] = in[0][j] * (1.0f / (1.0f + expf(-in[1][j])));
}

static void glu_f64(double *o, const double *const *in, int64_t n, ew_params *p)
{
    (void)p;
    for (int64_t j = 0; j < n; j++) o[j] = in[0][j] * (1.0 / (1.0 + exp(-in[1][j])));
}

static const ew_fns glu_fns = { glu_f32, glu_f64, NULL };

/* The two halves of input along dim (views; metadata only). */
static bool glu_halves(mtk_op_call *call, mtk_tensor *halves)
{
    const mtk_tensor *x = call->args[0].as.tensor;
    if (x->ndim == 0)
        return mtk_call_error(call, MTK_ERR_SHAPE, "glu does not support scalars because halving size must be even");
    int32_t dim = mtk_wrap_dim(call->ctx, arg_int(call, 1), x->ndim);
    if (dim < 0) return false;
    if (x->shape[dim] % 2 != 0)
        return mtk_call_error(call, MTK_ERR_SHAPE, "Halving dimension must be even, but dimension %d is size %lld",
                              (int)dim, (long long)x->shape[dim]);
    for (int32_t h = 0; h < 2; h++) {
        halves[h] = *x;
        halves[h].shape[dim] = x->shape[dim] / 2;
        if (!ops_offset_of(call, x->storage_offset, h * (x->shape[dim] / 2), x->stride[dim], &halves[h].storage_offset))
            return false;
    }
    return true;
}

/* glu's layout on the meta device, where torch runs its Python reference
 * in the input's computation dtype: the input converted to it (float16/
 * bfloat16 to float32), split in halves b and c, b * sigmoid(c) (sigmoid
 * of an integral c is float32), then the result converted back to the
 * input's dtype. */
static ew_lay glu_meta_layout(mtk_ctx *ctx, const mtk_tensor *x, int32_t dim)
{
    mtk_dtype dtype = x->dtype;
    mtk_dtype compute = ew_opmath(dtype);
    ew_lay converted = ew_lay_convert(ew_lay_of(x, MTK_DEVICE_META), compute != dtype);
    converted.t.dtype = compute;
    ew_lay b = converted, c = converted;
    b.t.shape[dim] = c.t.shape[dim] = x->shape[dim] / 2;
    mtk_dtype sigmoid_dtype = mtk_dtype_is_integral(compute, true) ? mtk_ctx_dtype(ctx) : compute;
    ew_lay s = ew_lay_unary(EW_R_EMPTY_LIKE, c, ew_opmath(sigmoid_dtype));
    s.t.dtype = sigmoid_dtype;
    ew_lay product = ew_lay_binary(EW_R_PRIM, b, s, ew_opmath(sigmoid_dtype), NULL);
    product.t.dtype = sigmoid_dtype;
    return ew_lay_convert(product, sigmoid_dtype != dtype);
}

bool mtk_ew_glu_meta(mtk_op_call *call)
{
    mtk_tensor halves[2];
    if (!glu_halves(call, halves)) return false;
    if (call->device == MTK_DEVICE_META) {
        const mtk_tensor *x = call->args[0].as.tensor;
        ew_lay out = glu_meta_layout(call->ctx, x, mtk_wrap_dim(call->ctx, arg_int(call, 1), x->ndim));
        return ew_set_output(call, x->dtype, &out);
    }
    /* cpu: one TensorIterator over the two halves */
    mtk_tensor *ops[2] = { &halves[0], &halves[1] };
    return set_pointwise_output(call, ops, 2, halves[0].dtype);
}

bool mtk_ew_glu_cpu(mtk_op_call *call)
{
    mtk_tensor halves[2];
    if (!glu_halves(call, halves)) return false;
    if (!ew_check_cpu_dtype(call, "glu_cpu", EW_FLOATS, halves[0].dtype)) return false;
    ew_params params;
    memset(&params, 0, sizeof params);
    const mtk_tensor *ins[2] = { &halves[0], &halves[1] };
    ew_run(call->out[0], ins, 2, halves[0].dtype, &glu_fns, &params, 0);
    return true;
}

/* ------------------------------------------------------------------ C API */

static mtk_tensor *run(mtk_ctx *ctx, mtk_op_id id, const mtk_value *args, int32_t n)
{
    mtk_op_call call;
    mtk_op_call_init(&call, ctx, mtk_op_by_id(id));
    for (int32_t i = 0; i < n; i++) {
        if (args[i].kind == MTK_VALUE_TENSOR && !args[i].as.tensor) return NULL;
        call.args[i] = args[i];
    }
    return mtk_op_run_tensor(&call);
}

mtk_tensor *mtk_lerp(mtk_ctx *ctx, mtk_tensor *input, mtk_tensor *end, mtk_value weight)
{
    mtk_value args[3] = { mtk_value_tensor(input), mtk_value_tensor(end), weight };
    return run(ctx, OPID_LERP, args, 3);
}

mtk_tensor *mtk_addcmul(mtk_ctx *ctx, mtk_tensor *input, mtk_tensor *tensor1, mtk_tensor *tensor2, mtk_value value)
{
    mtk_value args[4] = { mtk_value_tensor(input), mtk_value_tensor(tensor1), mtk_value_tensor(tensor2), value };
    return run(ctx, OPID_ADDCMUL, args, 4);
}

mtk_tensor *mtk_addcdiv(mtk_ctx *ctx, mtk_tensor *input, mtk_tensor *tensor1, mtk_tensor *tensor2, mtk_value value)
{
    mtk_value args[4] = { mtk_value_tensor(input), mtk_value_tensor(tensor1), mtk_value_tensor(tensor2), value };
    return run(ctx, OPID_ADDCDIV, args, 4);
}

mtk_tensor *mtk_glu(mtk_ctx *ctx, mtk_tensor *input, int64_t dim)
{
    mtk_value args[2] = { mtk_value_tensor(input), mtk_value_int(dim) };
    return run(ctx, OPID_GLU, args, 2);
}
