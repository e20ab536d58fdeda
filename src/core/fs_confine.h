/* Confining the files a directory leads to (internal).  A checkpoint
 * directory, an index's directory or a model directory names files by
 * relative names; each is opened only when its real path (symbolic links
 * and ".." resolved) lies inside the directory's real path, so that a
 * link such as `x.safetensors -> /etc/passwd` is refused with an error
 * naming it.
 *
 * One exception keeps the Hugging Face hub cache working: in
 * `<repo>/snapshots/<revision>/` every file is a link to
 * `<repo>/blobs/<hash>`, so a directory whose parent is named "snapshots"
 * also reaches the `blobs` directory beside that parent.
 *
 * The check is done on the path before it is opened: a directory being
 * changed while it is read (a link swapped in between) is not covered;
 * the final component is opened with O_NOFOLLOW. */
#ifndef MTK_CORE_FS_CONFINE_H
#define MTK_CORE_FS_CONFINE_H

#include "mtk/core.h"

#include <limits.h>
#include <stdbool.h>

typedef struct fs_root {
    char real[PATH_MAX];  /* the directory's real path                     */
    char blobs[PATH_MAX]; /* <repo>/blobs for a hub snapshot, else ""      */
} fs_root;

/* The root of directory `dir`; MTK_ERR_IO naming it when it cannot be
 * resolved. */
bool fs_root_init(mtk_ctx *ctx, fs_root *root, const char *dir);

/* The root of the directory holding the file `path` ("." without a
 * slash). */
bool fs_root_of_file(mtk_ctx *ctx, fs_root *root, const char *path);

/* Resolves `path` (a file named inside the root) into `resolved`
 * (PATH_MAX bytes).  Errors (false): MTK_ERR_IO "PATH: cannot open: ..."
 * when it does not resolve, MTK_ERR_IO naming the path, its target and
 * the directory when it lies outside. */
bool fs_confined(mtk_ctx *ctx, const fs_root *root, const char *path, char *resolved);

#endif
