/* mtk eval: evaluates expressions of the eval language (include/mtk/eval.h)
 * and prints PyTorch's repr, or JSON; --batch evaluates one expression
 * per line. */
#include "cli/cli.h"
#include "mtk/mtk.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char usage[] =
    "usage: mtk eval [--device meta|cpu] [--json [--values]] [--flops] EXPR...\n"
    "       mtk eval [--device meta|cpu] [--values] [--flops] --batch FILE|-\n"
    "\n"
    "Evaluates a PyTorch expression and prints the result as PyTorch prints it.\n"
    "Several EXPR arguments are joined with spaces.\n"
    "\n"
    "  mtk eval 'matmul(f32[3,4], f32[4,5])'\n"
    "  mtk eval 'torch.zeros(2, 3, dtype=torch.float16).transpose(0, 1)'\n"
    "  mtk eval --device cpu --json --values 'arange(6.).view(2, 3)'\n"
    "\n"
    "The language is a subset of Python expressions: tensor literals\n"
    "DTYPE[sizes] (f32[3,4], bf16[], i64[2,0]; dtypes f32 f16 bf16 f64 i64 i32\n"
    "i16 i8 u8 bool or long names such as float32), op calls with PyTorch's\n"
    "names and arguments (torch., F. and torch.nn.functional. prefixes are\n"
    "accepted; 'mtk ops' lists the ops), method calls x.view(3, 4), ints,\n"
    "floats, True/False, None, strings, lists, tuples, dtypes (torch.float16),\n"
    "layouts (torch.strided); Python's operators with its precedence:\n"
    "@ + - * / // % ** & | ^ << >>, comparisons (< <= > >= == !=), unary - + ~;\n"
    "attributes x.shape x.dtype x.device x.ndim x.nbytes x.itemsize x.T x.mT and\n"
    "the methods x.size() x.size(d) x.stride() x.numel() x.dim() x.element_size()\n"
    "x.storage_offset() x.is_contiguous(); indexing as torch's x[0, 1:3],\n"
    "x[..., None], x[:, ::2] (views) and x.shape[-1].  Non-tensor results print\n"
    "as Python prints them: torch.Size([3, 4]), 12, (4, 1).\n"
    "\n"
    "Limits, each refused with an error naming it: an expression (a --batch\n"
    "line) of at most 1048576 bytes, 256 levels of nesting (brackets, calls,\n"
    "operators, methods, indexing), 65536 items in one list, tuple, call or\n"
    "subscript, string literals of 4096 bytes, cpu tensor literals of 2^28\n"
    "elements; an op returns at most 65536 tensors (split, unbind, ...);\n"
    "--values writes at most 1048576 elements.\n"
    "\n"
    "options:\n"
    "  -d, --device DEV   device of tensor literals and creation ops: meta\n"
    "                     (the default: shapes only, no data) or cpu (real,\n"
    "                     zero-filled literals; the ops' cpu kernels run)\n"
    "  -j, --json         print one JSON document: {\"shape\", \"dtype\",\n"
    "                     \"stride\", \"storage_offset\", \"device\"} for a tensor,\n"
    "                     an array for a tuple or list, {\"scalar\": v} for a\n"
    "                     number, {\"error\": {\"code\", \"message\"}} on an error\n"
    "      --values       with JSON, add \"values\" (flattened) to cpu tensors\n"
    "      --flops        also count what the expression's ops cost: FLOPs as\n"
    "                     torch.utils.flop_counter.FlopCounterMode counts them\n"
    "                     (matmuls, convolutions, attention) and elements that\n"
    "                     element-wise ops produce; printed after the result, or\n"
    "                     in JSON as {\"value\": RESULT, \"flops\": N,\n"
    "                     \"elementwise\": M} (errors stay {\"error\": ...})\n"
    "  -b, --batch FILE   evaluate each line of FILE ('-': standard input) and\n"
    "                     print one JSON line per input line, in order, going\n"
    "                     on after errors; a blank line is an error line\n"
    "                     (\"empty expression\"); every line runs in a fresh\n"
    "                     context; a line is at most MTK_EVAL_MAX_TEXT bytes\n"
    "  -h, --help         show this help and exit\n"
    "\n"
    "Errors go to stderr as 'mtk: error: ...' (in JSON mode, as the JSON\n"
    "document on stdout).  Exit status: 0 on success (with --batch: every line\n"
    "succeeded), 1 on an evaluation error (with --batch: any line failed), 2 on\n"
    "a usage error.\n";

