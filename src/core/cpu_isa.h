/* Which x86 instruction set the vectorized cpu kernels run (internal).
 *
 * Each such kernel (ops/nn_fast.c, the float32 fast loop of
 * ops/elementwise_kernel.c, the direct convolution of ops/conv_direct.c,
 * the bfloat16 and float32 dot products of ops/linalg_half.c and
 * ops/linalg_gemv.c, the float32 -> bfloat16 arrays of core/bf16_round.c)
 * is compiled once per instruction set, as plain functions with a
 * target attribute, and picks its variant from a table indexed by
 * cpu_isa_active().  The choice is made once per process: the best set
 * this cpu has, lowered by the environment variable MTK_CPU_ISA
 * (baseline | avx2 | avx512) when it names one this cpu runs — so tests
 * and benchmarks can run the AVX2 and the baseline code on an AVX-512
 * machine.  See docs/ops.md ("Instruction sets of the cpu kernels"). */
#ifndef MTK_CORE_CPU_ISA_H
#define MTK_CORE_CPU_ISA_H

#include <stdbool.h>

/* The target attribute of a function compiled for AVX2 / AVX-512
 * (empty off x86-64 or without GCC's attributes: every variant is then
 * the baseline build).  FMA is enabled for the intrinsics that name it;
 * -ffp-contract=off (CMakeLists.txt) keeps the compiler from fusing
 * a * b + c, so plain arithmetic rounds alike in every variant. */
#if defined(__GNUC__) && defined(__x86_64__)
#define CPU_ISA_TARGET_AVX2 __attribute__((target("avx2,fma")))
#define CPU_ISA_TARGET_AVX512 __attribute__((target("avx512f,avx2,fma")))
#else
#define CPU_ISA_TARGET_AVX2
#define CPU_ISA_TARGET_AVX512
#endif

typedef enum cpu_isa {
    CPU_ISA_BASELINE, /* x86-64 (SSE2), or any other architecture */
    CPU_ISA_AVX2,     /* AVX2 + FMA                               */
    CPU_ISA_AVX512,   /* AVX-512F (+ AVX2, FMA)                   */
    CPU_ISA_COUNT
} cpu_isa;

/* The set the kernels run, chosen on the first call (thread-safe): the
 * best this cpu supports, or MTK_CPU_ISA's value when set to a known
 * name this cpu supports.  An unknown or unsupported value is ignored
 * (the best set runs); cpu_isa_request() says what was asked. */
cpu_isa cpu_isa_active(void);

/* The best set this cpu supports (CPU_ISA_BASELINE off x86-64 or
 * without GCC's target attributes). */
cpu_isa cpu_isa_best(void);

/* MTK_CPU_ISA as read on the first cpu_isa_active() call; NULL when it
 * was unset.  The string is the environment's. */
const char *cpu_isa_request(void);

/* "baseline", "avx2", "avx512" (static strings); "?" past the enum. */
const char *cpu_isa_name(cpu_isa isa);

/* True when this cpu runs the named feature ("avx2", "fma", "avx512f",
 * ... as GCC's __builtin_cpu_supports names them); false off x86-64. */
bool cpu_isa_has(const char *feature);

#endif
