"""mtk load: a tiny Llama built by transformers from a random config, its
checkpoint written by Python safetensors (tied lm_head dropped, as
save_pretrained does), loaded into the zoo's model built from the same
config.json; strict errors list every bad key; --dtype converts."""
import json
import re

import pytest
import torch
from safetensors.torch import load_file, save_file

N_TENSORS = 20       # embed + 2 layers x 9 + norm (lm_head is tied)


@pytest.fixture(scope="module")
def llama(tmp_path_factory):
    transformers = pytest.importorskip("transformers")
    root = tmp_path_factory.mktemp("llama")
    torch.manual_seed(0)
    cfg = transformers.LlamaConfig(hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                                   num_attention_heads=4, num_key_value_heads=2, vocab_size=256,
                                   max_position_embeddings=128, tie_word_embeddings=True,
                                   torch_dtype="float32", architectures=["LlamaForCausalLM"])
    model = transformers.AutoModelForCausalLM.from_config(cfg)
    sd = {k: v.contiguous() for k, v in model.state_dict().items() if k != "lm_head.weight"}
    assert len(sd) == N_TENSORS
    save_file(sd, root / "model.safetensors", metadata={"format": "pt"})
    cfg.save_pretrained(root)
    params = sum(v.numel() for v in sd.values())
    return root, sd, params


def load_json(run, *args):
    result = run("load", *args, "--json")
    return result, (json.loads(result.stdout) if result.stdout else None)


def test_load_fills_a_transformers_llama_checkpoint(run, llama):
    root, sd, params = llama
    result, doc = load_json(run, root, "--weights", root / "model.safetensors")
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""  # no progress bar when stderr is not a terminal
    assert doc["architecture"] == "LlamaForCausalLM"
    assert doc["dtype"] == "float32"
    assert doc["tensors"] == N_TENSORS
    assert doc["tied"] == 1                          # lm_head.weight shares embed_tokens
    assert doc["parameters"] == params
    assert doc["bytes"] == sum(v.numel() * 4 for v in sd.values())
    assert doc["computed_buffers"] >= 1              # rotary inv_freq, recomputed
    assert doc["seconds"] >= 0 and doc["gb_per_s"] >= 0


def test_load_text_report(run, llama):
    root, _, params = llama
    result = run("load", root / "config.json", "--weights", root, "--threads", "1")
    assert result.returncode == 0, result.stderr
    assert "LlamaForCausalLM" in result.stdout
    # counts grouped, sizes in binary units: the style of summary and inspect
    assert f"parameters:       {params:,}\n" in result.stdout
    assert f"tensors:          {N_TENSORS} read (+1 tied name sharing one)" in result.stdout
    nbytes = params * 4
    assert f"bytes read:       {nbytes / 1024:.1f} KiB ({nbytes:,} bytes)\n" in result.stdout
    assert re.search(r"time: +\d+\.\d{3} s with 1 thread, \d+(\.\d)? (B|KiB|MiB|GiB|TiB)/s\n", result.stdout)


def test_load_reads_a_tied_copy_once(run, llama, tmp_path):
    root, sd, _ = llama
    both = dict(sd)
    both["lm_head.weight"] = sd["model.embed_tokens.weight"].clone()
    save_file(both, tmp_path / "model.safetensors")
    result, doc = load_json(run, root, "--weights", tmp_path / "model.safetensors")
    assert result.returncode == 0, result.stderr
    assert doc["tensors"] == N_TENSORS and doc["tied"] == 1


def test_load_sharded_checkpoint(run, llama, tmp_path):
    root, sd, _ = llama
    names = sorted(sd)
    halves = {"model-00001-of-00002.safetensors": names[:10], "model-00002-of-00002.safetensors": names[10:]}
    weight_map = {}
    for file, part in halves.items():
        save_file({k: sd[k] for k in part}, tmp_path / file)
        weight_map.update({k: file for k in part})
    total = sum(v.numel() * 4 for v in sd.values())
    (tmp_path / "model.safetensors.index.json").write_text(
        json.dumps({"metadata": {"total_size": total}, "weight_map": weight_map}))
    result, doc = load_json(run, root, "--weights", tmp_path)
    assert result.returncode == 0, result.stderr
    assert doc["tensors"] == N_TENSORS and doc["bytes"] == total


def test_load_maps_tensors_held_in_the_models_dtype_and_copies_the_rest(run, llama, tmp_path):
    """Tensors the file holds as the model does are views of the mapped file
    (every one here); --copy and a conversion copy them all; the values are
    the file's either way (written back out with --output)."""
    root, sd, _ = llama
    weights = root / "model.safetensors"
    nbytes = sum(v.numel() * 4 for v in sd.values())
    out = {}
    for name, extra, mapped in (("map", [], N_TENSORS), ("copy", ["--copy"], 0),
                                ("bf16", ["--dtype", "bfloat16"], 0)):
        out[name] = tmp_path / f"{name}.safetensors"
        result, doc = load_json(run, root, "--weights", weights, *extra, "--output", out[name])
        assert result.returncode == 0, result.stderr
        assert doc["mapped"] == mapped
        assert doc["mapped_bytes"] == (nbytes if mapped else 0)
    for name in ("map", "copy"):
        got = load_file(out[name])
        assert all(torch.equal(got[k], v) for k, v in sd.items()), name
    got = load_file(out["bf16"])
    assert all(torch.equal(got[k], v.to(torch.bfloat16)) for k, v in sd.items())
    text = run("load", root, "--weights", weights).stdout
    assert re.search(rf"mapped: +{N_TENSORS} tensors, [0-9.]+ KiB, used in the mapped file \(no copy\)\n", text)


