/* The model loader as a library (mtk/load.h): per-expert tensors land in
 * their slice of the fused tensor, renames and ignorable keys follow the
 * rules given, wrapper prefixes are stripped, and every failure is a value
 * with the model left on meta. */
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

/* A mixtral of one layer: 3 experts of intermediate 4, hidden 8. */
static const char mixtral_config[] =
    "{\"model_type\": \"mixtral\", \"architectures\": [\"MixtralModel\"], \"hidden_size\": 8,"
    " \"intermediate_size\": 4, \"num_hidden_layers\": 1, \"num_attention_heads\": 2,"
    " \"num_key_value_heads\": 1, \"vocab_size\": 11, \"num_local_experts\": 3, \"num_experts_per_tok\": 1}";

/* Writes every tensor of `model`'s state dict as a checkpoint, each element
 * i of a tensor equal to i, except that experts are
 * written per expert in the block_sparse_moe layout (w1 gate, w3 up, w2
 * down), `prefix` before every key. */
static void write_per_expert(mtk_ctx *ctx, mtk_module *model, const char *path, const char *prefix)
{
    mtk_st_writer *w = mtk_st_writer_new(ctx);
    mtk_state_dict *sd = mtk_module_state_dict(model);
    char name[256];
    for (int32_t i = 0; i < mtk_state_dict_count(sd); i++) {
        const char *key;
        mtk_tensor *t = mtk_state_dict_at(sd, i, &key);
        if (strstr(key, "experts.")) continue;
        mtk_tensor *v = mtk_arange(ctx, 0, (double)mtk_tensor_numel(t), 1, MTK_FLOAT32);
        v = mtk_reshape(ctx, v, t->shape, t->ndim);
        snprintf(name, sizeof name, "%s%s", prefix, key);
        assert_true(mtk_st_writer_add(w, name, v));
    }
    static const char *const names[3] = { "w1", "w3", "w2" };
    for (int e = 0; e < 3; e++)
        for (int p = 0; p < 3; p++) { /* expert e, part p: every element 100 * e + 10 * p */
            const int64_t shape[2] = { p < 2 ? 4 : 8, p < 2 ? 8 : 4 };
            mtk_tensor *v = mtk_full(ctx, shape, 2, 100.0 * e + 10.0 * p, MTK_FLOAT32);
            snprintf(name, sizeof name, "%slayers.0.block_sparse_moe.experts.%d.%s.weight", prefix, e, names[p]);
            assert_true(mtk_st_writer_add(w, name, v));
        }
    assert_true(mtk_st_writer_write(w, path));
    mtk_st_writer_free(w);
}

static float at3(const mtk_tensor *t, int64_t a, int64_t b, int64_t c)
{
    const float *data = mtk_tensor_data(t);
    return data[a * t->stride[0] + b * t->stride[1] + c * t->stride[2]];
}

static void per_expert_tensors_fill_their_slices_of_the_fused_ones(void **state)
{
    (void)state;
    char dir[64], path[128];
    snprintf(path, sizeof path, "%s/model.safetensors", unit_temp_dir(dir, "load"));
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_module *model = unit_model_from_text(ctx, mixtral_config, "mixtral");
    assert_non_null(model);
    write_per_expert(ctx, model, path, "");
    mtk_checkpoint *ckpt = mtk_checkpoint_open(ctx, path);
    assert_non_null(ckpt);
    mtk_load_spec spec = { .rules = mtk_model_key_rules("mixtral"), .threads = 2 };
    mtk_load_result r;
    assert_true(mtk_load_module(ctx, model, ckpt, &spec, &r));
    assert_int_equal(r.nmissing + r.nunexpected + r.nmismatched + r.nskipped, 0);
    assert_int_equal(r.converted, 2); /* gate_up_proj, down_proj */
    const mtk_tensor *gate_up = mtk_module_tensor(model, "layers.0.mlp.experts.gate_up_proj"); /* (3, 8, 8) */
    const mtk_tensor *down = mtk_module_tensor(model, "layers.0.mlp.experts.down_proj");       /* (3, 8, 4) */
    assert_non_null(gate_up);
    assert_int_equal(gate_up->device, MTK_DEVICE_CPU);
    for (int e = 0; e < 3; e++) {
        assert_true(at3(gate_up, e, 0, 0) == 100.0f * e);         /* gate: rows 0..3  */
        assert_true(at3(gate_up, e, 3, 7) == 100.0f * e);
        assert_true(at3(gate_up, e, 4, 0) == 100.0f * e + 10.0f); /* up:   rows 4..7  */
        assert_true(at3(gate_up, e, 7, 7) == 100.0f * e + 10.0f);
        assert_true(at3(down, e, 7, 3) == 100.0f * e + 20.0f);
    }
    mtk_checkpoint_close(ckpt);
    mtk_ctx_free(ctx);
    unit_remove_tree(dir);
}

