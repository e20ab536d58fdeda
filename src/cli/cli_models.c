/* mtk models: the built-in models with their family, class, dtype and
 * parameter count (each built on the meta device to count it). */
#include "cli/cli.h"
#include "mtk/mtk.h"
#include "core/text.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static const char usage[] =
    "usage: mtk models [--json] [--families]\n"
    "\n"
    "Lists the built-in models: name, family (transformers model_type),\n"
    "class, dtype, parameter count (tied parameters once) and, for MoE\n"
    "models, the parameters active per token, each built on\n"
    "the meta device from its embedded config.json (the model's published\n"
    "one on the Hugging Face Hub), then the demo models.  Any of them is a\n"
    "MODEL for 'mtk summary', as is a config.json or a directory holding one.\n"
    "Below the table, what a count covers: the parameters a MoE model's token\n"
    "reaches, the parts of a multimodal model that are not modelled, the\n"
    "bytes of quantized storage (quantization_config).\n"
    "\n"
    "options:\n"
    "  -f, --families  list the supported families and their classes instead\n"
    "  -j, --json      one JSON document: {models: [{name, hf_id, family,\n"
    "                  class, dtype, params, active_params (null: dense),\n"
    "                  param_bytes (the weights' bytes, quantized storage's),\n"
    "                  example_input, notes, and error:\n"
    "                  {code, message} for a model that fails to build}]}\n"
    "                  (or {families: [{model_type, classes,\n"
    "                  default_class, input}]})\n"
    "  -h, --help      show this help and exit\n"
    "\n"
    "Exit status: 0 on success, 1 on an error, 2 on a usage error.\n";

static const char *input_name(mtk_model_input_kind kind)
{
    switch (kind) {
    case MTK_MODEL_INPUT_TOKEN_IDS: return "token_ids";
    case MTK_MODEL_INPUT_PIXELS: return "pixels";
    case MTK_MODEL_INPUT_SEQ2SEQ_IDS: return "seq2seq_ids";
    case MTK_MODEL_INPUT_LATENTS: return "latents";
    default: return "tensor";
    }
}

static int print_json(cJSON *root)
{
    char *text = root ? cJSON_PrintUnformatted(root) : NULL;
    cJSON_Delete(root);
    if (!text) return cli_fail(true, "out_of_memory", NULL, "out of memory");
    puts(text);
    cJSON_free(text);
    return CLI_EXIT_OK;
}

/* The width of the family column: the longest model_type (at least the
 * header's 10), so "xlm-roberta" keeps its column aligned. */
static int family_width(void)
{
    int width = 10;
    for (int32_t i = 0; i < mtk_model_family_count(); i++) {
        int n = (int)strlen(mtk_model_family_at(i)->model_type);
        if (n > width) width = n;
    }
    return width;
}

static int list_families(bool json)
{
    cJSON *root = json ? cJSON_CreateObject() : NULL;
    cJSON *list = json ? cJSON_AddArrayToObject(root, "families") : NULL;
    int width = family_width();
    if (!json) printf("%-*s %-10s %s\n", width, "Family", "Input", "Classes (the first built when a config names none)");
    for (int32_t i = 0; i < mtk_model_family_count(); i++) {
        const mtk_model_family_info *f = mtk_model_family_at(i);
        if (json) {
            cJSON *row = cJSON_CreateObject();
            cJSON_AddStringToObject(row, "model_type", f->model_type);
            cJSON *classes = cJSON_AddArrayToObject(row, "classes");
            for (int32_t k = 0; f->architectures[k]; k++)
                cJSON_AddItemToArray(classes, cJSON_CreateString(f->architectures[k]));
            cJSON_AddStringToObject(row, "default_class", f->default_architecture);
            cJSON_AddStringToObject(row, "input", input_name(f->input));
            cJSON_AddItemToArray(list, row);
            continue;
        }
        printf("%-*s %-10s %s", width, f->model_type, input_name(f->input), f->default_architecture);
        for (int32_t k = 0; f->architectures[k]; k++)
            if (strcmp(f->architectures[k], f->default_architecture) != 0) printf(", %s", f->architectures[k]);
        printf("\n");
    }
    return json ? print_json(root) : CLI_EXIT_OK;
}

typedef struct model_row {
    const char *name, *hf_id, *family, *class_name, *example;
    mtk_dtype dtype;
    int64_t params;
    int64_t bytes;      /* the parameters' bytes (quantized: the checkpoint's) */
    int64_t active;     /* MoE: parameters active per token; 0: dense */
    const char *notes[4]; /* the summary's notes but the balanced-routing one */
    int32_t nnotes;
    const char *error_code, *error_message; /* a model that failed to build */
} model_row;

/* The note every MoE model has; the table leaves it to the summary. */
static bool routing_note(const char *note) { return strncmp(note, "MoE routing depends on the data", 31) == 0; }

/* Builds `name` on meta and fills its row; false with the error set. */
static bool describe(mtk_ctx *ctx, const char *name, const char *hf_id, model_row *row)
{
    mtk_model_resolve_options options = { .dtype = MTK_DTYPE_UNDEFINED, .meta = true };
    mtk_model_info info;
    mtk_module *m = mtk_model_resolve(ctx, name, &options, &info);
    if (!m) return false;
    int64_t params = mtk_module_num_parameters(m, false);
    mtk_param_stats st;
    if (params < 0) mtk_ctx_clear_error(ctx); /* a lazy demo model: known only after an input */
    if (!mtk_module_param_stats(m, &st)) return false;
    if (params < 0) params = st.total;
    *row = (model_row){ .name = name, .hf_id = hf_id, .family = info.family, .class_name = info.architecture,
                        .example = info.example_input, .dtype = info.dtype, .params = params,
                        .bytes = st.bytes, .active = info.active_params };
    for (int32_t i = 0; i < info.nnotes && i < 4; i++)
        if (!routing_note(info.notes[i])) row->notes[row->nnotes++] = info.notes[i];
    return true;
}

