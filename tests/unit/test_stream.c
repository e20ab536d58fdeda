/* Weight streaming (include/mtk/stream.h) and the module call observer it
 * rests on (mtk_ctx_set_module_hook): the observer brackets every module
 * call and can refuse one; a model streamed from its checkpoint under the
 * least budget gives the in-RAM logits bit for bit, each layer passing
 * through the stream once per forward; a budget below one layer plus the
 * rest is refused with the sizes; freeing the stream restores the
 * previous observer; a budget holding more than the two streamed layers
 * keeps the first layers resident across forwards, so a later forward
 * brings in only the others, with the same logits. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io/stream_internal.h"
#include "mtk/mtk.h"
#include "unit_files.h"
#include "unit_models.h"

static const char llama_config[] =
    "{\"model_type\": \"llama\", \"architectures\": [\"LlamaForCausalLM\"], \"hidden_size\": 32,"
    " \"intermediate_size\": 48, \"num_hidden_layers\": 3, \"num_attention_heads\": 4,"
    " \"num_key_value_heads\": 2, \"vocab_size\": 101, \"max_position_embeddings\": 64,"
    " \"tie_word_embeddings\": false}";

typedef struct calls {
    mtk_module *seen[64];
    bool after[64];
    const mtk_tensor *input[64]; /* the call's first input */
    int n;
    mtk_module *refuse; /* the pre-call of this module fails */
} calls;

static bool record(void *user, mtk_module *m, const mtk_module_io *io, bool after)
{
    calls *c = user;
    if (c->n < 64) {
        c->seen[c->n] = m;
        c->input[c->n] = io && io->nin > 0 ? io->in[0] : NULL;
        c->after[c->n++] = after;
    }
    if (!after && m == c->refuse) return mtk_error(mtk_module_ctx(m), MTK_ERR_IO, "refused by the observer");
    return true;
}

static void module_observer_brackets_every_call_and_can_refuse_one(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_module *a = mtk_nn_activation(ctx, "relu"), *b = mtk_nn_activation(ctx, "relu");
    mtk_module *const parts[2] = { a, b };
    mtk_module *seq = mtk_nn_sequential(ctx, 2, parts);
    assert_non_null(seq);
    int64_t shape[1] = { 4 };
    mtk_tensor *x = mtk_ones(ctx, shape, 1, MTK_FLOAT32);
    calls c = { 0 };
    mtk_ctx_set_module_hook(ctx, record, &c);
    void *user;
    assert_ptr_equal(mtk_ctx_module_hook(ctx, &user), record);
    assert_ptr_equal(user, &c);
    assert_non_null(mtk_module_forward(seq, x));
    /* seq, a, a done, b, b done, seq done */
    assert_int_equal(c.n, 6);
    mtk_module *order[6] = { seq, a, a, b, b, seq };
    bool after[6] = { false, false, true, false, true, true };
    for (int i = 0; i < 6; i++) {
        assert_ptr_equal(c.seen[i], order[i]);
        assert_int_equal(c.after[i], after[i]);
    }
    /* each call's inputs, as torch's pre-hook gets the args: x into seq and a, a's output into b */
    assert_ptr_equal(c.input[0], x);
    assert_ptr_equal(c.input[1], x);
    assert_ptr_equal(c.input[3], c.input[4]);
    assert_true(c.input[3] != x && c.input[3] != NULL);
    c.n = 0;
    c.refuse = b;
    assert_null(mtk_module_forward(seq, x));
    assert_int_equal(mtk_ctx_status(ctx), MTK_ERR_IO);
    assert_non_null(strstr(mtk_ctx_message(ctx), "refused by the observer"));
    mtk_ctx_set_module_hook(ctx, NULL, &c);
    assert_null(mtk_ctx_module_hook(ctx, &user));
    assert_null(user);
    mtk_ctx_free(ctx);
}

/* Writes the initialized llama's state dict to `path`; returns its logits
 * on `ids`. */
