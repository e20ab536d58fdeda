/* The eval language's operators with Python's meaning: on Python numbers
 * as Python computes them (int64 instead of unbounded ints: a result past
 * int64 is an error), on tuples and lists as sequences, and on tensors as
 * torch's Tensor dunder methods do (a + b is add(a, b), 2 - x is
 * rsub(x, 2), 2 / x is reciprocal(x) * 2, x @ y is matmul(x, y), ...). */
#include "eval/eval_internal.h"
#include "mtk/op.h"

#include <math.h>
#include <string.h>

/* ------------------------------------------------------- Python numbers */

static bool is_number(const mtk_value *v) { return mtk_value_is_number(v); }

/* An int operand (bools count as 0 and 1). */
static int64_t int_of(const mtk_value *v) { return v->kind == MTK_VALUE_BOOL ? (int64_t)v->as.b : v->as.i; }

static bool int_overflow(evaluator *ev, const node *n, const char *op, int64_t a, int64_t b)
{
    return eval_error_at(ev, n, MTK_ERR_OVERFLOW,
                         "%lld %s %lld does not fit in int64 (Python's ints are unbounded; mtk "
                         "eval's are 64-bit)",
                         (long long)a, op, (long long)b);
}

/* Python's float floor division and modulo (CPython's float_divmod). */
static void float_divmod(double a, double b, double *floordiv, double *mod)
{
    double m = fmod(a, b);
    double div = (a - m) / b;
    if (m != 0) {
        if ((b < 0) != (m < 0)) {
            m += b;
            div -= 1.0;
        }
    } else {
        m = copysign(0.0, b);
    }
    double fd;
    if (div != 0) {
        fd = floor(div);
        if (div - fd > 0.5) fd += 1.0;
    } else {
        fd = copysign(0.0, a / b);
    }
    *floordiv = fd;
    *mod = m;
}

static bool float_binary(evaluator *ev, const node *n, const char *op, double a, double b, mtk_value *out)
{
    double r, fd, m;
    if (strcmp(op, "+") == 0) r = a + b;
    else if (strcmp(op, "-") == 0) r = a - b;
    else if (strcmp(op, "*") == 0) r = a * b;
    else if (strcmp(op, "/") == 0) {
        if (b == 0) return eval_error_at(ev, n, MTK_ERR_INVALID_ARGUMENT, "float division by zero");
        r = a / b;
    } else if (strcmp(op, "//") == 0 || strcmp(op, "%") == 0) {
        bool floor_div = op[0] == '/';
        if (b == 0)
            return eval_error_at(ev, n, MTK_ERR_INVALID_ARGUMENT, "float %s by zero",
                                 floor_div ? "floor division" : "modulo");
        float_divmod(a, b, &fd, &m);
        r = floor_div ? fd : m;
    } else if (strcmp(op, "**") == 0) {
        if (a == 0 && b < 0)
            return eval_error_at(ev, n, MTK_ERR_INVALID_ARGUMENT, "0.0 cannot be raised to a negative power");
        if (a < 0 && isfinite(a) && isfinite(b) && b != floor(b))
            return eval_error_at(ev, n, MTK_ERR_INVALID_ARGUMENT,
                                 "%g ** %g is a complex number, which mtk eval does not have", a, b);
        r = pow(a, b);
        if (isinf(r) && isfinite(a) && isfinite(b))
            return eval_error_at(ev, n, MTK_ERR_OVERFLOW, "%g ** %g: numerical result out of range", a, b);
    } else {
        return eval_error_at(ev, n, MTK_ERR_INVALID_ARGUMENT, "unsupported operand type(s) for %s: 'float'",
                             op);
    }
    *out = mtk_value_float(r);
    return true;
}

/* a ** b for ints, b >= 0, by squaring with overflow checks. */
static bool int_power(int64_t a, int64_t b, int64_t *out)
{
    int64_t result = 1, base = a;
    while (b > 0) {
        if ((b & 1) && __builtin_mul_overflow(result, base, &result)) return false;
        b >>= 1;
        if (b > 0 && __builtin_mul_overflow(base, base, &base)) return false;
    }
    *out = result;
    return true;
}

