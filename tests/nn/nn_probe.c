/* nn_probe: builds torch.nn layers in mtk from their Python constructor
 * text and prints what the oracle (test_nn_oracle.py) compares with torch.
 *
 * Reads lines from stdin:   SPEC | INPUTS | MODE
 *   SPEC    a torch.nn constructor call, as Python would write it inside
 *           the torch.nn namespace: "Conv2d(3, 8, 3, stride=2)",
 *           "Sequential(Linear(4, 5), ReLU())"
 *   INPUTS  ';'-separated shapes, each "[2, 10]" with an optional ":int64"
 *           (empty: no forward)
 *   MODE    "meta" (build and run on meta) or "init:SEED" (build on cpu in
 *           the init mode after mtk_ctx_manual_seed(SEED): per-tensor
 *           statistics)
 * and prints one JSON object per line: {"type", "repr", "params":
 * [[name, shape, dtype, requires_grad]], "buffers": [[name, shape, dtype,
 * persistent]], "state_dict": [keys], "num_params", "outputs": [shapes],
 * "flops", "stats": {name: [mean, std, min, max]}} or {"error": message}.
 *
 * Built by tests/nn/conftest.py against the library under test. */
#include "mtk/mtk.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------- the parser */

typedef enum vkind { V_NONE, V_BOOL, V_INT, V_FLOAT, V_STR, V_TUPLE, V_CALL } vkind;

typedef struct call call;
typedef struct value {
    vkind kind;
    int64_t i;
    double f;
    char s[64];
    int64_t items[8]; /* V_TUPLE of ints */
    int32_t nitems;
    call *call;
} value;

#define MAX_ARGS 16
struct call {
    char name[64];
    char *keys[MAX_ARGS]; /* NULL: positional */
    value args[MAX_ARGS];
    int32_t nargs;
};

typedef struct parser {
    const char *p;
    char err[256];
} parser;

static void skip(parser *ps)
{
    while (isspace((unsigned char)*ps->p)) ps->p++;
}

static bool fail(parser *ps, const char *what)
{
    if (!ps->err[0]) snprintf(ps->err, sizeof ps->err, "parse error at '%.20s': %s", ps->p, what);
    return false;
}

static bool parse_call(parser *ps, call *c);

static bool parse_value(parser *ps, value *v)
{
    skip(ps);
    memset(v, 0, sizeof *v);
    if (*ps->p == '(' || *ps->p == '[') {
        char close = *ps->p == '(' ? ')' : ']';
        ps->p++;
        v->kind = V_TUPLE;
        for (;;) {
            skip(ps);
            if (*ps->p == close) {
                ps->p++;
                return true;
            }
            value item;
            if (!parse_value(ps, &item) || item.kind != V_INT || v->nitems == 8) return fail(ps, "tuple of ints");
            v->items[v->nitems++] = item.i;
            skip(ps);
            if (*ps->p == ',') ps->p++;
        }
    }
    if (*ps->p == '\'' || *ps->p == '"') {
        char q = *ps->p++;
        const char *end = strchr(ps->p, q);
        if (!end || end - ps->p >= 63) return fail(ps, "string");
        v->kind = V_STR;
        memcpy(v->s, ps->p, (size_t)(end - ps->p));
        ps->p = end + 1;
        return true;
    }
    if (isdigit((unsigned char)*ps->p) || *ps->p == '-' || *ps->p == '.') {
        char *end;
        const char *start = ps->p;
        double f = strtod(start, &end);
        if (end == start) return fail(ps, "number");
        bool is_float = false;
        for (const char *q = start; q < end; q++) is_float |= *q == '.' || *q == 'e' || *q == 'E';
        v->kind = is_float ? V_FLOAT : V_INT;
        v->f = f;
        v->i = is_float ? 0 : strtoll(start, NULL, 10);
        ps->p = end;
        return true;
    }
    if (isalpha((unsigned char)*ps->p)) {
        const char *start = ps->p;
        while (isalnum((unsigned char)*ps->p) || *ps->p == '_') ps->p++;
        size_t n = (size_t)(ps->p - start);
        skip(ps);
        if (*ps->p == '(') {
            ps->p = start;
            v->kind = V_CALL;
            v->call = calloc(1, sizeof *v->call);
            return v->call && parse_call(ps, v->call);
        }
        if (n == 4 && !strncmp(start, "True", 4)) return v->kind = V_BOOL, v->i = 1, true;
        if (n == 5 && !strncmp(start, "False", 5)) return v->kind = V_BOOL, v->i = 0, true;
        if (n == 4 && !strncmp(start, "None", 4)) return v->kind = V_NONE, true;
        return fail(ps, "unknown name");
    }
    return fail(ps, "value");
}

