/* Modules: the tree and its names, init modes, transitions (to, to_empty,
 * materialize, to(dtype)), tied parameters, templates and meta factories,
 * state dicts, lazy parameters.  Expected names, counts and messages are
 * torch 2.13's (see tests/nn/ for the oracle that compares them in bulk). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "mtk/mtk.h"
#include "nn_test_helpers.h"
#include "core/ctx_internal.h" /* the arena's fault-injection knob */

static float value_at(const mtk_tensor *t, int64_t i) { return ((const float *)mtk_tensor_data(t))[i]; }

/* ------------------------------------------------------------- the tree */

static void sequential_names_are_torch_state_dict_keys(void **state)
{
    (void)state;
    mtk_ctx *ctx = meta_ctx();
    mtk_module *net = mtk_model_simplenet(ctx, NULL);
    assert_non_null(net);
    mtk_state_dict *sd = mtk_module_state_dict(net);
    const char *expected[] = { "0.weight", "0.bias", "2.weight", "2.bias" };
    assert_int_equal(mtk_state_dict_count(sd), 4);
    for (int i = 0; i < 4; i++) {
        const char *name;
        mtk_state_dict_at(sd, i, &name);
        assert_string_equal(name, expected[i]);
    }
    assert_shape(mtk_module_tensor(net, "0.weight"), 2, SHAPE(20, 10));
    assert_shape(mtk_module_tensor(net, "2.bias"), 1, SHAPE(1));
    assert_int_equal(mtk_module_num_parameters(net, false), 241);
    mtk_named_module *mods;
    assert_int_equal(mtk_module_named_modules(net, &mods), 4);
    assert_string_equal(mods[0].name, "");
    assert_string_equal(mods[2].name, "1");
    assert_string_equal(mtk_module_type_name(mods[2].module), "ReLU");
    mtk_ctx_free(ctx);
}

static void repr_matches_torch(void **state)
{
    (void)state;
    mtk_ctx *ctx = meta_ctx();
    mtk_module *net = mtk_model_simplenet(ctx, NULL);
    assert_string_equal(mtk_module_repr(net), "Sequential(\n"
                                              "  (0): Linear(in_features=10, out_features=20, bias=True)\n"
                                              "  (1): ReLU()\n"
                                              "  (2): Linear(in_features=20, out_features=1, bias=True)\n"
                                              ")");
    mtk_ctx_free(ctx);
}

static void lookup_of_a_missing_name_says_what_exists(void **state)
{
    (void)state;
    mtk_ctx *ctx = meta_ctx();
    mtk_module *net = mtk_model_simplenet(ctx, NULL);
    assert_null(mtk_module_tensor(net, "0.wieght"));
    assert_error(ctx, MTK_ERR_INDEX, "it has: weight, bias");
    assert_null(mtk_module_child(net, "7"));
    assert_error(ctx, MTK_ERR_INDEX, "no submodule '7'");
    assert_null(mtk_module_find_tensor(net, "3.weight"));
    assert_int_equal(mtk_ctx_status(ctx), MTK_OK);
    mtk_ctx_free(ctx);
}

static void names_with_dots_or_duplicates_are_refused(void **state)
{
    (void)state;
    mtk_ctx *ctx = meta_ctx();
    mtk_module *lin = mtk_nn_linear(ctx, 2, 3, true);
    assert_false(mtk_module_add(lin, "a.b", mtk_nn_identity(ctx)));
    assert_error(ctx, MTK_ERR_INVALID_ARGUMENT, "can't contain \".\"");
    assert_null(mtk_module_new_parameter(lin, "weight", SHAPE(1), 1));
    assert_error(ctx, MTK_ERR_INVALID_ARGUMENT, "'weight' already exists");
    mtk_ctx_free(ctx);
}

static void a_container_is_not_callable(void **state)
{
    (void)state;
    mtk_ctx *ctx = meta_ctx();
    mtk_module *list = mtk_nn_module_list(ctx);
    assert_true(mtk_nn_module_list_append(list, mtk_nn_linear(ctx, 2, 2, true)));
    assert_null(mtk_module_forward(list, meta_input(ctx, 2, SHAPE(1, 2))));
    assert_error(ctx, MTK_ERR_NOT_IMPLEMENTED, "ModuleList is a container with no forward");
    assert_non_null(mtk_module_tensor(list, "0.weight"));
    mtk_ctx_free(ctx);
}

static void a_failed_input_propagates_without_a_new_error(void **state)
{
    (void)state;
    mtk_ctx *ctx = meta_ctx();
    mtk_module *net = mtk_model_simplenet(ctx, NULL);
    mtk_tensor *bad = mtk_module_forward(net, meta_input(ctx, 2, SHAPE(1, 11)));
    assert_null(bad);
    const char *first = mtk_ctx_message(ctx);
    assert_non_null(strstr(first, "linear"));
    assert_null(mtk_module_forward(net, bad));
    assert_string_equal(mtk_ctx_message(ctx), first); /* the first error is kept */
    mtk_ctx_free(ctx);
}