static void prefix_on_every_key_is_stripped_and_reported(void **state)
{
    (void)state;
    char dir[64], path[128];
    snprintf(path, sizeof path, "%s/model.safetensors", unit_temp_dir(dir, "load"));
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_module *model = unit_model_from_text(ctx, mixtral_config, "mixtral");
    write_per_expert(ctx, model, path, "module._orig_mod.");
    mtk_checkpoint *ckpt = mtk_checkpoint_open(ctx, path);
    mtk_load_spec spec = { .rules = mtk_model_key_rules("mixtral") };
    mtk_load_result r;
    assert_true(mtk_load_module(ctx, model, ckpt, &spec, &r));
    assert_string_equal(r.stripped_prefix, "module._orig_mod.");
    mtk_checkpoint_close(ckpt);
    mtk_ctx_free(ctx);
    unit_remove_tree(dir);
}

static void mismatch_is_an_error_value_and_the_model_stays_on_meta(void **state)
{
    (void)state;
    char dir[64], path[128];
    snprintf(path, sizeof path, "%s/model.safetensors", unit_temp_dir(dir, "load"));
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_module *model = unit_model_from_text(ctx, mixtral_config, "mixtral");
    write_per_expert(ctx, model, path, "");
    mtk_checkpoint *ckpt = mtk_checkpoint_open(ctx, path);
    mtk_load_result r;
    /* without the family's rules the per-expert keys are unexpected, the fused tensors missing */
    assert_false(mtk_load_module(ctx, model, ckpt, NULL, &r));
    assert_int_equal(mtk_ctx_status(ctx), MTK_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(mtk_ctx_message(ctx), "into MixtralModel: 11 keys do not match (2 missing, 9 unexpected"));
    assert_int_equal(r.nmissing, 2);
    assert_int_equal(mtk_module_tensor(model, "norm.weight")->device, MTK_DEVICE_META);
    mtk_ctx_clear_error(ctx);

    static const mtk_key_rule bad[] = { { .kind = MTK_KEY_RENAME, .pattern = "(unclosed", .target = "" } };
    const mtk_key_rules rules = { "custom", NULL, bad, 1 };
    mtk_load_spec spec = { .rules = &rules };
    assert_false(mtk_load_module(ctx, model, ckpt, &spec, &r));
    assert_non_null(strstr(mtk_ctx_message(ctx), "key rule '(unclosed' does not compile"));
    mtk_ctx_clear_error(ctx);

    assert_false(mtk_load_module(ctx, NULL, ckpt, NULL, &r));
    assert_int_equal(mtk_ctx_status(ctx), MTK_ERR_INVALID_ARGUMENT);
    mtk_ctx_clear_error(ctx);
    assert_false(mtk_load_module(ctx, model, ckpt, NULL, NULL));
    assert_int_equal(mtk_ctx_status(ctx), MTK_ERR_INVALID_ARGUMENT);
    mtk_checkpoint_close(ckpt);
    mtk_ctx_free(ctx);
    unit_remove_tree(dir);
}

/* The model of per_expert_tensors...: every tensor the file holds as the
 * model does is a view of the mapping (zero copy), the fused experts are
 * copies; the views outlive the closed checkpoint, and a write into one is
 * copy-on-write: the file keeps its bytes. */
static void tensors_held_as_the_model_holds_them_are_views_of_the_mapped_file(void **state)
{
    (void)state;
    char dir[64], path[128];
    snprintf(path, sizeof path, "%s/model.safetensors", unit_temp_dir(dir, "load"));
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_module *model = unit_model_from_text(ctx, mixtral_config, "mixtral");
    write_per_expert(ctx, model, path, "");
    mtk_checkpoint *ckpt = mtk_checkpoint_open(ctx, path);
    mtk_load_spec spec = { .rules = mtk_model_key_rules("mixtral"), .threads = 2 };
    mtk_load_result r;
    assert_true(mtk_load_module(ctx, model, ckpt, &spec, &r));
    assert_int_equal(r.mapped, r.tensors - 2); /* all but gate_up_proj and down_proj */
    mtk_checkpoint_close(ckpt);

    mtk_tensor *q = mtk_module_tensor(model, "layers.0.self_attn.q_proj.weight"); /* (8, 8): 0..63 */
    assert_int_equal(mtk_storage_kind_of(q->storage), MTK_STORAGE_MAPPED);
    const mtk_tensor *fused = mtk_module_tensor(model, "layers.0.mlp.experts.gate_up_proj");
    assert_int_equal(mtk_storage_kind_of(fused->storage), MTK_STORAGE_OWNED);
    assert_true(at3(fused, 2, 7, 7) == 210.0f);
    float *data = mtk_tensor_data(q);
    assert_true(data[0] == 0.0f && data[63] == 63.0f); /* the checkpoint is closed, the mapping is not */
    data[63] = -1.0f;
    assert_true(((float *)mtk_tensor_data(q))[63] == -1.0f);

    mtk_ctx *other = mtk_ctx_new();
    mtk_st_file *f = mtk_st_open(other, path);
    mtk_tensor *on_disk = mtk_st_load(other, f, "layers.0.self_attn.q_proj.weight", MTK_DTYPE_UNDEFINED);
    assert_non_null(on_disk);
    assert_true(((float *)mtk_tensor_data(on_disk))[63] == 63.0f); /* the write stayed in the process */
    mtk_st_close(f);
    mtk_ctx_free(other);
    mtk_ctx_free(ctx);
    unit_remove_tree(dir);
}

