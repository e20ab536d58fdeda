/* Sharded writing: Hugging Face's split of a checkpoint into shards of a
 * maximum size, the shard names, and the index json; every file goes to
 * a temporary first and none is renamed into place before all are
 * written.  Also the size parser for "5GB"-style limits. */
#include "io_internal.h"
#include "core/text.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

/* ------------------------------------------------------------ text */

/* A JSON string literal, escaped by cJSON. */
static void append_quoted(mtk_text *t, const char *s)
{
    cJSON *item = cJSON_CreateString(s);
    char *quoted = item ? cJSON_PrintUnformatted(item) : NULL;
    if (quoted) mtk_text_puts(t, quoted);
    else t->failed = true;
    cJSON_free(quoted);
    cJSON_Delete(item);
}

/* ------------------------------------------------------------ the plan */

/* Hugging Face's split (split_state_dict_into_shards): tensors in order
 * fill the current shard until the next would pass the limit; a tensor
 * bigger than the limit gets a shard of its own at once.  shard_of[i] is
 * entry i's shard; returns the number of shards. */
static int64_t plan_shards(const mtk_st_writer *w, uint64_t max_bytes, int64_t *shard_of, int64_t *final_of)
{
    int64_t next = 0, placed = 0, current = -1;
    uint64_t current_size = 0;
    for (int64_t i = 0; i < w->count; i++) {
        uint64_t size = w->entries[i].nbytes;
        if (size > max_bytes) {
            shard_of[i] = next;
            final_of[next++] = placed++;
            continue;
        }
        if (current >= 0 && current_size + size > max_bytes) {
            final_of[current] = placed++;
            current = -1;
        }
        if (current < 0) {
            current = next++;
            current_size = 0;
        }
        shard_of[i] = current;
        current_size += size;
    }
    if (current >= 0) final_of[current] = placed++;
    for (int64_t i = 0; i < w->count; i++) shard_of[i] = final_of[shard_of[i]];
    return placed;
}

static int entry_name_order(const void *a, const void *b)
{
    return strcmp((*(const st_entry *const *)a)->name, (*(const st_entry *const *)b)->name);
}

/* The index, as transformers writes it (json.dumps(indent=2, sort_keys=True)). */
static char *index_json(mtk_st_writer *w, const int64_t *shard_of, char **shard_names)
{
    mtk_text t = { .ctx = w->ctx };
    uint64_t total_size = 0, total_params = 0;
    st_entry **sorted = mtk_ctx_malloc(w->ctx, (size_t)(w->count ? w->count : 1) * sizeof *sorted);
    if (!sorted) return NULL;
    for (int64_t i = 0; i < w->count; i++) {
        sorted[i] = &w->entries[i];
        total_size += w->entries[i].nbytes;
        total_params += (uint64_t)mtk_shape_numel(w->entries[i].shape, w->entries[i].ndim);
    }
    qsort(sorted, (size_t)w->count, sizeof *sorted, entry_name_order);
    char numbers[160];
    snprintf(numbers, sizeof numbers, "{\n  \"metadata\": {\n    \"total_parameters\": %" PRIu64 ",\n"
             "    \"total_size\": %" PRIu64 "\n  },\n  \"weight_map\": {", total_params, total_size);
    mtk_text_puts(&t, numbers);
    for (int64_t i = 0; i < w->count; i++) {
        mtk_text_puts(&t, i ? ",\n    " : "\n    ");
        append_quoted(&t, sorted[i]->name);
        mtk_text_puts(&t, ": ");
        append_quoted(&t, shard_names[shard_of[sorted[i] - w->entries]]);
    }
    mtk_text_puts(&t, w->count ? "\n  }\n}\n" : "}\n}\n");
    mtk_ctx_mfree(w->ctx, sorted);
    if (!t.failed) return t.data;
    mtk_ctx_mfree(w->ctx, t.data);
    mtk_error(w->ctx, MTK_ERR_OUT_OF_MEMORY, "st_writer: out of memory building the index");
    return NULL;
}

/* ------------------------------------------------------------ writing */