/* ----------------------------------------------------------- init modes */

static void building_under_meta_allocates_nothing(void **state)
{
    (void)state;
    mtk_ctx *ctx = meta_ctx();
    mtk_module *big = mtk_nn_linear(ctx, 100000, 100000, true); /* 40 GB on a real device */
    mtk_tensor *w = mtk_module_tensor(big, "weight");
    assert_int_equal(w->device, MTK_DEVICE_META);
    assert_null(w->storage);
    assert_int_equal(mtk_module_num_parameters(big, false), 10000100000LL);
    assert_true(mtk_ctx_arena_bytes(ctx) < 1024 * 1024);
    mtk_ctx_free(ctx);
}

static void meta_init_mode_means_meta_whatever_the_device(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new(); /* default device cpu */
    mtk_ctx_push_init_mode(ctx, MTK_INIT_META);
    mtk_module *lin = mtk_nn_linear(ctx, 4, 3, true);
    assert_int_equal(mtk_module_tensor(lin, "weight")->device, MTK_DEVICE_META);
    mtk_ctx_free(ctx);
}

static void empty_init_allocates_without_initializing(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_ctx_push_init_mode(ctx, MTK_INIT_EMPTY);
    mtk_module *lin = mtk_nn_linear(ctx, 4, 3, true);
    mtk_tensor *w = mtk_module_tensor(lin, "weight");
    assert_int_equal(w->device, MTK_DEVICE_CPU);
    assert_non_null(mtk_tensor_data(w));
    assert_int_equal(mtk_module_init_mode(lin), MTK_INIT_EMPTY);
    mtk_ctx_free(ctx);
}

static void init_mode_is_deterministic_per_seed(void **state)
{
    (void)state;
    float first[12];
    for (int run = 0; run < 3; run++) {
        mtk_ctx *ctx = mtk_ctx_new();
        mtk_ctx_manual_seed(ctx, run == 2 ? 8 : 7);
        mtk_module *lin = mtk_nn_linear(ctx, 4, 3, true);
        mtk_tensor *w = mtk_module_tensor(lin, "weight");
        bool same = true;
        for (int i = 0; i < 12; i++) {
            float v = value_at(w, i);
            assert_true(fabsf(v) <= 0.5f); /* U(-1/sqrt(4), 1/sqrt(4)) */
            if (run == 0) first[i] = v;
            else same &= first[i] == v;
        }
        if (run == 1) assert_true(same);
        if (run == 2) assert_false(same);
        mtk_ctx_free(ctx);
    }
}

/* ---------------------------------------------------------- transitions */

static void to_on_a_meta_module_fails_with_the_hint(void **state)
{
    (void)state;
    mtk_ctx *ctx = meta_ctx();
    mtk_module *net = mtk_model_simplenet(ctx, NULL);
    assert_false(mtk_module_to_device(net, MTK_DEVICE_CPU));
    assert_int_equal(mtk_ctx_status(ctx), MTK_ERR_META_NO_DATA);
    assert_non_null(strstr(mtk_ctx_message(ctx), "Cannot copy out of meta tensor; no data!"));
    assert_non_null(strstr(mtk_ctx_message(ctx), "to_empty"));
    assert_non_null(strstr(mtk_ctx_message(ctx), "'0.weight'"));
    mtk_ctx_clear_error(ctx);
    /* nothing moved */
    assert_int_equal(mtk_module_tensor(net, "2.bias")->device, MTK_DEVICE_META);
    mtk_ctx_free(ctx);
}

static void to_empty_gives_real_memory_with_the_same_shapes(void **state)
{
    (void)state;
    mtk_ctx *ctx = meta_ctx();
    mtk_module *net = mtk_model_simplenet(ctx, NULL);
    assert_true(mtk_module_to_empty(net, MTK_DEVICE_CPU));
    mtk_tensor *w = mtk_module_tensor(net, "0.weight");
    assert_int_equal(w->device, MTK_DEVICE_CPU);
    assert_non_null(mtk_tensor_data(w));
    assert_shape(w, 2, SHAPE(20, 10));
    assert_true(w->flags & MTK_TENSOR_PARAMETER);
    /* and back: cpu -> meta drops the data */
    assert_true(mtk_module_to_device(net, MTK_DEVICE_META));
    assert_null(mtk_module_tensor(net, "0.weight")->storage);
    mtk_ctx_free(ctx);
}

