/* The dispatcher: meta function, then output allocation and the cpu
 * kernel; and calling ops by name with Python-style arguments. */
#include "core/parallel.h"
#include "ops/registry.h"

#include <assert.h>
#include <stdio.h>
#include <string.h>

void mtk_op_call_init(mtk_op_call *call, mtk_ctx *ctx, const mtk_op_def *op)
{
    /* only what a call reads is set: args past nargs stay unset */
    call->ctx = ctx;
    call->op = op;
    call->device = mtk_ctx_device(ctx);
    call->out = NULL;
    call->out_view_of = NULL;
    call->nout = 0;
    call->result = mtk_value_none();
    call->keyword_args = 0;
    call->given_args = 0;
    const mtk_op_sig *sig = mtk_op_sig_of(op);
    int32_t n = sig && sig->count > 0 ? sig->count : 0;
    call->nargs = n;
    if (n) memcpy(call->args, sig->defaults, (size_t)n * sizeof *call->args);
}

bool mtk_call_set_outputs(mtk_op_call *call, int32_t n)
{
    call->nout = 0;
    if (n <= 0) return true;
    if (n > MTK_MAX_OP_OUTPUTS)
        return mtk_call_error(call, MTK_ERR_INVALID_ARGUMENT,
                              "would return %d tensors, more than mtk's limit of %d tensors from one op "
                              "(MTK_MAX_OP_OUTPUTS)",
                              (int)n, MTK_MAX_OP_OUTPUTS);
    /* one arena block, every byte written: the tensor slots, then the view_of bytes */
    call->out = mtk_ctx_alloc_uninit(call->ctx, (size_t)n * (sizeof *call->out + sizeof *call->out_view_of));
    if (!call->out) return false;
    call->out_view_of = (int8_t *)(call->out + n);
    for (int32_t i = 0; i < n; i++) {
        call->out[i] = NULL;
        call->out_view_of[i] = -1;
    }
    call->nout = n;
    return true;
}

void mtk_call_output(mtk_op_call *call, int32_t i, mtk_tensor *t, int32_t view_of)
{
    assert(i >= 0 && i < call->nout && view_of >= -1 && view_of < MTK_MAX_OP_ARGS);
    call->out[i] = t;
    call->out_view_of[i] = (int8_t)view_of;
}

bool mtk_call_error(mtk_op_call *call, mtk_status status, const char *fmt, ...)
{
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return mtk_error(call->ctx, status, "%s: %s", call->op->name, msg);
}

/* NULL-tensor propagation and the device the op runs on. */
static bool check_inputs(mtk_op_call *call, bool *any_tensor)
{
    mtk_device device = -1, scalar_device = -1;
    *any_tensor = false;
    for (int32_t i = 0; i < call->nargs; i++) {
        const mtk_value *v = &call->args[i];
        const mtk_value *items = v;
        int32_t n = 1;
        if (v->kind == MTK_VALUE_LIST || v->kind == MTK_VALUE_TUPLE) items = v->as.list.items, n = v->as.list.count;
        for (int32_t k = 0; k < n; k++) {
            if (items[k].kind != MTK_VALUE_TENSOR) continue;
            const mtk_tensor *t = items[k].as.tensor;
            if (!t) {
                /* normally an earlier op failed and its error is already set */
                const mtk_arg_spec *specs;
                if (mtk_ctx_status(call->ctx) == MTK_OK)
                    mtk_call_error(call, MTK_ERR_INVALID_ARGUMENT, "argument '%s' is a NULL tensor",
                                   mtk_op_args(call->op, &specs) > i ? specs[i].name : "?");
                return false;
            }
            *any_tensor = true;
            if (call->op->flags & MTK_OP_ANY_DEVICES) {
                if (device == -1) device = t->device;
                continue;
            }
            /* a 0-dim cpu tensor may join tensors of any device */
            if (t->ndim == 0 && t->device == MTK_DEVICE_CPU) {
                scalar_device = t->device;
                continue;
            }
            if (device == -1) {
                device = t->device;
            } else if (device != t->device) {
                char a[32], b[32];
                return mtk_call_error(call, MTK_ERR_DEVICE,
                                      "Expected all tensors to be on the same device, but found at "
                                      "least two devices, %s and %s!",
                                      mtk_device_str(device, a, sizeof a),
                                      mtk_device_str(t->device, b, sizeof b));
            }
        }
    }
    if (device == -1) device = scalar_device;
    if (device != -1) call->device = device;
    return true;
}

