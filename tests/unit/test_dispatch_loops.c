/* The op helpers of src/ops/op_util.c that every kernel leans on:
 * broadcasting (torch.broadcast_shapes), broadcast byte strides, the
 * strided loop and the strided, converting copy (Tensor.copy_). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "mtk/core.h"
#include "ops/op_util.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static int setup_ctx(void **state)
{
    *state = mtk_ctx_new();
    return *state ? 0 : -1;
}

static int teardown_ctx(void **state)
{
    mtk_ctx_free(*state);
    return 0;
}

/* torch.broadcast_shapes(a, b) */
static void broadcast_shapes_match_torch(void **state)
{
    mtk_ctx *ctx = *state;
    static const struct {
        int64_t a[4]; int32_t na; int64_t b[4]; int32_t nb; int64_t out[4]; int32_t nout;
    } cases[] = {
        { { 2, 3 }, 2, { 3 }, 1, { 2, 3 }, 2 },
        { { 2, 1, 4 }, 3, { 3, 1 }, 2, { 2, 3, 4 }, 3 },
        { { 0 }, 0, { 5 }, 1, { 5 }, 1 },
        { { 0 }, 1, { 1 }, 1, { 0 }, 1 },
        { { 1, 0 }, 2, { 3, 1 }, 2, { 3, 0 }, 2 },
        { { 3, 1, 7 }, 3, { 3, 7 }, 2, { 3, 3, 7 }, 3 },
        { { 1 }, 1, { 0 }, 0, { 1 }, 1 },
        { { 0 }, 0, { 0 }, 0, { 0 }, 0 },
    };
    for (size_t i = 0; i < COUNT(cases); i++) {
        int64_t out[MTK_MAX_DIMS];
        int32_t nout = -1;
        assert_true(mtk_broadcast_shapes(ctx, "add", cases[i].a, cases[i].na, cases[i].b, cases[i].nb,
                                         out, &nout));
        assert_int_equal(nout, cases[i].nout);
        assert_memory_equal(out, cases[i].out, (size_t)nout * sizeof(int64_t));
    }
    assert_int_equal(mtk_ctx_status(ctx), MTK_OK);
}

/* torch.ones(2, 3) + torch.ones(4): PyTorch's cpu message */
static void broadcast_mismatch_uses_torch_words(void **state)
{
    mtk_ctx *ctx = *state;
    int64_t a[2] = { 2, 3 }, b[1] = { 4 }, out[MTK_MAX_DIMS];
    int32_t nout;
    assert_false(mtk_broadcast_shapes(ctx, "add", a, 2, b, 1, out, &nout));
    assert_int_equal(mtk_ctx_status(ctx), MTK_ERR_SHAPE);
    assert_string_equal(mtk_ctx_message(ctx),
                        "add: The size of tensor a (3) must match the size of tensor b (4) at "
                        "non-singleton dimension 1");
    mtk_ctx_clear_error(ctx);
    int64_t c[3] = { 5, 1, 3 }, d[3] = { 2, 4, 3 };
    assert_false(mtk_broadcast_shapes(ctx, "mul", c, 3, d, 3, out, &nout));
    assert_string_equal(mtk_ctx_message(ctx),
                        "mul: The size of tensor a (5) must match the size of tensor b (2) at "
                        "non-singleton dimension 0");
    mtk_ctx_clear_error(ctx);
    int64_t e[2] = { 2, 0 }, f[1] = { 3 };
    assert_false(mtk_broadcast_shapes(ctx, "add", e, 2, f, 1, out, &nout)); /* 0 is not 1 */
}

/* The output may be one of the inputs (folding over many operands). */
static void broadcast_output_may_alias_an_input(void **state)
{
    mtk_ctx *ctx = *state;
    int64_t acc[MTK_MAX_DIMS] = { 3, 1 }, b[3] = { 2, 1, 5 };
    int32_t nacc = 2;
    assert_true(mtk_broadcast_shapes(ctx, "where", acc, nacc, b, 3, acc, &nacc));
    assert_int_equal(nacc, 3);
    assert_int_equal(acc[0], 2);
    assert_int_equal(acc[1], 3);
    assert_int_equal(acc[2], 5);
}

