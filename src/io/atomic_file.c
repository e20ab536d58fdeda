/* Atomic file replacement: write a temporary file in the target's
 * directory, fsync it, rename it over the target, fsync the directory.
 * A reader sees the old file or the whole new one, never a part.  The
 * temporaries in existence are listed (under a mutex) so that a program
 * being interrupted can remove them (mtk_io_remove_temporaries). */
#include "io_internal.h"

#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

static char *copy_string(mtk_ctx *ctx, const char *s)
{
    size_t len = strlen(s) + 1;
    char *copy = mtk_ctx_malloc(ctx, len);
    if (copy) memcpy(copy, s, len);
    return copy;
}

static pthread_mutex_t live_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_file *live; /* every temporary that exists, newest first */

static void unlist(atomic_file *f) /* with live_lock held */
{
    for (atomic_file **p = &live; *p; p = &(*p)->next_live)
        if (*p == f) {
            *p = f->next_live;
            break;
        }
    f->next_live = NULL;
}

void mtk_io_remove_temporaries(void)
{
    pthread_mutex_lock(&live_lock);
    for (atomic_file *f = live; f; f = f->next_live) (void)unlink(f->tmp_path);
    /* the writes in progress now fail at their rename; nothing is listed */
    for (atomic_file *f = live, *next; f; f = next) {
        next = f->next_live;
        f->next_live = NULL;
    }
    live = NULL;
    pthread_mutex_unlock(&live_lock);
}

bool io_atomic_open(mtk_ctx *ctx, atomic_file *f, const char *path)
{
    static unsigned counter;
    memset(f, 0, sizeof *f);
    f->fd = -1;
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    if (*base == '\0') return mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "%s: not a file name", path);
    size_t dir_len = slash ? (size_t)(slash - path) + 1 : 0;
    size_t cap = strlen(path) + 64;
    f->path = copy_string(ctx, path);
    f->tmp_path = mtk_ctx_malloc(ctx, cap);
    if (!f->path || !f->tmp_path) {
        io_atomic_abandon(ctx, f);
        return false;
    }
    pthread_mutex_lock(&live_lock); /* created and listed at once */
    for (int attempt = 0; attempt < 100; attempt++) {
        /* hidden, so that a directory scan for *.safetensors never sees it */
        snprintf(f->tmp_path, cap, "%.*s.%s.tmp-%ld-%u", (int)dir_len, path, base, (long)getpid(), counter++);
        f->fd = open(f->tmp_path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (f->fd >= 0 || errno != EEXIST) break;
    }
    int open_errno = errno;
    if (f->fd >= 0) {
        f->next_live = live;
        live = f;
    }
    pthread_mutex_unlock(&live_lock);
    errno = open_errno;
    if (f->fd < 0) {
        mtk_error(ctx, MTK_ERR_IO, "%s: cannot create a temporary file next to it: %s", path, strerror(errno));
        mtk_ctx_mfree(ctx, f->tmp_path); /* nothing was created */
        f->tmp_path = NULL;
        io_atomic_abandon(ctx, f);
        return false;
    }
    /* Replacing a file keeps its permission bits (a 0600 checkpoint stays
     * 0600); a new file has 0666 less the umask, as open gave it. */
    struct stat st;
    if (stat(path, &st) == 0 && S_ISREG(st.st_mode) && fchmod(f->fd, st.st_mode & 0777) != 0) {
        mtk_error(ctx, MTK_ERR_IO, "%s: cannot give the new file the mode %03o of the old one: %s", path,
                  (unsigned)(st.st_mode & 0777), strerror(errno));
        io_atomic_abandon(ctx, f);
        return false;
    }
    return true;
}

