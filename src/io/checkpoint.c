/* Checkpoints of one or several files: a single .safetensors file, an
 * index (model.safetensors.index.json) whose shard paths are confined to
 * its directory, or a directory.  One name space over all the files. */
#include "io_internal.h"
#include "core/fs_confine.h"
#include "core/json_keys.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* An index is JSON like a header: the same size limit. */
#define MAX_INDEX_BYTES MTK_ST_MAX_HEADER_BYTES

typedef struct ck_tensor {
    const mtk_st_info *info;
    int64_t file;
} ck_tensor;

struct mtk_checkpoint {
    mtk_ctx *ctx;
    char *index_path;
    mtk_st_file **files;
    int64_t file_count;
    ck_tensor *tensors; /* files in order, each by offset */
    int64_t tensor_count;
    ck_tensor **by_name;
    char **meta_keys, **meta_values;
    bool *meta_is_string;
    int64_t meta_count;
    bool confined; /* the files come from a directory: only from inside root */
    fs_root root;
};

static char *copy_string(mtk_ctx *ctx, const char *s)
{
    size_t len = strlen(s) + 1;
    char *copy = mtk_ctx_malloc(ctx, len);
    if (copy) memcpy(copy, s, len);
    return copy;
}

static char *join(mtk_ctx *ctx, const char *dir, const char *name)
{
    size_t dlen = strlen(dir), cap = dlen + strlen(name) + 2;
    char *path = mtk_ctx_malloc(ctx, cap);
    if (path) snprintf(path, cap, "%s%s%s", dir, dlen && dir[dlen - 1] != '/' ? "/" : "", name);
    return path;
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

void mtk_checkpoint_close(mtk_checkpoint *c)
{
    if (!c) return;
    for (int64_t i = 0; i < c->file_count; i++) mtk_st_close(c->files[i]);
    for (int64_t i = 0; i < c->meta_count; i++) {
        mtk_ctx_mfree(c->ctx, c->meta_keys[i]);
        mtk_ctx_mfree(c->ctx, c->meta_values[i]);
    }
    mtk_ctx_mfree(c->ctx, c->meta_keys);
    mtk_ctx_mfree(c->ctx, c->meta_values);
    mtk_ctx_mfree(c->ctx, c->meta_is_string);
    mtk_ctx_mfree(c->ctx, c->files);
    mtk_ctx_mfree(c->ctx, c->tensors);
    mtk_ctx_mfree(c->ctx, c->by_name);
    mtk_ctx_mfree(c->ctx, c->index_path);
    mtk_ctx_mfree(c->ctx, c);
}

/* Opens `path` as the next file (room for it was made by the caller);
 * a file named by a directory or an index must resolve inside it. */
static bool add_file(mtk_checkpoint *c, const char *path)
{
    char resolved[PATH_MAX];
    if (c->confined && !fs_confined(c->ctx, &c->root, path, resolved)) return false;
    mtk_st_file *f = st_open_path(c->ctx, c->confined ? resolved : path, path, c->confined);
    if (!f) return false;
    c->files[c->file_count++] = f;
    return true;
}

static bool alloc_metadata(mtk_checkpoint *c, int64_t count)
{
    size_t n = (size_t)(count ? count : 1);
    c->meta_keys = mtk_ctx_malloc(c->ctx, n * sizeof *c->meta_keys);
    c->meta_values = mtk_ctx_malloc(c->ctx, n * sizeof *c->meta_values);
    c->meta_is_string = mtk_ctx_malloc(c->ctx, n * sizeof *c->meta_is_string);
    return c->meta_keys && c->meta_values && c->meta_is_string;
}

static bool add_metadata(mtk_checkpoint *c, const char *key, const char *value, bool is_string)
{
    char *k = copy_string(c->ctx, key), *v = k ? copy_string(c->ctx, value) : NULL;
    if (!v) {
        mtk_ctx_mfree(c->ctx, k);
        return false;
    }
    c->meta_keys[c->meta_count] = k;
    c->meta_values[c->meta_count] = v;
    c->meta_is_string[c->meta_count++] = is_string;
    return true;
}

/* The first file's __metadata__ stands for a checkpoint without an index. */
static bool metadata_of_first_file(mtk_checkpoint *c)
{
    const mtk_st_file *f = c->files[0];
    if (!alloc_metadata(c, mtk_st_metadata_count(f))) return false;
    for (int64_t i = 0; i < mtk_st_metadata_count(f); i++) {
        const char *key, *value;
        mtk_st_metadata_at(f, i, &key, &value);
        if (!add_metadata(c, key, value, true)) return false;
    }
    return true;
}

/* ------------------------------------------------------------ names */

static int ck_by_name(const void *a, const void *b)
{
    return strcmp((*(const ck_tensor *const *)a)->info->name, (*(const ck_tensor *const *)b)->info->name);
}

/* Sorted names for lookup; a name in two files is an error. */
static bool index_names(mtk_checkpoint *c)
{
    c->by_name = mtk_ctx_malloc(c->ctx, (size_t)(c->tensor_count ? c->tensor_count : 1) * sizeof *c->by_name);
    if (!c->by_name) return false;
    for (int64_t i = 0; i < c->tensor_count; i++) c->by_name[i] = &c->tensors[i];
    qsort(c->by_name, (size_t)c->tensor_count, sizeof *c->by_name, ck_by_name);
    for (int64_t i = 1; i < c->tensor_count; i++) {
        const ck_tensor *a = c->by_name[i - 1], *b = c->by_name[i];
        if (strcmp(a->info->name, b->info->name) == 0)
            return mtk_error(c->ctx, MTK_ERR_SYNTAX, "tensor '%s' is in both %s and %s", a->info->name,
                             mtk_st_path(c->files[a->file]), mtk_st_path(c->files[b->file]));
    }
    return true;
}

/* Every tensor of every file, in order. */
static bool collect_all(mtk_checkpoint *c)
{
    int64_t total = 0;
    for (int64_t i = 0; i < c->file_count; i++) total += mtk_st_tensor_count(c->files[i]);
    c->tensors = mtk_ctx_malloc(c->ctx, (size_t)(total ? total : 1) * sizeof *c->tensors);
    if (!c->tensors) return false;
    for (int64_t i = 0; i < c->file_count; i++)
        for (int64_t k = 0; k < mtk_st_tensor_count(c->files[i]); k++)
            c->tensors[c->tensor_count++] = (ck_tensor){ mtk_st_tensor_at(c->files[i], k), i };
    return index_names(c);
}

/* ------------------------------------------------------------ index */

/* A shard path must stay inside the index's directory. */
static bool confined(const char *path)
{
    if (path[0] == '\0' || path[0] == '/') return false;
    for (const char *p = path; *p;) {
        const char *end = strchr(p, '/');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len == 2 && p[0] == '.' && p[1] == '.') return false;
        p += len + (end ? 1 : 0);
    }
    return true;
}

