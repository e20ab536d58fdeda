"""Fixtures for the planner's oracles: plan_probe (tests/plan/plan_probe.c)
compiled against the library of the build under test."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "tests" / "models"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from probe_build import build_probe  # noqa: E402


@pytest.fixture(scope="session")
def plan_probe(tmp_path_factory):
    """plan_probe([line, ...]) -> one parsed answer per request line (see
    plan_probe.c for the layout)."""
    binary = build_probe(tmp_path_factory, "tests/plan/plan_probe.c", "plan_probe")

    def run(lines):
        result = subprocess.run([binary], input="".join(l + "\n" for l in lines), capture_output=True, text=True,
                                timeout=600)
        assert result.returncode == 0, result.stderr
        answers = [json.loads(line) for line in result.stdout.splitlines()]
        assert len(answers) == len(lines), result.stdout + result.stderr
        return answers

    return run


# ---- the mtk binary (env MTK_BIN, default build/mtk), for the memory tests

def mtk_path():
    import os
    path = Path(os.environ.get("MTK_BIN", REPO / "build" / "mtk"))
    if not path.is_absolute():
        path = REPO / path
    return path


@pytest.fixture(scope="session")
def mtk_bin():
    path = mtk_path()
    if not path.exists():
        pytest.fail(f"mtk binary not found at {path}: build it first (make) or set MTK_BIN")
    return str(path)


@pytest.fixture(scope="session")
def run(mtk_bin):
    """run(*args, input=None) -> CompletedProcess with text stdout/stderr."""

    def runner(*args, input=None, timeout=60):
        return subprocess.run([mtk_bin, *args], input=input, capture_output=True, text=True,
                              timeout=timeout)

    return runner
