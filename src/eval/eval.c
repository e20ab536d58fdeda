/* The eval language's evaluator: walks the syntax tree, resolves names,
 * makes tensor literals on the default device and calls ops through the
 * op table (mtk_op_call_by_name).  It knows no op's C function. */
#include "mtk/eval.h"
#include "mtk/op.h"
#include "eval/eval_internal.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

bool eval_fail_at(evaluator *ev, const node *n)
{
    if (!ev->error_column) ev->error_column = n->column;
    return false;
}

bool eval_error_at(evaluator *ev, const node *n, mtk_status status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    mtk_verror(ev->ctx, status, fmt, ap);
    va_end(ap);
    return eval_fail_at(ev, n);
}

bool eval_spend_items(evaluator *ev, const node *n, int64_t count)
{
    ev->items_built += count;
    if (ev->items_built <= MTK_EVAL_MAX_ITEMS) return true;
    return eval_error_at(ev, n, MTK_ERR_INVALID_ARGUMENT,
                         "the expression builds more than mtk eval's limit of %d list and tuple items "
                         "(MTK_EVAL_MAX_ITEMS: literals' items, + and * of sequences, and the tensors "
                         "that ops return in lists, together)",
                         MTK_EVAL_MAX_ITEMS);
}

bool eval_op(evaluator *ev, const node *n, const char *name, const mtk_value *args, int32_t nargs,
             mtk_value *out)
{
    if (!mtk_op_call_by_name(ev->ctx, name, args, nargs, NULL, NULL, 0, out)) return eval_fail_at(ev, n);
    return true;
}

/* ------------------------------------------------------------------ names */

/* A dtype named in an expression; `bare` names follow Python's types
 * (float -> float64, int -> int64) as torch maps them, torch.X and the
 * short names follow torch.  Returns MTK_DTYPE_UNDEFINED when unknown. */
static mtk_dtype dtype_named(const char *name, bool bare)
{
    if (bare && strcmp(name, "float") == 0) return MTK_FLOAT64;
    if (bare && strcmp(name, "int") == 0) return MTK_INT64;
    if (strcmp(name, "b") == 0) return MTK_DTYPE_UNDEFINED; /* an alias, not a name */
    return mtk_dtype_from_name(name);
}

static bool resolve_name(evaluator *ev, const node *n, mtk_value *out)
{
    static const struct { const char *name; int kind; } constants[] = {
        { "True", 1 }, { "true", 1 }, { "False", 0 }, { "false", 0 }, { "None", 2 },
        { "inf", 3 }, { "math.inf", 3 }, { "torch.inf", 3 },
        { "nan", 4 }, { "math.nan", 4 }, { "torch.nan", 4 },
    };
    const char *name = n->name;
    for (size_t i = 0; i < sizeof constants / sizeof constants[0]; i++) {
        if (strcmp(name, constants[i].name) != 0) continue;
        switch (constants[i].kind) {
        case 0: *out = mtk_value_bool(false); break;
        case 1: *out = mtk_value_bool(true); break;
        case 2: *out = mtk_value_none(); break;
        case 3: *out = mtk_value_float(INFINITY); break;
        default: *out = mtk_value_float(NAN); break;
        }
        return true;
    }
    /* torch's memory formats, spelled as in Python; the ops read the names */
    static const char *const formats[] = { "contiguous_format", "channels_last", "channels_last_3d",
                                           "preserve_format" };
    for (size_t i = 0; i < sizeof formats / sizeof formats[0]; i++)
        if (strncmp(name, "torch.", 6) == 0 && strcmp(name + 6, formats[i]) == 0) {
            *out = mtk_value_string(formats[i]);
            return true;
        }
    /* torch's layouts: strided is every mtk tensor's; the ops that take a
     * `layout` refuse the others */
    static const char *const layouts[] = { "strided", "sparse_coo", "sparse_csr", "sparse_csc",
                                           "sparse_bsr", "sparse_bsc", "_mkldnn", "jagged" };
    for (size_t i = 0; i < sizeof layouts / sizeof layouts[0]; i++)
        if (strncmp(name, "torch.", 6) == 0 && strcmp(name + 6, layouts[i]) == 0) {
            *out = mtk_value_string(layouts[i]);
            return true;
        }
    mtk_dtype dtype = dtype_named(name, strchr(name, '.') == NULL);
    if (dtype != MTK_DTYPE_UNDEFINED) {
        *out = mtk_value_dtype(dtype);
        return true;
    }
    if (mtk_op_find(name))
        return eval_error_at(ev, n, MTK_ERR_INVALID_ARGUMENT, "'%s' is an op: call it, as in %s(...)", name,
                        name);
    return eval_error_at(ev, n, MTK_ERR_INVALID_ARGUMENT, "name '%s' is not defined", name);
}