/* The JSON of the file at `open_path` (named `path` in messages). */
static cJSON *read_json(mtk_ctx *ctx, const char *open_path, const char *path)
{
    int fd = open(open_path, O_RDONLY | O_CLOEXEC | O_NONBLOCK); /* NONBLOCK: a FIFO fails below, not hangs */
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        mtk_error(ctx, MTK_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
        if (fd >= 0) close(fd);
        return NULL;
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        mtk_error(ctx, MTK_ERR_IO, "%s: not a regular file", path);
        return NULL;
    }
    if (st.st_size > (off_t)MAX_INDEX_BYTES) {
        close(fd);
        mtk_error(ctx, MTK_ERR_SYNTAX, "%s: invalid index: %lld bytes is larger than the limit of %llu", path,
                  (long long)st.st_size, (unsigned long long)MAX_INDEX_BYTES);
        return NULL;
    }
    size_t size = (size_t)st.st_size, got = 0;
    char *text = mtk_ctx_malloc(ctx, size + 1);
    while (text && got < size) {
        ssize_t n = read(fd, text + got, size - got);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        got += (size_t)n;
    }
    close(fd);
    if (!text) return NULL;
    if (got < size) {
        mtk_ctx_mfree(ctx, text);
        mtk_error(ctx, MTK_ERR_IO, "%s: cannot read: %s", path, strerror(errno));
        return NULL;
    }
    cJSON *root = cJSON_ParseWithLength(text, size);
    mtk_ctx_mfree(ctx, text);
    char dup[256];
    if (!root) {
        mtk_error(ctx, MTK_ERR_SYNTAX, "%s: invalid index: not valid JSON", path);
    } else if (json_find_duplicate_key(root, dup, sizeof dup)) {
        /* cJSON answers the first of two equal keys, Python's json the last */
        mtk_error(ctx, MTK_ERR_SYNTAX, "%s: invalid index: the key '%s' appears twice", path, dup);
        cJSON_Delete(root);
        root = NULL;
    }
    return root;
}

typedef struct mapped_name {
    const char *name;
    int64_t file;
} mapped_name;

static int mapped_by_name(const void *a, const void *b)
{
    return strcmp(((const mapped_name *)a)->name, ((const mapped_name *)b)->name);
}

