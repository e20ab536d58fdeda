"""Fixtures for the execution tests: the mtk binary (env MTK_BIN, default
build/mtk) and a runner."""
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from mtk_binary import mtk_bin  # noqa: E402,F401 (fixture)


@pytest.fixture(scope="session")
def run(mtk_bin):
    """run(*args) -> CompletedProcess with text stdout/stderr."""

    def runner(*args, timeout=300):
        return subprocess.run([mtk_bin, *map(str, args)], capture_output=True, text=True, timeout=timeout)

    return runner