static bool int_binary(evaluator *ev, const node *n, const char *op, const mtk_value *va, const mtk_value *vb,
                       mtk_value *out)
{
    int64_t a = int_of(va), b = int_of(vb), r;
    bool both_bool = va->kind == MTK_VALUE_BOOL && vb->kind == MTK_VALUE_BOOL;
    switch (op[0]) {
    case '+': if (__builtin_add_overflow(a, b, &r)) return int_overflow(ev, n, op, a, b); break;
    case '-': if (__builtin_sub_overflow(a, b, &r)) return int_overflow(ev, n, op, a, b); break;
    case '*':
        if (op[1] == '*') {
            if (b < 0) return float_binary(ev, n, op, (double)a, (double)b, out);
            if (!int_power(a, b, &r)) return int_overflow(ev, n, op, a, b);
        } else if (__builtin_mul_overflow(a, b, &r)) {
            return int_overflow(ev, n, op, a, b);
        }
        break;
    case '/':
        if (op[1] != '/') {
            if (b == 0) return eval_error_at(ev, n, MTK_ERR_INVALID_ARGUMENT, "division by zero");
            *out = mtk_value_float((double)a / (double)b);
            return true;
        }
        __attribute__((fallthrough)); /* floor division */
    case '%': {
        if (b == 0)
            return eval_error_at(ev, n, MTK_ERR_INVALID_ARGUMENT, "%s",
                                 op[0] == '%' ? "integer modulo by zero" : "integer division or modulo by zero");
        if (a == INT64_MIN && b == -1) {
            if (op[0] == '%') r = 0;
            else return int_overflow(ev, n, op, a, b);
            break;
        }
        int64_t q = a / b, m = a % b;
        if (m != 0 && ((m < 0) != (b < 0))) {
            q -= 1;
            m += b;
        }
        r = op[0] == '%' ? m : q;
        break;
    }
    case '&': r = a & b; if (both_bool) { *out = mtk_value_bool(r != 0); return true; } break;
    case '|': r = a | b; if (both_bool) { *out = mtk_value_bool(r != 0); return true; } break;
    case '^': r = a ^ b; if (both_bool) { *out = mtk_value_bool(r != 0); return true; } break;
    case '<':
    case '>':
        if (b < 0) return eval_error_at(ev, n, MTK_ERR_INVALID_ARGUMENT, "negative shift count");
        if (op[0] == '>') {
            r = b >= 63 ? (a < 0 ? -1 : 0) : a >> b;
        } else {
            if (a != 0 && (b >= 63 || (a > 0 ? a > (INT64_MAX >> b) : a < (INT64_MIN >> b))))
                return int_overflow(ev, n, op, a, b);
            r = (int64_t)((uint64_t)a << (b >= 63 ? 0 : b));
        }
        break;
    default:
        return eval_error_at(ev, n, MTK_ERR_INVALID_ARGUMENT, "unsupported operand type(s) for %s: '%s' and '%s'",
                             op, mtk_value_type_name(va), mtk_value_type_name(vb));
    }
    *out = mtk_value_int(r);
    return true;
}

static bool number_binary(evaluator *ev, const node *n, const char *op, const mtk_value *a, const mtk_value *b,
                          mtk_value *out)
{
    bool is_float = a->kind == MTK_VALUE_FLOAT || b->kind == MTK_VALUE_FLOAT;
    bool int_only = strchr("&|^<>", op[0]) != NULL || strcmp(op, "@") == 0;
    if (is_float && int_only)
        return eval_error_at(ev, n, MTK_ERR_INVALID_ARGUMENT, "unsupported operand type(s) for %s: '%s' and '%s'",
                             op, mtk_value_type_name(a), mtk_value_type_name(b));
    if (is_float) return float_binary(ev, n, op, mtk_value_as_double(a), mtk_value_as_double(b), out);
    return int_binary(ev, n, op, a, b, out);
}

/* ------------------------------------------------------------ sequences */

/* Items of a sequence, nested sequences' items included, counted up to
 * `limit` (the walk stops there: shared sublists cannot make it long). */
static int64_t deep_count(const mtk_value *v, int64_t limit)
{
    if (v->kind != MTK_VALUE_LIST && v->kind != MTK_VALUE_TUPLE) return 0;
    int64_t total = v->as.list.count;
    for (int32_t i = 0; i < v->as.list.count && total < limit; i++)
        total += deep_count(&v->as.list.items[i], limit - total);
    return total;
}

