/* Model summaries (Lightning's ModelSummary, torchinfo): one row per
 * module with its parameter count, and with an example input the in/out
 * sizes and FLOPs of its first call from a traced forward; totals by
 * dtype; lazy parameters reported as uninitialized with what to do. */
#include "nn/module_internal.h"
#include "core/text.h"
#include "nn/trace_internal.h"
#include "nn/walk.h"
#include "mtk/plan.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

typedef struct summary_row {
    const char *name;
    const char *type;
    int32_t depth;
    int64_t params;          /* initialized parameters of the subtree */
    int32_t lazy;            /* lazy parameter tensors of the subtree  */
    mtk_tensor *const *in;
    int32_t nin;
    mtk_tensor *const *out;
    int32_t nout;
    int32_t calls;
    int64_t flops;           /* its calls', or its children's summed when not called itself */
    bool flops_known;        /* called, or a descendant was */
} summary_row;

#define MAX_NOTES 16

struct mtk_summary {
    mtk_ctx *ctx;
    mtk_module *root;
    summary_row *rows;       /* pre-order, the root first */
    int32_t nrows;
    mtk_param_stats stats;
    bool traced;
    int64_t flops;
    mtk_tensor *inputs[MTK_MODULE_MAX_IO];
    int32_t ninputs;
    mtk_tensor *outputs[MTK_MODULE_MAX_IO];
    int32_t noutputs;
    const char **lazy_names; /* modules holding lazy tensors */
    int32_t nlazy;
    const char *notes[MAX_NOTES];
    int32_t nnotes;
};

static bool subtree_stats(mtk_module *m, mtk_param_stats *st)
{
    ptrset seen;
    nn_ptrset_init(&seen, m->ctx);
    memset(st, 0, sizeof *st);
    bool ok = nn_collect_stats(m, &seen, st);
    nn_ptrset_free(&seen);
    return ok;
}

/* Each row's parameter count and lazy tensors (rows[i].params, .lazy) in
 * one walk over the pre-order modules, as subtree_stats gives them row by
 * row: every tensor once per subtree.  A tensor held by several modules
 * (tied weights) counts at its first holder and, for each later holder,
 * in the subtrees that do not hold an earlier one: those below the lowest
 * common ancestor of the two holders.  False when the tree shares a
 * module or a tensor is a parameter in one module and a buffer in another
 * (the caller then counts row by row); *failed on out of memory. */
static bool rows_stats_one_walk(mtk_ctx *ctx, const mtk_named_module *mods, int32_t n, summary_row *rows, bool *failed)
{
    *failed = false;
    int64_t edges = 0;
    for (int32_t i = 0; i < n; i++) edges += mods[i].module->children.count;
    if (edges != n - 1) return false; /* a module listed once but held twice */
    int32_t *parent = mtk_ctx_alloc_uninit(ctx, (size_t)(n ? n : 1) * sizeof *parent);
    if (!parent) return !(*failed = true);
    for (int32_t i = 0; i < n; i++) {
        int32_t p = i - 1;
        while (p >= 0 && mods[p].depth >= mods[i].depth) p = parent[p];
        parent[i] = p;
        rows[i].params = 0;
        rows[i].lazy = 0;
    }
    ptrset last; /* tensor -> 2 * (its latest holder's row) + (1 when a parameter) + 2 */
    nn_ptrset_init(&last, ctx);
    bool ok = true;
    for (int32_t i = 0; ok && i < n; i++) {
        const mtk_module *m = mods[i].module;
        for (int32_t k = 0; ok && k < m->params.count + m->buffers.count; k++) {
            bool is_param = k < m->params.count;
            mtk_tensor *t = is_param ? m->params.items[k].tensor : m->buffers.items[k - m->params.count].tensor;
            uintptr_t code = ((uintptr_t)i << 1) + (is_param ? 1 : 0) + 2;
            uintptr_t before = (uintptr_t)nn_ptrset_get(&last, t);
            if (before && (before & 1) != (code & 1)) {
                ok = false; /* a parameter here, a buffer there */
                break;
            }
            if (nn_ptrset_put(&last, t, (void *)code) < 0) {
                *failed = true;
                ok = false;
                break;
            }
            if (!is_param) continue;
            bool lazy = t->flags & MTK_TENSOR_LAZY;
            int64_t values = lazy || (t->flags & MTK_TENSOR_QUANT_SCALES)
                                 ? 0
                                 : mtk_tensor_numel(t) * (t->flags & MTK_TENSOR_PACKED_PAIRS ? 2 : 1);
            rows[i].params += values;
            rows[i].lazy += lazy;
            if (!before) continue;
            /* the lowest holder of both this row and the earlier one */
            int32_t earlier = (int32_t)((before - 2) >> 1), a = i;
            while (a > earlier) a = parent[a];
            if (a >= 0) {
                rows[a].params -= values;
                rows[a].lazy -= lazy;
            }
        }
    }
    nn_ptrset_free(&last);
    if (!ok) return false;
    /* subtree sums, children (later rows) first */
    for (int32_t i = n - 1; i > 0; i--) {
        rows[parent[i]].params += rows[i].params;
        rows[parent[i]].lazy += rows[i].lazy;
    }
    return true;
}

