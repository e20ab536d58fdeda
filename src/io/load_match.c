/* Key matching of the model loader: every checkpoint key renamed, merged,
 * re-prefixed and looked up in the model's state dict as transformers 5
 * does (mtk/load.h lists the steps), into a read plan and a report of
 * what is missing, unexpected, mis-shaped or skipped.  Nothing is
 * allocated for the model here: it stays on meta. */
#include "io/load_internal.h"

#include <ctype.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KEY_MAX 1024 /* longest key the rules rewrite; longer ones are looked up as they are */
#define MAX_PARTS 4
#define MAX_GROUPS 10

/* The prefixes a wrapper puts before every key: torch.compile's
 * OptimizedModule and DistributedDataParallel / DataParallel. */
static const char *const wrapper_prefixes[] = { "_orig_mod.", "module." };
#define WRAPPERS 2

/* A rule with its expressions compiled. */
typedef struct compiled_rule {
    const mtk_key_rule *rule;
    regex_t re[MAX_PARTS];
    bool boundary[MAX_PARTS]; /* the match must not run on into a longer name */
    int32_t nre;
} compiled_rule;

/* A growing list of report entries (malloc'd; copied to the arena at the end). */
typedef struct key_list {
    mtk_load_key *items;
    int32_t n, cap;
} key_list;

/* A fused tensor being filled part by part. */
typedef struct merge_target {
    mtk_tensor *tensor;
    const char *name;
    int32_t nparts;
    int64_t slots; /* experts * nparts */
    int64_t filled;
    bool *done;
} merge_target;

typedef struct matcher {
    mtk_ctx *ctx;
    const mtk_load_spec *spec;
    const char *architecture;
    const char *base_prefix;  /* "model", or NULL */
    mtk_state_dict *sd;       /* the model's state dict                   */
    mtk_state_dict *buffers;  /* its non-persistent buffers, by name      */
    compiled_rule *rules;
    int32_t nrules;
    size_t strip_len;         /* bytes of wrapper prefix removed from every key */
    const char *strip;        /* the caller's strip_prefix, or NULL       */
    key_list missing, unexpected, mismatched, skipped;
    load_read *reads;
    int64_t nreads, reads_cap;
    const mtk_tensor **planned; /* tensors read whole, and merge targets  */
    int32_t nplanned;
    const mtk_tensor **named;   /* tensors some key names (even mis-shaped) */
    int32_t nnamed;
    merge_target *merges;
    int32_t nmerges;
    mtk_module *model;
    load_read *dups;          /* keys of a tensor another key already fills */
    int64_t ndups, dups_cap;
    int32_t converted;        /* tensors filled from keys that are not their names */
    bool oom;
} matcher;

/* ------------------------------------------------------------ helpers */

static bool word_char(char c) { return isalnum((unsigned char)c) || c == '_'; }

static bool has_ptr(const mtk_tensor *const *set, int32_t n, const mtk_tensor *t)
{
    for (int32_t i = n - 1; i >= 0; i--) /* recent first: keys come grouped by layer */
        if (set[i] == t) return true;
    return false;
}

static void add_ptr(matcher *m, const mtk_tensor ***set, int32_t *n, const mtk_tensor *t)
{
    if (has_ptr(*set, *n, t)) return;
    const mtk_tensor **grown = realloc(*set, sizeof *grown * (size_t)(*n + 1));
    if (!grown) {
        m->oom = true;
        return;
    }
    *set = grown;
    grown[(*n)++] = t;
}

static mtk_load_key *push_key(matcher *m, key_list *list, const char *name, const char *source, const char *why)
{
    if (list->n == list->cap) {
        int32_t cap = list->cap ? 2 * list->cap : 16;
        mtk_load_key *grown = realloc(list->items, sizeof *grown * (size_t)cap);
        if (!grown) {
            m->oom = true;
            return NULL;
        }
        list->items = grown, list->cap = cap;
    }
    mtk_load_key *k = &list->items[list->n++];
    memset(k, 0, sizeof *k);
    k->name = mtk_ctx_strdup(m->ctx, name);
    k->source = source ? mtk_ctx_strdup(m->ctx, source) : NULL;
    k->why = why ? mtk_ctx_strdup(m->ctx, why) : NULL;
    if (!k->name || (source && !k->source) || (why && !k->why)) m->oom = true;
    return k;
}

