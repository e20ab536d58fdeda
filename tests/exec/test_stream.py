"""mtk run --max-ram (and generate): the weights stay mapped from the checkpoint and each
decoder layer is brought in just before its forward and dropped after.
The outputs are the in-RAM run's, bit for bit, for several families, under
the least budget (no prefetch) and one that holds two layers (prefetch);
on a ~400 MB random llama the peak resident memory stays within the budget
plus the activations while the in-RAM run's holds the whole model, also when
the budget keeps layers resident across decode steps; a budget
below the tensors outside the layers plus one layer is refused, naming the
sizes.  Each runs with both fills of a streamed layer (MTK_STREAM_FILL): its
pages mapped in and dropped, or its bytes read into two reused slots; without
the variable the stream measures one layer both ways and picks.  Reads may
run on several threads (MTK_STREAM_READERS)."""
import json
import os
import re

import pytest

pytest.importorskip("torch")
from safetensors import safe_open  # noqa: E402
from safetensors.torch import load_file  # noqa: E402

import stream_model  # noqa: E402
from probe_build import build_dir  # noqa: E402
from test_run import _run, fixtures  # noqa: E402,F401 (fixture)

NEEDED = re.compile(r"at least (\d+) bytes are needed")


def _sizes(model_dir, layers):
    """(bytes outside the layers, the largest layer, the whole model) from
    the checkpoint's own tensors."""
    total, per_layer = 0, {}
    with safe_open(str(model_dir / "model.safetensors"), "np") as f:
        for key in f.keys():
            t = f.get_slice(key)
            n = {"F32": 4, "BF16": 2, "F16": 2, "I64": 8}[t.get_dtype()]
            for d in t.get_shape():
                n *= d
            total += n
            m = re.match(re.escape(layers) + r"\.(\d+)\.", key)
            if m:
                per_layer[m.group(1)] = per_layer.get(m.group(1), 0) + n
    largest = max(per_layer.values())
    return total - sum(per_layer.values()), largest, total


def _stream_sizes(run, case_dir, tmp_path, layers):
    """The stream's own (fixed, largest layer, total) from a run under a
    budget holding everything, checked against the checkpoint's: the
    layers' tensors are the file's, the rest adds the computed buffers."""
    file_fixed, file_largest, file_total = _sizes(case_dir / "model", layers)
    s = _run(run, case_dir, tmp_path, "--max-ram", 10 * file_total)[0]["stream"]
    assert not s["releases"]  # the budget holds the model: every layer stays
    assert s["layer_bytes"] == file_largest
    assert file_fixed <= s["fixed_bytes"] < file_fixed + 4096
    assert s["total_bytes"] - s["fixed_bytes"] == file_total - file_fixed
    return s["fixed_bytes"], s["layer_bytes"], s["total_bytes"]


@pytest.mark.parametrize("case,layers", [("llama", "model.layers"), ("qwen2_window", "model.layers"),
                                         ("gpt2", "transformer.h"), ("bert", "encoder.layer"),
                                         ("gemma", "model.layers"), ("modernbert", "layers"),
                                         ("t5_encoder", "encoder.block")])
@pytest.mark.parametrize("fill", ["map", "read"])
def test_streamed_outputs_are_the_in_ram_outputs_bit_for_bit(fixtures, run, tmp_path, monkeypatch, case, layers,
                                                              fill):
    monkeypatch.setenv("MTK_STREAM_FILL", fill)
    case_dir = fixtures / case
    fixed, largest, total = _stream_sizes(run, case_dir, tmp_path, layers)
    doc, in_ram = _run(run, case_dir, tmp_path)
    assert doc["stream"] is None
    for budget, prefetch in ((fixed + largest, False), (fixed + 2 * largest, True)):
        assert budget < total or prefetch  # two layers may be the whole model
        doc, streamed = _run(run, case_dir, tmp_path, "--max-ram", budget)
        s = doc["stream"]
        assert (s["budget"], s["layers"], s["prefetch"]) == (budget, layers, prefetch)
        assert s["releases"] == (budget < total)
        assert s["fill"] == (fill if s["releases"] else "map")
        assert s["layer_calls"] == s["layer_count"] > 1
        assert streamed.keys() == in_ram.keys()
        for name in in_ram:
            assert streamed[name].numpy().tobytes() == in_ram[name].numpy().tobytes(), name


def test_a_budget_below_one_layer_plus_the_rest_is_refused_naming_the_sizes(fixtures, run, tmp_path):
    case_dir = fixtures / "llama"
    fixed, largest, total = _stream_sizes(run, case_dir, tmp_path, "model.layers")
    result = run("run", case_dir / "model", "--weights", case_dir / "model", "--input-ids", "1,2,3",
                 "--max-ram", fixed + largest - 1, "--output", tmp_path / "none.safetensors")
    assert result.returncode == 1
    err = result.stderr
    assert "cannot hold" in err and "model.layers" in err, err
    assert f"{fixed} bytes" in err and f"{largest} bytes" in err and f"{total} bytes" in err, err
    assert int(NEEDED.search(err).group(1)) == fixed + largest
    assert not (tmp_path / "none.safetensors").exists()
    usage = run("run", case_dir / "model", "--weights", case_dir / "model", "--input-ids", "1", "--max-ram", "lots")
    assert usage.returncode == 2 and "--max-ram 'lots'" in usage.stderr