/* A container that was not called itself (ModuleList, ModuleDict: no
 * forward of their own) shows the sum of its children's FLOPs: the graph's
 * per-module FLOPs are inclusive already (a node counts in every enclosing
 * module), so it only becomes known when a child's is, children first
 * (rows are pre-order, so backwards). */
static void sum_uncalled(mtk_summary *s)
{
    for (int32_t i = s->nrows - 1; i >= 0; i--) {
        summary_row *r = &s->rows[i];
        if (r->calls > 0) continue;
        for (int32_t j = i + 1; j < s->nrows && s->rows[j].depth > r->depth; j++)
            if (s->rows[j].depth == r->depth + 1 && s->rows[j].flops_known) r->flops_known = true;
    }
}

/* FLOPs per module of the graph's trace, each node counted in its module
 * and every enclosing one (the trace's modules are in pre-order, so a
 * module's parent is the nearest earlier one of smaller depth); *total
 * gets every node's, those outside any module included.  NULL on OOM. */
static const int64_t *module_flops(const mtk_graph *g, int64_t *total)
{
    const mtk_trace *tr = mtk_graph_trace(g);
    int32_t n = mtk_trace_module_count(tr);
    mtk_ctx *ctx = tr->ctx;
    int64_t *flops = mtk_ctx_alloc(ctx, (size_t)(n ? n : 1) * sizeof *flops);
    int32_t *parent = mtk_ctx_alloc(ctx, (size_t)(n ? n : 1) * sizeof *parent);
    if (!flops || !parent) return NULL;
    for (int32_t i = 0; i < n; i++) {
        flops[i] = 0;
        int32_t p = i - 1, depth = mtk_trace_module_at(tr, i)->depth;
        while (p >= 0 && mtk_trace_module_at(tr, p)->depth >= depth) p = parent[p];
        parent[i] = p;
    }
    *total = 0;
    for (int32_t k = 0; k < mtk_graph_node_count(g); k++) {
        const mtk_graph_node *node = mtk_graph_node_at(g, k);
        *total += node->flops;
        for (int32_t m = node->module; m >= 0 && m < n; m = parent[m]) flops[m] += node->flops;
    }
    return flops;
}