static void set_model_side(mtk_load_key *k, mtk_dtype dtype, const int64_t *shape, int32_t ndim)
{
    if (!k) return;
    k->dtype = mtk_dtype_name(dtype);
    k->ndim = ndim;
    memcpy(k->shape, shape, sizeof *shape * (size_t)ndim);
}

static void set_file_side(mtk_load_key *k, const mtk_st_info *info, bool as_main)
{
    if (!k) return;
    if (as_main) {
        k->dtype = mtk_st_dtype_name(info->dtype);
        k->ndim = info->ndim;
        memcpy(k->shape, info->shape, sizeof *info->shape * (size_t)info->ndim);
    } else {
        k->file_dtype = mtk_st_dtype_name(info->dtype);
        k->file_ndim = info->ndim;
        memcpy(k->file_shape, info->shape, sizeof *info->shape * (size_t)info->ndim);
    }
}

static bool starts_with(const char *s, const char *prefix) { return strncmp(s, prefix, strlen(prefix)) == 0; }

/* --------------------------------------------------------------- rules */

/* A merge part ("experts.*.w1.weight") as an extended regular expression:
 * literal text, `*` an expert index (group 1). */
static bool part_regex(const char *part, char *out, size_t cap)
{
    size_t at = 0;
    for (const char *p = part; *p; p++) {
        const char *add = NULL;
        char lit[3] = { 0 };
        if (*p == '*') add = "([0-9]+)";
        else if (strchr(".[]()\\^$+?{}|", *p)) lit[0] = '\\', lit[1] = *p, add = lit;
        else lit[0] = *p, add = lit;
        size_t len = strlen(add);
        if (at + len + 1 > cap) return false;
        memcpy(out + at, add, len);
        at += len;
    }
    out[at] = '\0';
    return true;
}

static bool compile_one(matcher *m, compiled_rule *c, const char *expr, bool boundary)
{
    int rc = regcomp(&c->re[c->nre], expr, REG_EXTENDED);
    if (rc != 0) {
        char msg[128];
        regerror(rc, &c->re[c->nre], msg, sizeof msg);
        return mtk_error(m->ctx, MTK_ERR_INVALID_ARGUMENT, "load: key rule '%s' does not compile: %s", expr, msg);
    }
    c->boundary[c->nre++] = boundary;
    return true;
}

static bool applies(const matcher *m, const mtk_key_rule *r)
{
    return !r->architecture || (m->architecture && strcmp(r->architecture, m->architecture) == 0);
}

/* Does the model have a buffer whose name ends with `suffix`? */
static bool has_buffer_ending(mtk_named_tensor *buffers, int32_t n, const char *suffix)
{
    size_t ls = strlen(suffix);
    for (int32_t i = 0; i < n; i++) {
        size_t ln = strlen(buffers[i].name);
        if (ln >= ls && strcmp(buffers[i].name + ln - ls, suffix) == 0) return true;
    }
    return false;
}

/* transformers' two ignorable keys of every family (modeling_utils'
 * _adjust_missing_and_unexpected_keys), each when the model has such a
 * buffer: per-layer rotary inv_freq of old checkpoints, position_ids that
 * used to be persistent. */
static const mtk_key_rule generic_ignores[] = {
    { .kind = MTK_KEY_IGNORE, .pattern = "rotary_emb\\.inv_freq" },
    { .kind = MTK_KEY_IGNORE, .pattern = "(^|\\.)position_ids$" },
};

