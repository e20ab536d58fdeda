/* The eval language's lexer: Python's tokens for names, numbers, strings
 * and brackets. */
#include "eval/lexer.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool is_digit(char c) { return c >= '0' && c <= '9'; }
static bool is_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
static bool is_name_char(char c) { return is_name_start(c) || is_digit(c); }

static int digit_value(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return 99;
}

static token make(token_kind kind, size_t start, size_t len)
{
    token t;
    memset(&t, 0, sizeof t);
    t.kind = kind;
    t.start = start;
    t.len = len;
    return t;
}

static token error_at(size_t start, size_t len, const char *message)
{
    token t = make(TOK_ERROR, start, len);
    t.error = message;
    return t;
}

/* Digits of `base` with single underscores between them, from p; returns
 * the end.  Accumulates into *value, setting *too_big past 2^63. */
static size_t scan_digits(const char *s, size_t len, size_t p, int base, uint64_t *value,
                          bool *too_big, bool *bad_underscore)
{
    const uint64_t limit = (uint64_t)1 << 63;
    bool last_digit = false;
    while (p < len) {
        if (s[p] == '_') {
            if (!last_digit || p + 1 >= len || digit_value(s[p + 1]) >= base) *bad_underscore = true;
            last_digit = false;
            p++;
            continue;
        }
        int d = digit_value(s[p]);
        if (d >= base) break;
        if (*value > (limit - (uint64_t)d) / (uint64_t)base) *too_big = true;
        else *value = *value * (uint64_t)base + (uint64_t)d;
        last_digit = true;
        p++;
    }
    return p;
}

/* Python's float grammar after the integer part: [. digits] [e[+-]digits]. */
static token lex_number(const char *s, size_t len, size_t start)
{
    size_t p = start;
    uint64_t value = 0;
    bool too_big = false, bad_underscore = false;
    if (s[p] == '0' && p + 1 < len && strchr("xXoObB", s[p + 1])) {
        int base = (s[p + 1] == 'x' || s[p + 1] == 'X') ? 16 : (s[p + 1] == 'o' || s[p + 1] == 'O') ? 8 : 2;
        size_t digits = p + 2;
        if (digits < len && s[digits] == '_') digits++; /* 0x_ff is valid Python */
        p = scan_digits(s, len, digits, base, &value, &too_big, &bad_underscore);
        if (p == digits || bad_underscore) return error_at(start, p - start, "invalid integer literal");
        if (p < len && is_name_char(s[p])) return error_at(start, p - start + 1, "invalid integer literal");
        token t = make(TOK_INT, start, p - start);
        t.magnitude = value;
        t.int_too_big = too_big;
        return t;
    }
    bool is_float = false;
    p = scan_digits(s, len, p, 10, &value, &too_big, &bad_underscore);
    size_t int_end = p;
    if (p < len && s[p] == '.') {
        is_float = true;
        p++;
        if (p < len && s[p] == '_') bad_underscore = true;
        uint64_t ignored = 0;
        bool ignored_big = false;
        p = scan_digits(s, len, p, 10, &ignored, &ignored_big, &bad_underscore);
    }
    if (p < len && (s[p] == 'e' || s[p] == 'E')) {
        size_t q = p + 1;
        if (q < len && (s[q] == '+' || s[q] == '-')) q++;
        if (q < len && is_digit(s[q])) {
            uint64_t ignored = 0;
            bool ignored_big = false;
            p = scan_digits(s, len, q, 10, &ignored, &ignored_big, &bad_underscore);
            is_float = true;
        } else {
            return error_at(start, q - start, "invalid float literal");
        }
    }
    if (bad_underscore) return error_at(start, p - start, "invalid number literal");
    if (p < len && is_name_char(s[p])) {
        /* 3abc, 1j (complex numbers are not supported) */
        return error_at(start, p - start + 1, "invalid decimal literal");
    }
    if (!is_float) {
        /* Python: "leading zeros in decimal integer literals are not permitted" */
        if (s[start] == '0')
            for (size_t i = start; i < int_end; i++)
                if (s[i] != '0' && s[i] != '_')
                    return error_at(start, p - start,
                                    "leading zeros in decimal integer literals are not permitted");
        token t = make(TOK_INT, start, p - start);
        t.magnitude = value;
        t.int_too_big = too_big;
        return t;
    }
    /* strtod wants no underscores and a NUL-terminated copy */
    char small[64];
    size_t n = p - start;
    char *copy = n < sizeof small ? small : malloc(n + 1);
    if (!copy) return error_at(start, n, "out of memory reading a number");
    size_t k = 0;
    for (size_t i = start; i < p; i++)
        if (s[i] != '_') copy[k++] = s[i];
    copy[k] = '\0';
    token t = make(TOK_FLOAT, start, n);
    t.number = strtod(copy, NULL); /* overflow gives inf, as in Python */
    if (copy != small) free(copy);
    return t;
}

static token lex_string(const char *s, size_t len, size_t start)
{
    char quote = s[start];
    size_t p = start + 1;
    while (p < len && s[p] != quote) {
        if (s[p] == '\n' || s[p] == '\0') break;
        if (s[p] == '\\' && p + 1 < len) p++;
        p++;
    }
    if (p >= len || s[p] != quote) return error_at(start, p - start, "unterminated string literal");
    return make(TOK_STRING, start, p + 1 - start);
}

