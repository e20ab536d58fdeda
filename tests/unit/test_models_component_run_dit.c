/* mtk_component_run / mtk_component_arguments (mtk/run.h) on the
 * transformer denoisers: the arguments each DiT's forward takes, a forward
 * on the cpu from named inputs in any order with the timestep cast as the
 * pipeline casts it, and the errors for missing, unknown and repeated
 * arguments, a padded caption mask and a model that is no component.
 * tests/diffusion/test_dit_forward.py compares the values with diffusers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "mtk/mtk.h"

#define SHAPE(...) ((const int64_t[]){ __VA_ARGS__ })

static const char sd3_config[] =
    "{\"_class_name\": \"SD3Transformer2DModel\", \"sample_size\": 16, \"patch_size\": 2, \"in_channels\": 4,"
    " \"num_layers\": 2, \"attention_head_dim\": 4, \"num_attention_heads\": 2, \"joint_attention_dim\": 6,"
    " \"caption_projection_dim\": 8, \"pooled_projection_dim\": 5, \"out_channels\": 4,"
    " \"pos_embed_max_size\": 16, \"dual_attention_layers\": [0], \"qk_norm\": \"rms_norm\"}";

static const char lumina_config[] =
    "{\"_class_name\": \"Lumina2Transformer2DModel\", \"sample_size\": 16, \"patch_size\": 2, \"in_channels\": 4,"
    " \"hidden_size\": 16, \"num_layers\": 1, \"num_refiner_layers\": 1, \"num_attention_heads\": 2,"
    " \"num_kv_heads\": 1, \"multiple_of\": 8, \"axes_dim_rope\": [2, 2, 4], \"axes_lens\": [16, 20, 20],"
    " \"cap_feat_dim\": 6}";

typedef struct run_case {
    mtk_ctx *ctx;
    mtk_model_config *config;
    mtk_module *model;
} run_case;

/* `json`'s model on the cpu, deterministically initialized. */
static void build(run_case *t, const char *json)
{
    t->ctx = mtk_ctx_new();
    t->config = mtk_model_config_parse(t->ctx, json, "test");
    assert_non_null(t->config);
    assert_true(mtk_ctx_push_device(t->ctx, MTK_DEVICE_CPU) && mtk_ctx_push_init_mode(t->ctx, MTK_INIT_INIT));
    t->model = mtk_model_build_config(t->ctx, t->config, MTK_FLOAT32);
    mtk_ctx_pop_init_mode(t->ctx);
    mtk_ctx_pop_device(t->ctx);
    if (!t->model) fail_msg("%s", mtk_ctx_message(t->ctx));
}

static void done(run_case *t)
{
    mtk_model_config_free(t->config);
    mtk_ctx_free(t->ctx);
}

static mtk_tensor *cpu_full(mtk_ctx *ctx, const int64_t *shape, int32_t ndim, double value, mtk_dtype dtype)
{
    assert_true(mtk_ctx_push_device(ctx, MTK_DEVICE_CPU));
    mtk_tensor *t = mtk_full(ctx, shape, ndim, value, dtype);
    mtk_ctx_pop_device(ctx);
    assert_non_null(t);
    return t;
}

static const char flux_config[] =
    "{\"_class_name\": \"FluxTransformer2DModel\", \"patch_size\": 1, \"in_channels\": 8, \"num_layers\": 1,"
    " \"num_single_layers\": 1, \"attention_head_dim\": 8, \"num_attention_heads\": 2,"
    " \"joint_attention_dim\": 12, \"pooled_projection_dim\": 6, \"guidance_embeds\": %s,"
    " \"axes_dims_rope\": [2, 2, 4]}";

/* mtk_component_run of `n` named inputs: the sample, NULL on an error. */
static mtk_tensor *run(run_case *t, const mtk_named_tensor *in, int32_t n)
{
    mtk_component_inputs args = { .count = n };
    for (int32_t i = 0; i < n; i++) args.names[i] = in[i].name, args.tensors[i] = in[i].tensor;
    mtk_model_outputs out;
    if (!mtk_component_run(t->model, &args, &out)) return NULL;
    assert_int_equal(out.count, 1);
    assert_string_equal(out.names[0], "sample");
    return out.tensors[0];
}

