/* Device and dtype transitions: to, type_as, to_empty, clone, copy_ and
 * item.  These are where meta tensors meet real ones, so their errors
 * keep PyTorch's words ("Cannot copy out of meta tensor; no data!") and
 * add what to do instead. */
#include "ops/convert.h"
#include "ops/creation.h"
#include "ops/op_util.h"
#include "ops/registry.h"
#include "core/scalar.h"
#include "mtk/ops/convert.h"

#include <stdio.h>
#include <string.h>

/* ----------------------------------------------------------- helpers */

static bool meta_copy_error(mtk_op_call *call)
{
    return mtk_call_error(call, MTK_ERR_META_NO_DATA, MTK_META_COPY_MESSAGE " " MTK_META_DATA_HINT);
}

static bool check_device_supported(mtk_op_call *call, mtk_device device)
{
    if (device == MTK_DEVICE_CPU || device == MTK_DEVICE_META) return true;
    char d[32];
    return mtk_call_error(call, MTK_ERR_DEVICE,
                          "device '%s' is not available: this build of mtk runs on cpu and meta",
                          mtk_device_str(device, d, sizeof d));
}

/* The memory format torch's suggest_memory_format reports. */
static mtk_memory_format suggested_format(const mtk_tensor *t)
{
    if (t->ndim == 4 && mtk_tensor_is_channels_last(t)) return MTK_MEMORY_FORMAT_CHANNELS_LAST;
    if (t->ndim == 5 && mtk_tensor_is_channels_last_3d(t)) return MTK_MEMORY_FORMAT_CHANNELS_LAST_3D;
    return MTK_MEMORY_FORMAT_CONTIGUOUS;
}

/* Strides of a fresh copy of `t` in `format`: preserve keeps dense strides
 * and otherwise orders dims as t's strides do (torch's _to_copy / clone /
 * empty_like). */
static bool copy_strides(mtk_op_call *call, const mtk_tensor *t, mtk_memory_format format, int64_t *stride)
{
    if (format == MTK_MEMORY_FORMAT_PRESERVE) {
        mtk_dense_strides_like(t, stride);
        return true;
    }
    return mtk_memory_format_strides(call, format, t->shape, t->ndim, stride);
}

/* Describes input converted to (dtype, device) as Tensor.to does: the
 * input itself when nothing changes and no copy is asked for; otherwise a
 * fresh tensor (meta -> real is the copy-out error). */
static bool describe_conversion(mtk_op_call *call, mtk_tensor *input, mtk_dtype dtype, mtk_device device,
                                bool copy, mtk_memory_format format)
{
    if (!mtk_call_set_outputs(call, 1)) return false;
    bool same_format = format == MTK_MEMORY_FORMAT_PRESERVE || suggested_format(input) == format;
    if (dtype == input->dtype && device == input->device && !copy && same_format) {
        mtk_call_output(call, 0, input, 0);
        return true;
    }
    if (input->device == MTK_DEVICE_META && device != MTK_DEVICE_META) return meta_copy_error(call);
    if (!check_device_supported(call, device)) return false;
    int64_t stride[MTK_MAX_DIMS];
    if (!copy_strides(call, input, format, stride)) return false;
    mtk_tensor *out = mtk_tensor_new(call->ctx, dtype, input->shape, input->ndim, stride, device);
    if (!out) return false;
    out->flags = input->flags & MTK_TENSOR_REQUIRES_GRAD;
    mtk_call_output(call, 0, out, -1);
    return true;
}

/* ------------------------------------------------------------------ to */

/* to's signature: input, four positional slots, then keywords. */
enum { TO_POS = 1, TO_NPOS = 4, TO_DEVICE = 5, TO_DTYPE, TO_NON_BLOCKING, TO_COPY, TO_FORMAT };

static bool invalid_to_call(mtk_op_call *call, int32_t npos)
{
    char got[160] = "";
    size_t len = 0;
    for (int32_t i = 0; i < npos && len < sizeof got; i++)
        len += (size_t)snprintf(got + len, sizeof got - len, "%s%s", i ? ", " : "",
                                mtk_value_type_name(&call->args[TO_POS + i]));
    return mtk_call_error(call, MTK_ERR_INVALID_ARGUMENT,
                          "to() received an invalid combination of arguments - got (%s), but expected "
                          "one of: (Device device=None, ScalarType dtype=None, bool non_blocking=False, "
                          "bool copy=False, *, memory_format=None) | (ScalarType dtype, bool "
                          "non_blocking=False, bool copy=False, *, memory_format=None) | (Tensor other, "
                          "bool non_blocking=False, bool copy=False, *, memory_format=None)",
                          got);
}

