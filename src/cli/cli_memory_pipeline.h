/* mtk memory for diffusers pipelines (cli_memory_pipeline.c). */
#ifndef MTK_CLI_MEMORY_PIPELINE_H
#define MTK_CLI_MEMORY_PIPELINE_H

#include "mtk/diffusion.h"

#include <stdbool.h>

typedef struct cli_pipeline_memory_args {
    mtk_offload_mode mode;
    int32_t device_kind;       /* mtk_device_kind                        */
    int64_t gpu_budget, cpu_budget; /* --max-memory, 0: not given        */
    bool json;
} cli_pipeline_memory_args;

/* "0=8GiB,cpu=32GiB" (accelerate's max_memory keys: 0, cuda, cuda:0 and
 * cpu) into *gpu and *cpu; false for anything else. */
bool cli_parse_max_memory(const char *text, int64_t *gpu, int64_t *cpu);
/* Resolves PIPELINE at the options' image, plans its memory per stage
 * and each offload mode, and prints it (text, or one JSON document).
 * Returns the exit status. */
int cli_memory_pipeline(const char *name, const mtk_pipeline_options *options, const cli_pipeline_memory_args *args);

#endif
