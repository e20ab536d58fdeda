/* The C side of bench/bench_safetensors.py: on one safetensors file (in
 * the page cache), the best of REPEATS runs of
 *   raw_read   read() of the whole file into one fresh buffer
 *   mtk_load   mtk_st_open + mtk_st_load of every tensor (copies in RAM)
 *   mtk_par    mtk_st_open + mtk_st_read_into_many of every tensor (all cpus)
 *   mtk_open   mtk_st_open alone (mapping + header validation)
 *   mtk_views  mtk_st_open + mtk_st_view of every tensor (zero-copy)
 *   raw_write  write() of one buffer of the file's size (8 MiB a call) + fsync
 *   mtk_write  mtk_st_writer_write of every (loaded) tensor, fsync included
 * printed as one JSON object of seconds.
 *
 *   build/bench_safetensors FILE [REPEATS]
 *   build/bench_safetensors FILE --once load|par   (one copy-load, cold
 *       process: prints its seconds) */
#include "mtk/mtk.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double raw_read(const char *path, size_t size)
{
    double t0 = now();
    char *buf = malloc(size);
    int fd = open(path, O_RDONLY);
    size_t got = 0;
    while (got < size) {
        ssize_t n = read(fd, buf + got, size - got);
        if (n <= 0) break;
        got += (size_t)n;
    }
    close(fd);
    double t = now() - t0;
    if (got != size) fprintf(stderr, "short read\n");
    free(buf);
    return t;
}

static double raw_write(const char *path, size_t size)
{
    char *buf = malloc(size);
    memset(buf, 1, size); /* touched before the clock starts, as loaded tensors are */
    double t0 = now();
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    size_t done = 0, block = (size_t)8 << 20; /* dd bs=8M: one huge write() is slower here */
    while (done < size) {
        ssize_t n = write(fd, buf + done, size - done < block ? size - done : block);
        if (n <= 0) break;
        done += (size_t)n;
    }
    fsync(fd);
    close(fd);
    double t = now() - t0;
    free(buf);
    unlink(path);
    return t;
}

/* Opens and copies every tensor; *ctx_out keeps them for the write. */
static double mtk_load_all(const char *path, mtk_ctx **ctx_out, mtk_st_file **file_out, mtk_tensor ***tensors_out)
{
    double t0 = now();
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_st_file *f = mtk_st_open(ctx, path);
    if (!f) {
        fprintf(stderr, "%s\n", mtk_ctx_message(ctx));
        exit(1);
    }
    int64_t n = mtk_st_tensor_count(f);
    mtk_tensor **tensors = malloc((size_t)n * sizeof *tensors);
    for (int64_t i = 0; i < n; i++) {
        tensors[i] = mtk_st_load(ctx, f, mtk_st_tensor_at(f, i)->name, MTK_DTYPE_UNDEFINED);
        if (!tensors[i]) {
            fprintf(stderr, "%s\n", mtk_ctx_message(ctx));
            exit(1);
        }
    }
    double t = now() - t0;
    *ctx_out = ctx;
    *file_out = f;
    *tensors_out = tensors;
    return t;
}

static double mtk_load_parallel(const char *path)
{
    double t0 = now();
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_st_file *f = mtk_st_open(ctx, path);
    if (!f) exit(1);
    int64_t n = mtk_st_tensor_count(f);
    mtk_st_read *reads = malloc((size_t)n * sizeof *reads);
    for (int64_t i = 0; i < n; i++) {
        const mtk_st_info *info = mtk_st_tensor_at(f, i);
        mtk_tensor *t = mtk_tensor_new(ctx, mtk_st_dtype_to_mtk(info->dtype), info->shape, info->ndim, NULL, MTK_DEVICE_CPU);
        if (!t || !mtk_tensor_alloc_storage(t)) exit(1);
        reads[i] = (mtk_st_read){ f, info->name, t };
    }
    if (!mtk_st_read_into_many(ctx, reads, n, 0)) {
        fprintf(stderr, "%s\n", mtk_ctx_message(ctx));
        exit(1);
    }
    double t = now() - t0;
    free(reads);
    mtk_st_close(f);
    mtk_ctx_free(ctx);
    return t;
}

