"""mtk shard --fsdp against torch's FSDPMemTracker beyond float32 training
without recompute (test_shard_fsdp.py): full activation checkpointing,
bfloat16 (mtk: 16-bit weights and gradients with a float32 master copy and
moments; torch: FSDP2's mixed precision over float32 shards, the same 16
bytes a parameter) and forward-only inference (tests/plan/
torch_fsdp_modes.py, cached in torch_fsdp_modes_cache.json keyed by its
source and the case).  The peak of one rank within 3%.

mtk replays the traced step in each mode (with gradient checkpointing
under --recompute full, the forward under no_grad for inference) and
lays FSDP2's gathers, all-gather outputs, float32 reduce-scatters (mixed
precision) and, in inference, the root's buffers and the DynamicCache
over it."""
import hashlib
import json
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
CACHE = os.path.join(HERE, "torch_fsdp_modes_cache.json")
BASE = dict(hidden_size=64, intermediate_size=90, num_hidden_layers=2, num_attention_heads=8,
            num_key_value_heads=8, vocab_size=136, tie_word_embeddings=False)
LLAMA = dict(BASE, model_type="llama", architectures=["LlamaForCausalLM"])
QWEN2 = dict(BASE, model_type="qwen2", architectures=["Qwen2ForCausalLM"], vocab_size=130)
LLAMA3 = dict(LLAMA, num_hidden_layers=3)


def case(config, world, batch, seq, mode, recompute, dtype):
    return dict(config=config, world=world, batch=batch, seq=seq, mode=mode, recompute=recompute, dtype=dtype)


CASES = [
    pytest.param(case(QWEN2, 2, 2, 24, "training", "none", "bfloat16"), id="qwen2-w2-bf16"),
    pytest.param(case(LLAMA, 4, 2, 16, "training", "none", "bfloat16"), id="llama-w4-bf16"),
    pytest.param(case(LLAMA, 4, 2, 16, "training", "full", "float32"), id="llama-w4-full"),
    pytest.param(case(QWEN2, 2, 2, 24, "training", "full", "float32"), id="qwen2-w2-full"),
    pytest.param(case(LLAMA3, 2, 4, 8, "training", "full", "float32"), id="llama3-w2-full"),
    pytest.param(case(QWEN2, 2, 2, 24, "training", "full", "bfloat16"), id="qwen2-w2-full-bf16"),
    pytest.param(case(LLAMA, 4, 2, 16, "inference", "none", "float32"), id="llama-w4-inference"),
    pytest.param(case(QWEN2, 2, 2, 24, "inference", "none", "float32"), id="qwen2-w2-inference"),
]


def key_of(c):
    with open(os.path.join(HERE, "torch_fsdp_modes.py"), "rb") as f:
        return hashlib.sha256(f.read() + json.dumps(c, sort_keys=True).encode()).hexdigest()[:24]


def measured(c):
    key = key_of(c)
    try:
        with open(CACHE) as f:
            cache = json.load(f)
    except (OSError, ValueError):
        cache = {}
    if key not in cache:
        r = subprocess.run([sys.executable, os.path.join(HERE, "torch_fsdp_modes.py"), json.dumps(c)],
                           capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, r.stderr[-4000:]
        cache[key] = json.loads(r.stdout)
        with open(CACHE + ".tmp", "w") as f:
            json.dump(cache, f, indent=0, sort_keys=True)
        os.replace(CACHE + ".tmp", CACHE)
    return cache[key]


@pytest.mark.parametrize("c", CASES)
def test_fsdp_peak_within_3_percent_of_fsdp_mem_tracker(run, tmp_path, c):
    want = measured(c)["Total"]
    (tmp_path / "config.json").write_text(json.dumps(c["config"]))
    r = run("shard", str(tmp_path), "--dp", str(c["world"]), "--fsdp", "--dtype", c["dtype"], "--input",
            "%dx%d" % (c["batch"], c["seq"]), "--device-kind", "cpu", "--recompute", c["recompute"], "--mode",
            c["mode"], "--json", timeout=120)
    assert r.returncode == 0, r.stderr
    rank = json.loads(r.stdout)["ranks"][0]
    assert abs(rank["peak_bytes"] - want) <= 0.03 * want, (rank["peak_bytes"], want)
