/* The choice of instruction set of the vectorized cpu kernels
 * (core/cpu_isa.h): MTK_CPU_ISA forces a variant the cpu runs, and every
 * variant gives the same bits — the test runs itself once per variant
 * (the choice is made once per process) with `--digest`, which prints a
 * hash of each kernel's output, and compares the hashes.  The float32
 * convolution is the one exception: the baseline has no direct kernel
 * and runs im2col + sgemm, whose sums go in another order (docs/ops.md);
 * its AVX2 and AVX-512 tiles agree. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mtk/mtk.h"
#include "core/cpu_isa.h"
#include "core/scalar.h"

/* --------------------------------------------------------- the digests */

/* Deterministic value in [-0.5, 0.5) for element i of input `seed`. */
static double fill(uint64_t i, uint64_t seed)
{
    uint64_t h = ((i + seed * 7919u) * 2654435761u) & 0xffffffffu;
    return (double)h / 4294967296.0 - 0.5;
}

static mtk_tensor *filled(mtk_ctx *ctx, mtk_dtype dtype, const int64_t *shape, int32_t ndim, uint64_t seed,
                          double scale)
{
    mtk_tensor *t = mtk_tensor_new(ctx, dtype, shape, ndim, NULL, MTK_DEVICE_CPU);
    if (!t || !mtk_tensor_alloc_storage(t)) return NULL;
    char *d = mtk_tensor_data(t);
    for (int64_t i = 0; i < mtk_tensor_numel(t); i++)
        mtk_store_f64(dtype, d + i * (int64_t)mtk_dtype_size(dtype), (double)(float)(fill((uint64_t)i, seed) * scale));
    return t;
}

/* Prints "name hash" for t's bytes (FNV-1a), or "name error". */
static void print_digest(const char *name, const mtk_tensor *t)
{
    if (!t) {
        printf("%s error\n", name);
        return;
    }
    const unsigned char *d = mtk_tensor_data(t);
    size_t n = (size_t)mtk_tensor_numel(t) * mtk_dtype_size(t->dtype);
    uint64_t h = 1469598103934665603u;
    for (size_t i = 0; i < n; i++) h = (h ^ d[i]) * 1099511628211u;
    printf("%s %016llx\n", name, (unsigned long long)h);
}

/* The child's work: every vectorized kernel on inputs with vector tails,
 * on two threads. */