mtk_summary *mtk_summary_new(mtk_module *m, mtk_tensor *const *inputs, int32_t ninputs)
{
    if (!m) return NULL;
    mtk_ctx *ctx = m->ctx;
    if (ninputs < 0 || ninputs > MTK_MODULE_MAX_IO) {
        mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "summary: %d inputs (at most %d)", (int)ninputs, MTK_MODULE_MAX_IO);
        return NULL;
    }
    mtk_summary *s = mtk_ctx_alloc(ctx, sizeof *s);
    if (!s) return NULL;
    s->ctx = ctx;
    s->root = m;
    mtk_trace *tr = NULL;
    const mtk_graph *graph = NULL;
    const int64_t *flops = NULL;
    if (ninputs > 0) {
        tr = mtk_trace_begin(m);
        if (!tr) return NULL;
        mtk_module_io io = { .nin = ninputs };
        memcpy(io.in, inputs, (size_t)ninputs * sizeof *inputs);
        bool ok = mtk_module_call(m, &io);
        mtk_trace_end(tr);
        if (!ok) return NULL;
        s->traced = true;
        graph = mtk_graph_from_trace(tr);
        if (!graph || !(flops = module_flops(graph, &s->flops))) return NULL;
        memcpy(s->inputs, inputs, (size_t)ninputs * sizeof *inputs);
        s->ninputs = ninputs;
        memcpy(s->outputs, io.out, sizeof s->outputs);
        s->noutputs = io.nout;
    }
    if (!mtk_module_param_stats(m, &s->stats)) return NULL;
    mtk_named_module *mods;
    int32_t n = mtk_module_named_modules(m, &mods);
    if (n < 0) return NULL;
    s->rows = mtk_ctx_alloc(ctx, (size_t)(n ? n : 1) * sizeof *s->rows);
    s->lazy_names = mtk_ctx_alloc(ctx, (size_t)(n ? n : 1) * sizeof *s->lazy_names);
    if (!s->rows || !s->lazy_names) return NULL;
    bool failed;
    bool walked = rows_stats_one_walk(ctx, mods, n, s->rows, &failed);
    if (failed) return NULL;
    for (int32_t i = 0; i < n; i++) {
        summary_row *r = &s->rows[i];
        mtk_param_stats st = { .total = r->params, .uninitialized = r->lazy };
        if (!walked && !subtree_stats(mods[i].module, &st)) return NULL;
        *r = (summary_row){ .name = mods[i].name, .type = mods[i].module->type->name, .depth = mods[i].depth,
                            .params = st.total, .lazy = st.uninitialized };
        if (nn_module_has_lazy(mods[i].module)) s->lazy_names[s->nlazy++] = mods[i].name;
        /* the trace listed the same modules in the same order */
        const mtk_trace_module *t = tr && i < mtk_trace_module_count(tr) ? mtk_trace_module_at(tr, i) : NULL;
        if (t && t->module == mods[i].module) {
            r->in = t->inputs, r->nin = t->ninputs;
            r->out = t->outputs, r->nout = t->noutputs;
            r->calls = t->calls;
            r->flops = flops[i];
            r->flops_known = t->calls > 0;
        }
    }
    s->nrows = n;
    sum_uncalled(s);
    return s;
}

void mtk_summary_free(mtk_summary *summary) { (void)summary; /* arena memory: freed with the context */ }

bool mtk_summary_add_note(mtk_summary *s, const char *note)
{
    if (!s || !note) return false;
    if (s->nnotes == MAX_NOTES)
        return mtk_error(s->ctx, MTK_ERR_INVALID_ARGUMENT, "summary: at most %d notes", MAX_NOTES);
    const char *copy = mtk_ctx_strdup(s->ctx, note);
    if (!copy) return false;
    s->notes[s->nnotes++] = copy;
    return true;
}

/* --------------------------------------------------------- formatting */

/* "[1, 10]", "[[1, 10], [1, 20]]", "?" (not called). */
static const char *shapes_text(mtk_tensor *const *ts, int32_t n, bool called, char *buf, size_t cap)
{
    if (!called || n == 0) {
        snprintf(buf, cap, "?");
        return buf;
    }
    size_t len = 0;
    if (n > 1) len += (size_t)snprintf(buf + len, cap - len, "[");
    for (int32_t i = 0; i < n && len < cap; i++) {
        char one[256];
        len += (size_t)snprintf(buf + len, cap - len, "%s%s", i ? ", " : "",
                                mtk_shape_list_str(ts[i]->shape, ts[i]->ndim, one, sizeof one));
    }
    if (n > 1 && len < cap) snprintf(buf + len, cap - len, "]");
    return buf;
}

static bool row_shown(const mtk_summary *s, int32_t i, int32_t depth)
{
    const summary_row *r = &s->rows[i];
    if (r->depth == 0) return depth == 0 || s->nrows == 1; /* the model's own row: at depth 0, or when alone */
    return depth < 0 || r->depth <= depth;
}

/* ----------------------------------------------- collapsing repeated layers */

/* One row of the text table: a module, or a run of `count` identical
 * modules shown once under a range name ("layers.0-79"). */
typedef struct display_row {
    int32_t row;
    int64_t count;
    const char *name;
} display_row;

/* The index past row i's subtree (rows are pre-order). */
static int32_t subtree_end(const mtk_summary *s, int32_t i)
{
    int32_t j = i + 1;
    while (j < s->nrows && s->rows[j].depth > s->rows[i].depth) j++;
    return j;
}