def test_streaming_refuses_a_dtype_conversion_naming_the_tensor(fixtures, run):
    case_dir = fixtures / "llama"
    result = run("run", case_dir / "model", "--weights", case_dir / "model", "--input-ids", "1,2,3",
                 "--max-ram", "1GB", "--dtype", "bfloat16")
    assert result.returncode == 1
    assert "is F32 in the checkpoint and bfloat16 in the model" in result.stderr, result.stderr


@pytest.mark.parametrize("fill", ["map", "read"])
def test_peak_resident_memory_stays_within_the_budget_plus_activations(mtk_bin, tmp_path, monkeypatch, fill):
    monkeypatch.setenv("MTK_STREAM_FILL", fill)
    model = stream_model.big_llama(build_dir())
    size = stream_model.model_bytes()
    budget = 160 * 2**20  # the 8 MiB outside the layers + two 64 MiB layers
    args = [mtk_bin, "run", model, "--weights", model, "--input-ids", ",".join(map(str, range(1, 17))),
            "--json", "--top", "0"]
    in_ram, in_ram_peak = stream_model.run_peak([*args, "--output", tmp_path / "a.safetensors"])
    assert in_ram.returncode == 0, in_ram.stderr
    streamed, peak = stream_model.run_peak([*args, "--output", tmp_path / "b.safetensors", "--max-ram", budget])
    assert streamed.returncode == 0, streamed.stderr
    assert json.loads(streamed.stdout)["stream"]["prefetch"]
    assert json.loads(streamed.stdout)["stream"]["fill"] == fill
    # the measure tells: holding the model shows in the in-RAM run
    assert in_ram_peak > size
    # activations of 16 tokens, the process's code and libraries: well under 64 MiB
    activations = 64 * 2**20
    assert peak < budget + activations < size, (peak, budget, size)
    a = load_file(str(tmp_path / "a.safetensors"))["logits"]
    b = load_file(str(tmp_path / "b.safetensors"))["logits"]
    assert a.numpy().tobytes() == b.numpy().tobytes()


@pytest.mark.parametrize("case", ["llama", "mistral_window"])
@pytest.mark.parametrize("fill,readers", [("map", 1), ("read", 1), ("read", 3)])
def test_streamed_generation_gives_the_in_ram_tokens_and_logits(fixtures, run, tmp_path, monkeypatch, case, fill,
                                                                readers):
    monkeypatch.setenv("MTK_STREAM_FILL", fill)
    monkeypatch.setenv("MTK_STREAM_READERS", str(readers))  # threads reading a slot's chunks
    case_dir = fixtures / case
    fixed, largest, total = _stream_sizes(run, case_dir, tmp_path, "model.layers")
    args = ["generate", case_dir / "model", "--weights", case_dir / "model", "--input-ids", "5,6,7,8;9,10,11,12",
            "--max-new-tokens", 20, "--eos-token-id", "none", "--json"]
    in_ram = run(*args, "--output", tmp_path / "a.safetensors")
    assert in_ram.returncode == 0, in_ram.stderr
    for budget in (fixed + largest, fixed + 2 * largest):
        streamed = run(*args, "--output", tmp_path / "b.safetensors", "--max-ram", budget)
        assert streamed.returncode == 0, streamed.stderr
        doc = json.loads(streamed.stdout)
        assert doc["sequences"] == json.loads(in_ram.stdout)["sequences"]
        # every step (the prefill and 19 decodes) ran every layer through the stream
        assert doc["stream"]["layer_calls"] == 20 * doc["stream"]["layer_count"]
        a, b = load_file(str(tmp_path / "a.safetensors")), load_file(str(tmp_path / "b.safetensors"))
        for name in a:
            assert a[name].numpy().tobytes() == b[name].numpy().tobytes(), name


