"""State dicts for the round-trip tests: every safetensors dtype, empty and
0-dim tensors, special float values, and extreme integers."""
from pathlib import Path

import torch

CORPUS = Path(__file__).resolve().parent / "corpus"

# torch dtype -> safetensors name (the 15 dtypes mtk reads)
DTYPES = {
    torch.bool: "BOOL", torch.uint8: "U8", torch.int8: "I8", torch.int16: "I16", torch.uint16: "U16",
    torch.float16: "F16", torch.bfloat16: "BF16", torch.int32: "I32", torch.uint32: "U32",
    torch.float32: "F32", torch.float64: "F64", torch.int64: "I64", torch.uint64: "U64",
    torch.float8_e4m3fn: "F8_E4M3", torch.float8_e5m2: "F8_E5M2",
}
FLOATING = [torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.float8_e4m3fn, torch.float8_e5m2]
# torch dtype -> the name mtk_dtype_from_name knows
MTK_NAME = {torch.bool: "bool", torch.uint8: "uint8", torch.int8: "int8", torch.int16: "int16",
            torch.int32: "int32", torch.int64: "int64", torch.float16: "float16", torch.bfloat16: "bfloat16",
            torch.float32: "float32", torch.float64: "float64", torch.float8_e4m3fn: "float8_e4m3fn",
            torch.float8_e5m2: "float8_e5m2"}


def name_of(dtype):
    return str(dtype).removeprefix("torch.")


def raw(t):
    """The tensor's bytes, as a file holds them."""
    return bytes(t.reshape(-1).contiguous().view(torch.uint8).numpy()) if t.numel() else b""


def random_tensor(dtype, shape, gen):
    """Random values covering the dtype: every bit pattern for the small
    types (NaNs included), the full range for integers."""
    size = torch.empty(0, dtype=dtype).element_size()
    numel = 1
    for s in shape:
        numel *= s
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=gen).to(torch.bool)
    bits = torch.randint(0, 256, (numel * size,), dtype=torch.uint8, generator=gen)
    return bits.view(dtype).reshape(shape)


def all_dtypes_state_dict(seed=0):
    gen = torch.Generator().manual_seed(seed)
    sd = {}
    for i, dtype in enumerate(DTYPES):
        n = name_of(dtype)
        sd[f"{n}.matrix"] = random_tensor(dtype, (7, 5), gen)
        sd[f"{n}.scalar"] = random_tensor(dtype, (), gen)
        sd[f"{n}.empty"] = torch.zeros((0, 3), dtype=dtype)
    return sd


def same_values(got, want):
    """Bit-exact equality, except that NaN payloads are not compared (torch
    itself writes 0x7fc0 or 0xffff for a bfloat16 NaN, depending on the
    tensor's size: scalar or vectorized kernel).  Returns a list of
    mismatches (index, got, want), empty when equal."""
    got, want = got.reshape(-1), want.reshape(-1)
    if got.dtype != want.dtype or got.numel() != want.numel():
        return [("dtype/numel", got.dtype, want.dtype)]
    if want.is_floating_point():
        gnan, wnan = got.float().isnan(), want.float().isnan()
        if not torch.equal(gnan, wnan):
            return [("NaN positions", gnan.nonzero().tolist(), wnan.nonzero().tolist())]
        keep = (~wnan).nonzero().reshape(-1)
        got, want = got[keep], want[keep]
    if raw(got) == raw(want):
        return []
    return [(i, got[i].item(), want[i].item()) for i in range(want.numel()) if raw(got[i:i + 1]) != raw(want[i:i + 1])]
