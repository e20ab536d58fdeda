/* mtk convert: rewrites a safetensors checkpoint, optionally converting
 * its floating-point tensors to another dtype and splitting it into
 * shards with an index.  Every file is written atomically. */
#include "cli/cli.h"
#include "mtk/mtk.h"
#include "core/text.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

static const char usage[] =
    "usage: mtk convert [--dtype D] [--max-shard-size SIZE] IN OUT\n"
    "\n"
    "Rewrites the safetensors checkpoint IN (a .safetensors file, a\n"
    "*.safetensors.index.json, or a directory) as OUT, validating IN first.\n"
    "Tensors are laid out as Python's safetensors lays them out (by dtype,\n"
    "then name); the first input file's __metadata__ is kept.\n"
    "\n"
    "OUT is one of:\n"
    "  NAME.safetensors             one file (with --max-shard-size and more\n"
    "                               than one shard: NAME-00001-of-0000N.safetensors\n"
    "                               and NAME.safetensors.index.json beside it)\n"
    "  NAME.safetensors.index.json  always shards and this index\n"
    "  DIR (anything else)          DIR/model.safetensors, or shards and\n"
    "                               DIR/model.safetensors.index.json; DIR is\n"
    "                               created if missing\n"
    "\n"
    "options:\n"
    "  -d, --dtype D             convert the floating-point tensors to D:\n"
    "                            float32, float16, bfloat16, float64,\n"
    "                            float8_e4m3fn, float8_e5m2 (or F32, BF16, ...);\n"
    "                            integer and bool tensors are copied as they are\n"
    "  -s, --max-shard-size SIZE split into shards of at most SIZE bytes of\n"
    "                            tensor data, as Hugging Face does (a bigger\n"
    "                            tensor gets a shard of its own): 5GB, 500MB,\n"
    "                            2GiB, or a number of bytes\n"
    "  -h, --help                show this help and exit\n"
    "\n"
    "Nothing is left behind on an error or an interrupt (SIGINT, SIGTERM,\n"
    "SIGHUP): files are written to temporaries and renamed into place only\n"
    "when all are complete; a file replaced keeps its permissions.  U16, U32\n"
    "and U64 tensors (no mtk dtype) are copied as they are.\n"
    "\n"
    "Exit status: 0 on success, 1 on an error, 2 on a usage error.\n";

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* Where OUT goes: a directory, the weights file name, and whether an
 * index is always written. */
typedef struct destination {
    char dir[4096];
    char weights[1024];
    bool force_index;
    bool file_target; /* OUT names the file itself */
} destination;

static bool split_out(const char *out, destination *d)
{
    struct stat st;
    bool is_dir = stat(out, &st) == 0 && S_ISDIR(st.st_mode);
    const char *slash = strrchr(out, '/');
    const char *base = slash ? slash + 1 : out;
    d->force_index = d->file_target = false;
    if (!is_dir && ends_with(out, ".safetensors.index.json")) {
        d->force_index = true;
        snprintf(d->weights, sizeof d->weights, "%.*s", (int)(strlen(base) - strlen(".index.json")), base);
    } else if (!is_dir && ends_with(out, ".safetensors")) {
        snprintf(d->weights, sizeof d->weights, "%s", base);
        d->file_target = true;
    } else {
        snprintf(d->dir, sizeof d->dir, "%s", out);
        snprintf(d->weights, sizeof d->weights, "model.safetensors");
        return true;
    }
    if (strcmp(d->weights, ".safetensors") == 0 || d->weights[0] == '\0') return false;
    if (!slash) snprintf(d->dir, sizeof d->dir, ".");
    else if (slash == out) snprintf(d->dir, sizeof d->dir, "/");
    else snprintf(d->dir, sizeof d->dir, "%.*s", (int)(slash - out), out);
    return true;
}