/* list + list, tuple + tuple (a torch.Size stays one), seq * int. */
static bool sequence_binary(evaluator *ev, const node *n, const char *op, const mtk_value *a, const mtk_value *b,
                            mtk_value *out)
{
    bool a_seq = a->kind == MTK_VALUE_LIST || a->kind == MTK_VALUE_TUPLE;
    bool b_seq = b->kind == MTK_VALUE_LIST || b->kind == MTK_VALUE_TUPLE;
    const mtk_value *parts[2] = { a, b };
    int64_t repeat = 1;
    int32_t nparts = 2;
    if (strcmp(op, "+") == 0 && a_seq && b_seq) {
        if (a->kind != b->kind)
            return eval_error_at(ev, n, MTK_ERR_INVALID_ARGUMENT, "can only concatenate %s (not \"%s\") to %s",
                                 mtk_value_type_name(a), mtk_value_type_name(b), mtk_value_type_name(a));
    } else if (strcmp(op, "*") == 0 && (a_seq || b_seq) &&
               (a_seq ? b : a)->kind != MTK_VALUE_FLOAT && is_number(a_seq ? b : a)) {
        parts[0] = a_seq ? a : b;
        repeat = int_of(a_seq ? b : a);
        if (repeat < 0) repeat = 0;
        nparts = 1;
    } else {
        return eval_error_at(ev, n, MTK_ERR_INVALID_ARGUMENT, "unsupported operand type(s) for %s: '%s' and '%s'",
                             op, mtk_value_type_name(a), mtk_value_type_name(b));
    }
    int64_t total = 0;
    for (int32_t k = 0; k < nparts; k++) total += parts[k]->as.list.count;
    if (total > 0 && repeat > MTK_EVAL_MAX_ITEMS / total)
        return eval_error_at(ev, n, MTK_ERR_INVALID_ARGUMENT,
                             "the %s would have more than mtk eval's limit of %d items "
                             "(MTK_EVAL_MAX_ITEMS)",
                             mtk_value_type_name(parts[0]), MTK_EVAL_MAX_ITEMS);
    total *= repeat;
    /* what printing would walk: nested lists count their items too (a
     * repeated list is shared, not copied, so [[0] * 256] * 256 ... would
     * print exponentially many) */
    int64_t deep = 0;
    for (int32_t k = 0; k < nparts && deep <= MTK_EVAL_MAX_ITEMS; k++)
        deep += deep_count(parts[k], MTK_EVAL_MAX_ITEMS + 1);
    if (deep > 0 && repeat > MTK_EVAL_MAX_ITEMS) deep = MTK_EVAL_MAX_ITEMS + 1;
    else deep *= repeat; /* both at most about 2^17: no overflow */
    if (deep > MTK_EVAL_MAX_ITEMS)
        return eval_error_at(ev, n, MTK_ERR_INVALID_ARGUMENT,
                             "the %s would hold more than mtk eval's limit of %d items, nested ones "
                             "included (MTK_EVAL_MAX_ITEMS)",
                             mtk_value_type_name(parts[0]), MTK_EVAL_MAX_ITEMS);
    if (!eval_spend_items(ev, n, total)) return false;
    mtk_value seq = mtk_value_list(ev->ctx, (int32_t)total, parts[0]->kind == MTK_VALUE_TUPLE);
    if (seq.kind == MTK_VALUE_NONE) return eval_fail_at(ev, n);
    bool size = (a_seq && a->as.list.is_size) || (b_seq && b->as.list.is_size);
    int32_t at = 0;
    for (int64_t r = 0; r < repeat; r++)
        for (int32_t k = 0; k < nparts; k++)
            for (int32_t i = 0; i < parts[k]->as.list.count; i++) seq.as.list.items[at++] = parts[k]->as.list.items[i];
    for (int32_t i = 0; i < at && size; i++) /* a torch.Size holds ints only */
        if (seq.as.list.items[i].kind != MTK_VALUE_INT) size = false;
    seq.as.list.is_size = size;
    *out = seq;
    return true;
}

/* --------------------------------------------------------------- tensors */

static bool call2(evaluator *ev, const node *n, const char *op, mtk_value a, mtk_value b, mtk_value *out)
{
    mtk_value args[2] = { a, b };
    return eval_op(ev, n, op, args, 2, out);
}