/* With spec.copy nothing stays mapped: every tensor has memory of its own,
 * with the same values. */
static void copy_spec_reads_every_tensor_into_owned_memory(void **state)
{
    (void)state;
    char dir[64], path[128];
    snprintf(path, sizeof path, "%s/model.safetensors", unit_temp_dir(dir, "load"));
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_module *model = unit_model_from_text(ctx, mixtral_config, "mixtral");
    write_per_expert(ctx, model, path, "");
    mtk_checkpoint *ckpt = mtk_checkpoint_open(ctx, path);
    mtk_load_spec spec = { .rules = mtk_model_key_rules("mixtral"), .copy = true };
    mtk_load_result r;
    assert_true(mtk_load_module(ctx, model, ckpt, &spec, &r));
    mtk_checkpoint_close(ckpt);
    assert_int_equal(r.mapped, 0);
    assert_true(r.mapped_bytes == 0);
    mtk_named_tensor *params;
    int32_t n = mtk_module_named_parameters(model, &params);
    assert_true(n > 0);
    for (int32_t i = 0; i < n; i++) assert_int_equal(mtk_storage_kind_of(params[i].tensor->storage), MTK_STORAGE_OWNED);
    const float *q = mtk_tensor_data(mtk_module_tensor(model, "layers.0.self_attn.q_proj.weight"));
    assert_true(q[0] == 0.0f && q[63] == 63.0f);
    mtk_ctx_free(ctx);
    unit_remove_tree(dir);
}

/* A float32 tensor whose bytes do not start on a multiple of 4 in the
 * file (a header of odd length) is copied, not mapped: its values arrive
 * all the same. */
static void misaligned_tensors_are_copied_not_mapped(void **state)
{
    (void)state;
    char dir[64], path[128];
    snprintf(path, sizeof path, "%s/model.safetensors", unit_temp_dir(dir, "load"));
    static const char header[] = "{\"weight\":{\"dtype\":\"F32\",\"shape\":[1,2],\"data_offsets\":[0,8]}}";
    uint64_t n = sizeof header - 1;
    assert_true((8 + n) % 4 != 0);
    const float values[2] = { 1.5f, -2.5f };
    FILE *out = fopen(path, "wb");
    assert_non_null(out);
    uint8_t length[8];
    for (int i = 0; i < 8; i++) length[i] = (uint8_t)(n >> (8 * i));
    assert_int_equal(fwrite(length, 1, 8, out), 8);
    assert_int_equal(fwrite(header, 1, n, out), n);
    assert_int_equal(fwrite(values, 1, sizeof values, out), sizeof values);
    fclose(out);

    mtk_ctx *ctx = mtk_ctx_new();
    mtk_ctx_push_device(ctx, MTK_DEVICE_META);
    mtk_module *linear = mtk_nn_linear(ctx, 2, 1, false);
    mtk_ctx_pop_device(ctx);
    assert_non_null(linear);
    mtk_checkpoint *ckpt = mtk_checkpoint_open(ctx, path);
    assert_non_null(ckpt);
    mtk_load_result r;
    assert_true(mtk_load_module(ctx, linear, ckpt, NULL, &r));
    mtk_checkpoint_close(ckpt);
    assert_int_equal(r.mapped, 0);
    const mtk_tensor *w = mtk_module_tensor(linear, "weight");
    assert_int_equal(mtk_storage_kind_of(w->storage), MTK_STORAGE_OWNED);
    const float *data = mtk_tensor_data(w);
    assert_true(data[0] == 1.5f && data[1] == -2.5f);
    mtk_ctx_free(ctx);
    unit_remove_tree(dir);
}

static void every_family_has_key_rules(void **state)
{
    (void)state;
    for (int32_t i = 0; i < mtk_model_family_count(); i++) {
        const mtk_key_rules *rules = mtk_model_key_rules(mtk_model_family_at(i)->model_type);
        assert_non_null(rules);
        assert_true(rules->count >= 2); /* the legacy renames at least */
    }
    assert_string_equal(mtk_model_key_rules("gpt2")->base_model_prefix, "transformer");
    assert_null(mtk_model_key_rules("no-such-family")->base_model_prefix);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(per_expert_tensors_fill_their_slices_of_the_fused_ones),
        cmocka_unit_test(prefix_on_every_key_is_stripped_and_reported),
        cmocka_unit_test(mismatch_is_an_error_value_and_the_model_stays_on_meta),
        cmocka_unit_test(every_family_has_key_rules),
        cmocka_unit_test(tensors_held_as_the_model_holds_them_are_views_of_the_mapped_file),
        cmocka_unit_test(copy_spec_reads_every_tensor_into_owned_memory),
        cmocka_unit_test(misaligned_tensors_are_copied_not_mapped),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