static mtk_tensor *save_and_run(mtk_ctx *ctx, const char *path, mtk_tensor *ids)
{
    mtk_module *model = unit_model_from_text(ctx, llama_config, "llama");
    assert_non_null(model);
    assert_true(mtk_module_to_empty(model, MTK_DEVICE_CPU));
    assert_true(mtk_module_reset_parameters(model, 7));
    mtk_st_writer *w = mtk_st_writer_new(ctx);
    mtk_state_dict *sd = mtk_module_state_dict(model);
    for (int32_t i = 0; i < mtk_state_dict_count(sd); i++) {
        const char *key;
        mtk_tensor *t = mtk_state_dict_at(sd, i, &key);
        assert_true(mtk_st_writer_add(w, key, t));
    }
    assert_true(mtk_st_writer_write(w, path));
    mtk_st_writer_free(w);
    mtk_model_inputs in = { .input_ids = ids };
    mtk_model_outputs out;
    assert_true(mtk_model_run(model, &in, &out));
    return out.tensors[0];
}

static void streamed_llama_gives_the_in_ram_logits_under_the_least_budget(void **state)
{
    (void)state;
    char dir[64], path[128];
    snprintf(path, sizeof path, "%s/model.safetensors", unit_temp_dir(dir, "stream"));
    mtk_ctx *ctx = mtk_ctx_new();
    int64_t shape[2] = { 2, 5 };
    mtk_tensor *ids = mtk_arange(ctx, 3, 13, 1, MTK_INT64);
    ids = mtk_contiguous(ctx, mtk_reshape(ctx, ids, shape, 2));
    mtk_tensor *expected = save_and_run(ctx, path, ids);
    assert_non_null(expected);

    /* sizes from a budget that holds everything */
    calls c = { 0 };
    mtk_ctx_set_module_hook(ctx, record, &c); /* an observer already there stays called */
    mtk_checkpoint *ckpt = mtk_checkpoint_open(ctx, path);
    assert_non_null(ckpt);
    mtk_load_spec spec = { .rules = mtk_model_key_rules("llama") };
    mtk_load_result r;
    mtk_module *model = unit_model_from_text(ctx, llama_config, "llama");
    mtk_stream *s = mtk_stream_load(ctx, model, ckpt, &spec, UINT64_MAX, &r);
    if (!s) fail_msg("%s", mtk_ctx_message(ctx));
    mtk_stream_stats st;
    mtk_stream_get_stats(s, &st);
    mtk_stream_free(s);
    assert_int_equal(st.layer_count, 3);
    assert_string_equal(st.layers, "model.layers");
    assert_true(st.fixed_bytes + 3 * st.layer_bytes == st.total_bytes);
    assert_false(st.releases); /* the budget holds the model */

    model = unit_model_from_text(ctx, llama_config, "llama");
    s = mtk_stream_load(ctx, model, ckpt, &spec, st.fixed_bytes + st.layer_bytes, &r);
    if (!s) fail_msg("%s", mtk_ctx_message(ctx));
    c.n = 0;
    mtk_model_inputs in = { .input_ids = ids };
    mtk_model_outputs out;
    assert_true(mtk_model_run(model, &in, &out));
    assert_true(c.n > 12); /* the earlier observer still saw the calls */
    mtk_stream_stats run;
    mtk_stream_get_stats(s, &run);
    assert_false(run.prefetch);
    assert_true(run.releases);
    assert_int_equal(run.layer_calls, 3);
    assert_memory_equal(mtk_tensor_data(out.tensors[0]), mtk_tensor_data(expected), mtk_tensor_nbytes(expected));
    mtk_stream_free(s);
    void *user;
    assert_ptr_equal(mtk_ctx_module_hook(ctx, &user), record);
    assert_ptr_equal(user, &c);
    mtk_ctx_set_module_hook(ctx, NULL, NULL);

    /* one byte short */
    model = unit_model_from_text(ctx, llama_config, "llama");
    assert_null(mtk_stream_load(ctx, model, ckpt, &spec, st.fixed_bytes + st.layer_bytes - 1, &r));
    assert_int_equal(mtk_ctx_status(ctx), MTK_ERR_OUT_OF_MEMORY);
    char needed[64];
    snprintf(needed, sizeof needed, "at least %llu bytes", (unsigned long long)(st.fixed_bytes + st.layer_bytes));
    assert_non_null(strstr(mtk_ctx_message(ctx), needed));
    assert_non_null(strstr(mtk_ctx_message(ctx), "plus one layer of model.layers"));
    mtk_checkpoint_close(ckpt);
    mtk_ctx_free(ctx);
    remove(path);
    rmdir(dir);
}

