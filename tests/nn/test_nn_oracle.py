"""The nn oracle: the same torch.nn layers built in mtk (through nn_probe) and
in torch 2.13, compared on parameter and buffer names, shapes and dtypes,
state-dict keys, parameter counts, repr, forward output shapes on meta,
FLOPs (torch.utils.flop_counter.FlopCounterMode) and default-init
statistics (mean/std/min/max over large layers, tolerances from the
sampling error)."""
import math

import pytest
import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

# SPEC | INPUTS (';'-separated, optional :dtype)
FORWARD_CASES = [
    ("Linear(10, 20)", "[2, 10]"),
    ("Linear(10, 20, bias=False)", "[3, 4, 10]"),
    ("Linear(7, 3)", "[7]"),
    ("LazyLinear(6)", "[4, 9]"),
    ("Bilinear(5, 6, 7)", "[3, 5];[3, 6]"),
    ("Bilinear(4, 3, 2, bias=False)", "[2, 5, 4];[2, 5, 3]"),
    ("Identity()", "[2, 3]"),
    ("Embedding(10, 4)", "[2, 5]:int64"),
    ("Embedding(10, 4, padding_idx=-1)", "[6]:int64"),
    ("LayerNorm(16)", "[2, 5, 16]"),
    ("LayerNorm([4, 5], elementwise_affine=False)", "[3, 4, 5]"),
    ("LayerNorm(8, eps=1e-6, bias=False)", "[2, 8]"),
    ("RMSNorm(16)", "[2, 16]"),
    ("RMSNorm([2, 3], eps=1e-6)", "[4, 2, 3]"),
    ("GroupNorm(2, 6)", "[3, 6, 5]"),
    ("GroupNorm(3, 6, affine=False)", "[2, 6, 4, 4]"),
    ("BatchNorm1d(4)", "[8, 4]"),
    ("BatchNorm1d(4, affine=False)", "[8, 4, 10]"),
    # momentum=None needs num_batches_tracked's value: torch fails on meta
    # (".item() cannot be called on meta tensors"), mtk just skips the update
    ("BatchNorm2d(3, momentum=None)", ""),
    ("BatchNorm2d(3, track_running_stats=False)", "[2, 3, 5, 5]"),
    ("BatchNorm3d(2)", "[2, 2, 3, 4, 5]"),
    ("LazyBatchNorm1d()", "[4, 7]"),
    ("LazyBatchNorm2d()", "[2, 5, 3, 3]"),
    ("LazyBatchNorm3d(affine=False)", "[2, 3, 2, 2, 2]"),
    ("Conv1d(4, 8, 3)", "[2, 4, 16]"),
    ("Conv1d(4, 8, 3, stride=2, padding=1, dilation=2, groups=2, bias=False)", "[2, 4, 16]"),
    ("Conv1d(4, 8, 3, padding=2, padding_mode='circular')", "[2, 4, 16]"),
    ("Conv2d(3, 8, 3)", "[1, 3, 32, 32]"),
    ("Conv2d(3, 6, (3, 5), stride=(2, 1), padding=(1, 2))", "[2, 3, 17, 19]"),
    ("Conv2d(4, 4, 3, groups=4, padding=1, padding_mode='reflect')", "[1, 4, 8, 8]"),
    ("Conv2d(3, 8, 3)", "[3, 32, 32]"),
    ("Conv3d(2, 4, 3, padding=1)", "[1, 2, 6, 6, 6]"),
    ("ConvTranspose1d(4, 6, 3, stride=2)", "[2, 4, 10]"),
    ("ConvTranspose2d(8, 4, 4, stride=2, padding=1, output_padding=1, groups=2)", "[1, 8, 7, 7]"),
    ("ConvTranspose3d(2, 3, 2, stride=2)", "[1, 2, 3, 3, 3]"),
    ("LazyConv1d(5, 3)", "[2, 3, 12]"),
    ("LazyConv2d(8, 3, stride=2)", "[1, 3, 32, 32]"),
    ("LazyConv2d(4, 3, groups=2)", "[1, 6, 8, 8]"),
    ("LazyConv3d(2, 2)", "[1, 1, 4, 4, 4]"),
    ("MaxPool1d(2)", "[2, 3, 9]"),
    ("MaxPool2d(2)", "[1, 3, 8, 8]"),
    ("MaxPool2d((2, 3), stride=1, padding=1)", "[1, 3, 8, 8]"),
    ("MaxPool2d(3, stride=2, ceil_mode=True)", "[1, 3, 8, 8]"),
    ("MaxPool3d(2)", "[1, 2, 4, 4, 4]"),
    ("AvgPool1d(3)", "[2, 3, 10]"),
    ("AvgPool2d(2)", "[1, 3, 8, 8]"),
    ("AvgPool2d(3, stride=2, padding=1, count_include_pad=False)", "[1, 3, 9, 9]"),
    ("AvgPool3d(2, stride=1)", "[1, 2, 4, 4, 4]"),
    ("AdaptiveAvgPool1d(4)", "[2, 3, 10]"),
    ("AdaptiveAvgPool2d((1, 1))", "[2, 3, 7, 7]"),
    ("AdaptiveAvgPool2d(3)", "[2, 3, 7, 5]"),
    ("AdaptiveAvgPool3d(2)", "[1, 2, 5, 5, 5]"),
    ("AdaptiveMaxPool2d(2)", "[1, 3, 6, 6]"),
    ("Flatten()", "[2, 3, 4, 5]"),
    ("Flatten(0, 2)", "[2, 3, 4, 5]"),
    ("Unflatten(1, (2, 6))", "[3, 12]"),
    ("Dropout()", "[4, 5]"),
    ("Dropout(0.2)", "[4, 5]"),
    ("ReLU()", "[2, 3]"),
    ("ReLU6()", "[2, 3]"),
    ("LeakyReLU(0.2)", "[2, 3]"),
    ("PReLU()", "[2, 3, 4]"),
    ("PReLU(3)", "[2, 3, 4]"),
    ("ELU()", "[2, 3]"),
    ("CELU(2.0)", "[2, 3]"),
    ("SELU()", "[2, 3]"),
    ("GELU()", "[2, 3]"),
    ("GELU(approximate='tanh')", "[2, 3]"),
    ("SiLU()", "[2, 3]"),
    ("Mish()", "[2, 3]"),
    ("Sigmoid()", "[2, 3]"),
    ("Tanh()", "[2, 3]"),
    ("Softplus(beta=2.0)", "[2, 3]"),
    ("Softsign()", "[2, 3]"),
    ("Hardswish()", "[2, 3]"),
    ("Hardsigmoid()", "[2, 3]"),
    ("Hardtanh(-2.0, 2.0)", "[2, 3]"),
    ("Hardshrink()", "[2, 3]"),
    ("Softshrink(0.3)", "[2, 3]"),
    ("Tanhshrink()", "[2, 3]"),
    ("LogSigmoid()", "[2, 3]"),
    ("Threshold(0.1, 20.0)", "[2, 3]"),
    ("RReLU()", "[2, 3]"),
    ("GLU()", "[2, 6]"),
    ("GLU(dim=0)", "[4, 3]"),
    ("Softmax(dim=1)", "[2, 3]"),
    ("Softmax()", "[2, 3, 4]"),
    ("Softmin(dim=-1)", "[2, 3]"),
    ("LogSoftmax(dim=0)", "[2, 3]"),
    ("Softmax2d()", "[2, 3, 4, 4]"),
    ("Sequential(Linear(10, 20), ReLU(), Linear(20, 1))", "[1, 10]"),
    ("Sequential(Conv2d(3, 8, 3), ReLU(), Flatten(), LazyLinear(10))", "[1, 3, 32, 32]"),
    ("Sequential()", "[2, 2]"),
    ("MultiheadAttention(16, 4)", "[5, 2, 16]"),
    ("MultiheadAttention(16, 4)", "[5, 2, 16];[7, 2, 16];[7, 2, 16]"),
    ("MultiheadAttention(16, 4, batch_first=True)", "[2, 5, 16]"),
    ("MultiheadAttention(16, 2)", "[5, 16]"),
    ("MultiheadAttention(8, 2, kdim=4, vdim=6)", "[5, 3, 8];[7, 3, 4];[7, 3, 6]"),
    ("MultiheadAttention(8, 2, bias=False, add_bias_kv=True, add_zero_attn=True)", "[5, 3, 8]"),
    ("TransformerEncoderLayer(64, 4, 256)", "[10, 2, 64]"),
    ("TransformerEncoderLayer(32, 4, 64, activation='gelu', batch_first=True, norm_first=True)", "[2, 7, 32]"),
    ("TransformerEncoderLayer(16, 2, 32, bias=False, dropout=0.0)", "[3, 16]"),
]