static bool compile_rules(matcher *m, mtk_named_tensor *buffers, int32_t nbuffers)
{
    const mtk_key_rules *rules = m->spec->rules;
    int32_t user = m->spec->key_mapping ? m->spec->key_mapping_count : 0, family = rules ? rules->count : 0;
    int32_t n = user + family + 2;
    m->rules = calloc((size_t)n, sizeof *m->rules);
    if (!m->rules) return mtk_error(m->ctx, MTK_ERR_OUT_OF_MEMORY, "load: out of memory");
    for (int32_t i = 0; i < n; i++) {
        const mtk_key_rule *r;
        if (i < user) {
            r = &m->spec->key_mapping[i];
        } else if (i < user + family) {
            r = &rules->rules[i - user];
        } else {
            int32_t g = i - user - family;
            static const char *const needs[] = { "rotary_emb.inv_freq", "position_ids" };
            if (!has_buffer_ending(buffers, nbuffers, needs[g])) continue;
            r = &generic_ignores[g];
        }
        if (!applies(m, r)) continue;
        compiled_rule *c = &m->rules[m->nrules++];
        c->rule = r;
        if (r->kind == MTK_KEY_MERGE) {
            for (int32_t j = 0; j < MAX_PARTS && r->parts[j]; j++) {
                char expr[512];
                if (!strchr(r->parts[j], '*'))
                    return mtk_error(m->ctx, MTK_ERR_INVALID_ARGUMENT, "load: merge part '%s' has no '*' (the expert)",
                                     r->parts[j]);
                if (!part_regex(r->parts[j], expr, sizeof expr))
                    return mtk_error(m->ctx, MTK_ERR_INVALID_ARGUMENT, "load: merge part '%s' is too long", r->parts[j]);
                size_t len = strlen(r->parts[j]);
                if (!compile_one(m, c, expr, len && word_char(r->parts[j][len - 1]))) return false;
            }
        } else {
            size_t len = strlen(r->pattern);
            /* like transformers, a rename ending in a name character matches whole names */
            bool boundary = r->kind == MTK_KEY_RENAME && len && word_char(r->pattern[len - 1]);
            if (!compile_one(m, c, r->pattern, boundary)) return false;
        }
    }
    return true;
}

static void free_rules(matcher *m)
{
    for (int32_t i = 0; i < m->nrules; i++)
        for (int32_t j = 0; j < m->rules[i].nre; j++) regfree(&m->rules[i].re[j]);
    free(m->rules);
}

/* The first match of `re` in `key` (offsets into key); with `boundary`, one
 * that no name character follows. */
static bool search(const regex_t *re, bool boundary, const char *key, regmatch_t *g)
{
    size_t from = 0;
    for (;;) {
        if (regexec(re, key + from, MAX_GROUPS, g, from ? REG_NOTBOL : 0) != 0) return false;
        for (int i = 0; i < MAX_GROUPS; i++)
            if (g[i].rm_so >= 0) g[i].rm_so += (regoff_t)from, g[i].rm_eo += (regoff_t)from;
        if (!boundary || !word_char(key[g[0].rm_eo])) return true;
        if (!key[g[0].rm_so]) return false;
        from = (size_t)g[0].rm_so + 1;
    }
}

/* out = key with the match g[0] replaced by `target` (\1..\9: groups).
 * False when it would not fit. */
static bool replace(const char *key, const regmatch_t *g, const char *target, char *out, size_t cap)
{
    size_t at = 0;
#define PUT(p, n)                                   \
    do {                                            \
        if (at + (size_t)(n) + 1 > cap) return false; \
        memcpy(out + at, (p), (size_t)(n));         \
        at += (size_t)(n);                          \
    } while (0)
    PUT(key, g[0].rm_so);
    for (const char *t = target; *t; t++) {
        if (t[0] == '\\' && t[1] >= '1' && t[1] <= '9') {
            const regmatch_t *s = &g[t[1] - '0'];
            if (s->rm_so >= 0) PUT(key + s->rm_so, s->rm_eo - s->rm_so);
            t++;
        } else {
            PUT(t, 1);
        }
    }
    PUT(key + g[0].rm_eo, strlen(key + g[0].rm_eo));
#undef PUT
    out[at] = '\0';
    return true;
}

/* ------------------------------------------------------------ matching */

/* The model's tensor for `key`, the base model's prefix added or removed
 * as transformers does; *name_out gets the name it has in the model. */
static mtk_tensor *lookup(const matcher *m, const char *key, char *name_out, size_t cap)
{
    const char *p = m->base_prefix;
    size_t lp = p ? strlen(p) : 0;
    mtk_tensor *t;
    if (p && starts_with(key, p) && key[lp] == '.' && (t = mtk_state_dict_get(m->sd, key + lp + 1))) {
        snprintf(name_out, cap, "%s", key + lp + 1);
        return t;
    }
    if (p && strlen(key) + lp + 2 <= cap) {
        snprintf(name_out, cap, "%s.%s", p, key);
        if ((t = mtk_state_dict_get(m->sd, name_out))) return t;
    }
    snprintf(name_out, cap, "%s", key);
    return mtk_state_dict_get(m->sd, key);
}