@pytest.mark.parametrize("fill", ["map", "read"])
def test_a_budget_beyond_two_layers_keeps_the_first_layers_and_stays_within_it(mtk_bin, tmp_path, monkeypatch, fill):
    monkeypatch.setenv("MTK_STREAM_FILL", fill)
    model = stream_model.big_llama(build_dir())
    fixed, layer = 8196608, 67117056  # test_peak_resident_memory's llama: 6 layers of 64 MiB
    budget = fixed + 4 * layer  # two streamed slots and two layers kept
    steps = 4
    args = [mtk_bin, "generate", model, "--weights", model, "--input-ids", "3,1,4,1,5,9,2,6",
            "--max-new-tokens", steps, "--eos-token-id", "none", "--json"]
    in_ram, _ = stream_model.run_peak([*args, "--output", tmp_path / "a.safetensors"])
    assert in_ram.returncode == 0, in_ram.stderr
    streamed, peak = stream_model.run_peak([*args, "--output", tmp_path / "b.safetensors", "--max-ram", budget])
    assert streamed.returncode == 0, streamed.stderr
    s = json.loads(streamed.stdout)["stream"]
    assert (s["fixed_bytes"], s["layer_bytes"]) == (fixed, layer)
    assert s["prefetch"] and s["releases"] and s["kept_layers"] == 2 and s["fill"] == fill
    assert s["layer_calls"] == steps * 6
    # all six once, then only the four streamed ones each step (one ahead at the end)
    assert s["brought_in"] in (6 + (steps - 1) * 4, 6 + (steps - 1) * 4 + 1), s
    assert peak < budget + 64 * 2**20 < stream_model.model_bytes(), (peak, budget)
    assert json.loads(streamed.stdout)["sequences"] == json.loads(in_ram.stdout)["sequences"]
    a, b = load_file(str(tmp_path / "a.safetensors")), load_file(str(tmp_path / "b.safetensors"))
    for name in a:
        assert a[name].numpy().tobytes() == b[name].numpy().tobytes(), name


def test_without_a_fill_named_the_stream_measures_both_and_picks_the_cheaper(fixtures, run, tmp_path, monkeypatch):
    monkeypatch.delenv("MTK_STREAM_FILL", raising=False)
    case_dir = fixtures / "llama"
    fixed, largest, total = _stream_sizes(run, case_dir, tmp_path, "model.layers")
    doc, in_ram = _run(run, case_dir, tmp_path)
    doc, streamed = _run(run, case_dir, tmp_path, "--max-ram", fixed + 2 * largest)
    s = doc["stream"]
    assert s["map_probe_seconds"] > 0 and s["read_probe_seconds"] > 0, s
    # a read wins when its cpu seconds are within 1.25x the mapping's (map in + drop)
    assert s["fill"] == ("read" if s["read_probe_seconds"] <= 1.25 * s["map_probe_seconds"] else "map"), s
    for name in in_ram:
        assert streamed[name].numpy().tobytes() == in_ram[name].numpy().tobytes(), name


@pytest.mark.parametrize("fill", ["map", "read"])
def test_a_decode_on_every_core_brings_its_layers_in_on_its_threads_and_keeps_the_in_ram_bits(
        fixtures, run, tmp_path, monkeypatch, fill):
    # a decode step whose threads take every core does without the prefetch thread (it would take
    # a core from them): its layers come in on its own threads; fewer threads, the prefill, and
    # MTK_STREAM_COMPUTE_THREADS keep the prefetch; the tokens and logits are the in-RAM run's
    monkeypatch.setenv("MTK_STREAM_FILL", fill)
    cores = os.cpu_count()
    case_dir = fixtures / "llama"
    fixed, largest, total = _stream_sizes(run, case_dir, tmp_path, "model.layers")
    steps = 6
    args = ["generate", case_dir / "model", "--weights", case_dir / "model", "--input-ids",
            "5,6,7,8,9;9,10,11,12,13", "--max-new-tokens", steps, "--eos-token-id", "none", "--json"]
    monkeypatch.delenv("MTK_STREAM_COMPUTE_THREADS", raising=False)
    in_ram = run(*args, "--threads", cores, "--output", tmp_path / "a.safetensors")
    assert in_ram.returncode == 0, in_ram.stderr
    a = load_file(str(tmp_path / "a.safetensors"))
    # (threads, MTK_STREAM_COMPUTE_THREADS) -> the decode's threads, inline
    cases = [(cores, None, cores, True), (cores, "0", cores, False), (cores, "1", 1, False)]
    if cores > 1:
        cases.append((cores - 1, None, cores - 1, False))
    # the least budget has no prefetch thread: its layers come in on the decode's threads too
    cases.append((cores, None, cores, True, False))
    for threads, setting, decode_threads, inline, *prefetch in cases:
        if setting is None:
            monkeypatch.delenv("MTK_STREAM_COMPUTE_THREADS", raising=False)
        else:
            monkeypatch.setenv("MTK_STREAM_COMPUTE_THREADS", setting)
        prefetch = prefetch[0] if prefetch else True
        streamed = run(*args, "--threads", threads, "--max-ram", fixed + (2 if prefetch else 1) * largest,
                       "--output", tmp_path / "b.safetensors")
        assert streamed.returncode == 0, streamed.stderr
        doc = json.loads(streamed.stdout)
        s = doc["stream"]
        assert s["prefetch"] == prefetch and s["releases"] and s["fill"] == fill, s
        assert doc["threads"] == threads  # the setting, not the decode's
        assert s["prefill_threads"] == threads, s  # 10 rows: the prefill keeps them
        assert (s["decode_threads"], s["decode_inline"]) == (decode_threads, inline), (threads, setting, s)
        assert s["decode_calls"] == (steps - 1) * s["layer_count"], s
        assert doc["sequences"] == json.loads(in_ram.stdout)["sequences"]
        b = load_file(str(tmp_path / "b.safetensors"))
        for name in a:
            assert a[name].numpy().tobytes() == b[name].numpy().tobytes(), (name, threads, setting)