static const char llama6_config[] =
    "{\"model_type\": \"llama\", \"architectures\": [\"LlamaForCausalLM\"], \"hidden_size\": 64,"
    " \"intermediate_size\": 128, \"num_hidden_layers\": 6, \"num_attention_heads\": 4,"
    " \"num_key_value_heads\": 2, \"vocab_size\": 101, \"max_position_embeddings\": 64,"
    " \"tie_word_embeddings\": false}";

static void budget_beyond_two_layers_keeps_the_first_layers_across_forwards(void **state)
{
    (void)state;
    char dir[64], path[128];
    snprintf(path, sizeof path, "%s/model.safetensors", unit_temp_dir(dir, "stream_keep"));
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_module *model = unit_model_from_text(ctx, llama6_config, "llama");
    assert_non_null(model);
    assert_true(mtk_module_to_empty(model, MTK_DEVICE_CPU));
    assert_true(mtk_module_reset_parameters(model, 3));
    mtk_st_writer *w = mtk_st_writer_new(ctx);
    mtk_state_dict *sd = mtk_module_state_dict(model);
    for (int32_t i = 0; i < mtk_state_dict_count(sd); i++) {
        const char *key;
        mtk_tensor *t = mtk_state_dict_at(sd, i, &key);
        assert_true(mtk_st_writer_add(w, key, t));
    }
    assert_true(mtk_st_writer_write(w, path));
    mtk_st_writer_free(w);
    int64_t shape[2] = { 1, 6 };
    mtk_tensor *ids = mtk_contiguous(ctx, mtk_reshape(ctx, mtk_arange(ctx, 2, 8, 1, MTK_INT64), shape, 2));
    mtk_model_inputs in = { .input_ids = ids };
    mtk_model_outputs out;
    assert_true(mtk_model_run(model, &in, &out));
    mtk_tensor *expected = out.tensors[0];

    mtk_checkpoint *ckpt = mtk_checkpoint_open(ctx, path);
    assert_non_null(ckpt);
    mtk_load_spec spec = { .rules = mtk_model_key_rules("llama") };
    mtk_load_result r;
    mtk_stream_stats st;
    mtk_stream *s = mtk_stream_load(ctx, unit_model_from_text(ctx, llama6_config, "llama"), ckpt, &spec,
                                    UINT64_MAX, &r);
    if (!s) fail_msg("%s", mtk_ctx_message(ctx));
    mtk_stream_get_stats(s, &st);
    mtk_stream_free(s);
    assert_int_equal(st.kept_layers, 6); /* the budget holds the model */

    /* two streamed slots (prefetch) and two layers more: layers 0 and 1
     * kept; the streamed ones mapped in and dropped, or read into slots */
    static const char *const fills[] = { "map", "read" };
    mtk_stream_stats run;
    for (int f = 0; f < 2; f++) {
        setenv("MTK_STREAM_FILL", fills[f], 1);
        model = unit_model_from_text(ctx, llama6_config, "llama");
        s = mtk_stream_load(ctx, model, ckpt, &spec, st.fixed_bytes + 4 * st.layer_bytes, &r);
        if (!s) fail_msg("%s", mtk_ctx_message(ctx));
        for (int pass = 1; pass <= 3; pass++) {
            assert_true(mtk_model_run(model, &in, &out));
            assert_memory_equal(mtk_tensor_data(out.tensors[0]), mtk_tensor_data(expected),
                                mtk_tensor_nbytes(expected));
        }
        mtk_stream_get_stats(s, &run);
        mtk_stream_free(s);
        assert_string_equal(run.fill, fills[f]);
        assert_true(run.prefetch && run.releases);
        assert_int_equal(run.kept_layers, 2);
        assert_int_equal(run.layer_calls, 18);
        /* the first forward brings in all six, each later one the four
         * streamed (and the thread one ahead after the last forward) */
        assert_true(run.brought_in == 6 + 2 * 4 || run.brought_in == 6 + 2 * 4 + 1);
    }
    unsetenv("MTK_STREAM_FILL");

    /* one layer's worth less: one kept */
    model = unit_model_from_text(ctx, llama6_config, "llama");
    s = mtk_stream_load(ctx, model, ckpt, &spec, st.fixed_bytes + 4 * st.layer_bytes - 1, &r);
    if (!s) fail_msg("%s", mtk_ctx_message(ctx));
    assert_true(mtk_model_run(model, &in, &out));
    assert_memory_equal(mtk_tensor_data(out.tensors[0]), mtk_tensor_data(expected), mtk_tensor_nbytes(expected));
    mtk_stream_get_stats(s, &run);
    mtk_stream_free(s);
    assert_int_equal(run.kept_layers, 1);
    mtk_checkpoint_close(ckpt);
    mtk_ctx_free(ctx);
    remove(path);
    rmdir(dir);
}