/* Is `key` a non-persistent buffer of the model (under either prefix)? */
static bool is_buffer(const matcher *m, const char *key)
{
    const char *p = m->base_prefix;
    size_t lp = p ? strlen(p) : 0;
    if (mtk_state_dict_get(m->buffers, key)) return true;
    if (!p) return false;
    if (starts_with(key, p) && key[lp] == '.' && mtk_state_dict_get(m->buffers, key + lp + 1)) return true;
    char buf[KEY_MAX + 64];
    if (strlen(key) + lp + 2 > sizeof buf) return false;
    snprintf(buf, sizeof buf, "%s.%s", p, key);
    return mtk_state_dict_get(m->buffers, buf) != NULL;
}

static void push_read(matcher *m, load_read **list, int64_t *n, int64_t *cap, load_read r)
{
    if (*n == *cap) {
        int64_t grown_cap = *cap ? 2 * *cap : 64;
        load_read *grown = realloc(*list, sizeof *grown * (size_t)grown_cap);
        if (!grown) {
            m->oom = true;
            return;
        }
        *list = grown, *cap = grown_cap;
    }
    (*list)[(*n)++] = r;
}

static void add_read(matcher *m, load_read r) { push_read(m, &m->reads, &m->nreads, &m->reads_cap, r); }

static bool same_shape(const int64_t *a, int32_t na, const int64_t *b, int32_t nb)
{
    if (na != nb) return false;
    for (int32_t d = 0; d < na; d++)
        if (a[d] != b[d]) return false;
    return true;
}

/* Checks dtype convertibility: the file's dtype must be the model's, or
 * any mtk dtype when converting. */
static bool dtype_ok(const matcher *m, const mtk_st_info *info, mtk_dtype model)
{
    mtk_dtype from = mtk_st_dtype_to_mtk(info->dtype);
    return from == model || (m->spec->convert_dtype && from != MTK_DTYPE_UNDEFINED);
}

static void mismatch(matcher *m, const char *name, const char *source, const mtk_st_info *info, mtk_dtype dtype,
                     const int64_t *shape, int32_t ndim, bool shape_ok)
{
    mtk_load_key *k = push_key(m, &m->mismatched, name, source, shape_ok ? "dtype" : "shape");
    set_model_side(k, dtype, shape, ndim);
    set_file_side(k, info, false);
}

static merge_target *merge_target_of(matcher *m, mtk_tensor *t, const char *name, int32_t nparts)
{
    for (int32_t i = m->nmerges - 1; i >= 0; i--)
        if (m->merges[i].tensor == t) return &m->merges[i];
    merge_target *grown = realloc(m->merges, sizeof *grown * (size_t)(m->nmerges + 1));
    if (!grown) return m->oom = true, NULL;
    m->merges = grown;
    merge_target *g = &grown[m->nmerges];
    *g = (merge_target){ t, mtk_ctx_strdup(m->ctx, name), nparts, t->shape[0] * nparts, 0, NULL };
    g->done = calloc((size_t)g->slots, sizeof *g->done);
    if (!g->done || !g->name) return m->oom = true, NULL;
    m->nmerges++;
    m->converted++;
    add_ptr(m, &m->planned, &m->nplanned, t);
    add_ptr(m, &m->named, &m->nnamed, t);
    return g;
}

/* A part of expert `expert` for the fused tensor t (E, ...), split along
 * `dim` into `nparts` chunks. */
static void match_part(matcher *m, mtk_tensor *t, const char *name, const char *source, const mtk_st_info *info,
                       mtk_st_file *file, int64_t expert, int32_t part, int32_t nparts, int32_t dim)
{
    if (t->ndim < 2 || dim < 1 || dim >= t->ndim || t->shape[dim] % nparts != 0) {
        mismatch(m, name, source, info, t->dtype, t->shape, t->ndim, false);
        add_ptr(m, &m->named, &m->nnamed, t);
        return;
    }
    if (expert >= t->shape[0]) { /* no such expert */
        set_file_side(push_key(m, &m->unexpected, name, source, NULL), info, true);
        return;
    }
    int64_t shape[MTK_MAX_DIMS]; /* t[expert] narrowed to the part: (..., shape[dim] / nparts, ...) */
    for (int32_t d = 1; d < t->ndim; d++) shape[d - 1] = t->shape[d];
    shape[dim - 1] /= nparts;
    bool shape_ok = same_shape(shape, t->ndim - 1, info->shape, info->ndim);
    if (!shape_ok || !dtype_ok(m, info, t->dtype)) {
        mismatch(m, name, source, info, t->dtype, shape, t->ndim - 1, shape_ok);
        add_ptr(m, &m->named, &m->nnamed, t);
        return;
    }
    merge_target *g = merge_target_of(m, t, name, nparts);
    if (!g || g->nparts != nparts) return;
    int64_t slot = expert * nparts + part;
    if (g->done[slot]) return; /* the same part twice: the first is read */
    g->done[slot] = true;
    g->filled++;
    add_read(m, (load_read){ t, expert, part, nparts, dim, file, info, NULL });
}