int cli_models(int argc, char **argv)
{
    static const struct option longopts[] = {
        { "json", no_argument, NULL, 'j' },
        { "families", no_argument, NULL, 'f' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    bool json = false, families = false;
    int opt;
    cli_options_reset();
    while ((opt = cli_getopt("models", argc, argv, "jfh", longopts)) != -1) {
        switch (opt) {
        case 'j': json = true; break;
        case 'f': families = true; break;
        case 'h': fputs(usage, stdout); return CLI_EXIT_OK;
        default: return CLI_EXIT_USAGE;
        }
    }
    if (optind != argc) return cli_usage_error("models", "unexpected argument '%s'", argv[optind]);
    if (families) return list_families(json);

    mtk_ctx *ctx = mtk_ctx_new();
    if (!ctx) return cli_fail(json, "out_of_memory", NULL, "out of memory");
    int32_t nbuiltin = mtk_builtin_model_count(), n = nbuiltin + mtk_demo_model_count();
    bool failed = false;
    model_row *rows = mtk_ctx_alloc(ctx, (size_t)n * sizeof *rows);
    for (int32_t i = 0; rows && i < n; i++) {
        bool ok = i < nbuiltin ? describe(ctx, mtk_builtin_model_at(i)->name, mtk_builtin_model_at(i)->hf_id, &rows[i])
                               : describe(ctx, mtk_demo_model_at(i - nbuiltin)->name, "", &rows[i]);
        if (!ok) {
            /* one broken model does not hide the others: its row says why */
            const char *name = i < nbuiltin ? mtk_builtin_model_at(i)->name : mtk_demo_model_at(i - nbuiltin)->name;
            if (!json) cli_error("%s", mtk_ctx_message(ctx));
            rows[i] = (model_row){ .name = name, .hf_id = i < nbuiltin ? mtk_builtin_model_at(i)->hf_id : "",
                                   .family = "?", .class_name = "?", .dtype = MTK_DTYPE_UNDEFINED, .params = -1,
                                   .error_code = mtk_status_name(mtk_ctx_status(ctx)),
                                   .error_message = mtk_ctx_strdup(ctx, mtk_ctx_message(ctx)) };
            mtk_ctx_clear_error(ctx);
            failed = true;
        }
    }
    if (!rows) {
        mtk_ctx_free(ctx);
        return cli_fail(json, "out_of_memory", NULL, "out of memory");
    }
    int status = CLI_EXIT_OK;
    if (json) {
        cJSON *root = cJSON_CreateObject();
        cJSON *list = cJSON_AddArrayToObject(root, "models");
        for (int32_t i = 0; list && i < n; i++) {
            cJSON *row = cJSON_CreateObject();
            cJSON_AddStringToObject(row, "name", rows[i].name);
            cJSON_AddStringToObject(row, "hf_id", rows[i].hf_id);
            cJSON_AddStringToObject(row, "family", rows[i].family);
            cJSON_AddStringToObject(row, "class", rows[i].class_name);
            cJSON_AddStringToObject(row, "dtype", mtk_dtype_name(rows[i].dtype));
            cJSON_AddItemToObject(row, "params",
                                  rows[i].params >= 0 ? text_json_int(rows[i].params) : cJSON_CreateNull());
            cJSON_AddItemToObject(row, "param_bytes",
                                  rows[i].params >= 0 ? text_json_int(rows[i].bytes) : cJSON_CreateNull());
            cJSON_AddItemToObject(row, "active_params",
                                  rows[i].active > 0 ? text_json_int(rows[i].active) : cJSON_CreateNull());
            cJSON_AddStringToObject(row, "example_input", rows[i].example ? rows[i].example : "");
            cJSON *notes = cJSON_AddArrayToObject(row, "notes");
            for (int32_t k = 0; notes && k < rows[i].nnotes; k++)
                cJSON_AddItemToArray(notes, cJSON_CreateString(rows[i].notes[k]));
            if (rows[i].error_code) { /* the one error shape, on the row it belongs to */
                cJSON *error = cJSON_AddObjectToObject(row, "error");
                cJSON_AddStringToObject(error, "code", rows[i].error_code);
                cJSON_AddStringToObject(error, "message", rows[i].error_message ? rows[i].error_message : "");
            }
            cJSON_AddItemToArray(list, row);
        }
        status = print_json(root);
    } else {
        int width = family_width();
        printf("%-22s %-*s %-28s %-9s %17s %15s  %s\n", "Name", width, "Family", "Class", "Dtype", "Params", "Active",
               "Hugging Face");
        for (int32_t i = 0; i < n; i++) {
            char num[48], active[48] = "";
            if (rows[i].active > 0) text_grouped(rows[i].active, active, sizeof active);
            printf("%-22s %-*s %-28s %-9s %17s %15s  %s\n", rows[i].name, width, rows[i].family, rows[i].class_name,
                   rows[i].params >= 0 ? mtk_dtype_name(rows[i].dtype) : "?",
                   rows[i].params >= 0 ? text_grouped(rows[i].params, num, sizeof num) : "error", active,
                   rows[i].hf_id);
        }
        bool heading = false;
        for (int32_t i = 0; i < n; i++)
            for (int32_t k = 0; k < rows[i].nnotes; k++) {
                if (!heading) printf("\nNotes:\n");
                heading = true;
                printf("  %s: %s\n", rows[i].name, rows[i].notes[k]);
            }
    }
    mtk_ctx_free(ctx);
    return failed ? CLI_EXIT_ERROR : status;
}
