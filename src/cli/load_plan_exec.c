/* mtk load --plan in mtk itself: executes mtk-mpi, the same command
 * linked with OpenMPI (src/cli/mpi/), from mtk's own directory, in place
 * of this process, so that mpirun's rank keeps its pid and environment.
 * mtk itself never loads OpenMPI's libraries (load_plan.h says why). */
#include "cli/cli.h"
#include "cli/load_plan.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define HELPER "mtk-mpi"

int plan_load_run(const plan_load_args *args)
{
    char self[PATH_MAX], helper[PATH_MAX + sizeof HELPER];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) return cli_fail(args->json, "io", NULL, "load: --plan: cannot find mtk's own path: %s", strerror(errno));
    self[n] = '\0';
    char *slash = strrchr(self, '/');
    if (slash) slash[1] = '\0';
    snprintf(helper, sizeof helper, "%s%s", slash ? self : "", HELPER);
    int argc = 0;
    while (args->argv[argc]) argc++;
    char **argv = calloc((size_t)argc + 2, sizeof *argv); /* mtk-mpi load ARGS... NULL */
    if (!argv) return cli_fail(args->json, "out_of_memory", NULL, "out of memory");
    argv[0] = helper;
    memcpy(argv + 1, args->argv, sizeof *argv * (size_t)argc);
    execv(helper, argv);
    int err = errno;
    free(argv);
    return cli_fail(args->json, "io", NULL,
                    "load: --plan runs %s, the MPI build of this command, which cannot run: %s (it is built and "
                    "installed next to mtk)", helper, strerror(err));
}
