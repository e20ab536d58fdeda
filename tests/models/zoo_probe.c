/* zoo_probe: builds models of the zoo on the meta device and prints what
 * the transformers oracle (test_zoo_oracle.py) compares.
 *
 * Usage:
 *   zoo_probe --builtins
 *       one JSON document: [{"name", "hf_id", "example_input", "config"}]
 *       for every built-in model (config: its embedded config.json text);
 *   zoo_probe --buffers MODEL
 *       builds MODEL on cpu (the init mode, seed 0) and prints
 *       {"buffers": {name: [values]}}, every buffer flattened, so computed
 *       buffers (rotary inv_freq, bert position_ids) can be checked;
 *   zoo_probe --cpu-forward MODEL WEIGHTS OUT
 *       builds MODEL on cpu in float32, fills every state-dict entry from
 *       the safetensors file WEIGHTS (which also holds "input_ids", and
 *       "decoder_input_ids" for an encoder-decoder), runs
 *       the forward in eval mode and writes its first output to the
 *       safetensors file OUT as "output"; prints {"ok": true} or
 *       {"error": message};
 *   zoo_probe --cpu-forward-cached MODEL WEIGHTS OUT
 *       the same through the KV cache's forward (mtk_lm_forward_cached on
 *       an empty cache: the masks transformers builds, sliding windows
 *       included), all logits kept;
 *   zoo_probe --cpu-forward-vision MODEL WEIGHTS OUT
 *       a gemma3 model's model.vision_tower then model.multi_modal_projector
 *       on WEIGHTS' "pixel_values" (the image features);
 *   zoo_probe
 *       reads lines "MODEL | INPUTS" from stdin, MODEL a built-in name or a
 *       config.json path, INPUTS ';'-separated forwards, each a shape
 *       ("2x7", "1x3x224x224", optionally ":dtype") or several joined by
 *       '+' ("2x7+2x5": an encoder-decoder's two inputs); empty: no
 *       forward.  Prints one JSON object per
 *       line:
 *         {"type", "family", "dtype", "input_dtype", "notes": [..],
 *          "params": [[name, shape, dtype, requires_grad]],
 *          "buffers": [[name, shape, dtype, persistent]],
 *          "state_dict": [[key, shape, dtype]],
 *          "num_params", "trainable_params",
 *          "forwards": [{"outputs": [[shape, dtype]], "flops"} | {"error"}]}
 *       or {"error": message} when the model does not build.
 *
 * Each forward runs on a fresh build of the model in its own context, so a
 * failing one does not leave its error behind.  Built by
 * tests/models/conftest.py against the library under test. */
#include "mtk/io.h"
#include "mtk/mtk.h"
#include "mtk/models.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_FORWARDS 8

static void print_json_string(const char *s)
{
    putchar('"');
    for (; s && *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\') printf("\\%c", ch);
        else if (ch == '\n') printf("\\n");
        else if (ch == '\t') printf("\\t");
        else if (ch < 0x20) printf("\\u%04x", ch);
        else putchar(ch);
    }
    putchar('"');
}

static void print_shape(const mtk_tensor *t)
{
    printf("[");
    for (int32_t d = 0; d < t->ndim; d++) printf("%s%lld", d ? ", " : "", (long long)t->shape[d]);
    printf("]");
}

static char *trim(char *s)
{
    while (*s == ' ' || *s == '\t') s++;
    size_t n = strlen(s);
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\n' || s[n - 1] == '\r')) s[--n] = '\0';
    return s;
}

/* "2x7" or "2x7:int64" -> shape; false on anything else. */
static bool parse_shape(const char *text, int64_t *shape, int32_t *ndim, mtk_dtype *dtype)
{
    char buf[128];
    snprintf(buf, sizeof buf, "%s", text);
    *dtype = MTK_DTYPE_UNDEFINED;
    char *colon = strchr(buf, ':');
    if (colon) {
        *colon = '\0';
        *dtype = mtk_dtype_from_name(colon + 1);
        if (*dtype == MTK_DTYPE_UNDEFINED) return false;
    }
    *ndim = 0;
    for (char *p = buf; *p;) {
        char *end;
        long long v = strtoll(p, &end, 10);
        if (end == p || *ndim == MTK_MAX_DIMS) return false;
        shape[(*ndim)++] = v;
        p = *end == 'x' ? end + 1 : end;
        if (*end && *end != 'x') return false;
    }
    return *ndim > 0;
}

