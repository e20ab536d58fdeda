#!/usr/bin/env python3
"""Generates tests/unit/data/scalar_table.h: the expected results of
PyTorch's element conversions, used by tests/unit/test_scalar.c.

    python3 tests/unit/gen_scalar_table.py > tests/unit/data/scalar_table.h

Truth is `Tensor.to(dtype)` of torch (2.13.0, CPU) on this machine, with
one documented exception: float32 NaN -> bfloat16.  torch's vectorized
float32 -> bfloat16 kernel writes 0xFFFF for every NaN, while its scalar
conversion (c10::BFloat16, also used for float64 and float16 sources and
for Python scalars) writes the canonical quiet NaN 0x7FC0.  mtk follows the
scalar rule, so the table holds 0x7FC0 there.

The output is deterministic (fixed seed), so regenerating it gives the same
file unless torch's behaviour changed.
"""
import struct
import sys

import numpy as np
import torch

SEED = 20240611


def f32_from_bits(bits):
    return np.array(bits, dtype=np.uint32).view(np.float32)


def f32_bits(values):
    return np.array(values, dtype=np.float32).view(np.uint32)


def grid(dtype):
    """Every finite, non-negative value of a small float format, as float32."""
    n = 256 if torch.finfo(dtype).bits == 8 else 65536
    raw = torch.arange(n, dtype=torch.int32)
    raw = raw.to(torch.uint8) if n == 256 else raw.to(torch.int16)
    vals = raw.view(dtype).to(torch.float32).numpy()
    vals = vals[np.isfinite(vals) & (vals >= 0)]
    return np.unique(vals)


def inputs():
    rng = np.random.default_rng(SEED)
    bits = set()  # mirrored to the negative side at the end
    once = set()  # kept as they are
    # specials: zeros, infinities, NaNs with and without payloads, f32 subnormals
    bits.update([0x00000000, 0x7F800000, 0x7FC00000, 0x7F800001, 0x7FFFFFFF, 0x7F810000,
                 0x7FA00000, 0x7F802000, 0x7FBFFFFF, 0x00000001, 0x007FFFFF, 0x00400000,
                 0x00800000, 0x7F7FFFFF])
    # 500 (the brief's question), and overflow boundaries of each format
    edge = [500.0, 448.0, 464.0, 465.0, 470.0, 479.0, 480.0, 1e9, 57344.0, 61439.0, 61440.0,
            61441.0, 65504.0, 65519.0, 65520.0, 65536.0, 3.3895314e38, 3.4e38]
    bits.update(int(b) for b in f32_bits(edge))
    # for each small format: representable values, the midpoints between
    # neighbours (ties), and one float32 ulp either side of each midpoint;
    # every float8 value, a sample of the 16-bit formats
    for dtype, step in ((torch.float8_e4m3fn, 1), (torch.float8_e5m2, 1),
                        (torch.float16, 1201), (torch.bfloat16, 1103)):
        g = grid(dtype).astype(np.float64)
        mids = (g[:-1] + g[1:]) / 2
        if step == 1:
            picks, target = range(len(g) - 1), bits
        else:
            # subnormals, around the smallest normal, the largest values
            picks = set(range(0, len(g) - 1, step)) | set(range(0, 12))
            picks |= set(range(1018, 1030)) | set(range(len(g) - 12, len(g) - 1))
            target = once
        for i in sorted(picks):
            m = np.float32(mids[i])
            b = int(np.array([m]).view(np.uint32)[0])
            target.update([int(f32_bits([g[i]])[0]), b, b - 1 if b else 0, b + 1])
        top = min(g[-1] * (1.0 + 2.0 ** -4), 3.4e38)  # just past the largest finite
        bits.add(int(f32_bits([top])[0]))
        half_min = np.float32(g[1] / 2)  # half the smallest subnormal: ties to zero
        bits.update(int(x) for x in f32_bits([half_min, half_min * np.float32(1.0000001),
                                              half_min * np.float32(0.9999999)]))
    # bfloat16 ties: low 16 bits exactly 0x8000, with odd and even kept parts
    for hi in rng.integers(0, 0x10000, size=24):
        once.update([(int(hi) << 16) | 0x8000, (int(hi) << 16) | 0x7FFF, (int(hi) << 16) | 0x8001])
    # float16 ties: 13 dropped mantissa bits exactly 0x1000, normal range
    for e in range(113, 143, 2):
        s = int(rng.integers(0, 2)) << 31
        base = s | (e << 23) | (int(rng.integers(0, 1 << 10)) << 13)
        once.update([base | 0x1000, base | 0x0FFF, base | 0x1001])
    bits.update([b ^ 0x80000000 for b in bits])
    # a random sweep over the exponents that matter and over all patterns
    for e in rng.integers(95, 160, size=300):
        once.add((int(rng.integers(0, 2)) << 31) | (int(e) << 23) | int(rng.integers(0, 1 << 23)))
    once.update(int(x) for x in rng.integers(0, 1 << 32, size=100, dtype=np.uint64))
    return sorted(bits | once)


