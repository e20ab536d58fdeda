/* What a directory leads mtk to open: a checkpoint directory, an index's
 * shards and a model directory's config.json are confined to that
 * directory (symbolic links and ".." resolved; a Hugging Face hub
 * snapshot's links into its blobs allowed), FIFOs are refused instead of
 * waited on, and JSON documents with a key twice (index.json,
 * config.json) are refused, since Python's json reads the last value and
 * cJSON the first. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mtk/mtk.h"
#include "unit_files.h"

#define SHAPE(...) ((const int64_t[]){ __VA_ARGS__ })

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* A valid checkpoint at `path` holding one float32 tensor `name`. */
static void write_checkpoint(const char *path, const char *name)
{
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_st_writer *w = mtk_st_writer_new(ctx);
    static const float v[1] = { 1 };
    assert_true(mtk_st_writer_add_bytes(w, name, MTK_ST_F32, SHAPE(1), 1, v));
    assert_true(mtk_st_writer_write(w, path));
    mtk_st_writer_free(w);
    mtk_ctx_free(ctx);
}

/* Opens `path` as a checkpoint: NULL `want` expects success, else an
 * error of `status` whose message holds `want`. */
static void expect_checkpoint(const char *path, mtk_status status, const char *want)
{
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_checkpoint *c = mtk_checkpoint_open(ctx, path);
    if (!want) {
        if (!c) fail_msg("%s: %s", path, mtk_ctx_message(ctx));
    } else {
        if (c) fail_msg("%s: opened, want an error with '%s'", path, want);
        assert_int_equal(mtk_ctx_status(ctx), status);
        if (!strstr(mtk_ctx_message(ctx), want)) fail_msg("want '%s' in '%s'", want, mtk_ctx_message(ctx));
    }
    mtk_checkpoint_close(c);
    mtk_ctx_free(ctx);
}

#define PATH(buf, ...) (snprintf(buf, sizeof buf, __VA_ARGS__), buf)

/* ------------------------------------------------------------ symlinks */

static void a_checkpoint_directory_opens_no_link_that_leaves_it(void **state)
{
    (void)state;
    char root[64], dir[128], p[256], q[256];
    unit_temp_dir(root, "paths");
    mkdir(PATH(dir, "%s/ckpt", root), 0777);
    write_checkpoint(PATH(p, "%s/outside.safetensors", root), "x"); /* valid, but not in the directory */
    write_checkpoint(PATH(p, "%s/a.safetensors", dir), "a");
    expect_checkpoint(dir, MTK_OK, NULL);

    /* a link inside the directory to a file inside it is fine */
    mkdir(PATH(p, "%s/sub", dir), 0777);
    write_checkpoint(PATH(p, "%s/sub/real.bin", dir), "b");
    assert_int_equal(symlink("sub/real.bin", PATH(q, "%s/b.safetensors", dir)), 0);
    expect_checkpoint(dir, MTK_OK, NULL);

    /* links out of it are refused, naming the link and where it goes */
    assert_int_equal(symlink("/etc/passwd", PATH(p, "%s/link.safetensors", dir)), 0);
    expect_checkpoint(dir, MTK_ERR_IO, "link.safetensors: refusing to open it: it resolves to /etc/passwd, outside");
    unlink(p);
    assert_int_equal(symlink("../outside.safetensors", PATH(p, "%s/up.safetensors", dir)), 0);
    expect_checkpoint(dir, MTK_ERR_IO, "up.safetensors: refusing to open it");
    unlink(p);

    /* an index's shard behind a link, or behind a linked directory */
    write_text(PATH(p, "%s/model.safetensors.index.json", dir),
               "{\"weight_map\":{\"x\":\"out/outside.safetensors\"}}");
    assert_int_equal(symlink(root, PATH(q, "%s/out", dir)), 0);
    expect_checkpoint(dir, MTK_ERR_IO, "out/outside.safetensors: refusing to open it");
    expect_checkpoint(p, MTK_ERR_IO, "out/outside.safetensors: refusing to open it");
    /* the index itself, found in the directory, is one of its files */
    unlink(p);
    assert_int_equal(symlink("/etc/passwd", p), 0);
    expect_checkpoint(dir, MTK_ERR_IO, "model.safetensors.index.json: refusing to open it");
    unit_remove_tree(root);
}