# Bilinear: torch's FlopCounterMode has no rule for aten._trilinear and
# counts 0; mtk computes it with mm/bmm and counts those.
FLOPS_DIFFER = {"Bilinear"}

# SPEC built on cpu with PyTorch's default init (torch.manual_seed(0)).
INIT_CASES = [
    "Linear(512, 256)",
    "Linear(2000, 3)",
    "Bilinear(64, 32, 16)",
    "Conv2d(32, 64, 3)",
    "Conv1d(16, 32, 5, groups=4)",
    "ConvTranspose2d(32, 16, 4)",
    "Conv3d(4, 8, 3)",
    "Embedding(1000, 64)",
    "Embedding(100, 16, padding_idx=3)",
    "LayerNorm(128)",
    "RMSNorm(64)",
    "GroupNorm(4, 32)",
    "BatchNorm2d(16)",
    "PReLU(8)",
    "MultiheadAttention(128, 8)",
    "MultiheadAttention(64, 4, kdim=32, vdim=48, add_bias_kv=True)",
    "TransformerEncoderLayer(64, 4, 128)",
]


def parse_inputs(text, device):
    tensors = []
    for part in filter(None, (p.strip() for p in text.split(";"))):
        dtype = torch.get_default_dtype()
        if ":" in part:
            part, name = part.split(":")
            dtype = getattr(torch, name.strip())
        tensors.append(torch.zeros(eval(part), dtype=dtype, device=device))
    return tensors


