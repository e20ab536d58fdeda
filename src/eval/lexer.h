/* Tokens of the eval language (a Python expression subset).  The lexer is
 * a pure function of (text, position), so the parser can peek freely. */
#ifndef MTK_EVAL_LEXER_H
#define MTK_EVAL_LEXER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum token_kind {
    TOK_END,      /* end of input                                  */
    TOK_NAME,     /* identifier (no dots: `.` is its own token)    */
    TOK_INT,      /* integer literal                               */
    TOK_FLOAT,    /* float literal                                 */
    TOK_STRING,   /* quoted string (text includes the quotes)      */
    TOK_LPAREN, TOK_RPAREN, TOK_LBRACKET, TOK_RBRACKET,
    TOK_COMMA, TOK_DOT, TOK_EQUALS, TOK_MINUS, TOK_PLUS,
    TOK_ELLIPSIS, /* ...                                           */
    TOK_OPERATOR, /* any other Python operator or delimiter (the
                     text says which: "**", "<=", ":", ";", ...)   */
    TOK_ERROR     /* malformed: `error` says why                   */
} token_kind;

typedef struct token {
    token_kind kind;
    size_t start, len;  /* byte range in the text                    */
    uint64_t magnitude; /* TOK_INT: value; valid unless int_too_big  */
    bool int_too_big;   /* TOK_INT: more than 2^63                   */
    double number;      /* TOK_FLOAT: value                          */
    const char *error;  /* TOK_ERROR: static message                 */
} token;

/* The token starting at or after `pos` (whitespace and # comments are
 * skipped).  Never fails: malformed input gives TOK_ERROR. */
token mtk_lex_token(const char *text, size_t len, size_t pos);

/* Decodes a TOK_STRING's body (escapes \\ \' \" \n \t \r \0 \xHH; other
 * backslashes are kept, as Python does) into out, which must hold
 * tok->len bytes; returns the decoded length. */
size_t mtk_lex_string_decode(const char *text, const token *tok, char *out);

/* A short description of a token for messages: "')'", "end of input",
 * "name 'foo'", "number 3" ... written into buf. */
const char *mtk_lex_describe(const char *text, const token *tok, char *buf, size_t cap);

#endif
