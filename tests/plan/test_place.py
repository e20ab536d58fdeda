"""mtk place against transformers and accelerate: the device map covers every
parameter and buffer name of transformers' model (built on meta from the same
config) exactly once, keeps _no_split_modules whole and tied parameters on one
device, keeps every device under its budget, and uses accelerate's key format;
plus the command's errors."""
import json
import re
import tempfile
from pathlib import Path

import pytest

import hf_oracle  # noqa: E402 (tests/models on sys.path via conftest.py)

CORPUS = Path(__file__).resolve().parents[1] / "models" / "corpus"
MiB = 1 << 20

# model, the share of its weights each of two GPUs gets, input
CASES = [
    ("qwen3-0.6b", 0.35, "1x256"),      # tied lm_head, decoder layers
    ("gpt2", 0.6, "1x128"),             # tied lm_head, GPT2Block, Conv1D
    ("bert-base-uncased", 0.4, "2x128"),  # BertEmbeddings and BertLayer whole
    ("t5-base", 0.3, "1x64"),           # shared embedding tied three ways, T5Block
    ("gemma-2b", 0.45, "1x128"),        # a tied 256k vocabulary
    ("mixtral-8x7b", 0.3, "1x512"),     # MoE decoder layers
    ("phi-3-mini", 0.4, "1x256"),
]


@pytest.fixture(scope="module")
def hf_models():
    cache = {}

    def get(name):
        if name not in cache:
            cfg = json.loads((CORPUS / f"{name}.json").read_text())
            with tempfile.TemporaryDirectory() as d:
                cache[name] = hf_oracle.hf_model(hf_oracle.hf_config(cfg, d))
        return cache[name]

    return get


def weights_bytes(model):
    seen, total = set(), 0
    for t in list(model.parameters()) + list(model.buffers()):
        if id(t) not in seen:
            seen.add(id(t))
            total += t.numel() * t.element_size()
    return total


def place(run, *args):
    r = run("place", *args, "--json")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def covering(device_map, name):
    return [k for k in device_map if k == "" or name == k or name.startswith(k + ".")]


def all_names(model):
    names = set(model.state_dict().keys())
    names |= {n for n, _ in model.named_buffers()}   # non-persistent ones too
    names |= {n for n, _ in model.named_parameters(remove_duplicate=False)}
    return names


def budgets(model, share):
    w = weights_bytes(model)
    gpu = max(int(w * share), 64 * MiB)
    return f"0={gpu},1={gpu},cpu={4 * w},disk", {0: gpu, 1: gpu, "cpu": 4 * w}


@pytest.mark.parametrize("name,share,shape", CASES, ids=[c[0] for c in CASES])
def test_place_map_is_usable_by_transformers(run, hf_models, name, share, shape):
    model = hf_models(name)
    spec, _ = budgets(model, share)
    plan = place(run, name, "--max-memory", spec, "--input", shape, "--margin", "16MiB")
    dm = plan["device_map"]
    assert len(set(dm.values())) >= 2, dm  # the budgets force a split
    # every parameter and buffer name is covered by exactly one key
    for n in all_names(model):
        assert len(covering(dm, n)) == 1, (n, covering(dm, n))
    # every key names a module, parameter or buffer of transformers' model
    modules = dict(model.named_modules())
    tensors = set(all_names(model))
    for k in dm:
        assert k in modules or k in tensors, k
    # no unit of _no_split_modules is split
    classes = set(model._no_split_modules or [])
    assert classes <= set(plan["no_split_modules"]) | {"None"}
    for mname, mod in modules.items():
        if type(mod).__name__ in set(plan["no_split_modules"]):
            inside = [k for k in dm if k.startswith(mname + ".")]
            assert not inside, (mname, inside)
    # tied parameters on one device
    from accelerate.utils import find_tied_parameters, check_device_map
    for group in find_tied_parameters(model):
        devices = {dm[covering(dm, p)[0]] for p in group}
        assert len(devices) == 1, (group, devices)
    check_device_map(model, dm)  # accelerate's own check: every parameter mapped
    # no device over its budget, weights add up
    for d in plan["devices"]:
        if d["budget_bytes"] is not None:
            assert d["peak_bytes"] <= d["budget_bytes"], d
    assert sum(d["weights_bytes"] for d in plan["devices"]) == plan["weights_bytes"] == weights_bytes(model)
    assert plan["offloaded_bytes"] == sum(d["weights_bytes"] for d in plan["devices"]
                                          if d["device"] in ("cpu", "disk"))