/* The last dotted component of a name, and whether it is an integer. */
static const char *last_part(const char *name, int64_t *index)
{
    const char *dot = strrchr(name, '.');
    const char *p = dot ? dot + 1 : name;
    if (!*p) return NULL;
    int64_t v = 0;
    for (const char *q = p; *q; q++) {
        if (*q < '0' || *q > '9' || v > INT64_MAX / 10 - 9) return NULL;
        v = v * 10 + (*q - '0');
    }
    *index = v;
    return p;
}

static bool same_shapes(mtk_tensor *const *a, int32_t na, mtk_tensor *const *b, int32_t nb)
{
    if (na != nb) return false;
    for (int32_t i = 0; i < na; i++) {
        if (a[i] == b[i]) continue;
        if (!a[i] || !b[i] || a[i]->dtype != b[i]->dtype || a[i]->ndim != b[i]->ndim ||
            memcmp(a[i]->shape, b[i]->shape, (size_t)a[i]->ndim * sizeof a[i]->shape[0]) != 0)
            return false;
    }
    return true;
}

static bool same_row(const summary_row *a, const summary_row *b)
{
    return strcmp(a->type, b->type) == 0 && a->params == b->params && a->lazy == b->lazy &&
           a->calls == b->calls && a->flops == b->flops && same_shapes(a->in, a->nin, b->in, b->nin) &&
           same_shapes(a->out, a->nout, b->out, b->nout);
}

/* How many siblings from row i on are identical and named i, i+1, ... */
static int64_t run_length(const mtk_summary *s, int32_t i, int32_t *run_end)
{
    int64_t first = 0;
    *run_end = subtree_end(s, i);
    const char *part = last_part(s->rows[i].name, &first);
    if (!part || s->rows[i].depth == 0) return 1;
    size_t prefix = (size_t)(part - s->rows[i].name);
    int32_t size = *run_end - i;
    int64_t count = 1;
    for (int32_t j = *run_end; j + size <= s->nrows; j += size) {
        int64_t index;
        const char *pj = last_part(s->rows[j].name, &index);
        if (s->rows[j].depth != s->rows[i].depth || !pj || index != first + count ||
            (size_t)(pj - s->rows[j].name) != prefix || strncmp(s->rows[j].name, s->rows[i].name, prefix) != 0 ||
            subtree_end(s, j) - j != size)
            break;
        bool same = true;
        for (int32_t k = 0; k < size && same; k++) same = same_row(&s->rows[i + k], &s->rows[j + k]);
        if (!same) break;
        count++;
        *run_end = j + size;
    }
    return count;
}

/* The rows of the text table, repeated layers collapsed.  Returns the
 * count, -1 on out of memory. */
static int32_t display_rows(const mtk_summary *s, int32_t depth, display_row **out)
{
    display_row *rows = mtk_ctx_alloc(s->ctx, (size_t)(s->nrows ? s->nrows : 1) * sizeof *rows);
    if (!rows) return -1;
    struct rename {
        int32_t end, resume;  /* the first member's subtree end; where the run ends */
        const char *from, *to;
        int64_t count;
    } stack[64];
    int32_t top = 0, n = 0;
    for (int32_t i = 0; i < s->nrows;) {
        if (top > 0 && i >= stack[top - 1].end) {
            i = stack[--top].resume;
            continue;
        }
        const summary_row *r = &s->rows[i];
        int64_t outer = top ? stack[top - 1].count : 1;
        const char *name = r->name;
        if (top) {
            size_t from = strlen(stack[top - 1].from);
            char *renamed = mtk_ctx_alloc(s->ctx, strlen(stack[top - 1].to) + strlen(name) - from + 1);
            if (!renamed) return -1;
            sprintf(renamed, "%s%s", stack[top - 1].to, name + from);
            name = renamed;
        }
        int32_t run_end;
        int64_t run = (depth < 0 || r->depth <= depth) && top < 64 ? run_length(s, i, &run_end) : 1;
        if (run > 1) {
            int64_t first = 0;
            const char *part = last_part(name, &first);
            size_t prefix = (size_t)(part - name);
            char *ranged = mtk_ctx_alloc(s->ctx, prefix + 48);
            if (!ranged) return -1;
            sprintf(ranged, "%.*s%" PRId64 "-%" PRId64, (int)prefix, name, first, first + run - 1);
            stack[top++] = (struct rename){ .end = subtree_end(s, i), .resume = run_end, .from = r->name,
                                            .to = ranged, .count = outer * run };
            name = ranged;
        }
        if (row_shown(s, i, depth)) rows[n++] = (display_row){ .row = i, .count = outer * run, .name = name };
        i++;
    }
    *out = rows;
    return n;
}

