/* Reading safetensors: the dtype table, every validation rule with its own
 * message, the malformed corpus (tests/io/corpus), zero-copy views over
 * the mapping, copies with dtype conversion (values from torch 2.13's
 * Tensor.to), slices that read only their bytes, and read_into. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <math.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "mtk/mtk.h"
#include "core/scalar.h"

#define SHAPE(...) ((const int64_t[]){ __VA_ARGS__ })

/* ---------------------------------------------------------------- helpers */

/* A whole file image: 8-byte little-endian length, header, `data_len`
 * bytes of data (data[i] = i, or a copy of `data`). */
typedef struct image {
    uint8_t *bytes;
    size_t size;
} image;

static image make_image(const char *header, size_t header_len, size_t data_len, const void *data)
{
    image im = { malloc(8 + header_len + data_len + 1), 8 + header_len + data_len };
    for (int i = 0; i < 8; i++) im.bytes[i] = (uint8_t)((uint64_t)header_len >> (8 * i));
    memcpy(im.bytes + 8, header, header_len);
    for (size_t i = 0; i < data_len; i++) im.bytes[8 + header_len + i] = data ? ((const uint8_t *)data)[i] : (uint8_t)i;
    return im;
}

static image text_image(const char *header, size_t data_len)
{
    return make_image(header, strlen(header), data_len, NULL);
}

/* Writes an image to a new file in a fresh directory; returns the path
 * (static buffer). */
static const char *write_temp(const image *im)
{
    static char path[256];
    char dir[] = "/tmp/mtk-test-io-XXXXXX";
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/t.safetensors", dir);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(im->bytes, 1, im->size, f), im->size);
    fclose(f);
    return path;
}

static void remove_temp(const char *path)
{
    char dir[256];
    snprintf(dir, sizeof dir, "%s", path);
    *strrchr(dir, '/') = '\0';
    unlink(path);
    rmdir(dir);
}

/* ------------------------------------------------------------------ dtypes */

static void st_dtypes_have_the_formats_names_sizes_and_mtk_dtypes(void **state)
{
    (void)state;
    static const struct { const char *name; size_t size; mtk_dtype dtype; } want[] = {
        { "BOOL", 1, MTK_BOOL }, { "U8", 1, MTK_UINT8 }, { "I8", 1, MTK_INT8 },
        { "F8_E5M2", 1, MTK_FLOAT8_E5M2 }, { "F8_E4M3", 1, MTK_FLOAT8_E4M3FN }, { "I16", 2, MTK_INT16 },
        { "U16", 2, MTK_DTYPE_UNDEFINED }, { "F16", 2, MTK_FLOAT16 }, { "BF16", 2, MTK_BFLOAT16 },
        { "I32", 4, MTK_INT32 }, { "U32", 4, MTK_DTYPE_UNDEFINED }, { "F32", 4, MTK_FLOAT32 },
        { "F64", 8, MTK_FLOAT64 }, { "I64", 8, MTK_INT64 }, { "U64", 8, MTK_DTYPE_UNDEFINED },
    };
    assert_int_equal(MTK_ST_DTYPE_COUNT, sizeof want / sizeof want[0]);
    for (int i = 0; i < MTK_ST_DTYPE_COUNT; i++) {
        assert_string_equal(mtk_st_dtype_name((mtk_st_dtype)i), want[i].name);
        assert_int_equal(mtk_st_dtype_size((mtk_st_dtype)i), want[i].size);
        assert_int_equal(mtk_st_dtype_to_mtk((mtk_st_dtype)i), want[i].dtype);
        assert_int_equal(mtk_st_dtype_from_name(want[i].name), i);
        if (want[i].dtype != MTK_DTYPE_UNDEFINED) assert_int_equal(mtk_st_dtype_from_mtk(want[i].dtype), i);
    }
    assert_int_equal(mtk_st_dtype_from_name("f32"), MTK_ST_DTYPE_INVALID); /* exact names only */
    assert_int_equal(mtk_st_dtype_from_name("F4"), MTK_ST_DTYPE_INVALID);
    assert_string_equal(mtk_st_dtype_name(MTK_ST_DTYPE_INVALID), "invalid");
}

/* ------------------------------------------------------------- validation */

static void open_memory_lists_tensors_in_offset_order(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    image im = text_image("{\"__metadata__\":{\"z\":\"1\",\"format\":\"pt\"},"
                          "\"b\":{\"dtype\":\"F16\",\"shape\":[2,3],\"data_offsets\":[8,20]},"
                          "\"a\":{\"dtype\":\"I64\",\"shape\":[],\"data_offsets\":[0,8]},"
                          "\"e\":{\"dtype\":\"BOOL\",\"shape\":[0,5],\"data_offsets\":[20,20]}}",
                          20);
    mtk_st_file *f = mtk_st_open_memory(ctx, im.bytes, im.size, "mem");
    assert_non_null(f);
    assert_int_equal(mtk_st_tensor_count(f), 3);
    const mtk_st_info *a = mtk_st_tensor_at(f, 0), *b = mtk_st_tensor_at(f, 1), *e = mtk_st_tensor_at(f, 2);
    assert_string_equal(a->name, "a");
    assert_int_equal(a->dtype, MTK_ST_I64);
    assert_int_equal(a->ndim, 0);
    assert_int_equal(a->numel, 1);
    assert_string_equal(b->name, "b");
    assert_int_equal(b->ndim, 2);
    assert_int_equal(b->shape[0], 2);
    assert_int_equal(b->shape[1], 3);
    assert_int_equal(b->begin, 8);
    assert_int_equal(b->end, 20);
    assert_string_equal(e->name, "e");
    assert_int_equal(e->numel, 0);
    assert_ptr_equal(mtk_st_find(f, "b"), b);
    assert_null(mtk_st_find(f, "c"));
    assert_int_equal(mtk_ctx_status(ctx), MTK_OK); /* a failed find is not an error */
    assert_int_equal(mtk_st_header_size(f), im.size - 8 - 20);
    assert_int_equal(mtk_st_data_size(f), 20);
    assert_ptr_equal(mtk_st_tensor_bytes(f, b), im.bytes + 8 + mtk_st_header_size(f) + 8);
    /* metadata sorted by key */
    const char *key, *value;
    assert_int_equal(mtk_st_metadata_count(f), 2);
    mtk_st_metadata_at(f, 0, &key, &value);
    assert_string_equal(key, "format");
    assert_string_equal(value, "pt");
    assert_string_equal(mtk_st_metadata_get(f, "z"), "1");
    assert_null(mtk_st_metadata_get(f, "y"));
    mtk_st_close(f);
    mtk_ctx_free(ctx);
    free(im.bytes);
}

