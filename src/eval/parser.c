/* The eval language's parser: recursive descent over lexer tokens into a
 * syntax tree in the context's arena, with Python's precedence:
 *
 *   expr       := binary(0) (COMPARE binary(0))*      (a chain: a < b < c)
 *   binary(k)  := unary (OP(k) binary(k+1))*          | ^ & << >> + - * @ / // %
 *   unary      := ('-' | '+' | '~') unary | power
 *   power      := postfix ['**' unary]                (-a ** 2 is -(a ** 2))
 *   postfix    := primary ('.' NAME ['(' args ')'] | '[' subscripts ']')*
 *   primary    := INT | FLOAT | STRING | '...' | '(' ')' | '(' expr ')'
 *               | '(' expr ',' ... ')' | '[' items ']' | qname
 *               | qname '(' args ')' | qname '[' sizes ']'
 *   qname      := NAME ('.' NAME)*
 *   args       := [arg (',' arg)* [',']]     arg := [NAME '='] expr
 *   sizes      := [['-'] INT (',' ['-'] INT)* [',']]
 *   subscripts := subscript (',' subscript)* [',']
 *   subscript  := expr | [expr] ':' [expr] [':' [expr]]
 *
 * Every bound of eval.h holds here, before anything runs: the text's
 * length, the tree's height (the evaluator recurses over it), the
 * parser's own recursion, the items of one list or call, string and
 * tensor literal sizes.
 */
#include "eval/parser.h"
#include "eval/lexer.h"
#include "mtk/eval.h"

#include <stdio.h>
#include <string.h>

typedef struct parser {
    mtk_ctx *ctx;
    const char *text;
    size_t len;
    token tok;   /* the current token */
    int32_t depth;
    int32_t error_column;
} parser;

/* A growable array in the arena (old copies are left to the arena). */
typedef struct vec {
    void **items;
    int32_t count, cap;
} vec;

static int32_t column_at(size_t pos) { return pos >= INT32_MAX ? INT32_MAX : (int32_t)pos + 1; }

static void advance(parser *p) { p->tok = mtk_lex_token(p->text, p->len, p->tok.start + p->tok.len); }

static token peek_after(const parser *p) { return mtk_lex_token(p->text, p->len, p->tok.start + p->tok.len); }

