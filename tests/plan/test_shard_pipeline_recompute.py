"""Recompute under pipeline parallelism: what a stage's in-flight micro-
batches hold under 1F1B with --recompute none, selective and full.

A 4-layer llama (hidden 64) at pp 2, micro-batch 4x128: stage 0 keeps
min(pp - stage, micro-batches) = 2 micro-batches in flight with a global
batch of 16, 1 with a global batch of 4.  The extra micro-batch adds, to
stage 0's replayed peak, what one micro-batch of its layers keeps until its
backward: all it saves (none); that less the attention cores' own
(selective: sdpa's logsumexp, the same bytes torch's checkpoint of
sdpa_attention_forward frees, measured on the 2-layer model of the same
shape in test_shard_fsdp.py's oracle); each layer's input and the
embedding's saved ids (full)."""
import json

import pytest

from test_shard_fsdp import CASES, measured

CONFIG = dict(hidden_size=64, intermediate_size=90, num_hidden_layers=4, num_attention_heads=8,
              num_key_value_heads=8, vocab_size=136, tie_word_embeddings=False, model_type="llama",
              architectures=["LlamaForCausalLM"])
B, S = 4, 128


def stage0(run, tmp_path, recompute, global_batch):
    (tmp_path / "config.json").write_text(json.dumps(CONFIG))
    r = run("shard", str(tmp_path), "--pp", "2", "--dtype", "float32", "--input", "%dx%d" % (B, S), "--global-batch",
            str(global_batch), "--device-kind", "cpu", "--recompute", recompute, "--json", timeout=120)
    assert r.returncode == 0, r.stderr
    rank = json.loads(r.stdout)["ranks"][0]
    assert rank["stage"] == 0
    return rank


def held_by_one_more_micro_batch(run, tmp_path, recompute):
    one, two = stage0(run, tmp_path, recompute, 4), stage0(run, tmp_path, recompute, 16)
    assert one["in_flight"] == 1 and two["in_flight"] == 2
    return two["peak_bytes"] - one["peak_bytes"], one


def test_1f1b_holds_a_whole_micro_batch_without_recompute(run, tmp_path):
    extra, one = held_by_one_more_micro_batch(run, tmp_path, "none")
    assert extra == one["memory"]["activations_saved"]  # one micro-batch's forward saves


def test_1f1b_with_selective_recompute_holds_less_the_attention_cores(run, tmp_path):
    none, _ = held_by_one_more_micro_batch(run, tmp_path, "none")
    selective, _ = held_by_one_more_micro_batch(run, tmp_path, "selective")
    # stage 0's 2 layers: sdpa's cpu kernel saves a (B, heads, S) float32
    # logsumexp each, which torch's checkpoint of the core frees (the
    # 2-layer model of this shape in test_shard_fsdp.py's oracle: within
    # the rng states its checkpoints keep)
    lse = B * CONFIG["num_attention_heads"] * S * 4
    assert none - selective == 2 * lse
    cases = {p.id: p.values[0] for p in CASES}
    torch_saving = measured(cases["llama-w1"])["Total"] - measured(cases["llama-w1-selective"])["Total"]
    assert 0 < 2 * lse - torch_saving <= 2 * 5056


def test_1f1b_with_full_recompute_holds_the_layer_inputs(run, tmp_path):
    extra, _ = held_by_one_more_micro_batch(run, tmp_path, "full")
    layer_input = B * S * CONFIG["hidden_size"] * 4
    ids = B * S * 8  # the embedding saves its int64 indices
    assert extra == 2 * layer_input + ids