static void broadcast_byte_strides_zero_the_broadcast_dims(void **state)
{
    mtk_ctx *ctx = *state;
    int64_t shape[2] = { 3, 1 };
    mtk_tensor *t = mtk_tensor_new(ctx, MTK_FLOAT64, shape, 2, NULL, MTK_DEVICE_META);
    int64_t target[3] = { 2, 3, 4 }, bs[3];
    mtk_broadcast_byte_strides(t, target, 3, bs);
    assert_int_equal(bs[0], 0);  /* missing dim */
    assert_int_equal(bs[1], 8);  /* real dim: stride 1 element of 8 bytes */
    assert_int_equal(bs[2], 0);  /* size-1 dim broadcast to 4 */
    int64_t same[2] = { 3, 1 };
    mtk_broadcast_byte_strides(t, same, 2, bs);
    assert_int_equal(bs[0], 8);
    assert_int_equal(bs[1], 8); /* size 1 that stays 1 keeps its stride */
}

/* -------------------------------------------------------- the strided loop */

typedef struct { int rows; int64_t elements; int64_t sum; } visit;

static void sum_rows(char **ptrs, const int64_t *bs, int64_t count, void *user)
{
    visit *v = user;
    v->rows++;
    for (int64_t i = 0; i < count; i++) {
        v->sum += *(const int32_t *)(ptrs[0] + i * bs[0]);
        v->elements++;
    }
}

static void foreach_visits_every_element_once(void **state)
{
    (void)state;
    int32_t data[24];
    for (int i = 0; i < 24; i++) data[i] = 1 << (i % 20);
    int64_t shape[3] = { 2, 3, 4 }, strides[3] = { 48, 16, 4 };
    char *base[1] = { (char *)data };
    const int64_t *st[1] = { strides };
    visit v = { 0 };
    mtk_foreach_strided(1, base, st, shape, 3, sum_rows, &v);
    int64_t want = 0;
    for (int i = 0; i < 24; i++) want += data[i];
    assert_int_equal(v.rows, 6);
    assert_int_equal(v.elements, 24);
    assert_int_equal(v.sum, want);
    /* transposed walk (strides of a permuted view) visits the same set */
    int64_t tshape[3] = { 4, 3, 2 }, tstrides[3] = { 4, 16, 48 };
    const int64_t *tst[1] = { tstrides };
    visit t = { 0 };
    mtk_foreach_strided(1, base, tst, tshape, 3, sum_rows, &t);
    assert_int_equal(t.rows, 12);
    assert_int_equal(t.sum, want);
}

static void foreach_handles_scalars_and_empty_shapes(void **state)
{
    (void)state;
    int32_t x = 42;
    char *base[1] = { (char *)&x };
    int64_t none[1] = { 0 };
    const int64_t *st[1] = { none };
    visit v = { 0 };
    mtk_foreach_strided(1, base, st, NULL, 0, sum_rows, &v); /* 0-dim: one element */
    assert_int_equal(v.rows, 1);
    assert_int_equal(v.sum, 42);
    int64_t empty[2] = { 3, 0 }, s2[2] = { 0, 4 };
    const int64_t *st2[1] = { s2 };
    visit e = { 0 };
    mtk_foreach_strided(1, base, st2, empty, 2, sum_rows, &e);
    assert_int_equal(e.rows, 0);
    int64_t empty_outer[2] = { 0, 3 };
    mtk_foreach_strided(1, base, st2, empty_outer, 2, sum_rows, &e);
    assert_int_equal(e.rows, 0);
}

/* ------------------------------------------------------------- copy_ */

static mtk_tensor *from(mtk_ctx *ctx, mtk_dtype dt, void *data, const int64_t *shape, int32_t ndim,
                        const int64_t *stride)
{
    mtk_tensor *t = mtk_tensor_from_data(ctx, dt, shape, ndim, stride, data);
    assert_non_null(t);
    return t;
}

/* a = torch.arange(6.).reshape(2, 3); out = torch.empty(3, 2); out.copy_(a.t()) */
static void copy_follows_source_strides(void **state)
{
    mtk_ctx *ctx = *state;
    float src[6] = { 0, 1, 2, 3, 4, 5 }, dst[6] = { 0 };
    int64_t tshape[2] = { 3, 2 }, tstride[2] = { 1, 3 };
    mtk_tensor *s = from(ctx, MTK_FLOAT32, src, tshape, 2, tstride);
    mtk_tensor *d = from(ctx, MTK_FLOAT32, dst, tshape, 2, NULL);
    mtk_copy_strided(d, s);
    static const float want[6] = { 0, 3, 1, 4, 2, 5 };
    assert_memory_equal(dst, want, sizeof want);
}

