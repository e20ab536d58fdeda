"""Fixtures for the tests of the library as a program outside the tree sees
it: the release build's libmtk.so and its install.  The build is the one
$MTK_LIB sits in (make test-asan points it at the release build, as the
sanitizer build's libmtk.so cannot be loaded or linked without the
sanitizer runtime), else the one of $MTK_BIN, else build/."""
import os
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _build_dir():
    lib = os.environ.get("MTK_LIB")
    if lib:
        return Path(lib).resolve().parent
    path = Path(os.environ.get("MTK_BIN", REPO / "build" / "mtk"))
    return (path if path.is_absolute() else REPO / path).parent


@pytest.fixture(scope="session")
def build_dir():
    build = _build_dir()
    if not (build / "libmtk.so").exists():
        pytest.fail(f"libmtk.so not found in {build}: build it first (make), or set MTK_LIB")
    cache = build / "CMakeCache.txt"
    if cache.exists() and re.search(r"^MTK_SANITIZE:BOOL=ON", cache.read_text(), re.M):
        pytest.fail(f"{build} is a sanitizer build: set MTK_LIB to the release build's libmtk.so")
    return build
