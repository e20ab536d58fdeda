/* File-system faults while reading and writing checkpoints: a file that
 * shrinks after it was mapped (every copy out of the mapping is an I/O
 * error naming the file, never SIGBUS), writes that fail (the file size
 * limit: an error, never SIGXFSZ, and no temporary left), and a rewrite
 * that keeps the replaced file's mode. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mtk/mtk.h"
#include "unit_files.h"

#define SHAPE(...) ((const int64_t[]){ __VA_ARGS__ })
#define ROWS 512
#define COLS 512 /* "w" is (ROWS, COLS) float32: 1 MiB, many pages */

/* dir/big.safetensors holding "w" (ROWS, COLS) float32. */
static void write_big(const char *path)
{
    mtk_ctx *ctx = mtk_ctx_new();
    float *w = malloc(ROWS * COLS * sizeof *w);
    for (int i = 0; i < ROWS * COLS; i++) w[i] = (float)i;
    mtk_st_writer *writer = mtk_st_writer_new(ctx);
    assert_true(mtk_st_writer_add_bytes(writer, "w", MTK_ST_F32, SHAPE(ROWS, COLS), 2, w));
    assert_true(mtk_st_writer_write(writer, path));
    mtk_st_writer_free(writer);
    free(w);
    mtk_ctx_free(ctx);
}

/* A new cpu tensor of shape (rows, cols): contiguous, or column-major. */
static mtk_tensor *cpu_matrix(mtk_ctx *ctx, mtk_dtype dtype, int64_t rows, int64_t cols, bool column_major)
{
    const int64_t stride[2] = { 1, rows };
    mtk_tensor *t = mtk_tensor_new(ctx, dtype, SHAPE(rows, cols), 2, column_major ? stride : NULL, MTK_DEVICE_CPU);
    assert_non_null(t);
    assert_true(mtk_tensor_alloc_storage(t));
    return t;
}

/* t.t(): a view with the two dims swapped. */
static mtk_tensor *transposed(mtk_tensor *t)
{
    mtk_tensor *v = mtk_tensor_alias(t);
    assert_non_null(v);
    int64_t s = v->shape[0], st = v->stride[0];
    v->shape[0] = v->shape[1], v->stride[0] = v->stride[1];
    v->shape[1] = s, v->stride[1] = st;
    return v;
}

/* The message is an I/O error naming `what` (and the context is reset). */
static void expect_io_error(mtk_ctx *ctx, const char *what)
{
    assert_int_equal(mtk_ctx_status(ctx), MTK_ERR_IO);
    if (!strstr(mtk_ctx_message(ctx), what)) fail_msg("want '%s' in '%s'", what, mtk_ctx_message(ctx));
    mtk_ctx_clear_error(ctx);
}

/* --------------------------------------------------------- a shrinking file */

/* A test hook without a hook in the library: this fstat interposes the C
 * library's; armed, it truncates the file right after mtk_st_open sized
 * it, so the mapping that follows is made over pages that are gone. */
static const char *truncate_after_fstat; /* the path to truncate, or NULL */

int fstat(int fd, struct stat *st)
{
    static int (*real)(int, struct stat *);
    if (!real) real = (int (*)(int, struct stat *))dlsym(RTLD_NEXT, "fstat");
    int r = real(fd, st);
    if (r == 0 && truncate_after_fstat) {
        assert_int_equal(truncate(truncate_after_fstat, 0), 0);
        truncate_after_fstat = NULL;
    }
    return r;
}

/* Truncated between its fstat and the header's parse: an I/O error, not
 * SIGBUS in the parser. */
static void a_file_truncated_before_its_header_is_read_is_an_io_error(void **state)
{
    (void)state;
    char dir[64], path[128];
    snprintf(path, sizeof path, "%s/big.safetensors", unit_temp_dir(dir, "faults"));
    write_big(path);
    mtk_ctx *ctx = mtk_ctx_new();
    truncate_after_fstat = path;
    assert_null(mtk_st_open(ctx, path));
    assert_null(truncate_after_fstat); /* the hook ran */
    expect_io_error(ctx, "big.safetensors: cannot read the header");
    mtk_ctx_free(ctx);
    unit_remove_tree(dir);
}

