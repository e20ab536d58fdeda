"""The mtk binary under test (env MTK_BIN, default build/mtk) and the
pytest fixtures that run it, shared by the suites' conftest.py files
(importing a fixture into a conftest.py registers it there)."""
import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def mtk_path():
    """The binary's path: $MTK_BIN (relative to the repo), else build/mtk."""
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