# torch's cpu conversion kernels are vectorized with a scalar loop for the
# tail, and the two disagree on some NaN payloads (e.g. float16 0xFFC1 ->
# float32 is 0xFFF82000 vectorized but 0x7FFFFFFF in the scalar tail).  The
# vectorized result is the one .to() gives for all but the last few
# elements, so each value is repeated REPEAT times and the first copy kept.
REPEAT = 64


def to_bits(values_f32, dtype):
    t = torch.from_numpy(np.repeat(values_f32, REPEAT)).to(dtype)[::REPEAT]
    view = torch.uint8 if t.element_size() == 1 else torch.int16
    return [int(x) & (0xFF if view == torch.uint8 else 0xFFFF) for x in t.view(view).tolist()]


def decode_bits(raw, dtype):
    """float32 bits of torch's dtype -> float32 conversion of each pattern."""
    raw = torch.tensor(raw, dtype=torch.int32).repeat_interleave(REPEAT)
    if torch.finfo(dtype).bits == 8:
        t = raw.to(torch.uint8).view(dtype)
    else:
        t = raw.to(torch.int16).view(dtype)
    t = t.to(torch.float32)[::REPEAT].contiguous()
    return [int(x) & 0xFFFFFFFF for x in t.view(torch.int32).tolist()]


