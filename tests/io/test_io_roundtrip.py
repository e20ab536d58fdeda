"""Round trips with the reference: files written by Python's safetensors
are read by mtk bit-exactly (and rewritten byte-identically), files written
by mtk load in Python bit-exactly, across all 15 dtypes, empty and 0-dim
tensors, dtype conversion (as torch's Tensor.to) and sharded sets (as
Hugging Face splits them)."""
import json
import struct

import pytest
import torch
from safetensors import safe_open
from safetensors.torch import load_file, save_file

from mtk_ctypes import MtkError
from st_tensors import DTYPES, FLOATING, MTK_NAME, all_dtypes_state_dict, name_of, raw, random_tensor, same_values


@pytest.fixture
def python_file(tmp_path):
    sd = all_dtypes_state_dict()
    path = tmp_path / "py.safetensors"
    save_file(sd, path, metadata={"format": "pt"})
    return path, sd


def assert_same(loaded, sd):
    assert set(loaded) == set(sd)
    for name, t in sd.items():
        assert loaded[name].dtype == t.dtype, name
        assert loaded[name].shape == t.shape, name
        assert raw(loaded[name]) == raw(t), name


def test_python_file_rewritten_by_mtk_is_byte_identical(run, python_file, tmp_path):
    path, _ = python_file
    out = tmp_path / "mtk.safetensors"
    result = run("convert", path, out)
    assert result.returncode == 0, result.stderr
    assert out.read_bytes() == path.read_bytes()


def test_mtk_written_file_loads_in_python_bit_exactly(run, python_file, tmp_path):
    path, sd = python_file
    out = tmp_path / "mtk.safetensors"
    assert run("convert", path, out).returncode == 0
    assert_same(load_file(out), sd)
    with safe_open(out, "pt") as f:
        assert f.metadata() == {"format": "pt"}
        for name in f.keys():
            assert raw(f.get_tensor(name)) == raw(sd[name])


def test_mtk_reads_python_files_bit_exactly(libmtk, python_file):
    path, sd = python_file
    with libmtk.open(path) as f:
        for name, t in sd.items():
            if t.dtype in (torch.uint16, torch.uint32, torch.uint64):
                with pytest.raises(MtkError, match=f"is {DTYPES[t.dtype]}, which mtk has no dtype for"):
                    f.view(name)
                continue
            shape, data, kind = f.view(name)
            assert shape == tuple(t.shape) and data == raw(t), name
            assert kind == 2 or t.numel() == 0 or kind == 0  # mapped (zero-copy), or a copy when misaligned
            shape, data, _ = f.load(name)
            assert shape == tuple(t.shape) and data == raw(t), name


def test_views_of_reference_files_are_zero_copy(libmtk, python_file):
    path, sd = python_file
    with libmtk.open(path) as f:
        # the reference writer aligns every tensor to its element size
        assert all(f.view(n)[2] == 2 for n, t in sd.items() if t.dtype in MTK_NAME)


def conversion_values():
    """Values every conversion handles the same way in torch and mtk: all
    bit patterns of the 8-bit floats, specials, rounding ties, and integers
    that fit every integer dtype."""
    floats = torch.tensor([0.0, -0.0, 1.0, -1.5, 2.5, 3.5, 0.1, 1e-3, 65504.0, 65520.0, 1e-8, 1e-40, 3.4e38, -3.4e38,
                           448.0, 464.0, 57344.0, 1.00390625, 1.005859375, float("inf"), float("-inf"),
                           float("nan")] + [float(v) for v in range(-100, 100, 7)], dtype=torch.float64)
    every8 = torch.arange(256, dtype=torch.uint8)
    return {
        "f64": floats,
        "f32": floats.float(),
        "f16": floats.half(),
        "bf16": floats.bfloat16(),
        "e4m3": every8.view(torch.float8_e4m3fn),
        "e5m2": every8.clone().view(torch.float8_e5m2),
        "i64": torch.tensor([0, 1, -1, 100, -128, 127, 255, 2**31 - 1, -(2**31), 2**40, -(2**63)], dtype=torch.int64),
        "i32": torch.tensor([0, 1, -1, 100, -128, 127, 255, 2**31 - 1], dtype=torch.int32),
        "i16": torch.tensor([0, 1, -1, 300, -32768, 32767], dtype=torch.int16),
        "i8": torch.tensor([0, 1, -1, 127, -128], dtype=torch.int8),
        "u8": torch.arange(0, 256, 17, dtype=torch.uint8),
        "bool": torch.tensor([True, False, True]),
        "ints_as_f32": torch.tensor([0.0, 1.0, -1.0, 100.0, -100.0, 127.0, 77.9, -5.5]),
    }


@pytest.mark.parametrize("target", list(MTK_NAME), ids=name_of)
def test_load_converts_exactly_as_torch_to(libmtk, tmp_path, target):
    sd = conversion_values()
    path = tmp_path / "values.safetensors"
    save_file(sd, path)
    with libmtk.open(path) as f:
        for name, t in sd.items():
            if not target.is_floating_point and t.is_floating_point() and name != "ints_as_f32":
                continue  # nan/inf/out-of-range float -> int is platform-defined in torch
            if target in (torch.float8_e4m3fn, torch.float8_e5m2) and t.dtype in (torch.float8_e4m3fn, torch.float8_e5m2) \
                    and t.dtype != target:
                continue  # torch has no direct float8 <-> float8 path on cpu either way; via float32 below
            want = t.to(target)
            shape, data, _ = f.load(name, MTK_NAME[target])
            assert shape == tuple(want.shape)
            got = torch.frombuffer(bytearray(data), dtype=target) if data else want
            bad = same_values(got, want)
            assert not bad, f"{name} -> {target}: (index, mtk, torch) {bad[:5]}"