typedef struct eval_options {
    mtk_device device;
    bool json;
    bool flops;
    uint32_t json_flags;
} eval_options;

/* The cost of every op an expression ran (--flops). */
typedef struct cost_total {
    int64_t flops, elementwise;
} cost_total;

static void add_cost(void *user, const mtk_op_call *call)
{
    cost_total *total = user;
    if (!call->op->cost) return;
    mtk_op_cost cost = call->op->cost(call);
    total->flops += cost.flops;
    total->elementwise += cost.elementwise;
}

/* A context with the eval device's scope pushed (and the cost counter
 * when --flops); NULL on out of memory. */
static mtk_ctx *new_context(const eval_options *opts, cost_total *total)
{
    mtk_ctx *ctx = mtk_ctx_new();
    if (ctx && !mtk_ctx_push_device(ctx, opts->device)) {
        mtk_ctx_free(ctx);
        return NULL;
    }
    *total = (cost_total){ 0, 0 };
    if (ctx && opts->flops) mtk_ctx_set_op_hook(ctx, add_cost, total);
    return ctx;
}

/* Prints a successful result: `out` (repr or JSON), with the cost when
 * --flops (JSON: wrapped as {"value", "flops", "elementwise"}). */
static void print_result(const eval_options *opts, bool json, const char *out, const cost_total *total)
{
    if (!opts->flops) fputs(out, stdout);
    else if (json)
        printf("{\"value\":%s,\"flops\":%lld,\"elementwise\":%lld}", out, (long long)total->flops,
               (long long)total->elementwise);
    else printf("%s\nflops: %lld  elementwise: %lld", out, (long long)total->flops, (long long)total->elementwise);
    fputc('\n', stdout);
}

static const char oom_json[] = "{\"error\":{\"code\":\"out_of_memory\",\"message\":\"out of memory\"}}";

/* Shows where in `expr` an error was found: the text (a window of it when
 * long) and a caret under the column. */
static void show_position(const char *expr, size_t len, int32_t column)
{
    if (column < 1 || (size_t)column > len + 1) return;
    size_t at = (size_t)column - 1;
    size_t from = at > 60 ? at - 60 : 0;
    size_t to = len - at > 60 ? at + 60 : len;
    fputs("  ", stderr);
    if (from > 0) fputs("...", stderr);
    for (size_t i = from; i < to; i++) {
        unsigned char c = (unsigned char)expr[i];
        fputc(c < 0x20 || c == 0x7f ? ' ' : c, stderr);
    }
    if (to < len) fputs("...", stderr);
    fputs("\n  ", stderr);
    size_t indent = (from > 0 ? 3 : 0) + (at - from);
    for (size_t i = 0; i < indent; i++) fputc(' ', stderr);
    fputs("^\n", stderr);
}

/* mtk eval EXPR: one expression, text or JSON. */
static int eval_one(const eval_options *opts, const char *expr)
{
    cost_total total;
    mtk_ctx *ctx = new_context(opts, &total);
    if (!ctx) {
        if (opts->json) puts(oom_json);
        else cli_error("out of memory");
        return CLI_EXIT_ERROR;
    }
    size_t len = strlen(expr);
    mtk_value result;
    int32_t column;
    bool ok = mtk_eval_text(ctx, expr, len, &result, &column);
    char *out = NULL;
    if (ok) {
        out = opts->json ? mtk_value_to_json(ctx, &result, opts->json_flags) : mtk_value_repr(ctx, &result);
        ok = out != NULL;
    }
    if (ok) {
        print_result(opts, opts->json, out, &total);
    } else if (opts->json) {
        char *error = mtk_error_to_json(ctx);
        puts(error ? error : oom_json);
    } else {
        cli_error("%s", mtk_ctx_message(ctx));
        if (mtk_ctx_status(ctx) == MTK_ERR_SYNTAX || column > 1) show_position(expr, len, column);
    }
    mtk_ctx_free(ctx);
    return ok ? CLI_EXIT_OK : CLI_EXIT_ERROR;
}