static double mtk_open(const char *path)
{
    double t0 = now();
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_st_file *f = mtk_st_open(ctx, path);
    double t = now() - t0;
    if (!f) exit(1);
    mtk_st_close(f);
    mtk_ctx_free(ctx);
    return t;
}

static double mtk_views(const char *path)
{
    double t0 = now();
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_st_file *f = mtk_st_open(ctx, path);
    if (!f) exit(1);
    for (int64_t i = 0; i < mtk_st_tensor_count(f); i++)
        if (!mtk_st_view(ctx, f, mtk_st_tensor_at(f, i)->name)) exit(1);
    double t = now() - t0;
    mtk_st_close(f);
    mtk_ctx_free(ctx);
    return t;
}

static double mtk_write(const char *out, mtk_st_file *f, mtk_tensor **tensors, mtk_ctx *ctx)
{
    double t0 = now();
    mtk_st_writer *w = mtk_st_writer_new(ctx);
    for (int64_t i = 0; i < mtk_st_tensor_count(f); i++) mtk_st_writer_add(w, mtk_st_tensor_at(f, i)->name, tensors[i]);
    if (!mtk_st_writer_write(w, out)) {
        fprintf(stderr, "%s\n", mtk_ctx_message(ctx));
        exit(1);
    }
    mtk_st_writer_free(w);
    double t = now() - t0;
    unlink(out);
    return t;
}

static double min(double a, double b) { return a < b ? a : b; }

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: bench_safetensors FILE [REPEATS]\n");
        return 2;
    }
    const char *path = argv[1];
    if (argc > 3 && strcmp(argv[2], "--once") == 0) { /* one load in this fresh process: its seconds */
        if (strcmp(argv[3], "par") == 0) {
            printf("%.6f\n", mtk_load_parallel(path));
        } else {
            mtk_ctx *ctx;
            mtk_st_file *f;
            mtk_tensor **loaded;
            printf("%.6f\n", mtk_load_all(path, &ctx, &f, &loaded));
        }
        return 0;
    }
    int repeats = argc > 2 ? atoi(argv[2]) : 3;
    struct stat st;
    if (stat(path, &st) != 0) return 1;
    size_t size = (size_t)st.st_size;
    char out[4096];
    snprintf(out, sizeof out, "%s.bench-out", path);
    double best[7] = { 1e30, 1e30, 1e30, 1e30, 1e30, 1e30, 1e30 };
    int64_t tensors = 0;
    for (int r = 0; r < repeats; r++) {
        best[0] = min(best[0], raw_read(path, size));
        mtk_ctx *ctx;
        mtk_st_file *f;
        mtk_tensor **loaded;
        best[1] = min(best[1], mtk_load_all(path, &ctx, &f, &loaded));
        tensors = mtk_st_tensor_count(f);
        for (int k = 0; k < 20; k++) best[2] = min(best[2], mtk_open(path));
        for (int k = 0; k < 5; k++) best[5] = min(best[5], mtk_views(path));
        best[3] = min(best[3], raw_write(out, size));
        best[4] = min(best[4], mtk_write(out, f, loaded, ctx));
        free(loaded);
        mtk_st_close(f);
        mtk_ctx_free(ctx);
        best[6] = min(best[6], mtk_load_parallel(path));
    }
    printf("{\"bytes\": %zu, \"tensors\": %lld, \"raw_read\": %.6f, \"mtk_load\": %.6f, \"mtk_open\": %.9f, "
           "\"raw_write\": %.6f, \"mtk_write\": %.6f, \"mtk_views\": %.9f, \"mtk_par\": %.6f, \"cpus\": %ld}\n",
           size, (long long)tensors, best[0], best[1], best[2], best[3], best[4], best[5], best[6],
           sysconf(_SC_NPROCESSORS_ONLN));
    return 0;
}