enum { COL_INDEX, COL_NAME, COL_TYPE, COL_PARAMS, COL_IN, COL_OUT, COL_FLOPS, NCOLS };

/* The cells of one row (strings in the arena). */
static bool row_cells(const mtk_summary *s, const display_row *d, int32_t index, char **cells)
{
    const summary_row *r = &s->rows[d->row];
    char buf[1024], num[48];
    snprintf(buf, sizeof buf, "%d", (int)index);
    cells[COL_INDEX] = mtk_ctx_strdup(s->ctx, buf);
    cells[COL_NAME] = mtk_ctx_strdup(s->ctx, r->depth == 0 ? "(root)" : d->name);
    if (d->count > 1) snprintf(buf, sizeof buf, "%" PRId64 " \u00d7 %s", d->count, r->type);
    cells[COL_TYPE] = mtk_ctx_strdup(s->ctx, d->count > 1 ? buf : r->type);
    if (r->lazy && r->params == 0) snprintf(buf, sizeof buf, "?");
    else if (r->lazy) snprintf(buf, sizeof buf, "%s + ?", text_grouped(r->params * d->count, num, sizeof num));
    else text_grouped(r->params * d->count, buf, sizeof buf);
    cells[COL_PARAMS] = mtk_ctx_strdup(s->ctx, buf);
    bool summed = r->calls == 0 && r->flops_known; /* a container: its children ran, it has no sizes */
    cells[COL_IN] = mtk_ctx_strdup(s->ctx, summed ? "-" : shapes_text(r->in, r->nin, r->calls > 0, buf, sizeof buf));
    cells[COL_OUT] = mtk_ctx_strdup(s->ctx, summed ? "-" : shapes_text(r->out, r->nout, r->calls > 0, buf, sizeof buf));
    cells[COL_FLOPS] = mtk_ctx_strdup(s->ctx, r->flops_known ? text_grouped(r->flops * d->count, num, sizeof num) : "?");
    for (int c = 0; c < NCOLS; c++)
        if (!cells[c]) return false;
    return true;
}

/* Columns a UTF-8 string takes (its code points: "×" is one). */
static size_t text_width(const char *s)
{
    size_t n = 0;
    for (; *s; s++) n += ((unsigned char)*s & 0xC0) != 0x80;
    return n;
}

static void add_row(mtk_text *t, char *const *cells, const size_t *width, int ncols)
{
    size_t start = t->len;
    for (int c = 0; c < ncols; c++)
        mtk_text_printf(t, "%s%-*s", c == 0 ? "" : " | ", (int)(width[c] + strlen(cells[c]) - text_width(cells[c])), cells[c]);
    while (!t->failed && t->len > start && t->data[t->len - 1] == ' ') t->data[--t->len] = '\0';
    mtk_text_printf(t, "\n");
}

