"""Convolution values on cpu at sizes the random oracle never draws: its
tensors have a few elements per dim, so its float32 convolutions run on
the im2col path, while real feature maps (tens of positions per row) run
on the direct kernel (src/ops/conv_direct.c).  Random float32 conv1d/2d/3d
calls with 20-60 positions per dim -- strides 1-3, dilation, padding,
groups, bias, a channels-last or transposed input now and then -- must
equal torch's cpu result.

    MTK_CONV_VALUE_CASES=200 MTK_ORACLE_SEED=3 pytest tests/oracle/test_conv_values.py
"""

import math
import os
import random

import torch
import torch.nn.functional as F

import harness

CASES = int(os.environ.get("MTK_CONV_VALUE_CASES", "40"))


def _tensor(shape, fn, layout):
    """An expression for fn(arange) reshaped to `shape` (and the same tensor
    in torch), stored channels-last (2-D) or with its last two dims swapped
    in memory when `layout` says so."""
    n = math.prod(shape)
    base = "reshape(%s(arange(%d, dtype=torch.float32)), %s)" % (fn, n, list(shape))
    t = getattr(torch, fn)(torch.arange(n, dtype=torch.float32)).reshape(shape)
    if layout == "channels_last" and len(shape) == 4:
        return "contiguous(%s, memory_format=torch.channels_last)" % base, \
            t.contiguous(memory_format=torch.channels_last)
    if layout == "swapped":
        swapped = list(shape[:-2]) + [shape[-1], shape[-2]]
        m = math.prod(swapped)
        expr = "transpose(reshape(%s(arange(%d, dtype=torch.float32)), %s), -1, -2)" % (fn, m, swapped)
        return expr, getattr(torch, fn)(torch.arange(m, dtype=torch.float32)).reshape(swapped).transpose(-1, -2)
    return base, t


def _case(rng):
    """(expression, torch result) of one random valid float32 conv."""
    while True:
        s = rng.choice([1, 2, 2, 2, 3])
        groups = rng.choice([1, 1, 2])
        c_in = groups * rng.randint(1, 4)
        c_out = groups * rng.choice([8, 16, 8, 5])
        kernel = [rng.randint(1, 4) for _ in range(s)]
        size = [rng.randint(20, 60) if s < 3 else rng.randint(8, 20) for _ in range(s)]
        stride, dilation, padding = rng.randint(1, 3), rng.randint(1, 2), rng.randint(0, 2)
        if all((k - 1) * dilation + 1 <= n + 2 * padding for k, n in zip(kernel, size)):
            break
    batch = rng.randint(1, 2)
    layout = rng.choice(["contiguous", "contiguous", "channels_last", "swapped"])
    x_expr, x = _tensor([batch, c_in] + size, "sin", layout)
    w_expr, w = _tensor([c_out, c_in // groups] + kernel, "cos", "contiguous")
    bias = rng.random() < 0.5
    b_expr = "arange(%d, dtype=torch.float32)" % c_out if bias else "None"
    b = torch.arange(c_out, dtype=torch.float32) if bias else None
    expr = "conv%dd(%s, %s, %s, stride=%d, padding=%d, dilation=%d, groups=%d)" % (
        s, x_expr, w_expr, b_expr, stride, padding, dilation, groups)
    ref = getattr(F, "conv%dd" % s)(x, w, b, stride=stride, padding=padding, dilation=dilation, groups=groups)
    return expr, ref


def test_float32_conv_values_match_torch_at_feature_map_sizes():
    rng = random.Random(harness.seed())
    cases = [_case(rng) for _ in range(CASES)]
    answers = harness.run_batch([e for e, _ in cases], device="cpu", values=True)
    bad = []
    for (expr, ref), got in zip(cases, answers):
        if "values" not in got:
            bad.append("%s\n    mtk: %s" % (expr, harness.short(got)))
            continue
        values = torch.tensor(got["values"], dtype=torch.float64).reshape(ref.shape)
        if list(got["shape"]) != list(ref.shape) or not torch.allclose(values, ref.double(), rtol=1e-4, atol=1e-4):
            bad.append("%s\n    max |mtk - torch| = %g" % (expr, (values - ref.double()).abs().max()))
    assert not bad, "%d of %d convs differ from torch:\n  %s" % (len(bad), len(cases), "\n  ".join(bad[:5]))
