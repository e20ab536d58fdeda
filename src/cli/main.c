/* mtk: the command line.  Global options and dispatch to the subcommands
 * of the command table (cli/commands.h). */
#include "cli/cli.h"
#include "mtk/mtk.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

typedef struct cli_command {
    const char *name;
    const char *summary;
    int (*run)(int argc, char **argv);
} cli_command;

static const cli_command commands[] = {
#define MTK_CLI_COMMAND(name, summary) { #name, summary, cli_##name },
#include "cli/commands.h"
#undef MTK_CLI_COMMAND
};
#define COMMAND_COUNT (sizeof commands / sizeof commands[0])

static void print_usage(FILE *out)
{
    fputs("usage: mtk [--help] [--version] COMMAND [ARGS...]\n"
          "\n"
          "mtk (meta tensor kit): tensors and models without their data.\n"
          "\n"
          "commands:\n",
          out);
    for (size_t i = 0; i < COMMAND_COUNT; i++)
        fprintf(out, "  %-8s %s\n", commands[i].name, commands[i].summary);
    fprintf(out, "  %-8s %s\n", "help", "show the help of a command");
    fputs("\n"
          "options:\n"
          "  -h, --help     show this help and exit\n"
          "  -V, --version  show mtk's version and exit\n"
          "\n"
          "Run 'mtk help COMMAND' or 'mtk COMMAND --help' for a command's options.\n"
          "Exit status: 0 on success, 1 on an error, 2 on a usage error.\n",
          out);
}

/* "eval, ops, help" for messages. */
static void command_list(char *buf, size_t cap)
{
    size_t n = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < COMMAND_COUNT && n < cap; i++)
        n += (size_t)snprintf(buf + n, cap - n, "%s, ", commands[i].name);
    if (n < cap) snprintf(buf + n, cap - n, "help");
}

static const cli_command *find_command(const char *name)
{
    for (size_t i = 0; i < COMMAND_COUNT; i++)
        if (strcmp(commands[i].name, name) == 0) return &commands[i];
    return NULL;
}

static int unknown_command(const char *name)
{
    char list[256];
    command_list(list, sizeof list);
    return cli_usage_error(NULL, "unknown command '%s' (commands: %s)", name, list);
}

/* mtk help [COMMAND]: the command's --help. */
static int run_help(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "help") == 0) {
        print_usage(stdout);
        return CLI_EXIT_OK;
    }
    if (argc > 2) return cli_usage_error(NULL, "help takes one command name, got %d", argc - 1);
    const cli_command *command = find_command(argv[1]);
    if (!command) return unknown_command(argv[1]);
    char help_flag[] = "--help";
    char *help_argv[] = { argv[1], help_flag, NULL };
    return command->run(2, help_argv);
}

static int dispatch(int argc, char **argv)
{
    if (argc < 2) {
        print_usage(stderr);
        return CLI_EXIT_USAGE;
    }
    const char *first = argv[1];
    if (strcmp(first, "--help") == 0 || strcmp(first, "-h") == 0) {
        print_usage(stdout);
        return CLI_EXIT_OK;
    }
    if (strcmp(first, "--version") == 0 || strcmp(first, "-V") == 0) {
        printf("mtk %s\n", MTK_VERSION_STRING);
        return CLI_EXIT_OK;
    }
    if (strcmp(first, "help") == 0) return run_help(argc - 1, argv + 1);
    if (first[0] == '-') return cli_usage_error(NULL, "unrecognized option '%s'", first);
    const cli_command *command = find_command(first);
    if (!command) return unknown_command(first);
    return command->run(argc - 1, argv + 1);
}

int main(int argc, char **argv)
{
    int status = dispatch(argc, argv);
    if (fflush(stdout) != 0 || ferror(stdout)) {
        cli_error("cannot write the output: %s", strerror(errno));
        return CLI_EXIT_ERROR;
    }
    return status;
}
