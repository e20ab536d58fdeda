"""mtk inspect and mtk convert as a user meets them: output, JSON schema,
exit statuses, errors as 'mtk: error: ...', the malformed corpus, and no
partial output after a failure."""
import json
import os

import pytest
import torch
from safetensors.torch import load_file, save_file

from st_tensors import CORPUS, raw

EXPECTED = json.loads((CORPUS / "expected.json").read_text())


@pytest.fixture
def small(tmp_path):
    sd = {"model.embed.weight": torch.arange(12, dtype=torch.float32).reshape(3, 4),
          "model.norm.weight": torch.ones(4, dtype=torch.bfloat16),
          "step": torch.tensor(7, dtype=torch.int64),
          "ids": torch.tensor([1, 2], dtype=torch.uint32)}
    path = tmp_path / "small.safetensors"
    save_file(sd, path, metadata={"format": "pt"})
    return path, sd


# ------------------------------------------------------------------ inspect

def test_inspect_lists_tensors_totals_and_metadata(run, small):
    path, _ = small
    result = run("inspect", path)
    assert result.returncode == 0 and result.stderr == ""
    out = result.stdout
    assert out.startswith(f"{path}: valid safetensors checkpoint\n")
    lines = out.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("name"))
    assert lines[header].split() == ["name", "dtype", "shape", "bytes"]
    rows = [line.split(None, 2) for line in lines[header + 1:header + 5]]
    assert [r[0] for r in rows] == ["step", "model.embed.weight", "ids", "model.norm.weight"]  # file order
    assert "model.embed.weight  F32      [3, 4]" in out
    assert "total: 4 tensors, 19 parameters, 72 B\n" in out
    assert "bytes by dtype: I64 8 B, F32 48 B, U32 8 B, BF16 8 B" in out
    assert out.endswith("metadata:\n  format: pt\n")


def test_inspect_sizes_are_binary_units_and_counts_are_grouped(run, tmp_path):
    # the one style of summary, inspect and load: KiB/MiB/GiB with one
    # decimal, exact counts with thousands separators
    path = tmp_path / "big.safetensors"
    save_file({"w": torch.zeros(1000, 1000), "b": torch.zeros(1, dtype=torch.bfloat16)}, path)
    out = run("inspect", path).stdout
    assert "total: 2 tensors, 1,000,001 parameters, 3.8 MiB (4,000,002 bytes)\n" in out
    assert "bytes by dtype: F32 3.8 MiB, BF16 2 B\n" in out
    assert "w     F32      [1000, 1000]       4,000,000" in out
    one = tmp_path / "one.safetensors"
    save_file({"x": torch.zeros(1)}, one)
    assert "total: 1 tensor, 1 parameter, 4 B\n" in run("inspect", one).stdout


def test_inspect_json_has_the_issue_schema(run, small):
    path, sd = small
    result = run("inspect", "--json", path)
    assert result.returncode == 0
    doc = json.loads(result.stdout)
    assert doc["valid"] is True
    assert doc["files"] == [str(path)]
    assert doc["metadata"] == {"format": "pt"}
    assert doc["total_params"] == 19 and doc["total_bytes"] == 72 and doc["total_tensors"] == 4
    assert doc["bytes_by_dtype"] == {"I64": 8, "F32": 48, "U32": 8, "BF16": 8}
    tensors = {t["name"]: t for t in doc["tensors"]}
    assert tensors["model.embed.weight"] == {"name": "model.embed.weight", "dtype": "F32", "shape": [3, 4],
                                             "data_offsets": [8, 56]}
    assert tensors["step"]["shape"] == []
    assert set(tensors) == set(sd)


def test_inspect_of_a_bad_file_exits_1_with_the_rule(run, tmp_path):
    path = tmp_path / "bad.safetensors"
    path.write_bytes((CORPUS / "bad_overlap.safetensors").read_bytes())
    result = run("inspect", path)
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr == (f"mtk: error: {path}: invalid safetensors file: tensor 'b': data_offsets [4, 12] "
                             "overlap tensor 'a' [0, 8]\n")
    result = run("inspect", "--json", path)
    assert result.returncode == 1 and result.stderr == ""
    assert result.stdout.count("\n") == 1            # one line, the error shape of every command
    doc = json.loads(result.stdout)
    assert list(doc) == ["error"] and list(doc["error"]) == ["code", "message"]
    assert doc["error"]["code"] == "syntax_error"
    assert "overlap tensor 'a'" in doc["error"]["message"]


def test_inspect_usage_errors_exit_2(run):
    for args in (["inspect"], ["inspect", "a", "b"], ["inspect", "--frobnicate", "x"]):
        result = run(*args)
        assert result.returncode == 2, args
        assert result.stderr.startswith("mtk: error: ") and "Try 'mtk inspect --help'." in result.stderr


def test_inspect_of_a_missing_path_exits_1(run, tmp_path):
    result = run("inspect", tmp_path / "nope.safetensors")
    assert result.returncode == 1
    assert result.stderr == f"mtk: error: {tmp_path / 'nope.safetensors'}: cannot open: No such file or directory\n"


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_corpus_file_fails_with_its_rule(run, name):
    result = run("inspect", CORPUS / name)
    assert result.returncode == 1, result.stdout
    assert result.stdout == ""
    prefix = f"mtk: error: {CORPUS / name}: invalid safetensors file: "
    assert result.stderr.startswith(prefix), result.stderr
    assert EXPECTED[name] in result.stderr
    assert result.stderr.count("\n") == 1