token mtk_lex_token(const char *s, size_t len, size_t pos)
{
    size_t p = pos;
    for (;;) {
        while (p < len && (s[p] == ' ' || s[p] == '\t' || s[p] == '\n' || s[p] == '\r' ||
                           s[p] == '\f' || s[p] == '\v'))
            p++;
        if (p < len && s[p] == '#') {
            while (p < len && s[p] != '\n') p++;
            continue;
        }
        break;
    }
    if (p >= len) return make(TOK_END, p, 0);
    char c = s[p];
    if (is_name_start(c)) {
        size_t e = p + 1;
        while (e < len && is_name_char(s[e])) e++;
        if (e < len && (s[e] == '\'' || s[e] == '"'))
            return error_at(p, e - p + 1, "unsupported string prefix");
        return make(TOK_NAME, p, e - p);
    }
    if (is_digit(c) || (c == '.' && p + 1 < len && is_digit(s[p + 1]))) return lex_number(s, len, p);
    if (c == '\'' || c == '"') return lex_string(s, len, p);
    switch (c) {
    case '(': return make(TOK_LPAREN, p, 1);
    case ')': return make(TOK_RPAREN, p, 1);
    case '[': return make(TOK_LBRACKET, p, 1);
    case ']': return make(TOK_RBRACKET, p, 1);
    case ',': return make(TOK_COMMA, p, 1);
    case '.':
        if (p + 2 < len && s[p + 1] == '.' && s[p + 2] == '.') return make(TOK_ELLIPSIS, p, 3);
        return make(TOK_DOT, p, 1);
    case '-':
        if (p + 1 < len && s[p + 1] == '>') return make(TOK_OPERATOR, p, 2); /* -> */
        return make(TOK_MINUS, p, 1);
    case '+': return make(TOK_PLUS, p, 1);
    case '=':
        if (p + 1 < len && s[p + 1] == '=') return make(TOK_OPERATOR, p, 2);
        return make(TOK_EQUALS, p, 1);
    default: break;
    }
    if (c != '\0' && strchr("*/%@&|^~<>!:;{}", c)) {
        /* Python's longest operator first: **= //= <<= >>=, then the pairs */
        static const char *const longer[] = { "**=", "//=", "<<=", ">>=", "**", "//", "<<", ">>", "<=",
                                              ">=", "!=", "*=", "/=", "%=", "@=", "&=", "|=", "^=", ":=" };
        for (size_t i = 0; i < sizeof longer / sizeof longer[0]; i++) {
            size_t n = strlen(longer[i]);
            if (p + n <= len && memcmp(s + p, longer[i], n) == 0) return make(TOK_OPERATOR, p, n);
        }
        return make(TOK_OPERATOR, p, 1);
    }
    return error_at(p, 1, "invalid character");
}

size_t mtk_lex_string_decode(const char *text, const token *tok, char *out)
{
    const char *s = text + tok->start + 1;
    size_t n = tok->len - 2, k = 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c != '\\' || i + 1 >= n) {
            out[k++] = c;
            continue;
        }
        char e = s[++i];
        switch (e) {
        case '\\': out[k++] = '\\'; break;
        case '\'': out[k++] = '\''; break;
        case '"': out[k++] = '"'; break;
        case 'n': out[k++] = '\n'; break;
        case 't': out[k++] = '\t'; break;
        case 'r': out[k++] = '\r'; break;
        case '0': out[k++] = '\0'; break;
        case 'x':
            if (i + 2 < n && digit_value(s[i + 1]) < 16 && digit_value(s[i + 2]) < 16) {
                out[k++] = (char)(digit_value(s[i + 1]) * 16 + digit_value(s[i + 2]));
                i += 2;
                break;
            }
            out[k++] = '\\';
            out[k++] = e;
            break;
        default:
            out[k++] = '\\';
            out[k++] = e;
            break;
        }
    }
    return k;
}

const char *mtk_lex_describe(const char *text, const token *tok, char *buf, size_t cap)
{
    int n = tok->len > 40 ? 40 : (int)tok->len;
    const char *more = tok->len > 40 ? "..." : "";
    const char *s = text + tok->start;
    switch (tok->kind) {
    case TOK_END: snprintf(buf, cap, "end of input"); break;
    case TOK_NAME: snprintf(buf, cap, "name '%.*s%s'", n, s, more); break;
    case TOK_INT:
    case TOK_FLOAT: snprintf(buf, cap, "number %.*s%s", n, s, more); break;
    case TOK_STRING: snprintf(buf, cap, "string %.*s%s", n, s, more); break;
    case TOK_ERROR:
        if (tok->len == 1 && ((unsigned char)s[0] < 0x20 || (unsigned char)s[0] >= 0x7f))
            snprintf(buf, cap, "'\\x%02x'", (unsigned)(unsigned char)s[0]);
        else
            snprintf(buf, cap, "'%.*s%s'", n, s, more);
        break;
    default: snprintf(buf, cap, "'%.*s'", n, s); break;
    }
    return buf;
}