static void *fail_at(parser *p, size_t pos, mtk_status status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;
static void *fail_at(parser *p, size_t pos, mtk_status status, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    p->error_column = column_at(pos);
    if (status == MTK_ERR_SYNTAX)
        mtk_error(p->ctx, status, "syntax error at column %d: %s", (int)p->error_column, msg);
    else
        mtk_error(p->ctx, status, "%s", msg);
    return NULL;
}

/* The Python keyword a name token is (and, not, if, ...), or NULL. */
static const char *python_keyword(const char *text, const token *t)
{
    static const char *const keywords[] = { "and", "or", "not", "in", "is", "if", "else", "lambda", "for" };
    for (size_t i = 0; t->kind == TOK_NAME && i < sizeof keywords / sizeof keywords[0]; i++)
        if (t->len == strlen(keywords[i]) && memcmp(text + t->start, keywords[i], t->len) == 0) return keywords[i];
    return NULL;
}

/* The error for a token that cannot stand where it is. */
static void *unexpected(parser *p, const char *expected)
{
    char what[96];
    const token *t = &p->tok;
    if (t->kind == TOK_ERROR) {
        mtk_lex_describe(p->text, t, what, sizeof what);
        return fail_at(p, t->start, MTK_ERR_SYNTAX, "%s %s", t->error, what);
    }
    if (t->kind == TOK_OPERATOR) {
        return fail_at(p, t->start, MTK_ERR_SYNTAX,
                       "'%.*s' is not supported here (mtk eval reads one Python expression: no "
                       "statements, assignments, lambdas or dicts)",
                       (int)t->len, p->text + t->start);
    }
    const char *keyword = python_keyword(p->text, t);
    if (keyword)
        return fail_at(p, t->start, MTK_ERR_SYNTAX,
                       "Python's '%s' is not part of mtk eval's language (on tensors use & | ~ "
                       "and comparisons, which torch computes element-wise)",
                       keyword);
    mtk_lex_describe(p->text, t, what, sizeof what);
    if (expected)
        return fail_at(p, t->start, MTK_ERR_SYNTAX, "expected %s, found %s", expected, what);
    return fail_at(p, t->start, MTK_ERR_SYNTAX, "unexpected %s", what);
}

static node *new_node(parser *p, node_kind kind, size_t pos)
{
    node *n = mtk_ctx_alloc(p->ctx, sizeof *n);
    if (!n) return NULL;
    n->kind = kind;
    n->column = column_at(pos);
    n->height = 1;
    return n;
}

/* Sets n's height from its items (NULL items of a slice count as
 * leaves); refuses a tree higher than MTK_EVAL_MAX_DEPTH, which the
 * evaluator, the printer and the JSON writer would recurse through. */
static node *check_height(parser *p, node *n)
{
    if (!n) return NULL;
    int32_t highest = 0;
    for (int32_t i = 0; i < n->count; i++)
        if (n->items[i] && n->items[i]->height > highest) highest = n->items[i]->height;
    n->height = highest + 1;
    if (n->height > MTK_EVAL_MAX_DEPTH)
        return fail_at(p, (size_t)n->column - 1, MTK_ERR_SYNTAX,
                       "expression nested too deeply (more than %d levels of brackets, calls, "
                       "operators, methods or indexing; MTK_EVAL_MAX_DEPTH)",
                       MTK_EVAL_MAX_DEPTH);
    return n;
}

/* A node of `count` items (copied into the arena), height checked. */
static node *compound(parser *p, node_kind kind, size_t pos, node *const *items, int32_t count)
{
    node *n = new_node(p, kind, pos);
    if (!n) return NULL;
    n->count = count;
    n->items = mtk_ctx_alloc(p->ctx, (size_t)(count ? count : 1) * sizeof *n->items);
    if (!n->items) return NULL;
    for (int32_t i = 0; i < count; i++) n->items[i] = items[i];
    return check_height(p, n);
}

static bool vec_push(parser *p, vec *v, void *item)
{
    if (v->count >= MTK_EVAL_MAX_ITEMS) {
        {
            size_t pos = p->tok.start;
            fail_at(p, pos, MTK_ERR_INVALID_ARGUMENT,
                    "more than %d items in one list, tuple, call or subscript at column %d "
                    "(mtk eval's limit, MTK_EVAL_MAX_ITEMS)",
                    MTK_EVAL_MAX_ITEMS, (int)column_at(pos));
            return false;
        }
    }
    if (v->count == v->cap) {
        int32_t cap = v->cap ? v->cap * 2 : 4;
        void **items = mtk_ctx_alloc(p->ctx, (size_t)cap * sizeof *items);
        if (!items) return false;
        if (v->count) memcpy(items, v->items, (size_t)v->count * sizeof *items);
        v->items = items;
        v->cap = cap;
    }
    v->items[v->count++] = item;
    return true;
}

static char *arena_copy(parser *p, const char *s, size_t n)
{
    char *c = mtk_ctx_alloc(p->ctx, n + 1);
    if (c) memcpy(c, s, n); /* arena memory is zeroed: NUL-terminated */
    return c;
}

/* Python's name for a closing bracket's opener, for mismatch messages. */
static const char *bracket_name(token_kind kind)
{
    switch (kind) {
    case TOK_LPAREN: case TOK_RPAREN: return "parenthesis";
    default: return "bracket";
    }
}

/* After an item inside brackets opened at `open_pos`: a ',' (consumed,
 * returns 1), the closer (not consumed, returns 0), or an error (-1). */
static int after_item(parser *p, token_kind open, size_t open_pos, token_kind close)
{
    if (p->tok.kind == TOK_COMMA) {
        advance(p);
        return 1;
    }
    if (p->tok.kind == close) return 0;
    char open_c = p->text[open_pos];
    if (p->tok.kind == TOK_END) {
        fail_at(p, open_pos, MTK_ERR_SYNTAX, "'%c' was never closed", open_c);
        return -1;
    }
    if (p->tok.kind == TOK_RPAREN || p->tok.kind == TOK_RBRACKET) {
        fail_at(p, p->tok.start, MTK_ERR_SYNTAX,
                "closing %s '%c' does not match opening %s '%c' at column %d",
                bracket_name(p->tok.kind), p->text[p->tok.start], bracket_name(open), open_c,
                (int)column_at(open_pos));
        return -1;
    }
    char expected[32];
    snprintf(expected, sizeof expected, "',' or '%c'", close == TOK_RPAREN ? ')' : ']');
    unexpected(p, expected);
    return -1;
}

static node *parse_expr(parser *p);

/* An integer literal, negated when `negative`; MTK_ERR_OVERFLOW past int64. */
static bool int_literal(parser *p, const token *t, bool negative, size_t pos, int64_t *out)
{
    const uint64_t limit = (uint64_t)1 << 63;
    if (t->int_too_big || t->magnitude > limit || (t->magnitude == limit && !negative)) {
        int n = t->len > 40 ? 40 : (int)t->len;
        fail_at(p, pos, MTK_ERR_OVERFLOW, "integer %s%.*s%s at column %d does not fit in int64",
                negative ? "-" : "", n, p->text + t->start, t->len > 40 ? "..." : "",
                (int)column_at(pos));
        return false;
    }
    if (t->magnitude == limit) *out = INT64_MIN;
    else *out = negative ? -(int64_t)t->magnitude : (int64_t)t->magnitude;
    return true;
}

/* DTYPE[sizes]; the current token is '[' after the dtype name. */
static node *parse_tensor_literal(parser *p, const char *name, size_t name_pos)
{
    size_t open = p->tok.start;
    advance(p);
    vec sizes = { 0 };
    while (p->tok.kind != TOK_RBRACKET) {
        bool negative = false;
        size_t pos = p->tok.start;
        if (p->tok.kind == TOK_MINUS) {
            negative = true;
            advance(p);
        }
        if (p->tok.kind != TOK_INT) {
            if (p->tok.kind == TOK_END) return fail_at(p, open, MTK_ERR_SYNTAX, "'[' was never closed");
            return unexpected(p, "an integer size in the tensor literal (sizes are integer literals)");
        }
        int64_t *size = mtk_ctx_alloc(p->ctx, sizeof *size);
        if (!size || !int_literal(p, &p->tok, negative, pos, size)) return NULL;
        if (!vec_push(p, &sizes, size)) return NULL;
        advance(p);
        int r = after_item(p, TOK_LBRACKET, open, TOK_RBRACKET);
        if (r < 0) return NULL;
        if (r == 0) break;
    }
    size_t end = p->tok.start + p->tok.len;
    advance(p); /* ']' */
    node *n = new_node(p, NODE_TENSOR, name_pos);
    if (!n) return NULL;
    n->name = name;
    n->source = arena_copy(p, p->text + name_pos, end - name_pos);
    n->ndim = sizes.count;
    n->shape = mtk_ctx_alloc(p->ctx, (size_t)(sizes.count ? sizes.count : 1) * sizeof *n->shape);
    if (!n->source || !n->shape) return NULL;
    for (int32_t i = 0; i < sizes.count; i++) n->shape[i] = *(int64_t *)sizes.items[i];
    return n;
}

/* Arguments of a call; the current token is '('.  `receiver` (a method
 * call's object) becomes the first positional argument. */
static node *parse_call(parser *p, const char *name, size_t name_pos, node *receiver)
{
    size_t open = p->tok.start;
    advance(p);
    vec positional = { 0 }, kw_values = { 0 }, kw_names = { 0 };
    if (receiver && !vec_push(p, &positional, receiver)) return NULL;
    while (p->tok.kind != TOK_RPAREN) {
        if (p->tok.kind == TOK_END) return fail_at(p, open, MTK_ERR_SYNTAX, "'(' was never closed");
        token next = peek_after(p);
        if (p->tok.kind == TOK_NAME && next.kind == TOK_EQUALS) {
            char *kw = arena_copy(p, p->text + p->tok.start, p->tok.len);
            if (!kw) return NULL;
            for (int32_t i = 0; i < kw_names.count; i++)
                if (strcmp(kw_names.items[i], kw) == 0)
                    return fail_at(p, p->tok.start, MTK_ERR_SYNTAX, "keyword argument repeated: %s", kw);
            advance(p);
            advance(p);
            node *value = parse_expr(p);
            if (!value || !vec_push(p, &kw_names, kw) || !vec_push(p, &kw_values, value)) return NULL;
        } else {
            if (kw_names.count > 0)
                return fail_at(p, p->tok.start, MTK_ERR_SYNTAX,
                               "positional argument follows keyword argument");
            node *value = parse_expr(p);
            if (!value || !vec_push(p, &positional, value)) return NULL;
        }
        int r = after_item(p, TOK_LPAREN, open, TOK_RPAREN);
        if (r < 0) return NULL;
        if (r == 0) break;
    }
    advance(p); /* ')' */
    node *n = new_node(p, NODE_CALL, name_pos);
    if (!n) return NULL;
    n->name = name;
    n->is_method = receiver != NULL;
    n->count = positional.count + kw_values.count;
    n->nkw = kw_values.count;
    n->items = mtk_ctx_alloc(p->ctx, (size_t)(n->count ? n->count : 1) * sizeof *n->items);
    n->kw_names = mtk_ctx_alloc(p->ctx, (size_t)(n->nkw ? n->nkw : 1) * sizeof *n->kw_names);
    if (!n->items || !n->kw_names) return NULL;
    for (int32_t i = 0; i < positional.count; i++) n->items[i] = positional.items[i];
    for (int32_t i = 0; i < kw_values.count; i++) {
        n->items[positional.count + i] = kw_values.items[i];
        n->kw_names[i] = kw_names.items[i];
    }
    return check_height(p, n);
}

/* Items of a list or tuple up to the closer; the opener is consumed.
 * *trailing_comma tells (a,) from (a). */
static bool parse_items(parser *p, size_t open, token_kind open_kind, token_kind close, vec *items,
                        bool *trailing_comma)
{
    *trailing_comma = false;
    while (p->tok.kind != close) {
        if (p->tok.kind == TOK_END) {
            fail_at(p, open, MTK_ERR_SYNTAX, "'%c' was never closed", p->text[open]);
            return false;
        }
        node *item = parse_expr(p);
        if (!item || !vec_push(p, items, item)) return false;
        int r = after_item(p, open_kind, open, close);
        if (r < 0) return false;
        *trailing_comma = r == 1;
        if (r == 0) break;
    }
    advance(p); /* the closer */
    return true;
}

static node *sequence_node(parser *p, node_kind kind, size_t pos, const vec *items)
{
    node *n = new_node(p, kind, pos);
    if (!n) return NULL;
    n->count = items->count;
    n->items = mtk_ctx_alloc(p->ctx, (size_t)(items->count ? items->count : 1) * sizeof *n->items);
    if (!n->items) return NULL;
    for (int32_t i = 0; i < items->count; i++) n->items[i] = items->items[i];
    return check_height(p, n);
}

/* NAME ('.' NAME)*, then a call, a tensor literal or a plain name. */
static node *parse_name(parser *p)
{
    size_t pos = p->tok.start;
    /* join the parts with single dots (Python allows `torch . zeros`) */
    size_t total = 0;
    token t = p->tok;
    for (;;) {
        total += t.len + 1;
        token dot = mtk_lex_token(p->text, p->len, t.start + t.len);
        if (dot.kind != TOK_DOT) break;
        token part = mtk_lex_token(p->text, p->len, dot.start + 1);
        if (part.kind != TOK_NAME) break;
        t = part;
    }
    char *name = mtk_ctx_alloc(p->ctx, total);
    if (!name) return NULL;
    size_t k = 0;
    for (;;) {
        memcpy(name + k, p->text + p->tok.start, p->tok.len);
        k += p->tok.len;
        advance(p);
        if (p->tok.kind != TOK_DOT || peek_after(p).kind != TOK_NAME) break;
        name[k++] = '.';
        advance(p);
    }
    if (p->tok.kind == TOK_LPAREN) return parse_call(p, name, pos, NULL);
    if (p->tok.kind == TOK_LBRACKET) return parse_tensor_literal(p, name, pos);
    node *n = new_node(p, NODE_NAME, pos);
    if (n) n->name = name;
    return n;
}

static node *parse_primary(parser *p)
{
    size_t pos = p->tok.start;
    switch (p->tok.kind) {
    case TOK_INT: {
        node *n = new_node(p, NODE_CONST, pos);
        int64_t v;
        if (!n || !int_literal(p, &p->tok, false, pos, &v)) return NULL;
        n->constant = mtk_value_int(v);
        advance(p);
        return n;
    }
    case TOK_FLOAT: {
        node *n = new_node(p, NODE_CONST, pos);
        if (!n) return NULL;
        n->constant = mtk_value_float(p->tok.number);
        advance(p);
        return n;
    }
    case TOK_ELLIPSIS: {
        node *n = new_node(p, NODE_ELLIPSIS, pos);
        if (n) advance(p);
        return n;
    }
    case TOK_STRING: {
        if (p->tok.len - 2 > MTK_EVAL_MAX_STRING)
            return fail_at(p, pos, MTK_ERR_INVALID_ARGUMENT,
                           "string literal at column %d is %zu bytes long, more than mtk eval's "
                           "limit of %d (MTK_EVAL_MAX_STRING)",
                           (int)column_at(pos), p->tok.len - 2, MTK_EVAL_MAX_STRING);
        node *n = new_node(p, NODE_CONST, pos);
        char *s = mtk_ctx_alloc(p->ctx, p->tok.len);
        if (!n || !s) return NULL;
        mtk_lex_string_decode(p->text, &p->tok, s);
        n->constant = mtk_value_string(s);
        advance(p);
        return n;
    }
    case TOK_NAME: return python_keyword(p->text, &p->tok) ? unexpected(p, NULL) : parse_name(p);
    case TOK_LPAREN: {
        advance(p);
        if (p->tok.kind == TOK_RPAREN) {
            advance(p);
            vec none = { 0 };
            return sequence_node(p, NODE_TUPLE, pos, &none);
        }
        if (p->tok.kind == TOK_END) return fail_at(p, pos, MTK_ERR_SYNTAX, "'(' was never closed");
        node *first = parse_expr(p);
        if (!first) return NULL;
        if (p->tok.kind == TOK_RPAREN) {
            advance(p);
            return first; /* (expr): grouping, not a tuple */
        }
        vec items = { 0 };
        bool trailing;
        if (!vec_push(p, &items, first)) return NULL;
        int r = after_item(p, TOK_LPAREN, pos, TOK_RPAREN);
        if (r < 0) return NULL;
        if (!parse_items(p, pos, TOK_LPAREN, TOK_RPAREN, &items, &trailing)) return NULL;
        return sequence_node(p, NODE_TUPLE, pos, &items);
    }
    case TOK_LBRACKET: {
        advance(p);
        vec items = { 0 };
        bool trailing;
        if (!parse_items(p, pos, TOK_LBRACKET, TOK_RBRACKET, &items, &trailing)) return NULL;
        return sequence_node(p, NODE_LIST, pos, &items);
    }
    case TOK_END: return unexpected(p, "an expression");
    default: return unexpected(p, NULL);
    }
}

static bool tok_is(const parser *p, const char *op)
{
    size_t n = strlen(op);
    return p->tok.kind == TOK_OPERATOR && p->tok.len == n && memcmp(p->text + p->tok.start, op, n) == 0;
}

/* One subscript item: an expression, or a slice [start]:[stop][:[step]]. */
static node *parse_subscript_item(parser *p)
{
    size_t pos = p->tok.start;
    node *parts[3] = { NULL, NULL, NULL };
    if (!tok_is(p, ":")) {
        parts[0] = parse_expr(p);
        if (!parts[0] || !tok_is(p, ":")) return parts[0];
    }
    for (int k = 1; k < 3 && tok_is(p, ":"); k++) {
        advance(p); /* ':' */
        if (tok_is(p, ":") || p->tok.kind == TOK_COMMA || p->tok.kind == TOK_RBRACKET) continue;
        parts[k] = parse_expr(p);
        if (!parts[k]) return NULL;
    }
    return compound(p, NODE_SLICE, pos, parts, 3);
}

/* x[subscripts]; the current token is '['. */
static node *parse_subscript(parser *p, node *object)
{
    size_t open = p->tok.start;
    advance(p);
    vec items = { 0 };
    bool comma = false;
    if (!vec_push(p, &items, object)) return NULL;
    if (p->tok.kind == TOK_RBRACKET) return unexpected(p, "an index");
    while (p->tok.kind != TOK_RBRACKET) {
        if (p->tok.kind == TOK_END) return fail_at(p, open, MTK_ERR_SYNTAX, "'[' was never closed");
        node *item = parse_subscript_item(p);
        if (!item || !vec_push(p, &items, item)) return NULL;
        int r = after_item(p, TOK_LBRACKET, open, TOK_RBRACKET);
        if (r < 0) return NULL;
        if (r == 1) comma = true;
        if (r == 0) break;
    }
    advance(p); /* ']' */
    node *n = compound(p, NODE_SUBSCRIPT, open, (node *const *)items.items, items.count);
    if (n) n->index_tuple = comma;
    return n;
}

/* Attributes, method calls and subscripts after a primary:
 * x.view(3, 4).transpose(0, 1), x.shape[0], x[:, 1]. */
static node *parse_postfix(parser *p)
{
    node *n = parse_primary(p);
    while (n) {
        if (p->tok.kind == TOK_DOT) {
            advance(p);
            if (p->tok.kind != TOK_NAME) return unexpected(p, "an attribute or method name after '.'");
            size_t name_pos = p->tok.start;
            char *name = arena_copy(p, p->text + p->tok.start, p->tok.len);
            if (!name) return NULL;
            advance(p);
            if (p->tok.kind == TOK_LPAREN) {
                n = parse_call(p, name, name_pos, n);
            } else {
                n = compound(p, NODE_ATTRIBUTE, name_pos, &n, 1);
                if (n) n->name = name;
            }
        } else if (p->tok.kind == TOK_LBRACKET) {
            n = parse_subscript(p, n);
        } else if (p->tok.kind == TOK_LPAREN) {
            return fail_at(p, p->tok.start, MTK_ERR_SYNTAX,
                           "only op names and methods can be called (this value is not callable)");
        } else {
            break;
        }
    }
    return n;
}

static node *parse_unary(parser *p);

/* power := postfix ['**' unary]: binds tighter than a unary operator on
 * its left, looser than one on its right (2 ** -1). */
static node *parse_power(parser *p)
{
    node *base = parse_postfix(p);
    if (!base || !tok_is(p, "**")) return base;
    size_t pos = p->tok.start;
    if (p->depth >= MTK_EVAL_MAX_DEPTH)
        return fail_at(p, pos, MTK_ERR_SYNTAX,
                       "expression nested too deeply (more than %d levels; MTK_EVAL_MAX_DEPTH)",
                       MTK_EVAL_MAX_DEPTH);
    advance(p);
    p->depth++; /* right-associative: a ** b ** c recurses */
    node *operands[2] = { base, parse_unary(p) };
    p->depth--;
    if (!operands[1]) return NULL;
    node *n = compound(p, NODE_BINARY, pos, operands, 2);
    if (n) n->name = "**";
    return n;
}

/* Is the token after a number one that binds to the number before a
 * unary minus does (-2 ** 2 is -(2 ** 2), -1 .real)? */
static bool binds_tighter_than_minus(const parser *p)
{
    token next = peek_after(p);
    if (next.kind == TOK_DOT || next.kind == TOK_LBRACKET || next.kind == TOK_LPAREN) return true;
    return next.kind == TOK_OPERATOR && next.len == 2 && memcmp(p->text + next.start, "**", 2) == 0;
}

static node *parse_unary(parser *p)
{
    bool minus = p->tok.kind == TOK_MINUS;
    if (!minus && p->tok.kind != TOK_PLUS && !tok_is(p, "~")) return parse_power(p);
    if (p->depth >= MTK_EVAL_MAX_DEPTH)
        return fail_at(p, p->tok.start, MTK_ERR_SYNTAX,
                       "expression nested too deeply (more than %d levels; MTK_EVAL_MAX_DEPTH)",
                       MTK_EVAL_MAX_DEPTH);
    size_t pos = p->tok.start;
    node_kind kind = minus ? NODE_NEGATE : p->tok.kind == TOK_PLUS ? NODE_PLUS : NODE_INVERT;
    advance(p);
    node *n;
    if (minus && p->tok.kind == TOK_INT && !binds_tighter_than_minus(p)) {
        /* fold -N so that -9223372036854775808 is an int64 */
        int64_t v;
        n = new_node(p, NODE_CONST, pos);
        if (!n || !int_literal(p, &p->tok, true, pos, &v)) return NULL;
        n->constant = mtk_value_int(v);
        advance(p);
        return n;
    }
    if (minus && p->tok.kind == TOK_FLOAT && !binds_tighter_than_minus(p)) {
        n = new_node(p, NODE_CONST, pos);
        if (!n) return NULL;
        n->constant = mtk_value_float(-p->tok.number);
        advance(p);
        return n;
    }
    p->depth++;
    node *operand = parse_unary(p);
    p->depth--;
    if (!operand) return NULL;
    return compound(p, kind, pos, &operand, 1);
}

/* Binary operators by precedence, loosest first (Python's table). */
static const struct binary_op {
    const char *text;
    int level;
} binary_ops[] = {
    { "|", 0 }, { "^", 1 }, { "&", 2 }, { "<<", 3 }, { ">>", 3 }, { "+", 4 }, { "-", 4 },
    { "*", 5 }, { "@", 5 }, { "/", 5 }, { "//", 5 }, { "%", 5 },
};
enum { BINARY_LEVELS = 6 };

/* The binary operator at the current token, or NULL. */
static const char *binary_op_here(const parser *p, int level)
{
    for (size_t i = 0; i < sizeof binary_ops / sizeof binary_ops[0]; i++) {
        if (binary_ops[i].level != level) continue;
        const char *t = binary_ops[i].text;
        if ((p->tok.kind == TOK_PLUS && strcmp(t, "+") == 0) || (p->tok.kind == TOK_MINUS && strcmp(t, "-") == 0) ||
            tok_is(p, t))
            return t;
    }
    return NULL;
}

/* Left-associative operators of `level` and tighter: a - b - c is
 * (a - b) - c, built in a loop (the tree's height is checked). */
static node *parse_binary(parser *p, int level)
{
    if (level == BINARY_LEVELS) return parse_unary(p);
    node *left = parse_binary(p, level + 1);
    const char *op;
    while (left && (op = binary_op_here(p, level)) != NULL) {
        size_t pos = p->tok.start;
        advance(p);
        node *operands[2] = { left, parse_binary(p, level + 1) };
        if (!operands[1]) return NULL;
        left = compound(p, NODE_BINARY, pos, operands, 2);
        if (left) left->name = op;
    }
    return left;
}

static const char *compare_op_here(const parser *p)
{
    static const char *const ops[] = { "<", ">", "==", ">=", "<=", "!=" };
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        if (tok_is(p, ops[i])) return ops[i];
    return NULL;
}

/* expr := binary (COMPARE binary)*; Python's `in`, `is`, `not`, `and`,
 * `or` and conditionals are not part of the language. */
static node *parse_expr(parser *p)
{
    if (p->depth >= MTK_EVAL_MAX_DEPTH)
        return fail_at(p, p->tok.start, MTK_ERR_SYNTAX,
                       "expression nested too deeply (more than %d levels; MTK_EVAL_MAX_DEPTH)",
                       MTK_EVAL_MAX_DEPTH);
    p->depth++;
    size_t pos = p->tok.start;
    node *first = parse_binary(p, 0);
    node *n = first;
    if (first && compare_op_here(p)) {
        vec operands = { 0 }, ops = { 0 };
        bool ok = vec_push(p, &operands, first);
        const char *op;
        while (ok && (op = compare_op_here(p)) != NULL) {
            advance(p);
            node *next = parse_binary(p, 0);
            ok = next && vec_push(p, &ops, (void *)op) && vec_push(p, &operands, next);
        }
        n = ok ? compound(p, NODE_COMPARE, pos, (node *const *)operands.items, operands.count) : NULL;
        if (n) n->kw_names = (const char **)ops.items;
    }
    p->depth--;
    return n;
}

node *mtk_parse_expression(mtk_ctx *ctx, const char *text, size_t len, int32_t *error_column)
{
    *error_column = 0;
    if (len > MTK_EVAL_MAX_TEXT) {
        mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT,
                  "expression of %zu bytes is longer than mtk eval's limit of %d bytes (MTK_EVAL_MAX_TEXT)",
                  len, MTK_EVAL_MAX_TEXT);
        return NULL;
    }
    parser p;
    memset(&p, 0, sizeof p);
    p.ctx = ctx;
    p.text = text;
    p.len = len;
    p.tok = mtk_lex_token(text, len, 0);
    if (p.tok.kind == TOK_END) {
        fail_at(&p, 0, MTK_ERR_SYNTAX, "empty expression");
        *error_column = p.error_column;
        return NULL;
    }
    node *n = parse_expr(&p);
    if (n && p.tok.kind == TOK_COMMA) {
        /* a, b: a tuple without parentheses, as Python's expression list */
        vec items = { 0 };
        bool ok = vec_push(&p, &items, n);
        while (ok && p.tok.kind == TOK_COMMA) {
            advance(&p);
            if (p.tok.kind == TOK_END) break;
            node *item = parse_expr(&p);
            ok = item && vec_push(&p, &items, item);
        }
        n = ok ? sequence_node(&p, NODE_TUPLE, 0, &items) : NULL;
    }
    if (n && p.tok.kind != TOK_END) {
        if (p.tok.kind == TOK_RPAREN || p.tok.kind == TOK_RBRACKET)
            fail_at(&p, p.tok.start, MTK_ERR_SYNTAX, "unmatched '%c'", text[p.tok.start]);
        else
            unexpected(&p, "end of input");
        n = NULL;
    }
    if (!n) {
        if (mtk_ctx_status(ctx) == MTK_OK) mtk_error(ctx, MTK_ERR_OUT_OF_MEMORY, "out of memory parsing");
        *error_column = p.error_column;
    }
    return n;
}
