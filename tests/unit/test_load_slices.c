/* Slices of a model read from a checkpoint (mtk_load_slices, mtk/load.h):
 * each slice gets its own tensor holding exactly its box, read from the
 * keys it overlaps (per-expert keys of a fused tensor included), only its
 * bytes are counted, the model stays on meta, and a bad slice is an error
 * value before anything is read. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "mtk/mtk.h"
#include "unit_files.h"
#include "unit_models.h"

/* A mixtral of one layer: 3 experts of intermediate 4, hidden 8, vocab 11. */
static const char mixtral_config[] =
    "{\"model_type\": \"mixtral\", \"architectures\": [\"MixtralModel\"], \"hidden_size\": 8,"
    " \"intermediate_size\": 4, \"num_hidden_layers\": 1, \"num_attention_heads\": 2,"
    " \"num_key_value_heads\": 1, \"vocab_size\": 11, \"num_local_experts\": 3, \"num_experts_per_tok\": 1}";

typedef struct fixture {
    char dir[64];
    mtk_ctx *ctx;
    mtk_module *model;
    mtk_checkpoint *ckpt;
    mtk_load_spec spec;
} fixture;

/* The model on meta and a checkpoint of it: element i of every tensor is
 * i, except the experts, written per expert (w1 gate, w3 up, w2 down) with
 * element (r, c) of expert e, part p equal to 1000 e + 100 p + 10 r + c. */
static void setup(fixture *f)
{
    char path[128];
    snprintf(path, sizeof path, "%s/model.safetensors", unit_temp_dir(f->dir, "slices"));
    f->ctx = mtk_ctx_new();
    f->model = unit_model_from_text(f->ctx, mixtral_config, "mixtral");
    assert_non_null(f->model);
    mtk_st_writer *w = mtk_st_writer_new(f->ctx);
    mtk_state_dict *sd = mtk_module_state_dict(f->model);
    for (int32_t i = 0; i < mtk_state_dict_count(sd); i++) {
        const char *key;
        mtk_tensor *t = mtk_state_dict_at(sd, i, &key);
        if (strstr(key, "experts.")) continue;
        mtk_tensor *v = mtk_arange(f->ctx, 0, (double)mtk_tensor_numel(t), 1, MTK_FLOAT32);
        assert_true(mtk_st_writer_add(w, key, mtk_reshape(f->ctx, v, t->shape, t->ndim)));
    }
    static const char *const parts[3] = { "w1", "w3", "w2" };
    char name[128];
    for (int e = 0; e < 3; e++)
        for (int p = 0; p < 3; p++) {
            const int64_t shape[2] = { p < 2 ? 4 : 8, p < 2 ? 8 : 4 };
            mtk_tensor *v = mtk_tensor_new(f->ctx, MTK_FLOAT32, shape, 2, NULL, MTK_DEVICE_CPU);
            assert_true(mtk_tensor_alloc_storage(v));
            float *data = mtk_tensor_data(v);
            for (int64_t r = 0; r < shape[0]; r++)
                for (int64_t c = 0; c < shape[1]; c++) data[r * shape[1] + c] = (float)(1000 * e + 100 * p + 10 * r + c);
            snprintf(name, sizeof name, "layers.0.block_sparse_moe.experts.%d.%s.weight", e, parts[p]);
            assert_true(mtk_st_writer_add(w, name, v));
        }
    assert_true(mtk_st_writer_write(w, path));
    mtk_st_writer_free(w);
    f->ckpt = mtk_checkpoint_open(f->ctx, path);
    assert_non_null(f->ckpt);
    f->spec = (mtk_load_spec){ .rules = mtk_model_key_rules("mixtral") };
}

static void teardown(fixture *f)
{
    mtk_checkpoint_close(f->ckpt);
    mtk_ctx_free(f->ctx);
    unit_remove_tree(f->dir);
}

static mtk_load_slice slice2(const char *name, int64_t o0, int64_t o1, int64_t s0, int64_t s1)
{
    return (mtk_load_slice){ .name = name, .ndim = 2, .offset = { o0, o1 }, .shape = { s0, s1 } };
}