bool io_atomic_room(mtk_ctx *ctx, atomic_file *f, uint64_t nbytes)
{
    /* Past RLIMIT_FSIZE a write raises SIGXFSZ, which kills the process
     * unless the host ignores it: stop before, with an error. */
    struct rlimit limit;
    if (getrlimit(RLIMIT_FSIZE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return true;
    if (f->written + nbytes <= (uint64_t)limit.rlim_cur) return true;
    return mtk_error(ctx, MTK_ERR_IO,
                     "%s: cannot write: %s (%llu bytes would pass the file size limit of %llu bytes, ulimit -f)",
                     f->path, strerror(EFBIG), (unsigned long long)(f->written + nbytes),
                     (unsigned long long)limit.rlim_cur);
}

int io_atomic_write_errno(mtk_ctx *ctx, atomic_file *f, const void *buf, size_t nbytes)
{
    if (!io_atomic_room(ctx, f, nbytes)) return EFBIG;
    const char *p = buf;
    while (nbytes > 0) {
        ssize_t n = write(f->fd, p, nbytes < ((size_t)1 << 30) ? nbytes : ((size_t)1 << 30));
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return errno;
        if (n == 0) return EIO; /* a write that makes no progress */
        p += n;
        f->written += (uint64_t)n;
        nbytes -= (size_t)n;
    }
    return 0;
}

bool io_atomic_write_error(mtk_ctx *ctx, atomic_file *f, int err)
{
    if (mtk_ctx_status(ctx) != MTK_OK) return false; /* io_atomic_room said why */
    return mtk_error(ctx, MTK_ERR_IO, "%s: cannot write: %s", f->path, strerror(err));
}

bool io_atomic_write(mtk_ctx *ctx, atomic_file *f, const void *buf, size_t nbytes)
{
    int err = io_atomic_write_errno(ctx, f, buf, nbytes);
    return err == 0 || io_atomic_write_error(ctx, f, err);
}

bool io_atomic_finish(mtk_ctx *ctx, atomic_file *f)
{
    int fd = f->fd;
    f->fd = -1;
    if (fsync(fd) != 0) {
        int e = errno;
        close(fd);
        return mtk_error(ctx, MTK_ERR_IO, "%s: cannot sync to disk: %s", f->path, strerror(e));
    }
    if (close(fd) != 0) return mtk_error(ctx, MTK_ERR_IO, "%s: cannot close: %s", f->path, strerror(errno));
    return true;
}

/* fsync of the directory holding `path`, so that the rename is durable. */
static bool sync_directory(mtk_ctx *ctx, const char *path)
{
    const char *slash = strrchr(path, '/');
    char dir[4096];
    if (!slash) snprintf(dir, sizeof dir, ".");
    else if (slash == path) snprintf(dir, sizeof dir, "/");
    else snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return mtk_error(ctx, MTK_ERR_IO, "%s: cannot open its directory to sync it: %s", path, strerror(errno));
    bool ok = fsync(fd) == 0 || errno == EINVAL; /* some file systems cannot sync a directory */
    int e = errno;
    close(fd);
    return ok || mtk_error(ctx, MTK_ERR_IO, "%s: cannot sync its directory: %s", path, strerror(e));
}

bool io_atomic_commit(mtk_ctx *ctx, atomic_file *f)
{
    pthread_mutex_lock(&live_lock); /* not removed by an interrupt halfway */
    int renamed = rename(f->tmp_path, f->path), e = errno;
    if (renamed == 0) unlist(f);
    pthread_mutex_unlock(&live_lock);
    if (renamed != 0) return mtk_error(ctx, MTK_ERR_IO, "%s: cannot replace it: %s", f->path, strerror(e));
    mtk_ctx_mfree(ctx, f->tmp_path);
    f->tmp_path = NULL;
    return sync_directory(ctx, f->path);
}

void io_atomic_abandon(mtk_ctx *ctx, atomic_file *f)
{
    if (f->fd >= 0) close(f->fd);
    pthread_mutex_lock(&live_lock);
    if (f->tmp_path) unlink(f->tmp_path);
    unlist(f);
    pthread_mutex_unlock(&live_lock);
    mtk_ctx_mfree(ctx, f->tmp_path);
    mtk_ctx_mfree(ctx, f->path);
    f->fd = -1;
    f->tmp_path = f->path = NULL;
}