/* The weight_map's shard files, distinct, in order of first appearance
 * (shard_names[k]: file k's name in the index); names[i].file is each
 * listed tensor's file. */
static bool open_shards(mtk_checkpoint *c, const cJSON *weight_map, const char *dir, const char **shard_names,
                        mapped_name *names)
{
    int64_t i = 0;
    for (const cJSON *item = weight_map->child; item; item = item->next, i++) {
        if (!cJSON_IsString(item))
            return mtk_error(c->ctx, MTK_ERR_SYNTAX, "%s: invalid index: weight_map['%s'] is not a file name",
                             c->index_path, item->string);
        if (!confined(item->valuestring))
            return mtk_error(c->ctx, MTK_ERR_SYNTAX,
                             "%s: invalid index: weight_map['%s'] = '%s' leaves the index's directory "
                             "(absolute paths and '..' are refused)",
                             c->index_path, item->string, item->valuestring);
        int64_t file = 0;
        while (file < c->file_count && strcmp(shard_names[file], item->valuestring) != 0) file++;
        if (file == c->file_count) {
            char *path = join(c->ctx, dir, item->valuestring);
            bool ok = path && add_file(c, path);
            mtk_ctx_mfree(c->ctx, path);
            if (!ok) return false;
            shard_names[file] = item->valuestring;
        }
        names[i] = (mapped_name){ item->string, file };
    }
    return true;
}

static int file_by_path(const void *a, const void *b)
{
    return strcmp(mtk_st_path(*(mtk_st_file *const *)a), mtk_st_path(*(mtk_st_file *const *)b));
}

/* Sorts the files by path (model-00001-of-... first) and renumbers the
 * names' files to match. */
static bool sort_files(mtk_checkpoint *c, mapped_name *names, int64_t count)
{
    size_t n = (size_t)(c->file_count ? c->file_count : 1);
    mtk_st_file **sorted = mtk_ctx_malloc(c->ctx, n * sizeof *sorted);
    int64_t *renumber = mtk_ctx_malloc(c->ctx, n * sizeof *renumber);
    if (!sorted || !renumber) {
        mtk_ctx_mfree(c->ctx, sorted);
        mtk_ctx_mfree(c->ctx, renumber);
        return false;
    }
    memcpy(sorted, c->files, (size_t)c->file_count * sizeof *sorted);
    qsort(sorted, (size_t)c->file_count, sizeof *sorted, file_by_path);
    for (int64_t i = 0; i < c->file_count; i++)
        for (int64_t k = 0; k < c->file_count; k++)
            if (c->files[i] == sorted[k]) renumber[i] = k;
    for (int64_t i = 0; i < count; i++) names[i].file = renumber[names[i].file];
    memcpy(c->files, sorted, (size_t)c->file_count * sizeof *sorted);
    mtk_ctx_mfree(c->ctx, sorted);
    mtk_ctx_mfree(c->ctx, renumber);
    return true;
}

/* The index's listed tensors: files in order, each by offset; every
 * listed name must be in its file. */
static bool collect_listed(mtk_checkpoint *c, mapped_name *names, int64_t count)
{
    qsort(names, (size_t)count, sizeof *names, mapped_by_name); /* distinct: read_json refused duplicate keys */
    for (int64_t i = 0; i < count; i++)
        if (!mtk_st_find(c->files[names[i].file], names[i].name))
            return mtk_error(c->ctx, MTK_ERR_SYNTAX, "%s: the index maps '%s' to %s, which has no such tensor",
                             c->index_path, names[i].name, mtk_st_path(c->files[names[i].file]));
    c->tensors = mtk_ctx_malloc(c->ctx, (size_t)(count ? count : 1) * sizeof *c->tensors);
    if (!c->tensors) return false;
    for (int64_t f = 0; f < c->file_count; f++) {
        for (int64_t k = 0; k < mtk_st_tensor_count(c->files[f]); k++) {
            const mtk_st_info *info = mtk_st_tensor_at(c->files[f], k);
            mapped_name key = { info->name, 0 };
            const mapped_name *hit = bsearch(&key, names, (size_t)count, sizeof *names, mapped_by_name);
            if (hit && hit->file == f) c->tensors[c->tensor_count++] = (ck_tensor){ info, f };
        }
    }
    return index_names(c);
}

