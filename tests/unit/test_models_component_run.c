/* mtk_component_run and mtk_component_arguments (include/mtk/run.h): a
 * diffusers component runs by diffusers' argument names in any order, the
 * VAE's methods give the latent and image shapes and leave the root on
 * forward, and bad calls fail with an error naming the arguments.  (The
 * values against diffusers: tests/diffusion/test_component_run.py.) */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "mtk/mtk.h"

static const char unet_json[] =
    "{\"_class_name\": \"UNet2DConditionModel\", \"block_out_channels\": [8, 16], \"layers_per_block\": 1,"
    " \"down_block_types\": [\"CrossAttnDownBlock2D\", \"DownBlock2D\"],"
    " \"up_block_types\": [\"UpBlock2D\", \"CrossAttnUpBlock2D\"], \"attention_head_dim\": 2,"
    " \"cross_attention_dim\": 6, \"norm_num_groups\": 4, \"in_channels\": 4, \"out_channels\": 3%s}";
static const char xl_fields[] =
    ", \"addition_embed_type\": \"text_time\", \"addition_time_embed_dim\": 4,"
    " \"projection_class_embeddings_input_dim\": 29";
static const char vae_json[] =
    "{\"_class_name\": \"AutoencoderKL\", \"block_out_channels\": [4, 8], \"layers_per_block\": 1,"
    " \"down_block_types\": [\"DownEncoderBlock2D\", \"DownEncoderBlock2D\"],"
    " \"up_block_types\": [\"UpDecoderBlock2D\", \"UpDecoderBlock2D\"], \"norm_num_groups\": 4,"
    " \"latent_channels\": 2}";

/* The component of `json` with initialized weights on the cpu. */
static mtk_module *build(mtk_ctx *ctx, const char *json)
{
    mtk_model_config *c = mtk_model_config_parse(ctx, json, "test.json");
    assert_non_null(c);
    mtk_module *m = mtk_model_build_config(ctx, c, MTK_FLOAT32);
    mtk_model_config_free(c);
    if (!m) fail_msg("%s", mtk_ctx_message(ctx));
    return m;
}

static mtk_module *unet(mtk_ctx *ctx, bool xl)
{
    char json[1024];
    snprintf(json, sizeof json, unet_json, xl ? xl_fields : "");
    return build(ctx, json);
}

/* A float32 cpu tensor of `shape` holding 0.01 * ((i * 7) % 23 - 11). */
static mtk_tensor *filled(mtk_ctx *ctx, int32_t ndim, const int64_t *shape)
{
    mtk_tensor *t = mtk_tensor_new(ctx, MTK_FLOAT32, shape, ndim, NULL, MTK_DEVICE_CPU);
    assert_true(t && mtk_tensor_alloc_storage(t));
    float *v = mtk_tensor_data(t);
    for (int64_t i = 0; i < mtk_tensor_numel(t); i++) v[i] = 0.01f * (float)((i * 7) % 23 - 11);
    return t;
}

static void arguments_are_diffusers_names_with_what_is_required(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    const char *names[8];
    int32_t required = -1;
    assert_int_equal(mtk_component_arguments(unet(ctx, false), "forward", names, 8, &required), 5);
    assert_int_equal(required, 3);
    assert_string_equal(names[0], "sample");
    assert_string_equal(names[2], "encoder_hidden_states");
    assert_string_equal(names[4], "time_ids");
    /* SDXL's added conditions are required by its forward */
    assert_int_equal(mtk_component_arguments(unet(ctx, true), NULL, names, 8, &required), 5);
    assert_int_equal(required, 5);
    mtk_module *vae = build(ctx, vae_json);
    assert_int_equal(mtk_component_arguments(vae, "encode", names, 8, &required), 1);
    assert_string_equal(names[0], "x");
    assert_int_equal(mtk_component_arguments(vae, "decode", names, 8, &required), 1);
    assert_string_equal(names[0], "z");
    assert_int_equal(mtk_component_arguments(vae, "sample", names, 8, &required), -1);
    assert_int_equal(mtk_ctx_status(ctx), MTK_OK);
    mtk_ctx_free(ctx);
}

static void unet_runs_by_name_in_any_order(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_module *m = unet(ctx, true);
    mtk_tensor *sample = filled(ctx, 4, (int64_t[]){ 2, 4, 6, 4 });
    mtk_tensor *t = mtk_full(ctx, NULL, 0, 10.0, MTK_FLOAT32);
    mtk_tensor *context = filled(ctx, 3, (int64_t[]){ 2, 5, 6 });
    mtk_tensor *text = filled(ctx, 2, (int64_t[]){ 2, 5 }), *ids = filled(ctx, 2, (int64_t[]){ 2, 6 });
    mtk_component_inputs a = { "forward", { "sample", "timestep", "encoder_hidden_states", "text_embeds", "time_ids" },
                               { sample, t, context, text, ids }, 5 };
    mtk_component_inputs b = { NULL, { "time_ids", "encoder_hidden_states", "sample", "text_embeds", "timestep" },
                               { ids, context, sample, text, t }, 5 };
    mtk_model_outputs x, y;
    if (!mtk_component_run(m, &a, &x) || !mtk_component_run(m, &b, &y)) fail_msg("%s", mtk_ctx_message(ctx));
    assert_int_equal(x.count, 1);
    assert_string_equal(x.names[0], "sample");
    const mtk_tensor *o = x.tensors[0];
    assert_int_equal(o->ndim, 4);
    assert_true(o->shape[0] == 2 && o->shape[1] == 3 && o->shape[2] == 6 && o->shape[3] == 4);
    mtk_tensor *cx = mtk_contiguous(ctx, x.tensors[0]), *cy = mtk_contiguous(ctx, y.tensors[0]);
    assert_memory_equal(mtk_tensor_data(cx), mtk_tensor_data(cy), mtk_tensor_nbytes(cx));
    mtk_ctx_free(ctx);
}