char *mtk_summary_text(const mtk_summary *s, int32_t depth)
{
    if (!s) return NULL;
    mtk_text t = { .ctx = s->ctx };
    int ncols = s->traced ? NCOLS : COL_PARAMS + 1;
    static const char *const headers[NCOLS] = { "", "Name", "Type", "Params", "In sizes", "Out sizes", "FLOPs" };
    size_t width[NCOLS];
    for (int c = 0; c < NCOLS; c++) width[c] = strlen(headers[c]);
    char **cells = mtk_ctx_alloc(s->ctx, (size_t)(s->nrows ? s->nrows : 1) * NCOLS * sizeof *cells);
    if (!cells) return NULL;
    display_row *drows;
    int32_t shown = display_rows(s, depth, &drows);
    if (shown < 0) return NULL;
    for (int32_t i = 0; i < shown; i++) {
        char **row = cells + (size_t)i * NCOLS;
        if (!row_cells(s, &drows[i], i, row)) return NULL;
        for (int c = 0; c < NCOLS; c++)
            if (text_width(row[c]) > width[c]) width[c] = text_width(row[c]);
    }
    size_t rule = 0;
    for (int c = 0; c < ncols; c++) rule += width[c] + (c ? 3 : 0);
    add_row(&t, (char *const *)headers, width, ncols);
    for (size_t i = 0; i < rule; i++) mtk_text_printf(&t, "-");
    mtk_text_printf(&t, "\n");
    for (int32_t i = 0; i < shown; i++) add_row(&t, cells + (size_t)i * NCOLS, width, ncols);
    for (size_t i = 0; i < rule; i++) mtk_text_printf(&t, "-");
    mtk_text_printf(&t, "\n");
    bool collapsed = false;
    for (int32_t i = 0; i < shown; i++) collapsed |= drows[i].count > 1;
    if (collapsed)
        mtk_text_printf(&t, "\"N \u00d7 Type\" rows stand for N identical layers: %s\n",
                        s->traced ? "Params and FLOPs are their total, In/Out sizes each layer's."
                                  : "Params is their total.");

    /* totals, Lightning-style: the values in a column 10 wide, or as wide
     * as the widest (a 405B model's counts) */
    const mtk_param_stats *st = &s->stats;
    char v[64], b[64];
    int w = 10;
    int64_t widest[2] = { st->total, s->traced ? s->flops : 0 };
    for (int i = 0; i < 2; i++)
        if ((int)strlen(text_grouped(widest[i], v, sizeof v)) > w) w = (int)strlen(v);
    mtk_text_printf(&t, "%-*s %s\n", w, text_grouped(st->trainable, v, sizeof v), "Trainable params");
    mtk_text_printf(&t, "%-*s %s\n", w, text_grouped(st->non_trainable, v, sizeof v), "Non-trainable params");
    mtk_text_printf(&t, "%-*s %s\n", w, text_grouped(st->total, v, sizeof v), "Total params");
    mtk_text_printf(&t, "%-*s %s", w, text_bytes((uint64_t)st->bytes, v, sizeof v), "Params memory");
    int kinds = 0;
    for (int d = 0; d < MTK_DTYPE_COUNT; d++) {
        if (!st->count_by_dtype[d]) continue;
        mtk_text_printf(&t, "%s%s: %s in %s", kinds++ ? ", " : " (", mtk_dtype_name((mtk_dtype)d),
            text_bytes((uint64_t)st->bytes_by_dtype[d], b, sizeof b), text_grouped(st->count_by_dtype[d], v, sizeof v));
    }
    mtk_text_printf(&t, "%s\n", kinds ? " params)" : "");
    if (st->buffer_elements)
        mtk_text_printf(&t, "%-*s %s\n", w, text_bytes((uint64_t)st->buffer_bytes, v, sizeof v), "Buffers memory");
    if (s->traced) {
        mtk_text_printf(&t, "%-*s %s\n", w, text_grouped(s->flops, v, sizeof v), "Forward FLOPs");
        char shapes[1024];
        mtk_text_printf(&t, "Input sizes: %s\n", shapes_text(s->inputs, s->ninputs, true, shapes, sizeof shapes));
        mtk_text_printf(&t, "Output sizes: %s\n", shapes_text(s->outputs, s->noutputs, true, shapes, sizeof shapes));
    }
    for (int32_t i = 0; i < s->nnotes; i++) mtk_text_printf(&t, "Note: %s\n", s->notes[i]);
    if (st->uninitialized) {
        mtk_text_printf(&t, "Uninitialized: %d lazy parameter%s in %d module%s (", (int)st->uninitialized,
            st->uninitialized == 1 ? "" : "s", (int)s->nlazy, s->nlazy == 1 ? "" : "s");
        for (int32_t i = 0; i < s->nlazy && i < 8; i++) {
            const char *type = "?";
            for (int32_t k = 0; k < s->nrows; k++)
                if (s->rows[k].name == s->lazy_names[i]) type = s->rows[k].type;
            mtk_text_printf(&t, "%s%s: %s", i ? ", " : "", *s->lazy_names[i] ? s->lazy_names[i] : "(root)", type);
        }
        mtk_text_printf(&t, "%s) have no shape until the first forward and are not counted above. "
            "Give an example input (--input SHAPE) to make the count exact.\n", s->nlazy > 8 ? ", ..." : "");
    }
    return mtk_text_finish(&t);
}

/* ------------------------------------------------------------------ JSON */