static int convert(mtk_ctx *ctx, const char *in, const char *out, mtk_dtype dtype, uint64_t max_shard)
{
    destination dest;
    if (!split_out(out, &dest)) return cli_usage_error("convert", "OUT '%s' has no file name before .safetensors", out);
    mtk_checkpoint *ckpt = mtk_checkpoint_open(ctx, in);
    mtk_st_writer *writer = ckpt ? mtk_st_writer_new(ctx) : NULL;
    bool ok = writer != NULL;
    uint64_t bytes = 0;
    int64_t count = ok ? mtk_checkpoint_tensor_count(ckpt) : 0, shards = 0;
    for (int64_t i = 0; ok && i < count; i++) {
        mtk_st_file *file;
        const mtk_st_info *info = mtk_checkpoint_tensor_at(ckpt, i, &file);
        bool floating = mtk_dtype_is_floating(mtk_st_dtype_to_mtk(info->dtype));
        mtk_dtype to = floating ? dtype : MTK_DTYPE_UNDEFINED;
        ok = mtk_st_writer_add_from(writer, info->name, file, info, to);
        bytes += (uint64_t)info->numel * mtk_st_dtype_size(to == MTK_DTYPE_UNDEFINED ? info->dtype
                                                                                     : mtk_st_dtype_from_mtk(to));
    }
    if (ok) {
        const mtk_st_file *first = mtk_checkpoint_file_at(ckpt, 0);
        for (int64_t i = 0; ok && i < mtk_st_metadata_count(first); i++) {
            const char *key, *value;
            mtk_st_metadata_at(first, i, &key, &value);
            ok = mtk_st_writer_set_metadata(writer, key, value);
        }
    }
    ok = ok && mtk_st_writer_write_sharded(writer, dest.dir, dest.weights, max_shard, dest.force_index, &shards);
    mtk_st_writer_free(writer);
    mtk_checkpoint_close(ckpt);
    if (!ok) return cli_fail_ctx(false, ctx);
    const char *sep = ends_with(dest.dir, "/") ? "" : "/";
    char n[TEXT_NUMBER_CAP], size[TEXT_NUMBER_CAP];
    printf("wrote %s tensor%s (%s of data) to ", text_grouped(count, n, sizeof n), count == 1 ? "" : "s",
           text_bytes(bytes, size, sizeof size));
    if (shards > 1 || dest.force_index)
        printf("%" PRId64 " shard%s and %s%s%s.index.json\n", shards, shards == 1 ? "" : "s", dest.dir, sep,
               dest.weights);
    else if (dest.file_target)
        printf("%s\n", out);
    else
        printf("%s%s%s\n", dest.dir, sep, dest.weights);
    return CLI_EXIT_OK;
}

int cli_convert(int argc, char **argv)
{
    static const struct option longopts[] = {
        { "dtype", required_argument, NULL, 'd' },
        { "max-shard-size", required_argument, NULL, 's' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    mtk_dtype dtype = MTK_DTYPE_UNDEFINED;
    uint64_t max_shard = UINT64_MAX;
    int opt;
    cli_options_reset();
    while ((opt = cli_getopt("convert", argc, argv, "d:s:h", longopts)) != -1) {
        switch (opt) {
        case 'd':
            dtype = cli_parse_floating_dtype("convert", "--dtype", optarg);
            if (dtype == MTK_DTYPE_UNDEFINED) return CLI_EXIT_USAGE;
            break;
        case 's':
            if (!mtk_parse_size(optarg, &max_shard))
                return cli_usage_error("convert",
                                       "--max-shard-size '%s' is not a size (5GB, 500MB, 2GiB, or bytes)", optarg);
            break;
        case 'h': fputs(usage, stdout); return CLI_EXIT_OK;
        default: return CLI_EXIT_USAGE;
        }
    }
    if (argc - optind != 2)
        return cli_usage_error("convert", "expected IN and OUT, got %d argument%s", argc - optind,
                               argc - optind == 1 ? "" : "s");
    cli_remove_temporaries_on_interrupt(); /* best effort: without it, an interrupt leaves temporaries */
    mtk_ctx *ctx = mtk_ctx_new();
    if (!ctx) {
        cli_error("out of memory");
        return CLI_EXIT_ERROR;
    }
    int status = convert(ctx, argv[optind], argv[optind + 1], dtype, max_shard);
    mtk_ctx_free(ctx);
    return status;
}