/* Skipped or unexpected: an unmatched key after renaming. */
static void unmatched(matcher *m, const char *key, const char *source, const mtk_st_info *info)
{
    const char *why = NULL;
    char buf[KEY_MAX + 32];
    if (is_buffer(m, key)) {
        why = "non-persistent buffer";
    } else {
        for (int32_t i = 0; !why && i < m->nrules; i++) {
            regmatch_t g[MAX_GROUPS];
            if (m->rules[i].rule->kind != MTK_KEY_IGNORE || !search(&m->rules[i].re[0], false, key, g)) continue;
            snprintf(buf, sizeof buf, "ignorable (%s)", m->rules[i].rule->pattern);
            why = buf;
        }
    }
    set_file_side(push_key(m, why ? &m->skipped : &m->unexpected, key, source, why), info, true);
}

static void match_key(matcher *m, const mtk_st_info *info, mtk_st_file *file)
{
    const char *source = info->name;
    const char *key = source + m->strip_len;
    if (m->strip && starts_with(key, m->strip)) key += strlen(m->strip);
    char a[KEY_MAX], b[KEY_MAX], name[KEY_MAX + 64];
    bool fits = strlen(key) < KEY_MAX;
    snprintf(a, sizeof a, "%s", fits ? key : "");
    /* renames, every one in turn */
    for (int32_t i = 0; fits && i < m->nrules; i++) {
        regmatch_t g[MAX_GROUPS];
        const compiled_rule *c = &m->rules[i];
        if (c->rule->kind != MTK_KEY_RENAME || !search(&c->re[0], c->boundary[0], a, g)) continue;
        if (replace(a, g, c->rule->target, b, sizeof b)) memcpy(a, b, sizeof a);
    }
    /* at most one merge */
    const compiled_rule *merge = NULL;
    int64_t expert = -1;
    int32_t part = 0, nparts = 0;
    for (int32_t i = 0; fits && !merge && i < m->nrules; i++) {
        const compiled_rule *c = &m->rules[i];
        if (c->rule->kind != MTK_KEY_MERGE) continue;
        for (int32_t j = 0; j < c->nre; j++) {
            regmatch_t g[MAX_GROUPS];
            if (!search(&c->re[j], c->boundary[j], a, g) || !replace(a, g, c->rule->target, b, sizeof b)) continue;
            expert = strtoll(a + g[1].rm_so, NULL, 10);
            memcpy(a, b, sizeof a);
            merge = c, part = j, nparts = c->nre;
            break;
        }
    }
    mtk_tensor *t = fits ? lookup(m, a, name, sizeof name) : NULL;
    if (!t && (t = mtk_state_dict_get(m->sd, key))) { /* a key the rules should have left alone */
        merge = NULL;
        snprintf(name, sizeof name, "%s", key);
    }
    if (!t) {
        unmatched(m, fits ? a : key, source, info);
        return;
    }
    if (merge) {
        match_part(m, t, name, source, info, file, expert, part, nparts, merge->rule->dim);
        return;
    }
    add_ptr(m, &m->named, &m->nnamed, t);
    bool shape_ok = same_shape(t->shape, t->ndim, info->shape, info->ndim);
    if (!shape_ok || !dtype_ok(m, info, t->dtype)) {
        mismatch(m, name, source, info, t->dtype, t->shape, t->ndim, shape_ok);
        return;
    }
    const char *model_name = mtk_ctx_strdup(m->ctx, name);
    if (!model_name) m->oom = true;
    if (has_ptr(m->planned, m->nplanned, t)) { /* a tied name: read once, unless its values differ */
        push_read(m, &m->dups, &m->ndups, &m->dups_cap, (load_read){ t, -1, 0, 1, 0, file, info, model_name });
        return;
    }
    add_ptr(m, &m->planned, &m->nplanned, t);
    if (strcmp(name, key) != 0) m->converted++;
    add_read(m, (load_read){ t, -1, 0, 1, 0, file, info, model_name });
}

