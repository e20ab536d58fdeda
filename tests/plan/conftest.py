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
from mtk_binary import mtk_bin, run  # noqa: E402,F401 (fixtures for the memory tests)
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
