/* Shared pieces of the `mtk` command line: the command table's entry
 * points, exit statuses, error printing and option parsing. */
#ifndef MTK_CLI_H
#define MTK_CLI_H

#include "mtk/core.h"
#include "mtk/run.h"
#include "mtk/stream.h"

#include <cjson/cJSON.h>
#include <getopt.h>
#include <stdbool.h>

/* Exit statuses of every command. */
#define CLI_EXIT_OK 0
#define CLI_EXIT_ERROR 1 /* the command ran and failed          */
#define CLI_EXIT_USAGE 2 /* bad options or arguments            */

/* Each command's entry point: argv[0] is the command's name ("eval"),
 * the rest its arguments; returns the exit status. */
#define MTK_CLI_COMMAND(name, summary) int cli_##name(int argc, char **argv);
#include "cli/commands.h"
#undef MTK_CLI_COMMAND

/* Prints "mtk: error: <message>" and a newline to stderr. */
void cli_error(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;

/* Prints a usage error ("mtk: error: <message>", then "Try 'mtk
 * <command> --help'.") to stderr and returns CLI_EXIT_USAGE.  `command`
 * NULL means mtk itself. */
int cli_usage_error(const char *command, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* A command's failure, in the one shape every command uses.  With `json`:
 * {"error":{"code":CODE,"message":MESSAGE,...}} on one line to stdout, the
 * members of `details` (a cJSON object, or NULL) added to the error
 * object (mtk load's missing / unexpected / mismatched keys); without:
 * "mtk: error: MESSAGE" to stderr.  `code` is a snake_case name
 * (mtk_status_name's, or a command's own such as "key_mismatch").  Takes
 * `details`.  Returns CLI_EXIT_ERROR. */
int cli_fail(bool json, const char *code, cJSON *details, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

/* cli_fail with the context's sticky error (its status name and message). */
int cli_fail_ctx(bool json, mtk_ctx *ctx);

/* A dtype by any of mtk's names (float32, f32, torch.float32, half) or
 * safetensors' (F32, BF16, F8_E4M3); MTK_DTYPE_UNDEFINED when unknown.
 * Every command reads dtype names through this. */
mtk_dtype cli_dtype_from_name(const char *text);

/* The value of a floating-dtype option (`option`, e.g. "--dtype") of
 * `command`: float16, bfloat16, float32, float64, float8_e4m3fn,
 * float8_e5m2 by any name cli_dtype_from_name knows.  Returns it, or
 * MTK_DTYPE_UNDEFINED after printing a usage error that lists them. */
mtk_dtype cli_parse_floating_dtype(const char *command, const char *option, const char *text);

/* Starts option parsing of a new argv (resets getopt's state). */
void cli_options_reset(void);

/* getopt_long over argv for `command`, with GNU argument permutation
 * (options may follow operands; "--" ends options).  Returns the option's
 * value, -1 at the end of options (optind then indexes the first
 * operand), or '?' after printing a usage error for an unknown option or
 * a missing option argument (the caller returns CLI_EXIT_USAGE). */
int cli_getopt(const char *command, int argc, char **argv, const char *shortopts,
               const struct option *longopts);

/* Parses the options of a command whose only options are --json (-j) and
 * --help (-h): sets *json, prints `usage` for --help.  Returns -1 to go on
 * (optind then indexes the first operand), else the exit status to return
 * (CLI_EXIT_OK after --help, CLI_EXIT_USAGE after a usage error). */
int cli_json_help_options(const char *command, int argc, char **argv, const char *usage, bool *json);

/* A size as mtk_parse_size reads it ("80GiB", "80GB", "1.5TiB",
 * "1024"), or "0"; false for anything else or past INT64_MAX. */
bool cli_parse_bytes(const char *text, int64_t *out);

/* An input shape "BxS" (or "B,S") with 1 <= B, S <= 2^40. */
bool cli_parse_input(const char *text, int64_t *batch, int64_t *seq);

/* Token ids (or an attention mask, token types) given to a command as
 * "1,2,3;4,5,6" (one row per sequence, ',' between values, ';' between
 * rows), a .safetensors file (the tensor named `what`, else its only
 * tensor) or a .npy file (integers or bool; 1-D is one row).  `what`
 * names the option in messages ("input-ids") and the tensor looked up
 * ("input_ids": '-' read as '_').  Returns an int64 (B, S) cpu tensor in
 * ctx, or NULL with the context's error set, its message starting with
 * "--<what>: " (ragged rows name each row's length), for the caller to
 * print as text or JSON (cli_fail_ctx). */
mtk_tensor *cli_ids_read(mtk_ctx *ctx, const char *spec, const char *what);

/* For commands that write files: on SIGINT, SIGTERM or SIGHUP, a thread
 * removes the temporaries of the writes in progress and the process dies
 * of the signal.  False (nothing changed) if the thread cannot start. */
bool cli_remove_temporaries_on_interrupt(void);

/* Token ids or a mask of `mtk run` / `mtk generate`: `spec` is the text
 * "1,2,3;4,5,6" (rows separated by ';', ids by ',', every row as long).
 * Returns a new int64 (rows, cols) cpu tensor in `ctx`, NULL after setting
 * the context's error (MTK_ERR_INVALID_ARGUMENT naming `what`, e.g.
 * "--input-ids", and the offending text). */
mtk_tensor *cli_ids_read(mtk_ctx *ctx, const char *spec, const char *what);

/* --max-ram's report: NULL stream gives JSON null / no line.  The text
 * line starts with "  stream:". */
cJSON *cli_stream_json(const mtk_stream *stream);
void cli_stream_text(const mtk_stream *stream);

/* A tensor from a file given to a command: a .safetensors file (the
 * tensor `name`, else its only tensor) or a .npy file (any rank, integers,
 * bool or floats), as stored (no conversion).  NULL with the context's
 * error, its message starting with "--<what>: ". */
mtk_tensor *cli_tensor_read(mtk_ctx *ctx, const char *path, const char *name, const char *what);

/* `mtk run` of a diffusers component (cli_run_component.c): the options
 * cli_run parsed, the --input specs as given. */
typedef struct cli_component_run {
    const char *model, *weights, *output, *method;
    const char *const *inputs; /* "NAME=VALUE" or "FILE.safetensors" */
    int32_t ninputs;
    mtk_dtype dtype;           /* MTK_DTYPE_UNDEFINED: the config's   */
    int32_t threads;
    uint64_t seed;             /* of the randn:SHAPE inputs           */
    bool json;
    bool list;                 /* --list-inputs: print the arguments  */
} cli_component_run;

/* Loads the component, reads its inputs, runs it (mtk_component_run),
 * writes and reports the outputs; with `list`, prints the call's
 * arguments (the model built on meta, no weights).  Returns the exit
 * status. */
int cli_run_component(mtk_ctx *ctx, const cli_component_run *a);

/* Writes a run's outputs to the safetensors file `path` under their names
 * (cli_run.c; both forms of `mtk run`).  False with the context's error;
 * nothing is left at `path` on failure. */
bool cli_run_write_outputs(mtk_ctx *ctx, const mtk_model_outputs *out, const char *path);

#endif