static mtk_module *build(mtk_ctx *ctx, const char *model, mtk_model_info *info)
{
    mtk_model_resolve_options opt = { .dtype = MTK_DTYPE_UNDEFINED, .meta = true };
    return mtk_model_resolve(ctx, model, &opt, info);
}

static void print_tensors(const mtk_named_tensor *list, int32_t n, bool buffers)
{
    printf("[");
    for (int32_t i = 0; i < n; i++) {
        printf("%s[", i ? ", " : "");
        print_json_string(list[i].name);
        printf(", ");
        print_shape(list[i].tensor);
        printf(", \"%s\", %s]", mtk_dtype_name(list[i].tensor->dtype),
               buffers ? (list[i].persistent ? "true" : "false")
                       : ((list[i].tensor->flags & MTK_TENSOR_REQUIRES_GRAD) ? "true" : "false"));
    }
    printf("]");
}

/* One forward on a fresh build: {"outputs": [[shape, dtype]], "flops"}.
 * `shapes_text` is one shape, or several joined by '+' for a model that
 * takes several inputs (an encoder-decoder's "2x7+2x5"). */
static void print_forward(const char *model, const char *shapes_text)
{
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_model_info info;
    mtk_module *m = ctx ? build(ctx, model, &info) : NULL;
    int64_t shape[MTK_MODULE_MAX_IO][MTK_MAX_DIMS];
    int32_t ndim[MTK_MODULE_MAX_IO], n = 0;
    mtk_dtype dtype[MTK_MODULE_MAX_IO];
    char buf[256], *save = NULL;
    snprintf(buf, sizeof buf, "%s", shapes_text);
    bool parsed = true;
    for (char *tok = strtok_r(buf, "+", &save); parsed && tok; tok = strtok_r(NULL, "+", &save), n++)
        parsed = n < MTK_MODULE_MAX_IO && parse_shape(trim(tok), shape[n], &ndim[n], &dtype[n]);
    if (!parsed || n == 0) {
        printf("{\"error\": \"bad input shape\"}");
        mtk_ctx_free(ctx);
        return;
    }
    mtk_module_io io = { .nin = n };
    mtk_trace *trace = NULL;
    bool ok = false;
    if (m) {
        for (int32_t i = 0; i < n; i++)
            io.in[i] = mtk_tensor_new(ctx, dtype[i] == MTK_DTYPE_UNDEFINED ? info.input_dtype : dtype[i], shape[i],
                                      ndim[i], NULL, MTK_DEVICE_META);
        mtk_module_train(m, false);
        trace = mtk_trace_begin(m);
        ok = trace && mtk_module_call(m, &io);
        mtk_trace_end(trace);
    }
    if (!ok) {
        printf("{\"error\": ");
        print_json_string(ctx ? mtk_ctx_message(ctx) : "out of memory");
        printf("}");
    } else {
        printf("{\"outputs\": [");
        for (int32_t i = 0; i < io.nout; i++) {
            printf("%s[", i ? ", " : "");
            print_shape(io.out[i]);
            printf(", \"%s\"]", mtk_dtype_name(io.out[i]->dtype));
        }
        printf("], \"flops\": %lld}", (long long)mtk_trace_flops(trace));
    }
    mtk_trace_free(trace);
    mtk_ctx_free(ctx);
}