/* <repo>/snapshots/<rev>/ holds links to <repo>/blobs/<hash>: the layout
 * of the Hugging Face hub cache, which must keep working. */
static void a_hub_snapshot_reaches_its_blobs(void **state)
{
    (void)state;
    char root[64], p[256], q[256];
    unit_temp_dir(root, "paths");
    mkdir(PATH(p, "%s/blobs", root), 0777);
    mkdir(PATH(p, "%s/snapshots", root), 0777);
    mkdir(PATH(p, "%s/snapshots/abc123", root), 0777);
    write_checkpoint(PATH(p, "%s/blobs/0f1e", root), "w");
    write_text(PATH(p, "%s/blobs/99aa", root),
               "{\"model_type\":\"llama\",\"hidden_size\":8,\"num_attention_heads\":2,\"num_hidden_layers\":1,"
               "\"intermediate_size\":16,\"vocab_size\":10}");
    assert_int_equal(symlink("../../blobs/0f1e", PATH(q, "%s/snapshots/abc123/model.safetensors", root)), 0);
    assert_int_equal(symlink("../../blobs/99aa", PATH(q, "%s/snapshots/abc123/config.json", root)), 0);
    expect_checkpoint(PATH(p, "%s/snapshots/abc123", root), MTK_OK, NULL);
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_model_config *config = mtk_model_config_load(ctx, p);
    if (!config) fail_msg("%s", mtk_ctx_message(ctx));
    mtk_model_config_free(config);
    mtk_ctx_free(ctx);
    /* but not past the repo: a blob link to elsewhere is refused */
    assert_int_equal(symlink("/etc/passwd", PATH(q, "%s/snapshots/abc123/x.safetensors", root)), 0);
    expect_checkpoint(p, MTK_ERR_IO, "x.safetensors: refusing to open it");
    unit_remove_tree(root);
}

static void a_model_directorys_config_json_must_be_inside_it(void **state)
{
    (void)state;
    char root[64], p[256];
    unit_temp_dir(root, "paths");
    assert_int_equal(symlink("/etc/passwd", PATH(p, "%s/config.json", root)), 0);
    mtk_ctx *ctx = mtk_ctx_new();
    assert_null(mtk_model_config_load(ctx, root));
    assert_int_equal(mtk_ctx_status(ctx), MTK_ERR_IO);
    if (!strstr(mtk_ctx_message(ctx), "config.json: refusing to open it: it resolves to /etc/passwd"))
        fail_msg("%s", mtk_ctx_message(ctx));
    mtk_ctx_free(ctx);
    unit_remove_tree(root);
}

/* A FIFO named like a checkpoint or a config would block open() until a
 * writer came: each is refused at once. */
static void fifos_are_refused_not_waited_on(void **state)
{
    (void)state;
    alarm(20); /* a hang fails the test */
    char root[64], p[256];
    unit_temp_dir(root, "paths");
    assert_int_equal(mkfifo(PATH(p, "%s/x.safetensors", root), 0600), 0);
    expect_checkpoint(root, MTK_ERR_IO, "x.safetensors: not a regular file");
    expect_checkpoint(p, MTK_ERR_IO, "x.safetensors: not a regular file");
    unlink(p);
    assert_int_equal(mkfifo(PATH(p, "%s/model.safetensors.index.json", root), 0600), 0);
    expect_checkpoint(root, MTK_ERR_IO, "model.safetensors.index.json: not a regular file");
    assert_int_equal(mkfifo(PATH(p, "%s/config.json", root), 0600), 0);
    mtk_ctx *ctx = mtk_ctx_new();
    assert_null(mtk_model_config_load(ctx, root));
    assert_int_equal(mtk_ctx_status(ctx), MTK_ERR_IO);
    if (!strstr(mtk_ctx_message(ctx), "config.json: not a regular file")) fail_msg("%s", mtk_ctx_message(ctx));
    mtk_ctx_free(ctx);
    alarm(0);
    unit_remove_tree(root);
}