def shape_or_none(t):
    return None if isinstance(t, nn.parameter.UninitializedTensorMixin) else list(t.shape)


def dtype_name(t):
    return str(t.dtype).replace("torch.", "")


def describe(m):
    sd = m.state_dict()
    return {
        "type": type(m).__name__,
        "params": [[n, shape_or_none(p), dtype_name(p), p.requires_grad] for n, p in m.named_parameters()],
        "buffers": [[n, shape_or_none(b), dtype_name(b), n in sd] for n, b in m.named_buffers()],
        "state_dict": list(sd.keys()),
        "num_params": sum(p.numel() for p in m.parameters()
                          if not isinstance(p, nn.parameter.UninitializedTensorMixin)),
        "uninitialized": sum(isinstance(p, nn.parameter.UninitializedTensorMixin) for p in m.parameters()),
    }


def torch_forward_answer(spec, inputs):
    with torch.device("meta"):
        m = eval(spec, {}, vars(nn))
    answer = {"repr": repr(m)}
    if inputs:
        args = parse_inputs(inputs, "meta")
        if isinstance(m, nn.MultiheadAttention) and len(args) == 1:
            args = args * 3  # self-attention: mtk takes the one tensor
        with FlopCounterMode(display=False) as counter:
            out = m(*args)
        outs = out if isinstance(out, tuple) else (out,)
        answer["outputs"] = [list(t.shape) for t in outs if t is not None]
        answer["flops"] = counter.get_total_flops()
    answer.update(describe(m))
    return answer


@pytest.fixture(scope="module")
def forward_answers(probe):
    return probe(["%s | %s | meta" % case for case in FORWARD_CASES])