def key_pattern(k):
    return re.sub(r"\.\d+(?=\.|$)", ".N", k)


@pytest.mark.parametrize("name,share,shape", CASES[:4], ids=[c[0] for c in CASES[:4]])
def test_place_keys_look_like_accelerates(run, hf_models, name, share, shape):
    from accelerate import infer_auto_device_map
    model = hf_models(name)
    spec, max_memory = budgets(model, share)
    plan = place(run, name, "--max-memory", spec, "--input", shape, "--margin", "0")
    ours = plan["device_map"]
    theirs = infer_auto_device_map(model, max_memory=max_memory, no_split_module_classes=plan["no_split_modules"])
    # the numbered units are keyed alike (model.layers.N, transformer.h.N, ...)
    numbered = {key_pattern(k) for k in theirs if ".N" in key_pattern(k)}
    assert numbered and numbered == {key_pattern(k) for k in ours if ".N" in key_pattern(k)}, (theirs, ours)
    # GPUs as integers, the rest as strings, as accelerate writes them
    assert {type(v) for v in ours.values()} <= {int, str}
    assert all(v in ("cpu", "disk") for v in ours.values() if isinstance(v, str))


def test_place_counts_what_runs_where(run):
    """accelerate puts as many layers on a GPU as their weights allow; mtk
    keeps room for the KV cache, activations and logits, so a longer
    generation moves layers off the GPU."""
    spec = "0=2GiB,cpu=64GiB"
    def on_gpu(*extra):
        plan = place(run, "qwen3-0.6b", "--max-memory", spec, "--margin", "0", *extra)
        dm = plan["device_map"]
        return sum(1 for i in range(28) if dm[covering(dm, f"model.layers.{i}.mlp.up_proj.weight")[0]] == 0), plan
    short, _ = on_gpu("--input", "1x16")
    long, plan = on_gpu("--input", "4x1024", "--mode", "generate", "--new-tokens", "1024")
    assert short == 28 and long < short, (short, long)
    assert plan["devices"][0]["peak_bytes"] <= plan["devices"][0]["budget_bytes"]


def test_place_whole_model_on_one_gpu_is_the_root_key(run):
    plan = place(run, "gpt2", "--max-memory", "0=8GiB", "--input", "1x128")
    assert plan["device_map"] == {"": 0}
    assert plan["offloaded_bytes"] == 0


def test_place_text_has_a_table_per_device(run):
    r = run("place", "qwen3-0.6b", "--max-memory", "0=700MiB,cpu=8GiB", "--input", "1x128", "--margin", "0")
    assert r.returncode == 0, r.stderr
    assert "device 0" in r.stdout and "device cpu" in r.stdout and "model.layers." in r.stdout


@pytest.mark.parametrize("spec,bad", [
    ("gpu0=80GiB", "gpu0"),
    ("0=80XB", "80XB"),
    ("0=24GiB,,cpu=8GiB", "no device"),
    ("0=24GiB,0=8GiB", "twice"),
    ("cpu", "needs a size"),
])
def test_place_malformed_max_memory_names_the_bad_part(run, spec, bad):
    r = run("place", "gpt2", "--max-memory", spec, "--input", "1x8")
    assert r.returncode == 2
    assert bad in r.stderr, r.stderr