def test_load_strict_lists_every_missing_unexpected_and_misshaped_key(run, llama, tmp_path):
    root, sd, _ = llama
    bad = dict(sd)
    del bad["model.layers.1.mlp.up_proj.weight"]
    bad["model.layers.0.extra.weight"] = torch.zeros(3)
    bad["model.norm.weight"] = torch.ones(32)
    save_file(bad, tmp_path / "bad.safetensors")
    result = run("load", root, "--weights", tmp_path / "bad.safetensors")
    assert result.returncode == 1 and result.stdout == ""
    err = result.stderr
    assert err.startswith("mtk: error: cannot load")
    assert "3 keys do not match (1 missing, 1 unexpected, 1 mismatched)" in err
    assert "missing:    model.layers.1.mlp.up_proj.weight (float32 [128, 64])" in err
    assert "unexpected: model.layers.0.extra.weight (F32 [3])" in err
    assert "mismatched: model.norm.weight: checkpoint has shape [32], model [64]" in err
    assert "loaded" not in result.stdout

    # --json: the one error shape of every command, the keys as structured fields
    result, doc = load_json(run, root, "--weights", tmp_path / "bad.safetensors")
    assert result.returncode == 1 and result.stderr == "" and result.stdout.count("\n") == 1
    error = doc["error"]
    assert list(doc) == ["error"] and error["code"] == "key_mismatch"
    assert "3 keys do not match (1 missing, 1 unexpected, 1 mismatched)" in error["message"]
    assert error["missing"] == [{"name": "model.layers.1.mlp.up_proj.weight", "dtype": "float32", "shape": [128, 64]}]
    assert error["unexpected"] == [{"name": "model.layers.0.extra.weight", "dtype": "F32", "shape": [3]}]
    assert error["mismatched"] == [{"name": "model.norm.weight", "mismatch": "shape",
                                    "checkpoint": {"dtype": "F32", "shape": [32]},
                                    "model": {"dtype": "float32", "shape": [64]}}]


def test_load_one_bad_key_is_singular(run, llama, tmp_path):
    root, sd, _ = llama
    save_file({**sd, "extra": torch.zeros(2)}, tmp_path / "extra.safetensors")
    result = run("load", root, "--weights", tmp_path / "extra.safetensors")
    assert result.returncode == 1
    assert "1 key does not match (0 missing, 1 unexpected, 0 mismatched)" in result.stderr


def test_load_json_errors_have_the_one_shape(run, llama):
    root, _, _ = llama
    result, doc = load_json(run, root, "--weights", root / "nope.safetensors")
    assert result.returncode == 1 and result.stderr == ""
    assert list(doc) == ["error"] and doc["error"]["code"] == "io_error"
    assert "nope.safetensors" in doc["error"]["message"]


def test_load_dtype_mismatch_needs_dtype_option(run, llama, tmp_path):
    root, sd, params = llama
    save_file({k: v.to(torch.bfloat16) for k, v in sd.items()}, tmp_path / "bf16.safetensors")
    result = run("load", root, "--weights", tmp_path / "bf16.safetensors")
    assert result.returncode == 1
    assert f"{N_TENSORS} keys do not match (0 missing, 0 unexpected, {N_TENSORS} mismatched)" in result.stderr
    assert "model.norm.weight: checkpoint has dtype BF16, model float32 (pass --dtype to convert)" in result.stderr
    result, doc = load_json(run, root, "--weights", tmp_path / "bf16.safetensors")
    norm = next(m for m in doc["error"]["mismatched"] if m["name"] == "model.norm.weight")
    assert norm == {"name": "model.norm.weight", "mismatch": "dtype", "checkpoint": {"dtype": "BF16", "shape": [64]},
                    "model": {"dtype": "float32", "shape": [64]}}

    result, doc = load_json(run, root, "--weights", tmp_path / "bf16.safetensors", "--dtype", "float32")
    assert result.returncode == 0, result.stderr
    assert doc["dtype"] == "float32" and doc["parameters"] == params
    assert doc["bytes"] == params * 2                # bytes read from the file


def test_load_dtype_converts_to_the_requested_dtype(run, llama):
    root, _, params = llama
    result, doc = load_json(run, root, "--weights", root / "model.safetensors", "--dtype", "BF16")
    assert result.returncode == 0, result.stderr
    assert doc["dtype"] == "bfloat16" and doc["tensors"] == N_TENSORS and doc["parameters"] == params


def test_load_usage_errors(run, llama):
    root, _, _ = llama
    assert run("load", root).returncode == 2                                   # no --weights
    assert run("load", root, "--weights", root, "--dtype", "int8").returncode == 2
    missing = run("load", root, "--weights", root / "nope.safetensors")
    assert missing.returncode == 1 and missing.stderr.startswith("mtk: error: ")
    assert run("load", "--help").stdout.startswith("usage: mtk load")