static bool parse_call(parser *ps, call *c)
{
    skip(ps);
    size_t n = 0;
    while ((isalnum((unsigned char)*ps->p) || *ps->p == '_') && n < sizeof c->name - 1) c->name[n++] = *ps->p++;
    skip(ps);
    if (*ps->p++ != '(') return fail(ps, "'('");
    for (;;) {
        skip(ps);
        if (*ps->p == ')') {
            ps->p++;
            return true;
        }
        if (c->nargs == MAX_ARGS) return fail(ps, "too many arguments");
        const char *save = ps->p;
        while (isalnum((unsigned char)*ps->p) || *ps->p == '_') ps->p++;
        const char *name_end = ps->p;
        skip(ps);
        if (*ps->p == '=' && name_end > save) {
            c->keys[c->nargs] = strndup(save, (size_t)(name_end - save));
            ps->p++;
        } else {
            ps->p = save;
        }
        if (!parse_value(ps, &c->args[c->nargs++])) return false;
        skip(ps);
        if (*ps->p == ',') ps->p++;
    }
}

static void free_call(call *c)
{
    for (int32_t i = 0; i < c->nargs; i++) {
        free(c->keys[i]);
        if (c->args[i].kind == V_CALL) {
            free_call(c->args[i].call);
            free(c->args[i].call);
        }
    }
}

/* ------------------------------------------------------------ arguments */

static const value *arg(const call *c, int pos, const char *key)
{
    int npos = 0;
    for (int32_t i = 0; i < c->nargs; i++) {
        if (c->keys[i]) {
            if (key && !strcmp(c->keys[i], key)) return &c->args[i];
        } else if (npos++ == pos) {
            return &c->args[i];
        }
    }
    return NULL;
}

static int64_t arg_int(const call *c, int pos, const char *key, int64_t dflt)
{
    const value *v = arg(c, pos, key);
    return v && v->kind == V_INT ? v->i : dflt;
}

static double arg_float(const call *c, int pos, const char *key, double dflt)
{
    const value *v = arg(c, pos, key);
    if (!v) return dflt;
    if (v->kind == V_NONE) return NAN;
    return v->kind == V_INT ? (double)v->i : v->f;
}

static bool arg_bool(const call *c, int pos, const char *key, bool dflt)
{
    const value *v = arg(c, pos, key);
    return v && v->kind == V_BOOL ? v->i != 0 : dflt;
}

static const char *arg_str(const call *c, int pos, const char *key, const char *dflt)
{
    const value *v = arg(c, pos, key);
    return v && v->kind == V_STR ? v->s : dflt;
}

/* An int or a tuple expanded to `dims` ints; false when absent. */
static bool arg_ints(const call *c, int pos, const char *key, int32_t dims, int64_t *out)
{
    const value *v = arg(c, pos, key);
    if (!v || v->kind == V_NONE) return false;
    for (int32_t i = 0; i < dims; i++) out[i] = v->kind == V_TUPLE ? v->items[i < v->nitems ? i : 0] : v->i;
    return true;
}

/* ------------------------------------------------------------- builders */

static mtk_module *build(mtk_ctx *ctx, const call *c);