static int print_digests(void)
{
    mtk_ctx *ctx = mtk_ctx_new();
    mtk_ctx_set_num_threads(ctx, 2);
    int64_t rows[2] = { 67, 1003 }, ns[1] = { 1003 }, big[1] = { 300001 };
    mtk_tensor *x = filled(ctx, MTK_FLOAT32, rows, 2, 1, 12.0), *w = filled(ctx, MTK_FLOAT32, ns, 1, 2, 1.0),
               *b = filled(ctx, MTK_FLOAT32, ns, 1, 3, 1.0);
    printf("isa %s\n", cpu_isa_name(cpu_isa_active()));
    print_digest("softmax_f32", mtk_softmax(ctx, x, -1, MTK_DTYPE_UNDEFINED));
    print_digest("log_softmax_f32", mtk_log_softmax(ctx, x, -1, MTK_DTYPE_UNDEFINED));
    print_digest("softmax_bf16", mtk_softmax(ctx, mtk_to_dtype(ctx, x, MTK_BFLOAT16), -1, MTK_DTYPE_UNDEFINED));
    print_digest("layer_norm_f32", mtk_layer_norm(ctx, x, ns, 1, w, b, 1e-5));
    print_digest("rms_norm_f32", mtk_rms_norm(ctx, x, ns, 1, w, 1e-6));
    print_digest("layer_norm_f64", mtk_layer_norm(ctx, mtk_to_dtype(ctx, x, MTK_FLOAT64), ns, 1,
                                                  mtk_to_dtype(ctx, w, MTK_FLOAT64), NULL, 1e-5));
    mtk_tensor *p = filled(ctx, MTK_FLOAT32, big, 1, 4, 1.0), *q = filled(ctx, MTK_FLOAT32, big, 1, 5, 1.0);
    print_digest("add_f32", mtk_add(ctx, p, q));
    print_digest("sub_f32", mtk_sub(ctx, p, q));
    print_digest("mul_f32", mtk_mul(ctx, p, q));
    /* the decode product: a bfloat16 weight read in place, 1 and 3 rows */
    int64_t w_shape[2] = { 1003, 67 }, x1[2] = { 1, 67 }, x3[2] = { 3, 67 };
    mtk_tensor *wh = mtk_to_dtype(ctx, filled(ctx, MTK_FLOAT32, w_shape, 2, 13, 1.0), MTK_BFLOAT16);
    print_digest("linear_bf16_1row", mtk_linear(ctx, mtk_to_dtype(ctx, filled(ctx, MTK_FLOAT32, x1, 2, 14, 1.0),
                                                                 MTK_BFLOAT16), wh, NULL));
    print_digest("linear_bf16_3rows", mtk_linear(ctx, mtk_to_dtype(ctx, filled(ctx, MTK_FLOAT32, x3, 2, 15, 1.0),
                                                                  MTK_BFLOAT16), wh, NULL));
    /* the same with a float32 weight (ops/linalg_gemv.c) */
    mtk_tensor *wf = filled(ctx, MTK_FLOAT32, w_shape, 2, 16, 1.0);
    print_digest("linear_f32_1row", mtk_linear(ctx, filled(ctx, MTK_FLOAT32, x1, 2, 17, 1.0), wf, NULL));
    print_digest("linear_f32_3rows", mtk_linear(ctx, filled(ctx, MTK_FLOAT32, x3, 2, 18, 1.0), wf, NULL));
    /* a 3x3 conv with bias and a stride-2 7x7 one, as ResNet's */
    int64_t xs[4] = { 2, 8, 20, 21 }, ws[4] = { 12, 8, 3, 3 }, bs[1] = { 12 };
    int64_t ss[4] = { 1, 3, 30, 30 }, sw[4] = { 8, 3, 7, 7 };
    mtk_conv_args a3 = mtk_conv_args_default(), a7 = mtk_conv_args_default();
    a3.padding[0] = a3.padding[1] = 1;
    a7.stride[0] = a7.stride[1] = 2;
    a7.padding[0] = a7.padding[1] = 3;
    print_digest("conv_3x3", mtk_conv2d(ctx, filled(ctx, MTK_FLOAT32, xs, 4, 6, 1.0),
                                        filled(ctx, MTK_FLOAT32, ws, 4, 7, 1.0),
                                        filled(ctx, MTK_FLOAT32, bs, 1, 8, 1.0), &a3));
    print_digest("conv_7x7_s2", mtk_conv2d(ctx, filled(ctx, MTK_FLOAT32, ss, 4, 9, 1.0),
                                           filled(ctx, MTK_FLOAT32, sw, 4, 10, 1.0), NULL, &a7));
    /* 40 x 9 taps: the AVX2 tile runs them in two chunks */
    int64_t cs[4] = { 1, 40, 12, 29 }, cw[4] = { 16, 40, 3, 3 };
    print_digest("conv_3x3_chunked", mtk_conv2d(ctx, filled(ctx, MTK_FLOAT32, cs, 4, 11, 1.0),
                                                filled(ctx, MTK_FLOAT32, cw, 4, 12, 1.0), NULL, &a3));
    mtk_ctx_free(ctx);
    return 0;
}

/* ------------------------------------------------------------- parent */

#define MAX_OUT 4096

/* Runs this program with --digest and MTK_CPU_ISA=isa; its stdout into
 * out (NUL-terminated). */
