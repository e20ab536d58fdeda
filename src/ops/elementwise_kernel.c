/* The element-wise loop engine: broadcasting, dtype conversion into a
 * compute class, blocks of contiguous buffers for the element functions,
 * and a zero-copy path when operands already have the compute type. */
#include "ops/elementwise_kernel.h"
#include "ops/elementwise_arith.h"
#include "core/cpu_isa.h"
#include "core/parallel.h"
#include "core/scalar.h"
#include "mtk/ops/elementwise.h"

#include <math.h>
#include <stdatomic.h>
#include <string.h>

#define BLOCK 256 /* elements per call of an element function */

typedef enum compute_class { CLASS_F32, CLASS_F64, CLASS_I64 } compute_class;

typedef struct run_state {
    int32_t nin;
    mtk_dtype in_dtype[EW_MAX_INPUTS];
    bool raw[EW_MAX_INPUTS]; /* read at full precision (see ew_run) */
    mtk_dtype compute;
    mtk_dtype out_dtype;
    compute_class cls;
    const ew_fns *fns;
    ew_params *params;
} run_state;

static compute_class class_of(mtk_dtype d)
{
    if (d == MTK_FLOAT64) return CLASS_F64;
    if (mtk_dtype_is_floating(d)) return CLASS_F32;
    return CLASS_I64;
}

/* ---------------------------------------------------------------- loads */

/* One element of dtype `from` as PyTorch would see it after casting to
 * `compute`, widened to float / double / int64. */
static float load_f32(mtk_dtype from, mtk_dtype compute, const char *src)
{
    if (from == compute) {
        if (from == MTK_FLOAT32) return *(const float *)src;
        if (from == MTK_FLOAT16) return mtk_f16_to_f32(*(const uint16_t *)src);
        if (from == MTK_BFLOAT16) return mtk_bf16_to_f32(*(const uint16_t *)src);
        return (float)mtk_load_f64(from, src);
    }
    char tmp[8];
    mtk_convert_element(compute, tmp, from, src);
    return (float)mtk_load_f64(compute, tmp);
}

static double load_f64(mtk_dtype from, const char *src)
{
    /* compute is float64: every dtype converts exactly or as C does */
    if (from == MTK_FLOAT64) return *(const double *)src;
    if (mtk_dtype_is_integral(from, true)) return (double)mtk_load_i64(from, src);
    return mtk_load_f64(from, src);
}

static int64_t load_i64(mtk_dtype from, mtk_dtype compute, const char *src)
{
    if (from == compute) return mtk_load_i64(from, src);
    char tmp[8];
    mtk_convert_element(compute, tmp, from, src);
    return mtk_load_i64(compute, tmp);
}

static void load_block_f32(float *dst, const char *src, int64_t stride, int64_t n, mtk_dtype from,
                           mtk_dtype compute)
{
    if (from == MTK_FLOAT32 && compute == MTK_FLOAT32) {
        for (int64_t j = 0; j < n; j++) dst[j] = *(const float *)(src + j * stride);
    } else if (from == compute && from == MTK_FLOAT16) {
        for (int64_t j = 0; j < n; j++) dst[j] = mtk_f16_to_f32(*(const uint16_t *)(src + j * stride));
    } else if (from == compute && from == MTK_BFLOAT16) {
        for (int64_t j = 0; j < n; j++) dst[j] = mtk_bf16_to_f32(*(const uint16_t *)(src + j * stride));
    } else {
        for (int64_t j = 0; j < n; j++) dst[j] = load_f32(from, compute, src + j * stride);
    }
}

static void load_block_f64(double *dst, const char *src, int64_t stride, int64_t n, mtk_dtype from)
{
    if (from == MTK_FLOAT64) {
        for (int64_t j = 0; j < n; j++) dst[j] = *(const double *)(src + j * stride);
    } else {
        for (int64_t j = 0; j < n; j++) dst[j] = load_f64(from, src + j * stride);
    }
}

