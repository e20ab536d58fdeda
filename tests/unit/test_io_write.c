/* Writing safetensors: the reference writer's exact byte layout, round
 * trips, atomicity (nothing left behind on failure), conversion at write
 * time, Hugging Face's sharding and index, and reading sharded
 * checkpoints back with their shard paths confined. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
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

/* ---------------------------------------------------------------- helpers */

static char *read_all(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    *size = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc(*size + 1);
    assert_int_equal(fread(buf, 1, *size, f), *size);
    buf[*size] = '\0';
    fclose(f);
    return buf;
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* --------------------------------------------------------------- layout */

/* safetensors.torch.save({"b": zeros(3, f16), "a": ones(2), "c": zeros(1,
 * i64), "z": zeros(0, bool), "s": tensor(3., bf16), "aa": zeros(2, f8e4m3)},
 * metadata={"format": "pt"}) starts with these 8 + 368 bytes. */
static void writer_lays_out_the_file_as_pythons_safetensors_does(void **state)
{
    (void)state;
    static const char want[] =
        "{\"__metadata__\":{\"format\":\"pt\"},\"c\":{\"dtype\":\"I64\",\"shape\":[1],\"data_offsets\":[0,8]},"
        "\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,16]},\"s\":{\"dtype\":\"BF16\",\"shape\":[],"
        "\"data_offsets\":[16,18]},\"b\":{\"dtype\":\"F16\",\"shape\":[3],\"data_offsets\":[18,24]},\"aa\":{\"dtype\":"
        "\"F8_E4M3\",\"shape\":[2],\"data_offsets\":[24,26]},\"z\":{\"dtype\":\"BOOL\",\"shape\":[0],\"data_offsets\":"
        "[26,26]}}   ";
    static const uint8_t zeros[8] = { 0 };
    static const float ones[2] = { 1, 1 };
    static const uint16_t three_bf16 = 0x4040;
    char dir[64], path[128];
    snprintf(path, sizeof path, "%s/m.safetensors", unit_temp_dir(dir, "iow"));
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_st_writer *w = mtk_st_writer_new(ctx);
    assert_true(mtk_st_writer_add_bytes(w, "b", MTK_ST_F16, SHAPE(3), 1, zeros));
    assert_true(mtk_st_writer_add_bytes(w, "a", MTK_ST_F32, SHAPE(2), 1, ones));
    assert_true(mtk_st_writer_add_bytes(w, "c", MTK_ST_I64, SHAPE(1), 1, zeros));
    assert_true(mtk_st_writer_add_bytes(w, "z", MTK_ST_BOOL, SHAPE(0), 1, NULL));
    assert_true(mtk_st_writer_add_bytes(w, "s", MTK_ST_BF16, NULL, 0, &three_bf16));
    assert_true(mtk_st_writer_add_bytes(w, "aa", MTK_ST_F8_E4M3, SHAPE(2), 1, zeros));
    assert_true(mtk_st_writer_set_metadata(w, "format", "pt"));
    assert_true(mtk_st_writer_write(w, path));
    mtk_st_writer_free(w);
    size_t size;
    char *bytes = read_all(path, &size);
    assert_int_equal(size, 8 + 368 + 26);
    assert_int_equal((uint8_t)bytes[0], 368 & 0xff);
    assert_int_equal((uint8_t)bytes[1], 368 >> 8);
    assert_memory_equal(bytes + 8, want, 368);
    assert_memory_equal(bytes + 8 + 368 + 8, ones, 8);
    assert_memory_equal(bytes + 8 + 368 + 16, &three_bf16, 2);
    free(bytes);
    assert_string_equal(unit_listing(dir), "m.safetensors"); /* no temporary left */
    mtk_ctx_free(ctx);
    unit_remove_tree(dir);
}

static void writer_round_trips_tensors_of_any_strides(void **state)
{
    (void)state;
    char dir[64], path[128];
    snprintf(path, sizeof path, "%s/t.safetensors", unit_temp_dir(dir, "iow"));
    mtk_ctx *ctx = mtk_ctx_new();
    /* a (2, 3) int32 tensor 0..5 and its transpose (3, 2) as a strided view */
    int32_t values[6] = { 0, 1, 2, 3, 4, 5 };
    mtk_tensor *x = mtk_tensor_from_data(ctx, MTK_INT32, SHAPE(2, 3), 2, NULL, values);
    mtk_tensor *xt = mtk_tensor_from_data(ctx, MTK_INT32, SHAPE(3, 2), 2, SHAPE(1, 3), values);
    mtk_st_writer *w = mtk_st_writer_new(ctx);
    assert_true(mtk_st_writer_add(w, "x", x));
    assert_true(mtk_st_writer_add(w, "xt", xt));
    assert_true(mtk_st_writer_write(w, path));
    mtk_st_writer_free(w);
    mtk_st_file *f = mtk_st_open(ctx, path);
    assert_non_null(f);
    mtk_tensor *back = mtk_st_view(ctx, f, "xt");
    assert_int_equal(back->shape[0], 3);
    static const int32_t want[6] = { 0, 3, 1, 4, 2, 5 };
    assert_memory_equal(mtk_tensor_data(back), want, sizeof want);
    assert_memory_equal(mtk_tensor_data(mtk_st_view(ctx, f, "x")), values, sizeof values);
    mtk_st_close(f);
    mtk_ctx_free(ctx);
    unit_remove_tree(dir);
}

static void writer_refuses_meta_tensors_and_bad_names(void **state)
{
    (void)state;
    char dir[64], path[128];
    snprintf(path, sizeof path, "%s/t.safetensors", unit_temp_dir(dir, "iow"));
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_st_writer *w = mtk_st_writer_new(ctx);
    mtk_tensor *meta = mtk_tensor_new(ctx, MTK_FLOAT32, SHAPE(2), 1, NULL, MTK_DEVICE_META);
    assert_false(mtk_st_writer_add(w, "m", meta));
    assert_int_equal(mtk_ctx_status(ctx), MTK_ERR_META_NO_DATA);
    assert_non_null(strstr(mtk_ctx_message(ctx), "Cannot copy out of meta tensor; no data!"));
    mtk_ctx_clear_error(ctx);
    static const uint8_t b[2] = { 1, 2 };
    assert_false(mtk_st_writer_add_bytes(w, "__metadata__", MTK_ST_U8, SHAPE(1), 1, b));
    assert_int_equal(mtk_ctx_status(ctx), MTK_ERR_INVALID_ARGUMENT);
    mtk_ctx_clear_error(ctx);
    assert_true(mtk_st_writer_add_bytes(w, "a", MTK_ST_U8, SHAPE(1), 1, b));
    assert_true(mtk_st_writer_add_bytes(w, "a", MTK_ST_U8, SHAPE(1), 1, b + 1));
    assert_false(mtk_st_writer_write(w, path));
    assert_string_equal(mtk_ctx_message(ctx), "st_writer: two tensors are named 'a'");
    assert_string_equal(unit_listing(dir), "");
    mtk_st_writer_free(w);
    mtk_ctx_free(ctx);
    unit_remove_tree(dir);
}

/* A write that fails half way (the file size limit) leaves the old file as
 * it was and no temporary behind. */
static void writer_failing_midway_leaves_the_old_file_and_no_temporary(void **state)
{
    (void)state;
    char dir[64], path[128];
    snprintf(path, sizeof path, "%s/t.safetensors", unit_temp_dir(dir, "iow"));
    write_text(path, "old contents");
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_st_writer *w = mtk_st_writer_new(ctx);
    static uint8_t big[1 << 16];
    assert_true(mtk_st_writer_add_bytes(w, "big", MTK_ST_U8, SHAPE(sizeof big), 1, big));
    struct rlimit old, small = { 4096, 0 };
    assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
    small.rlim_max = old.rlim_max;
    void (*previous)(int) = signal(SIGXFSZ, SIG_IGN); /* write() then fails with EFBIG */
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &small), 0);
    bool ok = mtk_st_writer_write(w, path);
    setrlimit(RLIMIT_FSIZE, &old);
    signal(SIGXFSZ, previous);
    assert_false(ok);
    assert_int_equal(mtk_ctx_status(ctx), MTK_ERR_IO);
    assert_non_null(strstr(mtk_ctx_message(ctx), "t.safetensors: cannot write: File too large"));
    assert_string_equal(unit_listing(dir), "t.safetensors");
    size_t size;
    char *text = read_all(path, &size);
    assert_string_equal(text, "old contents");
    free(text);
    /* and into a directory that does not exist */
    mtk_ctx_clear_error(ctx);
    assert_false(mtk_st_writer_write(w, "/nonexistent-dir/x.safetensors"));
    assert_int_equal(mtk_ctx_status(ctx), MTK_ERR_IO);
    mtk_st_writer_free(w);
    mtk_ctx_free(ctx);
    unit_remove_tree(dir);
}

