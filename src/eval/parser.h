/* The eval language's syntax tree and parser.  The whole expression is
 * parsed before anything runs, so a syntax error is reported before any
 * op is called, as Python does. */
#ifndef MTK_EVAL_PARSER_H
#define MTK_EVAL_PARSER_H

#include "mtk/core.h"
#include "mtk/value.h"

typedef enum node_kind {
    NODE_CONST,     /* a number or string literal: `constant`            */
    NODE_NAME,      /* a (dotted) name: True, None, bf16, torch.float16  */
    NODE_TENSOR,    /* DTYPE[sizes]: `name` is the dtype, `shape`/`ndim`  */
    NODE_CALL,      /* name(args) or items[0].name(args) (is_method)     */
    NODE_LIST,      /* [items]                                           */
    NODE_TUPLE,     /* (items,)                                          */
    NODE_NEGATE,    /* -items[0]                                         */
    NODE_PLUS,      /* +items[0]                                         */
    NODE_INVERT,    /* ~items[0]                                         */
    NODE_BINARY,    /* items[0] `name` items[1]: "+", "**", "@", ...     */
    NODE_COMPARE,   /* items[0] ops[0] items[1] ops[1] ... (a chain)     */
    NODE_ATTRIBUTE, /* items[0].name                                     */
    NODE_SUBSCRIPT, /* items[0][items[1], ...] (index_tuple: a comma)    */
    NODE_SLICE,     /* start:stop:step in a subscript: items[0..2], each
                       NULL when left out                                */
    NODE_ELLIPSIS   /* ...                                               */
} node_kind;

typedef struct node {
    node_kind kind;
    int32_t column;         /* 1-based byte column where the node starts */
    int32_t height;         /* 1 for a leaf, else 1 + the highest item's  */
    mtk_value constant;     /* NODE_CONST                                 */
    const char *name;       /* NAME, TENSOR (dtype), CALL (op name),
                               ATTRIBUTE, BINARY (the operator)           */
    const char *source;     /* TENSOR: the literal as written             */
    int64_t *shape;         /* TENSOR: sizes                              */
    int32_t ndim;           /* TENSOR: number of sizes                    */
    struct node **items;    /* LIST, TUPLE, NEGATE/PLUS/INVERT (one item),
                               CALL: the arguments, positional ones first
                               (the receiver first for a method call),
                               BINARY (two), COMPARE, ATTRIBUTE (one),
                               SUBSCRIPT, SLICE (three, maybe NULL)       */
    int32_t count;          /* number of items                            */
    const char **kw_names;  /* CALL: names of the last nkw items;
                               COMPARE: the count-1 operators             */
    int32_t nkw;
    bool is_method;         /* CALL: x.name(...)                          */
    bool index_tuple;       /* SUBSCRIPT: written with a comma (x[0,])    */
} node;

/* Parses `len` bytes of `text` into a tree in the context's arena.  On
 * failure returns NULL with the context's error set (MTK_ERR_SYNTAX, or
 * MTK_ERR_OVERFLOW for an integer beyond int64) and *error_column the
 * 1-based column of the offending token. */
node *mtk_parse_expression(mtk_ctx *ctx, const char *text, size_t len, int32_t *error_column);

#endif
