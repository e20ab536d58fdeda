/* Out of memory: a fault-injecting allocator fails the Nth allocation
 * (once, or from then on), for N = 1, 2, ... until a whole scenario of
 * core calls and ops runs without reaching N.  Every failure must come
 * back as MTK_ERR_OUT_OF_MEMORY (or NULL from mtk_ctx_new), with no crash
 * and no leak: every block the allocator handed out is returned by
 * mtk_ctx_free and the last storage release.  Run under ASan+UBSan
 * (-DMTK_SANITIZE=ON) this also catches use-after-free on the error paths. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mtk/mtk.h"
#include "core/ctx_internal.h" /* the arena's fault-injection knob */
#include "fault_alloc.h"

/* ------------------------------------------------------- the injector */


/* ------------------------------------------------------- the scenario */

static int wraps;    /* wrapped storages created                        */
static int releases; /* calls of their release callback: must end equal */
static void count_release(void *data, size_t nbytes, void *user)
{
    (void)data, (void)nbytes, (void)user;
    releases++;
}

/* One step's outcome: a step that failed must have failed for lack of
 * memory; a step that succeeded must leave no error behind. */
static bool step_ok(mtk_ctx *ctx, bool ok, const char *what, long n)
{
    if (ok) {
        if (mtk_ctx_status(ctx) != MTK_OK)
            fail_msg("fault %ld: '%s' succeeded with an error set: %s", n, what, mtk_ctx_message(ctx));
        return true;
    }
    if (mtk_ctx_status(ctx) != MTK_ERR_OUT_OF_MEMORY)
        fail_msg("fault %ld: '%s' failed with %s (%s), not out_of_memory", n, what,
                 mtk_status_name(mtk_ctx_status(ctx)), mtk_ctx_message(ctx));
    return false;
}

#define STEP(cond, what)                                         \
    do {                                                         \
        if (!step_ok(ctx, (cond), (what), n)) return false;      \
    } while (0)

static bool call(mtk_ctx *ctx, const char *name, const mtk_value *pos, int32_t npos,
                 const char *const *kw, const mtk_value *kwv, int32_t nkw, mtk_tensor **out)
{
    mtk_value r;
    if (!mtk_op_call_by_name(ctx, name, pos, npos, kw, kwv, nkw, &r)) return false;
    *out = r.kind == MTK_VALUE_TENSOR ? r.as.tensor : NULL;
    return *out != NULL;
}

#define TENSOR(t) mtk_value_tensor(t)
#define INT(i) mtk_value_int(i)

/* Core calls and ops of each family, cpu and meta.  Returns false at the
 * first step that fails (which must be out of memory). */
