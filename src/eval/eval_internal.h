/* Shared by the evaluator's files (eval.c: nodes, names, calls;
 * operators.c; attributes.c; subscript.c).  Internal helpers carry the
 * eval_ prefix. */
#ifndef MTK_EVAL_INTERNAL_H
#define MTK_EVAL_INTERNAL_H

#include "mtk/eval.h"
#include "eval/parser.h"

typedef struct evaluator {
    mtk_ctx *ctx;
    int32_t error_column; /* where the first failure was found */
    int64_t items_built;  /* items of the lists and tuples that + and *
                             and ops' results made: at most
                             MTK_EVAL_MAX_ITEMS in one expression */
} evaluator;

/* Counts `count` more built items against the expression's budget;
 * false with an error naming the limit past it. */
bool eval_spend_items(evaluator *ev, const node *n, int64_t count);

/* Marks node `n` as where evaluation failed (innermost first wins);
 * returns false. */
bool eval_fail_at(evaluator *ev, const node *n);

/* Sets the context's error and marks `n`; returns false. */
bool eval_error_at(evaluator *ev, const node *n, mtk_status status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

/* Evaluates a node into *out (recursing over its items; the parser has
 * bounded the tree's height). */
bool eval_node(evaluator *ev, const node *n, mtk_value *out);

/* Calls the op `name` with positional arguments; marks `n` on failure. */
bool eval_op(evaluator *ev, const node *n, const char *name, const mtk_value *args, int32_t nargs,
             mtk_value *out);

/* The nearest of `names` (count of them) to `name`, within a typo or two,
 * or NULL. */
const char *eval_nearest_name(const char *name, const char *const *names, int32_t count);

/* operators.c: -x +x ~x, x OP y, and comparison chains. */
bool eval_unary(evaluator *ev, const node *n, mtk_value *out);
bool eval_binary(evaluator *ev, const node *n, mtk_value *out);
bool eval_compare(evaluator *ev, const node *n, mtk_value *out);

/* attributes.c: x.shape, x.dtype, ...; and the methods that are not ops
 * (x.size(), x.stride(1), x.numel(), ...). */
bool eval_attribute(evaluator *ev, const node *n, mtk_value *out);

/* A method call whose receiver is evaluated (args[0]) and arguments not
 * yet: true when `n` names a tensor method that is not an op (its result
 * or error is set, *ok says which), or an attribute called by mistake. */
bool eval_builtin_method(evaluator *ev, const node *n, const mtk_value *receiver, mtk_value *out, bool *ok);

/* Names of the tensor attributes and non-op methods, for suggestions:
 * up to `cap` of them into names[]; returns how many. */
int32_t eval_member_names(const char **names, int32_t cap);

/* subscript.c: x[...] for tensors (torch's basic indexing), tuples and
 * lists (Python's). */
bool eval_subscript(evaluator *ev, const node *n, mtk_value *out);

#endif
