/* Parses op signatures ("add(Tensor input, Tensor|Scalar other, *,
 * Scalar alpha=1) -> Tensor") into argument specs, once, for all ops. */
#include "ops/registry.h"

#include <ctype.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct parsed_sig {
    mtk_arg_spec specs[MTK_MAX_OP_ARGS];
    mtk_op_sig sig; /* what the dispatcher reads; sig.specs points at specs */
} parsed_sig;

/* OPID_COUNT entries, never freed; published (release) once parsed, so a
 * reader that sees it (acquire) skips pthread_once */
static parsed_sig *_Atomic parsed;
static pthread_once_t parse_once = PTHREAD_ONCE_INIT;
static uintptr_t table_first; /* address of the table's first row */

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

static const struct { const char *name; mtk_arg_type type; } type_names[] = {
    { "Tensor", MTK_ARG_TENSOR },   { "Tensor|Scalar", MTK_ARG_TENSOR_OR_SCALAR },
    { "Scalar", MTK_ARG_SCALAR },   { "int", MTK_ARG_INT },
    { "int[]", MTK_ARG_INT_LIST },  { "int...", MTK_ARG_INT_LIST }, { "int[1]", MTK_ARG_INT_OR_LIST },
    { "float", MTK_ARG_FLOAT },     { "bool", MTK_ARG_BOOL },
    { "str", MTK_ARG_STR },         { "ScalarType", MTK_ARG_DTYPE },
    { "Device", MTK_ARG_DEVICE },   { "Any", MTK_ARG_ANY },
    { "Tensor[]", MTK_ARG_TENSOR_LIST },
};

static mtk_arg_type type_of(const char *name)
{
    for (size_t i = 0; i < sizeof type_names / sizeof type_names[0]; i++)
        if (strcmp(name, type_names[i].name) == 0) return type_names[i].type;
    return MTK_ARG_UNKNOWN;
}

/* Whether the signature returns a list of tensors ("-> Tensor[]"). */
static bool returns_sequence(const char *sig)
{
    const char *arrow = strstr(sig, "->");
    if (!arrow) return false;
    arrow += 2;
    while (*arrow == ' ') arrow++;
    return strncmp(arrow, "Tensor[]", 8) == 0;
}

/* Everything the dispatcher reads of one signature, computed once. */
static void describe(const char *text, parsed_sig *p)
{
    mtk_op_sig *sig = &p->sig;
    sig->specs = p->specs;
    sig->count = parse_one(text, p->specs);
    sig->varargs = -1;
    if (sig->count < 0) return;
    sig->returns_sequence = returns_sequence(text);
    for (int32_t i = 0; i < sig->count; i++) {
        sig->types[i] = (uint8_t)type_of(p->specs[i].type);
        sig->defaults[i] = p->specs[i].has_default ? p->specs[i].default_value : mtk_value_none();
        if (!p->specs[i].keyword_only) sig->npositional = i + 1;
        if (strcmp(p->specs[i].type, "int...") == 0) sig->varargs = i;
    }
    /* PyTorch's var-args int list ("int..."): the last positional
     * parameter, without a default (zeros(2, 3), x.view(2, 3)) */
    if (sig->varargs >= 0 && (sig->varargs != sig->npositional - 1 || p->specs[sig->varargs].has_default))
        sig->count = -1; /* a malformed row */
}

static void parse_all(void)
{
    parsed_sig *all = calloc((size_t)OPID_COUNT + 1, sizeof *all);
    if (!all) return;
    for (int32_t i = 0; i < (int32_t)OPID_COUNT; i++) describe(mtk_op_at(i)->signature, &all[i]);
    table_first = (uintptr_t)mtk_op_by_id((mtk_op_id)0);
    atomic_store_explicit(&parsed, all, memory_order_release);
}

const mtk_op_sig *mtk_op_sig_of(const mtk_op_def *op)
{
    parsed_sig *all = atomic_load_explicit(&parsed, memory_order_acquire);
    if (!all) {
        pthread_once(&parse_once, parse_all);
        all = atomic_load_explicit(&parsed, memory_order_acquire);
        if (!all) return NULL;
    }
    /* the row's index, without pointer arithmetic on a pointer that may
     * not point into the table */
    uintptr_t offset = (uintptr_t)op - table_first; /* wraps for op < first */
    if (offset >= (uintptr_t)OPID_COUNT * sizeof(mtk_op_def) || offset % sizeof(mtk_op_def) != 0) return NULL;
    return &all[offset / sizeof(mtk_op_def)].sig;
}

int32_t mtk_op_args(const mtk_op_def *op, const mtk_arg_spec **specs_out)
{
    const mtk_op_sig *sig = mtk_op_sig_of(op);
    if (!sig) return -1;
    if (specs_out) *specs_out = sig->specs;
    return sig->count;
}