/* out = torch.empty(2, 3, dtype=torch.int32); out.copy_(torch.tensor([1.7, -2.5, 300.])) */
static void copy_broadcasts_and_converts(void **state)
{
    mtk_ctx *ctx = *state;
    double src[3] = { 1.7, -2.5, 300.0 };
    int32_t dst[6] = { 0 };
    int64_t s1[1] = { 3 }, s2[2] = { 2, 3 };
    mtk_copy_strided(from(ctx, MTK_INT32, dst, s2, 2, NULL), from(ctx, MTK_FLOAT64, src, s1, 1, NULL));
    static const int32_t want[6] = { 1, -2, 300, 1, -2, 300 };
    assert_memory_equal(dst, want, sizeof want);
    /* ... and to uint8: -2.5 -> 254, 300 -> 44, as torch's .to(torch.uint8) */
    uint8_t u[3] = { 0 };
    mtk_copy_strided(from(ctx, MTK_UINT8, u, s1, 1, NULL), from(ctx, MTK_FLOAT64, src, s1, 1, NULL));
    assert_int_equal(u[0], 1);
    assert_int_equal(u[1], 254);
    assert_int_equal(u[2], 44);
}

/* copying into a strided destination writes only its elements */
static void copy_into_a_strided_view_leaves_the_gaps(void **state)
{
    mtk_ctx *ctx = *state;
    int16_t src[4] = { 1, 2, 3, 4 }, dst[8];
    for (int i = 0; i < 8; i++) dst[i] = -1;
    int64_t shape[1] = { 4 }, stride[1] = { 2 };
    mtk_copy_strided(from(ctx, MTK_INT16, dst, shape, 1, stride), from(ctx, MTK_INT16, src, shape, 1, NULL));
    static const int16_t want[8] = { 1, -1, 2, -1, 3, -1, 4, -1 };
    assert_memory_equal(dst, want, sizeof want);
}

/* float32 -> bfloat16 -> float32 through copies (bits as torch gives them) */
static void copy_converts_to_and_from_bfloat16(void **state)
{
    mtk_ctx *ctx = *state;
    float src[3] = { 1.0f, 3.14159274f, -65504.0f }, back[3];
    uint16_t mid[3];
    int64_t shape[1] = { 3 };
    mtk_copy_strided(from(ctx, MTK_BFLOAT16, mid, shape, 1, NULL), from(ctx, MTK_FLOAT32, src, shape, 1, NULL));
    assert_int_equal(mid[0], 0x3f80);
    assert_int_equal(mid[1], 0x4049); /* torch.tensor([3.14159274]).bfloat16().view(torch.int16) */
    assert_int_equal(mid[2], 0xc780);
    mtk_copy_strided(from(ctx, MTK_FLOAT32, back, shape, 1, NULL), from(ctx, MTK_BFLOAT16, mid, shape, 1, NULL));
    assert_true(back[0] == 1.0f);
    assert_true(back[1] == 3.140625f);
    assert_true(back[2] == -65536.0f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(broadcast_shapes_match_torch, setup_ctx, teardown_ctx),
        cmocka_unit_test_setup_teardown(broadcast_mismatch_uses_torch_words, setup_ctx, teardown_ctx),
        cmocka_unit_test_setup_teardown(broadcast_output_may_alias_an_input, setup_ctx, teardown_ctx),
        cmocka_unit_test_setup_teardown(broadcast_byte_strides_zero_the_broadcast_dims, setup_ctx, teardown_ctx),
        cmocka_unit_test(foreach_visits_every_element_once),
        cmocka_unit_test(foreach_handles_scalars_and_empty_shapes),
        cmocka_unit_test_setup_teardown(copy_follows_source_strides, setup_ctx, teardown_ctx),
        cmocka_unit_test_setup_teardown(copy_broadcasts_and_converts, setup_ctx, teardown_ctx),
        cmocka_unit_test_setup_teardown(copy_into_a_strided_view_leaves_the_gaps, setup_ctx, teardown_ctx),
        cmocka_unit_test_setup_teardown(copy_converts_to_and_from_bfloat16, setup_ctx, teardown_ctx),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
