/* Templates and factories: a model keeps an unregistered meta "template"
 * block and grows by stamping out copies of it; to/to_empty/materialize and
 * state dicts never touch the template.  A factory builds a fresh meta
 * model on demand for almost nothing.
 *
 * Prints what happens; exits 1 if any step fails. */
#include <mtk/mtk.h>

#include <stdio.h>

static int fail(mtk_ctx *ctx)
{
    fprintf(stderr, "nn_template: %s\n", mtk_ctx_message(ctx));
    mtk_ctx_free(ctx);
    return 1;
}

/* The block: Linear(256, 1024) -> GELU -> Linear(1024, 256). */
static mtk_module *build_block(mtk_ctx *ctx, const void *config)
{
    (void)config;
    mtk_module *parts[3] = { mtk_nn_linear(ctx, 256, 1024, true), mtk_nn_activation(ctx, "GELU"),
                             mtk_nn_linear(ctx, 1024, 256, true) };
    return mtk_nn_sequential(ctx, 3, parts);
}

/* Appends a copy of the model's template as a new real block. */
static bool grow(mtk_module *blocks, uint64_t seed)
{
    mtk_module *copy = mtk_module_copy_meta(mtk_module_template(blocks, "block"));
    return copy && mtk_module_materialize(copy, MTK_DEVICE_CPU, seed) && mtk_nn_module_list_append(blocks, copy);
}

int main(void)
{
    mtk_ctx *ctx = mtk_ctx_new();
    if (!ctx) return 1;
    /* the factory: a fresh meta block, whatever the scopes around it */
    mtk_module *tmpl = mtk_module_build_meta(ctx, build_block, NULL);
    if (!tmpl) return fail(ctx);
    mtk_module *blocks = mtk_nn_module_list(ctx);
    if (!mtk_module_set_template(blocks, "block", tmpl)) return fail(ctx);
    for (uint64_t i = 0; i < 3; i++)
        if (!grow(blocks, 100 + i)) return fail(ctx);
    printf("model: %d blocks, %lld parameters, %d state-dict entries (the template is not one of them)\n",
           (int)mtk_module_child_count(blocks), (long long)mtk_module_num_parameters(blocks, false),
           (int)mtk_state_dict_count(mtk_module_state_dict(blocks)));

    /* moving the model leaves the template on meta */
    if (!mtk_module_to_device(blocks, MTK_DEVICE_META) || !mtk_module_materialize(blocks, MTK_DEVICE_CPU, 7))
        return fail(ctx);
    printf("after to(meta) + materialize(cpu): block 2 on %s, template still on %s\n",
           mtk_module_tensor(blocks, "2.0.weight")->device == MTK_DEVICE_CPU ? "cpu" : "meta",
           mtk_module_tensor(tmpl, "0.weight")->device == MTK_DEVICE_META ? "meta" : "cpu");

    /* a fresh meta model from the factory costs only metadata */
    size_t start = mtk_ctx_arena_bytes(ctx);
    for (int i = 0; i < 100; i++)
        if (!mtk_module_build_meta(ctx, build_block, NULL)) return fail(ctx);
    printf("100 more meta blocks (157 M parameters) from the factory: %zu KB of metadata\n",
           (mtk_ctx_arena_bytes(ctx) - start) / 1024);
    mtk_ctx_free(ctx);
    return 0;
}
