/* diffusers' transformer denoisers (SD3, FLUX, Lumina 2): the calls their
 * pipelines make at an image size (models/diffusers.h), and the built-in
 * transformers' forwards on those inputs.  tests/diffusion/test_dit.py
 * compares keys, counts, output shapes and FLOPs with diffusers itself. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "models/diffusers.h"
#include "mtk/mtk.h"

#define SHAPE(...) ((const int64_t[]){ __VA_ARGS__ })

typedef struct dit_case {
    mtk_ctx *ctx;
    model_config *config;
    mtk_module *model;
    diffusers_call calls[DIFFUSERS_MAX_CALLS];
    int32_t ncalls;
} dit_case;

/* The built-in `name`'s calls at `image` and its model on meta. */
static void load(dit_case *t, const char *name, const diffusers_image *image)
{
    t->ctx = mtk_ctx_new();
    const mtk_builtin_model *b = mtk_builtin_model_find(name);
    assert_non_null(b);
    t->config = mtk_model_config_parse(t->ctx, b->config_json, name);
    assert_non_null(t->config);
    const diffusers_component *component = diffusers_component_of(models_family_lookup(t->config->model_type));
    assert_non_null(component);
    assert_int_equal(component->role, DIFFUSERS_DENOISER);
    t->ncalls = component->calls(t->config, image, t->calls, DIFFUSERS_MAX_CALLS);
    if (t->ncalls < 0) return;
    mtk_model_resolve_options options = { .dtype = MTK_DTYPE_UNDEFINED, .meta = true };
    t->model = mtk_model_resolve(t->ctx, name, &options, NULL);
    if (!t->model) fail_msg("%s: %s", name, mtk_ctx_message(t->ctx));
}

/* Releases the case (the parsed config is the caller's to free). */
static void done(dit_case *t)
{
    mtk_model_config_free(t->config);
    mtk_ctx_free(t->ctx);
}

static void assert_input(const diffusers_call *call, int32_t i, const char *name, int32_t ndim, const int64_t *shape)
{
    assert_true(i < call->nin);
    assert_string_equal(call->in[i].name, name);
    assert_int_equal(call->in[i].ndim, ndim);
    for (int32_t d = 0; d < ndim; d++) assert_int_equal(call->in[i].shape[d], shape[d]);
}

/* The model's forward on the call's inputs: its one output's shape. */
static void assert_forward(dit_case *t, const diffusers_call *call, int32_t ndim, const int64_t *shape)
{
    mtk_module_io io = { .nin = call->nin };
    assert_true(diffusers_call_tensors(t->ctx, call, t->config->dtype, io.in));
    if (!mtk_module_call(t->model, &io)) fail_msg("forward: %s", mtk_ctx_message(t->ctx));
    assert_int_equal(io.nout, 1);
    assert_int_equal(io.out[0]->ndim, ndim);
    for (int32_t d = 0; d < ndim; d++) assert_int_equal(io.out[0]->shape[d], shape[d]);
}

static const diffusers_image image_1024 = { .height = 1024, .width = 1024, .batch = 1, .steps = 28, .guidance = true };

static void sd3_batches_the_negative_prompt_and_predicts_the_latents(void **state)
{
    (void)state;
    dit_case t;
    load(&t, "sd-3.5-medium-transformer", &image_1024);
    assert_int_equal(t.ncalls, 1);
    const diffusers_call *call = &t.calls[0];
    assert_int_equal(call->per_image, 28);
    assert_input(call, 0, "hidden_states", 4, SHAPE(2, 16, 128, 128));
    assert_input(call, 1, "encoder_hidden_states", 3, SHAPE(2, 333, 4096));
    assert_input(call, 2, "pooled_projections", 2, SHAPE(2, 2048));
    assert_input(call, 3, "timestep", 1, SHAPE(2));
    assert_forward(&t, call, 4, SHAPE(2, 16, 128, 128));
    done(&t);
}

static void flux_packs_the_latents_and_runs_twice_with_true_cfg(void **state)
{
    (void)state;
    dit_case t;
    load(&t, "flux.1-dev-transformer", &image_1024);
    assert_int_equal(t.ncalls, 1);
    const diffusers_call *call = &t.calls[0];
    assert_int_equal(call->per_image, 56);
    assert_input(call, 0, "hidden_states", 3, SHAPE(1, 4096, 64));
    assert_input(call, 1, "encoder_hidden_states", 3, SHAPE(1, 512, 4096));
    assert_input(call, 4, "img_ids", 2, SHAPE(4096, 3));
    assert_input(call, 5, "txt_ids", 2, SHAPE(512, 3));
    assert_input(call, 6, "guidance", 1, SHAPE(1));
    assert_forward(&t, call, 3, SHAPE(1, 4096, 64));
    done(&t);
}

static void lumina2_runs_the_negative_prompt_as_a_second_call(void **state)
{
    (void)state;
    dit_case t;
    load(&t, "lumina-image-2.0-transformer", &image_1024);
    assert_int_equal(t.ncalls, 1);
    const diffusers_call *call = &t.calls[0];
    assert_int_equal(call->per_image, 56);
    assert_input(call, 0, "hidden_states", 4, SHAPE(1, 16, 128, 128));
    assert_input(call, 2, "encoder_hidden_states", 3, SHAPE(1, 256, 2304));
    assert_input(call, 3, "encoder_attention_mask", 2, SHAPE(1, 256));
    assert_int_equal(call->in[3].dtype, MTK_INT64);
    assert_forward(&t, call, 4, SHAPE(1, 16, 128, 128));
    done(&t);
}

static void an_image_that_does_not_pack_is_refused_with_its_size(void **state)
{
    (void)state;
    dit_case t;
    diffusers_image image = image_1024;
    image.height = 1000; /* FLUX packs 2 x 2 latents: multiples of 16 pixels */
    load(&t, "flux.1-dev-transformer", &image);
    assert_int_equal(t.ncalls, -1);
    const char *message = mtk_ctx_message(t.ctx);
    if (!strstr(message, "1000x1024") || !strstr(message, "16")) fail_msg("message: %s", message);
    done(&t);
}

static void lumina2_past_its_rope_table_is_an_error(void **state)
{
    (void)state;
    dit_case t;
    diffusers_image image = image_1024;
    image.height = 8208; /* 513 rows of 2 x 2 latent patches: axes_lens has 512 */
    load(&t, "lumina-image-2.0-transformer", &image);
    assert_int_equal(t.ncalls, 1);
    mtk_module_io io = { .nin = t.calls[0].nin };
    assert_true(diffusers_call_tensors(t.ctx, &t.calls[0], t.config->dtype, io.in));
    assert_false(mtk_module_call(t.model, &io));
    if (!strstr(mtk_ctx_message(t.ctx), "axes_lens")) fail_msg("message: %s", mtk_ctx_message(t.ctx));
    done(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(sd3_batches_the_negative_prompt_and_predicts_the_latents),
        cmocka_unit_test(flux_packs_the_latents_and_runs_twice_with_true_cfg),
        cmocka_unit_test(lumina2_runs_the_negative_prompt_as_a_second_call),
        cmocka_unit_test(an_image_that_does_not_pack_is_refused_with_its_size),
        cmocka_unit_test(lumina2_past_its_rope_table_is_an_error),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
