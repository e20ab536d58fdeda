"""mtk generate against transformers 5's generate(do_sample=False,
max_new_tokens=20) on the checkpoints transformers saved (gen_fixtures.py):
the ids token for token, for one row and for a left-padded batch of two,
with sliding windows shorter than prompt + generated tokens, and an eos
that finishes one row (which then gets the pad token); each step's logits
(output_logits) within 1e-4.  Then the errors.

The fixtures take transformers a while to write, so they are cached in the
build directory under the hash of their generator and the library
versions."""
import hashlib
import json

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
from safetensors.torch import load_file  # noqa: E402

import gen_fixtures  # noqa: E402
from probe_build import build_dir  # noqa: E402

MAX_ABS = 1e-4


@pytest.fixture(scope="session")
def generated():
    h = hashlib.sha256(open(gen_fixtures.__file__, "rb").read())
    h.update(f"{torch.__version__} {transformers.__version__}".encode())
    root = build_dir() / "gen_fixtures" / h.hexdigest()[:16]
    root.mkdir(parents=True, exist_ok=True)
    gen_fixtures.run_isolated(root)
    return root


def ids_text(rows):
    return ";".join(",".join(str(v) for v in row) for row in rows)


def generate(mtk, case_dir, prompt, tmp_path, *extra):
    out = tmp_path / "out.safetensors"
    args = ["generate", str(case_dir), "--weights", str(case_dir / "model.safetensors"), "--input-ids",
            ids_text(prompt["input_ids"]), "--max-new-tokens", str(gen_fixtures.MAX_NEW), "--json",
            "--output", str(out), *extra]
    if prompt["attention_mask"] is not None:
        args += ["--attention-mask", ids_text(prompt["attention_mask"])]
    result = mtk(*args)
    assert result.returncode == 0, result.stdout + result.stderr
    return json.loads(result.stdout), load_file(str(out))


@pytest.mark.parametrize("prompt", ["single", "batch"])
@pytest.mark.parametrize("case", list(gen_fixtures.CASES))
def test_greedy_generation_matches_transformers(case, prompt, generated, mtk, tmp_path):
    case_dir = generated / case
    expected = json.loads((case_dir / "expected.json").read_text())[prompt]
    doc, out = generate(mtk, case_dir, expected, tmp_path)
    assert doc["sequences"] == expected["sequences"]
    assert out["sequences"].tolist() == expected["sequences"]
    want = load_file(str(case_dir / ("logits_%s.safetensors" % prompt)))["logits"]
    got = out["logits"]
    assert got.shape == want.shape
    # the prefill's logits and every decode step's
    assert (got - want).abs().max().item() <= MAX_ABS
    assert doc["new_tokens"] == want.shape[0]
    assert doc["decode_tokens"] == len(expected["input_ids"]) * (want.shape[0] - 1)


def test_eos_finishes_a_row_and_pads_it(generated, mtk, tmp_path):
    """generation_config.json's eos_token_id (a list) and pad_token_id: row 1
    stops at its eos and is filled with the pad token; row 0 runs on."""
    case_dir = generated / "llama-eos"
    expected = json.loads((case_dir / "expected.json").read_text())["batch"]
    eos = json.loads((case_dir / "generation_config.json").read_text())["eos_token_id"]
    doc, _ = generate(mtk, case_dir, expected, tmp_path)
    row = doc["sequences"][1][gen_fixtures.PROMPT:]
    stop = next(i for i, t in enumerate(row) if t in eos)
    assert stop < len(row) - 1 and all(t == 0 for t in row[stop + 1:])
    assert doc["sequences"] == expected["sequences"]
    # with no eos the row runs on: the tokens after the stop are generated, not pads
    doc, _ = generate(mtk, case_dir, expected, tmp_path, "--eos-token-id", "none")
    assert doc["sequences"][1][gen_fixtures.PROMPT:][:stop + 1] == row[:stop + 1]
    assert doc["sequences"][1][gen_fixtures.PROMPT + stop + 1:] != row[stop + 1:]


def test_generate_text_report(generated, mtk):
    case_dir = generated / "llama"
    result = mtk("generate", str(case_dir), "--weights", str(case_dir / "model.safetensors"), "--input-ids",
                 "5,6,7", "--max-new-tokens", "3")
    assert result.returncode == 0, result.stderr
    assert "LlamaForCausalLM" in result.stdout and "decode:" in result.stdout and "tokens/s" in result.stdout
    assert result.stdout.count("|") == 1  # the prompt and the generated ids of the one row


@pytest.mark.parametrize("case", ["gpt2", "gpt_neox", "phi", "llama4_text-chunk"])
def test_left_padding_moves_no_token_of_a_row(case, generated, mtk, tmp_path):
    """A left-padded row generates what the same row unpadded does (the
    mask hides the pads from the cache, the position ids and llama4's
    chunks start at its first token)."""
    case_dir = generated / case
    batch = json.loads((case_dir / "expected.json").read_text())["batch"]
    pad = gen_fixtures.PAD_LEFT
    alone = {"input_ids": [batch["input_ids"][0][pad:]], "attention_mask": None}
    doc, _ = generate(mtk, case_dir, alone, tmp_path)
    assert doc["sequences"][0] == batch["sequences"][0][pad:]


def test_generate_refuses_a_model_that_is_not_a_decoder_lm(mtk, tmp_path):
    cfg = dict(model_type="bert", hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
               vocab_size=97, max_position_embeddings=64)
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    model = transformers.BertModel(transformers.BertConfig(**{k: v for k, v in cfg.items() if k != "model_type"}))
    from safetensors.torch import save_file
    save_file({k: v.contiguous() for k, v in model.state_dict().items()}, str(tmp_path / "model.safetensors"))
    result = mtk("generate", str(tmp_path), "--weights", str(tmp_path / "model.safetensors"), "--input-ids", "1,2",
                 "--max-new-tokens", "2")
    assert result.returncode == 1
    assert "BertModel is not a language model" in result.stderr


@pytest.mark.parametrize("n", ["0", "-3"])
def test_generate_refuses_fewer_than_one_new_token(n, generated, mtk):
    case_dir = generated / "llama"
    result = mtk("generate", str(case_dir), "--weights", str(case_dir / "model.safetensors"), "--input-ids", "1,2",
                 "--max-new-tokens", n)
    assert result.returncode == 2
    assert "--max-new-tokens must be >= 1, got %s" % n in result.stderr


@pytest.mark.parametrize("ids,mask,message", [
    ("1,2;3", None, "--input-ids: rows have different lengths (2, 1 tokens)"),
    ("1,x", None, "--input-ids: '1,x' is not a list of integers"),
    ("1,2;3,4", "1,1", "--attention-mask is 1x2, --input-ids 2x2"),
])
def test_generate_refuses_malformed_ids(ids, mask, message, generated, mtk):
    case_dir = generated / "llama"
    args = ["generate", str(case_dir), "--weights", str(case_dir / "model.safetensors"), "--input-ids", ids,
            "--max-new-tokens", "2"]
    if mask:
        args += ["--attention-mask", mask]
    result = mtk(*args)
    assert result.returncode == 1
    assert message in result.stderr
