/* F.pad(input, pad, mode='constant', value=None).
 *
 * pad lists (left, right) pairs from the last dim backwards.  constant
 * pads any number of dims; negative padding crops (narrow).  reflect,
 * replicate and circular pad the last 1, 2 or 3 dims of a 2/3-, 3/4- or
 * 4/5-D tensor (an optional batch dim in front).  Shapes, layouts and
 * errors as torch's meta device: constant keeps a channels-last input's
 * layout (and an all-cropping pad clones the cropped view with its
 * strides); the other modes are contiguous. */
#include "ops/index.h"
#include "ops/op_util.h"
#include "ops/creation.h"
#include "ops/elementwise.h"

#include <stdio.h>
#include <string.h>

enum { PAD_CONSTANT, PAD_REFLECT, PAD_REPLICATE, PAD_CIRCULAR };

typedef struct pad_form {
    int mode;
    int64_t pad[2 * MTK_MAX_DIMS];
    int32_t n;                 /* entries of pad */
    /* constant mode */
    bool crop_only;            /* no positive pad: a clone of the cropped view */
    mtk_tensor cropped;        /* the input narrowed by the negative pads */
} pad_form;

static const char *mode_name(int mode)
{
    static const char *const names[] = { "constant", "reflect", "replicate", "circular" };
    return names[mode];
}

/* left and right padding of dim d (only dims the pad list reaches) */
static void pads_of(const pad_form *f, int32_t ndim, int32_t d, int64_t *left, int64_t *right)
{
    int32_t k = 2 * (ndim - d - 1);
    *left = f->pad[k], *right = f->pad[k + 1];
}

/* the constant mode's cropping (torch's constant_pad_nd narrows first) */
static bool constant_form(mtk_op_call *call, const mtk_tensor *x, pad_form *f)
{
    f->cropped = *x;
    f->crop_only = true;
    mtk_tensor *c = &f->cropped;
    for (int32_t d = x->ndim - f->n / 2; d < x->ndim; d++) {
        int64_t left, right;
        pads_of(f, x->ndim, d, &left, &right);
        if (left < 0) {
            if (c->shape[d] + left < 0) return mtk_call_error(call, MTK_ERR_SHAPE, "narrow(): length must be non-negative.");
            if (!ops_offset_of(call, c->storage_offset, -left, c->stride[d], &c->storage_offset)) return false;
            c->shape[d] += left;
        } else if (left != 0) {
            f->crop_only = false;
        }
        if (right < 0) {
            if (c->shape[d] + right < 0) return mtk_call_error(call, MTK_ERR_SHAPE, "narrow(): length must be non-negative.");
            c->shape[d] += right;
        } else if (right != 0) {
            f->crop_only = false;
        }
    }
    return true;
}

/* size + left + right of dim d, or an error when the sum leaves int64
 * (torch's wrapping sum would report a bogus size) */
static bool padded_size(mtk_op_call *call, int64_t size, int64_t left, int64_t right, int32_t d, int64_t *out)
{
    if (__builtin_add_overflow(size, left, out) || __builtin_add_overflow(*out, right, out))
        return mtk_call_error(call, MTK_ERR_OVERFLOW,
                              "the padded size %lld + %lld + %lld of dimension %d does not fit in int64",
                              (long long)size, (long long)left, (long long)right, (int)d);
    return true;
}

