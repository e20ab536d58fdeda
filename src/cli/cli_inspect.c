/* mtk inspect: validates a safetensors checkpoint (file, index or
 * directory) and lists its tensors, totals and metadata. */
#include "cli/cli.h"
#include "mtk/mtk.h"
#include "core/text.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static const char usage[] =
    "usage: mtk inspect [--json] PATH\n"
    "\n"
    "Validates a safetensors checkpoint against every rule of the format and\n"
    "lists its tensors (name, dtype, shape, bytes), the totals (tensors,\n"
    "parameters, bytes by dtype) and the metadata.  No tensor data is read.\n"
    "PATH is a .safetensors file, a *.safetensors.index.json (a sharded\n"
    "checkpoint), or a directory (its index, else all its .safetensors files).\n"
    "\n"
    "Dtypes are safetensors' names: BOOL U8 I8 I16 U16 F16 BF16 I32 U32 F32 F64\n"
    "I64 U64 F8_E4M3 F8_E5M2 (U16, U32 and U64 are listed, but have no mtk dtype).\n"
    "\n"
    "options:\n"
    "  -j, --json   print one JSON document: {\"path\", \"valid\": true, \"files\",\n"
    "               \"tensors\": [{\"name\", \"dtype\", \"shape\", \"data_offsets\",\n"
    "               \"file\"}], \"metadata\", \"total_tensors\", \"total_params\",\n"
    "               \"total_bytes\", \"bytes_by_dtype\"}; for an invalid checkpoint\n"
    "               {\"error\": {\"code\", \"message\"}} on one line\n"
    "  -h, --help   show this help and exit\n"
    "\n"
    "Errors go to stderr as 'mtk: error: ...' (with --json, as one line\n"
    "{\"error\": {\"code\", \"message\"}} on stdout).  Exit status: 0 for a valid\n"
    "checkpoint, 1 for an invalid or unreadable one, 2 on a usage error.\n";

/* Totals over every tensor. */
typedef struct totals {
    int64_t tensors;
    uint64_t params, bytes;
    uint64_t by_dtype[MTK_ST_DTYPE_COUNT];
    bool has_dtype[MTK_ST_DTYPE_COUNT];
} totals;

static totals count_totals(const mtk_checkpoint *ckpt)
{
    totals t = { 0 };
    for (int64_t i = 0; i < mtk_checkpoint_tensor_count(ckpt); i++) {
        const mtk_st_info *info = mtk_checkpoint_tensor_at(ckpt, i, NULL);
        t.tensors++;
        t.params += (uint64_t)info->numel;
        t.bytes += info->end - info->begin;
        t.by_dtype[info->dtype] += info->end - info->begin;
        t.has_dtype[info->dtype] = true;
    }
    return t;
}

/* The file's path as the index names it: relative to the first file's
 * directory when the checkpoint has several files. */
