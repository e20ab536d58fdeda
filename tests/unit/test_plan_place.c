/* Device maps (mtk/plan_place.h): --max-memory's list, the margin, and
 * mtk_place_model's contract on a built-in model: every device under
 * its budget, tied parameters together, errors as values. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "mtk/mtk.h"

#define MIB (1024LL * 1024)
#define GIB (1024 * MIB)

static void max_memory_lists_gpus_then_cpu_then_disk(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_place_options o;
    mtk_place_options_init(&o);
    assert_true(mtk_place_parse_max_memory(ctx, "disk,cpu=256GiB,1=80GiB,0=24GB", &o));
    assert_int_equal(o.ndevices, 4);
    assert_int_equal(o.devices[0].kind, MTK_PLACE_GPU);
    assert_int_equal(o.devices[0].index, 1);
    assert_int_equal(o.devices[0].budget_bytes, 80 * GIB);
    assert_int_equal(o.devices[1].index, 0);
    assert_int_equal(o.devices[1].budget_bytes, 24000000000LL);
    assert_int_equal(o.devices[2].kind, MTK_PLACE_CPU);
    assert_int_equal(o.devices[3].kind, MTK_PLACE_DISK);
    assert_int_equal(o.devices[3].budget_bytes, -1);
    mtk_ctx_free(ctx);
}

static void max_memory_errors_quote_the_bad_entry(void **state)
{
    (void)state;
    static const char *const bad[][2] = {
        { "0=24GiB,gpu1=8GiB", "'gpu1=8GiB'" }, { "0=lots", "'lots'" }, { "0=1GiB,0=2GiB", "twice" },
        { "cpu", "needs a size" },             { "", "empty" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        mtk_ctx *ctx = mtk_ctx_new();
        mtk_place_options o;
        mtk_place_options_init(&o);
        assert_false(mtk_place_parse_max_memory(ctx, bad[i][0], &o));
        assert_int_equal(o.ndevices, 0);
        assert_non_null(strstr(mtk_ctx_message(ctx), bad[i][1]));
        mtk_ctx_free(ctx);
    }
}

static void default_margin_is_context_workspace_and_five_percent(void **state)
{
    (void)state;
    mtk_memory_constants c;
    mtk_memory_constants_default(&c);
    int64_t m = mtk_place_default_margin(&c, 100 * GIB);
    assert_int_equal(m, c.cuda_context_bytes + c.cublas_workspace_bytes + 5 * GIB);
}

static void place_keeps_devices_under_budget_and_ties_together(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_place_options o;
    mtk_place_options_init(&o);
    o.batch = 1, o.seq = 64, o.margin_bytes = 0;
    assert_true(mtk_place_parse_max_memory(ctx, "0=300MiB,cpu=4GiB", &o));
    mtk_place_plan *p = mtk_place_model(ctx, "gpt2", &o);
    assert_non_null(p);
    int32_t wte = -1, head = -1;
    int64_t total = 0;
    for (int32_t i = 0; i < p->ndevices; i++) {
        if (p->devices[i].device.budget_bytes >= 0)
            assert_true(p->devices[i].peak_bytes <= p->devices[i].device.budget_bytes);
        total += p->devices[i].weights_bytes;
    }
    assert_int_equal(total, p->weights_bytes);
    assert_true(p->offloaded_bytes > 0);
    for (int32_t e = 0; e < p->nentries; e++) {
        if (strcmp(p->entries[e].name, "transformer.wte") == 0) wte = p->entries[e].device;
        if (strcmp(p->entries[e].name, "lm_head") == 0) head = p->entries[e].device;
    }
    assert_true(wte >= 0);
    assert_int_equal(wte, head);
    assert_non_null(mtk_place_plan_json(ctx, p));
    assert_non_null(mtk_place_plan_text(ctx, p));
    mtk_ctx_free(ctx);
}

static void place_without_room_fails_with_the_numbers(void **state)
{
    (void)state;
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_place_options o;
    mtk_place_options_init(&o);
    assert_true(mtk_place_parse_max_memory(ctx, "0=100MiB", &o));
    o.margin_bytes = 0;
    assert_null(mtk_place_model(ctx, "gpt2", &o));
    assert_non_null(strstr(mtk_ctx_message(ctx), "does not fit"));
    mtk_ctx_free(ctx);
    ctx = mtk_ctx_new();
    mtk_place_options_init(&o);
    assert_null(mtk_place_model(ctx, "gpt2", &o)); /* no devices */
    assert_non_null(strstr(mtk_ctx_message(ctx), "no devices"));
    mtk_ctx_free(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(max_memory_lists_gpus_then_cpu_then_disk),
        cmocka_unit_test(max_memory_errors_quote_the_bad_entry),
        cmocka_unit_test(default_margin_is_context_workspace_and_five_percent),
        cmocka_unit_test(place_keeps_devices_under_budget_and_ties_together),
        cmocka_unit_test(place_without_room_fails_with_the_numbers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