static void load_block_i64(int64_t *dst, const char *src, int64_t stride, int64_t n, mtk_dtype from,
                           mtk_dtype compute)
{
    if (from != compute) {
        for (int64_t j = 0; j < n; j++) dst[j] = load_i64(from, compute, src + j * stride);
        return;
    }
    switch (from) {
    case MTK_INT64:
        for (int64_t j = 0; j < n; j++) dst[j] = *(const int64_t *)(src + j * stride);
        break;
    case MTK_INT32:
        for (int64_t j = 0; j < n; j++) dst[j] = *(const int32_t *)(src + j * stride);
        break;
    case MTK_UINT8:
        for (int64_t j = 0; j < n; j++) dst[j] = *(const uint8_t *)(src + j * stride);
        break;
    case MTK_BOOL:
        for (int64_t j = 0; j < n; j++) dst[j] = *(const uint8_t *)(src + j * stride) != 0;
        break;
    default:
        for (int64_t j = 0; j < n; j++) dst[j] = mtk_load_i64(from, src + j * stride);
        break;
    }
}

/* --------------------------------------------------------------- stores */

static void store_block_f32(char *dst, int64_t stride, const float *src, int64_t n, mtk_dtype to)
{
    switch (to) {
    case MTK_FLOAT32:
        for (int64_t j = 0; j < n; j++) *(float *)(dst + j * stride) = src[j];
        break;
    case MTK_FLOAT16:
        for (int64_t j = 0; j < n; j++) *(uint16_t *)(dst + j * stride) = mtk_f32_to_f16(src[j]);
        break;
    case MTK_BFLOAT16:
        for (int64_t j = 0; j < n; j++) *(uint16_t *)(dst + j * stride) = mtk_f32_to_bf16(src[j]);
        break;
    case MTK_BOOL:
        for (int64_t j = 0; j < n; j++) *(uint8_t *)(dst + j * stride) = src[j] != 0.0f;
        break;
    default:
        for (int64_t j = 0; j < n; j++) mtk_store_f64(to, dst + j * stride, src[j]);
        break;
    }
}

static void store_block_f64(char *dst, int64_t stride, const double *src, int64_t n, mtk_dtype to)
{
    if (to == MTK_BOOL) {
        for (int64_t j = 0; j < n; j++) *(uint8_t *)(dst + j * stride) = src[j] != 0.0;
        return;
    }
    for (int64_t j = 0; j < n; j++) mtk_store_f64(to, dst + j * stride, src[j]);
}

static void store_block_i64(char *dst, int64_t stride, const int64_t *src, int64_t n, mtk_dtype to)
{
    switch (to) {
    case MTK_INT64:
        for (int64_t j = 0; j < n; j++) *(int64_t *)(dst + j * stride) = src[j];
        break;
    case MTK_INT32:
        for (int64_t j = 0; j < n; j++) *(int32_t *)(dst + j * stride) = (int32_t)src[j];
        break;
    case MTK_UINT8:
        for (int64_t j = 0; j < n; j++) *(uint8_t *)(dst + j * stride) = (uint8_t)src[j];
        break;
    case MTK_BOOL:
        for (int64_t j = 0; j < n; j++) *(uint8_t *)(dst + j * stride) = src[j] != 0;
        break;
    default:
        for (int64_t j = 0; j < n; j++) mtk_store_i64(to, dst + j * stride, src[j]);
        break;
    }
}

/* ------------------------------------------------------- block runners */