static bool allocate_outputs(mtk_op_call *call)
{
    for (int32_t i = 0; i < call->nout; i++) {
        mtk_tensor *t = call->out[i];
        if (!t || t->device != MTK_DEVICE_CPU || t->storage) continue;
        int32_t src = call->out_view_of[i];
        if (src >= 0 && src < call->nargs && call->args[src].kind == MTK_VALUE_TENSOR) {
            const mtk_tensor *in = call->args[src].as.tensor;
            if (in && in->storage) {
                if (!mtk_tensor_set_storage(t, in->storage)) return false;
                continue;
            }
        }
        if (!mtk_tensor_alloc_storage(t)) return false;
    }
    return true;
}

/* mtk_op_run without the observer. */
static bool run_op(mtk_op_call *call)
{
    const mtk_op_def *op = call->op;
    bool any_tensor;
    call->result = mtk_value_none();
    if (!check_inputs(call, &any_tensor)) return false;
    if (!op->meta(call)) {
        if (mtk_ctx_status(call->ctx) == MTK_OK)
            mtk_call_error(call, MTK_ERR_INVALID_ARGUMENT, "invalid arguments");
        return false;
    }
    if ((op->flags & MTK_OP_DATA_DEPENDENT) && call->device == MTK_DEVICE_META)
        return mtk_call_error(call, MTK_ERR_DATA_DEPENDENT,
                              "the output size of %s depends on the data of its input, and a meta "
                              "tensor has no data. Run it on a real tensor (materialize with "
                              "to_empty() or load a checkpoint first), or use an op whose output "
                              "size is known from shapes alone",
                              op->name);
    bool all_cpu = call->device == MTK_DEVICE_CPU;
    for (int32_t i = 0; i < call->nout; i++)
        if (!call->out[i] || call->out[i]->device != MTK_DEVICE_CPU) all_cpu = false;
    if (!allocate_outputs(call)) return false;
    if (all_cpu && !(op->flags & MTK_OP_NO_KERNEL)) {
        if (!op->cpu)
            return mtk_call_error(call, MTK_ERR_NOT_IMPLEMENTED, "no cpu kernel for this op yet");
        /* the kernel's threads: the context's setting (mtk_parallel_threads) */
        int32_t previous = mtk_parallel_scope_begin(mtk_ctx_num_threads(call->ctx));
        bool ran = op->cpu(call);
        mtk_parallel_scope_end(previous);
        if (!ran) {
            if (mtk_ctx_status(call->ctx) == MTK_OK)
                mtk_call_error(call, MTK_ERR_INVALID_ARGUMENT, "cpu kernel failed");
            return false;
        }
    } else if (call->device != MTK_DEVICE_META && call->device != MTK_DEVICE_CPU &&
               !(op->flags & MTK_OP_NO_KERNEL)) {
        char d[32];
        return mtk_call_error(call, MTK_ERR_DEVICE, "device %s is not supported by this build",
                              mtk_device_str(call->device, d, sizeof d));
    }
    if (call->result.kind == MTK_VALUE_NONE) {
        if (op->flags & MTK_OP_INPLACE) {
            call->result = call->args[0];
        } else if (mtk_op_sig_of(op)->returns_sequence) {
            /* "-> Tensor[]": a tuple, even of one or no tensors (split, unbind) */
            mtk_value tuple = mtk_value_list(call->ctx, call->nout, true);
            if (tuple.kind == MTK_VALUE_NONE) return false;
            for (int32_t i = 0; i < call->nout; i++) tuple.as.list.items[i] = mtk_value_tensor(call->out[i]);
            call->result = tuple;
        } else if (call->nout == 1) {
            call->result = mtk_value_tensor(call->out[0]);
        } else if (call->nout > 1) {
            mtk_value tuple = mtk_value_list(call->ctx, call->nout, true);
            if (tuple.kind == MTK_VALUE_NONE) return false;
            for (int32_t i = 0; i < call->nout; i++) tuple.as.list.items[i] = mtk_value_tensor(call->out[i]);
            call->result = tuple;
        }
    }
    return true;
}