/* SD3's four arguments, in another order than the forward's. */
static int32_t sd3_inputs(mtk_ctx *ctx, mtk_named_tensor *in)
{
    in[0] = (mtk_named_tensor){ .name = "timestep", .tensor = cpu_full(ctx, SHAPE(2), 1, 500.0, MTK_FLOAT32) };
    in[1] = (mtk_named_tensor){ .name = "pooled_projections",
                                .tensor = cpu_full(ctx, SHAPE(2, 5), 2, 0.5, MTK_FLOAT32) };
    in[2] = (mtk_named_tensor){ .name = "hidden_states",
                                .tensor = cpu_full(ctx, SHAPE(2, 4, 8, 8), 4, 0.25, MTK_FLOAT32) };
    in[3] = (mtk_named_tensor){ .name = "encoder_hidden_states",
                                .tensor = cpu_full(ctx, SHAPE(2, 3, 6), 3, -0.5, MTK_FLOAT32) };
    return 4;
}

static void arguments_follow_the_forward_signature(void **state)
{
    (void)state;
    static const struct {
        const char *model;
        const char *names[8];
    } cases[] = {
        { "sd-3.5-medium-transformer", { "hidden_states", "encoder_hidden_states", "pooled_projections", "timestep" } },
        { "flux.1-dev-transformer", { "hidden_states", "encoder_hidden_states", "pooled_projections", "timestep",
                                      "img_ids", "txt_ids", "guidance" } },
        { "lumina-image-2.0-transformer", { "hidden_states", "timestep", "encoder_hidden_states",
                                            "encoder_attention_mask" } },
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        mtk_ctx *ctx = mtk_ctx_new();
        mtk_model_resolve_options opts = { .dtype = MTK_DTYPE_UNDEFINED, .meta = true };
        mtk_model_info info;
        mtk_module *m = mtk_model_resolve(ctx, cases[k].model, &opts, &info);
        if (!m) fail_msg("%s", mtk_ctx_message(ctx));
        const char *names[MTK_COMPONENT_MAX_INPUTS];
        int32_t required = -1, n = mtk_component_arguments(m, NULL, names, MTK_COMPONENT_MAX_INPUTS, &required);
        int32_t want = 0;
        while (want < 8 && cases[k].names[want]) want++;
        assert_int_equal(n, want);
        assert_int_equal(required, want);
        for (int32_t i = 0; i < n; i++) assert_string_equal(names[i], cases[k].names[i]);
        mtk_ctx_free(ctx);
    }
}

/* FLUX's seven arguments in the forward's order (4 patches, 3 tokens). */
static void flux_inputs(mtk_ctx *ctx, mtk_named_tensor *in)
{
    in[0] = (mtk_named_tensor){ .name = "hidden_states", .tensor = cpu_full(ctx, SHAPE(1, 4, 8), 3, 0.25, MTK_FLOAT32) };
    in[1] = (mtk_named_tensor){ .name = "encoder_hidden_states", .tensor = cpu_full(ctx, SHAPE(1, 3, 12), 3, 0.1, MTK_FLOAT32) };
    in[2] = (mtk_named_tensor){ .name = "pooled_projections", .tensor = cpu_full(ctx, SHAPE(1, 6), 2, 0.5, MTK_FLOAT32) };
    in[3] = (mtk_named_tensor){ .name = "timestep", .tensor = cpu_full(ctx, SHAPE(1), 1, 0.5, MTK_FLOAT32) };
    in[4] = (mtk_named_tensor){ .name = "img_ids", .tensor = cpu_full(ctx, SHAPE(4, 3), 2, 1.0, MTK_FLOAT32) };
    in[5] = (mtk_named_tensor){ .name = "txt_ids", .tensor = cpu_full(ctx, SHAPE(3, 3), 2, 0.0, MTK_FLOAT32) };
    in[6] = (mtk_named_tensor){ .name = "guidance", .tensor = cpu_full(ctx, SHAPE(1), 1, 3.5, MTK_FLOAT32) };
}