static void block_f32(const run_state *st, char **ptrs, const int64_t *bs, int64_t n)
{
    float buf[EW_MAX_INPUTS][BLOCK], out_buf[BLOCK];
    const float *in[EW_MAX_INPUTS];
    for (int32_t k = 0; k < st->nin; k++) {
        const char *src = ptrs[k + 1];
        int64_t stride = bs[k + 1];
        mtk_dtype from = st->in_dtype[k];
        if (from == MTK_FLOAT32 && st->compute == MTK_FLOAT32 && stride == 4) {
            in[k] = (const float *)src;
        } else if (stride == 0) {
            float v = st->raw[k] ? (float)mtk_load_f64(from, src) : load_f32(from, st->compute, src);
            for (int64_t j = 0; j < n; j++) buf[k][j] = v;
            in[k] = buf[k];
        } else {
            load_block_f32(buf[k], src, stride, n, from, st->compute);
            in[k] = buf[k];
        }
    }
    bool direct = st->out_dtype == MTK_FLOAT32 && bs[0] == 4;
    float *out = direct ? (float *)ptrs[0] : out_buf;
    st->fns->f32(out, in, n, st->params);
    if (!direct) store_block_f32(ptrs[0], bs[0], out_buf, n, st->out_dtype);
}

static void block_f64(const run_state *st, char **ptrs, const int64_t *bs, int64_t n)
{
    double buf[EW_MAX_INPUTS][BLOCK], out_buf[BLOCK];
    const double *in[EW_MAX_INPUTS];
    for (int32_t k = 0; k < st->nin; k++) {
        const char *src = ptrs[k + 1];
        int64_t stride = bs[k + 1];
        mtk_dtype from = st->in_dtype[k];
        if (from == MTK_FLOAT64 && stride == 8) {
            in[k] = (const double *)src;
        } else if (stride == 0) {
            double v = load_f64(from, src);
            for (int64_t j = 0; j < n; j++) buf[k][j] = v;
            in[k] = buf[k];
        } else {
            load_block_f64(buf[k], src, stride, n, from);
            in[k] = buf[k];
        }
    }
    bool direct = st->out_dtype == MTK_FLOAT64 && bs[0] == 8;
    double *out = direct ? (double *)ptrs[0] : out_buf;
    st->fns->f64(out, in, n, st->params);
    if (!direct) store_block_f64(ptrs[0], bs[0], out_buf, n, st->out_dtype);
}

static void block_i64(const run_state *st, char **ptrs, const int64_t *bs, int64_t n)
{
    int64_t buf[EW_MAX_INPUTS][BLOCK], out_buf[BLOCK];
    const int64_t *in[EW_MAX_INPUTS];
    for (int32_t k = 0; k < st->nin; k++) {
        const char *src = ptrs[k + 1];
        int64_t stride = bs[k + 1];
        mtk_dtype from = st->in_dtype[k];
        if (from == MTK_INT64 && st->compute == MTK_INT64 && stride == 8) {
            in[k] = (const int64_t *)src;
        } else if (stride == 0) {
            int64_t v = load_i64(from, st->compute, src);
            for (int64_t j = 0; j < n; j++) buf[k][j] = v;
            in[k] = buf[k];
        } else {
            load_block_i64(buf[k], src, stride, n, from, st->compute);
            in[k] = buf[k];
        }
    }
    bool direct = st->out_dtype == MTK_INT64 && bs[0] == 8;
    int64_t *out = direct ? (int64_t *)ptrs[0] : out_buf;
    st->fns->i64(out, in, n, st->params);
    if (!direct) store_block_i64(ptrs[0], bs[0], out_buf, n, st->out_dtype);
}

static void row(char **ptrs, const int64_t *bs, int64_t count, void *user)
{
    const run_state *st = user;
    char *p[EW_MAX_INPUTS + 1];
    for (int32_t k = 0; k <= st->nin; k++) p[k] = ptrs[k];
    for (int64_t done = 0; done < count; done += BLOCK) {
        int64_t n = count - done < BLOCK ? count - done : BLOCK;
        switch (st->cls) {
        case CLASS_F32: block_f32(st, p, bs, n); break;
        case CLASS_F64: block_f64(st, p, bs, n); break;
        case CLASS_I64: block_i64(st, p, bs, n); break;
        }
        for (int32_t k = 0; k <= st->nin; k++) p[k] += n * bs[k];
    }
}

/* ------------------------------------------------------------ iteration */

/* Orders dims by the output's strides (largest first) and merges dims
 * that every operand walks as one, so rows are as long as possible. */