/* ------------------------------------------------------- tensor literals */

static bool make_literal(evaluator *ev, const node *n, mtk_value *out)
{
    mtk_ctx *ctx = ev->ctx;
    mtk_dtype dtype = dtype_named(n->name, false);
    if (dtype == MTK_DTYPE_UNDEFINED)
        return eval_error_at(ev, n, MTK_ERR_DTYPE,
                        "unknown dtype '%s' in the tensor literal %s (a literal is DTYPE[sizes] "
                        "with DTYPE one of f32 f16 bf16 f64 i64 i32 i16 i8 u8 bool, or a long "
                        "name such as float32)",
                        n->name, n->source);
    int64_t numel;
    if (!mtk_shape_check(ctx, n->source, n->shape, n->ndim, &numel)) return eval_fail_at(ev, n);
    mtk_device device = mtk_ctx_device(ctx);
    if (device == MTK_DEVICE_CPU && numel > MTK_EVAL_MAX_CPU_LITERAL_NUMEL)
        return eval_error_at(ev, n, MTK_ERR_INVALID_ARGUMENT,
                             "the tensor literal %s has %lld elements, more than mtk eval's limit of "
                             "%lld for a zero-filled cpu literal (MTK_EVAL_MAX_CPU_LITERAL_NUMEL); on "
                             "meta (the default device) it has no data and any size",
                             n->source, (long long)numel, (long long)MTK_EVAL_MAX_CPU_LITERAL_NUMEL);
    mtk_tensor *t = mtk_tensor_new(ctx, dtype, n->shape, n->ndim, NULL, device);
    if (!t) return eval_fail_at(ev, n);
    if (device == MTK_DEVICE_CPU) {
        if (!mtk_tensor_alloc_storage(t)) return eval_fail_at(ev, n);
        memset(mtk_tensor_data(t), 0, mtk_tensor_nbytes(t));
    }
    *out = mtk_value_tensor(t);
    return true;
}

/* ------------------------------------------------------------- builtins */

/* float(x): a number or a string such as 'inf', '-inf', 'nan', '1e-3'. */
static bool builtin_float(evaluator *ev, const node *n, const mtk_value *args, mtk_value *out)
{
    const mtk_value *v = &args[0];
    if (mtk_value_is_number(v)) {
        *out = mtk_value_float(mtk_value_as_double(v));
        return true;
    }
    if (v->kind != MTK_VALUE_STRING)
        return eval_error_at(ev, n, MTK_ERR_INVALID_ARGUMENT,
                        "float() argument must be a string or a real number, not '%s'",
                        mtk_value_type_name(v));
    const char *s = v->as.s;
    while (isspace((unsigned char)*s)) s++;
    const char *body = s + (*s == '+' || *s == '-');
    double sign = *s == '-' ? -1.0 : 1.0;
    size_t len = strlen(body);
    while (len && isspace((unsigned char)body[len - 1])) len--;
    if ((len == 3 && strncasecmp(body, "inf", 3) == 0) || (len == 8 && strncasecmp(body, "infinity", 8) == 0)) {
        *out = mtk_value_float(sign * INFINITY);
        return true;
    }
    if (len == 3 && strncasecmp(body, "nan", 3) == 0) {
        *out = mtk_value_float(NAN);
        return true;
    }
    char *end;
    double d = strtod(s, &end);
    while (isspace((unsigned char)*end)) end++;
    if (end == s || *end || isalpha((unsigned char)*body) || strchr(s, 'x') || strchr(s, 'X'))
        return eval_error_at(ev, n, MTK_ERR_INVALID_ARGUMENT, "could not convert string to float: '%s'",
                        v->as.s);
    *out = mtk_value_float(d);
    return true;
}

/* torch.device('meta'). */
static bool builtin_device(evaluator *ev, const node *n, const mtk_value *args, mtk_value *out)
{
    mtk_device device;
    if (args[0].kind == MTK_VALUE_DEVICE) {
        *out = args[0];
        return true;
    }
    if (args[0].kind != MTK_VALUE_STRING)
        return eval_error_at(ev, n, MTK_ERR_INVALID_ARGUMENT, "device(): argument 'type' must be str, not %s",
                        mtk_value_type_name(&args[0]));
    if (!mtk_device_parse(args[0].as.s, &device))
        return eval_error_at(ev, n, MTK_ERR_DEVICE,
                        "Expected one of cpu, cuda, meta device type at start of device string: %s",
                        args[0].as.s);
    *out = mtk_value_device(device);
    return true;
}