/* Headers the reference reader accepts are accepted. */
static void open_accepts_what_the_reference_reader_accepts(void **state)
{
    (void)state;
    static const struct { const char *header; size_t data; } cases[] = {
        { "{}", 0 },
        { "{}      ", 0 },                                  /* space padding */
        { " \t\n{}\r\n", 0 },                               /* JSON whitespace around */
        { "{\"__metadata__\":null}", 0 },                   /* null metadata */
        { "{\"__metadata__\":{}}", 0 },
        { "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4],\"extra\":[1,2]}}", 4 },
        { "{\"\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}}", 1 }, /* empty name */
        { "{\"a\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[0,0]},"
          "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
          "\"c\":{\"dtype\":\"I8\",\"shape\":[3,0],\"data_offsets\":[4,4]}}", 4 }, /* empty tensors share offsets */
        { "{\"caf\xc3\xa9 \\u00e9\\ud83d\\ude00\":{\"dtype\":\"BOOL\",\"shape\":[],\"data_offsets\":[0,1]}}", 1 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        mtk_ctx *ctx = mtk_ctx_new();
        image im = text_image(cases[i].header, cases[i].data);
        mtk_st_file *f = mtk_st_open_memory(ctx, im.bytes, im.size, "mem");
        if (!f) fail_msg("case %zu: %s", i, mtk_ctx_message(ctx));
        mtk_st_close(f);
        mtk_ctx_free(ctx);
        free(im.bytes);
    }
}

/* Every rule, its own message; each names the tensor where there is one. */
static void open_rejects_each_broken_rule_with_its_own_message(void **state)
{
    (void)state;
#define T(dtype, shape, begin, end) "{\"dtype\":\"" dtype "\",\"shape\":" shape ",\"data_offsets\":[" #begin "," #end "]}"
    static const struct { const char *header; size_t data; const char *message; } cases[] = {
        { "[1,2]", 0, "the header is not a JSON object (it starts with '[')" },
        { "    ", 0, "the header is empty" },
        { "{\"a\":", 0, "the header is not valid JSON" },
        { "{\"a\":" T("F32", "[1]", 0, 4) "} x", 4, "the header has bytes after its JSON object" },
        { "{\"a\":[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]}", 0, "the header nests deeper than 16 levels" },
        { "{\"a\xff\":" T("F32", "[1]", 0, 4) "}", 4, "the header is not valid UTF-8 (byte 0xff" },
        { "{\"a\xc0\x80\":" T("F32", "[1]", 0, 4) "}", 4, "the header is not valid UTF-8 (byte 0xc0" },
        { "{\"a\xed\xa0\x80\":" T("F32", "[1]", 0, 4) "}", 4, "not valid UTF-8" }, /* a surrogate */
        { "{\"a\x01\":" T("F32", "[1]", 0, 4) "}", 4, "raw control character 0x01" },
        { "{\"a\\u0000b\":" T("F32", "[1]", 0, 4) "}", 4, "NUL character" },
        { "{\"__metadata__\":[1]}", 0, "__metadata__ is an array; it must be an object of string values" },
        { "{\"__metadata__\":{\"k\":1}}", 0, "__metadata__ value of 'k' is a number, not a string" },
        { "{\"__metadata__\":{\"k\":\"1\",\"k\":\"2\"}}", 0, "__metadata__ has the key 'k' twice" },
        { "{\"__metadata__\":{},\"__metadata__\":{}}", 0, "__metadata__ appears twice" },
        { "{\"a\":[1]}", 0, "tensor 'a': its entry is an array, not an object" },
        { "{\"a\":{\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "tensor 'a': no \"dtype\"" },
        { "{\"a\":{\"dtype\":\"F32\",\"data_offsets\":[0,4]}}", 4, "tensor 'a': no \"shape\"" },
        { "{\"a\":{\"dtype\":\"F32\",\"shape\":[1]}}", 4, "tensor 'a': no \"data_offsets\"" },
        { "{\"a\":{\"dtype\":\"F32\",\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4,
          "tensor 'a': \"dtype\" appears twice" },
        { "{\"a\":{\"dtype\":7,\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "tensor 'a': dtype is a number, not a string" },
        { "{\"a\":" T("F128", "[1]", 0, 16) "}", 16, "tensor 'a': unknown dtype 'F128'" },
        { "{\"a\":" T("f32", "[1]", 0, 4) "}", 4, "tensor 'a': unknown dtype 'f32'" },
        { "{\"a\":" T("F32", "\"1\"", 0, 4) "}", 4, "tensor 'a': shape is a string, not an array of sizes" },
        { "{\"a\":" T("F32", "[-1]", 0, 4) "}", 4, "tensor 'a': shape[0] is negative (-1)" },
        { "{\"a\":" T("F32", "[1,1.5]", 0, 4) "}", 4, "tensor 'a': shape[1] is 1.5, not an integer" },
        { "{\"a\":" T("F32", "[1e300]", 0, 4) "}", 4, "tensor 'a': shape[0] is too large" },
        { "{\"a\":" T("F32", "[\"2\"]", 0, 8) "}", 8, "tensor 'a': shape[0] is a string, not a non-negative integer" },
        { "{\"a\":" T("F32", "[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]", 0, 4) "}", 4,
          "tensor 'a': shape has 17 dimensions; mtk supports at most 16" },
        { "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4,8]}}", 8,
          "tensor 'a': data_offsets must be [begin, end], got an array of more than 2" },
        { "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":{}}}", 4,
          "tensor 'a': data_offsets must be [begin, end], got an object" },
        { "{\"a\":" T("F32", "[1]", -4, 0) "}", 4, "tensor 'a': data_offsets[0] is negative" },
        { "{\"a\":" T("F32", "[0]", 8, 4) "}", 8, "tensor 'a': data_offsets [8, 4] are reversed (end before begin)" },
        { "{\"a\":" T("F32", "[4]", 0, 16) "}", 8, "tensor 'a': data_offsets [0, 16] run past the end of the data (8 bytes)" },
        { "{\"a\":" T("F32", "[4294967296,4294967296]", 0, 0) "}", 0,
          "tensor 'a': shape [4294967296, 4294967296] of F32 overflows" },
        { "{\"a\":" T("F32", "[2]", 0, 4) "}", 4, "tensor 'a': shape [2] of F32 is 8 bytes but data_offsets [0, 4] hold 4" },
        { "{\"a\":" T("U8", "[1]", 0, 0) "}", 1, "tensor 'a': shape [1] of U8 is 1 byte but data_offsets [0, 0] hold 0" },
        { "{\"a\":" T("U8", "[2]", 0, 2) "}", 1, "run past the end of the data (1 byte)" },
        { "{\"a\":" T("F32", "[1]", 4, 8) "}", 8, "tensor 'a': data_offsets [4, 8] leave a hole: bytes [0, 4) belong to no tensor" },
        { "{\"a\":" T("F32", "[2]", 0, 8) ",\"b\":" T("F32", "[1]", 4, 8) "}", 8,
          "tensor 'b': data_offsets [4, 8] overlap tensor 'a' [0, 8]" },
        { "{\"a\":" T("F32", "[1]", 0, 4) "}", 12, "8 trailing bytes after the last tensor" },
        { "{}", 3, "3 trailing bytes after the last tensor" },
        { "{}", 1, "1 trailing byte after the last tensor: the tensors end at data offset 0 but the data is 1 byte" },
        { "{\"a\":" T("F32", "[1]", 0, 4) ",\"a\":" T("F32", "[1]", 4, 8) "}", 8, "tensor 'a' appears twice in the header" },
    };
#undef T
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        mtk_ctx *ctx = mtk_ctx_new();
        image im = text_image(cases[i].header, cases[i].data);
        mtk_st_file *f = mtk_st_open_memory(ctx, im.bytes, im.size, "mem.safetensors");
        if (f) fail_msg("case %zu was accepted: %s", i, cases[i].header);
        assert_int_equal(mtk_ctx_status(ctx), MTK_ERR_SYNTAX);
        const char *prefix = "mem.safetensors: invalid safetensors file: ";
        if (strncmp(mtk_ctx_message(ctx), prefix, strlen(prefix)) != 0 || !strstr(mtk_ctx_message(ctx), cases[i].message))
            fail_msg("case %zu: want '%s' in '%s'", i, cases[i].message, mtk_ctx_message(ctx));
        mtk_ctx_free(ctx);
        free(im.bytes);
    }
}