static int32_t simplify(int32_t nops, int64_t (*strides)[MTK_MAX_DIMS], int64_t *shape, int32_t ndim)
{
    int32_t perm[MTK_MAX_DIMS];
    int32_t n = 0;
    for (int32_t d = 0; d < ndim; d++)
        if (shape[d] != 1) perm[n++] = d;
    for (int32_t i = 1; i < n; i++) { /* stable insertion sort, out stride descending */
        int32_t p = perm[i], j = i - 1;
        while (j >= 0 && strides[0][perm[j]] < strides[0][p]) {
            perm[j + 1] = perm[j];
            j--;
        }
        perm[j + 1] = p;
    }
    int64_t new_shape[MTK_MAX_DIMS], new_strides[EW_MAX_INPUTS + 1][MTK_MAX_DIMS];
    int32_t m = 0;
    for (int32_t i = 0; i < n; i++) {
        int32_t d = perm[i];
        bool merge = m > 0;
        for (int32_t k = 0; k < nops && merge; k++)
            if (new_strides[k][m - 1] != strides[k][d] * shape[d]) merge = false;
        if (merge) {
            new_shape[m - 1] *= shape[d];
            for (int32_t k = 0; k < nops; k++) new_strides[k][m - 1] = strides[k][d];
        } else {
            new_shape[m] = shape[d];
            for (int32_t k = 0; k < nops; k++) new_strides[k][m] = strides[k][d];
            m++;
        }
    }
    for (int32_t d = 0; d < m; d++) {
        shape[d] = new_shape[d];
        for (int32_t k = 0; k < nops; k++) strides[k][d] = new_strides[k][d];
    }
    return m;
}

/* ------------------------------------- contiguous float32 add/sub/mul */

typedef enum { FAST_NONE, FAST_ADD, FAST_SUB, FAST_MUL } fast_binary;

/* out = a op b over n contiguous floats; out may be a or b (in-place),
 * so each step loads 16 elements of both before storing 16.  Vectorized
 * by the compiler in each instruction set's variant below; the same
 * float arithmetic as the element functions. */
static inline __attribute__((always_inline)) void binary_f32(float *out, const float *a, const float *b, int64_t n, fast_binary op)
{
    enum { STEP = 16 };
    int64_t j = 0;
#define FAST_LOOP(expr)                                                                                      \
    for (; j + STEP <= n; j += STEP) {                                                                       \
        float t[STEP];                                                                                       \
        for (int l = 0; l < STEP; l++) {                                                                     \
            float x = a[j + l], y = b[j + l];                                                                \
            t[l] = expr;                                                                                     \
        }                                                                                                    \
        for (int l = 0; l < STEP; l++) out[j + l] = t[l];                                                    \
    }                                                                                                        \
    for (; j < n; j++) {                                                                                     \
        float x = a[j], y = b[j];                                                                            \
        out[j] = expr;                                                                                       \
    }
    switch (op) {
    case FAST_ADD: FAST_LOOP(x + y) break;
    case FAST_SUB: FAST_LOOP(x - y) break;
    case FAST_MUL: FAST_LOOP(x * y) break;
    case FAST_NONE: break;
    }
#undef FAST_LOOP
}

typedef void (*binary_f32_fn)(float *out, const float *a, const float *b, int64_t n, fast_binary op);

/* binary_f32 compiled per instruction set (core/cpu_isa.h) */
#define BINARY_VARIANT(SUFFIX, TARGET)                                                                       \
    TARGET static void binary_f32_##SUFFIX(float *out, const float *a, const float *b, int64_t n,           \
                                           fast_binary op)                                                  \
    {                                                                                                        \
        binary_f32(out, a, b, n, op);                                                                        \
    }
BINARY_VARIANT(baseline, )
BINARY_VARIANT(avx2, CPU_ISA_TARGET_AVX2)
BINARY_VARIANT(avx512, CPU_ISA_TARGET_AVX512)
#undef BINARY_VARIANT