static void vae_methods_give_latents_and_images_and_leave_forward(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_module *m = build(ctx, vae_json);
    mtk_component_inputs enc = { "encode", { "x" }, { filled(ctx, 4, (int64_t[]){ 1, 3, 8, 6 }) }, 1 };
    mtk_model_outputs out;
    if (!mtk_component_run(m, &enc, &out)) fail_msg("%s", mtk_ctx_message(ctx));
    assert_string_equal(out.names[0], "latent_dist.mean");
    const mtk_tensor *z = out.tensors[0];
    assert_true(z->ndim == 4 && z->shape[1] == 2 && z->shape[2] == 4 && z->shape[3] == 3);
    mtk_component_inputs dec = { "decode", { "z" }, { out.tensors[0] }, 1 };
    if (!mtk_component_run(m, &dec, &out)) fail_msg("%s", mtk_ctx_message(ctx));
    assert_string_equal(out.names[0], "sample");
    assert_true(out.tensors[0]->shape[1] == 3 && out.tensors[0]->shape[2] == 8 && out.tensors[0]->shape[3] == 6);
    /* the root's own forward is diffusers' forward again: decode(encode(x)) */
    mtk_tensor *image = filled(ctx, 4, (int64_t[]){ 1, 3, 8, 6 });
    mtk_tensor *direct = mtk_module_forward(m, image);
    assert_non_null(direct);
    assert_true(direct->shape[1] == 3 && direct->shape[2] == 8);
    mtk_ctx_free(ctx);
}

/* Runs `in` on m, expecting a failure whose message holds `words`. */
static void fails_with(mtk_module *m, const mtk_component_inputs *in, const char *words)
{
    mtk_ctx *ctx = mtk_module_ctx(m);
    mtk_model_outputs out;
    assert_false(mtk_component_run(m, in, &out));
    if (!strstr(mtk_ctx_message(ctx), words)) fail_msg("'%s' lacks '%s'", mtk_ctx_message(ctx), words);
    mtk_ctx_clear_error(ctx);
}

static void bad_calls_fail_naming_the_arguments(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_module *plain = unet(ctx, false), *xl = unet(ctx, true), *vae = build(ctx, vae_json);
    mtk_tensor *s = filled(ctx, 4, (int64_t[]){ 1, 4, 4, 4 }), *t = mtk_full(ctx, NULL, 0, 1.0, MTK_FLOAT32);
    mtk_tensor *c = filled(ctx, 3, (int64_t[]){ 1, 3, 6 });
    mtk_component_inputs in = { NULL, { "sample", "timestep", "prompt" }, { s, t, c }, 3 };
    fails_with(plain, &in, "takes no argument 'prompt' (it takes sample, timestep, encoder_hidden_states");
    in = (mtk_component_inputs){ NULL, { "sample", "timestep", "sample" }, { s, t, s }, 3 };
    fails_with(plain, &in, "argument 'sample' given twice");
    in = (mtk_component_inputs){ NULL, { "sample", "timestep" }, { s, t }, 2 };
    fails_with(plain, &in, "needs the argument 'encoder_hidden_states'");
    in = (mtk_component_inputs){ NULL, { "sample", "timestep", "encoder_hidden_states" }, { s, t, c }, 3 };
    fails_with(xl, &in, "needs the argument 'text_embeds'");
    in = (mtk_component_inputs){ NULL, { "sample", "timestep", "encoder_hidden_states", "time_ids" }, { s, t, c, c }, 4 };
    fails_with(plain, &in, "'time_ids' is given but 'text_embeds' is not");
    in = (mtk_component_inputs){ "decode", { "z" }, { s }, 1 };
    fails_with(plain, &in, "has no method 'decode' (it has forward)");
    in = (mtk_component_inputs){ "sample", { "z" }, { s }, 1 };
    fails_with(vae, &in, "has no method 'sample' (it has encode, decode, forward)");
    mtk_module *linear = mtk_nn_linear(ctx, 2, 2, true);
    in = (mtk_component_inputs){ NULL, { "sample" }, { s }, 1 };
    fails_with(linear, &in, "not a diffusers component");
    mtk_ctx_free(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(arguments_are_diffusers_names_with_what_is_required),
        cmocka_unit_test(unet_runs_by_name_in_any_order),
        cmocka_unit_test(vae_methods_give_latents_and_images_and_leave_forward),
        cmocka_unit_test(bad_calls_fail_naming_the_arguments),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