static void materialize_initializes_deterministically_per_seed(void **state)
{
    (void)state;
    mtk_ctx *ctx = meta_ctx();
    mtk_module *a = mtk_model_simplenet(ctx, NULL), *b = mtk_model_simplenet(ctx, NULL);
    mtk_module *c = mtk_model_simplenet(ctx, NULL);
    assert_true(mtk_module_materialize(a, MTK_DEVICE_CPU, 42));
    assert_true(mtk_module_materialize(b, MTK_DEVICE_CPU, 42));
    assert_true(mtk_module_materialize(c, MTK_DEVICE_CPU, 43));
    mtk_tensor *wa = mtk_module_tensor(a, "0.weight"), *wb = mtk_module_tensor(b, "0.weight");
    mtk_tensor *wc = mtk_module_tensor(c, "0.weight");
    int differ = 0;
    double bound = 1.0 / sqrt(10.0);
    for (int i = 0; i < 200; i++) {
        assert_true(value_at(wa, i) == value_at(wb, i));
        assert_true(fabs(value_at(wa, i)) <= bound);
        differ += value_at(wa, i) != value_at(wc, i);
    }
    assert_true(differ > 190);
    mtk_ctx_free(ctx);
}

static void materialize_recomputes_buffers(void **state)
{
    (void)state;
    mtk_ctx *ctx = meta_ctx();
    mtk_module *bn = mtk_nn_batch_norm(ctx, 2, 5, NULL);
    assert_true(mtk_module_materialize(bn, MTK_DEVICE_CPU, 1));
    mtk_tensor *var = mtk_module_tensor(bn, "running_var"), *mean = mtk_module_tensor(bn, "running_mean");
    mtk_tensor *count = mtk_module_tensor(bn, "num_batches_tracked");
    for (int i = 0; i < 5; i++) {
        assert_true(value_at(var, i) == 1.0f);
        assert_true(value_at(mean, i) == 0.0f);
        assert_true(value_at(mtk_module_tensor(bn, "weight"), i) == 1.0f);
    }
    assert_int_equal(count->dtype, MTK_INT64);
    assert_int_equal(*(int64_t *)mtk_tensor_data(count), 0);
    mtk_ctx_free(ctx);
}

static void to_dtype_converts_floating_tensors_only(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_ctx_manual_seed(ctx, 3);
    mtk_module *bn = mtk_nn_batch_norm(ctx, 1, 4, NULL);
    assert_true(mtk_module_to_dtype(bn, MTK_BFLOAT16));
    assert_int_equal(mtk_module_tensor(bn, "weight")->dtype, MTK_BFLOAT16);
    assert_int_equal(mtk_module_tensor(bn, "running_var")->dtype, MTK_BFLOAT16);
    assert_int_equal(mtk_module_tensor(bn, "num_batches_tracked")->dtype, MTK_INT64);
    assert_false(mtk_module_to_dtype(bn, MTK_INT32));
    assert_error(ctx, MTK_ERR_DTYPE, "only accepts floating point dtypes");
    mtk_ctx_free(ctx);
}

/* torch: nn.Linear(2, 3).to(torch.float8_e4m3fn) converts the weights
 * (float8 is a floating dtype), on meta and on cpu. */
static void to_dtype_accepts_float8_like_torch(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_ctx_manual_seed(ctx, 3);
    mtk_module *real = mtk_model_simplenet(ctx, NULL);
    assert_true(mtk_module_to_dtype(real, MTK_FLOAT8_E4M3FN));
    assert_int_equal(mtk_module_tensor(real, "0.weight")->dtype, MTK_FLOAT8_E4M3FN);
    assert_non_null(mtk_module_tensor(real, "0.weight")->storage);
    assert_true(mtk_ctx_push_device(ctx, MTK_DEVICE_META));
    mtk_module *meta = mtk_model_simplenet(ctx, NULL);
    mtk_ctx_pop_device(ctx);
    assert_true(mtk_module_to_dtype(meta, MTK_FLOAT8_E5M2));
    assert_int_equal(mtk_module_tensor(meta, "2.bias")->dtype, MTK_FLOAT8_E5M2);
    mtk_ctx_free(ctx);
}

/* An embedding and an output projection sharing one weight. */
static mtk_module *tied_model(mtk_ctx *ctx)
{
    mtk_module *m = mtk_nn_module_dict(ctx);
    mtk_nn_module_dict_set(m, "embed", mtk_nn_embedding(ctx, 50, 8, MTK_NN_NO_PADDING_IDX));
    mtk_nn_module_dict_set(m, "lm_head", mtk_nn_linear(ctx, 8, 50, false));
    return mtk_module_tie(m, "lm_head.weight", "embed.weight") ? m : NULL;
}

static void tied_weights_stay_tied_after_materialize(void **state)
{
    (void)state;
    mtk_ctx *ctx = meta_ctx();
    mtk_module *m = tied_model(ctx);
    assert_non_null(m);
    assert_int_equal(mtk_module_num_parameters(m, false), 400); /* counted once */
    mtk_named_tensor *params;
    assert_int_equal(mtk_module_named_parameters(m, &params), 1);
    assert_string_equal(params[0].name, "embed.weight");
    assert_int_equal(mtk_state_dict_count(mtk_module_state_dict(m)), 2); /* both names, as torch */
    assert_true(mtk_module_materialize(m, MTK_DEVICE_CPU, 5));
    mtk_tensor *a = mtk_module_tensor(m, "embed.weight"), *b = mtk_module_tensor(m, "lm_head.weight");
    assert_ptr_equal(a, b);
    assert_ptr_equal(mtk_tensor_data(a), mtk_tensor_data(b));
    assert_true(mtk_module_to_dtype(m, MTK_FLOAT16));
    assert_ptr_equal(mtk_tensor_data(mtk_module_tensor(m, "embed.weight")),
                     mtk_tensor_data(mtk_module_tensor(m, "lm_head.weight")));
    assert_true(mtk_module_to_empty(m, MTK_DEVICE_CPU));
    assert_ptr_equal(mtk_module_tensor(m, "embed.weight"), mtk_module_tensor(m, "lm_head.weight"));
    mtk_ctx_free(ctx);
}