/* a OP b where a or b is a tensor, as torch's Tensor.__op__ / __rop__. */
static bool tensor_binary(evaluator *ev, const node *n, const char *op, const mtk_value *a, const mtk_value *b,
                          mtk_value *out)
{
    bool reflected = a->kind != MTK_VALUE_TENSOR; /* b.__rop__(a) */
    static const struct { const char *op, *name; } table[] = {
        { "+", "add" }, { "-", "sub" }, { "*", "mul" }, { "/", "div" }, { "//", "floor_divide" },
        { "%", "remainder" }, { "**", "pow" }, { "@", "matmul" }, { "&", "bitwise_and" },
        { "|", "bitwise_or" }, { "^", "bitwise_xor" },
    };
    const char *name = NULL;
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (strcmp(op, table[i].op) == 0) name = table[i].name;
    if (!name)
        return eval_error_at(ev, n, MTK_ERR_NOT_IMPLEMENTED,
                             "the tensor operator %s (bitwise shift) is not in mtk's op table", op);
    if (strcmp(op, "@") == 0 && (a->kind != MTK_VALUE_TENSOR || b->kind != MTK_VALUE_TENSOR))
        return eval_error_at(ev, n, MTK_ERR_INVALID_ARGUMENT, "unsupported operand type(s) for @: '%s' and '%s'",
                             mtk_value_type_name(a), mtk_value_type_name(b));
    if (!reflected) return call2(ev, n, name, *a, *b, out);
    if (strcmp(op, "-") == 0) return call2(ev, n, "rsub", *b, *a, out);
    if (strcmp(op, "/") == 0) { /* Tensor.__rdiv__: reciprocal() * other */
        mtk_value r;
        return eval_op(ev, n, "reciprocal", b, 1, &r) && call2(ev, n, "mul", r, *a, out);
    }
    /* the commutative ones keep the tensor first, the others are
     * torch.op(other, self) */
    if (strcmp(op, "//") == 0 || strcmp(op, "%") == 0 || strcmp(op, "**") == 0)
        return call2(ev, n, name, *a, *b, out);
    return call2(ev, n, name, *b, *a, out);
}

bool eval_binary(evaluator *ev, const node *n, mtk_value *out)
{
    mtk_value a, b;
    if (!eval_node(ev, n->items[0], &a) || !eval_node(ev, n->items[1], &b)) return false;
    const node *at = n;
    if (a.kind == MTK_VALUE_TENSOR || b.kind == MTK_VALUE_TENSOR) return tensor_binary(ev, at, n->name, &a, &b, out);
    if (is_number(&a) && is_number(&b)) return number_binary(ev, at, n->name, &a, &b, out);
    return sequence_binary(ev, at, n->name, &a, &b, out);
}

/* ---------------------------------------------------------------- unary */

bool eval_unary(evaluator *ev, const node *n, mtk_value *out)
{
    mtk_value v;
    if (!eval_node(ev, n->items[0], &v)) return false;
    char op = n->kind == NODE_NEGATE ? '-' : n->kind == NODE_PLUS ? '+' : '~';
    switch (v.kind) {
    case MTK_VALUE_BOOL:
    case MTK_VALUE_INT: {
        int64_t i = int_of(&v);
        if (op == '-' && i == INT64_MIN)
            return eval_error_at(ev, n, MTK_ERR_OVERFLOW, "-(%lld) does not fit in int64", (long long)i);
        *out = mtk_value_int(op == '-' ? -i : op == '+' ? i : ~i);
        return true;
    }
    case MTK_VALUE_FLOAT:
        if (op == '~') break;
        *out = mtk_value_float(op == '-' ? -v.as.f : v.as.f);
        return true;
    case MTK_VALUE_TENSOR:
        if (op == '~' && v.as.tensor && mtk_dtype_is_floating(v.as.tensor->dtype))
            return eval_error_at(ev, n, MTK_ERR_DTYPE,
                                 "~ (operator.invert) is only implemented on integer and Boolean-type tensors");
        /* Tensor.__neg__, __pos__, __invert__ */
        return eval_op(ev, n, op == '-' ? "neg" : op == '+' ? "positive" : "bitwise_not", &v, 1, out);
    default: break;
    }
    return eval_error_at(ev, n, MTK_ERR_INVALID_ARGUMENT, "bad operand type for unary %c: '%s'", op,
                         mtk_value_type_name(&v));
}

/* ----------------------------------------------------------- comparisons */

/* -1, 0, 1 for a < b, a == b, a > b of Python numbers compared exactly
 * (an int against a float as Python does); 2 when unordered (NaN). */