@pytest.mark.filterwarnings("ignore:Implicit dimension choice for softmax")
@pytest.mark.parametrize("index", range(len(FORWARD_CASES)), ids=[c[0] + " " + c[1] for c in FORWARD_CASES])
def test_layer_matches_torch_on_meta(forward_answers, index):
    spec, inputs = FORWARD_CASES[index]
    mtk = forward_answers[index]
    assert "error" not in mtk, mtk.get("error")
    ref = torch_forward_answer(spec, inputs)
    assert mtk["repr"] == ref["repr"]
    if inputs:
        assert mtk.get("outputs") is not None, mtk.get("forward_error")
        assert mtk["outputs"] == ref["outputs"]
        if not any(name in spec for name in FLOPS_DIFFER):
            assert mtk["flops"] == ref["flops"]
    for key in ("type", "params", "buffers", "state_dict", "num_params", "uninitialized"):
        assert mtk[key] == ref[key], key


def test_lazy_module_before_forward_is_uninitialized(probe):
    (mtk,) = probe(["Sequential(Conv2d(3, 8, 3), ReLU(), Flatten(), LazyLinear(10)) |  | meta"])
    with torch.device("meta"):
        ref = describe(nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU(), nn.Flatten(), nn.LazyLinear(10)))
    assert mtk["num_params"] == ref["num_params"] == 224
    assert mtk["uninitialized"] == ref["uninitialized"] == 2
    assert mtk["params"] == ref["params"]


# ------------------------------------------------------------------ init


def torch_stats(spec):
    torch.manual_seed(0)
    m = eval(spec, {}, vars(nn))

    def stats(named):
        out = {}
        for name, t in named:
            if not t.dtype.is_floating_point:
                continue
            x = t.detach().double().flatten()
            out[name] = [x.mean().item(), x.std(unbiased=False).item(), x.min().item(), x.max().item()]
        return out

    return stats(m.named_parameters()), stats(m.named_buffers()), {n: p.numel() for n, p in m.named_parameters()}


@pytest.fixture(scope="module")
def init_answers(probe):
    return probe(["%s |  | init:1" % spec for spec in INIT_CASES])


def close_stats(name, mine, ref, n):
    mean, std, lo, hi = mine
    rmean, rstd, rlo, rhi = ref
    if rstd == 0:  # a constant fill: exact
        assert (mean, std) == (rmean, 0.0), name
        return
    # the mean of n samples is within 6 standard errors; the spread within
    # 5% (+ 6 / sqrt(n) for small tensors); the extremes of large tensors
    # within 1.5 sigma (they are noisy for normal fills)
    assert abs(mean - rmean) <= 6 * rstd / math.sqrt(n) + 1e-7, (name, mine, ref)
    assert abs(std - rstd) <= (0.05 + 6 / math.sqrt(n)) * rstd, (name, mine, ref)
    if n >= 10000:
        assert abs(lo - rlo) <= 1.5 * rstd and abs(hi - rhi) <= 1.5 * rstd, (name, mine, ref)


@pytest.mark.parametrize("index", range(len(INIT_CASES)), ids=INIT_CASES)
def test_default_init_has_torch_distribution(init_answers, index):
    spec = INIT_CASES[index]
    mine = init_answers[index]
    assert "error" not in mine, mine.get("error")
    params, buffers, sizes = torch_stats(spec)
    assert set(mine["stats"]) == set(params)
    for name, ref in params.items():
        close_stats(name, mine["stats"][name], ref, sizes[name])
    for name, ref in buffers.items():
        close_stats(name, mine["buffer_stats"][name], ref, 1_000_000)


def test_init_is_deterministic_per_seed(probe):
    a, b, c = probe(["Linear(64, 32) |  | init:5", "Linear(64, 32) |  | init:5", "Linear(64, 32) |  | init:6"])
    assert a["stats"] == b["stats"]
    assert a["stats"] != c["stats"]