static void flux_takes_guidance_only_with_its_embedder(void **state)
{
    (void)state;
    char json[1024];
    run_case t;
    snprintf(json, sizeof json, flux_config, "false");
    build(&t, json);
    const char *names[MTK_COMPONENT_MAX_INPUTS];
    int32_t required = -1;
    assert_int_equal(mtk_component_arguments(t.model, "forward", names, MTK_COMPONENT_MAX_INPUTS, &required), 6);
    assert_int_equal(required, 6);
    assert_string_equal(names[5], "txt_ids");
    mtk_named_tensor in[7];
    flux_inputs(t.ctx, in);
    mtk_tensor *out = run(&t, in, 6);
    if (!out) fail_msg("%s", mtk_ctx_message(t.ctx));
    assert_int_equal(out->shape[2], 8);
    assert_null(run(&t, in, 7));
    assert_non_null(strstr(mtk_ctx_message(t.ctx), "takes no argument 'guidance'"));
    done(&t);

    snprintf(json, sizeof json, flux_config, "true");
    build(&t, json);
    assert_int_equal(mtk_component_arguments(t.model, "forward", names, MTK_COMPONENT_MAX_INPUTS, &required), 7);
    assert_int_equal(required, 7);
    flux_inputs(t.ctx, in);
    assert_null(run(&t, in, 6));
    assert_non_null(strstr(mtk_ctx_message(t.ctx), "needs the argument 'guidance'"));
    mtk_ctx_clear_error(t.ctx);
    out = run(&t, in, 7);
    if (!out) fail_msg("%s", mtk_ctx_message(t.ctx));
    done(&t);
}

static void sd3_runs_on_named_inputs_in_any_order(void **state)
{
    (void)state;
    run_case t;
    build(&t, sd3_config);
    mtk_named_tensor in[4];
    mtk_tensor *out = run(&t, in, sd3_inputs(t.ctx, in));
    if (!out) fail_msg("%s", mtk_ctx_message(t.ctx));
    assert_int_equal(out->device, MTK_DEVICE_CPU);
    assert_int_equal(out->ndim, 4);
    const int64_t want[] = { 2, 4, 8, 8 };
    for (int32_t d = 0; d < 4; d++) assert_int_equal(out->shape[d], want[d]);
    done(&t);
}

/* An integer timestep is cast to float32 as the pipeline's scheduler
 * gives it: the same sample as the float32 one. */
static void sd3_casts_an_integer_timestep_to_float32(void **state)
{
    (void)state;
    run_case t;
    build(&t, sd3_config);
    mtk_named_tensor in[4];
    sd3_inputs(t.ctx, in);
    mtk_tensor *want = mtk_contiguous(t.ctx, run(&t, in, 4));
    assert_non_null(want);
    in[0].tensor = cpu_full(t.ctx, SHAPE(2), 1, 500.0, MTK_INT64);
    mtk_tensor *got = mtk_contiguous(t.ctx, run(&t, in, 4));
    if (!got) fail_msg("%s", mtk_ctx_message(t.ctx));
    assert_int_equal(got->dtype, MTK_FLOAT32);
    assert_memory_equal(mtk_tensor_data(got), mtk_tensor_data(want), (size_t)mtk_tensor_numel(want) * sizeof(float));
    done(&t);
}

static void a_missing_argument_is_named(void **state)
{
    (void)state;
    run_case t;
    build(&t, sd3_config);
    mtk_named_tensor in[4];
    sd3_inputs(t.ctx, in);
    assert_null(run(&t, in, 3)); /* no encoder_hidden_states */
    assert_int_equal(mtk_ctx_status(t.ctx), MTK_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(mtk_ctx_message(t.ctx), "needs the argument 'encoder_hidden_states'"));
    done(&t);
}