static int32_t dims_of(const char *name)
{
    size_t n = strlen(name);
    return n > 2 && name[n - 1] == 'd' && isdigit((unsigned char)name[n - 2]) ? name[n - 2] - '0' : 0;
}

static bool starts(const char *s, const char *prefix) { return !strncmp(s, prefix, strlen(prefix)); }

static mtk_module *build_conv(mtk_ctx *ctx, const call *c, int32_t dims, bool transposed, bool lazy)
{
    mtk_conv_options o = mtk_conv_defaults();
    int first = lazy ? 0 : 1; /* index of out_channels */
    int64_t kernel[3];
    arg_ints(c, first + 1, "kernel_size", dims, kernel);
    arg_ints(c, first + 2, "stride", dims, o.stride);
    arg_ints(c, first + 3, "padding", dims, o.padding);
    if (transposed) {
        arg_ints(c, first + 4, "output_padding", dims, o.output_padding);
        o.groups = arg_int(c, first + 5, "groups", 1);
        o.bias = arg_bool(c, first + 6, "bias", true);
        arg_ints(c, first + 7, "dilation", dims, o.dilation);
    } else {
        arg_ints(c, first + 4, "dilation", dims, o.dilation);
        o.groups = arg_int(c, first + 5, "groups", 1);
        o.bias = arg_bool(c, first + 6, "bias", true);
        o.padding_mode = arg_str(c, first + 7, "padding_mode", "zeros");
    }
    if (lazy) return mtk_nn_lazy_conv(ctx, dims, arg_int(c, 0, "out_channels", 0), kernel, &o);
    int64_t in = arg_int(c, 0, "in_channels", 0), out = arg_int(c, 1, "out_channels", 0);
    return transposed ? mtk_nn_conv_transpose(ctx, dims, in, out, kernel, &o) : mtk_nn_conv(ctx, dims, in, out, kernel, &o);
}

static mtk_module *build_pool(mtk_ctx *ctx, const call *c, int32_t dims)
{
    int64_t sizes[3];
    mtk_pool_options o = mtk_pool_defaults();
    const value *first = arg(c, 0, strstr(c->name, "Adaptive") ? "output_size" : "kernel_size");
    o.tuple_repr = first && first->kind == V_TUPLE;
    if (strstr(c->name, "Adaptive")) {
        arg_ints(c, 0, "output_size", dims, sizes);
        return strstr(c->name, "Max") ? mtk_nn_adaptive_max_pool(ctx, dims, sizes, &o)
                                      : mtk_nn_adaptive_avg_pool(ctx, dims, sizes, &o);
    }
    arg_ints(c, 0, "kernel_size", dims, sizes);
    arg_ints(c, 1, "stride", dims, o.stride);
    arg_ints(c, 2, "padding", dims, o.padding);
    if (starts(c->name, "Max")) {
        arg_ints(c, 3, "dilation", dims, o.dilation);
        o.ceil_mode = arg_bool(c, 5, "ceil_mode", false);
        return mtk_nn_max_pool(ctx, dims, sizes, &o);
    }
    o.ceil_mode = arg_bool(c, 3, "ceil_mode", false);
    o.count_include_pad = arg_bool(c, 4, "count_include_pad", true);
    return mtk_nn_avg_pool(ctx, dims, sizes, &o);
}

static mtk_batch_norm_options bn_options(const call *c, int first)
{
    mtk_batch_norm_options o = mtk_batch_norm_defaults();
    o.eps = arg_float(c, first, "eps", 1e-5);
    o.momentum = arg_float(c, first + 1, "momentum", 0.1);
    o.affine = arg_bool(c, first + 2, "affine", true);
    o.track_running_stats = arg_bool(c, first + 3, "track_running_stats", true);
    o.bias = arg_bool(c, 99, "bias", true);
    return o;
}

