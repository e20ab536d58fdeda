/* Confining files to a directory by their real paths (see fs_confine.h). */
#include "core/fs_confine.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* True when `path` is `dir` or below it (both real paths). */
static bool inside(const char *path, const char *dir)
{
    size_t n = strlen(dir);
    if (n == 0 || strncmp(path, dir, n) != 0) return false;
    return path[n] == '/' || (n == 1 && dir[0] == '/');
}

/* <repo>/blobs when `real` is <repo>/snapshots/<revision>, else "". */
static void hub_blobs(const char *real, char *blobs)
{
    blobs[0] = '\0';
    const char *rev = strrchr(real, '/');
    if (!rev || rev == real) return;
    const char *snap = rev - 1;
    while (snap > real && *snap != '/') snap--;
    if ((size_t)(rev - snap) != strlen("/snapshots") || strncmp(snap, "/snapshots", strlen("/snapshots")) != 0) return;
    snprintf(blobs, PATH_MAX, "%.*s/blobs", (int)(snap - real), real);
}

bool fs_root_init(mtk_ctx *ctx, fs_root *root, const char *dir)
{
    if (!realpath(dir, root->real))
        return mtk_error(ctx, MTK_ERR_IO, "%s: cannot open the directory: %s", dir, strerror(errno));
    hub_blobs(root->real, root->blobs);
    return true;
}

bool fs_root_of_file(mtk_ctx *ctx, fs_root *root, const char *path)
{
    const char *slash = strrchr(path, '/');
    char dir[PATH_MAX];
    if (!slash) snprintf(dir, sizeof dir, ".");
    else if (slash == path) snprintf(dir, sizeof dir, "/");
    else if ((size_t)(slash - path) >= sizeof dir)
        return mtk_error(ctx, MTK_ERR_IO, "%s: the path is too long", path);
    else snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
    return fs_root_init(ctx, root, dir);
}

bool fs_confined(mtk_ctx *ctx, const fs_root *root, const char *path, char *resolved)
{
    if (!realpath(path, resolved)) return mtk_error(ctx, MTK_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    if (inside(resolved, root->real) || (root->blobs[0] && inside(resolved, root->blobs))) return true;
    return mtk_error(ctx, MTK_ERR_IO,
                     "%s: refusing to open it: it resolves to %s, outside the directory %s (mtk opens only files "
                     "inside a checkpoint or model directory; give the file itself to open it)",
                     path, resolved, root->real);
}