static void open_rejects_nul_padding(void **state)
{
    (void)state;
    static const char header[] = "{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}}\0\0\0";
    mtk_ctx *ctx = mtk_ctx_new();
    image im = make_image(header, sizeof header - 1, 1, NULL);
    assert_null(mtk_st_open_memory(ctx, im.bytes, im.size, "m"));
    assert_non_null(strstr(mtk_ctx_message(ctx), "the header has bytes after its JSON object (at byte 53"));
    mtk_ctx_free(ctx);
    free(im.bytes);
}

static void open_rejects_bad_lengths_before_reading_the_header(void **state)
{
    (void)state;
    static const struct { uint8_t bytes[16]; size_t size; const char *message; } cases[] = {
        { { 0 }, 0, "the file is empty (0 bytes)" },
        { { 2, 0, 0, 0, 0 }, 5, "the file is 5 bytes, too short for the 8-byte header length" },
        { { 100, 0, 0, 0, 0, 0, 0, 0, '{', '}' }, 10, "the header length 100 runs past the end of the file (2 bytes after" },
        { { 0, 0xe1, 0xf5, 0x05, 0, 0, 0, 0, '{', '}' }, 10, /* 100,000,000: at the limit, past the end */
          "the header length 100000000 runs past the end" },
        { { 1, 0xe1, 0xf5, 0x05, 0, 0, 0, 0, '{', '}' }, 10,
          "the header length 100000001 is larger than the format's limit of 100000000 bytes" },
        { { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff }, 8, "the header length 18446744073709551615 is larger" },
        { { 0, 0, 0, 0, 0, 0, 0, 0 }, 8, "the header is empty (0 bytes of whitespace)" },
        /* one of a thing is singular */
        { { 2 }, 1, "the file is 1 byte, too short for the 8-byte header length" },
        { { 100, 0, 0, 0, 0, 0, 0, 0, '{' }, 9, "runs past the end of the file (1 byte after the length)" },
        { { 1, 0, 0, 0, 0, 0, 0, 0, ' ' }, 9, "the header is empty (1 byte of whitespace)" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        mtk_ctx *ctx = mtk_ctx_new();
        assert_null(mtk_st_open_memory(ctx, cases[i].bytes, cases[i].size, "m"));
        assert_int_equal(mtk_ctx_status(ctx), MTK_ERR_SYNTAX);
        if (!strstr(mtk_ctx_message(ctx), cases[i].message))
            fail_msg("case %zu: want '%s' in '%s'", i, cases[i].message, mtk_ctx_message(ctx));
        mtk_ctx_free(ctx);
    }
}

/* Every file of tests/io/corpus: bad_* fail with a format error, good_*
 * open; under ASan this also proves none reads out of bounds. */
static void corpus_files_fail_cleanly_or_open(void **state)
{
    (void)state;
    char dir[512];
    snprintf(dir, sizeof dir, "%s", __FILE__);
    *strrchr(dir, '/') = '\0';
    strncat(dir, "/../io/corpus", sizeof dir - strlen(dir) - 1);
    DIR *d = opendir(dir);
    if (!d) skip(); /* built from a copy without the corpus */
    int bad = 0, good = 0;
    for (struct dirent *e; (e = readdir(d));) {
        bool is_bad = strncmp(e->d_name, "bad_", 4) == 0, is_good = strncmp(e->d_name, "good_", 5) == 0;
        if (!is_bad && !is_good) continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        mtk_ctx *ctx = mtk_ctx_new();
        mtk_st_file *f = mtk_st_open(ctx, path);
        if (is_bad && f) fail_msg("%s was accepted", e->d_name);
        if (is_good && !f) fail_msg("%s was refused: %s", e->d_name, mtk_ctx_message(ctx));
        if (is_bad) assert_int_equal(mtk_ctx_status(ctx), MTK_ERR_SYNTAX);
        bad += is_bad;
        good += is_good;
        mtk_st_close(f);
        mtk_ctx_free(ctx);
    }
    closedir(d);
    assert_true(bad >= 20);
    assert_true(good >= 1);
}

/* ------------------------------------------------------------------- views */

static void view_is_zero_copy_over_the_mapping_and_outlives_close(void **state)
{
    (void)state;
    float values[6] = { 1, 2, 3, 4, 5, 6 };
    char header[65]; /* 64 bytes: the data starts at 72, 8-byte aligned */
    snprintf(header, sizeof header, "%-64s", "{\"w\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,24]}}");
    image fixed = make_image(header, 64, 24, values);
    const char *path = write_temp(&fixed);
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_st_file *f = mtk_st_open(ctx, path);
    assert_non_null(f);
    mtk_tensor *w = mtk_st_view(ctx, f, "w");
    assert_non_null(w);
    assert_int_equal(w->dtype, MTK_FLOAT32);
    assert_int_equal(w->ndim, 2);
    assert_int_equal(w->stride[0], 3);
    assert_int_equal(mtk_storage_kind_of(w->storage), MTK_STORAGE_MAPPED);
    assert_int_equal(w->storage_offset, (8 + 64) / 4);
    assert_int_equal(mtk_storage_refcount(w->storage), 2); /* the file's and the tensor's */
    assert_ptr_equal(mtk_tensor_data(w), mtk_st_tensor_bytes(f, mtk_st_find(f, "w")));
    mtk_st_close(f);
    assert_int_equal(mtk_storage_refcount(w->storage), 1);
    float *data = mtk_tensor_data(w);
    assert_true(data[0] == 1.0f && data[5] == 6.0f);
    data[0] = 42.0f; /* copy-on-write: the file keeps its bytes */
    mtk_ctx_free(ctx); /* unmaps */
    ctx = mtk_ctx_new();
    f = mtk_st_open(ctx, path);
    mtk_tensor *again = mtk_st_load(ctx, f, "w", MTK_DTYPE_UNDEFINED);
    assert_true(((float *)mtk_tensor_data(again))[0] == 1.0f);
    mtk_st_close(f);
    mtk_ctx_free(ctx);
    remove_temp(path);
    free(fixed.bytes);
}

static void view_of_misaligned_bytes_is_a_copy(void **state)
{
    (void)state;
    /* header of 128 bytes: data starts at 136, and "b" at data offset 2 */
    char header[129];
    snprintf(header, sizeof header, "%-128s", "{\"a\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,2]},"
             "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[2,6]}}");
    float one = 1.0f;
    uint8_t data[6] = { 7, 8 };
    memcpy(data + 2, &one, 4);
    image im = make_image(header, strlen(header), 6, data);
    uint8_t *aligned = aligned_alloc(64, 256);
    memcpy(aligned, im.bytes, im.size);
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_st_file *f = mtk_st_open_memory(ctx, aligned, im.size, "m");
    assert_non_null(f);
    mtk_tensor *b = mtk_st_view(ctx, f, "b");
    assert_non_null(b);
    assert_int_equal(mtk_storage_kind_of(b->storage), MTK_STORAGE_OWNED);
    assert_true(*(float *)mtk_tensor_data(b) == 1.0f);
    mtk_tensor *a = mtk_st_view(ctx, f, "a");
    assert_int_equal(mtk_storage_kind_of(a->storage), MTK_STORAGE_BORROWED);
    assert_int_equal(((uint8_t *)mtk_tensor_data(a))[1], 8);
    mtk_st_close(f);
    mtk_ctx_free(ctx);
    free(aligned);
    free(im.bytes);
}

static void unsigned_wide_tensors_are_listed_but_not_read(void **state)
{
    (void)state;
    image im = text_image("{\"u\":{\"dtype\":\"U32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8);
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_st_file *f = mtk_st_open_memory(ctx, im.bytes, im.size, "m");
    assert_non_null(f);
    assert_int_equal(mtk_st_find(f, "u")->dtype, MTK_ST_U32);
    assert_null(mtk_st_view(ctx, f, "u"));
    assert_int_equal(mtk_ctx_status(ctx), MTK_ERR_DTYPE);
    assert_non_null(strstr(mtk_ctx_message(ctx), "tensor 'u' is U32, which mtk has no dtype for"));
    mtk_ctx_clear_error(ctx);
    assert_null(mtk_st_load(ctx, f, "u", MTK_FLOAT32));
    assert_int_equal(mtk_ctx_status(ctx), MTK_ERR_DTYPE);
    mtk_ctx_clear_error(ctx);
    assert_null(mtk_st_load(ctx, f, "missing", MTK_DTYPE_UNDEFINED));
    assert_int_equal(mtk_ctx_status(ctx), MTK_ERR_INVALID_ARGUMENT);
    assert_string_equal(mtk_ctx_message(ctx), "m: no tensor named 'missing'");
    mtk_st_close(f);
    mtk_ctx_free(ctx);
    free(im.bytes);
}

/* ------------------------------------------------------------------- loads */

/* One F32 tensor of these values, as a memory image. */
static image f32_image(const float *values, int n)
{
    char header[128];
    snprintf(header, sizeof header, "{\"x\":{\"dtype\":\"F32\",\"shape\":[%d],\"data_offsets\":[0,%d]}}", n, 4 * n);
    return make_image(header, strlen(header), (size_t)n * 4, values);
}

static void load_converts_as_torch_to_does(void **state)
{
    (void)state;
    /* torch.tensor(x).to(dtype), bits from torch 2.13 */
    static const float x[10] = { 1.0f, 1.00390625f, 3.14159f, -0.0f, INFINITY, 65504.0f, 1e-8f, 448.5f, 500.0f, -2.5f };
    static const uint16_t bf16[10] = { 0x3f80, 0x3f80, 0x4049, 0x8000, 0x7f80, 0x4780, 0x322c, 0x43e0, 0x43fa, 0xc020 };
    static const uint16_t f16[10] = { 0x3c00, 0x3c04, 0x4248, 0x8000, 0x7c00, 0x7bff, 0x0000, 0x5f02, 0x5fd0, 0xc100 };
    static const uint8_t e4m3[10] = { 0x38, 0x38, 0x45, 0x80, 0x7e, 0x7e, 0x00, 0x7e, 0x7e, 0xc2 };
    static const uint8_t e5m2[10] = { 0x3c, 0x3c, 0x42, 0x80, 0x7c, 0x7c, 0x00, 0x5f, 0x60, 0xc1 };
    image im = f32_image(x, 10);
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_st_file *f = mtk_st_open_memory(ctx, im.bytes, im.size, "m");
    mtk_tensor *t = mtk_st_load(ctx, f, "x", MTK_BFLOAT16);
    assert_non_null(t);
    assert_int_equal(t->dtype, MTK_BFLOAT16);
    assert_memory_equal(mtk_tensor_data(t), bf16, sizeof bf16);
    assert_memory_equal(mtk_tensor_data(mtk_st_load(ctx, f, "x", MTK_FLOAT16)), f16, sizeof f16);
    assert_memory_equal(mtk_tensor_data(mtk_st_load(ctx, f, "x", MTK_FLOAT8_E4M3FN)), e4m3, sizeof e4m3);
    assert_memory_equal(mtk_tensor_data(mtk_st_load(ctx, f, "x", MTK_FLOAT8_E5M2)), e5m2, sizeof e5m2);
    mtk_tensor *same = mtk_st_load(ctx, f, "x", MTK_DTYPE_UNDEFINED);
    assert_int_equal(mtk_storage_kind_of(same->storage), MTK_STORAGE_OWNED);
    assert_memory_equal(mtk_tensor_data(same), x, sizeof x);
    mtk_tensor *i64 = mtk_st_load(ctx, f, "x", MTK_INT64);
    assert_int_equal(((int64_t *)mtk_tensor_data(i64))[8], 500);
    assert_int_equal(((int64_t *)mtk_tensor_data(i64))[9], -2);
    mtk_st_close(f);
    mtk_ctx_free(ctx);
    free(im.bytes);

    /* and back: bfloat16 bits to float32 */
    const char *header = "{\"b\":{\"dtype\":\"BF16\",\"shape\":[4],\"data_offsets\":[0,8]}}";
    static const uint16_t bits[4] = { 0x3f80, 0x4049, 0xc000, 0x7f80 };
    image bi = make_image(header, strlen(header), 8, bits);
    ctx = mtk_ctx_new();
    f = mtk_st_open_memory(ctx, bi.bytes, bi.size, "m");
    float *out = mtk_tensor_data(mtk_st_load(ctx, f, "b", MTK_FLOAT32));
    assert_true(out[0] == 1.0f && out[1] == 3.140625f && out[2] == -2.0f && out[3] == INFINITY);
    mtk_st_close(f);
    mtk_ctx_free(ctx);
    free(bi.bytes);
}

/* float32 -> bfloat16 on load rounds as c10::BFloat16 does: ties to even,
 * a carry into infinity, and every NaN (either sign, any payload) the
 * canonical 0x7fc0 */
static void load_to_bf16_rounds_ties_to_even_and_canonicalizes_nan(void **state)
{
    (void)state;
    static const uint32_t bits[8] = { 0x3f808000u, 0x3f818000u, 0x3f808001u, 0x7f7fffffu,
                                      0x7fc00001u, 0xffc00000u, 0x7f800001u, 0xbf7fffffu };
    static const uint16_t want[8] = { 0x3f80, 0x3f82, 0x3f81, 0x7f80, 0x7fc0, 0x7fc0, 0x7fc0, 0xbf80 };
    float x[8];
    memcpy(x, bits, sizeof x);
    image im = f32_image(x, 8);
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_st_file *f = mtk_st_open_memory(ctx, im.bytes, im.size, "m");
    mtk_tensor *t = mtk_st_load(ctx, f, "x", MTK_BFLOAT16);
    assert_non_null(t);
    assert_memory_equal(mtk_tensor_data(t), want, sizeof want);
    mtk_st_close(f);
    mtk_ctx_free(ctx);
    free(im.bytes);
}

/* A (3, 4) int16 tensor 0..11. */
static image grid_image(void)
{
    int16_t v[12];
    for (int i = 0; i < 12; i++) v[i] = (int16_t)i;
    const char *header = "{\"g\":{\"dtype\":\"I16\",\"shape\":[3,4],\"data_offsets\":[0,24]}}";
    return make_image(header, strlen(header), 24, v);
}

static void load_slice_takes_rows_or_columns(void **state)
{
    (void)state;
    image im = grid_image();
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_st_file *f = mtk_st_open_memory(ctx, im.bytes, im.size, "m");
    mtk_tensor *rows = mtk_st_load_slice(ctx, f, "g", 0, 1, 3, MTK_DTYPE_UNDEFINED); /* g[1:3] */
    assert_non_null(rows);
    assert_int_equal(rows->shape[0], 2);
    assert_int_equal(rows->shape[1], 4);
    static const int16_t want_rows[8] = { 4, 5, 6, 7, 8, 9, 10, 11 };
    assert_memory_equal(mtk_tensor_data(rows), want_rows, sizeof want_rows);
    mtk_tensor *cols = mtk_st_load_slice(ctx, f, "g", -1, 1, 3, MTK_FLOAT32); /* g[:, 1:3].float() */
    assert_non_null(cols);
    assert_int_equal(cols->dtype, MTK_FLOAT32);
    assert_int_equal(cols->shape[0], 3);
    assert_int_equal(cols->shape[1], 2);
    static const float want_cols[6] = { 1, 2, 5, 6, 9, 10 };
    assert_memory_equal(mtk_tensor_data(cols), want_cols, sizeof want_cols);
    mtk_tensor *none = mtk_st_load_slice(ctx, f, "g", 1, 2, 2, MTK_DTYPE_UNDEFINED); /* g[:, 2:2] */
    assert_non_null(none);
    assert_int_equal(mtk_tensor_numel(none), 0);

    assert_null(mtk_st_load_slice(ctx, f, "g", 0, 2, 4, MTK_DTYPE_UNDEFINED));
    assert_int_equal(mtk_ctx_status(ctx), MTK_ERR_INDEX);
    assert_non_null(strstr(mtk_ctx_message(ctx), "[2:4] is out of range for dim 0 of tensor 'g' (size 3)"));
    mtk_ctx_clear_error(ctx);
    assert_null(mtk_st_load_slice(ctx, f, "g", 0, 2, 1, MTK_DTYPE_UNDEFINED));
    mtk_ctx_clear_error(ctx);
    assert_null(mtk_st_load_slice(ctx, f, "g", 2, 0, 1, MTK_DTYPE_UNDEFINED));
    assert_string_equal(mtk_ctx_message(ctx), "Dimension out of range (expected to be in range of [-2, 1], but got 2)");
    mtk_st_close(f);
    mtk_ctx_free(ctx);
    free(im.bytes);
}

/* Rows 1..2 of a tensor whose rows are pages: the pages of rows 0 and 3
 * are made unreadable, and the slice still loads. */
static void load_slice_reads_only_the_rows_it_needs(void **state)
{
    (void)state;
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t header_len = page - 8; /* data starts at a page boundary */
    char *header = malloc(header_len + 1);
    int n = snprintf(header, header_len + 1, "{\"r\":{\"dtype\":\"U8\",\"shape\":[4,%zu],\"data_offsets\":[0,%zu]}}",
                     page, 4 * page);
    memset(header + n, ' ', header_len - (size_t)n);
    uint8_t *mem = mmap(NULL, 5 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(mem != MAP_FAILED);
    for (int i = 0; i < 8; i++) mem[i] = (uint8_t)((uint64_t)header_len >> (8 * i));
    memcpy(mem + 8, header, header_len);
    for (size_t r = 0; r < 4; r++) memset(mem + page * (1 + r), (int)(10 + r), page);
    assert_int_equal(mprotect(mem + page, page, PROT_NONE), 0);      /* row 0 */
    assert_int_equal(mprotect(mem + 4 * page, page, PROT_NONE), 0);  /* row 3 */
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_st_file *f = mtk_st_open_memory(ctx, mem, 5 * page, "m");
    assert_non_null(f);
    mtk_tensor *rows = mtk_st_load_slice(ctx, f, "r", 0, 1, 3, MTK_DTYPE_UNDEFINED);
    assert_non_null(rows);
    const uint8_t *data = mtk_tensor_data(rows);
    assert_int_equal(data[0], 11);
    assert_int_equal(data[2 * page - 1], 12);
    mtk_st_close(f);
    mtk_ctx_free(ctx);
    munmap(mem, 5 * page);
    free(header);
}

static void read_into_fills_an_existing_tensor_converting(void **state)
{
    (void)state;
    image im = grid_image();
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_st_file *f = mtk_st_open_memory(ctx, im.bytes, im.size, "m.safetensors");
    /* contiguous f64 destination */
    mtk_tensor *d = mtk_tensor_new(ctx, MTK_FLOAT64, SHAPE(3, 4), 2, NULL, MTK_DEVICE_CPU);
    assert_true(mtk_tensor_alloc_storage(d));
    assert_true(mtk_st_read_into(ctx, f, "g", d));
    assert_true(((double *)mtk_tensor_data(d))[11] == 11.0);
    /* a transposed (column-major) int64 destination */
    mtk_tensor *t = mtk_tensor_new(ctx, MTK_INT64, SHAPE(3, 4), 2, SHAPE(1, 3), MTK_DEVICE_CPU);
    assert_true(mtk_tensor_alloc_storage(t));
    assert_true(mtk_st_read_into(ctx, f, "g", t));
    const int64_t *tv = mtk_tensor_data(t);
    assert_int_equal(tv[1], 4);  /* element (1, 0) */
    assert_int_equal(tv[3], 1);  /* element (0, 1) */
    assert_int_equal(tv[11], 11);
    /* wrong shape, meta destination */
    mtk_tensor *wrong = mtk_tensor_new(ctx, MTK_INT16, SHAPE(4, 3), 2, NULL, MTK_DEVICE_CPU);
    assert_true(mtk_tensor_alloc_storage(wrong));
    assert_false(mtk_st_read_into(ctx, f, "g", wrong));
    assert_int_equal(mtk_ctx_status(ctx), MTK_ERR_SHAPE);
    assert_string_equal(mtk_ctx_message(ctx),
                        "read_into: tensor 'g' has shape [3, 4] in m.safetensors but the destination is [4, 3]");
    mtk_ctx_clear_error(ctx);
    mtk_tensor *meta = mtk_tensor_new(ctx, MTK_INT16, SHAPE(3, 4), 2, NULL, MTK_DEVICE_META);
    assert_false(mtk_st_read_into(ctx, f, "g", meta));
    assert_int_equal(mtk_ctx_status(ctx), MTK_ERR_META_NO_DATA);
    mtk_st_close(f);
    mtk_ctx_free(ctx);
    free(im.bytes);
}

/* 5M float32 values (several 16 MB chunks) read as bfloat16 and as they
 * are, a strided destination, and a bad read that fails the whole batch
 * before any thread starts. */
static void read_into_many_fills_every_destination_with_threads(void **state)
{
    (void)state;
    enum { N = 5 << 20 };
    float *values = malloc((size_t)N * 4);
    for (int i = 0; i < N; i++) values[i] = (float)(i % 1000) + 0.5f;
    char header[128];
    snprintf(header, sizeof header, "%-120s", "{\"big\":{\"dtype\":\"F32\",\"shape\":[5242880],\"data_offsets\":[0,20971520]}}");
    image im = make_image(header, 120, (size_t)N * 4, values);
    const char *path = write_temp(&im);
    free(im.bytes);
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_st_file *f = mtk_st_open(ctx, path);
    image g = grid_image();
    mtk_st_file *small = mtk_st_open_memory(ctx, g.bytes, g.size, "grid");
    mtk_tensor *same = mtk_tensor_new(ctx, MTK_FLOAT32, SHAPE(N), 1, NULL, MTK_DEVICE_CPU);
    mtk_tensor *half = mtk_tensor_new(ctx, MTK_BFLOAT16, SHAPE(N), 1, NULL, MTK_DEVICE_CPU);
    mtk_tensor *cols = mtk_tensor_new(ctx, MTK_INT32, SHAPE(3, 4), 2, SHAPE(1, 3), MTK_DEVICE_CPU);
    assert_true(mtk_tensor_alloc_storage(same) && mtk_tensor_alloc_storage(half) && mtk_tensor_alloc_storage(cols));
    mtk_st_read reads[] = { { f, "big", same }, { f, "big", half }, { small, "g", cols } };
    assert_true(mtk_st_read_into_many(ctx, reads, 3, 2));
    assert_memory_equal(mtk_tensor_data(same), values, (size_t)N * 4);
    const uint16_t *h = mtk_tensor_data(half);
    assert_int_equal(h[0], 0x3f00);        /* 0.5 */
    assert_int_equal(h[N - 1], 0x445c);    /* (5242879 % 1000) + 0.5 = 879.5 -> 880 in bfloat16 (torch) */
    assert_int_equal(((int32_t *)mtk_tensor_data(cols))[3], 1); /* element (0, 1) */
    mtk_st_read bad[] = { { f, "big", same }, { small, "nope", cols } };
    assert_false(mtk_st_read_into_many(ctx, bad, 2, 0));
    assert_string_equal(mtk_ctx_message(ctx), "grid: no tensor named 'nope'");
    mtk_st_close(small);
    mtk_st_close(f);
    mtk_ctx_free(ctx);
    free(g.bytes);
    free(values);
    remove_temp(path);
}

/* RssFile of /proc/self/status in KiB (the mapped file pages this
 * process holds); -1 where there is none. */
static long rss_file_kib(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kib = -1;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "RssFile: %ld", &kib) == 1) break;
    if (f) fclose(f);
    return kib;
}

/* A whole-model read goes through the page cache into the destinations,
 * not through the mapping: the process holds no 20 MiB of file pages
 * beside its copies (a load would peak at twice the model), and the
 * values, converted through the read buffer too, are the file's. */
static void read_into_many_keeps_no_file_pages_in_the_process(void **state)
{
    (void)state;
    enum { N = 5 << 20 };
    float *values = malloc((size_t)N * 4);
    for (int i = 0; i < N; i++) values[i] = (float)(i % 4093) * 0.37f - 700.0f;
    char header[128];
    snprintf(header, sizeof header, "%-120s", "{\"big\":{\"dtype\":\"F32\",\"shape\":[5242880],\"data_offsets\":[0,20971520]}}");
    image im = make_image(header, 120, (size_t)N * 4, values);
    const char *path = write_temp(&im);
    free(im.bytes);
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_st_file *f = mtk_st_open(ctx, path);
    assert_non_null(f);
    mtk_tensor *same = mtk_tensor_new(ctx, MTK_FLOAT32, SHAPE(N), 1, NULL, MTK_DEVICE_CPU);
    mtk_tensor *half = mtk_tensor_new(ctx, MTK_BFLOAT16, SHAPE(N), 1, NULL, MTK_DEVICE_CPU);
    assert_true(mtk_tensor_alloc_storage(same) && mtk_tensor_alloc_storage(half));
    long before = rss_file_kib();
    mtk_st_read reads[] = { { f, "big", same }, { f, "big", half } };
    assert_true(mtk_st_read_into_many(ctx, reads, 2, 2));
    long after = rss_file_kib();
    if (before >= 0 && after >= 0 && after - before > 4096)
        fail_msg("RssFile grew by %ld KiB over a 20480 KiB read", after - before);
    assert_memory_equal(mtk_tensor_data(same), values, (size_t)N * 4);
    const uint16_t *h = mtk_tensor_data(half);
    for (int i = 0; i < N; i++)
        if (h[i] != mtk_f32_to_bf16(values[i])) fail_msg("element %d: 0x%04x, want 0x%04x", i, h[i], mtk_f32_to_bf16(values[i]));
    mtk_st_close(f);
    mtk_ctx_free(ctx);
    free(values);
    remove_temp(path);
}

/* A file cut short after it was opened: every copy out of the lost bytes
 * is an I/O error naming the file, never a SIGBUS from the mapping. */
static void reads_of_a_file_truncated_after_open_fail_cleanly(void **state)
{
    (void)state;
    enum { N = 1 << 20 }; /* 4 MiB of float32 */
    char header[128];
    snprintf(header, sizeof header, "%-120s", "{\"w\":{\"dtype\":\"F32\",\"shape\":[1048576],\"data_offsets\":[0,4194304]}}");
    image im = make_image(header, 120, (size_t)N * 4, NULL);
    const char *path = write_temp(&im);
    free(im.bytes);
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_st_file *f = mtk_st_open(ctx, path);
    assert_non_null(f);
    assert_int_equal(truncate(path, 8 + 120 + 4096), 0); /* one page of data left */
    assert_null(mtk_st_load(ctx, f, "w", MTK_DTYPE_UNDEFINED));
    assert_int_equal(mtk_ctx_status(ctx), MTK_ERR_IO);
    assert_non_null(strstr(mtk_ctx_message(ctx), "t.safetensors: cannot read"));
    mtk_ctx_clear_error(ctx);
    assert_null(mtk_st_load(ctx, f, "w", MTK_BFLOAT16)); /* a conversion reads the mapping */
    assert_int_equal(mtk_ctx_status(ctx), MTK_ERR_IO);
    mtk_ctx_clear_error(ctx);
    mtk_tensor *dst = mtk_tensor_new(ctx, MTK_FLOAT16, SHAPE(N), 1, NULL, MTK_DEVICE_CPU);
    assert_true(mtk_tensor_alloc_storage(dst));
    mtk_st_read reads[] = { { f, "w", dst } };
    assert_false(mtk_st_read_into_many(ctx, reads, 1, 2));
    assert_int_equal(mtk_ctx_status(ctx), MTK_ERR_IO);
    assert_non_null(strstr(mtk_ctx_message(ctx), "cannot read tensor 'w'"));
    mtk_st_close(f);
    mtk_ctx_free(ctx);
    remove_temp(path);
}

static void open_reports_missing_files_and_directories(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    assert_null(mtk_st_open(ctx, "/nonexistent/x.safetensors"));
    assert_int_equal(mtk_ctx_status(ctx), MTK_ERR_IO);
    assert_string_equal(mtk_ctx_message(ctx), "/nonexistent/x.safetensors: cannot open: No such file or directory");
    mtk_ctx_clear_error(ctx);
    assert_null(mtk_st_open(ctx, "/tmp"));
    assert_non_null(strstr(mtk_ctx_message(ctx), "/tmp: not a regular file"));
    mtk_ctx_free(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(st_dtypes_have_the_formats_names_sizes_and_mtk_dtypes),
        cmocka_unit_test(open_memory_lists_tensors_in_offset_order),
        cmocka_unit_test(open_accepts_what_the_reference_reader_accepts),
        cmocka_unit_test(open_rejects_each_broken_rule_with_its_own_message),
        cmocka_unit_test(open_rejects_nul_padding),
        cmocka_unit_test(open_rejects_bad_lengths_before_reading_the_header),
        cmocka_unit_test(corpus_files_fail_cleanly_or_open),
        cmocka_unit_test(view_is_zero_copy_over_the_mapping_and_outlives_close),
        cmocka_unit_test(view_of_misaligned_bytes_is_a_copy),
        cmocka_unit_test(unsigned_wide_tensors_are_listed_but_not_read),
        cmocka_unit_test(load_converts_as_torch_to_does),
        cmocka_unit_test(load_to_bf16_rounds_ties_to_even_and_canonicalizes_nan),
        cmocka_unit_test(load_slice_takes_rows_or_columns),
        cmocka_unit_test(load_slice_reads_only_the_rows_it_needs),
        cmocka_unit_test(read_into_fills_an_existing_tensor_converting),
        cmocka_unit_test(read_into_many_fills_every_destination_with_threads),
        cmocka_unit_test(read_into_many_keeps_no_file_pages_in_the_process),
        cmocka_unit_test(reads_of_a_file_truncated_after_open_fail_cleanly),
        cmocka_unit_test(open_reports_missing_files_and_directories),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