static void writer_converts_file_tensors_at_write_time(void **state)
{
    (void)state;
    char dir[64], in[128], out[128];
    unit_temp_dir(dir, "iow");
    snprintf(in, sizeof in, "%s/in.safetensors", dir);
    snprintf(out, sizeof out, "%s/out.safetensors", dir);
    mtk_ctx *ctx = mtk_ctx_new();
    static const float x[3] = { 1.0f, 3.14159f, -2.5f };
    static const uint32_t u[2] = { 4000000000u, 7 };
    mtk_st_writer *w = mtk_st_writer_new(ctx);
    assert_true(mtk_st_writer_add_bytes(w, "x", MTK_ST_F32, SHAPE(3), 1, x));
    assert_true(mtk_st_writer_add_bytes(w, "u", MTK_ST_U32, SHAPE(2), 1, u));
    assert_true(mtk_st_writer_write(w, in));
    mtk_st_writer_free(w);
    mtk_st_file *f = mtk_st_open(ctx, in);
    w = mtk_st_writer_new(ctx);
    assert_true(mtk_st_writer_add_from(w, "x", f, mtk_st_find(f, "x"), MTK_BFLOAT16));
    assert_true(mtk_st_writer_add_from(w, "u", f, mtk_st_find(f, "u"), MTK_DTYPE_UNDEFINED));
    assert_false(mtk_st_writer_add_from(w, "u2", f, mtk_st_find(f, "u"), MTK_FLOAT32));
    assert_int_equal(mtk_ctx_status(ctx), MTK_ERR_DTYPE);
    mtk_ctx_clear_error(ctx);
    assert_true(mtk_st_writer_write(w, out));
    mtk_st_writer_free(w);
    mtk_st_file *g = mtk_st_open(ctx, out);
    assert_non_null(g);
    assert_int_equal(mtk_st_find(g, "x")->dtype, MTK_ST_BF16);
    static const uint16_t want[3] = { 0x3f80, 0x4049, 0xc020 }; /* torch: x.to(bfloat16) */
    assert_memory_equal(mtk_st_tensor_bytes(g, mtk_st_find(g, "x")), want, sizeof want);
    assert_memory_equal(mtk_st_tensor_bytes(g, mtk_st_find(g, "u")), u, sizeof u);
    mtk_st_close(g);
    mtk_st_close(f);
    mtk_ctx_free(ctx);
    unit_remove_tree(dir);
}