/* to_empty_except leaves the kept tensor on meta (a loader fills it
 * later) and gives the others memory; assign_tensor then gives the kept
 * one its data in place, seen under both tied names. */
static void to_empty_except_keeps_some_on_meta_and_assign_fills_them_tied(void **state)
{
    (void)state;
    mtk_ctx *ctx = meta_ctx();
    mtk_module *m = tied_model(ctx);
    mtk_tensor *tied = mtk_module_tensor(m, "embed.weight");
    assert_true(mtk_module_to_empty_except(m, MTK_DEVICE_CPU, &tied, 1));
    assert_int_equal(tied->device, MTK_DEVICE_META);
    assert_int_equal(mtk_module_init_mode(m), MTK_INIT_EMPTY);
    assert_false(mtk_module_to_empty_except(m, MTK_DEVICE_CPU, NULL, 1)); /* a count without tensors */
    assert_int_equal(mtk_ctx_status(ctx), MTK_ERR_INVALID_ARGUMENT);
    mtk_ctx_clear_error(ctx);

    mtk_ctx_push_device(ctx, MTK_DEVICE_CPU);
    mtk_tensor *data = mtk_full(ctx, tied->shape, tied->ndim, 3.0, MTK_FLOAT32);
    mtk_ctx_pop_device(ctx);
    assert_true(mtk_module_assign_tensor(tied, data));
    assert_true(tied->flags & MTK_TENSOR_PARAMETER);
    mtk_tensor *head = mtk_module_tensor(m, "lm_head.weight");
    assert_ptr_equal(head, tied);
    assert_int_equal(head->device, MTK_DEVICE_CPU);
    assert_ptr_equal(mtk_tensor_data(head), mtk_tensor_data(data));
    assert_true(((const float *)mtk_tensor_data(head))[399] == 3.0f);
    mtk_ctx_free(ctx);
}

static void tie_checks_shapes(void **state)
{
    (void)state;
    mtk_ctx *ctx = meta_ctx();
    mtk_module *m = mtk_nn_module_dict(ctx);
    mtk_nn_module_dict_set(m, "a", mtk_nn_linear(ctx, 3, 4, true));
    mtk_nn_module_dict_set(m, "b", mtk_nn_linear(ctx, 4, 3, true));
    assert_false(mtk_module_tie(m, "a.weight", "b.weight"));
    assert_error(ctx, MTK_ERR_SHAPE, "has shape [4, 3] but 'b.weight' has shape [3, 4]");
    mtk_ctx_free(ctx);
}

static void untie_gives_the_parameter_its_own_tensor_on_meta_and_cpu(void **state)
{
    (void)state;
    mtk_ctx *ctx = meta_ctx();
    mtk_module *m = tied_model(ctx);
    assert_non_null(m);
    mtk_tensor *shared = mtk_module_tensor(m, "embed.weight");
    mtk_tensor *own = mtk_module_untie(m, "lm_head.weight");
    assert_non_null(own);
    assert_ptr_not_equal(own, shared);
    assert_ptr_equal(mtk_module_tensor(m, "lm_head.weight"), own);
    assert_ptr_equal(mtk_module_tensor(m, "embed.weight"), shared);
    assert_int_equal(own->device, MTK_DEVICE_META);
    assert_true(own->flags & MTK_TENSOR_PARAMETER);
    assert_int_equal(mtk_module_num_parameters(m, false), 800); /* now counted twice */
    assert_true(mtk_module_materialize(m, MTK_DEVICE_CPU, 5));
    assert_ptr_not_equal(mtk_tensor_data(mtk_module_tensor(m, "embed.weight")),
                         mtk_tensor_data(mtk_module_tensor(m, "lm_head.weight")));
    /* on a real device the untied tensor starts as a copy of the values */
    mtk_module *t = tied_model(ctx);
    assert_true(mtk_module_materialize(t, MTK_DEVICE_CPU, 7));
    const float *before = mtk_tensor_data(mtk_module_tensor(t, "embed.weight"));
    mtk_tensor *copy = mtk_module_untie(t, "lm_head.weight");
    assert_non_null(copy);
    assert_int_equal(copy->device, MTK_DEVICE_CPU);
    assert_ptr_not_equal(mtk_tensor_data(copy), before);
    assert_memory_equal(mtk_tensor_data(copy), before, 400 * sizeof(float));
    assert_null(mtk_module_untie(t, "lm_head.bias"));
    assert_error(ctx, MTK_ERR_INDEX, "untie: ModuleDict has no parameter 'lm_head.bias'");
    mtk_ctx_free(ctx);
}