static cJSON *json_shape(const mtk_tensor *t)
{
    cJSON *a = cJSON_CreateArray();
    for (int32_t d = 0; a && d < t->ndim; d++) cJSON_AddItemToArray(a, text_json_int(t->shape[d]));
    return a;
}

static cJSON *json_shapes(mtk_tensor *const *ts, int32_t n)
{
    cJSON *a = cJSON_CreateArray();
    for (int32_t i = 0; a && i < n; i++) cJSON_AddItemToArray(a, json_shape(ts[i]));
    return a;
}

char *mtk_summary_json(const mtk_summary *s, int32_t depth)
{
    if (!s) return NULL;
    const mtk_param_stats *st = &s->stats;
    cJSON *root = cJSON_CreateObject();
    if (!root) {
        mtk_error(s->ctx, MTK_ERR_OUT_OF_MEMORY, "summary: out of memory");
        return NULL;
    }
    cJSON_AddItemToObject(root, "total_params", text_json_int(st->total));
    cJSON_AddItemToObject(root, "trainable_params", text_json_int(st->trainable));
    cJSON_AddItemToObject(root, "non_trainable_params", text_json_int(st->non_trainable));
    cJSON_AddItemToObject(root, "uninitialized_params", text_json_int(st->uninitialized));
    cJSON_AddItemToObject(root, "param_bytes", text_json_int(st->bytes));
    cJSON *by_dtype = cJSON_CreateObject();
    for (int d = 0; by_dtype && d < MTK_DTYPE_COUNT; d++)
        if (st->count_by_dtype[d])
            cJSON_AddItemToObject(by_dtype, mtk_dtype_name((mtk_dtype)d), text_json_int(st->bytes_by_dtype[d]));
    cJSON_AddItemToObject(root, "param_bytes_by_dtype", by_dtype);
    cJSON_AddItemToObject(root, "buffer_bytes", text_json_int(st->buffer_bytes));
    cJSON_AddItemToObject(root, "flops", s->traced ? text_json_int(s->flops) : cJSON_CreateNull());
    cJSON_AddItemToObject(root, "input_shapes", json_shapes(s->inputs, s->ninputs));
    cJSON_AddItemToObject(root, "output_shapes", json_shapes(s->outputs, s->noutputs));
    cJSON *lazy = cJSON_CreateArray();
    for (int32_t i = 0; lazy && i < s->nlazy; i++) cJSON_AddItemToArray(lazy, cJSON_CreateString(s->lazy_names[i]));
    cJSON_AddItemToObject(root, "uninitialized_modules", lazy);
    cJSON *notes = cJSON_CreateArray();
    for (int32_t i = 0; notes && i < s->nnotes; i++) cJSON_AddItemToArray(notes, cJSON_CreateString(s->notes[i]));
    cJSON_AddItemToObject(root, "notes", notes);
    cJSON *modules = cJSON_CreateArray();
    for (int32_t i = 0; modules && i < s->nrows; i++) {
        if (!row_shown(s, i, depth)) continue;
        const summary_row *r = &s->rows[i];
        cJSON *row = cJSON_CreateObject();
        if (!row) break;
        cJSON_AddStringToObject(row, "name", r->name);
        cJSON_AddStringToObject(row, "type", r->type);
        cJSON_AddItemToObject(row, "depth", text_json_int(r->depth));
        cJSON_AddItemToObject(row, "params", text_json_int(r->params));
        cJSON_AddItemToObject(row, "uninitialized_params", text_json_int(r->lazy));
        bool called = r->calls > 0;
        cJSON_AddItemToObject(row, "in_shapes", called ? json_shapes(r->in, r->nin) : cJSON_CreateArray());
        cJSON_AddItemToObject(row, "out_shapes", called ? json_shapes(r->out, r->nout) : cJSON_CreateArray());
        cJSON_AddItemToObject(row, "flops", r->flops_known ? text_json_int(r->flops) : cJSON_CreateNull());
        cJSON_AddItemToArray(modules, row);
    }
    cJSON_AddItemToObject(root, "modules", modules);
    char *printed = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    char *out = printed ? mtk_ctx_strdup(s->ctx, printed) : NULL;
    cJSON_free(printed);
    if (!printed) mtk_error(s->ctx, MTK_ERR_OUT_OF_MEMORY, "summary: out of memory printing JSON");
    return out;
}
