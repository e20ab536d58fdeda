"""Fixtures for the zoo oracle: zoo_probe (tests/models/zoo_probe.c) compiled
against the library of the build under test (the directory of $MTK_BIN,
default build/), with the same sanitizer flags when that build used them,
and the mtk binary itself."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests"))
from probe_build import build_dir, build_probe  # noqa: E402
sys.path.insert(0, str(Path(__file__).resolve().parent))


def _shape_text(shape):
    """"2x7", or "2x7+2x5" for an encoder-decoder's (encoder, decoder) shapes."""
    if len(shape) == 2 and all(isinstance(s, (list, tuple)) for s in shape):
        return "+".join(_shape_text(s) for s in shape)
    return "x".join(str(d) for d in shape)


@pytest.fixture(scope="session")
def zoo_probe_bin(tmp_path_factory):
    return build_probe(tmp_path_factory, "tests/models/zoo_probe.c", "zoo_probe")


@pytest.fixture(scope="session")
def zoo_probe(zoo_probe_bin):
    """zoo_probe([(model, [shape, ...]), ...]) -> one parsed answer per model
    (see zoo_probe.c for the layout)."""

    def run(requests):
        lines = []
        for model, shapes in requests:
            inputs = ";".join(_shape_text(s) for s in shapes)
            lines.append(f"{model} | {inputs}\n")
        result = subprocess.run([zoo_probe_bin], input="".join(lines), capture_output=True, text=True,
                                timeout=600)
        assert result.returncode == 0, result.stderr
        answers = [json.loads(line) for line in result.stdout.splitlines()]
        assert len(answers) == len(lines), result.stdout + result.stderr
        return answers

    return run


@pytest.fixture(scope="session")
def builtin_models(zoo_probe_bin):
    """{name: {"hf_id", "example_input", "config": dict}} of every built-in model."""
    result = subprocess.run([zoo_probe_bin, "--builtins"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    out = {}
    for entry in json.loads(result.stdout):
        entry["config"] = json.loads(entry["config"])
        out[entry["name"]] = entry
    return out


@pytest.fixture(scope="session")
def mtk():
    """mtk(*args) -> CompletedProcess of the mtk binary under test."""
    binary = build_dir() / "mtk"
    if not binary.exists():
        pytest.fail(f"mtk binary not found at {binary}: build it first (make) or set MTK_BIN")

    def run(*args):
        return subprocess.run([str(binary), *args], capture_output=True, text=True, timeout=120)

    return run