static mtk_module *build(mtk_ctx *ctx, const call *c)
{
    const char *n = c->name;
    int32_t dims = dims_of(n);
    int64_t shape[MTK_MAX_DIMS];
    if (!strcmp(n, "Linear")) return mtk_nn_linear(ctx, arg_int(c, 0, "in_features", 0), arg_int(c, 1, "out_features", 0), arg_bool(c, 2, "bias", true));
    if (!strcmp(n, "LazyLinear")) return mtk_nn_lazy_linear(ctx, arg_int(c, 0, "out_features", 0), arg_bool(c, 1, "bias", true));
    if (!strcmp(n, "Bilinear"))
        return mtk_nn_bilinear(ctx, arg_int(c, 0, "in1_features", 0), arg_int(c, 1, "in2_features", 0),
                               arg_int(c, 2, "out_features", 0), arg_bool(c, 3, "bias", true));
    if (!strcmp(n, "Identity")) return mtk_nn_identity(ctx);
    if (!strcmp(n, "Embedding")) {
        const value *p = arg(c, 2, "padding_idx");
        return mtk_nn_embedding(ctx, arg_int(c, 0, "num_embeddings", 0), arg_int(c, 1, "embedding_dim", 0),
                                p && p->kind == V_INT ? p->i : MTK_NN_NO_PADDING_IDX);
    }
    if (!strcmp(n, "LayerNorm") || !strcmp(n, "RMSNorm")) {
        const value *v = arg(c, 0, "normalized_shape");
        int32_t nd = v && v->kind == V_TUPLE ? v->nitems : 1;
        for (int32_t i = 0; i < nd; i++) shape[i] = v && v->kind == V_TUPLE ? v->items[i] : (v ? v->i : 0);
        if (n[0] == 'R') return mtk_nn_rms_norm(ctx, shape, nd, arg_float(c, 1, "eps", NAN), arg_bool(c, 2, "elementwise_affine", true));
        return mtk_nn_layer_norm(ctx, shape, nd, arg_float(c, 1, "eps", 1e-5), arg_bool(c, 2, "elementwise_affine", true),
                                 arg_bool(c, 3, "bias", true));
    }
    if (!strcmp(n, "GroupNorm"))
        return mtk_nn_group_norm(ctx, arg_int(c, 0, "num_groups", 0), arg_int(c, 1, "num_channels", 0),
                                 arg_float(c, 2, "eps", 1e-5), arg_bool(c, 3, "affine", true), arg_bool(c, 99, "bias", true));
    if (starts(n, "BatchNorm")) {
        mtk_batch_norm_options o = bn_options(c, 1);
        return mtk_nn_batch_norm(ctx, dims, arg_int(c, 0, "num_features", 0), &o);
    }
    if (starts(n, "LazyBatchNorm")) {
        mtk_batch_norm_options o = bn_options(c, 0);
        return mtk_nn_lazy_batch_norm(ctx, dims, &o);
    }
    if (starts(n, "ConvTranspose")) return build_conv(ctx, c, dims, true, false);
    if (starts(n, "LazyConv")) return build_conv(ctx, c, dims, false, true);
    if (starts(n, "Conv")) return build_conv(ctx, c, dims, false, false);
    if (strstr(n, "Pool")) return build_pool(ctx, c, dims);
    if (!strcmp(n, "Flatten")) return mtk_nn_flatten(ctx, arg_int(c, 0, "start_dim", 1), arg_int(c, 1, "end_dim", -1));
    if (!strcmp(n, "Unflatten")) {
        const value *v = arg(c, 1, "unflattened_size");
        return mtk_nn_unflatten(ctx, arg_int(c, 0, "dim", 0), v ? v->items : shape, v ? v->nitems : 0);
    }
    if (!strcmp(n, "Dropout")) return mtk_nn_dropout(ctx, arg_float(c, 0, "p", 0.5));
    if (!strcmp(n, "LeakyReLU")) return mtk_nn_leaky_relu(ctx, arg_float(c, 0, "negative_slope", 0.01));
    if (!strcmp(n, "ELU")) return mtk_nn_elu(ctx, arg_float(c, 0, "alpha", 1.0));
    if (!strcmp(n, "CELU")) return mtk_nn_celu(ctx, arg_float(c, 0, "alpha", 1.0));
    if (!strcmp(n, "GELU")) return mtk_nn_gelu(ctx, arg_str(c, 0, "approximate", "none"));
    if (!strcmp(n, "Softplus")) return mtk_nn_softplus(ctx, arg_float(c, 0, "beta", 1.0), arg_float(c, 1, "threshold", 20.0));
    if (!strcmp(n, "Hardtanh")) return mtk_nn_hardtanh(ctx, arg_float(c, 0, "min_val", -1.0), arg_float(c, 1, "max_val", 1.0));
    if (!strcmp(n, "Hardshrink")) return mtk_nn_hardshrink(ctx, arg_float(c, 0, "lambd", 0.5));
    if (!strcmp(n, "Softshrink")) return mtk_nn_softshrink(ctx, arg_float(c, 0, "lambd", 0.5));
    if (!strcmp(n, "Threshold")) return mtk_nn_threshold(ctx, arg_float(c, 0, "threshold", 0), arg_float(c, 1, "value", 0));
    if (!strcmp(n, "RReLU")) return mtk_nn_rrelu(ctx, arg_float(c, 0, "lower", 1.0 / 8), arg_float(c, 1, "upper", 1.0 / 3));
    if (!strcmp(n, "PReLU")) return mtk_nn_prelu(ctx, arg_int(c, 0, "num_parameters", 1), arg_float(c, 1, "init", 0.25));
    if (!strcmp(n, "GLU")) return mtk_nn_glu(ctx, arg_int(c, 0, "dim", -1));
    if (!strcmp(n, "Softmax") || !strcmp(n, "Softmin") || !strcmp(n, "LogSoftmax")) {
        const value *v = arg(c, 0, "dim");
        int64_t dim = v && v->kind == V_INT ? v->i : MTK_NN_DIM_NONE;
        return n[0] == 'L' ? mtk_nn_log_softmax(ctx, dim) : !strcmp(n, "Softmin") ? mtk_nn_softmin(ctx, dim) : mtk_nn_softmax(ctx, dim);
    }
    if (!strcmp(n, "Sequential") || !strcmp(n, "ModuleList")) {
        mtk_module *m = n[0] == 'S' ? mtk_nn_sequential(ctx, 0, NULL) : mtk_nn_module_list(ctx);
        for (int32_t i = 0; m && i < c->nargs; i++) {
            if (c->args[i].kind != V_CALL) continue;
            mtk_module *child = build(ctx, c->args[i].call);
            if (!(n[0] == 'S' ? mtk_nn_sequential_append(m, child) : mtk_nn_module_list_append(m, child))) return NULL;
        }
        return m;
    }
    if (!strcmp(n, "MultiheadAttention")) {
        mtk_mha_options o = mtk_mha_defaults();
        o.dropout = arg_float(c, 2, "dropout", 0.0);
        o.bias = arg_bool(c, 3, "bias", true);
        o.add_bias_kv = arg_bool(c, 4, "add_bias_kv", false);
        o.add_zero_attn = arg_bool(c, 5, "add_zero_attn", false);
        o.kdim = arg_int(c, 6, "kdim", 0);
        o.vdim = arg_int(c, 7, "vdim", 0);
        o.batch_first = arg_bool(c, 8, "batch_first", false);
        return mtk_nn_multihead_attention(ctx, arg_int(c, 0, "embed_dim", 0), arg_int(c, 1, "num_heads", 0), &o);
    }
    if (!strcmp(n, "TransformerEncoderLayer")) {
        mtk_transformer_options o = mtk_transformer_defaults();
        o.dim_feedforward = arg_int(c, 2, "dim_feedforward", 2048);
        o.dropout = arg_float(c, 3, "dropout", 0.1);
        o.activation = arg_str(c, 4, "activation", "relu");
        o.layer_norm_eps = arg_float(c, 5, "layer_norm_eps", 1e-5);
        o.batch_first = arg_bool(c, 6, "batch_first", false);
        o.norm_first = arg_bool(c, 7, "norm_first", false);
        o.bias = arg_bool(c, 8, "bias", true);
        return mtk_nn_transformer_encoder_layer(ctx, arg_int(c, 0, "d_model", 0), arg_int(c, 1, "nhead", 0), &o);
    }
    return mtk_nn_activation(ctx, n); /* ReLU(), SiLU(), ... */
}