static void a_column_block_is_read_row_by_row_and_only_its_bytes_count(void **state)
{
    (void)state;
    fixture f;
    setup(&f);
    /* embed_tokens (11, 8): rows 2..6, columns 3..6 */
    mtk_load_slice s[2] = { slice2("embed_tokens.weight", 2, 3, 5, 4), slice2("embed_tokens.weight", 0, 0, 11, 0) };
    mtk_load_result r;
    assert_true(mtk_load_slices(f.ctx, f.model, f.ckpt, &f.spec, s, 2, &r));
    const float *data = mtk_tensor_data(s[0].tensor);
    assert_int_equal(s[0].tensor->shape[0], 5);
    assert_int_equal(s[0].tensor->shape[1], 4);
    for (int64_t i = 0; i < 5; i++)
        for (int64_t j = 0; j < 4; j++) assert_true(data[i * 4 + j] == (float)((2 + i) * 8 + 3 + j));
    assert_int_equal(s[0].bytes, 5 * 4 * 4);
    assert_int_equal(mtk_tensor_numel(s[1].tensor), 0); /* an empty chunk of an uneven split */
    assert_int_equal(s[1].bytes, 0);
    assert_int_equal(r.bytes, 5 * 4 * 4);
    assert_int_equal(r.tensors, 2);
    assert_int_equal(r.parameters, 20);
    assert_true(mtk_tensor_is_meta(mtk_module_tensor(f.model, "embed_tokens.weight"))); /* the model stays on meta */
    teardown(&f);
}

static void a_slice_of_fused_experts_is_read_from_the_per_expert_keys(void **state)
{
    (void)state;
    fixture f;
    setup(&f);
    /* gate_up_proj (3, 8, 8): experts 1..2, rows 2..5 (the end of gate, w1,
     * and the start of up, w3), columns 5..7 */
    mtk_load_slice s = { .name = "layers.0.mlp.experts.gate_up_proj", .ndim = 3, .offset = { 1, 2, 5 },
                         .shape = { 2, 4, 3 } };
    mtk_load_result r;
    assert_true(mtk_load_slices(f.ctx, f.model, f.ckpt, &f.spec, &s, 1, &r));
    const float *data = mtk_tensor_data(s.tensor); /* (2, 4, 3) */
    for (int e = 0; e < 2; e++)
        for (int row = 0; row < 4; row++)
            for (int c = 0; c < 3; c++) {
                int expert = 1 + e, fused_row = 2 + row, part = fused_row < 4 ? 0 : 1, r_in = fused_row % 4;
                assert_true(data[(e * 4 + row) * 3 + c] == (float)(1000 * expert + 100 * part + 10 * r_in + 5 + c));
            }
    assert_int_equal(s.bytes, 2 * 4 * 3 * 4);
    teardown(&f);
}

static void a_slice_out_of_bounds_is_an_index_error_before_any_read(void **state)
{
    (void)state;
    fixture f;
    setup(&f);
    mtk_load_slice s[2] = { slice2("embed_tokens.weight", 0, 0, 11, 8), slice2("embed_tokens.weight", 9, 0, 3, 8) };
    mtk_load_result r;
    assert_false(mtk_load_slices(f.ctx, f.model, f.ckpt, &f.spec, s, 2, &r));
    assert_int_equal(mtk_ctx_status(f.ctx), MTK_ERR_INDEX);
    assert_non_null(strstr(mtk_ctx_message(f.ctx), "slice of 'embed_tokens.weight' is out of bounds: dim 0 offset 9 "
                                                   "size 3 does not fit in 11 (tensor shape [11, 8])"));
    assert_null(s[0].tensor); /* nothing allocated, nothing read */
    mtk_ctx_clear_error(f.ctx);

    mtk_load_slice bad = slice2("layers.0.no_such.weight", 0, 0, 1, 1);
    assert_false(mtk_load_slices(f.ctx, f.model, f.ckpt, &f.spec, &bad, 1, &r));
    assert_int_equal(mtk_ctx_status(f.ctx), MTK_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(mtk_ctx_message(f.ctx), "'layers.0.no_such.weight': MixtralModel has no tensor"));
    mtk_ctx_clear_error(f.ctx);

    mtk_load_slice flat = { .name = "norm.weight", .ndim = 2, .offset = { 0, 0 }, .shape = { 1, 8 } };
    assert_false(mtk_load_slices(f.ctx, f.model, f.ckpt, &f.spec, &flat, 1, &r));
    assert_non_null(strstr(mtk_ctx_message(f.ctx), "slice of 'norm.weight' has 2 dims, the tensor has 1"));
    teardown(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_column_block_is_read_row_by_row_and_only_its_bytes_count),
        cmocka_unit_test(a_slice_of_fused_experts_is_read_from_the_per_expert_keys),
        cmocka_unit_test(a_slice_out_of_bounds_is_an_index_error_before_any_read),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