static char *join(mtk_ctx *ctx, const char *dir, const char *name)
{
    size_t dlen = strlen(dir), cap = dlen + strlen(name) + 2;
    char *path = mtk_ctx_malloc(ctx, cap);
    if (path) snprintf(path, cap, "%s%s%s", dir, dlen && dir[dlen - 1] != '/' ? "/" : "", name);
    return path;
}

/* Makes `dir` if it is missing (*created tells); false if it cannot be a
 * directory. */
static bool ensure_directory(mtk_ctx *ctx, const char *dir, bool *created)
{
    struct stat st;
    *created = false;
    if (stat(dir, &st) == 0) {
        if (S_ISDIR(st.st_mode)) return true;
        return mtk_error(ctx, MTK_ERR_IO, "%s: exists and is not a directory", dir);
    }
    if (mkdir(dir, 0777) != 0) return mtk_error(ctx, MTK_ERR_IO, "%s: cannot create the directory: %s", dir, strerror(errno));
    *created = true;
    return true;
}

static bool check_weights_name(mtk_ctx *ctx, const char *name)
{
    size_t len = name ? strlen(name) : 0, ext = strlen(".safetensors");
    if (len <= ext || strcmp(name + len - ext, ".safetensors") != 0 || strchr(name, '/'))
        return mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT,
                         "st_writer: the weights name '%s' must be a file name ending in .safetensors",
                         name ? name : "(null)");
    return true;
}

/* Everything one sharded write holds, released by `release`. */
typedef struct sharded {
    int64_t shards;
    atomic_file *files; /* shards, then the index                      */
    bool *committed;
    char **names;       /* shard file names                            */
    int64_t *shard_of, *final_of;
    st_entry **subset;
} sharded;

static void release(mtk_st_writer *w, sharded *s, bool failed)
{
    for (int64_t i = 0; s->files && i <= s->shards; i++) {
        if (failed && s->committed[i] && s->files[i].path) unlink(s->files[i].path);
        io_atomic_abandon(w->ctx, &s->files[i]);
    }
    for (int64_t i = 0; s->names && i < s->shards; i++) mtk_ctx_mfree(w->ctx, s->names[i]);
    mtk_ctx_mfree(w->ctx, s->files);
    mtk_ctx_mfree(w->ctx, s->committed);
    mtk_ctx_mfree(w->ctx, s->names);
    mtk_ctx_mfree(w->ctx, s->shard_of);
    mtk_ctx_mfree(w->ctx, s->final_of);
    mtk_ctx_mfree(w->ctx, s->subset);
}

/* Writes every shard and the index to temporaries, then renames them all. */
static bool write_shards(mtk_st_writer *w, sharded *s, const char *dir, const char *weights_name)
{
    mtk_ctx *ctx = w->ctx;
    size_t n = (size_t)s->shards + 1;
    s->files = mtk_ctx_malloc(ctx, n * sizeof *s->files);
    s->committed = mtk_ctx_malloc(ctx, n * sizeof *s->committed);
    s->names = mtk_ctx_malloc(ctx, (size_t)s->shards * sizeof *s->names);
    if (!s->files || !s->committed || !s->names) return false;
    for (size_t i = 0; i < n; i++) {
        s->files[i] = (atomic_file){ .fd = -1 };
        s->committed[i] = false;
    }
    memset(s->names, 0, (size_t)s->shards * sizeof *s->names);
    int stem = (int)(strlen(weights_name) - strlen(".safetensors"));
    for (int64_t k = 0; k < s->shards; k++) {
        char name[4096];
        snprintf(name, sizeof name, "%.*s-%05" PRId64 "-of-%05" PRId64 ".safetensors", stem, weights_name, k + 1,
                 s->shards);
        char *path = join(ctx, dir, name);
        if (!path || !(s->names[k] = join(ctx, "", name))) {
            mtk_ctx_mfree(ctx, path);
            return false;
        }
        int64_t count = 0;
        for (int64_t i = 0; i < w->count; i++)
            if (s->shard_of[i] == k) s->subset[count++] = &w->entries[i];
        bool ok = st_writer_write_temp(w, s->subset, count, path, &s->files[k]);
        mtk_ctx_mfree(ctx, path);
        if (!ok) return false;
    }
    char index_name[4096];
    snprintf(index_name, sizeof index_name, "%s.index.json", weights_name);
    char *index_path = join(ctx, dir, index_name);
    char *json = index_path ? index_json(w, s->shard_of, s->names) : NULL;
    atomic_file *index = &s->files[s->shards];
    bool ok = json && io_atomic_open(ctx, index, index_path);
    ok = ok && io_atomic_write(ctx, index, json, strlen(json)) && io_atomic_finish(ctx, index);
    mtk_ctx_mfree(ctx, json);
    mtk_ctx_mfree(ctx, index_path);
    for (size_t i = 0; ok && i < n; i++) ok = s->committed[i] = io_atomic_commit(ctx, &s->files[i]);
    return ok;
}