static const binary_f32_fn binary_f32_variants[CPU_ISA_COUNT] = {
    [CPU_ISA_BASELINE] = binary_f32_baseline,
    [CPU_ISA_AVX2] = binary_f32_avx2,
    [CPU_ISA_AVX512] = binary_f32_avx512,
};

typedef struct fast_job {
    binary_f32_fn fn;        /* the variant of cpu_isa_active() */
    float *out;
    const float *a, *b;
    fast_binary op;
} fast_job;

static void run_fast(int64_t begin, int64_t end, int32_t part, void *user)
{
    (void)part;
    const fast_job *f = user;
    f->fn(f->out + begin, f->a + begin, f->b + begin, end - begin, f->op);
}

/* The fast case of ew_run: float32 add, sub or mul of two float32
 * operands walked contiguously (after simplify: one dim, stride 4). */
static fast_binary fast_case(const run_state *st, const int64_t (*strides)[MTK_MAX_DIMS], int32_t ndim)
{
    if (st->nin != 2 || st->compute != MTK_FLOAT32 || st->out_dtype != MTK_FLOAT32 ||
        st->in_dtype[0] != MTK_FLOAT32 || st->in_dtype[1] != MTK_FLOAT32 || ndim != 1)
        return FAST_NONE;
    for (int32_t k = 0; k < 3; k++)
        if (strides[k][0] != (int64_t)sizeof(float)) return FAST_NONE;
    return st->fns == &ew_add_fns ? FAST_ADD : st->fns == &ew_sub_fns ? FAST_SUB : st->fns == &ew_mul_fns ? FAST_MUL
                                                                                                       : FAST_NONE;
}

/* Outputs of at least this many elements are split across threads
 * (along the outermost dim after simplify): below it, starting a thread
 * costs more than it saves. */
#define EW_PARALLEL_MIN_ELEMENTS ((int64_t)1 << 18)
#define EW_MAX_PARTS 64

/* The whole iteration of one ew_run call, split along dim 0. */
typedef struct split_job {
    const run_state *st;
    int32_t nops, ndim, parts;
    int64_t shape[MTK_MAX_DIMS];
    int64_t strides[EW_MAX_INPUTS + 1][MTK_MAX_DIMS];
    char *base[EW_MAX_INPUTS + 1];
    ew_params part_params[EW_MAX_PARTS]; /* each part's own copy */
} split_job;

/* Runs rows [begin, end) of dim 0 (all of a 0-dim iteration); part < 0:
 * on the caller's run_state, else on part's copy of the params. */
static void run_split(int64_t begin, int64_t end, int32_t part, void *user)
{
    split_job *job = user;
    run_state st = *job->st;
    if (part >= 0) {
        job->part_params[part] = *job->st->params;
        st.params = &job->part_params[part];
    }
    char *base[EW_MAX_INPUTS + 1];
    const int64_t *stride_ptrs[EW_MAX_INPUTS + 1];
    int64_t shape[MTK_MAX_DIMS];
    memcpy(shape, job->shape, (size_t)job->ndim * sizeof *shape);
    for (int32_t k = 0; k < job->nops; k++) {
        base[k] = job->base[k] + (job->ndim > 0 ? begin * job->strides[k][0] : 0);
        stride_ptrs[k] = job->strides[k];
    }
    if (job->ndim > 0) shape[0] = end - begin;
    mtk_foreach_strided(job->nops, base, stride_ptrs, shape, job->ndim, row, &st);
}