/* One batch line: one JSON line out.  Returns whether it succeeded. */
static bool batch_line(const eval_options *opts, const char *line, size_t len)
{
    if (len > 0 && line[len - 1] == '\r') len--;
    cost_total total;
    mtk_ctx *ctx = new_context(opts, &total);
    if (!ctx) {
        puts(oom_json);
        return false;
    }
    mtk_value result;
    bool ok = mtk_eval_text(ctx, line, len, &result, NULL);
    char *out = ok ? mtk_value_to_json(ctx, &result, opts->json_flags) : NULL;
    if (out) {
        print_result(opts, true, out, &total);
    } else {
        ok = false;
        out = mtk_error_to_json(ctx);
        puts(out ? out : oom_json);
    }
    mtk_ctx_free(ctx);
    return ok;
}

/* The answer to a line longer than MTK_EVAL_MAX_TEXT (its bytes are
 * skipped, never buffered). */
static void batch_line_too_long(void)
{
    printf("{\"error\":{\"code\":\"invalid_argument\",\"message\":\"line longer than mtk eval's "
           "limit of %d bytes (MTK_EVAL_MAX_TEXT)\"}}\n",
           MTK_EVAL_MAX_TEXT);
}

/* mtk eval --batch FILE: reads with read(2) into a buffer, so that output
 * is flushed exactly when more input must be waited for (a program that
 * writes a line and reads the answer never deadlocks).  The buffer grows
 * to MTK_EVAL_MAX_TEXT and no more: a longer line is answered with an
 * error and skipped up to its newline. */
static int eval_batch(const eval_options *opts, const char *path)
{
    int fd = strcmp(path, "-") == 0 ? STDIN_FILENO : open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        cli_error("cannot open '%s': %s", path, strerror(errno));
        return CLI_EXIT_ERROR;
    }
    static char out_buffer[1 << 16];
    setvbuf(stdout, out_buffer, _IOFBF, sizeof out_buffer);
    size_t cap = 1 << 16, start = 0, end = 0;
    char *buf = malloc(cap);
    bool all_ok = true, eof = false, read_error = false, skipping = false;
    if (!buf) {
        cli_error("out of memory");
        if (fd != STDIN_FILENO) close(fd);
        return CLI_EXIT_ERROR;
    }
    for (;;) {
        char *nl = memchr(buf + start, '\n', end - start);
        if (nl && skipping) {
            skipping = false; /* the end of the long line: drop it */
            start = (size_t)(nl - buf) + 1;
            continue;
        }
        if (nl) {
            all_ok &= batch_line(opts, buf + start, (size_t)(nl - (buf + start)));
            start = (size_t)(nl - buf) + 1;
            continue;
        }
        if (skipping) {
            start = end = 0;
        } else if (end - start > MTK_EVAL_MAX_TEXT) {
            batch_line_too_long();
            all_ok = false;
            skipping = true;
            start = end = 0;
        }
        if (eof) {
            if (start < end) all_ok &= batch_line(opts, buf + start, end - start);
            break;
        }
        /* need more input: keep the partial line, make room, flush, read */
        if (start > 0) {
            memmove(buf, buf + start, end - start);
            end -= start;
            start = 0;
        }
        if (end == cap) { /* cap stays below 2 * MTK_EVAL_MAX_TEXT */
            char *bigger = realloc(buf, cap * 2);
            if (!bigger) {
                cli_error("out of memory reading a line of %zu bytes", end);
                read_error = true;
                break;
            }
            buf = bigger;
            cap *= 2;
        }
        fflush(stdout);
        ssize_t n = read(fd, buf + end, cap - end);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            cli_error("cannot read '%s': %s", path, strerror(errno));
            read_error = true;
            break;
        }
        if (n == 0) eof = true;
        end += (size_t)n;
    }
    free(buf);
    if (fd != STDIN_FILENO) close(fd);
    fflush(stdout);
    return all_ok && !read_error ? CLI_EXIT_OK : CLI_EXIT_ERROR;
}