static int compare_numbers(const mtk_value *a, const mtk_value *b)
{
    if (a->kind != MTK_VALUE_FLOAT && b->kind != MTK_VALUE_FLOAT) {
        int64_t x = int_of(a), y = int_of(b);
        return x < y ? -1 : x > y;
    }
    if (a->kind == MTK_VALUE_FLOAT && b->kind == MTK_VALUE_FLOAT) {
        double x = a->as.f, y = b->as.f;
        if (isnan(x) || isnan(y)) return 2;
        return x < y ? -1 : x > y;
    }
    bool flip = a->kind == MTK_VALUE_FLOAT; /* make a the int */
    const mtk_value *iv = flip ? b : a;
    double d = flip ? a->as.f : b->as.f;
    int64_t i = int_of(iv);
    int r;
    if (isnan(d)) return 2;
    if (d >= 9223372036854775808.0) r = -1;
    else if (d < -9223372036854775808.0) r = 1;
    else {
        double f = floor(d);
        int64_t fi = (int64_t)f;
        if (i < fi) r = -1;
        else if (i > fi) r = 1;
        else r = d > f ? -1 : 0; /* i == floor(d): i < d when d has a fraction */
    }
    return flip ? -r : r;
}

static bool values_equal(const mtk_value *a, const mtk_value *b);

static bool values_equal(const mtk_value *a, const mtk_value *b)
{
    if (is_number(a) && is_number(b)) return compare_numbers(a, b) == 0;
    if (a->kind != b->kind) return false;
    switch (a->kind) {
    case MTK_VALUE_NONE: return true;
    case MTK_VALUE_STRING: return strcmp(a->as.s ? a->as.s : "", b->as.s ? b->as.s : "") == 0;
    case MTK_VALUE_DTYPE: return a->as.dtype == b->as.dtype;
    case MTK_VALUE_DEVICE: return a->as.device == b->as.device;
    case MTK_VALUE_LIST:
    case MTK_VALUE_TUPLE:
        if (a->as.list.count != b->as.list.count) return false;
        for (int32_t i = 0; i < a->as.list.count; i++) /* nested no deeper than the syntax tree */
            if (!values_equal(&a->as.list.items[i], &b->as.list.items[i])) return false;
        return true;
    default: return false;
    }
}

/* One comparison a OP b into *out (a bool, or a tensor). */
static bool compare_pair(evaluator *ev, const node *n, const char *op, const mtk_value *a, const mtk_value *b,
                         mtk_value *out)
{
    static const struct { const char *op, *name, *mirror; } table[] = {
        { "<", "lt", "gt" }, { ">", "gt", "lt" }, { "<=", "le", "ge" },
        { ">=", "ge", "le" }, { "==", "eq", "eq" }, { "!=", "ne", "ne" },
    };
    size_t k = 0;
    while (strcmp(table[k].op, op) != 0) k++;
    if (a->kind == MTK_VALUE_TENSOR) return call2(ev, n, table[k].name, *a, *b, out);
    if (b->kind == MTK_VALUE_TENSOR) return call2(ev, n, table[k].mirror, *b, *a, out); /* the reflection */
    bool equality = op[0] == '=' || op[0] == '!';
    if (equality) {
        bool eq = values_equal(a, b);
        *out = mtk_value_bool(op[0] == '=' ? eq : !eq);
        return true;
    }
    if (!is_number(a) || !is_number(b))
        return eval_error_at(ev, n, MTK_ERR_INVALID_ARGUMENT, "'%s' not supported between instances of '%s' and '%s'",
                             op, mtk_value_type_name(a), mtk_value_type_name(b));
    int c = compare_numbers(a, b);
    bool r = c != 2 && ((op[0] == '<' && (c < 0 || (op[1] == '=' && c == 0))) ||
                        (op[0] == '>' && (c > 0 || (op[1] == '=' && c == 0))));
    *out = mtk_value_bool(r);
    return true;
}

bool eval_compare(evaluator *ev, const node *n, mtk_value *out)
{
    mtk_value left, right;
    if (!eval_node(ev, n->items[0], &left)) return false;
    for (int32_t i = 1; i < n->count; i++) {
        if (!eval_node(ev, n->items[i], &right)) return false;
        if (!compare_pair(ev, n, n->kw_names[i - 1], &left, &right, out)) return false;
        if (i + 1 == n->count) return true;
        /* a < b < c is (a < b) and (b < c): the first result's truth */
        if (out->kind == MTK_VALUE_TENSOR)
            return eval_error_at(ev, n, MTK_ERR_INVALID_ARGUMENT,
                                 "a chained comparison needs the truth value of a Tensor, which a "
                                 "meta tensor does not have and a tensor of several values makes "
                                 "ambiguous; combine the comparisons with &: (a < b) & (b < c)");
        if (!out->as.b) return true;
        left = right;
    }
    return true;
}