/* len(x): a sequence's items, a tensor's first size. */
static bool builtin_len(evaluator *ev, const node *n, const mtk_value *args, mtk_value *out)
{
    const mtk_value *v = &args[0];
    if (v->kind == MTK_VALUE_LIST || v->kind == MTK_VALUE_TUPLE) {
        *out = mtk_value_int(v->as.list.count);
        return true;
    }
    if (v->kind == MTK_VALUE_STRING) {
        *out = mtk_value_int((int64_t)strlen(v->as.s ? v->as.s : ""));
        return true;
    }
    if (v->kind == MTK_VALUE_TENSOR && v->as.tensor) {
        if (v->as.tensor->ndim == 0)
            return eval_error_at(ev, n, MTK_ERR_INVALID_ARGUMENT, "len() of a 0-d tensor");
        *out = mtk_value_int(v->as.tensor->shape[0]);
        return true;
    }
    return eval_error_at(ev, n, MTK_ERR_INVALID_ARGUMENT, "object of type '%s' has no len()",
                         mtk_value_type_name(v));
}

typedef bool (*builtin_fn)(evaluator *ev, const node *n, const mtk_value *args, mtk_value *out);

static const struct builtin {
    const char *name;
    builtin_fn fn;
} builtins[] = {
    { "float", builtin_float },
    { "len", builtin_len },
    { "torch.device", builtin_device },
    { "device", builtin_device },
};

static const struct builtin *find_builtin(const node *n)
{
    if (n->is_method) return NULL;
    for (size_t i = 0; i < sizeof builtins / sizeof builtins[0]; i++)
        if (strcmp(n->name, builtins[i].name) == 0) return &builtins[i];
    return NULL;
}

/* ------------------------------------------------------------------ calls */

/* The op name without torch./F. prefixes, as mtk_op_find reads it. */
static const char *bare_op_name(const char *name)
{
    static const char *const prefixes[] = { "torch.nn.functional.", "torch.", "F.", "nn.functional." };
    for (size_t p = 0; p < sizeof prefixes / sizeof prefixes[0]; p++) {
        size_t n = strlen(prefixes[p]);
        if (strncmp(name, prefixes[p], n) == 0) return name + n;
    }
    return name;
}

/* Edit distance of two short strings (insert, delete, substitute), or
 * any value above `cutoff` once it is sure to exceed it. */
static int edit_distance(const char *a, const char *b, int cutoff)
{
    size_t na = strlen(a), nb = strlen(b);
    if (na > 48 || nb > 48) return cutoff + 1;
    int row[49];
    for (size_t j = 0; j <= nb; j++) row[j] = (int)j;
    for (size_t i = 1; i <= na; i++) {
        int diag = row[0];
        int row_min = row[0] = (int)i;
        for (size_t j = 1; j <= nb; j++) {
            int up = row[j];
            int best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best) best = up + 1;
            if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
            if (best < row_min) row_min = best;
        }
        if (row_min > cutoff) return cutoff + 1; /* rows never decrease */
    }
    return row[nb];
}

const char *eval_nearest_name(const char *name, const char *const *names, int32_t count)
{
    const char *best = NULL;
    int limit = (int)strlen(name) / 4 + 1; /* a typo or two, more for longer names */
    if (limit > 3) limit = 3;
    int best_distance = limit + 1;
    size_t len_name = strlen(name);
    for (int32_t i = 0; i < count; i++) {
        size_t len = strlen(names[i]);
        if ((len > len_name ? len - len_name : len_name - len) >= (size_t)best_distance) continue;
        int d = edit_distance(name, names[i], best_distance - 1);
        if (d < best_distance) {
            best = names[i];
            best_distance = d;
        }
    }
    return best;
}

/* The nearest op name (or, for a method, tensor member) to a typo. */
static const char *nearest_op(const char *bare, bool method, bool *is_member)
{
    const char *candidates[1024];
    int32_t n = 0;
    *is_member = false;
    for (int32_t i = 0; i < mtk_op_count() && n < 1024; i++) candidates[n++] = mtk_op_at(i)->name;
    const char *best = eval_nearest_name(bare, candidates, n);
    if (method) {
        const char *members[64];
        int32_t count = eval_member_names(members, 64);
        const char *member = eval_nearest_name(bare, members, count);
        if (member && (!best || edit_distance(bare, member, 3) <= edit_distance(bare, best, 3))) {
            best = member;
            *is_member = true;
        }
    }
    return best;
}

static bool unknown_op(evaluator *ev, const node *n)
{
    bool member;
    const char *best = nearest_op(bare_op_name(n->name), n->is_method, &member);
    if (best)
        return eval_error_at(ev, n, MTK_ERR_UNKNOWN_OP, "unknown op '%s'; did you mean '%s'? (mtk ops lists them)",
                             n->name, best);
    return eval_error_at(ev, n, MTK_ERR_UNKNOWN_OP, "unknown op '%s' (mtk ops lists them)", n->name);
}