/* A device argument: a device, an accelerator index, or a string.  A
 * string naming an index of meta or cpu ("meta:0") sets *indexed: torch
 * then sees a device other than its tensors' (which have no index) and
 * copies. */
static bool read_device(mtk_op_call *call, const mtk_value *v, mtk_device *out, bool *indexed)
{
    if (v->kind == MTK_VALUE_DEVICE) { *out = v->as.device; return true; }
    if (v->kind == MTK_VALUE_INT && v->as.i >= 0) { *out = MTK_DEVICE_CUDA(v->as.i); return true; }
    if (v->kind == MTK_VALUE_STRING) {
        if (mtk_device_parse(v->as.s, out)) {
            *indexed |= strchr(v->as.s, ':') != NULL && (*out == MTK_DEVICE_META || *out == MTK_DEVICE_CPU);
            return true;
        }
        return mtk_call_error(call, MTK_ERR_DEVICE,
                              "Expected one of cpu, meta, cuda device type at start of device string: %s",
                              v->as.s);
    }
    return false;
}

static bool is_none_or(const mtk_value *v, mtk_value_kind kind)
{
    return v->kind == MTK_VALUE_NONE || v->kind == kind;
}

/* Sorts to()'s positional slots into its three overloads:
 *   to(dtype, non_blocking, copy), to(device, dtype, non_blocking, copy),
 *   to(other, non_blocking, copy); `other` may be a Python float or bool,
 *   which torch wraps into a cpu tensor (an int is a device index). */
bool mtk_to_meta(mtk_op_call *call)
{
    mtk_tensor *input = arg_tensor(call, 0);
    const mtk_value *pos = &call->args[TO_POS];
    int32_t npos = TO_NPOS;
    while (npos > 0 && pos[npos - 1].kind == MTK_VALUE_NONE) npos--;

    mtk_dtype dtype = input->dtype;
    mtk_device device = input->device;
    bool copy = arg_bool(call, TO_COPY);
    bool kw_device = !arg_is_none(call, TO_DEVICE), kw_dtype = !arg_is_none(call, TO_DTYPE);
    const mtk_value *flags = NULL; /* the positional non_blocking, copy */
    bool indexed = false;

    if (npos > 0 && (pos[0].kind == MTK_VALUE_FLOAT || pos[0].kind == MTK_VALUE_BOOL)) {
        if (npos > 3 || kw_device || kw_dtype) return invalid_to_call(call, npos);
        dtype = pos[0].kind == MTK_VALUE_BOOL ? MTK_BOOL : MTK_FLOAT64;
        device = MTK_DEVICE_CPU;
        flags = &pos[1];
    } else if (npos > 0 && pos[0].kind == MTK_VALUE_DTYPE) {
        if (npos > 3 || kw_device || kw_dtype) return invalid_to_call(call, npos);
        dtype = pos[0].as.dtype;
        flags = &pos[1];
    } else if (npos > 0 && pos[0].kind == MTK_VALUE_TENSOR) {
        if (npos > 3 || kw_device || kw_dtype) return invalid_to_call(call, npos);
        dtype = pos[0].as.tensor->dtype;
        device = pos[0].as.tensor->device;
        flags = &pos[1];
    } else if (npos > 0) {
        if (pos[0].kind != MTK_VALUE_NONE) {
            if (kw_device) return invalid_to_call(call, npos);
            if (!read_device(call, &pos[0], &device, &indexed))
                return mtk_ctx_status(call->ctx) == MTK_OK ? invalid_to_call(call, npos) : false;
        }
        if (!is_none_or(&pos[1], MTK_VALUE_DTYPE) || (pos[1].kind == MTK_VALUE_DTYPE && kw_dtype))
            return invalid_to_call(call, npos);
        if (pos[1].kind == MTK_VALUE_DTYPE) dtype = pos[1].as.dtype;
        flags = &pos[2];
    }
    if (flags) {
        int32_t nflags = (int32_t)(&pos[TO_NPOS] - flags);
        for (int32_t i = 0; i < nflags; i++)
            if (!is_none_or(&flags[i], MTK_VALUE_BOOL) || (i >= 2 && flags[i].kind != MTK_VALUE_NONE))
                return invalid_to_call(call, npos);
        if (nflags > 1 && flags[1].kind == MTK_VALUE_BOOL) copy = copy || flags[1].as.b;
    }
    if (kw_device && !read_device(call, &call->args[TO_DEVICE], &device, &indexed))
        return mtk_ctx_status(call->ctx) == MTK_OK ? invalid_to_call(call, npos) : false;
    copy = copy || indexed;
    if (kw_dtype) dtype = call->args[TO_DTYPE].as.dtype;

    mtk_memory_format format;
    if (!mtk_memory_format_arg(call, TO_FORMAT, MTK_MEMORY_FORMAT_PRESERVE, &format)) return false;
    return describe_conversion(call, input, dtype, device, copy, format);
}