def test_place_model_that_does_not_fit_fails_naming_the_numbers(run):
    r = run("place", "llama-3.1-8b", "--max-memory", "0=4GiB,cpu=4GiB", "--input", "1x128")
    assert r.returncode == 1
    assert "does not fit" in r.stderr and "bytes" in r.stderr and "disk" in r.stderr


def test_place_disk_takes_what_does_not_fit(run):
    plan = place(run, "llama-3.2-1b", "--max-memory", "0=1GiB,cpu=512MiB,disk", "--input", "1x64", "--margin", "0")
    assert "disk" in plan["device_map"].values()
    assert plan["devices"][-1]["device"] == "disk" and plan["devices"][-1]["weights_bytes"] > 0


def test_place_margin_over_budget_is_an_error(run):
    r = run("place", "gpt2", "--max-memory", "0=100MiB", "--input", "1x8", "--margin", "200MiB")
    assert r.returncode == 1 and "margin" in r.stderr


def test_place_requires_max_memory_and_input(run):
    assert run("place", "gpt2", "--input", "1x8").returncode == 2
    assert run("place", "gpt2", "--max-memory", "0=1GiB").returncode == 2
    assert run("place", "--help").returncode == 0


def test_place_map_charges_accelerates_map(run, hf_models, tmp_path):
    """accelerate fills GPU 0 with weights up to its budget; charged with what
    runs there (2x512 logits of a 152k vocabulary), it is over; mtk's own
    map for the same budget is not."""
    from accelerate import infer_auto_device_map
    model = hf_models("qwen3-0.6b")
    max_memory = {0: 900 * MiB, "cpu": 8 << 30}
    theirs = infer_auto_device_map(model, max_memory=max_memory, no_split_module_classes=["Qwen3DecoderLayer"])
    path = tmp_path / "map.json"
    path.write_text(json.dumps(theirs))
    common = ["--max-memory", "0=900MiB,cpu=8GiB", "--input", "2x512", "--margin", "0"]
    charged = place(run, "qwen3-0.6b", *common, "--map", str(path))
    gpu = charged["devices"][0]
    assert gpu["device"] == 0 and gpu["peak_bytes"] > gpu["budget_bytes"]
    ours = place(run, "qwen3-0.6b", *common)
    assert ours["devices"][0]["peak_bytes"] <= ours["devices"][0]["budget_bytes"]
    # mtk's own map charged through --map gives the same peaks
    path.write_text(json.dumps(ours["device_map"]))
    again = place(run, "qwen3-0.6b", *common, "--map", str(path))
    assert [d["peak_bytes"] for d in again["devices"]] == [d["peak_bytes"] for d in ours["devices"]]


@pytest.mark.parametrize("mapping,message", [
    ({"": 0, "lm_head": 0}, "covers what another key covers"),
    ({"model.nothing": 0}, "names no module"),
    ({"model": 0}, "does not place 'lm_head.weight'"),
    ({"": 3}, "does not name"),
])
def test_place_map_errors(run, tmp_path, mapping, message):
    path = tmp_path / "map.json"
    path.write_text(json.dumps(mapping))
    r = run("place", "qwen3-0.6b", "--max-memory", "0=8GiB", "--input", "1x8", "--map", str(path))
    assert r.returncode == 1
    assert message in r.stderr, r.stderr


def test_place_balanced_spreads_what_sequential_keeps_on_one_gpu(run):
    common = ["--max-memory", "0=80GiB,1=80GiB", "--input", "1x128"]
    sequential = place(run, "llama-3.1-8b", *common, "--strategy", "sequential")
    balanced = place(run, "llama-3.1-8b", *common)
    assert sequential["device_map"] == {"": 0}
    assert set(balanced["device_map"].values()) == {0, 1}
    w0, w1 = (d["weights_bytes"] for d in balanced["devices"])
    assert abs(w0 - w1) < 0.25 * (w0 + w1)