/* -------------------------------------------------------------- sharding */

/* Tensors of 10, 30, 5, 50 and 20 bytes with a 40-byte limit: Hugging
 * Face's split gives [a b] [d] [c e] (d is bigger than the limit and gets
 * its own shard at once). */
static void sharded_writing_splits_as_hugging_face_does(void **state)
{
    (void)state;
    char dir[64], out[128];
    snprintf(out, sizeof out, "%s/ckpt", unit_temp_dir(dir, "iow"));
    static uint8_t bytes[64];
    static const struct { const char *name; int64_t size; } tensors[] = {
        { "a", 10 }, { "b", 30 }, { "c", 5 }, { "d", 50 }, { "e", 20 },
    };
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_st_writer *w = mtk_st_writer_new(ctx);
    for (int i = 0; i < 5; i++)
        assert_true(mtk_st_writer_add_bytes(w, tensors[i].name, MTK_ST_U8, &tensors[i].size, 1, bytes));
    assert_true(mtk_st_writer_set_metadata(w, "format", "pt"));
    int64_t shards = 0;
    assert_true(mtk_st_writer_write_sharded(w, out, "model.safetensors", 40, false, &shards));
    assert_int_equal(shards, 3);
    assert_string_equal(unit_listing(out), "model-00001-of-00003.safetensors model-00002-of-00003.safetensors "
                                      "model-00003-of-00003.safetensors model.safetensors.index.json");
    char path[256];
    snprintf(path, sizeof path, "%s/model.safetensors.index.json", out);
    size_t size;
    char *index = read_all(path, &size);
    assert_string_equal(index, "{\n"
                               "  \"metadata\": {\n"
                               "    \"total_parameters\": 115,\n"
                               "    \"total_size\": 115\n"
                               "  },\n"
                               "  \"weight_map\": {\n"
                               "    \"a\": \"model-00001-of-00003.safetensors\",\n"
                               "    \"b\": \"model-00001-of-00003.safetensors\",\n"
                               "    \"c\": \"model-00003-of-00003.safetensors\",\n"
                               "    \"d\": \"model-00002-of-00003.safetensors\",\n"
                               "    \"e\": \"model-00003-of-00003.safetensors\"\n"
                               "  }\n"
                               "}\n");
    free(index);
    mtk_st_writer_free(w);

    /* read back through the index, and through the directory */
    for (int via_dir = 0; via_dir < 2; via_dir++) {
        mtk_checkpoint *c = mtk_checkpoint_open(ctx, via_dir ? out : path);
        assert_non_null(c);
        assert_int_equal(mtk_checkpoint_file_count(c), 3);
        assert_int_equal(mtk_checkpoint_tensor_count(c), 5);
        mtk_st_file *file;
        const mtk_st_info *e = mtk_checkpoint_find(c, "e", &file);
        assert_non_null(e);
        assert_int_equal(e->shape[0], 20);
        assert_non_null(strstr(mtk_st_path(file), "model-00003-of-00003.safetensors"));
        assert_string_equal(mtk_st_metadata_get(file, "format"), "pt"); /* every shard has the metadata */
        const char *key, *value;
        bool is_string;
        mtk_checkpoint_metadata_at(c, 1, &key, &value, &is_string);
        assert_string_equal(key, "total_size");
        assert_string_equal(value, "115");
        assert_false(is_string);
        mtk_checkpoint_close(c);
    }
    mtk_ctx_free(ctx);
    unit_remove_tree(dir);
}

