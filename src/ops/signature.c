/* Parses op signatures ("add(Tensor input, Tensor|Scalar other, *,
 * Scalar alpha=1) -> Tensor") into argument specs, once, for all ops. */
#include "ops/registry.h"

#include <ctype.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct parsed_sig {
    mtk_arg_spec specs[MTK_MAX_OP_ARGS];
    int32_t count; /* -1: malformed */
} parsed_sig;

static parsed_sig *parsed; /* OPID_COUNT entries, never freed */
static pthread_once_t parse_once = PTHREAD_ONCE_INIT;

/* Strings of the specs point into this pool (one copy per signature). */
static char *dup_range(const char *b, const char *e)
{
    char *s = malloc((size_t)(e - b) + 1);
    if (!s) return NULL;
    memcpy(s, b, (size_t)(e - b));
    s[e - b] = '\0';
    return s;
}

static bool parse_default(const char *text, mtk_value *out)
{
    if (strcmp(text, "None") == 0) { *out = mtk_value_none(); return true; }
    if (strcmp(text, "True") == 0) { *out = mtk_value_bool(true); return true; }
    if (strcmp(text, "False") == 0) { *out = mtk_value_bool(false); return true; }
    size_t n = strlen(text);
    if (n >= 2 && (text[0] == '\'' || text[0] == '"') && text[n - 1] == text[0]) {
        char *s = dup_range(text + 1, text + n - 1);
        if (!s) return false;
        *out = mtk_value_string(s);
        return true;
    }
    if (strncmp(text, "torch.", 6) == 0 || mtk_dtype_from_name(text) != MTK_DTYPE_UNDEFINED) {
        mtk_dtype d = mtk_dtype_from_name(text);
        if (d == MTK_DTYPE_UNDEFINED) return false;
        *out = mtk_value_dtype(d);
        return true;
    }
    char *end;
    long long i = strtoll(text, &end, 10);
    if (*end == '\0' && end != text) { *out = mtk_value_int(i); return true; }
    double f = strtod(text, &end);
    if (*end == '\0' && end != text) { *out = mtk_value_float(f); return true; }
    return false;
}

/* The ')' that closes the '(' at `open` (the return type may hold more
 * parentheses: "-> (Tensor values, Tensor indices)"); NULL if none. */
static const char *matching_paren(const char *open)
{
    int depth = 0;
    for (const char *p = open; *p; p++) {
        if (*p == '(' || *p == '[') depth++;
        if ((*p == ')' || *p == ']') && --depth == 0) return *p == ')' ? p : NULL;
    }
    return NULL;
}

static int32_t parse_one(const char *sig, mtk_arg_spec *specs)
{
    const char *p = sig ? strchr(sig, '(') : NULL;
    const char *close = p ? matching_paren(p) : NULL;
    if (!p || !close) return -1;
    p++;
    int32_t count = 0;
    bool kw_only = false;
    while (p < close) {
        while (p < close && isspace((unsigned char)*p)) p++;
        if (p >= close) break;
        const char *e = p;
        int depth = 0;
        while (e < close && (depth > 0 || *e != ',')) {
            if (*e == '[' || *e == '(') depth++;
            if (*e == ']' || *e == ')') depth--;
            e++;
        }
        const char *te = e;
        while (te > p && isspace((unsigned char)te[-1])) te--;
        if (te - p == 1 && *p == '*') {
            kw_only = true;
        } else {
            if (count >= MTK_MAX_OP_ARGS) return -1;
            /* "Type name" or "Type name=default" */
            const char *sp = p;
            while (sp < te && !isspace((unsigned char)*sp)) sp++;
            if (sp >= te) return -1;
            mtk_arg_spec *s = &specs[count++];
            const char *type_end = sp;
            if (type_end[-1] == '?') {
                s->optional = true;
                type_end--;
            }
            s->type = dup_range(p, type_end);
            const char *np = sp;
            while (np < te && isspace((unsigned char)*np)) np++;
            const char *eq = memchr(np, '=', (size_t)(te - np));
            s->name = dup_range(np, eq ? eq : te);
            s->keyword_only = kw_only;
            if (!s->type || !s->name) return -1;
            if (eq) {
                char *def = dup_range(eq + 1, te);
                if (!def) return -1;
                s->has_default = true;
                bool ok = parse_default(def, &s->default_value); /* strings are copied */
                free(def);
                if (!ok) return -1;
            }
        }
        p = e < close ? e + 1 : e;
    }
    return count;
}

static void parse_all(void)
{
    parsed = calloc((size_t)OPID_COUNT + 1, sizeof *parsed);
    if (!parsed) return;
    for (int32_t i = 0; i < (int32_t)OPID_COUNT; i++)
        parsed[i].count = parse_one(mtk_op_at(i)->signature, parsed[i].specs);
}

int32_t mtk_op_args(const mtk_op_def *op, const mtk_arg_spec **specs_out)
{
    pthread_once(&parse_once, parse_all);
    if (!parsed || !op) return -1;
    /* the row's index, without pointer arithmetic on a pointer that may
     * not point into the table */
    uintptr_t first = (uintptr_t)mtk_op_by_id((mtk_op_id)0), at = (uintptr_t)op;
    if (at < first || (at - first) % sizeof(mtk_op_def) != 0) return -1;
    uintptr_t i = (at - first) / sizeof(mtk_op_def);
    if (i >= (uintptr_t)OPID_COUNT) return -1;
    if (specs_out) *specs_out = parsed[i].specs;
    return parsed[i].count;
}
