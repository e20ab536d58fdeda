"""The mtk command against file-system faults and hostile inputs: a
checkpoint truncated while `convert` reads it, the file size limit,
interrupts, an in-place rewrite's mode, links that leave a checkpoint or
model directory, and config.json/index.json with a key twice.  Each fails
with `mtk: error: ...` naming the file, exit status 1, no signal death,
no hang and no temporary left behind."""
import json
import os
import random
import resource
import signal
import stat
import struct
import subprocess
import time

import pytest

ELEMENTS = 4 * 1024 * 1024  # float32: 16 MiB of data, long enough to interrupt


def write_checkpoint(path, elements=ELEMENTS, data=None):
    """A safetensors file with one float32 tensor "w" of `elements`."""
    header = json.dumps({"w": {"dtype": "F32", "shape": [elements], "data_offsets": [0, 4 * elements]}}).encode()
    header += b" " * (-len(header) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(header)) + header)
        f.write(data if data is not None else os.urandom(4 * elements))


def temporaries(directory):
    return sorted(name for name in os.listdir(directory) if ".tmp-" in name)


def convert(mtk_bin, *args, **kwargs):
    # mtk leaves a signal ignored when it started ignored (a background job's SIGINT):
    # the child gets the default dispositions whatever the test runner inherited
    def default_signals():
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, signal.SIG_DFL)
    kwargs.setdefault("preexec_fn", default_signals)
    return subprocess.Popen([mtk_bin, "convert", *map(str, args)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, **kwargs)


def test_convert_of_a_checkpoint_truncated_while_read_is_an_error_naming_it(mtk_bin, tmp_path):
    """truncate(1) during `convert --dtype`: an I/O error every time it
    lands mid-copy (SIGBUS and a temporary before), success otherwise."""
    big, out = tmp_path / "big.safetensors", tmp_path / "o.safetensors"
    errors = 0
    for _ in range(8):
        write_checkpoint(big)
        proc = convert(mtk_bin, big, out, "--dtype", "float8_e4m3fn")
        deadline = time.monotonic() + 60
        while not temporaries(tmp_path) and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.0005)  # the copy starts once the temporary exists
        time.sleep(random.uniform(0.0, 0.02))
        os.truncate(big, 1000)
        _, err = proc.communicate(timeout=120)
        assert proc.returncode in (0, 1), f"died of signal {-proc.returncode}: {err}"
        if proc.returncode == 1:
            errors += 1
            assert err.startswith(f"mtk: error: {big}: cannot read tensor 'w' to write "), err
        assert temporaries(tmp_path) == []
    assert errors > 0  # at least one truncation landed mid-copy


def test_convert_past_the_file_size_limit_is_an_error_not_sigxfsz(mtk_bin, tmp_path):
    big = tmp_path / "big.safetensors"
    write_checkpoint(big, elements=1 << 16)

    def small_limit():
        resource.setrlimit(resource.RLIMIT_FSIZE, (100_000, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))

    for dtype in ([], ["--dtype", "float16"]):
        for out in ("o.safetensors", "shards"):
            args = [mtk_bin, "convert", str(big), str(tmp_path / out), *dtype, "--max-shard-size", "100000"]
            result = subprocess.run(args, capture_output=True, text=True, preexec_fn=small_limit, timeout=60)
            assert result.returncode == 1, result
            assert result.stderr.startswith("mtk: error: ") and "file size limit of 100000 bytes" in result.stderr
            assert temporaries(tmp_path) == [] and sorted(os.listdir(tmp_path)) == ["big.safetensors"]


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupted_convert_leaves_no_temporary(mtk_bin, tmp_path, sig):
    big = tmp_path / "big.safetensors"
    write_checkpoint(big, elements=4 * ELEMENTS)  # a window wide enough on a loaded machine
    for _ in range(5):  # until the signal lands while the temporary exists
        proc = convert(mtk_bin, big, tmp_path / "o.safetensors", "--dtype", "float8_e4m3fn")
        deadline = time.monotonic() + 60
        while not temporaries(tmp_path) and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.001)
        proc.send_signal(sig)
        proc.communicate(timeout=60)
        if proc.returncode == -sig:
            assert temporaries(tmp_path) == [] and not (tmp_path / "o.safetensors").exists()
            return
        assert proc.returncode == 0  # it finished first: try again
        os.unlink(tmp_path / "o.safetensors")
    pytest.fail("the convert always finished before the signal")


def test_convert_in_place_keeps_the_files_mode(run, tmp_path):
    path = tmp_path / "x.safetensors"
    write_checkpoint(path, elements=16)
    os.chmod(path, 0o600)
    result = run("convert", str(path), str(path), "--dtype", "bfloat16")
    assert result.returncode == 0, result.stderr
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    old = os.umask(0o027)
    try:
        assert run("convert", str(path), str(tmp_path / "new.safetensors")).returncode == 0
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(tmp_path / "new.safetensors").st_mode) == 0o640


def test_a_checkpoint_directory_with_a_link_out_of_it_is_refused(run, tmp_path):
    ckpt = tmp_path / "ckpt"
    ckpt.mkdir()
    write_checkpoint(ckpt / "a.safetensors", elements=4)
    os.symlink("/etc/passwd", ckpt / "link.safetensors")
    for command in ("inspect", "convert"):
        args = [command, str(ckpt)] + ([str(tmp_path / "o.safetensors")] if command == "convert" else [])
        result = run(*args)
        assert result.returncode == 1
        assert result.stderr == (f"mtk: error: {ckpt}/link.safetensors: refusing to open it: it resolves to "
                                 f"/etc/passwd, outside the directory {ckpt} (mtk opens only files inside a "
                                 f"checkpoint or model directory; give the file itself to open it)\n")


def test_a_model_directory_whose_config_json_leaves_it_is_refused(run, tmp_path):
    os.symlink("/etc/passwd", tmp_path / "config.json")
    result = run("summary", str(tmp_path))
    assert result.returncode == 1
    assert result.stderr.startswith(f"mtk: error: {tmp_path}/config.json: refusing to open it: it resolves to "
                                    "/etc/passwd")


def test_a_config_json_with_a_key_twice_is_refused(run, tmp_path):
    config = tmp_path / "config.json"
    config.write_text('{"model_type": "llama", "hidden_size": 64, "num_attention_heads": 4, '
                      '"num_hidden_layers": 2, "intermediate_size": 128, "vocab_size": 100, '
                      '"num_hidden_layers": 80}')
    assert json.loads(config.read_text())["num_hidden_layers"] == 80  # what transformers would build
    result = run("summary", str(config))
    assert result.returncode == 1
    assert result.stderr == (f"mtk: error: {config}: the key 'num_hidden_layers' appears twice; transformers "
                             "would read the last value and mtk the first, so remove one\n")


def test_an_index_with_a_key_twice_is_refused(run, tmp_path):
    write_checkpoint(tmp_path / "s.safetensors", elements=4)
    index = tmp_path / "model.safetensors.index.json"
    index.write_text('{"weight_map": {"w": "s.safetensors"}, "metadata": {"total_size": 16, "total_size": 1}}')
    result = run("inspect", str(index))
    assert result.returncode == 1
    assert result.stderr == f"mtk: error: {index}: invalid index: the key 'metadata.total_size' appears twice\n"