/* The index's "metadata": strings as they are, other values as JSON. */
static bool index_metadata(mtk_checkpoint *c, const cJSON *meta)
{
    if (meta && !cJSON_IsObject(meta) && !cJSON_IsNull(meta))
        return mtk_error(c->ctx, MTK_ERR_SYNTAX, "%s: invalid index: \"metadata\" is not an object", c->index_path);
    if (!alloc_metadata(c, cJSON_IsObject(meta) ? cJSON_GetArraySize(meta) : 0)) return false;
    for (const cJSON *item = cJSON_IsObject(meta) ? meta->child : NULL; item; item = item->next) {
        bool is_string = cJSON_IsString(item);
        char *json = is_string ? NULL : cJSON_PrintUnformatted(item);
        bool ok = (is_string || json) && add_metadata(c, item->string, is_string ? item->valuestring : json, is_string);
        cJSON_free(json);
        if (!ok) return false;
    }
    return true;
}

static bool open_index(mtk_checkpoint *c, const char *path)
{
    if (!(c->index_path = copy_string(c->ctx, path))) return false;
    char resolved[PATH_MAX];
    const char *open_path = path;
    if (c->confined) { /* an index found in a directory is one of its files */
        if (!fs_confined(c->ctx, &c->root, path, resolved)) return false;
        open_path = resolved;
    } else { /* an index given by the user: its shards stay in its directory */
        if (!fs_root_of_file(c->ctx, &c->root, path)) return false;
        c->confined = true;
    }
    cJSON *root = read_json(c->ctx, open_path, path);
    if (!root) return false;
    const cJSON *weight_map = cJSON_GetObjectItemCaseSensitive(root, "weight_map");
    bool ok = cJSON_IsObject(root) && cJSON_IsObject(weight_map);
    if (!ok) mtk_error(c->ctx, MTK_ERR_SYNTAX, "%s: invalid index: no \"weight_map\" object", path);
    int64_t count = ok ? cJSON_GetArraySize(weight_map) : 0;
    size_t n = (size_t)(count ? count : 1);
    c->files = ok ? mtk_ctx_malloc(c->ctx, n * sizeof *c->files) : NULL;
    const char **shard_names = c->files ? mtk_ctx_malloc(c->ctx, n * sizeof *shard_names) : NULL;
    mapped_name *names = shard_names ? mtk_ctx_malloc(c->ctx, n * sizeof *names) : NULL;
    char *dir = names ? copy_string(c->ctx, path) : NULL;
    if (dir) {
        char *slash = strrchr(dir, '/');
        if (slash) slash[1] = '\0';
        else dir[0] = '\0';
    }
    ok = dir && index_metadata(c, cJSON_GetObjectItemCaseSensitive(root, "metadata")) &&
         open_shards(c, weight_map, dir, shard_names, names) && sort_files(c, names, count) &&
         collect_listed(c, names, count);
    mtk_ctx_mfree(c->ctx, dir);
    mtk_ctx_mfree(c->ctx, names);
    mtk_ctx_mfree(c->ctx, (void *)shard_names);
    cJSON_Delete(root);
    return ok;
}

/* ------------------------------------------------------------ directory */