static void digests_under(const char *isa, char *out)
{
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        dup2(fds[1], 1);
        close(fds[0]);
        close(fds[1]);
        setenv("MTK_CPU_ISA", isa, 1);
        execl("/proc/self/exe", "test_cpu_isa", "--digest", (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    size_t len = 0;
    ssize_t got;
    while (len < MAX_OUT - 1 && (got = read(fds[0], out + len, MAX_OUT - 1 - len)) > 0) len += (size_t)got;
    out[len] = 0;
    close(fds[0]);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* The hash line of `name` in a digest output ("" when missing). */
static void line_of(const char *out, const char *name, char *line, size_t cap)
{
    line[0] = 0;
    size_t n = strlen(name);
    for (const char *s = out; s && *s; s = strchr(s, '\n') ? strchr(s, '\n') + 1 : NULL)
        if (!strncmp(s, name, n) && s[n] == ' ') {
            size_t len = strcspn(s, "\n");
            snprintf(line, cap, "%.*s", (int)(len < cap ? len : cap - 1), s);
            return;
        }
}

static void isa_choice_follows_mtk_cpu_isa(void **state)
{
    (void)state;
    const char *request = getenv("MTK_CPU_ISA");
    cpu_isa want = cpu_isa_best();
    for (int i = 0; request && i < CPU_ISA_COUNT; i++)
        if (!strcmp(request, cpu_isa_name((cpu_isa)i)) && (cpu_isa)i < want) want = (cpu_isa)i;
    assert_int_equal(cpu_isa_active(), want);
    assert_true(cpu_isa_request() == request || !strcmp(cpu_isa_request(), request));
    /* the variants above baseline need these; the best set has them */
    if (cpu_isa_best() >= CPU_ISA_AVX2) assert_true(cpu_isa_has("avx2") && cpu_isa_has("fma"));
    if (cpu_isa_best() == CPU_ISA_AVX512) assert_true(cpu_isa_has("avx512f"));
    assert_string_equal(cpu_isa_name(CPU_ISA_AVX2), "avx2");
}

static void every_isa_gives_the_same_bits(void **state)
{
    (void)state;
    static const char *kernels[] = { "softmax_f32", "log_softmax_f32", "softmax_bf16", "layer_norm_f32",
                                     "rms_norm_f32", "layer_norm_f64", "add_f32", "sub_f32", "mul_f32",
                                     "linear_bf16_1row", "linear_bf16_3rows" };
    /* the FMA kernels: AVX2 and AVX-512 agree (the baseline rounds more) */
    static const char *convs[] = { "conv_3x3", "conv_7x7_s2", "conv_3x3_chunked", "linear_f32_1row",
                                   "linear_f32_3rows" };
    static char out[CPU_ISA_COUNT][MAX_OUT];
    char want[128], got[128], isa[64];
    for (int i = 0; i <= (int)cpu_isa_best(); i++) {
        digests_under(cpu_isa_name((cpu_isa)i), out[i]);
        snprintf(want, sizeof want, "isa %s", cpu_isa_name((cpu_isa)i));
        line_of(out[i], "isa", isa, sizeof isa);
        assert_string_equal(isa, want); /* the child ran the variant asked for */
        for (size_t k = 0; k < sizeof kernels / sizeof *kernels; k++) {
            line_of(out[0], kernels[k], want, sizeof want);
            line_of(out[i], kernels[k], got, sizeof got);
            if (strlen(want) <= strlen(kernels[k]) || strstr(want, "error")) fail_msg("%s: no digest", kernels[k]);
            if (strcmp(want, got)) fail_msg("%s: baseline gives %s, %s gives %s", kernels[k], want, isa, got);
        }
        for (size_t k = 0; i >= 2 && k < sizeof convs / sizeof *convs; k++) { /* the FMA kernels */
            line_of(out[1], convs[k], want, sizeof want);
            line_of(out[i], convs[k], got, sizeof got);
            if (strcmp(want, got)) fail_msg("%s: avx2 gives %s, %s gives %s", convs[k], want, isa, got);
        }
    }
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "--digest")) return print_digests();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(isa_choice_follows_mtk_cpu_isa),
        cmocka_unit_test(every_isa_gives_the_same_bits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