static void unknown_and_repeated_arguments_are_errors(void **state)
{
    (void)state;
    run_case t;
    build(&t, sd3_config);
    mtk_named_tensor in[5];
    sd3_inputs(t.ctx, in);
    in[4] = (mtk_named_tensor){ .name = "guidance", .tensor = in[0].tensor };
    assert_null(run(&t, in, 5));
    assert_non_null(strstr(mtk_ctx_message(t.ctx), "no argument 'guidance'"));
    done(&t);

    build(&t, sd3_config);
    sd3_inputs(t.ctx, in);
    in[4] = (mtk_named_tensor){ .name = "timestep", .tensor = in[0].tensor };
    assert_null(run(&t, in, 5));
    assert_non_null(strstr(mtk_ctx_message(t.ctx), "'timestep' given twice"));
    done(&t);
}

static void lumina2_refuses_a_padded_mask_and_runs_a_full_one(void **state)
{
    (void)state;
    run_case t;
    build(&t, lumina_config);
    mtk_named_tensor in[4] = {
        { .name = "hidden_states", .tensor = cpu_full(t.ctx, SHAPE(1, 4, 8, 8), 4, 0.25, MTK_FLOAT32) },
        { .name = "timestep", .tensor = cpu_full(t.ctx, SHAPE(1), 1, 0.3, MTK_FLOAT32) },
        { .name = "encoder_hidden_states", .tensor = cpu_full(t.ctx, SHAPE(1, 3, 6), 3, 0.1, MTK_FLOAT32) },
        { .name = "encoder_attention_mask", .tensor = cpu_full(t.ctx, SHAPE(1, 3), 2, 1.0, MTK_INT64) },
    };
    mtk_tensor *out = run(&t, in, 4);
    if (!out) fail_msg("%s", mtk_ctx_message(t.ctx));
    assert_int_equal(out->shape[1], 4);
    ((int64_t *)mtk_tensor_data(in[3].tensor))[2] = 0;
    assert_null(run(&t, in, 4));
    assert_int_equal(mtk_ctx_status(t.ctx), MTK_ERR_NOT_IMPLEMENTED);
    assert_non_null(strstr(mtk_ctx_message(t.ctx), "encoder_attention_mask holds 0 at row 0, column 2"));
    done(&t);
}

static void a_language_model_is_no_component_and_the_error_lists_them(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_model_resolve_options opts = { .dtype = MTK_DTYPE_UNDEFINED, .meta = true };
    mtk_model_info info;
    mtk_module *m = mtk_model_resolve(ctx, "gpt2", &opts, &info);
    assert_non_null(m);
    const char *names[MTK_COMPONENT_MAX_INPUTS];
    assert_int_equal(mtk_component_arguments(m, NULL, names, MTK_COMPONENT_MAX_INPUTS, NULL), -1);
    mtk_component_inputs in = { 0 };
    mtk_model_outputs out;
    assert_false(mtk_component_run(m, &in, &out));
    const char *msg = mtk_ctx_message(ctx);
    assert_non_null(strstr(msg, "not a diffusers component"));
    static const char *const classes[] = { "UNet2DConditionModel", "AutoencoderKL", "SD3Transformer2DModel",
                                           "FluxTransformer2DModel", "Lumina2Transformer2DModel" };
    for (size_t i = 0; i < sizeof classes / sizeof *classes; i++) assert_non_null(strstr(msg, classes[i]));
    mtk_ctx_free(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(arguments_follow_the_forward_signature),
        cmocka_unit_test(flux_takes_guidance_only_with_its_embedder),
        cmocka_unit_test(sd3_runs_on_named_inputs_in_any_order),
        cmocka_unit_test(sd3_casts_an_integer_timestep_to_float32),
        cmocka_unit_test(a_missing_argument_is_named),
        cmocka_unit_test(unknown_and_repeated_arguments_are_errors),
        cmocka_unit_test(lumina2_refuses_a_padded_mask_and_runs_a_full_one),
        cmocka_unit_test(a_language_model_is_no_component_and_the_error_lists_them),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