static bool eval_call(evaluator *ev, const node *n, mtk_value *out)
{
    const struct builtin *builtin = find_builtin(n);
    mtk_value *args = mtk_ctx_alloc(ev->ctx, (size_t)(n->count ? n->count : 1) * sizeof *args);
    if (!args) return eval_fail_at(ev, n);
    int32_t first = 0;
    if (n->is_method) {
        /* Python: the receiver, then the attribute lookup, then the arguments */
        if (!eval_node(ev, n->items[0], &args[0])) return false;
        bool ok;
        if (eval_builtin_method(ev, n, &args[0], out, &ok)) return ok;
        first = 1;
    }
    if (!builtin && !mtk_op_find(n->name)) return unknown_op(ev, n); /* before the arguments, as Python */
    for (int32_t i = first; i < n->count; i++)
        if (!eval_node(ev, n->items[i], &args[i])) return false;
    int32_t npositional = n->count - n->nkw;
    if (builtin) {
        if (n->nkw > 0 || npositional != 1)
            return eval_error_at(ev, n, MTK_ERR_INVALID_ARGUMENT, "%s() takes exactly one positional argument",
                                 n->name);
        return builtin->fn(ev, n, args, out);
    }
    if (!mtk_op_call_by_name(ev->ctx, n->name, args, npositional, n->kw_names, args + npositional,
                             n->nkw, out))
        return eval_fail_at(ev, n);
    if (out->kind == MTK_VALUE_LIST || out->kind == MTK_VALUE_TUPLE)
        return eval_spend_items(ev, n, out->as.list.count);
    return true;
}

/* ------------------------------------------------------------------ nodes */

bool eval_node(evaluator *ev, const node *n, mtk_value *out)
{
    *out = mtk_value_none();
    switch (n->kind) {
    case NODE_CONST: *out = n->constant; return true;
    case NODE_NAME: return resolve_name(ev, n, out);
    case NODE_TENSOR: return make_literal(ev, n, out);
    case NODE_CALL: return eval_call(ev, n, out);
    case NODE_NEGATE:
    case NODE_PLUS:
    case NODE_INVERT: return eval_unary(ev, n, out);
    case NODE_BINARY: return eval_binary(ev, n, out);
    case NODE_COMPARE: return eval_compare(ev, n, out);
    case NODE_ATTRIBUTE: return eval_attribute(ev, n, out);
    case NODE_SUBSCRIPT: return eval_subscript(ev, n, out);
    case NODE_SLICE:
        return eval_error_at(ev, n, MTK_ERR_SYNTAX, "a slice (a:b:c) can only stand inside x[...]");
    case NODE_ELLIPSIS:
        return eval_error_at(ev, n, MTK_ERR_INVALID_ARGUMENT,
                             "Ellipsis ('...') is only supported as an index, as in x[..., 0]");
    case NODE_LIST:
    case NODE_TUPLE: {
        if (!eval_spend_items(ev, n, n->count)) return false;
        mtk_value seq = mtk_value_list(ev->ctx, n->count, n->kind == NODE_TUPLE);
        if (seq.kind == MTK_VALUE_NONE) return eval_fail_at(ev, n);
        for (int32_t i = 0; i < n->count; i++)
            if (!eval_node(ev, n->items[i], &seq.as.list.items[i])) return false;
        *out = seq;
        return true;
    }
    }
    return eval_error_at(ev, n, MTK_ERR_INVALID_ARGUMENT, "bad syntax tree node %d", (int)n->kind);
}

bool mtk_eval_text(mtk_ctx *ctx, const char *text, size_t len, mtk_value *result,
                   int32_t *error_column)
{
    int32_t column = 0;
    *result = mtk_value_none();
    if (error_column) *error_column = 0;
    if (mtk_ctx_status(ctx) != MTK_OK) return false;
    node *root = mtk_parse_expression(ctx, text, len, &column);
    if (root) {
        evaluator ev = { ctx, 0, 0 };
        mtk_value v;
        if (eval_node(&ev, root, &v) && mtk_ctx_status(ctx) == MTK_OK) {
            *result = v;
            return true;
        }
        if (mtk_ctx_status(ctx) == MTK_OK)
            mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "evaluation failed without a message");
        column = ev.error_column ? ev.error_column : root->column;
    }
    if (error_column) *error_column = column;
    return false;
}

bool mtk_eval(mtk_ctx *ctx, const char *expr, mtk_value *result)
{
    if (!expr) {
        *result = mtk_value_none();
        return mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "mtk_eval: NULL expression");
    }
    return mtk_eval_text(ctx, expr, strlen(expr), result, NULL);
}
