"""mtk generate and a padded mtk run on T5ForConditionalGeneration against
transformers 5 (t5_generate_oracle.py): relu with the decoder's output
scaled, gated-gelu unscaled (tie_word_embeddings false, saved by
transformers 5 as scale_decoder_outputs false) with the lm_head tied, and
with the checkpoint's own lm_head.weight (flan-t5's layout, which
from_pretrained unties).  Greedy generation of 20 tokens token-for-token
equal on a right-padded batch with its mask (the encoder's self-attention
and the decoder's cross-attention masked), every step's logits within 1e-4;
an unpadded row without eos; the decoder's start token from
generation_config.json or --decoder-start-token-id over the config's; the padded forward within 1e-4 in float32,
argmax equal, bfloat16 within torch's own bf16-vs-f32 gap."""
import hashlib
import json

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
from safetensors.torch import load_file  # noqa: E402

import t5_generate_oracle as oracle  # noqa: E402
from probe_build import build_dir  # noqa: E402

CASES = list(oracle.CASES)


@pytest.fixture(scope="session")
def fixtures():
    h = hashlib.sha256(open(oracle.__file__, "rb").read())
    h.update(f"{torch.__version__} {transformers.__version__}".encode())
    root = build_dir() / "t5_generate_fixtures" / h.hexdigest()[:16]
    root.mkdir(parents=True, exist_ok=True)
    oracle.run_isolated(root)
    return root


def _model(fixtures, case):
    d = fixtures / case
    return d, ["--weights", d / "model"]


@pytest.mark.parametrize("case", CASES)
def test_generate_on_a_padded_batch_matches_transformers_token_for_token(fixtures, run, tmp_path, case):
    d, weights = _model(fixtures, case)
    inputs, out = d / "inputs.safetensors", tmp_path / "gen.safetensors"
    result = run("generate", d / "model", *weights, "--input-ids", inputs, "--attention-mask", inputs,
                 "--max-new-tokens", oracle.NEW, "--output", out, "--json")
    assert result.returncode == 0, result.stdout + result.stderr
    doc = json.loads(result.stdout)
    want = load_file(str(d / "gen.safetensors"))
    got = load_file(str(out))
    assert doc["architecture"] == "T5ForConditionalGeneration"
    assert doc["sequences"] == want["masked"].tolist()  # decoder_start_token_id first, as generate returns it
    assert torch.equal(got["sequences"], want["masked"])
    steps = want["masked_logits"].shape[0]
    assert got["logits"].shape == want["masked_logits"].shape
    assert (got["logits"][:steps] - want["masked_logits"]).abs().max().item() <= 1e-4


@pytest.mark.parametrize("case", CASES)
def test_generate_without_a_mask_or_eos_runs_every_step(fixtures, run, case):
    d, weights = _model(fixtures, case)
    plain = ",".join(map(str, load_file(str(d / "inputs.safetensors"))["plain_ids"][0].tolist()))
    result = run("generate", d / "model", *weights, "--input-ids", plain, "--max-new-tokens", oracle.NEW,
                 "--eos-token-id", "none", "--json")
    assert result.returncode == 0, result.stdout + result.stderr
    doc = json.loads(result.stdout)
    want = load_file(str(d / "gen.safetensors"))["plain"]
    assert doc["sequences"] == want.tolist()
    assert doc["new_tokens"] == oracle.NEW and len(doc["sequences"][0]) == 1 + oracle.NEW


def test_the_start_token_comes_from_generation_config_then_the_option(fixtures, run):
    d, weights = _model(fixtures, oracle.START_CASE)
    plain = ",".join(map(str, load_file(str(d / "inputs.safetensors"))["plain_ids"][0].tolist()))
    want = load_file(str(d / "gen_start.safetensors"))["plain"].tolist()
    common = ["--input-ids", plain, "--max-new-tokens", oracle.NEW, "--eos-token-id", "none", "--json"]
    from_file = run("generate", d / "model_start", "--weights", d / "model_start", *common)
    assert from_file.returncode == 0, from_file.stdout + from_file.stderr
    assert json.loads(from_file.stdout)["sequences"] == want and want[0][0] == oracle.START
    given = run("generate", d / "model", *weights, *common, "--decoder-start-token-id", oracle.START)
    assert given.returncode == 0, given.stdout + given.stderr
    assert json.loads(given.stdout)["sequences"] == want


