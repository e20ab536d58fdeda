"""Size arithmetic with a size-0 dim beside huge ones: the right answer or a
clear error, never a bogus size and never signed overflow.

Each expression reached a signed int64 overflow (undefined behaviour) in
mtk's shape, stride, offset or FLOPs arithmetic; found by
tests/oracle/ub_hunt.py under recoverable UBSan.  The sanitizer run of
the suite (make test-asan) fails on any UBSan report; here every answer is
also checked.  Where torch can build the inputs, its answer is the
expected one; elsewhere (torch refuses sizes whose strides pass int64)
mtk answers with an error naming the overflow.
"""
import json

import pytest

BIG = 2**62
MAX = 2**63 - 1

# expression -> the error's words, or the result's shape
ERRORS = [
    # storage offsets that leave int64 (torch's wrapped offset is negative)
    ("slice(f32[0,%d,2147483648,0,2], 1, -2)" % BIG, "does not fit in int64"),
    ("select(i8[0,3,%d,%d], 1, 2)" % (BIG + 3, BIG + 3), "does not fit in int64"),
    ("tensor_split(i32[%d,0,%d], 4, dim=-3)" % (BIG + 3, MAX), "does not fit in int64"),
    ("glu(bool[2147483648,0,%d,6,%d], -2)" % (3 * 2**61, MAX), "does not fit in int64"),
    # padded sizes (was: "negative dimension -9223372036854775806")
    ("pad(f32[0,5,2,2,2], [%d, 1])" % MAX, "does not fit in int64"),
    ("pad(f32[0,2,%d], [%d, %d], mode='replicate')" % (BIG, BIG, BIG), "does not fit in int64"),
    # convolution sizes (torch's meta kernel is Python: exact, then too big)
    ("conv1d(f32[1,1,10], f32[1,1,2], padding=%d)" % BIG, "does not fit in int64"),
    ("conv1d(bf16[0,6,4], bf16[9,2,4294967297], padding='same', dilation=(%d,), groups=3)" % -(2**63),
     "does not fit in int64"),
    # pooling: torch's checks on its wrapped int64 sizes
    ("max_pool1d(f32[1,1,10], %d, dilation=%d, padding=1)" % (BIG, BIG), "pad should be at most half"),
    ("max_pool2d(f32[1,1,10,10], %d, dilation=%d, padding=1)" % (BIG, BIG), "pad should be at most half"),
    # instance_norm's view(1, N * C, ...)
    ("instance_norm(f64[2147483648,4294967297,0,1], None, None, None, None, use_input_stats=True)",
     "does not fit in int64"),
]

RESULTS = [
    ("unsqueeze(f16[2147483648,0,1099511627776], 1)", [2147483648, 1, 0, 1099511627776]),
    ("expand(f32[0,%d,4], [1, 0, %d, 4])" % (BIG, BIG), [1, 0, BIG, 4]),
    ("empty_like(transpose(f32[0,%d,4], 0, 2))" % BIG, [4, BIG, 0]),
    ("matmul(f32[%d,0,%d], f32[%d,0])" % (BIG, BIG, BIG), [BIG, 0, 0]),
    ("dropout2d(f32[%d,0,4], 0.5, True)" % BIG, [BIG, 0, 4]),
    ("max_pool1d(movedim(f64[0,%d,2147483648], 2, 1), 2, dilation=(2,))" % (BIG + 3),
     [0, 2147483648, 2**61 + 1]),
    ("batch_norm(f32[4294967296,2,0,4294967296], None, None, training=True)", [4294967296, 2, 0, 4294967296]),
    ("interpolate(f64[1,0,%d,%d], scale_factor=(1.05, 0.5), mode='bicubic')" % (3 * 2**61, 3 * 2**61), None),
    ("ones_like(i32[0,1,2147483648,4294967297])", [0, 1, 2147483648, 4294967297]),
    ("prod(select(permute(bf16[1099511627776,0,%d,4294967297,3], -4, 2, 0, 3, 4), 4, -1), 1, True, dtype=f16)"
     % BIG, [0, 1, 1099511627776, 4294967297]),
]


