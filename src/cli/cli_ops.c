/* mtk ops: lists the op table (names, signatures, kernels). */
#include "cli/cli.h"
#include "mtk/mtk.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

static const char usage[] =
    "usage: mtk ops [--json] [PATTERN]\n"
    "\n"
    "Lists the ops that 'mtk eval' and the library can call, one signature per\n"
    "line, in PyTorch's argument names, order and defaults.  With PATTERN, only\n"
    "the ops whose name contains it.\n"
    "\n"
    "options:\n"
    "  -j, --json   print a JSON array of {\"name\", \"signature\", \"cpu\",\n"
    "               \"flags\"} (cpu: whether a cpu kernel exists)\n"
    "  -h, --help   show this help and exit\n"
    "\n"
    "Errors go to stderr as 'mtk: error: ...' (with --json, as one line\n"
    "{\"error\": {\"code\", \"message\"}} on stdout).  Exit status: 0 on success,\n"
    "1 when no op matches PATTERN, 2 on a usage error.\n";

static const struct { uint32_t flag; const char *name; } flag_names[] = {
    { MTK_OP_VIEW, "view" },
    { MTK_OP_DATA_DEPENDENT, "data_dependent" },
    { MTK_OP_CREATION, "creation" },
    { MTK_OP_NO_KERNEL, "no_kernel" },
    { MTK_OP_INPLACE, "inplace" },
};

static cJSON *op_json(const mtk_op_def *op)
{
    cJSON *obj = cJSON_CreateObject();
    cJSON *flags = cJSON_CreateArray();
    bool ok = obj && flags && cJSON_AddStringToObject(obj, "name", op->name) &&
              cJSON_AddStringToObject(obj, "signature", op->signature) &&
              cJSON_AddBoolToObject(obj, "cpu", op->cpu != NULL || (op->flags & MTK_OP_NO_KERNEL));
    for (size_t i = 0; ok && i < sizeof flag_names / sizeof flag_names[0]; i++)
        if (op->flags & flag_names[i].flag)
            ok = cJSON_AddItemToArray(flags, cJSON_CreateString(flag_names[i].name));
    if (ok && cJSON_AddItemToObject(obj, "flags", flags)) return obj;
    cJSON_Delete(flags);
    cJSON_Delete(obj);
    return NULL;
}

int cli_ops(int argc, char **argv)
{
    bool json;
    int parsed = cli_json_help_options("ops", argc, argv, usage, &json);
    if (parsed >= 0) return parsed;
    if (argc - optind > 1) return cli_usage_error("ops", "at most one PATTERN, got %d", argc - optind);
    const char *pattern = optind < argc ? argv[optind] : NULL;
    cJSON *array = json ? cJSON_CreateArray() : NULL;
    if (json && !array) return cli_fail(json, "out_of_memory", NULL, "out of memory");
    int32_t matched = 0;
    for (int32_t i = 0; i < mtk_op_count(); i++) {
        const mtk_op_def *op = mtk_op_at(i);
        if (pattern && !strstr(op->name, pattern)) continue;
        matched++;
        if (!json) {
            puts(op->signature);
        } else if (!cJSON_AddItemToArray(array, op_json(op))) {
            cJSON_Delete(array);
            return cli_fail(json, "out_of_memory", NULL, "out of memory");
        }
    }
    if (pattern && matched == 0) {
        cJSON_Delete(array);
        return cli_fail(json, mtk_status_name(MTK_ERR_UNKNOWN_OP), NULL,
                        "no op name contains '%s' (mtk ops lists them all)", pattern);
    }
    if (json) {
        char *text = cJSON_PrintUnformatted(array);
        cJSON_Delete(array);
        if (!text) return cli_fail(json, "out_of_memory", NULL, "out of memory");
        puts(text);
        cJSON_free(text);
    }
    return CLI_EXIT_OK;
}