@pytest.mark.parametrize("name", sorted(p.name for p in CORPUS.glob("good_*.safetensors")))
def test_corpus_good_files_are_valid(run, name):
    result = run("inspect", "--json", CORPUS / name)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["valid"] is True


def test_corpus_has_every_kind_the_issue_names():
    kinds = ["truncated", "empty", "length_past_end", "header_too_large", "not_json", "not_object", "deep_nesting",
             "overlap", "gap", "offsets_past_end", "offsets_reversed", "size_mismatch", "shape_overflow",
             "negative_dim", "unknown_dtype", "metadata_number", "duplicate_names", "trailing_bytes", "invalid_utf8"]
    for kind in kinds:
        assert any(kind in name for name in EXPECTED), kind
    assert all(p.stat().st_size < 16384 for p in CORPUS.iterdir())


# ------------------------------------------------------------------ convert

def test_convert_copies_unsigned_wide_tensors_and_converts_floats(run, small, tmp_path):
    path, sd = small
    out = tmp_path / "half.safetensors"
    result = run("convert", "--dtype", "F16", path, out)
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"wrote 4 tensors (48 B of data) to {out}\n"
    loaded = load_file(out)
    assert loaded["model.embed.weight"].dtype == torch.float16
    assert loaded["model.norm.weight"].dtype == torch.float16
    assert raw(loaded["ids"]) == raw(sd["ids"]) and loaded["ids"].dtype == torch.uint32
    assert loaded["step"].item() == 7


def test_convert_into_a_directory_with_shards(run, small, tmp_path):
    path, sd = small
    out = tmp_path / "dir"
    result = run("convert", "--max-shard-size", "40B", path, out)
    assert result.returncode == 0, result.stderr
    # step (8 bytes), then model.embed.weight (48 > 40) in a shard of its own, then ids and norm
    assert result.stdout.endswith(f"2 shards and {out}/model.safetensors.index.json\n")
    names = sorted(os.listdir(out))
    assert names == ["model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors",
                     "model.safetensors.index.json"]
    assert set(load_file(out / names[0])) == {"model.embed.weight"}
    doc = json.loads(run("inspect", "--json", out).stdout)
    assert {t["name"] for t in doc["tensors"]} == set(sd)
    assert doc["metadata"]["total_size"] == 72
    result = run("inspect", out / "model.safetensors.index.json")
    assert "(2 files, indexed)" in result.stdout


def test_convert_to_an_index_name_always_writes_an_index(run, small, tmp_path):
    path, _ = small
    out = tmp_path / "w.safetensors.index.json"
    assert run("convert", path, out).returncode == 0
    assert sorted(os.listdir(tmp_path)) == ["small.safetensors", "w-00001-of-00001.safetensors",
                                            "w.safetensors.index.json"]


def test_convert_in_place_replaces_the_file(run, small):
    path, sd = small
    assert run("convert", "--dtype", "bfloat16", path, path).returncode == 0
    assert load_file(path)["model.embed.weight"].dtype == torch.bfloat16
    assert [p.name for p in path.parent.iterdir()] == [path.name]


def test_convert_of_a_bad_input_leaves_nothing(run, tmp_path):
    for out in (tmp_path / "out.safetensors", tmp_path / "outdir"):
        result = run("convert", CORPUS / "bad_gap.safetensors", out)
        assert result.returncode == 1
        assert result.stderr.startswith("mtk: error: ") and "leave a hole" in result.stderr
        assert not out.exists()
    assert list(tmp_path.iterdir()) == []


def test_convert_into_a_missing_parent_fails_without_output(run, small, tmp_path):
    path, _ = small
    result = run("convert", path, tmp_path / "a" / "b" / "x.safetensors")
    assert result.returncode == 1
    assert "cannot create the directory" in result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["small.safetensors"]


@pytest.mark.parametrize("args, message", [
    (["convert", "x"], "expected IN and OUT, got 1 argument"),
    (["convert", "--dtype", "int32", "a", "b"], "--dtype 'int32' is not a floating-point dtype"),
    (["convert", "--dtype", "f13", "a", "b"], "--dtype 'f13' is not a floating-point dtype"),
    (["convert", "--max-shard-size", "5XB", "a", "b"], "--max-shard-size '5XB' is not a size"),
    (["convert", "--max-shard-size", "0", "a", "b"], "--max-shard-size '0' is not a size"),
])
def test_convert_usage_errors_exit_2(run, args, message):
    result = run(*args)
    assert result.returncode == 2
    assert result.stderr.startswith(f"mtk: error: {message}")


def test_commands_are_listed_with_help(run):
    top = run("--help").stdout
    assert "  inspect " in top and "  convert " in top
    for command in ("inspect", "convert"):
        result = run(command, "--help")
        assert result.returncode == 0 and result.stdout.startswith(f"usage: mtk {command}")