def test_a_start_token_outside_the_vocabulary_is_an_error(fixtures, run):
    d, weights = _model(fixtures, oracle.START_CASE)
    result = run("generate", d / "model", *weights, "--input-ids", "5,6,1", "--max-new-tokens", 2,
                 "--decoder-start-token-id", oracle.VOCAB)
    assert result.returncode == 1
    assert "index out of range" in result.stderr and str(oracle.VOCAB) in result.stderr


def _run_padded(run, d, tmp_path, *extra):
    inputs, out = d / "inputs.safetensors", tmp_path / "out.safetensors"
    result = run("run", d / "model", "--weights", d / "model", "--input-ids", inputs, "--attention-mask", inputs,
                 "--decoder-input-ids", inputs, "--output", out, "--json", *extra)
    assert result.returncode == 0, result.stdout + result.stderr
    return load_file(str(out))


@pytest.mark.parametrize("case", CASES)
def test_padded_forward_matches_transformers(fixtures, run, tmp_path, case):
    d, _ = _model(fixtures, case)
    got = _run_padded(run, d, tmp_path)
    want = load_file(str(d / "run_f32.safetensors"))
    for name, w in want.items():
        assert got[name].shape == w.shape, name
        assert (got[name] - w).abs().max().item() <= 1e-4, name
    assert torch.equal(got["logits"].argmax(-1), want["logits"].argmax(-1))


@pytest.mark.parametrize("case", CASES)
def test_padded_forward_in_bfloat16_is_within_torchs_own_gap(fixtures, run, tmp_path, case):
    d, _ = _model(fixtures, case)
    got = _run_padded(run, d, tmp_path, "--dtype", "bfloat16")
    f32, bf16 = load_file(str(d / "run_f32.safetensors")), load_file(str(d / "run_bf16.safetensors"))
    for name in f32:
        assert got[name].dtype == torch.bfloat16
        gap = (bf16[name].float() - f32[name]).abs().max().item()
        diff = (got[name].float() - bf16[name].float()).abs().max().item()
        assert diff <= max(2 * gap, 1e-2), f"{name}: mtk bf16 vs torch bf16 {diff}, torch's bf16 gap {gap}"
        own = (got[name].float() - f32[name]).abs().max().item()
        assert own <= 1.5 * gap + 1e-3, f"{name}: mtk bf16 vs float32 {own}, torch's bf16 gap {gap}"


def test_the_padding_changes_what_is_generated(fixtures, run):
    """The mask reaches the encoder and the cross-attention: without it the padded rows decode otherwise."""
    d, weights = _model(fixtures, "gated_untied_lm_head")
    inputs = d / "inputs.safetensors"
    result = run("generate", d / "model", *weights, "--input-ids", inputs, "--max-new-tokens", oracle.NEW, "--json")
    assert result.returncode == 0, result.stderr
    masked = load_file(str(d / "gen.safetensors"))["masked"].tolist()
    unmasked = json.loads(result.stdout)["sequences"]
    assert unmasked[0] == masked[0][:len(unmasked[0])]  # the full row
    assert unmasked[1:] != [row[:len(unmasked[1])] for row in masked[1:]]


def test_generate_streamed_under_a_ram_budget_gives_the_same_tokens(fixtures, run):
    d, weights = _model(fixtures, "gated_untied_lm_head")
    inputs = d / "inputs.safetensors"
    result = run("generate", d / "model", *weights, "--input-ids", inputs, "--attention-mask", inputs,
                 "--max-new-tokens", oracle.NEW, "--max-ram", "200KB", "--json")
    assert result.returncode == 0, result.stdout + result.stderr
    doc = json.loads(result.stdout)
    assert doc["stream"]["releases"] and doc["stream"]["budget"] < doc["stream"]["total_bytes"]
    assert doc["sequences"] == load_file(str(d / "gen.safetensors"))["masked"].tolist()