/* reflect / replicate: torch's _pad{1,2,3}d_common checks and sizes */
static bool reflect_like_shape(mtk_op_call *call, const mtk_tensor *x, const pad_form *f, int64_t *shape)
{
    int32_t k = f->n / 2, nd = x->ndim; /* padded dims: the last k */
    bool batch = nd == k + 2;
    char buf[256];
    bool valid = true;
    for (int32_t d = batch ? 1 : 0; d < nd; d++) valid &= x->shape[d] != 0;
    if (!valid)
        return mtk_call_error(call, MTK_ERR_SHAPE,
                              "Expected %dD or %dD (batch mode) tensor with possibly 0 batch size and other non-zero "
                              "dimensions for input, but got: %s",
                              (int)k + 1, (int)k + 2, mtk_shape_list_str(x->shape, x->ndim, buf, sizeof buf));
    if (f->mode == PAD_REPLICATE && x->dtype == MTK_BOOL)
        return mtk_call_error(call, MTK_ERR_DTYPE, "\"replication_pad%dd\" not implemented for 'torch.bool'", (int)k);
    memcpy(shape, x->shape, (size_t)nd * sizeof *shape);
    bool any_positive = false;
    for (int32_t i = 0; i < k; i++) { /* w, then h, then d */
        int32_t d = nd - 1 - i;
        int64_t left = f->pad[2 * i], right = f->pad[2 * i + 1];
        if (f->mode == PAD_REFLECT && (left >= x->shape[d] || right >= x->shape[d]))
            return mtk_call_error(call, MTK_ERR_SHAPE,
                                  "Argument #%d: Padding size should be less than the corresponding input dimension, "
                                  "but got: padding (%lld, %lld) at dimension %d of input %s",
                                  4 + 2 * (int)i, (long long)left, (long long)right, (int)d,
                                  mtk_shape_list_str(x->shape, x->ndim, buf, sizeof buf));
        if (!padded_size(call, x->shape[d], left, right, d, &shape[d])) return false;
        any_positive |= shape[d] >= 1;
    }
    if (!any_positive) {
        static const char *const names[] = { "W", "H", "D" };
        char in[128] = "", out[128] = "";
        size_t li = 0, lo = 0;
        for (int32_t i = k - 1; i >= 0; i--) {
            int32_t d = nd - 1 - i;
            li += (size_t)snprintf(in + li, sizeof in - li, "%s%s: %lld", li ? " " : "", names[i], (long long)x->shape[d]);
            lo += (size_t)snprintf(out + lo, sizeof out - lo, "%s%s: %lld", lo ? " " : "", names[i], (long long)shape[d]);
        }
        return mtk_call_error(call, MTK_ERR_SHAPE, "input (%s) is too small. Calculated output %s", in, out);
    }
    return true;
}

static bool circular_shape(mtk_op_call *call, const mtk_tensor *x, const pad_form *f, int64_t *shape)
{
    int32_t k = f->n / 2, nd = x->ndim;
    memcpy(shape, x->shape, (size_t)nd * sizeof *shape);
    for (int32_t i = 0; i < k; i++) {
        int32_t d = nd - 1 - i;
        int64_t left = f->pad[2 * i], right = f->pad[2 * i + 1], size = x->shape[d];
        if (left > size || right > size)
            return mtk_call_error(call, MTK_ERR_SHAPE, "Padding value causes wrapping around more than once.");
        if (!padded_size(call, size, left, right, d, &shape[d])) return false;
        if (shape[d] < 0)
            return mtk_call_error(call, MTK_ERR_SHAPE, "Negative padding value is resulting in an empty dimension");
    }
    return true;
}

/* The view out.narrow(d, lo, hi - lo) of a contiguous `out`. */
static mtk_tensor slice_of(const mtk_tensor *out, int32_t d, int64_t lo, int64_t hi)
{
    mtk_tensor v = *out;
    v.shape[d] = hi - lo;
    v.storage_offset = lo * out->stride[d];
    return v;
}

/* torch's cpu circular pad fills the wrapped borders by copies within its
 * output: per padded dim from the last, out[0, l) from the l elements
 * before the right pad, then out[n - r, n) from the r after the left
 * pad.  With a negative pad on the other side the two ranges can overlap;
 * copy_ then refuses where both slices are dense (it cannot tell for the
 * others, and copies). */