bool ew_run(mtk_tensor *out, const mtk_tensor *const *inputs, int32_t nin, mtk_dtype compute,
            const ew_fns *fns, ew_params *params, uint32_t raw_scalar)
{
    run_state st;
    memset(&st, 0, sizeof st);
    st.nin = nin;
    st.compute = compute;
    st.out_dtype = out->dtype;
    st.cls = class_of(compute);
    st.fns = fns;
    st.params = params;
    params->dtype = compute;
    params->raw_scalars = 0;
    if ((st.cls == CLASS_F32 && !fns->f32) || (st.cls == CLASS_F64 && !fns->f64) ||
        (st.cls == CLASS_I64 && !fns->i64))
        return false;
    bool reduced = compute == MTK_FLOAT16 || compute == MTK_BFLOAT16;
    for (int32_t k = 0; k < nin; k++) {
        st.in_dtype[k] = inputs[k]->dtype;
        st.raw[k] = reduced && (raw_scalar & (1u << k)) && mtk_tensor_numel(inputs[k]) == 1;
        if (st.raw[k]) params->raw_scalars |= 1u << k;
    }
    if (mtk_tensor_numel(out) == 0) return true;

    int64_t shape[MTK_MAX_DIMS];
    int64_t strides[EW_MAX_INPUTS + 1][MTK_MAX_DIMS];
    int32_t ndim = out->ndim;
    memcpy(shape, out->shape, (size_t)ndim * sizeof *shape);
    mtk_broadcast_byte_strides(out, shape, ndim, strides[0]);
    for (int32_t k = 0; k < nin; k++) mtk_broadcast_byte_strides(inputs[k], shape, ndim, strides[k + 1]);
    ndim = simplify(nin + 1, strides, shape, ndim);

    split_job job;
    memset(&job, 0, sizeof job);
    job.st = &st;
    job.nops = nin + 1;
    job.ndim = ndim;
    memcpy(job.shape, shape, (size_t)ndim * sizeof *shape);
    memcpy(job.strides, strides, sizeof strides);
    job.base[0] = mtk_tensor_data(out);
    for (int32_t k = 0; k < nin; k++) job.base[k + 1] = mtk_tensor_data(inputs[k]);
    int64_t numel = mtk_tensor_numel(out);
    int32_t parts = numel < EW_PARALLEL_MIN_ELEMENTS || ndim == 0 ? 1 : mtk_parallel_threads(0);
    if (parts > EW_MAX_PARTS) parts = EW_MAX_PARTS;
    fast_binary fast = fast_case(&st, strides, ndim);
    if (fast != FAST_NONE) {
        fast_job f = { binary_f32_variants[cpu_isa_active()], (float *)job.base[0], (const float *)job.base[1],
                       (const float *)job.base[2], fast };
        mtk_parallel_range(shape[0], parts, run_fast, &f);
        return true;
    }
    if (ndim > 0 && parts > shape[0]) parts = (int32_t)shape[0];
    if (parts <= 1) {
        run_split(0, ndim > 0 ? shape[0] : 1, -1, &job);
        return true;
    }
    job.parts = parts;
    mtk_parallel_range(shape[0], parts, run_split, &job);
    for (int32_t t = 0; t < parts; t++) params->zero_division |= job.part_params[t].zero_division;
    return true;
}

/* ---------------------------------------------------- number range check */


bool ew_number_fits(mtk_op_call *call, const mtk_value *v, mtk_dtype dtype)
{
    double lo, hi;
    switch (dtype) {
    case MTK_UINT8: lo = v->kind == MTK_VALUE_FLOAT ? 0.0 : -255.0, hi = 255.0; break; /* ints wrap, floats do not */
    case MTK_INT8: lo = -128.0, hi = 127.0; break;
    case MTK_INT16: lo = -32768.0, hi = 32767.0; break;
    case MTK_INT32: lo = -2147483648.0, hi = 2147483647.0; break;
    case MTK_FLOAT16: lo = -65504.0, hi = 65504.0; break;
    case MTK_BFLOAT16: lo = -3.3895313892515355e38, hi = 3.3895313892515355e38; break;
    case MTK_FLOAT32: lo = -3.4028234663852886e38, hi = 3.4028234663852886e38; break;
    default: return true; /* int64 holds every int; doubles, bools, float8 are not checked */
    }
    double x = mtk_value_as_double(v);
    if (mtk_dtype_is_floating(dtype) && (isinf(x) || isnan(x))) return true;
    if (x >= lo && x <= hi) return true;
    return mtk_call_error(call, MTK_ERR_OVERFLOW, "value cannot be converted to type %s without overflow",
                          mtk_dtype_get(dtype)->c10_name);
}

