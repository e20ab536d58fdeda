"""mtk shard's per-rank memory under data parallelism against torch's
memory trackers (tests/plan/torch_fsdp.py, the one oracle of FSDP memory,
cached in torch_fsdp_cache.json keyed by its source and the case).

world > 1 is FSDP2 (fully_shard per decoder layer and the root) measured
by FSDPMemTracker: float32 training, bfloat16 (mtk: 16-bit weights and
gradients with a float32 master copy and moments; torch: FSDP2's mixed
precision over float32 shards, the same 16 bytes a parameter), full
activation checkpointing, selective recompute (the attention core) and
forward-only inference, at 2, 3 and 4 layers, on llama's shape (a layer
2x the root's parameters) and a wider qwen2 (3.3x).
world 1 is one process without FSDP, measured by MemTracker: where
selective recompute's saving shows alone.

mtk replays the traced step in each mode (gradient checkpointing of the
layers under --recompute full, of the attention cores under selective,
the forward under no_grad for inference) and lays FSDP2's gathers over
it: unsharded parameters, all-gather outputs (each kept until the next
group's copy-out), backward prefetch, the copy-outs of each layer's
pre-forward and pre-backward hooks, float32 reduce-scatters under mixed
precision."""
import hashlib
import json
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ORACLE = os.path.join(HERE, "torch_fsdp.py")
CACHE = os.path.join(HERE, "torch_fsdp_cache.json")
BASE = dict(hidden_size=64, intermediate_size=90, num_hidden_layers=2, num_attention_heads=8,
            num_key_value_heads=8, vocab_size=136, tie_word_embeddings=False)
LLAMA = dict(BASE, model_type="llama", architectures=["LlamaForCausalLM"])
QWEN2 = dict(BASE, model_type="qwen2", architectures=["Qwen2ForCausalLM"], vocab_size=130)
LLAMA3 = dict(LLAMA, num_hidden_layers=3)
LLAMA4 = dict(LLAMA, num_hidden_layers=4)
# a wider qwen2: a layer 3.3x the root's parameters (llama's above: 2x)
WIDE = dict(QWEN2, hidden_size=96, intermediate_size=200, num_attention_heads=6, num_key_value_heads=2)
WIDE3 = dict(WIDE, num_hidden_layers=3)
WIDE4 = dict(WIDE, num_hidden_layers=4)


def case(config, world, batch, seq, mode="training", recompute="none", dtype="float32"):
    return dict(config=config, world=world, batch=batch, seq=seq, mode=mode, recompute=recompute, dtype=dtype)


CASES = [
    # float32 training
    pytest.param(case(LLAMA, 4, 2, 16), id="llama-w4"),
    pytest.param(case(QWEN2, 8, 1, 12), id="qwen2-w8"),
    pytest.param(case(QWEN2, 2, 2, 24), id="qwen2-w2"),
    pytest.param(case(LLAMA3, 2, 4, 8), id="llama3-w2"),
    pytest.param(case(WIDE3, 2, 2, 16), id="wide3-w2"),
    pytest.param(case(WIDE4, 4, 2, 16), id="wide4-w4"),
    # FSDP2's mixed precision
    pytest.param(case(QWEN2, 2, 2, 24, dtype="bfloat16"), id="qwen2-w2-bf16"),
    # the peak is layer 0's pre-backward: its all-gather output and the
    # unsharded copy made from it, with layer 1's float32 reduce-scatter
    # input still held
    pytest.param(case(LLAMA, 4, 2, 16, dtype="bfloat16"), id="llama-w4-bf16"),
    pytest.param(case(WIDE3, 2, 2, 16, dtype="bfloat16"), id="wide3-w2-bf16"),
    pytest.param(case(WIDE4, 4, 2, 16, dtype="bfloat16"), id="wide4-w4-bf16"),
    # gradient checkpointing of each layer
    pytest.param(case(LLAMA, 4, 2, 16, recompute="full"), id="llama-w4-full"),
    pytest.param(case(QWEN2, 2, 2, 24, recompute="full"), id="qwen2-w2-full"),
    pytest.param(case(LLAMA3, 2, 4, 8, recompute="full"), id="llama3-w2-full"),
    pytest.param(case(QWEN2, 2, 2, 24, recompute="full", dtype="bfloat16"), id="qwen2-w2-full-bf16"),
    # selective recompute: the attention cores
    pytest.param(case(LLAMA4, 4, 2, 16, recompute="selective"), id="llama4-w4-selective"),
    pytest.param(case(LLAMA, 1, 4, 128), id="llama-w1"),
    pytest.param(case(LLAMA, 1, 4, 128, recompute="selective"), id="llama-w1-selective"),
    # forward only
    pytest.param(case(LLAMA, 4, 2, 16, mode="inference"), id="llama-w4-inference"),
    pytest.param(case(QWEN2, 2, 2, 24, mode="inference"), id="qwen2-w2-inference"),
    pytest.param(case(LLAMA4, 4, 2, 16, mode="inference"), id="llama4-w4-inference"),
    pytest.param(case(WIDE3, 2, 2, 16, mode="inference"), id="wide3-w2-inference"),
    pytest.param(case(WIDE4, 4, 2, 16, mode="inference"), id="wide4-w4-inference"),
    pytest.param(case(WIDE3, 2, 2, 16, mode="inference", dtype="bfloat16"), id="wide3-w2-inference-bf16"),
    pytest.param(case(WIDE4, 4, 2, 16, mode="inference", dtype="bfloat16"), id="wide4-w4-inference-bf16"),
]