static bool scenario(mtk_ctx *ctx, long n)
{
    static char mapped[64];
    static float borrowed[12];
    int64_t shape[2] = { 3, 4 };

    mtk_tensor *meta = mtk_tensor_new(ctx, MTK_FLOAT32, shape, 2, NULL, MTK_DEVICE_META);
    STEP(meta != NULL, "tensor_new");
    mtk_tensor *cpu = mtk_tensor_new(ctx, MTK_FLOAT32, shape, 2, NULL, MTK_DEVICE_CPU);
    STEP(cpu != NULL, "tensor_new cpu");
    STEP(mtk_tensor_alloc_storage(cpu), "alloc_storage");
    mtk_tensor *b = mtk_tensor_from_data(ctx, MTK_FLOAT32, shape, 2, NULL, borrowed);
    STEP(b != NULL, "from_data");
    STEP(mtk_tensor_alias(cpu) != NULL, "alias");
    STEP(mtk_ctx_strdup(ctx, "model.layers.0.mlp.up_proj.weight") != NULL, "strdup");
    STEP(mtk_ctx_alloc(ctx, 300000) != NULL, "big arena block");
    mtk_storage *s = mtk_storage_wrap(ctx, MTK_STORAGE_MAPPED, mapped, sizeof mapped, count_release, NULL);
    if (s) wraps++;
    STEP(s != NULL, "storage_wrap");
    int64_t sixteen[1] = { 16 };
    mtk_tensor *w = mtk_tensor_new(ctx, MTK_FLOAT32, sixteen, 1, NULL, MTK_DEVICE_CPU);
    bool attached = w && mtk_tensor_set_storage(w, s);
    mtk_storage_release(s); /* the tensor (if any) holds its own reference */
    STEP(attached, "set_storage");
    mtk_value list = mtk_value_list(ctx, 40, true);
    STEP(list.kind == MTK_VALUE_TUPLE, "value_list");
    void *m = mtk_ctx_malloc(ctx, 100);
    STEP(m != NULL, "ctx_malloc");
    mtk_ctx_mfree(ctx, m);

    /* creation by name, with gathered ints and keywords */
    mtk_tensor *z, *f, *p, *sum, *e, *r;
    STEP(call(ctx, "zeros", (mtk_value[]){ INT(3), INT(4) }, 2, NULL, NULL, 0, &z), "zeros");
    mtk_value size = mtk_value_int_list(ctx, (int64_t[]){ 4, 5 }, 2);
    STEP(size.kind == MTK_VALUE_LIST, "int_list");
    const char *dtype_kw[1] = { "dtype" };
    STEP(call(ctx, "full", (mtk_value[]){ size, mtk_value_float(0.5) }, 2, dtype_kw,
              (mtk_value[]){ mtk_value_dtype(MTK_FLOAT32) }, 1, &f), "full");
    STEP(call(ctx, "arange", (mtk_value[]){ INT(12) }, 1, NULL, NULL, 0, &r), "arange");
    /* linalg and element-wise on cpu */
    STEP(call(ctx, "mm", (mtk_value[]){ TENSOR(z), TENSOR(f) }, 2, NULL, NULL, 0, &p), "mm");
    STEP(call(ctx, "add", (mtk_value[]){ TENSOR(p), mtk_value_float(2.0) }, 2, NULL, NULL, 0, &sum), "add");
    STEP(call(ctx, "empty_like", (mtk_value[]){ TENSOR(sum) }, 1, NULL, NULL, 0, &e), "empty_like");
    /* views: share storage (a reference each) */
    mtk_tensor *v, *t, *x2, *c;
    STEP(call(ctx, "view", (mtk_value[]){ TENSOR(r), INT(3), INT(4) }, 3, NULL, NULL, 0, &v), "view");
    STEP(call(ctx, "transpose", (mtk_value[]){ TENSOR(v), INT(0), INT(1) }, 3, NULL, NULL, 0, &t), "transpose");
    STEP(call(ctx, "reshape", (mtk_value[]){ TENSOR(t), INT(-1) }, 2, NULL, NULL, 0, &x2), "reshape copy");
    STEP(call(ctx, "expand", (mtk_value[]){ TENSOR(v), INT(2), INT(3), INT(4) }, 4, NULL, NULL, 0, &c), "expand");
    mtk_value parts;
    STEP(mtk_op_call_by_name(ctx, "split", (mtk_value[]){ TENSOR(v), INT(2) }, 2, NULL, NULL, 0, &parts),
         "split");
    /* conversions */
    mtk_tensor *h, *cl, *nz;
    STEP(call(ctx, "to", (mtk_value[]){ TENSOR(t), mtk_value_dtype(MTK_FLOAT16) }, 2, NULL, NULL, 0, &h), "to");
    STEP(call(ctx, "clone", (mtk_value[]){ TENSOR(t) }, 1, NULL, NULL, 0, &cl), "clone");
    STEP(call(ctx, "nonzero", (mtk_value[]){ TENSOR(v) }, 1, NULL, NULL, 0, &nz), "nonzero");

    /* the same on meta, inside a device scope */
    STEP(mtk_ctx_push_device(ctx, MTK_DEVICE_META), "push_device");
    mtk_tensor *x, *wt, *lin, *mt;
    STEP(call(ctx, "empty", (mtk_value[]){ INT(8), INT(1024), INT(4096) }, 3, NULL, NULL, 0, &x), "empty meta");
    STEP(call(ctx, "empty", (mtk_value[]){ INT(11008), INT(4096) }, 2, NULL, NULL, 0, &wt), "empty meta weight");
    STEP(call(ctx, "linear", (mtk_value[]){ TENSOR(x), TENSOR(wt) }, 2, NULL, NULL, 0, &lin), "linear meta");
    STEP(call(ctx, "permute", (mtk_value[]){ TENSOR(lin), INT(2), INT(0), INT(1) }, 4, NULL, NULL, 0, &mt),
         "permute meta");
    STEP(call(ctx, "to_empty", (mtk_value[]){ TENSOR(meta) }, 1, (const char *[]){ "device" },
              (mtk_value[]){ mtk_value_device(MTK_DEVICE_CPU) }, 1, &e), "to_empty");
    STEP(mtk_ctx_pop_device(ctx), "pop_device");
    return true;
}

