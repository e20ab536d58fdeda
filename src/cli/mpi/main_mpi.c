/* mtk-mpi: `mtk load --plan` linked with OpenMPI (load_plan_mpi.c),
 * executed by mtk in place of itself (load_plan_exec.c) with the load
 * command's arguments: mtk-mpi load MODEL --weights PATH --plan PLAN... */
#include "cli/cli.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "load") != 0) {
        cli_error("mtk-mpi runs `load --plan` for mtk: run mpirun -np N mtk load MODEL --weights PATH --plan PLAN");
        return CLI_EXIT_USAGE;
    }
    int status = cli_load(argc - 1, argv + 1);
    if (fflush(stdout) != 0 || ferror(stdout)) {
        cli_error("cannot write the output: %s", strerror(errno));
        return CLI_EXIT_ERROR;
    }
    return status;
}