def main():
    out = sys.stdout
    out.write("/* Generated by tests/unit/gen_scalar_table.py from torch %s; do not edit.\n"
              " * Expected results of PyTorch's float conversions (see the script). */\n"
              % torch.__version__)
    out.write("#ifndef MTK_TEST_SCALAR_TABLE_H\n#define MTK_TEST_SCALAR_TABLE_H\n\n"
              "#include <stdint.h>\n\n")

    bits = inputs()
    f = f32_from_bits(bits)
    f16 = to_bits(f, torch.float16)
    bf16 = to_bits(f, torch.bfloat16)
    e4 = to_bits(f, torch.float8_e4m3fn)
    e5 = to_bits(f, torch.float8_e5m2)
    nan = np.isnan(f)
    bf16 = [0x7FC0 if n else b for n, b in zip(nan, bf16)]  # see the docstring
    out.write("/* float32 bits -> float16, bfloat16, float8_e4m3fn, float8_e5m2 bits */\n"
              "typedef struct { uint32_t f32; uint16_t f16, bf16; uint8_t e4m3fn, e5m2; } f32_encode_row;\n")
    out.write("static const f32_encode_row f32_encode_table[%d] = {\n" % len(bits))
    for row in zip(bits, f16, bf16, e4, e5):
        out.write("    { 0x%08Xu, 0x%04X, 0x%04X, 0x%02X, 0x%02X },\n" % row)
    out.write("};\n\n")

    # decoding: all 256 float8 patterns; float16/bfloat16 every 64th pattern
    # with varying low bits, plus the special ones
    all8 = list(range(256))
    some16 = sorted(set([(i * 64 + (i * 7) % 64) & 0xFFFF for i in range(1024)] +
                        [0x0000, 0x8000, 0x0001, 0x8001, 0x03FF, 0x0400, 0x7BFF, 0x7C00, 0xFC00,
                         0x7C01, 0x7E00, 0x7FFF, 0xFFFF, 0x007F, 0x0080, 0x7F7F, 0x7F80, 0xFF80,
                         0x7F81, 0x7FC0, 0xFFC1]))
    for name, dtype, raw in (("e4m3fn", torch.float8_e4m3fn, all8),
                             ("e5m2", torch.float8_e5m2, all8),
                             ("f16", torch.float16, some16),
                             ("bf16", torch.bfloat16, some16)):
        dec = decode_bits(raw, dtype)
        out.write("/* %s bits -> float32 bits */\n" % name)
        out.write("static const uint32_t %s_decode_table[%d][2] = {\n" % (name, len(raw)))
        for r, d in zip(raw, dec):
            out.write("    { 0x%04Xu, 0x%08Xu },\n" % (r, d))
        out.write("};\n\n")

    # float -> integer: truncation toward zero, wrap, and x86's "integer
    # indefinite" for out-of-range values, as torch's .to() does on this cpu
    fvals = [0.0, -0.0, 0.4, 0.5, 0.9999, 1.0, 1.5, -0.4, -0.5, -0.9999, -1.0, -1.5, -2.5, 2.5,
             100.7, 127.0, 127.9, 128.0, 128.5, 200.0, 255.0, 255.9, 256.0, 257.3, 300.0,
             -127.0, -128.0, -128.9, -129.0, -200.0, -255.0, -256.0, -257.0, -300.0,
             32767.0, 32768.0, 40000.0, 65535.0, 65536.0, 70000.0, -32768.0, -32769.0,
             -40000.0, -70000.0, 2147483520.0, 2147483647.0, 2147483648.0, -2147483648.0,
             -2147483649.0, 3e9, -3e9, 3000000001.0, -3000000001.0, 4294967297.0,
             1099511627777.0, 9.2233720368547e18, 9.3e18, -9.2233720368547758e18, -9.3e18,
             1e20, -1e20, 1e300, -1e300, float("inf"), float("-inf"), float("nan"), 1e-300]
    targets = (torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64, torch.bool)
    cols = [torch.tensor(fvals, dtype=torch.float64).to(t).tolist() for t in targets]
    cols = [[int(v) for v in c] for c in cols]
    out.write("/* float64 value -> uint8, int8, int16, int32, int64, bool (torch .to()) */\n"
              "typedef struct { double value; uint8_t u8; int8_t i8; int16_t i16; int32_t i32;\n"
              "                 int64_t i64; uint8_t b; } float_to_int_row;\n")
    out.write("static const float_to_int_row float_to_int_table[%d] = {\n" % len(fvals))

    def c_double(v):
        if v != v:
            return "NAN"
        if v in (float("inf"), float("-inf")):
            return "INFINITY" if v > 0 else "-INFINITY"
        return repr(v)

    def c_i64(v):
        return "INT64_MIN" if v == -(1 << 63) else "INT64_C(%d)" % v

    for i, v in enumerate(fvals):
        out.write("    { %s, %d, %d, %d, %s, %s, %d },\n"
                  % (c_double(v), cols[0][i], cols[1][i], cols[2][i],
                     "INT32_MIN" if cols[3][i] == -(1 << 31) else str(cols[3][i]),
                     c_i64(cols[4][i]), cols[5][i]))
    out.write("};\n\n")

    # float32 -> integer must agree with float64 -> integer for these values
    with np.errstate(over="ignore"):
        f32vals = [v for v in fvals if v != v or abs(v) == float("inf") or
                   float(np.float32(v)) == v]
    f32cols = [torch.tensor(f32vals, dtype=torch.float32).to(t).tolist() for t in targets]
    f64cols = [torch.tensor(f32vals, dtype=torch.float64).to(t).tolist() for t in targets]
    assert f32cols == f64cols, "float32 and float64 sources disagree; the test assumes not"

    # int64 -> float32 rounds once (not through float64)
    ivals = [(1 << 60) + (1 << 36) + 1, (1 << 53) + 1, -(1 << 62) - (1 << 38) - 1,
             (1 << 24) + 1, (1 << 24) + 3, (1 << 63) - 1, -(1 << 63), 123456789, -987654321]
    fl = torch.tensor(ivals, dtype=torch.int64).to(torch.float32).view(torch.int32).tolist()
    out.write("/* int64 -> float32 bits */\n")
    out.write("static const struct { int64_t value; uint32_t f32; } int_to_f32_table[%d] = {\n"
              % len(ivals))
    for v, b in zip(ivals, fl):
        out.write("    { %s, 0x%08Xu },\n" % (c_i64(v) if v != -(1 << 63) else "INT64_MIN",
                                             b & 0xFFFFFFFF))
    out.write("};\n\n#endif\n")


if __name__ == "__main__":
    main()