static void probe_line(char *line)
{
    char *bar = strchr(line, '|');
    char *inputs = bar ? bar + 1 : (char *)"";
    if (bar) *bar = '\0';
    const char *model = trim(line);
    inputs = trim(inputs);

    mtk_ctx *ctx = mtk_ctx_new();
    mtk_model_info info;
    mtk_module *m = ctx ? build(ctx, model, &info) : NULL;
    mtk_named_tensor *params = NULL, *buffers = NULL;
    int32_t np = m ? mtk_module_named_parameters(m, &params) : -1;
    int32_t nb = m ? mtk_module_named_buffers(m, &buffers) : -1;
    mtk_state_dict *sd = m ? mtk_module_state_dict(m) : NULL;
    int64_t total = m ? mtk_module_num_parameters(m, false) : -1;
    int64_t trainable = m ? mtk_module_num_parameters(m, true) : -1;
    if (!m || np < 0 || nb < 0 || !sd || total < 0 || trainable < 0) {
        printf("{\"error\": ");
        print_json_string(ctx ? mtk_ctx_message(ctx) : "out of memory");
        printf("}\n");
        mtk_ctx_free(ctx);
        return;
    }
    printf("{\"type\": ");
    print_json_string(mtk_module_type_name(m));
    printf(", \"family\": ");
    print_json_string(info.family);
    printf(", \"dtype\": \"%s\", \"input_dtype\": \"%s\", \"notes\": [", mtk_dtype_name(info.dtype),
           mtk_dtype_name(info.input_dtype));
    for (int32_t i = 0; i < info.nnotes; i++) {
        printf("%s", i ? ", " : "");
        print_json_string(info.notes[i]);
    }
    printf("], \"params\": ");
    print_tensors(params, np, false);
    printf(", \"buffers\": ");
    print_tensors(buffers, nb, true);
    printf(", \"state_dict\": [");
    for (int32_t i = 0; i < mtk_state_dict_count(sd); i++) {
        const char *name;
        mtk_tensor *t = mtk_state_dict_at(sd, i, &name);
        printf("%s[", i ? ", " : "");
        print_json_string(name);
        printf(", ");
        print_shape(t);
        printf(", \"%s\"]", mtk_dtype_name(t->dtype));
    }
    printf("], \"num_params\": %lld, \"trainable_params\": %lld, \"forwards\": [", (long long)total,
           (long long)trainable);
    mtk_ctx_free(ctx);

    char *save = NULL;
    int n = 0;
    for (char *tok = strtok_r(inputs, ";", &save); tok; tok = strtok_r(NULL, ";", &save)) {
        char *shape = trim(tok);
        if (!*shape) continue;
        printf("%s", n++ ? ", " : "");
        print_forward(model, shape);
    }
    printf("]}\n");
}

static int print_builtins(void)
{
    printf("[");
    for (int32_t i = 0; i < mtk_builtin_model_count(); i++) {
        const mtk_builtin_model *b = mtk_builtin_model_at(i);
        printf("%s{\"name\": ", i ? ",\n " : "");
        print_json_string(b->name);
        printf(", \"hf_id\": ");
        print_json_string(b->hf_id);
        printf(", \"example_input\": ");
        print_json_string(b->example_input);
        printf(", \"config\": ");
        print_json_string(b->config_json);
        printf("}");
    }
    printf("]\n");
    return 0;
}

static int print_buffer_values(const char *model)
{
    mtk_ctx *ctx = mtk_ctx_new();
    if (!ctx) return 1;
    mtk_ctx_manual_seed(ctx, 0);
    mtk_named_tensor *buffers = NULL;
    /* values need a real model: resolve builds on meta unless a device is scoped */
    mtk_module *m = mtk_ctx_push_device(ctx, MTK_DEVICE_CPU) ? mtk_model_resolve(ctx, model, NULL, NULL) : NULL;
    int32_t n = m ? mtk_module_named_buffers(m, &buffers) : -1;
    if (n < 0) {
        printf("{\"error\": ");
        print_json_string(mtk_ctx_message(ctx));
        printf("}\n");
        mtk_ctx_free(ctx);
        return 0;
    }
    printf("{\"buffers\": {");
    for (int32_t i = 0; i < n; i++) {
        mtk_tensor *values = mtk_contiguous(ctx, mtk_to_dtype(ctx, buffers[i].tensor, MTK_FLOAT64));
        printf("%s", i ? ", " : "");
        print_json_string(buffers[i].name);
        printf(": [");
        const double *data = values ? mtk_tensor_data(values) : NULL;
        for (int64_t k = 0; data && k < mtk_tensor_numel(values); k++) printf("%s%.17g", k ? ", " : "", data[k]);
        printf("]");
    }
    printf("}}\n");
    mtk_ctx_free(ctx);
    return 0;
}