/* ------------------------------------------------ templates, factories */

static void templates_are_left_alone_by_transitions_and_state_dicts(void **state)
{
    (void)state;
    mtk_ctx *ctx = meta_ctx();
    mtk_module *model = mtk_nn_module_list(ctx);
    mtk_module *block = mtk_nn_linear(ctx, 16, 16, true);
    assert_true(mtk_module_set_template(model, "block", block));
    for (int i = 0; i < 3; i++) assert_true(mtk_nn_module_list_append(model, mtk_module_copy_meta(block)));
    assert_int_equal(mtk_state_dict_count(mtk_module_state_dict(model)), 6);
    assert_int_equal(mtk_module_num_parameters(model, false), 3 * 272);
    assert_true(mtk_module_materialize(model, MTK_DEVICE_CPU, 9));
    assert_int_equal(mtk_module_tensor(model, "2.weight")->device, MTK_DEVICE_CPU);
    /* the template is still on meta, and not part of the tree */
    assert_ptr_equal(mtk_module_template(model, "block"), block);
    assert_int_equal(mtk_module_tensor(block, "weight")->device, MTK_DEVICE_META);
    mtk_named_module *mods;
    assert_int_equal(mtk_module_named_modules(model, &mods), 4);
    assert_null(mtk_module_template(model, "nope"));
    mtk_ctx_free(ctx);
}

static void copy_meta_keeps_names_shapes_and_ties(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_module *m = tied_model(ctx); /* real, initialized */
    mtk_module *copy = mtk_module_copy_meta(m);
    assert_non_null(copy);
    mtk_tensor *w = mtk_module_tensor(copy, "lm_head.weight");
    assert_int_equal(w->device, MTK_DEVICE_META);
    assert_ptr_equal(w, mtk_module_tensor(copy, "embed.weight"));
    assert_shape(w, 2, SHAPE(50, 8));
    assert_string_equal(mtk_module_repr(copy), mtk_module_repr(m));
    mtk_ctx_free(ctx);
}

static mtk_module *build_two_layers(mtk_ctx *ctx, const void *config)
{
    const int64_t *width = config;
    mtk_module *layers[2] = { mtk_nn_linear(ctx, *width, *width, true), mtk_nn_linear(ctx, *width, 1, true) };
    return mtk_nn_sequential(ctx, 2, layers);
}

static void a_factory_builds_fresh_meta_models(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new(); /* cpu and init mode by default */
    int64_t width = 50000;
    mtk_module *m = mtk_module_build_meta(ctx, build_two_layers, &width);
    assert_non_null(m);
    assert_int_equal(mtk_module_tensor(m, "0.weight")->device, MTK_DEVICE_META);
    assert_int_equal(mtk_ctx_device(ctx), MTK_DEVICE_CPU); /* scopes restored */
    assert_int_equal(mtk_ctx_init_mode(ctx), MTK_INIT_INIT);
    assert_true(mtk_ctx_arena_bytes(ctx) < 1024 * 1024);
    mtk_ctx_free(ctx);
}

/* ---------------------------------------------------------- state dicts */

static void loading_into_meta_assigns(void **state)
{
    (void)state;
    mtk_ctx *ctx = meta_ctx();
    mtk_module *lin = mtk_nn_linear(ctx, 2, 3, true);
    static float w[6] = { 1, 2, 3, 4, 5, 6 }, b[3] = { 7, 8, 9 };
    mtk_state_dict *sd = mtk_state_dict_new(ctx);
    mtk_state_dict_set(sd, "weight", mtk_tensor_from_data(ctx, MTK_FLOAT32, SHAPE(3, 2), 2, NULL, w));
    mtk_state_dict_set(sd, "bias", mtk_tensor_from_data(ctx, MTK_FLOAT32, SHAPE(3), 1, NULL, b));
    assert_true(mtk_module_load_state_dict(lin, sd, NULL, NULL));
    mtk_tensor *weight = mtk_module_tensor(lin, "weight");
    assert_int_equal(weight->device, MTK_DEVICE_CPU);
    assert_true(weight->flags & MTK_TENSOR_PARAMETER);
    assert_true(value_at(weight, 5) == 6.0f);
    /* the module runs on the loaded weights */
    float x[2] = { 1, 1 };
    mtk_tensor *y = mtk_module_forward(lin, mtk_tensor_from_data(ctx, MTK_FLOAT32, SHAPE(1, 2), 2, NULL, x));
    assert_non_null(y);
    assert_true(value_at(y, 0) == 10.0f && value_at(y, 2) == 20.0f);
    mtk_ctx_free(ctx);
}