/* ---------------------------------------------------------------- output */

static void print_json_string(const char *s)
{
    putchar('"');
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') printf("\\%c", *s);
        else if (*s == '\n') printf("\\n");
        else if (*s == '\t') printf("\\t");
        else putchar(*s);
    }
    putchar('"');
}

static void print_shape(const mtk_tensor *t)
{
    putchar('[');
    for (int32_t d = 0; d < t->ndim; d++) printf("%s%lld", d ? ", " : "", (long long)t->shape[d]);
    putchar(']');
}

static void print_tensors(mtk_named_tensor *list, int32_t n, bool params)
{
    putchar('[');
    for (int32_t i = 0; i < n; i++) {
        printf("%s[", i ? ", " : "");
        print_json_string(list[i].name);
        printf(", ");
        if (list[i].tensor->flags & MTK_TENSOR_LAZY) printf("null");
        else print_shape(list[i].tensor);
        printf(", \"%s\", %s]", mtk_dtype_name(list[i].tensor->dtype),
               params ? ((list[i].tensor->flags & MTK_TENSOR_REQUIRES_GRAD) ? "true" : "false")
                      : (list[i].persistent ? "true" : "false"));
    }
    putchar(']');
}

/* mean, std (population), min, max over a cpu tensor's elements. */
static void print_stats(mtk_ctx *ctx, mtk_named_tensor *list, int32_t n)
{
    printf("{");
    int printed = 0;
    for (int32_t i = 0; i < n; i++) {
        mtk_tensor *t = mtk_to_dtype(ctx, mtk_contiguous(ctx, list[i].tensor), MTK_FLOAT64);
        if (!t || !mtk_tensor_data(t) || !mtk_dtype_is_floating(list[i].tensor->dtype)) continue;
        const double *x = mtk_tensor_data(t);
        int64_t count = mtk_tensor_numel(t);
        double sum = 0, sq = 0, lo = INFINITY, hi = -INFINITY;
        for (int64_t k = 0; k < count; k++) {
            sum += x[k];
            lo = x[k] < lo ? x[k] : lo;
            hi = x[k] > hi ? x[k] : hi;
        }
        double mean = count ? sum / (double)count : 0;
        for (int64_t k = 0; k < count; k++) sq += (x[k] - mean) * (x[k] - mean);
        printf("%s", printed++ ? ", " : "");
        print_json_string(list[i].name);
        printf(": [%.9g, %.9g, %.9g, %.9g]", mean, count ? sqrt(sq / (double)count) : 0, lo, hi);
    }
    printf("}");
}

