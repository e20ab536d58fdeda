"""mtk run on an encoder-decoder (T5) against transformers 5: the encoder's
ids and the decoder's (--decoder-input-ids, another length), outputs
named as transformers names them, float32 within 1e-4 and the argmax of
the logits equal (t5_oracle.py); what it refuses, it names."""
import hashlib
import json

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
from safetensors.torch import load_file  # noqa: E402

import t5_oracle  # noqa: E402
from probe_build import build_dir  # noqa: E402


@pytest.fixture(scope="session")
def fixtures():
    h = hashlib.sha256(open(t5_oracle.__file__, "rb").read())
    h.update(f"{torch.__version__} {transformers.__version__}".encode())
    root = build_dir() / "t5_run_fixtures" / h.hexdigest()[:16]
    root.mkdir(parents=True, exist_ok=True)
    t5_oracle.run_isolated(root)
    return root


@pytest.mark.parametrize("case", list(t5_oracle.CASES))
def test_encoder_decoder_outputs_match_transformers(fixtures, run, tmp_path, case):
    case_dir = fixtures / case
    inputs = case_dir / "inputs.safetensors"
    out = tmp_path / "out.safetensors"
    result = run("run", case_dir / "model", "--weights", case_dir / "model", "--input-ids", inputs,
                 "--decoder-input-ids", inputs, "--output", out, "--json")
    assert result.returncode == 0, result.stdout + result.stderr
    doc = json.loads(result.stdout)
    want = load_file(str(case_dir / "f32.safetensors"))
    got = load_file(str(out))
    names = json.loads((case_dir / "case.json").read_text())["outputs"]
    assert [o["name"] for o in doc["outputs"]] == names
    for name in names:
        assert got[name].shape == want[name].shape, name
        assert (got[name] - want[name]).abs().max().item() <= 1e-4, name
    if "logits" in want:
        assert torch.equal(got["logits"].argmax(-1), want["logits"].argmax(-1))
        assert [t["id"] for t in doc["top"][0]][:1] == [int(want["logits"][0, -1].argmax())]


def test_encoder_decoder_needs_the_decoder_ids_and_others_refuse_them(fixtures, run, tmp_path):
    case_dir = fixtures / "t5_lm"
    result = run("run", case_dir / "model", "--weights", case_dir / "model", "--input-ids", "3,4,5")
    assert result.returncode == 1 and "give the decoder's ids too" in result.stderr
    result = run("run", case_dir / "model", "--weights", case_dir / "model", "--input-ids", "3,4,5",
                 "--decoder-input-ids", "3,4", "--position-ids", "0,1,2")
    assert result.returncode == 1 and "takes no position_ids" in result.stderr
    result = run("run", case_dir / "model", "--weights", case_dir / "model", "--input-ids", "3,4,5;6,7,8",
                 "--decoder-input-ids", "3,4")
    assert result.returncode == 1 and "decoder_input_ids must be (2, T >= 1)" in result.stderr