bool mtk_st_writer_write_sharded(mtk_st_writer *w, const char *dir, const char *weights_name,
                                 uint64_t max_shard_bytes, bool force_index, int64_t *shards_out)
{
    if (!w) return false;
    mtk_ctx *ctx = w->ctx;
    if (!dir) return mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "st_writer: no directory given");
    if (max_shard_bytes == 0) return mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "st_writer: the maximum shard size is 0");
    if (!check_weights_name(ctx, weights_name) || !st_writer_check_names(w)) return false;
    sharded s = { 0 };
    size_t count = (size_t)(w->count ? w->count : 1);
    s.shard_of = mtk_ctx_malloc(ctx, count * sizeof *s.shard_of);
    s.final_of = mtk_ctx_malloc(ctx, count * sizeof *s.final_of);
    s.subset = mtk_ctx_malloc(ctx, count * sizeof *s.subset);
    bool created = false;
    bool ok = s.shard_of && s.final_of && s.subset && ensure_directory(ctx, dir, &created);
    if (ok) {
        s.shards = plan_shards(w, max_shard_bytes, s.shard_of, s.final_of);
        if (s.shards <= 1 && !force_index) {
            char *path = join(ctx, dir, weights_name);
            ok = path && mtk_st_writer_write(w, path);
            mtk_ctx_mfree(ctx, path);
            if (shards_out && ok) *shards_out = 1;
            s.shards = 0; /* nothing for release to abandon */
        } else {
            if (s.shards == 0) s.shards = 1; /* an empty checkpoint: one empty shard */
            ok = write_shards(w, &s, dir, weights_name);
            if (shards_out && ok) *shards_out = s.shards;
        }
    }
    release(w, &s, !ok);
    if (!ok && created) rmdir(dir);
    return ok;
}

/* ------------------------------------------------------------ sizes */

bool mtk_parse_size(const char *s, uint64_t *bytes_out)
{
    static const struct { const char *unit; uint64_t scale; } units[] = {
        { "", 1 }, { "b", 1 },
        { "kb", 1000ull }, { "mb", 1000000ull }, { "gb", 1000000000ull }, { "tb", 1000000000000ull },
        { "kib", 1ull << 10 }, { "mib", 1ull << 20 }, { "gib", 1ull << 30 }, { "tib", 1ull << 40 },
    };
    if (!s) return false;
    while (isspace((unsigned char)*s)) s++;
    const char *p = s;
    uint64_t whole = 0;
    int digits = 0;
    for (; isdigit((unsigned char)*p); p++, digits++)
        if (__builtin_mul_overflow(whole, 10, &whole) || __builtin_add_overflow(whole, (uint64_t)(*p - '0'), &whole))
            return false;
    double fraction = 0, place = 0.1;
    if (*p == '.') {
        p++;
        if (!isdigit((unsigned char)*p)) return false;
        for (; isdigit((unsigned char)*p); p++, place /= 10) fraction += (*p - '0') * place;
    }
    if (digits == 0) return false;
    while (isspace((unsigned char)*p)) p++;
    size_t len = strlen(p);
    while (len > 0 && isspace((unsigned char)p[len - 1])) len--;
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        if (strlen(units[i].unit) != len || strncasecmp(p, units[i].unit, len) != 0) continue;
        uint64_t bytes;
        if (__builtin_mul_overflow(whole, units[i].scale, &bytes)) return false;
        bytes += (uint64_t)(fraction * (double)units[i].scale);
        if (bytes == 0) return false;
        *bytes_out = bytes;
        return true;
    }
    return false;
}