/* type_as(other): to(other's dtype and device). */
bool mtk_type_as_meta(mtk_op_call *call)
{
    const mtk_tensor *other = arg_tensor(call, 1);
    return describe_conversion(call, arg_tensor(call, 0), other->dtype, other->device, false,
                               MTK_MEMORY_FORMAT_PRESERVE);
}

/* to, type_as and clone on cpu: copy (converting) into the fresh output. */
bool mtk_convert_copy_cpu(mtk_op_call *call)
{
    mtk_tensor *input = arg_tensor(call, 0), *out = call->out[0];
    if (out != input) mtk_copy_strided(out, input);
    return true;
}

/* ------------------------------------------------------ to_empty, clone */

/* to_empty(device=): same shape and dtype, uninitialized memory on the
 * device (none on meta), with the strides of torch.empty_like(input,
 * device=device): for a meta input torch runs its reference, whose
 * strides follow the element-wise rule (contiguous when the input is, a
 * size-0 tensor included); for a real one its kernel, which keeps
 * non-overlapping dense strides.  No kernel: the dispatcher allocates
 * the cpu storage. */
bool mtk_to_empty_meta(mtk_op_call *call)
{
    const mtk_tensor *input = arg_tensor(call, 0);
    mtk_device device = call->args[1].as.device;
    if (!check_device_supported(call, device)) return false;
    int64_t stride[MTK_MAX_DIMS];
    if (input->device == MTK_DEVICE_META) mtk_ti_output_strides(&input, 1, input->shape, input->ndim, stride);
    else mtk_dense_strides_like(input, stride);
    mtk_tensor *out = mtk_tensor_new(call->ctx, input->dtype, input->shape, input->ndim, stride, device);
    if (!out || !mtk_call_set_outputs(call, 1)) return false;
    mtk_call_output(call, 0, out, -1);
    return true;
}

bool mtk_clone_meta(mtk_op_call *call)
{
    const mtk_tensor *input = arg_tensor(call, 0);
    mtk_memory_format format;
    if (!mtk_memory_format_arg(call, 1, MTK_MEMORY_FORMAT_PRESERVE, &format)) return false;
    int64_t stride[MTK_MAX_DIMS];
    if (!copy_strides(call, input, format, stride)) return false;
    mtk_tensor *out = mtk_tensor_new(call->ctx, input->dtype, input->shape, input->ndim, stride, input->device);
    if (!out || !mtk_call_set_outputs(call, 1)) return false;
    out->flags = input->flags & MTK_TENSOR_REQUIRES_GRAD;
    mtk_call_output(call, 0, out, -1);
    return true;
}

/* --------------------------------------------------------------- copy_ */

/* self.copy_(src): src broadcasts to self's shape.  Into a meta tensor
 * it only checks; out of a meta tensor into a real one it cannot. */
bool mtk_copy__meta(mtk_op_call *call)
{
    mtk_tensor *self = arg_tensor(call, 0), *src = mtk_call_operand(call, 1); /* a number: a cpu scalar */
    if (!src) return false;
    if (self->device != MTK_DEVICE_META && src->device == MTK_DEVICE_META) return meta_copy_error(call);
    int64_t shape[MTK_MAX_DIMS];
    int32_t ndim;
    if (!mtk_broadcast_shapes(call->ctx, call->op->name, self->shape, self->ndim, src->shape, src->ndim, shape,
                              &ndim))
        return false;
    if (ndim != self->ndim || memcmp(shape, self->shape, (size_t)ndim * sizeof *shape) != 0) {
        char a[160], b[160];
        return mtk_call_error(call, MTK_ERR_SHAPE, "output with shape %s doesn't match the broadcast shape %s",
                              mtk_shape_list_str(self->shape, self->ndim, a, sizeof a),
                              mtk_shape_list_str(shape, ndim, b, sizeof b));
    }
    return check_device_supported(call, self->device);
}

bool mtk_copy__cpu(mtk_op_call *call)
{
    mtk_tensor *self = arg_tensor(call, 0), *src = mtk_call_operand(call, 1);
    if (!src || !mtk_check_writable(call, self)) return false;
    if (self->storage == src->storage && mtk_views_partially_overlap(self, src))
        return mtk_call_error(call, MTK_ERR_INVALID_ARGUMENT,
                              "unsupported operation: some elements of the input tensor and the "
                              "written-to tensor refer to a single memory location. Please clone() the "
                              "tensor before performing the operation.");
    mtk_copy_strided(self, src);
    return true;
}

