/* Memory plans: options, the device constants table, the allocator's
 * rounding, and the plan of a graph (the flat view the replay reads). */
#include "plan/memory_internal.h"
#include "mtk/nn.h"

#include <stdio.h>

#include <stddef.h>
#include <string.h>

/* -------------------------------------------------------------- constants */

#define MIB (1024 * 1024)

/* Every number a cpu-only machine cannot measure, with where it comes
 * from (docs/memory.md).  The allocator sizes are c10's
 * CUDACachingAllocator.cpp constants; the context and workspace are what
 * torch 2.x on CUDA 12 takes on an H100 and are estimates: override them
 * with a measurement (mtk memory --set NAME=BYTES). */
static const mtk_memory_constant constants[] = {
    { "cuda_block_bytes", offsetof(mtk_memory_constants, cuda_block_bytes), 512,
      "c10/cuda/CUDACachingAllocator.cpp kMinBlockSize: every block is a multiple of 512 bytes "
      "(what torch.cuda.max_memory_allocated counts)" },
    { "cuda_small_request", offsetof(mtk_memory_constants, cuda_small_request), 1 * MIB,
      "CUDACachingAllocator.cpp kSmallSize: requests up to 1 MiB come from small segments" },
    { "cuda_small_segment", offsetof(mtk_memory_constants, cuda_small_segment), 2 * MIB,
      "CUDACachingAllocator.cpp kSmallBuffer: small segments are 2 MiB" },
    { "cuda_large_segment", offsetof(mtk_memory_constants, cuda_large_segment), 20 * MIB,
      "CUDACachingAllocator.cpp kLargeBuffer: requests under kMinLargeAlloc get a 20 MiB segment" },
    { "cuda_large_min_alloc", offsetof(mtk_memory_constants, cuda_large_min_alloc), 10 * MIB,
      "CUDACachingAllocator.cpp kMinLargeAlloc: 10 MiB" },
    { "cuda_large_rounding", offsetof(mtk_memory_constants, cuda_large_rounding), 2 * MIB,
      "CUDACachingAllocator.cpp kRoundLarge: larger segments round up to 2 MiB" },
    { "cuda_context_bytes", offsetof(mtk_memory_constants, cuda_context_bytes), 512 * MIB,
      "estimate: the CUDA context with lazy module loading (CUDA 12, torch 2.x, H100) as nvidia-smi "
      "shows it beyond torch.cuda.memory_reserved; not in max_memory_allocated; not measured here "
      "(no GPU): override with a measurement" },
    { "cublas_workspace_bytes", offsetof(mtk_memory_constants, cublas_workspace_bytes), 32 * MIB,
      "estimate: torch's cuBLAS workspace on Hopper (CublasHandlePool.cpp getChosenWorkspaceSize, "
      "CUBLAS_WORKSPACE_CONFIG unset), allocated through the caching allocator at the first matmul; "
      "not measured here (no GPU)" },
    { "cpu_rng_state_bytes", offsetof(mtk_memory_constants, cpu_rng_state_bytes), 5056,
      "torch.get_rng_state(): the cpu generator's state as a uint8 tensor (mt19937 and the normal "
      "cache); gradient checkpointing (preserve_rng_state) keeps one per layer from its forward to "
      "its backward and fork_rng one more while it recomputes; on the cpu device kind only (CUDA's "
      "states are host tensors too)" },
};

#define CONSTANT_COUNT ((int32_t)(sizeof constants / sizeof constants[0]))

int32_t mtk_memory_constant_count(void) { return CONSTANT_COUNT; }

const mtk_memory_constant *mtk_memory_constant_at(int32_t i)
{
    return i >= 0 && i < CONSTANT_COUNT ? &constants[i] : NULL;
}

void mtk_memory_constants_default(mtk_memory_constants *c)
{
    for (int32_t i = 0; i < CONSTANT_COUNT; i++)
        *(int64_t *)((char *)c + constants[i].offset) = constants[i].value;
}