/* Runs the scenario with allocation n failing (and, if persistent, all
 * after it): an allocation of the allocator, or with `arena` set, a
 * request to the context's arena.  Returns true if the scenario never
 * reached allocation n. */
static bool run_with_fault(long n, bool persistent, bool arena)
{
    injector in = { .fail_at = arena ? 0 : n, .persistent = persistent };
    mtk_allocator a = { inject_alloc, inject_free, &in };
    releases = wraps = 0;
    mtk_ctx *ctx = mtk_ctx_new_with_allocator(&a);
    if (!ctx) {
        assert_int_equal(n, 1); /* only the very first allocation is the context */
        assert_int_equal(in.live, 0);
        return false;
    }
    if (arena) {
        ctx->arena_fail_at = n;
        ctx->arena_fail_after = persistent;
    }
    bool completed = scenario(ctx, n);
    bool injected = arena ? ctx->arena_requests >= n : in.failures > 0;
    if (completed) {
        assert_false(injected);
    } else {
        assert_true(injected);
        ctx->arena_fail_at = 0;
        in.fail_at = 0;
        /* once memory is back, the same context works again */
        mtk_ctx_clear_error(ctx);
        while (mtk_ctx_pop_device(ctx)) {}
        mtk_ctx_clear_error(ctx);
        if (!scenario(ctx, n)) fail_msg("fault %ld: the context did not recover", n);
    }
    mtk_ctx_free(ctx);
    if (in.live != 0)
        fail_msg("fault %ld%s%s: %ld blocks leaked", n, arena ? " in the arena" : "",
                 persistent ? " (persistent)" : "", in.live);
    if (releases != wraps)
        fail_msg("fault %ld: %d wrapped storages, %d releases", n, wraps, releases);
    return completed;
}

/* Fails allocation 1, 2, ... in turn until the scenario completes;
 * returns how many allocations the scenario makes. */
static long fail_each_in_turn(bool persistent, bool arena)
{
    long n = 1;
    while (!run_with_fault(n, persistent, arena)) {
        n++;
        assert_true(n < 100000);
    }
    return n - 1;
}

static void each_allocator_failure_is_out_of_memory(void **state)
{
    (void)state;
    long n = fail_each_in_turn(false, false);
    print_message("  the scenario makes %ld allocator calls; each failed once in turn\n", n);
    assert_true(n > 20);
}

static void persistent_allocator_failure_is_out_of_memory(void **state)
{
    (void)state;
    fail_each_in_turn(true, false);
}

static void each_arena_failure_is_out_of_memory(void **state)
{
    (void)state;
    long n = fail_each_in_turn(false, true);
    print_message("  the scenario makes %ld arena requests; each failed once in turn\n", n);
    assert_true(n > 50);
}

static void persistent_arena_failure_is_out_of_memory(void **state)
{
    (void)state;
    fail_each_in_turn(true, true);
}

/* With no fault the scenario runs and the allocator gets everything back. */
static void scenario_runs_and_frees_everything_without_faults(void **state)
{
    (void)state;
    assert_true(run_with_fault(0, false, false));
    assert_int_equal(releases, 1);
}

static void context_creation_failure_returns_null(void **state)
{
    (void)state;
    injector in = { .fail_at = 1 };
    mtk_allocator a = { inject_alloc, inject_free, &in };
    assert_null(mtk_ctx_new_with_allocator(&a));
    assert_int_equal(in.failures, 1);
    assert_int_equal(in.live, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(context_creation_failure_returns_null),
        cmocka_unit_test(scenario_runs_and_frees_everything_without_faults),
        cmocka_unit_test(each_allocator_failure_is_out_of_memory),
        cmocka_unit_test(persistent_allocator_failure_is_out_of_memory),
        cmocka_unit_test(each_arena_failure_is_out_of_memory),
        cmocka_unit_test(persistent_arena_failure_is_out_of_memory),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