/* The operands joined with spaces (mtk eval zeros(3, 4) unquoted). */
static char *join_operands(int argc, char **argv, int first)
{
    size_t total = 1;
    for (int i = first; i < argc; i++) total += strlen(argv[i]) + 1;
    char *expr = malloc(total);
    if (!expr) return NULL;
    size_t n = 0;
    for (int i = first; i < argc; i++) {
        if (i > first) expr[n++] = ' ';
        const char *a = argv[i];
        if (a[0] == ' ' && a[1] == '-') a++; /* protect_negative_operands' space */
        size_t k = strlen(a);
        memcpy(expr + n, a, k);
        n += k;
    }
    expr[n] = '\0';
    return expr;
}

/* "-1", "-.5", "-(x)": an expression, not options (getopt would read
 * "-1" as option '1').  Such operands get a leading space, which getopt
 * leaves alone and the expression lexer skips; the copies go in *owned. */
static bool protect_negative_operands(int argc, char **argv, char ***owned)
{
    *owned = calloc((size_t)argc, sizeof **owned);
    if (!*owned) return false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--") == 0) break;
        if (strcmp(a, "-d") == 0 || strcmp(a, "--device") == 0 || strcmp(a, "-b") == 0 ||
            strcmp(a, "--batch") == 0) {
            i++; /* its argument */
            continue;
        }
        if (a[0] != '-' || !(isdigit((unsigned char)a[1]) || a[1] == '.' || a[1] == '(' || a[1] == '['))
            continue;
        size_t n = strlen(a);
        char *copy = malloc(n + 2);
        if (!copy) return false;
        copy[0] = ' ';
        memcpy(copy + 1, a, n + 1);
        (*owned)[i] = argv[i] = copy;
    }
    return true;
}

static void free_owned(int argc, char **owned)
{
    for (int i = 0; owned && i < argc; i++) free(owned[i]);
    free(owned);
}

static int eval_command(int argc, char **argv)
{
    enum { OPT_VALUES = 256, OPT_FLOPS };
    static const struct option longopts[] = {
        { "device", required_argument, NULL, 'd' },
        { "json", no_argument, NULL, 'j' },
        { "values", no_argument, NULL, OPT_VALUES },
        { "flops", no_argument, NULL, OPT_FLOPS },
        { "batch", required_argument, NULL, 'b' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    eval_options opts = { MTK_DEVICE_META, false, false, 0 };
    const char *batch = NULL;
    int opt;
    cli_options_reset();
    while ((opt = cli_getopt("eval", argc, argv, "d:jb:h", longopts)) != -1) {
        switch (opt) {
        case 'd':
            if (strcmp(optarg, "meta") == 0) opts.device = MTK_DEVICE_META;
            else if (strcmp(optarg, "cpu") == 0) opts.device = MTK_DEVICE_CPU;
            else return cli_usage_error("eval", "--device must be meta or cpu, not '%s'", optarg);
            break;
        case 'j': opts.json = true; break;
        case OPT_VALUES: opts.json_flags |= MTK_JSON_VALUES; break;
        case OPT_FLOPS: opts.flops = true; break;
        case 'b': batch = optarg; break;
        case 'h': fputs(usage, stdout); return CLI_EXIT_OK;
        default: return CLI_EXIT_USAGE;
        }
    }
    if (batch) {
        if (optind < argc)
            return cli_usage_error("eval", "--batch reads expressions from FILE; got an EXPR too ('%s')",
                                   argv[optind]);
        return eval_batch(&opts, batch);
    }
    if (optind >= argc) return cli_usage_error("eval", "missing EXPR (or --batch FILE)");
    char *expr = join_operands(argc, argv, optind);
    if (!expr) {
        cli_error("out of memory");
        return CLI_EXIT_ERROR;
    }
    int status = eval_one(&opts, expr);
    free(expr);
    return status;
}

int cli_eval(int argc, char **argv)
{
    char **owned = NULL;
    int status;
    if (!protect_negative_operands(argc, argv, &owned)) {
        free_owned(argc, owned);
        cli_error("out of memory");
        return CLI_EXIT_ERROR;
    }
    status = eval_command(argc, argv);
    free_owned(argc, owned);
    return status;
}