bool mtk_op_run(mtk_op_call *call)
{
    /* The observer (tracing, FLOP counting) sees the calls made to the
     * table, not the ops an op runs inside its own meta or cpu function
     * (sdpa's meta replays its last matmul): those are detached while it
     * runs, so that no cost is counted twice. */
    void *hook_user;
    mtk_op_hook hook = mtk_ctx_op_hook(call->ctx, &hook_user);
    if (hook) mtk_ctx_set_op_hook(call->ctx, NULL, NULL);
    bool ok = run_op(call);
    if (hook) {
        mtk_ctx_set_op_hook(call->ctx, hook, hook_user);
        if (ok) hook(hook_user, call); /* records the finished call */
    }
    return ok;
}

mtk_tensor *mtk_op_run_tensor(mtk_op_call *call)
{
    if (!mtk_op_run(call)) return NULL;
    return call->result.kind == MTK_VALUE_TENSOR ? call->result.as.tensor : NULL;
}

int32_t mtk_op_run_tensors(mtk_op_call *call, mtk_tensor **out, int32_t cap)
{
    if (!mtk_op_run(call) || call->result.kind != MTK_VALUE_TUPLE) return -1;
    int32_t n = call->result.as.list.count;
    for (int32_t i = 0; i < n && i < cap; i++) out[i] = call->result.as.list.items[i].as.tensor;
    return n;
}

/* ------------------------------------------------------- binding by name */

/* A signature type as PyTorch's argument parser names it in messages. */
static const char *python_type_name(const mtk_arg_spec *s, mtk_arg_type type)
{
    switch (type) {
    case MTK_ARG_TENSOR_OR_SCALAR: return "Tensor";
    case MTK_ARG_SCALAR: return "Number";
    case MTK_ARG_INT_LIST:
    case MTK_ARG_INT_OR_LIST: return "tuple of ints";
    case MTK_ARG_TENSOR_LIST: return "tuple of Tensors";
    case MTK_ARG_DTYPE: return "torch.dtype";
    case MTK_ARG_DEVICE: return "torch.device";
    default: return s->type;
    }
}

/* An int list as PyTorch's parser reads one: a list or tuple whose first
 * item is an int (not a bool) and whose later items are ints or bools (a
 * bool reads as 0 or 1).  *out gets it with the bools made ints. */
static bool bind_int_list(mtk_ctx *ctx, const mtk_op_def *op, const mtk_arg_spec *s, const char *where,
                          mtk_value v, mtk_value *out)
{
    const mtk_value *items = v.as.list.items;
    int32_t n = v.as.list.count, nbool = 0;
    for (int32_t i = 0; i < n; i++) {
        if (items[i].kind == MTK_VALUE_INT) continue;
        if (items[i].kind == MTK_VALUE_BOOL && i > 0) {
            nbool++;
            continue;
        }
        if (i == 0)
            return mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT,
                             "%s(): argument '%s'%s must be tuple of ints, but found element of type %s "
                             "at pos 0",
                             op->name, s->name, where, mtk_value_type_name(&items[i]));
        return mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, /* PyTorch's words, position-less and 1-based */
                         "%s(): argument '%s' failed to unpack the object at pos %d with error \"type "
                         "must be tuple of ints,but got %s\"",
                         op->name, s->name, (int)i + 1, mtk_value_type_name(&items[i]));
    }
    *out = v;
    if (!nbool) return true;
    mtk_value copy = mtk_value_list(ctx, n, v.kind == MTK_VALUE_TUPLE);
    if (copy.kind == MTK_VALUE_NONE) return false;
    for (int32_t i = 0; i < n; i++)
        copy.as.list.items[i] = items[i].kind == MTK_VALUE_BOOL ? mtk_value_int(items[i].as.b) : items[i];
    *out = copy;
    return true;
}