/* ------------------------------------------------------ duplicate keys */

static void an_index_with_a_key_twice_is_refused_at_any_depth(void **state)
{
    (void)state;
    static const struct { const char *json; const char *key; } cases[] = {
        { "{\"weight_map\":{\"w\":\"s.safetensors\"},\"weight_map\":{\"v\":\"s.safetensors\"}}", "'weight_map'" },
        { "{\"metadata\":{\"total_size\":4,\"total_size\":8},\"weight_map\":{\"w\":\"s.safetensors\"}}",
          "'metadata.total_size'" },
        { "{\"metadata\":{\"x\":[{\"k\":1,\"k\":2}]},\"weight_map\":{\"w\":\"s.safetensors\"}}",
          "'metadata.x[0].k'" },
    };
    char dir[64], p[256];
    unit_temp_dir(dir, "paths");
    write_checkpoint(PATH(p, "%s/s.safetensors", dir), "w");
    PATH(p, "%s/model.safetensors.index.json", dir);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        write_text(p, cases[i].json);
        char want[128];
        snprintf(want, sizeof want, "invalid index: the key %s appears twice", cases[i].key);
        expect_checkpoint(p, MTK_ERR_SYNTAX, want);
    }
    write_text(p, "{\"metadata\":{\"k\":{\"a\":1},\"j\":{\"a\":1}},\"weight_map\":{\"w\":\"s.safetensors\"}}");
    expect_checkpoint(p, MTK_OK, NULL); /* one key in two objects is not a duplicate */
    unit_remove_tree(dir);
}

#define LLAMA "\"model_type\":\"llama\",\"hidden_size\":8,\"num_attention_heads\":2,\"num_hidden_layers\":1," \
              "\"intermediate_size\":16,\"vocab_size\":10"

static void a_config_with_a_key_twice_is_refused_at_any_depth(void **state)
{
    (void)state;
    static const struct { const char *json; const char *want; } cases[] = {
        { "{" LLAMA ",\"hidden_size\":16}", "my/config.json: the key 'hidden_size' appears twice" },
        { "{" LLAMA ",\"rope_scaling\":{\"rope_type\":\"linear\",\"factor\":2.0,\"factor\":4.0}}",
          "the key 'rope_scaling.factor' appears twice" },
        { "{" LLAMA ",\"architectures\":[\"LlamaModel\"],\"x\":[[{\"a\":{\"b\":1,\"b\":1}}]]}",
          "the key 'x[0][0].a.b' appears twice" },
        { "{\"model_type\":\"llama\",\"model_type\":\"bert\"}", "the key 'model_type' appears twice" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        mtk_ctx *ctx = mtk_ctx_new();
        assert_null(mtk_model_config_parse(ctx, cases[i].json, "my/config.json"));
        assert_int_equal(mtk_ctx_status(ctx), MTK_ERR_SYNTAX);
        if (!strstr(mtk_ctx_message(ctx), cases[i].want)) fail_msg("want '%s' in '%s'", cases[i].want, mtk_ctx_message(ctx));
        mtk_ctx_free(ctx);
    }
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_model_config *c = mtk_model_config_parse(ctx, "{" LLAMA ",\"a\":{\"k\":1},\"b\":{\"k\":1}}", "ok.json");
    if (!c) fail_msg("%s", mtk_ctx_message(ctx));
    mtk_model_config_free(c);
    mtk_ctx_free(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_checkpoint_directory_opens_no_link_that_leaves_it),
        cmocka_unit_test(a_hub_snapshot_reaches_its_blobs),
        cmocka_unit_test(a_model_directorys_config_json_must_be_inside_it),
        cmocka_unit_test(fifos_are_refused_not_waited_on),
        cmocka_unit_test(an_index_with_a_key_twice_is_refused_at_any_depth),
        cmocka_unit_test(a_config_with_a_key_twice_is_refused_at_any_depth),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
