"""Fixtures for the nn oracle: nn_probe (tests/nn/nn_probe.c) compiled
against the library of the build under test (the directory of $MTK_BIN,
default build/), with the same sanitizer flags when that build used them."""
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests"))
from probe_build import build_dir, build_probe  # noqa: E402


@pytest.fixture(scope="session")
def probe_bin(tmp_path_factory):
    return build_probe(tmp_path_factory, "tests/nn/nn_probe.c", "nn_probe")


@pytest.fixture(scope="session")
def probe(probe_bin):
    """probe(lines) -> one parsed JSON object per 'SPEC | INPUTS | MODE' line."""
    import json

    def run(lines):
        text = "".join(line + "\n" for line in lines)
        result = subprocess.run([probe_bin], input=text, capture_output=True, text=True, timeout=300)
        assert result.returncode == 0, result.stderr
        answers = [json.loads(line) for line in result.stdout.splitlines()]
        assert len(answers) == len(lines), result.stdout + result.stderr
        return answers

    return run


@pytest.fixture(scope="session")
def mtk_summary():
    """mtk_summary(*args) -> CompletedProcess of `mtk summary ARGS` (text)."""
    binary = build_dir() / "mtk"
    if not binary.exists():
        pytest.fail(f"mtk binary not found at {binary}: build it first (make) or set MTK_BIN")

    def run(*args):
        return subprocess.run([str(binary), "summary", *args], capture_output=True, text=True, timeout=60)

    return run
