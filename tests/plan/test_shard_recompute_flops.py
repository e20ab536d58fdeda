"""The FLOPs recompute adds to a training step in mtk shard's cost model,
against torch's FlopCounterMode on transformers' models
(tests/plan/torch_recompute.py, cached in torch_recompute_cache.json keyed
by its source and the case).

mtk takes them from the traced graph: the nodes the memory replay's
checkpoints rerun (each decoder layer under --recompute full, each
attention core under selective), each node's own FLOPs.  torch's truth is
the step's FLOPs with the checkpoints less those without: selective reruns
the attention core's sdpa (it saves its output and logsumexp, so the
recompute runs it); full reruns each layer's forward up to its last matmul,
which torch's early stop skips (down_proj saves only its input, packed
before its kernel runs)."""
import json
import os

import pytest

import shard_cases

HERE = os.path.dirname(os.path.abspath(__file__))
CACHE = os.path.join(HERE, "torch_recompute_cache.json")
_cache = shard_cases.load_cache(CACHE)

BASE = dict(hidden_size=64, intermediate_size=90, num_hidden_layers=2, num_attention_heads=8,
            num_key_value_heads=2, vocab_size=136, tie_word_embeddings=False)
CASES = {
    "llama-gqa": dict(config=dict(BASE, model_type="llama", architectures=["LlamaForCausalLM"]), batch=2, seq=32),
    "qwen2": dict(config=dict(BASE, model_type="qwen2", architectures=["Qwen2ForCausalLM"], num_key_value_heads=8),
                  batch=3, seq=24),
    "llama-4-layers": dict(config=dict(BASE, model_type="llama", architectures=["LlamaForCausalLM"],
                                       num_hidden_layers=4), batch=2, seq=16),
}


def torch_flops(name):
    return shard_cases.measured(CASES[name], _cache, "torch_recompute.py", CACHE)


def mtk_plan(run, tmp_path, name, recompute, *args):
    case = CASES[name]
    d = tmp_path / name
    d.mkdir(exist_ok=True)
    (d / "config.json").write_text(json.dumps(case["config"]))
    r = run("shard", str(d), "--input", "%dx%d" % (case["batch"], case["seq"]), "--dtype", "float32",
            "--device-kind", "cpu", "--recompute", recompute, *args, "--json", timeout=120)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


@pytest.mark.parametrize("name", ["llama-gqa", "qwen2"])
def test_selective_recompute_reruns_the_attention_cores_forward(run, tmp_path, name):
    want = torch_flops(name)
    got = mtk_plan(run, tmp_path, name, "selective")["recompute_flops"]
    assert want["attention_forward"] > 0
    assert got == want["attention_forward"] == want["step"]["selective"] - want["step"]["none"]


@pytest.mark.parametrize("name", ["llama-gqa", "qwen2"])
def test_full_recompute_reruns_each_layer_up_to_its_last_matmul(run, tmp_path, name):
    want = torch_flops(name)
    case = CASES[name]
    c = case["config"]
    got = mtk_plan(run, tmp_path, name, "full")["recompute_flops"]
    assert got == want["step"]["full"] - want["step"]["none"]
    # what torch's early stop leaves out: each layer's down_proj
    down_proj = 2 * case["batch"] * case["seq"] * c["intermediate_size"] * c["hidden_size"]
    assert want["layers_forward"] - got == c["num_hidden_layers"] * down_proj


def test_no_recompute_and_inference_recompute_nothing(run, tmp_path):
    assert mtk_plan(run, tmp_path, "llama-gqa", "none")["recompute_flops"] == 0
    plan = mtk_plan(run, tmp_path, "llama-gqa", "full", "--mode", "inference")
    assert plan["recompute_flops"] == 0 and plan["stages"][0]["recompute_flops"] == 0


@pytest.mark.parametrize("recompute", ["selective", "full"])
def test_recompute_flops_follow_the_stages_micro_batches_and_replicas(run, tmp_path, recompute):
    want = torch_flops("llama-4-layers")
    step = want["step"][recompute] - want["step"]["none"]
    plan = mtk_plan(run, tmp_path, "llama-4-layers", recompute, "--pp", "2", "--dp", "2", "--global-batch", "12")
    assert plan["micro_batches"] == 3
    stages = plan["stages"]
    assert [s["layers"] for s in stages] == [[0, 2], [2, 4]]
    # two layers a stage, each rerunning the same
    assert stages[0]["recompute_flops"] == stages[1]["recompute_flops"] == step / 2
    assert plan["recompute_flops"] == step * 3 * 2


def test_estimate_charges_the_recomputed_flops(run, tmp_path):
    gpu = ["--gpu", "h100-80gb", "--efficiency", "0.5"]
    none = mtk_plan(run, tmp_path, "llama-gqa", "none", *gpu)["estimate"]
    for recompute in ("selective", "full"):
        plan = mtk_plan(run, tmp_path, "llama-gqa", recompute, *gpu)
        e = plan["estimate"]
        assert e["recompute_flops"] == plan["recompute_flops"] > 0
        extra = e["compute_seconds"] - none["compute_seconds"]
        assert extra == pytest.approx(plan["recompute_flops"] / (989e12 * 0.5), rel=1e-9)
        assert e["mfu"] < none["mfu"]  # recompute is not model FLOPs