/* The thread policy (io/stream_threads.c): a decode step (at most 8 rows)
 * whose threads take every core brings its layers in inline on them; a
 * prefill, fewer threads than cores, or MTK_STREAM_COMPUTE_THREADS keep
 * the prefetch thread. */
static void decode_steps_on_every_core_bring_their_layers_in_inline(void **state)
{
    (void)state;
    stream_step_plan p = stream_step_plan_for(2, 2, 1, STREAM_THREADS_AUTO); /* decode, threads == cores */
    assert_int_equal(p.threads, 2);
    assert_true(p.inline_fill);
    p = stream_step_plan_for(4, 2, STREAM_FEW_ROWS, STREAM_THREADS_AUTO); /* more threads than cores, 8 rows */
    assert_int_equal(p.threads, 4);
    assert_true(p.inline_fill);
    p = stream_step_plan_for(2, 2, STREAM_FEW_ROWS + 1, STREAM_THREADS_AUTO); /* a prefill keeps the prefetch */
    assert_int_equal(p.threads, 2);
    assert_false(p.inline_fill);
    p = stream_step_plan_for(1, 2, 1, STREAM_THREADS_AUTO); /* a core is free for the prefetch thread */
    assert_int_equal(p.threads, 1);
    assert_false(p.inline_fill);
    p = stream_step_plan_for(2, 2, 1, 0); /* MTK_STREAM_COMPUTE_THREADS=0: the context's, with prefetch */
    assert_int_equal(p.threads, 2);
    assert_false(p.inline_fill);
    p = stream_step_plan_for(2, 2, 3, 1); /* =1: one thread beside the prefetch */
    assert_int_equal(p.threads, 1);
    assert_false(p.inline_fill);
    p = stream_step_plan_for(2, 2, 64, 1); /* not for a prefill */
    assert_int_equal(p.threads, 2);
    assert_false(p.inline_fill);
    p = stream_step_plan_for(0, 1, 1, STREAM_THREADS_AUTO); /* one core: inline on one thread */
    assert_int_equal(p.threads, 1);
    assert_true(p.inline_fill);
}

static void compute_threads_setting_parses_auto_and_counts(void **state)
{
    (void)state;
    assert_int_equal(stream_threads_setting(NULL), STREAM_THREADS_AUTO);
    assert_int_equal(stream_threads_setting(""), STREAM_THREADS_AUTO);
    assert_int_equal(stream_threads_setting("auto"), STREAM_THREADS_AUTO);
    assert_int_equal(stream_threads_setting("0"), 0);
    assert_int_equal(stream_threads_setting("3"), 3);
    assert_int_equal(stream_threads_setting("1024"), 1024);
    assert_int_equal(stream_threads_setting("1025"), STREAM_THREADS_AUTO);
    assert_int_equal(stream_threads_setting("-1"), STREAM_THREADS_AUTO);
    assert_int_equal(stream_threads_setting("2x"), STREAM_THREADS_AUTO);
}

static void a_calls_rows_are_its_first_inputs_leading_dimensions(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    int64_t shape[3] = { 2, 3, 16 };
    mtk_module_io io = { .in = { mtk_empty(ctx, shape, 3, MTK_FLOAT32) }, .nin = 1 };
    assert_int_equal(stream_io_rows(&io), 6); /* (B, S, E): B x S */
    io.in[0] = mtk_empty(ctx, shape + 2, 1, MTK_FLOAT32);
    assert_int_equal(stream_io_rows(&io), 1);
    io.nin = 0;
    assert_int_equal(stream_io_rows(&io), 0);
    assert_int_equal(stream_io_rows(NULL), 0);
    mtk_ctx_free(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(module_observer_brackets_every_call_and_can_refuse_one),
        cmocka_unit_test(decode_steps_on_every_core_bring_their_layers_in_inline),
        cmocka_unit_test(compute_threads_setting_parses_auto_and_counts),
        cmocka_unit_test(a_calls_rows_are_its_first_inputs_leading_dimensions),
        cmocka_unit_test(streamed_llama_gives_the_in_ram_logits_under_the_least_budget),
        cmocka_unit_test(budget_beyond_two_layers_keeps_the_first_layers_across_forwards),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