def test_load_slice_matches_safetensors_get_slice(libmtk, tmp_path):
    gen = torch.Generator().manual_seed(1)
    sd = {"w": random_tensor(torch.float32, (6, 8), gen), "b": random_tensor(torch.bfloat16, (4, 3, 5), gen)}
    path = tmp_path / "s.safetensors"
    save_file(sd, path)
    with libmtk.open(path) as f, safe_open(path, "pt") as ref:
        cases = [("w", 0, 2, 5, lambda s: s[2:5]), ("w", 1, 3, 8, lambda s: s[:, 3:8]),
                 ("b", 1, 1, 2, lambda s: s[:, 1:2]), ("b", -1, 0, 4, lambda s: s[:, :, 0:4]),
                 ("w", 0, 6, 6, lambda s: s[6:6])]
        for name, dim, start, stop, index in cases:
            want = index(ref.get_slice(name))
            shape, data, _ = f.load_slice(name, dim, start, stop)
            assert shape == tuple(want.shape) and data == raw(want), (name, dim, start, stop)
            shape, data, _ = f.load_slice(name, dim, start, stop, "float32")
            assert data == raw(want.float())


@pytest.mark.parametrize("dtype", FLOATING, ids=name_of)
def test_convert_dtype_converts_floating_tensors_as_torch_and_keeps_the_rest(run, python_file, tmp_path, dtype):
    path, sd = python_file
    out = tmp_path / "conv.safetensors"
    result = run("convert", "--dtype", name_of(dtype), path, out)
    assert result.returncode == 0, result.stderr
    loaded = load_file(out)
    for name, t in sd.items():
        want = t.to(dtype) if t.is_floating_point() else t
        if t.is_floating_point() and t.dtype != dtype and {t.dtype, dtype} <= {torch.float8_e4m3fn, torch.float8_e5m2}:
            want = t.float().to(dtype)
        assert not same_values(loaded[name], want), name


def hf_split(sd, max_bytes):
    from huggingface_hub import split_torch_state_dict_into_shards
    return split_torch_state_dict_into_shards(sd, filename_pattern="model{suffix}.safetensors", max_shard_size=max_bytes)


@pytest.mark.parametrize("max_bytes", [1, 40, 100, 300, 10**9])
def test_sharded_convert_splits_as_hugging_face_does(run, tmp_path, max_bytes):
    gen = torch.Generator().manual_seed(2)
    sizes = [10, 30, 5, 50, 20, 1, 64, 33, 0, 17]
    sd = {f"layer.{i}.w": random_tensor(torch.uint8 if i % 2 else torch.float32, (s,), gen)
          for i, s in enumerate(sizes)}
    src = tmp_path / "src.safetensors"
    save_file(sd, src)
    # mtk shards in its input's order: the file's order (by dtype, then name)
    header_order = list(json.loads(src.read_bytes()[8:8 + struct.unpack("<Q", src.read_bytes()[:8])[0]]))
    ordered = {name: sd[name] for name in header_order}
    split = hf_split(ordered, max_bytes)
    out = tmp_path / "out"
    result = run("convert", "--max-shard-size", max_bytes, src, out)
    assert result.returncode == 0, result.stderr
    if not split.is_sharded:
        assert sorted(p.name for p in out.iterdir()) == ["model.safetensors"]
        assert_same(load_file(out / "model.safetensors"), sd)
        return
    index = json.loads((out / "model.safetensors.index.json").read_text())
    assert index["weight_map"] == split.tensor_to_filename
    assert index["metadata"]["total_size"] == split.metadata["total_size"]
    assert index["metadata"]["total_parameters"] == sum(t.numel() for t in sd.values())
    assert sorted(p.name for p in out.iterdir()) == sorted(split.filename_to_tensors) + ["model.safetensors.index.json"]
    loaded = {}
    for filename, names in split.filename_to_tensors.items():
        shard = load_file(out / filename)
        assert set(shard) == set(names)
        loaded.update(shard)
    assert_same(loaded, sd)


def test_hugging_face_sharded_checkpoint_reads_and_joins(run, tmp_path):
    from huggingface_hub import save_torch_state_dict
    sd = all_dtypes_state_dict(seed=3)
    hf = tmp_path / "hf"
    hf.mkdir()
    save_torch_state_dict(sd, hf, max_shard_size=200)
    assert (hf / "model.safetensors.index.json").exists()
    shards = sorted(p.name for p in hf.glob("model-*.safetensors"))
    assert len(shards) > 1
    for path in (hf, hf / "model.safetensors.index.json"):
        result = run("inspect", "--json", path)
        assert result.returncode == 0, result.stderr
        doc = json.loads(result.stdout)
        assert doc["valid"] is True
        assert sorted(doc["files"]) == sorted(str(hf / s) for s in shards)
        assert {t["name"]: (t["dtype"], t["shape"]) for t in doc["tensors"]} == \
            {n: (DTYPES[t.dtype], list(t.shape)) for n, t in sd.items()}
        assert all(t["file"] in shards for t in doc["tensors"])
        assert doc["total_bytes"] == sum(t.numel() * t.element_size() for t in sd.values())
    joined = tmp_path / "joined.safetensors"
    assert run("convert", hf, joined).returncode == 0
    assert_same(load_file(joined), sd)