static void loading_into_a_real_module_copies_and_converts_when_asked(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_module *lin = mtk_nn_linear(ctx, 2, 1, false);
    static double w[2] = { 0.5, -2.0 };
    mtk_state_dict *sd = mtk_state_dict_new(ctx);
    mtk_state_dict_set(sd, "weight", mtk_tensor_from_data(ctx, MTK_FLOAT64, SHAPE(1, 2), 2, NULL, w));
    assert_false(mtk_module_load_state_dict(lin, sd, NULL, NULL));
    assert_error(ctx, MTK_ERR_INVALID_ARGUMENT, "dtype mismatch for weight");
    mtk_load_options o = { .strict = true, .convert_dtype = true };
    mtk_tensor *before = mtk_module_tensor(lin, "weight");
    void *data = mtk_tensor_data(before);
    assert_true(mtk_module_load_state_dict(lin, sd, &o, NULL));
    mtk_tensor *after = mtk_module_tensor(lin, "weight");
    assert_int_equal(after->dtype, MTK_FLOAT32);
    assert_ptr_equal(mtk_tensor_data(after), data); /* copied into place */
    assert_true(value_at(after, 1) == -2.0f);
    mtk_ctx_free(ctx);
}

static void strict_load_lists_every_bad_key(void **state)
{
    (void)state;
    mtk_ctx *ctx = meta_ctx();
    mtk_module *lin = mtk_nn_linear(ctx, 3, 4, true);
    mtk_state_dict *sd = mtk_state_dict_new(ctx);
    mtk_state_dict_set(sd, "weight", meta_input(ctx, 2, SHAPE(2, 3)));
    mtk_state_dict_set(sd, "extra", meta_input(ctx, 1, SHAPE(1)));
    mtk_state_dict_set(sd, "foo", meta_input(ctx, 1, SHAPE(1)));
    mtk_load_report report;
    assert_false(mtk_module_load_state_dict(lin, sd, NULL, &report));
    /* torch 2.13's words, all in one error */
    assert_string_equal(mtk_ctx_message(ctx),
                        "Error(s) in loading state_dict for Linear:\n"
                        "\tMissing key(s) in state_dict: \"bias\". \n"
                        "\tUnexpected key(s) in state_dict: \"extra\", \"foo\". \n"
                        "\tsize mismatch for weight: copying a param with shape torch.Size([2, 3]) from "
                        "checkpoint, the shape in current model is torch.Size([4, 3]).");
    mtk_ctx_clear_error(ctx);
    assert_int_equal(report.nmissing, 1);
    assert_int_equal(report.nunexpected, 2);
    assert_int_equal(report.nmismatched, 1);
    assert_string_equal(report.mismatched[0], "weight");
    /* nothing was loaded */
    assert_shape(mtk_module_tensor(lin, "weight"), 2, SHAPE(4, 3));
    /* non-strict: missing/unexpected are reported, the shape error stays */
    mtk_load_options loose = { .strict = false };
    assert_false(mtk_module_load_state_dict(lin, sd, &loose, &report));
    assert_error(ctx, MTK_ERR_INVALID_ARGUMENT, "size mismatch for weight");
    mtk_ctx_free(ctx);
}

static void meta_source_into_real_module_is_the_copy_out_error(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_module *lin = mtk_nn_linear(ctx, 3, 4, false);
    mtk_state_dict *sd = mtk_state_dict_new(ctx);
    mtk_state_dict_set(sd, "weight", meta_input(ctx, 2, SHAPE(4, 3)));
    assert_false(mtk_module_load_state_dict(lin, sd, NULL, NULL));
    assert_error(ctx, MTK_ERR_META_NO_DATA, "Cannot copy out of meta tensor; no data!");
    mtk_ctx_free(ctx);
}

static void a_tied_key_loaded_once_is_not_missing(void **state)
{
    (void)state;
    mtk_ctx *ctx = meta_ctx();
    mtk_module *m = tied_model(ctx);
    mtk_state_dict *sd = mtk_state_dict_new(ctx);
    mtk_state_dict_set(sd, "embed.weight", mtk_to_empty(ctx, meta_input(ctx, 2, SHAPE(50, 8)), MTK_DEVICE_CPU));
    assert_true(mtk_module_load_state_dict(m, sd, NULL, NULL));
    assert_int_equal(mtk_module_tensor(m, "lm_head.weight")->device, MTK_DEVICE_CPU);
    mtk_ctx_free(ctx);
}

/* ----------------------------------------------------------------- lazy */