static const char *short_path(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

static void print_text(const char *path, const mtk_checkpoint *ckpt)
{
    totals t = count_totals(ckpt);
    int64_t files = mtk_checkpoint_file_count(ckpt);
    bool sharded = files > 1 || mtk_checkpoint_index_path(ckpt);
    char buf[64];
    printf("%s: valid safetensors checkpoint", path);
    if (sharded) printf(" (%" PRId64 " file%s%s)", files, files == 1 ? "" : "s",
                        mtk_checkpoint_index_path(ckpt) ? ", indexed" : "");
    putchar('\n');
    int name_width = 4, shape_width = 5;
    char shape[512];
    for (int64_t i = 0; i < t.tensors; i++) {
        const mtk_st_info *info = mtk_checkpoint_tensor_at(ckpt, i, NULL);
        int len = (int)strlen(info->name), slen = (int)strlen(mtk_shape_list_str(info->shape, info->ndim, shape, sizeof shape));
        if (len > name_width) name_width = len > 60 ? 60 : len;
        if (slen > shape_width) shape_width = slen;
    }
    if (t.tensors > 0) {
        printf("\n%-*s  %-7s  %-*s  %14s%s\n", name_width, "name", "dtype", shape_width, "shape", "bytes",
               sharded ? "  file" : "");
        for (int64_t i = 0; i < t.tensors; i++) {
            mtk_st_file *file;
            const mtk_st_info *info = mtk_checkpoint_tensor_at(ckpt, i, &file);
            printf("%-*s  %-7s  %-*s  %14s", name_width, info->name, mtk_st_dtype_name(info->dtype),
                   shape_width, mtk_shape_list_str(info->shape, info->ndim, shape, sizeof shape),
                   text_grouped((int64_t)(info->end - info->begin), buf, sizeof buf));
            if (sharded) printf("  %s", short_path(mtk_st_path(file)));
            putchar('\n');
        }
    }
    char count[TEXT_NUMBER_CAP], params[TEXT_NUMBER_CAP], size[TEXT_NUMBER_CAP];
    printf("\ntotal: %s tensor%s, %s parameter%s, %s", text_grouped(t.tensors, count, sizeof count),
           t.tensors == 1 ? "" : "s", text_grouped((int64_t)t.params, params, sizeof params), t.params == 1 ? "" : "s",
           text_bytes(t.bytes, size, sizeof size));
    if (t.bytes >= 1024) printf(" (%s bytes)", text_grouped((int64_t)t.bytes, buf, sizeof buf));
    putchar('\n');
    if (t.tensors > 0) {
        printf("bytes by dtype:");
        const char *sep = " ";
        for (int d = MTK_ST_DTYPE_COUNT - 1; d >= 0; d--) {
            if (!t.has_dtype[d]) continue;
            printf("%s%s %s", sep, mtk_st_dtype_name((mtk_st_dtype)d), text_bytes(t.by_dtype[d], buf, sizeof buf));
            sep = ", ";
        }
        putchar('\n');
    }
    int64_t meta = mtk_checkpoint_metadata_count(ckpt);
    if (meta > 0) {
        printf("metadata:\n");
        for (int64_t i = 0; i < meta; i++) {
            const char *key, *value;
            mtk_checkpoint_metadata_at(ckpt, i, &key, &value, NULL);
            printf("  %s: %s\n", key, value);
        }
    }
}

static cJSON *tensor_json(const mtk_st_info *info, const mtk_st_file *file, bool sharded)
{
    cJSON *obj = cJSON_CreateObject(), *shape = cJSON_CreateArray(), *offsets = cJSON_CreateArray();
    cJSON_AddItemToObject(obj, "name", cJSON_CreateString(info->name));
    cJSON_AddItemToObject(obj, "dtype", cJSON_CreateString(mtk_st_dtype_name(info->dtype)));
    for (int32_t i = 0; i < info->ndim; i++) cJSON_AddItemToArray(shape, text_json_int((int64_t)info->shape[i]));
    cJSON_AddItemToObject(obj, "shape", shape);
    cJSON_AddItemToArray(offsets, text_json_int((int64_t)info->begin));
    cJSON_AddItemToArray(offsets, text_json_int((int64_t)info->end));
    cJSON_AddItemToObject(obj, "data_offsets", offsets);
    if (sharded) cJSON_AddItemToObject(obj, "file", cJSON_CreateString(short_path(mtk_st_path(file))));
    return obj;
}

/* The JSON document; NULL on out of memory (cJSON ignores additions to a
 * NULL parent, so one check at the end is enough). */
static char *inspect_json(const char *path, const mtk_checkpoint *ckpt)
{
    totals t = count_totals(ckpt);
    bool sharded = mtk_checkpoint_file_count(ckpt) > 1 || mtk_checkpoint_index_path(ckpt);
    cJSON *root = cJSON_CreateObject();
    cJSON_AddItemToObject(root, "path", cJSON_CreateString(path));
    cJSON_AddItemToObject(root, "valid", cJSON_CreateTrue());
    cJSON *files = cJSON_AddArrayToObject(root, "files");
    for (int64_t i = 0; i < mtk_checkpoint_file_count(ckpt); i++)
        cJSON_AddItemToArray(files, cJSON_CreateString(mtk_st_path(mtk_checkpoint_file_at(ckpt, i))));
    cJSON *tensors = cJSON_AddArrayToObject(root, "tensors");
    for (int64_t i = 0; i < t.tensors; i++) {
        mtk_st_file *file;
        const mtk_st_info *info = mtk_checkpoint_tensor_at(ckpt, i, &file);
        cJSON_AddItemToArray(tensors, tensor_json(info, file, sharded));
    }
    cJSON *meta = cJSON_AddObjectToObject(root, "metadata");
    for (int64_t i = 0; i < mtk_checkpoint_metadata_count(ckpt); i++) {
        const char *key, *value;
        bool is_string;
        mtk_checkpoint_metadata_at(ckpt, i, &key, &value, &is_string);
        cJSON_AddItemToObject(meta, key, is_string ? cJSON_CreateString(value) : cJSON_CreateRaw(value));
    }
    cJSON_AddItemToObject(root, "total_tensors", text_json_int((int64_t)t.tensors));
    cJSON_AddItemToObject(root, "total_params", text_json_int((int64_t)t.params));
    cJSON_AddItemToObject(root, "total_bytes", text_json_int((int64_t)t.bytes));
    cJSON *by_dtype = cJSON_AddObjectToObject(root, "bytes_by_dtype");
    for (int d = MTK_ST_DTYPE_COUNT - 1; d >= 0; d--)
        if (t.has_dtype[d])
            cJSON_AddItemToObject(by_dtype, mtk_st_dtype_name((mtk_st_dtype)d), text_json_int((int64_t)t.by_dtype[d]));
    char *text = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    return text;
}

int cli_inspect(int argc, char **argv)
{
    bool json;
    int parsed = cli_json_help_options("inspect", argc, argv, usage, &json);
    if (parsed >= 0) return parsed;
    if (argc - optind == 0) return cli_usage_error("inspect", "no PATH given");
    if (argc - optind > 1) return cli_usage_error("inspect", "one PATH only, got %d", argc - optind);
    const char *path = argv[optind];
    mtk_ctx *ctx = mtk_ctx_new();
    if (!ctx) {
        cli_error("out of memory");
        return CLI_EXIT_ERROR;
    }
    mtk_checkpoint *ckpt = mtk_checkpoint_open(ctx, path);
    int status = CLI_EXIT_OK;
    if (!ckpt) {
        status = cli_fail_ctx(json, ctx);
    } else if (json) {
        char *text = inspect_json(path, ckpt);
        if (text) puts(text);
        else status = cli_fail(json, "out_of_memory", NULL, "out of memory");
        cJSON_free(text);
    } else {
        print_text(path, ckpt);
    }
    mtk_checkpoint_close(ckpt);
    mtk_ctx_free(ctx);
    return status;
}