/* Checks and converts one argument to its spec's type.  `pos` is the
 * 0-based position of a positional argument, -1 for a keyword one (whose
 * messages name no position, as PyTorch's). */
static bool bind_value(mtk_ctx *ctx, const mtk_op_def *op, const mtk_arg_spec *s, mtk_arg_type type,
                       int32_t pos, mtk_value v, mtk_value *out)
{
    char where[32] = "";
    if (pos >= 0) snprintf(where, sizeof where, " (position %d)", (int)pos + 1);
    bool ok = false;
    if (v.kind == MTK_VALUE_NONE) {
        /* a type without '?' refuses None even when None is its default
         * (eye(n, m=None): m may be left out, not passed as None) */
        ok = s->optional || type == MTK_ARG_ANY;
    } else {
        switch (type) {
        case MTK_ARG_ANY: ok = true; break;
        case MTK_ARG_TENSOR: ok = v.kind == MTK_VALUE_TENSOR; break;
        case MTK_ARG_TENSOR_OR_SCALAR: ok = v.kind == MTK_VALUE_TENSOR || mtk_value_is_number(&v); break;
        case MTK_ARG_SCALAR: ok = mtk_value_is_number(&v); break;
        case MTK_ARG_INT: ok = v.kind == MTK_VALUE_INT; break;
        case MTK_ARG_BOOL: ok = v.kind == MTK_VALUE_BOOL; break;
        case MTK_ARG_STR: ok = v.kind == MTK_VALUE_STRING; break;
        case MTK_ARG_DTYPE: ok = v.kind == MTK_VALUE_DTYPE; break;
        case MTK_ARG_FLOAT:
            if (v.kind == MTK_VALUE_INT || v.kind == MTK_VALUE_BOOL) v = mtk_value_float(mtk_value_as_double(&v));
            ok = v.kind == MTK_VALUE_FLOAT;
            break;
        case MTK_ARG_DEVICE:
            if (v.kind == MTK_VALUE_STRING) {
                mtk_device d;
                if (!mtk_device_parse(v.as.s, &d))
                    return mtk_error(ctx, MTK_ERR_DEVICE,
                                     "%s(): Expected one of cpu, meta, cuda device type at start of "
                                     "device string: %s",
                                     op->name, v.as.s);
                v = mtk_value_device(d);
            }
            ok = v.kind == MTK_VALUE_DEVICE;
            break;
        case MTK_ARG_INT_OR_LIST:
            if (v.kind == MTK_VALUE_INT) { /* int[1]: one int stands for a list (sum(x, 1)) */
                ok = true;
                break;
            }
            /* fall through */
        case MTK_ARG_INT_LIST:
            if (v.kind == MTK_VALUE_LIST || v.kind == MTK_VALUE_TUPLE)
                return bind_int_list(ctx, op, s, where, v, out);
            break;
        case MTK_ARG_TENSOR_LIST:
            if (v.kind != MTK_VALUE_LIST && v.kind != MTK_VALUE_TUPLE) break;
            for (int32_t i = 0; i < v.as.list.count; i++)
                if (v.as.list.items[i].kind != MTK_VALUE_TENSOR)
                    return mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT,
                                     "%s(): argument '%s'%s must be tuple of Tensors, not %s", op->name,
                                     s->name, where, mtk_value_type_name(&v.as.list.items[i]));
            ok = true;
            break;
        case MTK_ARG_UNKNOWN:
            return mtk_error(ctx, MTK_ERR_NOT_IMPLEMENTED, "%s(): unknown argument type %s in signature",
                             op->name, s->type);
        }
    }
    if (ok) {
        *out = v;
        return true;
    }
    return mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "%s(): argument '%s'%s must be %s, not %s", op->name,
                     s->name, where, python_type_name(s, type), mtk_value_type_name(&v));
}

/* PyTorch's words: "linear() takes from 2 to 3 positional arguments but 4
 * were given" */