/* The whole read planned for t, NULL when none. */
static load_read *whole_read_of(matcher *m, const mtk_tensor *t)
{
    for (int64_t i = 0; i < m->nreads; i++)
        if (m->reads[i].target == t && m->reads[i].expert < 0) return &m->reads[i];
    return NULL;
}

/* The state dict's first name of t: the tie's source (shared.weight, registered before lm_head.weight). */
static const char *first_name(const matcher *m, const mtk_tensor *t)
{
    for (int32_t i = 0; i < mtk_state_dict_count(m->sd); i++) {
        const char *name;
        if (mtk_state_dict_at(m->sd, i, &name) == t) return name;
    }
    return NULL;
}

static bool same_values(const load_read *a, const load_read *b)
{
    uint64_t n = a->info->end - a->info->begin;
    if (a->info->dtype != b->info->dtype || n != b->info->end - b->info->begin) return false;
    const void *x = mtk_st_tensor_bytes(a->file, a->info), *y = mtk_st_tensor_bytes(b->file, b->info);
    return x && y && memcmp(x, y, (size_t)n) == 0;
}

/* transformers 5 unties a tie whose names the checkpoint holds with
 * different values (flan-t5's lm_head.weight beside shared.weight): such
 * a name gets a tensor of its own (mtk_module_untie), read from its key;
 * the tie's source keeps the source's key.  False on an error. */
static bool untie_differing(matcher *m)
{
    /* the source's own key fills the shared tensor */
    for (int64_t i = 0; i < m->ndups; i++) {
        load_read *d = &m->dups[i], *r = whole_read_of(m, d->target);
        const char *source = first_name(m, d->target);
        if (!r || !source || !d->name || strcmp(d->name, source) != 0) continue;
        load_read was = *r;
        *r = *d;
        *d = was;
    }
    for (int64_t i = 0; i < m->ndups; i++) {
        load_read d = m->dups[i], *r = whole_read_of(m, d.target);
        if (!r || !d.name || same_values(r, &d)) continue;
        d.target = mtk_module_untie(m->model, d.name);
        if (!d.target) return false;
        add_ptr(m, &m->planned, &m->nplanned, d.target);
        add_ptr(m, &m->named, &m->nnamed, d.target);
        add_read(m, d);
    }
    return true;
}

/* The wrapper prefixes every key carries ("module._orig_mod."): their
 * total length, written into `out`. */
static size_t common_wrapper(const mtk_checkpoint *ckpt, char *out, size_t cap)
{
    size_t at = 0;
    int64_t n = mtk_checkpoint_tensor_count(ckpt);
    out[0] = '\0';
    for (bool more = n > 0; more;) {
        more = false;
        for (int w = 0; w < WRAPPERS; w++) {
            const char *p = wrapper_prefixes[w];
            bool all = true;
            for (int64_t i = 0; all && i < n; i++) {
                const char *name = mtk_checkpoint_tensor_at(ckpt, i, NULL)->name;
                all = strlen(name) > at && starts_with(name + at, p) && name[at + strlen(p)] != '\0';
            }
            if (all && at + strlen(p) < cap) {
                strcat(out, p);
                at += strlen(p);
                more = true;
            }
        }
    }
    return at;
}

static mtk_load_key *to_arena(matcher *m, key_list *list, int32_t *n)
{
    *n = list->n;
    mtk_load_key *out = list->n ? mtk_ctx_alloc(m->ctx, sizeof *out * (size_t)list->n) : NULL;
    if (list->n && !out) m->oom = true;
    else if (out) memcpy(out, list->items, sizeof *out * (size_t)list->n);
    free(list->items);
    return out;
}

/* Tensors of the state dict no key filled; fused tensors with parts left. */
static void find_missing(matcher *m)
{
    for (int32_t i = 0; i < mtk_state_dict_count(m->sd); i++) {
        const char *name;
        mtk_tensor *t = mtk_state_dict_at(m->sd, i, &name);
        if (has_ptr(m->named, m->nnamed, t)) continue;
        set_model_side(push_key(m, &m->missing, name, NULL, NULL), t->dtype, t->shape, t->ndim);
        add_ptr(m, &m->named, &m->nnamed, t); /* a tied name: reported once */
    }
    for (int32_t i = 0; i < m->nmerges; i++) {
        const merge_target *g = &m->merges[i];
        if (g->filled == g->slots) continue;
        char why[96];
        snprintf(why, sizeof why, "%lld of %lld parts missing", (long long)(g->slots - g->filled), (long long)g->slots);
        set_model_side(push_key(m, &m->missing, g->name, NULL, why), g->tensor->dtype, g->tensor->shape,
                       g->tensor->ndim);
    }
}