/* Opened (mapped) whole, then truncated to its header and 1000 bytes of
 * data: every way of copying "w" out of it meets pages that are gone. */
static void every_read_of_a_file_truncated_after_open_is_an_io_error(void **state)
{
    (void)state;
    char dir[64], path[128];
    snprintf(path, sizeof path, "%s/big.safetensors", unit_temp_dir(dir, "faults"));
    write_big(path);
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_st_file *f = mtk_st_open(ctx, path);
    assert_non_null(f);
    mtk_tensor *view = mtk_st_view(ctx, f, "w"); /* before the truncation */
    assert_non_null(view);
    assert_int_equal(truncate(path, (off_t)(8 + mtk_st_header_size(f) + 1000)), 0);

    assert_null(mtk_st_load(ctx, f, "w", MTK_DTYPE_UNDEFINED));
    expect_io_error(ctx, "big.safetensors: cannot read");
    assert_null(mtk_st_load(ctx, f, "w", MTK_FLOAT16));
    expect_io_error(ctx, "big.safetensors: cannot read");
    assert_null(mtk_st_load_slice(ctx, f, "w", 0, ROWS - 2, ROWS, MTK_DTYPE_UNDEFINED));
    expect_io_error(ctx, "big.safetensors: cannot read");

    /* into a transposed (strided) tensor: element by element */
    mtk_tensor *strided = cpu_matrix(ctx, MTK_FLOAT32, ROWS, COLS, true);
    assert_false(mtk_st_read_into(ctx, f, "w", strided));
    expect_io_error(ctx, "big.safetensors: cannot read tensor 'w'");

    /* worker threads, contiguous (in chunks) and strided, with conversion */
    mtk_tensor *half = cpu_matrix(ctx, MTK_FLOAT16, ROWS, COLS, false);
    mtk_st_read reads[] = { { f, "w", half }, { f, "w", strided } };
    assert_false(mtk_st_read_into_many(ctx, reads, 1, 4));
    expect_io_error(ctx, "big.safetensors: cannot read tensor 'w'");
    assert_false(mtk_st_read_into_many(ctx, reads + 1, 1, 4));
    expect_io_error(ctx, "big.safetensors: cannot read tensor 'w'");

    /* the writer: converting, copying as is, and a view of the mapping
     * handed back (contiguous, and strided); nothing is left behind */
    char out[160];
    snprintf(out, sizeof out, "%s/out.safetensors", dir);
    static const struct { int kind; const char *message; } cases[] = {
        { 0, "big.safetensors: cannot read tensor 'w' to write" },
        { 1, "big.safetensors: cannot read tensor 'w' to write" },
        { 2, "out.safetensors: cannot read the bytes of tensor 'v'" },
        { 3, "out.safetensors: cannot read the bytes of tensor 'v'" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        mtk_st_writer *w = mtk_st_writer_new(ctx);
        switch (cases[i].kind) {
        case 0: assert_true(mtk_st_writer_add_from(w, "w", f, mtk_st_find(f, "w"), MTK_BFLOAT16)); break;
        case 1: assert_true(mtk_st_writer_add_from(w, "w", f, mtk_st_find(f, "w"), MTK_DTYPE_UNDEFINED)); break;
        case 2: assert_true(mtk_st_writer_add(w, "v", view)); break;
        case 3: assert_true(mtk_st_writer_add(w, "v", transposed(view))); break;
        }
        assert_false(mtk_st_writer_write(w, out));
        expect_io_error(ctx, cases[i].message);
        mtk_st_writer_free(w);
        assert_string_equal(unit_listing(dir), "big.safetensors");
    }
    mtk_st_close(f);
    mtk_ctx_free(ctx);
    unit_remove_tree(dir);
}

static volatile sig_atomic_t host_handler_calls, in_copy;
static sigjmp_buf host_escape;

/* A program's handler; a fault of a copy reaching it fails the test. */
static void host_handler(int sig)
{
    (void)sig;
    host_handler_calls++;
    if (in_copy) siglongjmp(host_escape, 1);
}

/* The SIGBUS handler of the copies is there only while one runs: a
 * program's own handler is back afterwards, failed copy or not. */
static void reads_leave_the_programs_sigbus_handler_in_place(void **state)
{
    (void)state;
    struct sigaction host, old, now;
    memset(&host, 0, sizeof host);
    host.sa_handler = host_handler;
    sigemptyset(&host.sa_mask);
    assert_int_equal(sigaction(SIGBUS, &host, &old), 0);
    char dir[64], path[128];
    snprintf(path, sizeof path, "%s/big.safetensors", unit_temp_dir(dir, "faults"));
    write_big(path);
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_st_file *f = mtk_st_open(ctx, path);
    assert_non_null(mtk_st_load(ctx, f, "w", MTK_FLOAT16)); /* a copy that succeeds */
    assert_int_equal(truncate(path, 100), 0);
    mtk_tensor *dst = cpu_matrix(ctx, MTK_FLOAT32, ROWS, COLS, true);
    if (sigsetjmp(host_escape, 1)) {
        in_copy = 0;
        fail_msg("the SIGBUS of a copy reached the program's handler");
    }
    in_copy = 1;
    assert_false(mtk_st_read_into(ctx, f, "w", dst)); /* one that fails */
    in_copy = 0;
    expect_io_error(ctx, "cannot read tensor 'w'");
    assert_int_equal(sigaction(SIGBUS, NULL, &now), 0);
    assert_true(now.sa_handler == host_handler);
    raise(SIGBUS); /* a SIGBUS outside a copy is the program's */
    assert_int_equal(host_handler_calls, 1);
    sigaction(SIGBUS, &old, NULL);
    mtk_st_close(f);
    mtk_ctx_free(ctx);
    unit_remove_tree(dir);
}

/* ------------------------------------------------------------- writing */

/* The file size limit (ulimit -f) is an error before the write that would
 * pass it: no SIGXFSZ (its default kills the process), no temporary. */
static void a_write_past_the_file_size_limit_is_an_error_not_sigxfsz(void **state)
{
    (void)state;
    char dir[64], path[128], in[128];
    unit_temp_dir(dir, "faults");
    snprintf(in, sizeof in, "%s/big.safetensors", dir);
    write_big(in);
    snprintf(path, sizeof path, "%s/out.safetensors", dir);
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_st_file *f = mtk_st_open(ctx, in);
    struct rlimit old, small;
    assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
    small = (struct rlimit){ 64 * 1024, old.rlim_max };
    for (int kind = 0; kind < 3; kind++) { /* from memory, copied from a file, converted from a file */
        mtk_st_writer *w = mtk_st_writer_new(ctx);
        mtk_tensor *t = mtk_st_load(ctx, f, "w", MTK_DTYPE_UNDEFINED);
        if (kind == 0) assert_true(mtk_st_writer_add(w, "w", t));
        else assert_true(mtk_st_writer_add_from(w, "w", f, mtk_st_find(f, "w"), kind == 1 ? MTK_DTYPE_UNDEFINED
                                                                                              : MTK_FLOAT16));
        assert_int_equal(setrlimit(RLIMIT_FSIZE, &small), 0); /* SIGXFSZ keeps its default: death */
        bool ok = mtk_st_writer_write(w, path);
        int64_t shards = 0;
        bool sharded = ok || mtk_st_writer_write_sharded(w, dir, "s.safetensors", 200000, true, &shards);
        setrlimit(RLIMIT_FSIZE, &old);
        assert_false(ok);
        assert_false(sharded);
        expect_io_error(ctx, "would pass the file size limit of 65536 bytes");
        assert_string_equal(unit_listing(dir), "big.safetensors");
        mtk_st_writer_free(w);
    }
    mtk_st_close(f);
    mtk_ctx_free(ctx);
    unit_remove_tree(dir);
}

/* A rename that fails (the target is a non-empty directory) is an error
 * naming the target, and the temporaries go; for a sharded write, the
 * shards already renamed go too. */
static void a_failed_rename_leaves_nothing_behind(void **state)
{
    (void)state;
    char dir[64], path[128], inner[192];
    unit_temp_dir(dir, "faults");
    snprintf(path, sizeof path, "%s/x.safetensors", dir);
    assert_int_equal(mkdir(path, 0777), 0);
    snprintf(inner, sizeof inner, "%s/keep", path);
    FILE *f = fopen(inner, "w");
    fclose(f);
    mtk_ctx *ctx = mtk_ctx_new();
    static const float v[4] = { 1, 2, 3, 4 };
    mtk_st_writer *w = mtk_st_writer_new(ctx);
    assert_true(mtk_st_writer_add_bytes(w, "a", MTK_ST_F32, SHAPE(4), 1, v));
    assert_true(mtk_st_writer_add_bytes(w, "b", MTK_ST_F32, SHAPE(4), 1, v));
    assert_false(mtk_st_writer_write(w, path));
    expect_io_error(ctx, "x.safetensors: cannot replace it");
    assert_string_equal(unit_listing(dir), "x.safetensors");
    /* shards x-00001-of-00002, x-00002-of-00002, then the index, which fails */
    snprintf(path, sizeof path, "%s/x.safetensors.index.json", dir);
    assert_int_equal(mkdir(path, 0777), 0);
    snprintf(inner, sizeof inner, "%s/keep", path);
    f = fopen(inner, "w");
    fclose(f);
    int64_t shards = 0;
    assert_false(mtk_st_writer_write_sharded(w, dir, "x.safetensors", 16, false, &shards));
    expect_io_error(ctx, "x.safetensors.index.json: cannot replace it");
    assert_string_equal(unit_listing(dir), "x.safetensors x.safetensors.index.json");
    mtk_st_writer_free(w);
    mtk_ctx_free(ctx);
    snprintf(inner, sizeof inner, "rm -rf '%s'", dir);
    assert_int_equal(system(inner), 0);
}

/* Rewriting a file keeps its permission bits; a new file gets 0666 less
 * the umask. */
static void a_rewrite_keeps_the_replaced_files_mode(void **state)
{
    (void)state;
    char dir[64], path[128], other[128];
    unit_temp_dir(dir, "faults");
    snprintf(path, sizeof path, "%s/x.safetensors", dir);
    snprintf(other, sizeof other, "%s/new.safetensors", dir);
    write_big(path);
    assert_int_equal(chmod(path, 0600), 0);
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_st_file *f = mtk_st_open(ctx, path);
    mtk_st_writer *w = mtk_st_writer_new(ctx);
    assert_true(mtk_st_writer_add_from(w, "w", f, mtk_st_find(f, "w"), MTK_FLOAT16));
    assert_true(mtk_st_writer_write(w, path)); /* in place */
    mode_t mask = umask(022);
    assert_true(mtk_st_writer_write(w, other));
    umask(mask);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0600);
    assert_int_equal(stat(other, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0644);
    mtk_st_writer_free(w);
    mtk_st_close(f);
    mtk_ctx_free(ctx);
    unit_remove_tree(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_file_truncated_before_its_header_is_read_is_an_io_error),
        cmocka_unit_test(every_read_of_a_file_truncated_after_open_is_an_io_error),
        cmocka_unit_test(reads_leave_the_programs_sigbus_handler_in_place),
        cmocka_unit_test(a_write_past_the_file_size_limit_is_an_error_not_sigxfsz),
        cmocka_unit_test(a_failed_rename_leaves_nothing_behind),
        cmocka_unit_test(a_rewrite_keeps_the_replaced_files_mode),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