static bool check_circular_copies(mtk_op_call *call, const pad_form *f, const int64_t *shape, int32_t nd)
{
    mtk_tensor out; /* the output's geometry, contiguous */
    memset(&out, 0, sizeof out);
    out.dtype = arg_tensor(call, 0)->dtype;
    out.ndim = nd;
    memcpy(out.shape, shape, (size_t)nd * sizeof *shape);
    mtk_contiguous_strides(shape, nd, out.stride);
    for (int32_t i = 0; i < f->n / 2; i++) {
        int32_t d = nd - 1 - i;
        int64_t l = f->pad[2 * i], r = f->pad[2 * i + 1], n = shape[d];
        int64_t l0 = l > 0 ? l : 0, r0 = r > 0 ? r : 0;
        int64_t copies[2][4] = { { 0, l, n - l - r0, n - r0 }, { n - r, n, l0, l0 + r } }; /* dst, src */
        for (int32_t c = 0; c < 2; c++) {
            const int64_t *k = copies[c];
            if ((c == 0 ? l : r) <= 0) continue;
            mtk_tensor dst = slice_of(&out, d, k[0], k[1]), src = slice_of(&out, d, k[2], k[3]);
            if (mtk_views_partially_overlap(&dst, &src))
                return mtk_call_error(call, MTK_ERR_INVALID_ARGUMENT,
                                      "unsupported operation: some elements of the input tensor and the written-to "
                                      "tensor refer to a single memory location. Please clone() the tensor before "
                                      "performing the operation.");
        }
    }
    return true;
}

/* Parses the call; for the output, its shape and strides. */
static bool pad_plan(mtk_op_call *call, pad_form *f, int64_t *shape, int64_t *stride)
{
    const mtk_tensor *x = arg_tensor(call, 0);
    const char *mode = call->args[2].as.s;
    memset(f, 0, sizeof *f);
    if (strcmp(mode, "constant") == 0) f->mode = PAD_CONSTANT;
    else if (strcmp(mode, "reflect") == 0) f->mode = PAD_REFLECT;
    else if (strcmp(mode, "replicate") == 0) f->mode = PAD_REPLICATE;
    else if (strcmp(mode, "circular") == 0) f->mode = PAD_CIRCULAR;
    else return mtk_call_error(call, MTK_ERR_NOT_IMPLEMENTED, "Unrecognised padding mode %s", mode);
    f->n = mtk_value_to_ints(call->ctx, &call->args[1], f->pad, 2 * MTK_MAX_DIMS, call->op->name, "pad");
    if (f->n < 0) return false;
    if (f->n % 2 != 0) return mtk_call_error(call, MTK_ERR_SHAPE, "Padding length must be divisible by 2");
    if (f->n > 2 * x->ndim)
        return mtk_call_error(call, MTK_ERR_SHAPE,
                              "Padding length should be less than or equal to two times the input dimension but got "
                              "padding length %d and input of dimension %d",
                              (int)f->n, (int)x->ndim);
    int32_t nd = x->ndim;
    if (f->mode == PAD_CONSTANT) {
        if (!constant_form(call, x, f)) return false;
        if (f->crop_only) {
            memcpy(shape, f->cropped.shape, (size_t)nd * sizeof *shape);
            mtk_dense_strides_like(&f->cropped, stride);
            return true;
        }
        memcpy(shape, x->shape, (size_t)nd * sizeof *shape);
        for (int32_t d = nd - f->n / 2; d < nd; d++) {
            int64_t left, right;
            pads_of(f, nd, d, &left, &right);
            if (!padded_size(call, x->shape[d], left, right, d, &shape[d])) return false;
        }
        if (!mtk_shape_check(call->ctx, call->op->name, shape, nd, NULL)) return false;
        ix_format_strides(ix_suggest_memory_format(x), shape, nd, stride);
        return true;
    }
    if (!arg_is_none(call, 3) && call->args[3].as.f != 0.0)
        return mtk_call_error(call, MTK_ERR_INVALID_ARGUMENT, "Padding mode \"%s\" doesn't take in value argument",
                              mode_name(f->mode));
    int32_t k = f->n / 2;
    if (k < 1 || k > 3 || (nd != k + 1 && nd != k + 2))
        return mtk_call_error(call, MTK_ERR_NOT_IMPLEMENTED, "Padding size %d is not supported for %dD input tensor.",
                              (int)f->n, (int)nd);
    bool ok = f->mode == PAD_CIRCULAR ? circular_shape(call, x, f, shape) : reflect_like_shape(call, x, f, shape);
    if (!ok || !mtk_shape_check(call->ctx, call->op->name, shape, nd, NULL)) return false;
    if (call->device == MTK_DEVICE_CPU && f->mode == PAD_CIRCULAR && !check_circular_copies(call, f, shape, nd))
        return false;
    if (call->device == MTK_DEVICE_CPU && f->mode != PAD_CIRCULAR &&
        (x->dtype == MTK_BOOL || mtk_dtype_is_float8(x->dtype)))
        return mtk_call_error(call, MTK_ERR_DTYPE, "\"%s_pad%dd\" not implemented for '%s'",
                              f->mode == PAD_REFLECT ? "reflection" : "replication", (int)k,
                              mtk_dtype_cpp_name(x->dtype));
    mtk_contiguous_strides(shape, nd, stride);
    return true;
}