static bool parse_inputs(mtk_ctx *ctx, char *text, mtk_tensor **inputs, int32_t *n)
{
    *n = 0;
    for (char *part = strtok(text, ";"); part; part = strtok(NULL, ";")) {
        while (isspace((unsigned char)*part)) part++;
        if (!*part) continue;
        mtk_dtype dtype = mtk_ctx_dtype(ctx);
        char *colon = strchr(part, ':');
        if (colon) {
            *colon = '\0';
            char *name = colon + 1;
            name[strcspn(name, " \t\r\n")] = '\0';
            dtype = mtk_dtype_from_name(name);
        }
        parser ps = { .p = part };
        value v;
        if (!parse_value(&ps, &v) || v.kind != V_TUPLE || *n == MTK_MODULE_MAX_IO) return false;
        inputs[(*n)++] = mtk_zeros(ctx, v.items, v.nitems, dtype); /* meta or cpu: the default device */
    }
    return true;
}

static void probe(char *line)
{
    char *bar1 = strchr(line, '|');
    char *bar2 = bar1 ? strchr(bar1 + 1, '|') : NULL;
    if (!bar2) {
        printf("{\"error\": \"bad probe line\"}\n");
        return;
    }
    *bar1 = *bar2 = '\0';
    char *mode = bar2 + 1;
    while (isspace((unsigned char)*mode)) mode++;
    mode[strcspn(mode, " \n\r")] = '\0';
    bool init = starts(mode, "init:");
    call c = { .nargs = 0 };
    parser ps = { .p = line };
    mtk_ctx *ctx = mtk_ctx_new();
    if (init) mtk_ctx_manual_seed(ctx, strtoull(mode + 5, NULL, 10));
    else mtk_ctx_push_device(ctx, MTK_DEVICE_META);
    mtk_module *m = parse_call(&ps, &c) ? build(ctx, &c) : NULL;
    mtk_tensor *inputs[MTK_MODULE_MAX_IO];
    int32_t ninputs = 0;
    if (!m) {
        printf("{\"error\": ");
        print_json_string(ps.err[0] ? ps.err : mtk_ctx_message(ctx));
        printf("}\n");
        goto done;
    }
    printf("{\"repr\": ");
    print_json_string(mtk_module_repr(m));
    bool have_inputs = parse_inputs(ctx, bar1 + 1, inputs, &ninputs) && ninputs > 0;
    mtk_module_io io = { .nin = ninputs };
    int64_t flops = 0;
    bool ran = false;
    if (have_inputs) {
        memcpy(io.in, inputs, sizeof io.in);
        mtk_trace *tr = mtk_trace_begin(m);
        ran = mtk_module_call(m, &io);
        flops = mtk_trace_flops(tr);
        mtk_trace_end(tr);
    }
    if (have_inputs) {
        printf(", \"outputs\": ");
        if (ran) {
            putchar('[');
            for (int32_t i = 0; i < io.nout; i++) {
                if (i) printf(", ");
                print_shape(io.out[i]);
            }
            printf("], \"flops\": %lld", (long long)flops);
        } else {
            printf("null, \"forward_error\": ");
            print_json_string(mtk_ctx_message(ctx));
            mtk_ctx_clear_error(ctx);
        }
    }
    printf(", \"type\": \"%s\"", mtk_module_type_name(m)); /* after the forward: lazy ones changed */
    mtk_named_tensor *params, *buffers;
    int32_t np = mtk_module_named_parameters(m, &params), nb = mtk_module_named_buffers(m, &buffers);
    printf(", \"params\": ");
    print_tensors(params, np, true);
    printf(", \"buffers\": ");
    print_tensors(buffers, nb, false);
    mtk_state_dict *sd = mtk_module_state_dict(m);
    printf(", \"state_dict\": [");
    for (int32_t i = 0; i < mtk_state_dict_count(sd); i++) {
        const char *name;
        mtk_state_dict_at(sd, i, &name);
        printf("%s", i ? ", " : "");
        print_json_string(name);
    }
    mtk_param_stats st;
    mtk_module_param_stats(m, &st);
    printf("], \"num_params\": %lld, \"uninitialized\": %d", (long long)st.total, (int)st.uninitialized);
    if (init) {
        printf(", \"stats\": ");
        print_stats(ctx, params, np);
        printf(", \"buffer_stats\": ");
        print_stats(ctx, buffers, nb);
    }
    printf("}\n");
done:
    free_call(&c);
    mtk_ctx_free(ctx);
}

int main(void)
{
    char line[4096];
    while (fgets(line, sizeof line, stdin)) {
        if (line[0] == '\n' || line[0] == '#') continue;
        probe(line);
        fflush(stdout);
    }
    return 0;
}
