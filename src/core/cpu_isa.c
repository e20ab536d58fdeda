/* The instruction set of the vectorized cpu kernels, chosen once per
 * process (see cpu_isa.h). */
#include "core/cpu_isa.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#if defined(__GNUC__) && defined(__x86_64__)
#define ISA_X86 1
#endif

static const char *const names[CPU_ISA_COUNT] = { "baseline", "avx2", "avx512" };

static pthread_once_t once = PTHREAD_ONCE_INIT;
static cpu_isa active = CPU_ISA_BASELINE;
static const char *request;

bool cpu_isa_has(const char *feature)
{
#ifdef ISA_X86
    __builtin_cpu_init();
    /* __builtin_cpu_supports takes a literal: one branch per name */
    if (!strcmp(feature, "avx512f")) return __builtin_cpu_supports("avx512f");
    if (!strcmp(feature, "avx2")) return __builtin_cpu_supports("avx2");
    if (!strcmp(feature, "fma")) return __builtin_cpu_supports("fma");
    if (!strcmp(feature, "avx")) return __builtin_cpu_supports("avx");
    if (!strcmp(feature, "sse4.2")) return __builtin_cpu_supports("sse4.2");
    if (!strcmp(feature, "avx512bw")) return __builtin_cpu_supports("avx512bw");
    if (!strcmp(feature, "avx512vl")) return __builtin_cpu_supports("avx512vl");
#else
    (void)feature;
#endif
    return false;
}

cpu_isa cpu_isa_best(void)
{
    /* the AVX2 kernels use FMA (the direct convolution's tile) */
    if (cpu_isa_has("avx512f") && cpu_isa_has("avx2") && cpu_isa_has("fma")) return CPU_ISA_AVX512;
    if (cpu_isa_has("avx2") && cpu_isa_has("fma")) return CPU_ISA_AVX2;
    return CPU_ISA_BASELINE;
}

static void choose(void)
{
    active = cpu_isa_best();
    request = getenv("MTK_CPU_ISA");
    if (!request) return;
    for (int i = 0; i < CPU_ISA_COUNT; i++)
        if (!strcmp(request, names[i]) && (cpu_isa)i <= active) active = (cpu_isa)i;
}

cpu_isa cpu_isa_active(void)
{
    pthread_once(&once, choose);
    return active;
}

const char *cpu_isa_request(void)
{
    pthread_once(&once, choose);
    return request;
}

const char *cpu_isa_name(cpu_isa isa) { return (unsigned)isa < CPU_ISA_COUNT ? names[isa] : "?"; }