bool mtk_pad_meta(mtk_op_call *call)
{
    const mtk_tensor *x = arg_tensor(call, 0);
    pad_form f;
    int64_t shape[MTK_MAX_DIMS], stride[MTK_MAX_DIMS];
    if (!pad_plan(call, &f, shape, stride)) return false;
    if (call->device == MTK_DEVICE_CPU && f.mode == PAD_CONSTANT && !f.crop_only && !arg_is_none(call, 3) &&
        !mtk_scalar_fits(call, &call->args[3], x->dtype))
        return false;
    return ix_single_output(call, x->dtype, shape, x->ndim, stride, x);
}

/* map of output positions to input positions along one padded dim */
static void pad_map(int mode, int64_t size, int64_t left, int64_t right, int64_t out_size, int64_t *map)
{
    int64_t crop = left < 0 ? -left : 0, len = size - crop - (right < 0 ? -right : 0);
    int64_t pl = left > 0 ? left : 0;
    for (int64_t j = 0; j < out_size; j++) {
        int64_t i = j - left;
        if (mode == PAD_REFLECT) {
            if (i < 0) i = -i;
            else if (i >= size) i = 2 * (size - 1) - i;
        } else if (mode == PAD_REPLICATE) {
            i = i < 0 ? 0 : i >= size ? size - 1 : i;
        } else { /* circular: wraps inside the cropped input */
            int64_t r = len > 0 ? (j - pl) % len : 0;
            i = crop + (r < 0 ? r + len : r);
        }
        map[j] = i;
    }
}

bool mtk_pad_cpu(mtk_op_call *call)
{
    mtk_tensor *out = call->out[0];
    const mtk_tensor *x = arg_tensor(call, 0);
    pad_form f;
    int64_t shape[MTK_MAX_DIMS], stride[MTK_MAX_DIMS];
    if (!pad_plan(call, &f, shape, stride)) return false;
    int32_t nd = x->ndim;
    if (f.mode == PAD_CONSTANT) {
        if (f.crop_only) {
            mtk_copy_strided(out, &f.cropped);
            return true;
        }
        char elem[16];
        mtk_value value = arg_is_none(call, 3) ? mtk_value_float(0.0) : call->args[3];
        mtk_scalar_store(&value, out->dtype, elem);
        mtk_fill_dense(out, elem);
        /* the interior: out narrowed by the positive pads */
        mtk_tensor inner = *out;
        for (int32_t d = nd - f.n / 2; d < nd; d++) {
            int64_t left, right;
            pads_of(&f, nd, d, &left, &right);
            if (left > 0) inner.storage_offset += left * out->stride[d], inner.shape[d] -= left;
            if (right > 0) inner.shape[d] -= right;
        }
        if (mtk_tensor_numel(&inner) > 0) mtk_copy_strided(&inner, &f.cropped);
        return true;
    }
    if (mtk_tensor_numel(out) == 0) return true;
    int64_t *maps[MTK_MAX_DIMS] = { NULL };
    bool ok = true;
    for (int32_t i = 0; i < f.n / 2 && ok; i++) {
        int32_t d = nd - 1 - i;
        ok = (maps[d] = mtk_ctx_malloc(call->ctx, (size_t)out->shape[d] * sizeof(int64_t))) != NULL;
        if (ok) pad_map(f.mode, x->shape[d], f.pad[2 * i], f.pad[2 * i + 1], out->shape[d], maps[d]);
    }
    if (ok) ix_copy_mapped(out, x, (const int64_t *const *)maps);
    else mtk_call_error(call, MTK_ERR_OUT_OF_MEMORY, "out of memory");
    for (int32_t d = 0; d < nd; d++) mtk_ctx_mfree(call->ctx, maps[d]);
    return ok;
}