static void lazy_parameters_need_an_example_input_to_be_counted(void **state)
{
    (void)state;
    mtk_ctx *ctx = meta_ctx();
    mtk_module *net = mtk_model_lazynet(ctx, NULL);
    mtk_param_stats st;
    assert_true(mtk_module_param_stats(net, &st));
    assert_int_equal(st.total, 224);
    assert_int_equal(st.uninitialized, 2);
    assert_int_equal(st.lazy_modules, 1);
    assert_int_equal(mtk_module_num_parameters(net, false), -1);
    assert_error(ctx, MTK_ERR_INVALID_ARGUMENT, "Run a forward with an example input first");
    assert_false(mtk_init_kaiming_uniform_(mtk_module_tensor(net, "3.weight"), 0, NULL));
    assert_error(ctx, MTK_ERR_INVALID_ARGUMENT, "run a forward with an example input");
    mtk_tensor *y = mtk_module_forward(net, meta_input(ctx, 4, SHAPE(1, 3, 32, 32)));
    assert_shape(y, 2, SHAPE(1, 10));
    assert_int_equal(mtk_module_num_parameters(net, false), 72234);
    assert_shape(mtk_module_tensor(net, "3.weight"), 2, SHAPE(10, 7200));
    assert_string_equal(mtk_module_type_name(mtk_module_child(net, "3")), "Linear");
    assert_null(mtk_module_tensor(net, "3.weight")->storage); /* still nothing allocated */
    mtk_ctx_free(ctx);
}

static void lazy_module_initializes_on_a_real_device(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_module *lin = mtk_nn_lazy_linear(ctx, 3, true);
    static float x[8];
    mtk_tensor *y = mtk_module_forward(lin, mtk_tensor_from_data(ctx, MTK_FLOAT32, SHAPE(2, 4), 2, NULL, x));
    assert_shape(y, 2, SHAPE(2, 3));
    mtk_tensor *w = mtk_module_tensor(lin, "weight");
    bool nonzero = false;
    for (int i = 0; i < 12; i++) {
        assert_true(fabsf(value_at(w, i)) <= 0.5f);
        nonzero |= value_at(w, i) != 0.0f;
    }
    assert_true(nonzero);
    assert_string_equal(mtk_module_repr(lin), "Linear(in_features=4, out_features=3, bias=True)");
    mtk_ctx_free(ctx);
}

static void loading_gives_a_lazy_parameter_its_shape(void **state)
{
    (void)state;
    mtk_ctx *ctx = meta_ctx();
    mtk_module *lin = mtk_nn_lazy_linear(ctx, 3, false);
    mtk_state_dict *sd = mtk_state_dict_new(ctx);
    mtk_state_dict_set(sd, "weight", meta_input(ctx, 2, SHAPE(3, 5)));
    assert_true(mtk_module_load_state_dict(lin, sd, NULL, NULL));
    assert_int_equal(mtk_module_num_parameters(lin, false), 15);
    assert_shape(mtk_module_forward(lin, meta_input(ctx, 2, SHAPE(7, 5))), 2, SHAPE(7, 3));
    mtk_ctx_free(ctx);
}

/* --------------------------------------------------------------- modes */

static void frozen_parameters_count_as_non_trainable(void **state)
{
    (void)state;
    mtk_ctx *ctx = meta_ctx();
    mtk_module *net = mtk_model_simplenet(ctx, NULL);
    mtk_module_requires_grad_(mtk_module_child(net, "0"), false);
    mtk_param_stats st;
    mtk_module_param_stats(net, &st);
    assert_int_equal(st.trainable, 21);
    assert_int_equal(st.non_trainable, 220);
    assert_int_equal(mtk_module_num_parameters(net, true), 21);
    mtk_module_train(net, false);
    assert_false(mtk_module_is_training(mtk_module_child(net, "2")));
    mtk_ctx_free(ctx);
}

/* -------------------------------------------------------- out of memory */

/* Everything nn does to a model, end to end.  False at the first failure. */
static bool nn_scenario(mtk_ctx *ctx)
{
    mtk_ctx_push_device(ctx, MTK_DEVICE_META);
    mtk_module *net = mtk_model_lazynet(ctx, NULL);
    mtk_tensor *x = meta_input(ctx, 4, SHAPE(1, 3, 8, 8));
    mtk_summary *s = x && net ? mtk_summary_new(net, &x, 1) : NULL;
    bool ok = s && mtk_summary_text(s, -1) && mtk_summary_json(s, -1);
    mtk_module *copy = ok ? mtk_module_copy_meta(net) : NULL;
    ok = copy && mtk_module_set_template(net, "copy", copy) && mtk_module_materialize(net, MTK_DEVICE_CPU, 1) &&
         mtk_module_to_dtype(net, MTK_FLOAT16);
    mtk_state_dict *sd = ok ? mtk_module_state_dict(net) : NULL;
    mtk_load_options convert = { .strict = true, .convert_dtype = true };
    ok = sd && mtk_module_load_state_dict(copy, sd, &convert, NULL) && mtk_module_repr(copy);
    mtk_ctx_pop_device(ctx);
    return ok && mtk_ctx_status(ctx) == MTK_OK;
}