def measured(c):
    with open(ORACLE, "rb") as f:
        key = hashlib.sha256(f.read() + json.dumps(c, sort_keys=True).encode()).hexdigest()[:24]
    try:
        with open(CACHE) as f:
            cache = json.load(f)
    except (OSError, ValueError):
        cache = {}
    if key not in cache:
        r = subprocess.run([sys.executable, ORACLE, json.dumps(c)], capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, r.stderr[-4000:]
        cache[key] = json.loads(r.stdout)
        with open(CACHE + ".tmp", "w") as f:
            json.dump(cache, f, indent=0, sort_keys=True)
        os.replace(CACHE + ".tmp", CACHE)
    return cache[key]


def shard(run, tmp_path, c):
    (tmp_path / "config.json").write_text(json.dumps(c["config"]))
    args = ["shard", str(tmp_path), "--dp", str(c["world"]), "--dtype", c["dtype"], "--input",
            "%dx%d" % (c["batch"], c["seq"]), "--device-kind", "cpu", "--recompute", c["recompute"], "--mode",
            c["mode"], "--json"]
    r = run(*(args + (["--fsdp"] if c["world"] > 1 else [])), timeout=120)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)["ranks"][0]


@pytest.mark.parametrize("c", CASES)
def test_peak_within_3_percent_of_torch_memory_tracker(run, tmp_path, c):
    want = measured(c)["Total"]
    rank = shard(run, tmp_path, c)
    assert rank["peak_bytes"] == sum(rank["at_peak"].values())
    assert abs(rank["peak_bytes"] - want) <= 0.03 * want, (rank["peak_bytes"], want)


FLOAT32_FSDP = [p for p in CASES if p.values[0]["world"] > 1 and p.values[0]["dtype"] == "float32" and
                p.values[0]["mode"] == "training" and p.values[0]["recompute"] == "none"]


@pytest.mark.parametrize("c", FLOAT32_FSDP)
def test_fsdp_model_states_match_fsdp_mem_tracker(run, tmp_path, c):
    want = measured(c)
    got = shard(run, tmp_path, c)["memory"]
    assert got["parameters"] == want["SHARDED_PARAM"]
    # AdamW's states; torch's cpu `step` scalars (4 bytes a parameter
    # tensor) are host memory on CUDA, which mtk plans for
    assert 0 <= want["OPT"] - got["optimizer_states"] <= 4 * 64


def test_selective_recompute_saves_what_torch_saves(run, tmp_path):
    """The attention core's own saved bytes (sdpa's logsumexp here: its
    output stays saved as o_proj's input) are what selective recompute
    frees, in mtk's replay as in torch's checkpoint of the core, less the
    cpu rng state each checkpoint keeps (preserve_rng_state: 5056 bytes,
    a real tensor the tracker does not see under FakeTensorMode)."""
    none, sel = (c.values[0] for c in CASES if c.id in ("llama-w1", "llama-w1-selective"))
    torch_saving = measured(none)["Total"] - measured(sel)["Total"]
    mtk_saving = shard(run, tmp_path, none)["peak_bytes"] - shard(run, tmp_path, sel)["peak_bytes"]
    layers, rng_state = none["config"]["num_hidden_layers"], 5056
    assert torch_saving > 0 and mtk_saving > 0
    assert 0 <= torch_saving - mtk_saving <= layers * rng_state, (mtk_saving, torch_saving)