/* ---------------------------------------------------------------- item */

bool mtk_item_meta(mtk_op_call *call)
{
    const mtk_tensor *input = arg_tensor(call, 0);
    int64_t numel = mtk_tensor_numel(input);
    if (numel != 1)
        return mtk_call_error(call, MTK_ERR_SHAPE, "a Tensor with %lld elements cannot be converted to Scalar",
                              (long long)numel);
    if (input->device == MTK_DEVICE_META)
        return mtk_call_error(call, MTK_ERR_META_NO_DATA,
                              "Tensor.item() cannot be called on meta tensors. " MTK_META_DATA_HINT);
    return check_device_supported(call, input->device);
}

bool mtk_item_cpu(mtk_op_call *call)
{
    const mtk_tensor *input = arg_tensor(call, 0);
    const void *p = mtk_tensor_data(input);
    if (input->dtype == MTK_BOOL) call->result = mtk_value_bool(mtk_load_i64(input->dtype, p) != 0);
    else if (mtk_dtype_is_floating(input->dtype)) call->result = mtk_value_float(mtk_load_f64(input->dtype, p));
    else call->result = mtk_value_int(mtk_load_i64(input->dtype, p));
    return true;
}

/* ----------------------------------------------------------- typed API */

static mtk_tensor *run_call(mtk_op_call *call) { return mtk_op_run_tensor(call); }

mtk_tensor *mtk_to(mtk_ctx *ctx, mtk_tensor *input, mtk_device device, mtk_dtype dtype, bool copy)
{
    mtk_op_call call;
    mtk_op_call_init(&call, ctx, mtk_op_by_id(OPID_TO));
    call.args[0] = mtk_value_tensor(input);
    if (device >= 0) call.args[TO_DEVICE] = mtk_value_device(device);
    if (dtype != MTK_DTYPE_UNDEFINED) call.args[TO_DTYPE] = mtk_value_dtype(dtype);
    call.args[TO_COPY] = mtk_value_bool(copy);
    return run_call(&call);
}

mtk_tensor *mtk_to_dtype(mtk_ctx *ctx, mtk_tensor *input, mtk_dtype dtype)
{
    return mtk_to(ctx, input, -1, dtype, false);
}

mtk_tensor *mtk_to_device(mtk_ctx *ctx, mtk_tensor *input, mtk_device device)
{
    return mtk_to(ctx, input, device, MTK_DTYPE_UNDEFINED, false);
}

mtk_tensor *mtk_type_as(mtk_ctx *ctx, mtk_tensor *input, mtk_tensor *other)
{
    mtk_op_call call;
    mtk_op_call_init(&call, ctx, mtk_op_by_id(OPID_TYPE_AS));
    call.args[0] = mtk_value_tensor(input);
    call.args[1] = mtk_value_tensor(other);
    return run_call(&call);
}

mtk_tensor *mtk_to_empty(mtk_ctx *ctx, mtk_tensor *input, mtk_device device)
{
    mtk_op_call call;
    mtk_op_call_init(&call, ctx, mtk_op_by_id(OPID_TO_EMPTY));
    call.args[0] = mtk_value_tensor(input);
    call.args[1] = mtk_value_device(device);
    return run_call(&call);
}

mtk_tensor *mtk_clone(mtk_ctx *ctx, mtk_tensor *input)
{
    mtk_op_call call;
    mtk_op_call_init(&call, ctx, mtk_op_by_id(OPID_CLONE));
    call.args[0] = mtk_value_tensor(input);
    return run_call(&call);
}

mtk_tensor *mtk_copy_(mtk_ctx *ctx, mtk_tensor *self, mtk_tensor *src)
{
    mtk_op_call call;
    mtk_op_call_init(&call, ctx, mtk_op_by_id(OPID_COPY_));
    call.args[0] = mtk_value_tensor(self);
    call.args[1] = mtk_value_tensor(src);
    return run_call(&call);
}

bool mtk_item(mtk_ctx *ctx, mtk_tensor *input, mtk_value *out)
{
    mtk_op_call call;
    mtk_op_call_init(&call, ctx, mtk_op_by_id(OPID_ITEM));
    call.args[0] = mtk_value_tensor(input);
    *out = mtk_value_none();
    if (!mtk_op_run(&call)) return false;
    *out = call.result;
    return true;
}
