"""Fixtures for the checkpoint tests: the mtk binary (env MTK_BIN, default
build/mtk), a runner, and libmtk.so through ctypes (env MTK_LIB, else beside the binary)."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


sys.path.insert(0, str(REPO / "tests"))
from mtk_binary import mtk_bin  # noqa: E402,F401 (fixture)


@pytest.fixture(scope="session")
def run(mtk_bin):
    """run(*args) -> CompletedProcess with text stdout/stderr."""

    def runner(*args, timeout=120):
        return subprocess.run([mtk_bin, *map(str, args)], capture_output=True, text=True, timeout=timeout)

    return runner


@pytest.fixture(scope="session")
def libmtk(mtk_bin):
    """libmtk.so loaded with ctypes: env MTK_LIB, else the one beside the
    binary.  A sanitizer build's library cannot be loaded into a plain
    Python, so `make test-asan` points MTK_LIB at the release build's (the
    C unit tests cover the same code under the sanitizers)."""
    lib = Path(os.environ.get("MTK_LIB", Path(mtk_bin).parent / "libmtk.so"))
    if not lib.exists():
        pytest.fail(f"{lib} not built: run make, or set MTK_LIB")
    probe = subprocess.run([sys.executable, "-c", f"import ctypes; ctypes.CDLL({str(lib)!r})"],
                           capture_output=True, timeout=60)
    if probe.returncode != 0:
        pytest.fail(f"{lib} cannot be loaded into Python (a sanitizer build? set MTK_LIB "
                    f"to a release build's libmtk.so): {probe.stderr.decode()[-300:]}")
    from mtk_ctypes import Mtk
    return Mtk(str(lib))