static void every_arena_failure_is_out_of_memory(void **state)
{
    (void)state;
    for (int persistent = 0; persistent < 2; persistent++) {
        for (int64_t n = 1;; n++) {
            mtk_ctx *ctx = mtk_ctx_new();
            ctx->arena_fail_at = n;
            ctx->arena_fail_after = persistent;
            bool completed = nn_scenario(ctx);
            bool injected = ctx->arena_requests >= n;
            if (!completed && mtk_ctx_status(ctx) != MTK_ERR_OUT_OF_MEMORY)
                fail_msg("fault %lld: %s", (long long)n, mtk_ctx_message(ctx));
            mtk_ctx_free(ctx);
            if (completed) {
                assert_false(injected);
                break;
            }
            assert_true(n < 100000);
        }
    }
}

/* ------------------------------------------------- rebuilding a child */

static void replace_child_keeps_the_name_and_position(void **state)
{
    (void)state;
    mtk_ctx *ctx = meta_ctx();
    mtk_module *net = mtk_model_simplenet(ctx, NULL);
    assert_non_null(net);
    mtk_module *old = mtk_module_child_at(net, 0, NULL);
    mtk_module *copy = mtk_module_new_like(old); /* a Linear with Linear(10, 20)'s config, no tensors */
    assert_non_null(copy);
    assert_string_equal(mtk_module_type_name(copy), "Linear");
    assert_int_equal(mtk_module_param_count(copy), 0);
    int64_t shape[2] = { 20, 10 };
    assert_non_null(mtk_module_new_parameter(copy, "weight", shape, 2));
    assert_true(mtk_module_register_parameter(copy, "bias", mtk_module_param_at(old, 1, NULL)));
    assert_true(mtk_module_replace_child(net, 0, mtk_module_finish(copy)));
    assert_ptr_equal(mtk_module_child(net, "0"), copy);
    assert_ptr_equal(mtk_module_tensor(net, "0.weight"), mtk_module_param_at(copy, 0, NULL));
    mtk_state_dict *sd = mtk_module_state_dict(net);
    const char *name;
    mtk_state_dict_at(sd, 0, &name);
    assert_string_equal(name, "0.weight");
    assert_int_equal(mtk_module_num_parameters(net, false), 241);
    /* and its repr reads the copied config */
    char *repr = mtk_module_repr(net);
    assert_non_null(strstr(repr, "(0): Linear(in_features=10, out_features=20, bias=True)"));
    assert_false(mtk_module_replace_child(net, 4, copy));
    assert_int_equal(mtk_ctx_status(ctx), MTK_ERR_INDEX);
    assert_non_null(strstr(mtk_ctx_message(ctx), "has no child 4 (it has 3)"));
    mtk_ctx_free(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(sequential_names_are_torch_state_dict_keys),
        cmocka_unit_test(repr_matches_torch),
        cmocka_unit_test(lookup_of_a_missing_name_says_what_exists),
        cmocka_unit_test(names_with_dots_or_duplicates_are_refused),
        cmocka_unit_test(a_container_is_not_callable),
        cmocka_unit_test(a_failed_input_propagates_without_a_new_error),
        cmocka_unit_test(building_under_meta_allocates_nothing),
        cmocka_unit_test(meta_init_mode_means_meta_whatever_the_device),
        cmocka_unit_test(empty_init_allocates_without_initializing),
        cmocka_unit_test(init_mode_is_deterministic_per_seed),
        cmocka_unit_test(to_on_a_meta_module_fails_with_the_hint),
        cmocka_unit_test(to_empty_gives_real_memory_with_the_same_shapes),
        cmocka_unit_test(materialize_initializes_deterministically_per_seed),
        cmocka_unit_test(materialize_recomputes_buffers),
        cmocka_unit_test(to_dtype_converts_floating_tensors_only),
        cmocka_unit_test(to_dtype_accepts_float8_like_torch),
        cmocka_unit_test(tied_weights_stay_tied_after_materialize),
        cmocka_unit_test(to_empty_except_keeps_some_on_meta_and_assign_fills_them_tied),
        cmocka_unit_test(tie_checks_shapes),
        cmocka_unit_test(untie_gives_the_parameter_its_own_tensor_on_meta_and_cpu),
        cmocka_unit_test(templates_are_left_alone_by_transitions_and_state_dicts),
        cmocka_unit_test(copy_meta_keeps_names_shapes_and_ties),
        cmocka_unit_test(a_factory_builds_fresh_meta_models),
        cmocka_unit_test(loading_into_meta_assigns),
        cmocka_unit_test(loading_into_a_real_module_copies_and_converts_when_asked),
        cmocka_unit_test(strict_load_lists_every_bad_key),
        cmocka_unit_test(meta_source_into_real_module_is_the_copy_out_error),
        cmocka_unit_test(a_tied_key_loaded_once_is_not_missing),
        cmocka_unit_test(lazy_parameters_need_an_example_input_to_be_counted),
        cmocka_unit_test(lazy_module_initializes_on_a_real_device),
        cmocka_unit_test(loading_gives_a_lazy_parameter_its_shape),
        cmocka_unit_test(frozen_parameters_count_as_non_trainable),
        cmocka_unit_test(every_arena_failure_is_out_of_memory),
        cmocka_unit_test(replace_child_keeps_the_name_and_position),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