static bool too_many_positionals(mtk_ctx *ctx, const mtk_op_def *op, const mtk_op_sig *sig, int32_t given)
{
    int32_t required = 0, npos = sig->npositional;
    while (required < npos && !sig->specs[required].has_default) required++;
    char takes[64];
    if (required == npos)
        snprintf(takes, sizeof takes, "%d positional argument%s", (int)npos, npos == 1 ? "" : "s");
    else
        snprintf(takes, sizeof takes, "from %d to %d positional arguments", (int)required, (int)npos);
    return mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "%s() takes %s but %d %s given", op->name, takes,
                     (int)given, given == 1 ? "was" : "were");
}

/* PyTorch's words: linear() missing 2 required positional arguments:
 * "input", "weight" */
static bool report_missing(mtk_ctx *ctx, const mtk_op_def *op, const mtk_op_sig *sig, const bool *bound)
{
    char missing[256] = "";
    size_t len = 0;
    int32_t nmissing = 0;
    bool keyword_missing = false;
    for (int32_t j = 0; j < sig->count; j++) {
        if (bound[j] || sig->specs[j].has_default) continue;
        keyword_missing |= sig->specs[j].keyword_only;
        int n = snprintf(missing + len, sizeof missing - len, "%s\"%s\"", nmissing ? ", " : "",
                         sig->specs[j].name);
        if (n > 0) len = len + (size_t)n < sizeof missing ? len + (size_t)n : sizeof missing - 1;
        nmissing++;
    }
    if (!nmissing) return true;
    return mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "%s() missing %d required %sargument%s: %s", op->name,
                     (int)nmissing, keyword_missing ? "" : "positional ", nmissing == 1 ? "" : "s", missing);
}

bool mtk_op_call_by_name(mtk_ctx *ctx, const char *name, const mtk_value *positional,
                         int32_t npositional, const char *const *kw_names,
                         const mtk_value *kw_values, int32_t nkw, mtk_value *result)
{
    *result = mtk_value_none();
    const mtk_op_def *op = name ? mtk_op_find(name) : NULL;
    if (!op)
        return mtk_error(ctx, MTK_ERR_UNKNOWN_OP, "unknown op '%s' (mtk ops lists them)",
                         name ? name : "(null)");
    const mtk_op_sig *sig = mtk_op_sig_of(op);
    if (!sig || sig->count < 0) return mtk_error(ctx, MTK_ERR_NOT_IMPLEMENTED, "%s: malformed signature", op->name);

    mtk_op_call call;
    mtk_op_call_init(&call, ctx, op);
    bool bound[MTK_MAX_OP_ARGS] = { false };
    int32_t pi = 0;
    for (int32_t i = 0; i < npositional; i++) {
        if (pi >= sig->npositional) return too_many_positionals(ctx, op, sig, npositional);
        mtk_value v = positional[i];
        /* x.view(3, 4): the var-args int list gathers the ints from here on
         * (a lone int too: zeros(3)); its first item must be an int */
        if (pi == sig->varargs && v.kind == MTK_VALUE_INT) {
            int32_t n = npositional - i;
            v = mtk_value_list(ctx, n, true);
            if (v.kind == MTK_VALUE_NONE) return false;
            for (int32_t k = 0; k < n; k++) v.as.list.items[k] = positional[i + k];
            i = npositional - 1;
        }
        if (!bind_value(ctx, op, &sig->specs[pi], (mtk_arg_type)sig->types[pi], pi, v, &call.args[pi]))
            return false;
        call.given_args |= 1u << pi;
        bound[pi++] = true;
    }
    for (int32_t k = 0; k < nkw; k++) {
        int32_t j = 0;
        while (j < sig->count && strcmp(sig->specs[j].name, kw_names[k]) != 0) j++;
        if (j == sig->count)
            return mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT,
                             "%s() got an unexpected keyword argument '%s'", op->name, kw_names[k]);
        if (bound[j])
            return mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT,
                             "%s() got multiple values for argument '%s'", op->name, kw_names[k]);
        if (!bind_value(ctx, op, &sig->specs[j], (mtk_arg_type)sig->types[j], -1, kw_values[k], &call.args[j]))
            return false;
        bound[j] = true;
        call.keyword_args |= 1u << j;
        call.given_args |= 1u << j;
    }
    if (!report_missing(ctx, op, sig, bound)) return false;
    if (!mtk_op_run(&call)) return false;
    *result = call.result;
    return true;
}