static void one_shard_is_a_single_file_unless_an_index_is_asked_for(void **state)
{
    (void)state;
    char dir[64], out[128];
    snprintf(out, sizeof out, "%s/ckpt", unit_temp_dir(dir, "iow"));
    static const float v[2] = { 1, 2 };
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_st_writer *w = mtk_st_writer_new(ctx);
    assert_true(mtk_st_writer_add_bytes(w, "v", MTK_ST_F32, SHAPE(2), 1, v));
    int64_t shards = 0;
    assert_true(mtk_st_writer_write_sharded(w, out, "model.safetensors", UINT64_MAX, false, &shards));
    assert_int_equal(shards, 1);
    assert_string_equal(unit_listing(out), "model.safetensors");
    assert_true(mtk_st_writer_write_sharded(w, out, "weights.safetensors", UINT64_MAX, true, &shards));
    assert_string_equal(unit_listing(out), "model.safetensors weights-00001-of-00001.safetensors "
                                      "weights.safetensors.index.json");
    assert_false(mtk_st_writer_write_sharded(w, out, "weights.bin", 10, false, NULL));
    assert_int_equal(mtk_ctx_status(ctx), MTK_ERR_INVALID_ARGUMENT);
    mtk_st_writer_free(w);
    /* a directory with an index and another safetensors file: the index wins */
    mtk_ctx_clear_error(ctx);
    mtk_checkpoint *c = mtk_checkpoint_open(ctx, out);
    assert_non_null(c);
    assert_non_null(strstr(mtk_checkpoint_index_path(c), "weights.safetensors.index.json"));
    mtk_checkpoint_close(c);
    mtk_ctx_free(ctx);
    unit_remove_tree(dir);
}