/* --------------------------------------------------------- meta helpers */

bool ew_set_output(mtk_op_call *call, mtk_dtype dtype, const ew_lay *layout)
{
    return ew_set_output_strided(call, dtype, layout->t.shape, layout->t.ndim, layout->t.stride);
}

bool ew_set_output_strided(mtk_op_call *call, mtk_dtype dtype, const int64_t *shape, int32_t ndim,
                           const int64_t *stride)
{
    mtk_tensor *t = mtk_tensor_new(call->ctx, dtype, shape, ndim, stride, call->device);
    if (!t || !mtk_call_set_outputs(call, 1)) return false;
    mtk_call_output(call, 0, t, -1);
    return true;
}

bool ew_set_contiguous_output(mtk_op_call *call, mtk_dtype dtype, const int64_t *shape, int32_t ndim)
{
    int64_t stride[MTK_MAX_DIMS];
    mtk_contiguous_strides(shape, ndim, stride);
    return ew_set_output_strided(call, dtype, shape, ndim, stride);
}

bool ew_can_cast(mtk_dtype from, mtk_dtype to)
{
    /* no float -> integral, no non-bool -> bool (PyTorch's canCast) */
    if (mtk_dtype_is_floating(from) && mtk_dtype_is_integral(to, true)) return false;
    if (from != MTK_BOOL && to == MTK_BOOL) return false;
    return true;
}

bool ew_set_inplace_output(mtk_op_call *call, int32_t arg, mtk_dtype result_dtype)
{
    mtk_tensor *in = call->args[arg].as.tensor;
    if (!ew_can_cast(result_dtype, in->dtype))
        return mtk_call_error(call, MTK_ERR_DTYPE,
                              "result type %s can't be cast to the desired output type %s",
                              mtk_dtype_cpp_name(result_dtype), mtk_dtype_cpp_name(in->dtype));
    mtk_tensor *t = mtk_tensor_new(call->ctx, in->dtype, in->shape, in->ndim, in->stride, in->device);
    if (!t || !mtk_call_set_outputs(call, 1)) return false;
    t->storage_offset = in->storage_offset;
    mtk_call_output(call, 0, t, arg);
    call->result = call->args[arg]; /* the call returns the input itself */
    return true;
}

bool ew_check_cpu_dtype(mtk_op_call *call, const char *kernel_name, uint32_t supported, mtk_dtype dtype)
{
    if (ew_in(supported, dtype)) return true;
    return mtk_call_error(call, MTK_ERR_DTYPE, "\"%s\" not implemented for '%s'", kernel_name,
                          mtk_dtype_cpp_name(dtype));
}

double ew_arg_double(const mtk_op_call *call, int32_t i) { return mtk_value_as_double(&call->args[i]); }

/* A float scalar as int64 without undefined behaviour: truncated,
 * saturated past the range, 0 for NaN (an integer kernel never reads it
 * for a float scalar: the result dtype is then floating). */
static int64_t float_to_i64(double f)
{
    if (isnan(f)) return 0;
    if (f >= 9223372036854775808.0) return INT64_MAX;
    if (f < -9223372036854775808.0) return INT64_MIN;
    return (int64_t)f;
}

int64_t ew_arg_int(const mtk_op_call *call, int32_t i)
{
    const mtk_value *v = &call->args[i];
    if (v->kind == MTK_VALUE_INT) return v->as.i;
    if (v->kind == MTK_VALUE_BOOL) return v->as.b;
    return float_to_i64(v->as.f);
}

void ew_param_set(ew_params *p, int32_t k, const mtk_value *number)
{
    p->f[k] = mtk_value_as_double(number);
    if (number->kind == MTK_VALUE_INT) p->i[k] = number->as.i;
    else if (number->kind == MTK_VALUE_BOOL) p->i[k] = number->as.b;
    else p->i[k] = float_to_i64(number->as.f);
}
