/* Error printing and option parsing shared by every command. */
#include "cli/cli.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
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