static int by_string(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* The directory's visible file names ending in `suffix`, sorted. */
static char **list_files(mtk_checkpoint *c, const char *dir, const char *suffix, int64_t *count)
{
    *count = 0;
    DIR *d = opendir(dir);
    if (!d) {
        mtk_error(c->ctx, MTK_ERR_IO, "%s: cannot read the directory: %s", dir, strerror(errno));
        return NULL;
    }
    int64_t cap = 16;
    char **names = mtk_ctx_malloc(c->ctx, (size_t)cap * sizeof *names);
    for (struct dirent *e; names && (e = readdir(d));) {
        if (e->d_name[0] == '.' || !ends_with(e->d_name, suffix)) continue;
        if (*count == cap) {
            char **grown = mtk_ctx_malloc(c->ctx, (size_t)cap * 2 * sizeof *grown);
            if (grown) memcpy(grown, names, (size_t)cap * sizeof *names);
            mtk_ctx_mfree(c->ctx, names);
            names = grown;
            cap *= 2;
            if (!names) break; /* the names copied so far leak only on out of memory */
        }
        if (!(names[*count] = copy_string(c->ctx, e->d_name))) break;
        (*count)++;
    }
    closedir(d);
    if (names) qsort(names, (size_t)*count, sizeof *names, by_string);
    return names;
}

static void free_list(mtk_checkpoint *c, char **names, int64_t count)
{
    for (int64_t i = 0; names && i < count; i++) mtk_ctx_mfree(c->ctx, names[i]);
    mtk_ctx_mfree(c->ctx, names);
}

static bool open_directory(mtk_checkpoint *c, const char *dir)
{
    if (!fs_root_init(c->ctx, &c->root, dir)) return false;
    c->confined = true;
    int64_t index_count, file_count = 0;
    char **indexes = list_files(c, dir, ".safetensors.index.json", &index_count);
    if (!indexes) return false;
    bool ok;
    if (index_count > 1) {
        ok = mtk_error(c->ctx, MTK_ERR_INVALID_ARGUMENT,
                       "%s: the directory holds %lld indexes (%s, %s, ...): give the one to use", dir,
                       (long long)index_count, indexes[0], indexes[1]);
    } else if (index_count == 1) {
        char *path = join(c->ctx, dir, indexes[0]);
        ok = path && open_index(c, path);
        mtk_ctx_mfree(c->ctx, path);
    } else {
        char **files = list_files(c, dir, ".safetensors", &file_count);
        ok = files != NULL;
        if (ok && file_count == 0)
            ok = mtk_error(c->ctx, MTK_ERR_IO, "%s: no .safetensors file and no index in the directory", dir);
        c->files = ok ? mtk_ctx_malloc(c->ctx, (size_t)file_count * sizeof *c->files) : NULL;
        ok = ok && c->files;
        for (int64_t i = 0; ok && i < file_count; i++) {
            char *path = join(c->ctx, dir, files[i]);
            ok = path && add_file(c, path);
            mtk_ctx_mfree(c->ctx, path);
        }
        ok = ok && collect_all(c) && metadata_of_first_file(c);
        free_list(c, files, file_count);
    }
    free_list(c, indexes, index_count);
    return ok;
}

/* ------------------------------------------------------------ the API */

mtk_checkpoint *mtk_checkpoint_open(mtk_ctx *ctx, const char *path)
{
    if (!path) {
        mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "checkpoint_open: no path given");
        return NULL;
    }
    struct stat st;
    if (stat(path, &st) != 0) {
        mtk_error(ctx, MTK_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    mtk_checkpoint *c = mtk_ctx_malloc(ctx, sizeof *c);
    if (!c) return NULL;
    memset(c, 0, sizeof *c);
    c->ctx = ctx;
    bool ok;
    if (S_ISDIR(st.st_mode)) {
        ok = open_directory(c, path);
    } else if (ends_with(path, ".json")) {
        ok = open_index(c, path);
    } else {
        c->files = mtk_ctx_malloc(ctx, sizeof *c->files);
        ok = c->files && add_file(c, path) && collect_all(c) && metadata_of_first_file(c);
    }
    if (ok) return c;
    mtk_checkpoint_close(c);
    return NULL;
}

const char *mtk_checkpoint_index_path(const mtk_checkpoint *c) { return c->index_path; }
int64_t mtk_checkpoint_file_count(const mtk_checkpoint *c) { return c->file_count; }
int64_t mtk_checkpoint_tensor_count(const mtk_checkpoint *c) { return c->tensor_count; }
int64_t mtk_checkpoint_metadata_count(const mtk_checkpoint *c) { return c->meta_count; }

mtk_st_file *mtk_checkpoint_file_at(const mtk_checkpoint *c, int64_t index)
{
    return index >= 0 && index < c->file_count ? c->files[index] : NULL;
}

const mtk_st_info *mtk_checkpoint_tensor_at(const mtk_checkpoint *c, int64_t index, mtk_st_file **file)
{
    bool ok = index >= 0 && index < c->tensor_count;
    if (file) *file = ok ? c->files[c->tensors[index].file] : NULL;
    return ok ? c->tensors[index].info : NULL;
}

static int name_vs_tensor(const void *key, const void *item)
{
    return strcmp(key, (*(const ck_tensor *const *)item)->info->name);
}

const mtk_st_info *mtk_checkpoint_find(const mtk_checkpoint *c, const char *name, mtk_st_file **file)
{
    const ck_tensor *const *hit =
        name && c->tensor_count ? bsearch(name, c->by_name, (size_t)c->tensor_count, sizeof *c->by_name, name_vs_tensor)
                                : NULL;
    if (file) *file = hit ? c->files[(*hit)->file] : NULL;
    return hit ? (*hit)->info : NULL;
}

void mtk_checkpoint_metadata_at(const mtk_checkpoint *c, int64_t index, const char **key, const char **value,
                                bool *is_string)
{
    bool ok = index >= 0 && index < c->meta_count;
    if (key) *key = ok ? c->meta_keys[index] : NULL;
    if (value) *value = ok ? c->meta_values[index] : NULL;
    if (is_string) *is_string = ok && c->meta_is_string[index];
}
