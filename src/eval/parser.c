/* The eval language's parser: recursive descent over lexer tokens into a
 * syntax tree in the context's arena.
 *
 *   expr     := ('-' | '+') expr | postfix
 *   postfix  := primary ('.' NAME '(' args ')')*
 *   primary  := INT | FLOAT | STRING | '(' ')' | '(' expr ')' | '(' expr ',' ... ')'
 *             | '[' items ']' | qname | qname '(' args ')' | qname '[' sizes ']'
 *   qname    := NAME ('.' NAME)*
 *   args     := [arg (',' arg)* [',']]     arg := [NAME '='] expr
 *   sizes    := [['-'] INT (',' ['-'] INT)* [',']]
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

/* The error for a token that cannot stand where it is. */
static void *unexpected(parser *p, const char *expected)
{
    char what[96];
    const token *t = &p->tok;
    if (t->kind == TOK_ERROR) {
        mtk_lex_describe(p->text, t, what, sizeof what);
        return fail_at(p, t->start, MTK_ERR_SYNTAX, "%s %s", t->error, what);
    }
    if (t->kind == TOK_OPERATOR || ((t->kind == TOK_MINUS || t->kind == TOK_PLUS) && expected)) {
        return fail_at(p, t->start, MTK_ERR_SYNTAX,
                       "operator '%.*s' is not supported (mtk eval has calls, not operators: "
                       "write add(a, b), mul(a, b), matmul(a, b), ...)",
                       (int)t->len, p->text + t->start);
    }
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
    return n;
}

static bool vec_push(parser *p, vec *v, void *item)
{
    if (v->count == v->cap) {
        if (v->cap >= INT32_MAX / 2) {
            mtk_error(p->ctx, MTK_ERR_OVERFLOW, "too many items in one list or call");
            return false;
        }
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
    return n;
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
    return n;
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
    case TOK_STRING: {
        node *n = new_node(p, NODE_CONST, pos);
        char *s = mtk_ctx_alloc(p->ctx, p->tok.len);
        if (!n || !s) return NULL;
        mtk_lex_string_decode(p->text, &p->tok, s);
        n->constant = mtk_value_string(s);
        advance(p);
        return n;
    }
    case TOK_NAME: return parse_name(p);
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

/* Method calls after a primary: x.view(3, 4).transpose(0, 1). */
static node *parse_postfix(parser *p)
{
    node *n = parse_primary(p);
    while (n) {
        if (p->tok.kind == TOK_DOT) {
            advance(p);
            if (p->tok.kind != TOK_NAME) return unexpected(p, "a method name after '.'");
            size_t name_pos = p->tok.start;
            char *name = arena_copy(p, p->text + p->tok.start, p->tok.len);
            if (!name) return NULL;
            advance(p);
            if (p->tok.kind != TOK_LPAREN)
                return fail_at(p, name_pos, MTK_ERR_SYNTAX,
                               "attribute '.%s' is not supported; only method calls such as "
                               "x.%s(...) are",
                               name, name);
            n = parse_call(p, name, name_pos, n);
        } else if (p->tok.kind == TOK_LBRACKET) {
            return fail_at(p, p->tok.start, MTK_ERR_SYNTAX,
                           "indexing is not supported (only DTYPE[sizes] tensor literals use "
                           "brackets after a name)");
        } else if (p->tok.kind == TOK_LPAREN) {
            return fail_at(p, p->tok.start, MTK_ERR_SYNTAX, "only op names can be called");
        } else {
            break;
        }
    }
    return n;
}

static node *parse_expr(parser *p)
{
    if (p->depth >= MTK_EVAL_MAX_DEPTH)
        return fail_at(p, p->tok.start, MTK_ERR_SYNTAX,
                       "expression nested too deeply (more than %d levels)", MTK_EVAL_MAX_DEPTH);
    p->depth++;
    node *n;
    size_t pos = p->tok.start;
    if (p->tok.kind == TOK_MINUS || p->tok.kind == TOK_PLUS) {
        bool minus = p->tok.kind == TOK_MINUS;
        advance(p);
        if (minus && p->tok.kind == TOK_INT) {
            /* fold -N so that -9223372036854775808 is an int64 */
            n = new_node(p, NODE_CONST, pos);
            int64_t v;
            if (n && int_literal(p, &p->tok, true, pos, &v)) {
                n->constant = mtk_value_int(v);
                advance(p);
            } else {
                n = NULL;
            }
        } else if (minus && p->tok.kind == TOK_FLOAT) {
            n = new_node(p, NODE_CONST, pos);
            if (n) {
                n->constant = mtk_value_float(-p->tok.number);
                advance(p);
            }
        } else {
            node *operand = parse_expr(p);
            n = operand ? new_node(p, minus ? NODE_NEGATE : NODE_PLUS, pos) : NULL;
            if (n) {
                n->items = mtk_ctx_alloc(p->ctx, sizeof *n->items);
                if (!n->items) n = NULL;
                else n->items[0] = operand, n->count = 1;
            }
        }
    } else {
        n = parse_postfix(p);
    }
    p->depth--;
    return n;
}

node *mtk_parse_expression(mtk_ctx *ctx, const char *text, size_t len, int32_t *error_column)
{
    parser p;
    memset(&p, 0, sizeof p);
    p.ctx = ctx;
    p.text = text;
    p.len = len;
    p.tok = mtk_lex_token(text, len, 0);
    *error_column = 0;
    if (p.tok.kind == TOK_END) {
        fail_at(&p, 0, MTK_ERR_SYNTAX, "empty expression");
        *error_column = p.error_column;
        return NULL;
    }
    node *n = parse_expr(&p);
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
