/* The demo models: networks built by code from nn's layers (no config),
 * resolved by name like the zoo's built-ins.  Adding one is one row. */
#include "mtk/models.h"
#include "mtk/nn_trace.h"

#include <string.h>

static const mtk_demo_model demos[] = {
    { "simplenet", "Linear(10, 20) -> ReLU -> Linear(20, 1): 241 parameters (PyTorch's meta-tensor guide)",
      mtk_model_simplenet, "1x10" },
    { "lazynet", "Conv2d(3, 8, 3) -> ReLU -> Flatten -> LazyLinear(10): 224 parameters before an input, "
      "72,234 with 1x3x32x32", mtk_model_lazynet, "1x3x32x32" },
};

#define DEMO_COUNT ((int32_t)(sizeof demos / sizeof demos[0]))

int32_t mtk_demo_model_count(void) { return DEMO_COUNT; }

const mtk_demo_model *mtk_demo_model_at(int32_t i) { return i >= 0 && i < DEMO_COUNT ? &demos[i] : NULL; }

const mtk_demo_model *mtk_demo_model_find(const char *name)
{
    for (int32_t i = 0; name && i < DEMO_COUNT; i++)
        if (strcmp(demos[i].name, name) == 0) return &demos[i];
    return NULL;
}