/* ----------------------------------------------------------- checkpoints */

/* A directory with one shard "s.safetensors" holding "w", and an index
 * whose weight_map is `map` (JSON object text). */
static void make_indexed(const char *dir, const char *map)
{
    char path[256], text[1024];
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_st_writer *w = mtk_st_writer_new(ctx);
    static const float v[1] = { 1 };
    assert_true(mtk_st_writer_add_bytes(w, "w", MTK_ST_F32, SHAPE(1), 1, v));
    snprintf(path, sizeof path, "%s/s.safetensors", dir);
    assert_true(mtk_st_writer_write(w, path));
    mtk_st_writer_free(w);
    mtk_ctx_free(ctx);
    snprintf(path, sizeof path, "%s/model.safetensors.index.json", dir);
    snprintf(text, sizeof text, "{\"metadata\":{\"total_size\":4},\"weight_map\":%s}", map);
    write_text(path, text);
}

static void checkpoint_index_shard_paths_stay_in_its_directory(void **state)
{
    (void)state;
    static const struct { const char *map; mtk_status status; const char *message; } cases[] = {
        { "{\"w\":\"s.safetensors\"}", MTK_OK, NULL },
        { "{\"w\":\"./s.safetensors\"}", MTK_OK, NULL },
        { "{\"w\":\"../s.safetensors\"}", MTK_ERR_SYNTAX, "weight_map['w'] = '../s.safetensors' leaves the index's directory" },
        { "{\"w\":\"sub/../../s.safetensors\"}", MTK_ERR_SYNTAX, "leaves the index's directory" },
        { "{\"w\":\"/etc/passwd\"}", MTK_ERR_SYNTAX, "'/etc/passwd' leaves the index's directory" },
        { "{\"w\":\"\"}", MTK_ERR_SYNTAX, "leaves the index's directory" },
        { "{\"w\":3}", MTK_ERR_SYNTAX, "weight_map['w'] is not a file name" },
        { "{\"v\":\"s.safetensors\"}", MTK_ERR_SYNTAX, "the index maps 'v' to" },
        { "{\"w\":\"s.safetensors\",\"w\":\"s.safetensors\"}", MTK_ERR_SYNTAX, "the key 'weight_map.w' appears twice" },
        { "{\"w\":\"gone.safetensors\"}", MTK_ERR_IO, "gone.safetensors: cannot open: No such file or directory" },
        { "[]", MTK_ERR_SYNTAX, "invalid index: no \"weight_map\" object" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char dir[64], path[128];
        make_indexed(unit_temp_dir(dir, "iow"), cases[i].map);
        snprintf(path, sizeof path, "%s/model.safetensors.index.json", dir);
        mtk_ctx *ctx = mtk_ctx_new();
        mtk_checkpoint *c = mtk_checkpoint_open(ctx, path);
        if (mtk_ctx_status(ctx) != cases[i].status) fail_msg("case %zu: %s", i, mtk_ctx_message(ctx));
        if (cases[i].message && !strstr(mtk_ctx_message(ctx), cases[i].message))
            fail_msg("case %zu: want '%s' in '%s'", i, cases[i].message, mtk_ctx_message(ctx));
        if (c) assert_int_equal(mtk_checkpoint_tensor_count(c), 1);
        mtk_checkpoint_close(c);
        mtk_ctx_free(ctx);
        unit_remove_tree(dir);
    }
}

static void checkpoint_directory_joins_files_and_refuses_a_name_in_two(void **state)
{
    (void)state;
    char dir[64], path[128];
    unit_temp_dir(dir, "iow");
    mtk_ctx *ctx = mtk_ctx_new();
    static const float v[1] = { 1 };
    const char *names[2][2] = { { "a", "shared" }, { "b", "shared" } };
    for (int k = 0; k < 2; k++) {
        mtk_st_writer *w = mtk_st_writer_new(ctx);
        assert_true(mtk_st_writer_add_bytes(w, names[k][0], MTK_ST_F32, SHAPE(1), 1, v));
        snprintf(path, sizeof path, "%s/%c.safetensors", dir, 'x' + k);
        assert_true(mtk_st_writer_write(w, path));
        mtk_st_writer_free(w);
    }
    mtk_checkpoint *c = mtk_checkpoint_open(ctx, dir);
    assert_non_null(c);
    assert_int_equal(mtk_checkpoint_file_count(c), 2);
    assert_null(mtk_checkpoint_index_path(c));
    mtk_st_file *file;
    assert_non_null(mtk_checkpoint_find(c, "b", &file));
    assert_non_null(strstr(mtk_st_path(file), "y.safetensors"));
    assert_null(mtk_checkpoint_find(c, "shared", NULL));
    mtk_checkpoint_close(c);
    /* now the same name in both */
    mtk_st_writer *w = mtk_st_writer_new(ctx);
    assert_true(mtk_st_writer_add_bytes(w, "a", MTK_ST_F32, SHAPE(1), 1, v));
    snprintf(path, sizeof path, "%s/y.safetensors", dir);
    assert_true(mtk_st_writer_write(w, path));
    mtk_st_writer_free(w);
    assert_null(mtk_checkpoint_open(ctx, dir));
    assert_non_null(strstr(mtk_ctx_message(ctx), "tensor 'a' is in both"));
    mtk_ctx_clear_error(ctx);
    char empty[64];
    assert_null(mtk_checkpoint_open(ctx, unit_temp_dir(empty, "iow")));
    assert_non_null(strstr(mtk_ctx_message(ctx), "no .safetensors file and no index in the directory"));
    mtk_ctx_free(ctx);
    unit_remove_tree(empty);
    unit_remove_tree(dir);
}

static void parse_size_reads_decimal_and_binary_units(void **state)
{
    (void)state;
    static const struct { const char *text; uint64_t bytes; } good[] = {
        { "1", 1 }, { "1000", 1000 }, { "5GB", 5000000000ull }, { "5gb", 5000000000ull },
        { "500MB", 500000000ull }, { "10KB", 10000 }, { "2GiB", 2ull << 30 }, { "1.5GB", 1500000000ull },
        { " 3 MiB ", 3ull << 20 }, { "1TB", 1000000000000ull }, { "7B", 7 },
    };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        uint64_t bytes = 0;
        if (!mtk_parse_size(good[i].text, &bytes) || bytes != good[i].bytes)
            fail_msg("'%s' -> %llu", good[i].text, (unsigned long long)bytes);
    }
    static const char *bad[] = { "", "GB", "0", "-1", "5XB", "1.GB", "99999999999999999999", "20000000000TB" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        uint64_t bytes;
        if (mtk_parse_size(bad[i], &bytes)) fail_msg("'%s' was accepted", bad[i]);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(writer_lays_out_the_file_as_pythons_safetensors_does),
        cmocka_unit_test(writer_round_trips_tensors_of_any_strides),
        cmocka_unit_test(writer_refuses_meta_tensors_and_bad_names),
        cmocka_unit_test(writer_failing_midway_leaves_the_old_file_and_no_temporary),
        cmocka_unit_test(writer_converts_file_tensors_at_write_time),
        cmocka_unit_test(sharded_writing_splits_as_hugging_face_does),
        cmocka_unit_test(one_shard_is_a_single_file_unless_an_index_is_asked_for),
        cmocka_unit_test(checkpoint_index_shard_paths_stay_in_its_directory),
        cmocka_unit_test(checkpoint_directory_joins_files_and_refuses_a_name_in_two),
        cmocka_unit_test(parse_size_reads_decimal_and_binary_units),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
