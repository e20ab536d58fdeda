"""The ops of transformers' grouped_mm experts that mtk added for them,
against torch 2.13 on the cpu: _grouped_mm (rows sorted by group, one
matrix per group, int32 cumulative offsets) and histc (the per-expert
counts).  Each expression runs in torch and through `mtk eval --device cpu
--json --values`; shapes, dtypes and values must agree (bfloat16 within
its rounding), and meta gives the same shape."""
import json

import pytest
import torch

# sizes whose strides are multiples of 16 bytes (torch's cpu kernel needs it)
A = "torch.arange(%d.).reshape(%d, %d).remainder(7.) - 3"
GROUPED = [
    # an empty group, the last group ending before the rows do (those rows are torch's garbage: cut off)
    ("torch._grouped_mm(%s, (torch.arange(96.).reshape(3, 8, 4).remainder(5.) - 2), "
     "offs=torch.arange(2, 8, 2).to(torch.int32).clamp(max=5))" % (A % (48, 6, 8)), 5),
    # the weights transposed as transformers passes output-major experts
    ("torch._grouped_mm(%s, (torch.arange(128.).reshape(4, 4, 8).remainder(3.) - 1).transpose(1, 2), "
     "offs=torch.arange(3, 15, 3).to(torch.int32))" % (A % (96, 12, 8)), 12),
    ("torch._grouped_mm((%s).to(torch.bfloat16), (torch.arange(256.).reshape(2, 8, 16).remainder(4.) / 4)"
     ".to(torch.bfloat16), offs=torch.arange(4, 12, 4).to(torch.int32))" % (A % (64, 8, 8)), 8),
]
HISTC = [
    "torch.histc(torch.arange(20.).remainder(4.5), bins=5, min=0, max=4)",
    "torch.histc(torch.arange(12.).remainder(5.) - 1, bins=3)",          # min == max: the data's range
    "torch.histc(torch.arange(9.).reshape(3, 3), bins=4, min=2, max=6)",  # outside ignored, max in the last bin
]


def mtk_eval(run, expr, device="cpu"):
    args = ["eval", "--device", device, "--json"] + (["--values"] if device == "cpu" else []) + [expr]
    r = run(*args)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


@pytest.mark.parametrize("expr,rows", GROUPED)
def test_grouped_mm_matches_torch(run, expr, rows):
    want = eval(expr, {"torch": torch})
    got = mtk_eval(run, expr)
    assert got["shape"] == list(want.shape) and got["dtype"] == str(want.dtype).replace("torch.", "")
    values = torch.tensor(got["values"], dtype=torch.float64).reshape(want.shape)
    tol = 1e-2 if want.dtype == torch.bfloat16 else 1e-5
    torch.testing.assert_close(values[:rows], want.double()[:rows], rtol=tol, atol=tol)
    assert mtk_eval(run, expr, "meta")["shape"] == list(want.shape)


@pytest.mark.parametrize("expr", HISTC)
def test_histc_matches_torch(run, expr):
    want = eval(expr, {"torch": torch})
    got = mtk_eval(run, expr)
    assert got["shape"] == list(want.shape) and got["dtype"] == "float32"
    assert got["values"] == want.tolist()


def test_grouped_mm_refuses_int64_offsets_as_torch(run):
    r = run("eval", "--device", "cpu", "torch._grouped_mm(f32[4, 8], f32[2, 8, 4], offs=torch.arange(2, 6, 2))")
    assert r.returncode != 0 and "Offsets have to be int32" in r.stderr
    with pytest.raises(RuntimeError, match="Offsets have to be int32"):
        torch._grouped_mm(torch.zeros(4, 8), torch.zeros(2, 8, 4), offs=torch.arange(2, 6, 2))