bool mtk_memory_constants_set(mtk_ctx *ctx, mtk_memory_constants *c, const char *name, int64_t value)
{
    for (int32_t i = 0; i < CONSTANT_COUNT; i++) {
        if (strcmp(constants[i].name, name) != 0) continue;
        if (value < 0 || (constants[i].offset == offsetof(mtk_memory_constants, cuda_block_bytes) && value < 1))
            return mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "memory: constant %s must be %s, got %lld", name,
                             value < 0 ? ">= 0" : ">= 1", (long long)value);
        *(int64_t *)((char *)c + constants[i].offset) = value;
        return true;
    }
    char known[512];
    size_t len = 0;
    for (int32_t i = 0; i < CONSTANT_COUNT && len < sizeof known; i++)
        len += (size_t)snprintf(known + len, sizeof known - len, "%s%s", i ? ", " : "", constants[i].name);
    return mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "memory: unknown constant '%s' (known: %s)", name, known);
}

/* ---------------------------------------------------------------- options */

void mtk_memory_options_init(mtk_memory_options *o)
{
    memset(o, 0, sizeof *o);
    o->mode = MTK_MEMORY_INFERENCE;
    o->optimizer = MTK_OPTIMIZER_ADAMW;
    o->dtype = MTK_DTYPE_UNDEFINED;
    o->attention = MTK_ATTENTION_SDPA;
    o->device_kind = MTK_DEVICE_KIND_CPU;
    o->batch = 1;
    o->seq = 1;
    o->new_tokens = 1;
    o->grad_accum = 1;
    mtk_memory_constants_default(&o->constants);
}

const char *mem_experts_name(const mtk_memory_options *o)
{
    switch (o->experts) {
    case MTK_EXPERTS_BATCHED_MM: return "batched_mm";
    case MTK_EXPERTS_GROUPED_MM: return "grouped_mm";
    default: return NULL;
    }
}

bool mem_options_check(mtk_ctx *ctx, const mtk_memory_options *o)
{
    if ((unsigned)o->mode > MTK_MEMORY_GENERATE)
        return mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "memory: unknown mode %d", (int)o->mode);
    if ((unsigned)o->optimizer > MTK_OPTIMIZER_ADAMW)
        return mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "memory: unknown optimizer %d", (int)o->optimizer);
    if ((unsigned)o->mixed_precision > MTK_MIXED_FP16)
        return mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "memory: unknown mixed precision %d",
                         (int)o->mixed_precision);
    if ((unsigned)o->device_kind > MTK_DEVICE_KIND_CUDA)
        return mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "memory: unknown device kind %d", (int)o->device_kind);
    if (o->batch < 1 || o->seq < 1)
        return mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "memory: the input must be at least 1x1, got %lldx%lld",
                         (long long)o->batch, (long long)o->seq);
    if (o->grad_accum < 1)
        return mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "memory: --grad-accum must be >= 1, got %d",
                         (int)o->grad_accum);
    if (o->new_tokens < 1)
        return mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "memory: --new-tokens must be >= 1, got %lld",
                         (long long)o->new_tokens);
    if (o->constants.cuda_block_bytes < 1)
        return mtk_error(ctx, MTK_ERR_INVALID_ARGUMENT, "memory: cuda_block_bytes must be >= 1");
    return true;
}

int64_t mem_alloc_bytes(const mtk_memory_options *o, int64_t nbytes)
{
    if (o->device_kind != MTK_DEVICE_KIND_CUDA || nbytes <= 0) return nbytes;
    int64_t block = o->constants.cuda_block_bytes;
    return (nbytes + block - 1) / block * block;
}

void mem_note(mtk_memory_plan *plan, const char *note)
{
    if (plan->nnotes < (int32_t)(sizeof plan->notes / sizeof plan->notes[0])) plan->notes[plan->nnotes++] = note;
}

const char *mtk_memory_phase_name(mtk_memory_phase phase)
{
    static const char *const names[] = { "setup", "forward", "backward", "recompute",
                                         "optimizer", "zero_grad", "prefill", "decode" };
    return (unsigned)phase < sizeof names / sizeof names[0] ? names[phase] : "?";
}
