"""`mtk summary`: the built-in demo models, with and without an example
input, text and JSON, depth, dtype, and errors.  Counts, shapes and FLOPs
are torch 2.13's (nn.Sequential of the same layers, FlopCounterMode)."""
import json

import pytest
import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode


def torch_lazynet():
    with torch.device("meta"):
        return nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU(), nn.Flatten(), nn.LazyLinear(10))


def test_simplenet_text_with_input(mtk_summary):
    r = mtk_summary("simplenet", "--input", "1x10")
    assert r.returncode == 0, r.stderr
    assert "0 | 0    | Linear | 220    | [1, 10]  | [1, 20]   | 400" in r.stdout
    assert "241        Total params" in r.stdout
    assert "Output sizes: [1, 1]" in r.stdout


def test_simplenet_json_matches_torch(mtk_summary):
    r = mtk_summary("simplenet", "--input", "1,10", "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    with torch.device("meta"):
        ref = nn.Sequential(nn.Linear(10, 20), nn.ReLU(), nn.Linear(20, 1))
    with FlopCounterMode(display=False) as counter:
        out = ref(torch.empty(1, 10, device="meta"))
    assert doc["total_params"] == sum(p.numel() for p in ref.parameters()) == 241
    assert doc["trainable_params"] == 241 and doc["non_trainable_params"] == 0
    assert doc["uninitialized_params"] == 0
    assert doc["param_bytes"] == 241 * 4
    assert doc["flops"] == counter.get_total_flops() == 440
    assert doc["output_shapes"] == [list(out.shape)] == [[1, 1]]
    assert [m["name"] for m in doc["modules"]] == ["0", "1", "2"]
    assert [m["type"] for m in doc["modules"]] == ["Linear", "ReLU", "Linear"]
    assert [m["params"] for m in doc["modules"]] == [220, 0, 21]
    assert doc["modules"][0]["in_shapes"] == [[1, 10]] and doc["modules"][0]["out_shapes"] == [[1, 20]]


def test_lazynet_without_input_reports_uninitialized(mtk_summary):
    r = mtk_summary("lazynet")
    assert r.returncode == 0, r.stderr
    assert "224        Total params" in r.stdout
    assert "LazyLinear | ?" in r.stdout
    assert "2 lazy parameters in 1 module" in r.stdout and "--input SHAPE" in r.stdout
    doc = json.loads(mtk_summary("lazynet", "--json").stdout)
    ref = torch_lazynet()
    known = sum(p.numel() for p in ref.parameters() if not isinstance(p, nn.parameter.UninitializedParameter))
    assert doc["total_params"] == known == 224
    assert doc["uninitialized_params"] == 2
    assert doc["uninitialized_modules"] == ["3"]
    assert doc["flops"] is None and doc["output_shapes"] == []


def test_lazynet_with_input_counts_exactly(mtk_summary):
    doc = json.loads(mtk_summary("lazynet", "--input", "1x3x32x32", "--json").stdout)
    ref = torch_lazynet()
    with FlopCounterMode(display=False) as counter:
        out = ref(torch.empty(1, 3, 32, 32, device="meta"))
    assert doc["total_params"] == sum(p.numel() for p in ref.parameters()) == 72234
    assert doc["uninitialized_params"] == 0
    assert doc["output_shapes"] == [list(out.shape)] == [[1, 10]]
    assert doc["flops"] == counter.get_total_flops()
    assert doc["modules"][3]["type"] == "Linear" and doc["modules"][3]["params"] == 72010
    assert doc["modules"][2]["out_shapes"] == [[1, 7200]]


def test_dtype_changes_the_memory(mtk_summary):
    doc = json.loads(mtk_summary("simplenet", "--dtype", "bfloat16", "--input", "2x10", "--json").stdout)
    assert doc["param_bytes"] == 482 and doc["param_bytes_by_dtype"] == {"bfloat16": 482}
    assert doc["output_shapes"] == [[2, 1]]


def test_depth_zero_prints_the_models_own_row(mtk_summary):
    doc = json.loads(mtk_summary("simplenet", "--depth", "0", "--json").stdout)
    assert [(m["name"], m["type"], m["params"]) for m in doc["modules"]] == [("", "Sequential", 241)]
    assert doc["total_params"] == 241
    text = mtk_summary("simplenet", "--depth", "0", "--input", "1x10").stdout
    assert "0 | (root) | Sequential | 241    | [1, 10]  | [1, 1]    | 440" in text


def test_sizes_and_counts_have_the_one_style(mtk_summary):
    text = mtk_summary("lazynet", "--input", "1x3x32x32").stdout
    assert "282.2 KiB  Params memory (float32: 282.2 KiB in 72,234 params)" in text
    assert "72,234     Total params" in text


def test_float8_dtypes_are_accepted_as_convert_accepts_them(mtk_summary):
    for name, canonical in [("float8_e4m3fn", "float8_e4m3fn"), ("F8_E5M2", "float8_e5m2"), ("BF16", "bfloat16")]:
        r = mtk_summary("simplenet", "--dtype", name, "--json")
        assert r.returncode == 0, r.stderr
        doc = json.loads(r.stdout)
        size = 2 if canonical == "bfloat16" else 1
        assert doc["model"]["dtype"] == canonical
        assert doc["param_bytes"] == 241 * size and doc["param_bytes_by_dtype"] == {canonical: 241 * size}


def test_uncalled_container_rows_sum_their_children(mtk_summary):
    # model.layers is a ModuleList: it has no forward, its layers ran
    doc = json.loads(mtk_summary("llama-3.2-1b", "--input", "1x4", "--depth", "3", "--json").stdout)
    rows = {m["name"]: m for m in doc["modules"]}
    layers = [m for name, m in rows.items() if name.startswith("model.layers.") and name.count(".") == 2]
    assert len(layers) == 16
    assert rows["model.layers"]["flops"] == sum(m["flops"] for m in layers) > 0
    assert rows["model.layers"]["in_shapes"] == []
    text = mtk_summary("llama-3.2-1b", "--input", "1x4", "--depth", "2").stdout
    row = next(line for line in text.splitlines() if "| model.layers " in line)
    assert [c.strip() for c in row.split("|")][4:] == ["-", "-", f"{rows['model.layers']['flops']:,}"]


def test_collapsed_rows_say_their_figures_are_totals(mtk_summary):
    doc = json.loads(mtk_summary("llama-3.2-1b", "--input", "1x4", "--depth", "3", "--json").stdout)
    layer = next(m for m in doc["modules"] if m["name"] == "model.layers.0")
    text = mtk_summary("llama-3.2-1b", "--input", "1x4", "--depth", "3").stdout
    row = next(line for line in text.splitlines() if "16 \u00d7 LlamaDecoderLayer" in line)
    cells = [c.strip() for c in row.split("|")]
    assert cells[1] == "model.layers.0-15"
    assert cells[3] == f"{16 * layer['params']:,}" and cells[6] == f"{16 * layer['flops']:,}"
    assert cells[4] == str(layer["in_shapes"]) and cells[5] == str(layer["out_shapes"][0])  # each layer's
    assert ('"N \u00d7 Type" rows stand for N identical layers: Params and FLOPs are their total, '
            "In/Out sizes each layer's.") in text
    untraced = mtk_summary("llama-3.2-1b", "--depth", "3").stdout
    assert '"N \u00d7 Type" rows stand for N identical layers: Params is their total.' in untraced


def test_json_errors_have_the_one_shape(mtk_summary):
    r = mtk_summary("nosuchnet", "--json")
    assert r.returncode == 1 and r.stderr == "" and r.stdout.count("\n") == 1
    doc = json.loads(r.stdout)
    assert list(doc) == ["error"] and doc["error"]["code"] == "invalid_argument"
    assert doc["error"]["message"].startswith("unknown model 'nosuchnet'")


@pytest.mark.parametrize("args, status, message", [
    (["nosuchnet"], 1, "unknown model 'nosuchnet' (built-in models: simplenet, lazynet"),
    (["simplenet", "--input", "1x11"], 1, "linear"),
    (["simplenet", "--input", "1xa"], 2, "bad --input '1xa'"),
    (["simplenet", "--dtype", "int32"], 2,
     "--dtype 'int32' is not a floating-point dtype (float16, float32, float64, bfloat16, float8_e5m2, float8_e4m3fn)"),
    ([], 2, "no MODEL given"),
    (["simplenet", "--depth", "x"], 2, "--depth takes an integer"),
])
def test_errors(mtk_summary, args, status, message):
    r = mtk_summary(*args)
    assert r.returncode == status
    assert r.stderr.startswith("mtk: error: ") and message in r.stderr, r.stderr


def test_help_lists_the_built_in_models(mtk_summary):
    r = mtk_summary("--help")
    assert r.returncode == 0
    assert "simplenet" in r.stdout and "lazynet" in r.stdout and "--input SHAPE" in r.stdout