/* The model with WEIGHTS' values, run on WEIGHTS' input_ids. */
static bool cpu_forward(mtk_ctx *ctx, const char *model, const char *weights, const char *out, bool cached,
                        bool vision)
{
    /* real parameters: mtk_model_resolve builds on meta unless a device is scoped */
    mtk_model_resolve_options opt = { .dtype = MTK_FLOAT32, .meta = false };
    mtk_module *m = mtk_ctx_push_device(ctx, MTK_DEVICE_CPU) ? mtk_model_resolve(ctx, model, &opt, NULL) : NULL;
    mtk_st_file *file = m ? mtk_st_open(ctx, weights) : NULL;
    mtk_state_dict *sd = file ? mtk_module_state_dict(m) : NULL;
    if (!sd) {
        mtk_st_close(file);
        return false;
    }
    bool ok = true;
    for (int32_t i = 0; ok && i < mtk_state_dict_count(sd); i++) {
        const char *name;
        mtk_tensor *t = mtk_state_dict_at(sd, i, &name);
        ok = mtk_st_read_into(ctx, file, name, t);
    }
    mtk_module_io io = { .nin = 1 };
    io.in[0] = ok ? mtk_st_load(ctx, file, vision ? "pixel_values" : "input_ids", vision ? MTK_FLOAT32 : MTK_INT64)
                  : NULL;
    if (ok && mtk_st_find(file, "decoder_input_ids")) /* an encoder-decoder's second input */
        io.in[io.nin++] = mtk_st_load(ctx, file, "decoder_input_ids", MTK_INT64);
    mtk_module_train(m, false);
    if (vision) {
        mtk_tensor *features = io.in[0] ? mtk_module_forward(mtk_module_child(m, "model.vision_tower"), io.in[0]) : NULL;
        io.out[0] = features ? mtk_module_forward(mtk_module_child(m, "model.multi_modal_projector"), features) : NULL;
        ok = io.out[0] != NULL;
    } else if (cached) {
        io.out[0] = io.in[0] ? mtk_lm_forward_cached(m, io.in[0], mtk_kv_cache_new(m), NULL) : NULL;
        ok = io.out[0] != NULL;
    } else {
        ok = io.in[0] && mtk_module_call(m, &io);
    }
    mtk_st_writer *w = ok ? mtk_st_writer_new(ctx) : NULL;
    ok = w && mtk_st_writer_add(w, "output", mtk_contiguous(ctx, io.out[0])) && mtk_st_writer_write(w, out);
    mtk_st_writer_free(w);
    mtk_st_close(file);
    return ok;
}

int main(int argc, char **argv)
{
    bool cached = argc > 4 && strcmp(argv[1], "--cpu-forward-cached") == 0;
    bool vision = argc > 4 && strcmp(argv[1], "--cpu-forward-vision") == 0;
    if (argc > 4 && (strcmp(argv[1], "--cpu-forward") == 0 || cached || vision)) {
        mtk_ctx *ctx = mtk_ctx_new();
        if (!ctx) return 1;
        if (cpu_forward(ctx, argv[2], argv[3], argv[4], cached, vision)) {
            printf("{\"ok\": true}\n");
        } else {
            printf("{\"error\": ");
            print_json_string(mtk_ctx_message(ctx));
            printf("}\n");
        }
        mtk_ctx_free(ctx);
        return 0;
    }
    if (argc > 1 && strcmp(argv[1], "--builtins") == 0) return print_builtins();
    if (argc > 2 && strcmp(argv[1], "--buffers") == 0) return print_buffer_values(argv[2]);
    char line[8192];
    while (fgets(line, sizeof line, stdin)) {
        if (!*trim(line)) continue;
        probe_line(line);
        fflush(stdout);
    }
    return 0;
}
