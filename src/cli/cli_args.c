/* Error printing and option parsing shared by every command. */
#include "cli/cli.h"
#include "mtk/io.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void cli_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("mtk: error: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

int cli_usage_error(const char *command, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("mtk: error: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    if (command) fprintf(stderr, "Try 'mtk %s --help'.\n", command);
    else fputs("Try 'mtk --help'.\n", stderr);
    return CLI_EXIT_USAGE;
}

void cli_options_reset(void)
{
    optind = 0; /* GNU getopt: 0 re-initializes, including permutation state */
    opterr = 0; /* errors are ours to print */
}

int cli_getopt(const char *command, int argc, char **argv, const char *shortopts,
               const struct option *longopts)
{
    char spec[64];
    snprintf(spec, sizeof spec, ":%s", shortopts); /* ':' reports missing arguments apart */
    int opt = getopt_long(argc, argv, spec, longopts, NULL);
    if (opt != '?' && opt != ':') return opt;
    const char *arg = optind > 0 && optind <= argc ? argv[optind - 1] : "";
    if (opt == ':') {
        cli_usage_error(command, "option '%s' requires an argument", arg);
    } else if (optopt && arg[0] == '-' && arg[1] != '-') {
        if (isdigit(optopt) || optopt == '.')
            cli_usage_error(command,
                            "unrecognized option '-%c' (an expression that starts with '-' goes "
                            "after '--': mtk %s -- %s)",
                            optopt, command ? command : "", arg);
        else
            cli_usage_error(command, "unrecognized option '-%c'", optopt);
    } else if (optopt && strchr(arg, '=') && arg[0] == '-' && arg[1] == '-') {
        cli_usage_error(command, "option '%.*s' does not take an argument",
                        (int)(strchr(arg, '=') - arg), arg);
    } else {
        cli_usage_error(command, "unrecognized option '%s'", arg);
    }
    return '?';
}

int cli_json_help_options(const char *command, int argc, char **argv, const char *usage, bool *json)
{
    static const struct option longopts[] = {
        { "json", no_argument, NULL, 'j' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    int opt;
    *json = false;
    cli_options_reset();
    while ((opt = cli_getopt(command, argc, argv, "jh", longopts)) != -1) {
        switch (opt) {
        case 'j': *json = true; break;
        case 'h': fputs(usage, stdout); return CLI_EXIT_OK;
        default: return CLI_EXIT_USAGE;
        }
    }
    return -1;
}

mtk_dtype cli_dtype_from_name(const char *text)
{
    mtk_dtype d = mtk_dtype_from_name(text);
    return d != MTK_DTYPE_UNDEFINED ? d : mtk_st_dtype_to_mtk(mtk_st_dtype_from_name(text));
}

mtk_dtype cli_parse_floating_dtype(const char *command, const char *option, const char *text)
{
    mtk_dtype d = cli_dtype_from_name(text);
    if (mtk_dtype_is_floating(d)) return d;
    char names[256] = "";
    size_t len = 0;
    for (int i = 0; i < MTK_DTYPE_COUNT && len < sizeof names; i++)
        if (mtk_dtype_is_floating((mtk_dtype)i))
            len += (size_t)snprintf(names + len, sizeof names - len, "%s%s", len ? ", " : "",
                                    mtk_dtype_name((mtk_dtype)i));
    cli_usage_error(command, "%s '%s' is not a floating-point dtype (%s)", option, text, names);
    return MTK_DTYPE_UNDEFINED;
}

/* A size as `convert --max-shard-size` reads it (mtk_parse_size: "80GiB",
 * "80GB", "1.5TiB", "1024"); "0" too where zero is allowed (--set). */
bool cli_parse_bytes(const char *text, int64_t *out)
{
    uint64_t bytes;
    if (!mtk_parse_size(text, &bytes)) {
        char *end;
        errno = 0;
        long long zero = strtoll(text, &end, 10);
        if (errno || end == text || *end || zero != 0) return false;
        bytes = 0;
    }
    if (bytes > (uint64_t)INT64_MAX) return false;
    *out = (int64_t)bytes;
    return true;
}

bool cli_parse_input(const char *text, int64_t *batch, int64_t *seq)
{
    char *end;
    errno = 0;
    long long b = strtoll(text, &end, 10);
    if (errno || end == text || (*end != 'x' && *end != 'X' && *end != ',')) return false;
    const char *rest = end + 1;
    long long s = strtoll(rest, &end, 10);
    if (errno || end == rest || *end || b < 1 || s < 1 || b > (1LL << 40) || s > (1LL << 40)) return false;
    *batch = b;
    *seq = s;
    return true;
}