/* A wrapper prefix the unexpected keys carry, when none was stripped. */
static const char *prefix_hint(const matcher *m)
{
    for (int32_t i = 0; i < m->unexpected.n; i++)
        for (int w = 0; w < WRAPPERS; w++) {
            const char *src = m->unexpected.items[i].source;
            if (src && starts_with(src + m->strip_len, wrapper_prefixes[w])) return wrapper_prefixes[w];
        }
    return NULL;
}

static void fill_stats(matcher *m, mtk_load_result *r)
{
    for (int64_t i = 0; i < m->nreads; i++) r->bytes += m->reads[i].info->end - m->reads[i].info->begin;
    for (int32_t i = 0; i < m->nplanned; i++)
        if (m->planned[i]->flags & MTK_TENSOR_PARAMETER) r->parameters += (uint64_t)mtk_tensor_numel(m->planned[i]);
    r->reads = m->nreads;
    r->tensors = m->nplanned;
    r->tied = mtk_state_dict_count(m->sd) - m->nplanned;
    if (r->tied < 0) r->tied = 0;
}

bool load_match(mtk_ctx *ctx, mtk_module *model, const mtk_checkpoint *ckpt, const mtk_load_spec *spec,
                load_plan *plan, mtk_load_result *r)
{
    matcher m = { .ctx = ctx, .spec = spec, .architecture = mtk_module_type_name(model), .strip = spec->strip_prefix,
                  .model = model };
    m.base_prefix = spec->rules ? spec->rules->base_model_prefix : NULL;
    m.sd = mtk_module_state_dict(model);
    m.buffers = mtk_state_dict_new(ctx);
    mtk_named_tensor *buffers;
    int32_t nbuffers = m.sd && m.buffers ? mtk_module_named_buffers(model, &buffers) : -1;
    if (nbuffers < 0) return false;
    for (int32_t i = 0; i < nbuffers; i++)
        if (!buffers[i].persistent && !mtk_state_dict_set(m.buffers, buffers[i].name, buffers[i].tensor)) return false;
    bool ok = compile_rules(&m, buffers, nbuffers);
    char wrapper[64];
    if (ok && !m.strip) {
        m.strip_len = common_wrapper(ckpt, wrapper, sizeof wrapper);
        if (m.strip_len) r->stripped_prefix = mtk_ctx_strdup(ctx, wrapper);
    } else if (ok && *m.strip) {
        r->stripped_prefix = mtk_ctx_strdup(ctx, m.strip);
    }
    for (int64_t i = 0; ok && !m.oom && i < mtk_checkpoint_tensor_count(ckpt); i++) {
        mtk_st_file *file;
        const mtk_st_info *info = mtk_checkpoint_tensor_at(ckpt, i, &file);
        match_key(&m, info, file);
    }
    ok = ok && untie_differing(&m);
    if (ok) {
        find_missing(&m);
        const char *hint = prefix_hint(&m);
        r->prefix_hint = hint ? mtk_ctx_strdup(ctx, hint) : NULL;
        fill_stats(&m, r);
        r->converted = m.converted;
    }
    r->missing = to_arena(&m, &m.missing, &r->nmissing);
    r->unexpected = to_arena(&m, &m.unexpected, &r->nunexpected);
    r->mismatched = to_arena(&m, &m.mismatched, &r->nmismatched);
    r->skipped = to_arena(&m, &m.skipped, &r->nskipped);
    plan->nreads = m.nreads;
    plan->reads = m.nreads ? mtk_ctx_alloc(ctx, sizeof *plan->reads * (size_t)m.nreads) : NULL;
    if (m.nreads && !plan->reads) m.oom = true;
    else if (plan->reads) memcpy(plan->reads, m.reads, sizeof *plan->reads * (size_t)m.nreads);
    free(m.reads);
    free(m.dups);
    free(m.planned);
    free(m.named);
    for (int32_t i = 0; i < m.nmerges; i++) free(m.merges[i].done);
    free(m.merges);
    free_rules(&m);
    if (ok && m.oom) ok = mtk_error(ctx, MTK_ERR_OUT_OF_MEMORY, "load: out of memory");
    return ok;
}