def _eval(run, expr, *extra):
    proc = run("eval", "--json", *extra, expr)
    assert "runtime error" not in proc.stderr, proc.stderr
    assert proc.returncode in (0, 1), proc.stderr
    return proc


@pytest.mark.parametrize("expr,words", ERRORS)
def test_overflowing_size_is_a_clear_error(run, expr, words):
    proc = _eval(run, expr)
    assert proc.returncode == 1
    message = json.loads(proc.stdout)["error"]["message"]
    assert words in message, message


@pytest.mark.parametrize("expr,shape", RESULTS)
def test_huge_sizes_beside_a_zero_give_the_shape(run, expr, shape):
    proc = _eval(run, expr)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    value = json.loads(proc.stdout)
    if shape is not None:
        assert value["shape"] == shape
    assert value["storage_offset"] >= 0


@pytest.mark.parametrize("expr", [
    "mm(f32[4,0], f32[0,%d])" % 2**40,
    "bmm(i32[1,%d,0], i32[1,0,5])" % 2**40,
    "linear(f32[4294967297,2,0], f32[5,0], f32[5])",
    "conv1d(f32[0,4,%d], f32[1,4,%d])" % (2**41, 2**40),
])
def test_flops_of_empty_products_are_zero(run, expr):
    proc = _eval(run, expr, "--flops")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert json.loads(proc.stdout)["flops"] == 0


def test_instance_norm_on_cpu_with_no_channels_does_not_divide_by_zero(run):
    # was SIGFPE: the running stats averaged groups / channels with 0 channels
    proc = _eval(run, "instance_norm(f32[1,0,%d], None, None, None, None, use_input_stats=True)" % BIG,
                 "--device", "cpu")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["shape"] == [1, 0, BIG]

# cpu kernels planning loops over an empty input with huge sizes and
# strides (byte strides, element counts): ub_hunt.py --device cpu
CPU_EMPTY = [
    'F.batch_norm(f16[1,0], float16[4294967297], f16[0], narrow(half[4], 0, 1, 3), None, training=False)',
    'any(movedim(i64[0,9223372036854775807], 0, 0), [-1, -2], False)',
    'log_softmax(f16[0,1099511627776,1099511627776,1099511627776], dtype=torch.float32)',
    'max_pool2d(permute(i32[0,4611686018427387907,4,6917529027641081856], [0, 3, 1, 2]), [3, 3], [2, 3], padding=1, return_indices=True)',
    'max_pool3d(f64[0,6917529027641081856,4611686018427387907,4611686018427387904,4611686018427387904], (3, 2, 3), (2, 2, 3), padding=[0, 0, 1], dilation=(1, 1, 2), return_indices=True)',
    'min(transpose(permute(f16[0,4611686018427387907,2,4611686018427387904,4611686018427387907], 2, 4, -2, 0, 1), 1, 2), 4)',
    'mode(permute(f32[2147483648,0,6917529027641081856,4611686018427387904,9223372036854775807], [4, 1, -5, 3, 2]), -5, False)',
    'nanmedian(f16[0,2,5,4611686018427387904], -1)',
    'sum(i32[0,6917529027641081856])',
    "to(narrow(i32[0,2,4611686018427387907], 2, 1, 5), device='cpu', dtype=bf16)",
    'var(f16[0,4611686018427387904,6917529027641081856], [-1, 1])',
    'var(narrow(f64[3,4294967297,0,4611686018427387904], 3, 1, 3))',
    'zero_(select(permute(i32[0,6917529027641081856], [0, 1]), 1, 4611686018427387907))',
]


@pytest.mark.parametrize("expr", CPU_EMPTY)
def test_cpu_kernels_of_empty_inputs_with_huge_sizes_do_not_overflow(run, expr):
    _eval(run, expr, "--device", "cpu")
